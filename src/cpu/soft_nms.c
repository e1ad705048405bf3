/*
 * CPU soft_nms and batched_soft_nms: per category, the remaining boxes as
 * structure-of-arrays; each round rescores them against the selected box
 * (kernels/soft_nms.h), drops those under min_score by a stable compaction
 * and finds the next selection in the same pass (cpu/soft_nms.inc). The
 * float32 AVX2 round below computes the same operations eight boxes at a
 * time (bit-identical: no FMA contraction, and gaussian's exp is the
 * portable weight, called per overlapping box). batched_soft_nms runs its
 * categories in parallel and merges them by score at selection.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/common.h"
#include "cpu/sort.h"
#include "kernels/soft_nms.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define VO_HAVE_AVX2_KERNELS 1
#endif

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cpu/soft_nms.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cpu/soft_nms.inc"
#include "kernels/dtype_end.h"

#ifdef VO_HAVE_AVX2_KERNELS
/* Slots [j, j1) as vo_snms_range_f32, eight at a time. Each lane computes
 * the plain path's operations in its order: max_ps(a, b) is a > b ? a : b
 * and min_ps(a, b) is a < b ? a : b, so max_ps(x1[j], ix1) is the portable
 * ix1 < x1[j] ? x1[j] : ix1, and so on; the ordered comparisons are false
 * for NaN as C's. Gaussian weights come from the portable function, for
 * the lanes whose IoU is neither 0 (weight exactly 1) nor NaN (1). A group
 * of eight without a dropped box is stored at slot w in one go (w <= j, so
 * it overwrites only slots already read); a group with one goes lane by
 * lane. Each lane keeps its first best in bestv / bestpos (-1: none yet);
 * the scalar lanes keep theirs in *best / *bs. */
static inline __attribute__((always_inline, target("avx2,fma"))) int64_t vo_snms_range_avx2(
    const vo_snms_set_f32 *a, int64_t j, int64_t j1, int64_t w, const float *i,
    const vo_snms_q_f32 *q, __m256 *bestv, __m256i *bestpos, int64_t *best, float *bs) {
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  const __m256 vx1 = _mm256_set1_ps(i[0]), vy1 = _mm256_set1_ps(i[1]);
  const __m256 vx2 = _mm256_set1_ps(i[2]), vy2 = _mm256_set1_ps(i[3]);
  const __m256 varea = _mm256_set1_ps(i[4]), voff = _mm256_set1_ps(q->offset);
  const __m256 vthr = _mm256_set1_ps(q->thr), vmin = _mm256_set1_ps(q->min_score);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), none = _mm256_set1_epi32(-1);
  for (; j + 8 <= j1; j += 8) {
    const __m256 x1 = _mm256_loadu_ps(a->x1 + j), y1 = _mm256_loadu_ps(a->y1 + j);
    const __m256 x2 = _mm256_loadu_ps(a->x2 + j), y2 = _mm256_loadu_ps(a->y2 + j);
    const __m256 area = _mm256_loadu_ps(a->area + j), score = _mm256_loadu_ps(a->score + j);
    const __m256 xx1 = _mm256_max_ps(x1, vx1), yy1 = _mm256_max_ps(y1, vy1);
    const __m256 xx2 = _mm256_min_ps(x2, vx2), yy2 = _mm256_min_ps(y2, vy2);
    const __m256 wd = _mm256_max_ps(_mm256_add_ps(_mm256_sub_ps(xx2, xx1), voff), zero);
    const __m256 ht = _mm256_max_ps(_mm256_add_ps(_mm256_sub_ps(yy2, yy1), voff), zero);
    const __m256 inter = _mm256_mul_ps(wd, ht);
    const __m256 iou = _mm256_div_ps(inter, _mm256_sub_ps(_mm256_add_ps(varea, area), inter));
    __m256 weight;
    if (q->method == VO_K_SOFT_NMS_GAUSSIAN) {
      int need = _mm256_movemask_ps(_mm256_cmp_ps(iou, zero, _CMP_NEQ_OQ));
      weight = one;
      if (need) {
        float iv[8], wv[8];
        _mm256_storeu_ps(iv, iou);
        _mm256_storeu_ps(wv, one);
        for (; need; need &= need - 1) {
          const int l = __builtin_ctz((unsigned)need);
          wv[l] = vo_k_soft_nms_weight_f32(iv[l], q->method, q->thr, q->sigma);
        }
        weight = _mm256_loadu_ps(wv);
      }
    } else {
      const __m256 ge = _mm256_cmp_ps(iou, vthr, _CMP_GE_OQ);
      weight = q->method == VO_K_SOFT_NMS_LINEAR
                   ? _mm256_blendv_ps(one, _mm256_sub_ps(one, iou), ge)
                   : _mm256_andnot_ps(ge, one);
    }
    const __m256 s = _mm256_mul_ps(score, weight);
    const int drop = _mm256_movemask_ps(_mm256_cmp_ps(s, vmin, _CMP_LT_OQ));
    if (!drop) {
      if (w != j) {
        _mm256_storeu_ps(a->x1 + w, x1), _mm256_storeu_ps(a->y1 + w, y1);
        _mm256_storeu_ps(a->x2 + w, x2), _mm256_storeu_ps(a->y2 + w, y2);
        _mm256_storeu_ps(a->area + w, area);
        const __m256i lo = _mm256_loadu_si256((const __m256i *)(a->index + j));
        const __m256i hi = _mm256_loadu_si256((const __m256i *)(a->index + j + 4));
        _mm256_storeu_si256((__m256i *)(a->index + w), lo);
        _mm256_storeu_si256((__m256i *)(a->index + w + 4), hi);
      }
      _mm256_storeu_ps(a->score + w, s);
      const __m256 snan = _mm256_cmp_ps(s, s, _CMP_UNORD_Q);
      const __m256 bnan = _mm256_cmp_ps(*bestv, *bestv, _CMP_UNORD_Q);
      __m256 better =
          _mm256_or_ps(_mm256_cmp_ps(s, *bestv, _CMP_GT_OQ), _mm256_andnot_ps(bnan, snan));
      better = _mm256_or_ps(better, _mm256_castsi256_ps(_mm256_cmpeq_epi32(*bestpos, none)));
      const __m256i pos = _mm256_add_epi32(_mm256_set1_epi32((int)w), lanes);
      *bestv = _mm256_blendv_ps(*bestv, s, better);
      *bestpos = _mm256_castps_si256(
          _mm256_blendv_ps(_mm256_castsi256_ps(*bestpos), _mm256_castsi256_ps(pos), better));
      w += 8;
    } else {
      float sv[8];
      _mm256_storeu_ps(sv, s);
      for (int l = 0; l < 8; l++)
        if (!((drop >> l) & 1)) w = vo_snms_keep_f32(a, j + l, w, sv[l], best, bs);
    }
  }
  return vo_snms_range_f32(a, j, j1, w, i, q, best, bs);
}

