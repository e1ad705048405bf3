/*
 * CPU matrix_nms over the row item of kernels/matrix_nms.h. Phase 1, on
 * the thread pool, one (image, class) problem per claim: the candidates
 * (score > score_threshold) are selected and sorted by score descending,
 * ties by box index (a quickselect of the first nms_top_k, then a sort of
 * those only), gathered structure-of-arrays, and the rows run in rank
 * order, so that one pass gives every K_i and d_i with O(n) memory: no
 * IoU matrix. Phase 2, per image: the kept candidates of every class are
 * selected and sorted by decayed score (ties: lower class, then earlier
 * candidate) into the padded outputs. Every result is independent of the
 * thread count.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu/common.h"
#include "kernels/matrix_nms.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define VO_HAVE_AVX2_KERNELS 1
#endif

/* A sort record: ascending (key, index) is the order wanted. */
typedef struct vo_mnms_item {
  uint64_t key;
  int64_t index;
} vo_mnms_item;

/* A key whose ascending order is descending v (v not NaN; -0 == +0).
 * float scores widen to double exactly, so one key serves both types. */
static inline uint64_t vo_mnms_key(double v) {
  if (v == 0) v = 0;
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  u = (u >> 63) ? ~u : u | (UINT64_C(1) << 63);
  return ~u;
}

/* The score a key was made from. */
static inline double vo_mnms_unkey(uint64_t key) {
  uint64_t u = ~key;
  u = (u >> 63) ? u ^ (UINT64_C(1) << 63) : ~u;
  double v;
  memcpy(&v, &u, sizeof v);
  return v;
}

static inline int vo_mnms_less(const vo_mnms_item *a, const vo_mnms_item *b) {
  return a->key < b->key || (a->key == b->key && a->index < b->index);
}

static int vo_mnms_compare(const void *pa, const void *pb) {
  const vo_mnms_item *a = pa, *b = pb;
  return vo_mnms_less(a, b) ? -1 : vo_mnms_less(b, a);
}

static inline void vo_mnms_swap(vo_mnms_item *a, int64_t i, int64_t j) {
  const vo_mnms_item t = a[i];
  a[i] = a[j];
  a[j] = t;
}

/* a[0..k) becomes the k least of a[0..n) (0 < k < n; records are distinct),
 * in no particular order: quickselect, median-of-three pivots. */
static void vo_mnms_select(vo_mnms_item *a, int64_t n, int64_t k) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (vo_mnms_less(&a[mid], &a[lo])) vo_mnms_swap(a, mid, lo);
    if (vo_mnms_less(&a[hi], &a[lo])) vo_mnms_swap(a, hi, lo);
    if (vo_mnms_less(&a[hi], &a[mid])) vo_mnms_swap(a, hi, mid);
    vo_mnms_swap(a, mid, hi);
    const vo_mnms_item pivot = a[hi];
    int64_t s = lo;
    for (int64_t i = lo; i < hi; i++)
      if (vo_mnms_less(&a[i], &pivot)) vo_mnms_swap(a, i, s++);
    vo_mnms_swap(a, s, hi);
    if (s == k || s == k - 1) return;
    if (s > k)
      hi = s - 1;
    else
      lo = s + 1;
  }
}

/* The first k (<= n) of a[0..n) in order. */
static void vo_mnms_first(vo_mnms_item *a, int64_t n, int64_t k) {
  if (k < n && k > 0) vo_mnms_select(a, n, k);
  qsort(a, (size_t)k, sizeof *a, vo_mnms_compare);
}

typedef struct vo_mnms_work {
  const vo_exec *ex;
  int64_t batch, classes, m, per_class, k;
  int64_t nms_top_k, keep_top_k, background;
  int normalized, gaussian;
  int avx2; /* the rows' AVX2 build (not under VO_ISA_SCALAR) */
  double score_threshold, post_threshold, sigma;
  /* phase 1 results, per problem p = b * classes + c: count[p] kept, in
   * rank order, decayed score kept_score[p * per_class + r] and box index
   * kept_box[...] */
  int64_t *count;
  double *kept_score;
  int64_t *kept_box;
  /* per slot scratch: items (max(M, C * per_class)), the candidates'
   * boxes (5 * per_class in double, or float), K and scores (per_class) */
  char *scratch;
  size_t slot_bytes;
  int64_t slot_items;
  vo_cpu_range todo;
} vo_mnms_work;

