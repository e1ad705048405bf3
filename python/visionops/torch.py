"""PyTorch integration: every op of the C library registered with
torch.library in the "visionops" namespace, generated from the library's own
schema list. Each op gets a kernel for every backend of the library that
torch has tensors for (CPU, CUDA: tensors through DLPack, outputs from
torch.empty, device work on the current stream), a Meta kernel
(the library's checks without data, output shapes from the library's shape
rules, so symbolic sizes under torch.export / torch.compile(dynamic=True)
stay symbolic), and, where the registry names a backward op, an autograd
kernel that calls it.

visionops.torch.ops.<name> calls an op as torch.ops.visionops.<name> does,
but on plain eager tensors, when the dispatcher would do nothing else, runs
its kernel directly (see "direct calls" below); the public functions use it.

Under torch.autocast the ops take low-precision features beside float32 rois,
boxes and scores natively; deform_conv2d, multi_scale_roi_align and
deform_attn get autocast kernels (see "autocast" below).

Works with torch 1.13 and 2.x: only Library.define/impl on the CPU, CUDA,
Meta, Autograd and Autocast keys are used, which both support. With torch >= 2
the autograd kernels also work under torch.func (grad, jacrev, jacfwd, vmap,
hessian); forward mode where an op is linear in its argument (deform_attn: in
value and attn_weight, not sampling_loc)."""
import types

import torch
import torch.autograd.forward_ad as _forward_ad
import torch.jit._builtins
from torch.utils.dlpack import to_dlpack

from . import _C, _core
from ._C import VisionOpsError, VisionOpsTypeError, VisionOpsValueError

_DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}
_CUDA_STREAM_LEGACY = 1  # cudaStreamLegacy: torch's default stream is the legacy one

# What torch calls the library's backends: for each backend torch has
# tensors for, its dispatch key, and the queue torch's current work on a
# device of that type runs on (0 where the backend has no queues). The
# backends themselves come from the library's list (_C.device_types()); one
# torch does not know (OpenCL) is simply not registered here.
_TORCH_BACKENDS = {
    "cpu": ("CPU", lambda device: 0),
    "cuda": ("CUDA",
             lambda device: torch.cuda.current_stream(device).cuda_stream or _CUDA_STREAM_LEGACY),
}
_BACKEND_OF_DEVICE_TYPE = {t: name for name, t in _C.device_types().items()}


def _cuda_workspace_alloc(size, device_type, device_id, stream):
    # (the stream is the one the call runs on: torch's default is handle 0)
    return torch.cuda.caching_allocator_alloc(
        size, device_id, 0 if stream == _CUDA_STREAM_LEGACY else stream)


def _cuda_workspace_free(address, device_type, device_id, stream):
    torch.cuda.caching_allocator_delete(address)


# The ops' temporary memory on CUDA comes from torch's caching allocator, as
# torch's own ops' does: blocks are reused without cudaMalloc / cudaFree,
# stream-ordered (a block freed while the call's work is queued is reused
# only by work queued after it on that stream), counted in
# torch.cuda.memory_allocated, and from the graph's private pool while a
# CUDA graph is captured.
_CUDA_WORKSPACE = (_cuda_workspace_alloc, _cuda_workspace_free)
_KDL_CPU = _C.device_types()["cpu"]


def _dispatch_keys():
    """The torch dispatch keys of the library's backends torch knows."""
    return [_TORCH_BACKENDS[name][0] for name in _C.device_types() if name in _TORCH_BACKENDS]

_lib = torch.library.Library("visionops", "DEF")


def _export(op, what, t):
    """One tensor as a DLPack capsule. Tensors DLPack cannot carry (bool in
    torch 1.13, quantized, sparse) are an error naming the op, the argument
    and the dtype or layout, not torch's DLPack message."""
    if t.dtype == torch.bool:
        raise VisionOpsTypeError("%s: %s has unsupported dtype bool" % (op, what))
    try:  # the usual case first: one call (each check below costs ~0.05 us)
        return to_dlpack(t)
    except Exception:
        pass
    if t.is_quantized:
        raise VisionOpsTypeError("%s: %s is a quantized tensor (%s); visionops takes float "
                                 "tensors (dequantize() it first)"
                                 % (op, what, str(t.dtype).replace("torch.", "")))
    if t.layout != torch.strided:
        raise VisionOpsTypeError("%s: %s has layout %s; visionops takes dense (strided) tensors"
                                 % (op, what, str(t.layout).replace("torch.", "")))
    return to_dlpack(t.detach())  # or torch's own error


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


_CPU = torch.device("cpu")


def _alloc(shape, dtype, device):
    """A new output for _C.call, with its address (a fresh torch.empty is
    contiguous, as the library describes it: no DLPack export needed)."""
    if device[0] == _KDL_CPU:
        t = torch.empty(shape, dtype=_DTYPES[dtype], device=_CPU)
        return t, t.data_ptr()
    name = _BACKEND_OF_DEVICE_TYPE.get(device[0])
    if name not in _TORCH_BACKENDS:
        raise VisionOpsError("visionops: outputs on DLPack device type %d are not supported"
                             % device[0])
    t = torch.empty(shape, dtype=_DTYPES[dtype], device=torch.device(name, device[1]))
    return t, t.data_ptr()


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


