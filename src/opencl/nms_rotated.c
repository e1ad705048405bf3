/*
 * OpenCL nms_rotated and batched_nms_rotated: nms's device-side pass
 * (opencl/nms.h) over the kernels of opencl/nms_rotated.cl.
 */
#include "kernels/nms_rotated.h"
#include "opencl/nms.h"

/* A sorted box is a vo_k_nms_rbox (on a device without fp64 its reach is a
 * float, so the host's struct is at least as large). */
vo_status vo_opencl_nms_rotated(const vo_exec *ex) {
  static const vo_cl_nms_kind kind = {
      .program = "nms_rotated",
      .prefix = "vo_cl_nms_rotated",
      .box_bytes = {sizeof(vo_k_nms_rbox_f32), sizeof(vo_k_nms_rbox_f64)},
      .angle_scale = 1};
  return vo_opencl_nms_run(ex, &kind);
}
