/*
 * OpenCL batched_nms_padded and onnx_nms (vo_nms_padded_params), the host
 * glue of opencl/nms_padded.cl, whose entry points run kernels/nms_padded.h's
 * work items. Everything stays on the device, nothing is read back: per
 * chunk of (image, class) problems the problems kernel (a work group a
 * problem), then the padded merge (ranks, padding) or the onnx rows
 * (offsets, rows). The chunk is as many problems as the context's
 * workspace limit holds slots for beyond the state kept for every problem
 * (vo_k_np_chunk), so any size that fits in memory works.
 */
#include "core/nms_padded_args.h"
#include "opencl/common.h"

/* The chunk's problems kernel, [q0, q0 + nq): a group of a tile's
 * threads a problem. */
static vo_status vo_cl_np_problems(const vo_cl_call *c, const vo_nms_padded_params *p,
                                   const vo_k_np_args *a, cl_mem ws, cl_mem scratch, int64_t q0,
                                   int64_t nq) {
  vo_cl_launch l;
  vo_status st = vo_cl_launch_begin_with(&l, c, "nms_padded", "vo_cl_np_problems",
                                         vo_cl_suffix(p->boxes->dtype), a, sizeof *a);
  if (st != VO_OK) return st;
  vo_cl_arg_view(&l, p->boxes);
  vo_cl_arg_view(&l, p->scores);
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_mem(&l, scratch, 0);
  vo_cl_arg_i64(&l, q0);
  vo_cl_arg_i64(&l, nq);
  return vo_cl_launch_run_groups(&l, nq, VO_K_NP_TILE);
}

/* padded: the ranks' kernel, then the padding and num. */
static vo_status vo_cl_np_padded(const vo_cl_call *c, const vo_nms_padded_params *p,
                                 const vo_k_np_args *a, cl_mem ws) {
  vo_cl_launch l;
  vo_status st = vo_cl_launch_begin_with(&l, c, "nms_padded", "vo_cl_np_rank", NULL, a, sizeof *a);
  if (st != VO_OK) return st;
  vo_cl_arg_view(&l, p->scores);
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_view(&l, p->keep);
  vo_cl_arg_view(&l, p->labels);
  vo_cl_arg_view(&l, p->scores_out);
  if ((st = vo_cl_launch_run(&l, a->problems * a->cap)) != VO_OK) return st;
  if ((st = vo_cl_launch_begin_with(&l, c, "nms_padded", "vo_cl_np_finish", NULL, a, sizeof *a)) !=
      VO_OK)
    return st;
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_view(&l, p->keep);
  vo_cl_arg_view(&l, p->labels);
  vo_cl_arg_view(&l, p->scores_out);
  vo_cl_arg_view(&l, p->num);
  return vo_cl_launch_run(&l, a->batches * (a->k_max + 1));
}

/* onnx: the offsets (one item), then the rows. */
static vo_status vo_cl_np_onnx(const vo_cl_call *c, const vo_nms_padded_params *p,
                               const vo_k_np_args *a, cl_mem ws) {
  vo_cl_launch l;
  vo_status st =
      vo_cl_launch_begin_with(&l, c, "nms_padded", "vo_cl_np_offsets", NULL, a, sizeof *a);
  if (st != VO_OK) return st;
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_view(&l, p->num_selected);
  if ((st = vo_cl_launch_run(&l, 1)) != VO_OK) return st;
  if ((st = vo_cl_launch_begin_with(&l, c, "nms_padded", "vo_cl_np_rows", NULL, a, sizeof *a)) !=
      VO_OK)
    return st;
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_view(&l, p->selected);
  return vo_cl_launch_run(&l, a->problems * a->cap);
}

vo_status vo_opencl_nms_padded(const vo_exec *ex) {
  const vo_nms_padded_params *p = &ex->p.nms_padded;
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK) return st;
  const vo_k_np_args a = vo_nms_padded_kernel_args(p);
  const int64_t chunk = vo_k_np_chunk(&a, ex->ctx->workspace_limit);
  cl_mem ws = vo_cl_workspace(ex, a.total);
  if (!ws) return VO_ERROR_OUT_OF_MEMORY;
  if (a.cap > 0 && a.problems > 0) {
    cl_mem scratch = vo_cl_workspace(ex, (size_t)chunk * a.slot_bytes);
    if (!scratch) {
      vo_workspace_free(ex->ctx, ex->device, ws);
      return VO_ERROR_OUT_OF_MEMORY;
    }
    for (int64_t q0 = 0; st == VO_OK && q0 < a.problems; q0 += chunk)
      st = vo_cl_np_problems(&c, p, &a, ws, scratch, q0,
                             a.problems - q0 < chunk ? a.problems - q0 : chunk);
    vo_workspace_free(ex->ctx, ex->device, scratch);
  } else if (a.problems > 0) {
    const int64_t zero = 0;
    st = vo_cl_fill(&c, ws, a.count_at, &zero, sizeof zero, (size_t)a.problems * sizeof(int64_t));
  }
  if (st == VO_OK) st = p->onnx ? vo_cl_np_onnx(&c, p, &a, ws) : vo_cl_np_padded(&c, p, &a, ws);
  vo_workspace_free(ex->ctx, ex->device, ws);
  return st;
}
