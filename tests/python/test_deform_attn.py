"""deform_attn (multi-scale deformable attention) against a grid_sample
re-statement of SPEC-NEXT 5.3 written here: forward and the gradients of
value, sampling_loc and attn_weight, float32 / float64, on random cases and
the edge cases of SPEC-NEXT 5.6; gradcheck; NaN locations; thread counts;
the half types; NumPy inputs; autocast; forward mode (value, attn_weight;
sampling_loc refused); double backward refused; bad inputs; torchvision
main's op where installed."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
import torch.nn.functional as F  # noqa: E402

import visionops  # noqa: E402
from visionops import _core  # noqa: E402

DT = {"float32": torch.float32, "float64": torch.float64}
TOL = {"float32": (1e-5, 2e-5), "float64": (1e-12, 1e-12)}


def reference(value, spatial_shapes, level_start_index, sampling_loc, attn_weight):
    """SPEC-NEXT 5.3 through grid_sample: per level, value as [N*M, D, H, W]
    sampled at grid = 2 * loc - 1 (bilinear, zeros, align_corners=False),
    weighted by attn_weight and summed over levels and points."""
    n, _, m, d = value.shape
    _, q, _, _, p, _ = sampling_loc.shape
    out = value.new_zeros(n * m, d, q)
    for level, (h, w) in enumerate(spatial_shapes.tolist()):
        start = int(level_start_index[level])
        v = value[:, start:start + h * w].permute(0, 2, 3, 1).reshape(n * m, d, h, w)
        grid = (2 * sampling_loc[:, :, :, level] - 1).permute(0, 2, 1, 3, 4).reshape(n * m, q, p, 2)
        sampled = F.grid_sample(v, grid, mode="bilinear", padding_mode="zeros",
                                align_corners=False)  # [N*M, D, Q, P]
        a = attn_weight[:, :, :, level].permute(0, 2, 1, 3).reshape(n * m, 1, q, p)
        out = out + (sampled * a).sum(-1)
    return out.view(n, m, d, q).permute(0, 3, 1, 2).reshape(n, q, m * d)


# name: N, level shapes, M, D, Q, P, im2col_step, sampling range (lo, hi)
CASES = {
    "random": (2, [(5, 7), (3, 4), (2, 2)], 2, 3, 7, 4, 64, (0.0, 1.0)),
    "outside": (2, [(5, 7), (3, 4)], 2, 3, 9, 3, 64, (-0.6, 1.6)),  # partly / fully outside
    "level_1x1": (2, [(4, 3), (1, 1)], 2, 2, 5, 2, 64, (-0.2, 1.2)),
    "h_ne_w": (1, [(2, 9), (7, 3)], 3, 4, 6, 2, 64, (-0.1, 1.1)),
    "p1": (2, [(4, 5), (2, 3)], 2, 3, 5, 1, 64, (0.0, 1.0)),
    "l1": (2, [(6, 5)], 2, 3, 5, 3, 64, (-0.1, 1.1)),
    "n_not_divisible": (5, [(3, 4), (2, 2)], 2, 3, 4, 2, 2, (-0.1, 1.1)),
    "step1": (3, [(3, 4), (2, 2)], 1, 5, 4, 2, 1, (0.0, 1.0)),
}


def make_case(name, seed, dtype="float64"):
    n, levels, m, d, q, p, step, (lo, hi) = CASES[name]
    rng = np.random.default_rng(seed)
    shapes = torch.tensor(levels, dtype=torch.int64)
    sizes = [h * w for h, w in levels]
    starts = torch.tensor([0] + list(np.cumsum(sizes)[:-1]), dtype=torch.int64)
    s, lv = sum(sizes), len(levels)
    tdt = DT[dtype]
    value = torch.tensor(rng.normal(size=(n, s, m, d)), dtype=tdt)
    loc = torch.tensor(rng.uniform(lo, hi, size=(n, q, m, lv, p, 2)), dtype=tdt)
    weight = torch.tensor(rng.uniform(size=(n, q, m, lv, p)), dtype=tdt)
    return value, shapes, starts, loc, weight, step


def grad_of(out, seed=7):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(out.shape, generator=gen, dtype=torch.float64).to(out.dtype)


def run_one(fn, value, shapes, starts, loc, weight):
    """fn's output and its gradients (value, loc, weight) for a fixed random
    output gradient."""
    v, sl, aw = (t.detach().requires_grad_() for t in (value, loc, weight))
    out = fn(v, shapes, starts, sl, aw)
    return (out.detach(),) + tuple(torch.autograd.grad(out, (v, sl, aw), grad_of(out)))


def run_visionops(value, shapes, starts, loc, weight, step):
    return run_one(lambda *a: visionops.deform_attn(*a, im2col_step=step), value, shapes, starts,
                   loc, weight)


def run_both(value, shapes, starts, loc, weight, step):
    """visionops' and the reference's output and gradients."""
    return (run_visionops(value, shapes, starts, loc, weight, step),
            run_one(reference, value, shapes, starts, loc, weight))


def check_close(got, want, dtype, what):
    rtol, atol = TOL[dtype]
    for name, a, b in zip(("output", "grad_value", "grad_sampling_loc", "grad_attn_weight"),
                          got, want):
        # location gradients scale with the level's size (W_l, H_l): atol per pixel
        scale = 10.0 if name == "grad_sampling_loc" else 1.0
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol * scale,
                                   msg=lambda m: "%s %s: %s" % (what, name, m))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 1])
def test_against_grid_sample(case, dtype, seed):
    args = make_case(case, seed, dtype)
    got, want = run_both(*args)
    assert got[0].dtype == DT[dtype] and got[0].shape == want[0].shape
    check_close(got, want, dtype, "%s/%s" % (case, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_zero_attention_weights(dtype):
    value, shapes, starts, loc, weight, step = make_case("random", 3, dtype)
    weight = weight.clone()
    weight[:, ::2] = 0  # every other query attends to nothing
    weight[1, 1, 0, 1] = 0
    got, want = run_both(value, shapes, starts, loc, weight, step)
    check_close(got, want, dtype, "zero weights")
    assert torch.all(got[0][:, ::2] == 0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_non_contiguous(dtype):
    value, shapes, starts, loc, weight, step = make_case("outside", 4, dtype)
    # the same values behind strided views
    value_nc = value.transpose(1, 2).contiguous().transpose(1, 2)
    loc_nc = torch.cat([loc, loc], dim=-1)[..., ::2]
    loc_nc[..., 0], loc_nc[..., 1] = loc[..., 0], loc[..., 1]
    weight_nc = weight.permute(4, 0, 1, 2, 3).contiguous().permute(1, 2, 3, 4, 0)
    shapes_nc = shapes.t().contiguous().t()
    starts_nc = torch.stack([starts, starts], 1)[:, 0]
    for t in (value_nc, loc_nc, weight_nc, shapes_nc, starts_nc):
        assert not t.is_contiguous()
    got, _ = run_both(value_nc, shapes_nc, starts_nc, loc_nc, weight_nc, step)
    want, _ = run_both(value, shapes, starts, loc, weight, step)
    for a, b in zip(got, want):
        assert torch.equal(a, b)
    _, ref = run_both(value, shapes, starts, loc, weight, step)
    check_close(got, ref, dtype, "non-contiguous")


def test_im2col_step_does_not_change_results():
    value, shapes, starts, loc, weight, _ = make_case("n_not_divisible", 5)
    base = run_both(value, shapes, starts, loc, weight, 64)[0]
    for step in (1, 2, 3, 4, 5, 1000):
        for a, b in zip(run_both(value, shapes, starts, loc, weight, step)[0], base):
            assert torch.equal(a, b), step


def test_gradcheck():
    n, m, d, q, p = 2, 2, 3, 5, 2
    shapes = torch.tensor([[3, 4], [2, 2]])
    starts = torch.tensor([0, 12])
    gen = torch.Generator().manual_seed(0)
    value = torch.randn(n, 16, m, d, dtype=torch.float64, generator=gen).requires_grad_()
    # locations away from pixel centres' kinks and the window's edges in practice
    loc = torch.rand(n, q, m, 2, p, 2, dtype=torch.float64, generator=gen).requires_grad_()
    weight = torch.rand(n, q, m, 2, p, dtype=torch.float64, generator=gen).requires_grad_()

    def fn(v, sl, aw):
        return torch.ops.visionops.deform_attn(v, shapes, starts, sl, aw, 64)

    assert torch.autograd.gradcheck(fn, (value, loc, weight), eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_locations_contribute_zero(dtype):
    value, shapes, starts, loc, weight, step = make_case("random", 6, dtype)
    nan_loc = loc.clone()
    nan_loc[0, 1, 0, 0, 0, 0] = float("nan")  # x only
    nan_loc[1, 2, 1, 1, :, 1] = float("nan")  # y of every point of a level
    nan_loc[1, 3, 0, 2, 1] = float("nan")  # both
    # the reference: a NaN sample moved far outside, where it contributes 0
    far_loc = torch.where(torch.isnan(nan_loc).any(-1, keepdim=True),
                          torch.full_like(nan_loc, -10.0), nan_loc)
    got = run_both(value, shapes, starts, nan_loc, weight, step)[0]
    want = run_both(value, shapes, starts, far_loc, weight, step)[1]
    for t in got:
        assert torch.isfinite(t).all()
    check_close(got, want, dtype, "NaN locations")
    # grid_sample itself gives NaN there (what visionops differs from)
    assert torch.isnan(reference(value, shapes, starts, nan_loc, weight)).any()


def test_thread_counts_bit_identical():
    rng = np.random.default_rng(11)
    levels = [(16, 20), (8, 10), (4, 5), (2, 3)]
    s = sum(h * w for h, w in levels)
    shapes = torch.tensor(levels)
    starts = torch.tensor([0, 320, 400, 420])
    n, q, m, d, p = 3, 40, 4, 8, 4
    value = torch.tensor(rng.normal(size=(n, s, m, d)), dtype=torch.float32)
    loc = torch.tensor(rng.uniform(-0.1, 1.1, size=(n, q, m, 4, p, 2)), dtype=torch.float32)
    weight = torch.tensor(rng.uniform(size=(n, q, m, 4, p)), dtype=torch.float32)
    before = visionops.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            visionops.set_num_threads(threads)
            results.append(run_both(value, shapes, starts, loc, weight, 64)[0])
    finally:
        visionops.set_num_threads(before)
    for name, a, b in zip(("output", "grad_value", "grad_loc", "grad_weight"), *results):
        assert torch.equal(a, b), name


@pytest.mark.parametrize("dtype,tol", [(torch.float16, 2e-2), (torch.bfloat16, 1e-1)])
def test_half_types_against_float32(dtype, tol):
    value, shapes, starts, loc, weight, step = make_case("outside", 8, "float32")
    value, loc, weight = (t.to(dtype) for t in (value, loc, weight))
    got = run_visionops(value, shapes, starts, loc, weight, step)
    want = run_visionops(value.float(), shapes, starts, loc.float(), weight.float(), step)
    for name, a, b in zip(("output", "grad_value", "grad_loc", "grad_weight"), got, want):
        assert a.dtype == dtype, name
        scale = max(1.0, float(b.abs().max()))
        torch.testing.assert_close(a.float(), b, rtol=tol, atol=tol * scale,
                                   msg=lambda m: "%s %s: %s" % (dtype, name, m))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_inputs(dtype):
    value, shapes, starts, loc, weight, step = make_case("level_1x1", 9, dtype)
    got = visionops.deform_attn(value.numpy(), shapes.numpy(), starts.numpy(), loc.numpy(),
                                weight.numpy(), step)
    assert isinstance(got, np.ndarray) and got.dtype == np.dtype(dtype)
    want = visionops.deform_attn(value, shapes, starts, loc, weight, step)
    np.testing.assert_array_equal(got, want.numpy())
    # the default im2col_step, and non-contiguous arrays
    got2 = visionops.deform_attn(np.asfortranarray(value.numpy()), shapes.numpy(), starts.numpy(),
                                 loc.numpy(), weight.numpy())
    np.testing.assert_array_equal(got2, got)


def test_scripted_call():
    value, shapes, starts, loc, weight, step = make_case("p1", 10)

    @torch.jit.script
    def scripted(v, s, i, sl, aw):
        return visionops.deform_attn(v, s, i, sl, aw, 2)

    assert torch.equal(scripted(value, shapes, starts, loc, weight),
                       visionops.deform_attn(value, shapes, starts, loc, weight, 2))


def test_autocast_promotes_and_returns_value_dtype():
    value, shapes, starts, loc, weight, step = make_case("random", 12, "float32")
    v16 = value.bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.ops.visionops.deform_attn(v16, shapes, starts, loc, weight, step)
        same = torch.ops.visionops.deform_attn(v16, shapes, starts, loc.bfloat16(),
                                               weight.bfloat16(), step)
    assert out.dtype == torch.bfloat16 and same.dtype == torch.bfloat16
    # value's bfloat16 numbers beside float32 locations and weights, in float32
    want = visionops.deform_attn(v16.float(), shapes, starts, loc, weight, step)
    assert torch.equal(out, want.bfloat16())
    # a float64 operand promotes the others; the result is still value's dtype
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out64 = visionops.deform_attn(value, shapes, starts, loc.double(), weight, step)
    assert out64.dtype == torch.float32
    want64 = visionops.deform_attn(value.double(), shapes, starts, loc.double(), weight.double(),
                                   step)
    assert torch.equal(out64, want64.float())
    # autograd through the casts: each gradient in its operand's dtype
    v, sl = v16.clone().requires_grad_(), loc.clone().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = visionops.deform_attn(v, shapes, starts, sl, weight, step)
    g = grad_of(out).float()
    grad_v, grad_sl = torch.autograd.grad(out.float(), (v, sl), g)
    assert grad_v.dtype == torch.bfloat16 and grad_sl.dtype == torch.float32
    v32, sl32 = v16.float().requires_grad_(), loc.clone().requires_grad_()
    want_v, want_sl = torch.autograd.grad(
        visionops.deform_attn(v32, shapes, starts, sl32, weight, step), (v32, sl32),
        g.bfloat16().float())
    assert torch.equal(grad_sl, want_sl)
    assert torch.equal(grad_v, want_v.bfloat16())


def test_backward_takes_grad_output_at_its_position():
    """_deform_attn_backward's gradient is its argument grad_output (the 6th);
    every other backward op's is its first, as before."""
    from visionops import torch as vtorch

    backward_ops = {s.backward for s in _core.SCHEMAS.values() if s.backward}
    for name in backward_ops:
        expected = 5 if name == "_deform_attn_backward" else 0
        assert vtorch._grad_position(_core.SCHEMAS[name]) == expected, name
    value, shapes, starts, loc, weight, step = make_case("p1", 13)
    g = torch.randn(value.shape[0], loc.shape[1], value.shape[2] * value.shape[3],
                    dtype=torch.float64)
    direct = torch.ops.visionops._deform_attn_backward(value, shapes, starts, loc, weight, g, step)
    v, sl, aw = (t.clone().requires_grad_() for t in (value, loc, weight))
    grads = torch.autograd.grad(visionops.deform_attn(v, shapes, starts, sl, aw, step),
                                (v, sl, aw), g)
    for a, b in zip(grads, direct):
        assert torch.equal(a, b)


