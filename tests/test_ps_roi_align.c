/* ps_roi_align and ps_roi_align_backward on the CPU: against a
 * double-precision reference written from SPEC.md, hand-checked values,
 * finite differences, the adjoint identity (double backward), thread-count
 * determinism, and every validation error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roi_test_util.h"

/* One ps_roi_align problem, all values logical row-major doubles (already
 * representable in the dtype under test). c is the input's channel count,
 * a multiple of ph*pw; the output has c / (ph*pw) channels. */
typedef struct problem {
  int64_t n, c, h, w, k, ph, pw, sr;
  double scale;
  double *input; /* [n,c,h,w] */
  double *rois;  /* [k,5] */
  double *grad;  /* [k,c/(ph*pw),ph,pw] */
} problem;

static int64_t cout_of(const problem *pb) { return pb->c / (pb->ph * pb->pw); }
static int64_t out_numel(const problem *pb) { return pb->k * pb->c; }

/* ------------------------------------------------------------ reference */

/* RoI geometry straight from SPEC section 2: roi_align's with the 0.5 offset
 * and no 1x1 minimum; count = gh*gw, and an empty grid gives 0. */
typedef struct ref_roi {
  int64_t b, gh, gw;
  double sy, sx, bh, bw;
} ref_roi;

static ref_roi ref_geometry(const problem *pb, const double *r) {
  ref_roi g;
  g.b = (int64_t)r[0];
  g.sx = r[1] * pb->scale - 0.5;
  g.sy = r[2] * pb->scale - 0.5;
  double ex = r[3] * pb->scale - 0.5, ey = r[4] * pb->scale - 0.5;
  double rw = ex - g.sx, rh = ey - g.sy;
  g.bh = rh / (double)pb->ph;
  g.bw = rw / (double)pb->pw;
  g.gh = pb->sr > 0 ? pb->sr : (int64_t)ceil(rh / (double)pb->ph);
  g.gw = pb->sr > 0 ? pb->sr : (int64_t)ceil(rw / (double)pb->pw);
  if (g.gh < 0) g.gh = 0;
  if (g.gw < 0) g.gw = 0;
  return g;
}

static void ref_pos(const ref_roi *g, int64_t ph, int64_t pw, int64_t iy, int64_t ix, double *y,
                    double *x) {
  *y = g->sy + (double)ph * g->bh + ((double)iy + 0.5) * g->bh / (double)g->gh;
  *x = g->sx + (double)pw * g->bw + ((double)ix + 0.5) * g->bw / (double)g->gw;
}

static int64_t ref_channel(const problem *pb, int64_t c, int64_t ph, int64_t pw) {
  return (c * pb->ph + ph) * pb->pw + pw;
}

static void ref_forward(const problem *pb, double *out) {
  const int64_t cout = cout_of(pb);
  for (int64_t k = 0; k < pb->k; k++) {
    ref_roi g = ref_geometry(pb, pb->rois + 5 * k);
    const double count = (double)(g.gh * g.gw);
    for (int64_t c = 0; c < cout; c++)
      for (int64_t ph = 0; ph < pb->ph; ph++)
        for (int64_t pw = 0; pw < pb->pw; pw++) {
          const double *plane =
              pb->input + (g.b * pb->c + ref_channel(pb, c, ph, pw)) * pb->h * pb->w;
          double sum = 0;
          for (int64_t iy = 0; iy < g.gh; iy++)
            for (int64_t ix = 0; ix < g.gw; ix++) {
              double y, x, wt[4];
              int64_t pos[4];
              ref_pos(&g, ph, pw, iy, ix, &y, &x);
              if (!rt_bilinear(pb->h, pb->w, y, x, pos, wt)) continue;
              for (int j = 0; j < 4; j++) sum += wt[j] * plane[pos[j]];
            }
          out[((k * cout + c) * pb->ph + ph) * pb->pw + pw] = count > 0 ? sum / count : 0;
        }
  }
}

