// Calling the portable kernel layer (src/kernels/) from CUDA templates. Its
// functions exist once per dtype suffix (_f32, _f64, _f16, _bf16; the half
// types as uint16_t bits), or per compute type (_f32, _f64); CUDA code
// names an instance by dtype code DT, a constant of the template
// (VO_K_SET / VO_K_DO), or by CUDA storage type S (VO_KCALL, vo_kbits).
#ifndef VISIONOPS_CUDA_PORTABLE_CUH
#define VISIONOPS_CUDA_PORTABLE_CUH

#include <stdint.h>

#include "cuda/common.cuh"
#include "kernels/compat.h"

// DT's portable storage type S, compute type T and CUDA storage type.
template <int DT>
struct vo_k_dtype;
template <>
struct vo_k_dtype<VO_DT_F32> {
  typedef float S;
  typedef float T;
  typedef float cuda;
};
template <>
struct vo_k_dtype<VO_DT_F64> {
  typedef double S;
  typedef double T;
  typedef double cuda;
};
template <>
struct vo_k_dtype<VO_DT_F16> {
  typedef uint16_t S;
  typedef float T;
  typedef __half cuda;
};
template <>
struct vo_k_dtype<VO_DT_BF16> {
  typedef uint16_t S;
  typedef float T;
  typedef __nv_bfloat16 cuda;
};

// The dtype code of a CUDA storage type.
template <typename S>
struct vo_k_code {
  static constexpr int value = VO_DT_F32;
};
template <>
struct vo_k_code<double> {
  static constexpr int value = VO_DT_F64;
};
template <>
struct vo_k_code<__half> {
  static constexpr int value = VO_DT_F16;
};
template <>
struct vo_k_code<__nv_bfloat16> {
  static constexpr int value = VO_DT_BF16;
};

// A kernel's CUDA tensor pointer as the portable layer types it.
__host__ __device__ __forceinline__ const float *vo_kbits(const float *p) { return p; }
__host__ __device__ __forceinline__ const double *vo_kbits(const double *p) { return p; }
__host__ __device__ __forceinline__ const uint16_t *vo_kbits(const __half *p) {
  return reinterpret_cast<const uint16_t *>(p);
}
__host__ __device__ __forceinline__ const uint16_t *vo_kbits(const __nv_bfloat16 *p) {
  return reinterpret_cast<const uint16_t *>(p);
}

// `return NAME_<suffix of S>(args)`, inside a template on the CUDA storage
// type S.
#define VO_KCALL(S, name, ...)                          \
  if constexpr (vo_k_code<S>::value == VO_DT_F64)       \
    return name##_f64(__VA_ARGS__);                     \
  else if constexpr (vo_k_code<S>::value == VO_DT_F16)  \
    return name##_f16(__VA_ARGS__);                     \
  else if constexpr (vo_k_code<S>::value == VO_DT_BF16) \
    return name##_bf16(__VA_ARGS__);                    \
  else                                                  \
    return name##_f32(__VA_ARGS__)

// Run<DT>::run(ex, stream, args...) for the call's dtype (ex->dtype), DT its
// code: every CUDA op's one dtype switch.
template <template <int> class Run, typename... Args>
vo_status vo_k_run_dtype(const vo_exec *ex, cudaStream_t stream, const Args &...args) {
  switch (ex->dtype) {
    case VO_F32: return Run<VO_DT_F32>::run(ex, stream, args...);
    case VO_F64: return Run<VO_DT_F64>::run(ex, stream, args...);
    case VO_F16: return Run<VO_DT_F16>::run(ex, stream, args...);
    case VO_BF16: return Run<VO_DT_BF16>::run(ex, stream, args...);
    default:
      return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: CUDA kernel has no dtype %s", ex->op_name,
                     vo_dtype_name(ex->dtype));
  }
}

// A kernel entry's opening: on the call's device, nothing to do when out
// (if not null) is empty, else launch(stream) on the call's stream.
template <typename Launch>
vo_status vo_k_on_device(const vo_exec *ex, const vo_view *out, const Launch &launch) {
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  if (out && out->numel == 0) return VO_OK;
  return launch(vo_cuda_stream(ex));
}

// A kernel entry: vo_k_run_dtype<Run> there.
template <template <int> class Run, typename... Args>
vo_status vo_k_dispatch(const vo_exec *ex, const vo_view *out, const Args &...args) {
  return vo_k_on_device(
      ex, out, [&](cudaStream_t stream) { return vo_k_run_dtype<Run>(ex, stream, args...); });
}

// `out = NAME_<suffix of DT>(args)`; VO_K_SET_T for per-compute-type
// functions. The arguments must depend on DT (typed by vo_k_dtype<DT>), so
// the branches not taken are never instantiated.
#define VO_K_SET(out, DT, NAME, ...)       \
  do {                                     \
    if constexpr ((DT) == VO_DT_F64)       \
      out = NAME##_f64(__VA_ARGS__);       \
    else if constexpr ((DT) == VO_DT_F16)  \
      out = NAME##_f16(__VA_ARGS__);       \
    else if constexpr ((DT) == VO_DT_BF16) \
      out = NAME##_bf16(__VA_ARGS__);      \
    else                                   \
      out = NAME##_f32(__VA_ARGS__);       \
  } while (0)
#define VO_K_DO(DT, NAME, ...)             \
  do {                                     \
    if constexpr ((DT) == VO_DT_F64)       \
      NAME##_f64(__VA_ARGS__);             \
    else if constexpr ((DT) == VO_DT_F16)  \
      NAME##_f16(__VA_ARGS__);             \
    else if constexpr ((DT) == VO_DT_BF16) \
      NAME##_bf16(__VA_ARGS__);            \
    else                                   \
      NAME##_f32(__VA_ARGS__);             \
  } while (0)
#define VO_K_SET_T(out, DT, NAME, ...) \
  do {                                 \
    if constexpr ((DT) == VO_DT_F64)   \
      out = NAME##_f64(__VA_ARGS__);   \
    else                               \
      out = NAME##_f32(__VA_ARGS__);   \
  } while (0)

// The body of a kernel whose items each give one output element: for every
// index i < n, out[i] (DT's storage) = NAME_<suffix>(args..., i).
#define VO_K_STORE_EACH(DT, n, out, NAME, ...)                                        \
  VO_CUDA_GRID_STRIDE(vo_k_i, n) {                                                    \
    typename vo_k_dtype<DT>::T vo_k_v;                                                \
    VO_K_SET(vo_k_v, DT, NAME, __VA_ARGS__, vo_k_i);                                  \
    vo_cuda_store(static_cast<typename vo_k_dtype<DT>::cuda *>(out), vo_k_i, vo_k_v); \
  }

#endif  // VISIONOPS_CUDA_PORTABLE_CUH
