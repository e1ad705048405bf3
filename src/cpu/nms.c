/*
 * CPU kernel for nms and batched_nms: a stable score sort (LSD radix sort of
 * order-preserving integer keys), then greedy suppression per category over
 * structure-of-arrays boxes with a branch-free (vectorised) inner loop.
 * batched_nms groups the categories with a second stable radix pass and runs
 * them in parallel; a single large category parallelises its inner loop
 * instead.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/common.h"

#ifdef VISIONOPS_HAVE_OPENMP
#include <omp.h>
#endif

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* Below this many boxes one category is cheaper on one thread than paying a
 * barrier per kept box: with the serial AVX2 pass, nms of the benchmark's
 * 5,000 detections took 0.37 ms on one thread and 0.6-0.8 ms on two. */
#define VO_NMS_PARALLEL_MIN 8192

/* A sort record: an unsigned key and the position it came from. */
typedef struct vo_sort_item {
  uint64_t key;
  int64_t index;
} vo_sort_item;

/* Stable LSD radix sort of a[0..n) by key, 8 bits a pass; a pass whose digit
 * is the same for every key is skipped (float32 keys use 4 of the 8 bytes,
 * category keys of a few classes one). The result is in a or tmp, returned. */
static vo_sort_item *vo_radix_sort(vo_sort_item *a, vo_sort_item *tmp, int64_t n) {
  static const int digits = 8;
  int64_t count[8][256];
  memset(count, 0, sizeof count);
  for (int64_t i = 0; i < n; i++) {
    const uint64_t k = a[i].key;
    for (int d = 0; d < digits; d++) count[d][(k >> (8 * d)) & 255]++;
  }
  for (int d = 0; d < digits; d++) {
    int64_t *c = count[d];
    int trivial = 0;
    for (int v = 0; v < 256; v++) trivial |= c[v] == n;
    if (trivial) continue;
    int64_t sum = 0;
    for (int v = 0; v < 256; v++) {
      const int64_t t = c[v];
      c[v] = sum;
      sum += t;
    }
    for (int64_t i = 0; i < n; i++) tmp[c[(a[i].key >> (8 * d)) & 255]++] = a[i];
    vo_sort_item *s = a;
    a = tmp;
    tmp = s;
  }
  return a;
}

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
 * same boxes are suppressed. This one parallelises the inner loop (one
 * large category); vo_greedy_serial_* below is the one-thread version.
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

/* The same greedy pass on one thread, without the OpenMP team, its master
 * section and the barrier each kept box pays there. */
#define VO_DEFINE_GREEDY_SERIAL(T, SUFFIX, ATTR)                                                 \
  ATTR static void vo_greedy_serial_##SUFFIX(const T *x1, const T *y1, const T *x2, const T *y2, \
                                             const T *area, int64_t m, T thr, uint8_t *sup,      \
                                             uint8_t *kept) {                                    \
    for (int64_t i = 0; i < m; i++) {                                                            \
      if (sup[i]) continue;                                                                      \
      kept[i] = 1;                                                                               \
      const T ix1 = x1[i], iy1 = y1[i], ix2 = x2[i], iy2 = y2[i], ia = area[i];                  \
      for (int64_t j = i + 1; j < m; j++) {                                                      \
        T xx1 = ix1 < x1[j] ? x1[j] : ix1;                                                       \
        T yy1 = iy1 < y1[j] ? y1[j] : iy1;                                                       \
        T xx2 = x2[j] < ix2 ? x2[j] : ix2;                                                       \
        T yy2 = y2[j] < iy2 ? y2[j] : iy2;                                                       \
        T w = xx2 - xx1, h = yy2 - yy1;                                                          \
        w = (T)0 < w ? w : (T)0;                                                                 \
        h = (T)0 < h ? h : (T)0;                                                                 \
        T inter = w * h;                                                                         \
        T ovr = inter / (ia + area[j] - inter);                                                  \
        sup[j] |= (uint8_t)(ovr > thr);                                                          \
      }                                                                                          \
    }                                                                                            \
  }

VO_DEFINE_GREEDY_SERIAL(float, f32_scalar, )
VO_DEFINE_GREEDY_SERIAL(double, f64_scalar, )
#ifdef VO_HAVE_AVX2_KERNELS
VO_DEFINE_GREEDY_SERIAL(double, f64_avx2, __attribute__((target("avx2,fma"))))

/* float32 on one thread, 8 candidates a step in AVX2 with the arithmetic of
 * the scalar loop: max_ps(a, b) is a > b ? a : b and min_ps(a, b) is
 * a < b ? a : b, so max_ps(x1[j], ix1) is ix1 < x1[j] ? x1[j] : ix1 etc.
 * Suppressions are rare, so a step stores only when one of its eight
 * candidates is suppressed. (Skipping the division when all eight
 * intersections are empty was measured slower: that branch is
 * unpredictable.) */
