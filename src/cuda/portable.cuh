// CUDA storage types as the portable kernel layer (src/kernels/) sees them:
// its per-dtype functions are suffixed _f32, _f64, _f16, _bf16 and take
// float, double or uint16_t pointers (the bits of __half, __nv_bfloat16).
// VO_KCALL(S, name, args...) returns the call of S's instantiation of
// `name`, inside a template on S; vo_kbits(p) gives a kernel's tensor
// pointer the portable type.
#ifndef VISIONOPS_CUDA_PORTABLE_CUH
#define VISIONOPS_CUDA_PORTABLE_CUH

#include "cuda/common.cuh"
#include "kernels/compat.h"

__host__ __device__ __forceinline__ const float *vo_kbits(const float *p) { return p; }
__host__ __device__ __forceinline__ const double *vo_kbits(const double *p) { return p; }
__host__ __device__ __forceinline__ const uint16_t *vo_kbits(const __half *p) {
  return reinterpret_cast<const uint16_t *>(p);
}
__host__ __device__ __forceinline__ const uint16_t *vo_kbits(const __nv_bfloat16 *p) {
  return reinterpret_cast<const uint16_t *>(p);
}

// The portable dtype code of a CUDA storage type.
template <typename S>
struct vo_kdtype {
  static constexpr int code = VO_DT_F32;
};
template <>
struct vo_kdtype<double> {
  static constexpr int code = VO_DT_F64;
};
template <>
struct vo_kdtype<__half> {
  static constexpr int code = VO_DT_F16;
};
template <>
struct vo_kdtype<__nv_bfloat16> {
  static constexpr int code = VO_DT_BF16;
};

#define VO_KCALL(S, name, ...)                                                     \
  if constexpr (vo_kdtype<S>::code == VO_DT_F64) return name##_f64(__VA_ARGS__);   \
  else if constexpr (vo_kdtype<S>::code == VO_DT_F16) return name##_f16(__VA_ARGS__); \
  else if constexpr (vo_kdtype<S>::code == VO_DT_BF16)                            \
    return name##_bf16(__VA_ARGS__);                                               \
  else                                                                             \
    return name##_f32(__VA_ARGS__)

#endif  // VISIONOPS_CUDA_PORTABLE_CUH
