/*
 * roi_pool and roi_pool_backward: argument checks (declaring those of the
 * rois' values and of the backward's argmax), output shapes, typed wrappers.
 */
#include <stdio.h>

#include "ops/common.h"

enum { ARG_INPUT = 0, ARG_GRAD = 0, ARG_ROIS = 1 };
/* Forward. */
enum { ARG_F_SCALE = 2, ARG_F_PH = 3, ARG_F_PW = 4 };
/* Backward. */
enum {
  ARG_B_ARGMAX = 2,
  ARG_B_SCALE = 3,
  ARG_B_PH = 4,
  ARG_B_PW = 5,
  ARG_B_N = 6,
  ARG_B_C = 7,
  ARG_B_H = 8,
  ARG_B_W = 9
};

static void vo_fill_params(vo_exec *ex, int scale_arg, int ph_arg, int pw_arg, int64_t n, int64_t c,
                           int64_t h, int64_t w) {
  vo_roi_pool_params *p = &ex->p.roi_pool;
  p->rois = &ex->inputs[ARG_ROIS];
  p->spatial_scale = ex->args[scale_arg].u.f;
  p->pooled_height = ex->args[ph_arg].u.i;
  p->pooled_width = ex->args[pw_arg].u.i;
  p->batch_size = n;
  p->channels = c;
  p->height = h;
  p->width = w;
  p->out = &ex->outputs[0];
}

vo_status vo_check_roi_pool(vo_exec *ex) {
  vo_status st;
  const int64_t in_dims[4] = {-1, -1, -1, -1};
  if ((st = vo_expect_shape(ex, ARG_INPUT, 4, in_dims, "N, C, H, W")) != VO_OK) return st;
  if ((st = vo_expect_float(ex, ARG_INPUT)) != VO_OK) return st;
  if ((st = vo_check_roi_args(ex, ARG_ROIS, ARG_INPUT, ARG_F_SCALE, ARG_F_PH, ARG_F_PW)) != VO_OK)
    return st;
  const vo_view *in = &ex->inputs[ARG_INPUT];
  const int64_t k = ex->inputs[ARG_ROIS].shape[0];
  const int64_t ph = ex->args[ARG_F_PH].u.i, pw = ex->args[ARG_F_PW].u.i;
  const int64_t out_dims[4] = {k, in->shape[1], ph, pw};
  if ((st = vo_expect_fits4(ex, "output", out_dims)) != VO_OK) return st;
  /* argmax holds h*W + w in int32, as torchvision's does */
  const int64_t hw = vo_product4(1, 1, in->shape[2], in->shape[3]);
  if (hw < 0 || hw - 1 > INT32_MAX)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: input plane H*W = %lld * %lld is too large for int32 argmax indices",
                   ex->op_name, (long long)in->shape[2], (long long)in->shape[3]);
  if ((st = vo_declare_rois_check(ex, ARG_ROIS, in->shape[0])) != VO_OK) return st;

  ex->dtype = in->dtype;
  const int64_t shape[4] = {k, in->shape[1], ph, pw};
  vo_set_output(ex, 0, ex->dtype, 4, shape);
  vo_set_output(ex, 1, VO_I32, 4, shape);
  vo_fill_params(ex, ARG_F_SCALE, ARG_F_PH, ARG_F_PW, in->shape[0], in->shape[1], in->shape[2],
                 in->shape[3]);
  ex->p.roi_pool.input = in;
  ex->p.roi_pool.grad = NULL;
  ex->p.roi_pool.argmax = NULL;
  ex->p.roi_pool.argmax_out = &ex->outputs[1];
  return VO_OK;
}

/* The kernels index grad_input with argmax, so every value must be -1 (no
 * gradient) or an index into an [H,W] plane: declared here, checked by
 * vo_call on the argmax's device. */
static vo_status vo_declare_argmax_check(vo_exec *ex, int64_t hw) {
  vo_k_check *c = vo_declare_data_check(ex, VO_K_CHECK_ARGMAX, ARG_B_ARGMAX);
  if (!c) return VO_ERROR_BACKEND_FAILURE;
  c->hw = hw;
  return VO_OK;
}

