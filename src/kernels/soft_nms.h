/*
 * soft_nms's per-pair math in the portable dialect (kernels/compat.h), once
 * for every backend: a box's area and the IoU of a selected box with a
 * remaining one, both with mmcv's `offset` (SPEC-NEXT 2.2), and the weight
 * that rescores the remaining box (hard, linear, gaussian). The CPU's plain
 * path runs these functions (cpu/soft_nms.c; its float32 AVX2 loop is a
 * bit-identical restatement of the same operations); device glue can follow.
 * Per compute type (float, double): functions suffixed _f32 / _f64; this
 * header includes itself once per type with VO_K_SOFT_NMS_BODY defined.
 */
#ifndef VO_K_SOFT_NMS_BODY
#ifndef VISIONOPS_KERNELS_SOFT_NMS_H
#define VISIONOPS_KERNELS_SOFT_NMS_H

#include "kernels/compat.h"
#include "kernels/exp.h"
#include "kernels/sort.h"

/* The method argument's values. */
#define VO_K_SOFT_NMS_HARD 0
#define VO_K_SOFT_NMS_LINEAR 1
#define VO_K_SOFT_NMS_GAUSSIAN 2

/* ------------------------------------------------ the device work items
 *
 * The devices' plan (opencl/soft_nms.{c,cl}, cuda/soft_nms.cu launch these
 * items): batched_soft_nms sorts (category, index) pairs by category with
 * stable merge passes (vo_k_sort_pass, one launch per doubling width), so
 * each category's boxes are a run of slots in index order; soft_nms has
 * one run. vo_k_snms_gather_<T> puts slot s's box and score in the compute
 * type; then a work group per run (vo_k_snms_run_<T>, at the run's first
 * slot) does the CPU's rounds: every thread rescores its share of the
 * run's boxes against the selection and drops those under min_score, and
 * a tree reduction finds the next selection (the first best: ties to the
 * lowest slot, NaN above every number, as cpu/soft_nms.inc). The kept
 * boxes are written at the run's slots; batched_soft_nms then orders them
 * by score, stably over their original indices (vo_k_snms_mark,
 * vo_k_snms_rank_key, merge passes), and vo_k_snms_row_<T> writes dets and
 * keep. The arithmetic is the functions above, so the decisions are the
 * CPU's; gaussian's exp is kernels/exp.h's on the devices, within an ulp
 * of the C library's that the CPU calls. */

/* batched_soft_nms's category key: int64 order as unsigned order. */
VO_KFN uint64_t vo_k_snms_category_key(int64_t c) { return (uint64_t)c ^ ((uint64_t)1 << 63); }

/* What the items need of a call, by value (core/soft_nms_args.h fills it;
 * the same layout in C, CUDA and OpenCL C: 8-byte fields first). The
 * workspace (byte offsets): two pair arrays [n] (the sort's ping-pong),
 * the compute-type arrays x1, y1, x2, y2, area, score, kept_score and the
 * reduction's scores [n], the int64 arrays order (slot -> index),
 * kept_index, counts (at a run's first slot), the reduction's slots and
 * pos (index -> kept position), and alive [n] int32. */
typedef struct vo_k_snms_args {
  int64_t n, b_s0, b_s1, s_s0, i_s0;
  uint64_t pairs_at, spare_at, t_at, order_at, kept_index_at, counts_at, red_slot_at, pos_at;
  uint64_t alive_at, total, tsize;
  vo_k_double_arg thr, sigma, min_score, offset; /* float64 compute */
  float thr_f32, sigma_f32, min_score_f32, offset_f32;
  int b_dtype, s_dtype, method, batched;
} vo_k_snms_args;

/* Compute-type array k of the workspace: 0..5 x1, y1, x2, y2, area, score;
 * 6 kept_score; 7 the reduction's scores. */
VO_KFN uint64_t vo_k_snms_t_at(const vo_k_snms_args *a, int k) {
  return a->t_at + (uint64_t)k * (uint64_t)a->n * a->tsize;
}

