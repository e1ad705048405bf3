"""ONNX export of visionops' ops (visionops.onnx) with both of
torch.onnx.export's exporters (TorchScript-based, dynamo-based): each
exported model runs in onnxruntime and is compared with eager visionops and
torchvision; the ops without a standard ONNX operator land in the
"visionops" custom domain with a warning; a torchvision Faster R-CNN with
visionops' ops swapped in exports and gives the eager detections. Without
onnxruntime (the torch 1.13 lane) only the exported graphs are checked."""
import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import visionops  # noqa: E402
import visionops.onnx  # noqa: E402
from conftest import FnModule, detections, distinct_scores, make_rois, rois_to_list  # noqa: E402

try:
    import onnxruntime as ort
except ImportError:  # pragma: no cover - the torch 1.13 lane
    ort = None
try:
    import onnx
except ImportError:  # pragma: no cover
    onnx = None
try:
    import onnxscript
except ImportError:  # pragma: no cover
    onnxscript = None
try:
    import torchvision
except ImportError:  # pragma: no cover
    torchvision = None

TORCH_MAJOR = int(torch.__version__.split(".")[0])
needs_ort = pytest.mark.skipif(ort is None, reason="onnxruntime is not installed (the torch 2.x "
                                                   "lane has it)")
EXPORTERS = ("torchscript", "dynamo")
# The TorchScript exporter of torch 1.13 goes up to opset 17.
TS_OPSET = 17
DYNAMO_OPSET = 18


def _needs_exporter(exporter):
    if exporter == "dynamo" and (TORCH_MAJOR < 2 or onnxscript is None or onnx is None):
        pytest.skip("the dynamo-based exporter needs torch 2.x with onnx and onnxscript")


def _export(model, args, exporter, names, opset=None, dynamic=None):
    """`model` exported by `exporter` as ONNX bytes. dynamic: dynamic_axes
    (TorchScript) or dynamic_shapes (dynamo)."""
    _needs_exporter(exporter)
    with warnings.catch_warnings():
        # torch 2.x deprecates the TorchScript exporter; dynamo warns about
        # dynamic_axes; visionops' CustomOpExportWarning is tested separately.
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            program = torch.onnx.export(
                model, args, dynamo=True, opset_version=opset or DYNAMO_OPSET, input_names=names,
                dynamic_shapes=dynamic, verbose=False,
                custom_translation_table=visionops.onnx.custom_translation_table())
            return program.model_proto.SerializeToString()
        f = io.BytesIO()
        extra = {"dynamo": False} if TORCH_MAJOR >= 2 else {}
        torch.onnx.export(model, args, f, opset_version=opset or TS_OPSET, input_names=names,
                          dynamic_axes=dynamic, **extra)
        return f.getvalue()


def _session(model_bytes):
    return ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])


def _run(session, *args, names=None):
    """The session's outputs for args, fed by position, or by name where the
    exporter may drop unused inputs."""
    if names is None:
        feeds = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)}
    else:
        wanted = {i.name for i in session.get_inputs()}
        feeds = {n: a.numpy() for n, a in zip(names, args) if n in wanted}
    return [torch.from_numpy(o) for o in session.run(None, feeds)]


def _dims(model_bytes, name):
    """The exported input's dimensions (an int, or a name when dynamic)."""
    model = onnx.load_from_string(model_bytes)
    dims = next(i for i in model.graph.input if i.name == name).type.tensor_type.shape.dim
    return [d.dim_param or d.dim_value for d in dims]


def _close(got, want, atol=1e-5, rtol=1e-5):
    torch.testing.assert_close(got, want.to(got.dtype), atol=atol, rtol=rtol)


