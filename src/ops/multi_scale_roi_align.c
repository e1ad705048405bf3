/*
 * multi_scale_roi_align and its backward: argument checks, output shapes and
 * typed wrappers. Each RoI is pooled (roi_align) from one level of a feature
 * pyramid, chosen as torchvision's MultiScaleRoIAlign chooses it.
 */
#include <math.h>

#include "ops/common.h"

/* Forward and backward share every argument after their first two. */
enum { ARG_F_FEATURES = 0, ARG_F_ROIS = 1 };
enum { ARG_B_GRAD = 0, ARG_B_ROIS = 1, ARG_B_FEATURES = 2 };

typedef struct vo_msra_args {
  int scales, ph, pw, sampling, canonical_scale, canonical_level, aligned;
} vo_msra_args;

static const vo_msra_args vo_forward_args = {2, 3, 4, 5, 6, 7, 8};
static const vo_msra_args vo_backward_args = {3, 4, 5, 6, 7, 8, 9};

/* Feature levels: 4-D floats of one dtype sharing N and C; scales one per
 * level, each half the previous (MultiScaleRoIAlign infers them as powers of
 * two of consecutive pyramid levels, and the level mapping relies on it). */
static vo_status vo_check_levels(vo_exec *ex, int features_arg, int scales_arg) {
  const char *features = vo_arg_name(ex, features_arg);
  const vo_view *f = ex->list_inputs;
  const int levels = ex->num_list_inputs;
  char buf[160];
  for (int l = 0; l < levels; l++) {
    if (f[l].ndim != 4)
      return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s[%d] must have shape [N, C, H, W], got %s",
                     ex->op_name, features, l,
                     vo_shape_str(f[l].shape, f[l].ndim, buf, sizeof buf));
    if (!vo_dtype_is_float(f[l].dtype) || f[l].dtype != f[0].dtype)
      return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE,
                     "%s: %s[%d] must be float32, float64, float16 or bfloat16 like %s[0], got %s",
                     ex->op_name, features, l, features, vo_dtype_name(f[l].dtype));
    if (f[l].shape[0] != f[0].shape[0] || f[l].shape[1] != f[0].shape[1])
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s[%d] has N = %lld, C = %lld but %s[0] has N = %lld, C = %lld",
                     ex->op_name, features, l, (long long)f[l].shape[0], (long long)f[l].shape[1],
                     features, (long long)f[0].shape[0], (long long)f[0].shape[1]);
  }
  const vo_value *sv = &ex->args[scales_arg];
  const char *scales = vo_arg_name(ex, scales_arg);
  if (sv->u.floats.count != levels)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s has %lld values for %d feature levels",
                   ex->op_name, scales, (long long)sv->u.floats.count, levels);
  for (int l = 0; l < levels; l++) {
    double s = sv->u.floats.items[l];
    int exponent;
    if (!(isfinite(s) && s > 0 && frexp(s, &exponent) == 0.5))
      return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s[%d] = %g is not a power of two",
                     ex->op_name, scales, l, s);
    if (l > 0 && s != sv->u.floats.items[l - 1] / 2)
      return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                     "%s: %s[%d] = %g must be half of %s[%d] = %g (consecutive pyramid levels)",
                     ex->op_name, scales, l, s, scales, l - 1, sv->u.floats.items[l - 1]);
  }
  return VO_OK;
}

/* sampling_ratio, and (declared) the adaptive grid of each RoI on the level
 * it maps to (the level computed in double: the kernel's float level can
 * only differ at a boundary, where the grid bound has a factor 4 to spare). */
