// CUDA box_iou_rotated and box_iou_rotated_aligned (kernel rotated_iou): one
// thread per output element, running kernels/box_iou_rotated.h's work item
// (boxes read at their own dtypes, far-apart pairs rejected before the
// polygon work: the same values as the CPU's plain path).
#include "cuda/portable.cuh"
#include "kernels/box_iou_rotated.h"

namespace {

constexpr int kThreads = 256;

// T the compute type (float, or double when either box set is float64).
template <typename T>
__global__ void rotated_iou_kernel(vo_k_rotated_iou_args args, const void *a, const void *b,
                                   int64_t total, T *out);

template <>
__global__ void rotated_iou_kernel<float>(vo_k_rotated_iou_args args, const void *a, const void *b,
                                          int64_t total, float *out) {
  VO_CUDA_GRID_STRIDE(e, total) out[e] = vo_k_rotated_iou_item_f32(&args, a, b, e);
}

template <>
__global__ void rotated_iou_kernel<double>(vo_k_rotated_iou_args args, const void *a, const void *b,
                                           int64_t total, double *out) {
  VO_CUDA_GRID_STRIDE(e, total) out[e] = vo_k_rotated_iou_item_f64(&args, a, b, e);
}

template <typename T>
vo_status launch(const vo_exec *ex, cudaStream_t stream, const vo_k_rotated_iou_args &args) {
  const int64_t total = ex->outputs[0].numel;
  rotated_iou_kernel<T><<<vo_cuda_blocks(total, kThreads), kThreads, 0, stream>>>(
      args, vo_view_addr(&ex->inputs[0]), vo_view_addr(&ex->inputs[1]), total,
      static_cast<T *>(vo_view_addr(&ex->outputs[0])));
  return vo_cuda_check_launch(ex);
}

vo_status run(const vo_exec *ex, cudaStream_t stream) {
  const vo_view *a = &ex->inputs[0], *b = &ex->inputs[1];
  const vo_k_rotated_iou_args args = vo_k_rotated_iou_args_of(
      (int)a->dtype, a->stride, (int)b->dtype, b->stride, a->shape[0], b->shape[0],
      ex->op == VO_OP_box_iou_rotated_aligned, ex->args[2].u.b, 1,
      vo_rotated_angle_scale(ex->args[3].u.b, ex->args[4].u.b));
  return ex->dtype == VO_F64 ? launch<double>(ex, stream, args) : launch<float>(ex, stream, args);
}

}  // namespace

extern "C" vo_status vo_cuda_rotated_iou(const vo_exec *ex) {
  return vo_k_on_device(ex, &ex->outputs[0], [ex](cudaStream_t s) { return run(ex, s); });
}
