/*
 * box_convert in the portable kernel dialect (kernels/compat.h), written
 * once for the CPU's plain path and the device kernels: one box's
 * conversion between torchvision's formats (xyxy, xywh, cxcywh; cxcywhr,
 * xywhr, xyxyxyxy) in torchvision 0.29's arithmetic, operation by
 * operation, and its gradient with respect to the box as torch's autograd
 * computes it through that arithmetic.
 *
 * A pair of formats is one or two steps (torchvision's chain: xywh ->
 * cxcywh is xywh -> xyxy -> cxcywh). Float boxes compute in their own
 * dtype: float32 / float64 in VO_T, the half types in float32 with every
 * operation's result rounded to the storage type, as torch's elementwise
 * ops do. Integer boxes follow torch's type promotion: the axis-aligned
 * steps' sums and differences wrap in the boxes' dtype, their halvings
 * promote to float32 (those pairs give float32), and the rotated steps
 * compute in float32 and round half to even back to the boxes' dtype.
 * Per storage type: functions suffixed _f32, _f64, _f16, _bf16. This header
 * holds its per-dtype body too: it includes itself once per storage type,
 * with VO_K_BOX_CONVERT_BODY defined.
 */
#ifndef VO_K_BOX_CONVERT_BODY
#ifndef VISIONOPS_KERNELS_BOX_CONVERT_H
#define VISIONOPS_KERNELS_BOX_CONVERT_H

#include "kernels/compat.h"

/* Formats: the values of vo_box_format (include/visionops/visionops.h). */
#define VO_K_BOX_XYXY 0
#define VO_K_BOX_XYWH 1
#define VO_K_BOX_CXCYWH 2
#define VO_K_BOX_CXCYWHR 3
#define VO_K_BOX_XYWHR 4
#define VO_K_BOX_XYXYXYXY 5
#define VO_K_BOX_NUM_FORMATS 6

/* The steps a conversion is made of (torchvision's private converters). */
#define VO_K_BC_XYWH_TO_XYXY 0
#define VO_K_BC_CXCYWH_TO_XYXY 1
#define VO_K_BC_XYXY_TO_XYWH 2
#define VO_K_BC_XYXY_TO_CXCYWH 3
#define VO_K_BC_CXCYWHR_TO_XYWHR 4
#define VO_K_BC_XYWHR_TO_CXCYWHR 5
#define VO_K_BC_XYWHR_TO_XYXYXYXY 6
#define VO_K_BC_XYXYXYXY_TO_XYWHR 7

/* Coordinates per box of format fmt: 4, 5 or 8. */
VO_KFN int vo_k_box_format_size(int fmt) { return 4 + fmt / 3 + 3 * (fmt / 5); }

/* The steps of the conversion in_fmt -> out_fmt into steps[0..1]: their
 * count (0: the same format, a copy), or -1 for a pair torchvision does not
 * convert (axis-aligned <-> rotated, or a format out of range). */
