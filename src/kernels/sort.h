/*
 * The device sorts of the NMS ops in the portable dialect (kernels/compat.h):
 * records of an unsigned key and what they sort, in stable merge passes
 * over a whole array (vo_k_sort_pass: one launch per doubling width) or in
 * a work group's merge-path passes over records whose items are distinct
 * (vo_k_sort_group: one problem's candidates, by key then item, so the
 * order the records arrive in does not matter), after the group has
 * gathered them (vo_k_sort_group_stretch, vo_k_sort_group_compact). The
 * score keys (kernels/score_key.h) make each of them torch's stable
 * descending sort of scores; cpu/sort.h is the CPU's sort of the same
 * records.
 */
#ifndef VISIONOPS_KERNELS_SORT_H
#define VISIONOPS_KERNELS_SORT_H

#include "kernels/compat.h"
#include "kernels/score_key.h"

/* A sort record: an unsigned key and what it sorts. */
typedef struct vo_k_sort_pair {
  uint64_t key;
  int64_t item;
} vo_k_sort_pair;

/* One pass of a stable bottom-up merge sort of src[0..n) into dst: the
 * runs of `width` records (each sorted) merged pairwise; record e moves to
 * its rank in its merged pair of runs (a binary search in the other run:
 * equal keys of the left run go first). log2(n) passes sort n records. */
VO_KFN void vo_k_sort_pass(const VO_GLOBAL vo_k_sort_pair *src, VO_GLOBAL vo_k_sort_pair *dst,
                           int64_t n, int64_t width, int64_t e) {
  const int64_t lo = e / (2 * width) * (2 * width);
  const int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
  const uint64_t key = src[e].key;
  const int left = e < mid;
  int64_t a = left ? mid : lo, b = left ? hi : mid; /* the other run */
  while (a < b) {                                   /* first of it after key's place */
    const int64_t c = a + (b - a) / 2;
    if (src[c].key < key || (!left && src[c].key == key))
      a = c + 1;
    else
      b = c;
  }
  dst[lo + (e - (left ? lo : mid)) + (a - (left ? mid : lo))] = src[e];
}

/* The most threads a group may have for the work-group functions below
 * (a group's counts array holds VO_K_SORT_GROUP_MAX + 1). */
#define VO_K_SORT_GROUP_MAX 256

#ifdef VO_K_WORK_GROUPS
/* Where thread lid's stretch of a spare array starts when `size` threads
 * split items [0, n) interleaved (thread lid: items lid, lid + size, ...):
 * after the items of the threads before it, so each thread's stretch is as
 * long as its items and the stretches tile [0, n). */
VO_KFN int64_t vo_k_sort_group_stretch(int64_t n, int64_t lid, int64_t size) {
  const int64_t extra = n % size;
  return lid * (n / size) + (lid < extra ? lid : extra);
}

/* Work-group function, thread lid of size: the `found` records at `mine`
 * (this thread's) moved to dst after those of the threads before it, at
 * offsets from a prefix of the counts (counts: room for size + 1). Returns
 * how many records the group moved, the same in every thread; dst is
 * complete and counts free again when it returns. */
VO_KFN int64_t vo_k_sort_group_compact(VO_GLOBAL int64_t *counts,
                                       const VO_GLOBAL vo_k_sort_pair *mine, int64_t found,
                                       VO_GLOBAL vo_k_sort_pair *dst, int64_t lid, int64_t size) {
  counts[lid] = found;
  vo_k_barrier();
  if (lid == 0) {
    int64_t total = 0;
    for (int64_t t = 0; t < size; t++) {
      const int64_t v = counts[t];
      counts[t] = total;
      total += v;
    }
    counts[size] = total;
  }
  vo_k_barrier();
  const int64_t at = counts[lid], total = counts[size];
  for (int64_t f = 0; f < found; f++) dst[at + f] = mine[f];
  vo_k_barrier();
  return total;
}

