/*
 * CPU kernels for roi_pool (forward, with argmax) and roi_pool_backward:
 * the scheduling of kernels/roi_pool.h's arithmetic (torchvision's: rounded
 * RoI corners, "+1" sizes, bin edges by floor/ceil in the compute type), so
 * results match it exactly. The forward runs channels-last (vectorised over
 * channels; see below) or, when a cost model finds that cheaper (a few RoIs
 * over a large map) or the workspace tile does not fit the context's limit,
 * as the plain per-(RoI, channel block) NCHW scan; both give the same bits.
 * Per-dtype code is cpu/roi_pool.inc, instantiated with
 * kernels/dtype_begin.h.
 */
#include <math.h>
#include <string.h>

#include "cpu/common.h"
#include "cpu/transpose.h"
#include "kernels/roi_pool.h"

/* ---------------------------------------------------------- channels-last
 * Why: in NCHW a bin's row is a handful of scattered floats per channel, so
 * the plain scan is a short, branchy, latency-bound loop (and each (RoI,
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
#define VO_RP_CB 64            /* most channels per block */
#define VO_RP_BACKWARD_AHEAD 4 /* RoIs ahead the backward prefetches grad and argmax */
#define VO_RP_ROW 32           /* consecutive bins computed before their outputs are stored */
#define VO_RP_STREAM_BINS 1024 /* most bins of a RoI gathered per thread to stream its outputs */
#define VO_RP_TILE_TARGET ((size_t)16 << 20) /* preferred tile size (bytes) */
#define VO_RP_SCAN_CB 16                     /* channels per work item of the scan */
/* Cost model of the choice between the paths, per channel, in ns on one
 * core (fitted to 1..1,000 proposals on 2x256x200x272 at 7x7 and 14x14;
 * see bench/RESULTS.md): the scan per sample and per bin; the channels-last
 * loop per sample and per bin; the tile transpose per element. The scan
 * wins for a few RoIs spread over a large map, where the transpose of the
 * box they span outweighs the faster loop. Refitted when the scan began
 * to take four channels a pass (1.7 -> 1.3 ns a sample); the transpose's
 * 1.8 ns (0.86 before) also covers the tile's first touch and its short
 * rows, which the old figure missed: 3 RoIs at 14x14 took the channels-last
 * path at 6.9 ms where the scan takes 1.2 (torchvision 1.4). */
#define VO_RP_SCAN_NS 1.3
#define VO_RP_SCAN_BIN_NS 9.6
#define VO_RP_CL_NS 0.11
#define VO_RP_CL_BIN_NS 4.9
#define VO_RP_TRANSPOSE_NS 1.8

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cpu/roi_pool.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cpu/roi_pool.inc"
#include "kernels/dtype_end.h"

#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "cpu/roi_pool.inc"
#include "kernels/dtype_end.h"

#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "cpu/roi_pool.inc"
#include "kernels/dtype_end.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define VO_RP_HAVE_AVX2 1
__attribute__((target("avx2,fma"))) static void vo_rp_cl_bin_f64_avx2(
    const double *src, int64_t sh, int64_t sw, int64_t width, int64_t h0, int64_t h1, int64_t w0,
    int64_t w1, int64_t cb, double *best, int32_t *idx) {
  vo_rp_cl_bin_body_f64(src, sh, sw, width, h0, h1, w0, w1, cb, best, idx);
}

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
    vo_rp_cl_bin_scalar_f32(src + c, sh, sw, width, h0, h1, w0, w1, cb - c, best + c, idx + c);
}

/* One step of the update rule on 16 lanes: the mask of the lanes where
 * !(v <= best) and v is not NaN. */
#define VO_RP_AVX512_STEP(v, b, i, iv)                                                    \
  do {                                                                                    \
    const __mmask16 m_ =                                                                  \
        _mm512_mask_cmp_ps_mask(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v, b, _CMP_NLE_UQ); \
    b = _mm512_mask_mov_ps(b, m_, v);                                                     \
    i = _mm512_mask_mov_epi32(i, m_, iv);                                                 \
  } while (0)

/* float32 on 16 lanes with AVX-512: the compares give a mask, and masked
 * moves replace blendv (three micro-ops each on recent Intel cores); the
 * last cb % 16 channels in masked lanes. 0.73-0.84 of the AVX2 loop's
 * time on roi_pool of 1,000 proposals (bench/RESULTS.md). */
