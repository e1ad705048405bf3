"""Where visionops deliberately differs from torchvision (SPEC.md "visionops
improves", README's list of deliberate differences): each test shows what
torchvision does (error, crash, NaN, garbage) and what visionops does
instead. Calls that may crash torchvision run in a subprocess."""
import math
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
import torchvision.ops as tvops  # noqa: E402

import visionops  # noqa: E402
from conftest import assert_close, detections, distinct_scores, run_python  # noqa: E402

# What torchvision does wrong is asserted for torchvision 0.14 (Debian's, the
# suite's reference build); a newer torchvision (the GPU machine's) may have
# fixed some of it, so there only visionops' side is asserted.
TV_REFERENCE = torchvision.__version__.startswith("0.14")


def expect_torchvision(cond, what):
    if TV_REFERENCE:
        assert cond, "torchvision 0.14: " + what


def torchvision_raises(fn, exc=RuntimeError, match=""):
    try:
        fn()
    except exc as e:
        return match in str(e)
    return False

# ---------------------------------------------------------------- rois checks


def test_out_of_range_batch_index():
    """torchvision reads out of bounds: a batch index just past N returns
    garbage, a large one segfaults. visionops raises ValueError."""
    code = textwrap.dedent("""
        import torch, torchvision
        torch.manual_seed(0)
        x = torch.randn(2, 3, 8, 8)
        out = torchvision.ops.roi_align(x, torch.tensor([[%s, 0, 0, 4, 4.]]), 2, 1.0, 2)
        ok = torch.isfinite(out).all() and out.abs().max() < 100
        print("RETURNED", "plausible" if ok else "garbage")
    """)
    for index in ("2", "1000000"):
        proc = run_python(code % index)
        clean_error = proc.returncode == 1 and "Error" in proc.stderr
        # crashed (a signal) or returned data read out of bounds: no clear error
        expect_torchvision(not clean_error and (proc.returncode != 0 or "RETURNED" in proc.stdout),
                           "batch index %s: %s %s" % (index, proc.stdout, proc.stderr[-300:]))
    x = torch.randn(2, 3, 8, 8)
    for bad in (2.0, 1000000.0, -1.0):
        for fn in (visionops.roi_align, visionops.roi_pool, visionops.ps_roi_align,
                   visionops.ps_roi_pool):
            with pytest.raises(ValueError, match="is not a batch index of input with N = 2"):
                fn(x, torch.tensor([[bad, 0, 0, 4, 4.0]]), 1)


@pytest.mark.parametrize("op", ["roi_align", "roi_pool"])
def test_nan_coordinates(op):
    """torchvision silently pools a NaN RoI (zeros); visionops raises."""
    x = torch.randn(1, 3, 8, 8)
    r = torch.tensor([[0, math.nan, 0, 4, 4.0]])
    expect_torchvision(not torchvision_raises(lambda: getattr(tvops, op)(x, r, 2), Exception)
                       and (getattr(tvops, op)(x, r, 2) == 0).all(), "pools a NaN RoI as zeros")
    with pytest.raises(ValueError, match=r"%s: rois\[0, 1\] = nan is not finite" % op):
        getattr(visionops, op)(x, r, 2)


def test_negative_spatial_scale():
    """torchvision computes something for spatial_scale < 0; visionops
    says the scale is invalid."""
    x = torch.randn(1, 2, 8, 8)
    r = torch.tensor([[0, 0, 0, 4, 4.0]])
    expect_torchvision(not torchvision_raises(lambda: tvops.roi_align(x, r, 2, -1.0), Exception),
                       "accepts spatial_scale -1")
    with pytest.raises(ValueError, match="spatial_scale must be finite and > 0, got -1"):
        visionops.roi_align(x, r, 2, -1.0)


