"""pyopencl arrays through visionops: every op the OpenCL backend implements
(found by calling it: the others fail with the library's "not implemented
on the opencl backend") on the C sample registry's arguments against the
CPU; the public functions on pyopencl arrays against NumPy; queues,
contexts, views and errors. Skipped with the reason where pyopencl, an
OpenCL device or this build's OpenCL backend is missing."""
import numpy as np
import pytest

import visionops
from visionops import _core
from conftest import assert_close, detections, distinct_scores, make_rois, rois_to_list, run_python

NOT_IMPLEMENTED = "not implemented on the opencl backend"


def _opencl_queue():
    """(queue, None) on the first OpenCL device, or (None, why not)."""
    try:
        import pyopencl as cl
    except ImportError:
        return None, "pyopencl is not installed (apt-get install python3-pyopencl)"
    backend = {b[0]: b for b in visionops.backends()}.get("opencl")
    if backend is None or not backend[1]:
        return None, "this build of visionops has no OpenCL backend"
    if not backend[2]:
        return None, "the OpenCL backend is unavailable: %s" % backend[3]
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error as e:
        return None, "pyopencl finds no OpenCL platform: %s" % e
    if not devices:
        return None, "pyopencl finds no OpenCL device"
    return cl.CommandQueue(cl.Context([devices[0]])), None


QUEUE, WHY_NOT = _opencl_queue()
needs_opencl = pytest.mark.skipif(QUEUE is None, reason=str(WHY_NOT))


def dev(x, queue=None):
    import pyopencl.array as cl_array

    return cl_array.to_device(queue or QUEUE, np.ascontiguousarray(x))


def is_cl(x):
    import pyopencl.array as cl_array

    return isinstance(x, cl_array.Array)


def on_opencl(fn, *args):
    """fn(*args), skipping where the op has no OpenCL kernel on this branch."""
    try:
        return fn(*args)
    except visionops.VisionOpsError as e:
        if NOT_IMPLEMENTED in str(e):
            pytest.skip(str(e))
        raise


# ------------------------------------------- every op, from the samples


def _sample(name, dtype_name):
    torch = pytest.importorskip("torch", reason="the exported samples come as torch tensors")
    import exported_samples

    args = exported_samples.sample(name, getattr(torch, dtype_name))
    if args is None:
        pytest.skip("no sample for %s in %s (no vo_samples_export in this build)"
                    % (name, dtype_name))

    def host(a):
        if isinstance(a, torch.Tensor):
            return a.numpy()
        if isinstance(a, list) and a and isinstance(a[0], torch.Tensor):
            return [t.numpy() for t in a]
        return a

    return [host(a) for a in args]


def _to_device(args):
    return [dev(a) if isinstance(a, np.ndarray)
            else [dev(t) for t in a] if isinstance(a, list) and a and isinstance(a[0], np.ndarray)
            else a for a in args]


@needs_opencl
@pytest.mark.parametrize("dtype_name", ["float32", "float64", "float16"])
@pytest.mark.parametrize("name", sorted(_core.SCHEMAS))
def test_op_matches_cpu(name, dtype_name):
    """Each op (forward and backward) on pyopencl arrays against the same
    sample on the CPU: outputs are pyopencl arrays on the inputs' queue, of
    the CPU's shapes and dtypes, equal to within float tolerance
    (complete_box_iou's atan is not correctly rounded in OpenCL)."""
    args = _sample(name, dtype_name)
    want = _core.run_numpy(name, args)
    got = on_opencl(_core.run_numpy, name, _to_device(args))
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert is_cl(g) and g.queue is QUEUE, "%s output %d" % (name, k)
        assert g.dtype == w.dtype and g.shape == w.shape, "%s output %d" % (name, k)
        host = g.get()
        if w.dtype.kind == "f":
            assert_close(host, w, dtype=dtype_name, what="%s output %d" % (name, k))
        else:
            np.testing.assert_array_equal(host, w, err_msg="%s output %d" % (name, k))


@needs_opencl
def test_missing_kernel_fails_clearly():
    """An op without OpenCL glue (whichever this build still lacks) fails
    with the library's message, naming the op, and writes nothing."""
    for name in sorted(_core.SCHEMAS):
        args = _sample(name, "float32")
        try:
            _core.run_numpy(name, _to_device(args))
        except visionops.VisionOpsError as e:
            if NOT_IMPLEMENTED in str(e):
                assert str(e).startswith(name + ":"), str(e)
                return
            raise
    pytest.skip("every op is implemented on OpenCL in this build")


