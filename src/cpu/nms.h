/*
 * The CPU's greedy NMS (cpu/nms.c), shared by nms and nms_rotated: a box
 * kind (axis-aligned in cpu/nms.c, rotated in cpu/nms_rotated.c) lays out a
 * category's boxes in score order and applies a kept box to a range of later
 * ones; the score sort, the grouping by category and the (multi-threaded)
 * greedy pass are the same for every kind.
 */
#ifndef VISIONOPS_CPU_NMS_H
#define VISIONOPS_CPU_NMS_H

#include "cpu/common.h"

typedef struct vo_nms_boxes vo_nms_boxes;

/* Kept slot i against slots [j0, j1), all after it: sup[j] |= whether i
 * suppresses j (suppression flags are only ever set). */
typedef void (*vo_nms_apply_fn)(const vo_nms_boxes *b, int64_t i, int64_t j0, int64_t j1,
                                uint8_t *sup);

/* One category's boxes in score order (slots 0..m-1) in its kind's layout. */
struct vo_nms_boxes {
  int64_t m;
  const void *array[5]; /* the kind's per-slot arrays (slot 0 first) */
  float thr_f32;        /* the threshold in the compute type */
  double thr_f64;
  vo_nms_apply_fn apply;
};

typedef struct vo_nms_kind {
  /* Workspace bytes per box of the kind's layout: [0] float compute
   * (float32 and half boxes), [1] double (float64 boxes). */
  size_t box_bytes[2];
  /* One-thread time of one kept-candidate test, ns, and the least boxes of
   * one category that get several threads (vo_nms_threads). */
  double pair_ns;
  int64_t parallel_min;
  /* Lays out slots [start, start + m) of the score-ordered boxes (slot k
   * holds row slot_index[k] of the op's boxes) into store (the kind's
   * workspace, room for n boxes: slot k's part at k) and describes them in
   * b, all but b->m. */
  void (*gather)(const vo_exec *ex, void *store, int64_t n, int64_t start, int64_t m,
                 const int64_t *slot_index, vo_nms_boxes *b);
} vo_nms_kind;

/* b's threshold in the compute type (VO_TN(vo_nms_thr) in per-type code). */
static inline float vo_nms_thr_f32(const vo_nms_boxes *b) { return b->thr_f32; }
static inline double vo_nms_thr_f64(const vo_nms_boxes *b) { return b->thr_f64; }

/* nms or nms_rotated (ex->p.nms) with boxes of `kind`. */
vo_status vo_cpu_nms_run(const vo_exec *ex, const vo_nms_kind *kind);

#endif /* VISIONOPS_CPU_NMS_H */
