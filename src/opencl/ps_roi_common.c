/*
 * The OpenCL ps ops' host drivers (opencl/ps_roi_common.h): kernels queued
 * on the call's queue, nothing read back. vo_call has checked the rois' and
 * channel_mapping's values on the device before (opencl/data_checks.cl).
 */
#include <stdio.h>
#include <string.h>

#include "opencl/ps_roi_common.h"
#include "opencl/roi_common.h"

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

/* The fast backward's scatter of every grad element of p->src into acc
 * (buffer acc_mem from acc_off, zeroed). */
static vo_status vo_cl_ps_scatter(const vo_cl_call *c, const vo_cl_ps_call *p, vo_dtype dtype,
                                  cl_mem acc_mem, uint64_t acc_off) {
  const int64_t grads = p->src->numel;
  vo_cl_launch l;
  vo_status st = VO_OK;
  if (grads > 0 && (st = vo_cl_ps_begin(&l, c, p, "scatter_", dtype, grads)) == VO_OK) {
    vo_cl_arg_mem(&l, acc_mem, acc_off);
    st = vo_cl_launch_run(&l, grads);
  }
  return st;
}

/* The scatter of output channels [c0, c0 + cc) / bins (input channels [c0,
 * c0 + cc)) into a zeroed [N,cc,H,W] accumulator. */
static vo_status vo_cl_ps_scatter_channels(const vo_cl_call *c, const void *user, int64_t c0,
                                           int64_t cc, cl_mem acc, const uint64_t *acc_off) {
  const vo_cl_ps_call *p = user;
  const int64_t bins = p->src->shape[2] * p->src->shape[3];
  unsigned char args[256]; /* (either op's struct) */
  if (p->args_size > sizeof args)
    return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: argument struct of %zu bytes", p->program,
                   p->args_size);
  memcpy(args, p->args, p->args_size);
  p->set_channels(args, cc, cc / bins);
  const vo_view grad = vo_cl_roi_channels(p->src, c0 / bins, cc / bins);
  vo_cl_ps_call part = *p;
  part.args = args;
  part.src = &grad;
  return vo_cl_ps_scatter(c, &part, c->ex->dtype, acc, acc_off[0]);
}

vo_status vo_cl_ps_backward(const vo_exec *ex, const vo_cl_ps_call *p, const vo_view *out) {
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  const int64_t n = out->numel;
  if (st != VO_OK || n == 0) return st;
  if (!ex->ctx->deterministic) {
    if (vo_dtype_size(out->dtype) != 2) {
      if ((st = vo_cl_roi_zero(&c, out)) != VO_OK) return st;
      return vo_cl_ps_scatter(&c, p, out->dtype, (cl_mem)out->data, out->byte_offset);
    }
    int done;
    st = vo_cl_roi_half_scatter(&c, p->program, out, 1, p->src->shape[2] * p->src->shape[3],
                                vo_cl_ps_scatter_channels, p, &done);
    if (st != VO_OK || done) return st;
  }
  vo_cl_launch l;
  if ((st = vo_cl_ps_begin(&l, &c, p, "gather_", out->dtype, n)) != VO_OK) return st;
  vo_cl_arg_view(&l, out);
  return vo_cl_launch_run(&l, n);
}
