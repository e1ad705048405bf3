/*
 * CPU kernels for roi_align_rotated (forward) and roi_align_rotated_backward:
 * roi_align's plain driver (cpu/roi_common.h: per-RoI sample tables within
 * the workspace limit, forward items per (RoI, channel), a backward in which
 * one thread owns each grad_input plane, so sums never depend on the thread
 * count) over the rotated geometry and sample tables of
 * kernels/roi_align_rotated.h; and a channels-last forward for the float32
 * compute type (below), bit-identical to the plain one.
 */
#include "cpu/roi_common.h"

static vo_k_roi_align_rotated_args vo_rar_args(const vo_exec *ex, const vo_k_roi_align_args *a) {
  vo_k_roi_align_rotated_args ra;
  memset(&ra, 0, sizeof ra);
  ra.base = *a;
  ra.angle_scale = ex->p.roi_align_rotated.angle_scale;
  return ra;
}

static void vo_rar_geometry(const vo_exec *ex, const vo_k_roi_align_args *a, const void *rois,
                            int64_t k, int f64, vo_ra_roi *g) {
  const vo_k_roi_align_rotated_args ra = vo_rar_args(ex, a);
  const vo_k_ra_roi_f32 *b32 = &g->t.rf32.base;
  const vo_k_ra_roi_f64 *b64 = &g->t.rf64.base;
  if (f64) {
    vo_k_rar_geometry_f64(&ra, rois, k, &g->t.rf64);
    g->grid_h = b64->grid_h, g->grid_w = b64->grid_w, g->batch = b64->batch;
  } else {
    vo_k_rar_geometry_f32(&ra, rois, k, &g->t.rf32);
    g->grid_h = b32->grid_h, g->grid_w = b32->grid_w, g->batch = b32->batch;
  }
}

static void vo_rar_samples(const vo_ra_roi *g, const vo_roi_align_params *p, int64_t sh, int64_t sw,
                           int f64, void *tab) {
  if (f64)
    vo_k_rar_roi_samples_f64(&g->t.rf64, p->pooled_height, p->pooled_width, p->height, p->width, sh,
                             sw, tab);
  else
    vo_k_rar_roi_samples_f32(&g->t.rf32, p->pooled_height, p->pooled_width, p->height, p->width, sh,
                             sw, tab);
}

static const vo_ra_geometry_ops vo_rar_ops = {vo_rar_geometry, vo_rar_samples};

/* Forward item: the outputs of RoI k, channel c. */
static void vo_rar_forward_item(const vo_exec *ex, const vo_k_roi_align_args *a, const vo_ra_roi *g,
                                const void *tab, int64_t k, int64_t c) {
  const vo_roi_align_params *p = &ex->p.roi_align_rotated.base;
  const int64_t *s = a->src_stride, PH = p->pooled_height, PW = p->pooled_width;
  const int64_t base = g->batch * s[0] + c * s[1], o = (k * p->channels + c) * PH * PW;
  const void *in = vo_view_addr(p->input);
  void *out = vo_view_addr(p->out);
  switch (ex->dtype) {
    case VO_F64:
      vo_k_rar_channel_forward_f64((const double *)in + base, s[2], s[3], p->height, p->width,
                                   &g->t.rf64, PH, PW, tab, (double *)out + o);
      break;
    case VO_F16:
      vo_k_rar_channel_forward_f16((const uint16_t *)in + base, s[2], s[3], p->height, p->width,
                                   &g->t.rf32, PH, PW, tab, (uint16_t *)out + o);
      break;
    case VO_BF16:
      vo_k_rar_channel_forward_bf16((const uint16_t *)in + base, s[2], s[3], p->height, p->width,
                                    &g->t.rf32, PH, PW, tab, (uint16_t *)out + o);
      break;
    default:
      vo_k_rar_channel_forward_f32((const float *)in + base, s[2], s[3], p->height, p->width,
                                   &g->t.rf32, PH, PW, tab, (float *)out + o);
      break;
  }
}

/* Backward item: RoI k's contributions for channel c added to one [H,W]
 * plane (contiguous, compute type). */
