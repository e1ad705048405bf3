/*
 * Runs the value checks an op's check function declared (ex->data_checks),
 * in order, before vo_call's kernel: the host loops over the portable
 * predicate of kernels/data_checks.h for tensors it can read (the CPU
 * backend's check_data hook runs that loop on its threads), a device
 * backend's check_data hook runs the same predicate on the device, and the
 * message about the first bad value is formed here, once for all.
 */
#include <math.h>

#include "core/internal.h"

_Static_assert(VO_MAX_LIST <= VO_K_CHECK_MAX_MAPS, "a roi_grid check holds every pyramid level");

static int vo_host_readable(DLDeviceType t) { return t == kDLCPU || t == kDLCUDAHost; }

/* The argmax check over a contiguous tensor's elements [e0, e1), flat: a
 * branch-free pass over blocks (vectorised), and the predicate itself only
 * in a block with a bad value. With hw clamped to 2^31 (an int32 is below
 * it anyway), v is -1 or in [0, hw) exactly when (uint32_t)v + 1 <= hw.
 * Returns the first bad element or -1. */
static int64_t vo_first_bad_argmax(const int32_t *d, int64_t e0, int64_t e1, int64_t hw) {
  enum { BLOCK = 1024 };
  const uint32_t limit = hw > ((int64_t)1 << 31) ? (uint32_t)1 << 31 : (uint32_t)hw;
  for (int64_t b0 = e0; b0 < e1; b0 += BLOCK) {
    const int64_t b1 = e1 - b0 < BLOCK ? e1 : b0 + BLOCK;
    uint32_t bad = 0;
    for (int64_t e = b0; e < b1; e++) bad |= (uint32_t)((uint32_t)d[e] + 1u > limit);
    if (!bad) continue;
    for (int64_t e = b0; e < b1; e++)
      if (!(d[e] == -1 || (d[e] >= 0 && (int64_t)d[e] < hw))) return e;
  }
  return -1;
}

/* The first bad item of rows [r0, r1) of a tensor the host reads, as a
 * device backend finds it (found->first is left alone when none is bad). */
void vo_find_on_host_rows(const vo_view *t, const vo_view *t2, const vo_k_check *c, int64_t r0,
                          int64_t r1, vo_k_check_found *found) {
  const void *data = vo_view_addr(t), *data2 = vo_view_addr(t2);
  const int64_t len = vo_k_check_row_length(c);
  if (c->kind == VO_K_CHECK_ARGMAX && c->stride[3] == 1 && c->stride[2] == len &&
      c->stride[1] == c->shape[2] * len && c->stride[0] == c->shape[1] * c->stride[1]) {
    const int64_t e = vo_first_bad_argmax(data, r0 * len, r1 * len, c->hw);
    if (e >= 0) {
      found->first = (uint64_t)e;
      vo_k_check_values(data, data2, c, e, found->value);
    }
    return;
  }
  /* rows in order, their offsets stepped rather than divided out (argmax
   * and channel_mapping have K*C*PH rows: millions in a detector's step) */
  int64_t idx[3];
  int64_t o = vo_k_check_row_offset(c, r0, idx);
  for (int64_t r = r0; r < r1; r++) {
    if (vo_k_check_is_roi(c)) {
      idx[0] = r;
      o = r * c->stride[0];
    }
    const int64_t j = vo_k_check_bad_column_at(data, data2, c, r, o, idx);
    if (j >= 0) {
      found->first = (uint64_t)(r * len + j);
      vo_k_check_values(data, data2, c, r * len + j, found->value);
      return;
    }
    if (vo_k_check_is_roi(c)) continue;
    o += c->stride[2];
    if (++idx[2] < c->shape[2]) continue;
    idx[2] = 0;
    o += c->stride[1] - c->shape[2] * c->stride[2];
    if (++idx[1] < c->shape[1]) continue;
    idx[1] = 0;
    idx[0]++;
    o = idx[0] * c->stride[0];
  }
}

