/*
 * Rotated-box overlap in the portable dialect (kernels/compat.h): the IoU
 * (or intersection over the first box's area) of two boxes (cx, cy, w, h, a)
 * as torchvision / detectron2 compute it (../shared/SPEC-NEXT.md 1.2-1.3):
 * re-centring on the pair's mid-point, candidate points from edge-edge
 * intersections and vertex-in-box tests relaxed by EPS = 1e-5, a Graham
 * scan, a fan area. The only rotated-box intersection code in visionops:
 * box_iou_rotated (cpu/, cuda/, opencl/ glue) and nms_rotated call it.
 * Per compute type (float, double): kernels/box_iou_rotated.inc.
 */
#ifndef VISIONOPS_KERNELS_BOX_IOU_ROTATED_H
#define VISIONOPS_KERNELS_BOX_IOU_ROTATED_H

#include "kernels/compat.h"

/* torchvision's / detectron2's pi / 180, truncated as they write it. */
#define VO_K_RBOX_DEG2RAD 0.01745329251
/* The parameter-space (edge-edge) and squared-length (vertex-in-box)
 * slack of candidate points. */
#define VO_K_RBOX_EPS 1e-5
/* Most candidate points of a pair: 16 edge-edge plus 4 + 4 vertices. */
#define VO_K_RBOX_MAX_POINTS 24

/* A call of the rotated_iou kernel (box_iou_rotated and its aligned form):
 * the two box tensors' dtypes (VO_DT_*) and strides (elements), the output
 * [n, m] (aligned: [n], row i with row i) contiguous. `reject` lets the
 * work item skip pairs vo_k_rbox_apart proves disjoint (the same values:
 * the CPU's plain path leaves it 0, and test_backend_ops compares). */
typedef struct vo_k_rotated_iou_args {
  int a_dtype, b_dtype;
  int64_t a_stride[2], b_stride[2];
  int64_t n, m;
  int aligned, iof, reject;
  vo_k_double_arg angle_scale;
} vo_k_rotated_iou_args;

/* The args of a call from its box tensors' dtypes and strides [2], the
 * box counts and the flags; what every backend's glue fills. */
VO_KFN vo_k_rotated_iou_args vo_k_rotated_iou_args_of(int a_dtype, const int64_t *a_stride,
                                                      int b_dtype, const int64_t *b_stride,
                                                      int64_t n, int64_t m, int aligned, int iof,
                                                      int reject, vo_k_double_arg angle_scale) {
  vo_k_rotated_iou_args a;
  a.a_dtype = a_dtype;
  a.b_dtype = b_dtype;
  for (int k = 0; k < 2; k++) {
    a.a_stride[k] = a_stride[k];
    a.b_stride[k] = b_stride[k];
  }
  a.n = n;
  a.m = m;
  a.aligned = aligned;
  a.iof = iof;
  a.reject = reject;
  a.angle_scale = angle_scale;
  return a;
}

#ifndef __OPENCL_C_VERSION__
/* The factor from a box's angle column to theta, radians counter-clockwise
 * (torchvision's convention), for the ops' clockwise and radians flags:
 * every rotated op computes it here. */
static inline double vo_rotated_angle_scale(int clockwise, int radians) {
  return (radians ? 1.0 : VO_K_RBOX_DEG2RAD) * (clockwise ? -1.0 : 1.0);
}
#endif

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/box_iou_rotated.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/box_iou_rotated.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_BOX_IOU_ROTATED_H */
