/*
 * The CPU thread pool behind vo_cpu_run: workers that sleep on a condition
 * variable, one region at a time, and a join protocol that lets the caller
 * leave as soon as the participants that did start have finished.
 *
 * Region state is one counter: odd while a region is open for joining, even
 * once it is closed; each new region adds 2 to the closed value + 1. A
 * worker that sees an open state s announces itself (active += 1), then
 * joins only if the state is still s; the caller closes the region
 * (state = s + 1) and then waits for active to reach 0. Both sides use
 * sequentially consistent atomics, so either the caller sees the worker's
 * announcement and waits for it, or the worker sees the region closed and
 * leaves without touching it. The region's function and argument are
 * written before the state that opens it, so a worker that validated the
 * state reads them complete.
 *
 * Shared cores: a worker that started can still be preempted holding a
 * piece, and the caller must then wait for the scheduler to run it again
 * (a time slice, milliseconds). The caller measures how long it was held
 * up after its own work (plus the stalls kernels report while waiting on
 * one another) and, when that outweighs the work, runs the regions of the
 * next few milliseconds alone; each such finding doubles that quiet spell
 * (8 ms up to about 1 s), each region that ran smoothly with a worker
 * halves the next one. Under sustained load that costs about one held-up
 * region per second; on an idle machine it does not trigger.
 */
#define _POSIX_C_SOURCE 200809L

#include "cpu/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define VO_POOL_MAX_WORKERS 255
/* Pause iterations a worker polls for the next region before it sleeps:
 * some microseconds, so back-to-back calls find it awake (longer spins
 * take the core from the caller when cores are shared). */
#define VO_POOL_SPIN 1000

static pthread_mutex_t vo_pool_mu = PTHREAD_MUTEX_INITIALIZER; /* sleep/wake, creation */
static pthread_cond_t vo_pool_cv = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t vo_pool_run_mu = PTHREAD_MUTEX_INITIALIZER; /* one region at a time */
static int vo_pool_workers;                                        /* started, under vo_pool_mu */
static pthread_t vo_pool_threads[VO_POOL_MAX_WORKERS];             /* under vo_pool_mu */
static atomic_int vo_pool_stop;                                    /* the library is unloading */
static atomic_ullong vo_pool_state;                                /* see the file comment */
static atomic_int vo_pool_active;                                  /* workers announced */
static atomic_int vo_pool_slots;                                   /* slots handed out */
static int vo_pool_max_slots;
static vo_cpu_task vo_pool_fn;
static void *vo_pool_arg;
static _Thread_local int vo_pool_inside;
static atomic_llong vo_pool_stall_ns;    /* reported by the current region's participants */
static atomic_llong vo_pool_quiet_until; /* monotonic ns: until then, regions run alone */
static atomic_int vo_pool_backoff;       /* held-up regions lately, less smooth ones */

/* A region counts as held up when the caller waited (after its own work,
 * or in reported stalls) more than this and more than a quarter of the
 * region's time. */
#define VO_POOL_HELD_NS 250000LL
#define VO_POOL_QUIET_NS 8000000LL /* the first quiet spell: 8 ms */
#define VO_POOL_MAX_BACKOFF 8      /* the longest: 8 ms << 7, about 1 s */

static long long vo_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * Cores the rest of the machine leaves free, sampled at most every
 * VO_POOL_SAMPLE_NS: the busy time of all CPUs (/proc/stat) less this
 * process's own CPU time (getrusage, every thread), over the last
 * interval (before the first interval, the processes runnable at that
 * moment). Where /proc/stat cannot be read, every core counts as free.
 */
#define VO_POOL_SAMPLE_NS 100000000LL
static atomic_llong vo_pool_sampled_at;
static atomic_int vo_pool_free_cores; /* 0: not sampled yet */
static atomic_flag vo_pool_sampling = ATOMIC_FLAG_INIT;
static long long vo_pool_last_busy_ns, vo_pool_last_self_ns, vo_pool_last_ns;
static int vo_pool_cpus;

/* All CPUs' busy time (user+nice+system+irq+softirq+steal) in ns, or -1. */
static long long vo_busy_ns(int *cpus) {
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return -1;
  unsigned long long v[8] = {0};
  char line[256];
  long long busy = -1;
  int n = 0;
  if (fgets(line, sizeof line, f) &&
      sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
             &v[5], &v[6], &v[7]) == 8) {
    const long tick = sysconf(_SC_CLK_TCK);
    busy = (long long)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) *
           (1000000000LL / (tick > 0 ? tick : 100));
    while (fgets(line, sizeof line, f) && strncmp(line, "cpu", 3) == 0) n++;
  }
  fclose(f);
  *cpus = n;
  return busy;
}

/* Threads runnable on the machine now (/proc/loadavg's fourth field), or -1. */
static int vo_running_now(void) {
  FILE *f = fopen("/proc/loadavg", "r");
  if (!f) return -1;
  double a, b, c;
  int running = -1, total;
  if (fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5) running = -1;
  fclose(f);
  return running;
}