VO_KFN int vo_k_box_convert_steps(int in_fmt, int out_fmt, int *steps) {
  if (in_fmt < 0 || in_fmt >= VO_K_BOX_NUM_FORMATS || out_fmt < 0 ||
      out_fmt >= VO_K_BOX_NUM_FORMATS || (in_fmt < 3) != (out_fmt < 3))
    return -1;
  if (in_fmt == out_fmt) return 0;
  switch (in_fmt * VO_K_BOX_NUM_FORMATS + out_fmt) {
    case VO_K_BOX_XYWH *VO_K_BOX_NUM_FORMATS + VO_K_BOX_XYXY:
      steps[0] = VO_K_BC_XYWH_TO_XYXY;
      return 1;
    case VO_K_BOX_CXCYWH *VO_K_BOX_NUM_FORMATS + VO_K_BOX_XYXY:
      steps[0] = VO_K_BC_CXCYWH_TO_XYXY;
      return 1;
    case VO_K_BOX_XYXY *VO_K_BOX_NUM_FORMATS + VO_K_BOX_XYWH:
      steps[0] = VO_K_BC_XYXY_TO_XYWH;
      return 1;
    case VO_K_BOX_XYXY *VO_K_BOX_NUM_FORMATS + VO_K_BOX_CXCYWH:
      steps[0] = VO_K_BC_XYXY_TO_CXCYWH;
      return 1;
    case VO_K_BOX_XYWH *VO_K_BOX_NUM_FORMATS + VO_K_BOX_CXCYWH:
      steps[0] = VO_K_BC_XYWH_TO_XYXY;
      steps[1] = VO_K_BC_XYXY_TO_CXCYWH;
      return 2;
    case VO_K_BOX_CXCYWH *VO_K_BOX_NUM_FORMATS + VO_K_BOX_XYWH:
      steps[0] = VO_K_BC_CXCYWH_TO_XYXY;
      steps[1] = VO_K_BC_XYXY_TO_XYWH;
      return 2;
    case VO_K_BOX_CXCYWHR *VO_K_BOX_NUM_FORMATS + VO_K_BOX_XYWHR:
      steps[0] = VO_K_BC_CXCYWHR_TO_XYWHR;
      return 1;
    case VO_K_BOX_XYWHR *VO_K_BOX_NUM_FORMATS + VO_K_BOX_CXCYWHR:
      steps[0] = VO_K_BC_XYWHR_TO_CXCYWHR;
      return 1;
    case VO_K_BOX_CXCYWHR *VO_K_BOX_NUM_FORMATS + VO_K_BOX_XYXYXYXY:
      steps[0] = VO_K_BC_CXCYWHR_TO_XYWHR;
      steps[1] = VO_K_BC_XYWHR_TO_XYXYXYXY;
      return 2;
    case VO_K_BOX_XYXYXYXY *VO_K_BOX_NUM_FORMATS + VO_K_BOX_CXCYWHR:
      steps[0] = VO_K_BC_XYXYXYXY_TO_XYWHR;
      steps[1] = VO_K_BC_XYWHR_TO_CXCYWHR;
      return 2;
    case VO_K_BOX_XYWHR *VO_K_BOX_NUM_FORMATS + VO_K_BOX_XYXYXYXY:
      steps[0] = VO_K_BC_XYWHR_TO_XYXYXYXY;
      return 1;
    default: /* xyxyxyxy -> xywhr, the last rotated pair */
      steps[0] = VO_K_BC_XYXYXYXY_TO_XYWHR;
      return 1;
  }
}

/* Whether integer boxes converted from in_fmt to out_fmt come out float32
 * (a step halves or multiplies by 0.5, which torch promotes: cxcywh on
 * either side of an axis-aligned pair) rather than in their own dtype. */
VO_KFN int vo_k_box_convert_int_gives_float(int in_fmt, int out_fmt) {
  return in_fmt != out_fmt && (in_fmt == VO_K_BOX_CXCYWH || out_fmt == VO_K_BOX_CXCYWH);
}

/* A call's layouts (elements): boxes [N, K_in] of dtype boxes_dtype; grad
 * [N, K_out] (backward only) of any float dtype. Outputs are contiguous. */
typedef struct vo_k_box_convert_args {
  int in_fmt, out_fmt;
  int boxes_dtype;
  int64_t boxes_stride[2];
  int grad_dtype;
  int64_t grad_stride[2];
} vo_k_box_convert_args;

/* The args from a call's formats, dtypes and strides (grad_stride NULL in
 * the forward); what each backend's glue fills. */
VO_KFN vo_k_box_convert_args vo_k_box_convert_args_of(int in_fmt, int out_fmt, int boxes_dtype,
                                                      const int64_t *boxes_stride, int grad_dtype,
                                                      const int64_t *grad_stride) {
  vo_k_box_convert_args a;
  a.in_fmt = in_fmt;
  a.out_fmt = out_fmt;
  a.boxes_dtype = boxes_dtype;
  a.boxes_stride[0] = boxes_stride[0];
  a.boxes_stride[1] = boxes_stride[1];
  a.grad_dtype = grad_dtype;
  a.grad_stride[0] = grad_stride ? grad_stride[0] : 0;
  a.grad_stride[1] = grad_stride ? grad_stride[1] : 0;
  return a;
}

/* sin, cos and atan2 of a compute-type value in vo_k_double (double; float
 * on a device without fp64), rounded to float32 by the caller. */
#define VO_K_BC_COS(x) cos((vo_k_double)(x))
#define VO_K_BC_SIN(x) sin((vo_k_double)(x))
#define VO_K_BC_ATAN2(y, x) atan2((vo_k_double)(y), (vo_k_double)(x))

#define VO_K_BOX_CONVERT_BODY
#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/box_convert.h"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/box_convert.h"
#include "kernels/dtype_end.h"

#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "kernels/box_convert.h"
#include "kernels/dtype_end.h"

#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "kernels/box_convert.h"
#include "kernels/dtype_end.h"
#undef VO_K_BOX_CONVERT_BODY

/* ------------------------------------------------------ integer boxes */

/* v wrapped to integer dtype `dtype` (int64, int32, int16, int8, uint8), as
 * torch's integer arithmetic wraps; unsigned arithmetic before, so nothing
 * overflows in C. */
