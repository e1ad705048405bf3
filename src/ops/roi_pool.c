/*
 * roi_pool and roi_pool_backward: argument checks (declaring those of the
 * rois' values and of the backward's argmax), output shapes, typed wrappers.
 */
#include "ops/common.h"

/* The kernels index grad_input with argmax, so every value must be -1 (no
 * gradient) or an index into an [H,W] plane: declared here, checked by
 * vo_call on the argmax's device. */
static vo_status vo_declare_argmax_check(vo_exec *ex, int arg, int64_t hw) {
  vo_k_check *c = vo_declare_data_check(ex, VO_K_CHECK_ARGMAX, arg);
  if (!c) return VO_ERROR_BACKEND_FAILURE;
  c->hw = hw;
  return VO_OK;
}

static vo_status vo_finish(vo_exec *ex, const vo_roi_layout *l, const int64_t sizes[4]) {
  vo_roi_pool_params *p = &ex->p.roi_pool;
  const int64_t hw = vo_product4(1, 1, sizes[2], sizes[3]);
  if (l->backward) {
    vo_status st = vo_declare_argmax_check(ex, l->index, hw < 0 ? INT64_MAX : hw);
    if (st != VO_OK) return st;              /* hw -1: more than any int32 index */
  } else if (hw < 0 || hw - 1 > INT32_MAX) { /* argmax holds h*W + w in int32, as torchvision's */
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: input plane H*W = %lld * %lld is too large for int32 argmax indices",
                   ex->op_name, (long long)sizes[2], (long long)sizes[3]);
  }
  vo_fill_roi_pool_params(ex, l, sizes, p);
  p->argmax = l->backward ? &ex->inputs[l->index] : NULL;
  p->argmax_out = l->backward ? NULL : &ex->outputs[1];
  return VO_OK;
}

VO_ROI_OP_CHECKS(roi_pool, vo_finish)

vo_status vo_roi_pool_shape(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                            double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                            vo_tensor_desc *out, vo_tensor_desc *argmax) {
  vo_tensor_desc desc[2];
  vo_status st = vo_infer_roi_pooling(ctx, VO_OP_roi_pool, input, rois, spatial_scale,
                                      pooled_height, pooled_width, desc);
  if (st != VO_OK) return st;
  if (out) *out = desc[0];
  if (argmax) *argmax = desc[1];
  return VO_OK;
}

vo_status vo_roi_pool(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                      double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                      DLTensor *out, DLTensor *argmax) {
  return vo_call_roi_pooling(ctx, VO_OP_roi_pool, input, rois, spatial_scale, pooled_height,
                             pooled_width, out, argmax);
}

vo_status vo_roi_pool_backward(const vo_context *ctx, const DLTensor *grad, const DLTensor *rois,
                               const DLTensor *argmax, double spatial_scale, int64_t pooled_height,
                               int64_t pooled_width, int64_t batch_size, int64_t channels,
                               int64_t height, int64_t width, DLTensor *grad_input) {
  const int64_t sizes[4] = {batch_size, channels, height, width};
  return vo_call_roi_pooling_backward(ctx, VO_OP_roi_pool_backward, grad, rois, argmax,
                                      spatial_scale, pooled_height, pooled_width, sizes,
                                      grad_input);
}
