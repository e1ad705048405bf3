"""Times visionops (through ctypes on the built shared library) and Debian's
torchvision on the same inputs in one process, op by op, at 1 thread and at
all threads, and prints a Markdown table of medians and ratios.
Usage: /usr/bin/python3 bench/compare_torchvision.py build/libvisionops.so [--reps N] [--filter S]
A benchmark, never a test: nothing here fails on speed."""
import argparse
import ctypes
import os
import time

import numpy as np
import torch
import torchvision


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


CODES = {np.dtype(np.float32): (2, 32), np.dtype(np.int64): (0, 64), np.dtype(np.int32): (0, 32)}


class Lib:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.vo_last_error.restype = ctypes.c_char_p
        self.lib.vo_context_create.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self.ctx = ctypes.c_void_p()
        self.lib.vo_context_create(ctypes.byref(self.ctx))

    def threads(self, n):
        self.lib.vo_context_set_num_threads(self.ctx, ctypes.c_int(n))

    def call(self, fn, *args):
        keep = []
        conv = []
        for a in args:
            if isinstance(a, np.ndarray):
                shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
                code, bits = CODES[a.dtype]
                t = DLTensor(a.ctypes.data, DLDevice(1, 0), a.ndim, DLDataType(code, bits, 1),
                             shape if a.ndim else None, None, 0)
                keep += [shape, t]
                conv.append(ctypes.byref(t))
            elif a is None:
                conv.append(None)
            elif isinstance(a, float):
                conv.append(ctypes.c_double(a))
            elif isinstance(a, bool):
                conv.append(ctypes.c_int(a))
            else:
                conv.append(ctypes.c_int64(a))
        if getattr(self.lib, fn)(self.ctx, *conv) != 0:
            raise RuntimeError(self.lib.vo_last_error().decode())


