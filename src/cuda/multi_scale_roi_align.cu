// CUDA multi_scale_roi_align and its backward: each thread computes its
// RoI's FPN level on the device (the portable rule of
// kernels/multi_scale_roi_align.h, in the CPU's precision) and runs
// roi_align's portable work item on that level, so no RoI lists are
// built and the rois never leave the device. The backward is atomic (fast)
// or, under ctx->deterministic, a per-level gather in RoI order.
#include "cuda/portable.cuh"
#include "cuda/roi_common.cuh"
#include "core/roi_align_args.h"

namespace {

constexpr int kThreads = 256;
static_assert(VO_K_MSRA_MAX_LEVELS == VO_MAX_LIST, "one portable level per feature level");

// The pyramid, by value: the portable kernels' arguments and each level's
// features.
struct pyramid {
  vo_k_msra_args m;
  const void *features[VO_MAX_LIST];
};

pyramid pyramid_of(const vo_multi_scale_roi_align_params *p) {
  pyramid L;
  memset(&L, 0, sizeof L);
  L.m = vo_msra_kernel_args(p);
  for (int l = 0; l < p->num_levels; l++) L.features[l] = vo_view_addr(&p->features[l]);
  return L;
}

// One accumulator per level, by value.
template <typename A>
struct level_ptrs {
  A *level[VO_MAX_LIST];
};

// Output element i: roi_align on its RoI's level (0 without a level).
template <int DT>
__global__ void msra_forward_kernel(pyramid L, const void *rois, int64_t n, void *out) {
  typedef vo_k_dtype<DT> D;
  const int64_t per_roi = L.m.channels * L.m.pooled_height * L.m.pooled_width;
  VO_CUDA_GRID_STRIDE(i, n) {
    int l;
    VO_K_SET_T(l, DT, vo_k_msra_level_of, &L.m, rois, i / per_roi);
    typename D::T v = 0;
    if (l >= 0) {
      const vo_k_roi_align_args a = vo_k_msra_level_args(&L.m, l, 0);
      VO_K_SET(v, DT, vo_k_roi_align_forward_item, &a,
               static_cast<const typename D::S *>(L.features[l]), rois, i);
    }
    vo_cuda_store(static_cast<typename D::cuda *>(out), i, v);
  }
}

// Fast backward of grad element i into its RoI's level accumulator.
template <int DT>
__global__ void msra_scatter_kernel(pyramid L, const void *grad, const void *rois, int64_t n,
                                    level_ptrs<typename vo_k_dtype<DT>::T> acc) {
  const int64_t per_roi = L.m.channels * L.m.pooled_height * L.m.pooled_width;
  VO_CUDA_GRID_STRIDE(i, n) {
    int l;
    VO_K_SET_T(l, DT, vo_k_msra_level_of, &L.m, rois, i / per_roi);
    if (l < 0) continue;
    const vo_k_roi_align_args a = vo_k_msra_level_args(&L.m, l, 1);
    VO_K_DO(DT, vo_k_roi_align_scatter_item, &a,
            static_cast<const typename vo_k_dtype<DT>::S *>(grad), rois, i, acc.level[l]);
  }
}

template <int DT>
__global__ void msra_box_kernel(pyramid L, const void *rois, int64_t num_rois, vo_k_ra_box *boxes) {
  VO_CUDA_GRID_STRIDE(k, num_rois) VO_K_SET_T(boxes[k], DT, vo_k_msra_box_of, &L.m, rois, k);
}

template <int DT>
__global__ void msra_gather_kernel(pyramid L, int level, const void *grad, const void *rois,
                                   const vo_k_ra_box *boxes, int64_t num_rois, int64_t n,
                                   void *out) {
  VO_K_STORE_EACH(DT, n, out, vo_k_msra_gather_item, &L.m, level,
                  static_cast<const typename vo_k_dtype<DT>::S *>(grad), rois, boxes, num_rois);
}

template <int DT>
struct forward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t stream) {
    const vo_multi_scale_roi_align_params &p = ex->p.multi_scale_roi_align;
    const int64_t n = p.out->numel;
    if (n == 0) return VO_OK;
    msra_forward_kernel<DT><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
        pyramid_of(&p), vo_view_addr(p.rois), n, vo_view_addr(p.out));
    return vo_cuda_check_launch(ex);
  }
};