def test_double_backward_is_an_error():
    value, shapes, starts, loc, weight, step = make_case("p1", 14)
    v, sl, aw = (t.clone().requires_grad_() for t in (value, loc, weight))
    out = visionops.deform_attn(v, shapes, starts, sl, aw, step)
    grads = torch.autograd.grad(out.pow(2).sum(), (v, sl, aw), create_graph=True)
    with pytest.raises(visionops.VisionOpsError, match="no double backward"):
        torch.autograd.grad(grads[1].sum(), (v, sl, aw))


def test_forward_mode():
    """deform_attn is linear in value and in attn_weight: their jvp is the op
    of the tangent; a tangent of sampling_loc is refused clearly."""
    import torch.autograd.forward_ad as fwAD

    value, shapes, starts, loc, weight, step = make_case("outside", 15)
    t_value, t_weight = torch.randn_like(value), torch.randn_like(weight)

    def op(v, sl, aw):
        return torch.ops.visionops.deform_attn(v, shapes, starts, sl, aw, step)

    want = op(t_value, loc, weight) + op(value, loc, t_weight)
    with fwAD.dual_level():
        out = op(fwAD.make_dual(value, t_value), loc, fwAD.make_dual(weight, t_weight))
        primal, tangent = fwAD.unpack_dual(out)
        assert torch.equal(primal, op(value, loc, weight))
        torch.testing.assert_close(tangent, want, rtol=1e-12, atol=1e-12)
        dual = fwAD.make_dual(loc, torch.ones_like(loc))
        with pytest.raises(visionops.VisionOpsError, match="forward-mode AD .*sampling_loc"):
            op(value, dual, weight)
    if hasattr(torch, "func"):  # torch >= 2
        _, tangent = torch.func.jvp(lambda v, aw: visionops.deform_attn(v, shapes, starts, loc,
                                                                        aw, step),
                                    (value, weight), (t_value, t_weight))
        torch.testing.assert_close(tangent, want, rtol=1e-12, atol=1e-12)
        with pytest.raises(visionops.VisionOpsError, match="forward-mode AD .*sampling_loc"):
            torch.func.jvp(lambda sl: visionops.deform_attn(value, shapes, starts, sl, weight,
                                                            step),
                           (loc,), (torch.ones_like(loc),))
        # reverse mode under torch.func is autograd's
        grad = torch.func.grad(lambda sl: visionops.deform_attn(value, shapes, starts, sl, weight,
                                                                step).sum())(loc)
        sl = loc.clone().requires_grad_()
        visionops.deform_attn(value, shapes, starts, sl, weight, step).sum().backward()
        assert torch.equal(grad, sl.grad)


