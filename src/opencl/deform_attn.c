/*
 * OpenCL deform_attn and _deform_attn_backward: the host glue of
 * opencl/deform_attn.cl, as src/cuda/deform_attn.cu runs the same items.
 * Forward: one work item per output element. Backward: one item per sample
 * for grad_sampling_loc and grad_attn_weight (one owner each, any mode),
 * then grad_value accumulated in a zeroed compute-type buffer [n, S, M, D]:
 * atomics per output element (fast), or, under ctx->deterministic (and for
 * float64 without int64 atomics), one owner per (image, head, level,
 * channel) adding its samples in the CPU's order, so that the sums are the
 * CPU's bit for bit. float32 / float64 accumulate in grad_value itself; the
 * half types in a float32 workspace rounded once at the end, over runs of
 * images that fit ctx->workspace_limit.
 */
#include <stdio.h>

#include "kernels/deform_attn.h"
#include "opencl/roi_common.h"

enum { VO_DA_VALUE, VO_DA_SHAPES, VO_DA_STARTS, VO_DA_LOC, VO_DA_ATTN, VO_DA_GRAD };

/* The kernels' sizes and element strides from the call's views. */
static vo_k_deform_attn_args vo_cl_da_args(const vo_exec *ex, int backward) {
  const vo_view *in = ex->inputs;
  return vo_k_da_args_of(in[VO_DA_VALUE].shape, in[VO_DA_VALUE].stride, in[VO_DA_SHAPES].stride,
                         in[VO_DA_STARTS].stride[0], in[VO_DA_LOC].shape, in[VO_DA_LOC].stride,
                         in[VO_DA_ATTN].stride, backward ? in[VO_DA_GRAD].stride : NULL);
}

/* Kernel vo_cl_deform_attn<what>_<suffix of the call's dtype> started in l
 * with its leading arguments: the argument struct and the five inputs. */
static vo_status vo_cl_da_begin(vo_cl_launch *l, const vo_cl_call *c, const char *what,
                                const vo_k_deform_attn_args *a, const vo_view in[5]) {
  char name[64];
  snprintf(name, sizeof name, "vo_cl_deform_attn%s_%s", what,
           vo_cl_suffix(c->ex->inputs[VO_DA_VALUE].dtype));
  vo_status st = vo_cl_launch_begin(l, c, "deform_attn", name);
  if (st != VO_OK) return st;
  vo_cl_arg(l, a, sizeof *a);
  for (int k = 0; k < 5; k++) vo_cl_arg_view(l, &in[k]);
  return VO_OK;
}

vo_status vo_opencl_deform_attn(const vo_exec *ex) {
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  const vo_view *out = &ex->outputs[0];
  if (st != VO_OK || out->numel == 0) return st;
  const vo_k_deform_attn_args a = vo_cl_da_args(ex, 0);
  vo_cl_launch l;
  if ((st = vo_cl_da_begin(&l, &c, "", &a, ex->inputs)) != VO_OK) return st;
  vo_cl_arg_i64(&l, out->numel);
  vo_cl_arg_view(&l, out);
  return vo_cl_launch_run(&l, out->numel);
}

/* v with its first `first` entries of dimension 0 dropped. */
static vo_view vo_cl_da_skip(const vo_view *v, int64_t first) {
  vo_view r = *v;
  r.byte_offset =
      (uint64_t)((int64_t)v->byte_offset + first * v->stride[0] * (int64_t)vo_dtype_size(v->dtype));
  if (r.ndim > 0) r.shape[0] -= first;
  r.numel = 0; /* unused by the kernels' arguments */
  return r;
}

/* grad_value of images [n0, n0 + count) accumulated in gv (byte gv_off), a
 * zeroed compute-type buffer [count, S, M, D]: atomics or owners. */
