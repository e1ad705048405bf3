"""box_iou_rotated (and box_iou(fmt="cxcywhr")) against exact polygon
intersection (shapely), torchvision 0.29's box_iou(fmt="cxcywhr"), OpenCV's
rotatedRectangleIntersection and a plain NumPy restatement of
../shared/SPEC-NEXT.md 1.3 (written from the spec, for the lanes without
shapely): random pairs, the spec's edge cases, mode="iof", aligned,
clockwise and radians, half types, batched box_iou, pyopencl arrays, bad
inputs."""
import math

import numpy as np
import pytest

import visionops

DEG = 0.01745329251  # torchvision's / detectron2's pi / 180, as the kernel uses it


# ------------------------------------------------ references


def corners(box):
    """The four corners of (cx, cy, w, h, a) in float64, torchvision's
    formula with the kernel's pi / 180."""
    cx, cy, w, h, a = (float(v) for v in box)
    c, s = math.cos(a * DEG), math.sin(a * DEG)
    p0 = (cx + (s * h + c * w) / 2, cy + (c * h - s * w) / 2)
    p1 = (cx + (-s * h + c * w) / 2, cy + (-c * h - s * w) / 2)
    return [p0, p1, (2 * cx - p0[0], 2 * cy - p0[1]), (2 * cx - p1[0], 2 * cy - p1[1])]


def shapely_iou(b1, b2, iof=False):
    """Exact (GEOS, float64) IoU of rotated boxes b1 [N, 5], b2 [M, 5]."""
    shapely = pytest.importorskip("shapely", reason="shapely is not installed")
    from shapely.geometry import Polygon

    polys1 = [Polygon(corners(b)) for b in b1]
    polys2 = [Polygon(corners(b)) for b in b2]
    out = np.zeros((len(b1), len(b2)))
    for i, p in enumerate(polys1):
        for j, q in enumerate(polys2):
            a1, a2 = float(b1[i][2]) * float(b1[i][3]), float(b2[j][2]) * float(b2[j][3])
            if a1 < 1e-14 or a2 < 1e-14:
                continue
            inter = p.intersection(q).area
            out[i, j] = inter / a1 if iof else inter / (a1 + a2 - inter)
    del shapely
    return out


def _cross(a, b):
    return a[0] * b[1] - b[0] * a[1]


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1]


def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1])


