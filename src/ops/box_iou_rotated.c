/*
 * box_iou_rotated (every pair of boxes1 [N,5] and boxes2 [M,5] -> [N,M])
 * and box_iou_rotated_aligned (row i with row i, N == M -> [N]): the checks
 * and output shapes of the one rotated_iou kernel, whose geometry is
 * kernels/box_iou_rotated.h. Boxes are (cx, cy, w, h, angle), torchvision's
 * convention (degrees, counter-clockwise); clockwise and radians are
 * pre-transforms of the angle (vo_rotated_angle_scale).
 */
#include "ops/common.h"

enum { ARG_A, ARG_B, ARG_IOF, ARG_CLOCKWISE, ARG_RADIANS };

static vo_status vo_check_rotated(vo_exec *ex, int aligned) {
  vo_status st;
  const int64_t dims[2] = {-1, 5};
  if ((st = vo_expect_shape(ex, ARG_A, 2, dims, "N, 5")) != VO_OK) return st;
  if ((st = vo_expect_shape(ex, ARG_B, 2, dims, aligned ? "N, 5" : "M, 5")) != VO_OK) return st;
  if ((st = vo_expect_float(ex, ARG_A)) != VO_OK) return st;
  /* boxes2 of any floating dtype beside boxes1, each read at its own
   * precision (SPEC section 5), as box_iou's sets. */
  if ((st = vo_expect_float_companion(ex, ARG_B, ARG_A)) != VO_OK) return st;
  const int64_t n = ex->inputs[ARG_A].shape[0], m = ex->inputs[ARG_B].shape[0];
  if (aligned && n != m)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: %s and %s must have the same number of boxes (pairs row by row), got "
                   "%lld and %lld",
                   ex->op_name, vo_arg_name(ex, ARG_A), vo_arg_name(ex, ARG_B), (long long)n,
                   (long long)m);
  /* Non-finite coordinates or angles and negative sizes are refused (the
   * geometry's edge cases assume neither). */
  if ((st = vo_declare_rboxes_check(ex, ARG_A)) != VO_OK) return st;
  if ((st = vo_declare_rboxes_check(ex, ARG_B)) != VO_OK) return st;
  /* box_iou's dtypes: float64 on either side computes and returns float64,
   * anything else float32 (half types compute in float32). */
  const int any_f64 = ex->inputs[ARG_A].dtype == VO_F64 || ex->inputs[ARG_B].dtype == VO_F64;
  ex->dtype = any_f64 ? VO_F64 : VO_F32;
  const int64_t shape[2] = {n, m};
  vo_set_output(ex, 0, ex->dtype, aligned ? 1 : 2, shape);
  return VO_OK;
}

vo_status vo_check_box_iou_rotated(vo_exec *ex) { return vo_check_rotated(ex, 0); }
vo_status vo_check_box_iou_rotated_aligned(vo_exec *ex) { return vo_check_rotated(ex, 1); }

static vo_status vo_rotated_call(const vo_context *ctx, vo_op_id op, const DLTensor *a,
                                 const DLTensor *b, int iof, int clockwise, int radians,
                                 DLTensor *out) {
  const vo_value args[] = {vo_tensor_value(a), vo_tensor_value(b), vo_bool_value(iof),
                           vo_bool_value(clockwise), vo_bool_value(radians)};
  DLTensor *const outs[] = {out};
  return vo_call(ctx, vo_op_get(op), args, 5, outs, 1);
}

vo_status vo_box_iou_rotated(const vo_context *ctx, const DLTensor *a, const DLTensor *b, int iof,
                             int clockwise, int radians, DLTensor *out) {
  return vo_rotated_call(ctx, VO_OP_box_iou_rotated, a, b, iof, clockwise, radians, out);
}

vo_status vo_box_iou_rotated_aligned(const vo_context *ctx, const DLTensor *a, const DLTensor *b,
                                     int iof, int clockwise, int radians, DLTensor *out) {
  return vo_rotated_call(ctx, VO_OP_box_iou_rotated_aligned, a, b, iof, clockwise, radians, out);
}
