"""The torch path of visionops' public functions, typed in TorchScript's
subset of Python with torchvision's signatures (boxes as Tensor or
List[Tensor], output_size as BroadcastingList2[int], the same defaults).
The public functions in ops.py call these on torch tensors; torch.jit.script
compiles them in place of the public functions (see ops._scriptable), lazily,
the first time a script needs one; torch.compile traces them. They call the
registered operators through visionops.torch.ops (_ops here): in a script and
under torch.compile that is torch.ops.visionops.*; in eager calls, the op's
kernel directly when torch's dispatcher would do nothing else. The twin of an op
whose torchvision signature is its schema (ops._SCHEMA_OPS) is not written
here but generated from the schema (schema_twin)."""
from typing import Dict, List, Optional, Tuple, Union

import torch
from torch import Tensor
from torch.jit.annotations import BroadcastingList2

from .torch import ops as _ops  # torch.ops.visionops.*, or their kernels directly
from ._checks import (box_area_format, box_convert_formats, box_format, box_format_size,
                      box_width, broadcast_leading, check_box_area_shape, check_box_batch,
                      check_box_coordinates, check_box_list, check_features,
                      check_features_found, check_image_shapes, check_level, check_rois,
                      deform_groups, log2_round_float32, nms_padded_box_format, pair,
                      rotated_iou_mode, soft_nms_method)
from ._C import VisionOpsValueError
from ._core import NO_DEFAULT, OMIT_INDEX_OUTPUT, SCHEMAS, define_generated

# ---------------------------------------------------------------- box ops


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    return _ops.nms_kept(boxes, scores, float(iou_threshold))


def _int64(t: Tensor) -> Tensor:
    """Integer tensors of another width widened to int64; anything else as is
    (the library reports a wrong dtype)."""
    if not t.is_floating_point() and not t.is_complex() and t.dtype != torch.int64 \
            and t.dtype != torch.bool:
        return t.to(torch.int64)
    return t


def has_no_elements(t: Tensor) -> bool:
    """t is empty, without guarding on a symbolic size: a count only known
    when the program runs (boxes that survived a score threshold, under
    torch.export) is taken as non-empty, which the ops handle as well."""
    if torch.jit.is_scripting():
        return t.numel() == 0
    return _has_no_elements_traced(t)


@torch.jit.unused
def _has_no_elements_traced(t: Tensor) -> bool:
    n = t.numel()  # an int, a SymInt, or under torch.jit.trace a Tensor
    if isinstance(n, getattr(torch, "SymInt", ())):  # torch 1.13 has no SymInt
        from torch.fx.experimental.symbolic_shapes import guard_or_false

        return guard_or_false(n == 0)
    return bool(n == 0)


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    if has_no_elements(boxes):
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    return _ops.batched_nms_kept(boxes, scores, _int64(idxs), float(iou_threshold))


def nms_rotated(boxes: Tensor, scores: Tensor, iou_threshold: float, clockwise: bool = False,
                radians: bool = False) -> Tensor:
    return _ops.nms_rotated_kept(boxes, scores, float(iou_threshold),
                                 bool(clockwise), bool(radians))


def batched_nms_rotated(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float,
                        clockwise: bool = False, radians: bool = False) -> Tensor:
    return _ops.batched_nms_rotated_kept(boxes, scores, _int64(idxs),
                                         float(iou_threshold), bool(clockwise),
                                         bool(radians))


def batched_nms_padded(boxes: Tensor, scores: Tensor, iou_threshold: float,
                       score_threshold: Optional[float] = None, max_per_class: int = -1,
                       max_per_image: int = 100, box_format: str = "xyxy",
                       class_agnostic: bool = False,
                       pre_nms_top_k: int = -1) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    fmt = nms_padded_box_format(box_format)
    out = _ops.batched_nms_padded(boxes, scores, float(iou_threshold),
                                  score_threshold, max_per_class, max_per_image,
                                  fmt, class_agnostic, pre_nms_top_k)
    return out[0], out[1], out[2], out[3]


