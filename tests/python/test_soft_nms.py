"""soft_nms and batched_soft_nms against a NumPy float64 restatement of
SPEC-NEXT 2.2 written here (mmcv's order of operations; ties by the lowest
index, NaN scores first, a NaN IoU weighing 1): linear, gaussian and hard,
offsets 0 and 1, mmcv's quirks (the first selected box never tested against
min_score), empty input, one box, every box under min_score, NaN scores,
float16 / bfloat16 / float64, torch tensors and NumPy arrays, the padded
outputs; the batched op against a per-category loop of the single one;
OpenCV's cv2.dnn.softNMSBoxes (integer boxes, score_threshold = min_score,
no IoU at the threshold, distinct scores: SPEC-NEXT 2.6) and OpenVINO's
NonMaxSuppression-9 with soft_nms_sigma (gaussian, iou_threshold 1,
sigma_ov = sigma / 2) where they are installed; argument errors."""
import numpy as np
import pytest

import visionops

# ------------------------------------------------------------ the oracle


def oracle(boxes, scores, thr=0.3, sigma=0.5, min_score=1e-3, method=1, offset=0.0):
    """(dets [K, 5], keep [K]) of SPEC-NEXT 2.2 in float64."""
    b = np.asarray(boxes, np.float64).reshape(-1, 4)
    s = np.asarray(scores, np.float64).copy()
    area = (b[:, 2] - b[:, 0] + offset) * (b[:, 3] - b[:, 1] + offset)
    alive = np.arange(len(s))
    dets, keep = [], []
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        while len(alive):
            cur = s[alive]
            nan = np.isnan(cur)
            pick = int(np.argmax(nan)) if nan.any() else int(np.argmax(cur))  # first of the max
            m = alive[pick]
            keep.append(m)
            dets.append([*b[m], s[m]])
            rest = np.delete(alive, pick)
            w = np.maximum(0.0, np.minimum(b[m, 2], b[rest, 2]) - np.maximum(b[m, 0], b[rest, 0])
                           + offset)
            h = np.maximum(0.0, np.minimum(b[m, 3], b[rest, 3]) - np.maximum(b[m, 1], b[rest, 1])
                           + offset)
            inter = w * h
            iou = inter / (area[m] + area[rest] - inter)
            if method == 2:
                weight = np.exp(-(iou * iou) / sigma)
            else:
                weight = np.where(iou >= thr, 1 - iou if method == 1 else 0.0, 1.0)
            weight = np.where(np.isnan(iou), 1.0, weight)
            s[rest] = s[rest] * weight
            alive = rest[~(s[rest] < min_score)]
    return np.array(dets, np.float64).reshape(-1, 5), np.array(keep, np.int64)


def batched_oracle(boxes, scores, idxs, **kw):
    """Per category, merged by score at selection descending, NaN first,
    ties by index."""
    dets, keep = [np.zeros((0, 5))], [np.zeros(0, np.int64)]
    for c in np.unique(idxs):
        members = np.nonzero(idxs == c)[0]
        d, k = oracle(boxes[members], scores[members], **kw)
        dets.append(d)
        keep.append(members[k])
    dets, keep = np.concatenate(dets), np.concatenate(keep)
    s = dets[:, 4]
    order = np.lexsort((keep, np.where(np.isnan(s), -np.inf, -s), ~np.isnan(s)))
    return dets[order], keep[order]


# ------------------------------------------------------------ inputs


def detections(rng, n, integral=False, extent=300.0):
    """Clusters of jittered boxes, distinct scores."""
    m = n // 12 + 1
    centre = np.column_stack([rng.uniform(0, extent, (m, 2)), rng.uniform(5, 60, (m, 2))])
    c = centre[rng.integers(0, m, n)]
    xy = c[:, :2] + rng.uniform(-6, 6, (n, 2))
    wh = c[:, 2:] * rng.uniform(0.8, 1.2, (n, 2))
    b = np.column_stack([xy, xy + wh])
    if integral:
        b = np.floor(b)
    return b, rng.permutation(np.linspace(0.02, 0.98, n))