def _feature(shape, seed=0, dtype=torch.float32):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# ---------------------------------------------------------------- roi_align


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [-1, 2])
@pytest.mark.parametrize("spatial_scale", [1.0, 0.5])
def test_roi_align(exporter, aligned, sampling_ratio, spatial_scale, rng):
    x = _feature((2, 3, 12, 14))
    rois = torch.from_numpy(make_rois(rng, 9, 2, 14 / spatial_scale, 10 / spatial_scale))
    model = FnModule(lambda x, r: visionops.roi_align(x, r, (3, 2), spatial_scale, sampling_ratio,
                                                 aligned))
    session = _session(_export(model, (x, rois), exporter, ["x", "rois"]))
    other = torch.from_numpy(make_rois(rng, 9, 2, 14 / spatial_scale, 10 / spatial_scale))
    for r in (rois, other):  # same shapes, other values: nothing baked in
        got, = _run(session, x, r)
        _close(got, model(x, r))
        if torchvision is not None:
            _close(got, torchvision.ops.roi_align(x, r, (3, 2), spatial_scale, sampling_ratio,
                                                  aligned))


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
def test_roi_align_float64(exporter, rng):
    x = _feature((1, 2, 9, 9), dtype=torch.float64)
    rois = torch.from_numpy(make_rois(rng, 5, 1, 9, 6, dtype=np.float64))
    model = FnModule(lambda x, r: visionops.roi_align(x, r, 2, 1.0, -1, True))
    got, = _run(_session(_export(model, (x, rois), exporter, ["x", "rois"])), x, rois)
    assert got.dtype == torch.float64
    _close(got, model(x, rois), atol=1e-12, rtol=1e-12)


@needs_ort
def test_roi_align_opset11_aligned_false(rng):
    x = _feature((2, 3, 10, 10))
    rois = torch.from_numpy(make_rois(rng, 6, 2, 10, 8))
    model = FnModule(lambda x, r: visionops.roi_align(x, r, 2, 1.0, 2, False))
    got, = _run(_session(_export(model, (x, rois), "torchscript", ["x", "rois"], opset=11)),
                x, rois)
    _close(got, model(x, rois))


def test_roi_align_aligned_needs_opset16(rng):
    x = _feature((1, 3, 10, 10))
    rois = torch.from_numpy(make_rois(rng, 3, 1, 10, 8))
    model = FnModule(lambda x, r: visionops.roi_align(x, r, 2, 1.0, 2, True))
    with pytest.raises(Exception, match="roi_align: aligned=True needs ONNX opset 16"):
        _export(model, (x, rois), "torchscript", ["x", "rois"], opset=11)


# ----------------------------------------------------------------- roi_pool


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_roi_pool(exporter, dtype, rng):
    x = _feature((2, 3, 16, 12), dtype=dtype)
    rois = torch.from_numpy(make_rois(rng, 8, 2, 32, 20)).to(dtype)
    model = FnModule(lambda x, r: visionops.roi_pool(x, r, (3, 2), 0.5))
    got, = _run(_session(_export(model, (x, rois), exporter, ["x", "rois"])), x, rois)
    assert got.dtype == dtype
    # Maxima of the input's values: exact (float64 goes through float32,
    # whose rounding of these float32-made values is exact too).
    _close(got, model(x, rois), atol=0, rtol=0) if dtype == torch.float32 else \
        _close(got, model(x, rois), atol=1e-7, rtol=1e-7)
    if torchvision is not None:
        _close(got, torchvision.ops.roi_pool(x, rois, (3, 2), 0.5), atol=1e-7, rtol=1e-7)


# ---------------------------------------------------------------------- nms


