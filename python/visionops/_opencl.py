"""pyopencl arrays through the C library: each array becomes a DLPack
kDLOpenCL tensor (data: its buffer's cl_mem, byte_offset: its offset,
strides: its byte strides in elements), the outputs are pyopencl arrays
allocated on the inputs' queue, and the call runs on that queue.

pyopencl stays optional: it is imported only once an argument's type comes
from it. Every tensor of one call must be a pyopencl array on one queue (in
one context); anything else is a VisionOpsValueError naming the op and the
argument."""
import sys

from . import _C
from ._C import VisionOpsTypeError, VisionOpsValueError

KDL_OPENCL = 4  # DLPack's kDLOpenCL


_FROM_PYOPENCL = {}  # type -> whether it comes from pyopencl


def _from_pyopencl(x):
    """Whether x's type comes from pyopencl (without importing it); the
    answer is kept per type: every call asks it of each argument."""
    t = type(x)
    found = _FROM_PYOPENCL.get(t)
    if found is None:
        found = any(c.__module__.split(".")[0] == "pyopencl" for c in t.__mro__)
        _FROM_PYOPENCL[t] = found
    return found


def is_array(x):
    """x is a pyopencl.array.Array (pyopencl imported only if x's type is
    pyopencl's)."""
    if not _from_pyopencl(x):
        return False
    import pyopencl.array

    return isinstance(x, pyopencl.array.Array)


def module():
    """pyopencl.array, for helpers that build arrays (imported on first use)."""
    import pyopencl.array

    return pyopencl.array


_device_indices = {}


def _device_index(device):
    """The library's number of an OpenCL device: its position among every
    device of every platform, in the ICD loader's order (as the backend
    lists them); 0 where it is not in that list (a sub-device), which only
    error messages show, as the call runs on the queue's device."""
    index = _device_indices.get(device.int_ptr)
    if index is not None:
        return index
    cl = sys.modules["pyopencl"]
    found = 0
    for platform in cl.get_platforms():
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        for d in devices:
            if d.int_ptr == device.int_ptr:
                _device_indices[device.int_ptr] = found
                return found
            found += 1
    return 0


def _tensors(name, args):
    """(argument name, value) of every tensor-like argument and list item."""
    from . import _core

    schema = _core.SCHEMAS[name]
    for i, a in enumerate(args):
        arg = schema.args[i].name if i < len(schema.args) else "argument %d" % i
        if isinstance(a, (list, tuple)):
            for j, b in enumerate(a):
                if not isinstance(b, (int, float)):
                    yield "%s[%d]" % (arg, j), b
        elif a is not None and not isinstance(a, (bool, int, float, str)):
            yield arg, a


def _queue_of(name, args):
    """(queue, first array) of the call's pyopencl arrays, checked: every
    tensor a pyopencl array, one context, one in-order queue."""
    first = queue = None
    for arg, x in _tensors(name, args):
        if not is_array(x):
            raise VisionOpsValueError(
                "%s: %s is a %s.%s beside pyopencl arrays: the tensors of one call are all "
                "pyopencl arrays on one queue (or none is)"
                % (name, arg, type(x).__module__, type(x).__name__))
        if first is None:
            first = (arg, x)
        elif x.context.int_ptr != first[1].context.int_ptr:
            raise VisionOpsValueError("%s: %s is in another OpenCL context than %s"
                                      % (name, arg, first[0]))
        if x.queue is not None:
            if queue is None:
                queue = (arg, x.queue)
            elif x.queue.int_ptr != queue[1].int_ptr:
                raise VisionOpsValueError(
                    "%s: %s is on another OpenCL queue than %s: give them one queue "
                    "(array.with_queue(queue))" % (name, arg, queue[0]))
    if queue is None:
        raise VisionOpsValueError("%s: the pyopencl arrays have no queue: give them one "
                                  "(array.with_queue(queue))" % name)
    cl = sys.modules["pyopencl"]
    if queue[1].properties & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE:
        raise VisionOpsValueError("%s: %s's queue executes out of order; the library's kernels "
                                  "need an in-order queue" % (name, queue[0]))
    if queue[1].context.int_ptr != first[1].context.int_ptr:
        raise VisionOpsValueError("%s: %s's queue is in another OpenCL context than its data"
                                  % (name, queue[0]))
    return queue[1], first[1]