VO_KFN void vo_k_snms_layout(vo_k_snms_args *a, uint64_t tsize) {
  const uint64_t n = (uint64_t)a->n;
  a->tsize = tsize;
  a->pairs_at = 0;
  a->spare_at = n * 16;
  a->t_at = 2 * n * 16;
  a->order_at = a->t_at + 8 * n * tsize;
  a->kept_index_at = a->order_at + n * 8;
  a->counts_at = a->kept_index_at + n * 8;
  a->red_slot_at = a->counts_at + n * 8;
  a->pos_at = a->red_slot_at + n * 8;
  a->alive_at = a->pos_at + n * 8;
  a->total = a->alive_at + n * 4;
}

/* Item i of n: the record (category key, i) of box i (key 0 for soft_nms). */
VO_KFN void vo_k_snms_pair(const vo_k_snms_args *a, const VO_GLOBAL int64_t *idxs,
                           VO_GLOBAL char *ws, int64_t i) {
  vo_k_sort_pair r;
  r.key = a->batched ? vo_k_snms_category_key(idxs[i * a->i_s0]) : 0;
  r.item = i;
  ((VO_GLOBAL vo_k_sort_pair *)(ws + a->pairs_at))[i] = r;
}

/* The first slot of slot s's run in the sorted records. */
VO_KFN int64_t vo_k_snms_run_start(const VO_GLOBAL vo_k_sort_pair *sorted, int64_t s) {
  int64_t lo = 0, hi = s;
  const uint64_t key = sorted[s].key;
  while (lo < hi) {
    const int64_t c = lo + (hi - lo) / 2;
    if (sorted[c].key < key)
      lo = c + 1;
    else
      hi = c;
  }
  return lo;
}

/* Kept position of output row r: batched, the final order's record (-1
 * past the kept ones); else the selections at slots [0, counts[0]). */
VO_KFN int64_t vo_k_snms_row_source(const vo_k_snms_args *a, const VO_GLOBAL vo_k_sort_pair *sorted,
                                    const VO_GLOBAL char *ws, int64_t r) {
  if (a->batched) return sorted[r].item;
  return r < ((const VO_GLOBAL int64_t *)(ws + a->counts_at))[0] ? r : -1;
}

/* One item: num_kept, the kept rows' count (batched: the records before
 * the first all-ones key of the final order). */
VO_KFN void vo_k_snms_num(const vo_k_snms_args *a, const VO_GLOBAL vo_k_sort_pair *sorted,
                          const VO_GLOBAL char *ws, VO_GLOBAL int64_t *num_kept) {
  if (!a->batched) {
    *num_kept = ((const VO_GLOBAL int64_t *)(ws + a->counts_at))[0];
    return;
  }
  int64_t lo = 0, hi = a->n;
  while (lo < hi) {
    const int64_t c = lo + (hi - lo) / 2;
    if (sorted[c].key != ~(uint64_t)0)
      lo = c + 1;
    else
      hi = c;
  }
  *num_kept = lo;
}

#define VO_K_SOFT_NMS_BODY
#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/soft_nms.h"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/soft_nms.h"
#include "kernels/dtype_end.h"
#undef VO_K_SOFT_NMS_BODY

#endif /* VISIONOPS_KERNELS_SOFT_NMS_H */
#elif VO_S_ENABLED
/* VO_K_SOFT_NMS_BODY: the body for one compute type VO_T. */

/* (x2 - x1 + offset) * (y2 - y1 + offset). */
VO_KFN VO_T VO_TN(vo_k_soft_nms_area)(VO_T x1, VO_T y1, VO_T x2, VO_T y2, VO_T offset) {
  return (x2 - x1 + offset) * (y2 - y1 + offset);
}

/* The IoU of selected box i and remaining box j in mmcv's order of
 * operations: max / min with i's coordinate first (max(a, b) = a < b ? b : a,
 * min(a, b) = b < a ? b : a), extents max(0, min(x2) - max(x1) + offset),
 * and inter / (area_i + area_j - inter) without an epsilon, so two boxes
 * without a union give 0 / 0 = NaN. */
