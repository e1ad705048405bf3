"""PyTorch integration: every op of the C library registered with
torch.library in the "visionops" namespace, generated from the library's own
schema list. Each op gets CPU and CUDA kernels (tensors through DLPack,
outputs from torch.empty, CUDA work on the current stream), a Meta kernel
(the library's checks without data, output shapes from the library's shape
rules, so symbolic sizes under torch.export / torch.compile(dynamic=True)
stay symbolic), and, where the registry names a backward op, an autograd
kernel that calls it.

Works with torch 1.13 and 2.x: only Library.define/impl on the CPU, CUDA,
Meta and Autograd keys are used, which both support."""
import torch
from torch.utils.dlpack import to_dlpack

from . import _C, _core
from ._C import VisionOpsError, VisionOpsTypeError, VisionOpsValueError

_DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}
_KDL_CPU, _KDL_CUDA = 1, 2
_CUDA_STREAM_LEGACY = 1  # cudaStreamLegacy: torch's default stream is the legacy one

_lib = torch.library.Library("visionops", "DEF")


def _export(op, what, t):
    """One tensor as a DLPack capsule. Tensors DLPack cannot carry (bool in
    torch 1.13, quantized, sparse) are an error naming the op, the argument
    and the dtype or layout, not torch's DLPack message."""
    if t.dtype == torch.bool:
        raise VisionOpsTypeError("%s: %s has unsupported dtype bool" % (op, what))
    if t.is_quantized:
        raise VisionOpsTypeError("%s: %s is a quantized tensor (%s); visionops takes float "
                                 "tensors (dequantize() it first)"
                                 % (op, what, str(t.dtype).replace("torch.", "")))
    if t.layout != torch.strided:
        raise VisionOpsTypeError("%s: %s has layout %s; visionops takes dense (strided) tensors"
                                 % (op, what, str(t.layout).replace("torch.", "")))
    return to_dlpack(t.detach())


def _borrow(op, what, value):
    """A tensor argument as a DLPack capsule (no copy, no stream sync: the
    op runs on the tensor's current stream)."""
    if isinstance(value, torch.Tensor):
        return _export(op, what, value)
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], torch.Tensor):
        return [_export(op, "%s[%d]" % (what, i), v) for i, v in enumerate(value)]
    return value


def _first_tensor(args):
    for a in args:
        if isinstance(a, torch.Tensor):
            return a
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
            return a[0]
    return None


def _alloc(shape, dtype, device):
    if device[0] == _KDL_CUDA:
        dev = torch.device("cuda", device[1])
    elif device[0] == _KDL_CPU:
        dev = torch.device("cpu")
    else:
        raise VisionOpsError("visionops: outputs on DLPack device type %d are not supported"
                             % device[0])
    return torch.empty(shape, dtype=_DTYPES[dtype], device=dev)


class _BelowAutograd:
    """Dispatch below the Autograd keys for the duration of a with block.
    torch 1.13's _AutoDispatchBelowAutograd is a guard that acts while the
    object lives; torch 2.x made it a context manager."""

    def __enter__(self):
        guard = torch._C._AutoDispatchBelowAutograd()
        if hasattr(guard, "__enter__"):
            guard.__enter__()
        self._guard = guard
        return self

    def __exit__(self, *exc):
        guard, self._guard = self._guard, None
        if hasattr(guard, "__exit__"):
            guard.__exit__(*exc)
        del guard
        return False


def _pack(schema, outs):
    if schema.returns_list:
        return list(outs)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _deterministic():
    return _core.is_deterministic() or torch.are_deterministic_algorithms_enabled()


def _make_kernel(schema):
    name = schema.name

    def kernel(*args):
        args = schema.complete(args)
        first = _first_tensor(args)
        args = [_borrow(name, a.name, v) for a, v in zip(schema.args, args)]
        if first is not None and first.is_cuda:
            with torch.cuda.device(first.device):
                stream = torch.cuda.current_stream(first.device).cuda_stream or _CUDA_STREAM_LEGACY
                outs = _C.call(name, args, _alloc, stream, 0, _deterministic())
        else:
            outs = _C.call(name, args, _alloc, 0, _core.get_num_threads(), _deterministic())
        return _pack(schema, outs)

    kernel.__name__ = "visionops_%s" % name
    return kernel


# ---------------------------------------------------------------- Meta
#
# Under torch.export and torch.compile(dynamic=True) the sizes of fake/meta
# tensors are SymInts. The Meta kernel keeps them symbolic: the C library's
# checks (_C.infer) run on each size's hint, the concrete value the shape
# environment traced with (no int() on a SymInt, which would specialize it to
# a constant), and the output shapes come from the op's shape rule (where
# each output dimension comes from, stated by the C library) evaluated on
# the SymInts themselves. Equalities the checks demand between sizes the
# hints happen to satisfy are checked again, on real sizes, when the op runs:
# every visionops kernel validates its arguments.

# The size a data-dependent (unbacked) SymInt, e.g. the number of boxes NMS
# keeps, is checked with: it has no hint until the program runs.
UNBACKED_SIZE_HINT = 16