/* Whether record x comes before y by key, then item. */
VO_KFN int vo_k_sort_before(vo_k_sort_pair x, vo_k_sort_pair y) {
  return x.key < y.key || (x.key == y.key && x.item < y.item);
}

/* Work-group function, thread lid of size (every thread calls it with the
 * same arrays and n): p[0..n) sorted by key, then item (the items must be
 * distinct: the order is then total and does not depend on p's order),
 * ping-ponging with tmp (room for n); returns the array holding the result
 * (the same for every thread). Merge passes of doubling width with a
 * barrier between them; in each, thread lid writes the lid-th of `size`
 * equal spans of the output, finding where its span starts in the two
 * runs it merges by one binary search on the merge path, then merging
 * sequentially: O(n / size + log n) a pass a thread, n log2(n) in all, as
 * a sequential merge sort. */
VO_KFN VO_GLOBAL vo_k_sort_pair *vo_k_sort_group(VO_GLOBAL vo_k_sort_pair *p,
                                                 VO_GLOBAL vo_k_sort_pair *tmp, int64_t n,
                                                 int64_t lid, int64_t size) {
  VO_GLOBAL vo_k_sort_pair *src = p, *dst = tmp;
  const int64_t span = (n + size - 1) / size;
  const int64_t o0 = lid * span < n ? lid * span : n, o1 = o0 + span < n ? o0 + span : n;
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t o = o0; o < o1;) { /* the pairs of runs the span covers */
      const int64_t lo = o / (2 * width) * (2 * width);
      const int64_t mid = lo + width < n ? lo + width : n;
      const int64_t hi = lo + 2 * width < n ? lo + 2 * width : n, end = o1 < hi ? o1 : hi;
      const int64_t d = o - lo, la = mid - lo, lb = hi - mid;
      int64_t i0 = d > lb ? d - lb : 0, i1 = d < la ? d : la; /* left records among the first d */
      while (i0 < i1) {
        const int64_t c = i0 + (i1 - i0) / 2;
        if (vo_k_sort_before(src[mid + d - 1 - c], src[lo + c]))
          i1 = c;
        else
          i0 = c + 1;
      }
      int64_t i = lo + i0, j = mid + d - i0;
      for (; o < end; o++)
        dst[o] = j >= hi || (i < mid && vo_k_sort_before(src[i], src[j])) ? src[i++] : src[j++];
    }
    vo_k_barrier();
    VO_GLOBAL vo_k_sort_pair *t = src;
    src = dst;
    dst = t;
  }
  return src;
}
#endif /* VO_K_WORK_GROUPS */

/* How many of the n ascending keys of list are < key, or <= key: a
 * record's rank among another sorted list's (the padded NMS ops' merges). */
VO_KFN int64_t vo_k_sorted_below(const VO_GLOBAL uint64_t *list, int64_t n, uint64_t key,
                                 int or_equal) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (list[mid] < key || (or_equal && list[mid] == key))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* n rounded up to 128 bytes: where the NMS ops' workspace arrays start. */
VO_KFN uint64_t vo_k_sort_align(uint64_t n) { return (n + 127) & ~(uint64_t)127; }

/* How many of `problems` problems a chunk runs when each needs a scratch
 * slot of slot_bytes and `total` bytes of state are kept for all of them:
 * as many slots as `limit` holds beyond the state, at least one, at most
 * all (slot_bytes 0: no problem needs scratch). */
VO_KFN int64_t vo_k_sort_chunk(uint64_t total, uint64_t slot_bytes, int64_t problems,
                               uint64_t limit) {
  const uint64_t budget = limit > total ? limit - total : 0;
  int64_t chunk = slot_bytes ? (int64_t)(budget / slot_bytes) : problems;
  if (chunk < 1) chunk = 1;
  return chunk > problems ? problems : chunk;
}

#endif /* VISIONOPS_KERNELS_SORT_H */