def onnx_nms(boxes: Tensor, scores: Tensor, max_output_boxes_per_class: int = 0,
             iou_threshold: float = 0.0, score_threshold: Optional[float] = None,
             center_point_box: int = 0, exact_shape: bool = False) -> Tuple[Tensor, Tensor]:
    selected, num_selected = _ops.onnx_nms(
        boxes, scores, max_output_boxes_per_class, float(iou_threshold), score_threshold,
        center_point_box)
    if exact_shape:
        selected = selected[:int(num_selected)]  # the one host sync, on request
    return selected, num_selected


def _soft_nms_padded_in_script(op: str, padded: bool):
    """padded=True, whose three outputs a script cannot type beside two, is
    the op itself there."""
    if padded:
        raise VisionOpsValueError("%s: padded=True returns (dets, keep, num_kept): in a script call "
                                  "torch.ops.visionops.%s instead" % (op, op))


def soft_nms(boxes: Tensor, scores: Tensor, iou_threshold: float = 0.3, sigma: float = 0.5,
             min_score: float = 1e-3, method: Union[str, int] = "linear", offset: float = 0,
             padded: bool = False) -> Tuple[Tensor, Tensor]:
    _soft_nms_padded_in_script("soft_nms", padded)
    return _ops.soft_nms_kept(
        boxes, scores, float(iou_threshold), float(sigma), float(min_score),
        soft_nms_method("soft_nms", method), float(offset))


def batched_soft_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float = 0.3,
                     sigma: float = 0.5, min_score: float = 1e-3,
                     method: Union[str, int] = "linear", offset: float = 0,
                     padded: bool = False) -> Tuple[Tensor, Tensor]:
    _soft_nms_padded_in_script("batched_soft_nms", padded)
    return _ops.batched_soft_nms_kept(
        boxes, scores, _int64(idxs), float(iou_threshold), float(sigma), float(min_score),
        soft_nms_method("batched_soft_nms", method), float(offset))


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """[..., K_in] boxes as [..., K_out]: the op on the boxes' rows."""
    i, o = box_convert_formats(in_fmt, out_fmt)
    shape = list(boxes.shape)
    check_box_coordinates("box_convert", in_fmt, shape)
    out = _ops.box_convert(boxes.reshape(-1, shape[-1]), i, o)
    return out.reshape(shape[:-1] + [box_format_size(o)])


def box_area(boxes: Tensor, fmt: str = "xyxy") -> Tensor:
    """Areas of [..., 4] boxes: the op on the rows; for the formats with a
    width and height, on the rows (0, 0, w, h), whose (w - 0) * (h - 0) is
    torchvision's w * h exactly (values, dtypes and gradients)."""
    fmt = box_area_format(fmt)
    shape = list(boxes.shape)
    check_box_area_shape(shape)
    rows = boxes.reshape(-1, 4)
    if fmt != "xyxy":
        rows = torch.cat([torch.zeros_like(rows[:, :2]), rows[:, 2:]], 1)
    return _ops.box_area(rows).reshape(shape[:-1])


def _iou_op(op: str, boxes1: Tensor, boxes2: Tensor, eps: float) -> Tensor:
    """One call of a 2-D IoU op."""
    if op == "box_iou_rotated":
        return _ops.box_iou_rotated(boxes1, boxes2, False, False, False)
    if op == "box_iou":
        return _ops.box_iou(boxes1, boxes2)
    if op == "generalized_box_iou":
        return _ops.generalized_box_iou(boxes1, boxes2)
    if op == "distance_box_iou":
        return _ops.distance_box_iou(boxes1, boxes2, eps)
    return _ops.complete_box_iou(boxes1, boxes2, eps)


def _pairwise(op: str, boxes1: Tensor, boxes2: Tensor, eps: float, width: int = 4) -> Tensor:
    """[..., N, width] x [..., M, width] -> [..., N, M] (leading dimensions
    broadcast): one call of the 2-D op per slice, stacked, so autograd flows
    as usual."""
    if boxes1.dim() == 2 and boxes2.dim() == 2:
        return _iou_op(op, boxes1, boxes2, eps)
    check_box_batch(op, "boxes1", list(boxes1.shape), width)
    check_box_batch(op, "boxes2", list(boxes2.shape), width)
    lead = broadcast_leading(op, list(boxes1.shape), list(boxes2.shape))
    n, m = boxes1.shape[-2], boxes2.shape[-2]
    b1 = boxes1.expand(lead + [n, width]).reshape(-1, n, width)
    b2 = boxes2.expand(lead + [m, width]).reshape(-1, m, width)
    if b1.shape[0] == 0:
        # No slice to call: the op still checks the dtypes on one empty pair.
        return _iou_op(op, b1.reshape(0, width), b2.reshape(0, width),
                       eps).reshape(lead + [n, m])
    outs = [_iou_op(op, b1[i], b2[i], eps) for i in range(b1.shape[0])]
    return torch.stack(outs, 0).reshape(lead + [n, m])


