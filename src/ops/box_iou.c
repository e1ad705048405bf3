/*
 * box_iou and its generalized / distance / complete variants: one file
 * because they differ only in the formula the kernel applies.
 */
#include "ops/common.h"

enum { ARG_A, ARG_B, ARG_EPS };

static vo_status vo_check_pairwise(vo_exec *ex, vo_iou_kind kind) {
  vo_status st;
  const int64_t dims[2] = {-1, 4};
  if ((st = vo_expect_shape(ex, ARG_A, 2, dims, "N, 4")) != VO_OK) return st;
  if ((st = vo_expect_shape(ex, ARG_B, 2, dims, "M, 4")) != VO_OK) return st;
  if ((st = vo_expect_float(ex, ARG_A)) != VO_OK) return st;
  if ((st = vo_expect_same_dtype(ex, ARG_B, ARG_A)) != VO_OK) return st;
  double eps = 0;
  if (kind == VO_IOU_DISTANCE || kind == VO_IOU_COMPLETE) {
    if ((st = vo_expect_finite(ex, ARG_EPS)) != VO_OK) return st;
    eps = ex->args[ARG_EPS].u.f;
  }
  ex->dtype = ex->inputs[ARG_A].dtype;
  const int64_t shape[2] = {ex->inputs[ARG_A].shape[0], ex->inputs[ARG_B].shape[0]};
  vo_set_output(ex, 0, ex->dtype, 2, shape);
  vo_pairwise_iou_params *p = &ex->p.iou;
  p->a = &ex->inputs[ARG_A];
  p->b = &ex->inputs[ARG_B];
  p->out = &ex->outputs[0];
  p->kind = kind;
  p->eps = eps;
  return VO_OK;
}

vo_status vo_check_box_iou(vo_exec *ex) { return vo_check_pairwise(ex, VO_IOU_PLAIN); }
vo_status vo_check_generalized_box_iou(vo_exec *ex) {
  return vo_check_pairwise(ex, VO_IOU_GENERALIZED);
}
vo_status vo_check_distance_box_iou(vo_exec *ex) { return vo_check_pairwise(ex, VO_IOU_DISTANCE); }
vo_status vo_check_complete_box_iou(vo_exec *ex) { return vo_check_pairwise(ex, VO_IOU_COMPLETE); }

static vo_status vo_pairwise_call(const vo_context *ctx, vo_op_id op, const DLTensor *a,
                                  const DLTensor *b, int with_eps, double eps, DLTensor *out) {
  const vo_value args[] = {vo_tensor_value(a), vo_tensor_value(b), vo_float_value(eps)};
  DLTensor *const outs[] = {out};
  return vo_call(ctx, vo_op_get(op), args, with_eps ? 3 : 2, outs, 1);
}

vo_status vo_box_iou_shape(const vo_context *ctx, const DLTensor *a, const DLTensor *b,
                           vo_tensor_desc *out) {
  const vo_value args[] = {vo_tensor_value(a), vo_tensor_value(b)};
  return vo_infer(ctx, vo_op_get(VO_OP_box_iou), args, 2, out, 1);
}

vo_status vo_box_iou(const vo_context *ctx, const DLTensor *a, const DLTensor *b, DLTensor *out) {
  return vo_pairwise_call(ctx, VO_OP_box_iou, a, b, 0, 0, out);
}

vo_status vo_generalized_box_iou(const vo_context *ctx, const DLTensor *a, const DLTensor *b,
                                 DLTensor *out) {
  return vo_pairwise_call(ctx, VO_OP_generalized_box_iou, a, b, 0, 0, out);
}

vo_status vo_distance_box_iou(const vo_context *ctx, const DLTensor *a, const DLTensor *b,
                              double eps, DLTensor *out) {
  return vo_pairwise_call(ctx, VO_OP_distance_box_iou, a, b, 1, eps, out);
}

vo_status vo_complete_box_iou(const vo_context *ctx, const DLTensor *a, const DLTensor *b,
                              double eps, DLTensor *out) {
  return vo_pairwise_call(ctx, VO_OP_complete_box_iou, a, b, 1, eps, out);
}
