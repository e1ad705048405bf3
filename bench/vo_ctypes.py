"""Minimal ctypes binding of the built visionops shared library for the
benchmark: DLPack structs, a CPU context (thread count) and, where the CUDA
backend is usable, a CUDA context on a given stream; calls take torch
tensors (CPU or CUDA, contiguous), floats, bools, ints and None."""
import ctypes

import torch

KDL_CPU, KDL_CUDA = 1, 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class BackendInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("device_type", ctypes.c_int),
                ("built", ctypes.c_int), ("available", ctypes.c_int),
                ("detail", ctypes.c_char_p)]


DTYPES = {torch.float32: (2, 32), torch.float64: (2, 64), torch.int64: (0, 64),
          torch.int32: (0, 32)}


def dl_tensor(t, keep):
    """A DLTensor viewing torch tensor t; keep collects what must outlive the call."""
    if not t.is_contiguous():
        raise ValueError("visionops benchmark: tensors must be contiguous")
    shape = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
    device = DLDevice(KDL_CUDA, t.device.index or 0) if t.is_cuda else DLDevice(KDL_CPU, 0)
    code, bits = DTYPES[t.dtype]
    dl = DLTensor(t.data_ptr(), device, t.dim(), DLDataType(code, bits, 1),
                  shape if t.dim() else None, None, 0)
    keep += [shape, dl, t]
    return ctypes.byref(dl)


def c_arg(a, keep):
    if isinstance(a, torch.Tensor):
        return dl_tensor(a, keep)
    if a is None:
        return None
    if isinstance(a, float):
        return ctypes.c_double(a)
    if isinstance(a, bool):
        return ctypes.c_int(a)
    return ctypes.c_int64(a)


class Lib:
    """The library, a CPU context and (after use_cuda_stream) a CUDA one."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.vo_last_error.restype = ctypes.c_char_p
        self.lib.vo_version.restype = ctypes.c_char_p
        self.lib.vo_context_create.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self.lib.vo_context_set_num_threads.argtypes = [ctypes.c_void_p, ctypes.c_int]
        self.lib.vo_context_set_cuda_stream.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.lib.vo_backend_status.argtypes = [ctypes.c_int, ctypes.POINTER(BackendInfo)]
        self.ctx = self.new_context()
        self.cuda_ctx = None

    def new_context(self):
        ctx = ctypes.c_void_p()
        if self.lib.vo_context_create(ctypes.byref(ctx)) != 0:
            raise RuntimeError(self.lib.vo_last_error().decode())
        return ctx

    def version(self):
        return self.lib.vo_version().decode()

    def threads(self, n):
        self.lib.vo_context_set_num_threads(self.ctx, n)

    def backends(self):
        """{name: (available, detail)} of the backends this build knows."""
        out = {}
        for i in range(self.lib.vo_backend_count()):
            info = BackendInfo()
            if self.lib.vo_backend_status(i, ctypes.byref(info)) == 0:
                out[info.name.decode()] = (bool(info.built and info.available),
                                           info.detail.decode())
        return out

    def cuda_available(self):
        return self.backends().get("cuda", (False, ""))[0]

    def use_cuda_stream(self, stream_handle):
        """Route CUDA calls through a context on this cudaStream_t (an int)."""
        if self.cuda_ctx is None:
            self.cuda_ctx = self.new_context()
        if self.lib.vo_context_set_cuda_stream(self.cuda_ctx, ctypes.c_void_p(stream_handle)):
            raise RuntimeError(self.lib.vo_last_error().decode())

    def bind(self, fn, *args):
        """A zero-argument callable running fn on args, converted to ctypes
        once (on its first call): what the kernel alone costs, without the
        per-call conversion that call() pays (tens of microseconds)."""
        bound = []

        def run():
            if not bound:
                keep = []
                conv = [c_arg(a, keep) for a in args]
                on_cuda = any(isinstance(a, torch.Tensor) and a.is_cuda for a in args)
                bound.append((getattr(self.lib, fn), conv, keep, on_cuda))
            f, conv, _, on_cuda = bound[0]
            if f(self.cuda_ctx if on_cuda else self.ctx, *conv) != 0:
                raise RuntimeError(f"{fn}: {self.lib.vo_last_error().decode()}")
        return run

    def call(self, fn, *args):
        """fn on args once, converting them on this call."""
        self.bind(fn, *args)()
