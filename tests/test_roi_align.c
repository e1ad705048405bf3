/* roi_align and roi_align_backward on the CPU: against a double-precision
 * reference written from SPEC.md, hand-checked values, finite differences,
 * thread-count determinism, and every validation error; roi_align_rotated's
 * typed wrappers against it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roi_test_util.h"

/* One roi_align problem, all values logical row-major doubles (already
 * representable in the dtype under test). */
typedef struct problem {
  int64_t n, c, h, w, k, ph, pw, sr;
  int aligned;
  double scale;
  double *input; /* [n,c,h,w] */
  double *rois;  /* [k,5] */
  double *grad;  /* [k,c,ph,pw] */
} problem;

/* ------------------------------------------------------------ reference */

/* RoI geometry straight from SPEC section 2. */
typedef struct ref_roi {
  int64_t b, gh, gw;
  double sy, sx, bh, bw, count;
} ref_roi;

static ref_roi ref_geometry(const problem *pb, const double *r) {
  ref_roi g;
  double off = pb->aligned ? 0.5 : 0;
  g.b = (int64_t)r[0];
  g.sx = r[1] * pb->scale - off;
  g.sy = r[2] * pb->scale - off;
  double ex = r[3] * pb->scale - off, ey = r[4] * pb->scale - off;
  double rw = ex - g.sx, rh = ey - g.sy;
  if (!pb->aligned) {
    rw = fmax(rw, 1);
    rh = fmax(rh, 1);
  }
  g.bh = rh / (double)pb->ph;
  g.bw = rw / (double)pb->pw;
  g.gh = pb->sr > 0 ? pb->sr : (int64_t)ceil(rh / (double)pb->ph);
  g.gw = pb->sr > 0 ? pb->sr : (int64_t)ceil(rw / (double)pb->pw);
  int64_t n = g.gh * g.gw;
  g.count = n > 1 ? (double)n : 1;
  return g;
}

/* Sample position (y, x) of sample (iy, ix) in bin (ph, pw). */
static void ref_pos(const ref_roi *g, int64_t ph, int64_t pw, int64_t iy, int64_t ix, double *y,
                    double *x) {
  *y = g->sy + (double)ph * g->bh + ((double)iy + 0.5) * g->bh / (double)g->gh;
  *x = g->sx + (double)pw * g->bw + ((double)ix + 0.5) * g->bw / (double)g->gw;
}

static void ref_forward(const problem *pb, double *out) {
  for (int64_t k = 0; k < pb->k; k++) {
    ref_roi g = ref_geometry(pb, pb->rois + 5 * k);
    for (int64_t c = 0; c < pb->c; c++) {
      const double *plane = pb->input + (g.b * pb->c + c) * pb->h * pb->w;
      for (int64_t ph = 0; ph < pb->ph; ph++)
        for (int64_t pw = 0; pw < pb->pw; pw++) {
          double sum = 0;
          for (int64_t iy = 0; iy < g.gh; iy++)
            for (int64_t ix = 0; ix < g.gw; ix++) {
              double y, x, wt[4];
              int64_t pos[4];
              ref_pos(&g, ph, pw, iy, ix, &y, &x);
              if (!rt_bilinear(pb->h, pb->w, y, x, pos, wt)) continue;
              for (int j = 0; j < 4; j++) sum += wt[j] * plane[pos[j]];
            }
          out[((k * pb->c + c) * pb->ph + ph) * pb->pw + pw] = sum / g.count;
        }
    }
  }
}

static void ref_backward(const problem *pb, double *gin) {
  memset(gin, 0, sizeof(double) * (size_t)(pb->n * pb->c * pb->h * pb->w));
  for (int64_t k = 0; k < pb->k; k++) {
    ref_roi g = ref_geometry(pb, pb->rois + 5 * k);
    for (int64_t c = 0; c < pb->c; c++) {
      double *plane = gin + (g.b * pb->c + c) * pb->h * pb->w;
      for (int64_t ph = 0; ph < pb->ph; ph++)
        for (int64_t pw = 0; pw < pb->pw; pw++) {
          double gv = pb->grad[((k * pb->c + c) * pb->ph + ph) * pb->pw + pw];
          for (int64_t iy = 0; iy < g.gh; iy++)
            for (int64_t ix = 0; ix < g.gw; ix++) {
              double y, x, wt[4];
              int64_t pos[4];
              ref_pos(&g, ph, pw, iy, ix, &y, &x);
              if (!rt_bilinear(pb->h, pb->w, y, x, pos, wt)) continue;
              for (int j = 0; j < 4; j++) plane[pos[j]] += gv * wt[j] / g.count;
            }
        }
    }
  }
}

/* A RoI whose result jumps under float32 rounding of its geometry: a sample
 * within 1e-3 of the -1 / H / W cut-offs, or an adaptive grid size
 * ceil(size / pooled) within 1e-3 of an integer. The random tests redraw
 * such RoIs, since a float32 kernel may legitimately land on either side. */
