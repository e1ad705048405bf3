"""Bad inputs raise ValueError (shapes, values) or TypeError (dtypes) with
the C library's message naming the op and the argument; the inputs are left
untouched and nothing is returned. NumPy cases run without torch."""
import math

import numpy as np
import pytest

import visionops
from conftest import HAVE_TORCH, needs_torch

X = np.random.default_rng(0).normal(size=(2, 4, 8, 8)).astype(np.float32)
R = np.array([[0, 0, 0, 4, 4], [1, 1, 1, 5, 5]], np.float32)
B = np.array([[0, 0, 1, 1], [0, 0, 2, 2], [1, 1, 3, 3]], np.float32)
S = np.array([0.5, 0.4, 0.3], np.float32)


class NumpyInputs:
    """The cases' inputs as NumPy arrays."""

    def __init__(self):
        self.X, self.R, self.B, self.S = X.copy(), R.copy(), B.copy(), S.copy()

    def zeros(self, *shape, dtype="float32"):
        return np.zeros(shape, dtype)

    def cast(self, a, dtype):
        return a.astype(dtype)

    def rois_with(self, row, col, value):
        r = self.cast(self.R, "float32")
        r[row, col] = value
        return r

    def unchanged(self):
        for a, b in zip((self.X, self.R, self.B, self.S), (X, R, B, S)):
            np.testing.assert_array_equal(np.asarray(a), b)


class TorchInputs(NumpyInputs):
    """The same inputs as torch tensors (X optionally requiring grad, so
    the autograd kernels are exercised too)."""

    def __init__(self, requires_grad):
        self.X, self.R, self.B, self.S = (torch.from_numpy(a.copy()) for a in (X, R, B, S))
        self.X.requires_grad_(requires_grad)

    def zeros(self, *shape, dtype="float32"):
        return torch.zeros(shape, dtype=getattr(torch, dtype))

    def cast(self, a, dtype):
        return a.detach().to(getattr(torch, dtype), copy=True)

    def unchanged(self):
        for a, b in zip((self.X, self.R, self.B, self.S), (X, R, B, S)):
            np.testing.assert_array_equal(a.detach().numpy(), b)


