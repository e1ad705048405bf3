"""Every op whose public function is made from its schema
(visionops.ops._SCHEMA_OPS), or takes its schema's arguments first with
Python-only ones after them (ops._SCHEMA_PREFIX_OPS: box_area and its fmt),
against torchvision.ops' function of the same name, on every sample of the C sample registry (tests/samples: the random
seeds, the edge cases and the small input) in each float
dtype (and the integer boxes some samples hold): the same values, dtype and
shape (float32 and float64 bit for bit, NaN where NaN; the half types within
their rounding), and, for an op with a backward, the same gradients of its
float tensor arguments through autograd. So such an op needs no test file of
its own to be compared with torchvision (docs/ADDING_AN_OP.md); torchvision's
own tests of it also run on visionops (tests/torchvision_suite)."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
import torchvision.ops as tvops  # noqa: E402

import exported_samples  # noqa: E402
import visionops  # noqa: E402
from visionops import _core  # noqa: E402

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
OPS = sorted(set(visionops.ops._SCHEMA_OPS) | set(visionops.ops._SCHEMA_PREFIX_OPS))
VARIANTS = ("random", "edge", "small")  # "model" is the GPU check's, hundreds of MB


def cases(name, dtype):
    """(description, arguments) of every sample of op `name` in `dtype`."""
    found = []
    for variant in VARIANTS:
        for seed in range(exported_samples.seeds(variant)):
            args = exported_samples.sample(name, dtype, variant, seed)
            if args is not None:
                found.append(("%s seed %d" % (variant, seed), args))
    return found


def same(got, want, case):
    assert got.dtype == want.dtype and got.shape == want.shape, (case, got.dtype, want.dtype,
                                                                  got.shape, want.shape)
    if got.dtype in (torch.float16, torch.bfloat16):
        torch.testing.assert_close(got, want, equal_nan=True, msg=case)
        return
    equal = got == want
    if got.is_floating_point():
        equal |= torch.isnan(got) & torch.isnan(want)
    assert bool(equal.all()), (case, got, want)


def float_tensors(schema, args):
    return [i for i, (a, v) in enumerate(zip(schema.args, args))
            if a.type == "Tensor" and isinstance(v, torch.Tensor) and v.is_floating_point()]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", OPS)
def test_matches_torchvision(name, dtype):
    if not hasattr(tvops, name):
        pytest.skip("torchvision %s has no ops.%s" % (torchvision.__version__, name))
    found = cases(name, dtype)
    if not found:
        pytest.skip("no sample exporter in this build (tests/vo_samples_export)")
    schema = _core.SCHEMAS[name]
    ours, theirs = getattr(visionops, name), getattr(tvops, name)
    for case, args in found:
        case = "%s %s %s" % (name, case, dtype)
        got, want = ours(*args), theirs(*args)
        if isinstance(want, torch.Tensor):
            got, want = [got], [want]
        assert len(got) == len(want), case
        for g, w in zip(got, want):
            same(g, w, case)
        if schema.backward is None:
            continue
        wrt = float_tensors(schema, args)
        if not wrt:
            continue
        grads = []
        for fn in (ours, theirs):
            inputs = [a.detach().clone().requires_grad_(i in wrt) if isinstance(a, torch.Tensor)
                      else a for i, a in enumerate(args)]
            out = fn(*inputs)
            g = torch.Generator().manual_seed(0)
            weight = torch.randn(out.shape, generator=g, dtype=torch.float64).to(out.dtype)
            grads.append(torch.autograd.grad((out * weight).sum(), [inputs[i] for i in wrt],
                                             allow_unused=True))
        for g, w in zip(*grads):
            assert (g is None) == (w is None), case
            if g is not None:
                torch.testing.assert_close(g, w, equal_nan=True, msg=case + " gradient")
