"""Dynamic shapes (torch >= 2): torch.export with torch.export.Dim for the
number of RoIs, boxes, images and the spatial sizes keeps those sizes
symbolic through visionops' ops (their Meta kernels build outputs from the C
library's shape rules); the exported programs run on other sizes and agree
with eager visionops and torchvision. torch.compile(dynamic=True) compiles
once for several sizes. nms / batched_nms export with a dynamic N and a
data-dependent output size. A torchvision Faster R-CNN on visionops' ops
exports with a data-dependent number of boxes per image. (opcheck, which
traces every op with dynamic shapes too, is test_opcheck.py.)"""
import sys
import os

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "export"):
    pytest.skip("torch.export needs torch >= 2.1 (this is %s)" % torch.__version__,
                allow_module_level=True)
torchvision = pytest.importorskip("torchvision")

import visionops  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import detection  # noqa: E402
from conftest import FnModule  # noqa: E402

Dim = torch.export.Dim
tvops = torchvision.ops


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _rois(k, batch, extent, seed, dtype=torch.float32):
    """k RoIs (batch index, x1, y1, x2, y2) inside an extent x extent image."""
    g = _gen(seed)
    xy = torch.rand(k, 2, generator=g, dtype=dtype) * extent * 0.7
    wh = torch.rand(k, 2, generator=g, dtype=dtype) * extent * 0.3 + 1
    idx = torch.randint(0, batch, (k, 1), generator=g).to(dtype)
    return torch.cat([idx, xy, xy + wh], dim=1)


def _boxes(n, seed, dtype=torch.float32):
    g = _gen(seed)
    xy = torch.rand(n, 2, generator=g, dtype=dtype) * 60
    return torch.cat([xy, xy + 4 + torch.rand(n, 2, generator=g, dtype=dtype) * 25], dim=1)


def _scores(n, seed):
    return torch.randperm(n, generator=_gen(seed + 500)).float() / max(n, 1)


def _export(fn, args, dynamic_shapes):
    return torch.export.export(FnModule(fn), tuple(args), dynamic_shapes={"args": dynamic_shapes})


def _placeholder_sizes(ep):
    """The sizes of the exported program's inputs, as strings ("s0", "5")."""
    return [[str(d) for d in n.meta["val"].shape] for n in ep.graph.nodes
            if n.op == "placeholder" and hasattr(n.meta.get("val"), "shape")]


def _assert_symbolic(ep, input_index, dim):
    size = _placeholder_sizes(ep)[input_index][dim]
    assert not size.isdigit(), "input %d dim %d was specialized to %s" % (input_index, dim, size)


# ------------------------------------------------------- RoI ops, dynamic K

ROI_CASES = {
    # name: (visionops function, torchvision function, input channels)
    "roi_align": (lambda x, r: visionops.roi_align(x, r, (3, 2), 0.5, 2, True),
                  lambda x, r: tvops.roi_align(x, r, (3, 2), 0.5, 2, True), 4),
    "roi_align_adaptive": (lambda x, r: visionops.roi_align(x, r, 3, 0.5, -1, False),
                           lambda x, r: tvops.roi_align(x, r, 3, 0.5, -1, False), 4),
    "roi_pool": (lambda x, r: visionops.roi_pool(x, r, (2, 3), 0.5),
                 lambda x, r: tvops.roi_pool(x, r, (2, 3), 0.5), 4),
    "ps_roi_align": (lambda x, r: visionops.ps_roi_align(x, r, 2, 0.5, 2),
                     lambda x, r: tvops.ps_roi_align(x, r, 2, 0.5, 2), 8),
    "ps_roi_pool": (lambda x, r: visionops.ps_roi_pool(x, r, (2, 3), 0.5),
                    lambda x, r: tvops.ps_roi_pool(x, r, (2, 3), 0.5), 12),
}


