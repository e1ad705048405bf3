"""The torchvision-compatible API surface: names, signatures and defaults as
torchvision.ops, return types, and the package's settings."""
import inspect

import numpy as np
import pytest

import visionops
from conftest import HAVE_TORCH, HAVE_TORCHVISION, needs_torch

FUNCTIONS = ["nms", "batched_nms", "box_iou", "generalized_box_iou", "distance_box_iou",
             "complete_box_iou", "roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool",
             "deform_conv2d"]


def params(fn):
    return [(p.name, p.default, p.kind) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.skipif(not HAVE_TORCHVISION, reason="torchvision is not installed")
@pytest.mark.parametrize("name", FUNCTIONS)
def test_signature_matches_torchvision(name):
    """torchvision's parameters in order with the same defaults; anything
    added (e.g. newer torchvision's box_iou fmt) comes after, with a default,
    so every torchvision call works unchanged."""
    import torchvision.ops

    ours, theirs = params(getattr(visionops, name)), params(getattr(torchvision.ops, name))
    assert ours[:len(theirs)] == theirs
    for pname, default, kind in ours[len(theirs):]:
        assert default is not inspect.Parameter.empty, pname


@pytest.mark.skipif(not HAVE_TORCHVISION, reason="torchvision is not installed")
def test_multi_scale_roi_align_signature():
    import torchvision.ops

    vo, tv = visionops.MultiScaleRoIAlign, torchvision.ops.MultiScaleRoIAlign
    assert params(vo.__init__) == params(tv.__init__)
    assert [p[0] for p in params(vo.forward)] == [p[0] for p in params(tv.forward)]


def test_exports():
    for name in FUNCTIONS + ["multi_scale_roi_align", "MultiScaleRoIAlign"]:
        assert name in visionops.__all__ and callable(getattr(visionops, name))
    assert isinstance(visionops.__version__, str) and visionops.__version__


def test_backends():
    rows = visionops.backends()
    names = [r[0] for r in rows]
    assert "cpu" in [n.lower() for n in names]
    for name, built, available, detail in rows:
        assert isinstance(built, bool) and isinstance(available, bool) and isinstance(detail, str)
        if name.lower() == "cpu":
            assert built and available


def test_settings_round_trip():
    n = visionops.get_num_threads()
    d = visionops.is_deterministic()
    try:
        visionops.set_num_threads(3)
        assert visionops.get_num_threads() == 3
        with pytest.raises(ValueError, match="set_num_threads: n must be >= 0"):
            visionops.set_num_threads(-1)
        visionops.set_deterministic(True)
        assert visionops.is_deterministic() is True
        # results do not depend on the settings
        rng = np.random.default_rng(0)
        x = rng.normal(size=(1, 2, 9, 9))
        r = np.array([[0, 0, 0, 8, 8.0], [0, 2, 1, 7, 5]])
        a = visionops.roi_align(x, r, 3, 1.0, 2)
        visionops.set_num_threads(1)
        np.testing.assert_array_equal(visionops.roi_align(x, r, 3, 1.0, 2), a)
    finally:
        visionops.set_num_threads(n)
        visionops.set_deterministic(d)


@needs_torch
def test_torch_return_types():
    import torch

    b = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11.0]])
    s = torch.tensor([0.9, 0.8])
    keep = visionops.nms(b, s, 0.5)
    assert isinstance(keep, torch.Tensor) and keep.dtype == torch.int64 and keep.tolist() == [0]
    x = torch.randn(1, 4, 5, 5)
    r = torch.tensor([[0, 0, 0, 3, 3.0]])
    for fn in (visionops.roi_align, visionops.roi_pool, visionops.ps_roi_align,
               visionops.ps_roi_pool):
        out = fn(x, r, 2)
        assert isinstance(out, torch.Tensor)  # a single tensor, as torchvision (no argmax etc.)
    assert isinstance(visionops.MultiScaleRoIAlign(["a"], 2, 2), torch.nn.Module)


@needs_torch
def test_deterministic_flag_from_torch():
    """torch.use_deterministic_algorithms(True) is honoured (and does not
    make the CPU ops fail)."""
    import torch

    before = torch.are_deterministic_algorithms_enabled()
    try:
        torch.use_deterministic_algorithms(True)
        x = torch.randn(1, 2, 6, 6, requires_grad=True)
        visionops.roi_align(x, torch.tensor([[0, 0, 0, 4, 4.0]]), 2).sum().backward()
        assert x.grad is not None
    finally:
        torch.use_deterministic_algorithms(before)


