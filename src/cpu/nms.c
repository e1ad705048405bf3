/*
 * CPU greedy NMS (cpu/nms.h) for every box kind, and nms's own kind: a
 * stable score sort (LSD radix sort of order-preserving integer keys), then
 * greedy suppression per category. The batched ops group the categories
 * with a second stable radix pass and run them in parallel; a single large
 * category runs a chunked greedy pass on several threads instead
 * (vo_nms_flow_worker: no barrier per kept box). nms's axis-aligned boxes
 * are structure-of-arrays with a branch-free (vectorised) inner loop, and
 * plain nms on one thread skips the sort altogether (vo_nms_select:
 * repeated selection of the least live key).
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/nms.h"
#include "cpu/sort.h"
#include "kernels/nms.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define VO_HAVE_AVX2_KERNELS 1
#endif

typedef struct vo_nms_work {
  const vo_exec *ex;
  const vo_nms_kind *kind;
  int64_t *slot_index;     /* [n] slot -> original index */
  void *store;             /* n boxes in the kind's layout */
  uint8_t *sup;            /* [n] by slot */
  uint8_t *kept;           /* [n] by slot */
  int64_t *kept_list;      /* [n] per category at its first slot: kept slots in it */
  int64_t *kept_end;       /* [chunks of n] for the multi-threaded pass */
  int64_t *segment_starts; /* [n + 1] first slot of each category, then n */
} vo_nms_work;

static inline void vo_nms_apply(const vo_nms_boxes *b, int64_t i, int64_t j0, int64_t j1,
                                uint8_t *sup) {
  b->apply(b, i, j0, j1, sup);
}

/* Greedy suppression on the calling thread: each box not yet suppressed is
 * kept (its slot appended to kept_list) and suppresses the later ones.
 * sup[] starts zeroed. Returns the number kept. */
static int64_t vo_nms_greedy_serial(const vo_nms_boxes *b, uint8_t *sup, int64_t *kept_list) {
  int64_t count = 0;
  for (int64_t i = 0; i < b->m; i++) {
    if (sup[i]) continue;
    kept_list[count++] = i;
    vo_nms_apply(b, i, i + 1, b->m, sup);
  }
  return count;
}

/*
 * The same greedy pass on several threads without a barrier per kept box
 * (which cost milliseconds per kept box whenever the cores were shared).
 * The slots are cut into chunks of VO_NMS_CHUNK columns. Whether a box of
 * chunk c is kept depends only on the boxes kept in chunks before it and
 * on its own chunk, so a thread takes the next chunk (in order, from an
 * atomic counter), applies to it the kept boxes of the earlier chunks as
 * their owners publish them, then resolves it: the serial greedy pass
 * within the chunk, appending its kept boxes to the shared list and
 * publishing the chunk as resolved. Chunks resolve strictly in order, and
 * the owner of the lowest unresolved chunk never waits, so the pass cannot
 * deadlock, whatever number of threads the runtime really starts. Each
 * chunk's suppression flags are written by its owner alone; every (kept,
 * later) pair is evaluated with the same arithmetic as the serial pass, so
 * the kept list is the serial one, bit for bit. The only waits are for a
 * chunk to be resolved, a short serial step (the kept boxes of one chunk
 * against that chunk); the one barrier is at the end of the region.
 */
#define VO_NMS_CHUNK 512

typedef struct vo_nms_flow {
  const vo_nms_boxes *b;
  uint8_t *sup;
  int64_t *kept_list; /* kept slots in order; chunk c's are [kept_end[c-1], kept_end[c]) */
  int64_t *kept_end;  /* [chunks] */
  int64_t chunks;
  atomic_llong next;     /* next chunk to take */
  atomic_llong resolved; /* chunks 0..resolved-1 are resolved */
} vo_nms_flow;

static void vo_nms_flow_worker(void *arg, int slot) {
  (void)slot;
  vo_nms_flow *f = arg;
  const vo_nms_boxes *b = f->b;
  for (;;) {
    const int64_t c = atomic_fetch_add_explicit(&f->next, 1, memory_order_relaxed);
    if (c >= f->chunks) return;
    const int64_t j0 = c * VO_NMS_CHUNK;
    const int64_t j1 = j0 + VO_NMS_CHUNK < b->m ? j0 + VO_NMS_CHUNK : b->m;
    int64_t done = 0, pos = 0; /* chunks applied to this one; kept boxes applied */
    int spins = 0;
    long long waiting_since = 0;
    while (done < c) {
      const int64_t r = atomic_load_explicit(&f->resolved, memory_order_acquire);
      if (r == done) {
        if (!waiting_since) waiting_since = vo_cpu_clock_ns();
        vo_cpu_pause(&spins);
        continue;
      }
      if (waiting_since) {
        vo_cpu_note_stall(vo_cpu_clock_ns() - waiting_since);
        waiting_since = 0;
      }
      const int64_t end = f->kept_end[r - 1];
      for (; pos < end; pos++) vo_nms_apply(b, f->kept_list[pos], j0, j1, f->sup);
      done = r;
      spins = 0;
    }
    for (int64_t i = j0; i < j1; i++) {
      if (f->sup[i]) continue;
      f->kept_list[pos++] = i;
      vo_nms_apply(b, i, i + 1, j1, f->sup);
    }
    f->kept_end[c] = pos;
    atomic_store_explicit(&f->resolved, c + 1, memory_order_release);
  }
}

