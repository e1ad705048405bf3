"""visionops against the other libraries that have its ops, on the CPU, on
the headline inputs of bench/compare_torchvision.py (bench/cases.py):
ONNX Runtime's RoiAlign (opset 16, half_pixel = aligned, avg) and
NonMaxSuppression (one class, no score threshold), and OpenCV's
cv2.dnn.NMSBoxes and NMSBoxesBatched. Every side is called as its users
call it, on NumPy arrays, allocating its outputs: visionops.roi_align /
nms / batched_nms, an InferenceSession of one node, the cv2 function.
Results are checked against visionops's before timing (the same kept
indices; RoiAlign within 1e-4).

Interleaved rounds (bench/timing.py), medians (eleven times as many
rounds for nms of up to 5,000 boxes), at 1 thread and at all
threads on each side (visionops's context, ORT's intra-op threads,
cv2.setNumThreads); `--load` adds one busy process per core.
Usage: PYTHONPATH=<build>/python python bench/peers.py [--quick] [--load]
(needs onnxruntime and onnx, which the torch 2.x lane's venv holds; the
OpenCV rows need cv2: pip install opencv-python-headless into that venv).
A benchmark, never a test."""
import os
import sys

import numpy as np

import visionops
from timing import busy, interleaved, options  # bench/timing.py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402  (the headline inputs)

try:
    import onnxruntime as ort
    from onnx import TensorProto, helper
except ImportError:
    ort = None
try:
    import cv2
except ImportError:
    cv2 = None


def ort_session(node, inputs, outputs, opset, threads):
    """An InferenceSession of one node."""
    graph = helper.make_graph([node], node.op_type, inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def roi_align_rows(threads, reps):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(cases.Sizes.fmap, dtype=np.float32)
    rois = cases.proposals(rng, cases.Sizes.rois)
    bins, scale, sr = 7, cases.SCALE, cases.SR
    want = visionops.roi_align(x, rois, bins, scale, sr, True)
    out = {"visionops": lambda: visionops.roi_align(x, rois, bins, scale, sr, True)}
    same = {}
    if ort:
        f = TensorProto.FLOAT
        node = helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"],
                                coordinate_transformation_mode="half_pixel", mode="avg",
                                output_height=bins, output_width=bins, sampling_ratio=sr,
                                spatial_scale=scale)
        sess = ort_session(node, [helper.make_tensor_value_info("X", f, None),
                                  helper.make_tensor_value_info("rois", f, None),
                                  helper.make_tensor_value_info("batch_indices",
                                                                TensorProto.INT64, None)],
                           [helper.make_tensor_value_info("Y", f, None)], 16, threads)
        feeds = {"X": x, "rois": np.ascontiguousarray(rois[:, 1:]),
                 "batch_indices": rois[:, 0].astype(np.int64)}
        same["ORT"] = bool(np.allclose(sess.run(None, feeds)[0], want, atol=1e-4))
        out["ORT"] = lambda: sess.run(None, feeds)
    label = cases.roi_label(cases.Sizes.fmap, cases.Sizes.rois, bins) + ", aligned"
    return [("roi_align", label, threads, interleaved(out, reps), same)]


def nms_rows(threads, reps):
    rows = []
    rng = np.random.default_rng(0)
    for n in cases.Sizes.nms:
        b, s = cases.detections(rng, n), rng.random(n).astype(np.float32)
        want = visionops.nms(b, s, 0.5)
        out = {"visionops": lambda: visionops.nms(b, s, 0.5)}
        same = {}
        if ort:
            f = TensorProto.FLOAT
            names = ["boxes", "scores", "max", "iou"]
            types = [f, f, TensorProto.INT64, f]
            node = helper.make_node("NonMaxSuppression", names, ["selected"])
            sess = ort_session(node, [helper.make_tensor_value_info(nm, t, None)
                                      for nm, t in zip(names, types)],
                               [helper.make_tensor_value_info("selected", TensorProto.INT64,
                                                              None)], 11, threads)
            feeds = {"boxes": b[None, :, [1, 0, 3, 2]].copy(), "scores": s[None, None],
                     "max": np.array([n], np.int64), "iou": np.array([0.5], np.float32)}
            same["ORT"] = bool(np.array_equal(sess.run(None, feeds)[0][:, 2], want))
            out["ORT"] = lambda: sess.run(None, feeds)
        if cv2:
            xywh = np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1).astype(np.float64)
            got = np.asarray(cv2.dnn.NMSBoxes(xywh, s, 0.0, 0.5)).reshape(-1)
            same["OpenCV"] = bool(np.array_equal(got, want))
            out["OpenCV"] = lambda: cv2.dnn.NMSBoxes(xywh, s, 0.0, 0.5)
        # calls of tens of microseconds: a few rounds leave their median to chance
        rounds = reps * 11 if n <= 5000 else reps
        rows.append(("nms", f"{n:,} boxes", threads, interleaved(out, rounds), same))
    n = 20000
    b, s = cases.detections(rng, n), rng.random(n).astype(np.float32)
    c = rng.integers(0, 80, n)
    want = visionops.batched_nms(b, s, c, 0.5)
    out = {"visionops": lambda: visionops.batched_nms(b, s, c, 0.5)}
    same = {}
    if cv2 and hasattr(cv2.dnn, "NMSBoxesBatched"):
        xywh = np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1).astype(np.float64)
        ci = c.astype(np.int32)
        got = np.asarray(cv2.dnn.NMSBoxesBatched(xywh, s, ci, 0.0, 0.5)).reshape(-1)
        same["OpenCV"] = bool(np.array_equal(got, want))
        out["OpenCV"] = lambda: cv2.dnn.NMSBoxesBatched(xywh, s, ci, 0.0, 0.5)
    rows.append(("batched_nms", f"{n:,} boxes, 80 classes", threads, interleaved(out, reps),
                 same))
    return rows


def main():
    opts, cores, reps = options(__doc__, 9, 3)
    load = busy(cores) if opts.load else []
    rows = []
    try:
        for threads in sorted({1, cores}):
            visionops.set_num_threads(threads)
            if cv2:
                cv2.setNumThreads(threads)
            rows += roi_align_rows(threads, reps) + nms_rows(threads, reps)
        visionops.set_num_threads(0)
    finally:
        for p in load:
            p.kill()
    print(f"CPU, {cores} cores, visionops {visionops.__version__}, "
          f"onnxruntime {ort.__version__ if ort else 'absent'}, "
          f"OpenCV {cv2.__version__ if cv2 else 'absent'}; background load: "
          f"{f'{len(load)} busy processes' if load else 'none'}; medians of {reps} "
          f"({reps * 11} for nms of up to 5,000 boxes) "
          f"interleaved rounds, ms; ratio = peer / visionops; same = peer's result equals "
          f"visionops's")
    print("| op | case | threads | visionops | ONNX Runtime | OpenCV | ORT / vo | OpenCV / vo "
          "| same |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|")
    for op, label, threads, t, same in rows:
        vo = t["visionops"]
        cell = lambda k: f"{t[k]:.3g}" if k in t else "-"  # noqa: E731
        ratio = lambda k: f"{t[k] / vo:.1f}x" if k in t else "-"  # noqa: E731
        flags = ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same.items()) or "-"
        print(f"| {op} | {label} | {threads} | {vo:.3g} | {cell('ORT')} | {cell('OpenCV')} | "
              f"{ratio('ORT')} | {ratio('OpenCV')} | {flags} |")


if __name__ == "__main__":
    main()
