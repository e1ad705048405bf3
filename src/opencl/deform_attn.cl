/*
 * deform_attn and _deform_attn_backward's OpenCL C entry points over the
 * work items of kernels/deform_attn.h (opencl/deform_attn.c launches them):
 * the forward per output element; the backward's location and
 * attention-weight gradients per sample; grad_value into a compute-type
 * buffer [n, S, M, D] of a run of images, by atomics per output element
 * (fast) or per (image, head, level, channel) owner in the CPU's order
 * (deterministic); the half types' float32 buffer rounded by
 * vo_cl_roi_convert_<f16|bf16> (opencl/roi_common.clh).
 */
#include "opencl/roi_common.clh"
#include "kernels/deform_attn.h"

/* The tensors every kernel takes: value (unused by the grad_value items),
 * spatial_shapes, level_start_index, sampling_loc, attn_weight. */
#define VO_CL_DA_INPUTS                                                               \
  VO_CL_TENSOR(value), VO_CL_TENSOR(shapes), VO_CL_TENSOR(starts), VO_CL_TENSOR(loc), \
      VO_CL_TENSOR(attn)
#define VO_CL_DA_POINTERS(S)                                        \
  const __global S *value = VO_CL_AT(const S, value);               \
  const __global int64_t *shapes = VO_CL_AT(const int64_t, shapes); \
  const __global int64_t *starts = VO_CL_AT(const int64_t, starts); \
  const __global S *loc = VO_CL_AT(const S, loc);                   \
  const __global S *attn = VO_CL_AT(const S, attn)

#define VO_CL_DEFORM_ATTN(SFX, S, T, store)                                                        \
  /* out[i], i over [N, Q, M, D]. */                                                               \
  __kernel void vo_cl_deform_attn_##SFX(vo_k_deform_attn_args a, VO_CL_DA_INPUTS, long n,          \
                                        VO_CL_TENSOR(out)) {                                       \
    VO_CL_DA_POINTERS(S);                                                                          \
    __global S *out = VO_CL_AT(S, out);                                                            \
    VO_CL_FOR(i, n) vo_k_da_forward_at_##SFX(&a, value, shapes, starts, loc, attn, out, i);        \
  }                                                                                                \
  /* grad_loc and grad_attn of sample i over [N, Q, M, L, P]. */                                   \
  __kernel void vo_cl_deform_attn_sample_grads_##SFX(                                              \
      vo_k_deform_attn_args a, VO_CL_DA_INPUTS, VO_CL_TENSOR(grad), long n,                        \
      VO_CL_TENSOR(grad_loc), VO_CL_TENSOR(grad_attn)) {                                           \
    VO_CL_DA_POINTERS(S);                                                                          \
    const __global S *grad = VO_CL_AT(const S, grad);                                              \
    __global S *gl = VO_CL_AT(S, grad_loc), *ga = VO_CL_AT(S, grad_attn);                          \
    VO_CL_FOR(i, n)                                                                                \
    vo_k_da_sample_grads_at_##SFX(&a, value, shapes, starts, loc, attn, grad, gl, ga, i);          \
  }                                                                                                \
  /* Fast grad_value: output element i's corners added atomically to gv. */                        \
  __kernel void vo_cl_deform_attn_value_atomic_##SFX(                                              \
      vo_k_deform_attn_args a, VO_CL_DA_INPUTS, VO_CL_TENSOR(grad), long n, VO_CL_TENSOR(gv)) {    \
    VO_CL_DA_POINTERS(S);                                                                          \
    (void)value;                                                                                   \
    const __global S *grad = VO_CL_AT(const S, grad);                                              \
    __global T *g = VO_CL_AT(T, gv);                                                               \
    VO_CL_FOR(i, n) vo_k_da_value_grad_atomic_at_##SFX(&a, shapes, starts, loc, attn, grad, g, i); \
  }                                                                                                \
  /* Deterministic grad_value: item i over [N, M, L, D] owns channel d of the                      \
   * (n, m, l) slice of gv and adds its samples in (q, p) order. */                                \
  __kernel void vo_cl_deform_attn_value_scatter_##SFX(                                             \
      vo_k_deform_attn_args a, VO_CL_DA_INPUTS, VO_CL_TENSOR(grad), long n, VO_CL_TENSOR(gv)) {    \
    VO_CL_DA_POINTERS(S);                                                                          \
    (void)value;                                                                                   \
    const __global S *grad = VO_CL_AT(const S, grad);                                              \
    __global T *g = VO_CL_AT(T, gv);                                                               \
    const int64_t D = a.channels, L = a.levels, M = a.heads;                                       \
    VO_CL_FOR(i, n) {                                                                              \
      const int64_t d = i % D, l = i / D % L, m = i / D / L % M, b = i / D / L / M;                \
      vo_k_da_level_scatter_##SFX(&a, shapes, starts, loc, attn, grad, b, m, l, d, d + 1,          \
                                  g + (b * a.keys * M + m) * D, M * D, 0);                         \
    }                                                                                              \
  }
VO_CL_EACH_DTYPE(VO_CL_DEFORM_ATTN)
