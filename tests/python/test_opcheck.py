"""torch.library.opcheck on every registered op (torch >= 2.4): the schema
matches what the kernels do (no hidden mutation or aliasing), the Autograd
registration is complete, the Meta/fake kernels agree with the real ones
(shapes, dtypes, strides), and the ops trace through AOTAutograd with static
and dynamic shapes. Samples are realistic: valid boxes and RoIs inside the
feature maps, gradients required where the op is differentiable; an op
without a case in `samples` runs on its sample from the C sample registry
(exported_samples)."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from visionops import _C  # noqa: E402
import visionops.torch as vo_torch  # noqa: E402

if not hasattr(torch.library, "opcheck"):
    pytest.skip("torch.library.opcheck needs torch >= 2.4 (this is %s)" % torch.__version__,
                allow_module_level=True)

import exported_samples  # noqa: E402

OP_NAMES = [name for name, _, _ in _C.ops()] + sorted(vo_torch.NMS_KEPT)
BACKWARDS = {name: backward for name, _, backward in _C.ops()}


def _boxes(n, seed, size=32.0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g) * size * 0.7
    wh = torch.rand(n, 2, generator=g) * size * 0.3 + 1
    return torch.cat([xy, xy + wh], dim=1).to(dtype)


def _rois(k, batch, seed, size=32.0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed + 7)
    idx = torch.randint(0, batch, (k, 1), generator=g).to(dtype)
    return torch.cat([idx, _boxes(k, seed, size, dtype)], dim=1)


def _rand(*shape, seed=0, dtype=torch.float32, grad=False):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(*shape, generator=g).to(dtype)
    return t.requires_grad_() if grad else t


def samples(name, dt=torch.float64):
    """A list of argument tuples for op `name` (floating tensors in dt)."""
    grad = dt in (torch.float32, torch.float64)
    x = _rand(2, 4, 12, 10, seed=1, dtype=dt, grad=grad)
    rois = _rois(5, 2, 2, size=10.0, dtype=dt)
    b1, b2 = _boxes(6, 3, dtype=dt), _boxes(4, 4, dtype=dt)
    ps_x = _rand(2, 8, 12, 10, seed=5, dtype=dt, grad=grad)
    if name in ("nms", "nms_kept"):
        return [(_boxes(20, 6, dtype=dt), _rand(20, seed=7, dtype=dt), 0.5),
                (_boxes(0, 6, dtype=dt), _rand(0, seed=7, dtype=dt), 0.5)]
    if name in ("nms_rotated_kept", "batched_nms_rotated_kept"):
        b = _boxes(20, 6, dtype=torch.float64)
        angle = _rand(20, seed=9, dtype=torch.float64) * 360 - 180
        rboxes = torch.cat([(b[:, :2] + b[:, 2:]) / 2, b[:, 2:] - b[:, :2], angle[:, None]], 1)
        first = (rboxes.to(dt), _rand(20, seed=7, dtype=dt))
        if name == "nms_rotated_kept":
            return [first + (0.5, False, False), first + (0.3, True, True)]
        idxs = torch.randint(0, 3, (20,), generator=torch.Generator().manual_seed(8))
        return [first + (idxs, 0.5, False, False)]
    if name in ("batched_nms", "batched_nms_kept"):
        idxs = torch.randint(0, 3, (20,), generator=torch.Generator().manual_seed(8))
        return [(_boxes(20, 6, dtype=dt), _rand(20, seed=7, dtype=dt), idxs, 0.5)]
    if name in ("box_iou", "generalized_box_iou"):
        return [(b1.requires_grad_(grad), b2.requires_grad_(grad))]
    if name in ("distance_box_iou", "complete_box_iou"):
        return [(b1.requires_grad_(grad), b2.requires_grad_(grad), 1e-7)]
    if name.endswith("box_iou_backward"):
        extra = (1e-7,) if name.startswith(("distance", "complete")) else ()
        return [(_rand(6, 4, seed=9, dtype=dt), b1, b2) + extra]
    if name == "roi_align":
        return [(x, rois, 0.5, 3, 2, -1, False), (x, rois, 1.0, 2, 2, 2, True)]
    if name == "roi_align_backward":
        return [(_rand(5, 4, 3, 2, seed=9, dtype=dt), rois, 0.5, 3, 2, 2, 4, 12, 10, -1, True)]
    if name == "roi_pool":
        return [(x, rois, 0.5, 3, 2)]
    if name == "roi_pool_backward":
        _, argmax = torch.ops.visionops.roi_pool(x.detach(), rois, 0.5, 3, 2)
        return [(_rand(5, 4, 3, 2, seed=9, dtype=dt), rois, argmax, 0.5, 3, 2, 2, 4, 12, 10)]
    if name == "ps_roi_align":
        return [(ps_x, rois, 0.5, 2, 2, -1)]
    if name == "ps_roi_align_backward":
        _, mapping = torch.ops.visionops.ps_roi_align(ps_x.detach(), rois, 0.5, 2, 2, -1)
        return [(_rand(5, 2, 2, 2, seed=9, dtype=dt), rois, mapping, 0.5, 2, 2, -1, 2, 8, 12, 10)]
    if name == "ps_roi_pool":
        return [(ps_x, rois, 0.5, 2, 2)]
    if name == "ps_roi_pool_backward":
        _, mapping = torch.ops.visionops.ps_roi_pool(ps_x.detach(), rois, 0.5, 2, 2)
        return [(_rand(5, 2, 2, 2, seed=9, dtype=dt), rois, mapping, 0.5, 2, 2, 2, 8, 12, 10)]
    features = [_rand(2, 4, 32, 32, seed=10, dtype=dt, grad=grad),
                _rand(2, 4, 16, 16, seed=11, dtype=dt, grad=grad)]
    ms_rois = _rois(6, 2, 12, size=128.0, dtype=dt)
    if name == "multi_scale_roi_align":
        return [(features, ms_rois, [0.25, 0.125], 3, 3, 2, 224, 4, False)]
    if name == "multi_scale_roi_align_backward":
        return [(_rand(6, 4, 3, 3, seed=9, dtype=dt), ms_rois, [f.detach() for f in features],
                 [0.25, 0.125], 3, 3, 2, 224, 4, False)]
    dx = _rand(2, 4, 7, 6, seed=13, dtype=dt, grad=grad)
    weight = _rand(6, 2, 3, 3, seed=14, dtype=dt, grad=grad)
    offset = (_rand(2, 2 * 2 * 9, 5, 4, seed=15, dtype=dt) - 0.5).requires_grad_(grad)
    mask = _rand(2, 2 * 9, 5, 4, seed=16, dtype=dt, grad=grad)
    bias = _rand(6, seed=17, dtype=dt, grad=grad)
    if name == "deform_conv2d":
        return [(dx, weight, offset, mask, bias, 1, 1, 0, 0, 1, 1, 2, 2, True),
                (dx, weight, offset, None, None, 1, 1, 0, 0, 1, 1, 2, 2, False)]
    if name == "deform_conv2d_backward":
        return [(_rand(2, 6, 5, 4, seed=18, dtype=dt), dx.detach(), weight.detach(),
                 offset.detach(), mask.detach(), bias.detach(), 1, 1, 0, 0, 1, 1, 2, 2, True)]
    return exported_sample(name, dt, grad)


def exported_sample(name, dt, grad):
    """An op without a case above: its small sample of the C sample registry,
    with gradients required on its floating tensors where the op has a
    backward."""
    args = exported_samples.sample(name, dt)
    if args is None:
        pytest.skip(name + ": no opcheck sample here and no tests/vo_samples_export in this build")
    grad = grad and BACKWARDS.get(name) is not None

    def prepare(t):
        t = t.clone()
        return t.requires_grad_() if grad and t.is_floating_point() else t
    return [tuple(prepare(a) if isinstance(a, torch.Tensor)
                  else [prepare(t) for t in a] if isinstance(a, list) and a
                  and isinstance(a[0], torch.Tensor) else a for a in args)]


@pytest.mark.parametrize("dt", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", OP_NAMES)
def test_opcheck(name, dt):
    op = getattr(torch.ops.visionops, name).default
    for args in samples(name, dt):
        torch.library.opcheck(op, args)
