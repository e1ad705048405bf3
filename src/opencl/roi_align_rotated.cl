/*
 * roi_align_rotated and its backward as OpenCL C entry points over the work
 * items of kernels/roi_align_rotated.h, with roi_align.cl's argument lists
 * (opencl/roi_align.c launches both programs): the forward per output
 * element, the atomic scatter per grad element, each RoI's pixel box, and
 * the deterministic gather per grad_input element.
 */
#include "opencl/roi_common.clh"
#include "kernels/roi_align_rotated.h"

#define VO_CL_ROI_ALIGN_ROTATED(SFX, S, T, store)                                                 \
  __kernel void vo_cl_roi_align_rotated_##SFX(vo_k_roi_align_rotated_args a, VO_CL_TENSOR(in),    \
                                              VO_CL_TENSOR(rois), long n, VO_CL_TENSOR(out)) {    \
    const __global S *x = VO_CL_AT(const S, in);                                                  \
    const __global void *r = VO_CL_AT(const char, rois);                                          \
    __global S *o = VO_CL_AT(S, out);                                                             \
    VO_CL_FOR(i, n) store(o, i, vo_k_roi_align_rotated_forward_item_##SFX(&a, x, r, i));          \
  }                                                                                               \
  __kernel void vo_cl_roi_align_rotated_scatter_##SFX(vo_k_roi_align_rotated_args a,              \
                                                      VO_CL_TENSOR(grad), VO_CL_TENSOR(rois),     \
                                                      long n, VO_CL_TENSOR(acc)) {                \
    const __global S *g = VO_CL_AT(const S, grad);                                                \
    const __global void *r = VO_CL_AT(const char, rois);                                          \
    __global T *t = VO_CL_AT(T, acc);                                                             \
    VO_CL_FOR(i, n) vo_k_roi_align_rotated_scatter_item_##SFX(&a, g, r, i, t);                    \
  }                                                                                               \
  __kernel void vo_cl_roi_align_rotated_gather_##SFX(                                             \
      vo_k_roi_align_rotated_args a, VO_CL_TENSOR(grad), VO_CL_TENSOR(rois), VO_CL_TENSOR(boxes), \
      long num_rois, long n, VO_CL_TENSOR(out)) {                                                 \
    const __global S *g = VO_CL_AT(const S, grad);                                                \
    const __global void *r = VO_CL_AT(const char, rois);                                          \
    const __global vo_k_ra_box *b = boxes_buf ? VO_CL_AT(const vo_k_ra_box, boxes) : 0;           \
    __global S *o = VO_CL_AT(S, out);                                                             \
    VO_CL_FOR(i, n)                                                                               \
    store(o, i, vo_k_roi_align_rotated_gather_item_##SFX(&a, g, r, b, num_rois, i));              \
  }
VO_CL_EACH_DTYPE(VO_CL_ROI_ALIGN_ROTATED)

/* Each RoI's image and pixel box (vo_k_rar_box_of), per compute type. */
#define VO_CL_ROI_ALIGN_ROTATED_BOX(SFX, T)                                                    \
  __kernel void vo_cl_roi_align_rotated_box_##SFX(                                             \
      vo_k_roi_align_rotated_args a, VO_CL_TENSOR(rois), long num_rois, VO_CL_TENSOR(boxes)) { \
    const __global void *r = VO_CL_AT(const char, rois);                                       \
    __global vo_k_ra_box *b = VO_CL_AT(vo_k_ra_box, boxes);                                    \
    VO_CL_FOR(k, num_rois) b[k] = vo_k_rar_box_of_##SFX(&a, r, k);                             \
  }
VO_CL_EACH_COMPUTE_TYPE(VO_CL_ROI_ALIGN_ROTATED_BOX)
