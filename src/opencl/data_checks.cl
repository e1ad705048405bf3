/*
 * The device-side value checks (kernels/data_checks.h) as OpenCL C entry
 * points, run by the backend's check_data hook (opencl/backend.c): the first
 * bad item's key by an atomic minimum, then what its message needs. The
 * checks compute in double: without float64 on the device the program is
 * empty and the hook runs them on the host.
 */
#include "opencl/portable.clh"
#include "kernels/data_checks.h"

#if VO_K_FP64

/* *p = min(*p, v) on a 64-bit key (compare-and-swap: base int64 atomics). */
static void vo_cl_atomic_min_u64(volatile __global ulong *p, ulong v) {
  ulong old = *p;
  while (v < old) {
    const ulong seen = atom_cmpxchg(p, old, v);
    if (seen == old) break;
    old = seen;
  }
}

__kernel void vo_cl_check_find(VO_CL_TENSOR(data), VO_CL_TENSOR(data2), vo_k_check c, long rows,
                               long len, VO_CL_TENSOR(res)) {
  const __global void *data = VO_CL_AT(const char, data);
  const __global void *data2 = VO_CL_AT(const char, data2);
  volatile __global ulong *first = VO_CL_AT(ulong, res);
  VO_CL_FOR(r, rows) {
    const int64_t j = vo_k_check_bad_column(data, data2, &c, r);
    if (j >= 0) vo_cl_atomic_min_u64(first, (ulong)(r * len + j));
  }
}

__kernel void vo_cl_check_record(VO_CL_TENSOR(data), VO_CL_TENSOR(data2), vo_k_check c,
                                 VO_CL_TENSOR(res)) {
  const __global void *data = VO_CL_AT(const char, data);
  const __global void *data2 = VO_CL_AT(const char, data2);
  __global vo_k_check_found *found = VO_CL_AT(vo_k_check_found, res);
  if (get_global_id(0) != 0 || found->first == VO_K_CHECK_NONE) return;
  double value[3];
  vo_k_check_values(data, data2, &c, (int64_t)found->first, value);
  for (int k = 0; k < 3; k++) found->value[k] = value[k];
}

#endif /* VO_K_FP64 */
