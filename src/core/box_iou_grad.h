/*
 * Gradient of one entry of box_iou / generalized_box_iou / distance_box_iou /
 * complete_box_iou with respect to both boxes: what torchvision's autograd
 * computes for its tensor-op implementation (torchvision/ops/boxes.py), step
 * by step in reverse of its operation order, with torch's derivative rules:
 * torch.max / torch.min of two tensors split the gradient half and half on a
 * tie (and give all of it to both sides when one is NaN); clamp(min=0) passes
 * it where its input is >= 0 (0 included, NaN not); complete_box_iou's alpha
 * is a constant (computed under torch.no_grad()). Shared by the CPU and the
 * CUDA backend; plain C, also compiled as CUDA C++ (host and device).
 */
#ifndef VISIONOPS_BOX_IOU_GRAD_H
#define VISIONOPS_BOX_IOU_GRAD_H

#include <math.h>

#include "core/internal.h"

#ifdef __CUDACC__
#define VO_IOU_GRAD_FN static __host__ __device__ __forceinline__
#else
#define VO_IOU_GRAD_FN static inline
#endif

/* vo_iou_pair_grad_SUFFIX(kind, eps, a, b, ta, tb, g, ga, gb): ga[0..3] and
 * gb[0..3] receive (are set to) g times the derivative of the op's value for
 * boxes a and b (x1, y1, x2, y2) with respect to a's and b's coordinates.
 * ta and tb are vo_iou_atan_ratio_SUFFIX of a and b (read by
 * complete_box_iou only), so that callers can compute them once per box. */
