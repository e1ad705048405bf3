"""torch.func over every differentiable op (torch >= 2): grad, jacrev,
vmap(grad), jacfwd and second derivatives, compared with ordinary autograd
and with central finite differences in float64. Forward-mode AD is also
checked through torch.autograd.forward_ad, which torch 1.13 has too.

Forward mode follows the ops' linearity: the RoI ops are linear in their
features (the tangent of the output is the op of the tangent), roi_pool picks
the tangent at argmax, deform_conv2d is linear in input, weight and mask;
deform_attn in value and attn_weight; the box IoU ops, deform_conv2d's offset
and deform_attn's sampling_loc have no jvp (a clear error).
Second derivatives exist where the registry names a backward of the backward
(roi_align, ps_roi_align, ps_roi_pool); elsewhere differentiating the
backward op is an error, never a silent zero."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import visionops  # noqa: E402
from visionops import VisionOpsError  # noqa: E402
from conftest import make_rois  # noqa: E402

HAVE_FUNC = hasattr(torch, "func")
needs_func = pytest.mark.skipif(
    not HAVE_FUNC, reason="torch.func needs torch >= 2 (this is %s; functorch is a separate "
    "package there)" % torch.__version__)
V = torch.ops.visionops


def f64(a):
    return torch.as_tensor(np.asarray(a), dtype=torch.float64)


def _cases():
    """{name: (fn of one float64 tensor, the tensor)}: each differentiable
    op with respect to each differentiable argument."""
    rng = np.random.default_rng(0)
    x = f64(rng.normal(size=(2, 4, 5, 6)))
    rois = f64(make_rois(rng, 3, 2, extent=10, max_wh=8, dtype=np.float64))
    cases = {
        "roi_align": (lambda x: V.roi_align(x, rois, 0.5, 2, 2, 2, True), x),
        "roi_align_adaptive": (lambda x: V.roi_align(x, rois, 0.5, 2, 3, -1, False), x),
        "roi_pool": (lambda x: V.roi_pool(x, rois, 0.5, 2, 2)[0], x),
        "ps_roi_align": (lambda x: V.ps_roi_align(x, rois, 0.5, 2, 2, 2)[0], x),
        "ps_roi_pool": (lambda x: V.ps_roi_pool(x, rois, 0.5, 2, 2)[0], x),
        # both feature levels come from the one tensor: gradients of both add up;
        # canonical scale 5 at level 2 sends RoIs under 5 pixels (one of the three) to level 1
        "multi_scale_roi_align": (lambda x: V.multi_scale_roi_align(
            [x, x[:, :, ::2, ::2] * 2], rois, [0.5, 0.25], 2, 2, 2, 5, 2, False), x),
    }
    weight = f64(rng.normal(size=(4, 2, 2, 2)))
    offset = f64(rng.normal(size=(2, 2 * 2 * 2 * 2, 4, 5)) * 0.7)
    mask = f64(rng.uniform(size=(2, 2 * 2 * 2, 4, 5)))
    bias = f64(rng.normal(size=(4,)))
    xd = x[:, :4]

    def deform(i=xd, w=weight, o=offset, m=mask, b=bias):
        # two weight groups of the input's four channels, two offset groups
        return V.deform_conv2d(i, w, o, m, b, 1, 1, 0, 0, 1, 1, 2, 2, True)

    cases.update({
        "deform_conv2d_input": (lambda i: deform(i=i), xd),
        "deform_conv2d_weight": (lambda w: deform(w=w), weight),
        "deform_conv2d_offset": (lambda o: deform(o=o), offset),
        "deform_conv2d_mask": (lambda m: deform(m=m), mask),
        "deform_conv2d_bias": (lambda b: deform(b=b), bias),
        "deform_conv2d_nomask": (lambda i: V.deform_conv2d(i, weight, offset, None, None, 1, 1,
                                                           0, 0, 1, 1, 2, 2, False), xd),
    })
    # deform_attn: two levels (3, 4), (2, 2); locations partly outside [0, 1]
    shapes, starts = torch.tensor([[3, 4], [2, 2]]), torch.tensor([0, 12])
    value = f64(rng.normal(size=(2, 16, 2, 3)))
    loc = f64(rng.uniform(-0.1, 1.1, size=(2, 4, 2, 2, 2, 2)))
    attn = f64(rng.uniform(size=(2, 4, 2, 2, 2)))

    def attend(v=value, sl=loc, aw=attn):
        return V.deform_attn(v, shapes, starts, sl, aw, 64)

    cases.update({
        "deform_attn_value": (lambda v: attend(v=v), value),
        "deform_attn_sampling_loc": (lambda sl: attend(sl=sl), loc),
        "deform_attn_attn_weight": (lambda aw: attend(aw=aw), attn),
    })
    xy = rng.uniform(0, 10, (5, 2))
    boxes = f64(np.concatenate([xy, xy + rng.uniform(1, 6, (5, 2))], 1))
    for op in ("box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou"):
        fn = getattr(V, op)
        cases[op] = (lambda b, fn=fn: fn(b[:2], b[2:]), boxes)  # both box sets at once
    return cases


CASES = _cases()
# Cases with a forward-mode rule; the others raise VisionOpsError.
JVP_CASES = {n for n in CASES if not n.endswith("box_iou")
             and n not in ("deform_conv2d_offset", "deform_attn_sampling_loc")}
# Ops with an integer output (argmax, channel_mapping), which torch 1.13's
# forward AD of an autograd.Function cannot handle.
INTEGER_OUTPUT = {"roi_pool", "ps_roi_align", "ps_roi_pool"}
# complete_box_iou's backward takes alpha as a constant (torchvision's
# torch.no_grad()), so its gradient is not the forward's finite difference.
NOT_THE_DERIVATIVE = {"complete_box_iou"}
# Cases whose backward op has a backward (second derivatives exist).
SECOND_ORDER = {"roi_align", "roi_align_adaptive", "ps_roi_align", "ps_roi_pool"}


@pytest.fixture(autouse=True)
def _quiet_fallback():
    """torch's per-sample vmap fallback warns that it is slow; these tests
    are about values."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*batching rule.*")
        yield


