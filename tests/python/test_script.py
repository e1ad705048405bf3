"""TorchScript: torch.jit.script of every public function and module (they
compile as their typed torch implementations, visionops/_script.py), results
equal to eager visionops and to torchvision (scripted too), scripts that
call visionops, save/load round trips, errors raised inside scripts, and a
torchvision Faster R-CNN with visionops' ops scripted whole."""
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
import torchvision.ops as tvops  # noqa: E402
from torch import Tensor  # noqa: E402,F401  (annotations of the scripted helpers below)

import visionops  # noqa: E402
from conftest import (assert_close, detections, distinct_scores, make_rois,  # noqa: E402
                      needs_cuda, rois_to_list)

TORCH_2 = int(torch.__version__.split(".")[0]) >= 2
N, C, H, W = 2, 8, 12, 15

# torch 2.x deprecates TorchScript (it still works; these tests check it does)
pytestmark = [pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated"),
              pytest.mark.filterwarnings("ignore:`torch.jit.save` is deprecated"),
              pytest.mark.filterwarnings("ignore:`torch.jit.load` is deprecated")]


def script(fn):
    return torch.jit.script(fn)


def same(got, want):
    """Exactly equal: scripted and eager run the same kernels."""
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


def roi_inputs(seed, dtype=torch.float64, k=13, channels=C):
    rng = np.random.default_rng(seed)
    x = torch.tensor(rng.normal(size=(N, channels, H, W)), dtype=dtype)
    rois = torch.tensor(make_rois(rng, k, N, 2 * W, W, np.float64), dtype=dtype)
    return x, rois


def roundtrip(scripted, tmp_path):
    path = os.path.join(str(tmp_path), "scripted.pt")
    torch.jit.save(scripted, path)
    return torch.jit.load(path)


# ------------------------------------------------------------- functions


@pytest.mark.parametrize("seed", [0, 1])
def test_nms_and_batched_nms(seed):
    rng = np.random.default_rng(seed)
    boxes = torch.from_numpy(detections(rng, 120, np.float32))
    scores = torch.from_numpy(distinct_scores(rng, 120, np.float32))
    idxs = torch.from_numpy(rng.integers(0, 4, 120)).to(torch.int32)  # widened to int64
    nms, batched = script(visionops.nms), script(visionops.batched_nms)
    keep = nms(boxes, scores, 0.5)
    assert keep.dtype == torch.int64 and 0 < len(keep) < 120
    same(keep, visionops.nms(boxes, scores, 0.5))
    same(keep, tvops.nms(boxes, scores, 0.5))
    keep = batched(boxes, scores, idxs, 0.4)
    same(keep, visionops.batched_nms(boxes, scores, idxs, 0.4))
    same(keep, tvops.batched_nms(boxes, scores, idxs.long(), 0.4))
    # empty inputs: an empty int64 index tensor
    empty = torch.zeros(0, 4)
    same(nms(empty, torch.zeros(0), 0.5), torch.zeros(0, dtype=torch.int64))
    same(batched(empty, torch.zeros(0), torch.zeros(0, dtype=torch.int64), 0.5),
         torch.zeros(0, dtype=torch.int64))


IOU_FNS = ["box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou"]


@pytest.mark.parametrize("name", IOU_FNS)
def test_pairwise_ious(name, rng):
    fn, tv = getattr(visionops, name), getattr(tvops, name)
    scripted = script(fn)
    a = torch.from_numpy(detections(rng, 20, np.float64))
    b = torch.from_numpy(detections(rng, 9, np.float64))
    got = scripted(a, b)
    same(got, fn(a, b))
    assert_close(got, tv(a, b), "float64")
    # float32 and integer boxes, as torchvision's upcasting
    same(scripted(a.float(), b.float()), fn(a.float(), b.float()))
    same(scripted(a.round().long(), b.round().long()), fn(a.round().long(), b.round().long()))
    # batched [..., N, 4] x [..., M, 4] with broadcast leading dimensions
    batch = torch.stack([a, a.flip(0)])[:, None]  # [2, 1, 20, 4]
    same(scripted(batch, b), fn(batch, b))
    assert scripted(batch, b).shape == (2, 1, 20, 9)
    same(scripted(batch[:0], b), fn(batch[:0], b))
    # empty box sets
    same(scripted(a[:0], b), fn(a[:0], b))
    assert scripted(a, b[:0]).shape == (20, 0)
    if name in ("distance_box_iou", "complete_box_iou"):
        same(scripted(a, b, 1e-3), fn(a, b, eps=1e-3))


