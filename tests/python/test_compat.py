"""torchvision compatibility beyond the op values: integer and half boxes
upcast as torchvision's box ops do, batched box IoUs ([..., N, 4], as in
torchvision 0.29), empty batched_nms, exception classes that are also
RuntimeErrors, torchvision.ops' nn.Modules, and torch.fx leaves."""
import math

import numpy as np
import pytest

import visionops
from conftest import HAVE_TORCH, needs_torchvision

if HAVE_TORCH:
    import torch

IOU_NAMES = ("box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou")
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")


def int_boxes(rng, n, span):
    xy = rng.integers(0, span, size=(n, 2))
    wh = rng.integers(0, span, size=(n, 2))
    return np.concatenate([xy, xy + wh], axis=1)


# ------------------------------------------------------------ integer boxes


@needs_torchvision
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", IOU_NAMES)
def test_integer_boxes_match_torchvision(name, dtype, rng):
    """Integer boxes give float32 IoUs equal (to float32 rounding) to
    torchvision's, on torch tensors and NumPy arrays."""
    import torchvision

    span = 60 if dtype in ("int8", "uint8") else 3000
    a = int_boxes(rng, 23, span)
    b = int_boxes(rng, 17, span)
    b[0] = a[0]  # an identical pair: IoU exactly 1
    ta, tb = (torch.from_numpy(x).to(getattr(torch, dtype)) for x in (a, b))
    # torchvision subtracts uint8 coordinates in uint8 before it upcasts, so
    # disjoint pairs wrap around (a documented difference): its int64 result
    # is the exact one.
    ref_dtype = torch.int64 if dtype == "uint8" else ta.dtype
    want = getattr(torchvision.ops, name)(ta.to(ref_dtype), tb.to(ref_dtype))
    got = getattr(visionops, name)(ta, tb)
    assert got.dtype == want.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=2e-6, atol=2e-6, equal_nan=True)
    assert float(got[0, 0]) == 1.0
    got_np = getattr(visionops, name)(a.astype(dtype), b.astype(dtype))
    assert got_np.dtype == np.float32
    np.testing.assert_array_equal(got_np, got.numpy())


@needs_torchvision
@pytest.mark.parametrize("dtype", ("float16", "bfloat16", "float32", "float64"))
@pytest.mark.parametrize("name", IOU_NAMES)
def test_float_box_result_dtypes_match_torchvision(name, dtype):
    import torchvision

    a = torch.tensor([[0, 0, 10, 10], [1, 2, 5, 9]], dtype=getattr(torch, dtype))
    want = getattr(torchvision.ops, name)(a, a)
    got = getattr(visionops, name)(a, a)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("name", IOU_NAMES)
def test_integer_boxes_are_not_differentiable(name):
    """Integer boxes cannot require grad; autograd never reaches the (float
    only) backward, and float boxes beside them stay differentiable."""
    pytest.importorskip("torch")
    a = torch.tensor([[0, 0, 4, 4], [1, 1, 3, 5]])
    out = getattr(visionops, name)(a, a)
    assert out.dtype == torch.float32 and not out.requires_grad
    f = a.double().requires_grad_()
    getattr(visionops, name)(f, f).sum().backward()
    assert f.grad is not None and f.grad.dtype == torch.float64


@pytest.mark.parametrize("name", IOU_NAMES)
def test_half_boxes_gradient_through_float32_result(name):
    """float16 boxes give a float32 result; its float32 gradient flows back
    to float16 boxes."""
    pytest.importorskip("torch")
    a = torch.tensor([[0, 0, 4, 4], [1, 1, 3, 5]], dtype=torch.float16, requires_grad=True)
    b = torch.tensor([[1, 0, 4, 6.]], dtype=torch.float16, requires_grad=True)
    out = getattr(visionops, name)(a, b)
    assert out.dtype == torch.float32
    out.sum().backward()
    assert a.grad.dtype == torch.float16 and b.grad.dtype == torch.float16
    fa, fb = (t.detach().float().requires_grad_() for t in (a, b))
    getattr(visionops, name)(fa, fb).sum().backward()
    torch.testing.assert_close(a.grad.float(), fa.grad, rtol=2e-3, atol=2e-3)
    torch.testing.assert_close(b.grad.float(), fb.grad, rtol=2e-3, atol=2e-3)