VO_KFN VO_T VO_TN(vo_k_soft_nms_iou)(VO_T ix1, VO_T iy1, VO_T ix2, VO_T iy2, VO_T iarea, VO_T jx1,
                                     VO_T jy1, VO_T jx2, VO_T jy2, VO_T jarea, VO_T offset) {
  const VO_T xx1 = ix1 < jx1 ? jx1 : ix1;
  const VO_T yy1 = iy1 < jy1 ? jy1 : iy1;
  const VO_T xx2 = jx2 < ix2 ? jx2 : ix2;
  const VO_T yy2 = jy2 < iy2 ? jy2 : iy2;
  const VO_T wr = xx2 - xx1 + offset, hr = yy2 - yy1 + offset;
  const VO_T w = (VO_T)0 < wr ? wr : (VO_T)0, h = (VO_T)0 < hr ? hr : (VO_T)0;
  const VO_T inter = w * h;
  return inter / (iarea + jarea - inter);
}

/* The factor a remaining box's score is multiplied by, given its IoU with
 * the selected box: hard 0 if IoU >= thr, linear 1 - IoU if IoU >= thr
 * (both 1 otherwise), gaussian exp(-IoU^2 / sigma) whatever thr. A NaN IoU
 * gives 1 for every method: NaN >= thr is false, and gaussian, whose
 * formula would give NaN, is defined so too (docs/DECISIONS.md). An IoU of
 * 0 gives exactly 1 (gaussian: exp(-0) = 1), which the CPU's AVX2 loop
 * relies on to call exp only for overlapping boxes. */
VO_KFN VO_T VO_TN(vo_k_soft_nms_weight)(VO_T iou, int method, VO_T thr, VO_T sigma) {
  if (method == VO_K_SOFT_NMS_GAUSSIAN)
    return iou == iou ? VO_T_EXP(-(iou * iou) / sigma) : (VO_T)1;
  if (!(iou >= thr)) return (VO_T)1;
  return method == VO_K_SOFT_NMS_LINEAR ? (VO_T)1 - iou : (VO_T)0;
}

/* The scalars in the compute type. */
VO_KFN void VO_TN(vo_k_snms_scalars)(const vo_k_snms_args *a, VO_T *thr, VO_T *sigma,
                                     VO_T *min_score, VO_T *offset) {
#if defined(VO_S_F64)
  *thr = vo_k_double_arg_get(a->thr), *sigma = vo_k_double_arg_get(a->sigma);
  *min_score = vo_k_double_arg_get(a->min_score), *offset = vo_k_double_arg_get(a->offset);
#else
  *thr = a->thr_f32, *sigma = a->sigma_f32, *min_score = a->min_score_f32;
  *offset = a->offset_f32;
#endif
}

/* The selection order: s before t when s is higher, NaN above every number
 * (cpu/soft_nms.inc's vo_snms_better). */
VO_KFN int VO_TN(vo_k_snms_better)(VO_T s, VO_T t) { return s > t || (s != s && t == t); }

/* Item s of n: slot s's box (the sorted records' item) in the compute type,
 * its area and score, alive; counts[s] = 0. */
VO_KFN void VO_TN(vo_k_snms_gather)(const vo_k_snms_args *a, const VO_GLOBAL void *boxes,
                                    const VO_GLOBAL void *scores,
                                    const VO_GLOBAL vo_k_sort_pair *sorted, VO_GLOBAL char *ws,
                                    int64_t s) {
  VO_T thr, sigma, min_score, offset;
  VO_TN(vo_k_snms_scalars)(a, &thr, &sigma, &min_score, &offset);
  VO_GLOBAL VO_T *t = (VO_GLOBAL VO_T *)(ws + a->t_at);
  const int64_t n = a->n, i = sorted[s].item;
  VO_T c[4];
  for (int k = 0; k < 4; k++)
    c[k] = (VO_T)vo_k_load_as_double(boxes, a->b_dtype, i * a->b_s0 + k * a->b_s1);
  for (int k = 0; k < 4; k++) t[k * n + s] = c[k];
  t[4 * n + s] = VO_TN(vo_k_soft_nms_area)(c[0], c[1], c[2], c[3], offset);
  t[5 * n + s] = (VO_T)vo_k_load_as_double(scores, a->s_dtype, i * a->s_s0);
  ((VO_GLOBAL int64_t *)(ws + a->order_at))[s] = i;
  ((VO_GLOBAL int64_t *)(ws + a->counts_at))[s] = 0;
  ((VO_GLOBAL int32_t *)(ws + a->alive_at))[s] = 1;
}

