"""box_area against torchvision.ops.box_area: values and dtypes (float32
bit for bit; float64, float16, bfloat16; integer boxes, wrap-around
included), empty and degenerate boxes, strided boxes, NumPy arrays, and
the gradient through the registered backward."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
import torchvision.ops as tvops  # noqa: E402

import visionops  # noqa: E402

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTEGERS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]


def random_boxes(n, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g, dtype=torch.float64) * 500 - 50
    wh = torch.rand(n, 2, generator=g, dtype=torch.float64) * 200
    return torch.cat([xy, xy + wh], dim=1).to(dtype)


def degenerate_boxes(dtype=torch.float32):
    """Zero width, zero height, a point, reversed, huge and non-finite."""
    rows = [[3, 4, 3, 9], [1, 2, 5, 2], [7, 7, 7, 7], [10, 10, 4, 1], [-5, -5, -9, 2],
            [0, 0, 1e30, 1e30], [0, 0, float("inf"), 1], [float("nan"), 0, 1, 1],
            [0, 0, float("inf"), 0]]
    return torch.tensor(rows, dtype=torch.float64).to(dtype)


def same(got, want):
    """Equal values (NaN where NaN, zeros of one sign) and the same dtype
    and shape."""
    assert got.dtype == want.dtype and got.shape == want.shape
    both_nan = torch.isnan(got) & torch.isnan(want) if got.is_floating_point() else False
    assert bool(((got == want) | both_nan).all()), (got, want)
    if got.is_floating_point():  # zeros of the same sign
        zero = (want == 0) & (got == 0)
        assert torch.equal(torch.signbit(got[zero]), torch.signbit(want[zero]))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_float_boxes(dtype, seed):
    boxes = random_boxes(1000 + seed, seed, dtype)
    same(visionops.box_area(boxes), tvops.box_area(boxes))


@pytest.mark.parametrize("dtype", FLOATS)
def test_degenerate_and_empty_boxes(dtype):
    boxes = degenerate_boxes(dtype)
    same(visionops.box_area(boxes), tvops.box_area(boxes))
    empty = torch.zeros(0, 4, dtype=dtype)
    same(visionops.box_area(empty), tvops.box_area(empty))


@pytest.mark.parametrize("dtype", INTEGERS)
def test_integer_boxes(dtype):
    """int64 gives int64, the narrower integers int32, as torchvision."""
    g = torch.Generator().manual_seed(5)
    lo, hi = {torch.uint8: (0, 256), torch.int8: (-100, 101)}.get(dtype, (-3000, 3000))
    boxes = torch.randint(lo, hi, (300, 4), generator=g).to(dtype)
    same(visionops.box_area(boxes), tvops.box_area(boxes))
    empty = torch.zeros(0, 4, dtype=dtype)
    same(visionops.box_area(empty), tvops.box_area(empty))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_integer_wraparound(dtype):
    """Areas beyond the integer range wrap as torch's integer arithmetic."""
    info = torch.iinfo(dtype)
    boxes = torch.tensor([[info.min, info.min, info.max, info.max], [0, 0, info.max, 3],
                          [-7, -9, info.max // 2, 2]], dtype=dtype)
    same(visionops.box_area(boxes), tvops.box_area(boxes))


def test_strided_boxes():
    wide = random_boxes(64, 3, torch.float64).repeat(1, 2)[::3, ::2]
    assert not wide.is_contiguous()
    same(visionops.box_area(wide), tvops.box_area(wide))


def test_numpy():
    boxes = random_boxes(50, 4, torch.float32)
    got = visionops.box_area(boxes.numpy())
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    np.testing.assert_array_equal(got, tvops.box_area(boxes).numpy())
    ints = boxes.to(torch.int16).numpy()
    got = visionops.box_area(ints)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, tvops.box_area(torch.from_numpy(ints)).numpy())


def test_bad_shape():
    with pytest.raises(ValueError, match=r"box_area: boxes must have shape \[N, 4\]"):
        visionops.box_area(torch.zeros(3, 5))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kind", ["random", "degenerate", "empty"])
def test_gradient(dtype, kind):
    """torch.autograd.grad through visionops.box_area (the registered
    box_area_backward) equals torchvision's autograd, in the boxes' dtype."""
    boxes = {"random": random_boxes(200, 7, dtype), "degenerate": degenerate_boxes(dtype),
             "empty": torch.zeros(0, 4, dtype=dtype)}[kind]
    out_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    grad = torch.randn(boxes.shape[0], generator=torch.Generator().manual_seed(8),
                       dtype=torch.float64).to(out_dtype)
    ours = boxes.clone().requires_grad_()
    theirs = boxes.clone().requires_grad_()
    g_ours, = torch.autograd.grad(visionops.box_area(ours), ours, grad)
    g_theirs, = torch.autograd.grad(tvops.box_area(theirs), theirs, grad)
    same(g_ours, g_theirs)


def test_gradcheck():
    boxes = random_boxes(9, 11, torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(visionops.box_area, (boxes,))


def doubled_area(boxes: torch.Tensor) -> torch.Tensor:
    return visionops.box_area(boxes) * 2


def test_script():
    """visionops.box_area compiles under torch.jit.script, as torchvision's."""
    scripted = torch.jit.script(doubled_area)
    boxes = random_boxes(10, 12)
    same(scripted(boxes), tvops.box_area(boxes) * 2)