@pytest.mark.parametrize("name", sorted(ROI_CASES))
def test_export_roi_ops_dynamic_rois(name):
    vo_fn, tv_fn, channels = ROI_CASES[name]
    x = torch.randn(2, channels, 20, 24, generator=_gen(0), dtype=torch.float64)
    ep = _export(vo_fn, (x, _rois(6, 2, 40, 1, torch.float64)), ({}, {0: Dim("K")}))
    _assert_symbolic(ep, 1, 0)
    for k, seed in ((1, 2), (9, 3), (40, 4), (0, 5)):
        rois = _rois(k, 2, 40, seed, torch.float64)
        got = ep.module()(x, rois)
        assert got.shape[0] == k
        assert torch.equal(got, vo_fn(x, rois))
        torch.testing.assert_close(got, tv_fn(x, rois), rtol=1e-10, atol=1e-10)


def test_export_roi_align_dynamic_rois_batch_and_map():
    """K, N, H and W all dynamic."""
    fn = ROI_CASES["roi_align"][0]
    x = torch.randn(2, 4, 20, 24, generator=_gen(0))
    dims = ({0: Dim("N"), 2: Dim("H"), 3: Dim("W")}, {0: Dim("K")})
    ep = _export(fn, (x, _rois(6, 2, 20, 1)), dims)
    for i, d in ((0, 0), (0, 2), (0, 3), (1, 0)):
        _assert_symbolic(ep, i, d)
    for n, h, w, k in ((3, 17, 31, 5), (5, 40, 12, 13)):
        x2 = torch.randn(n, 4, h, w, generator=_gen(h))
        rois = _rois(k, n, min(h, w), k)
        torch.testing.assert_close(ep.module()(x2, rois), ROI_CASES["roi_align"][1](x2, rois))


def test_export_multi_scale_roi_align_dynamic_rois():
    feats = [torch.randn(2, 3, 32, 32, generator=_gen(0)),
             torch.randn(2, 3, 16, 16, generator=_gen(1))]

    def fn(f0, f1, rois):
        return visionops.multi_scale_roi_align([f0, f1], rois, [0.25, 0.125], (3, 3), 2)

    ep = _export(fn, (*feats, _rois(7, 2, 128, 1)), ({}, {}, {0: Dim("K")}))
    _assert_symbolic(ep, 2, 0)
    pool = tvops.MultiScaleRoIAlign(["0", "1"], 3, 2)
    for k in (1, 11, 60):
        rois = _rois(k, 2, 128, k)
        got = ep.module()(*feats, rois)
        assert torch.equal(got, fn(*feats, rois))
        boxes = [rois[rois[:, 0] == i, 1:] for i in range(2)]
        order = torch.cat([torch.nonzero(rois[:, 0] == i)[:, 0] for i in range(2)])
        want = pool({"0": feats[0], "1": feats[1]}, boxes, [(128, 128)] * 2)
        torch.testing.assert_close(got[order], want)


def test_export_multi_scale_roi_align_module_dynamic_boxes():
    """visionops.MultiScaleRoIAlign with per-image box lists of dynamic length."""
    feats = {"0": torch.randn(2, 3, 32, 32, generator=_gen(0)),
             "1": torch.randn(2, 3, 16, 16, generator=_gen(1))}
    vo_pool = visionops.MultiScaleRoIAlign(["0", "1"], 3, 2)
    tv_pool = tvops.MultiScaleRoIAlign(["0", "1"], 3, 2)

    def fn(f0, f1, b0, b1):
        return vo_pool({"0": f0, "1": f1}, [b0, b1], [(128, 128)] * 2)

    args = (feats["0"], feats["1"], _boxes(5, 0), _boxes(4, 1))
    ep = _export(fn, args, ({}, {}, {0: Dim("L0")}, {0: Dim("L1")}))
    for n0, n1 in ((1, 30), (17, 2)):
        b0, b1 = _boxes(n0, n0), _boxes(n1, n1 + 100)
        got = ep.module()(feats["0"], feats["1"], b0, b1)
        torch.testing.assert_close(got, tv_pool(feats, [b0, b1], [(128, 128)] * 2))


