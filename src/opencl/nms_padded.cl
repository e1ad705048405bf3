/*
 * batched_nms_padded and onnx_nms as OpenCL C entry points (the host glue is
 * opencl/nms_padded.c; src/cuda/nms_padded.cu runs the same steps):
 *   vo_cl_np_problems_<boxes sfx>: one work item per (image, class) problem
 *     of a chunk: the candidate scan into its scratch slot, a bottom-up
 *     merge sort of (score key, item) pairs (stable, so ties keep the lower
 *     item, as the CPU's radix sort does), the greedy pass with the
 *     selected boxes in the slot and kernels/nms_padded.h's test; writes the
 *     problem's selections, their keys and count;
 *   vo_cl_np_rank / vo_cl_np_finish (padded): each selection's rank in its
 *     image (binary searches in the other classes' key-sorted lists, ties to
 *     the lower class), written when below max_per_image; then the padding
 *     and num;
 *   vo_cl_np_offsets / vo_cl_np_rows (onnx): the problems' prefix offsets
 *     and num_selected (one item), then the rows and the -1 rows.
 */
#include "opencl/portable.clh"
#include "kernels/nms_padded.h"

/* cpu/sort.h's score keys: ascending key is score descending, NaN first
 * (key 0), -0 and +0 one key. */
static ulong vo_cl_np_key_f32(float s) {
  if (s != s) return 0;
  if (s == 0) s = 0;
  uint u = as_uint(s);
  u = (u >> 31) ? ~u : u | 0x80000000u;
  return (ulong)(uint)~u;
}
#if VO_K_FP64
static ulong vo_cl_np_key_f64(double s) {
  if (s != s) return 0;
  if (s == 0) s = 0;
  ulong u = as_ulong(s);
  u = (u >> 63) ? ~u : u | ((ulong)1 << 63);
  return ~u;
}
#endif

/* The candidates of classes [c0, c1) of image b (item (c - c0) * M + m) as
 * (key, item) pairs in a; returns how many. f64 scores compare in double
 * with score_thr_bits' double, the others in float with score_thr_f32. */
static long vo_cl_np_scan(const __global void *ps, int s_dtype, long s_s0, long s_s1, long s_s2,
                          long b, long c0, long c1, long m_count, int has_thr,
                          ulong score_thr_bits, float score_thr_f32, __global ulong2 *a) {
  long n = 0;
  for (long c = c0; c < c1; c++) {
    const long row = b * s_s0 + c * s_s1, item0 = (c - c0) * m_count;
    for (long m = 0; m < m_count; m++) {
#if VO_K_FP64
      if (s_dtype == VO_DT_F64) {
        const double v = ((const __global double *)ps)[row + m * s_s2];
        if (!has_thr || v > as_double(score_thr_bits))
          a[n++] = (ulong2)(vo_cl_np_key_f64(v), (ulong)(item0 + m));
        continue;
      }
#else
      (void)score_thr_bits;
#endif
      const float v = (float)vo_k_load_as_double(ps, s_dtype, row + m * s_s2);
      if (!has_thr || v > score_thr_f32)
        a[n++] = (ulong2)(vo_cl_np_key_f32(v), (ulong)(item0 + m));
    }
  }
  return n;
}

/* Stable bottom-up merge sort of a[0..n) by key (.x), ping-ponging with
 * tmp; returns the array holding the result. */
static __global ulong2 *vo_cl_np_sort(__global ulong2 *a, __global ulong2 *tmp, long n) {
  __global ulong2 *src = a, *dst = tmp;
  for (long width = 1; width < n; width *= 2) {
    for (long lo = 0; lo < n; lo += 2 * width) {
      const long mid = lo + width < n ? lo + width : n;
      const long hi = lo + 2 * width < n ? lo + 2 * width : n;
      long i = lo, j = mid;
      for (long k = lo; k < hi; k++)
        dst[k] = i < mid && (j >= hi || src[i].x <= src[j].x) ? src[i++] : src[j++];
    }
    __global ulong2 *t = src;
    src = dst;
    dst = t;
  }
  return src;
}

/* Problems [q0, q0 + nq): work item e owns problem q0 + e and scratch slot
 * e (two pair arrays of `items`, then the cap selected boxes at kept_at).
 * Problem q is image q (class-agnostic: every class's boxes, item c * M +
 * m) or (image q / C, class q % C). */
