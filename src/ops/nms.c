/*
 * nms and batched_nms: argument checks and output shapes. batched_nms is nms
 * with a category per box, so both share one check and one kernel per
 * backend; the checks of every NMS op's common arguments (vo_check_nms_args,
 * also nms_rotated's) are here.
 */
#include <math.h>

#include "ops/common.h"

enum { ARG_BOXES, ARG_SCORES };

/* The largest float f with f <= t, so that for any float x,
 * x > f  <=>  (double)x > t: float32 compute compares its IoU in float as
 * the spec's comparison in double would. */
float vo_nms_threshold_f32(double t) {
  float f = (float)t;
  if ((double)f > t) f = nextafterf(f, -INFINITY);
  return f;
}

vo_status vo_expect_nms_tensors(vo_exec *ex, int box_columns, int idxs_arg) {
  vo_status st;
  const int64_t box_dims[2] = {-1, box_columns};
  if ((st = vo_expect_shape(ex, ARG_BOXES, 2, box_dims, "N, %d", box_columns)) != VO_OK) return st;
  if ((st = vo_expect_float(ex, ARG_BOXES)) != VO_OK) return st;
  const int64_t n = ex->inputs[ARG_BOXES].shape[0]; /* the rows of boxes */
  const int64_t vec_dims[1] = {n};
  if ((st = vo_expect_shape(ex, ARG_SCORES, 1, vec_dims, "%lld", (long long)n)) != VO_OK) return st;
  /* Scores are only ordered: any floating dtype, compared at its own
   * precision; the IoU computes in the boxes' precision. */
  if ((st = vo_expect_float_companion(ex, ARG_SCORES, ARG_BOXES)) != VO_OK) return st;
  if (idxs_arg >= 0) {
    if ((st = vo_expect_shape(ex, idxs_arg, 1, vec_dims, "%lld", (long long)n)) != VO_OK) return st;
    if ((st = vo_expect_dtype(ex, idxs_arg, VO_I64)) != VO_OK) return st;
  }
  return VO_OK;
}

vo_status vo_check_nms_args(vo_exec *ex, int box_columns, int idxs_arg, int threshold_arg) {
  vo_status st;
  if ((st = vo_expect_nms_tensors(ex, box_columns, idxs_arg)) != VO_OK) return st;
  if ((st = vo_expect_not_nan(ex, threshold_arg)) != VO_OK) return st;
  const int64_t n = ex->inputs[ARG_BOXES].shape[0];

  ex->dtype = ex->inputs[ARG_BOXES].dtype;
  vo_set_output(ex, 0, VO_I64, 1, &n);
  vo_set_output(ex, 1, VO_I64, 0, NULL);
  vo_nms_params *p = &ex->p.nms;
  p->boxes = &ex->inputs[ARG_BOXES];
  p->scores = &ex->inputs[ARG_SCORES];
  p->idxs = idxs_arg >= 0 ? &ex->inputs[idxs_arg] : NULL;
  p->iou_threshold = ex->args[threshold_arg].u.f;
  p->keep = &ex->outputs[0];
  p->num_kept = &ex->outputs[1];
  return VO_OK;
}

/* idxs_arg < 0 for plain nms. */
static vo_status vo_check_nms_common(vo_exec *ex, int idxs_arg, int threshold_arg) {
  const vo_status st = vo_check_nms_args(ex, 4, idxs_arg, threshold_arg);
  if (st == VO_OK) ex->p.nms.iou_threshold_f32 = vo_nms_threshold_f32(ex->p.nms.iou_threshold);
  return st;
}

vo_status vo_check_nms(vo_exec *ex) { return vo_check_nms_common(ex, -1, 2); }

vo_status vo_check_batched_nms(vo_exec *ex) { return vo_check_nms_common(ex, 2, 3); }

static const vo_op_info *vo_nms_op(int batched) {
  return vo_op_get(batched ? VO_OP_batched_nms : VO_OP_nms);
}

vo_status vo_nms_shape(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                       double iou_threshold, vo_tensor_desc out[2]) {
  const vo_value args[] = {vo_tensor_value(boxes), vo_tensor_value(scores),
                           vo_float_value(iou_threshold)};
  return vo_infer(ctx, vo_nms_op(0), args, 3, out, 2);
}

vo_status vo_nms(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                 double iou_threshold, DLTensor *keep, DLTensor *num_kept) {
  const vo_value args[] = {vo_tensor_value(boxes), vo_tensor_value(scores),
                           vo_float_value(iou_threshold)};
  DLTensor *const outs[] = {keep, num_kept};
  return vo_call(ctx, vo_nms_op(0), args, 3, outs, 2);
}

vo_status vo_batched_nms_shape(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                               const DLTensor *idxs, double iou_threshold, vo_tensor_desc out[2]) {
  const vo_value args[] = {vo_tensor_value(boxes), vo_tensor_value(scores), vo_tensor_value(idxs),
                           vo_float_value(iou_threshold)};
  return vo_infer(ctx, vo_nms_op(1), args, 4, out, 2);
}

vo_status vo_batched_nms(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                         const DLTensor *idxs, double iou_threshold, DLTensor *keep,
                         DLTensor *num_kept) {
  const vo_value args[] = {vo_tensor_value(boxes), vo_tensor_value(scores), vo_tensor_value(idxs),
                           vo_float_value(iou_threshold)};
  DLTensor *const outs[] = {keep, num_kept};
  return vo_call(ctx, vo_nms_op(1), args, 4, outs, 2);
}
