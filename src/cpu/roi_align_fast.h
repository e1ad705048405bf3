/*
 * Building blocks of roi_align's channels-last fast path (cpu/roi_align.c):
 * RoIs grouped by image, per-RoI axis tables of the bilinear samples, the
 * vectorised channel loops of one bin, and the transposes between an
 * image's planes and a channels-last tile of a block of channels.
 * Channels are independent, so running each channel's arithmetic in exactly
 * the order of the plain kernels keeps every result bit-identical while the
 * channel loop runs in SIMD lanes. Builds use -ffp-contract=off, so no FMA
 * is formed even in the AVX2 versions.
 */
#ifndef VISIONOPS_CPU_ROI_ALIGN_FAST_H
#define VISIONOPS_CPU_ROI_ALIGN_FAST_H

#include "cpu/roi_common.h"

#define VO_RAF_TILE 16

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define VO_RAF_HAVE_AVX2 1
#define VO_RAF_AVX2_ATTR __attribute__((target("avx2,fma")))
#endif

/* Groups RoIs by image, keeping their order within an image: order[start[b]
 * .. start[b+1]) are image b's RoIs, ascending. start has batch + 1 entries.
 * Returns the number of images with at least one RoI. */
static inline int64_t vo_raf_group(const int64_t *batch_of, int64_t num_rois, int64_t batch,
                                   int64_t *order, int64_t *start) {
  memset(start, 0, (size_t)(batch + 1) * sizeof *start);
  for (int64_t k = 0; k < num_rois; k++) start[batch_of[k] + 1]++;
  int64_t used = 0;
  for (int64_t b = 0; b < batch; b++) {
    used += start[b + 1] > 0;
    start[b + 1] += start[b];
  }
  /* start[b] is now image b's first slot; fill, then shift back */
  for (int64_t k = 0; k < num_rois; k++) order[start[batch_of[k]]++] = k;
  for (int64_t b = batch; b > 0; b--) start[b] = start[b - 1];
  start[0] = 0;
  return used;
}

/* Per compute type: one axis of one RoI's samples. A bilinear sample's
 * validity, corners and weights factor into a y part (from ph, iy) and an x
 * part (from pw, ix), the portable vo_k_ra_axis_at (kernels/roi_align.h)
 * of the plain path, so the weights hy*hx, hy*lx, ly*hx, ly*lx are the
 * same products of the same values. off_lo/off_hi are the corner rows' (or
 * columns') element offsets. */
#define VO_DEFINE_RAF_AXIS(T, SUF)                                                                \
  typedef struct vo_raf_axis_##SUF {                                                              \
    int64_t off_lo, off_hi;                                                                       \
    T l, h;                                                                                       \
    int valid;                                                                                    \
  } vo_raf_axis_##SUF;                                                                            \
                                                                                                  \
  /* Samples i < grid of bins p < pooled on an axis of `size` pixels,                             \
   * element stride `stride`. */                                                                  \
  static inline void vo_raf_axis_fill_##SUF(T start, T bin, int64_t grid, int64_t pooled,         \
                                            int64_t size, int64_t stride, vo_raf_axis_##SUF *a) { \
    for (int64_t p = 0; p < pooled; p++)                                                          \
      for (int64_t i = 0; i < grid; i++, a++) {                                                   \
        const vo_k_ra_axis_##SUF r = vo_k_ra_axis_at_##SUF(start, bin, grid, p, i, size);         \
        a->valid = r.valid;                                                                       \
        a->l = r.l;                                                                               \
        a->h = r.h;                                                                               \
        a->off_lo = r.lo * stride;                                                                \
        a->off_hi = r.hi * stride;                                                                \
      }                                                                                           \
  }

VO_DEFINE_RAF_AXIS(float, f32)
VO_DEFINE_RAF_AXIS(double, f64)