#define VO_DEFINE_IOU_PAIR_GRAD(T, SUFFIX, ATAN)                                                 \
  /* torch.maximum's rule: where(x == y, g / 2, g), zeroed where the other side is larger. */    \
  VO_IOU_GRAD_FN void vo_iou_split_max_##SUFFIX(T g, T x, T y, T *gx, T *gy) {                   \
    if (x == y) {                                                                                \
      *gx += g / 2;                                                                              \
      *gy += g / 2;                                                                              \
      return;                                                                                    \
    }                                                                                            \
    if (!(x < y)) *gx += g;                                                                      \
    if (!(x > y)) *gy += g;                                                                      \
  }                                                                                              \
  /* torch.minimum's rule: the same, zeroed where the other side is smaller. */                  \
  VO_IOU_GRAD_FN void vo_iou_split_min_##SUFFIX(T g, T x, T y, T *gx, T *gy) {                   \
    if (x == y) {                                                                                \
      *gx += g / 2;                                                                              \
      *gy += g / 2;                                                                              \
      return;                                                                                    \
    }                                                                                            \
    if (!(x > y)) *gx += g;                                                                      \
    if (!(x < y)) *gy += g;                                                                      \
  }                                                                                              \
  /* atan(w / h) of a box, as complete_box_iou computes it. */                                   \
  VO_IOU_GRAD_FN T vo_iou_atan_ratio_##SUFFIX(const T *box) {                                    \
    return ATAN((box[2] - box[0]) / (box[3] - box[1]));                                          \
  }                                                                                              \
  VO_IOU_GRAD_FN void vo_iou_pair_grad_##SUFFIX(vo_iou_kind kind, T eps, const T *a, const T *b, \
                                                T ta, T tb, T g, T *ga, T *gb) {                 \
    for (int k = 0; k < 4; k++) ga[k] = gb[k] = 0;                                               \
    /* Forward, as torchvision: areas, intersection, union, IoU. */                              \
    const T aw = a[2] - a[0], ah = a[3] - a[1], bw = b[2] - b[0], bh = b[3] - b[1];              \
    const T area_a = aw * ah, area_b = bw * bh;                                                  \
    const T wr = (a[2] < b[2] ? a[2] : b[2]) - (a[0] > b[0] ? a[0] : b[0]);                      \
    const T hr = (a[3] < b[3] ? a[3] : b[3]) - (a[1] > b[1] ? a[1] : b[1]);                      \
    const T w = wr < 0 ? 0 : wr, h = hr < 0 ? 0 : hr;                                            \
    const T inter = w * h;                                                                       \
    const T uni = (area_a + area_b) - inter;                                                     \
    const T iou = inter / uni;                                                                   \
    T g_uni = 0; /* the union's gradient from the terms after the IoU */                         \
    if (kind != VO_IOU_PLAIN) {                                                                  \
      /* Smallest enclosing box. */                                                              \
      const T ewr = (a[2] > b[2] ? a[2] : b[2]) - (a[0] < b[0] ? a[0] : b[0]);                   \
      const T ehr = (a[3] > b[3] ? a[3] : b[3]) - (a[1] < b[1] ? a[1] : b[1]);                   \
      const T ew = ewr < 0 ? 0 : ewr, eh = ehr < 0 ? 0 : ehr;                                    \
      T g_ew, g_eh;                                                                              \
      if (kind == VO_IOU_GENERALIZED) {                                                          \
        /* iou - (areai - union) / areai */                                                      \
        const T areai = ew * eh;                                                                 \
        const T q = (areai - uni) / areai;                                                       \
        const T g_num = -g / areai;                                                              \
        const T g_areai = g * (q / areai) + g_num;                                               \
        g_uni = -g_num;                                                                          \
        g_ew = g_areai * eh;                                                                     \
        g_eh = g_areai * ew;                                                                     \
      } else {                                                                                   \
        /* iou - rho2 / (ew**2 + eh**2 + eps) */                                                 \
        const T dd = (ew * ew + eh * eh) + eps;                                                  \
        const T dx = (a[0] + a[2]) / 2 - (b[0] + b[2]) / 2;                                      \
        const T dy = (a[1] + a[3]) / 2 - (b[1] + b[3]) / 2;                                      \
        const T rho2 = dx * dx + dy * dy;                                                        \
        const T r = rho2 / dd;                                                                   \
        const T g_rho2 = -g / dd;                                                                \
        const T g_dd = g * (r / dd);                                                             \
        g_ew = g_dd * (2 * ew);                                                                  \
        g_eh = g_dd * (2 * eh);                                                                  \
        /* each centre is (x1 + x2) / 2 */                                                       \
        const T hx = (g_rho2 * (2 * dx)) / 2, hy = (g_rho2 * (2 * dy)) / 2;                      \
        ga[0] += hx, ga[2] += hx, gb[0] -= hx, gb[2] -= hx;                                      \
        ga[1] += hy, ga[3] += hy, gb[1] -= hy, gb[3] -= hy;                                      \
        if (kind == VO_IOU_COMPLETE) {                                                           \
          /* - alpha * v, v = 4/pi^2 * (atan(wa/ha) - atan(wb/hb))**2, alpha constant */         \
          const T four_over_pi2 = (T)(4.0 / (3.14159265358979323846 * 3.14159265358979323846));  \
          const T ra = aw / ah, rb = bw / bh;                                                    \
          const T d = ta - tb;                                                                   \
          const T v = four_over_pi2 * (d * d);                                                   \
          const T alpha = v / ((T)1 - iou + v + eps);                                            \
          const T g_d = ((-g * alpha) * four_over_pi2) * (2 * d);                                \
          const T g_ta = g_d / (ra * ra + 1), g_tb = -g_d / (rb * rb + 1);                       \
          const T g_aw = g_ta / ah, g_ah = -g_ta * (ra / ah);                                    \
          const T g_bw = g_tb / bh, g_bh = -g_tb * (rb / bh);                                    \
          ga[2] += g_aw, ga[0] -= g_aw, ga[3] += g_ah, ga[1] -= g_ah;                            \
          gb[2] += g_bw, gb[0] -= g_bw, gb[3] += g_bh, gb[1] -= g_bh;                            \
        }                                                                                        \
      }                                                                                          \
      /* clamp(min=0) of max(x2) - min(x1), and of the y extent */                               \
      const T g_ewr = ewr >= 0 ? g_ew : 0, g_ehr = ehr >= 0 ? g_eh : 0;                          \
      vo_iou_split_max_##SUFFIX(g_ewr, a[2], b[2], &ga[2], &gb[2]);                              \
      vo_iou_split_min_##SUFFIX(-g_ewr, a[0], b[0], &ga[0], &gb[0]);                             \
      vo_iou_split_max_##SUFFIX(g_ehr, a[3], b[3], &ga[3], &gb[3]);                              \
      vo_iou_split_min_##SUFFIX(-g_ehr, a[1], b[1], &ga[1], &gb[1]);                             \
    }                                                                                            \
    /* iou = inter / union, union = (area_a + area_b) - inter */                                 \
    g_uni += -g * (iou / uni);                                                                   \
    const T g_inter = g / uni - g_uni;                                                           \
    ga[2] += g_uni * ah, ga[0] -= g_uni * ah, ga[3] += g_uni * aw, ga[1] -= g_uni * aw;          \
    gb[2] += g_uni * bh, gb[0] -= g_uni * bh, gb[3] += g_uni * bw, gb[1] -= g_uni * bw;          \
    /* inter = clamp0(min(x2) - max(x1)) * clamp0(min(y2) - max(y1)) */                          \
    const T g_wr = wr >= 0 ? g_inter * h : 0, g_hr = hr >= 0 ? g_inter * w : 0;                  \
    vo_iou_split_min_##SUFFIX(g_wr, a[2], b[2], &ga[2], &gb[2]);                                 \
    vo_iou_split_max_##SUFFIX(-g_wr, a[0], b[0], &ga[0], &gb[0]);                                \
    vo_iou_split_min_##SUFFIX(g_hr, a[3], b[3], &ga[3], &gb[3]);                                 \
    vo_iou_split_max_##SUFFIX(-g_hr, a[1], b[1], &ga[1], &gb[1]);                                \
  }

VO_DEFINE_IOU_PAIR_GRAD(float, f32, atanf)
VO_DEFINE_IOU_PAIR_GRAD(double, f64, atan)

#endif /* VISIONOPS_BOX_IOU_GRAD_H */
