// CUDA multi_scale_roi_align and its backward: each thread computes its
// RoI's FPN level on the device (the CPU's formula, in the same precision)
// and runs roi_align's per-element math on that level, so no RoI lists are
// built and the rois never leave the device. The backward is atomic (fast)
// or, under ctx->deterministic, a per-level gather in RoI order.
#include "cuda/roi_common.cuh"

namespace {

constexpr int kThreads = 256;

// One accumulator per level, by value.
template <typename A>
struct level_ptrs {
  A *level[VO_MAX_LIST];
};

template <typename S>
__global__ void msra_forward_kernel(vo_cmsra_levels L, vo_cuda_view rois, int64_t n, S *out) {
  VO_CUDA_GRID_STRIDE(i, n) vo_cuda_store(out, i, vo_cmsra_forward_at<S>(L, rois, i));
}

template <typename S, typename A>
__global__ void msra_scatter_kernel(vo_cmsra_levels L, vo_cuda_view grad, vo_cuda_view rois,
                                    int64_t n, level_ptrs<A> acc) {
  VO_CUDA_GRID_STRIDE(i, n) vo_cmsra_scatter_at<S, A>(L, grad, rois, i, acc.level);
}

template <typename T>
__global__ void msra_box_kernel(vo_cmsra_levels L, vo_cuda_view rois, int64_t num_rois,
                                vo_cra_box *boxes) {
  VO_CUDA_GRID_STRIDE(k, num_rois) boxes[k] = vo_cmsra_box_of<T>(L, rois, k);
}

template <typename S>
__global__ void msra_gather_kernel(vo_cmsra_levels L, int level, vo_cuda_view grad,
                                   vo_cuda_view rois, const vo_cra_box *boxes, int64_t num_rois,
                                   int64_t n, S *out) {
  VO_CUDA_GRID_STRIDE(i, n)
  vo_cuda_store(out, i, vo_cmsra_gather_at<S>(L, level, grad, rois, boxes, num_rois, i));
}

template <typename S>
vo_status forward_run(const vo_exec *ex, cudaStream_t stream) {
  const vo_multi_scale_roi_align_params &p = ex->p.multi_scale_roi_align;
  const int64_t n = p.out->numel;
  if (n == 0) return VO_OK;
  msra_forward_kernel<S><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
      vo_cmsra_levels_of(&p), vo_cuda_view_of(p.rois), n, static_cast<S *>(vo_view_addr(p.out)));
  return vo_cuda_check_launch(ex);
}

template <typename S>
vo_status backward_run(const vo_exec *ex, cudaStream_t stream) {
  typedef typename vo_cuda_compute<S>::type T;
  const vo_multi_scale_roi_align_params &p = ex->p.multi_scale_roi_align;
  const int levels = p.num_levels;
  const int64_t num_rois = p.rois->shape[0], ng = p.grad->numel;
  const vo_cmsra_levels L = vo_cmsra_levels_of(&p);
  const vo_cuda_view grad = vo_cuda_view_of(p.grad), rois = vo_cuda_view_of(p.rois);
  vo_status st;
  if (num_rois == 0 || ng == 0) {
    for (int l = 0; l < levels; l++) {
      if (p.out[l].numel == 0) continue;
      st = vo_cuda_check(
          ex, cudaMemsetAsync(p.out[l].data, 0, (size_t)p.out[l].numel * sizeof(S), stream));
      if (st != VO_OK) return st;
    }
    return VO_OK;
  }
  vo_cuda_workspace ws(ex);
  if (!ex->ctx->deterministic) {
    const unsigned int blocks = vo_cuda_blocks(ng, kThreads);
    if constexpr (sizeof(S) == sizeof(T)) {  // float32 / float64: atomics into the outputs
      level_ptrs<T> direct;
      memset(&direct, 0, sizeof direct);
      for (int l = 0; l < levels; l++) {
        direct.level[l] = static_cast<T *>(p.out[l].data);
        if (p.out[l].numel == 0) continue;
        st = vo_cuda_check(
            ex, cudaMemsetAsync(p.out[l].data, 0, (size_t)p.out[l].numel * sizeof(S), stream));
        if (st != VO_OK) return st;
      }
      msra_scatter_kernel<S, T><<<blocks, kThreads, 0, stream>>>(L, grad, rois, ng, direct);
      return vo_cuda_check_launch(ex);
    } else {
      // Half types: float32 copies of every level's gradient when they fit
      // the limit together; else the gather below.
      const size_t limit = vo_cr_workspace_limit(ex);
      size_t offset[VO_MAX_LIST + 1] = {0};
      bool fits = true;
      for (int l = 0; l < levels && fits; l++) {
        const uint64_t bytes = (uint64_t)p.out[l].numel * sizeof(float);
        fits = bytes <= limit && offset[l] + vo_cuda_align((size_t)bytes) <= limit;
        if (fits) offset[l + 1] = offset[l] + vo_cuda_align((size_t)bytes);
      }
      float *acc = nullptr;
      if (fits) {
        acc = static_cast<float *>(ws.alloc(offset[levels]));
        if (!acc) vo_clear_error();  // the gather needs no workspace
      }
      if (acc) {
        level_ptrs<float> f32;
        memset(&f32, 0, sizeof f32);
        for (int l = 0; l < levels; l++) f32.level[l] = (float *)((char *)acc + offset[l]);
        st = vo_cuda_check(ex, cudaMemsetAsync(acc, 0, offset[levels], stream));
        if (st != VO_OK) return st;
        msra_scatter_kernel<S, float><<<blocks, kThreads, 0, stream>>>(L, grad, rois, ng, f32);
        if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
        for (int l = 0; l < levels; l++) {
          const int64_t n = p.out[l].numel;
          if (n == 0) continue;
          vo_cr_convert_kernel<S><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
              f32.level[l], n, static_cast<S *>(p.out[l].data));
          if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
        }
        return VO_OK;
      }
    }
  }
  // Each RoI's level and pixel box first, when they fit the workspace limit
  // (the gather is correct without them, only slower).
  vo_cuda_workspace box_ws(ex);
  vo_cra_box *boxes = nullptr;
  if ((uint64_t)num_rois * sizeof(vo_cra_box) <= vo_cr_workspace_limit(ex)) {
    boxes = static_cast<vo_cra_box *>(box_ws.alloc((size_t)num_rois * sizeof(vo_cra_box)));
    if (!boxes) vo_clear_error();
  }
  if (boxes) {
    msra_box_kernel<T>
        <<<vo_cuda_blocks(num_rois, kThreads), kThreads, 0, stream>>>(L, rois, num_rois, boxes);
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  }
  for (int l = 0; l < levels; l++) {
    const int64_t n = p.out[l].numel;
    if (n == 0) continue;
    msra_gather_kernel<S><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
        L, l, grad, rois, boxes, num_rois, n, static_cast<S *>(p.out[l].data));
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  }
  return VO_OK;
}

template <typename S>
struct forward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t s) { return forward_run<S>(ex, s); }
};
template <typename S>
struct backward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t s) { return backward_run<S>(ex, s); }
};

template <template <typename> class Run>
vo_status dispatch(const vo_exec *ex) {
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
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

}  // namespace

extern "C" vo_status vo_cuda_multi_scale_roi_align(const vo_exec *ex) {
  return dispatch<forward_op>(ex);
}

extern "C" vo_status vo_cuda_multi_scale_roi_align_backward(const vo_exec *ex) {
  return dispatch<backward_op>(ex);
}
