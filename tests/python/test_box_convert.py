"""box_convert against torchvision.ops.box_convert: every pair of formats
torchvision converts, in every float and integer dtype, against the
installed torchvision (0.29's six formats in the torch 2.x lane; 0.14's
three axis-aligned formats in the Debian lane, where the rotated ones are
compared with a float64 reference of their formulas written here). Values
bit for bit where torch's arithmetic is the op's (everything but cos, sin,
atan2 and sqrt, which torch computes with its own vectorised functions:
those pairs are also compared bit for bit with torchvision's arithmetic run
with correctly rounded ones), dtypes (the table below), integer
rounding, leading batch dimensions, gradients against torch's autograd of
torchvision's function, round trips, NumPy arrays, TorchScript and errors;
and box_area's fmt against torchvision 0.29's."""
import inspect
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
import torchvision.ops as tvops  # noqa: E402

import visionops  # noqa: E402

AXIS = ["xyxy", "xywh", "cxcywh"]
ROTATED = ["cxcywhr", "xywhr", "xyxyxyxy"]
SIZE = {"xyxy": 4, "xywh": 4, "cxcywh": 4, "cxcywhr": 5, "xywhr": 5, "xyxyxyxy": 8}
PAIRS = list(itertools.product(AXIS, AXIS)) + list(itertools.product(ROTATED, ROTATED))
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTEGERS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]
TV_ROTATED = "cxcywhr" in inspect.getsource(tvops.box_convert)
TV_AREA_FMT = "fmt" in inspect.signature(tvops.box_area).parameters

# The result dtype of integer boxes, as torch's type promotion gives it in
# torchvision's arithmetic: true division (xyxy -> cxcywh) and products with
# 0.5 (cxcywh -> xyxy) make float32; sums and differences keep the dtype;
# the rotated conversions round their float32 results back.
INT_GIVES_FLOAT32 = {("xyxy", "cxcywh"), ("cxcywh", "xyxy"), ("xywh", "cxcywh"),
                     ("cxcywh", "xywh")}


def expected_dtype(dtype, pair):
    if not dtype.is_floating_point and pair in INT_GIVES_FLOAT32:
        return torch.float32
    return dtype


def boxes_in(fmt, n, seed, dtype=torch.float64, lo=-50.0, hi=150.0, angles=180.0):
    """n boxes in format fmt: positive sizes, angles in [-angles, angles]."""
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g, dtype=torch.float64) * (hi - lo) + lo
    wh = torch.rand(n, 2, generator=g, dtype=torch.float64) * 60 + 0.5
    r = (torch.rand(n, generator=g, dtype=torch.float64) * 2 - 1) * angles
    if fmt == "xyxy":
        b = torch.cat([xy, xy + wh], 1)
    elif fmt in ("xywh", "cxcywh"):
        b = torch.cat([xy, wh], 1)
    else:
        b = reference("cxcywhr", fmt, torch.cat([xy, wh, r[:, None]], 1))
    if dtype.is_floating_point:
        return b.to(dtype)
    if dtype == torch.uint8:
        b = b.abs().clamp(max=255)
    return b.round().to(dtype)


