// CUDA roi_pool (with argmax) and roi_pool_backward: one thread per output
// element running kernels/roi_pool.h's work items, the CPU's arithmetic. The
// backward either scatters grad to argmax with atomics (fast) or, under
// ctx->deterministic, gathers: one thread per grad_input element sums the
// bins that chose it, in the CPU's (RoI, ph, pw) order.
#include "cuda/portable.cuh"
#include "cuda/roi_common.cuh"
#include "kernels/roi_pool.h"

namespace {

constexpr int kThreads = 256;

// The kernels' view of a call: src is the input (forward) or grad.
vo_k_roi_pool_args args_of(const vo_roi_pool_params &p, const vo_view *src) {
  return vo_k_roi_pool_args_of(p.spatial_scale, p.pooled_height, p.pooled_width, p.batch_size,
                               p.channels, p.height, p.width, (int)p.rois->dtype, p.rois->stride,
                               src->stride, p.argmax ? p.argmax->stride : nullptr);
}

template <typename S>
__device__ typename vo_cuda_compute<S>::type forward_at(const S *in, const void *rois,
                                                        const vo_k_roi_pool_args &a, int64_t i,
                                                        int32_t *am) {
  VO_KCALL(S, vo_k_roi_pool_forward_at, vo_kbits(in), rois, &a, i, am);
}

template <typename S, typename T>
__device__ void scatter_at(const S *grad, const int32_t *argmax, const void *rois,
                           const vo_k_roi_pool_args &a, int64_t i, T *acc) {
  VO_KCALL(S, vo_k_roi_pool_scatter_at, vo_kbits(grad), argmax, rois, &a, i, acc);
}

template <typename S>
__device__ typename vo_cuda_compute<S>::type gather_at(const S *grad, const int32_t *argmax,
                                                       const void *rois,
                                                       const vo_k_roi_pool_args &a,
                                                       int64_t num_rois, int in_bins, int64_t i) {
  VO_KCALL(S, vo_k_roi_pool_gather_at, vo_kbits(grad), argmax, rois, &a, num_rois, in_bins, i);
}

template <typename S>
__global__ void roi_pool_forward_kernel(vo_k_roi_pool_args a, const S *in, const void *rois,
                                        int64_t n, S *out, int32_t *argmax) {
  VO_CUDA_GRID_STRIDE(i, n) {
    int32_t am;
    vo_cuda_store(out, i, forward_at<S>(in, rois, a, i, &am));
    if (argmax) argmax[i] = am;  // NULL: omitted
  }
}

// acc: grad_input itself (float32/64) or a float32 copy for half types.
template <typename S, typename T>
__global__ void roi_pool_scatter_kernel(vo_k_roi_pool_args a, const S *grad, const int32_t *argmax,
                                        const void *rois, int64_t n, T *acc) {
  VO_CUDA_GRID_STRIDE(i, n) scatter_at<S, T>(grad, argmax, rois, a, i, acc);
}

// *in_bins stays 1 when every argmax is -1 or inside its own bin.
template <typename T>
__global__ void roi_pool_in_bins_kernel(vo_k_roi_pool_args a, const int32_t *argmax,
                                        const void *rois, int64_t n, int *in_bins) {
  VO_CUDA_GRID_STRIDE(i, n) {
    int inside;
    if constexpr (sizeof(T) == sizeof(double))
      inside = vo_k_roi_pool_argmax_in_bin_f64(argmax, rois, &a, i);
    else
      inside = vo_k_roi_pool_argmax_in_bin_f32(argmax, rois, &a, i);
    if (!inside) *in_bins = 0;
  }
}

template <typename S>
__global__ void roi_pool_gather_kernel(vo_k_roi_pool_args a, const S *grad, const int32_t *argmax,
                                       const void *rois, int64_t num_rois, const int *in_bins,
                                       int64_t n, S *out) {
  const int restrict_bins = *in_bins != 0;
  VO_CUDA_GRID_STRIDE(i, n)
  vo_cuda_store(out, i, gather_at<S>(grad, argmax, rois, a, num_rois, restrict_bins, i));
}

template <typename S>
vo_status forward_run(const vo_exec *ex, cudaStream_t stream) {
  const vo_roi_pool_params &p = ex->p.roi_pool;
  const int64_t n = p.out->numel;
  roi_pool_forward_kernel<S><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
      args_of(p, p.input), static_cast<const S *>(vo_view_addr(p.input)), vo_view_addr(p.rois), n,
      static_cast<S *>(vo_view_addr(p.out)), static_cast<int32_t *>(vo_view_addr(p.argmax_out)));
  return vo_cuda_check_launch(ex);
}

