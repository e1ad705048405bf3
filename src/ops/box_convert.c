/*
 * box_convert (boxes [N, K_in] from one of torchvision's box formats to
 * another, [N, K_out]) and its backward (the gradient with respect to the
 * boxes): argument checks, output shapes and dtypes, and the typed C
 * wrappers. Float boxes keep their dtype; integer boxes keep theirs, except
 * for the axis-aligned pairs with cxcywh on one side, which torch's true
 * division promotes to float32 (kernels/box_convert.h).
 */

#include "kernels/box_convert.h"
#include "ops/common.h"

enum { ARG_BOXES, ARG_IN_FMT, ARG_OUT_FMT };

static const char *const format_names[VO_K_BOX_NUM_FORMATS] = {"xyxy",    "xywh",  "cxcywh",
                                                               "cxcywhr", "xywhr", "xyxyxyxy"};

/* The formats (int arguments in_arg, in_arg + 1) are known and a pair
 * torchvision converts; boxes (argument boxes_arg) are [N, K_in]. */
static vo_status check_formats(const vo_exec *ex, int boxes_arg, int in_arg) {
  for (int k = 0; k < 2; k++) {
    const int64_t f = ex->args[in_arg + k].u.i;
    if (f < 0 || f >= VO_K_BOX_NUM_FORMATS)
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s must be a box format, 0 (xyxy) .. 5 (xyxyxyxy), got %lld", ex->op_name,
                     vo_arg_name(ex, in_arg + k), (long long)f);
  }
  const int in_fmt = (int)ex->args[in_arg].u.i, out_fmt = (int)ex->args[in_arg + 1].u.i;
  int steps[2] = {0, 0};
  if (vo_k_box_convert_steps(in_fmt, out_fmt, steps) < 0)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: no conversion from %s (%d) to %s (%d): axis-aligned and rotated boxes "
                   "do not convert into each other (as in torchvision)",
                   ex->op_name, format_names[in_fmt], in_fmt, format_names[out_fmt], out_fmt);
  const int64_t dims[2] = {-1, vo_k_box_format_size(in_fmt)};
  return vo_expect_shape(ex, boxes_arg, 2, dims, "N, %d (%s)", vo_k_box_format_size(in_fmt),
                         format_names[in_fmt]);
}

vo_status vo_check_box_convert(vo_exec *ex) {
  vo_status st;
  if ((st = check_formats(ex, ARG_BOXES, ARG_IN_FMT)) != VO_OK) return st;
  if ((st = vo_expect_float_or_int(ex, ARG_BOXES)) != VO_OK) return st;
  const int in_fmt = (int)ex->args[ARG_IN_FMT].u.i, out_fmt = (int)ex->args[ARG_OUT_FMT].u.i;
  const vo_dtype dt = ex->inputs[ARG_BOXES].dtype;
  vo_dtype out_dtype = dt;
  if (vo_dtype_is_int(dt) && vo_k_box_convert_int_gives_float(in_fmt, out_fmt)) out_dtype = VO_F32;
  ex->dtype = dt == VO_F64 ? VO_F64 : VO_F32;
  const int64_t shape[2] = {ex->inputs[ARG_BOXES].shape[0], vo_k_box_format_size(out_fmt)};
  vo_set_output(ex, 0, out_dtype, 2, shape);
  return VO_OK;
}

/* ------------------------------------------------------------- backward */

enum { BARG_GRAD, BARG_BOXES, BARG_IN_FMT, BARG_OUT_FMT };

vo_status vo_check_box_convert_backward(vo_exec *ex) {
  vo_status st;
  if ((st = check_formats(ex, BARG_BOXES, BARG_IN_FMT)) != VO_OK) return st;
  const int out_fmt = (int)ex->args[BARG_OUT_FMT].u.i;
  const int64_t n = ex->inputs[BARG_BOXES].shape[0];
  const int64_t grad_dims[2] = {n, vo_k_box_format_size(out_fmt)};
  if ((st = vo_expect_shape(ex, BARG_GRAD, 2, grad_dims, "%lld, %d (the rows of boxes, %s)",
                            (long long)n, vo_k_box_format_size(out_fmt), format_names[out_fmt])) !=
      VO_OK)
    return st;
  if ((st = vo_expect_float(ex, BARG_BOXES)) != VO_OK) return st;
  /* grad (the forward's output dtype, usually) may be of any floating
   * dtype, read at its own precision (SPEC section 5). */
  if ((st = vo_expect_float_companion(ex, BARG_GRAD, BARG_BOXES)) != VO_OK) return st;
  const vo_dtype dt = ex->inputs[BARG_BOXES].dtype;
  ex->dtype = dt == VO_F64 ? VO_F64 : VO_F32;
  vo_set_output(ex, 0, dt, 2, ex->inputs[BARG_BOXES].shape);
  return VO_OK;
}

/* ------------------------------------------------------------ typed API */

vo_status vo_box_convert_shape(const vo_context *ctx, const DLTensor *boxes, vo_box_format in_fmt,
                               vo_box_format out_fmt, vo_tensor_desc *out) {
  const vo_value args[] = {vo_tensor_value(boxes), vo_int_value(in_fmt), vo_int_value(out_fmt)};
  return vo_infer(ctx, vo_op_get(VO_OP_box_convert), args, 3, out, 1);
}

vo_status vo_box_convert(const vo_context *ctx, const DLTensor *boxes, vo_box_format in_fmt,
                         vo_box_format out_fmt, DLTensor *out) {
  const vo_value args[] = {vo_tensor_value(boxes), vo_int_value(in_fmt), vo_int_value(out_fmt)};
  DLTensor *outs[1] = {out};
  return vo_call(ctx, vo_op_get(VO_OP_box_convert), args, 3, outs, 1);
}

vo_status vo_box_convert_backward(const vo_context *ctx, const DLTensor *grad,
                                  const DLTensor *boxes, vo_box_format in_fmt,
                                  vo_box_format out_fmt, DLTensor *grad_boxes) {
  const vo_value args[] = {vo_tensor_value(grad), vo_tensor_value(boxes), vo_int_value(in_fmt),
                           vo_int_value(out_fmt)};
  DLTensor *outs[1] = {grad_boxes};
  return vo_call(ctx, vo_op_get(VO_OP_box_convert_backward), args, 4, outs, 1);
}
