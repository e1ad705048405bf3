/*
 * ps_roi_pool and ps_roi_pool_backward's OpenCL C entry points over
 * kernels/ps_roi_pool.h's work items, per storage dtype, as
 * src/cuda/ps_roi_pool.cu runs them: the forward (one work item per output
 * element and its channel_mapping entry), the fast backward's scatter (one
 * per grad element, atomic adds into a compute-type accumulator), the
 * deterministic backward's gather (one per grad_input element, RoI order)
 * and, for the half types, the float32 accumulator's conversion. The host
 * glue is opencl/ps_roi_common.c.
 */
#include "opencl/portable.clh"
#include "opencl/roi_common.clh"
#include "kernels/ps_roi_pool.h"

#define VO_CL_PS_ROI_POOL(SFX, S, T, STORE)                                                  \
  __kernel void vo_cl_ps_roi_pool_##SFX(vo_k_ps_roi_pool_args a, VO_CL_TENSOR(in),           \
                                        VO_CL_TENSOR(rois), long num_rois, long n,           \
                                        VO_CL_TENSOR(out), VO_CL_TENSOR(mapping)) {          \
    const __global S *in = VO_CL_AT(const S, in);                                            \
    const __global void *rois = VO_CL_AT(const char, rois);                                  \
    __global S *out = VO_CL_AT(S, out);                                                      \
    __global int *mapping = VO_CL_AT(int, mapping);                                          \
    VO_CL_FOR(o, n) {                                                                        \
      int64_t c_in = 0;                                                                      \
      const T v = vo_k_ps_roi_pool_forward_at_##SFX(in, rois, &a, o, &c_in);                 \
      STORE(out, o, v);                                                                      \
      if (mapping_buf) mapping[o] = (int)c_in; /* NULL: omitted */                           \
    }                                                                                        \
  }                                                                                          \
  __kernel void vo_cl_ps_roi_pool_scatter_##SFX(vo_k_ps_roi_pool_args a, VO_CL_TENSOR(grad), \
                                                VO_CL_TENSOR(rois), long num_rois, long n,   \
                                                VO_CL_TENSOR(acc)) {                         \
    const __global S *grad = VO_CL_AT(const S, grad);                                        \
    const __global void *rois = VO_CL_AT(const char, rois);                                  \
    __global T *acc = VO_CL_AT(T, acc);                                                      \
    VO_CL_FOR(o, n) vo_k_ps_roi_pool_scatter_at_##SFX(grad, rois, &a, o, acc);               \
  }                                                                                          \
  __kernel void vo_cl_ps_roi_pool_gather_##SFX(vo_k_ps_roi_pool_args a, VO_CL_TENSOR(grad),  \
                                               VO_CL_TENSOR(rois), long num_rois, long n,    \
                                               VO_CL_TENSOR(out)) {                          \
    const __global S *grad = VO_CL_AT(const S, grad);                                        \
    const __global void *rois = VO_CL_AT(const char, rois);                                  \
    __global S *out = VO_CL_AT(S, out);                                                      \
    VO_CL_FOR(e, n) STORE(out, e, vo_k_ps_roi_pool_gather_at_##SFX(grad, rois, &a, e));      \
  }
VO_CL_EACH_DTYPE(VO_CL_PS_ROI_POOL)
