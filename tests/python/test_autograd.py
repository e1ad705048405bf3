"""torch.autograd.gradcheck (float64, tiny sizes) on every differentiable op
through the registered torch.ops.visionops.* operators, gradgradcheck where
a double backward is registered, and the torchvision-compatible functions'
gradients."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import visionops  # noqa: E402
from conftest import make_rois  # noqa: E402

V = None


@pytest.fixture(autouse=True)
def _ops():
    global V
    V = torch.ops.visionops


def f64(a, grad=False):
    return torch.tensor(a, dtype=torch.float64, requires_grad=grad)


def small_inputs(seed=0, channels=2, n=2, h=5, w=6, k=4):
    rng = np.random.default_rng(seed)
    x = f64(rng.normal(size=(n, channels, h, w)), True)
    rois = f64(make_rois(rng, k, n, extent=w * 2, max_wh=w * 1.5, dtype=np.float64))
    return x, rois


def gradcheck(fn, inputs, **kw):
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4, **kw)


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling", [-1, 2])
def test_roi_align_gradcheck(aligned, sampling):
    x, rois = small_inputs(1)
    fn = lambda x: V.roi_align(x, rois, 0.5, 2, 3, sampling, aligned)  # noqa: E731
    gradcheck(fn, (x,))
    assert torch.autograd.gradgradcheck(fn, (x,))


def test_roi_pool_gradcheck():
    x, rois = small_inputs(2)
    gradcheck(lambda x: V.roi_pool(x, rois, 0.5, 2, 2)[0], (x,))


@pytest.mark.parametrize("sampling", [-1, 2])
def test_ps_roi_align_gradcheck(sampling):
    x, rois = small_inputs(3, channels=8)
    fn = lambda x: V.ps_roi_align(x, rois, 0.5, 2, 2, sampling)[0]  # noqa: E731
    gradcheck(fn, (x,))
    assert torch.autograd.gradgradcheck(fn, (x,))


def test_ps_roi_pool_gradcheck():
    """Includes RoIs reaching the last row and column: visionops' backward
    is the gradient of its forward there (torchvision's is not)."""
    x, rois = small_inputs(4, channels=8)
    rois = torch.cat([rois, f64([[0, 0, 0, 11.9, 9.9], [1, 4, 2, 12, 10]])])
    fn = lambda x: V.ps_roi_pool(x, rois, 0.5, 2, 2)[0]  # noqa: E731
    gradcheck(fn, (x,))
    assert torch.autograd.gradgradcheck(fn, (x,))


def test_backward_ops_double_backward():
    """The registered backward ops' own gradients (linear in grad: the
    forward applied to the incoming gradient)."""
    x, rois = small_inputs(5, channels=4)
    g = f64(np.random.default_rng(0).normal(size=(4, 4, 2, 2)), True)
    gradcheck(lambda g: V.roi_align_backward(g, rois, 0.5, 2, 2, 2, 4, 5, 6, 2, True), (g,))
    _, cm = V.ps_roi_align(x.detach(), rois, 0.5, 2, 2, 2)
    g1 = f64(np.random.default_rng(1).normal(size=(4, 1, 2, 2)), True)
    gradcheck(lambda g: V.ps_roi_align_backward(g, rois, cm, 0.5, 2, 2, 2, 2, 4, 5, 6), (g1,))
    _, cm = V.ps_roi_pool(x.detach(), rois, 0.5, 2, 2)
    gradcheck(lambda g: V.ps_roi_pool_backward(g, rois, cm, 0.5, 2, 2, 2, 4, 5, 6), (g1,))


@pytest.mark.parametrize("use_mask", [False, True])
@pytest.mark.parametrize("use_bias", [False, True])
def test_deform_conv2d_gradcheck(use_mask, use_bias):
    rng = np.random.default_rng(6)
    n, cin, h, w, cout, kh, kw, groups, og = 1, 4, 4, 5, 2, 2, 2, 2, 2
    ho, wo = h - 1, (w + 2 - 3) // 2 + 1  # pad (0, 1), dilation (1, 2), stride (1, 2)
    x = f64(rng.normal(size=(n, cin, h, w)), True)
    weight = f64(rng.normal(size=(cout, cin // groups, kh, kw)), True)
    offset = f64(rng.uniform(-1.5, 1.5, size=(n, 2 * og * kh * kw, ho, wo)), True)
    mask = f64(rng.uniform(size=(n, og * kh * kw, ho, wo)), True) if use_mask else None
    bias = f64(rng.normal(size=(cout,)), True) if use_bias else None
    inputs = [t for t in (x, weight, offset, mask, bias) if t is not None]

    def fn(*ts):
        it = iter(ts)
        a, b, c = next(it), next(it), next(it)
        m = next(it) if use_mask else None
        bb = next(it) if use_bias else None
        return V.deform_conv2d(a, b, c, m, bb, 1, 2, 0, 1, 1, 2, groups, og, use_mask)

    gradcheck(fn, tuple(inputs))
    # the torchvision-compatible function gives gradients for each input too
    out = visionops.deform_conv2d(x, offset, weight, bias, stride=(1, 2), padding=(0, 1),
                                  dilation=(1, 2), mask=mask)
    out.sum().backward()
    for t in inputs:
        assert t.grad is not None and torch.isfinite(t.grad).all()


def test_multi_scale_roi_align_gradcheck():
    rng = np.random.default_rng(7)
    f0 = f64(rng.normal(size=(2, 2, 8, 8)), True)
    f1 = f64(rng.normal(size=(2, 2, 4, 4)), True)
    boxes = [f64([[1, 1, 9, 9], [0, 2, 30, 31]]), f64([[3, 2, 25, 28], [2, 2, 5, 6]])]
    kw = dict(canonical_scale=16, canonical_level=3)
    # small boxes on level 0 (scale 1/4), large on level 1 (scale 1/8)

    def fn(a, b):
        return visionops.multi_scale_roi_align([a, b], boxes, [0.25, 0.125], (2, 2), 2, **kw)

    gradcheck(fn, (f0, f1))
    out = fn(f0, f1)
    out.sum().backward()
    assert f0.grad.abs().sum() > 0 and f1.grad.abs().sum() > 0  # both levels used

    def fn_registered(a, b):
        rois = torch.cat([torch.cat([torch.full((2, 1), float(i), dtype=torch.float64), bx], 1)
                          for i, bx in enumerate(boxes)])
        return V.multi_scale_roi_align([a, b], rois, [0.25, 0.125], 2, 2, 2, 16, 3, False)

    gradcheck(fn_registered, (f0, f1))

    pool = visionops.MultiScaleRoIAlign(["p0", "p1"], 2, 2, **kw)

    def fn_module(a, b):
        return pool({"p0": a, "p1": b}, boxes, [(32, 32), (30, 31)])

    gradcheck(fn_module, (f0, f1))


def test_rois_get_no_gradient():
    x, rois = small_inputs(8)
    rois.requires_grad_()
    out = visionops.roi_align(x, rois, 2, 0.5)
    out.sum().backward()
    assert x.grad is not None and rois.grad is None


def test_backward_thread_invariant():
    """The CPU backward is bit-identical for any thread count."""
    rng = np.random.default_rng(9)
    x = torch.tensor(rng.normal(size=(2, 3, 16, 16)), dtype=torch.float32)
    rois = torch.tensor(make_rois(rng, 60, 2, 32, 30, np.float32))
    results = []
    before = visionops.get_num_threads()
    try:
        for threads in (1, 2, 0):
            visionops.set_num_threads(threads)
            xg = x.clone().requires_grad_()
            visionops.roi_align(xg, rois, 3, 0.5, 2).sum().backward()
            results.append(xg.grad)
    finally:
        visionops.set_num_threads(before)
    for r in results[1:]:
        assert torch.equal(r, results[0])


# ------------------------------------------------------------------ box IoUs

IOU_OPS = ("box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou")


def iou_boxes(seed, n, m, special=True):
    """Random boxes; with `special`, boxes1's first rows are identical to,
    nested in, disjoint from and touching boxes2's (ties and kinks, where
    torch's rules decide: max/min split the gradient half and half, clamp
    passes it at 0)."""
    rng = np.random.default_rng(seed)

    def boxes(k):
        xy = rng.uniform(-5, 40, size=(k, 2))
        return np.concatenate([xy, xy + rng.uniform(0.5, 20, size=(k, 2))], 1)

    a, b = boxes(n), boxes(m)
    if special:
        a[0] = b[0]                                  # identical
        a[1] = b[1] + np.array([1, 1, -1, -1]) * 0.25 * np.tile(b[1, 2:] - b[1, :2], 2)  # nested
        a[2] = b[2] + 200                            # disjoint
        a[3] = [b[3, 2], b[3, 1], b[3, 2] + 3, b[3, 3]]  # touching: a.x1 == b.x2
        a[4, :2] = b[4, :2]                          # a shared corner
    return a, b


def _alpha_times(a, b, v0, eps=1e-7):
    """complete_box_iou's alpha (a constant for autograd) times v0."""
    import torchvision.ops
    iou = torchvision.ops.box_iou(a, b)
    wa, ha = (a[:, 2] - a[:, 0])[:, None], (a[:, 3] - a[:, 1])[:, None]
    wb, hb = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    v = (4 / (torch.pi ** 2)) * torch.pow(torch.atan(wa / ha) - torch.atan(wb / hb), 2)
    return v / (1 - iou + v + eps) * v0, v


@pytest.mark.parametrize("name", IOU_OPS)
def test_iou_gradcheck(name):
    """gradcheck (float64) of the registered op in both box sets, away from
    ties and kinks. complete_box_iou's alpha is a constant for autograd (as
    torchvision's, under torch.no_grad()), so its numerical gradient is made
    comparable by adding alpha * v0 outside autograd (v0 = v at the point)."""
    pytest.importorskip("torchvision")
    a_np, b_np = iou_boxes(11, 4, 3, special=False)
    a, b = f64(a_np, True), f64(b_np, True)
    op = getattr(V, name)
    if name == "complete_box_iou":
        _, v0 = _alpha_times(a.detach(), b.detach(), 1.0)

        def fn(x, y):
            with torch.no_grad():
                fix, _ = _alpha_times(x, y, v0)
            return op(x, y, 1e-7) + fix
    elif name == "distance_box_iou":
        fn = lambda x, y: op(x, y, 1e-7)  # noqa: E731
    else:
        fn = op
    gradcheck(fn, (a, b))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name", IOU_OPS)
def test_iou_gradients_match_torchvision(name, dtype):
    """Both box sets' gradients equal torchvision's autograd, on random boxes
    with identical, nested, disjoint and touching pairs, through the
    torchvision-compatible function and the registered op."""
    torchvision = pytest.importorskip("torchvision")
    # Touching boxes put clamp(min=0) exactly at 0, where torch changed its
    # rule: 1.13 passes the gradient (visionops follows it), torch 2.x gives
    # 0. The kink is compared only where torch still has the 1.13 rule.
    x0 = torch.zeros(1, dtype=dtype, requires_grad=True)
    (kink,) = torch.autograd.grad(x0.clamp(min=0).sum(), x0)
    a_np, b_np = iou_boxes(12, 9, 7)
    if float(kink) != 1.0:
        a_np[3] = a_np[5]
    g = torch.tensor(np.random.default_rng(13).normal(size=(9, 7)), dtype=dtype)
    rtol = 1e-6 if dtype == torch.float64 else 1e-5
    want_a, want_b = [torch.tensor(x, dtype=dtype, requires_grad=True) for x in (a_np, b_np)]
    want = torch.autograd.grad(getattr(torchvision.ops, name)(want_a, want_b), (want_a, want_b), g)
    for fn in (getattr(visionops, name), getattr(V, name)):
        got_a, got_b = [torch.tensor(x, dtype=dtype, requires_grad=True) for x in (a_np, b_np)]
        out = fn(got_a, got_b)
        got = torch.autograd.grad(out, (got_a, got_b), g)
        for x, w in zip(got, want):
            assert x.dtype == dtype and x.shape == w.shape
            # atol: the terms of a sum cancel; relative to the gradient's scale
            torch.testing.assert_close(x, w, rtol=rtol, atol=rtol * float(w.abs().max()))


def test_iou_backward_half_types_and_empty():
    """float16 / bfloat16 compute in float32 (close to torchvision's float32
    gradient), and an empty box set gives the other set a zero gradient."""
    torchvision = pytest.importorskip("torchvision")
    a_np, b_np = iou_boxes(14, 6, 5)
    for dtype, tol in ((torch.float16, 2e-2), (torch.bfloat16, 8e-2)):
        a, b = [torch.tensor(x, dtype=dtype, requires_grad=True) for x in (a_np, b_np)]
        fa, fb = [t.detach().float().requires_grad_() for t in (a, b)]
        visionops.generalized_box_iou(a, b).sum().backward()
        torchvision.ops.generalized_box_iou(fa, fb).sum().backward()
        assert a.grad.dtype == dtype and b.grad.dtype == dtype
        scale = float(fa.grad.abs().max())
        assert float((a.grad.float() - fa.grad).abs().max()) <= tol * scale
        assert float((b.grad.float() - fb.grad).abs().max()) <= tol * scale
    a = f64(a_np, True)
    empty = f64(np.zeros((0, 4)), True)
    visionops.complete_box_iou(a, empty).sum().backward()
    assert torch.equal(a.grad, torch.zeros_like(a))


def test_iou_backward_thread_invariant():
    a_np, b_np = iou_boxes(15, 200, 90)
    results = []
    before = visionops.get_num_threads()
    try:
        for threads in (1, 2):
            visionops.set_num_threads(threads)
            a, b = [torch.tensor(x, dtype=torch.float32, requires_grad=True) for x in (a_np, b_np)]
            visionops.distance_box_iou(a, b).sum().backward()
            results.append((a.grad, b.grad))
    finally:
        visionops.set_num_threads(before)
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])
