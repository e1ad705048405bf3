"""visionops under torch.autocast and with mixed-precision inputs.

Under autocast, features come out of convolutions in bfloat16 (CPU) or
float16 (CUDA) while rois, boxes and scores stay float32: visionops' ops take
that mix natively (SPEC.md section 5). Each op is compared with torchvision
under the same autocast (dtype, and values within one bfloat16 ulp: both
accumulate in float32 and round once) and with an all-float32 run.

torchvision registers CPU autocast kernels only for nms and roi_align (0.29;
0.14 has none) and CUDA ones for the rest. Where it lacks a CPU kernel, the
fixture `torchvision_autocast` registers, for this test process, the kernel
torchvision's own CUDA one is (cast input and rois to float32, run, cast the
output to the input's dtype), so "torchvision under autocast" means the same
in both lanes.
"""
import contextlib
import math
import warnings

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import visionops  # noqa: E402

from conftest import needs_cuda  # noqa: E402

BF16_ULP = 2.0 ** -7  # relative spacing of bfloat16 (8 significant bits)
F16_ULP = 2.0 ** -10
ULP = {torch.bfloat16: BF16_ULP, torch.float16: F16_ULP}


def _cpu_autocast_dtypes():
    """bfloat16 always; float16 where this torch's CPU autocast takes it
    (torch 2.x; 1.13 refuses it)."""
    dtypes = [torch.bfloat16]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.autocast("cpu", dtype=torch.float16):
                probe = torch.nn.functional.linear(torch.ones(1, 1), torch.ones(1, 1))
        if probe.dtype == torch.float16:
            dtypes.append(torch.float16)
    except (RuntimeError, AssertionError):
        pass
    return dtypes


CPU_DTYPES = _cpu_autocast_dtypes()


def cpu_dtype_param(dt):
    return pytest.param(dt, id=str(dt).replace("torch.", ""))


ALL_CPU_DTYPES = [cpu_dtype_param(torch.bfloat16), pytest.param(
    torch.float16, id="float16", marks=pytest.mark.skipif(
        torch.float16 not in CPU_DTYPES, reason="this torch's CPU autocast has no float16"))]


def _cast32(t):
    # torchvision's autocast cast: floating tensors but float64 to float32
    return t.float() if t.is_floating_point() and t.dtype != torch.float64 else t


def _probe(op_name, device_type="cpu"):
    """Whether torchvision::op runs under `device_type` autocast with a
    bfloat16 input beside float32 rois / scores."""
    x = torch.zeros(1, 4, 4, 4).bfloat16()
    r = torch.tensor([[0, 0, 0, 2, 2.]])
    calls = {
        "roi_align": lambda: torch.ops.torchvision.roi_align(x, r, 1.0, 2, 2, 1, False),
        "roi_pool": lambda: torch.ops.torchvision.roi_pool(x, r, 1.0, 2, 2),
        "ps_roi_align": lambda: torch.ops.torchvision.ps_roi_align(x, r, 1.0, 2, 2, 1),
        "ps_roi_pool": lambda: torch.ops.torchvision.ps_roi_pool(x, r, 1.0, 2, 2),
        "nms": lambda: torch.ops.torchvision.nms(r[:, 1:].bfloat16(), r[:, 0], 0.5),
    }
    try:
        with torch.autocast(device_type, dtype=torch.bfloat16):
            calls[op_name]()
        return True
    except RuntimeError:
        return False


def _emulated_kernel(op_name):
    op = getattr(torch.ops.torchvision, op_name)
    if op_name == "nms":
        def kernel(dets, scores, threshold):
            with torch.autocast("cpu", enabled=False):
                return op(_cast32(dets), _cast32(scores), threshold)
    else:
        def kernel(input, rois, *args):
            with torch.autocast("cpu", enabled=False):
                result = op(_cast32(input), _cast32(rois), *args)
            if isinstance(result, tuple):  # (out, argmax / channel_mapping)
                return (result[0].to(input.dtype),) + tuple(result[1:])
            return result.to(input.dtype)
    return kernel


