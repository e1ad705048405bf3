"""torchvision.ops-compatible functions and nn.Modules: same names,
signatures, defaults and return types. On PyTorch tensors they call the
typed torch implementations in _script.py (which call the registered
operators, torch.ops.visionops.*, so autograd and Meta tensors work; for
the ops of _SCHEMA_OPS both the function and its twin are made from the
op's schema); on
NumPy arrays (or any other DLPack / buffer object) they call the C library
directly and return NumPy arrays, and on pyopencl arrays they run on the
arrays' OpenCL queue and return pyopencl arrays there (_opencl.py). Under torch.fx.symbolic_trace each
function is a leaf (one call_function node), as torchvision's are; under
torch.jit.script each is its typed torch implementation, so scripts that
call them compile, as torchvision's do.

Mixed precision (what torch.autocast produces): boxes / rois and scores may
have any floating dtype beside the features (float32 rois beside bfloat16
features, say); each is read at its own precision and the result takes the
features' dtype. The IoU ops accept two box sets of different dtypes and
promote as torchvision (float64 if either is, else float32)."""
import functools
import itertools
import math
import sys

from . import _checks, _core, _opencl
from ._C import VisionOpsError, VisionOpsTypeError, VisionOpsValueError

# The ops whose torchvision function has the op's own schema (argument
# names, order and defaults as in src/ops/ops.def) and no behaviour beyond
# the op: their public functions are generated from the schema (see
# _schema_function below), and so are their typed twins (_script.schema_twin).
# Adding such an op to the Python API is one entry here: its docstring.
_SCHEMA_OPS = {}

# Ops whose public function takes the op's schema arguments first, as its
# torchvision function does, and Python-only arguments after them (box_area's
# fmt, torchvision 0.29's): test_torchvision_parity runs these on the op's
# samples too.
_SCHEMA_PREFIX_OPS = ("box_area",)

__all__ = [
    "nms", "batched_nms", "nms_rotated", "batched_nms_rotated", "batched_nms_padded", "onnx_nms",
    "soft_nms", "batched_soft_nms",
    "box_iou", "generalized_box_iou",
    "distance_box_iou", "complete_box_iou", "box_area", "box_convert", "box_iou_rotated",
    *_SCHEMA_OPS, "roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool", "deform_conv2d",
    "multi_scale_roi_align", "roi_align_rotated", "deform_attn", "matrix_nms", "MultiScaleRoIAlign",
    "RoIAlign", "RoIAlignRotated", "RoIPool", "PSRoIAlign", "PSRoIPool", "DeformConv2d",
    "VisionOpsError", "VisionOpsValueError", "VisionOpsTypeError",
]

try:
    import torch as _torch
    import torch.nn as _nn
except ImportError:  # NumPy only: no torch path, no modules
    _torch = _nn = _script = None
else:
    from . import _script

# Types that are tensors as they are (_tensor passes them without asking
# further), and argument types that are never fx Proxies (_find_proxy).
_PLAIN_ARRAYS = {sys.modules["numpy"].ndarray} if "numpy" in sys.modules else set()
if _torch is not None:
    _PLAIN_ARRAYS |= {_torch.Tensor, _nn.Parameter}
_NOT_PROXIES = {int, float, bool, str, type(None)} | _PLAIN_ARRAYS


def _is_torch(x):
    if _torch is None:
        return False
    if isinstance(x, (list, tuple)):
        return bool(x) and isinstance(x[0], _torch.Tensor)
    return isinstance(x, _torch.Tensor)


def _call(name, *args, omit=0):
    """The op on NumPy (or other DLPack / buffer) inputs (bit k of omit: output
    k left out, None)."""
    outs = _core.run_numpy(name, list(args), omit=omit)
    schema = _core.SCHEMAS[name]
    return outs if schema.returns_list else (outs[0] if len(outs) == 1 else tuple(outs))


def _into(name, out, *args, omit=0):
    """The op with its first output written into the caller's `out` (out=),
    which it returns; other outputs are allocated, or left out with bit k of
    omit for output k (roi_pool's argmax, ...). On torch tensors (inputs or
    out) it records no gradient (torch's rule for out=; see
    visionops.torch.run_into)."""
    if _is_torch(out) or any(_is_torch(a) for a in args):
        from . import torch as _vtorch

        _vtorch.run_into(name, args, (out,), omit)
    else:
        _core.run_numpy(name, list(args), outs=(out,), omit=omit)
    return out


def _describe(x):
    """A short description of a Python object for error messages."""
    if x is None:
        return "None"
    if isinstance(x, (list, tuple)):
        kind = type(x).__name__
        if not x:
            return "an empty %s" % kind
        return "a %s of %s" % (kind, type(x[0]).__name__)
    return "a %s" % type(x).__name__


def _is_tensor(x):
    """A DLPack array (torch, NumPy, ...) or a buffer-protocol object."""
    if hasattr(x, "__dlpack__") or hasattr(x, "__array_interface__"):
        return hasattr(x, "shape")
    # Containers and scalars are never tensors; asking memoryview() about
    # them would also stop torch.compile's tracing (it cannot trace that call).
    if isinstance(x, (str, bytes, bytearray, list, tuple, dict, int, float, bool, type(None))):
        return False
    if _opencl.is_array(x):
        return True
    try:
        memoryview(x)
    except TypeError:
        return False
    return True


def _tensor(x, op, name):
    """x itself if it is a tensor (torch, NumPy or another DLPack array; a
    buffer-protocol object as a memoryview, which has a shape); otherwise a
    TypeError naming the op and the argument."""
    if type(x) in _PLAIN_ARRAYS:
        return x
    if not _is_tensor(x):
        raise VisionOpsTypeError("%s: %s must be a tensor (a torch.Tensor or a NumPy array), got %s"
                                 % (op, name, _describe(x)))
    return x if hasattr(x, "shape") else memoryview(x)


def _count(num_kept):
    """nms's num_kept output as a Python int (a pyopencl array's is read
    back from the device: the kept indices' length is data-dependent)."""
    if type(num_kept) in _PLAIN_ARRAYS:
        return int(num_kept)
    return int(num_kept.get() if _opencl.is_array(num_kept) else num_kept)


def _numel(x):
    n = 1
    for d in x.shape:
        n *= int(d)
    return n


def _pair(v, what):
    return _checks.pair(what, v)