static void *vo_mnms_slot(const vo_mnms_work *w, int slot) {
  return w->scratch + (size_t)slot * w->slot_bytes;
}

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cpu/matrix_nms.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cpu/matrix_nms.inc"
#include "kernels/dtype_end.h"

/* Phase 1: problems p = b * classes + c, one per claim. */
static void vo_mnms_problems(void *arg, int slot) {
  vo_mnms_work *w = arg;
  const vo_view *sv = &w->ex->inputs[1];
  vo_mnms_item *items = vo_mnms_slot(w, slot);
  void *rows = items + w->slot_items;
  int64_t p, end;
  while (vo_cpu_claim(&w->todo, &p, &end)) {
    const int64_t b = p / w->classes, c = p % w->classes;
    w->count[p] = 0;
    if (c == w->background || w->per_class == 0) continue;
    /* candidates: score > score_threshold in the compute type (NaN never) */
    const int64_t o = b * sv->stride[0] + c * sv->stride[1], s2 = sv->stride[2];
    int64_t n = 0;
    if (w->ex->dtype == VO_F64) {
      for (int64_t i = 0; i < w->m; i++) {
        const double s = vo_load_host(sv, o + i * s2);
        if (s > w->score_threshold) items[n++] = (vo_mnms_item){vo_mnms_key(s), i};
      }
    } else {
      const float thr = (float)w->score_threshold;
      for (int64_t i = 0; i < w->m; i++) {
        const float s = (float)vo_load_host(sv, o + i * s2);
        if (s > thr) items[n++] = (vo_mnms_item){vo_mnms_key(s), i};
      }
    }
    const int64_t top = n < w->per_class ? n : w->per_class;
    vo_mnms_first(items, n, top);
    double *score = w->kept_score + p * w->per_class;
    int64_t *box = w->kept_box + p * w->per_class;
    const int f64 = w->ex->dtype == VO_F64;
#ifdef VO_HAVE_AVX2_KERNELS
    if (w->avx2) {
      w->count[p] = f64 ? vo_mnms_rows_avx2_f64(w, items, top, b, rows, score, box)
                        : vo_mnms_rows_avx2_f32(w, items, top, b, rows, score, box);
      continue;
    }
#endif
    w->count[p] = f64 ? vo_mnms_rows_f64(w, items, top, b, rows, score, box)
                      : vo_mnms_rows_f32(w, items, top, b, rows, score, box);
  }
}

/* Element i of the padded dets (boxes' storage dtype) set to v. */
static inline void vo_mnms_store(const vo_view *out, int64_t i, double v) {
  void *p = vo_view_addr(out);
  switch (out->dtype) {
    case VO_F64: ((double *)p)[i] = v; break;
    case VO_F16: ((uint16_t *)p)[i] = vo_f32_to_f16((float)v); break;
    case VO_BF16: ((uint16_t *)p)[i] = vo_f32_to_bf16((float)v); break;
    default: ((float *)p)[i] = (float)v; break;
  }
}

/* Phase 2: image b's kept candidates over the classes, ordered by decayed
 * score (ties: lower class, then earlier candidate: index c * per_class +
 * position, positions being in rank order), the first K into the outputs. */
static void vo_mnms_images(void *arg, int slot) {
  vo_mnms_work *w = arg;
  const vo_exec *ex = w->ex;
  const vo_view *bv = &ex->inputs[0], *dets = &ex->outputs[0];
  int64_t *index = vo_view_addr(&ex->outputs[1]), *num = vo_view_addr(&ex->outputs[2]);
  vo_mnms_item *items = vo_mnms_slot(w, slot);
  int64_t b, end;
  while (vo_cpu_claim(&w->todo, &b, &end)) {
    int64_t n = 0;
    for (int64_t c = 0; c < w->classes; c++) {
      const int64_t p = b * w->classes + c;
      for (int64_t r = 0; r < w->count[p]; r++)
        items[n++] =
            (vo_mnms_item){vo_mnms_key(w->kept_score[p * w->per_class + r]), c * w->per_class + r};
    }
    const int64_t out = n < w->k ? n : w->k;
    vo_mnms_first(items, n, out);
    for (int64_t r = 0; r < out; r++) {
      const int64_t c = items[r].index / w->per_class;
      const int64_t q = (b * w->classes + c) * w->per_class + items[r].index % w->per_class;
      const int64_t box = w->kept_box[q], row = (b * w->k + r) * 6;
      const int64_t o = b * bv->stride[0] + box * bv->stride[1], s2 = bv->stride[2];
      vo_mnms_store(dets, row, (double)c);
      vo_mnms_store(dets, row + 1, w->kept_score[q]);
      for (int j = 0; j < 4; j++) vo_mnms_store(dets, row + 2 + j, vo_load_host(bv, o + j * s2));
      index[b * w->k + r] = b * w->m + box;
    }
    const int64_t rest = w->k - out;
    if (rest > 0) {
      memset(
          (char *)vo_view_addr(dets) + (size_t)((b * w->k + out) * 6) * vo_dtype_size(dets->dtype),
          0, (size_t)(rest * 6) * vo_dtype_size(dets->dtype));
      for (int64_t r = out; r < w->k; r++) index[b * w->k + r] = -1;
    }
    num[b] = out;
  }
}