# --------------------------------------------------- the public functions


@needs_opencl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 300])
def test_nms(dtype, n, rng):
    boxes = detections(rng, n, dtype)
    scores = distinct_scores(rng, n, dtype)
    idxs = rng.integers(0, 4, n).astype(np.int32)  # widened to int64 on the device
    for thr in (0.3, 0.7):
        keep = visionops.nms(dev(boxes), dev(scores), thr)
        assert is_cl(keep) and keep.queue is QUEUE and keep.dtype == np.int64
        np.testing.assert_array_equal(keep.get(), visionops.nms(boxes, scores, thr))
        keep = visionops.batched_nms(dev(boxes), dev(scores), dev(idxs), thr)
        assert is_cl(keep) and keep.dtype == np.int64
        np.testing.assert_array_equal(keep.get(), visionops.batched_nms(boxes, scores, idxs, thr))


@needs_opencl
@pytest.mark.parametrize("fn", ["box_iou", "generalized_box_iou", "distance_box_iou",
                                "complete_box_iou"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_pairwise(fn, dtype, rng):
    f = getattr(visionops, fn)
    a, b = detections(rng, 40, dtype), detections(rng, 25, dtype)
    got = f(dev(a), dev(b))
    assert is_cl(got) and got.queue is QUEUE
    assert_close(got.get(), f(a, b), dtype=np.dtype(dtype).name, what=fn)
    # batched, with broadcast leading dimensions: [2, 1, N, 4] x [3, M, 4]
    a3 = np.stack([a, a[::-1]])[:, None]
    b3 = np.stack([b, b * 0.5, b[::-1]])
    got = f(dev(a3), dev(b3))
    assert got.shape == (2, 3, 40, 25)
    assert_close(got.get(), f(a3, b3), dtype=np.dtype(dtype).name, what=fn + " batched")
    empty = f(dev(a3[:0]), dev(b3))
    assert is_cl(empty) and empty.shape == (0, 3, 40, 25)


@needs_opencl
@pytest.mark.parametrize("fmt", ["xywh", "cxcywh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_box_iou_formats(fmt, dtype, rng):
    a, b = detections(rng, 30, dtype), detections(rng, 20, dtype)
    a[:, 2:] -= a[:, :2]
    b[:, 2:] -= b[:, :2]
    got = visionops.box_iou(dev(a), dev(b), fmt=fmt)
    np.testing.assert_array_equal(got.get(), visionops.box_iou(a, b, fmt=fmt))


@needs_opencl
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int32])
def test_box_area(dtype, rng):
    boxes = (detections(rng, 50, np.float64) * 3).astype(dtype)
    got = visionops.box_area(dev(boxes))
    want = visionops.box_area(boxes)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.get(), want)


BOX_PAIRS = [(a, b) for group in (("xyxy", "xywh", "cxcywh"), ("cxcywhr", "xywhr", "xyxyxyxy"))
             for a in group for b in group]
BOX_SIZE = {"xyxy": 4, "xywh": 4, "cxcywh": 4, "cxcywhr": 5, "xywhr": 5, "xyxyxyxy": 8}


@needs_opencl
@pytest.mark.parametrize("pair", BOX_PAIRS, ids="-".join)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.uint8])
def test_box_convert(pair, dtype, rng):
    """Every pair on pyopencl arrays (leading dimensions too) against NumPy:
    the same kernel's arithmetic on the device."""
    boxes = (rng.uniform(0, 60, size=(3, 7, BOX_SIZE[pair[0]]))).astype(dtype)
    got = visionops.box_convert(dev(boxes), *pair)
    want = visionops.box_convert(boxes, *pair)
    assert is_cl(got) and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.get().astype(np.float64), want.astype(np.float64),
                               rtol=1e-6 if dtype != np.float16 else 1e-3, atol=1e-5)


