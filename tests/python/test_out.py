"""out= (issue 18): roi_align, roi_pool, ps_roi_align, ps_roi_pool, box_iou
and deform_conv2d write their result into the caller's buffer and return it,
on NumPy arrays and on torch tensors, with the same values as without out=;
a wrong shape, dtype, layout or an out that overlaps an input is a clear
error that writes nothing, and on torch out= records no gradient (torch's
rule), so asking for one is an error."""
import numpy as np
import pytest

import visionops
from conftest import HAVE_TORCH, detections, make_rois, needs_torch, rois_to_list

if HAVE_TORCH:
    import torch


def _inputs(rng):
    feat = rng.standard_normal((2, 18, 24, 20)).astype(np.float32)
    rois = make_rois(rng, 7, 2, 20, 14)
    boxes = detections(rng, 9, np.float32, spread=40)
    weight = rng.standard_normal((5, 18, 3, 3)).astype(np.float32)
    offset = rng.uniform(-2, 2, (2, 18, 24, 20)).astype(np.float32)
    mask = rng.uniform(0, 1, (2, 9, 24, 20)).astype(np.float32)
    return feat, rois, boxes, weight, offset, mask


# (name, call(lib_inputs, out) -> result): each call with out=None is the
# plain function.
CASES = {
    "roi_align": lambda x, r, b, w, o, m, out: visionops.roi_align(x, r, (3, 2), 0.5, 2, True,
                                                                    out=out),
    "roi_align_list": lambda x, r, b, w, o, m, out: visionops.roi_align(
        x, rois_to_list(r, 2), 3, 0.5, -1, False, out=out),
    "roi_pool": lambda x, r, b, w, o, m, out: visionops.roi_pool(x, r, 3, 0.5, out=out),
    "ps_roi_align": lambda x, r, b, w, o, m, out: visionops.ps_roi_align(x, r, 3, 0.5, 2, out=out),
    "ps_roi_pool": lambda x, r, b, w, o, m, out: visionops.ps_roi_pool(x, r, 3, 0.5, out=out),
    "box_iou": lambda x, r, b, w, o, m, out: visionops.box_iou(b, b[:4], out=out),
    "box_iou_cxcywh": lambda x, r, b, w, o, m, out: visionops.box_iou(b, b[2:], "cxcywh", out=out),
    "deform_conv2d": lambda x, r, b, w, o, m, out: visionops.deform_conv2d(x, o, w, padding=1,
                                                                            mask=m, out=out),
}


def _torch_inputs(arrays):
    return [torch.from_numpy(a) for a in arrays]


@pytest.mark.parametrize("case", sorted(CASES))
def test_out_numpy(rng, case):
    args = _inputs(rng)
    want = CASES[case](*args, None)
    out = np.full(want.shape, np.nan, want.dtype)
    got = CASES[case](*args, out)
    assert got is out
    np.testing.assert_array_equal(out, want)
    # Reused: a second call into the same buffer.
    assert CASES[case](*args, out) is out
    np.testing.assert_array_equal(out, want)


@needs_torch
@pytest.mark.parametrize("case", sorted(CASES))
def test_out_torch(rng, case):
    args = _torch_inputs(_inputs(rng))
    want = CASES[case](*args, None)
    out = torch.full(want.shape, float("nan"), dtype=want.dtype)
    version = out._version
    got = CASES[case](*args, out)
    assert got is out
    assert out._version > version  # autograd sees the write
    torch.testing.assert_close(out, want, rtol=0, atol=0)


@needs_torch
def test_out_torch_into_numpy_inputs(rng):
    """A torch out beside NumPy inputs is written too (both are DLPack)."""
    x, r = _inputs(rng)[:2]
    out = torch.empty(7, 18, 3, 3)
    visionops.roi_align(x, r, 3, 0.5, 2, True, out=out)
    np.testing.assert_array_equal(out.numpy(), visionops.roi_align(x, r, 3, 0.5, 2, True))


