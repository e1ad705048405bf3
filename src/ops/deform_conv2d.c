/*
 * deform_conv2d and deform_conv2d_backward: argument checks, output shapes
 * and typed wrappers (SPEC section 3; schemas as torchvision's).
 */

#include "ops/common.h"

/* Forward argument positions; the backward's are one higher (grad first). */
enum {
  ARG_INPUT = 0,
  ARG_WEIGHT,
  ARG_OFFSET,
  ARG_MASK,
  ARG_BIAS,
  ARG_STRIDE_H,
  ARG_STRIDE_W,
  ARG_PAD_H,
  ARG_PAD_W,
  ARG_DIL_H,
  ARG_DIL_W,
  ARG_GROUPS,
  ARG_OFFSET_GROUPS,
  ARG_USE_MASK,
  NUM_FORWARD_ARGS
};

/* offset or mask (named `name`) against the input's batch size n and the
 * output grid hout x wout; the mask's channels (mask_channels >= 0: og * kh
 * * kw) between them. */
static vo_status vo_expect_per_output(const vo_exec *ex, const vo_view *v, const char *name,
                                      int64_t n, int64_t mask_channels, int64_t og, int64_t kh,
                                      int64_t kw, int64_t hout, int64_t wout) {
  if (v->shape[0] != n)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s has batch size %lld but input has N = %lld",
                   ex->op_name, name, (long long)v->shape[0], (long long)n);
  if (mask_channels >= 0 && v->shape[1] != mask_channels)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: mask has %lld channels, expected offset_groups * kh * kw = %lld * %lld "
                   "* %lld = %lld",
                   ex->op_name, (long long)v->shape[1], (long long)og, (long long)kh, (long long)kw,
                   (long long)mask_channels);
  if (v->shape[2] != hout || v->shape[3] != wout)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: %s must have spatial size Hout x Wout = %lldx%lld, got %lldx%lld",
                   ex->op_name, name, (long long)hout, (long long)wout, (long long)v->shape[2],
                   (long long)v->shape[3]);
  return VO_OK;
}

/* Checks everything the forward and backward share; `b` is 0 for the
 * forward and 1 for the backward (argument positions shift by one). */
