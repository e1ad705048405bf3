/*
 * The portable kernel dialect: what every header in src/kernels/ may use, so
 * that one source compiles as C11 (the CPU's plain path and the host
 * tests), as CUDA C++ (device code) and, through the next backend's compat
 * header, as OpenCL C. Blender Cycles' kernel/device/<backend>/compat.h is
 * the model. A portable header includes only this file and other portable
 * headers; it never includes core/internal.h, uses no views, no vo_exec, no
 * libc beyond <math.h>-style functions named below, no recursion, no
 * function pointers, no variable-length arrays and no `static` data.
 *
 *   VO_KFN            qualifier of every portable function ("static inline";
 *                     __host__ __device__ on CUDA)
 *   VO_GLOBAL         address space of tensor memory in pointer types
 *                     (empty in C and CUDA, __global in OpenCL)
 *   int64_t, int32_t, uint32_t, uint16_t, uint8_t: index and storage types
 *                     (OpenCL's long/int/... are typedef'd to these names)
 *   VO_DT_F32 .. VO_DT_U8   dtype codes, the values of core/internal.h's vo_dtype
 *   vo_k_f16_to_f32, vo_k_f32_to_f16, vo_k_bf16_to_f32, vo_k_f32_to_bf16:
 *                     half-type bits <-> float, round to nearest even
 *   VO_K_WORK_GROUPS  defined on devices (CUDA, OpenCL), where a work-group
 *                     function runs once per thread of a group (a block):
 *                     vo_k_barrier() waits for the group and orders its
 *                     global-memory accesses; such code is written in
 *                     #ifdef VO_K_WORK_GROUPS and takes its thread index
 *                     and the group's size as arguments
 *   vo_k_f32_bits, vo_k_f64_bits: a float's / double's bits (the latter
 *                     where VO_K_FP64); vo_k_f32_of_bits, vo_k_f64_of_bits
 *                     the other way
 *   (kernels/exp.h: vo_k_exp_f32, vo_k_exp_f64, the devices' exp, the
 *                     same bits on every device; the CPU keeps C's expf /
 *                     exp, its references' function)
 *   VO_K_FP64         1 where the device computes in double: C, CUDA, and
 *                     OpenCL C where the compiler defines cl_khr_fp64; 0 on
 *                     an OpenCL device without it, where no `double` may
 *                     appear: the float64 instantiations compile to nothing
 *                     (kernels/dtype_begin.h's VO_S_ENABLED) and code that
 *                     needs double is written in #if VO_K_FP64
 *   vo_k_double       the type of intermediates that float32 code keeps in
 *                     double (exact loads, wide sums, bounds): double, or
 *                     float where VO_K_FP64 is 0 (then each such use states
 *                     its float accuracy)
 *   vo_k_double_arg   a double the host puts in an argument struct
 *                     (spatial_scale): double, or its 8 bytes where
 *                     VO_K_FP64 is 0, so the struct's layout is the host's;
 *                     read it with vo_k_double_arg_get (the nearest float
 *                     there, as (float)d)
 *   vo_k_load_as_double(p, dtype, i): element i of a tensor of any floating
 *                     or integer dtype (RoI coordinates, boxes) as
 *                     vo_k_double (a float64 tensor only where VO_K_FP64)
 *   vo_k_atomic_add_f32 / _f64: the fast backward's accumulation (atomic on
 *                     devices; a plain += on the CPU, whose plain path
 *                     gives each output element one owner)
 *   vo_k_load_int(p, dtype, i): element i of an integer tensor as int64_t
 *   vo_k_isfinite(vo_k_double)
 *
 * Per-type code is written once and instantiated per dtype with
 * kernels/dtype_begin.h / dtype_end.h (see there). Device kernels are
 * written as "work item" functions of an index; each backend's glue runs
 * them over its threads (a CUDA grid-stride loop, an OpenCL NDRange, the
 * CPU's OpenMP loop).
 */
#ifndef VISIONOPS_KERNELS_COMPAT_H
#define VISIONOPS_KERNELS_COMPAT_H

#if defined(__OPENCL_C_VERSION__)
#include "kernels/compat_opencl.h"
#elif defined(__CUDACC__)
#include "kernels/compat_cuda.h"
#else
#include "kernels/compat_c.h"
#endif

/* Dtype codes: the values of vo_dtype (core/internal.h checks they agree). */
#define VO_DT_F32 1
#define VO_DT_F64 2
#define VO_DT_F16 3
#define VO_DT_BF16 4
#define VO_DT_I64 5
#define VO_DT_I32 6
#define VO_DT_U8 7
#define VO_DT_BOOL 8
#define VO_DT_I16 9
#define VO_DT_I8 10

#if defined(__OPENCL_C_VERSION__) && !defined(cl_khr_fp64)
#define VO_K_FP64 0
typedef float vo_k_double;
typedef struct vo_k_double_arg {
  ulong bits;
} vo_k_double_arg;
VO_KFN float vo_k_double_arg_get(vo_k_double_arg v) { return vo_k_f64_bits_to_f32(v.bits); }
#else
#define VO_K_FP64 1
typedef double vo_k_double;
typedef double vo_k_double_arg;
#define vo_k_double_arg_get(v) (v)
#endif

VO_KFN int vo_k_isfinite(vo_k_double v) { return v == v && v - v == 0; }

/* Element i of a tensor of any float or integer dtype, as vo_k_double (in
 * double: exact for every float dtype, integers below 2^53 in magnitude; in
 * float: exact for float32, float16 and bfloat16, integers rounded once). */
VO_KFN vo_k_double vo_k_load_as_double(const VO_GLOBAL void *p, int dtype, int64_t i) {
  switch (dtype) {
#if VO_K_FP64
    case VO_DT_F64: return ((const VO_GLOBAL double *)p)[i];
#endif
    case VO_DT_F16: return (vo_k_double)vo_k_f16_to_f32(((const VO_GLOBAL uint16_t *)p)[i]);
    case VO_DT_BF16: return (vo_k_double)vo_k_bf16_to_f32(((const VO_GLOBAL uint16_t *)p)[i]);
    case VO_DT_I64: return (vo_k_double)((const VO_GLOBAL int64_t *)p)[i];
    case VO_DT_I32: return (vo_k_double)((const VO_GLOBAL int32_t *)p)[i];
    case VO_DT_I16: return (vo_k_double)((const VO_GLOBAL int16_t *)p)[i];
    case VO_DT_I8: return (vo_k_double)((const VO_GLOBAL int8_t *)p)[i];
    case VO_DT_U8: return (vo_k_double)((const VO_GLOBAL uint8_t *)p)[i];
    default: return (vo_k_double)((const VO_GLOBAL float *)p)[i];
  }
}

/* Element i of a tensor of integer dtype (int64, int32, int16, int8, uint8)
 * as int64_t, exactly. */
VO_KFN int64_t vo_k_load_int(const VO_GLOBAL void *p, int dtype, int64_t i) {
  switch (dtype) {
    case VO_DT_I64: return ((const VO_GLOBAL int64_t *)p)[i];
    case VO_DT_I32: return ((const VO_GLOBAL int32_t *)p)[i];
    case VO_DT_I16: return ((const VO_GLOBAL int16_t *)p)[i];
    case VO_DT_I8: return ((const VO_GLOBAL int8_t *)p)[i];
    default: return ((const VO_GLOBAL uint8_t *)p)[i];
  }
}

#endif /* VISIONOPS_KERNELS_COMPAT_H */