_DEVICE_CHECKS_OFF = 2  # VO_DEVICE_CHECKS_OFF


def _deterministic():
    return _core.is_deterministic() or torch.are_deterministic_algorithms_enabled()


def _run(schema, args, alloc, omit=0):
    """The C op on torch tensors (on a CUDA tensor's current stream); only
    the tensor (and tensor list) arguments are exported, the rest pass as
    they are. Returns the outputs alloc made, as a list; output k is None,
    not computed, when bit k of omit is set (roi_pool's argmax and the
    position-sensitive ops' channel_mapping may be)."""
    name = schema.name
    args = schema.complete(args)
    first = _first_tensor(args)
    for i in schema.tensor_positions:
        args[i] = _borrow(name, schema.args[i].name, args[i])
    if first is not None and first.is_cuda:
        with torch.cuda.device(first.device):
            queue = _TORCH_BACKENDS["cuda"][1](first.device)
            # While a CUDA graph is captured the work must not wait for the
            # host: the values are not checked then (the kernels stay in
            # bounds with bad ones; vo_context_set_device_checks).
            checks = _DEVICE_CHECKS_OFF if torch.cuda.is_current_stream_capturing() else 0
            return _C.call(name, args, alloc, queue, 0, _deterministic(), checks,
                           _CUDA_WORKSPACE, omit)
    return _C.call(name, args, alloc, 0, _core.get_num_threads(), _deterministic(), omit=omit)


def _make_kernel(schema):
    def kernel(*args):
        return _pack(schema, _run(schema, args, _alloc))

    kernel.__name__ = "visionops_%s" % schema.name
    return kernel


def _dtype_name(t):
    return _DTYPE_NAMES.get(t.dtype, str(t.dtype).replace("torch.", ""))


def _bump_version(t):
    """Tells autograd that t was written in place (a tensor saved for a
    backward and overwritten through out= is then an error, not a wrong
    gradient): torch 2.x's _increment_version, or on torch 1.13 an in-place
    op on an empty view (views share the counter). Inference tensors have
    no counter."""
    if t.is_inference():
        return
    if hasattr(torch._C, "_increment_version"):
        torch._C._increment_version(t)
    else:
        with torch.no_grad():
            t.view(-1)[:0].zero_()


def run_into(name, args, outs, omit=0):
    """Op `name` on torch tensors, writing its outputs into the caller's
    `outs` (out=; None items and outputs past them are allocated, or left
    out as None with bit k of omit for output k), which it returns with the
    rest as a list. As torch's own out= functions, this records no
    gradient: an argument (or out) that requires grad while grad mode is on
    is an error. It runs the kernel directly, not through the torch.ops
    dispatcher, so it is for eager code."""
    schema = _core.SCHEMAS[name]
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    tensors += [t for a in args if isinstance(a, (list, tuple)) for t in a
                if isinstance(t, torch.Tensor)]
    for o in outs:
        if o is not None and not isinstance(o, torch.Tensor):
            raise VisionOpsTypeError("%s: out must be a torch.Tensor beside torch inputs, got a %s"
                                     % (name, type(o).__name__))
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors + [
            o for o in outs if o is not None]):
        raise VisionOpsValueError("%s: out= does not record gradients, and an argument or out "
                                  "requires grad: call it without out= to differentiate, or "
                                  "under torch.no_grad()" % name)
    # detach(): the same memory and version counter, exportable through DLPack.
    outs = [o.detach() if o is not None and o.requires_grad else o for o in outs]
    result = _run(schema, list(args), _core.Into(name, outs, _alloc, _dtype_name, omit), omit)
    for o in outs:
        if o is not None:
            _bump_version(o)
    return result


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
# and outputs; its argument named grad_output (torchvision's
# _deform_attn_backward has it after the forward's tensors), else its first
# argument, receives the gradient of the forward's first output (every
# backward here is linear in it); batch_size/channels/height/width are the
# forward input's sizes. Its outputs named grad_X are the
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


def _grad_position(bschema):
    """Where a backward op takes the gradient of the forward's output: its
    argument named grad_output, else its first."""
    names = [a.name for a in bschema.args]
    return names.index("grad_output") if "grad_output" in names else 0


def _backward_args(schema, bschema, args, outs, grad):
    named = {a.name: v for a, v in zip(schema.args, args)}
    named.update(zip(schema.returns, outs))
    first_input = named[schema.tensor_args[0]]
    grad_at = _grad_position(bschema)
    result = []
    for i, a in enumerate(bschema.args):
        if i == grad_at:
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


# The kernels are torch.autograd.Functions, with forward(ctx, ...) in torch
# 1.13 and forward plus setup_context in torch >= 2. torch.func's transforms
# (grad, jacrev, jacfwd, vmap) reach an op's Autograd kernel with the tensors
# of one transform level, where autograd.Function.apply refuses to run (it
# would hand the Function to torch.func's custom_function_call, which has no
# kernel below the transform: the reason torch.library.register_autograd and
# custom_op fail under torch.func too). There the kernel applies the same
# Function as a single-level function, as torch.func itself does for each
# level; its forward runs the op below this level's autograd with grad mode
# on, so outer levels (jacrev over grad) record it. vmap never reaches the
# Autograd key: the op is batched first (the batching rules below, or torch's
# per-sample loop fallback), so these Functions need no vmap rule.
try:  # torch >= 2: what torch.func applies an autograd.Function per level with
    from torch._C._functorch import (get_single_level_autograd_function_allowed,
                                     set_single_level_autograd_function_allowed)
    from torch.autograd.forward_ad import _set_fwd_grad_enabled
    from torch.autograd.function import _SingleLevelFunction
    _FUNC_STYLE = True
