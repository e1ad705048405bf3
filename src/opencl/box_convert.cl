/*
 * box_convert and box_convert_backward's OpenCL C entry points: one work
 * item per box (each output row has one owner, so the backward's
 * deterministic mode is the same kernel), running kernels/box_convert.h's
 * work items as src/cuda/box_convert.cu does.
 */
#include "opencl/portable.clh"
#include "kernels/box_convert.h"

/* Float boxes of storage S: the converted boxes and the gradient in S. */
#define VO_CL_BOX_CONVERT(SFX, S, T, STORE)                                                       \
  __kernel void vo_cl_box_convert_##SFX(vo_k_box_convert_args a, VO_CL_TENSOR(boxes), long n,     \
                                        VO_CL_TENSOR(out)) {                                      \
    const __global S *boxes = VO_CL_AT(const S, boxes);                                           \
    __global S *out = VO_CL_AT(S, out);                                                           \
    VO_CL_FOR(i, n) vo_k_box_convert_item_##SFX(boxes, out, &a, i);                               \
  }                                                                                               \
  __kernel void vo_cl_box_convert_backward_##SFX(vo_k_box_convert_args a, VO_CL_TENSOR(boxes),    \
                                                 VO_CL_TENSOR(grad), long n, VO_CL_TENSOR(out)) { \
    const __global S *boxes = VO_CL_AT(const S, boxes);                                           \
    const __global void *grad = VO_CL_AT(const char, grad);                                       \
    __global S *out = VO_CL_AT(S, out);                                                           \
    VO_CL_FOR(i, n) vo_k_box_convert_grad_item_##SFX(boxes, grad, out, &a, i);                    \
  }
VO_CL_EACH_DTYPE(VO_CL_BOX_CONVERT)

/* Integer boxes: out in their dtype or float32 (kernels/box_convert.h). */
__kernel void vo_cl_box_convert_int(vo_k_box_convert_args a, VO_CL_TENSOR(boxes), long n,
                                    VO_CL_TENSOR(out)) {
  const __global void *boxes = VO_CL_AT(const char, boxes);
  __global void *out = VO_CL_AT(char, out);
  VO_CL_FOR(i, n) vo_k_box_convert_int_item(boxes, out, &a, i);
}
