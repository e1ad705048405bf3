"""nms_rotated and batched_nms_rotated against plain references: a Python
greedy loop (stable descending score order, a box suppressed by a kept one
when their rotated IoU is >= the threshold) over an IoU matrix from
torchvision's own box_iou_rotated (torch 2.x lane: the same algorithm, so
the decisions must be identical), from visionops.box_iou_rotated where this
build has it, and from exact polygon geometry (shapely where installed,
else a plain polygon clip written here, both away from the thresholds);
OpenCV's cv2.dnn.NMSBoxesRotated as a second opinion; the >= rule at
exact IoU values; batched vs per-category loops; the clockwise / radians
flags; empty inputs; bad inputs; the torch, TorchScript and pyopencl
paths."""
import math

import numpy as np
import pytest

import visionops

DEG = 0.01745329251  # torchvision's / detectron2's pi / 180


# ------------------------------------------------------------ inputs


def oriented_detections(rng, n, dtype=np.float32, extent=200.0, objects=None):
    """Oriented detections: jittered copies of objects (each at its own
    angle, some at exactly 0 or 90 degrees), some exact duplicates."""
    objects = objects or n // 10 + 1
    obj = np.stack([rng.uniform(0, extent, objects), rng.uniform(0, extent, objects),
                    rng.uniform(0.03, 0.2, objects) * extent,
                    rng.uniform(0.02, 0.1, objects) * extent,
                    np.where(rng.random(objects) < 0.1, 90.0 * rng.integers(0, 2, objects),
                             rng.uniform(-180, 180, objects))], axis=1)
    k = rng.integers(0, objects, n)
    b = obj[k].copy()
    b[:, 0] += 0.1 * b[:, 2] * rng.standard_normal(n)
    b[:, 1] += 0.1 * b[:, 3] * rng.standard_normal(n)
    b[:, 2] *= rng.uniform(0.85, 1.15, n)
    b[:, 3] *= rng.uniform(0.85, 1.15, n)
    b[:, 4] += 6 * rng.standard_normal(n)
    dup = rng.random(n) < 0.1
    if n > 1:
        b[dup] = b[rng.integers(0, n, int(dup.sum()))]
    return b.astype(dtype)


def tied_scores(rng, n, dtype=np.float32):
    return (np.floor(rng.uniform(0, 8, n)) / 8).astype(dtype)


def distinct_scores(rng, n, dtype=np.float32):
    return rng.permutation(np.linspace(0.05, 0.95, n)).astype(dtype)


# ------------------------------------------------------------ references


def corners(b):
    """The four corners of (cx, cy, w, h, a) boxes [N, 5] in float64
    (torchvision's convention, its pi / 180)."""
    b = np.asarray(b, np.float64)
    t = b[:, 4] * DEG
    c, s = np.cos(t), np.sin(t)
    cx, cy, w, h = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    p0 = np.stack([cx + (s * h + c * w) / 2, cy + (c * h - s * w) / 2], -1)
    p1 = np.stack([cx + (-s * h + c * w) / 2, cy + (-c * h - s * w) / 2], -1)
    ctr = np.stack([cx, cy], -1)
    return np.stack([p0, p1, 2 * ctr - p0, 2 * ctr - p1], 1)


def _area(poly):
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def _clip(subject, clipper):
    """Sutherland-Hodgman: the convex polygon `subject` cut by the convex
    polygon `clipper` (both counter-clockwise or both clockwise)."""
    orient = np.sign(np.cross(clipper[1] - clipper[0], clipper[2] - clipper[1]))
    out = list(subject)
    for i in range(len(clipper)):
        a, b = clipper[i], clipper[(i + 1) % len(clipper)]
        pts, out = out, []
        if not pts:
            break
        inside = [orient * np.cross(b - a, p - a) >= 0 for p in pts]
        for k, p in enumerate(pts):
            q = pts[k - 1]
            if inside[k] != inside[k - 1]:
                d = p - q
                den = np.cross(b - a, d)
                t = np.cross(b - a, a - q) / den
                out.append(q + t * d)
            if inside[k]:
                out.append(p)
    return np.array(out) if len(out) >= 3 else None


