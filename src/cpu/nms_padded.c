/*
 * batched_nms_padded and onnx_nms on the CPU (vo_nms_padded_params): the
 * (image, class) problems run side by side on the thread pool, each a scan
 * of its scores for candidates, a stable sort of them (cpu/sort.h) and a
 * greedy pass that tests each candidate against the boxes selected so far
 * (kernels/nms_padded.h) and stops at the problem's cap; then the front
 * end: per image the best max_per_image across classes (padded), or every
 * problem's rows at its offset in ONNX's order (onnx), again in parallel.
 */
#include <math.h>
#include <string.h>

#include "cpu/common.h"
#include "cpu/sort.h"
#include "kernels/nms_padded.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define VO_HAVE_AVX2_KERNELS 1
#endif

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cpu/nms_padded.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cpu/nms_padded.inc"
#include "kernels/dtype_end.h"

#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "cpu/nms_padded.inc"
#include "kernels/dtype_end.h"

#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "cpu/nms_padded.inc"
#include "kernels/dtype_end.h"

#ifdef VO_HAVE_AVX2_KERNELS
/* vo_np_any_suppresses_f32 eight selected boxes a step, with the plain
 * test's operations in its order (max_ps(a, b) is a > b ? a : b, so
 * max_ps(candidate, selected) is the kernel's `selected < candidate ?
 * candidate : selected`, NaN giving the selected box's value in both; min
 * likewise), so the decisions are the same bit for bit. */
__attribute__((target("avx2,fma"))) static int vo_np_any_suppresses_avx2(
    int kind, const vo_np_kept_f32 *kept, int64_t count, const vo_k_nms_box_f32 *box, float thr) {
  const __m256 bx1 = _mm256_set1_ps(box->x1), by1 = _mm256_set1_ps(box->y1);
  const __m256 bx2 = _mm256_set1_ps(box->x2), by2 = _mm256_set1_ps(box->y2);
  const __m256 barea = _mm256_set1_ps(box->area), vthr = _mm256_set1_ps(thr);
  const __m256 zero = _mm256_setzero_ps();
  /* Whole blocks: the slots past count hold NaN boxes (vo_np_kept), whose
   * tests are false in both conventions. */
  for (int64_t k = 0; k < count; k += 8) {
    const __m256 kx1 = _mm256_loadu_ps(kept->x1 + k), ky1 = _mm256_loadu_ps(kept->y1 + k);
    const __m256 kx2 = _mm256_loadu_ps(kept->x2 + k), ky2 = _mm256_loadu_ps(kept->y2 + k);
    const __m256 karea = _mm256_loadu_ps(kept->area + k);
    const __m256 ix1 = _mm256_max_ps(bx1, kx1), iy1 = _mm256_max_ps(by1, ky1);
    const __m256 ix2 = _mm256_min_ps(bx2, kx2), iy2 = _mm256_min_ps(by2, ky2);
    __m256 hit;
    if (kind == VO_K_NP_TORCHVISION) {
      const __m256 w = _mm256_max_ps(_mm256_sub_ps(ix2, ix1), zero);
      const __m256 h = _mm256_max_ps(_mm256_sub_ps(iy2, iy1), zero);
      const __m256 inter = _mm256_mul_ps(w, h);
      const __m256 uni = _mm256_sub_ps(_mm256_add_ps(karea, barea), inter);
      hit = _mm256_cmp_ps(_mm256_div_ps(inter, uni), vthr, _CMP_GT_OQ);
    } else { /* onnxruntime's: every "return false" test must fail (or be NaN) */
      const __m256 dx = _mm256_sub_ps(ix2, ix1), dy = _mm256_sub_ps(iy2, iy1);
      const __m256 inter = _mm256_mul_ps(dx, dy);
      const __m256 uni = _mm256_sub_ps(_mm256_add_ps(karea, barea), inter);
      hit =
          _mm256_and_ps(_mm256_cmp_ps(ix2, ix1, _CMP_NLE_UQ), _mm256_cmp_ps(iy2, iy1, _CMP_NLE_UQ));
      hit = _mm256_and_ps(hit, _mm256_cmp_ps(inter, zero, _CMP_NLE_UQ));
      hit = _mm256_and_ps(hit, _mm256_cmp_ps(karea, zero, _CMP_NLE_UQ));
      hit = _mm256_and_ps(hit, _mm256_cmp_ps(barea, zero, _CMP_NLE_UQ));
      hit = _mm256_and_ps(hit, _mm256_cmp_ps(uni, zero, _CMP_NLE_UQ));
      hit = _mm256_and_ps(hit, _mm256_cmp_ps(_mm256_div_ps(inter, uni), vthr, _CMP_GT_OQ));
    }
    if (_mm256_movemask_ps(hit)) return 1;
  }
  return 0;
}
#endif