static void ref_backward(const problem *pb, double *gin) {
  const int64_t cout = cout_of(pb);
  memset(gin, 0, sizeof(double) * (size_t)(pb->n * pb->c * pb->h * pb->w));
  for (int64_t k = 0; k < pb->k; k++) {
    ref_roi g = ref_geometry(pb, pb->rois + 5 * k);
    const double count = (double)(g.gh * g.gw);
    for (int64_t c = 0; c < cout; c++)
      for (int64_t ph = 0; ph < pb->ph; ph++)
        for (int64_t pw = 0; pw < pb->pw; pw++) {
          double *plane = gin + (g.b * pb->c + ref_channel(pb, c, ph, pw)) * pb->h * pb->w;
          double gv = pb->grad[((k * cout + c) * pb->ph + ph) * pb->pw + pw];
          for (int64_t iy = 0; iy < g.gh; iy++)
            for (int64_t ix = 0; ix < g.gw; ix++) {
              double y, x, wt[4];
              int64_t pos[4];
              ref_pos(&g, ph, pw, iy, ix, &y, &x);
              if (!rt_bilinear(pb->h, pb->w, y, x, pos, wt)) continue;
              for (int j = 0; j < 4; j++) plane[pos[j]] += gv * wt[j] / count;
            }
        }
  }
}

/* A RoI whose result jumps under float32 rounding of its geometry (a sample
 * within 1e-3 of the -1 / H / W cut-offs, or an adaptive grid size within
 * 1e-3 of an integer): the random tests redraw those. */
