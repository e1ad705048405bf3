/*
 * CPU kernels for box_convert and box_convert_backward: OpenMP loops over
 * the work items of kernels/box_convert.h (one box per item, each row of the
 * output with one owning thread).
 */
#include "cpu/common.h"
#include "kernels/box_convert.h"

/* One-thread cost of an item in nanoseconds (a strided gather of up to
 * eight coordinates, a few operations, sin and cos for the rotated
 * formats: a coarse estimate). */
#define VO_BC_ITEM_NS 10.0

/* Box i converted into out, by the boxes' dtype. */
static void convert_box(const void *boxes, const vo_k_box_convert_args *a, int64_t i, void *out) {
  switch (a->boxes_dtype) {
    case VO_F32: vo_k_box_convert_item_f32(boxes, out, a, i); break;
    case VO_F64: vo_k_box_convert_item_f64(boxes, out, a, i); break;
    case VO_F16: vo_k_box_convert_item_f16(boxes, out, a, i); break;
    case VO_BF16: vo_k_box_convert_item_bf16(boxes, out, a, i); break;
    default: vo_k_box_convert_int_item(boxes, out, a, i); /* integer boxes */
  }
}

/* Row i of the gradient into out, by the boxes' dtype. */
static void convert_grad(const void *boxes, const void *grad, const vo_k_box_convert_args *a,
                         int64_t i, void *out) {
  switch (a->boxes_dtype) {
    case VO_F64: vo_k_box_convert_grad_item_f64(boxes, grad, out, a, i); break;
    case VO_F16: vo_k_box_convert_grad_item_f16(boxes, grad, out, a, i); break;
    case VO_BF16: vo_k_box_convert_grad_item_bf16(boxes, grad, out, a, i); break;
    default: vo_k_box_convert_grad_item_f32(boxes, grad, out, a, i);
  }
}

vo_status vo_cpu_box_convert(const vo_exec *ex) {
  const vo_view *boxes = &ex->inputs[0];
  const int64_t n = boxes->shape[0];
  const vo_k_box_convert_args a = vo_k_box_convert_args_of(
      (int)ex->args[1].u.i, (int)ex->args[2].u.i, (int)boxes->dtype, boxes->stride, 0, NULL);
  const void *src = vo_view_addr(boxes);
  void *dst = vo_view_addr(&ex->outputs[0]);
  const int t = vo_cpu_threads_for(ex->ctx, n, VO_BC_ITEM_NS * (double)n);
  VO_CPU_FOR(t, i, 0, n, { convert_box(src, &a, i, dst); });
  return VO_OK;
}

vo_status vo_cpu_box_convert_backward(const vo_exec *ex) {
  const vo_view *grad = &ex->inputs[0], *boxes = &ex->inputs[1];
  const int64_t n = boxes->shape[0];
  const vo_k_box_convert_args a =
      vo_k_box_convert_args_of((int)ex->args[2].u.i, (int)ex->args[3].u.i, (int)boxes->dtype,
                               boxes->stride, (int)grad->dtype, grad->stride);
  const void *src = vo_view_addr(boxes), *g = vo_view_addr(grad);
  void *dst = vo_view_addr(&ex->outputs[0]);
  const int t = vo_cpu_threads_for(ex->ctx, n, VO_BC_ITEM_NS * (double)n);
  VO_CPU_FOR(t, i, 0, n, { convert_grad(src, g, &a, i, dst); });
  return VO_OK;
}
