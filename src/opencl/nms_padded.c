/*
 * OpenCL batched_nms_padded and onnx_nms (vo_nms_padded_params), the host
 * glue of opencl/nms_padded.cl. Everything stays on the device, nothing is
 * read back: per chunk of (image, class) problems one kernel (a work item a
 * problem: scan, stable merge sort, greedy pass in its scratch slot), then
 * the padded merge (ranks, padding) or the onnx rows (offsets, rows). The
 * chunk is as many problems as the context's workspace limit holds slots
 * for beyond the selections kept for every problem (at least one), so any
 * size that fits in memory works.
 */
#include <stdio.h>
#include <string.h>

#include "opencl/common.h"

static size_t vo_cl_np_align(size_t n) { return (n + 127) & ~(size_t)127; }

/* The chunk's problems kernel, [q0, q0 + nq). */
static vo_status vo_cl_np_problems(const vo_cl_call *c, const vo_nms_padded_params *p,
                                   int64_t items, int64_t cap, int64_t q0, int64_t nq, cl_mem ws,
                                   const size_t at[4], cl_mem scratch, size_t slot_bytes,
                                   size_t kept_at) {
  const int f64 = p->boxes->dtype == VO_F64;
  char name[48];
  snprintf(name, sizeof name, "vo_cl_np_problems_%s", vo_cl_suffix(p->boxes->dtype));
  vo_cl_launch l;
  vo_status st = vo_cl_launch_begin(&l, c, "nms_padded", name);
  if (st != VO_OK) return st;
  const vo_view *bx = p->boxes, *sv = p->scores;
  const int b_dtype = (int)bx->dtype, s_dtype = (int)sv->dtype;
  const int agnostic = p->class_agnostic, kind = p->kind, fmt = p->format;
  const int has_thr = p->has_score_threshold;
  uint64_t thr_bits;
  memcpy(&thr_bits, &p->score_threshold, sizeof thr_bits);
  vo_cl_arg_view(&l, bx);
  vo_cl_arg(&l, &b_dtype, sizeof b_dtype);
  vo_cl_arg_i64(&l, bx->stride[0]);
  vo_cl_arg_i64(&l, bx->stride[1]);
  vo_cl_arg_i64(&l, p->per_class_boxes ? bx->stride[2] : 0);
  vo_cl_arg_i64(&l, bx->stride[bx->ndim - 1]);
  vo_cl_arg_view(&l, sv);
  vo_cl_arg(&l, &s_dtype, sizeof s_dtype);
  for (int k = 0; k < 3; k++) vo_cl_arg_i64(&l, sv->stride[k]);
  vo_cl_arg_i64(&l, p->boxes_per_image);
  vo_cl_arg_i64(&l, p->classes);
  vo_cl_arg(&l, &agnostic, sizeof agnostic);
  vo_cl_arg(&l, &kind, sizeof kind);
  vo_cl_arg(&l, &fmt, sizeof fmt);
  if (f64)
    vo_cl_arg_f64(&l, p->iou_threshold);
  else
    vo_cl_arg_f32(&l, p->iou_threshold_f32);
  vo_cl_arg(&l, &has_thr, sizeof has_thr);
  vo_cl_arg_i64(&l, (int64_t)thr_bits);
  vo_cl_arg_f32(&l, p->score_threshold_f32);
  vo_cl_arg_i64(&l, items);
  vo_cl_arg_i64(&l, p->max_candidates);
  vo_cl_arg_i64(&l, cap);
  vo_cl_arg_i64(&l, q0);
  vo_cl_arg_i64(&l, nq);
  vo_cl_arg_mem(&l, ws, 0);
  for (int k = 0; k < 3; k++) vo_cl_arg_i64(&l, (int64_t)at[k]);
  vo_cl_arg_mem(&l, scratch, 0);
  vo_cl_arg_i64(&l, (int64_t)slot_bytes);
  vo_cl_arg_i64(&l, (int64_t)kept_at);
  return vo_cl_launch_run(&l, nq);
}

/* padded: the ranks' kernel, then the padding and num. */
static vo_status vo_cl_np_padded(const vo_cl_call *c, const vo_nms_padded_params *p,
                                 int64_t problems, int64_t cap, cl_mem ws, const size_t at[4]) {
  const vo_view *sv = p->scores;
  const int s_dtype = (int)sv->dtype, agnostic = p->class_agnostic;
  vo_cl_launch l;
  vo_status st = vo_cl_launch_begin(&l, c, "nms_padded", "vo_cl_np_rank");
  if (st != VO_OK) return st;
  vo_cl_arg_view(&l, sv);
  vo_cl_arg(&l, &s_dtype, sizeof s_dtype);
  for (int k = 0; k < 3; k++) vo_cl_arg_i64(&l, sv->stride[k]);
  vo_cl_arg_i64(&l, p->boxes_per_image);
  vo_cl_arg_i64(&l, p->classes);
  vo_cl_arg(&l, &agnostic, sizeof agnostic);
  vo_cl_arg_i64(&l, cap);
  vo_cl_arg_i64(&l, problems);
  vo_cl_arg_i64(&l, p->max_per_image);
  vo_cl_arg_mem(&l, ws, 0);
  for (int k = 0; k < 3; k++) vo_cl_arg_i64(&l, (int64_t)at[k]);
  vo_cl_arg_view(&l, p->keep);
  vo_cl_arg_view(&l, p->labels);
  vo_cl_arg_view(&l, p->scores_out);
  if ((st = vo_cl_launch_run(&l, problems * cap)) != VO_OK) return st;
  if ((st = vo_cl_launch_begin(&l, c, "nms_padded", "vo_cl_np_finish")) != VO_OK) return st;
  vo_cl_arg(&l, &s_dtype, sizeof s_dtype);
  vo_cl_arg_i64(&l, p->classes);
  vo_cl_arg(&l, &agnostic, sizeof agnostic);
  vo_cl_arg_i64(&l, problems);
  vo_cl_arg_i64(&l, p->max_per_image);
  vo_cl_arg_i64(&l, p->batches);
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_i64(&l, (int64_t)at[2]);
  vo_cl_arg_view(&l, p->keep);
  vo_cl_arg_view(&l, p->labels);
  vo_cl_arg_view(&l, p->scores_out);
  vo_cl_arg_view(&l, p->num);
  return vo_cl_launch_run(&l, p->batches * (p->max_per_image + 1));
}

