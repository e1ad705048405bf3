/*
 * batched_nms_padded and onnx_nms: argument checks and output shapes of the
 * NMS per (image, class) that deployment stacks run (SPEC-NEXT section 4),
 * with fixed-shape outputs so that no size depends on the data.
 *   batched_nms_padded: EfficientNMS-shaped, per image the max_per_image
 *     best selections across classes: keep / labels (-1 padding), scores
 *     (0 padding) [B, max_per_image] and num [B]; torchvision nms's IoU and
 *     IoU > iou_threshold, candidates score > score_threshold (None: all).
 *   onnx_nms: ONNX NonMaxSuppression-11: selected [B * C * min(max, M), 3]
 *     rows (batch, class, box) in (batch, class, selection) order, -1 rows
 *     past num_selected []; onnxruntime's IoU, thresholds float32 as ONNX's
 *     inputs are (float64 boxes / scores compare in double).
 * Both run the nms_padded kernel (vo_nms_padded_params).
 */

#include "kernels/nms_padded.h"
#include "ops/common.h"

enum { ARG_BOXES, ARG_SCORES };

/* The boxes [B, M, 4] (or [B, M, C, 4] when per_class is allowed) and
 * scores [B, C, M] of either op into p. */
static vo_status vo_check_np_tensors(vo_exec *ex, int allow_per_class, vo_nms_padded_params *p) {
  vo_status st;
  const vo_view *boxes = &ex->inputs[ARG_BOXES];
  if (allow_per_class && boxes->ndim == 4) {
    const int64_t dims[4] = {-1, -1, -1, 4};
    if ((st = vo_expect_shape(ex, ARG_BOXES, 4, dims, "B, M, C, 4")) != VO_OK) return st;
  } else {
    const int64_t dims[3] = {-1, -1, 4};
    if ((st = vo_expect_shape(ex, ARG_BOXES, 3, dims,
                              allow_per_class ? "B, M, 4] or [B, M, C, 4" : "B, M, 4")) != VO_OK)
      return st;
  }
  if ((st = vo_expect_float(ex, ARG_BOXES)) != VO_OK) return st;
  p->batches = boxes->shape[0];
  p->boxes_per_image = boxes->shape[1];
  p->per_class_boxes = boxes->ndim == 4;
  const int64_t scores_dims[3] = {p->batches, p->per_class_boxes ? boxes->shape[2] : -1,
                                  p->boxes_per_image};
  /* B and M from boxes; C from boxes when they are per class */
  if (p->per_class_boxes)
    st = vo_expect_shape(ex, ARG_SCORES, 3, scores_dims, "%lld, %lld, %lld", (long long)p->batches,
                         (long long)scores_dims[1], (long long)p->boxes_per_image);
  else
    st = vo_expect_shape(ex, ARG_SCORES, 3, scores_dims, "%lld, C, %lld", (long long)p->batches,
                         (long long)p->boxes_per_image);
  if (st != VO_OK) return st;
  if ((st = vo_expect_float_companion(ex, ARG_SCORES, ARG_BOXES)) != VO_OK) return st;
  p->classes = ex->inputs[ARG_SCORES].shape[1];
  p->boxes = boxes;
  p->scores = &ex->inputs[ARG_SCORES];
  ex->dtype = vo_compute_dtype(boxes->dtype);
  return VO_OK;
}

/* iou_threshold (float argument `arg`): not NaN; in [0, 1] for onnx. */
static vo_status vo_check_np_iou(vo_exec *ex, int arg, int onnx) {
  vo_status st;
  if ((st = vo_expect_not_nan(ex, arg)) != VO_OK) return st;
  const double t = ex->args[arg].u.f;
  if (onnx && !(t >= 0 && t <= 1))
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: %s must be in [0, 1] (ONNX NonMaxSuppression's range), got %g", ex->op_name,
                   vo_arg_name(ex, arg), t);
  vo_nms_padded_params *p = &ex->p.nms_padded;
  p->iou_threshold = t;
  /* onnx: the float32 threshold ONNX passes, compared as onnxruntime does;
   * batched_nms_padded: torchvision's comparison in double. */
  p->iou_threshold_f32 = onnx ? (float)t : vo_nms_threshold_f32(t);
  return VO_OK;
}

