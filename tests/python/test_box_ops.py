"""nms, batched_nms and the four box IoUs against torchvision.ops, on torch
tensors and on NumPy arrays."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
import torchvision.ops as tvops  # noqa: E402

import visionops  # noqa: E402
from conftest import (SEEDS, assert_close, detections, distinct_scores,  # noqa: E402
                      np_box_iou, np_nms)

TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16}


def stable_tiebreak(scores):
    """Scores without ties that order the boxes as a stable descending sort
    of `scores` does (torchvision's sort is not stable, so ties are broken
    for it explicitly; NMS depends on the order only)."""
    s = np.asarray(scores, np.float64)
    order = np.argsort(-s, kind="stable")
    out = np.empty(len(s), np.float64)
    out[order] = np.linspace(1.0, 0.0, len(s)) if len(s) > 1 else 1.0
    return out


def tv_nms(boxes, scores, thr, idxs=None):
    """torchvision's result with ties broken in stable order; float16 runs
    in float32 (torchvision 0.14's CPU nms has no float16 kernel), where
    visionops computes float16 too."""
    b = torch.from_numpy(boxes.astype(np.float32) if boxes.dtype == np.float16 else boxes)
    s = torch.from_numpy(stable_tiebreak(scores)).to(b.dtype)
    if idxs is None:
        return tvops.nms(b, s, thr).numpy()
    return tvops.batched_nms(b, s, torch.from_numpy(idxs), thr).numpy()


# --------------------------------------------------------------------- nms


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("n", [0, 1, 2, 64, 65, 700])
@pytest.mark.parametrize("seed", SEEDS)
def test_nms_parity(dtype, n, seed):
    rng = np.random.default_rng(seed)
    # float16 boxes: keep coordinates small enough that areas stay finite.
    boxes = detections(rng, n, dtype, spread=800 if dtype != "float16" else 150)
    if dtype == "float16":
        boxes = (boxes / 4).astype(np.float16)
    scores = distinct_scores(rng, n, dtype)
    for thr in (0.3, 0.5, 0.7):
        want = tv_nms(boxes, scores, thr)
        got_t = visionops.nms(torch.from_numpy(boxes), torch.from_numpy(scores), thr)
        assert got_t.dtype == torch.int64 and got_t.dim() == 1
        np.testing.assert_array_equal(got_t.numpy(), want)
        got_np = visionops.nms(boxes, scores, thr)
        assert isinstance(got_np, np.ndarray) and got_np.dtype == np.int64
        np.testing.assert_array_equal(got_np, want)
        np.testing.assert_array_equal(got_np, np_nms(boxes, scores, thr))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("seed", SEEDS)
def test_nms_exact_ties(dtype, seed):
    """Tied scores: kept in ascending index order (a stable sort), on torch
    and NumPy inputs alike, identical to torchvision given that order."""
    rng = np.random.default_rng(seed)
    n = 300
    boxes = detections(rng, n, "float64", spread=200)
    boxes = (boxes / 4 if dtype == "float16" else boxes).astype(dtype)
    scores = (np.round(rng.uniform(0, 1, n) * 5) / 5).astype(dtype)  # 6 distinct values
    for thr in (0.0, 0.4, 0.9):
        want = tv_nms(boxes, scores, thr)
        np.testing.assert_array_equal(visionops.nms(boxes, scores, thr), want)
        np.testing.assert_array_equal(
            visionops.nms(torch.from_numpy(boxes), torch.from_numpy(scores), thr).numpy(), want)
        np.testing.assert_array_equal(visionops.nms(boxes, scores, thr), np_nms(boxes, scores, thr))
    # all scores equal: kept indices ascend
    same = np.full(n, 0.5, dtype)
    got = visionops.nms(boxes, same, 0.5)
    assert (np.diff(got) > 0).all()
    np.testing.assert_array_equal(got, tv_nms(boxes, same, 0.5))


def test_nms_edge_cases():
    b = torch.tensor([[0, 0, 10, 10], [0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60],
                      [5, 5, 5, 5], [5, 5, 5, 5], [3, 3, 3, 9]], dtype=torch.float32)
    s = torch.tensor([0.5, 0.9, 0.8, 0.7, 0.6, 0.6, 0.95])
    for thr in (0.0, 0.5, 0.99, 1.0):
        want = tvops.nms(b, s, thr)
        np.testing.assert_array_equal(visionops.nms(b, s, thr).numpy(), want.numpy())
        np.testing.assert_array_equal(visionops.nms(b.numpy(), s.numpy(), thr), want.numpy())
    # zero-area boxes (IoU 0/0 = NaN) never suppress each other
    z = torch.tensor([[5, 5, 5, 5.0]] * 3)
    np.testing.assert_array_equal(visionops.nms(z, torch.tensor([3.0, 2, 1]), 0.1).numpy(),
                                  [0, 1, 2])
    # empty and one box
    e = visionops.nms(torch.zeros(0, 4), torch.zeros(0), 0.5)
    assert e.shape == (0,) and e.dtype == torch.int64
    assert visionops.nms(np.zeros((0, 4), np.float32), np.zeros(0, np.float32), 0.5).shape == (0,)
    one = visionops.nms(torch.tensor([[0, 0, 1, 1.0]]), torch.tensor([0.3]), 0.5)
    np.testing.assert_array_equal(one.numpy(), [0])


def test_nms_registered_op_returns_buffer_and_count(rng):
    boxes = detections(rng, 50)
    scores = distinct_scores(rng, 50)
    keep, num_kept = torch.ops.visionops.nms(torch.from_numpy(boxes), torch.from_numpy(scores), 0.5)
    assert keep.shape == (50,) and keep.dtype == torch.int64
    assert num_kept.shape == () and num_kept.dtype == torch.int64
    k = int(num_kept)
    np.testing.assert_array_equal(keep[:k].numpy(), tv_nms(boxes, scores, 0.5))
    assert (keep[k:] == -1).all()


# ------------------------------------------------------------- batched_nms


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("n", [0, 1, 64, 900, 1200])  # 1200: torchvision's per-class loop
@pytest.mark.parametrize("seed", SEEDS)
def test_batched_nms_parity(dtype, n, seed):
    rng = np.random.default_rng(seed)
    # Non-negative coordinates and few classes: torchvision's coordinate-offset
    # trick is exact only for coordinates >= -1 (see test_improves).
    boxes = detections(rng, n, np.float64, spread=300) + 150.0
    boxes = (boxes / 4 if dtype == "float16" else boxes).astype(dtype)
    scores = distinct_scores(rng, n, dtype)
    idxs = rng.integers(0, 4, n).astype(np.int64)
    for thr in (0.3, 0.6):
        want = tv_nms(boxes, scores, thr, idxs)
        got = visionops.batched_nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                                    torch.from_numpy(idxs), thr)
        assert got.dtype == torch.int64
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(visionops.batched_nms(boxes, scores, idxs, thr), want)


@pytest.mark.parametrize("seed", SEEDS)
def test_batched_nms_ties(seed):
    rng = np.random.default_rng(seed)
    n = 400
    boxes = detections(rng, n, np.float32, spread=300) + 150
    scores = (np.round(rng.uniform(0, 1, n) * 4) / 4).astype(np.float32)
    idxs = rng.integers(0, 3, n).astype(np.int64)
    want = tv_nms(boxes, scores, 0.5, idxs)
    np.testing.assert_array_equal(visionops.batched_nms(boxes, scores, idxs, 0.5), want)
    np.testing.assert_array_equal(
        visionops.batched_nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                              torch.from_numpy(idxs), 0.5).numpy(), want)
    # per class, the result is plain NMS of that class
    got = visionops.batched_nms(boxes, scores, idxs, 0.5)
    for c in range(3):
        sel = np.flatnonzero(idxs == c)
        per_class = sel[np_nms(boxes[sel], scores[sel], 0.5)]
        np.testing.assert_array_equal(got[idxs[got] == c], per_class)


# ---------------------------------------------------------------- box IoUs

IOU_OPS = [
    ("box_iou", (), tvops.box_iou),
    ("generalized_box_iou", (), tvops.generalized_box_iou),
    ("distance_box_iou", (1e-7,), tvops.distance_box_iou),
    ("complete_box_iou", (1e-7,), tvops.complete_box_iou),
]


@pytest.mark.parametrize("name,extra,ref", IOU_OPS, ids=[o[0] for o in IOU_OPS])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("sizes", [(1, 1), (7, 13), (120, 90)])
@pytest.mark.parametrize("seed", SEEDS)
def test_iou_parity(name, extra, ref, dtype, sizes, seed):
    rng = np.random.default_rng(seed)
    a = detections(rng, sizes[0], dtype)
    b = detections(rng, sizes[1], dtype)
    want = ref(torch.from_numpy(a), torch.from_numpy(b), *extra)
    fn = getattr(visionops, name)
    got = fn(torch.from_numpy(a), torch.from_numpy(b), *extra)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_close(got, want, dtype, what=name)
    got_np = fn(a, b, *extra)
    assert isinstance(got_np, np.ndarray) and got_np.dtype == a.dtype
    np.testing.assert_array_equal(got_np, got.numpy())


@pytest.mark.parametrize("name,extra,ref", IOU_OPS, ids=[o[0] for o in IOU_OPS])
def test_iou_float16(name, extra, ref, rng):
    """float16 computes in float32 and returns float32, as torchvision's
    _upcast does: float32-close to torchvision on the upcast input, within
    5e-3 of torchvision's own float16 call (which rounds some intermediates
    to float16; coordinates small enough that its float16 areas stay
    finite), and the same dtype as it."""
    a = (detections(rng, 40, np.float64, spread=100) / 4).astype(np.float16)
    b = (detections(rng, 30, np.float64, spread=100) / 4).astype(np.float16)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    fn = getattr(visionops, name)
    got = fn(ta, tb, *extra)
    want16 = ref(ta, tb, *extra)
    assert got.dtype == want16.dtype == torch.float32
    assert_close(got, ref(ta.float(), tb.float(), *extra), "float32", what=name + " vs fp32")
    assert_close(got, want16, "float16", what=name + " vs tv fp16")
    got_np = fn(a, b, *extra)
    assert got_np.dtype == np.float32
    np.testing.assert_array_equal(got_np, got.numpy())


@pytest.mark.parametrize("name,extra,ref", IOU_OPS, ids=[o[0] for o in IOU_OPS])
def test_iou_edge_cases(name, extra, ref):
    """Zero-area boxes, identical boxes, disjoint and nested boxes (NaN
    where torchvision gives NaN, e.g. IoU of two zero-area boxes)."""
    a = torch.tensor([[0, 0, 10, 10], [5, 5, 5, 5], [0, 0, 0, 4], [20, 20, 30, 40],
                      [2, 2, 4, 4]], dtype=torch.float64)
    b = torch.tensor([[0, 0, 10, 10], [5, 5, 5, 5], [100, 100, 110, 120], [1, 1, 3, 3]],
                     dtype=torch.float64)
    fn = getattr(visionops, name)
    assert_close(fn(a, b, *extra), ref(a, b, *extra), "float64", what=name)
    assert_close(fn(a.numpy(), b.numpy(), *extra), ref(a, b, *extra).numpy(), "float64", what=name)
    if name == "box_iou":
        assert_close(fn(a, b), np_box_iou(a.numpy(), b.numpy()), "float64")


@pytest.mark.parametrize("name,extra,ref", IOU_OPS, ids=[o[0] for o in IOU_OPS])
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0)])
def test_iou_empty(name, extra, ref, shape):
    fn = getattr(visionops, name)
    a, b = torch.rand(shape[0], 4), torch.rand(shape[1], 4)
    got = fn(a, b, *extra)
    assert got.shape == ref(a, b, *extra).shape == shape
    got_np = fn(a.numpy(), b.numpy(), *extra)
    assert got_np.shape == shape


def test_iou_noncontiguous(rng):
    base = detections(rng, 40, np.float64)
    wide = np.repeat(base, 2, axis=1)[:, ::2]  # strided columns
    assert not wide.flags.c_contiguous
    want = tvops.complete_box_iou(torch.from_numpy(base), torch.from_numpy(base[::3]))
    assert_close(visionops.complete_box_iou(wide, wide[::3]), want, "float64")
    t = torch.from_numpy(np.ascontiguousarray(base.T)).t()  # transposed view
    assert not t.is_contiguous()
    assert_close(visionops.complete_box_iou(t, t[::3]), want, "float64")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nms_large(dtype):
    rng = np.random.default_rng(11)
    boxes = detections(rng, 5000, dtype, spread=2000) + 200
    scores = distinct_scores(rng, 5000, dtype)
    idxs = rng.integers(0, 80, 5000).astype(np.int64)
    for thr in (0.5, 0.8):
        np.testing.assert_array_equal(visionops.nms(boxes, scores, thr), tv_nms(boxes, scores, thr))
        got = visionops.batched_nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                                    torch.from_numpy(idxs), thr)
        np.testing.assert_array_equal(got.numpy(), tv_nms(boxes, scores, thr, idxs))


@pytest.mark.parametrize("fmt", ["xyxy", "xywh", "cxcywh"])
def test_box_iou_formats(fmt, rng):
    """box_iou's fmt (newer torchvision's API): same as converting with
    torchvision.ops.box_convert first, on torch and NumPy inputs."""
    import inspect

    if "fmt" not in inspect.signature(visionops.box_iou).parameters:
        pytest.skip("visionops.box_iou has no fmt parameter")
    a = tvops.box_convert(torch.from_numpy(detections(rng, 20, np.float64)), "xyxy", fmt)
    b = tvops.box_convert(torch.from_numpy(detections(rng, 15, np.float64)), "xyxy", fmt)
    want = tvops.box_iou(tvops.box_convert(a, fmt, "xyxy"), tvops.box_convert(b, fmt, "xyxy"))
    assert_close(visionops.box_iou(a, b, fmt=fmt), want, "float64")
    assert_close(visionops.box_iou(a.numpy(), b.numpy(), fmt), want, "float64")
    with pytest.raises(ValueError, match="fmt"):
        visionops.box_iou(a, b, fmt="xyz")


def big_nms_inputs(rng, n, mode, dtype):
    """Inputs for the multi-threaded greedy pass (8,192+ boxes in one
    category): jittered copies of few objects (few kept), small boxes
    spread thin (many kept), exact copies with scores in steps of 0.1
    (tie-heavy), or detections with NaN coordinates."""
    if mode == "many kept":
        xy = rng.uniform(0, 1000, (n, 2))
        boxes = np.concatenate([xy, xy + rng.uniform(0.5, 6, (n, 2))], 1)
    else:
        objects = {"few kept": 6, "tie-heavy": 50, "NaN boxes": 400}[mode]
        centre = rng.uniform(0, 1000, (objects, 2))
        size = rng.uniform(20, 200, (objects, 2))
        k = rng.integers(0, objects, n)
        jitter = 0 if mode == "tie-heavy" else rng.uniform(-0.05, 0.05, (n, 2)) * size[k]
        boxes = np.concatenate([centre[k] + jitter - size[k] / 2, centre[k] + jitter + size[k] / 2], 1)
    if mode == "NaN boxes":
        rows = rng.random(n) < 0.02
        boxes[rows, rng.integers(0, 4, rows.sum())] = np.nan
    scores = rng.random(n)
    if mode == "tie-heavy":
        scores = np.floor(scores * 10) / 10
    idxs = np.where(rng.random(n) < 0.7, 3, rng.integers(-10, 20, n)).astype(np.int64)
    return boxes.astype(dtype), scores.astype(dtype), idxs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n,mode", [(10000, "few kept"), (10000, "many kept"),
                                    (10000, "tie-heavy"), (10000, "NaN boxes"),
                                    (30000, "few kept"), (30000, "tie-heavy"),
                                    (30000, "NaN boxes")])
def test_nms_threaded_matches_torchvision(dtype, n, mode):
    """The chunked multi-threaded pass (categories of 8,192+ boxes) keeps
    exactly torchvision's boxes, at 1, 2 and 3 threads."""
    rng = np.random.default_rng(n + len(mode))
    boxes, scores, idxs = big_nms_inputs(rng, n, mode, dtype)
    want = tv_nms(boxes, scores, 0.5)
    want_batched = tv_nms(boxes, scores, 0.5, idxs)
    saved = visionops.get_num_threads()
    try:
        for threads in (1, 2, 3):
            visionops.set_num_threads(threads)
            np.testing.assert_array_equal(visionops.nms(boxes, scores, 0.5), want,
                                          err_msg=f"nms, {threads} threads")
            got = visionops.batched_nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                                        torch.from_numpy(idxs), 0.5)
            np.testing.assert_array_equal(got.numpy(), want_batched,
                                          err_msg=f"batched_nms, {threads} threads")
    finally:
        visionops.set_num_threads(saved)
