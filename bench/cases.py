"""Benchmark cases for bench/compare_torchvision.py: detector-like inputs and,
per op and size, a Case whose make(device) returns the callables (torchvision,
visionops kernel, visionops public API) on that device, plus the op's work
model (compulsory bytes moved, samples / IoU evaluations / FLOPs) for the
how-close-to-the-limit table.

torchvision and the visionops public API (visionops.roi_align(tensor, ...),
or for a backward row the registered torch.ops.visionops.*_backward that
autograd calls) are timed as users call them: each allocates its outputs
in torch. The kernel callable is the C function through ctypes
(bench/vo_ctypes.py) with outputs allocated once, before timing: what the
kernel alone costs. Case.numpy(), where set, gives the public API on NumPy
arrays (CPU)."""
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torchvision

try:  # the public API: bench/compare_torchvision.py puts <build>/python on sys.path
    import visionops
except ImportError:  # kernel-only callers (bench/contention.py, before_after.py)
    visionops = None

F32 = 4  # bytes per float32 / int32 element


@dataclass
class Sizes:
    """Problem sizes: the issue-7 model sizes, or small ones for --quick."""
    nms: tuple = (1000, 5000, 20000)
    iou: int = 5000
    rotated_iou: int = 2000
    rois: int = 1000
    fmap: tuple = (2, 256, 200, 272)
    ps_channels: int = 490
    dcn: tuple = (2, 256, 64, 64, 256)  # N, Cin, H, W, Cout


QUICK = Sizes(nms=(1000, 5000), iou=1000, rotated_iou=500, rois=100, dcn=(2, 64, 32, 32, 64))


@dataclass
class Case:
    op: str
    label: str
    make: Callable  # device -> (torchvision fn, visionops kernel fn, visionops API fn)
    bytes: float = 0.0  # compulsory traffic: bytes the op must read + write at least
    work: float = 0.0  # samples, IoU evaluations or FLOPs
    unit: str = ""  # what `work` counts
    key: str = ""  # which measured peak `work` is compared with ("iou", "flop" or "")
    numpy: Callable = None  # () -> the visionops public API on NumPy arrays, or None


# ------------------------------------------------------------------ inputs

def detections(rng, n):
    """n boxes in clusters of ~30 jittered copies around objects of a
    1333x800 image, so NMS suppresses as on real detector output."""
    m = n // 30 + 1
    c, s = rng.uniform(0, [1333, 800], (m, 2)), rng.uniform(16, 300, (m, 2))
    k = rng.integers(0, m, n)
    ctr = c[k] + rng.normal(0, 0.05, (n, 2)) * s[k]
    wh = s[k] * rng.uniform(0.8, 1.2, (n, 2))
    return np.concatenate([ctr - wh / 2, ctr + wh / 2], 1).astype(np.float32)


def rotated_detections(rng, n, spread=(1333, 800)):
    """detections' clusters as rotated boxes (cx, cy, w, h, angle in
    degrees): each object at its own angle, its copies within a few degrees
    of it. A small `spread` packs the objects so that most pairs overlap."""
    m = n // 30 + 1
    c, s = rng.uniform(0, spread, (m, 2)), rng.uniform(16, 300, (m, 2))
    a = rng.uniform(-90, 90, m)
    k = rng.integers(0, m, n)
    ctr = c[k] + rng.normal(0, 0.05, (n, 2)) * s[k]
    wh = s[k] * rng.uniform(0.8, 1.2, (n, 2))
    ang = a[k] + rng.normal(0, 3, n)
    return np.concatenate([ctr, wh, ang[:, None]], 1).astype(np.float32)


def proposals(rng, k, n=2):
    """k RoIs (batch, x1, y1, x2, y2) over n 1088x800 images, sides
    log-uniform in 16..512 px as proposals after NMS."""
    w, h = 16 * 32 ** rng.random(k), 16 * 32 ** rng.random(k)
    x1, y1 = rng.random(k) * (1088 - w), rng.random(k) * (800 - h)
    return np.stack([rng.integers(0, n, k), x1, y1, x1 + w, y1 + h], 1).astype(np.float32)