except ImportError:  # torch 1.13
    _FUNC_STYLE = False


class _SingleLevelAllowed:
    def __enter__(self):
        self._prev = get_single_level_autograd_function_allowed()
        set_single_level_autograd_function_allowed(True)

    def __exit__(self, *exc):
        set_single_level_autograd_function_allowed(self._prev)
        return False


# Ops linear in their first argument (a tensor or a tensor list), so their
# jvp is the op applied to that argument's tangent. The tangents of the other
# tensor arguments (rois, channel_mapping, ...) count as zero, as their
# gradients do in reverse mode.
_LINEAR_IN_FIRST = {
    "roi_align", "roi_align_backward", "roi_pool_backward", "ps_roi_align",
    "ps_roi_align_backward", "ps_roi_pool", "ps_roi_pool_backward", "multi_scale_roi_align",
    "multi_scale_roi_align_backward", "roi_align_rotated", "roi_align_rotated_backward",
}


def _forward_ops():
    """{backward op name: forward op name} from the registry."""
    return {s.backward: name for name, s in _core.SCHEMAS.items() if s.backward}


def _outputs(result):
    return result if isinstance(result, (tuple, list)) else (result,)


def _output_tangents(result):
    """jvp's return: the tangents in the forward's output structure, None for
    integer (non-differentiable) outputs."""
    outs = [o if o.is_floating_point() else None for o in _outputs(result)]
    return outs[0] if not isinstance(result, (tuple, list)) else tuple(outs)


def _registry_backward(schema):
    """backward(ctx, grads) -> gradients of the flat tensor inputs, through
    the backward op the registry names (itself differentiable where the
    registry names a backward of the backward)."""
    bschema = _core.SCHEMAS[schema.backward]
    backward_op = getattr(torch.ops.visionops, bschema.name)

    def backward(ctx, grads):
        saved = ctx.saved_tensors
        flat, outs = saved[:ctx.num_flat], saved[ctx.num_flat:]
        args = _unflatten(ctx.layout, flat)
        grad = grads[0]
        if grad is None:
            return (None,) * ctx.num_flat
        results = list(_outputs(backward_op(*_backward_args(schema, bschema, args, outs, grad))))
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
        return tuple(grads_in)

    return backward


def _no_double_backward(schema):
    """The backward of a backward op the registry names no backward for: an
    error rather than a silent zero (the op's outputs do track autograd, so
    a second derivative through it cannot come out detached)."""
    forward_name = _forward_ops()[schema.name]

    def backward(ctx, grads):
        raise VisionOpsError("visionops.%s: differentiating it is not supported (no backward is "
                             "registered for it), so %s has no double backward"
                             % (schema.name, forward_name))

    return backward


def _linear_jvp(op):
    def jvp(ctx, tangents):
        saved = ctx.saved_tensors
        flat, outs = saved[:ctx.num_flat], saved[ctx.num_flat:]
        kind, n = ctx.layout[0]
        n = n if kind == "list" else 1
        if all(t is None for t in tangents[:n]):
            return _output_tangents(tuple(torch.zeros_like(o) for o in outs)
                                    if len(outs) > 1 else torch.zeros_like(outs[0]))
        linear = [torch.zeros_like(x) if t is None else t for x, t in zip(flat[:n], tangents[:n])]
        return _output_tangents(op(*_unflatten(ctx.layout, linear + list(flat[n:]))))

    return jvp


def _roi_pool_jvp(op):
    """roi_pool is linear in input given argmax: the output tangent is the
    input tangent at argmax (zero in empty bins, argmax -1)."""

    def jvp(ctx, tangents):
        _, rois, out, argmax = ctx.saved_tensors
        t = tangents[0]
        if t is None:
            return torch.zeros_like(out), None
        idx = argmax.flatten(2).long()
        picked = t.flatten(2)[rois[:, 0].long()].gather(2, idx.clamp(min=0))
        return torch.where(idx >= 0, picked, torch.zeros_like(picked)).view(out.shape), None

    return jvp


def _deform_conv2d_jvp(op):
    """deform_conv2d is linear in each of input, weight and mask with the
    others fixed, affine in bias; the jvp is the sum of those terms. It is
    not linear in offset: a tangent of offset is an error."""

    def jvp(ctx, tangents):
        x, weight, offset, mask, _, out = ctx.saved_tensors
        t_x, t_weight, t_offset, t_mask, t_bias = tangents
        if t_offset is not None:
            raise VisionOpsError("visionops.deform_conv2d: forward-mode AD (torch.func.jvp, "
                                 "jacfwd, torch.autograd.forward_ad) with respect to offset is "
                                 "not supported; use reverse mode (torch.func.grad, jacrev, vjp) "
                                 "for offset")

        def conv(i, w, m):
            return op(*_unflatten(ctx.layout, [i, w, offset, m, None]))

        terms = []
        if t_x is not None:
            terms.append(conv(t_x, weight, mask))
        if t_weight is not None:
            terms.append(conv(x, t_weight, mask))
        if t_mask is not None and mask is not None:
            terms.append(conv(x, weight, t_mask))
        if t_bias is not None:
            terms.append(t_bias.view(1, -1, 1, 1).expand(out.shape))
        return sum(terms[1:], terms[0]) if terms else torch.zeros_like(out)

    return jvp