# ------------------------------------------------------------ batched IoUs

EXTRA = {"box_iou": (), "generalized_box_iou": (), "distance_box_iou": (1e-7,),
         "complete_box_iou": (1e-7,)}


def float_boxes(gen, *lead, n, dtype):
    xy = torch.rand(*lead, n, 2, generator=gen, dtype=dtype) * 50
    wh = torch.rand(*lead, n, 2, generator=gen, dtype=dtype) * 30
    return torch.cat([xy, xy + wh], dim=-1)


@pytest.mark.parametrize("lead1,lead2", [((3,), (3,)), ((2, 3), (2, 3)), ((2, 1), (1, 4)),
                                         ((5,), ()), ((), (2, 2)), ((0,), (0,)), ((2, 0), (1,))])
@pytest.mark.parametrize("name", IOU_NAMES)
def test_batched_iou_is_a_loop_over_the_batch(name, lead1, lead2):
    """[..., N, 4] x [..., M, 4] -> [..., N, M] with broadcast leading
    dimensions (torchvision 0.29): each slice equals the 2-D op on it (and,
    where installed, torchvision 0.14's 2-D op), for torch and NumPy, and
    gradients flow through."""
    pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(3)
    a = float_boxes(gen, *lead1, n=6, dtype=torch.float64).requires_grad_()
    b = float_boxes(gen, *lead2, n=4, dtype=torch.float64)
    fn, extra = getattr(visionops, name), EXTRA[name]
    got = fn(a, b, *extra)
    lead = torch.broadcast_shapes(lead1, lead2)
    assert got.shape == lead + (6, 4) and got.dtype == torch.float64
    ea, eb = a.expand(lead + (6, 4)), b.expand(lead + (4, 4))
    try:
        import torchvision
        tv = getattr(torchvision.ops, name)
    except ImportError:
        tv = None
    for idx in np.ndindex(*lead):
        want = fn(ea[idx], eb[idx], *extra)
        assert torch.equal(got[idx], want)
        if tv is not None:
            torch.testing.assert_close(got[idx], tv(ea[idx], eb[idx], *extra))
    got_np = fn(a.detach().numpy(), b.numpy(), *extra)
    assert isinstance(got_np, np.ndarray) and got_np.shape == got.shape
    np.testing.assert_array_equal(got_np, got.detach().numpy())
    if got.numel():
        got.sum().backward()
        assert a.grad is not None and a.grad.shape == a.shape


def test_batched_iou_errors():
    pytest.importorskip("torch")
    with pytest.raises(visionops.VisionOpsValueError,
                       match=r"box_iou: the leading dimensions of boxes1 \[2, 3, 4\] and boxes2 "
                             r"\[3, 2, 4\] do not broadcast"):
        visionops.box_iou(torch.zeros(2, 3, 4), torch.zeros(3, 2, 4))
    with pytest.raises(visionops.VisionOpsValueError,
                       match=r"generalized_box_iou: boxes2 must have shape \[\.\.\., M, 4\], got "
                             r"\[2, 3, 5\]"):
        visionops.generalized_box_iou(torch.zeros(2, 3, 4), torch.zeros(2, 3, 5))
    with pytest.raises(visionops.VisionOpsValueError, match=r"box_iou: boxes1 must have shape"):
        visionops.box_iou(np.zeros((2, 3, 3)), np.zeros((2, 3, 4)), fmt="cxcywh")