/* score_threshold (float? argument `arg`): None (every box a candidate) or
 * not NaN; onnx rounds it to float32 (ONNX's input) unless scores are
 * float64. Candidates are then (double)score > p->score_threshold, and in
 * float (float scores) score > p->score_threshold_f32, the same decisions. */
static vo_status vo_check_np_score(vo_exec *ex, int arg, int onnx) {
  vo_nms_padded_params *p = &ex->p.nms_padded;
  p->has_score_threshold = ex->args[arg].kind == VO_VALUE_FLOAT;
  if (!p->has_score_threshold) return VO_OK;
  vo_status st;
  if ((st = vo_expect_not_nan(ex, arg)) != VO_OK) return st;
  double t = ex->args[arg].u.f;
  if (onnx && p->scores->dtype != VO_F64) t = (float)t;
  p->score_threshold = t;
  p->score_threshold_f32 = vo_nms_threshold_f32(t);
  return VO_OK;
}

/* An int argument that is -1 (none) or >= 0. */
static vo_status vo_expect_cap(const vo_exec *ex, int arg, const char *none) {
  const int64_t v = ex->args[arg].u.i;
  if (v >= -1) return VO_OK;
  return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s must be -1 (%s) or >= 0, got %lld", ex->op_name,
                 vo_arg_name(ex, arg), none, (long long)v);
}

static int64_t vo_min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* batched_nms_padded(boxes, scores, iou_threshold, score_threshold,
 * max_per_class, max_per_image, box_format, class_agnostic, pre_nms_top_k) */
vo_status vo_check_batched_nms_padded(vo_exec *ex) {
  enum { IOU = 2, SCORE, MAX_PER_CLASS, MAX_PER_IMAGE, FORMAT, AGNOSTIC, TOP_K };
  vo_nms_padded_params *p = &ex->p.nms_padded;
  vo_status st;
  if ((st = vo_check_np_tensors(ex, 1, p)) != VO_OK) return st;
  if ((st = vo_check_np_iou(ex, IOU, 0)) != VO_OK) return st;
  if ((st = vo_check_np_score(ex, SCORE, 0)) != VO_OK) return st;
  if ((st = vo_expect_cap(ex, MAX_PER_CLASS, "no cap")) != VO_OK) return st;
  if ((st = vo_expect_int_at_least(ex, MAX_PER_IMAGE, 0)) != VO_OK) return st;
  if ((st = vo_expect_cap(ex, TOP_K, "every candidate")) != VO_OK) return st;
  const int64_t fmt = ex->args[FORMAT].u.i;
  if (fmt < VO_K_BOX_XYXY || fmt > VO_K_BOX_CXCYWH)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: box_format must be 0 (xyxy), 1 (xywh) or 2 (cxcywh), got %lld", ex->op_name,
                   (long long)fmt);
  p->onnx = 0;
  p->kind = VO_K_NP_TORCHVISION;
  p->format = (int)fmt;
  p->class_agnostic = ex->args[AGNOSTIC].u.b;
  const int64_t b = p->batches, m = p->boxes_per_image, c = p->classes;
  const int64_t k = ex->args[MAX_PER_IMAGE].u.i;
  p->problems = m == 0 ? 0 : p->class_agnostic ? b : b * c; /* <= the scores' elements */
  /* A problem's candidates: its class's M boxes, or every (class, box) pair
   * of the image (C * M: at most the scores' element count when B > 0). */
  p->items = p->class_agnostic ? (b == 0 ? 0 : c * m) : m;
  const int64_t items = p->items;
  const int64_t top_k = ex->args[TOP_K].u.i, per_class = ex->args[MAX_PER_CLASS].u.i;
  p->max_candidates = top_k < 0 ? items : vo_min64(top_k, items);
  /* No class contributes more than max_per_image to its image's best. */
  p->max_selected = vo_min64(vo_min64(per_class < 0 ? items : per_class, k), p->max_candidates);
  if (p->problems == 0) p->max_selected = 0; /* nothing to select (and C * cap may overflow) */
  p->max_per_image = k;
  if (vo_product4(b, k, 1, 1) < 0)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: B * max_per_image = %lld * %lld outputs overflow int64", ex->op_name,
                   (long long)b, (long long)k);
  const int64_t padded[2] = {b, k};
  vo_set_output(ex, 0, VO_I64, 2, padded);
  vo_set_output(ex, 1, VO_I64, 2, padded);
  vo_set_output(ex, 2, p->scores->dtype, 2, padded);
  vo_set_output(ex, 3, VO_I64, 1, &b);
  p->keep = &ex->outputs[0];
  p->labels = &ex->outputs[1];
  p->scores_out = &ex->outputs[2];
  p->num = &ex->outputs[3];
  p->selected = p->num_selected = NULL;
  return VO_OK;
}