def _deform_attn_jvp(op):
    """deform_attn is linear in value and in attn_weight with the others
    fixed; the jvp is the sum of those two terms. It is not linear in
    sampling_loc: a tangent of sampling_loc is an error."""

    def jvp(ctx, tangents):
        value, shapes, starts, loc, weight, out = ctx.saved_tensors
        t_value, _, _, t_loc, t_weight = tangents
        if t_loc is not None:
            raise VisionOpsError("visionops.deform_attn: forward-mode AD (torch.func.jvp, "
                                 "jacfwd, torch.autograd.forward_ad) with respect to "
                                 "sampling_loc is not supported; use reverse mode "
                                 "(torch.func.grad, jacrev, vjp) for sampling_loc")

        def attn(v, w):
            return op(*_unflatten(ctx.layout, [v, shapes, starts, loc, w]))

        terms = []
        if t_value is not None:
            terms.append(attn(t_value, weight))
        if t_weight is not None:
            terms.append(attn(value, t_weight))
        return sum(terms[1:], terms[0]) if terms else torch.zeros_like(out)

    return jvp


def _unsupported_jvp(schema):
    def jvp(ctx, tangents):
        raise VisionOpsError("visionops.%s: forward-mode AD (torch.func.jvp, jacfwd, "
                             "torch.autograd.forward_ad) is not supported; use reverse mode "
                             "(torch.func.grad, jacrev, vjp)" % schema.name)

    return jvp


def _jvp_rule(schema, op):
    if schema.name in _LINEAR_IN_FIRST:
        return _linear_jvp(op)
    if schema.name == "roi_pool":
        return _roi_pool_jvp(op)
    if schema.name == "deform_conv2d":
        return _deform_conv2d_jvp(op)
    if schema.name == "deform_attn":
        return _deform_attn_jvp(op)
    return _unsupported_jvp(schema)


def _make_functions(schema, backward, jvp):
    """The autograd.Function of op `schema`, taking (layout, *flat tensors),
    and its single-level twin for torch.func (None in torch 1.13):
    backward(ctx, grads) gives the flat inputs' gradients, jvp(ctx, tangents)
    the outputs' tangents."""
    op = getattr(torch.ops.visionops, schema.name)

    def run(layout, flat):
        with torch.enable_grad(), _BelowAutograd():
            result = op(*_unflatten(layout, flat))
        return tuple(result) if isinstance(result, list) else result

    def setup_context(ctx, inputs, output):
        layout, flat = inputs[0], inputs[1:]
        outs = _outputs(output)
        ctx.layout, ctx.num_flat = layout, len(flat)
        ctx.save_for_backward(*flat, *outs)
        ctx.save_for_forward(*flat, *outs)
        ctx.mark_non_differentiable(*[o for o in outs if not o.is_floating_point()])
        ctx.set_materialize_grads(False)  # absent tangents stay None for jvp

    def function_backward(ctx, *grads):
        return (None, *backward(ctx, grads))

    def function_jvp(ctx, _layout, *tangents):
        outs = ctx.saved_tensors[ctx.num_flat:]
        if not _FUNC_STYLE and any(not o.is_floating_point() for o in outs):
            raise VisionOpsError("visionops.%s: forward-mode AD needs torch >= 2 (torch %s's "
                                 "autograd.Function fails on the op's integer output)"
                                 % (schema.name, torch.__version__))
        return jvp(ctx, tangents)

    body = {"backward": staticmethod(function_backward), "jvp": staticmethod(function_jvp)}
    name = "%sFunction" % schema.name
    if not _FUNC_STYLE:
        def forward_with_ctx(ctx, layout, *flat):
            result = run(layout, flat)
            setup_context(ctx, (layout, *flat), result)
            return result

        body["forward"] = staticmethod(forward_with_ctx)
        return type(name, (torch.autograd.Function,), body), None

    def forward(layout, *flat):
        with _set_fwd_grad_enabled(True):
            return run(layout, flat)

    body.update(forward=staticmethod(forward), setup_context=staticmethod(setup_context))
    return (type(name, (torch.autograd.Function,), body),
            type(name + "SingleLevel", (_SingleLevelFunction,), body))


_functorch_active = getattr(torch._C, "_are_functorch_transforms_active", None)


def _differentiating(schema, args):
    """Whether a call must go through the autograd.Function: reverse mode
    (grad enabled and a tensor argument, or list item, requires grad), a
    forward-mode dual level open, or a torch.func transform active."""
    if _forward_ad._current_level >= 0:
        return True
    if _functorch_active is not None and _functorch_active():
        return True
    if not torch.is_grad_enabled():
        return False
    for i in schema.tensor_positions:
        value = args[i]
        if isinstance(value, torch.Tensor):
            if value.requires_grad:
                return True
        elif isinstance(value, (list, tuple)) and any(t.requires_grad for t in value):
            return True
    return False


