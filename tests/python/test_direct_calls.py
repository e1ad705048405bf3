"""The eager shortcut (visionops.torch.ops): on plain tensors, with nothing
for torch's dispatcher to do, an op runs its backend kernel straight away;
whatever the dispatcher would act on (dispatch and torch-function modes,
the profiler, autocast, torch.jit.trace, torch.func, tensors requiring
grad, subclasses, Meta tensors, the negative bit) takes the dispatcher.
Here: both paths give the same results for every op, and each of those
cases still reaches what it reaches through torch.ops."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import visionops  # noqa: E402
import visionops.torch as vo_torch  # noqa: E402
from visionops import _C  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import exported_samples  # noqa: E402

OP_NAMES = [name for name, _, _ in _C.ops()]


def _outputs(result):
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _same(a, b):
    a, b = _outputs(a), _outputs(b)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert torch.equal(x, y) or (x.is_floating_point() and torch.equal(x.isnan(), y.isnan())
                                     and torch.equal(x.nan_to_num(), y.nan_to_num()))


def _sample(name, dtype=torch.float32):
    args = exported_samples.sample(name, dtype)
    if args is None:
        pytest.skip("no sample exporter in this build")
    return args


@pytest.mark.parametrize("name", OP_NAMES)
def test_direct_equals_dispatcher(name):
    args = _sample(name)
    _same(getattr(vo_torch.ops, name)(*args), getattr(torch.ops.visionops, name)(*args))


def _rois_case():
    x = torch.rand(2, 3, 9, 11)
    rois = torch.tensor([[0, 1.0, 1.5, 6.0, 7.0], [1, 0.0, 0.0, 10.0, 8.0]])
    return x, rois


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def test_dispatch_mode_sees_the_ops():
    x, rois = _rois_case()
    boxes = rois[:, 1:].contiguous()
    with _Recorder() as mode:
        out = visionops.roi_align(x, rois, (2, 2), 1.0, 2)
        keep = visionops.nms(boxes, torch.rand(2), 0.5)
        iou = visionops.box_iou(boxes, boxes)
    names = " ".join(mode.seen)
    for op in ("visionops.roi_align", "visionops.nms", "visionops.box_iou"):
        assert op in names, names
    _same(out, visionops.roi_align(x, rois, (2, 2), 1.0, 2))
    assert keep.dtype == torch.int64 and iou.shape == (2, 2)


def test_profiler_records_the_ops():
    x, rois = _rois_case()
    with torch.autograd.profiler.profile() as prof:
        visionops.roi_align(x, rois, (2, 2), 1.0, 2)
    assert any("visionops::roi_align" in e.name for e in prof.function_events)


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
def test_jit_trace_records_the_op():
    x, rois = _rois_case()
    traced = torch.jit.trace(lambda t: visionops.roi_align(t, rois, (2, 2), 1.0, 2), (x,))
    assert "visionops::roi_align" in str(traced.graph)
    _same(traced(x * 2), visionops.roi_align(x * 2, rois, (2, 2), 1.0, 2))


def test_script_compiles_the_op():
    x, rois = _rois_case()

    def f(t: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        return vo_torch.ops.roi_align(t, r, 1.0, 2, 2, 2, False)

    scripted = torch.jit.script(f)
    assert "visionops::roi_align" in str(scripted.graph)
    _same(scripted(x, rois), f(x, rois))


def test_autocast_takes_the_autocast_kernels():
    # deform_conv2d has an autocast kernel: float32 operands in, the
    # autocast dtype out (a direct call would return float32)
    x = torch.rand(1, 2, 5, 5)
    w, off = torch.rand(3, 2, 3, 3), torch.zeros(1, 18, 3, 3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = visionops.deform_conv2d(x, off, w)
    assert out.dtype == torch.bfloat16


def test_grad_still_recorded():
    x, rois = _rois_case()
    x.requires_grad_()
    out = visionops.roi_align(x, rois, (2, 2), 1.0, 2)
    assert out.grad_fn is not None
    out.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    with torch.no_grad():  # nothing to record: the direct path, the same numbers
        _same(visionops.roi_align(x, rois, (2, 2), 1.0, 2), out.detach())


def test_parameters_and_negative_views():
    x, rois = _rois_case()
    with torch.no_grad():
        p = torch.nn.Parameter(x.clone())
        _same(visionops.roi_align(p, rois, (2, 2), 1.0, 2),
              visionops.roi_align(x, rois, (2, 2), 1.0, 2))
    neg = torch._neg_view(x)
    assert neg.is_neg()
    _same(visionops.roi_align(neg, rois, (2, 2), 1.0, 2),
          visionops.roi_align(-x, rois, (2, 2), 1.0, 2))


def test_meta_tensors_take_the_meta_kernel():
    x, rois = _rois_case()
    out = visionops.roi_align(x.to("meta"), rois.to("meta"), (2, 2), 1.0, 2)
    assert out.device.type == "meta" and out.shape == (2, 3, 2, 2)


class _Logged(torch.Tensor):
    calls = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(str(func))
        return super().__torch_function__(func, types, args, kwargs or {})


def test_torch_function_subclass_takes_the_dispatcher():
    x, rois = _rois_case()
    _Logged.calls.clear()
    out = visionops.roi_align(x.as_subclass(_Logged), rois, (2, 2), 1.0, 2)
    _same(out.as_subclass(torch.Tensor), visionops.roi_align(x, rois, (2, 2), 1.0, 2))
    assert any("roi_align" in c for c in _Logged.calls), _Logged.calls


def test_kept_nms_ops():
    boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30.0]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    for name in sorted(vo_torch.NMS_KEPT):
        if "rotated" in name or "soft" in name:
            continue
        extra = (torch.tensor([0, 0, 1]),) if name.startswith("batched") else ()
        _same(getattr(vo_torch.ops, name)(boxes, scores, *extra, 0.5),
              getattr(torch.ops.visionops, name)(boxes, scores, *extra, 0.5))
    assert visionops.nms(boxes, scores, 0.5).tolist() == [0, 2]


@pytest.mark.parametrize("op", ["roi_pool", "ps_roi_pool", "ps_roi_align"])
def test_dropped_int32_outputs_are_omitted(op):
    # The public functions drop argmax / channel_mapping: eager calls that
    # record nothing omit it (omit=, a NULL output in the C call), so it is
    # neither allocated nor computed. Values must match the dispatcher's
    # (which computes both outputs), on torch tensors and NumPy arrays, with
    # and without out=, from several threads; a gradient or a script still
    # gets both outputs.
    import threading

    fn = getattr(visionops, op)
    direct = getattr(vo_torch.ops, op)
    extra = (2,) if op == "ps_roi_align" else ()
    torch.manual_seed(0)

    def case(channels, size, k):
        x = torch.rand(2, channels * 4, size, size)
        xy = torch.rand(k, 2) * (size - 2)
        wh = 1 + torch.rand(k, 2) * size
        rois = torch.cat([torch.randint(0, 2, (k, 1)).float(), xy, xy + wh], 1)
        return x, rois

    def reference(x, rois):
        out, _ = getattr(torch.ops.visionops, op)(x, rois, 1.0, 2, 2, *extra)
        return out

    for x, rois in (case(3, 9, 4), case(8, 40, 600)):
        want = reference(x, rois)
        _same(fn(x, rois, (2, 2), 1.0, *extra), want)
        _same(torch.from_numpy(fn(x.numpy(), rois.numpy(), (2, 2), 1.0, *extra)), want)
        out = torch.full_like(want, 7.0)
        assert fn(x, rois, (2, 2), 1.0, *extra, out=out) is out
        _same(out, want)
        out_np = np.full(tuple(want.shape), 7.0, np.float32)
        fn(x.numpy(), rois.numpy(), (2, 2), 1.0, *extra, out=out_np)
        _same(torch.from_numpy(out_np), want)
        kept, omitted = direct(x, rois, 1.0, 2, 2, *extra, omit=2)
        assert omitted is None
        _same(kept, want)
        both = direct(x, rois, 1.0, 2, 2, *extra)
        assert both[1].dtype == torch.int32 and both[1].shape == want.shape

    with pytest.raises(visionops.VisionOpsValueError, match="output out is NULL"):
        direct(*case(3, 9, 4), 1.0, 2, 2, *extra, omit=1)

    results = {}

    def worker(i):
        x, rois = case(2 + i, 8 + i, 3 + i)
        results[i] = [(fn(x, rois, (2, 2), 1.0, *extra), reference(x, rois)) for _ in range(50)]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for pairs in results.values():
        for got, want in pairs:
            _same(got, want)

    small = case(3, 9, 4)
    x, rois = small
    x = x.clone().requires_grad_()
    out = fn(x, rois, (2, 2), 1.0, *extra)
    out.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0

    scripted = torch.jit.script(fn)
    _same(scripted(*small, (2, 2), 1.0, *extra), reference(*small))