__attribute__((target("avx2,fma"))) static void vo_greedy_serial_f32_avx2(
    const float *x1, const float *y1, const float *x2, const float *y2, const float *area,
    int64_t m, float thr, uint8_t *sup, uint8_t *kept) {
  const __m256 zero = _mm256_setzero_ps(), vthr = _mm256_set1_ps(thr);
  for (int64_t i = 0; i < m; i++) {
    if (sup[i]) continue;
    kept[i] = 1;
    const float ix1 = x1[i], iy1 = y1[i], ix2 = x2[i], iy2 = y2[i], ia = area[i];
    const __m256 vx1 = _mm256_set1_ps(ix1), vy1 = _mm256_set1_ps(iy1);
    const __m256 vx2 = _mm256_set1_ps(ix2), vy2 = _mm256_set1_ps(iy2), va = _mm256_set1_ps(ia);
    int64_t j = i + 1;
    for (; j + 8 <= m; j += 8) {
      const __m256 xx1 = _mm256_max_ps(_mm256_loadu_ps(x1 + j), vx1);
      const __m256 yy1 = _mm256_max_ps(_mm256_loadu_ps(y1 + j), vy1);
      const __m256 xx2 = _mm256_min_ps(_mm256_loadu_ps(x2 + j), vx2);
      const __m256 yy2 = _mm256_min_ps(_mm256_loadu_ps(y2 + j), vy2);
      const __m256 w = _mm256_max_ps(_mm256_sub_ps(xx2, xx1), zero);
      const __m256 h = _mm256_max_ps(_mm256_sub_ps(yy2, yy1), zero);
      const __m256 inter = _mm256_mul_ps(w, h);
      const __m256 uni = _mm256_sub_ps(_mm256_add_ps(va, _mm256_loadu_ps(area + j)), inter);
      int bits = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_div_ps(inter, uni), vthr, _CMP_GT_OQ));
      while (bits) {
        sup[j + __builtin_ctz((unsigned)bits)] = 1;
        bits &= bits - 1;
      }
    }
    for (; j < m; j++) {
      float xx1 = ix1 < x1[j] ? x1[j] : ix1;
      float yy1 = iy1 < y1[j] ? y1[j] : iy1;
      float xx2 = x2[j] < ix2 ? x2[j] : ix2;
      float yy2 = y2[j] < iy2 ? y2[j] : iy2;
      float w = xx2 - xx1, h = yy2 - yy1;
      w = 0.f < w ? w : 0.f;
      h = 0.f < h ? h : 0.f;
      float inter = w * h;
      float ovr = inter / (ia + area[j] - inter);
      sup[j] |= (uint8_t)(ovr > thr);
    }
  }
}
#endif

typedef struct vo_nms_work {
  const vo_exec *ex;
  int use_f64;
  int avx2;
  int64_t *slot_index;     /* [n] slot -> original index */
  void *soa;               /* 5 arrays of n compute-type values: x1 y1 x2 y2 area */
  uint8_t *sup;            /* [n] by slot */
  uint8_t *kept;           /* [n] by slot */
  int64_t *segment_starts; /* [n + 1] first slot of each category, then n */
} vo_nms_work;

