/*
 * roi_align's per-element math in the portable dialect (kernels/compat.h),
 * shared by the CPU plain path, the CPU fast path's geometry and the CUDA
 * kernels, and built on by ps_roi_align and multi_scale_roi_align: the RoI
 * geometry, one axis of a bilinear sample and a whole sample (corner
 * offsets and weights), the mean of one bin's samples (an output element),
 * the backward's scatter of one bin's gradient, and the deterministic
 * backward's gather (which samples can touch a pixel, and their terms in the
 * scatter's order). The arithmetic follows torchvision's order, so float32
 * results match it bit for bit. Per-type bodies are kernels/roi_align.inc.
 */
#ifndef VISIONOPS_KERNELS_ROI_ALIGN_H
#define VISIONOPS_KERNELS_ROI_ALIGN_H

#include "kernels/compat.h"

/* candidate for kernels/compat.h: the largest int64_t (C's INT64_MAX, which
 * OpenCL C spells LONG_MAX). */
#define VO_K_INT64_MAX ((int64_t)0x7fffffffffffffff)

/* A sample's pos[0] when it lies outside the map (it contributes 0). Not
 * -1, nor any negative offset: with a view's negative strides a corner's
 * offset is negative. */
#define VO_K_RA_OUTSIDE (-VO_K_INT64_MAX - 1)

/* What the roi_align kernels need of a call, by value. src_stride are the
 * strides of the tensor an item reads: the input [N,C,H,W] (forward) or
 * grad [K,C,PH,PW] (backward). */
typedef struct vo_k_roi_align_args {
  vo_k_double_arg spatial_scale;
  int64_t pooled_height, pooled_width, sampling_ratio;
  int aligned;
  int64_t batch_size, channels, height, width;
  int rois_dtype;
  int64_t rois_stride[2];
  int64_t src_stride[4];
} vo_k_roi_align_args;

/* Largest per-RoI grid (samples per bin along one axis); torchvision keeps it
 * in an int. Clamping only avoids undefined conversions of absurd sizes. */
#define VO_K_RA_MAX_GRID ((int64_t)2147483647)

/* Adaptive grid size from ceil(roi size / pooled size); <= 0 (or NaN) means
 * the bin has no samples. */
VO_KFN int64_t vo_k_ra_grid(vo_k_double v) {
  if (!(v > 0)) return 0;
  if (v >= (vo_k_double)VO_K_RA_MAX_GRID) return VO_K_RA_MAX_GRID;
  return (int64_t)v;
}

/* The most adaptive samples per bin a kernel takes along an axis pooled
 * into `pooled` bins of a map of height + width = `map` pixels: twice the
 * roi_grid check's bound (kernels/data_checks.h, vo_k_adaptive_limit: 4x
 * ceil((map + 2) / pooled), at least VO_K_MAX_SAMPLING_RATIO), in integers
 * so that devices without float64 get it too. Every RoI the check lets
 * through stays below it; a RoI it rejects would otherwise take up to
 * 2^62 samples a bin when a device's check is deferred or off
 * (vo_context_set_device_checks), a hang rather than a bad read. */
VO_KFN int64_t vo_k_ra_grid_bound(int64_t map, int64_t pooled) {
  if (pooled <= 0 || map < 0 || map > VO_K_RA_MAX_GRID) return VO_K_RA_MAX_GRID;
  const int64_t l = (4 * (map + 2) + pooled - 1) / pooled;
  const int64_t b = 2 * (l > 128 ? l : 128);
  return b < VO_K_RA_MAX_GRID ? b : VO_K_RA_MAX_GRID;
}

/* a*b saturating at INT64_MAX (a, b >= 0). */
VO_KFN int64_t vo_k_ra_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > VO_K_INT64_MAX / b ? VO_K_INT64_MAX : a * b;
}

/* What the deterministic backward needs first of a RoI: its image (-1 when
 * it has no sample in the map), its pyramid level (multi_scale_roi_align; 0
 * otherwise) and the rows [y0, y1] and columns [x0, x1] its samples can
 * touch, so a grad_input item skips most RoIs with four compares. */
typedef struct vo_k_ra_box {
  int64_t batch, y0, y1, x0, x1;
  int level;
} vo_k_ra_box;

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/roi_align.inc"
#include "kernels/dtype_end.h"
#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/roi_align.inc"
#include "kernels/dtype_end.h"
#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "kernels/roi_align.inc"
#include "kernels/dtype_end.h"
#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "kernels/roi_align.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_ROI_ALIGN_H */
