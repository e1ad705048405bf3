/*
 * ps_roi_pool in the portable kernel dialect (kernels/compat.h), written
 * once for the CPU's plain path and the device kernels: rounded RoIs
 * without roi_pool's "+1" (kernels/rounded_bins.h), bins clamped as
 * torchvision's forward clamps them (rows [0, H-1], columns [0, W-1]), the
 * mean of one bin, and the backward's per-element work: one grad element's
 * mean spread over its bin (the forward's bins, so the true gradient of
 * the forward), and the gather of one grad_input element in RoI order for
 * deterministic devices. Output [K, C_out, PH, PW] element o = k*C + c_in
 * reads input channel c_in (its channel_mapping entry). Per storage type:
 * functions suffixed _f32, _f64, _f16, _bf16; per compute type: _f32, _f64.
 */
#ifndef VISIONOPS_KERNELS_PS_ROI_POOL_H
#define VISIONOPS_KERNELS_PS_ROI_POOL_H

#include "kernels/compat.h"
#include "kernels/rounded_bins.h"

/* Rounded RoI coordinates are kept within +-2^52 so the integer
 * conversions are defined for any finite input; every bin is clamped into
 * the map afterwards, so this never changes a bin that overlaps it unless a
 * coordinate is absurdly large. */
#define VO_K_PS_ROI_POOL_COORD_LIMIT ((int64_t)1 << 52)

/* A call's sizes and layouts (elements). channels = C_out * PH * PW; src is
 * the input [N,C,H,W] in the forward and grad [K,C_out,PH,PW] in the
 * backward. */
typedef struct vo_k_ps_roi_pool_args {
  vo_k_double_arg spatial_scale;
  int64_t num_rois, batch_size, channels, height, width;
  int64_t pooled_height, pooled_width, channels_out;
  int rois_dtype;
  int64_t rois_stride[2];
  int64_t src_stride[4];
} vo_k_ps_roi_pool_args;

/* The args from a call's sizes and strides; what each backend's glue fills
 * from its parameters. */
VO_KFN vo_k_ps_roi_pool_args vo_k_ps_roi_pool_args_of(
    vo_k_double_arg spatial_scale, int64_t num_rois, int64_t batch_size, int64_t channels,
    int64_t height, int64_t width, int64_t pooled_height, int64_t pooled_width,
    int64_t channels_out, int rois_dtype, const int64_t *rois_stride, const int64_t *src_stride) {
  vo_k_ps_roi_pool_args a;
  a.spatial_scale = spatial_scale;
  a.num_rois = num_rois;
  a.batch_size = batch_size;
  a.channels = channels;
  a.height = height;
  a.width = width;
  a.pooled_height = pooled_height;
  a.pooled_width = pooled_width;
  a.channels_out = channels_out;
  a.rois_dtype = rois_dtype;
  a.rois_stride[0] = rois_stride[0];
  a.rois_stride[1] = rois_stride[1];
  for (int d = 0; d < 4; d++) a.src_stride[d] = src_stride[d];
  return a;
}

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/ps_roi_pool.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/ps_roi_pool.inc"
#include "kernels/dtype_end.h"

#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "kernels/ps_roi_pool.inc"
#include "kernels/dtype_end.h"

#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "kernels/ps_roi_pool.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_PS_ROI_POOL_H */
