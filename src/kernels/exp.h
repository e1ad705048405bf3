/*
 * exp in the portable dialect (kernels/compat.h) for the devices: plain
 * IEEE arithmetic (+, -, *, no division, no contraction: every backend
 * builds with it off) and bit moves, so every device computes the same
 * bits, within an ulp of the C library's and nearly always the correctly
 * rounded result, where the devices' built-ins are each their own
 * approximation (CUDA's expf: 2 ulps). The gaussian decays of soft_nms and
 * matrix_nms call it on the devices (VO_K_EXP_F32 / VO_K_EXP_F64, which
 * kernels/dtype_begin.h's VO_T_EXP names). The CPU keeps the C library's
 * expf / exp, which Paddle's matrix_nms and mmcv's soft_nms call on the CPU:
 * matrix_nms stays bit for bit with Paddle there (its torch 2.x lane
 * tests), and a device's gaussian scores are within an ulp of the CPU's.
 *
 *   vo_k_exp_f64   Cody and Waite's reduction x = k ln2 + r + r_lo, |r| <=
 *                  ln2 / 2, with ln2 in two parts (k ln2_hi exact) and the
 *                  reduction's rounding kept in r_lo; e^r by its Taylor
 *                  polynomial to r^13 (truncation below 2^-57) in Horner
 *                  form, summed as (1 + r) + (its rounding + r^2 q + r_lo (1
 *                  + r)) so that one rounding dominates; then 2^k by the
 *                  exponent bits (two steps where the result is subnormal or
 *                  k = 1024). Within 1 ulp (test_exp: 1.3% of arguments an
 *                  ulp from glibc's exp, none further); +inf above 709.79, 0
 *                  below -745.14, NaN kept.
 *   vo_k_exp_f32   where the device computes in double (VO_K_FP64), the
 *                  same steps in double, shorter: ln2 as one double (k is
 *                  at most 150), the polynomial to r^9 (truncation below
 *                  2^-37) in Estrin's form (short dependency chains), one
 *                  rounding to float at the end: within 1 ulp, and equal
 *                  to (float)exp(x) unless exp(x) lies within about 2^-37
 *                  of a float rounding boundary (test_exp: under 0.001% of
 *                  arguments differ); else the same steps in float (Taylor
 *                  to r^7), within 2 ulps, identical across devices without
 *                  fp64 only.
 * Both need subnormals kept (a device that flushes them gives 0 where the
 * others give a subnormal).
 */
#ifndef VISIONOPS_KERNELS_EXP_H
#define VISIONOPS_KERNELS_EXP_H

#include "kernels/compat.h"

#if defined(__CUDACC__) || defined(__OPENCL_C_VERSION__)
#define VO_K_EXP_F32 vo_k_exp_f32
#define VO_K_EXP_F64 vo_k_exp_f64
#else
#define VO_K_EXP_F32 expf
#define VO_K_EXP_F64 exp
#endif

/* The double steps' constants: 1.5 * 2^52, which rounds a double to an
 * integer when added; 1 / ln 2; ln 2 as ln2_hi (its low 21 bits zero) +
 * ln2_lo, and as one double (the float path's); the Taylor coefficients
 * 1 / n!. */
#define VO_K_EXP_SHIFTER 6755399441055744.0
#define VO_K_EXP_LOG2E 1.4426950408889634
#define VO_K_EXP_LN2_HI 6.93147180369123816490e-01
#define VO_K_EXP_LN2_LO 1.90821492927058770002e-10
#define VO_K_EXP_LN2 0.69314718055994530942
#define VO_K_EXP_C13 (1.0 / 6227020800.0)
#define VO_K_EXP_C12 (1.0 / 479001600.0)
#define VO_K_EXP_C11 (1.0 / 39916800.0)
#define VO_K_EXP_C10 (1.0 / 3628800.0)
#define VO_K_EXP_C9 (1.0 / 362880.0)
#define VO_K_EXP_C8 (1.0 / 40320.0)
#define VO_K_EXP_C7 (1.0 / 5040.0)
#define VO_K_EXP_C6 (1.0 / 720.0)
#define VO_K_EXP_C5 (1.0 / 120.0)
#define VO_K_EXP_C4 (1.0 / 24.0)
#define VO_K_EXP_C3 (1.0 / 6.0)
#define VO_K_EXP_C2 0.5