def test_backward_has_no_forward_mode():
    import torch.autograd.forward_ad as fwAD

    value, shapes, starts, loc, weight, step = make_case("p1", 17)
    g = torch.randn(value.shape[0], loc.shape[1], value.shape[2] * value.shape[3],
                    dtype=torch.float64)
    with fwAD.dual_level():
        dual = fwAD.make_dual(g, torch.ones_like(g))
        with pytest.raises(visionops.VisionOpsError, match="forward-mode AD .*not supported"):
            torch.ops.visionops._deform_attn_backward(value, shapes, starts, loc, weight, dual,
                                                      step)


BAD = [
    ("value_3d", lambda a: a.update(value=a["value"][0]), ValueError, "value"),
    ("loc_last_dim", lambda a: a.update(sampling_loc=torch.cat(
        [a["sampling_loc"], a["sampling_loc"][..., :1]], -1)), ValueError, "sampling_loc"),
    ("weight_points", lambda a: a.update(attn_weight=a["attn_weight"][..., :1]), ValueError,
     "attn_weight"),
    ("loc_heads", lambda a: a.update(sampling_loc=a["sampling_loc"][:, :, :1]), ValueError,
     "sampling_loc"),
    ("shapes_int32", lambda a: a.update(spatial_shapes=a["spatial_shapes"].int()), TypeError,
     "spatial_shapes"),
    ("starts_int32", lambda a: a.update(level_start_index=a["level_start_index"].int()),
     TypeError, "level_start_index"),
    ("loc_dtype", lambda a: a.update(sampling_loc=a["sampling_loc"].float()), TypeError,
     "sampling_loc"),
    ("weight_dtype", lambda a: a.update(attn_weight=a["attn_weight"].float()), TypeError,
     "attn_weight"),
    ("value_int", lambda a: a.update(value=a["value"].long()), TypeError, "value"),
    ("starts_inconsistent", lambda a: a["level_start_index"].__setitem__(1, 11), ValueError,
     "level_start_index"),
    ("shapes_sum_short", lambda a: a.update(value=torch.cat([a["value"], a["value"][:, :1]], 1)),
     ValueError, "spatial_shapes"),
    ("shapes_sum_long", lambda a: a["spatial_shapes"].__setitem__((1, 0), 3), ValueError,
     "spatial_shapes"),
    ("starts_levels", lambda a: a.update(spatial_shapes=a["spatial_shapes"][:1]), ValueError,
     "level_start_index"),
    ("loc_levels", lambda a: a.update(spatial_shapes=a["spatial_shapes"][:1],
                                      level_start_index=a["level_start_index"][:1]), ValueError,
     "(sampling_loc|spatial_shapes)"),
    ("im2col_step_0", lambda a: a.update(im2col_step=0), ValueError, "im2col_step"),
    ("im2col_step_negative", lambda a: a.update(im2col_step=-2), ValueError, "im2col_step"),
    ("value_list", lambda a: a.update(value=[1.0, 2.0]), TypeError, "value"),
]


