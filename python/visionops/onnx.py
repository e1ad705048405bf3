"""ONNX export of the visionops ops (torch.ops.visionops.*), for both of
torch.onnx.export's exporters.

TorchScript-based exporter (``dynamo=False``, torch 1.13 and 2.x): importing
visionops registers a symbolic function for every op with
``torch.onnx.register_custom_op_symbolic``; nothing else to do.

Dynamo-based exporter (``dynamo=True``, torch 2.x with onnxscript): torch
reads custom translations only from the ``custom_translation_table``
argument (its registry is rebuilt from torch's and onnxscript's private
tables at every export, with no public hook), so pass ours::

    torch.onnx.export(model, args, dynamo=True,
                      custom_translation_table=visionops.onnx.custom_translation_table())

Standard ONNX operators:
  roi_align -> RoiAlign (``aligned`` is coordinate_transformation_mode
    "half_pixel", otherwise "output_half_pixel", which needs opset 16; at
    opset 11-15 only aligned=False exports, as RoiAlign-10; sampling_ratio
    <= 0 is 0, ONNX's adaptive grid, the same rule),
  roi_pool -> MaxRoiPool (the argmax output is not exported),
  nms_kept -> NonMaxSuppression (boxes and scores as float32),
  batched_nms_kept -> NonMaxSuppression with one class row per category
    (exact per category, unlike the coordinate-offset trick), sorted by
    score,
  nms and batched_nms (keep padded with -1 to N, num_kept) -> the same,
    padded,
  onnx_nms -> NonMaxSuppression itself (its selected rows padded with -1 to
    B * C * min(max_output_boxes_per_class, M), and their count; boxes and
    scores as float32),
  batched_nms_padded -> one NonMaxSuppression over every (image, class)
    problem (the pre-NMS top-k as a TopK mask, the box format converted in
    float32, class_agnostic as one problem an image), then per image a
    TopK over the selected scores scattered into a [B, C * M] matrix, its
    ties by (class, box) as the op's; padded with -1 / 0 to max_per_image
    (opset 14: Reshape's allowzero),
  multi_scale_roi_align -> the FPN level of each RoI from elementwise ops,
    one RoiAlign per level on that level's RoIs, scattered back in order,
  deform_conv2d -> DeformConv (opset 19; onnxruntime 1.32 runs it),
  box_iou, generalized_box_iou, distance_box_iou, complete_box_iou -> their
    formulas from elementwise operators, for [N, 4] x [M, 4] boxes (float64
    stays float64, other dtypes compute in float32, as the C op; the
    aspect-ratio term of complete_box_iou takes its atan in float32, and the
    dynamo exporter passes eps as a float32 attribute).
Differences from eager visionops: NonMaxSuppression needs 0 <= iou_threshold
(a negative one is an export error; one above 1 is exported as 1, which
suppresses the same boxes), scores of -inf or NaN are never kept by
batched_nms or batched_nms_padded, float64 boxes and scores are compared in
float32 (ties in score may order differently), IoUs follow
NonMaxSuppression's arithmetic, which orders each box's corners (eager
visionops computes torchvision's, with negative areas for flipped boxes),
tied scores in nms are ordered as onnxruntime's NonMaxSuppression does
(unspecified), and float64 roi_pool runs in float32 (onnxruntime's
MaxRoiPool has no float64 kernel).

The other ops (ps_roi_align, ps_roi_pool, the rotated ops, deform_attn,
soft_nms, matrix_nms, the backward ops, and deform_conv2d below opset 19)
have no standard ONNX operator: they export as custom operators of the
domain "visionops" (version 1), with the op's name, its tensors as inputs
(a tensor list last) and its other arguments as attributes under their
schema names, and a CustomOpExportWarning naming the op (docs/ONNX.md
specifies every such node). onnxruntime runs them with visionops' custom-op
library registered: ``ort_session_options()`` below, or
``SessionOptions.register_custom_ops_library(ort_library_path())``.
soft_nms_kept and batched_soft_nms_kept (visionops.soft_nms's and
batched_soft_nms's (dets, keep) on torch tensors) export as the padded op's
custom node followed by standard Slices to its count, so the model keeps
the data-dependent size."""
import functools
import inspect
import math
import os
import warnings
from typing import Optional, Sequence

try:  # the ONNX Runtime helpers below need no torch
    import torch
except ImportError:  # pragma: no cover - a NumPy-only install
    torch = None

from . import _core
from ._C import VisionOpsError, VisionOpsValueError

CUSTOM_DOMAIN = "visionops"
CUSTOM_DOMAIN_VERSION = 1

_INT64_MAX = 2 ** 63 - 1
_ONNX_FLOAT, _ONNX_INT64, _ONNX_BOOL, _ONNX_FLOAT16, _ONNX_DOUBLE, _ONNX_BFLOAT16 = (
    1, 7, 9, 10, 11, 16)
_ONNX_TYPES = {"Float": _ONNX_FLOAT, "Double": _ONNX_DOUBLE, "Half": _ONNX_FLOAT16,
               "BFloat16": _ONNX_BFLOAT16, "Long": _ONNX_INT64}


def _torch_float_type(onnx_type):
    return {_ONNX_DOUBLE: torch.float64, _ONNX_FLOAT16: torch.float16,
            _ONNX_BFLOAT16: torch.bfloat16}.get(onnx_type, torch.float32)


# Ops exported as standard ONNX; everything else in the schema list goes to
# the custom domain.
IOU_OPS = ("box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou")
STANDARD_OPS = ("roi_align", "roi_pool", "nms", "batched_nms", "nms_kept", "batched_nms_kept",
                "onnx_nms", "batched_nms_padded", "multi_scale_roi_align",
                "deform_conv2d") + IOU_OPS


class CustomOpExportWarning(UserWarning):
    """A visionops op was exported as a custom operator of the "visionops"
    domain: no standard ONNX operator computes it."""


def custom_ops():
    """The names of the ops that export into the "visionops" custom domain."""
    return [name for name in _core.SCHEMAS if name not in STANDARD_OPS]


ORT_LIBRARY = "libvisionops_ort.so"


