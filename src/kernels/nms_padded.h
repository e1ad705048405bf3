/*
 * The per-(image, class) NMS of batched_nms_padded and onnx_nms in the
 * portable dialect (kernels/compat.h), written once for the CPU and the
 * device kernels: a box read in its op's convention becomes the corners
 * and area the suppression test uses, and the test itself, a kept box
 * against a later candidate (the kept box's coordinates first, as both
 * references write it). Conventions (vo_nms_padded_params.kind):
 *   VO_K_NP_TORCHVISION   batched_nms_padded: boxes in a torchvision format
 *                         (xyxy, xywh, cxcywh) converted to xyxy with
 *                         box_convert's arithmetic (kernels/box_convert.h),
 *                         then torchvision nms's IoU and IoU > thr
 *                         (kernels/nms.h), so the op equals batched_nms of
 *                         the converted boxes
 *   VO_K_NP_ONNX_CORNERS  onnx_nms, center_point_box 0: [y1, x1, y2, x2],
 *                         any diagonal pair (each axis ordered by min/max)
 *   VO_K_NP_ONNX_CENTER   onnx_nms, center_point_box 1: [xc, yc, w, h]
 * The ONNX conventions follow onnxruntime's arithmetic: a pair is never
 * suppressed when the intersection is empty (max <= min on an axis), its
 * area or either box's area or the union is <= 0, and otherwise when
 * inter / union > thr. Per storage dtype (the conversion rounds each step
 * to the storage type, as box_convert does): kernels/nms_padded.inc.
 */
#ifndef VISIONOPS_KERNELS_NMS_PADDED_H
#define VISIONOPS_KERNELS_NMS_PADDED_H

#include "kernels/box_convert.h"
#include "kernels/nms.h"
#include "kernels/sort.h"

#define VO_K_NP_TORCHVISION 0
#define VO_K_NP_ONNX_CORNERS 1
#define VO_K_NP_ONNX_CENTER 2

/* ------------------------------------------------ the device work items
 *
 * The devices' plan, the same on every backend (opencl/nms_padded.{c,cl},
 * cuda/nms_padded.cu only launch these): per chunk of (image, class)
 * problems a work group a problem (vo_k_np_group_<sfx>, SPEC-NEXT 4.3):
 * its threads scan the problem's scores together and write the candidates
 * into its scratch slot at offsets from a prefix of their counts, sort
 * them by (score key, item) with merge passes (vo_k_sort_group), then run
 * the greedy pass a tile of VO_K_NP_TILE candidates at a time: each thread
 * tests its candidates of the tile against the boxes kept so far, then
 * builds its candidate's row of the tile's 64-bit suppression mask, and
 * one thread walks the tile's rows, keeping what survives (the kept boxes
 * in the slot). Then the padded merge (vo_k_np_rank, vo_k_np_finish) or
 * the onnx rows (vo_k_np_offsets, vo_k_np_rows), a work item each. The
 * CPU (cpu/nms_padded.c) computes the same keys, order and tests with its
 * own schedule; test_backend_ops and test_opencl_nms_padded compare bit
 * for bit. */

/* A tile's candidates (one mask word). */
#define VO_K_NP_TILE 64

/* What the work items need of a call, by value (the host fills it with
 * vo_k_np_args_of; the layout is the same in C, CUDA and OpenCL C: the
 * 8-byte fields first). Boxes' strides: image, box, class (0 unless boxes
 * are per class), coordinate; scores' [B, C, M]. The workspace: the
 * selections [problems, cap] at sel_at, their keys at key_at, the counts
 * [problems] at count_at, onnx's offsets [problems + 1] at offset_at,
 * `total` bytes; a scratch slot per problem of a chunk: two pair arrays of
 * `items`, then cap kept boxes at kept_at, the group's counts
 * [VO_K_SORT_GROUP_MAX + 1] (int64) at group_at, the tile's mask words
 * [VO_K_NP_TILE] (uint64), survivor flags [VO_K_NP_TILE] (int32) and boxes
 * [VO_K_NP_TILE] at tile_at, slot_bytes in all. */
typedef struct vo_k_np_args {
  int64_t b_s0, b_s1, b_sc, b_sk, s_s0, s_s1, s_s2;
  int64_t m_count, classes, items, max_candidates, cap, problems, k_max, batches;
  uint64_t sel_at, key_at, count_at, offset_at, total, kept_at, group_at, tile_at, slot_bytes;
  vo_k_double_arg iou_thr, score_thr; /* float64 boxes / scores */
  float iou_thr_f32, score_thr_f32;   /* the others */
  int s_dtype, agnostic, kind, fmt, has_thr, pad;
} vo_k_np_args;

