/*
 * soft_nms and batched_soft_nms: argument checks, output shapes and the
 * typed C wrappers. batched_soft_nms is soft_nms within each category of
 * idxs, so both share one check and one kernel per backend. Outputs are
 * padded to N rows (no shape depends on the data): dets [N,5], keep [N],
 * num_kept [].
 */
#include <math.h>

#include "kernels/soft_nms.h"
#include "ops/common.h"

enum { ARG_BOXES, ARG_SCORES };

/* The smallest float f >= t: for any float x, x >= f <=> x >= t and
 * x < f <=> x < t, so float32 compute decides these comparisons as double
 * would. */
static float vo_soft_nms_up_f32(double t) {
  float f = (float)t;
  if ((double)f < t) f = nextafterf(f, INFINITY);
  return f;
}

/* idxs_arg < 0 for soft_nms; the scalars follow `first`. */
static vo_status vo_check_soft_nms_common(vo_exec *ex, int idxs_arg, int first) {
  enum { THR, SIGMA, MIN_SCORE, METHOD, OFFSET };
  vo_status st;
  if ((st = vo_expect_nms_tensors(ex, 4, idxs_arg)) != VO_OK) return st;
  const int64_t n = ex->inputs[ARG_BOXES].shape[0];
  if ((st = vo_expect_not_nan(ex, first + THR)) != VO_OK) return st;
  if ((st = vo_expect_not_nan(ex, first + SIGMA)) != VO_OK) return st;
  if ((st = vo_expect_not_nan(ex, first + MIN_SCORE)) != VO_OK) return st;
  if ((st = vo_expect_finite(ex, first + OFFSET)) != VO_OK) return st;
  const int64_t method = ex->args[first + METHOD].u.i;
  if (method != VO_K_SOFT_NMS_HARD && method != VO_K_SOFT_NMS_LINEAR &&
      method != VO_K_SOFT_NMS_GAUSSIAN)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: method must be 0 (hard), 1 (linear) or 2 (gaussian), got %lld", ex->op_name,
                   (long long)method);
  const double sigma = ex->args[first + SIGMA].u.f;
  if (method == VO_K_SOFT_NMS_GAUSSIAN && !(sigma > 0))
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: sigma must be > 0 for the gaussian method, got %g", ex->op_name, sigma);

  const vo_dtype dt = ex->inputs[ARG_BOXES].dtype;
  ex->dtype = vo_compute_dtype(dt);
  const int64_t dets_dims[2] = {n, 5};
  vo_set_output(ex, 0, dt, 2, dets_dims);
  vo_set_output(ex, 1, VO_I64, 1, &n);
  vo_set_output(ex, 2, VO_I64, 0, NULL);
  vo_soft_nms_params *p = &ex->p.soft_nms;
  p->boxes = &ex->inputs[ARG_BOXES];
  p->scores = &ex->inputs[ARG_SCORES];
  p->idxs = idxs_arg >= 0 ? &ex->inputs[idxs_arg] : NULL;
  p->method = (int)method;
  p->iou_threshold = ex->args[first + THR].u.f;
  p->sigma = sigma;
  p->min_score = ex->args[first + MIN_SCORE].u.f;
  p->offset = ex->args[first + OFFSET].u.f;
  p->iou_threshold_f32 = vo_soft_nms_up_f32(p->iou_threshold);
  p->min_score_f32 = vo_soft_nms_up_f32(p->min_score);
  /* a positive sigma stays positive in float: exp(-0 / sigma) is then 1 */
  p->sigma_f32 = sigma > 0 && (float)sigma == 0 ? nextafterf(0, 1) : (float)sigma;
  p->offset_f32 = (float)p->offset;
  p->dets = &ex->outputs[0];
  p->keep = &ex->outputs[1];
  p->num_kept = &ex->outputs[2];
  return VO_OK;
}

vo_status vo_check_soft_nms(vo_exec *ex) { return vo_check_soft_nms_common(ex, -1, 2); }

vo_status vo_check_batched_soft_nms(vo_exec *ex) { return vo_check_soft_nms_common(ex, 2, 3); }

/* The boxed arguments: boxes, scores, idxs (batched only), the five
 * scalars; their count. */
static int vo_soft_nms_args(vo_value *args, const DLTensor *boxes, const DLTensor *scores,
                            int batched, const DLTensor *idxs, double iou_threshold, double sigma,
                            double min_score, int method, double offset) {
  int k = 0;
  args[k++] = vo_tensor_value(boxes);
  args[k++] = vo_tensor_value(scores);
  if (batched) args[k++] = vo_tensor_value(idxs);
  args[k++] = vo_float_value(iou_threshold);
  args[k++] = vo_float_value(sigma);
  args[k++] = vo_float_value(min_score);
  args[k++] = vo_int_value(method);
  args[k++] = vo_float_value(offset);
  return k;
}

vo_status vo_soft_nms(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                      double iou_threshold, double sigma, double min_score, int method,
                      double offset, DLTensor *dets, DLTensor *keep, DLTensor *num_kept) {
  vo_value args[7];
  const int k = vo_soft_nms_args(args, boxes, scores, 0, NULL, iou_threshold, sigma, min_score,
                                 method, offset);
  DLTensor *const outs[] = {dets, keep, num_kept};
  return vo_call(ctx, vo_op_get(VO_OP_soft_nms), args, k, outs, 3);
}

vo_status vo_batched_soft_nms(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                              const DLTensor *idxs, double iou_threshold, double sigma,
                              double min_score, int method, double offset, DLTensor *dets,
                              DLTensor *keep, DLTensor *num_kept) {
  vo_value args[8];
  const int k = vo_soft_nms_args(args, boxes, scores, 1, idxs, iou_threshold, sigma, min_score,
                                 method, offset);
  DLTensor *const outs[] = {dets, keep, num_kept};
  return vo_call(ctx, vo_op_get(VO_OP_batched_soft_nms), args, k, outs, 3);
}