/* onnx_nms(boxes, scores, max_output_boxes_per_class, iou_threshold,
 * score_threshold, center_point_box) */
vo_status vo_check_onnx_nms(vo_exec *ex) {
  enum { MAX_OUT = 2, IOU, SCORE, CENTER };
  vo_nms_padded_params *p = &ex->p.nms_padded;
  vo_status st;
  if ((st = vo_check_np_tensors(ex, 0, p)) != VO_OK) return st;
  if ((st = vo_check_np_iou(ex, IOU, 1)) != VO_OK) return st;
  if ((st = vo_check_np_score(ex, SCORE, 1)) != VO_OK) return st;
  const int64_t center = ex->args[CENTER].u.i;
  if (center != 0 && center != 1)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: center_point_box must be 0 ([y1, x1, y2, x2]) or 1 ([x_center, "
                   "y_center, width, height]), got %lld",
                   ex->op_name, (long long)center);
  p->onnx = 1;
  p->kind = center ? VO_K_NP_ONNX_CENTER : VO_K_NP_ONNX_CORNERS;
  p->format = VO_K_BOX_XYXY;
  p->class_agnostic = 0;
  const int64_t b = p->batches, m = p->boxes_per_image, c = p->classes;
  p->problems = m == 0 ? 0 : b * c; /* <= the scores' elements */
  /* onnxruntime takes a negative count as 0: no output. */
  const int64_t max_out = ex->args[MAX_OUT].u.i;
  p->items = p->max_candidates = m;
  p->max_selected = max_out < 0 ? 0 : vo_min64(max_out, m);
  p->max_per_image = 0;
  const int64_t rows = vo_product4(b, c, p->max_selected, 3);
  if (rows < 0)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: B * C * min(max_output_boxes_per_class, M) = %lld * %lld * %lld rows "
                   "overflow int64",
                   ex->op_name, (long long)b, (long long)c, (long long)p->max_selected);
  const int64_t selected[2] = {rows / 3, 3};
  vo_set_output(ex, 0, VO_I64, 2, selected);
  vo_set_output(ex, 1, VO_I64, 0, NULL);
  p->selected = &ex->outputs[0];
  p->num_selected = &ex->outputs[1];
  p->keep = p->labels = p->scores_out = p->num = NULL;
  return VO_OK;
}

vo_status vo_batched_nms_padded(const vo_context *ctx, const DLTensor *boxes,
                                const DLTensor *scores, double iou_threshold,
                                const double *score_threshold, int64_t max_per_class,
                                int64_t max_per_image, int box_format, int class_agnostic,
                                int64_t pre_nms_top_k, DLTensor *keep, DLTensor *labels,
                                DLTensor *scores_out, DLTensor *num) {
  const vo_value none = vo_tensor_value(NULL);
  const vo_value args[] = {
      vo_tensor_value(boxes),        vo_tensor_value(scores),
      vo_float_value(iou_threshold), score_threshold ? vo_float_value(*score_threshold) : none,
      vo_int_value(max_per_class),   vo_int_value(max_per_image),
      vo_int_value(box_format),      vo_bool_value(class_agnostic),
      vo_int_value(pre_nms_top_k)};
  DLTensor *const outs[] = {keep, labels, scores_out, num};
  return vo_call(ctx, vo_op_get(VO_OP_batched_nms_padded), args, 9, outs, 4);
}

vo_status vo_onnx_nms(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                      int64_t max_output_boxes_per_class, double iou_threshold,
                      const double *score_threshold, int center_point_box, DLTensor *selected,
                      DLTensor *num_selected) {
  const vo_value none = vo_tensor_value(NULL);
  const vo_value args[] = {vo_tensor_value(boxes),
                           vo_tensor_value(scores),
                           vo_int_value(max_output_boxes_per_class),
                           vo_float_value(iou_threshold),
                           score_threshold ? vo_float_value(*score_threshold) : none,
                           vo_int_value(center_point_box)};
  DLTensor *const outs[] = {selected, num_selected};
  return vo_call(ctx, vo_op_get(VO_OP_onnx_nms), args, 6, outs, 2);
}
