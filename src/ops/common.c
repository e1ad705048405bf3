/*
 * Checks shared by the op-layer files: dtype agreement, scalar arguments,
 * output descriptions, and the declarations of the value checks of rois and
 * channel_mapping that vo_call runs (core/data_checks.c).
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ops/common.h"

vo_status vo_expect_float(const vo_exec *ex, int arg) {
  vo_dtype dt = ex->inputs[arg].dtype;
  if (vo_dtype_is_float(dt)) return VO_OK;
  return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE,
                 "%s: %s must be float32, float64, float16 or bfloat16, got %s", ex->op_name,
                 vo_arg_name(ex, arg), vo_dtype_name(dt));
}

vo_status vo_expect_float_or_int(const vo_exec *ex, int arg) {
  vo_dtype dt = ex->inputs[arg].dtype;
  if (vo_dtype_is_float(dt) || vo_dtype_is_int(dt)) return VO_OK;
  return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE,
                 "%s: %s must be float32, float64, float16, bfloat16 or an integer dtype "
                 "(int64, int32, int16, int8, uint8), got %s",
                 ex->op_name, vo_arg_name(ex, arg), vo_dtype_name(dt));
}

vo_status vo_expect_same_dtype(const vo_exec *ex, int arg, int like) {
  vo_dtype dt = ex->inputs[arg].dtype, want = ex->inputs[like].dtype;
  if (dt == want) return VO_OK;
  return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: %s must have the dtype of %s (%s), got %s",
                 ex->op_name, vo_arg_name(ex, arg), vo_arg_name(ex, like), vo_dtype_name(want),
                 vo_dtype_name(dt));
}

/* SPEC section 5's mixed precision, the one place it is decided: a
 * companion tensor may have any floating dtype beside the data tensor
 * `like` (float32 rois beside bfloat16 features, as autocast produces, but
 * also float64 rois or float16 scores). Kernels read it at its own precision
 * and compute in the data tensor's (vo_compute_dtype); the output takes the
 * data tensor's dtype. */
vo_status vo_expect_float_beside(const vo_exec *ex, int arg, vo_dtype like_dtype,
                                 const char *like_name, ...) {
  vo_dtype dt = ex->inputs[arg].dtype;
  if (vo_dtype_is_float(dt)) return VO_OK;
  char name[96];
  va_list ap;
  va_start(ap, like_name);
  vsnprintf(name, sizeof name, like_name, ap);
  va_end(ap);
  return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE,
                 "%s: %s must be float32, float64, float16 or bfloat16 (any floating dtype beside "
                 "%s's %s), got %s",
                 ex->op_name, vo_arg_name(ex, arg), name, vo_dtype_name(like_dtype),
                 vo_dtype_name(dt));
}

vo_status vo_expect_float_companion(const vo_exec *ex, int arg, int like) {
  return vo_expect_float_beside(ex, arg, ex->inputs[like].dtype, "%s", vo_arg_name(ex, like));
}

vo_status vo_expect_dims4(const vo_exec *ex, int arg, const int64_t dims[4]) {
  return vo_expect_shape(ex, arg, 4, dims, "%lld, %lld, %lld, %lld", (long long)dims[0],
                         (long long)dims[1], (long long)dims[2], (long long)dims[3]);
}

vo_status vo_expect_dtype(const vo_exec *ex, int arg, vo_dtype want) {
  vo_dtype dt = ex->inputs[arg].dtype;
  if (dt == want) return VO_OK;
  return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: %s must be %s, got %s", ex->op_name,
                 vo_arg_name(ex, arg), vo_dtype_name(want), vo_dtype_name(dt));
}

vo_status vo_expect_not_nan(const vo_exec *ex, int arg) {
  double v = ex->args[arg].u.f;
  if (!isnan(v)) return VO_OK;
  return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s must be a number, got nan", ex->op_name,
                 vo_arg_name(ex, arg));
}

vo_status vo_expect_finite(const vo_exec *ex, int arg) {
  double v = ex->args[arg].u.f;
  if (isfinite(v)) return VO_OK;
  return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s must be finite, got %g", ex->op_name,
                 vo_arg_name(ex, arg), v);
}

