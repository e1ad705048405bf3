/*
 * multi_scale_roi_align's per-element math in the portable dialect: the FPN
 * level of each RoI (torchvision's MultiScaleRoIAlign rule, used by the op
 * layer's check, the CPU kernels and the CUDA kernels alike), roi_align's
 * arguments on a level, and the CUDA kernels' per-level items built on
 * kernels/roi_align.h. Per-type bodies are kernels/multi_scale_roi_align.inc.
 */
#ifndef VISIONOPS_KERNELS_MULTI_SCALE_ROI_ALIGN_H
#define VISIONOPS_KERNELS_MULTI_SCALE_ROI_ALIGN_H

#include "kernels/roi_align.h"

/* Pyramid levels at most (visionops.h's VO_MAX_LIST; the CUDA glue checks
 * they agree). */
#define VO_K_MSRA_MAX_LEVELS 16

/* What the kernels need of a call, by value: the pyramid's levels (sizes,
 * scales, the features' strides), the level rule's constants and roi_align's
 * arguments. grad_stride: the backward's grad [K,C,PH,PW]. */
typedef struct vo_k_msra_args {
  int num_levels;
  int64_t first_level, canonical_scale, canonical_level;
  int64_t pooled_height, pooled_width, sampling_ratio;
  int aligned;
  int64_t batch_size, channels;
  int rois_dtype;
  int64_t rois_stride[2];
  int64_t grad_stride[4];
  int64_t height[VO_K_MSRA_MAX_LEVELS], width[VO_K_MSRA_MAX_LEVELS];
  vo_k_double_arg scale[VO_K_MSRA_MAX_LEVELS];
  int64_t feature_stride[VO_K_MSRA_MAX_LEVELS][4];
} vo_k_msra_args;

/* roi_align's arguments on level l: its scale and size, and the strides of
 * its features (forward) or of grad (backward). */
VO_KFN vo_k_roi_align_args vo_k_msra_level_args(const vo_k_msra_args *m, int l, int backward) {
  vo_k_roi_align_args a;
  a.spatial_scale = m->scale[l];
  a.pooled_height = m->pooled_height;
  a.pooled_width = m->pooled_width;
  a.sampling_ratio = m->sampling_ratio;
  a.aligned = m->aligned;
  a.batch_size = m->batch_size;
  a.channels = m->channels;
  a.height = m->height[l];
  a.width = m->width[l];
  a.rois_dtype = m->rois_dtype;
  a.rois_stride[0] = m->rois_stride[0];
  a.rois_stride[1] = m->rois_stride[1];
  for (int d = 0; d < 4; d++)
    a.src_stride[d] = backward ? m->grad_stride[d] : m->feature_stride[l][d];
  return a;
}

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/multi_scale_roi_align.inc"
#include "kernels/dtype_end.h"
#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/multi_scale_roi_align.inc"
#include "kernels/dtype_end.h"
#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "kernels/multi_scale_roi_align.inc"
#include "kernels/dtype_end.h"
#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "kernels/multi_scale_roi_align.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_MULTI_SCALE_ROI_ALIGN_H */