@pytest.mark.parametrize("fmt", ["xyxy", "xywh", "cxcywh", "XYWH"])
def test_box_iou_fmt(fmt, rng):
    a = torch.from_numpy(detections(rng, 12, np.float64))
    b = torch.from_numpy(detections(rng, 7, np.float64))
    a, b = tvops.box_convert(a, "xyxy", fmt.lower()), tvops.box_convert(b, "xyxy", fmt.lower())
    want = tvops.box_iou(tvops.box_convert(a, fmt.lower(), "xyxy"),
                         tvops.box_convert(b, fmt.lower(), "xyxy"))
    got = script(visionops.box_iou)(a, b, fmt)
    same(got, visionops.box_iou(a, b, fmt=fmt))
    assert_close(got, want, "float64")


ROI_FNS = ["roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool"]


def _roi_kwargs(name, aligned):
    kw = {"spatial_scale": 0.5}
    if name in ("roi_align", "ps_roi_align"):
        kw["sampling_ratio"] = 2
    if name == "roi_align":
        kw["aligned"] = aligned
    return kw


@pytest.mark.parametrize("name,output_size,aligned", [
    (name, output_size, aligned) for name in ROI_FNS for output_size in (3, (2, 3))
    for aligned in ((False, True) if name == "roi_align" else (False,))])
def test_roi_functions(name, output_size, aligned):
    ps = name.startswith("ps_")
    x, rois = roi_inputs(0, channels=C * (6 if ps else 1))
    if ps and output_size == 3:
        x = x[:, :27]  # 3 * 3 * 3 channels
    fn, tv = getattr(visionops, name), getattr(tvops, name)
    scripted, tv_scripted = script(fn), torch.jit.script(tv)
    kw = _roi_kwargs(name, aligned)
    args = list(kw.values())
    got = scripted(x, rois, output_size, *args)
    same(got, fn(x, rois, output_size, **kw))
    assert_close(got, tv(x, rois, output_size, *args), "float64")
    if not ps or isinstance(output_size, int):  # torchvision scripts ps_*'s as output_size: int
        assert_close(got, tv_scripted(x, rois, output_size, *args), "float64")
    # boxes as a list of [L, 4] tensors (one per image)
    boxes = rois_to_list(rois, N)
    same(scripted(x, boxes, output_size, *args), got)
    same(fn(x, boxes, output_size, **kw), got)
    # defaults (spatial_scale 1, sampling_ratio -1, not aligned)
    same(scripted(x, rois, output_size), fn(x, rois, output_size))
    # empty inputs: no RoIs, and an image without boxes
    assert scripted(x, rois[:0], output_size).shape[0] == 0
    same(scripted(x, rois[:0], output_size), fn(x, rois[:0], output_size))
    same(scripted(x, [boxes[0], boxes[1][:0]], output_size, *args),
         fn(x, [boxes[0], boxes[1][:0]], output_size, **kw))


def test_multi_scale_roi_align_function(rng):
    feats = [torch.tensor(rng.normal(size=(N, 3, 32, 40))),
             torch.tensor(rng.normal(size=(N, 3, 16, 20)))]
    boxes = [torch.tensor([[0, 0, 30, 40.], [10, 10, 120, 150]], dtype=torch.float64),
             torch.tensor([[5, 5, 60, 70.]], dtype=torch.float64)]
    scripted = script(visionops.multi_scale_roi_align)
    got = scripted(feats, boxes, [0.25, 0.125], (3, 2), 2)
    same(got, visionops.multi_scale_roi_align(feats, boxes, [0.25, 0.125], (3, 2), 2))
    tv_pool = tvops.MultiScaleRoIAlign(["a", "b"], (3, 2), 2)
    assert_close(got, tv_pool({"a": feats[0], "b": feats[1]}, boxes, [(128, 160)]), "float64")
    same(scripted(feats, boxes, [0.25, 0.125], 3, 2, 112, 3, True),
         visionops.multi_scale_roi_align(feats, boxes, [0.25, 0.125], 3, 2, 112, 3, True))