def on(dev, *arrays):
    return [torch.from_numpy(a).to(dev) for a in arrays]


def empty(dev, shape, dtype=torch.float32):
    return torch.empty(shape, dtype=dtype, device=dev)


def randn(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape, np.float32)


# ------------------------------------------------------- box op work models

def iou_one_many(b, rest):
    lt, rb = np.maximum(b[:2], rest[:, :2]), np.minimum(b[2:], rest[:, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), 1)
    area = lambda x: (x[..., 2] - x[..., 0]) * (x[..., 3] - x[..., 1])
    return inter / (area(b) + area(rest) - inter)


def greedy_evaluations(boxes, scores, thr):
    """IoU evaluations of plain greedy NMS (torchvision's CPU algorithm):
    each kept box against every later box not yet suppressed."""
    b = boxes[np.argsort(-scores, kind="stable")].astype(np.float64)
    alive, evals = np.ones(len(b), bool), 0
    for i in range(len(b)):
        if alive[i]:
            rest = np.flatnonzero(alive[i + 1:]) + i + 1
            evals += rest.size
            alive[rest[iou_one_many(b[i], b[rest]) > thr]] = False
    return evals


def batched_evaluations(boxes, scores, classes, thr):
    return sum(greedy_evaluations(boxes[classes == c], scores[classes == c], thr)
               for c in np.unique(classes))


def nms_case(vo, rng, n):
    b, s = detections(rng, n), rng.random(n).astype(np.float32)

    def make(dev):
        tb, ts = on(dev, b, s)
        keep, nk = empty(dev, n, torch.int64), torch.zeros((), dtype=torch.int64, device=dev)
        return (lambda: torchvision.ops.nms(tb, ts, 0.5),
                vo.bind("vo_nms", tb, ts, 0.5, keep, nk),
                lambda: visionops.nms(tb, ts, 0.5))
    return Case("nms", f"{n:,} boxes", make, bytes=n * (16 + 4 + 8),
                work=greedy_evaluations(b, s, 0.5), unit="IoU evals", key="iou",
                numpy=lambda: lambda: visionops.nms(b, s, 0.5))


def batched_nms_case(vo, rng, n, classes=80):
    b, s, c = detections(rng, n), rng.random(n).astype(np.float32), rng.integers(0, classes, n)

    def make(dev):
        tb, ts, tc = on(dev, b, s, c)
        keep, nk = empty(dev, n, torch.int64), torch.zeros((), dtype=torch.int64, device=dev)
        return (lambda: torchvision.ops.batched_nms(tb, ts, tc, 0.5),
                vo.bind("vo_batched_nms", tb, ts, tc, 0.5, keep, nk),
                lambda: visionops.batched_nms(tb, ts, tc, 0.5))
    return Case("batched_nms", f"{n:,} boxes, {classes} classes", make, bytes=n * (16 + 4 + 8 + 8),
                work=batched_evaluations(b, s, c, 0.5), unit="IoU evals", key="iou",
                numpy=lambda: lambda: visionops.batched_nms(b, s, c, 0.5))


def box_iou_case(vo, rng, n):
    a1, a2 = detections(rng, n), detections(rng, n)

    def make(dev):
        t1, t2 = on(dev, a1, a2)
        out = empty(dev, (n, n))
        return (lambda: torchvision.ops.box_iou(t1, t2), vo.bind("vo_box_iou", t1, t2, out),
                lambda: visionops.box_iou(t1, t2))
    return Case("box_iou", f"{n:,} x {n:,}", make, bytes=n * n * F32 + 2 * n * 16,
                work=n * n, unit="IoUs", key="iou",
                numpy=lambda: lambda: visionops.box_iou(a1, a2))


