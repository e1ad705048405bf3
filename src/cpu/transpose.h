/*
 * float32 transposes between channel planes and channels-last rows, in 8x8
 * blocks with AVX2, for the RoI ops' channels-last paths (roi_align's fast
 * path, roi_pool's tile, both forwards' outputs). Data movement (and
 * roi_align's division by the sample count, correctly rounded either way):
 * no value can differ from the scalar loops they replace. Defined where the compiler can target
 * AVX2 (x86 with gcc or clang); callers run them only when the context's ISA is AVX2 or above.
 */
#ifndef VISIONOPS_CPU_TRANSPOSE_H
#define VISIONOPS_CPU_TRANSPOSE_H

#include <stdint.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>

/* In-register transpose of eight rows of eight floats. */
__attribute__((target("avx2"))) static inline void vo_cpu_tr8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/* One row of nc channel planes (element c*s1 + w, unit column stride) to
 * channels-last: dst[w*nc + c] = src[c*s1 + w] for the leading multiple of
 * 8 columns of W, which it returns; the caller does the rest. */
__attribute__((target("avx2"))) static inline int64_t vo_cpu_planes_to_nhwc_f32_avx2(
    const float *src, int64_t s1, int64_t nc, int64_t W, float *dst) {
  const int64_t w8 = W / 8 * 8, c8 = nc / 8 * 8;
  for (int64_t w0 = 0; w0 < w8; w0 += 8)
    for (int64_t c0 = 0; c0 < c8; c0 += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + (c0 + i) * s1 + w0);
      vo_cpu_tr8(r);
      for (int j = 0; j < 8; j++) _mm256_storeu_ps(dst + (w0 + j) * nc + c0, r[j]);
    }
  for (int64_t w = 0; w < w8; w++)
    for (int64_t c = c8; c < nc; c++) dst[w * nc + c] = src[c * s1 + w];
  return w8;
}

/* Eight rows of nc floats (row q at rows + q*rs) as nc runs of eight:
 * dst[c*ds + q] = rows[q*rs + c] for every c < nc, each divided by *div
 * unless div is NULL (then moved, bits kept). vdivps rounds each quotient
 * as the scalar division does. */
__attribute__((target("avx2"))) static inline void vo_cpu_rows8_to_runs_f32_avx2(
    const float *rows, int64_t rs, int64_t nc, const float *div, float *dst, int64_t ds) {
  const __m256 d = _mm256_set1_ps(div ? *div : 1.0f);
  const int64_t c8 = nc / 8 * 8;
  for (int64_t c0 = 0; c0 < c8; c0 += 8) {
    __m256 r[8];
    for (int q = 0; q < 8; q++) {
      r[q] = _mm256_loadu_ps(rows + q * rs + c0);
      if (div) r[q] = _mm256_div_ps(r[q], d);
    }
    vo_cpu_tr8(r);
    for (int i = 0; i < 8; i++) _mm256_storeu_ps(dst + (c0 + i) * ds, r[i]);
  }
  for (int64_t c = c8; c < nc; c++)
    for (int q = 0; q < 8; q++) dst[c * ds + q] = div ? rows[q * rs + c] / *div : rows[q * rs + c];
}

/* The reverse: dst[c*s1 + w] = src[w*nc + c], likewise. */
__attribute__((target("avx2"))) static inline int64_t vo_cpu_nhwc_to_planes_f32_avx2(
    const float *src, int64_t nc, int64_t W, float *dst, int64_t s1) {
  const int64_t w8 = W / 8 * 8, c8 = nc / 8 * 8;
  for (int64_t w0 = 0; w0 < w8; w0 += 8)
    for (int64_t c0 = 0; c0 < c8; c0 += 8) {
      __m256 r[8];
      for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(src + (w0 + j) * nc + c0);
      vo_cpu_tr8(r);
      for (int i = 0; i < 8; i++) _mm256_storeu_ps(dst + (c0 + i) * s1 + w0, r[i]);
    }
  for (int64_t w = 0; w < w8; w++)
    for (int64_t c = c8; c < nc; c++) dst[c * s1 + w] = src[w * nc + c];
  return w8;
}
#endif

#endif /* VISIONOPS_CPU_TRANSPOSE_H */