static int ref_fragile(const problem *pb, const double *r) {
  ref_roi g = ref_geometry(pb, r);
  if (pb->sr <= 0) {
    double off = pb->aligned ? 0.5 : 0;
    double rw = (r[3] * pb->scale - off) - (r[1] * pb->scale - off);
    double rh = (r[4] * pb->scale - off) - (r[2] * pb->scale - off);
    if (!pb->aligned) {
      rw = fmax(rw, 1);
      rh = fmax(rh, 1);
    }
    double qh = rh / (double)pb->ph, qw = rw / (double)pb->pw;
    if (fabs(qh - round(qh)) < 1e-3 || fabs(qw - round(qw)) < 1e-3) return 1;
  }
  const double eps = 1e-3;
  for (int64_t ph = 0; ph < pb->ph; ph++)
    for (int64_t pw = 0; pw < pb->pw; pw++)
      for (int64_t iy = 0; iy < g.gh; iy++)
        for (int64_t ix = 0; ix < g.gw; ix++) {
          double y, x;
          ref_pos(&g, ph, pw, iy, ix, &y, &x);
          if (fabs(y + 1) < eps || fabs(y - (double)pb->h) < eps || fabs(x + 1) < eps ||
              fabs(x - (double)pb->w) < eps)
            return 1;
        }
  return 0;
}

/* ------------------------------------------------------------ running */

/* Input layouts the kernels must honour. */
/* Runs the forward; out gets K*C*PH*PW decoded values, raw (if not NULL) the
 * output's bytes. */
static vo_status run_forward(const vo_context *ctx, DLDataType dt, int layout, const problem *pb,
                             double *out, void *raw) {
  const int64_t in_shape[4] = {pb->n, pb->c, pb->h, pb->w};
  const int64_t out_shape[4] = {pb->k, pb->c, pb->ph, pb->pw};
  vt_tensor *in = rt_make_nchw(dt, in_shape, layout, pb->input);
  vt_tensor *rois = rt_make_rois(dt, pb->k, layout, pb->rois);
  vt_tensor *o = vt_tensor_new(dt, 4, out_shape, NULL);
  vt_fill(&o->dl, -77);
  vo_tensor_desc desc;
  vo_status st = vo_roi_align_shape(ctx, &in->dl, &rois->dl, pb->scale, pb->ph, pb->pw, pb->sr,
                                    pb->aligned, &desc);
  if (CHECK_STATUS(st, VO_OK)) {
    CHECK(desc.ndim == 4 && desc.shape[0] == pb->k && desc.shape[1] == pb->c &&
          desc.shape[2] == pb->ph && desc.shape[3] == pb->pw);
    CHECK(desc.dtype.code == dt.code && desc.dtype.bits == dt.bits && desc.dtype.lanes == 1);
    CHECK(desc.device.device_type == kDLCPU);
  }
  st =
      vo_roi_align(ctx, &in->dl, &rois->dl, pb->scale, pb->ph, pb->pw, pb->sr, pb->aligned, &o->dl);
  vt_read_all(&o->dl, out);
  if (raw) memcpy(raw, o->dl.data, (size_t)vt_numel(&o->dl) * vt_dtype_bytes(dt));
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(o);
  return st;
}

static vo_status run_backward(const vo_context *ctx, DLDataType dt, int layout, const problem *pb,
                              double *gin, void *raw) {
  const int64_t g_shape[4] = {pb->k, pb->c, pb->ph, pb->pw};
  const int64_t in_shape[4] = {pb->n, pb->c, pb->h, pb->w};
  vt_tensor *g = rt_make_nchw(dt, g_shape, layout, pb->grad);
  vt_tensor *rois = rt_make_rois(dt, pb->k, LAYOUT_CONTIGUOUS, pb->rois);
  vt_tensor *o = vt_tensor_new(dt, 4, in_shape, NULL);
  vt_fill(&o->dl, -77); /* must be overwritten everywhere */
  vo_status st = vo_roi_align_backward(ctx, &g->dl, &rois->dl, pb->scale, pb->ph, pb->pw, pb->n,
                                       pb->c, pb->h, pb->w, pb->sr, pb->aligned, &o->dl);
  vt_read_all(&o->dl, gin);
  if (raw) memcpy(raw, o->dl.data, (size_t)vt_numel(&o->dl) * vt_dtype_bytes(dt));
  vt_tensor_free(g);
  vt_tensor_free(rois);
  vt_tensor_free(o);
  return st;
}

/* ------------------------------------------------------------ hand-checked */

/* input[y][x] = x + 4y on a 4x4 map. Bilinear interpolation of a linear ramp
 * is exact, so every in-range sample is x + 4y at its position.
 * (a) RoI (0,0)-(2,2), 2x2 bins, 1 sample, not aligned: bin size 1, samples at
 *     (y,x) = (ph+0.5, pw+0.5): 2.5, 3.5, 6.5, 7.5.
 * (b) same, aligned: everything shifts by -0.5: samples at (ph, pw): 0, 1, 4, 5.
 * (c) RoI (2,2)-(6,6), 1x1 bin, sampling 2, not aligned: bin size 4, samples
 *     at 3 and 5 on each axis; 5 > W = 4 is outside, so only (3,3) counts:
 *     x_lo = 3 >= W-1 clamps to the last column, value 3 + 12 = 15, divided
 *     by count 4: 3.75.
 * (d) RoI (0,0)-(3,3), 2x2 bins, adaptive, not aligned: bin size 1.5, grid
 *     ceil(1.5) = 2, samples at 0.375, 1.125 (bin 0) and 1.875, 2.625
 *     (bin 1): means 0.75 and 2.25, so 0.75+3 = 3.75, 2.25+3 = 5.25,
 *     0.75+9 = 9.75, 2.25+9 = 11.25. */
