// CUDA ps_roi_pool and ps_roi_pool_backward: the shared ps drivers
// (cuda/ps_roi_common.cuh) running kernels/ps_roi_pool.h's work items, the
// CPU's arithmetic (rounded mean bins; forward clamped as torchvision's,
// backward its true gradient).
#include "cuda/portable.cuh"
#include "cuda/ps_roi_common.cuh"
#include "kernels/ps_roi_pool.h"

namespace {

// The portable args of the drivers' vo_ps_args (a.src: input or grad).
__host__ __device__ vo_k_ps_roi_pool_args psp_kargs(const vo_ps_args &a) {
  return vo_k_ps_roi_pool_args_of(a.spatial_scale, a.num_rois, a.batch_size, a.channels, a.height,
                                  a.width, a.pooled_h, a.pooled_w, a.channels_out,
                                  (int)a.rois.dtype, a.rois.stride, a.src.stride);
}

struct psp_op {
  template <typename S>
  __device__ static typename vo_cuda_compute<S>::type forward(const vo_ps_args &a, int64_t o,
                                                              int64_t *c_in) {
    const vo_k_ps_roi_pool_args k = psp_kargs(a);
    VO_KCALL(S, vo_k_ps_roi_pool_forward_at, vo_kbits(static_cast<const S *>(a.src.data)),
             a.rois.data, &k, o, c_in);
  }
  // acc: grad_input itself (float32/64) or a float32 copy for half types;
  // the portable spread adds atomically on the device.
  template <typename S, typename Add>
  __device__ static void scatter(const vo_ps_args &a, int64_t o,
                                 typename vo_cuda_compute<S>::type *acc, const Add &) {
    const vo_k_ps_roi_pool_args k = psp_kargs(a);
    VO_KCALL(S, vo_k_ps_roi_pool_scatter_at, vo_kbits(static_cast<const S *>(a.src.data)),
             a.rois.data, &k, o, acc);
  }
  template <typename S>
  __device__ static typename vo_cuda_compute<S>::type gather(const vo_ps_args &a, int64_t e) {
    const vo_k_ps_roi_pool_args k = psp_kargs(a);
    VO_KCALL(S, vo_k_ps_roi_pool_gather_at, vo_kbits(static_cast<const S *>(a.src.data)),
             a.rois.data, &k, e);
  }
};

}  // namespace

extern "C" vo_status vo_cuda_ps_roi_pool(const vo_exec *ex) {
  return vo_ps_forward<psp_op>(ex, ex->p.ps_roi_pool);
}

extern "C" vo_status vo_cuda_ps_roi_pool_backward(const vo_exec *ex) {
  return vo_ps_backward<psp_op>(ex, ex->p.ps_roi_pool);
}