void vo_set_output(vo_exec *ex, int k, vo_dtype dt, int ndim, const int64_t *shape) {
  vo_tensor_desc *d = &ex->out_desc[k];
  memset(d, 0, sizeof *d);
  d->ndim = ndim;
  for (int i = 0; i < ndim; i++) d->shape[i] = shape[i];
  d->dtype = vo_dtype_to_dl(dt);
  d->device = ex->device;
}

vo_status vo_expect_int_at_least(const vo_exec *ex, int arg, int64_t min) {
  int64_t v = ex->args[arg].u.i;
  if (v >= min) return VO_OK;
  return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s must be >= %lld, got %lld", ex->op_name,
                 vo_arg_name(ex, arg), (long long)min, (long long)v);
}

vo_status vo_expect_int_at_most(const vo_exec *ex, int arg, int64_t max, const char *why) {
  const int64_t v = ex->args[arg].u.i;
  if (v <= max) return VO_OK;
  return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s must be at most %lld (%s), got %lld",
                 ex->op_name, vo_arg_name(ex, arg), (long long)max, why, (long long)v);
}

/* a*b*c*d without int64 overflow (all >= 0); -1 if it would overflow. */
int64_t vo_product4(int64_t a, int64_t b, int64_t c, int64_t d) {
  const int64_t f[4] = {a, b, c, d};
  int64_t r = 1;
  for (int i = 0; i < 4; i++) {
    if (f[i] == 0) return 0;
    if (r > INT64_MAX / f[i]) return -1;
    r *= f[i];
  }
  return r;
}

/* Declared checks copy the tensor's layout now (its shape is checked
 * already); the dispatcher reads the values when it runs them. */
vo_k_check *vo_declare_data_check(vo_exec *ex, int kind, int arg) {
  if (ex->num_data_checks >= VO_MAX_DATA_CHECKS) {
    vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: internal error: more than %d data checks", ex->op_name,
            VO_MAX_DATA_CHECKS);
    return NULL;
  }
  vo_data_check *d = &ex->data_checks[ex->num_data_checks++];
  memset(d, 0, sizeof *d);
  d->arg = arg;
  d->arg2 = arg;
  const vo_view *v = &ex->inputs[arg];
  d->check.kind = kind;
  d->check.dtype = (int)v->dtype;
  for (int i = 0; i < 4; i++) {
    d->check.shape[i] = i < v->ndim ? v->shape[i] : 1;
    d->check.stride[i] = i < v->ndim ? v->stride[i] : 0;
  }
  return &d->check;
}

/* The kernels index with these values, and torchvision reads out of bounds
 * (or crashes) on bad ones, so every batch index must name an image of the
 * input and every coordinate must be finite. */
vo_status vo_declare_rois_check(vo_exec *ex, int rois_arg, int64_t n) {
  vo_k_check *c = vo_declare_data_check(ex, VO_K_CHECK_ROIS, rois_arg);
  if (!c) return VO_ERROR_BACKEND_FAILURE;
  c->batch_size = n;
  return VO_OK;
}

vo_status vo_declare_rboxes_check(vo_exec *ex, int arg) {
  return vo_declare_data_check(ex, VO_K_CHECK_RBOXES, arg) ? VO_OK : VO_ERROR_BACKEND_FAILURE;
}

/* The kernels index value with the levels' keys, so they must lie in
 * [0, S): checked once per call (O(L^2) work, L <= VO_K_MAX_LEVELS). */
vo_status vo_declare_levels_check(vo_exec *ex, int shapes_arg, int starts_arg, int64_t keys) {
  vo_k_check *c = vo_declare_data_check(ex, VO_K_CHECK_LEVELS, shapes_arg);
  if (!c) return VO_ERROR_BACKEND_FAILURE;
  ex->data_checks[ex->num_data_checks - 1].arg2 = starts_arg;
  c->keys = keys;
  c->stride2 = ex->inputs[starts_arg].stride[0];
  return VO_OK;
}

/* The work of the roi_align family is K * C * PH * PW * (samples per bin),
 * so the samples per bin are bounded. An explicit sampling_ratio is at most
 * VO_K_MAX_SAMPLING_RATIO per axis. The adaptive grid (sampling_ratio <= 0,
 * ceil(RoI size / pooled size)) follows the RoI: a RoI inside the map needs
 * at most about (H + 2) / PH samples per bin along y, so the grid may be
 * 4x that (or VO_K_MAX_SAMPLING_RATIO, if larger) before a RoI is refused
 * as far larger than its map (kernels/data_checks.h); without that bound one
 * RoI of 1e9 pixels would keep a call busy for hours (torchvision's does). */