def box_iou_rotated_case(vo, rng, n, spread=(1333, 800), label=""):
    """torchvision 0.29's box_iou(fmt="cxcywhr") (torchvision::box_iou_rotated)
    against visionops' box_iou_rotated, every pair of two sets."""
    a1, a2 = rotated_detections(rng, n, spread), rotated_detections(rng, n, spread)

    def make(dev):
        t1, t2 = on(dev, a1, a2)
        out = empty(dev, (n, n))
        return (lambda: torchvision.ops.box_iou(t1, t2, fmt="cxcywhr"),
                vo.bind("vo_box_iou_rotated", t1, t2, False, False, False, out),
                lambda: visionops.box_iou(t1, t2, fmt="cxcywhr"))
    return Case("box_iou_rotated", f"{n:,} x {n:,}{label}", make, bytes=n * n * F32 + 2 * n * 20,
                work=n * n, unit="IoUs",
                numpy=lambda: lambda: visionops.box_iou(a1, a2, fmt="cxcywhr"))


def has_rotated_iou():
    """torchvision 0.29 and newer have box_iou(fmt="cxcywhr")."""
    return hasattr(torch.ops.torchvision, "box_iou_rotated")


# ------------------------------------------------------- RoI op work models

def align_taps(start, size, bins, sr, limit):
    """Pixel indices the bilinear samples of each bin read along one axis
    (torchvision's roi_align geometry): [bins][2*sr] ints, -1 for samples
    outside the map."""
    bin_size = size / bins
    pos = start + (np.arange(bins)[:, None] + (np.arange(sr)[None, :] + 0.5) / sr) * bin_size
    out = np.full((bins, 2 * sr), -1, np.int64)
    inside = (pos >= -1) & (pos <= limit)
    p = np.clip(pos, 0, None)
    lo = np.where(p >= limit - 1, limit - 1, np.floor(p)).astype(np.int64)
    hi = np.minimum(lo + 1, limit - 1)
    out[:, :sr], out[:, sr:] = np.where(inside, lo, -1), np.where(inside, hi, -1)
    return out


def align_geometry(roi, scale, bins, sr, hw, aligned=True):
    """Per-bin row and column taps of one RoI."""
    off = 0.5 if aligned else 0.0
    x1, y1, x2, y2 = roi[1:] * scale - off
    w, h = (x2 - x1, y2 - y1) if aligned else (max(x2 - x1, 1), max(y2 - y1, 1))
    return align_taps(y1, h, bins, sr, hw[0]), align_taps(x1, w, bins, sr, hw[1])


def pool_bins(lo, size, bins, limit, last):
    """[bins][2] half-open index ranges of roi_pool / ps_roi_pool bins."""
    b = size / bins
    i = np.arange(bins)
    start = np.clip(np.floor(i * b) + lo, 0, last).astype(np.int64)
    end = np.clip(np.ceil((i + 1) * b) + lo, 0, last).astype(np.int64)
    return np.stack([start, end], 1)


def pool_geometry(roi, scale, bins, hw, ps):
    """Per-bin row and column ranges of one RoI: roi_pool (ps=False) covers
    round(x1)..round(x2) inclusive, clamped to [0, H]; ps_roi_pool
    round(x1)..round(x2) exclusive, clamped to [0, H-1]."""
    x1, y1, x2, y2 = np.floor(roi[1:] * scale + 0.5)
    if ps:
        h, w = max(y2 - y1, 1), max(x2 - x1, 1)
        return pool_bins(y1, h, bins, hw[0], hw[0] - 1), pool_bins(x1, w, bins, hw[1], hw[1] - 1)
    h, w = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
    return pool_bins(y1, h, bins, hw[0], hw[0]), pool_bins(x1, w, bins, hw[1], hw[1])


def align_index(taps):
    return np.unique(taps[taps >= 0])


def pool_index(ranges):
    return np.unique(np.concatenate([np.arange(a, b) for a, b in ranges]))


def pool_area(rows, cols):
    extent = lambda r: int(np.clip(r[:, 1] - r[:, 0], 0, None).sum())
    return extent(rows) * extent(cols)


