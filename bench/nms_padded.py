"""batched_nms_padded and onnx_nms on the CPU against onnxruntime's
NonMaxSuppression (opset 11) on the same inputs in the same process,
through the public API (visionops.batched_nms_padded / visionops.onnx_nms
on NumPy arrays, outputs allocated per call; an InferenceSession of one
NonMaxSuppression node, inputs fed as NumPy arrays).

Cases (issue 17): a YOLO-style post-process, B = 8 images, 8,400 anchors,
80 classes, score threshold 0.25, IoU 0.45, 100 detections per class and
per image; and the same head at the evaluation setting (score threshold
0.001, 300 per image). Scores are what a detector's sigmoid gives: nearly
every (anchor, class) score tiny, a few objects per image lighting up
clusters of anchors in their class, with boxes jittered around the object.
onnxruntime's NonMaxSuppression selects per (image, class) only (no
per-image top-k); batched_nms_padded also merges the classes into the best
100 per image, onnx_nms is the same op as onnxruntime's. onnx_nms's rows
are checked equal to onnxruntime's before timing.

Each round times every call once in turn (interleaved; `--blocks`: each
call back to back, as when the scores were just written), medians, at 1 and
all threads on both sides (onnxruntime's intra-op threads; its
NonMaxSuppression kernel runs on one). `--load` adds one busy process per
core.

`--opencl` times the same two calls on OpenCL instead (pyopencl arrays on
the first device, the queue finished inside each timed call), checked equal
to the CPU's outputs, with no onnxruntime.
Usage: PYTHONPATH=<build>/python python bench/nms_padded.py [--quick] [--load] [--blocks]
       [--opencl]
(needs onnxruntime and onnx, the torch 2.x lane's venv has them; --opencl
needs pyopencl instead)
"""

import os

import numpy as np

import visionops
from timing import busy, finished, interleaved, opencl_queue, options  # bench/timing.py

CASES = (("YOLO post-process", 0.25, 100, 100), ("evaluation", 0.001, 100, 300))
IOU = 0.45


def make_case(b=8, m=8400, c=80, objects=(4, 16), seed=0):
    """YOLO-like boxes [B, M, 4] (x1, y1, x2, y2 on a 640x640 image) and
    sigmoid scores [B, C, M]."""
    rng = np.random.default_rng(seed)
    cxcy = rng.uniform(0, 640, (b, m, 2))
    wh = rng.uniform(4, 200, (b, m, 2))
    # background: log-uniform in [1e-8, 10^-2.5] (a tenth above 0.001)
    scores = (10.0 ** rng.uniform(-8, -2.5, (b, c, m))).astype(np.float32)
    for i in range(b):
        for _ in range(rng.integers(*objects)):
            cls = rng.integers(c)
            centre, size = rng.uniform(50, 590, 2), rng.uniform(20, 300, 2)
            near = rng.choice(m, rng.integers(20, 80), replace=False)
            cxcy[i, near] = centre + rng.normal(0, 0.08, (near.size, 2)) * size
            wh[i, near] = size * rng.uniform(0.8, 1.25, (near.size, 2))
            scores[i, cls, near] = rng.uniform(0.3, 0.95, near.size)
            other = rng.integers(c)  # a confusable class, lower
            scores[i, other, near] = np.maximum(scores[i, other, near],
                                                rng.uniform(0.1, 0.5, near.size))
    boxes = np.concatenate([cxcy - wh / 2, cxcy + wh / 2], -1).astype(np.float32)
    return boxes, scores


