"""matrix_nms against a NumPy float64 oracle written here from SPEC-NEXT
3.1-3.2 (an IoU matrix, its column max K_j, the decays with std::min's
rule, strict thresholds, the keep_top_k order over the classes), which
runs everywhere; against paddle.vision.ops.matrix_nms (the exact
reference: same detections, same order, same bits) and OpenVINO's
MatrixNms-8 (a second opinion, float32) where installed, on tie-free data.
The cases of SPEC-NEXT 3.5: random B x C x M, both kernels, both box
conventions, background_label -1 and 0, nothing above score_threshold,
nms_top_k below the candidates, keep_top_k across classes, touching boxes
in the pixel convention, a duplicate box (K_j = 1, linear). Also Paddle's
return flags and dtypes, the padded outputs, the torch path and bad
arguments."""
import numpy as np
import pytest

import visionops

try:
    import torch
except ImportError:  # NumPy only
    torch = None


# ------------------------------------------------------------ inputs


def make_inputs(rng, b, c, m, dtype=np.float64, normalized=True, duplicates=False,
                touching=False):
    """Random boxes [B, M, 4] (x1 < x2, y1 < y2) and distinct scores
    [B, C, M]; with duplicates, every 7th box repeats the one before it;
    with touching, every 5th starts where the one before it ends."""
    span = 1.0 if normalized else 80.0
    xy = rng.uniform(0, span, (b, m, 2))
    wh = rng.uniform(0.02, span / 3, (b, m, 2))
    boxes = np.concatenate([xy, xy + wh], axis=-1)
    if duplicates:
        boxes[:, 6::7] = boxes[:, 5:-1:7][:, :boxes[:, 6::7].shape[1]]
    if touching:
        t = boxes[:, 5::5]
        prev = boxes[:, 4:-1:5][:, :t.shape[1]]
        t[..., 0] = prev[..., 2]
        t[..., 2] = t[..., 0] + 3
        t[..., 1], t[..., 3] = prev[..., 1], prev[..., 3]
        boxes[:, 5::5] = t
    scores = rng.permutation(np.linspace(0.01, 0.99, b * c * m)).reshape(b, c, m)
    return boxes.astype(dtype), scores.astype(dtype)


# ------------------------------------------------------------ oracle


def oracle_iou(a, b, normalized):
    """IoU of two (x1, y1, x2, y2) boxes in float64: 0 when disjoint, else
    intersection over the union; the pixel convention adds 1 per side."""
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    e = 0.0 if normalized else 1.0

    def area(r):
        if r[2] < r[0] or r[3] < r[1]:
            return 0.0
        return (r[2] - r[0] + e) * (r[3] - r[1] + e)

    inter = (min(a[2], b[2]) - max(a[0], b[0]) + e) * (min(a[3], b[3]) - max(a[1], b[1]) + e)
    return inter / (area(a) + area(b) - inter)


def oracle(boxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k,
           use_gaussian=False, gaussian_sigma=2.0, background_label=0, normalized=True):
    """(out [K, 6], rois_num [B], index [K]) in float64."""
    boxes, scores = np.asarray(boxes, np.float64), np.asarray(scores, np.float64)
    nb, nc, m = scores.shape
    outs, nums, idx = [], [], []
    with np.errstate(divide="ignore", invalid="ignore"):
        for b in range(nb):
            dets = []  # (decayed score, class, rank, box)
            for c in range(nc):
                if c == background_label:
                    continue
                s = scores[b, c]
                order = sorted((i for i in range(m) if s[i] > score_threshold),
                               key=lambda i: (-s[i], i))
                if nms_top_k >= 0:
                    order = order[:nms_top_k]
                n = len(order)
                x = np.zeros((n, n))
                for i in range(n):
                    for j in range(i):
                        x[i, j] = oracle_iou(boxes[b, order[i]], boxes[b, order[j]], normalized)
                k = np.array([x[j, :j].max() if j else 0.0 for j in range(n)])
                for i in range(n):
                    d = 1.0
                    for j in range(i):
                        if use_gaussian:
                            dj = np.exp((k[j] ** 2 - x[i, j] ** 2) * gaussian_sigma)
                        else:
                            dj = np.float64(1 - x[i, j]) / np.float64(1 - k[j])
                        if dj < d:  # std::min(d, dj): NaN and +inf never taken
                            d = dj
                    ds = d * s[order[i]]
                    if ds > post_threshold:
                        dets.append((ds, c, i, order[i]))
            dets.sort(key=lambda t: (-t[0], t[1], t[2]))
            if keep_top_k >= 0:
                dets = dets[:keep_top_k]
            nums.append(len(dets))
            for ds, c, _, box in dets:
                outs.append([c, ds, *boxes[b, box]])
                idx.append(b * m + box)
    return np.array(outs, np.float64).reshape(-1, 6), np.array(nums), np.array(idx, np.int64)


