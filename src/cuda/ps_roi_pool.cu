// CUDA ps_roi_pool and ps_roi_pool_backward: the shared ps drivers
// (cuda/ps_roi_common.cuh) with ps_roi_pool's rounded mean bins
// (cuda/ps_roi_math.cuh; forward clamped as torchvision's, backward its true
// gradient).
#include "cuda/ps_roi_common.cuh"

namespace {

struct psp_op {
  template <typename S>
  __host__ __device__ static typename vo_cuda_compute<S>::type forward(const vo_ps_args &a,
                                                                       int64_t o, int64_t *c_in) {
    return vo_psp_forward_at<S>(a, o, c_in);
  }
  template <typename S, typename Add>
  __device__ static void scatter(const vo_ps_args &a, int64_t o,
                                 typename vo_cuda_compute<S>::type *acc, const Add &add) {
    vo_psp_scatter_at<S>(a, o, acc, add);
  }
  template <typename S>
  __host__ __device__ static typename vo_cuda_compute<S>::type gather(const vo_ps_args &a,
                                                                      int64_t e) {
    return vo_psp_gather_at<S>(a, e);
  }
};

vo_ps_args psp_args(const vo_exec *ex, const vo_view *src) {
  const vo_ps_roi_pool_params &p = ex->p.ps_roi_pool;
  vo_ps_args a;
  a.rois = vo_cuda_view_of(p.rois);
  a.src = vo_cuda_view_of(src);
  a.spatial_scale = p.spatial_scale;
  a.num_rois = p.rois->shape[0];
  a.batch_size = p.batch_size;
  a.channels = p.channels;
  a.height = p.height;
  a.width = p.width;
  a.pooled_h = p.pooled_height;
  a.pooled_w = p.pooled_width;
  a.channels_out = p.channels_out;
  a.sampling_ratio = 0;
  return a;
}

}  // namespace

extern "C" vo_status vo_cuda_ps_roi_pool(const vo_exec *ex) {
  const vo_ps_roi_pool_params &p = ex->p.ps_roi_pool;
  return vo_ps_forward<psp_op>(ex, psp_args(ex, p.input), p.rois, p.out, p.channel_mapping);
}

extern "C" vo_status vo_cuda_ps_roi_pool_backward(const vo_exec *ex) {
  const vo_ps_roi_pool_params &p = ex->p.ps_roi_pool;
  return vo_ps_backward<psp_op>(ex, psp_args(ex, p.grad), p.rois, p.channel_mapping, p.out);
}