@pytest.fixture(scope="session")
def torchvision_autocast():
    missing = [n for n in ("roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool", "nms")
               if not _probe(n)]
    lib = None
    if missing:
        lib = torch.library.Library("torchvision", "IMPL")
        for name in missing:
            lib.impl(name, _emulated_kernel(name), "AutocastCPU")
    yield missing
    del lib


def assert_ulps(got, want, dtype, ulps=1.0, atol=1e-6, what=""):
    """got and want within `ulps` units of dtype's precision (relative)."""
    assert got.dtype == want.dtype, "%s: dtype %s != %s" % (what, got.dtype, want.dtype)
    g, w = got.double(), want.double()
    bad = (g - w).abs() > atol + ulps * ULP[dtype] * w.abs()
    assert not bad.any(), "%s: %d of %d differ, max diff %g" % (
        what, int(bad.sum()), g.numel(), float((g - w).abs().max()))


def rel_norm(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / (b.norm() + 1e-30))


def features_and_rois(seed=0, n=2, c=8, h=12, w=10, k=9):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, h, w, generator=g)
    conv = torch.randn(c, c, 3, 3, generator=g) * 0.2
    xy = torch.rand(k, 2, generator=g) * torch.tensor([w - 2.0, h - 2.0]) - 1
    wh = torch.rand(k, 2, generator=g) * 6 + 0.5
    rois = torch.cat([torch.randint(0, n, (k, 1), generator=g).float(), xy, xy + wh], 1)
    return x, conv, rois


ROI_OPS = {
    # name: (visionops function, torchvision function, extra args)
    "roi_align": (lambda x, r: visionops.roi_align(x, r, (3, 2), 0.75, 2, False),
                  lambda x, r: torchvision.ops.roi_align(x, r, (3, 2), 0.75, 2, False)),
    "roi_align_aligned": (lambda x, r: visionops.roi_align(x, r, 3, 0.5, -1, True),
                          lambda x, r: torchvision.ops.roi_align(x, r, 3, 0.5, -1, True)),
    "roi_pool": (lambda x, r: visionops.roi_pool(x, r, (2, 3), 0.75),
                 lambda x, r: torchvision.ops.roi_pool(x, r, (2, 3), 0.75)),
    "ps_roi_align": (lambda x, r: visionops.ps_roi_align(x, r, 2, 0.75, 2),
                     lambda x, r: torchvision.ops.ps_roi_align(x, r, 2, 0.75, 2)),
    "ps_roi_pool": (lambda x, r: visionops.ps_roi_pool(x, r, 2, 0.75),
                    lambda x, r: torchvision.ops.ps_roi_pool(x, r, 2, 0.75)),
}


# ------------------------------------------------------------ CPU autocast


@pytest.mark.parametrize("dtype", ALL_CPU_DTYPES)
@pytest.mark.parametrize("name", sorted(ROI_OPS))
def test_roi_ops_under_cpu_autocast(torchvision_autocast, name, dtype):
    vo_fn, tv_fn = ROI_OPS[name]
    x, conv, rois = features_and_rois()
    with torch.autocast("cpu", dtype=dtype):
        feats = torch.nn.functional.conv2d(x, conv, padding=1)
        assert feats.dtype == dtype and rois.dtype == torch.float32
        got = vo_fn(feats, rois)
        want = tv_fn(feats, rois)
    assert got.dtype == dtype  # the features' dtype, as torchvision's autocast kernels
    assert_ulps(got, want, dtype, what="%s vs torchvision under autocast" % name)
    # The all-float32 run on the same feature values: one rounding apart.
    f32 = vo_fn(feats.float(), rois)
    assert_ulps(got, f32.to(dtype), dtype, what="%s vs float32" % name)
    assert_ulps(got.float(), f32, dtype, ulps=0.5, what="%s vs float32 unrounded" % name)