def _rotated_box_iou(boxes1: Tensor, boxes2: Tensor, fmt: str) -> Tensor:
    """box_iou of rotated boxes: [..., N, K] x [..., M, K] in fmt (K = 5 or
    8), as cxcywhr (box_convert), through box_iou_rotated per slice."""
    width = box_width(fmt)
    check_box_batch("box_iou", "boxes1", list(boxes1.shape), width)
    check_box_batch("box_iou", "boxes2", list(boxes2.shape), width)
    if fmt != "cxcywhr":
        boxes1 = box_convert(boxes1, fmt, "cxcywhr")
        boxes2 = box_convert(boxes2, fmt, "cxcywhr")
    return _pairwise("box_iou_rotated", boxes1, boxes2, 0.0, 5)


def box_iou(boxes1: Tensor, boxes2: Tensor, fmt: str = "xyxy") -> Tensor:
    fmt = box_format("box_iou", fmt)
    if box_width(fmt) != 4:
        return _rotated_box_iou(boxes1, boxes2, fmt)
    if fmt != "xyxy":
        check_box_batch("box_iou", "boxes1", list(boxes1.shape))
        check_box_batch("box_iou", "boxes2", list(boxes2.shape))
        boxes1, boxes2 = box_convert(boxes1, fmt, "xyxy"), box_convert(boxes2, fmt, "xyxy")
    return _pairwise("box_iou", boxes1, boxes2, 0.0)


def box_iou_rotated(boxes1: Tensor, boxes2: Tensor, mode: str = "iou", aligned: bool = False,
                    clockwise: bool = False, radians: bool = False) -> Tensor:
    iof = rotated_iou_mode("box_iou_rotated", mode)
    if aligned:
        return _ops.box_iou_rotated_aligned(boxes1, boxes2, iof, clockwise, radians)
    return _ops.box_iou_rotated(boxes1, boxes2, iof, clockwise, radians)


def generalized_box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    return _pairwise("generalized_box_iou", boxes1, boxes2, 0.0)


def distance_box_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
    return _pairwise("distance_box_iou", boxes1, boxes2, float(eps))


def complete_box_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
    return _pairwise("complete_box_iou", boxes1, boxes2, float(eps))


# ---------------------------------------------------------------- RoI ops


def _rois(op: str, boxes: Union[Tensor, List[Tensor]], box_len: int = 4) -> Tensor:
    """A [K, 5] rois tensor as is; a list of [L_i, 4] tensors (one per
    image) with the image index prepended ([K, 6] and [L_i, 5] for rotated
    boxes, box_len 5)."""
    if isinstance(boxes, torch.Tensor):
        check_rois(op, list(boxes.shape), box_len)
        return boxes
    check_box_list(op, [list(b.shape) for b in boxes], box_len)
    return torch.cat([torch.cat([torch.full_like(b[:, :1], i), b], dim=1)
                      for i, b in enumerate(boxes)], dim=0)


def roi_align(input: Tensor, boxes: Union[Tensor, List[Tensor]],
              output_size: BroadcastingList2[int], spatial_scale: float = 1.0,
              sampling_ratio: int = -1, aligned: bool = False) -> Tensor:
    ph, pw = pair("roi_align: output_size", output_size)
    return _ops.roi_align(input, _rois("roi_align", boxes), float(spatial_scale),
                          ph, pw, int(sampling_ratio), bool(aligned))


