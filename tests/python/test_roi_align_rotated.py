"""roi_align_rotated and RoIAlignRotated: against a plain NumPy restatement
of the formula (detectron2's ROIAlignRotated with mmcv's aligned=False and
clockwise/radians pre-transforms), against visionops' roi_align at angle 0
(aligned both ways), against roi_align on a rotated feature map at 90 and 180
degrees, gradcheck (first and second order), the deterministic backward,
the list-of-boxes form, NumPy inputs and bad inputs. OpenVINO's
ROIAlignRotated-15 is not installed here: no comparison with it."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import visionops  # noqa: E402
from conftest import assert_close  # noqa: E402

DEG = 0.01745329251  # the truncated pi/180 of torchvision / detectron2 (INTERFACE.md)
N, C, H, W = 2, 3, 11, 14


def bilinear(f, y, x):
    """f [C, H, W] at (y, x): roi_align's rule (SPEC section 2)."""
    h, w = f.shape[1:]
    if y < -1 or y > h or x < -1 or x > w:
        return np.zeros(f.shape[0])
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    return hy * hx * f[:, y0, x0] + hy * lx * f[:, y0, x1] + ly * hx * f[:, y1, x0] + \
        ly * lx * f[:, y1, x1]


def reference(x, rois, ph, pw, scale=1.0, sr=-1, aligned=True, clockwise=False, radians=False):
    """The formula, in float64: each bin's grid on the un-rotated box
    centred at 0, each sample turned by theta about the centre."""
    x = np.asarray(x, np.float64)
    rois = np.asarray(rois, np.float64)
    out = np.zeros((rois.shape[0], x.shape[1], ph, pw))
    for k, r in enumerate(rois):
        off = 0.5 if aligned else 0.0
        cx, cy = r[1] * scale - off, r[2] * scale - off
        w, h = r[3] * scale, r[4] * scale
        if not aligned:
            w, h = max(w, 1.0), max(h, 1.0)
        theta = r[5] * (1.0 if radians else DEG) * (-1.0 if clockwise else 1.0)
        c, s = math.cos(theta), math.sin(theta)
        bh, bw = h / ph, w / pw
        gh = sr if sr > 0 else math.ceil(h / ph)
        gw = sr if sr > 0 else math.ceil(w / pw)
        count = max(gh * gw, 1)
        f = x[int(r[0])]
        for i in range(ph):
            for j in range(pw):
                acc = np.zeros(x.shape[1])
                for iy in range(gh):
                    yy = -h / 2 + i * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = -w / 2 + j * bw + (ix + 0.5) * bw / gw
                        acc += bilinear(f, yy * c - xx * s + cy, yy * s + xx * c + cx)
                out[k, :, i, j] = acc / count
    return out


def random_rois(rng, k, extent=(H, W), angles=True, max_wh=8.0, batch=N):
    """[k, 6] rois (batch, cx, cy, w, h, angle in degrees), sorted by batch
    index, some partly off the map."""
    cy = rng.uniform(-0.1 * extent[0], 1.1 * extent[0], k)
    cx = rng.uniform(-0.1 * extent[1], 1.1 * extent[1], k)
    wh = rng.uniform(0.3, max_wh, (k, 2))
    a = rng.uniform(-180, 180, k) if angles else np.zeros(k)
    b = np.sort(rng.integers(0, batch, k))
    return np.stack([b, cx, cy, wh[:, 0], wh[:, 1], a], 1)


def run(x, rois, *args, dtype=torch.float64, **kwargs):
    return visionops.roi_align_rotated(torch.tensor(x, dtype=dtype), torch.tensor(rois, dtype=dtype),
                                       *args, **kwargs)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("sr", [-1, 0, 2])
