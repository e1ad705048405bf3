// CUDA roi_align and roi_align_backward: one thread per output element
// (cuda/roi_common.cuh holds the per-element math). The backward either
// scatters with atomics (fast) or, under ctx->deterministic, gathers: one
// thread per grad_input element sums its terms in the CPU's order.
#include "cuda/roi_common.cuh"

namespace {

constexpr int kThreads = 256;

template <typename S>
__global__ void roi_align_forward_kernel(vo_cra_args a, vo_cuda_view in, vo_cuda_view rois,
                                         int64_t n, S *out) {
  VO_CUDA_GRID_STRIDE(i, n) vo_cuda_store(out, i, vo_cra_forward_at<S>(a, in, rois, i));
}

template <typename S, typename A>
__global__ void roi_align_scatter_kernel(vo_cra_args a, vo_cuda_view grad, vo_cuda_view rois,
                                         int64_t n, A *acc) {
  VO_CUDA_GRID_STRIDE(i, n) vo_cra_scatter_at<S, A>(a, grad, rois, i, acc);
}

template <typename T>
__global__ void roi_align_box_kernel(vo_cra_args a, vo_cuda_view rois, int64_t num_rois,
                                     vo_cra_box *boxes) {
  VO_CUDA_GRID_STRIDE(k, num_rois) boxes[k] = vo_cra_box_of<T>(a, rois, k);
}

template <typename S>
__global__ void roi_align_gather_kernel(vo_cra_args a, vo_cuda_view grad, vo_cuda_view rois,
                                        const vo_cra_box *boxes, int64_t num_rois, int64_t n,
                                        S *out) {
  VO_CUDA_GRID_STRIDE(i, n)
  vo_cuda_store(out, i, vo_cra_gather_at<S>(a, grad, rois, boxes, num_rois, i));
}

template <typename S>
vo_status forward_run(const vo_exec *ex, cudaStream_t stream) {
  const vo_roi_align_params &p = ex->p.roi_align;
  const int64_t n = p.out->numel;
  roi_align_forward_kernel<S><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
      vo_cra_args_of(&p), vo_cuda_view_of(p.input), vo_cuda_view_of(p.rois), n,
      static_cast<S *>(vo_view_addr(p.out)));
  return vo_cuda_check_launch(ex);
}

template <typename S>
vo_status backward_run(const vo_exec *ex, cudaStream_t stream) {
  typedef typename vo_cuda_compute<S>::type T;
  const vo_roi_align_params &p = ex->p.roi_align;
  const int64_t n = p.out->numel, num_rois = p.rois->shape[0], ng = p.grad->numel;
  S *out = static_cast<S *>(vo_view_addr(p.out));
  const vo_cra_args a = vo_cra_args_of(&p);
  const vo_cuda_view grad = vo_cuda_view_of(p.grad), rois = vo_cuda_view_of(p.rois);
  if (num_rois == 0 || ng == 0)
    return vo_cuda_check(ex, cudaMemsetAsync(out, 0, (size_t)n * sizeof(S), stream));
  if (!ex->ctx->deterministic) {
    if constexpr (sizeof(S) == sizeof(T)) {  // float32 / float64: atomics straight into grad_input
      vo_status st = vo_cuda_check(ex, cudaMemsetAsync(out, 0, (size_t)n * sizeof(S), stream));
      if (st != VO_OK) return st;
      roi_align_scatter_kernel<S, T><<<vo_cuda_blocks(ng, kThreads), kThreads, 0, stream>>>(
          a, grad, rois, ng, reinterpret_cast<T *>(out));
      return vo_cuda_check_launch(ex);
    } else {
      // Half types: atomics into a float32 copy of grad_input, rounded once at
      // the end, when it fits the workspace limit; else the gather below.
      vo_cuda_workspace ws(ex);
      const uint64_t bytes = (uint64_t)n * sizeof(float);
      float *acc = nullptr;
      if (bytes <= vo_cr_workspace_limit(ex)) {
        acc = static_cast<float *>(ws.alloc((size_t)bytes));
        if (!acc) vo_clear_error();  // the gather needs no workspace
      }
      if (acc) {
        vo_status st = vo_cuda_check(ex, cudaMemsetAsync(acc, 0, (size_t)bytes, stream));
        if (st != VO_OK) return st;
        roi_align_scatter_kernel<S, float>
            <<<vo_cuda_blocks(ng, kThreads), kThreads, 0, stream>>>(a, grad, rois, ng, acc);
        if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
        vo_cr_convert_kernel<S><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(acc, n, out);
        return vo_cuda_check_launch(ex);
      }
    }
  }
  // Each RoI's image and pixel box first, when they fit the workspace limit
  // (the gather is correct without them, only slower).
  vo_cuda_workspace ws(ex);
  vo_cra_box *boxes = nullptr;
  if ((uint64_t)num_rois * sizeof(vo_cra_box) <= vo_cr_workspace_limit(ex)) {
    boxes = static_cast<vo_cra_box *>(ws.alloc((size_t)num_rois * sizeof(vo_cra_box)));
    if (!boxes) vo_clear_error();
  }
  vo_status st;
  if (boxes) {
    roi_align_box_kernel<T>
        <<<vo_cuda_blocks(num_rois, kThreads), kThreads, 0, stream>>>(a, rois, num_rois, boxes);
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  }
  roi_align_gather_kernel<S><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
      a, grad, rois, boxes, num_rois, n, out);
  return vo_cuda_check_launch(ex);
}

template <template <typename> class Run>
vo_status dispatch(const vo_exec *ex) {
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const vo_roi_align_params &p = ex->p.roi_align;
  if (p.out->numel == 0) return VO_OK;
  const cudaStream_t stream = vo_cuda_stream(ex);
  switch (ex->dtype) {
    case VO_F32: return Run<float>::run(ex, stream);
    case VO_F64: return Run<double>::run(ex, stream);
    case VO_F16: return Run<__half>::run(ex, stream);
    case VO_BF16: return Run<__nv_bfloat16>::run(ex, stream);
    default:
      return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: CUDA kernel has no dtype %s", ex->op_name,
                     vo_dtype_name(ex->dtype));
  }
}

template <typename S>
struct forward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t s) { return forward_run<S>(ex, s); }
};
template <typename S>
struct backward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t s) { return backward_run<S>(ex, s); }
};

}  // namespace

extern "C" vo_status vo_cuda_roi_align(const vo_exec *ex) { return dispatch<forward_op>(ex); }

extern "C" vo_status vo_cuda_roi_align_backward(const vo_exec *ex) {
  return dispatch<backward_op>(ex);
}
