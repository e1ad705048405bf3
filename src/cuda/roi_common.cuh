// Glue shared by the CUDA RoI kernels (roi_align, roi_pool,
// multi_scale_roi_align, roi_align_rotated): the half-type gradient store,
// the workspace bound and the roi_align family's backward launches. Their
// per-element math is the portable kernels/roi_align.h, kernels/roi_pool.h,
// kernels/multi_scale_roi_align.h and kernels/roi_align_rotated.h.
#ifndef VISIONOPS_CUDA_ROI_COMMON_CUH
#define VISIONOPS_CUDA_ROI_COMMON_CUH

#include "cuda/common.cuh"
#include "cuda/portable.cuh"
#include "kernels/roi_align.h"

// Half-type gradients accumulated in float32 are rounded once at the end.
template <typename S>
__global__ void vo_cr_convert_kernel(const float *acc, int64_t n, S *out) {
  VO_CUDA_GRID_STRIDE(i, n) vo_cuda_store(out, i, acc[i]);
}

// A roi_align-family op's backward kernels over its argument struct A:
// the atomic scatter of grad into an accumulator in the compute type, each
// RoI's pixel box, and the deterministic gather into grad_input.
template <int DT, typename A>
struct vo_cr_ra_backward_kernels {
  void (*scatter)(A, const void *grad, const void *rois, int64_t n,
                  typename vo_k_dtype<DT>::T *acc);
  void (*box)(A, const void *rois, int64_t num_rois, vo_k_ra_box *boxes);
  void (*gather)(A, const void *grad, const void *rois, const vo_k_ra_box *boxes, int64_t num_rois,
                 int64_t n, void *out);
};

// The backward of the roi_align family (p: the call's roi_align
// parameters, a: the kernels' arguments over grad): grad_input zeroed when
// no RoI contributes; in the fast mode atomics straight into float32 /
// float64 grad_input, or, for half types, into a float32 copy rounded once
// at the end when it fits the workspace limit; otherwise (deterministic, or
// no room for the copy) each RoI's pixel box when the boxes fit (the gather
// is correct without them, only slower), then the gather, one thread per
// grad_input element summing its terms in the CPU's order.
template <int DT, typename A>
vo_status vo_cr_ra_backward(const vo_exec *ex, cudaStream_t stream, const vo_roi_align_params &p,
                            const A &a, const vo_cr_ra_backward_kernels<DT, A> &k, int threads) {
  typedef vo_k_dtype<DT> D;
  typedef typename D::T T;
  typedef typename D::cuda S;
  const int64_t n = p.out->numel, num_rois = p.rois->shape[0], ng = p.grad->numel;
  S *out = static_cast<S *>(vo_view_addr(p.out));
  const void *grad = vo_view_addr(p.grad), *rois = vo_view_addr(p.rois);
  if (num_rois == 0 || ng == 0)
    return vo_cuda_check(ex, cudaMemsetAsync(out, 0, (size_t)n * sizeof(S), stream));
  if (!ex->ctx->deterministic) {
    if constexpr (sizeof(S) == sizeof(T)) {
      vo_status st = vo_cuda_check(ex, cudaMemsetAsync(out, 0, (size_t)n * sizeof(S), stream));
      if (st != VO_OK) return st;
      k.scatter<<<vo_cuda_blocks(ng, threads), threads, 0, stream>>>(a, grad, rois, ng,
                                                                     reinterpret_cast<T *>(out));
      return vo_cuda_check_launch(ex);
    } else {
      vo_cuda_workspace ws(ex);
      const uint64_t bytes = (uint64_t)n * sizeof(float);
      float *acc = nullptr;
      if (bytes <= ex->ctx->workspace_limit) {
        acc = static_cast<float *>(ws.alloc((size_t)bytes));
        if (!acc) vo_clear_error();  // the gather needs no workspace
      }
      if (acc) {
        vo_status st = vo_cuda_check(ex, cudaMemsetAsync(acc, 0, (size_t)bytes, stream));
        if (st != VO_OK) return st;
        k.scatter<<<vo_cuda_blocks(ng, threads), threads, 0, stream>>>(a, grad, rois, ng, acc);
        if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
        vo_cr_convert_kernel<S><<<vo_cuda_blocks(n, threads), threads, 0, stream>>>(acc, n, out);
        return vo_cuda_check_launch(ex);
      }
    }
  }
  vo_cuda_workspace ws(ex);
  vo_k_ra_box *boxes = nullptr;
  if ((uint64_t)num_rois * sizeof(vo_k_ra_box) <= ex->ctx->workspace_limit) {
    boxes = static_cast<vo_k_ra_box *>(ws.alloc((size_t)num_rois * sizeof(vo_k_ra_box)));
    if (!boxes) vo_clear_error();
  }
  vo_status st;
  if (boxes) {
    k.box<<<vo_cuda_blocks(num_rois, threads), threads, 0, stream>>>(a, rois, num_rois, boxes);
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  }
  k.gather<<<vo_cuda_blocks(n, threads), threads, 0, stream>>>(a, grad, rois, boxes, num_rois, n,
                                                               out);
  return vo_cuda_check_launch(ex);
}

#endif  // VISIONOPS_CUDA_ROI_COMMON_CUH