static void vo_rar_backward_item(const vo_exec *ex, const vo_k_roi_align_args *a,
                                 const vo_ra_roi *g, const void *tab, int64_t k, int64_t c,
                                 void *plane) {
  const vo_roi_align_params *p = &ex->p.roi_align_rotated.base;
  const int64_t *s = a->src_stride, PH = p->pooled_height, PW = p->pooled_width;
  const int64_t base = k * s[0] + c * s[1];
  const void *gr = vo_view_addr(p->grad);
  switch (ex->dtype) {
    case VO_F64:
      vo_k_rar_channel_backward_f64((const double *)gr + base, s[2], s[3], p->height, p->width,
                                    &g->t.rf64, PH, PW, tab, plane);
      break;
    case VO_F16:
      vo_k_rar_channel_backward_f16((const uint16_t *)gr + base, s[2], s[3], p->height, p->width,
                                    &g->t.rf32, PH, PW, tab, plane);
      break;
    case VO_BF16:
      vo_k_rar_channel_backward_bf16((const uint16_t *)gr + base, s[2], s[3], p->height, p->width,
                                     &g->t.rf32, PH, PW, tab, plane);
      break;
    default:
      vo_k_rar_channel_backward_f32((const float *)gr + base, s[2], s[3], p->height, p->width,
                                    &g->t.rf32, PH, PW, tab, plane);
      break;
  }
}

/* ------------------------------------------------ channels-last paths
 *
 * For the float32 compute type (float32, float16, bfloat16 inputs). Items
 * are (image, block of up to VO_RAR_CB channels), each with a per-thread
 * tile [H, W, nc] in float32, walking the image's RoIs in RoI order over
 * their sample tables (pixel offsets: vo_k_rar_roi_samples with strides (W,
 * 1)) with the channel loop innermost, so a sample's weights and corners
 * serve nc channels at once. The forward copies the block into the tile
 * and takes each bin's mean; the backward scatters into a zeroed tile and
 * copies it back into grad_input. Each channel's arithmetic and order are
 * the plain kernels' (vo_k_ra_sample_sum's expression added in (iy, ix)
 * order, then / count; the backward's terms g * w / count in (RoI, bin,
 * sample, corner) order), so the bits are the plain paths'; test_backend_ops
 * compares the two (VO_ISA_SCALAR runs the plain path). float64 keeps the
 * plain path. */
#define VO_RAR_CB 16

typedef struct vo_rar_plan {
  char *meta, *mem;
  vo_ra_roi *geo;
  int64_t *tab_off, *order, *start; /* order[start[b] .. start[b+1]): image b's RoIs */
  vo_k_ra_sample_f32 *tab;
  float *tiles; /* per thread, tile_elems each */
  size_t tile_elems;
  int64_t blocks;
  int threads;
} vo_rar_plan;

static void vo_rar_plan_free(const vo_exec *ex, vo_rar_plan *plan) {
  vo_workspace_free(ex->ctx, ex->device, plan->mem);
  vo_workspace_free(ex->ctx, ex->device, plan->meta);
}

/* Fills plan (geometry, RoIs grouped by image, sample tables, tiles) and
 * returns 1, or returns 0 with nothing allocated when the channels-last
 * path does not apply: float64, the scalar ISA, few channels, or tables and
 * tiles beyond the workspace limit. */
