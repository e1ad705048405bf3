"""visionops on CUDA against visionops on the CPU and torchvision's CUDA ops:
every registered op in float32 (and float16 where torchvision takes it) at
model-like sizes, printed as a Markdown table (max differences, times by CUDA
events, ratio). Exits 1 on a difference above tolerance or an op without a
CUDA kernel, 0 with "skipped" where torch.cuda is unavailable.

Usage: gpu_compare.py [path/to/libvisionops.so] [--cpu-selftest]
The library comes from the argument, $VISIONOPS_LIB, or build-gpu/ or build/
of this checkout. --cpu-selftest runs the same comparisons with the CPU
standing in for CUDA (checks this script where no GPU is visible).

Tensors reach the library as DLPack DLTensors built with ctypes from torch
tensors (data pointer, shape, strides, dtype, device), through the generic
vo_infer / vo_call entry points, as tests/python/parity_torchvision.py does
for NumPy arrays."""
import contextlib
import ctypes
import math
import os
import sys
import time

try:
    import torch
    import torchvision
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"gpu_compare: skipped: torch/torchvision not importable ({e})")
    sys.exit(0)

SELFTEST = "--cpu-selftest" in sys.argv
ARGS = [a for a in sys.argv[1:] if a != "--cpu-selftest"]
if not SELFTEST and not torch.cuda.is_available():
    print("gpu_compare: skipped: torch.cuda is not available (no GPU visible, or torch "
          "built without CUDA)")
    sys.exit(0)

# ------------------------------------------------------------ the library


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _TensorList(ctypes.Structure):
    _fields_ = [("items", ctypes.POINTER(ctypes.POINTER(DLTensor))), ("count", ctypes.c_int64)]


class _FloatList(ctypes.Structure):
    _fields_ = [("items", ctypes.POINTER(ctypes.c_double)), ("count", ctypes.c_int64)]


class _ValueUnion(ctypes.Union):
    _fields_ = [("tensor", ctypes.POINTER(DLTensor)), ("f", ctypes.c_double),
                ("i", ctypes.c_int64), ("b", ctypes.c_int), ("tensors", _TensorList),
                ("floats", _FloatList)]


class VoValue(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("u", _ValueUnion)]


class VoTensorDesc(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int32), ("shape", ctypes.c_int64 * 8), ("dtype", DLDataType),
                ("device", DLDevice)]


class VoOpInfo(ctypes.Structure):
    _fields_ = [("index", ctypes.c_int), ("name", ctypes.c_char_p), ("schema", ctypes.c_char_p),
                ("backward", ctypes.c_char_p), ("num_args", ctypes.c_int),
                ("num_outputs", ctypes.c_int)]


K_NONE, K_TENSOR, K_FLOAT, K_INT, K_BOOL, K_TENSOR_LIST, K_FLOAT_LIST = range(7)
KDL_CPU, KDL_CUDA = 1, 2
TORCH_TO_DL = {torch.float32: (2, 32), torch.float64: (2, 64), torch.float16: (2, 16),
               torch.bfloat16: (4, 16), torch.int64: (0, 64), torch.int32: (0, 32)}
DL_TO_TORCH = {v: k for k, v in TORCH_TO_DL.items()}


def find_library():
    if ARGS:
        return ARGS[0]
    if os.environ.get("VISIONOPS_LIB"):
        return os.environ["VISIONOPS_LIB"]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for build in ("build-gpu", "build"):
        path = os.path.join(root, build, "libvisionops.so")
        if os.path.exists(path):
            return path
    sys.exit("gpu_compare: no library: pass path/to/libvisionops.so or set VISIONOPS_LIB")


lib = ctypes.CDLL(find_library())
lib.vo_last_error.restype = ctypes.c_char_p
lib.vo_version.restype = ctypes.c_char_p
lib.vo_op_count.restype = ctypes.c_int
lib.vo_op_get.restype = ctypes.POINTER(VoOpInfo)
lib.vo_op_get.argtypes = [ctypes.c_int]
lib.vo_infer.argtypes = [ctypes.c_void_p, ctypes.POINTER(VoOpInfo), ctypes.POINTER(VoValue),
                         ctypes.c_int, ctypes.POINTER(VoTensorDesc), ctypes.c_int]
