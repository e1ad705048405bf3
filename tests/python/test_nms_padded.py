"""batched_nms_padded and onnx_nms (SPEC-NEXT section 4).

batched_nms_padded against a per-image loop of torchvision's batched_nms
plus a top-k (bit for bit: tie-free scores, since torchvision's final sort
is not stable); onnx_nms against a float32 NumPy restatement of
onnxruntime's NonMaxSuppression written here (runs everywhere), and, where
installed (CI's torch 2.x lane), onnxruntime itself and the ONNX reference
evaluator on SPEC-NEXT 4.4's cases."""
import math

import numpy as np
import pytest

import visionops

try:
    import torch
    import torchvision
except ImportError:  # the onnx_nms tests need neither
    torch = torchvision = None

needs_torchvision = pytest.mark.skipif(torchvision is None, reason="needs torch and torchvision")


def _boxes(rng, b, m, extra=(), spread=100.0, size=(4.0, 40.0)):
    xy = rng.uniform(0, spread, (b, m) + tuple(extra) + (2,))
    wh = rng.uniform(size[0], size[1], (b, m) + tuple(extra) + (2,))
    return np.concatenate([xy, xy + wh], -1).astype(np.float32)


def _scores(rng, b, c, m, dtype=np.float32):
    """Distinct scores (no ties anywhere in the call)."""
    while True:
        s = rng.uniform(0, 1, (b, c, m)).astype(dtype)
        if np.unique(s).size == s.size:
            return s


# ------------------------------------------------------ batched_nms_padded


def _padded_reference(boxes, scores, iou, score_threshold=None, max_per_class=-1,
                      max_per_image=100, box_format="xyxy", class_agnostic=False,
                      pre_nms_top_k=-1):
    """Per image: the candidates (score > threshold), the top pre_nms_top_k
    per class, torchvision's batched_nms (idxs = class, or nms when
    class-agnostic), the first max_per_class of each class, then the top
    max_per_image by score."""
    boxes, scores = torch.as_tensor(boxes), torch.as_tensor(scores)
    b_count, c_count, m_count = scores.shape
    per_class_boxes = boxes.dim() == 4
    keep = torch.full((b_count, max_per_image), -1, dtype=torch.int64)
    labels = torch.full((b_count, max_per_image), -1, dtype=torch.int64)
    out_scores = torch.zeros((b_count, max_per_image), dtype=scores.dtype)
    num = torch.zeros(b_count, dtype=torch.int64)
    for b in range(b_count):
        rows, classes, box_rows, vals = [], [], [], []
        for c in range(c_count):
            s = scores[b, c]
            cand = torch.arange(m_count) if score_threshold is None else \
                torch.nonzero(s.double() > score_threshold).flatten()
            cand = cand[torch.sort(s[cand], descending=True, stable=True)[1]]
            if pre_nms_top_k >= 0:
                cand = cand[:pre_nms_top_k]
            rows.append(cand)
            classes.append(torch.full_like(cand, c))
            bx = boxes[b, cand, c] if per_class_boxes else boxes[b, cand]
            box_rows.append(torchvision.ops.box_convert(bx, box_format, "xyxy"))
            vals.append(s[cand])
        rows, classes = torch.cat(rows), torch.cat(classes)
        bx, vals = torch.cat(box_rows), torch.cat(vals)
        if class_agnostic:
            kept = torchvision.ops.nms(bx.float() if bx.dtype != torch.float64 else bx,
                                       vals.float() if vals.dtype != torch.float64 else vals, iou)
        else:
            kept = torchvision.ops.batched_nms(bx.float() if bx.dtype != torch.float64 else bx,
                                               vals.float() if vals.dtype != torch.float64
                                               else vals, classes, iou)
        if max_per_class >= 0 and not class_agnostic:
            taken = {}
            capped = []
            for k in kept.tolist():
                c = int(classes[k])
                if taken.get(c, 0) < max_per_class:
                    taken[c] = taken.get(c, 0) + 1
                    capped.append(k)
            kept = torch.tensor(capped, dtype=torch.int64)
        elif max_per_class >= 0:
            kept = kept[:max_per_class]
        kept = kept[:max_per_image]
        n = kept.numel()
        num[b] = n
        keep[b, :n] = rows[kept]
        labels[b, :n] = classes[kept]
        out_scores[b, :n] = vals[kept]
    return keep, labels, out_scores, num