static int vo_rar_plan_make(const vo_exec *ex, vo_rar_plan *plan) {
  const vo_roi_align_params *p = &ex->p.roi_align_rotated.base;
  const int64_t K = p->rois->shape[0], N = p->batch_size, C = p->channels;
  const int64_t H = p->height, W = p->width;
  memset(plan, 0, sizeof *plan);
  if (ex->dtype == VO_F64 || vo_cpu_effective_isa(ex->ctx) == VO_ISA_SCALAR || C < 8 || K == 0 ||
      H == 0 || W == 0)
    return 0;
  const size_t meta_bytes =
      (size_t)K * (sizeof(vo_ra_roi) + 3 * sizeof(int64_t)) + (size_t)(N + 1) * sizeof(int64_t);
  plan->meta = vo_workspace_alloc(ex->ctx, ex->device, meta_bytes, ex->op_name);
  if (!plan->meta) {
    vo_clear_error();
    return 0;
  }
  plan->geo = (vo_ra_roi *)plan->meta;
  plan->tab_off = (int64_t *)(plan->meta + (size_t)K * sizeof *plan->geo);
  plan->order = plan->tab_off + K;
  int64_t *batch_of = plan->order + K, *start = batch_of + K;
  plan->start = start;
  const vo_k_roi_align_args a = vo_roi_align_kernel_args(p, NULL);
  const void *rois = vo_view_addr(p->rois);
  int64_t total = 0;
  for (int64_t k = 0; k < K; k++) {
    vo_rar_geometry(ex, &a, rois, k, 0, &plan->geo[k]);
    plan->tab_off[k] = total;
    const int64_t e = vo_ra_table_entries(p, plan->geo[k].grid_h, plan->geo[k].grid_w);
    total = total > INT64_MAX - e ? INT64_MAX : total + e;
    batch_of[k] = plan->geo[k].batch;
    if (batch_of[k] < 0) { /* not a batch index (vo_call's checks refuse it): the plain path */
      vo_workspace_free(ex->ctx, ex->device, plan->meta);
      return 0;
    }
  }
  /* RoIs grouped by image, in RoI order within an image */
  memset(start, 0, (size_t)(N + 1) * sizeof *start);
  for (int64_t k = 0; k < K; k++) start[batch_of[k] + 1]++;
  for (int64_t b = 0; b < N; b++) start[b + 1] += start[b];
  for (int64_t k = 0; k < K; k++) plan->order[start[batch_of[k]]++] = k;
  for (int64_t b = N; b > 0; b--) start[b] = start[b - 1];
  start[0] = 0;
  plan->blocks = (C + VO_RAR_CB - 1) / VO_RAR_CB;
  const double limit = (double)ex->ctx->workspace_limit;
  const double tile_bytes = (double)H * (double)W * VO_RAR_CB * sizeof(float);
  const double tab_bytes = (double)total * sizeof(vo_k_ra_sample_f32);
  /* ~1 ns a sample per channel, ~1 ns per copied element */
  const double cost = (double)total * (double)C + (double)N * (double)H * (double)W * (double)C;
  int t = vo_cpu_threads_for(ex->ctx, N * plan->blocks, cost);
  if (t > 1 && tab_bytes + (double)t * tile_bytes > limit)
    t = (int)((limit - tab_bytes) / tile_bytes);
  /* the copies cost a pass over each image: worth it only with samples to spare */
  if (t < 1 || tab_bytes + tile_bytes > limit ||
      (double)total < (double)N * (double)H * (double)W / 4) {
    vo_workspace_free(ex->ctx, ex->device, plan->meta);
    return 0;
  }
  plan->threads = t;
  plan->tile_elems = (size_t)(H * W * VO_RAR_CB);
  plan->mem = vo_workspace_alloc(ex->ctx, ex->device,
                                 (size_t)tab_bytes + (size_t)t * plan->tile_elems * sizeof(float),
                                 ex->op_name);
  if (!plan->mem) {
    vo_clear_error();
    vo_workspace_free(ex->ctx, ex->device, plan->meta);
    return 0;
  }
  plan->tab = (void *)plan->mem;
  plan->tiles = (void *)(plan->mem + (size_t)tab_bytes);
  const int tt = vo_cpu_threads_for(ex->ctx, K, 2.0 * (double)total);
  VO_CPU_FOR(tt, k, 0, K, {
    vo_k_rar_roi_samples_f32(&plan->geo[k].t.rf32, p->pooled_height, p->pooled_width, H, W, W, 1,
                             plan->tab + plan->tab_off[k]);
  });
  return 1;
}

/* acc[c] += the bilinear samples tab[0..n) of channel c, c < nc, of the
 * channels-last tile x. */
static inline void vo_rar_bin_sum(float *restrict acc, const float *restrict x,
                                  const vo_k_ra_sample_f32 *tab, int64_t n, int64_t nc) {
  for (int64_t i = 0; i < n; i++) {
    const vo_k_ra_sample_f32 *e = &tab[i];
    if (e->pos[0] == VO_K_RA_OUTSIDE) continue;
    const float w0 = e->w[0], w1 = e->w[1], w2 = e->w[2], w3 = e->w[3];
    const float *restrict x0 = x + e->pos[0] * nc, *restrict x1 = x + e->pos[1] * nc;
    const float *restrict x2 = x + e->pos[2] * nc, *restrict x3 = x + e->pos[3] * nc;
    for (int64_t c = 0; c < nc; c++) acc[c] += w0 * x0[c] + w1 * x1[c] + w2 * x2[c] + w3 * x3[c];
  }
}

