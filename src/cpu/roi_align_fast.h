/*
 * roi_align's channels-last fast path (cpu/roi_align.c runs it): a block of
 * CB channels of one image as a tile [H,W,CB] in the compute type (the input
 * itself when its channels are already contiguous and need no conversion,
 * else a transposed copy per thread), so a sample's four corners are four
 * contiguous channel rows and the channel loop vectorises. Work items are
 * (image, channel block) pairs; each walks the image's RoIs in order, so in
 * the backward every grad_input element receives exactly the plain
 * kernel's additions in the plain kernel's order (bit-identical for any
 * thread count), then the tile is transposed back. A tile of one block (a
 * few MB) stays in cache far better than whole planes. Used when the sample
 * work outweighs the transposes and the tiles fit the workspace limit.
 * Here: RoIs grouped by image, the vectorised channel loops of one bin,
 * the AVX2 transposes and the plan's types; per compute type
 * (cpu/roi_align_fast.inc) the axis tables of a RoI's samples (from the
 * portable vo_k_ra_axis_at of kernels/roi_align.h), the tile transposes,
 * the plan and the fast forward and backward. Channels are independent, so
 * running each channel's arithmetic in exactly the order of the plain
 * kernels keeps every result bit-identical while the channel loop runs in
 * SIMD lanes. Builds use -ffp-contract=off, so no FMA is formed even in the
 * AVX2 versions.
 */
#ifndef VISIONOPS_CPU_ROI_ALIGN_FAST_H
#define VISIONOPS_CPU_ROI_ALIGN_FAST_H

#include "cpu/roi_common.h"
#include "cpu/transpose.h"

#define VO_RAF_TILE 16

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define VO_RAF_HAVE_AVX2 1
#define VO_RAF_AVX2_ATTR __attribute__((target("avx2,fma")))
/* the same loops in 16-lane vectors (no FMA is formed: -ffp-contract=off);
 * gcc needs telling to use 512-bit vectors, clang uses them unasked and
 * rejects the option in a target attribute */
#ifdef __clang__
#define VO_RAF_AVX512_ATTR __attribute__((target("avx512f,avx512vl")))
#else
#define VO_RAF_AVX512_ATTR __attribute__((target("avx512f,avx512vl,prefer-vector-width=512")))
#endif
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

/* Per compute type (VO_T, instantiated in cpu/roi_align_fast.inc) and ISA: one bin's channel loops
 * over its samples (iy, ix) in order, for nc channels (NC_CONST: a compile-time block size, so the
 * accumulators stay in registers). fwd: acc[c] += w0*x[p0+c] + w1*x[p1+c] + w2*x[p2+c] + w3*x[p3+c]
 * for each in-map sample, exactly the plain kernel's expression. bwd: for each in-map sample and
 * corner j in order, d[pj+c] += g[c]*wj/count; when count is a power of two, /count and *(1/count)
 * are the same correctly rounded value, and a multiply is much cheaper. */
