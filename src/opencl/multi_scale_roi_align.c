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

/* Byte offsets of each level's float32 [N,cc,H_l,W_l] accumulator in one
 * workspace (off[levels]: its size). */
static void vo_cl_msra_offsets(const vo_multi_scale_roi_align_params *p, int64_t cc,
                               uint64_t *off) {
  off[0] = 0;
  for (int l = 0; l < p->num_levels; l++) {
    const uint64_t n = p->out[l].shape[1] ? (uint64_t)(p->out[l].numel / p->out[l].shape[1]) : 0;
    off[l + 1] = off[l] + ((n * (uint64_t)cc * sizeof(float) + 127) & ~(uint64_t)127);
  }
}

/* The half types' fast backward: float32 copies of every level's gradient
 * in one workspace, for as many channels at a time as fit the limit (each
 * pass with the pyramid's arguments for that many channels over the
 * matching part of grad, so every grad element is spread once); VO_OK with
 * *done 0 when not even one channel fits: the caller gathers. */
static vo_status vo_cl_msra_scatter_f32(const vo_cl_call *c, int *done) {
  const vo_exec *ex = c->ex;
  const vo_multi_scale_roi_align_params *p = &ex->p.multi_scale_roi_align;
  const int levels = p->num_levels;
  const int64_t images = p->out[0].shape[0], channels = p->out[0].shape[1];
  /* a channel's float32 bytes on every level, and the levels' alignment */
  uint64_t per_channel = 0, off[VO_MAX_LIST + 1];
  for (int l = 0; l < levels; l++)
    per_channel += (uint64_t)(p->out[l].numel / channels) * sizeof(float);
  const uint64_t limit = ex->ctx->workspace_limit, slack = 128 * (uint64_t)levels;
  const uint64_t fit = per_channel == 0 ? (uint64_t)channels
                       : limit > slack  ? (limit - slack) / per_channel
                                        : 0;
  const int64_t chunk = fit < (uint64_t)channels ? (int64_t)fit : channels;
  vo_cl_msra_offsets(p, chunk, off); /* off[levels] <= chunk * per_channel + slack <= limit */
  *done = 0;
  cl_mem ws = chunk > 0 ? vo_cl_roi_try_workspace(ex, off[levels]) : NULL;
  if (!ws) return VO_OK;
  cl_mem acc[VO_MAX_LIST];
  for (int l = 0; l < levels; l++) acc[l] = ws;
  vo_k_msra_args m = vo_msra_kernel_args(p);
  const float zero = 0;
  const size_t es = vo_dtype_size(ex->dtype);
  vo_status st = VO_OK;
  for (int64_t c0 = 0; c0 < channels && st == VO_OK; c0 += chunk) {
    const int64_t cc = channels - c0 < chunk ? channels - c0 : chunk;
    vo_cl_msra_offsets(p, cc, off);
    m.channels = cc;
    cl_mem pyr;
    if ((st = vo_cl_roi_constants(c, &m, sizeof m, &pyr)) != VO_OK) break;
    const vo_view grad = vo_cl_roi_channels(p->grad, c0, cc);
    st = vo_cl_fill(c, ws, 0, &zero, sizeof zero, (size_t)off[levels]);
    if (st == VO_OK) st = vo_cl_msra_scatter(c, pyr, &grad, acc, off);
    vo_cl.ReleaseMemObject(pyr);
    for (int l = 0; l < levels && st == VO_OK; l++) { /* this chunk's planes of each image */
      const int64_t plane = p->out[l].shape[2] * p->out[l].shape[3];
      const int64_t runs = cc == channels ? 1 : images;
      for (int64_t n = 0; n < runs && st == VO_OK && plane > 0; n++) {
        vo_view part = p->out[l];
        part.byte_offset += (uint64_t)((n * channels + c0) * plane) * es;
        part.numel = cc == channels ? p->out[l].numel : cc * plane;
        st = vo_cl_roi_convert(c, "multi_scale_roi_align", ws,
                               off[l] + (uint64_t)(n * cc * plane) * sizeof(float), &part);
      }
    }
  }
  vo_workspace_free(ex->ctx, ex->device, ws);
  if (st == VO_OK) *done = 1;
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
      st = vo_cl_msra_scatter_f32(&c, &done);
    }
  }
  if (st == VO_OK && !done) st = vo_cl_msra_gather(&c, pyr);
  vo_cl.ReleaseMemObject(pyr);
  return st;
}