def test_roi_align_outside_samples_ignore_nan_inputs():
    """Samples outside the map contribute exactly 0: torchvision multiplies
    a zero weight by input[0, 0] and gets NaN when that value is NaN."""
    x = torch.randn(1, 2, 8, 8)
    x[0, :, 0, 0] = math.nan
    r = torch.tensor([[0, 100, 100, 110, 110.0]])
    expect_torchvision(torch.isnan(tvops.roi_align(x, r, 2, 1.0, 2)).all(), "NaN outside the map")
    got = visionops.roi_align(x, r, 2, 1.0, 2)
    assert (got == 0).all()


# ------------------------------------------------------------------ roi_pool


def test_roi_pool_infinite_maxima():
    """A bin of -inf: torchvision reports -FLT_MAX and argmax -1 (as if
    empty); visionops -inf with the real argmax. A bin of NaN: NaN and -1."""
    x = torch.full((1, 1, 4, 4), -math.inf)
    r = torch.tensor([[0, 0, 0, 3, 3.0]])
    tv_out, tv_am = torch.ops.torchvision.roi_pool(x, r, 1.0, 1, 1)
    expect_torchvision(tv_out.item() == -torch.finfo(torch.float32).max and tv_am.item() == -1,
                       "a bin of -inf gives -FLT_MAX and argmax -1")
    out, am = torch.ops.visionops.roi_pool(x, r, 1.0, 1, 1)
    assert out.item() == -math.inf and am.item() == 0
    out, am = torch.ops.visionops.roi_pool(torch.full((1, 1, 4, 4), math.nan), r, 1.0, 1, 1)
    assert math.isnan(out.item()) and am.item() == -1


# -------------------------------------------------------------- ps_roi_align


def test_ps_roi_align_degenerate_roi_is_zero():
    """A zero-width RoI under adaptive sampling: torchvision divides 0 by 0
    (NaN); visionops returns 0. Other RoIs agree."""
    x = torch.randn(1, 8, 8, 8)
    r = torch.tensor([[0, 2, 2, 2, 6.0], [0, 1, 1, 6, 5]])
    want = tvops.ps_roi_align(x, r, 2, 1.0, -1)
    got = visionops.ps_roi_align(x, r, 2, 1.0, -1)
    expect_torchvision(torch.isnan(want[0]).all(), "NaN for a degenerate RoI")
    assert (got[0] == 0).all()
    assert_close(got[1], want[1], "float32")


# --------------------------------------------------------------- ps_roi_pool


def test_ps_roi_pool_backward_is_the_gradient():
    """torchvision's ps_roi_pool backward clamps bins to H/W while its
    forward clamps to H-1/W-1, so for a RoI reaching the last row/column its
    backward is not the forward's gradient (gradcheck fails); visionops'
    is (gradcheck passes), and both forwards agree."""
    x = torch.randn(1, 4, 5, 6, dtype=torch.float64, requires_grad=True)
    r = torch.tensor([[0, 0, 0, 5.9, 4.9]], dtype=torch.float64)  # covers the whole map
    assert_close(visionops.ps_roi_pool(x, r, 2), tvops.ps_roi_pool(x, r, 2), "float64")
    expect_torchvision(not torch.autograd.gradcheck(lambda t: tvops.ps_roi_pool(t, r, 2), (x,),
                                                    raise_exception=False),
                       "backward is not the forward's gradient at the last row/column")
    assert torch.autograd.gradcheck(lambda t: visionops.ps_roi_pool(t, r, 2), (x,))