template <typename S>
vo_status backward_run(const vo_exec *ex, cudaStream_t stream) {
  typedef typename vo_cuda_compute<S>::type T;
  const vo_roi_pool_params &p = ex->p.roi_pool;
  const int64_t n = p.out->numel, num_rois = p.rois->shape[0], ng = p.grad->numel;
  S *out = static_cast<S *>(vo_view_addr(p.out));
  const vo_k_roi_pool_args a = args_of(p, p.grad);
  const S *grad = static_cast<const S *>(vo_view_addr(p.grad));
  const void *rois = vo_view_addr(p.rois);
  const int32_t *argmax = static_cast<const int32_t *>(vo_view_addr(p.argmax));
  if (num_rois == 0 || ng == 0)
    return vo_cuda_check(ex, cudaMemsetAsync(out, 0, (size_t)n * sizeof(S), stream));
  vo_status st;
  vo_cuda_workspace ws(ex);
  if (!ex->ctx->deterministic) {
    if constexpr (sizeof(S) == sizeof(T)) {
      st = vo_cuda_check(ex, cudaMemsetAsync(out, 0, (size_t)n * sizeof(S), stream));
      if (st != VO_OK) return st;
      roi_pool_scatter_kernel<S, T><<<vo_cuda_blocks(ng, kThreads), kThreads, 0, stream>>>(
          a, grad, argmax, rois, ng, reinterpret_cast<T *>(out));
      return vo_cuda_check_launch(ex);
    } else {
      // Half types: a float32 accumulator, in channel chunks under the limit
      // (channels [c0, c0 + cc) of grad and argmax per pass)
      auto scatter = [&](int64_t c0, int64_t cc, float *const *acc) {
        vo_k_roi_pool_args part = a;
        part.channels = cc;
        const int64_t items = ng / p.grad->shape[1] * cc;
        roi_pool_scatter_kernel<S, float><<<vo_cuda_blocks(items, kThreads), kThreads, 0, stream>>>(
            part, grad + c0 * a.src_stride[1], argmax + c0 * a.argmax_stride[1], rois, items,
            acc[0]);
        return vo_cuda_check_launch(ex);
      };
      bool done;
      st = vo_cr_half_scatter<S>(ex, stream, p.out, 1, kThreads, 1, scatter, &done);
      if (st != VO_OK || done) return st;
    }
  }
  int *in_bins = static_cast<int *>(ws.alloc(sizeof(int)));
  if (!in_bins) return VO_ERROR_OUT_OF_MEMORY;
  // any nonzero value means "every argmax in its bin"
  st = vo_cuda_check(ex, cudaMemsetAsync(in_bins, 1, sizeof(int), stream));
  if (st != VO_OK) return st;
  roi_pool_in_bins_kernel<T>
      <<<vo_cuda_blocks(ng, kThreads), kThreads, 0, stream>>>(a, argmax, rois, ng, in_bins);
  if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  roi_pool_gather_kernel<S><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
      a, grad, argmax, rois, num_rois, in_bins, n, out);
  return vo_cuda_check_launch(ex);
}

// vo_k_run_dtype's Run: the runs above on DT's CUDA storage type.
template <int DT>
struct forward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t s) {
    return forward_run<typename vo_k_dtype<DT>::cuda>(ex, s);
  }
};
template <int DT>
struct backward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t s) {
    return backward_run<typename vo_k_dtype<DT>::cuda>(ex, s);
  }
};

}  // namespace

extern "C" vo_status vo_cuda_roi_pool(const vo_exec *ex) {
  return vo_k_dispatch<forward_op>(ex, ex->p.roi_pool.out);
}

extern "C" vo_status vo_cuda_roi_pool_backward(const vo_exec *ex) {
  return vo_k_dispatch<backward_op>(ex, ex->p.roi_pool.out);
}