VO_KFN int64_t vo_k_bc_wrap(uint64_t v, int dtype) {
  switch (dtype) {
    case VO_DT_I32: return (int32_t)(uint32_t)v;
    case VO_DT_I16: return (int16_t)(uint16_t)v;
    case VO_DT_I8: return (int8_t)(uint8_t)v;
    case VO_DT_U8: return (uint8_t)v;
    default: return (int64_t)v;
  }
}

/* A float32 result of a rotated step back in integer dtype `dtype`: rounded
 * half to even (torch's round_), then converted. Values outside int64 (and
 * NaN) become INT64_MIN, x86's conversion result; narrower dtypes wrap. */
VO_KFN int64_t vo_k_bc_round_to_int(float v, int dtype) {
  const vo_k_double r = rint((vo_k_double)v);
  const int64_t i = r >= -9223372036854775808.0 && r < 9223372036854775808.0
                        ? (int64_t)r
                        : (int64_t)((uint64_t)1 << 63);
  return vo_k_bc_wrap((uint64_t)i, dtype);
}

/* One step on integer values v (in the boxes' dtype; is_float: v are
 * float32 values already, after a step that promoted them), into f (float32
 * results) or v (integer results, returned 0) as the step gives: returns 1
 * when its results are float32 (in f). */
VO_KFN int vo_k_bc_int_step(int64_t *v, float *f, int is_float, int step, int dtype) {
  if (is_float) {
    vo_k_bc_step_f32(f, step);
    return 1;
  }
  switch (step) {
    case VO_K_BC_XYWH_TO_XYXY:
      v[2] = vo_k_bc_wrap((uint64_t)v[0] + (uint64_t)v[2], dtype);
      v[3] = vo_k_bc_wrap((uint64_t)v[1] + (uint64_t)v[3], dtype);
      return 0;
    case VO_K_BC_XYXY_TO_XYWH:
      v[2] = vo_k_bc_wrap((uint64_t)v[2] - (uint64_t)v[0], dtype);
      v[3] = vo_k_bc_wrap((uint64_t)v[3] - (uint64_t)v[1], dtype);
      return 0;
    case VO_K_BC_XYXY_TO_CXCYWH: /* integer sums, true division in float32 */
      f[0] = (float)vo_k_bc_wrap((uint64_t)v[0] + (uint64_t)v[2], dtype) / 2.0f;
      f[1] = (float)vo_k_bc_wrap((uint64_t)v[1] + (uint64_t)v[3], dtype) / 2.0f;
      f[2] = (float)vo_k_bc_wrap((uint64_t)v[2] - (uint64_t)v[0], dtype);
      f[3] = (float)vo_k_bc_wrap((uint64_t)v[3] - (uint64_t)v[1], dtype);
      return 1;
    case VO_K_BC_XYXYXYXY_TO_XYWHR: { /* integer differences and squares */
      const uint64_t dx = (uint64_t)vo_k_bc_wrap((uint64_t)v[2] - (uint64_t)v[0], dtype);
      const uint64_t dy = (uint64_t)vo_k_bc_wrap((uint64_t)v[1] - (uint64_t)v[3], dtype);
      const uint64_t ex = (uint64_t)vo_k_bc_wrap((uint64_t)v[4] - (uint64_t)v[2], dtype);
      const uint64_t ey = (uint64_t)vo_k_bc_wrap((uint64_t)v[5] - (uint64_t)v[3], dtype);
      const int64_t ww = vo_k_bc_wrap(
          (uint64_t)vo_k_bc_wrap(dx * dx, dtype) + (uint64_t)vo_k_bc_wrap(dy * dy, dtype), dtype);
      const int64_t hh = vo_k_bc_wrap(
          (uint64_t)vo_k_bc_wrap(ex * ex, dtype) + (uint64_t)vo_k_bc_wrap(ey * ey, dtype), dtype);
      const float rad = (float)VO_K_BC_ATAN2((float)(int64_t)dy, (float)(int64_t)dx);
      f[0] = (float)v[0];
      f[1] = (float)v[1];
      f[2] = sqrtf((float)ww);
      f[3] = sqrtf((float)hh);
      f[4] = rad * 180.0f / (float)3.141592653589793;
      return 1;
    }
    default: /* cxcywh -> xyxy and the other rotated steps: in float32 */
      for (int k = 0; k < 8; k++) f[k] = (float)v[k];
      vo_k_bc_step_f32(f, step);
      return 1;
  }
}

/* Box i of integer boxes converted: out [N, K_out] is float32 where
 * vo_k_box_convert_int_gives_float, else the boxes' dtype. */