def spec_pair(b1, b2, iof, T, scale=DEG):
    """One pair by SPEC-NEXT 1.3, step by step, in compute type T
    (np.float32 or np.float64 scalars: every operation rounded to T;
    comparisons with the spec's constants in double, as C compares a float
    with a double literal)."""
    eps = 1e-5
    box = []
    for b in (b1, b2):
        cx, cy, w, h, a = (T(v) for v in b)
        theta = float(a) * scale
        box.append((cx, cy, w, h, T(math.cos(theta)), T(math.sin(theta))))
    (cx1, cy1, w1, h1, _, _), (cx2, cy2, w2, h2, _, _) = box
    # 1. re-centre: the sum in T, halved and subtracted in double
    sx, sy = float(cx1 + cx2) / 2, float(cy1 + cy2) / 2
    # 2. degenerate boxes
    area1, area2 = w1 * h1, w2 * h2
    if float(area1) < 1e-14 or float(area2) < 1e-14:
        return 0.0
    pts = []
    for cx, cy, w, h, c, s in box:
        x, y = T(float(cx) - sx), T(float(cy) - sy)
        c2, s2 = c * T(0.5), s * T(0.5)
        q0 = (x + s2 * h + c2 * w, y + c2 * h - s2 * w)
        q1 = (x - s2 * h + c2 * w, y - c2 * h - s2 * w)
        pts.append([q0, q1, (T(2) * x - q0[0], T(2) * y - q0[1]),
                    (T(2) * x - q1[0], T(2) * y - q1[1])])
    p1, p2 = pts
    e1 = [_sub(p1[(i + 1) % 4], p1[i]) for i in range(4)]
    e2 = [_sub(p2[(i + 1) % 4], p2[i]) for i in range(4)]
    # 3. candidates: edge-edge crossings, then corners of 1 in 2 and of 2 in 1
    cand = []
    for i in range(4):
        for j in range(4):
            det = _cross(e2[j], e1[i])
            if abs(float(det)) <= 1e-14:
                continue
            r = _sub(p2[j], p1[i])
            t1, t2 = _cross(e2[j], r) / det, _cross(e1[i], r) / det
            if -eps < float(t1) < 1 + eps and -eps < float(t2) < 1 + eps:
                cand.append((p1[i][0] + e1[i][0] * t1, p1[i][1] + e1[i][1] * t1))
    for pa, pb, eb in ((p1, p2, e2), (p2, p1, e1)):
        ab, da = eb[0], eb[3]
        ab2, ad2 = float(_dot(ab, ab)), float(_dot(da, da))
        for p in pa:
            ap = _sub(p, pb[0])
            u, v = float(_dot(ap, ab)), float(-_dot(ap, da))
            if u > -eps and v > -eps and u < ab2 + eps and v < ad2 + eps:
                cand.append(p)
    # 4.
    n = len(cand)
    if n < 3:
        return 0.0
    # 5. Graham scan: pivot lowest y then x, exchange sort, scan
    t = 0
    for i in range(1, n):
        if cand[i][1] < cand[t][1] or (cand[i][1] == cand[t][1] and cand[i][0] < cand[t][0]):
            t = i
    pivot = cand[t]
    q = [_sub(p, pivot) for p in cand]
    q[0], q[t] = q[t], q[0]
    dist = [_dot(p, p) for p in q]
    for i in range(1, n - 1):
        for j in range(i + 1, n):
            cr = _cross(q[i], q[j])
            if float(cr) < -1e-6 or (abs(float(cr)) < 1e-6 and dist[i] > dist[j]):
                q[i], q[j] = q[j], q[i]
                dist[i], dist[j] = dist[j], dist[i]
    k = 1
    while k < n and not float(dist[k]) > 1e-8:
        k += 1
    if k == n:
        return 0.0
    q[1] = q[k]
    m = 2
    for i in range(k + 1, n):
        while m > 1:
            a, b = _sub(q[i], q[m - 2]), _sub(q[m - 1], q[m - 2])
            if a[0] * b[1] >= b[0] * a[1]:
                m -= 1
            else:
                break
        q[m] = q[i]
        m += 1
    # 6. fan area about the pivot, (0, 0)
    inter = T(0)
    for i in range(1, m - 1):
        inter = inter + abs(_cross(q[i], q[i + 1]))
    inter = inter / T(2)
    # 7.
    denom = area1 if iof else area1 + area2 - inter
    if not float(denom) > 1e-14:
        return 0.0
    v = float(inter / denom)
    return min(max(v, 0.0), 1.0) if v == v else 0.0


def spec_iou(b1, b2, iof=False, dtype=np.float64):
    """spec_pair over every pair of b1 [N, 5] and b2 [M, 5], as float64."""
    T = np.float64 if dtype == np.float64 else np.float32
    out = np.zeros((len(b1), len(b2)))
    for i in range(len(b1)):
        for j in range(len(b2)):
            out[i, j] = spec_pair(b1[i], b2[j], iof, T)
    return out


def random_boxes(rng, n):
    """SPEC-NEXT 1.6's distribution: centres in [0, 100]^2, sizes in [1, 50],
    angles in [-180, 180] degrees."""
    return np.concatenate([rng.uniform(0, 100, (n, 2)), rng.uniform(1, 50, (n, 2)),
                           rng.uniform(-180, 180, (n, 1))], axis=1)


