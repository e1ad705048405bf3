// CUDA ps_roi_align and ps_roi_align_backward: the shared ps drivers
// (cuda/ps_roi_common.cuh) with ps_roi_align's bilinear bins
// (cuda/ps_roi_math.cuh).
#include "cuda/ps_roi_common.cuh"

namespace {

struct psa_op {
  template <typename S>
  __host__ __device__ static typename vo_cuda_compute<S>::type forward(const vo_ps_args &a,
                                                                       int64_t o, int64_t *c_in) {
    return vo_psa_forward_at<S>(a, o, c_in);
  }
  template <typename S, typename Add>
  __device__ static void scatter(const vo_ps_args &a, int64_t o,
                                 typename vo_cuda_compute<S>::type *acc, const Add &add) {
    vo_psa_scatter_at<S>(a, o, acc, add);
  }
  template <typename S>
  __host__ __device__ static typename vo_cuda_compute<S>::type gather(const vo_ps_args &a,
                                                                      int64_t e) {
    return vo_psa_gather_at<S>(a, e);
  }
};

vo_ps_args psa_args(const vo_exec *ex, const vo_view *src) {
  const vo_ps_roi_align_params &q = ex->p.ps_roi_align;
  const vo_roi_align_params &p = q.base;
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
  a.channels_out = q.channels_out;
  a.sampling_ratio = p.sampling_ratio;
  return a;
}

}  // namespace

extern "C" vo_status vo_cuda_ps_roi_align(const vo_exec *ex) {
  const vo_ps_roi_align_params &q = ex->p.ps_roi_align;
  return vo_ps_forward<psa_op>(ex, psa_args(ex, q.base.input), q.base.rois, q.base.out,
                               q.channel_mapping);
}

extern "C" vo_status vo_cuda_ps_roi_align_backward(const vo_exec *ex) {
  const vo_ps_roi_align_params &q = ex->p.ps_roi_align;
  return vo_ps_backward<psa_op>(ex, psa_args(ex, q.base.grad), q.base.rois, q.channel_mapping,
                                q.base.out);
}
