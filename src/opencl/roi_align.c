/*
 * OpenCL roi_align and roi_align_backward: the host glue of
 * opencl/roi_align.cl, mirroring src/cuda/roi_align.cu: the forward over
 * every output element; the backward atomic (fast) or, under
 * ctx->deterministic (and for float64 without int64 atomics), a gather in
 * the CPU's order, helped by each RoI's pixel box when the boxes fit the
 * workspace limit. roi_align_rotated's glue runs the same launches over its
 * own program (vo_cl_ra_kernels, opencl/roi_common.h).
 */
#include <stdio.h>

#include <string.h>

#include "core/roi_align_args.h"
#include "kernels/roi_align_rotated.h"
#include "opencl/roi_common.h"

static const char *vo_cl_compute_suffix(vo_dtype d) { return d == VO_F64 ? "f64" : "f32"; }

/* Kernel `what` ("", "_scatter", "_box", "_gather") of k's program for the
 * dtype suffix sfx, started in l. */
static vo_status vo_cl_ra_begin(vo_cl_launch *l, const vo_cl_call *c, const vo_cl_ra_kernels *k,
                                const char *what, const char *sfx) {
  char name[64];
  snprintf(name, sizeof name, "vo_cl_%s%s_%s", k->program, what, sfx);
  vo_status st = vo_cl_launch_begin(l, c, k->program, name);
  if (st == VO_OK) vo_cl_arg(l, k->args, k->args_size);
  return st;
}

vo_status vo_cl_ra_forward(const vo_exec *ex, const vo_cl_ra_kernels *k) {
  const vo_roi_align_params *p = k->p;
  const int64_t n = p->out->numel;
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || n == 0) return st;
  vo_cl_launch l;
  if ((st = vo_cl_ra_begin(&l, &c, k, "", vo_cl_suffix(ex->dtype))) != VO_OK) return st;
  vo_cl_arg_view(&l, p->input);
  vo_cl_arg_view(&l, p->rois);
  vo_cl_arg_i64(&l, n);
  vo_cl_arg_view(&l, p->out);
  return vo_cl_launch_run(&l, n);
}

/* The fast backward: grad spread with atomics into acc (byte offset
 * acc_off), grad_input itself or a float32 copy of it. */
static vo_status vo_cl_ra_scatter(const vo_cl_call *c, const vo_cl_ra_kernels *k,
                                  const vo_view *grad, cl_mem acc, uint64_t acc_off) {
  const vo_roi_align_params *p = k->p;
  vo_cl_launch l;
  vo_status st = vo_cl_ra_begin(&l, c, k, "_scatter", vo_cl_suffix(c->ex->dtype));
  if (st != VO_OK) return st;
  vo_cl_arg_view(&l, grad);
  vo_cl_arg_view(&l, p->rois);
  vo_cl_arg_i64(&l, grad->numel);
  vo_cl_arg_mem(&l, acc, acc_off);
  return vo_cl_launch_run(&l, grad->numel);
}

/* The scatter of grad's channels [c0, c0 + cc) into a [N,cc,H,W]
 * accumulator: the kernels' arguments for cc channels (every family's
 * struct starts with vo_k_roi_align_args) over that part of grad. */
static vo_status vo_cl_ra_scatter_channels(const vo_cl_call *c, const void *user, int64_t c0,
                                           int64_t cc, cl_mem acc, const uint64_t *acc_off) {
  const vo_cl_ra_kernels *k = user;
  union {
    vo_k_roi_align_args base;
    vo_k_roi_align_rotated_args rotated;
  } args; /* (every family's struct; k->args_size is one of theirs) */
  memcpy(&args, k->args, k->args_size < sizeof args ? k->args_size : sizeof args);
  args.base.channels = cc;
  vo_cl_ra_kernels part = *k;
  part.args = &args;
  const vo_view grad = vo_cl_roi_channels(k->p->grad, c0, cc);
  return vo_cl_ra_scatter(c, &part, &grad, acc, acc_off[0]);
}

/* The deterministic backward: RoI boxes (when they fit), then the gather. */
static vo_status vo_cl_ra_gather(const vo_cl_call *c, const vo_cl_ra_kernels *k) {
  const vo_exec *ex = c->ex;
  const vo_roi_align_params *p = k->p;
  const int64_t num_rois = p->rois->shape[0];
  cl_mem boxes = vo_cl_roi_try_workspace(ex, (uint64_t)num_rois * sizeof(vo_k_ra_box));
  vo_cl_launch l;
  vo_status st = VO_OK;
  if (boxes && (st = vo_cl_ra_begin(&l, c, k, "_box", vo_cl_compute_suffix(ex->dtype))) == VO_OK) {
    vo_cl_arg_view(&l, p->rois);
    vo_cl_arg_i64(&l, num_rois);
    vo_cl_arg_mem(&l, boxes, 0);
    st = vo_cl_launch_run(&l, num_rois);
  }
  if (st == VO_OK && (st = vo_cl_ra_begin(&l, c, k, "_gather", vo_cl_suffix(ex->dtype))) == VO_OK) {
    vo_cl_arg_view(&l, p->grad);
    vo_cl_arg_view(&l, p->rois);
    vo_cl_arg_mem(&l, boxes, 0);
    vo_cl_arg_i64(&l, num_rois);
    vo_cl_arg_i64(&l, p->out->numel);
    vo_cl_arg_view(&l, p->out);
    st = vo_cl_launch_run(&l, p->out->numel);
  }
  vo_workspace_free(ex->ctx, ex->device, boxes);
  return st;
}

vo_status vo_cl_ra_backward(const vo_exec *ex, const vo_cl_ra_kernels *k) {
  const vo_roi_align_params *p = k->p;
  const int64_t n = p->out->numel;
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || n == 0) return st;
  if (p->rois->shape[0] == 0 || p->grad->numel == 0) return vo_cl_roi_zero(&c, p->out);
  if (!ex->ctx->deterministic && vo_cl_roi_atomics(&c, ex->dtype)) {
    if (ex->dtype == VO_F32 || ex->dtype == VO_F64) {
      if ((st = vo_cl_roi_zero(&c, p->out)) != VO_OK) return st;
      return vo_cl_ra_scatter(&c, k, p->grad, (cl_mem)p->out->data, p->out->byte_offset);
    }
    /* Half types: a float32 accumulator, in channel chunks under the limit */
    int done;
    st = vo_cl_roi_half_scatter(&c, k->program, p->out, 1, 1, vo_cl_ra_scatter_channels, k, &done);
    if (st != VO_OK || done) return st;
  }
  return vo_cl_ra_gather(&c, k);
}

vo_status vo_opencl_roi_align(const vo_exec *ex) {
  const vo_roi_align_params *p = &ex->p.roi_align;
  const vo_k_roi_align_args a = vo_roi_align_kernel_args(p, p->input);
  const vo_cl_ra_kernels k = {"roi_align", &a, sizeof a, p};
  return vo_cl_ra_forward(ex, &k);
}

vo_status vo_opencl_roi_align_backward(const vo_exec *ex) {
  const vo_roi_align_params *p = &ex->p.roi_align;
  const vo_k_roi_align_args a = vo_roi_align_kernel_args(p, p->grad);
  const vo_cl_ra_kernels k = {"roi_align", &a, sizeof a, p};
  return vo_cl_ra_backward(ex, &k);
}
