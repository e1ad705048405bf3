/*
 * roi_align and roi_align_backward: argument checks (declaring those of the
 * rois' values: batch indices, coordinates, the adaptive grid), output
 * shapes, typed wrappers.
 */
#include <math.h>
#include <stdio.h>

#include "ops/common.h"

enum { ARG_INPUT = 0, ARG_GRAD = 0, ARG_ROIS = 1, ARG_SCALE = 2, ARG_PH = 3, ARG_PW = 4 };
/* Forward only. */
enum { ARG_F_SAMPLING = 5, ARG_F_ALIGNED = 6 };
/* Backward only. */
enum { ARG_B_N = 5, ARG_B_C = 6, ARG_B_H = 7, ARG_B_W = 8, ARG_B_SAMPLING = 9, ARG_B_ALIGNED = 10 };

static void vo_fill_params(vo_exec *ex, int sampling_arg, int aligned_arg, int64_t n, int64_t c,
                           int64_t h, int64_t w) {
  vo_roi_align_params *p = &ex->p.roi_align;
  p->rois = &ex->inputs[ARG_ROIS];
  p->spatial_scale = ex->args[ARG_SCALE].u.f;
  p->pooled_height = ex->args[ARG_PH].u.i;
  p->pooled_width = ex->args[ARG_PW].u.i;
  p->sampling_ratio = ex->args[sampling_arg].u.i;
  p->aligned = ex->args[aligned_arg].u.b;
  p->batch_size = n;
  p->channels = c;
  p->height = h;
  p->width = w;
  p->out = &ex->outputs[0];
}

/* sampling_ratio, and (declared) the adaptive grid of every RoI on an h x w
 * map. */
static vo_status vo_check_sampling(vo_exec *ex, int sampling_arg, int aligned_arg, int64_t h,
                                   int64_t w) {
  vo_status st = vo_check_sampling_ratio(ex, sampling_arg);
  if (st != VO_OK) return st;
  const int aligned = ex->args[aligned_arg].u.b != 0;
  const vo_roi_map m = {
      ex->args[ARG_SCALE].u.f, aligned ? 0.5 : 0.0,  !aligned, ex->args[sampling_arg].u.i,
      ex->args[ARG_PH].u.i,    ex->args[ARG_PW].u.i, h,        w};
  if (m.sampling_ratio > 0 || vo_declare_roi_grid_check(ex, ARG_ROIS, &m)) return VO_OK;
  return VO_ERROR_BACKEND_FAILURE;
}

vo_status vo_check_roi_align(vo_exec *ex) {
  vo_status st;
  const int64_t in_dims[4] = {-1, -1, -1, -1};
  if ((st = vo_expect_shape(ex, ARG_INPUT, 4, in_dims, "N, C, H, W")) != VO_OK) return st;
  if ((st = vo_expect_float(ex, ARG_INPUT)) != VO_OK) return st;
  if ((st = vo_check_roi_args(ex, ARG_ROIS, ARG_INPUT, ARG_SCALE, ARG_PH, ARG_PW)) != VO_OK)
    return st;
  const vo_view *in = &ex->inputs[ARG_INPUT];
  const int64_t k = ex->inputs[ARG_ROIS].shape[0];
  const int64_t ph = ex->args[ARG_PH].u.i, pw = ex->args[ARG_PW].u.i;
  const int64_t out_dims[4] = {k, in->shape[1], ph, pw};
  if ((st = vo_expect_fits4(ex, "output", out_dims)) != VO_OK) return st;
  if ((st = vo_declare_rois_check(ex, ARG_ROIS, in->shape[0])) != VO_OK) return st;
  if ((st = vo_check_sampling(ex, ARG_F_SAMPLING, ARG_F_ALIGNED, in->shape[2], in->shape[3])) !=
      VO_OK)
    return st;

  ex->dtype = in->dtype;
  const int64_t shape[4] = {k, in->shape[1], ph, pw};
  vo_set_output(ex, 0, ex->dtype, 4, shape);
  vo_fill_params(ex, ARG_F_SAMPLING, ARG_F_ALIGNED, in->shape[0], in->shape[1], in->shape[2],
                 in->shape[3]);
  ex->p.roi_align.input = in;
  ex->p.roi_align.grad = NULL;
  return VO_OK;
}