def roi_align_rotated(input: Tensor, rois: Union[Tensor, List[Tensor]],
                      output_size: BroadcastingList2[int], spatial_scale: float = 1.0,
                      sampling_ratio: int = -1, aligned: bool = True, clockwise: bool = False,
                      radians: bool = False) -> Tensor:
    op = "roi_align_rotated"
    ph, pw = pair("roi_align_rotated: output_size", output_size)
    return _ops.roi_align_rotated(input, _rois(op, rois, 5), float(spatial_scale),
                                  ph, pw, int(sampling_ratio), bool(aligned),
                                  bool(clockwise), bool(radians))


def roi_pool(input: Tensor, boxes: Union[Tensor, List[Tensor]],
             output_size: BroadcastingList2[int], spatial_scale: float = 1.0) -> Tensor:
    ph, pw = pair("roi_pool: output_size", output_size)
    rois = _rois("roi_pool", boxes)
    if torch.jit.is_scripting():
        out, _ = _ops.roi_pool(input, rois, float(spatial_scale), ph, pw)
        return out
    return _roi_pool_eager(input, rois, float(spatial_scale), ph, pw)


def ps_roi_align(input: Tensor, boxes: Union[Tensor, List[Tensor]],
                 output_size: BroadcastingList2[int], spatial_scale: float = 1.0,
                 sampling_ratio: int = -1) -> Tensor:
    ph, pw = pair("ps_roi_align: output_size", output_size)
    rois = _rois("ps_roi_align", boxes)
    if torch.jit.is_scripting():
        out, _ = _ops.ps_roi_align(input, rois, float(spatial_scale), ph, pw,
                                   int(sampling_ratio))
        return out
    return _ps_roi_align_eager(input, rois, float(spatial_scale), ph, pw, int(sampling_ratio))


def ps_roi_pool(input: Tensor, boxes: Union[Tensor, List[Tensor]],
                output_size: BroadcastingList2[int], spatial_scale: float = 1.0) -> Tensor:
    ph, pw = pair("ps_roi_pool: output_size", output_size)
    rois = _rois("ps_roi_pool", boxes)
    if torch.jit.is_scripting():
        out, _ = _ops.ps_roi_pool(input, rois, float(spatial_scale), ph, pw)
        return out
    return _ps_roi_pool_eager(input, rois, float(spatial_scale), ph, pw)


# Outside a script: the op's pooled values alone. Its int32 output (argmax,
# channel_mapping), which only a backward reads, is omitted where the kernel
# runs directly (nothing recorded): not allocated, not computed
# (visionops.torch.ops' omit=). A script cannot pass omit=.
@torch.jit.unused
def _roi_pool_eager(input: Tensor, rois: Tensor, scale: float, ph: int, pw: int) -> Tensor:
    return _ops.roi_pool(input, rois, scale, ph, pw, omit=OMIT_INDEX_OUTPUT)[0]


@torch.jit.unused
def _ps_roi_align_eager(input: Tensor, rois: Tensor, scale: float, ph: int, pw: int,
                        sampling_ratio: int) -> Tensor:
    return _ops.ps_roi_align(input, rois, scale, ph, pw, sampling_ratio, omit=OMIT_INDEX_OUTPUT)[0]


@torch.jit.unused
def _ps_roi_pool_eager(input: Tensor, rois: Tensor, scale: float, ph: int, pw: int) -> Tensor:
    return _ops.ps_roi_pool(input, rois, scale, ph, pw, omit=OMIT_INDEX_OUTPUT)[0]


def multi_scale_roi_align(features: List[Tensor], boxes: Union[Tensor, List[Tensor]],
                          scales: List[float], output_size: BroadcastingList2[int],
                          sampling_ratio: int, canonical_scale: int = 224,
                          canonical_level: int = 4, aligned: bool = False) -> Tensor:
    op = "multi_scale_roi_align"
    ph, pw = pair("multi_scale_roi_align: output_size", output_size)
    check_features(op, len(features))
    return _ops.multi_scale_roi_align(
        features, _rois(op, boxes), [float(s) for s in scales], ph, pw, int(sampling_ratio),
        int(canonical_scale), int(canonical_level), bool(aligned))


# ------------------------------------------------------------ deform_conv2d


