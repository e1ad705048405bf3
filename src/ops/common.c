/*
 * Checks shared by the op-layer files: dtype agreement, scalar arguments,
 * output descriptions.
 */
#include <math.h>
#include <string.h>

#include "ops/common.h"

vo_status vo_expect_float(const vo_exec *ex, int arg) {
  vo_dtype dt = ex->inputs[arg].dtype;
  if (vo_dtype_is_float(dt)) return VO_OK;
  return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE,
                 "%s: %s must be float32, float64, float16 or bfloat16, got %s", ex->op_name,
                 vo_arg_name(ex, arg), vo_dtype_name(dt));
}

vo_status vo_expect_same_dtype(const vo_exec *ex, int arg, int like) {
  vo_dtype dt = ex->inputs[arg].dtype, want = ex->inputs[like].dtype;
  if (dt == want) return VO_OK;
  return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: %s must have the dtype of %s (%s), got %s",
                 ex->op_name, vo_arg_name(ex, arg), vo_arg_name(ex, like), vo_dtype_name(want),
                 vo_dtype_name(dt));
}

vo_status vo_expect_dtype(const vo_exec *ex, int arg, vo_dtype want) {
  vo_dtype dt = ex->inputs[arg].dtype;
  if (dt == want) return VO_OK;
  return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: %s must be %s, got %s", ex->op_name,
                 vo_arg_name(ex, arg), vo_dtype_name(want), vo_dtype_name(dt));
}

vo_status vo_expect_not_nan(const vo_exec *ex, int arg) {
  double v = ex->args[arg].u.f;
  if (!isnan(v)) return VO_OK;
  return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s must be a number, got nan", ex->op_name,
                 vo_arg_name(ex, arg));
}

vo_status vo_expect_finite(const vo_exec *ex, int arg) {
  double v = ex->args[arg].u.f;
  if (isfinite(v)) return VO_OK;
  return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s must be finite, got %g", ex->op_name,
                 vo_arg_name(ex, arg), v);
}

void vo_set_output(vo_exec *ex, int k, vo_dtype dt, int ndim, const int64_t *shape) {
  vo_tensor_desc *d = &ex->out_desc[k];
  memset(d, 0, sizeof *d);
  d->ndim = ndim;
  for (int i = 0; i < ndim; i++) d->shape[i] = shape[i];
  d->dtype = vo_dtype_to_dl(dt);
  d->device = ex->device;
}
