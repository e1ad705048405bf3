/*
 * The OpenCL ps ops' host drivers (opencl/ps_roi_common.h): kernels queued
 * on the call's queue, nothing read back. vo_call has checked the rois' and
 * channel_mapping's values on the device before (opencl/data_checks.cl).
 */
#include <stdio.h>

#include "opencl/ps_roi_common.h"

/* Starts kernel vo_cl_<program>_<step><sfx> (step "" or "scatter_" ...) with
 * its leading arguments: args, src, rois, num_rois, n. */
static vo_status vo_cl_ps_begin(vo_cl_launch *l, const vo_cl_call *c, const vo_cl_ps_call *p,
                                const char *step, vo_dtype dtype, int64_t n) {
  char name[64];
  snprintf(name, sizeof name, "vo_cl_%s_%s%s", p->program, step, vo_cl_suffix(dtype));
  const vo_status st = vo_cl_launch_begin(l, c, p->program, name);
  if (st != VO_OK) return st;
  vo_cl_arg(l, p->args, p->args_size);
  vo_cl_arg_view(l, p->src);
  vo_cl_arg_view(l, p->rois);
  vo_cl_arg_i64(l, p->rois->shape[0]);
  vo_cl_arg_i64(l, n);
  return VO_OK;
}

vo_status vo_cl_ps_forward(const vo_exec *ex, const vo_cl_ps_call *p, const vo_view *out,
                           const vo_view *mapping) {
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || out->numel == 0) return st;
  vo_cl_launch l;
  if ((st = vo_cl_ps_begin(&l, &c, p, "", out->dtype, out->numel)) != VO_OK) return st;
  vo_cl_arg_view(&l, out);
  vo_cl_arg_view(&l, mapping);
  return vo_cl_launch_run(&l, out->numel);
}

/* The fast backward: zero acc (buffer acc_mem from acc_off, n elements of
 * the compute type), scatter every grad element into it, and for the half
 * types convert it into out. */
static vo_status vo_cl_ps_scatter(const vo_cl_call *c, const vo_cl_ps_call *p, const vo_view *out,
                                  cl_mem acc_mem, uint64_t acc_off, size_t acc_elem) {
  const int64_t n = out->numel, grads = p->src->numel;
  const unsigned char zero = 0;
  vo_status st = vo_cl_fill(c, acc_mem, acc_off, &zero, 1, (size_t)n * acc_elem);
  vo_cl_launch l;
  if (st == VO_OK && grads > 0 &&
      (st = vo_cl_ps_begin(&l, c, p, "scatter_", out->dtype, grads)) == VO_OK) {
    vo_cl_arg_mem(&l, acc_mem, acc_off);
    st = vo_cl_launch_run(&l, grads);
  }
  if (st != VO_OK || vo_dtype_size(out->dtype) != 2) return st;
  char name[64];
  snprintf(name, sizeof name, "vo_cl_%s_convert_%s", p->program, vo_cl_suffix(out->dtype));
  if ((st = vo_cl_launch_begin(&l, c, p->program, name)) != VO_OK) return st;
  vo_cl_arg_mem(&l, acc_mem, acc_off);
  vo_cl_arg_i64(&l, n);
  vo_cl_arg_view(&l, out);
  return vo_cl_launch_run(&l, n);
}

vo_status vo_cl_ps_backward(const vo_exec *ex, const vo_cl_ps_call *p, const vo_view *out) {
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  const int64_t n = out->numel;
  if (st != VO_OK || n == 0) return st;
  const int half = vo_dtype_size(out->dtype) == 2;
  const size_t limit = ex->ctx->workspace_limit;
  if (ex->ctx->deterministic || (half && (uint64_t)n > limit / sizeof(float))) {
    vo_cl_launch l;
    if ((st = vo_cl_ps_begin(&l, &c, p, "gather_", out->dtype, n)) != VO_OK) return st;
    vo_cl_arg_view(&l, out);
    return vo_cl_launch_run(&l, n);
  }
  if (!half)
    return vo_cl_ps_scatter(&c, p, out, (cl_mem)out->data, out->byte_offset,
                            vo_dtype_size(out->dtype));
  cl_mem acc = vo_cl_workspace(ex, (size_t)n * sizeof(float));
  if (!acc) return VO_ERROR_OUT_OF_MEMORY;
  st = vo_cl_ps_scatter(&c, p, out, acc, 0, sizeof(float));
  vo_workspace_free(ex->ctx, ex->device, acc);
  return st;
}