template <int DT>
struct backward_op {
  static vo_status run(const vo_exec *ex, cudaStream_t stream) {
    typedef typename vo_k_dtype<DT>::T T;
    typedef typename vo_k_dtype<DT>::cuda S;
    const vo_multi_scale_roi_align_params &p = ex->p.multi_scale_roi_align;
    const int levels = p.num_levels;
    const int64_t num_rois = p.rois->shape[0], ng = p.grad->numel;
    const pyramid L = pyramid_of(&p);
    const void *grad = vo_view_addr(p.grad), *rois = vo_view_addr(p.rois);
    vo_status st;
    if (num_rois == 0 || ng == 0) {
      for (int l = 0; l < levels; l++) {
        if (p.out[l].numel == 0) continue;
        st = vo_cuda_check(ex, cudaMemsetAsync(vo_view_addr(&p.out[l]), 0,
                                               (size_t)p.out[l].numel * sizeof(S), stream));
        if (st != VO_OK) return st;
      }
      return VO_OK;
    }
    if (!ex->ctx->deterministic) {
      const unsigned int blocks = vo_cuda_blocks(ng, kThreads);
      if constexpr (sizeof(S) == sizeof(T)) {  // float32 / float64: atomics into the outputs
        level_ptrs<T> direct;
        memset(&direct, 0, sizeof direct);
        for (int l = 0; l < levels; l++) {
          direct.level[l] = static_cast<T *>(vo_view_addr(&p.out[l]));
          if (p.out[l].numel == 0) continue;
          st = vo_cuda_check(ex, cudaMemsetAsync(vo_view_addr(&p.out[l]), 0,
                                                 (size_t)p.out[l].numel * sizeof(S), stream));
          if (st != VO_OK) return st;
        }
        msra_scatter_kernel<DT><<<blocks, kThreads, 0, stream>>>(L, grad, rois, ng, direct);
        return vo_cuda_check_launch(ex);
      } else {
        // Half types: float32 copies of every level's gradient, in channel
        // chunks under the limit (each pass with the pyramid's arguments for
        // that many channels over the matching part of grad); else the
        // gather below.
        auto scatter = [&](int64_t c0, int64_t cc, float *const *acc) {
          pyramid part = L;
          part.m.channels = cc;
          const void *g =
              static_cast<const char *>(grad) + c0 * L.m.grad_stride[1] * (int64_t)sizeof(S);
          const int64_t items = ng / p.grad->shape[1] * cc;
          level_ptrs<float> f32;
          memset(&f32, 0, sizeof f32);
          for (int l = 0; l < levels; l++) f32.level[l] = acc[l];
          msra_scatter_kernel<DT>
              <<<vo_cuda_blocks(items, kThreads), kThreads, 0, stream>>>(part, g, rois, items, f32);
          return vo_cuda_check_launch(ex);
        };
        bool done;
        st = vo_cr_half_scatter<S>(ex, stream, p.out, levels, kThreads, 1, scatter, &done);
        if (st != VO_OK || done) return st;
      }
    }
    // Each RoI's level and pixel box first, when they fit the workspace limit
    // (the gather is correct without them, only slower).
    vo_cuda_workspace box_ws(ex);
    vo_k_ra_box *boxes = nullptr;
    if ((uint64_t)num_rois * sizeof(vo_k_ra_box) <= ex->ctx->workspace_limit) {
      boxes = static_cast<vo_k_ra_box *>(box_ws.alloc((size_t)num_rois * sizeof(vo_k_ra_box)));
      if (!boxes) vo_clear_error();
    }
    if (boxes) {
      msra_box_kernel<DT>
          <<<vo_cuda_blocks(num_rois, kThreads), kThreads, 0, stream>>>(L, rois, num_rois, boxes);
      if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
    }
    for (int l = 0; l < levels; l++) {
      const int64_t n = p.out[l].numel;
      if (n == 0) continue;
      msra_gather_kernel<DT><<<vo_cuda_blocks(n, kThreads), kThreads, 0, stream>>>(
          L, l, grad, rois, boxes, num_rois, n, vo_view_addr(&p.out[l]));
      if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
    }
    return VO_OK;
  }
};

}  // namespace

extern "C" vo_status vo_cuda_multi_scale_roi_align(const vo_exec *ex) {
  return vo_k_dispatch<forward_op>(ex, nullptr);
}

extern "C" vo_status vo_cuda_multi_scale_roi_align_backward(const vo_exec *ex) {
  return vo_k_dispatch<backward_op>(ex, nullptr);
}