VO_KFN void vo_k_box_convert_int_item(const VO_GLOBAL void *boxes, VO_GLOBAL void *out,
                                      const vo_k_box_convert_args *a, int64_t i) {
  int steps[2] = {0, 0};
  const int count = vo_k_box_convert_steps(a->in_fmt, a->out_fmt, steps);
  const int k_in = vo_k_box_format_size(a->in_fmt), k_out = vo_k_box_format_size(a->out_fmt);
  const int dtype = a->boxes_dtype, rotated = a->in_fmt >= VO_K_BOX_CXCYWHR;
  int64_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  float f[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int k = 0; k < k_in; k++)
    v[k] = vo_k_load_int(boxes, dtype, i * a->boxes_stride[0] + k * a->boxes_stride[1]);
  int is_float = 0;
  for (int s = 0; s < count; s++) {
    is_float = vo_k_bc_int_step(v, f, is_float, steps[s], dtype);
    if (rotated) { /* each rotated step rounds and casts back */
      for (int k = 0; k < 8; k++) v[k] = vo_k_bc_round_to_int(f[k], dtype);
      is_float = 0;
    }
  }
  const int64_t o = i * k_out;
  if (is_float) {
    for (int k = 0; k < k_out; k++) ((VO_GLOBAL float *)out)[o + k] = f[k];
    return;
  }
  for (int k = 0; k < k_out; k++) {
    switch (dtype) {
      case VO_DT_I64: ((VO_GLOBAL int64_t *)out)[o + k] = v[k]; break;
      case VO_DT_I32: ((VO_GLOBAL int32_t *)out)[o + k] = (int32_t)v[k]; break;
      case VO_DT_I16: ((VO_GLOBAL int16_t *)out)[o + k] = (int16_t)v[k]; break;
      case VO_DT_I8: ((VO_GLOBAL int8_t *)out)[o + k] = (int8_t)v[k]; break;
      default: ((VO_GLOBAL uint8_t *)out)[o + k] = (uint8_t)v[k];
    }
  }
}

#undef VO_K_BC_COS
#undef VO_K_BC_SIN
#undef VO_K_BC_ATAN2

#endif /* VISIONOPS_KERNELS_BOX_CONVERT_H */
#elif VO_S_ENABLED
/* VO_K_BOX_CONVERT_BODY: the body for one storage type VO_S (VO_S_ENABLED:
 * see kernels/dtype_begin.h). */

/* R(x): x rounded to the storage type, where every torch op rounds its
 * result (the half types); the identity for float32 and float64. */
#if defined(VO_S_F16)
#define VO_K_BC_R(x) vo_k_f16_to_f32(vo_k_f32_to_f16(x))
#elif defined(VO_S_BF16)
#define VO_K_BC_R(x) vo_k_bf16_to_f32(vo_k_f32_to_bf16(x))
#else
#define VO_K_BC_R(x) (x)
#endif

/* torch.pi in the compute type (torch's scalar operand, as the op's type). */
#define VO_K_BC_PI ((VO_T)3.141592653589793)

/* Cosine and sine of an angle r in degrees, r * pi / 180 in torch's order. */
VO_KFN void VO_SN(vo_k_bc_cos_sin)(VO_T r, VO_T *c, VO_T *s) {
  const VO_T rad = VO_K_BC_R(VO_K_BC_R(r * VO_K_BC_PI) / (VO_T)180);
  *c = VO_K_BC_R((VO_T)VO_K_BC_COS(rad));
  *s = VO_K_BC_R((VO_T)VO_K_BC_SIN(rad));
}

/* One step on v[0..7] in place (the first K_in are the step's input, the
 * first K_out its output), each operation as torchvision writes it. */
