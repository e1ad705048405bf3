/*
 * deform_attn (multi-scale deformable attention, Deformable DETR) and
 * _deform_attn_backward: argument checks, output shapes and typed wrappers,
 * with torchvision main's schemas (SPEC-NEXT section 5). The levels
 * (spatial_shapes against value's S, level_start_index against
 * spatial_shapes) are a declared value check, run on the tensors' device
 * before any output is written; im2col_step is accepted (>= 1) and does not
 * change results or require N to divide by it.
 */
#include "ops/common.h"

/* Argument positions; the backward has grad_output before im2col_step. */
enum { ARG_VALUE, ARG_SHAPES, ARG_STARTS, ARG_LOC, ARG_ATTN, ARG_GRAD };

static vo_status vo_check_deform_attn_common(vo_exec *ex, int backward) {
  vo_status st;
  const int64_t any4[4] = {-1, -1, -1, -1}, any6[6] = {-1, -1, -1, -1, -1, 2};
  const int step = backward ? ARG_GRAD + 1 : ARG_GRAD;
  if ((st = vo_expect_shape(ex, ARG_VALUE, 4, any4, "N, S, M, D")) != VO_OK) return st;
  if ((st = vo_expect_float(ex, ARG_VALUE)) != VO_OK) return st;
  const vo_view *v = &ex->inputs[ARG_VALUE];
  const int64_t n = v->shape[0], keys = v->shape[1], heads = v->shape[2], channels = v->shape[3];
  /* the output's last dimension M * D must be a size even when N or Q is 0 */
  if (vo_product4(1, 1, heads, channels) < 0)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: value's M * D = %lld * %lld (the output's last dimension) exceeds 2^63 - 1",
                   ex->op_name, (long long)heads, (long long)channels);
  const int64_t l2[2] = {-1, 2};
  if ((st = vo_expect_shape(ex, ARG_SHAPES, 2, l2, "L, 2")) != VO_OK) return st;
  if ((st = vo_expect_dtype(ex, ARG_SHAPES, VO_I64)) != VO_OK) return st;
  const int64_t levels = ex->inputs[ARG_SHAPES].shape[0];
  const int64_t l1[1] = {levels};
  if ((st = vo_expect_shape(ex, ARG_STARTS, 1, l1, "L")) != VO_OK) return st;
  if ((st = vo_expect_dtype(ex, ARG_STARTS, VO_I64)) != VO_OK) return st;
  if (levels > VO_K_MAX_LEVELS)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: spatial_shapes has %lld levels, at most %d",
                   ex->op_name, (long long)levels, VO_K_MAX_LEVELS);
  if ((st = vo_expect_shape(ex, ARG_LOC, 6, any6, "N, Q, M, L, P, 2")) != VO_OK) return st;
  if ((st = vo_expect_same_dtype(ex, ARG_LOC, ARG_VALUE)) != VO_OK) return st;
  const vo_view *loc = &ex->inputs[ARG_LOC];
  const int64_t queries = loc->shape[1], points = loc->shape[4];
  if (loc->shape[0] != n || loc->shape[2] != heads || loc->shape[3] != levels)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: sampling_loc [N, Q, M, L, P, 2] has N, M, L = %lld, %lld, %lld, but value "
                   "has N = %lld and M = %lld heads and spatial_shapes L = %lld levels",
                   ex->op_name, (long long)loc->shape[0], (long long)loc->shape[2],
                   (long long)loc->shape[3], (long long)n, (long long)heads, (long long)levels);
  const int64_t attn_dims[5] = {n, queries, heads, levels, points};
  if ((st = vo_expect_shape(ex, ARG_ATTN, 5, attn_dims, "N, Q, M, L, P of sampling_loc")) != VO_OK)
    return st;
  if ((st = vo_expect_same_dtype(ex, ARG_ATTN, ARG_VALUE)) != VO_OK) return st;
  if ((st = vo_expect_int_at_least(ex, step, 1)) != VO_OK) return st;
  if (levels == 0 && keys != 0)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: spatial_shapes has no levels, but value has S = %lld keys", ex->op_name,
                   (long long)keys);
  const int64_t out_dims[4] = {n, queries, heads, channels};
  if ((st = vo_expect_fits4(ex, "output", out_dims)) != VO_OK) return st;
  if (backward) {
    const int64_t g[3] = {n, queries, heads * channels};
    if ((st = vo_expect_shape(ex, ARG_GRAD, 3, g, "N, Q, M * D")) != VO_OK) return st;
    if ((st = vo_expect_same_dtype(ex, ARG_GRAD, ARG_VALUE)) != VO_OK) return st;
  }
  if (levels > 0 && (st = vo_declare_levels_check(ex, ARG_SHAPES, ARG_STARTS, keys)) != VO_OK)
    return st;
  ex->dtype = v->dtype == VO_F64 ? VO_F64 : VO_F32;
  if (!backward) {
    const int64_t shape[3] = {n, queries, heads * channels};
    vo_set_output(ex, 0, v->dtype, 3, shape);
    return VO_OK;
  }
  vo_set_output(ex, 0, v->dtype, 4, v->shape);
  vo_set_output(ex, 1, v->dtype, 6, loc->shape);
  vo_set_output(ex, 2, v->dtype, 5, ex->inputs[ARG_ATTN].shape);
  return VO_OK;
}

vo_status vo_check_deform_attn(vo_exec *ex) { return vo_check_deform_attn_common(ex, 0); }
vo_status vo_check__deform_attn_backward(vo_exec *ex) { return vo_check_deform_attn_common(ex, 1); }

/* The five tensors both ops start with, boxed. */
static void vo_box_deform_attn(vo_value args[5], const DLTensor *value,
                               const DLTensor *spatial_shapes, const DLTensor *level_start_index,
                               const DLTensor *sampling_loc, const DLTensor *attn_weight) {
  args[0] = vo_tensor_value(value);
  args[1] = vo_tensor_value(spatial_shapes);
  args[2] = vo_tensor_value(level_start_index);
  args[3] = vo_tensor_value(sampling_loc);
  args[4] = vo_tensor_value(attn_weight);
}

vo_status vo_deform_attn(const vo_context *ctx, const DLTensor *value,
                         const DLTensor *spatial_shapes, const DLTensor *level_start_index,
                         const DLTensor *sampling_loc, const DLTensor *attn_weight,
                         int64_t im2col_step, DLTensor *out) {
  vo_value args[6];
  vo_box_deform_attn(args, value, spatial_shapes, level_start_index, sampling_loc, attn_weight);
  args[5] = vo_int_value(im2col_step);
  DLTensor *const outs[] = {out};
  return vo_call(ctx, vo_op_get(VO_OP_deform_attn), args, 6, outs, 1);
}

vo_status vo_deform_attn_backward(const vo_context *ctx, const DLTensor *value,
                                  const DLTensor *spatial_shapes, const DLTensor *level_start_index,
                                  const DLTensor *sampling_loc, const DLTensor *attn_weight,
                                  const DLTensor *grad_output, int64_t im2col_step,
                                  DLTensor *grad_value, DLTensor *grad_sampling_loc,
                                  DLTensor *grad_attn_weight) {
  vo_value args[7];
  vo_box_deform_attn(args, value, spatial_shapes, level_start_index, sampling_loc, attn_weight);
  args[5] = vo_tensor_value(grad_output);
  args[6] = vo_int_value(im2col_step);
  DLTensor *const outs[] = {grad_value, grad_sampling_loc, grad_attn_weight};
  return vo_call(ctx, vo_op_get(VO_OP__deform_attn_backward), args, 7, outs, 3);
}
