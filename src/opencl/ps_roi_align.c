/*
 * OpenCL ps_roi_align and ps_roi_align_backward: the shared ps drivers
 * (opencl/ps_roi_common.c) running opencl/ps_roi_align.cl's entry points
 * over kernels/ps_roi_align.h's work items, as src/cuda/ps_roi_align.cu.
 */
#include "core/roi_align_args.h"
#include "opencl/ps_roi_common.h"

/* (vo_cl_ps_call.set_channels: the output channels follow from the bins) */
static void vo_cl_psa_set_channels(void *args, int64_t channels, int64_t channels_out) {
  (void)channels_out;
  ((vo_k_roi_align_args *)args)->channels = channels;
}

vo_status vo_opencl_ps_roi_align(const vo_exec *ex) {
  const vo_ps_roi_align_params *q = &ex->p.ps_roi_align;
  const vo_k_roi_align_args a = vo_roi_align_kernel_args(&q->base, q->base.input);
  const vo_cl_ps_call p = {"ps_roi_align", &a, sizeof a, q->base.input, q->base.rois, NULL};
  return vo_cl_ps_forward(ex, &p, q->base.out, q->channel_mapping);
}

vo_status vo_opencl_ps_roi_align_backward(const vo_exec *ex) {
  const vo_ps_roi_align_params *q = &ex->p.ps_roi_align;
  const vo_k_roi_align_args a = vo_roi_align_kernel_args(&q->base, q->base.grad);
  const vo_cl_ps_call p = {"ps_roi_align", &a,           sizeof a,
                           q->base.grad,   q->base.rois, vo_cl_psa_set_channels};
  return vo_cl_ps_backward(ex, &p, q->base.out);
}
