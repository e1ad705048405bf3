"""matrix_nms on the CPU against paddle.vision.ops.matrix_nms (Paddle's CPU
kernel, the exact reference), in the same process on the same inputs,
through the public APIs (visionops.matrix_nms on NumPy arrays, compaction
included; Paddle's function on paddle tensors made beforehand). The results
are checked identical (every array, bit for bit) before anything is timed.

Cases (issue 17): detection heads of B = 8 images, C = 80 classes: a SOLO-
like head of M = 1,000 candidates and YOLO-like heads of M = 8,400 (the
anchor-free grid of a 640x640 input), nms_top_k 400, keep_top_k 100,
post_threshold 0.05. Boxes are jittered copies of a few objects per image
(so that the decays matter); scores skewed towards 0 as a sigmoid head's
are (u^8, u uniform: about 31% above 0.05, 16% above 0.25), and distinct
within an image (u one per cell of a grid), since Paddle orders ties in no
defined way.

Reports medians at 1 and 2 threads (visionops.set_num_threads; Paddle's
kernel is serial), each round timing both calls once in turn so that both
sides see the same machine, and the ratio. `--load` adds one busy process
per core.
`--opencl` times visionops on OpenCL instead (pyopencl arrays on the first
device, the queue finished inside each timed call), checked equal to its
CPU outputs, without Paddle.
Usage: PYTHONPATH=<build>/python python bench/matrix_nms.py [--quick] [--load] [--reps N]
       [--opencl]
"""

import os

import numpy as np

import visionops
from timing import busy, finished, interleaved, opencl_queue, options  # bench/timing.py

# name, M, score_threshold, use_gaussian
CASES = (("SOLO-like", 1000, 0.05, True), ("YOLO-like", 8400, 0.05, False),
         ("YOLO-like", 8400, 0.25, True))


def make_case(m, b=8, c=80, objects=30, seed=0):
    rng = np.random.default_rng(seed)
    centre = rng.uniform(0, 640, (b, objects, 2))
    size = rng.uniform(16, 200, (b, objects, 2))
    k = rng.integers(0, objects, (b, m))
    pick = np.take_along_axis
    cxy = pick(centre, k[..., None], 1) + rng.normal(0, 0.15, (b, m, 2)) * pick(size, k[..., None], 1)
    wh = pick(size, k[..., None], 1) * rng.uniform(0.7, 1.3, (b, m, 2))
    boxes = np.concatenate([cxy - wh / 2, cxy + wh / 2], -1).astype(np.float32)
    # tie-free (Paddle's partial_sort leaves ties in no defined order): the
    # C * M scores of an image are u^8 of distinct u, one per cell of a grid
    cells = np.stack([rng.permutation(c * m) for _ in range(b)]) + rng.uniform(0, 1, (b, c * m))
    scores = ((cells / (c * m)) ** 8).reshape(b, c, m).astype(np.float32)
    return boxes, scores


KW = dict(post_threshold=0.05, nms_top_k=400, keep_top_k=100, gaussian_sigma=2.0,
          background_label=-1, normalized=False, return_index=True)


def main_opencl(opts, reps):
    """The cases on OpenCL against visionops' CPU outputs."""
    import pyopencl.array as cla

    queue = opencl_queue()
    load = busy(os.cpu_count() or 1) if opts.load else []
    rows = []
    try:
        for name, m, threshold, gaussian in CASES:
            boxes, scores = make_case(m)
            kw = dict(KW, score_threshold=threshold, use_gaussian=gaussian)
            db, ds = cla.to_device(queue, boxes), cla.to_device(queue, scores)
            call = finished(queue, lambda: visionops.matrix_nms(db, ds, **kw))
            same = all(np.array_equal(g.get(), w)
                       for g, w in zip(call(), visionops.matrix_nms(boxes, scores, **kw)))
            rows.append((name, m, threshold, gaussian, interleaved({"vo": call}, reps)["vo"], same))
    finally:
        for p in load:
            p.kill()
    print(f"matrix_nms on OpenCL ({queue.device.name.strip()}), float32, B = 8, C = 80, "
          f"nms_top_k 400, keep_top_k 100, background load: "
          f"{f'{len(load)} busy processes' if load else 'none'}, {reps} reps")
    print("| case | M | score_threshold | decay | visionops | outputs == the CPU's |")
    print("|---|---|---|---|---|---|")
    for name, m, thr, gauss, vo, same in rows:
        print(f"| {name} | {m} | {thr} | {'gaussian' if gauss else 'linear'} | {vo:.1f} ms | "
              f"{'yes' if same else 'NO'} |")


def main():
    opts, cores, reps = options(__doc__, 7, 3, flags=(
        ("--opencl", "visionops on OpenCL against its CPU outputs (no Paddle)"),))
    if opts.opencl:
        return main_opencl(opts, reps)
    import paddle
    paddle.set_device("cpu")
    load = busy(cores) if opts.load else []
    rows = []
    try:
        for name, m, threshold, gaussian in CASES:
            boxes, scores = make_case(m)
            kw = dict(KW, score_threshold=threshold, use_gaussian=gaussian)
            pb, ps = paddle.to_tensor(boxes), paddle.to_tensor(scores)
            want = [t.numpy() for t in paddle.vision.ops.matrix_nms(pb, ps, **kw)]
            got = visionops.matrix_nms(boxes, scores, **kw)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w), name
            kept = int(want[1].sum())
            for threads in (1, 2):
                visionops.set_num_threads(threads)
                t = interleaved({
                    "vo": lambda: visionops.matrix_nms(boxes, scores, **kw),
                    "pd": lambda: paddle.vision.ops.matrix_nms(pb, ps, **kw),
                }, reps)
                rows.append((name, m, threshold, gaussian, threads, kept, t["vo"], t["pd"]))
        visionops.set_num_threads(0)
    finally:
        for p in load:
            p.kill()
    print(f"matrix_nms on the CPU, {cores} cores, paddle {paddle.__version__}, float32, "
          f"B = 8, C = 80, nms_top_k 400, keep_top_k 100, background load: "
          f"{f'{len(load)} busy processes' if load else 'none'}, interleaved rounds, {reps} reps")
    print("| case | M | score_threshold | decay | threads | kept | visionops | paddle | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, m, thr, gauss, t, kept, vo, pd in rows:
        print(f"| {name} | {m} | {thr} | {'gaussian' if gauss else 'linear'} | {t} | {kept} | "
              f"{vo:.1f} ms | {pd:.1f} ms | {pd / vo:.1f}x |")


if __name__ == "__main__":
    main()