@pytest.mark.parametrize("numpy", [False, True])
@pytest.mark.parametrize("name,mutate,error,argument", BAD, ids=[b[0] for b in BAD])
def test_bad_inputs(name, mutate, error, argument, numpy):
    n, m, d, q, p = 2, 2, 3, 5, 2
    args = {"value": torch.randn(n, 16, m, d, dtype=torch.float64),
            "spatial_shapes": torch.tensor([[3, 4], [2, 2]]),
            "level_start_index": torch.tensor([0, 12]),
            "sampling_loc": torch.rand(n, q, m, 2, p, 2, dtype=torch.float64),
            "attn_weight": torch.rand(n, q, m, 2, p, dtype=torch.float64),
            "im2col_step": 64}
    mutate(args)
    if numpy:
        args = {k: v.numpy() if isinstance(v, torch.Tensor) else v for k, v in args.items()}
    with pytest.raises(error, match="deform_attn: .*%s" % argument):
        visionops.deform_attn(**args)


def _torchvision_deform_attn():
    tv = pytest.importorskip("torchvision", reason="torchvision is not installed")
    try:
        return torch.ops.torchvision.deform_attn
    except (AttributeError, RuntimeError):
        pytest.skip("torchvision %s has no deform_attn (torchvision main has)" % tv.__version__)


