/*
 * OpenCL nms_rotated and batched_nms_rotated: nms's device-side pass
 * (opencl/nms.h) over the kernels of opencl/nms_rotated.cl. On a device
 * without fp64 the boxes' cos and sin come from the host (below); elsewhere
 * nothing is read back.
 */
#include <stdlib.h>

#include "kernels/nms_rotated.h"
#include "opencl/nms.h"

/* The gather kernel's angle scale, and the cos / sin buffer or NULL. */
static void vo_cl_nms_rotated_gather_args(vo_cl_launch *l, const vo_exec *ex,
                                          const void *gather_arg) {
  vo_cl_arg(l, &ex->p.nms.angle_scale, sizeof ex->p.nms.angle_scale);
  vo_cl_arg_mem(l, *(const cl_mem *)gather_arg, 0);
}

/*
 * On a device without fp64, theta = angle * scale and its cos and sin would
 * be computed in float, ulps away from the CPU's (in double, then rounded),
 * and a box whose IoU with a kept one lies that close to the threshold would
 * be decided otherwise. So the host computes them, with the CPU's own
 * vo_k_rbox_make, into a [N, 2] float buffer for the gather: one blocking
 * copy of the boxes, which the value checks make on such a device anyway
 * (opencl/backend.c).
 */
static vo_status vo_cl_nms_rotated_cos_sin(const vo_cl_call *c, const vo_exec *ex, cl_mem *out) {
  const vo_view *b = ex->p.nms.boxes;
  const int64_t n = b->shape[0];
  void *copy;
  const void *first;
  vo_status st = vo_cl_read_to_host(c, b, &copy, &first);
  if (st != VO_OK) return st;
  const size_t bytes = (size_t)n * 2 * sizeof(float);
  float *cs = malloc(bytes);
  if (!cs) {
    free(copy);
    return vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: out of host memory (%zu bytes)", ex->op_name,
                   bytes);
  }
  for (int64_t i = 0; i < n; i++) {
    const float a =
        (float)vo_k_load_as_double(first, (int)b->dtype, i * b->stride[0] + 4 * b->stride[1]);
    const vo_k_rbox_f32 r = vo_k_rbox_make_f32(0, 0, 0, 0, a, ex->p.nms.angle_scale);
    cs[2 * i] = r.c, cs[2 * i + 1] = r.s;
  }
  free(copy);
  *out = vo_cl_workspace(ex, bytes);
  if (!*out) st = VO_ERROR_OUT_OF_MEMORY;
  if (st == VO_OK)
    st = vo_cl_check(ex,
                     vo_cl.EnqueueWriteBuffer(c->queue, *out, CL_TRUE, 0, bytes, cs, 0, NULL, NULL),
                     "write of the boxes' cos and sin");
  free(cs);
  return st;
}

/* A sorted box is a vo_k_nms_rbox (on a device without fp64 its reach is a
 * float, so the host's struct is at least as large). */
vo_status vo_opencl_nms_rotated(const vo_exec *ex) {
  static const vo_cl_nms_kind kind = {
      .program = "nms_rotated",
      .prefix = "vo_cl_nms_rotated",
      .box_bytes = {sizeof(vo_k_nms_rbox_f32), sizeof(vo_k_nms_rbox_f64)},
      .gather_args = vo_cl_nms_rotated_gather_args};
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK) return st;
  cl_mem cos_sin = NULL;
  if (!c.fp64 && ex->p.nms.boxes->shape[0] > 0 &&
      (st = vo_cl_nms_rotated_cos_sin(&c, ex, &cos_sin)) != VO_OK) {
    if (cos_sin) vo_workspace_free(ex->ctx, ex->device, cos_sin);
    return st;
  }
  st = vo_opencl_nms_run(ex, &kind, &cos_sin);
  if (cos_sin) vo_workspace_free(ex->ctx, ex->device, cos_sin);
  return st;
}
