// CUDA deform_attn and _deform_attn_backward over the work items of the
// portable kernels/deform_attn.h, as src/opencl/deform_attn.c runs them.
// Forward: one thread per output element. Backward: one thread per sample
// (n, q, m, l, p) for grad_sampling_loc and grad_attn_weight (one owner
// each, any mode), then grad_value accumulated in a zeroed compute-type
// buffer [n, S, M, D]: atomics per output element (fast), or under
// ctx->deterministic one owner per (image, head, level, channel) adding its
// samples in the CPU's order (the CPU's bits). float32 / float64 accumulate
// in grad_value itself; the half types in a float32 workspace rounded once
// at the end, over runs of images that fit the context's workspace limit.
// Everything is queued on the call's stream; nothing waits for it.

#include "cuda/portable.cuh"
#include "cuda/roi_common.cuh"
#include "kernels/deform_attn.h"

namespace {

constexpr int kThreads = 256;

enum { kValue, kShapes, kStarts, kLoc, kAttn, kGrad };

// ------------------------------------------------------------ kernels
// S: the portable storage type of dtype code DT (uint16_t bits for the
// half types), T its compute type.

template <int DT>
__global__ void forward_kernel(vo_k_deform_attn_args a, const typename vo_k_dtype<DT>::S *value,
                               const int64_t *shapes, const int64_t *starts,
                               const typename vo_k_dtype<DT>::S *loc,
                               const typename vo_k_dtype<DT>::S *attn, int64_t n,
                               typename vo_k_dtype<DT>::S *out) {
  VO_CUDA_GRID_STRIDE(i, n)
  VO_K_DO(DT, vo_k_da_forward_at, &a, value, shapes, starts, loc, attn, out, i);
}

// grad_loc and grad_attn of sample i over [N, Q, M, L, P].
template <int DT>
__global__ void sample_grads_kernel(vo_k_deform_attn_args a,
                                    const typename vo_k_dtype<DT>::S *value, const int64_t *shapes,
                                    const int64_t *starts, const typename vo_k_dtype<DT>::S *loc,
                                    const typename vo_k_dtype<DT>::S *attn,
                                    const typename vo_k_dtype<DT>::S *grad, int64_t n,
                                    typename vo_k_dtype<DT>::S *grad_loc,
                                    typename vo_k_dtype<DT>::S *grad_attn) {
  VO_CUDA_GRID_STRIDE(i, n)
  VO_K_DO(DT, vo_k_da_sample_grads_at, &a, value, shapes, starts, loc, attn, grad, grad_loc,
          grad_attn, i);
}

// Fast grad_value: output element i's corners added atomically to gv.
template <int DT>
__global__ void value_atomic_kernel(vo_k_deform_attn_args a, const int64_t *shapes,
                                    const int64_t *starts, const typename vo_k_dtype<DT>::S *loc,
                                    const typename vo_k_dtype<DT>::S *attn,
                                    const typename vo_k_dtype<DT>::S *grad, int64_t n,
                                    typename vo_k_dtype<DT>::T *gv) {
  VO_CUDA_GRID_STRIDE(i, n)
  VO_K_DO(DT, vo_k_da_value_grad_atomic_at, &a, shapes, starts, loc, attn, grad, gv, i);
}

// Deterministic grad_value: thread i over [N, M, L, D] owns channel d of
// the (n, m, l) slice of gv and adds that slice's samples in (q, p) order.
template <int DT>
__global__ void value_scatter_kernel(vo_k_deform_attn_args a, const int64_t *shapes,
                                     const int64_t *starts, const typename vo_k_dtype<DT>::S *loc,
                                     const typename vo_k_dtype<DT>::S *attn,
                                     const typename vo_k_dtype<DT>::S *grad, int64_t n,
                                     typename vo_k_dtype<DT>::T *gv) {
  const int64_t D = a.channels, L = a.levels, M = a.heads;
  VO_CUDA_GRID_STRIDE(i, n) {
    const int64_t d = i % D, l = i / D % L, m = i / D / L % M, b = i / D / L / M;
    VO_K_DO(DT, vo_k_da_level_scatter, &a, shapes, starts, loc, attn, grad, b, m, l, d, d + 1,
            gv + (b * a.keys * M + m) * D, M * D, (int64_t)0);
  }
}

// ------------------------------------------------------------ host side

// The kernels' sizes and element strides from the call's views.
vo_k_deform_attn_args da_args(const vo_exec *ex, bool backward) {
  const vo_view *in = ex->inputs;
  return vo_k_da_args_of(in[kValue].shape, in[kValue].stride, in[kShapes].stride,
                         in[kStarts].stride[0], in[kLoc].shape, in[kLoc].stride, in[kAttn].stride,
                         backward ? in[kGrad].stride : nullptr);
}

// Input k's element [first, 0, ...] as DT's portable storage type (null
// for an empty tensor without memory).
template <int DT>
const typename vo_k_dtype<DT>::S *input_at(const vo_exec *ex, int k, int64_t first = 0) {
  const vo_view &v = ex->inputs[k];
  const typename vo_k_dtype<DT>::S *p =
      static_cast<const typename vo_k_dtype<DT>::S *>(vo_view_addr(&v));
  return p ? p + first * v.stride[0] : p;
}

const int64_t *levels_at(const vo_exec *ex, int k) {
  return static_cast<const int64_t *>(vo_view_addr(&ex->inputs[k]));
}

template <int DT>
struct forward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t stream) {
    typedef typename vo_k_dtype<DT>::S S;
    const int64_t n = ex->outputs[0].numel;
    forward_kernel<DT><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
        da_args(ex, false), input_at<DT>(ex, kValue), levels_at(ex, kShapes),
        levels_at(ex, kStarts), input_at<DT>(ex, kLoc), input_at<DT>(ex, kAttn), n,
        static_cast<S *>(vo_view_addr(&ex->outputs[0])));
    return vo_cuda_check_launch(ex);
  }
};