# ----------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_nms_half_precision(dtype, rng):
    """torchvision 0.14's CPU nms has no float16/bfloat16 kernel; visionops
    computes in float32 and matches torchvision on the upcast boxes."""
    boxes = torch.from_numpy(detections(rng, 200, np.float32, spread=150) / 4).to(dtype)
    scores = torch.from_numpy(distinct_scores(rng, 200, np.float32)).to(dtype)
    expect_torchvision(torchvision_raises(lambda: tvops.nms(boxes, scores, 0.5),
                                          match="not implemented"), "no half-precision CPU nms")
    got = visionops.nms(boxes, scores, 0.5)
    # distinct in float32 but maybe tied in dtype: break ties by index for torchvision
    order = np.argsort(-scores.float().numpy(), kind="stable")
    tie_free = np.empty(200, np.float32)
    tie_free[order] = np.linspace(1, 0, 200)
    want = tvops.nms(boxes.float(), torch.from_numpy(tie_free), 0.5)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    idxs = torch.from_numpy(rng.integers(0, 3, 200))
    want = tvops.batched_nms(boxes.float(), torch.from_numpy(tie_free), idxs, 0.5)
    np.testing.assert_array_equal(visionops.batched_nms(boxes, scores, idxs, 0.5).numpy(),
                                  want.numpy())


def test_bfloat16_roi_ops(rng):
    """torchvision 0.14's CPU RoI kernels have no bfloat16; visionops runs
    them (accumulating in float32) within bfloat16 rounding of float32."""
    x = torch.from_numpy(rng.normal(size=(2, 8, 9, 10))).to(torch.bfloat16)
    r = torch.tensor([[0, 1, 1, 12, 15], [1, 3, 2, 18, 9.0]]).to(torch.bfloat16)
    for op in ("roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool"):
        expect_torchvision(torchvision_raises(lambda: getattr(tvops, op)(x, r, 2, 0.5),
                                              match="not implemented for 'BFloat16'"),
                           "no bfloat16 CPU " + op)
        got = getattr(visionops, op)(x, r, 2, 0.5)
        assert got.dtype == torch.bfloat16
        want = getattr(tvops, op)(x.float(), r.float(), 2, 0.5)
        assert_close(got.float(), want, rtol=1e-2, atol=1e-2, what=op)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_deform_conv2d_half_precision(dtype, rng):
    """torchvision 0.14's CPU deform_conv2d fails in float16/bfloat16;
    visionops computes in float32 and rounds once."""
    x = torch.from_numpy(rng.normal(size=(1, 4, 6, 6)) * 0.25).to(dtype)
    off = torch.from_numpy(rng.normal(size=(1, 18, 4, 4))).to(dtype)
    w = torch.from_numpy(rng.normal(size=(2, 4, 3, 3))).to(dtype)
    expect_torchvision(torchvision_raises(lambda: tvops.deform_conv2d(x, off, w),
                                          match="not implemented"),
                       "no half-precision CPU deform_conv2d")
    got = visionops.deform_conv2d(x, off, w)
    assert got.dtype == dtype
    want = tvops.deform_conv2d(x.float(), off.float(), w.float())
    tol = 5e-3 if dtype == torch.float16 else 3e-2
    assert_close(got.float(), want, rtol=tol, atol=tol)


# --------------------------------------------------------------- batched_nms


def test_batched_nms_negative_coordinates():
    """torchvision's coordinate-offset trick (used below 1000 boxes on the
    CPU) is exact only for coordinates >= -1: here it shifts class 1's box
    exactly onto class 0's and suppresses it across classes. visionops runs
    NMS per class natively."""
    boxes = torch.tensor([[0, 0, 10, 10], [-11, -11, -1, -1.0]])
    scores = torch.tensor([0.9, 0.8])
    idxs = torch.tensor([0, 1])
    expect_torchvision(tvops.batched_nms(boxes, scores, idxs, 0.5).tolist() == [0],
                       "the coordinate trick suppresses across classes")
    assert visionops.batched_nms(boxes, scores, idxs, 0.5).tolist() == [0, 1]
    # the per-class definition: each class's box survives its own NMS
    for c in (0, 1):
        assert tvops.nms(boxes[idxs == c], scores[idxs == c], 0.5).tolist() == [0]