VO_KFN void VO_SN(vo_k_bc_step)(VO_T *v, int step) {
  VO_T c, s;
  switch (step) {
    case VO_K_BC_XYWH_TO_XYXY: /* x, y, x + w, y + h */
      v[2] = VO_K_BC_R(v[0] + v[2]);
      v[3] = VO_K_BC_R(v[1] + v[3]);
      break;
    case VO_K_BC_CXCYWH_TO_XYXY: { /* cx -+ 0.5 * w, cy -+ 0.5 * h */
      const VO_T hw = VO_K_BC_R((VO_T)0.5 * v[2]), hh = VO_K_BC_R((VO_T)0.5 * v[3]);
      const VO_T cx = v[0], cy = v[1];
      v[0] = VO_K_BC_R(cx - hw);
      v[1] = VO_K_BC_R(cy - hh);
      v[2] = VO_K_BC_R(cx + hw);
      v[3] = VO_K_BC_R(cy + hh);
      break;
    }
    case VO_K_BC_XYXY_TO_XYWH: /* x1, y1, x2 - x1, y2 - y1 */
      v[2] = VO_K_BC_R(v[2] - v[0]);
      v[3] = VO_K_BC_R(v[3] - v[1]);
      break;
    case VO_K_BC_XYXY_TO_CXCYWH: { /* (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1 */
      const VO_T x1 = v[0], y1 = v[1], x2 = v[2], y2 = v[3];
      v[0] = VO_K_BC_R(VO_K_BC_R(x1 + x2) / (VO_T)2);
      v[1] = VO_K_BC_R(VO_K_BC_R(y1 + y2) / (VO_T)2);
      v[2] = VO_K_BC_R(x2 - x1);
      v[3] = VO_K_BC_R(y2 - y1);
      break;
    }
    case VO_K_BC_CXCYWHR_TO_XYWHR: {
      /* x1 = cx - w/2 cos - h/2 sin, y1 = cy - h/2 cos + w/2 sin */
      VO_SN(vo_k_bc_cos_sin)(v[4], &c, &s);
      const VO_T hw = VO_K_BC_R(v[2] / (VO_T)2), hh = VO_K_BC_R(v[3] / (VO_T)2);
      v[0] = VO_K_BC_R(VO_K_BC_R(v[0] - VO_K_BC_R(hw * c)) - VO_K_BC_R(hh * s));
      v[1] = VO_K_BC_R(VO_K_BC_R(v[1] - VO_K_BC_R(hh * c)) + VO_K_BC_R(hw * s));
      break;
    }
    case VO_K_BC_XYWHR_TO_CXCYWHR: {
      /* cx = x1 + w/2 cos + h/2 sin, cy = y1 - w/2 sin + h/2 cos */
      VO_SN(vo_k_bc_cos_sin)(v[4], &c, &s);
      const VO_T hw = VO_K_BC_R(v[2] / (VO_T)2), hh = VO_K_BC_R(v[3] / (VO_T)2);
      v[0] = VO_K_BC_R(VO_K_BC_R(v[0] + VO_K_BC_R(hw * c)) + VO_K_BC_R(hh * s));
      v[1] = VO_K_BC_R(VO_K_BC_R(v[1] - VO_K_BC_R(hw * s)) + VO_K_BC_R(hh * c));
      break;
    }
    case VO_K_BC_XYWHR_TO_XYXYXYXY: {
      /* TL, TR = TL + w (cos, -sin), BR = TR + h (sin, cos), BL = TL + h (sin, cos) */
      VO_SN(vo_k_bc_cos_sin)(v[4], &c, &s);
      const VO_T x1 = v[0], y1 = v[1], w = v[2], h = v[3];
      const VO_T x2 = VO_K_BC_R(x1 + VO_K_BC_R(w * c)), y2 = VO_K_BC_R(y1 - VO_K_BC_R(w * s));
      v[2] = x2;
      v[3] = y2;
      v[4] = VO_K_BC_R(x2 + VO_K_BC_R(h * s));
      v[5] = VO_K_BC_R(y2 + VO_K_BC_R(h * c));
      v[6] = VO_K_BC_R(x1 + VO_K_BC_R(h * s));
      v[7] = VO_K_BC_R(y1 + VO_K_BC_R(h * c));
      break;
    }
    default: { /* xyxyxyxy -> xywhr: r from atan2 of the TL -> TR edge, w, h its lengths */
      const VO_T dx = VO_K_BC_R(v[2] - v[0]), dy = VO_K_BC_R(v[1] - v[3]);
      const VO_T ex = VO_K_BC_R(v[4] - v[2]), ey = VO_K_BC_R(v[5] - v[3]);
      const VO_T rad = VO_K_BC_R((VO_T)VO_K_BC_ATAN2(dy, dx));
      v[2] = VO_K_BC_R(VO_T_SQRT(VO_K_BC_R(VO_K_BC_R(dx * dx) + VO_K_BC_R(dy * dy))));
      v[3] = VO_K_BC_R(VO_T_SQRT(VO_K_BC_R(VO_K_BC_R(ex * ex) + VO_K_BC_R(ey * ey))));
      v[4] = VO_K_BC_R(VO_K_BC_R(rad * (VO_T)180) / VO_K_BC_PI);
      v[5] = v[6] = v[7] = 0;
      break;
    }
  }
}

/* The gradient of r's uses through (c, s) = cos, sin of r * pi / 180 given
 * the gradients gc, gs of c and s: sin's backward (gs cos) runs first, then
 * cos's (gc * -sin), then the division's and the product's. */