def ort_library_path():
    """The path of libvisionops_ort, the ONNX Runtime custom-op library that
    runs every node of the "visionops" domain (shipped beside the extension;
    it needs neither Python nor torch, so any ONNX Runtime process can load
    it)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), ORT_LIBRARY)
    if not os.path.exists(path):
        raise VisionOpsError("visionops: %s is not installed beside the package (%s); this "
                             "build left it out (VISIONOPS_ORT=OFF, or a sanitized build)"
                             % (ORT_LIBRARY, os.path.dirname(path)))
    return path


def ort_session_options(session_options=None):
    """onnxruntime.SessionOptions (a new one, or `session_options`) with
    libvisionops_ort registered, so that a session made with them runs the
    "visionops" nodes::

        session = onnxruntime.InferenceSession(path, visionops.onnx.ort_session_options())
    """
    if session_options is None:
        import onnxruntime

        session_options = onnxruntime.SessionOptions()
    session_options.register_custom_ops_library(ort_library_path())
    return session_options


def _node_inputs(schema, values):
    """A custom node's inputs: the schema's tensors in order, a tensor list
    last (ONNX Runtime's one variadic input); `values` pairs with
    schema.args."""
    single, listed = [], []
    for arg, value in zip(schema.args, values):
        if arg.type == "Tensor[]":
            listed.extend(value)
        elif arg.type.startswith("Tensor"):
            single.append(value)
    return single + listed


def _warn_custom(name):
    warnings.warn(CustomOpExportWarning(
        "visionops.%s has no standard ONNX operator: exported as the custom operator "
        "%s::%s (domain %r, version %d), which onnxruntime and other runtimes run only with "
        "an implementation of it registered" % (name, CUSTOM_DOMAIN, name, CUSTOM_DOMAIN,
                                                CUSTOM_DOMAIN_VERSION)), stacklevel=3)


def _nms_threshold(op, iou_threshold):
    """iou_threshold as NonMaxSuppression takes it. ONNX suppresses on
    IoU > thr with IoU in [0, 1] and never suppresses disjoint boxes, so a
    threshold above 1 is 1 (nothing suppressed either way) and a negative
    one (eager visionops then suppresses even disjoint boxes) cannot be
    expressed. As the float32 NonMaxSuppression takes: rounded down
    (_f32_at_most), so that its IoU > thr decides as the op's."""
    thr = float(iou_threshold)
    if not thr >= 0.0:
        raise VisionOpsValueError("%s: ONNX export needs iou_threshold >= 0 (NonMaxSuppression "
                                  "never suppresses disjoint boxes), got %r" % (op, thr))
    return _f32_at_most(min(thr, 1.0))


def _sampling_ratio(sampling_ratio):
    # visionops / torchvision: <= 0 is the adaptive grid ceil(roi / bins),
    # which is ONNX's sampling_ratio 0.
    return max(int(sampling_ratio), 0)


def _coordinate_mode(op, aligned, opset):
    if opset < 16:
        if aligned:
            raise VisionOpsValueError("%s: aligned=True needs ONNX opset 16 or later (RoiAlign's "
                                      "coordinate_transformation_mode), got opset %d"
                                      % (op, opset))
        return None  # RoiAlign-10 is output_half_pixel
    return "half_pixel" if aligned else "output_half_pixel"


def _pyramid_levels(op, scales):
    """(k_min, number of levels) of a pyramid whose level i has scale 2^-(k_min + i)."""
    k_min = -math.log2(scales[0])
    for i, s in enumerate(scales):
        if not (s > 0 and -math.log2(s) == k_min + i):
            raise VisionOpsValueError("%s: scales must be consecutive powers of 1/2, got %r"
                                      % (op, list(scales)))
    return int(k_min), len(scales)


def _pairwise_iou(kind, emit, const, atan, boxes1, boxes2, eps):
    """The four IoUs of [N, 4] x [M, 4] boxes from elementwise ONNX ops, in
    the C kernel's order of operations (torchvision's): emit(op_type,
    *inputs) adds a node, const(value) a scalar of the compute dtype,
    atan(x) an Atan in it (onnxruntime's Atan has no float64 kernel: it runs
    in float32 there). boxes1 / boxes2 are already in the compute dtype."""
    def columns(boxes, side):
        cols = [emit("Gather", boxes, i) for i in range(4)]  # [N, 1] each
        return cols if side == 0 else [emit("Transpose", c) for c in cols]  # [1, M]

    def term(x1, y1, x2, y2):
        w, h = emit("Sub", x2, x1), emit("Sub", y2, y1)
        return dict(area=emit("Mul", w, h), w=w, h=h,
                    cx=emit("Div", emit("Add", x1, x2), const(2.0)),
                    cy=emit("Div", emit("Add", y1, y2), const(2.0)))

    (ax1, ay1, ax2, ay2), (bx1, by1, bx2, by2) = columns(boxes1, 0), columns(boxes2, 1)
    a, b = term(ax1, ay1, ax2, ay2), term(bx1, by1, bx2, by2)
    w = emit("Relu", emit("Sub", emit("Min", ax2, bx2), emit("Max", ax1, bx1)))
    h = emit("Relu", emit("Sub", emit("Min", ay2, by2), emit("Max", ay1, by1)))
    inter = emit("Mul", w, h)
    union = emit("Sub", emit("Add", a["area"], b["area"]), inter)
    iou = emit("Div", inter, union)
    if kind == "box_iou":
        return iou
    ew = emit("Relu", emit("Sub", emit("Max", ax2, bx2), emit("Min", ax1, bx1)))
    eh = emit("Relu", emit("Sub", emit("Max", ay2, by2), emit("Min", ay1, by1)))
    if kind == "generalized_box_iou":
        enclosing = emit("Mul", ew, eh)
        return emit("Sub", iou, emit("Div", emit("Sub", enclosing, union), enclosing))
    diag = emit("Add", emit("Add", emit("Mul", ew, ew), emit("Mul", eh, eh)), const(eps))
    dx, dy = emit("Sub", a["cx"], b["cx"]), emit("Sub", a["cy"], b["cy"])
    distance = emit("Div", emit("Add", emit("Mul", dx, dx), emit("Mul", dy, dy)), diag)
    diou = emit("Sub", iou, distance)
    if kind == "distance_box_iou":
        return diou
    d = emit("Sub", atan(emit("Div", a["w"], a["h"])), atan(emit("Div", b["w"], b["h"])))
    v = emit("Mul", const(4.0 / (math.pi * math.pi)), emit("Mul", d, d))
    alpha = emit("Div", v, emit("Add", emit("Add", emit("Sub", const(1.0), iou), v), const(eps)))
    return emit("Sub", diou, emit("Mul", alpha, v))



def _f32_at_most(t):
    """The largest float32 <= t: x > it in float32 decides as x > t in
    double for every float32 x (the op compares float scores and IoUs with
    a double threshold; NonMaxSuppression takes a float32 one)."""
    import numpy as np

    f = np.float32(t)
    if float(f) > t:
        f = np.nextafter(f, np.float32(-np.inf))
    return float(f)


class _Emit:
    """One exporter's way to add ONNX nodes, so that each graph below is
    written once for both: node(op_type, *inputs, outputs=1, **attrs) adds
    a node (attribute values as Python ints, floats, strings, lists or NumPy
    arrays), const(array) a constant; opset is the export's."""

    def __init__(self, node, const, opset):
        self.node, self.const, self.opset = node, const, opset

    def i64(self, v):
        import numpy as np

        return self.const(np.array(v, dtype=np.int64))

    def f32(self, v):
        import numpy as np

        return self.const(np.array(v, dtype=np.float32))

    def unsqueeze(self, x, axes):  # axes an input from opset 13 on, an attribute before
        if self.opset >= 13:
            return self.node("Unsqueeze", x, self.i64(list(axes)))
        return self.node("Unsqueeze", x, axes=list(axes))

    def squeeze(self, x, axes):
        if self.opset >= 13:
            return self.node("Squeeze", x, self.i64(list(axes)))
        return self.node("Squeeze", x, axes=list(axes))


def _nms_selected_graph(e, boxes, scores_cm, iou_threshold, score_threshold=None):
    """NonMaxSuppression of boxes [M, 4] with scores [C, M]: [K] box indices."""
    inputs = [e.unsqueeze(e.node("Cast", boxes, to=_ONNX_FLOAT), [0]),
              e.unsqueeze(e.node("Cast", scores_cm, to=_ONNX_FLOAT), [0]),
              e.i64([_INT64_MAX]), e.f32([iou_threshold])]
    if score_threshold is not None:
        inputs.append(e.f32([score_threshold]))
    return e.node("Gather", e.node("NonMaxSuppression", *inputs), e.i64(2), axis=1)


def _nms_kept_graph(e, boxes, scores, iou_threshold):
    thr = _nms_threshold("nms", iou_threshold)
    return _nms_selected_graph(e, boxes, e.unsqueeze(scores, [0]), thr)


def _by_score_graph(e, kept, scores_f):
    """kept box indices by decreasing score, ties by index (TopK puts equal
    values in index order)."""
    k = e.node("Shape", kept)
    _, order = e.node("TopK", kept, k, outputs=2, largest=0, sorted=1)
    kept = e.node("Gather", kept, order)
    _, order = e.node("TopK", e.node("Gather", scores_f, kept), k, outputs=2, largest=1, sorted=1)
    return e.node("Gather", kept, order)


def _batched_nms_kept_graph(e, boxes, scores, idxs, iou_threshold):
    thr = _nms_threshold("batched_nms", iou_threshold)
    idxs = e.node("Cast", idxs, to=_ONNX_INT64)
    # Categories as 0..C-1 (C = 0 without boxes), each a row of NMS scores
    # holding its boxes' scores and -inf elsewhere (dropped by the
    # score_threshold -inf, as NonMaxSuppression keeps only scores > it).
    low = e.node("ReduceMin", e.node("Concat", idxs, e.i64([_INT64_MAX]), axis=0), keepdims=0)
    cls = e.node("Sub", idxs, low)
    count = e.node("Add", e.node("ReduceMax", e.node("Concat", cls, e.i64([-1]), axis=0),
                                 keepdims=0), e.i64(1))
    rows = e.node("Range", e.i64(0), count, e.i64(1))
    member = e.node("Equal", e.unsqueeze(rows, [1]), e.unsqueeze(cls, [0]))
    scores_f = e.node("Cast", scores, to=_ONNX_FLOAT)
    scores_cm = e.node("Where", member, e.unsqueeze(scores_f, [0]), e.f32(float("-inf")))
    kept = _nms_selected_graph(e, boxes, scores_cm, thr, float("-inf"))
    return _by_score_graph(e, kept, scores_f)


def _padded_graph(e, kept, boxes):
    """kept [K] as the fixed-size form: keep [N] padded with -1, num_kept []."""
    n = e.node("Gather", e.node("Shape", boxes), e.i64([0]))
    k = e.node("Shape", kept)
    pads = e.node("Concat", e.i64([0]), e.node("Sub", n, k), axis=0)
    return e.node("Pad", kept, pads, e.i64(-1), mode="constant"), e.squeeze(k, [0])


def _onnx_nms_graph(e, boxes, scores, max_out, iou_threshold, score_threshold,
                    center_point_box):
    inputs = [e.node("Cast", boxes, to=_ONNX_FLOAT), e.node("Cast", scores, to=_ONNX_FLOAT),
              e.i64([max_out]), e.f32([iou_threshold])]
    if score_threshold is not None:
        inputs.append(e.f32([score_threshold]))
    selected = e.node("NonMaxSuppression", *inputs, center_point_box=center_point_box)
    # Padded to B * C * min(max(max_out, 0), M) rows, as the op.
    b = e.node("Gather", e.node("Shape", boxes), e.i64([0]))
    m = e.node("Gather", e.node("Shape", boxes), e.i64([1]))
    c = e.node("Gather", e.node("Shape", scores), e.i64([1]))
    per = e.node("Min", m, e.i64([max(max_out, 0)]))
    rows = e.node("Mul", e.node("Mul", b, c), per)
    k = e.node("Gather", e.node("Shape", selected), e.i64([0]))
    pads = e.node("Concat", e.i64([0, 0]), e.node("Sub", rows, k), e.i64([0]), axis=0)
    return e.node("Pad", selected, pads, e.i64(-1), mode="constant"), e.squeeze(k, [0])


def _padded_nms_graph(e, boxes, scores, box_rank, score_type, iou_threshold, score_threshold,
                      max_per_class, max_per_image, box_format, class_agnostic, pre_nms_top_k):
    """batched_nms_padded from standard operators (e: an _Emit, opset >= 14).
    One NonMaxSuppression over every (image, class) problem, then
    per image a TopK over a dense [B, C * M] matrix of the selected scores
    (-inf elsewhere): TopK puts equal scores in index order, class * M +
    box, which is the op's order (class, then selection). boxes [B, M, 4]
    or (box_rank 4) [B, M, C, 4]; score_type: the ONNX type of scores."""
    import numpy as np

    op = "batched_nms_padded"
    thr = _nms_threshold(op, iou_threshold)
    score_thr = float("-inf") if score_threshold is None else _f32_at_most(score_threshold)
    cap = max_per_image if max_per_class < 0 else min(max_per_class, max_per_image)

    node, i64, f32 = e.node, e.i64, e.f32

    def dim(x, i):
        return node("Gather", node("Shape", x), i64([i]))

    def unsqueeze(x, axis):
        return node("Unsqueeze", x, i64([axis]))

    def reshape(x, *dims):  # allowzero: a 0 is a size (C * M = 0), not "copy"
        return node("Reshape", x, node("Concat", *dims, axis=0), allowzero=1)

    bx = node("Cast", boxes, to=_ONNX_FLOAT)
    sc = node("Cast", scores, to=_ONNX_FLOAT)
    # NaN never a candidate (as with a threshold; and TopK may rank NaN first).
    sc = node("Where", node("IsNaN", sc), f32(float("-inf")), sc)
    if box_format != 0:  # to xyxy as box_convert writes it (in float32)
        col = [node("Gather", bx, i64([i]), axis=-1) for i in range(4)]
        if box_format == 1:  # x, y, x + w, y + h
            col = [col[0], col[1], node("Add", col[0], col[2]), node("Add", col[1], col[3])]
        else:  # cx -+ 0.5 * w, cy -+ 0.5 * h
            hw, hh = node("Mul", f32(0.5), col[2]), node("Mul", f32(0.5), col[3])
            col = [node("Sub", col[0], hw), node("Sub", col[1], hh), node("Add", col[0], hw),
                   node("Add", col[1], hh)]
        bx = node("Concat", *col, axis=-1)
    b, c, m = dim(scores, 0), dim(scores, 1), dim(scores, 2)
    cm = node("Mul", c, m)
    if box_rank == 4:  # [B, M, C, 4] -> [B, C, M, 4]
        bx = node("Transpose", bx, perm=[0, 2, 1, 3])
    # The NMS problems: boxes [P, N, 4], scores [P, Q, N]; a selected row
    # (p, q, n) is image `image`, position class * M + box `position`.
    if class_agnostic:
        if box_rank != 4:
            bx = node("Expand", unsqueeze(bx, 1), node("Concat", b, c, m, i64([4]), axis=0))
        bx = reshape(bx, b, cm, i64([4]))
        sc = reshape(sc, b, i64([1]), cm)
    elif box_rank == 4:
        bx = reshape(bx, node("Mul", b, c), m, i64([4]))
        sc = reshape(sc, node("Mul", b, c), i64([1]), m)
    if pre_nms_top_k >= 0:  # every score but each problem's best pre_nms_top_k to -inf
        items = dim(sc, 2)
        _, best = node("TopK", sc, node("Min", items, i64([pre_nms_top_k])), outputs=2, axis=2,
                       largest=1, sorted=1)
        zeros = node("ConstantOfShape", node("Shape", sc), value=np.array([0], np.int64))
        ones = node("ConstantOfShape", node("Shape", best), value=np.array([1], np.int64))
        chosen = node("Cast", node("ScatterElements", zeros, best, ones, axis=2),
                      to=_ONNX_BOOL)
        sc = node("Where", chosen, sc, f32(float("-inf")))
    selected = node("NonMaxSuppression", bx, sc, i64([cap]), f32([thr]), f32([score_thr]))
    p, q, n = [node("Gather", selected, i64(i), axis=1) for i in range(3)]
    if class_agnostic:
        image, position = p, n
    elif box_rank == 4:
        image, position = node("Div", p, c), node("Add", node("Mul", node("Mod", p, c), m), n)
    else:
        image, position = p, node("Add", node("Mul", q, m), n)
    dense = node("ConstantOfShape", node("Concat", b, cm, axis=0),
                 value=np.array([float("-inf")], np.float32))
    at = node("Concat", unsqueeze(image, 1), unsqueeze(position, 1), axis=1)
    dense = node("ScatterND", dense, at, node("GatherND", sc, selected))
    k = node("Min", cm, i64([max_per_image]))
    best_scores, best = node("TopK", dense, k, outputs=2, axis=1, largest=1, sorted=1)
    # Past the selections: index C * M (a zero score appended to each row),
    # and the rows padded with it to max_per_image.
    best = node("Where", node("Greater", best_scores, f32(float("-inf"))), best, cm)
    pads = node("Concat", i64([0, 0, 0]), node("Sub", i64([max_per_image]), k), axis=0)
    best = node("Pad", best, pads, node("Squeeze", cm, i64([0])), mode="constant")
    kept = node("Less", best, cm)
    per_row = node("Max", m, i64([1]))  # M = 0: nothing kept, and no division by 0
    keep = node("Where", kept, node("Mod", best, per_row), i64(-1))
    labels = node("Where", kept, node("Div", best, per_row), i64(-1))
    zero = node("Cast", node("ConstantOfShape", node("Concat", b, i64([1]), axis=0),
                             value=np.array([0], np.float32)), to=score_type)
    flat = reshape(scores, b, cm)
    scores_out = node("GatherElements", node("Concat", flat, zero, axis=1), best, axis=1)
    num = node("ReduceSum", node("Cast", kept, to=_ONNX_INT64), i64([1]), keepdims=0)
    return keep, labels, scores_out, num

# =============================================== TorchScript-based exporter


def _ts_const(g, value, dtype=None):
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


def _ts_opset(g):
    opset = getattr(g, "opset", None)
    if opset is None:  # torch 1.13's GraphContext has it; older ones a global
        from torch.onnx import symbolic_helper

        opset = symbolic_helper.GLOBALS.export_onnx_opset_version
    return opset


def _ts_unsqueeze(g, x, axes):
    if _ts_opset(g) >= 13:
        return g.op("Unsqueeze", x, _ts_const(g, list(axes)))
    return g.op("Unsqueeze", x, axes_i=list(axes))


def _ts_squeeze(g, x, axes):
    if _ts_opset(g) >= 13:
        return g.op("Squeeze", x, _ts_const(g, list(axes)))
    return g.op("Squeeze", x, axes_i=list(axes))


def _ts_onnx_type(v, default=_ONNX_FLOAT):
    try:
        scalar = v.type().scalarType()
    except RuntimeError:  # not a tensor type
        scalar = None
    return _ONNX_TYPES.get(scalar, default)


def _ts_float_const(g, value, like):
    """A scalar constant of the float dtype of `like`."""
    return _ts_const(g, value, _torch_float_type(_ts_onnx_type(like)))


def _ts_roi_columns(g, rois):
    """[K, 5] rois to (coordinates [K, 4], batch indices [K] int64)."""
    coords = g.op("Gather", rois, _ts_const(g, [1, 2, 3, 4]), axis_i=1)
    batch = g.op("Cast", g.op("Gather", rois, _ts_const(g, 0), axis_i=1), to_i=_ONNX_INT64)
    return coords, batch


def _ts_roi_align_node(g, input, rois, spatial_scale, ph, pw, sampling_ratio, aligned, op):
    mode = _coordinate_mode(op, aligned, _ts_opset(g))
    coords, batch = _ts_roi_columns(g, rois)
    attrs = dict(spatial_scale_f=spatial_scale, output_height_i=ph, output_width_i=pw,
                 sampling_ratio_i=_sampling_ratio(sampling_ratio), mode_s="avg")
    if mode is not None:
        attrs["coordinate_transformation_mode_s"] = mode
    return g.op("RoiAlign", input, coords, batch, **attrs)


def _ts_roi_align(g, input, rois, spatial_scale, ph, pw, sampling_ratio, aligned):
    return _ts_roi_align_node(g, input, rois, spatial_scale, ph, pw, sampling_ratio, aligned,
                              "roi_align")


def _ts_roi_pool(g, input, rois, spatial_scale, ph, pw):
    onnx_type = _ts_onnx_type(input)
    if onnx_type == _ONNX_DOUBLE:  # no float64 MaxRoiPool kernel in onnxruntime
        out = g.op("MaxRoiPool", g.op("Cast", input, to_i=_ONNX_FLOAT),
                   g.op("Cast", rois, to_i=_ONNX_FLOAT), pooled_shape_i=[ph, pw],
                   spatial_scale_f=spatial_scale)
        out = g.op("Cast", out, to_i=_ONNX_DOUBLE)
    else:
        out = g.op("MaxRoiPool", input, rois, pooled_shape_i=[ph, pw],
                   spatial_scale_f=spatial_scale)
    return out, None  # argmax: no ONNX equivalent; a model that uses it does not export


def _ts_emit(g):
    """The TorchScript exporter's _Emit: g.op, attribute names suffixed by
    their type (_i, _f, _s, _t)."""
    suffix = {int: "i", bool: "i", float: "f", str: "s"}

    def node(op_type, *inputs, outputs=1, **attrs):
        import numpy as np

        named = {}
        for k, v in attrs.items():
            if isinstance(v, np.ndarray):
                named[k + "_t"] = torch.from_numpy(v)
            elif isinstance(v, (list, tuple)):
                named[k + "_" + suffix[type(v[0])]] = list(v)
            else:
                named[k + "_" + suffix[type(v)]] = v
        return g.op(op_type, *inputs, outputs=outputs, **named)

    def const(array):
        return g.op("Constant", value_t=torch.from_numpy(array))

    return _Emit(node, const, _ts_opset(g))


def _ts_nms_kept(g, boxes, scores, iou_threshold):
    return _nms_kept_graph(_ts_emit(g), boxes, scores, iou_threshold)


def _ts_batched_nms_kept(g, boxes, scores, idxs, iou_threshold):
    return _batched_nms_kept_graph(_ts_emit(g), boxes, scores, idxs, iou_threshold)


def _ts_nms(g, boxes, scores, iou_threshold):
    e = _ts_emit(g)
    return _padded_graph(e, _nms_kept_graph(e, boxes, scores, iou_threshold), boxes)


def _ts_batched_nms(g, boxes, scores, idxs, iou_threshold):
    e = _ts_emit(g)
    return _padded_graph(e, _batched_nms_kept_graph(e, boxes, scores, idxs, iou_threshold), boxes)


def _ts_optional_float(value, what):
    """A float? argument's value (parsed as a graph value): None or a float."""
    from torch.onnx import symbolic_helper

    if symbolic_helper._is_none(value):
        return None
    return float(symbolic_helper._get_const(value, "f", what))


def _ts_onnx_nms(g, boxes, scores, max_out, iou_threshold, score_threshold, center_point_box):
    return _onnx_nms_graph(_ts_emit(g), boxes, scores, max_out, iou_threshold,
                           _ts_optional_float(score_threshold, "score_threshold"),
                           center_point_box)


def _ts_batched_nms_padded(g, boxes, scores, iou_threshold, score_threshold, max_per_class,
                           max_per_image, box_format, class_agnostic, pre_nms_top_k):
    from torch.onnx import symbolic_helper

    if _ts_opset(g) < 14:
        raise VisionOpsValueError("batched_nms_padded: ONNX export needs opset 14 or later "
                                  "(Reshape's allowzero), got opset %d" % _ts_opset(g))
    return _padded_nms_graph(_ts_emit(g), boxes, scores, symbolic_helper._get_tensor_rank(boxes),
                             _ts_onnx_type(scores), iou_threshold,
                             _ts_optional_float(score_threshold, "score_threshold"),
                             max_per_class, max_per_image, box_format, class_agnostic,
                             pre_nms_top_k)


def _ts_multi_scale_roi_align(g, features, rois, scales, ph, pw, sampling_ratio,
                              canonical_scale, canonical_level, aligned):
    from torch.onnx import symbolic_helper

    op = "multi_scale_roi_align"
    features = symbolic_helper._unpack_list(features)
    k_min, num_levels = _pyramid_levels(op, scales)
    levels = _ts_levels(g, rois, canonical_scale, canonical_level, k_min, num_levels)
    shape = g.op("Concat", g.op("Gather", g.op("Shape", rois), _ts_const(g, [0])),
                 g.op("Gather", g.op("Shape", features[0]), _ts_const(g, [1])),
                 _ts_const(g, [ph, pw]), axis_i=0)
    onnx_type = _ts_onnx_type(features[0])
    zero = torch.zeros(1, dtype=_torch_float_type(onnx_type))
    result = g.op("ConstantOfShape", shape, value_t=zero)
    for level, feature in enumerate(features):
        where = g.op("NonZero", g.op("Equal", levels, _ts_const(g, level)))  # [1, n]
        picked = g.op("Gather", rois, _ts_squeeze(g, where, [0]), axis_i=0)
        pooled = _ts_roi_align_node(g, feature, picked, scales[level], ph, pw, sampling_ratio,
                                    aligned, op)
        result = g.op("ScatterND", result, g.op("Transpose", where, perm_i=[1, 0]), pooled)
    return result


def _ts_levels(g, rois, canonical_scale, canonical_level, k_min, num_levels):
    """torchvision's LevelMapper in the rois' precision: [K] int64 level
    indices, -1 for a NaN level (negative area: a zero row, as eagerly)."""
    def c(v):
        return _ts_float_const(g, v, rois)

    col = [g.op("Gather", rois, _ts_const(g, i), axis_i=1) for i in range(1, 5)]
    area = g.op("Mul", g.op("Sub", col[2], col[0]), g.op("Sub", col[3], col[1]))
    log2 = g.op("Div", g.op("Log", g.op("Div", g.op("Sqrt", area), c(float(canonical_scale)))),
                c(math.log(2.0)))
    lvl = g.op("Floor", g.op("Add", g.op("Add", c(float(canonical_level)), log2), c(1e-6)))
    clamped = g.op("Min", g.op("Max", lvl, c(float(k_min))), c(float(k_min + num_levels - 1)))
    index = g.op("Cast", g.op("Sub", clamped, c(float(k_min))), to_i=_ONNX_INT64)
    return g.op("Where", g.op("IsNaN", lvl), _ts_const(g, -1), index)


def _ts_iou(kind):
    def symbolic(g, boxes1, boxes2, eps=0.0):
        # float64 stays; everything else in float32, as the C op's output
        onnx_type = _ONNX_DOUBLE if _ts_onnx_type(boxes1) == _ONNX_DOUBLE else _ONNX_FLOAT
        dtype = torch.float64 if onnx_type == _ONNX_DOUBLE else torch.float32

        def emit(op_type, *inputs):
            if op_type == "Gather":
                return g.op("Gather", inputs[0], _ts_const(g, [inputs[1]]), axis_i=1)
            if op_type == "Transpose":
                return g.op("Transpose", inputs[0], perm_i=[1, 0])
            return g.op(op_type, *inputs)

        def atan(x):
            if onnx_type == _ONNX_FLOAT:
                return g.op("Atan", x)
            return g.op("Cast", g.op("Atan", g.op("Cast", x, to_i=_ONNX_FLOAT)), to_i=onnx_type)

        return _pairwise_iou(kind, emit, lambda v: _ts_const(g, v, dtype), atan,
                             g.op("Cast", boxes1, to_i=onnx_type),
                             g.op("Cast", boxes2, to_i=onnx_type), eps)

    symbolic.__name__ = "visionops_%s_onnx" % kind
    return symbolic


def _ts_deform_conv2d(g, input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w,
                      dil_h, dil_w, groups, offset_groups, use_mask):
    from torch.onnx import symbolic_helper

    if _ts_opset(g) < 19:  # DeformConv is opset 19: the visionops node below it
        return _ts_custom(_core.SCHEMAS["deform_conv2d"])(
            g, input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
            groups, offset_groups, use_mask)
    inputs = [input, weight, offset, bias]
    if use_mask and not symbolic_helper._is_none(mask):
        inputs.append(mask)
    return g.op("DeformConv", *inputs, dilations_i=[dil_h, dil_w], strides_i=[stride_h, stride_w],
                pads_i=[pad_h, pad_w, pad_h, pad_w], group_i=groups,
                offset_group_i=offset_groups)


# parse_args descriptors of the schemas' argument types
_TS_ARG = {"Tensor": "v", "Tensor?": "v", "Tensor[]": "v", "float": "f", "float?": "v", "int": "i",
           "SymInt": "i", "bool": "b", "float[]": "fs", "int[]": "is"}
_TS_ATTR_SUFFIX = {"float": "f", "int": "i", "SymInt": "i", "bool": "i", "float[]": "f",
                   "int[]": "i"}


@functools.lru_cache(maxsize=None)  # one symbolic per op: define_generated compiles it
def _ts_custom(schema):
    """The symbolic of an op with no standard ONNX operator: one node of the
    custom domain."""
    def symbolic(g, *args):
        from torch.onnx import symbolic_helper

        _warn_custom(schema.name)
        attrs = {}
        values = []
        for arg, value in zip(schema.args, args):
            if arg.type == "Tensor[]":
                value = symbolic_helper._unpack_list(value)
            elif arg.type == "Tensor?" and symbolic_helper._is_none(value):
                value = None
            values.append(value)
        inputs = _node_inputs(schema, values)
        while inputs and inputs[-1] is None:  # absent trailing inputs are left out
            inputs.pop()
        inputs = [symbolic_helper._optional_input_placeholder_tensor(g) if v is None else v
                  for v in inputs]
        for arg, value in zip(schema.args, args):
            if arg.type.startswith("Tensor"):
                continue
            elif arg.type == "float?":  # an absent value is an absent attribute
                value = _ts_optional_float(value, arg.name)
                if value is not None:
                    attrs["%s_f" % arg.name] = value
            else:
                attrs["%s_%s" % (arg.name, _TS_ATTR_SUFFIX[arg.type])] = (
                    int(value) if arg.type == "bool" else value)
        outs = g.op("%s::%s" % (CUSTOM_DOMAIN, schema.name), *inputs, outputs=len(schema.returns),
                    **attrs)
        node = getattr(g, "original_node", None)
        if node is not None and not schema.returns_list:
            for out, original in zip(outs if len(schema.returns) > 1 else [outs],
                                     node.outputs()):
                out.setType(original.type())
        return outs

    # parse_args pairs its descriptors with the function's parameter names
    # and drops the arguments past them, so the symbolic has the schema's
    # parameters (`*args` alone kept only the first tensor: every other input
    # and every attribute of the node were lost).
    names = ", ".join(["g"] + [a.name for a in schema.args])
    name = "visionops_%s_onnx" % schema.name
    source = "def %s(%s):\n    return _symbolic(%s)\n" % (name, names, names)
    return _core.define_generated(name, source, {"_symbolic": symbolic}, "ONNX symbolic")


def _ts_cut_kept(name, fixed):
    """The symbolic of a *_kept op with no standard ONNX operator (soft_nms_kept):
    the fixed op's custom-domain node, then every output but the count
    sliced to the count (standard Slice), so the model keeps the
    data-dependent size."""
    node = _ts_custom(_core.SCHEMAS[fixed])

    def symbolic(g, *args):
        *cut, num = node(g, *args)
        end = _ts_unsqueeze(g, num, [0])
        outs = [g.op("Slice", o, _ts_const(g, [0]), end, _ts_const(g, [0])) for o in cut]
        return outs[0] if len(outs) == 1 else tuple(outs)

    names = ", ".join(["g"] + [a.name for a in _core.SCHEMAS[fixed].args])
    fn = "visionops_%s_onnx" % name
    source = "def %s(%s):\n    return _symbolic(%s)\n" % (fn, names, names)
    return _core.define_generated(fn, source, {"_symbolic": symbolic}, "ONNX symbolic")


def _parsed(fn, types):
    from torch.onnx import symbolic_helper

    return symbolic_helper.parse_args(*[_TS_ARG[t] for t in types])(fn)


def _ts_symbolics():
    """[(op name, opset, symbolic)] for register_custom_op_symbolic."""
    from .torch import NMS_KEPT

    s = dict(_core.SCHEMAS)
    s.update((name, _core.Schema(text, None)) for name, (text, _) in NMS_KEPT.items())
    types = {name: [a.type for a in schema.args] for name, schema in s.items()}
    # From opset 11 on (each symbolic checks what needs a later opset).
    table = [
        ("roi_align", 11, _ts_roi_align), ("roi_pool", 11, _ts_roi_pool),
        ("nms_kept", 11, _ts_nms_kept), ("batched_nms_kept", 11, _ts_batched_nms_kept),
        ("nms", 11, _ts_nms), ("batched_nms", 11, _ts_batched_nms),
        ("onnx_nms", 11, _ts_onnx_nms),
        ("batched_nms_padded", 11, _ts_batched_nms_padded),
        ("multi_scale_roi_align", 11, _ts_multi_scale_roi_align),
        ("deform_conv2d", 11, _ts_deform_conv2d),
    ] + [(name, 11, _ts_iou(name)) for name in IOU_OPS]
    table += [(name, 11, _ts_cut_kept(name, fixed)) for name, (_, fixed) in NMS_KEPT.items()
              if fixed in custom_ops()]
    out = [(name, opset, _parsed(fn, types[name])) for name, opset, fn in table]
    # Opset 1: any default opset; and the exporter looks the custom-domain
    # nodes it finds up again at the domain's version (custom_opsets, 1 if unset).
    for name in custom_ops() + ["deform_conv2d"]:  # deform_conv2d: its node below opset 19
        out.append((name, 1, _parsed(_ts_custom(s[name]), types[name])))
    return out


def register_torchscript_symbolics():
    """Registers the symbolic functions of all visionops ops with the
    TorchScript-based exporter (done when visionops.torch is imported);
    nothing where torch has no torch.onnx."""
    try:
        import torch.onnx
        from torch.onnx import symbolic_helper  # noqa: F401
    except ImportError:
        return
    for name, opset, fn in _ts_symbolics():
        torch.onnx.register_custom_op_symbolic("%s::%s" % (CUSTOM_DOMAIN, name), fn, opset)


# =================================================== dynamo-based exporter


def custom_translation_table():
    """{torch.ops.visionops.<op>.default: ONNX translation} for
    ``torch.onnx.export(..., dynamo=True, custom_translation_table=...)``,
    every visionops op included. Needs onnxscript (as torch's dynamo exporter
    does). Merge your own entries into it if you have some:
    ``{**visionops.onnx.custom_translation_table(), my_op: my_translation}``."""
    global _DYNAMO_TABLE
    if _DYNAMO_TABLE is None:
        _DYNAMO_TABLE = _dynamo_table()
    return dict(_DYNAMO_TABLE)


_DYNAMO_TABLE = None


def _dynamo_table():
    import onnxscript
    from onnxscript import opset18 as op
    from onnxscript import opset19

    import numpy as np
    import onnx_ir

    float32, int64 = onnxscript.FLOAT.dtype, onnxscript.INT64.dtype

    def scalar(value, dtype):
        """A 0-d constant of an ir.DataType (float64 keeps its digits)."""
        return op.Constant(value=onnx_ir.tensor(np.array(value, dtype=dtype.numpy())))

    def roi_columns(rois):
        return op.Gather(rois, [1, 2, 3, 4], axis=1), op.Cast(op.Gather(rois, 0, axis=1), to=int64)

    def roi_align_node(input, rois, spatial_scale, ph, pw, sampling_ratio, aligned, name):
        coords, batch = roi_columns(rois)
        return op.RoiAlign(input, coords, batch,
                           coordinate_transformation_mode=_coordinate_mode(name, aligned, 18),
                           mode="avg", spatial_scale=spatial_scale, output_height=ph,
                           output_width=pw, sampling_ratio=_sampling_ratio(sampling_ratio))

    def roi_align(input, rois, spatial_scale: float, pooled_height: int, pooled_width: int,
                  sampling_ratio: int, aligned: bool):
        return roi_align_node(input, rois, spatial_scale, pooled_height, pooled_width,
                              sampling_ratio, aligned, "roi_align")

    def roi_pool(input, rois, spatial_scale: float, pooled_height: int, pooled_width: int):
        double = input.dtype == onnxscript.DOUBLE.dtype
        x = op.Cast(input, to=float32) if double else input
        r = op.Cast(rois, to=float32) if double else rois
        out = op.MaxRoiPool(x, r, pooled_shape=[pooled_height, pooled_width],
                            spatial_scale=spatial_scale)
        out = op.Cast(out, to=input.dtype) if double else out
        # argmax has no ONNX equivalent: a custom-domain node, which the
        # exporter's optimizer drops when nothing uses it.
        argmax = custom_node("roi_pool_argmax", [input, rois],
                             dict(spatial_scale=spatial_scale, pooled_height=pooled_height,
                                  pooled_width=pooled_width), 1, warn=False)
        return out, argmax

    def node(op_type, *inputs, outputs=1, **attrs):
        del outputs  # onnxscript returns as many as the schema has
        attrs = {k: onnx_ir.tensor(v) if isinstance(v, np.ndarray) else v
                 for k, v in attrs.items()}
        return getattr(op, op_type)(*inputs, **attrs)

    e = _Emit(node, lambda a: op.Constant(value=onnx_ir.tensor(a)), 18)

    def nms_kept(boxes, scores, iou_threshold: float):
        return _nms_kept_graph(e, boxes, scores, iou_threshold)

    def batched_nms_kept(boxes, scores, idxs, iou_threshold: float):
        return _batched_nms_kept_graph(e, boxes, scores, idxs, iou_threshold)

    def nms(boxes, scores, iou_threshold: float):
        return _padded_graph(e, _nms_kept_graph(e, boxes, scores, iou_threshold), boxes)

    def batched_nms(boxes, scores, idxs, iou_threshold: float):
        return _padded_graph(e, _batched_nms_kept_graph(e, boxes, scores, idxs, iou_threshold),
                             boxes)

    def onnx_nms(boxes, scores, max_output_boxes_per_class: int = 0, iou_threshold: float = 0.0,
                 score_threshold: Optional[float] = None, center_point_box: int = 0):
        return _onnx_nms_graph(e, boxes, scores, max_output_boxes_per_class, iou_threshold,
                               score_threshold, center_point_box)

    def batched_nms_padded(boxes, scores, iou_threshold: float,
                           score_threshold: Optional[float] = None, max_per_class: int = -1,
                           max_per_image: int = 100, box_format: int = 0,
                           class_agnostic: bool = False, pre_nms_top_k: int = -1):
        return _padded_nms_graph(e, boxes, scores, len(boxes.shape), int(scores.dtype),
                                 iou_threshold, score_threshold, max_per_class, max_per_image,
                                 box_format, class_agnostic, pre_nms_top_k)

    def levels_of(rois, canonical_scale, canonical_level, k_min, num_levels):
        def c(v):
            return scalar(v, rois.dtype)

        col = [op.Gather(rois, i, axis=1) for i in range(1, 5)]
        area = op.Mul(op.Sub(col[2], col[0]), op.Sub(col[3], col[1]))
        log2 = op.Div(op.Log(op.Div(op.Sqrt(area), c(float(canonical_scale)))),
                      c(math.log(2.0)))
        lvl = op.Floor(op.Add(op.Add(c(float(canonical_level)), log2), c(1e-6)))
        clamped = op.Min(op.Max(lvl, c(float(k_min))), c(float(k_min + num_levels - 1)))
        index = op.Cast(op.Sub(clamped, c(float(k_min))), to=int64)
        return op.Where(op.IsNaN(lvl), op.Constant(value_int=-1), index)

    def multi_scale_roi_align(features, rois, scales: Sequence[float], pooled_height: int,
                              pooled_width: int, sampling_ratio: int, canonical_scale: int = 224,
                              canonical_level: int = 4, aligned: bool = False):
        name = "multi_scale_roi_align"
        k_min, num_levels = _pyramid_levels(name, scales)
        levels = levels_of(rois, canonical_scale, canonical_level, k_min, num_levels)
        shape = op.Concat(op.Gather(op.Shape(rois), [0]), op.Gather(op.Shape(features[0]), [1]),
                          op.Constant(value_ints=[pooled_height, pooled_width]), axis=0)
        result = op.CastLike(op.ConstantOfShape(shape), features[0])
        for level, feature in enumerate(features):
            where = op.NonZero(op.Equal(levels, op.Constant(value_int=level)))
            picked = op.Gather(rois, op.Squeeze(where, [0]), axis=0)
            pooled = roi_align_node(feature, picked, scales[level], pooled_height, pooled_width,
                                    sampling_ratio, aligned, name)
            result = op.ScatterND(result, op.Transpose(where, perm=[1, 0]), pooled)
        return result

    def deform_conv2d(input, weight, offset, mask, bias, stride_h: int, stride_w: int,
                      pad_h: int, pad_w: int, dilation_h: int, dilation_w: int, groups: int,
                      offset_groups: int, use_mask: bool):
        if _dynamo_opset() < 19:  # DeformConv is opset 19: the visionops node below it
            return deform_conv2d_node(
                input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dilation_h,
                dilation_w, groups, offset_groups, use_mask)
        return opset19.DeformConv(input, weight, offset, bias, mask if use_mask else None,
                                  dilations=[dilation_h, dilation_w],
                                  strides=[stride_h, stride_w],
                                  pads=[pad_h, pad_w, pad_h, pad_w], group=groups,
                                  offset_group=offset_groups)

    def iou(kind):
        def emit(op_type, *inputs):
            if op_type == "Gather":
                return op.Gather(inputs[0], [inputs[1]], axis=1)
            if op_type == "Transpose":
                return op.Transpose(inputs[0], perm=[1, 0])
            return getattr(op, op_type)(*inputs)

        # The FX node leaves out an eps at its default: take the schema's.
        schema_args = _core.SCHEMAS[kind].args

        def translation(boxes1, boxes2,
                        eps: float = schema_args[2].default if len(schema_args) > 2 else 0.0):
            dtype = onnxscript.DOUBLE.dtype if boxes1.dtype == onnxscript.DOUBLE.dtype \
                else float32
            b1, b2 = op.Cast(boxes1, to=dtype), op.Cast(boxes2, to=dtype)
            def atan(x):
                if dtype == float32:
                    return op.Atan(x)
                return op.Cast(op.Atan(op.Cast(x, to=float32)), to=dtype)

            return _pairwise_iou(kind, emit, lambda v: scalar(v, dtype), atan, b1, b2, eps)

        translation.__name__ = "visionops_%s_onnx" % kind
        return translation

    def custom_node(name, inputs, attrs, num_outputs, warn=True):
        if warn:
            _warn_custom(name)
        schema = _custom_schema(name, len(inputs), attrs, num_outputs)
        op_ = onnxscript.values.Op(onnxscript.values.Opset(CUSTOM_DOMAIN, CUSTOM_DOMAIN_VERSION),
                                   name, schema)
        attrs = {k: int(v) if isinstance(v, bool) else v for k, v in attrs.items()}
        return op_(*inputs, **attrs)

    def custom(schema):
        def translation(*args):
            attrs = {}
            inputs = _node_inputs(schema, args)
            for arg, value in zip(schema.args, args):
                if arg.type.startswith("Tensor"):
                    continue
                elif value is not None:  # an absent float? is an absent attribute
                    attrs[arg.name] = list(value) if arg.type.endswith("[]") else value
            return custom_node(schema.name, inputs, attrs, len(schema.returns))

        params = [inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    annotation=_PY_ANNOTATION.get(a.type, inspect.Parameter.empty))
                  for a in schema.args]
        translation.__signature__ = inspect.Signature(params)
        translation.__annotations__ = {p.name: p.annotation for p in params
                                       if p.annotation is not inspect.Parameter.empty}
        translation.__name__ = "visionops_%s_onnx" % schema.name
        return translation

    deform_conv2d_node = custom(_core.SCHEMAS["deform_conv2d"])  # below opset 19

    def cut_kept(fixed):
        """A *_kept op with no standard ONNX operator: the fixed op's
        custom-domain node, every output but the count sliced to it."""
        base = custom(_core.SCHEMAS[fixed])

        def translation(*args):
            *cut, num = base(*args)
            end = op.Unsqueeze(num, [0])
            outs = [op.Slice(o, [0], end, [0]) for o in cut]
            return outs[0] if len(outs) == 1 else tuple(outs)

        translation.__signature__ = base.__signature__
        translation.__annotations__ = base.__annotations__
        translation.__name__ = base.__name__.replace("_onnx", "_kept_onnx")
        return translation

    translations = dict(roi_align=roi_align, roi_pool=roi_pool, nms=nms,
                        batched_nms=batched_nms, nms_kept=nms_kept,
                        batched_nms_kept=batched_nms_kept, onnx_nms=onnx_nms,
                        batched_nms_padded=batched_nms_padded,
                        multi_scale_roi_align=multi_scale_roi_align, deform_conv2d=deform_conv2d)
    for name in IOU_OPS:
        translations[name] = iou(name)
    for name in custom_ops():
        translations[name] = custom(_core.SCHEMAS[name])
    from .torch import NMS_KEPT

    for name, (_, fixed) in NMS_KEPT.items():
        if fixed in custom_ops():
            translations[name] = cut_kept(fixed)
    return {getattr(torch.ops.visionops, name).default: fn for name, fn in translations.items()}


