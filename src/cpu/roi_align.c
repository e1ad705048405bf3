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
  return vo_ra_drive(ex, p, NULL, ex->dtype == VO_F64, p->channels, vo_ra_forward_item_rc,
                     backward ? vo_ra_backward_item_rc : NULL, acc);
}

/* The entry points: the channels-last fast path (cpu/roi_align_fast.h)
 * when its plan says it pays, else the plain kernels above. */
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
static vo_status vo_ra_backward_f64(const vo_exec *ex, double *acc) {
  return vo_ra_run(ex, 1, acc);
}

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