def _bad_outs(make):
    """(out, exception, message part) for a roi_align result of [7, 18, 3, 3]
    float32; `make(shape, dtype_name)` makes a tensor of the framework."""
    wide = make((7, 18, 3, 6), "float32")
    return [
        (make((7, 18, 3, 4), "float32"), ValueError, "out must have shape [7, 18, 3, 3]"),
        (make((7, 18, 3, 3), "float64"), TypeError, "out must have dtype float32, got float64"),
        (wide[..., ::2], ValueError, "must be contiguous"),
        ("not a tensor", TypeError, "out must be"),
    ]


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_out_errors(rng, framework):
    if framework == "torch":
        pytest.importorskip("torch")
        make = lambda shape, dt: torch.full(shape, 7.0, dtype=getattr(torch, dt))
        x, r = _torch_inputs(_inputs(rng)[:2])
    else:
        make = lambda shape, dt: np.full(shape, 7.0, dt)
        x, r = _inputs(rng)[:2]
    for out, exc, message in _bad_outs(make):
        with pytest.raises(exc, match=message.replace("[", r"\[").replace("]", r"\]")):
            visionops.roi_align(x, r, 3, 0.5, 2, True, out=out)
        if not isinstance(out, str):
            assert (out == 7).all(), "a refused out is left as it was"
    # An out that is the memory of an input.
    alias = x.reshape(-1)[:7 * 18 * 9].reshape(7, 18, 3, 3)
    with pytest.raises(ValueError, match="overlaps the memory of input input"):
        visionops.roi_align(x, r, 3, 0.5, 2, True, out=alias)
    # box_iou's batched form is one call per slice: out= takes 2-D boxes.
    b = detections(rng, 4, np.float32)
    with pytest.raises(ValueError, match="out= takes 2-D boxes"):
        visionops.box_iou(b[None], b[None], out=np.empty((1, 4, 4), np.float32))


@needs_torch
def test_out_records_no_gradient(rng):
    x, r = _torch_inputs(_inputs(rng)[:2])
    x.requires_grad_()
    out = torch.empty(7, 18, 3, 3)
    with pytest.raises(ValueError, match="out= does not record gradients"):
        visionops.roi_align(x, r, 3, 0.5, 2, True, out=out)
    with pytest.raises(ValueError, match="out= does not record gradients"):
        visionops.roi_align(x.detach(), r, 3, 0.5, 2, True, out=out.requires_grad_())
    with torch.no_grad():  # nothing to record: allowed
        got = visionops.roi_align(x, r, 3, 0.5, 2, True, out=torch.empty(7, 18, 3, 3))
    torch.testing.assert_close(got, visionops.roi_align(x, r, 3, 0.5, 2, True).detach())
    with torch.inference_mode():
        out = torch.empty(7, 18, 3, 3)
        visionops.roi_align(x, r, 3, 0.5, 2, True, out=out)
    torch.testing.assert_close(out, got)


@needs_torch
def test_out_saved_tensor_overwritten_is_an_error(rng):
    """A tensor autograd saved, overwritten through out=, fails the backward
    (torch's version check) instead of giving a wrong gradient."""
    x, r = _torch_inputs(_inputs(rng)[:2])
    feat = x.clone().requires_grad_()
    y = feat * 1.0
    z = (y * y).sum()  # saves y
    with torch.no_grad():
        visionops.roi_align(x, r, 3, 0.5, 2, True, out=y[:7].reshape(-1)[:7 * 18 * 9]
                            .view(7, 18, 3, 3))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_out_large_fresh_outputs_match(rng):
    """Outputs over 4 MiB (which the binding asks to back with huge pages)
    equal the values written into a reused buffer."""
    x = rng.standard_normal((1, 64, 64, 64)).astype(np.float32)
    r = make_rois(rng, 400, 1, 60, 40)
    want = visionops.roi_align(x, r, 7, 1.0, 2, True)
    assert want.nbytes > 4 << 20
    out = np.empty_like(want)
    np.testing.assert_array_equal(visionops.roi_align(x, r, 7, 1.0, 2, True, out=out), want)
    if HAVE_TORCH:
        got = visionops.roi_align(torch.from_numpy(x), torch.from_numpy(r), 7, 1.0, 2, True)
        np.testing.assert_array_equal(got.numpy(), want)


def test_outputs_past_out_are_new_numpy_arrays():
    """An out for some outputs only (the binding's run_numpy): the others
    are new NumPy arrays, made by the extension."""
    from visionops import _core

    b = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [5, 5, 6, 6]], np.float32)
    s = np.array([1, 0.5, 0.2], np.float32)
    keep = np.full(3, 7, np.int64)
    got, num_kept = _core.run_numpy("nms", [b, s, 0.5], outs=(keep,))
    assert got is keep and list(keep) == [0, 2, -1]
    assert isinstance(num_kept, np.ndarray) and num_kept.dtype == np.int64 and int(num_kept) == 2
