"""torchvision.ops-compatible functions: same names, signatures, defaults and
return types. On PyTorch tensors they call the registered operators
(torch.ops.visionops.*, so autograd and Meta tensors work); on NumPy arrays
(or any other DLPack / buffer object) they call the C library directly and
return NumPy arrays."""
import math
import sys

from . import _core

__all__ = [
    "nms", "batched_nms", "box_iou", "generalized_box_iou", "distance_box_iou",
    "complete_box_iou", "roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool",
    "deform_conv2d", "multi_scale_roi_align", "MultiScaleRoIAlign",
]


def _is_torch(x):
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    if isinstance(x, (list, tuple)):
        return bool(x) and isinstance(x[0], torch.Tensor)
    return isinstance(x, torch.Tensor)


def _call(name, *args):
    """The op on torch tensors (registered op) or on anything else (NumPy)."""
    if any(_is_torch(a) for a in args):
        import torch

        from . import torch as _registered  # noqa: F401  (registers the ops)

        return getattr(torch.ops.visionops, name)(*args)
    outs = _core.run_numpy(name, list(args))
    schema = _core.SCHEMAS[name]
    return outs if schema.returns_list else (outs[0] if len(outs) == 1 else tuple(outs))


def _pair(v, what):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return int(v[0]), int(v[0])
        if len(v) != 2:
            raise ValueError("%s must be an int or a pair of ints, got %r" % (what, v))
        return int(v[0]), int(v[1])
    return int(v), int(v)


# ---------------------------------------------------------------- box ops


def nms(boxes, scores, iou_threshold):
    """Indices (int64) of the boxes kept by greedy NMS, by decreasing score
    (ties: lower index first)."""
    keep, num_kept = _call("nms", boxes, scores, float(iou_threshold))
    return keep[:int(num_kept)]


def batched_nms(boxes, scores, idxs, iou_threshold):
    """NMS within each category of idxs; kept indices by decreasing score.
    idxs may be of any integer dtype, as in torchvision (the library reads
    int64; others are widened, an N-element copy)."""
    keep, num_kept = _call("batched_nms", boxes, scores, _int64(idxs), float(iou_threshold))
    return keep[:int(num_kept)]


_BOX_FORMATS = ("xyxy", "xywh", "cxcywh")


def _to_xyxy(boxes, fmt):
    """Boxes in torchvision's formats to (x1, y1, x2, y2), in the caller's
    framework (elementwise arithmetic, as torchvision's box_convert)."""
    if fmt == "xyxy":
        return boxes
    if _is_torch(boxes):
        import torch

        cat = lambda cols: torch.stack(cols, dim=-1)  # noqa: E731
    else:
        import numpy as np

        cat = lambda cols: np.stack(cols, axis=-1)  # noqa: E731
    a, b, c, d = (boxes[..., i] for i in range(4))
    if fmt == "xywh":
        return cat([a, b, a + c, b + d])
    return cat([a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d])


def _int64(t):
    """Integer tensors of another width widened to int64; anything else as is
    (the library reports a wrong dtype)."""
    if _is_torch(t):
        import torch

        if not t.is_floating_point() and not t.is_complex() and t.dtype not in (torch.int64,
                                                                                torch.bool):
            return t.to(torch.int64)
        return t
    kind = getattr(getattr(t, "dtype", None), "kind", None)
    if kind in ("i", "u") and t.dtype.itemsize != 8 or kind == "u":
        return t.astype("int64")
    return t


def box_iou(boxes1, boxes2, fmt="xyxy"):
    """Pairwise IoU. `fmt` ("xyxy", "xywh" or "cxcywh", as in newer
    torchvision) is the format of both box sets."""
    fmt = str(fmt).lower()
    if fmt not in _BOX_FORMATS:
        raise ValueError("box_iou: fmt must be one of %s, got %r" % (", ".join(_BOX_FORMATS), fmt))
    if fmt != "xyxy":
        for name, b in (("boxes1", boxes1), ("boxes2", boxes2)):
            if len(b.shape) != 2 or b.shape[1] != 4:
                raise ValueError("box_iou: %s must have shape [N, 4], got %s"
                                 % (name, tuple(b.shape)))
    return _call("box_iou", _to_xyxy(boxes1, fmt), _to_xyxy(boxes2, fmt))


