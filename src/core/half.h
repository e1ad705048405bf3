/*
 * float16 / bfloat16 <-> float32 conversion in portable C (round to nearest
 * even, NaN kept quiet). Half types are storage only: kernels load them into
 * float32, compute, and store back.
 */
#ifndef VISIONOPS_HALF_H
#define VISIONOPS_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t vo_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float vo_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline float vo_bf16_to_f32(uint16_t h) { return vo_bits_f32((uint32_t)h << 16); }

static inline uint16_t vo_f32_to_bf16(float f) {
  uint32_t u = vo_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float vo_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1fu) return vo_bits_f32(sign | 0x7f800000u | (man << 13)); /* inf / nan */
  if (exp == 0) {
    if (man == 0) return vo_bits_f32(sign);
    /* subnormal: man * 2^-24 */
    float f = (float)man * (1.0f / 16777216.0f);
    return sign ? -f : f;
  }
  return vo_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t vo_f32_to_f16(float f) {
  uint32_t u = vo_f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                       /* rounds to inf */
  if (a < 0x38800000u) {
    /* result is subnormal or zero: round a * 2^24 to an integer, ties even */
    float mag = vo_bits_f32(a) * 16777216.0f; /* exact: power-of-two scale */
    uint32_t m = (uint32_t)mag;
    float rem = mag - (float)m;
    if (rem > 0.5f || (rem == 0.5f && (m & 1u))) m++;
    return (uint16_t)(sign | m);
  }
  /* normal: rebias exponent, round mantissa to 10 bits, ties even */
  uint32_t r = a + 0x0fffu + ((a >> 13) & 1u);
  return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

#endif /* VISIONOPS_HALF_H */
