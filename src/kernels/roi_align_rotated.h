/*
 * roi_align_rotated's per-element math in the portable dialect
 * (kernels/compat.h), shared by the CPU, CUDA and OpenCL glue. Prefix
 * vo_k_rar_: roi_align_rotated. A RoI (batch, cx, cy, w, h, angle) gets
 * roi_align's grid of samples per bin on its un-rotated box centred at 0;
 * each sample (yy, xx) is rotated by theta about the centre,
 * y = yy*cos - xx*sin + cy, x = yy*sin + xx*cos + cx (detectron2's
 * ROIAlignRotated), then sampled with roi_align's bilinear rule
 * (kernels/roi_align.h: its sample positions, clamping, corner weights,
 * sample tables and the mean of a bin's table are reused as they are).
 * Here: the geometry, one rotated sample, a RoI's sample table, the mean
 * and the backward scatter of a bin computed on the fly, the pixel box of
 * a RoI and the deterministic gather. Per-type bodies are
 * kernels/roi_align_rotated.inc.
 */
#ifndef VISIONOPS_KERNELS_ROI_ALIGN_ROTATED_H
#define VISIONOPS_KERNELS_ROI_ALIGN_ROTATED_H

#include "kernels/roi_align.h"

/* What the kernels need of a call, by value: roi_align's arguments (rois
 * [K,6] here) and the angle's scale to radians, counter-clockwise. */
typedef struct vo_k_roi_align_rotated_args {
  vo_k_roi_align_args base;
  vo_k_double_arg angle_scale;
} vo_k_roi_align_rotated_args;

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/roi_align_rotated.inc"
#include "kernels/dtype_end.h"
#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/roi_align_rotated.inc"
#include "kernels/dtype_end.h"
#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "kernels/roi_align_rotated.inc"
#include "kernels/dtype_end.h"
#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "kernels/roi_align_rotated.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_ROI_ALIGN_ROTATED_H */