vo_status vo_check_sampling_ratio(const vo_exec *ex, int sampling_arg) {
  return vo_expect_int_at_most(
      ex, sampling_arg, VO_K_MAX_SAMPLING_RATIO,
      "samples per bin along each axis; <= 0 picks them from the RoI size");
}

vo_status vo_declare_rotated_rois_check(vo_exec *ex, int rois_arg, int64_t n) {
  vo_k_check *c = vo_declare_data_check(ex, VO_K_CHECK_ROIS, rois_arg);
  if (!c) return VO_ERROR_BACKEND_FAILURE;
  c->batch_size = n;
  c->rotated = 1;
  return VO_OK;
}

vo_k_check *vo_declare_roi_grid_check(vo_exec *ex, int rois_arg, const vo_roi_map *m) {
  vo_k_check *c = vo_declare_data_check(ex, VO_K_CHECK_ROI_GRID, rois_arg);
  if (!c) return NULL;
  c->pooled_height = m->pooled_height;
  c->pooled_width = m->pooled_width;
  c->offset = m->offset;
  c->min_size_1 = m->min_size_1;
  c->rotated = m->rotated;
  c->num_maps = 1;
  c->scale[0] = m->spatial_scale;
  c->height[0] = m->height;
  c->width[0] = m->width;
  return c;
}

/* The arguments every RoI op shares: rois [K,5] ([K,6] rotated) of any floating dtype beside
 * argument `like` (features or grad, which set the precision), spatial_scale
 * finite and > 0, pooled height and width >= 1. */
static vo_status vo_check_roi_args(const vo_exec *ex, int rois_arg, int like,
                                   const vo_roi_layout *l) {
  const int scale_arg = l->scale;
  vo_status st;
  const int64_t roi_dims[2] = {-1, l->rotated ? 6 : 5};
  if ((st = vo_expect_shape(ex, rois_arg, 2, roi_dims, l->rotated ? "K, 6" : "K, 5")) != VO_OK)
    return st;
  if ((st = vo_expect_float_companion(ex, rois_arg, like)) != VO_OK) return st;
  const double scale = ex->args[scale_arg].u.f;
  if (!(isfinite(scale) && scale > 0))
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s must be finite and > 0, got %g", ex->op_name,
                   vo_arg_name(ex, scale_arg), scale);
  /* Everything but float64 computes in float32, where a larger scale is inf
   * (and 0 * inf a NaN coordinate). The data tensor sets the precision. */
  const vo_dtype data = ex->inputs[like].dtype;
  if (vo_compute_dtype(data) != VO_F64 && scale > FLT_MAX)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: %s = %g is not finite in float32, the precision %s %s computes in",
                   ex->op_name, vo_arg_name(ex, scale_arg), scale, vo_dtype_name(data),
                   vo_arg_name(ex, like));
  if ((st = vo_expect_int_at_least(ex, l->pooled_height, 1)) != VO_OK) return st;
  if ((st = vo_expect_int_at_least(ex, l->pooled_width, 1)) != VO_OK) return st;
  return VO_OK;
}

vo_status vo_check_channel_groups(const vo_exec *ex, int arg, int64_t c, int64_t ph, int64_t pw) {
  const int64_t group = vo_product4(ph, pw, 1, 1);
  if (group < 1) /* ph, pw >= 1 were checked before: only an overflow lands here */
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: pooled_height * pooled_width = %lld * %lld is not a positive int64",
                   ex->op_name, (long long)ph, (long long)pw);
  if (c > INT32_MAX)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: %s: %lld channels are more than the int32 channel_mapping can index",
                   ex->op_name, vo_arg_name(ex, arg), (long long)c);
  if (c % group == 0) return VO_OK;
  if (ex->args[arg].kind == VO_VALUE_TENSOR)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: %s has C = %lld channels, which is not a multiple of pooled_height * "
                   "pooled_width = %lld",
                   ex->op_name, vo_arg_name(ex, arg), (long long)c, (long long)group);
  return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                 "%s: %s = %lld is not a multiple of pooled_height * pooled_width = %lld",
                 ex->op_name, vo_arg_name(ex, arg), (long long)c, (long long)group);
}