/* One-thread cost estimates (ns): a score read and test; a row pair (an
 * IoU and a decay). */
#define VO_MNMS_SCORE_NS 2.0
#define VO_MNMS_PAIR_NS 3.0

vo_status vo_cpu_matrix_nms(const vo_exec *ex) {
  const vo_view *scores = &ex->inputs[1];
  vo_mnms_work w = {.ex = ex};
  w.batch = ex->inputs[0].shape[0];
  w.m = ex->inputs[0].shape[1];
  /* Without boxes no class has a candidate: no problems at all, so that
   * empty scores of huge B and C cost only the outputs (B * C may overflow). */
  w.classes = w.m == 0 ? 0 : scores->shape[1];
  w.k = ex->outputs[1].shape[1];
  w.score_threshold = ex->args[2].u.f;
  w.post_threshold = ex->args[3].u.f;
  w.nms_top_k = ex->args[4].u.i;
  w.keep_top_k = ex->args[5].u.i;
  w.gaussian = ex->args[6].u.b;
  w.sigma = ex->args[7].u.f;
  w.background = ex->args[8].u.i;
  w.normalized = ex->args[9].u.b;
  w.avx2 = vo_cpu_effective_isa(ex->ctx) >= VO_ISA_AVX2;
  w.per_class = w.nms_top_k >= 0 && w.nms_top_k < w.m ? w.nms_top_k : w.m;
  if (w.batch == 0) return VO_OK;

  /* Sizes cannot overflow: B * C * per_class <= the scores' elements (M >
   * 0 here, or C was taken as 0), and
   * C * per_class <= K or the scores of one image. */
  const int64_t problems = w.batch * w.classes, kept = problems * w.per_class;
  const int64_t image_items = w.classes * w.per_class;
  w.slot_items = w.m > image_items ? w.m : image_items;
  const size_t elem = ex->dtype == VO_F64 ? sizeof(double) : sizeof(float);
  w.slot_bytes = (size_t)w.slot_items * sizeof(vo_mnms_item) + (size_t)w.per_class * 6 * elem;
  w.slot_bytes = (w.slot_bytes + 63) / 64 * 64;
  const double cost =
      (double)problems * ((double)w.m * VO_MNMS_SCORE_NS +
                          (double)w.per_class * (double)w.per_class * 0.5 * VO_MNMS_PAIR_NS);
  const int threads = vo_cpu_threads_for(ex->ctx, problems, cost);
  const size_t bytes = (size_t)problems * sizeof(int64_t) +
                       (size_t)kept * (sizeof(double) + sizeof(int64_t)) + 64 +
                       (size_t)threads * w.slot_bytes;
  char *mem = vo_workspace_alloc(ex->ctx, ex->device, bytes, ex->op_name);
  if (!mem) return VO_ERROR_OUT_OF_MEMORY;
  const size_t count_bytes = (size_t)problems * sizeof(int64_t);
  w.count = (int64_t *)mem;
  w.kept_box = (int64_t *)(mem + count_bytes);
  w.kept_score = (void *)(mem + count_bytes + (size_t)kept * sizeof(int64_t));
  w.scratch = (char *)(((uintptr_t)(w.kept_score + kept) + 63) / 64 * 64);

  vo_cpu_range_init(&w.todo, problems, 1);
  vo_cpu_run(threads, vo_mnms_problems, &w);
  vo_cpu_range_init(&w.todo, w.batch, 1);
  const int image_threads = vo_cpu_threads_for(ex->ctx, w.batch, (double)kept * 20.0);
  vo_cpu_run(image_threads < threads ? image_threads : threads, vo_mnms_images, &w);
  vo_workspace_free(ex->ctx, ex->device, mem);
  return VO_OK;
}
