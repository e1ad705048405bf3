// Shared plumbing of the CUDA backend: error reporting, device and stream
// selection, workspace ownership and dtype-generic loads/stores.
#ifndef VISIONOPS_CUDA_COMMON_CUH
#define VISIONOPS_CUDA_COMMON_CUH

#include <stddef.h>
#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/internal.h"

// Kernel entry points (vo_kernel_fn), one per kernel named in ops.def's
// kernel column, referenced from backend.cu's table and defined in
// src/cuda/<op>.cu.
extern "C" {
#define VO_OP(name, kernel, schema, backward, shape_rule) \
  vo_status vo_cuda_##kernel(const vo_exec *ex);
#include "ops/ops.def"
#undef VO_OP
}

// The backend's data-check hooks (vo_backend; defined in roi_check.cu).
vo_status vo_cuda_check_data(const vo_exec *ex, vo_k_check_found *found);
vo_status vo_cuda_queue_data_checks(const vo_exec *ex, void *results, uint64_t offset);
vo_status vo_cuda_synchronize(DLDevice device);

// ------------------------------------------------------------ host helpers

// Clears the runtime's last-error slot too, so a failure reported here is not
// reported a second time by the next launch check (ours or the caller's).
inline vo_status vo_cuda_check(const vo_exec *ex, cudaError_t e) {
  if (e == cudaSuccess) return VO_OK;
  (void)cudaGetLastError();
  return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: CUDA error: %s", ex->op_name,
                 cudaGetErrorString(e));
}

// Launches report configuration errors only through the last-error slot.
inline vo_status vo_cuda_check_launch(const vo_exec *ex) {
  return vo_cuda_check(ex, cudaGetLastError());
}

// Never the legacy stream 0: it would serialise with every other stream.
inline cudaStream_t vo_cuda_stream(const vo_exec *ex) {
  return ex->queue ? (cudaStream_t)ex->queue : cudaStreamPerThread;
}

// Grid size for a grid-stride loop over `n` items; the cap keeps gridDim.x in
// range and the loop covers the rest.
inline unsigned int vo_cuda_blocks(int64_t n, int threads, int64_t cap = (int64_t)1 << 20) {
  int64_t b = (n + threads - 1) / threads;
  if (b > cap) b = cap;
  if (b < 1) b = 1;
  return (unsigned int)b;
}

// Makes the tensors' device current for the op and restores the caller's
// device afterwards, so the library never changes the thread's CUDA state.
// Every op starts with one, so it also empties the last-error slot: an error
// the caller's own earlier CUDA calls left there (a failed cudaMalloc, say)
// is not this op's, and vo_cuda_check_launch would otherwise report it as a
// failure of our first launch. Sticky errors are not lost: the context stays
// broken and the op's next CUDA call reports them.
class vo_cuda_device_guard {
 public:
  explicit vo_cuda_device_guard(int device) : prev_(-1), err_(cudaSuccess) {
    (void)cudaGetLastError();
    int cur = 0;
    err_ = cudaGetDevice(&cur);
    if (err_ == cudaSuccess && cur != device) {
      err_ = cudaSetDevice(device);
      if (err_ == cudaSuccess) prev_ = cur;
    }
  }
  ~vo_cuda_device_guard() {
    if (prev_ >= 0) (void)cudaSetDevice(prev_);
  }
  cudaError_t error() const { return err_; }
  vo_cuda_device_guard(const vo_cuda_device_guard &) = delete;
  vo_cuda_device_guard &operator=(const vo_cuda_device_guard &) = delete;

 private:
  int prev_;
  cudaError_t err_;
};

