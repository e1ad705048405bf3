// CUDA nms_rotated and batched_nms_rotated: the shared sort, mask and
// resolve (cuda/nms.cuh) over rotated boxes with kernels/nms_rotated.h's
// suppression test, pairs the cheap tests prove disjoint (centre distance,
// separating axis) rejected before the polygon IoU.
#include "cuda/nms.cuh"
#include "kernels/nms_rotated.h"

namespace {

// The portable rotated box and test per compute type.
__device__ __forceinline__ vo_k_nms_rbox_f32 rbox_load(float, const vo_cuda_view &v, int64_t row,
                                                       double scale) {
  return vo_k_nms_rbox_load_f32(v.data, (int)v.dtype, v.stride[0], v.stride[1], row, scale);
}
__device__ __forceinline__ vo_k_nms_rbox_f64 rbox_load(double, const vo_cuda_view &v, int64_t row,
                                                       double scale) {
  return vo_k_nms_rbox_load_f64(v.data, (int)v.dtype, v.stride[0], v.stride[1], row, scale);
}
__device__ __forceinline__ bool rbox_suppresses(const vo_k_nms_rbox_f32 &i,
                                                const vo_k_nms_rbox_f32 &j, float thr) {
  return vo_k_nms_rotated_suppresses_f32(&i, &j, thr, 1);
}
__device__ __forceinline__ bool rbox_suppresses(const vo_k_nms_rbox_f64 &i,
                                                const vo_k_nms_rbox_f64 &j, double thr) {
  return vo_k_nms_rotated_suppresses_f64(&i, &j, thr, 1);
}

template <typename T>
struct RBoxOf;
template <>
struct RBoxOf<float> {
  typedef vo_k_nms_rbox_f32 type;
};
template <>
struct RBoxOf<double> {
  typedef vo_k_nms_rbox_f64 type;
};

// nms_rotated's boxes: vo_k_nms_rbox (cos, sin, reach and slack once per box).
template <typename TT>
struct RotatedKind {
  typedef TT T;
  typedef typename RBoxOf<T>::type Box;
  double angle_scale;
  explicit RotatedKind(const vo_exec *ex) : angle_scale(ex->p.nms.angle_scale) {}
  __device__ Box load(const vo_cuda_view &boxes, int64_t row) const {
    return rbox_load(T(), boxes, row, angle_scale);
  }
  __device__ static bool suppresses(const Box &i, const Box &j, T thr) {
    return rbox_suppresses(i, j, thr);
  }
};

}  // namespace

extern "C" vo_status vo_cuda_nms_rotated(const vo_exec *ex) {
  return nms_dispatch<RotatedKind>(ex);
}