# ---------------------------------------------------- deform_conv2d, box ops


def test_export_deform_conv2d_dynamic_batch_and_spatial():
    def fn(x, offset, mask, weight, bias):
        return visionops.deform_conv2d(x, offset, weight, bias, stride=(2, 1), padding=(1, 0),
                                       dilation=(1, 2), mask=mask)

    def args(n, h, w, seed):
        g = _gen(seed)
        hout, wout = (h + 2 - 3) // 2 + 1, (w - 2 * 2 - 1) // 1 + 1
        return (torch.randn(n, 4, h, w, generator=g, dtype=torch.float64),
                torch.randn(n, 2 * 2 * 9, hout, wout, generator=g, dtype=torch.float64),
                torch.rand(n, 2 * 9, hout, wout, generator=g, dtype=torch.float64),
                torch.randn(6, 2, 3, 3, generator=g, dtype=torch.float64),
                torch.randn(6, generator=g, dtype=torch.float64))

    n, h, w = Dim("N"), Dim("H", min=3), Dim("W", min=6)
    # offset's and mask's spatial sizes are the conv output size; given as
    # Dims of their own, the library checks them when the program runs
    hout, wout = Dim("Hout"), Dim("Wout")
    dyn = ({0: n, 2: h, 3: w}, {0: n, 2: hout, 3: wout}, {0: n, 2: hout, 3: wout}, {}, {})
    ep = _export(fn, args(2, 9, 11, 0), dyn)
    _assert_symbolic(ep, 0, 0)
    _assert_symbolic(ep, 0, 2)
    for n_, h_, w_ in ((1, 7, 8), (3, 12, 15)):
        a = args(n_, h_, w_, h_)
        got = ep.module()(*a)
        torch.testing.assert_close(got, tvops.deform_conv2d(a[0], a[1], a[3], a[4], (2, 1), (1, 0),
                                                            (1, 2), a[2]))
        assert torch.equal(got, fn(*a))
    # Hout and Wout are Dims of their own: the rule that ties them to H and
    # W is checked by the library when the program runs
    a = args(2, 9, 11, 0)
    wrong = torch.zeros(2, 36, 4, 7, dtype=torch.float64)
    with pytest.raises(ValueError, match="deform_conv2d: offset must have spatial size"):
        ep.module()(a[0], wrong, a[2][:, :, :4], a[3], a[4])


@pytest.mark.parametrize("name", ["box_iou", "generalized_box_iou", "distance_box_iou",
                                  "complete_box_iou"])
def test_export_box_iou_dynamic_n_m(name):
    vo_fn, tv_fn = getattr(visionops, name), getattr(tvops, name)
    ep = _export(vo_fn, (_boxes(5, 0), _boxes(7, 1)), ({0: Dim("N")}, {0: Dim("M")}))
    _assert_symbolic(ep, 0, 0)
    _assert_symbolic(ep, 1, 0)
    for n, m in ((1, 9), (30, 2), (0, 4)):
        a, b = _boxes(n, n), _boxes(m, m + 50)
        got = ep.module()(a, b)
        assert got.shape == (n, m)
        torch.testing.assert_close(got, tv_fn(a, b))


def test_export_batched_box_iou_dynamic_n_m():
    """[B, N, 4] x [B, M, 4] (torchvision 0.29's batched form): the batch is
    a Python loop over slices, so B is static; N and M stay dynamic."""
    a, b = _boxes(10, 0).reshape(2, 5, 4), _boxes(14, 1).reshape(2, 7, 4)
    ep = _export(visionops.box_iou, (a, b), ({1: Dim("N")}, {1: Dim("M")}))
    _assert_symbolic(ep, 0, 1)
    _assert_symbolic(ep, 1, 1)
    a, b = _boxes(6, 2).reshape(2, 3, 4), _boxes(22, 3).reshape(2, 11, 4)
    got = ep.module()(a, b)
    torch.testing.assert_close(got, torch.stack([tvops.box_iou(a[i], b[i]) for i in range(2)]))


