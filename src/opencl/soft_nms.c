/*
 * OpenCL soft_nms and batched_soft_nms (vo_soft_nms_params), the host glue
 * of opencl/soft_nms.cl, whose entry points run kernels/soft_nms.h's work
 * items: the (category, index) records and, batched, their stable sort by
 * category (merge passes), the gather into the compute type, a work group
 * per category run, then (batched) the kept boxes' order by score and the
 * rows. Everything stays on the device; nothing is read back.
 */
#include "core/soft_nms_args.h"
#include "opencl/common.h"

/* Sorts the records at *at (the other pair array as the spare) by key,
 * stably; *at is where they end. */
static vo_status vo_cl_snms_sort(const vo_cl_call *c, const vo_k_snms_args *a, cl_mem ws,
                                 uint64_t *at) {
  uint64_t src = *at, dst = src == a->pairs_at ? a->spare_at : a->pairs_at;
  for (int64_t width = 1; width < a->n; width *= 2) {
    vo_cl_launch l;
    vo_status st =
        vo_cl_launch_begin_with(&l, c, "soft_nms", "vo_cl_snms_sort_pass", NULL, a, sizeof *a);
    if (st != VO_OK) return st;
    vo_cl_arg_mem(&l, ws, 0);
    vo_cl_arg_i64(&l, (int64_t)src);
    vo_cl_arg_i64(&l, (int64_t)dst);
    vo_cl_arg_i64(&l, width);
    if ((st = vo_cl_launch_run(&l, a->n)) != VO_OK) return st;
    const uint64_t t = src;
    src = dst;
    dst = t;
  }
  *at = src;
  return VO_OK;
}

/* A kernel of (args, ws, sorted_at) over `items`. */
static vo_status vo_cl_snms_ws_kernel(const vo_cl_call *c, const vo_k_snms_args *a, cl_mem ws,
                                      const char *name, const char *sfx, uint64_t sorted_at,
                                      int64_t items) {
  vo_cl_launch l;
  vo_status st = vo_cl_launch_begin_with(&l, c, "soft_nms", name, sfx, a, sizeof *a);
  if (st != VO_OK) return st;
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_i64(&l, (int64_t)sorted_at);
  return vo_cl_launch_run(&l, items);
}

static vo_status vo_cl_snms_steps(const vo_cl_call *c, const vo_soft_nms_params *p,
                                  const vo_k_snms_args *a, const char *sfx, cl_mem ws) {
  vo_cl_launch l;
  vo_status st = vo_cl_launch_begin_with(&l, c, "soft_nms", "vo_cl_snms_pair", NULL, a, sizeof *a);
  if (st != VO_OK) return st;
  vo_cl_arg_view(&l, p->idxs);
  vo_cl_arg_mem(&l, ws, 0);
  if ((st = vo_cl_launch_run(&l, a->n)) != VO_OK) return st;
  uint64_t sorted_at = a->pairs_at;
  if (a->batched && (st = vo_cl_snms_sort(c, a, ws, &sorted_at)) != VO_OK) return st;
  if ((st = vo_cl_launch_begin_with(&l, c, "soft_nms", "vo_cl_snms_gather", sfx, a, sizeof *a)) !=
      VO_OK)
    return st;
  vo_cl_arg_view(&l, p->boxes);
  vo_cl_arg_view(&l, p->scores);
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_i64(&l, (int64_t)sorted_at);
  if ((st = vo_cl_launch_run(&l, a->n)) != VO_OK) return st;
  /* a group per slot (256 items a group where the device allows) */
  st = vo_cl_snms_ws_kernel(c, a, ws, "vo_cl_snms_run", sfx, sorted_at, a->n * 256);
  if (st != VO_OK) return st;
  if (a->batched) {
    const int64_t none = -1;
    st = vo_cl_fill(c, ws, a->pos_at, &none, sizeof none, (size_t)a->n * sizeof(int64_t));
    if (st == VO_OK) st = vo_cl_snms_ws_kernel(c, a, ws, "vo_cl_snms_mark", sfx, sorted_at, a->n);
    if (st != VO_OK) return st;
    if ((st = vo_cl_launch_begin_with(&l, c, "soft_nms", "vo_cl_snms_rank_key", sfx, a,
                                      sizeof *a)) != VO_OK)
      return st;
    vo_cl_arg_mem(&l, ws, 0);
    if ((st = vo_cl_launch_run(&l, a->n)) != VO_OK) return st;
    sorted_at = a->pairs_at;
    if ((st = vo_cl_snms_sort(c, a, ws, &sorted_at)) != VO_OK) return st;
  }
  if ((st = vo_cl_launch_begin_with(&l, c, "soft_nms", "vo_cl_snms_row", sfx, a, sizeof *a)) !=
      VO_OK)
    return st;
  vo_cl_arg_view(&l, p->boxes);
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_i64(&l, (int64_t)sorted_at);
  vo_cl_arg_view(&l, p->dets);
  vo_cl_arg_view(&l, p->keep);
  if ((st = vo_cl_launch_run(&l, a->n)) != VO_OK) return st;
  if ((st = vo_cl_launch_begin_with(&l, c, "soft_nms", "vo_cl_snms_num", NULL, a, sizeof *a)) !=
      VO_OK)
    return st;
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_i64(&l, (int64_t)sorted_at);
  vo_cl_arg_view(&l, p->num_kept);
  return vo_cl_launch_run(&l, 1);
}

vo_status vo_opencl_soft_nms(const vo_exec *ex) {
  const vo_soft_nms_params *p = &ex->p.soft_nms;
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK) return st;
  const vo_k_snms_args a = vo_soft_nms_kernel_args(ex);
  if (a.n == 0) {
    const int64_t zero = 0;
    return vo_cl_fill(&c, (cl_mem)p->num_kept->data, p->num_kept->byte_offset, &zero, sizeof zero,
                      sizeof zero);
  }
  cl_mem ws = vo_cl_workspace(ex, a.total);
  if (!ws) return VO_ERROR_OUT_OF_MEMORY;
  st = vo_cl_snms_steps(&c, p, &a, ex->dtype == VO_F64 ? "f64" : "f32", ws);
  vo_workspace_free(ex->ctx, ex->device, ws);
  return st;
}