# Edge cases of SPEC-NEXT 1.3 as (box1, box2, expected IoU or None).
EDGE = [
    ((10, 10, 8, 4, 30), (10, 10, 8, 4, 30), 1.0),         # identical
    ((20, 20, 6, 6, 0), (20, 20, 6, 6, 90), 1.0),          # a square turned 90
    ((20, 20, 6, 6, 0), (20, 20, 6, 6, -90), 1.0),         # and -90
    ((20, 20, 6, 6, 25), (20, 20, 6, 6, 205), 1.0),        # and 180
    ((5, 3, 4, 2, -90), (5, 3, 4, 2, 90), 1.0),            # detectron2's docstring pair
    ((0, 0, 2, 2, 0), (2, 0, 2, 2, 0), 0.0),               # a shared edge
    ((0, 0, 2, 2, 0), (2, 2, 2, 2, 0), 0.0),               # a shared corner
    ((0, 0, 2, 2, 45), (2 * math.sqrt(2), 0, 2, 2, 45), None),  # touching rotated edges
    ((50, 50, 20, 10, 15), (50, 50, 4, 2, 15), 8 / 200),   # containment
    ((50, 50, 20, 20, 0), (52, 49, 4, 3, 37), 12 / 400),   # rotated containment
    ((0, 0, 4, 2, 0), (1, 0, 4, 2, 0), 6 / 10),            # collinear edges
    ((0, 0, 4, 2, 0), (1, 0.5, 4, 2, 0), 4.5 / 11.5),      # collinear, offset
    ((0, 0, 10, 5, 0), (0, 0, 10, 5, 1e-4), None),         # near-parallel
    ((0, 0, 0, 4, 0), (0, 0, 4, 4, 0), 0.0),               # zero width
    ((0, 0, 4, 0, 30), (0, 0, 4, 4, 30), 0.0),             # zero height
    ((0, 0, 0, 0, 0), (0, 0, 0, 0, 0), 0.0),               # two points
    ((0, 0, 10, 5, 20), (3, 1, 8, 6, -40), None),          # a generic overlap
    ((0, 0, 4, 4, 0), (100, 100, 4, 4, 45), 0.0),          # far apart
    ((0, 0, 2, 2, 0), (2.001, 0, 2, 2, 0), 0.0),           # a small gap
    ((10, 10, 6, 3, 400), (10, 10, 6, 3, 40), 1.0),        # angles 360 apart
    ((-7, 3, 5, 9, -135), (-6, 2, 9, 5, 44), None),        # negative coordinates
]


def edge_arrays(shift=0.0):
    b1 = np.array([e[0] for e in EDGE], dtype=np.float64)
    b2 = np.array([e[1] for e in EDGE], dtype=np.float64)
    b1[:, :2] += shift
    b2[:, :2] += shift
    return b1, b2


def diag(x):
    return np.diagonal(np.asarray(x))