@pytest.mark.parametrize("dtype", ALL_CPU_DTYPES)
@pytest.mark.parametrize("batched", [False, True], ids=["nms", "batched_nms"])
def test_nms_under_cpu_autocast(torchvision_autocast, batched, dtype):
    g = torch.Generator().manual_seed(3)
    xy = torch.rand(300, 2, generator=g) * 100
    boxes = torch.cat([xy, xy + torch.rand(300, 2, generator=g) * 30 + 1], 1)
    scores = torch.rand(300, generator=g)
    idxs = torch.randint(0, 3, (300,), generator=g)
    with torch.autocast("cpu", dtype=dtype):
        low = torch.nn.functional.linear(boxes, torch.eye(4))  # boxes out of an autocast op
        assert low.dtype == dtype
        if batched:
            got = visionops.batched_nms(low, scores, idxs, 0.4)
            want = torchvision.ops.boxes._batched_nms_vanilla(low, scores, idxs, 0.4)
        else:
            got = visionops.nms(low, scores, 0.4)
            want = torchvision.ops.nms(low, scores, 0.4)
    assert got.dtype == torch.int64
    assert got.tolist() == want.tolist()
    # the float32 run on the values the low-precision boxes hold
    ref = (visionops.batched_nms(low.float(), scores, idxs, 0.4) if batched
           else visionops.nms(low.float(), scores, 0.4))
    assert got.tolist() == ref.tolist()


@pytest.mark.parametrize("dtype", ALL_CPU_DTYPES)
@pytest.mark.parametrize("name", ["box_iou", "generalized_box_iou", "distance_box_iou",
                                  "complete_box_iou"])
