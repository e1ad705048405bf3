/*
 * matrix_nms as OpenCL C entry points, one a work item of
 * kernels/matrix_nms.h (the problem and keep entry points: a work group a
 * problem, groups striding over the chunk's problems; the host glue is
 * opencl/matrix_nms.c; CUDA's cuda/matrix_nms.cu launches the same items).
 * Compute-type entry points are suffixed _f32 (float32, float16, bfloat16
 * boxes) or _f64.
 */
#include "opencl/portable.clh"
#include "kernels/matrix_nms.h"

__kernel void vo_cl_mnms_finish(vo_k_mnms_args a, VO_CL_TENSOR(ws), VO_CL_TENSOR(dets),
                                VO_CL_TENSOR(index), VO_CL_TENSOR(num)) {
  VO_CL_FOR(e, a.batch * (a.k + 1))
  vo_k_mnms_finish(&a, VO_CL_AT(const char, ws), VO_CL_AT(char, dets), VO_CL_AT(long, index),
                   VO_CL_AT(long, num), e);
}

#define VO_CL_MNMS(SFX, T)                                                                        \
  __kernel void vo_cl_mnms_problem_##SFX(vo_k_mnms_args a, VO_CL_TENSOR(boxes),                   \
                                         VO_CL_TENSOR(scores), VO_CL_TENSOR(ws),                  \
                                         VO_CL_TENSOR(scratch), long q0, long nq) {               \
    const int64_t lid = (int64_t)get_local_id(0), size = (int64_t)get_local_size(0);              \
    for (int64_t e = (int64_t)get_group_id(0); e < nq; e += (int64_t)get_num_groups(0))           \
      vo_k_mnms_problem_##SFX(                                                                    \
          &a, VO_CL_AT(const char, boxes), VO_CL_AT(const char, scores), VO_CL_AT(char, ws),      \
          VO_CL_AT(char, scratch) + (ulong)e * a.slot_bytes, q0 + e, lid, size);                  \
  }                                                                                               \
  __kernel void vo_cl_mnms_rows_##SFX(vo_k_mnms_args a, VO_CL_TENSOR(ws), VO_CL_TENSOR(scratch),  \
                                      long q0, long nq, int second) {                             \
    VO_CL_FOR(e, nq* a.per_class)                                                                 \
    vo_k_mnms_rows_##SFX(&a, VO_CL_AT(char, ws), VO_CL_AT(char, scratch), q0, second, e);         \
  }                                                                                               \
  __kernel void vo_cl_mnms_keep_##SFX(vo_k_mnms_args a, VO_CL_TENSOR(ws), VO_CL_TENSOR(scratch),  \
                                      long q0, long nq) {                                         \
    const int64_t lid = (int64_t)get_local_id(0), size = (int64_t)get_local_size(0);              \
    for (int64_t e = (int64_t)get_group_id(0); e < nq; e += (int64_t)get_num_groups(0))           \
      vo_k_mnms_keep_##SFX(&a, VO_CL_AT(char, ws),                                                \
                           VO_CL_AT(char, scratch) + (ulong)e * a.slot_bytes, q0 + e, lid, size); \
  }                                                                                               \
  __kernel void vo_cl_mnms_place_##SFX(vo_k_mnms_args a, VO_CL_TENSOR(boxes), VO_CL_TENSOR(ws),   \
                                       VO_CL_TENSOR(dets), VO_CL_TENSOR(index)) {                 \
    VO_CL_FOR(e, a.problems* a.per_class)                                                         \
    vo_k_mnms_place_##SFX(&a, VO_CL_AT(const char, boxes), VO_CL_AT(const char, ws),              \
                          VO_CL_AT(char, dets), VO_CL_AT(long, index), e);                        \
  }
VO_CL_EACH_COMPUTE_TYPE(VO_CL_MNMS)
