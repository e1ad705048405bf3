/*
 * The portable kernel arguments (kernels/matrix_nms.h) of a matrix_nms
 * call, as the device backends' glue passes them to the work items, with
 * the workspace layout filled in; the same reading of the arguments as
 * cpu/matrix_nms.c's.
 */
#ifndef VISIONOPS_CORE_MATRIX_NMS_ARGS_H
#define VISIONOPS_CORE_MATRIX_NMS_ARGS_H

#include <string.h>

#include "core/internal.h"
#include "kernels/matrix_nms.h"

static inline vo_k_mnms_args vo_matrix_nms_kernel_args(const vo_exec *ex) {
  const vo_view *bx = &ex->inputs[0], *sv = &ex->inputs[1];
  vo_k_mnms_args a;
  memset(&a, 0, sizeof a);
  a.b_s0 = bx->stride[0];
  a.b_s1 = bx->stride[1];
  a.b_s2 = bx->stride[2];
  a.s_s0 = sv->stride[0];
  a.s_s1 = sv->stride[1];
  a.s_s2 = sv->stride[2];
  a.batch = bx->shape[0];
  a.m = bx->shape[1];
  /* without boxes no class has a candidate: no problems (B * C may overflow) */
  a.classes = a.m == 0 ? 0 : sv->shape[1];
  const int64_t nms_top_k = ex->args[4].u.i;
  a.per_class = nms_top_k >= 0 && nms_top_k < a.m ? nms_top_k : a.m;
  a.k = ex->outputs[1].shape[1];
  a.background = ex->args[8].u.i;
  a.problems = a.batch * a.classes;
  const double score_thr = ex->args[2].u.f, post = ex->args[3].u.f, sigma = ex->args[7].u.f;
#if VO_K_FP64
  a.score_thr = score_thr;
  a.post_thr = post;
  a.sigma = sigma;
#endif
  a.score_thr_f32 = (float)score_thr;
  a.post_thr_f32 = (float)post;
  a.sigma_f32 = (float)sigma;
  a.s_dtype = (int)sv->dtype;
  a.b_dtype = (int)bx->dtype;
  a.gaussian = ex->args[6].u.b;
  a.normalized = ex->args[9].u.b;
  vo_k_mnms_layout(&a, ex->dtype == VO_F64 ? sizeof(double) : sizeof(float));
  return a;
}

#endif /* VISIONOPS_CORE_MATRIX_NMS_ARGS_H */
