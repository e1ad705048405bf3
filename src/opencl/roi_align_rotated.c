/*
 * OpenCL roi_align_rotated and roi_align_rotated_backward: roi_align's
 * launches (opencl/roi_align.c, vo_cl_ra_forward / vo_cl_ra_backward) over
 * the program opencl/roi_align_rotated.cl.
 */
#include <string.h>

#include "core/roi_align_args.h"
#include "kernels/roi_align_rotated.h"
#include "opencl/roi_common.h"

static vo_k_roi_align_rotated_args vo_cl_rar_args(const vo_exec *ex, const vo_view *src) {
  vo_k_roi_align_rotated_args a;
  memset(&a, 0, sizeof a);
  a.base = vo_roi_align_kernel_args(&ex->p.roi_align_rotated.base, src);
  a.angle_scale = ex->p.roi_align_rotated.angle_scale;
  return a;
}

vo_status vo_opencl_roi_align_rotated(const vo_exec *ex) {
  const vo_roi_align_params *p = &ex->p.roi_align_rotated.base;
  const vo_k_roi_align_rotated_args a = vo_cl_rar_args(ex, p->input);
  const vo_cl_ra_kernels k = {"roi_align_rotated", &a, sizeof a, p};
  return vo_cl_ra_forward(ex, &k);
}

vo_status vo_opencl_roi_align_rotated_backward(const vo_exec *ex) {
  const vo_roi_align_params *p = &ex->p.roi_align_rotated.base;
  const vo_k_roi_align_rotated_args a = vo_cl_rar_args(ex, p->grad);
  const vo_cl_ra_kernels k = {"roi_align_rotated", &a, sizeof a, p};
  return vo_cl_ra_backward(ex, &k);
}