def median_ms(f, reps):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return 1000 * sorted(ts)[len(ts) // 2]


rng = np.random.default_rng(0)


def detections(n):
    m = n // 30 + 1
    c, s = rng.uniform(0, [1333, 800], (m, 2)), rng.uniform(16, 300, (m, 2))
    k = rng.integers(0, m, n)
    ctr = c[k] + rng.normal(0, 0.05, (n, 2)) * s[k]
    wh = s[k] * rng.uniform(0.8, 1.2, (n, 2))
    return np.concatenate([ctr - wh / 2, ctr + wh / 2], 1).astype(np.float32)


def proposals(k, n=2):
    w, h = 16 * 32 ** rng.random(k), 16 * 32 ** rng.random(k)
    x1, y1 = rng.random(k) * (1088 - w), rng.random(k) * (800 - h)
    return np.stack([rng.integers(0, n, k), x1, y1, x1 + w, y1 + h], 1).astype(np.float32)


def cases(vo):
    """(op, case, torchvision callable, visionops callable)."""
    out = []
    for n in (1000, 5000, 20000):
        b, s = detections(n), rng.random(n).astype(np.float32)
        tb, ts = torch.from_numpy(b), torch.from_numpy(s)
        keep, nk = np.empty(n, np.int64), np.zeros((), np.int64)
        out.append(("nms", f"{n:,} boxes", lambda tb=tb, ts=ts: torchvision.ops.nms(tb, ts, 0.5),
                    lambda b=b, s=s, keep=keep, nk=nk: vo.call("vo_nms", b, s, 0.5, keep, nk)))
    n = 20000
    b, s, c = detections(n), rng.random(n).astype(np.float32), rng.integers(0, 80, n)
    keep, nk = np.empty(n, np.int64), np.zeros((), np.int64)
    out.append(("batched_nms", "20,000 boxes, 80 classes",
                lambda: torchvision.ops.batched_nms(torch.from_numpy(b), torch.from_numpy(s),
                                                    torch.from_numpy(c), 0.5),
                lambda: vo.call("vo_batched_nms", b, s, c, 0.5, keep, nk)))
    a1, a2 = detections(5000), detections(5000)
    iou = np.empty((5000, 5000), np.float32)
    out.append(("box_iou", "5,000 x 5,000",
                lambda: torchvision.ops.box_iou(torch.from_numpy(a1), torch.from_numpy(a2)),
                lambda: vo.call("vo_box_iou", a1, a2, iou)))
    x = rng.normal(size=(2, 256, 200, 272)).astype(np.float32)
    xps = rng.normal(size=(2, 490, 200, 272)).astype(np.float32)
    rois = proposals(1000)
    tx, txps, tr = torch.from_numpy(x), torch.from_numpy(xps), torch.from_numpy(rois)
    for ph in (7, 14):
        label = f"2x256x200x272, 1000 RoIs, {ph}x{ph}"
        o = np.empty((1000, 256, ph, ph), np.float32)
        g = rng.normal(size=o.shape).astype(np.float32)
        gi = np.empty_like(x)
        out.append(("roi_align", label,
                    lambda ph=ph: torchvision.ops.roi_align(tx, tr, ph, 0.25, 2, True),
                    lambda ph=ph, o=o: vo.call("vo_roi_align", x, rois, 0.25, ph, ph, 2, True, o)))
        out.append(("roi_align_backward", label,
                    lambda ph=ph, g=g: torch.ops.torchvision._roi_align_backward(
                        torch.from_numpy(g), tr, 0.25, ph, ph, 2, 256, 200, 272, 2, True),
                    lambda ph=ph, g=g, gi=gi: vo.call("vo_roi_align_backward", g, rois, 0.25, ph,
                                                      ph, 2, 256, 200, 272, 2, True, gi)))
        am = np.empty((1000, 256, ph, ph), np.int32)
        vo.call("vo_roi_pool", x, rois, 0.25, ph, ph, o, am)
        out.append(("roi_pool", label,
                    lambda ph=ph: torchvision.ops.roi_pool(tx, tr, ph, 0.25),
                    lambda ph=ph, o=o, am=am: vo.call("vo_roi_pool", x, rois, 0.25, ph, ph, o, am)))
        out.append(("roi_pool_backward", label,
                    lambda ph=ph, g=g, am=am: torch.ops.torchvision._roi_pool_backward(
                        torch.from_numpy(g), tr, torch.from_numpy(am), 0.25, ph, ph, 2, 256, 200,
                        272),
                    lambda ph=ph, g=g, am=am, gi=gi: vo.call("vo_roi_pool_backward", g, rois, am,
                                                             0.25, ph, ph, 2, 256, 200, 272, gi)))
    label = "2x490x200x272, 1000 RoIs, 7x7"
    o = np.empty((1000, 10, 7, 7), np.float32)
    cm = np.empty((1000, 10, 7, 7), np.int32)
    g = rng.normal(size=o.shape).astype(np.float32)
    gi = np.empty_like(xps)
    vo.call("vo_ps_roi_align", xps, rois, 0.25, 7, 7, 2, o, cm)
    out.append(("ps_roi_align", label,
                lambda: torchvision.ops.ps_roi_align(txps, tr, 7, 0.25, 2),
                lambda: vo.call("vo_ps_roi_align", xps, rois, 0.25, 7, 7, 2, o, cm)))
    out.append(("ps_roi_align_backward", label,
                lambda: torch.ops.torchvision._ps_roi_align_backward(
                    torch.from_numpy(g), tr, torch.from_numpy(cm), 0.25, 7, 7, 2, 2, 490, 200, 272),
                lambda: vo.call("vo_ps_roi_align_backward", g, rois, cm, 0.25, 7, 7, 2, 2, 490, 200,
                                272, gi)))
    out.append(("ps_roi_pool", label,
                lambda: torchvision.ops.ps_roi_pool(txps, tr, 7, 0.25),
                lambda: vo.call("vo_ps_roi_pool", xps, rois, 0.25, 7, 7, o, cm)))
    out.append(("ps_roi_pool_backward", label,
                lambda: torch.ops.torchvision._ps_roi_pool_backward(
                    torch.from_numpy(g), tr, torch.from_numpy(cm), 0.25, 7, 7, 2, 490, 200, 272),
                lambda: vo.call("vo_ps_roi_pool_backward", g, rois, cm, 0.25, 7, 7, 2, 490, 200,
                                272, gi)))
    # DCN v2 (mask), ResNet-stage sized: 2x256x64x64, 3x3, 256 out, offset groups 1.
    label = "2x256x64x64, 3x3, 256 out, mask"
    drng = np.random.default_rng(1)
    xd = drng.uniform(-1, 1, (2, 256, 64, 64)).astype(np.float32)
    wd = drng.uniform(-0.05, 0.05, (256, 256, 3, 3)).astype(np.float32)
    od = drng.uniform(-2, 2, (2, 18, 64, 64)).astype(np.float32)
    md = drng.uniform(0, 1, (2, 9, 64, 64)).astype(np.float32)
    bd = drng.uniform(-1, 1, (256,)).astype(np.float32)
    gd = drng.uniform(-1, 1, (2, 256, 64, 64)).astype(np.float32)
    yd = np.empty_like(gd)
    douts = [np.empty_like(xd), np.empty_like(wd), np.empty_like(od), np.empty_like(md),
             np.empty_like(bd)]
    tt = [torch.from_numpy(a) for a in (xd, wd, od, md, bd, gd)]
    ints = (1, 1, 1, 1, 1, 1, 1, 1)
    out.append(("deform_conv2d", label,
                lambda: torch.ops.torchvision.deform_conv2d(tt[0], tt[1], tt[2], tt[3], tt[4],
                                                            *ints, True),
                lambda: vo.call("vo_deform_conv2d", xd, wd, od, md, bd, *ints, yd)))
    out.append(("deform_conv2d_backward", label,
                lambda: torch.ops.torchvision._deform_conv2d_backward(
                    tt[5], tt[0], tt[1], tt[2], tt[3], tt[4], *ints, True),
                lambda: vo.call("vo_deform_conv2d_backward", gd, xd, wd, od, md, bd, *ints,
                                *douts)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    vo = Lib(args.lib)
    cores = os.cpu_count() or 1
    print(f"| op | case | torchvision 1 thr (ms) | visionops 1 thr (ms) | ratio | "
          f"torchvision {cores} thr (ms) | visionops {cores} thr (ms) | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for op, label, tv, mine in cases(vo):
        if args.filter not in op:
            continue
        row = []
        for threads in (1, cores):
            torch.set_num_threads(threads)
            vo.threads(threads)
            t_tv, t_vo = median_ms(tv, args.reps), median_ms(mine, args.reps)
            row += [f"{t_tv:.2f}", f"{t_vo:.2f}", f"{t_tv / t_vo:.1f}x"]
        print(f"| {op} | {label} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
