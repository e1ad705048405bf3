"""Parity of the C library's box operators with torchvision.ops, through
ctypes on the built shared library (the Python package will replace this
harness). Usage: parity_torchvision.py path/to/libvisionops.so
Exits 77 (ctest's skip) when torch/torchvision are not importable."""
import ctypes
import sys

try:
    import numpy as np
    import torch
    import torchvision
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"skipped: {e}")
    sys.exit(77)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


CODES = {np.dtype(np.float32): (2, 32), np.dtype(np.float64): (2, 64),
         np.dtype(np.int64): (0, 64)}
lib = ctypes.CDLL(sys.argv[1])
lib.vo_last_error.restype = ctypes.c_char_p
failures = 0
checks = 0


def dl(a, keep):
    shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    keep.append(shape)
    code, bits = CODES[a.dtype]
    t = DLTensor(a.ctypes.data, DLDevice(1, 0), a.ndim, DLDataType(code, bits, 1),
                 shape if a.ndim else None, None, 0)
    keep.append(t)
    return ctypes.byref(t)


def call(fn, inputs, scalars, outputs):
    keep = []
    args = [dl(a, keep) for a in inputs] + [ctypes.c_double(s) for s in scalars]
    args += [dl(o, keep) for o in outputs]
    status = getattr(lib, fn)(None, *args)
    if status != 0:
        raise RuntimeError(lib.vo_last_error().decode())


def vo_nms(boxes, scores, thr, idxs=None):
    keep = np.empty(len(boxes), np.int64)
    num_kept = np.zeros((), np.int64)
    if idxs is None:
        call("vo_nms", [boxes, scores], [thr], [keep, num_kept])
    else:
        call("vo_batched_nms", [boxes, scores, idxs], [thr], [keep, num_kept])
    return keep[: int(num_kept)]


def check(ok, what):
    global failures, checks
    checks += 1
    if not ok:
        failures += 1
        print("FAIL:", what)


rng = np.random.default_rng(0)


def detections(n):
    """Clusters of jittered boxes around objects, as a detector emits them."""
    m = n // 20 + 1
    centres, sizes = rng.uniform(0, 800, (m, 2)), rng.uniform(10, 200, (m, 2))
    k = rng.integers(0, m, n)
    c = centres[k] + rng.normal(0, 8, (n, 2))
    wh = sizes[k] * rng.uniform(0.8, 1.2, (n, 2))
    return np.concatenate([c - wh / 2, c + wh / 2], 1)


for dtype in (np.float32, np.float64):
    for n in (0, 1, 64, 65, 1000, 5000):
        boxes = detections(n).astype(dtype)
        # Distinct scores: torchvision's sort is not stable, so with ties
        # only the kept set is comparable (checked separately below).
        scores = rng.permutation(n).astype(dtype) / max(n, 1)
        idxs = rng.integers(0, 80, n)
        tb, ts, ti = torch.from_numpy(boxes), torch.from_numpy(scores), torch.from_numpy(idxs)
        for thr in (0.3, 0.5, 0.7):
            want = torchvision.ops.nms(tb, ts, thr).numpy()
            check(np.array_equal(vo_nms(boxes, scores, thr), want), f"nms {dtype} {n} {thr}")
            want = torchvision.ops.batched_nms(tb, ts, ti, thr).numpy()
            got = vo_nms(boxes, scores, thr, idxs)
            check(np.array_equal(got, want), f"batched_nms {dtype} {n} {thr}")
        tied = np.round(scores * 10) / 10
        want = set(torchvision.ops.nms(tb, torch.from_numpy(tied), 0.5).numpy())
        check(set(vo_nms(boxes, tied, 0.5)) == want, f"nms with ties {dtype} {n}")

pairs = [("vo_box_iou", torchvision.ops.box_iou, ()),
         ("vo_generalized_box_iou", torchvision.ops.generalized_box_iou, ()),
         ("vo_distance_box_iou", torchvision.ops.distance_box_iou, (1e-7,)),
         ("vo_complete_box_iou", torchvision.ops.complete_box_iou, (1e-7,))]
