/*
 * The OpenCL host glue every NMS op shares (opencl/nms.c): the kernels of
 * nms.clh queued in order, with a box kind's gather and mask kernels from
 * its own program.
 */
#ifndef VISIONOPS_OPENCL_NMS_H
#define VISIONOPS_OPENCL_NMS_H

#include "opencl/common.h"

typedef struct vo_cl_nms_kind {
  const char *program; /* "nms" (src/opencl/nms.cl), "nms_rotated" */
  /* The kernels <prefix>_gather_<f32|f64> and <prefix>_mask_<f32|f64>. */
  const char *prefix;
  /* Bytes of a sorted box, at least the device's: [0] float, [1] double. */
  size_t box_bytes[2];
  /* The gather kernel takes ex->p.nms.angle_scale (a vo_k_double_arg) last. */
  int angle_scale;
} vo_cl_nms_kind;

/* nms or nms_rotated (ex->p.nms) with the kernels of `kind`. */
vo_status vo_opencl_nms_run(const vo_exec *ex, const vo_cl_nms_kind *kind);

#endif /* VISIONOPS_OPENCL_NMS_H */
