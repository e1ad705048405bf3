/*
 * The CPU backend: its kernel table, availability (always), default
 * allocator, the value checks on its threads, and the box gathering shared
 * by the box kernels.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/common.h"
#include "cpu/gemm.h"

#ifdef VISIONOPS_HAVE_OPENMP
#include <omp.h>
#endif

/* The kernel table, from src/ops/ops.def's kernel column: vo_cpu_KERNEL for
 * each op (the kernels are defined in src/cpu/<op>.c). */
#define VO_OP(name, kernel, schema, backward, shape_rule) \
  vo_status vo_cpu_##kernel(const vo_exec *ex);
#include "ops/ops.def"
#undef VO_OP

static const vo_kernel_fn vo_cpu_kernels[VO_NUM_OPS] = {
#define VO_OP(name, kernel, schema, backward, shape_rule) [VO_OP_##name] = vo_cpu_##kernel,
#include "ops/ops.def"
#undef VO_OP
};

static int vo_cpu_probe(char *detail, size_t size) {
  char gemm[320];
  vo_cpu_gemm_describe(gemm, sizeof gemm);
#ifdef VISIONOPS_HAVE_OPENMP
  snprintf(detail, size, "%d threads (OpenMP), ISA %s, deform_conv2d GEMM %s",
           omp_get_max_threads(), vo_cpu_isa(NULL), gemm);
#else
  snprintf(detail, size, "1 thread (built without OpenMP), ISA %s, deform_conv2d GEMM %s",
           vo_cpu_isa(NULL), gemm);
#endif
  return 1;
}

/*
 * The default allocator keeps a few freed blocks of 256 KiB and more for
 * the next call (process-wide, VO_CPU_CACHE_SLOTS of them, at most
 * VISIONOPS_CPU_CACHE_BYTES in all, 256 MiB unless set; 0 keeps none):
 * malloc hands blocks that large to mmap and back to the system on free,
 * so every call paid page faults and the kernel's zeroing of fresh pages
 * on its workspace (deform_conv2d's 38 MB columns: 11,500 faults a call),
 * and glibc's own thresholds cannot be raised to keep them without giving
 * up the huge pages mmap's aligned regions get. A block is reused for a
 * request of at least half its size; vo_cpu_release_cached_memory hands
 * them all back. Each block carries its size in a 64-byte header.
 * AddressSanitizer builds keep none by default.
 */
#define VO_CPU_CACHE_SLOTS 4
#define VO_CPU_CACHE_MIN ((size_t)256 << 10)
#define VO_CPU_HEADER 64

typedef struct vo_cpu_block {
  char *base; /* NULL: slot empty */
  size_t size;
} vo_cpu_block;

static pthread_mutex_t vo_cpu_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static vo_cpu_block vo_cpu_cache[VO_CPU_CACHE_SLOTS];
static size_t vo_cpu_cache_bytes;
#if defined(__SANITIZE_ADDRESS__)
#define VO_CPU_CACHE_DEFAULT \
  0 /* AddressSanitizer builds: every free reaches it, so it sees use after free */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VO_CPU_CACHE_DEFAULT 0
#endif
#endif
#ifndef VO_CPU_CACHE_DEFAULT
#define VO_CPU_CACHE_DEFAULT ((size_t)256 << 20)
#endif
static size_t vo_cpu_cache_limit = VO_CPU_CACHE_DEFAULT;
static pthread_once_t vo_cpu_cache_once = PTHREAD_ONCE_INIT;

static void vo_cpu_cache_read_env(void) {
  const char *v = getenv("VISIONOPS_CPU_CACHE_BYTES");
  char *end = NULL;
  const unsigned long long n = v ? strtoull(v, &end, 10) : 0;
  if (v && end != v && *end == 0) vo_cpu_cache_limit = (size_t)n;
}

