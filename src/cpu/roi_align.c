/*
 * CPU kernels for roi_align (forward) and roi_align_backward, following
 * torchvision's arithmetic order so float32 results match it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/roi_align_fast.h"
#include "cpu/roi_common.h"

/* Forward item of the plain driver: the outputs of RoI k, channel c. */
static void vo_ra_forward_item_rc(const vo_exec *ex, const vo_k_roi_align_args *a,
                                  const vo_ra_roi *g, const void *tab, int64_t k, int64_t c) {
  const vo_roi_align_params *p = &ex->p.roi_align;
  const int64_t *s = a->src_stride, PH = p->pooled_height, PW = p->pooled_width;
  const int64_t base = g->batch * s[0] + c * s[1], o = (k * p->channels + c) * PH * PW;
  const void *in = vo_view_addr(p->input);
  void *out = vo_view_addr(p->out);
  switch (ex->dtype) {
    case VO_F64:
      vo_k_ra_channel_forward_f64((const double *)in + base, s[2], s[3], p->height, p->width,
                                  &g->t.f64, PH, PW, tab, (double *)out + o);
      break;
    case VO_F16:
      vo_k_ra_channel_forward_f16((const uint16_t *)in + base, s[2], s[3], p->height, p->width,
                                  &g->t.f32, PH, PW, tab, (uint16_t *)out + o);
      break;
    case VO_BF16:
      vo_k_ra_channel_forward_bf16((const uint16_t *)in + base, s[2], s[3], p->height, p->width,
                                   &g->t.f32, PH, PW, tab, (uint16_t *)out + o);
      break;
    default:
      vo_k_ra_channel_forward_f32((const float *)in + base, s[2], s[3], p->height, p->width,
                                  &g->t.f32, PH, PW, tab, (float *)out + o);
      break;
  }
}

/* Backward item: RoI k's contributions for channel c added to one [H,W]
 * plane (contiguous, compute type). */
static void vo_ra_backward_item_rc(const vo_exec *ex, const vo_k_roi_align_args *a,
                                   const vo_ra_roi *g, const void *tab, int64_t k, int64_t c,
                                   void *plane) {
  const vo_roi_align_params *p = &ex->p.roi_align;
  const int64_t *s = a->src_stride, PH = p->pooled_height, PW = p->pooled_width;
  const int64_t base = k * s[0] + c * s[1];
  const void *gr = vo_view_addr(p->grad);
  switch (ex->dtype) {
    case VO_F64:
      vo_k_ra_channel_backward_f64((const double *)gr + base, s[2], s[3], p->height, p->width,
                                   &g->t.f64, PH, PW, tab, plane);
      break;
    case VO_F16:
      vo_k_ra_channel_backward_f16((const uint16_t *)gr + base, s[2], s[3], p->height, p->width,
                                   &g->t.f32, PH, PW, tab, plane);
      break;
    case VO_BF16:
      vo_k_ra_channel_backward_bf16((const uint16_t *)gr + base, s[2], s[3], p->height, p->width,
                                    &g->t.f32, PH, PW, tab, plane);
      break;
    default:
      vo_k_ra_channel_backward_f32((const float *)gr + base, s[2], s[3], p->height, p->width,
                                   &g->t.f32, PH, PW, tab, plane);
      break;
  }
}

/* The plain kernels: forward (acc NULL) or backward into acc. */
static vo_status vo_ra_run(const vo_exec *ex, int backward, void *acc) {
  const vo_roi_align_params *p = &ex->p.roi_align;
  return vo_ra_drive(ex, p, ex->dtype == VO_F64, p->channels, vo_ra_forward_item_rc,
                     backward ? vo_ra_backward_item_rc : NULL, acc);
}

