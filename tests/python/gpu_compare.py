"""visionops on CUDA against visionops on the CPU and torchvision's CUDA ops:
every registered op in float32 (and float16 where torchvision takes it) at
model-like sizes, printed as a Markdown table (max differences, times by CUDA
events, ratio). Exits 1 on a difference above tolerance or an op without a
CUDA kernel, 0 with "skipped" where torch.cuda is unavailable. An op that
torchvision does not have is compared with visionops' CPU only ("no
reference").

Usage: gpu_compare.py [path/to/libvisionops.so] [--cpu-selftest]
The library comes from the argument, $VISIONOPS_LIB, or build-gpu/ or build/
of this checkout. The inputs are the C sample registry's model-sized samples
(tests/samples), written by tests/vo_samples_export of the library's build
(or $VISIONOPS_SAMPLES_EXPORT); this script keeps only what torchvision
computes for each op. --cpu-selftest runs the same comparisons with the CPU
standing in for CUDA (checks this script where no GPU is visible).

Tensors reach the library as DLPack DLTensors built with ctypes from torch
tensors (data pointer, shape, strides, dtype, device), through the generic
vo_infer / vo_call entry points, as tests/python/parity_torchvision.py does
for NumPy arrays."""
import contextlib
import ctypes
import json
import math
import os
import subprocess
import sys
import tempfile
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


LIB_PATH = find_library()
lib = ctypes.CDLL(LIB_PATH)
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
#
# The inputs are the C sample registry's model-sized samples (tests/samples:
# the same builders test_backend_ops and the fuzz seeds use), written by its
# vo_samples_export program as index.json and raw tensor files, read by
# exported_samples.py (beside this script) as the pytest cases read them.
from exported_samples import DTYPES, load_arg  # noqa: E402


def find_exporter():
    if os.environ.get("VISIONOPS_SAMPLES_EXPORT"):
        return os.environ["VISIONOPS_SAMPLES_EXPORT"]
    path = os.path.join(os.path.dirname(os.path.abspath(LIB_PATH)), "tests", "vo_samples_export")
    if os.path.exists(path):
        return path
    sys.exit(f"gpu_compare: no {path} (build the tests) and VISIONOPS_SAMPLES_EXPORT is unset")


def load_samples():
    """(op name, torch dtype) -> (args as CPU tensors, num_outputs, note)."""
    with tempfile.TemporaryDirectory(prefix="vo-samples-") as folder:
        subprocess.run([find_exporter(), folder, "model", "float32", "float16"], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(folder, "index.json")) as f:
            index = json.load(f)
        return {(e["op"], DTYPES[e["dtype"]]):
                ([load_arg(folder, a) for a in e["args"]], e["num_outputs"], e["note"])
                for e in index}


# ------------------------------------------------------------ torchvision
#
# What torchvision computes for each op, from the op's arguments on the
# device: the outputs to compare with visionops' in order (None to skip one),
# or None where torchvision has no such op. An op not in TV_CALLS gets
# tv_default's: torchvision.ops.<name> on the same arguments, and for
# <name>_backward autograd of torchvision.ops.<name>.

TV = torch.ops.torchvision


def tv_iou(fn):
    return lambda a: [fn(*a)]


def tv_iou_backward(fn):
    """The IoU ops' backward: torchvision's autograd through its tensor-op
    implementation (a gradient for both box sets)."""
    def tv(x):
        a_, b_ = x[1].detach().requires_grad_(), x[2].detach().requires_grad_()
        return list(torch.autograd.grad(fn(a_, b_, *x[3:]), (a_, b_), x[0]))
    return tv


def tv_multi_scale(feats, r, scales, pooled, sampling_ratio, grad=None):
    """torchvision's MultiScaleRoIAlign on the same pyramid: the image size
    is the finest level's size over its scale."""
    n_img = feats[0].shape[0]
    img = (round(feats[0].shape[-2] / scales[0]), round(feats[0].shape[-1] / scales[0]))
    names = [str(i) for i in range(len(feats))]
    pooler = torchvision.ops.MultiScaleRoIAlign(names, pooled, sampling_ratio)
    x = {n: f.detach().requires_grad_(grad is not None) for n, f in zip(names, feats)}
    boxes = [r[r[:, 0] == i, 1:] for i in range(n_img)]
    out = pooler(x, boxes, [img] * n_img)
    if grad is None:
        return [out]
    return list(torch.autograd.grad(out, [x[n] for n in names], grad))


def _op(name):
    return getattr(torchvision.ops, name, None)


BOX_FORMATS = ("xyxy", "xywh", "cxcywh", "cxcywhr", "xywhr", "xyxyxyxy")