/* The backward of one bin: d[pos*nc + c] += g[c] * w / count over the
 * samples tab[0..n) and their corners, in order. When count is a power of
 * two, / count and * (1 / count) are the same correctly rounded value (as
 * in roi_align's fast path), and a multiply is much cheaper. */
static inline void vo_rar_bin_scatter(float *restrict d, const float *restrict g,
                                      const vo_k_ra_sample_f32 *tab, int64_t n, int64_t nc,
                                      float count, int pow2) {
  const float inv = 1.0f / count;
  for (int64_t i = 0; i < n; i++) {
    const vo_k_ra_sample_f32 *e = &tab[i];
    if (e->pos[0] == VO_K_RA_OUTSIDE) continue;
    for (int j = 0; j < 4; j++) {
      float *restrict dj = d + e->pos[j] * nc;
      const float wj = e->w[j];
      if (pow2)
        for (int64_t c = 0; c < nc; c++) dj[c] += g[c] * wj * inv;
      else
        for (int64_t c = 0; c < nc; c++) dj[c] += g[c] * wj / count;
    }
  }
}

/* tile[(h*W + w)*nc + c] = channel c0 + c of image b of `in`, in float32. */
static void vo_rar_to_tile(const vo_view *in, int64_t b, int64_t c0, int64_t nc, int64_t H,
                           int64_t W, float *tile) {
  const int64_t *st = in->stride;
  for (int64_t c = 0; c < nc; c++)
    for (int64_t h = 0; h < H; h++) {
      const int64_t o = b * st[0] + (c0 + c) * st[1] + h * st[2];
      float *dst = tile + h * W * nc + c;
      for (int64_t w = 0; w < W; w++) dst[w * nc] = (float)vo_load_host(in, o + w * st[3]);
    }
}

static void vo_rar_forward_fast(const vo_exec *ex, const vo_rar_plan *plan) {
  const vo_roi_align_params *p = &ex->p.roi_align_rotated.base;
  const int64_t C = p->channels, H = p->height, W = p->width;
  const int64_t bins = p->pooled_height * p->pooled_width, items = p->batch_size * plan->blocks;
  void *out = vo_view_addr(p->out);
  VO_CPU_FOR(plan->threads, it, 0, items, {
    const int64_t b = it / plan->blocks, c0 = it % plan->blocks * VO_RAR_CB;
    const int64_t nc = C - c0 < VO_RAR_CB ? C - c0 : VO_RAR_CB;
    if (plan->start[b + 1] == plan->start[b]) continue;
    float *tile = plan->tiles + (size_t)VO_CPU_THREAD() * plan->tile_elems;
    vo_rar_to_tile(p->input, b, c0, nc, H, W, tile);
    for (int64_t r = plan->start[b]; r < plan->start[b + 1]; r++) {
      const int64_t k = plan->order[r];
      const vo_k_ra_roi_f32 *g = &plan->geo[k].t.rf32.base;
      const int64_t n = g->grid_h * g->grid_w;
      for (int64_t bin = 0; bin < bins; bin++) {
        float acc[VO_RAR_CB] = {0};
        const vo_k_ra_sample_f32 *s = plan->tab + plan->tab_off[k] + bin * n;
        if (nc == VO_RAR_CB) /* a constant count: the channel loop in registers */
          vo_rar_bin_sum(acc, tile, s, n, VO_RAR_CB);
        else
          vo_rar_bin_sum(acc, tile, s, n, nc);
        const int64_t o = (k * C + c0) * bins + bin;
        for (int64_t c = 0; c < nc; c++) {
          const float v = acc[c] / g->count;
          if (ex->dtype == VO_F16)
            ((uint16_t *)out)[o + c * bins] = vo_f32_to_f16(v);
          else if (ex->dtype == VO_BF16)
            ((uint16_t *)out)[o + c * bins] = vo_f32_to_bf16(v);
          else
            ((float *)out)[o + c * bins] = v;
        }
      }
    }
  });
}