# ------------------------------------------------------------ nms, dynamic N


def test_export_nms_and_batched_nms_dynamic_n():
    def fn(boxes, scores, idxs):
        return visionops.nms(boxes, scores, 0.5), visionops.batched_nms(boxes, scores, idxs, 0.3)

    def args(n):
        return _boxes(n, n), _scores(n, n), torch.randint(0, 3, (n,), generator=_gen(n))

    n = Dim("N")
    ep = _export(fn, args(20), ({0: n}, {0: n}, {0: n}))
    _assert_symbolic(ep, 0, 0)
    targets = [str(node.target) for node in ep.graph.nodes]
    assert "visionops.nms_kept.default" in targets
    assert "visionops.batched_nms_kept.default" in targets
    for k in (2, 7, 150, 1):
        b, s, i = args(k)
        keep, bkeep = ep.module()(b, s, i)
        assert torch.equal(keep, tvops.nms(b, s, 0.5))
        assert torch.equal(bkeep, tvops.batched_nms(b, s, i, 0.3))
        assert torch.equal(keep, visionops.nms(b, s, 0.5))


@pytest.mark.parametrize("batched", [False, True])
def test_export_soft_nms_dynamic_n(batched):
    """soft_nms / batched_soft_nms (mmcv's (dets, keep)) export through
    their *_kept ops with a dynamic N and a data-dependent K."""
    def fn(boxes, scores, idxs):
        if batched:
            return visionops.batched_soft_nms(boxes, scores, idxs, 0.3, 0.5, 0.05, "gaussian")
        return visionops.soft_nms(boxes, scores, 0.3, 0.5, 0.05, "linear")

    def args(n):
        return _boxes(n, n), _scores(n, n), torch.randint(0, 3, (n,), generator=_gen(n))

    n = Dim("N")
    ep = _export(fn, args(20), ({0: n}, {0: n}, {0: n}))
    targets = [str(node.target) for node in ep.graph.nodes]
    assert ("visionops.%s_kept.default" % ("batched_soft_nms" if batched else "soft_nms")
            in targets), targets
    for k in (2, 7, 150, 1):
        got, want = ep.module()(*args(k)), fn(*args(k))
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
        assert got[0].shape[0] == got[1].shape[0] <= k


def test_export_fixed_size_nms_dynamic_n():
    """The sync-free form (keep [N], num_kept) for CUDA-graph users exports
    with a dynamic N too, and its outputs stay [N] and []."""
    def fn(boxes, scores):
        return torch.ops.visionops.nms(boxes, scores, 0.5)

    n = Dim("N")
    ep = _export(fn, (_boxes(20, 0), _scores(20, 0)), ({0: n}, {0: n}))
    for k in (3, 64):
        b, s = _boxes(k, k), _scores(k, k)
        keep, num = ep.module()(b, s)
        assert keep.shape == (k,) and num.shape == ()
        assert torch.equal(keep[:int(num)], tvops.nms(b, s, 0.5))


def test_nms_kept_output_is_bounded_by_n():
    """The kept count is a new data-dependent size known to be <= N."""
    def fn(boxes, scores):
        keep = visionops.nms(boxes, scores, 0.5)
        torch._check(keep.shape[0] <= boxes.shape[0])
        return keep

    ep = _export(fn, (_boxes(20, 0), _scores(20, 0)), ({0: Dim("N")}, {0: Dim("N")}))
    b, s = _boxes(33, 1), _scores(33, 1)
    assert torch.equal(ep.module()(b, s), tvops.nms(b, s, 0.5))


