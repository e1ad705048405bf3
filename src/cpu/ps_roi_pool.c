/*
 * CPU kernels for ps_roi_pool (forward, with channel_mapping) and
 * ps_roi_pool_backward: the scheduling of kernels/ps_roi_pool.h's
 * arithmetic, which reproduces torchvision's forward values and arithmetic
 * order, including its clamping of bins to rows [0, H-1) and columns
 * [0, W-1) (the last row and column never contribute). torchvision's
 * backward clamps to [0, H) and [0, W) instead, so it is not the gradient of
 * its forward there; this backward uses the forward's bins and is the true
 * gradient. Per-dtype code is cpu/ps_roi_pool.inc, instantiated with
 * kernels/dtype_begin.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/roi_common.h"
#include "kernels/ps_roi_pool.h"

/* Output channels per forward block at most; more channels are split into
 * blocks of near-equal size. */
#define VO_PSP_CB 8

/* RoIs grouped by image, stable: image b's RoIs are order[first[b] ..
 * first[b+1]) in increasing k. */
static void vo_psp_group(int64_t n, int64_t num_rois, const int64_t *batch_of, int64_t *first,
                         int64_t *order) {
  memset(first, 0, sizeof(int64_t) * (size_t)(n + 1));
  for (int64_t k = 0; k < num_rois; k++) first[batch_of[k] + 1]++;
  for (int64_t b = 0; b < n; b++) first[b + 1] += first[b];
  for (int64_t k = 0; k < num_rois; k++) order[first[batch_of[k]]++] = k;
  for (int64_t b = n; b > 0; b--) first[b] = first[b - 1];
  first[0] = 0;
}

/* A RoI's sort key for the forward's visiting order. */
typedef struct vo_psp_key {
  int64_t h, w, k;
} vo_psp_key;

static int vo_psp_key_cmp(const void *a, const void *b) {
  const vo_psp_key *x = a, *y = b;
  if (x->h != y->h) return x->h < y->h ? -1 : 1;
  if (x->w != y->w) return x->w < y->w ? -1 : 1;
  return x->k < y->k ? -1 : x->k > y->k;
}

/* The kernels' view of a call: src is the input (forward) or grad. */
static vo_k_ps_roi_pool_args vo_psp_args(const vo_ps_roi_pool_params *p, const vo_view *src) {
  return vo_k_ps_roi_pool_args_of(p->base.spatial_scale, p->base.rois->shape[0], p->base.batch_size,
                                  p->base.channels, p->base.height, p->base.width,
                                  p->base.pooled_height, p->base.pooled_width, p->channels_out,
                                  (int)p->base.rois->dtype, p->base.rois->stride, src->stride);
}

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cpu/ps_roi_pool.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cpu/ps_roi_pool.inc"
#include "kernels/dtype_end.h"

#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "cpu/ps_roi_pool.inc"
#include "kernels/dtype_end.h"

#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "cpu/ps_roi_pool.inc"
#include "kernels/dtype_end.h"

static vo_status vo_psp_run(const vo_exec *ex, int backward, void *acc) {
  switch (ex->dtype) {
    case VO_F64:
      return vo_psp_run_f64(ex, backward, acc, vo_psp_forward_item_f64, vo_psp_backward_plane_f64);
    case VO_F16:
      return vo_psp_run_f32(ex, backward, acc, vo_psp_forward_item_f16, vo_psp_backward_plane_f16);
    case VO_BF16:
      return vo_psp_run_f32(ex, backward, acc, vo_psp_forward_item_bf16,
                            vo_psp_backward_plane_bf16);
    default:
      return vo_psp_run_f32(ex, backward, acc, vo_psp_forward_item_f32, vo_psp_backward_plane_f32);
  }
}

vo_status vo_cpu_ps_roi_pool(const vo_exec *ex) {
  if (ex->p.ps_roi_pool.base.out->numel == 0) return VO_OK;
  return vo_psp_run(ex, 0, NULL);
}

/* Not vo_roi_backward_into: that zeroes all of grad_input (and converts all
 * of it for half types) in separate passes over memory; here each plane is
 * zeroed and stored while it is in cache. */
vo_status vo_cpu_ps_roi_pool_backward(const vo_exec *ex) {
  const vo_view *out = ex->p.ps_roi_pool.base.out;
  const int64_t numel = out->numel;
  if (numel == 0) return VO_OK;
  if (ex->dtype == VO_F64 || ex->dtype == VO_F32) return vo_psp_run(ex, 1, vo_view_addr(out));
  if ((uint64_t)numel > SIZE_MAX / sizeof(float))
    return vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: grad_input too large for a float32 workspace",
                   ex->op_name);
  float *acc = vo_workspace_alloc(ex->ctx, ex->device, (size_t)numel * sizeof(float), ex->op_name);
  if (!acc) return VO_ERROR_OUT_OF_MEMORY;
  const vo_status st = vo_psp_run(ex, 1, acc);
  vo_workspace_free(ex->ctx, ex->device, acc);
  return st;
}