/* Into acc, the float32 grad_input [N,C,H,W] (every element written). */
static void vo_rar_backward_fast(const vo_exec *ex, const vo_rar_plan *plan, float *acc) {
  const vo_roi_align_params *p = &ex->p.roi_align_rotated.base;
  const vo_view *gr = p->grad;
  const int64_t C = p->channels, H = p->height, W = p->width, PW = p->pooled_width;
  const int64_t bins = p->pooled_height * PW, items = p->batch_size * plan->blocks;
  VO_CPU_FOR(plan->threads, it, 0, items, {
    const int64_t b = it / plan->blocks, c0 = it % plan->blocks * VO_RAR_CB;
    const int64_t nc = C - c0 < VO_RAR_CB ? C - c0 : VO_RAR_CB;
    float *dst = acc + (b * C + c0) * H * W;
    if (plan->start[b + 1] == plan->start[b]) {
      memset(dst, 0, (size_t)(nc * H * W) * sizeof(float));
      continue;
    }
    float *tile = plan->tiles + (size_t)VO_CPU_THREAD() * plan->tile_elems;
    memset(tile, 0, (size_t)(H * W * nc) * sizeof(float));
    for (int64_t r = plan->start[b]; r < plan->start[b + 1]; r++) {
      const int64_t k = plan->order[r];
      const vo_k_ra_roi_f32 *g = &plan->geo[k].t.rf32.base;
      const int64_t n = g->grid_h * g->grid_w;
      if (n == 0) continue;
      int e2;
      const int pow2 = frexp((double)g->count, &e2) == 0.5;
      for (int64_t bin = 0; bin < bins; bin++) {
        float gv[VO_RAR_CB];
        const int64_t o = k * gr->stride[0] + c0 * gr->stride[1] + bin / PW * gr->stride[2] +
                          bin % PW * gr->stride[3];
        for (int64_t c = 0; c < nc; c++) gv[c] = (float)vo_load_host(gr, o + c * gr->stride[1]);
        const vo_k_ra_sample_f32 *s = plan->tab + plan->tab_off[k] + bin * n;
        if (nc == VO_RAR_CB)
          vo_rar_bin_scatter(tile, gv, s, n, VO_RAR_CB, g->count, pow2);
        else
          vo_rar_bin_scatter(tile, gv, s, n, nc, g->count, pow2);
      }
    }
    for (int64_t c = 0; c < nc; c++)
      for (int64_t i = 0; i < H * W; i++) dst[c * H * W + i] = tile[i * nc + c];
  });
}

vo_status vo_cpu_roi_align_rotated(const vo_exec *ex) {
  const vo_roi_align_params *p = &ex->p.roi_align_rotated.base;
  if (p->out->numel == 0) return VO_OK;
  vo_rar_plan plan;
  if (vo_rar_plan_make(ex, &plan)) {
    vo_rar_forward_fast(ex, &plan);
    vo_rar_plan_free(ex, &plan);
    return VO_OK;
  }
  return vo_ra_drive(ex, p, &vo_rar_ops, ex->dtype == VO_F64, p->channels, vo_rar_forward_item,
                     NULL, NULL);
}

static vo_status vo_rar_backward_f32(const vo_exec *ex, float *acc) {
  const vo_roi_align_params *p = &ex->p.roi_align_rotated.base;
  vo_rar_plan plan;
  if (vo_rar_plan_make(ex, &plan)) {
    vo_rar_backward_fast(ex, &plan, acc);
    vo_rar_plan_free(ex, &plan);
    return VO_OK;
  }
  return vo_ra_drive(ex, p, &vo_rar_ops, 0, p->channels, NULL, vo_rar_backward_item, acc);
}
static vo_status vo_rar_backward_f64(const vo_exec *ex, double *acc) {
  const vo_roi_align_params *p = &ex->p.roi_align_rotated.base;
  return vo_ra_drive(ex, p, &vo_rar_ops, 1, p->channels, NULL, vo_rar_backward_item, acc);
}

vo_status vo_cpu_roi_align_rotated_backward(const vo_exec *ex) {
  return vo_roi_backward_into(ex, ex->p.roi_align_rotated.base.out, vo_rar_backward_f32,
                              vo_rar_backward_f64);
}
