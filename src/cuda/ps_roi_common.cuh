// Kernels and host drivers shared by the CUDA ps_roi_align and ps_roi_pool:
// forward (one thread per output element), backward atomic (one thread per
// grad element) or deterministic (one thread per grad_input element,
// gathering in a fixed order). The per-element math is the op's policy
// (Op::forward / scatter / gather); vo_call has checked the values of rois
// and channel_mapping on the device before (core/data_checks.c).
#ifndef VISIONOPS_CUDA_PS_ROI_COMMON_CUH
#define VISIONOPS_CUDA_PS_ROI_COMMON_CUH

#include <stdint.h>

#include "cuda/host_device.cuh"
#include "cuda/portable.cuh"
#include "cuda/roi_common.cuh"

constexpr int kVoPsThreads = 256;

// What the ps kernels need of a call, by value.
struct vo_ps_args {
  vo_cuda_view rois;  // [K,5], any floating dtype (read by its runtime dtype, SPEC section 5)
  vo_cuda_view src;   // forward: input [N,C,H,W]; backward: grad [K,C/(PH*PW),PH,PW]
  double spatial_scale;
  int64_t num_rois, batch_size, channels, height, width;
  int64_t pooled_h, pooled_w, channels_out;
  int64_t sampling_ratio;  // ps_roi_align only
};

// The sampling ratio of a ps op's base parameters: ps_roi_align's, or 0.
inline int64_t vo_ps_sampling_ratio(const vo_roi_align_params &b) { return b.sampling_ratio; }
inline int64_t vo_ps_sampling_ratio(const vo_roi_pool_params &) { return 0; }

// The kernels' arguments from a ps op's parameters (Params: vo_ps_roi_align_params
// or vo_ps_roi_pool_params, whose base holds the geometry) and src, the input
// or the grad.
template <typename Params>
vo_ps_args vo_ps_args_of(const Params &q, const vo_view *src) {
  vo_ps_args a;
  a.rois = vo_cuda_view_of(q.base.rois);
  a.src = vo_cuda_view_of(src);
  a.spatial_scale = q.base.spatial_scale;
  a.num_rois = q.base.rois->shape[0];
  a.batch_size = q.base.batch_size;
  a.channels = q.base.channels;
  a.height = q.base.height;
  a.width = q.base.width;
  a.pooled_h = q.base.pooled_height;
  a.pooled_w = q.base.pooled_width;
  a.channels_out = q.channels_out;
  a.sampling_ratio = vo_ps_sampling_ratio(q.base);
  return a;
}

template <typename Op, typename S>
__global__ void vo_ps_forward_kernel(vo_ps_args a, int64_t n, S *out, int32_t *mapping) {
  VO_CUDA_GRID_STRIDE(o, n) {
    int64_t c_in = 0;
    const typename vo_cuda_compute<S>::type v = Op::template forward<S>(a, o, &c_in);
    vo_hd_store(out, o, v);
    if (mapping) mapping[o] = (int32_t)c_in;  // NULL: omitted
  }
}

template <typename Op, typename S>
__global__ void vo_ps_scatter_kernel(vo_ps_args a, int64_t n,
                                     typename vo_cuda_compute<S>::type *acc) {
  VO_CUDA_GRID_STRIDE(o, n) { Op::template scatter<S>(a, o, acc, vo_hd_atomic_add()); }
}

template <typename Op, typename S>
__global__ void vo_ps_gather_kernel(vo_ps_args a, int64_t n, S *out) {
  VO_CUDA_GRID_STRIDE(e, n) { vo_hd_store(out, e, Op::template gather<S>(a, e)); }
}

template <typename Op, typename S>
vo_status vo_ps_forward_typed(const vo_exec *ex, const vo_ps_args &a, const vo_view *out,
                              const vo_view *mapping, cudaStream_t stream) {
  const int64_t n = out->numel;
  vo_ps_forward_kernel<Op, S><<<vo_cuda_blocks(n, kVoPsThreads), kVoPsThreads, 0, stream>>>(
      a, n, static_cast<S *>(vo_view_addr(out)), static_cast<int32_t *>(vo_view_addr(mapping)));
  return vo_cuda_check_launch(ex);
}