/* The args' layout fields from the sizes (problems * cap and items are at
 * most the scores' element count, so nothing overflows); box_bytes: a kept
 * box's size (vo_k_nms_box_f32 or _f64). */
VO_KFN void vo_k_np_layout(vo_k_np_args *a, uint64_t box_bytes) {
  const uint64_t np = (uint64_t)a->problems, cap = (uint64_t)a->cap;
  a->sel_at = 0;
  a->key_at = vo_k_sort_align(np * cap * 8);
  a->count_at = a->key_at + vo_k_sort_align(np * cap * 8);
  a->offset_at = a->count_at + vo_k_sort_align(np * 8);
  a->total = a->offset_at + (np + 1) * 8;
  a->kept_at = vo_k_sort_align(2 * (uint64_t)a->items * sizeof(vo_k_sort_pair));
  a->group_at = a->kept_at + vo_k_sort_align(cap * box_bytes);
  a->tile_at = a->group_at + vo_k_sort_align((VO_K_SORT_GROUP_MAX + 1) * 8);
  a->slot_bytes = a->tile_at + vo_k_sort_align(VO_K_NP_TILE * (8 + 4 + box_bytes));
}

/* How many problems a chunk runs: as many slots as `limit` bytes hold
 * beyond the state kept for every problem, at least one, at most all. */
VO_KFN int64_t vo_k_np_chunk(const vo_k_np_args *a, uint64_t limit) {
  return vo_k_sort_chunk(a->total, a->slot_bytes, a->problems, limit);
}

/* Problem q's image and first class: image q, every class (class-agnostic),
 * or (image q / C, class q % C). */
VO_KFN void vo_k_np_problem_of(const vo_k_np_args *a, int64_t q, int64_t *b, int64_t *c0) {
  *b = a->agnostic ? q : q / a->classes;
  *c0 = a->agnostic ? 0 : q % a->classes;
}

/* Whether box m of class c of image b is a candidate, and its score's
 * key. float64 scores compare in double, the others in float, with the
 * threshold of their type (vo_nms_padded_params). */
VO_KFN int vo_k_np_candidate(const vo_k_np_args *a, const VO_GLOBAL void *scores, int64_t b,
                             int64_t c, int64_t m, uint64_t *key) {
  const int64_t at = b * a->s_s0 + c * a->s_s1 + m * a->s_s2;
#if VO_K_FP64
  if (a->s_dtype == VO_DT_F64) {
    const double v = ((const VO_GLOBAL double *)scores)[at];
    if (a->has_thr && !(v > vo_k_double_arg_get(a->score_thr))) return 0;
    *key = vo_k_score_key_f64(v);
    return 1;
  }
#endif
  const float v = (float)vo_k_load_as_double(scores, a->s_dtype, at);
  if (a->has_thr && !(v > a->score_thr_f32)) return 0;
  *key = vo_k_score_key_f32(v);
  return 1;
}

/* The item after (c, m) by `step` items ((c - c0) * m_count + m; step >=
 * 1), without a division. */
VO_KFN void vo_k_np_advance(const vo_k_np_args *a, int64_t step, int64_t *c, int64_t *m) {
  *m += step;
  while (*m >= a->m_count) {
    *m -= a->m_count;
    ++*c;
  }
}

/* Element k of a scores-dtype tensor copied from element i of src as bits
 * (no float64 arithmetic), or zeroed (i < 0). */
VO_KFN void vo_k_np_copy_score(VO_GLOBAL void *dst, int64_t k, const VO_GLOBAL void *src, int64_t i,
                               int s_dtype) {
  if (s_dtype == VO_DT_F64)
    ((VO_GLOBAL uint64_t *)dst)[k] = i < 0 ? 0 : ((const VO_GLOBAL uint64_t *)src)[i];
  else if (s_dtype == VO_DT_F16 || s_dtype == VO_DT_BF16)
    ((VO_GLOBAL uint16_t *)dst)[k] = i < 0 ? 0 : ((const VO_GLOBAL uint16_t *)src)[i];
  else
    ((VO_GLOBAL uint32_t *)dst)[k] = i < 0 ? 0 : ((const VO_GLOBAL uint32_t *)src)[i];
}

/* padded, item e of problems * cap: selection r = e % cap of problem
 * q = e / cap at its rank in image b's order (score key, then class, then
 * selection), when below k_max: keep, labels and the score copied from
 * scores. ws: the workspace. */