vo_status vo_declare_channel_mapping_check(vo_exec *ex, int arg) {
  return vo_declare_data_check(ex, VO_K_CHECK_CHANNEL_MAPPING, arg) ? VO_OK
                                                                    : VO_ERROR_BACKEND_FAILURE;
}

vo_status vo_expect_fits4(const vo_exec *ex, const char *what, const int64_t dims[4]) {
  if (vo_product4(dims[0], dims[1], dims[2], dims[3]) >= 0) return VO_OK;
  return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                 "%s: %s [%lld, %lld, %lld, %lld] has more than 2^63 elements", ex->op_name, what,
                 (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3]);
}

vo_status vo_expect_input_sizes(const vo_exec *ex, int first, int64_t sizes[4]) {
  vo_status st;
  for (int i = 0; i < 4; i++) {
    if ((st = vo_expect_int_at_least(ex, first + i, 0)) != VO_OK) return st;
    sizes[i] = ex->args[first + i].u.i;
  }
  return vo_expect_fits4(ex, "grad_input", sizes);
}

/* The rois check of a RoI op (argument 1) on n images. */
static vo_status vo_declare_roi_rows_check(vo_exec *ex, const vo_roi_layout *l, int64_t n) {
  return l->rotated ? vo_declare_rotated_rois_check(ex, 1, n) : vo_declare_rois_check(ex, 1, n);
}

/* The grad_input sizes a backward's grad and index tensors are measured
 * against after them: K from rois, then C (or C/(PH*PW)), PH, PW. */
static vo_status vo_check_roi_backward(vo_exec *ex, const vo_roi_layout *l, int64_t sizes[4]) {
  enum { GRAD = 0, ROIS = 1 };
  vo_status st;
  const int64_t any4[4] = {-1, -1, -1, -1};
  if ((st = vo_expect_shape(ex, GRAD, 4, any4,
                            l->grouped ? "K, C/(PH*PW), PH, PW" : "K, C, PH, PW")) != VO_OK)
    return st;
  if ((st = vo_expect_float(ex, GRAD)) != VO_OK) return st;
  if ((st = vo_check_roi_args(ex, ROIS, GRAD, l)) != VO_OK) return st;
  if ((st = vo_expect_input_sizes(ex, l->batch_size, sizes)) != VO_OK) return st;
  const int64_t k = ex->inputs[ROIS].shape[0];
  const int64_t ph = ex->args[l->pooled_height].u.i, pw = ex->args[l->pooled_width].u.i;
  if (l->grouped &&
      (st = vo_check_channel_groups(ex, l->batch_size + 1, sizes[1], ph, pw)) != VO_OK)
    return st;
  const int64_t grad_dims[4] = {k, l->grouped ? sizes[1] / (ph * pw) : sizes[1], ph, pw};
  /* K from rois; C or C/(PH*PW), PH, PW from the int arguments */
  if ((st = vo_expect_dims4(ex, GRAD, grad_dims)) != VO_OK) return st;
  if (l->index >= 0) {
    if ((st = vo_expect_dims4(ex, l->index, grad_dims)) != VO_OK) return st;
    if ((st = vo_expect_dtype(ex, l->index, VO_I32)) != VO_OK) return st;
  }
  if ((st = vo_declare_roi_rows_check(ex, l, sizes[0])) != VO_OK) return st;
  ex->dtype = ex->inputs[GRAD].dtype;
  vo_set_output(ex, 0, ex->dtype, 4, sizes);
  return VO_OK;
}