@pytest.mark.parametrize("case", ["random", "outside", "level_1x1"])
def test_torchvision_main(case):
    tv_op = _torchvision_deform_attn()
    value, shapes, starts, loc, weight, step = make_case(case, 16, "float32")
    if value.shape[0] % min(step, value.shape[0]):
        step = 1  # torchvision requires im2col_step to divide the batch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        want = tv_op(*(t.to(device) for t in (value, shapes, starts, loc, weight)), step).cpu()
    except RuntimeError as e:  # its CPU kernel only raises
        pytest.skip("torchvision's deform_attn does not run on %s: %s" % (device, e))
    got = visionops.deform_attn(value, shapes, starts, loc, weight, step)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=2e-5)


@pytest.mark.skipif(not hasattr(torch, "export"), reason="torch.export needs torch >= 2")
def test_compile_export_and_meta():
    value, shapes, starts, loc, weight, step = make_case("level_1x1", 18, "float32")
    args = (value, shapes, starts, loc, weight)
    want = visionops.deform_attn(*args)
    compiled = torch.compile(lambda *a: visionops.deform_attn(*a), fullgraph=True, dynamic=True)
    assert torch.equal(compiled(*args), want)

    class Attend(torch.nn.Module):
        def forward(self, v, s, i, sl, aw):
            return visionops.deform_attn(v, s, i, sl, aw)

    assert torch.equal(torch.export.export(Attend(), args).module()(*args), want)
    meta = torch.ops.visionops.deform_attn(*(t.to("meta") for t in args), step)
    assert meta.shape == want.shape and meta.dtype == want.dtype
