/*
 * CPU kernels for box_area and box_area_backward: OpenMP loops over the
 * work items of kernels/box_area.h (one box per forward item, one element
 * of the [N, 4] gradient per backward item, each with one owning thread).
 */
#include "cpu/common.h"
#include "kernels/box_area.h"

/* One-thread cost of an item in nanoseconds (a strided gather of four
 * coordinates and a store: a coarse estimate). */
#define VO_BA_ITEM_NS 1.0

/* Area i into out[i], in the output dtype of the boxes' dtype. */
static void store_area(const void *boxes, const vo_k_box_area_args *a, int64_t i, void *out) {
  switch (a->boxes_dtype) {
    case VO_F32: ((float *)out)[i] = vo_k_box_area_at_f32(boxes, a, i); break;
    case VO_F64: ((double *)out)[i] = vo_k_box_area_at_f64(boxes, a, i); break;
    case VO_F16: ((float *)out)[i] = vo_k_box_area_at_f16(boxes, a, i); break;
    case VO_BF16: ((float *)out)[i] = vo_k_box_area_at_bf16(boxes, a, i); break;
    case VO_I64: ((int64_t *)out)[i] = vo_k_box_area_i64_at(boxes, a, i); break;
    default: /* int32, int16, int8, uint8: int32 areas */
      ((int32_t *)out)[i] = vo_k_box_area_i32_at(boxes, a, i);
  }
}

/* Gradient element e into out[e], in the boxes' dtype. */
static void store_grad(const void *boxes, const void *grad, const vo_k_box_area_args *a, int64_t e,
                       void *out) {
  switch (a->boxes_dtype) {
    case VO_F64: ((double *)out)[e] = vo_k_box_area_grad_at_f64(boxes, grad, a, e); break;
    case VO_F16:
      ((uint16_t *)out)[e] = vo_f32_to_f16(vo_k_box_area_grad_at_f16(boxes, grad, a, e));
      break;
    case VO_BF16:
      ((uint16_t *)out)[e] = vo_f32_to_bf16(vo_k_box_area_grad_at_bf16(boxes, grad, a, e));
      break;
    default: ((float *)out)[e] = vo_k_box_area_grad_at_f32(boxes, grad, a, e);
  }
}

vo_status vo_cpu_box_area(const vo_exec *ex) {
  const vo_view *boxes = &ex->inputs[0];
  const int64_t n = boxes->shape[0];
  const vo_k_box_area_args a = vo_k_box_area_args_of((int)boxes->dtype, boxes->stride, 0, 0);
  const void *src = vo_view_addr(boxes);
  void *dst = vo_view_addr(&ex->outputs[0]);
  const int t = vo_cpu_threads_for(ex->ctx, n, VO_BA_ITEM_NS * (double)n);
  VO_CPU_FOR(t, i, 0, n, { store_area(src, &a, i, dst); });
  return VO_OK;
}

vo_status vo_cpu_box_area_backward(const vo_exec *ex) {
  const vo_view *grad = &ex->inputs[0], *boxes = &ex->inputs[1];
  const int64_t n = 4 * boxes->shape[0];
  const vo_k_box_area_args a =
      vo_k_box_area_args_of((int)boxes->dtype, boxes->stride, (int)grad->dtype, grad->stride[0]);
  const void *src = vo_view_addr(boxes), *g = vo_view_addr(grad);
  void *dst = vo_view_addr(&ex->outputs[0]);
  const int t = vo_cpu_threads_for(ex->ctx, n, VO_BA_ITEM_NS * (double)n);
  VO_CPU_FOR(t, e, 0, n, { store_grad(src, g, &a, e, dst); });
  return VO_OK;
}
