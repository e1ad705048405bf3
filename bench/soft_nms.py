"""soft_nms on the CPU against OpenCV's cv2.dnn.softNMSBoxes (single-threaded,
scalar O(N^2)), in the same process on the same inputs, through the public
API (visionops.soft_nms on NumPy arrays, the call a user makes).

Inputs: detector-like boxes (clusters of jittered boxes in an 800x800 image,
as a detector's pre-NMS output), integer coordinates (OpenCV's cv::Rect),
distinct float32 scores, N = 5,000 and 1,000; linear (IoU threshold
0.300001: integer boxes have IoUs of exactly 0.3, where mmcv's >= and
OpenCV's > differ) and gaussian (sigma 0.5) with min_score =
score_threshold = 0.001. The conventions coincide there (SPEC-NEXT 2.6):
before timing, the kept indices
must be equal and the scores at selection within 1e-5. Also batched_soft_nms
on the same 5,000 boxes in 80 categories against a per-category loop of
cv2.dnn.softNMSBoxes merged by score (what mmcv's batched_nms does above
its split threshold).

Reports medians at 1 and 2 threads (visionops.set_num_threads; OpenCV's
function runs on one thread whatever cv2.setNumThreads says), each round
timing every call once in turn so that both sides see the same machine.
`--load` adds one busy process per core.
Usage: PYTHONPATH=<build>/python python bench/soft_nms.py [--quick] [--load]
"""

import cv2
import numpy as np

import visionops
from timing import busy, interleaved, options  # bench/timing.py

METHODS = {"linear": cv2.dnn.SoftNMSMethod_SOFTNMS_LINEAR,
           "gaussian": cv2.dnn.SoftNMSMethod_SOFTNMS_GAUSSIAN}
THRESHOLD, SIGMA, MIN_SCORE = 0.300001, 0.5, 1e-3


def make_case(n, seed=0):
    """n boxes (x1, y1, x2, y2) with integer coordinates in clusters of about
    20, distinct scores, and 80 categories."""
    rng = np.random.default_rng(seed)
    m = n // 20 + 1
    centre = np.column_stack([rng.uniform(0, 800, (m, 2)), rng.uniform(10, 200, (m, 2))])
    c = centre[rng.integers(0, m, n)]
    cxy = c[:, :2] + 8 * rng.standard_normal((n, 2))
    wh = c[:, 2:] * rng.uniform(0.8, 1.2, (n, 2))
    boxes = np.round(np.column_stack([cxy - wh / 2, cxy + wh / 2])).astype(np.float32)
    scores = rng.permutation(np.linspace(0.05, 0.95, n)).astype(np.float32)
    return boxes, scores, rng.integers(0, 80, n)


def opencv(boxes, scores, method):
    xywh = np.column_stack([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]]).astype(np.int32)
    s, idx = cv2.dnn.softNMSBoxes(xywh.tolist(), scores.tolist(), MIN_SCORE, THRESHOLD,
                                  sigma=SIGMA, method=METHODS[method])
    return np.asarray(idx, np.int64).reshape(-1), np.asarray(s, np.float32).reshape(-1)


def opencv_batched(boxes, scores, idxs, method):
    keep, kept_scores = [], []
    for c in np.unique(idxs):
        members = np.nonzero(idxs == c)[0]
        k, s = opencv(boxes[members], scores[members], method)
        keep.append(members[k])
        kept_scores.append(s)
    keep, kept_scores = np.concatenate(keep), np.concatenate(kept_scores)
    order = np.lexsort((keep, -kept_scores))
    return keep[order], kept_scores[order]


def ours(boxes, scores, method):
    dets, keep = visionops.soft_nms(boxes, scores, THRESHOLD, SIGMA, MIN_SCORE, method)
    return keep, dets[:, 4]


def ours_batched(boxes, scores, idxs, method):
    dets, keep = visionops.batched_soft_nms(boxes, scores, idxs, THRESHOLD, SIGMA, MIN_SCORE,
                                            method)
    return keep, dets[:, 4]


def check_equal(name, got, want):
    (gk, gs), (wk, ws) = got, want
    if gk.shape != wk.shape or not np.array_equal(gk, wk):
        raise SystemExit(f"{name}: kept indices differ ({len(gk)} vs OpenCV's {len(wk)})")
    err = float(np.max(np.abs(gs - ws) / np.maximum(np.abs(ws), 1e-30))) if len(ws) else 0.0
    if err > 1e-5:
        raise SystemExit(f"{name}: scores differ by {err:.1e} relative")
    return len(gk), err


def main():
    opts, cores, reps = options(__doc__, 7, 3)
    cases = []
    for n in (5000, 1000):
        boxes, scores, idxs = make_case(n)
        for method in METHODS:
            cases.append((f"soft_nms N={n}", method, lambda b=boxes, s=scores, m=method: ours(b, s, m),
                          lambda b=boxes, s=scores, m=method: opencv(b, s, m)))
        if n == 5000:
            for method in METHODS:
                cases.append((f"batched_soft_nms N={n}, 80 categories", method,
                              lambda b=boxes, s=scores, i=idxs, m=method: ours_batched(b, s, i, m),
                              lambda b=boxes, s=scores, i=idxs, m=method: opencv_batched(
                                  b, s, i, m)))
    checked = {}
    for name, method, vo, cv in cases:
        checked[name, method] = check_equal(f"{name} {method}", vo(), cv())
    load = busy(cores) if opts.load else []
    rows = []
    try:
        for threads in (1, 2):
            visionops.set_num_threads(threads)
            cv2.setNumThreads(threads)
            for name, method, vo, cv in cases:
                t = interleaved({"vo": vo, "cv": cv}, reps)
                rows.append((name, method, threads, t["vo"], t["cv"]) + checked[name, method])
        visionops.set_num_threads(0)
    finally:
        for p in load:
            p.kill()
    print(f"soft_nms on the CPU, {cores} cores, OpenCV {cv2.__version__}, float32, "
          f"background load: {f'{len(load)} busy processes' if load else 'none'}, "
          f"interleaved rounds, {reps} reps")
    print("| case | method | threads | visionops | OpenCV | ratio | kept | max rel diff |")
    print("|---|---|---|---|---|---|---|---|")
    for name, method, t, vo, cv, kept, err in rows:
        print(f"| {name} | {method} | {t} | {vo:.2f} ms | {cv:.2f} ms | {cv / vo:.1f}x | {kept} | "
              f"{err:.1e} |")


if __name__ == "__main__":
    main()
