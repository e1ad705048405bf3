"""Argument checks the C library cannot make itself (it sees rois, not the
caller's list of boxes; it takes groups, which torchvision derives from
shapes), on shapes as List[int]. Written in TorchScript's subset of Python
and free of torch, so the NumPy path (ops.py), the eager torch path and the
scripted torch path (_script.py) share one copy of each check and message."""
from typing import Dict, List, Tuple, Union

from ._C import VisionOpsValueError


def pair(what: str, value: List[int]) -> Tuple[int, int]:
    """An int or a one- or two-element sequence of ints as (h, w); `value`
    is typed as TorchScript's BroadcastingList2[int] arrives (a list), and
    eager callers may pass an int."""
    if not isinstance(value, (list, tuple)):
        v = int(value)
        return v, v
    if len(value) == 1:
        return int(value[0]), int(value[0])
    if len(value) != 2:
        raise VisionOpsValueError("%s must be an int or a pair of ints, got %s" % (what, value))
    return int(value[0]), int(value[1])


def check_box_list(op: str, shapes: List[List[int]], box_len: int = 4) -> None:
    """boxes given as a list of [L_i, 4] tensors, one per image ([L_i, 5]
    rotated boxes with box_len 5)."""
    if len(shapes) == 0:
        raise VisionOpsValueError("%s: boxes: expected a [K, %d] tensor or a non-empty list of "
                                  "[L, %d] tensors" % (op, box_len + 1, box_len))
    for shape in shapes:
        if len(shape) != 2 or shape[1] != box_len:
            raise VisionOpsValueError("%s: boxes: each tensor of the list must have shape [L, %d], "
                                      "got %s" % (op, box_len, shape))


def check_rois(op: str, shape: List[int], box_len: int = 4) -> None:
    """boxes given as one [K, 5] tensor (image index, x1, y1, x2, y2), or
    [K, 6] (image index, cx, cy, w, h, angle) with box_len 5."""
    if len(shape) != 2 or shape[1] != box_len + 1:
        raise VisionOpsValueError("%s: boxes: expected a [K, %d] tensor or a list of [L, %d] "
                                  "tensors, got shape %s" % (op, box_len + 1, box_len, shape))


def box_format(op: str, fmt: str) -> str:
    """fmt lower-cased: "xyxy", "xywh", "cxcywh" or one of the rotated
    formats "cxcywhr", "xywhr", "xyxyxyxy" (torchvision 0.29's formats)."""
    lowered = fmt.lower()
    if lowered not in ["xyxy", "xywh", "cxcywh", "cxcywhr", "xywhr", "xyxyxyxy"]:
        raise VisionOpsValueError("%s: fmt must be one of xyxy, xywh, cxcywh, cxcywhr, xywhr, "
                                  "xyxyxyxy, got '%s'" % (op, fmt))
    return lowered


def box_format_number(fmt: str) -> int:
    """fmt's number (vo_box_format: 0 xyxy .. 5 xyxyxyxy), -1 if it is none of
    torchvision's box formats (matched exactly, as torchvision does)."""
    names = ["xyxy", "xywh", "cxcywh", "cxcywhr", "xywhr", "xyxyxyxy"]
    for i, name in enumerate(names):
        if fmt == name:
            return i
    return -1


def box_format_size(number: int) -> int:
    """Coordinates per box of format `number`: 4, 5 (rotated) or 8 (corners)."""
    return 4 + number // 3 + 3 * (number // 5)


def box_convert_formats(in_fmt: str, out_fmt: str) -> Tuple[int, int]:
    """The two formats' numbers, with torchvision 0.29's errors: ValueError
    for an unknown format, NotImplementedError for a pair it does not
    convert (axis-aligned <-> rotated)."""
    i, o = box_format_number(in_fmt), box_format_number(out_fmt)
    if i < 0 or o < 0:
        raise VisionOpsValueError("box_convert: Unsupported Bounding Box Conversions for given "
                                  "in_fmt %s and out_fmt %s (formats: xyxy, xywh, cxcywh, "
                                  "cxcywhr, xywhr, xyxyxyxy)" % (in_fmt, out_fmt))
    if (i < 3) != (o < 3):
        raise NotImplementedError("box_convert: Unsupported Bounding Box Conversions for given "
                                  "in_fmt %s and out_fmt %s: axis-aligned and rotated boxes do "
                                  "not convert into each other" % (in_fmt, out_fmt))
    return i, o