static void hand_checked(void) {
  double ramp[16];
  for (int i = 0; i < 16; i++) ramp[i] = (double)i; /* i = x + 4y */
  struct {
    double roi[5];
    int64_t ph, pw, sr;
    int aligned;
    double want[4];
  } cases[] = {
      {{0, 0, 0, 2, 2}, 2, 2, 1, 0, {2.5, 3.5, 6.5, 7.5}},
      {{0, 0, 0, 2, 2}, 2, 2, 1, 1, {0, 1, 4, 5}},
      {{0, 2, 2, 6, 6}, 1, 1, 2, 0, {3.75}},
      {{0, 0, 0, 3, 3}, 2, 2, 0, 0, {3.75, 5.25, 9.75, 11.25}},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    for (int d = 0; d < RT_NUM_DTYPES; d++) {
      problem pb = {1,
                    1,
                    4,
                    4,
                    1,
                    cases[ci].ph,
                    cases[ci].pw,
                    cases[ci].sr,
                    cases[ci].aligned,
                    1.0,
                    ramp,
                    cases[ci].roi,
                    NULL};
      double out[4];
      if (!CHECK_STATUS(run_forward(NULL, *rt_dtypes[d], LAYOUT_CONTIGUOUS, &pb, out, NULL), VO_OK))
        continue;
      for (int64_t i = 0; i < pb.ph * pb.pw; i++)
        CHECK_MSG(out[i] == cases[ci].want[i], "hand case %zu %s: out[%lld] = %.9g, want %.9g", ci,
                  vt_dtype_name(*rt_dtypes[d]), (long long)i, out[i], cases[ci].want[i]);
    }
  }
}

/* ------------------------------------------------------------ random */

/* RoIs of every kind: inside, partly outside, wholly outside, tiny (under a
 * pixel), huge (several times the map), and reversed (x2 < x1). */
static void gen_roi(vt_rng *rng, const problem *pb, DLDataType dt, double *r) {
  const double mh = (double)pb->h / pb->scale, mw = (double)pb->w / pb->scale;
  for (int attempt = 0;; attempt++) {
    double box[4]; /* cx, cy, hw, hh */
    rt_roi_box(rng, 6, mh, mw, pb->scale, box);
    rt_roi_store(rng, pb->n, dt, box, r);
    if (!ref_fragile(pb, r) || attempt > 1000) return;
  }
}

/* ctx1: 1 thread; ctx2: 2 threads; ctx3: 2 threads and a workspace limit so
 * small that RoIs are split into chunks and large RoIs compute their samples
 * on the fly. All three must give the same bits. */
static void random_cases(const vo_context *ctx1, const vo_context *ctx2, const vo_context *ctx3) {
  static const int64_t ratios[5] = {-1, 0, 1, 2, 3};
  static const double scales[3] = {1.0, 0.5, 0.25};
  for (uint64_t seed = 1; seed <= 3; seed++) {
    for (int d = 0; d < RT_NUM_DTYPES; d++) {
      const DLDataType dt = *rt_dtypes[d];
      for (int aligned = 0; aligned < 2; aligned++) {
        for (int ri = 0; ri < 5; ri++) {
          vt_rng rng;
          vt_rng_seed(&rng, seed * 1000 + (uint64_t)(d * 100 + aligned * 10 + ri));
          problem pb = {2,    3,    7,   9, 7, 3, 2, ratios[ri], aligned, scales[seed - 1],
                        NULL, NULL, NULL};
          if (seed == 2) pb.ph = 2, pb.pw = 3;
          const int64_t nin = pb.n * pb.c * pb.h * pb.w, nout = pb.k * pb.c * pb.ph * pb.pw;
          pb.input = malloc(sizeof(double) * (size_t)nin);
          pb.rois = malloc(sizeof(double) * (size_t)(5 * pb.k));
          pb.grad = malloc(sizeof(double) * (size_t)nout);
          rt_fill_uniform(&rng, dt, pb.input, nin);
          rt_fill_uniform(&rng, dt, pb.grad, nout);
          for (int64_t k = 0; k < pb.k; k++) gen_roi(&rng, &pb, dt, pb.rois + 5 * k);
          double *want = malloc(sizeof(double) * (size_t)nout);
          double *got = malloc(sizeof(double) * (size_t)nout);
          double *gwant = malloc(sizeof(double) * (size_t)nin);
          double *ggot = malloc(sizeof(double) * (size_t)nin);
          const size_t esz = vt_dtype_bytes(dt);
          unsigned char *raw1 = malloc(esz * (size_t)(nin > nout ? nin : nout));
          unsigned char *raw2 = malloc(esz * (size_t)(nin > nout ? nin : nout));
          ref_forward(&pb, want);
          ref_backward(&pb, gwant);
          char desc[96];
          for (int layout = 0; layout < NUM_LAYOUTS; layout++) {
            snprintf(desc, sizeof desc, "seed %llu aligned %d sampling %lld layout %d",
                     (unsigned long long)seed, aligned, (long long)pb.sr, layout);
            if (CHECK_STATUS(run_forward(ctx1, dt, layout, &pb, got, raw1), VO_OK))
              RT_COMPARE("forward", dt, got, want, nout, desc);
            if (CHECK_STATUS(run_forward(ctx2, dt, layout, &pb, got, raw2), VO_OK))
              CHECK_MSG(memcmp(raw1, raw2, esz * (size_t)nout) == 0,
                        "forward %s [%s]: 1 and 2 threads differ", vt_dtype_name(dt), desc);
            if (CHECK_STATUS(run_forward(ctx3, dt, layout, &pb, got, raw2), VO_OK))
              CHECK_MSG(memcmp(raw1, raw2, esz * (size_t)nout) == 0,
                        "forward %s [%s]: chunked differs", vt_dtype_name(dt), desc);
            if (CHECK_STATUS(run_backward(ctx1, dt, layout, &pb, ggot, raw1), VO_OK))
              RT_COMPARE("backward", dt, ggot, gwant, nin, desc);
            if (CHECK_STATUS(run_backward(ctx2, dt, layout, &pb, ggot, raw2), VO_OK))
              CHECK_MSG(memcmp(raw1, raw2, esz * (size_t)nin) == 0,
                        "backward %s [%s]: 1 and 2 threads differ", vt_dtype_name(dt), desc);
            if (CHECK_STATUS(run_backward(ctx3, dt, layout, &pb, ggot, raw2), VO_OK))
              CHECK_MSG(memcmp(raw1, raw2, esz * (size_t)nin) == 0,
                        "backward %s [%s]: chunked differs", vt_dtype_name(dt), desc);
          }
          free(raw1);
          free(raw2);
          free(want);
          free(got);
          free(gwant);
          free(ggot);
          free(pb.input);
          free(pb.rois);
          free(pb.grad);
        }
      }
    }
  }
}