#define VO_CL_NP_PROBLEMS(SFX, TSFX, T)                                                          \
  __kernel void vo_cl_np_problems_##SFX(                                                         \
      VO_CL_TENSOR(boxes), int b_dtype, long b_s0, long b_s1, long b_sc, long b_sk,              \
      VO_CL_TENSOR(scores), int s_dtype, long s_s0, long s_s1, long s_s2, long m_count,          \
      long classes, int agnostic, int kind, int fmt, T thr, int has_thr, ulong score_thr_bits,   \
      float score_thr_f32, long items, long max_candidates, long cap, long q0, long nq,          \
      VO_CL_TENSOR(ws), ulong sel_at, ulong key_at, ulong count_at, VO_CL_TENSOR(scratch),       \
      ulong slot_bytes, ulong kept_at) {                                                         \
    const __global void *pb = VO_CL_AT(const char, boxes);                                       \
    const __global void *ps = VO_CL_AT(const char, scores);                                      \
    __global char *w = VO_CL_AT(char, ws);                                                       \
    __global long *sel_all = (__global long *)(w + sel_at);                                      \
    __global ulong *key_all = (__global ulong *)(w + key_at);                                    \
    __global long *count_all = (__global long *)(w + count_at);                                  \
    VO_CL_FOR(e, nq) {                                                                           \
      __global char *slot = VO_CL_AT(char, scratch) + (ulong)e * slot_bytes;                     \
      __global ulong2 *a = (__global ulong2 *)slot;                                              \
      __global vo_k_nms_box_##TSFX *kept = (__global vo_k_nms_box_##TSFX *)(slot + kept_at);     \
      const long q = q0 + e;                                                                     \
      const long b = agnostic ? q : q / classes, c0 = agnostic ? 0 : q % classes;                \
      long n = vo_cl_np_scan(ps, s_dtype, s_s0, s_s1, s_s2, b, c0, agnostic ? classes : c0 + 1, \
                             m_count, has_thr, score_thr_bits, score_thr_f32, a);                \
      const __global ulong2 *sorted = vo_cl_np_sort(a, a + items, n);                            \
      if (n > max_candidates) n = max_candidates;                                                \
      __global long *sel = sel_all + q * cap;                                                    \
      __global ulong *key = key_all + q * cap;                                                   \
      long count = 0;                                                                            \
      for (long r = 0; r < n && count < cap; r++) {                                              \
        const long item = (long)sorted[r].y;                                                     \
        const long c = c0 + item / m_count, m = item % m_count;                                  \
        const long at = b * b_s0 + m * b_s1 + c * b_sc;                                          \
        const vo_k_nms_box_##TSFX box = vo_k_np_box_of_##SFX(                                    \
            kind, fmt, (T)vo_k_load_as_double(pb, b_dtype, at),                                  \
            (T)vo_k_load_as_double(pb, b_dtype, at + b_sk),                                      \
            (T)vo_k_load_as_double(pb, b_dtype, at + 2 * b_sk),                                  \
            (T)vo_k_load_as_double(pb, b_dtype, at + 3 * b_sk));                                 \
        int suppressed = 0;                                                                      \
        for (long k = 0; k < count && !suppressed; k++) {                                        \
          const vo_k_nms_box_##TSFX s = kept[k];                                                 \
          suppressed = vo_k_np_suppresses_##TSFX(kind, &s, &box, thr);                           \
        }                                                                                        \
        if (suppressed) continue;                                                                \
        kept[count] = box;                                                                       \
        key[count] = sorted[r].x;                                                                \
        sel[count++] = item;                                                                     \
      }                                                                                          \
      count_all[q] = count;                                                                      \
    }                                                                                            \
  }
VO_CL_NP_PROBLEMS(f32, f32, float)
#if VO_K_FP64
VO_CL_NP_PROBLEMS(f64, f64, double)
#endif
VO_CL_NP_PROBLEMS(f16, f32, float)
VO_CL_NP_PROBLEMS(bf16, f32, float)

/* Element k of a scores-dtype tensor copied from element i of another, as
 * bits (no float64 arithmetic), or zeroed (from < 0). */
static void vo_cl_np_copy_score(__global void *dst, long k, const __global void *src, long i,
                                int s_dtype) {
  switch (s_dtype) {
    case VO_DT_F64:
      ((__global ulong *)dst)[k] = i < 0 ? 0 : ((const __global ulong *)src)[i];
      break;
    case VO_DT_F16:
    case VO_DT_BF16:
      ((__global ushort *)dst)[k] = i < 0 ? 0 : ((const __global ushort *)src)[i];
      break;
    default: ((__global uint *)dst)[k] = i < 0 ? 0 : ((const __global uint *)src)[i]; break;
  }
}

