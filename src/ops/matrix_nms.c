/*
 * matrix_nms (Matrix NMS, SOLOv2; Paddle's matrix_nms, SPEC-NEXT section
 * 3): argument checks, the padded output shapes and the typed wrappers.
 * Every output shape comes from the arguments alone, so a device never
 * synchronises: dets [B, K, 6], index [B, K] and num [B], rows past num[b]
 * zero (dets) and -1 (index); K is keep_top_k when it is >= 0, else the
 * most one image can produce, C * min(nms_top_k, M) (M for nms_top_k -1).
 */
#include "ops/common.h"

enum {
  ARG_BOXES,
  ARG_SCORES,
  ARG_SCORE_THRESHOLD,
  ARG_POST_THRESHOLD,
  ARG_NMS_TOP_K,
  ARG_KEEP_TOP_K,
  ARG_USE_GAUSSIAN,
  ARG_SIGMA,
  ARG_BACKGROUND,
  ARG_NORMALIZED
};

vo_status vo_check_matrix_nms(vo_exec *ex) {
  vo_status st;
  const int64_t box_dims[3] = {-1, -1, 4};
  if ((st = vo_expect_shape(ex, ARG_BOXES, 3, box_dims, "B, M, 4")) != VO_OK) return st;
  if ((st = vo_expect_float(ex, ARG_BOXES)) != VO_OK) return st;
  const vo_view *boxes = &ex->inputs[ARG_BOXES];
  const int64_t batch = boxes->shape[0], m = boxes->shape[1];
  const int64_t score_dims[3] = {batch, -1, m};
  if ((st = vo_expect_shape(ex, ARG_SCORES, 3, score_dims, "B, C, M of boxes")) != VO_OK) return st;
  /* Scores are read in the boxes' compute precision, whatever their dtype. */
  if ((st = vo_expect_float_companion(ex, ARG_SCORES, ARG_BOXES)) != VO_OK) return st;
  const int64_t classes = ex->inputs[ARG_SCORES].shape[1];
  if ((st = vo_expect_not_nan(ex, ARG_SCORE_THRESHOLD)) != VO_OK) return st;
  if ((st = vo_expect_not_nan(ex, ARG_POST_THRESHOLD)) != VO_OK) return st;
  if ((st = vo_expect_int_at_least(ex, ARG_NMS_TOP_K, -1)) != VO_OK) return st;
  if ((st = vo_expect_int_at_least(ex, ARG_KEEP_TOP_K, -1)) != VO_OK) return st;
  if ((st = vo_expect_finite(ex, ARG_SIGMA)) != VO_OK) return st;
  if ((st = vo_expect_int_at_least(ex, ARG_BACKGROUND, -1)) != VO_OK) return st;

  const int64_t nms_top_k = ex->args[ARG_NMS_TOP_K].u.i, keep_top_k = ex->args[ARG_KEEP_TOP_K].u.i;
  const int64_t per_class = nms_top_k >= 0 && nms_top_k < m ? nms_top_k : m;
  int64_t k = keep_top_k;
  if (k < 0) {
    k = vo_product4(1, 1, classes, per_class);
    if (k < 0)
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: the detections of one image, C * min(nms_top_k, M) = %lld * %lld, "
                     "exceed 2^63 - 1 (set keep_top_k)",
                     ex->op_name, (long long)classes, (long long)per_class);
  }
  if (vo_product4(1, batch, k, 6) < 0)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: dets [B, K, 6] = [%lld, %lld, 6] exceeds 2^63 - 1 elements", ex->op_name,
                   (long long)batch, (long long)k);

  ex->dtype = vo_compute_dtype(boxes->dtype);
  const int64_t dets_shape[3] = {batch, k, 6}, index_shape[2] = {batch, k};
  vo_set_output(ex, 0, boxes->dtype, 3, dets_shape);
  vo_set_output(ex, 1, VO_I64, 2, index_shape);
  vo_set_output(ex, 2, VO_I64, 1, &batch);
  return VO_OK;
}

/* The typed wrappers' arguments, boxed in the schema's order. */
#define VO_MATRIX_NMS_ARGS                                                                    \
  const vo_value args[10] = {vo_tensor_value(boxes),          vo_tensor_value(scores),        \
                             vo_float_value(score_threshold), vo_float_value(post_threshold), \
                             vo_int_value(nms_top_k),         vo_int_value(keep_top_k),       \
                             vo_bool_value(use_gaussian),     vo_float_value(gaussian_sigma), \
                             vo_int_value(background_label),  vo_bool_value(normalized)}

vo_status vo_matrix_nms_shape(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                              double score_threshold, double post_threshold, int64_t nms_top_k,
                              int64_t keep_top_k, int use_gaussian, double gaussian_sigma,
                              int64_t background_label, int normalized, vo_tensor_desc out[3]) {
  VO_MATRIX_NMS_ARGS;
  return vo_infer(ctx, vo_op_get(VO_OP_matrix_nms), args, 10, out, 3);
}

vo_status vo_matrix_nms(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                        double score_threshold, double post_threshold, int64_t nms_top_k,
                        int64_t keep_top_k, int use_gaussian, double gaussian_sigma,
                        int64_t background_label, int normalized, DLTensor *dets, DLTensor *index,
                        DLTensor *num) {
  VO_MATRIX_NMS_ARGS;
  DLTensor *const outs[] = {dets, index, num};
  return vo_call(ctx, vo_op_get(VO_OP_matrix_nms), args, 10, outs, 3);
}