static vo_status vo_check_deform_common(vo_exec *ex, int b) {
  vo_status st;
  vo_deform_conv2d_params *p = &ex->p.deform_conv2d;
  const int64_t any4[4] = {-1, -1, -1, -1};
  const int in = ARG_INPUT + b, wt = ARG_WEIGHT + b, off = ARG_OFFSET + b, mk = ARG_MASK + b,
            bs = ARG_BIAS + b;
  const int has_mask = ex->args[mk].kind == VO_VALUE_TENSOR;
  const int has_bias = ex->args[bs].kind == VO_VALUE_TENSOR;
  if ((st = vo_expect_shape(ex, in, 4, any4, "N, Cin, H, W")) != VO_OK) return st;
  if ((st = vo_expect_float(ex, in)) != VO_OK) return st;
  if ((st = vo_expect_shape(ex, wt, 4, any4, "Cout, Cin / groups, kh, kw")) != VO_OK) return st;
  if ((st = vo_expect_same_dtype(ex, wt, in)) != VO_OK) return st;
  if ((st = vo_expect_shape(ex, off, 4, any4, "N, 2 * offset_groups * kh * kw, Hout, Wout")) !=
      VO_OK)
    return st;
  if ((st = vo_expect_same_dtype(ex, off, in)) != VO_OK) return st;
  if (has_mask) {
    if ((st = vo_expect_shape(ex, mk, 4, any4, "N, offset_groups * kh * kw, Hout, Wout")) != VO_OK)
      return st;
    if ((st = vo_expect_same_dtype(ex, mk, in)) != VO_OK) return st;
  }
  if (ex->args[ARG_USE_MASK + b].u.b && !has_mask)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: use_mask is True but mask is None", ex->op_name);
  for (int a = ARG_STRIDE_H + b; a <= ARG_DIL_W + b; a++) {
    const int is_pad = a == ARG_PAD_H + b || a == ARG_PAD_W + b;
    if ((st = vo_expect_int_at_least(ex, a, is_pad ? 0 : 1)) != VO_OK) return st;
  }
  if ((st = vo_expect_int_at_least(ex, ARG_GROUPS + b, 1)) != VO_OK) return st;
  if ((st = vo_expect_int_at_least(ex, ARG_OFFSET_GROUPS + b, 1)) != VO_OK) return st;

  const vo_view *x = &ex->inputs[in], *w = &ex->inputs[wt], *o = &ex->inputs[off];
  const int64_t n = x->shape[0], cin = x->shape[1], h = x->shape[2], wd = x->shape[3];
  const int64_t cout = w->shape[0], kh = w->shape[2], kw = w->shape[3];
  const int64_t groups = ex->args[ARG_GROUPS + b].u.i, og = ex->args[ARG_OFFSET_GROUPS + b].u.i;
  const int64_t sh = ex->args[ARG_STRIDE_H + b].u.i, sw = ex->args[ARG_STRIDE_W + b].u.i;
  const int64_t ph = ex->args[ARG_PAD_H + b].u.i, pw = ex->args[ARG_PAD_W + b].u.i;
  const int64_t dh = ex->args[ARG_DIL_H + b].u.i, dw = ex->args[ARG_DIL_W + b].u.i;
  /* Every size below is bounded by tensor sizes or int64 arguments; cap them
   * so that the kernel's products (2*og*kh*kw, Cin*kh*kw, H + 2*pad) cannot
   * overflow int64. */
  const int64_t cap = (int64_t)1 << 40;
  if (kh < 1 || kw < 1)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: weight kernel size must be >= 1, got %lldx%lld",
                   ex->op_name, (long long)kh, (long long)kw);
  for (int a = ARG_STRIDE_H + b; a <= ARG_OFFSET_GROUPS + b; a++)
    if ((st = vo_expect_int_at_most(ex, a, cap, "2^40, so index products fit in int64")) != VO_OK)
      return st;
  int64_t taps;
  if (__builtin_mul_overflow(kh, kw, &taps) || taps > cap / 2)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: weight's kernel %lldx%lld has more than 2^39 taps (index products must fit "
                   "in int64)",
                   ex->op_name, (long long)kh, (long long)kw);
  if (cin % groups != 0)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: input has Cin = %lld channels, not divisible by groups = %lld", ex->op_name,
                   (long long)cin, (long long)groups);
  if (w->shape[1] * groups != cin)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: weight has %lld input channels per group, but Cin / groups = %lld / %lld "
                   "= %lld",
                   ex->op_name, (long long)w->shape[1], (long long)cin, (long long)groups,
                   (long long)(cin / groups));
  if (cout % groups != 0)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: weight has Cout = %lld output channels, not divisible by groups = %lld",
                   ex->op_name, (long long)cout, (long long)groups);
  if (cin % og != 0)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: input has Cin = %lld channels, not divisible by offset_groups = %lld",
                   ex->op_name, (long long)cin, (long long)og);
  const int64_t offset_channels = 2 * og * kh * kw, mask_channels = og * kh * kw;
  if (o->shape[1] != offset_channels)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: offset has %lld channels, expected 2 * offset_groups * kh * kw = 2 * "
                   "%lld * %lld * %lld = %lld",
                   ex->op_name, (long long)o->shape[1], (long long)og, (long long)kh, (long long)kw,
                   (long long)offset_channels);
  const int64_t eff_h = dh * (kh - 1) + 1, eff_w = dw * (kw - 1) + 1;
  const int64_t hout = (h + 2 * ph - eff_h) / sh + 1, wout = (wd + 2 * pw - eff_w) / sw + 1;
  if (h + 2 * ph < eff_h || wd + 2 * pw < eff_w || hout < 1 || wout < 1)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: output size would be below 1: input %lldx%lld, padding %lldx%lld, "
                   "kernel %lldx%lld, dilation %lldx%lld",
                   ex->op_name, (long long)h, (long long)wd, (long long)ph, (long long)pw,
                   (long long)kh, (long long)kw, (long long)dh, (long long)dw);
  if ((st = vo_expect_per_output(ex, o, "offset", n, -1, og, kh, kw, hout, wout)) != VO_OK)
    return st;
  if (has_mask && (st = vo_expect_per_output(ex, &ex->inputs[mk], "mask", n, mask_channels, og, kh,
                                             kw, hout, wout)) != VO_OK)
    return st;
  if (has_bias) {
    const int64_t bias_dims[1] = {cout};
    if ((st = vo_expect_shape(ex, bs, 1, bias_dims, "%lld", (long long)cout)) != VO_OK) return st;
    if ((st = vo_expect_same_dtype(ex, bs, in)) != VO_OK) return st;
  }
  const int64_t out_dims[4] = {n, cout, hout, wout};
  if ((st = vo_expect_fits4(ex, "output", out_dims)) != VO_OK) return st;

  p->input = x;
  p->weight = w;
  p->offset = o;
  p->mask = has_mask ? &ex->inputs[mk] : NULL;
  p->bias = has_bias ? &ex->inputs[bs] : NULL;
  p->grad = NULL;
  p->batch = n;
  p->in_channels = cin;
  p->height = h;
  p->width = wd;
  p->out_channels = cout;
  p->kernel_h = kh;
  p->kernel_w = kw;
  p->out_h = hout;
  p->out_w = wout;
  p->stride_h = sh;
  p->stride_w = sw;
  p->pad_h = ph;
  p->pad_w = pw;
  p->dilation_h = dh;
  p->dilation_w = dw;
  p->groups = groups;
  p->offset_groups = og;
  p->out = NULL;
  p->grad_input = p->grad_weight = p->grad_offset = p->grad_mask = p->grad_bias = NULL;
  ex->dtype = x->dtype;
  return VO_OK;
}