# ------------------------------------------------ the NumPy restatement


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_edge_cases_match_the_spec_restatement_bit_for_bit(dtype):
    b1, b2 = edge_arrays()
    b1, b2 = b1.astype(dtype), b2.astype(dtype)
    got = visionops.box_iou_rotated(b1, b2)
    assert got.dtype == dtype and got.shape == (len(EDGE), len(EDGE))
    np.testing.assert_array_equal(got, spec_iou(b1, b2, dtype=dtype).astype(dtype))
    got_iof = visionops.box_iou_rotated(b1, b2, mode="iof")
    np.testing.assert_array_equal(got_iof, spec_iou(b1, b2, True, dtype).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_pairs_match_the_spec_restatement(dtype):
    rng = np.random.default_rng(15)
    b1, b2 = random_boxes(rng, 30).astype(dtype), random_boxes(rng, 20).astype(dtype)
    b1[5:10, :] = b2[:5, :]  # copies
    got = visionops.box_iou_rotated(b1, b2)
    np.testing.assert_array_equal(got, spec_iou(b1, b2, dtype=dtype).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_edge_case_values(dtype):
    """The expected values of the edge cases (exact ones within the EPS
    slack; zero exactly where the boxes only touch or are degenerate)."""
    b1, b2 = edge_arrays()
    got = diag(visionops.box_iou_rotated(b1.astype(dtype), b2.astype(dtype)))
    for k, (_, _, want) in enumerate(EDGE):
        if want is None:
            continue
        if want == 0.0:
            assert got[k] == 0.0, (EDGE[k], got[k])
        else:
            assert abs(got[k] - want) <= 1e-5, (EDGE[k], got[k], want)
    assert np.all((got >= 0) & (got <= 1)) and not np.isnan(got).any()


# ------------------------------------------------ exact geometry (shapely)


def test_random_pairs_against_shapely_float64():
    rng = np.random.default_rng(0)
    b1, b2 = random_boxes(rng, 50), random_boxes(rng, 45)  # 2,250 pairs
    want = shapely_iou(b1, b2)
    got = visionops.box_iou_rotated(b1, b2)
    assert got.dtype == np.float64
    assert (want > 0).sum() > 300  # many overlapping pairs, not just zeros
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    np.testing.assert_allclose(visionops.box_iou_rotated(b1, b2, mode="iof"),
                               shapely_iou(b1, b2, iof=True), rtol=0, atol=1e-9)


def test_random_pairs_against_shapely_float32():
    rng = np.random.default_rng(1)
    b1, b2 = random_boxes(rng, 50), random_boxes(rng, 45)
    b1, b2 = b1.astype(np.float32), b2.astype(np.float32)
    want = shapely_iou(b1.astype(np.float64), b2.astype(np.float64))
    got = visionops.box_iou_rotated(b1, b2)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)


@pytest.mark.parametrize("dtype,atol", [(np.float64, 1e-9), (np.float32, 2e-5)])
def test_edge_cases_against_shapely(dtype, atol):
    """Exact geometry, except by the EPS = 1e-5 slack of the candidate tests
    on nearly coincident boxes (SPEC-NEXT 1.6: torchvision gives 1 where
    shapely gives 0.9999978): 1e-5 there."""
    b1, b2 = edge_arrays()
    want = diag(shapely_iou(b1, b2))
    got = diag(visionops.box_iou_rotated(b1.astype(dtype), b2.astype(dtype)))
    slack = np.array([e[0][2:4] == e[1][2:4] and e[0][:2] == e[1][:2] for e in EDGE])
    np.testing.assert_allclose(got[~slack], want[~slack], rtol=0, atol=atol)
    np.testing.assert_allclose(got[slack], want[slack], rtol=0, atol=max(atol, 1e-5))


@pytest.mark.parametrize("dtype,atol", [(np.float64, 1e-9), (np.float32, 1e-4)])
def test_translation_by_1e5_is_invariant(dtype, atol):
    """Re-centring keeps float32 accurate far from the origin. Centres on a
    1/64 grid, so that float32 holds them exactly when shifted too: the same
    geometry."""
    rng = np.random.default_rng(2)
    b1, b2 = random_boxes(rng, 40), random_boxes(rng, 40)
    b1[:, 2:4] = rng.uniform(2, 10, (40, 2))
    b2[:, :2] = b1[:, :2] + rng.uniform(-6, 6, (40, 2))  # near neighbours
    b1[:, :2] = np.round(b1[:, :2] * 64) / 64
    b2[:, :2] = np.round(b2[:, :2] * 64) / 64
    near = visionops.box_iou_rotated(b1.astype(dtype), b2.astype(dtype), aligned=True)
    for shift in (1e4, 1e5):
        far1, far2 = b1.copy(), b2.copy()
        far1[:, :2] += shift
        far2[:, :2] += shift
        got = visionops.box_iou_rotated(far1.astype(dtype), far2.astype(dtype), aligned=True)
        np.testing.assert_allclose(got, near, rtol=0, atol=atol)
    e1, e2 = edge_arrays(1e5)
    np.testing.assert_allclose(diag(visionops.box_iou_rotated(e1.astype(dtype), e2.astype(dtype))),
                               diag(visionops.box_iou_rotated(*(a.astype(dtype)
                                                                for a in edge_arrays()))),
                               rtol=0, atol=atol)


# ------------------------------------------------ OpenCV, a second opinion


def test_against_opencv():
    """OpenCV's rotatedRectangleIntersection (its own float32 algorithm:
    angle -a in its clockwise convention) on overlapping random pairs."""
    cv2 = pytest.importorskip("cv2", reason="opencv-python is not installed")
    rng = np.random.default_rng(3)
    b1, b2 = random_boxes(rng, 30), random_boxes(rng, 30)
    got = visionops.box_iou_rotated(b1, b2)
    checked = 0
    for i in range(len(b1)):
        for j in range(len(b2)):
            r1 = ((b1[i, 0], b1[i, 1]), (b1[i, 2], b1[i, 3]), -b1[i, 4])
            r2 = ((b2[j, 0], b2[j, 1]), (b2[j, 2], b2[j, 3]), -b2[j, 4])
            kind, pts = cv2.rotatedRectangleIntersection(r1, r2)
            if kind == cv2.INTERSECT_NONE:
                assert got[i, j] == 0.0
                continue
            inter = cv2.contourArea(pts)
            a1, a2 = b1[i, 2] * b1[i, 3], b2[j, 2] * b2[j, 3]
            assert abs(got[i, j] - inter / (a1 + a2 - inter)) < 1e-4, (i, j)
            checked += 1
    assert checked > 50


# ------------------------------------------------ torchvision 0.29


def _torchvision_rotated():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    pytest.importorskip("torchvision", reason="torchvision is not installed")
    if not hasattr(torch.ops.torchvision, "box_iou_rotated"):
        pytest.skip("this torchvision has no box_iou_rotated (0.29 or newer has)")
    import torchvision.ops as tvops

    return torch, tvops


def test_against_torchvision_box_iou_cxcywhr():
    torch, tvops = _torchvision_rotated()
    rng = np.random.default_rng(4)
    b1, b2 = random_boxes(rng, 60), random_boxes(rng, 40)
    b1[:10] = b2[:10]
    b1[10:20, 3] = b1[10:20, 2]
    b2[10:20] = b1[10:20] + [0, 0, 0, 0, 90]  # squares turned by 90
    e1, e2 = edge_arrays()
    for x, y in ((b1, b2), (e1, e2)):
        t1, t2 = torch.from_numpy(x).float(), torch.from_numpy(y).float()
        want = tvops.box_iou(t1, t2, fmt="cxcywhr")
        got = visionops.box_iou(t1, t2, fmt="cxcywhr")
        assert got.dtype == torch.float32 and got.shape == want.shape
        # the same arithmetic in the same order: bit for bit
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        # float64: torchvision computes in double and returns float32
        got64 = visionops.box_iou(t1.double(), t2.double(), fmt="cxcywhr")
        assert got64.dtype == torch.float64
        want64 = tvops.box_iou(t1.double(), t2.double(), fmt="cxcywhr")
        torch.testing.assert_close(got64.float(), want64, rtol=0, atol=0)


# ------------------------------------------------ modes, flags, dtypes


def test_iof_aligned_clockwise_radians():
    rng = np.random.default_rng(5)
    b1, b2 = random_boxes(rng, 40), random_boxes(rng, 40)
    b2[:20, :2] = b1[:20, :2] + rng.uniform(-5, 5, (20, 2))
    iou = visionops.box_iou_rotated(b1, b2)
    iof = visionops.box_iou_rotated(b1, b2, mode="iof")
    a1, a2 = (b1[:, 2] * b1[:, 3])[:, None], (b2[:, 2] * b2[:, 3])[None, :]
    inter = iof * a1
    np.testing.assert_allclose(iou, inter / (a1 + a2 - inter), rtol=0, atol=1e-12)
    # aligned: the diagonal, bit for bit
    np.testing.assert_array_equal(visionops.box_iou_rotated(b1, b2, aligned=True), diag(iou))
    np.testing.assert_array_equal(visionops.box_iou_rotated(b1, b2, "iof", True), diag(iof))
    # clockwise: the angle negated, bit for bit
    f1, f2 = b1.copy(), b2.copy()
    f1[:, 4] *= -1
    f2[:, 4] *= -1
    np.testing.assert_array_equal(visionops.box_iou_rotated(f1, f2, clockwise=True), iou)
    # radians: the same theta, bit for bit
    r1, r2 = b1.copy(), b2.copy()
    r1[:, 4] *= DEG
    r2[:, 4] *= DEG
    np.testing.assert_array_equal(visionops.box_iou_rotated(r1, r2, radians=True), iou)
    # mmcv's convention (radians, clockwise) is detectron2's with a = -theta * 180 / pi
    m1, m2 = b1.copy(), b2.copy()
    m1[:, 4] = -b1[:, 4] * math.pi / 180
    m2[:, 4] = -b2[:, 4] * math.pi / 180
    np.testing.assert_allclose(visionops.box_iou_rotated(m1, m2, clockwise=True, radians=True),
                               iou, rtol=0, atol=1e-7)


def test_empty_and_mixed_dtypes():
    e = np.zeros((0, 5))
    b = random_boxes(np.random.default_rng(6), 3)
    assert visionops.box_iou_rotated(e, b).shape == (0, 3)
    assert visionops.box_iou_rotated(b, e).shape == (3, 0)
    assert visionops.box_iou_rotated(e, e, aligned=True).shape == (0,)
    got = visionops.box_iou_rotated(b.astype(np.float32), b)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, visionops.box_iou_rotated(b.astype(np.float32).astype(
        np.float64), b))


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_half_types_compute_in_float32(dtype_name):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    dtype = getattr(torch, dtype_name)
    rng = np.random.default_rng(7)
    b1, b2 = random_boxes(rng, 30), random_boxes(rng, 20)
    t1, t2 = torch.from_numpy(b1).to(dtype), torch.from_numpy(b2).to(dtype)
    got = visionops.box_iou_rotated(t1, t2)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, visionops.box_iou_rotated(t1.float(), t2.float()), rtol=0,
                               atol=0)
    got_iof = visionops.box_iou_rotated(t1, t2, mode="iof", aligned=False)
    torch.testing.assert_close(got_iof, visionops.box_iou_rotated(t1.float(), t2.float(), "iof"),
                               rtol=0, atol=0)
    if dtype == torch.float16:  # NumPy has float16 too
        np.testing.assert_array_equal(
            visionops.box_iou_rotated(b1.astype(np.float16), b2.astype(np.float16)),
            got.numpy())