#ifdef VO_K_WORK_GROUPS
/* Work-group function, thread lid of size (every thread calls it with the
 * same slot g): when g starts a run of the sorted records, the run's
 * soft-NMS; its selections' indices and scores at kept_index / kept_score
 * [g, g + count), count at counts[g]. The reduction uses the run's own
 * slots of the reduction arrays, so runs never share scratch. */
VO_KFN void VO_TN(vo_k_snms_run)(const vo_k_snms_args *a, const VO_GLOBAL vo_k_sort_pair *sorted,
                                 VO_GLOBAL char *ws, int64_t g, int64_t lid, int64_t size) {
  if (g > 0 && sorted[g - 1].key == sorted[g].key) return; /* not a run's first slot */
  int64_t end = g + 1, hi = a->n; /* the run's end: the first slot of a larger key */
  while (end < hi) {
    const int64_t c = end + (hi - end) / 2;
    if (sorted[c].key == sorted[g].key)
      end = c + 1;
    else
      hi = c;
  }
  VO_T thr, sigma, min_score, offset;
  VO_TN(vo_k_snms_scalars)(a, &thr, &sigma, &min_score, &offset);
  const int64_t n = a->n, m = end - g, parts = m < size ? m : size;
  VO_GLOBAL VO_T *t = (VO_GLOBAL VO_T *)(ws + a->t_at);
  VO_GLOBAL VO_T *x1 = t + g, *y1 = t + n + g, *x2 = t + 2 * n + g, *y2 = t + 3 * n + g;
  VO_GLOBAL VO_T *area = t + 4 * n + g, *score = t + 5 * n + g, *kept_score = t + 6 * n + g;
  VO_GLOBAL VO_T *red_score = t + 7 * n + g;
  VO_GLOBAL int64_t *red_slot = (VO_GLOBAL int64_t *)(ws + a->red_slot_at) + g;
  VO_GLOBAL int32_t *alive = (VO_GLOBAL int32_t *)(ws + a->alive_at) + g;
  VO_GLOBAL int64_t *kept_index = (VO_GLOBAL int64_t *)(ws + a->kept_index_at) + g;
  const VO_GLOBAL int64_t *order = (const VO_GLOBAL int64_t *)(ws + a->order_at) + g;
  int64_t count = 0, span = 1; /* parts rounded up to a power of two */
  while (span < parts) span *= 2;
  for (;;) {
    /* this thread's first best of its alive slots lid, lid + size, ... */
    if (lid < parts) {
      int64_t best = -1;
      VO_T bs = 0;
      for (int64_t j = lid; j < m; j += size)
        if (alive[j] && (best < 0 || VO_TN(vo_k_snms_better)(score[j], bs)))
          best = j, bs = score[j];
      red_slot[lid] = best;
      red_score[lid] = bs;
    }
    vo_k_barrier();
    for (int64_t w = span / 2; w > 0; w /= 2) {
      if (lid < w && lid + w < parts) {
        const int64_t sa = red_slot[lid], sb = red_slot[lid + w];
        const VO_T va = red_score[lid], vb = red_score[lid + w];
        if (sb >= 0 && (sa < 0 || VO_TN(vo_k_snms_better)(vb, va) ||
                        (!VO_TN(vo_k_snms_better)(va, vb) && sb < sa))) {
          red_slot[lid] = sb;
          red_score[lid] = vb;
        }
      }
      vo_k_barrier();
    }
    const int64_t p = red_slot[0];
    vo_k_barrier(); /* everyone has p before thread 0 writes red_slot[0] again */
    if (p < 0) break;
    if (lid == 0) {
      kept_index[count] = order[p];
      kept_score[count] = score[p];
    }
    count++;
    const VO_T px1 = x1[p], py1 = y1[p], px2 = x2[p], py2 = y2[p], parea = area[p];
    for (int64_t j = lid; j < m; j += size) {
      if (!alive[j]) continue;
      if (j == p) {
        alive[j] = 0;
        continue;
      }
      const VO_T iou = VO_TN(vo_k_soft_nms_iou)(px1, py1, px2, py2, parea, x1[j], y1[j], x2[j],
                                                y2[j], area[j], offset);
      const VO_T sj = score[j] * VO_TN(vo_k_soft_nms_weight)(iou, a->method, thr, sigma);
      if (sj < min_score)
        alive[j] = 0;
      else
        score[j] = sj;
    }
    vo_k_barrier();
  }
  if (lid == 0) ((VO_GLOBAL int64_t *)(ws + a->counts_at))[g] = count;
}
#endif /* VO_K_WORK_GROUPS */

