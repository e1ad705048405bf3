/*
 * roi_pool (with argmax) and roi_pool_backward as OpenCL C entry points over
 * the work items of kernels/roi_pool.h, one per storage dtype, as the CUDA
 * kernels (src/cuda/roi_pool.cu): the forward gives each output element one
 * work item; the fast backward adds each grad element at its argmax with an
 * atomic (into grad_input for float32 / float64, a float32 copy for the
 * half types); the deterministic backward checks once whether every argmax
 * lies in its own bin, then gathers each grad_input element's bins in the
 * CPU's (RoI, ph, pw) order.
 */
#include "opencl/roi_common.clh"
#include "kernels/roi_pool.h"

#define VO_CL_ROI_POOL(SFX, S, T, store)                                                         \
  __kernel void vo_cl_roi_pool_##SFX(vo_k_roi_pool_args a, VO_CL_TENSOR(in), VO_CL_TENSOR(rois), \
                                     long n, VO_CL_TENSOR(out), VO_CL_TENSOR(argmax)) {          \
    const __global S *x = VO_CL_AT(const S, in);                                                 \
    const __global void *r = VO_CL_AT(const char, rois);                                         \
    __global S *o = VO_CL_AT(S, out);                                                            \
    __global int32_t *am = VO_CL_AT(int32_t, argmax);                                            \
    VO_CL_FOR(i, n) {                                                                            \
      int32_t best;                                                                              \
      store(o, i, vo_k_roi_pool_forward_at_##SFX(x, r, &a, i, &best));                           \
      if (argmax_buf) am[i] = best; /* NULL: omitted */                                          \
    }                                                                                            \
  }                                                                                              \
  __kernel void vo_cl_roi_pool_scatter_##SFX(vo_k_roi_pool_args a, VO_CL_TENSOR(grad),           \
                                             VO_CL_TENSOR(argmax), VO_CL_TENSOR(rois), long n,   \
                                             VO_CL_TENSOR(acc)) {                                \
    const __global S *g = VO_CL_AT(const S, grad);                                               \
    const __global int32_t *am = VO_CL_AT(const int32_t, argmax);                                \
    const __global void *r = VO_CL_AT(const char, rois);                                         \
    __global T *t = VO_CL_AT(T, acc);                                                            \
    VO_CL_FOR(i, n) vo_k_roi_pool_scatter_at_##SFX(g, am, r, &a, i, t);                          \
  }                                                                                              \
  __kernel void vo_cl_roi_pool_gather_##SFX(                                                     \
      vo_k_roi_pool_args a, VO_CL_TENSOR(grad), VO_CL_TENSOR(argmax), VO_CL_TENSOR(rois),        \
      long num_rois, VO_CL_TENSOR(in_bins), long n, VO_CL_TENSOR(out)) {                         \
    const __global S *g = VO_CL_AT(const S, grad);                                               \
    const __global int32_t *am = VO_CL_AT(const int32_t, argmax);                                \
    const __global void *r = VO_CL_AT(const char, rois);                                         \
    const int restrict_bins = *VO_CL_AT(const int, in_bins) != 0;                                \
    __global S *o = VO_CL_AT(S, out);                                                            \
    VO_CL_FOR(i, n)                                                                              \
    store(o, i, vo_k_roi_pool_gather_at_##SFX(g, am, r, &a, num_rois, restrict_bins, i));        \
  }
VO_CL_EACH_DTYPE(VO_CL_ROI_POOL)

/* *in_bins (set nonzero before) becomes 0 when some argmax is neither -1
 * nor in its own bin; per compute type. */
#define VO_CL_ROI_POOL_IN_BINS(SFX, T)                                                            \
  __kernel void vo_cl_roi_pool_in_bins_##SFX(vo_k_roi_pool_args a, VO_CL_TENSOR(argmax),          \
                                             VO_CL_TENSOR(rois), long n, VO_CL_TENSOR(in_bins)) { \
    const __global int32_t *am = VO_CL_AT(const int32_t, argmax);                                 \
    const __global void *r = VO_CL_AT(const char, rois);                                          \
    __global int *flag = VO_CL_AT(int, in_bins);                                                  \
    VO_CL_FOR(i, n) if (!vo_k_roi_pool_argmax_in_bin_##SFX(am, r, &a, i)) flag[0] = 0;            \
  }
VO_CL_EACH_COMPUTE_TYPE(VO_CL_ROI_POOL_IN_BINS)
