"""deform_conv2d against torchvision.ops.deform_conv2d: forward and the
gradients of input, offset, weight, mask and bias (visionops' autograd vs
torchvision's)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
import torchvision.ops as tvops  # noqa: E402

import visionops  # noqa: E402
from conftest import SEEDS, assert_close  # noqa: E402

DT = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16}

CASES = {  # n, cin, h, w, cout, kh, kw, stride, pad, dil, groups, offset_groups
    "plain3x3": (2, 4, 7, 6, 3, 3, 3, 1, 1, 1, 1, 1),
    "unusual": (3, 6, 9, 7, 4, 3, 2, (2, 1), (1, 0), (2, 1), 2, 3),
    "batch1": (1, 6, 9, 7, 4, 3, 2, (2, 1), (1, 0), (2, 1), 2, 3),
    "1x1": (2, 2, 5, 5, 2, 1, 1, 2, 0, 1, 1, 2),
}


def out_hw(h, w, kh, kw, stride, pad, dil):
    pair = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(pad), pair(dil)
    ho = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    return ho, (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1


def make_case(case, seed, use_mask, use_bias, offset_scale=2.0):
    n, cin, h, w, cout, kh, kw, stride, pad, dil, groups, og = CASES[case]
    ho, wo = out_hw(h, w, kh, kw, stride, pad, dil)
    rng = np.random.default_rng(seed)
    arrays = {
        "input": rng.normal(size=(n, cin, h, w)),
        "offset": rng.normal(size=(n, 2 * og * kh * kw, ho, wo)) * offset_scale,
        "weight": rng.normal(size=(cout, cin // groups, kh, kw)),
        "mask": rng.uniform(size=(n, og * kh * kw, ho, wo)) if use_mask else None,
        "bias": rng.normal(size=(cout,)) if use_bias else None,
    }
    return arrays, dict(stride=stride, padding=pad, dilation=dil)


def run_both(arrays, conv, dtype):
    tdt = DT[dtype]
    ref_dt = torch.float32 if dtype == "float16" else tdt  # torchvision 0.14 CPU: no float16
    vo_t = {k: torch.tensor(v, dtype=tdt).requires_grad_() if v is not None else None
            for k, v in arrays.items()}
    # torchvision on the same (rounded) values, in ref_dt
    tv_t = {k: (v.detach().to(ref_dt, copy=True).requires_grad_() if v is not None else None)
            for k, v in vo_t.items()}
    got = visionops.deform_conv2d(vo_t["input"], vo_t["offset"], vo_t["weight"], vo_t["bias"],
                                  mask=vo_t["mask"], **conv)
    want = tvops.deform_conv2d(tv_t["input"], tv_t["offset"], tv_t["weight"], tv_t["bias"],
                               mask=tv_t["mask"], **conv)
    return vo_t, tv_t, got, want


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("use_mask", [False, True])
@pytest.mark.parametrize("use_bias", [False, True])
def test_deform_conv2d(dtype, case, use_mask, use_bias):
    seed = SEEDS[(len(case) + use_mask + 2 * use_bias) % len(SEEDS)]
    arrays, conv = make_case(case, seed, use_mask, use_bias)
    if dtype == "float16":  # keep the sums small enough for float16 outputs
        arrays["input"] *= 0.25
    vo_t, tv_t, got, want = run_both(arrays, conv, dtype)
    assert got.dtype == DT[dtype] and got.shape == want.shape
    # sums of products: float32 to 1e-5 relative with an absolute floor
    tol = {"float64": (1e-5, 1e-8), "float32": (1e-5, 1e-4), "float16": (5e-3, 5e-3)}[dtype]
    assert_close(got, want, dtype, rtol=tol[0], atol=tol[1], what="forward")
    g = torch.tensor(np.random.default_rng(seed + 10).normal(size=tuple(got.shape)),
                     dtype=DT[dtype])
    got.backward(g)
    want.backward(g.to(want.dtype))
    gtol = {"float64": (1e-5, 1e-8), "float32": (1e-4, 1e-3), "float16": (2e-2, 5e-2)}[dtype]
    for k in ("input", "offset", "weight", "mask", "bias"):
        if vo_t[k] is None:
            continue
        assert vo_t[k].grad is not None, k
        assert_close(vo_t[k].grad, tv_t[k].grad, dtype, rtol=gtol[0], atol=gtol[1],
                     what="grad_" + k)
    # the NumPy path gives the torch path's values
    np_args = {k: (v.detach().numpy() if v is not None else None) for k, v in vo_t.items()}
    got_np = visionops.deform_conv2d(np_args["input"], np_args["offset"], np_args["weight"],
                                     np_args["bias"], mask=np_args["mask"], **conv)
    assert isinstance(got_np, np.ndarray)
    np.testing.assert_array_equal(got_np, got.detach().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_deform_conv2d_zero_offsets(dtype):
    """Zero offsets with padding 1 (how DCN layers are initialised): taps
    land exactly on y = -1 / x = -1; also equals a plain conv2d."""
    rng = np.random.default_rng(3)
    arrays = {"input": rng.normal(size=(2, 4, 6, 5)), "offset": np.zeros((2, 18, 6, 5)),
              "weight": rng.normal(size=(3, 4, 3, 3)), "mask": rng.uniform(size=(2, 9, 6, 5)),
              "bias": None}
    conv = dict(stride=1, padding=1, dilation=1)
    vo_t, tv_t, got, want = run_both(arrays, conv, dtype)
    assert_close(got, want, dtype, atol=1e-4 if dtype == "float32" else 1e-8)
    g = torch.ones_like(got)
    got.backward(g)
    want.backward(g)
    for k in ("input", "offset", "weight", "mask"):
        assert_close(vo_t[k].grad, tv_t[k].grad, dtype, rtol=1e-4,
                     atol=1e-3 if dtype == "float32" else 1e-8, what="grad_" + k)
    x, w = torch.tensor(arrays["input"]), torch.tensor(arrays["weight"])
    plain = visionops.deform_conv2d(x, torch.zeros(2, 18, 6, 5, dtype=x.dtype), w, padding=1)
    assert_close(plain, torch.nn.functional.conv2d(x, w, padding=1), "float64")


def test_deform_conv2d_noncontiguous():
    arrays, conv = make_case("plain3x3", 4, True, True)
    t = {k: torch.tensor(v) for k, v in arrays.items()}
    want = tvops.deform_conv2d(t["input"], t["offset"], t["weight"], t["bias"], mask=t["mask"],
                               **conv)
    # channels-last storage and a transposed weight view
    x_nc = t["input"].to(memory_format=torch.channels_last)
    w_nc = t["weight"].transpose(2, 3).contiguous().transpose(2, 3)
    assert not w_nc.is_contiguous()
    got = visionops.deform_conv2d(x_nc, t["offset"], w_nc, t["bias"], mask=t["mask"], **conv)
    assert_close(got, want, "float64")
    got_np = visionops.deform_conv2d(np.asfortranarray(arrays["input"]), arrays["offset"],
                                     arrays["weight"], arrays["bias"], mask=arrays["mask"], **conv)
    assert_close(got_np, want, "float64")


def test_deform_conv2d_far_offsets_and_noncontiguous_grad():
    """Offsets large enough to move taps off the map; the incoming gradient
    is a transposed (non-contiguous) tensor."""
    arrays, conv = make_case("unusual", 8, True, False, offset_scale=10.0)
    vo_t, tv_t, got, want = run_both(arrays, conv, "float64")
    assert_close(got, want, "float64")
    g = torch.randn(got.shape[1], got.shape[0], *got.shape[2:], dtype=torch.float64)
    (got.transpose(0, 1) * g).sum().backward()
    (want.transpose(0, 1) * g).sum().backward()
    for k in ("input", "offset", "weight", "mask"):
        assert_close(vo_t[k].grad, tv_t[k].grad, "float64", what=k)