def exact_iou(boxes):
    """IoU matrix [N, N] of exact polygon geometry (shapely if installed,
    else the plain clip above), float64."""
    cs = corners(boxes)
    n = len(cs)
    areas = np.array([_area(p) for p in cs])
    try:
        from shapely.geometry import Polygon
    except ImportError:
        Polygon = None
    polys = [Polygon(p) for p in cs] if Polygon else None
    iou = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            if areas[i] < 1e-14 or areas[j] < 1e-14:
                continue
            if polys:
                inter = polys[i].intersection(polys[j]).area
            else:
                poly = _clip(cs[i], cs[j])
                inter = _area(poly) if poly is not None else 0.0
            iou[i, j] = iou[j, i] = inter / (areas[i] + areas[j] - inter)
    return iou


def greedy(scores, iou, thr, idxs=None):
    """Reference greedy NMS with the >= rule: (keep, margin), margin the
    least |iou - thr| over the pairs the decisions read (kept box, a later
    box of its category not yet suppressed)."""
    order = np.argsort(-np.asarray(scores, np.float64), kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    removed = np.zeros(len(order), bool)
    keep, margin = [], np.inf
    for i in order:
        if removed[i]:
            continue
        keep.append(i)
        cand = ~removed & (rank > rank[i])
        if idxs is not None:
            cand &= idxs == idxs[i]
        if cand.any():
            margin = min(margin, np.abs(iou[i, cand] - thr).min())
        removed |= cand & (iou[i] >= thr)
    return np.array(keep, np.int64), margin


def torchvision_iou(boxes):
    """torchvision's rotated IoU matrix (torch 2.x lane), in the boxes' dtype."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    op = getattr(torch.ops.torchvision, "box_iou_rotated", None)
    if op is None:
        pytest.skip("this torchvision has no box_iou_rotated op")
    t = torch.from_numpy(np.ascontiguousarray(boxes))
    return op(t, t).double().numpy()


# ------------------------------------------------------------ against references


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed,n,thr", [(0, 150, 0.5), (1, 300, 0.3), (2, 60, 0.7),
                                         (3, 200, 0.05)])
def test_against_torchvision_iou(dtype, seed, n, thr):
    """The same decisions as a greedy loop over torchvision's own rotated
    IoU (the algorithm visionops reproduces), tie-heavy scores."""
    rng = np.random.default_rng(seed)
    boxes = oriented_detections(rng, n, dtype)
    scores = tied_scores(rng, n, dtype)
    iou = torchvision_iou(boxes)
    want, _ = greedy(scores, iou, thr)
    np.testing.assert_array_equal(visionops.nms_rotated(boxes, scores, thr), want)
    idxs = rng.integers(0, 4, n)
    want, _ = greedy(scores, iou, thr, idxs)
    np.testing.assert_array_equal(visionops.batched_nms_rotated(boxes, scores, idxs, thr), want)


def test_against_visionops_iou():
    """The same decisions as a greedy loop over visionops.box_iou_rotated
    (where this build has it)."""
    if not hasattr(visionops, "box_iou_rotated"):
        pytest.skip("this build has no visionops.box_iou_rotated")
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        boxes = oriented_detections(rng, 250, dtype)
        scores = tied_scores(rng, 250, dtype)
        iou = np.asarray(visionops.box_iou_rotated(boxes, boxes), np.float64)
        for thr in (0.2, 0.5, 0.8):
            want, _ = greedy(scores, iou, thr)
            np.testing.assert_array_equal(visionops.nms_rotated(boxes, scores, thr), want)


@pytest.mark.parametrize("seed,n,thr", [(10, 120, 0.5), (11, 150, 0.35), (13, 80, 0.6)])
def test_against_exact_geometry(seed, n, thr):
    """float64 boxes against exact polygon geometry (shapely or the plain
    clip), where no pair the decisions read is within 1e-4 of the threshold
    (the algorithm's EPS slack moves IoUs by up to ~1e-5)."""
    rng = np.random.default_rng(seed)
    boxes = oriented_detections(rng, n, np.float64)
    scores = tied_scores(rng, n, np.float64)
    idxs = rng.integers(-2, 2, n)
    iou = exact_iou(boxes)
    for cats in (None, idxs):
        want, margin = greedy(scores, iou, thr, cats)
        assert margin > 1e-4, "the data puts a pair within %g of the threshold" % margin
        got = (visionops.nms_rotated(boxes, scores, thr) if cats is None else
               visionops.batched_nms_rotated(boxes, scores, cats, thr))
        np.testing.assert_array_equal(got, want)


def test_against_opencv():
    """A second opinion: OpenCV's NMSBoxesRotated (its own IoU; it keeps a
    box whose IoU with every kept one is <= the threshold), on distinct
    scores and thresholds away from every IoU the decisions read."""
    cv2 = pytest.importorskip("cv2")
    if not hasattr(cv2, "dnn") or not hasattr(cv2.dnn, "NMSBoxesRotated"):
        pytest.skip("this OpenCV has no cv2.dnn.NMSBoxesRotated")
    rng = np.random.default_rng(21)
    checked = 0
    for n, thr in ((150, 0.4), (250, 0.55), (100, 0.25)):
        boxes = oriented_detections(rng, n, np.float32)
        scores = distinct_scores(rng, n)
        _, margin = greedy(scores, exact_iou(boxes), thr)
        if margin < 1e-3:
            continue
        rects = [((float(b[0]), float(b[1])), (float(b[2]), float(b[3])), -float(b[4]))
                 for b in boxes]
        cv = np.asarray(cv2.dnn.NMSBoxesRotated(rects, scores.tolist(), 0.0, thr),
                        np.int64).reshape(-1)
        np.testing.assert_array_equal(visionops.nms_rotated(boxes, scores, thr), cv)
        checked += 1
    assert checked >= 2


def test_torchvision_has_no_nms_rotated_or_agrees():
    """torchvision 0.29 ships no nms_rotated; where a later one has the op,
    its keep is ours."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    op = getattr(torch.ops.torchvision, "nms_rotated", None)
    if op is None:
        pytest.skip("torch.ops.torchvision has no nms_rotated")
    rng = np.random.default_rng(4)
    boxes = oriented_detections(rng, 300)
    scores = distinct_scores(rng, 300)
    want = op(torch.from_numpy(boxes), torch.from_numpy(scores), 0.5).numpy()
    np.testing.assert_array_equal(visionops.nms_rotated(boxes, scores, 0.5), want)


# ------------------------------------------------------------ the rule and the order


def test_threshold_equal_to_iou_suppresses():
    """>=: a threshold equal to the IoU suppresses (axis nms's > would not),
    the next double above it does not. Boxes at angle 0 with small integer
    coordinates have exact IoUs (1/2 and 1/4 here)."""
    boxes = np.array([[0, 0, 4, 4, 0], [0, 0, 4, 2, 0], [20, 20, 4, 4, 0], [20, 20, 2, 2, 0]],
                     np.float32)
    scores = np.array([0.9, 0.8, 0.7, 0.6], np.float32)
    for dtype in (np.float32, np.float64, np.float16):
        b, s = boxes.astype(dtype), scores.astype(dtype)
        assert list(visionops.nms_rotated(b, s, 0.5)) == [0, 2, 3]
        assert list(visionops.nms_rotated(b, s, 0.25)) == [0, 2]
        assert list(visionops.nms_rotated(b, s, math.nextafter(0.5, 1))) == [0, 1, 2, 3]
        assert list(visionops.nms_rotated(b, s, math.nextafter(0.25, 1))) == [0, 2, 3]
    # the same boxes through axis-aligned nms (> rule) keep box 1 at 0.5
    axis = np.array([[-2, -2, 2, 2], [-2, -1, 2, 1]], np.float32)
    assert list(visionops.nms(axis, scores[:2], 0.5)) == [0, 1]


def test_threshold_at_torchvision_iou():
    """At the float32 IoU torchvision computes for a pair (as a double), the
    pair is suppressed; at the next double above it, not."""
    rng = np.random.default_rng(8)
    boxes = oriented_detections(rng, 40, np.float32, objects=3)
    iou = torchvision_iou(boxes)
    scores = np.array([1.0, 0.5], np.float32)
    tested = 0
    for i in range(40):
        for j in range(i + 1, 40):
            v = float(iou[i, j])
            if not 0.05 < v < 0.95:
                continue
            pair = boxes[[i, j]]
            assert list(visionops.nms_rotated(pair, scores, v)) == [0], (i, j, v)
            assert list(visionops.nms_rotated(pair, scores, math.nextafter(v, 2))) == [0, 1]
            tested += 1
    assert tested > 10


def test_zero_threshold_suppresses_disjoint_boxes():
    """IoU >= 0 holds for every pair, far apart or empty ones too: one box
    per category survives (what a reject of far pairs must keep)."""
    boxes = np.array([[0, 0, 2, 2, 10], [500, 500, 2, 2, 30], [1e4, 0, 0, 3, 0], [0, 0, 2, 2, 10]],
                     np.float32)
    scores = np.array([0.1, 0.9, 0.5, 0.5], np.float32)
    assert list(visionops.nms_rotated(boxes, scores, 0.0)) == [1]
    assert list(visionops.nms_rotated(boxes, scores, -1.0)) == [1]
    assert list(visionops.batched_nms_rotated(boxes, scores, np.array([0, 1, 0, 2]), 0.0)) == [
        1, 2, 3]
    assert list(visionops.nms_rotated(boxes, scores, 1e-9)) == [1, 2, 3]


def test_ties_and_nan_scores():
    """Stable order: equal scores keep input order; NaN scores come first
    (as nms, torch's descending sort)."""
    boxes = np.array([[10 * i, 0, 2, 2, 0] for i in range(5)], np.float32)
    scores = np.array([0.5, np.nan, 0.5, 0.7, np.nan], np.float32)
    assert list(visionops.nms_rotated(boxes, scores, 0.5)) == [1, 4, 3, 0, 2]
    assert list(visionops.nms_rotated(boxes, scores, 0.5)) == list(
        visionops.nms(np.c_[boxes[:, :2], boxes[:, :2] + 2], scores, 0.5))


def test_identical_and_half_turned_boxes():
    """A duplicate, the same box turned by 180 degrees, and a square turned
    by 90 have IoU 1 (within the algorithm's slack) and are suppressed."""
    boxes = np.array([[5, 3, 4, 2, -90], [5, 3, 4, 2, 90], [5, 3, 4, 2, -90], [40, 0, 3, 3, 0],
                      [40, 0, 3, 3, 90]], np.float32)
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5], np.float32)
    assert list(visionops.nms_rotated(boxes, scores, 0.99)) == [0, 3]


# ------------------------------------------------------------ batched, flags, empty


def test_batched_equals_per_category_loops():
    rng = np.random.default_rng(31)
    n = 400
    boxes = oriented_detections(rng, n)
    scores = tied_scores(rng, n)
    idxs = rng.choice(np.array([-7, 0, 3, 10**12]), n)
    for thr in (0.3, 0.6):
        parts = []
        for c in np.unique(idxs):
            sel = np.nonzero(idxs == c)[0]
            parts.append(sel[visionops.nms_rotated(boxes[sel], scores[sel], thr)])
        merged = np.concatenate(parts)
        order = np.argsort(-scores.astype(np.float64), kind="stable")
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n)
        want = merged[np.argsort(rank[merged], kind="stable")]
        got = visionops.batched_nms_rotated(boxes, scores, idxs, thr)
        np.testing.assert_array_equal(got, want)
        # one category is plain nms_rotated; int32 categories are widened
        np.testing.assert_array_equal(
            visionops.batched_nms_rotated(boxes, scores, np.zeros(n, np.int32), thr),
            visionops.nms_rotated(boxes, scores, thr))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_clockwise_and_radians(dtype):
    """clockwise=True is the angle negated; radians=True takes a * pi / 180
    (the truncated constant, so float64 angles give the same theta)."""
    rng = np.random.default_rng(41)
    boxes = oriented_detections(rng, 300, np.float64)
    scores = tied_scores(rng, 300)
    flipped = boxes.copy()
    flipped[:, 4] = -flipped[:, 4]
    for thr in (0.3, 0.6):
        base = visionops.nms_rotated(boxes.astype(dtype), scores, thr)
        np.testing.assert_array_equal(
            visionops.nms_rotated(flipped.astype(dtype), scores, thr, clockwise=True), base)
        idxs = rng.integers(0, 3, 300)
        np.testing.assert_array_equal(
            visionops.batched_nms_rotated(flipped.astype(dtype), scores, idxs, thr, clockwise=True),
            visionops.batched_nms_rotated(boxes.astype(dtype), scores, idxs, thr))
    rad = boxes.copy()
    rad[:, 4] = boxes[:, 4] * DEG
    np.testing.assert_array_equal(visionops.nms_rotated(rad, scores, 0.5, radians=True),
                                  visionops.nms_rotated(boxes, scores, 0.5))
    rad[:, 4] = -rad[:, 4]
    np.testing.assert_array_equal(
        visionops.nms_rotated(rad, scores, 0.5, clockwise=True, radians=True),
        visionops.nms_rotated(boxes, scores, 0.5))


def test_empty():
    e = np.zeros((0, 5), np.float32)
    for keep in (visionops.nms_rotated(e, np.zeros(0, np.float32), 0.5),
                 visionops.batched_nms_rotated(e, np.zeros(0, np.float32), np.zeros(0, np.int64),
                                               0.5)):
        assert keep.shape == (0,) and keep.dtype == np.int64


def test_float_companion_scores():
    """Scores of another floating dtype are only ordered (as nms)."""
    rng = np.random.default_rng(51)
    boxes = oriented_detections(rng, 200)
    scores = distinct_scores(rng, 200)
    np.testing.assert_array_equal(
        visionops.nms_rotated(boxes, scores.astype(np.float64), 0.5),
        visionops.nms_rotated(boxes, scores, 0.5))


# ------------------------------------------------------------ bad inputs


@pytest.mark.parametrize("row,col,value,what", [
    (1, 0, np.nan, r"nms_rotated: boxes\[1, 0\] = nan is not finite"),
    (2, 4, np.inf, r"nms_rotated: boxes\[2, 4\] = inf is not finite"),
    (0, 1, -np.inf, r"boxes\[0, 1\] = -inf is not finite"),
    (1, 2, -1.0, r"nms_rotated: boxes\[1, 2\] = -1 is negative: a box's width must be >= 0"),
    (2, 3, -0.5, r"boxes\[2, 3\] = -0.5 is negative: a box's height must be >= 0"),
])
def test_bad_box_values(row, col, value, what):
    boxes = np.array([[0, 0, 2, 2, 0], [1, 1, 2, 2, 30], [5, 5, 3, 1, -45]], np.float32)
    boxes[row, col] = value
    scores = np.array([0.5, 0.6, 0.7], np.float32)
    with pytest.raises(visionops.VisionOpsValueError, match=what):
        visionops.nms_rotated(boxes, scores, 0.5)
    with pytest.raises(visionops.VisionOpsValueError, match=what.replace("nms_rotated", "batched_nms_rotated")):
        visionops.batched_nms_rotated(boxes, scores, np.zeros(3, np.int64), 0.5)


def test_bad_arguments():
    boxes = np.array([[0, 0, 2, 2, 0], [1, 1, 2, 2, 30]], np.float32)
    scores = np.array([0.5, 0.6], np.float32)
    with pytest.raises(visionops.VisionOpsValueError, match=r"nms_rotated: boxes must have shape \[N, 5\]"):
        visionops.nms_rotated(boxes[:, :4].copy(), scores, 0.5)
    with pytest.raises(visionops.VisionOpsValueError, match=r"nms_rotated: scores must have shape \[2\]"):
        visionops.nms_rotated(boxes, scores[:1].copy(), 0.5)
    with pytest.raises(visionops.VisionOpsValueError, match=r"nms_rotated: iou_threshold"):
        visionops.nms_rotated(boxes, scores, float("nan"))
    with pytest.raises(visionops.VisionOpsTypeError, match=r"nms_rotated: boxes"):
        visionops.nms_rotated(boxes.astype(np.int32), scores, 0.5)
    with pytest.raises(visionops.VisionOpsTypeError, match=r"nms_rotated: boxes must be a tensor"):
        visionops.nms_rotated([[0, 0, 1, 1, 0]], scores, 0.5)
    with pytest.raises(visionops.VisionOpsError, match=r"batched_nms_rotated: idxs"):
        visionops.batched_nms_rotated(boxes, scores, np.zeros(2, np.float32), 0.5)
    with pytest.raises(visionops.VisionOpsValueError, match=r"batched_nms_rotated: idxs must have shape \[2\]"):
        visionops.batched_nms_rotated(boxes, scores, np.zeros(3, np.int64), 0.5)


# ------------------------------------------------------------ torch, TorchScript, OpenCL


def test_torch_tensors_and_script():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(61)
    boxes = oriented_detections(rng, 200)
    scores = tied_scores(rng, 200)
    idxs = rng.integers(0, 3, 200)
    want = visionops.nms_rotated(boxes, scores, 0.4)
    got = visionops.nms_rotated(torch.from_numpy(boxes), torch.from_numpy(scores), 0.4)
    assert got.dtype == torch.int64
    np.testing.assert_array_equal(got.numpy(), want)
    keep, num_kept = torch.ops.visionops.nms_rotated(torch.from_numpy(boxes),
                                                     torch.from_numpy(scores), 0.4)
    assert keep.shape == (200,) and num_kept.shape == () and int(num_kept) == len(want)
    np.testing.assert_array_equal(keep[:len(want)].numpy(), want)
    assert (keep[len(want):] == -1).all()
    want_b = visionops.batched_nms_rotated(boxes, scores, idxs, 0.4, clockwise=True)
    got_b = visionops.batched_nms_rotated(torch.from_numpy(boxes), torch.from_numpy(scores),
                                          torch.from_numpy(idxs).int(), 0.4, clockwise=True)
    np.testing.assert_array_equal(got_b.numpy(), want_b)

    @torch.jit.script
    def scripted(b: torch.Tensor, s: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return visionops.nms_rotated(b, s, 0.4) + visionops.batched_nms_rotated(
            b, s, i, 0.4, True).sum()

    np.testing.assert_array_equal(
        scripted(torch.from_numpy(boxes), torch.from_numpy(scores), torch.from_numpy(idxs)).numpy(),
        want + want_b.sum())


def test_pyopencl_arrays():
    try:
        import pyopencl as cl
        import pyopencl.array as cl_array
    except ImportError:
        pytest.skip("pyopencl is not installed")
    backend = {b[0]: b for b in visionops.backends()}.get("opencl")
    if backend is None or not backend[1] or not backend[2]:
        pytest.skip("no usable OpenCL backend in this build")
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error as e:
        pytest.skip("no OpenCL platform: %s" % e)
    if not devices:
        pytest.skip("no OpenCL device")
    queue = cl.CommandQueue(cl.Context([devices[0]]))
    rng = np.random.default_rng(71)
    boxes = oriented_detections(rng, 300)
    scores = tied_scores(rng, 300)
    idxs = rng.integers(0, 4, 300).astype(np.int32)
    dev = lambda x: cl_array.to_device(queue, np.ascontiguousarray(x))  # noqa: E731
    keep = visionops.nms_rotated(dev(boxes), dev(scores), 0.5)
    assert isinstance(keep, cl_array.Array) and keep.dtype == np.int64
    np.testing.assert_array_equal(keep.get(), visionops.nms_rotated(boxes, scores, 0.5))
    keep = visionops.batched_nms_rotated(dev(boxes), dev(scores), dev(idxs), 0.5)
    np.testing.assert_array_equal(keep.get(),
                                  visionops.batched_nms_rotated(boxes, scores, idxs, 0.5))
