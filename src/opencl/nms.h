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
  /* Appends the gather kernel's own arguments (after the common ones) from
   * gather_arg; NULL when it has none. */
  void (*gather_args)(vo_cl_launch *l, const vo_exec *ex, const void *gather_arg);
} vo_cl_nms_kind;

/* nms or nms_rotated (ex->p.nms) with the kernels of `kind`. */
vo_status vo_opencl_nms_run(const vo_exec *ex, const vo_cl_nms_kind *kind, const void *gather_arg);

#endif /* VISIONOPS_OPENCL_NMS_H */
