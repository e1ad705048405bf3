/*
 * visionops_complexity: the growth exponent of roi_align's time on each
 * backend with a device here (the CPU, and OpenCL where present), the check
 * issue 14 asks for against torchvision's MPS roi_align bug (a kernel ported
 * by hand that looped with the wrong complexity). Each case times the op at
 * a size and at 4x that size and prints log(t2 / t1) / log(4):
 *   rois:      K -> 4K RoIs on the same map: the work is K*C*PH*PW*samples,
 *              expected ~1;
 *   map+rois:  H x W -> 2H x 2W with every RoI scaled along (the same image
 *              seen at twice the resolution: spatial_scale doubled), adaptive
 *              sampling (sampling_ratio 0) takes 2x2 as many samples per
 *              bin, expected ~1;
 *   map only:  H x W -> 2H x 2W with the RoIs unchanged in map pixels: the
 *              work does not depend on the map's size, expected ~0 (a kernel
 *              that walks the map per output would show ~1 here).
 * Runs of the two sizes alternate after a warm-up call of each (which on
 * OpenCL compiles the program); the exponent is the median of neighbouring
 * runs' ratios. Device runs end with a blocking read, so queued work is
 * timed.
 * Uses the backend vtable for device memory, as the tests do. A benchmark,
 * never a test: nothing fails on speed; it exits 1 only when a call fails.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"

enum { RUNS = 5, C = 8, P = 7 };

static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x14c0de;
static double uniform(double lo, double hi) {
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return lo + (hi - lo) * (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

/* One roi_align size: a [1, C, h, w] float32 map, k RoIs given in image
 * coordinates (spatial_scale scales them onto the map). */
typedef struct size_case {
  int64_t k, h, w;
  double spatial_scale;
} size_case;

typedef struct bench_case {
  const char *name;
  size_case a, b;
  double expected;
} bench_case;

/* The same k RoIs every time, so cases differ only in what they change: at
 * scale 1/16 on the 128 x 128 map, sides of 8P, 9P or 10P map pixels, whole
 * multiples of the bins, so adaptive sampling takes exactly 8, 9 or 10
 * samples per bin and axis, and exactly twice that at scale 1/8. (Each
 * output also has a fixed cost, its RoI's geometry, so at few samples per
 * bin the map+rois exponent stays below 1; at these it is near.) */
static void make_rois(float *r, int64_t k) {
  rng = 0x14c0de;
  for (int64_t i = 0; i < k; i++) {
    const double x = (double)(int)uniform(0, 50) * 16, y = (double)(int)uniform(0, 50) * 16;
    const double w = (double)(P * (8 + (int)uniform(0, 3)) * 16);
    const double h = (double)(P * (8 + (int)uniform(0, 3)) * 16);
    r[i * 5] = 0;
    r[i * 5 + 1] = (float)x;
    r[i * 5 + 2] = (float)y;
    r[i * 5 + 3] = (float)(x + w);
    r[i * 5 + 4] = (float)(y + h);
  }
}

/* Device memory of backend `be` holding `bytes` of host data (the host
 * pointer itself on the CPU). */
static void *to_device(const vo_backend *be, DLDevice dev, const void *host, size_t bytes) {
  if (dev.device_type == kDLCPU) return (void *)host;
  void *d = be->alloc(dev, bytes, NULL);
  if (d && be->copy_to_device(dev, d, 0, host, bytes, NULL) != VO_OK) {
    be->free(dev, d, NULL);
    return NULL;
  }
  return d;
}

/* One size's tensors, made once, on device dev of backend be. */
typedef struct prepared {
  const vo_backend *be;
  DLDevice dev;
  size_case s;
  float *h_in, *h_rois, *h_out;
  void *d_in, *d_rois, *d_out;
  int64_t in_shape[4], rois_shape[2], out_shape[4];
  int reps; /* calls per timed run */
} prepared;

static void release(prepared *p) {
  if (p->dev.device_type != kDLCPU) {
    if (p->d_in) p->be->free(p->dev, p->d_in, NULL);
    if (p->d_rois) p->be->free(p->dev, p->d_rois, NULL);
    if (p->d_out) p->be->free(p->dev, p->d_out, NULL);
  }
  free(p->h_in);
  free(p->h_rois);
  free(p->h_out);
}

/* 0 when the memory could not be had. */
static int prepare(prepared *p, const vo_backend *be, DLDevice dev, size_case s) {
  memset(p, 0, sizeof *p);
  p->be = be;
  p->dev = dev;
  p->s = s;
  p->reps = 1;
  const size_t in_n = (size_t)(C * s.h * s.w), out_n = (size_t)(s.k * C * P * P);
  p->h_in = malloc(in_n * sizeof(float));
  p->h_rois = malloc((size_t)s.k * 5 * sizeof(float));
  p->h_out = malloc(out_n * sizeof(float));
  if (!p->h_in || !p->h_rois || !p->h_out) return 0;
  for (size_t i = 0; i < in_n; i++) p->h_in[i] = (float)uniform(-1, 1);
  make_rois(p->h_rois, s.k);
  p->d_in = to_device(be, dev, p->h_in, in_n * sizeof(float));
  p->d_rois = to_device(be, dev, p->h_rois, (size_t)s.k * 5 * sizeof(float));
  p->d_out = to_device(be, dev, p->h_out, out_n * sizeof(float));
  const int64_t in_shape[4] = {1, C, s.h, s.w}, rois_shape[2] = {s.k, 5};
  const int64_t out_shape[4] = {s.k, C, P, P};
  memcpy(p->in_shape, in_shape, sizeof in_shape);
  memcpy(p->rois_shape, rois_shape, sizeof rois_shape);
  memcpy(p->out_shape, out_shape, sizeof out_shape);
  return p->d_in && p->d_rois && p->d_out;
}