static vo_status vo_data_check_failure(const vo_exec *ex, const vo_data_check *d,
                                       const vo_k_check_found *found) {
  const vo_k_check *c = &d->check;
  const char *name = vo_arg_name(ex, d->arg);
  const int64_t len = vo_k_check_row_length(c);
  const int64_t row = (int64_t)found->first / len, col = (int64_t)found->first % len;
  const double v = found->value[0];
  int64_t idx[3];
  vo_k_check_row_offset(c, row, idx);
  switch (c->kind) {
    case VO_K_CHECK_ROIS:
      if (!isfinite(v))
        return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s[%lld, %lld] = %g is not finite",
                       ex->op_name, name, (long long)row, (long long)col, v);
      if (col != 0) /* rotated: (batch, cx, cy, w, h, angle) */
        return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                       "%s: %s[%lld, %lld] = %g is a negative box %s (w and h must be >= 0)",
                       ex->op_name, name, (long long)row, (long long)col, v,
                       col == 3 ? "width" : "height");
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s[%lld, 0] = %g is not a batch index of input with N = %lld",
                     ex->op_name, name, (long long)row, v, (long long)c->batch_size);
    case VO_K_CHECK_RBOXES:
      if (!isfinite(v))
        return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                       "%s: %s[%lld, %lld] = %g is not finite (boxes are cx, cy, w, h, angle)",
                       ex->op_name, name, (long long)row, (long long)col, v);
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s[%lld, %lld] = %g is negative: a box's %s must be >= 0", ex->op_name,
                     name, (long long)row, (long long)col, v, col == 2 ? "width" : "height");
    case VO_K_CHECK_ROI_GRID: {
      const double rh = found->value[0], rw = found->value[1];
      const int m = (int)found->value[2];
      const double gh = ceil(rh / (double)c->pooled_height);
      const double gw = ceil(rw / (double)c->pooled_width);
      int64_t lh, lw;
      vo_k_check_grid_limits(c, m, &lh, &lw);
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s[%lld] spans %g x %g feature pixels (h x w), so adaptive sampling "
                     "(sampling_ratio <= 0) would take %.0f x %.0f samples per bin; a %lld x %lld "
                     "map allows at most %lld x %lld (4x what a RoI inside it needs): pass a "
                     "sampling_ratio in 1..%d",
                     ex->op_name, name, (long long)row, rh, rw, gh, gw, (long long)c->height[m],
                     (long long)c->width[m], (long long)lh, (long long)lw, VO_K_MAX_SAMPLING_RATIO);
    }
    case VO_K_CHECK_ARGMAX:
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s[%lld, %lld, %lld, %lld] = %d is neither -1 nor an index in "
                     "[0, H*W = %lld)",
                     ex->op_name, name, (long long)idx[0], (long long)idx[1], (long long)idx[2],
                     (long long)col, (int)v, (long long)c->hw);
    case VO_K_CHECK_LEVELS: {
      const double through = found->value[1], before = found->value[2];
      if (col == 2)
        return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                       "%s: %s[%lld] = %.0f, expected %.0f (the keys H * W of the levels before "
                       "it in %s)",
                       ex->op_name, vo_arg_name(ex, d->arg2), (long long)row, v, before, name);
      if (v < 0)
        return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                       "%s: %s[%lld, %lld] = %.0f is negative (a level's %s)", ex->op_name, name,
                       (long long)row, (long long)col, v, col == 0 ? "height" : "width");
      if (through > (double)c->keys)
        return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                       "%s: %s's levels 0..%lld hold more keys (H * W) than value's S = %lld",
                       ex->op_name, name, (long long)row, (long long)c->keys);
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s's %lld levels hold %.0f keys (H * W), but value has S = %lld",
                     ex->op_name, name, (long long)row + 1, through, (long long)c->keys);
    }
    default: { /* VO_K_CHECK_CHANNEL_MAPPING */
      const int64_t want = (idx[1] * c->shape[2] + idx[2]) * c->shape[3] + col;
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s[%lld, %lld, %lld, %lld] = %d, expected %lld (the input channel "
                     "the forward reads for that output channel and bin)",
                     ex->op_name, name, (long long)idx[0], (long long)idx[1], (long long)idx[2],
                     (long long)col, (int)v, (long long)want);
    }
  }
}

vo_status vo_run_data_checks(const vo_exec *ex) {
  if (ex->num_data_checks == 0) return VO_OK;
  vo_k_check_found found[VO_MAX_DATA_CHECKS];
  for (int i = 0; i < ex->num_data_checks; i++) found[i].first = VO_K_CHECK_NONE;
  /* the CPU backend's hook runs the same host loop on the context's threads */
  const int cpu_hook = ex->backend && ex->backend->check_data && ex->device.device_type == kDLCPU;
  if (vo_host_readable(ex->device.device_type) && !cpu_hook) {
    for (int i = 0; i < ex->num_data_checks; i++) {
      const vo_data_check *d = &ex->data_checks[i];
      if (ex->inputs[d->arg].numel == 0) continue;
      vo_find_on_host_rows(&ex->inputs[d->arg], &ex->inputs[vo_data_check_second(d)], &d->check, 0,
                           vo_k_check_rows(&d->check), &found[i]);
      if (found[i].first != VO_K_CHECK_NONE) return vo_data_check_failure(ex, d, &found[i]);
    }
    return VO_OK;
  }
  if (!ex->backend) return VO_OK; /* no usable backend: the caller reports that */
  if (!ex->backend->check_data)
    return vo_fail(VO_ERROR_BACKEND_UNAVAILABLE,
                   "%s: the %s backend cannot check the values of %s on its device", ex->op_name,
                   ex->backend->name, vo_arg_name(ex, ex->data_checks[0].arg));
  const vo_status st = ex->backend->check_data(ex, found);
  if (st != VO_OK) return st;
  for (int i = 0; i < ex->num_data_checks; i++)
    if (found[i].first != VO_K_CHECK_NONE)
      return vo_data_check_failure(ex, &ex->data_checks[i], &found[i]);
  return VO_OK;
}
