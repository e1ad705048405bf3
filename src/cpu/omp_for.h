/*
 * The CPU kernels' OpenMP loops, in one place (each kernel file had its own
 * copy of the same pragma macros).
 *
 *   VO_CPU_FOR(t, i, lo, hi, { body });          static schedule
 *   VO_CPU_FOR_DYNAMIC(t, i, lo, hi, { body });  pieces of one, handed out
 *
 * run `for (int64_t i = lo; i < hi; i++) { body }` on t threads, or, when t
 * <= 1, on the calling thread without entering OpenMP: libgomp builds and
 * retires a thread team even for a one-thread region (~0.36 us a region on
 * the benchmark machine, measured), which was most of a tiny call's kernel
 * time (roi_align of one RoI opened two regions). lo and hi are evaluated
 * once. VO_CPU_THREAD() is the running thread's number in the region (0
 * outside one), for per-thread scratch. A region holding several loops
 * (VO_CPU_PARALLEL, VO_CPU_OMP_FOR_NOWAIT, VO_CPU_OMP_FOR_DYNAMIC inside it)
 * is for the few kernels that need one; its caller skips it when t <= 1.
 */
#ifndef VISIONOPS_CPU_OMP_FOR_H
#define VISIONOPS_CPU_OMP_FOR_H

#include <stdint.h>

#ifdef VISIONOPS_HAVE_OPENMP
#include <omp.h>

#define VO_CPU_PRAGMA(x) _Pragma(#x)
#define VO_CPU_THREAD() omp_get_thread_num()
/* (two whole definitions: a _Pragma passed through a macro argument is
 * not reliably placed by every preprocessor) */
#define VO_CPU_FOR(t, i, lo, hi, ...)                                               \
  do {                                                                              \
    const int vo_for_threads_ = (t);                                                \
    const int64_t vo_for_lo_ = (lo), vo_for_hi_ = (hi);                             \
    if (vo_for_threads_ > 1) {                                                      \
      VO_CPU_PRAGMA(omp parallel for num_threads(vo_for_threads_) schedule(static)) \
      for (int64_t i = vo_for_lo_; i < vo_for_hi_; i++) __VA_ARGS__                 \
    } else {                                                                        \
      for (int64_t i = vo_for_lo_; i < vo_for_hi_; i++) __VA_ARGS__                 \
    }                                                                               \
  } while (0)
#define VO_CPU_FOR_DYNAMIC(t, i, lo, hi, ...)                                           \
  do {                                                                                  \
    const int vo_for_threads_ = (t);                                                    \
    const int64_t vo_for_lo_ = (lo), vo_for_hi_ = (hi);                                 \
    if (vo_for_threads_ > 1) {                                                          \
      VO_CPU_PRAGMA(omp parallel for num_threads(vo_for_threads_) schedule(dynamic, 1)) \
      for (int64_t i = vo_for_lo_; i < vo_for_hi_; i++) __VA_ARGS__                     \
    } else {                                                                            \
      for (int64_t i = vo_for_lo_; i < vo_for_hi_; i++) __VA_ARGS__                     \
    }                                                                                   \
  } while (0)
#define VO_CPU_PARALLEL(t) VO_CPU_PRAGMA(omp parallel num_threads(t))
#define VO_CPU_OMP_FOR_NOWAIT VO_CPU_PRAGMA(omp for schedule(static) nowait)
#define VO_CPU_OMP_FOR_DYNAMIC VO_CPU_PRAGMA(omp for schedule(dynamic, 1))

#else /* a serial build: the thread counts are read and ignored */
#define VO_CPU_THREAD() 0
#define VO_CPU_FOR(t, i, lo, hi, ...)                             \
  do {                                                            \
    (void)(t);                                                    \
    const int64_t vo_for_lo_ = (lo), vo_for_hi_ = (hi);           \
    for (int64_t i = vo_for_lo_; i < vo_for_hi_; i++) __VA_ARGS__ \
  } while (0)
#define VO_CPU_FOR_DYNAMIC VO_CPU_FOR
#define VO_CPU_PARALLEL(t)
#define VO_CPU_OMP_FOR_NOWAIT
#define VO_CPU_OMP_FOR_DYNAMIC
#endif

#endif /* VISIONOPS_CPU_OMP_FOR_H */