/* Chunks of m boxes. */
static int64_t vo_nms_chunks(int64_t m) { return (m + VO_NMS_CHUNK - 1) / VO_NMS_CHUNK; }

/* Greedy suppression with `threads` threads (1: the serial pass); the same
 * kept list either way. kept_end needs room for vo_nms_chunks(m) entries. */
static int64_t vo_nms_greedy(const vo_nms_boxes *b, uint8_t *sup, int64_t *kept_list,
                             int64_t *kept_end, int threads) {
  const int64_t chunks = vo_nms_chunks(b->m);
  if (threads <= 1 || chunks <= 1) return vo_nms_greedy_serial(b, sup, kept_list);
  vo_nms_flow f = {
      .b = b, .sup = sup, .kept_list = kept_list, .kept_end = kept_end, .chunks = chunks};
  atomic_init(&f.next, 0);
  atomic_init(&f.resolved, 0);
  vo_cpu_run(threads, vo_nms_flow_worker, &f);
  return kept_end[chunks - 1];
}

/* Greedy NMS over slots [start, start + m) on `threads` threads. */
static void vo_nms_segment(const vo_nms_work *w, int64_t n, int64_t start, int64_t m, int threads) {
  vo_nms_boxes nb = {.m = m};
  w->kind->gather(w->ex, w->store, n, start, m, w->slot_index + start, &nb);
  int64_t *kept_list = w->kept_list + start;
  const int64_t count = vo_nms_greedy(&nb, w->sup + start, kept_list, w->kept_end, threads);
  uint8_t *kept = w->kept + start;
  for (int64_t k = 0; k < count; k++) kept[kept_list[k]] = 1;
}

/* The categories too small for several threads each, one at a time per
 * participant: small[k].index is the k-th of them. */
typedef struct vo_nms_small {
  const vo_nms_work *w;
  int64_t n;
  const int64_t *starts;
  const vo_sort_item *small;
  vo_cpu_range todo;
} vo_nms_small;

static void vo_nms_small_worker(void *arg, int slot) {
  (void)slot;
  vo_nms_small *f = arg;
  int64_t k, end;
  while (vo_cpu_claim(&f->todo, &k, &end)) {
    const int64_t g = f->small[k].index;
    vo_nms_segment(f->w, f->n, f->starts[g], f->starts[g + 1] - f->starts[g], 1);
  }
}

/* Threads for the greedy pass over m boxes of one category. Its work is
 * not known in advance (each kept box costs one test per later box); a
 * pass over fewer than the kind's parallel_min boxes stays on one thread.
 * Above, the estimate assumes one kept box in 30 (the benchmark's
 * detector-like boxes) at the kind's pair_ns a test. */
static int vo_nms_threads(const vo_context *ctx, const vo_nms_kind *kind, int64_t m) {
  if (m < kind->parallel_min) return 1;
  return vo_cpu_threads_for(ctx, vo_nms_chunks(m), kind->pair_ns * (double)m * (double)m / 60.0);
}