def _weights(fn, p, seed=1):
    out = fn(p)
    return torch.as_tensor(np.random.default_rng(seed).normal(size=tuple(out.shape)))


def _loss(fn, weights):
    return lambda p: (fn(p) * weights).sum()


def _autograd_grad(fn, p):
    p = p.clone().requires_grad_(True)
    return torch.autograd.grad(fn(p), p)[0]


def _numerical_jacobian(fn, p, eps=1e-6):
    """Central differences, one input element at a time."""
    flat = p.detach().clone().reshape(-1)
    cols = []
    for i in range(flat.numel()):
        hi, lo = flat.clone(), flat.clone()
        hi[i] += eps
        lo[i] -= eps
        cols.append((fn(hi.view(p.shape)) - fn(lo.view(p.shape))).reshape(-1) / (2 * eps))
    out_shape = fn(p).shape
    return torch.stack(cols, 1).reshape(*out_shape, *p.shape)


@needs_func
@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_matches_autograd(name):
    fn, p = CASES[name]
    loss = _loss(fn, _weights(fn, p))
    got = torch.func.grad(loss)(p)
    assert torch.allclose(got, _autograd_grad(loss, p), rtol=1e-12, atol=1e-12)
    assert got.abs().sum() > 0


@needs_func
@pytest.mark.parametrize("name", sorted(CASES))
def test_jacrev_matches_autograd_and_finite_differences(name):
    fn, p = CASES[name]
    got = torch.func.jacrev(fn)(p)
    assert torch.allclose(got, torch.autograd.functional.jacobian(fn, p), rtol=1e-12, atol=1e-12)
    if name not in NOT_THE_DERIVATIVE:
        assert torch.allclose(got, _numerical_jacobian(fn, p), rtol=1e-4, atol=1e-6)