vo_status vo_check_roi_pool_backward(vo_exec *ex) {
  vo_status st;
  const int64_t any4[4] = {-1, -1, -1, -1};
  if ((st = vo_expect_shape(ex, ARG_GRAD, 4, any4, "K, C, PH, PW")) != VO_OK) return st;
  if ((st = vo_expect_float(ex, ARG_GRAD)) != VO_OK) return st;
  if ((st = vo_check_roi_args(ex, ARG_ROIS, ARG_GRAD, ARG_B_SCALE, ARG_B_PH, ARG_B_PW)) != VO_OK)
    return st;
  int64_t sizes[4]; /* batch_size, channels, height, width */
  if ((st = vo_expect_input_sizes(ex, ARG_B_N, sizes)) != VO_OK) return st;
  const int64_t n = sizes[0], c = sizes[1], h = sizes[2], w = sizes[3];
  const int64_t k = ex->inputs[ARG_ROIS].shape[0];
  const int64_t ph = ex->args[ARG_B_PH].u.i, pw = ex->args[ARG_B_PW].u.i;
  const int64_t grad_dims[4] = {k, c, ph, pw};
  char what[96]; /* K from rois; C, PH, PW from the int arguments */
  snprintf(what, sizeof what, "%lld, %lld, %lld, %lld", (long long)k, (long long)c, (long long)ph,
           (long long)pw);
  if ((st = vo_expect_shape(ex, ARG_GRAD, 4, grad_dims, what)) != VO_OK) return st;
  if ((st = vo_expect_shape(ex, ARG_B_ARGMAX, 4, grad_dims, what)) != VO_OK) return st;
  if ((st = vo_expect_dtype(ex, ARG_B_ARGMAX, VO_I32)) != VO_OK) return st;
  if ((st = vo_declare_rois_check(ex, ARG_ROIS, n)) != VO_OK) return st;
  const int64_t hw = vo_product4(1, 1, h, w); /* -1: more than any int32 index */
  if ((st = vo_declare_argmax_check(ex, hw < 0 ? INT64_MAX : hw)) != VO_OK) return st;

  ex->dtype = ex->inputs[ARG_GRAD].dtype;
  const int64_t shape[4] = {n, c, h, w};
  vo_set_output(ex, 0, ex->dtype, 4, shape);
  vo_fill_params(ex, ARG_B_SCALE, ARG_B_PH, ARG_B_PW, n, c, h, w);
  ex->p.roi_pool.input = NULL;
  ex->p.roi_pool.grad = &ex->inputs[ARG_GRAD];
  ex->p.roi_pool.argmax = &ex->inputs[ARG_B_ARGMAX];
  ex->p.roi_pool.argmax_out = NULL;
  return VO_OK;
}

vo_status vo_roi_pool_shape(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                            double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                            vo_tensor_desc *out, vo_tensor_desc *argmax) {
  const vo_value args[] = {vo_tensor_value(input), vo_tensor_value(rois),
                           vo_float_value(spatial_scale), vo_int_value(pooled_height),
                           vo_int_value(pooled_width)};
  vo_tensor_desc desc[2];
  vo_status st = vo_infer(ctx, vo_op_get(VO_OP_roi_pool), args, 5, desc, 2);
  if (st != VO_OK) return st;
  if (out) *out = desc[0];
  if (argmax) *argmax = desc[1];
  return VO_OK;
}

vo_status vo_roi_pool(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                      double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                      DLTensor *out, DLTensor *argmax) {
  const vo_value args[] = {vo_tensor_value(input), vo_tensor_value(rois),
                           vo_float_value(spatial_scale), vo_int_value(pooled_height),
                           vo_int_value(pooled_width)};
  DLTensor *const outs[] = {out, argmax};
  return vo_call(ctx, vo_op_get(VO_OP_roi_pool), args, 5, outs, 2);
}

vo_status vo_roi_pool_backward(const vo_context *ctx, const DLTensor *grad, const DLTensor *rois,
                               const DLTensor *argmax, double spatial_scale, int64_t pooled_height,
                               int64_t pooled_width, int64_t batch_size, int64_t channels,
                               int64_t height, int64_t width, DLTensor *grad_input) {
  const vo_value args[] = {vo_tensor_value(grad),       vo_tensor_value(rois),
                           vo_tensor_value(argmax),     vo_float_value(spatial_scale),
                           vo_int_value(pooled_height), vo_int_value(pooled_width),
                           vo_int_value(batch_size),    vo_int_value(channels),
                           vo_int_value(height),        vo_int_value(width)};
  DLTensor *const outs[] = {grad_input};
  return vo_call(ctx, vo_op_get(VO_OP_roi_pool_backward), args, 10, outs, 1);
}