vo_status vo_cpu_nms_run(const vo_exec *ex, const vo_nms_kind *kind) {
  const vo_nms_params *p = &ex->p.nms;
  const vo_context *ctx = ex->ctx;
  const int64_t n = p->boxes->shape[0];
  int64_t *keep = vo_view_addr(p->keep);
  int64_t *num_kept = vo_view_addr(p->num_kept);
  if (n == 0) {
    *num_kept = 0;
    return VO_OK;
  }

  vo_nms_work w = {.ex = ex, .kind = kind};
  const size_t un = (size_t)n;
  const size_t box_bytes = kind->box_bytes[ex->dtype == VO_F64];
  const size_t chunks = (size_t)vo_nms_chunks(n);
  /* One block: three sort arrays, the slot map, segment starts, the kept
   * lists, chunk ends, the kind's boxes, flags. Sizes cannot overflow: n
   * rows of the boxes (4 or 5 elements each) already fit in memory, and a
   * kind's layout takes a few times their size at most. */
  const size_t bytes = un * (3 * sizeof(vo_sort_item) + 3 * sizeof(int64_t) + box_bytes + 2) +
                       (chunks + 1) * sizeof(int64_t);
  char *mem = vo_workspace_alloc(ctx, ex->device, bytes, ex->op_name);
  if (!mem) return VO_ERROR_OUT_OF_MEMORY;
  vo_sort_item *sort_a = (vo_sort_item *)mem, *sort_b = sort_a + n, *sort_c = sort_b + n;
  w.slot_index = (int64_t *)(sort_c + n);
  w.segment_starts = w.slot_index + n;
  w.kept_list = w.segment_starts + n + 1;
  w.kept_end = w.kept_list + n;
  w.store = w.kept_end + chunks;
  w.sup = (uint8_t *)w.store + un * box_bytes;
  w.kept = w.sup + n;
  memset(w.sup, 0, 2 * un);

  /* Score order: ranks[r].index is the box of rank r. */
  const vo_view *scores = p->scores;
  const int64_t ss = scores->stride[0];
  if (scores->dtype == VO_F32) {
    const float *sv = vo_view_addr(scores);
    for (int64_t i = 0; i < n; i++) sort_a[i] = (vo_sort_item){vo_k_score_key_f32(sv[i * ss]), i};
  } else if (scores->dtype == VO_F64) {
    const double *sv = vo_view_addr(scores);
    for (int64_t i = 0; i < n; i++) sort_a[i] = (vo_sort_item){vo_k_score_key_f64(sv[i * ss]), i};
  } else {
    /* half types convert to float exactly */
    for (int64_t i = 0; i < n; i++)
      sort_a[i] = (vo_sort_item){vo_k_score_key_f32((float)vo_load_host(scores, i * ss)), i};
  }
  const vo_sort_item *ranks = vo_cpu_radix_sort(sort_a, sort_b, n);

  int64_t count = 0;
  if (!p->idxs) {
    for (int64_t r = 0; r < n; r++) w.slot_index[r] = ranks[r].index;
    vo_nms_segment(&w, n, 0, n, vo_nms_threads(ctx, kind, n));
    for (int64_t r = 0; r < n; r++)
      if (w.kept[r]) keep[count++] = ranks[r].index;
  } else {
    /* Group by category, score order inside each: a stable sort of the
     * ranks by category (sign bit flipped, so unsigned order is signed
     * order). Slots are contiguous per category and each category is an
     * independent greedy run; slots[s].index is slot s's rank. */
    vo_sort_item *cs = ranks == sort_a ? sort_b : sort_a;
    const int64_t *iv = vo_view_addr(p->idxs), is = p->idxs->stride[0];
    for (int64_t r = 0; r < n; r++)
      cs[r] = (vo_sort_item){(uint64_t)iv[ranks[r].index * is] ^ (UINT64_C(1) << 63), r};
    const vo_sort_item *slots = vo_cpu_radix_sort(cs, sort_c, n);
    int64_t num_segments = 0;
    int64_t *starts = w.segment_starts;
    for (int64_t s = 0; s < n; s++) {
      if (s == 0 || slots[s].key != slots[s - 1].key) starts[num_segments++] = s;
      w.slot_index[s] = ranks[slots[s].index].index;
    }
    starts[num_segments] = n;

    /* A category large enough for the multi-threaded pass gets all the
     * threads, one such category after another; the others run side by
     * side, one category per thread (each costs about m^2), listed in the
     * sort array the category sort left free. */
    vo_sort_item *small = slots == cs ? sort_c : cs;
    double small_cost = 0;
    int64_t small_count = 0;
    for (int64_t g = 0; g < num_segments; g++) {
      const int64_t m = starts[g + 1] - starts[g];
      const int t = vo_nms_threads(ctx, kind, m);
      if (t > 1) {
        vo_nms_segment(&w, n, starts[g], m, t);
      } else {
        small_cost += kind->pair_ns * (double)m * (double)m / 60.0 + 20.0 * (double)m;
        small[small_count++].index = g;
      }
    }
    vo_nms_small f = {.w = &w, .n = n, .starts = starts, .small = small};
    vo_cpu_range_init(&f.todo, small_count, 1);
    vo_cpu_run(vo_cpu_threads_for(ctx, small_count, small_cost), vo_nms_small_worker, &f);

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

/* ------------------------------------------------------------ nms's boxes */

/*
 * nms's step, vo_nms_apply_*: kept box i suppresses every box of slots
 * [j0, j1) (all later than i) whose IoU with it is strictly above thr. It
 * follows torchvision's arithmetic exactly (max/min operand order
 * included), so the same boxes are suppressed; a NaN IoU compares false and
 * never suppresses. Suppressions are rare, so the result is or-ed into
 * sup[].
 */
#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cpu/nms.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cpu/nms.inc"
#include "kernels/dtype_end.h"

#ifdef VO_HAVE_AVX2_KERNELS
/* float64: the plain loop compiled for AVX2 (bit-identical: no contraction
 * into FMAs, -ffp-contract=off). */
__attribute__((flatten, target("avx2,fma"))) static void vo_nms_apply_avx2_arrays_f64(
    const double *restrict x1, const double *restrict y1, const double *restrict x2,
    const double *restrict y2, const double *restrict area, int64_t i, int64_t j0, int64_t j1,
    double thr, uint8_t *restrict sup) {
  vo_nms_apply_loop_f64(x1, y1, x2, y2, area, i, j0, j1, thr, sup);
}

/* float32, 8 candidates a step in AVX2 with the arithmetic of the scalar
 * loop: max_ps(a, b) is a > b ? a : b and min_ps(a, b) is a < b ? a : b,
 * so max_ps(x1[j], ix1) is ix1 < x1[j] ? x1[j] : ix1 etc. A step stores
 * only when one of its eight candidates is suppressed. (Skipping the
 * division when all eight intersections are empty was measured slower:
 * that branch is unpredictable.) */
__attribute__((target("avx2,fma"))) static void vo_nms_apply_avx2_arrays_f32(
    const float *x1, const float *y1, const float *x2, const float *y2, const float *area,
    int64_t i, int64_t j0, int64_t j1, float thr, uint8_t *sup) {
  const __m256 zero = _mm256_setzero_ps(), vthr = _mm256_set1_ps(thr);
  const float ix1 = x1[i], iy1 = y1[i], ix2 = x2[i], iy2 = y2[i], ia = area[i];
  const __m256 vx1 = _mm256_set1_ps(ix1), vy1 = _mm256_set1_ps(iy1);
  const __m256 vx2 = _mm256_set1_ps(ix2), vy2 = _mm256_set1_ps(iy2), va = _mm256_set1_ps(ia);
  int64_t j = j0;
  for (; j + 8 <= j1; j += 8) {
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
  if (j < j1) {
    /* The last 1-7 candidates: the same step on masked loads (the lanes
     * past j1 read nothing and are dropped), not the scalar loop, which
     * was 15% of batched_nms's time with categories of a few hundred. */
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(j1 - j)), lanes);
    const __m256 xx1 = _mm256_max_ps(_mm256_maskload_ps(x1 + j, m), vx1);
    const __m256 yy1 = _mm256_max_ps(_mm256_maskload_ps(y1 + j, m), vy1);
    const __m256 xx2 = _mm256_min_ps(_mm256_maskload_ps(x2 + j, m), vx2);
    const __m256 yy2 = _mm256_min_ps(_mm256_maskload_ps(y2 + j, m), vy2);
    const __m256 w = _mm256_max_ps(_mm256_sub_ps(xx2, xx1), zero);
    const __m256 h = _mm256_max_ps(_mm256_sub_ps(yy2, yy1), zero);
    const __m256 inter = _mm256_mul_ps(w, h);
    const __m256 uni = _mm256_sub_ps(_mm256_add_ps(va, _mm256_maskload_ps(area + j, m)), inter);
    int bits = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_div_ps(inter, uni), vthr, _CMP_GT_OQ)) &
               ((1 << (j1 - j)) - 1);
    while (bits) {
      sup[j + __builtin_ctz((unsigned)bits)] = 1;
      bits &= bits - 1;
    }
  }
}