/* ------------------------------------------------------------ fast path
 *
 * Channels-last tiles: a block of CB channels of one image as [H,W,CB] in
 * the compute type (the input itself when its channels are already
 * contiguous and need no conversion, else a transposed copy per thread), so
 * a sample's four corners are four contiguous channel rows and the channel
 * loop vectorises. Work items are (image, channel block) pairs; each walks
 * the image's RoIs in order, so in the backward every grad_input element
 * receives exactly the plain kernel's additions in the plain kernel's order
 * (bit-identical for any thread count), then the tile is transposed back.
 * A tile of one block (a few MB) stays in cache far better than whole
 * planes. Used when the sample work outweighs the transposes and the tiles
 * fit the workspace limit; otherwise the plain kernels above run. */

/* Fast-path items are few and coarse: hand them out one at a time, so a
 * thread whose core is busy elsewhere does not hold the others up. */
#ifdef VISIONOPS_HAVE_OPENMP
#include <omp.h>
#define VO_RAF_THREAD() omp_get_thread_num()
#define VO_RAF_OMP_FOR(t) VO_PRAGMA(omp parallel for num_threads(t) schedule(dynamic, 1) if ((t) > 1))
#else
#define VO_RAF_THREAD() 0
#define VO_RAF_OMP_FOR(t) (void)(t);
#endif

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

