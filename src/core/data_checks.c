/*
 * Runs the value checks an op's check function declared (ex->data_checks),
 * in order, before vo_call's kernel: the host loops over the portable
 * predicate of kernels/data_checks.h for tensors it can read (the CPU
 * backend's check_data hook runs that loop on its threads), a device
 * backend's check_data hook runs the same predicate on the device, and the
 * message about the first bad value is formed here, once for all. For
 * tensors in device memory the context chooses when (vo_device_checks):
 * before the kernel with the host waiting (the default), deferred (queued
 * into a block of results the host reads back later, with what each
 * message needs kept here: the context's settings for this live here
 * too), or not at all.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

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

/* Where a check came from, all its message needs: kept past the call for
 * a deferred check. */
typedef struct vo_check_site {
  const char *op_name, *name, *name2; /* static strings of the op table */
  vo_k_check check;
} vo_check_site;

static void vo_check_site_of(const vo_exec *ex, const vo_data_check *d, vo_check_site *site) {
  site->op_name = ex->op_name;
  site->name = vo_arg_name(ex, d->arg);
  site->name2 = d->check.kind == VO_K_CHECK_LEVELS ? vo_arg_name(ex, d->arg2) : site->name;
  site->check = d->check;
}

static vo_status vo_check_failure(const vo_check_site *site, const vo_k_check_found *found) {
  const vo_k_check *c = &site->check;
  const char *name = site->name;
  const int64_t len = vo_k_check_row_length(c);
  const int64_t row = (int64_t)found->first / len, col = (int64_t)found->first % len;
  const double v = found->value[0];
  int64_t idx[3];
  vo_k_check_row_offset(c, row, idx);
  switch (c->kind) {
    case VO_K_CHECK_ROIS:
      if (!isfinite(v))
        return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s[%lld, %lld] = %g is not finite",
                       site->op_name, name, (long long)row, (long long)col, v);
      if (col != 0) /* rotated: (batch, cx, cy, w, h, angle) */
        return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                       "%s: %s[%lld, %lld] = %g is a negative box %s (w and h must be >= 0)",
                       site->op_name, name, (long long)row, (long long)col, v,
                       col == 3 ? "width" : "height");
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s[%lld, 0] = %g is not a batch index of input with N = %lld",
                     site->op_name, name, (long long)row, v, (long long)c->batch_size);
    case VO_K_CHECK_RBOXES:
      if (!isfinite(v))
        return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                       "%s: %s[%lld, %lld] = %g is not finite (boxes are cx, cy, w, h, angle)",
                       site->op_name, name, (long long)row, (long long)col, v);
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s[%lld, %lld] = %g is negative: a box's %s must be >= 0", site->op_name,
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
                     site->op_name, name, (long long)row, rh, rw, gh, gw, (long long)c->height[m],
                     (long long)c->width[m], (long long)lh, (long long)lw, VO_K_MAX_SAMPLING_RATIO);
    }
    case VO_K_CHECK_ARGMAX:
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s[%lld, %lld, %lld, %lld] = %d is neither -1 nor an index in "
                     "[0, H*W = %lld)",
                     site->op_name, name, (long long)idx[0], (long long)idx[1], (long long)idx[2],
                     (long long)col, (int)v, (long long)c->hw);
    case VO_K_CHECK_LEVELS: {
      const double through = found->value[1], before = found->value[2];
      if (col == 2)
        return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                       "%s: %s[%lld] = %.0f, expected %.0f (the keys H * W of the levels before "
                       "it in %s)",
                       site->op_name, site->name2, (long long)row, v, before, name);
      if (v < 0)
        return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                       "%s: %s[%lld, %lld] = %.0f is negative (a level's %s)", site->op_name, name,
                       (long long)row, (long long)col, v, col == 0 ? "height" : "width");
      if (through > (double)c->keys)
        return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                       "%s: %s's levels 0..%lld hold more keys (H * W) than value's S = %lld",
                       site->op_name, name, (long long)row, (long long)c->keys);
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s's %lld levels hold %.0f keys (H * W), but value has S = %lld",
                     site->op_name, name, (long long)row + 1, through, (long long)c->keys);
    }
    default: { /* VO_K_CHECK_CHANNEL_MAPPING */
      const int64_t want = (idx[1] * c->shape[2] + idx[2]) * c->shape[3] + col;
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s[%lld, %lld, %lld, %lld] = %d, expected %lld (the input channel "
                     "the forward reads for that output channel and bin)",
                     site->op_name, name, (long long)idx[0], (long long)idx[1], (long long)idx[2],
                     (long long)col, (int)v, (long long)want);
    }
  }
}

static vo_status vo_data_check_failure(const vo_exec *ex, const vo_data_check *d,
                                       const vo_k_check_found *found) {
  vo_check_site site;
  vo_check_site_of(ex, d, &site);
  return vo_check_failure(&site, found);
}

/* ------------------------------------------------------- deferred checks */

/* Checks pending at once, at most (a call has at most VO_MAX_DATA_CHECKS);
 * a call that needs more slots waits for them first. */
#define VO_DEFERRED_SLOTS 256

/* A context's deferred checks: VO_DEVICE_CHECKS_DEFERRED queues each call's
 * checks on its queue into the next slots of one device block, and keeps
 * what their messages need here; reading the block back (a drain) waits
 * for them all. The slots of one drain share a backend, device, queue and,
 * on the default queue, a thread (CUDA's default queue is per thread). */
typedef struct vo_deferred_checks {
  pthread_mutex_t mu;
  int count;   /* slots in use */
  void *slots; /* device memory for VO_DEFERRED_SLOTS results; NULL while count is 0 */
  const vo_backend *backend;
  DLDevice device;
  void *queue;
  pthread_t thread;
  vo_check_site site[VO_DEFERRED_SLOTS];
  vo_k_check_found found[VO_DEFERRED_SLOTS];
} vo_deferred_checks;