def test_reference(seed, aligned, sr):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N, C, H, W))
    rois = random_rois(rng, 9)
    rois[0, 5], rois[1, 5], rois[2, 5], rois[3, 5] = 0, 90, 180, -45
    rois[4, 3:5] = 0.05, 0.2  # tiny (clamped to 1x1 when not aligned)
    rois[5, 1:3] = -30, 40  # off the map
    scale = 0.5 if seed == 1 else 1.0
    want = reference(x, rois, 3, 2, scale, sr, aligned)
    got = run(x, rois, (3, 2), scale, sr, aligned)
    assert_close(got, want, rtol=1e-12, atol=1e-12, what="float64")
    got32 = run(x, rois, (3, 2), scale, sr, aligned, dtype=torch.float32)
    assert_close(got32, want, rtol=1e-4, atol=1e-5, what="float32")
    for half in (torch.float16, torch.bfloat16):
        xh = torch.tensor(x).to(half)
        got_h = visionops.roi_align_rotated(xh, torch.tensor(rois, dtype=torch.float32), (3, 2),
                                            scale, sr, aligned)
        assert got_h.dtype == half
        want_h = reference(xh.double().numpy(), rois.astype(np.float32), 3, 2, scale, sr, aligned)
        assert_close(got_h.float(), want_h, rtol=1e-2, atol=1e-2, what=str(half))


def test_huge_box_and_empty():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(N, C, H, W))
    rois = np.array([[1, 7, 5, 60, 45, 30], [0, 3, 4, 1e-3, 2, -45]])
    assert_close(run(x, rois, 2, 1.0, 0), reference(x, rois, 2, 2, 1.0, 0), rtol=1e-12, atol=1e-12)
    empty = run(x, np.zeros((0, 6)), (4, 3))
    assert empty.shape == (0, C, 4, 3)


def test_list_of_boxes_and_module():
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.normal(size=(N, C, H, W)))
    rois = torch.tensor(random_rois(rng, 7))
    boxes = [rois[rois[:, 0] == i, 1:] for i in range(N)]
    want = visionops.roi_align_rotated(x, rois, 3, 0.5, 2)
    assert torch.equal(visionops.roi_align_rotated(x, boxes, 3, 0.5, 2), want)
    m = visionops.RoIAlignRotated((3, 3), 0.5, 2)
    assert torch.equal(m(x, rois), want)
    assert "RoIAlignRotated(output_size=(3, 3)" in repr(m)
    scripted = torch.jit.script(m)
    assert torch.equal(scripted(x, boxes), want)


def test_numpy():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(N, C, H, W)).astype(np.float32)
    rois = random_rois(rng, 6).astype(np.float32)
    got = visionops.roi_align_rotated(x, rois, (2, 3), 1.0, 2, False)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    want = run(x, rois, (2, 3), 1.0, 2, False, dtype=torch.float32).numpy()
    assert np.array_equal(got, want)
    boxes = [rois[rois[:, 0] == i, 1:] for i in range(N)]
    assert np.array_equal(visionops.roi_align_rotated(x, boxes, (2, 3), 1.0, 2, False), want)


