"""roi_align, roi_pool, ps_roi_align, ps_roi_pool and MultiScaleRoIAlign
against torchvision.ops: forward values and input gradients (visionops'
autograd vs torchvision's), boxes as a [K, 5] tensor and as a list of [L, 4]
tensors, output_size as an int and as a pair."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
import torchvision.ops as tvops  # noqa: E402

import visionops  # noqa: E402
from conftest import (SEEDS, assert_close, make_rois, ps_pool_clear_of_edge,  # noqa: E402
                      rois_to_list)

DT = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16}
N, H, W = 2, 11, 14
SCALE = 0.5


def inputs(seed, dtype, channels, k=17, extent=None, max_wh=None):
    """(x, rois) as float64 NumPy arrays: features and RoIs in image
    coordinates (spatial scale SCALE), some partly or fully outside the map."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N, channels, H, W))
    extent = extent or 1.2 * W / SCALE
    rois = make_rois(rng, k, N, extent, max_wh or extent / 2, np.float64)
    return x, rois


def boxes_arg(rois_t, as_list):
    return rois_to_list(rois_t, N) if as_list else rois_t


def compare_forward_backward(vo_fn, tv_fn, x, rois, dtype, as_list, grad_mask=None, exact=False):
    """Forward of visionops vs torchvision on the same torch inputs; then
    the gradient of <out, g> w.r.t. the input through both autograds.
    float16: visionops accumulates in float32, so it is compared with
    torchvision in float32 on the upcast input."""
    tdt = DT[dtype]
    ref_dt = torch.float32 if dtype == "float16" else tdt
    xt = torch.tensor(x, dtype=tdt)
    rt = torch.tensor(rois, dtype=tdt)
    x_vo = xt.clone().requires_grad_()
    x_tv = xt.to(ref_dt, copy=True).requires_grad_()
    out = vo_fn(x_vo, boxes_arg(rt, as_list))
    want = tv_fn(x_tv, boxes_arg(rt.to(ref_dt), as_list))
    assert out.dtype == tdt and out.shape == want.shape
    if exact:
        np.testing.assert_array_equal(out.detach().to(ref_dt).numpy(), want.detach().numpy())
    else:
        assert_close(out, want, dtype, what="forward")
    g = torch.tensor(np.random.default_rng(7).normal(size=tuple(out.shape)), dtype=tdt)
    sel = (torch.ones(len(rois), dtype=torch.bool) if grad_mask is None
           else torch.from_numpy(grad_mask))
    g[~sel] = 0  # rows whose gradient is not comparable
    out.backward(g)
    want.backward(g.to(ref_dt))
    assert x_vo.grad is not None and x_vo.grad.dtype == tdt
    tol = {"float64": (1e-5, 1e-8), "float32": (1e-5, 1e-4), "float16": (5e-3, 2e-2)}[dtype]
    assert_close(x_vo.grad, x_tv.grad, dtype, rtol=tol[0], atol=tol[1], what="grad_input")
    # the NumPy path gives the torch path's forward values
    np_out = vo_fn(xt.numpy(), boxes_arg(rt.numpy(), as_list))
    assert isinstance(np_out, np.ndarray)
    np.testing.assert_array_equal(np_out, out.detach().numpy())
    return out


# ---------------------------------------------------------------- roi_align


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling", [-1, 0, 1, 2])
@pytest.mark.parametrize("seed", SEEDS)
def test_roi_align(dtype, aligned, sampling, seed):
    x, rois = inputs(seed, dtype, 3)
    as_list = seed % 2 == 1
    output_size = [(3, 4), 2, (1, 1)][seed]
    compare_forward_backward(
        lambda a, b: visionops.roi_align(a, b, output_size, SCALE, sampling, aligned),
        lambda a, b: tvops.roi_align(a, b, output_size, SCALE, sampling, aligned),
        x, rois, dtype, as_list)


@pytest.mark.parametrize("output_size", [7, 17])
def test_roi_align_large_output_streamed(output_size):
    """An output of 16 MB or more is written with streaming stores, in
    contiguous runs per RoI (7x7) or per channel (17x17: more bins than the
    forward's 256-bin buffer): the same bits as the first RoIs' output
    alone (under 16 MB, stored as before), and torchvision's values."""
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.standard_normal((2, 64, 40, 52)).astype(np.float32))
    rois = torch.from_numpy(make_rois(rng, 1400 if output_size == 7 else 240, 2, 200, 120))
    out = visionops.roi_align(x, rois, output_size, 0.25, 2, True)
    assert out.numel() * 4 >= 16 << 20
    head = visionops.roi_align(x, rois[:40], output_size, 0.25, 2, True)
    np.testing.assert_array_equal(out[:40].numpy(), head.numpy())
    assert_close(out, tvops.roi_align(x, rois, output_size, 0.25, 2, True), "float32")