def touched_pixels(rois, n_img, hw, bins, geometry, as_index, per_bin):
    """Distinct input pixels per channel (summed over images) the RoIs read.
    per_bin (position-sensitive ops: each bin reads its own channel): one
    union per bin, summed over the bins."""
    masks = np.zeros((bins * bins if per_bin else 1, n_img) + tuple(hw), bool)
    for roi in rois:
        rows, cols = geometry(roi)
        img = int(roi[0])
        if not per_bin:
            masks[0, img][np.ix_(as_index(rows), as_index(cols))] = True
            continue
        for ph in range(bins):
            for pw in range(bins):
                r, c = as_index(rows[ph:ph + 1]), as_index(cols[pw:pw + 1])
                masks[ph * bins + pw, img][np.ix_(r, c)] = True
    return int(masks.sum())


def roi_work(op, rois, fmap, bins, sr, scale):
    """(compulsory forward bytes, samples) of RoI op `op`. Bytes: the distinct
    input pixels read, once each, + RoIs + outputs (+ argmax or
    channel_mapping). Samples: bilinear samples (align ops) or input elements
    compared / summed (pool ops)."""
    n_img, channels, hw = fmap[0], fmap[1], fmap[2:]
    ps = op.startswith("ps_")
    out_channels = channels // (bins * bins) if ps else channels
    if op.endswith("align"):
        geo = lambda roi: align_geometry(roi, scale, bins, sr, hw)
        index = align_index
        samples = len(rois) * out_channels * bins * bins * sr * sr
    else:
        geo = lambda roi: pool_geometry(roi, scale, bins, hw, ps)
        index = pool_index
        samples = out_channels * sum(pool_area(*geo(roi)) for roi in rois)
    pixels = touched_pixels(rois, n_img, hw, bins, geo, index, ps)
    outputs = len(rois) * out_channels * bins * bins * F32 * (1 if op == "roi_align" else 2)
    return pixels * out_channels * F32 + rois.nbytes + outputs, samples