__attribute__((target("avx512f"))) static void vo_rp_cl_bin_f32_avx512(
    const float *src, int64_t sh, int64_t sw, int64_t width, int64_t h0, int64_t h1, int64_t w0,
    int64_t w1, int64_t cb, float *best, int32_t *idx) {
  const __m512 nan = _mm512_set1_ps(NAN);
  const __m512i none = _mm512_set1_epi32(-1);
  int64_t c = 0;
  for (; c + 32 <= cb; c += 32) {
    __m512 b0 = nan, b1 = nan;
    __m512i i0 = none, i1 = none;
    for (int64_t h = h0; h < h1; h++) {
      for (int64_t w = w0; w < w1; w++) {
        const float *s = src + h * sh + w * sw + c;
        const __m512i iv = _mm512_set1_epi32((int32_t)(h * width + w));
        const __m512 v0 = _mm512_loadu_ps(s), v1 = _mm512_loadu_ps(s + 16);
        VO_RP_AVX512_STEP(v0, b0, i0, iv);
        VO_RP_AVX512_STEP(v1, b1, i1, iv);
      }
    }
    _mm512_storeu_ps(best + c, b0);
    _mm512_storeu_ps(best + c + 16, b1);
    _mm512_storeu_si512(idx + c, i0);
    _mm512_storeu_si512(idx + c + 16, i1);
  }
  for (; c < cb; c += 16) {
    const __mmask16 lanes = cb - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (cb - c)) - 1);
    __m512 b0 = nan;
    __m512i i0 = none;
    for (int64_t h = h0; h < h1; h++) {
      for (int64_t w = w0; w < w1; w++) {
        const __m512i iv = _mm512_set1_epi32((int32_t)(h * width + w));
        const __m512 v0 = _mm512_maskz_loadu_ps(lanes, src + h * sh + w * sw + c);
        VO_RP_AVX512_STEP(v0, b0, i0, iv);
      }
    }
    _mm512_mask_storeu_ps(best + c, lanes, b0);
    _mm512_mask_storeu_epi32(idx + c, lanes, i0);
  }
}

/* The tile transpose of float32 planes with unit column stride in 8x8
 * blocks (cpu/transpose.h), the columns left over by the scalar loop. */
__attribute__((target("avx2"))) static void vo_rp_cl_transpose_f32_avx2(const vo_roi_pool_params *p,
                                                                        int64_t row, int64_t w0,
                                                                        int64_t w1, int64_t c0,
                                                                        int64_t cb, float *tile) {
  const vo_view *in = p->input;
  if (in->stride[3] == 1) {
    const int64_t b = row / p->height, h = row % p->height;
    const float *src = (const float *)vo_view_addr(in) + b * in->stride[0] + c0 * in->stride[1] +
                       h * in->stride[2] + w0;
    w0 += vo_cpu_planes_to_nhwc_f32_avx2(src, in->stride[1], cb, w1 - w0,
                                         tile + (row * p->width + w0) * cb);
  }
  if (w0 < w1) vo_rp_cl_transpose_f32(p, row, w0, w1, c0, cb, tile);
}

/* Eight bins' float32 maxima to the RoI buffer's channel runs, moved in
 * 8x8 blocks (a strided scalar copy was a third of the forward's own time
 * at 7x7 once argmax could be omitted). */
__attribute__((target("avx2"))) static void vo_rp_cl_runs8_f32_avx2(const float *rows, int64_t rs,
                                                                    int64_t nc, float *dst,
                                                                    int64_t ds) {
  vo_cpu_rows8_to_runs_f32_avx2(rows, rs, nc, NULL, dst, ds);
}
#endif

/* The kernels' view of a call: src is the input (forward) or grad. */
static vo_k_roi_pool_args vo_rp_args(const vo_roi_pool_params *p, const vo_view *src) {
  return vo_k_roi_pool_args_of(p->spatial_scale, p->pooled_height, p->pooled_width, p->batch_size,
                               p->channels, p->height, p->width, (int)p->rois->dtype,
                               p->rois->stride, src->stride, p->argmax ? p->argmax->stride : NULL);
}

/* The channels-last forward with this machine's bin function; 0 when its
 * tile does not fit. */