static vo_status vo_check_roi_forward(vo_exec *ex, const vo_roi_layout *l, int64_t out_shape[4]) {
  enum { INPUT = 0, ROIS = 1 };
  vo_status st;
  const int64_t in_dims[4] = {-1, -1, -1, -1};
  if ((st = vo_expect_shape(ex, INPUT, 4, in_dims, "N, C, H, W")) != VO_OK) return st;
  if ((st = vo_expect_float(ex, INPUT)) != VO_OK) return st;
  if ((st = vo_check_roi_args(ex, ROIS, INPUT, l)) != VO_OK) return st;
  const vo_view *in = &ex->inputs[INPUT];
  const int64_t c = in->shape[1];
  const int64_t ph = ex->args[l->pooled_height].u.i, pw = ex->args[l->pooled_width].u.i;
  if (l->grouped && (st = vo_check_channel_groups(ex, INPUT, c, ph, pw)) != VO_OK) return st;
  out_shape[0] = ex->inputs[ROIS].shape[0];
  out_shape[1] = l->grouped ? c / (ph * pw) : c;
  out_shape[2] = ph;
  out_shape[3] = pw;
  if ((st = vo_expect_fits4(ex, "output", out_shape)) != VO_OK) return st;
  if ((st = vo_declare_roi_rows_check(ex, l, in->shape[0])) != VO_OK) return st;
  ex->dtype = in->dtype;
  vo_set_output(ex, 0, ex->dtype, 4, out_shape);
  return VO_OK;
}

/* sampling_ratio, and (declared) the adaptive grid of every RoI on an h x w
 * map: with aligned half a pixel's shift and no 1x1 minimum, without it
 * neither (ps_roi_align, with no aligned argument, is always aligned). */
static vo_status vo_check_roi_sampling(vo_exec *ex, const vo_roi_layout *l, int64_t h, int64_t w) {
  vo_status st = vo_check_sampling_ratio(ex, l->sampling);
  if (st != VO_OK) return st;
  const int aligned = l->aligned < 0 || ex->args[l->aligned].u.b != 0;
  const vo_roi_map m = {ex->args[l->scale].u.f,
                        aligned ? 0.5 : 0.0,
                        l->aligned >= 0 && !aligned,
                        l->rotated,
                        ex->args[l->sampling].u.i,
                        ex->args[l->pooled_height].u.i,
                        ex->args[l->pooled_width].u.i,
                        h,
                        w};
  if (m.sampling_ratio > 0 || vo_declare_roi_grid_check(ex, 1, &m)) return VO_OK;
  return VO_ERROR_BACKEND_FAILURE;
}

/* backward, scale, pooled_height, pooled_width, sampling, aligned, batch_size,
 * index, grouped, int32_out, rotated: the argument lists of ops.def's schemas. */
const vo_roi_layout vo_roi_align_layouts[2] = {{0, 2, 3, 4, 5, 6, -1, -1, 0, 0, 0},
                                               {1, 2, 3, 4, 9, 10, 5, -1, 0, 0, 0}};
const vo_roi_layout vo_ps_roi_align_layouts[2] = {{0, 2, 3, 4, 5, -1, -1, -1, 1, 1, 0},
                                                  {1, 3, 4, 5, 6, -1, 7, 2, 1, 0, 0}};
const vo_roi_layout vo_roi_pool_layouts[2] = {{0, 2, 3, 4, -1, -1, -1, -1, 0, 1, 0},
                                              {1, 3, 4, 5, -1, -1, 6, 2, 0, 0, 0}};
const vo_roi_layout vo_ps_roi_pool_layouts[2] = {{0, 2, 3, 4, -1, -1, -1, -1, 1, 1, 0},
                                                 {1, 3, 4, 5, -1, -1, 6, 2, 1, 0, 0}};
/* roi_align's argument lists, then clockwise and radians after aligned */
const vo_roi_layout vo_roi_align_rotated_layouts[2] = {{0, 2, 3, 4, 5, 6, -1, -1, 0, 0, 1},
                                                       {1, 2, 3, 4, 9, 10, 5, -1, 0, 0, 1}};

vo_status vo_check_roi_op(vo_exec *ex, const vo_roi_layout *l, vo_roi_finish_fn finish) {
  int64_t sizes[4], out_shape[4] = {0, 0, 0, 0};
  vo_status st;
  if (l->backward) {
    st = vo_check_roi_backward(ex, l, sizes);
    if (st == VO_OK && l->grouped) st = vo_declare_channel_mapping_check(ex, l->index);
  } else {
    st = vo_check_roi_forward(ex, l, out_shape);
    memcpy(sizes, ex->inputs[0].shape, sizeof sizes);
  }
  if (st == VO_OK && l->sampling >= 0) st = vo_check_roi_sampling(ex, l, sizes[2], sizes[3]);
  if (st != VO_OK) return st;
  /* argmax or channel_mapping: only a backward reads it, so it may be omitted */
  if (l->int32_out) {
    vo_set_output(ex, 1, VO_I32, 4, out_shape);
    ex->optional_outputs = 1u << 1;
  }
  return finish(ex, l, sizes);
}