/*
 * nms of one category on one thread without sorting (float32 compute,
 * 32-bit score keys, AVX2): the greedy pass as repeated selection. The
 * boxes stay in input order as structure-of-arrays with their score keys
 * and indices. Each pass applies the box just kept to every live entry
 * (all of them later than it in score order, since it had the least key
 * of them), marks the suppressed ones dead (key VO_NMS_DEAD) and finds
 * the least key among the survivors, the next box to keep (ties: the
 * lowest index, as the stable sort orders them). So the sort goes, and a
 * pass only visits the boxes not suppressed yet: on the benchmark's 1,000
 * detections 17,000 IoUs instead of the sorted pass's 33,000 and a sort.
 * Dead entries are squeezed out during a pass (compress-stores) once they
 * are an eighth of the live ones. Every IoU has the sorted pass's operands
 * (the same floats, the kept box first) and arithmetic: the same kept
 * list, bit for bit. Measured at 1 thread (bench/RESULTS.md): 1.7-1.9x
 * the sorted pass's speed on detections, 3x on one cluster, 1.16x slower
 * when nothing overlaps (every box kept: no fewer IoUs, and each pass also
 * looks for the least key).
 */
#define VO_NMS_DEAD \
  UINT32_MAX /* no box has this key: it would be a NaN score, and NaN keys are 0 */

static pthread_once_t vo_nms_compress_once = PTHREAD_ONCE_INIT;
/* For an 8-bit lane mask, the indices of its set lanes in order, a byte
 * each (the permutation of a compress-store). */
static uint64_t vo_nms_compress_lut[256];

static void vo_nms_compress_init(void) {
  for (int m = 0; m < 256; m++) {
    uint64_t packed = 0;
    int k = 0;
    for (int l = 0; l < 8; l++)
      if (m >> l & 1) packed |= (uint64_t)l << (8 * k++);
    vo_nms_compress_lut[m] = packed;
  }
}

/* The live entries: x1, y1, x2, y2, area, key and index arrays, each with
 * room for n + 16 (a pass reads whole vectors of 8 or 16; keys past `live`
 * are dead). */
typedef struct vo_nms_live {
  float *coord[5];
  uint32_t *key;
  int32_t *index;
  int64_t live, dead; /* entries [0, live), of which `dead` are dead */
} vo_nms_live;

/* The least of the eight unsigned lanes of v. */
__attribute__((target("avx2"), always_inline)) static inline uint32_t vo_nms_least_lane(__m256i v) {
  v = _mm256_min_epu32(v, _mm256_permute2x128_si256(v, v, 1));
  v = _mm256_min_epu32(v, _mm256_shuffle_epi32(v, 0x4e));
  v = _mm256_min_epu32(v, _mm256_shuffle_epi32(v, 0xb1));
  return (uint32_t)_mm256_cvtsi256_si32(v);
}

/* The position of the first entry of [0, live) with key `key` (one is). */
__attribute__((target("avx2"))) static int64_t vo_nms_select_find(const uint32_t *keys,
                                                                  uint32_t key) {
  const __m256i want = _mm256_set1_epi32((int)key);
  for (int64_t j = 0;; j += 8) {
    const __m256i k = _mm256_loadu_si256((const __m256i *)(keys + j));
    const int hit = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(k, want)));
    if (hit) return j + __builtin_ctz((unsigned)hit);
  }
}

