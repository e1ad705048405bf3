/*
 * Checks shared by the op-layer files (src/ops/).
 */
#ifndef VISIONOPS_OPS_COMMON_H
#define VISIONOPS_OPS_COMMON_H

#include "core/internal.h"

/* Argument `arg` is a floating tensor (float32/64, float16, bfloat16). */
vo_status vo_expect_float(const vo_exec *ex, int arg);
/* Argument `arg` has the dtype of argument `like`. */
vo_status vo_expect_same_dtype(const vo_exec *ex, int arg, int like);
/* Argument `arg` has dtype `dt`. */
vo_status vo_expect_dtype(const vo_exec *ex, int arg, vo_dtype dt);
/* Argument `arg` (a float) is not NaN / not infinite. */
vo_status vo_expect_not_nan(const vo_exec *ex, int arg);
vo_status vo_expect_finite(const vo_exec *ex, int arg);
/* Output description k: dtype, device of the call, shape. */
void vo_set_output(vo_exec *ex, int k, vo_dtype dt, int ndim, const int64_t *shape);

#endif /* VISIONOPS_OPS_COMMON_H */
