// CUDA roi_align and roi_align_backward: one thread per output element, each
// running a work item of the portable kernels/roi_align.h. The backward
// either scatters with atomics (fast) or, under ctx->deterministic, gathers:
// one thread per grad_input element sums its terms in the CPU's order.
#include "cuda/portable.cuh"
#include "cuda/roi_common.cuh"
#include "core/roi_align_args.h"

namespace {

constexpr int kThreads = 256;

template <int DT>
__global__ void roi_align_forward_kernel(vo_k_roi_align_args a, const void *in, const void *rois,
                                         int64_t n, void *out) {
  VO_K_STORE_EACH(DT, n, out, vo_k_roi_align_forward_item, &a,
                  static_cast<const typename vo_k_dtype<DT>::S *>(in), rois);
}

template <int DT>
__global__ void roi_align_scatter_kernel(vo_k_roi_align_args a, const void *grad, const void *rois,
                                         int64_t n, typename vo_k_dtype<DT>::T *acc) {
  VO_CUDA_GRID_STRIDE(i, n)
  VO_K_DO(DT, vo_k_roi_align_scatter_item, &a,
          static_cast<const typename vo_k_dtype<DT>::S *>(grad), rois, i, acc);
}

template <int DT>
__global__ void roi_align_box_kernel(vo_k_roi_align_args a, const void *rois, int64_t num_rois,
                                     vo_k_ra_box *boxes) {
  VO_CUDA_GRID_STRIDE(k, num_rois) VO_K_SET_T(boxes[k], DT, vo_k_ra_box_of, &a, rois, k);
}

template <int DT>
__global__ void roi_align_gather_kernel(vo_k_roi_align_args a, const void *grad, const void *rois,
                                        const vo_k_ra_box *boxes, int64_t num_rois, int64_t n,
                                        void *out) {
  VO_K_STORE_EACH(DT, n, out, vo_k_roi_align_gather_item, &a,
                  static_cast<const typename vo_k_dtype<DT>::S *>(grad), rois, boxes, num_rois);
}

template <int DT>
struct forward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t stream) {
    const vo_roi_align_params &p = ex->p.roi_align;
    const int64_t n = p.out->numel;
    roi_align_forward_kernel<DT><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
        vo_roi_align_kernel_args(&p, p.input), vo_view_addr(p.input), vo_view_addr(p.rois), n,
        vo_view_addr(p.out));
    return vo_cuda_check_launch(ex);
  }
};

template <int DT>
struct backward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t stream) {
    typedef vo_k_dtype<DT> D;
    typedef typename D::T T;
    typedef typename D::cuda S;
    const vo_roi_align_params &p = ex->p.roi_align;
    const int64_t n = p.out->numel, num_rois = p.rois->shape[0], ng = p.grad->numel;
    S *out = static_cast<S *>(vo_view_addr(p.out));
    const vo_k_roi_align_args a = vo_roi_align_kernel_args(&p, p.grad);
    const void *grad = vo_view_addr(p.grad), *rois = vo_view_addr(p.rois);
    if (num_rois == 0 || ng == 0)
      return vo_cuda_check(ex, cudaMemsetAsync(out, 0, (size_t)n * sizeof(S), stream));
    if (!ex->ctx->deterministic) {
      // float32 / float64: atomics straight into grad_input
      if constexpr (sizeof(S) == sizeof(T)) {
        vo_status st = vo_cuda_check(ex, cudaMemsetAsync(out, 0, (size_t)n * sizeof(S), stream));
        if (st != VO_OK) return st;
        roi_align_scatter_kernel<DT><<<vo_cuda_blocks(ng, kThreads), kThreads, 0, stream>>>(
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
          roi_align_scatter_kernel<DT>
              <<<vo_cuda_blocks(ng, kThreads), kThreads, 0, stream>>>(a, grad, rois, ng, acc);
          if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
          vo_cr_convert_kernel<S>
              <<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(acc, n, out);
          return vo_cuda_check_launch(ex);
        }
      }
    }
    // Each RoI's image and pixel box first, when they fit the workspace limit
    // (the gather is correct without them, only slower).
    vo_cuda_workspace ws(ex);
    vo_k_ra_box *boxes = nullptr;
    if ((uint64_t)num_rois * sizeof(vo_k_ra_box) <= vo_cr_workspace_limit(ex)) {
      boxes = static_cast<vo_k_ra_box *>(ws.alloc((size_t)num_rois * sizeof(vo_k_ra_box)));
      if (!boxes) vo_clear_error();
    }
    vo_status st;
    if (boxes) {
      roi_align_box_kernel<DT>
          <<<vo_cuda_blocks(num_rois, kThreads), kThreads, 0, stream>>>(a, rois, num_rois, boxes);
      if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
    }
    roi_align_gather_kernel<DT><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
        a, grad, rois, boxes, num_rois, n, out);
    return vo_cuda_check_launch(ex);
  }
};

}  // namespace

extern "C" vo_status vo_cuda_roi_align(const vo_exec *ex) {
  return vo_k_dispatch<forward_op>(ex, ex->p.roi_align.out);
}

extern "C" vo_status vo_cuda_roi_align_backward(const vo_exec *ex) {
  return vo_k_dispatch<backward_op>(ex, ex->p.roi_align.out);
}
