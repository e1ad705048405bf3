/*
 * nms_rotated and batched_nms_rotated: argument checks and output shapes,
 * nms's (vo_check_nms_args) with [N,5] rotated boxes (cx, cy, w, h, angle)
 * whose values are checked, a box suppressed when its IoU with a kept one
 * is >= the threshold, and the angle's scale from the clockwise / radians
 * flags. Both run the nms_rotated kernel.
 */
#include <math.h>

#include "kernels/box_iou_rotated.h"
#include "ops/common.h"

enum { ARG_BOXES };

/* The smallest float f with f >= t, so that for any float x,
 * x >= f  <=>  (double)x >= t: float32 compute compares its IoU in float as
 * a comparison in double would. */
static float vo_nms_rotated_threshold_f32(double t) {
  float f = (float)t;
  if ((double)f < t) f = nextafterf(f, INFINITY);
  return f;
}

/* idxs_arg < 0 for nms_rotated; the flags follow the threshold. */
static vo_status vo_check_nms_rotated_common(vo_exec *ex, int idxs_arg, int threshold_arg) {
  vo_status st = vo_check_nms_args(ex, 5, idxs_arg, threshold_arg);
  if (st != VO_OK) return st;
  if ((st = vo_declare_rboxes_check(ex, ARG_BOXES)) != VO_OK) return st;
  vo_nms_params *p = &ex->p.nms;
  p->iou_threshold_f32 = vo_nms_rotated_threshold_f32(p->iou_threshold);
  p->angle_scale =
      vo_rotated_angle_scale(ex->args[threshold_arg + 1].u.b, ex->args[threshold_arg + 2].u.b);
  return VO_OK;
}

vo_status vo_check_nms_rotated(vo_exec *ex) { return vo_check_nms_rotated_common(ex, -1, 2); }

vo_status vo_check_batched_nms_rotated(vo_exec *ex) {
  return vo_check_nms_rotated_common(ex, 2, 3);
}

vo_status vo_nms_rotated(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                         double iou_threshold, int clockwise, int radians, DLTensor *keep,
                         DLTensor *num_kept) {
  const vo_value args[] = {vo_tensor_value(boxes), vo_tensor_value(scores),
                           vo_float_value(iou_threshold), vo_bool_value(clockwise),
                           vo_bool_value(radians)};
  DLTensor *const outs[] = {keep, num_kept};
  return vo_call(ctx, vo_op_get(VO_OP_nms_rotated), args, 5, outs, 2);
}

vo_status vo_batched_nms_rotated(const vo_context *ctx, const DLTensor *boxes,
                                 const DLTensor *scores, const DLTensor *idxs, double iou_threshold,
                                 int clockwise, int radians, DLTensor *keep, DLTensor *num_kept) {
  const vo_value args[] = {vo_tensor_value(boxes),   vo_tensor_value(scores),
                           vo_tensor_value(idxs),    vo_float_value(iou_threshold),
                           vo_bool_value(clockwise), vo_bool_value(radians)};
  DLTensor *const outs[] = {keep, num_kept};
  return vo_call(ctx, vo_op_get(VO_OP_batched_nms_rotated), args, 6, outs, 2);
}
