// Loads, stores and rounding helpers usable on the host and on the device, for
// the per-element functions the host-emulation test runs on the CPU
// (tests/test_cuda_deform_host.cu).
#ifndef VISIONOPS_CUDA_HOST_DEVICE_CUH
#define VISIONOPS_CUDA_HOST_DEVICE_CUH

#include <math.h>
#include <stdint.h>

#include "cuda/common.cuh"

__host__ __device__ __forceinline__ float vo_hd_to_compute(float v) { return v; }
__host__ __device__ __forceinline__ double vo_hd_to_compute(double v) { return v; }
__host__ __device__ __forceinline__ float vo_hd_to_compute(__half v) { return __half2float(v); }
__host__ __device__ __forceinline__ float vo_hd_to_compute(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

// Element `offset` of a tensor of storage type S, in S's compute type.
template <typename S>
__host__ __device__ __forceinline__ typename vo_cuda_compute<S>::type vo_hd_load(const void *data,
                                                                                 int64_t offset) {
  return vo_hd_to_compute(static_cast<const S *>(data)[offset]);
}

__host__ __device__ __forceinline__ void vo_hd_store(float *p, int64_t i, float v) { p[i] = v; }
__host__ __device__ __forceinline__ void vo_hd_store(double *p, int64_t i, double v) { p[i] = v; }
__host__ __device__ __forceinline__ void vo_hd_store(__half *p, int64_t i, float v) {
  p[i] = __float2half_rn(v);
}
__host__ __device__ __forceinline__ void vo_hd_store(__nv_bfloat16 *p, int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

__host__ __device__ __forceinline__ float vo_hd_floor(float v) { return floorf(v); }
__host__ __device__ __forceinline__ double vo_hd_floor(double v) { return floor(v); }
__host__ __device__ __forceinline__ float vo_hd_ceil(float v) { return ceilf(v); }
__host__ __device__ __forceinline__ double vo_hd_ceil(double v) { return ceil(v); }
// Half away from zero, as C's round.
__host__ __device__ __forceinline__ float vo_hd_round(float v) { return roundf(v); }
__host__ __device__ __forceinline__ double vo_hd_round(double v) { return round(v); }

// Accumulation policies for the scatter-style (atomic) backward kernels: the
// device adds atomically, the host-emulation test adds in order.
struct vo_hd_atomic_add {
  __device__ __forceinline__ void operator()(float *p, int64_t i, float v) const {
    atomicAdd(p + i, v);
  }
  __device__ __forceinline__ void operator()(double *p, int64_t i, double v) const {
    atomicAdd(p + i, v);
  }
};
struct vo_hd_serial_add {
  template <typename T>
  __host__ __device__ __forceinline__ void operator()(T *p, int64_t i, T v) const {
    p[i] += v;
  }
};

#endif  // VISIONOPS_CUDA_HOST_DEVICE_CUH