// grad_value of images [n0, n0 + count) into gv, a zeroed compute-type
// buffer [count, S, M, D]: atomics or owners.
template <int DT>
vo_status value_grad(const vo_exec *ex, cudaStream_t stream, const vo_k_deform_attn_args &all,
                     bool atomic, int64_t n0, int64_t count, typename vo_k_dtype<DT>::T *gv) {
  vo_k_deform_attn_args a = all;
  a.batch = count;
  const int64_t items =
      atomic ? count * a.queries * a.heads * a.channels : count * a.heads * a.levels * a.channels;
  if (items == 0) return VO_OK;
  const unsigned int blocks = vo_cuda_blocks(items, kThreads);
  if (atomic)
    value_atomic_kernel<DT><<<blocks, kThreads, 0, stream>>>(
        a, levels_at(ex, kShapes), levels_at(ex, kStarts), input_at<DT>(ex, kLoc, n0),
        input_at<DT>(ex, kAttn, n0), input_at<DT>(ex, kGrad, n0), items, gv);
  else
    value_scatter_kernel<DT><<<blocks, kThreads, 0, stream>>>(
        a, levels_at(ex, kShapes), levels_at(ex, kStarts), input_at<DT>(ex, kLoc, n0),
        input_at<DT>(ex, kAttn, n0), input_at<DT>(ex, kGrad, n0), items, gv);
  return vo_cuda_check_launch(ex);
}

