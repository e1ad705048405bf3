/*
 * box_iou and its generalized / distance / complete variants: one file
 * because they differ only in the formula the kernel applies; and their
 * backward ops (the gradient with respect to both box sets).
 */
#include "ops/common.h"

enum { ARG_A, ARG_B, ARG_EPS };

static vo_status vo_check_pairwise(vo_exec *ex, vo_iou_kind kind) {
  vo_status st;
  const int64_t dims[2] = {-1, 4};
  if ((st = vo_expect_shape(ex, ARG_A, 2, dims, "N, 4")) != VO_OK) return st;
  if ((st = vo_expect_shape(ex, ARG_B, 2, dims, "M, 4")) != VO_OK) return st;
  for (int arg = ARG_A; arg <= ARG_B; arg++)
    if ((st = vo_expect_float_or_int(ex, arg)) != VO_OK) return st;
  double eps = 0;
  if (kind == VO_IOU_DISTANCE || kind == VO_IOU_COMPLETE) {
    if ((st = vo_expect_finite(ex, ARG_EPS)) != VO_OK) return st;
    eps = ex->args[ARG_EPS].u.f;
  }
  /* torchvision's upcasting (_upcast, then type promotion and true
   * division), also when the two box sets differ in dtype (each is read at
   * its own precision, SPEC section 5): float64 on either side gives
   * float64; otherwise float32. Integer boxes on both sides compute in
   * float64, so areas and intersections are exact as torchvision's integer
   * arithmetic is; beside float boxes they meet float32 arithmetic there. */
  const vo_dtype da = ex->inputs[ARG_A].dtype, db = ex->inputs[ARG_B].dtype;
  const int any_f64 = da == VO_F64 || db == VO_F64;
  ex->dtype = any_f64 || (vo_dtype_is_int(da) && vo_dtype_is_int(db)) ? VO_F64 : VO_F32;
  const vo_dtype out_dtype = any_f64 ? VO_F64 : VO_F32;
  const int64_t shape[2] = {ex->inputs[ARG_A].shape[0], ex->inputs[ARG_B].shape[0]};
  vo_set_output(ex, 0, out_dtype, 2, shape);
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

/* ------------------------------------------------------------- backward */

enum { BARG_GRAD, BARG_A, BARG_B, BARG_EPS };

static vo_status vo_check_pairwise_backward(vo_exec *ex, vo_iou_kind kind) {
  vo_status st;
  const int64_t dims[2] = {-1, 4};
  if ((st = vo_expect_shape(ex, BARG_A, 2, dims, "N, 4")) != VO_OK) return st;
  if ((st = vo_expect_shape(ex, BARG_B, 2, dims, "M, 4")) != VO_OK) return st;
  const int64_t n = ex->inputs[BARG_A].shape[0], m = ex->inputs[BARG_B].shape[0];
  const vo_view *g = &ex->inputs[BARG_GRAD];
  if (g->ndim != 2 || g->shape[0] != n || g->shape[1] != m) {
    char got[96];
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: %s must have shape [N, M] = [%lld, %lld] (the rows of %s and %s), got %s",
                   ex->op_name, vo_arg_name(ex, BARG_GRAD), (long long)n, (long long)m,
                   vo_arg_name(ex, BARG_A), vo_arg_name(ex, BARG_B),
                   vo_shape_str(g->shape, g->ndim, got, sizeof got));
  }
  if ((st = vo_expect_float(ex, BARG_A)) != VO_OK) return st;
  if ((st = vo_expect_float(ex, BARG_B)) != VO_OK) return st;
  /* grad (the forward's output dtype, usually) may be of any floating
   * dtype, read at its own precision (SPEC section 5). */
  if ((st = vo_expect_float_companion(ex, BARG_GRAD, BARG_A)) != VO_OK) return st;
  double eps = 0;
  if (kind == VO_IOU_DISTANCE || kind == VO_IOU_COMPLETE) {
    if ((st = vo_expect_finite(ex, BARG_EPS)) != VO_OK) return st;
    eps = ex->args[BARG_EPS].u.f;
  }
  /* Each box set's gradient in its own dtype; the arithmetic in float64
   * when either set is float64, else float32. */
  const vo_dtype da = ex->inputs[BARG_A].dtype, db = ex->inputs[BARG_B].dtype;
  ex->dtype = da == VO_F64 || db == VO_F64 ? VO_F64 : VO_F32;
  const int64_t shape_a[2] = {n, 4}, shape_b[2] = {m, 4};
  vo_set_output(ex, 0, da, 2, shape_a);
  vo_set_output(ex, 1, db, 2, shape_b);
  vo_pairwise_iou_backward_params *p = &ex->p.iou_backward;
  p->grad = g;
  p->a = &ex->inputs[BARG_A];
  p->b = &ex->inputs[BARG_B];
  p->grad_a = &ex->outputs[0];
  p->grad_b = &ex->outputs[1];
  p->kind = kind;
  p->eps = eps;
  return VO_OK;
}

