"""CUDA parity: torch CUDA tensors through visionops against torchvision's
CUDA ops (and visionops on the CPU). Skipped where torch.cuda is not
available; an op whose CUDA kernel is not in this build skips with the
library's message."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
import torchvision.ops as tvops  # noqa: E402

import visionops  # noqa: E402
from conftest import (assert_close, detections, distinct_scores, dtype_name,  # noqa: E402
                      make_rois, needs_cuda, rois_to_list)

pytestmark = needs_cuda


def on_cuda(fn, *args, **kw):
    """fn(*args) with a skip when this build has no CUDA backend ("cannot run
    on cuda:0: ...") or no CUDA kernel for the op ("not implemented on the
    cuda backend"). A CUDA backend that is built but unavailable while torch
    sees a GPU fails."""
    try:
        return fn(*args, **kw)
    except RuntimeError as e:
        if "cannot run on" in str(e) or "not implemented on the" in str(e):
            pytest.skip("no CUDA kernel in this build: %s" % e)
        raise


def cuda(a, dtype=None):
    t = torch.as_tensor(a).cuda()
    return t.to(dtype) if dtype is not None else t


def stable_tiebreak(scores):
    """float32 scores without ties, ordered as a stable descending sort of
    `scores` (torchvision's sort is not stable)."""
    s = scores.double().cpu().numpy()
    order = np.argsort(-s, kind="stable")
    out = np.empty(len(s), np.float32)
    out[order] = np.linspace(1.0, 0.0, len(s)) if len(s) > 1 else 1.0
    return torch.from_numpy(out).cuda()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("n", [0, 1, 500, 3000])
def test_nms_cuda(dtype, n, rng):
    b = cuda(detections(rng, n, np.float64, spread=150) / 4 + 40, dtype)
    s = cuda(distinct_scores(rng, n, np.float64), dtype)  # float16: may tie
    idxs = cuda(rng.integers(0, 5, n))
    # torchvision on the same box values: float16 upcast to float32 (exact),
    # where visionops computes too; ties broken in stable order
    ref_dt = torch.float32 if dtype == torch.float16 else dtype
    b_tv, s_tv = b.to(ref_dt), stable_tiebreak(s).to(ref_dt)
    for thr in (0.3, 0.7):
        keep, num_kept = on_cuda(torch.ops.visionops.nms, b, s, thr)
        assert keep.is_cuda and num_kept.is_cuda  # the result stays on the device
        got = visionops.nms(b, s, thr)
        assert got.is_cuda and got.dtype == torch.int64
        np.testing.assert_array_equal(got.cpu().numpy(), tvops.nms(b_tv, s_tv, thr).cpu().numpy())
        np.testing.assert_array_equal(got.cpu().numpy(),
                                      visionops.nms(b.cpu(), s.cpu(), thr).numpy())
        got = on_cuda(visionops.batched_nms, b, s, idxs, thr)
        np.testing.assert_array_equal(got.cpu().numpy(),
                                      tvops.batched_nms(b_tv, s_tv, idxs, thr).cpu().numpy())
        np.testing.assert_array_equal(got.cpu().numpy(), visionops.batched_nms(
            b.cpu(), s.cpu(), idxs.cpu(), thr).numpy())


@pytest.mark.parametrize("name", ["box_iou", "generalized_box_iou", "distance_box_iou",
                                  "complete_box_iou"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_iou_cuda(name, dtype, rng):
    a = cuda(detections(rng, 300, np.float64), dtype)
    b = cuda(detections(rng, 200, np.float64), dtype)
    got = on_cuda(getattr(visionops, name), a, b)
    assert got.is_cuda and got.dtype == dtype
    assert_close(got, getattr(tvops, name)(a, b), dtype_name(dtype))


def roi_case(rng, dtype, channels):
    x = cuda(rng.normal(size=(2, channels, 23, 31)), dtype)
    rois = cuda(make_rois(rng, 40, 2, 140, 80, np.float64), dtype)
    return x, rois


@pytest.mark.parametrize("op,kwargs,channels", [
    ("roi_align", dict(spatial_scale=0.25, sampling_ratio=2, aligned=True), 5),
    ("roi_align", dict(spatial_scale=0.25, sampling_ratio=-1, aligned=False), 5),
    ("roi_pool", dict(spatial_scale=0.25), 5),
    ("ps_roi_align", dict(spatial_scale=0.25, sampling_ratio=2), 18),
    ("ps_roi_pool", dict(spatial_scale=0.25), 18),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_roi_ops_cuda(op, kwargs, channels, dtype, rng):
    x, rois = roi_case(rng, dtype, channels)
    x_vo = x.clone().requires_grad_()
    x_tv = x.clone().requires_grad_()
    got = on_cuda(getattr(visionops, op), x_vo, rois, (3, 3), **kwargs)
    want = getattr(tvops, op)(x_tv, rois, (3, 3), **kwargs)
    assert got.is_cuda
    name = dtype_name(dtype)
    if op == "ps_roi_pool":  # only the forward is comparable everywhere (see test_improves)
        assert_close(got, want, name)
        return
    assert_close(got, want, name)
    g = torch.randn_like(got)
    got.backward(g)
    want.backward(g)
    assert_close(x_vo.grad, x_tv.grad, name, rtol=1e-4, atol=1e-4)
    # list-of-boxes form and the CPU path agree
    cpu = getattr(visionops, op)(x.cpu(), rois_to_list(rois.cpu(), 2), (3, 3), **kwargs)
    assert_close(got.cpu(), cpu, name)


def test_multi_scale_roi_align_cuda(rng):
    feats = {str(i): cuda(rng.normal(size=(2, 4, 128 // 2 ** (i + 2), 160 // 2 ** (i + 2))),
                          torch.float32) for i in range(4)}
    boxes = []
    for n in (12, 7):
        xy = rng.uniform(0, 150, (n, 2))
        wh = np.exp(rng.uniform(np.log(4), np.log(300), (n, 2)))
        boxes.append(cuda(np.concatenate([xy, xy + wh], 1), torch.float32))
    pool_vo = visionops.MultiScaleRoIAlign(list(feats), 5, 2, canonical_scale=56)
    pool_tv = tvops.MultiScaleRoIAlign(list(feats), 5, 2, canonical_scale=56)
    got = on_cuda(pool_vo, feats, boxes, [(128, 160)] * 2)
    assert got.is_cuda
    assert_close(got, pool_tv(feats, boxes, [(128, 160)] * 2), "float32")


def test_deform_conv2d_cuda(rng):
    t = {k: cuda(v, torch.float32).requires_grad_() for k, v in {
        "input": rng.normal(size=(3, 6, 9, 7)), "offset": rng.normal(size=(3, 36, 4, 6)) * 2,
        "weight": rng.normal(size=(4, 3, 3, 2)), "mask": rng.uniform(size=(3, 18, 4, 6)),
        "bias": rng.normal(size=4)}.items()}
    ref = {k: v.detach().clone().requires_grad_() for k, v in t.items()}
    conv = dict(stride=(2, 1), padding=(1, 0), dilation=(2, 1))
    got = on_cuda(visionops.deform_conv2d, t["input"], t["offset"], t["weight"], t["bias"],
                  mask=t["mask"], **conv)
    want = tvops.deform_conv2d(ref["input"], ref["offset"], ref["weight"], ref["bias"],
                               mask=ref["mask"], **conv)
    assert_close(got, want, "float32", atol=1e-4)
    g = torch.randn_like(got)
    got.backward(g)
    want.backward(g)
    for k in t:
        assert_close(t[k].grad, ref[k].grad, "float32", rtol=1e-4, atol=1e-3, what=k)


def test_cuda_side_stream(rng):
    """Work is queued on the current torch stream."""
    b = cuda(detections(rng, 2000, np.float32))
    s = cuda(distinct_scores(rng, 2000, np.float32))
    want = tvops.nms(b, s, 0.5)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        got = on_cuda(visionops.nms, b, s, 0.5)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(got.cpu().numpy(), want.cpu().numpy())


def test_cuda_cpu_mix_is_an_error():
    with pytest.raises((ValueError, RuntimeError), match="device|cuda|cpu"):
        visionops.box_iou(torch.zeros(2, 4).cuda(), torch.zeros(3, 4))


def test_cuda_meta_shapes():
    x = torch.empty(2, 3, 8, 8, device="meta")
    out = torch.ops.visionops.roi_align(x, torch.empty(4, 5, device="meta"), 0.5, 2, 2, -1, False)
    assert out.shape == (4, 3, 2, 2)


def test_cuda_graph_capture_of_a_detection_head(rng):
    """A detection head's visionops ops captured in a CUDA graph (no host
    synchronisation inside any of them: the value checks are off while the
    stream captures) and replayed on new inputs copied into the captured
    buffers: each replay gives what eager calls give on those inputs."""
    feats = torch.empty(2, 16, 32, 40, device="cuda")
    rois = torch.empty(64, 5, device="cuda")
    boxes = torch.empty(2, 300, 4, device="cuda")
    scores = torch.empty(2, 5, 300, device="cuda")

    def fill(seed):
        g = np.random.default_rng(seed)
        feats.copy_(torch.from_numpy(g.standard_normal(feats.shape, np.float32)))
        rois.copy_(torch.from_numpy(make_rois(g, 64, 2, 120, 60)))
        b = detections(g, 600, np.float32).reshape(2, 300, 4)
        boxes.copy_(torch.from_numpy(b))
        scores.copy_(torch.from_numpy(g.random(scores.shape, np.float32)))

    def head():
        pooled = visionops.roi_align(feats, rois, (7, 7), 0.25, 2, True)
        iou = visionops.box_iou(boxes[0], boxes[1])
        keep, labels, kept_scores, num = visionops.batched_nms_padded(
            boxes, scores, 0.5, score_threshold=0.05, max_per_image=50)
        return pooled, iou, keep, labels, kept_scores, num

    fill(0)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        on_cuda(head)  # warm-up on a side stream, as torch.cuda.graph asks
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = head()
    for seed in (1, 2):
        fill(seed)
        graph.replay()
        torch.cuda.synchronize()
        want = head()
        for got, w in zip(outs, want):
            np.testing.assert_array_equal(got.cpu().numpy(), w.cpu().numpy())