static int ref_fragile(const problem *pb, const double *r) {
  ref_roi g = ref_geometry(pb, r);
  if (pb->sr <= 0) {
    double rw = (r[3] * pb->scale - 0.5) - (r[1] * pb->scale - 0.5);
    double rh = (r[4] * pb->scale - 0.5) - (r[2] * pb->scale - 0.5);
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

/* The channel_mapping the forward writes, as a host int32 tensor. */
static vt_tensor *make_mapping(const problem *pb) {
  return rt_ps_mapping(pb->k, cout_of(pb), pb->ph, pb->pw);
}

/* Runs the forward; out gets the decoded output, raw (if not NULL) its
 * bytes. Also checks the shape query and every channel_mapping entry. */
static vo_status run_forward(const vo_context *ctx, DLDataType dt, int layout, const problem *pb,
                             double *out, void *raw) {
  const int64_t in_shape[4] = {pb->n, pb->c, pb->h, pb->w};
  const int64_t out_shape[4] = {pb->k, cout_of(pb), pb->ph, pb->pw};
  vt_tensor *in = rt_make_nchw(dt, in_shape, layout, pb->input);
  vt_tensor *rois = rt_make_rois(dt, pb->k, layout, pb->rois);
  vt_tensor *o = vt_tensor_new(dt, 4, out_shape, NULL);
  vt_tensor *m = vt_tensor_new(vt_i32, 4, out_shape, NULL);
  vt_fill(&o->dl, -77);
  vt_fill(&m->dl, -77);
  vo_tensor_desc desc[2];
  vo_status st =
      vo_ps_roi_align_shape(ctx, &in->dl, &rois->dl, pb->scale, pb->ph, pb->pw, pb->sr, desc);
  if (CHECK_STATUS(st, VO_OK)) RT_CHECK_PS_SHAPES(desc, dt, pb->k, cout_of(pb), pb->ph, pb->pw);
  st = vo_ps_roi_align(ctx, &in->dl, &rois->dl, pb->scale, pb->ph, pb->pw, pb->sr, &o->dl, &m->dl);
  if (st == VO_OK) { /* channel_mapping omitted: the same values, bit for bit */
    vt_tensor *o2 = vt_tensor_new(dt, 4, out_shape, NULL);
    vt_fill(&o2->dl, -55);
    if (CHECK_STATUS(vo_ps_roi_align(ctx, &in->dl, &rois->dl, pb->scale, pb->ph, pb->pw, pb->sr,
                                     &o2->dl, NULL),
                     VO_OK))
      CHECK_MSG(memcmp(o->dl.data, o2->dl.data, (size_t)vt_numel(&o->dl) * vt_dtype_bytes(dt)) == 0,
                "ps_roi_align %s: the values differ with channel_mapping omitted",
                vt_dtype_name(dt));
    vt_tensor_free(o2);
  }
  vt_read_all(&o->dl, out);
  if (raw) memcpy(raw, o->dl.data, (size_t)vt_numel(&o->dl) * vt_dtype_bytes(dt));
  if (st == VO_OK) RT_CHECK_PS_MAPPING(&m->dl, dt, pb->k, cout_of(pb), pb->ph, pb->pw);
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(o);
  vt_tensor_free(m);
  return st;
}

static vo_status run_backward(const vo_context *ctx, DLDataType dt, int layout, const problem *pb,
                              double *gin, void *raw) {
  const int64_t g_shape[4] = {pb->k, cout_of(pb), pb->ph, pb->pw};
  const int64_t in_shape[4] = {pb->n, pb->c, pb->h, pb->w};
  vt_tensor *g = rt_make_nchw(dt, g_shape, layout, pb->grad);
  vt_tensor *rois = rt_make_rois(dt, pb->k, LAYOUT_CONTIGUOUS, pb->rois);
  vt_tensor *m = make_mapping(pb);
  vt_tensor *o = vt_tensor_new(dt, 4, in_shape, NULL);
  vt_fill(&o->dl, -77); /* must be overwritten everywhere */
  vo_status st = vo_ps_roi_align_backward(ctx, &g->dl, &rois->dl, &m->dl, pb->scale, pb->ph, pb->pw,
                                          pb->sr, pb->n, pb->c, pb->h, pb->w, &o->dl);
  vt_read_all(&o->dl, gin);
  if (raw) memcpy(raw, o->dl.data, (size_t)vt_numel(&o->dl) * vt_dtype_bytes(dt));
  vt_tensor_free(g);
  vt_tensor_free(rois);
  vt_tensor_free(m);
  vt_tensor_free(o);
  return st;
}

/* ------------------------------------------------------------ hand-checked */

/* Channel i of a 4x4 map holds x + 4y + 100 i. Bilinear interpolation of a
 * linear ramp is exact, so an in-range sample is that value at its position.
 * (a) C = 4, 2x2 bins, RoI (0,0)-(2,2), 1 sample: offset -0.5, bin size 1,
 *     samples at (y, x) = (ph, pw); bin (ph, pw) reads channel 2 ph + pw:
 *     0, 1 + 100, 4 + 200, 5 + 300.
 * (b) C = 1, 1x1 bin, RoI (0.5,0.5)-(2.5,2.5), sampling 2: start 0, bin 2,
 *     samples at 0.5 and 1.5 per axis, mean position (1, 1): 1 + 4 = 5.
 * (c) C = 4, 2x2 bins, RoI (1,1)-(1,3) (zero width), adaptive: the grid is
 *     ceil(0/2) = 0 columns, so no samples: 0 (torchvision: 0/0 = NaN).
 * (d) C = 4, 2x2 bins, RoI (1,1)-(2,2), sampling 1: start 0.5, bin 0.5,
 *     samples at 0.75 and 1.25: 0.75 + 3 = 3.75, 1.25 + 3 + 100 = 104.25,
 *     0.75 + 5 + 200 = 205.75, 1.25 + 5 + 300 = 306.25. */
static void hand_checked(void) {
  double ramp[4 * 16];
  for (int c = 0; c < 4; c++)
    for (int i = 0; i < 16; i++) ramp[c * 16 + i] = (double)i + 100 * c;
  struct {
    double roi[5];
    int64_t c, ph, pw, sr;
    double want[4];
  } cases[] = {
      {{0, 0, 0, 2, 2}, 4, 2, 2, 1, {0, 101, 204, 305}},
      {{0, 0.5, 0.5, 2.5, 2.5}, 1, 1, 1, 2, {5}},
      {{0, 1, 1, 1, 3}, 4, 2, 2, 0, {0, 0, 0, 0}},
      {{0, 1, 1, 2, 2}, 4, 2, 2, 1, {3.75, 104.25, 205.75, 306.25}},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    for (int d = 0; d < RT_NUM_DTYPES; d++) {
      problem pb = {1,    cases[ci].c,   4,   4, 1, cases[ci].ph, cases[ci].pw, cases[ci].sr, 1.0,
                    ramp, cases[ci].roi, NULL};
      double out[4];
      if (!CHECK_STATUS(run_forward(NULL, *rt_dtypes[d], LAYOUT_CONTIGUOUS, &pb, out, NULL), VO_OK))
        continue;
      for (int64_t i = 0; i < pb.ph * pb.pw; i++) {
        const double want = vt_round_to(*rt_dtypes[d], cases[ci].want[i]);
        CHECK_MSG(out[i] == want, "hand case %zu %s: out[%lld] = %.9g, want %.9g", ci,
                  vt_dtype_name(*rt_dtypes[d]), (long long)i, out[i], want);
      }
    }
  }
}

/* ------------------------------------------------------------ random */

/* RoIs of every kind: inside, partly outside, wholly outside, tiny, huge,
 * reversed (x2 < x1: an empty adaptive grid) and degenerate (x2 == x1). */
static void gen_roi(vt_rng *rng, const problem *pb, DLDataType dt, double *r) {
  const double mh = (double)pb->h / pb->scale, mw = (double)pb->w / pb->scale;
  for (int attempt = 0;; attempt++) {
    double box[4]; /* cx, cy, hw, hh */
    const int kind = rt_roi_box(rng, 7, mh, mw, pb->scale, box);
    if (kind == 6) box[3] = 0; /* zero height */
    rt_roi_store(rng, pb->n, dt, box, r);
    /* a zero-size RoI is exact in every dtype: keep it even though its
     * adaptive grid is "fragile" (it is exactly 0) */
    if (kind == 6 && r[2] == r[4]) return;
    if (!ref_fragile(pb, r) || attempt > 1000) return;
  }
}

/* ctx1: 1 thread; ctx2: 2 threads; ctx3: 2 threads and a tiny workspace
 * limit (chunks, samples on the fly). All three must give the same bits. */
static void random_cases(const vo_context *ctx1, const vo_context *ctx2, const vo_context *ctx3) {
  static const int64_t ratios[5] = {-1, 0, 1, 2, 3};
  static const double scales[3] = {1.0, 0.5, 0.25};
  for (uint64_t seed = 1; seed <= 3; seed++) {
    for (int d = 0; d < RT_NUM_DTYPES; d++) {
      const DLDataType dt = *rt_dtypes[d];
      for (int ri = 0; ri < 5; ri++) {
        vt_rng rng;
        vt_rng_seed(&rng, seed * 1000 + (uint64_t)(d * 100 + ri));
        problem pb = {2, 12, 7, 9, 7, 3, 2, ratios[ri], scales[seed - 1], NULL, NULL, NULL};
        if (seed == 2) pb.ph = 2, pb.pw = 3;
        if (seed == 3) pb.c = 5, pb.ph = 1, pb.pw = 1, pb.h = 5, pb.w = 11;
        /* 13 and 10 output channels: the forward sums them in channel blocks */
        if (seed == 3 && ri == 0) pb.c = 26, pb.pw = 2;
        if (seed == 3 && ri == 3) pb.c = 10;
        const int64_t nin = pb.n * pb.c * pb.h * pb.w, nout = out_numel(&pb);
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
          snprintf(desc, sizeof desc, "seed %llu sampling %lld layout %d", (unsigned long long)seed,
                   (long long)pb.sr, layout);
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

/* ------------------------------------------------------------ gradient */

/* The backward is the gradient of sum(out * grad) with respect to input:
 * central differences of the float64 forward (linear in input, so exact up
 * to rounding). The RoIs include a degenerate one (zero width). */
static void finite_differences(void) {
  for (int sr = 0; sr < 3; sr++) {
    vt_rng rng;
    vt_rng_seed(&rng, 77 + (uint64_t)sr);
    double rois[4 * 5] = {0, -1.3, 0.7, 4.1, 3.9, 1, 2.2, 1.1, 7.5, 6.0,
                          0, 0.4,  0.3, 1.2, 0.9, 1, 2.0, 1.0, 2.0, 4.0};
    problem pb = {2, 8, 5, 6, 4, 2, 2, sr, 1.0, NULL, rois, NULL};
    enum { NIN = 2 * 8 * 5 * 6, NOUT = 4 * 8 };
    double input[NIN], grad[NOUT], gin[NIN], out[NOUT];
    for (int64_t i = 0; i < NIN; i++) input[i] = vt_rng_uniform(&rng, -1, 1);
    for (int64_t i = 0; i < NOUT; i++) grad[i] = vt_rng_uniform(&rng, -1, 1);
    pb.input = input;
    pb.grad = grad;
    if (!CHECK_STATUS(run_backward(NULL, vt_f64, LAYOUT_CONTIGUOUS, &pb, gin, NULL), VO_OK))
      continue;
    const double h = 1e-3;
    for (int64_t i = 0; i < NIN; i++) {
      double f[2];
      for (int s = 0; s < 2; s++) {
        const double saved = input[i];
        input[i] = saved + (s ? -h : h);
        CHECK_STATUS(run_forward(NULL, vt_f64, LAYOUT_CONTIGUOUS, &pb, out, NULL), VO_OK);
        input[i] = saved;
        f[s] = 0;
        for (int64_t j = 0; j < NOUT; j++) f[s] += out[j] * grad[j];
      }
      const double fd = (f[0] - f[1]) / (2 * h);
      CHECK_MSG(fabs(fd - gin[i]) <= 1e-9,
                "finite differences (sampling %d): d/dinput[%lld] = %.12g, backward %.12g", sr,
                (long long)i, fd, gin[i]);
    }
  }
}

/* Double backward: the backward is linear in grad, and its gradient with
 * respect to grad is the forward: for random g and v,
 * sum(backward(g) * v) == sum(g * forward(v)). */
static void adjoint(void) {
  for (int sr = -1; sr < 3; sr++) {
    vt_rng rng;
    vt_rng_seed(&rng, 500 + (uint64_t)(sr + 1));
    problem pb = {2, 18, 6, 7, 6, 3, 3, sr, 0.5, NULL, NULL, NULL};
    enum { NIN = 2 * 18 * 6 * 7, NOUT = 6 * 18 };
    double v[NIN], g[NOUT], rois[6 * 5], gin[NIN], out[NOUT];
    for (int64_t i = 0; i < NIN; i++) v[i] = vt_rng_uniform(&rng, -1, 1);
    for (int64_t i = 0; i < NOUT; i++) g[i] = vt_rng_uniform(&rng, -1, 1);
    pb.input = v;
    pb.grad = g;
    pb.rois = rois;
    for (int64_t k = 0; k < pb.k; k++) gen_roi(&rng, &pb, vt_f64, rois + 5 * k);
    if (!CHECK_STATUS(run_backward(NULL, vt_f64, LAYOUT_CONTIGUOUS, &pb, gin, NULL), VO_OK) ||
        !CHECK_STATUS(run_forward(NULL, vt_f64, LAYOUT_CONTIGUOUS, &pb, out, NULL), VO_OK))
      continue;
    double lhs = 0, rhs = 0, mag = 0;
    for (int64_t i = 0; i < NIN; i++) lhs += gin[i] * v[i], mag += fabs(gin[i] * v[i]);
    for (int64_t i = 0; i < NOUT; i++) rhs += g[i] * out[i], mag += fabs(g[i] * out[i]);
    CHECK_MSG(fabs(lhs - rhs) <= 1e-12 * fmax(1, mag),
              "adjoint (sampling %d): sum(backward(g) v) = %.17g, sum(g forward(v)) = %.17g", sr,
              lhs, rhs);
  }
}

/* ------------------------------------------------------------ errors */

#define EXPECT_FAIL(call, status, arg) RT_EXPECT_FAIL("ps_roi_align", call, status, arg)

static void errors(void) {
  /* C = 8, 2x2 bins: 2 output channels */
  const int64_t in_shape[4] = {2, 8, 4, 5}, roi_shape[2] = {2, 5}, out_shape[4] = {2, 2, 2, 2};
  const double roi_values[10] = {0, 0, 0, 2, 2, 1, 1, 1, 3, 3};
  problem pb = {2, 8, 4, 5, 2, 2, 2, 0, 1.0, NULL, NULL, NULL};
  vt_tensor *in = vt_tensor_new(vt_f32, 4, in_shape, NULL);
  vt_tensor *rois = vt_tensor_new(vt_f32, 2, roi_shape, roi_values);
  vt_tensor *out = vt_tensor_new(vt_f32, 4, out_shape, NULL);
  vt_tensor *map = vt_tensor_new(vt_i32, 4, out_shape, NULL);
  vt_tensor *good_map = make_mapping(&pb);
  vt_tensor *gin = vt_tensor_new(vt_f32, 4, in_shape, NULL);
  vt_tensor *g2 = vt_tensor_new(vt_f32, 4, out_shape, NULL);
  const DLTensor *I = &in->dl, *R = &rois->dl, *G = &g2->dl, *GM = &good_map->dl;
  DLTensor *O = &out->dl, *M = &map->dl, *GI = &gin->dl;

  CHECK_STATUS(vo_ps_roi_align(NULL, I, R, 1.0, 2, 2, 0, O, M), VO_OK);
  CHECK_STATUS(vo_ps_roi_align_backward(NULL, G, R, GM, 1.0, 2, 2, 0, 2, 8, 4, 5, GI), VO_OK);
  vt_fill(O, 55.5);
  vt_fill(M, 55);
  vt_fill(GI, 55.5);

  /* channel grouping */
  const int64_t in6_shape[4] = {2, 6, 4, 5};
  vt_tensor *in6 = vt_tensor_new(vt_f32, 4, in6_shape, NULL);
  EXPECT_FAIL(vo_ps_roi_align(NULL, &in6->dl, R, 1.0, 2, 2, 0, O, M), VO_ERROR_INVALID_ARGUMENT,
              "input has C = 6 channels, which is not a multiple of pooled_height * "
              "pooled_width = 4");
  EXPECT_FAIL(vo_ps_roi_align(NULL, I, R, 1.0, 3, 1, 0, O, M), VO_ERROR_INVALID_ARGUMENT,
              "input has C = 8 channels");
  EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, R, GM, 1.0, 2, 2, 0, 2, 6, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "channels = 6 is not a multiple");
  EXPECT_FAIL(vo_ps_roi_align(NULL, I, R, 1.0, (int64_t)1 << 40, (int64_t)1 << 40, 0, O, M),
              VO_ERROR_INVALID_ARGUMENT, "pooled_height * pooled_width");
  EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, R, GM, 1.0, 2, 2, 0, 2, (int64_t)1 << 32, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "channels: 4294967296 channels are more than the int32");
  /* shapes */
  const int64_t s3[3] = {8, 4, 5}, r4[2] = {2, 4};
  vt_tensor *in3 = vt_tensor_new(vt_f32, 3, s3, NULL);
  vt_tensor *rois4 = vt_tensor_new(vt_f32, 2, r4, NULL);
  EXPECT_FAIL(vo_ps_roi_align(NULL, &in3->dl, R, 1.0, 2, 2, 0, O, M), VO_ERROR_INVALID_ARGUMENT,
              "input");
  EXPECT_FAIL(vo_ps_roi_align(NULL, I, &rois4->dl, 1.0, 2, 2, 0, O, M), VO_ERROR_INVALID_ARGUMENT,
              "rois");
  EXPECT_FAIL(vo_ps_roi_align(NULL, I, R, 1.0, 0, 2, 0, O, M), VO_ERROR_INVALID_ARGUMENT,
              "pooled_height");
  EXPECT_FAIL(vo_ps_roi_align(NULL, I, R, 1.0, 2, -3, 0, O, M), VO_ERROR_INVALID_ARGUMENT,
              "pooled_width");
  EXPECT_FAIL(vo_ps_roi_align(NULL, I, R, -1.0, 2, 2, 0, O, M), VO_ERROR_INVALID_ARGUMENT,
              "spatial_scale");
  EXPECT_FAIL(vo_ps_roi_align(NULL, I, R, NAN, 2, 2, 0, O, M), VO_ERROR_INVALID_ARGUMENT,
              "spatial_scale");
  /* batch indices and coordinates */
  for (size_t i = 0; i < RT_NUM_BAD_ROIS_SHORT; i++) {
    const rt_bad_roi *bad = &rt_bad_rois_short[i];
    vt_tensor *r = rt_bad_rois_tensor(bad, roi_values);
    EXPECT_FAIL(vo_ps_roi_align(NULL, I, &r->dl, 1.0, 2, 2, 0, O, M), VO_ERROR_INVALID_ARGUMENT,
                bad->needle);
    EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, &r->dl, GM, 1.0, 2, 2, 0, 2, 8, 4, 5, GI),
                VO_ERROR_INVALID_ARGUMENT, bad->needle);
    vt_tensor_free(r);
  }
  /* backward: grad and channel_mapping shapes, dtype and values; sizes */
  EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, R, GM, 1.0, 2, 2, 0, 2, 16, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "grad");
  EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, R, GM, 1.0, 1, 4, 0, 2, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "grad");
  EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, &rois4->dl, GM, 1.0, 2, 2, 0, 2, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "rois");
  const int64_t m_short[4] = {1, 2, 2, 2};
  vt_tensor *map_short = vt_tensor_new(vt_i32, 4, m_short, NULL);
  EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, R, &map_short->dl, 1.0, 2, 2, 0, 2, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "channel_mapping must have shape [2, 2, 2, 2]");
  vt_tensor *map64 = vt_tensor_new(vt_i64, 4, out_shape, NULL);
  EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, R, &map64->dl, 1.0, 2, 2, 0, 2, 8, 4, 5, GI),
              VO_ERROR_UNSUPPORTED_DTYPE, "channel_mapping must be int32");
  vt_tensor *map_bad = make_mapping(&pb);
  vt_set(&map_bad->dl, 13, 99); /* [1, 1, 0, 1]: the forward writes 5 */
  EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, R, &map_bad->dl, 1.0, 2, 2, 0, 2, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "channel_mapping[1, 1, 0, 1] = 99, expected 5");
  EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, R, GM, 1.0, 2, 2, 0, -1, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "batch_size");
  EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, R, GM, 1.0, 2, 2, 0, 2, 8, -4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "height");
  EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, R, GM, 0.0, 2, 2, 0, 2, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "spatial_scale");
  EXPECT_FAIL(vo_ps_roi_align_backward(NULL, G, R, GM, 1.0, 2, 0, 0, 2, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "pooled_width");
  /* wrong output shape or dtype (the dispatcher's checks) */
  EXPECT_FAIL(vo_ps_roi_align(NULL, I, R, 1.0, 1, 2, 0, O, M), VO_ERROR_INVALID_ARGUMENT, "output");
  EXPECT_FAIL(vo_ps_roi_align(NULL, I, R, 1.0, 2, 2, 0, O, &map64->dl), VO_ERROR_UNSUPPORTED_DTYPE,
              "output channel_mapping must be int32");
  /* dtypes */
  /* rois of any floating dtype are accepted (test_mixed_precision.c), integer ones are not */
  vt_tensor *r64 = vt_tensor_new(vt_i64, 2, roi_shape, roi_values);
  EXPECT_FAIL(vo_ps_roi_align(NULL, I, &r64->dl, 1.0, 2, 2, 0, O, M), VO_ERROR_UNSUPPORTED_DTYPE,
              "rois must be float32, float64, float16 or bfloat16 (any floating dtype beside "
              "input's float32), got int64");
  vt_tensor *ii = vt_tensor_new(vt_i64, 4, in_shape, NULL);
  EXPECT_FAIL(vo_ps_roi_align(NULL, &ii->dl, R, 1.0, 2, 2, 0, O, M), VO_ERROR_UNSUPPORTED_DTYPE,
              "input");

  /* nothing was written by any failed call */
  int clean = 1;
  for (int64_t i = 0; i < vt_numel(O); i++) clean &= vt_get(O, i) == 55.5;
  for (int64_t i = 0; i < vt_numel(M); i++) clean &= vt_get(M, i) == 55;
  for (int64_t i = 0; i < vt_numel(GI); i++) clean &= vt_get(GI, i) == 55.5;
  CHECK_MSG(clean, "a failed ps_roi_align call wrote its output");

  vt_tensor *all[] = {in,  rois,  out,   map,     good_map,  gin, g2, in6,
                      in3, rois4, map64, map_bad, map_short, r64, ii};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

/* Tensors that claim to live on a CUDA device: not read, and (without a
 * CUDA ps_roi_align) the backend is reported unavailable. */
static void cuda_device(void) {
  static float fake_in[2 * 4 * 4 * 5], fake_rois[2 * 5], fake_out[2 * 1 * 2 * 2];
  static int32_t fake_map[2 * 1 * 2 * 2];
  int64_t in_shape[4] = {2, 4, 4, 5}, roi_shape[2] = {2, 5}, out_shape[4] = {2, 1, 2, 2};
  DLTensor in = {fake_in, {kDLCUDA, 0}, 4, {kDLFloat, 32, 1}, in_shape, NULL, 0};
  DLTensor rois = {fake_rois, {kDLCUDA, 0}, 2, {kDLFloat, 32, 1}, roi_shape, NULL, 0};
  DLTensor out = {fake_out, {kDLCUDA, 0}, 4, {kDLFloat, 32, 1}, out_shape, NULL, 0};
  DLTensor map = {fake_map, {kDLCUDA, 0}, 4, {kDLInt, 32, 1}, out_shape, NULL, 0};
  CHECK_STATUS(vo_ps_roi_align(NULL, &in, &rois, 1.0, 2, 2, 0, &out, &map),
               VO_ERROR_BACKEND_UNAVAILABLE);
  CHECK_ERROR_HAS("ps_roi_align");
  CHECK_STATUS(vo_ps_roi_align_backward(NULL, &out, &rois, &map, 1.0, 2, 2, 0, 2, 4, 4, 5, &in),
               VO_ERROR_BACKEND_UNAVAILABLE);
  CHECK_ERROR_HAS("ps_roi_align_backward");
}

/* Empty shapes: no RoIs, no channels, an empty map. */
static void empty_shapes(void) {
  double roi[5] = {0, 0, 0, 3, 3};
  double in16[64];
  for (int i = 0; i < 64; i++) in16[i] = i;
  problem pb0 = {1, 4, 4, 4, 0, 2, 2, 0, 1.0, in16, roi, NULL};
  double out[8], gin[64];
  CHECK_STATUS(run_forward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb0, out, NULL), VO_OK);
  CHECK_STATUS(run_backward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb0, gin, NULL), VO_OK);
  int zero = 1;
  for (int i = 0; i < 64; i++) zero &= gin[i] == 0;
  CHECK_MSG(zero, "backward with no RoIs must zero grad_input");
  /* C = 0: an empty output */
  problem pb1 = {1, 0, 4, 4, 1, 2, 2, 0, 1.0, in16, roi, NULL};
  CHECK_STATUS(run_forward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb1, out, NULL), VO_OK);
  CHECK_STATUS(run_backward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb1, gin, NULL), VO_OK);
  /* H = W = 0: every sample is outside */
  double g4[4] = {1, 1, 1, 1};
  problem pb2 = {1, 4, 0, 0, 1, 2, 2, 2, 1.0, in16, roi, g4};
  if (CHECK_STATUS(run_forward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb2, out, NULL), VO_OK))
    CHECK(out[0] == 0 && out[1] == 0 && out[2] == 0 && out[3] == 0);
  CHECK_STATUS(run_backward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb2, gin, NULL), VO_OK);
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
  finite_differences();
  adjoint();
  errors();
  cuda_device();
  empty_shapes();
  vo_context_destroy(ctx1);
  vo_context_destroy(ctx2);
  vo_context_destroy(ctx3);
  return vt_finish("test_ps_roi_align");
}