lib.vo_call.argtypes = [ctypes.c_void_p, ctypes.POINTER(VoOpInfo), ctypes.POINTER(VoValue),
                        ctypes.c_int, ctypes.POINTER(ctypes.POINTER(DLTensor)), ctypes.c_int]
lib.vo_context_create.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
lib.vo_context_set_cuda_stream.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

OPS = {}
for _i in range(lib.vo_op_count()):
    _op = lib.vo_op_get(_i)
    OPS[_op.contents.name.decode()] = _op


class VoError(RuntimeError):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def dltensor(t, keep):
    """A DLTensor viewing torch tensor t (kept alive through `keep`)."""
    nd = t.dim()
    shape = (ctypes.c_int64 * max(nd, 1))(*t.shape)
    strides = (ctypes.c_int64 * max(nd, 1))(*t.stride())
    code, bits = TORCH_TO_DL[t.dtype]
    dev = DLDevice(KDL_CUDA, t.device.index or 0) if t.is_cuda else DLDevice(KDL_CPU, 0)
    d = DLTensor(t.data_ptr() or None, dev, nd, DLDataType(code, bits, 1),
                 shape if nd else None, strides if nd else None, 0)
    keep += [shape, strides, d, t]
    return d


def boxed(args, keep):
    """vo_value array for Python arguments: tensors, None, float, int, bool,
    and lists of tensors or of floats."""
    vals = (VoValue * len(args))()
    for i, a in enumerate(args):
        v = vals[i]
        if a is None:
            v.kind = K_NONE
        elif isinstance(a, torch.Tensor):
            v.kind = K_TENSOR
            v.u.tensor = ctypes.pointer(dltensor(a, keep))
        elif isinstance(a, bool):
            v.kind, v.u.b = K_BOOL, int(a)
        elif isinstance(a, int):
            v.kind, v.u.i = K_INT, a
        elif isinstance(a, float):
            v.kind, v.u.f = K_FLOAT, a
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
            items = (ctypes.POINTER(DLTensor) * len(a))(
                *[ctypes.pointer(dltensor(t, keep)) for t in a])
            keep.append(items)
            v.kind, v.u.tensors = K_TENSOR_LIST, _TensorList(items, len(a))
        elif isinstance(a, (list, tuple)):
            items = (ctypes.c_double * len(a))(*a)
            keep.append(items)
            v.kind, v.u.floats = K_FLOAT_LIST, _FloatList(items, len(a))
        else:
            raise TypeError(f"cannot box {type(a)}")
    return vals


def fail_from_status(status):
    raise VoError(status, lib.vo_last_error().decode())


def vo_prepare(ctx, name, args, num_outputs=None):
    """Allocates the outputs of op `name` and returns (run, outputs): run()
    calls the op once into them (no allocation, for timing)."""
    op = OPS[name]
    keep = []
    vals = boxed(args, keep)
    n = num_outputs if num_outputs is not None else op.contents.num_outputs
    descs = (VoTensorDesc * n)()
    status = lib.vo_infer(ctx, op, vals, len(args), descs, n)
    if status:
        fail_from_status(status)
    tensors = [t for a in args for t in (a if isinstance(a, list) else [a])
               if isinstance(t, torch.Tensor)]
    device = tensors[0].device
    outs = []
    for d in descs:
        dtype = DL_TO_TORCH[(d.dtype.code, d.dtype.bits)]
        outs.append(torch.empty(tuple(d.shape[:d.ndim]), dtype=dtype, device=device))
    out_ptrs = (ctypes.POINTER(DLTensor) * n)(*[ctypes.pointer(dltensor(o, keep)) for o in outs])

    def run():
        st = lib.vo_call(ctx, op, vals, len(args), out_ptrs, n)
        if st:
            fail_from_status(st)

    run.keep = keep  # the ctypes arrays must outlive run
    return run, outs


# ------------------------------------------------------------ devices, timing

DEV = torch.device("cpu") if SELFTEST else torch.device("cuda", 0)
STREAM = None if SELFTEST else torch.cuda.Stream(DEV)
CTX = ctypes.c_void_p()
if lib.vo_context_create(ctypes.byref(CTX)):
    fail_from_status(1)
