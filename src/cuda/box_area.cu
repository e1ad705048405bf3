// CUDA box_area and box_area_backward: one thread per box (forward) or per
// element of the [N, 4] gradient (backward, which has no atomics, so its
// deterministic mode is the same kernel), running kernels/box_area.h's
// work items, the CPU's arithmetic.
#include "cuda/portable.cuh"
#include "kernels/box_area.h"

namespace {

constexpr int kThreads = 256;

// Float boxes of dtype DT; areas in its compute type (float32 for half types).
template <int DT>
__global__ void box_area_kernel(vo_k_box_area_args a, const typename vo_k_dtype<DT>::S *boxes,
                                int64_t n, typename vo_k_dtype<DT>::T *out) {
  VO_CUDA_GRID_STRIDE(i, n) VO_K_SET(out[i], DT, vo_k_box_area_at, boxes, &a, i);
}

__global__ void box_area_i64_kernel(vo_k_box_area_args a, const void *boxes, int64_t n,
                                    int64_t *out) {
  VO_CUDA_GRID_STRIDE(i, n) out[i] = vo_k_box_area_i64_at(boxes, &a, i);
}

__global__ void box_area_i32_kernel(vo_k_box_area_args a, const void *boxes, int64_t n,
                                    int32_t *out) {
  VO_CUDA_GRID_STRIDE(i, n) out[i] = vo_k_box_area_i32_at(boxes, &a, i);
}

// The gradient, in the boxes' dtype DT.
template <int DT>
__global__ void box_area_backward_kernel(vo_k_box_area_args a,
                                         const typename vo_k_dtype<DT>::S *boxes, const void *grad,
                                         int64_t n, void *out) {
  VO_K_STORE_EACH(DT, n, out, vo_k_box_area_grad_at, boxes, grad, &a);
}

template <int DT>
vo_status forward_run(const vo_exec *ex, cudaStream_t stream, const vo_k_box_area_args &a,
                      int64_t n) {
  box_area_kernel<DT><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
      a, static_cast<const typename vo_k_dtype<DT>::S *>(vo_view_addr(&ex->inputs[0])), n,
      static_cast<typename vo_k_dtype<DT>::T *>(vo_view_addr(&ex->outputs[0])));
  return vo_cuda_check_launch(ex);
}

template <int DT>
vo_status backward_run(const vo_exec *ex, cudaStream_t stream, const vo_k_box_area_args &a,
                       int64_t n) {
  box_area_backward_kernel<DT><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
      a, static_cast<const typename vo_k_dtype<DT>::S *>(vo_view_addr(&ex->inputs[1])),
      vo_view_addr(&ex->inputs[0]), n, vo_view_addr(&ex->outputs[0]));
  return vo_cuda_check_launch(ex);
}

// The forward's launch for the boxes' storage dtype (ex->dtype is the
// upcast output's).
vo_status forward(const vo_exec *ex, cudaStream_t stream) {
  const vo_view *boxes = &ex->inputs[0];
  const int64_t n = boxes->shape[0];
  const vo_k_box_area_args a = vo_k_box_area_args_of((int)boxes->dtype, boxes->stride, 0, 0);
  const void *src = vo_view_addr(boxes);
  void *out = vo_view_addr(&ex->outputs[0]);
  switch (boxes->dtype) {
    case VO_F32: return forward_run<VO_DT_F32>(ex, stream, a, n);
    case VO_F64: return forward_run<VO_DT_F64>(ex, stream, a, n);
    case VO_F16: return forward_run<VO_DT_F16>(ex, stream, a, n);
    case VO_BF16: return forward_run<VO_DT_BF16>(ex, stream, a, n);
    case VO_I64:
      box_area_i64_kernel<<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
          a, src, n, static_cast<int64_t *>(out));
      return vo_cuda_check_launch(ex);
    default:  // int32, int16, int8, uint8: int32 areas
      box_area_i32_kernel<<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
          a, src, n, static_cast<int32_t *>(out));
      return vo_cuda_check_launch(ex);
  }
}

// The backward's launch for the boxes' storage dtype.
vo_status backward(const vo_exec *ex, cudaStream_t stream) {
  const vo_view *grad = &ex->inputs[0], *boxes = &ex->inputs[1];
  const int64_t n = 4 * boxes->shape[0];
  const vo_k_box_area_args a =
      vo_k_box_area_args_of((int)boxes->dtype, boxes->stride, (int)grad->dtype, grad->stride[0]);
  switch (boxes->dtype) {
    case VO_F64: return backward_run<VO_DT_F64>(ex, stream, a, n);
    case VO_F16: return backward_run<VO_DT_F16>(ex, stream, a, n);
    case VO_BF16: return backward_run<VO_DT_BF16>(ex, stream, a, n);
    default: return backward_run<VO_DT_F32>(ex, stream, a, n);
  }
}

}  // namespace

extern "C" vo_status vo_cuda_box_area(const vo_exec *ex) {
  return vo_k_on_device(ex, &ex->outputs[0], [ex](cudaStream_t s) { return forward(ex, s); });
}

extern "C" vo_status vo_cuda_box_area_backward(const vo_exec *ex) {
  return vo_k_on_device(ex, &ex->outputs[0], [ex](cudaStream_t s) { return backward(ex, s); });
}