def _assert_padded_equal(got, want):
    for g, w, name in zip(got, want, ("keep", "labels", "scores", "num")):
        g = torch.as_tensor(np.asarray(g)) if not isinstance(g, torch.Tensor) else g
        assert g.dtype == w.dtype, name
        assert torch.equal(g, w), "%s differs:\n%s\n%s" % (name, g, w)


@needs_torchvision
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("box_format", ["xyxy", "xywh", "cxcywh"])
def test_padded_against_batched_nms(seed, box_format):
    rng = np.random.default_rng(seed)
    b, m, c = (2, 120, 4) if seed % 2 else (3, 60, 7)
    boxes = _boxes(rng, b, m, spread=80.0)
    if box_format != "xyxy":  # the same boxes, written in the format
        boxes = torchvision.ops.box_convert(torch.from_numpy(boxes), "xyxy", box_format).numpy()
    scores = _scores(rng, b, c, m)
    kwargs = dict(score_threshold=[None, 0.3, 0.05, 0.6][seed], max_per_class=[-1, 3, 10, 0][seed],
                  max_per_image=[100, 5, 17, 9][seed], box_format=box_format,
                  pre_nms_top_k=[-1, 30, 7, -1][seed])
    iou = [0.5, 0.3, 0.7, 0.45][seed]
    want = _padded_reference(boxes, scores, iou, **kwargs)
    _assert_padded_equal(visionops.batched_nms_padded(boxes, scores, iou, **kwargs), want)
    _assert_padded_equal(visionops.batched_nms_padded(torch.from_numpy(boxes),
                                                      torch.from_numpy(scores), iou, **kwargs),
                         want)


@needs_torchvision
@pytest.mark.parametrize("per_class_boxes", [False, True])
def test_padded_class_agnostic(per_class_boxes):
    rng = np.random.default_rng(5)
    b, m, c = 2, 80, 3
    boxes = _boxes(rng, b, m, (c,) if per_class_boxes else (), spread=60.0)
    scores = _scores(rng, b, c, m)
    for agnostic in (False, True):
        for cap in (-1, 4):
            kw = dict(score_threshold=0.2, max_per_class=cap, max_per_image=25,
                      class_agnostic=agnostic)
            _assert_padded_equal(visionops.batched_nms_padded(boxes, scores, 0.5, **kw),
                                 _padded_reference(boxes, scores, 0.5, **kw))


@needs_torchvision
def test_padded_float64_and_halves():
    rng = np.random.default_rng(6)
    boxes = _boxes(rng, 2, 90).astype(np.float64)
    scores = _scores(rng, 2, 3, 90, np.float64)
    kw = dict(score_threshold=0.1, max_per_image=40)
    _assert_padded_equal(visionops.batched_nms_padded(boxes, scores, 0.5, **kw),
                         _padded_reference(boxes, scores, 0.5, **kw))
    # The half types compute in float32: the same as float32 on the same values.
    tb, ts = torch.from_numpy(boxes), torch.from_numpy(scores)
    for dt in (torch.float16, torch.bfloat16):
        hb, hs = tb.to(dt), ts.to(dt)
        got = visionops.batched_nms_padded(hb, hs, 0.5, **kw)
        want = visionops.batched_nms_padded(hb.float(), hs.float(), 0.5, **kw)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
        assert got[2].dtype == dt and torch.equal(got[2].float(), want[2])
        assert torch.equal(got[3], want[3])
    # float32 scores beside bfloat16 boxes (autocast's mix)
    got = visionops.batched_nms_padded(tb.to(torch.bfloat16), ts.float(), 0.5, **kw)
    assert got[2].dtype == torch.float32


