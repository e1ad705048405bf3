"""NumPy in, NumPy out: runs without torch (the torch comparisons skip).
Read-only arrays, non-contiguous views (slices, transposes, negative
strides), float16 arrays, and the same values as the torch path."""
import numpy as np
import pytest

import visionops
from conftest import (HAVE_TORCH, assert_close, detections, distinct_scores, make_rois,
                      needs_torch, np_box_iou, np_nms, rois_to_list)

IOU_FNS = ["box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou"]


def readonly(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


# ------------------------------------------------------------- box ops


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_nms_numpy_reference(rng, dtype):
    boxes = detections(rng, 200, np.float64, spread=150)
    boxes = (boxes / 4 if dtype == np.float16 else boxes).astype(dtype)
    scores = (np.round(rng.uniform(size=200) * 10) / 10).astype(dtype)  # ties
    for thr in (0.2, 0.5, 0.8):
        got = visionops.nms(boxes, scores, thr)
        assert isinstance(got, np.ndarray) and got.dtype == np.int64 and got.ndim == 1
        np.testing.assert_array_equal(got, np_nms(boxes, scores, thr))
        np.testing.assert_array_equal(visionops.nms(readonly(boxes), readonly(scores), thr), got)


def test_nms_numpy_noncontiguous(rng):
    boxes = detections(rng, 100, np.float64)
    scores = distinct_scores(rng, 100, np.float64)
    want = visionops.nms(boxes, scores, 0.5)
    wide = np.zeros((100, 9))
    wide[:, 1::2] = boxes  # column stride 2
    spread = np.zeros(300)
    spread[::3] = scores
    np.testing.assert_array_equal(visionops.nms(wide[:, 1::2], spread[::3], 0.5), want)
    fortran = np.asfortranarray(boxes)
    np.testing.assert_array_equal(visionops.nms(fortran, scores, 0.5), want)
    rev = visionops.nms(boxes[::-1], scores[::-1], 0.5)  # negative strides
    np.testing.assert_array_equal(99 - rev, want)


def test_batched_nms_numpy(rng):
    boxes = detections(rng, 300, np.float32) + 200
    scores = distinct_scores(rng, 300, np.float32)
    idxs = rng.integers(0, 5, 300)
    got = visionops.batched_nms(boxes, scores, idxs, 0.5)
    assert got.dtype == np.int64
    assert (np.diff(scores[got]) <= 0).all()  # by decreasing score
    for c in range(5):
        sel = np.flatnonzero(idxs == c)
        per_class = sel[np_nms(boxes[sel], scores[sel], 0.5)]
        np.testing.assert_array_equal(got[idxs[got] == c], per_class)
    np.testing.assert_array_equal(
        visionops.batched_nms(readonly(boxes), readonly(scores), readonly(idxs), 0.5), got)


@pytest.mark.parametrize("name", IOU_FNS)
def test_iou_numpy(rng, name):
    a = detections(rng, 30, np.float64)
    b = detections(rng, 20, np.float64)
    fn = getattr(visionops, name)
    want = fn(a, b)
    assert isinstance(want, np.ndarray) and want.shape == (30, 20) and want.dtype == np.float64
    if name == "box_iou":
        assert_close(want, np_box_iou(a, b), "float64")
    assert_close(fn(a.T.copy().T, b[::-1][::-1]), want, "float64")
    assert_close(fn(readonly(a), readonly(b)), want, "float64")
    assert_close(fn(a[::2], b), want[::2], "float64")
    assert_close(fn(a.astype(np.float32), b.astype(np.float32)), want, "float32")
    h = fn(a.astype(np.float16) / 8, b.astype(np.float16) / 8)
    assert h.dtype == np.float32  # torchvision's _upcast: float16 boxes give float32
    want16 = fn((a.astype(np.float16) / 8).astype(np.float32),
                (b.astype(np.float16) / 8).astype(np.float32))
    assert_close(h, want16, "float32")


# ------------------------------------------------------------- RoI ops

ROI_CALLS = {
    "roi_align": lambda x, r: visionops.roi_align(x, r, (2, 3), 0.5, 2, True),
    "roi_pool": lambda x, r: visionops.roi_pool(x, r, 2, 0.5),
    "ps_roi_align": lambda x, r: visionops.ps_roi_align(x, r, 2, 0.5, -1),
    "ps_roi_pool": lambda x, r: visionops.ps_roi_pool(x, r, (2, 2), 0.5),
}


@pytest.mark.parametrize("op", list(ROI_CALLS))
def test_roi_ops_numpy_views(rng, op):
    x = rng.normal(size=(2, 8, 9, 11))
    rois = make_rois(rng, 12, 2, 22, 15, np.float64)
    call = ROI_CALLS[op]
    want = call(x, rois)
    assert isinstance(want, np.ndarray) and want.dtype == np.float64 and want.shape[0] == 12
    np.testing.assert_array_equal(call(readonly(x), readonly(rois)), want)
    # NHWC storage seen as NCHW, Fortran-ordered rois, a strided batch
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    assert not nhwc.flags.c_contiguous
    np.testing.assert_array_equal(call(nhwc, np.asfortranarray(rois)), want)
    big = np.zeros((4, 8, 9, 11))
    big[::2] = x
    np.testing.assert_array_equal(call(big[::2], rois), want)
    # list of [L, 4] arrays
    np.testing.assert_array_equal(call(x, rois_to_list(rois, 2)), want)
    # float32 and float16
    assert_close(call(x.astype(np.float32), rois.astype(np.float32)), want, "float32")
    x16, r16 = x.astype(np.float16), rois.astype(np.float16)
    h = call(x16, r16)
    assert h.dtype == np.float16
    assert_close(h, call(x16.astype(np.float32), r16.astype(np.float32)), "float16")


def test_roi_align_known_values():
    """Values computed by hand: a constant map, and a horizontal ramp
    f(y, x) = x sampled at the bin centres (aligned=True)."""
    c = np.full((1, 1, 6, 8), 3.0)
    rois = np.array([[0, 1, 1, 5, 4.0]])
    np.testing.assert_allclose(visionops.roi_align(c, rois, 2, 1.0, 2, True), 3.0)
    ramp = np.broadcast_to(np.arange(8.0), (1, 1, 6, 8)).copy()
    out = visionops.roi_align(ramp, np.array([[0, 1.5, 1.5, 5.5, 3.5]]), (1, 4), 1.0, 1, True)
    # x from 1.5-0.5 = 1 to 5: bin centres 1.5, 2.5, 3.5, 4.5
    np.testing.assert_allclose(out[0, 0, 0], [1.5, 2.5, 3.5, 4.5])
    pooled = visionops.roi_pool(ramp, np.array([[0, 0, 0, 7, 5.0]]), (1, 2), 1.0)
    np.testing.assert_array_equal(pooled[0, 0, 0], [3, 7])


def test_deform_conv2d_numpy(rng):
    x = rng.normal(size=(2, 4, 6, 5))
    w = rng.normal(size=(3, 4, 3, 3))
    off = rng.normal(size=(2, 18, 4, 3))
    mask = rng.uniform(size=(2, 9, 4, 3))
    b = rng.normal(size=3)
    want = visionops.deform_conv2d(x, off, w, b, mask=mask)
    assert isinstance(want, np.ndarray) and want.shape == (2, 3, 4, 3)
    got = visionops.deform_conv2d(readonly(x), readonly(off), readonly(w), readonly(b),
                                  mask=readonly(mask))
    np.testing.assert_array_equal(got, want)
    got = visionops.deform_conv2d(np.asfortranarray(x), off.transpose(1, 0, 2, 3).copy()
                                  .transpose(1, 0, 2, 3), w, b, mask=mask)
    assert_close(got, want, "float64")
    h = visionops.deform_conv2d(*(a.astype(np.float16) for a in (x / 4, off, w, b)),
                                mask=mask.astype(np.float16))
    assert h.dtype == np.float16
    want16 = visionops.deform_conv2d(*(a.astype(np.float16).astype(np.float32)
                                       for a in (x / 4, off, w, b)),
                                     mask=mask.astype(np.float16).astype(np.float32))
    assert_close(h, want16, "float16", atol=1e-2)
    # zero offsets, no mask: a plain convolution
    plain = visionops.deform_conv2d(x, np.zeros((2, 18, 4, 3)), w)
    ref = np.zeros((2, 3, 4, 3))
    for i in range(3):
        for j in range(3):
            ref += np.einsum("nchw,oc->nohw", x[:, :, i:i + 4, j:j + 3], w[:, :, i, j])
    assert_close(plain, ref, "float64")


def test_multi_scale_roi_align_numpy(rng):
    feats = [rng.normal(size=(2, 3, 16, 20)), rng.normal(size=(2, 3, 8, 10))]
    rois = np.array([[0, 0, 0, 10, 10], [1, 5, 5, 60, 70], [1, 2, 2, 4, 4.0]])
    got = visionops.multi_scale_roi_align(feats, rois, [0.25, 0.125], 2, 2, 28, 4)
    assert got.shape == (3, 3, 2, 2) and isinstance(got, np.ndarray)
    # each row is a roi_align on its level
    np.testing.assert_array_equal(got[0], visionops.roi_align(feats[0], rois[:1], 2, 0.25, 2)[0])
    np.testing.assert_array_equal(got[1], visionops.roi_align(feats[1], rois[1:2], 2, 0.125, 2)[0])
    pool = visionops.MultiScaleRoIAlign(["a", "b"], 2, 2, canonical_scale=28)
    out = pool({"a": feats[0], "b": feats[1]}, [rois[:1, 1:], rois[1:, 1:]], [(64, 80)] * 2)
    np.testing.assert_array_equal(out, got)


# ------------------------------------------------------- torch vs NumPy


@needs_torch
def test_numpy_and_torch_paths_agree(rng):
    import torch

    x = rng.normal(size=(2, 8, 9, 11)).astype(np.float32)
    rois = make_rois(rng, 10, 2, 22, 15, np.float32)
    for op, call in ROI_CALLS.items():
        got_t = call(torch.from_numpy(x), torch.from_numpy(rois))
        assert isinstance(got_t, torch.Tensor)
        np.testing.assert_array_equal(got_t.numpy(), call(x, rois))
        # non-contiguous torch views
        xt = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
        rt = torch.from_numpy(np.ascontiguousarray(rois.T)).t()
        assert not xt.is_contiguous() and not rt.is_contiguous()
        np.testing.assert_array_equal(call(xt, rt).numpy(), got_t.numpy())
        np.testing.assert_array_equal(call(xt[::1], [rt[:4, 1:], rt[4:, 1:]]).numpy(),
                                      call(x, rois_to_list(rois, 2)))
    boxes = detections(rng, 80, np.float32)
    scores = distinct_scores(rng, 80, np.float32)
    keep_t = visionops.nms(torch.from_numpy(boxes)[:, :], torch.from_numpy(scores), 0.5)
    np.testing.assert_array_equal(keep_t.numpy(), visionops.nms(boxes, scores, 0.5))
    for name in IOU_FNS:
        fn = getattr(visionops, name)
        tb = torch.from_numpy(boxes)
        np.testing.assert_array_equal(fn(tb, tb.flip(0)).numpy(), fn(boxes, boxes[::-1]))


def test_readonly_inputs_untouched(rng):
    x = readonly(rng.normal(size=(1, 4, 5, 5)))
    rois = readonly(np.array([[0, 0, 0, 3, 3.0]]))
    before = x.copy()
    visionops.ps_roi_pool(x, rois, 2)
    np.testing.assert_array_equal(x, before)


@pytest.mark.skipif(HAVE_TORCH, reason="checks the NumPy-only MultiScaleRoIAlign (torch absent)")
def test_module_without_torch():
    assert not hasattr(visionops.MultiScaleRoIAlign, "parameters")


def test_threads_results_and_errors():
    """Calls release the GIL: concurrent calls from Python threads give the
    single-thread results, and each failing call gets its own message."""
    import threading

    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 4, 24, 24)).astype(np.float32)
    good = make_rois(rng, 40, 2, 24, 20, np.float32)
    want = visionops.roi_align(x, good, 3, 1.0, 2)
    problems = []

    def worker(k):
        bad = good.copy()
        bad[k, 0] = 2 + k
        for _ in range(40):
            if not np.array_equal(visionops.roi_align(x, good, 3, 1.0, 2), want):
                problems.append("different result")
            try:
                visionops.roi_align(x, bad, 3, 1.0, 2)
                problems.append("no error")
            except ValueError as e:
                if "roi_align: rois[%d, 0] = %d is not a batch index" % (k, 2 + k) not in str(e):
                    problems.append(str(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not problems, problems[:3]


def test_multi_scale_roi_align_no_levels():
    with pytest.raises(ValueError, match="multi_scale_roi_align: features must be a non-empty"):
        visionops.multi_scale_roi_align([], np.zeros((1, 5), np.float32), [], 2, 2)