@pytest.mark.parametrize("sr", [-1, 2])
def test_angle_zero_is_roi_align_aligned(sr):
    """aligned: (cx, cy, w, h, 0) samples where roi_align does on the xyxy
    box (centre - w/2 = x1 up to rounding)."""
    rng = np.random.default_rng(6)
    x = torch.tensor(rng.normal(size=(N, C, H, W)))
    rot = random_rois(rng, 11, angles=False)
    xyxy = np.stack([rot[:, 0], rot[:, 1] - rot[:, 3] / 2, rot[:, 2] - rot[:, 4] / 2,
                     rot[:, 1] + rot[:, 3] / 2, rot[:, 2] + rot[:, 4] / 2], 1)
    for scale in (1.0, 0.5):
        got = visionops.roi_align_rotated(x, torch.tensor(rot), (3, 4), scale, sr, True)
        want = visionops.roi_align(x, torch.tensor(xyxy), (3, 4), scale, sr, True)
        assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_angle_zero_unaligned():
    """Not aligned: the same as roi_align's legacy mode for RoIs of at
    least 1x1 map pixels; smaller ones are 1x1 about their centre in
    roi_align_rotated (mmcv's rule) but start at x1 in roi_align."""
    rng = np.random.default_rng(7)
    x = torch.tensor(rng.normal(size=(N, C, H, W)))
    rot = random_rois(rng, 11, angles=False)
    rot[:, 3:5] = np.maximum(rot[:, 3:5], 1.0)
    rot[:4, 3:5] = [[0.3, 0.6], [0.2, 3.0], [4.0, 0.1], [0.5, 0.5]]  # below 1x1
    def xyxy(r):
        return np.stack([r[:, 0], r[:, 1] - r[:, 3] / 2, r[:, 2] - r[:, 4] / 2,
                         r[:, 1] + r[:, 3] / 2, r[:, 2] + r[:, 4] / 2], 1)
    got = visionops.roi_align_rotated(x, torch.tensor(rot), (2, 3), 1.0, 2, False)
    want = visionops.roi_align(x, torch.tensor(xyxy(rot)), (2, 3), 1.0, 2, False)
    assert_close(got[4:], want[4:], rtol=1e-12, atol=1e-12)
    assert not torch.allclose(got[:4], want[:4])
    grown = rot.copy()
    grown[:, 3:5] = np.maximum(grown[:, 3:5], 1.0)  # what the clamp does, centred
    want_small = visionops.roi_align(x, torch.tensor(xyxy(grown)), (2, 3), 1.0, 2, False)
    assert_close(got, want_small, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("angle,k", [(90, -1), (180, 2), (-90, 1)])
def test_right_angles_rotate_the_map(angle, k):
    """At a right angle the samples of an axis-aligned box on the map
    rotated by np.rot90(F, k) (away from clamping at the map's border).
    Inexact only by cos(90 * 0.01745329251) ~ 1e-9."""
    rng = np.random.default_rng(8)
    f = rng.normal(size=(1, C, H, W))
    g = np.ascontiguousarray(np.rot90(f, k, axes=(2, 3)))
    k_rois = 6
    cx = rng.uniform(4, W - 4, k_rois)
    cy = rng.uniform(4, H - 4, k_rois)
    w = rng.uniform(1, 5, k_rois)
    h = rng.uniform(1, 5, k_rois)
    rot = np.stack([np.zeros(k_rois), cx, cy, w, h, np.full(k_rois, float(angle))], 1)
    got = visionops.roi_align_rotated(torch.tensor(f), torch.tensor(rot), (3, 4), 1.0, 2, True)
    # (y, x) = (cy - xx, cx + yy) at +90: g(Y, X) = f(H-1-X, Y), so the box on g is
    # centred at (Y, X) = (cx, H - cy) with h along Y and w along X; likewise at
    # 180 (g = f flipped both ways) and -90.
    if angle == 90:
        gc = np.stack([cx, H - cy], 1)
    elif angle == 180:
        gc = np.stack([H - cy, W - cx], 1)
    else:
        gc = np.stack([W - cx, cy], 1)
    boxes = np.stack([np.zeros(k_rois), gc[:, 1] - w / 2, gc[:, 0] - h / 2, gc[:, 1] + w / 2,
                      gc[:, 0] + h / 2], 1)
    want = visionops.roi_align(torch.tensor(g), torch.tensor(boxes), (3, 4), 1.0, 2, True)
    assert_close(got, want, rtol=1e-7, atol=1e-7)


def test_clockwise_and_radians():
    rng = np.random.default_rng(9)
    x = torch.tensor(rng.normal(size=(N, C, H, W)))
    rot = torch.tensor(random_rois(rng, 8))
    want = visionops.roi_align_rotated(x, rot, 3, 1.0, 2)
    neg = rot.clone()
    neg[:, 5] = -neg[:, 5]
    assert torch.equal(visionops.roi_align_rotated(x, neg, 3, 1.0, 2, clockwise=True), want)
    rad = rot.clone()
    rad[:, 5] = rad[:, 5] * DEG  # the same double product the op forms
    assert torch.equal(visionops.roi_align_rotated(x, rad, 3, 1.0, 2, radians=True), want)
    rad[:, 5] = -rad[:, 5]
    assert torch.equal(
        visionops.roi_align_rotated(x, rad, 3, 1.0, 2, clockwise=True, radians=True), want)


@pytest.mark.parametrize("aligned", [True, False])
def test_gradcheck(aligned):
    rng = np.random.default_rng(10)
    x = torch.tensor(rng.normal(size=(N, 2, 7, 8)), requires_grad=True)
    rois = torch.tensor(random_rois(rng, 4, extent=(7, 8), max_wh=5.0))

    def f(inp):
        return visionops.roi_align_rotated(inp, rois, (2, 3), 1.0, 2, aligned)

    assert torch.autograd.gradcheck(f, (x,))
    assert torch.autograd.gradgradcheck(f, (x,))


def test_backward_against_reference_and_deterministic():
    """The gradient equals the adjoint of the reference (as the forward is
    linear in input); deterministic mode repeats bit for bit."""
    rng = np.random.default_rng(11)
    x = torch.tensor(rng.normal(size=(N, C, H, W)), requires_grad=True)
    rois = torch.tensor(random_rois(rng, 12))
    g = torch.tensor(rng.normal(size=(12, C, 2, 3)))
    out = visionops.roi_align_rotated(x, rois, (2, 3), 1.0, -1)
    (grad,) = torch.autograd.grad(out, x, g)
    # adjoint check: <grad, e_i> = <g, forward(e_i)> through the reference
    basis = np.zeros((N, C, H, W))
    for idx in [(0, 0, 3, 4), (1, 2, 5, 9), (0, 1, 0, 0), (1, 0, 10, 13)]:
        basis[...] = 0
        basis[idx] = 1
        want = float((reference(basis, rois.numpy(), 2, 3, 1.0, -1) * g.numpy()).sum())
        assert abs(float(grad[idx]) - want) <= 1e-12
    prev = visionops.is_deterministic()
    visionops.set_deterministic(True)
    try:
        xs = x.detach().float().requires_grad_()
        rs, gs = rois.float(), g.float()
        first = torch.autograd.grad(visionops.roi_align_rotated(xs, rs, (2, 3)), xs, gs)[0]
        for _ in range(3):
            again = torch.autograd.grad(visionops.roi_align_rotated(xs, rs, (2, 3)), xs, gs)[0]
            assert torch.equal(first, again)
        visionops.set_num_threads(1)
        one = torch.autograd.grad(visionops.roi_align_rotated(xs, rs, (2, 3)), xs, gs)[0]
        assert torch.equal(first, one)
    finally:
        visionops.set_deterministic(prev)
        visionops.set_num_threads(0)


def test_backward_op_is_linear_and_its_gradient_is_the_forward():
    """roi_align_rotated_backward's own gradient (double backward) is the
    forward: <backward(g), v> = <g, forward(v)>."""
    rng = np.random.default_rng(12)
    rois = torch.tensor(random_rois(rng, 5))
    g = torch.tensor(rng.normal(size=(5, C, 2, 2)))
    v = torch.tensor(rng.normal(size=(N, C, H, W)))
    gi = torch.ops.visionops.roi_align_rotated_backward(g, rois, 1.0, 2, 2, N, C, H, W, 2, True)
    fv = visionops.roi_align_rotated(v, rois, 2, 1.0, 2, True)
    assert abs(float((gi * v).sum()) - float((g * fv).sum())) < 1e-10


@pytest.mark.parametrize("bad,match", [
    (lambda r: r.__setitem__((1, 3), -1.0), r"rois\[1, 3\] = -1 is a negative box width"),
    (lambda r: r.__setitem__((2, 4), -0.5), r"rois\[2, 4\] = -0.5 is a negative box height"),
    (lambda r: r.__setitem__((0, 5), float("nan")), r"rois\[0, 5\] = nan is not finite"),
    (lambda r: r.__setitem__((3, 1), float("inf")), r"rois\[3, 1\] = inf is not finite"),
    (lambda r: r.__setitem__((1, 0), 2.0), r"rois\[1, 0\] = 2 is not a batch index"),
])
def test_bad_rois(bad, match):
    rng = np.random.default_rng(13)
    x = torch.tensor(rng.normal(size=(N, C, H, W)))
    rois = torch.tensor(random_rois(rng, 4))
    bad(rois)
    with pytest.raises(visionops.VisionOpsValueError, match="roi_align_rotated: " + match):
        visionops.roi_align_rotated(x, rois, 2)


def test_bad_shapes_and_types():
    x = torch.zeros(N, C, H, W)
    with pytest.raises(visionops.VisionOpsValueError, match=r"expected a \[K, 6\] tensor"):
        visionops.roi_align_rotated(x, torch.zeros(3, 5), 2)
    with pytest.raises(visionops.VisionOpsValueError, match=r"shape \[L, 5\]"):
        visionops.roi_align_rotated(x, [torch.zeros(3, 4)], 2)
    with pytest.raises(visionops.VisionOpsTypeError, match="roi_align_rotated: boxes must be"):
        visionops.roi_align_rotated(x, "rois", 2)
    with pytest.raises(visionops.VisionOpsValueError, match="pooled_height must be >= 1"):
        visionops.roi_align_rotated(x, torch.zeros(1, 6), (0, 2))
    with pytest.raises(visionops.VisionOpsValueError, match="spatial_scale must be finite"):
        visionops.roi_align_rotated(x, torch.zeros(1, 6), 2, float("nan"))
    with pytest.raises(visionops.VisionOpsTypeError, match="input must be float32"):
        visionops.roi_align_rotated(torch.zeros(N, C, H, W, dtype=torch.int32),
                                    torch.zeros(1, 6), 2)
    big = torch.tensor([[0.0, 5, 5, 1e6, 3, 0]])
    with pytest.raises(visionops.VisionOpsValueError, match="adaptive sampling"):
        visionops.roi_align_rotated(x, big, 2, 1.0, 0)


def test_pyopencl_arrays():
    """pyopencl arrays as roi_align takes them: [K, 6] rois, and a list of
    [L, 5] boxes packed into rois on the device."""
    from test_opencl import QUEUE, WHY_NOT, dev

    if QUEUE is None:
        pytest.skip(str(WHY_NOT))
    rng = np.random.default_rng(14)
    x = rng.normal(size=(N, C, H, W)).astype(np.float32)
    rois = random_rois(rng, 9).astype(np.float32)
    want = visionops.roi_align_rotated(x, rois, (2, 3), 0.5, 2)
    got = visionops.roi_align_rotated(dev(x), dev(rois), (2, 3), 0.5, 2)
    assert_close(got.get(), want, rtol=1e-6, atol=1e-6)
    boxes = [dev(rois[rois[:, 0] == i, 1:]) for i in range(N)]
    got = visionops.roi_align_rotated(dev(x), boxes, (2, 3), 0.5, 2)
    assert_close(got.get(), want, rtol=1e-6, atol=1e-6)


def test_forward_mode_ad():
    """Linear in input: the jvp is the op on the tangent (as roi_align's)."""
    import torch.autograd.forward_ad as fwad

    rng = np.random.default_rng(15)
    x = torch.tensor(rng.normal(size=(N, C, H, W)))
    t = torch.tensor(rng.normal(size=(N, C, H, W)))
    rois = torch.tensor(random_rois(rng, 5))
    with fwad.dual_level():
        out = visionops.roi_align_rotated(fwad.make_dual(x, t), rois, 2, 1.0, 2)
        tangent = fwad.unpack_dual(out).tangent
    assert torch.equal(tangent, visionops.roi_align_rotated(t, rois, 2, 1.0, 2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_channel_blocks(dtype):
    """Enough channels for the CPU's channels-last path (blocks of 16 and a
    partial one): the reference's values, and the same bits at one and two
    threads, forward and backward."""
    rng = np.random.default_rng(16)
    x = torch.tensor(rng.normal(size=(N, 20, H, W))).to(dtype)
    rois = torch.tensor(random_rois(rng, 12), dtype=torch.float32)
    g = torch.tensor(rng.normal(size=(12, 20, 3, 2))).to(dtype)
    want = reference(x.double().numpy(), rois.numpy(), 3, 2, 0.5, 2)
    tol = 1e-5 if dtype == torch.float32 else 1e-2

    def run_both():
        xs = x.clone().requires_grad_()
        out = visionops.roi_align_rotated(xs, rois, (3, 2), 0.5, 2)
        return out, torch.autograd.grad(out, xs, g)[0]

    out2, grad2 = run_both()
    assert_close(out2.float(), want, rtol=tol, atol=tol)
    visionops.set_num_threads(1)
    try:
        out1, grad1 = run_both()
    finally:
        visionops.set_num_threads(0)
    assert torch.equal(out1, out2) and torch.equal(grad1, grad2)
