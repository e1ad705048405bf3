"""The C sample registry's samples (tests/samples) as torch arguments, for the
Python tests' generic cases: an op without a hand-written case there takes
its arguments from here. They are written by the build's
tests/vo_samples_export (next to the package's build: <build>/python is
where visionops comes from, <build>/tests/vo_samples_export the program),
or by $VISIONOPS_SAMPLES_EXPORT. load_arg reads one argument of the
exporter's listing (index.json and its raw tensor files); gpu_compare.py
uses it too."""
import functools
import json
import os
import subprocess
import tempfile

import torch

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
          "int16": torch.int16, "uint8": torch.uint8}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


def find_exporter():
    """The vo_samples_export program, or None where this build has none."""
    if os.environ.get("VISIONOPS_SAMPLES_EXPORT"):
        return os.environ["VISIONOPS_SAMPLES_EXPORT"]
    import visionops  # only here: gpu_compare.py reads listings without the package
    package = os.path.dirname(os.path.abspath(visionops.__file__))
    path = os.path.join(os.path.dirname(os.path.dirname(package)), "tests", "vo_samples_export")
    return path if os.path.exists(path) else None


def load_tensor(folder, spec):
    dtype, shape = DTYPES[spec["dtype"]], tuple(spec["shape"])
    with open(os.path.join(folder, spec["file"]), "rb") as f:
        data = bytearray(f.read())
    if not data:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(data, dtype=dtype).reshape(shape).clone()


def load_arg(folder, spec):
    kind = spec["kind"]
    if kind == "tensor":
        return load_tensor(folder, spec)
    if kind == "none":
        return None
    if kind in ("float", "int", "bool"):
        return spec["value"]
    if kind == "tensor_list":
        return [load_tensor(folder, t) for t in spec["items"]]
    if kind == "float_list":
        return [float(v) for v in spec["values"]]
    raise ValueError("unknown argument kind " + kind)


@functools.lru_cache(maxsize=None)
def _load(variant, dtype_name, seed):
    exporter = find_exporter()
    if exporter is None:
        return {}
    with tempfile.TemporaryDirectory(prefix="vo-samples-") as folder:
        subprocess.run([exporter, folder, "%s:%d" % (variant, seed), dtype_name], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(folder, "index.json")) as f:
            index = json.load(f)
        return {e["op"]: ([load_arg(folder, a) for a in e["args"]], e["seeds"]) for e in index}


def sample(name, dtype, variant="small", seed=0):
    """Op `name`'s sample arguments (CPU tensors) in float dtype `dtype`
    (variant "random", "edge", "small" or "model"; seed below
    seeds(variant)), or None where no exporter is built (the caller skips)."""
    entry = _load(variant, DTYPE_NAMES[dtype], seed).get(name)
    return None if entry is None else list(entry[0])


def seeds(variant):
    """How many distinct samples (seeds) the variant has (VS_RANDOM_SEEDS,
    VS_EDGE_SEEDS in tests/samples/samples.h), 0 where no exporter is built."""
    loaded = _load(variant, "float32", 0)
    return next(iter(loaded.values()))[1] if loaded else 0


def on_meta(args):
    """The same arguments with every tensor an empty Meta tensor."""
    def meta(t):
        return torch.empty(t.shape, dtype=t.dtype, device="meta")
    return [meta(a) if isinstance(a, torch.Tensor)
            else [meta(t) for t in a] if isinstance(a, list) and a and isinstance(a[0], torch.Tensor)
            else a for a in args]