def test_padded_ties_and_nan():
    # Equal scores: lower box index first within a class, lower class first
    # across classes (then earlier selection).
    boxes = np.array([[[0, 0, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50]]], np.float32)
    scores = np.full((1, 2, 3), 0.5, np.float32)
    keep, labels, s, num = visionops.batched_nms_padded(boxes, scores, 0.5, max_per_image=6)
    assert keep.tolist() == [[0, 1, 2, 0, 1, 2]] and labels.tolist() == [[0, 0, 0, 1, 1, 1]]
    assert num.tolist() == [6]
    # NaN scores: no candidate under a threshold; first (torch's order) without.
    scores[0, 0, 1] = np.nan
    keep, labels, s, num = visionops.batched_nms_padded(boxes, scores, 0.5, 0.0, max_per_image=6)
    assert num.tolist() == [5] and 1 not in keep[0, :5][labels[0, :5] == 0]
    keep, labels, s, num = visionops.batched_nms_padded(boxes, scores[:, :1], 0.5,
                                                        max_per_image=3)
    assert keep.tolist() == [[1, 0, 2]] and math.isnan(s[0, 0])


def test_padded_empty_and_padding():
    rng = np.random.default_rng(7)
    for b, m, c, k in ((2, 0, 3, 5), (0, 10, 3, 5), (2, 10, 0, 5), (2, 10, 3, 0)):
        boxes = _boxes(rng, b, m)
        scores = rng.uniform(0, 1, (b, c, m)).astype(np.float32)
        keep, labels, s, num = visionops.batched_nms_padded(boxes, scores, 0.5, max_per_image=k)
        assert keep.shape == (b, k) and labels.shape == (b, k) and s.shape == (b, k)
        assert num.shape == (b,) and (num == 0).all() and (keep == -1).all() and (s == 0).all()
    # Fewer selections than slots: -1 and 0 past num.
    boxes = _boxes(rng, 1, 4, spread=500.0)
    scores = rng.uniform(0.5, 1, (1, 1, 4)).astype(np.float32)
    keep, labels, s, num = visionops.batched_nms_padded(boxes, scores, 0.5, max_per_image=10)
    assert num.tolist() == [4] and (keep[0, 4:] == -1).all() and (labels[0, 4:] == -1).all()
    assert (s[0, 4:] == 0).all() and sorted(keep[0, :4].tolist()) == [0, 1, 2, 3]


def test_padded_bad_arguments():
    boxes = np.zeros((2, 5, 4), np.float32)
    scores = np.zeros((2, 3, 5), np.float32)
    cases = [
        ((boxes[:, :, :3], scores, 0.5), "boxes must have shape"),
        ((boxes, scores[:, :, :4], 0.5), "scores must have shape [2, C, 5]"),
        ((boxes, scores, float("nan")), "iou_threshold"),
        ((boxes, scores, 0.5, float("nan")), "score_threshold"),
        ((boxes, scores, 0.5, None, -2), "max_per_class must be -1"),
        ((boxes, scores, 0.5, None, -1, -1), "max_per_image"),
        ((boxes, scores, 0.5, None, -1, 10, 3), "box_format"),
        ((boxes, scores, 0.5, None, -1, 10, 0, False, -5), "pre_nms_top_k"),
        ((np.zeros((2, 5, 4, 4), np.float32), scores, 0.5), "scores must have shape [2, 4, 5]"),
    ]
    for args, text in cases:
        with pytest.raises(visionops.VisionOpsError) as e:
            visionops.batched_nms_padded(*args)
        assert text in str(e.value) and "batched_nms_padded" in str(e.value)
    with pytest.raises(visionops.VisionOpsValueError, match="box_format"):
        visionops.batched_nms_padded(boxes, scores, 0.5, box_format="yxyx")