/* ------------------------------------------------------------ fast paths */

/* Problems with enough channels and samples for the channels-last kernels
 * (C = 37 leaves a partial vector; sampling 2 divides by a power of two,
 * 3 and adaptive by other counts; 3x3 bins and 17x17, whose outputs go out
 * in two chunks, eight bins at a time and a tail). ctxs[0..4]: 1 thread, 2 threads, 2
 * threads with the scalar ISA, 2 threads with a workspace limit too small
 * for a channels-last image, which forces the plain kernels, and 2 threads
 * with AVX2 (the default on an AVX-512 CPU runs 16-lane loops): every one
 * must give the same bits, in both input layouts (channels-last float32
 * and float64 inputs are read in place). */
enum { FAST_CTXS = 5 };
static void fast_paths(vo_context *const ctxs[FAST_CTXS]) {
  static const int64_t ratios[3] = {2, 3, 0};
  for (int d = 0; d < RT_NUM_DTYPES; d++) {
    const DLDataType dt = *rt_dtypes[d];
    for (int aligned = 0; aligned < 2; aligned++) {
      for (int ri = 0; ri < 3; ri++) {
        vt_rng rng;
        vt_rng_seed(&rng, 4242 + (uint64_t)(d * 100 + aligned * 10 + ri));
        problem pb = {2, 37, 13, 11, 40, 3, 3, ratios[ri], aligned, 0.5, NULL, NULL, NULL};
        if (ri == 2) pb.n = 3; /* image 1 gets no RoIs: its gradient must be zeroed */
        /* 289 bins: a RoI's outputs go out in two chunks, in 8-bin groups and a tail */
        if (ri == 0) {
          pb.ph = 17;
          pb.pw = 17;
        }
        const int64_t nin = pb.n * pb.c * pb.h * pb.w, nout = pb.k * pb.c * pb.ph * pb.pw;
        pb.input = malloc(sizeof(double) * (size_t)nin);
        pb.rois = malloc(sizeof(double) * (size_t)(5 * pb.k));
        pb.grad = malloc(sizeof(double) * (size_t)nout);
        rt_fill_uniform(&rng, dt, pb.input, nin);
        rt_fill_uniform(&rng, dt, pb.grad, nout);
        for (int64_t k = 0; k < pb.k; k++) {
          gen_roi(&rng, &pb, dt, pb.rois + 5 * k);
          if (pb.n == 3 && pb.rois[5 * k] == 1) pb.rois[5 * k] = 2;
        }
        double *want = malloc(sizeof(double) * (size_t)nout);
        double *gwant = malloc(sizeof(double) * (size_t)nin);
        double *got = malloc(sizeof(double) * (size_t)(nin > nout ? nin : nout));
        const size_t esz = vt_dtype_bytes(dt), nmax = (size_t)(nin > nout ? nin : nout);
        unsigned char *raw0 = malloc(esz * nmax), *raw = malloc(esz * nmax);
        ref_forward(&pb, want);
        ref_backward(&pb, gwant);
        char desc[96];
        for (int layout = 0; layout < NUM_LAYOUTS; layout++) {
          snprintf(desc, sizeof desc, "fast paths aligned %d sampling %lld layout %d", aligned,
                   (long long)pb.sr, layout);
          if (CHECK_STATUS(run_forward(ctxs[0], dt, layout, &pb, got, raw0), VO_OK))
            RT_COMPARE("forward", dt, got, want, nout, desc);
          for (int ci = 1; ci < FAST_CTXS; ci++)
            if (CHECK_STATUS(run_forward(ctxs[ci], dt, layout, &pb, got, raw), VO_OK))
              CHECK_MSG(memcmp(raw0, raw, esz * (size_t)nout) == 0,
                        "forward %s [%s]: context %d differs", vt_dtype_name(dt), desc, ci);
          if (CHECK_STATUS(run_backward(ctxs[0], dt, layout, &pb, got, raw0), VO_OK))
            RT_COMPARE("backward", dt, got, gwant, nin, desc);
          for (int ci = 1; ci < FAST_CTXS; ci++)
            if (CHECK_STATUS(run_backward(ctxs[ci], dt, layout, &pb, got, raw), VO_OK))
              CHECK_MSG(memcmp(raw0, raw, esz * (size_t)nin) == 0,
                        "backward %s [%s]: context %d differs", vt_dtype_name(dt), desc, ci);
        }
        free(raw0);
        free(raw);
        free(want);
        free(gwant);
        free(got);
        free(pb.input);
        free(pb.rois);
        free(pb.grad);
      }
    }
  }
}