static vo_status vo_cl_da_value_grad(const vo_cl_call *c, const vo_k_deform_attn_args *all,
                                     int atomic, int64_t n0, int64_t count, cl_mem gv,
                                     uint64_t gv_off) {
  const vo_exec *ex = c->ex;
  vo_k_deform_attn_args a = *all;
  a.batch = count;
  vo_view in[6];
  for (int k = 0; k < 6; k++)
    in[k] =
        k == VO_DA_SHAPES || k == VO_DA_STARTS ? ex->inputs[k] : vo_cl_da_skip(&ex->inputs[k], n0);
  const int64_t items =
      atomic ? count * a.queries * a.heads * a.channels : count * a.heads * a.levels * a.channels;
  if (items == 0) return VO_OK;
  vo_cl_launch l;
  vo_status st = vo_cl_da_begin(&l, c, atomic ? "_value_atomic" : "_value_scatter", &a, in);
  if (st != VO_OK) return st;
  vo_cl_arg_view(&l, &in[VO_DA_GRAD]);
  vo_cl_arg_i64(&l, items);
  vo_cl_arg_mem(&l, gv, gv_off);
  return vo_cl_launch_run(&l, items);
}

/* grad_value: zeroed, then the samples' contributions, straight into it
 * (float32, float64) or through a float32 workspace of as many images as
 * the workspace limit allows (half types). */
static vo_status vo_cl_da_grad_value(const vo_cl_call *c, const vo_k_deform_attn_args *a) {
  const vo_exec *ex = c->ex;
  const vo_view *gval = &ex->outputs[0];
  const vo_dtype dt = gval->dtype;
  const int atomic = !ex->ctx->deterministic && vo_cl_roi_atomics(c, dt);
  vo_status st = VO_OK;
  if (gval->numel == 0) return VO_OK;
  if (dt == VO_F32 || dt == VO_F64) {
    if ((st = vo_cl_roi_zero(c, gval)) != VO_OK) return st;
    return vo_cl_da_value_grad(c, a, atomic, 0, a->batch, (cl_mem)gval->data, gval->byte_offset);
  }
  const int64_t per_image = a->keys * a->heads * a->channels; /* > 0: gval is not empty */
  const uint64_t image_bytes = (uint64_t)per_image * sizeof(float);
  const size_t limit = ex->ctx->workspace_limit; /* never 0: the context sets its default */
  if (image_bytes > limit)
    return vo_fail(VO_ERROR_OUT_OF_MEMORY,
                   "%s: workspace limit %zu bytes is below the %llu bytes of float32 gradient one "
                   "image of value needs",
                   ex->op_name, limit, (unsigned long long)image_bytes);
  int64_t run = (int64_t)(limit / image_bytes);
  if (run > a->batch) run = a->batch;
  cl_mem acc = vo_cl_workspace(ex, (size_t)(image_bytes * (uint64_t)run));
  if (!acc) return VO_ERROR_OUT_OF_MEMORY;
  const size_t elem = vo_dtype_size(dt);
  for (int64_t n0 = 0; n0 < a->batch && st == VO_OK; n0 += run) {
    const int64_t count = a->batch - n0 < run ? a->batch - n0 : run;
    const float zero = 0;
    st = vo_cl_fill(c, acc, 0, &zero, sizeof zero, (size_t)(image_bytes * (uint64_t)count));
    if (st == VO_OK) st = vo_cl_da_value_grad(c, a, atomic, n0, count, acc, 0);
    if (st == VO_OK) {
      vo_view part = *gval;
      part.byte_offset += (uint64_t)(n0 * per_image) * elem;
      part.numel = count * per_image;
      st = vo_cl_roi_convert(c, "deform_attn", acc, 0, &part);
    }
  }
  vo_workspace_free(ex->ctx, ex->device, acc);
  return st;
}

vo_status vo_opencl_deform_attn_backward(const vo_exec *ex) {
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK) return st;
  const vo_k_deform_attn_args a = vo_cl_da_args(ex, 1);
  const vo_view *grad_loc = &ex->outputs[1], *grad_attn = &ex->outputs[2];
  /* one item per sample (n, q, m, l, p): grad_attn's elements */
  const int64_t samples = grad_attn->numel;
  if (samples > 0) {
    vo_cl_launch l;
    if ((st = vo_cl_da_begin(&l, &c, "_sample_grads", &a, ex->inputs)) != VO_OK) return st;
    vo_cl_arg_view(&l, &ex->inputs[VO_DA_GRAD]);
    vo_cl_arg_i64(&l, samples);
    vo_cl_arg_view(&l, grad_loc);
    vo_cl_arg_view(&l, grad_attn);
    if ((st = vo_cl_launch_run(&l, samples)) != VO_OK) return st;
  }
  return vo_cl_da_grad_value(&c, &a);
}
