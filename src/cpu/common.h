/*
 * Helpers for the CPU kernels: element loads/stores across the four float
 * dtypes, and boxes gathered into structure-of-arrays form for SIMD loops.
 */
#ifndef VISIONOPS_CPU_COMMON_H
#define VISIONOPS_CPU_COMMON_H

#include "core/half.h"
#include "core/internal.h"
#include "core/load.h"
#include "cpu/omp_for.h"
#include "cpu/parallel.h"

#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <xmmintrin.h> /* SSE streaming stores (baseline x86-64) */
#endif

/* Element loads and output stores per storage dtype, for kernels whose
 * input view is `in` and whose params are `p`. */
#define VO_LOAD_F32(i) (((const float *)vo_view_addr(in))[i])
#define VO_LOAD_F64(i) (((const double *)vo_view_addr(in))[i])
#define VO_LOAD_F16(i) vo_f16_to_f32(((const uint16_t *)vo_view_addr(in))[i])
#define VO_LOAD_BF16(i) vo_bf16_to_f32(((const uint16_t *)vo_view_addr(in))[i])
#define VO_STORE_F32(i, v) (((float *)vo_view_addr(p->out))[i] = (v))
#define VO_STORE_F64(i, v) (((double *)vo_view_addr(p->out))[i] = (v))
#define VO_STORE_F16(i, v) (((uint16_t *)vo_view_addr(p->out))[i] = vo_f32_to_f16(v))
#define VO_STORE_BF16(i, v) (((uint16_t *)vo_view_addr(p->out))[i] = vo_f32_to_bf16(v))

/* dst[0..n) = src[0..n) for 4-byte elements (float32 values, int32
 * indices), through streaming stores where the destination is 16-byte
 * aligned (x86; elsewhere memcpy): a large output written once skips the
 * reads for ownership of its lines and leaves the cache to the inputs. The
 * fence orders them before the caller's next synchronisation. For outputs
 * of VO_CPU_STREAM_MIN bytes or more; smaller ones the caller likely reads
 * from the cache next. */
#define VO_CPU_STREAM_MIN ((int64_t)16 << 20)
static inline void vo_cpu_stream_4(void *dst, const void *src, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  float *d = dst;
  const float *s = src;
  int64_t i = 0;
  for (; i < n && ((uintptr_t)(d + i) & 15); i++) memcpy(d + i, s + i, 4);
  for (; i + 4 <= n; i += 4) _mm_stream_ps(d + i, _mm_loadu_ps(s + i)); /* moves: bits kept */
  for (; i < n; i++) memcpy(d + i, s + i, 4);
  _mm_sfence();
#else
  memcpy(dst, src, (size_t)n * 4);
#endif
}

/* Boxes [N,4] in structure-of-arrays form, in the compute type (float for
 * float32/16/bfloat16, double for float64). */
typedef struct vo_cpu_boxes_f32 {
  float *x1, *y1, *x2, *y2;
} vo_cpu_boxes_f32;
typedef struct vo_cpu_boxes_f64 {
  double *x1, *y1, *x2, *y2;
} vo_cpu_boxes_f64;

/* Row `order[i]` (or row i when order is NULL) of `boxes` goes to slot i,
 * for i in [0, n). */
void vo_cpu_gather_boxes_f32(const vo_view *boxes, const int64_t *order, int64_t n,
                             vo_cpu_boxes_f32 *out);
void vo_cpu_gather_boxes_f64(const vo_view *boxes, const int64_t *order, int64_t n,
                             vo_cpu_boxes_f64 *out);

/*
 * How many threads a parallel region gets: at most one per work item (as
 * vo_cpu_threads), and only as many as give each thread at least
 * VO_CPU_MIN_THREAD_NS (parallel.h) of work, from `cost_ns`, the caller's estimate of
 * the region's one-thread time in nanoseconds. Every CPU parallel region
 * asks this, so that a call too small to repay waking a thread stays on
 * the calling one: opening a region costs microseconds on an idle machine
 * but a scheduler time slice (measured 15-25 ms on a 2-core machine with
 * two busy processes) when the cores are shared, and a 999x1 box_iou then
 * took 13-40 ms at two threads against 0.2 ms at one. The estimates are
 * coarse (per-item constants measured on the benchmark machine, see each
 * call site); being off by 2x only moves the size at which a region opens.
 * With the default thread count (none set on the context), a region shorter
 * than VO_CPU_LONG_REGION_NS also gets no more threads than the cores other
 * processes left free lately (vo_cpu_free_cores); a count set with
 * vo_context_set_num_threads is an upper bound only the work estimate lowers.
 */
static inline int vo_cpu_threads_for(const vo_context *ctx, int64_t items, double cost_ns) {
  if (vo_cpu_in_region()) return 1;
  int t = vo_cpu_threads(ctx, items);
  /* A count the caller set is kept; so are a long region's threads. */
  if (t > 1 && (!ctx || ctx->num_threads == 0) && !(cost_ns >= VO_CPU_LONG_REGION_NS)) {
    const int free_cores = vo_cpu_free_cores();
    if (t > free_cores) t = free_cores;
  }
  const double min_ns = vo_cpu_min_thread_ns();
  if (t > 1 && min_ns > 0 && !(cost_ns >= min_ns * t)) {
    const double fit = cost_ns / min_ns; /* NaN (no estimate) gives 1 */
    t = fit >= 2 ? (int)fit : 1;
  }
  return t;
}

/* Kernels that other kernels build on (multi_scale_roi_align runs roi_align
 * once per pyramid level). */
vo_status vo_cpu_roi_align(const vo_exec *ex);
vo_status vo_cpu_roi_align_backward(const vo_exec *ex);

#endif /* VISIONOPS_CPU_COMMON_H */
