"""visionops: computer-vision detection operators (NMS, box IoUs, RoIAlign /
RoIPool and their position-sensitive variants, deformable convolution) from
a C library, with torchvision.ops-compatible functions.

Inputs are NumPy arrays or PyTorch tensors (CPU or CUDA), exchanged through
DLPack without copies; outputs come back in the same framework. When PyTorch
is installed the operators are also registered as torch.ops.visionops.*
(with autograd and Meta kernels), see visionops.torch."""
from . import _C
from ._core import (backends, get_num_threads, is_deterministic, set_deterministic,
                    set_num_threads)
from .ops import (MultiScaleRoIAlign, batched_nms, box_iou, complete_box_iou, deform_conv2d,
                  distance_box_iou, generalized_box_iou, multi_scale_roi_align, nms, ps_roi_align,
                  ps_roi_pool, roi_align, roi_pool)

__version__ = _C.version

try:
    import torch as _torch  # noqa: F401
except ImportError:
    pass
else:
    from . import torch  # noqa: F401  (registers torch.ops.visionops.*)

__all__ = [
    "nms", "batched_nms", "box_iou", "generalized_box_iou", "distance_box_iou",
    "complete_box_iou", "roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool",
    "deform_conv2d", "multi_scale_roi_align", "MultiScaleRoIAlign", "backends",
    "set_num_threads", "get_num_threads", "set_deterministic", "is_deterministic",
]
