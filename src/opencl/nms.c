/*
 * OpenCL NMS (opencl/nms.h) for every box kind, and nms and batched_nms,
 * the host glue of opencl/nms.cl. Everything stays on the device: the host
 * only queues kernels (rank, the kind's gather, then per chunk of rows the
 * kind's mask and the greedy resolve, then the finish) and reads nothing
 * back. The mask is quadratic; it is built in chunks of rows sized to the
 * context's workspace limit (beyond the state held), at least 64 rows, so
 * any N that fits in memory works.
 */
#include <stdio.h>

#include "opencl/nms.h"

static size_t vo_cl_align(size_t n) { return (n + 127) & ~(size_t)127; }

vo_status vo_opencl_nms_run(const vo_exec *ex, const vo_cl_nms_kind *kind, const void *gather_arg) {
  const vo_nms_params *p = &ex->p.nms;
  const int64_t n = p->boxes->shape[0];
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK) return st;
  if (n == 0) {
    const int64_t zero = 0;
    return vo_cl_fill(&c, (cl_mem)p->num_kept->data, p->num_kept->byte_offset, &zero, sizeof zero,
                      sizeof zero);
  }
  const int f64 = ex->dtype == VO_F64, batched = p->idxs != NULL;
  const size_t un = (size_t)n;
  const int64_t col_blocks = (n + 63) / 64;
  /* Workspace: sorted boxes, order, sorted categories, removed bits, count. */
  const size_t order_at = vo_cl_align(un * kind->box_bytes[f64]);
  const size_t sidx_at = order_at + vo_cl_align(un * sizeof(int64_t));
  const size_t removed_at = sidx_at + (batched ? vo_cl_align(un * sizeof(int64_t)) : 0);
  const size_t count_at = removed_at + (size_t)col_blocks * sizeof(uint64_t);
  const size_t total = count_at + sizeof(int64_t);
  const size_t limit = ex->ctx->workspace_limit;
  const size_t budget = limit > total ? limit - total : 0;
  const size_t row_bytes = (size_t)col_blocks * sizeof(uint64_t);
  int64_t chunk = (int64_t)(budget / row_bytes) / 64 * 64;
  if (chunk < 64) chunk = 64;
  if (chunk > n) chunk = n;

  cl_mem ws = vo_cl_workspace(ex, total);
  if (!ws) return VO_ERROR_OUT_OF_MEMORY;
  cl_mem mask = vo_cl_workspace(ex, (size_t)chunk * row_bytes);
  if (!mask) {
    vo_workspace_free(ex->ctx, ex->device, ws);
    return VO_ERROR_OUT_OF_MEMORY;
  }
  const unsigned char zero = 0;
  st = vo_cl_fill(&c, ws, removed_at, &zero, 1, total - removed_at);
  const char *sfx = f64 ? "f64" : "f32";
  char name[48];
  vo_cl_launch l;
  if (st == VO_OK && (st = vo_cl_launch_begin(&l, &c, kind->program, "vo_cl_nms_rank")) == VO_OK) {
    const int s_dtype = (int)p->scores->dtype;
    vo_cl_arg_view(&l, p->scores);
    vo_cl_arg(&l, &s_dtype, sizeof s_dtype);
    vo_cl_arg_i64(&l, p->scores->stride[0]);
    vo_cl_arg_view(&l, p->idxs);
    vo_cl_arg_i64(&l, batched ? p->idxs->stride[0] : 0);
    vo_cl_arg_i64(&l, n);
    vo_cl_arg_mem(&l, ws, 0);
    vo_cl_arg_i64(&l, (int64_t)order_at);
    vo_cl_arg_i64(&l, (int64_t)sidx_at);
    st = vo_cl_launch_run(&l, n);
  }
  snprintf(name, sizeof name, "%s_gather_%s", kind->prefix, sfx);
  if (st == VO_OK && (st = vo_cl_launch_begin(&l, &c, kind->program, name)) == VO_OK) {
    const int b_dtype = (int)p->boxes->dtype;
    vo_cl_arg_view(&l, p->boxes);
    vo_cl_arg(&l, &b_dtype, sizeof b_dtype);
    vo_cl_arg_i64(&l, p->boxes->stride[0]);
    vo_cl_arg_i64(&l, p->boxes->stride[1]);
    vo_cl_arg_i64(&l, n);
    vo_cl_arg_mem(&l, ws, 0);
    vo_cl_arg_i64(&l, (int64_t)order_at);
    if (kind->gather_args) kind->gather_args(&l, ex, gather_arg);
    st = vo_cl_launch_run(&l, n);
  }
  for (int64_t r0 = 0; st == VO_OK && r0 < n; r0 += chunk) {
    const int64_t r1 = r0 + chunk < n ? r0 + chunk : n;
    snprintf(name, sizeof name, "%s_mask_%s", kind->prefix, sfx);
    if ((st = vo_cl_launch_begin(&l, &c, kind->program, name)) != VO_OK) break;
    vo_cl_arg_mem(&l, ws, 0);
    vo_cl_arg_i64(&l, (int64_t)sidx_at);
    vo_cl_arg(&l, &batched, sizeof batched);
    vo_cl_arg_i64(&l, n);
    if (f64)
      vo_cl_arg_f64(&l, p->iou_threshold);
    else
      vo_cl_arg_f32(&l, p->iou_threshold_f32);
    vo_cl_arg_i64(&l, col_blocks);
    vo_cl_arg_i64(&l, r0);
    vo_cl_arg_i64(&l, r1);
    vo_cl_arg_mem(&l, mask, 0);
    if ((st = vo_cl_launch_run(&l, (r1 - r0) * col_blocks)) != VO_OK) break;
    if ((st = vo_cl_launch_begin(&l, &c, kind->program, "vo_cl_nms_resolve")) != VO_OK) break;
    vo_cl_arg_mem(&l, ws, 0);
    vo_cl_arg_i64(&l, (int64_t)order_at);
    vo_cl_arg_i64(&l, (int64_t)removed_at);
    vo_cl_arg_i64(&l, n);
    vo_cl_arg_i64(&l, col_blocks);
    vo_cl_arg_i64(&l, r0);
    vo_cl_arg_i64(&l, r1);
    vo_cl_arg_mem(&l, mask, 0);
    vo_cl_arg_view(&l, p->keep);
    st = vo_cl_launch_run(&l, 1);
  }
  if (st == VO_OK &&
      (st = vo_cl_launch_begin(&l, &c, kind->program, "vo_cl_nms_finish")) == VO_OK) {
    vo_cl_arg_mem(&l, ws, 0);
    vo_cl_arg_i64(&l, (int64_t)count_at);
    vo_cl_arg_i64(&l, n);
    vo_cl_arg_view(&l, p->keep);
    vo_cl_arg_view(&l, p->num_kept);
    st = vo_cl_launch_run(&l, n);
  }
  vo_workspace_free(ex->ctx, ex->device, mask);
  vo_workspace_free(ex->ctx, ex->device, ws);
  return st;
}

/* nms's boxes: four values of the compute type, as loaded. */
vo_status vo_opencl_nms(const vo_exec *ex) {
  static const vo_cl_nms_kind kind = {.program = "nms",
                                      .prefix = "vo_cl_nms",
                                      .box_bytes = {4 * sizeof(float), 4 * sizeof(double)}};
  return vo_opencl_nms_run(ex, &kind, NULL);
}