/* vo_snms_pass_f32 in AVX2 (m < 2^31, so slots fit the int32 lanes). */
__attribute__((target("avx2,fma"))) static int64_t vo_snms_pass_avx2_f32(const vo_snms_set_f32 *a,
                                                                         int64_t m, int64_t p,
                                                                         const vo_snms_q_f32 *q,
                                                                         int64_t *best) {
  const float i[5] = {a->x1[p], a->y1[p], a->x2[p], a->y2[p], a->area[p]};
  __m256 bestv = _mm256_setzero_ps();
  __m256i bestpos = _mm256_set1_epi32(-1);
  float bs = 0;
  *best = -1;
  int64_t w = vo_snms_range_avx2(a, 0, p, 0, i, q, &bestv, &bestpos, best, &bs);
  w = vo_snms_range_avx2(a, p + 1, m, w, i, q, &bestv, &bestpos, best, &bs);
  /* The first best overall: the highest of the lanes' and the scalar
   * one's, the lowest slot among equals. */
  float lv[8];
  int32_t lp[8];
  _mm256_storeu_ps(lv, bestv);
  _mm256_storeu_si256((__m256i *)lp, bestpos);
  for (int l = 0; l < 8; l++) {
    if (lp[l] < 0) continue;
    if (*best < 0 || vo_snms_better_f32(lv[l], bs) ||
        (!vo_snms_better_f32(bs, lv[l]) && lp[l] < *best))
      *best = lp[l], bs = lv[l];
  }
  return w;
}
#endif

/* A call's workspace: the categories' boxes (slot s in every array), their
 * kept lists at their first slot, and the segments. */
