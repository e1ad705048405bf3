"""torch.ops.visionops.*: one registered operator per C library op, with the
C library's schema, CPU/CUDA/Meta/Autograd kernels, and Meta kernels that
give the right output shapes and dtypes without reading data."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import exported_samples  # noqa: E402
import visionops  # noqa: E402
from visionops import _C, _core  # noqa: E402

OP_NAMES = [name for name, _, _ in _C.ops()]


def test_every_op_is_registered():
    assert len(OP_NAMES) >= 18
    for name in ("nms", "batched_nms", "box_iou", "generalized_box_iou", "distance_box_iou",
                 "complete_box_iou", "roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool",
                 "deform_conv2d", "multi_scale_roi_align"):
        assert name in OP_NAMES
    for name in OP_NAMES:
        assert hasattr(torch.ops.visionops, name), name


@pytest.mark.parametrize("name", OP_NAMES)
def test_schema_matches_c_library(name):
    text = dict((n, s) for n, s, _ in _C.ops())[name]
    want = torch._C.parse_schema("visionops::" + text)
    got = getattr(torch.ops.visionops, name).default._schema
    assert got.name == "visionops::" + name
    assert [(a.name, str(a.type), a.default_value) for a in got.arguments] == \
        [(a.name, str(a.type), a.default_value) for a in want.arguments]
    assert [(r.name, str(r.type)) for r in got.returns] == \
        [(r.name, str(r.type)) for r in want.returns]
    # the Python-side parse agrees on argument names
    assert [a.name for a in _core.SCHEMAS[name].args] == [a.name for a in got.arguments]


@pytest.mark.parametrize("name", OP_NAMES)
def test_dispatch_keys(name):
    has = getattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", None)
    if has is None:
        pytest.skip("this torch cannot query dispatch keys")
    for key in ("CPU", "CUDA", "Meta", "Autograd"):
        assert has("visionops::" + name, key), (name, key)


def test_backward_names_are_registered_ops():
    for name, _, backward in _C.ops():
        if backward is not None:
            assert backward in OP_NAMES, (name, backward)


# ------------------------------------------------------------------ Meta


def m(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


def meta_cases(dt):
    """op name -> (args on meta tensors, [(shape, dtype)] of the outputs)."""
    i64, i32 = torch.int64, torch.int32
    iou_dt = torch.float64 if dt == torch.float64 else torch.float32
    return {
        "nms": ((m(7, 4, dtype=dt), m(7, dtype=dt), 0.5), [((7,), i64), ((), i64)]),
        "batched_nms": ((m(7, 4, dtype=dt), m(7, dtype=dt), m(7, dtype=i64), 0.5),
                        [((7,), i64), ((), i64)]),
        # float16 / bfloat16 boxes give float32 IoUs (torchvision's _upcast)
        "box_iou": ((m(7, 4, dtype=dt), m(3, 4, dtype=dt)), [((7, 3), iou_dt)]),
        "generalized_box_iou": ((m(7, 4, dtype=dt), m(0, 4, dtype=dt)), [((7, 0), iou_dt)]),
        "distance_box_iou": ((m(7, 4, dtype=dt), m(3, 4, dtype=dt), 1e-7), [((7, 3), iou_dt)]),
        "complete_box_iou": ((m(1, 4, dtype=dt), m(3, 4, dtype=dt), 1e-7), [((1, 3), iou_dt)]),
        "roi_align": ((m(2, 3, 8, 9, dtype=dt), m(5, 5, dtype=dt), 0.5, 2, 3, -1, False),
                      [((5, 3, 2, 3), dt)]),
        "roi_align_backward": ((m(5, 3, 2, 3, dtype=dt), m(5, 5, dtype=dt), 0.5, 2, 3, 2, 3, 8, 9,
                                -1, True), [((2, 3, 8, 9), dt)]),
        "roi_pool": ((m(2, 3, 8, 9, dtype=dt), m(5, 5, dtype=dt), 0.5, 2, 3),
                     [((5, 3, 2, 3), dt), ((5, 3, 2, 3), i32)]),
        "roi_pool_backward": ((m(5, 3, 2, 3, dtype=dt), m(5, 5, dtype=dt), m(5, 3, 2, 3, dtype=i32),
                               0.5, 2, 3, 2, 3, 8, 9), [((2, 3, 8, 9), dt)]),
        "ps_roi_align": ((m(2, 12, 8, 9, dtype=dt), m(5, 5, dtype=dt), 0.5, 2, 3, -1),
                         [((5, 2, 2, 3), dt), ((5, 2, 2, 3), i32)]),
        "ps_roi_align_backward": ((m(5, 2, 2, 3, dtype=dt), m(5, 5, dtype=dt),
                                   m(5, 2, 2, 3, dtype=i32), 0.5, 2, 3, -1, 2, 12, 8, 9),
                                  [((2, 12, 8, 9), dt)]),
        "ps_roi_pool": ((m(2, 12, 8, 9, dtype=dt), m(5, 5, dtype=dt), 0.5, 2, 3),
                        [((5, 2, 2, 3), dt), ((5, 2, 2, 3), i32)]),
        "ps_roi_pool_backward": ((m(5, 2, 2, 3, dtype=dt), m(5, 5, dtype=dt),
                                  m(5, 2, 2, 3, dtype=i32), 0.5, 2, 3, 2, 12, 8, 9),
                                 [((2, 12, 8, 9), dt)]),
        "multi_scale_roi_align": (([m(2, 3, 16, 16, dtype=dt), m(2, 3, 8, 8, dtype=dt)],
                                   m(5, 5, dtype=dt), [0.25, 0.125], 2, 3, 2),
                                  [((5, 3, 2, 3), dt)]),
        "multi_scale_roi_align_backward": ((m(5, 3, 2, 3, dtype=dt), m(5, 5, dtype=dt),
                                            [m(2, 3, 16, 16, dtype=dt), m(2, 3, 8, 8, dtype=dt)],
                                            [0.25, 0.125], 2, 3, 2),
                                           [((2, 3, 16, 16), dt), ((2, 3, 8, 8), dt)]),
        "deform_conv2d": ((m(2, 4, 8, 9, dtype=dt), m(6, 2, 3, 2, dtype=dt),
                           m(2, 2 * 2 * 6, 3, 4, dtype=dt), m(2, 2 * 6, 3, 4, dtype=dt),
                           m(6, dtype=dt), 2, 2, 0, 0, 1, 1, 2, 2, True),
                          [((2, 6, 3, 4), dt)]),
        "box_iou_backward": ((m(7, 3, dtype=dt), m(7, 4, dtype=dt), m(3, 4, dtype=dt)),
                             [((7, 4), dt), ((3, 4), dt)]),
        "generalized_box_iou_backward": ((m(7, 0, dtype=dt), m(7, 4, dtype=dt), m(0, 4, dtype=dt)),
                                         [((7, 4), dt), ((0, 4), dt)]),
        "distance_box_iou_backward": ((m(7, 3, dtype=dt), m(7, 4, dtype=dt), m(3, 4, dtype=dt),
                                       1e-7), [((7, 4), dt), ((3, 4), dt)]),
        "complete_box_iou_backward": ((m(1, 3, dtype=dt), m(1, 4, dtype=dt), m(3, 4, dtype=dt)),
                                      [((1, 4), dt), ((3, 4), dt)]),
        "deform_conv2d_backward": ((m(2, 6, 3, 4, dtype=dt), m(2, 4, 8, 9, dtype=dt),
                                    m(6, 2, 3, 2, dtype=dt), m(2, 2 * 2 * 6, 3, 4, dtype=dt),
                                    None, None, 2, 2, 0, 0, 1, 1, 2, 2, False),
                                   [((2, 4, 8, 9), dt), ((6, 2, 3, 2), dt), ((2, 24, 3, 4), dt),
                                    ((2, 12, 3, 4), dt), ((6,), dt)]),
    }


def _infer(name, args):
    """[(shape, dtype)] of op `name`'s outputs as the C library infers them."""
    from visionops import torch as vo_torch

    specs = []
    for a in _core.SCHEMAS[name].complete(args):
        if isinstance(a, torch.Tensor):
            a = vo_torch._spec(name, "arg", a)
        elif isinstance(a, list) and a and isinstance(a[0], torch.Tensor):
            a = [vo_torch._spec(name, "arg", t) for t in a]
        specs.append(a)
    return [(tuple(shape), vo_torch._DTYPES[dtype]) for shape, dtype, _ in
            _C.infer(name, specs)]