void vo_fill_roi_align_params(vo_exec *ex, const vo_roi_layout *l, const int64_t sizes[4],
                              vo_roi_align_params *p) {
  p->input = l->backward ? NULL : &ex->inputs[0];
  p->grad = l->backward ? &ex->inputs[0] : NULL;
  p->rois = &ex->inputs[1];
  p->spatial_scale = ex->args[l->scale].u.f;
  p->pooled_height = ex->args[l->pooled_height].u.i;
  p->pooled_width = ex->args[l->pooled_width].u.i;
  p->sampling_ratio = ex->args[l->sampling].u.i;
  p->aligned = l->aligned < 0 || ex->args[l->aligned].u.b;
  p->batch_size = sizes[0];
  p->channels = sizes[1];
  p->height = sizes[2];
  p->width = sizes[3];
  p->out = &ex->outputs[0];
}

void vo_fill_roi_pool_params(vo_exec *ex, const vo_roi_layout *l, const int64_t sizes[4],
                             vo_roi_pool_params *p) {
  p->input = l->backward ? NULL : &ex->inputs[0];
  p->grad = l->backward ? &ex->inputs[0] : NULL;
  p->argmax = NULL;
  p->argmax_out = NULL;
  p->rois = &ex->inputs[1];
  p->spatial_scale = ex->args[l->scale].u.f;
  p->pooled_height = ex->args[l->pooled_height].u.i;
  p->pooled_width = ex->args[l->pooled_width].u.i;
  p->batch_size = sizes[0];
  p->channels = sizes[1];
  p->height = sizes[2];
  p->width = sizes[3];
  p->out = &ex->outputs[0];
}

int vo_box_roi_args(vo_value *args, const DLTensor *data, const DLTensor *rois, int has_index,
                    const DLTensor *index, double spatial_scale, int64_t pooled_height,
                    int64_t pooled_width) {
  int k = 0;
  args[k++] = vo_tensor_value(data);
  args[k++] = vo_tensor_value(rois);
  if (has_index) args[k++] = vo_tensor_value(index);
  args[k++] = vo_float_value(spatial_scale);
  args[k++] = vo_int_value(pooled_height);
  args[k++] = vo_int_value(pooled_width);
  return k;
}

int vo_box_ints(vo_value *args, const int64_t *values, int count) {
  for (int i = 0; i < count; i++) args[i] = vo_int_value(values[i]);
  return count;
}

vo_status vo_infer_roi_pooling(const vo_context *ctx, vo_op_id op, const DLTensor *input,
                               const DLTensor *rois, double spatial_scale, int64_t pooled_height,
                               int64_t pooled_width, vo_tensor_desc out[2]) {
  vo_value args[5];
  int k = vo_box_roi_args(args, input, rois, 0, NULL, spatial_scale, pooled_height, pooled_width);
  return vo_infer(ctx, vo_op_get(op), args, k, out, 2);
}

vo_status vo_call_roi_pooling(const vo_context *ctx, vo_op_id op, const DLTensor *input,
                              const DLTensor *rois, double spatial_scale, int64_t pooled_height,
                              int64_t pooled_width, DLTensor *out, DLTensor *index) {
  vo_value args[5];
  int k = vo_box_roi_args(args, input, rois, 0, NULL, spatial_scale, pooled_height, pooled_width);
  DLTensor *const outs[] = {out, index};
  return vo_call(ctx, vo_op_get(op), args, k, outs, 2);
}

vo_status vo_call_roi_pooling_backward(const vo_context *ctx, vo_op_id op, const DLTensor *grad,
                                       const DLTensor *rois, const DLTensor *index,
                                       double spatial_scale, int64_t pooled_height,
                                       int64_t pooled_width, const int64_t sizes[4],
                                       DLTensor *grad_input) {
  vo_value args[10];
  int k = vo_box_roi_args(args, grad, rois, 1, index, spatial_scale, pooled_height, pooled_width);
  k += vo_box_ints(args + k, sizes, 4);
  DLTensor *const outs[] = {grad_input};
  return vo_call(ctx, vo_op_get(op), args, k, outs, 1);
}