/* Seconds per call of p->reps calls (device work waited for); < 0 when a
 * call fails. */
static double run_once(const vo_context *ctx, prepared *p) {
  const DLDataType f32 = {kDLFloat, 32, 1};
  DLTensor in = {p->d_in, p->dev, 4, f32, p->in_shape, NULL, 0};
  DLTensor rois = {p->d_rois, p->dev, 2, f32, p->rois_shape, NULL, 0};
  DLTensor out = {p->d_out, p->dev, 4, f32, p->out_shape, NULL, 0};
  const double t0 = now_s();
  for (int i = 0; i < p->reps; i++)
    if (vo_roi_align(ctx, &in, &rois, p->s.spatial_scale, P, P, 0, 1, &out) != VO_OK) {
      fprintf(stderr, "visionops_complexity: roi_align on %s: %s\n", p->be->name, vo_last_error());
      return -1;
    }
  if (p->dev.device_type != kDLCPU &&
      p->be->copy_to_host(p->dev, p->h_out, p->d_out, 0, sizeof(float), NULL) != VO_OK)
    return -1; /* the blocking read waits for the queue */
  return (now_s() - t0) / p->reps;
}

/* RUNS timed runs of each size taken in turns (a, b, a, b, ...), after a
 * warm-up call of each that also sizes a run to at least 40 ms: *ta and *tb
 * the fastest runs, *exponent the median of the runs' log4(b / a) (pairs of
 * neighbouring runs see the same load, so their ratio is steadier on a
 * shared machine than either time). 0 on failure. */
static int time_pair(const vo_context *ctx, const vo_backend *be, DLDevice dev, const bench_case *c,
                     double *ta, double *tb, double *exponent) {
  prepared pa, pb;
  int ok = prepare(&pa, be, dev, c->a) & prepare(&pb, be, dev, c->b);
  double e[RUNS] = {0};
  *ta = *tb = INFINITY;
  for (int i = 0; ok && i < 2; i++) {
    prepared *p = i ? &pb : &pa;
    const double t = run_once(ctx, p);
    ok = t >= 0;
    if (ok && t < 0.04) p->reps = t > 0 ? (int)(0.04 / t) + 1 : 1000;
  }
  for (int r = 0; ok && r < RUNS; r++) {
    const double a = run_once(ctx, &pa), b = run_once(ctx, &pb);
    ok = a > 0 && b > 0;
    *ta = fmin(*ta, a);
    *tb = fmin(*tb, b);
    e[r] = ok ? log(b / a) / log(4.0) : 0;
    for (int j = r; j > 0 && e[j] < e[j - 1]; j--) { /* insertion sort */
      const double x = e[j];
      e[j] = e[j - 1];
      e[j - 1] = x;
    }
  }
  *exponent = e[RUNS / 2];
  release(&pa);
  release(&pb);
  return ok;
}

int main(void) {
  const int64_t k = 32;
  const bench_case cases[] = {
      {"rois: K=32 -> 128, map 128x128", {k, 128, 128, 1.0 / 16}, {4 * k, 128, 128, 1.0 / 16}, 1},
      {"map+rois: 128x128 -> 256x256, RoIs scaled",
       {k, 128, 128, 1.0 / 16},
       {k, 256, 256, 1.0 / 8},
       1},
      {"map only: 128x128 -> 256x256, RoIs fixed",
       {k, 128, 128, 1.0 / 16},
       {k, 256, 256, 1.0 / 16},
       0},
  };
  const DLDeviceType types[] = {kDLCPU, kDLOpenCL};
  vo_context *ctx = NULL;
  /* One CPU thread: steadier figures on a shared machine (OpenCL runs on
   * whatever the device has). */
  if (vo_context_create(&ctx) != VO_OK || vo_context_set_num_threads(ctx, 1) != VO_OK) return 1;
  printf(
      "## roi_align growth exponents (issue 14): log(t2/t1)/log(4), the median of %d "
      "interleaved pairs of runs (times: the fastest run, per call)\n\n",
      RUNS);
  printf("float32, C=%d, %dx%d bins, sampling_ratio 0 (adaptive), aligned; the CPU on 1 thread\n\n",
         C, P, P);
  printf("| backend | case | t1 ms | t2 ms | exponent | expected |\n");
  printf("|---|---|---:|---:|---:|---:|\n");
  int failed = 0;
  for (size_t d = 0; d < sizeof types / sizeof types[0]; d++) {
    const vo_backend *be = vo_backend_for_device(types[d]);
    const char *why = "not built";
    if (!be || !vo_backend_available(be, &why)) {
      printf("| %s | not available: %s | | | | |\n", be ? be->name : "opencl", why);
      continue;
    }
    const DLDevice dev = {types[d], 0};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      double t1, t2, exponent;
      if (!time_pair(ctx, be, dev, &cases[c], &t1, &t2, &exponent)) {
        failed = 1;
        continue;
      }
      printf("| %s | %s | %.2f | %.2f | %.2f | %.0f |\n", be->name, cases[c].name, 1e3 * t1,
             1e3 * t2, exponent, cases[c].expected);
    }
  }
  vo_context_destroy(ctx);
  return failed;
}