def test_nms_stable_ties():
    """Tied scores: visionops keeps them in index order (a stable sort);
    torchvision's sort gives no such promise."""
    boxes = torch.tensor([[0, 0, 10, 10], [20, 20, 30, 30], [1, 1, 11, 11], [40, 40, 50, 50.0]])
    scores = torch.full((4,), 0.5)
    assert visionops.nms(boxes, scores, 0.3).tolist() == [0, 1, 3]
    assert visionops.nms(boxes.flip(0), scores, 0.3).tolist() == [0, 1, 2]


@pytest.mark.parametrize("op", ["roi_align", "ps_roi_align"])
def test_float16_accumulates_in_float32(op, rng):
    """torchvision's CPU float16 kernels accumulate in float16; visionops
    accumulates in float32 and rounds once: with large RoIs (many samples
    per bin) it is several times closer to the float32 result."""
    x = torch.from_numpy(rng.uniform(0.5, 1.5, size=(1, 4, 64, 64))).half()
    r = torch.tensor([[0, 0, 0, 63, 63], [0, 3, 5, 60, 50.0]]).half()
    exact = getattr(tvops, op)(x.float(), r.float(), 2, 1.0, -1)
    tv_err = (getattr(tvops, op)(x, r, 2, 1.0, -1).float() - exact).abs().max().item()
    vo_err = (getattr(visionops, op)(x, r, 2, 1.0, -1).float() - exact).abs().max().item()
    assert vo_err <= 1e-3  # one float16 rounding of a value near 1
    expect_torchvision(tv_err > 4 * vo_err, "float16 accumulation error %g vs %g"
                       % (tv_err, vo_err))


def test_deform_conv2d_nan_offsets():
    """A NaN offset: torchvision's CPU kernel crashes (segfault in 0.14);
    visionops samples 0 there, as for a tap moved off the map."""
    code = textwrap.dedent("""
        import torch, torchvision
        torch.manual_seed(0)
        x, w, off = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3), torch.randn(1, 18, 3, 3)
        off[0, 4, 1, 1] = float("nan")
        out = torchvision.ops.deform_conv2d(x, off, w)
        print("RETURNED", bool(torch.isfinite(out).all()))
    """)
    proc = run_python(code)
    expect_torchvision(proc.returncode != 0 and "Error" not in proc.stderr,
                       "crashes on a NaN offset: rc %d %s" % (proc.returncode, proc.stderr[-300:]))
    torch.manual_seed(0)
    x, w, off = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3), torch.randn(1, 18, 3, 3)
    off[0, 4, 1, 1] = math.nan  # dy of tap 2 at output (1, 1)
    got = visionops.deform_conv2d(x, off, w)
    off_far = off.clone()
    off_far[0, 4, 1, 1] = 1e6  # the same tap moved far off the map
    assert torch.isfinite(got).all()
    assert_close(got, tvops.deform_conv2d(x, off_far, w), "float32")


def test_deform_conv2d_backward_always_five_gradients():
    """The registered backward returns all five gradients: without a mask,
    grad_mask is zeros of the mask's shape; grad_bias is the sum of grad even
    without a bias."""
    torch.manual_seed(1)
    x, w, off = torch.randn(2, 2, 5, 5), torch.randn(3, 2, 3, 3), torch.randn(2, 18, 3, 3)
    g = torch.randn(2, 3, 3, 3)
    gi, gw, go, gm, gb = torch.ops.visionops.deform_conv2d_backward(
        g, x, w, off, None, None, 1, 1, 0, 0, 1, 1, 1, 1, False)
    assert gm.shape == (2, 9, 3, 3) and (gm == 0).all()
    assert_close(gb, g.sum((0, 2, 3)), "float32")
    xr, wr, offr = (t.clone().requires_grad_() for t in (x, w, off))
    tvops.deform_conv2d(xr, offr, wr).backward(g)
    for got, want in ((gi, xr.grad), (gw, wr.grad), (go, offr.grad)):
        assert_close(got, want, "float32", rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="deform_conv2d: use_mask is True but mask is None"):
        torch.ops.visionops.deform_conv2d(x, w, off, None, None, 1, 1, 0, 0, 1, 1, 1, 1, True)
