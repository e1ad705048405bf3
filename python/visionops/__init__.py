"""visionops: computer-vision detection operators (NMS, box IoUs, RoIAlign /
RoIPool and their position-sensitive variants, deformable convolution) from
a C library, with torchvision.ops-compatible functions and modules.

Inputs are NumPy arrays or PyTorch tensors (CPU or CUDA), exchanged through
DLPack without copies; outputs come back in the same framework. When PyTorch
is installed the operators are also registered as torch.ops.visionops.*
(with autograd and Meta kernels), see visionops.torch.

Under torch.jit.script the functions compile as their typed torch
implementations (visionops._script), so scripts calling them, the modules
and torchvision detection models using them script as torchvision's do.

Errors are VisionOpsValueError (bad values, shapes, devices),
VisionOpsTypeError (dtypes, argument types) or VisionOpsError; all are
RuntimeErrors, as torchvision's errors are, and the first two also
ValueError / TypeError."""
from . import _C
from ._C import VisionOpsError, VisionOpsTypeError, VisionOpsValueError
from ._core import (backends, get_num_threads, is_deterministic, set_deterministic,
                    set_num_threads)
from .ops import (DeformConv2d, MultiScaleRoIAlign, PSRoIAlign, PSRoIPool, RoIAlign, RoIPool,
                  batched_nms, box_area, box_iou, complete_box_iou, deform_conv2d, distance_box_iou,
                  generalized_box_iou, multi_scale_roi_align, nms, ps_roi_align, ps_roi_pool,
                  roi_align, roi_pool)

__version__ = _C.version

try:
    import torch as _torch  # noqa: F401
except ImportError:
    pass
else:
    from . import torch  # noqa: F401  (registers torch.ops.visionops.*)
    import torch.fx as _fx

    # visionops.roi_align(...) in traced code is a leaf (fx's own mechanism;
    # the functions also record themselves when given a Proxy).
    for _name in ("nms", "batched_nms", "box_iou", "generalized_box_iou", "distance_box_iou",
                  "complete_box_iou", "box_area", "roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool",
                  "multi_scale_roi_align", "deform_conv2d"):
        _fx.wrap(_name)
    del _name

__all__ = [
    "nms", "batched_nms", "box_iou", "generalized_box_iou", "distance_box_iou",
    "complete_box_iou", "box_area", "roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool",
    "deform_conv2d", "multi_scale_roi_align", "MultiScaleRoIAlign", "RoIAlign", "RoIPool",
    "PSRoIAlign", "PSRoIPool", "DeformConv2d", "VisionOpsError", "VisionOpsValueError",
    "VisionOpsTypeError", "backends", "set_num_threads", "get_num_threads", "set_deterministic",
    "is_deterministic",
]
