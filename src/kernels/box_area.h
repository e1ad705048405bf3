/*
 * box_area in the portable kernel dialect (kernels/compat.h), written once
 * for the CPU's plain path and the device kernels: the area
 * (x2 - x1) * (y2 - y1) of box i in torchvision's arithmetic (float boxes
 * in the compute type; integer boxes in int32, or int64 for int64 boxes,
 * wrapping on overflow as torch's integer tensors do), and the gradient of
 * one element of the [N, 4] boxes as torchvision's autograd computes it.
 * Per storage type: functions suffixed _f32, _f64, _f16, _bf16 (storage
 * pointers float, double, uint16_t), computing in VO_T. This header holds
 * its per-dtype body too: it includes itself once per storage type, with
 * VO_K_BOX_AREA_BODY defined.
 */
#ifndef VO_K_BOX_AREA_BODY
#ifndef VISIONOPS_KERNELS_BOX_AREA_H
#define VISIONOPS_KERNELS_BOX_AREA_H

#include "kernels/compat.h"

/* A call's layouts (elements): boxes [N, 4] of dtype boxes_dtype; grad [N]
 * (backward only) of any float dtype. Outputs are contiguous. */
typedef struct vo_k_box_area_args {
  int boxes_dtype;
  int64_t boxes_stride[2];
  int grad_dtype;
  int64_t grad_stride;
} vo_k_box_area_args;

/* The args from a call's dtypes and strides (grad_stride 0 and grad_dtype
 * unused in the forward); what each backend's glue fills. */
VO_KFN vo_k_box_area_args vo_k_box_area_args_of(int boxes_dtype, const int64_t *boxes_stride,
                                                int grad_dtype, int64_t grad_stride) {
  vo_k_box_area_args a;
  a.boxes_dtype = boxes_dtype;
  a.boxes_stride[0] = boxes_stride[0];
  a.boxes_stride[1] = boxes_stride[1];
  a.grad_dtype = grad_dtype;
  a.grad_stride = grad_stride;
  return a;
}

/* Coordinate k of box i of integer boxes (int64, int32, int16, int8, uint8). */
VO_KFN int64_t vo_k_box_area_int_coord(const VO_GLOBAL void *boxes, const vo_k_box_area_args *a,
                                       int64_t i, int64_t k) {
  return vo_k_load_int(boxes, a->boxes_dtype, i * a->boxes_stride[0] + k * a->boxes_stride[1]);
}

/* The area of box i of integer boxes in int64 (unsigned arithmetic: torch's
 * wrap-around, without C's undefined signed overflow). */
VO_KFN int64_t vo_k_box_area_i64_at(const VO_GLOBAL void *boxes, const vo_k_box_area_args *a,
                                    int64_t i) {
  const uint64_t w = (uint64_t)vo_k_box_area_int_coord(boxes, a, i, 2) -
                     (uint64_t)vo_k_box_area_int_coord(boxes, a, i, 0);
  const uint64_t h = (uint64_t)vo_k_box_area_int_coord(boxes, a, i, 3) -
                     (uint64_t)vo_k_box_area_int_coord(boxes, a, i, 1);
  return (int64_t)(w * h);
}

/* The area of box i of the narrower integer boxes, in int32 as torchvision
 * (which converts them to int32 first): int32's wrap-around is the low 32
 * bits of int64's, and their coordinates are exact in both. */
VO_KFN int32_t vo_k_box_area_i32_at(const VO_GLOBAL void *boxes, const vo_k_box_area_args *a,
                                    int64_t i) {
  return (int32_t)(uint32_t)(uint64_t)vo_k_box_area_i64_at(boxes, a, i);
}

#define VO_K_BOX_AREA_BODY
#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/box_area.h"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/box_area.h"
#include "kernels/dtype_end.h"

#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "kernels/box_area.h"
#include "kernels/dtype_end.h"

#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "kernels/box_area.h"
#include "kernels/dtype_end.h"
#undef VO_K_BOX_AREA_BODY

#endif /* VISIONOPS_KERNELS_BOX_AREA_H */
#elif VO_S_ENABLED
/* VO_K_BOX_AREA_BODY: the body for one storage type VO_S (VO_S_ENABLED: see
 * kernels/dtype_begin.h). */

/* The area of box i of float boxes, in the compute type (half types are
 * upcast to float32 first, as torchvision's _upcast). */
VO_KFN VO_T VO_SN(vo_k_box_area_at)(const VO_GLOBAL VO_S *boxes, const vo_k_box_area_args *a,
                                    int64_t i) {
  const VO_GLOBAL VO_S *b = boxes + i * a->boxes_stride[0];
  const int64_t s = a->boxes_stride[1];
  return (VO_LD(b, 2 * s) - VO_LD(b, 0)) * (VO_LD(b, 3 * s) - VO_LD(b, s));
}

/* Element e (box e / 4, coordinate e % 4) of the gradient with respect to
 * the boxes, given grad [N]: torchvision's autograd through
 * (x2 - x1) * (y2 - y1) gives x2 grad * h and y2 grad * w (the product's
 * rule, h and w in the compute type), and x1, y1 their negatives. torch
 * sums each column's gradient with the other columns' zeros, which turns a
 * -0 into +0: hence 0 - d and d + 0, which change nothing else. */
VO_KFN VO_T VO_SN(vo_k_box_area_grad_at)(const VO_GLOBAL VO_S *boxes, const VO_GLOBAL void *grad,
                                         const vo_k_box_area_args *a, int64_t e) {
  const int64_t i = e / 4, k = e - 4 * i;
  const VO_GLOBAL VO_S *b = boxes + i * a->boxes_stride[0];
  const int64_t s = a->boxes_stride[1];
  const VO_T g = (VO_T)vo_k_load_as_double(grad, a->grad_dtype, i * a->grad_stride);
  const VO_T side = (k & 1) ? VO_LD(b, 2 * s) - VO_LD(b, 0) : VO_LD(b, 3 * s) - VO_LD(b, s);
  const VO_T d = g * side;
  return k < 2 ? (VO_T)0 - d : d + (VO_T)0;
}

#endif /* VO_K_BOX_AREA_BODY */