@pytest.mark.skipif(not (HAVE_TORCH and HAVE_TORCHVISION), reason="torch/torchvision missing")
def test_batched_nms_int32_idxs():
    """torchvision takes any integer idxs; so does visionops (widened to
    int64 on the way in)."""
    import torch
    import torchvision.ops

    b = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 10.0]])
    s = torch.tensor([0.9, 0.8, 0.7])
    idxs = torch.tensor([0, 1, 1], dtype=torch.int32)
    want = torchvision.ops.batched_nms(b, s, idxs, 0.5)
    got = visionops.batched_nms(b, s, idxs, 0.5)
    assert got.tolist() == want.tolist()
    got_np = visionops.batched_nms(b.numpy(), s.numpy(), idxs.numpy().astype("uint8"), 0.5)
    assert got_np.tolist() == want.tolist()


@pytest.mark.skipif(not (HAVE_TORCH and HAVE_TORCHVISION), reason="torch/torchvision missing")
def test_iou_ops_are_differentiable():
    """torchvision's IoU ops are differentiable (generalized_box_iou in DETR's
    loss), and so are ours: the same gradient for both box sets."""
    import torch
    import torchvision.ops

    a = torch.tensor([[0, 0, 10, 10], [2, 3, 9, 12.0]], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([[1, 1, 8, 9.0]], dtype=torch.float64, requires_grad=True)
    for name in ("box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou"):
        want = torch.autograd.grad(getattr(torchvision.ops, name)(a, b).sum(), (a, b))
        got = torch.autograd.grad(getattr(visionops, name)(a, b).sum(), (a, b))
        for g, w in zip(got, want):
            assert torch.allclose(g, w, rtol=1e-6, atol=1e-12), name


def test_call_device_checks_argument():
    """_C.call's device_checks: off is what visionops.torch passes while a
    CUDA graph is captured; tensors the host reads are checked whatever it
    says; deferred needs a context that outlives the call, so is refused."""
    from visionops import _C
    x = np.ones((1, 2, 4, 4), np.float32)
    bad = np.array([[3, 0, 0, 2, 2]], np.float32)  # batch index 3 of N = 1
    args = [x, bad, 1.0, 2, 2, 2, True]
    for checks in (0, 2):
        with pytest.raises(visionops.VisionOpsError, match=r"rois\[0, 0\] = 3 is not a batch index"):
            _C.call("roi_align", args, None, 0, 0, False, checks)
    with pytest.raises(ValueError, match="cannot be deferred"):
        _C.call("roi_align", args, None, 0, 0, False, 1)
    with pytest.raises(visionops.VisionOpsError, match="unknown mode 9"):
        _C.call("roi_align", args, None, 0, 0, False, 9)
    good = np.array([[0, 0, 0, 2, 2]], np.float32)
    (out,) = _C.call("roi_align", [x, good, 1.0, 2, 2, 2, True], None, 0, 0, False, 2)
    np.testing.assert_allclose(out, visionops.roi_align(x, good, (2, 2), 1.0, 2, True))


def test_call_workspace_allocator():
    """_C.call's workspace: the op's temporary memory from the caller's
    (alloc, free) pair (visionops.torch passes torch's caching allocator for
    CUDA tensors), every block given back; an allocator that fails or raises
    is an out-of-memory error naming the op, not a crash."""
    from visionops import _C
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
    w = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    off = (0.3 * rng.standard_normal((1, 18, 4, 4))).astype(np.float32)
    args = [x, w, off, None, None, 1, 1, 0, 0, 1, 1, 1, 1, False]
    live, calls = {}, []

    def alloc(size, device_type, device_id, stream):
        buf = np.empty(size, np.uint8)
        live[buf.ctypes.data] = buf
        calls.append((size, device_type, device_id, stream))
        return buf.ctypes.data

    def free(address, device_type, device_id, stream):
        del live[address]

    want = visionops.deform_conv2d(x, off, w)
    (got,) = _C.call("deform_conv2d", args, None, 0, 0, False, 0, (alloc, free))
    np.testing.assert_array_equal(got, want)
    assert calls and all(c[1] == 1 for c in calls)  # kDLCPU
    assert not live
    for bad in (lambda *a: 0, lambda *a: 1 // 0):
        with pytest.raises(visionops.VisionOpsError, match="deform_conv2d: could not allocate"):
            _C.call("deform_conv2d", args, None, 0, 0, False, 0, (bad, free))
    with pytest.raises(TypeError, match="workspace must be"):
        _C.call("deform_conv2d", args, None, 0, 0, False, 0, (alloc,))


def test_release_cached_memory():
    """visionops.release_cached_memory hands back the CPU workspace blocks
    kept between calls; results are the same before and after, and calling
    it twice (nothing left) is harmless."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 64, 32, 32)).astype(np.float32)
    w = rng.standard_normal((16, 64, 3, 3)).astype(np.float32)
    off = (0.3 * rng.standard_normal((1, 18, 30, 30))).astype(np.float32)
    want = visionops.deform_conv2d(x, off, w)  # columns of 2.2 MB: a cached block
    visionops.release_cached_memory()
    visionops.release_cached_memory()
    np.testing.assert_array_equal(visionops.deform_conv2d(x, off, w), want)
    np.testing.assert_array_equal(visionops.deform_conv2d(x, off, w), want)
