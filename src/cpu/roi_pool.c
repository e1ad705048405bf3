/*
 * CPU kernels for roi_pool (forward, with argmax) and roi_pool_backward,
 * following torchvision's arithmetic (rounded RoI corners, "+1" sizes, bin
 * edges by floor/ceil in the compute type) so results match it exactly.
 * The forward runs channels-last (vectorised over channels; see below) and
 * falls back to the per-(RoI, channel) NCHW scan when its workspace tile
 * does not fit the context's limit; both give the same bits.
 */
#include <math.h>
#include <string.h>

#include "cpu/common.h"

#ifdef VISIONOPS_HAVE_OPENMP
#define VO_RP_PRAGMA(x) _Pragma(#x)
#define VO_RP_OMP_FOR(t) VO_RP_PRAGMA(omp parallel for num_threads(t) schedule(static) if ((t) > 1))
#else
#define VO_RP_OMP_FOR(t) (void)(t);
#endif

/* Scaled, rounded RoI corners are kept within +-2^61, so sizes (+1) and bin
 * edges (+ start) stay far from int64 overflow; torchvision converts them to
 * int, which is undefined beyond 2^31. */
#define VO_RP_COORD_LIMIT ((int64_t)1 << 61)

/* One RoI: its image, rounded start corner and bin sizes (compute type). */
#define VO_DEFINE_GEOMETRY(T, SUF, ROUND, FLOOR, CEIL)                                           \
  typedef struct vo_rp_roi_##SUF {                                                               \
    int64_t batch, start_h, start_w;                                                             \
    T bin_h, bin_w;                                                                              \
  } vo_rp_roi_##SUF;                                                                             \
                                                                                                 \
  /* round half away from zero, saturated (inf included) */                                      \
  static int64_t vo_rp_round_##SUF(T v) {                                                        \
    v = ROUND(v);                                                                                \
    if (v >= (T)VO_RP_COORD_LIMIT) return VO_RP_COORD_LIMIT;                                     \
    if (v <= -(T)VO_RP_COORD_LIMIT) return -VO_RP_COORD_LIMIT;                                   \
    return (int64_t)v;                                                                           \
  }                                                                                              \
                                                                                                 \
  static void vo_rp_geometry_##SUF(const vo_roi_pool_params *p, int64_t k, vo_rp_roi_##SUF *g) { \
    const vo_view *r = p->rois;                                                                  \
    const int64_t row = k * r->stride[0], s1 = r->stride[1];                                     \
    const T scale = (T)p->spatial_scale;                                                         \
    g->batch = (int64_t)vo_load_host(r, row);                                                    \
    g->start_w = vo_rp_round_##SUF((T)vo_load_host(r, row + s1) * scale);                        \
    g->start_h = vo_rp_round_##SUF((T)vo_load_host(r, row + 2 * s1) * scale);                    \
    const int64_t end_w = vo_rp_round_##SUF((T)vo_load_host(r, row + 3 * s1) * scale);           \
    const int64_t end_h = vo_rp_round_##SUF((T)vo_load_host(r, row + 4 * s1) * scale);           \
    /* malformed RoIs are 1x1 */                                                                 \
    const int64_t rw = end_w - g->start_w + 1 > 1 ? end_w - g->start_w + 1 : 1;                  \
    const int64_t rh = end_h - g->start_h + 1 > 1 ? end_h - g->start_h + 1 : 1;                  \
    g->bin_h = (T)rh / (T)p->pooled_height;                                                      \
    g->bin_w = (T)rw / (T)p->pooled_width;                                                       \
  }                                                                                              \
                                                                                                 \
  /* Bin i of `bin` (pixels), shifted by start and clamped to [0, size]. */                      \
  static void vo_rp_bin_##SUF(T bin, int64_t i, int64_t start, int64_t size, int64_t *lo,        \
                              int64_t *hi) {                                                     \
    int64_t a = (int64_t)FLOOR((T)i * bin) + start;                                              \
    int64_t b = (int64_t)CEIL((T)(i + 1) * bin) + start;                                         \
    *lo = a < 0 ? 0 : a > size ? size : a;                                                       \
    *hi = b < 0 ? 0 : b > size ? size : b;                                                       \
  }

VO_DEFINE_GEOMETRY(float, f32, roundf, floorf, ceilf)
VO_DEFINE_GEOMETRY(double, f64, round, floor, ceil)