#define VO_DEFINE_RAF_BIN(NAME, ATTR, NCF, NCB)                                                \
  ATTR static void VO_TN(vo_raf_fwd_##NAME)(                                                   \
      VO_T *restrict acc, const VO_T *restrict x, const VO_TN(vo_raf_axis) * ya, int64_t gh,   \
      const VO_TN(vo_raf_axis) * xa, int64_t gw, int64_t nc_arg) {                             \
    const int64_t nc = NCF;                                                                    \
    (void)nc_arg;                                                                              \
    for (int64_t iy = 0; iy < gh; iy++) {                                                      \
      if (!ya[iy].valid) continue;                                                             \
      const VO_T hy = ya[iy].h, ly = ya[iy].l;                                                 \
      for (int64_t ix = 0; ix < gw; ix++) {                                                    \
        if (!xa[ix].valid) continue;                                                           \
        const VO_T hx = xa[ix].h, lx = xa[ix].l;                                               \
        const VO_T w0 = hy * hx, w1 = hy * lx, w2 = ly * hx, w3 = ly * lx;                     \
        const VO_T *restrict x0 = x + ya[iy].off_lo + xa[ix].off_lo;                           \
        const VO_T *restrict x1 = x + ya[iy].off_lo + xa[ix].off_hi;                           \
        const VO_T *restrict x2 = x + ya[iy].off_hi + xa[ix].off_lo;                           \
        const VO_T *restrict x3 = x + ya[iy].off_hi + xa[ix].off_hi;                           \
        for (int64_t c = 0; c < nc; c++)                                                       \
          acc[c] += w0 * x0[c] + w1 * x1[c] + w2 * x2[c] + w3 * x3[c];                         \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  ATTR static void VO_TN(vo_raf_bwd_##NAME)(                                                   \
      VO_T *restrict d, const VO_T *restrict g, const VO_TN(vo_raf_axis) * ya, int64_t gh,     \
      const VO_TN(vo_raf_axis) * xa, int64_t gw, int64_t nc_arg, VO_T count, int pow2) {       \
    const int64_t nc = NCB;                                                                    \
    (void)nc_arg;                                                                              \
    const VO_T inv = (VO_T)1 / count;                                                          \
    for (int64_t iy = 0; iy < gh; iy++) {                                                      \
      if (!ya[iy].valid) continue;                                                             \
      const VO_T hy = ya[iy].h, ly = ya[iy].l;                                                 \
      for (int64_t ix = 0; ix < gw; ix++) {                                                    \
        if (!xa[ix].valid) continue;                                                           \
        const VO_T hx = xa[ix].h, lx = xa[ix].l;                                               \
        const VO_T w[4] = {hy * hx, hy * lx, ly * hx, ly * lx};                                \
        const int64_t pos[4] = {ya[iy].off_lo + xa[ix].off_lo, ya[iy].off_lo + xa[ix].off_hi,  \
                                ya[iy].off_hi + xa[ix].off_lo, ya[iy].off_hi + xa[ix].off_hi}; \
        for (int j = 0; j < 4; j++) {                                                          \
          VO_T *restrict dj = d + pos[j];                                                      \
          const VO_T wj = w[j];                                                                \
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
 * each bin's gradients and the samples' scalar work over more lanes. The
 * forward's block is CBF with AVX-512 and CBF_NARROW otherwise: float32 at
 * 32 channels (two zmm accumulators) took 0.86-0.96 of the time at 16 on
 * an AVX-512 Xeon, as each RoI's per-bin work is then shared by twice the
 * channels; 16 was the AVX2 machines' measured best. */
#define VO_RAF_CBF_F32 32
#define VO_RAF_CBF_NARROW_F32 16
#define VO_RAF_CBF_F64 8
#define VO_RAF_CBF_NARROW_F64 8
#define VO_RAF_CBB_F32 64
#define VO_RAF_CBB_F64 32

#ifdef VO_RAF_HAVE_AVX2
#define vo_raf_rows_to_nhwc_fast vo_cpu_planes_to_nhwc_f32_avx2
#define vo_raf_rows_from_nhwc_fast vo_cpu_nhwc_to_planes_f32_avx2
#else
#define vo_raf_rows_to_nhwc_fast(src, s1, nc, W, dst) ((void)(src), (void)(dst), (int64_t)0)
#define vo_raf_rows_from_nhwc_fast(src, nc, W, dst, s1) ((void)(src), (void)(dst), (int64_t)0)
#endif

/* 1 when count (a positive integer-valued float) is a power of two. */
static inline int vo_raf_pow2(double count) {
  int e;
  return frexp(count, &e) == 0.5;
}

/* Everything the fast path decides up front. */
typedef struct vo_raf_plan {
  char *meta;             /* geometry, batch indices, order, start */
  int64_t *order;         /* RoIs grouped by image */
  int64_t *start;         /* [N+1] */
  int direct;             /* the forward reads the input in place (channels-last) */
  int64_t cb;             /* channels per block */
  int64_t axis_y, axis_x; /* axis table entries per RoI, at most */
  char *scratch;          /* per thread: tile, then axis tables */
  size_t per_thread;      /* bytes of scratch per thread */
  int threads;
} vo_raf_plan;

static void vo_raf_plan_free(const vo_exec *ex, vo_raf_plan *plan) {
  vo_workspace_free(ex->ctx, ex->device, plan->scratch);
  vo_workspace_free(ex->ctx, ex->device, plan->meta);
}

/* RoI k's sort key: its top edge, then its index (a total order). */
typedef struct vo_raf_key {
  double y;
  int64_t k;
} vo_raf_key;
static int vo_raf_key_cmp(const void *a, const void *b) {
  const vo_raf_key *x = a, *y = b;
  if (x->y != y->y) return x->y < y->y ? -1 : 1;
  return (x->k > y->k) - (x->k < y->k);
}

/* The transposes of one image between the input's layout ([C,H,W] with
 * any strides, storage dtype) and a channels-last tile [H,W,C] in the
 * compute type, the loop selection, the plan and the fast forward and
 * backward, per compute type. */
#define VO_S_F32
#define VO_RAF_CBF VO_RAF_CBF_F32
#define VO_RAF_CBF_NARROW VO_RAF_CBF_NARROW_F32
#define VO_RAF_CBB VO_RAF_CBB_F32
#include "kernels/dtype_begin.h"
#include "cpu/roi_align_fast.inc"
#include "kernels/dtype_end.h"
#undef VO_RAF_CBF
#undef VO_RAF_CBF_NARROW
#undef VO_RAF_CBB
#define VO_S_F64
#define VO_RAF_CBF VO_RAF_CBF_F64
#define VO_RAF_CBF_NARROW VO_RAF_CBF_NARROW_F64
#define VO_RAF_CBB VO_RAF_CBB_F64
#include "kernels/dtype_begin.h"
#include "cpu/roi_align_fast.inc"
#include "kernels/dtype_end.h"
#undef VO_RAF_CBF
#undef VO_RAF_CBF_NARROW
#undef VO_RAF_CBB

#endif /* VISIONOPS_CPU_ROI_ALIGN_FAST_H */
