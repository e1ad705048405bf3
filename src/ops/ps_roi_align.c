/*
 * ps_roi_align and ps_roi_align_backward: argument checks (channel grouping,
 * the RoI checks shared with roi_align, declaring those of the rois' and
 * channel_mapping's values), output shapes, typed wrappers.
 */
#include <stdio.h>

#include "ops/common.h"

enum { ARG_INPUT = 0, ARG_GRAD = 0, ARG_ROIS = 1 };
/* Forward only. */
enum { ARG_F_SCALE = 2, ARG_F_PH = 3, ARG_F_PW = 4, ARG_F_SAMPLING = 5 };
/* Backward only. */
enum {
  ARG_B_MAPPING = 2,
  ARG_B_SCALE = 3,
  ARG_B_PH = 4,
  ARG_B_PW = 5,
  ARG_B_SAMPLING = 6,
  ARG_B_N = 7 /* batch_size, then channels, height, width */
};

static void vo_fill_params(vo_exec *ex, int scale_arg, int ph_arg, int pw_arg, int sampling_arg,
                           int64_t n, int64_t c, int64_t h, int64_t w) {
  vo_ps_roi_align_params *q = &ex->p.ps_roi_align;
  vo_roi_align_params *p = &q->base;
  p->rois = &ex->inputs[ARG_ROIS];
  p->spatial_scale = ex->args[scale_arg].u.f;
  p->pooled_height = ex->args[ph_arg].u.i;
  p->pooled_width = ex->args[pw_arg].u.i;
  p->sampling_ratio = ex->args[sampling_arg].u.i;
  p->aligned = 1; /* ps_roi_align always uses pixel centres, without the 1x1 minimum */
  p->batch_size = n;
  p->channels = c;
  p->height = h;
  p->width = w;
  p->out = &ex->outputs[0];
  q->channels_out = c / (p->pooled_height * p->pooled_width);
}

/* sampling_ratio, and (declared) the adaptive grid of every RoI on an h x w
 * map (ps_roi_align always shifts by half a pixel and has no 1x1 minimum). */
static vo_status vo_check_sampling(vo_exec *ex, int scale_arg, int ph_arg, int pw_arg,
                                   int sampling_arg, int64_t h, int64_t w) {
  vo_status st = vo_check_sampling_ratio(ex, sampling_arg);
  if (st != VO_OK) return st;
  const vo_roi_map m = {
      ex->args[scale_arg].u.f, 0.5, 0, ex->args[sampling_arg].u.i, ex->args[ph_arg].u.i,
      ex->args[pw_arg].u.i,    h,   w};
  if (m.sampling_ratio > 0 || vo_declare_roi_grid_check(ex, ARG_ROIS, &m)) return VO_OK;
  return VO_ERROR_BACKEND_FAILURE;
}

vo_status vo_check_ps_roi_align(vo_exec *ex) {
  vo_status st;
  const int64_t in_dims[4] = {-1, -1, -1, -1};
  if ((st = vo_expect_shape(ex, ARG_INPUT, 4, in_dims, "N, C, H, W")) != VO_OK) return st;
  if ((st = vo_expect_float(ex, ARG_INPUT)) != VO_OK) return st;
  if ((st = vo_check_roi_args(ex, ARG_ROIS, ARG_INPUT, ARG_F_SCALE, ARG_F_PH, ARG_F_PW)) != VO_OK)
    return st;
  const vo_view *in = &ex->inputs[ARG_INPUT];
  const int64_t k = ex->inputs[ARG_ROIS].shape[0], c = in->shape[1];
  const int64_t ph = ex->args[ARG_F_PH].u.i, pw = ex->args[ARG_F_PW].u.i;
  if ((st = vo_check_channel_groups(ex, ARG_INPUT, c, ph, pw)) != VO_OK) return st;
  const int64_t cout = c / (ph * pw);
  const int64_t out_dims[4] = {k, cout, ph, pw};
  if ((st = vo_expect_fits4(ex, "output", out_dims)) != VO_OK) return st;
  if ((st = vo_declare_rois_check(ex, ARG_ROIS, in->shape[0])) != VO_OK) return st;
  if ((st = vo_check_sampling(ex, ARG_F_SCALE, ARG_F_PH, ARG_F_PW, ARG_F_SAMPLING, in->shape[2],
                              in->shape[3])) != VO_OK)
    return st;

  ex->dtype = in->dtype;
  const int64_t shape[4] = {k, cout, ph, pw};
  vo_set_output(ex, 0, ex->dtype, 4, shape);
  vo_set_output(ex, 1, VO_I32, 4, shape);
  vo_fill_params(ex, ARG_F_SCALE, ARG_F_PH, ARG_F_PW, ARG_F_SAMPLING, in->shape[0], c, in->shape[2],
                 in->shape[3]);
  ex->p.ps_roi_align.base.input = in;
  ex->p.ps_roi_align.base.grad = NULL;
  ex->p.ps_roi_align.channel_mapping = &ex->outputs[1];
  return VO_OK;
}