// One workspace block, freed (stream-ordered) when it goes out of scope, so
// every early return releases what was taken. Declare it after the device
// guard: it must be freed while the op's device is still current.
class vo_cuda_workspace {
 public:
  explicit vo_cuda_workspace(const vo_exec *ex) : ex_(ex), ptr_(nullptr) {}
  ~vo_cuda_workspace() { release(); }
  // NULL on failure; vo_workspace_alloc has already set the message. A
  // context allocator may fail through cudaMalloc(Async) and leave its error
  // in the last-error slot: cleared, since callers that fall back to a path
  // without workspace would report it at their next launch check.
  void *alloc(size_t bytes) {
    release();
    ptr_ = vo_workspace_alloc(ex_->ctx, ex_->device, bytes ? bytes : 1, ex_->op_name);
    if (!ptr_) (void)cudaGetLastError();
    return ptr_;
  }
  void release() {
    if (ptr_) vo_workspace_free(ex_->ctx, ex_->device, ptr_);
    ptr_ = nullptr;
  }
  void *get() const { return ptr_; }
  vo_cuda_workspace(const vo_cuda_workspace &) = delete;
  vo_cuda_workspace &operator=(const vo_cuda_workspace &) = delete;

 private:
  const vo_exec *ex_;
  void *ptr_;
};