def _boxes(rng, n):
    boxes = torch.from_numpy(detections(rng, n, spread=200.0))
    scores = torch.from_numpy(distinct_scores(rng, n))
    return boxes, scores


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("iou_threshold", [0.0, 0.3, 0.7, 1.0, 1.5])
def test_nms(exporter, iou_threshold, rng):
    boxes, scores = _boxes(rng, 60)
    model = FnModule(lambda b, s: visionops.nms(b, s, iou_threshold))
    session = _session(_export(model, (boxes, scores), exporter, ["boxes", "scores"]))
    for b, s in ((boxes, scores), _boxes(rng, 60)):
        got, = _run(session, b, s)
        assert got.tolist() == model(b, s).tolist()
        if torchvision is not None:
            assert got.tolist() == torchvision.ops.nms(b, s, iou_threshold).tolist()


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
def test_nms_float64(exporter, rng):
    boxes, scores = _boxes(rng, 40)
    boxes, scores = boxes.double(), scores.double()
    model = FnModule(lambda b, s: visionops.nms(b, s, 0.5))
    got, = _run(_session(_export(model, (boxes, scores), exporter, ["boxes", "scores"])),
                boxes, scores)
    assert got.tolist() == model(boxes, scores).tolist()


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_nms_negative_threshold_is_an_export_error(exporter, rng):
    boxes, scores = _boxes(rng, 10)
    model = FnModule(lambda b, s: visionops.nms(b, s, -0.1))
    with pytest.raises(Exception) as info:
        _export(model, (boxes, scores), exporter, ["boxes", "scores"])
    text = "".join(str(e) for e in _chain(info.value))
    assert "nms: ONNX export needs iou_threshold >= 0" in text and "-0.1" in text


def _chain(e):
    while e is not None:
        yield e
        e = e.__cause__ or e.__context__


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("classes", [[0, 1, 2, 3], [-2, 5, 7]])
def test_batched_nms(exporter, classes, rng):
    boxes, scores = _boxes(rng, 80)
    idxs = torch.tensor(classes)[torch.from_numpy(rng.integers(0, len(classes), 80))]
    model = FnModule(lambda b, s, i: visionops.batched_nms(b, s, i, 0.5))
    session = _session(_export(model, (boxes, scores, idxs), exporter,
                               ["boxes", "scores", "idxs"]))
    got, = _run(session, boxes, scores, idxs)
    want = model(boxes, scores, idxs)
    assert got.tolist() == want.tolist()
    assert len(set(idxs[want].tolist())) == len(classes)  # every class has kept boxes
    if torchvision is not None:
        assert got.tolist() == torchvision.ops.batched_nms(boxes, scores, idxs, 0.5).tolist()
    # One category: plain nms.
    same = torch.full_like(idxs, 3)
    got, = _run(session, boxes, scores, same)
    assert got.tolist() == visionops.nms(boxes, scores, 0.5).tolist()


@needs_ort
@pytest.mark.parametrize("fixed", [False, True])
def test_nms_family_at_opset_11(fixed, rng):
    """The TorchScript exporter at opset 11, where Unsqueeze and Squeeze take
    their axes as attributes (the graphs are shared with opset >= 13 and the
    dynamo exporter)."""
    boxes, scores = _boxes(rng, 50)
    idxs = torch.from_numpy(rng.integers(0, 3, 50))
    if fixed:
        ops = (lambda b, s, i: torch.ops.visionops.nms(b, s, 0.5),
               lambda b, s, i: torch.ops.visionops.batched_nms(b, s, i, 0.5))
    else:
        ops = (lambda b, s, i: visionops.nms(b, s, 0.5),
               lambda b, s, i: visionops.batched_nms(b, s, i, 0.5))
    for fn in ops:
        model = FnModule(fn)
        args = (boxes, scores, idxs)
        session = _session(_export(model, args, "torchscript", ["boxes", "scores", "idxs"],
                                   opset=11))
        got = _run(session, *args, names=["boxes", "scores", "idxs"])
        want = model(*args)
        want = list(want) if isinstance(want, tuple) else [want]
        assert [g.tolist() for g in got] == [w.tolist() for w in want]


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("batched", [False, True])
def test_fixed_size_nms(exporter, batched, rng):
    boxes, scores = _boxes(rng, 50)
    idxs = torch.from_numpy(rng.integers(0, 3, 50))
    if batched:
        model = FnModule(lambda b, s, i: torch.ops.visionops.batched_nms(b, s, i, 0.5))
        args, names = (boxes, scores, idxs), ["boxes", "scores", "idxs"]
    else:
        model = FnModule(lambda b, s: torch.ops.visionops.nms(b, s, 0.5))
        args, names = (boxes, scores), ["boxes", "scores"]
    keep, num_kept = _run(_session(_export(model, args, exporter, names)), *args)
    want_keep, want_num = model(*args)
    assert keep.tolist() == want_keep.tolist()  # padded with -1 to N
    assert keep.shape == (50,) and num_kept.shape == () and int(num_kept) == int(want_num)


