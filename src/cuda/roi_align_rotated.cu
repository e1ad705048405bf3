// CUDA roi_align_rotated and roi_align_rotated_backward: one thread per
// output element, each running a work item of the portable
// kernels/roi_align_rotated.h, launched as src/cuda/roi_align.cu launches
// roi_align's. The backward (vo_cr_ra_backward, cuda/roi_common.cuh) either
// scatters with atomics (fast) or, under ctx->deterministic, gathers: one
// thread per grad_input element sums its terms in the CPU's order.
#include "cuda/portable.cuh"
#include "cuda/roi_common.cuh"
#include "core/roi_align_args.h"
#include "kernels/roi_align_rotated.h"

namespace {

constexpr int kThreads = 256;

template <int DT>
__global__ void roi_align_rotated_forward_kernel(vo_k_roi_align_rotated_args a, const void *in,
                                                 const void *rois, int64_t n, void *out) {
  VO_K_STORE_EACH(DT, n, out, vo_k_roi_align_rotated_forward_item, &a,
                  static_cast<const typename vo_k_dtype<DT>::S *>(in), rois);
}

template <int DT>
__global__ void roi_align_rotated_scatter_kernel(vo_k_roi_align_rotated_args a, const void *grad,
                                                 const void *rois, int64_t n,
                                                 typename vo_k_dtype<DT>::T *acc) {
  VO_CUDA_GRID_STRIDE(i, n)
  VO_K_DO(DT, vo_k_roi_align_rotated_scatter_item, &a,
          static_cast<const typename vo_k_dtype<DT>::S *>(grad), rois, i, acc);
}

template <int DT>
__global__ void roi_align_rotated_box_kernel(vo_k_roi_align_rotated_args a, const void *rois,
                                             int64_t num_rois, vo_k_ra_box *boxes) {
  VO_CUDA_GRID_STRIDE(k, num_rois) VO_K_SET_T(boxes[k], DT, vo_k_rar_box_of, &a, rois, k);
}

template <int DT>
__global__ void roi_align_rotated_gather_kernel(vo_k_roi_align_rotated_args a, const void *grad,
                                                const void *rois, const vo_k_ra_box *boxes,
                                                int64_t num_rois, int64_t n, void *out) {
  VO_K_STORE_EACH(DT, n, out, vo_k_roi_align_rotated_gather_item, &a,
                  static_cast<const typename vo_k_dtype<DT>::S *>(grad), rois, boxes, num_rois);
}

// The kernels' arguments: roi_align's over src (input or grad), and the
// angle's scale.
vo_k_roi_align_rotated_args rotated_args(const vo_exec *ex, const vo_view *src) {
  vo_k_roi_align_rotated_args a;
  memset(&a, 0, sizeof a);
  a.base = vo_roi_align_kernel_args(&ex->p.roi_align_rotated.base, src);
  a.angle_scale = ex->p.roi_align_rotated.angle_scale;
  return a;
}

template <int DT>
struct forward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t stream) {
    const vo_roi_align_params &p = ex->p.roi_align_rotated.base;
    const int64_t n = p.out->numel;
    roi_align_rotated_forward_kernel<DT><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
        rotated_args(ex, p.input), vo_view_addr(p.input), vo_view_addr(p.rois), n,
        vo_view_addr(p.out));
    return vo_cuda_check_launch(ex);
  }
};

template <int DT>
struct backward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t stream) {
    const vo_roi_align_params &p = ex->p.roi_align_rotated.base;
    const vo_cr_ra_backward_kernels<DT, vo_k_roi_align_rotated_args> k = {
        roi_align_rotated_scatter_kernel<DT>, roi_align_rotated_box_kernel<DT>,
        roi_align_rotated_gather_kernel<DT>};
    return vo_cr_ra_backward(ex, stream, p, rotated_args(ex, p.grad), k, kThreads);
  }
};

}  // namespace

extern "C" vo_status vo_cuda_roi_align_rotated(const vo_exec *ex) {
  return vo_k_dispatch<forward_op>(ex, ex->p.roi_align_rotated.base.out);
}

extern "C" vo_status vo_cuda_roi_align_rotated_backward(const vo_exec *ex) {
  return vo_k_dispatch<backward_op>(ex, ex->p.roi_align_rotated.base.out);
}