def test_box_iou_under_cpu_autocast(name, dtype):
    g = torch.Generator().manual_seed(4)
    xy = torch.rand(7, 2, generator=g) * 50
    a = torch.cat([xy, xy + torch.rand(7, 2, generator=g) * 20 + 1], 1)
    b = a[:5] + torch.rand(5, 4, generator=g)
    with torch.autocast("cpu", dtype=dtype):
        low = torch.nn.functional.linear(a, torch.eye(4))
        got = getattr(visionops, name)(low, b)
        want = getattr(torchvision.ops, name)(low, b)
    assert got.dtype == want.dtype == torch.float32  # torchvision's promotion
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def _pyramid(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = {"p2": torch.randn(2, 4, 32, 32, generator=g), "p3": torch.randn(2, 4, 16, 16, generator=g)}
    convs = {k: torch.randn(4, 4, 1, 1, generator=g) for k in x}
    boxes = []
    for _ in range(2):
        xy = torch.rand(6, 2, generator=g) * 90
        boxes.append(torch.cat([xy, xy + torch.rand(6, 2, generator=g) * 60 + 2], 1))
    return x, convs, boxes


@pytest.mark.parametrize("dtype", ALL_CPU_DTYPES)
def test_multi_scale_roi_align_under_cpu_autocast(torchvision_autocast, dtype):
    x, convs, boxes = _pyramid(dtype)
    shapes = [(128, 128)] * 2
    vo_pool = visionops.MultiScaleRoIAlign(["p2", "p3"], 5, 2)
    tv_pool = torchvision.ops.MultiScaleRoIAlign(["p2", "p3"], 5, 2)
    with torch.autocast("cpu", dtype=dtype):
        feats = {k: torch.nn.functional.conv2d(v, convs[k]) for k, v in x.items()}
        got = vo_pool(feats, boxes, shapes)
        want = tv_pool(feats, boxes, shapes)
        # levels of different dtypes: the result takes the first level's
        mixed = dict(feats, p3=feats["p3"].float())
        got_mixed = vo_pool(mixed, boxes, shapes)
        want_mixed = tv_pool(mixed, boxes, shapes)
    assert got.dtype == want.dtype == dtype
    assert_ulps(got, want, dtype, what="MultiScaleRoIAlign vs torchvision")
    f32 = vo_pool({k: v.float() for k, v in feats.items()}, boxes, shapes)
    assert_ulps(got, f32.to(dtype), dtype, what="MultiScaleRoIAlign vs float32")
    assert got_mixed.dtype == want_mixed.dtype == dtype
    # torchvision rounds the float32 level's rows to bfloat16 once; so do we
    assert_ulps(got_mixed, want_mixed, dtype, what="mixed levels vs torchvision")


@pytest.mark.parametrize("dtype", ALL_CPU_DTYPES)
def test_roi_align_backward_under_cpu_autocast(torchvision_autocast, dtype):
    x, conv, rois = features_and_rois(seed=5)
    grads = {}
    for who, fn in (("vo", visionops.roi_align), ("tv", torchvision.ops.roi_align),
                    ("f32", visionops.roi_align)):
        xi = x.clone().requires_grad_()
        wi = conv.clone().requires_grad_()
        with torch.autocast("cpu", dtype=dtype, enabled=who != "f32"):
            feats = torch.nn.functional.conv2d(xi, wi, padding=1)
            out = fn(feats, rois, 3, 0.75, 2, True)
        assert out.dtype == (torch.float32 if who == "f32" else dtype)
        (out.float() ** 2).sum().backward()
        grads[who] = (xi.grad, wi.grad)
    for k in range(2):
        assert torch.isfinite(grads["vo"][k]).all()
        assert grads["vo"][k].dtype == torch.float32
        # the same graph but for the RoI op: within a few low-precision ulps
        assert rel_norm(grads["vo"][k], grads["tv"][k]) <= 4 * ULP[dtype]
        # against float32: the low-precision convolutions' error
        assert rel_norm(grads["vo"][k], grads["f32"][k]) <= 0.05


@pytest.mark.parametrize("dtype", ALL_CPU_DTYPES)
def test_multi_scale_roi_align_backward_under_cpu_autocast(torchvision_autocast, dtype):
    x, convs, boxes = _pyramid(dtype, seed=2)
    shapes = [(128, 128)] * 2
    grads = {}
    for who in ("vo", "tv", "f32"):
        pool = (torchvision.ops.MultiScaleRoIAlign if who == "tv"
                else visionops.MultiScaleRoIAlign)(["p2", "p3"], 4, 2)
        ws = {k: v.clone().requires_grad_() for k, v in convs.items()}
        with torch.autocast("cpu", dtype=dtype, enabled=who != "f32"):
            feats = {k: torch.nn.functional.conv2d(v, ws[k]) for k, v in x.items()}
            out = pool(feats, boxes, shapes)
        (out.float() ** 2).sum().backward()
        grads[who] = [ws[k].grad for k in sorted(ws)]
    for vo, tv, f32 in zip(grads["vo"], grads["tv"], grads["f32"]):
        assert torch.isfinite(vo).all()
        assert rel_norm(vo, tv) <= 4 * ULP[dtype]
        assert rel_norm(vo, f32) <= 0.05


@pytest.mark.parametrize("dtype", ALL_CPU_DTYPES)
@pytest.mark.parametrize("with_mask", [False, True], ids=["v1", "v2"])
def test_deform_conv2d_under_cpu_autocast(dtype, with_mask):
    """torchvision's deform_conv2d fails under CPU autocast (no kernel for
    half inputs); visionops computes in float32 and returns the autocast
    dtype, as conv2d does."""
    g = torch.Generator().manual_seed(6)
    x = torch.randn(2, 4, 9, 9, generator=g, requires_grad=True)
    w = (torch.randn(6, 4, 3, 3, generator=g) * 0.3).requires_grad_()
    b = torch.randn(6, generator=g, requires_grad=True)
    off_w = torch.randn(18, 4, 3, 3, generator=g) * 0.2
    mask_w = torch.randn(9, 4, 3, 3, generator=g) * 0.2
    with torch.autocast("cpu", dtype=dtype):
        offset = torch.nn.functional.conv2d(x, off_w, padding=1)
        mask = torch.sigmoid(torch.nn.functional.conv2d(x, mask_w, padding=1)) if with_mask \
            else None
        xin = torch.nn.functional.conv2d(x, torch.eye(4).reshape(4, 4, 1, 1))
        assert xin.dtype == offset.dtype == dtype and w.dtype == torch.float32
        out = visionops.deform_conv2d(xin, offset, w, b, padding=1, mask=mask)
    assert out.dtype == dtype
    # float32 on the operands' values: torchvision's, then rounded once
    want = torchvision.ops.deform_conv2d(
        xin.float(), offset.float(), w, b, padding=(1, 1),
        mask=None if mask is None else mask.float())
    assert_ulps(out, want.to(dtype), dtype, atol=1e-5, what="deform_conv2d vs float32")
    out.float().sum().backward()
    for t in (x, w, b):
        assert t.grad is not None and t.grad.dtype == torch.float32
        assert torch.isfinite(t.grad).all()
    # the same backward through torchvision in float32 on the cast operands
    grads = [t.grad for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    with torch.autocast("cpu", dtype=dtype):
        offset = torch.nn.functional.conv2d(x, off_w, padding=1)
        mask = torch.sigmoid(torch.nn.functional.conv2d(x, mask_w, padding=1)) if with_mask \
            else None
        xin = torch.nn.functional.conv2d(x, torch.eye(4).reshape(4, 4, 1, 1))
    ref = torchvision.ops.deform_conv2d(xin.float(), offset.float(), w, b, padding=(1, 1),
                                        mask=None if mask is None else mask.float()).to(dtype)
    ref.float().sum().backward()
    for got, t in zip(grads, (x, w, b)):
        assert rel_norm(got, t.grad) <= 4 * ULP[dtype]


def test_deform_conv2d_autocast_keeps_float64():
    x = torch.randn(1, 2, 5, 5, dtype=torch.float64)
    w = torch.randn(2, 2, 3, 3, dtype=torch.float64)
    off = torch.randn(1, 18, 3, 3, dtype=torch.float64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = visionops.deform_conv2d(x, off, w)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, torchvision.ops.deform_conv2d(x, off, w))


# ------------------------------------------------- mixed dtypes, no autocast


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(ROI_OPS))
def test_direct_mixed_roi_ops(name, dtype):
    vo_fn, _ = ROI_OPS[name]
    x, _, rois = features_and_rois(seed=7)
    low = x.to(dtype)
    got = vo_fn(low, rois)  # float32 rois beside half features, no autocast
    assert got.dtype == dtype
    assert_ulps(got, vo_fn(low.float(), rois).to(dtype), dtype, what=name)
    # float64 rois (any floating precision) and half rois beside float32 features
    assert_ulps(vo_fn(low, rois.double()), got, dtype, what=name + " float64 rois")
    half_rois = rois.to(dtype)
    f32_out = vo_fn(x, half_rois)
    assert f32_out.dtype == torch.float32
    torch.testing.assert_close(f32_out, vo_fn(x, half_rois.float()), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
def test_direct_mixed_roi_align_backward(dtype):
    x, _, rois = features_and_rois(seed=8)
    low = x.to(dtype).requires_grad_()
    up = x.to(dtype).float().requires_grad_()
    out = visionops.roi_align(low, rois, 3, 0.5, 2, True)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    out.backward(g)
    visionops.roi_align(up, rois, 3, 0.5, 2, True).backward(g.float())
    assert low.grad.dtype == dtype
    # the same sums in float32, rounded once
    assert_ulps(low.grad, up.grad.to(dtype), dtype, what="grad")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
def test_direct_mixed_multi_scale_roi_align(dtype):
    x, _, boxes = _pyramid(dtype, seed=9)
    shapes = [(128, 128)] * 2
    pool = visionops.MultiScaleRoIAlign(["p2", "p3"], 3, 2)
    low = {k: v.to(dtype) for k, v in x.items()}
    got = pool(low, boxes, shapes)
    assert got.dtype == dtype
    assert_ulps(got, pool({k: v.float() for k, v in low.items()}, boxes, shapes).to(dtype),
                dtype, what="MultiScaleRoIAlign")


@pytest.mark.parametrize("boxes_dtype,scores_dtype", [
    (torch.bfloat16, torch.float32), (torch.float16, torch.float32),
    (torch.float32, torch.bfloat16), (torch.float32, torch.float64)])
def test_direct_mixed_nms(boxes_dtype, scores_dtype):
    g = torch.Generator().manual_seed(10)
    xy = torch.rand(200, 2, generator=g) * 100
    boxes = torch.cat([xy, xy + torch.rand(200, 2, generator=g) * 30 + 1], 1).to(boxes_dtype)
    # distinct in every dtype (k / 256, k < 256): torchvision orders ties arbitrarily
    scores = (torch.randperm(200, generator=g).double() / 256).to(scores_dtype)
    idxs = torch.randint(0, 4, (200,), generator=g)
    # the same as all-float (float64 where float32 would round the scores)
    wide = torch.float64 if scores_dtype == torch.float64 else torch.float32
    want = torchvision.ops.nms(boxes.to(wide), scores.to(wide), 0.5)
    assert visionops.nms(boxes, scores, 0.5).tolist() == want.tolist()
    want = torchvision.ops.boxes._batched_nms_vanilla(boxes.to(wide), scores.to(wide), idxs, 0.5)
    assert visionops.batched_nms(boxes, scores, idxs, 0.5).tolist() == want.tolist()


@pytest.mark.parametrize("a_dtype,b_dtype", [
    (torch.bfloat16, torch.float32), (torch.float16, torch.float64), (torch.int64, torch.float32),
    (torch.int32, torch.int64), (torch.float32, torch.bfloat16)])
def test_direct_mixed_box_iou(a_dtype, b_dtype):
    g = torch.Generator().manual_seed(11)
    xy = torch.randint(0, 40, (6, 2), generator=g)
    a = torch.cat([xy, xy + torch.randint(1, 20, (6, 2), generator=g)], 1)
    b = a[:4].flip(0) + 1
    a, b = a.to(a_dtype), b.to(b_dtype)
    for name in ("box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou"):
        got = getattr(visionops, name)(a, b)
        want = getattr(torchvision.ops, name)(a, b)
        assert got.dtype == want.dtype, name
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    if a_dtype.is_floating_point and b_dtype.is_floating_point:
        ta, tb = a.clone().requires_grad_(), b.clone().requires_grad_()
        va, vb = a.clone().requires_grad_(), b.clone().requires_grad_()
        torchvision.ops.generalized_box_iou(ta, tb).sum().backward()
        visionops.generalized_box_iou(va, vb).sum().backward()
        for got, want in ((va.grad, ta.grad), (vb.grad, tb.grad)):
            assert got.dtype == want.dtype
            torch.testing.assert_close(got.double(), want.double(), rtol=2e-2, atol=1e-3)


def test_refused_mixed_dtypes():
    x, _, rois = features_and_rois()
    with pytest.raises(TypeError, match=r"roi_align: rois must be float32, float64, float16 or "
                                        r"bfloat16 \(any floating dtype beside input's bfloat16\), "
                                        r"got int64"):
        visionops.roi_align(x.bfloat16(), rois.long(), 2)
    with pytest.raises(TypeError, match=r"nms: scores must be float32, .* got int32"):
        visionops.nms(rois[:, 1:].bfloat16(), torch.ones(len(rois), dtype=torch.int32), 0.5)
    with pytest.raises(TypeError, match=r"deform_conv2d: offset must have the dtype of input "
                                        r"\(bfloat16\), got float32"):
        visionops.deform_conv2d(torch.zeros(1, 2, 5, 5).bfloat16(), torch.zeros(1, 18, 3, 3),
                                torch.zeros(2, 2, 3, 3).bfloat16())


# ------------------------------------------------------------ Faster R-CNN


def test_fasterrcnn_train_step_under_cpu_autocast(torchvision_autocast):
    """One training step of a torchvision Faster R-CNN under CPU bfloat16
    autocast, with visionops' ops swapped in and with torchvision's own:
    finite losses and gradients, and the two within bfloat16 noise of each
    other (much closer than either is to the float32 step)."""
    from detection import images, make_fasterrcnn, targets, visionops_ops

    size = 64  # small: bfloat16 convolutions are slow on CPUs without native bf16
    options = dict(min_size=size, max_size=size, rpn_pre_nms_top_n_train=100,
                   rpn_post_nms_top_n_train=50, rpn_batch_size_per_image=64,
                   box_batch_size_per_image=32)

    def step(with_visionops, autocast=True):
        model = make_fasterrcnn(**options).train()
        imgs, tgts = images(n=1, size=size), targets(n=1, size=size)
        torch.manual_seed(123)  # the samplers draw the same proposals
        ctx = visionops_ops(model) if with_visionops else contextlib.nullcontext()
        with ctx:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                losses = model(imgs, tgts)
            sum(losses.values()).backward()
        grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
        return {k: float(v.detach()) for k, v in losses.items()}, grads

    vo_losses, vo_grads = step(True)
    tv_losses, tv_grads = step(False)
    f32_losses, f32_grads = step(False, autocast=False)
    assert set(vo_losses) == set(tv_losses)
    for k, v in vo_losses.items():
        assert math.isfinite(v), k
        assert v == pytest.approx(tv_losses[k], rel=2e-2, abs=1e-3), k
    assert set(vo_grads) == set(tv_grads)
    worst_vs_tv = worst_vs_f32 = 0.0
    for name, g in vo_grads.items():
        assert torch.isfinite(g).all(), name
        worst_vs_tv = max(worst_vs_tv, rel_norm(g, tv_grads[name]))
        worst_vs_f32 = max(worst_vs_f32, rel_norm(tv_grads[name], f32_grads[name]))
    assert worst_vs_tv <= 0.1, worst_vs_tv
    assert worst_vs_tv <= worst_vs_f32, (worst_vs_tv, worst_vs_f32)


# ------------------------------------------------------------ CUDA autocast


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(ROI_OPS))
def test_roi_ops_under_cuda_autocast(name, dtype):
    vo_fn, tv_fn = ROI_OPS[name]
    x, conv, rois = features_and_rois()
    x, conv, rois = x.cuda(), conv.cuda(), rois.cuda()
    with torch.autocast("cuda", dtype=dtype):
        feats = torch.nn.functional.conv2d(x, conv, padding=1)
        got = vo_fn(feats, rois)
        want = tv_fn(feats, rois)
    assert got.dtype == want.dtype == dtype
    assert_ulps(got.cpu(), want.cpu(), dtype, what=name)


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_nms_and_msra_under_cuda_autocast(dtype):
    x, convs, boxes = _pyramid(dtype)
    x = {k: v.cuda() for k, v in x.items()}
    boxes = [b.cuda() for b in boxes]
    shapes = [(128, 128)] * 2
    with torch.autocast("cuda", dtype=dtype):
        feats = {k: torch.nn.functional.conv2d(v, convs[k].cuda()) for k, v in x.items()}
        got = visionops.MultiScaleRoIAlign(["p2", "p3"], 5, 2)(feats, boxes, shapes)
        want = torchvision.ops.MultiScaleRoIAlign(["p2", "p3"], 5, 2)(feats, boxes, shapes)
        low = torch.nn.functional.linear(boxes[0], torch.eye(4, device="cuda"))
        scores = torch.rand(len(low), device="cuda")
        keep = visionops.nms(low, scores, 0.3)
        keep_tv = torchvision.ops.nms(low, scores, 0.3)
    assert got.dtype == want.dtype == dtype
    assert_ulps(got.cpu(), want.cpu(), dtype, what="MultiScaleRoIAlign")
    assert keep.tolist() == keep_tv.tolist()


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_deform_conv2d_under_cuda_autocast(dtype):
    g = torch.Generator().manual_seed(6)
    x = torch.randn(2, 4, 9, 9, generator=g).cuda()
    w = torch.randn(6, 4, 3, 3, generator=g).cuda().requires_grad_()
    off = (torch.randn(2, 18, 9, 9, generator=g) * 0.5).cuda()
    with torch.autocast("cuda", dtype=dtype):
        xin = torch.nn.functional.conv2d(x, torch.eye(4, device="cuda").reshape(4, 4, 1, 1))
        out = visionops.deform_conv2d(xin, off.to(dtype), w, padding=1)
    assert out.dtype == dtype
    want = torchvision.ops.deform_conv2d(xin.float(), off.to(dtype).float(), w, padding=(1, 1))
    assert_ulps(out.cpu(), want.to(dtype).cpu(), dtype, atol=1e-4, what="deform_conv2d")
    out.float().sum().backward()
    assert torch.isfinite(w.grad).all()