def test_batched_box_iou_formats():
    """fmt applies to batched boxes too."""
    pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(5)
    a = float_boxes(gen, 2, n=5, dtype=torch.float32)
    b = float_boxes(gen, 2, n=3, dtype=torch.float32)
    xywh = lambda t: torch.cat([t[..., :2], t[..., 2:] - t[..., :2]], -1)  # noqa: E731
    cxcywh = lambda t: torch.cat([(t[..., :2] + t[..., 2:]) / 2, t[..., 2:] - t[..., :2]],  # noqa
                                 -1)
    want = visionops.box_iou(a, b)
    torch.testing.assert_close(visionops.box_iou(xywh(a), xywh(b), fmt="xywh"), want)
    torch.testing.assert_close(visionops.box_iou(cxcywh(a), cxcywh(b), fmt="cxcywh"), want)


# ------------------------------------------------------------ empty batched_nms


def test_batched_nms_empty_inputs():
    """No boxes: an empty int64 result, whatever else is passed (torchvision
    returns before looking at the other arguments)."""
    np_empty = visionops.batched_nms(np.zeros((0, 4), np.float32), np.zeros(0, np.float32),
                                     np.zeros(0, np.int64), 0.5)
    assert np_empty.dtype == np.int64 and np_empty.shape == (0,)
    if not HAVE_TORCH:
        return
    for boxes in (torch.empty(0), torch.empty(0, 4), torch.empty(0, 4, dtype=torch.float64)):
        for rest in ((torch.empty(0), torch.empty(0, dtype=torch.int64), 0.5),
                     (None, None, None)):
            keep = visionops.batched_nms(boxes, *rest)
            assert keep.dtype == torch.int64 and keep.shape == (0,)
    assert visionops.nms(torch.empty(0, 4), torch.empty(0), 0.5).shape == (0,)


@needs_torchvision
def test_batched_nms_empty_like_torchvision():
    import torchvision

    for boxes in (torch.empty(0), torch.empty(0, 4)):
        want = torchvision.ops.batched_nms(boxes, torch.empty(0), torch.empty(0), 0.5)
        got = visionops.batched_nms(boxes, torch.empty(0), torch.empty(0), 0.5)
        assert got.dtype == want.dtype and got.shape == want.shape


# ------------------------------------------------------------ exceptions


def test_exception_classes():
    E, V, T = visionops.VisionOpsError, visionops.VisionOpsValueError, visionops.VisionOpsTypeError
    assert issubclass(E, RuntimeError)
    assert issubclass(V, ValueError) and issubclass(V, RuntimeError) and issubclass(V, E)
    assert issubclass(T, TypeError) and issubclass(T, RuntimeError) and issubclass(T, E)
    assert not issubclass(V, TypeError) and not issubclass(T, ValueError)
    assert V.__module__ == "visionops" and V.__name__ == "VisionOpsValueError"


def test_errors_are_runtime_errors_like_torchvision():
    """torchvision raises RuntimeError for these; code catching it keeps
    working, while ValueError / TypeError still tell values from dtypes."""
    B = np.zeros((3, 4), np.float32)
    cases = [
        (visionops.VisionOpsValueError, lambda: visionops.nms(np.zeros(4, np.float32),
                                                              np.zeros(3, np.float32), 0.5)),
        (visionops.VisionOpsValueError, lambda: visionops.nms(B, np.zeros(4, np.float32), 0.5)),
        (visionops.VisionOpsTypeError, lambda: visionops.nms(B.astype(np.int64),
                                                             np.zeros(3), 0.5)),
        (visionops.VisionOpsTypeError, lambda: visionops.box_iou(None, B)),
        (visionops.VisionOpsValueError, lambda: visionops.roi_align(
            np.zeros((1, 1, 4, 4), np.float32), np.zeros((2, 4), np.float32), 2)),
    ]
    if HAVE_TORCH:
        cases += [
            (visionops.VisionOpsValueError, lambda: visionops.nms(torch.rand(3, 5), torch.rand(3),
                                                                  0.5)),
            (visionops.VisionOpsValueError, lambda: visionops.nms(torch.rand(3, 4),
                                                                  torch.rand(3, 2), 0.5)),
            (visionops.VisionOpsTypeError, lambda: visionops.box_iou(
                torch.zeros(2, 4, dtype=torch.bool), torch.zeros(2, 4, dtype=torch.bool))),
            (visionops.VisionOpsValueError, lambda: visionops.DeformConv2d(3, 4, 3, groups=2)),
        ]
    for exc, call in cases:
        with pytest.raises(RuntimeError) as e:
            call()
        assert type(e.value) is exc, (type(e.value), e.value)


