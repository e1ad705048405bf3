// Kernels and host drivers shared by the CUDA ps_roi_align and ps_roi_pool:
// forward (one thread per output element), backward atomic (one thread per
// grad element) or deterministic (one thread per grad_input element,
// gathering in a fixed order), and the device-side channel_mapping check.
// The per-element math is the op's policy (Op::forward / scatter / gather).
#ifndef VISIONOPS_CUDA_PS_ROI_COMMON_CUH
#define VISIONOPS_CUDA_PS_ROI_COMMON_CUH

#include <stdint.h>

#include "cuda/ps_roi_math.cuh"
#include "cuda/roi_common.cuh"

constexpr int kVoPsThreads = 256;

template <typename Op, typename S>
__global__ void vo_ps_forward_kernel(vo_ps_args a, int64_t n, S *out, int32_t *mapping) {
  VO_CUDA_GRID_STRIDE(o, n) {
    int64_t c_in = 0;
    const typename vo_cuda_compute<S>::type v = Op::template forward<S>(a, o, &c_in);
    vo_hd_store(out, o, v);
    mapping[o] = (int32_t)c_in;
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

template <typename S>
__global__ void vo_ps_convert_kernel(const float *acc, int64_t n, S *out) {
  VO_CUDA_GRID_STRIDE(i, n) { vo_hd_store(out, i, acc[i]); }
}

// a.src is the channel_mapping view here; the lowest bad flat index wins.
template <int Unused>
__global__ void vo_ps_mapping_check_kernel(vo_ps_args a, int64_t n, unsigned long long *first_bad) {
  VO_CUDA_GRID_STRIDE(o, n) {
    const int64_t x = o % a.pooled_w, y = (o / a.pooled_w) % a.pooled_h;
    const int64_t c = (o / (a.pooled_w * a.pooled_h)) % a.channels_out;
    const int64_t k = o / (a.pooled_w * a.pooled_h * a.channels_out);
    const int32_t v = static_cast<const int32_t *>(a.src.data)[vo_cuda_offset(a.src, k, c, y, x)];
    if ((int64_t)v != vo_ps_expected_mapping(a, o)) atomicMin(first_bad, (unsigned long long)o);
  }
}

// Checks a device channel_mapping as the op layer checks a host one (same
// message), synchronising the stream to read the verdict.
inline vo_status vo_ps_check_mapping(const vo_exec *ex, vo_ps_args a, const vo_view *m,
                                     const char *arg_name, cudaStream_t stream) {
  const int64_t n = m->numel;
  if (n == 0) return VO_OK;
  a.src = vo_cuda_view_of(m);
  vo_cuda_workspace ws(ex);
  unsigned long long *first = static_cast<unsigned long long *>(ws.alloc(sizeof *first));
  if (!first) return VO_ERROR_OUT_OF_MEMORY;
  vo_status st = vo_cuda_check(ex, cudaMemsetAsync(first, 0xff, sizeof *first, stream));
  if (st != VO_OK) return st;
  vo_ps_mapping_check_kernel<0>
      <<<vo_cuda_blocks(n, kVoPsThreads), kVoPsThreads, 0, stream>>>(a, n, first);
  if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  unsigned long long bad = 0;
  st = vo_cuda_check(ex, cudaMemcpyAsync(&bad, first, sizeof bad, cudaMemcpyDeviceToHost, stream));
  if (st != VO_OK) return st;
  if ((st = vo_cuda_check(ex, cudaStreamSynchronize(stream))) != VO_OK) return st;
  if (bad == ~0ull) return VO_OK;
  const int64_t o = (int64_t)bad;
  const int64_t x = o % a.pooled_w, y = (o / a.pooled_w) % a.pooled_h;
  const int64_t c = (o / (a.pooled_w * a.pooled_h)) % a.channels_out;
  const int64_t k = o / (a.pooled_w * a.pooled_h * a.channels_out);
  int32_t v = 0;
  const int32_t *at = static_cast<const int32_t *>(vo_view_addr(m)) + vo_cuda_offset(a.src, k, c, y, x);
  st = vo_cuda_check(ex, cudaMemcpyAsync(&v, at, sizeof v, cudaMemcpyDeviceToHost, stream));
  if (st == VO_OK) st = vo_cuda_check(ex, cudaStreamSynchronize(stream));
  if (st != VO_OK) return st;
  return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                 "%s: %s[%lld, %lld, %lld, %lld] = %d, expected %lld (the input channel the "
                 "forward reads for that output channel and bin)",
                 ex->op_name, arg_name, (long long)k, (long long)c, (long long)y, (long long)x,
                 (int)v, (long long)vo_ps_expected_mapping(a, o));
}

template <typename Op, typename S>
vo_status vo_ps_forward_typed(const vo_exec *ex, const vo_ps_args &a, const vo_view *out,
                              const vo_view *mapping, cudaStream_t stream) {
  const int64_t n = out->numel;
  vo_ps_forward_kernel<Op, S><<<vo_cuda_blocks(n, kVoPsThreads), kVoPsThreads, 0, stream>>>(
      a, n, static_cast<S *>(vo_view_addr(out)), static_cast<int32_t *>(vo_view_addr(mapping)));
  return vo_cuda_check_launch(ex);
}

// The forward of either op: rois validated on the device, then every output
// element (and its channel_mapping entry) by one thread.
template <typename Op>
vo_status vo_ps_forward(const vo_exec *ex, const vo_ps_args &a, const vo_view *rois,
                        const vo_view *out, const vo_view *mapping) {
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const cudaStream_t stream = vo_cuda_stream(ex);
  vo_status st = vo_cuda_check_rois(ex, rois, a.batch_size, vo_arg_name(ex, 1));
  if (st != VO_OK || out->numel == 0) return st;
  switch (ex->dtype) {
    case VO_F32: return vo_ps_forward_typed<Op, float>(ex, a, out, mapping, stream);
    case VO_F64: return vo_ps_forward_typed<Op, double>(ex, a, out, mapping, stream);
    case VO_F16: return vo_ps_forward_typed<Op, __half>(ex, a, out, mapping, stream);
    case VO_BF16: return vo_ps_forward_typed<Op, __nv_bfloat16>(ex, a, out, mapping, stream);
    default:
      return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: CUDA kernel has no dtype %s", ex->op_name,
                     vo_dtype_name(ex->dtype));
  }
}