# ------------------------------------------------ dynamic number of boxes

def _dynamic(exporter, names, dims):
    """dynamic_axes / dynamic_shapes making dim 0 of the inputs `dims` dynamic."""
    if exporter == "torchscript":
        return {n: {0: "n"} for n in dims}
    count = torch.export.Dim("n", min=0)
    return {"args": tuple({0: count} if n in dims else None for n in names)}  # FnModule(*args)


def _dynamic_or_skip(model_bytes, exporter, name):
    if isinstance(_dims(model_bytes, name)[0], int):
        assert exporter == "dynamo"
        pytest.skip("torch.export specialised the number of boxes: visionops' meta kernels "
                    "take concrete sizes (symbolic meta kernels are another item of issue 12)")


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("op", ["roi_align", "roi_pool", "multi_scale_roi_align"])
def test_dynamic_number_of_rois(exporter, op, rng):
    x, coarse = _feature((2, 3, 12, 12)), _feature((2, 3, 6, 6), 1)
    fns = {
        "roi_align": lambda x, c, r: visionops.roi_align(x, r, 2, 1.0, -1, True),
        "roi_pool": lambda x, c, r: visionops.roi_pool(x, r, 2, 1.0),
        "multi_scale_roi_align": lambda x, c, r: visionops.multi_scale_roi_align(
            [x, c], r, [1.0, 0.5], 2, -1, canonical_scale=6, canonical_level=1),
    }
    model = FnModule(fns[op])
    names = ["x", "coarse", "rois"]
    model_bytes = _export(model, (x, coarse, torch.from_numpy(make_rois(rng, 7, 2, 12, 9))),
                          exporter, names, dynamic=_dynamic(exporter, names, ["rois"]))
    _dynamic_or_skip(model_bytes, exporter, "rois")
    session = _session(model_bytes)
    for k in (1, 13, 0):
        r = torch.from_numpy(make_rois(rng, k, 2, 12, 9))
        got, = _run(session, x, coarse, r, names=names)
        assert got.shape == (k, 3, 2, 2)
        _close(got, model(x, coarse, r))


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
def test_dynamic_number_of_boxes_nms(exporter, rng):
    boxes, scores = _boxes(rng, 30)
    idxs = torch.from_numpy(rng.integers(0, 4, 30))
    names = ["boxes", "scores", "idxs"]
    plain = FnModule(lambda b, s, i: visionops.nms(b, s, 0.5) + 0 * i.sum())
    batched = FnModule(lambda b, s, i: visionops.batched_nms(b, s, i, 0.5))
    for model in (plain, batched):
        model_bytes = _export(model, (boxes, scores, idxs), exporter, names,
                              dynamic=_dynamic(exporter, names, names))
        _dynamic_or_skip(model_bytes, exporter, "boxes")
        session = _session(model_bytes)
        for n in (45, 1, 0):  # 0 boxes: an empty result
            b, s = _boxes(rng, n)
            i = torch.from_numpy(rng.integers(0, 4, n))
            got, = _run(session, b, s, i)
            assert got.tolist() == model(b, s, i).tolist()
            assert (n == 0) == (got.numel() == 0)