def _describe(name, arg, x, device):
    """A pyopencl array as the dict _C takes for a tensor with data."""
    itemsize = x.dtype.itemsize
    for s in x.strides:
        if s % itemsize:
            raise VisionOpsValueError("%s: %s has a stride (%d bytes) not a multiple of its "
                                      "item size (%d)" % (name, arg, s, itemsize))
    return {"shape": tuple(x.shape), "dtype": x.dtype.name, "device": device,
            "data": x.base_data.int_ptr if x.base_data is not None else 0,
            "byte_offset": int(x.offset), "strides": tuple(s // itemsize for s in x.strides)}


def run(name, args, num_threads, deterministic, omit=0):
    """Runs op `name` on pyopencl arrays; the outputs are pyopencl arrays on
    the inputs' queue, from the first input's allocator (a memory pool's,
    say); None for those omitted (bit k of omit: output k)."""
    import numpy as np

    cl_array = module()
    queue, first = _queue_of(name, args)
    device = (KDL_OPENCL, _device_index(queue.device))
    names = dict((id(x), arg) for arg, x in _tensors(name, args))

    def convert(a):
        if isinstance(a, (list, tuple)):
            return [convert(b) if is_array(b) else b for b in a]
        return _describe(name, names[id(a)], a, device) if is_array(a) else a

    outputs = []

    def alloc(shape, dtype, out_device):
        if out_device[0] != KDL_OPENCL:
            raise VisionOpsValueError("%s: an output on device type %d beside OpenCL inputs"
                                      % (name, out_device[0]))
        if dtype == "bfloat16":
            raise VisionOpsTypeError("%s: pyopencl arrays have no bfloat16 (NumPy has none)"
                                     % name)
        out = cl_array.empty(queue, shape, np.dtype(dtype), allocator=first.allocator)
        outputs.append(out)
        return _describe(name, "output %d" % (len(outputs) - 1), out, device)

    made = _C.call(name, [convert(a) for a in args], alloc, queue.int_ptr, num_threads,
                   deterministic, omit=omit)
    outputs.reverse()
    return [None if m is None else outputs.pop() for m in made]


# ------------------------------------------- the NumPy path's array helpers
# What ops.py does with NumPy functions around a call (concatenating a box
# list into rois, converting box formats, slicing batched box sets), done
# on the device for pyopencl arrays: pyopencl has no column concatenation
# and computes only on contiguous arrays.

_kernels = {}


def _kernel(context, key, arguments, body, preamble=""):
    """An ElementwiseKernel, built once per context."""
    from pyopencl.elementwise import ElementwiseKernel

    k = _kernels.get((context.int_ptr, key))
    if k is None:
        k = _kernels[(context.int_ptr, key)] = ElementwiseKernel(
            context, arguments, body, name="vo_" + key[0], preamble=preamble)
    return k


def _contiguous(op, what, x):
    if not x.flags.c_contiguous:
        raise VisionOpsValueError("%s: %s is a non-contiguous pyopencl array; pass a contiguous "
                                  "one" % (op, what))


def _same_queue(op, arrays):
    """The first array's queue, every array a pyopencl array on it."""
    for what, x in arrays:
        if not is_array(x):
            raise VisionOpsValueError("%s: %s is a %s.%s beside pyopencl arrays"
                                      % (op, what, type(x).__module__, type(x).__name__))
    queue = arrays[0][1].queue
    for what, x in arrays:
        if x.queue is None or queue is None or x.queue.int_ptr != queue.int_ptr:
            raise VisionOpsValueError("%s: %s is on another OpenCL queue than %s (or none)"
                                      % (op, what, arrays[0][0]))
    return queue


_BITS = {2: "ushort", 4: "uint", 8: "ulong"}


def rois_from_list(op, boxes, box_len=4):
    """[L_i, 4] pyopencl box arrays (one per image; [L_i, 5] rotated boxes
    with box_len 5) as one [K, 5] ([K, 6]) rois array with the image index
    first, as ops._rois does with NumPy."""
    import numpy as np

    queue = _same_queue(op, [("boxes[%d]" % i, b) for i, b in enumerate(boxes)])
    dtype = boxes[0].dtype
    for i, b in enumerate(boxes):
        if b.dtype != dtype:
            raise VisionOpsTypeError("%s: boxes[%d] is %s, boxes[0] %s: one dtype for the list"
                                     % (op, i, b.dtype.name, dtype.name))
        _contiguous(op, "boxes[%d]" % i, b)
    bits = _BITS.get(dtype.itemsize)
    if bits is None:
        raise VisionOpsTypeError("%s: boxes have unsupported dtype %s" % (op, dtype.name))
    n = box_len + 1
    rois = module().empty(queue, (sum(int(b.shape[0]) for b in boxes), n), dtype)
    pack = _kernel(queue.context, ("pack_rois", bits, box_len),
                   "%s *rois, const %s *box, long first, %s image" % (bits, bits, bits),
                   "rois[%d * (first + i)] = image;"
                   "for (int k = 0; k < %d; k++) rois[%d * (first + i) + 1 + k] = box[%d * i + k]"
                   % (n, box_len, n, box_len))
    uint = np.dtype("u%d" % dtype.itemsize)
    first = 0
    for i, b in enumerate(boxes):
        rows = int(b.shape[0])
        if rows:
            image = np.array(i, dtype=dtype).view(uint)[()]
            pack(rois, b, np.int64(first), image, range=slice(rows), queue=queue)
        first += rows
    return rois


def prefix_rows(x, counts):
    """The first counts[b] rows of each x[b] (x [B, K, ...], contiguous)
    in one array, image after image: matrix_nms's padded outputs as
    Paddle's, as ops.matrix_nms does with a NumPy mask."""
    parts = [x[b, :n] for b, n in enumerate(counts) if n]
    if not parts:
        return module().empty(x.queue, (0,) + tuple(x.shape[2:]), x.dtype)
    return module().concatenate(parts, axis=0, queue=x.queue)


def wh_rows(rows):
    """[M, 4] pyopencl rows (a, b, w, h) as (0, 0, w, h), a new array of
    their dtype (a copy of the bits: any dtype)."""
    _contiguous("box_area", "boxes", rows)
    bits = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}[rows.dtype.itemsize]
    out = module().empty(rows.queue, rows.shape, rows.dtype)
    if rows.size:
        k = _kernel(rows.queue.context, ("wh_rows", bits), "%s *out, const %s *box" % (bits, bits),
                    "const long j = i % 4; out[i] = j < 2 ? 0 : box[i]")
        k(out, rows, range=slice(rows.size), queue=rows.queue)
    return out


def pairwise(op, boxes1, boxes2, lead, n, m, call, width=4):
    """A pairwise IoU op over batched [..., N, width] x [..., M, width]
    pyopencl boxes (leading dimensions broadcast to `lead`): call(b1, b2)
    per 2-D slice (views, no copies), stacked into [..., N, M]."""
    import numpy as np

    queue = _same_queue(op, [("boxes1", boxes1), ("boxes2", boxes2)])
    cl_array = module()

    def pick(x, idx):
        shape = x.shape[:-2]
        idx = tuple(i if d != 1 else 0 for i, d in zip(idx[len(idx) - len(shape):], shape))
        return x[idx] if idx else x

    indices = list(np.ndindex(*lead))
    if not indices:
        # No slice to call: the C op still checks the dtypes on one empty pair.
        empty = call(cl_array.empty(queue, (0, width), boxes1.dtype),
                     cl_array.empty(queue, (0, width), boxes2.dtype))
        return cl_array.empty(queue, lead + (n, m), empty.dtype)
    outs = [call(pick(boxes1, idx), pick(boxes2, idx)) for idx in indices]
    return cl_array.stack(outs, axis=0, queue=queue).reshape(lead + (n, m))