#if VO_K_FP64
VO_KFN double vo_k_exp_f64(double x) {
  if (!(x == x)) return x;
  if (x > 709.79) return x * 1.0e308; /* +inf */
  if (x < -745.14) return 0.0;
  const double kd = (x * VO_K_EXP_LOG2E + VO_K_EXP_SHIFTER) - VO_K_EXP_SHIFTER;
  const double r_hi = x - kd * VO_K_EXP_LN2_HI, t = kd * VO_K_EXP_LN2_LO; /* r_hi exact */
  const double r = r_hi - t, r_lo = (r_hi - r) - t;                       /* r + r_lo: r_hi - t */
  double q = VO_K_EXP_C13;
  q = q * r + VO_K_EXP_C12;
  q = q * r + VO_K_EXP_C11;
  q = q * r + VO_K_EXP_C10;
  q = q * r + VO_K_EXP_C9;
  q = q * r + VO_K_EXP_C8;
  q = q * r + VO_K_EXP_C7;
  q = q * r + VO_K_EXP_C6;
  q = q * r + VO_K_EXP_C5;
  q = q * r + VO_K_EXP_C4;
  q = q * r + VO_K_EXP_C3;
  q = q * r + VO_K_EXP_C2;
  const double one_r = 1.0 + r, one_r_lo = r - (one_r - 1.0); /* 1 + r exactly, as two */
  const double p = one_r + (one_r_lo + (r * r) * q + (r_lo + r * r_lo));
  const int64_t k = (int64_t)kd;
  if (k > 1023) return p * vo_k_f64_of_bits((uint64_t)(2046) << 52) * 2.0;
  if (k < -1022) /* a subnormal result: one rounding, in the last product */
    return p * vo_k_f64_of_bits((uint64_t)(k + 54 + 1023) << 52) * (1.0 / 18014398509481984.0);
  return p * vo_k_f64_of_bits((uint64_t)(k + 1023) << 52);
}
#endif

VO_KFN float vo_k_exp_f32(float x) {
  if (!(x == x)) return x;
  if (x > 88.8f) return x * 3.0e38f; /* +inf */
  if (x < -104.0f) return 0.0f;
#if VO_K_FP64
  /* in double: k within [-150, 128], so 2^k is a normal double and the
   * one rounding to float is the last step's */
  const double xd = (double)x;
  const double kd = (xd * VO_K_EXP_LOG2E + VO_K_EXP_SHIFTER) - VO_K_EXP_SHIFTER;
  const double r = xd - kd * VO_K_EXP_LN2; /* |k| <= 150: an error below 2^-45 */
  const double r2 = r * r, r4 = r2 * r2;
  const double a0 = VO_K_EXP_C2 + VO_K_EXP_C3 * r, a1 = VO_K_EXP_C4 + VO_K_EXP_C5 * r;
  const double a2 = VO_K_EXP_C6 + VO_K_EXP_C7 * r, a3 = VO_K_EXP_C8 + VO_K_EXP_C9 * r;
  const double q = (a0 + a1 * r2) + (a2 + a3 * r2) * r4;
  const double p = 1.0 + (r + r2 * q);
  return (float)(p * vo_k_f64_of_bits((uint64_t)((int64_t)kd + 1023) << 52));
#else
  const float shifter = 12582912.0f; /* 1.5 * 2^23 */
  const float kf = (x * 1.44269504f + shifter) - shifter;
  const float ln2_hi = 0.693145751953125f, ln2_lo = 1.428606765330187e-06f;
  const float r = (x - kf * ln2_hi) - kf * ln2_lo;
  float q = 1.0f / 5040.0f;
  q = q * r + 1.0f / 720.0f;
  q = q * r + 1.0f / 120.0f;
  q = q * r + 1.0f / 24.0f;
  q = q * r + 1.0f / 6.0f;
  q = q * r + 0.5f;
  const float p = 1.0f + (r + (r * r) * q);
  const int32_t k = (int32_t)kf;
  if (k > 127) return p * vo_k_f32_of_bits((uint32_t)254 << 23) * 2.0f;
  if (k < -126) return p * vo_k_f32_of_bits((uint32_t)(k + 24 + 127) << 23) * (1.0f / 16777216.0f);
  return p * vo_k_f32_of_bits((uint32_t)(k + 127) << 23);
#endif
}

#endif /* VISIONOPS_KERNELS_EXP_H */