#ifdef VO_HAVE_AVX2_KERNELS
/* The candidates of one contiguous float32 score row (score > t), item0 +
 * m for box m, appended at out[n]; returns the new count. 32 scores a
 * step: the row is read at memory speed, and nearly every step of a
 * detector's scores has no candidate. _CMP_GT_OQ is false for NaN, as the
 * plain `v > t`. */
__attribute__((target("avx2,fma"))) static int64_t vo_np_scan_avx2(const float *s, int64_t m_count,
                                                                   float t, int64_t item0,
                                                                   vo_sort_item *out, int64_t n) {
  const __m256 vt = _mm256_set1_ps(t);
  int64_t m = 0;
  for (; m + 32 <= m_count; m += 32) {
    const __m256 a = _mm256_cmp_ps(_mm256_loadu_ps(s + m), vt, _CMP_GT_OQ);
    const __m256 b = _mm256_cmp_ps(_mm256_loadu_ps(s + m + 8), vt, _CMP_GT_OQ);
    const __m256 c = _mm256_cmp_ps(_mm256_loadu_ps(s + m + 16), vt, _CMP_GT_OQ);
    const __m256 d = _mm256_cmp_ps(_mm256_loadu_ps(s + m + 24), vt, _CMP_GT_OQ);
    if (!_mm256_movemask_ps(_mm256_or_ps(_mm256_or_ps(a, b), _mm256_or_ps(c, d)))) continue;
    uint32_t bits = (uint32_t)_mm256_movemask_ps(a) | (uint32_t)_mm256_movemask_ps(b) << 8 |
                    (uint32_t)_mm256_movemask_ps(c) << 16 | (uint32_t)_mm256_movemask_ps(d) << 24;
    while (bits) {
      const int64_t j = m + __builtin_ctz(bits);
      out[n++] = (vo_sort_item){vo_k_score_key_f32(s[j]), item0 + j};
      bits &= bits - 1;
    }
  }
  for (; m < m_count; m++)
    if (s[m] > t) out[n++] = (vo_sort_item){vo_k_score_key_f32(s[m]), item0 + m};
  return n;
}
#endif

/* A problem's selected-box capacity, whole blocks of eight. */
#define VO_NP_CAP8(cap) (((cap) + 7) / 8 * 8)

typedef struct vo_np_state {
  const vo_nms_padded_params *p;
  int64_t problems; /* B * C, or B when class-agnostic */
  int64_t items;    /* candidates a problem can have: M, or C * M */
  int64_t cap;      /* selections per problem */
  int64_t *sel;     /* [problems, cap] selected items in order */
  int64_t *count;   /* [problems] */
  int64_t *offset;  /* onnx: [problems + 1] first output row of each problem */
  char *scratch;    /* per slot: slot_bytes */
  size_t slot_bytes;
  int avx2; /* the float selected-box test in AVX2 */
  vo_cpu_range todo;
} vo_np_state;

/* The candidates of classes [c0, c1) of image b, item (c - c0) * M + m, with
 * their score keys, into out; returns how many. */
