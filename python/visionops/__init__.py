"""visionops: computer-vision detection operators (NMS, box IoUs, RoIAlign /
RoIPool and their position-sensitive variants, deformable convolution) from
a C library, with torchvision.ops-compatible functions and modules.

Inputs are NumPy arrays or PyTorch tensors (CPU or CUDA), exchanged through
DLPack without copies, or pyopencl arrays (run on their OpenCL queue);
outputs come back in the same framework. When PyTorch
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
from ._core import (backends, get_num_threads, is_deterministic, release_cached_memory,
                    set_deterministic, set_num_threads)
from . import ops as _ops
# The functions and modules: ops.__all__ is the one list of their names.
from .ops import *  # noqa: F401,F403

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
    for _name in _ops._FX_LEAVES:
        _fx.wrap(_name)
    del _name

__all__ = list(_ops.__all__) + [
    "backends", "set_num_threads", "get_num_threads", "set_deterministic", "is_deterministic",
    "release_cached_memory",
]
