/*
 * batched_nms_padded and onnx_nms as OpenCL C entry points, one a work item
 * of kernels/nms_padded.h (the host glue is opencl/nms_padded.c; CUDA's
 * cuda/nms_padded.cu launches the same items):
 *   vo_cl_np_problems_<boxes sfx>: a work group per (image, class) problem
 *     of a chunk [q0, q0 + nq) (groups stride over them), in scratch slot
 *     q - q0;
 *   vo_cl_np_rank / vo_cl_np_finish (padded): the selections at their
 *     ranks in their images, then the padding and num;
 *   vo_cl_np_offsets / vo_cl_np_rows (onnx): the problems' row offsets and
 *     num_selected (one item), then the rows and the -1 rows.
 */
#include "opencl/portable.clh"
#include "kernels/nms_padded.h"

#define VO_CL_NP_PROBLEMS(SFX, S, T, STORE)                                                        \
  __kernel void vo_cl_np_problems_##SFX(vo_k_np_args a, VO_CL_TENSOR(boxes), VO_CL_TENSOR(scores), \
                                        VO_CL_TENSOR(ws), VO_CL_TENSOR(scratch), long q0,          \
                                        long nq) {                                                 \
    const int64_t lid = (int64_t)get_local_id(0), size = (int64_t)get_local_size(0);               \
    for (int64_t e = (int64_t)get_group_id(0); e < nq; e += (int64_t)get_num_groups(0))            \
      vo_k_np_group_##SFX(&a, VO_CL_AT(const S, boxes), VO_CL_AT(const char, scores),              \
                          VO_CL_AT(char, ws), VO_CL_AT(char, scratch) + (ulong)e * a.slot_bytes,   \
                          q0 + e, lid, size);                                                      \
  }
VO_CL_EACH_DTYPE(VO_CL_NP_PROBLEMS)

__kernel void vo_cl_np_rank(vo_k_np_args a, VO_CL_TENSOR(scores), VO_CL_TENSOR(ws),
                            VO_CL_TENSOR(keep), VO_CL_TENSOR(labels), VO_CL_TENSOR(scores_out)) {
  VO_CL_FOR(e, a.problems * a.cap)
  vo_k_np_rank(&a, VO_CL_AT(const char, scores), VO_CL_AT(const char, ws), VO_CL_AT(long, keep),
               VO_CL_AT(long, labels), VO_CL_AT(char, scores_out), e);
}

__kernel void vo_cl_np_finish(vo_k_np_args a, VO_CL_TENSOR(ws), VO_CL_TENSOR(keep),
                              VO_CL_TENSOR(labels), VO_CL_TENSOR(scores_out), VO_CL_TENSOR(num)) {
  VO_CL_FOR(e, a.batches * (a.k_max + 1))
  vo_k_np_finish(&a, VO_CL_AT(const char, ws), VO_CL_AT(long, keep), VO_CL_AT(long, labels),
                 VO_CL_AT(char, scores_out), VO_CL_AT(long, num), e);
}

__kernel void vo_cl_np_offsets(vo_k_np_args a, VO_CL_TENSOR(ws), VO_CL_TENSOR(num_selected)) {
  if (get_global_id(0) == 0) vo_k_np_offsets(&a, VO_CL_AT(char, ws), VO_CL_AT(long, num_selected));
}

__kernel void vo_cl_np_rows(vo_k_np_args a, VO_CL_TENSOR(ws), VO_CL_TENSOR(selected)) {
  VO_CL_FOR(e, a.problems * a.cap)
  vo_k_np_rows(&a, VO_CL_AT(const char, ws), VO_CL_AT(long, selected), e);
}