def reference(in_fmt, out_fmt, b):
    """The rotated conversions in float64 from their geometry (TL, TR = TL +
    w (cos, -sin), BR = TR + h (sin, cos), BL = TL + h (sin, cos); the
    centre is the diagonal's midpoint), for comparison at a tolerance."""
    b = b.double()
    if in_fmt == out_fmt:
        return b.clone()
    if in_fmt == "xyxyxyxy":  # TL, the TL -> TR edge's length and angle, the TR -> BR edge's
        c = b
        w = torch.hypot(c[:, 2] - c[:, 0], c[:, 3] - c[:, 1])
        h = torch.hypot(c[:, 4] - c[:, 2], c[:, 5] - c[:, 3])
        r = torch.rad2deg(torch.atan2(c[:, 1] - c[:, 3], c[:, 2] - c[:, 0]))
        xywhr = torch.stack([c[:, 0], c[:, 1], w, h, r], 1)
        return xywhr if out_fmt == "xywhr" else reference("xywhr", out_fmt, xywhr)
    w, h, r = b[:, 2], b[:, 3], b[:, 4]
    t = torch.deg2rad(r)
    u = torch.stack([torch.cos(t), -torch.sin(t)], 1)
    v = torch.stack([torch.sin(t), torch.cos(t)], 1)
    if in_fmt == "cxcywhr":
        tl = b[:, :2] - w[:, None] / 2 * u - h[:, None] / 2 * v
    else:
        tl = b[:, :2]
    if out_fmt == "xywhr":
        return torch.cat([tl, b[:, 2:]], 1)
    if out_fmt == "cxcywhr":
        return torch.cat([tl + w[:, None] / 2 * u + h[:, None] / 2 * v, b[:, 2:]], 1)
    tr = tl + w[:, None] * u
    return torch.cat([tl, tr, tr + h[:, None] * v, tl + h[:, None] * v], 1)