def test_export_nms_then_roi_align():
    """A data-dependent count (NMS survivors) flowing into roi_align: the
    Meta kernel checks an unbacked K on a stand-in size, not a guard."""
    def fn(x, boxes, scores):
        keep = visionops.nms(boxes, scores, 0.5)
        kept = boxes[keep]
        rois = torch.cat([torch.zeros_like(kept[:, :1]), kept], dim=1)
        return visionops.roi_align(x, rois, 2, 0.25, 2, True)

    x = torch.randn(1, 3, 24, 24, generator=_gen(0))
    n = Dim("N")
    ep = _export(fn, (x, _boxes(30, 0), _scores(30, 0)), ({}, {0: n}, {0: n}))
    for k in (4, 50):
        b, s = _boxes(k, k), _scores(k, k)
        got = ep.module()(x, b, s)
        kept = b[tvops.nms(b, s, 0.5)]
        want = tvops.roi_align(x, [kept], 2, 0.25, 2, True)
        torch.testing.assert_close(got, want)


# -------------------------------------------------------- torch.compile


@pytest.fixture
def no_duck_sizing():
    """torch.compile gives inputs of equal sizes one symbol ("duck sizing"),
    so a batch of 4 beside boxes' 4 columns would recompile when they
    differ; the tests count compilations of the ops, not of that."""
    from torch.fx.experimental import _config

    with _config.patch(use_duck_shape=False):
        torch._dynamo.reset()
        yield
    torch._dynamo.reset()


class _CountingBackend:
    """A torch.compile backend that counts compilations and runs the graph."""

    def __init__(self):
        self.compiles = 0

    def __call__(self, gm, example_inputs):
        self.compiles += 1
        return gm.forward


@pytest.mark.parametrize("name", sorted(ROI_CASES))
def test_compile_dynamic_roi_ops_compile_once(name, no_duck_sizing):
    vo_fn, tv_fn, channels = ROI_CASES[name]
    backend = _CountingBackend()
    compiled = torch.compile(vo_fn, backend=backend, dynamic=True, fullgraph=True)
    x = torch.randn(2, channels, 20, 24, generator=_gen(0))
    for k in (3, 8, 21, 50):
        rois = _rois(k, 2, 40, k)
        got = compiled(x, rois)
        assert torch.equal(got, vo_fn(x, rois))
        torch.testing.assert_close(got, tv_fn(x, rois))
    assert backend.compiles == 1


def test_compile_dynamic_nms_box_iou_deform_compile_once(no_duck_sizing):
    backend = _CountingBackend()

    def fn(boxes, scores, x, offset, weight):
        keep = visionops.batched_nms(boxes, scores, (scores * 3).long(), 0.5)
        iou = visionops.box_iou(boxes, boxes[:5])
        return keep, iou, visionops.deform_conv2d(x, offset, weight, padding=1)

    compiled = torch.compile(fn, backend=backend, dynamic=True, fullgraph=True)
    for n, batch, hw in ((10, 4, 6), (33, 2, 9), (70, 7, 13)):
        g = _gen(n)
        args = (_boxes(n, n), _scores(n, n), torch.randn(batch, 2, hw, hw, generator=g),
                torch.randn(batch, 18, hw, hw, generator=g), torch.randn(3, 2, 3, 3, generator=g))
        got, want = compiled(*args), fn(*args)
        for a, b in zip(got, want):
            assert torch.equal(a, b)
        assert torch.equal(got[0], tvops.batched_nms(args[0], args[1], (args[1] * 3).long(), 0.5))
    assert backend.compiles == 1


def test_compile_dynamic_multi_scale_roi_align_compile_once(no_duck_sizing):
    backend = _CountingBackend()
    pool = visionops.MultiScaleRoIAlign(["0", "1"], 3, 2)

    def fn(f0, f1, b0, b1):
        return pool({"0": f0, "1": f1}, [b0, b1], [(128, 128)] * 2)

    compiled = torch.compile(fn, backend=backend, dynamic=True, fullgraph=True)
    tv_pool = tvops.MultiScaleRoIAlign(["0", "1"], 3, 2)
    feats = (torch.randn(2, 3, 32, 32, generator=_gen(0)),
             torch.randn(2, 3, 16, 16, generator=_gen(1)))
    for n0, n1 in ((6, 9), (13, 3), (40, 21)):
        b0, b1 = _boxes(n0, n0), _boxes(n1, n1 + 100)
        got = compiled(*feats, b0, b1)
        assert torch.equal(got, fn(*feats, b0, b1))
        torch.testing.assert_close(got, tv_pool({"0": feats[0], "1": feats[1]}, [b0, b1],
                                                [(128, 128)] * 2))
    assert backend.compiles == 1


