/*
 * The NMS ops' score keys in the portable dialect (kernels/compat.h), once
 * for the CPU's sorts (cpu/sort.h) and the devices' (kernels/nms_padded.h):
 * unsigned keys whose ascending order is torch's stable descending sort of
 * the scores, NaN first (every NaN key 0), -0 and +0 one key (equal
 * scores). A stable sort by key then orders ties by index.
 */
#ifndef VISIONOPS_KERNELS_SCORE_KEY_H
#define VISIONOPS_KERNELS_SCORE_KEY_H

#include "kernels/compat.h"

VO_KFN uint64_t vo_k_score_key_f32(float s) {
  if (s != s) return 0;
  if (s == 0) s = 0;
  uint32_t u = vo_k_f32_bits(s);
  u = (u >> 31) ? ~u : u | 0x80000000u; /* ascending in s */
  return (uint64_t)(uint32_t)~u;
}

#if VO_K_FP64
VO_KFN uint64_t vo_k_score_key_f64(double s) {
  if (s != s) return 0;
  if (s == 0) s = 0;
  uint64_t u = vo_k_f64_bits(s);
  u = (u >> 63) ? ~u : u | ((uint64_t)1 << 63);
  return ~u;
}
#endif

#endif /* VISIONOPS_KERNELS_SCORE_KEY_H */