def deform_conv2d(input: Tensor, offset: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                  stride: Tuple[int, int] = (1, 1), padding: Tuple[int, int] = (0, 0),
                  dilation: Tuple[int, int] = (1, 1), mask: Optional[Tensor] = None) -> Tensor:
    stride_h, stride_w = pair("deform_conv2d: stride", stride)
    pad_h, pad_w = pair("deform_conv2d: padding", padding)
    dil_h, dil_w = pair("deform_conv2d: dilation", dilation)
    groups, offset_groups = deform_groups(list(input.shape), list(offset.shape),
                                          list(weight.shape))
    return _ops.deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w,
                              pad_h, pad_w, dil_h, dil_w, groups, offset_groups,
                              mask is not None)


# -------------------------------------------------------------- deform_attn


def deform_attn(value: Tensor, spatial_shapes: Tensor, level_start_index: Tensor,
                sampling_loc: Tensor, attn_weight: Tensor, im2col_step: int = 64) -> Tensor:
    return _ops.deform_attn(value, spatial_shapes, level_start_index,
                            sampling_loc, attn_weight, im2col_step)


# ------------------------------------------------------- MultiScaleRoIAlign
#
# The helpers of MultiScaleRoIAlign.forward (named as their ops.py twins:
# torch.jit.script gives the compiled function the public one's name).


def _select_features(x: Dict[str, Tensor], featmap_names: List[str]) -> List[Tensor]:
    """The maps of x named in featmap_names, in x's order (torchvision's)."""
    features: List[Tensor] = []
    for k, v in x.items():
        if k in featmap_names:
            features.append(v)
    check_features_found(len(features), featmap_names)
    return features


@torch.jit.unused
def _log2_round_float32(ratio: float) -> float:
    """round(log2(ratio)) in float32, as torchvision computes it, on the
    host: a pyramid level's scale is a parameter, which torch.compile then
    specializes instead of tracing the log2 as a data-dependent value."""
    return log2_round_float32(ratio)


def _pyramid_scales(features: List[Tensor], image_shapes: List[Tuple[int, int]]) -> List[float]:
    """Each level's scale, 2 ** round(log2(feature height / largest image
    height)) in float32, as torchvision infers it."""
    check_image_shapes(len(image_shapes))
    max_h = 0
    max_w = 0
    for shape in image_shapes:
        max_h = max(shape[0], max_h)
        max_w = max(shape[1], max_w)
    scales: List[float] = []
    for f in features:
        ratio = float(f.shape[-2]) / float(max_h)
        if torch.jit.is_scripting():
            log2 = float(torch.tensor(ratio, dtype=torch.float32).log2().round())
        else:
            log2 = _log2_round_float32(ratio)
        check_level(log2, list(f.shape), max_h, max_w)
        scales.append(2.0 ** log2)
    return scales


# ------------------------------------------------- twins made from schemas

_SCHEMA_TYPES = {"Tensor": "Tensor", "Tensor?": "Optional[Tensor]", "Tensor[]": "List[Tensor]",
                 "float": "float", "float?": "Optional[float]", "float[]": "List[float]",
                 "int": "int", "SymInt": "int",
                 "int[]": "List[int]", "bool": "bool"}


def schema_twin(name):
    """The typed twin of op `name`, made from its schema: the schema's
    arguments with their TorchScript types and defaults, calling the op
    through _ops (torch.ops.visionops.<name> in a script), e.g.
        def foo(boxes: Tensor, eps: float = 1e-07) -> Tensor:
            return _ops.foo(boxes, eps)"""
    schema = SCHEMAS[name]
    params = []
    for a in schema.args:
        text = "%s: %s" % (a.name, _SCHEMA_TYPES[a.type])
        if a.default is not NO_DEFAULT:
            text += " = %r" % (a.default,)
        params.append(text)
    if schema.returns_list:
        returns = "List[Tensor]"
    elif len(schema.returns) == 1:
        returns = "Tensor"
    else:
        returns = "Tuple[%s]" % ", ".join(["Tensor"] * len(schema.returns))
    source = "def %s(%s) -> %s:\n    return _ops.%s(%s)\n" % (
        name, ", ".join(params), returns, name, ", ".join(a.name for a in schema.args))
    namespace = {"_ops": _ops, "torch": torch, "Tensor": Tensor, "List": List, "Optional": Optional,
                 "Tuple": Tuple, "__name__": __name__}
    return define_generated(name, source, namespace, "typed twin")