def meta_case(name, dt):
    """Op `name`'s entry of meta_cases; an op without one: its small sample
    of the C sample registry on Meta tensors, and the outputs the C library
    infers for it (so the Meta kernel's shape rule is checked against the
    library's checks)."""
    table = meta_cases(dt)
    if name in table:
        return table[name]
    args = exported_samples.sample(name, dt)
    if args is None:
        pytest.skip(name + ": no meta_cases entry and no tests/vo_samples_export in this build")
    args = exported_samples.on_meta(args)
    return tuple(args), _infer(name, args)


def test_meta_cases_cover_every_op():
    """Every op has a Meta case: its own entry or an exported sample."""
    missing = [n for n in OP_NAMES if n not in meta_cases(torch.float32)]
    if missing and exported_samples.find_exporter() is None:
        pytest.skip("no tests/vo_samples_export in this build for " + ", ".join(missing))
    assert [n for n in missing if exported_samples.sample(n, torch.float32) is None] == []


@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", OP_NAMES)
def test_meta_shapes(name, dt):
    args, want = meta_case(name, dt)
    out = getattr(torch.ops.visionops, name)(*args)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    assert [(tuple(o.shape), o.dtype) for o in outs] == want
    assert all(o.device.type == "meta" for o in outs)


def test_meta_errors_are_checked():
    """Shape checks run on Meta tensors too (no data needed)."""
    with pytest.raises(ValueError, match=r"roi_align: rois must have shape \[K, 5\]"):
        torch.ops.visionops.roi_align(m(2, 3, 8, 8), m(5, 4), 0.5, 2, 2, -1, False)
    with pytest.raises(ValueError, match="ps_roi_align: input has C = 3"):
        torch.ops.visionops.ps_roi_align(m(2, 3, 8, 8), m(5, 5), 0.5, 2, 2, -1)
    with pytest.raises(TypeError, match="nms: boxes must be"):
        torch.ops.visionops.nms(m(3, 4, dtype=torch.int64), m(3, dtype=torch.int64), 0.5)


