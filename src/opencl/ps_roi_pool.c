/*
 * OpenCL ps_roi_pool and ps_roi_pool_backward: the shared ps drivers
 * (opencl/ps_roi_common.c) running opencl/ps_roi_pool.cl's entry points
 * over kernels/ps_roi_pool.h's work items, as src/cuda/ps_roi_pool.cu.
 */
#include "kernels/ps_roi_pool.h"
#include "opencl/ps_roi_common.h"

/* The portable args of a call (src: input or grad). */
static vo_k_ps_roi_pool_args vo_cl_psp_args(const vo_ps_roi_pool_params *q, const vo_view *src) {
  return vo_k_ps_roi_pool_args_of(q->base.spatial_scale, q->base.rois->shape[0], q->base.batch_size,
                                  q->base.channels, q->base.height, q->base.width,
                                  q->base.pooled_height, q->base.pooled_width, q->channels_out,
                                  (int)q->base.rois->dtype, q->base.rois->stride, src->stride);
}

/* (vo_cl_ps_call.set_channels) */
static void vo_cl_psp_set_channels(void *args, int64_t channels, int64_t channels_out) {
  vo_k_ps_roi_pool_args *a = args;
  a->channels = channels;
  a->channels_out = channels_out;
}

vo_status vo_opencl_ps_roi_pool(const vo_exec *ex) {
  const vo_ps_roi_pool_params *q = &ex->p.ps_roi_pool;
  const vo_k_ps_roi_pool_args a = vo_cl_psp_args(q, q->base.input);
  const vo_cl_ps_call p = {"ps_roi_pool", &a, sizeof a, q->base.input, q->base.rois, NULL};
  return vo_cl_ps_forward(ex, &p, q->base.out, q->channel_mapping);
}

vo_status vo_opencl_ps_roi_pool_backward(const vo_exec *ex) {
  const vo_ps_roi_pool_params *q = &ex->p.ps_roi_pool;
  const vo_k_ps_roi_pool_args a = vo_cl_psp_args(q, q->base.grad);
  const vo_cl_ps_call p = {"ps_roi_pool", &a,           sizeof a,
                           q->base.grad,  q->base.rois, vo_cl_psp_set_channels};
  return vo_cl_ps_backward(ex, &p, q->base.out);
}
