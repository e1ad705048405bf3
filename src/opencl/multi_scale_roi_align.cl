/*
 * multi_scale_roi_align and its backward as OpenCL C entry points over
 * kernels/multi_scale_roi_align.h and roi_align's work items, one per
 * storage dtype. As on CUDA, each work item finds its RoI's FPN level on the
 * device; unlike CUDA, the host launches one kernel per level, with that
 * level's features or gradient (a kernel cannot index its buffer arguments),
 * and the pyramid's arguments (vo_k_msra_args, over the 1 KiB a kernel's
 * arguments may total) come in a read-only buffer `pyr`, copied to private
 * memory once per work item. Forward: level l's launch writes the outputs
 * of the RoIs on level l (and, for l = 0, the zeros of RoIs with no level).
 * Fast backward: level l's launch scatters the grad of its RoIs with
 * atomics. Deterministic backward: each RoI's level and pixel box, then a
 * gather per level in RoI order.
 */
#include "opencl/roi_common.clh"
#include "kernels/multi_scale_roi_align.h"

#define VO_CL_MSRA(SFX, S, T, store)                                                            \
  __kernel void vo_cl_msra_##SFX(__global const vo_k_msra_args *pyr, int l, VO_CL_TENSOR(feat), \
                                 VO_CL_TENSOR(rois), long n, VO_CL_TENSOR(out)) {               \
    const vo_k_msra_args m = *pyr;                                                              \
    const vo_k_roi_align_args a = vo_k_msra_level_args(&m, l, 0);                               \
    const int64_t per_roi = m.channels * m.pooled_height * m.pooled_width;                      \
    const __global S *x = VO_CL_AT(const S, feat);                                              \
    const __global void *r = VO_CL_AT(const char, rois);                                        \
    __global S *o = VO_CL_AT(S, out);                                                           \
    VO_CL_FOR(i, n) {                                                                           \
      const int level = vo_k_msra_level_of_##SFX##_T(&m, r, i / per_roi);                       \
      if (level == l)                                                                           \
        store(o, i, vo_k_roi_align_forward_item_##SFX(&a, x, r, i));                            \
      else if (level < 0 && l == 0)                                                             \
        store(o, i, (T)0);                                                                      \
    }                                                                                           \
  }                                                                                             \
  __kernel void vo_cl_msra_scatter_##SFX(__global const vo_k_msra_args *pyr, int l,             \
                                         VO_CL_TENSOR(grad), VO_CL_TENSOR(rois), long n,        \
                                         VO_CL_TENSOR(acc)) {                                   \
    const vo_k_msra_args m = *pyr;                                                              \
    const vo_k_roi_align_args a = vo_k_msra_level_args(&m, l, 1);                               \
    const int64_t per_roi = m.channels * m.pooled_height * m.pooled_width;                      \
    const __global S *g = VO_CL_AT(const S, grad);                                              \
    const __global void *r = VO_CL_AT(const char, rois);                                        \
    __global T *t = VO_CL_AT(T, acc);                                                           \
    VO_CL_FOR(i, n) {                                                                           \
      if (vo_k_msra_level_of_##SFX##_T(&m, r, i / per_roi) == l)                                \
        vo_k_roi_align_scatter_item_##SFX(&a, g, r, i, t);                                      \
    }                                                                                           \
  }                                                                                             \
  __kernel void vo_cl_msra_gather_##SFX(                                                        \
      __global const vo_k_msra_args *pyr, int l, VO_CL_TENSOR(grad), VO_CL_TENSOR(rois),        \
      VO_CL_TENSOR(boxes), long num_rois, long n, VO_CL_TENSOR(out)) {                          \
    const vo_k_msra_args m = *pyr;                                                              \
    const __global S *g = VO_CL_AT(const S, grad);                                              \
    const __global void *r = VO_CL_AT(const char, rois);                                        \
    const __global vo_k_ra_box *b = boxes_buf ? VO_CL_AT(const vo_k_ra_box, boxes) : 0;         \
    __global S *o = VO_CL_AT(S, out);                                                           \
    VO_CL_FOR(i, n) store(o, i, vo_k_msra_gather_item_##SFX(&m, l, g, r, b, num_rois, i));      \
  }

/* The level rule is per compute type: f16 and bf16 use float32's. */
#define vo_k_msra_level_of_f32_T vo_k_msra_level_of_f32
#define vo_k_msra_level_of_f64_T vo_k_msra_level_of_f64
#define vo_k_msra_level_of_f16_T vo_k_msra_level_of_f32
#define vo_k_msra_level_of_bf16_T vo_k_msra_level_of_f32
VO_CL_EACH_DTYPE(VO_CL_MSRA)

/* Each RoI's level and pixel box on it (vo_k_msra_box_of), per compute type. */
#define VO_CL_MSRA_BOX(SFX, T)                                                               \
  __kernel void vo_cl_msra_box_##SFX(__global const vo_k_msra_args *pyr, VO_CL_TENSOR(rois), \
                                     long num_rois, VO_CL_TENSOR(boxes)) {                   \
    const vo_k_msra_args m = *pyr;                                                           \
    const __global void *r = VO_CL_AT(const char, rois);                                     \
    __global vo_k_ra_box *b = VO_CL_AT(vo_k_ra_box, boxes);                                  \
    VO_CL_FOR(k, num_rois) b[k] = vo_k_msra_box_of_##SFX(&m, r, k);                          \
  }
VO_CL_EACH_COMPUTE_TYPE(VO_CL_MSRA_BOX)