VO_KFN void vo_k_np_rank(const vo_k_np_args *a, const VO_GLOBAL void *scores,
                         const VO_GLOBAL char *ws, VO_GLOBAL int64_t *keep,
                         VO_GLOBAL int64_t *labels, VO_GLOBAL void *scores_out, int64_t e) {
  const VO_GLOBAL int64_t *sel = (const VO_GLOBAL int64_t *)(ws + a->sel_at);
  const VO_GLOBAL uint64_t *key = (const VO_GLOBAL uint64_t *)(ws + a->key_at);
  const VO_GLOBAL int64_t *count = (const VO_GLOBAL int64_t *)(ws + a->count_at);
  const int64_t q = e / a->cap, r = e % a->cap;
  if (r >= count[q]) return;
  const int64_t b = a->agnostic ? q : q / a->classes;
  const int64_t c = a->agnostic ? sel[e] / a->m_count : q % a->classes;
  const int64_t m = a->agnostic ? sel[e] % a->m_count : sel[e];
  int64_t rank = r;
  for (int64_t o = 0; !a->agnostic && o < a->classes && rank < a->k_max; o++)
    if (o != c) {
      const int64_t qo = b * a->classes + o;
      rank += vo_k_sorted_below(key + qo * a->cap, count[qo], key[e], o < c);
    }
  if (rank >= a->k_max) return;
  keep[b * a->k_max + rank] = m;
  labels[b * a->k_max + rank] = c;
  vo_k_np_copy_score(scores_out, b * a->k_max + rank, scores,
                     b * a->s_s0 + c * a->s_s1 + m * a->s_s2, a->s_dtype);
}

/* padded, item e of batches * (k_max + 1): the padding of slot k = e %
 * (k_max + 1) of image b = e / (k_max + 1) past n = min(its selections,
 * k_max), or (k = k_max) num[b] = n. Without boxes there are no problems
 * (problems = 0): padding only. */
VO_KFN void vo_k_np_finish(const vo_k_np_args *a, const VO_GLOBAL char *ws, VO_GLOBAL int64_t *keep,
                           VO_GLOBAL int64_t *labels, VO_GLOBAL void *scores_out,
                           VO_GLOBAL int64_t *num, int64_t e) {
  const VO_GLOBAL int64_t *count = (const VO_GLOBAL int64_t *)(ws + a->count_at);
  const int64_t b = e / (a->k_max + 1), k = e % (a->k_max + 1);
  const int64_t per_image = a->problems == 0 ? 0 : a->agnostic ? 1 : a->classes;
  int64_t n = 0;
  for (int64_t o = 0; o < per_image; o++) n += count[b * per_image + o];
  if (n > a->k_max) n = a->k_max;
  if (k == a->k_max) {
    num[b] = n;
  } else if (k >= n) {
    keep[b * a->k_max + k] = -1;
    labels[b * a->k_max + k] = -1;
    vo_k_np_copy_score(scores_out, b * a->k_max + k, scores_out, -1, a->s_dtype);
  }
}

/* onnx, one work item: offset[q] the first row of problem q,
 * offset[problems] (and num_selected) the total. */
VO_KFN void vo_k_np_offsets(const vo_k_np_args *a, VO_GLOBAL char *ws,
                            VO_GLOBAL int64_t *num_selected) {
  const VO_GLOBAL int64_t *count = (const VO_GLOBAL int64_t *)(ws + a->count_at);
  VO_GLOBAL int64_t *offset = (VO_GLOBAL int64_t *)(ws + a->offset_at);
  int64_t total = 0;
  for (int64_t q = 0; q < a->problems; q++) {
    offset[q] = total;
    total += count[q];
  }
  offset[a->problems] = total;
  *num_selected = total;
}

/* onnx, item e of problems * cap: row offset[q] + r (batch, class, box) of
 * selection r = e % cap of problem q = e / cap, or one of the problem's
 * cap - count[q] -1 rows from total + q * cap - offset[q] (the problems'
 * shares tile the padding). */
VO_KFN void vo_k_np_rows(const vo_k_np_args *a, const VO_GLOBAL char *ws, VO_GLOBAL int64_t *rows,
                         int64_t e) {
  const VO_GLOBAL int64_t *sel = (const VO_GLOBAL int64_t *)(ws + a->sel_at);
  const VO_GLOBAL int64_t *count = (const VO_GLOBAL int64_t *)(ws + a->count_at);
  const VO_GLOBAL int64_t *offset = (const VO_GLOBAL int64_t *)(ws + a->offset_at);
  const int64_t q = e / a->cap, r = e % a->cap, n = count[q];
  VO_GLOBAL int64_t *row =
      rows + 3 * (r < n ? offset[q] + r : offset[a->problems] + q * a->cap - offset[q] + r - n);
  row[0] = r < n ? q / a->classes : -1;
  row[1] = r < n ? q % a->classes : -1;
  row[2] = r < n ? sel[e] : -1;
}

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/nms_padded.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/nms_padded.inc"
#include "kernels/dtype_end.h"

#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "kernels/nms_padded.inc"
#include "kernels/dtype_end.h"

#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "kernels/nms_padded.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_NMS_PADDED_H */