#define VO_DEFINE_FAST(T, SUF, CBF, CBB)                                                           \
  static void vo_raf_sort_##SUF(const vo_k_ra_roi_##SUF *geo, int64_t *order, const int64_t *start,  \
                                int64_t N) {                                                       \
    vo_raf_key keys[256];                                                                          \
    for (int64_t b = 0; b < N; b++)                                                                \
      for (int64_t r0 = start[b]; r0 < start[b + 1]; r0 += 256) {                                  \
        const int64_t n = start[b + 1] - r0 < 256 ? start[b + 1] - r0 : 256;                       \
        for (int64_t i = 0; i < n; i++) {                                                          \
          const int64_t k = order[r0 + i];                                                         \
          /* NaN-free: the op layer rejects non-finite coordinates */                              \
          keys[i].y = (double)geo[k].start_h, keys[i].k = k;                                       \
        }                                                                                          \
        qsort(keys, (size_t)n, sizeof keys[0], vo_raf_key_cmp);                                    \
        for (int64_t i = 0; i < n; i++) order[r0 + i] = keys[i].k;                                 \
      }                                                                                            \
  }                                                                                                \
  /* Fills plan and returns 1 when the fast path should run; 0 for the                             \
   * plain kernels (nothing then stays allocated). */                                              \
  static int vo_raf_plan_##SUF(const vo_exec *ex, int backward, vo_raf_plan *plan,                 \
                               vo_k_ra_roi_##SUF **geo_out) {                                        \
    const vo_roi_align_params *p = &ex->p.roi_align;                                               \
    const int64_t num_rois = p->rois->shape[0], C = p->channels, N = p->batch_size;                \
    memset(plan, 0, sizeof *plan);                                                                 \
    /* few channels: too short a vector loop to pay for the transposes */                          \
    if (num_rois == 0 || C < 8 || p->height == 0 || p->width == 0) return 0;                       \
    const int64_t hw = p->height * p->width;                                                       \
    const vo_view *in = p->input;                                                                  \
    plan->direct =                                                                                 \
        !backward && in->stride[1] == 1 && (in->dtype == VO_F64 || in->dtype == VO_F32);           \
    const int64_t cbmax = backward ? (CBB) : (CBF);                                                \
    plan->cb = C < cbmax ? C : cbmax;                                                              \
    const size_t bytes = (size_t)num_rois * (sizeof(vo_k_ra_roi_##SUF) + 2 * sizeof(int64_t)) +      \
                         (size_t)(N + 1) * sizeof(int64_t);                                        \
    plan->meta = vo_workspace_alloc(ex->ctx, ex->device, bytes, ex->op_name);                      \
    if (!plan->meta) {                                                                             \
      vo_clear_error();                                                                            \
      return 0;                                                                                    \
    }                                                                                              \
    vo_k_ra_roi_##SUF *geo = (vo_k_ra_roi_##SUF *)plan->meta;                                          \
    int64_t *batch_of = (int64_t *)(plan->meta + (size_t)num_rois * sizeof *geo);                  \
    plan->order = batch_of + num_rois;                                                             \
    plan->start = plan->order + num_rois;                                                          \
    int64_t samples = 0;                                                                           \
    const vo_k_roi_align_args a = vo_roi_align_kernel_args(p, NULL);                                          \
    for (int64_t k = 0; k < num_rois; k++) {                                                       \
      vo_k_ra_geometry_##SUF(&a, vo_view_addr(p->rois), k, &geo[k]);                               \
      batch_of[k] = geo[k].batch;                                                                  \
      const int64_t e = vo_ra_table_entries(p, geo[k].grid_h, geo[k].grid_w);                      \
      samples = samples > INT64_MAX - e ? INT64_MAX : samples + e;                                 \
      const int64_t ay = vo_k_ra_mul(p->pooled_height, geo[k].grid_h);                               \
      const int64_t ax = vo_k_ra_mul(p->pooled_width, geo[k].grid_w);                                \
      if (ay > plan->axis_y) plan->axis_y = ay;                                                    \
      if (ax > plan->axis_x) plan->axis_x = ax;                                                    \
    }                                                                                              \
    const int64_t used = vo_raf_group(batch_of, num_rois, N, plan->order, plan->start);            \
    /* The forward may visit RoIs in any order: top to bottom (sorted in                           \
     * runs of 256), neighbours share the tile rows that are in cache. The                         \
     * backward keeps RoI order (it fixes each element's summation order). */                      \
    if (!backward) vo_raf_sort_##SUF(geo, plan->order, plan->start, N);                            \
    const uint64_t tile = plan->direct ? 0 : (uint64_t)vo_k_ra_mul(hw, plan->cb) * sizeof(T);        \
    /* Axis tables beyond a million entries only come from absurd adaptive                         \
     * grids (and the bound keeps the sizes below from overflowing). */                            \
    const int64_t max_axis = (int64_t)1 << 20;                                                     \
    const uint64_t axes =                                                                          \
        plan->axis_y > max_axis || plan->axis_x > max_axis                                         \
            ? UINT64_MAX                                                                           \
            : (uint64_t)(plan->axis_y + plan->axis_x) * sizeof(vo_raf_axis_##SUF);                 \
    const uint64_t limit = ex->ctx->workspace_limit;                                               \
    /* Transposing (and for the backward zeroing and transposing back)                             \
     * costs about one pass over each used image; a plain-kernel sample                            \
     * costs several scattered loads per channel. */                                               \
    if ((!plan->direct && samples < vo_k_ra_mul(used, hw) / 4) || tile > limit || axes > limit ||    \
        tile + axes > limit) {                                                                     \
      vo_workspace_free(ex->ctx, ex->device, plan->meta);                                          \
      plan->meta = NULL;                                                                           \
      return 0;                                                                                    \
    }                                                                                              \
    /* per-thread tile and axis tables, as many threads as the limit allows */                     \
    const uint64_t stage =                                                                         \
        backward ? (uint64_t)vo_k_ra_mul(p->pooled_height * p->pooled_width, plan->cb) * sizeof(T)   \
                 : 0;                                                                              \
    if (stage > limit || tile + axes + stage > limit) {                                            \
      vo_workspace_free(ex->ctx, ex->device, plan->meta);                                          \
      plan->meta = NULL;                                                                           \
      return 0;                                                                                    \
    }                                                                                              \
    plan->per_thread = (size_t)(tile + axes + stage + 64);                                         \
    const int64_t blocks = (C + plan->cb - 1) / plan->cb;                                          \
    /* ~1 ns a sample per channel, ~0.5 ns per transposed element */                               \
    const double cost = (double)samples * (double)C * (backward ? 1.5 : 1.0) +                     \
                        (plan->direct ? 0 : 0.5 * (double)used * (double)hw * (double)C);          \
    int t = vo_cpu_threads_for(                                                                    \
        ex->ctx, plan->direct ? vo_k_ra_mul(blocks, num_rois) : vo_k_ra_mul(blocks, used), cost);      \
    if ((uint64_t)t * plan->per_thread > limit) t = (int)(limit / plan->per_thread);               \
    plan->threads = t < 1 ? 1 : t;                                                                 \
    plan->scratch = vo_workspace_alloc(ex->ctx, ex->device,                                        \
                                       (size_t)plan->threads * plan->per_thread, ex->op_name);     \
    if (!plan->scratch) {                                                                          \
      vo_clear_error();                                                                            \
      vo_workspace_free(ex->ctx, ex->device, plan->meta);                                          \
      plan->meta = NULL;                                                                           \
      return 0;                                                                                    \
    }                                                                                              \
    *geo_out = geo;                                                                                \
    return 1;                                                                                      \
  }                                                                                                \
                                                                                                   \
  /* Scratch of thread `tid`: the tile, then the y and x axis tables. */                           \
  static T *vo_raf_scratch_##SUF(const vo_raf_plan *plan, int tid, vo_raf_axis_##SUF **ya,         \
                                 vo_raf_axis_##SUF **xa, size_t tile_bytes) {                      \
    char *mem = plan->scratch + (size_t)tid * plan->per_thread;                                    \
    void *axes = mem + (tile_bytes + 63) / 64 * 64, *tile = mem;                                   \
    *ya = axes;                                                                                    \
    *xa = *ya + plan->axis_y;                                                                      \
    return tile;                                                                                   \
  }                                                                                                \
                                                                                                   \
  /* RoI k's axis tables for a map of strides sh, sw. */                                           \
  static void vo_raf_axes_##SUF(const vo_roi_align_params *p, const vo_k_ra_roi_##SUF *g,            \
                                int64_t sh, int64_t sw, vo_raf_axis_##SUF *ya,                     \
                                vo_raf_axis_##SUF *xa) {                                           \
    vo_raf_axis_fill_##SUF(g->start_h, g->bin_h, g->grid_h, p->pooled_height, p->height, sh, ya);  \
    vo_raf_axis_fill_##SUF(g->start_w, g->bin_w, g->grid_w, p->pooled_width, p->width, sw, xa);    \
  }                                                                                                \
                                                                                                   \
  /* Forward of RoI k, channels [c0, c0+nc), from the channels-last map x                          \
   * (channel c0 at x, strides sh, sw). */                                                         \
  static void vo_raf_forward_roi_##SUF(const vo_exec *ex, vo_raf_fwd_##SUF##_fn fwd,               \
                                       const vo_k_ra_roi_##SUF *g, int64_t k, int64_t c0,            \
                                       int64_t nc, const T *x, int64_t sh, int64_t sw,             \
                                       vo_raf_axis_##SUF *ya, vo_raf_axis_##SUF *xa) {             \
    const vo_roi_align_params *p = &ex->p.roi_align;                                               \
    const int64_t pooled_w = p->pooled_width, bins = p->pooled_height * pooled_w;                  \
    const int64_t gh = g->grid_h, gw = g->grid_w;                                                  \
    T acc[CBF];                                                                                    \
    void *out = vo_view_addr(p->out);                                                                      \
    vo_raf_axes_##SUF(p, g, sh, sw, ya, xa);                                                       \
    for (int64_t ph = 0; ph < p->pooled_height; ph++) {                                            \
      for (int64_t pw = 0; pw < pooled_w; pw++) {                                                  \
        for (int64_t c = 0; c < nc; c++) acc[c] = 0;                                               \
        fwd(acc, x, ya + ph * gh, gh, xa + pw * gw, gw, nc);                                       \
        const int64_t o = (k * p->channels + c0) * bins + ph * pooled_w + pw;                      \
        switch (ex->dtype) {                                                                       \
          case VO_F16:                                                                             \
            for (int64_t c = 0; c < nc; c++)                                                       \
              ((uint16_t *)out)[o + c * bins] = vo_f32_to_f16((float)(acc[c] / g->count));         \
            break;                                                                                 \
          case VO_BF16:                                                                            \
            for (int64_t c = 0; c < nc; c++)                                                       \
              ((uint16_t *)out)[o + c * bins] = vo_f32_to_bf16((float)(acc[c] / g->count));        \
            break;                                                                                 \
          default:                                                                                 \
            for (int64_t c = 0; c < nc; c++) ((T *)out)[o + c * bins] = acc[c] / g->count;         \
            break;                                                                                 \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  static vo_status vo_raf_forward_##SUF(const vo_exec *ex, const vo_raf_plan *plan,                \
                                        const vo_k_ra_roi_##SUF *geo) {                              \
    const vo_roi_align_params *p = &ex->p.roi_align;                                               \
    const vo_view *in = p->input;                                                                  \
    const int64_t C = p->channels, N = p->batch_size, cb = plan->cb;                               \
    const int64_t blocks = (C + cb - 1) / cb, H = p->height, W = p->width;                         \
    vo_raf_fwd_##SUF##_fn fwd[2];                                                                  \
    vo_raf_bwd_##SUF##_fn bwd[2];                                                                  \
    vo_raf_pick_##SUF(ex->ctx, fwd, bwd);                                                          \
    const int avx2 = vo_cpu_effective_isa(ex->ctx) == VO_ISA_AVX2;                                 \
    const int t = plan->threads;                                                                   \
    if (plan->direct) {                                                                            \
      /* items: (RoI, channel block), the input read in place */                                   \
      const int64_t num_rois = p->rois->shape[0], items = num_rois * blocks;                       \
      VO_RAF_OMP_FOR(t)                                                                            \
      for (int64_t it = 0; it < items; it++) {                                                     \
        vo_raf_axis_##SUF *ya, *xa;                                                                \
        vo_raf_scratch_##SUF(plan, VO_RAF_THREAD(), &ya, &xa, 0);                                  \
        const int64_t k = plan->order[it / blocks], c0 = it % blocks * cb;                         \
        const int64_t nc = C - c0 < cb ? C - c0 : cb;                                              \
        const T *x = (const T *)vo_view_addr(in) + geo[k].batch * in->stride[0] + c0;                      \
        vo_raf_forward_roi_##SUF(ex, fwd[nc == (CBF)], &geo[k], k, c0, nc, x, in->stride[2],       \
                                 in->stride[3], ya, xa);                                           \
      }                                                                                            \
      return VO_OK;                                                                                \
    }                                                                                              \
    /* items: (image, channel block): transpose the tile, then every RoI */                        \
    const int64_t items = N * blocks;                                                              \
    VO_RAF_OMP_FOR(t)                                                                              \
    for (int64_t it = 0; it < items; it++) {                                                       \
      const int64_t b = it / blocks, c0 = it % blocks * cb;                                        \
      if (plan->start[b + 1] == plan->start[b]) continue;                                          \
      const int64_t nc = C - c0 < cb ? C - c0 : cb;                                                \
      vo_raf_axis_##SUF *ya, *xa;                                                                  \
      T *tile =                                                                                    \
          vo_raf_scratch_##SUF(plan, VO_RAF_THREAD(), &ya, &xa, (size_t)(H * W * cb) * sizeof(T)); \
      vo_raf_to_nhwc_##SUF(in, b, c0, nc, H, W, tile, avx2);                                       \
      for (int64_t r = plan->start[b]; r < plan->start[b + 1]; r++) {                              \
        const int64_t k = plan->order[r];                                                          \
        vo_raf_forward_roi_##SUF(ex, fwd[nc == (CBF)], &geo[k], k, c0, nc, tile, W *nc, nc, ya,    \
                                 xa);                                                              \
      }                                                                                            \
    }                                                                                              \
    return VO_OK;                                                                                  \
  }                                                                                                \
                                                                                                   \
  /* acc: grad_input [N,C,H,W], zeroed by vo_roi_backward_into. */                                 \
  static vo_status vo_raf_backward_##SUF(const vo_exec *ex, const vo_raf_plan *plan,               \
                                         const vo_k_ra_roi_##SUF *geo, T *acc) {                     \
    const vo_roi_align_params *p = &ex->p.roi_align;                                               \
    const vo_view *gr = p->grad;                                                                   \
    const int64_t C = p->channels, N = p->batch_size, cb = plan->cb;                               \
    const int64_t blocks = (C + cb - 1) / cb, H = p->height, W = p->width;                         \
    vo_raf_fwd_##SUF##_fn fwd[2];                                                                  \
    vo_raf_bwd_##SUF##_fn bwd[2];                                                                  \
    vo_raf_pick_##SUF(ex->ctx, fwd, bwd);                                                          \
    const int avx2 = vo_cpu_effective_isa(ex->ctx) == VO_ISA_AVX2;                                 \
    const int t = plan->threads;                                                                   \
    const int64_t items = N * blocks;                                                              \
    VO_RAF_OMP_FOR(t)                                                                              \
    for (int64_t it = 0; it < items; it++) {                                                       \
      const int64_t b = it / blocks, c0 = it % blocks * cb;                                        \
      if (plan->start[b + 1] == plan->start[b]) continue; /* stays zero */                         \
      const int64_t nc = C - c0 < cb ? C - c0 : cb;                                                \
      const vo_raf_bwd_##SUF##_fn f = bwd[nc == (CBB)];                                            \
      vo_raf_axis_##SUF *ya, *xa;                                                                  \
      T *tile =                                                                                    \
          vo_raf_scratch_##SUF(plan, VO_RAF_THREAD(), &ya, &xa, (size_t)(H * W * cb) * sizeof(T)); \
      memset(tile, 0, (size_t)(H * W * nc) * sizeof(T));                                           \
      /* RoI k's gradients for this block, staged as [bin][channel] */                             \
      T *gv = (T *)(xa + plan->axis_x);                                                            \
      const int64_t s0 = gr->stride[0], s1 = gr->stride[1], s2 = gr->stride[2];                    \
      const int64_t s3 = gr->stride[3], PH = p->pooled_height, PW = p->pooled_width;               \
      for (int64_t r = plan->start[b]; r < plan->start[b + 1]; r++) {                              \
        const int64_t k = plan->order[r];                                                          \
        const vo_k_ra_roi_##SUF *g = &geo[k];                                                        \
        const int64_t gh = g->grid_h, gw = g->grid_w;                                              \
        if (gh * gw == 0) continue;                                                                \
        const int pow2 = vo_raf_pow2((double)g->count);                                            \
        vo_raf_axes_##SUF(p, g, W *nc, nc, ya, xa);                                                \
        for (int64_t c = 0; c < nc; c++) {                                                         \
          const int64_t o = k * s0 + (c0 + c) * s1;                                                \
          for (int64_t ph = 0; ph < PH; ph++)                                                      \
            for (int64_t pw = 0; pw < PW; pw++)                                                    \
              gv[(ph * PW + pw) * nc + c] = (T)vo_load_host(gr, o + ph * s2 + pw * s3);            \
        }                                                                                          \
        for (int64_t ph = 0; ph < PH; ph++)                                                        \
          for (int64_t pw = 0; pw < PW; pw++)                                                      \
            f(tile, gv + (ph * PW + pw) * nc, ya + ph * gh, gh, xa + pw * gw, gw, nc, g->count,    \
              pow2);                                                                               \
      }                                                                                            \
      vo_raf_from_nhwc_##SUF(tile, nc, H, W, acc + (b * C + c0) * H * W, avx2);                    \
    }                                                                                              \
    return VO_OK;                                                                                  \
  }

