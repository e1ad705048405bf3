/*
 * The CPU kernels' stable sort (src/cpu/sort.c): records of an unsigned key
 * and the position they came from, sorted by key with ties kept in input
 * order; the score keys (kernels/score_key.h) make it torch's stable
 * descending sort of scores. Used by every NMS op.
 */
#ifndef VISIONOPS_CPU_SORT_H
#define VISIONOPS_CPU_SORT_H

#include <stdint.h>

#include "kernels/score_key.h" /* vo_k_score_key_f32 / _f64: the keys these sorts order */

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

#endif /* VISIONOPS_CPU_SORT_H */