METHODS = [("linear", 1), ("gaussian", 2), ("hard", 0)]


def check(got, want, rtol):
    dets, keep = got
    wd, wk = want
    np.testing.assert_array_equal(np.asarray(keep), wk)
    np.testing.assert_allclose(np.asarray(dets, np.float64), wd, rtol=rtol, atol=0)


# ------------------------------------------------------------ the oracle's cases


@pytest.mark.parametrize("method,number", METHODS)
@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("n", [1, 9, 150])
def test_against_oracle_float64(method, number, offset, n):
    rng = np.random.default_rng(n + 7 * number + 100 * offset)
    b, s = detections(rng, n)
    for thr, sigma, min_score in [(0.3, 0.5, 1e-3), (0.5, 0.1, 0.05)]:
        got = visionops.soft_nms(b, s, thr, sigma, min_score, method, offset)
        assert got[0].dtype == np.float64 and got[1].dtype == np.int64
        check(got, oracle(b, s, thr, sigma, min_score, number, offset), 1e-12)


@pytest.mark.parametrize("method,number", METHODS)
def test_float32_integer_boxes(method, number):
    rng = np.random.default_rng(number)
    b, s = detections(rng, 300, integral=True)
    b, s = b.astype(np.float32), s.astype(np.float32)
    got = visionops.soft_nms(b, s, 0.3, 0.5, 1e-3, method)
    assert got[0].dtype == np.float32
    check(got, oracle(b, s, 0.3, 0.5, 1e-3, number), 2e-6)


def test_method_names_and_numbers():
    rng = np.random.default_rng(3)
    b, s = detections(rng, 80)
    for names in (["hard", "naive", 0], ["linear", 1], ["gaussian", 2]):
        outs = [visionops.soft_nms(b, s, method=m) for m in names]
        for o in outs[1:]:
            np.testing.assert_array_equal(o[1], outs[0][1])
            np.testing.assert_array_equal(o[0], outs[0][0])
    np.testing.assert_array_equal(visionops.soft_nms(b, s, method=np.int64(2))[1],
                                  visionops.soft_nms(b, s, method="gaussian")[1])


def test_quirks_and_edges():
    # one box under min_score: returned (the first selection is never tested)
    d, k = visionops.soft_nms(np.array([[0, 0, 4, 4.0]]), np.array([1e-4]))
    assert k.tolist() == [0] and d[0, 4] == 1e-4
    # every box under min_score: only the highest
    b = np.array([[0, 0, 1, 1], [5, 5, 6, 6], [9, 9, 10, 10.0]])
    d, k = visionops.soft_nms(b, np.array([1e-4, 3e-4, 2e-4]))
    assert k.tolist() == [1]
    # empty input
    d, k = visionops.soft_nms(np.zeros((0, 4), np.float32), np.zeros(0, np.float32))
    assert d.shape == (0, 5) and k.shape == (0,) and d.dtype == np.float32
    d, k = visionops.batched_soft_nms(np.zeros((0, 4)), np.zeros(0), np.zeros(0, np.int64))
    assert d.shape == (0, 5) and k.shape == (0,)
    # NaN scores are selected first, lowest index first; exact ties by index
    b = np.array([[0, 0, 10, 10], [30, 30, 40, 40], [60, 60, 70, 70], [90, 90, 99, 99.0]])
    s = np.array([0.5, np.nan, 0.5, np.nan])
    d, k = visionops.soft_nms(b, s, method="gaussian")
    assert k.tolist() == [1, 3, 0, 2] and np.isnan(d[:2, 4]).all()
    check((d, k), oracle(b, s, method=2), 0)
    # a 0 / 0 IoU (two zero-area boxes at one point, offset 0) weighs 1
    pts = np.array([[5, 5, 5, 5], [5, 5, 5, 5.0]])
    for method in ("linear", "gaussian", "hard"):
        d, k = visionops.soft_nms(pts, np.array([0.9, 0.8]), 0.0, method=method)
        assert k.tolist() == [0, 1] and d[1, 4] == 0.8
    # with offset 1 they are one pixel each and overlap fully
    d, k = visionops.soft_nms(pts, np.array([0.9, 0.8]), method="gaussian", offset=1)
    np.testing.assert_allclose(d[1, 4], 0.8 * np.exp(-2.0), rtol=1e-15)
    # an IoU exactly at the threshold is suppressed (>=, mmcv's and the paper's)
    b = np.array([[0, 0, 10, 10], [0, 0, 10, 13.0]])  # IoU 100 / 130
    d, k = visionops.soft_nms(b, np.array([0.9, 0.8]), 1.0 / 1.3, method="hard")
    assert k.tolist() == [0]