/* Forward of RoI k, channel c, for one storage type; half types (LOAD
 * converts) compare in float. The first non-NaN value starts the maximum,
 * later ones replace it only when strictly greater. */
#define VO_DEFINE_FORWARD_RC(T, SUF, NAME, LOAD, STORE)                                      \
  static void vo_rp_forward_rc_##NAME(const vo_roi_pool_params *p, const vo_rp_roi_##SUF *g, \
                                      int64_t k, int64_t c) {                                \
    const vo_view *in = p->input;                                                            \
    const int64_t sh = in->stride[2], sw = in->stride[3];                                    \
    const int64_t base = g->batch * in->stride[0] + c * in->stride[1];                       \
    const int64_t out0 = (k * p->channels + c) * p->pooled_height * p->pooled_width;         \
    int32_t *am = vo_view_addr(p->argmax_out);                                                       \
    for (int64_t ph = 0; ph < p->pooled_height; ph++) {                                      \
      int64_t h0, h1;                                                                        \
      vo_rp_bin_##SUF(g->bin_h, ph, g->start_h, p->height, &h0, &h1);                        \
      for (int64_t pw = 0; pw < p->pooled_width; pw++) {                                     \
        int64_t w0, w1;                                                                      \
        vo_rp_bin_##SUF(g->bin_w, pw, g->start_w, p->width, &w0, &w1);                       \
        T best = 0;                                                                          \
        int64_t idx = -1;                                                                    \
        if (h1 > h0 && w1 > w0) {                                                            \
          for (int64_t h = h0; h < h1; h++) {                                                \
            for (int64_t w = w0; w < w1; w++) {                                              \
              const T v = LOAD(base + h * sh + w * sw);                                      \
              if (idx < 0 ? !isnan(v) : v > best) {                                          \
                best = v;                                                                    \
                idx = h * p->width + w;                                                      \
              }                                                                              \
            }                                                                                \
          }                                                                                  \
          if (idx < 0) best = (T)NAN; /* every value was NaN */                              \
        }                                                                                    \
        const int64_t o = out0 + ph * p->pooled_width + pw;                                  \
        STORE(o, best);                                                                      \
        am[o] = (int32_t)idx; /* the op layer checked H*W <= 2^31 */                         \
      }                                                                                      \
    }                                                                                        \
  }

VO_DEFINE_FORWARD_RC(float, f32, f32, VO_LOAD_F32, VO_STORE_F32)
VO_DEFINE_FORWARD_RC(double, f64, f64, VO_LOAD_F64, VO_STORE_F64)
VO_DEFINE_FORWARD_RC(float, f32, f16, VO_LOAD_F16, VO_STORE_F16)
VO_DEFINE_FORWARD_RC(float, f32, bf16, VO_LOAD_BF16, VO_STORE_BF16)

/* ---------------------------------------------------------- channels-last
 * Why: in NCHW a bin's row is a handful of scattered floats per channel, so
 * the scan above is a short, branchy, latency-bound loop (and each (RoI,
 * channel) pair touches a fresh plane). With channels contiguous, every
 * pixel of a bin updates a whole block of channels at once: a branch-free,
 * vectorisable loop. The input is used directly when it already has unit
 * channel stride (float32/float64); otherwise a block of channels of every
 * image is transposed into a workspace tile [N][H][W][cb] (in the compute
 * type, so half types are converted once), sized to stay cache-resident.
 * Per lane the update rule is the scan's: "none yet" is best = NaN, and v
 * replaces best when !(v <= best) and v is not NaN, i.e. the first non-NaN
 * value starts the maximum and only a strictly greater one replaces it; the
 * pixels are visited in the same row-major order, so values and argmax are
 * bit-identical to the scan. */
#define VO_RP_CB 64                          /* most channels per block */
#define VO_RP_TILE_TARGET ((size_t)16 << 20) /* preferred tile size (bytes) */

/* One bin [h0,h1) x [w0,w1) of one RoI for `cb` channels: src points at
 * (row 0, column 0, first channel of the block); best/idx get the results. */
