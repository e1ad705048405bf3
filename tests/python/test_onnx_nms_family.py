"""ONNX export of the NMS family's fixed-shape ops (issue 17) with both of
torch.onnx.export's exporters: onnx_nms as NonMaxSuppression itself (padded
as the op, run in onnxruntime against eager visionops), batched_nms_padded
as standard operators (run in onnxruntime against the eager op); and every
custom-domain node keeping all its inputs and attributes (the TorchScript
exporter's parse_args used to drop all but the first argument of the generic
symbolic). Kept apart from test_onnx.py:
growing that module made torch 1.13's TorchScript exporter fail its other
exports under pytest's assertion rewriting ("Unable to cast from non-held
to held instance"), which --assert=plain avoids."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import visionops  # noqa: E402
import visionops.onnx  # noqa: E402
from conftest import FnModule  # noqa: E402
from test_onnx import EXPORTERS, _custom_cases, _export, _needs_exporter, _run, _session  # noqa: E402

try:
    import onnxruntime as ort
except ImportError:  # pragma: no cover - the torch 1.13 lane
    ort = None
try:
    import onnx
except ImportError:  # pragma: no cover
    onnx = None

needs_ort = pytest.mark.skipif(ort is None, reason="onnxruntime is not installed (the torch 2.x "
                                                   "lane has it)")
needs_onnx = pytest.mark.skipif(onnx is None, reason="needs onnx to read the exported model")


def _inputs(rng):
    boxes = torch.from_numpy(rng.uniform(0, 50, (2, 40, 4)).astype(np.float32))
    scores = torch.from_numpy(rng.uniform(0, 1, (2, 3, 40)).astype(np.float32))
    return boxes, scores


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("score_threshold", [None, 0.3])
def test_onnx_nms(exporter, center, score_threshold, rng):
    """onnx_nms exports as NonMaxSuppression itself, padded as the op."""
    boxes, scores = _inputs(rng)
    model = FnModule(lambda b, s: torch.ops.visionops.onnx_nms(b, s, 6, 0.4, score_threshold,
                                                               center))
    session = _session(_export(model, (boxes, scores), exporter, ["boxes", "scores"]))
    other = torch.from_numpy(rng.uniform(0, 50, (2, 40, 4)).astype(np.float32))
    for b in (boxes, other):  # other values: nothing baked in
        selected, num = _run(session, b, scores)
        want_selected, want_num = model(b, scores)
        assert selected.shape == (2 * 3 * 6, 3) and num.shape == ()
        assert selected.tolist() == want_selected.tolist() and int(num) == int(want_num)


def _node(proto, name):
    return next(n for n in proto.graph.node if n.op_type == name)


def _padded_inputs(rng, b=2, m=40, c=3, per_class=False, ties=False, dtype=torch.float32):
    """Boxes (x1 < x2, y1 < y2) that overlap often, and scores free of ties
    within a class; ties=True gives every class the same scores (ties
    across classes, which the per-image merge orders by class)."""
    shape = (b, m, c, 2) if per_class else (b, m, 2)
    xy = rng.uniform(0, 60, shape)
    boxes = np.concatenate([xy, xy + rng.uniform(5, 30, shape)], -1)
    scores = np.stack([rng.permutation(m) for _ in range(b * c)]).reshape(b, c, m) / m + 0.01
    if ties:
        scores[:] = scores[:, :1]
    return (torch.from_numpy(boxes).to(dtype), torch.from_numpy(scores).to(dtype))


def _as_format(boxes, fmt):
    x1, y1, x2, y2 = boxes.unbind(-1)
    if fmt == 1:
        return torch.stack([x1, y1, x2 - x1, y2 - y1], -1)
    if fmt == 2:
        return torch.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], -1)
    return boxes


# (keyword arguments of batched_nms_padded, of _padded_inputs)
PADDED_CASES = [
    (dict(), dict()),
    (dict(score_threshold=0.3), dict()),
    (dict(max_per_class=2, max_per_image=5), dict()),
    (dict(max_per_class=0), dict()),
    (dict(class_agnostic=True), dict()),
    (dict(pre_nms_top_k=7, score_threshold=0.2), dict()),
    (dict(max_per_image=500), dict()),  # more slots than candidates: padding
    (dict(max_per_image=0), dict()),
    (dict(box_format=1), dict()),
    (dict(box_format=2, class_agnostic=True, pre_nms_top_k=10), dict()),
    (dict(), dict(per_class=True)),
    (dict(class_agnostic=True, max_per_class=4), dict(per_class=True)),
    (dict(max_per_image=20), dict(ties=True)),
    (dict(class_agnostic=True), dict(ties=True)),
    (dict(score_threshold=0.5), dict(dtype=torch.float64)),
    (dict(), dict(b=1, c=1, m=1)),
]


@needs_ort
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("case", range(len(PADDED_CASES)))
def test_batched_nms_padded_exports_standard_ops(exporter, case, rng):
    """batched_nms_padded exports as standard operators (NonMaxSuppression,
    TopK, scatters and gathers) and runs in onnxruntime with the eager op's
    results, bit for bit; other input values: nothing is baked in."""
    kw, shape = PADDED_CASES[case]
    kw = dict(dict(score_threshold=None, max_per_class=-1, max_per_image=10, box_format=0,
                   class_agnostic=False, pre_nms_top_k=-1), **kw)
    args = [kw[k] for k in ("score_threshold", "max_per_class", "max_per_image", "box_format",
                            "class_agnostic", "pre_nms_top_k")]
    model = FnModule(lambda b, s: torch.ops.visionops.batched_nms_padded(b, s, 0.5, *args))
    boxes, scores = _padded_inputs(rng, **shape)
    boxes = _as_format(boxes, kw["box_format"])
    proto_bytes = _export(model, (boxes, scores), exporter, ["boxes", "scores"])
    if onnx is not None:
        domains = {n.domain for n in onnx.load_from_string(proto_bytes).graph.node}
        assert domains <= {""}, domains
    session = _session(proto_bytes)
    other_boxes, other_scores = _padded_inputs(rng, **shape)
    for b, s in ((boxes, scores), (_as_format(other_boxes, kw["box_format"]), other_scores)):
        got, want = _run(session, b, s), model(b, s)
        assert [g.dtype for g in got] == [w.dtype for w in want]
        for g, w in zip(got, want):
            assert g.tolist() == w.tolist()
        if kw["max_per_image"] and not kw["max_per_class"] == 0:
            assert int(want[3].min()) > 0  # the case selects something


@needs_ort
def test_batched_nms_padded_export_dynamic_sizes(rng):
    """Exported with dynamic B, M (TorchScript's dynamic_axes), the model
    runs on other sizes, fewer candidates than slots included."""
    model = FnModule(lambda b, s: torch.ops.visionops.batched_nms_padded(
        b, s, 0.45, 0.1, 8, 30, 0, False, -1))
    boxes, scores = _padded_inputs(rng)
    session = _session(_export(model, (boxes, scores), "torchscript", ["boxes", "scores"],
                               dynamic={"boxes": {0: "B", 1: "M"}, "scores": {0: "B", 2: "M"}}))
    for b, m in ((3, 100), (1, 4), (2, 0)):
        bx, sc = _padded_inputs(rng, b=b, m=m)
        for g, w in zip(_run(session, bx, sc), model(bx, sc)):
            assert g.tolist() == w.tolist()


@needs_onnx
@pytest.mark.parametrize("exporter", EXPORTERS)
def test_batched_nms_padded_export_thresholds(exporter, rng):
    """A negative iou_threshold (eagerly: disjoint boxes suppress each other)
    has no NonMaxSuppression equivalent: an export error naming the op."""
    _needs_exporter(exporter)
    boxes, scores = _padded_inputs(rng)
    model = FnModule(lambda b, s: torch.ops.visionops.batched_nms_padded(
        b, s, -0.5, None, -1, 10, 0, False, -1))
    with pytest.raises(Exception, match="batched_nms_padded: ONNX export needs iou_threshold"):
        _export(model, (boxes, scores), exporter, ["boxes", "scores"])


@needs_onnx
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("case", range(3))
def test_custom_nodes_keep_every_argument(exporter, case):
    name, model, args = _custom_cases()[case]
    node = _node(onnx.load_from_string(_export(model, args, exporter, None)), name)
    schema = visionops._core.SCHEMAS[name]
    assert len(node.input) == len(schema.tensor_args)
    assert len(node.attribute) == len(schema.args) - len(schema.tensor_args)


@needs_onnx
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("batched", [False, True])
def test_soft_nms_exports_its_kept_size(exporter, batched, rng):
    """visionops.soft_nms / batched_soft_nms on torch tensors export as the
    padded op's custom node, then Slices to its count: the (dets, keep)
    outputs keep their data-dependent size instead of the traced one."""
    b = torch.from_numpy(rng.uniform(0, 50, (30, 2)).astype(np.float32))
    boxes = torch.cat([b, b + 5 + torch.from_numpy(rng.uniform(0, 20, (30, 2)).astype(np.float32))],
                      1)
    scores = torch.from_numpy(rng.uniform(0, 1, 30).astype(np.float32))
    idxs = torch.from_numpy(rng.integers(0, 3, 30))
    if batched:
        model = FnModule(lambda b, s, i: visionops.batched_soft_nms(b, s, i, 0.3, 0.5, 0.2))
        args, names, op = (boxes, scores, idxs), ["boxes", "scores", "idxs"], "batched_soft_nms"
    else:
        model = FnModule(lambda b, s: visionops.soft_nms(b, s, 0.3, 0.5, 0.2))
        args, names, op = (boxes, scores), ["boxes", "scores"], "soft_nms"
    proto = onnx.load_from_string(_export(model, args, exporter, names))
    node = _node(proto, op)
    assert node.domain == visionops.onnx.CUSTOM_DOMAIN and len(node.output) == 3
    slices = [n for n in proto.graph.node if n.op_type == "Slice"]
    assert {n.input[0] for n in slices} >= {node.output[0], node.output[1]}
    assert all(n.input[2] != "" for n in slices)
    dims = [d for d in proto.graph.output[0].type.tensor_type.shape.dim]
    assert len(dims) == 2 and not dims[0].HasField("dim_value"), dims  # a data-dependent K