def test_torch_tensors_scripting_and_strides():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    rng = np.random.default_rng(8)
    b1, b2 = random_boxes(rng, 20), random_boxes(rng, 15)
    want = visionops.box_iou_rotated(b1, b2)
    t1, t2 = torch.from_numpy(b1), torch.from_numpy(b2)
    np.testing.assert_array_equal(visionops.box_iou_rotated(t1, t2).numpy(), want)
    wide = torch.zeros(20, 10, dtype=torch.float64)
    wide[:, ::2] = t1
    np.testing.assert_array_equal(visionops.box_iou_rotated(wide[:, ::2], t2).numpy(), want)

    @torch.jit.script
    def scripted(a, b):
        return visionops.box_iou_rotated(a, b, "iof", False, True, False), \
            visionops.box_iou(a, b, "cxcywhr")

    f1, f2 = t1.clone(), t2.clone()
    f1[:, 4] *= -1
    f2[:, 4] *= -1
    iof, iou = scripted(f1, f2)
    np.testing.assert_array_equal(iof.numpy(), visionops.box_iou_rotated(b1, b2, mode="iof"))
    np.testing.assert_array_equal(iou.numpy(), visionops.box_iou_rotated(f1.numpy(), f2.numpy()))


def test_box_iou_rotated_formats_batched():
    """box_iou(fmt="cxcywhr") with leading dimensions (broadcast), NumPy and
    torch."""
    rng = np.random.default_rng(9)
    b1 = random_boxes(rng, 2 * 7).reshape(2, 7, 5)
    b2 = random_boxes(rng, 5)
    got = visionops.box_iou(b1, b2[None], fmt="CXCYWHR")
    assert got.shape == (2, 7, 5)
    for k in range(2):
        np.testing.assert_array_equal(got[k], visionops.box_iou_rotated(b1[k], b2))
    assert visionops.box_iou(b1[:0], b2, fmt="cxcywhr").shape == (0, 7, 5)
    torch = pytest.importorskip("torch", reason="torch is not installed")
    tgot = visionops.box_iou(torch.from_numpy(b1), torch.from_numpy(b2), fmt="cxcywhr")
    np.testing.assert_array_equal(tgot.numpy(), got)