/* Greedy NMS over slots [start, start + m). */
static void vo_nms_segment(const vo_nms_work *w, int64_t n, int64_t start, int64_t m, int threads) {
  const vo_nms_params *p = &w->ex->p.nms;
  uint8_t *sup = w->sup + start, *kept = w->kept + start;
  if (w->use_f64) {
    double *base = w->soa;
    vo_cpu_boxes_f64 b = {base + start, base + n + start, base + 2 * n + start,
                          base + 3 * n + start};
    double *area = base + 4 * n + start;
    vo_cpu_gather_boxes_f64(p->boxes, w->slot_index + start, m, &b);
    for (int64_t i = 0; i < m; i++) area[i] = (b.x2[i] - b.x1[i]) * (b.y2[i] - b.y1[i]);
    const double thr = p->iou_threshold;
#ifdef VO_HAVE_AVX2_KERNELS
    if (w->avx2) {
      if (threads > 1)
        vo_greedy_f64_avx2(b.x1, b.y1, b.x2, b.y2, area, m, thr, sup, kept, threads);
      else
        vo_greedy_serial_f64_avx2(b.x1, b.y1, b.x2, b.y2, area, m, thr, sup, kept);
      return;
    }
#endif
    if (threads > 1)
      vo_greedy_f64_scalar(b.x1, b.y1, b.x2, b.y2, area, m, thr, sup, kept, threads);
    else
      vo_greedy_serial_f64_scalar(b.x1, b.y1, b.x2, b.y2, area, m, thr, sup, kept);
  } else {
    float *base = w->soa;
    vo_cpu_boxes_f32 b = {base + start, base + n + start, base + 2 * n + start,
                          base + 3 * n + start};
    float *area = base + 4 * n + start;
    vo_cpu_gather_boxes_f32(p->boxes, w->slot_index + start, m, &b);
    for (int64_t i = 0; i < m; i++) area[i] = (b.x2[i] - b.x1[i]) * (b.y2[i] - b.y1[i]);
    const float thr = vo_threshold_f32(p->iou_threshold);
#ifdef VO_HAVE_AVX2_KERNELS
    if (w->avx2) {
      if (threads > 1)
        vo_greedy_f32_avx2(b.x1, b.y1, b.x2, b.y2, area, m, thr, sup, kept, threads);
      else
        vo_greedy_serial_f32_avx2(b.x1, b.y1, b.x2, b.y2, area, m, thr, sup, kept);
      return;
    }
#endif
    if (threads > 1)
      vo_greedy_f32_scalar(b.x1, b.y1, b.x2, b.y2, area, m, thr, sup, kept, threads);
    else
      vo_greedy_serial_f32_scalar(b.x1, b.y1, b.x2, b.y2, area, m, thr, sup, kept);
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
  /* One block: three sort arrays, the slot map, segment starts, 5 SoA
   * arrays, flags. Sizes cannot overflow: n elements of the inputs already
   * fit in memory. */
  const size_t bytes = un * (3 * sizeof(vo_sort_item) + 2 * sizeof(int64_t) + 5 * elem + 2) + 8;
  char *mem = vo_workspace_alloc(ctx, ex->device, bytes, ex->op_name);
  if (!mem) return VO_ERROR_OUT_OF_MEMORY;
  vo_sort_item *sort_a = (vo_sort_item *)mem, *sort_b = sort_a + n, *sort_c = sort_b + n;
  w.slot_index = (int64_t *)(sort_c + n);
  w.segment_starts = w.slot_index + n;
  w.soa = w.segment_starts + n + 1;
  w.sup = (uint8_t *)w.soa + 5 * un * elem;
  w.kept = w.sup + n;
  memset(w.sup, 0, 2 * un);

  /* Score order: ranks[r].index is the box of rank r. */
  const vo_view *scores = p->scores;
  const int64_t ss = scores->stride[0];
  if (scores->dtype == VO_F32) {
    const float *sv = scores->data;
    for (int64_t i = 0; i < n; i++) sort_a[i] = (vo_sort_item){vo_score_key_f32(sv[i * ss]), i};
  } else if (scores->dtype == VO_F64) {
    const double *sv = scores->data;
    for (int64_t i = 0; i < n; i++) sort_a[i] = (vo_sort_item){vo_score_key_f64(sv[i * ss]), i};
  } else {
    /* half types convert to float exactly */
    for (int64_t i = 0; i < n; i++)
      sort_a[i] = (vo_sort_item){vo_score_key_f32((float)vo_load_host(scores, i * ss)), i};
  }
  const vo_sort_item *ranks = vo_radix_sort(sort_a, sort_b, n);

  int64_t count = 0;
  if (!p->idxs) {
    for (int64_t r = 0; r < n; r++) w.slot_index[r] = ranks[r].index;
    vo_nms_segment(&w, n, 0, n, n >= VO_NMS_PARALLEL_MIN ? vo_cpu_threads(ctx, n) : 1);
    for (int64_t r = 0; r < n; r++)
      if (w.kept[r]) keep[count++] = ranks[r].index;
  } else {
    /* Group by category, score order inside each: a stable sort of the
     * ranks by category (sign bit flipped, so unsigned order is signed
     * order). Slots are contiguous per category and each category is an
     * independent greedy run; slots[s].index is slot s's rank. */
    vo_sort_item *cs = ranks == sort_a ? sort_b : sort_a;
    const int64_t *iv = p->idxs->data, is = p->idxs->stride[0];
    for (int64_t r = 0; r < n; r++)
      cs[r] = (vo_sort_item){(uint64_t)iv[ranks[r].index * is] ^ (UINT64_C(1) << 63), r};
    const vo_sort_item *slots = vo_radix_sort(cs, sort_c, n);
    int64_t num_segments = 0;
    int64_t *starts = w.segment_starts;
    for (int64_t s = 0; s < n; s++) {
      if (s == 0 || slots[s].key != slots[s - 1].key) starts[num_segments++] = s;
      w.slot_index[s] = ranks[slots[s].index].index;
    }
    starts[num_segments] = n;

    int threads = vo_cpu_threads(ctx, num_segments);
    (void)threads;
#ifdef VISIONOPS_HAVE_OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
#endif
    for (int64_t g = 0; g < num_segments; g++)
      vo_nms_segment(&w, n, starts[g], starts[g + 1] - starts[g], 1);

    /* Emit kept boxes in global score order: kept is by slot, so map it
     * back to ranks (into sup, which is no longer needed). */
    uint8_t *kept_by_rank = w.sup;
    for (int64_t s = 0; s < n; s++) kept_by_rank[slots[s].index] = w.kept[s];
    for (int64_t r = 0; r < n; r++)
      if (kept_by_rank[r]) keep[count++] = ranks[r].index;
  }
  for (int64_t r = count; r < n; r++) keep[r] = -1;
  *num_kept = count;
  vo_workspace_free(ctx, ex->device, mem);
  return VO_OK;
}