// Sub-buffers carved from one workspace block start on 256-byte boundaries,
// which any element type and coalesced access are happy with.
inline size_t vo_cuda_align(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

// ------------------------------------------------------------ tensor access

// What a kernel needs of a vo_view, small enough to pass by value.
struct vo_cuda_view {
  void *data;
  vo_dtype dtype;
  int64_t stride[VO_MAX_DIMS];
};

inline vo_cuda_view vo_cuda_view_of(const vo_view *v) {
  vo_cuda_view c;
  c.data = v ? vo_view_addr(v) : nullptr;
  c.dtype = v ? v->dtype : VO_DTYPE_INVALID;
  for (int d = 0; d < VO_MAX_DIMS; ++d) c.stride[d] = (v && d < v->ndim) ? v->stride[d] : 0;
  return c;
}

__host__ __device__ __forceinline__ int64_t vo_cuda_offset(const vo_cuda_view &v, int64_t i) {
  return i * v.stride[0];
}
__host__ __device__ __forceinline__ int64_t vo_cuda_offset(const vo_cuda_view &v, int64_t i,
                                                           int64_t j) {
  return i * v.stride[0] + j * v.stride[1];
}
__host__ __device__ __forceinline__ int64_t vo_cuda_offset(const vo_cuda_view &v, int64_t i,
                                                           int64_t j, int64_t k, int64_t l) {
  return i * v.stride[0] + j * v.stride[1] + k * v.stride[2] + l * v.stride[3];
}

// Half types are storage only: they compute in float (SPEC.md section 5).
template <typename S>
struct vo_cuda_compute {
  typedef float type;
};
template <>
struct vo_cuda_compute<double> {
  typedef double type;
};

__device__ __forceinline__ float vo_cuda_to_compute(float v) { return v; }
__device__ __forceinline__ double vo_cuda_to_compute(double v) { return v; }
__device__ __forceinline__ float vo_cuda_to_compute(__half v) { return __half2float(v); }
__device__ __forceinline__ float vo_cuda_to_compute(__nv_bfloat16 v) { return __bfloat162float(v); }

// Element `offset` (in elements) of a tensor whose storage type S is known at
// compile time; the fast path every kernel template uses.
template <typename S>
__device__ __forceinline__ typename vo_cuda_compute<S>::type vo_cuda_load(const void *data,
                                                                          int64_t offset) {
  return vo_cuda_to_compute(static_cast<const S *>(data)[offset]);
}

__device__ __forceinline__ void vo_cuda_store(float *p, int64_t offset, float v) { p[offset] = v; }
__device__ __forceinline__ void vo_cuda_store(double *p, int64_t offset, double v) {
  p[offset] = v;
}
__device__ __forceinline__ void vo_cuda_store(__half *p, int64_t offset, float v) {
  p[offset] = __float2half_rn(v);
}
__device__ __forceinline__ void vo_cuda_store(__nv_bfloat16 *p, int64_t offset, float v) {
  p[offset] = __float2bfloat16_rn(v);
}

// Runtime-dtype variants for code that is not templated on the storage type
// (one branch per element; prefer the templates in hot loops). Loads cover
// the integer dtypes too (integer boxes beside float ones).
template <typename T>
__host__ __device__ __forceinline__ T vo_cuda_load_as(const vo_cuda_view &v, int64_t offset) {
  switch (v.dtype) {
    case VO_F64: return static_cast<T>(static_cast<const double *>(v.data)[offset]);
    case VO_F16: return static_cast<T>(__half2float(static_cast<const __half *>(v.data)[offset]));
    case VO_BF16:
      return static_cast<T>(__bfloat162float(static_cast<const __nv_bfloat16 *>(v.data)[offset]));
    case VO_I64: return static_cast<T>(static_cast<const int64_t *>(v.data)[offset]);
    case VO_I32: return static_cast<T>(static_cast<const int32_t *>(v.data)[offset]);
    case VO_I16: return static_cast<T>(static_cast<const int16_t *>(v.data)[offset]);
    case VO_I8: return static_cast<T>(static_cast<const int8_t *>(v.data)[offset]);
    case VO_U8: return static_cast<T>(static_cast<const uint8_t *>(v.data)[offset]);
    default: return static_cast<T>(static_cast<const float *>(v.data)[offset]);
  }
}

template <typename T>
__device__ __forceinline__ void vo_cuda_store_as(const vo_cuda_view &v, int64_t offset, T x) {
  switch (v.dtype) {
    case VO_F64: static_cast<double *>(v.data)[offset] = (double)x; break;
    case VO_F16: static_cast<__half *>(v.data)[offset] = __float2half_rn((float)x); break;
    case VO_BF16:
      static_cast<__nv_bfloat16 *>(v.data)[offset] = __float2bfloat16_rn((float)x);
      break;
    default: static_cast<float *>(v.data)[offset] = (float)x; break;
  }
}

// Mixed precision (SPEC.md section 5): a kernel templated on a storage type S
// can also be instantiated with vo_cuda_any<T>, "each tensor at its own
// dtype, computing in T", for calls whose tensors differ in dtype (a float32
// box set beside a bfloat16 one). vo_cuda_load_view / vo_cuda_store_view
// take the static path for a real storage type and the runtime switch for
// vo_cuda_any.
template <typename T>
struct vo_cuda_any {};
template <typename T>
struct vo_cuda_compute<vo_cuda_any<T>> {
  typedef T type;
};

template <typename S>
struct vo_cuda_access {
  typedef typename vo_cuda_compute<S>::type T;
  static __device__ __forceinline__ T load(const vo_cuda_view &v, int64_t offset) {
    return vo_cuda_load<S>(v.data, offset);
  }
  static __device__ __forceinline__ void store(const vo_cuda_view &v, int64_t offset, T x) {
    vo_cuda_store(static_cast<S *>(v.data), offset, x);
  }
};
template <typename T>
struct vo_cuda_access<vo_cuda_any<T>> {
  static __device__ __forceinline__ T load(const vo_cuda_view &v, int64_t offset) {
    return vo_cuda_load_as<T>(v, offset);
  }
  static __device__ __forceinline__ void store(const vo_cuda_view &v, int64_t offset, T x) {
    vo_cuda_store_as<T>(v, offset, x);
  }
};

template <typename S>
__device__ __forceinline__ typename vo_cuda_compute<S>::type vo_cuda_load_view(
    const vo_cuda_view &v, int64_t offset) {
  return vo_cuda_access<S>::load(v, offset);
}
template <typename S>
__device__ __forceinline__ void vo_cuda_store_view(const vo_cuda_view &v, int64_t offset,
                                                   typename vo_cuda_compute<S>::type x) {
  vo_cuda_access<S>::store(v, offset, x);
}

// 64-bit grid-stride loop: no index ever wraps, however large n is.
#define VO_CUDA_GRID_STRIDE(i, n)                                                    \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (int64_t)(n); \
       i += (int64_t)gridDim.x * blockDim.x)

#endif  // VISIONOPS_CUDA_COMMON_CUH
