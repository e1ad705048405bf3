/*
 * The portable kernel arguments (kernels/soft_nms.h) of a soft_nms /
 * batched_soft_nms call, as the device backends' glue passes them to the
 * work items, with the workspace layout filled in.
 */
#ifndef VISIONOPS_CORE_SOFT_NMS_ARGS_H
#define VISIONOPS_CORE_SOFT_NMS_ARGS_H

#include <string.h>

#include "core/internal.h"
#include "kernels/soft_nms.h"

static inline vo_k_snms_args vo_soft_nms_kernel_args(const vo_exec *ex) {
  const vo_soft_nms_params *p = &ex->p.soft_nms;
  vo_k_snms_args a;
  memset(&a, 0, sizeof a);
  a.n = p->boxes->shape[0];
  a.b_s0 = p->boxes->stride[0];
  a.b_s1 = p->boxes->stride[1];
  a.s_s0 = p->scores->stride[0];
  a.i_s0 = p->idxs ? p->idxs->stride[0] : 0;
#if VO_K_FP64
  a.thr = p->iou_threshold;
  a.sigma = p->sigma;
  a.min_score = p->min_score;
  a.offset = p->offset;
#endif
  a.thr_f32 = p->iou_threshold_f32;
  a.sigma_f32 = p->sigma_f32;
  a.min_score_f32 = p->min_score_f32;
  a.offset_f32 = p->offset_f32;
  a.b_dtype = (int)p->boxes->dtype;
  a.s_dtype = (int)p->scores->dtype;
  a.method = p->method;
  a.batched = p->idxs != NULL;
  vo_k_snms_layout(&a, ex->dtype == VO_F64 ? sizeof(double) : sizeof(float));
  return a;
}

#endif /* VISIONOPS_CORE_SOFT_NMS_ARGS_H */