def check_box_coordinates(op: str, fmt: str, shape: List[int]) -> None:
    """boxes [..., K] hold K coordinates per box, as format `fmt` has."""
    k = box_format_size(box_format_number(fmt))
    if len(shape) < 1 or shape[-1] != k:
        raise VisionOpsValueError("%s: boxes in format %s must have shape [..., %d], got %s"
                                  % (op, fmt, k, shape))


def nms_padded_box_format(fmt: str) -> int:
    """batched_nms_padded's box_format as the op's number: 0 "xyxy", 1
    "xywh", 2 "cxcywh" (torchvision's axis-aligned formats)."""
    names = ["xyxy", "xywh", "cxcywh"]
    for i, name in enumerate(names):
        if fmt == name:
            return i
    raise VisionOpsValueError("batched_nms_padded: box_format must be one of xyxy, xywh, cxcywh, "
                              "got '%s'" % fmt)


def box_area_format(fmt: str) -> str:
    """fmt, one of box_area's formats (torchvision 0.29's, matched exactly)."""
    if fmt != "xyxy" and fmt != "xywh" and fmt != "cxcywh":
        raise VisionOpsValueError("box_area: Unsupported Bounding Box area for given format %s "
                                  "(formats: xyxy, xywh, cxcywh)" % fmt)
    return fmt


def check_box_area_shape(shape: List[int]) -> None:
    if len(shape) < 1 or shape[-1] != 4:
        raise VisionOpsValueError("box_area: boxes must have shape [N, 4] (or any leading "
                                  "dimensions, [..., 4]), got %s" % shape)


def check_box_batch(op: str, name: str, shape: List[int]) -> None:
    """[..., N, 4] boxes (boxes1 has N, boxes2 M) of the pairwise IoU ops."""
    if len(shape) < 2 or shape[-1] != 4:
        raise VisionOpsValueError("%s: %s must have shape [..., %s, 4], got %s"
                                  % (op, name, "N" if name == "boxes1" else "M", shape))
def box_width(fmt: str) -> int:
    """Coordinates per box of a (lower-cased) format: 4, 5 for cxcywhr and
    xywhr, 8 for xyxyxyxy."""
    return box_format_size(box_format_number(fmt))


def rotated_iou_mode(op: str, mode: str) -> bool:
    """mmcv's mode of box_iou_rotated: "iou", or "iof" (intersection over
    the first box's area): True for iof."""
    if mode != "iou" and mode != "iof":
        raise VisionOpsValueError("%s: mode must be 'iou' or 'iof', got '%s'" % (op, mode))
    return mode == "iof"


def check_box_batch(op: str, name: str, shape: List[int], width: int = 4) -> None:
    """[..., N, width] boxes (boxes1 has N, boxes2 M) of the pairwise IoU ops."""
    if len(shape) < 2 or shape[-1] != width:
        raise VisionOpsValueError("%s: %s must have shape [..., %s, %d], got %s"
                                  % (op, name, "N" if name == "boxes1" else "M", width, shape))


def broadcast_leading(op: str, shape1: List[int], shape2: List[int]) -> List[int]:
    """The broadcast of the leading dimensions of [..., N, 4] and [..., M, 4]."""
    lead1, lead2 = shape1[:-2], shape2[:-2]
    n = max(len(lead1), len(lead2))
    lead1 = [1] * (n - len(lead1)) + lead1
    lead2 = [1] * (n - len(lead2)) + lead2
    lead: List[int] = []
    for a, b in zip(lead1, lead2):
        if a != b and a != 1 and b != 1:
            raise VisionOpsValueError("%s: the leading dimensions of boxes1 %s and boxes2 %s do "
                                      "not broadcast" % (op, shape1, shape2))
        lead.append(b if a == 1 else a)
    return lead