typedef struct vo_snms_work {
  const vo_exec *ex;
  int f64;
  int avx2;
  void *arrays[6];     /* x1, y1, x2, y2, area, score in the compute type */
  void *kept_score;    /* compute type */
  int64_t *index;      /* [n] */
  int64_t *order;      /* [n] original index of slot s, by category, increasing */
  int64_t *kept_index; /* [n] */
  int64_t *starts;     /* [segments + 1] */
  int64_t *counts;     /* [segments] kept per segment */
  int64_t *schedule;   /* [segments] by decreasing size */
  vo_cpu_range todo;
} vo_snms_work;

/* Soft-NMS of segment g (slots starts[g] .. starts[g + 1]). */
static void vo_snms_segment(vo_snms_work *w, int64_t g) {
  const vo_soft_nms_params *p = &w->ex->p.soft_nms;
  const int64_t s = w->starts[g], m = w->starts[g + 1] - s;
  if (w->f64) {
    double *const *ar = (double *const *)w->arrays;
    const vo_snms_set_f64 a = {ar[0] + s, ar[1] + s, ar[2] + s,   ar[3] + s,
                               ar[4] + s, ar[5] + s, w->index + s};
    const vo_snms_q_f64 q = vo_snms_q_of_f64(p);
    w->counts[g] = vo_snms_category_f64(p, &q, vo_snms_pass_f64, &a, w->order + s, m,
                                        w->kept_index + s, (double *)w->kept_score + s);
  } else {
    float *const *ar = (float *const *)w->arrays;
    const vo_snms_set_f32 a = {ar[0] + s, ar[1] + s, ar[2] + s,   ar[3] + s,
                               ar[4] + s, ar[5] + s, w->index + s};
    const vo_snms_q_f32 q = vo_snms_q_of_f32(p);
    vo_snms_pass_fn_f32 pass = vo_snms_pass_f32;
#ifdef VO_HAVE_AVX2_KERNELS
    if (w->avx2 && m <= INT32_MAX) pass = vo_snms_pass_avx2_f32;
#endif
    w->counts[g] = vo_snms_category_f32(p, &q, pass, &a, w->order + s, m, w->kept_index + s,
                                        (float *)w->kept_score + s);
  }
}

static void vo_snms_worker(void *arg, int slot) {
  (void)slot;
  vo_snms_work *w = arg;
  int64_t k, end;
  while (vo_cpu_claim(&w->todo, &k, &end))
    for (; k < end; k++) vo_snms_segment(w, w->schedule[k]);
}

/* Row r of dets: box `index`'s coordinates and `score`, in dets' dtype. */
static void vo_snms_store_row(const vo_soft_nms_params *p, int64_t r, int64_t index, double score) {
  const int64_t b0 = p->boxes->stride[0], b1 = p->boxes->stride[1];
  double v[5];
  for (int c = 0; c < 4; c++) v[c] = vo_load_host(p->boxes, index * b0 + c * b1);
  v[4] = score;
  void *d = vo_view_addr(p->dets);
  for (int c = 0; c < 5; c++) {
    const int64_t e = 5 * r + c;
    switch (p->dets->dtype) {
      case VO_F64: ((double *)d)[e] = v[c]; break;
      case VO_F16: ((uint16_t *)d)[e] = vo_f32_to_f16((float)v[c]); break;
      case VO_BF16: ((uint16_t *)d)[e] = vo_f32_to_bf16((float)v[c]); break;
      default: ((float *)d)[e] = (float)v[c]; break;
    }
  }
}

