/*
 * The CPU kernels' stable sort (cpu/sort.h).
 */
#include "cpu/sort.h"

/* Below this many records an insertion sort beats the radix sort's count
 * pass over 8 x 256 digits. */
#define VO_SORT_INSERTION_MAX 32

vo_sort_item *vo_cpu_radix_sort(vo_sort_item *a, vo_sort_item *tmp, int64_t n) {
  if (n <= VO_SORT_INSERTION_MAX) {
    for (int64_t i = 1; i < n; i++) {
      const vo_sort_item x = a[i];
      int64_t j = i;
      for (; j > 0 && a[j - 1].key > x.key; j--) a[j] = a[j - 1];
      a[j] = x;
    }
    return a;
  }
  static const int digits = 8;
  int64_t count[8][256];
  memset(count, 0, sizeof count);
  for (int64_t i = 0; i < n; i++) {
    const uint64_t k = a[i].key;
    for (int d = 0; d < digits; d++) count[d][(k >> (8 * d)) & 255]++;
  }
  for (int d = 0; d < digits; d++) {
    int64_t *c = count[d];
    int trivial = 0;
    for (int v = 0; v < 256; v++) trivial |= c[v] == n;
    if (trivial) continue;
    int64_t sum = 0;
    for (int v = 0; v < 256; v++) {
      const int64_t t = c[v];
      c[v] = sum;
      sum += t;
    }
    for (int64_t i = 0; i < n; i++) tmp[c[(a[i].key >> (8 * d)) & 255]++] = a[i];
    vo_sort_item *s = a;
    a = tmp;
    tmp = s;
  }
  return a;
}