@needs_ort
def test_empty_nms_static_dynamo(rng):
    """Zero boxes with static shapes (the dynamo exporter's case while the
    meta kernels specialise sizes): an empty int64 result."""
    _needs_exporter("dynamo")
    boxes, scores = torch.zeros(0, 4), torch.zeros(0)
    idxs = torch.zeros(0, dtype=torch.int64)
    for model, args in ((FnModule(lambda b, s: visionops.nms(b, s, 0.5)), (boxes, scores)),
                        (FnModule(lambda b, s, i:
                                  torch.ops.visionops.batched_nms_kept(b, s, i, 0.5)),
                         (boxes, scores, idxs))):
        got, = _run(_session(_export(model, args, "dynamo", None)), *args)
        assert got.dtype == torch.int64 and got.shape == (0,)


# -------------------------------------------------- multi_scale_roi_align


def _pyramid(batch=2, channels=3, image=160, levels=(2, 3, 4, 5), seed=0):
    return [_feature((batch, channels, image >> k, image >> k), seed + k) for k in levels]


def _pyramid_rois(rng, k, batch=2, image=160):
    """RoIs of all sizes (every level is hit) and one of negative area (a
    NaN level: a zero row)."""
    rois = make_rois(rng, k, batch, image, image, lo=0.0)
    rois[: k // 3, 3:] = rois[: k // 3, 1:3] + rng.uniform(1, 20, (k // 3, 2))
    rois[-1, 3] = rois[-1, 1] - 5.0
    return torch.from_numpy(rois)


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("sampling_ratio", [-1, 2])
@pytest.mark.parametrize("aligned", [False, True])
def test_multi_scale_roi_align(exporter, sampling_ratio, aligned, rng):
    features = _pyramid()
    scales = [0.25, 0.125, 0.0625, 0.03125]
    rois = _pyramid_rois(rng, 24)

    def fn(f0, f1, f2, f3, r):
        return visionops.multi_scale_roi_align([f0, f1, f2, f3], r, scales, (3, 2),
                                               sampling_ratio, aligned=aligned)

    model = FnModule(fn)
    session = _session(_export(model, (*features, rois), exporter,
                               ["f0", "f1", "f2", "f3", "rois"]))
    got, = _run(session, *features, rois)
    want = model(*features, rois)
    _close(got, want)
    assert not want[-1].any()  # the negative-area RoI's row
    other = _pyramid_rois(np.random.default_rng(7), 24)
    _close(_run(session, *features, other)[0], model(*features, other))


@needs_ort
@pytest.mark.skipif(torchvision is None, reason="torchvision is not installed")
@pytest.mark.parametrize("exporter", EXPORTERS)
def test_multi_scale_roi_align_module_as_torchvision(exporter, rng):
    """visionops.MultiScaleRoIAlign exported, against torchvision's module."""
    features = _pyramid(levels=(2, 3, 4))
    boxes = _pyramid_rois(rng, 12)[:-1]
    per_image = rois_to_list(boxes, 2)
    image_shapes = [(160, 160), (160, 160)]
    names = ["0", "1", "2"]
    pool = visionops.MultiScaleRoIAlign(names, 7, 2)

    def fn(f0, f1, f2, b0, b1):
        return pool(dict(zip(names, (f0, f1, f2))), [b0, b1], image_shapes)

    model = FnModule(fn)
    session = _session(_export(model, (*features, *per_image), exporter,
                               ["f0", "f1", "f2", "b0", "b1"]))
    got, = _run(session, *features, *per_image)
    reference = torchvision.ops.MultiScaleRoIAlign(names, 7, 2)
    _close(got, reference(dict(zip(names, features)), per_image, image_shapes))


# ------------------------------------------------------------ deform_conv2d


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("with_mask", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_deform_conv2d(exporter, with_mask, with_bias):
    if exporter == "torchscript" and TORCH_MAJOR < 2:
        pytest.skip("DeformConv is opset 19; torch 1.13's TorchScript exporter stops at 17")
    g = torch.Generator().manual_seed(3)
    x = torch.rand(2, 4, 7, 8, generator=g)
    weight = torch.rand(6, 2, 3, 3, generator=g) - 0.5  # groups 2
    offset = torch.randn(2, 2 * 2 * 9, 4, 8, generator=g) * 2  # offset_groups 2
    mask = torch.rand(2, 2 * 9, 4, 8, generator=g)
    bias = torch.rand(6, generator=g)
    inputs = [x, offset, weight] + ([mask] if with_mask else []) + ([bias] if with_bias else [])

    def fn(x, offset, weight, *rest):
        rest = list(rest)
        m = rest.pop(0) if with_mask else None
        b = rest.pop(0) if with_bias else None
        return visionops.deform_conv2d(x, offset, weight, b, stride=(2, 1), padding=(1, 1),
                                       dilation=(1, 1), mask=m)

    model = FnModule(fn)
    names = ["x", "offset", "weight", "mask", "bias"][:3] + \
        (["mask"] if with_mask else []) + (["bias"] if with_bias else [])
    got, = _run(_session(_export(model, tuple(inputs), exporter, names, opset=19)), *inputs)
    _close(got, model(*inputs), atol=1e-5, rtol=1e-4)
    if torchvision is not None:
        want = torchvision.ops.deform_conv2d(x, offset, weight, bias if with_bias else None,
                                             stride=(2, 1), padding=(1, 1),
                                             mask=mask if with_mask else None)
        _close(got, want, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_deform_conv2d_below_opset19_is_a_visionops_node(exporter):
    """DeformConv is opset 19: below it deform_conv2d exports as the
    visionops node (which libvisionops_ort runs: test_ort.py), never as a
    DeformConv that an older opset's runtime rejects."""
    if exporter == "dynamo" or onnx is not None:
        x, offset, weight = torch.rand(1, 2, 5, 5), torch.zeros(1, 18, 3, 3), torch.rand(3, 2, 3, 3)
        model = FnModule(lambda x, o, w: visionops.deform_conv2d(x, o, w))
        model_bytes = _export(model, (x, offset, weight), exporter, ["x", "offset", "weight"],
                              opset=17 if exporter == "torchscript" else 18)
        nodes = [(n.domain, n.op_type) for n in onnx.load_from_string(model_bytes).graph.node]
        assert ("visionops", "deform_conv2d") in nodes and ("", "DeformConv") not in nodes
    else:
        text = _graph_text(FnModule(lambda x, o, w: visionops.deform_conv2d(x, o, w)),
                           (torch.rand(1, 2, 5, 5), torch.zeros(1, 18, 3, 3),
                            torch.rand(3, 2, 3, 3)))
        assert 'type: "deform_conv2d"' in text and "DeformConv" not in text


# ------------------------------------------------------------------ box IoUs

IOUS = ("box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou")


def _iou_boxes(rng, n, dtype=torch.float32):
    """Overlapping detections, plus an identical pair, a disjoint box and a
    zero-area box (0/0 IoU: NaN in both)."""
    boxes = torch.from_numpy(detections(rng, n, spread=100.0))
    extra = torch.tensor([[10, 10, 20, 30.0], [10, 10, 20, 30], [500, 500, 501, 502],
                          [5, 5, 5, 9]])
    return torch.cat([boxes, extra]).to(dtype)


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("kind", IOUS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_box_ious(exporter, kind, dtype, rng):
    a, b = _iou_boxes(rng, 20, dtype), _iou_boxes(rng, 13, dtype)
    fn = getattr(visionops, kind)
    model = FnModule(lambda x, y: fn(x, y))
    session = _session(_export(model, (a, b), exporter, ["a", "b"]))
    other = (_iou_boxes(np.random.default_rng(9), 20, dtype),
             _iou_boxes(np.random.default_rng(10), 13, dtype))
    for x, y in ((a, b), other):  # other values of the same shapes: nothing baked in
        got, = _run(session, x, y)
        want = model(x, y)
        assert got.dtype == want.dtype == (torch.float64 if dtype == torch.float64
                                           else torch.float32)
        # float64: complete_box_iou's atan runs in float32 (no float64 Atan in
        # onnxruntime), the dynamo exporter's eps attribute is a float32.
        tol = 1e-5 if dtype != torch.float64 else 1e-6 if kind == "complete_box_iou" else 1e-9
        torch.testing.assert_close(got, want, atol=tol, rtol=tol, equal_nan=True)
        if torchvision is not None and dtype != torch.float16:
            reference = getattr(torchvision.ops, kind)(x, y)
            torch.testing.assert_close(got, reference.to(got.dtype), atol=1e-5, rtol=1e-5,
                                       equal_nan=True)


# ------------------------------------------------------- custom domain ops


def _custom_cases():
    x = _feature((1, 8, 10, 10))
    rois = torch.tensor([[0, 1.0, 1, 8, 9]])
    boxes = torch.tensor([[0, 0, 4, 4.0], [1, 1, 5, 6]])
    return [
        ("ps_roi_align", FnModule(lambda x, r: visionops.ps_roi_align(x, r, 2, 0.5, 2)), (x, rois)),
        ("ps_roi_pool", FnModule(lambda x, r: visionops.ps_roi_pool(x, r, 2, 0.5)), (x, rois)),
        ("box_iou_backward",
         FnModule(lambda g, a, b: torch.ops.visionops.box_iou_backward(g, a, b)),
         (torch.ones(2, 2), boxes, boxes)),
    ]


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("case", range(3))
def test_custom_domain(exporter, case):
    name, model, args = _custom_cases()[case]
    with pytest.warns(visionops.onnx.CustomOpExportWarning, match="visionops.%s has no standard "
                      "ONNX operator" % name):
        _needs_exporter(exporter)
        if exporter == "dynamo":
            program = torch.onnx.export(
                model, args, dynamo=True, verbose=False,
                custom_translation_table=visionops.onnx.custom_translation_table())
            model_bytes = program.model_proto.SerializeToString()
        elif onnx is None:
            text = torch.onnx.export_to_pretty_string(model, args, opset_version=TS_OPSET)
            assert 'type: "%s"' % name in text and "domain: visionops, version: 1" in text
            return
        else:
            f = io.BytesIO()
            torch.onnx.export(model, args, f, opset_version=TS_OPSET, dynamo=False)
            model_bytes = f.getvalue()
    proto = onnx.load_from_string(model_bytes)
    nodes = [(n.domain, n.op_type) for n in proto.graph.node]
    assert ("visionops", name) in nodes
    assert {(o.domain, o.version) for o in proto.opset_import} >= {("visionops", 1)}
    if ort is not None:
        with pytest.raises(Exception, match="visionops"):
            _session(model_bytes)  # without libvisionops_ort: no implementation
        session = ort.InferenceSession(model_bytes, visionops.onnx.ort_session_options(),
                                       providers=["CPUExecutionProvider"])
        got = _run(session, *args)
        for g, w in zip(got, model(*args) if isinstance(model(*args), tuple) else [model(*args)]):
            torch.testing.assert_close(g, w)


def test_translation_table_covers_every_op():
    _needs_exporter("dynamo")
    table = visionops.onnx.custom_translation_table()
    names = {op.name().split("::")[1].split(".")[0] for op in table}
    # the *_kept ops (torch only) too: the nms ones as NonMaxSuppression, the
    # others as their padded op's custom node sliced to its count
    assert names == set(visionops._core.SCHEMAS) | set(visionops.torch.NMS_KEPT)
    assert set(visionops.onnx.custom_ops()) == set(visionops._core.SCHEMAS) - set(
        visionops.onnx.STANDARD_OPS)


# ------------------------------------- the exported graphs (no onnxruntime)


def _graph_text(model, args, opset=TS_OPSET):
    """The TorchScript exporter's graph as text (torch 1.13:
    export_to_pretty_string; 2.x: the onnx model's nodes)."""
    if hasattr(torch.onnx, "export_to_pretty_string"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.onnx.export_to_pretty_string(model, args, opset_version=opset)
    if onnx is None:
        pytest.skip("neither torch.onnx.export_to_pretty_string nor onnx is available")
    proto = onnx.load_from_string(_export(model, args, "torchscript", None, opset=opset))
    return "\n".join('type: "%s"' % n.op_type for n in proto.graph.node)


def test_torchscript_graphs_use_standard_operators(rng):
    """Each mapped op becomes its standard ONNX operator (checked from the
    graph, so it runs where onnxruntime is missing too)."""
    x = _feature((2, 3, 12, 12))
    rois = torch.from_numpy(make_rois(rng, 5, 2, 12, 9))
    boxes, scores = _boxes(rng, 20)
    idxs = torch.from_numpy(rng.integers(0, 3, 20))
    cases = [
        (FnModule(lambda x, r: visionops.roi_align(x, r, 2, 1.0, -1, True)), (x, rois),
         ["RoiAlign"]),
        (FnModule(lambda x, r: visionops.roi_pool(x, r, 2, 1.0)), (x, rois), ["MaxRoiPool"]),
        (FnModule(lambda b, s: visionops.nms(b, s, 0.5)), (boxes, scores), ["NonMaxSuppression"]),
        (FnModule(lambda b, s, i: visionops.batched_nms(b, s, i, 0.5)), (boxes, scores, idxs),
         ["NonMaxSuppression", "TopK"]),
        (FnModule(lambda f0, f1, r:
                  visionops.multi_scale_roi_align([f0, f1], r, [0.5, 0.25], 2, 2)),
         (_feature((2, 3, 24, 24)), x, rois), ["RoiAlign", "ScatterND", "NonZero"]),
        (FnModule(lambda a, b: visionops.complete_box_iou(a, b)), (boxes, boxes), ["Atan", "Relu"]),
    ]
    for model, args, operators in cases:
        text = _graph_text(model, args)
        for operator in operators:
            assert 'type: "%s"' % operator in text, (operator, text[-2000:])
        assert "visionops::" not in text and "domain: visionops" not in text


# ------------------------------------------------------------ Faster R-CNN


def _onnx_detections(session, imgs):
    outs = _run(session, *imgs)
    return [dict(boxes=outs[3 * i], labels=outs[3 * i + 1], scores=outs[3 * i + 2])
            for i in range(len(imgs))]


@needs_ort
@pytest.mark.skipif(torchvision is None, reason="torchvision is not installed")
@pytest.mark.parametrize("ops", ["torchvision", "visionops"])
def test_fasterrcnn_exports_with_the_same_detections(ops):
    """torchvision's own Faster R-CNN exports with the TorchScript-based
    exporter (as torchvision's test_onnx.py does); with visionops' ops
    swapped in it exports and runs in onnxruntime with the eager
    detections. (The dynamo-based exporter fails on torchvision's own model
    in torch 2.15 too, see docs/DECISIONS.md.)"""
    from detection import images, make_fasterrcnn, same_detections, visionops_ops

    model = make_fasterrcnn()
    imgs = images(2)
    with torch.no_grad():
        if ops == "torchvision":
            eager = model(imgs)
            session = _session(_export(model, (imgs,), "torchscript", None))
        else:
            with visionops_ops(model):
                eager = model(imgs)
                session = _session(_export(model, (imgs,), "torchscript", None))
    got = _onnx_detections(session, imgs)
    assert all(len(d["boxes"]) == 50 for d in eager)
    same_detections(got, eager)
    # Other images of the same size: detections computed, not baked in.
    other = images(2, seed=5)
    with torch.no_grad():
        if ops == "torchvision":
            eager_other = model(other)
        else:
            with visionops_ops(model):
                eager_other = model(other)
    same_detections(_onnx_detections(session, other), eager_other)
