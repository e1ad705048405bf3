/*
 * CPU kernel for nms and batched_nms: a stable score sort, then greedy
 * suppression per category over structure-of-arrays boxes with a
 * branch-free (vectorised) inner loop. batched_nms runs categories in
 * parallel; a single large category parallelises its inner loop instead.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/common.h"

#ifdef VISIONOPS_HAVE_OPENMP
#include <omp.h>
#endif

/* Below this many boxes one category is cheaper on one thread than paying a
 * barrier per kept box. */
#define VO_NMS_PARALLEL_MIN 4096

typedef struct vo_rank {
  double score;
  int64_t index;
} vo_rank;

/* Score descending, NaN first (as torch's descending sort), ties by index:
 * a total order, so qsort gives the stable result. */
static int vo_rank_cmp(const void *pa, const void *pb) {
  const vo_rank *a = pa, *b = pb;
  int an = isnan(a->score), bn = isnan(b->score);
  if (an != bn) return an ? -1 : 1;
  if (!an && a->score != b->score) return a->score > b->score ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

typedef struct vo_class_slot {
  int64_t category;
  int64_t rank; /* position in score order */
} vo_class_slot;

static int vo_class_slot_cmp(const void *pa, const void *pb) {
  const vo_class_slot *a = pa, *b = pb;
  if (a->category != b->category) return a->category < b->category ? -1 : 1;
  return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Largest float f with f <= t, so that for any float x,
 * x > f  <=>  (double)x > t  (the spec compares in double). */
static float vo_threshold_f32(double t) {
  float f = (float)t;
  if (!isnan(f) && (double)f > t) f = nextafterf(f, -INFINITY);
  return f;
}

/*
 * Greedy suppression over m boxes already in score order (slots 0..m-1).
 * sup[] starts zeroed; kept[slot] is set for every kept box. Follows
 * torchvision's arithmetic exactly (max/min operand order included) so the
 * same boxes are suppressed.
 */
#define VO_DEFINE_GREEDY(T, SUFFIX, ATTR)                                                 \
  ATTR static void vo_greedy_##SUFFIX(const T *x1, const T *y1, const T *x2, const T *y2, \
                                      const T *area, int64_t m, T thr, uint8_t *sup,      \
                                      uint8_t *kept, int threads) {                       \
    (void)threads;                                                                        \
    VO_GREEDY_PARALLEL_PRAGMA                                                             \
    for (int64_t i = 0; i < m; i++) {                                                     \
      if (sup[i]) continue;                                                               \
      VO_GREEDY_MASTER_PRAGMA                                                             \
      kept[i] = 1;                                                                        \
      const T ix1 = x1[i], iy1 = y1[i], ix2 = x2[i], iy2 = y2[i], ia = area[i];           \
      VO_GREEDY_FOR_PRAGMA                                                                \
      for (int64_t j = i + 1; j < m; j++) {                                               \
        T xx1 = ix1 < x1[j] ? x1[j] : ix1;                                                \
        T yy1 = iy1 < y1[j] ? y1[j] : iy1;                                                \
        T xx2 = x2[j] < ix2 ? x2[j] : ix2;                                                \
        T yy2 = y2[j] < iy2 ? y2[j] : iy2;                                                \
        T w = xx2 - xx1, h = yy2 - yy1;                                                   \
        w = (T)0 < w ? w : (T)0;                                                          \
        h = (T)0 < h ? h : (T)0;                                                          \
        T inter = w * h;                                                                  \
        T ovr = inter / (ia + area[j] - inter);                                           \
        sup[j] |= (uint8_t)(ovr > thr);                                                   \
      }                                                                                   \
    }                                                                                     \
  }

#ifdef VISIONOPS_HAVE_OPENMP
#define VO_PRAGMA(x) _Pragma(#x)
#define VO_GREEDY_PARALLEL_PRAGMA VO_PRAGMA(omp parallel num_threads(threads) if (threads > 1))
#define VO_GREEDY_MASTER_PRAGMA VO_PRAGMA(omp master)
#define VO_GREEDY_FOR_PRAGMA VO_PRAGMA(omp for schedule(static))
#else
#define VO_GREEDY_PARALLEL_PRAGMA
#define VO_GREEDY_MASTER_PRAGMA
#define VO_GREEDY_FOR_PRAGMA
#endif

VO_DEFINE_GREEDY(float, f32_scalar, )
VO_DEFINE_GREEDY(double, f64_scalar, )
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define VO_HAVE_AVX2_KERNELS 1
VO_DEFINE_GREEDY(float, f32_avx2, __attribute__((target("avx2,fma"))))
VO_DEFINE_GREEDY(double, f64_avx2, __attribute__((target("avx2,fma"))))
#endif

typedef struct vo_nms_work {
  const vo_exec *ex;
  int use_f64;
  int avx2;
  vo_rank *ranks;          /* [n] score order */
  int64_t *slot_rank;      /* [n] slot -> rank (category-grouped order) */
  int64_t *slot_index;     /* [n] slot -> original index */
  void *soa;               /* 5 arrays of n compute-type values: x1 y1 x2 y2 area */
  uint8_t *sup;            /* [n] by slot */
  uint8_t *kept;           /* [n] by slot */
  int64_t *segment_starts; /* [n + 1] first slot of each category, then n */
} vo_nms_work;

/* Greedy NMS over slots [start, start + m). */
static void vo_nms_segment(const vo_nms_work *w, int64_t n, int64_t start, int64_t m, int threads) {
  const vo_nms_params *p = &w->ex->p.nms;
  if (w->use_f64) {
    double *base = w->soa;
    vo_cpu_boxes_f64 b = {base + start, base + n + start, base + 2 * n + start,
                          base + 3 * n + start};
    double *area = base + 4 * n + start;
    vo_cpu_gather_boxes_f64(p->boxes, w->slot_index + start, m, &b);
    for (int64_t i = 0; i < m; i++) area[i] = (b.x2[i] - b.x1[i]) * (b.y2[i] - b.y1[i]);
#ifdef VO_HAVE_AVX2_KERNELS
    if (w->avx2) {
      vo_greedy_f64_avx2(b.x1, b.y1, b.x2, b.y2, area, m, p->iou_threshold, w->sup + start,
                         w->kept + start, threads);
      return;
    }
#endif
    vo_greedy_f64_scalar(b.x1, b.y1, b.x2, b.y2, area, m, p->iou_threshold, w->sup + start,
                         w->kept + start, threads);
  } else {
    float *base = w->soa;
    vo_cpu_boxes_f32 b = {base + start, base + n + start, base + 2 * n + start,
                          base + 3 * n + start};
    float *area = base + 4 * n + start;
    vo_cpu_gather_boxes_f32(p->boxes, w->slot_index + start, m, &b);
    for (int64_t i = 0; i < m; i++) area[i] = (b.x2[i] - b.x1[i]) * (b.y2[i] - b.y1[i]);
    float thr = vo_threshold_f32(p->iou_threshold);
#ifdef VO_HAVE_AVX2_KERNELS
    if (w->avx2) {
      vo_greedy_f32_avx2(b.x1, b.y1, b.x2, b.y2, area, m, thr, w->sup + start, w->kept + start,
                         threads);
      return;
    }
#endif
    vo_greedy_f32_scalar(b.x1, b.y1, b.x2, b.y2, area, m, thr, w->sup + start, w->kept + start,
                         threads);
  }
}

vo_status vo_cpu_nms(const vo_exec *ex) {
  const vo_nms_params *p = &ex->p.nms;
  const vo_context *ctx = ex->ctx;
  const int64_t n = p->boxes->shape[0];
  int64_t *keep = p->keep->data;
  int64_t *num_kept = p->num_kept->data;
  if (n == 0) {
    *num_kept = 0;
    return VO_OK;
  }

  vo_nms_work w = {.ex = ex};
  w.use_f64 = ex->dtype == VO_F64;
  w.avx2 = vo_cpu_effective_isa(ctx) == VO_ISA_AVX2;
  const size_t un = (size_t)n;
  const size_t elem = w.use_f64 ? sizeof(double) : sizeof(float);
  /* One block: ranks, slot maps, 5 SoA arrays, flags. Sizes cannot
   * overflow: n elements of the inputs already fit in memory. */
  const size_t bytes = un * (sizeof(vo_rank) + 3 * sizeof(int64_t) + 5 * elem + 2) + 8;
  char *mem = vo_workspace_alloc(ctx, ex->device, bytes, ex->op_name);
  if (!mem) return VO_ERROR_OUT_OF_MEMORY;
  w.ranks = (vo_rank *)mem;
  w.slot_rank = (int64_t *)(w.ranks + n);
  w.slot_index = w.slot_rank + n;
  w.segment_starts = w.slot_index + n;
  w.soa = w.segment_starts + n + 1;
  w.sup = (uint8_t *)w.soa + 5 * un * elem;
  w.kept = w.sup + n;
  memset(w.sup, 0, 2 * un);

  const vo_view *scores = p->scores;
  for (int64_t i = 0; i < n; i++) {
    w.ranks[i].score = vo_load_host(scores, i * scores->stride[0]);
    w.ranks[i].index = i;
  }
  qsort(w.ranks, un, sizeof *w.ranks, vo_rank_cmp);

  if (!p->idxs) {
    for (int64_t r = 0; r < n; r++) {
      w.slot_rank[r] = r;
      w.slot_index[r] = w.ranks[r].index;
    }
    vo_nms_segment(&w, n, 0, n, n >= VO_NMS_PARALLEL_MIN ? vo_cpu_threads(ctx, n) : 1);
  } else {
    /* Group by category, score order inside each: slots are contiguous per
     * category and each category is an independent greedy run. */
    vo_class_slot *cs = (vo_class_slot *)w.soa; /* borrow: 16 bytes/box <= 5*elem */
    const vo_view *idxs = p->idxs;
    for (int64_t r = 0; r < n; r++) {
      cs[r].category = ((const int64_t *)idxs->data)[w.ranks[r].index * idxs->stride[0]];
      cs[r].rank = r;
    }
    qsort(cs, un, sizeof *cs, vo_class_slot_cmp);
    int64_t num_segments = 0;
    for (int64_t s = 0; s < n; s++) {
      w.slot_rank[s] = cs[s].rank;
      if (s == 0 || cs[s].category != cs[s - 1].category) w.segment_starts[num_segments++] = s;
    }
    w.segment_starts[num_segments] = n;
    const int64_t *starts = w.segment_starts;
    for (int64_t s = 0; s < n; s++) w.slot_index[s] = w.ranks[w.slot_rank[s]].index;

    int threads = vo_cpu_threads(ctx, num_segments);
    (void)threads;
#ifdef VISIONOPS_HAVE_OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
#endif
    for (int64_t g = 0; g < num_segments; g++)
      vo_nms_segment(&w, n, starts[g], starts[g + 1] - starts[g], 1);
  }

  /* Emit kept boxes in global score order. kept is indexed by slot; for
   * batched_nms slots are grouped by category, so map it back to ranks
   * (into sup, which is no longer needed). */
  int64_t count = 0;
  if (!p->idxs) {
    for (int64_t r = 0; r < n; r++)
      if (w.kept[r]) keep[count++] = w.ranks[r].index;
  } else {
    uint8_t *kept_by_rank = w.sup;
    for (int64_t s = 0; s < n; s++) kept_by_rank[w.slot_rank[s]] = w.kept[s];
    for (int64_t r = 0; r < n; r++)
      if (kept_by_rank[r]) keep[count++] = w.ranks[r].index;
  }
  for (int64_t r = count; r < n; r++) keep[r] = -1;
  *num_kept = count;
  vo_workspace_free(ctx, ex->device, mem);
  return VO_OK;
}