@pytest.mark.parametrize("fmt", ["xywhr", "xyxyxyxy"])
def test_box_iou_other_rotated_formats(fmt):
    """xywhr and xyxyxyxy boxes go through box_convert to cxcywhr: the same
    IoU as the cxcywhr boxes (to box_convert's rounding), NumPy and torch,
    and torchvision 0.29's box_iou on them."""
    rng = np.random.default_rng(11)
    b1, b2 = random_boxes(rng, 12), random_boxes(rng, 9)
    c1, c2 = visionops.box_convert(b1, "cxcywhr", fmt), visionops.box_convert(b2, "cxcywhr", fmt)
    got = visionops.box_iou(c1, c2, fmt=fmt)
    np.testing.assert_allclose(got, visionops.box_iou_rotated(b1, b2), rtol=0, atol=1e-9)
    batched = visionops.box_iou(c1[None], c2[None], fmt=fmt)
    np.testing.assert_array_equal(batched[0], got)
    torch = pytest.importorskip("torch", reason="torch is not installed")
    t1, t2 = torch.from_numpy(c1), torch.from_numpy(c2)
    np.testing.assert_array_equal(visionops.box_iou(t1, t2, fmt=fmt).numpy(), got)
    with pytest.raises(visionops.VisionOpsValueError, match=r"must have shape \[\.\.\., N, %d\]"
                       % (5 if fmt == "xywhr" else 8)):
        visionops.box_iou(c1[:, :4], c2, fmt=fmt)
    torch, tvops = _torchvision_rotated()
    want = tvops.box_iou(t1.float(), t2.float(), fmt=fmt)
    # box_convert's cos / sin / atan2 are libm's, torch's its own: ulps apart
    torch.testing.assert_close(visionops.box_iou(t1.float(), t2.float(), fmt=fmt), want,
                               rtol=0, atol=2e-5)