def same(got, want, case=""):
    """Equal dtype, shape and values (NaN where NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (case, got.dtype, want.dtype,
                                                                  got.shape, want.shape)
    equal = got == want
    if got.is_floating_point():
        equal |= torch.isnan(got) & torch.isnan(want)
    assert bool(equal.all()), (case, got[~equal][:8], want[~equal][:8])


def ulp_close(got, want, scale, dtype, ulps=16, case=""):
    """|got - want| within `ulps` units of dtype's precision at the rows'
    magnitude `scale` ([N, 1])."""
    assert got.dtype == want.dtype and got.shape == want.shape, case
    eps = torch.finfo(dtype).eps if dtype.is_floating_point else 0.5
    tol = ulps * eps * scale + (1 if not dtype.is_floating_point else 0)
    err = (got.double() - want.double()).abs()
    assert bool((err <= tol).all()), (case, err.max().item(), (err / tol).max().item())


def row_scale(*tensors):
    return torch.cat([t.double().abs().reshape(t.shape[0], -1) for t in tensors], 1) \
        .amax(1, keepdim=True).clamp(min=1)


def tv_supports(pair):
    return TV_ROTATED or pair[0] in AXIS


@pytest.fixture
def rounded_transcendentals(monkeypatch):
    """torch.cos, torch.sin, torch.atan2 and Tensor.sqrt correctly rounded
    (computed in float64 and rounded once to float32, then to the tensor's
    dtype), as the op computes them: torchvision's arithmetic is then the
    op's exactly. (torch's own float32 sqrt is not always correctly rounded
    on the CPU: sqrt(2088.0896f) comes out one unit above.)"""
    cos, sin, atan2, sqrt = torch.cos, torch.sin, torch.atan2, torch.Tensor.sqrt

    def rounded(fn):
        def wrapped(*xs):
            dtype = xs[0].dtype
            out = fn(*[x.double() for x in xs])
            return out.to(torch.float32 if dtype != torch.float64 else dtype).to(dtype)
        return wrapped

    monkeypatch.setattr(torch, "cos", rounded(cos))
    monkeypatch.setattr(torch, "sin", rounded(sin))
    monkeypatch.setattr(torch, "atan2", rounded(atan2))
    monkeypatch.setattr(torch.Tensor, "sqrt", rounded(sqrt))


# ------------------------------------------------------------ values, dtypes


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS, ids=str)
@pytest.mark.parametrize("pair", PAIRS, ids="-".join)
def test_matches_torchvision(pair, dtype):
    """Every pair and dtype against the installed torchvision: axis-aligned
    pairs bit for bit; rotated ones within torch's cos/sin/atan2 (a few
    units in the last place; integer boxes within one of the rounding)."""
    if not tv_supports(pair):
        pytest.skip("torchvision %s has no rotated formats" % torchvision.__version__)
    boxes = boxes_in(pair[0], 500, 1, dtype)
    got = visionops.box_convert(boxes, *pair)
    want = tvops.box_convert(boxes, *pair)
    assert got.dtype == expected_dtype(dtype, pair) == want.dtype
    if pair[0] in AXIS or dtype in (torch.float16, torch.bfloat16):
        same(got, want, pair)
    else:
        ulp_close(got, want, row_scale(boxes, want), dtype, case=pair)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("pair", [p for p in PAIRS if p[0] in ROTATED], ids="-".join)
def test_rotated_bit_for_bit_with_rounded_transcendentals(pair, dtype, rounded_transcendentals):
    """With cos, sin and atan2 correctly rounded, torchvision 0.29's
    arithmetic and the op's agree bit for bit: the same operations in the
    same order, each rounded as torch rounds it (the half types too)."""
    if not TV_ROTATED:
        pytest.skip("torchvision %s has no rotated formats" % torchvision.__version__)
    boxes = boxes_in(pair[0], 2000, 2, dtype)
    same(visionops.box_convert(boxes, *pair), tvops.box_convert(boxes, *pair), pair)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32] + INTEGERS, ids=str)
@pytest.mark.parametrize("pair", [p for p in PAIRS if p[0] in ROTATED], ids="-".join)
def test_rotated_against_the_geometry(pair, dtype):
    """The rotated conversions against their float64 geometry (both lanes;
    integer boxes come back rounded to the nearest integer)."""
    if pair[0] == "xyxyxyxy" and dtype in (torch.int8, torch.uint8):
        pytest.skip("torch squares int8 / uint8 edges in their dtype, wrapping: "
                    "test_matches_torchvision compares those")
    lo, hi = {torch.int8: (-20, 20), torch.uint8: (90, 110)}.get(dtype, (-50, 150))
    boxes = boxes_in(pair[0], 300, 3, dtype, lo, hi)
    got = visionops.box_convert(boxes, *pair)
    assert got.dtype == dtype
    want = reference(pair[0], pair[1], boxes)
    scale = row_scale(boxes)
    if dtype.is_floating_point:
        # every angle keeps its degrees, so only the corners' error counts
        tol = 64 * torch.finfo(dtype).eps * scale
        err = (got.double() - want).abs()
        if pair[1] != "xyxyxyxy":  # r is passed through or recovered, within 180 degrees
            err[:, 4] = torch.remainder(err[:, 4] + 180, 360) - 180
            err = err.abs()
        assert bool((err <= tol).all()), (err / tol).max()
    else:
        # torchvision rounds after each step: two steps may add a rounding
        steps = 2 if "xyxyxyxy" in pair and pair != ("xyxyxyxy", "xywhr") else 1
        err = (got.double() - want).abs()
        if pair[1] != "xyxyxyxy":
            err[:, 4] = (torch.remainder(err[:, 4] + 180, 360) - 180).abs()
        assert bool((err <= 0.5 * steps + 1e-3 * scale + 1).all()), err.max()


def test_integer_dtype_table():
    """The dtype of every pair for every integer dtype (and that float boxes
    keep theirs), as torchvision gives it where it converts the pair."""
    for pair in PAIRS:
        for dtype in INTEGERS + FLOATS:
            boxes = boxes_in(pair[0], 4, 4, dtype)
            got = visionops.box_convert(boxes, *pair)
            assert got.dtype == expected_dtype(dtype, pair), (pair, dtype)
            if tv_supports(pair):
                assert tvops.box_convert(boxes, *pair).dtype == got.dtype, (pair, dtype)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8,
                                   torch.uint8], ids=str)
def test_integer_wraparound(dtype):
    """Sums beyond the integer range wrap, as torch's integer arithmetic,
    also inside a float32 result (xyxy -> cxcywh's x1 + x2)."""
    info = torch.iinfo(dtype)
    boxes = torch.tensor([[info.max, info.max - 1, info.max, 3], [info.min, 0, info.max, 1],
                          [info.max // 2, 7, info.max // 2 + 1, info.max]], dtype=dtype)
    for pair in [p for p in PAIRS if p[0] in AXIS]:
        same(visionops.box_convert(boxes, *pair), tvops.box_convert(boxes, *pair), pair)


def test_half_rounding_per_operation():
    """float16 conversions round every operation to float16 as torch does
    (so an overflowing sum is inf even where float32 would hold it)."""
    boxes = torch.tensor([[60000.0, 1.0, 10000.0, 2.0], [0.1, 0.2, 0.3, 0.7]],
                         dtype=torch.float16)
    for pair in [("xywh", "xyxy"), ("xywh", "cxcywh"), ("xyxy", "cxcywh"), ("cxcywh", "xywh")]:
        same(visionops.box_convert(boxes, *pair), tvops.box_convert(boxes, *pair), pair)
    assert torch.isinf(visionops.box_convert(boxes, "xywh", "xyxy")[0, 2])


def test_non_finite_pass_through():
    """NaN and Inf are elementwise arithmetic's, as torchvision's."""
    boxes = torch.tensor([[float("nan"), 1, 2, 3], [0, float("inf"), 1, -float("inf")],
                          [1, 2, 3, 4]])
    for pair in [p for p in PAIRS if p[0] in AXIS]:
        same(visionops.box_convert(boxes, *pair), tvops.box_convert(boxes, *pair), pair)
    rot = torch.tensor([[0.0, 0, 1, 1, float("nan")], [0, 0, float("inf"), 1, 30]])
    out = visionops.box_convert(rot, "cxcywhr", "xyxyxyxy")
    assert bool(torch.isnan(out[0]).all()) and not bool(torch.isfinite(out[1]).all())


# ------------------------------------------------------- shapes and arrays


@pytest.mark.parametrize("pair", PAIRS, ids="-".join)
def test_leading_dimensions(pair):
    """[..., K] boxes: any leading dimensions (none, empty, several)."""
    k_in, k_out = SIZE[pair[0]], SIZE[pair[1]]
    flat = boxes_in(pair[0], 24, 5, torch.float32)
    want = visionops.box_convert(flat, *pair)
    for lead in [(2, 3, 4), (24,), (1, 24), (4, 1, 6)]:
        got = visionops.box_convert(flat.reshape(lead + (k_in,)), *pair)
        same(got, want.reshape(lead + (k_out,)), lead)
        if pair[0] in AXIS:  # the rotated ones: test_matches_torchvision
            same(got, tvops.box_convert(flat.reshape(lead + (k_in,)), *pair), lead)
    same(visionops.box_convert(flat[0], *pair), want[0], "1-d")
    for lead in [(0,), (2, 0), (0, 3)]:
        empty = torch.zeros(lead + (k_in,))
        assert visionops.box_convert(empty, *pair).shape == lead + (k_out,)


def test_strided_boxes():
    wide = boxes_in("cxcywhr", 40, 6).repeat(1, 2)[::3, ::2]
    assert not wide.is_contiguous()
    same(visionops.box_convert(wide, "cxcywhr", "xywhr"),
         visionops.box_convert(wide.contiguous(), "cxcywhr", "xywhr"))


@pytest.mark.parametrize("pair", PAIRS, ids="-".join)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64,
                                   torch.int32, torch.int16, torch.int8, torch.uint8], ids=str)
def test_numpy(pair, dtype):
    """NumPy arrays (leading dimensions too) give the torch path's values and
    dtype."""
    boxes = boxes_in(pair[0], 30, 7, dtype).reshape(5, 6, SIZE[pair[0]])
    got = visionops.box_convert(boxes.numpy(), *pair)
    assert isinstance(got, np.ndarray)
    want = visionops.box_convert(boxes, *pair)
    np.testing.assert_array_equal(got, want.numpy())
    assert got.dtype == want.numpy().dtype


# ------------------------------------------------------------- gradients


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("pair", PAIRS, ids="-".join)
def test_gradient_matches_torch_autograd(pair, dtype):
    """torch.autograd through visionops.box_convert (the registered
    box_convert_backward) against autograd of torchvision's function (or of
    the reference's float64 formulas where torchvision has no rotated
    formats): axis-aligned pairs bit for bit, the sums in autograd's order;
    the rotated ones within torch's cos/sin/atan2 (the half types bit for
    bit: their rounding hides those)."""
    boxes = boxes_in(pair[0], 300, 8, dtype)
    g = torch.randn(300, SIZE[pair[1]], generator=torch.Generator().manual_seed(9),
                    dtype=torch.float64).to(dtype)
    ours = boxes.clone().requires_grad_()
    g_ours, = torch.autograd.grad(visionops.box_convert(ours, *pair), ours, g)
    assert g_ours.dtype == dtype
    if tv_supports(pair):
        theirs = boxes.clone().requires_grad_()
        g_theirs, = torch.autograd.grad(tvops.box_convert(theirs, *pair), theirs, g)
        if pair[0] in AXIS or dtype in (torch.float16, torch.bfloat16):
            same(g_ours, g_theirs, pair)
            return
    else:
        theirs = boxes.double().requires_grad_()
        g_theirs, = torch.autograd.grad(reference(pair[0], pair[1], theirs), theirs, g.double())
        g_theirs = g_theirs.to(dtype)
        if dtype in (torch.float16, torch.bfloat16):
            torch.testing.assert_close(g_ours, g_theirs, rtol=0.05, atol=0.05)
            return
    # cancellation in atan2's and sqrt's terms: relative to the row's scale
    ulp_close(g_ours, g_theirs, row_scale(g_theirs), dtype, ulps=256, case=pair)


@pytest.mark.parametrize("pair", PAIRS, ids="-".join)
def test_gradcheck(pair):
    boxes = boxes_in(pair[0], 6, 10).requires_grad_()
    assert torch.autograd.gradcheck(lambda b: visionops.box_convert(b, *pair), (boxes,))


def test_integer_boxes_have_no_gradient():
    boxes = boxes_in("xywh", 5, 11, torch.int32)
    assert not visionops.box_convert(boxes, "xywh", "cxcywh").requires_grad


def test_gradient_leading_dimensions():
    boxes = boxes_in("cxcywhr", 12, 12).reshape(3, 4, 5).requires_grad_()
    g = torch.randn(3, 4, 8, dtype=torch.float64)
    got, = torch.autograd.grad(visionops.box_convert(boxes, "cxcywhr", "xyxyxyxy"), boxes, g)
    flat = boxes.detach().reshape(12, 5).requires_grad_()
    want, = torch.autograd.grad(visionops.box_convert(flat, "cxcywhr", "xyxyxyxy"), flat,
                                g.reshape(12, 8))
    same(got, want.reshape(3, 4, 5))


# ----------------------------------------------------------- round trips


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
def test_round_trips(dtype):
    """cxcywhr -> xyxyxyxy -> cxcywhr (and through xywhr) gives the boxes
    back, angles in (-180, 180) exactly recovered up to rounding."""
    boxes = boxes_in("cxcywhr", 400, 13, dtype, angles=179.0)
    tol = 64 * torch.finfo(dtype).eps * row_scale(boxes)
    for path in [("cxcywhr", "xyxyxyxy", "cxcywhr"), ("cxcywhr", "xywhr", "xyxyxyxy", "cxcywhr"),
                 ("cxcywhr", "xywhr", "cxcywhr")]:
        b = boxes
        for a, z in zip(path, path[1:]):
            b = visionops.box_convert(b, a, z)
        assert bool(((b.double() - boxes.double()).abs() <= tol).all()), path
    for pair in [("xywh", "xyxy"), ("xywh", "cxcywh")]:
        axis = boxes_in(pair[0], 100, 14, dtype)
        back = visionops.box_convert(visionops.box_convert(axis, *pair), pair[1], pair[0])
        assert bool(((back.double() - axis.double()).abs() <= tol[:100]).all()), pair


def test_same_format_is_a_copy():
    boxes = boxes_in("xywhr", 10, 15, torch.float32)
    out = visionops.box_convert(boxes, "xywhr", "xywhr")
    same(out, boxes)
    assert out.data_ptr() != boxes.data_ptr()


# ------------------------------------------------------------ TorchScript


def test_script():
    """torch.jit.script(visionops.box_convert) compiles its typed twin, and a
    script calling it compiles, as torchvision's does."""
    scripted = torch.jit.script(visionops.box_convert)
    for pair in PAIRS:
        boxes = boxes_in(pair[0], 10, 16, torch.float32)
        same(scripted(boxes, pair[0], pair[1]), visionops.box_convert(boxes, *pair), pair)
    with pytest.raises(torch.jit.Error, match="Unsupported Bounding Box Conversions"):
        scripted(boxes, "xyxy", "nope")


def test_signature_is_torchvisions():
    ours = inspect.signature(visionops.box_convert).parameters
    assert [(p.name, p.default) for p in ours.values()] == \
        [(p.name, p.default) for p in inspect.signature(tvops.box_convert).parameters.values()]
    from visionops import _script

    assert list(inspect.signature(_script.box_convert).parameters) == list(ours)
    area = inspect.signature(visionops.box_area).parameters
    assert [(p.name, p.default) for p in area.values()] == [("boxes", inspect.Parameter.empty),
                                                          ("fmt", "xyxy")]
    assert [(p.name, p.default) for p in inspect.signature(_script.box_area).parameters.values()] \
        == [(p.name, p.default) for p in area.values()]


# ----------------------------------------------------------------- errors


@pytest.mark.parametrize("fmts", [("xyz", "xyxy"), ("xyxy", "XYXY"), ("xywh", "cxcy")])
def test_unknown_format(fmts):
    boxes = torch.zeros(3, 4)
    with pytest.raises(ValueError, match="Unsupported Bounding Box Conversions"):
        visionops.box_convert(boxes, *fmts)
    with pytest.raises(ValueError):
        tvops.box_convert(boxes, *fmts)
    with pytest.raises(ValueError, match="Unsupported Bounding Box Conversions"):
        visionops.box_convert(boxes.numpy(), *fmts)


@pytest.mark.parametrize("pair", [("xyxy", "cxcywhr"), ("xyxyxyxy", "xywh"), ("cxcywh", "xywhr")])
def test_axis_and_rotated_do_not_convert(pair):
    """torchvision refuses these pairs with NotImplementedError: so does
    visionops (no axis-aligned -> rotated with angle 0: docs/DECISIONS.md)."""
    boxes = torch.zeros(3, SIZE[pair[0]])
    with pytest.raises(NotImplementedError, match="axis-aligned and rotated"):
        visionops.box_convert(boxes, *pair)
    if TV_ROTATED:
        with pytest.raises(NotImplementedError):
            tvops.box_convert(boxes, *pair)


def test_wrong_coordinates_count():
    with pytest.raises(ValueError, match=r"box_convert: boxes in format cxcywhr must have "
                                         r"shape \[\.\.\., 5\], got \[3, 4\]"):
        visionops.box_convert(torch.zeros(3, 4), "cxcywhr", "xywhr")
    with pytest.raises(ValueError, match=r"must have shape \[\.\.\., 8\]"):
        visionops.box_convert(np.zeros((2, 5)), "xyxyxyxy", "xywhr")
    with pytest.raises(ValueError, match=r"must have shape \[\.\.\., 4\], got \[\]"):
        visionops.box_convert(torch.tensor(1.0), "xyxy", "xywh")


def test_bad_dtypes_and_types():
    with pytest.raises(TypeError, match="box_convert: boxes must be a tensor"):
        visionops.box_convert([[0, 0, 1, 1]], "xyxy", "xywh")
    with pytest.raises(visionops.VisionOpsTypeError, match="box_convert: boxes .*bool"):
        visionops.box_convert(torch.zeros(2, 4, dtype=torch.bool), "xyxy", "xywh")


def test_c_op_refuses_bad_formats():
    """The op itself checks its int formats (C callers pass vo_box_format)."""
    with pytest.raises(ValueError, match="box_convert: in_fmt must be a box format"):
        torch.ops.visionops.box_convert(torch.zeros(2, 4), 6, 0)
    with pytest.raises(ValueError, match=r"no conversion from xyxy \(0\) to xywhr \(4\)"):
        torch.ops.visionops.box_convert(torch.zeros(2, 4), 0, 4)


# --------------------------------------------------------- box_area's fmt


def wh_area(boxes):
    """torchvision 0.29's area of the formats with a width and height: its
    upcasting, then w * h."""
    if boxes.is_floating_point():
        boxes = boxes if boxes.dtype in (torch.float32, torch.float64) else boxes.float()
    else:
        boxes = boxes if boxes.dtype == torch.int64 else boxes.int()
    return boxes[..., 2] * boxes[..., 3]


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS, ids=str)
@pytest.mark.parametrize("fmt", ["xyxy", "xywh", "cxcywh"])
def test_box_area_formats(fmt, dtype):
    boxes = boxes_in(fmt, 60, 17, dtype).reshape(3, 20, 4)
    boxes[0, :3, 2:] = torch.tensor([0, -1], dtype=dtype) if dtype != torch.uint8 else 0
    got = visionops.box_area(boxes, fmt)
    if TV_AREA_FMT:
        same(got, tvops.box_area(boxes, fmt), fmt)
    if fmt == "xyxy":
        same(got, visionops.box_area(boxes.reshape(60, 4)).reshape(3, 20))
    else:
        same(got, wh_area(boxes), fmt)
    np.testing.assert_array_equal(visionops.box_area(boxes.numpy(), fmt=fmt), got.numpy()) \
        if dtype != torch.bfloat16 else None


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("fmt", ["xywh", "cxcywh"])
def test_box_area_format_gradient(fmt, dtype):
    """The gradient of w * h (torchvision 0.29's): grad * h, grad * w, zeros
    for the position, in the boxes' dtype."""
    boxes = boxes_in(fmt, 50, 18, dtype)
    boxes[:5, 2:] = 0
    out_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    g = torch.randn(50, generator=torch.Generator().manual_seed(19),
                    dtype=torch.float64).to(out_dtype)
    ours = boxes.clone().requires_grad_()
    got, = torch.autograd.grad(visionops.box_area(ours, fmt), ours, g)
    theirs = boxes.clone().requires_grad_()
    area = tvops.box_area(theirs, fmt) if TV_AREA_FMT else wh_area(theirs)
    want, = torch.autograd.grad(area, theirs, g)
    same(got, want)
    assert bool((torch.signbit(got) == torch.signbit(want)).all())


def test_box_area_format_errors():
    with pytest.raises(ValueError, match="Unsupported Bounding Box area for given format xywhr"):
        visionops.box_area(torch.zeros(2, 4), "xywhr")
    with pytest.raises(ValueError, match="Unsupported Bounding Box area"):
        visionops.box_area(np.zeros((2, 4)), fmt="XYXY")
    with pytest.raises(ValueError, match=r"box_area: boxes must have shape \[N, 4\]"):
        visionops.box_area(torch.zeros(2, 3, 5), "xywh")
    scripted = torch.jit.script(visionops.box_area)
    same(scripted(boxes_in("xywh", 5, 20), "xywh"), visionops.box_area(boxes_in("xywh", 5, 20),
                                                                      "xywh"))
    with pytest.raises(torch.jit.Error, match="Unsupported Bounding Box area"):
        scripted(torch.zeros(2, 4), "nope")