// Backward into out (contiguous [N,C,H,W]): deterministic contexts gather
// (bit-identical to the CPU backend); otherwise atomics, into out itself for
// float32/64 and into a float32 accumulator for half types, in chunks of
// output channels that fit the workspace limit (below one, the gather
// again).
template <typename Op, typename S>
vo_status vo_ps_backward_typed(const vo_exec *ex, const vo_ps_args &a, const vo_view *out,
                               cudaStream_t stream) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t n = out->numel, bins = a.pooled_h * a.pooled_w;
  const int64_t grads = a.num_rois * a.channels_out * bins;
  S *o = static_cast<S *>(vo_view_addr(out));
  if (!ex->ctx->deterministic) {
    if constexpr (sizeof(S) == sizeof(T)) {
      vo_status st = vo_cuda_check(ex, cudaMemsetAsync(o, 0, (size_t)n * sizeof(T), stream));
      if (st != VO_OK || grads == 0) return st;
      vo_ps_scatter_kernel<Op, S><<<vo_cuda_blocks(grads, kVoPsThreads), kVoPsThreads, 0, stream>>>(
          a, grads, reinterpret_cast<T *>(o));
      return vo_cuda_check_launch(ex);
    } else {
      // output channels [c0, c0 + cc) / bins: the arguments for that many
      // over that part of grad
      auto scatter = [&](int64_t c0, int64_t cc, float *const *acc) {
        vo_ps_args part = a;
        part.channels = cc;
        part.channels_out = cc / bins;
        part.src.data =
            static_cast<char *>(a.src.data) + c0 / bins * a.src.stride[1] * (int64_t)sizeof(S);
        const int64_t items = a.num_rois * part.channels_out * bins;
        if (items == 0) return VO_OK;
        vo_ps_scatter_kernel<Op, S>
            <<<vo_cuda_blocks(items, kVoPsThreads), kVoPsThreads, 0, stream>>>(part, items, acc[0]);
        return vo_cuda_check_launch(ex);
      };
      bool done;
      const vo_status st =
          vo_cr_half_scatter<S>(ex, stream, out, 1, kVoPsThreads, bins, scatter, &done);
      if (st != VO_OK || done) return st;
    }
  }
  vo_ps_gather_kernel<Op, S><<<vo_cuda_blocks(n, kVoPsThreads), kVoPsThreads, 0, stream>>>(a, n, o);
  return vo_cuda_check_launch(ex);
}

// vo_k_run_dtype's Run for Op's typed forward and backward.
template <typename Op>
struct vo_ps_run {
  template <int DT>
  struct forward {
    static vo_status run(const vo_exec *ex, cudaStream_t stream, const vo_ps_args &a,
                         const vo_view *out, const vo_view *mapping) {
      return vo_ps_forward_typed<Op, typename vo_k_dtype<DT>::cuda>(ex, a, out, mapping, stream);
    }
  };
  template <int DT>
  struct backward {
    static vo_status run(const vo_exec *ex, cudaStream_t stream, const vo_ps_args &a,
                         const vo_view *out) {
      return vo_ps_backward_typed<Op, typename vo_k_dtype<DT>::cuda>(ex, a, out, stream);
    }
  };
};

// The forward of either op (q its parameters): every output element (and
// its channel_mapping entry) by one thread. The rois' values were checked
// by vo_call, before the kernel.
template <typename Op, typename Params>
vo_status vo_ps_forward(const vo_exec *ex, const Params &q) {
  return vo_k_dispatch<vo_ps_run<Op>::template forward>(
      ex, q.base.out, vo_ps_args_of(q, q.base.input), q.base.out, q.channel_mapping);
}

// The backward of either op (q its parameters) into q.base.out; the rois'
// and channel_mapping's values were checked by vo_call, before the kernel.
template <typename Op, typename Params>
vo_status vo_ps_backward(const vo_exec *ex, const Params &q) {
  return vo_k_dispatch<vo_ps_run<Op>::template backward>(ex, q.base.out,
                                                         vo_ps_args_of(q, q.base.grad), q.base.out);
}

#endif  // VISIONOPS_CUDA_PS_ROI_COMMON_CUH
