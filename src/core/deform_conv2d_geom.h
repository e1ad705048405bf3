/*
 * The portable deform_conv2d math's view of a call (kernels/deform_conv2d.h's
 * vo_k_dcn_geom) made from its params, for the CPU and CUDA backends alike.
 */
#ifndef VISIONOPS_DEFORM_CONV2D_GEOM_H
#define VISIONOPS_DEFORM_CONV2D_GEOM_H

#include <string.h>

#include "core/internal.h"
#include "kernels/deform_conv2d.h"

/* The 4-D strides of v (zeros without v). */
static inline void vo_dcn_strides_of(const vo_view *v, int64_t *stride) {
  for (int d = 0; d < 4; d++) stride[d] = v ? v->stride[d] : 0;
}

/* Sizes and strides of the call; the tile (n, p0, len) starts empty. */
static inline vo_k_dcn_geom vo_dcn_geom_of(const vo_deform_conv2d_params *p) {
  vo_k_dcn_geom a;
  memset(&a, 0, sizeof a);
  a.batch = p->batch;
  a.in_channels = p->in_channels;
  a.height = p->height;
  a.width = p->width;
  a.out_channels = p->out_channels;
  a.kernel_h = p->kernel_h;
  a.kernel_w = p->kernel_w;
  a.out_h = p->out_h;
  a.out_w = p->out_w;
  a.stride_h = p->stride_h;
  a.stride_w = p->stride_w;
  a.pad_h = p->pad_h;
  a.pad_w = p->pad_w;
  a.dilation_h = p->dilation_h;
  a.dilation_w = p->dilation_w;
  a.groups = p->groups;
  a.offset_groups = p->offset_groups;
  vo_dcn_strides_of(p->input, a.in_stride);
  vo_dcn_strides_of(p->weight, a.weight_stride);
  vo_dcn_strides_of(p->offset, a.offset_stride);
  vo_dcn_strides_of(p->mask, a.mask_stride);
  vo_dcn_strides_of(p->grad, a.grad_stride);
  a.bias_stride = p->bias ? p->bias->stride[0] : 0;
  a.has_mask = p->mask != NULL;
  a.has_bias = p->bias != NULL;
  return a;
}

#endif /* VISIONOPS_DEFORM_CONV2D_GEOM_H */