static int64_t vo_np_candidates(const vo_nms_padded_params *p, int64_t b, int64_t c0, int64_t c1,
                                int avx2, vo_sort_item *out) {
  const vo_view *sv = p->scores;
  const int64_t m_count = p->boxes_per_image, st2 = sv->stride[2];
  const int all = !p->has_score_threshold;
  int64_t n = 0;
  for (int64_t c = c0; c < c1; c++) {
    const int64_t row = b * sv->stride[0] + c * sv->stride[1], item0 = (c - c0) * m_count;
    if (sv->dtype == VO_F32) {
      const float *s = (const float *)vo_view_addr(sv) + row;
      const float t = p->score_threshold_f32;
#ifdef VO_HAVE_AVX2_KERNELS
      if (avx2 && !all && st2 == 1) {
        n = vo_np_scan_avx2(s, m_count, t, item0, out, n);
        continue;
      }
#else
      (void)avx2;
#endif
      for (int64_t m = 0; m < m_count; m++) {
        const float v = s[m * st2];
        if (all || v > t) out[n++] = (vo_sort_item){vo_k_score_key_f32(v), item0 + m};
      }
    } else if (sv->dtype == VO_F64) {
      const double *s = (const double *)vo_view_addr(sv) + row;
      const double t = p->score_threshold;
      for (int64_t m = 0; m < m_count; m++) {
        const double v = s[m * st2];
        if (all || v > t) out[n++] = (vo_sort_item){vo_k_score_key_f64(v), item0 + m};
      }
    } else { /* the half types convert to float exactly */
      const float t = p->score_threshold_f32;
      for (int64_t m = 0; m < m_count; m++) {
        const float v = (float)vo_load_host(sv, row + m * st2);
        if (all || v > t) out[n++] = (vo_sort_item){vo_k_score_key_f32(v), item0 + m};
      }
    }
  }
  return n;
}

/* The boxes of the first candidates, asked for before their sort: each is
 * a cache miss (the score scan streamed past them), which the greedy pass
 * would otherwise wait for candidate after candidate. Beyond VO_NP_PREFETCH
 * candidates the pass prefetches a few ranks ahead itself. */
#define VO_NP_PREFETCH 256
static void vo_np_prefetch_boxes(const vo_nms_padded_params *p, int64_t b, int64_t c0,
                                 const vo_sort_item *cand, int64_t n) {
  const vo_view *bx = p->boxes;
  const char *base = vo_view_addr(bx);
  const int64_t es = (int64_t)vo_dtype_size(bx->dtype);
  const int64_t m_count = p->boxes_per_image, s0 = bx->stride[0], s1 = bx->stride[1];
  const int64_t sc = p->per_class_boxes ? bx->stride[2] : 0;
  for (int64_t i = 0; i < n && i < VO_NP_PREFETCH; i++) {
    const int64_t item = cand[i].index, m = item % m_count, c = c0 + item / m_count;
    /* Signed: a view's strides may be negative. */
    __builtin_prefetch(base + (b * s0 + m * s1 + c * sc) * es);
  }
}

/* The problem's image and its first class. */
static void vo_np_problem(const vo_nms_padded_params *p, int64_t q, int64_t *b, int64_t *c0) {
  *b = p->class_agnostic ? q : q / p->classes;
  *c0 = p->class_agnostic ? 0 : q % p->classes;
}

static void vo_np_problems_worker(void *arg, int slot) {
  vo_np_state *s = arg;
  const vo_nms_padded_params *p = s->p;
  vo_sort_item *a = (vo_sort_item *)(s->scratch + (size_t)slot * s->slot_bytes);
  vo_sort_item *tmp = a + s->items;
  /* The selected boxes' five arrays of cap8 values. */
  const int64_t cap = s->cap, cap8 = VO_NP_CAP8(cap);
  float *k32 = (float *)(tmp + s->items);
  double *k64 = (double *)(tmp + s->items);
  const vo_np_kept_f32 kept32 = {k32, k32 + cap8, k32 + 2 * cap8, k32 + 3 * cap8, k32 + 4 * cap8};
  const vo_np_kept_f64 kept64 = {k64, k64 + cap8, k64 + 2 * cap8, k64 + 3 * cap8, k64 + 4 * cap8};
  int (*any32)(int, const vo_np_kept_f32 *, int64_t, const vo_k_nms_box_f32 *, float) =
      vo_np_any_suppresses_f32;
#ifdef VO_HAVE_AVX2_KERNELS
  if (s->avx2) any32 = vo_np_any_suppresses_avx2;
#endif
  int64_t q, end;
  while (vo_cpu_claim(&s->todo, &q, &end)) {
    for (; q < end; q++) {
      int64_t b, c0;
      vo_np_problem(p, q, &b, &c0);
      int64_t n = vo_np_candidates(p, b, c0, p->class_agnostic ? p->classes : c0 + 1, s->avx2, a);
      vo_np_prefetch_boxes(p, b, c0, a, n);
      const vo_sort_item *sorted = vo_cpu_radix_sort(a, tmp, n);
      if (n > p->max_candidates) n = p->max_candidates;
      int64_t *sel = s->sel + q * cap, k;
      switch (p->boxes->dtype) {
        case VO_F64:
          k = vo_np_greedy_f64(p, b, c0, sorted, n, cap, &kept64, vo_np_any_suppresses_f64, sel);
          break;
        case VO_F16: k = vo_np_greedy_f16(p, b, c0, sorted, n, cap, &kept32, any32, sel); break;
        case VO_BF16: k = vo_np_greedy_bf16(p, b, c0, sorted, n, cap, &kept32, any32, sel); break;
        default: k = vo_np_greedy_f32(p, b, c0, sorted, n, cap, &kept32, any32, sel); break;
      }
      s->count[q] = k;
    }
  }
}

