/*
 * OpenCL matrix_nms, the host glue of opencl/matrix_nms.cl, whose entry
 * points run kernels/matrix_nms.h's work items: per chunk of (image, class)
 * problems the ranking (a work group of 64 a problem), the two row passes
 * and the kept rows (a group a problem again), then the placement of every
 * kept row and the padding. The chunk is as many problems as the context's
 * workspace limit holds slots for beyond the state kept for every problem
 * (vo_k_mnms_chunk). Everything stays on the device; nothing is read
 * back.
 */
#include "core/matrix_nms_args.h"
#include "opencl/common.h"

/* Problems [q0, q0 + nq): ranking, the two row passes, the kept rows. */
static vo_status vo_cl_mnms_chunk(const vo_cl_call *c, const vo_exec *ex, const vo_k_mnms_args *a,
                                  const char *sfx, cl_mem ws, cl_mem scratch, int64_t q0,
                                  int64_t nq) {
  vo_cl_launch l;
  vo_status st =
      vo_cl_launch_begin_with(&l, c, "matrix_nms", "vo_cl_mnms_problem", sfx, a, sizeof *a);
  if (st != VO_OK) return st;
  vo_cl_arg_view(&l, &ex->inputs[0]);
  vo_cl_arg_view(&l, &ex->inputs[1]);
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_mem(&l, scratch, 0);
  vo_cl_arg_i64(&l, q0);
  vo_cl_arg_i64(&l, nq);
  if ((st = vo_cl_launch_run_groups(&l, nq, 64)) != VO_OK) return st;
  for (int second = 0; second < 2; second++) {
    if ((st = vo_cl_launch_begin_with(&l, c, "matrix_nms", "vo_cl_mnms_rows", sfx, a, sizeof *a)) !=
        VO_OK)
      return st;
    vo_cl_arg_mem(&l, ws, 0);
    vo_cl_arg_mem(&l, scratch, 0);
    vo_cl_arg_i64(&l, q0);
    vo_cl_arg_i64(&l, nq);
    vo_cl_arg(&l, &second, sizeof second);
    if ((st = vo_cl_launch_run(&l, nq * a->per_class)) != VO_OK) return st;
  }
  if ((st = vo_cl_launch_begin_with(&l, c, "matrix_nms", "vo_cl_mnms_keep", sfx, a, sizeof *a)) !=
      VO_OK)
    return st;
  vo_cl_arg_mem(&l, ws, 0);
  vo_cl_arg_mem(&l, scratch, 0);
  vo_cl_arg_i64(&l, q0);
  vo_cl_arg_i64(&l, nq);
  return vo_cl_launch_run_groups(&l, nq, 64);
}

vo_status vo_opencl_matrix_nms(const vo_exec *ex) {
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK) return st;
  const vo_k_mnms_args a = vo_matrix_nms_kernel_args(ex);
  /* Paddle's linear decay divides in double; in float its roundings, and
   * then the selections, could differ from the CPU's */
  if (!c.fp64 && !a.gaussian)
    return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE,
                   "%s: the linear decay needs float64 arithmetic (Paddle's), and this OpenCL "
                   "device has no cl_khr_fp64; use_gaussian=True runs without it",
                   ex->op_name);
  if (a.batch == 0) return VO_OK;
  const char *sfx = ex->dtype == VO_F64 ? "f64" : "f32";
  cl_mem ws = vo_cl_workspace(ex, a.total);
  if (!ws) return VO_ERROR_OUT_OF_MEMORY;
  if (a.problems > 0) {
    const int64_t chunk = vo_k_mnms_chunk(&a, ex->ctx->workspace_limit);
    cl_mem scratch = vo_cl_workspace(ex, (size_t)chunk * a.slot_bytes);
    if (!scratch) {
      vo_workspace_free(ex->ctx, ex->device, ws);
      return VO_ERROR_OUT_OF_MEMORY;
    }
    for (int64_t q0 = 0; st == VO_OK && q0 < a.problems; q0 += chunk)
      st = vo_cl_mnms_chunk(&c, ex, &a, sfx, ws, scratch, q0,
                            a.problems - q0 < chunk ? a.problems - q0 : chunk);
    vo_workspace_free(ex->ctx, ex->device, scratch);
    vo_cl_launch l;
    if (st == VO_OK && (st = vo_cl_launch_begin_with(&l, &c, "matrix_nms", "vo_cl_mnms_place", sfx,
                                                     &a, sizeof a)) == VO_OK) {
      vo_cl_arg_view(&l, &ex->inputs[0]);
      vo_cl_arg_mem(&l, ws, 0);
      vo_cl_arg_view(&l, &ex->outputs[0]);
      vo_cl_arg_view(&l, &ex->outputs[1]);
      st = vo_cl_launch_run(&l, a.problems * a.per_class);
    }
  }
  vo_cl_launch l;
  if (st == VO_OK && (st = vo_cl_launch_begin_with(&l, &c, "matrix_nms", "vo_cl_mnms_finish", NULL,
                                                   &a, sizeof a)) == VO_OK) {
    vo_cl_arg_mem(&l, ws, 0);
    vo_cl_arg_view(&l, &ex->outputs[0]);
    vo_cl_arg_view(&l, &ex->outputs[1]);
    vo_cl_arg_view(&l, &ex->outputs[2]);
    st = vo_cl_launch_run(&l, a.batch * (a.k + 1));
  }
  vo_workspace_free(ex->ctx, ex->device, ws);
  return st;
}