# ------------------------------------------------------------ nn.Modules

MODULE_CASES = [
    ("RoIAlign", ((5, 5), 0.5, 2), {"aligned": True}),
    ("RoIAlign", (3, 1.0, -1), {}),
    ("RoIPool", ((4, 3), 0.5), {}),
    ("PSRoIAlign", (5, 0.5, 2), {}),
    ("PSRoIPool", ([5, 5], 1.0), {}),
]


@needs_torchvision
@pytest.mark.parametrize("name,args,kwargs", MODULE_CASES, ids=[c[0] for c in MODULE_CASES])
def test_roi_modules_match_torchvision(name, args, kwargs):
    import torchvision

    ours, theirs = (getattr(m, name)(*args, **kwargs) for m in (visionops, torchvision.ops))
    assert repr(ours) == repr(theirs)
    assert isinstance(ours, torch.nn.Module) and not list(ours.state_dict())
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(2, 50, 12, 12, generator=gen, dtype=torch.float64)
    rois = torch.tensor([[0, 1, 1, 9, 9], [1, 0, 2, 7.5, 11], [0, 3, 3, 4, 5]],
                        dtype=torch.float64)
    torch.testing.assert_close(ours(x, rois), theirs(x, rois))
    boxes = [rois[rois[:, 0] == i, 1:] for i in range(2)]
    torch.testing.assert_close(ours(x, boxes), theirs(x, boxes))


DEFORM_CASES = [
    ((6, 4, 3), {}),
    ((6, 4, (3, 2)), {"stride": (2, 1), "padding": (1, 0), "dilation": (2, 1), "groups": 2}),
    ((4, 2, 1), {"bias": False, "padding": 1}),
]


@needs_torchvision
@pytest.mark.parametrize("args,kwargs", DEFORM_CASES)
def test_deform_conv2d_module_matches_torchvision(args, kwargs):
    import torchvision

    ours, theirs = visionops.DeformConv2d(*args, **kwargs), torchvision.ops.DeformConv2d(*args,
                                                                                         **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        assert ours.state_dict()[k].shape == v.shape and ours.state_dict()[k].dtype == v.dtype
    for attr in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                 "groups"):
        assert getattr(ours, attr) == getattr(theirs, attr)
    # The same init: with one seed, reset_parameters draws the same values.
    torch.manual_seed(7)
    ours.reset_parameters()
    torch.manual_seed(7)
    theirs.reset_parameters()
    for k, v in theirs.state_dict().items():
        assert torch.equal(ours.state_dict()[k], v)
    # Bounds of the init: kaiming_uniform(a=sqrt(5)) gives |w| <= 1/sqrt(fan_in), as the bias.
    fan_in = ours.weight[0].numel()
    assert float(ours.weight.detach().abs().max()) <= 1 / math.sqrt(fan_in)
    if ours.bias is not None:
        assert float(ours.bias.detach().abs().max()) <= 1 / math.sqrt(fan_in)
    ours.load_state_dict(theirs.state_dict())
    kh, kw = ours.kernel_size
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(2, args[0], 9, 8, generator=gen)
    out_h = (9 + 2 * ours.padding[0] - ours.dilation[0] * (kh - 1) - 1) // ours.stride[0] + 1
    out_w = (8 + 2 * ours.padding[1] - ours.dilation[1] * (kw - 1) - 1) // ours.stride[1] + 1
    offset = torch.randn(2, 2 * kh * kw, out_h, out_w, generator=gen)
    mask = torch.rand(2, kh * kw, out_h, out_w, generator=gen)
    torch.testing.assert_close(ours(x, offset), theirs(x, offset), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ours(x, offset, mask), theirs(x, offset, mask), rtol=1e-5,
                               atol=1e-5)