# ------------------------------------------------------------ cases

# (B, C, M, score_threshold, post_threshold, nms_top_k, keep_top_k, gaussian, sigma,
#  background, normalized, duplicates, touching)
CASES = {
    "linear": (2, 3, 40, 0.1, 0.05, -1, -1, False, 2.0, -1, True, False, False),
    "gaussian": (2, 3, 40, 0.1, 0.05, -1, -1, True, 2.0, -1, True, False, False),
    "background0": (3, 4, 30, 0.2, 0.1, 20, 40, True, 0.5, 0, True, False, False),
    "pixel": (2, 3, 50, 0.1, 0.05, 30, 50, False, 2.0, 0, False, False, False),
    "pixel_gaussian": (1, 4, 60, 0.05, 0.1, -1, 25, True, 3.0, -1, False, False, False),
    "empty": (2, 3, 20, 1.5, 0.0, -1, -1, False, 2.0, -1, True, False, False),
    "top_k_below_candidates": (2, 2, 80, 0.05, 0.0, 10, -1, True, 2.0, -1, True, False, False),
    "keep_top_k_across_classes": (2, 6, 30, 0.1, 0.05, -1, 7, False, 2.0, -1, True, False, False),
    "touching_pixel": (2, 2, 40, 0.0, 0.0, -1, -1, False, 2.0, -1, False, False, True),
    "duplicates_linear": (2, 3, 40, 0.05, 0.0, -1, -1, False, 2.0, -1, True, True, False),
}


def case_inputs(name, dtype, seed=0):
    b, c, m, st, pt, top, keep, gauss, sigma, bg, norm, dup, touch = CASES[name]
    rng = np.random.default_rng(seed + sum(map(ord, name)))
    boxes, scores = make_inputs(rng, b, c, m, dtype, norm, dup, touch)
    kwargs = dict(score_threshold=st, post_threshold=pt, nms_top_k=top, keep_top_k=keep,
                  use_gaussian=gauss, gaussian_sigma=sigma, background_label=bg, normalized=norm)
    return boxes, scores, kwargs


def check_close(got, want, dtype):
    out, num, index = got
    w_out, w_num, w_index = want
    np.testing.assert_array_equal(num, w_num)
    np.testing.assert_array_equal(index.reshape(-1), w_index)
    assert out.shape == w_out.shape and out.dtype == dtype
    rtol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(out.astype(np.float64), w_out, rtol=rtol, atol=0)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_against_oracle(name, dtype):
    boxes, scores, kw = case_inputs(name, dtype)
    out, num, index = visionops.matrix_nms(boxes, scores, **kw, return_index=True)
    assert num.dtype == np.int32 and index.dtype == np.int32 and index.shape == (out.shape[0], 1)
    check_close((out, num, index), oracle(boxes, scores, **kw), dtype)
    if name == "empty":
        assert out.shape == (0, 6) and index.shape == (0, 1) and not num.any()


def test_the_cases_mean_something():
    """Each case does what its name says on its data."""
    boxes, scores, kw = case_inputs("duplicates_linear", np.float64)
    assert (boxes[:, 6::7] == boxes[:, 5:-1:7][:, :boxes[:, 6::7].shape[1]]).all()
    out, num, _ = visionops.matrix_nms(boxes, scores, **kw)
    assert num.sum() > 0
    boxes, scores, kw = case_inputs("top_k_below_candidates", np.float64)
    assert ((scores > kw["score_threshold"]).sum(-1) > kw["nms_top_k"]).all()
    _, num, _ = visionops.matrix_nms(boxes, scores, **kw)
    assert (num == 2 * kw["nms_top_k"]).all()  # post_threshold 0: every candidate kept
    boxes, scores, kw = case_inputs("keep_top_k_across_classes", np.float64)
    out, num, _ = visionops.matrix_nms(boxes, scores, **kw)
    assert (num == 7).all() and len(set(out[:7, 0])) > 1
    assert (np.diff(out[:7, 1]) <= 0).all()
    # touching boxes overlap in the pixel convention only
    a, b = np.array([0.0, 0, 10, 10]), np.array([10.0, 0, 20, 10])
    assert oracle_iou(a, b, True) == 0 and oracle_iou(a, b, False) > 0