def generalized_box_iou(boxes1, boxes2):
    return _call("generalized_box_iou", boxes1, boxes2)


def distance_box_iou(boxes1, boxes2, eps=1e-7):
    return _call("distance_box_iou", boxes1, boxes2, float(eps))


def complete_box_iou(boxes1, boxes2, eps=1e-7):
    return _call("complete_box_iou", boxes1, boxes2, float(eps))


# ---------------------------------------------------------------- RoI ops


def _rois(boxes):
    """torchvision's box formats to a [K, 5] rois tensor: a [K, 5] tensor as
    is, or a list of [L_i, 4] tensors (one per image) with the image index
    prepended."""
    if isinstance(boxes, (list, tuple)):
        if not boxes:
            raise ValueError("boxes: expected a [K, 5] tensor or a non-empty list of [L, 4] tensors")
        for b in boxes:
            if len(b.shape) != 2 or b.shape[1] != 4:
                raise ValueError("boxes: each tensor of the list must have shape [L, 4], got %s"
                                 % (tuple(b.shape),))
        if _is_torch(boxes):
            import torch

            return torch.cat([torch.cat([torch.full_like(b[:, :1], i), b], dim=1)
                              for i, b in enumerate(boxes)], dim=0)
        import numpy as np

        return np.concatenate([np.concatenate([np.full_like(b[:, :1], i), b], axis=1)
                               for i, b in enumerate(boxes)], axis=0)
    if len(boxes.shape) != 2 or boxes.shape[1] != 5:
        raise ValueError("boxes: expected a [K, 5] tensor or a list of [L, 4] tensors, got shape %s"
                         % (tuple(boxes.shape),))
    return boxes


def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    ph, pw = _pair(output_size, "output_size")
    return _call("roi_align", input, _rois(boxes), float(spatial_scale), ph, pw,
                 int(sampling_ratio), bool(aligned))


def roi_pool(input, boxes, output_size, spatial_scale=1.0):
    ph, pw = _pair(output_size, "output_size")
    out, _argmax = _call("roi_pool", input, _rois(boxes), float(spatial_scale), ph, pw)
    return out


def ps_roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1):
    ph, pw = _pair(output_size, "output_size")
    out, _mapping = _call("ps_roi_align", input, _rois(boxes), float(spatial_scale), ph, pw,
                          int(sampling_ratio))
    return out


def ps_roi_pool(input, boxes, output_size, spatial_scale=1.0):
    ph, pw = _pair(output_size, "output_size")
    out, _mapping = _call("ps_roi_pool", input, _rois(boxes), float(spatial_scale), ph, pw)
    return out


def multi_scale_roi_align(features, boxes, scales, output_size, sampling_ratio, canonical_scale=224,
                          canonical_level=4, aligned=False):
    """RoIAlign over a feature pyramid: each RoI pooled from the level
    torchvision's LevelMapper assigns it (scales[i] is level i's stride
    reciprocal, e.g. 1/4, 1/8, ...)."""
    ph, pw = _pair(output_size, "output_size")
    features = list(features)
    if not features:
        raise ValueError("multi_scale_roi_align: features must be a non-empty list of "
                         "[N, C, H, W] tensors")
    return _call("multi_scale_roi_align", features, _rois(boxes),
                 [float(s) for s in scales], ph, pw, int(sampling_ratio), int(canonical_scale),
                 int(canonical_level), bool(aligned))


# ------------------------------------------------------------ deform_conv2d