@needs_opencl
@pytest.mark.parametrize("fmt", ["xyxy", "xywh", "cxcywh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int16])
def test_box_area_formats(fmt, dtype, rng):
    boxes = (detections(rng, 40, np.float64) * 3).astype(dtype).reshape(2, 20, 4)
    got = visionops.box_area(dev(boxes), fmt)
    want = visionops.box_area(boxes, fmt)
    assert is_cl(got) and got.dtype == want.dtype and got.shape == (2, 20)
    np.testing.assert_array_equal(got.get(), want)


@needs_opencl
def test_views_offsets_and_strides(rng):
    """A pyopencl view is its buffer, byte offset and byte strides: read in
    place, no copy."""
    a = detections(rng, 64, np.float32)
    b = detections(rng, 30, np.float32)
    da = dev(a)
    np.testing.assert_array_equal(visionops.box_iou(da[5:40], dev(b)).get(),
                                  visionops.box_iou(a[5:40], b))
    np.testing.assert_array_equal(visionops.box_iou(da[1::3], dev(b)).get(),
                                  visionops.box_iou(a[1::3], b))
    np.testing.assert_array_equal(visionops.box_area(da[7:]).get(), visionops.box_area(a[7:]))


@needs_opencl
def test_roi_ops(rng):
    """The RoI ops (where this build has their OpenCL kernels) on pyopencl
    arrays, with [K, 5] rois and with a list of [L, 4] boxes packed on the
    device."""
    x = rng.standard_normal((2, 3, 12, 14)).astype(np.float32)
    x_ps = rng.standard_normal((2, 8, 12, 14)).astype(np.float32)  # 2 channels x 2x2 bins
    rois = make_rois(rng, 9, 2, 12, 8)
    boxes = rois_to_list(rois, 2)
    for fn in ("roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool"):
        f = getattr(visionops, fn)
        features = x_ps if fn.startswith("ps_") else x
        want = f(features, rois, (2, 2), 0.5)
        got = on_opencl(f, dev(features), dev(rois), (2, 2), 0.5)
        assert_close(got.get(), want, what=fn)
        got = f(dev(features), [dev(b) for b in boxes], (2, 2), 0.5)
        assert_close(got.get(), want, what=fn + " box list")


@needs_opencl
def test_multi_scale_roi_align_and_deform_conv2d(rng):
    """The functions taking feature lists and optional tensors (where this
    build has their OpenCL kernels), against NumPy."""
    features = [rng.standard_normal((1, 2, 32 // s, 32 // s)).astype(np.float32)
                for s in (4, 8)]
    rois = make_rois(rng, 6, 1, 32, 20)
    boxes = [rois[:, 1:].copy()]
    args = ([0.25, 0.125], (3, 3), 2)
    want = visionops.multi_scale_roi_align(features, boxes, *args)
    got = on_opencl(visionops.multi_scale_roi_align, [dev(f) for f in features],
                    [dev(b) for b in boxes], *args)
    assert is_cl(got)
    assert_close(got.get(), want, what="multi_scale_roi_align")
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    weight = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    offset = rng.standard_normal((1, 18, 4, 4)).astype(np.float32)
    mask = rng.uniform(size=(1, 9, 4, 4)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    want = visionops.deform_conv2d(x, offset, weight, bias, mask=mask)
    got = on_opencl(visionops.deform_conv2d, dev(x), dev(offset), dev(weight), dev(bias),
                    (1, 1), (0, 0), (1, 1), dev(mask))
    assert_close(got.get(), want, what="deform_conv2d")


@needs_opencl
def test_nms_family_public_functions(rng):
    """The deployment NMS ops' public functions on pyopencl arrays equal
    NumPy's, including the shapes they slice or gather to on the host
    (onnx_nms's exact rows, soft_nms's kept rows, matrix_nms's Paddle
    rows) and their padded forms, bit for bit but the gaussian decays
    (within 2 float ulps: kernels/exp.h's exp on the device, the C
    library's on the CPU)."""
    b, m, c = 3, 300, 4
    boxes = np.stack([detections(rng, m) for _ in range(b)])
    scores = np.stack([np.stack([distinct_scores(rng, m) for _ in range(c)])
                       for _ in range(b)])
    yxyx = np.ascontiguousarray(boxes[..., [1, 0, 3, 2]])
    calls = [
        lambda x, s, y: visionops.batched_nms_padded(x, s, 0.5, 0.2, 30, 50),
        lambda x, s, y: visionops.batched_nms_padded(x, s, 0.5, None, -1, 40,
                                                     class_agnostic=True),
        lambda x, s, y: visionops.onnx_nms(y, s, 25, 0.5, 0.3),
        lambda x, s, y: visionops.onnx_nms(y, s, 25, 0.5, 0.3, exact_shape=True),
        lambda x, s, y: visionops.soft_nms(x[0], s[0, 0], 0.3, 0.5, 0.01, "gaussian"),
        lambda x, s, y: visionops.soft_nms(x[0], s[0, 0], 0.3, 0.5, 0.01, padded=True),
        lambda x, s, y: visionops.matrix_nms(x, s, 0.2, 0.1, 100, 60, background_label=-1,
                                             return_index=True),
        lambda x, s, y: visionops.matrix_nms(x, s, 0.2, 0.1, 100, 60, use_gaussian=True,
                                             padded=True),
        lambda x, s, y: visionops.matrix_nms(x, s, 0.99, 0.1, 100, 60, return_index=True),
    ]
    for i, call in enumerate(calls):
        want = call(boxes, scores, yxyx)
        got = call(dev(boxes), dev(scores), dev(yxyx))
        assert len(got) == len(want), i
        for g, w in zip(got, want):
            if w is None:
                assert g is None, i
                continue
            assert is_cl(g), (i, type(g))
            g = g.get()
            assert g.dtype == w.dtype and g.shape == w.shape, (i, g.dtype, g.shape, w.shape)
            if i in (4, 7) and g.dtype == np.float32:  # gaussian: the devices' exp
                np.testing.assert_allclose(g, w, rtol=5e-7, atol=0, err_msg=str(i))
            else:
                np.testing.assert_array_equal(g, w, err_msg=str(i))


@needs_opencl
def test_deform_attn(rng):
    """deform_attn on pyopencl arrays (where this build has its OpenCL
    kernel; the int64 level tensors on the device too), against NumPy."""
    shapes = np.array([[5, 7], [3, 4], [1, 1]], dtype=np.int64)
    starts = np.array([0, 35, 47], dtype=np.int64)
    value = rng.standard_normal((2, 48, 2, 3)).astype(np.float32)
    loc = rng.uniform(-0.2, 1.2, size=(2, 6, 2, 3, 2, 2)).astype(np.float32)
    weight = rng.uniform(size=(2, 6, 2, 3, 2)).astype(np.float32)
    want = visionops.deform_attn(value, shapes, starts, loc, weight)
    got = on_opencl(visionops.deform_attn, dev(value), dev(shapes), dev(starts), dev(loc),
                    dev(weight))
    assert is_cl(got) and got.queue is QUEUE
    assert_close(got.get(), want, rtol=1e-5, atol=2e-5, what="deform_attn")


@needs_opencl
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_box_list_packed_on_device(dtype, rng):
    """ops._rois on a list of pyopencl boxes: the [K, 5] rois NumPy makes,
    built on the device (empty images included)."""
    from visionops import ops

    rois = make_rois(rng, 12, 3, 20, 10, dtype)
    boxes = rois_to_list(rois, 3) + [np.zeros((0, 4), dtype)]
    got = ops._rois("roi_align", [dev(b) for b in boxes])
    assert got.dtype == dtype and got.queue is QUEUE
    np.testing.assert_array_equal(got.get(), ops._rois("roi_align", boxes))


# ------------------------------------------------------ queues and errors


@needs_opencl
def test_outputs_on_the_inputs_queue(rng):
    """A second queue in the same context: the call runs there and its
    outputs are there; the context's own arrays are read in place."""
    import pyopencl as cl

    q2 = cl.CommandQueue(QUEUE.context)
    a, b = detections(rng, 20, np.float32), detections(rng, 10, np.float32)
    got = visionops.box_iou(dev(a, q2), dev(b, q2))
    assert got.queue is q2
    np.testing.assert_array_equal(got.get(), visionops.box_iou(a, b))
    # an array without a queue beside one with a queue takes that queue
    got = visionops.box_iou(dev(a, q2).with_queue(None), dev(b, q2))
    assert got.queue is q2


@needs_opencl
def test_outputs_from_the_inputs_allocator(rng):
    """Inputs from a memory pool: the outputs come from it too."""
    import pyopencl.array as cl_array
    import pyopencl.tools as cl_tools

    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(QUEUE))
    a = detections(rng, 20, np.float32)
    got = visionops.box_iou(cl_array.to_device(QUEUE, a, allocator=pool), dev(a))
    assert got.allocator is pool
    np.testing.assert_array_equal(got.get(), visionops.box_iou(a, a))


@needs_opencl
def test_mixed_queues_contexts_and_frameworks(rng):
    import pyopencl as cl

    a, b = detections(rng, 20, np.float32), detections(rng, 10, np.float32)
    with pytest.raises(visionops.VisionOpsValueError,
                       match=r"box_iou: boxes2 is a numpy\.ndarray beside pyopencl arrays"):
        visionops.box_iou(dev(a), b)
    with pytest.raises(visionops.VisionOpsValueError,
                       match=r"box_iou: boxes1 is a numpy\.ndarray beside pyopencl arrays"):
        visionops.box_iou(a, dev(b))
    with pytest.raises(visionops.VisionOpsValueError, match=r"nms: scores is a numpy"):
        visionops.nms(dev(a), a[:, 0].copy(), 0.5)
    q2 = cl.CommandQueue(QUEUE.context)
    with pytest.raises(visionops.VisionOpsValueError,
                       match=r"box_iou: boxes2 is on another OpenCL queue than boxes1"):
        visionops.box_iou(dev(a), dev(b, q2))
    other = cl.CommandQueue(cl.Context([QUEUE.device]))
    with pytest.raises(visionops.VisionOpsValueError,
                       match=r"box_iou: boxes2 is in another OpenCL context than boxes1"):
        visionops.box_iou(dev(a), dev(b, other))
    ooo = cl.CommandQueue(QUEUE.context,
                          properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    with pytest.raises(visionops.VisionOpsValueError, match=r"box_area: boxes's queue .*out of"):
        visionops.box_area(dev(a, ooo))
    with pytest.raises(visionops.VisionOpsValueError, match=r"box_area: .*no queue"):
        visionops.box_area(dev(a).with_queue(None))
    with pytest.raises(visionops.VisionOpsValueError,
                       match=r"roi_align: boxes\[1\] is a numpy\.ndarray beside pyopencl"):
        visionops.roi_align(dev(np.zeros((1, 1, 4, 4), np.float32)), [dev(a[:, :4]), a[:, :4]],
                            2)


@needs_opencl
def test_out_takes_no_pyopencl_arrays(rng):
    """out= is for NumPy arrays and torch tensors: a pyopencl array among the
    inputs or as out is refused by name, and nothing is written."""
    a = detections(rng, 6, np.float32)
    out = np.full((6, 6), -1.0, np.float32)
    with pytest.raises(visionops.VisionOpsTypeError,
                       match=r"box_iou: out= takes NumPy arrays or torch tensors, not pyopencl"):
        visionops.box_iou(dev(a), dev(a), out=out)
    assert (out == -1).all()
    with pytest.raises(visionops.VisionOpsTypeError,
                       match=r"box_iou: out= takes NumPy arrays or torch tensors, not pyopencl"):
        visionops.box_iou(a, a, out=dev(out))


@needs_opencl
def test_library_errors_pass_through(rng):
    """The library checks pyopencl arrays as any tensor: op, argument, value."""
    with pytest.raises(visionops.VisionOpsValueError, match=r"box_iou: boxes1"):
        visionops.box_iou(dev(np.zeros((3, 5), np.float32)), dev(np.zeros((2, 4), np.float32)))
    with pytest.raises(visionops.VisionOpsTypeError, match=r"nms"):
        visionops.nms(dev(np.zeros((3, 4), np.int32)), dev(np.zeros(3, np.int32)), 0.5)


@needs_opencl
def test_arrays_outside_their_buffers_are_refused():
    """pyopencl builds an array over any buffer it is given; the library
    refuses one larger than its buffer, and one whose buffer belongs to
    another context than the queue's, where a kernel would read out of
    bounds or across contexts."""
    import pyopencl as cl
    import pyopencl.array as cl_array

    small = cl.Buffer(QUEUE.context, cl.mem_flags.READ_WRITE, 64)
    boxes = cl_array.Array(QUEUE, (5, 4), np.float32, data=small)
    with pytest.raises(visionops.VisionOpsValueError,
                       match=r"box_area: boxes does not fit its buffer of 64 bytes: from byte "
                             r"offset 0 it reaches 0 bytes below and 80 bytes on"):
        visionops.box_area(boxes)
    elsewhere = cl_array.to_device(cl.CommandQueue(cl.Context(QUEUE.context.devices)),
                                   np.zeros((5, 4), np.float32))
    with pytest.raises(visionops.VisionOpsValueError,
                       match=r"box_area: boxes: its buffer belongs to another OpenCL context"):
        visionops.box_area(cl_array.Array(QUEUE, (5, 4), np.float32, data=elsewhere.base_data))


def test_pyopencl_stays_optional():
    """NumPy calls never import pyopencl (nor need it installed)."""
    r = run_python("import sys, numpy as np, visionops\n"
                   "b = np.array([[0, 0, 1, 1], [0, 0, 1, 1]], np.float32)\n"
                   "assert list(visionops.nms(b, np.array([1, 0.5], np.float32), 0.5)) == [0]\n"
                   "assert 'pyopencl' not in sys.modules, 'pyopencl was imported'\n")
    assert r.returncode == 0, r.stderr