/* The score key of box m of class c in image b. */
static uint64_t vo_np_key(const vo_nms_padded_params *p, int64_t b, int64_t c, int64_t m) {
  const vo_view *sv = p->scores;
  const double v = vo_load_host(sv, b * sv->stride[0] + c * sv->stride[1] + m * sv->stride[2]);
  return sv->dtype == VO_F64 ? vo_k_score_key_f64(v) : vo_k_score_key_f32((float)v);
}

/* padded: image b's best max_per_image selections across its classes, by
 * score (a stable sort of the classes' lists in class order: ties go to
 * the lower class, then the earlier selection), then the padding. */
static void vo_np_image(const vo_np_state *s, int64_t b, vo_sort_item *a, vo_sort_item *tmp) {
  const vo_nms_padded_params *p = s->p;
  const int64_t m_count = p->boxes_per_image, k_max = p->max_per_image;
  int64_t n = 0;
  const vo_sort_item *order = a;
  /* (Without boxes there are no problems: padding only.) */
  if (p->problems > 0 && !p->class_agnostic) {
    for (int64_t c = 0; c < p->classes; c++) {
      const int64_t q = b * p->classes + c;
      for (int64_t r = 0; r < s->count[q]; r++)
        a[n++] = (vo_sort_item){vo_np_key(p, b, c, s->sel[q * s->cap + r]), q * s->cap + r};
    }
    order = vo_cpu_radix_sort(a, tmp, n);
  } else if (p->problems > 0) {
    for (int64_t r = 0; r < s->count[b]; r++) a[n++] = (vo_sort_item){0, b * s->cap + r};
  }
  if (n > k_max) n = k_max;
  int64_t *keep = (int64_t *)vo_view_addr(p->keep) + b * k_max;
  int64_t *labels = (int64_t *)vo_view_addr(p->labels) + b * k_max;
  const size_t es = vo_dtype_size(p->scores->dtype);
  char *scores_out = (char *)vo_view_addr(p->scores_out) + (size_t)(b * k_max) * es;
  const vo_view *sv = p->scores;
  const char *scores = vo_view_addr(sv);
  for (int64_t k = 0; k < n; k++) {
    const int64_t slot = order[k].index, q = slot / s->cap;
    const int64_t item = s->sel[slot];
    const int64_t c = p->class_agnostic ? item / m_count : q % p->classes;
    const int64_t m = p->class_agnostic ? item % m_count : item;
    keep[k] = m;
    labels[k] = c;
    const int64_t at = b * sv->stride[0] + c * sv->stride[1] + m * sv->stride[2];
    /* at < 0 with negative strides: signed arithmetic */
    memcpy(scores_out + (size_t)k * es, scores + at * (int64_t)es, es);
  }
  for (int64_t k = n; k < k_max; k++) keep[k] = labels[k] = -1;
  memset(scores_out + (size_t)n * es, 0, (size_t)(k_max - n) * es);
  ((int64_t *)vo_view_addr(p->num))[b] = n;
}

static void vo_np_images_worker(void *arg, int slot) {
  vo_np_state *s = arg;
  vo_sort_item *a = (vo_sort_item *)(s->scratch + (size_t)slot * s->slot_bytes);
  const int64_t merge = s->p->class_agnostic ? 0 : s->p->classes * s->cap;
  int64_t b, end;
  while (vo_cpu_claim(&s->todo, &b, &end))
    for (; b < end; b++) vo_np_image(s, b, a, a + merge);
}

/* onnx: problem q's rows (batch, class, box) at its offset, and its share of
 * the -1 rows after the last selection: the cap - count[q] rows from
 * total + q * cap - offset[q], so the problems' shares tile the padding. */