def _make_autograd(schema):
    """The Autograd kernel of an op the registry names a backward for, or of
    a backward op (which then has no double backward)."""
    op = getattr(torch.ops.visionops, schema.name)
    backward = _registry_backward(schema) if schema.backward else _no_double_backward(schema)
    function, single_level = _make_functions(schema, backward, _jvp_rule(schema, op))

    def autograd_kernel(*args):
        args = schema.complete(args)
        if not _differentiating(schema, args):
            # Nothing to record: the op below the Autograd keys directly,
            # without autograd.Function's ~15 us a call.
            with _BelowAutograd():
                return op(*args)
        flat, layout = _flatten(schema, args)
        if single_level is not None and _functorch_active():
            with _SingleLevelAllowed():
                result = single_level.apply(tuple(layout), *flat)
        else:
            result = function.apply(tuple(layout), *flat)
        return list(result) if schema.returns_list else result

    autograd_kernel.__name__ = "visionops_%s_autograd" % schema.name
    return autograd_kernel


def _select_sample(value, dim, i):
    if isinstance(value, (list, tuple)):
        return [_select_sample(v, d, i) for v, d in zip(value, dim)]
    return value if dim is None else value.select(dim, i)


def _make_loop_vmap(schema):
    """A per-sample loop batching rule (torch.library.register_vmap) for ops
    with a Tensor[] argument or return, which torch's own loop fallback
    refuses (multi_scale_roi_align and its backward)."""
    op = getattr(torch.ops.visionops, schema.name)

    def loop_vmap(info, in_dims, *args):
        samples = [_outputs(op(*[_select_sample(a, d, i) for a, d in zip(args, in_dims)]))
                   for i in range(info.batch_size)]
        outs = [torch.stack(column) for column in zip(*samples)]
        if schema.returns_list:
            return outs, [0] * len(outs)
        return (outs[0], 0) if len(outs) == 1 else (tuple(outs), (0,) * len(outs))

    loop_vmap.__name__ = "visionops_%s_vmap" % schema.name
    return loop_vmap


# The RoI ops and their backward ops treat channels independently (the
# position-sensitive ones in groups of pooled_height * pooled_width, which
# stay whole when the samples are laid out sample-major), so vmap over their
# feature-shaped tensors folds the batch into the channels: one call instead
# of one per sample (torch.func.jacrev over an output of M elements is a
# vmap of M). Batched rois (or a channel count the per-sample op refuses)
# take the per-sample loop, which reports errors as the op does.
_CHANNEL_FOLDABLE = {
    "roi_align", "roi_align_backward", "roi_pool", "roi_pool_backward", "ps_roi_align",
    "ps_roi_align_backward", "ps_roi_pool", "ps_roi_pool_backward",
}
_FEATURE_ARGS = ("argmax", "channel_mapping")  # besides the first argument


