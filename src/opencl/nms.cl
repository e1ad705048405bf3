/*
 * nms and batched_nms as OpenCL C entry points: the shared rank, resolve
 * and finish kernels (nms.clh), the gather of the sorted boxes (x1, y1, x2,
 * y2 in the compute type) and the suppression mask with kernels/nms.h's
 * test.
 */
#include "opencl/portable.clh"
#include "kernels/nms.h"
#include "opencl/nms.clh"

/* Box r of the sorted (x1, y1, x2, y2) rows, with its area. */
#define VO_CL_NMS_BOX_AT_f32(sb, r) \
  vo_k_nms_box_of_f32(sb[(r) * 4], sb[(r) * 4 + 1], sb[(r) * 4 + 2], sb[(r) * 4 + 3])
#define VO_CL_NMS_BOX_AT_f64(sb, r) \
  vo_k_nms_box_of_f64(sb[(r) * 4], sb[(r) * 4 + 1], sb[(r) * 4 + 2], sb[(r) * 4 + 3])

#define VO_CL_NMS(SFX, T)                                                                      \
  /* Sorted box r = row order[r] of boxes, in T. */                                            \
  __kernel void vo_cl_nms_gather_##SFX(VO_CL_TENSOR(boxes), int b_dtype, long b_s0, long b_s1, \
                                       long n, VO_CL_TENSOR(ws), ulong order_at) {             \
    const __global void *pb = VO_CL_AT(const char, boxes);                                     \
    __global char *w = VO_CL_AT(char, ws);                                                     \
    __global T *sboxes = (__global T *)w;                                                      \
    const __global long *order = (const __global long *)(w + order_at);                        \
    VO_CL_FOR(r, n) {                                                                          \
      const int64_t i = order[r];                                                              \
      for (int k = 0; k < 4; k++)                                                              \
        sboxes[r * 4 + k] = (T)vo_k_load_as_double(pb, b_dtype, i * b_s0 + k * b_s1);          \
    }                                                                                          \
  }                                                                                            \
  VO_CL_NMS_MASK(vo_cl_nms_mask_##SFX, T, T, vo_k_nms_box_##SFX, VO_CL_NMS_BOX_AT_##SFX,       \
                 vo_k_nms_suppresses_##SFX)
VO_CL_EACH_COMPUTE_TYPE(VO_CL_NMS)
