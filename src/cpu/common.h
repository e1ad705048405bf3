/*
 * Helpers for the CPU kernels: element loads/stores across the four float
 * dtypes, and boxes gathered into structure-of-arrays form for SIMD loops.
 */
#ifndef VISIONOPS_CPU_COMMON_H
#define VISIONOPS_CPU_COMMON_H

#include "core/half.h"
#include "core/internal.h"
#include "core/load.h"

/* Element loads and output stores per storage dtype, for kernels whose
 * input view is `in` and whose params are `p`. */
#define VO_LOAD_F32(i) (((const float *)in->data)[i])
#define VO_LOAD_F64(i) (((const double *)in->data)[i])
#define VO_LOAD_F16(i) vo_f16_to_f32(((const uint16_t *)in->data)[i])
#define VO_LOAD_BF16(i) vo_bf16_to_f32(((const uint16_t *)in->data)[i])
#define VO_STORE_F32(i, v) (((float *)p->out->data)[i] = (v))
#define VO_STORE_F64(i, v) (((double *)p->out->data)[i] = (v))
#define VO_STORE_F16(i, v) (((uint16_t *)p->out->data)[i] = vo_f32_to_f16(v))
#define VO_STORE_BF16(i, v) (((uint16_t *)p->out->data)[i] = vo_f32_to_bf16(v))

/* Boxes [N,4] in structure-of-arrays form, in the compute type (float for
 * float32/16/bfloat16, double for float64). */
typedef struct vo_cpu_boxes_f32 {
  float *x1, *y1, *x2, *y2;
} vo_cpu_boxes_f32;
typedef struct vo_cpu_boxes_f64 {
  double *x1, *y1, *x2, *y2;
} vo_cpu_boxes_f64;

/* Row `order[i]` (or row i when order is NULL) of `boxes` goes to slot i,
 * for i in [0, n). */
void vo_cpu_gather_boxes_f32(const vo_view *boxes, const int64_t *order, int64_t n,
                             vo_cpu_boxes_f32 *out);
void vo_cpu_gather_boxes_f64(const vo_view *boxes, const int64_t *order, int64_t n,
                             vo_cpu_boxes_f64 *out);

/* Kernels that other kernels build on (multi_scale_roi_align runs roi_align
 * once per pyramid level). */
vo_status vo_cpu_roi_align(const vo_exec *ex);
vo_status vo_cpu_roi_align_backward(const vo_exec *ex);

#endif /* VISIONOPS_CPU_COMMON_H */