/* Waits for the pending checks (d->mu held), frees their block and reports
 * the first bad value in call order; `later`: a later call reports it. */
static vo_status vo_deferred_drain(const vo_context *ctx, vo_deferred_checks *d, int later) {
  if (d->count == 0) return VO_OK;
  const int n = d->count;
  d->count = 0;
  const vo_backend *b = d->backend;
  vo_status st = VO_OK;
  if (!d->queue && b->synchronize && !pthread_equal(d->thread, pthread_self()))
    st = b->synchronize(d->device);
  if (st == VO_OK)
    st =
        b->copy_to_host(d->device, d->found, d->slots, 0, sizeof d->found[0] * (size_t)n, d->queue);
  /* (the read waited for every use of the block) */
  vo_workspace_free(ctx, d->device, d->slots);
  d->slots = NULL;
  if (st != VO_OK) return st;
  for (int i = 0; i < n; i++) {
    if (d->found[i].first == VO_K_CHECK_NONE) continue;
    st = vo_check_failure(&d->site[i], &d->found[i]);
    if (later) { /* (vo_fail writes the buffer vo_last_error reads) */
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", vo_last_error());
      st = vo_fail(st, "%s (found by the deferred checks of an earlier call)", msg);
    }
    return st;
  }
  return VO_OK;
}

/* Queues ex's checks as the next slots of ctx's deferred block. */
static vo_status vo_defer_data_checks(const vo_exec *ex) {
  vo_deferred_checks *d = ex->ctx->deferred;
  const int n = ex->num_data_checks;
  vo_status st = VO_OK;
  pthread_mutex_lock(&d->mu);
  if (d->count > 0 && (d->count + n > VO_DEFERRED_SLOTS || d->backend != ex->backend ||
                       d->device.device_type != ex->device.device_type ||
                       d->device.device_id != ex->device.device_id || d->queue != ex->queue ||
                       (!ex->queue && !pthread_equal(d->thread, pthread_self()))))
    st = vo_deferred_drain(ex->ctx, d, 1);
  if (st == VO_OK && d->count == 0) {
    d->slots = vo_workspace_alloc(ex->ctx, ex->device, sizeof d->found, ex->op_name);
    if (!d->slots) st = VO_ERROR_OUT_OF_MEMORY;
    d->backend = ex->backend;
    d->device = ex->device;
    d->queue = ex->queue;
    d->thread = pthread_self();
  }
  if (st == VO_OK)
    st = ex->backend->queue_data_checks(ex, d->slots, sizeof d->found[0] * (uint64_t)d->count);
  if (st == VO_OK) {
    for (int i = 0; i < n; i++) vo_check_site_of(ex, &ex->data_checks[i], &d->site[d->count + i]);
    d->count += n;
  } else if (d->count == 0 && d->slots) {
    vo_workspace_free(ex->ctx, ex->device, d->slots); /* (nothing of it was queued) */
    d->slots = NULL;
  }
  pthread_mutex_unlock(&d->mu);
  return st;
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
  const vo_device_checks mode = cpu_hook ? VO_DEVICE_CHECKS_SYNC : ex->ctx->device_checks;
  if (mode == VO_DEVICE_CHECKS_OFF) return VO_OK;
  if (mode == VO_DEVICE_CHECKS_DEFERRED && ex->ctx->deferred && ex->backend->queue_data_checks)
    return vo_defer_data_checks(ex);
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

/* ------------------------------------------------- the context's settings */

vo_status vo_context_set_device_checks(vo_context *ctx, vo_device_checks mode) {
  if (!ctx) return vo_fail(VO_ERROR_INVALID_ARGUMENT, "vo_context_set_device_checks: ctx is NULL");
  if (mode != VO_DEVICE_CHECKS_SYNC && mode != VO_DEVICE_CHECKS_DEFERRED &&
      mode != VO_DEVICE_CHECKS_OFF)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "vo_context_set_device_checks: unknown mode %d (expected VO_DEVICE_CHECKS_SYNC, "
                   "_DEFERRED or _OFF)",
                   (int)mode);
  if (mode == VO_DEVICE_CHECKS_DEFERRED && !ctx->deferred) {
    vo_deferred_checks *d = calloc(1, sizeof *d);
    if (!d || pthread_mutex_init(&d->mu, NULL) != 0) {
      free(d);
      return vo_fail(VO_ERROR_OUT_OF_MEMORY, "vo_context_set_device_checks: out of memory");
    }
    ctx->deferred = d;
  }
  ctx->device_checks = mode;
  return vo_context_device_status(ctx);
}

vo_device_checks vo_context_device_checks(const vo_context *ctx) {
  return ctx ? ctx->device_checks : VO_DEVICE_CHECKS_SYNC;
}

vo_status vo_context_device_status(vo_context *ctx) {
  if (!ctx) return vo_fail(VO_ERROR_INVALID_ARGUMENT, "vo_context_device_status: ctx is NULL");
  vo_deferred_checks *d = ctx->deferred;
  if (!d) return VO_OK;
  pthread_mutex_lock(&d->mu);
  const vo_status st = vo_deferred_drain(ctx, d, 0);
  pthread_mutex_unlock(&d->mu);
  return st;
}

void vo_deferred_checks_destroy(vo_context *ctx) {
  vo_deferred_checks *d = ctx->deferred;
  if (!d) return;
  (void)vo_context_device_status(ctx); /* waits: queued checks still write the block */
  pthread_mutex_destroy(&d->mu);
  free(d);
  ctx->deferred = NULL;
}
