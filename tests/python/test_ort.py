"""libvisionops_ort, the ONNX Runtime custom-op library: every op as a node
of the "visionops" domain runs in onnxruntime and gives eager visionops'
results (one-node models built from every op's samples, and models
exported by both of torch's exporters); bad input inside a session is an
ONNX Runtime error naming the op, and the process survives; sessions in
several threads give the single-thread results. Needs onnxruntime and onnx
(the torch 2.x lane)."""
import io
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import visionops  # noqa: E402
import visionops.onnx  # noqa: E402
from visionops import _core  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import exported_samples  # noqa: E402
from test_onnx import EXPORTERS, TORCH_MAJOR, _needs_exporter  # noqa: E402

ONNX_TYPES = {torch.float32: TensorProto.FLOAT, torch.float64: TensorProto.DOUBLE,
              torch.float16: TensorProto.FLOAT16, torch.int64: TensorProto.INT64,
              torch.int32: TensorProto.INT32, torch.int16: TensorProto.INT16,
              torch.int8: TensorProto.INT8, torch.uint8: TensorProto.UINT8}
ALL_OPS = sorted(_core.SCHEMAS)


def _session(model, options=None):
    data = model if isinstance(model, bytes) else model.SerializeToString()
    return ort.InferenceSession(data, visionops.onnx.ort_session_options(options),
                                providers=["CPUExecutionProvider"])


def _as_list(result):
    if isinstance(result, torch.Tensor):
        return [result]
    return list(result)


def _node_model(name, args, num_outputs):
    """A model of one visionops node calling op `name` on `args` (the
    schema's arguments): its tensors are the graph's inputs (a list last),
    the rest attributes. Returns (model, feeds)."""
    schema = _core.SCHEMAS[name]
    single, listed, attrs = [], [], {}
    for arg, v in zip(schema.args, args):
        if arg.type == "Tensor[]":
            listed += [("%s_%d" % (arg.name, i), t) for i, t in enumerate(v)]
        elif arg.type.startswith("Tensor"):
            single.append((arg.name, v))
        elif v is None:
            continue
        elif arg.type == "float[]":
            attrs[arg.name] = [float(x) for x in v]
        elif arg.type in ("float", "float?"):
            attrs[arg.name] = float(v)
        else:
            attrs[arg.name] = int(v)
    inputs = single + listed
    while inputs and inputs[-1][1] is None:
        inputs.pop()
    outputs = ["out%d" % i for i in range(num_outputs)]
    node = helper.make_node(name, [n if t is not None else "" for n, t in inputs], outputs,
                            domain="visionops", **attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, ONNX_TYPES[t.dtype], list(t.shape))
         for n, t in inputs if t is not None],
        [helper.make_empty_tensor_value_info(o) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("visionops", 1)])
    feeds = {n: t.numpy() for n, t in inputs if t is not None}
    return model, feeds


def _check(got, want, what):
    got = torch.from_numpy(np.asarray(got))
    assert got.dtype == want.dtype, "%s: %s, eager %s" % (what, got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape), "%s: shape %s, eager %s" % (
        what, tuple(got.shape), tuple(want.shape))
    if want.is_floating_point():
        # the same kernels on the same inputs: equal but for the thread split
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5, equal_nan=True, msg=what)
    else:
        assert torch.equal(got, want), what


def _samples(name, dtype):
    out = []
    for variant in ("small", "random", "edge"):
        for seed in range(min(2, exported_samples.seeds(variant))):
            args = exported_samples.sample(name, dtype, variant, seed)
            if args is not None:
                out.append(("%s:%d" % (variant, seed), args))
    if not out:
        pytest.skip("no sample exporter in this build (tests/vo_samples_export)")
    return out


# numpy has no bfloat16: onnxruntime's Python API cannot be fed it.
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16],
                         ids=["float32", "float64", "float16"])
@pytest.mark.parametrize("name", ALL_OPS)
def test_every_op_as_a_node(name, dtype):
    """Each op's samples as one visionops node, against the eager op: the
    declared output types, the inputs' order (a list last), optional
    inputs and every attribute."""
    op = getattr(torch.ops.visionops, name)
    for label, args in _samples(name, dtype):
        want = _as_list(op(*args))
        model, feeds = _node_model(name, args, len(want))
        session = _session(model)
        if name == "box_convert" and want[0].dtype != args[0].dtype:
            # integer boxes with cxcywh on a side give float32, which ONNX
            # Runtime cannot tell from the node's types: refused by name
            with pytest.raises(Exception, match="box_convert: output out has element type"):
                session.run(None, feeds)
            continue
        got = session.run(None, feeds)
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            _check(g, w, "%s %s output %d" % (name, label, k))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8],
                         ids=["int64", "int32", "uint8"])
@pytest.mark.parametrize("name", ["box_iou", "generalized_box_iou", "box_area"])
def test_integer_boxes(name, dtype):
    boxes = torch.tensor([[0, 0, 4, 4], [1, 1, 5, 6], [2, 0, 3, 9]], dtype=dtype)
    args = [boxes] if name == "box_area" else [boxes, boxes[:2]]
    want = _as_list(getattr(torch.ops.visionops, name)(*args))
    model, feeds = _node_model(name, args, 1)
    got, = _session(model).run(None, feeds)
    _check(got, want[0], name)