template <int DT>
struct backward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t stream) {
    typedef vo_k_dtype<DT> K;
    typedef typename K::S S;
    typedef typename K::T T;
    const vo_k_deform_attn_args a = da_args(ex, true);
    const vo_view &gval = ex->outputs[0];
    vo_status st;
    // one thread per sample (n, q, m, l, p): grad_attn's elements
    const int64_t samples = ex->outputs[2].numel;
    if (samples > 0) {
      sample_grads_kernel<DT><<<vo_cuda_blocks(samples, kThreads), kThreads, 0, stream>>>(
          a, input_at<DT>(ex, kValue), levels_at(ex, kShapes), levels_at(ex, kStarts),
          input_at<DT>(ex, kLoc), input_at<DT>(ex, kAttn), input_at<DT>(ex, kGrad), samples,
          static_cast<S *>(vo_view_addr(&ex->outputs[1])),
          static_cast<S *>(vo_view_addr(&ex->outputs[2])));
      if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
    }
    if (gval.numel == 0) return VO_OK;
    const bool atomic = !ex->ctx->deterministic;
    if constexpr (sizeof(S) == sizeof(T)) {
      T *gv = static_cast<T *>(vo_view_addr(&gval));
      st = vo_cuda_check(ex, cudaMemsetAsync(gv, 0, (size_t)gval.numel * sizeof(T), stream));
      if (st != VO_OK) return st;
      return value_grad<DT>(ex, stream, a, atomic, 0, a.batch, gv);
    } else {
      typedef typename K::cuda C;
      const int64_t per_image = a.keys * a.heads * a.channels;  // > 0: gval is not empty
      const uint64_t image_bytes = (uint64_t)per_image * sizeof(float);
      const size_t limit = ex->ctx->workspace_limit;
      if (image_bytes > limit)
        return vo_fail(VO_ERROR_OUT_OF_MEMORY,
                       "%s: workspace limit %zu bytes is below the %llu bytes of float32 gradient "
                       "one image of value needs",
                       ex->op_name, limit, (unsigned long long)image_bytes);
      int64_t run = (int64_t)(limit / image_bytes);
      if (run > a.batch) run = a.batch;
      vo_cuda_workspace ws(ex);
      float *acc = static_cast<float *>(ws.alloc((size_t)(image_bytes * (uint64_t)run)));
      if (!acc) return VO_ERROR_OUT_OF_MEMORY;
      C *out = static_cast<C *>(vo_view_addr(&gval));
      for (int64_t n0 = 0; n0 < a.batch; n0 += run) {
        const int64_t count = a.batch - n0 < run ? a.batch - n0 : run;
        const int64_t elems = count * per_image;
        st = vo_cuda_check(ex, cudaMemsetAsync(acc, 0, (size_t)elems * sizeof(float), stream));
        if (st != VO_OK) return st;
        if ((st = value_grad<DT>(ex, stream, a, atomic, n0, count, acc)) != VO_OK) return st;
        vo_cr_convert_kernel<C><<<vo_cuda_blocks(elems, kThreads), kThreads, 0, stream>>>(
            acc, elems, out + n0 * per_image);
        if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
      }
      return VO_OK;
    }
  }
};

// Run<DT>::run for the storage dtype of value (ex->dtype is the compute
// type: float32 for the half types), on the call's device; nothing to do
// when out (if not null) is empty.
template <template <int> class Run>
vo_status dispatch_storage(const vo_exec *ex, const vo_view *out) {
  return vo_k_on_device(ex, out, [&](cudaStream_t stream) -> vo_status {
    switch (ex->inputs[kValue].dtype) {
      case VO_F32: return Run<VO_DT_F32>::run(ex, stream);
      case VO_F64: return Run<VO_DT_F64>::run(ex, stream);
      case VO_F16: return Run<VO_DT_F16>::run(ex, stream);
      case VO_BF16: return Run<VO_DT_BF16>::run(ex, stream);
      default:
        return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: CUDA kernel has no dtype %s", ex->op_name,
                       vo_dtype_name(ex->inputs[kValue].dtype));
    }
  });
}

}  // namespace

extern "C" vo_status vo_cuda_deform_attn(const vo_exec *ex) {
  return dispatch_storage<forward_op>(ex, &ex->outputs[0]);
}

// No early return on an empty grad_value: grad_sampling_loc may still have
// elements (D = 0, or levels without keys).
extern "C" vo_status vo_cuda_deform_attn_backward(const vo_exec *ex) {
  return dispatch_storage<backward_op>(ex, nullptr);
}
