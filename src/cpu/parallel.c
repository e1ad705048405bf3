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
 */
#define _POSIX_C_SOURCE 200809L

#include "cpu/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#define VO_POOL_MAX_WORKERS 255
/* Pause iterations a worker polls for the next region before it sleeps:
 * a few tens of microseconds, so back-to-back calls find it awake. */
#define VO_POOL_SPIN 4000

static pthread_mutex_t vo_pool_mu = PTHREAD_MUTEX_INITIALIZER; /* sleep/wake, creation */
static pthread_cond_t vo_pool_cv = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t vo_pool_run_mu = PTHREAD_MUTEX_INITIALIZER; /* one region at a time */
static int vo_pool_workers;                                        /* started, under vo_pool_mu */
static atomic_ullong vo_pool_state;                                /* see the file comment */
static atomic_int vo_pool_active;                                  /* workers announced */
static atomic_int vo_pool_slots;                                   /* slots handed out */
static int vo_pool_max_slots;
static vo_cpu_task vo_pool_fn;
static void *vo_pool_arg;
static _Thread_local int vo_pool_inside;

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
      while ((s = atomic_load(&vo_pool_state)) == seen) pthread_cond_wait(&vo_pool_cv, &vo_pool_mu);
      pthread_mutex_unlock(&vo_pool_mu);
    }
    seen = s;
    if (s & 1) vo_pool_join(s);
  }
  return NULL;
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
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) == 0) {
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (vo_pool_workers < want) {
      pthread_t t;
      if (pthread_create(&t, &attr, vo_pool_main, NULL) != 0) break;
      vo_pool_workers++;
    }
    pthread_attr_destroy(&attr);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void vo_cpu_run(int threads, vo_cpu_task fn, void *arg) {
  if (threads <= 1 || vo_pool_inside || pthread_mutex_trylock(&vo_pool_run_mu) != 0) {
    const int was = vo_pool_inside;
    vo_pool_inside = 1;
    fn(arg, 0);
    vo_pool_inside = was;
    return;
  }
  pthread_once(&vo_pool_once, vo_pool_init);
  vo_pool_inside = 1;
  vo_pool_fn = fn;
  vo_pool_arg = arg;
  vo_pool_max_slots = threads;
  atomic_store(&vo_pool_slots, 1);
  pthread_mutex_lock(&vo_pool_mu);
  vo_pool_grow(threads - 1);
  const unsigned long long open = atomic_load(&vo_pool_state) + 1; /* closed (even) + 1 */
  atomic_store(&vo_pool_state, open);
  pthread_cond_broadcast(&vo_pool_cv);
  pthread_mutex_unlock(&vo_pool_mu);

  fn(arg, 0);

  atomic_store(&vo_pool_state, open + 1);
  for (int spins = 0; atomic_load(&vo_pool_active) != 0;) vo_cpu_pause(&spins);
  vo_pool_inside = 0;
  pthread_mutex_unlock(&vo_pool_run_mu);
}
