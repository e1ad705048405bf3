/*
 * OpenCL multi_scale_roi_align and its backward: the host glue of
 * opencl/multi_scale_roi_align.cl, mirroring src/cuda/multi_scale_roi_align.cu
 * (levels found on the device, the rois never read back), with one launch
 * per pyramid level and the pyramid's arguments in a small read-only buffer.
 * The backward is atomic (fast) or, under ctx->deterministic (and for
 * float64 without int64 atomics), a per-level gather in RoI order.
 */
#include <stdio.h>

#include "core/roi_align_args.h"
#include "opencl/roi_common.h"

/* The pyramid's arguments as a device buffer. */
static vo_status vo_cl_msra_pyramid(const vo_cl_call *c, cl_mem *pyr) {
  const vo_k_msra_args m = vo_msra_kernel_args(&c->ex->p.multi_scale_roi_align);
  return vo_cl_roi_constants(c, &m, sizeof m, pyr);
}

/* Starts kernel `base`_<suffix> with its first two arguments (pyr, level). */
static vo_status vo_cl_msra_begin(vo_cl_launch *l, const vo_cl_call *c, const char *base,
                                  cl_mem pyr, int level) {
  char name[48];
  snprintf(name, sizeof name, "%s_%s", base, vo_cl_suffix(c->ex->dtype));
  vo_status st = vo_cl_launch_begin(l, c, "multi_scale_roi_align", name);
  if (st != VO_OK) return st;
  vo_cl_arg(l, &pyr, sizeof(void *)); /* OpenCL handles are pointers */
  vo_cl_arg(l, &level, sizeof level);
  return VO_OK;
}

vo_status vo_opencl_multi_scale_roi_align(const vo_exec *ex) {
  const vo_multi_scale_roi_align_params *p = &ex->p.multi_scale_roi_align;
  const int64_t n = p->out->numel;
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || n == 0) return st;
  cl_mem pyr;
  if ((st = vo_cl_msra_pyramid(&c, &pyr)) != VO_OK) return st;
  for (int l = 0; l < p->num_levels && st == VO_OK; l++) {
    vo_cl_launch k;
    if ((st = vo_cl_msra_begin(&k, &c, "vo_cl_msra", pyr, l)) != VO_OK) break;
    vo_cl_arg_view(&k, &p->features[l]);
    vo_cl_arg_view(&k, p->rois);
    vo_cl_arg_i64(&k, n);
    vo_cl_arg_view(&k, p->out);
    st = vo_cl_launch_run(&k, n);
  }
  vo_cl.ReleaseMemObject(pyr);
  return st;
}

/* The fast backward: per level, grad spread with atomics into acc[l] (byte
 * offset acc_off[l]): the level's grad_input or a float32 copy of it. */
static vo_status vo_cl_msra_scatter(const vo_cl_call *c, cl_mem pyr, const vo_view *grad,
                                    const cl_mem *acc, const uint64_t *acc_off) {
  const vo_multi_scale_roi_align_params *p = &c->ex->p.multi_scale_roi_align;
  vo_status st = VO_OK;
  for (int l = 0; l < p->num_levels && st == VO_OK; l++) {
    if (p->out[l].numel == 0) continue;
    vo_cl_launch k;
    if ((st = vo_cl_msra_begin(&k, c, "vo_cl_msra_scatter", pyr, l)) != VO_OK) break;
    vo_cl_arg_view(&k, grad);
    vo_cl_arg_view(&k, p->rois);
    vo_cl_arg_i64(&k, grad->numel);
    vo_cl_arg_mem(&k, acc[l], acc_off[l]);
    st = vo_cl_launch_run(&k, grad->numel);
  }
  return st;
}

/* The half types' fast backward over channels [c0, c0 + cc)
 * (vo_cl_roi_half_scatter's scatter): the pyramid's arguments for that many
 * channels over the matching part of grad, into each level's accumulator. */