def _make_channel_fold_vmap(schema):
    op = getattr(torch.ops.visionops, schema.name)
    names = [a.name for a in schema.args]
    features = [0] + [names.index(n) for n in _FEATURE_ARGS if n in names]
    mapping = names.index("channel_mapping") if "channel_mapping" in names else None
    channels = names.index("channels") if "channels" in names else None
    loop = _make_loop_vmap(schema)
    position_sensitive = schema.name.startswith("ps_")

    def fold(value, dim, size):
        """[S, C, ...] of each sample as [S, size * C, ...], sample-major."""
        value = value.movedim(dim, 1) if dim is not None else value.unsqueeze(1).expand(
            value.shape[0], size, *value.shape[1:])
        return value.reshape(value.shape[0], size * value.shape[2], *value.shape[3:])

    def channel_fold_vmap(info, in_dims, *args):
        size = info.batch_size
        if any(d is not None for i, d in enumerate(in_dims) if i not in features):
            return loop(info, in_dims, *args)
        # input channels per sample: of the forward's input, or the backward's argument
        c_in = args[channels] if channels is not None else args[0].shape[
            1 + (in_dims[0] is not None and in_dims[0] <= 1)]
        if c_in == 0 or (position_sensitive and channels is None and c_in % (args[3] * args[4])):
            return loop(info, in_dims, *args)
        folded = list(args)
        for i in features:
            folded[i] = fold(args[i], in_dims[i], size)
        if mapping is not None:  # sample b's input channels start at b * c_in
            m = folded[mapping]
            offsets = torch.arange(size, dtype=m.dtype, device=m.device) * c_in
            m = m.view(m.shape[0], size, -1, *m.shape[2:]) + offsets.view(1, size, 1, 1, 1)
            folded[mapping] = m.flatten(1, 2)
        if channels is not None:
            folded[channels] = size * c_in
        outs = []
        for name, out in zip(schema.returns, _outputs(op(*folded))):
            out = out.view(out.shape[0], size, out.shape[1] // size, *out.shape[2:])
            outs.append(out.remainder(c_in) if name == "channel_mapping" else out)
        return (outs[0], 1) if len(outs) == 1 else (tuple(outs), (1,) * len(outs))

    channel_fold_vmap.__name__ = "visionops_%s_vmap" % schema.name
    return channel_fold_vmap


def _make_below_autograd(name):
    """The Autograd kernel of op `name`, which has no gradient: runs it below
    autograd (its outputs do not require grad). Also covers AutogradMeta,
    which has no fallthrough in torch 1.13."""
    op = getattr(torch.ops.visionops, name)

    def below_autograd(*args):
        with _BelowAutograd():
            return op(*args)

    below_autograd.__name__ = "visionops_%s_no_grad" % name
    return below_autograd


# ------------------------------------------------ nms with a data-dependent size
#
# The library's nms and batched_nms return a fixed-size `keep` [N] and the
# count `num_kept`: no host sync, so they run inside CUDA graphs. torchvision's
# form, only the kept indices, has a size known only after the run; these
# ops give it (visionops.nms, batched_nms and their rotated forms call them
# on torch tensors, and so do soft_nms and batched_soft_nms for mmcv's (dets,
# keep)), with a fake kernel that allocates a data-dependent size, so
# torch.export and torch.compile capture them as torchvision's nms is. Each
# is its fixed op with every output but the last (the count) cut to it.

NMS_KEPT = {
    "nms_kept": ("nms_kept(Tensor boxes, Tensor scores, float iou_threshold) -> Tensor", "nms"),
    "batched_nms_kept": ("batched_nms_kept(Tensor boxes, Tensor scores, Tensor idxs, "
                         "float iou_threshold) -> Tensor", "batched_nms"),
    "nms_rotated_kept": ("nms_rotated_kept(Tensor boxes, Tensor scores, float iou_threshold, "
                         "bool clockwise=False, bool radians=False) -> Tensor", "nms_rotated"),
    "batched_nms_rotated_kept": ("batched_nms_rotated_kept(Tensor boxes, Tensor scores, "
                                 "Tensor idxs, float iou_threshold, bool clockwise=False, "
                                 "bool radians=False) -> Tensor", "batched_nms_rotated"),
    "soft_nms_kept": ("soft_nms_kept(Tensor boxes, Tensor scores, float iou_threshold=0.3, "
                      "float sigma=0.5, float min_score=0.001, int method=1, float offset=0) -> "
                      "(Tensor dets, Tensor keep)", "soft_nms"),
    "batched_soft_nms_kept": ("batched_soft_nms_kept(Tensor boxes, Tensor scores, Tensor idxs, "
                              "float iou_threshold=0.3, float sigma=0.5, float min_score=0.001, "
                              "int method=1, float offset=0) -> (Tensor dets, Tensor keep)",
                              "batched_soft_nms"),
}


def _cut_kept(fixed_outputs):
    """A fixed-size NMS form's outputs (..., num_kept) cut to num_kept."""
    *outs, num_kept = fixed_outputs
    k = int(num_kept)  # the one host sync, as torchvision's nms
    return outs[0][:k] if len(outs) == 1 else tuple(o[:k] for o in outs)


def _make_kept_kernel(fixed_name):
    def kept(*args):
        return _cut_kept(getattr(torch.ops.visionops, fixed_name)(*args))

    kept.__name__ = "visionops_%s_kept" % fixed_name
    return kept


def _make_kept_fake(fixed_name):
    """The fake (abstract) kernel: the library's shape checks on the fixed
    form (its Meta kernel, so a symbolic N stays symbolic), then an int64
    vector of a new data-dependent size, at most N."""
    fixed = getattr(torch.ops.visionops, fixed_name)

    def kept_fake(*args):
        *outs, _ = fixed(*args)
        if _get_ctx is None:
            raise VisionOpsError("visionops.%s_kept: its output size depends on the data; on Meta "
                                 "tensors use torch.ops.visionops.%s (the padded outputs and "
                                 "their count)" % (fixed_name, fixed_name))
        kept = _get_ctx().new_dynamic_size()
        torch._check(kept <= outs[0].shape[0])
        cut = [o.new_empty((kept,) + tuple(o.shape[1:])) for o in outs]
        return cut[0] if len(cut) == 1 else tuple(cut)

    kept_fake.__name__ = "visionops_%s_kept_fake" % fixed_name
    return kept_fake


_get_ctx = getattr(torch.library, "get_ctx", None)
_register_fake = getattr(torch.library, "register_fake", None) or getattr(
    torch.library, "impl_abstract", None)


def _register_kept():
    for name, (text, fixed_name) in NMS_KEPT.items():
        _lib.define(text)
        kernel = _make_kept_kernel(fixed_name)
        for key in _dispatch_keys():
            _lib.impl(name, kernel, key)
        if _register_fake is not None:
            _register_fake("visionops::" + name, _make_kept_fake(fixed_name), lib=_lib)
        else:  # torch 1.13: Meta tensors cannot carry a data-dependent size
            _lib.impl(name, _make_kept_fake(fixed_name), "Meta")
        _lib.impl(name, _make_below_autograd(name), "Autograd")


def _register_batching_rules():
    """vmap rules (torch >= 2.4; elsewhere torch's per-sample fallback, which
    refuses the Tensor[] ops)."""
    if not hasattr(torch.library, "register_vmap"):
        return
    for name, schema in _core.SCHEMAS.items():
        has_list = schema.returns_list or any(a.type == "Tensor[]" for a in schema.args)
        if name in _CHANNEL_FOLDABLE:
            rule = _make_channel_fold_vmap(schema)
        elif has_list:
            rule = _make_loop_vmap(schema)
        else:
            continue
        torch.library.register_vmap("visionops::" + name, rule, lib=_lib)


# ------------------------------------------------------------------ autocast
#
# Under torch.autocast, features arrive in float16/bfloat16 while rois, boxes
# and scores stay float32. The library reads each tensor at its own precision
# (SPEC.md section 5), so roi_align, roi_pool, ps_roi_*, nms, batched_nms and
# the box IoUs run natively under autocast, without the float32 copies of the
# features torchvision's autocast kernels make, and give the dtypes those
# give: the features' dtype for the RoI ops, float32 (float64) for the IoUs.
# Autocast's fallthrough already sends them to their kernels, so only the
# ops whose autocast behaviour differs from a plain call get a kernel here:
# - deform_conv2d, whose operands share one dtype in the library (its
#   weight and bias stay float32 parameters under autocast): every floating
#   operand is cast to float32 (float64 if one is float64), and the result
#   comes back in the autocast dtype, as conv2d's does under autocast
#   (torchvision's CUDA autocast kernel intends the input's dtype, and fails).
# - multi_scale_roi_align, whose levels share one dtype in the library while
#   autocast may give levels different dtypes: such levels are cast to their
#   promoted dtype and the result to features[0]'s dtype, as torchvision's
#   MultiScaleRoIAlign returns.
# - deform_attn, whose value, sampling_loc and attn_weight share one dtype in
#   the library while autocast may give them different ones (value from a
#   float16 projection beside float32 locations): they are cast to their
#   promoted dtype and the result to value's dtype, as torchvision's
#   deform_attn autocast returns.
# torch 1.13 knows AutocastCPU (bfloat16 only) and AutocastCUDA too.

_AUTOCAST_KEYS = {name: "Autocast" + _TORCH_BACKENDS[name][0] for name in _C.device_types()
                  if name in _TORCH_BACKENDS}


def _autocast_dtype(device_type):
    get = getattr(torch, "get_autocast_dtype", None)  # torch >= 2.4
    if get is not None:
        return get(device_type)
    return torch.get_autocast_cpu_dtype() if device_type == "cpu" else torch.get_autocast_gpu_dtype()


def _make_autocast_deform_conv2d(device_type):
    op = torch.ops.visionops.deform_conv2d

    def autocast_deform_conv2d(input, weight, offset, mask, bias, *rest):
        tensors = (input, weight, offset, mask, bias)
        wide = torch.float64 if any(t is not None and t.dtype == torch.float64
                                    for t in tensors) else torch.float32
        cast = [t.to(wide) if t is not None and t.is_floating_point() else t for t in tensors]
        with torch.autocast(device_type, enabled=False):
            out = op(*cast, *rest)
        return out if wide == torch.float64 else out.to(_autocast_dtype(device_type))

    autocast_deform_conv2d.__name__ = "visionops_deform_conv2d_autocast_%s" % device_type
    return autocast_deform_conv2d


def _make_autocast_multi_scale_roi_align(device_type):
    op = torch.ops.visionops.multi_scale_roi_align

    def autocast_multi_scale_roi_align(features, rois, *rest):
        features = list(features)
        dtypes = {f.dtype for f in features}
        with torch.autocast(device_type, enabled=False):
            if len(dtypes) == 1 or not all(f.is_floating_point() for f in features):
                return op(features, rois, *rest)
            wide = features[0].dtype
            for f in features[1:]:
                wide = torch.promote_types(wide, f.dtype)
            out = op([f.to(wide) for f in features], rois, *rest)
        return out.to(features[0].dtype)

    autocast_multi_scale_roi_align.__name__ = ("visionops_multi_scale_roi_align_autocast_%s"
                                               % device_type)
    return autocast_multi_scale_roi_align


def _make_autocast_deform_attn(device_type):
    op = torch.ops.visionops.deform_attn

    def autocast_deform_attn(value, spatial_shapes, level_start_index, sampling_loc, attn_weight,
                             im2col_step):
        floats = (value, sampling_loc, attn_weight)
        with torch.autocast(device_type, enabled=False):
            if len({t.dtype for t in floats}) == 1 or not all(t.is_floating_point()
                                                              for t in floats):
                return op(value, spatial_shapes, level_start_index, sampling_loc, attn_weight,
                          im2col_step)  # the library reports mismatched non-float dtypes
            wide = torch.promote_types(torch.promote_types(value.dtype, sampling_loc.dtype),
                                       attn_weight.dtype)
            out = op(value.to(wide), spatial_shapes, level_start_index, sampling_loc.to(wide),
                     attn_weight.to(wide), im2col_step)
        return out.to(value.dtype)

    autocast_deform_attn.__name__ = "visionops_deform_attn_autocast_%s" % device_type
    return autocast_deform_attn


def _register_autocast():
    for device_type, key in _AUTOCAST_KEYS.items():
        _lib.impl("deform_attn", _make_autocast_deform_attn(device_type), key)
        _lib.impl("deform_conv2d", _make_autocast_deform_conv2d(device_type), key)
        _lib.impl("multi_scale_roi_align", _make_autocast_multi_scale_roi_align(device_type), key)


# ------------------------------------------------------------ direct calls
#
# An eager call on plain tensors that records nothing crosses torch's
# dispatcher twice, into Python both times: the Autograd kernel, then the
# backend kernel below it (~4-5 us of a tiny call's ~13, measured on torch
# 1.13 and 2.x). `ops` holds, for every op, a function that runs the backend
# kernel straight away when the dispatcher would do nothing but reach it,
# and otherwise calls torch.ops.visionops.<name>. _script.py (the torch path
# of the public functions) calls the ops through it. Each function is
# registered as its op's TorchScript builtin, so a script compiles
# `_ops.roi_align(...)` to visionops::roi_align; under torch.compile
# (is_compiling, first, which dynamo folds) it is the torch.ops call that
# gets traced.
#
# "Nothing but reach it" is checked, not assumed: no torch.compile or
# torch.jit tracing, no Python dispatch or torch-function mode (make_fx,
# FakeTensorMode, non-strict torch.export, user modes), no torch.func
# transform or forward-mode level, no profiler (it records ops at the
# dispatcher), no autocast (its kernels cast), and every tensor a plain
# torch.Tensor (or Parameter) on the CPU or a CUDA device, without a
# negative bit (the dispatcher's fallback materialises it); for an op with
# a gradient also no tensor requiring grad while grad is on. Anything else
# takes the dispatcher path as before.

ops = types.ModuleType(__name__ + ".ops")
ops.__doc__ = ("The visionops ops by name; each calls torch.ops.visionops.<name>, or its "
               "kernel directly when the dispatcher would do nothing else.")

_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)
_dispatch_modes = torch._C._len_torch_dispatch_stack
_function_modes = torch._C._len_torch_function_stack
_tracing_state = torch._C._get_tracing_state
_profiling = torch._C._autograd._profiler_enabled
_autocasting = getattr(torch._C, "_is_any_autocast_enabled", None) or (
    lambda: torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled())  # torch 1.13
