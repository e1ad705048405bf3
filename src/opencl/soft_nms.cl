/*
 * soft_nms and batched_soft_nms as OpenCL C entry points, one a work item
 * of kernels/soft_nms.h (the host glue is opencl/soft_nms.c; CUDA's
 * cuda/soft_nms.cu launches the same items). Compute-type entry points are
 * suffixed _f32 (float32, float16, bfloat16 boxes) or _f64. vo_cl_snms_run
 * is a work group per run of the category-sorted records (groups stride
 * over the slots; a slot that starts no run returns at once).
 */
#include "opencl/portable.clh"
#include "kernels/soft_nms.h"

#define VO_CL_SNMS_SORTED ((const __global vo_k_sort_pair *)(VO_CL_AT(char, ws) + sorted_at))

__kernel void vo_cl_snms_pair(vo_k_snms_args a, VO_CL_TENSOR(idxs), VO_CL_TENSOR(ws)) {
  VO_CL_FOR(i, a.n) vo_k_snms_pair(&a, VO_CL_AT(const long, idxs), VO_CL_AT(char, ws), i);
}

__kernel void vo_cl_snms_sort_pass(vo_k_snms_args a, VO_CL_TENSOR(ws), ulong src_at, ulong dst_at,
                                   long width) {
  __global char *ws = VO_CL_AT(char, ws);
  VO_CL_FOR(e, a.n)
  vo_k_sort_pass((const __global vo_k_sort_pair *)(ws + src_at),
                 (__global vo_k_sort_pair *)(ws + dst_at), a.n, width, e);
}

__kernel void vo_cl_snms_num(vo_k_snms_args a, VO_CL_TENSOR(ws), ulong sorted_at,
                             VO_CL_TENSOR(num_kept)) {
  if (get_global_id(0) == 0)
    vo_k_snms_num(&a, VO_CL_SNMS_SORTED, VO_CL_AT(const char, ws), VO_CL_AT(long, num_kept));
}

#define VO_CL_SNMS(SFX, T)                                                                         \
  __kernel void vo_cl_snms_gather_##SFX(vo_k_snms_args a, VO_CL_TENSOR(boxes),                     \
                                        VO_CL_TENSOR(scores), VO_CL_TENSOR(ws), ulong sorted_at) { \
    VO_CL_FOR(s, a.n)                                                                              \
    vo_k_snms_gather_##SFX(&a, VO_CL_AT(const char, boxes), VO_CL_AT(const char, scores),          \
                           VO_CL_SNMS_SORTED, VO_CL_AT(char, ws), s);                              \
  }                                                                                                \
  __kernel void vo_cl_snms_run_##SFX(vo_k_snms_args a, VO_CL_TENSOR(ws), ulong sorted_at) {        \
    const int64_t lid = (int64_t)get_local_id(0), size = (int64_t)get_local_size(0);               \
    for (int64_t g = (int64_t)get_group_id(0); g < a.n; g += (int64_t)get_num_groups(0))           \
      vo_k_snms_run_##SFX(&a, VO_CL_SNMS_SORTED, VO_CL_AT(char, ws), g, lid, size);                \
  }                                                                                                \
  __kernel void vo_cl_snms_mark_##SFX(vo_k_snms_args a, VO_CL_TENSOR(ws), ulong sorted_at) {       \
    VO_CL_FOR(s, a.n) vo_k_snms_mark_##SFX(&a, VO_CL_SNMS_SORTED, VO_CL_AT(char, ws), s);          \
  }                                                                                                \
  __kernel void vo_cl_snms_rank_key_##SFX(vo_k_snms_args a, VO_CL_TENSOR(ws)) {                    \
    VO_CL_FOR(i, a.n) vo_k_snms_rank_key_##SFX(&a, VO_CL_AT(char, ws), i);                         \
  }                                                                                                \
  __kernel void vo_cl_snms_row_##SFX(vo_k_snms_args a, VO_CL_TENSOR(boxes), VO_CL_TENSOR(ws),      \
                                     ulong sorted_at, VO_CL_TENSOR(dets), VO_CL_TENSOR(keep)) {    \
    VO_CL_FOR(r, a.n)                                                                              \
    vo_k_snms_row_##SFX(&a, VO_CL_AT(const char, boxes), VO_CL_SNMS_SORTED,                        \
                        VO_CL_AT(const char, ws), VO_CL_AT(char, dets), VO_CL_AT(long, keep), r);  \
  }
VO_CL_EACH_COMPUTE_TYPE(VO_CL_SNMS)