def test_padded_outputs():
    rng = np.random.default_rng(4)
    b, s = detections(rng, 60)
    s[::3] = 1e-5  # some dropped
    dets, keep, num = visionops.soft_nms(b, s, padded=True)
    k = int(num)
    assert dets.shape == (60, 5) and keep.shape == (60,) and num.shape == ()
    assert 0 < k < 60 and (keep[k:] == -1).all() and (dets[k:] == 0).all()
    d, kk = visionops.soft_nms(b, s)
    np.testing.assert_array_equal(dets[:k], d)
    np.testing.assert_array_equal(keep[:k], kk)


@pytest.mark.parametrize("method,number", METHODS)
def test_batched_against_per_category(method, number):
    rng = np.random.default_rng(11 + number)
    b, s = detections(rng, 400, extent=120)
    idxs = rng.integers(-3, 4, 400)
    got = visionops.batched_soft_nms(b, s, idxs, method=method)
    check(got, batched_oracle(b, s, idxs, method=number), 1e-12)
    # a per-category loop of the single op, merged the same way
    parts = []
    for c in np.unique(idxs):
        members = np.nonzero(idxs == c)[0]
        d, k = visionops.soft_nms(b[members], s[members], method=method)
        parts.append((d, members[k]))
    d = np.concatenate([p[0] for p in parts])
    k = np.concatenate([p[1] for p in parts])
    order = np.lexsort((k, -d[:, 4]))
    np.testing.assert_array_equal(got[1], k[order])
    np.testing.assert_array_equal(got[0], d[order])
    # any integer dtype of idxs
    np.testing.assert_array_equal(
        visionops.batched_soft_nms(b, s, idxs.astype(np.int32), method=method)[1], got[1])


def test_float16_numpy():
    rng = np.random.default_rng(5)
    b, s = detections(rng, 120, integral=True)
    b16, s16 = b.astype(np.float16), s.astype(np.float16)
    d, k = visionops.soft_nms(b16, s16, method="gaussian")
    assert d.dtype == np.float16
    d32, k32 = visionops.soft_nms(b16.astype(np.float32), s16.astype(np.float32),
                                  method="gaussian")
    np.testing.assert_array_equal(k, k32)
    np.testing.assert_array_equal(d, d32.astype(np.float16))


def test_strided_and_mixed_precision():
    """Views with strides and an offset give the contiguous result; scores
    of another float dtype are read at their own precision (float64 scores
    beside float32 boxes compute in float32, the boxes' precision)."""
    rng = np.random.default_rng(9)
    b, s = detections(rng, 90)
    big = np.zeros((180, 7))
    big[1::2, 2:6] = b
    sbig = np.zeros(270)
    sbig[2::3] = s
    got = visionops.soft_nms(big[1::2, 2:6], sbig[2::3], method="gaussian")
    check(got, oracle(b, s, method=2), 1e-12)
    b32 = b.astype(np.float32)
    mixed = visionops.soft_nms(b32, s, method="linear")
    same = visionops.soft_nms(b32, s.astype(np.float32), method="linear")
    assert mixed[0].dtype == np.float32
    np.testing.assert_array_equal(mixed[1], same[1])
    np.testing.assert_array_equal(mixed[0], same[0])