// Backward into out (contiguous [N,C,H,W]): deterministic contexts gather
// (bit-identical to the CPU backend); otherwise atomics, into out itself for
// float32/64 and into a float32 workspace for half types (or, when that
// would pass the workspace limit, the gather again).
template <typename Op, typename S>
vo_status vo_ps_backward_typed(const vo_exec *ex, const vo_ps_args &a, const vo_view *out,
                               cudaStream_t stream) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t n = out->numel, grads = a.num_rois * a.channels_out * a.pooled_h * a.pooled_w;
  const bool half = sizeof(S) == 2;
  const size_t limit =
      ex->ctx->workspace_limit ? ex->ctx->workspace_limit : VO_DEFAULT_WORKSPACE_LIMIT;
  const bool gather = ex->ctx->deterministic || (half && (uint64_t)n > limit / sizeof(float));
  vo_status st;
  if (gather) {
    vo_ps_gather_kernel<Op, S><<<vo_cuda_blocks(n, kVoPsThreads), kVoPsThreads, 0, stream>>>(
        a, n, static_cast<S *>(vo_view_addr(out)));
    return vo_cuda_check_launch(ex);
  }
  vo_cuda_workspace ws(ex);
  T *acc = static_cast<T *>(vo_view_addr(out));
  if (half) {
    acc = static_cast<T *>(ws.alloc((size_t)n * sizeof(float)));
    if (!acc) return VO_ERROR_OUT_OF_MEMORY;
  }
  if ((st = vo_cuda_check(ex, cudaMemsetAsync(acc, 0, (size_t)n * sizeof(T), stream))) != VO_OK)
    return st;
  if (grads > 0) {
    vo_ps_scatter_kernel<Op, S>
        <<<vo_cuda_blocks(grads, kVoPsThreads), kVoPsThreads, 0, stream>>>(a, grads, acc);
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  }
  if (half) {
    vo_ps_convert_kernel<S><<<vo_cuda_blocks(n, kVoPsThreads), kVoPsThreads, 0, stream>>>(
        reinterpret_cast<const float *>(acc), n, static_cast<S *>(vo_view_addr(out)));
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  }
  return VO_OK;
}

template <typename Op>
vo_status vo_ps_backward(const vo_exec *ex, const vo_ps_args &a, const vo_view *rois,
                         const vo_view *mapping, const vo_view *out) {
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const cudaStream_t stream = vo_cuda_stream(ex);
  vo_status st = vo_cuda_check_rois(ex, rois, a.batch_size, vo_arg_name(ex, 1));
  if (st != VO_OK) return st;
  if ((st = vo_ps_check_mapping(ex, a, mapping, vo_arg_name(ex, 2), stream)) != VO_OK) return st;
  if (out->numel == 0) return VO_OK;
  switch (ex->dtype) {
    case VO_F32: return vo_ps_backward_typed<Op, float>(ex, a, out, stream);
    case VO_F64: return vo_ps_backward_typed<Op, double>(ex, a, out, stream);
    case VO_F16: return vo_ps_backward_typed<Op, __half>(ex, a, out, stream);
    case VO_BF16: return vo_ps_backward_typed<Op, __nv_bfloat16>(ex, a, out, stream);
    default:
      return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: CUDA kernel has no dtype %s", ex->op_name,
                     vo_dtype_name(ex->dtype));
  }
}

#endif  // VISIONOPS_CUDA_PS_ROI_COMMON_CUH
