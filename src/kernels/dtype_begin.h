/*
 * Instantiates the portable code that follows for one storage dtype. Before
 * including, define exactly one of VO_S_F32, VO_S_F64, VO_S_F16, VO_S_BF16;
 * include kernels/dtype_end.h after the code. Typical use, in a portable
 * header kernels/<op>.h holding `#include "kernels/<op>.inc"`-style bodies:
 *
 *   #define VO_S_F32
 *   #include "kernels/dtype_begin.h"
 *   #include "kernels/roi_align.inc"
 *   #include "kernels/dtype_end.h"
 *   ... and again for F64, F16, BF16
 *
 * Every instantiated body (each .inc) is wrapped whole in
 *
 *   #if VO_S_ENABLED
 *   ...
 *   #endif // VO_S_ENABLED
 *
 * VO_S_ENABLED is 0 for the float64 instantiation where the device has no
 * float64 (kernels/compat.h's VO_K_FP64: an OpenCL device without
 * cl_khr_fp64), so it compiles to nothing there; 1 otherwise.
 *
 * Inside, code sees:
 *   VO_S            the storage element type (float, double, uint16_t)
 *   VO_T            the compute type: double for f64, float otherwise
 *                   (half types compute in float32, SPEC section 5)
 *   VO_SN(name)     name##_f32 / _f64 / _f16 / _bf16: per-storage functions
 *   VO_TN(name)     name##_f32 / _f64: per-compute-type functions
 *   VO_T_DEFINE     1 in the instantiation that defines the VO_TN functions
 *                   (f32 and f64 storage), 0 for f16/bf16, which reuse f32's:
 *                   wrap compute-type-only code in #if VO_T_DEFINE
 *   VO_LD(p, i)     element i of a VO_S pointer as VO_T
 *   VO_ST(p, i, v)  stores VO_T v at element i, rounded to the storage type
 *   VO_T_CEIL, VO_T_FLOOR, VO_T_ROUND (half away from zero), VO_T_SQRT,
 *   VO_T_LOG2, VO_T_ATAN, VO_T_FABS, VO_T_EXP: the compute type's functions
 *                   (VO_T_EXP: the C library's on the CPU, kernels/exp.h's on
 *                   the devices: see there)
 *   VO_T_EPS        its unit roundoff (2^-24, 2^-53)
 *   vo_t_atomic_add(p, v)  vo_k_atomic_add_f32 / _f64
 */
#include "kernels/compat.h" /* VO_K_FP64 */

#if defined(VO_S_F64) && !VO_K_FP64
#define VO_S_ENABLED 0
#else
#define VO_S_ENABLED 1
#endif

#if defined(VO_S_F64)
#define VO_S double
#define VO_T double
#define VO_SN(name) name##_f64
#define VO_T_DEFINE 1
#define VO_LD(p, i) ((VO_T)(p)[i])
#define VO_ST(p, i, v) ((p)[i] = (v))
#elif defined(VO_S_F32)
#define VO_S float
#define VO_T float
#define VO_SN(name) name##_f32
#define VO_T_DEFINE 1
#define VO_LD(p, i) ((VO_T)(p)[i])
#define VO_ST(p, i, v) ((p)[i] = (v))
#elif defined(VO_S_F16)
#define VO_S uint16_t
#define VO_T float
#define VO_SN(name) name##_f16
#define VO_T_DEFINE 0
#define VO_LD(p, i) vo_k_f16_to_f32((p)[i])
#define VO_ST(p, i, v) ((p)[i] = vo_k_f32_to_f16(v))
#elif defined(VO_S_BF16)
#define VO_S uint16_t
#define VO_T float
#define VO_SN(name) name##_bf16
#define VO_T_DEFINE 0
#define VO_LD(p, i) vo_k_bf16_to_f32((p)[i])
#define VO_ST(p, i, v) ((p)[i] = vo_k_f32_to_bf16(v))
#else
#error "define one of VO_S_F32, VO_S_F64, VO_S_F16, VO_S_BF16 before kernels/dtype_begin.h"
#endif

#if defined(VO_S_F64)
#define VO_TN(name) name##_f64
#define VO_T_CEIL ceil
#define VO_T_FLOOR floor
#define VO_T_ROUND round
#define VO_T_SQRT sqrt
#define VO_T_LOG2 log2
#define VO_T_ATAN atan
#define VO_T_FABS fabs
#define VO_T_EXP VO_K_EXP_F64
#define VO_T_EPS (1.0 / 9007199254740992.0)
#define vo_t_atomic_add vo_k_atomic_add_f64
#else
#define VO_TN(name) name##_f32
#define VO_T_CEIL ceilf
#define VO_T_FLOOR floorf
#define VO_T_ROUND roundf
#define VO_T_SQRT sqrtf
#define VO_T_LOG2 log2f
#define VO_T_ATAN atanf
#define VO_T_FABS fabsf
#define VO_T_EXP VO_K_EXP_F32
#define VO_T_EPS (1.0 / 16777216.0)
#define vo_t_atomic_add vo_k_atomic_add_f32
#endif