/* How many of the n keys of list (ascending) are < key, or <= key. */
static long vo_cl_np_below(const __global ulong *list, long n, ulong key, int or_equal) {
  long lo = 0, hi = n;
  while (lo < hi) {
    const long mid = lo + (hi - lo) / 2;
    if (list[mid] < key || (or_equal && list[mid] == key))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* padded: selection e = q * cap + r of problem q at its rank in image b's
 * order (score key, then class, then selection), when below max_per_image
 * (k_max): keep, labels and the score copied from scores. */
__kernel void vo_cl_np_rank(VO_CL_TENSOR(scores), int s_dtype, long s_s0, long s_s1, long s_s2,
                            long m_count, long classes, int agnostic, long cap, long problems,
                            long k_max, VO_CL_TENSOR(ws), ulong sel_at, ulong key_at,
                            ulong count_at, VO_CL_TENSOR(keep), VO_CL_TENSOR(labels),
                            VO_CL_TENSOR(scores_out)) {
  const __global char *w = VO_CL_AT(const char, ws);
  const __global long *sel = (const __global long *)(w + sel_at);
  const __global ulong *key = (const __global ulong *)(w + key_at);
  const __global long *count = (const __global long *)(w + count_at);
  __global long *keep = VO_CL_AT(long, keep), *labels = VO_CL_AT(long, labels);
  VO_CL_FOR(e, problems * cap) {
    const long q = e / cap, r = e % cap;
    if (r >= count[q]) continue;
    const long b = agnostic ? q : q / classes, c = agnostic ? sel[e] / m_count : q % classes;
    const long m = agnostic ? sel[e] % m_count : sel[e];
    long rank = r;
    for (long o = 0; !agnostic && o < classes && rank < k_max; o++)
      if (o != c) {
        const long qo = b * classes + o;
        rank += vo_cl_np_below(key + qo * cap, count[qo], key[e], o < c);
      }
    if (rank >= k_max) continue;
    keep[b * k_max + rank] = m;
    labels[b * k_max + rank] = c;
    vo_cl_np_copy_score(VO_CL_AT(char, scores_out), b * k_max + rank, VO_CL_AT(const char, scores),
                        b * s_s0 + c * s_s1 + m * s_s2, s_dtype);
  }
}

/* padded: item e = b * (k_max + 1) + k: the padding of slot k of image b
 * past its n = min(selections, k_max), or (k = k_max) num[b] = n. Without
 * boxes there are no problems (problems = 0): padding only. */
__kernel void vo_cl_np_finish(int s_dtype, long classes, int agnostic, long problems, long k_max,
                              long batches, VO_CL_TENSOR(ws), ulong count_at, VO_CL_TENSOR(keep),
                              VO_CL_TENSOR(labels), VO_CL_TENSOR(scores_out), VO_CL_TENSOR(num)) {
  const __global long *count = (const __global long *)(VO_CL_AT(const char, ws) + count_at);
  VO_CL_FOR(e, batches * (k_max + 1)) {
    const long b = e / (k_max + 1), k = e % (k_max + 1);
    const long per_image = problems == 0 ? 0 : agnostic ? 1 : classes;
    long n = 0;
    for (long o = 0; o < per_image; o++) n += count[b * per_image + o];
    if (n > k_max) n = k_max;
    if (k == k_max) {
      VO_CL_AT(long, num)[b] = n;
    } else if (k >= n) {
      VO_CL_AT(long, keep)[b * k_max + k] = -1;
      VO_CL_AT(long, labels)[b * k_max + k] = -1;
      vo_cl_np_copy_score(VO_CL_AT(char, scores_out), b * k_max + k, 0, -1, s_dtype);
    }
  }
}

/* onnx: offset[q] the first row of problem q, offset[problems] (and
 * num_selected) the total; one work item. */
__kernel void vo_cl_np_offsets(long problems, VO_CL_TENSOR(ws), ulong count_at, ulong offset_at,
                               VO_CL_TENSOR(num_selected)) {
  __global char *w = VO_CL_AT(char, ws);
  const __global long *count = (const __global long *)(w + count_at);
  __global long *offset = (__global long *)(w + offset_at);
  if (get_global_id(0) != 0) return;
  long total = 0;
  for (long q = 0; q < problems; q++) {
    offset[q] = total;
    total += count[q];
  }
  offset[problems] = total;
  *VO_CL_AT(long, num_selected) = total;
}

/* onnx: item e = q * cap + r: row offset[q] + r (batch, class, box) of a
 * selection, or one of the problem's cap - count[q] -1 rows from total +
 * q * cap - offset[q] (the problems' shares tile the padding). */
__kernel void vo_cl_np_rows(long classes, long cap, long problems, VO_CL_TENSOR(ws), ulong sel_at,
                            ulong count_at, ulong offset_at, VO_CL_TENSOR(selected)) {
  const __global char *w = VO_CL_AT(const char, ws);
  const __global long *sel = (const __global long *)(w + sel_at);
  const __global long *count = (const __global long *)(w + count_at);
  const __global long *offset = (const __global long *)(w + offset_at);
  __global long *rows = VO_CL_AT(long, selected);
  const long total = offset[problems];
  VO_CL_FOR(e, problems * cap) {
    const long q = e / cap, r = e % cap, n = count[q];
    if (r < n) {
      __global long *row = rows + 3 * (offset[q] + r);
      row[0] = q / classes;
      row[1] = q % classes;
      row[2] = sel[e];
    } else {
      __global long *row = rows + 3 * (total + q * cap - offset[q] + (r - n));
      row[0] = row[1] = row[2] = -1;
    }
  }
}