static vo_status vo_check_levels_sampling(vo_exec *ex, int rois_arg, const vo_msra_args *a) {
  vo_status st = vo_check_sampling_ratio(ex, a->sampling);
  if (st != VO_OK || ex->args[a->sampling].u.i > 0) return st;
  const double *scales = ex->args[a->scales].u.floats.items;
  const int aligned = ex->args[a->aligned].u.b != 0;
  const vo_roi_map m = {scales[0],
                        aligned ? 0.5 : 0.0,
                        !aligned,
                        0,
                        ex->args[a->sampling].u.i,
                        ex->args[a->ph].u.i,
                        ex->args[a->pw].u.i,
                        ex->list_inputs[0].shape[2],
                        ex->list_inputs[0].shape[3]};
  vo_k_check *c = vo_declare_roi_grid_check(ex, rois_arg, &m);
  if (!c) return VO_ERROR_BACKEND_FAILURE;
  c->pyramid = 1;
  c->num_maps = ex->num_list_inputs;
  c->first_level = -log2(scales[0]);
  c->canonical_scale = ex->args[a->canonical_scale].u.i;
  c->canonical_level = ex->args[a->canonical_level].u.i;
  for (int l = 0; l < c->num_maps; l++) {
    c->scale[l] = scales[l];
    c->height[l] = ex->list_inputs[l].shape[2];
    c->width[l] = ex->list_inputs[l].shape[3];
  }
  return VO_OK;
}

static vo_status vo_check_msra_common(vo_exec *ex, int features_arg, int rois_arg, int like,
                                      const vo_msra_args *a) {
  vo_status st;
  if ((st = vo_check_levels(ex, features_arg, a->scales)) != VO_OK) return st;
  const int64_t roi_dims[2] = {-1, 5};
  if ((st = vo_expect_shape(ex, rois_arg, 2, roi_dims, "K, 5")) != VO_OK) return st;
  /* rois: any floating dtype beside the features (SPEC section 5); the
   * backward's grad has the features' dtype, as the forward's output. */
  const vo_dtype feat = ex->list_inputs[0].dtype;
  if ((st = vo_expect_float_beside(ex, rois_arg, feat, "%s[0]", vo_arg_name(ex, features_arg))) !=
      VO_OK)
    return st;
  if (like >= 0 && ex->inputs[like].dtype != feat)
    return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: %s must have the dtype of %s[0] (%s), got %s",
                   ex->op_name, vo_arg_name(ex, like), vo_arg_name(ex, features_arg),
                   vo_dtype_name(feat), vo_dtype_name(ex->inputs[like].dtype));
  if ((st = vo_expect_int_at_least(ex, a->ph, 1)) != VO_OK) return st;
  if ((st = vo_expect_int_at_least(ex, a->pw, 1)) != VO_OK) return st;
  if ((st = vo_expect_int_at_least(ex, a->canonical_scale, 1)) != VO_OK) return st;
  const int64_t n = ex->list_inputs[0].shape[0], c = ex->list_inputs[0].shape[1];
  const int64_t k = ex->inputs[rois_arg].shape[0];
  const int64_t out_dims[4] = {k, c, ex->args[a->ph].u.i, ex->args[a->pw].u.i};
  if ((st = vo_expect_fits4(ex, "output", out_dims)) != VO_OK) return st;
  if ((st = vo_declare_rois_check(ex, rois_arg, n)) != VO_OK) return st;
  if ((st = vo_check_levels_sampling(ex, rois_arg, a)) != VO_OK) return st;

  vo_multi_scale_roi_align_params *p = &ex->p.multi_scale_roi_align;
  p->features = ex->list_inputs;
  p->num_levels = ex->num_list_inputs;
  p->scales = ex->args[a->scales].u.floats.items;
  p->first_level = (int64_t)-log2(p->scales[0]);
  p->rois = &ex->inputs[rois_arg];
  p->pooled_height = ex->args[a->ph].u.i;
  p->pooled_width = ex->args[a->pw].u.i;
  p->sampling_ratio = ex->args[a->sampling].u.i;
  p->canonical_scale = ex->args[a->canonical_scale].u.i;
  p->canonical_level = ex->args[a->canonical_level].u.i;
  p->aligned = ex->args[a->aligned].u.b;
  p->out = ex->outputs;
  ex->dtype = ex->list_inputs[0].dtype;
  return VO_OK;
}