/* onnx: the offsets (one item), then the rows. */
static vo_status vo_cl_np_onnx(const vo_cl_call *c, const vo_nms_padded_params *p, int64_t problems,
                               int64_t cap, cl_mem ws, const size_t at[4]) {
  vo_cl_launch l;
  vo_status st = vo_cl_launch_begin(&l, c, "nms_padded", "vo_cl_np_offsets");
  if (st != VO_OK) return st;
  vo_cl_arg_i64(&l, problems);
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_i64(&l, (int64_t)at[2]);
  vo_cl_arg_i64(&l, (int64_t)at[3]);
  vo_cl_arg_view(&l, p->num_selected);
  if ((st = vo_cl_launch_run(&l, 1)) != VO_OK) return st;
  if ((st = vo_cl_launch_begin(&l, c, "nms_padded", "vo_cl_np_rows")) != VO_OK) return st;
  vo_cl_arg_i64(&l, p->classes);
  vo_cl_arg_i64(&l, cap);
  vo_cl_arg_i64(&l, problems);
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_i64(&l, (int64_t)at[0]);
  vo_cl_arg_i64(&l, (int64_t)at[2]);
  vo_cl_arg_i64(&l, (int64_t)at[3]);
  vo_cl_arg_view(&l, p->selected);
  return vo_cl_launch_run(&l, problems * cap);
}

vo_status vo_opencl_nms_padded(const vo_exec *ex) {
  const vo_nms_padded_params *p = &ex->p.nms_padded;
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK) return st;
  const int64_t problems = p->problems; /* 0 without boxes */
  const int64_t items = p->items;
  const int64_t cap = p->max_selected;
  const size_t np = (size_t)problems, ucap = (size_t)cap;
  /* Kept for every problem: selections [problems, cap], their score keys,
   * counts, onnx's offsets. Sizes cannot overflow: problems * cap and
   * items are at most the scores' element count (B * C * M). */
  size_t at[4];
  at[0] = 0;
  at[1] = vo_cl_np_align(np * ucap * sizeof(int64_t));
  at[2] = at[1] + vo_cl_np_align(np * ucap * sizeof(uint64_t));
  at[3] = at[2] + vo_cl_np_align(np * sizeof(int64_t));
  const size_t total = at[3] + (np + 1) * sizeof(int64_t);
  /* A scratch slot: two (key, item) arrays of `items`, then cap boxes. */
  const size_t box_bytes = 5 * (p->boxes->dtype == VO_F64 ? sizeof(double) : sizeof(float));
  const size_t kept_at = vo_cl_np_align(2 * (size_t)items * 2 * sizeof(uint64_t));
  const size_t slot_bytes = kept_at + vo_cl_np_align(ucap * box_bytes);
  const size_t limit = ex->ctx->workspace_limit;
  const size_t budget = limit > total ? limit - total : 0;
  /* slot_bytes is 0 only when cap and items are (no problem to run). */
  int64_t chunk = slot_bytes ? (int64_t)(budget / slot_bytes) : problems;
  if (chunk < 1) chunk = 1;
  if (chunk > problems) chunk = problems;

  cl_mem ws = vo_cl_workspace(ex, total);
  if (!ws) return VO_ERROR_OUT_OF_MEMORY;
  if (cap > 0 && problems > 0) {
    cl_mem scratch = vo_cl_workspace(ex, (size_t)chunk * slot_bytes);
    if (!scratch) {
      vo_workspace_free(ex->ctx, ex->device, ws);
      return VO_ERROR_OUT_OF_MEMORY;
    }
    for (int64_t q0 = 0; st == VO_OK && q0 < problems; q0 += chunk) {
      const int64_t nq = problems - q0 < chunk ? problems - q0 : chunk;
      st = vo_cl_np_problems(&c, p, items, cap, q0, nq, ws, at, scratch, slot_bytes, kept_at);
    }
    vo_workspace_free(ex->ctx, ex->device, scratch);
  } else if (problems > 0) {
    const int64_t zero = 0;
    st = vo_cl_fill(&c, ws, at[2], &zero, sizeof zero, np * sizeof(int64_t));
  }
  if (st == VO_OK)
    st = p->onnx ? vo_cl_np_onnx(&c, p, problems, cap, ws, at)
                 : vo_cl_np_padded(&c, p, problems, cap, ws, at);
  vo_workspace_free(ex->ctx, ex->device, ws);
  return st;
}