def test_pyopencl_arrays():
    test_opencl = pytest.importorskip("test_opencl")
    if test_opencl.QUEUE is None:
        pytest.skip(str(test_opencl.WHY_NOT))
    rng = np.random.default_rng(10)
    b1, b2 = random_boxes(rng, 25), random_boxes(rng, 20)
    for dtype in (np.float32, np.float64):
        x, y = b1.astype(dtype), b2.astype(dtype)
        got = visionops.box_iou_rotated(test_opencl.dev(x), test_opencl.dev(y), mode="iof")
        assert test_opencl.is_cl(got) and got.dtype == dtype
        np.testing.assert_allclose(got.get(), visionops.box_iou_rotated(x, y, mode="iof"),
                                   rtol=0, atol=1e-6 if dtype == np.float32 else 1e-12)
        batched = visionops.box_iou(test_opencl.dev(x[None]), test_opencl.dev(y), fmt="cxcywhr")
        np.testing.assert_allclose(batched.get()[0], visionops.box_iou_rotated(x, y), rtol=0,
                                   atol=1e-6 if dtype == np.float32 else 1e-12)


# ------------------------------------------------ bad inputs


BAD_VALUES = [
    ((0, float("nan"), 2, 2, 0), r"boxes1\[1, 1\] = nan is not finite"),
    ((0, 0, float("inf"), 2, 0), r"boxes1\[1, 2\] = inf is not finite"),
    ((0, 0, 2, 2, float("-inf")), r"boxes1\[1, 4\] = -inf is not finite"),
    ((0, 0, -2, 2, 0), r"boxes1\[1, 2\] = -2 is negative: a box's width must be >= 0"),
    ((0, 0, 2, -1, 0), r"boxes1\[1, 3\] = -1 is negative: a box's height must be >= 0"),
]


@pytest.mark.parametrize("row,message", BAD_VALUES)
def test_bad_values_are_refused(row, message):
    b = np.array([(1, 1, 2, 2, 0), row], dtype=np.float32)
    good = np.array([(1, 1, 2, 2, 0)] * 2, dtype=np.float32)
    with pytest.raises(visionops.VisionOpsValueError, match="box_iou_rotated: " + message):
        visionops.box_iou_rotated(b, good)
    with pytest.raises(visionops.VisionOpsValueError,
                       match="box_iou_rotated_aligned: " + message.replace("boxes1", "boxes2")):
        visionops.box_iou_rotated(good, b, aligned=True)
    torch = pytest.importorskip("torch", reason="torch is not installed")
    with pytest.raises(Exception, match=message):
        visionops.box_iou_rotated(torch.from_numpy(b), torch.from_numpy(good))


def test_bad_arguments_are_refused():
    b = np.ones((3, 5), dtype=np.float32)
    with pytest.raises(visionops.VisionOpsValueError,
                       match=r"box_iou_rotated: boxes1 must have shape \[N, 5\], got \[3, 4\]"):
        visionops.box_iou_rotated(b[:, :4], b)
    with pytest.raises(visionops.VisionOpsValueError, match=r"boxes2 must have shape \[M, 5\]"):
        visionops.box_iou_rotated(b, b[None])
    with pytest.raises(visionops.VisionOpsValueError,
                       match="the same number of boxes .* got 3 and 2"):
        visionops.box_iou_rotated(b, b[:2], aligned=True)
    with pytest.raises(visionops.VisionOpsTypeError, match="boxes1 must be float32, float64"):
        visionops.box_iou_rotated(b.astype(np.int32), b)
    with pytest.raises(visionops.VisionOpsValueError, match="mode must be 'iou' or 'iof'"):
        visionops.box_iou_rotated(b, b, mode="giou")
    with pytest.raises(visionops.VisionOpsTypeError, match="boxes2 must be a tensor"):
        visionops.box_iou_rotated(b, [1, 2, 3, 4, 5])
    with pytest.raises(visionops.VisionOpsValueError,
                       match=r"box_iou: boxes1 must have shape \[\.\.\., N, 5\], got \[3, 4\]"):
        visionops.box_iou(b[:, :4], b, fmt="cxcywhr")
    with pytest.raises(visionops.VisionOpsValueError, match="fmt must be one of"):
        visionops.box_iou(b, b, fmt="cxcywha")