def _hint(v):
    """A concrete int for an int or SymInt, without guarding on it."""
    if isinstance(v, int):
        return v
    node = getattr(v, "node", None)
    if node is None:
        return int(v)
    constant = node.maybe_as_int()
    if constant is not None:
        return constant
    if node.has_hint():
        return int(node.hint)
    return UNBACKED_SIZE_HINT


def _spec(op, what, t):
    if t.dtype not in _DTYPE_NAMES:
        raise VisionOpsTypeError("%s: %s has unsupported dtype %s"
                                 % (op, what, str(t.dtype).replace("torch.", "")))
    return {"shape": tuple(_hint(d) for d in t.shape), "dtype": _DTYPE_NAMES[t.dtype],
            "device": (_KDL_CPU, 0)}


def _make_meta(schema):
    name = schema.name
    rule = _core.SHAPE_RULES[name]

    def meta(*args):
        args = schema.complete(args)
        specs, devices = [], set()
        for arg, a in zip(schema.args, args):
            if isinstance(a, torch.Tensor):
                devices.add(a.device)
                a = _spec(name, arg.name, a)
            elif isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
                devices.update(t.device for t in a)
                a = [_spec(name, "%s[%d]" % (arg.name, i), t) for i, t in enumerate(a)]
            elif arg.type == "SymInt":
                a = _hint(a)
            specs.append(a)
        if len(devices) > 1:  # e.g. CPU and Meta tensors in one call
            raise VisionOpsValueError("%s: all tensors must be on one device, got %s"
                             % (name, " and ".join(sorted(str(d) for d in devices))))
        first = _first_tensor(args)
        device = first.device if first is not None else torch.device("meta")
        described = _C.infer(name, specs)
        shapes = rule.shapes({a.name: v for a, v in zip(schema.args, args)}, len(described))
        outs = [torch.empty(shape, dtype=_DTYPES[dtype], device=device)
                for shape, (_, dtype, _) in zip(shapes, described)]
        return _pack(schema, outs)

    meta.__name__ = "visionops_%s_meta" % name
    return meta


# ------------------------------------------------------------------ autograd
#
# The backward op's arguments are found by name among the forward's arguments
# and outputs; its first argument receives the gradient of the forward's first
# output (every backward here is linear in it); batch_size/channels/height/
# width are the forward input's sizes. Its outputs named grad_X are the
# gradients of argument X; an unnamed (or first) output is the gradient of
# the forward's first tensor argument.

_SIZE_NAMES = ("batch_size", "channels", "height", "width")


def _flatten(schema, args):
    """Tensor arguments (list items included) as one flat tuple, so
    autograd.Function tracks each; `layout` rebuilds the argument list."""
    flat, layout = [], []
    for a, value in zip(schema.args, args):
        if a.type == "Tensor[]":
            layout.append(("list", len(value)))
            flat.extend(value)
        elif a.type.startswith("Tensor"):
            layout.append(("tensor", 1))
            flat.append(value)
        else:
            layout.append(("value", value))
    return flat, layout


def _unflatten(layout, flat):
    args, i = [], 0
    for kind, v in layout:
        if kind == "list":
            args.append(list(flat[i:i + v]))
            i += v
        elif kind == "tensor":
            args.append(flat[i])
            i += 1
        else:
            args.append(v)
    return args


def _backward_args(schema, bschema, args, outs, grad):
    named = {a.name: v for a, v in zip(schema.args, args)}
    named.update(zip(schema.returns, outs))
    first_input = named[schema.tensor_args[0]]
    result = []
    for i, a in enumerate(bschema.args):
        if i == 0:
            result.append(grad)
        elif a.name in named:
            result.append(named[a.name])
        elif a.name in _SIZE_NAMES and isinstance(first_input, torch.Tensor):
            # SymInt in the backward's schema: a symbolic size passes as is
            result.append(first_input.shape[_SIZE_NAMES.index(a.name)])
        else:
            raise VisionOpsError("visionops: cannot supply %s of %s for the backward of %s"
                               % (a.name, bschema.name, schema.name))
    return result