# (id, exception, message regex, call(inputs))
CASES = [
    ("roi_align batch index too big", ValueError,
     r"roi_align: rois\[1, 0\] = 2 is not a batch index of input with N = 2",
     lambda a: visionops.roi_align(a.X, a.rois_with(1, 0, 2), 2)),
    ("roi_align negative batch index", ValueError, r"roi_align: rois\[0, 0\] = -1 is not a batch",
     lambda a: visionops.roi_align(a.X, a.rois_with(0, 0, -1), 2)),
    ("roi_align fractional batch index", ValueError, r"roi_align: rois\[0, 0\] = 0.5",
     lambda a: visionops.roi_align(a.X, a.rois_with(0, 0, 0.5), 2)),
    ("roi_align NaN coordinate", ValueError, r"roi_align: rois\[0, 3\] = nan is not finite",
     lambda a: visionops.roi_align(a.X, a.rois_with(0, 3, math.nan), 2)),
    ("roi_pool inf coordinate", ValueError, r"roi_pool: rois\[1, 2\] = inf is not finite",
     lambda a: visionops.roi_pool(a.X, a.rois_with(1, 2, math.inf), 2)),
    ("ps_roi_align batch index", ValueError, r"ps_roi_align: rois\[0, 0\] = 7 is not a batch",
     lambda a: visionops.ps_roi_align(a.X, a.rois_with(0, 0, 7), 2)),
    ("ps_roi_pool NaN", ValueError, r"ps_roi_pool: rois\[1, 4\] = nan is not finite",
     lambda a: visionops.ps_roi_pool(a.X, a.rois_with(1, 4, math.nan), 2)),
    ("multi_scale batch index", ValueError, r"multi_scale_roi_align: rois\[0, 0\] = 3",
     lambda a: visionops.multi_scale_roi_align([a.X], a.rois_with(0, 0, 3), [0.5], 2, 2)),
    ("roi boxes [K, 4] tensor", ValueError, r"boxes: expected a \[K, 5\] tensor",
     lambda a: visionops.roi_align(a.X, a.R[:, 1:], 2)),
    ("roi boxes list of [L, 5]", ValueError,
     r"boxes: each tensor of the list must have shape \[L, 4\]",
     lambda a: visionops.roi_pool(a.X, [a.R], 2)),
    ("roi_align negative output size", ValueError, r"roi_align: pooled_height must be >= 1, got -1",
     lambda a: visionops.roi_align(a.X, a.R, -1)),
    ("roi_pool zero output width", ValueError, r"roi_pool: pooled_width must be >= 1, got 0",
     lambda a: visionops.roi_pool(a.X, a.R, (2, 0))),
    ("roi_align bad spatial_scale", ValueError, r"roi_align: spatial_scale must be finite and > 0",
     lambda a: visionops.roi_align(a.X, a.R, 2, -0.5)),
    ("roi_align 3-d input", ValueError, r"roi_align: input must have shape \[N, C, H, W\]",
     lambda a: visionops.roi_align(a.X[0], a.R, 2)),
    ("ps_roi_align channels", ValueError,
     r"ps_roi_align: input has C = 4 channels, which is not a multiple of pooled_height \* "
     r"pooled_width = 9", lambda a: visionops.ps_roi_align(a.X, a.R, 3)),
    ("ps_roi_pool channels", ValueError, r"ps_roi_pool: input has C = 4 channels",
     lambda a: visionops.ps_roi_pool(a.X, a.R, (1, 3))),
    ("nms boxes [N, 5]", ValueError, r"nms: boxes must have shape \[N, 4\], got \[3, 5\]",
     lambda a: visionops.nms(a.zeros(3, 5), a.S, 0.5)),
    ("nms scores length", ValueError, r"nms: scores must have shape \[3\], got \[2\]",
     lambda a: visionops.nms(a.B, a.S[:2], 0.5)),
    ("nms NaN threshold", ValueError, r"nms: iou_threshold must be a number, got nan",
     lambda a: visionops.nms(a.B, a.S, math.nan)),
    ("batched_nms idxs length", ValueError, r"batched_nms: idxs must have shape \[3\], got \[2\]",
     lambda a: visionops.batched_nms(a.B, a.S, a.zeros(2, dtype="int64"), 0.5)),
    ("box_iou [N, 3]", ValueError, r"box_iou: boxes1 must have shape \[N, 4\], got \[3, 3\]",
     lambda a: visionops.box_iou(a.B[:, :3], a.B)),
    ("complete_box_iou boxes2 1-d", ValueError,
     r"complete_box_iou: boxes2 must have shape \[\.\.\., M, 4\], got \[4\]",
     lambda a: visionops.complete_box_iou(a.B, a.B[0])),
    ("deform_conv2d offset size", ValueError,
     r"deform_conv2d: offset must have spatial size Hout x Wout = 6x6, got 5x6",
     lambda a: visionops.deform_conv2d(a.X, a.zeros(2, 18, 5, 6), a.zeros(3, 4, 3, 3))),
    ("deform_conv2d mask channels", ValueError, r"deform_conv2d: mask has 8 channels",
     lambda a: visionops.deform_conv2d(a.X, a.zeros(2, 18, 6, 6), a.zeros(3, 4, 3, 3),
                                       mask=a.zeros(2, 8, 6, 6))),
    ("deform_conv2d bias shape", ValueError,
     r"deform_conv2d: bias must have shape \[3\], got \[2\]",
     lambda a: visionops.deform_conv2d(a.X, a.zeros(2, 18, 6, 6), a.zeros(3, 4, 3, 3),
                                       a.zeros(2))),
    ("deform_conv2d groups", ValueError, r"deform_conv2d: weight has 3 input channels per group",
     lambda a: visionops.deform_conv2d(a.X, a.zeros(2, 18, 6, 6), a.zeros(3, 3, 3, 3))),
    ("deform_conv2d stride 0", ValueError, r"deform_conv2d: stride_h must be >= 1, got 0",
     lambda a: visionops.deform_conv2d(a.X, a.zeros(2, 18, 6, 6), a.zeros(3, 4, 3, 3), stride=0)),
    ("multi_scale scale not a power of two", ValueError,
     r"multi_scale_roi_align: scales\[0\] = 0.3 is not a power of two",
     lambda a: visionops.multi_scale_roi_align([a.X], a.R, [0.3], 2, 2)),
    ("multi_scale scales count", ValueError, r"multi_scale_roi_align: scales has 2 values for 1",
     lambda a: visionops.multi_scale_roi_align([a.X], a.R, [0.5, 0.25], 2, 2)),
    ("MultiScaleRoIAlign missing maps", ValueError, r"none of the feature maps \['z'\]",
     lambda a: visionops.MultiScaleRoIAlign(["z"], 2, 2)({"a": a.X}, [a.R[:, 1:]], [(16, 16)])),
    # plainly wrong Python arguments: the op and the argument named, not an
    # AttributeError from deep inside
    ("box_iou list of lists", TypeError,
     r"box_iou: boxes1 must be a tensor \(a torch.Tensor or a NumPy array\), got a list of list",
     lambda a: visionops.box_iou([[0, 0, 1, 1]], a.B)),
    ("generalized_box_iou None", TypeError, r"generalized_box_iou: boxes2 must be a tensor .*None",
     lambda a: visionops.generalized_box_iou(a.B, None)),
    ("nms boxes None", TypeError, r"nms: boxes must be a tensor .*got None",
     lambda a: visionops.nms(None, a.S, 0.5)),
    ("nms scores list", TypeError, r"nms: scores must be a tensor .*got a list of float",
     lambda a: visionops.nms(a.B, [0.5, 0.4, 0.3], 0.5)),
    ("batched_nms idxs None", TypeError, r"batched_nms: idxs must be a tensor .*got None",
     lambda a: visionops.batched_nms(a.B, a.S, None, 0.5)),
    ("roi_align boxes None", TypeError,
     r"roi_align: boxes must be a \[K, 5\] tensor or a list of \[L, 4\] tensors, got None",
     lambda a: visionops.roi_align(a.X, None, 2)),
    ("roi_pool boxes list of lists", TypeError,
     r"roi_pool: boxes must be .* got a list whose item 0 is a list of int",
     lambda a: visionops.roi_pool(a.X, [[0, 0, 1, 1]], 2)),
    ("ps_roi_align input None", TypeError, r"ps_roi_align: input must be a tensor .*got None",
     lambda a: visionops.ps_roi_align(None, a.R, 2)),
    ("multi_scale features tensor", TypeError,
     r"multi_scale_roi_align: features must be a list of \[N, C, H, W\] tensors",
     lambda a: visionops.multi_scale_roi_align(a.X, a.R, [0.5], 2, 2)),
    ("deform_conv2d offset 17 channels", ValueError,
     r"deform_conv2d: offset has 17 channels; it must have 2 \* offset_groups \* kernel_h \* "
     r"kernel_w channels, a positive multiple of 2 \* 3 \* 3 = 18",
     lambda a: visionops.deform_conv2d(a.X, a.zeros(2, 17, 6, 6), a.zeros(3, 4, 3, 3))),
    ("deform_conv2d offset groups", ValueError,
     r"deform_conv2d: offset has 54 channels = 2 \* 3 offset groups \* 3 \* 3, and 3 offset "
     r"groups do not divide the input's 4 channels",
     lambda a: visionops.deform_conv2d(a.X, a.zeros(2, 54, 6, 6), a.zeros(3, 4, 3, 3))),
    ("deform_conv2d output channels", ValueError,
     r"deform_conv2d: weight has 3 output channels, not divisible by the 2 groups",
     lambda a: visionops.deform_conv2d(a.X, a.zeros(2, 18, 6, 6), a.zeros(3, 2, 3, 3))),
    ("deform_conv2d offset 0 channels", ValueError, r"deform_conv2d: offset has 0 channels",
     lambda a: visionops.deform_conv2d(a.X, a.zeros(2, 0, 6, 6), a.zeros(3, 4, 3, 3))),
    ("deform_conv2d mask list", TypeError, r"deform_conv2d: mask must be a tensor",
     lambda a: visionops.deform_conv2d(a.X, a.zeros(2, 18, 6, 6), a.zeros(3, 4, 3, 3),
                                       mask=[1.0])),
    # dtypes
    ("nms integer boxes", TypeError,
     r"nms: boxes must be float32, float64, float16 or bfloat16, got int32",
     lambda a: visionops.nms(a.cast(a.B, "int32"), a.cast(a.S, "int32"), 0.5)),
    ("box_iou float32 and bool boxes", TypeError,
     r"box_iou: boxes2 .*bool",
     lambda a: visionops.box_iou(a.B, a.cast(a.B, "bool"))),
    ("box_iou bool boxes", TypeError, r"box_iou: boxes1 .*bool",
     lambda a: visionops.box_iou(a.cast(a.B, "bool"), a.cast(a.B, "bool"))),
    ("nms complex boxes", TypeError, r"nms: boxes has unsupported dtype complex64",
     lambda a: visionops.nms(a.cast(a.B, "complex64"), a.S, 0.5)),
    ("roi_align complex input", TypeError, r"roi_align: input has unsupported dtype complex128",
     lambda a: visionops.roi_align(a.cast(a.X, "complex128"), a.R, 2)),
    ("roi_pool bool input", TypeError, r"roi_pool: input .*bool",
     lambda a: visionops.roi_pool(a.cast(a.X, "bool"), a.R, 2)),
    ("deform_conv2d bool weight", TypeError, r"deform_conv2d: weight .*bool",
     lambda a: visionops.deform_conv2d(a.X, a.zeros(2, 18, 6, 6), a.zeros(3, 4, 3, 3,
                                                                           dtype="bool"))),
    ("nms integer scores", TypeError,
     r"nms: scores must be float32, float64, float16 or bfloat16 \(any floating dtype beside "
     r"boxes's float32\), got int64",
     lambda a: visionops.nms(a.B, a.cast(a.S, "int64"), 0.5)),
    ("batched_nms float idxs", TypeError, r"batched_nms: idxs must be int64, got float32",
     lambda a: visionops.batched_nms(a.B, a.S, a.S, 0.5)),
    ("roi_align integer rois", TypeError,
     r"roi_align: rois must be float32, float64, float16 or bfloat16 \(any floating dtype "
     r"beside input's float32\), got int64",
     lambda a: visionops.roi_align(a.X, a.cast(a.R, "int64"), 2)),
    ("roi_pool integer input", TypeError, r"roi_pool: input must be float32",
     lambda a: visionops.roi_pool(a.cast(a.X, "int32"), a.cast(a.R, "int32"), 2)),
    ("deform_conv2d mixed dtypes", TypeError, r"deform_conv2d: offset must have the dtype of input",
     lambda a: visionops.deform_conv2d(a.X, a.zeros(2, 18, 6, 6, dtype="float64"),
                                       a.zeros(3, 4, 3, 3))),
]