static vo_status vo_cl_msra_scatter_channels(const vo_cl_call *c, const void *user, int64_t c0,
                                             int64_t cc, cl_mem acc, const uint64_t *acc_off) {
  (void)user;
  const vo_multi_scale_roi_align_params *p = &c->ex->p.multi_scale_roi_align;
  vo_k_msra_args m = vo_msra_kernel_args(p);
  m.channels = cc;
  cl_mem pyr, accs[VO_MAX_LIST];
  for (int l = 0; l < p->num_levels; l++) accs[l] = acc;
  vo_status st = vo_cl_roi_constants(c, &m, sizeof m, &pyr);
  if (st != VO_OK) return st;
  const vo_view grad = vo_cl_roi_channels(p->grad, c0, cc);
  st = vo_cl_msra_scatter(c, pyr, &grad, accs, acc_off);
  vo_cl.ReleaseMemObject(pyr);
  return st;
}

/* The deterministic backward: RoI levels and boxes (when they fit), then a
 * gather per level. */
static vo_status vo_cl_msra_gather(const vo_cl_call *c, cl_mem pyr) {
  const vo_exec *ex = c->ex;
  const vo_multi_scale_roi_align_params *p = &ex->p.multi_scale_roi_align;
  const int64_t num_rois = p->rois->shape[0];
  cl_mem boxes = vo_cl_roi_try_workspace(ex, (uint64_t)num_rois * sizeof(vo_k_ra_box));
  vo_status st = VO_OK;
  vo_cl_launch k;
  if (boxes) {
    const char *name = ex->dtype == VO_F64 ? "vo_cl_msra_box_f64" : "vo_cl_msra_box_f32";
    if ((st = vo_cl_launch_begin(&k, c, "multi_scale_roi_align", name)) == VO_OK) {
      vo_cl_arg(&k, &pyr, sizeof(void *));
      vo_cl_arg_view(&k, p->rois);
      vo_cl_arg_i64(&k, num_rois);
      vo_cl_arg_mem(&k, boxes, 0);
      st = vo_cl_launch_run(&k, num_rois);
    }
  }
  for (int l = 0; l < p->num_levels && st == VO_OK; l++) {
    const int64_t n = p->out[l].numel;
    if (n == 0) continue;
    if ((st = vo_cl_msra_begin(&k, c, "vo_cl_msra_gather", pyr, l)) != VO_OK) break;
    vo_cl_arg_view(&k, p->grad);
    vo_cl_arg_view(&k, p->rois);
    vo_cl_arg_mem(&k, boxes, 0);
    vo_cl_arg_i64(&k, num_rois);
    vo_cl_arg_i64(&k, n);
    vo_cl_arg_view(&k, &p->out[l]);
    st = vo_cl_launch_run(&k, n);
  }
  vo_workspace_free(ex->ctx, ex->device, boxes);
  return st;
}

vo_status vo_opencl_multi_scale_roi_align_backward(const vo_exec *ex) {
  const vo_multi_scale_roi_align_params *p = &ex->p.multi_scale_roi_align;
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK) return st;
  if (p->rois->shape[0] == 0 || p->grad->numel == 0) {
    for (int l = 0; l < p->num_levels && st == VO_OK; l++) st = vo_cl_roi_zero(&c, &p->out[l]);
    return st;
  }
  cl_mem pyr;
  if ((st = vo_cl_msra_pyramid(&c, &pyr)) != VO_OK) return st;
  int done = 0;
  if (!ex->ctx->deterministic && vo_cl_roi_atomics(&c, ex->dtype)) {
    if (ex->dtype == VO_F32 || ex->dtype == VO_F64) {
      cl_mem acc[VO_MAX_LIST] = {0};
      uint64_t off[VO_MAX_LIST] = {0};
      for (int l = 0; l < p->num_levels && st == VO_OK; l++) {
        acc[l] = (cl_mem)p->out[l].data;
        off[l] = p->out[l].byte_offset;
        st = vo_cl_roi_zero(&c, &p->out[l]);
      }
      if (st == VO_OK) st = vo_cl_msra_scatter(&c, pyr, p->grad, acc, off);
      done = 1;
    } else {
      st = vo_cl_roi_half_scatter(&c, "multi_scale_roi_align", p->out, p->num_levels, 1,
                                  vo_cl_msra_scatter_channels, NULL, &done);
    }
  }
  if (st == VO_OK && !done) st = vo_cl_msra_gather(&c, pyr);
  vo_cl.ReleaseMemObject(pyr);
  return st;
}
