/*
 * roi_align_rotated and roi_align_rotated_backward: roi_align's checks on
 * rotated RoIs [K,6] (batch, cx, cy, w, h, angle; declared value checks:
 * batch indices, finite values, w and h >= 0, the adaptive grid), output
 * shapes, the angle's scale from clockwise and radians, typed wrappers.
 */
#include "kernels/box_iou_rotated.h" /* vo_rotated_angle_scale */
#include "ops/common.h"

static vo_status vo_finish(vo_exec *ex, const vo_roi_layout *l, const int64_t sizes[4]) {
  vo_roi_align_rotated_params *p = &ex->p.roi_align_rotated;
  vo_fill_roi_align_params(ex, l, sizes, &p->base);
  /* clockwise and radians follow aligned in both schemas */
  p->angle_scale =
      vo_rotated_angle_scale(ex->args[l->aligned + 1].u.b != 0, ex->args[l->aligned + 2].u.b != 0);
  return VO_OK;
}

VO_ROI_OP_CHECKS(roi_align_rotated, vo_finish)

/* The forward's boxed arguments, for vo_infer and vo_call alike. */
static int vo_forward_args(vo_value args[9], const DLTensor *input, const DLTensor *rois,
                           double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                           int64_t sampling_ratio, int aligned, int clockwise, int radians) {
  int k = vo_box_roi_args(args, input, rois, 0, NULL, spatial_scale, pooled_height, pooled_width);
  args[k++] = vo_int_value(sampling_ratio);
  args[k++] = vo_bool_value(aligned != 0);
  args[k++] = vo_bool_value(clockwise != 0);
  args[k++] = vo_bool_value(radians != 0);
  return k;
}

vo_status vo_roi_align_rotated_shape(const vo_context *ctx, const DLTensor *input,
                                     const DLTensor *rois, double spatial_scale,
                                     int64_t pooled_height, int64_t pooled_width,
                                     int64_t sampling_ratio, int aligned, int clockwise,
                                     int radians, vo_tensor_desc *out) {
  vo_value args[9];
  const int k = vo_forward_args(args, input, rois, spatial_scale, pooled_height, pooled_width,
                                sampling_ratio, aligned, clockwise, radians);
  return vo_infer(ctx, vo_op_get(VO_OP_roi_align_rotated), args, k, out, 1);
}

vo_status vo_roi_align_rotated(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                               double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                               int64_t sampling_ratio, int aligned, int clockwise, int radians,
                               DLTensor *out) {
  vo_value args[9];
  const int k = vo_forward_args(args, input, rois, spatial_scale, pooled_height, pooled_width,
                                sampling_ratio, aligned, clockwise, radians);
  DLTensor *const outs[] = {out};
  return vo_call(ctx, vo_op_get(VO_OP_roi_align_rotated), args, k, outs, 1);
}

vo_status vo_roi_align_rotated_backward(const vo_context *ctx, const DLTensor *grad,
                                        const DLTensor *rois, double spatial_scale,
                                        int64_t pooled_height, int64_t pooled_width,
                                        int64_t batch_size, int64_t channels, int64_t height,
                                        int64_t width, int64_t sampling_ratio, int aligned,
                                        int clockwise, int radians, DLTensor *grad_input) {
  const int64_t sizes[4] = {batch_size, channels, height, width};
  vo_value args[13];
  int k = vo_box_roi_args(args, grad, rois, 0, NULL, spatial_scale, pooled_height, pooled_width);
  k += vo_box_ints(args + k, sizes, 4);
  args[k++] = vo_int_value(sampling_ratio);
  args[k++] = vo_bool_value(aligned != 0);
  args[k++] = vo_bool_value(clockwise != 0);
  args[k++] = vo_bool_value(radians != 0);
  DLTensor *const outs[] = {grad_input};
  return vo_call(ctx, vo_op_get(VO_OP_roi_align_rotated_backward), args, k, outs, 1);
}
