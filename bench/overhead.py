"""Per-call overhead through the public API (issue 18): tiny calls, where
the work is a few hundred nanoseconds and what a call costs is the Python
path (argument checks, DLPack exchange, shape inference, output
allocation, dispatch). visionops on torch tensors against torchvision's op
on the same tensors, and visionops on NumPy arrays (no torch on the path).

Cases: nms of 10 boxes, batched_nms of 10 boxes in 3 classes, box_iou of
2 x 2 boxes, roi_align of 1 RoI (2 x 2 bins of a [1, 4, 8, 8] map),
roi_pool of 1 RoI. Each figure is the best of 7 rounds of 2,000 calls
(microseconds a call): the least disturbed round, since the question is
what the code costs, not what the machine's neighbours do. Targets: within
1.5x of torchvision on torch tensors, under 10 us on NumPy.

--cold: each call from cold caches instead, as a call that follows other
work (a model's forward pass, another library's call) runs: before each
one, a sweep over 8 MB evicts the per-core caches; the figure is the
median over the calls (the three callers interleaved, so each finds the
others' leftovers too).
Usage: PYTHONPATH=<build>/python python bench/overhead.py [--calls N] [--threads T] [--cold]
"""
import argparse
import time

import numpy as np

import visionops

try:
    import torch
    import torchvision
    import torchvision.ops as tvops
except ImportError:  # NumPy figures only
    torch = None


def per_call_us(fn, calls, rounds=7):
    fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


def cold_us(fns, calls):
    """Median microseconds of each of fns, each call after a cache sweep."""
    sweep = np.ones(2 << 20, np.float32)  # 8 MB: past the per-core caches
    times = [[] for _ in fns]
    for _ in range(calls):
        for fn, t in zip(fns, times):
            sweep.sum()
            t0 = time.perf_counter()
            fn()
            t.append(time.perf_counter() - t0)
    return [float(np.median(t)) * 1e6 for t in times]


def inputs():
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 20, (10, 2)).astype(np.float32)
    boxes = np.concatenate([xy, xy + rng.uniform(1, 8, (10, 2)).astype(np.float32)], 1)
    scores = rng.uniform(0, 1, 10).astype(np.float32)
    idxs = rng.integers(0, 3, 10).astype(np.int64)
    feat = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    rois = np.array([[0, 1.0, 1.5, 6.0, 5.5]], np.float32)
    return dict(boxes=boxes, scores=scores, idxs=idxs, feat=feat, rois=rois,
                a=boxes[:2].copy(), b=boxes[2:4].copy())


def cases(lib, x):
    return [
        ("nms, 10 boxes", lambda: lib.nms(x["boxes"], x["scores"], 0.5)),
        ("batched_nms, 10 boxes", lambda: lib.batched_nms(x["boxes"], x["scores"], x["idxs"], 0.5)),
        ("box_iou, 2 x 2", lambda: lib.box_iou(x["a"], x["b"])),
        ("roi_align, 1 RoI", lambda: lib.roi_align(x["feat"], x["rois"], (2, 2), 1.0, 2, False)),
        ("roi_pool, 1 RoI", lambda: lib.roi_pool(x["feat"], x["rois"], (2, 2), 1.0)),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=0, help="both libraries' threads (0: all)")
    ap.add_argument("--cold", action="store_true", help="each call after an 8 MB cache sweep")
    opts = ap.parse_args()
    if opts.threads:
        visionops.set_num_threads(opts.threads)
        if torch is not None:
            torch.set_num_threads(opts.threads)
    x = inputs()
    numpy_cases = cases(visionops, x)
    head = "%-24s %12s" % ("call", "vo NumPy us")
    if torch is not None:
        t = {k: torch.from_numpy(v) for k, v in x.items()}
        vo_torch, tv = cases(visionops, t), cases(tvops, t)
        head += " %12s %12s %7s" % ("vo torch us", "tv torch us", "vo/tv")
        print("torch %s, torchvision %s, visionops %s" % (torch.__version__,
                                                          torchvision.__version__,
                                                          visionops.__version__))
    print(("calls from cold caches (medians of %d)\n" % opts.calls if opts.cold else "") + head)
    for i, (name, fn) in enumerate(numpy_cases):
        if opts.cold:
            fns = [fn] + ([vo_torch[i][1], tv[i][1]] if torch is not None else [])
            figures = cold_us(fns, opts.calls)
        else:
            figures = [per_call_us(fn, opts.calls)]
            if torch is not None:
                figures += [per_call_us(vo_torch[i][1], opts.calls),
                            per_call_us(tv[i][1], opts.calls)]
        row = "%-24s %12.2f" % (name, figures[0])
        if torch is not None:
            row += " %12.2f %12.2f %7.2f" % (figures[1], figures[2], figures[1] / figures[2])
        print(row)


if __name__ == "__main__":
    main()