_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)


def _dispatcher_has_work():
    """Whether a mode, transform, tracer, profiler or autocast is active:
    the call must go through torch's dispatcher."""
    return bool(_dispatch_modes() or _function_modes() or _tracing_state() is not None
                or _profiling() or _forward_ad._current_level >= 0
                or (_functorch_active is not None and _functorch_active()) or _autocasting())


def _plain_tensor(t, needs_grad):
    return (type(t) in _PLAIN_TYPES and (t.is_cpu or t.is_cuda) and not t.is_neg()
            and not (needs_grad and t.requires_grad))


def _make_direct(name, schema, differentiable, finish):
    """ops.<name>: the op's backend kernel on plain tensors, its outputs
    passed through finish; torch.ops.visionops.<name> otherwise. omit=mask
    (keyword only) asks for outputs the caller drops to be skipped where the
    kernel runs directly (None in their place); the dispatcher path computes
    them all."""
    op = getattr(torch.ops.visionops, name)

    def direct(*args, omit=0):
        if _compiling() or _dispatcher_has_work():
            return op(*args)
        needs_grad = differentiable and torch.is_grad_enabled()
        for i in schema.tensor_positions:
            value = args[i] if i < len(args) else None  # a tensor argument's default is None
            if value is None:
                continue
            if isinstance(value, (list, tuple)):
                if not all(_plain_tensor(t, needs_grad) for t in value):
                    return op(*args)
            elif not _plain_tensor(value, needs_grad):
                return op(*args)
        return finish(_run(schema, args, _alloc, omit))

    direct.__name__ = name
    direct.__qualname__ = "ops." + name
    setattr(ops, name, direct)
    torch.jit._builtins._register_builtin(direct, "visionops::" + name)


def _register_direct(differentiable_ops):
    for name, schema in _core.SCHEMAS.items():
        _make_direct(name, schema, name in differentiable_ops,
                     lambda outs, schema=schema: _pack(schema, outs))
    for name, (_text, fixed_name) in NMS_KEPT.items():
        _make_direct(name, _core.SCHEMAS[fixed_name], False, _cut_kept)


def _register():
    for name, schema in _core.SCHEMAS.items():
        _lib.define(schema.text)
        kernel = _make_kernel(schema)
        for key in _dispatch_keys():
            _lib.impl(name, kernel, key)
        _lib.impl(name, _make_meta(schema), "Meta")
    backward_ops = _forward_ops()
    differentiable_ops = set()
    for name, schema in _core.SCHEMAS.items():
        differentiable = schema.backward or name in backward_ops
        autograd = _make_autograd(schema) if differentiable else _make_below_autograd(name)
        _lib.impl(name, autograd, "Autograd")
        if differentiable:
            differentiable_ops.add(name)
    _register_batching_rules()
    _register_kept()
    _register_autocast()
    _register_direct(differentiable_ops)


_register()

from .onnx import register_torchscript_symbolics  # noqa: E402  (ONNX export, see visionops.onnx)

register_torchscript_symbolics()