def tv_box_convert(backward):
    """torchvision.ops.box_convert, whose formats are names (the op's are
    vo_box_format numbers), or for box_convert_backward its autograd; a
    NotImplementedError where the installed torchvision lacks a format."""
    def convert(boxes, in_fmt, out_fmt):
        try:
            return torchvision.ops.box_convert(boxes, BOX_FORMATS[in_fmt], BOX_FORMATS[out_fmt])
        except ValueError as e:
            raise NotImplementedError(str(e)) from e

    def tv(x):
        if not backward:
            return [convert(*x)]
        boxes = x[1].detach().requires_grad_()
        return list(torch.autograd.grad(convert(boxes, x[2], x[3]), (boxes,), x[0]))
    return tv


def tv_rotated(aligned):
    """torchvision::box_iou_rotated (0.29 and newer: box_iou(fmt="cxcywhr"),
    float32 only on CUDA) where the call means the same: float32 boxes, IoU,
    degrees counter-clockwise (TypeError otherwise, reported as a note)."""
    def tv(a):
        if not hasattr(TV, "box_iou_rotated"):
            raise TypeError("this torchvision has no box_iou_rotated (0.29 and newer have)")
        if a[0].dtype != torch.float32 or a[1].dtype != torch.float32 or any(a[2:5]):
            raise TypeError("torchvision's box_iou_rotated: float32 IoU in degrees CCW only")
        iou = TV.box_iou_rotated(a[0], a[1])
        return [iou.diagonal() if aligned else iou]
    return tv


TV_CALLS = {
    "nms": lambda a: [TV.nms(a[0], a[1], a[2]), None],
    "batched_nms": lambda a: [torchvision.ops.batched_nms(a[0], a[1], a[2], a[3]), None],
    "box_iou": tv_iou(_op("box_iou")),
    "generalized_box_iou": tv_iou(_op("generalized_box_iou")),
    "distance_box_iou": tv_iou(_op("distance_box_iou")),
    "complete_box_iou": tv_iou(_op("complete_box_iou")),
    "roi_align": lambda a: [TV.roi_align(*a)],
    "roi_align_backward": lambda a: [TV._roi_align_backward(*a)],
    "roi_pool": lambda a: list(TV.roi_pool(*a)),
    "roi_pool_backward": lambda a: [TV._roi_pool_backward(*a)],
    "ps_roi_align": lambda a: list(TV.ps_roi_align(*a)),
    "ps_roi_align_backward": lambda a: [TV._ps_roi_align_backward(*a)],
    "ps_roi_pool": lambda a: list(TV.ps_roi_pool(*a)),
    "ps_roi_pool_backward": lambda a: [TV._ps_roi_pool_backward(*a)],
    "multi_scale_roi_align": lambda a: tv_multi_scale(a[0], a[1], a[2], a[3], a[5]),
    "multi_scale_roi_align_backward":
        lambda a: tv_multi_scale(a[2], a[1], a[3], a[4], a[6], grad=a[0]),
    "deform_conv2d": lambda a: [TV.deform_conv2d(*a)],
    "deform_conv2d_backward": lambda a: list(TV._deform_conv2d_backward(*a)),
    "box_iou_backward": tv_iou_backward(_op("box_iou")),
    "generalized_box_iou_backward": tv_iou_backward(_op("generalized_box_iou")),
    "distance_box_iou_backward": tv_iou_backward(_op("distance_box_iou")),
    "complete_box_iou_backward": tv_iou_backward(_op("complete_box_iou")),
    "box_convert": tv_box_convert(False),
    "box_convert_backward": tv_box_convert(True),
    "box_iou_rotated": tv_rotated(False),
    "box_iou_rotated_aligned": tv_rotated(True),
}


def tv_default(name):
    """torchvision.ops.<name> called with the op's arguments; for a backward
    (grad, forward's arguments...) the gradients of torchvision.ops.<forward>
    with respect to its floating-point tensor arguments, in order; None where
    torchvision has no such function."""
    backward = name.endswith("_backward")
    fn = _op(name[: -len("_backward")] if backward else name)
    if fn is None:
        return None
    if not backward:
        def tv(a):
            out = fn(*a)
            return list(out) if isinstance(out, (tuple, list)) else [out]
        return tv

    def tv_backward(x):
        args = [a.detach().requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point()
                else a for a in x[1:]]
        wrt = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
        return list(torch.autograd.grad(fn(*args), wrt, x[0]))
    return tv_backward


def tv_call(name):
    return TV_CALLS[name] if name in TV_CALLS else tv_default(name)


NOTES = {"multi_scale_roi_align_backward":
         "torchvision: autograd of MultiScaleRoIAlign, timed with its forward"}

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
    args, nout, note = SAMPLES[(name, dtype)]
    tv = tv_call(name)
    note = "; ".join(n for n in (note, NOTES.get(name, ""), "" if tv else "no reference") if n)
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


SAMPLES = {}


def main():
    SAMPLES.update(load_samples())
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
        for dtype in (torch.float32, torch.float16):
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
