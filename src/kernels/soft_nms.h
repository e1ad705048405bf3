/*
 * soft_nms's per-pair math in the portable dialect (kernels/compat.h), once
 * for every backend: a box's area and the IoU of a selected box with a
 * remaining one, both with mmcv's `offset` (SPEC-NEXT 2.2), and the weight
 * that rescores the remaining box (hard, linear, gaussian). The CPU's plain
 * path runs these functions (cpu/soft_nms.c; its float32 AVX2 loop is a
 * bit-identical restatement of the same operations); device glue can follow.
 * Per compute type (float, double): functions suffixed _f32 / _f64; this
 * header includes itself once per type with VO_K_SOFT_NMS_BODY defined.
 */
#ifndef VO_K_SOFT_NMS_BODY
#ifndef VISIONOPS_KERNELS_SOFT_NMS_H
#define VISIONOPS_KERNELS_SOFT_NMS_H

#include "kernels/compat.h"

/* The method argument's values. */
#define VO_K_SOFT_NMS_HARD 0
#define VO_K_SOFT_NMS_LINEAR 1
#define VO_K_SOFT_NMS_GAUSSIAN 2

#define VO_K_SOFT_NMS_BODY
#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/soft_nms.h"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/soft_nms.h"
#include "kernels/dtype_end.h"
#undef VO_K_SOFT_NMS_BODY

#endif /* VISIONOPS_KERNELS_SOFT_NMS_H */
#elif VO_S_ENABLED
/* VO_K_SOFT_NMS_BODY: the body for one compute type VO_T. */

/* (x2 - x1 + offset) * (y2 - y1 + offset). */
VO_KFN VO_T VO_TN(vo_k_soft_nms_area)(VO_T x1, VO_T y1, VO_T x2, VO_T y2, VO_T offset) {
  return (x2 - x1 + offset) * (y2 - y1 + offset);
}

/* The IoU of selected box i and remaining box j in mmcv's order of
 * operations: max / min with i's coordinate first (max(a, b) = a < b ? b : a,
 * min(a, b) = b < a ? b : a), extents max(0, min(x2) - max(x1) + offset),
 * and inter / (area_i + area_j - inter) without an epsilon, so two boxes
 * without a union give 0 / 0 = NaN. */
VO_KFN VO_T VO_TN(vo_k_soft_nms_iou)(VO_T ix1, VO_T iy1, VO_T ix2, VO_T iy2, VO_T iarea, VO_T jx1,
                                     VO_T jy1, VO_T jx2, VO_T jy2, VO_T jarea, VO_T offset) {
  const VO_T xx1 = ix1 < jx1 ? jx1 : ix1;
  const VO_T yy1 = iy1 < jy1 ? jy1 : iy1;
  const VO_T xx2 = jx2 < ix2 ? jx2 : ix2;
  const VO_T yy2 = jy2 < iy2 ? jy2 : iy2;
  const VO_T wr = xx2 - xx1 + offset, hr = yy2 - yy1 + offset;
  const VO_T w = (VO_T)0 < wr ? wr : (VO_T)0, h = (VO_T)0 < hr ? hr : (VO_T)0;
  const VO_T inter = w * h;
  return inter / (iarea + jarea - inter);
}

/* The factor a remaining box's score is multiplied by, given its IoU with
 * the selected box: hard 0 if IoU >= thr, linear 1 - IoU if IoU >= thr
 * (both 1 otherwise), gaussian exp(-IoU^2 / sigma) whatever thr. A NaN IoU
 * gives 1 for every method: NaN >= thr is false, and gaussian, whose
 * formula would give NaN, is defined so too (docs/DECISIONS.md). An IoU of
 * 0 gives exactly 1 (gaussian: exp(-0) = 1), which the CPU's AVX2 loop
 * relies on to call exp only for overlapping boxes. */
VO_KFN VO_T VO_TN(vo_k_soft_nms_weight)(VO_T iou, int method, VO_T thr, VO_T sigma) {
  if (method == VO_K_SOFT_NMS_GAUSSIAN)
    return iou == iou ? VO_T_EXP(-(iou * iou) / sigma) : (VO_T)1;
  if (!(iou >= thr)) return (VO_T)1;
  return method == VO_K_SOFT_NMS_LINEAR ? (VO_T)1 - iou : (VO_T)0;
}

#endif /* VO_K_SOFT_NMS_BODY */