VO_KFN VO_T VO_SN(vo_k_bc_angle_grad)(VO_T r, VO_T gc, VO_T gs) {
  VO_T c, s;
  VO_SN(vo_k_bc_cos_sin)(r, &c, &s);
  const VO_T grad_rad = VO_K_BC_R(VO_K_BC_R(gs * c) + VO_K_BC_R(gc * -s));
  return VO_K_BC_R(VO_K_BC_R(grad_rad / (VO_T)180) * VO_K_BC_PI);
}

/* One step's backward: v[0..7] is the step's input, g[0..7] the gradient of
 * its output on entry and of its input on exit. Each input's gradient sums
 * its uses in the order torch's autograd engine runs them (the op made last
 * first: torchvision's stack, then its expressions right to left), each
 * term as that op's backward computes it. */
VO_KFN void VO_SN(vo_k_bc_step_backward)(const VO_T *v, VO_T *g, int step) {
  VO_T c, s;
  switch (step) {
    case VO_K_BC_XYWH_TO_XYXY:
      g[0] = VO_K_BC_R(g[0] + g[2]);
      g[1] = VO_K_BC_R(g[1] + g[3]);
      break;
    case VO_K_BC_CXCYWH_TO_XYXY: {
      const VO_T g0 = g[0], g1 = g[1], g2 = g[2], g3 = g[3];
      g[0] = VO_K_BC_R(g2 + g0);
      g[1] = VO_K_BC_R(g3 + g1);
      g[2] = VO_K_BC_R(VO_K_BC_R(g2 * (VO_T)0.5) + VO_K_BC_R(-g0 * (VO_T)0.5));
      g[3] = VO_K_BC_R(VO_K_BC_R(g3 * (VO_T)0.5) + VO_K_BC_R(-g1 * (VO_T)0.5));
      break;
    }
    case VO_K_BC_XYXY_TO_XYWH:
      g[0] = VO_K_BC_R(g[0] + -g[2]);
      g[1] = VO_K_BC_R(g[1] + -g[3]);
      break;
    case VO_K_BC_XYXY_TO_CXCYWH: {
      const VO_T gsx = VO_K_BC_R(g[0] / (VO_T)2), gsy = VO_K_BC_R(g[1] / (VO_T)2);
      const VO_T gw = g[2], gh = g[3];
      g[0] = VO_K_BC_R(-gw + gsx);
      g[1] = VO_K_BC_R(-gh + gsy);
      g[2] = VO_K_BC_R(gw + gsx);
      g[3] = VO_K_BC_R(gh + gsy);
      break;
    }
    case VO_K_BC_CXCYWHR_TO_XYWHR: {
      VO_SN(vo_k_bc_cos_sin)(v[4], &c, &s);
      const VO_T hw = VO_K_BC_R(v[2] / (VO_T)2), hh = VO_K_BC_R(v[3] / (VO_T)2);
      const VO_T gx1 = g[0], gy1 = g[1];
      /* y1 = (cy - hh' c) + hw' s */
      VO_T gs = VO_K_BC_R(gy1 * hw);
      VO_T gw = VO_K_BC_R(g[2] + VO_K_BC_R(VO_K_BC_R(gy1 * s) / (VO_T)2));
      VO_T gc = VO_K_BC_R(-gy1 * hh);
      VO_T gh = VO_K_BC_R(g[3] + VO_K_BC_R(VO_K_BC_R(-gy1 * c) / (VO_T)2));
      /* x1 = (cx - hw c) - hh s */
      gs = VO_K_BC_R(gs + VO_K_BC_R(-gx1 * hh));
      gh = VO_K_BC_R(gh + VO_K_BC_R(VO_K_BC_R(-gx1 * s) / (VO_T)2));
      gc = VO_K_BC_R(gc + VO_K_BC_R(-gx1 * hw));
      gw = VO_K_BC_R(gw + VO_K_BC_R(VO_K_BC_R(-gx1 * c) / (VO_T)2));
      g[0] = gx1;
      g[1] = gy1;
      g[2] = gw;
      g[3] = gh;
      g[4] = VO_K_BC_R(g[4] + VO_SN(vo_k_bc_angle_grad)(v[4], gc, gs));
      break;
    }
    case VO_K_BC_XYWHR_TO_CXCYWHR: {
      VO_SN(vo_k_bc_cos_sin)(v[4], &c, &s);
      const VO_T hw = VO_K_BC_R(v[2] / (VO_T)2), hh = VO_K_BC_R(v[3] / (VO_T)2);
      const VO_T gcx = g[0], gcy = g[1];
      /* cy = (y1 - hw' s) + hh' c */
      VO_T gc = VO_K_BC_R(gcy * hh);
      VO_T gh = VO_K_BC_R(g[3] + VO_K_BC_R(VO_K_BC_R(gcy * c) / (VO_T)2));
      VO_T gs = VO_K_BC_R(-gcy * hw);
      VO_T gw = VO_K_BC_R(g[2] + VO_K_BC_R(VO_K_BC_R(-gcy * s) / (VO_T)2));
      /* cx = (x1 + hw c) + hh s */
      gs = VO_K_BC_R(gs + VO_K_BC_R(gcx * hh));
      gh = VO_K_BC_R(gh + VO_K_BC_R(VO_K_BC_R(gcx * s) / (VO_T)2));
      gc = VO_K_BC_R(gc + VO_K_BC_R(gcx * hw));
      gw = VO_K_BC_R(gw + VO_K_BC_R(VO_K_BC_R(gcx * c) / (VO_T)2));
      g[0] = gcx;
      g[1] = gcy;
      g[2] = gw;
      g[3] = gh;
      g[4] = VO_K_BC_R(g[4] + VO_SN(vo_k_bc_angle_grad)(v[4], gc, gs));
      break;
    }
    case VO_K_BC_XYWHR_TO_XYXYXYXY: {
      VO_SN(vo_k_bc_cos_sin)(v[4], &c, &s);
      const VO_T w = v[2], h = v[3];
      VO_T gx1 = g[0], gy1 = g[1], gx2 = g[2], gy2 = g[3];
      const VO_T gx3 = g[4], gy3 = g[5], gx4 = g[6], gy4 = g[7];
      /* y4 = y1 + h c, x4 = x1 + h s */
      gy1 = VO_K_BC_R(gy1 + gy4);
      VO_T gh = VO_K_BC_R(gy4 * c);
      VO_T gc = VO_K_BC_R(gy4 * h);
      gx1 = VO_K_BC_R(gx1 + gx4);
      gh = VO_K_BC_R(gh + VO_K_BC_R(gx4 * s));
      VO_T gs = VO_K_BC_R(gx4 * h);
      /* y3 = y2 + h c, x3 = x2 + h s */
      gy2 = VO_K_BC_R(gy2 + gy3);
      gh = VO_K_BC_R(gh + VO_K_BC_R(gy3 * c));
      gc = VO_K_BC_R(gc + VO_K_BC_R(gy3 * h));
      gx2 = VO_K_BC_R(gx2 + gx3);
      gh = VO_K_BC_R(gh + VO_K_BC_R(gx3 * s));
      gs = VO_K_BC_R(gs + VO_K_BC_R(gx3 * h));
      /* y2 = y1 - w s, x2 = x1 + w c */
      gy1 = VO_K_BC_R(gy1 + gy2);
      VO_T gw = VO_K_BC_R(-gy2 * s);
      gs = VO_K_BC_R(gs + VO_K_BC_R(-gy2 * w));
      gx1 = VO_K_BC_R(gx1 + gx2);
      gw = VO_K_BC_R(gw + VO_K_BC_R(gx2 * c));
      gc = VO_K_BC_R(gc + VO_K_BC_R(gx2 * w));
      g[0] = gx1;
      g[1] = gy1;
      g[2] = gw;
      g[3] = gh;
      g[4] = VO_SN(vo_k_bc_angle_grad)(v[4], gc, gs);
      g[5] = g[6] = g[7] = 0;
      break;
    }
    default: { /* xyxyxyxy -> xywhr */
      const VO_T dx = VO_K_BC_R(v[2] - v[0]), dy = VO_K_BC_R(v[1] - v[3]);
      const VO_T ex = VO_K_BC_R(v[4] - v[2]), ey = VO_K_BC_R(v[5] - v[3]);
      const VO_T w = VO_K_BC_R(VO_T_SQRT(VO_K_BC_R(VO_K_BC_R(dx * dx) + VO_K_BC_R(dy * dy))));
      const VO_T h = VO_K_BC_R(VO_T_SQRT(VO_K_BC_R(VO_K_BC_R(ex * ex) + VO_K_BC_R(ey * ey))));
      VO_T gx1 = g[0], gy1 = g[1];
      const VO_T gw = g[2], gh = g[3], gr = g[4];
      /* h = sqrt((x3 - x2)^2 + (y3 - y2)^2): sqrt's grad / (2 h), pow's grad (2 e) */
      const VO_T gsh = VO_K_BC_R(gh / VO_K_BC_R((VO_T)2 * h));
      const VO_T gey = VO_K_BC_R(gsh * VO_K_BC_R((VO_T)2 * ey));
      const VO_T gy3 = gey;
      VO_T gy2 = -gey;
      const VO_T gex = VO_K_BC_R(gsh * VO_K_BC_R((VO_T)2 * ex));
      const VO_T gx3 = gex;
      VO_T gx2 = -gex;
      /* w = sqrt((x2 - x1)^2 + (y1 - y2)^2) */
      const VO_T gsw = VO_K_BC_R(gw / VO_K_BC_R((VO_T)2 * w));
      const VO_T gdy = VO_K_BC_R(gsw * VO_K_BC_R((VO_T)2 * dy));
      gy1 = VO_K_BC_R(gy1 + gdy);
      gy2 = VO_K_BC_R(gy2 + -gdy);
      const VO_T gdx = VO_K_BC_R(gsw * VO_K_BC_R((VO_T)2 * dx));
      gx2 = VO_K_BC_R(gx2 + gdx);
      gx1 = VO_K_BC_R(gx1 + -gdx);
      /* r = atan2(dy, dx) * 180 / pi: atan2's grads g dx / q and g (-dy) / q */
      const VO_T grad_rad = VO_K_BC_R(VO_K_BC_R(gr / VO_K_BC_PI) * (VO_T)180);
      const VO_T recip = VO_K_BC_R((VO_T)1 / VO_K_BC_R(VO_K_BC_R(dy * dy) + VO_K_BC_R(dx * dx)));
      const VO_T gady = VO_K_BC_R(VO_K_BC_R(grad_rad * dx) * recip);
      const VO_T gadx = VO_K_BC_R(VO_K_BC_R(grad_rad * -dy) * recip);
      gx2 = VO_K_BC_R(gx2 + gadx);
      gx1 = VO_K_BC_R(gx1 + -gadx);
      gy1 = VO_K_BC_R(gy1 + gady);
      gy2 = VO_K_BC_R(gy2 + -gady);
      g[0] = gx1;
      g[1] = gy1;
      g[2] = gx2;
      g[3] = gy2;
      g[4] = gx3;
      g[5] = gy3;
      g[6] = g[7] = 0;
      break;
    }
  }
}