def test_errors():
    b, s = np.zeros((3, 4), np.float32), np.zeros(3, np.float32)
    with pytest.raises(visionops.VisionOpsValueError, match="soft_nms: method must be"):
        visionops.soft_nms(b, s, method="soft")
    with pytest.raises(visionops.VisionOpsValueError, match="got 5"):
        visionops.soft_nms(b, s, method=5)
    with pytest.raises(visionops.VisionOpsTypeError, match="soft_nms: method must be a str"):
        visionops.soft_nms(b, s, method=1.0)
    with pytest.raises(visionops.VisionOpsValueError,
                       match="soft_nms: sigma must be > 0 for the gaussian method, got -1"):
        visionops.soft_nms(b, s, sigma=-1, method="gaussian")
    with pytest.raises(visionops.VisionOpsValueError, match="iou_threshold must be a number"):
        visionops.soft_nms(b, s, iou_threshold=float("nan"))
    with pytest.raises(visionops.VisionOpsValueError, match="min_score must be a number"):
        visionops.batched_soft_nms(b, s, np.zeros(3, np.int64), min_score=float("nan"))
    with pytest.raises(visionops.VisionOpsValueError, match="offset must be finite"):
        visionops.soft_nms(b, s, offset=float("inf"))
    with pytest.raises(visionops.VisionOpsValueError, match="boxes must have shape"):
        visionops.soft_nms(np.zeros((3, 5), np.float32), s)
    with pytest.raises(visionops.VisionOpsValueError, match="scores"):
        visionops.soft_nms(b, np.zeros(4, np.float32))
    with pytest.raises(visionops.VisionOpsTypeError, match="soft_nms: boxes must be a tensor"):
        visionops.soft_nms([[0, 0, 1, 1]], s)


# ------------------------------------------------------------ torch


def test_torch_paths():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    b, s = detections(rng, 200, integral=True)
    idxs = rng.integers(0, 5, 200)
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        tb, ts = torch.tensor(b, dtype=dtype), torch.tensor(s, dtype=dtype)
        for method, number in METHODS:
            d, k = visionops.soft_nms(tb, ts, method=method)
            assert isinstance(d, torch.Tensor) and d.dtype == dtype and k.dtype == torch.int64
            # the half types compute in float32 on their exact values
            wb, ws = tb.to(torch.float32 if dtype != torch.float64 else dtype), ts.to(
                torch.float32 if dtype != torch.float64 else dtype)
            d32, k32 = visionops.soft_nms(wb, ws, method=method)
            assert torch.equal(k, k32) and torch.equal(d, d32.to(dtype))
            if dtype == torch.float64:
                check((d.numpy(), k.numpy()), oracle(b, s, method=number), 1e-12)
            dp, kp, num = visionops.soft_nms(tb, ts, method=method, padded=True)
            assert dp.shape == (200, 5) and kp.shape == (200,) and num.shape == ()
            assert torch.equal(dp[:int(num)], d) and torch.equal(kp[:int(num)], k)
            bd, bk = visionops.batched_soft_nms(tb, ts, torch.tensor(idxs), method=method)
            if dtype == torch.float64:
                check((bd.numpy(), bk.numpy()),
                      batched_oracle(b, s, idxs, method=number), 1e-12)
            bdp, bkp, bnum = visionops.batched_soft_nms(tb, ts, torch.tensor(idxs, dtype=torch.int32),
                                                        method=method, padded=True)
            assert torch.equal(bkp[:int(bnum)], bk)