def test_compile_dynamic_roi_align_backward(no_duck_sizing):
    """The backward (batch_size/height/width as SymInt arguments) compiles
    once with dynamic K, N, H, W and gives eager's gradients. (Sizes 0 and 1
    are left out: torch.compile specializes them.)"""
    backend_calls = []

    def backend(gm, example_inputs):  # aot_eager (forward and backward graphs), counted
        backend_calls.append(gm)
        return torch._dynamo.lookup_backend("aot_eager")(gm, example_inputs)

    def loss(x, rois):
        return visionops.roi_align(x, rois, 3, 0.5, 2, True).sin().sum()

    compiled = torch.compile(loss, backend=backend, dynamic=True, fullgraph=True)
    for n, h, k in ((2, 16, 5), (3, 21, 12), (4, 30, 40)):
        x = torch.randn(n, 4, h, h + 3, generator=_gen(h), dtype=torch.float64,
                        requires_grad=True)
        rois = _rois(k, n, h, k, torch.float64)
        (got,) = torch.autograd.grad(compiled(x, rois), x)
        (want,) = torch.autograd.grad(loss(x, rois), x)
        assert torch.equal(got, want)
        xt = x.detach().requires_grad_()
        (tv_grad,) = torch.autograd.grad(tvops.roi_align(xt, rois, 3, 0.5, 2, True).sin().sum(), xt)
        torch.testing.assert_close(got, tv_grad)
    assert len(backend_calls) == 1


def test_export_roi_align_training_graph_backward_dynamic_k():
    """torch.export's joint graph (export_for_training, then the backward
    run on the exported module) keeps K dynamic through roi_align's
    backward."""
    def loss(x, rois):
        return visionops.roi_align(x, rois, 3, 0.5, 2, True).sin().sum()

    x = torch.randn(2, 4, 16, 16, generator=_gen(0), dtype=torch.float64)
    ep = _export(loss, (x, _rois(5, 2, 16, 1, torch.float64)), ({}, {0: Dim("K")}))
    module = ep.module()
    for k in (2, 17):
        rois = _rois(k, 2, 16, k, torch.float64)
        xg = x.clone().requires_grad_()
        (got,) = torch.autograd.grad(module(xg, rois), xg)
        xt = x.clone().requires_grad_()
        (want,) = torch.autograd.grad(tvops.roi_align(xt, rois, 3, 0.5, 2, True).sin().sum(), xt)
        torch.testing.assert_close(got, want)


# ------------------------------------------------------------- Faster R-CNN


class _RoIHeads(torch.nn.Module):
    """A Faster R-CNN's RoI heads and postprocessing, from the FPN features
    and two images' RPN proposals to the final detections."""

    def __init__(self, model, image_sizes):
        super().__init__()
        self.roi_heads = model.roi_heads
        self.image_sizes = image_sizes

    def forward(self, f0, f1, f2, f3, fpool, p0, p1):
        features = {"0": f0, "1": f1, "2": f2, "3": f3, "pool": fpool}
        detections, _ = self.roi_heads(features, [p0, p1], self.image_sizes)
        return [(d["boxes"], d["scores"], d["labels"]) for d in detections]


def _as_dicts(outs):
    return [{"boxes": b, "scores": s, "labels": l} for b, s, l in outs]


def _features_and_proposals(model, imgs):
    with torch.no_grad():
        images, _ = model.transform(imgs)
        features = model.backbone(images.tensors)
        proposals, _ = model.rpn(images, features)
    return images, features, proposals


