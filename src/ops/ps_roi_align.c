/*
 * ps_roi_align and ps_roi_align_backward: argument checks (channel grouping,
 * the RoI checks shared with roi_align, declaring those of the rois' and
 * channel_mapping's values), output shapes, typed wrappers.
 */
#include "ops/common.h"

/* ps_roi_align is roi_align's geometry (aligned, without the 1x1 minimum)
 * over channel groups. */
static vo_status vo_finish(vo_exec *ex, const vo_roi_layout *l, const int64_t sizes[4]) {
  vo_ps_roi_align_params *q = &ex->p.ps_roi_align;
  vo_fill_roi_align_params(ex, l, sizes, &q->base);
  q->channels_out = sizes[1] / (q->base.pooled_height * q->base.pooled_width);
  q->channel_mapping = l->backward ? &ex->inputs[l->index] : &ex->outputs[1];
  return VO_OK;
}

VO_ROI_OP_CHECKS(ps_roi_align, vo_finish)

vo_status vo_ps_roi_align_shape(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                                double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                int64_t sampling_ratio, vo_tensor_desc out[2]) {
  vo_value args[6];
  int k = vo_box_roi_args(args, input, rois, 0, NULL, spatial_scale, pooled_height, pooled_width);
  args[k++] = vo_int_value(sampling_ratio);
  return vo_infer(ctx, vo_op_get(VO_OP_ps_roi_align), args, k, out, 2);
}

vo_status vo_ps_roi_align(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                          double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                          int64_t sampling_ratio, DLTensor *out, DLTensor *channel_mapping) {
  vo_value args[6];
  int k = vo_box_roi_args(args, input, rois, 0, NULL, spatial_scale, pooled_height, pooled_width);
  args[k++] = vo_int_value(sampling_ratio);
  DLTensor *const outs[] = {out, channel_mapping};
  return vo_call(ctx, vo_op_get(VO_OP_ps_roi_align), args, k, outs, 2);
}

vo_status vo_ps_roi_align_backward(const vo_context *ctx, const DLTensor *grad,
                                   const DLTensor *rois, const DLTensor *channel_mapping,
                                   double spatial_scale, int64_t pooled_height,
                                   int64_t pooled_width, int64_t sampling_ratio, int64_t batch_size,
                                   int64_t channels, int64_t height, int64_t width,
                                   DLTensor *grad_input) {
  const int64_t sizes[4] = {batch_size, channels, height, width};
  vo_value args[11];
  int k = vo_box_roi_args(args, grad, rois, 1, channel_mapping, spatial_scale, pooled_height,
                          pooled_width);
  args[k++] = vo_int_value(sampling_ratio);
  k += vo_box_ints(args + k, sizes, 4);
  DLTensor *const outs[] = {grad_input};
  return vo_call(ctx, vo_op_get(VO_OP_ps_roi_align_backward), args, k, outs, 1);
}
