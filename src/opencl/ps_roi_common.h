/*
 * The host drivers the OpenCL ps_roi_align and ps_roi_pool share
 * (opencl/ps_roi_common.c), as src/cuda/ps_roi_common.cuh is CUDA's: each
 * op's program (opencl/<op>.cl) has the same four kernels per storage dtype,
 * vo_cl_<op>_<sfx> (forward), _scatter_<sfx>, _gather_<sfx> and, for the
 * half types, _convert_<sfx>, all taking (args by value, src, rois,
 * num_rois, n, out...).
 */
#ifndef VISIONOPS_OPENCL_PS_ROI_COMMON_H
#define VISIONOPS_OPENCL_PS_ROI_COMMON_H

#include "opencl/common.h"

/* One call of a ps op: its program, its portable args struct (passed by
 * value), the tensor the items read (input or grad) and the rois. */
typedef struct vo_cl_ps_call {
  const char *program; /* "ps_roi_align" or "ps_roi_pool" */
  const void *args;
  size_t args_size;
  const vo_view *src, *rois;
  /* Sets the channel counts of a copy of args (input channels and output
   * channels) for a backward over part of them; NULL in a forward. */
  void (*set_channels)(void *args, int64_t channels, int64_t channels_out);
} vo_cl_ps_call;

/* Forward: out [K,C/(PH*PW),PH,PW] and its int32 channel_mapping, one work
 * item per element. */
vo_status vo_cl_ps_forward(const vo_exec *ex, const vo_cl_ps_call *p, const vo_view *out,
                           const vo_view *mapping);

/* Backward into out (contiguous [N,C,H,W]): deterministic contexts gather
 * (bit-identical to the CPU); otherwise atomic adds, into out itself for
 * float32/64 and into a float32 accumulator for the half types, in chunks
 * of output channels that fit the workspace limit (below one, the gather
 * again), as on CUDA. */
vo_status vo_cl_ps_backward(const vo_exec *ex, const vo_cl_ps_call *p, const vo_view *out);

#endif /* VISIONOPS_OPENCL_PS_ROI_COMMON_H */