VO_DEFINE_FAST(float, f32, VO_RAF_CBF_F32, VO_RAF_CBB_F32)
VO_DEFINE_FAST(double, f64, VO_RAF_CBF_F64, VO_RAF_CBB_F64)

vo_status vo_cpu_roi_align(const vo_exec *ex) {
  const vo_roi_align_params *p = &ex->p.roi_align;
  if (p->out->numel == 0) return VO_OK;
  vo_raf_plan plan;
  vo_status st;
  if (ex->dtype == VO_F64) {
    vo_k_ra_roi_f64 *geo;
    if (!vo_raf_plan_f64(ex, 0, &plan, &geo)) return vo_ra_run(ex, 0, NULL);
    st = vo_raf_forward_f64(ex, &plan, geo);
  } else {
    vo_k_ra_roi_f32 *geo;
    if (!vo_raf_plan_f32(ex, 0, &plan, &geo)) return vo_ra_run(ex, 0, NULL);
    st = vo_raf_forward_f32(ex, &plan, geo);
  }
  vo_raf_plan_free(ex, &plan);
  return st;
}

static vo_status vo_ra_backward_f32(const vo_exec *ex, float *acc) { return vo_ra_run(ex, 1, acc); }
static vo_status vo_ra_backward_f64(const vo_exec *ex, double *acc) { return vo_ra_run(ex, 1, acc); }

