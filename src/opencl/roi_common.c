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

/* Byte offsets of each output's float32 [N,cc,H,W] accumulator in one
 * workspace, 128-byte aligned between outputs; returns the block's size. */
static uint64_t vo_cl_roi_acc_offsets(const vo_view *outs, int num_outs, int64_t cc,
                                      uint64_t *off) {
  uint64_t end = 0;
  for (int l = 0; l < num_outs; l++) {
    off[l] = (end + 127) & ~(uint64_t)127;
    end = off[l] + (uint64_t)(outs[l].numel / outs[l].shape[1] * cc) * sizeof(float);
  }
  return end;
}

vo_status vo_cl_roi_half_scatter(const vo_cl_call *c, const char *program, const vo_view *outs,
                                 int num_outs, int64_t granule, vo_cl_roi_scatter_fn scatter,
                                 const void *user, int *done) {
  const vo_exec *ex = c->ex;
  const int64_t images = outs[0].shape[0], channels = outs[0].shape[1];
  /* a channel's float32 bytes in every output, and the alignment between them */
  uint64_t per_channel = 0, off[VO_MAX_LIST];
  for (int l = 0; l < num_outs; l++)
    per_channel += (uint64_t)(outs[l].numel / channels) * sizeof(float);
  const uint64_t limit = ex->ctx->workspace_limit, slack = 128 * (uint64_t)(num_outs - 1);
  const uint64_t fit = per_channel == 0 ? (uint64_t)channels
                       : limit > slack  ? (limit - slack) / per_channel
                                        : 0;
  const int64_t chunk = fit < (uint64_t)channels ? (int64_t)fit / granule * granule : channels;
  *done = 0;
  if (chunk == 0) return VO_OK;
  /* (at most chunk * per_channel + slack <= limit bytes) */
  cl_mem acc = vo_cl_roi_try_workspace(ex, vo_cl_roi_acc_offsets(outs, num_outs, chunk, off));
  if (!acc) return VO_OK;
  const float zero = 0;
  const size_t es = vo_dtype_size(outs[0].dtype);
  vo_status st = VO_OK;
  for (int64_t c0 = 0; c0 < channels && st == VO_OK; c0 += chunk) {
    const int64_t cc = channels - c0 < chunk ? channels - c0 : chunk;
    const uint64_t bytes = vo_cl_roi_acc_offsets(outs, num_outs, cc, off);
    st = vo_cl_fill(c, acc, 0, &zero, sizeof zero, (size_t)bytes);
    if (st == VO_OK) st = scatter(c, user, c0, cc, acc, off);
    for (int l = 0; l < num_outs && st == VO_OK; l++) {
      /* one pass when the accumulator is the output's layout, else this
       * chunk's planes of each image */
      const int64_t plane = outs[l].shape[2] * outs[l].shape[3];
      const int64_t runs = cc == channels ? 1 : images;
      for (int64_t n = 0; n < runs && st == VO_OK && plane > 0; n++) {
        vo_view part = outs[l];
        part.byte_offset += (uint64_t)((n * channels + c0) * plane) * es;
        part.numel = cc == channels ? outs[l].numel : cc * plane;
        st = vo_cl_roi_convert(c, program, acc, off[l] + (uint64_t)(n * cc * plane) * sizeof(float),
                               &part);
      }
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
