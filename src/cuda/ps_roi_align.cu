// CUDA ps_roi_align and ps_roi_align_backward: the shared ps drivers
// (cuda/ps_roi_common.cuh) running the work items of the portable
// kernels/ps_roi_align.h.
#include "cuda/portable.cuh"
#include "cuda/ps_roi_common.cuh"
#include "kernels/ps_roi_align.h"

namespace {

// The portable kernels' arguments of a call of the ps drivers.
__host__ __device__ __forceinline__ vo_k_roi_align_args kernel_args(const vo_ps_args &a) {
  vo_k_roi_align_args k;
  k.spatial_scale = a.spatial_scale;
  k.pooled_height = a.pooled_h;
  k.pooled_width = a.pooled_w;
  k.sampling_ratio = a.sampling_ratio;
  k.aligned = 1;  // pixel centres, without the 1x1 minimum
  k.batch_size = a.batch_size;
  k.channels = a.channels;
  k.height = a.height;
  k.width = a.width;
  k.rois_dtype = (int)a.rois.dtype;
  k.rois_stride[0] = a.rois.stride[0];
  k.rois_stride[1] = a.rois.stride[1];
  for (int d = 0; d < 4; d++) k.src_stride[d] = a.src.stride[d];
  return k;
}

struct psa_op {
  template <typename S>
  __host__ __device__ static typename vo_cuda_compute<S>::type forward(const vo_ps_args &a,
                                                                       int64_t o, int64_t *c_in) {
    constexpr int DT = vo_k_code<S>::value;
    const vo_k_roi_align_args k = kernel_args(a);
    typename vo_k_dtype<DT>::T v;
    VO_K_SET(v, DT, vo_k_ps_roi_align_forward_item, &k,
             static_cast<const typename vo_k_dtype<DT>::S *>(a.src.data), a.rois.data, o, c_in);
    return v;
  }
  template <typename S, typename Add>
  __device__ static void scatter(const vo_ps_args &a, int64_t o,
                                 typename vo_cuda_compute<S>::type *acc, const Add &) {
    constexpr int DT = vo_k_code<S>::value;
    const vo_k_roi_align_args k = kernel_args(a);
    VO_K_DO(DT, vo_k_ps_roi_align_scatter_item, &k,
            static_cast<const typename vo_k_dtype<DT>::S *>(a.src.data), a.rois.data, o, acc);
  }
  template <typename S>
  __host__ __device__ static typename vo_cuda_compute<S>::type gather(const vo_ps_args &a,
                                                                      int64_t e) {
    constexpr int DT = vo_k_code<S>::value;
    const vo_k_roi_align_args k = kernel_args(a);
    typename vo_k_dtype<DT>::T v;
    VO_K_SET(v, DT, vo_k_ps_roi_align_gather_item, &k,
             static_cast<const typename vo_k_dtype<DT>::S *>(a.src.data), a.rois.data, a.num_rois,
             e);
    return v;
  }
};

}  // namespace

extern "C" vo_status vo_cuda_ps_roi_align(const vo_exec *ex) {
  return vo_ps_forward<psa_op>(ex, ex->p.ps_roi_align);
}

extern "C" vo_status vo_cuda_ps_roi_align_backward(const vo_exec *ex) {
  return vo_ps_backward<psa_op>(ex, ex->p.ps_roi_align);
}
