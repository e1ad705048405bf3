/*
 * box_iou, generalized_box_iou, distance_box_iou, complete_box_iou and their
 * backward as OpenCL C entry points over kernels/box_iou.h's per-pair math,
 * one per compute type T (f32, f64). Boxes of any float or integer dtype are
 * read through vo_k_load_as_double at their own dtype and strides (exact,
 * then rounded to T as the CUDA glue's loads). Forward: one work item per
 * output element. Backward: one work item per box, summing its pairs in
 * order in double (no atomics, the same bits every run).
 */
#include "opencl/portable.clh"
#include "kernels/box_iou.h"

#define VO_CL_BOX_IOU(SFX, T)                                                                   \
  static void vo_cl_iou_load_##SFX(const __global void *p, int dtype, long s0, long s1,        \
                                   int64_t i, T *box) {                                         \
    for (int k = 0; k < 4; k++) box[k] = (T)vo_k_load_as_double(p, dtype, i * s0 + k * s1);     \
  }                                                                                             \
  __kernel void vo_cl_pairwise_iou_##SFX(VO_CL_TENSOR(a), int a_dtype, long a_s0, long a_s1,   \
                                         VO_CL_TENSOR(b), int b_dtype, long b_s0, long b_s1,   \
                                         long n, long m, int kind, T eps, VO_CL_TENSOR(out),   \
                                         int out_dtype) {                                       \
    const __global void *pa = VO_CL_AT(const char, a), *pb = VO_CL_AT(const char, b);          \
    __global void *out = VO_CL_AT(char, out);                                                   \
    VO_CL_FOR(e, n * m) {                                                                       \
      const int64_t i = e / m, j = e - i * m;                                                   \
      T ra[4], rb[4];                                                                           \
      vo_cl_iou_load_##SFX(pa, a_dtype, a_s0, a_s1, i, ra);                                     \
      vo_cl_iou_load_##SFX(pb, b_dtype, b_s0, b_s1, j, rb);                                     \
      const vo_k_iou_box_##SFX ba = vo_k_iou_box_of_##SFX(kind, ra);                            \
      const vo_k_iou_box_##SFX bb = vo_k_iou_box_of_##SFX(kind, rb);                            \
      vo_cl_store_as(out, out_dtype, e, vo_k_iou_pair_##SFX(kind, eps, &ba, &bb));              \
    }                                                                                           \
  }                                                                                             \
  /* The gradient of the `own` set (rows of grad when own_is_a, else its       \
   * columns), stored in out_dtype (own's). */                                                  \
  __kernel void vo_cl_pairwise_iou_backward_##SFX(                                              \
      VO_CL_TENSOR(grad), int g_dtype, long g_s0, long g_s1, VO_CL_TENSOR(own), int o_dtype,    \
      long o_s0, long o_s1, VO_CL_TENSOR(other), int t_dtype, long t_s0, long t_s1,             \
      long count_own, long count_other, int own_is_a, int kind, T eps, VO_CL_TENSOR(out),       \
      int out_dtype) {                                                                          \
    const __global void *pg = VO_CL_AT(const char, grad), *po = VO_CL_AT(const char, own);     \
    const __global void *pt = VO_CL_AT(const char, other);                                      \
    __global void *out = VO_CL_AT(char, out);                                                   \
    VO_CL_FOR(i, count_own) {                                                                   \
      T mine[4], theirs[4], ga[4], gb[4];                                                       \
      vo_cl_iou_load_##SFX(po, o_dtype, o_s0, o_s1, i, mine);                                   \
      const int complete = kind == VO_K_IOU_COMPLETE;                                           \
      const T t_mine = complete ? vo_k_iou_atan_ratio_##SFX(mine) : (T)0;                       \
      vo_k_double acc[4] = {0, 0, 0, 0};                                                        \
      for (int64_t j = 0; j < count_other; j++) {                                               \
        vo_cl_iou_load_##SFX(pt, t_dtype, t_s0, t_s1, j, theirs);                               \
        const T t_theirs = complete ? vo_k_iou_atan_ratio_##SFX(theirs) : (T)0;                 \
        if (own_is_a) {                                                                         \
          const T g = (T)vo_k_load_as_double(pg, g_dtype, i * g_s0 + j * g_s1);                 \
          vo_k_iou_pair_grad_##SFX(kind, eps, mine, theirs, t_mine, t_theirs, g, ga, gb);       \
          for (int k = 0; k < 4; k++) acc[k] += (vo_k_double)ga[k];                             \
        } else {                                                                                \
          const T g = (T)vo_k_load_as_double(pg, g_dtype, j * g_s0 + i * g_s1);                 \
          vo_k_iou_pair_grad_##SFX(kind, eps, theirs, mine, t_theirs, t_mine, g, ga, gb);       \
          for (int k = 0; k < 4; k++) acc[k] += (vo_k_double)gb[k];                             \
        }                                                                                       \
      }                                                                                         \
      for (int k = 0; k < 4; k++) vo_cl_store_as(out, out_dtype, i * 4 + k, (T)acc[k]);        \
    }                                                                                           \
  }
VO_CL_EACH_COMPUTE_TYPE(VO_CL_BOX_IOU)