/* Box i of float boxes converted into out [N, K_out] (the boxes' dtype). */
VO_KFN void VO_SN(vo_k_box_convert_item)(const VO_GLOBAL VO_S *boxes, VO_GLOBAL VO_S *out,
                                         const vo_k_box_convert_args *a, int64_t i) {
  int steps[2] = {0, 0};
  const int count = vo_k_box_convert_steps(a->in_fmt, a->out_fmt, steps);
  const int k_in = vo_k_box_format_size(a->in_fmt), k_out = vo_k_box_format_size(a->out_fmt);
  const VO_GLOBAL VO_S *b = boxes + i * a->boxes_stride[0];
  VO_T v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int k = 0; k < k_in; k++) v[k] = VO_LD(b, k * a->boxes_stride[1]);
  for (int s = 0; s < count; s++) VO_SN(vo_k_bc_step)(v, steps[s]);
  for (int k = 0; k < k_out; k++) VO_ST(out, i * k_out + k, v[k]);
}

/* Row i of the gradient with respect to float boxes into out [N, K_in]
 * (the boxes' dtype), given grad [N, K_out] (read at its own dtype): the
 * steps' backwards in reverse, the second step's at the first's output. */
VO_KFN void VO_SN(vo_k_box_convert_grad_item)(const VO_GLOBAL VO_S *boxes,
                                              const VO_GLOBAL void *grad, VO_GLOBAL VO_S *out,
                                              const vo_k_box_convert_args *a, int64_t i) {
  int steps[2] = {0, 0};
  const int count = vo_k_box_convert_steps(a->in_fmt, a->out_fmt, steps);
  const int k_in = vo_k_box_format_size(a->in_fmt), k_out = vo_k_box_format_size(a->out_fmt);
  const VO_GLOBAL VO_S *b = boxes + i * a->boxes_stride[0];
  VO_T v[8] = {0, 0, 0, 0, 0, 0, 0, 0}, mid[8], g[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int k = 0; k < k_in; k++) v[k] = VO_LD(b, k * a->boxes_stride[1]);
  for (int k = 0; k < k_out; k++)
    g[k] = (VO_T)vo_k_load_as_double(grad, a->grad_dtype,
                                     i * a->grad_stride[0] + k * a->grad_stride[1]);
  if (count == 2) {
    for (int k = 0; k < 8; k++) mid[k] = v[k];
    VO_SN(vo_k_bc_step)(mid, steps[0]);
    VO_SN(vo_k_bc_step_backward)(mid, g, steps[1]);
  }
  if (count >= 1) VO_SN(vo_k_bc_step_backward)(v, g, steps[0]);
  for (int k = 0; k < k_in; k++) VO_ST(out, i * k_in + k, g[k]);
}

#undef VO_K_BC_R
#undef VO_K_BC_PI
#endif /* VO_K_BOX_CONVERT_BODY */
