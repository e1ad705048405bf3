/*
 * nms and batched_nms as OpenCL C entry points, all on the device (no host
 * round trip, as on CUDA): rank each box in the stable score-descending
 * order (NaN first, ties by index; the CPU's and torch's order) and gather
 * the sorted boxes; build the suppression bit mask over chunks of rows with
 * kernels/nms.h's test; resolve it greedily in one work item; write -1 past
 * the kept count. The rank is a quadratic count: simple, and fine for the
 * sizes detection uses (a radix sort is a later optimisation).
 */
#include "opencl/portable.clh"
#include "kernels/nms.h"

/* Whether score sj at j comes before si at i in the order. */
static int vo_cl_nms_before(vo_k_double sj, int64_t j, vo_k_double si, int64_t i) {
  const int nj = sj != sj, ni = si != si;
  if (nj || ni) return nj && (!ni || j < i);
  return sj > si || (sj == si && j < i);
}

#define VO_CL_NMS(SFX, T)                                                                       \
  __kernel void vo_cl_nms_rank_##SFX(VO_CL_TENSOR(boxes), int b_dtype, long b_s0, long b_s1,   \
                                     VO_CL_TENSOR(scores), int s_dtype, long s_s0,              \
                                     VO_CL_TENSOR(idxs), long i_s0, long n, VO_CL_TENSOR(ws),  \
                                     ulong order_at, ulong sidx_at) {                           \
    const __global void *pb = VO_CL_AT(const char, boxes);                                     \
    const __global void *ps = VO_CL_AT(const char, scores);                                    \
    __global char *w = VO_CL_AT(char, ws);                                                      \
    __global T *sboxes = (__global T *)w;                                                       \
    __global long *order = (__global long *)(w + order_at);                                     \
    __global long *sidx = (__global long *)(w + sidx_at);                                       \
    VO_CL_FOR(i, n) {                                                                           \
      const vo_k_double si = vo_k_load_as_double(ps, s_dtype, i * s_s0);                        \
      int64_t rank = 0;                                                                         \
      for (int64_t j = 0; j < n; j++)                                                           \
        rank += vo_cl_nms_before(vo_k_load_as_double(ps, s_dtype, j * s_s0), j, si, i);         \
      for (int k = 0; k < 4; k++)                                                               \
        sboxes[rank * 4 + k] = (T)vo_k_load_as_double(pb, b_dtype, i * b_s0 + k * b_s1);        \
      order[rank] = i;                                                                          \
      if (idxs_buf) sidx[rank] = VO_CL_AT(const long, idxs)[i * i_s0];                          \
    }                                                                                           \
  }                                                                                             \
  /* Mask words of rows [r0, r1) (sorted order): word (r - r0, cb) has bit j  \
   * set when sorted box cb*64 + j comes after r, is of its category      \
   * (batched) and overlaps it by more than thr. */                                             \
  __kernel void vo_cl_nms_mask_##SFX(VO_CL_TENSOR(ws), ulong sidx_at, int batched, long n,     \
                                     T thr, long col_blocks, long r0, long r1,                  \
                                     VO_CL_TENSOR(mask)) {                                      \
    const __global char *w = VO_CL_AT(const char, ws);                                          \
    const __global T *sb = (const __global T *)w;                                               \
    const __global long *sidx = (const __global long *)(w + sidx_at);                           \
    __global ulong *mask = VO_CL_AT(ulong, mask);                                               \
    VO_CL_FOR(e, (r1 - r0) * col_blocks) {                                                      \
      const int64_t r = r0 + e / col_blocks, cb = e % col_blocks;                               \
      ulong bits = 0;                                                                           \
      if (cb * 64 + 63 > r) {                                                                   \
        const vo_k_nms_box_##SFX bi =                                                           \
            vo_k_nms_box_of_##SFX(sb[r * 4], sb[r * 4 + 1], sb[r * 4 + 2], sb[r * 4 + 3]);      \
        for (int j = 0; j < 64; j++) {                                                          \
          const int64_t c = cb * 64 + j;                                                        \
          if (c <= r || c >= n || (batched && sidx[c] != sidx[r])) continue;                    \
          const vo_k_nms_box_##SFX bj =                                                         \
              vo_k_nms_box_of_##SFX(sb[c * 4], sb[c * 4 + 1], sb[c * 4 + 2], sb[c * 4 + 3]);    \
          if (vo_k_nms_suppresses_##SFX(&bi, &bj, thr)) bits |= (ulong)1 << j;                 \
        }                                                                                       \
      }                                                                                         \
      mask[e] = bits;                                                                           \
    }                                                                                           \
  }
VO_CL_EACH_COMPUTE_TYPE(VO_CL_NMS)

/* The greedy pass over rows [r0, r1), one work item: `removed` (a bit per
 * sorted box) and the kept count persist across chunks in the workspace. */
__kernel void vo_cl_nms_resolve(VO_CL_TENSOR(ws), ulong order_at, ulong removed_at, long n,
                                long col_blocks, long r0, long r1, VO_CL_TENSOR(mask),
                                VO_CL_TENSOR(keep)) {
  __global char *w = VO_CL_AT(char, ws);
  const __global long *order = (const __global long *)(w + order_at);
  __global ulong *removed = (__global ulong *)(w + removed_at);
  __global long *count = (__global long *)(removed + col_blocks);
  const __global ulong *mask = VO_CL_AT(const ulong, mask);
  __global long *keep = VO_CL_AT(long, keep);
  if (get_global_id(0) != 0) return;
  int64_t kept = *count;
  for (int64_t r = r0; r < r1 && r < n; r++) {
    if ((removed[r / 64] >> (r % 64)) & 1) continue;
    keep[kept++] = order[r];
    const __global ulong *row = mask + (r - r0) * col_blocks;
    for (int64_t cb = r / 64; cb < col_blocks; cb++) removed[cb] |= row[cb];
  }
  *count = kept;
}

/* num_kept, and -1 in keep past it. */
__kernel void vo_cl_nms_finish(VO_CL_TENSOR(ws), ulong count_at, long n, VO_CL_TENSOR(keep),
                               VO_CL_TENSOR(num_kept)) {
  const long count = *(const __global long *)(VO_CL_AT(const char, ws) + count_at);
  __global long *keep = VO_CL_AT(long, keep);
  if (get_global_id(0) == 0) *VO_CL_AT(long, num_kept) = count;
  VO_CL_FOR(i, n) if (i >= count) keep[i] = -1;
}