/* ------------------------------------------------------------ gradient */

/* The backward is the gradient of sum(out * grad) with respect to input:
 * central differences of the float64 forward, element by element. The
 * forward is linear in input, so the differences are exact up to rounding. */
static void finite_differences(void) {
  for (int aligned = 0; aligned < 2; aligned++) {
    vt_rng rng;
    vt_rng_seed(&rng, 77 + (uint64_t)aligned);
    double rois[3 * 5] = {0, -1.3, 0.7, 4.1, 3.9, 1, 2.2, 1.1, 7.5, 6.0, 0, 0.4, 0.3, 1.2, 0.9};
    problem pb = {2, 2, 5, 6, 3, 2, 2, 0, aligned, 1.0, NULL, rois, NULL};
    const int64_t nin = pb.n * pb.c * pb.h * pb.w, nout = pb.k * pb.c * pb.ph * pb.pw;
    double input[2 * 2 * 5 * 6], grad[3 * 2 * 2 * 2], gin[2 * 2 * 5 * 6], out[3 * 2 * 2 * 2];
    for (int64_t i = 0; i < nin; i++) input[i] = vt_rng_uniform(&rng, -1, 1);
    for (int64_t i = 0; i < nout; i++) grad[i] = vt_rng_uniform(&rng, -1, 1);
    pb.input = input;
    pb.grad = grad;
    if (!CHECK_STATUS(run_backward(NULL, vt_f64, LAYOUT_CONTIGUOUS, &pb, gin, NULL), VO_OK))
      continue;
    const double h = 1e-3;
    for (int64_t i = 0; i < nin; i++) {
      double f[2];
      for (int s = 0; s < 2; s++) {
        const double saved = input[i];
        input[i] = saved + (s ? -h : h);
        CHECK_STATUS(run_forward(NULL, vt_f64, LAYOUT_CONTIGUOUS, &pb, out, NULL), VO_OK);
        input[i] = saved;
        f[s] = 0;
        for (int64_t j = 0; j < nout; j++) f[s] += out[j] * grad[j];
      }
      const double fd = (f[0] - f[1]) / (2 * h);
      CHECK_MSG(fabs(fd - gin[i]) <= 1e-9,
                "finite differences (aligned %d): d/dinput[%lld] = %.12g,"
                " backward %.12g",
                aligned, (long long)i, fd, gin[i]);
    }
  }
}

/* ------------------------------------------------------------ errors */

#define EXPECT_FAIL(call, status, arg) RT_EXPECT_FAIL("roi_align", call, status, arg)

