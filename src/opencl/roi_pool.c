/*
 * OpenCL roi_pool and roi_pool_backward: the host glue of
 * opencl/roi_pool.cl, mirroring src/cuda/roi_pool.cu: the forward over every
 * output element (value and argmax); the backward atomic (fast) or, under
 * ctx->deterministic (and for float64 without int64 atomics), a gather in
 * the CPU's order, restricted to the bins covering a pixel when every
 * argmax lies in its own bin.
 */
#include <stdio.h>

#include "kernels/roi_pool.h"
#include "opencl/roi_common.h"

/* The kernels' view of a call: src is the input (forward) or grad. */
static vo_k_roi_pool_args vo_cl_roi_pool_args(const vo_roi_pool_params *p, const vo_view *src) {
  return vo_k_roi_pool_args_of(p->spatial_scale, p->pooled_height, p->pooled_width, p->batch_size,
                               p->channels, p->height, p->width, (int)p->rois->dtype,
                               p->rois->stride, src->stride, p->argmax ? p->argmax->stride : NULL);
}

vo_status vo_opencl_roi_pool(const vo_exec *ex) {
  const vo_roi_pool_params *p = &ex->p.roi_pool;
  const int64_t n = p->out->numel;
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || n == 0) return st;
  const vo_k_roi_pool_args a = vo_cl_roi_pool_args(p, p->input);
  char name[48];
  snprintf(name, sizeof name, "vo_cl_roi_pool_%s", vo_cl_suffix(ex->dtype));
  vo_cl_launch l;
  if ((st = vo_cl_launch_begin(&l, &c, "roi_pool", name)) != VO_OK) return st;
  vo_cl_arg(&l, &a, sizeof a);
  vo_cl_arg_view(&l, p->input);
  vo_cl_arg_view(&l, p->rois);
  vo_cl_arg_i64(&l, n);
  vo_cl_arg_view(&l, p->out);
  vo_cl_arg_view(&l, p->argmax_out);
  return vo_cl_launch_run(&l, n);
}

/* The fast backward: each grad element added at its argmax in acc (byte
 * offset acc_off), grad_input itself or a float32 copy of it. */
static vo_status vo_cl_roi_pool_scatter(const vo_cl_call *c, const vo_k_roi_pool_args *a,
                                        const vo_view *grad, const vo_view *argmax, cl_mem acc,
                                        uint64_t acc_off) {
  const vo_roi_pool_params *p = &c->ex->p.roi_pool;
  char name[48];
  snprintf(name, sizeof name, "vo_cl_roi_pool_scatter_%s", vo_cl_suffix(c->ex->dtype));
  vo_cl_launch l;
  vo_status st = vo_cl_launch_begin(&l, c, "roi_pool", name);
  if (st != VO_OK) return st;
  vo_cl_arg(&l, a, sizeof *a);
  vo_cl_arg_view(&l, grad);
  vo_cl_arg_view(&l, argmax);
  vo_cl_arg_view(&l, p->rois);
  vo_cl_arg_i64(&l, grad->numel);
  vo_cl_arg_mem(&l, acc, acc_off);
  return vo_cl_launch_run(&l, grad->numel);
}

/* The scatter of channels [c0, c0 + cc) of grad and argmax into a
 * [N,cc,H,W] accumulator. */
static vo_status vo_cl_roi_pool_scatter_channels(const vo_cl_call *c, const void *user, int64_t c0,
                                                 int64_t cc, cl_mem acc, const uint64_t *acc_off) {
  const vo_roi_pool_params *p = &c->ex->p.roi_pool;
  vo_k_roi_pool_args a = *(const vo_k_roi_pool_args *)user;
  a.channels = cc;
  const vo_view grad = vo_cl_roi_channels(p->grad, c0, cc);
  const vo_view argmax = vo_cl_roi_channels(p->argmax, c0, cc);
  return vo_cl_roi_pool_scatter(c, &a, &grad, &argmax, acc, acc_off[0]);
}

/* The deterministic backward: the in-bins test, then the gather. */
static vo_status vo_cl_roi_pool_gather(const vo_cl_call *c, const vo_k_roi_pool_args *a) {
  const vo_exec *ex = c->ex;
  const vo_roi_pool_params *p = &ex->p.roi_pool;
  cl_mem in_bins = vo_cl_workspace(ex, sizeof(int));
  if (!in_bins) return VO_ERROR_OUT_OF_MEMORY;
  const int one = 1;
  vo_status st = vo_cl_fill(c, in_bins, 0, &one, sizeof one, sizeof one);
  char name[48];
  vo_cl_launch l;
  snprintf(name, sizeof name, "vo_cl_roi_pool_in_bins_%s", ex->dtype == VO_F64 ? "f64" : "f32");
  if (st == VO_OK && (st = vo_cl_launch_begin(&l, c, "roi_pool", name)) == VO_OK) {
    vo_cl_arg(&l, a, sizeof *a);
    vo_cl_arg_view(&l, p->argmax);
    vo_cl_arg_view(&l, p->rois);
    vo_cl_arg_i64(&l, p->grad->numel);
    vo_cl_arg_mem(&l, in_bins, 0);
    st = vo_cl_launch_run(&l, p->grad->numel);
  }
  snprintf(name, sizeof name, "vo_cl_roi_pool_gather_%s", vo_cl_suffix(ex->dtype));
  if (st == VO_OK && (st = vo_cl_launch_begin(&l, c, "roi_pool", name)) == VO_OK) {
    vo_cl_arg(&l, a, sizeof *a);
    vo_cl_arg_view(&l, p->grad);
    vo_cl_arg_view(&l, p->argmax);
    vo_cl_arg_view(&l, p->rois);
    vo_cl_arg_i64(&l, p->rois->shape[0]);
    vo_cl_arg_mem(&l, in_bins, 0);
    vo_cl_arg_i64(&l, p->out->numel);
    vo_cl_arg_view(&l, p->out);
    st = vo_cl_launch_run(&l, p->out->numel);
  }
  vo_workspace_free(ex->ctx, ex->device, in_bins);
  return st;
}

vo_status vo_opencl_roi_pool_backward(const vo_exec *ex) {
  const vo_roi_pool_params *p = &ex->p.roi_pool;
  const int64_t n = p->out->numel;
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || n == 0) return st;
  if (p->rois->shape[0] == 0 || p->grad->numel == 0) return vo_cl_roi_zero(&c, p->out);
  const vo_k_roi_pool_args a = vo_cl_roi_pool_args(p, p->grad);
  if (!ex->ctx->deterministic && vo_cl_roi_atomics(&c, ex->dtype)) {
    if (ex->dtype == VO_F32 || ex->dtype == VO_F64) {
      if ((st = vo_cl_roi_zero(&c, p->out)) != VO_OK) return st;
      return vo_cl_roi_pool_scatter(&c, &a, p->grad, p->argmax, (cl_mem)p->out->data,
                                    p->out->byte_offset);
    }
    /* Half types: a float32 accumulator, in channel chunks under the limit */
    int done;
    st = vo_cl_roi_half_scatter(&c, "roi_pool", p->out, 1, 1, vo_cl_roi_pool_scatter_channels, &a,
                                &done);
    if (st != VO_OK || done) return st;
  }
  return vo_cl_roi_pool_gather(&c, &a);
}
