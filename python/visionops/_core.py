"""The thin layer over visionops._C: the op schemas and shape rules (parsed
from the C library's own list), global settings, and running an op on NumPy
arrays or PyTorch tensors with outputs allocated in the same framework."""
import ast
import linecache
import operator
import re
import threading

from . import _C, _opencl
from ._C import VisionOpsTypeError, VisionOpsValueError

# ------------------------------------------------------------------ schemas


class Arg:
    """One argument of a schema: its type ("Tensor", "Tensor?", "Tensor[]",
    "float", "float?", "float[]", "int", "SymInt", "bool"), name, and default (or
    NO_DEFAULT). SymInt is an int that PyTorch may pass as a symbolic size."""

    __slots__ = ("type", "name", "default")

    def __init__(self, type_, name, default):
        self.type, self.name, self.default = type_, name, default

    def __repr__(self):
        return "Arg(%s %s)" % (self.type, self.name)


NO_DEFAULT = object()


def _parse_default(type_, text):
    if text == "None":
        return None
    if type_ == "bool":
        return text == "True"
    if type_ in ("int", "SymInt"):
        return int(text)
    if type_ == "float":
        return float(text)
    raise ValueError("unsupported default %r for %s" % (text, type_))


class Schema:
    """An op's schema, parsed from its torch-syntax text, e.g.
    "roi_align(Tensor input, ...) -> Tensor"."""

    def __init__(self, text, backward):
        self.text, self.backward = text, backward
        m = re.fullmatch(r"(\w+)\((.*)\) -> (.*)", text)
        if not m:
            raise ValueError("cannot parse schema %r" % text)
        self.name = m.group(1)
        self.args = []
        for part in filter(None, (p.strip() for p in m.group(2).split(","))):
            decl, _, default = part.partition("=")
            type_, name = decl.split()
            self.args.append(Arg(type_, name, _parse_default(type_, default) if default else NO_DEFAULT))
        returns = m.group(3).strip()
        if returns.startswith("("):
            returns = returns[1:-1]
        self.returns = [r.split()[-1] if len(r.split()) > 1 else "out" for r in returns.split(",")]
        self.returns_list = returns.strip() == "Tensor[]"
        self.tensor_args = [a.name for a in self.args if a.type.startswith("Tensor")]
        self.tensor_positions = [i for i, a in enumerate(self.args) if a.type.startswith("Tensor")]

    def complete(self, args):
        """Positional args with the trailing defaults filled in."""
        args = list(args)
        for a in self.args[len(args):]:
            if a.default is NO_DEFAULT:
                raise VisionOpsTypeError("%s: missing argument %s" % (self.name, a.name))
            args.append(a.default)
        return args


SCHEMAS = {name: Schema(schema, backward) for name, schema, backward in _C.ops()}


def define_generated(name, source, namespace, what):
    """Function `name` defined by `source` (in `namespace`, its globals), with
    its text in linecache under a file name of its own ("<visionops `what`
    `name`>"), so that inspect.getsource, tracebacks and
    torch.jit.script (which compiles a function from its source) find it,
    as torch.fx does for the code it generates."""
    filename = "<visionops %s %s>" % (what, name)
    lines = source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)  # mtime None: never evicted
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (our own generated text)
    return namespace[name]


# -------------------------------------------------------------- shape rules

_RULE_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
             ast.FloorDiv: operator.floordiv}


class ShapeRule:
    """Where each output dimension of an op comes from, as the C library
    states it (vo_op_info.shape_rule; syntax in src/ops/ops.def), e.g.
    "[rois[0], input[1], pooled_height, pooled_width]". shapes() evaluates it
    with whatever integers the arguments' sizes are: Python ints, or torch
    SymInts under torch.export / torch.compile(dynamic=True), so symbolic
    sizes stay symbolic (nothing is converted to int, nothing guards)."""

    def __init__(self, name, text):
        self.name, self.text = name, text
        self.outputs = [ast.parse(part.strip(), mode="eval").body for part in text.split(";")]
        for out in self.outputs:
            if not isinstance(out, ast.List):
                raise ValueError("%s: shape rule %r: each output must be a [...] list"
                                 % (name, text))

    def shapes(self, named, count):
        """The shapes of the op's `count` outputs; `named` maps argument
        names to their values (tensors: anything with .shape)."""
        if len(self.outputs) == 1 and SCHEMAS[self.name].returns_list:
            return [self._shape(self.outputs[0], named, i) for i in range(count)]
        return [self._shape(out, named, None) for out in self.outputs]

    def _shape(self, out, named, item):
        return tuple(self._eval(e, named, item) for e in out.elts)

    def _eval(self, node, named, item):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _RULE_OPS:
            return _RULE_OPS[type(node.op)](self._eval(node.left, named, item),
                                            self._eval(node.right, named, item))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("min", "max") and len(node.args) == 2 and not node.keywords):
            a, b = (self._eval(arg, named, item) for arg in node.args)
            if type(a) is int and type(b) is int:
                return min(a, b) if node.func.id == "min" else max(a, b)
            import torch  # a SymInt: torch's symbolic min / max, which do not guard
            return torch.sym_min(a, b) if node.func.id == "min" else torch.sym_max(a, b)
        if isinstance(node, ast.Name):
            if node.id == "i" and item is not None:
                return item
            return named[node.id]
        if isinstance(node, ast.Subscript):
            return self._value(node.value, named, item)[self._eval(node.slice, named, item)]
        raise ValueError("%s: unsupported shape rule %r" % (self.name, self.text))

    def _value(self, node, named, item):
        """t (a tensor: its shape) or l[j] (item j of a tensor list)."""
        if isinstance(node, ast.Name):
            value = named[node.id]
            return value if isinstance(value, (list, tuple)) else value.shape
        if isinstance(node, ast.Subscript):
            return self._value(node.value, named, item)[self._eval(node.slice, named, item)].shape
        raise ValueError("%s: unsupported shape rule %r" % (self.name, self.text))


