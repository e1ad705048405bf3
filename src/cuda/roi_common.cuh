// Glue shared by the CUDA RoI kernels (roi_align, roi_pool,
// multi_scale_roi_align): the half-type gradient store and the workspace
// bound. Their per-element math is the portable kernels/roi_align.h,
// kernels/roi_pool.h and kernels/multi_scale_roi_align.h.
#ifndef VISIONOPS_CUDA_ROI_COMMON_CUH
#define VISIONOPS_CUDA_ROI_COMMON_CUH

#include "cuda/common.cuh"

// Half-type gradients accumulated in float32 are rounded once at the end.
template <typename S>
__global__ void vo_cr_convert_kernel(const float *acc, int64_t n, S *out) {
  VO_CUDA_GRID_STRIDE(i, n) vo_cuda_store(out, i, acc[i]);
}

// The context's bound on temporary memory.
inline size_t vo_cr_workspace_limit(const vo_exec *ex) {
  return ex->ctx->workspace_limit ? ex->ctx->workspace_limit : VO_DEFAULT_WORKSPACE_LIMIT;
}

#endif  // VISIONOPS_CUDA_ROI_COMMON_CUH