/* Zeroes the grad_input planes of images without RoIs: the fast path
 * writes every other element itself, so unlike vo_roi_backward_into it
 * never clears the whole of grad_input first. */
static void vo_raf_zero_unused(const vo_exec *ex, const vo_raf_plan *plan, void *acc, size_t elem) {
  const vo_roi_align_params *p = &ex->p.roi_align;
  const size_t image = (size_t)(p->channels * p->height * p->width) * elem;
  for (int64_t b = 0; b < p->batch_size; b++)
    if (plan->start[b + 1] == plan->start[b]) memset((char *)acc + (size_t)b * image, 0, image);
}

vo_status vo_cpu_roi_align_backward(const vo_exec *ex) {
  const vo_view *out = ex->p.roi_align.out;
  if (out->numel == 0) return VO_OK;
  vo_raf_plan plan;
  vo_status st;
  if (ex->dtype == VO_F64) {
    vo_k_ra_roi_f64 *geo;
    if (vo_raf_plan_f64(ex, 1, &plan, &geo)) {
      vo_raf_zero_unused(ex, &plan, vo_view_addr(out), sizeof(double));
      st = vo_raf_backward_f64(ex, &plan, geo, vo_view_addr(out));
      vo_raf_plan_free(ex, &plan);
      return st;
    }
  } else {
    vo_k_ra_roi_f32 *geo;
    if (vo_raf_plan_f32(ex, 1, &plan, &geo)) {
      /* half types accumulate in a float32 grad_input, stored at the end */
      float *acc = vo_view_addr(out);
      if (ex->dtype != VO_F32) {
        if ((uint64_t)out->numel > SIZE_MAX / sizeof(float)) {
          vo_raf_plan_free(ex, &plan);
          return vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: grad_input too large for a float32 workspace",
                         ex->op_name);
        }
        acc = vo_workspace_alloc(ex->ctx, ex->device, (size_t)out->numel * sizeof(float),
                                 ex->op_name);
        if (!acc) {
          vo_raf_plan_free(ex, &plan);
          return VO_ERROR_OUT_OF_MEMORY;
        }
      }
      vo_raf_zero_unused(ex, &plan, acc, sizeof(float));
      st = vo_raf_backward_f32(ex, &plan, geo, acc);
      if (acc != vo_view_addr(out)) {
        uint16_t *o = vo_view_addr(out);
        if (st == VO_OK && ex->dtype == VO_F16)
          for (int64_t i = 0; i < out->numel; i++) o[i] = vo_f32_to_f16(acc[i]);
        else if (st == VO_OK)
          for (int64_t i = 0; i < out->numel; i++) o[i] = vo_f32_to_bf16(acc[i]);
        vo_workspace_free(ex->ctx, ex->device, acc);
      }
      vo_raf_plan_free(ex, &plan);
      return st;
    }
  }
  return vo_roi_backward_into(ex, out, vo_ra_backward_f32, vo_ra_backward_f64);
}