def test_omitted_outputs_are_not_computed():
    """roi_pool's argmax and ps_roi_align's channel_mapping only feed a
    backward: a node may leave them out."""
    x = torch.rand(1, 8, 10, 10)
    rois = torch.tensor([[0, 1.0, 1, 8, 9]])
    for name, extra in (("roi_pool", [0.5, 2, 2]), ("ps_roi_align", [0.5, 2, 2, 2])):
        args = [x, rois] + extra
        want = _as_list(getattr(torch.ops.visionops, name)(*args))
        model, feeds = _node_model(name, args, 1)
        got, = _session(model).run(None, feeds)
        _check(got, want[0], name)


def test_attributes_take_schema_defaults_and_ints_for_floats():
    boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30.0]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    # soft_nms: every attribute left out takes the schema's default
    node = helper.make_node("soft_nms", ["b", "s"], ["d", "k", "n"], domain="visionops")
    model = _graph(node, [("b", boxes), ("s", scores)], 3)
    got = _session(model).run(None, {"b": boxes.numpy(), "s": scores.numpy()})
    want = torch.ops.visionops.soft_nms(boxes, scores)
    for g, w in zip(got, want):
        _check(g, w, "soft_nms")
    # an int attribute where the schema has a float
    node = helper.make_node("nms", ["b", "s"], ["k", "n"], domain="visionops", iou_threshold=1)
    got = _session(_graph(node, [("b", boxes), ("s", scores)], 2)).run(
        None, {"b": boxes.numpy(), "s": scores.numpy()})
    assert got[0].tolist() == [0, 1, 2] and int(got[1]) == 3


def _graph(node, inputs, num_outputs):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, ONNX_TYPES[t.dtype], list(t.shape))
                      for n, t in inputs],
        [helper.make_empty_tensor_value_info(o)
         for o in list(node.output)[:num_outputs]])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("visionops", 1)])


@pytest.mark.parametrize("attrs, message", [
    ({}, "nms: the node has no attribute iou_threshold"),
    ({"iou_threshold": "x"}, "nms: attribute iou_threshold must be a float"),
    ({"iou_threshold": [0.5, 0.6]}, "nms: attribute iou_threshold must be a float"),
])
def test_bad_attributes_are_errors(attrs, message):
    boxes = torch.tensor([[0, 0, 10, 10.0]])
    node = helper.make_node("nms", ["b", "s"], ["k", "n"], domain="visionops", **attrs)
    model = _graph(node, [("b", boxes), ("s", boxes[:, 0])], 2)
    with pytest.raises(Exception, match=message):
        _session(model).run(None, {"b": boxes.numpy(), "s": boxes[:, 0].numpy()})


# Bad values inside a session: a clear error, and the process goes on (run
# in a subprocess so that a crash fails the test rather than the suite).
_BAD_INPUT_SCRIPT = r"""
import numpy as np, onnxruntime as ort
from onnx import TensorProto as T, helper
import visionops.onnx

def session(node, inputs, n_out):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(k, t, None) for k, t in inputs],
                          [helper.make_empty_tensor_value_info("o%d" % i) for i in range(n_out)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("visionops", 1)])
    return ort.InferenceSession(m.SerializeToString(), visionops.onnx.ort_session_options(),
                                providers=["CPUExecutionProvider"])

ra = session(helper.make_node("roi_align", ["x", "r"], ["o0"], domain="visionops", spatial_scale=1.0,
                              pooled_height=2, pooled_width=2, sampling_ratio=2, aligned=1),
             [("x", T.FLOAT), ("r", T.FLOAT)], 1)
x = np.random.rand(1, 3, 8, 8).astype(np.float32)
cases = {
    "batch index": np.array([[3, 0, 0, 4, 4]], np.float32),
    "nan coordinate": np.array([[0, np.nan, 0, 4, 4]], np.float32),
    "rois shape": np.zeros((2, 3), np.float32),
}
for what, rois in cases.items():
    try:
        ra.run(None, {"x": x, "r": rois})
        print(what, "ACCEPTED")
    except Exception as e:
        print(what, "->", str(e).replace("\n", " "))
huge = session(helper.make_node("roi_align", ["x", "r"], ["o0"], domain="visionops", spatial_scale=1.0,
                                pooled_height=1 << 20, pooled_width=1 << 20, sampling_ratio=2, aligned=1),
               [("x", T.FLOAT), ("r", T.FLOAT)], 1)
try:
    huge.run(None, {"x": x, "r": np.array([[0, 0, 0, 4, 4]], np.float32)})
    print("huge ACCEPTED")
except Exception as e:
    print("huge ->", str(e).replace("\n", " "))
nms = session(helper.make_node("nms", ["b", "s"], ["o0", "o1"], domain="visionops", iou_threshold=0.5),
              [("b", T.FLOAT), ("s", T.FLOAT)], 2)
try:
    nms.run(None, {"b": np.zeros((3, 4), np.float32), "s": np.zeros(2, np.float32)})
    print("nms ACCEPTED")
except Exception as e:
    print("nms ->", str(e).replace("\n", " "))
print("ALIVE", ra.run(None, {"x": x, "r": np.array([[0, 0, 0, 4, 4]], np.float32)})[0].shape)
"""


