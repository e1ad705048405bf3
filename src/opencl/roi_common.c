/*
 * Host glue shared by the OpenCL RoI ops (see opencl/roi_common.h).
 */
#include <stdio.h>

#include "opencl/device.h"
#include "opencl/roi_common.h"

vo_status vo_cl_roi_zero(const vo_cl_call *c, const vo_view *v) {
  const unsigned char zero = 0;
  if (v->numel == 0) return VO_OK;
  return vo_cl_fill(c, (cl_mem)v->data, v->byte_offset, &zero, 1,
                    (size_t)v->numel * vo_dtype_size(v->dtype));
}

cl_mem vo_cl_roi_try_workspace(const vo_exec *ex, uint64_t bytes) {
  const size_t limit = ex->ctx->workspace_limit;
  if (bytes > limit) return NULL;
  cl_mem m = vo_cl_workspace(ex, (size_t)bytes);
  if (!m) vo_clear_error(); /* the caller has a path without it */
  return m;
}

vo_status vo_cl_roi_convert(const vo_cl_call *c, const char *program, cl_mem acc, uint64_t acc_off,
                            const vo_view *out) {
  char name[48];
  snprintf(name, sizeof name, "vo_cl_roi_convert_%s", vo_cl_suffix(out->dtype));
  vo_cl_launch l;
  vo_status st = vo_cl_launch_begin(&l, c, program, name);
  if (st != VO_OK) return st;
  vo_cl_arg_mem(&l, acc, acc_off);
  vo_cl_arg_i64(&l, out->numel);
  vo_cl_arg_view(&l, out);
  return vo_cl_launch_run(&l, out->numel);
}

int vo_cl_roi_atomics(const vo_cl_call *c, vo_dtype d) {
  if (d != VO_F64) return 1;
  const vo_cl_device *dev = vo_cl_device_find(c->device);
  return dev && dev->int64_atomics;
}

vo_status vo_cl_roi_constants(const vo_cl_call *c, const void *host, size_t size, cl_mem *out) {
  cl_int err = CL_SUCCESS;
  *out = vo_cl.CreateBuffer(c->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, size, (void *)host,
                            &err);
  return vo_cl_check(c->ex, err, "creation of an argument buffer");
}