/* One pass for the box just kept, at position `kept` (see above), with
 * the squeeze or without (`compact` a constant: two loops, each with its
 * registers). Returns the position of the next box to keep, or -1 when
 * none is left. */
__attribute__((target("avx2,fma,popcnt"), always_inline)) static inline int64_t vo_nms_select_loop(
    vo_nms_live *s, int64_t kept, float thr, const int compact) {
  float *const x1 = s->coord[0], *const y1 = s->coord[1], *const x2 = s->coord[2];
  float *const y2 = s->coord[3], *const area = s->coord[4];
  uint32_t *const keys = s->key;
  int32_t *const index = s->index;
  const int64_t live = s->live;
  const __m256 zero = _mm256_setzero_ps(), vthr = _mm256_set1_ps(thr);
  const __m256 vx1 = _mm256_set1_ps(x1[kept]), vy1 = _mm256_set1_ps(y1[kept]);
  const __m256 vx2 = _mm256_set1_ps(x2[kept]), vy2 = _mm256_set1_ps(y2[kept]);
  const __m256 va = _mm256_set1_ps(area[kept]);
  const __m256i dead = _mm256_set1_epi32(-1);
  __m256i least = dead;
  /* stores through the vector types may alias anything: locals only */
  int64_t dead_count = s->dead, w = 0;
  for (int64_t j = 0; j < live; j += 8) {
    const __m256 bx1 = _mm256_loadu_ps(x1 + j), by1 = _mm256_loadu_ps(y1 + j);
    const __m256 bx2 = _mm256_loadu_ps(x2 + j), by2 = _mm256_loadu_ps(y2 + j);
    const __m256 barea = _mm256_loadu_ps(area + j);
    __m256i key = _mm256_loadu_si256((const __m256i *)(keys + j));
    /* kept box first, as in vo_nms_apply_avx2_arrays_f32 */
    const __m256 xx1 = _mm256_max_ps(bx1, vx1), yy1 = _mm256_max_ps(by1, vy1);
    const __m256 xx2 = _mm256_min_ps(bx2, vx2), yy2 = _mm256_min_ps(by2, vy2);
    const __m256 iw = _mm256_max_ps(_mm256_sub_ps(xx2, xx1), zero);
    const __m256 ih = _mm256_max_ps(_mm256_sub_ps(yy2, yy1), zero);
    const __m256 inter = _mm256_mul_ps(iw, ih);
    const __m256 uni = _mm256_sub_ps(_mm256_add_ps(va, barea), inter);
    const __m256 sup = _mm256_cmp_ps(_mm256_div_ps(inter, uni), vthr, _CMP_GT_OQ);
    if (_mm256_movemask_ps(sup)) {
      const __m256i killed =
          _mm256_andnot_si256(_mm256_cmpeq_epi32(key, dead), _mm256_castps_si256(sup));
      dead_count += __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(killed)));
      key = _mm256_or_si256(key, killed);
      if (!compact) _mm256_storeu_si256((__m256i *)(keys + j), key);
    }
    least = _mm256_min_epu32(least, key);
    if (compact) {
      const int alive =
          ~_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(key, dead))) & 255;
      const __m256i perm =
          _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)vo_nms_compress_lut[alive]));
      _mm256_storeu_ps(x1 + w, _mm256_permutevar8x32_ps(bx1, perm));
      _mm256_storeu_ps(y1 + w, _mm256_permutevar8x32_ps(by1, perm));
      _mm256_storeu_ps(x2 + w, _mm256_permutevar8x32_ps(bx2, perm));
      _mm256_storeu_ps(y2 + w, _mm256_permutevar8x32_ps(by2, perm));
      _mm256_storeu_ps(area + w, _mm256_permutevar8x32_ps(barea, perm));
      _mm256_storeu_si256((__m256i *)(keys + w), _mm256_permutevar8x32_epi32(key, perm));
      const __m256i at = _mm256_loadu_si256((const __m256i *)(index + j));
      _mm256_storeu_si256((__m256i *)(index + w), _mm256_permutevar8x32_epi32(at, perm));
      w += __builtin_popcount((unsigned)alive);
    }
  }
  if (compact) {
    /* whole vectors were stored: the tail's keys are dead again */
    _mm256_storeu_si256((__m256i *)(keys + w), dead);
    s->live = w;
    s->dead = 0;
  } else {
    s->dead = dead_count;
  }
  /* The least key, then its first entry: entries stay in index order, so
   * ties go to the lowest index. (Reduced in registers: through an array,
   * gcc kept `least` on the stack in the loop, a store-to-load chain.) */
  const uint32_t next = vo_nms_least_lane(least);
  return next == VO_NMS_DEAD ? -1 : vo_nms_select_find(keys, next);
}

__attribute__((target("avx2,fma,popcnt"))) static int64_t vo_nms_select_pass(vo_nms_live *s,
                                                                             int64_t kept,
                                                                             float thr) {
  s->key[kept] = VO_NMS_DEAD;
  s->dead++;
  return 8 * s->dead > s->live ? vo_nms_select_loop(s, kept, thr, 1)
                               : vo_nms_select_loop(s, kept, thr, 0);
}