vo_status vo_cpu_soft_nms(const vo_exec *ex) {
  const vo_soft_nms_params *p = &ex->p.soft_nms;
  const vo_context *ctx = ex->ctx;
  const int64_t n = p->boxes->shape[0];
  int64_t *keep = vo_view_addr(p->keep);
  int64_t *num_kept = vo_view_addr(p->num_kept);
  if (n == 0) {
    *num_kept = 0;
    return VO_OK;
  }

  vo_snms_work w = {.ex = ex, .f64 = ex->dtype == VO_F64};
#ifdef VO_HAVE_AVX2_KERNELS
  w.avx2 = vo_cpu_effective_isa(ctx) >= VO_ISA_AVX2;
#endif
  /* One block: two sort arrays (16 bytes a box), 6 int64 arrays (index,
   * order, kept_index, starts + 1, counts, schedule) and 7 arrays of the
   * compute type (boxes of stride 0 may have any n: its size is checked). */
  const size_t un = (size_t)n, tsize = w.f64 ? sizeof(double) : sizeof(float);
  const size_t per_box = 2 * sizeof(vo_sort_item) + 6 * sizeof(int64_t) + 7 * tsize;
  if (un > (SIZE_MAX - 8) / per_box)
    return vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: %lld boxes need more workspace than memory holds",
                   ex->op_name, (long long)n);
  const size_t bytes = un * per_box + 8;
  char *mem = vo_workspace_alloc(ctx, ex->device, bytes, ex->op_name);
  if (!mem) return VO_ERROR_OUT_OF_MEMORY;
  vo_sort_item *items = (vo_sort_item *)mem, *spare = items + n;
  int64_t *ints = (int64_t *)(spare + n);
  w.index = ints, w.order = ints + n, w.kept_index = ints + 2 * n, w.starts = ints + 3 * n;
  w.counts = ints + 4 * n + 1, w.schedule = ints + 5 * n + 1;
  char *t = (char *)(ints + 6 * n + 1);
  for (int k = 0; k < 6; k++) w.arrays[k] = t + (size_t)k * un * tsize;
  w.kept_score = t + 6 * un * tsize;

  /* Slots by category (sign bit flipped: unsigned order is signed order),
   * in index order within each (the sort is stable). */
  int64_t segments = 1;
  w.starts[0] = 0;
  if (!p->idxs) {
    for (int64_t i = 0; i < n; i++) w.order[i] = i;
  } else {
    const int64_t *iv = vo_view_addr(p->idxs), is = p->idxs->stride[0];
    for (int64_t i = 0; i < n; i++)
      items[i] = (vo_sort_item){(uint64_t)iv[i * is] ^ (UINT64_C(1) << 63), i};
    const vo_sort_item *by_category = vo_cpu_radix_sort(items, spare, n);
    segments = 0;
    for (int64_t s = 0; s < n; s++) {
      if (s > 0 && by_category[s].key != by_category[s - 1].key) w.starts[++segments] = s;
      w.order[s] = by_category[s].index;
    }
    segments++;
  }
  w.starts[segments] = n;

  /* Each category costs about m^2 / 2 rescorings (0.5 ns each, AVX2); the
   * threads take the largest first. */
  double cost = 0;
  for (int64_t g = 0; g < segments; g++) {
    const int64_t m = w.starts[g + 1] - w.starts[g];
    cost += 0.25 * (double)m * (double)m + 20.0 * (double)m;
    items[g] = (vo_sort_item){~(uint64_t)m, g};
  }
  const vo_sort_item *by_size = vo_cpu_radix_sort(items, spare, segments);
  for (int64_t g = 0; g < segments; g++) w.schedule[g] = by_size[g].index;
  vo_cpu_range_init(&w.todo, segments, 1);
  vo_cpu_run(vo_cpu_threads_for(ctx, segments, cost), vo_snms_worker, &w);

  /* The kept boxes, as positions e of the kept lists: soft_nms's in
   * selection order; batched_soft_nms's in original index order (w.index,
   * free now, maps an index to its position), then stably by score. */
  int64_t count = 0;
  const vo_sort_item *rows = items;
  if (!p->idxs) {
    for (; count < w.counts[0]; count++) items[count].index = count;
  } else {
    for (int64_t i = 0; i < n; i++) w.index[i] = -1;
    for (int64_t g = 0; g < segments; g++)
      for (int64_t e = w.starts[g]; e < w.starts[g] + w.counts[g]; e++)
        w.index[w.kept_index[e]] = e;
    for (int64_t i = 0; i < n; i++) {
      const int64_t e = w.index[i];
      if (e < 0) continue;
      const double score =
          w.f64 ? ((const double *)w.kept_score)[e] : (double)((const float *)w.kept_score)[e];
      items[count++] = (vo_sort_item){vo_k_score_key_f64(score), e};
    }
    rows = vo_cpu_radix_sort(items, spare, count);
  }
  for (int64_t r = 0; r < count; r++) {
    const int64_t e = rows[r].index;
    const double score =
        w.f64 ? ((const double *)w.kept_score)[e] : (double)((const float *)w.kept_score)[e];
    vo_snms_store_row(p, r, w.kept_index[e], score);
    keep[r] = w.kept_index[e];
  }
  memset((char *)vo_view_addr(p->dets) + (size_t)count * 5 * vo_dtype_size(p->dets->dtype), 0,
         (size_t)(n - count) * 5 * vo_dtype_size(p->dets->dtype));
  for (int64_t r = count; r < n; r++) keep[r] = -1;
  *num_kept = count;
  vo_workspace_free(ctx, ex->device, mem);
  return VO_OK;
}