if STREAM is not None:  # vo kernels on torch's stream: events and ordering agree
    lib.vo_context_set_cuda_stream(CTX, ctypes.c_void_p(STREAM.cuda_stream))


def sync():
    if not SELFTEST:
        torch.cuda.synchronize(DEV)


REPS = 3 if SELFTEST else 20


def time_ms(fn, reps=REPS):
    """Mean milliseconds per call after warm-up (CUDA events on the stream)."""
    for _ in range(3):
        fn()
    sync()
    if SELFTEST:
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - t0) * 1e3 / reps
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(STREAM)
    for _ in range(reps):
        fn()
    end.record(STREAM)
    end.synchronize()
    return start.elapsed_time(end) / reps


def on(dev, args):
    return [a.to(dev) if isinstance(a, torch.Tensor)
            else [t.to(dev) for t in a] if isinstance(a, list) and a and isinstance(a[0], torch.Tensor)
            else a for a in args]


# ------------------------------------------------------------ inputs

GEN = torch.Generator().manual_seed(0)


def randn(*shape):
    return torch.randn(*shape, generator=GEN, dtype=torch.float64)


def rand(*shape):
    return torch.rand(*shape, generator=GEN, dtype=torch.float64)


def detections(n, extent=800.0):
    """Clusters of jittered boxes, as a detector emits them (float64)."""
    m = n // 20 + 1
    centres, sizes = rand(m, 2) * extent, 10 + rand(m, 2) * 190
    k = torch.randint(0, m, (n,), generator=GEN)
    c = centres[k] + randn(n, 2) * 8
    wh = sizes[k] * (0.8 + 0.4 * rand(n, 2))
    return torch.cat([c - wh / 2, c + wh / 2], 1)


def rois(k, n, img_h, img_w, inside=1.0):
    """[K,5] RoIs sorted by image; with inside < 1 they stay in that fraction
    of the image, otherwise some reach past its borders."""
    lo = -0.05 if inside >= 1 else 0.0
    x1 = (lo + rand(k) * (inside - lo)) * img_w
    y1 = (lo + rand(k) * (inside - lo)) * img_h
    w = torch.exp(math.log(8) + rand(k) * (math.log(400) - math.log(8)))
    h = torch.exp(math.log(8) + rand(k) * (math.log(400) - math.log(8)))
    x2 = torch.minimum(x1 + w, torch.full_like(x1, img_w * inside)) if inside < 1 else x1 + w
    y2 = torch.minimum(y1 + h, torch.full_like(y1, img_h * inside)) if inside < 1 else y1 + h
    b = torch.sort(torch.randint(0, n, (k,), generator=GEN).double()).values
    return torch.stack([b, x1, y1, x2, y2], 1)


# ------------------------------------------------------------ the cases
#
# Each case(dtype) returns (args, tv, num_outputs, note): args for visionops
# (CPU tensors, moved per device), tv(args on the device) -> the torchvision
# outputs to compare with visionops' outputs in order (None to skip one), or
# tv None where torchvision has no such op.

TV = torch.ops.torchvision
SCALE = 1.0 / 16
N_IMG, C_MAP, H_MAP, W_MAP = 2, 256, 50, 68  # an 800x1088 image at stride 16
IMG_H, IMG_W = H_MAP / SCALE, W_MAP / SCALE


def cast(dt, *ts):
    return [t.to(dt) for t in ts]


def case_nms(dt, batched=False):
    # 6000 boxes: torchvision's batched_nms takes its exact per-class path on
    # CUDA above 20000 coordinates (below, it shifts boxes by class * max
    # coordinate, which float rounding makes inexact). Scores are distinct
    # even in float16 (log-spaced), as torchvision's sort is not stable.
    n = 6000
    boxes = detections(n).to(dt)
    scores = torch.exp2(torch.randperm(n, generator=GEN).double() * (15.0 / n) - 5).to(dt)
    idxs = torch.randint(0, 80, (n,), generator=GEN)
    if batched:
        args = [boxes, scores, idxs, 0.5]

        def tv(a):
            return [torchvision.ops.batched_nms(a[0], a[1], a[2], a[3]), None]
    else:
        args = [boxes, scores, 0.5]

        def tv(a):
            return [TV.nms(a[0], a[1], a[2]), None]
    return args, tv, None, "keep[:num_kept] vs torchvision"