@pytest.mark.parametrize("exc,pattern,call", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_numpy_errors(exc, pattern, call):
    a = NumpyInputs()
    with pytest.raises(exc, match=pattern):
        call(a)
    a.unchanged()  # nothing written to the inputs


def test_not_a_tensor():
    with pytest.raises(TypeError, match=r"box_iou: boxes1 must be a tensor .*got a str"):
        visionops.box_iou("boxes", B)
    with pytest.raises(TypeError, match=r"box_iou: argument 0 has unsupported type str"):
        visionops._core.run_numpy("box_iou", ["boxes", B])


def test_rois_wrong_width_through_the_c_library():
    with pytest.raises(ValueError, match=r"roi_align: rois must have shape \[K, 5\], got \[2, 6\]"):
        visionops._core.run_numpy("roi_align", [X, np.zeros((2, 6), np.float32), 1.0, 2, 2, -1,
                                                False])


def test_error_types_are_distinct():
    """ValueError for values, TypeError for dtypes (not RuntimeError)."""
    with pytest.raises(ValueError) as e:
        visionops.roi_align(X, NumpyInputs().rois_with(0, 0, 5), 2)
    assert not isinstance(e.value, TypeError)
    with pytest.raises(TypeError) as e:
        visionops.nms(B.astype(np.int64), S, 0.5)
    assert not isinstance(e.value, ValueError)


def test_no_partial_output_on_error():
    """An error in the middle of the rois (row 5 of 8) returns nothing; the
    next call with good rois works normally."""
    r = np.tile(R, (4, 1))
    r[5, 0] = 9
    with pytest.raises(ValueError, match=r"rois\[5, 0\] = 9"):
        visionops.roi_align(X, r, 2)
    r[5, 0] = 1
    assert visionops.roi_align(X, r, 2).shape == (8, 4, 2, 2)


# ------------------------------------------------------------------ torch

if HAVE_TORCH:
    import torch


@needs_torch
@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("exc,pattern,call", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_torch_errors(exc, pattern, call, requires_grad):
    """The same cases on torch tensors (the registered ops' CPU kernels,
    through autograd when the input requires grad)."""
    a = TorchInputs(requires_grad)
    with pytest.raises(exc, match=pattern):
        call(a)
    a.unchanged()


@needs_torch
def test_torch_error_messages():
    x = torch.from_numpy(X.copy())
    r = torch.from_numpy(R.copy())
    with pytest.raises(ValueError, match=r"roi_align: rois\[1, 0\] = 2 is not a batch index"):
        visionops.roi_align(x.requires_grad_(),
                            torch.tensor([[0, 0, 0, 1, 1], [2, 0, 0, 1, 1.]]), 2)
    with pytest.raises(ValueError, match=r"roi_pool: rois\[0, 1\] = nan"):
        visionops.roi_pool(x.detach(), torch.tensor([[0, math.nan, 0, 1, 1.]]), 2)
    with pytest.raises(TypeError, match=r"roi_align: rois must be float32, .*got int64"):
        visionops.roi_align(x.detach(), r.long(), 2)
    with pytest.raises(TypeError, match=r"nms: boxes must be float32"):
        visionops.nms(torch.tensor([[0, 0, 1, 1]]), torch.tensor([1]), 0.5)
    with pytest.raises(TypeError, match=r"nms: scores must be float32, .*got int64"):
        visionops.nms(torch.zeros(2, 4, dtype=torch.float64), torch.zeros(2, dtype=torch.int64),
                      0.5)
    with pytest.raises(ValueError, match=r"deform_conv2d: weight has 3 input channels per group"):
        visionops.deform_conv2d(x.detach(), torch.zeros(2, 18, 6, 6), torch.zeros(3, 3, 3, 3))
    with pytest.raises(ValueError, match=r"roi_pool_backward: argmax\[0, 0, 0, 0\] = 999"):
        torch.ops.visionops.roi_pool_backward(torch.zeros(2, 4, 2, 2), r,
                                              torch.full((2, 4, 2, 2), 999, dtype=torch.int32),
                                              1.0, 2, 2, 2, 4, 8, 8)
    with pytest.raises(ValueError, match=r"ps_roi_align_backward: channel_mapping"):
        torch.ops.visionops.ps_roi_align_backward(torch.zeros(2, 1, 2, 2), r,
                                                  torch.zeros(2, 1, 2, 2, dtype=torch.int32),
                                                  1.0, 2, 2, -1, 2, 4, 8, 8)


@needs_torch
def test_mixed_devices_are_an_error():
    """SPEC 5: mixing devices is a clear error (torchvision: 'Expected all
    tensors to be on the same device'). A CPU tensor with a Meta tensor must
    not come back as an uninitialised CPU result."""
    with pytest.raises(ValueError, match="box_iou: all tensors must be on one device, got cpu "
                       "and meta"):
        visionops.box_iou(torch.zeros(2, 4), torch.zeros(2, 4, device="meta"))
    with pytest.raises(ValueError,
                       match="multi_scale_roi_align: all tensors must be on one device"):
        torch.ops.visionops.multi_scale_roi_align(
            [torch.zeros(1, 2, 8, 8), torch.zeros(1, 2, 4, 4, device="meta")], torch.zeros(1, 5),
            [0.5, 0.25], 2, 2, 2)
