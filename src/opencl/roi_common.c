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

vo_view vo_cl_roi_channels(const vo_view *v, int64_t c0, int64_t cc) {
  vo_view s = *v;
  s.byte_offset += (uint64_t)(c0 * v->stride[1]) * vo_dtype_size(v->dtype);
  s.shape[1] = cc;
  s.numel = v->shape[1] ? v->numel / v->shape[1] * cc : 0;
  return s;
}

vo_status vo_cl_roi_half_scatter(const vo_cl_call *c, const char *program, const vo_view *out,
                                 int64_t granule, vo_cl_roi_scatter_fn scatter, const void *user,
                                 int *done) {
  const vo_exec *ex = c->ex;
  const int64_t images = out->shape[0], channels = out->shape[1];
  const int64_t plane = out->shape[2] * out->shape[3];
  const uint64_t per_channel = (uint64_t)(images * plane) * sizeof(float);
  *done = 0;
  const uint64_t fit = ex->ctx->workspace_limit / per_channel; /* (out has elements) */
  const int64_t chunk = fit < (uint64_t)channels ? (int64_t)fit / granule * granule : channels;
  if (chunk == 0) return VO_OK;
  cl_mem acc = vo_cl_roi_try_workspace(ex, per_channel * (uint64_t)chunk);
  if (!acc) return VO_OK;
  const float zero = 0;
  const size_t es = vo_dtype_size(out->dtype);
  vo_status st = VO_OK;
  for (int64_t c0 = 0; c0 < channels && st == VO_OK; c0 += chunk) {
    const int64_t cc = channels - c0 < chunk ? channels - c0 : chunk;
    st = vo_cl_fill(c, acc, 0, &zero, sizeof zero, (size_t)(per_channel * (uint64_t)cc));
    if (st == VO_OK) st = scatter(c, user, c0, cc, acc);
    if (cc == channels) { /* one pass: the accumulator is out's layout */
      if (st == VO_OK) st = vo_cl_roi_convert(c, program, acc, 0, out);
      break;
    }
    for (int64_t n = 0; n < images && st == VO_OK; n++) { /* this chunk's planes of image n */
      vo_view part = *out;
      part.byte_offset += (uint64_t)((n * channels + c0) * plane) * es;
      part.numel = cc * plane;
      st = vo_cl_roi_convert(c, program, acc, (uint64_t)(n * cc * plane) * sizeof(float), &part);
    }
  }
  vo_workspace_free(ex->ctx, ex->device, acc);
  if (st == VO_OK) *done = 1;
  return st;
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