static int vo_rp_forward_cl(const vo_exec *ex, const vo_k_roi_pool_args *a) {
  const vo_roi_pool_params *p = &ex->p.roi_pool;
  const vo_dtype dt = ex->dtype;
  const int direct =
      (dt == VO_F32 || dt == VO_F64) && (p->input->stride[1] == 1 || p->channels == 1);
  vo_rp_cl_bin_fn_f64 bin64 = vo_rp_cl_bin_scalar_f64;
  vo_rp_cl_bin_fn_f32 bin32 = vo_rp_cl_bin_scalar_f32;
  vo_rp_cl_transpose_fn_f32 transpose32 = vo_rp_cl_transpose_f32;
  vo_rp_cl_runs8_fn_f32 runs8 = NULL; /* the scalar loop */
#ifdef VO_RP_HAVE_AVX2
  const vo_isa isa = vo_cpu_effective_isa(ex->ctx);
  if (isa >= VO_ISA_AVX2) {
    bin64 = vo_rp_cl_bin_f64_avx2;
    bin32 = isa >= VO_ISA_AVX512 ? vo_rp_cl_bin_f32_avx512 : vo_rp_cl_bin_f32_avx2;
    transpose32 = vo_rp_cl_transpose_f32_avx2;
    runs8 = vo_rp_cl_runs8_f32_avx2;
  }
#endif
  if (dt == VO_F64)
    return vo_rp_forward_cl_f64(ex, a, direct, bin64, vo_rp_cl_transpose_f64, vo_rp_cl_store_f64,
                                NULL);
  if (dt == VO_F16)
    return vo_rp_forward_cl_f32(ex, a, direct, bin32, vo_rp_cl_transpose_f16, vo_rp_cl_store_f16,
                                NULL);
  if (dt == VO_BF16)
    return vo_rp_forward_cl_f32(ex, a, direct, bin32, vo_rp_cl_transpose_bf16, vo_rp_cl_store_bf16,
                                NULL);
  return vo_rp_forward_cl_f32(ex, a, direct, bin32, transpose32, vo_rp_cl_store_f32, runs8);
}

vo_status vo_cpu_roi_pool(const vo_exec *ex) {
  const vo_roi_pool_params *p = &ex->p.roi_pool;
  if (p->out->numel == 0) return VO_OK;
  const vo_k_roi_pool_args a = vo_rp_args(p, p->input);
  if (vo_rp_forward_cl(ex, &a)) return VO_OK;
  const int64_t C = p->channels, blocks = (C + VO_RP_SCAN_CB - 1) / VO_RP_SCAN_CB;
  const int64_t items = p->rois->shape[0] * blocks;
  /* ~20 ns per (RoI, channel, bin) */
  const double bins = (double)(p->pooled_height * p->pooled_width);
  const int t = vo_cpu_threads_for(ex->ctx, items, 20.0 * (double)(p->rois->shape[0] * C) * bins);
  const vo_dtype dt = ex->dtype;
  VO_CPU_FOR(t, it, 0, items, {
    const int64_t k = it / blocks, c0 = it % blocks * VO_RP_SCAN_CB;
    const int64_t n = C - c0 < VO_RP_SCAN_CB ? C - c0 : VO_RP_SCAN_CB;
    switch (dt) {
      case VO_F64: vo_rp_forward_rc_f64(p, &a, k, c0, n); break;
      case VO_F16: vo_rp_forward_rc_f16(p, &a, k, c0, n); break;
      case VO_BF16: vo_rp_forward_rc_bf16(p, &a, k, c0, n); break;
      default: vo_rp_forward_rc_f32(p, &a, k, c0, n); break;
    }
  });
  return VO_OK;
}

/* Backward: grad_input[b, c, argmax] += grad. Work items are (image,
 * channel) planes, each owned by one thread that zeroes its plane and walks
 * the RoIs of its image in RoI order, (ph, pw) within each: the sums are
 * those of torchvision's serial loop, for any thread count, with no atomics. */
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
  const vo_k_roi_pool_args a = vo_rp_args(p, p->grad);
  VO_CPU_FOR(t, pl, 0, planes, {
    switch (dt) {
      case VO_F64: vo_rp_backward_plane_f64(p, &a, first, order, pl, vo_view_addr(p->out)); break;
      case VO_F16: vo_rp_backward_plane_f16(p, &a, first, order, pl, acc); break;
      case VO_BF16: vo_rp_backward_plane_bf16(p, &a, first, order, pl, acc); break;
      default: vo_rp_backward_plane_f32(p, &a, first, order, pl, vo_view_addr(p->out)); break;
    }
  });
  if (acc) vo_workspace_free(ex->ctx, ex->device, acc);
  vo_workspace_free(ex->ctx, ex->device, first);
  return VO_OK;
}