/* The same pass on 16 lanes with AVX-512: the same operands and
 * arithmetic per lane (so the same kept list, bit for bit), compares into
 * masks, and the squeeze by the compress instruction instead of the
 * table's permutations. */
__attribute__((target("avx512f,popcnt"), always_inline)) static inline int64_t vo_nms_select_loop16(
    vo_nms_live *s, int64_t kept, float thr, const int compact) {
  float *const x1 = s->coord[0], *const y1 = s->coord[1], *const x2 = s->coord[2];
  float *const y2 = s->coord[3], *const area = s->coord[4];
  uint32_t *const keys = s->key;
  int32_t *const index = s->index;
  const int64_t live = s->live;
  const __m512 zero = _mm512_setzero_ps(), vthr = _mm512_set1_ps(thr);
  const __m512 vx1 = _mm512_set1_ps(x1[kept]), vy1 = _mm512_set1_ps(y1[kept]);
  const __m512 vx2 = _mm512_set1_ps(x2[kept]), vy2 = _mm512_set1_ps(y2[kept]);
  const __m512 va = _mm512_set1_ps(area[kept]);
  const __m512i dead = _mm512_set1_epi32(-1);
  __m512i least = dead;
  int64_t dead_count = s->dead, w = 0;
  for (int64_t j = 0; j < live; j += 16) {
    const __m512 bx1 = _mm512_loadu_ps(x1 + j), by1 = _mm512_loadu_ps(y1 + j);
    const __m512 bx2 = _mm512_loadu_ps(x2 + j), by2 = _mm512_loadu_ps(y2 + j);
    const __m512 barea = _mm512_loadu_ps(area + j);
    __m512i key = _mm512_loadu_si512(keys + j);
    const __m512 xx1 = _mm512_max_ps(bx1, vx1), yy1 = _mm512_max_ps(by1, vy1);
    const __m512 xx2 = _mm512_min_ps(bx2, vx2), yy2 = _mm512_min_ps(by2, vy2);
    const __m512 iw = _mm512_max_ps(_mm512_sub_ps(xx2, xx1), zero);
    const __m512 ih = _mm512_max_ps(_mm512_sub_ps(yy2, yy1), zero);
    const __m512 inter = _mm512_mul_ps(iw, ih);
    const __m512 uni = _mm512_sub_ps(_mm512_add_ps(va, barea), inter);
    const __mmask16 killed = _mm512_mask_cmp_ps_mask(_mm512_cmpneq_epi32_mask(key, dead),
                                                     _mm512_div_ps(inter, uni), vthr, _CMP_GT_OQ);
    if (killed) {
      dead_count += __builtin_popcount((unsigned)killed);
      key = _mm512_mask_mov_epi32(key, killed, dead);
      if (!compact) _mm512_mask_storeu_epi32(keys + j, killed, key);
    }
    least = _mm512_min_epu32(least, key);
    if (compact) {
      const __mmask16 alive = _mm512_cmpneq_epi32_mask(key, dead);
      _mm512_storeu_ps(x1 + w, _mm512_maskz_compress_ps(alive, bx1));
      _mm512_storeu_ps(y1 + w, _mm512_maskz_compress_ps(alive, by1));
      _mm512_storeu_ps(x2 + w, _mm512_maskz_compress_ps(alive, bx2));
      _mm512_storeu_ps(y2 + w, _mm512_maskz_compress_ps(alive, by2));
      _mm512_storeu_ps(area + w, _mm512_maskz_compress_ps(alive, barea));
      _mm512_storeu_si512(keys + w, _mm512_maskz_compress_epi32(alive, key));
      const __m512i at = _mm512_loadu_si512(index + j);
      _mm512_storeu_si512(index + w, _mm512_maskz_compress_epi32(alive, at));
      w += __builtin_popcount((unsigned)alive);
    }
  }
  if (compact) {
    _mm512_storeu_si512(keys + w, dead); /* whole vectors were stored */
    s->live = w;
    s->dead = 0;
  } else {
    s->dead = dead_count;
  }
  const uint32_t next = (uint32_t)_mm512_reduce_min_epu32(least);
  return next == VO_NMS_DEAD ? -1 : vo_nms_select_find(keys, next);
}

__attribute__((target("avx512f,popcnt"))) static int64_t vo_nms_select_pass16(vo_nms_live *s,
                                                                              int64_t kept,
                                                                              float thr) {
  s->key[kept] = VO_NMS_DEAD;
  s->dead++;
  return 8 * s->dead > s->live ? vo_nms_select_loop16(s, kept, thr, 1)
                               : vo_nms_select_loop16(s, kept, thr, 0);
}

/* Whether vo_nms_select runs this call: plain nms in float32 compute with
 * 32-bit score keys on one thread, AVX2, indices in int32. */
static int vo_nms_select_applies(const vo_exec *ex, int threads) {
  const vo_nms_params *p = &ex->p.nms;
  const int64_t n = p->boxes->shape[0];
  return !p->idxs && threads == 1 && ex->dtype != VO_F64 && p->scores->dtype != VO_F64 && n > 0 &&
         n <= INT32_MAX - 16 && vo_cpu_effective_isa(ex->ctx) >= VO_ISA_AVX2;
}

