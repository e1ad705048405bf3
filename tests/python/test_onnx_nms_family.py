"""ONNX export of the NMS family's fixed-shape ops (issue 17) with both of
torch.onnx.export's exporters: onnx_nms as NonMaxSuppression itself (padded
as the op, run in onnxruntime against eager visionops), batched_nms_padded
as a custom-domain node whose optional score_threshold is an optional
attribute; and every custom-domain node keeping all its inputs and
attributes (the TorchScript exporter's parse_args used to drop all but the
first argument of the generic symbolic). Kept apart from test_onnx.py:
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


@needs_onnx
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("score_threshold", [None, 0.3])
def test_batched_nms_padded_custom_domain(exporter, score_threshold, rng):
    """batched_nms_padded has no standard operator: a custom node whose
    score_threshold attribute is absent when the argument is None."""
    _needs_exporter(exporter)
    boxes, scores = _inputs(rng)
    model = FnModule(lambda b, s: torch.ops.visionops.batched_nms_padded(
        b, s, 0.5, score_threshold, -1, 10, 0, False, -1))
    node = _node(onnx.load_from_string(_export(model, (boxes, scores), exporter,
                                               ["boxes", "scores"])), "batched_nms_padded")
    names = {a.name for a in node.attribute}
    assert ("score_threshold" in names) == (score_threshold is not None), names
    assert len(node.input) == 2 and {"iou_threshold", "max_per_image"} <= names, names


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