def deform_conv2d(input, offset, weight, bias=None, stride=(1, 1), padding=(0, 0),
                  dilation=(1, 1), mask=None):
    stride_h, stride_w = _pair(stride, "stride")
    pad_h, pad_w = _pair(padding, "padding")
    dil_h, dil_w = _pair(dilation, "dilation")
    if len(weight.shape) != 4 or len(input.shape) != 4:
        raise ValueError("deform_conv2d: input and weight must be 4-d, got %s and %s"
                         % (tuple(input.shape), tuple(weight.shape)))
    kh, kw = int(weight.shape[2]), int(weight.shape[3])
    if weight.shape[1] == 0 or kh * kw == 0:
        raise ValueError("deform_conv2d: weight has an empty dimension: %s" % (tuple(weight.shape),))
    groups = int(input.shape[1]) // int(weight.shape[1])
    offset_groups = int(offset.shape[1]) // (2 * kh * kw)
    return _call("deform_conv2d", input, weight, offset, mask, bias, stride_h, stride_w, pad_h,
                 pad_w, dil_h, dil_w, groups, offset_groups, mask is not None)


# ------------------------------------------------------- MultiScaleRoIAlign


def _infer_scale(feature_size, original_size):
    # torchvision: 2 ** round(log2(feature / image)), computed in float32.
    import numpy as np

    scales = [2.0 ** float(np.round(np.log2(np.float32(float(s1) / float(s2)))))
              for s1, s2 in zip(feature_size, original_size)]
    return scales[0]


class _MultiScaleRoIAlignBase:
    """torchvision.ops.MultiScaleRoIAlign: pools each box of each image from
    the pyramid level that fits its size. Call it with a dict of feature
    maps, a list of [L_i, 4] boxes per image, and the images' (h, w)."""

    def _setup(self, featmap_names, output_size, sampling_ratio, canonical_scale, canonical_level):
        if isinstance(output_size, int):
            output_size = (output_size, output_size)
        self.featmap_names = list(featmap_names)
        self.sampling_ratio = sampling_ratio
        self.output_size = tuple(output_size)
        self.canonical_scale = canonical_scale
        self.canonical_level = canonical_level
        self.scales = None

    def _forward(self, x, boxes, image_shapes):
        features = [v for k, v in x.items() if k in self.featmap_names]
        if not features:
            raise ValueError("MultiScaleRoIAlign: none of the feature maps %r is in x"
                             % (self.featmap_names,))
        max_h = max(s[0] for s in image_shapes)
        max_w = max(s[1] for s in image_shapes)
        scales = [_infer_scale(f.shape[-2:], (max_h, max_w)) for f in features]
        self.scales = scales
        for s in scales:
            if not (s > 0 and math.log2(s) == int(math.log2(s))):
                raise ValueError("MultiScaleRoIAlign: inferred scale %g is not a power of 2" % s)
        return multi_scale_roi_align(features, boxes, scales, self.output_size, self.sampling_ratio,
                                     self.canonical_scale, self.canonical_level, False)

    def __repr__(self):
        return "%s(featmap_names=%s, output_size=%s, sampling_ratio=%s)" % (
            type(self).__name__, self.featmap_names, self.output_size, self.sampling_ratio)


try:
    import torch.nn as _nn

    class MultiScaleRoIAlign(_nn.Module, _MultiScaleRoIAlignBase):
        __doc__ = _MultiScaleRoIAlignBase.__doc__

        def __init__(self, featmap_names, output_size, sampling_ratio, *, canonical_scale=224,
                     canonical_level=4):
            super().__init__()
            self._setup(featmap_names, output_size, sampling_ratio, canonical_scale,
                        canonical_level)

        def forward(self, x, boxes, image_shapes):
            return self._forward(x, boxes, image_shapes)

        __repr__ = _MultiScaleRoIAlignBase.__repr__

except ImportError:  # NumPy only

    class MultiScaleRoIAlign(_MultiScaleRoIAlignBase):
        __doc__ = _MultiScaleRoIAlignBase.__doc__

        def __init__(self, featmap_names, output_size, sampling_ratio, *, canonical_scale=224,
                     canonical_level=4):
            self._setup(featmap_names, output_size, sampling_ratio, canonical_scale,
                        canonical_level)

        def __call__(self, x, boxes, image_shapes):
            return self._forward(x, boxes, image_shapes)