def test_duplicate_decay_is_ignored():
    """K_j = 1 (box j duplicates a higher box): the linear decay (1 - x) / 0
    of box j is +inf or NaN and never lowers a later box's decay."""
    boxes = np.array([[[0, 0, 10, 10], [0, 0, 10, 10], [20, 20, 30, 30]]], np.float64) / 40
    scores = np.array([[[0.9, 0.8, 0.7]]])
    out, num, index = visionops.matrix_nms(boxes, scores, 0.0, 0.0, -1, -1,
                                           background_label=-1, return_index=True)
    # box 1 decays to 0 (1 - 1) / (1 - 0) and is dropped; box 2 is disjoint from both
    np.testing.assert_array_equal(index.reshape(-1), [0, 2])
    np.testing.assert_array_equal(out[:, 1], [0.9, 0.7])


def test_return_flags_and_padded():
    boxes, scores, kw = case_inputs("background0", np.float32)
    out, num, index = visionops.matrix_nms(boxes, scores, **kw)
    assert index is None and num is not None
    out2, num2, index2 = visionops.matrix_nms(boxes, scores, **kw, return_index=True,
                                              return_rois_num=False)
    assert num2 is None and index2 is not None
    np.testing.assert_array_equal(out, out2)
    dets, pidx, pnum = visionops.matrix_nms(boxes, scores, **kw, padded=True)
    b, k = boxes.shape[0], kw["keep_top_k"]
    assert dets.shape == (b, k, 6) and pidx.shape == (b, k) and pnum.shape == (b,)
    assert pidx.dtype == np.int64 and pnum.dtype == np.int64 and dets.dtype == np.float32
    np.testing.assert_array_equal(pnum, num)
    for i in range(b):
        n = pnum[i]
        assert (pidx[i, n:] == -1).all() and (dets[i, n:] == 0).all()
    np.testing.assert_array_equal(np.concatenate([dets[i, :pnum[i]] for i in range(b)]), out)
    np.testing.assert_array_equal(np.concatenate([pidx[i, :pnum[i]] for i in range(b)]),
                                  index2.reshape(-1))
    # keep_top_k -1: K = C * min(nms_top_k, M)
    kw = dict(kw, keep_top_k=-1)
    dets, _, _ = visionops.matrix_nms(boxes, scores, **kw, padded=True)
    assert dets.shape[1] == scores.shape[1] * min(kw["nms_top_k"], boxes.shape[1])
    kw = dict(kw, nms_top_k=-1)
    dets, _, _ = visionops.matrix_nms(boxes, scores, **kw, padded=True)
    assert dets.shape[1] == scores.shape[1] * boxes.shape[1]


def test_half_types_and_mixed_scores():
    """Half boxes compute in float32 (results in the boxes' dtype); scores
    of another float dtype are read in the boxes' precision."""
    boxes, scores, kw = case_inputs("gaussian", np.float32)
    want = visionops.matrix_nms(boxes, scores, **kw, return_index=True)
    got = visionops.matrix_nms(boxes, scores.astype(np.float64), **kw, return_index=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    half = visionops.matrix_nms(boxes.astype(np.float16), scores.astype(np.float16), **kw)
    assert half[0].dtype == np.float16 and half[0].shape[1] == 6


def test_bad_arguments():
    boxes, scores, kw = case_inputs("linear", np.float32)
    bad = [(dict(kw, nms_top_k=-2), "nms_top_k"), (dict(kw, keep_top_k=-3), "keep_top_k"),
           (dict(kw, gaussian_sigma=float("inf")), "gaussian_sigma"),
           (dict(kw, score_threshold=float("nan")), "score_threshold"),
           (dict(kw, post_threshold=float("nan")), "post_threshold"),
           (dict(kw, background_label=-2), "background_label")]
    for args, needle in bad:
        with pytest.raises(visionops.VisionOpsError, match="matrix_nms.*" + needle):
            visionops.matrix_nms(boxes, scores, **args)
    with pytest.raises(visionops.VisionOpsError, match="matrix_nms.*scores"):
        visionops.matrix_nms(boxes, scores[:, :, :-1], **kw)
    with pytest.raises(visionops.VisionOpsError, match="matrix_nms.*boxes"):
        visionops.matrix_nms(boxes[..., :3], scores, **kw)
    with pytest.raises(visionops.VisionOpsTypeError, match="matrix_nms.*bboxes"):
        visionops.matrix_nms([1, 2], scores, **kw)


# ------------------------------------------------------------ torch


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_torch_path():
    boxes, scores, kw = case_inputs("pixel", np.float32)
    want = visionops.matrix_nms(boxes, scores, **kw, return_index=True)
    got = visionops.matrix_nms(torch.from_numpy(boxes), torch.from_numpy(scores), **kw,
                               return_index=True)
    assert all(isinstance(t, torch.Tensor) for t in got)
    assert got[1].dtype == torch.int32 and got[2].dtype == torch.int32
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)
    dets, index, num = torch.ops.visionops.matrix_nms(torch.from_numpy(boxes),
                                                      torch.from_numpy(scores),
                                                      *kw.values())
    padded = visionops.matrix_nms(torch.from_numpy(boxes), scores, **kw, padded=True)
    for g, w in zip(padded, (dets, index, num)):
        assert torch.equal(g, w)