def test_torchscript_and_meta(tmp_path):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    b, s = detections(rng, 50)
    tb, ts = torch.tensor(b, dtype=torch.float32), torch.tensor(s, dtype=torch.float32)

    def fn(boxes: torch.Tensor, scores: torch.Tensor, idxs: torch.Tensor):
        d, k = visionops.soft_nms(boxes, scores, 0.3, 0.5, 1e-3, "gaussian")
        bd, bk = visionops.batched_soft_nms(boxes, scores, idxs, method=1)
        return d, k, bd, bk

    scripted = torch.jit.script(fn)
    idxs = torch.tensor(rng.integers(0, 3, 50))
    for got, want in zip(scripted(tb, ts, idxs), fn(tb, ts, idxs)):
        assert torch.equal(got, want)
    d, k, n = torch.ops.visionops.soft_nms(tb.to("meta"), ts.to("meta"))
    assert d.shape == (50, 5) and k.shape == (50,) and n.shape == () and k.dtype == torch.int64
    d, k, n = torch.ops.visionops.batched_soft_nms(tb.to("meta"), ts.to("meta"), idxs.to("meta"),
                                                   0.3, 0.5, 1e-3, 2, 1.0)
    assert d.shape == (50, 5) and n.shape == ()


# ------------------------------------------------------------ references


def test_opencv_soft_nms_boxes():
    cv2 = pytest.importorskip("cv2")
    if not hasattr(cv2, "dnn") or not hasattr(cv2.dnn, "softNMSBoxes"):
        pytest.skip("this OpenCV has no cv2.dnn.softNMSBoxes")
    methods = {"linear": cv2.dnn.SoftNMSMethod_SOFTNMS_LINEAR,
               "gaussian": cv2.dnn.SoftNMSMethod_SOFTNMS_GAUSSIAN}
    for seed in range(3):
        rng = np.random.default_rng(100 + seed)
        b, s = detections(rng, 250, integral=True)
        b, s = b.astype(np.float32), s.astype(np.float32)
        # a threshold no IoU of integer boxes equals (OpenCV's > vs mmcv's >=)
        thr = 0.3 + 1e-6
        for method, cv_method in methods.items():
            for min_score in (0.01, 0.3):
                xywh = np.column_stack([b[:, :2], b[:, 2:] - b[:, :2]]).astype(np.int32)
                cs, ci = cv2.dnn.softNMSBoxes(xywh.tolist(), s.tolist(), min_score, thr,
                                              sigma=0.5, method=cv_method)
                ci = np.asarray(ci, np.int64).reshape(-1)
                cs = np.asarray(cs, np.float32).reshape(-1)
                d, k = visionops.soft_nms(b, s, thr, 0.5, min_score, method)
                np.testing.assert_array_equal(k, ci)
                np.testing.assert_allclose(d[:, 4], cs, rtol=1e-6)


def test_openvino_soft_nms_sigma():
    ov = pytest.importorskip("openvino")
    op9 = pytest.importorskip("openvino.opset9")
    for seed in range(3):
        rng = np.random.default_rng(200 + seed)
        n = 120
        b, s = detections(rng, n, integral=True)
        b, s = b.astype(np.float32), s.astype(np.float32)
        sigma, min_score = 0.5, 0.01
        pb = op9.parameter([1, n, 4], np.float32)
        ps = op9.parameter([1, 1, n], np.float32)
        node = op9.non_max_suppression(pb, ps, op9.constant(np.int64(n)),
                                       op9.constant(np.float32(1.0)),
                                       op9.constant(np.float32(min_score)),
                                       op9.constant(np.float32(sigma / 2)),
                                       box_encoding="corner", sort_result_descending=False,
                                       output_type="i64")
        model = ov.compile_model(ov.Model(node.outputs(), [pb, ps]), "CPU")
        out = model([b[None], s[None, None]])
        sel, scores, valid = (out[model.outputs[i]] for i in range(3))
        count = int(valid[0])
        d, k = visionops.soft_nms(b, s, 0.3, sigma, min_score, "gaussian")
        np.testing.assert_array_equal(k, sel[:count, 2])
        np.testing.assert_allclose(d[:, 4], scores[:count, 2], rtol=1e-5)