def deform_groups(input_shape: List[int], offset_shape: List[int],
                  weight_shape: List[int]) -> Tuple[int, int]:
    """(groups, offset_groups) of deform_conv2d, derived from the shapes as
    torchvision does; an error names the shape that is wrong rather than a
    derived value the caller never passed."""
    op = "deform_conv2d"
    for name, shape in (("input", input_shape), ("offset", offset_shape),
                        ("weight", weight_shape)):
        if len(shape) != 4:
            raise VisionOpsValueError("%s: %s must be 4-d, got shape %s" % (op, name, shape))
    kh, kw = weight_shape[2], weight_shape[3]
    if weight_shape[1] == 0 or kh * kw == 0:
        raise VisionOpsValueError("%s: weight has an empty dimension: %s" % (op, weight_shape))
    c_in, c_per_group, c_off = input_shape[1], weight_shape[1], offset_shape[1]
    c_out = weight_shape[0]
    if c_in % c_per_group != 0:
        raise VisionOpsValueError(
            "%s: weight has %d input channels per group (weight.shape[1]), which does not divide "
            "the input's %d channels" % (op, c_per_group, c_in))
    groups = c_in // c_per_group
    if c_out % groups != 0:
        raise VisionOpsValueError(
            "%s: weight has %d output channels, not divisible by the %d groups that input's %d "
            "channels / weight.shape[1] = %d make" % (op, c_out, groups, c_in, c_per_group))
    if c_off == 0 or c_off % (2 * kh * kw) != 0:
        raise VisionOpsValueError(
            "%s: offset has %d channels; it must have 2 * offset_groups * kernel_h * kernel_w "
            "channels, a positive multiple of 2 * %d * %d = %d (weight %s)"
            % (op, c_off, kh, kw, 2 * kh * kw, weight_shape))
    offset_groups = c_off // (2 * kh * kw)
    if c_in % offset_groups != 0:
        raise VisionOpsValueError(
            "%s: offset has %d channels = 2 * %d offset groups * %d * %d, and %d offset groups do "
            "not divide the input's %d channels" % (op, c_off, offset_groups, kh, kw,
                                                    offset_groups, c_in))
    return groups, offset_groups


def check_features(op: str, count: int) -> None:
    if count == 0:
        raise VisionOpsValueError("%s: features must be a non-empty list of [N, C, H, W] tensors"
                                  % op)


def check_features_found(count: int, featmap_names: List[str]) -> None:
    if count == 0:
        # Python's repr of the list, which TorchScript's str() of a List[str] is not
        names = "[" + ", ".join(["'" + name + "'" for name in featmap_names]) + "]"
        raise VisionOpsValueError("MultiScaleRoIAlign: none of the feature maps %s is in x"
                                  % names)


def log2_round_float32(ratio: float) -> float:
    """round(log2(ratio)) in float32, as torchvision infers a pyramid level's
    scale (feature size / image size). NumPy, so eager code only: scripts
    compute it with torch ops (_script._pyramid_scales)."""
    import numpy as np

    return float(np.round(np.log2(np.float32(ratio))))


def check_level(log2_scale: float, feature_shape: List[int], height: int, width: int) -> None:
    """An inferred level log2 scale: finite (not from an empty map)."""
    if not abs(log2_scale) < 1000.0:
        raise VisionOpsValueError("MultiScaleRoIAlign: the inferred scale of a %s feature map for "
                                  "%d x %d images is not a power of 2"
                                  % (feature_shape, height, width))


def check_image_shapes(count: int) -> None:
    if count == 0:
        raise VisionOpsValueError("MultiScaleRoIAlign: image_shapes must not be empty")


def soft_nms_method(op: str, method: Union[str, int]) -> int:
    """soft_nms's method as the op's int: 'hard' (mmcv's 'naive') 0,
    'linear' 1, 'gaussian' 2, or one of those ints itself."""
    if isinstance(method, str):
        names: Dict[str, int] = {"hard": 0, "naive": 0, "linear": 1, "gaussian": 2}
        if method in names:
            return names[method]
        raise VisionOpsValueError("%s: method must be 'linear', 'gaussian', 'hard' (or 'naive'), "
                                  "or 1, 2, 0, got '%s'" % (op, method))
    if method not in [0, 1, 2]:
        raise VisionOpsValueError("%s: method must be 'linear', 'gaussian', 'hard' (or 'naive'), "
                                  "or 1, 2, 0, got %d" % (op, method))
    return method