@needs_torchvision
def test_padded_script_and_threads():
    rng = np.random.default_rng(8)
    boxes = torch.from_numpy(_boxes(rng, 4, 300, spread=120.0))
    scores = torch.from_numpy(_scores(rng, 4, 20, 300))

    @torch.jit.script
    def scripted(b: torch.Tensor, s: torch.Tensor):
        return visionops.batched_nms_padded(b, s, 0.5, 0.1, 20, 50, "xyxy")

    want = visionops.batched_nms_padded(boxes, scores, 0.5, 0.1, 20, 50)
    for g, w in zip(scripted(boxes, scores), want):
        assert torch.equal(g, w)
    saved = visionops.get_num_threads()
    try:
        for t in (1, 2, 3):
            visionops.set_num_threads(t)
            for g, w in zip(visionops.batched_nms_padded(boxes, scores, 0.5, 0.1, 20, 50), want):
                assert torch.equal(g, w)
    finally:
        visionops.set_num_threads(saved)


# ---------------------------------------------------------------- onnx_nms


def _f32(x):
    return np.float32(x)


def _ort_suppress(a, b, center, thr):
    """onnxruntime's SuppressByIOU (selected box a, candidate b) in float32."""
    if center == 0:
        ax1, ax2 = (a[3], a[1]) if a[1] >= a[3] else (a[1], a[3])
        bx1, bx2 = (b[3], b[1]) if b[1] >= b[3] else (b[1], b[3])
    else:
        ax1, ax2 = a[0] - a[2] / _f32(2), a[0] + a[2] / _f32(2)
        bx1, bx2 = b[0] - b[2] / _f32(2), b[0] + b[2] / _f32(2)
    ix1, ix2 = (bx1 if ax1 < bx1 else ax1), (bx2 if bx2 < ax2 else ax2)
    if ix2 <= ix1:
        return False
    if center == 0:
        ay1, ay2 = (a[2], a[0]) if a[0] >= a[2] else (a[0], a[2])
        by1, by2 = (b[2], b[0]) if b[0] >= b[2] else (b[0], b[2])
    else:
        ay1, ay2 = a[1] - a[3] / _f32(2), a[1] + a[3] / _f32(2)
        by1, by2 = b[1] - b[3] / _f32(2), b[1] + b[3] / _f32(2)
    iy1, iy2 = (by1 if ay1 < by1 else ay1), (by2 if by2 < ay2 else ay2)
    if iy2 <= iy1:
        return False
    inter = (ix2 - ix1) * (iy2 - iy1)
    if inter <= 0:
        return False
    area_a, area_b = (ax2 - ax1) * (ay2 - ay1), (bx2 - bx1) * (by2 - by1)
    union = area_a + area_b - inter
    if area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return inter / union > thr


def _onnx_reference(boxes, scores, max_out, iou, score_threshold=None, center=0):
    """ONNX NonMaxSuppression on float32 inputs, ties by lower index."""
    rows = []
    thr = _f32(iou)
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c]
            cand = [i for i in range(s.size)
                    if score_threshold is None or s[i] > _f32(score_threshold)]
            cand.sort(key=lambda i: (-float(s[i]), i))
            sel = []
            for i in cand:
                if len(sel) >= max_out:
                    break
                if not any(_ort_suppress(boxes[b, j], boxes[b, i], center, thr) for j in sel):
                    sel.append(i)
            rows += [(b, c, i) for i in sel]
    return np.array(rows, np.int64).reshape(-1, 3)


