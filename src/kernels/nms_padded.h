/*
 * The per-(image, class) NMS of batched_nms_padded and onnx_nms in the
 * portable dialect (kernels/compat.h), written once for the CPU and the
 * device kernels: a box read in its op's convention becomes the corners
 * and area the suppression test uses, and the test itself, a kept box
 * against a later candidate (the kept box's coordinates first, as both
 * references write it). Conventions (vo_nms_padded_params.kind):
 *   VO_K_NP_TORCHVISION   batched_nms_padded: boxes in a torchvision format
 *                         (xyxy, xywh, cxcywh) converted to xyxy with
 *                         box_convert's arithmetic (kernels/box_convert.h),
 *                         then torchvision nms's IoU and IoU > thr
 *                         (kernels/nms.h), so the op equals batched_nms of
 *                         the converted boxes
 *   VO_K_NP_ONNX_CORNERS  onnx_nms, center_point_box 0: [y1, x1, y2, x2],
 *                         any diagonal pair (each axis ordered by min/max)
 *   VO_K_NP_ONNX_CENTER   onnx_nms, center_point_box 1: [xc, yc, w, h]
 * The ONNX conventions follow onnxruntime's arithmetic: a pair is never
 * suppressed when the intersection is empty (max <= min on an axis), its
 * area or either box's area or the union is <= 0, and otherwise when
 * inter / union > thr. Per storage dtype (the conversion rounds each step
 * to the storage type, as box_convert does): kernels/nms_padded.inc.
 */
#ifndef VISIONOPS_KERNELS_NMS_PADDED_H
#define VISIONOPS_KERNELS_NMS_PADDED_H

#include "kernels/box_convert.h"
#include "kernels/nms.h"

#define VO_K_NP_TORCHVISION 0
#define VO_K_NP_ONNX_CORNERS 1
#define VO_K_NP_ONNX_CENTER 2

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/nms_padded.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/nms_padded.inc"
#include "kernels/dtype_end.h"

#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "kernels/nms_padded.inc"
#include "kernels/dtype_end.h"

#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "kernels/nms_padded.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_NMS_PADDED_H */
