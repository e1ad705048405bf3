/*
 * roi_pool in the portable kernel dialect (kernels/compat.h), written once
 * for the CPU's plain path and the device kernels: torchvision's arithmetic
 * (corners rounded in the compute type, "+1" sizes, bins by floor/ceil,
 * kernels/rounded_bins.h), the maximum and argmax of one bin, and the
 * backward's per-element work (argmax scatter; the gather of one
 * grad_input element in (RoI, ph, pw) order, for deterministic devices).
 * Per storage type: functions suffixed _f32, _f64, _f16, _bf16 (storage
 * pointers float, double, uint16_t); per compute type: _f32, _f64.
 */
#ifndef VISIONOPS_KERNELS_ROI_POOL_H
#define VISIONOPS_KERNELS_ROI_POOL_H

#include "kernels/compat.h"
#include "kernels/rounded_bins.h"

/* Scaled, rounded RoI corners are kept within +-2^61, so sizes (+1) and bin
 * edges (+ start) stay far from int64 overflow; torchvision converts them to
 * int, which is undefined beyond 2^31. */
#define VO_K_ROI_POOL_COORD_LIMIT ((int64_t)1 << 61)

/* A call's sizes and layouts (elements). src is the input [N,C,H,W] in the
 * forward and grad [K,C,PH,PW] in the backward; argmax [K,C,PH,PW] int32
 * (backward only). The forward's outputs are contiguous [K,C,PH,PW]. */
typedef struct vo_k_roi_pool_args {
  vo_k_double_arg spatial_scale;
  int64_t pooled_height, pooled_width;
  int64_t batch_size, channels, height, width;
  int rois_dtype;
  int64_t rois_stride[2];
  int64_t src_stride[4];
  int64_t argmax_stride[4];
} vo_k_roi_pool_args;

/* The args from a call's sizes and strides (argmax_stride NULL in the
 * forward); what each backend's glue fills from its parameters. */
VO_KFN vo_k_roi_pool_args vo_k_roi_pool_args_of(
    vo_k_double_arg spatial_scale, int64_t pooled_height, int64_t pooled_width, int64_t batch_size,
    int64_t channels, int64_t height, int64_t width, int rois_dtype, const int64_t *rois_stride,
    const int64_t *src_stride, const int64_t *argmax_stride) {
  vo_k_roi_pool_args a;
  a.spatial_scale = spatial_scale;
  a.pooled_height = pooled_height;
  a.pooled_width = pooled_width;
  a.batch_size = batch_size;
  a.channels = channels;
  a.height = height;
  a.width = width;
  a.rois_dtype = rois_dtype;
  a.rois_stride[0] = rois_stride[0];
  a.rois_stride[1] = rois_stride[1];
  for (int d = 0; d < 4; d++) {
    a.src_stride[d] = src_stride[d];
    a.argmax_stride[d] = argmax_stride ? argmax_stride[d] : 0;
  }
  return a;
}

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/roi_pool.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/roi_pool.inc"
#include "kernels/dtype_end.h"

#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "kernels/roi_pool.inc"
#include "kernels/dtype_end.h"

#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "kernels/roi_pool.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_ROI_POOL_H */