/* Per compute type T (SUF) and ISA: one bin's channel loops over its
 * samples (iy, ix) in order, for nc channels (NC_CONST: a compile-time
 * block size, so the accumulators stay in registers).
 * fwd: acc[c] += w0*x[p0+c] + w1*x[p1+c] + w2*x[p2+c] + w3*x[p3+c] for
 *      each in-map sample, exactly the plain kernel's expression.
 * bwd: for each in-map sample and corner j in order, d[pj+c] += g[c]*wj/count;
 *      when count is a power of two, /count and *(1/count) are the same
 *      correctly rounded value, and a multiply is much cheaper. */
#define VO_DEFINE_RAF_BIN(T, SUF, NAME, ATTR, NCF, NCB)                                        \
  ATTR static void vo_raf_fwd_##SUF##_##NAME(                                                  \
      T *restrict acc, const T *restrict x, const vo_raf_axis_##SUF *ya, int64_t gh,           \
      const vo_raf_axis_##SUF *xa, int64_t gw, int64_t nc_arg) {                               \
    const int64_t nc = NCF;                                                                    \
    (void)nc_arg;                                                                              \
    for (int64_t iy = 0; iy < gh; iy++) {                                                      \
      if (!ya[iy].valid) continue;                                                             \
      const T hy = ya[iy].h, ly = ya[iy].l;                                                    \
      for (int64_t ix = 0; ix < gw; ix++) {                                                    \
        if (!xa[ix].valid) continue;                                                           \
        const T hx = xa[ix].h, lx = xa[ix].l;                                                  \
        const T w0 = hy * hx, w1 = hy * lx, w2 = ly * hx, w3 = ly * lx;                        \
        const T *restrict x0 = x + ya[iy].off_lo + xa[ix].off_lo;                              \
        const T *restrict x1 = x + ya[iy].off_lo + xa[ix].off_hi;                              \
        const T *restrict x2 = x + ya[iy].off_hi + xa[ix].off_lo;                              \
        const T *restrict x3 = x + ya[iy].off_hi + xa[ix].off_hi;                              \
        for (int64_t c = 0; c < nc; c++)                                                       \
          acc[c] += w0 * x0[c] + w1 * x1[c] + w2 * x2[c] + w3 * x3[c];                         \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  ATTR static void vo_raf_bwd_##SUF##_##NAME(                                                  \
      T *restrict d, const T *restrict g, const vo_raf_axis_##SUF *ya, int64_t gh,             \
      const vo_raf_axis_##SUF *xa, int64_t gw, int64_t nc_arg, T count, int pow2) {            \
    const int64_t nc = NCB;                                                                    \
    (void)nc_arg;                                                                              \
    const T inv = (T)1 / count;                                                                \
    for (int64_t iy = 0; iy < gh; iy++) {                                                      \
      if (!ya[iy].valid) continue;                                                             \
      const T hy = ya[iy].h, ly = ya[iy].l;                                                    \
      for (int64_t ix = 0; ix < gw; ix++) {                                                    \
        if (!xa[ix].valid) continue;                                                           \
        const T hx = xa[ix].h, lx = xa[ix].l;                                                  \
        const T w[4] = {hy * hx, hy * lx, ly * hx, ly * lx};                                   \
        const int64_t pos[4] = {ya[iy].off_lo + xa[ix].off_lo, ya[iy].off_lo + xa[ix].off_hi,  \
                                ya[iy].off_hi + xa[ix].off_lo, ya[iy].off_hi + xa[ix].off_hi}; \
        for (int j = 0; j < 4; j++) {                                                          \
          T *restrict dj = d + pos[j];                                                         \
          const T wj = w[j];                                                                   \
          if (pow2)                                                                            \
            for (int64_t c = 0; c < nc; c++) dj[c] += g[c] * wj * inv;                         \
          else                                                                                 \
            for (int64_t c = 0; c < nc; c++) dj[c] += g[c] * wj / count;                       \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }

/* Channels per block (a channels-last tile is [H,W,CB]): the forward's
 * small tiles stay in cache; the backward's wider blocks amortise staging
 * each bin's gradients and the samples' scalar work over more lanes. */
#define VO_RAF_CBF_F32 16
#define VO_RAF_CBF_F64 8
#define VO_RAF_CBB_F32 64
#define VO_RAF_CBB_F64 32

VO_DEFINE_RAF_BIN(float, f32, generic, , nc_arg, nc_arg)
VO_DEFINE_RAF_BIN(double, f64, generic, , nc_arg, nc_arg)
VO_DEFINE_RAF_BIN(float, f32, generic_cb, , VO_RAF_CBF_F32, VO_RAF_CBB_F32)
VO_DEFINE_RAF_BIN(double, f64, generic_cb, , VO_RAF_CBF_F64, VO_RAF_CBB_F64)
#ifdef VO_RAF_HAVE_AVX2
VO_DEFINE_RAF_BIN(float, f32, avx2, VO_RAF_AVX2_ATTR, nc_arg, nc_arg)
VO_DEFINE_RAF_BIN(double, f64, avx2, VO_RAF_AVX2_ATTR, nc_arg, nc_arg)
VO_DEFINE_RAF_BIN(float, f32, avx2_cb, VO_RAF_AVX2_ATTR, VO_RAF_CBF_F32, VO_RAF_CBB_F32)
VO_DEFINE_RAF_BIN(double, f64, avx2_cb, VO_RAF_AVX2_ATTR, VO_RAF_CBF_F64, VO_RAF_CBB_F64)
#endif

typedef void (*vo_raf_fwd_f32_fn)(float *restrict, const float *restrict, const vo_raf_axis_f32 *,
                                  int64_t, const vo_raf_axis_f32 *, int64_t, int64_t);
typedef void (*vo_raf_fwd_f64_fn)(double *restrict, const double *restrict, const vo_raf_axis_f64 *,
                                  int64_t, const vo_raf_axis_f64 *, int64_t, int64_t);
typedef void (*vo_raf_bwd_f32_fn)(float *restrict, const float *restrict, const vo_raf_axis_f32 *,
                                  int64_t, const vo_raf_axis_f32 *, int64_t, int64_t, float, int);
typedef void (*vo_raf_bwd_f64_fn)(double *restrict, const double *restrict, const vo_raf_axis_f64 *,
                                  int64_t, const vo_raf_axis_f64 *, int64_t, int64_t, double, int);

#ifdef VO_RAF_HAVE_AVX2
#include <immintrin.h>

/* In-register transpose of eight rows of eight floats. */
VO_RAF_AVX2_ATTR static inline void vo_raf_tr8(__m256 r[8]) {
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

/* One row of the transposes in 8x8 blocks, for float32 planes with unit
 * column stride: dst[w*nc + c] = src[c*s1 + w] (to channels-last) and the
 * reverse. Pure data movement, so no value can differ from the scalar
 * loops. Returns how many leading columns were done (a multiple of 8). */
VO_RAF_AVX2_ATTR static int64_t vo_raf_rows_to_nhwc_avx2(const float *src, int64_t s1, int64_t nc,
                                                         int64_t W, float *dst) {
  const int64_t w8 = W / 8 * 8, c8 = nc / 8 * 8;
  for (int64_t w0 = 0; w0 < w8; w0 += 8)
    for (int64_t c0 = 0; c0 < c8; c0 += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + (c0 + i) * s1 + w0);
      vo_raf_tr8(r);
      for (int j = 0; j < 8; j++) _mm256_storeu_ps(dst + (w0 + j) * nc + c0, r[j]);
    }
  for (int64_t w = 0; w < w8; w++)
    for (int64_t c = c8; c < nc; c++) dst[w * nc + c] = src[c * s1 + w];
  return w8;
}
VO_RAF_AVX2_ATTR static int64_t vo_raf_rows_from_nhwc_avx2(const float *src, int64_t nc, int64_t W,
                                                           float *dst, int64_t s1) {
  const int64_t w8 = W / 8 * 8, c8 = nc / 8 * 8;
  for (int64_t w0 = 0; w0 < w8; w0 += 8)
    for (int64_t c0 = 0; c0 < c8; c0 += 8) {
      __m256 r[8];
      for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(src + (w0 + j) * nc + c0);
      vo_raf_tr8(r);
      for (int i = 0; i < 8; i++) _mm256_storeu_ps(dst + (c0 + i) * s1 + w0, r[i]);
    }
  for (int64_t w = 0; w < w8; w++)
    for (int64_t c = c8; c < nc; c++) dst[c * s1 + w] = src[w * nc + c];
  return w8;
}
#define vo_raf_rows_to_nhwc_fast vo_raf_rows_to_nhwc_avx2
#define vo_raf_rows_from_nhwc_fast vo_raf_rows_from_nhwc_avx2
#else
#define vo_raf_rows_to_nhwc_fast(src, s1, nc, W, dst) ((void)(src), (void)(dst), (int64_t)0)
#define vo_raf_rows_from_nhwc_fast(src, nc, W, dst, s1) ((void)(src), (void)(dst), (int64_t)0)
#endif

/* The AVX2 row transposes exist for float32 only; the double instantiation
 * gets stand-ins that transpose nothing (the portable loop does it all). */
#define VO_RAF_FAST_TO_f32(in, off, s1, nc, W, dst) \
  vo_raf_rows_to_nhwc_fast((const float *)vo_view_addr(in) + (off), s1, nc, W, dst)
#define VO_RAF_FAST_FROM_f32(src, nc, W, dst, s1) vo_raf_rows_from_nhwc_fast(src, nc, W, dst, s1)
#define VO_RAF_FAST_TO_f64(in, off, s1, nc, W, dst) ((void)(in), (void)(dst), (int64_t)0)
#define VO_RAF_FAST_FROM_f64(src, nc, W, dst, s1) ((void)(src), (void)(dst), (int64_t)0)

/* 1 when count (a positive integer-valued float) is a power of two. */
static inline int vo_raf_pow2(double count) {
  int e;
  return frexp(count, &e) == 0.5;
}

/* Per compute type: the kernels' loop selection, and the transposes of one
 * image between the input's layout ([C,H,W] with any strides, storage
 * dtype) and the channels-last buffer [H,W,C] in the compute type. */
#define VO_DEFINE_RAF_COMMON(T, SUF)                                                               \
  /* buf[(h*W + w)*nc + c] = channel c0 + c of image b of `in` at (h, w):                          \
   * one channel block as a channels-last tile, in the compute type. */                            \
  static void vo_raf_to_nhwc_##SUF(const vo_view *in, int64_t b, int64_t c0, int64_t nc,           \
                                   int64_t H, int64_t W, T *buf, int avx2) {                       \
    const int64_t s1 = in->stride[1], s2 = in->stride[2], s3 = in->stride[3];                      \
    const int64_t base = b * in->stride[0] + c0 * s1;                                              \
    const vo_dtype dt = in->dtype;                                                                 \
    for (int64_t h = 0; h < H; h++)                                                                \
      for (int64_t w0 = avx2 && dt == VO_F32 && s3 == 1                                            \
                            ? VO_RAF_FAST_TO_##SUF(in, base + h * s2, s1, nc, W, buf + h * W * nc) \
                            : 0;                                                                   \
           w0 < W; w0 += VO_RAF_TILE) {                                                            \
        const int64_t w1 = w0 + VO_RAF_TILE < W ? w0 + VO_RAF_TILE : W;                            \
        T *dst = buf + h * W * nc;                                                                 \
        for (int64_t c = 0; c < nc; c++) {                                                         \
          const int64_t src = base + c * s1 + h * s2;                                              \
          switch (dt) {                                                                            \
            case VO_F32:                                                                           \
              for (int64_t w = w0; w < w1; w++)                                                    \
                dst[w * nc + c] = (T)((const float *)vo_view_addr(in))[src + w * s3];                      \
              break;                                                                               \
            case VO_F64:                                                                           \
              for (int64_t w = w0; w < w1; w++)                                                    \
                dst[w * nc + c] = (T)((const double *)vo_view_addr(in))[src + w * s3];                     \
              break;                                                                               \
            case VO_F16:                                                                           \
              for (int64_t w = w0; w < w1; w++)                                                    \
                dst[w * nc + c] = (T)vo_f16_to_f32(((const uint16_t *)vo_view_addr(in))[src + w * s3]);    \
              break;                                                                               \
            default:                                                                               \
              for (int64_t w = w0; w < w1; w++)                                                    \
                dst[w * nc + c] = (T)vo_bf16_to_f32(((const uint16_t *)vo_view_addr(in))[src + w * s3]);   \
              break;                                                                               \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
  }                                                                                                \
                                                                                                   \
  /* out[(c*H + h)*W + w] = buf[(h*W + w)*nc + c]: a tile back to planes. */                       \
  static void vo_raf_from_nhwc_##SUF(const T *buf, int64_t nc, int64_t H, int64_t W, T *out,       \
                                     int avx2) {                                                   \
    for (int64_t h = 0; h < H; h++)                                                                \
      for (int64_t w0 = avx2 ? VO_RAF_FAST_FROM_##SUF(buf + h * W * nc, nc, W, out + h * W, H * W) \
                             : 0;                                                                  \
           w0 < W; w0 += VO_RAF_TILE) {                                                            \
        const int64_t w1 = w0 + VO_RAF_TILE < W ? w0 + VO_RAF_TILE : W;                            \
        const T *src = buf + h * W * nc;                                                           \
        for (int64_t c = 0; c < nc; c++) {                                                         \
          T *dst = out + (c * H + h) * W;                                                          \
          for (int64_t w = w0; w < w1; w++) dst[w] = src[w * nc + c];                              \
        }                                                                                          \
      }                                                                                            \
  }

VO_DEFINE_RAF_COMMON(float, f32)
VO_DEFINE_RAF_COMMON(double, f64)

/* Loop functions for ctx's ISA: [0] any channel count, [1] full blocks. */
#ifdef VO_RAF_HAVE_AVX2
#define VO_RAF_PICK_AVX2(SUF)                                              \
  if (vo_cpu_effective_isa(ctx) == VO_ISA_AVX2) {                          \
    fwd[0] = vo_raf_fwd_##SUF##_avx2, fwd[1] = vo_raf_fwd_##SUF##_avx2_cb; \
    bwd[0] = vo_raf_bwd_##SUF##_avx2, bwd[1] = vo_raf_bwd_##SUF##_avx2_cb; \
  }
#else
#define VO_RAF_PICK_AVX2(SUF)
#endif
#define VO_DEFINE_RAF_PICK(SUF)                                                             \
  static inline void vo_raf_pick_##SUF(const vo_context *ctx, vo_raf_fwd_##SUF##_fn fwd[2], \
                                       vo_raf_bwd_##SUF##_fn bwd[2]) {                      \
    (void)ctx;                                                                              \
    fwd[0] = vo_raf_fwd_##SUF##_generic, fwd[1] = vo_raf_fwd_##SUF##_generic_cb;            \
    bwd[0] = vo_raf_bwd_##SUF##_generic, bwd[1] = vo_raf_bwd_##SUF##_generic_cb;            \
    VO_RAF_PICK_AVX2(SUF)                                                                   \
  }
VO_DEFINE_RAF_PICK(f32)
VO_DEFINE_RAF_PICK(f64)

#endif /* VISIONOPS_CPU_ROI_ALIGN_FAST_H */