SHAPE_RULES = {name: ShapeRule(name, text) for name, text in _C.shape_rules().items()}

# ----------------------------------------------------------------- settings

_settings = {"num_threads": 0, "deterministic": False}
_lock = threading.Lock()


def set_num_threads(n):
    """Threads the CPU kernels use (0: all cores, the default)."""
    n = int(n)
    if n < 0:
        raise VisionOpsValueError("set_num_threads: n must be >= 0, got %d" % n)
    with _lock:
        _settings["num_threads"] = n


def get_num_threads():
    return _settings["num_threads"]


def release_cached_memory():
    """Hands back to the system the CPU workspace blocks visionops keeps
    for later calls (up to 256 MiB; VISIONOPS_CPU_CACHE_BYTES sets the cap,
    0 keeps none), as torch.cuda.empty_cache() does for CUDA memory."""
    _C.release_cached_memory()


def set_deterministic(flag):
    """Bit-identical CUDA backward results run to run (CPU backward always is).
    Under PyTorch, torch.use_deterministic_algorithms(True) turns it on too."""
    with _lock:
        _settings["deterministic"] = bool(flag)


def is_deterministic():
    return _settings["deterministic"]


def backends():
    """[(name, built, available, detail)] of the C library's backends."""
    return _C.backends()


# ------------------------------------------------------------------ running


# The omit= mask (bit k: output k) that leaves out the int32 output 1 of the
# RoI pooling ops (roi_pool's argmax, ps_roi_align's and ps_roi_pool's
# channel_mapping), which only a backward reads: what their public functions
# pass when they return the pooled values alone.
OMIT_INDEX_OUTPUT = 1 << 1


class Into:
    """An alloc for _C.call that hands back the caller's buffers (out=):
    outs[k] for the op's k-th output, checked against the inferred shape and
    dtype (the library then checks its device, contiguity and overlap with
    the inputs); outputs past outs, or None in it, come from `fallback`
    (None: None, which the extension answers with a new NumPy array).
    _C.call skips the outputs omitted (bit k of omit: output k)."""

    def __init__(self, op, outs, fallback, dtype_name, omit=0):
        self.op, self.outs, self.fallback, self.dtype_name = op, outs, fallback, dtype_name
        self.k, self.omit = 0, omit

    def __call__(self, shape, dtype, device):
        while self.k < 64 and self.omit >> self.k & 1:
            self.k += 1
        k, self.k = self.k, self.k + 1
        out = self.outs[k] if k < len(self.outs) else None
        if out is None:
            return None if self.fallback is None else self.fallback(shape, dtype, device)
        what = "out" if len(self.outs) == 1 else "out[%d]" % k
        got = getattr(out, "shape", None)
        if got is None or not hasattr(out, "dtype"):
            raise VisionOpsTypeError("%s: %s must be a tensor, got a %s"
                                     % (self.op, what, type(out).__name__))
        got = tuple(int(d) for d in got)
        if self.dtype_name(out) != dtype:
            raise VisionOpsTypeError("%s: %s must have dtype %s, got %s"
                                     % (self.op, what, dtype, self.dtype_name(out)))
        if got != tuple(shape):
            raise VisionOpsValueError("%s: %s must have shape %s, got %s"
                                      % (self.op, what, list(shape), list(got)))
        return out


def run_numpy(name, args, deterministic=None, outs=(), omit=0):
    """Runs op `name` on NumPy (or any DLPack / buffer) inputs; the outputs are
    NumPy arrays, or the caller's `outs` where given (out=). On pyopencl
    arrays it runs on their OpenCL queue and the outputs are pyopencl arrays
    there (_opencl.py). Output k is None, not computed, when bit k of omit
    is set (an output the op may skip: roi_pool's argmax, the
    position-sensitive ops' channel_mapping)."""
    deterministic = _settings["deterministic"] if deterministic is None else deterministic
    # alloc None: the extension makes NumPy outputs itself. A pyopencl array
    # among the arguments (or outs) is found there, where the others are
    # converted, as _C.ForeignArray: no per-call Python scan of the arguments.
    alloc = Into(name, outs, None, lambda a: str(a.dtype), omit) if outs else None
    try:
        return _C.call(name, args, alloc, 0, _settings["num_threads"], deterministic, omit=omit)
    except _C.ForeignArray:
        if any(o is not None for o in outs):
            raise VisionOpsTypeError("%s: out= takes NumPy arrays or torch tensors, not pyopencl "
                                     "arrays" % name) from None
    return _opencl.run(name, args, _settings["num_threads"], deterministic, omit)