def case_iou(fn, eps):
    def case(dt):
        a, b = cast(dt, detections(1500), detections(1000))
        args = [a, b] + ([1e-7] if eps else [])
        return args, (lambda x: [fn(*x)]), None, ""
    return case


def case_iou_backward(fn, eps):
    """The IoU ops' backward against torchvision's autograd through its
    tensor-op implementation (a gradient for both box sets)."""
    def case(dt):
        a, b = cast(dt, detections(1500), detections(1000))
        args = [randn(a.shape[0], b.shape[0]).to(dt), a, b] + ([1e-7] if eps else [])

        def tv(x):
            a_, b_ = x[1].detach().requires_grad_(), x[2].detach().requires_grad_()
            return list(torch.autograd.grad(fn(a_, b_, *x[3:]), (a_, b_), x[0]))
        return args, tv, None, ""
    return case


def case_roi_align(dt):
    args = [randn(N_IMG, C_MAP, H_MAP, W_MAP).to(dt), rois(512, N_IMG, IMG_H, IMG_W).to(dt),
            SCALE, 7, 7, 2, True]
    return args, (lambda a: [TV.roi_align(*a)]), None, ""


def case_roi_align_backward(dt):
    args = [randn(512, C_MAP, 7, 7).to(dt), rois(512, N_IMG, IMG_H, IMG_W).to(dt), SCALE, 7, 7,
            N_IMG, C_MAP, H_MAP, W_MAP, 2, True]
    return args, (lambda a: [TV._roi_align_backward(*a)]), None, ""


def cpu_forward(name, args, index):
    run, outs = vo_prepare(None, name, args)
    run()
    return outs[index]


def case_roi_pool(dt):
    args = [randn(N_IMG, C_MAP, H_MAP, W_MAP).to(dt), rois(512, N_IMG, IMG_H, IMG_W).to(dt),
            SCALE, 7, 7]
    return args, (lambda a: list(TV.roi_pool(*a))), None, "argmax exact"


def case_roi_pool_backward(dt):
    x, r = randn(N_IMG, C_MAP, H_MAP, W_MAP).to(dt), rois(512, N_IMG, IMG_H, IMG_W).to(dt)
    argmax = cpu_forward("roi_pool", [x, r, SCALE, 7, 7], 1)
    args = [randn(512, C_MAP, 7, 7).to(dt), r, argmax, SCALE, 7, 7, N_IMG, C_MAP, H_MAP, W_MAP]
    return args, (lambda a: [TV._roi_pool_backward(*a)]), None, ""


PS_C = 10 * 7 * 7


def case_ps_roi_align(dt):
    args = [randn(N_IMG, PS_C, H_MAP, W_MAP).to(dt), rois(256, N_IMG, IMG_H, IMG_W).to(dt),
            SCALE, 7, 7, 2]
    return args, (lambda a: list(TV.ps_roi_align(*a))), None, "channel_mapping exact"


def case_ps_roi_align_backward(dt):
    x, r = randn(N_IMG, PS_C, H_MAP, W_MAP).to(dt), rois(256, N_IMG, IMG_H, IMG_W).to(dt)
    cm = cpu_forward("ps_roi_align", [x, r, SCALE, 7, 7, 2], 1)
    args = [randn(256, 10, 7, 7).to(dt), r, cm, SCALE, 7, 7, 2, N_IMG, PS_C, H_MAP, W_MAP]
    return args, (lambda a: [TV._ps_roi_align_backward(*a)]), None, ""


def case_ps_roi_pool(dt):
    args = [randn(N_IMG, PS_C, H_MAP, W_MAP).to(dt), rois(256, N_IMG, IMG_H, IMG_W).to(dt),
            SCALE, 7, 7]
    return args, (lambda a: list(TV.ps_roi_pool(*a))), None, "channel_mapping exact"


