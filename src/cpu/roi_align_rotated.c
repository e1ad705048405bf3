/*
 * CPU kernels for roi_align_rotated (forward) and roi_align_rotated_backward:
 * roi_align's plain driver (cpu/roi_common.h: per-RoI sample tables within
 * the workspace limit, forward items per (RoI, channel), a backward in which
 * one thread owns each grad_input plane, so sums never depend on the thread
 * count) over the rotated geometry and sample tables of
 * kernels/roi_align_rotated.h.
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

vo_status vo_cpu_roi_align_rotated(const vo_exec *ex) {
  const vo_roi_align_params *p = &ex->p.roi_align_rotated.base;
  if (p->out->numel == 0) return VO_OK;
  return vo_ra_drive(ex, p, &vo_rar_ops, ex->dtype == VO_F64, p->channels, vo_rar_forward_item,
                     NULL, NULL);
}

static vo_status vo_rar_backward_f32(const vo_exec *ex, float *acc) {
  const vo_roi_align_params *p = &ex->p.roi_align_rotated.base;
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