/* The live entries' first fill from contiguous float32 boxes [n, 4] and
 * scores, eight rows a step: the rows transposed to structure-of-arrays,
 * the areas, score keys and indices with the plain fill's arithmetic (the
 * same values). Returns the rows it filled, a multiple of 8. (The plain
 * fill, a gather and a loop of scalar keys, was a fifth of nms of 1,000
 * boxes.) */
__attribute__((target("avx2,fma"))) static int64_t vo_nms_select_fill_avx2(const float *boxes,
                                                                           const float *scores,
                                                                           int64_t n,
                                                                           vo_nms_live *s) {
  const __m256 zero = _mm256_setzero_ps();
  const __m256i top = _mm256_set1_epi32(INT32_MIN), ones = _mm256_set1_epi32(-1);
  const __m256i eight = _mm256_set1_epi32(8);
  __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    /* rows 0-1, 2-3, 4-5, 6-7 -> rows (0, 4), (2, 6), (1, 5), (3, 7) a lane
     * pair each -> the four coordinates of rows 0-7 */
    const float *r = boxes + 4 * i;
    const __m256 r01 = _mm256_loadu_ps(r), r23 = _mm256_loadu_ps(r + 8);
    const __m256 r45 = _mm256_loadu_ps(r + 16), r67 = _mm256_loadu_ps(r + 24);
    const __m256 t04 = _mm256_permute2f128_ps(r01, r45, 0x20);
    const __m256 t15 = _mm256_permute2f128_ps(r01, r45, 0x31);
    const __m256 t26 = _mm256_permute2f128_ps(r23, r67, 0x20);
    const __m256 t37 = _mm256_permute2f128_ps(r23, r67, 0x31);
    const __m256 lo0 = _mm256_unpacklo_ps(t04, t15), hi0 = _mm256_unpackhi_ps(t04, t15);
    const __m256 lo2 = _mm256_unpacklo_ps(t26, t37), hi2 = _mm256_unpackhi_ps(t26, t37);
    const __m256 x1 = _mm256_shuffle_ps(lo0, lo2, 0x44), y1 = _mm256_shuffle_ps(lo0, lo2, 0xee);
    const __m256 x2 = _mm256_shuffle_ps(hi0, hi2, 0x44), y2 = _mm256_shuffle_ps(hi0, hi2, 0xee);
    _mm256_storeu_ps(s->coord[0] + i, x1);
    _mm256_storeu_ps(s->coord[1] + i, y1);
    _mm256_storeu_ps(s->coord[2] + i, x2);
    _mm256_storeu_ps(s->coord[3] + i, y2);
    _mm256_storeu_ps(s->coord[4] + i, _mm256_mul_ps(_mm256_sub_ps(x2, x1), _mm256_sub_ps(y2, y1)));
    /* vo_k_score_key_f32: -0 as +0, the bits flipped into ascending
     * order, complemented; NaN keys 0 */
    __m256 score = _mm256_loadu_ps(scores + i);
    const __m256 nan = _mm256_cmp_ps(score, score, _CMP_UNORD_Q);
    score = _mm256_andnot_ps(_mm256_cmp_ps(score, zero, _CMP_EQ_OQ), score);
    const __m256i bits = _mm256_castps_si256(score);
    const __m256i flipped =
        _mm256_xor_si256(bits, _mm256_or_si256(_mm256_srai_epi32(bits, 31), top));
    const __m256i key =
        _mm256_andnot_si256(_mm256_castps_si256(nan), _mm256_xor_si256(flipped, ones));
    _mm256_storeu_si256((__m256i *)(s->key + i), key);
    _mm256_storeu_si256((__m256i *)(s->index + i), index);
    index = _mm256_add_epi32(index, eight);
  }
  return i;
}

/* The least key of the entries [0, live) (those past live are dead). */
__attribute__((target("avx2"))) static uint32_t vo_nms_select_least(const uint32_t *keys,
                                                                    int64_t live) {
  __m256i least = _mm256_set1_epi32(-1);
  for (int64_t j = 0; j < live; j += 8)
    least = _mm256_min_epu32(least, _mm256_loadu_si256((const __m256i *)(keys + j)));
  return vo_nms_least_lane(least);
}