def _dynamo_opset():
    """The default-domain opset torch's dynamo exporter is building the model
    for (its op recorder's; 19 where it cannot be read, the first opset
    with DeformConv, as before this check existed)."""
    import onnxscript

    recorder = onnxscript.evaluator.default()
    version = getattr(getattr(recorder, "opset", None), "version", None)
    return version if isinstance(version, int) else 19


_PY_ANNOTATION = {"float": float, "float?": Optional[float], "int": int, "SymInt": int,
                  "bool": bool,
                  "float[]": Sequence[float], "int[]": Sequence[int]}


def _custom_schema(name, num_inputs, attrs, num_outputs):
    """An onnx OpSchema for a custom-domain node (onnxscript builds nodes from
    schemas): any tensor types, the attributes of `attrs` (name: value)."""
    from onnx import defs

    def attr_type(value):
        if isinstance(value, (list, tuple)):
            return defs.OpSchema.AttrType.FLOATS if any(isinstance(v, float) for v in value) \
                else defs.OpSchema.AttrType.INTS
        return defs.OpSchema.AttrType.FLOAT if isinstance(value, float) \
            else defs.OpSchema.AttrType.INT

    all_types = ["tensor(%s)" % t for t in ("float", "double", "float16", "bfloat16", "int64",
                                             "int32", "uint8", "bool")]
    inputs = [defs.OpSchema.FormalParameter("input%d" % i, "T%d" % i) for i in range(num_inputs)]
    outputs = [defs.OpSchema.FormalParameter("output%d" % i, "O%d" % i)
               for i in range(num_outputs)]
    constraints = ([("T%d" % i, all_types, "") for i in range(num_inputs)] +
                   [("O%d" % i, all_types, "") for i in range(num_outputs)])
    return defs.OpSchema(name, CUSTOM_DOMAIN, CUSTOM_DOMAIN_VERSION, inputs=inputs,
                         outputs=outputs, type_constraints=constraints,
                         attributes=[defs.OpSchema.Attribute(k, attr_type(v), "")
                                     for k, v in sorted(attrs.items())])
