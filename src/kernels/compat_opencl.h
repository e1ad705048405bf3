/*
 * The portable kernel dialect (kernels/compat.h) in OpenCL C 1.2: the
 * OpenCL backend (src/opencl/) compiles src/kernels/ with it at run time,
 * and the test kernels_opencl_c compiles every portable header with it
 * (clang -x cl). Without cl_khr_fp64 (the compiler defines that macro
 * where the device has it) kernels/compat.h's VO_K_FP64 is 0 and no double
 * is compiled (see there); vo_k_atomic_add_f64 needs cl_khr_fp64 and
 * cl_khr_int64_base_atomics (each pragma only where the device has it).
 */
#ifndef VISIONOPS_KERNELS_COMPAT_OPENCL_H
#define VISIONOPS_KERNELS_COMPAT_OPENCL_H

/* Separate multiply and add roundings, as the C build's -ffp-contract=off
 * and CUDA's --fmad=false: float32 results match torchvision's bit for bit
 * only without contraction into FMAs. */
#pragma OPENCL FP_CONTRACT OFF
/* A testing aid: the backend's VISIONOPS_OPENCL_NO_FP64=1 builds with
 * -D VO_CL_NO_FP64 (OpenCL compilers take no -U), compiling every program
 * as for a device without cl_khr_fp64. */
#ifdef VO_CL_NO_FP64
#undef cl_khr_fp64
#endif
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifdef cl_khr_int64_base_atomics
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif

typedef long int64_t;
typedef int int32_t;
typedef short int16_t;
typedef char int8_t;
typedef ulong uint64_t;
typedef uint uint32_t;
typedef ushort uint16_t;
typedef uchar uint8_t;

#define VO_KFN static inline
#define VO_GLOBAL __global

/* C's float-suffixed math names; OpenCL's built-ins are overloaded. */
#define ceilf ceil
#define floorf floor
#define roundf round
#define sqrtf sqrt
#define log2f log2
#define atanf atan
#define fabsf fabs
#define expf exp

VO_KFN uint32_t vo_k_f32_bits(float f) { return as_uint(f); }
VO_KFN float vo_k_f32_of_bits(uint32_t u) { return as_float(u); }
#ifdef cl_khr_fp64
VO_KFN uint64_t vo_k_f64_bits(double d) { return as_ulong(d); }
VO_KFN double vo_k_f64_of_bits(uint64_t u) { return as_double(u); }
#endif

/* Work groups (kernels/compat.h's VO_K_WORK_GROUPS): the barrier orders
 * the group's global-memory accesses. */
#define VO_K_WORK_GROUPS 1
VO_KFN void vo_k_barrier(void) { barrier(CLK_GLOBAL_MEM_FENCE); }

/* Half-type conversions on bits (no cl_khr_fp16 needed), round to nearest
 * even, NaN kept quiet: the same results as core/half.h. */
VO_KFN float vo_k_bf16_to_f32(uint16_t h) { return as_float((uint32_t)h << 16); }

VO_KFN uint16_t vo_k_f32_to_bf16(float f) {
  uint32_t u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* float16 on bits as core/half.h (not vload_half / vstore_half_rte, whose
 * NaN bits are the implementation's: PoCL stores every NaN as 0x7fff). */
VO_KFN float vo_k_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (e == 0x1fu) return as_float(sign | 0x7f800000u | (man << 13)); /* inf / NaN */
  if (e == 0) {
    const float f = (float)man * (1.0f / 16777216.0f); /* subnormal: man * 2^-24, exact */
    return sign ? -f : f;
  }
  return as_float(sign | ((e + 112u) << 23) | (man << 13));
}

VO_KFN uint16_t vo_k_f32_to_f16(float f) {
  const uint32_t u = as_uint(f), a = u & 0x7fffffffu;
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                       /* to inf */
  if (a < 0x38800000u) { /* subnormal or zero: a * 2^24 rounded to an integer, ties even */
    const float mag = as_float(a) * 16777216.0f;
    uint32_t m = (uint32_t)mag;
    const float rem = mag - (float)m;
    if (rem > 0.5f || (rem == 0.5f && (m & 1u))) m++;
    return (uint16_t)(sign | m);
  }
  const uint32_t r = a + 0x0fffu + ((a >> 13) & 1u); /* normal: 10 bits, ties even */
  return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

VO_KFN void vo_k_atomic_add_f32(volatile __global float *p, float v) {
  volatile __global uint *q = (volatile __global uint *)p;
  uint old = *q, seen;
  while ((seen = atomic_cmpxchg(q, old, as_uint(as_float(old) + v))) != old) old = seen;
}

#if defined(cl_khr_int64_base_atomics) && defined(cl_khr_fp64)
VO_KFN void vo_k_atomic_add_f64(volatile __global double *p, double v) {
  volatile __global ulong *q = (volatile __global ulong *)p;
  ulong old = *q, seen;
  while ((seen = atom_cmpxchg(q, old, as_ulong(as_double(old) + v))) != old) old = seen;
}
#endif

#ifndef cl_khr_fp64
/* The float nearest the double whose bits are u (round to nearest even; NaN
 * kept quiet), computed on the bits: what (float)d gives in C. */
VO_KFN float vo_k_f64_bits_to_f32(ulong u) {
  const uint sign = (uint)(u >> 32) & 0x80000000u;
  const int e = (int)((u >> 52) & 0x7ff);
  const ulong m = u & 0xfffffffffffffUL;
  if (e == 0x7ff) return as_float(sign | 0x7f800000u | (m ? 0x400000u | (uint)(m >> 29) : 0u));
  if (e == 0) return as_float(sign);   /* double subnormals are below float's least */
  int fe = e - 1023 + 127, shift = 29; /* 53 significand bits to 24 */
  if (fe >= 255) return as_float(sign | 0x7f800000u);
  if (fe <= 0) { /* a float subnormal: fewer bits */
    shift += 1 - fe;
    fe = 0;
  }
  if (shift > 54) return as_float(sign);
  const ulong full = m | ((ulong)1 << 52), tie = (ulong)1 << (shift - 1);
  ulong kept = full >> shift;
  const ulong rest = full & (((ulong)1 << shift) - 1);
  if (rest > tie || (rest == tie && (kept & 1))) kept++;
  /* a normal's kept holds its implicit bit: adding it carries into the
   * exponent, as does a rounding up to the next binade (or infinity) */
  return as_float(sign | (fe > 0 ? ((uint)(fe - 1) << 23) + (uint)kept : (uint)kept));
}
#endif

#endif /* VISIONOPS_KERNELS_COMPAT_OPENCL_H */