/* batched, item s of n: pos[kept_index[s]] = s when slot s holds a kept box
 * (its run's count covers it); pos starts at -1. */
VO_KFN void VO_TN(vo_k_snms_mark)(const vo_k_snms_args *a, const VO_GLOBAL vo_k_sort_pair *sorted,
                                  VO_GLOBAL char *ws, int64_t s) {
  const int64_t g = vo_k_snms_run_start(sorted, s);
  if (s - g >= ((const VO_GLOBAL int64_t *)(ws + a->counts_at))[g]) return;
  const int64_t i = ((const VO_GLOBAL int64_t *)(ws + a->kept_index_at))[s];
  ((VO_GLOBAL int64_t *)(ws + a->pos_at))[i] = s;
}

/* batched, item i of n: the record of box i for the final order: its kept
 * score's key (kernels/score_key.h) and kept position, or (all ones, -1)
 * when dropped, which sorts last (no score key is all ones). */
VO_KFN void VO_TN(vo_k_snms_rank_key)(const vo_k_snms_args *a, VO_GLOBAL char *ws, int64_t i) {
  const int64_t e = ((const VO_GLOBAL int64_t *)(ws + a->pos_at))[i];
  const VO_GLOBAL VO_T *kept_score = (const VO_GLOBAL VO_T *)(ws + vo_k_snms_t_at(a, 6));
  vo_k_sort_pair r;
  r.item = e;
#if defined(VO_S_F64)
  r.key = e < 0 ? ~(uint64_t)0 : vo_k_score_key_f64(kept_score[e]);
#else
  r.key = e < 0 ? ~(uint64_t)0 : vo_k_score_key_f32(kept_score[e]);
#endif
  ((VO_GLOBAL vo_k_sort_pair *)(ws + a->pairs_at))[i] = r;
}

/* Item r of n: output row r (vo_k_snms_row_source; padding: a zero row and
 * keep -1); dets in the boxes' dtype, as cpu/soft_nms.c stores them. */
VO_KFN void VO_TN(vo_k_snms_row)(const vo_k_snms_args *a, const VO_GLOBAL void *boxes,
                                 const VO_GLOBAL vo_k_sort_pair *sorted, const VO_GLOBAL char *ws,
                                 VO_GLOBAL void *dets, VO_GLOBAL int64_t *keep, int64_t r) {
  const int64_t e = vo_k_snms_row_source(a, sorted, ws, r);
  const VO_GLOBAL VO_T *kept_score = (const VO_GLOBAL VO_T *)(ws + vo_k_snms_t_at(a, 6));
  const int64_t i = e < 0 ? -1 : ((const VO_GLOBAL int64_t *)(ws + a->kept_index_at))[e];
  for (int k = 0; k < 5; k++) {
    const VO_T v = e < 0   ? (VO_T)0
                   : k < 4 ? (VO_T)vo_k_load_as_double(boxes, a->b_dtype, i * a->b_s0 + k * a->b_s1)
                           : kept_score[e];
    const int64_t at = 5 * r + k;
    if (a->b_dtype == VO_DT_F16)
      ((VO_GLOBAL uint16_t *)dets)[at] = vo_k_f32_to_f16((float)v);
    else if (a->b_dtype == VO_DT_BF16)
      ((VO_GLOBAL uint16_t *)dets)[at] = vo_k_f32_to_bf16((float)v);
#if defined(VO_S_F64)
    else if (a->b_dtype == VO_DT_F64)
      ((VO_GLOBAL double *)dets)[at] = v;
#endif
    else
      ((VO_GLOBAL float *)dets)[at] = (float)v;
  }
  keep[r] = i;
}

#endif /* VO_K_SOFT_NMS_BODY */
