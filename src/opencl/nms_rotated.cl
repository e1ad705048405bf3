/*
 * nms_rotated and batched_nms_rotated as OpenCL C entry points: the shared
 * rank, resolve and finish kernels (nms.clh), the gather of the sorted
 * boxes (kernels/nms_rotated.h's vo_k_nms_rbox: cos, sin, reach, slack once per
 * box) and the suppression mask with its test, disjoint pairs rejected
 * first.
 */
#include "opencl/portable.clh"
#include "kernels/nms_rotated.h"
#include "opencl/nms.clh"

#define VO_CL_NMS_RBOX_AT(sb, r) (sb)[r]
#define VO_CL_NMS_ROTATED_SUPPRESSES_f32(i, j, thr) vo_k_nms_rotated_suppresses_f32(i, j, thr, 1)
#define VO_CL_NMS_ROTATED_SUPPRESSES_f64(i, j, thr) vo_k_nms_rotated_suppresses_f64(i, j, thr, 1)

#define VO_CL_NMS_ROTATED(SFX, T)                                                              \
  /* Sorted box r = row order[r] of boxes; with cos_sin (a device without   \
   * fp64: the host's [N, 2] float cos and sin of each box), its c and s    \
   * from there. */                                                                            \
  __kernel void vo_cl_nms_rotated_gather_##SFX(                                                \
      VO_CL_TENSOR(boxes), int b_dtype, long b_s0, long b_s1, long n, VO_CL_TENSOR(ws),        \
      ulong order_at, vo_k_double_arg angle_scale, VO_CL_TENSOR(cos_sin)) {                    \
    const __global void *pb = VO_CL_AT(const char, boxes);                                     \
    __global char *w = VO_CL_AT(char, ws);                                                     \
    __global vo_k_nms_rbox_##SFX *sb = (__global vo_k_nms_rbox_##SFX *)w;                      \
    const __global long *order = (const __global long *)(w + order_at);                        \
    const vo_k_double scale = (vo_k_double)vo_k_double_arg_get(angle_scale);                   \
    VO_CL_FOR(r, n) {                                                                          \
      const int64_t i = order[r];                                                              \
      vo_k_nms_rbox_##SFX b = vo_k_nms_rbox_load_##SFX(pb, b_dtype, b_s0, b_s1, i, scale);     \
      if (cos_sin_buf) {                                                                       \
        const __global float *cs = VO_CL_AT(const float, cos_sin);                             \
        b.box.c = (T)cs[2 * i];                                                                \
        b.box.s = (T)cs[2 * i + 1];                                                            \
      }                                                                                        \
      sb[r] = b;                                                                               \
    }                                                                                          \
  }                                                                                            \
  VO_CL_NMS_MASK(vo_cl_nms_rotated_mask_##SFX, T, vo_k_nms_rbox_##SFX, vo_k_nms_rbox_##SFX,  \
                 VO_CL_NMS_RBOX_AT, VO_CL_NMS_ROTATED_SUPPRESSES_##SFX)
VO_CL_EACH_COMPUTE_TYPE(VO_CL_NMS_ROTATED)