for dtype, rtol in ((np.float32, 1e-5), (np.float64, 1e-12)):
    a, b = detections(300).astype(dtype), detections(200).astype(dtype)
    for fn, ref, eps in pairs:
        out = np.empty((len(a), len(b)), dtype)
        call(fn, [a, b], eps, [out])
        want = ref(torch.from_numpy(a), torch.from_numpy(b), *eps).numpy()
        check(np.allclose(out, want, rtol=rtol, atol=rtol), f"{fn} {dtype}: max diff "
              f"{np.abs(out - want).max()}")



def vo_roi_align(x, rois, scale, ph, pw, sampling, aligned):
    out = np.empty((len(rois), x.shape[1], ph, pw), x.dtype)
    keep = []
    args = [dl(x, keep), dl(rois, keep), ctypes.c_double(scale), ctypes.c_int64(ph),
            ctypes.c_int64(pw), ctypes.c_int64(sampling), ctypes.c_int(aligned), dl(out, keep)]
    if lib.vo_roi_align(None, *args) != 0:
        raise RuntimeError(lib.vo_last_error().decode())
    return out


def vo_roi_align_backward(g, rois, scale, ph, pw, shape, sampling, aligned):
    out = np.empty(shape, g.dtype)
    keep = []
    args = [dl(g, keep), dl(rois, keep), ctypes.c_double(scale), ctypes.c_int64(ph),
            ctypes.c_int64(pw)] + [ctypes.c_int64(d) for d in shape] + [
            ctypes.c_int64(sampling), ctypes.c_int(aligned), dl(out, keep)]
    if lib.vo_roi_align_backward(None, *args) != 0:
        raise RuntimeError(lib.vo_last_error().decode())
    return out


for dtype, rtol in ((np.float32, 1e-5), (np.float64, 1e-12)):
    x = rng.normal(size=(2, 5, 23, 31)).astype(dtype)
    k = 40
    xy = rng.uniform(-10, 140, (k, 2))
    wh = rng.uniform(0.5, 80, (k, 2))
    rois = np.concatenate([rng.integers(0, 2, (k, 1)), xy, xy + wh], 1).astype(dtype)
    for aligned in (False, True):
        for sampling in (-1, 0, 1, 2):
            for ph, pw in ((7, 7), (3, 5)):
                want = torchvision.ops.roi_align(torch.from_numpy(x), torch.from_numpy(rois),
                                                  (ph, pw), 0.25, sampling, aligned)
                got = vo_roi_align(x, rois, 0.25, ph, pw, sampling, aligned)
                check(np.allclose(got, want.numpy(), rtol=rtol, atol=rtol),
                      f"roi_align {dtype} aligned={aligned} sampling={sampling} {ph}x{pw}: "
                      f"max diff {np.abs(got - want.numpy()).max()}")
                tx = torch.from_numpy(x).requires_grad_()
                out = torchvision.ops.roi_align(tx, torch.from_numpy(rois), (ph, pw), 0.25,
                                                sampling, aligned)
                g = rng.normal(size=out.shape).astype(dtype)
                out.backward(torch.from_numpy(g))
                got = vo_roi_align_backward(g, rois, 0.25, ph, pw, x.shape, sampling, aligned)
                want = tx.grad.numpy()
                check(np.allclose(got, want, rtol=rtol * 10, atol=rtol * 10),
                      f"roi_align_backward {dtype} aligned={aligned} sampling={sampling}: "
                      f"max diff {np.abs(got - want).max()}")

# roi_pool: out and argmax identical to torchvision's, and the backward
# (same summation order per pixel) identical too.
CODES[np.dtype(np.int32)] = (0, 32)


def vo_roi_pool(x, rois, scale, ph, pw):
    out = np.empty((len(rois), x.shape[1], ph, pw), x.dtype)
    am = np.empty(out.shape, np.int32)
    keep = []
    args = [dl(x, keep), dl(rois, keep), ctypes.c_double(scale), ctypes.c_int64(ph),
            ctypes.c_int64(pw), dl(out, keep), dl(am, keep)]
    if lib.vo_roi_pool(None, *args) != 0:
        raise RuntimeError(lib.vo_last_error().decode())
    return out, am


