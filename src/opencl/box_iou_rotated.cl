/*
 * box_iou_rotated and box_iou_rotated_aligned's OpenCL C entry points: one
 * work item per output element over kernels/box_iou_rotated.h's work item,
 * per compute type T (f32; f64 where the device has float64), boxes read at
 * their own dtypes and strides, as src/cuda/box_iou_rotated.cu does.
 */
#include "opencl/portable.clh"
#include "kernels/box_iou_rotated.h"

#define VO_CL_ROTATED_IOU(SFX, T)                                                           \
  __kernel void vo_cl_rotated_iou_##SFX(vo_k_rotated_iou_args args, VO_CL_TENSOR(a),        \
                                        VO_CL_TENSOR(b), long total, VO_CL_TENSOR(out)) {   \
    const __global void *pa = VO_CL_AT(const char, a), *pb = VO_CL_AT(const char, b);      \
    __global T *out = VO_CL_AT(T, out);                                                     \
    VO_CL_FOR(e, total) out[e] = vo_k_rotated_iou_item_##SFX(&args, pa, pb, e);            \
  }
VO_CL_EACH_COMPUTE_TYPE(VO_CL_ROTATED_IOU)
