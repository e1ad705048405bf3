/*
 * Matrix NMS (SOLOv2; Paddle's matrix_nms) in the portable dialect
 * (kernels/compat.h): the pairwise IoU of two ranked candidates of one
 * (image, class) problem in both box conventions, the two decay functions,
 * and the work item of one candidate row. A problem's candidates are sorted
 * by score (rank 0 first) and held structure-of-arrays in the compute type:
 * boxes[0..n) x1, [n..2n) y1, [2n..3n) x2, [3n..4n) y2, [4n..5n) area.
 * The op is one parallel pass over an n x n IoU: K_i, the largest IoU of
 * row i (against the higher-ranked candidates), and d_i, the least decay
 * of row i given every K_j, j < i. A device runs the row item twice (all
 * K_i, then all d_i); the CPU runs it once per row in rank order, so K_j of
 * every j < i is known when row i is reached. Per compute type (float,
 * double) bodies: kernels/matrix_nms.inc.
 */
#ifndef VISIONOPS_KERNELS_MATRIX_NMS_H
#define VISIONOPS_KERNELS_MATRIX_NMS_H

#include "kernels/compat.h"
#include "kernels/exp.h"
#include "kernels/sort.h"

/* ------------------------------------------------ the device work items
 *
 * The devices' plan (opencl/matrix_nms.{c,cl}, cuda/matrix_nms.cu launch
 * these items), per chunk of (image, class) problems: a work group per
 * problem selects its candidates (score > score_threshold), sorts them by
 * score (ties by box index, as cpu/matrix_nms.c's order), keeps the first
 * nms_top_k and gathers them in the layout above (vo_k_mnms_problem_<T>,
 * with kernels/sort.h's work-group gather and sort); the row item runs
 * over every row of every problem twice (vo_k_mnms_rows_<T>: all K_i, then
 * all d_i); a work group per problem keeps the rows whose decayed score
 * passes post_threshold and sorts them by it, ties by rank
 * (vo_k_mnms_keep_<T>). Then, over all problems,
 * each kept row's rank in its image (binary searches in the other classes'
 * sorted lists; ties to the lower class, then the higher rank) places it in
 * the padded outputs (vo_k_mnms_place_<T>), and vo_k_mnms_finish pads and
 * writes num. */

/* What the items need of a call, by value (core/matrix_nms_args.h fills
 * it; 8-byte fields first). State kept for every problem (byte offsets in
 * the workspace): count [problems] kept rows, and per problem per_class
 * slots of kept key (uint64), box (int64) and decayed score (compute type);
 * cand [problems] the candidates a chunk's problem ranked. A chunk's slot:
 * two record arrays of m, the rows (the layout above's 5 * n boxes, then
 * comp, decay and score; per_class each), the ranked boxes' indices and the
 * group's counts [VO_K_SORT_GROUP_MAX + 1] (int64) at group_at. */
typedef struct vo_k_mnms_args {
  int64_t b_s0, b_s1, b_s2, s_s0, s_s1, s_s2;
  int64_t batch, classes, m, per_class, k, background, problems;
  uint64_t count_at, key_at, box_at, score_at, cand_at, total, rows_at, ids_at, group_at;
  uint64_t slot_bytes, tsize;
  vo_k_double_arg score_thr, post_thr, sigma; /* float64 compute */
  float score_thr_f32, post_thr_f32, sigma_f32;
  int s_dtype, b_dtype, gaussian, normalized;
} vo_k_mnms_args;

/* The layout fields (tsize: the compute type's size); sizes cannot
 * overflow: problems * per_class is at most the scores' element count. */
VO_KFN void vo_k_mnms_layout(vo_k_mnms_args *a, uint64_t tsize) {
  const uint64_t np = (uint64_t)a->problems, pc = (uint64_t)a->per_class;
  a->tsize = tsize;
  a->count_at = 0;
  a->key_at = vo_k_sort_align(np * 8);
  a->box_at = a->key_at + vo_k_sort_align(np * pc * 8);
  a->score_at = a->box_at + vo_k_sort_align(np * pc * 8);
  a->cand_at = a->score_at + vo_k_sort_align(np * pc * tsize);
  a->total = a->cand_at + np * 8;
  a->rows_at = vo_k_sort_align(2 * (uint64_t)a->m * sizeof(vo_k_sort_pair));
  a->ids_at = a->rows_at + vo_k_sort_align(8 * pc * tsize);
  a->group_at = a->ids_at + vo_k_sort_align(pc * 8);
  a->slot_bytes = a->group_at + vo_k_sort_align((VO_K_SORT_GROUP_MAX + 1) * 8);
}

/* Problems a chunk runs: as many slots as `limit` bytes hold beyond the
 * state, at least one, at most all. */
VO_KFN int64_t vo_k_mnms_chunk(const vo_k_mnms_args *a, uint64_t limit) {
  return vo_k_sort_chunk(a->total, a->slot_bytes, a->problems, limit);
}

/* Item e of batch * (k + 1): the padding of slot j = e % (k + 1) of image
 * b = e / (k + 1) past n = min(its kept rows, k) (a zero dets row, index
 * -1), or (j = k) num[b] = n. dets in the boxes' dtype. */
VO_KFN void vo_k_mnms_finish(const vo_k_mnms_args *a, const VO_GLOBAL char *ws,
                             VO_GLOBAL void *dets, VO_GLOBAL int64_t *index, VO_GLOBAL int64_t *num,
                             int64_t e) {
  const int64_t b = e / (a->k + 1), j = e % (a->k + 1);
  const int64_t per_image = a->problems == 0 ? 0 : a->classes;
  const VO_GLOBAL int64_t *count = (const VO_GLOBAL int64_t *)(ws + a->count_at);
  int64_t n = 0;
  for (int64_t c = 0; c < per_image; c++) n += count[b * per_image + c];
  if (n > a->k) n = a->k;
  if (j == a->k) {
    num[b] = n;
    return;
  }
  if (j < n) return;
  index[b * a->k + j] = -1;
  const int64_t row = (b * a->k + j) * 6;
  for (int t = 0; t < 6; t++) {
    if (a->b_dtype == VO_DT_F64)
      ((VO_GLOBAL uint64_t *)dets)[row + t] = 0;
    else if (a->b_dtype == VO_DT_F16 || a->b_dtype == VO_DT_BF16)
      ((VO_GLOBAL uint16_t *)dets)[row + t] = 0;
    else
      ((VO_GLOBAL uint32_t *)dets)[row + t] = 0;
  }
}

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/matrix_nms.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/matrix_nms.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_MATRIX_NMS_H */