vo_status vo_check_ps_roi_align_backward(vo_exec *ex) {
  int64_t sizes[4]; /* batch_size, channels, height, width */
  vo_status st =
      vo_check_ps_backward_args(ex, ARG_B_MAPPING, ARG_B_SCALE, ARG_B_PH, ARG_B_PW, ARG_B_N, sizes);
  if (st != VO_OK) return st;
  const int64_t n = sizes[0], c = sizes[1], h = sizes[2], w = sizes[3];
  if ((st = vo_check_sampling(ex, ARG_B_SCALE, ARG_B_PH, ARG_B_PW, ARG_B_SAMPLING, h, w)) != VO_OK)
    return st;

  ex->dtype = ex->inputs[ARG_GRAD].dtype;
  const int64_t shape[4] = {n, c, h, w};
  vo_set_output(ex, 0, ex->dtype, 4, shape);
  vo_fill_params(ex, ARG_B_SCALE, ARG_B_PH, ARG_B_PW, ARG_B_SAMPLING, n, c, h, w);
  ex->p.ps_roi_align.base.input = NULL;
  ex->p.ps_roi_align.base.grad = &ex->inputs[ARG_GRAD];
  ex->p.ps_roi_align.channel_mapping = &ex->inputs[ARG_B_MAPPING];
  return VO_OK;
}

vo_status vo_ps_roi_align_shape(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                                double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                int64_t sampling_ratio, vo_tensor_desc out[2]) {
  const vo_value args[] = {vo_tensor_value(input),        vo_tensor_value(rois),
                           vo_float_value(spatial_scale), vo_int_value(pooled_height),
                           vo_int_value(pooled_width),    vo_int_value(sampling_ratio)};
  return vo_infer(ctx, vo_op_get(VO_OP_ps_roi_align), args, 6, out, 2);
}

vo_status vo_ps_roi_align(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                          double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                          int64_t sampling_ratio, DLTensor *out, DLTensor *channel_mapping) {
  const vo_value args[] = {vo_tensor_value(input),        vo_tensor_value(rois),
                           vo_float_value(spatial_scale), vo_int_value(pooled_height),
                           vo_int_value(pooled_width),    vo_int_value(sampling_ratio)};
  DLTensor *const outs[] = {out, channel_mapping};
  return vo_call(ctx, vo_op_get(VO_OP_ps_roi_align), args, 6, outs, 2);
}

vo_status vo_ps_roi_align_backward(const vo_context *ctx, const DLTensor *grad,
                                   const DLTensor *rois, const DLTensor *channel_mapping,
                                   double spatial_scale, int64_t pooled_height,
                                   int64_t pooled_width, int64_t sampling_ratio, int64_t batch_size,
                                   int64_t channels, int64_t height, int64_t width,
                                   DLTensor *grad_input) {
  const vo_value args[] = {
      vo_tensor_value(grad),         vo_tensor_value(rois),       vo_tensor_value(channel_mapping),
      vo_float_value(spatial_scale), vo_int_value(pooled_height), vo_int_value(pooled_width),
      vo_int_value(sampling_ratio),  vo_int_value(batch_size),    vo_int_value(channels),
      vo_int_value(height),          vo_int_value(width)};
  DLTensor *const outs[] = {grad_input};
  return vo_call(ctx, vo_op_get(VO_OP_ps_roi_align_backward), args, 11, outs, 1);
}