@pytest.mark.parametrize("with_mask", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_deform_conv2d_function(with_mask, with_bias, rng):
    x = torch.tensor(rng.normal(size=(2, 4, 9, 8)))
    weight = torch.tensor(rng.normal(size=(6, 2, 3, 3)))  # groups 2
    offset = torch.tensor(rng.normal(size=(2, 2 * 2 * 9, 5, 3)))  # offset_groups 2
    mask = torch.tensor(rng.uniform(size=(2, 2 * 9, 5, 3))) if with_mask else None
    bias = torch.tensor(rng.normal(size=(6,))) if with_bias else None
    scripted = script(visionops.deform_conv2d)
    kw = dict(stride=(2, 2), padding=(1, 1), dilation=(1, 2), mask=mask)
    got = scripted(x, offset, weight, bias, **kw)
    same(got, visionops.deform_conv2d(x, offset, weight, bias, **kw))
    assert_close(got, torch.jit.script(tvops.deform_conv2d)(x, offset, weight, bias, **kw),
                 "float64")
    kw["mask"] = None if mask is None else mask[:0]
    assert scripted(x[:0], offset[:0], weight, bias, **kw).shape == (0, 6, 5, 3)


def test_scripted_callers_resolve_visionops():
    """A user's script calling visionops (package and ops module, keyword
    arguments, defaults, int output_size) compiles and matches eager."""

    def caller(x: Tensor, rois: Tensor, boxes: Tensor, scores: Tensor) -> Tensor:
        a = visionops.roi_align(x, rois, 2, aligned=True)
        b = visionops.ops.roi_pool(x, [rois[:, 1:]], output_size=(2, 3), spatial_scale=0.5)
        keep = visionops.nms(boxes, scores, iou_threshold=0.3)
        iou = visionops.box_iou(boxes[keep], boxes, fmt="xyxy")
        return a.sum() + b.sum() + iou.sum()

    x, rois = roi_inputs(2, k=5)
    rois[:, 0] = 0
    rng = np.random.default_rng(3)
    boxes = torch.from_numpy(detections(rng, 30, np.float64))
    scores = torch.from_numpy(distinct_scores(rng, 30, np.float64))
    scripted = script(caller)
    assert "visionops" in scripted.code
    same(scripted(x, rois, boxes, scores), caller(x, rois, boxes, scores))


def test_scripted_function_gradients():
    """Scripts call the registered ops, so autograd flows through them."""
    x, rois = roi_inputs(4)
    x.requires_grad_(True)
    scripted = script(visionops.roi_align)
    (g_script,) = torch.autograd.grad(scripted(x, rois, 3, 0.5, 2).sum(), x)
    (g_eager,) = torch.autograd.grad(visionops.roi_align(x, rois, 3, 0.5, 2).sum(), x)
    same(g_script, g_eager)
    assert torch.autograd.gradcheck(lambda t: scripted(t, rois, 2, 0.5, 2), (x,), fast_mode=True)


def test_compiled_lazily_once():
    """Scripting a function compiles its typed twin once, under the public
    name; scripting it again, or the twin, finds it in torch.jit's cache."""
    from torch.jit._state import _try_get_jit_cached_function

    from visionops import _script

    first = script(visionops.ps_roi_pool)
    assert first.qualified_name == "__torch__.visionops.ops.ps_roi_pool"
    assert _try_get_jit_cached_function(_script.ps_roi_pool).qualified_name == first.qualified_name
    assert script(visionops.ps_roi_pool).qualified_name == first.qualified_name
    assert script(_script.ps_roi_pool).qualified_name == first.qualified_name


FUNCTIONS = ["nms", "batched_nms"] + IOU_FNS + ROI_FNS + ["multi_scale_roi_align",
                                                           "deform_conv2d"]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_typed_twin_has_the_public_signature(name):
    """What a script compiles has the public function's parameters and
    defaults (and so torchvision's, which test_api checks), but for the
    keyword-only out=, which is eager only (it writes through DLPack, outside
    the dispatcher a script records)."""
    import inspect

    from visionops import _script

    public = inspect.signature(getattr(visionops, name)).parameters
    typed = inspect.signature(getattr(_script, name)).parameters
    assert [(p.name, p.default) for p in typed.values()] == \
        [(p.name, p.default) for p in public.values()
         if not (p.name == "out" and p.kind == p.KEYWORD_ONLY)]


@pytest.mark.parametrize("name", sorted(visionops.ops._SCHEMA_OPS))
def test_functions_made_from_schemas(name, tmp_path):
    """A function made from its op's schema (ops._SCHEMA_OPS) scripts as its
    twin made from the schema: the public parameters and defaults, results
    equal to eager visionops and to scripted torchvision, source that
    inspect finds, a save/load round trip."""
    import inspect

    import exported_samples

    args = exported_samples.sample(name, torch.float32, "random", 0)
    if args is None:
        pytest.skip("no sample exporter in this build (tests/vo_samples_export)")
    fn = getattr(visionops, name)
    twin = getattr(fn, "__original_fn")
    assert [(p.name, p.default) for p in inspect.signature(twin).parameters.values()] == \
        [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]
    assert "torch.ops.visionops.%s(" % name in inspect.getsource(twin)
    scripted = script(fn)
    assert scripted.qualified_name == "__torch__.visionops.ops." + name
    same(scripted(*args), fn(*args))
    if hasattr(tvops, name):
        same(scripted(*args), script(getattr(tvops, name))(*args))
    same(roundtrip(scripted, tmp_path)(*args), fn(*args))


def test_import_compiles_nothing():
    """Importing visionops compiles no script (compilation is lazy)."""
    from conftest import run_python

    code = ("import torch, torch.jit._state as s\n"
            "before = len(s._jit_caching_layer)\n"
            "import visionops\n"
            "print(len(s._jit_caching_layer) - before)\n")
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


# ------------------------------------------------------------- modules


def _roi_modules():
    return [
        ("RoIAlign", (3, 0.5, 2), (3, 0.5, 2), {}),
        ("RoIAlign", ((2, 3), 0.5, -1, True), ((2, 3), 0.5, -1, True), {}),
        ("RoIPool", ([3, 2], 0.5), ([3, 2], 0.5), {}),
        ("PSRoIAlign", (2, 0.5, 2), (2, 0.5, 2), {}),
        ("PSRoIPool", ((2, 2), 0.5), (2, 0.5), {}),  # torchvision scripts an int only
    ]


@pytest.mark.parametrize("name,vo_args,tv_args,_", _roi_modules())
def test_roi_modules(name, vo_args, tv_args, _, tmp_path):
    vo, tv = getattr(visionops, name)(*vo_args), getattr(tvops, name)(*tv_args)
    scripted, tv_scripted = torch.jit.script(vo), torch.jit.script(tv)
    x, rois = roi_inputs(5, channels=24)
    boxes = rois_to_list(rois, N)
    got = scripted(x, rois)
    same(got, vo(x, rois))
    assert_close(got, tv_scripted(x, rois), "float64")
    same(scripted(x, boxes), got)
    same(scripted(x, rois[:0]), vo(x, rois[:0]))
    loaded = roundtrip(scripted, tmp_path)
    same(loaded(x, rois), got)
    same(loaded(x, boxes), got)


def test_roi_module_int_spatial_scale():
    """An int spatial_scale (which eager mode takes) scripts too."""
    x, rois = roi_inputs(8, channels=8)
    for vo in (visionops.RoIAlign(2, 1, 2), visionops.RoIPool(2, 1),
               visionops.PSRoIAlign(2, 1, 2), visionops.PSRoIPool(2, 1)):
        same(torch.jit.script(vo)(x, rois), vo(x, rois))


def test_deform_conv2d_module(tmp_path, rng):
    torch.manual_seed(0)
    vo = visionops.DeformConv2d(4, 6, 3, stride=2, padding=1, groups=2)
    tv = tvops.DeformConv2d(4, 6, 3, stride=2, padding=1, groups=2)
    tv.load_state_dict(vo.state_dict())
    x = torch.tensor(rng.normal(size=(2, 4, 9, 8)), dtype=torch.float32)
    offset = torch.tensor(rng.normal(size=(2, 18, 5, 4)), dtype=torch.float32)
    mask = torch.tensor(rng.uniform(size=(2, 9, 5, 4)), dtype=torch.float32)
    scripted = torch.jit.script(vo)
    for args in ((x, offset), (x, offset, mask)):
        got = scripted(*args)
        same(got, vo(*args))
        assert_close(got, torch.jit.script(tv)(*args), "float32", rtol=1e-4, atol=1e-4)
        same(roundtrip(scripted, tmp_path)(*args), got)
    no_bias = visionops.DeformConv2d(4, 6, 3, bias=False)
    same(torch.jit.script(no_bias)(x, torch.zeros(2, 18, 7, 6)),
         no_bias(x, torch.zeros(2, 18, 7, 6)))


def _pyramid(rng, image=(128, 160)):
    return {str(i): torch.tensor(rng.normal(size=(N, 3, image[0] // 2 ** (i + 2),
                                                 image[1] // 2 ** (i + 2))))
            for i in range(3)}


def test_multi_scale_roi_align_module(tmp_path, rng):
    feats = _pyramid(rng)
    feats["extra"] = torch.zeros(N, 3, 5, 5)  # not in featmap_names: ignored
    names = ["0", "1", "2"]
    boxes = [torch.tensor([[0, 0, 30, 40.], [10, 10, 120, 150], [50, 10, 10, 50]],
                          dtype=torch.float64), torch.zeros(0, 4, dtype=torch.float64)]
    shapes = [(128, 160), (120, 150)]
    vo = visionops.MultiScaleRoIAlign(names, (2, 3), 2, canonical_scale=56)
    tv = tvops.MultiScaleRoIAlign(names, (2, 3), 2, canonical_scale=56)
    scripted = torch.jit.script(vo)
    got = scripted(feats, boxes, shapes)
    same(got, vo(feats, boxes, shapes))
    assert_close(got, torch.jit.script(tv)(feats, boxes, shapes), "float64")
    assert scripted.scales == vo.scales == [0.25, 0.125, 0.0625]
    loaded = roundtrip(scripted, tmp_path)
    same(loaded(feats, boxes, shapes), got)
    assert loaded.scales == [0.25, 0.125, 0.0625]
    same(scripted(feats, [b[:0] for b in boxes], shapes), vo(feats, [b[:0] for b in boxes], shapes))


def test_multi_scale_roi_align_fx_leaves_kept(rng):
    """torch.fx still sees MultiScaleRoIAlign's three helpers as leaves."""
    import torch.fx

    vo = visionops.MultiScaleRoIAlign(["0", "1"], 2, 2)
    gm = torch.fx.symbolic_trace(vo)
    names = [getattr(n.target, "__name__", "") for n in gm.graph.nodes if n.op == "call_function"]
    assert names == ["_select_features", "_pyramid_scales", "multi_scale_roi_align"], names
    feats = _pyramid(rng)
    boxes = [torch.tensor([[0, 0, 30, 40.]], dtype=torch.float64)] * 2
    same(gm(feats, boxes, [(128, 160)] * 2), vo(feats, boxes, [(128, 160)] * 2))


# torch 1.13 warns about GraphModule's own attributes when scripting one
@pytest.mark.filterwarnings("ignore:The TorchScript type system doesn't support")
def test_fx_traced_module_scripts():
    """A module traced with torch.fx (visionops' calls as leaves) scripts:
    the leaves resolve to the typed functions."""
    import torch.fx

    class Calls(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pool = visionops.RoIAlign(2, 0.5, 2)

        def forward(self, x, rois, boxes, scores):
            keep = visionops.nms(boxes, scores, 0.5)
            return self.pool(x, rois).sum() + visionops.box_iou(boxes, boxes)[keep].sum()

    gm = torch.fx.symbolic_trace(Calls())
    x, rois = roi_inputs(9)
    rng = np.random.default_rng(9)
    boxes = torch.from_numpy(detections(rng, 25, np.float64))
    scores = torch.from_numpy(distinct_scores(rng, 25, np.float64))
    scripted = torch.jit.script(gm)
    same(scripted(x, rois, boxes, scores), gm(x, rois, boxes, scores))


@needs_cuda
def test_scripted_on_cuda(rng):
    """Scripts run the ops on CUDA tensors as eager mode does."""
    x, rois = roi_inputs(10, dtype=torch.float32)
    x, rois = x.cuda(), rois.cuda()
    boxes = torch.from_numpy(detections(rng, 60, np.float32)).cuda()
    scores = torch.from_numpy(distinct_scores(rng, 60, np.float32)).cuda()
    same(script(visionops.roi_align)(x, rois_to_list(rois, N), 3, 0.5, 2, True),
         visionops.roi_align(x, rois_to_list(rois, N), 3, 0.5, 2, True))
    same(script(visionops.nms)(boxes, scores, 0.5), visionops.nms(boxes, scores, 0.5))
    pool = visionops.MultiScaleRoIAlign(["0", "1"], 2, 2)
    feats = {k: v.float().cuda() for k, v in _pyramid(rng).items()}
    image_boxes = [boxes[:10] / 8, boxes[10:20] / 8]
    same(torch.jit.script(pool)(feats, image_boxes, [(128, 160)] * 2),
         pool(feats, image_boxes, [(128, 160)] * 2))


# ------------------------------------------------------------- errors


def test_errors_in_scripts_name_the_op_and_argument():
    """visionops' own checks run in the script, with the eager message
    (TorchScript reports it as torch.jit.Error naming VisionOpsValueError)."""
    x, rois = roi_inputs(6)
    roi_align = script(visionops.roi_align)
    with pytest.raises(torch.jit.Error,
                       match=r"VisionOpsValueError: roi_align: boxes: each tensor of the list "
                             r"must have shape \[L, 4\], got \[13, 5\]"):
        roi_align(x, [rois], 2)
    with pytest.raises(visionops.VisionOpsValueError,
                       match=r"roi_align: boxes: each tensor of the list must have shape "
                             r"\[L, 4\], got \[13, 5\]"):
        visionops.roi_align(x, [rois], 2)
    with pytest.raises(torch.jit.Error, match=r"roi_align: output_size must be an int or a pair"):
        roi_align(x, rois, [1, 2, 3])
    with pytest.raises(torch.jit.Error, match="box_iou: fmt must be one of"):
        script(visionops.box_iou)(rois[:, 1:], rois[:, 1:], "xyz")
    with pytest.raises(torch.jit.Error, match=r"deform_conv2d: offset has 7 channels"):
        script(visionops.deform_conv2d)(x, torch.zeros(N, 7, H - 2, W - 2),
                                        torch.zeros(4, C, 3, 3))
    pool = torch.jit.script(visionops.MultiScaleRoIAlign(["z"], 2, 2))
    with pytest.raises(torch.jit.Error, match=r"none of the feature maps \['z'\] is in x"):
        pool({"a": x}, [rois[:, 1:]], [(16, 16)])


def test_library_errors_in_scripts_raise():
    """A bad input that the C library finds raises from a script too."""
    x, rois = roi_inputs(7)
    with pytest.raises(RuntimeError):
        script(visionops.ps_roi_align)(x[:, :7], rois, 2)  # 7 channels: not 2 * 2 * k


@pytest.mark.skipif(not TORCH_2, reason="torch 1.13's TorchScript interpreter drops the message "
                                        "of an exception raised by a Python kernel (the op's "
                                        "kernels are Python, torch.library); torch >= 2 keeps it")
def test_library_error_messages_in_scripts():
    x, rois = roi_inputs(7)
    with pytest.raises(RuntimeError, match=r"VisionOpsValueError: ps_roi_align: .*channels"):
        script(visionops.ps_roi_align)(x[:, :7], rois, 2)


# ------------------------------------------------------- a detection model


def test_faster_rcnn_scripted_with_visionops_ops():
    """The issue's item: a torchvision Faster R-CNN with visionops' ops
    swapped in, scripted whole; its detections equal the eager model's and
    torchvision's scripted model's."""
    from detection import images, make_fasterrcnn, same_detections, visionops_ops

    model = make_fasterrcnn()
    imgs = images()
    with torch.no_grad():
        with visionops_ops(model):
            # TorchScript resolves module globals (box_ops.batched_nms) when
            # it compiles, so the model is scripted inside the swap.
            scripted = torch.jit.script(model)
            eager = model(imgs)
        assert "visionops.ops.batched_nms" in scripted.rpn.filter_proposals.code
        assert "visionops.ops.batched_nms" in scripted.roi_heads.postprocess_detections.code
        assert "visionops.ops.multi_scale_roi_align" in scripted.roi_heads.box_roi_pool.code
        with pytest.warns(UserWarning, match="always returns a"):
            _, got = scripted(imgs)
        assert sum(len(d["boxes"]) for d in got) > 0
        same_detections(got, eager)
        with pytest.warns(UserWarning, match="always returns a"):
            _, want = torch.jit.script(make_fasterrcnn())(imgs)
        same_detections(got, want)