def _onnx_cases(rng, center):
    """SPEC-NEXT 4.4's inputs: B = 2, C = 3, M = 200, flipped corners and
    zero-area boxes (as [y1, x1, y2, x2], or centres and sizes)."""
    b, m, c = 2, 200, 3
    corners = _boxes(rng, b, m, spread=150.0, size=(2.0, 50.0))
    y = corners[..., [1, 0, 3, 2]].copy()  # as [y1, x1, y2, x2]
    flip = rng.uniform(0, 1, (b, m)) < 0.3
    y[flip] = y[flip][:, [2, 3, 0, 1]]  # the other diagonal
    y[:, :5, 2] = y[:, :5, 0]  # zero height
    if center:
        cx = (corners[..., 0] + corners[..., 2]) / 2
        cy = (corners[..., 1] + corners[..., 3]) / 2
        w = corners[..., 2] - corners[..., 0]
        h = corners[..., 3] - corners[..., 1]
        w[:, :5] = 0
        y = np.stack([cx, cy, w, h], -1).astype(np.float32)
    return y, _scores(rng, b, c, m)


def _prefix(selected, num):
    return np.asarray(selected)[:int(num)]


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("max_out", [0, 1, 5, 1000])
def test_onnx_against_restatement(center, max_out):
    rng = np.random.default_rng(10 + center + max_out)
    boxes, scores = _onnx_cases(rng, center)
    for iou in (0.0, 0.5, 1.0):
        for st in (None, 0.3, float(scores[1, 2, 7])):
            selected, num = visionops.onnx_nms(boxes, scores, max_out, iou, st, center)
            assert selected.shape == (2 * 3 * min(max_out, 200), 3) and selected.dtype == np.int64
            want = _onnx_reference(boxes, scores, max_out, iou, st, center)
            assert np.array_equal(_prefix(selected, num), want), (iou, st)
            assert (np.asarray(selected)[int(num):] == -1).all()


def test_onnx_semantics_edges():
    # identical boxes are kept at iou_threshold 1 (suppression needs IoU > 1)
    boxes = np.array([[[0, 0, 10, 10], [0, 0, 10, 10], [10, 10, 0, 0]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.5]]], np.float32)
    sel, num = visionops.onnx_nms(boxes, scores, 10, 1.0, exact_shape=True)
    assert sel.tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 2]] and int(num) == 3
    # a score equal to the threshold is not a candidate
    sel, num = visionops.onnx_nms(boxes, scores, 10, 1.0, 0.5, exact_shape=True)
    assert sel.tolist() == [[0, 0, 0], [0, 0, 1]]
    # the default max_output_boxes_per_class 0: no output; negative: none either
    sel, num = visionops.onnx_nms(boxes, scores)
    assert sel.shape == (0, 3) and int(num) == 0
    sel, num = visionops.onnx_nms(boxes, scores, -3, 0.5)
    assert sel.shape == (0, 3) and int(num) == 0
    # the flipped copy suppresses nothing at 0.5 once the first is selected ...
    sel, num = visionops.onnx_nms(boxes, scores, 10, 0.5, exact_shape=True)
    assert sel.tolist() == [[0, 0, 0]]
    # ... and zero-area boxes are never suppressed
    boxes[0, 1] = [5, 5, 5, 9]
    sel, num = visionops.onnx_nms(boxes, scores, 10, 0.0, exact_shape=True)
    assert sel.tolist() == [[0, 0, 0], [0, 0, 1]]
    # a huge count is bounded by M: the shape never overflows
    sel, num = visionops.onnx_nms(boxes, scores, 2**62, 0.5)
    assert sel.shape == (3, 3)