def case_ps_roi_pool_backward(dt):
    # RoIs inside 70% of the image: torchvision's backward clamps bins to H, W
    # where its forward clamps to H-1, W-1; away from that edge they agree.
    x = randn(N_IMG, PS_C, H_MAP, W_MAP).to(dt)
    r = rois(256, N_IMG, IMG_H, IMG_W, inside=0.7).to(dt)
    cm = cpu_forward("ps_roi_pool", [x, r, SCALE, 7, 7], 1)
    args = [randn(256, 10, 7, 7).to(dt), r, cm, SCALE, 7, 7, N_IMG, PS_C, H_MAP, W_MAP]
    return args, (lambda a: [TV._ps_roi_pool_backward(*a)]), None, "RoIs clear of the last row/col"


MS_IMG = (800, 1216)
MS_SCALES = [0.25, 0.125, 0.0625, 0.03125]


def ms_inputs(dt):
    feats = [randn(N_IMG, 256, MS_IMG[0] // s, MS_IMG[1] // s).to(dt) for s in (4, 8, 16, 32)]
    return feats, rois(512, N_IMG, MS_IMG[0], MS_IMG[1]).to(dt)


def tv_multi_scale(feats, r, grad=None):
    pooler = torchvision.ops.MultiScaleRoIAlign(["0", "1", "2", "3"], 7, 2)
    x = {str(i): f.detach().requires_grad_(grad is not None) for i, f in enumerate(feats)}
    boxes = [r[r[:, 0] == i, 1:] for i in range(N_IMG)]
    out = pooler(x, boxes, [MS_IMG] * N_IMG)
    if grad is None:
        return [out]
    return list(torch.autograd.grad(out, [x[str(i)] for i in range(4)], grad))


def case_multi_scale(dt):
    feats, r = ms_inputs(dt)
    args = [feats, r, MS_SCALES, 7, 7, 2, 224, 4, False]
    return args, (lambda a: tv_multi_scale(a[0], a[1])), None, "MultiScaleRoIAlign"


def case_multi_scale_backward(dt):
    feats, r = ms_inputs(dt)
    g = randn(512, 256, 7, 7).to(dt)
    args = [g, r, feats, MS_SCALES, 7, 7, 2, 224, 4, False]
    return args, (lambda a: tv_multi_scale(a[2], a[1], a[0])), 4, \
        "torchvision: autograd of MultiScaleRoIAlign, timed with its forward"


def dcn_inputs(dt, grad):
    n, cin, h, w, cout = 4, 64, 33, 33, 64
    t = [randn(n, cout, h, w)] if grad else []
    t += [randn(n, cin, h, w), randn(cout, cin, 3, 3) * 0.1, randn(n, 18, h, w) * 2,
          rand(n, 9, h, w), randn(cout)]
    return [x.to(dt) for x in t] + [1, 1, 1, 1, 1, 1, 1, 1, True]


def case_deform_conv2d(dt):
    return dcn_inputs(dt, False), (lambda a: [TV.deform_conv2d(*a)]), None, "with mask and bias"


def case_deform_conv2d_backward(dt):
    return dcn_inputs(dt, True), (lambda a: list(TV._deform_conv2d_backward(*a))), None, ""


CASES = {
    "nms": case_nms,
    "batched_nms": lambda dt: case_nms(dt, batched=True),
    "box_iou": case_iou(torchvision.ops.box_iou, False),
    "generalized_box_iou": case_iou(torchvision.ops.generalized_box_iou, False),
    "distance_box_iou": case_iou(getattr(torchvision.ops, "distance_box_iou", None), True),
    "complete_box_iou": case_iou(getattr(torchvision.ops, "complete_box_iou", None), True),
    "roi_align": case_roi_align,
    "roi_align_backward": case_roi_align_backward,
    "roi_pool": case_roi_pool,
    "roi_pool_backward": case_roi_pool_backward,
    "ps_roi_align": case_ps_roi_align,
    "ps_roi_align_backward": case_ps_roi_align_backward,
    "ps_roi_pool": case_ps_roi_pool,
    "ps_roi_pool_backward": case_ps_roi_pool_backward,
    "multi_scale_roi_align": case_multi_scale,
    "multi_scale_roi_align_backward": case_multi_scale_backward,
    "deform_conv2d": case_deform_conv2d,
    "deform_conv2d_backward": case_deform_conv2d_backward,
    "box_iou_backward": case_iou_backward(torchvision.ops.box_iou, False),
    "generalized_box_iou_backward": case_iou_backward(torchvision.ops.generalized_box_iou, False),
    "distance_box_iou_backward": case_iou_backward(getattr(torchvision.ops, "distance_box_iou", None),
                                                   True),
    "complete_box_iou_backward": case_iou_backward(getattr(torchvision.ops, "complete_box_iou", None),
                                                   True),
}

# ------------------------------------------------------------ comparing

# Relative to max(1, |reference|): visionops CUDA vs its CPU, and vs
# torchvision (whose CUDA build contracts multiply-adds; for float16 the
# reference is torchvision in float32 rounded to float16).
TOL_CPU = {torch.float32: 1e-4, torch.float16: 1e-2}
TOL_TV = {torch.float32: 1e-4, torch.float16: 1e-2}


def diff(a, b):
    """(max |a - b|, max |a - b| / max(1, |b|)) over elements where b is not
    NaN (torchvision gives NaN on degenerate ps_roi_align RoIs where visionops
    gives 0); integer tensors give the number of differing elements twice."""
    a, b = a.detach().cpu(), b.detach().cpu()
    if a.shape != b.shape:
        return math.inf, math.inf
    if not a.is_floating_point():
        n = float((a != b).sum())
        return n, n
    a, b = a.double(), b.double()
    keep = ~torch.isnan(b)
    if not keep.any():
        return 0.0, 0.0
    a, b = a[keep], b[keep]
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    d = torch.where(same, torch.zeros_like(a), (a - b).abs())
    if d.numel() == 0:
        return 0.0, 0.0
    return float(d.max()), float((d / b.abs().clamp(min=1)).max())


def fmt(x):
    if x is None:
        return "n/a"
    if x == 0:
        return "0"
    return f"{x:.2e}" if x < 1e-2 or x >= 1e4 else f"{x:.4g}"


def upcast(args):
    """float16 / bfloat16 tensors of args as float32 (exact)."""
    def f(t):
        return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t
    return [f(a) if isinstance(a, torch.Tensor)
            else [f(t) for t in a] if isinstance(a, list) and a and isinstance(a[0], torch.Tensor)
            else a for a in args]


def short(e, n=60):
    """The telling line of an exception's message, cut to n characters."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()] or [type(e).__name__]
    line = next((ln for ln in lines if "not implemented" in ln or "not supported" in ln), lines[0])
    return line[:n]


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def compare_op(name, dtype, rows):
    """Runs one op in one dtype; appends a table row; returns False on failure."""
    stream = torch.cuda.stream(STREAM) if STREAM is not None else contextlib.nullcontext()
    with stream:
        return _compare_op(name, dtype, rows)


def _compare_op(name, dtype, rows):
    args, tv, nout, note = CASES[name](dtype)
    problems = []
    # visionops on the CPU (the reference) and on the device
    run_cpu, cpu_out = vo_prepare(None, name, args, nout)
    run_cpu()
    dev_args = on(DEV, args)
    sync()
    try:
        run_dev, dev_out = vo_prepare(CTX, name, dev_args, nout)
        run_dev()
        sync()
        vo_ms = time_ms(run_dev)
    except VoError as e:
        why = "no CUDA kernel" if "not implemented" in str(e) else f"error: {e}"
        rows.append([name, dtype_name(dtype), "-", "-", "-", "-", "-", "FAIL: " + why])
        return False
    d_cpu = d_cpu_rel = 0.0
    for k, (o, c) in enumerate(zip(dev_out, cpu_out)):
        a, r = diff(o, c)
        d_cpu, d_cpu_rel = max(d_cpu, a), max(d_cpu_rel, r)
        if not o.is_floating_point() and a != 0:
            problems.append(f"output {k} differs from the CPU at {int(a)} places")
    if d_cpu_rel > TOL_CPU[dtype]:
        problems.append(f"vs CPU {d_cpu_rel:.2e} > {TOL_CPU[dtype]:.0e}")
    # torchvision on the device: the values of float16 inputs in float32 (as
    # under autocast; torchvision's float16 kernels accumulate in float16),
    # rounded to float16; the time of its native float16 call where it has one.
    d_tv, tv_ms = None, None
    if tv is not None:
        try:
            if dtype == torch.float32:
                want = tv(dev_args)
            else:
                want = [w.to(dtype) if w is not None and w.is_floating_point() else w
                        for w in tv(upcast(dev_args))]
            sync()
        except (RuntimeError, NotImplementedError, TypeError) as e:
            want = None
            note = (note + "; " if note else "") + "torchvision: " + short(e)
        try:
            tv_ms = time_ms(lambda: tv(dev_args))
        except (RuntimeError, NotImplementedError, TypeError) as e:
            if want is not None:
                note = (note + "; " if note else "") + "no native torchvision time: " + short(e)
        if want is not None:
            d_tv, d_tv_rel = 0.0, 0.0
            got = dev_out
            if name in ("nms", "batched_nms"):
                got = [dev_out[0][: int(dev_out[1])]]
            for k, w in enumerate(want):
                if w is None:
                    continue
                a, r = diff(got[k], w)
                d_tv, d_tv_rel = max(d_tv, a), max(d_tv_rel, r)
                if not w.is_floating_point() and a != 0:
                    problems.append(f"output {k} differs from torchvision at {int(a)} places")
            if d_tv_rel > TOL_TV[dtype]:
                problems.append(f"vs torchvision {d_tv_rel:.2e} > {TOL_TV[dtype]:.0e}")
    ratio = f"{vo_ms / tv_ms:.2f}" if tv_ms else "n/a"
    result = ("FAIL: " + "; ".join(problems)) if problems else "ok"
    if note:
        result += f" ({note})"
    rows.append([name, dtype_name(dtype), fmt(d_cpu), fmt(d_tv), f"{vo_ms:.3f}",
                 f"{tv_ms:.3f}" if tv_ms else "n/a", ratio, result])
    return not problems


def main():
    where = "CPU standing in for CUDA (--cpu-selftest)" if SELFTEST else torch.cuda.get_device_name(DEV)
    print(f"visionops {lib.vo_version().decode()} on {where}; "
          f"torch {torch.__version__}, torchvision {torchvision.__version__}\n")
    head = ["op", "dtype", "max abs vo_cuda-vo_cpu", "max abs vo_cuda-tv_cuda", "vo_cuda ms",
            "tv_cuda ms", "vo/tv", "result"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|", flush=True)
    rows = []  # each op's rows are printed as soon as they are known
    for name in OPS:
        new = []
        if name not in CASES:
            new.append([name, "-", "-", "-", "-", "-", "-",
                        "FAIL: no case in tests/python/gpu_compare.py"])
        for dtype in (torch.float32, torch.float16) if name in CASES else ():
            try:
                compare_op(name, dtype, new)
            except VoError as e:  # the CPU reference itself failed
                if not (dtype == torch.float16 and e.status == 2):  # float16 unsupported
                    new.append([name, dtype_name(dtype), "-", "-", "-", "-", "-", f"FAIL: {e}"])
            except Exception as e:  # noqa: BLE001 - one op's crash must not hide the others
                new.append([name, dtype_name(dtype), "-", "-", "-", "-", "-",
                            f"FAIL: {type(e).__name__}: {short(e, 120)}"])
        for r in new:
            print("| " + " | ".join(r) + " |", flush=True)
        rows += new
    failed = sum(r[-1].startswith("FAIL") for r in rows)
    print(f"\ntolerances (relative to max(1, |ref|)): vs CPU {TOL_CPU[torch.float32]:.0e} float32, "
          f"{TOL_CPU[torch.float16]:.0e} float16; vs torchvision {TOL_TV[torch.float32]:.0e} / "
          f"{TOL_TV[torch.float16]:.0e} (float16: torchvision run in float32 on the same values, "
          f"rounded to float16; its time is its native float16 call); times are means of {REPS} "
          "calls after 3 warm-ups")
    print(f"gpu_compare: {len(rows) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
