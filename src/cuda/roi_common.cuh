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
#include "kernels/roi_align_rotated.h"

// Half-type gradients accumulated in float32 are rounded once at the end.
template <typename S>
__global__ void vo_cr_convert_kernel(const float *acc, int64_t n, S *out) {
  VO_CUDA_GRID_STRIDE(i, n) vo_cuda_store(out, i, acc[i]);
}

// The half-type fast backward into out (view o, [N,C,H,W]): atomics into a
// float32 accumulator rounded once into out, over as many channels at a time
// as fit the workspace limit (all of them, usually), so every grad element
// is spread once whatever the limit; chunks are a multiple of `granule`
// channels (the ps ops' bins per output channel; 1). scatter(c0, cc, acc)
// queues the spreading of channels [c0, c0 + cc) into acc, a zeroed
// contiguous [N,cc,H,W]. *done = false (nothing queued) when not even one
// granule's accumulator fits: the caller then gathers.
template <typename S, typename F>
vo_status vo_cr_half_scatter(const vo_exec *ex, cudaStream_t stream, const vo_view *o, S *out,
                             int threads, int64_t granule, F &&scatter, bool *done) {
  const int64_t images = o->shape[0], channels = o->shape[1], plane = o->shape[2] * o->shape[3];
  const uint64_t per_channel = (uint64_t)(images * plane) * sizeof(float);
  *done = false;
  const uint64_t fit = ex->ctx->workspace_limit / per_channel;  // (out has elements)
  const int64_t chunk = fit < (uint64_t)channels ? (int64_t)fit / granule * granule : channels;
  if (chunk == 0) return VO_OK;
  vo_cuda_workspace ws(ex);
  float *acc = static_cast<float *>(ws.alloc((size_t)(per_channel * (uint64_t)chunk)));
  if (!acc) {
    vo_clear_error();  // the gather needs no workspace
    return VO_OK;
  }
  for (int64_t c0 = 0; c0 < channels; c0 += chunk) {
    const int64_t cc = channels - c0 < chunk ? channels - c0 : chunk;
    vo_status st =
        vo_cuda_check(ex, cudaMemsetAsync(acc, 0, (size_t)(per_channel * (uint64_t)cc), stream));
    if (st == VO_OK) st = scatter(c0, cc, acc);
    if (st != VO_OK) return st;
    // one pass when the accumulator is out's layout, else this chunk's planes per image
    const int64_t runs = cc == channels ? 1 : images, len = cc == channels ? o->numel : cc * plane;
    for (int64_t n = 0; n < runs; n++) {
      vo_cr_convert_kernel<S><<<vo_cuda_blocks(len, threads), threads, 0, stream>>>(
          acc + n * cc * plane, len, out + (n * channels + c0) * plane);
      if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
    }
  }
  *done = true;
  return VO_OK;
}

// The roi_align fields of a roi_align-family argument struct.
inline vo_k_roi_align_args &vo_cr_base(vo_k_roi_align_args &a) { return a; }
inline vo_k_roi_align_args &vo_cr_base(vo_k_roi_align_rotated_args &a) { return a.base; }

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
// at the end, in channel chunks that fit the workspace limit; otherwise
// (deterministic, or no room for one channel) each RoI's pixel box when the boxes fit (the gather
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
      // channels [c0, c0 + cc): the struct for cc channels over that part of grad
      auto scatter = [&](int64_t c0, int64_t cc, float *acc) {
        A part = a;
        vo_cr_base(part).channels = cc;
        const char *g = static_cast<const char *>(grad) +
                        c0 * vo_cr_base(part).src_stride[1] * (int64_t)sizeof(S);
        const int64_t items = ng / p.grad->shape[1] * cc;
        k.scatter<<<vo_cuda_blocks(items, threads), threads, 0, stream>>>(part, g, rois, items,
                                                                          acc);
        return vo_cuda_check_launch(ex);
      };
      bool done;
      const vo_status st = vo_cr_half_scatter(ex, stream, p.out, out, threads, 1, scatter, &done);
      if (st != VO_OK || done) return st;
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