static long long vo_self_ns(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
  return ((long long)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
         ((long long)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

int vo_cpu_free_cores(void) {
  const long long now = vo_now_ns();
  if (now - atomic_load_explicit(&vo_pool_sampled_at, memory_order_relaxed) >= VO_POOL_SAMPLE_NS &&
      !atomic_flag_test_and_set(&vo_pool_sampling)) {
    int cpus = 0;
    const long long busy = vo_busy_ns(&cpus), self = vo_self_ns();
    if (busy >= 0 && self >= 0 && cpus > 0) {
      if (!vo_pool_last_ns) {
        /* No interval yet: the processes runnable right now, less this
         * thread, stand in until the first interval has passed. */
        const int running = vo_running_now();
        if (running > 0) {
          const int free_cores = cpus - (running - 1);
          atomic_store_explicit(&vo_pool_free_cores, free_cores < 1 ? 1 : free_cores,
                                memory_order_relaxed);
        }
      } else if (now > vo_pool_last_ns) {
        const double others =
            (double)((busy - vo_pool_last_busy_ns) - (self - vo_pool_last_self_ns)) /
            (double)(now - vo_pool_last_ns);
        int free_cores = (int)((double)cpus - (others > 0 ? others : 0) + 0.5);
        atomic_store_explicit(&vo_pool_free_cores, free_cores < 1 ? 1 : free_cores,
                              memory_order_relaxed);
      }
      vo_pool_last_busy_ns = busy, vo_pool_last_self_ns = self, vo_pool_last_ns = now;
      vo_pool_cpus = cpus;
    }
    atomic_store_explicit(&vo_pool_sampled_at, now, memory_order_relaxed);
    atomic_flag_clear(&vo_pool_sampling);
  }
  const int f = atomic_load_explicit(&vo_pool_free_cores, memory_order_relaxed);
  return f > 0 ? f : 1 << 30;
}

/* VISIONOPS_MIN_THREAD_NS overrides VO_CPU_MIN_THREAD_NS (read once): the
 * test suites set it to 0 so that their small inputs still exercise the
 * multi-threaded paths. */
static double vo_pool_min_thread_ns = VO_CPU_MIN_THREAD_NS;
static pthread_once_t vo_pool_env_once = PTHREAD_ONCE_INIT;
static void vo_pool_read_env(void) {
  const char *v = getenv("VISIONOPS_MIN_THREAD_NS");
  char *end = NULL;
  const double d = v ? strtod(v, &end) : -1;
  if (v && end != v && d >= 0) vo_pool_min_thread_ns = d;
}

double vo_cpu_min_thread_ns(void) {
  pthread_once(&vo_pool_env_once, vo_pool_read_env);
  return vo_pool_min_thread_ns;
}

void vo_cpu_note_stall(long long ns) {
  if (ns > 0) atomic_fetch_add_explicit(&vo_pool_stall_ns, ns, memory_order_relaxed);
}

long long vo_cpu_clock_ns(void) { return vo_now_ns(); }

int vo_cpu_in_region(void) { return vo_pool_inside; }

void vo_cpu_pause(int *spins) {
  if (++*spins < 64) {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_ia32_pause();
#endif
    return;
  }
  *spins = 0;
  sched_yield();
}

static void vo_pool_join(unsigned long long s) {
  atomic_fetch_add(&vo_pool_active, 1);
  if (atomic_load(&vo_pool_state) == s) {
    const int slot = atomic_fetch_add(&vo_pool_slots, 1);
    if (slot < vo_pool_max_slots) vo_pool_fn(vo_pool_arg, slot);
  }
  atomic_fetch_sub(&vo_pool_active, 1);
}

static void *vo_pool_main(void *unused) {
  (void)unused;
  vo_pool_inside = 1;
  unsigned long long seen = atomic_load(&vo_pool_state);
  for (;;) {
    unsigned long long s = atomic_load(&vo_pool_state);
    for (int i = 0; s == seen && i < VO_POOL_SPIN; i++) {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
      __builtin_ia32_pause();
#endif
      s = atomic_load(&vo_pool_state);
    }
    if (s == seen) {
      pthread_mutex_lock(&vo_pool_mu);
      /* stop is set under vo_pool_mu: a worker that started after the last
       * state change (its `seen` is current) still sees it. */
      while ((s = atomic_load(&vo_pool_state)) == seen && !atomic_load(&vo_pool_stop))
        pthread_cond_wait(&vo_pool_cv, &vo_pool_mu);
      pthread_mutex_unlock(&vo_pool_mu);
    }
    seen = s;
    if (atomic_load(&vo_pool_stop)) return NULL;
    if (s & 1) vo_pool_join(s);
  }
}

/* When the library is unloaded (dlclose, or the end of the process), the
 * workers are stopped and joined: a worker left sleeping in unmapped code
 * would crash the process on its next wake-up. */
__attribute__((destructor)) static void vo_pool_shutdown(void) {
  pthread_mutex_lock(&vo_pool_mu);
  const int n = vo_pool_workers;
  atomic_store(&vo_pool_stop, 1);
  /* A closed state the workers have not seen wakes spinners and sleepers. */
  atomic_store(&vo_pool_state, (atomic_load(&vo_pool_state) | 1) + 1);
  pthread_cond_broadcast(&vo_pool_cv);
  pthread_mutex_unlock(&vo_pool_mu);
  for (int i = 0; i < n; i++) pthread_join(vo_pool_threads[i], NULL);
  pthread_mutex_lock(&vo_pool_mu);
  vo_pool_workers = 0;
  pthread_mutex_unlock(&vo_pool_mu);
}

/* A forked child has none of the parent's workers (and perhaps a lock
 * taken by a thread that does not exist there): start from scratch. */
static void vo_pool_after_fork_child(void) {
  pthread_mutex_init(&vo_pool_mu, NULL);
  pthread_cond_init(&vo_pool_cv, NULL);
  pthread_mutex_init(&vo_pool_run_mu, NULL);
  vo_pool_workers = 0;
  atomic_store(&vo_pool_active, 0);
  atomic_store(&vo_pool_state, (atomic_load(&vo_pool_state) | 1) + 1);
}

static pthread_once_t vo_pool_once = PTHREAD_ONCE_INIT;
static void vo_pool_init(void) { pthread_atfork(NULL, NULL, vo_pool_after_fork_child); }

/* Starts workers up to `want` (under vo_pool_mu); fewer if the system
 * refuses, which only means fewer participants. Workers block every
 * signal, so the application's handlers keep running on its own threads. */
static void vo_pool_grow(int want) {
  if (want > VO_POOL_MAX_WORKERS) want = VO_POOL_MAX_WORKERS;
  if (vo_pool_workers >= want) return;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  /* Joinable, so that unloading the library can wait for them to leave. */
  while (vo_pool_workers < want && !atomic_load(&vo_pool_stop)) {
    if (pthread_create(&vo_pool_threads[vo_pool_workers], NULL, vo_pool_main, NULL) != 0) break;
    vo_pool_workers++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void vo_pool_alone(vo_cpu_task fn, void *arg) {
  const int was = vo_pool_inside;
  vo_pool_inside = 1;
  fn(arg, 0);
  vo_pool_inside = was;
}

void vo_cpu_run(int threads, vo_cpu_task fn, void *arg) {
  if (threads <= 1 || vo_pool_inside) {
    vo_pool_alone(fn, arg);
    return;
  }
  const long long t0 = vo_now_ns();
  if (t0 < atomic_load_explicit(&vo_pool_quiet_until, memory_order_relaxed) ||
      pthread_mutex_trylock(&vo_pool_run_mu) != 0) {
    vo_pool_alone(fn, arg);
    return;
  }
  pthread_once(&vo_pool_once, vo_pool_init);
  vo_pool_inside = 1;
  vo_pool_fn = fn;
  vo_pool_arg = arg;
  vo_pool_max_slots = threads;
  atomic_store(&vo_pool_slots, 1);
  atomic_store_explicit(&vo_pool_stall_ns, 0, memory_order_relaxed);
  /* Never wait for vo_pool_mu: a worker preempted while holding it (just
   * woken, or about to sleep) would hold the caller up for a time slice.
   * Without it the workers are not woken this time (a worker about to
   * sleep misses this region, which only means fewer participants); they
   * are started on a later call. */
  const int locked = pthread_mutex_trylock(&vo_pool_mu) == 0;
  if (locked) vo_pool_grow(threads - 1);
  const unsigned long long open = atomic_load(&vo_pool_state) + 1; /* closed (even) + 1 */
  atomic_store(&vo_pool_state, open);
  if (locked) {
    pthread_cond_broadcast(&vo_pool_cv);
    pthread_mutex_unlock(&vo_pool_mu);
  }

  fn(arg, 0);

  const long long t1 = vo_now_ns();
  atomic_store(&vo_pool_state, open + 1);
  for (int spins = 0; atomic_load(&vo_pool_active) != 0;) vo_cpu_pause(&spins);
  const long long t2 = vo_now_ns();
  const long long held = t2 - t1 + atomic_load_explicit(&vo_pool_stall_ns, memory_order_relaxed);
  int b = atomic_load_explicit(&vo_pool_backoff, memory_order_relaxed);
  if (held > VO_POOL_HELD_NS && 4 * held > t2 - t0) {
    if (b < VO_POOL_MAX_BACKOFF) b++;
    atomic_store_explicit(&vo_pool_quiet_until, t2 + (VO_POOL_QUIET_NS << (b - 1)),
                          memory_order_relaxed);
  } else if (b > 0 && atomic_load_explicit(&vo_pool_slots, memory_order_relaxed) > 1) {
    b--; /* a worker took part and nobody was held up */
  }
  atomic_store_explicit(&vo_pool_backoff, b, memory_order_relaxed);
  vo_pool_inside = 0;
  pthread_mutex_unlock(&vo_pool_run_mu);
}
