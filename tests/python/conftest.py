"""Shared fixtures and helpers of the visionops Python test suite.

The package must be importable (PYTHONPATH=<build>/python, or installed).
torch / torchvision are optional: modules that need them call
`pytest.importorskip`, so the NumPy-only tests still run without them.
"""
import os
import sys

import numpy as np
import pytest

# Small inputs stay on the calling thread by default (50 us of work per
# thread at least); the suite's thread-count comparisons are about the
# threaded paths, so it takes them for any size, as the C suite does.
os.environ.setdefault("VISIONOPS_MIN_THREAD_NS", "0")

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None
try:
    import torchvision
except ImportError:  # pragma: no cover
    torchvision = None

import visionops  # noqa: E402  (the package under test: a failure here fails loudly)

VERSION = visionops.__version__

HAVE_TORCH = torch is not None
HAVE_TORCHVISION = torchvision is not None
HAVE_CUDA = HAVE_TORCH and torch.cuda.is_available()

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")
needs_torchvision = pytest.mark.skipif(not HAVE_TORCHVISION,
                                       reason="torchvision is not installed")
needs_cuda = pytest.mark.skipif(not HAVE_CUDA, reason="torch.cuda is not available")

SEEDS = (0, 1, 2)

if HAVE_TORCH:

    class FnModule(torch.nn.Module):
        """A function as a module (torch.export and torch.onnx.export take
        modules)."""

        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, *args):
            return self.fn(*args)

# Relative / absolute tolerances per dtype name (the suite's contract: float32
# and float64 to 1e-5 relative, float16 to 5e-3).
TOL = {
    "float64": (1e-5, 1e-8),
    "float32": (1e-5, 1e-5),
    "float16": (5e-3, 5e-3),
}


def dtype_name(x):
    """"float32" for torch.float32, a tensor or an array of that dtype."""
    return str(getattr(x, "dtype", x)).replace("torch.", "")


def to_numpy(x):
    if HAVE_TORCH and isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def assert_close(got, want, dtype=None, rtol=None, atol=None, what=""):
    """got / want as torch tensors or arrays; tolerances from TOL by dtype."""
    g, w = to_numpy(got), to_numpy(want)
    assert g.shape == w.shape, "%s: shape %s != %s" % (what, g.shape, w.shape)
    name = dtype if dtype is not None else str(g.dtype)
    r, a = TOL.get(name, (1e-5, 1e-5))
    r = r if rtol is None else rtol
    a = a if atol is None else atol
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    if g.size:
        diff = np.abs(g64 - w64)
        bad = ~(diff <= a + r * np.abs(w64))
        bad &= ~(np.isnan(g64) & np.isnan(w64))
        assert not bad.any(), "%s: %d of %d differ, max abs diff %g (rtol %g, atol %g)" % (
            what, int(bad.sum()), g.size, float(np.nanmax(diff)), r, a)


# ------------------------------------------------------------ input makers


def detections(rng, n, dtype=np.float32, spread=800.0):
    """[n, 4] boxes in clusters of jittered copies around objects, as a
    detector emits them (lots of overlap, so NMS has work to do)."""
    m = n // 20 + 1
    centres = rng.uniform(0, spread, (m, 2))
    sizes = rng.uniform(10, 200, (m, 2))
    k = rng.integers(0, m, n)
    c = centres[k] + rng.normal(0, 8, (n, 2))
    wh = sizes[k] * rng.uniform(0.8, 1.2, (n, 2))
    return np.concatenate([c - wh / 2, c + wh / 2], 1).astype(dtype)


def distinct_scores(rng, n, dtype=np.float32):
    """Scores without ties (torchvision's sort is unstable for ties)."""
    return (rng.permutation(n).astype(np.float64) / max(n, 1)).astype(dtype)


def make_rois(rng, k, batch, extent, max_wh, dtype=np.float32, lo=None):
    """[k, 5] rois (batch_index, x1, y1, x2, y2): corners over
    [lo, extent] (lo defaults to -10% of extent, so some RoIs start outside
    the map), sizes in [0.5, max_wh]; sorted by batch index so the rows
    match torchvision's list-of-boxes order."""
    lo = -0.1 * extent if lo is None else lo
    xy = rng.uniform(lo, extent, (k, 2))
    wh = rng.uniform(0.5, max_wh, (k, 2))
    idx = np.sort(rng.integers(0, batch, (k, 1)), axis=0)
    return np.concatenate([idx, xy, xy + wh], 1).astype(dtype)


def rois_to_list(rois, batch):
    """[K, 5] rois (sorted by batch index) to torchvision's list of [L, 4]."""
    return [rois[rois[:, 0] == i, 1:] for i in range(batch)]


def ps_pool_clear_of_edge(rois, scale, ph, pw, h, w):
    """RoIs whose ps_roi_pool bins all end before the last row and column
    (computed in the rois' dtype, as torchvision does): there torchvision's
    forward (bins clamped to H-1) and backward (clamped to H) agree."""
    t = rois.dtype.type
    c = rois[:, 1:] * t(scale)
    r = (np.sign(c) * np.floor(np.abs(c) + t(0.5))).astype(np.int64)
    rw = np.maximum(r[:, 2] - r[:, 0], 1)
    rh = np.maximum(r[:, 3] - r[:, 1], 1)
    bh = rh.astype(rois.dtype) / t(ph)
    bw = rw.astype(rois.dtype) / t(pw)
    hend = np.max([np.ceil(t(i + 1) * bh) for i in range(ph)], 0).astype(np.int64) + r[:, 1]
    wend = np.max([np.ceil(t(i + 1) * bw) for i in range(pw)], 0).astype(np.int64) + r[:, 0]
    return (hend <= h - 1) & (wend <= w - 1)


def np_box_iou(a, b):
    """Reference IoU in float64 ("+0" convention, no epsilon)."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = np.clip(rb - lt, 0, None)
    inter = wh[..., 0] * wh[..., 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return inter / (area_a[:, None] + area_b[None, :] - inter)


def np_nms(boxes, scores, thr):
    """Reference greedy NMS with a stable sort (ties: lower index first)."""
    order = np.argsort(-scores.astype(np.float64), kind="stable")
    iou = np_box_iou(boxes, boxes)
    removed = np.zeros(len(boxes), bool)
    keep = []
    for i in order:
        if removed[i]:
            continue
        keep.append(i)
        removed |= iou[i] > thr
    return np.array(keep, np.int64)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def run_python(code, timeout=120):
    """Runs `code` in a fresh interpreter (for calls that may crash the
    process, e.g. torchvision reading out of bounds); returns the
    CompletedProcess."""
    import subprocess

    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=env)