vo_status vo_check_deform_conv2d(vo_exec *ex) {
  vo_status st = vo_check_deform_common(ex, 0);
  if (st != VO_OK) return st;
  vo_deform_conv2d_params *p = &ex->p.deform_conv2d;
  const int64_t shape[4] = {p->batch, p->out_channels, p->out_h, p->out_w};
  vo_set_output(ex, 0, ex->dtype, 4, shape);
  p->out = &ex->outputs[0];
  return VO_OK;
}

vo_status vo_check_deform_conv2d_backward(vo_exec *ex) {
  vo_status st;
  const int64_t any4[4] = {-1, -1, -1, -1};
  if ((st = vo_expect_shape(ex, 0, 4, any4, "N, Cout, Hout, Wout")) != VO_OK) return st;
  if ((st = vo_check_deform_common(ex, 1)) != VO_OK) return st;
  if ((st = vo_expect_same_dtype(ex, 0, ARG_INPUT + 1)) != VO_OK) return st;
  vo_deform_conv2d_params *p = &ex->p.deform_conv2d;
  const int64_t grad_dims[4] = {p->batch, p->out_channels, p->out_h, p->out_w};
  if ((st = vo_expect_dims4(ex, 0, grad_dims)) != VO_OK) return st;
  const int64_t taps = p->kernel_h * p->kernel_w;
  const int64_t gin[4] = {p->batch, p->in_channels, p->height, p->width};
  const int64_t gw[4] = {p->out_channels, p->in_channels / p->groups, p->kernel_h, p->kernel_w};
  const int64_t goff[4] = {p->batch, 2 * p->offset_groups * taps, p->out_h, p->out_w};
  const int64_t gmask[4] = {p->batch, p->offset_groups * taps, p->out_h, p->out_w};
  const int64_t gbias[1] = {p->out_channels};
  if ((st = vo_expect_fits4(ex, "grad_input", gin)) != VO_OK) return st;
  if ((st = vo_expect_fits4(ex, "grad_offset", goff)) != VO_OK) return st;
  vo_set_output(ex, 0, ex->dtype, 4, gin);
  vo_set_output(ex, 1, ex->dtype, 4, gw);
  vo_set_output(ex, 2, ex->dtype, 4, goff);
  vo_set_output(ex, 3, ex->dtype, 4, gmask);
  vo_set_output(ex, 4, ex->dtype, 1, gbias);
  p->grad = &ex->inputs[0];
  p->grad_input = &ex->outputs[0];
  p->grad_weight = &ex->outputs[1];
  p->grad_offset = &ex->outputs[2];
  p->grad_mask = &ex->outputs[3];
  p->grad_bias = &ex->outputs[4];
  return VO_OK;
}