def test_bad_input_inside_a_session_is_an_error():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", _BAD_INPUT_SCRIPT], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert "ACCEPTED" not in done.stdout, done.stdout
    assert "visionops: roi_align: rois" in lines["batch"], lines
    assert "visionops: roi_align: rois" in lines["nan"], lines
    assert "visionops: roi_align: rois" in lines["rois"], lines
    assert "visionops: roi_align: output out" in lines["huge"], lines
    assert "visionops: nms: scores" in lines["nms"], lines
    assert lines["ALIVE"] == "(1, 3, 2, 2)"


def test_sessions_in_threads_agree():
    """Four sessions in four threads, each running its own inputs many
    times, give the single-thread results."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(2, 16, 32, 32, generator=g)
    rois = torch.cat([torch.randint(0, 2, (64, 1), generator=g).float(),
                      torch.rand(64, 2, generator=g) * 12, 16 + torch.rand(64, 2, generator=g) * 12],
                     1)
    args = [x, rois, 0.5, 4, 4, 2]
    want = torch.ops.visionops.ps_roi_align(*args)
    model, feeds = _node_model("ps_roi_align", args, 2)
    sessions = [_session(model) for _ in range(4)]
    results, errors = [None] * 4, []

    def work(i):
        try:
            for _ in range(20):
                results[i] = sessions[i].run(None, feeds)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for got in results:
        for g_, w in zip(got, want):
            _check(g_, w, "ps_roi_align in a thread")


# ----------------------------------------------------- exported models


def _export(model, args, exporter, opset):
    _needs_exporter(exporter)
    names = ["in%d" % i for i in range(len(args))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            program = torch.onnx.export(
                model, tuple(args), dynamo=True, opset_version=opset, input_names=names,
                verbose=False, custom_translation_table=visionops.onnx.custom_translation_table())
            return program.model_proto.SerializeToString(), names
        f = io.BytesIO()
        extra = {"dynamo": False} if TORCH_MAJOR >= 2 else {}
        torch.onnx.export(model, tuple(args), f, opset_version=opset, input_names=names,
                          dynamic_axes={n: list(range(a.dim())) for n, a in zip(names, args)},
                          **extra)
        return f.getvalue(), names


class _OpModule(torch.nn.Module):
    """Calls torch.ops.visionops.<name> with the sample's tensors as the
    module's inputs (a list's items one by one) and the rest fixed."""

    def __init__(self, name, args):
        super().__init__()
        self.name, self.args = name, args

    def forward(self, *tensors):
        it = iter(tensors)
        call = []
        for a in self.args:
            if isinstance(a, torch.Tensor):
                call.append(next(it))
            elif isinstance(a, list) and a and isinstance(a[0], torch.Tensor):
                call.append([next(it) for _ in a])
            else:
                call.append(a)
        return getattr(torch.ops.visionops, self.name)(*call)


def _tensors(args):
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(a)
        elif isinstance(a, list) and a and isinstance(a[0], torch.Tensor):
            out.extend(a)
    return out


EXPORTED = sorted(set(visionops.onnx.custom_ops()) | {"deform_conv2d"})


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", EXPORTED)
def test_exported_model_runs(exporter, name):
    """Every op that exports to the visionops domain (deform_conv2d below
    opset 19): exported by each exporter, run in onnxruntime with the
    library, equal to eager."""
    if _core.SCHEMAS[name].returns_list:
        pytest.skip("a list output (one tensor per level) exports as an ONNX sequence, which "
                    "no custom op can give: not exported yet")
    args = exported_samples.sample(name, torch.float32, "small", 0)
    if args is None:
        pytest.skip("no sample exporter in this build (tests/vo_samples_export)")
    module = _OpModule(name, args)
    tensors = _tensors(args)
    opset = 17 if exporter == "torchscript" else 18
    model_bytes, names = _export(module, tensors, exporter, opset)
    proto = onnx.load_from_string(model_bytes)
    assert ("visionops", name) in [(n.domain, n.op_type) for n in proto.graph.node]
    session = _session(model_bytes)
    wanted = [i.name for i in session.get_inputs()]
    feeds = {n: t.numpy() for n, t in zip(names, tensors) if n in wanted}
    got = session.run(None, feeds)
    want = _as_list(module(*tensors))
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        _check(g, w, "%s (%s) output %d" % (name, exporter, k))


def test_library_needs_no_torch():
    """A process with onnxruntime and no torch loads the library."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "import onnxruntime as ort, visionops.onnx\n"
            "so = visionops.onnx.ort_session_options()\n"
            "print('ok', visionops.onnx.ort_library_path().endswith('libvisionops_ort.so'))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "ok True", done.stderr