@needs_torchvision
def test_onnx_torch_float64_and_bad_arguments():
    rng = np.random.default_rng(11)
    boxes, scores = _onnx_cases(rng, 0)
    want = visionops.onnx_nms(boxes, scores, 7, 0.5, 0.2)
    got = visionops.onnx_nms(torch.from_numpy(boxes), torch.from_numpy(scores), 7, 0.5, 0.2)
    assert torch.equal(got[0], torch.from_numpy(want[0])) and int(got[1]) == int(want[1])
    exact = visionops.onnx_nms(torch.from_numpy(boxes), torch.from_numpy(scores), 7, 0.5, 0.2,
                               exact_shape=True)
    assert exact[0].shape == (int(want[1]), 3)
    # float64 compares in double; on these inputs the same selection
    got64 = visionops.onnx_nms(boxes.astype(np.float64), scores.astype(np.float64), 7, 0.5, 0.2)
    assert np.array_equal(got64[0], want[0])
    for args, text in [((boxes, scores, 5, 1.5), "iou_threshold must be in [0, 1]"),
                       ((boxes, scores, 5, -0.1), "iou_threshold must be in [0, 1]"),
                       ((boxes, scores, 5, 0.5, None, 2), "center_point_box must be 0"),
                       ((boxes[:, :, :2], scores, 5, 0.5), "boxes must have shape [B, M, 4]"),
                       ((boxes[:1], scores, 5, 0.5), "scores must have shape [1, C, 200]"),
                       ((boxes, scores, 5, 0.5, float("nan")), "score_threshold")]:
        with pytest.raises(visionops.VisionOpsError) as e:
            visionops.onnx_nms(*args)
        assert text in str(e.value) and "onnx_nms" in str(e.value)
    with pytest.raises(visionops.VisionOpsError, match="boxes must have shape"):
        visionops.onnx_nms(np.zeros((2, 200, 3, 4), np.float32), scores, 5, 0.5)


def _onnx_model(center, with_score):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [None, None, 4]),
              helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, None, None]),
              helper.make_tensor_value_info("max", TensorProto.INT64, [1]),
              helper.make_tensor_value_info("iou", TensorProto.FLOAT, [1])]
    names = ["boxes", "scores", "max", "iou"]
    if with_score:
        inputs.append(helper.make_tensor_value_info("score", TensorProto.FLOAT, [1]))
        names.append("score")
    node = helper.make_node("NonMaxSuppression", names, ["selected"], center_point_box=center)
    out = helper.make_tensor_value_info("selected", TensorProto.INT64, [None, 3])
    graph = helper.make_graph([node], "nms", inputs, [out])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])


def _feeds(boxes, scores, max_out, iou, st):
    feeds = {"boxes": boxes, "scores": scores, "max": np.array([max_out], np.int64),
             "iou": np.array([iou], np.float32)}
    if st is not None:
        feeds["score"] = np.array([st], np.float32)
    return feeds


@pytest.mark.parametrize("center", [0, 1])
def test_onnx_against_onnxruntime(center):
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(20 + center)
    boxes, scores = _onnx_cases(rng, center)
    for st in (None, 0.3, float(scores[0, 1, 3])):
        model = _onnx_model(center, st is not None)
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        for max_out in (0, 1, 5, 1000):
            for iou in (0.0, 0.5, 1.0):
                want = sess.run(None, _feeds(boxes, scores, max_out, iou, st))[0]
                selected, num = visionops.onnx_nms(boxes, scores, max_out, iou, st, center)
                assert np.array_equal(_prefix(selected, num), want), (st, max_out, iou)


@pytest.mark.parametrize("center", [0, 1])
def test_onnx_against_reference_evaluator(center):
    pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(30 + center)
    boxes, scores = _onnx_cases(rng, center)
    boxes, scores = boxes[:, :60], scores[:, :, :60].copy()  # the evaluator is pure Python
    scores[0, 0, 10] = scores[0, 0, 11]  # a tie: the lower index first, as the evaluator
    for st in (None, 0.3):
        ref = ReferenceEvaluator(_onnx_model(center, st is not None))
        for max_out, iou in ((5, 0.5), (1000, 0.0), (3, 1.0)):
            want = ref.run(None, _feeds(boxes, scores, max_out, iou, st))[0]
            selected, num = visionops.onnx_nms(boxes, scores, max_out, iou, st, center)
            assert np.array_equal(_prefix(selected, num), want), (st, max_out, iou)
