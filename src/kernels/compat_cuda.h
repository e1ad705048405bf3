// The portable kernel dialect (kernels/compat.h) in CUDA C++: functions are
// __host__ __device__, so host code in .cu files (and host tests) can run
// them too; device atomics become plain adds on the host side.
#ifndef VISIONOPS_KERNELS_COMPAT_CUDA_H
#define VISIONOPS_KERNELS_COMPAT_CUDA_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define VO_KFN static __host__ __device__ __forceinline__
#define VO_GLOBAL

VO_KFN float vo_k_f16_to_f32(uint16_t h) {
  __half_raw r;
  r.x = h;
  return __half2float(__half(r));
}
VO_KFN uint16_t vo_k_f32_to_f16(float f) {
  __half_raw r = __half_raw(__float2half_rn(f));
  return r.x;
}
VO_KFN float vo_k_bf16_to_f32(uint16_t h) {
  __nv_bfloat16_raw r;
  r.x = h;
  return __bfloat162float(__nv_bfloat16(r));
}
VO_KFN uint16_t vo_k_f32_to_bf16(float f) {
  __nv_bfloat16_raw r = __nv_bfloat16_raw(__float2bfloat16_rn(f));
  return r.x;
}

VO_KFN uint32_t vo_k_f32_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}
VO_KFN uint64_t vo_k_f64_bits(double d) {
#ifdef __CUDA_ARCH__
  return (uint64_t)__double_as_longlong(d);
#else
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
#endif
}
VO_KFN float vo_k_f32_of_bits(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}
VO_KFN double vo_k_f64_of_bits(uint64_t u) {
#ifdef __CUDA_ARCH__
  return __longlong_as_double((long long)u);
#else
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
#endif
}

// Work groups (kernels/compat.h's VO_K_WORK_GROUPS): a block; the barrier
// orders its global-memory accesses.
#define VO_K_WORK_GROUPS 1
VO_KFN void vo_k_barrier() {
#ifdef __CUDA_ARCH__
  __syncthreads();
#endif
}

VO_KFN void vo_k_atomic_add_f32(float *p, float v) {
#ifdef __CUDA_ARCH__
  atomicAdd(p, v);
#else
  *p += v;
#endif
}
VO_KFN void vo_k_atomic_add_f64(double *p, double v) {
#ifdef __CUDA_ARCH__
  atomicAdd(p, v);  // native from sm_60; we build for sm_75 and newer
#else
  *p += v;
#endif
}

#endif  // VISIONOPS_KERNELS_COMPAT_CUDA_H
