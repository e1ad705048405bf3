/*
 * The CPU kernels' stable sort (cpu/sort.h).
 */
#include "cpu/sort.h"

#include <string.h>

/* Runs of this many records are insertion-sorted before merging. */
#define VO_SORT_RUN 16
/* Up to this many records a merge sort beats the radix sort, whose count
 * pass and digit tables (8 x 256) cost microseconds whatever n is: an NMS
 * problem's candidates are often a few dozen. */
#define VO_SORT_MERGE_MAX 1024

static void vo_insertion_sort(vo_sort_item *a, int64_t n) {
  for (int64_t i = 1; i < n; i++) {
    const vo_sort_item x = a[i];
    int64_t j = i;
    for (; j > 0 && a[j - 1].key > x.key; j--) a[j] = a[j - 1];
    a[j] = x;
  }
}

/* Stable bottom-up merge sort: sorted runs, then passes merging pairs of
 * runs between a and tmp (the left run wins ties). */
static vo_sort_item *vo_merge_sort(vo_sort_item *a, vo_sort_item *tmp, int64_t n) {
  for (int64_t i = 0; i < n; i += VO_SORT_RUN)
    vo_insertion_sort(a + i, n - i < VO_SORT_RUN ? n - i : VO_SORT_RUN);
  for (int64_t width = VO_SORT_RUN; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      const int64_t mid = lo + width < n ? lo + width : n;
      const int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      /* Without a branch on the comparison: which run wins is data and
       * the branch mispredicted about half the time (1,000 records sort
       * 1.5x faster without it). The source is selected with a mask (gcc
       * turns a plain `?:` on it back into the branch). */
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        const int64_t take_j = a[j].key < a[i].key;
        tmp[k++] = a[i ^ ((i ^ j) & -take_j)];
        j += take_j;
        i += 1 - take_j;
      }
      while (i < mid) tmp[k++] = a[i++];
      while (j < hi) tmp[k++] = a[j++];
    }
    vo_sort_item *s = a;
    a = tmp;
    tmp = s;
  }
  return a;
}

vo_sort_item *vo_cpu_radix_sort(vo_sort_item *a, vo_sort_item *tmp, int64_t n) {
  if (n <= VO_SORT_MERGE_MAX) return vo_merge_sort(a, tmp, n);
  /* Only the bytes that differ between keys need a pass, and only theirs
   * are counted (float32 score keys: 4 of 8; category keys of a few
   * classes: 1): counting all eight bytes cost a quarter of the sort. */
  uint64_t all_and = ~(uint64_t)0, all_or = 0;
  for (int64_t i = 0; i < n; i++) {
    all_and &= a[i].key;
    all_or |= a[i].key;
  }
  const uint64_t varying = all_and ^ all_or;
  int shift[8], digits = 0;
  for (int d = 0; d < 8; d++)
    if ((varying >> (8 * d)) & 255) shift[digits++] = 8 * d;
  if (digits == 0) return a;
  int64_t count[8][256];
  memset(count, 0, (size_t)digits * sizeof count[0]);
  for (int64_t i = 0; i < n; i++) {
    const uint64_t k = a[i].key;
    for (int d = 0; d < digits; d++) count[d][(k >> shift[d]) & 255]++;
  }
  for (int d = 0; d < digits; d++) {
    int64_t *c = count[d], sum = 0;
    for (int v = 0; v < 256; v++) {
      const int64_t t = c[v];
      c[v] = sum;
      sum += t;
    }
    const int sh = shift[d];
    for (int64_t i = 0; i < n; i++) tmp[c[(a[i].key >> sh) & 255]++] = a[i];
    vo_sort_item *s = a;
    a = tmp;
    tmp = s;
  }
  return a;
}