@pytest.mark.parametrize("output_size", [7, 14])
def test_roi_pool_large_output_streamed(output_size):
    """roi_pool's channels-last forward streams a RoI's outputs and argmax
    when they come to 16 MB or more: the same values as the first RoIs
    alone (stored as before), the same gradient through the argmax, and
    torchvision's values."""
    rng = np.random.default_rng(4)
    x = torch.from_numpy(rng.standard_normal((2, 64, 48, 60)).astype(np.float32))
    rois = torch.from_numpy(make_rois(rng, 700 if output_size == 7 else 180, 2, 240, 140))
    out = visionops.roi_pool(x, rois, output_size, 0.25)
    assert out.numel() * 8 >= 16 << 20
    head = visionops.roi_pool(x, rois[:30], output_size, 0.25)
    np.testing.assert_array_equal(out[:30].numpy(), head.numpy())
    np.testing.assert_array_equal(out.numpy(), tvops.roi_pool(x, rois, output_size, 0.25).numpy())
    xg, xt = x.clone().requires_grad_(), x.clone().requires_grad_()
    g = torch.from_numpy(rng.standard_normal(tuple(out.shape)).astype(np.float32))
    visionops.roi_pool(xg, rois, output_size, 0.25).backward(g)
    tvops.roi_pool(xt, rois, output_size, 0.25).backward(g)
    assert_close(xg.grad, xt.grad, "float32")


@pytest.mark.parametrize("op,channels,kw", [
    ("roi_align", 3, dict(sampling_ratio=-1, aligned=False)),
    ("roi_align", 3, dict(sampling_ratio=2, aligned=True)),
    ("roi_pool", 3, {}),
    ("ps_roi_align", 8, dict(sampling_ratio=-1)),
    ("ps_roi_pool", 8, {}),
])
@pytest.mark.parametrize("seed", SEEDS)
def test_float16_vs_torchvision_float16(op, channels, kw, seed):
    """torchvision 0.14 has CPU float16 kernels for these, accumulating in
    float16 (off by up to ~1e-2 from float32 here); visionops accumulates in
    float32 (the 5e-3 parity is against float32, in test_roi_align etc.).
    So: max pooling identical; the averaging ops within torchvision's own
    float16 error, and visionops at least as close to float32 as
    torchvision (see test_improves)."""
    x, rois = inputs(seed, "float16", channels)
    xt, rt = torch.tensor(x, dtype=torch.float16), torch.tensor(rois, dtype=torch.float16)
    got = getattr(visionops, op)(xt, rt, 2, SCALE, **kw)
    want = getattr(tvops, op)(xt, rt, 2, SCALE, **kw)
    assert got.dtype == want.dtype == torch.float16
    if op == "roi_pool":
        assert torch.equal(got, want)
    else:
        assert_close(got, want, "float16", atol=2e-2)
    exact = getattr(tvops, op)(xt.float(), rt.float(), 2, SCALE, **kw)
    assert (got.float() - exact).abs().max() <= (want.float() - exact).abs().max() + 1e-3


def test_roi_align_edge_rois():
    """One box; RoIs fully outside the map (zeros), zero-size and reversed
    RoIs, a RoI covering the map: as torchvision in both alignments."""
    x = torch.randn(1, 2, 6, 7, dtype=torch.float64)
    rois = torch.tensor([[0, 1, 1, 5, 4], [0, 100, 100, 120, 130], [0, -50, -50, -20, -30],
                         [0, 3, 3, 3, 3], [0, 5, 4, 1, 1], [0, -1, -1, 8, 7],
                         [0, 2.5, 2.5, 2.5, 6]],
                        dtype=torch.float64)
    for aligned in (False, True):
        for sampling in (-1, 1, 3):
            for r in (rois[:1], rois):
                got = visionops.roi_align(x, r, (2, 3), 1.0, sampling, aligned)
                assert_close(got, tvops.roi_align(x, r, (2, 3), 1.0, sampling, aligned), "float64")
    out = visionops.roi_align(x, rois[1:3], 2, 1.0, 2, False)
    assert (out == 0).all()


