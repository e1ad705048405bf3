/*
 * Multi-scale deformable attention (deform_attn, Deformable DETR) in the
 * portable dialect (kernels/compat.h), shared by the CPU, CUDA and OpenCL
 * glue. Prefix vo_k_da_. SPEC-NEXT section 5:
 *
 *   out[n,q,m,d] = sum_l sum_p A[n,q,m,l,p] * bilinear_l(V[n,.,m,d],
 *                  x = loc_x * W_l - 0.5, y = loc_y * H_l - 0.5)
 *
 * with zero padding (a corner outside the level reads 0) and a sample
 * skipped unless -1 < y < H_l and -1 < x < W_l (so NaN locations sample
 * 0). Arithmetic order is Deformable DETR's (ms_deform_attn_im2col_bilinear
 * and ms_deform_attn_col2im_bilinear): levels outer, points inner, the
 * corners in the order (y0,x0), (y0,x1), (y1,x0), (y1,x1); half types
 * compute in float32.
 *
 * The work items, each a whole output element or a fixed owner:
 * - forward: vo_k_da_forward_at (one output element n,q,m,d; devices) and
 *   vo_k_da_forward_head (the D channels of one n,q,m; the CPU), which give
 *   the same bits;
 * - backward, per sample (n,q,m,l,p): vo_k_da_sample_grads, the location
 *   and attention-weight gradients, sums over the head's channels in order
 *   d = 0..D-1 (no atomics in any mode);
 * - backward, grad_value in a compute-type buffer laid out [N,S,M,D]:
 *   vo_k_da_value_grad_atomic_at (fast mode: the four corners of every
 *   sample of one n,q,m,d added atomically) or vo_k_da_level_scatter (the
 *   samples of one (n, m, level) in (q, p) order for a range of channels:
 *   that (n, m, level)'s slice of grad_value has no other writer, so the
 *   sums are the same for any thread count and on every backend).
 * Per-type bodies are kernels/deform_attn.inc.
 */
#ifndef VISIONOPS_KERNELS_DEFORM_ATTN_H
#define VISIONOPS_KERNELS_DEFORM_ATTN_H

#include "kernels/compat.h"

/* A call's sizes and element strides; no pointers (OpenCL passes buffers
 * separately). Outputs (out [N,Q,M*D], grad_value [N,S,M,D], grad_loc
 * [N,Q,M,L,P,2], grad_attn [N,Q,M,L,P]) and the grad_value buffer are
 * contiguous. */
typedef struct vo_k_deform_attn_args {
  int64_t batch, keys, heads, channels; /* N, S, M, D of value */
  int64_t queries, levels, points;      /* Q, L, P of sampling_loc */
  int64_t value_stride[4];              /* value [N,S,M,D] */
  int64_t shapes_stride[2];             /* spatial_shapes [L,2] int64 (H_l, W_l) */
  int64_t starts_stride;                /* level_start_index [L] int64 */
  int64_t loc_stride[6];                /* sampling_loc [N,Q,M,L,P,2] (x, y) */
  int64_t attn_stride[5];               /* attn_weight [N,Q,M,L,P] */
  int64_t grad_stride[3];               /* backward: grad_output [N,Q,M*D] */
} vo_k_deform_attn_args;

/* The args from the call's tensors: value's shape and strides, the
 * strides of spatial_shapes, level_start_index and attn_weight, sampling_loc's
 * shape and strides, and grad_output's strides (NULL in the forward); what
 * every backend's glue fills. */
VO_KFN vo_k_deform_attn_args vo_k_da_args_of(const int64_t *value_shape,
                                             const int64_t *value_stride,
                                             const int64_t *shapes_stride, int64_t starts_stride,
                                             const int64_t *loc_shape, const int64_t *loc_stride,
                                             const int64_t *attn_stride,
                                             const int64_t *grad_stride) {
  vo_k_deform_attn_args a;
  a.batch = value_shape[0];
  a.keys = value_shape[1];
  a.heads = value_shape[2];
  a.channels = value_shape[3];
  a.queries = loc_shape[1];
  a.levels = loc_shape[3];
  a.points = loc_shape[4];
  for (int k = 0; k < 6; k++) {
    if (k < 4) a.value_stride[k] = value_stride[k];
    if (k < 2) a.shapes_stride[k] = shapes_stride[k];
    if (k < 5) a.attn_stride[k] = attn_stride[k];
    if (k < 3) a.grad_stride[k] = grad_stride ? grad_stride[k] : 0;
    a.loc_stride[k] = loc_stride[k];
  }
  a.starts_stride = starts_stride;
  return a;
}

/* Level l's height, width and first key. A level whose keys do not lie
 * within value's S (bad spatial_shapes or level_start_index, which the
 * levels check reports, but which a device kernel may meet when that check
 * is deferred or off: vo_context_set_device_checks) is empty, so that no
 * key can address memory outside value and grad_value. */
VO_KFN void vo_k_da_level(const vo_k_deform_attn_args *a, const VO_GLOBAL int64_t *shapes,
                          const VO_GLOBAL int64_t *starts, int64_t l, int64_t *h, int64_t *w,
                          int64_t *start) {
  const int64_t lh = shapes[l * a->shapes_stride[0]];
  const int64_t lw = shapes[l * a->shapes_stride[0] + a->shapes_stride[1]];
  const int64_t s = starts[l * a->starts_stride];
  const int64_t room = a->keys - s; /* keys from s on (s <= keys: no overflow) */
  const int64_t small = (int64_t)1 << 31;
  const int fits = s >= 0 && s <= a->keys && lh >= 0 && lw >= 0 &&
                   (lh < small && lw < small ? lh * lw <= room : lw == 0 || lh <= room / lw);
  *h = fits ? lh : 0;
  *w = fits ? lw : 0;
  *start = fits ? s : 0;
}

/* Element offsets of sample (n, q, m, l, p) in sampling_loc (its x; y is
 * one loc_stride[5] further) and attn_weight. */
VO_KFN int64_t vo_k_da_loc_offset(const vo_k_deform_attn_args *a, int64_t n, int64_t q, int64_t m,
                                  int64_t l, int64_t p) {
  const int64_t *s = a->loc_stride;
  return n * s[0] + q * s[1] + m * s[2] + l * s[3] + p * s[4];
}
VO_KFN int64_t vo_k_da_attn_offset(const vo_k_deform_attn_args *a, int64_t n, int64_t q, int64_t m,
                                   int64_t l, int64_t p) {
  const int64_t *s = a->attn_stride;
  return n * s[0] + q * s[1] + m * s[2] + l * s[3] + p * s[4];
}

/* Element offset of grad_output[n, q, m*D + d]. */
VO_KFN int64_t vo_k_da_grad_offset(const vo_k_deform_attn_args *a, int64_t n, int64_t q, int64_t m,
                                   int64_t d) {
  return n * a->grad_stride[0] + q * a->grad_stride[1] + (m * a->channels + d) * a->grad_stride[2];
}

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/deform_attn.inc"
#include "kernels/dtype_end.h"
#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/deform_attn.inc"
#include "kernels/dtype_end.h"
#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "kernels/deform_attn.inc"
#include "kernels/dtype_end.h"
#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "kernels/deform_attn.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_DEFORM_ATTN_H */