/* The boxed argument list both wrappers share, after an optional grad. */
static int vo_deform_args(vo_value *args, const DLTensor *grad, const DLTensor *input,
                          const DLTensor *weight, const DLTensor *offset, const DLTensor *mask,
                          const DLTensor *bias, int64_t stride_h, int64_t stride_w, int64_t pad_h,
                          int64_t pad_w, int64_t dilation_h, int64_t dilation_w, int64_t groups,
                          int64_t offset_groups) {
  int k = 0;
  if (grad) args[k++] = vo_tensor_value(grad);
  args[k++] = vo_tensor_value(input);
  args[k++] = vo_tensor_value(weight);
  args[k++] = vo_tensor_value(offset);
  args[k++] = vo_tensor_value(mask);
  args[k++] = vo_tensor_value(bias);
  const int64_t ints[8] = {stride_h,   stride_w,   pad_h,  pad_w,
                           dilation_h, dilation_w, groups, offset_groups};
  k += vo_box_ints(args + k, ints, 8);
  args[k++] = vo_bool_value(mask != NULL);
  return k;
}

vo_status vo_deform_conv2d_shape(const vo_context *ctx, const DLTensor *input,
                                 const DLTensor *weight, const DLTensor *offset,
                                 const DLTensor *mask, const DLTensor *bias, int64_t stride_h,
                                 int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h,
                                 int64_t dilation_w, int64_t groups, int64_t offset_groups,
                                 vo_tensor_desc *out) {
  vo_value args[NUM_FORWARD_ARGS];
  int k = vo_deform_args(args, NULL, input, weight, offset, mask, bias, stride_h, stride_w, pad_h,
                         pad_w, dilation_h, dilation_w, groups, offset_groups);
  return vo_infer(ctx, vo_op_get(VO_OP_deform_conv2d), args, k, out, 1);
}

vo_status vo_deform_conv2d(const vo_context *ctx, const DLTensor *input, const DLTensor *weight,
                           const DLTensor *offset, const DLTensor *mask, const DLTensor *bias,
                           int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                           int64_t dilation_h, int64_t dilation_w, int64_t groups,
                           int64_t offset_groups, DLTensor *out) {
  vo_value args[NUM_FORWARD_ARGS];
  int k = vo_deform_args(args, NULL, input, weight, offset, mask, bias, stride_h, stride_w, pad_h,
                         pad_w, dilation_h, dilation_w, groups, offset_groups);
  DLTensor *const outs[] = {out};
  return vo_call(ctx, vo_op_get(VO_OP_deform_conv2d), args, k, outs, 1);
}

vo_status vo_deform_conv2d_backward(
    const vo_context *ctx, const DLTensor *grad, const DLTensor *input, const DLTensor *weight,
    const DLTensor *offset, const DLTensor *mask, const DLTensor *bias, int64_t stride_h,
    int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
    int64_t groups, int64_t offset_groups, DLTensor *grad_input, DLTensor *grad_weight,
    DLTensor *grad_offset, DLTensor *grad_mask, DLTensor *grad_bias) {
  vo_value args[NUM_FORWARD_ARGS + 1];
  if (!grad) return vo_fail(VO_ERROR_INVALID_ARGUMENT, "deform_conv2d_backward: grad is NULL");
  int k = vo_deform_args(args, grad, input, weight, offset, mask, bias, stride_h, stride_w, pad_h,
                         pad_w, dilation_h, dilation_w, groups, offset_groups);
  DLTensor *const outs[] = {grad_input, grad_weight, grad_offset, grad_mask, grad_bias};
  return vo_call(ctx, vo_op_get(VO_OP_deform_conv2d_backward), args, k, outs, 5);
}