@pytest.mark.parametrize("op", ["roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool"])
def test_roi_ops_no_rois(op):
    x = torch.randn(2, 8, 5, 5)
    for boxes in (torch.zeros(0, 5), [torch.zeros(0, 4), torch.zeros(0, 4)]):
        got = getattr(visionops, op)(x, boxes, 2)
        want = getattr(tvops, op)(x, boxes, 2)
        assert got.shape == want.shape
        got_np = getattr(visionops, op)(x.numpy(), np.zeros((0, 5), np.float32), 2)
        assert got_np.shape == tuple(want.shape)


# ----------------------------------------------------------------- roi_pool


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("seed", SEEDS)
def test_roi_pool(dtype, seed):
    x, rois = inputs(seed, dtype, 3)
    rng = np.random.default_rng(seed)
    rois[::4, 1:] = np.round(rois[::4, 1:] * SCALE) / SCALE + 1  # x*scale on a .5 tie
    rois[1::5, 3:] = rois[1::5, 1:3] - 3  # reversed: forced to 1x1
    if seed == 2:  # ties: small-integer features, first maximum wins
        x = rng.integers(-2, 3, size=x.shape).astype(np.float64)
    as_list = seed % 2 == 0
    output_size = [(3, 4), 2, (5, 1)][seed]
    # max pooling is exact: identical values and identical gradients
    out = compare_forward_backward(
        lambda a, b: visionops.roi_pool(a, b, output_size, SCALE),
        lambda a, b: tvops.roi_pool(a, b, output_size, SCALE),
        x, rois, dtype, as_list, exact=True)
    ph, pw = (output_size, output_size) if isinstance(output_size, int) else output_size
    xt, rt = torch.tensor(x, dtype=DT[dtype]), torch.tensor(rois, dtype=DT[dtype])
    _, argmax = torch.ops.visionops.roi_pool(xt, rt, SCALE, ph, pw)
    assert argmax.dtype == torch.int32
    _, want_am = torch.ops.torchvision.roi_pool(xt, rt, SCALE, ph, pw)
    np.testing.assert_array_equal(argmax.numpy(), want_am.numpy())
    assert out.shape[0] == len(rois)


# ------------------------------------------------------------- ps_roi_align


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("sampling", [-1, 0, 1, 2])
@pytest.mark.parametrize("seed", SEEDS)
def test_ps_roi_align(dtype, sampling, seed):
    output_size = [(2, 3), 2, (1, 1)][seed]
    ph, pw = (output_size, output_size) if isinstance(output_size, int) else output_size
    x, rois = inputs(seed, dtype, 2 * ph * pw)  # no degenerate RoIs here (see test_improves)
    compare_forward_backward(
        lambda a, b: visionops.ps_roi_align(a, b, output_size, SCALE, sampling),
        lambda a, b: tvops.ps_roi_align(a, b, output_size, SCALE, sampling),
        x, rois, dtype, as_list=seed == 1)
    _, cm = torch.ops.visionops.ps_roi_align(torch.tensor(x), torch.tensor(rois), SCALE, ph, pw,
                                             sampling)
    _, want_cm = torch.ops.torchvision.ps_roi_align(torch.tensor(x), torch.tensor(rois), SCALE, ph,
                                                    pw, sampling)
    np.testing.assert_array_equal(cm.numpy(), want_cm.numpy())


# -------------------------------------------------------------- ps_roi_pool


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("seed", SEEDS)
def test_ps_roi_pool(dtype, seed):
    output_size = [(2, 3), 3, (1, 1)][seed]
    ph, pw = (output_size, output_size) if isinstance(output_size, int) else output_size
    x, rois = inputs(seed, dtype, 2 * ph * pw)
    rois[1::2, 1:] *= 0.4  # half of them well inside the map
    rois[::4, 1:] = np.round(rois[::4, 1:] * SCALE) / SCALE + 1  # .5 ties
    rois[1::7, 3:] = rois[1::7, 1:3] - 3  # reversed
    # torchvision's backward is not the gradient of its forward for RoIs
    # reaching the last row/column (see test_improves): compare the gradient
    # on the RoIs clear of that edge only.
    clear = ps_pool_clear_of_edge(rois.astype(np.float32 if dtype == "float16" else dtype), SCALE,
                                  ph, pw, H, W)
    assert 0 < clear.sum() < len(rois)
    compare_forward_backward(
        lambda a, b: visionops.ps_roi_pool(a, b, output_size, SCALE),
        lambda a, b: tvops.ps_roi_pool(a, b, output_size, SCALE),
        x, rois, dtype, as_list=seed == 0, grad_mask=clear, exact=dtype != "float16")
    _, cm = torch.ops.visionops.ps_roi_pool(torch.tensor(x), torch.tensor(rois), SCALE, ph, pw)
    _, want_cm = torch.ops.torchvision.ps_roi_pool(torch.tensor(x), torch.tensor(rois), SCALE, ph,
                                                   pw)
    np.testing.assert_array_equal(cm.numpy(), want_cm.numpy())