static void errors(void) {
  const int64_t in_shape[4] = {2, 3, 4, 5}, roi_shape[2] = {2, 5}, out_shape[4] = {2, 3, 2, 2};
  const double roi_values[10] = {0, 0, 0, 2, 2, 1, 1, 1, 3, 3};
  vt_tensor *in = vt_tensor_new(vt_f32, 4, in_shape, NULL);
  vt_tensor *rois = vt_tensor_new(vt_f32, 2, roi_shape, roi_values);
  vt_tensor *out = vt_tensor_new(vt_f32, 4, out_shape, NULL);
  vt_tensor *gin = vt_tensor_new(vt_f32, 4, in_shape, NULL);
  vt_fill(&out->dl, 55.5);
  vt_fill(&gin->dl, 55.5);
  const DLTensor *I = &in->dl, *R = &rois->dl, *G = &out->dl;
  DLTensor *O = &out->dl, *GI = &gin->dl;

  CHECK_STATUS(vo_roi_align(NULL, I, R, 1.0, 2, 2, 0, 1, O), VO_OK);
  vt_tensor *g2 = vt_tensor_new(vt_f32, 4, out_shape, NULL);
  CHECK_STATUS(vo_roi_align_backward(NULL, &g2->dl, R, 1.0, 2, 2, 2, 3, 4, 5, 0, 1, GI), VO_OK);
  vt_fill(&out->dl, 55.5);
  vt_fill(&gin->dl, 55.5);

  /* shapes */
  const int64_t s3[3] = {3, 4, 5}, r4[2] = {2, 4};
  vt_tensor *in3 = vt_tensor_new(vt_f32, 3, s3, NULL);
  vt_tensor *rois4 = vt_tensor_new(vt_f32, 2, r4, NULL);
  EXPECT_FAIL(vo_roi_align(NULL, &in3->dl, R, 1.0, 2, 2, 0, 1, O), VO_ERROR_INVALID_ARGUMENT,
              "input");
  EXPECT_FAIL(vo_roi_align(NULL, I, &rois4->dl, 1.0, 2, 2, 0, 1, O), VO_ERROR_INVALID_ARGUMENT,
              "rois");
  /* pooled sizes, scale */
  EXPECT_FAIL(vo_roi_align(NULL, I, R, 1.0, 0, 2, 0, 1, O), VO_ERROR_INVALID_ARGUMENT,
              "pooled_height");
  EXPECT_FAIL(vo_roi_align(NULL, I, R, 1.0, 2, -3, 0, 1, O), VO_ERROR_INVALID_ARGUMENT,
              "pooled_width");
  EXPECT_FAIL(vo_roi_align(NULL, I, R, -1.0, 2, 2, 0, 1, O), VO_ERROR_INVALID_ARGUMENT,
              "spatial_scale");
  EXPECT_FAIL(vo_roi_align(NULL, I, R, 0.0, 2, 2, 0, 1, O), VO_ERROR_INVALID_ARGUMENT,
              "spatial_scale");
  EXPECT_FAIL(vo_roi_align(NULL, I, R, NAN, 2, 2, 0, 1, O), VO_ERROR_INVALID_ARGUMENT,
              "spatial_scale");
  EXPECT_FAIL(vo_roi_align(NULL, I, R, INFINITY, 2, 2, 0, 1, O), VO_ERROR_INVALID_ARGUMENT,
              "spatial_scale");
  /* batch indices and coordinates (the data of CPU rois) */
  for (size_t i = 0; i < RT_NUM_BAD_ROIS; i++) {
    const rt_bad_roi *bad = &rt_bad_rois[i];
    vt_tensor *r = rt_bad_rois_tensor(bad, roi_values);
    EXPECT_FAIL(vo_roi_align(NULL, I, &r->dl, 1.0, 2, 2, 0, 1, O), VO_ERROR_INVALID_ARGUMENT,
                bad->needle);
    EXPECT_FAIL(vo_roi_align_backward(NULL, G, &r->dl, 1.0, 2, 2, 2, 3, 4, 5, 0, 1, GI),
                VO_ERROR_INVALID_ARGUMENT, bad->needle);
    vt_tensor_free(r);
  }
  /* backward: grad shape against rois and the int arguments, sizes */
  EXPECT_FAIL(vo_roi_align_backward(NULL, G, R, 1.0, 3, 2, 2, 3, 4, 5, 0, 1, GI),
              VO_ERROR_INVALID_ARGUMENT, "grad");
  EXPECT_FAIL(vo_roi_align_backward(NULL, G, R, 1.0, 2, 2, 2, 4, 4, 5, 0, 1, GI),
              VO_ERROR_INVALID_ARGUMENT, "grad");
  EXPECT_FAIL(vo_roi_align_backward(NULL, G, &rois4->dl, 1.0, 2, 2, 2, 3, 4, 5, 0, 1, GI),
              VO_ERROR_INVALID_ARGUMENT, "rois");
  EXPECT_FAIL(vo_roi_align_backward(NULL, &in3->dl, R, 1.0, 2, 2, 2, 3, 4, 5, 0, 1, GI),
              VO_ERROR_INVALID_ARGUMENT, "grad");
  EXPECT_FAIL(vo_roi_align_backward(NULL, G, R, 1.0, 2, 2, -1, 3, 4, 5, 0, 1, GI),
              VO_ERROR_INVALID_ARGUMENT, "batch_size");
  EXPECT_FAIL(vo_roi_align_backward(NULL, G, R, 1.0, 2, 2, 2, 3, -4, 5, 0, 1, GI),
              VO_ERROR_INVALID_ARGUMENT, "height");
  EXPECT_FAIL(vo_roi_align_backward(NULL, G, R, -2.0, 2, 2, 2, 3, 4, 5, 0, 1, GI),
              VO_ERROR_INVALID_ARGUMENT, "spatial_scale");
  EXPECT_FAIL(vo_roi_align_backward(NULL, G, R, 1.0, 2, 0, 2, 3, 4, 5, 0, 1, GI),
              VO_ERROR_INVALID_ARGUMENT, "pooled_width");
  /* wrong output shape (the dispatcher's check) */
  EXPECT_FAIL(vo_roi_align(NULL, I, R, 1.0, 2, 3, 0, 1, O), VO_ERROR_INVALID_ARGUMENT, "output");
  /* dtypes */
  /* rois of any floating dtype are accepted (test_mixed_precision.c), integer ones are not */
  vt_tensor *r64 = vt_tensor_new(vt_i64, 2, roi_shape, roi_values);
  EXPECT_FAIL(vo_roi_align(NULL, I, &r64->dl, 1.0, 2, 2, 0, 1, O), VO_ERROR_UNSUPPORTED_DTYPE,
              "rois must be float32, float64, float16 or bfloat16 (any floating dtype beside "
              "input's float32), got int64");
  vt_tensor *ii = vt_tensor_new(vt_i64, 4, in_shape, NULL);
  EXPECT_FAIL(vo_roi_align(NULL, &ii->dl, R, 1.0, 2, 2, 0, 1, O), VO_ERROR_UNSUPPORTED_DTYPE,
              "input");

  /* nothing was written by any failed call */
  int clean = 1;
  for (int64_t i = 0; i < vt_numel(O); i++) clean &= vt_get(O, i) == 55.5;
  for (int64_t i = 0; i < vt_numel(GI); i++) clean &= vt_get(GI, i) == 55.5;
  CHECK_MSG(clean, "a failed roi_align call wrote its output");

  vt_tensor *all[] = {in, rois, out, gin, g2, in3, rois4, r64, ii};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

/* Tensors that claim to live on a CUDA device: the library must not read
 * them, and (without a CUDA roi_align) must say the backend cannot run it. */
static void cuda_device(void) {
  static float fake_in[2 * 3 * 4 * 5], fake_rois[2 * 5], fake_out[2 * 3 * 2 * 2];
  int64_t in_shape[4] = {2, 3, 4, 5}, roi_shape[2] = {2, 5}, out_shape[4] = {2, 3, 2, 2};
  DLTensor in = {fake_in, {kDLCUDA, 0}, 4, {kDLFloat, 32, 1}, in_shape, NULL, 0};
  DLTensor rois = {fake_rois, {kDLCUDA, 0}, 2, {kDLFloat, 32, 1}, roi_shape, NULL, 0};
  DLTensor out = {fake_out, {kDLCUDA, 0}, 4, {kDLFloat, 32, 1}, out_shape, NULL, 0};
  CHECK_STATUS(vo_roi_align(NULL, &in, &rois, 1.0, 2, 2, 0, 1, &out), VO_ERROR_BACKEND_UNAVAILABLE);
  CHECK_ERROR_HAS("roi_align");
  CHECK_STATUS(vo_roi_align_backward(NULL, &out, &rois, 1.0, 2, 2, 2, 3, 4, 5, 0, 1, &in),
               VO_ERROR_BACKEND_UNAVAILABLE);
  CHECK_ERROR_HAS("roi_align_backward");
}

/* Empty shapes: no RoIs, no channels, an empty map. */
static void empty_shapes(void) {
  double roi[5] = {0, 0, 0, 3, 3};
  double input[1] = {0};
  problem pb0 = {1, 2, 4, 4, 0, 2, 2, 0, 1, 1.0, NULL, roi, NULL};
  double in16[32];
  for (int i = 0; i < 32; i++) in16[i] = i;
  pb0.input = in16;
  double out[8], gin[32];
  CHECK_STATUS(run_forward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb0, out, NULL), VO_OK);
  CHECK_STATUS(run_backward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb0, gin, NULL), VO_OK);
  int zero = 1;
  for (int i = 0; i < 32; i++) zero &= gin[i] == 0;
  CHECK_MSG(zero, "backward with no RoIs must zero grad_input");
  /* H = W = 0: every sample is outside */
  problem pb1 = {1, 1, 0, 0, 1, 2, 2, 2, 0, 1.0, input, roi, NULL};
  double g4[4] = {1, 1, 1, 1};
  pb1.grad = g4;
  if (CHECK_STATUS(run_forward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb1, out, NULL), VO_OK))
    CHECK(out[0] == 0 && out[1] == 0 && out[2] == 0 && out[3] == 0);
  CHECK_STATUS(run_backward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb1, gin, NULL), VO_OK);
}

