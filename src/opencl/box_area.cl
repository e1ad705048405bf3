/*
 * box_area and box_area_backward's OpenCL C entry points: one work item per
 * box (forward) or per element of the [N, 4] gradient (backward, no
 * atomics: its deterministic mode is the same kernel), running
 * kernels/box_area.h's work items as src/cuda/box_area.cu does.
 */
#include "opencl/portable.clh"
#include "kernels/box_area.h"

/* Float boxes of storage S; areas in the compute type T. The gradient in
 * the boxes' storage type. */
#define VO_CL_BOX_AREA(SFX, S, T, STORE)                                                        \
  __kernel void vo_cl_box_area_##SFX(vo_k_box_area_args a, VO_CL_TENSOR(boxes), long n,         \
                                     VO_CL_TENSOR(out)) {                                       \
    const __global S *boxes = VO_CL_AT(const S, boxes);                                         \
    __global T *out = VO_CL_AT(T, out);                                                         \
    VO_CL_FOR(i, n) out[i] = vo_k_box_area_at_##SFX(boxes, &a, i);                              \
  }                                                                                             \
  __kernel void vo_cl_box_area_backward_##SFX(vo_k_box_area_args a, VO_CL_TENSOR(boxes),        \
                                              VO_CL_TENSOR(grad), long n, VO_CL_TENSOR(out)) {  \
    const __global S *boxes = VO_CL_AT(const S, boxes);                                         \
    const __global void *grad = VO_CL_AT(const char, grad);                                     \
    __global S *out = VO_CL_AT(S, out);                                                         \
    VO_CL_FOR(e, n) STORE(out, e, vo_k_box_area_grad_at_##SFX(boxes, grad, &a, e));             \
  }
VO_CL_EACH_DTYPE(VO_CL_BOX_AREA)

/* Integer boxes: int64 areas for int64 boxes, int32 for the narrower. */
__kernel void vo_cl_box_area_i64(vo_k_box_area_args a, VO_CL_TENSOR(boxes), long n,
                                 VO_CL_TENSOR(out)) {
  const __global void *boxes = VO_CL_AT(const char, boxes);
  __global long *out = VO_CL_AT(long, out);
  VO_CL_FOR(i, n) out[i] = vo_k_box_area_i64_at(boxes, &a, i);
}

__kernel void vo_cl_box_area_i32(vo_k_box_area_args a, VO_CL_TENSOR(boxes), long n,
                                 VO_CL_TENSOR(out)) {
  const __global void *boxes = VO_CL_AT(const char, boxes);
  __global int *out = VO_CL_AT(int, out);
  VO_CL_FOR(i, n) out[i] = vo_k_box_area_i32_at(boxes, &a, i);
}