def test_meta_through_functions():
    """The torchvision-compatible functions on Meta tensors (all but nms,
    whose output length is data-dependent: use torch.ops.visionops.nms)."""
    x, rois = m(2, 8, 10, 10), m(4, 5)
    assert visionops.roi_align(x, rois, (2, 3)).shape == (4, 8, 2, 3)
    assert visionops.roi_pool(x, rois, 2).shape == (4, 8, 2, 2)
    assert visionops.ps_roi_align(x, rois, 2).shape == (4, 2, 2, 2)
    assert visionops.ps_roi_pool(x, [m(1, 4), m(3, 4)], 2).shape == (4, 2, 2, 2)
    assert visionops.box_iou(m(3, 4), m(5, 4)).shape == (3, 5)
    out = visionops.deform_conv2d(x, m(2, 18, 8, 8), m(4, 8, 3, 3), m(4))
    assert out.shape == (2, 4, 8, 8) and out.device.type == "meta"
    pool = visionops.MultiScaleRoIAlign(["0", "1"], 3, 2)
    out = pool({"0": m(2, 8, 32, 32), "1": m(2, 8, 16, 16)}, [m(2, 4), m(1, 4)], [(128, 128)] * 2)
    assert out.shape == (3, 8, 3, 3) and out.device.type == "meta"


def test_meta_autograd_shapes():
    """requires_grad Meta tensors: the autograd kernel runs the Meta kernel."""
    x = m(2, 3, 8, 8).requires_grad_()
    out = torch.ops.visionops.roi_align(x, m(5, 5), 0.5, 2, 2, -1, False)
    assert out.shape == (5, 3, 2, 2) and out.requires_grad


@pytest.mark.parametrize("name", OP_NAMES)
def test_shape_rule_agrees_with_infer(name):
    """The C library's shape rule, as the Python layer evaluates it (what
    the Meta kernels use for symbolic sizes), gives _C.infer's shapes."""
    args, want = meta_case(name, torch.float32)
    schema = _core.SCHEMAS[name]
    args = schema.complete(args)
    inferred = [shape for shape, _ in _infer(name, args)]
    named = {a.name: v for a, v in zip(schema.args, args)}
    assert _core.SHAPE_RULES[name].shapes(named, len(inferred)) == inferred
    assert inferred == [shape for shape, _ in want]