vo_status vo_check_box_iou_backward(vo_exec *ex) {
  return vo_check_pairwise_backward(ex, VO_IOU_PLAIN);
}
vo_status vo_check_generalized_box_iou_backward(vo_exec *ex) {
  return vo_check_pairwise_backward(ex, VO_IOU_GENERALIZED);
}
vo_status vo_check_distance_box_iou_backward(vo_exec *ex) {
  return vo_check_pairwise_backward(ex, VO_IOU_DISTANCE);
}
vo_status vo_check_complete_box_iou_backward(vo_exec *ex) {
  return vo_check_pairwise_backward(ex, VO_IOU_COMPLETE);
}

static vo_status vo_pairwise_backward_call(const vo_context *ctx, vo_op_id op, const DLTensor *grad,
                                           const DLTensor *a, const DLTensor *b, int with_eps,
                                           double eps, DLTensor *grad_a, DLTensor *grad_b) {
  const vo_value args[] = {vo_tensor_value(grad), vo_tensor_value(a), vo_tensor_value(b),
                           vo_float_value(eps)};
  DLTensor *const outs[] = {grad_a, grad_b};
  return vo_call(ctx, vo_op_get(op), args, with_eps ? 4 : 3, outs, 2);
}

vo_status vo_box_iou_backward_shape(const vo_context *ctx, const DLTensor *grad, const DLTensor *a,
                                    const DLTensor *b, vo_tensor_desc out[2]) {
  const vo_value args[] = {vo_tensor_value(grad), vo_tensor_value(a), vo_tensor_value(b)};
  return vo_infer(ctx, vo_op_get(VO_OP_box_iou_backward), args, 3, out, 2);
}

vo_status vo_box_iou_backward(const vo_context *ctx, const DLTensor *grad, const DLTensor *a,
                              const DLTensor *b, DLTensor *grad_a, DLTensor *grad_b) {
  return vo_pairwise_backward_call(ctx, VO_OP_box_iou_backward, grad, a, b, 0, 0, grad_a, grad_b);
}

vo_status vo_generalized_box_iou_backward(const vo_context *ctx, const DLTensor *grad,
                                          const DLTensor *a, const DLTensor *b, DLTensor *grad_a,
                                          DLTensor *grad_b) {
  return vo_pairwise_backward_call(ctx, VO_OP_generalized_box_iou_backward, grad, a, b, 0, 0,
                                   grad_a, grad_b);
}

vo_status vo_distance_box_iou_backward(const vo_context *ctx, const DLTensor *grad,
                                       const DLTensor *a, const DLTensor *b, double eps,
                                       DLTensor *grad_a, DLTensor *grad_b) {
  return vo_pairwise_backward_call(ctx, VO_OP_distance_box_iou_backward, grad, a, b, 1, eps, grad_a,
                                   grad_b);
}

vo_status vo_complete_box_iou_backward(const vo_context *ctx, const DLTensor *grad,
                                       const DLTensor *a, const DLTensor *b, double eps,
                                       DLTensor *grad_a, DLTensor *grad_b) {
  return vo_pairwise_backward_call(ctx, VO_OP_complete_box_iou_backward, grad, a, b, 1, eps, grad_a,
                                   grad_b);
}
