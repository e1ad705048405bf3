/*
 * Parallel regions that never wait for a thread that has not started: the
 * CPU kernels' way to use several threads on a machine whose cores are
 * shared (src/cpu/parallel.c). See docs/DECISIONS.md, "Threads under load".
 */
#ifndef VISIONOPS_CPU_PARALLEL_H
#define VISIONOPS_CPU_PARALLEL_H

#include <stdatomic.h>
#include <stdint.h>

/* A participant of a region: slot 0 is the calling thread, 1..threads-1
 * pool workers (each slot runs at most once per region, so per-slot
 * scratch needs no locking). */
typedef void (*vo_cpu_task)(void *arg, int slot);

/*
 * Runs fn(arg, slot) on the calling thread and on up to threads - 1 pool
 * workers that wake up while the region is still open, and returns once
 * every participant that started has returned. A worker that wakes after
 * the caller has finished does not join, so the region never waits for a
 * thread the scheduler has not run yet (an OpenMP region's closing barrier
 * does: under shared cores that cost 15-25 ms a region). Because any
 * number of participants from 1 to `threads` may run, fn must share its
 * work by claiming pieces (vo_cpu_claim), never by splitting it per slot.
 * threads <= 1, a call from inside a region, a region already running in
 * another application thread, or a quiet spell after a region that was
 * held up by the scheduler (parallel.c): fn(arg, 0) alone.
 */
void vo_cpu_run(int threads, vo_cpu_task fn, void *arg);

/* Nonzero on a pool worker, or on a caller inside its own region. */
int vo_cpu_in_region(void);

/* Pieces [0, n) handed out `grain` at a time, in increasing order. The
 * counter has a cache line to itself (with n and grain, which every claim
 * reads anyway): a region's state struct holds it beside the pointers its
 * participants read on every piece, and a claim by one thread then made the
 * others' reads of those pointers cache misses (perf: a quarter of
 * batched_nms_padded's per-problem time at 2 threads, outside its scan). */
typedef struct vo_cpu_range {
  _Alignas(64) atomic_llong next;
  int64_t n, grain;
  char pad[64 - sizeof(atomic_llong) - 2 * sizeof(int64_t)];
} vo_cpu_range;

static inline void vo_cpu_range_init(vo_cpu_range *r, int64_t n, int64_t grain) {
  atomic_init(&r->next, 0);
  r->n = n;
  r->grain = grain < 1 ? 1 : grain;
}

/* Claims the next pieces [*begin, *end); 0 when none are left. */
static inline int vo_cpu_claim(vo_cpu_range *r, int64_t *begin, int64_t *end) {
  const int64_t b = atomic_fetch_add_explicit(&r->next, r->grain, memory_order_relaxed);
  if (b >= r->n) return 0;
  *begin = b;
  *end = r->n - b > r->grain ? b + r->grain : r->n;
  return 1;
}

/* Waiting on another participant: spin briefly, then give the core away,
 * so that a waiting thread does not hold up the one it waits for when both
 * share a core. `spins` starts at 0 and is reset after progress. */
void vo_cpu_pause(int *spins);

/* How many cores the other processes on the machine left free lately (at
 * least 1; a large number where that cannot be measured): regions use no
 * more threads than that (vo_cpu_threads_for), since a thread beyond the
 * free cores only takes turns with a busy process, and whoever waits for
 * it waits a time slice. Sampled at most every 100 ms. */
int vo_cpu_free_cores(void);

/* A region of at least this much one-thread work (ns) keeps its threads
 * beyond the free cores: the longest wait for a preempted thread (a time
 * slice, 15-25 ms measured on 2 shared cores) is then under half its time,
 * so it stays within 1.5x of one thread at worst, and the extra threads
 * still get their fair share of busy cores (roi_align 2x256x200x272, 1,000
 * RoIs, under two busy processes: 144 ms at two threads, 199 ms at one). */
#define VO_CPU_LONG_REGION_NS 50e6

/* The least one-thread work (ns) per thread of a region: 50 us, or
 * VISIONOPS_MIN_THREAD_NS from the environment (a testing knob). */
#define VO_CPU_MIN_THREAD_NS 50000.0
double vo_cpu_min_thread_ns(void);

/* A participant that waited `ns` on another (e.g. for a chunk it depends
 * on) reports it, so that vo_cpu_run can tell a region held up by the
 * scheduler from one that ran smoothly; vo_cpu_clock_ns is the clock. */
void vo_cpu_note_stall(long long ns);
long long vo_cpu_clock_ns(void);

#endif /* VISIONOPS_CPU_PARALLEL_H */
