/*
 * box_area (the area of each [N, 4] box (x1, y1, x2, y2)) and its backward
 * (the gradient with respect to the boxes): argument checks, output shapes
 * and dtypes. torchvision's upcasting sets the dtypes: float64 boxes give
 * float64, the other float boxes float32; int64 boxes give int64, the other
 * integer boxes int32.
 */
#include "ops/common.h"

enum { ARG_BOXES };

vo_status vo_check_box_area(vo_exec *ex) {
  vo_status st;
  const int64_t dims[2] = {-1, 4};
  if ((st = vo_expect_shape(ex, ARG_BOXES, 2, dims, "N, 4")) != VO_OK) return st;
  if ((st = vo_expect_float_or_int(ex, ARG_BOXES)) != VO_OK) return st;
  const vo_dtype dt = ex->inputs[ARG_BOXES].dtype;
  vo_dtype out_dtype = VO_F32;
  if (dt == VO_F64 || dt == VO_I64)
    out_dtype = dt;
  else if (vo_dtype_is_int(dt))
    out_dtype = VO_I32;
  ex->dtype = out_dtype;
  const int64_t shape[1] = {ex->inputs[ARG_BOXES].shape[0]};
  vo_set_output(ex, 0, out_dtype, 1, shape);
  return VO_OK;
}

/* ------------------------------------------------------------- backward */

enum { BARG_GRAD, BARG_BOXES };

vo_status vo_check_box_area_backward(vo_exec *ex) {
  vo_status st;
  const int64_t dims[2] = {-1, 4};
  if ((st = vo_expect_shape(ex, BARG_BOXES, 2, dims, "N, 4")) != VO_OK) return st;
  const int64_t n = ex->inputs[BARG_BOXES].shape[0];
  const vo_view *g = &ex->inputs[BARG_GRAD];
  if (g->ndim != 1 || g->shape[0] != n) {
    char got[96];
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: %s must have shape [N] = [%lld] (the rows of %s), got %s", ex->op_name,
                   vo_arg_name(ex, BARG_GRAD), (long long)n, vo_arg_name(ex, BARG_BOXES),
                   vo_shape_str(g->shape, g->ndim, got, sizeof got));
  }
  if ((st = vo_expect_float(ex, BARG_BOXES)) != VO_OK) return st;
  /* grad (the forward's output dtype, usually) may be of any floating
   * dtype, read at its own precision (SPEC section 5). */
  if ((st = vo_expect_float_companion(ex, BARG_GRAD, BARG_BOXES)) != VO_OK) return st;
  const vo_dtype dt = ex->inputs[BARG_BOXES].dtype;
  ex->dtype = dt == VO_F64 ? VO_F64 : VO_F32;
  const int64_t shape[2] = {n, 4};
  vo_set_output(ex, 0, dt, 2, shape);
  return VO_OK;
}