#define VO_DEFINE_CL_BIN(T, SUF, ISA, ATTR)                                                        \
  ATTR static void vo_rp_cl_bin_##SUF##_##ISA(const T *src, int64_t sh, int64_t sw, int64_t width, \
                                              int64_t h0, int64_t h1, int64_t w0, int64_t w1,      \
                                              int64_t cb, T *best, int32_t *idx) {                 \
    for (int64_t c = 0; c < cb; c++) {                                                             \
      best[c] = (T)NAN;                                                                            \
      idx[c] = -1;                                                                                 \
    }                                                                                              \
    for (int64_t h = h0; h < h1; h++) {                                                            \
      for (int64_t w = w0; w < w1; w++) {                                                          \
        const T *s = src + h * sh + w * sw;                                                        \
        const int32_t i = (int32_t)(h * width + w);                                                \
        for (int64_t c = 0; c < cb; c++) {                                                         \
          const T v = s[c], b = best[c];                                                           \
          const int u = !(v <= b) & (v == v);                                                      \
          best[c] = u ? v : b;                                                                     \
          idx[c] = u ? i : idx[c];                                                                 \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

VO_DEFINE_CL_BIN(float, f32, scalar, )
VO_DEFINE_CL_BIN(double, f64, scalar, )
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define VO_RP_HAVE_AVX2 1
VO_DEFINE_CL_BIN(double, f64, avx2, __attribute__((target("avx2,fma"))))

/* One step of the update rule on 8 lanes: m = !(v <= best) & (v == v). */
#define VO_RP_AVX2_STEP(v, b, i, iv)                                                      \
  do {                                                                                    \
    const __m256 m_ =                                                                     \
        _mm256_and_ps(_mm256_cmp_ps(v, b, _CMP_NLE_UQ), _mm256_cmp_ps(v, v, _CMP_ORD_Q)); \
    b = _mm256_blendv_ps(b, v, m_);                                                       \
    i = _mm256_blendv_ps(i, iv, m_);                                                      \
  } while (0)

/* float32 written out with intrinsics: the generic loop reloads and stores
 * best/idx for every pixel, while here 32 channels' state stays in
 * registers for the whole bin (the argmax lanes are carried as float bit
 * patterns, which blendv moves unchanged). */
__attribute__((target("avx2,fma"))) static void vo_rp_cl_bin_f32_avx2(
    const float *src, int64_t sh, int64_t sw, int64_t width, int64_t h0, int64_t h1, int64_t w0,
    int64_t w1, int64_t cb, float *best, int32_t *idx) {
  const __m256 nan = _mm256_set1_ps(NAN);
  const __m256 none = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  int64_t c = 0;
  for (; c + 32 <= cb; c += 32) {
    __m256 b0 = nan, b1 = nan, b2 = nan, b3 = nan;
    __m256 i0 = none, i1 = none, i2 = none, i3 = none;
    for (int64_t h = h0; h < h1; h++) {
      for (int64_t w = w0; w < w1; w++) {
        const float *s = src + h * sh + w * sw + c;
        const __m256 iv = _mm256_castsi256_ps(_mm256_set1_epi32((int32_t)(h * width + w)));
        const __m256 v0 = _mm256_loadu_ps(s), v1 = _mm256_loadu_ps(s + 8);
        const __m256 v2 = _mm256_loadu_ps(s + 16), v3 = _mm256_loadu_ps(s + 24);
        VO_RP_AVX2_STEP(v0, b0, i0, iv);
        VO_RP_AVX2_STEP(v1, b1, i1, iv);
        VO_RP_AVX2_STEP(v2, b2, i2, iv);
        VO_RP_AVX2_STEP(v3, b3, i3, iv);
      }
    }
    _mm256_storeu_ps(best + c, b0);
    _mm256_storeu_ps(best + c + 8, b1);
    _mm256_storeu_ps(best + c + 16, b2);
    _mm256_storeu_ps(best + c + 24, b3);
    _mm256_storeu_ps((float *)(idx + c), i0);
    _mm256_storeu_ps((float *)(idx + c + 8), i1);
    _mm256_storeu_ps((float *)(idx + c + 16), i2);
    _mm256_storeu_ps((float *)(idx + c + 24), i3);
  }
  for (; c + 8 <= cb; c += 8) {
    __m256 b0 = nan, i0 = none;
    for (int64_t h = h0; h < h1; h++) {
      for (int64_t w = w0; w < w1; w++) {
        const __m256 iv = _mm256_castsi256_ps(_mm256_set1_epi32((int32_t)(h * width + w)));
        const __m256 v0 = _mm256_loadu_ps(src + h * sh + w * sw + c);
        VO_RP_AVX2_STEP(v0, b0, i0, iv);
      }
    }
    _mm256_storeu_ps(best + c, b0);
    _mm256_storeu_ps((float *)(idx + c), i0);
  }
  /* the last cb % 8 channels */
  if (c < cb)
    vo_rp_cl_bin_f32_scalar(src + c, sh, sw, width, h0, h1, w0, w1, cb - c, best + c, idx + c);
}
#endif

/* Stores one bin's results for channels [c0, c0 + cb) of RoI k. */
#define VO_DEFINE_CL_STORE(T, NAME, STORE)                                              \
  static void vo_rp_cl_store_##NAME(const vo_roi_pool_params *p, int64_t o, int64_t cb, \
                                    const T *best, const int32_t *idx) {                \
    const int64_t step = p->pooled_height * p->pooled_width;                            \
    int32_t *am = vo_view_addr(p->argmax_out);                                                  \
    for (int64_t c = 0; c < cb; c++, o += step) {                                       \
      STORE(o, best[c]);                                                                \
      am[o] = idx[c];                                                                   \
    }                                                                                   \
  }
VO_DEFINE_CL_STORE(float, f32, VO_STORE_F32)
VO_DEFINE_CL_STORE(double, f64, VO_STORE_F64)
VO_DEFINE_CL_STORE(float, f16, VO_STORE_F16)
VO_DEFINE_CL_STORE(float, bf16, VO_STORE_BF16)

/* Tile rows: tile[((b*H + h)*W + w)*cb + c] = input[b, c0 + c, h, w]. */
#define VO_DEFINE_CL_TRANSPOSE(T, NAME, LOAD)                                                 \
  static void vo_rp_cl_transpose_##NAME(const vo_roi_pool_params *p, int64_t row, int64_t c0, \
                                        int64_t cb, T *tile) {                                \
    const vo_view *in = p->input;                                                             \
    const int64_t b = row / p->height, h = row % p->height, width = p->width;                 \
    T *dst = tile + row * width * cb;                                                         \
    for (int64_t c = 0; c < cb; c++) {                                                        \
      const int64_t base = b * in->stride[0] + (c0 + c) * in->stride[1] + h * in->stride[2];  \
      for (int64_t w = 0; w < width; w++) dst[w * cb + c] = LOAD(base + w * in->stride[3]);   \
    }                                                                                         \
  }
VO_DEFINE_CL_TRANSPOSE(float, f32, VO_LOAD_F32)
VO_DEFINE_CL_TRANSPOSE(double, f64, VO_LOAD_F64)
VO_DEFINE_CL_TRANSPOSE(float, f16, VO_LOAD_F16)
VO_DEFINE_CL_TRANSPOSE(float, bf16, VO_LOAD_BF16)

/* The channels-last forward for compute type T. Returns 0 (having written
 * nothing) when the tile does not fit the workspace limit, so the caller
 * falls back to the scan. */
#define VO_DEFINE_CL_FORWARD(T, SUF)                                                         \
  static int vo_rp_forward_cl_##SUF(const vo_exec *ex) {                                     \
    const vo_roi_pool_params *p = &ex->p.roi_pool;                                           \
    const vo_view *in = p->input;                                                            \
    const vo_dtype dt = ex->dtype;                                                           \
    const int64_t C = p->channels, K = p->rois->shape[0];                                    \
    const int64_t rows = p->batch_size * p->height, pixels = rows * p->width;                \
    const int direct = (dt == VO_F32 || dt == VO_F64) && (in->stride[1] == 1 || C == 1);     \
    int64_t cb = C < VO_RP_CB ? C : VO_RP_CB;                                                \
    T *tile = NULL;                                                                          \
    if (!direct) {                                                                           \
      /* smaller blocks keep the tile in cache, and let it fit a small limit */              \
      const int64_t min_cb = cb < 8 ? cb : 8;                                                \
      const uint64_t want = ex->ctx->workspace_limit < VO_RP_TILE_TARGET                     \
                                ? ex->ctx->workspace_limit                                   \
                                : VO_RP_TILE_TARGET;                                         \
      while (cb > min_cb && (uint64_t)pixels * (uint64_t)cb * sizeof(T) > want) cb /= 2;     \
      if (cb < min_cb) cb = min_cb;                                                          \
      const uint64_t bytes = (uint64_t)pixels * (uint64_t)cb * sizeof(T);                    \
      if (bytes > ex->ctx->workspace_limit || bytes > SIZE_MAX) return 0;                    \
      tile = vo_workspace_alloc(ex->ctx, ex->device, (size_t)bytes, ex->op_name);            \
      if (!tile) {                                                                           \
        vo_clear_error(); /* the scan needs no workspace */                                  \
        return 0;                                                                            \
      }                                                                                      \
    }                                                                                        \
    void (*bin_fn)(const T *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, \
                   int64_t, T *, int32_t *) = vo_rp_cl_bin_##SUF##_scalar;                   \
    VO_RP_SELECT_AVX2(SUF);                                                                  \
    for (int64_t c0 = 0; c0 < C; c0 += cb) {                                                 \
      const int64_t n = C - c0 < cb ? C - c0 : cb;                                           \
      if (!direct) {                                                                         \
        const int tt = vo_cpu_threads_for(ex->ctx, rows, 0.5 * (double)(pixels * n));        \
        VO_RP_OMP_FOR(tt)                                                                    \
        for (int64_t r = 0; r < rows; r++) VO_RP_TRANSPOSE_##SUF(r, c0, n);                  \
      }                                                                                      \
      /* ~5 ns per (RoI, bin, channel): a bin's pixels in vector registers */                \
      const double bins = (double)(p->pooled_height * p->pooled_width);                      \
      const int t = vo_cpu_threads_for(ex->ctx, K, 5.0 * (double)(K * n) * bins);            \
      VO_RP_OMP_FOR(t)                                                                       \
      for (int64_t k = 0; k < K; k++) {                                                      \
        vo_rp_roi_##SUF g;                                                                   \
        vo_rp_geometry_##SUF(p, k, &g);                                                      \
        const T *src;                                                                        \
        int64_t sh, sw;                                                                      \
        if (direct) {                                                                        \
          src = (const T *)vo_view_addr(in) + g.batch * in->stride[0] + c0 * in->stride[1];          \
          sh = in->stride[2];                                                                \
          sw = in->stride[3];                                                                \
        } else {                                                                             \
          src = tile + g.batch * p->height * p->width * n;                                   \
          sh = p->width * n;                                                                 \
          sw = n;                                                                            \
        }                                                                                    \
        T best[VO_RP_CB];                                                                    \
        int32_t idx[VO_RP_CB];                                                               \
        for (int64_t ph = 0; ph < p->pooled_height; ph++) {                                  \
          int64_t h0, h1;                                                                    \
          vo_rp_bin_##SUF(g.bin_h, ph, g.start_h, p->height, &h0, &h1);                      \
          for (int64_t pw = 0; pw < p->pooled_width; pw++) {                                 \
            int64_t w0, w1;                                                                  \
            vo_rp_bin_##SUF(g.bin_w, pw, g.start_w, p->width, &w0, &w1);                     \
            if (h1 > h0 && w1 > w0) {                                                        \
              bin_fn(src, sh, sw, p->width, h0, h1, w0, w1, n, best, idx);                   \
            } else {                                                                         \
              for (int64_t c = 0; c < n; c++) {                                              \
                best[c] = 0;                                                                 \
                idx[c] = -1;                                                                 \
              }                                                                              \
            }                                                                                \
            const int64_t o = ((k * C + c0) * p->pooled_height + ph) * p->pooled_width + pw; \
            VO_RP_STORE_##SUF(o, n, best, idx);                                              \
          }                                                                                  \
        }                                                                                    \
      }                                                                                      \
    }                                                                                        \
    if (tile) vo_workspace_free(ex->ctx, ex->device, tile);                                  \
    return 1;                                                                                \
  }

#ifdef VO_RP_HAVE_AVX2
#define VO_RP_SELECT_AVX2(SUF) \
  if (vo_cpu_effective_isa(ex->ctx) == VO_ISA_AVX2) bin_fn = vo_rp_cl_bin_##SUF##_avx2
#else
#define VO_RP_SELECT_AVX2(SUF) (void)0
#endif
#define VO_RP_TRANSPOSE_f32(r, c0, n)                           \
  (dt == VO_F16    ? vo_rp_cl_transpose_f16(p, r, c0, n, tile)  \
   : dt == VO_BF16 ? vo_rp_cl_transpose_bf16(p, r, c0, n, tile) \
                   : vo_rp_cl_transpose_f32(p, r, c0, n, tile))
#define VO_RP_TRANSPOSE_f64(r, c0, n) vo_rp_cl_transpose_f64(p, r, c0, n, tile)
#define VO_RP_STORE_f32(o, n, best, idx)                     \
  (dt == VO_F16    ? vo_rp_cl_store_f16(p, o, n, best, idx)  \
   : dt == VO_BF16 ? vo_rp_cl_store_bf16(p, o, n, best, idx) \
                   : vo_rp_cl_store_f32(p, o, n, best, idx))
#define VO_RP_STORE_f64(o, n, best, idx) vo_rp_cl_store_f64(p, o, n, best, idx)

VO_DEFINE_CL_FORWARD(float, f32)
VO_DEFINE_CL_FORWARD(double, f64)

vo_status vo_cpu_roi_pool(const vo_exec *ex) {
  const vo_roi_pool_params *p = &ex->p.roi_pool;
  if (p->out->numel == 0) return VO_OK;
  if (ex->dtype == VO_F64 ? vo_rp_forward_cl_f64(ex) : vo_rp_forward_cl_f32(ex)) return VO_OK;
  const int64_t items = p->rois->shape[0] * p->channels;
  /* the plain scan: ~20 ns per (RoI, channel, bin) */
  const int t = vo_cpu_threads_for(
      ex->ctx, items, 20.0 * (double)items * (double)(p->pooled_height * p->pooled_width));
  const vo_dtype dt = ex->dtype;
  VO_RP_OMP_FOR(t)
  for (int64_t it = 0; it < items; it++) {
    const int64_t k = it / p->channels, c = it % p->channels;
    if (dt == VO_F64) {
      vo_rp_roi_f64 g;
      vo_rp_geometry_f64(p, k, &g);
      vo_rp_forward_rc_f64(p, &g, k, c);
    } else {
      vo_rp_roi_f32 g;
      vo_rp_geometry_f32(p, k, &g);
      if (dt == VO_F16)
        vo_rp_forward_rc_f16(p, &g, k, c);
      else if (dt == VO_BF16)
        vo_rp_forward_rc_bf16(p, &g, k, c);
      else
        vo_rp_forward_rc_f32(p, &g, k, c);
    }
  }
  return VO_OK;
}

/* Backward: grad_input[b, c, argmax] += grad. Work items are (image,
 * channel) planes, each owned by one thread that zeroes its plane and walks
 * the RoIs of its image in RoI order, (ph, pw) within each: the sums are
 * those of torchvision's serial loop, for any thread count, with no atomics.
 * `first`/`order` list the RoIs of image b as order[first[b] .. first[b+1]). */
#define VO_DEFINE_BACKWARD_PLANE(T, NAME, LOADG)                                             \
  static void vo_rp_backward_plane_##NAME(const vo_roi_pool_params *p, const int64_t *first, \
                                          const int64_t *order, int64_t pl, T *plane) {      \
    const vo_view *gr = p->grad, *am = p->argmax;                                            \
    const int32_t *amd = vo_view_addr(am);                                                           \
    const int64_t b = pl / p->channels, c = pl % p->channels;                                \
    const int64_t gs2 = gr->stride[2], gs3 = gr->stride[3];                                  \
    const int64_t as2 = am->stride[2], as3 = am->stride[3];                                  \
    memset(plane, 0, sizeof(T) * (size_t)(p->height * p->width));                            \
    for (int64_t j = first[b]; j < first[b + 1]; j++) {                                      \
      const int64_t k = order[j];                                                            \
      const int64_t gb = k * gr->stride[0] + c * gr->stride[1];                              \
      const int32_t *ab = amd + k * am->stride[0] + c * am->stride[1];                       \
      for (int64_t ph = 0; ph < p->pooled_height; ph++) {                                    \
        for (int64_t pw = 0; pw < p->pooled_width; pw++) {                                   \
          const int32_t a = ab[ph * as2 + pw * as3];                                         \
          if (a < 0) continue;                                                               \
          plane[a] += (T)LOADG(gb + ph * gs2 + pw * gs3);                                    \
        }                                                                                    \
      }                                                                                      \
    }                                                                                        \
  }