def _fx_leaf(fn):
    """Makes fn one node under torch.fx.symbolic_trace whichever way it is
    reached (visionops.f, visionops.ops.f, `from visionops import f`): when
    an argument is an fx Proxy, the call is recorded instead of run. The
    names are also registered with torch.fx.wrap at module level below."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        fx = sys.modules.get("torch.fx")
        if fx is not None:
            proxy = _find_proxy(fx.Proxy, args, kwargs)
            if proxy is not None:
                return proxy.tracer.create_proxy("call_function", wrapper, args, kwargs)
        return fn(*args, **kwargs)

    return wrapper


def _find_proxy(proxy_type, args, kwargs):
    """The first fx Proxy among the arguments (list, tuple and dict items
    included), or None; asked on every call, so the common argument types
    are passed over by a set lookup first."""
    for a in itertools.chain(args, kwargs.values()) if kwargs else args:
        if type(a) in _NOT_PROXIES:
            continue
        if isinstance(a, proxy_type):
            return a
        if isinstance(a, (list, tuple, dict)):
            for b in a.values() if isinstance(a, dict) else a:
                if isinstance(b, proxy_type):
                    return b
    return None


def _scriptable(public, typed):
    """torch.jit.script(public), and any script that calls `public`, compile
    `typed` instead (its torch-only, typed twin in _script.py), lazily on
    first use. This is torch.jit's own redirection for the wrappers that
    torch.jit._script_if_tracing makes (torch.jit.script follows
    __original_fn; torch.compile traces it too), so it is the same in torch
    1.13 and 2.x."""
    setattr(public, "__script_if_tracing_wrapper", True)
    setattr(public, "__original_fn", typed)


# ---------------------------------------------------------------- box ops


@_fx_leaf
def nms(boxes, scores, iou_threshold):
    """Indices (int64) of the boxes kept by greedy NMS, by decreasing score
    (ties: lower index first). On torch tensors this is the op
    torch.ops.visionops.nms_kept, whose output size is data-dependent, so
    torch.export and torch.compile capture it (N may be a dynamic Dim);
    torch.ops.visionops.nms is the fixed-size form (keep [N], num_kept)
    without a host sync, for CUDA graphs."""
    boxes = _tensor(boxes, "nms", "boxes")
    scores = _tensor(scores, "nms", "scores")
    if _is_torch(boxes) or _is_torch(scores):
        return _script.nms(boxes, scores, float(iou_threshold))
    keep, num_kept = _call("nms", boxes, scores, float(iou_threshold))
    return keep[:_count(num_kept)]


@_fx_leaf
def batched_nms(boxes, scores, idxs, iou_threshold):
    """NMS within each category of idxs; kept indices by decreasing score.
    idxs may be of any integer dtype, as in torchvision (the library reads
    int64; others are widened, an N-element copy). Boxes without elements
    (of any shape, e.g. [0] or [0, 4]) give an empty int64 result whatever
    the other arguments are, as in torchvision. On torch tensors, as nms:
    torch.ops.visionops.batched_nms_kept (data-dependent size; a box count
    only known at run time, e.g. under torch.export, is not guarded on) or
    the fixed-size torch.ops.visionops.batched_nms."""
    boxes = _tensor(boxes, "batched_nms", "boxes")
    if _is_torch(boxes) and _script.has_no_elements(boxes):
        return _script.batched_nms(boxes, scores, idxs, iou_threshold)
    if not _is_torch(boxes) and _numel(boxes) == 0:
        import numpy as np

        if _opencl.is_array(boxes):
            return _opencl.module().empty(boxes.queue, (0,), np.int64)
        return np.empty((0,), dtype=np.int64)
    scores = _tensor(scores, "batched_nms", "scores")
    idxs = _tensor(idxs, "batched_nms", "idxs")
    if _is_torch(boxes) or _is_torch(scores) or _is_torch(idxs):
        return _script.batched_nms(boxes, scores, idxs, float(iou_threshold))
    keep, num_kept = _call("batched_nms", boxes, scores, _int64(idxs), float(iou_threshold))
    return keep[:_count(num_kept)]


@_fx_leaf
def nms_rotated(boxes, scores, iou_threshold, clockwise=False, radians=False):
    """Indices (int64) of the rotated boxes kept by greedy NMS, by decreasing
    score (ties: lower index first). boxes [N, 5] are (cx, cy, w, h, angle),
    angle in degrees counter-clockwise on screen (torchvision's cxcywhr;
    clockwise negates it, radians takes it in radians); a box is suppressed
    by a kept one when their rotated IoU (box_iou_rotated's) is >=
    iou_threshold, torchvision's rule for rotated boxes (nms's is >).
    Coordinates and angles must be finite, w and h >= 0. On torch tensors
    this is torch.ops.visionops.nms_rotated_kept (data-dependent size);
    torch.ops.visionops.nms_rotated is the fixed-size form (keep [N],
    num_kept) without a host sync."""
    boxes = _tensor(boxes, "nms_rotated", "boxes")
    scores = _tensor(scores, "nms_rotated", "scores")
    if _is_torch(boxes) or _is_torch(scores):
        return _script.nms_rotated(boxes, scores, float(iou_threshold), bool(clockwise),
                                   bool(radians))
    keep, num_kept = _call("nms_rotated", boxes, scores, float(iou_threshold), bool(clockwise),
                           bool(radians))
    return keep[:_count(num_kept)]


@_fx_leaf
def batched_nms_rotated(boxes, scores, idxs, iou_threshold, clockwise=False, radians=False):
    """nms_rotated within each category of idxs (only boxes of the same
    category suppress each other: no coordinate offset, so any coordinates
    and category values work); kept indices by decreasing score. idxs may be
    of any integer dtype (the library reads int64; others are widened). On
    torch tensors: torch.ops.visionops.batched_nms_rotated_kept, or the
    fixed-size torch.ops.visionops.batched_nms_rotated."""
    boxes = _tensor(boxes, "batched_nms_rotated", "boxes")
    scores = _tensor(scores, "batched_nms_rotated", "scores")
    idxs = _tensor(idxs, "batched_nms_rotated", "idxs")
    if _is_torch(boxes) or _is_torch(scores) or _is_torch(idxs):
        return _script.batched_nms_rotated(boxes, scores, idxs, float(iou_threshold),
                                           bool(clockwise), bool(radians))
    keep, num_kept = _call("batched_nms_rotated", boxes, scores, _int64(idxs),
                           float(iou_threshold), bool(clockwise), bool(radians))
    return keep[:_count(num_kept)]


def _optional_float(x):
    return None if x is None else float(x)


@_fx_leaf
def batched_nms_padded(boxes, scores, iou_threshold, score_threshold=None, max_per_class=-1,
                       max_per_image=100, box_format="xyxy", class_agnostic=False,
                       pre_nms_top_k=-1):
    """NMS per image and class with fixed-shape outputs (TensorRT
    EfficientNMS's): boxes [B, M, 4] shared by the classes, or [B, M, C, 4]
    (one box per class); scores [B, C, M] (ONNX's layout). Per (image,
    class): the candidates with score > score_threshold (None: every box),
    by score (ties: lower box index), at most pre_nms_top_k of them (-1:
    all), greedy NMS as torchvision's nms (suppressed when IoU >
    iou_threshold) keeping at most max_per_class (-1: no cap); then per
    image the max_per_image best across classes by score (ties: lower class,
    then earlier selection). box_format: "xyxy", "xywh" or "cxcywh"
    (converted as box_convert does). class_agnostic: boxes of any class
    suppress each other. Returns (keep, labels, scores, num): keep and
    labels int64 [B, max_per_image] (box index and class, -1 past num[b]),
    scores [B, max_per_image] (scores' dtype, 0 past num[b]), num int64
    [B]. No output size depends on the data, so nothing waits for the
    device (gather the boxes with keep). Equal to a per-image loop of
    batched_nms (on the boxes converted to xyxy, with the class as idxs)
    followed by a top-k; NumPy, torch and pyopencl arrays."""
    fmt = _checks.nms_padded_box_format(box_format) if isinstance(box_format, str) \
        else int(box_format)
    boxes = _tensor(boxes, "batched_nms_padded", "boxes")
    scores = _tensor(scores, "batched_nms_padded", "scores")
    args = (float(iou_threshold), _optional_float(score_threshold), int(max_per_class),
            int(max_per_image))
    rest = (bool(class_agnostic), int(pre_nms_top_k))
    if _is_torch(boxes) or _is_torch(scores):
        if not isinstance(box_format, str):
            box_format = ("xyxy", "xywh", "cxcywh")[fmt] if 0 <= fmt <= 2 else str(box_format)
        return _script.batched_nms_padded(boxes, scores, *args, box_format, *rest)
    return _call("batched_nms_padded", boxes, scores, *args, fmt, *rest)


@_fx_leaf
def onnx_nms(boxes, scores, max_output_boxes_per_class=0, iou_threshold=0.0,
             score_threshold=None, center_point_box=0, exact_shape=False):
    """ONNX NonMaxSuppression (opset 10 / 11) exactly: boxes [B, M, 4] as
    [y1, x1, y2, x2] with any diagonal pair of corners (center_point_box 0)
    or [x_center, y_center, width, height] (1); scores [B, C, M]. Per
    (image, class): the candidates with score > score_threshold (None: every
    box) by score (ties: lower index), each selected unless its IoU with a
    box already selected for its (image, class) is > iou_threshold (in [0,
    1]; the IoU of onnxruntime, 0 for an empty intersection or a box without
    area), at most max_output_boxes_per_class (<= 0: none, ONNX's default).
    Thresholds are float32, as ONNX's inputs are. Returns (selected,
    num_selected): selected int64 [B * C * min(max_output_boxes_per_class,
    M), 3], whose first num_selected rows are ONNX's selected_indices
    (batch, class, box) in its order, the rest -1, and num_selected, an
    int64 0-d tensor: no host sync. exact_shape=True slices selected to
    ONNX's [num_selected, 3] (that reads num_selected back). On torch
    tensors the op exports to ONNX as NonMaxSuppression."""
    boxes = _tensor(boxes, "onnx_nms", "boxes")
    scores = _tensor(scores, "onnx_nms", "scores")
    args = (int(max_output_boxes_per_class), float(iou_threshold),
            _optional_float(score_threshold), int(center_point_box))
    if _is_torch(boxes) or _is_torch(scores):
        return _script.onnx_nms(boxes, scores, *args, bool(exact_shape))
    selected, num_selected = _call("onnx_nms", boxes, scores, *args)
    if exact_shape:
        selected = selected[:_count(num_selected)]
    return selected, num_selected


def _soft_nms_method(op, method):
    """method as the op's int (_checks.soft_nms_method), any Python or NumPy
    integer accepted; a bool or another type is a TypeError."""
    if isinstance(method, str):
        return _checks.soft_nms_method(op, method)
    if isinstance(method, bool) or not hasattr(method, "__index__"):
        raise VisionOpsTypeError("%s: method must be a str or an int, got %s"
                                 % (op, _describe(method)))
    return _checks.soft_nms_method(op, int(method))


def _soft_nms_run(op, tensors, scalars, padded):
    if any(_is_torch(t) for t in tensors):
        dets, keep, num_kept = getattr(_torch.ops.visionops, op)(*tensors, *scalars)
    else:
        dets, keep, num_kept = _call(op, *tensors, *scalars)
    if padded:
        return dets, keep, num_kept
    k = _count(num_kept)  # the one host sync
    return dets[:k], keep[:k]


@_fx_leaf
def soft_nms(boxes, scores, iou_threshold=0.3, sigma=0.5, min_score=1e-3, method="linear",
             offset=0, padded=False):
    """Soft-NMS (Bodla et al. 2017) as mmcv.ops.soft_nms: returns (dets [K, 5]
    rows (x1, y1, x2, y2, score at selection) in the boxes' dtype, keep [K]
    int64 original indices), in selection order. Each round selects the
    remaining box of highest current score (ties: lowest index; NaN counts
    as highest) and multiplies every other remaining score by a weight of
    its IoU with it, areas and extents with `offset` (mmcv's 0 or 1):
    'linear' 1 - IoU where IoU >= iou_threshold, 'gaussian' exp(-IoU^2 /
    sigma) everywhere, 'hard' (mmcv's 'naive') 0 where IoU >= iou_threshold
    (also 1, 2, 0); a NaN IoU (boxes without a union) weighs 1. Boxes whose
    score falls below min_score are dropped; as in mmcv the first selected
    box is never tested. boxes [N, 4] xyxy, scores [N] (any float dtype),
    torch tensors (any device with a kernel) or NumPy arrays; half boxes
    compute in float32. padded=True returns the op's fixed-size outputs
    (dets [N, 5], keep [N] with zero / -1 rows past num_kept, num_kept),
    without the host sync that slicing them takes."""
    op = "soft_nms"
    boxes = _tensor(boxes, op, "boxes")
    scores = _tensor(scores, op, "scores")
    m = _soft_nms_method(op, method)
    scalars = (float(iou_threshold), float(sigma), float(min_score), m, float(offset))
    if not padded and (_is_torch(boxes) or _is_torch(scores)):
        return _script.soft_nms(boxes, scores, *scalars)
    return _soft_nms_run(op, (boxes, scores), scalars, padded)


@_fx_leaf
def batched_soft_nms(boxes, scores, idxs, iou_threshold=0.3, sigma=0.5, min_score=1e-3,
                     method="linear", offset=0, padded=False):
    """soft_nms within each category of idxs (any integer dtype), each
    category on its own (its first box is exempt from min_score), merged by
    score at selection, descending (NaN first; ties: lower index first):
    mmcv's batched_nms with soft_nms, without its coordinate offset. Returns
    (dets [K, 5], keep [K]), or with padded=True (dets [N, 5], keep [N],
    num_kept)."""
    op = "batched_soft_nms"
    boxes = _tensor(boxes, op, "boxes")
    scores = _tensor(scores, op, "scores")
    idxs = _tensor(idxs, op, "idxs")
    m = _soft_nms_method(op, method)
    scalars = (float(iou_threshold), float(sigma), float(min_score), m, float(offset))
    tensors = (boxes, scores, idxs)
    if any(_is_torch(t) for t in tensors):
        if not padded:
            return _script.batched_soft_nms(boxes, scores, idxs, *scalars)
        tensors = (boxes, scores, _script._int64(idxs))
    else:
        tensors = (boxes, scores, _int64(idxs))
    return _soft_nms_run(op, tensors, scalars, padded)


def _rows(x, k):
    """[..., K] NumPy (or other DLPack / buffer) or pyopencl boxes as their
    [M, K] rows (a view where the layout allows)."""
    if len(x.shape) == 2:
        return x
    return (x if _opencl.is_array(x) else _numpy(x)).reshape(-1, k)


def _numpy(x):
    """A NumPy array itself; another DLPack or buffer-protocol array as one."""
    import numpy as np

    if isinstance(x, np.ndarray):
        return x
    return np.from_dlpack(x) if hasattr(x, "__dlpack__") else np.asarray(x)


@_fx_leaf
def box_convert(boxes, in_fmt, out_fmt):
    """[..., K_in] boxes in format in_fmt as [..., K_out] boxes in out_fmt,
    as torchvision.ops.box_convert (0.29): the formats "xyxy", "xywh",
    "cxcywh" (K = 4) and the rotated "cxcywhr", "xywhr" (K = 5; r in
    degrees, counter-clockwise on screen) and "xyxyxyxy" (K = 8, the
    corners); any pair among the axis-aligned or among the rotated formats
    (NotImplementedError for one of each, ValueError for an unknown format);
    the same format gives a copy. torchvision's arithmetic operation by
    operation (float32 / float64 bit for bit with it, but for cos, sin and
    atan2, which torch computes with its own vectorised functions; the half
    types round each operation, as torch's ops do), its dtypes (integer
    boxes keep their dtype, wrapping as torch's integers, but give float32
    with cxcywh on either side; the rotated pairs round them back) and, on
    torch tensors, autograd through the op's backward. NumPy, other DLPack
    and pyopencl arrays run the C library (on the arrays' OpenCL queue)."""
    i, o = _checks.box_convert_formats(in_fmt, out_fmt)
    boxes = _tensor(boxes, "box_convert", "boxes")
    if _is_torch(boxes):
        return _script.box_convert(boxes, in_fmt, out_fmt)
    shape = tuple(int(d) for d in boxes.shape)
    _checks.check_box_coordinates("box_convert", in_fmt, list(shape))
    out = _call("box_convert", _rows(boxes, shape[-1]), i, o)
    return out if len(shape) == 2 else out.reshape(shape[:-1] + (_checks.box_format_size(o),))


@_fx_leaf
def box_area(boxes, fmt="xyxy"):
    """Areas [...] of [..., 4] boxes in format fmt ("xyxy": (x2 - x1) * (y2 -
    y1); "xywh", "cxcywh": w * h), as torchvision.ops.box_area (0.29; 0.14's
    is fmt="xyxy" on [N, 4]), with torchvision's upcasting: float64 boxes give
    float64, the other float boxes float32; int64 boxes give int64, the other
    integer boxes int32 (wrapping on overflow, as torch's integer
    arithmetic). Differentiable with respect to float boxes."""
    fmt = _checks.box_area_format(fmt)
    boxes = _tensor(boxes, "box_area", "boxes")
    if _is_torch(boxes):
        return _script.box_area(boxes, fmt)
    shape = tuple(int(d) for d in boxes.shape)
    _checks.check_box_area_shape(list(shape))
    rows = _rows(boxes, 4)
    if fmt != "xyxy":  # the area of (0, 0, w, h): w * h exactly, as _script.box_area
        rows = _opencl.wh_rows(rows) if _opencl.is_array(rows) else _wh_rows(rows)
    out = _call("box_area", rows)
    return out if len(shape) == 2 else out.reshape(shape[:-1])


def _wh_rows(rows):
    """[M, 4] NumPy rows (a, b, w, h) as (0, 0, w, h)."""
    import numpy as np

    rows = _numpy(rows)
    out = np.zeros_like(rows)
    out[:, 2:] = rows[:, 2:]
    return out


def _int64(t):
    """NumPy integer arrays of another width widened to int64; anything else
    as is (the library reports a wrong dtype)."""
    kind = getattr(getattr(t, "dtype", None), "kind", None)
    if kind in ("i", "u") and t.dtype.itemsize != 8 or kind == "u":
        return t.astype("int64")  # pyopencl arrays too (on the device)
    return t


def _pairwise(op, boxes1, boxes2, *extra, width=4):
    """One of the pairwise IoU ops over NumPy [..., N, width] x [..., M,
    width] -> [..., N, M] (torchvision 0.29's batched form; leading
    dimensions broadcast): one call of the 2-D C op per slice, stacked. On
    torch tensors, _script._pairwise."""
    import numpy as np

    if len(boxes1.shape) == 2 and len(boxes2.shape) == 2:
        return _call(op, boxes1, boxes2, *extra)
    shape1, shape2 = [int(d) for d in boxes1.shape], [int(d) for d in boxes2.shape]
    _checks.check_box_batch(op, "boxes1", shape1, width)
    _checks.check_box_batch(op, "boxes2", shape2, width)
    lead = tuple(_checks.broadcast_leading(op, shape1, shape2))
    n, m = shape1[-2], shape2[-2]
    if _opencl.is_array(boxes1) or _opencl.is_array(boxes2):
        return _opencl.pairwise(op, boxes1, boxes2, lead, n, m,
                                lambda a, b: _call(op, a, b, *extra), width)
    b1 = np.broadcast_to(boxes1, lead + (n, width)).reshape(-1, n, width)
    b2 = np.broadcast_to(boxes2, lead + (m, width)).reshape(-1, m, width)
    if b1.shape[0] == 0:
        # No slice to call: the C op still checks the dtypes on one empty pair.
        out = _call(op, b1.reshape(0, width), b2.reshape(0, width), *extra)
        return out.reshape(lead + (n, m))
    outs = [_call(op, b1[i], b2[i], *extra) for i in range(b1.shape[0])]
    return np.stack(outs, axis=0).reshape(lead + (n, m))


def _box_pair(op, boxes1, boxes2):
    return _tensor(boxes1, op, "boxes1"), _tensor(boxes2, op, "boxes2")


@_fx_leaf
def box_iou(boxes1, boxes2, fmt="xyxy", *, out=None):
    """Pairwise IoU of [..., N, K] and [..., M, K] boxes: [..., N, M].
    `fmt` is the format of both box sets, as in torchvision 0.29:
    axis-aligned "xyxy", "xywh" or "cxcywh" (K = 4), or rotated "cxcywhr",
    "xywhr" (K = 5: the angle in degrees, counter-clockwise on screen) or
    "xyxyxyxy" (K = 8), whose IoU is box_iou_rotated's. Float64 boxes give
    float64 (torchvision 0.29 gives float32 for rotated float64 boxes), all
    others (float32, float16, bfloat16, integers for the axis-aligned
    formats) float32, as torchvision's upcasting."""
    fmt = _checks.box_format("box_iou", str(fmt))
    boxes1, boxes2 = _box_pair("box_iou", boxes1, boxes2)
    if out is not None:
        return _box_iou_into(boxes1, boxes2, fmt, out)
    if _is_torch(boxes1) or _is_torch(boxes2):
        return _script.box_iou(boxes1, boxes2, fmt)
    width = _checks.box_width(fmt)
    if width != 4:
        _checks.check_box_batch("box_iou", "boxes1", [int(d) for d in boxes1.shape], width)
        _checks.check_box_batch("box_iou", "boxes2", [int(d) for d in boxes2.shape], width)
        if fmt != "cxcywhr":
            boxes1 = box_convert(boxes1, fmt, "cxcywhr")
            boxes2 = box_convert(boxes2, fmt, "cxcywhr")
        return _pairwise("box_iou_rotated", boxes1, boxes2, False, False, False, width=5)
    if fmt != "xyxy":
        _checks.check_box_batch("box_iou", "boxes1", [int(d) for d in boxes1.shape])
        _checks.check_box_batch("box_iou", "boxes2", [int(d) for d in boxes2.shape])
        boxes1, boxes2 = box_convert(boxes1, fmt, "xyxy"), box_convert(boxes2, fmt, "xyxy")
    return _pairwise("box_iou", boxes1, boxes2)


def _box_iou_into(boxes1, boxes2, fmt, out):
    """box_iou(..., out=): one call of the 2-D C op (box_iou, or
    box_iou_rotated for the rotated formats) writing into out; the batched
    form is one call per slice, which out= does not take."""
    width = _checks.box_width(fmt)
    for name, b in (("boxes1", boxes1), ("boxes2", boxes2)):
        if len(b.shape) != 2:
            raise VisionOpsValueError("box_iou: out= takes 2-D boxes ([N, %d] and [M, %d]), got "
                                      "%s of shape %s" % (width, width, name, list(b.shape)))
    if width != 4:
        if fmt != "cxcywhr":
            boxes1 = box_convert(boxes1, fmt, "cxcywhr")
            boxes2 = box_convert(boxes2, fmt, "cxcywhr")
        return _into("box_iou_rotated", out, boxes1, boxes2, False, False, False)
    if fmt != "xyxy":
        boxes1, boxes2 = box_convert(boxes1, fmt, "xyxy"), box_convert(boxes2, fmt, "xyxy")
    return _into("box_iou", out, boxes1, boxes2)


@_fx_leaf
def box_iou_rotated(boxes1, boxes2, mode="iou", aligned=False, clockwise=False, radians=False):
    """Overlap of rotated boxes (cx, cy, w, h, angle): boxes1 [N, 5] with
    every box of boxes2 [M, 5] -> [N, M], or with aligned=True row i with
    row i (N == M) -> [N]. mode "iou" (intersection over union) or "iof"
    (intersection over the area of the boxes1 box), as mmcv's
    box_iou_rotated. Angles in degrees, counter-clockwise on screen (y down:
    torchvision's and detectron2's convention) unless clockwise=True
    (mmcv's and OpenVINO's) or radians=True; the geometry is torchvision's
    box_iou(fmt="cxcywhr"), with its epsilons. Float boxes (the two sets of
    any float dtypes); coordinates and angles must be finite, w and h >= 0.
    Float64 boxes give float64, all others float32."""
    iof = _checks.rotated_iou_mode("box_iou_rotated", str(mode))
    boxes1, boxes2 = _box_pair("box_iou_rotated", boxes1, boxes2)
    if _is_torch(boxes1) or _is_torch(boxes2):
        return _script.box_iou_rotated(boxes1, boxes2, str(mode), bool(aligned), bool(clockwise),
                                       bool(radians))
    op = "box_iou_rotated_aligned" if aligned else "box_iou_rotated"
    return _call(op, boxes1, boxes2, iof, bool(clockwise), bool(radians))


@_fx_leaf
def generalized_box_iou(boxes1, boxes2):
    """Pairwise generalized IoU of [..., N, 4] and [..., M, 4] boxes."""
    boxes1, boxes2 = _box_pair("generalized_box_iou", boxes1, boxes2)
    if _is_torch(boxes1) or _is_torch(boxes2):
        return _script.generalized_box_iou(boxes1, boxes2)
    return _pairwise("generalized_box_iou", boxes1, boxes2)


@_fx_leaf
def distance_box_iou(boxes1, boxes2, eps=1e-7):
    """Pairwise distance IoU of [..., N, 4] and [..., M, 4] boxes."""
    boxes1, boxes2 = _box_pair("distance_box_iou", boxes1, boxes2)
    if _is_torch(boxes1) or _is_torch(boxes2):
        return _script.distance_box_iou(boxes1, boxes2, float(eps))
    return _pairwise("distance_box_iou", boxes1, boxes2, float(eps))


@_fx_leaf
def complete_box_iou(boxes1, boxes2, eps=1e-7):
    """Pairwise complete IoU of [..., N, 4] and [..., M, 4] boxes."""
    boxes1, boxes2 = _box_pair("complete_box_iou", boxes1, boxes2)
    if _is_torch(boxes1) or _is_torch(boxes2):
        return _script.complete_box_iou(boxes1, boxes2, float(eps))
    return _pairwise("complete_box_iou", boxes1, boxes2, float(eps))


# ------------------------------------------------ functions from schemas


def _schema_function(name, doc):
    """The public function of op `name` (an entry of _SCHEMA_OPS), made from
    its schema: the schema's argument names and defaults; tensor arguments
    checked as every function's are; on torch tensors the op's typed twin
    (which calls torch.ops.visionops.<name>: autograd, Meta, torch.compile),
    otherwise the C library on NumPy arrays. For an op foo(Tensor boxes):
        def foo(boxes):
            boxes = _tensor(boxes, "foo", "boxes")
            if _is_torch(boxes):
                return _twin(boxes)
            return _call("foo", boxes)"""
    schema = _core.SCHEMAS[name]
    params, body, tensors = [], [], []
    for a in schema.args:
        params.append(a.name if a.default is _core.NO_DEFAULT else "%s=%r" % (a.name, a.default))
        if a.type == "Tensor":
            body.append("%s = _tensor(%s, %r, %r)" % (a.name, a.name, name, a.name))
        elif a.type == "Tensor?":
            body.append("%s = None if %s is None else _tensor(%s, %r, %r)"
                        % (a.name, a.name, a.name, name, a.name))
        elif a.type == "Tensor[]":
            body.append("%s = [_tensor(t, %r, %r) for t in %s]" % (a.name, name, a.name, a.name))
        elif a.type in ("float", "int", "bool"):  # SymInt stays symbolic
            body.append("%s = %s(%s)" % (a.name, a.type, a.name))
        elif a.type == "float?":
            body.append("%s = None if %s is None else float(%s)" % (a.name, a.name, a.name))
        if a.type.startswith("Tensor"):
            tensors.append(a.name)
    names = ", ".join(a.name for a in schema.args)
    body.append("if %s:" % " or ".join("_is_torch(%s)" % t for t in tensors))
    body.append("    return _twin(%s)" % names)
    body.append("return _call(%r, %s)" % (name, names))
    source = "def %s(%s):\n%s\n" % (name, ", ".join(params),
                                      "\n".join("    " + line for line in body))
    namespace = {"_tensor": _tensor, "_is_torch": _is_torch, "_call": _call,
                 "_twin": _twins.get(name), "__name__": __name__}
    fn = _core.define_generated(name, source, namespace, "function")
    fn.__doc__ = doc
    return _fx_leaf(fn)


_twins = {name: _script.schema_twin(name) for name in _SCHEMA_OPS} if _script else {}
globals().update({name: _schema_function(name, doc) for name, doc in _SCHEMA_OPS.items()})


# ---------------------------------------------------------------- RoI ops


def _boxes(op, boxes, box_len=4):
    """The boxes argument type-checked: a tensor, or a list of tensors (a
    tuple becomes a list, as the typed torch path takes); box_len 5 for
    rotated boxes."""
    if type(boxes) in _PLAIN_ARRAYS:
        return boxes
    kinds = "a [K, %d] tensor or a list of [L, %d] tensors" % (box_len + 1, box_len)
    if isinstance(boxes, (list, tuple)):
        for i, b in enumerate(boxes):
            if not _is_tensor(b):
                raise VisionOpsTypeError("%s: boxes must be %s, got a %s whose item %d is %s"
                                         % (op, kinds, type(boxes).__name__, i, _describe(b)))
        return [_tensor(b, op, "boxes[%d]" % i) for i, b in enumerate(boxes)]
    if not _is_tensor(boxes):
        raise VisionOpsTypeError("%s: boxes must be %s, got %s" % (op, kinds, _describe(boxes)))
    return _tensor(boxes, op, "boxes")


def _rois(op, boxes, box_len=4):
    """NumPy boxes (after _boxes) as a [K, 5] rois array: a [K, 5] array as
    is, or a list of [L_i, 4] arrays with the image index prepended ([K, 6]
    and [L_i, 5] for rotated boxes, box_len 5)."""
    import numpy as np

    if isinstance(boxes, list):
        _checks.check_box_list(op, [[int(d) for d in b.shape] for b in boxes], box_len)
        if any(_opencl.is_array(b) for b in boxes):
            return _opencl.rois_from_list(op, boxes, box_len)
        return np.concatenate([np.concatenate([np.full_like(b[:, :1], i), b], axis=1)
                               for i, b in enumerate(boxes)], axis=0)
    _checks.check_rois(op, [int(d) for d in boxes.shape], box_len)
    return boxes


def _any_rois(op, boxes, on_torch, box_len=4):
    """Boxes (after _boxes) as a [K, box_len + 1] rois tensor of their own
    framework."""
    return _script._rois(op, boxes, box_len) if on_torch else _rois(op, boxes, box_len)


def _roi_args(op, input, boxes, box_len=4):
    """(input, boxes, on_torch) of a RoI op, type-checked."""
    input = _tensor(input, op, "input")
    boxes = _boxes(op, boxes, box_len)
    return input, boxes, _is_torch(input) or _is_torch(boxes)


@_fx_leaf
def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False, *,
              out=None):
    """torchvision.ops.roi_align. out= (a contiguous tensor of the result's
    shape and dtype, on its device) takes the result instead of a new
    tensor, as in NumPy and torch; it records no gradient. Likewise for
    roi_pool, ps_roi_align, ps_roi_pool, box_iou and deform_conv2d."""
    input, boxes, on_torch = _roi_args("roi_align", input, boxes)
    if out is not None:
        ph, pw = _pair(output_size, "roi_align: output_size")
        return _into("roi_align", out, input, _any_rois("roi_align", boxes, on_torch),
                     float(spatial_scale), ph, pw, int(sampling_ratio), bool(aligned))
    if on_torch:
        return _script.roi_align(input, boxes, output_size, spatial_scale, sampling_ratio, aligned)
    ph, pw = _pair(output_size, "roi_align: output_size")
    return _call("roi_align", input, _rois("roi_align", boxes), float(spatial_scale), ph, pw,
                 int(sampling_ratio), bool(aligned))


@_fx_leaf
def roi_align_rotated(input, rois, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=True,
                      clockwise=False, radians=False):
    """RoIAlign over rotated boxes (detectron2's ROIAlignRotated, mmcv's
    roi_align_rotated): rois is a [K, 6] tensor (image index, cx, cy, w, h,
    angle) or a list of [L_i, 5] tensors (cx, cy, w, h, angle), one per
    image. The angle is in degrees, counter-clockwise on screen (y down);
    clockwise and radians say otherwise. Each bin's sampling grid (as
    roi_align's: sampling_ratio <= 0 takes ceil(size / output size)
    samples) is laid on the un-rotated box and turned by the angle about its
    centre. aligned shifts the centre by -0.5 pixel (detectron2 always
    does); without it w and h are at least 1 (mmcv's aligned=False).
    Negative w or h are an error. Differentiable with respect to input."""
    op = "roi_align_rotated"
    input, rois, on_torch = _roi_args(op, input, rois, 5)
    if on_torch:
        return _script.roi_align_rotated(input, rois, output_size, spatial_scale, sampling_ratio,
                                         aligned, clockwise, radians)
    ph, pw = _pair(output_size, "roi_align_rotated: output_size")
    return _call(op, input, _rois(op, rois, 5), float(spatial_scale), ph, pw, int(sampling_ratio),
                 bool(aligned), bool(clockwise), bool(radians))


@_fx_leaf
def roi_pool(input, boxes, output_size, spatial_scale=1.0, *, out=None):
    input, boxes, on_torch = _roi_args("roi_pool", input, boxes)
    if out is not None:
        ph, pw = _pair(output_size, "roi_pool: output_size")
        return _into("roi_pool", out, input, _any_rois("roi_pool", boxes, on_torch),
                     float(spatial_scale), ph, pw, omit=_core.OMIT_INDEX_OUTPUT)
    if on_torch:
        return _script.roi_pool(input, boxes, output_size, spatial_scale)
    ph, pw = _pair(output_size, "roi_pool: output_size")
    return _call("roi_pool", input, _rois("roi_pool", boxes), float(spatial_scale), ph, pw,
                 omit=_core.OMIT_INDEX_OUTPUT)[0]


@_fx_leaf
def ps_roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, *, out=None):
    input, boxes, on_torch = _roi_args("ps_roi_align", input, boxes)
    if out is not None:
        ph, pw = _pair(output_size, "ps_roi_align: output_size")
        return _into("ps_roi_align", out, input, _any_rois("ps_roi_align", boxes, on_torch),
                     float(spatial_scale), ph, pw, int(sampling_ratio),
                     omit=_core.OMIT_INDEX_OUTPUT)
    if on_torch:
        return _script.ps_roi_align(input, boxes, output_size, spatial_scale, sampling_ratio)
    ph, pw = _pair(output_size, "ps_roi_align: output_size")
    return _call("ps_roi_align", input, _rois("ps_roi_align", boxes), float(spatial_scale), ph,
                 pw, int(sampling_ratio), omit=_core.OMIT_INDEX_OUTPUT)[0]


@_fx_leaf
def ps_roi_pool(input, boxes, output_size, spatial_scale=1.0, *, out=None):
    input, boxes, on_torch = _roi_args("ps_roi_pool", input, boxes)
    if out is not None:
        ph, pw = _pair(output_size, "ps_roi_pool: output_size")
        return _into("ps_roi_pool", out, input, _any_rois("ps_roi_pool", boxes, on_torch),
                     float(spatial_scale), ph, pw, omit=_core.OMIT_INDEX_OUTPUT)
    if on_torch:
        return _script.ps_roi_pool(input, boxes, output_size, spatial_scale)
    ph, pw = _pair(output_size, "ps_roi_pool: output_size")
    return _call("ps_roi_pool", input, _rois("ps_roi_pool", boxes), float(spatial_scale), ph, pw,
                 omit=_core.OMIT_INDEX_OUTPUT)[0]


@_fx_leaf
def multi_scale_roi_align(features, boxes, scales, output_size, sampling_ratio, canonical_scale=224,
                          canonical_level=4, aligned=False):
    """RoIAlign over a feature pyramid: each RoI pooled from the level
    torchvision's LevelMapper assigns it (scales[i] is level i's stride
    reciprocal, e.g. 1/4, 1/8, ...)."""
    op = "multi_scale_roi_align"
    if _is_tensor(features) or not isinstance(features, (list, tuple)):
        raise VisionOpsTypeError("%s: features must be a list of [N, C, H, W] tensors, got %s"
                                 % (op, _describe(features)))
    features = [_tensor(f, op, "features[%d]" % i) for i, f in enumerate(features)]
    boxes = _boxes(op, boxes)
    scales = [float(s) for s in scales]
    if _is_torch(features) or _is_torch(boxes):
        return _script.multi_scale_roi_align(features, boxes, scales, output_size, sampling_ratio,
                                             canonical_scale, canonical_level, aligned)
    ph, pw = _pair(output_size, "%s: output_size" % op)
    _checks.check_features(op, len(features))
    return _call(op, features, _rois(op, boxes), scales, ph, pw, int(sampling_ratio),
                 int(canonical_scale), int(canonical_level), bool(aligned))


# ------------------------------------------------------------ deform_conv2d


@_fx_leaf
def deform_conv2d(input, offset, weight, bias=None, stride=(1, 1), padding=(0, 0),
                  dilation=(1, 1), mask=None, *, out=None):
    op = "deform_conv2d"
    input = _tensor(input, op, "input")
    offset = _tensor(offset, op, "offset")
    weight = _tensor(weight, op, "weight")
    if bias is not None:
        _tensor(bias, op, "bias")
    if mask is not None:
        _tensor(mask, op, "mask")
    if out is None and (_is_torch(input) or _is_torch(offset) or _is_torch(weight)):
        return _script.deform_conv2d(input, offset, weight, bias, stride, padding, dilation, mask)
    stride_h, stride_w = _pair(stride, "%s: stride" % op)
    pad_h, pad_w = _pair(padding, "%s: padding" % op)
    dil_h, dil_w = _pair(dilation, "%s: dilation" % op)
    groups, offset_groups = _checks.deform_groups(
        [int(d) for d in input.shape], [int(d) for d in offset.shape],
        [int(d) for d in weight.shape])
    args = (input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
            groups, offset_groups, mask is not None)
    return _call(op, *args) if out is None else _into(op, out, *args)


# --------------------------------------------------------------- matrix_nms


@_fx_leaf
def matrix_nms(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k,
               use_gaussian=False, gaussian_sigma=2.0, background_label=0, normalized=True,
               return_index=False, return_rois_num=True, padded=False):
    """Matrix NMS (SOLOv2), paddle.vision.ops.matrix_nms's arguments and
    results: bboxes [B, M, 4] (x1, y1, x2, y2), scores [B, C, M]. Per image
    and class (background_label skipped; -1: none) the boxes with score >
    score_threshold, by score (ties: lower index first), the first
    nms_top_k (-1: all), each decayed by its IoU with the higher-scored ones
    (gaussian exp((K_j^2 - X_ij^2) * gaussian_sigma), or linear (1 - X_ij) /
    (1 - K_j), K_j the largest IoU of j with a box above it), kept when the
    decayed score is > post_threshold; per image the keep_top_k (-1: all)
    best over the classes (ties: lower class first). normalized=False adds
    1 to every width and height (pixel boxes).

    Returns (out, rois_num, index) as Paddle does: out [K_total, 6] rows
    (class, decayed score, x1, y1, x2, y2) in bboxes' dtype, image by image;
    rois_num [B] int32 (None unless return_rois_num); index [K_total, 1]
    int32, b * M + box index (None unless return_index). Finding K_total is
    the one host synchronisation; padded=True skips it and returns the op's
    padded (dets [B, K, 6], index [B, K] int64, -1 past num, num [B] int64),
    K = keep_top_k, or C * min(nms_top_k, M) when keep_top_k is -1."""
    op = "matrix_nms"
    bboxes = _tensor(bboxes, op, "bboxes")
    scores = _tensor(scores, op, "scores")
    args = (float(score_threshold), float(post_threshold), int(nms_top_k), int(keep_top_k),
            bool(use_gaussian), float(gaussian_sigma), int(background_label), bool(normalized))
    if _is_torch(bboxes) or _is_torch(scores):
        device = (bboxes if _is_torch(bboxes) else scores).device
        bboxes = _torch.as_tensor(_numpy(bboxes) if not _is_torch(bboxes) else bboxes,
                                  device=device)
        scores = _torch.as_tensor(_numpy(scores) if not _is_torch(scores) else scores,
                                  device=device)
        dets, index, num = _torch.ops.visionops.matrix_nms(bboxes, scores, *args)
        if padded:
            return dets, index, num
        kept = index >= 0
        out, index = dets[kept], index[kept].reshape(-1, 1).to(_torch.int32)
        rois_num = num.to(_torch.int32)
    else:
        dets, index, num = _call(op, bboxes, scores, *args)
        if padded:
            return dets, index, num
        import numpy as np

        if _opencl.is_array(dets):  # each image's rows are a prefix of its K
            counts = [int(n) for n in num.get()]  # the one host sync
            out = _opencl.prefix_rows(dets, counts)
            index = _opencl.prefix_rows(index, counts).reshape(-1, 1).astype(np.int32)
        else:
            kept = index >= 0
            out, index = dets[kept], index[kept].reshape(-1, 1).astype(np.int32)
        rois_num = num.astype(np.int32)
    return out, rois_num if return_rois_num else None, index if return_index else None


# -------------------------------------------------------------- deform_attn


@_fx_leaf
def deform_attn(value, spatial_shapes, level_start_index, sampling_loc, attn_weight,
                im2col_step=64):
    """Multi-scale deformable attention (Deformable DETR), torchvision's
    deform_attn: out[n, q, m*D + d] = sum over levels l and points p of
    attn_weight[n, q, m, l, p] times value[n, :, m, d] of level l sampled
    bilinearly at sampling_loc[n, q, m, l, p] = (x, y) in [0, 1] (pixel
    centres at (j + 0.5) / W_l, zeros outside: grid_sample with
    align_corners=False). value [N, S, M, D] with S = sum of H_l * W_l,
    spatial_shapes [L, 2] and level_start_index [L] int64, sampling_loc
    [N, Q, M, L, P, 2], attn_weight [N, Q, M, L, P] -> [N, Q, M * D]. A NaN
    location contributes 0; im2col_step (>= 1) does not change the result.
    Differentiable with respect to value, sampling_loc and attn_weight."""
    op = "deform_attn"
    value = _tensor(value, op, "value")
    spatial_shapes = _tensor(spatial_shapes, op, "spatial_shapes")
    level_start_index = _tensor(level_start_index, op, "level_start_index")
    sampling_loc = _tensor(sampling_loc, op, "sampling_loc")
    attn_weight = _tensor(attn_weight, op, "attn_weight")
    tensors = (value, spatial_shapes, level_start_index, sampling_loc, attn_weight)
    if any(_is_torch(t) for t in tensors):
        return _script.deform_attn(value, spatial_shapes, level_start_index, sampling_loc,
                                   attn_weight, int(im2col_step))
    return _call(op, *tensors, int(im2col_step))


# ------------------------------------------------------- MultiScaleRoIAlign


def _infer_scale(feature_size, original_size):
    # torchvision: 2 ** round(log2(feature / image)), computed in float32.
    log2 = _checks.log2_round_float32(float(feature_size[0]) / float(original_size[0]))
    _checks.check_level(log2, [int(d) for d in feature_size], original_size[0], original_size[1])
    return 2.0 ** log2


# MultiScaleRoIAlign's forward in three fx leaves (a dict and a list of
# image sizes cannot be traced through); on torch tensors (and in scripts)
# the helpers are _script's.
@_fx_leaf
def _select_features(x, featmap_names):
    if not isinstance(x, dict):
        raise VisionOpsTypeError("MultiScaleRoIAlign: x must be a dict of feature maps, got %s"
                                 % _describe(x))
    features = [v for k, v in x.items() if k in featmap_names]
    _checks.check_features_found(len(features), list(featmap_names))
    return features


@_fx_leaf
def _pyramid_scales(features, image_shapes):
    if _is_torch(features):
        return _script._pyramid_scales(features, [(int(h), int(w)) for h, w in image_shapes])
    _checks.check_image_shapes(len(image_shapes))
    max_h = max(s[0] for s in image_shapes)
    max_w = max(s[1] for s in image_shapes)
    return [_infer_scale(f.shape[-2:], (max_h, max_w)) for f in features]


class _MultiScaleRoIAlignBase:
    """torchvision.ops.MultiScaleRoIAlign: pools each box of each image from
    the pyramid level that fits its size. Call it with a dict of feature
    maps, a list of [L_i, 4] boxes per image, and the images' (h, w). The
    level scales are inferred on every call (and kept in .scales)."""

    def _setup(self, featmap_names, output_size, sampling_ratio, canonical_scale, canonical_level):
        if isinstance(output_size, int):
            output_size = (output_size, output_size)
        self.featmap_names = list(featmap_names)
        self.sampling_ratio = sampling_ratio
        self.output_size = tuple(output_size)
        self.canonical_scale = canonical_scale
        self.canonical_level = canonical_level
        self.scales = None

    def __repr__(self):
        return "%s(featmap_names=%s, output_size=%s, sampling_ratio=%s)" % (
            type(self).__name__, self.featmap_names, self.output_size, self.sampling_ratio)


if _nn is not None:
    from typing import Dict, List, Optional, Tuple, Union

    from torch import Tensor

    class MultiScaleRoIAlign(_nn.Module, _MultiScaleRoIAlignBase):
        __doc__ = _MultiScaleRoIAlignBase.__doc__
        __annotations__ = {"scales": Optional[List[float]]}

        def __init__(self, featmap_names, output_size, sampling_ratio, *, canonical_scale=224,
                     canonical_level=4):
            super().__init__()
            self._setup(featmap_names, output_size, sampling_ratio, canonical_scale,
                        canonical_level)

        def forward(self, x: Dict[str, Tensor], boxes: List[Tensor],
                    image_shapes: List[Tuple[int, int]]) -> Tensor:
            features = _select_features(x, self.featmap_names)
            scales = _pyramid_scales(features, image_shapes)
            self.scales = scales
            return multi_scale_roi_align(features, boxes, scales, self.output_size,
                                         self.sampling_ratio, self.canonical_scale,
                                         self.canonical_level, False)

        __repr__ = _MultiScaleRoIAlignBase.__repr__

else:  # NumPy only

    class MultiScaleRoIAlign(_MultiScaleRoIAlignBase):
        __doc__ = _MultiScaleRoIAlignBase.__doc__

        def __init__(self, featmap_names, output_size, sampling_ratio, *, canonical_scale=224,
                     canonical_level=4):
            self._setup(featmap_names, output_size, sampling_ratio, canonical_scale,
                        canonical_level)

        def __call__(self, x, boxes, image_shapes):
            features = _select_features(x, self.featmap_names)
            self.scales = _pyramid_scales(features, image_shapes)
            return multi_scale_roi_align(features, boxes, self.scales, self.output_size,
                                         self.sampling_ratio, self.canonical_scale,
                                         self.canonical_level, False)


# ---------------------------------------------------- torchvision's modules
#
# RoIAlign, RoIPool, PSRoIAlign, PSRoIPool and DeformConv2d with
# torchvision.ops' constructors, attributes, parameter names (state_dict
# keys), initialisation and repr, calling the functions above.


def _needs_torch(name):
    def init(*args, **kwargs):
        raise VisionOpsError("visionops.%s is a torch.nn.Module: it needs PyTorch installed" % name)

    return type(name, (), {"__init__": init, "__doc__": "Needs PyTorch (torch.nn.Module)."})


if _nn is not None:

    class RoIAlign(_nn.Module):
        """torchvision.ops.RoIAlign: see roi_align."""

        spatial_scale: float  # TorchScript: an int given here scripts as a float

        def __init__(self, output_size, spatial_scale, sampling_ratio, aligned=False):
            super().__init__()
            self.output_size = output_size
            self.spatial_scale = spatial_scale
            self.sampling_ratio = sampling_ratio
            self.aligned = aligned

        def forward(self, input: Tensor, rois: Union[Tensor, List[Tensor]]) -> Tensor:
            return roi_align(input, rois, self.output_size, self.spatial_scale,
                             self.sampling_ratio, self.aligned)

        def __repr__(self):
            return "%s(output_size=%s, spatial_scale=%s, sampling_ratio=%s, aligned=%s)" % (
                type(self).__name__, self.output_size, self.spatial_scale, self.sampling_ratio,
                self.aligned)

    class RoIAlignRotated(_nn.Module):
        """RoIAlign over rotated boxes (detectron2's ROIAlignRotated, with
        clockwise and radians for mmcv's conventions): see roi_align_rotated."""

        spatial_scale: float  # TorchScript: an int given here scripts as a float

        def __init__(self, output_size, spatial_scale, sampling_ratio, aligned=True,
                     clockwise=False, radians=False):
            super().__init__()
            self.output_size = output_size
            self.spatial_scale = spatial_scale
            self.sampling_ratio = sampling_ratio
            self.aligned = aligned
            self.clockwise = clockwise
            self.radians = radians

        def forward(self, input: Tensor, rois: Union[Tensor, List[Tensor]]) -> Tensor:
            return roi_align_rotated(input, rois, self.output_size, self.spatial_scale,
                                     self.sampling_ratio, self.aligned, self.clockwise,
                                     self.radians)

        def __repr__(self):
            return ("%s(output_size=%s, spatial_scale=%s, sampling_ratio=%s, aligned=%s, "
                    "clockwise=%s, radians=%s)" % (
                        type(self).__name__, self.output_size, self.spatial_scale,
                        self.sampling_ratio, self.aligned, self.clockwise, self.radians))

    class RoIPool(_nn.Module):
        """torchvision.ops.RoIPool: see roi_pool."""

        spatial_scale: float  # TorchScript: an int given here scripts as a float

        def __init__(self, output_size, spatial_scale):
            super().__init__()
            self.output_size = output_size
            self.spatial_scale = spatial_scale

        def forward(self, input: Tensor, rois: Union[Tensor, List[Tensor]]) -> Tensor:
            return roi_pool(input, rois, self.output_size, self.spatial_scale)

        def __repr__(self):
            return "%s(output_size=%s, spatial_scale=%s)" % (type(self).__name__, self.output_size,
                                                             self.spatial_scale)

    class PSRoIAlign(_nn.Module):
        """torchvision.ops.PSRoIAlign: see ps_roi_align."""

        spatial_scale: float  # TorchScript: an int given here scripts as a float

        def __init__(self, output_size, spatial_scale, sampling_ratio):
            super().__init__()
            self.output_size = output_size
            self.spatial_scale = spatial_scale
            self.sampling_ratio = sampling_ratio

        def forward(self, input: Tensor, rois: Union[Tensor, List[Tensor]]) -> Tensor:
            return ps_roi_align(input, rois, self.output_size, self.spatial_scale,
                                self.sampling_ratio)

        def __repr__(self):
            return "%s(output_size=%s, spatial_scale=%s, sampling_ratio=%s)" % (
                type(self).__name__, self.output_size, self.spatial_scale, self.sampling_ratio)

    class PSRoIPool(_nn.Module):
        """torchvision.ops.PSRoIPool: see ps_roi_pool."""

        spatial_scale: float  # TorchScript: an int given here scripts as a float

        def __init__(self, output_size, spatial_scale):
            super().__init__()
            self.output_size = output_size
            self.spatial_scale = spatial_scale

        def forward(self, input: Tensor, rois: Union[Tensor, List[Tensor]]) -> Tensor:
            return ps_roi_pool(input, rois, self.output_size, self.spatial_scale)

        def __repr__(self):
            return "%s(output_size=%s, spatial_scale=%s)" % (type(self).__name__, self.output_size,
                                                             self.spatial_scale)

    class DeformConv2d(_nn.Module):
        """torchvision.ops.DeformConv2d: a deformable convolution layer with
        weight [out_channels, in_channels // groups, kh, kw] and an optional
        bias, initialised as torch.nn.Conv2d is; see deform_conv2d."""

        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                     dilation=1, groups=1, bias=True):
            super().__init__()
            if in_channels % groups != 0:
                raise VisionOpsValueError("DeformConv2d: in_channels (%d) must be divisible by "
                                          "groups (%d)" % (in_channels, groups))
            if out_channels % groups != 0:
                raise VisionOpsValueError("DeformConv2d: out_channels (%d) must be divisible by "
                                          "groups (%d)" % (out_channels, groups))
            self.in_channels = in_channels
            self.out_channels = out_channels
            self.kernel_size = _pair(kernel_size, "DeformConv2d: kernel_size")
            self.stride = _pair(stride, "DeformConv2d: stride")
            self.padding = _pair(padding, "DeformConv2d: padding")
            self.dilation = _pair(dilation, "DeformConv2d: dilation")
            self.groups = groups
            self.weight = _nn.Parameter(_torch.empty(out_channels, in_channels // groups,
                                                     *self.kernel_size))
            if bias:
                self.bias = _nn.Parameter(_torch.empty(out_channels))
            else:
                self.register_parameter("bias", None)
            self.reset_parameters()

        def reset_parameters(self):
            """Kaiming-uniform weight (a = sqrt(5)) and a bias uniform in
            +-1/sqrt(fan_in): torch.nn.Conv2d's (and torchvision's) init."""
            _nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
            if self.bias is not None:
                fan_in = self.weight.shape[1] * self.weight.shape[2] * self.weight.shape[3]
                bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
                _nn.init.uniform_(self.bias, -bound, bound)

        def forward(self, input: Tensor, offset: Tensor, mask: Optional[Tensor] = None) -> Tensor:
            return deform_conv2d(input, offset, self.weight, self.bias, stride=self.stride,
                                 padding=self.padding, dilation=self.dilation, mask=mask)

        def __repr__(self):
            parts = ["%d" % self.in_channels, "%d" % self.out_channels,
                     "kernel_size=%s" % (self.kernel_size,), "stride=%s" % (self.stride,)]
            if self.padding != (0, 0):
                parts.append("padding=%s" % (self.padding,))
            if self.dilation != (1, 1):
                parts.append("dilation=%s" % (self.dilation,))
            if self.groups != 1:
                parts.append("groups=%d" % self.groups)
            if self.bias is None:
                parts.append("bias=False")
            return "%s(%s)" % (type(self).__name__, ", ".join(parts))

else:
    RoIAlign = _needs_torch("RoIAlign")
    RoIAlignRotated = _needs_torch("RoIAlignRotated")
    RoIPool = _needs_torch("RoIPool")
    PSRoIAlign = _needs_torch("PSRoIAlign")
    PSRoIPool = _needs_torch("PSRoIPool")
    DeformConv2d = _needs_torch("DeformConv2d")


# torch.fx: the functions are leaves (see _fx_leaf); registering the names
# with torch.fx.wrap too makes the modules' calls above leaves by fx's own
# mechanism. It must run at module level. TorchScript: each compiles as its
# typed twin in _script.py.
_FX_LEAVES = ("nms", "batched_nms", "nms_rotated", "batched_nms_rotated", "batched_nms_padded",
              "onnx_nms", "soft_nms", "batched_soft_nms", "box_iou",
              "generalized_box_iou", "distance_box_iou", "complete_box_iou", "box_area",
              "box_convert", "box_iou_rotated", *_SCHEMA_OPS, "roi_align", "roi_pool",
              "ps_roi_align", "ps_roi_pool", "multi_scale_roi_align", "deform_conv2d",
              "roi_align_rotated", "deform_attn")
if _torch is not None:
    import torch.fx as _fx

    for _name in _FX_LEAVES:
        _fx.wrap(_name)
        _scriptable(globals()[_name], _twins[_name] if _name in _twins else getattr(_script, _name))
    _scriptable(_select_features, _script._select_features)
    _scriptable(_pyramid_scales, _script._pyramid_scales)
    del _name