def ort_session(threads):
    """One NonMaxSuppression node (center_point_box 0, [y1, x1, y2, x2])."""
    import onnxruntime as ort
    from onnx import TensorProto, helper
    names = ["boxes", "scores", "max", "iou", "score"]
    types = [TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.INT64, TensorProto.FLOAT,
             TensorProto.FLOAT]
    shapes = [[None, None, 4], [None, None, None], [1], [1], [1]]
    inputs = [helper.make_tensor_value_info(n, t, s) for n, t, s in zip(names, types, shapes)]
    out = helper.make_tensor_value_info("selected", TensorProto.INT64, [None, 3])
    graph = helper.make_graph([helper.make_node("NonMaxSuppression", names, ["selected"])],
                              "nms", inputs, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def main_opencl(opts, reps):
    """The two calls on OpenCL against the CPU's outputs."""
    import pyopencl.array as cla

    queue = opencl_queue()
    boxes, scores = make_case()
    yxyx = np.ascontiguousarray(boxes[..., [1, 0, 3, 2]])
    on = {k: cla.to_device(queue, v) for k, v in (("b", boxes), ("s", scores), ("y", yxyx))}
    load = busy(os.cpu_count() or 1) if opts.load else []
    rows = []
    try:
        for name, score, per_class, per_image in CASES:
            padded = finished(queue, lambda: visionops.batched_nms_padded(
                on["b"], on["s"], IOU, score, per_class, per_image))
            onnx = finished(queue,
                            lambda: visionops.onnx_nms(on["y"], on["s"], per_class, IOU, score))
            same = all(np.array_equal(o.get(), r) for o, r in zip(
                padded() + onnx(),
                visionops.batched_nms_padded(boxes, scores, IOU, score, per_class, per_image) +
                visionops.onnx_nms(yxyx, scores, per_class, IOU, score)))
            t = interleaved({"padded": padded, "onnx": onnx}, reps, opts.blocks)
            rows.append((name, t["padded"], t["onnx"], same))
    finally:
        for p in load:
            p.kill()
    print(f"batched_nms_padded and onnx_nms on OpenCL ({queue.device.name.strip()}), B = 8, "
          f"8,400 boxes, 80 classes, float32, background load: "
          f"{f'{len(load)} busy processes' if load else 'none'}, "
          f"{'back to back' if opts.blocks else 'interleaved rounds'}, {reps} reps")
    print("| case | batched_nms_padded | onnx_nms | outputs == the CPU's |")
    print("|---|---|---|---|")
    for name, vp, vo, same in rows:
        print(f"| {name} | {vp:.2f} ms | {vo:.2f} ms | {'yes' if same else 'NO'} |")


def main():
    opts, cores, reps = options(__doc__, 15, 5, blocks=True, flags=(
        ("--opencl", "visionops on OpenCL against its CPU outputs (no onnxruntime)"),))
    if opts.opencl:
        return main_opencl(opts, reps)
    import onnxruntime as ort
    boxes, scores = make_case()
    yxyx = np.ascontiguousarray(boxes[..., [1, 0, 3, 2]])  # ONNX's corner order
    load = busy(cores) if opts.load else []
    rows = []
    try:
        for name, score, per_class, per_image in CASES:
            iou = IOU
            feeds = {"boxes": yxyx, "scores": scores, "max": np.array([per_class], np.int64),
                     "iou": np.array([iou], np.float32), "score": np.array([score], np.float32)}
            want = ort_session(1).run(None, feeds)[0]
            selected, num = visionops.onnx_nms(yxyx, scores, per_class, iou, score)
            same = np.array_equal(selected[:int(num)], want)
            for threads in sorted({1, cores}):
                visionops.set_num_threads(threads)
                sess = ort_session(threads)
                timed = {
                    "padded": lambda: visionops.batched_nms_padded(
                        boxes, scores, iou, score, per_class, per_image),
                    "onnx": lambda: visionops.onnx_nms(yxyx, scores, per_class, iou, score),
                    "ort": lambda: sess.run(None, feeds),
                }
                t = interleaved(timed, reps, opts.blocks)
                rows.append((name, threads, t["padded"], t["onnx"], t["ort"], len(want), same))
        visionops.set_num_threads(0)
    finally:
        for p in load:
            p.kill()
    print(f"NMS per (image, class) on the CPU, {cores} cores, onnxruntime {ort.__version__}, "
          f"B = 8, 8,400 boxes, 80 classes, float32, background load: "
          f"{f'{len(load)} busy processes' if load else 'none'}, "
          f"{'back to back' if opts.blocks else 'interleaved rounds'}, {reps} reps")
    print("| case | threads | batched_nms_padded | onnx_nms | onnxruntime NonMaxSuppression | "
          "padded vs ORT | onnx_nms vs ORT | ORT rows | onnx_nms rows == ORT's |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, threads, vp, vo, o, n, same in rows:
        print(f"| {name} | {threads} | {vp:.2f} ms | {vo:.2f} ms | {o:.2f} ms | {o / vp:.1f}x | "
              f"{o / vo:.1f}x | {n} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
