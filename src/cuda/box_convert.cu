// CUDA box_convert and box_convert_backward: one thread per box (each output
// row has one owner, so the backward's deterministic mode is the same
// kernel), running kernels/box_convert.h's work items, the CPU's arithmetic.
#include "cuda/portable.cuh"
#include "kernels/box_convert.h"

namespace {

constexpr int kThreads = 256;

// Float boxes of dtype DT, converted in their storage type.
template <int DT>
__global__ void box_convert_kernel(vo_k_box_convert_args a, const typename vo_k_dtype<DT>::S *boxes,
                                   int64_t n, typename vo_k_dtype<DT>::S *out) {
  VO_CUDA_GRID_STRIDE(i, n) VO_K_DO(DT, vo_k_box_convert_item, boxes, out, &a, i);
}

// Integer boxes: out in their dtype or float32 (kernels/box_convert.h).
__global__ void box_convert_int_kernel(vo_k_box_convert_args a, const void *boxes, int64_t n,
                                       void *out) {
  VO_CUDA_GRID_STRIDE(i, n) vo_k_box_convert_int_item(boxes, out, &a, i);
}

// The gradient, in the boxes' dtype DT.
template <int DT>
__global__ void box_convert_backward_kernel(vo_k_box_convert_args a,
                                            const typename vo_k_dtype<DT>::S *boxes,
                                            const void *grad, int64_t n,
                                            typename vo_k_dtype<DT>::S *out) {
  VO_CUDA_GRID_STRIDE(i, n) VO_K_DO(DT, vo_k_box_convert_grad_item, boxes, grad, out, &a, i);
}

template <int DT>
vo_status forward_run(const vo_exec *ex, cudaStream_t stream, const vo_k_box_convert_args &a,
                      int64_t n) {
  typedef typename vo_k_dtype<DT>::S S;
  box_convert_kernel<DT><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
      a, static_cast<const S *>(vo_view_addr(&ex->inputs[0])), n,
      static_cast<S *>(vo_view_addr(&ex->outputs[0])));
  return vo_cuda_check_launch(ex);
}

template <int DT>
vo_status backward_run(const vo_exec *ex, cudaStream_t stream, const vo_k_box_convert_args &a,
                       int64_t n) {
  typedef typename vo_k_dtype<DT>::S S;
  box_convert_backward_kernel<DT><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
      a, static_cast<const S *>(vo_view_addr(&ex->inputs[1])), vo_view_addr(&ex->inputs[0]), n,
      static_cast<S *>(vo_view_addr(&ex->outputs[0])));
  return vo_cuda_check_launch(ex);
}

// The forward's launch for the boxes' storage dtype (ex->dtype is the
// compute type, float32 for integer boxes).
vo_status forward(const vo_exec *ex, cudaStream_t stream) {
  const vo_view *boxes = &ex->inputs[0];
  const int64_t n = boxes->shape[0];
  const vo_k_box_convert_args a = vo_k_box_convert_args_of(
      (int)ex->args[1].u.i, (int)ex->args[2].u.i, (int)boxes->dtype, boxes->stride, 0, NULL);
  switch (boxes->dtype) {
    case VO_F32: return forward_run<VO_DT_F32>(ex, stream, a, n);
    case VO_F64: return forward_run<VO_DT_F64>(ex, stream, a, n);
    case VO_F16: return forward_run<VO_DT_F16>(ex, stream, a, n);
    case VO_BF16: return forward_run<VO_DT_BF16>(ex, stream, a, n);
    default:  // integer boxes
      box_convert_int_kernel<<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
          a, vo_view_addr(boxes), n, vo_view_addr(&ex->outputs[0]));
      return vo_cuda_check_launch(ex);
  }
}

// The backward's launch for the boxes' storage dtype.
vo_status backward(const vo_exec *ex, cudaStream_t stream) {
  const vo_view *grad = &ex->inputs[0], *boxes = &ex->inputs[1];
  const int64_t n = boxes->shape[0];
  const vo_k_box_convert_args a =
      vo_k_box_convert_args_of((int)ex->args[2].u.i, (int)ex->args[3].u.i, (int)boxes->dtype,
                               boxes->stride, (int)grad->dtype, grad->stride);
  switch (boxes->dtype) {
    case VO_F64: return backward_run<VO_DT_F64>(ex, stream, a, n);
    case VO_F16: return backward_run<VO_DT_F16>(ex, stream, a, n);
    case VO_BF16: return backward_run<VO_DT_BF16>(ex, stream, a, n);
    default: return backward_run<VO_DT_F32>(ex, stream, a, n);
  }
}

}  // namespace

extern "C" vo_status vo_cuda_box_convert(const vo_exec *ex) {
  return vo_k_on_device(ex, &ex->outputs[0], [ex](cudaStream_t s) { return forward(ex, s); });
}

extern "C" vo_status vo_cuda_box_convert_backward(const vo_exec *ex) {
  return vo_k_on_device(ex, &ex->outputs[0], [ex](cudaStream_t s) { return backward(ex, s); });
}