def _make_autograd(schema):
    bschema = _core.SCHEMAS[schema.backward]
    op = getattr(torch.ops.visionops, schema.name)
    backward_op = getattr(torch.ops.visionops, bschema.name)

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, layout, *flat):
            args = _unflatten(layout, flat)
            with _BelowAutograd():
                result = op(*args)
            outs = result if isinstance(result, (tuple, list)) else (result,)
            ctx.layout = layout
            ctx.num_flat = len(flat)
            ctx.save_for_backward(*flat, *outs)
            ctx.mark_non_differentiable(*[o for o in outs if not o.is_floating_point()])
            return tuple(result) if isinstance(result, list) else result

        @staticmethod
        def backward(ctx, *grads):
            saved = ctx.saved_tensors
            flat, outs = saved[:ctx.num_flat], saved[ctx.num_flat:]
            args = _unflatten(ctx.layout, flat)
            grad = grads[0]
            if grad is None:
                return (None,) * (1 + ctx.num_flat)
            result = backward_op(*_backward_args(schema, bschema, args, outs, grad))
            results = list(result) if isinstance(result, (tuple, list)) else [result]
            per_arg = {}
            if bschema.returns_list:
                per_arg[schema.tensor_args[0]] = results
            else:
                for k, (out_name, value) in enumerate(zip(bschema.returns, results)):
                    if out_name.startswith("grad_"):
                        per_arg[out_name[5:]] = value
                    elif k == 0:
                        per_arg[schema.tensor_args[0]] = value
            grads_in = []
            for a, value, (kind, n) in zip(schema.args, args, ctx.layout):
                if kind == "value":
                    continue
                g = per_arg.get(a.name)
                if kind == "list":
                    grads_in.extend(g if g is not None else [None] * n)
                else:
                    grads_in.append(g if value is not None else None)
            return (None, *grads_in)

    Function.__name__ = "%sFunction" % schema.name

    def autograd_kernel(*args):
        args = schema.complete(args)
        flat, layout = _flatten(schema, args)
        result = Function.apply(layout, *flat)
        return list(result) if schema.returns_list else result

    autograd_kernel.__name__ = "visionops_%s_autograd" % schema.name
    return autograd_kernel


def _make_below_autograd_op(op):
    """The Autograd kernel of an op without a backward: runs it below
    autograd (its outputs do not require grad). Also covers AutogradMeta,
    which has no fallthrough in torch 1.13."""

    def below_autograd(*args):
        with _BelowAutograd():
            return op(*args)

    below_autograd.__name__ = "visionops_%s_no_grad" % op.__name__
    return below_autograd


def _make_below_autograd(schema):
    return _make_below_autograd_op(getattr(torch.ops.visionops, schema.name))


# ------------------------------------------------ nms with a data-dependent size
#
# The library's nms and batched_nms return a fixed-size `keep` [N] and the
# count `num_kept`: no host sync, so they run inside CUDA graphs. torchvision's
# form, only the kept indices, has a size known only after the run; these
# two ops give it (visionops.nms and visionops.batched_nms call them on torch
# tensors), with a fake kernel that allocates a data-dependent size, so
# torch.export and torch.compile capture them as torchvision's nms is.

NMS_KEPT = {
    "nms_kept": ("nms_kept(Tensor boxes, Tensor scores, float iou_threshold) -> Tensor", "nms"),
    "batched_nms_kept": ("batched_nms_kept(Tensor boxes, Tensor scores, Tensor idxs, "
                         "float iou_threshold) -> Tensor", "batched_nms"),
}


def _make_kept_kernel(fixed_name):
    def kept(*args):
        keep, num_kept = getattr(torch.ops.visionops, fixed_name)(*args)
        return keep[:int(num_kept)]  # the one host sync, as torchvision's nms

    kept.__name__ = "visionops_%s_kept" % fixed_name
    return kept


def _make_kept_fake(fixed_name):
    """The fake (abstract) kernel: the library's shape checks on the fixed
    form (its Meta kernel, so a symbolic N stays symbolic), then an int64
    vector of a new data-dependent size, at most N."""
    fixed = getattr(torch.ops.visionops, fixed_name)

    def kept_fake(*args):
        keep, _ = fixed(*args)
        if _get_ctx is None:
            raise VisionOpsError("visionops.%s_kept: its output size depends on the data; on Meta "
                                 "tensors use torch.ops.visionops.%s (keep, num_kept)"
                                 % (fixed_name, fixed_name))
        kept = _get_ctx().new_dynamic_size()
        torch._check(kept <= keep.shape[0])
        return keep.new_empty((kept,))

    kept_fake.__name__ = "visionops_%s_kept_fake" % fixed_name
    return kept_fake


_get_ctx = getattr(torch.library, "get_ctx", None)
_register_fake = getattr(torch.library, "register_fake", None) or getattr(
    torch.library, "impl_abstract", None)


def _register_kept():
    for name, (text, fixed_name) in NMS_KEPT.items():
        _lib.define(text)
        kernel = _make_kept_kernel(fixed_name)
        _lib.impl(name, kernel, "CPU")
        _lib.impl(name, kernel, "CUDA")
        if _register_fake is not None:
            _register_fake("visionops::" + name, _make_kept_fake(fixed_name), lib=_lib)
        else:  # torch 1.13: Meta tensors cannot carry a data-dependent size
            _lib.impl(name, _make_kept_fake(fixed_name), "Meta")
        _lib.impl(name, _make_below_autograd_op(getattr(torch.ops.visionops, name)), "Autograd")


def _register():
    for name, schema in _core.SCHEMAS.items():
        _lib.define(schema.text)
        kernel = _make_kernel(schema)
        _lib.impl(name, kernel, "CPU")
        _lib.impl(name, kernel, "CUDA")
        _lib.impl(name, _make_meta(schema), "Meta")
    for name, schema in _core.SCHEMAS.items():
        autograd = _make_autograd(schema) if schema.backward else _make_below_autograd(schema)
        _lib.impl(name, autograd, "Autograd")
    _register_kept()


_register()