vo_status vo_check_multi_scale_roi_align(vo_exec *ex) {
  vo_status st = vo_check_msra_common(ex, ARG_F_FEATURES, ARG_F_ROIS, -1, &vo_forward_args);
  if (st != VO_OK) return st;
  const vo_multi_scale_roi_align_params *p = &ex->p.multi_scale_roi_align;
  const int64_t shape[4] = {p->rois->shape[0], p->features[0].shape[1], p->pooled_height,
                            p->pooled_width};
  vo_set_output(ex, 0, ex->dtype, 4, shape);
  ex->p.multi_scale_roi_align.grad = NULL;
  return VO_OK;
}

vo_status vo_check_multi_scale_roi_align_backward(vo_exec *ex) {
  vo_status st =
      vo_check_msra_common(ex, ARG_B_FEATURES, ARG_B_ROIS, ARG_B_GRAD, &vo_backward_args);
  if (st != VO_OK) return st;
  vo_multi_scale_roi_align_params *p = &ex->p.multi_scale_roi_align;
  const int64_t grad_dims[4] = {p->rois->shape[0], p->features[0].shape[1], p->pooled_height,
                                p->pooled_width};
  /* K from rois, C from the features, PH, PW from the ints */
  if ((st = vo_expect_dims4(ex, ARG_B_GRAD, grad_dims)) != VO_OK) return st;
  /* One gradient per level, shaped like that level. */
  ex->num_outputs = p->num_levels;
  for (int l = 0; l < p->num_levels; l++) vo_set_output(ex, l, ex->dtype, 4, p->features[l].shape);
  p->grad = &ex->inputs[ARG_B_GRAD];
  return VO_OK;
}

#define VO_MSRA_TAIL(scales, levels)                                                              \
  vo_float_list_value(scales, levels), vo_int_value(pooled_height), vo_int_value(pooled_width),   \
      vo_int_value(sampling_ratio), vo_int_value(canonical_scale), vo_int_value(canonical_level), \
      vo_bool_value(aligned != 0)

vo_status vo_multi_scale_roi_align_shape(const vo_context *ctx, const DLTensor *const *features,
                                         const double *scales, int num_levels, const DLTensor *rois,
                                         int64_t pooled_height, int64_t pooled_width,
                                         int64_t sampling_ratio, int64_t canonical_scale,
                                         int64_t canonical_level, int aligned,
                                         vo_tensor_desc *out) {
  const vo_value args[] = {vo_tensor_list_value(features, num_levels), vo_tensor_value(rois),
                           VO_MSRA_TAIL(scales, num_levels)};
  return vo_infer(ctx, vo_op_get(VO_OP_multi_scale_roi_align), args, 9, out, 1);
}

vo_status vo_multi_scale_roi_align(const vo_context *ctx, const DLTensor *const *features,
                                   const double *scales, int num_levels, const DLTensor *rois,
                                   int64_t pooled_height, int64_t pooled_width,
                                   int64_t sampling_ratio, int64_t canonical_scale,
                                   int64_t canonical_level, int aligned, DLTensor *out) {
  const vo_value args[] = {vo_tensor_list_value(features, num_levels), vo_tensor_value(rois),
                           VO_MSRA_TAIL(scales, num_levels)};
  DLTensor *const outs[] = {out};
  return vo_call(ctx, vo_op_get(VO_OP_multi_scale_roi_align), args, 9, outs, 1);
}

vo_status vo_multi_scale_roi_align_backward(const vo_context *ctx, const DLTensor *grad,
                                            const DLTensor *rois, const DLTensor *const *features,
                                            const double *scales, int num_levels,
                                            int64_t pooled_height, int64_t pooled_width,
                                            int64_t sampling_ratio, int64_t canonical_scale,
                                            int64_t canonical_level, int aligned,
                                            DLTensor *const *grad_features) {
  const vo_value args[] = {vo_tensor_value(grad), vo_tensor_value(rois),
                           vo_tensor_list_value(features, num_levels),
                           VO_MSRA_TAIL(scales, num_levels)};
  return vo_call(ctx, vo_op_get(VO_OP_multi_scale_roi_align_backward), args, 10, grad_features,
                 num_levels);
}