@needs_func
@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_of_grad_is_per_sample_grad(name):
    fn, p = CASES[name]
    loss = _loss(fn, _weights(fn, p))
    gen = torch.Generator().manual_seed(2)
    batch = torch.stack([p, p + 0.01 * torch.randn(p.shape, generator=gen, dtype=p.dtype),
                         p * 1.02])
    got = torch.func.vmap(torch.func.grad(loss))(batch)
    for sample, g in zip(batch, got):
        assert torch.allclose(g, _autograd_grad(loss, sample), rtol=1e-12, atol=1e-12)


@needs_func
@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_of_op_is_per_sample_op(name):
    fn, p = CASES[name]
    batch = torch.stack([p, p * 0.5 + 0.25])
    got = torch.func.vmap(fn)(batch)
    assert torch.equal(got, torch.stack([fn(s) for s in batch]))


@needs_func
@pytest.mark.parametrize("name", sorted(CASES))
def test_jacfwd(name):
    fn, p = CASES[name]
    if name not in JVP_CASES:
        with pytest.raises(VisionOpsError, match="forward-mode AD .*not supported"):
            torch.func.jacfwd(fn)(p)
        return
    got = torch.func.jacfwd(fn)(p)
    assert torch.allclose(got, torch.func.jacrev(fn)(p), rtol=1e-12, atol=1e-12)
    assert torch.allclose(got, _numerical_jacobian(fn, p), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_ad_matches_reverse_mode(name):
    """torch.autograd.forward_ad (torch 1.13 too): <w, J t> from the jvp rule
    equals <J^T w, t> from the backward."""
    import torch.autograd.forward_ad as fwAD

    fn, p = CASES[name]
    gen = torch.Generator().manual_seed(3)
    tangent = torch.randn(p.shape, generator=gen, dtype=p.dtype)
    weights = _weights(fn, p)
    with fwAD.dual_level():
        dual = fwAD.make_dual(p, tangent)
        if name not in JVP_CASES:
            with pytest.raises(VisionOpsError, match="forward-mode AD .*not supported"):
                fn(dual)
            return
        if not HAVE_FUNC and name in INTEGER_OUTPUT:
            with pytest.raises(VisionOpsError, match="forward-mode AD needs torch >= 2"):
                fn(dual)
            return
        out = fwAD.unpack_dual(fn(dual))
    assert torch.equal(out.primal, fn(p))
    reverse = (_autograd_grad(_loss(fn, weights), p) * tangent).sum()
    assert torch.allclose((out.tangent * weights).sum(), reverse, rtol=1e-10, atol=1e-12)


@needs_func
@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives(name):
    """jacrev(grad) and jacfwd(grad) of sum(op(p)^2): 2 J^T J for the ops
    linear in p, through the backward op's own backward (and its jvp)."""
    fn, p = CASES[name]
    loss = lambda p: fn(p).pow(2).sum()  # noqa: E731
    if name not in SECOND_ORDER:
        with pytest.raises(VisionOpsError, match="no double backward"):
            torch.func.jacrev(torch.func.grad(loss))(p)
        return
    jac = torch.func.jacrev(fn)(p).reshape(-1, p.numel())
    expected = (2 * jac.T @ jac).reshape(*p.shape, *p.shape)
    assert torch.allclose(torch.func.jacrev(torch.func.grad(loss))(p), expected, atol=1e-12)
    assert torch.allclose(torch.func.jacfwd(torch.func.grad(loss))(p), expected, atol=1e-12)
    assert torch.allclose(torch.func.hessian(loss)(p), expected, atol=1e-12)
    assert torch.allclose(torch.autograd.functional.hessian(loss, p), expected, atol=1e-12)


needs_register_vmap = pytest.mark.skipif(
    not hasattr(torch.library, "register_vmap"),
    reason="torch.library.register_vmap needs torch >= 2.4 (this is %s)" % torch.__version__)
ROI_OPS = ["roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool"]


@needs_func
@needs_register_vmap
@pytest.mark.parametrize("name", ROI_OPS)
def test_roi_ops_have_batching_rules(name):
    """The RoI ops and their backward ops batch by folding the samples into
    the channels: no per-sample fallback (its warning would be an error
    here), for a batch dimension anywhere, nested vmap, jacrev (a vmap of the
    backward op over the output's basis) and vmap(grad) (batched
    channel_mapping / argmax into the backward op)."""
    fn, p = CASES[name]
    batch = torch.stack([p, p * 0.5, p + 1], 2)
    samples = [batch.select(2, i) for i in range(3)]
    loss = _loss(fn, _weights(fn, p))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*batching rule.*")
        got = torch.func.vmap(fn, in_dims=2, out_dims=1)(batch)
        nested = torch.func.vmap(torch.func.vmap(fn))(torch.stack([batch.movedim(2, 0)] * 2))
        jac = torch.func.jacrev(fn)(p)
        grads = torch.func.vmap(torch.func.grad(loss), in_dims=2)(batch)
    expected = torch.stack([fn(x) for x in samples], 1)
    assert torch.equal(got, expected)
    assert torch.equal(nested, torch.stack([expected.movedim(1, 0)] * 2))
    assert torch.allclose(jac, torch.autograd.functional.jacobian(fn, p), rtol=1e-12, atol=1e-12)
    for x, g in zip(samples, grads):
        assert torch.allclose(g, _autograd_grad(loss, x), rtol=1e-12, atol=1e-12)


@needs_func
@pytest.mark.parametrize("name", ROI_OPS)
def test_vmap_over_rois(name):
    """Batched RoIs (the per-sample path): outputs and input gradients."""
    _, x = CASES[name]
    op = getattr(V, name)
    extra = {"roi_align": (2, True), "ps_roi_align": (2,)}.get(name, ())

    def fn(x, rois):
        out = op(x, rois, 0.5, 2, 2, *extra)
        return out[0] if isinstance(out, (tuple, list)) else out

    rng = np.random.default_rng(8)
    rois = torch.stack([f64(make_rois(rng, 3, 2, extent=10, max_wh=8, dtype=np.float64))
                        for _ in range(3)])
    got = torch.func.vmap(fn, in_dims=(None, 0))(x, rois)
    assert torch.equal(got, torch.stack([fn(x, r) for r in rois]))
    grads = torch.func.vmap(torch.func.grad(lambda x, r: fn(x, r).sin().sum()),
                            in_dims=(None, 0))(x, rois)
    for r, g in zip(rois, grads):
        assert torch.allclose(g, _autograd_grad(lambda x: fn(x, r).sin().sum(), x), rtol=1e-12,
                              atol=1e-12)


@needs_func
def test_vmap_keeps_the_ops_errors():
    """Six channels do not split into 2x2 position-sensitive groups, though
    a batch of two folded into the channels would: the error is the op's."""
    x = torch.zeros(2, 1, 6, 5, 5, dtype=torch.float64)
    rois = f64([[0, 0, 0, 3, 3]])
    with pytest.raises(visionops.VisionOpsValueError, match="ps_roi_align: input has C = 6"):
        torch.func.vmap(lambda x: V.ps_roi_align(x, rois, 1.0, 2, 2, 2)[0])(x)
    with pytest.raises(visionops.VisionOpsValueError, match="rois.* = 3 is not a batch index"):
        torch.func.vmap(lambda x: V.roi_align(x, f64([[3, 0, 0, 3, 3]]), 1.0, 2, 2, 2, True))(x)


@needs_func
@pytest.mark.parametrize("name", ROI_OPS)
def test_vmap_of_zero_channels(name):
    """No channels: nothing to fold, the per-sample outputs are empty."""
    x = torch.zeros(3, 2, 0, 5, 5, dtype=torch.float64)
    rois = f64([[0, 0, 0, 3, 3], [1, 1, 1, 4, 4]])
    extra = {"roi_align": (2, True), "ps_roi_align": (2,)}.get(name, ())
    outs = torch.func.vmap(lambda x: getattr(V, name)(x, rois, 1.0, 2, 2, *extra))(x)
    for out in (outs if isinstance(outs, (tuple, list)) else [outs]):
        assert out.shape == (3, 2, 0, 2, 2)


def test_double_backward_without_a_registered_backward_is_an_error():
    """Ordinary autograd: the gradient of deform_conv2d taken with
    create_graph tracks autograd, and differentiating it again says why it
    cannot, instead of a detached result."""
    fn, p = CASES["deform_conv2d_input"]
    p = p.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(fn(p).pow(2).sum(), p, create_graph=True)
    assert g.requires_grad
    with pytest.raises(VisionOpsError, match="deform_conv2d_backward: differentiating it"):
        g.sum().backward()


@needs_func
def test_grad_through_the_torchvision_compatible_functions():
    """visionops.roi_align / deform_conv2d / generalized_box_iou (what models
    call) under torch.func.grad."""
    x = CASES["roi_align"][1]
    rois = f64([[0, 1, 1, 7, 8], [1, 0, 2, 9, 6]])
    boxes = CASES["generalized_box_iou"][1]
    weight = f64(np.random.default_rng(4).normal(size=(3, 4, 3, 3)))
    offset = f64(np.random.default_rng(5).normal(size=(2, 18, 3, 4)) * 0.5)

    def loss(x, b):
        pooled = visionops.roi_align(x, rois, (2, 2), 0.5, 2, True)
        conv = visionops.deform_conv2d(x, offset, weight)
        return pooled.sum() + conv.pow(2).mean() + (1 - visionops.generalized_box_iou(
            b[:2], b[2:])).sum()

    got = torch.func.grad(loss, argnums=(0, 1))(x, boxes)
    xr, br = x.clone().requires_grad_(True), boxes.clone().requires_grad_(True)
    ref = torch.autograd.grad(loss(xr, br), (xr, br))
    assert all(torch.allclose(g, r, rtol=1e-12, atol=1e-12) for g, r in zip(got, ref))


class _RoiModel(torch.nn.Module):
    """A conv, a deformable conv (offsets from a conv) and roi_align."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.offset = torch.nn.Conv2d(4, 18, 3, padding=1)
        self.weight = torch.nn.Parameter(torch.randn(3, 4, 3, 3))
        with torch.no_grad():
            self.offset.weight.mul_(0.1)

    def forward(self, image, rois):
        x = torch.relu(self.conv(image))
        x = visionops.deform_conv2d(x, self.offset(x), self.weight, padding=(1, 1))
        return visionops.roi_align(x, rois, (2, 2), 1.0, 2, True)


@needs_func
def test_per_sample_gradients_of_a_model():
    """functional_call + vmap(grad): each sample's parameter gradients, as
    one autograd backward per sample gives them."""
    model = _RoiModel().double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    gen = torch.Generator().manual_seed(7)
    images = torch.randn(3, 1, 2, 6, 6, generator=gen, dtype=torch.float64)
    rois = f64([[0, 0.5, 1, 4, 5], [0, 2, 0, 5.5, 3]])

    def loss(params, image):
        return torch.func.functional_call(model, params, (image, rois)).pow(2).sum()

    per_sample = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(params, images)
    for i, image in enumerate(images):
        model.zero_grad()
        model(image, rois).pow(2).sum().backward()
        for name, p in model.named_parameters():
            assert torch.allclose(per_sample[name][i], p.grad, rtol=1e-10, atol=1e-12), name


@pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch.compile needs torch >= 2")
def test_compiled_training_step_matches_eager():
    """torch.compile(fullgraph=True) with backward over roi_align,
    deform_conv2d and a generalized-IoU loss: the Autograd kernels trace
    into the joint graph."""
    fn_rois, x = CASES["roi_align"]
    deform, weight = CASES["deform_conv2d_weight"]
    boxes = CASES["generalized_box_iou"][1]

    def step(x, w, b):
        return (fn_rois(x).sin().sum() + deform(w).pow(2).mean()
                + (1 - V.generalized_box_iou(b[:2], b[2:])).sum())

    args = [t.clone().requires_grad_(True) for t in (x, weight, boxes)]
    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    out = compiled(*args)
    grads = torch.autograd.grad(out, args)
    ref = step(*args)
    ref_grads = torch.autograd.grad(ref, args)
    assert torch.allclose(out, ref, rtol=1e-12)
    assert all(torch.allclose(g, r, rtol=1e-12, atol=1e-12) for g, r in zip(grads, ref_grads))


def _opcheck_args():
    rng = np.random.default_rng(6)
    x = f64(rng.normal(size=(2, 4, 6, 7))).requires_grad_(True)
    rois = f64(make_rois(rng, 3, 2, extent=12, max_wh=8, dtype=np.float64))
    x2 = f64(rng.normal(size=(2, 4, 3, 4))).requires_grad_(True)
    xy = rng.uniform(0, 10, (4, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(1, 6, (4, 2))], 1)
    b1, b2 = f64(boxes[:1]).requires_grad_(True), f64(boxes[1:]).requires_grad_(True)
    weight = f64(rng.normal(size=(3, 4, 2, 2))).requires_grad_(True)
    offset = f64(rng.normal(size=(2, 8, 5, 6))).requires_grad_(True)
    mask = f64(rng.uniform(size=(2, 4, 5, 6))).requires_grad_(True)
    return {
        "roi_align": (x, rois, 0.5, 2, 2, 2, True),
        "roi_pool": (x, rois, 0.5, 2, 2),
        "ps_roi_align": (x, rois, 0.5, 2, 2, -1),
        "ps_roi_pool": (x, rois, 0.5, 2, 2),
        "multi_scale_roi_align": ([x, x2], rois, [0.5, 0.25], 2, 2, 2, 5, 2, False),
        "deform_conv2d": (x, weight, offset, mask, None, 1, 1, 0, 0, 1, 1, 1, 1, True),
        "box_iou": (b1, b2),
        "generalized_box_iou": (b1, b2),
        "distance_box_iou": (b1, b2, 1e-7),
        "complete_box_iou": (b1, b2, 1e-7),
    }


@pytest.mark.skipif(not hasattr(torch.library, "opcheck"), reason="torch.library.opcheck needs "
                    "torch >= 2.4 (this is %s)" % torch.__version__)
@pytest.mark.parametrize("name", sorted(_opcheck_args()))
def test_opcheck_with_grad(name):
    """torch.library.opcheck (schema, autograd registration, fake tensors,
    AOT dispatch with backward) on each differentiable op, inputs requiring
    grad."""
    torch.library.opcheck(getattr(V, name).default, _opcheck_args()[name])


@needs_func
@pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch.compile needs torch >= 2")
def test_compiled_func_transforms():
    """torch.compile(fullgraph=True) of torch.func.grad and vmap(grad)."""
    fn, x = CASES["roi_align"]
    grad = torch.func.grad(lambda x: fn(x).pow(2).sum())
    batch = torch.stack([x, x * 2])
    for transform, arg in [(grad, x), (torch.func.vmap(grad), batch)]:
        compiled = torch.compile(transform, backend="aot_eager", fullgraph=True)
        assert torch.allclose(compiled(arg), transform(arg), rtol=1e-12, atol=1e-12)