/* roi_align_rotated's typed wrappers: at angle 0 (aligned) it is roi_align
 * of the same box; clockwise negates the angle and radians takes it in
 * radians; its shape wrapper agrees with the call; and its backward is the
 * forward's adjoint: <forward(x), g> = <x, backward(g)>. */
static void rotated_wrappers(void) {
  enum { N = 2, C = 3, H = 11, W = 13, K = 4, PH = 3, PW = 4 };
  vt_rng rng;
  vt_rng_seed(&rng, 15);
  double x[N * C * H * W], g[K * C * PH * PW], rot[K * 6], axis[K * 5], turned[K * 6];
  for (int i = 0; i < N * C * H * W; i++) x[i] = vt_rng_uniform(&rng, -1, 1);
  for (int i = 0; i < K * C * PH * PW; i++) g[i] = vt_rng_uniform(&rng, -1, 1);
  for (int k = 0; k < K; k++) {
    const double cx = vt_rng_uniform(&rng, 2, 10), cy = vt_rng_uniform(&rng, 2, 8);
    const double w = vt_rng_uniform(&rng, 1, 7), h = vt_rng_uniform(&rng, 1, 6);
    const double r[6] = {(double)(k % N), cx, cy, w, h, 0};
    memcpy(rot + 6 * k, r, sizeof r);
    const double a[5] = {(double)(k % N), cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
    memcpy(axis + 5 * k, a, sizeof a);
    memcpy(turned + 6 * k, r, sizeof r);
    turned[6 * k + 5] = 30.0 * (k + 1);
  }
  const int64_t xs[4] = {N, C, H, W}, rs[2] = {K, 6}, as[2] = {K, 5}, os[4] = {K, C, PH, PW};
  vt_tensor *in = vt_tensor_new(vt_f64, 4, xs, x), *gr = vt_tensor_new(vt_f64, 4, os, g);
  vt_tensor *rr = vt_tensor_new(vt_f64, 2, rs, rot), *ar = vt_tensor_new(vt_f64, 2, as, axis);
  vt_tensor *out_r = vt_tensor_new(vt_f64, 4, os, NULL),
            *out_a = vt_tensor_new(vt_f64, 4, os, NULL);
  vo_tensor_desc d;
  CHECK_STATUS(vo_roi_align_rotated_shape(NULL, &in->dl, &rr->dl, 1.0, PH, PW, 2, 1, 0, 0, &d),
               VO_OK);
  CHECK(d.ndim == 4 && d.shape[0] == K && d.shape[1] == C && d.shape[2] == PH && d.shape[3] == PW &&
        d.dtype.bits == 64);
  CHECK_STATUS(vo_roi_align_rotated(NULL, &in->dl, &rr->dl, 1.0, PH, PW, 2, 1, 0, 0, &out_r->dl),
               VO_OK);
  CHECK_STATUS(vo_roi_align(NULL, &in->dl, &ar->dl, 1.0, PH, PW, 2, 1, &out_a->dl), VO_OK);
  double worst = 0;
  for (int64_t i = 0; i < K * C * PH * PW; i++)
    worst = fmax(worst, fabs(vt_get(&out_r->dl, i) - vt_get(&out_a->dl, i)));
  CHECK_MSG(worst < 1e-12, "roi_align_rotated at angle 0 vs roi_align: %g", worst);

  /* Turned boxes: clockwise with -a and radians with a * pi / 180 (the
   * ops' literal) give the same bits as degrees counter-clockwise. */
  vt_tensor *tr = vt_tensor_new(vt_f64, 2, rs, turned);
  vt_tensor *want = vt_tensor_new(vt_f64, 4, os, NULL), *got = vt_tensor_new(vt_f64, 4, os, NULL);
  CHECK_STATUS(vo_roi_align_rotated(NULL, &in->dl, &tr->dl, 1.0, PH, PW, 0, 1, 0, 0, &want->dl),
               VO_OK);
  for (int k = 0; k < K; k++) vt_set(&tr->dl, 6 * k + 5, -turned[6 * k + 5]);
  CHECK_STATUS(vo_roi_align_rotated(NULL, &in->dl, &tr->dl, 1.0, PH, PW, 0, 1, 1, 0, &got->dl),
               VO_OK);
  CHECK(memcmp(got->dl.data, want->dl.data, sizeof(double) * K * C * PH * PW) == 0);
  for (int k = 0; k < K; k++) vt_set(&tr->dl, 6 * k + 5, turned[6 * k + 5] * 0.01745329251);
  CHECK_STATUS(vo_roi_align_rotated(NULL, &in->dl, &tr->dl, 1.0, PH, PW, 0, 1, 0, 1, &got->dl),
               VO_OK);
  worst = 0;
  for (int64_t i = 0; i < K * C * PH * PW; i++)
    worst = fmax(worst, fabs(vt_get(&got->dl, i) - vt_get(&want->dl, i)));
  CHECK_MSG(worst < 1e-12, "roi_align_rotated radians vs degrees: %g", worst);

  /* The backward as the forward's adjoint, on the turned boxes. */
  for (int k = 0; k < K; k++) vt_set(&tr->dl, 6 * k + 5, turned[6 * k + 5]);
  vt_tensor *gi = vt_tensor_new(vt_f64, 4, xs, NULL);
  CHECK_STATUS(vo_roi_align_rotated_backward(NULL, &gr->dl, &tr->dl, 1.0, PH, PW, N, C, H, W, 0, 1,
                                             0, 0, &gi->dl),
               VO_OK);
  double lhs = 0, rhs = 0;
  for (int64_t i = 0; i < K * C * PH * PW; i++) lhs += vt_get(&want->dl, i) * g[i];
  for (int64_t i = 0; i < N * C * H * W; i++) rhs += x[i] * vt_get(&gi->dl, i);
  CHECK_MSG(fabs(lhs - rhs) < 1e-10 * (1 + fabs(lhs)), "adjoint: %.17g vs %.17g", lhs, rhs);

  /* A negative width is refused, naming it. */
  vt_set(&tr->dl, 3, -1);
  CHECK_STATUS(vo_roi_align_rotated(NULL, &in->dl, &tr->dl, 1.0, PH, PW, 0, 1, 0, 0, &got->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("negative");
  vt_tensor *all[] = {in, gr, rr, ar, out_r, out_a, tr, want, got, gi};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

int main(void) {
  vo_context *ctx1 = NULL, *ctx2 = NULL, *ctx3 = NULL;
  CHECK_STATUS(vo_context_create(&ctx1), VO_OK);
  CHECK_STATUS(vo_context_create(&ctx2), VO_OK);
  CHECK_STATUS(vo_context_create(&ctx3), VO_OK);
  CHECK_STATUS(vo_context_set_num_threads(ctx1, 1), VO_OK);
  CHECK_STATUS(vo_context_set_num_threads(ctx2, 2), VO_OK);
  CHECK_STATUS(vo_context_set_num_threads(ctx3, 2), VO_OK);
  CHECK_STATUS(vo_context_set_workspace_limit(ctx3, 3000), VO_OK);
  hand_checked();
  random_cases(ctx1, ctx2, ctx3);
  {
    vo_context *ctxs[FAST_CTXS] = {NULL, NULL, NULL, NULL, NULL};
    for (int i = 0; i < FAST_CTXS; i++) {
      CHECK_STATUS(vo_context_create(&ctxs[i]), VO_OK);
      CHECK_STATUS(vo_context_set_num_threads(ctxs[i], i == 0 ? 1 : 2), VO_OK);
    }
    CHECK_STATUS(vo_context_set_isa(ctxs[2], VO_ISA_SCALAR), VO_OK);
    CHECK_STATUS(vo_context_set_workspace_limit(ctxs[3], 3000), VO_OK);
    CHECK_STATUS(vo_context_set_isa(ctxs[4], VO_ISA_AVX2), VO_OK);
    fast_paths(ctxs);
    for (int i = 0; i < FAST_CTXS; i++) vo_context_destroy(ctxs[i]);
  }
  finite_differences();
  errors();
  cuda_device();
  empty_shapes();
  rotated_wrappers();
  vo_context_destroy(ctx1);
  vo_context_destroy(ctx2);
  vo_context_destroy(ctx3);
  return vt_finish("test_roi_align");
}