static vo_status vo_nms_select(const vo_exec *ex) {
  const vo_nms_params *p = &ex->p.nms;
  const int64_t n = p->boxes->shape[0], cap = n + 16;
  int64_t *keep = vo_view_addr(p->keep);
  /* 7 arrays of 4-byte values */
  char *mem = vo_workspace_alloc(ex->ctx, ex->device, 7 * 4 * (size_t)cap, ex->op_name);
  if (!mem) return VO_ERROR_OUT_OF_MEMORY;
  pthread_once(&vo_nms_compress_once, vo_nms_compress_init);
  vo_nms_live s = {.live = n};
  for (int a = 0; a < 5; a++) s.coord[a] = (float *)mem + a * cap;
  s.key = (uint32_t *)((float *)mem + 5 * cap);
  s.index = (int32_t *)(s.key + cap);
  const vo_view *boxes = p->boxes, *scores = p->scores;
  const int64_t ss = scores->stride[0];
  const float *sv = scores->dtype == VO_F32 ? vo_view_addr(scores) : NULL;
  int64_t filled = 0;
  if (boxes->dtype == VO_F32 && boxes->stride[0] == 4 && boxes->stride[1] == 1 && sv && ss == 1)
    filled = vo_nms_select_fill_avx2(vo_view_addr(boxes), sv, n, &s);
  vo_cpu_boxes_f32 b = {s.coord[0], s.coord[1], s.coord[2], s.coord[3]};
  if (filled == 0) {
    vo_cpu_gather_boxes_f32(boxes, NULL, n, &b);
  } else { /* the fast fill's last rows */
    for (int64_t i = filled; i < n; i++) {
      const float *r = (const float *)vo_view_addr(boxes) + 4 * i;
      b.x1[i] = r[0], b.y1[i] = r[1], b.x2[i] = r[2], b.y2[i] = r[3];
    }
  }
  for (int64_t i = filled; i < n; i++) {
    s.coord[4][i] = vo_k_nms_box_of_f32(b.x1[i], b.y1[i], b.x2[i], b.y2[i]).area;
    const float score = sv ? sv[i * ss] : (float)vo_load_host(scores, i * ss);
    s.key[i] = (uint32_t)vo_k_score_key_f32(score);
    s.index[i] = (int32_t)i;
  }
  for (int64_t i = n; i < cap; i++) {
    for (int a = 0; a < 5; a++) s.coord[a][i] = 0;
    s.key[i] = VO_NMS_DEAD;
    s.index[i] = -1;
  }
  /* The first box to keep: the least key (no key is VO_NMS_DEAD), its first
   * entry. */
  int64_t next = vo_nms_select_find(s.key, vo_nms_select_least(s.key, n)), count = 0;
  const int wide = vo_cpu_effective_isa(ex->ctx) >= VO_ISA_AVX512;
  while (next >= 0) {
    keep[count++] = s.index[next];
    next = wide ? vo_nms_select_pass16(&s, next, p->iou_threshold_f32)
                : vo_nms_select_pass(&s, next, p->iou_threshold_f32);
  }
  for (int64_t r = count; r < n; r++) keep[r] = -1;
  *(int64_t *)vo_view_addr(p->num_kept) = count;
  vo_workspace_free(ex->ctx, ex->device, mem);
  return VO_OK;
}

/* The AVX2 steps of a category's description (cpu/nms.h). */
static void vo_nms_apply_avx2_f64(const vo_nms_boxes *b, int64_t i, int64_t j0, int64_t j1,
                                  uint8_t *sup) {
  vo_nms_apply_avx2_arrays_f64(b->array[0], b->array[1], b->array[2], b->array[3], b->array[4], i,
                               j0, j1, b->thr_f64, sup);
}
static void vo_nms_apply_avx2_f32(const vo_nms_boxes *b, int64_t i, int64_t j0, int64_t j1,
                                  uint8_t *sup) {
  vo_nms_apply_avx2_arrays_f32(b->array[0], b->array[1], b->array[2], b->array[3], b->array[4], i,
                               j0, j1, b->thr_f32, sup);
}
#endif

/* A category of nms's boxes in the compute type, with the threshold (for
 * float, the largest float not above it) and the ISA's apply step. */
static void vo_nms_axis_gather(const vo_exec *ex, void *store, int64_t n, int64_t start, int64_t m,
                               const int64_t *slot_index, vo_nms_boxes *nb) {
#ifdef VO_HAVE_AVX2_KERNELS
  const int avx2 = vo_cpu_effective_isa(ex->ctx) >= VO_ISA_AVX2;
#endif
  if (ex->dtype == VO_F64) {
    vo_nms_axis_gather_f64(ex, store, n, start, m, slot_index, nb);
    nb->thr_f64 = ex->p.nms.iou_threshold;
#ifdef VO_HAVE_AVX2_KERNELS
    if (avx2) nb->apply = vo_nms_apply_avx2_f64;
#endif
  } else {
    vo_nms_axis_gather_f32(ex, store, n, start, m, slot_index, nb);
    nb->thr_f32 = ex->p.nms.iou_threshold_f32;
#ifdef VO_HAVE_AVX2_KERNELS
    if (avx2) nb->apply = vo_nms_apply_avx2_f32;
#endif
  }
}

/* Below 8,192 boxes one category stays on one thread: with the serial
 * AVX2 pass, nms of the benchmark's 5,000 detections takes 0.37 ms. An IoU
 * takes about 0.5 ns. */
static const vo_nms_kind vo_nms_axis_kind = {
    .box_bytes = {5 * sizeof(float), 5 * sizeof(double)},
    .pair_ns = 0.5,
    .parallel_min = 8192,
    .gather = vo_nms_axis_gather,
};

vo_status vo_cpu_nms(const vo_exec *ex) {
#ifdef VO_HAVE_AVX2_KERNELS
  const int64_t n = ex->p.nms.boxes->shape[0];
  if (vo_nms_select_applies(ex, vo_nms_threads(ex->ctx, &vo_nms_axis_kind, n)))
    return vo_nms_select(ex);
#endif
  return vo_cpu_nms_run(ex, &vo_nms_axis_kind);
}
