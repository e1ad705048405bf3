/*
 * OpenCL box_iou and its generalized / distance / complete variants, forward
 * and backward: the host glue of opencl/box_iou.cl's entry points, one per
 * compute type (ex->dtype: float64 for float64 or integer boxes, as on the
 * CPU and CUDA), boxes and output read and written at their own dtypes.
 */
#include "opencl/common.h"

/* A [rows, cols] view's dtype code and strides as kernel arguments. */
static void vo_cl_arg_matrix(vo_cl_launch *l, const vo_view *v) {
  const int dtype = (int)v->dtype;
  vo_cl_arg_view(l, v);
  vo_cl_arg(l, &dtype, sizeof dtype);
  vo_cl_arg_i64(l, v->stride[0]);
  vo_cl_arg_i64(l, v->stride[1]);
}

static void vo_cl_arg_compute(vo_cl_launch *l, const vo_exec *ex, double v) {
  if (ex->dtype == VO_F64)
    vo_cl_arg_f64(l, v);
  else
    vo_cl_arg_f32(l, (float)v);
}

vo_status vo_opencl_pairwise_iou(const vo_exec *ex) {
  const vo_pairwise_iou_params *p = &ex->p.iou;
  const int64_t n = p->a->shape[0], m = p->b->shape[0];
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || n == 0 || m == 0) return st;
  const int kind = (int)p->kind, out_dtype = (int)p->out->dtype;
  vo_cl_launch l;
  st = vo_cl_launch_begin(
      &l, &c, "box_iou", ex->dtype == VO_F64 ? "vo_cl_pairwise_iou_f64" : "vo_cl_pairwise_iou_f32");
  if (st != VO_OK) return st;
  vo_cl_arg_matrix(&l, p->a);
  vo_cl_arg_matrix(&l, p->b);
  vo_cl_arg_i64(&l, n);
  vo_cl_arg_i64(&l, m);
  vo_cl_arg(&l, &kind, sizeof kind);
  vo_cl_arg_compute(&l, ex, p->eps);
  vo_cl_arg_view(&l, p->out);
  vo_cl_arg(&l, &out_dtype, sizeof out_dtype);
  return vo_cl_launch_run(&l, n * m);
}

/* The gradient of one box set (own), [count_own, 4] into out. */
static vo_status vo_cl_iou_backward_side(const vo_cl_call *c, const vo_view *own,
                                         const vo_view *other, const vo_view *out, int own_is_a) {
  const vo_exec *ex = c->ex;
  const vo_pairwise_iou_backward_params *p = &ex->p.iou_backward;
  const int kind = (int)p->kind, out_dtype = (int)out->dtype;
  vo_cl_launch l;
  vo_status st = vo_cl_launch_begin(
      &l, c, "box_iou",
      ex->dtype == VO_F64 ? "vo_cl_pairwise_iou_backward_f64" : "vo_cl_pairwise_iou_backward_f32");
  if (st != VO_OK) return st;
  vo_cl_arg_matrix(&l, p->grad);
  vo_cl_arg_matrix(&l, own);
  vo_cl_arg_matrix(&l, other);
  vo_cl_arg_i64(&l, own->shape[0]);
  vo_cl_arg_i64(&l, other->shape[0]);
  vo_cl_arg(&l, &own_is_a, sizeof own_is_a);
  vo_cl_arg(&l, &kind, sizeof kind);
  vo_cl_arg_compute(&l, ex, p->eps);
  vo_cl_arg_view(&l, out);
  vo_cl_arg(&l, &out_dtype, sizeof out_dtype);
  return vo_cl_launch_run(&l, own->shape[0]);
}

vo_status vo_opencl_pairwise_iou_backward(const vo_exec *ex) {
  const vo_pairwise_iou_backward_params *p = &ex->p.iou_backward;
  const int64_t n = p->a->shape[0], m = p->b->shape[0];
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK) return st;
  if (n == 0 || m == 0) {
    /* No pairs: the other side's gradient is all zeros. */
    const vo_view *z = n ? p->grad_a : p->grad_b;
    const unsigned char zero = 0;
    if (z->numel == 0) return VO_OK;
    return vo_cl_fill(&c, (cl_mem)z->data, z->byte_offset, &zero, 1,
                      (size_t)z->numel * vo_dtype_size(z->dtype));
  }
  st = vo_cl_iou_backward_side(&c, p->a, p->b, p->grad_a, 1);
  if (st == VO_OK) st = vo_cl_iou_backward_side(&c, p->b, p->a, p->grad_b, 0);
  return st;
}
