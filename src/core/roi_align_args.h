/*
 * The portable kernel arguments (kernels/roi_align.h,
 * kernels/multi_scale_roi_align.h) of a roi_align-family call, as every
 * backend's glue passes them to the work items.
 */
#ifndef VISIONOPS_CORE_ROI_ALIGN_ARGS_H
#define VISIONOPS_CORE_ROI_ALIGN_ARGS_H

#include <string.h>

#include "core/internal.h"
#include "kernels/multi_scale_roi_align.h"

/* roi_align's (and ps_roi_align's base); src is the tensor the items read:
 * input (forward), grad (backward), or NULL. */
static inline vo_k_roi_align_args vo_roi_align_kernel_args(const vo_roi_align_params *p,
                                                           const vo_view *src) {
  vo_k_roi_align_args a;
  memset(&a, 0, sizeof a);
  a.spatial_scale = p->spatial_scale;
  a.pooled_height = p->pooled_height;
  a.pooled_width = p->pooled_width;
  a.sampling_ratio = p->sampling_ratio;
  a.aligned = p->aligned;
  a.batch_size = p->batch_size;
  a.channels = p->channels;
  a.height = p->height;
  a.width = p->width;
  a.rois_dtype = (int)p->rois->dtype;
  a.rois_stride[0] = p->rois->stride[0];
  a.rois_stride[1] = p->rois->stride[1];
  for (int d = 0; d < 4 && src; d++) a.src_stride[d] = src->stride[d];
  return a;
}

/* multi_scale_roi_align's: the pyramid's levels and the level rule. */
static inline vo_k_msra_args vo_msra_kernel_args(const vo_multi_scale_roi_align_params *p) {
  vo_k_msra_args m;
  memset(&m, 0, sizeof m);
  m.num_levels = p->num_levels;
  m.first_level = p->first_level;
  m.canonical_scale = p->canonical_scale;
  m.canonical_level = p->canonical_level;
  m.pooled_height = p->pooled_height;
  m.pooled_width = p->pooled_width;
  m.sampling_ratio = p->sampling_ratio;
  m.aligned = p->aligned;
  m.batch_size = p->features[0].shape[0];
  m.channels = p->features[0].shape[1];
  m.rois_dtype = (int)p->rois->dtype;
  m.rois_stride[0] = p->rois->stride[0];
  m.rois_stride[1] = p->rois->stride[1];
  for (int d = 0; d < 4 && p->grad; d++) m.grad_stride[d] = p->grad->stride[d];
  for (int l = 0; l < p->num_levels && l < VO_K_MSRA_MAX_LEVELS; l++) {
    const vo_view *f = &p->features[l];
    m.height[l] = f->shape[2];
    m.width[l] = f->shape[3];
    m.scale[l] = p->scales[l];
    for (int d = 0; d < 4; d++) m.feature_stride[l][d] = f->stride[d];
  }
  return m;
}

#endif /* VISIONOPS_CORE_ROI_ALIGN_ARGS_H */