def test_fasterrcnn_roi_heads_export_dynamic_proposals():
    """The RoI heads + postprocess of a torchvision Faster R-CNN on
    visionops' ops (MultiScaleRoIAlign, batched_nms, box_iou) export with a
    dynamic number of proposals per image; the detections of the exported
    program equal eager visionops' and torchvision's own ops'."""
    model = detection.make_fasterrcnn(box_score_thresh=0.25, box_detections_per_img=400)
    imgs = detection.images(2)
    images, features, proposals = _features_and_proposals(model, imgs)
    heads = _RoIHeads(model, images.image_sizes)
    feats = [features[k] for k in ("0", "1", "2", "3", "pool")]
    with detection.visionops_ops(model):
        ep = torch.export.export(heads, (*feats, *proposals),
                                 dynamic_shapes=(None,) * 5 + ({0: Dim("P0")}, {0: Dim("P1")}))
        assert any("visionops.multi_scale_roi_align" in str(n.target) for n in ep.graph.nodes)
        for k0, k1 in ((100, 100), (37, 81), (5, 60)):
            props = [proposals[0][:k0], proposals[1][:k1]]
            with torch.no_grad():
                got = _as_dicts(ep.module()(*feats, *props))
                eager_vo = _as_dicts(heads(*feats, *props))
            detection.same_detections(got, eager_vo, atol=1e-6)
            assert sum(len(d["boxes"]) for d in got) > 0
    for k0, k1 in ((100, 100), (37, 81), (5, 60)):
        props = [proposals[0][:k0], proposals[1][:k1]]
        with torch.no_grad():
            want = _as_dicts(heads(*feats, *props))  # torchvision's own ops
            got = _as_dicts(ep.module()(*feats, *props))
        detection.same_detections(got, want)


def test_fasterrcnn_full_model_export_data_dependent_boxes():
    """The whole Faster R-CNN on visionops' ops, images of a static size:
    the number of boxes per image after each NMS is data-dependent
    (batched_nms_kept's new size). torchvision's detection code itself asks
    two questions about those sizes that a sound export cannot answer
    (BoxCoder.decode's `if box_sum > 0`, and postprocess_detections'
    `pred_boxes.split(boxes_per_image)`, whose views' offsets depend on
    them), so it exports with torch.export.draft_export, which answers them
    from the example and reports them; none of them come from visionops.
    (torchvision's own ops fail earlier, in torchvision.ops.batched_nms'
    `if boxes.numel() == 0`.) The exported program's detections equal
    eager's."""
    model = detection.make_fasterrcnn(box_score_thresh=0.25, box_detections_per_img=400)

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, a, b):
            return [(d["boxes"], d["scores"], d["labels"]) for d in self.m([a, b])]

    with detection.visionops_ops(model):
        ep = torch.export.draft_export(Wrap(model), tuple(detection.images(2)), strict=False)
        # what the draft export had to answer from the example: each is in
        # torchvision's detection code, none in visionops
        inner = [failure.data["user_stack"][-1]["name"] for failure in ep._report.failures]
        assert 1 <= len(inner) <= 2 and set(inner) <= {"decode", "postprocess_detections"}, inner
        assert not any("visionops" in str(failure.data) for failure in ep._report.failures)
        targets = [str(n.target) for n in ep.graph.nodes]
        assert "visionops.batched_nms_kept.default" in targets
        assert "visionops.multi_scale_roi_align.default" in targets
        assert not any("torchvision." in t for t in targets)
        counts = set()
        for seed in (1, 2, 3):
            imgs = detection.images(2, seed=seed)
            with torch.no_grad():
                got = _as_dicts(ep.module()(*imgs))
                want = model(imgs)
            detection.same_detections(got, want)
            counts.update(len(d["boxes"]) for d in got)
    with torch.no_grad():
        detection.same_detections(got, model(imgs))  # torchvision's own ops
    assert len(counts) > 1, counts  # the number of boxes did vary