# ------------------------------------------------------ MultiScaleRoIAlign

IMAGE = (128, 160)


def pyramid(rng, levels, dtype, channels=3, image=IMAGE):
    return {str(i): torch.tensor(rng.normal(size=(N, channels, image[0] // 2 ** (i + 2),
                                                   image[1] // 2 ** (i + 2))), dtype=dtype)
            for i in range(levels)}


def image_boxes(rng, counts, dtype, image=IMAGE):
    out = []
    for n in counts:
        xy = rng.uniform(-10, image[1], (n, 2))
        wh = np.exp(rng.uniform(np.log(2), np.log(400), (n, 2)))
        out.append(torch.tensor(np.concatenate([xy, xy + wh], 1), dtype=dtype))
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("levels", [1, 2, 4])
@pytest.mark.parametrize("seed", SEEDS)
def test_multi_scale_roi_align_module(dtype, levels, seed):
    rng = np.random.default_rng(seed)
    tdt = DT[dtype]
    ref_dt = torch.float32 if dtype == "float16" else tdt
    feats = pyramid(rng, levels, tdt)
    feats["pool"] = torch.zeros(N, 3, 1, 1, dtype=tdt)  # not in featmap_names: ignored
    names = [str(i) for i in range(levels)]
    output_size = [7, (2, 3), (4, 4)][seed]
    sampling = [2, -1, 0][seed]
    canonical = dict(canonical_scale=[224, 56, 32][seed], canonical_level=[4, 4, 3][seed])
    boxes = image_boxes(rng, [5 + seed, 3], tdt)
    shapes = [IMAGE, (IMAGE[0] - 20, IMAGE[1] - 7)]
    vo_pool = visionops.MultiScaleRoIAlign(names, output_size, sampling, **canonical)
    tv_pool = tvops.MultiScaleRoIAlign(names, output_size, sampling, **canonical)
    x_vo = {k: v.clone().requires_grad_(k != "pool") for k, v in feats.items()}
    x_tv = {k: v.to(ref_dt, copy=True).requires_grad_(k != "pool") for k, v in feats.items()}
    got = vo_pool(x_vo, boxes, shapes)
    want = tv_pool(x_tv, [b.to(ref_dt) for b in boxes], shapes)
    assert got.dtype == tdt and got.shape == want.shape
    assert_close(got, want, dtype, what="forward")
    g = torch.tensor(rng.normal(size=tuple(got.shape)), dtype=tdt)
    got.backward(g)
    want.backward(g.to(ref_dt))
    tol = {"float64": (1e-5, 1e-8), "float32": (1e-5, 1e-4), "float16": (5e-3, 2e-2)}[dtype]
    for k in names:
        assert_close(x_vo[k].grad, x_tv[k].grad, dtype, rtol=tol[0], atol=tol[1], what="grad " + k)
    # the NumPy path (same module on arrays) gives the same values
    np_out = vo_pool({k: v.detach().numpy() for k, v in feats.items()},
                     [b.numpy() for b in boxes], shapes)
    np.testing.assert_array_equal(np_out, got.detach().numpy())


def test_multi_scale_roi_align_functional(rng):
    """visionops.multi_scale_roi_align with explicit scales equals the
    module (and torchvision's), on [K, 5] rois and on a list of boxes."""
    feats = pyramid(rng, 4, torch.float64)
    boxes = image_boxes(rng, [6, 4], torch.float64)
    want = tvops.MultiScaleRoIAlign(list(feats), 3, 2)(feats, boxes, [IMAGE, IMAGE])
    scales = [1 / 4, 1 / 8, 1 / 16, 1 / 32]
    got = visionops.multi_scale_roi_align(list(feats.values()), boxes, scales, 3, 2)
    assert_close(got, want, "float64")
    rois = torch.cat([torch.cat([torch.full((len(b), 1), float(i), dtype=torch.float64), b], 1)
                      for i, b in enumerate(boxes)])
    got = visionops.multi_scale_roi_align(list(feats.values()), rois, scales, (3, 3), 2)
    assert_close(got, want, "float64")


def test_multi_scale_roi_align_module_state(rng):
    pool = visionops.MultiScaleRoIAlign(["a", "b"], 5, 2)
    assert pool.output_size == (5, 5) and pool.sampling_ratio == 2
    assert isinstance(pool, torch.nn.Module)
    feats = {"a": torch.randn(1, 2, 32, 40), "b": torch.randn(1, 2, 16, 20)}
    pool(feats, [torch.tensor([[0, 0, 50, 60.0]])], [(128, 160)])
    assert pool.scales == [0.25, 0.125]


def test_multi_scale_roi_align_edge_cases(rng):
    """A reversed box (negative area: no level, a zero row in torchvision),
    a zero-area box, an image without boxes, a single image."""
    feats = pyramid(rng, 3, torch.float64)
    names = list(feats)
    tv_pool = tvops.MultiScaleRoIAlign(names, (2, 3), 2, canonical_scale=56)
    vo_pool = visionops.MultiScaleRoIAlign(names, (2, 3), 2, canonical_scale=56)
    boxes = [torch.tensor([[50, 10, 10, 50], [20, 20, 20, 20], [0, 0, 120, 100], [5, 5, 30, 9.0]],
                          dtype=torch.float64), torch.zeros(0, 4, dtype=torch.float64)]
    got = vo_pool(feats, boxes, [IMAGE, IMAGE])
    want = tv_pool(feats, boxes, [IMAGE, IMAGE])
    assert_close(got, want, "float64")
    assert (got[0] == 0).all()
    one = {k: v[:1] for k, v in feats.items()}
    assert_close(vo_pool(one, boxes[:1], [IMAGE]), tv_pool(one, boxes[:1], [IMAGE]), "float64")


@pytest.mark.parametrize("op", ["roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool"])
@pytest.mark.parametrize("seed", SEEDS)
def test_larger_maps(op, seed):
    """A bigger batch and map (3 x 18 x 40 x 52, 120 RoIs), float32."""
    rng = np.random.default_rng(100 + seed)
    x = torch.tensor(rng.normal(size=(3, 18, 40, 52)), dtype=torch.float32)
    rois = torch.tensor(make_rois(rng, 120, 3, 230, 120, np.float64), dtype=torch.float32)
    kw = {"roi_align": dict(sampling_ratio=[-1, 1, 2][seed], aligned=seed == 1),
          "ps_roi_align": dict(sampling_ratio=[-1, 1, 2][seed])}.get(op, {})
    got = getattr(visionops, op)(x, rois, 3, 0.25, **kw)
    want = getattr(tvops, op)(x, rois, 3, 0.25, **kw)
    if op.endswith("pool"):
        assert torch.equal(got, want)
    else:
        assert_close(got, want, "float32")
    got_list = getattr(visionops, op)(x.numpy(), rois_to_list(rois.numpy(), 3), (3, 3), 0.25, **kw)
    np.testing.assert_array_equal(got_list, got.numpy())


@pytest.mark.parametrize("op,channels", [("roi_align", 8), ("roi_pool", 8), ("ps_roi_align", 16),
                                         ("ps_roi_pool", 16)])
def test_noncontiguous_views_and_gradients(op, channels):
    """A strided view of the input requiring grad, and a non-contiguous
    incoming gradient (a permuted tensor) in the backward."""
    rng = np.random.default_rng(21)
    base = torch.tensor(rng.normal(size=(2, 2 * channels, 10, 12)))
    rois = torch.tensor([[0, 1, 1, 9, 7], [1, 0, 2, 11, 9], [1, 3, 3, 4, 4.0]], dtype=torch.float64)
    x_vo, x_tv = base.clone().requires_grad_(), base.clone().requires_grad_()
    got = getattr(visionops, op)(x_vo[:, ::2], rois, 2, 1.0)
    want = getattr(tvops, op)(x_tv[:, ::2].contiguous(), rois, 2, 1.0)
    assert_close(got, want, "float64")
    shape = tuple(got.shape)
    g = torch.tensor(rng.normal(size=shape[::-1])).permute(3, 2, 1, 0)
    assert not g.is_contiguous()
    got.backward(g)
    want.backward(g.contiguous())
    assert_close(x_vo.grad, x_tv.grad, "float64")
