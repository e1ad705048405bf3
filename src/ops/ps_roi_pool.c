/*
 * ps_roi_pool and ps_roi_pool_backward: argument checks (channel grouping,
 * the shared RoI checks, declaring those of the rois' and channel_mapping's
 * values), output shapes, typed wrappers.
 */
#include "ops/common.h"

/* ps_roi_pool is roi_pool's geometry (without argmax) over channel
 * groups. */
static vo_status vo_finish(vo_exec *ex, const vo_roi_layout *l, const int64_t sizes[4]) {
  vo_ps_roi_pool_params *q = &ex->p.ps_roi_pool;
  vo_fill_roi_pool_params(ex, l, sizes, &q->base);
  q->channels_out = sizes[1] / (q->base.pooled_height * q->base.pooled_width);
  q->channel_mapping = l->backward ? &ex->inputs[l->index] : &ex->outputs[1];
  return VO_OK;
}

VO_ROI_OP_CHECKS(ps_roi_pool, vo_finish)

vo_status vo_ps_roi_pool_shape(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                               double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                               vo_tensor_desc out[2]) {
  return vo_infer_roi_pooling(ctx, VO_OP_ps_roi_pool, input, rois, spatial_scale, pooled_height,
                              pooled_width, out);
}

vo_status vo_ps_roi_pool(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                         double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                         DLTensor *out, DLTensor *channel_mapping) {
  return vo_call_roi_pooling(ctx, VO_OP_ps_roi_pool, input, rois, spatial_scale, pooled_height,
                             pooled_width, out, channel_mapping);
}

vo_status vo_ps_roi_pool_backward(const vo_context *ctx, const DLTensor *grad, const DLTensor *rois,
                                  const DLTensor *channel_mapping, double spatial_scale,
                                  int64_t pooled_height, int64_t pooled_width, int64_t batch_size,
                                  int64_t channels, int64_t height, int64_t width,
                                  DLTensor *grad_input) {
  const int64_t sizes[4] = {batch_size, channels, height, width};
  return vo_call_roi_pooling_backward(ctx, VO_OP_ps_roi_pool_backward, grad, rois, channel_mapping,
                                      spatial_scale, pooled_height, pooled_width, sizes,
                                      grad_input);
}
