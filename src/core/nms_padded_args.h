/*
 * The portable kernel arguments (kernels/nms_padded.h) of a
 * batched_nms_padded / onnx_nms call, as the device backends' glue passes
 * them to the work items, with the workspace layout filled in.
 */
#ifndef VISIONOPS_CORE_NMS_PADDED_ARGS_H
#define VISIONOPS_CORE_NMS_PADDED_ARGS_H

#include <string.h>

#include "core/internal.h"
#include "kernels/nms_padded.h"

static inline vo_k_np_args vo_nms_padded_kernel_args(const vo_nms_padded_params *p) {
  vo_k_np_args a;
  memset(&a, 0, sizeof a);
  const vo_view *bx = p->boxes, *sv = p->scores;
  a.b_s0 = bx->stride[0];
  a.b_s1 = bx->stride[1];
  a.b_sc = p->per_class_boxes ? bx->stride[2] : 0;
  a.b_sk = bx->stride[bx->ndim - 1];
  a.s_s0 = sv->stride[0];
  a.s_s1 = sv->stride[1];
  a.s_s2 = sv->stride[2];
  a.m_count = p->boxes_per_image;
  a.classes = p->classes;
  a.items = p->items;
  a.max_candidates = p->max_candidates;
  a.cap = p->max_selected;
  a.problems = p->problems;
  a.k_max = p->max_per_image;
  a.batches = p->batches;
#if VO_K_FP64
  a.iou_thr = p->iou_threshold;
  a.score_thr = p->score_threshold;
#endif
  a.iou_thr_f32 = p->iou_threshold_f32;
  a.score_thr_f32 = p->score_threshold_f32;
  a.s_dtype = (int)sv->dtype;
  a.agnostic = p->class_agnostic;
  a.kind = p->kind;
  a.fmt = p->format;
  a.has_thr = p->has_score_threshold;
  vo_k_np_layout(&a, bx->dtype == VO_F64 ? sizeof(vo_k_nms_box_f64) : sizeof(vo_k_nms_box_f32));
  return a;
}

#endif /* VISIONOPS_CORE_NMS_PADDED_ARGS_H */