def vo_roi_pool_backward(g, rois, am, scale, ph, pw, shape):
    out = np.empty(shape, g.dtype)
    keep = []
    args = [dl(g, keep), dl(rois, keep), dl(am, keep), ctypes.c_double(scale),
            ctypes.c_int64(ph), ctypes.c_int64(pw)] + [ctypes.c_int64(d) for d in shape] + [
            dl(out, keep)]
    if lib.vo_roi_pool_backward(None, *args) != 0:
        raise RuntimeError(lib.vo_last_error().decode())
    return out


for dtype in (np.float32, np.float64):
    for ties in (False, True):
        x = rng.normal(size=(2, 5, 23, 31)).astype(dtype)
        if ties:
            x = rng.integers(-2, 3, size=x.shape).astype(dtype)
        k = 60
        xy = rng.uniform(-10, 140, (k, 2))
        wh = rng.uniform(0.5, 80, (k, 2))
        rois = np.concatenate([rng.integers(0, 2, (k, 1)), xy, xy + wh], 1)
        rois[::4, 1:] = np.round(rois[::4, 1:] / 4) * 4 + 2  # x*0.25 on a .5 tie
        rois[1::7, 3:] = rois[1::7, 1:3] - 3  # reversed: forced to 1x1
        rois = rois.astype(dtype)
        for ph, pw in ((7, 7), (3, 5), (1, 1)):
            tx = torch.from_numpy(x)
            want, want_am = torch.ops.torchvision.roi_pool(tx, torch.from_numpy(rois), 0.25, ph, pw)
            got, got_am = vo_roi_pool(x, rois, 0.25, ph, pw)
            check(np.array_equal(got, want.numpy()) and np.array_equal(got_am, want_am.numpy()),
                  f"roi_pool {dtype} ties={ties} {ph}x{pw}: max diff "
                  f"{np.abs(got - want.numpy()).max()}, argmax differs at "
                  f"{int((got_am != want_am.numpy()).sum())} places")
            tx = torch.from_numpy(x).requires_grad_()
            out = torchvision.ops.roi_pool(tx, torch.from_numpy(rois), (ph, pw), 0.25)
            g = rng.normal(size=out.shape).astype(dtype)
            out.backward(torch.from_numpy(g))
            got = vo_roi_pool_backward(g, rois, got_am, 0.25, ph, pw, x.shape)
            want = tx.grad.numpy()
            check(np.array_equal(got, want),
                  f"roi_pool_backward {dtype} ties={ties} {ph}x{pw}: "
                  f"max diff {np.abs(got - want).max()}")



def tensor_list(arrays, keep):
    items = (ctypes.POINTER(DLTensor) * len(arrays))()
    for i, a in enumerate(arrays):
        dl(a, keep)
        items[i] = ctypes.pointer(keep[-1])
    return items


def vo_multi_scale(feats, rois, scales, ph, pw, sampling, grad=None):
    keep = []
    fl = tensor_list(feats, keep)
    sc = (ctypes.c_double * len(scales))(*scales)
    tail = [ctypes.c_int64(ph), ctypes.c_int64(pw), ctypes.c_int64(sampling),
            ctypes.c_int64(224), ctypes.c_int64(4), ctypes.c_int(0)]
    if grad is None:
        out = np.empty((len(rois), feats[0].shape[1], ph, pw), feats[0].dtype)
        status = lib.vo_multi_scale_roi_align(None, fl, sc, ctypes.c_int(len(feats)),
                                              dl(rois, keep), *tail, dl(out, keep))
    else:
        out = [np.empty_like(f) for f in feats]
        status = lib.vo_multi_scale_roi_align_backward(None, dl(grad, keep), dl(rois, keep), fl,
                                                       sc, ctypes.c_int(len(feats)), *tail,
                                                       tensor_list(out, keep))
    if status != 0:
        raise RuntimeError(lib.vo_last_error().decode())
    return out


