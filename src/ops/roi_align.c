/*
 * roi_align and roi_align_backward: argument checks (declaring those of the
 * rois' values: batch indices, coordinates, the adaptive grid), output
 * shapes, typed wrappers.
 */
#include "ops/common.h"

static vo_status vo_finish(vo_exec *ex, const vo_roi_layout *l, const int64_t sizes[4]) {
  vo_fill_roi_align_params(ex, l, sizes, &ex->p.roi_align);
  return VO_OK;
}

VO_ROI_OP_CHECKS(roi_align, vo_finish)

/* The forward's boxed arguments, for vo_infer and vo_call alike. */
static int vo_forward_args(vo_value args[7], const DLTensor *input, const DLTensor *rois,
                           double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                           int64_t sampling_ratio, int aligned) {
  int k = vo_box_roi_args(args, input, rois, 0, NULL, spatial_scale, pooled_height, pooled_width);
  args[k++] = vo_int_value(sampling_ratio);
  args[k++] = vo_bool_value(aligned != 0);
  return k;
}

vo_status vo_roi_align_shape(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                             double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                             int64_t sampling_ratio, int aligned, vo_tensor_desc *out) {
  vo_value args[7];
  const int k = vo_forward_args(args, input, rois, spatial_scale, pooled_height, pooled_width,
                                sampling_ratio, aligned);
  return vo_infer(ctx, vo_op_get(VO_OP_roi_align), args, k, out, 1);
}

vo_status vo_roi_align(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                       double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                       int64_t sampling_ratio, int aligned, DLTensor *out) {
  vo_value args[7];
  const int k = vo_forward_args(args, input, rois, spatial_scale, pooled_height, pooled_width,
                                sampling_ratio, aligned);
  DLTensor *const outs[] = {out};
  return vo_call(ctx, vo_op_get(VO_OP_roi_align), args, k, outs, 1);
}

vo_status vo_roi_align_backward(const vo_context *ctx, const DLTensor *grad, const DLTensor *rois,
                                double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                int64_t batch_size, int64_t channels, int64_t height, int64_t width,
                                int64_t sampling_ratio, int aligned, DLTensor *grad_input) {
  const int64_t sizes[4] = {batch_size, channels, height, width};
  vo_value args[11];
  int k = vo_box_roi_args(args, grad, rois, 0, NULL, spatial_scale, pooled_height, pooled_width);
  k += vo_box_ints(args + k, sizes, 4);
  args[k++] = vo_int_value(sampling_ratio);
  args[k++] = vo_bool_value(aligned != 0);
  DLTensor *const outs[] = {grad_input};
  return vo_call(ctx, vo_op_get(VO_OP_roi_align_backward), args, k, outs, 1);
}