static void *vo_cpu_alloc(DLDevice device, size_t size, void *stream) {
  (void)device;
  (void)stream;
  /* 64-byte alignment suits every vector width the kernels use. */
  const size_t rounded = (size + 63) & ~(size_t)63;
  if (rounded < size || rounded > SIZE_MAX - VO_CPU_HEADER) return NULL;
  char *base = NULL;
  if (rounded >= VO_CPU_CACHE_MIN) {
    pthread_mutex_lock(&vo_cpu_cache_lock);
    int best = -1;
    for (int i = 0; i < VO_CPU_CACHE_SLOTS; i++) {
      const vo_cpu_block *b = &vo_cpu_cache[i];
      if (b->base && b->size >= rounded && b->size / 2 <= rounded &&
          (best < 0 || b->size < vo_cpu_cache[best].size))
        best = i;
    }
    if (best >= 0) {
      base = vo_cpu_cache[best].base;
      vo_cpu_cache_bytes -= vo_cpu_cache[best].size;
      vo_cpu_cache[best].base = NULL;
    }
    pthread_mutex_unlock(&vo_cpu_cache_lock);
  }
  if (!base) {
    base = aligned_alloc(64, rounded + VO_CPU_HEADER);
    if (!base) return NULL;
    memcpy(base, &rounded, sizeof rounded);
  }
  return base + VO_CPU_HEADER;
}

static void vo_cpu_free(DLDevice device, void *ptr, void *stream) {
  (void)device;
  (void)stream;
  if (!ptr) return;
  char *base = (char *)ptr - VO_CPU_HEADER;
  size_t size;
  memcpy(&size, base, sizeof size);
  if (size >= VO_CPU_CACHE_MIN) {
    pthread_once(&vo_cpu_cache_once, vo_cpu_cache_read_env);
    pthread_mutex_lock(&vo_cpu_cache_lock);
    /* an empty slot, else the smallest block if this one is larger */
    int slot = -1;
    for (int i = 0; i < VO_CPU_CACHE_SLOTS; i++) {
      const vo_cpu_block *b = &vo_cpu_cache[i];
      if (!b->base) {
        slot = i;
        break;
      }
      if (b->size < size && (slot < 0 || b->size < vo_cpu_cache[slot].size)) slot = i;
    }
    char *evicted = NULL;
    if (slot >= 0) {
      const size_t out = vo_cpu_cache[slot].base ? vo_cpu_cache[slot].size : 0;
      if (vo_cpu_cache_bytes - out + size <= vo_cpu_cache_limit) {
        evicted = vo_cpu_cache[slot].base;
        vo_cpu_cache_bytes += size - out;
        vo_cpu_cache[slot] = (vo_cpu_block){base, size};
        base = NULL;
      }
    }
    pthread_mutex_unlock(&vo_cpu_cache_lock);
    free(evicted);
  }
  free(base);
}

void vo_cpu_release_cached_memory(void) {
  char *blocks[VO_CPU_CACHE_SLOTS];
  pthread_mutex_lock(&vo_cpu_cache_lock);
  for (int i = 0; i < VO_CPU_CACHE_SLOTS; i++) {
    blocks[i] = vo_cpu_cache[i].base;
    vo_cpu_cache[i].base = NULL;
  }
  vo_cpu_cache_bytes = 0;
  pthread_mutex_unlock(&vo_cpu_cache_lock);
  for (int i = 0; i < VO_CPU_CACHE_SLOTS; i++) free(blocks[i]);
}

static vo_status vo_cpu_copy_in(DLDevice device, void *dst, uint64_t dst_offset, const void *src,
                                size_t size, void *queue) {
  (void)device;
  (void)queue;
  if (size) memcpy((char *)dst + dst_offset, src, size);
  return VO_OK;
}

static vo_status vo_cpu_copy_out(DLDevice device, void *dst, const void *src, uint64_t src_offset,
                                 size_t size, void *queue) {
  (void)device;
  (void)queue;
  if (size) memcpy(dst, (const char *)src + src_offset, size);
  return VO_OK;
}

/* The declared value checks on the context's threads: the argmax of a
 * detector's roi_pool backward alone is 12.5 M values (7.4 ms on one
 * thread with core's flat argmax pass, 24 ms row by row). Each check's
 * rows are cut into pieces handed out in order; a thread keeps the lowest
 * bad key any piece found, and skips the pieces that start after it, so
 * the item reported is the serial loop's. */
#define VO_CPU_CHECK_NS 0.4 /* per element, one core (an argmax check) */

typedef struct vo_cpu_checks {
  const vo_view *t, *t2;
  const vo_k_check *check;
  int64_t len;
  vo_cpu_range rows;
  atomic_ullong first; /* lowest bad key found; VO_K_CHECK_NONE: none */
} vo_cpu_checks;