vo_status vo_check_roi_align_backward(vo_exec *ex) {
  vo_status st;
  const int64_t any4[4] = {-1, -1, -1, -1};
  if ((st = vo_expect_shape(ex, ARG_GRAD, 4, any4, "K, C, PH, PW")) != VO_OK) return st;
  if ((st = vo_expect_float(ex, ARG_GRAD)) != VO_OK) return st;
  if ((st = vo_check_roi_args(ex, ARG_ROIS, ARG_GRAD, ARG_SCALE, ARG_PH, ARG_PW)) != VO_OK)
    return st;
  int64_t sizes[4]; /* batch_size, channels, height, width */
  if ((st = vo_expect_input_sizes(ex, ARG_B_N, sizes)) != VO_OK) return st;
  const int64_t n = sizes[0], c = sizes[1], h = sizes[2], w = sizes[3];
  const int64_t k = ex->inputs[ARG_ROIS].shape[0];
  const int64_t ph = ex->args[ARG_PH].u.i, pw = ex->args[ARG_PW].u.i;
  const int64_t grad_dims[4] = {k, c, ph, pw};
  char what[96]; /* K from rois; C, PH, PW from the int arguments */
  snprintf(what, sizeof what, "%lld, %lld, %lld, %lld", (long long)k, (long long)c, (long long)ph,
           (long long)pw);
  if ((st = vo_expect_shape(ex, ARG_GRAD, 4, grad_dims, what)) != VO_OK) return st;
  if ((st = vo_declare_rois_check(ex, ARG_ROIS, n)) != VO_OK) return st;
  if ((st = vo_check_sampling(ex, ARG_B_SAMPLING, ARG_B_ALIGNED, h, w)) != VO_OK) return st;

  ex->dtype = ex->inputs[ARG_GRAD].dtype;
  const int64_t shape[4] = {n, c, h, w};
  vo_set_output(ex, 0, ex->dtype, 4, shape);
  vo_fill_params(ex, ARG_B_SAMPLING, ARG_B_ALIGNED, n, c, h, w);
  ex->p.roi_align.input = NULL;
  ex->p.roi_align.grad = &ex->inputs[ARG_GRAD];
  return VO_OK;
}

vo_status vo_roi_align_shape(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                             double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                             int64_t sampling_ratio, int aligned, vo_tensor_desc *out) {
  const vo_value args[] = {vo_tensor_value(input),        vo_tensor_value(rois),
                           vo_float_value(spatial_scale), vo_int_value(pooled_height),
                           vo_int_value(pooled_width),    vo_int_value(sampling_ratio),
                           vo_bool_value(aligned != 0)};
  return vo_infer(ctx, vo_op_get(VO_OP_roi_align), args, 7, out, 1);
}

vo_status vo_roi_align(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                       double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                       int64_t sampling_ratio, int aligned, DLTensor *out) {
  const vo_value args[] = {vo_tensor_value(input),        vo_tensor_value(rois),
                           vo_float_value(spatial_scale), vo_int_value(pooled_height),
                           vo_int_value(pooled_width),    vo_int_value(sampling_ratio),
                           vo_bool_value(aligned != 0)};
  DLTensor *const outs[] = {out};
  return vo_call(ctx, vo_op_get(VO_OP_roi_align), args, 7, outs, 1);
}

vo_status vo_roi_align_backward(const vo_context *ctx, const DLTensor *grad, const DLTensor *rois,
                                double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                int64_t batch_size, int64_t channels, int64_t height, int64_t width,
                                int64_t sampling_ratio, int aligned, DLTensor *grad_input) {
  const vo_value args[] = {
      vo_tensor_value(grad),        vo_tensor_value(rois),      vo_float_value(spatial_scale),
      vo_int_value(pooled_height),  vo_int_value(pooled_width), vo_int_value(batch_size),
      vo_int_value(channels),       vo_int_value(height),       vo_int_value(width),
      vo_int_value(sampling_ratio), vo_bool_value(aligned != 0)};
  DLTensor *const outs[] = {grad_input};
  return vo_call(ctx, vo_op_get(VO_OP_roi_align_backward), args, 11, outs, 1);
}
