/*
 * The CPU kernels' stable sort (src/cpu/sort.c): records of an unsigned key
 * and the position they came from, sorted by key with ties kept in input
 * order, and the score keys whose ascending order is torch's stable
 * descending sort of scores. Used by every NMS op.
 */
#ifndef VISIONOPS_CPU_SORT_H
#define VISIONOPS_CPU_SORT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* A sort record: an unsigned key and the position it came from. */
typedef struct vo_sort_item {
  uint64_t key;
  int64_t index;
} vo_sort_item;

/* Stable sort of a[0..n) by key: a merge sort up to a thousand records,
 * else an LSD radix sort, 8 bits a pass, skipping a pass whose digit is the
 * same for every key (float32 keys use 4 of the 8 bytes, category keys of a
 * few classes one). The result is in a or tmp (room for n), returned. */
vo_sort_item *vo_cpu_radix_sort(vo_sort_item *a, vo_sort_item *tmp, int64_t n);

/* Keys whose ascending order is score descending with NaN first, as torch's
 * descending sort (the stable sort then orders ties by index). -0 and +0
 * are equal scores, so they get one key; every NaN gets key 0. */
static inline uint64_t vo_score_key_f64(double s) {
  if (isnan(s)) return 0;
  if (s == 0) s = 0;
  uint64_t u;
  memcpy(&u, &s, sizeof u);
  u = (u >> 63) ? ~u : u | (UINT64_C(1) << 63); /* ascending in s */
  return ~u;
}

static inline uint64_t vo_score_key_f32(float s) {
  if (isnan(s)) return 0;
  if (s == 0) s = 0;
  uint32_t u;
  memcpy(&u, &s, sizeof u);
  u = (u >> 31) ? ~u : u | (UINT32_C(1) << 31);
  return (uint64_t)(uint32_t)~u;
}

#endif /* VISIONOPS_CPU_SORT_H */
