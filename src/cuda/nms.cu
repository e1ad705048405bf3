// CUDA nms and batched_nms: the shared sort, mask and resolve (cuda/nms.cuh)
// over axis-aligned boxes with kernels/nms.h's suppression test.
#include "cuda/nms.cuh"
#include "kernels/nms.h"

namespace {

// kernels/nms.h's test per compute type: kept box i (four coordinates)
// against candidate j, thr the threshold in that type.
__device__ __forceinline__ bool axis_suppresses(const float *i, const float *j, float thr) {
  const vo_k_nms_box_f32 a = vo_k_nms_box_of_f32(i[0], i[1], i[2], i[3]);
  const vo_k_nms_box_f32 b = vo_k_nms_box_of_f32(j[0], j[1], j[2], j[3]);
  return vo_k_nms_suppresses_f32(&a, &b, thr);
}
__device__ __forceinline__ bool axis_suppresses(const double *i, const double *j, double thr) {
  const vo_k_nms_box_f64 a = vo_k_nms_box_of_f64(i[0], i[1], i[2], i[3]);
  const vo_k_nms_box_f64 b = vo_k_nms_box_of_f64(j[0], j[1], j[2], j[3]);
  return vo_k_nms_suppresses_f64(&a, &b, thr);
}

// nms's boxes: (x1, y1, x2, y2) in T as loaded; areas are computed per pair.
template <typename TT>
struct AxisKind {
  typedef TT T;
  struct Box {
    T v[4];
  };
  explicit AxisKind(const vo_exec *) {}
  __device__ Box load(const vo_cuda_view &boxes, int64_t row) const {
    Box b;
    for (int k = 0; k < 4; ++k) b.v[k] = vo_cuda_load_as<T>(boxes, vo_cuda_offset(boxes, row, k));
    return b;
  }
  __device__ static bool suppresses(const Box &i, const Box &j, T thr) {
    return axis_suppresses(i.v, j.v, thr);
  }
};

}  // namespace

extern "C" vo_status vo_cuda_nms(const vo_exec *ex) { return nms_dispatch<AxisKind>(ex); }
