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