def backward_bytes(op, rois, fmap, bins):
    """Compulsory backward bytes: read grad (+ argmax or channel_mapping) and
    RoIs, write all of grad_input."""
    ps = op.startswith("ps_")
    grad = len(rois) * (fmap[1] // (bins * bins) if ps else fmap[1]) * bins * bins * F32
    saved = 0 if op == "roi_align" else grad
    return grad + saved + rois.nbytes + int(np.prod(fmap)) * F32


# -------------------------------------------------------------- RoI cases

SCALE, SR = 0.25, 2


def roi_label(fmap, k, bins):
    return "x".join(map(str, fmap)) + f", {k} RoIs, {bins}x{bins}"


def roi_align_cases(vo, x, rois, bins):
    n, c, h, w = x.shape
    k = len(rois)
    fwd_bytes, samples = roi_work("roi_align", rois, x.shape, bins, SR, SCALE)
    label = roi_label(x.shape, k, bins)

    def forward(dev):
        tx, tr = on(dev, x, rois)
        out = empty(dev, (k, c, bins, bins))
        return (lambda: torchvision.ops.roi_align(tx, tr, bins, SCALE, SR, True),
                vo.bind("vo_roi_align", tx, tr, SCALE, bins, bins, SR, True, out),
                lambda: visionops.roi_align(tx, tr, bins, SCALE, SR, True))

    def backward(dev):
        tr, g = on(dev, rois, randn((k, c, bins, bins), 3))
        gi = empty(dev, x.shape)
        return (lambda: torch.ops.torchvision._roi_align_backward(
                    g, tr, SCALE, bins, bins, n, c, h, w, SR, True),
                vo.bind("vo_roi_align_backward", g, tr, SCALE, bins, bins, n, c, h, w,
                                SR, True, gi),
                lambda: torch.ops.visionops.roi_align_backward(
                    g, tr, SCALE, bins, bins, n, c, h, w, SR, True))

    def training(dev):
        """One training step's share: forward, then backward through
        autograd (x.grad cleared each time, so nothing accumulates)."""
        tx, tr, g = on(dev, x, rois, randn((k, c, bins, bins), 3))
        tx.requires_grad_()
        out, gi = empty(dev, (k, c, bins, bins)), empty(dev, x.shape)

        def step(fn):
            tx.grad = None
            fn(tx, tr, bins, SCALE, SR, True).backward(g)
        kernel_fwd = vo.bind("vo_roi_align", tx, tr, SCALE, bins, bins, SR, True, out)
        kernel_bwd = vo.bind("vo_roi_align_backward", g, tr, SCALE, bins, bins, n, c, h, w, SR,
                             True, gi)
        return (lambda: step(torchvision.ops.roi_align),
                lambda: (kernel_fwd(), kernel_bwd()),
                lambda: step(visionops.roi_align))
    bwd_bytes = backward_bytes("roi_align", rois, x.shape, bins)
    return [Case("roi_align", label, forward, fwd_bytes, samples, "samples",
                 numpy=lambda: lambda: visionops.roi_align(x, rois, bins, SCALE, SR, True)),
            Case("roi_align_backward", label, backward, bwd_bytes, samples, "samples"),
            Case("roi_align_fwd_bwd", label, training, fwd_bytes + bwd_bytes, 2 * samples,
                 "samples")]


def saved_output(vo, fn, shape, x, rois, *params):
    """The int32 argmax / channel_mapping a backward needs, from visionops'
    CPU forward (torchvision's forward gives the same)."""
    out, saved = empty("cpu", shape), empty("cpu", shape, torch.int32)
    tx, tr = on("cpu", x, rois)
    vo.call(fn, tx, tr, *params, out, saved)
    return saved


def pool_like_cases(vo, op, x, rois, bins):
    """roi_pool, ps_roi_align or ps_roi_pool, forward and backward."""
    n, c, h, w = x.shape
    k = len(rois)
    ps = op.startswith("ps_")
    oc = c // (bins * bins) if ps else c
    extra = (SR,) if op == "ps_roi_align" else ()
    tv_forward = {"roi_pool": lambda tx, tr: torchvision.ops.roi_pool(tx, tr, bins, SCALE),
                  "ps_roi_pool": lambda tx, tr: torchvision.ops.ps_roi_pool(tx, tr, bins, SCALE),
                  "ps_roi_align": lambda tx, tr: torchvision.ops.ps_roi_align(
                      tx, tr, bins, SCALE, SR)}[op]
    tv_backward = getattr(torch.ops.torchvision, f"_{op}_backward")
    fwd_bytes, samples = roi_work(op, rois, x.shape, bins, SR, SCALE)
    label = roi_label(x.shape, k, bins)

    vo_forward = getattr(visionops, op, None)

    def forward(dev):
        tx, tr = on(dev, x, rois)
        out, saved = empty(dev, (k, oc, bins, bins)), empty(dev, (k, oc, bins, bins), torch.int32)
        return (lambda: tv_forward(tx, tr),
                vo.bind(f"vo_{op}", tx, tr, SCALE, bins, bins, *extra, out, saved),
                lambda: vo_forward(tx, tr, bins, SCALE, *extra))

    def backward(dev):
        saved = saved_output(vo, f"vo_{op}", (k, oc, bins, bins), x, rois, SCALE, bins, bins,
                             *extra).to(dev)
        tr, g = on(dev, rois, randn((k, oc, bins, bins), 4))
        gi = empty(dev, x.shape)
        vo_backward = getattr(torch.ops.visionops, f"{op}_backward", None) if visionops else None
        return (lambda: tv_backward(g, tr, saved, SCALE, bins, bins, *extra, n, c, h, w),
                vo.bind(f"vo_{op}_backward", g, tr, saved, SCALE, bins, bins, *extra,
                                n, c, h, w, gi),
                lambda: vo_backward(g, tr, saved, SCALE, bins, bins, *extra, n, c, h, w))
    return [Case(op, label, forward, fwd_bytes, samples, "samples",
                 numpy=lambda: lambda: vo_forward(x, rois, bins, SCALE, *extra)),
            Case(f"{op}_backward", label, backward, backward_bytes(op, rois, x.shape, bins),
                 samples, "samples")]


# ------------------------------------------------------------ deform_conv2d

def deform_cases(vo, dims):
    """DCN v2 (with mask), 3x3, padding 1, offset groups 1, float32."""
    n, cin, h, w, cout = dims
    r = np.random.default_rng(1)
    u = lambda lo, hi, shape: r.uniform(lo, hi, shape).astype(np.float32)
    arrays = (u(-1, 1, (n, cin, h, w)), u(-0.05, 0.05, (cout, cin, 3, 3)),
              u(-2, 2, (n, 18, h, w)), u(0, 1, (n, 9, h, w)), u(-1, 1, (cout,)),
              u(-1, 1, (n, cout, h, w)))
    ints = (1, 1, 1, 1, 1, 1, 1, 1)  # stride, padding, dilation, groups, offset groups
    flops = 2.0 * n * cout * h * w * cin * 9
    label = f"{n}x{cin}x{h}x{w}, 3x3, {cout} out, mask"

    def forward(dev):
        x, wt, off, mask, bias, _ = on(dev, *arrays)
        y = empty(dev, (n, cout, h, w))
        return (lambda: torch.ops.torchvision.deform_conv2d(x, wt, off, mask, bias, *ints, True),
                vo.bind("vo_deform_conv2d", x, wt, off, mask, bias, *ints, y),
                lambda: visionops.deform_conv2d(x, off, wt, bias, padding=1, mask=mask))

    def backward(dev):
        x, wt, off, mask, bias, g = on(dev, *arrays)
        grads = [torch.empty_like(t) for t in (x, wt, off, mask, bias)]
        return (lambda: torch.ops.torchvision._deform_conv2d_backward(
                    g, x, wt, off, mask, bias, *ints, True),
                vo.bind("vo_deform_conv2d_backward", g, x, wt, off, mask, bias, *ints,
                                *grads),
                lambda: torch.ops.visionops.deform_conv2d_backward(
                    g, x, wt, off, mask, bias, *ints, True))
    x0, wt0, off0, mask0, bias0 = arrays[:5]
    return [Case("deform_conv2d", label, forward, 0, flops, "FLOP", "flop",
                 numpy=lambda: lambda: visionops.deform_conv2d(x0, off0, wt0, bias0, padding=1,
                                                               mask=mask0)),
            Case("deform_conv2d_backward", label, backward, 0, 2 * flops, "FLOP", "flop")]


# --------------------------------------------------------------- all cases

def all_cases(vo, sizes, wanted=lambda op: True):
    """Every case, in table order; `wanted(op)` skips building the others."""
    rng = np.random.default_rng(0)
    out = []
    for n in sizes.nms:
        if wanted("nms"):
            out.append(nms_case(vo, rng, n))
    if wanted("batched_nms"):
        out.append(batched_nms_case(vo, rng, 20000))
    if wanted("box_iou"):
        out.append(box_iou_case(vo, rng, sizes.iou))
    if wanted("box_iou_rotated") and has_rotated_iou():
        out.append(box_iou_rotated_case(vo, rng, sizes.rotated_iou))
        out.append(box_iou_rotated_case(vo, rng, sizes.rotated_iou // 4, (150, 150),
                                        ", packed: most pairs overlap"))
    n, c, h, w = sizes.fmap
    rois = proposals(rng, sizes.rois, n)
    roi_ops = ("roi_align", "roi_pool")
    if any(wanted(op) for op in roi_ops):
        x = randn(sizes.fmap, 1)
        for bins in (7, 14):
            out += roi_align_cases(vo, x, rois, bins) if wanted("roi_align") else []
            out += pool_like_cases(vo, "roi_pool", x, rois, bins) if wanted("roi_pool") else []
        del x
    ps_ops = [op for op in ("ps_roi_align", "ps_roi_pool") if wanted(op)]
    if ps_ops:
        xps = randn((n, sizes.ps_channels, h, w), 2)
        for op in ps_ops:
            out += pool_like_cases(vo, op, xps, rois, 7)
    if wanted("deform_conv2d"):
        out += deform_cases(vo, sizes.dcn)
    return out
