// What the CUDA ps_roi_align and ps_roi_pool kernels get of a call, by
// value. Their per-element math is the portable kernels/ps_roi_align.h and
// kernels/ps_roi_pool.h.
#ifndef VISIONOPS_CUDA_PS_ROI_MATH_CUH
#define VISIONOPS_CUDA_PS_ROI_MATH_CUH

#include "cuda/host_device.cuh"

// What the ps kernels need of a call, by value.
struct vo_ps_args {
  vo_cuda_view rois;  // [K,5], any floating dtype (read by its runtime dtype, SPEC section 5)
  vo_cuda_view src;   // forward: input [N,C,H,W]; backward: grad [K,C/(PH*PW),PH,PW]
  double spatial_scale;
  int64_t num_rois, batch_size, channels, height, width;
  int64_t pooled_h, pooled_w, channels_out;
  int64_t sampling_ratio;  // ps_roi_align only
};

#endif  // VISIONOPS_CUDA_PS_ROI_MATH_CUH