# MultiScaleRoIAlign on an FPN pyramid (strides 4..32 of an 800x1216 image):
# boxes are per image in torchvision, [K,5] rows here (grouped by image so
# the row orders agree).
for dtype in (np.float32, np.float64):
    image = (800, 1216)
    feats = [rng.normal(size=(2, 4, image[0] // s, image[1] // s)).astype(dtype)
             for s in (4, 8, 16, 32)]
    k = 200
    xy = rng.uniform(0, 1000, (k, 2))
    wh = np.exp(rng.uniform(np.log(4), np.log(900), (k, 2)))
    boxes = np.concatenate([xy, xy + wh], 1).astype(dtype)
    image_of = np.sort(rng.integers(0, 2, k))
    pooler = torchvision.ops.MultiScaleRoIAlign(["0", "1", "2", "3"], 7, 2)
    x = {str(i): torch.from_numpy(f).requires_grad_() for i, f in enumerate(feats)}
    want = pooler(x, [torch.from_numpy(boxes[image_of == i]) for i in (0, 1)], [image, image])
    rois = np.concatenate([image_of[:, None].astype(dtype), boxes], 1)
    scales = [0.25, 0.125, 0.0625, 0.03125]
    got = vo_multi_scale(feats, rois, scales, 7, 7, 2)
    check(np.array_equal(got, want.detach().numpy()),
          f"multi_scale_roi_align {dtype}: max diff {np.abs(got - want.detach().numpy()).max()}")
    g = rng.normal(size=want.shape).astype(dtype)
    want.backward(torch.from_numpy(g))
    got = vo_multi_scale(feats, rois, scales, 7, 7, 2, grad=g)
    for level in range(4):
        w = x[str(level)].grad.numpy()
        check(np.allclose(got[level], w, rtol=1e-5, atol=1e-5),
              f"multi_scale_roi_align_backward {dtype} level {level}: max diff "
              f"{np.abs(got[level] - w).max()}")

# ps_roi_align: out and channel_mapping as torchvision's, except on
# degenerate RoIs (an empty adaptive sampling grid), where torchvision
# divides 0 by 0 and gives NaN and visionops gives 0; the backward in full.
CODES[np.dtype(np.int32)] = (0, 32)


def vo_ps_roi_align(x, rois, scale, ph, pw, sampling):
    out = np.empty((len(rois), x.shape[1] // (ph * pw), ph, pw), x.dtype)
    cm = np.empty(out.shape, np.int32)
    keep = []
    args = [dl(x, keep), dl(rois, keep), ctypes.c_double(scale), ctypes.c_int64(ph),
            ctypes.c_int64(pw), ctypes.c_int64(sampling), dl(out, keep), dl(cm, keep)]
    if lib.vo_ps_roi_align(None, *args) != 0:
        raise RuntimeError(lib.vo_last_error().decode())
    return out, cm


def vo_ps_roi_align_backward(g, rois, cm, scale, ph, pw, sampling, shape):
    out = np.empty(shape, g.dtype)
    keep = []
    args = [dl(g, keep), dl(rois, keep), dl(cm, keep), ctypes.c_double(scale),
            ctypes.c_int64(ph), ctypes.c_int64(pw), ctypes.c_int64(sampling)] + [
            ctypes.c_int64(d) for d in shape] + [dl(out, keep)]
    if lib.vo_ps_roi_align_backward(None, *args) != 0:
        raise RuntimeError(lib.vo_last_error().decode())
    return out


for dtype, rtol in ((np.float32, 1e-5), (np.float64, 1e-12)):
    k = 40
    xy = rng.uniform(-10, 140, (k, 2))
    wh = rng.uniform(0.5, 80, (k, 2))
    rois = np.concatenate([rng.integers(0, 2, (k, 1)), xy, xy + wh], 1)
    rois[::9, 3] = rois[::9, 1]  # zero width: degenerate under adaptive sampling
    rois[1::11, 3:] = rois[1::11, 1:3] - 5  # reversed
    rois = rois.astype(dtype)
    for sampling in (-1, 0, 1, 2):
        for ph, pw in ((3, 3), (2, 4), (1, 1)):
            x = rng.normal(size=(2, 2 * ph * pw, 23, 31)).astype(dtype)
            tx = torch.from_numpy(x).requires_grad_()
            want, want_cm = torch.ops.torchvision.ps_roi_align(tx, torch.from_numpy(rois), 0.25,
                                                               ph, pw, sampling)
            got, got_cm = vo_ps_roi_align(x, rois, 0.25, ph, pw, sampling)
            w = want.detach().numpy()
            nan = np.isnan(w)
            check(np.allclose(got[~nan], w[~nan], rtol=rtol, atol=rtol)
                  and np.array_equal(got_cm, want_cm.numpy()) and (got[nan] == 0).all(),
                  f"ps_roi_align {dtype} sampling={sampling} {ph}x{pw}: max diff "
                  f"{np.abs(got[~nan] - w[~nan]).max()}, {int(nan.sum())} NaN in torchvision")
            check(sampling > 0 or nan.any(), "the degenerate RoIs give NaN in torchvision")
            g = rng.normal(size=want.shape).astype(dtype)
            want.backward(torch.from_numpy(g))
            got = vo_ps_roi_align_backward(g, rois, got_cm, 0.25, ph, pw, sampling, x.shape)
            w = tx.grad.numpy()
            check(np.allclose(got, w, rtol=rtol * 10, atol=rtol * 10),
                  f"ps_roi_align_backward {dtype} sampling={sampling} {ph}x{pw}: "
                  f"max diff {np.abs(got - w).max()}")

# ps_roi_pool: out and channel_mapping identical to torchvision's forward.
# The backward only where torchvision's forward and backward agree: its
# forward clamps bin ends to H-1 / W-1 (the last row and column never
# contribute) while its backward clamps them to H / W, so for a RoI with a
# bin reaching the last row or column torchvision's backward is not the
# gradient of its forward. visionops' backward is the true gradient of the
# forward (checked against finite differences in test_ps_roi_pool), so it is
# compared with torchvision's on the RoIs whose bins stay clear of that edge.
def vo_ps_roi_pool(x, rois, scale, ph, pw):
    out = np.empty((len(rois), x.shape[1] // (ph * pw), ph, pw), x.dtype)
    cm = np.empty(out.shape, np.int32)
    keep = []
    args = [dl(x, keep), dl(rois, keep), ctypes.c_double(scale), ctypes.c_int64(ph),
            ctypes.c_int64(pw), dl(out, keep), dl(cm, keep)]
    if lib.vo_ps_roi_pool(None, *args) != 0:
        raise RuntimeError(lib.vo_last_error().decode())
    return out, cm


def vo_ps_roi_pool_backward(g, rois, cm, scale, ph, pw, shape):
    out = np.empty(shape, g.dtype)
    keep = []
    args = [dl(g, keep), dl(rois, keep), dl(cm, keep), ctypes.c_double(scale),
            ctypes.c_int64(ph), ctypes.c_int64(pw)] + [ctypes.c_int64(d) for d in shape] + [
            dl(out, keep)]
    if lib.vo_ps_roi_pool_backward(None, *args) != 0:
        raise RuntimeError(lib.vo_last_error().decode())
    return out


def ps_pool_clear_of_edge(rois, scale, ph, pw, h, w):
    """RoIs whose bins all end before the last row and column (computed in
    the rois' dtype, as torchvision does), where its forward and backward
    use the same bins."""
    t = rois.dtype.type
    c = rois[:, 1:] * t(scale)
    r = (np.sign(c) * np.floor(np.abs(c) + t(0.5))).astype(np.int64)
    rw = np.maximum(r[:, 2] - r[:, 0], 1)
    rh = np.maximum(r[:, 3] - r[:, 1], 1)
    bh = rh.astype(rois.dtype) / t(ph)
    bw = rw.astype(rois.dtype) / t(pw)
    hend = np.max([np.ceil(t(i + 1) * bh) for i in range(ph)], 0).astype(np.int64) + r[:, 1]
    wend = np.max([np.ceil(t(i + 1) * bw) for i in range(pw)], 0).astype(np.int64) + r[:, 0]
    return (hend <= h - 1) & (wend <= w - 1)


for dtype in (np.float32, np.float64):
    k = 60
    xy = rng.uniform(-10, 140, (k, 2))
    wh = rng.uniform(0.5, 80, (k, 2))
    rois = np.concatenate([rng.integers(0, 2, (k, 1)), xy, xy + wh], 1)
    rois[1::2, 1:] = rois[1::2, 1:] * 0.4  # half of them well inside the 23x31 map at scale 0.25
    rois[::4, 1:] = np.round(rois[::4, 1:] * 0.5) * 2 + 1  # x*0.25 on a .5 tie
    rois[1::7, 3:] = rois[1::7, 1:3] - 3  # reversed: forced to 1x1
    rois = rois.astype(dtype)
    for ph, pw in ((3, 3), (2, 4), (1, 1)):
        x = rng.normal(size=(2, 2 * ph * pw, 23, 31)).astype(dtype)
        want, want_cm = torch.ops.torchvision.ps_roi_pool(torch.from_numpy(x),
                                                          torch.from_numpy(rois), 0.25, ph, pw)
        got, got_cm = vo_ps_roi_pool(x, rois, 0.25, ph, pw)
        check(np.array_equal(got, want.numpy()) and np.array_equal(got_cm, want_cm.numpy()),
              f"ps_roi_pool {dtype} {ph}x{pw}: max diff {np.abs(got - want.numpy()).max()}")
        clear = ps_pool_clear_of_edge(rois, 0.25, ph, pw, 23, 31)
        check(0 < clear.sum() < k, f"ps_roi_pool {dtype} {ph}x{pw}: {clear.sum()} of {k} RoIs "
              "clear of the last row and column (want some of each)")
        sub = np.ascontiguousarray(rois[clear])
        tx = torch.from_numpy(x).requires_grad_()
        out = torchvision.ops.ps_roi_pool(tx, torch.from_numpy(sub), (ph, pw), 0.25)
        g = rng.normal(size=out.shape).astype(dtype)
        out.backward(torch.from_numpy(g))
        got_b = vo_ps_roi_pool_backward(g, sub, np.ascontiguousarray(got_cm[clear]), 0.25, ph, pw,
                                        x.shape)
        w = tx.grad.numpy()
        check(np.allclose(got_b, w, rtol=1e-6, atol=1e-6),
              f"ps_roi_pool_backward {dtype} {ph}x{pw}: max diff {np.abs(got_b - w).max()}")

# deform_conv2d forward and all five gradients against torchvision.ops.deform_conv2d
# and autograd, on the unusual parameters and a plain 3x3 case.
def vo_deform_conv2d(x, w, off, mask, bias, stride, pad, dil, groups, og, grad=None):
    keep = []
    ho, wo = off.shape[2], off.shape[3]
    ints = [ctypes.c_int64(v) for v in (*stride, *pad, *dil, groups, og)]
    opt = [dl(mask, keep) if mask is not None else None, dl(bias, keep) if bias is not None else None]
    if grad is None:
        out = np.empty((x.shape[0], w.shape[0], ho, wo), x.dtype)
        args = [dl(x, keep), dl(w, keep), dl(off, keep)] + opt + ints + [dl(out, keep)]
        if lib.vo_deform_conv2d(None, *args) != 0:
            raise RuntimeError(lib.vo_last_error().decode())
        return out
    outs = [np.empty(x.shape, x.dtype), np.empty(w.shape, x.dtype), np.empty(off.shape, x.dtype),
            np.empty((x.shape[0], off.shape[1] // 2, ho, wo), x.dtype),
            np.empty((w.shape[0],), x.dtype)]
    args = [dl(grad, keep), dl(x, keep), dl(w, keep), dl(off, keep)] + opt + ints
    args += [dl(o, keep) for o in outs]
    if lib.vo_deform_conv2d_backward(None, *args) != 0:
        raise RuntimeError(lib.vo_last_error().decode())
    return outs


DCN_CASES = [  # n, cin, h, w, cout, kh, kw, stride, pad, dil, groups, og
    (5, 6, 9, 7, 4, 3, 2, (2, 1), (1, 0), (2, 1), 2, 3),
    (1, 6, 9, 7, 4, 3, 2, (2, 1), (1, 0), (2, 1), 2, 3),
    (2, 8, 12, 10, 6, 3, 3, (1, 1), (1, 1), (1, 1), 1, 2),
]
for dtype in (np.float32, np.float64):
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for case in DCN_CASES:
        n, cin, h, w, cout, kh, kw, stride, pad, dil, groups, og = case
        ho = (h + 2 * pad[0] - (dil[0] * (kh - 1) + 1)) // stride[0] + 1
        wo = (w + 2 * pad[1] - (dil[1] * (kw - 1) + 1)) // stride[1] + 1
        for use_mask in (False, True):
            for use_bias in (False, True):
                x = rng.normal(size=(n, cin, h, w)).astype(dtype)
                wt = rng.normal(size=(cout, cin // groups, kh, kw)).astype(dtype)
                off = (rng.normal(size=(n, 2 * og * kh * kw, ho, wo)) * 2).astype(dtype)
                mask = rng.uniform(size=(n, og * kh * kw, ho, wo)).astype(dtype) if use_mask else None
                bias = rng.normal(size=(cout,)).astype(dtype) if use_bias else None
                t = [torch.from_numpy(a).requires_grad_() if a is not None else None
                     for a in (x, wt, off, mask, bias)]
                want = torchvision.ops.deform_conv2d(t[0], t[2], t[1], t[4], stride, pad, dil, t[3])
                got = vo_deform_conv2d(x, wt, off, mask, bias, stride, pad, dil, groups, og)
                what = f"deform_conv2d {np.dtype(dtype).name} {case} mask={use_mask} bias={use_bias}"
                wn = want.detach().numpy()
                check(np.allclose(got, wn, rtol=tol, atol=tol),
                      f"{what}: max diff {np.abs(got - wn).max()}")
                g = rng.normal(size=want.shape).astype(dtype)
                want.backward(torch.from_numpy(g))
                grads = vo_deform_conv2d(x, wt, off, mask, bias, stride, pad, dil, groups, og, grad=g)
                names = ["grad_input", "grad_weight", "grad_offset", "grad_mask", "grad_bias"]
                for k, name in enumerate(names):
                    if t[k] is None:
                        if k == 3:
                            check(not grads[3].any(), f"{what}: grad_mask without a mask not zero")
                        else:
                            s = g.sum(axis=(0, 2, 3))
                            check(np.allclose(grads[4], s, rtol=tol, atol=tol),
                                  f"{what}: grad_bias without bias is not the sum of grad")
                        continue
                    w_ = t[k].grad.numpy()
                    check(np.allclose(grads[k], w_, rtol=tol * 10, atol=tol * 10),
                          f"{what} {name}: max diff {np.abs(grads[k] - w_).max()}")


# Zero offsets with padding 1 (how DCN layers are initialised): taps land exactly
# on y = -1 / x = -1, where torchvision's offset gradient is still nonzero.
for dtype in (np.float32, np.float64):
    tol = 1e-4 if dtype == np.float32 else 1e-10
    x = rng.normal(size=(2, 4, 6, 5)).astype(dtype)
    wt = rng.normal(size=(3, 4, 3, 3)).astype(dtype)
    off = np.zeros((2, 18, 6, 5), dtype)
    mask = rng.uniform(size=(2, 9, 6, 5)).astype(dtype)
    t = [torch.from_numpy(a).requires_grad_() for a in (x, wt, off, mask)]
    want = torchvision.ops.deform_conv2d(t[0], t[2], t[1], None, 1, 1, 1, t[3])
    g = rng.normal(size=want.shape).astype(dtype)
    want.backward(torch.from_numpy(g))
    got = vo_deform_conv2d(x, wt, off, mask, None, (1, 1), (1, 1), (1, 1), 1, 1)
    check(np.allclose(got, want.detach().numpy(), rtol=tol, atol=tol), "deform_conv2d zero offsets")
    grads = vo_deform_conv2d(x, wt, off, mask, None, (1, 1), (1, 1), (1, 1), 1, 1, grad=g)
    for k, name in enumerate(["grad_input", "grad_weight", "grad_offset", "grad_mask"]):
        w_ = t[k].grad.numpy()
        check(np.allclose(grads[k], w_, rtol=tol * 10, atol=tol * 10),
              f"deform_conv2d zero offsets {np.dtype(dtype).name} {name}: "
              f"max diff {np.abs(grads[k] - w_).max()}")

print(f"{checks - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