# ------------------------------------------------------------ references


def paddle_call(paddle, boxes, scores, kw):
    out, num, index = paddle.vision.ops.matrix_nms(paddle.to_tensor(boxes),
                                                   paddle.to_tensor(scores), **kw,
                                                   return_index=True)
    return out.numpy(), num.numpy(), index.numpy()


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_against_paddle(name, dtype):
    """Paddle's CPU kernel: identical detections, order, dtypes and bits
    (its arithmetic, operand order included)."""
    paddle = pytest.importorskip("paddle")
    for seed in (0, 1):
        boxes, scores, kw = case_inputs(name, dtype, seed)
        want = paddle_call(paddle, boxes, scores, kw)
        got = visionops.matrix_nms(boxes, scores, **kw, return_index=True)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("seed", range(4))
def test_random_against_paddle(seed):
    paddle = pytest.importorskip("paddle")
    rng = np.random.default_rng(100 + seed)
    for _ in range(10):
        b, c, m = rng.integers(1, 4), rng.integers(1, 6), rng.integers(1, 70)
        normalized = bool(rng.integers(0, 2))
        boxes, scores = make_inputs(rng, b, c, m, np.float32, normalized)
        kw = dict(score_threshold=float(rng.uniform(0, 0.3)),
                  post_threshold=float(rng.uniform(0, 0.2)),
                  nms_top_k=int(rng.integers(1, 50)) if rng.integers(0, 2) else -1,
                  keep_top_k=int(rng.integers(0, 60)) if rng.integers(0, 2) else -1,
                  use_gaussian=bool(rng.integers(0, 2)), gaussian_sigma=2.0,
                  background_label=int(rng.integers(-1, 2)), normalized=normalized)
        want = paddle_call(paddle, boxes, scores, kw)
        got = visionops.matrix_nms(boxes, scores, **kw, return_index=True)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def openvino_call(ov, boxes, scores, kw):
    from openvino import opset8

    pb = opset8.parameter(list(boxes.shape), np.float32)
    ps = opset8.parameter(list(scores.shape), np.float32)
    node = opset8.matrix_nms(
        pb, ps, sort_result_type="score", sort_result_across_batch=False, output_type="i64",
        score_threshold=kw["score_threshold"], nms_top_k=kw["nms_top_k"],
        keep_top_k=kw["keep_top_k"], background_class=kw["background_label"],
        decay_function="gaussian" if kw["use_gaussian"] else "linear",
        gaussian_sigma=kw["gaussian_sigma"], post_threshold=kw["post_threshold"],
        normalized=kw["normalized"])
    compiled = ov.Core().compile_model(ov.Model(node.outputs(), [pb, ps]), "CPU")
    r = compiled([boxes, scores])
    out, index, num = (r[o] for o in compiled.outputs)
    total = int(num.sum())
    return out[:total], num, index[:total].reshape(-1)


@pytest.mark.parametrize("name", sorted(set(CASES) - {"empty"}))
def test_against_openvino(name):
    """OpenVINO's MatrixNms-8 (float32): the same detections in the same
    order; decayed scores to float32 rounding (its own arithmetic). Not
    "empty": its CPU plugin refuses a call that selects nothing ("Total
    number of boxes is less or equal than 0", openvino 2026.4.1)."""
    ov = pytest.importorskip("openvino")
    boxes, scores, kw = case_inputs(name, np.float32)
    out, num, index = openvino_call(ov, boxes, scores, kw)
    got = visionops.matrix_nms(boxes, scores, **kw, return_index=True)
    np.testing.assert_array_equal(got[1], num)
    np.testing.assert_array_equal(got[2].reshape(-1), index)
    np.testing.assert_allclose(got[0], out, rtol=1e-5, atol=1e-7)


def test_empty_with_huge_sizes():
    """No boxes but huge B * C (the scores are empty): only the outputs'
    work, no B * C problems (their count overflows int64 here)."""
    boxes = np.empty((3, 0, 4), np.float32)
    scores = np.empty((3, 2 ** 40, 0), np.float32)
    dets, index, num = visionops.matrix_nms(boxes, scores, 0.1, 0.1, -1, 5, padded=True)
    assert dets.shape == (3, 5, 6) and index.shape == (3, 5) and num.tolist() == [0, 0, 0]
    assert (index == -1).all() and (dets == 0).all()