def test_deform_conv2d_module_errors():
    pytest.importorskip("torch")
    with pytest.raises(visionops.VisionOpsValueError, match=r"in_channels \(3\) must be divisible"):
        visionops.DeformConv2d(3, 4, 3, groups=2)
    with pytest.raises(visionops.VisionOpsValueError, match=r"out_channels \(3\) must be divisible"):
        visionops.DeformConv2d(4, 3, 3, groups=2)


# ------------------------------------------------------------ torch.fx


class _Calls(torch.nn.Module if HAVE_TORCH else object):
    """Calls visionops three ways: through the package, through ops, and a
    module; all must be single leaf nodes."""

    def __init__(self):
        super().__init__()
        self.pool = visionops.RoIAlign(2, 1.0, 2)

    def forward(self, x, rois, boxes):
        from visionops import box_iou  # a bare name: not patched by torch.fx.wrap

        a = visionops.roi_align(x, rois, 2)
        b = visionops.ops.ps_roi_pool(x, rois, 2)
        c = self.pool(x, rois)
        d = box_iou(boxes, boxes)
        e = visionops.nms(boxes, d[0], 0.5)
        return a.sum() + b.sum() + c.sum() + d.sum() + e.sum()


def test_fx_symbolic_trace_leaves():
    pytest.importorskip("torch")
    import torch.fx

    model = _Calls()
    gm = torch.fx.symbolic_trace(model)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    names = [getattr(t, "__name__", str(t)) for t in targets]
    for fn in ("roi_align", "ps_roi_pool", "box_iou", "nms"):
        assert names.count(fn) == (2 if fn == "roi_align" else 1), names
    assert not any("visionops" in str(t) and "torch.ops" in str(t) for t in targets)
    x = torch.rand(1, 8, 10, 10)
    rois = torch.tensor([[0, 1, 1, 8, 8.], [0, 0, 2, 5, 9]])
    boxes = torch.tensor([[0, 0, 4, 4.], [1, 1, 5, 5], [6, 6, 9, 9]])
    torch.testing.assert_close(gm(x, rois, boxes), model(x, rois, boxes))


@needs_torchvision
def test_fx_leaf_modules_like_torchvision():
    """torchvision's feature extraction sees our modules as one node each
    when told they are leaves, as its own ops modules are."""
    from torchvision.models.feature_extraction import get_graph_node_names

    class Wrap(torch.nn.Module):
        def __init__(self, layer):
            super().__init__()
            self.layer = layer

        def forward(self, a, b, c):
            return self.layer(a, b, c)

    for layer in (visionops.DeformConv2d(6, 2, 3), ):
        names = get_graph_node_names(Wrap(layer), tracer_kwargs={"leaf_modules": [type(layer)]})
        assert names[0] == names[1] == ["a", "b", "c", "layer"]


def test_buffer_objects_still_accepted():
    """The argument checks accept buffer-protocol objects (a memoryview of an
    array), which the extension reads in place."""
    b = np.array([[0, 0, 2, 2], [1, 1, 3, 3]], np.float64)
    np.testing.assert_array_equal(visionops.box_iou(memoryview(b), memoryview(b)),
                                  visionops.box_iou(b, b))
    assert list(visionops.nms(memoryview(b), memoryview(np.array([0.9, 0.8])), 0.1)) == [0]