static void vo_np_rows_worker(void *arg, int slot) {
  (void)slot;
  vo_np_state *s = arg;
  const vo_nms_padded_params *p = s->p;
  int64_t *rows = vo_view_addr(p->selected);
  const int64_t total = s->offset[s->problems];
  int64_t q, end;
  while (vo_cpu_claim(&s->todo, &q, &end)) {
    for (; q < end; q++) {
      const int64_t b = q / p->classes, c = q % p->classes, n = s->count[q];
      int64_t *row = rows + 3 * s->offset[q];
      for (int64_t r = 0; r < n; r++, row += 3) {
        row[0] = b;
        row[1] = c;
        row[2] = s->sel[q * s->cap + r];
      }
      int64_t *pad = rows + 3 * (total + q * s->cap - s->offset[q]);
      for (int64_t r = 0; r < 3 * (s->cap - n); r++) pad[r] = -1;
    }
  }
}

/* One thread's time per score scanned and per problem, ns (measured on the
 * benchmark machine, YOLO-like inputs). */
#define VO_NP_SCORE_NS 1.0
#define VO_NP_PROBLEM_NS 200.0

vo_status vo_cpu_nms_padded(const vo_exec *ex) {
  const vo_nms_padded_params *p = &ex->p.nms_padded;
  const vo_context *ctx = ex->ctx;
  vo_np_state s = {.p = p};
  s.problems = p->problems;
  s.items = p->items;
  s.cap = p->max_selected;
  const size_t np = (size_t)s.problems, cap = (size_t)s.cap;
  /* Per slot: two sort arrays for a problem's candidates (or an image's
   * selections across classes) and the selected boxes. */
  size_t sort_items = (size_t)s.items;
  if (!p->onnx && !p->class_agnostic && (size_t)p->classes * cap > sort_items)
    sort_items = (size_t)p->classes * cap;
  s.slot_bytes = 2 * sort_items * sizeof(vo_sort_item) + 5 * VO_NP_CAP8(cap) * sizeof(double);
#ifdef VO_HAVE_AVX2_KERNELS
  s.avx2 = vo_cpu_effective_isa(ctx) >= VO_ISA_AVX2;
#endif
  const double problem_ns = (double)s.items * VO_NP_SCORE_NS + VO_NP_PROBLEM_NS;
  const double cost = (double)s.problems * problem_ns;
  int threads = vo_cpu_threads_for(ctx, s.problems, cost);
  if (threads < 1) threads = 1;
  /* Sizes cannot overflow: the sort arrays are a few times the scores'
   * size (C * M elements per image), the selections at most that. */
  const size_t shared = np * cap * sizeof(int64_t) + (2 * np + 1) * sizeof(int64_t);
  const size_t bytes = shared + (size_t)threads * s.slot_bytes;
  char *mem = vo_workspace_alloc(ctx, ex->device, bytes, ex->op_name);
  if (!mem) return VO_ERROR_OUT_OF_MEMORY;
  s.sel = (int64_t *)mem;
  s.count = s.sel + np * cap;
  s.offset = s.count + np;
  s.scratch = (char *)(s.offset + np + 1);

  if (s.cap > 0) {
    /* ~20 us a piece: one problem a claim was 640 contended atomic
     * operations for a YOLO head's 640 problems of ~2 us each. */
    vo_cpu_range_init(&s.todo, s.problems, (int64_t)(20000.0 / problem_ns) + 1);
    vo_cpu_run(threads, vo_np_problems_worker, &s);
  } else {
    memset(s.count, 0, np * sizeof(int64_t));
  }

  if (p->onnx) {
    s.offset[0] = 0;
    for (int64_t q = 0; q < s.problems; q++) s.offset[q + 1] = s.offset[q] + s.count[q];
    *(int64_t *)vo_view_addr(p->num_selected) = s.offset[s.problems];
    vo_cpu_range_init(&s.todo, s.problems, 8);
    vo_cpu_run(vo_cpu_threads_for(ctx, s.problems, (double)np * (double)cap * 3.0),
               vo_np_rows_worker, &s);
  } else {
    /* No more threads than slots of scratch. */
    vo_cpu_range_init(&s.todo, p->batches, 1);
    const double merge_cost = (double)np * (double)cap * 20.0 + (double)p->batches * 100.0;
    const int merge_threads = vo_cpu_threads_for(ctx, p->batches, merge_cost);
    vo_cpu_run(merge_threads < threads ? merge_threads : threads, vo_np_images_worker, &s);
  }
  vo_workspace_free(ctx, ex->device, mem);
  return VO_OK;
}
