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

// Element offsets of each output's float32 [N,cc,H,W] accumulator in one
// block, 256-byte aligned between outputs; returns the block's elements.
inline int64_t vo_cr_acc_offsets(const vo_view *outs, int num_outs, int64_t cc, int64_t *off) {
  int64_t end = 0;
  for (int l = 0; l < num_outs; l++) {
    off[l] = (int64_t)(vo_cuda_align((size_t)end * sizeof(float)) / sizeof(float));
    end = off[l] + outs[l].numel / outs[l].shape[1] * cc;
  }
  return end;
}

// The half-type fast backward into outs ([N,C,H_l,W_l], num_outs of them:
// multi_scale_roi_align's levels, else one): atomics into float32
// accumulators in one block, rounded once into the outputs, over as many
// channels at a time as fit the workspace limit (all of them, usually), so
// every grad element is spread once whatever the limit; chunks are a
// multiple of `granule` channels (the ps ops' bins per output channel; 1).
// scatter(c0, cc, acc) queues the spreading of channels [c0, c0 + cc) into
// acc[l], output l's zeroed contiguous [N,cc,H_l,W_l]. *done = false
// (nothing queued) when not even one granule's accumulator fits: the caller
// then gathers.
template <typename S, typename F>
vo_status vo_cr_half_scatter(const vo_exec *ex, cudaStream_t stream, const vo_view *outs,
                             int num_outs, int threads, int64_t granule, F &&scatter, bool *done) {
  const int64_t images = outs[0].shape[0], channels = outs[0].shape[1];
  // a channel's float32 bytes in every output, and the alignment between them
  uint64_t per_channel = 0;
  for (int l = 0; l < num_outs; l++)
    per_channel += (uint64_t)(outs[l].numel / channels) * sizeof(float);
  const uint64_t limit = ex->ctx->workspace_limit, slack = 256 * (uint64_t)(num_outs - 1);
  const uint64_t fit = per_channel == 0 ? (uint64_t)channels
                       : limit > slack  ? (limit - slack) / per_channel
                                        : 0;
  const int64_t chunk = fit < (uint64_t)channels ? (int64_t)fit / granule * granule : channels;
  *done = false;
  if (chunk == 0) return VO_OK;
  int64_t off[VO_MAX_LIST];
  vo_cuda_workspace ws(ex);  // (at most chunk * per_channel + slack <= limit bytes)
  const int64_t most = vo_cr_acc_offsets(outs, num_outs, chunk, off);
  float *block = static_cast<float *>(ws.alloc((size_t)most * sizeof(float)));
  if (!block) {
    vo_clear_error();  // the gather needs no workspace
    return VO_OK;
  }
  for (int64_t c0 = 0; c0 < channels; c0 += chunk) {
    const int64_t cc = channels - c0 < chunk ? channels - c0 : chunk;
    const int64_t elems = vo_cr_acc_offsets(outs, num_outs, cc, off);
    float *acc[VO_MAX_LIST];
    for (int l = 0; l < num_outs; l++) acc[l] = block + off[l];
    vo_status st =
        vo_cuda_check(ex, cudaMemsetAsync(block, 0, (size_t)elems * sizeof(float), stream));
    if (st == VO_OK) st = scatter(c0, cc, static_cast<float *const *>(acc));
    if (st != VO_OK) return st;
    for (int l = 0; l < num_outs; l++) {
      // one pass when the accumulator is the output's layout, else this
      // chunk's planes of each image
      const int64_t plane = outs[l].shape[2] * outs[l].shape[3];
      const int64_t runs = cc == channels ? 1 : images;
      const int64_t len = cc == channels ? outs[l].numel : cc * plane;
      S *out = static_cast<S *>(vo_view_addr(&outs[l]));
      for (int64_t n = 0; n < runs && len > 0; n++) {
        vo_cr_convert_kernel<S><<<vo_cuda_blocks(len, threads), threads, 0, stream>>>(
            acc[l] + n * cc * plane, len, out + (n * channels + c0) * plane);
        if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
      }
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
      auto scatter = [&](int64_t c0, int64_t cc, float *const *acc) {
        A part = a;
        vo_cr_base(part).channels = cc;
        const char *g = static_cast<const char *>(grad) +
                        c0 * vo_cr_base(part).src_stride[1] * (int64_t)sizeof(S);
        const int64_t items = ng / p.grad->shape[1] * cc;
        k.scatter<<<vo_cuda_blocks(items, threads), threads, 0, stream>>>(part, g, rois, items,
                                                                          acc[0]);
        return vo_cuda_check_launch(ex);
      };
      bool done;
      const vo_status st = vo_cr_half_scatter<S>(ex, stream, p.out, 1, threads, 1, scatter, &done);
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