/* grad loads typed per dtype: vo_load_host switches on the dtype per element */
#define VO_LOADG_F32(i) (((const float *)vo_view_addr(gr))[i])
#define VO_LOADG_F64(i) (((const double *)vo_view_addr(gr))[i])
#define VO_LOADG_F16(i) vo_f16_to_f32(((const uint16_t *)vo_view_addr(gr))[i])
#define VO_LOADG_BF16(i) vo_bf16_to_f32(((const uint16_t *)vo_view_addr(gr))[i])
VO_DEFINE_BACKWARD_PLANE(float, f32, VO_LOADG_F32)
VO_DEFINE_BACKWARD_PLANE(double, f64, VO_LOADG_F64)
VO_DEFINE_BACKWARD_PLANE(float, f16, VO_LOADG_F16)
VO_DEFINE_BACKWARD_PLANE(float, bf16, VO_LOADG_BF16)

vo_status vo_cpu_roi_pool_backward(const vo_exec *ex) {
  const vo_roi_pool_params *p = &ex->p.roi_pool;
  if (p->out->numel == 0) return VO_OK;
  const int64_t n = p->batch_size, k_count = p->rois->shape[0];
  const int64_t hw = p->height * p->width, planes = n * p->channels;
  const int half = ex->dtype == VO_F16 || ex->dtype == VO_BF16;
  /* RoIs grouped by image (a stable counting sort); for half types, then a
   * float32 copy of grad_input, so no partial sum is rounded to 16 bits. */
  size_t lists = ((size_t)n + 1 + (size_t)k_count) * sizeof(int64_t);
  size_t acc_bytes = 0;
  if (half) {
    if ((uint64_t)p->out->numel > SIZE_MAX / sizeof(float))
      return vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: grad_input too large for a float32 workspace",
                     ex->op_name);
    acc_bytes = (size_t)p->out->numel * sizeof(float);
  }
  int64_t *first = vo_workspace_alloc(ex->ctx, ex->device, lists, ex->op_name);
  if (!first) return VO_ERROR_OUT_OF_MEMORY;
  int64_t *order = first + n + 1;
  float *acc = NULL;
  if (half) {
    acc = vo_workspace_alloc(ex->ctx, ex->device, acc_bytes, ex->op_name);
    if (!acc) {
      vo_workspace_free(ex->ctx, ex->device, first);
      return VO_ERROR_OUT_OF_MEMORY;
    }
  }
  memset(first, 0, sizeof(int64_t) * (size_t)(n + 1));
  for (int64_t k = 0; k < k_count; k++) {
    const int64_t b = (int64_t)vo_load_host(p->rois, k * p->rois->stride[0]);
    first[b + 1]++;
  }
  for (int64_t b = 0; b < n; b++) first[b + 1] += first[b];
  /* order[] filled with a moving cursor per image; first[] is restored after */
  for (int64_t k = 0; k < k_count; k++) {
    const int64_t b = (int64_t)vo_load_host(p->rois, k * p->rois->stride[0]);
    order[first[b]++] = k;
  }
  for (int64_t b = n; b > 0; b--) first[b] = first[b - 1];
  first[0] = 0;

  /* zeroing the planes, then ~2 ns per grad element */
  const int t = vo_cpu_threads_for(
      ex->ctx, planes, 0.1 * (double)planes * (double)hw + 2.0 * (double)p->grad->numel);
  const vo_dtype dt = ex->dtype;
  VO_RP_OMP_FOR(t)
  for (int64_t pl = 0; pl < planes; pl++) {
    if (!acc) {
      if (dt == VO_F64)
        vo_rp_backward_plane_f64(p, first, order, pl, (double *)vo_view_addr(p->out) + pl * hw);
      else
        vo_rp_backward_plane_f32(p, first, order, pl, (float *)vo_view_addr(p->out) + pl * hw);
    } else {
      float *plane = acc + pl * hw;
      if (dt == VO_F16)
        vo_rp_backward_plane_f16(p, first, order, pl, plane);
      else
        vo_rp_backward_plane_bf16(p, first, order, pl, plane);
      uint16_t *o = (uint16_t *)vo_view_addr(p->out) + pl * hw;
      if (dt == VO_F16)
        for (int64_t i = 0; i < hw; i++) o[i] = vo_f32_to_f16(plane[i]);
      else
        for (int64_t i = 0; i < hw; i++) o[i] = vo_f32_to_bf16(plane[i]);
    }
  }
  if (acc) vo_workspace_free(ex->ctx, ex->device, acc);
  vo_workspace_free(ex->ctx, ex->device, first);
  return VO_OK;
}