static void vo_cpu_checks_task(void *arg, int slot) {
  (void)slot;
  vo_cpu_checks *w = arg;
  int64_t r0, r1;
  while (vo_cpu_claim(&w->rows, &r0, &r1)) {
    if ((uint64_t)(r0 * w->len) > atomic_load_explicit(&w->first, memory_order_relaxed)) continue;
    vo_k_check_found f = {.first = VO_K_CHECK_NONE};
    vo_find_on_host_rows(w->t, w->t2, w->check, r0, r1, &f);
    unsigned long long cur = atomic_load_explicit(&w->first, memory_order_relaxed);
    while (f.first < cur &&
           !atomic_compare_exchange_weak_explicit(&w->first, &cur, f.first, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
  }
}

static vo_status vo_cpu_check_data(const vo_exec *ex, vo_k_check_found *found) {
  for (int i = 0; i < ex->num_data_checks; i++) {
    const vo_data_check *d = &ex->data_checks[i];
    const vo_view *t = &ex->inputs[d->arg], *t2 = &ex->inputs[vo_data_check_second(d)];
    if (t->numel == 0) continue;
    vo_cpu_checks w = {.t = t, .t2 = t2, .check = &d->check};
    w.len = vo_k_check_row_length(&d->check);
    const int64_t rows = vo_k_check_rows(&d->check);
    const double row_ns = VO_CPU_CHECK_NS * (double)w.len;
    vo_cpu_range_init(&w.rows, rows, (int64_t)(50000.0 / row_ns) + 1); /* ~50 us a piece */
    atomic_init(&w.first, VO_K_CHECK_NONE);
    vo_cpu_run(vo_cpu_threads_for(ex->ctx, rows, row_ns * (double)rows), vo_cpu_checks_task, &w);
    const unsigned long long key = atomic_load(&w.first);
    if (key == VO_K_CHECK_NONE) continue;
    found[i].first = key;
    vo_k_check_values(vo_view_addr(t), vo_view_addr(t2), &d->check, (int64_t)key, found[i].value);
    return VO_OK; /* the dispatcher reports the first check that found one */
  }
  return VO_OK;
}

const vo_backend vo_cpu_backend = {
    .name = "cpu",
    .device_type = kDLCPU,
    .addressable = 1,
    .kernels = vo_cpu_kernels,
    .probe = vo_cpu_probe,
    .alloc = vo_cpu_alloc,
    .free = vo_cpu_free,
    .copy_to_device = vo_cpu_copy_in,
    .copy_to_host = vo_cpu_copy_out,
    .check_data = vo_cpu_check_data,
};

#define VO_DEFINE_GATHER(T, SUFFIX)                                                        \
  void vo_cpu_gather_boxes_##SUFFIX(const vo_view *boxes, const int64_t *order, int64_t n, \
                                    vo_cpu_boxes_##SUFFIX *out) {                          \
    const int64_t s0 = boxes->stride[0], s1 = boxes->stride[1];                            \
    /* float32 and float64 rows read directly (vo_load_host's switch per */                \
    /* element was a tenth of nms of 1,000 boxes); the same values */                      \
    if (boxes->dtype == VO_F32 || boxes->dtype == VO_F64) {                                \
      const float *f = boxes->dtype == VO_F32 ? vo_view_addr(boxes) : NULL;                \
      const double *d = f ? NULL : vo_view_addr(boxes);                                    \
      for (int64_t i = 0; i < n; i++) {                                                    \
        const int64_t row = (order ? order[i] : i) * s0;                                   \
        out->x1[i] = f ? (T)f[row] : (T)d[row];                                            \
        out->y1[i] = f ? (T)f[row + s1] : (T)d[row + s1];                                  \
        out->x2[i] = f ? (T)f[row + 2 * s1] : (T)d[row + 2 * s1];                          \
        out->y2[i] = f ? (T)f[row + 3 * s1] : (T)d[row + 3 * s1];                          \
      }                                                                                    \
      return;                                                                              \
    }                                                                                      \
    for (int64_t i = 0; i < n; i++) {                                                      \
      int64_t row = (order ? order[i] : i) * s0;                                           \
      out->x1[i] = (T)vo_load_host(boxes, row);                                            \
      out->y1[i] = (T)vo_load_host(boxes, row + s1);                                       \
      out->x2[i] = (T)vo_load_host(boxes, row + 2 * s1);                                   \
      out->y2[i] = (T)vo_load_host(boxes, row + 3 * s1);                                   \
    }                                                                                      \
  }
VO_DEFINE_GATHER(float, f32)
VO_DEFINE_GATHER(double, f64)
