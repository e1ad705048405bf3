/*
 * The portable kernel dialect (kernels/compat.h) in C11: the CPU backend's
 * plain path and host tests.
 */
#ifndef VISIONOPS_KERNELS_COMPAT_C_H
#define VISIONOPS_KERNELS_COMPAT_C_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/half.h"

#define VO_KFN static inline
#define VO_GLOBAL

VO_KFN float vo_k_f16_to_f32(uint16_t h) { return vo_f16_to_f32(h); }
VO_KFN uint16_t vo_k_f32_to_f16(float f) { return vo_f32_to_f16(f); }
VO_KFN float vo_k_bf16_to_f32(uint16_t h) { return vo_bf16_to_f32(h); }
VO_KFN uint16_t vo_k_f32_to_bf16(float f) { return vo_f32_to_bf16(f); }

VO_KFN uint32_t vo_k_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
VO_KFN uint64_t vo_k_f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
VO_KFN float vo_k_f32_of_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
VO_KFN double vo_k_f64_of_bits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* The CPU's plain path gives every accumulated element one owning thread. */
VO_KFN void vo_k_atomic_add_f32(float *p, float v) { *p += v; }
VO_KFN void vo_k_atomic_add_f64(double *p, double v) { *p += v; }

#endif /* VISIONOPS_KERNELS_COMPAT_C_H */
