/* ps_roi_pool and ps_roi_pool_backward on the CPU: against a scalar
 * reference written from SPEC.md, hand-checked values (including
 * torchvision's clamping of bins to the first H-1 rows and W-1 columns),
 * finite differences (the backward is the true gradient of the forward), the
 * adjoint identity (double backward), thread-count determinism, and every
 * validation error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roi_test_util.h"

/* One ps_roi_pool problem, all values logical row-major doubles (already
 * representable in the dtype under test). c is the input's channel count,
 * a multiple of ph*pw; the output has c / (ph*pw) channels. */
typedef struct problem {
  int64_t n, c, h, w, k, ph, pw;
  double scale;
  double *input; /* [n,c,h,w] */
  double *rois;  /* [k,5] */
  double *grad;  /* [k,c/(ph*pw),ph,pw] */
} problem;

static int64_t cout_of(const problem *pb) { return pb->c / (pb->ph * pb->pw); }
static int64_t out_numel(const problem *pb) { return pb->k * pb->c; }

/* ------------------------------------------------------------ reference */

/* Round half away from zero. */
static double ref_round(double v) { return v < 0 ? -floor(-v + 0.5) : floor(v + 0.5); }

/* Bounds [h0, h1) x [w0, w1) of bin (ph, pw) of RoI r, straight from SPEC
 * section 2, computed in the kernel's compute type (float32 unless the dtype
 * is float64) so bin edges agree exactly. Returns 0 for an empty bin. */
static int ref_bin(const problem *pb, int single, const double *r, int64_t ph, int64_t pw,
                   int64_t bnd[4]) {
  double c[4];
  for (int j = 0; j < 4; j++)
    c[j] = single ? ref_round((double)((float)r[1 + j] * (float)pb->scale))
                  : ref_round(r[1 + j] * pb->scale);
  const int64_t sx = (int64_t)c[0], sy = (int64_t)c[1], ex = (int64_t)c[2], ey = (int64_t)c[3];
  const int64_t rw = ex - sx > 1 ? ex - sx : 1, rh = ey - sy > 1 ? ey - sy : 1;
  double e[4];
  if (single) {
    const float bh = (float)rh / (float)pb->ph, bw = (float)rw / (float)pb->pw;
    e[0] = floorf((float)ph * bh);
    e[1] = ceilf((float)(ph + 1) * bh);
    e[2] = floorf((float)pw * bw);
    e[3] = ceilf((float)(pw + 1) * bw);
  } else {
    const double bh = (double)rh / (double)pb->ph, bw = (double)rw / (double)pb->pw;
    e[0] = floor((double)ph * bh);
    e[1] = ceil((double)(ph + 1) * bh);
    e[2] = floor((double)pw * bw);
    e[3] = ceil((double)(pw + 1) * bw);
  }
  const int64_t lim[4] = {pb->h - 1, pb->h - 1, pb->w - 1, pb->w - 1};
  const int64_t off[4] = {sy, sy, sx, sx};
  for (int j = 0; j < 4; j++) {
    int64_t v = (int64_t)e[j] + off[j];
    v = v < 0 ? 0 : v;
    bnd[j] = v > lim[j] ? lim[j] : v;
  }
  return bnd[1] > bnd[0] && bnd[3] > bnd[2];
}

static int64_t ref_channel(const problem *pb, int64_t c, int64_t ph, int64_t pw) {
  return (c * pb->ph + ph) * pb->pw + pw;
}

static void ref_forward(const problem *pb, int single, double *out) {
  const int64_t cout = cout_of(pb);
  for (int64_t k = 0; k < pb->k; k++) {
    const double *r = pb->rois + 5 * k;
    const int64_t b = (int64_t)r[0];
    for (int64_t c = 0; c < cout; c++)
      for (int64_t ph = 0; ph < pb->ph; ph++)
        for (int64_t pw = 0; pw < pb->pw; pw++) {
          const double *plane =
              pb->input + (b * pb->c + ref_channel(pb, c, ph, pw)) * pb->h * pb->w;
          int64_t bnd[4];
          double v = 0;
          if (ref_bin(pb, single, r, ph, pw, bnd)) {
            for (int64_t y = bnd[0]; y < bnd[1]; y++)
              for (int64_t x = bnd[2]; x < bnd[3]; x++) v += plane[y * pb->w + x];
            v /= (double)((bnd[1] - bnd[0]) * (bnd[3] - bnd[2]));
          }
          out[((k * cout + c) * pb->ph + ph) * pb->pw + pw] = v;
        }
  }
}

/* The true gradient of ref_forward. */
static void ref_backward(const problem *pb, int single, double *gin) {
  const int64_t cout = cout_of(pb);
  memset(gin, 0, sizeof(double) * (size_t)(pb->n * pb->c * pb->h * pb->w));
  for (int64_t k = 0; k < pb->k; k++) {
    const double *r = pb->rois + 5 * k;
    const int64_t b = (int64_t)r[0];
    for (int64_t c = 0; c < cout; c++)
      for (int64_t ph = 0; ph < pb->ph; ph++)
        for (int64_t pw = 0; pw < pb->pw; pw++) {
          double *plane = gin + (b * pb->c + ref_channel(pb, c, ph, pw)) * pb->h * pb->w;
          int64_t bnd[4];
          if (!ref_bin(pb, single, r, ph, pw, bnd)) continue;
          const double gv = pb->grad[((k * cout + c) * pb->ph + ph) * pb->pw + pw];
          const double area = (double)((bnd[1] - bnd[0]) * (bnd[3] - bnd[2]));
          for (int64_t y = bnd[0]; y < bnd[1]; y++)
            for (int64_t x = bnd[2]; x < bnd[3]; x++) plane[y * pb->w + x] += gv / area;
        }
  }
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
  vo_status st = vo_ps_roi_pool_shape(ctx, &in->dl, &rois->dl, pb->scale, pb->ph, pb->pw, desc);
  if (CHECK_STATUS(st, VO_OK)) RT_CHECK_PS_SHAPES(desc, dt, pb->k, cout_of(pb), pb->ph, pb->pw);
  st = vo_ps_roi_pool(ctx, &in->dl, &rois->dl, pb->scale, pb->ph, pb->pw, &o->dl, &m->dl);
  if (st == VO_OK) { /* channel_mapping omitted: the same values, bit for bit */
    vt_tensor *o2 = vt_tensor_new(dt, 4, out_shape, NULL);
    vt_fill(&o2->dl, -55);
    if (CHECK_STATUS(
            vo_ps_roi_pool(ctx, &in->dl, &rois->dl, pb->scale, pb->ph, pb->pw, &o2->dl, NULL),
            VO_OK))
      CHECK_MSG(memcmp(o->dl.data, o2->dl.data, (size_t)vt_numel(&o->dl) * vt_dtype_bytes(dt)) == 0,
                "ps_roi_pool %s: the values differ with channel_mapping omitted",
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
  vo_status st = vo_ps_roi_pool_backward(ctx, &g->dl, &rois->dl, &m->dl, pb->scale, pb->ph, pb->pw,
                                         pb->n, pb->c, pb->h, pb->w, &o->dl);
  vt_read_all(&o->dl, gin);
  if (raw) memcpy(raw, o->dl.data, (size_t)vt_numel(&o->dl) * vt_dtype_bytes(dt));
  vt_tensor_free(g);
  vt_tensor_free(rois);
  vt_tensor_free(m);
  vt_tensor_free(o);
  return st;
}

/* ------------------------------------------------------------ hand-checked */

/* Channel i of a 4x4 map holds x + 4y + 100 i; scale 1.
 * (a) C = 4, 2x2 bins, RoI (0,0)-(2,2): bins of one pixel at (ph, pw);
 *     bin (ph, pw) reads channel 2 ph + pw: 0, 1 + 100, 4 + 200, 5 + 300.
 * (b) C = 1, 1x1 bin, RoI (2,2)-(4,4): rows and columns [2, 4) clamped to
 *     [2, 3) (torchvision's forward never reaches the last row/column): the
 *     single pixel (2, 2) = 10.
 * (c) C = 1, RoI (10,10)-(12,12): clamped to [3, 3), empty: 0.
 * (d) C = 1, RoI (0,0)-(2.5,2.5): 2.5 rounds away from zero to 3, rows and
 *     columns [0, 3): mean x 1 + 4 * mean y 1 = 5 (half-to-even would give
 *     [0, 2) and 2.5).
 * (e) C = 1, RoI (0.4,0.6)-(0.6,0.4): rounds to (0,1)-(1,0), width 1 and
 *     height -1 forced to 1: row 1, column 0: 4. */
static void hand_checked(void) {
  double ramp[4 * 16];
  for (int c = 0; c < 4; c++)
    for (int i = 0; i < 16; i++) ramp[c * 16 + i] = (double)i + 100 * c;
  struct {
    double roi[5];
    int64_t c, ph, pw;
    double want[4];
  } cases[] = {
      {{0, 0, 0, 2, 2}, 4, 2, 2, {0, 101, 204, 305}},
      {{0, 2, 2, 4, 4}, 1, 1, 1, {10}},
      {{0, 10, 10, 12, 12}, 1, 1, 1, {0}},
      {{0, 0, 0, 2.5, 2.5}, 1, 1, 1, {5}},
      {{0, 0.4, 0.6, 0.6, 0.4}, 1, 1, 1, {4}},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    for (int d = 0; d < RT_NUM_DTYPES; d++) {
      problem pb = {1,    cases[ci].c,   4,   4, 1, cases[ci].ph, cases[ci].pw, 1.0,
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
 * reversed (x2 < x1: forced to 1x1), and on .5 rounding ties. */
static void gen_roi(vt_rng *rng, const problem *pb, DLDataType dt, double *r) {
  const double mh = (double)pb->h / pb->scale, mw = (double)pb->w / pb->scale;
  double box[4]; /* cx, cy, hw, hh */
  const int kind = rt_roi_box(rng, 7, mh, mw, pb->scale, box);
  rt_roi_store(rng, pb->n, dt, box, r);
  if (kind == 6) /* x * scale exactly on a .5 tie (scales are powers of 2) */
    for (int j = 1; j < 5; j++) r[j] = (floor(r[j] * pb->scale) + 0.5) / pb->scale;
}

/* ctx1: 1 thread; ctx2 and ctx3: 2 threads. All must give the same bits. */
static void random_cases(const vo_context *ctx1, const vo_context *ctx2, const vo_context *ctx3) {
  static const double scales[3] = {1.0, 0.5, 0.25};
  for (uint64_t seed = 1; seed <= 3; seed++) {
    for (int d = 0; d < RT_NUM_DTYPES; d++) {
      const DLDataType dt = *rt_dtypes[d];
      const int single = dt.bits != 64;
      for (int rep = 0; rep < 4; rep++) {
        vt_rng rng;
        vt_rng_seed(&rng, seed * 1000 + (uint64_t)(d * 100 + rep));
        problem pb = {2, 12, 7, 9, 9, 3, 2, scales[seed - 1], NULL, NULL, NULL};
        if (seed == 2) pb.ph = 2, pb.pw = 3;
        if (seed == 3) pb.c = 5, pb.ph = 1, pb.pw = 1, pb.h = 5, pb.w = 11;
        if (rep == 2) pb.ph = 4, pb.pw = 3, pb.c = 24;
        /* 13 output channels: the forward sums them in two blocks */
        if (rep == 3) pb.ph = 2, pb.pw = 2, pb.c = 52;
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
        ref_forward(&pb, single, want);
        ref_backward(&pb, single, gwant);
        char desc[96];
        for (int layout = 0; layout < NUM_LAYOUTS; layout++) {
          snprintf(desc, sizeof desc, "seed %llu rep %d layout %d", (unsigned long long)seed, rep,
                   layout);
          if (CHECK_STATUS(run_forward(ctx1, dt, layout, &pb, got, raw1), VO_OK))
            RT_COMPARE("forward", dt, got, want, nout, desc);
          if (CHECK_STATUS(run_forward(ctx2, dt, layout, &pb, got, raw2), VO_OK))
            CHECK_MSG(memcmp(raw1, raw2, esz * (size_t)nout) == 0,
                      "forward %s [%s]: 1 and 2 threads differ", vt_dtype_name(dt), desc);
          if (CHECK_STATUS(run_backward(ctx1, dt, layout, &pb, ggot, raw1), VO_OK))
            RT_COMPARE("backward", dt, ggot, gwant, nin, desc);
          if (CHECK_STATUS(run_backward(ctx2, dt, layout, &pb, ggot, raw2), VO_OK))
            CHECK_MSG(memcmp(raw1, raw2, esz * (size_t)nin) == 0,
                      "backward %s [%s]: 1 and 2 threads differ", vt_dtype_name(dt), desc);
          if (CHECK_STATUS(run_backward(ctx3, dt, layout, &pb, ggot, raw2), VO_OK))
            CHECK_MSG(memcmp(raw1, raw2, esz * (size_t)nin) == 0,
                      "backward %s [%s]: 3 threads differ", vt_dtype_name(dt), desc);
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
  for (int rep = 0; rep < 2; rep++) {
    vt_rng rng;
    vt_rng_seed(&rng, 77 + (uint64_t)rep);
    double rois[4 * 5] = {0, -1.3, 0.7, 4.1, 3.9, 1, 2.2, 1.1, 7.5, 6.0,
                          0, 0.4,  0.3, 1.2, 0.9, 1, 2.0, 1.0, 2.0, 4.0};
    problem pb = {2, 8, 5, 6, 4, 2, 2, rep ? 0.5 : 1.0, NULL, rois, NULL};
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
                "finite differences (rep %d): d/dinput[%lld] = %.12g, backward %.12g", rep,
                (long long)i, fd, gin[i]);
    }
  }
}

/* Double backward: the backward is linear in grad, and its gradient with
 * respect to grad is the forward: for random g and v,
 * sum(backward(g) * v) == sum(g * forward(v)). */
static void adjoint(void) {
  for (int rep = 0; rep < 4; rep++) {
    vt_rng rng;
    vt_rng_seed(&rng, 500 + (uint64_t)rep);
    problem pb = {2, 18, 6, 7, 6, 3, 3, rep % 2 ? 0.5 : 0.25, NULL, NULL, NULL};
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
              "adjoint (rep %d): sum(backward(g) v) = %.17g, sum(g forward(v)) = %.17g", rep, lhs,
              rhs);
  }
}

/* ------------------------------------------------------------ errors */

#define EXPECT_FAIL(call, status, arg) RT_EXPECT_FAIL("ps_roi_pool", call, status, arg)

static void errors(void) {
  /* C = 8, 2x2 bins: 2 output channels */
  const int64_t in_shape[4] = {2, 8, 4, 5}, roi_shape[2] = {2, 5}, out_shape[4] = {2, 2, 2, 2};
  const double roi_values[10] = {0, 0, 0, 2, 2, 1, 1, 1, 3, 3};
  problem pb = {2, 8, 4, 5, 2, 2, 2, 1.0, NULL, NULL, NULL};
  vt_tensor *in = vt_tensor_new(vt_f32, 4, in_shape, NULL);
  vt_tensor *rois = vt_tensor_new(vt_f32, 2, roi_shape, roi_values);
  vt_tensor *out = vt_tensor_new(vt_f32, 4, out_shape, NULL);
  vt_tensor *map = vt_tensor_new(vt_i32, 4, out_shape, NULL);
  vt_tensor *good_map = make_mapping(&pb);
  vt_tensor *gin = vt_tensor_new(vt_f32, 4, in_shape, NULL);
  vt_tensor *g2 = vt_tensor_new(vt_f32, 4, out_shape, NULL);
  const DLTensor *I = &in->dl, *R = &rois->dl, *G = &g2->dl, *GM = &good_map->dl;
  DLTensor *O = &out->dl, *M = &map->dl, *GI = &gin->dl;

  CHECK_STATUS(vo_ps_roi_pool(NULL, I, R, 1.0, 2, 2, O, M), VO_OK);
  CHECK_STATUS(vo_ps_roi_pool_backward(NULL, G, R, GM, 1.0, 2, 2, 2, 8, 4, 5, GI), VO_OK);
  vt_fill(O, 55.5);
  vt_fill(M, 55);
  vt_fill(GI, 55.5);

  /* channel grouping */
  const int64_t in6_shape[4] = {2, 6, 4, 5};
  vt_tensor *in6 = vt_tensor_new(vt_f32, 4, in6_shape, NULL);
  EXPECT_FAIL(vo_ps_roi_pool(NULL, &in6->dl, R, 1.0, 2, 2, O, M), VO_ERROR_INVALID_ARGUMENT,
              "input has C = 6 channels, which is not a multiple of pooled_height * "
              "pooled_width = 4");
  EXPECT_FAIL(vo_ps_roi_pool(NULL, I, R, 1.0, 3, 1, O, M), VO_ERROR_INVALID_ARGUMENT,
              "input has C = 8 channels");
  EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, R, GM, 1.0, 2, 2, 2, 6, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "channels = 6 is not a multiple");
  EXPECT_FAIL(vo_ps_roi_pool(NULL, I, R, 1.0, (int64_t)1 << 40, (int64_t)1 << 40, O, M),
              VO_ERROR_INVALID_ARGUMENT, "pooled_height * pooled_width");
  EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, R, GM, 1.0, 2, 2, 2, (int64_t)1 << 32, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "channels: 4294967296 channels are more than the int32");
  /* shapes */
  const int64_t s3[3] = {8, 4, 5}, r4[2] = {2, 4};
  vt_tensor *in3 = vt_tensor_new(vt_f32, 3, s3, NULL);
  vt_tensor *rois4 = vt_tensor_new(vt_f32, 2, r4, NULL);
  EXPECT_FAIL(vo_ps_roi_pool(NULL, &in3->dl, R, 1.0, 2, 2, O, M), VO_ERROR_INVALID_ARGUMENT,
              "input");
  EXPECT_FAIL(vo_ps_roi_pool(NULL, I, &rois4->dl, 1.0, 2, 2, O, M), VO_ERROR_INVALID_ARGUMENT,
              "rois");
  EXPECT_FAIL(vo_ps_roi_pool(NULL, I, R, 1.0, 0, 2, O, M), VO_ERROR_INVALID_ARGUMENT,
              "pooled_height");
  EXPECT_FAIL(vo_ps_roi_pool(NULL, I, R, 1.0, 2, -3, O, M), VO_ERROR_INVALID_ARGUMENT,
              "pooled_width");
  EXPECT_FAIL(vo_ps_roi_pool(NULL, I, R, -1.0, 2, 2, O, M), VO_ERROR_INVALID_ARGUMENT,
              "spatial_scale");
  EXPECT_FAIL(vo_ps_roi_pool(NULL, I, R, NAN, 2, 2, O, M), VO_ERROR_INVALID_ARGUMENT,
              "spatial_scale");
  /* batch indices and coordinates */
  for (size_t i = 0; i < RT_NUM_BAD_ROIS_SHORT; i++) {
    const rt_bad_roi *bad = &rt_bad_rois_short[i];
    vt_tensor *r = rt_bad_rois_tensor(bad, roi_values);
    EXPECT_FAIL(vo_ps_roi_pool(NULL, I, &r->dl, 1.0, 2, 2, O, M), VO_ERROR_INVALID_ARGUMENT,
                bad->needle);
    EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, &r->dl, GM, 1.0, 2, 2, 2, 8, 4, 5, GI),
                VO_ERROR_INVALID_ARGUMENT, bad->needle);
    vt_tensor_free(r);
  }
  /* backward: grad and channel_mapping shapes, dtype and values; sizes */
  EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, R, GM, 1.0, 2, 2, 2, 16, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "grad");
  EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, R, GM, 1.0, 1, 4, 2, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "grad");
  EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, &rois4->dl, GM, 1.0, 2, 2, 2, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "rois");
  const int64_t m_short[4] = {1, 2, 2, 2};
  vt_tensor *map_short = vt_tensor_new(vt_i32, 4, m_short, NULL);
  EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, R, &map_short->dl, 1.0, 2, 2, 2, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "channel_mapping must have shape [2, 2, 2, 2]");
  vt_tensor *map64 = vt_tensor_new(vt_i64, 4, out_shape, NULL);
  EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, R, &map64->dl, 1.0, 2, 2, 2, 8, 4, 5, GI),
              VO_ERROR_UNSUPPORTED_DTYPE, "channel_mapping must be int32");
  vt_tensor *map_bad = make_mapping(&pb);
  vt_set(&map_bad->dl, 13, 99); /* [1, 1, 0, 1]: the forward writes 5 */
  EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, R, &map_bad->dl, 1.0, 2, 2, 2, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "channel_mapping[1, 1, 0, 1] = 99, expected 5");
  EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, R, GM, 1.0, 2, 2, -1, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "batch_size");
  EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, R, GM, 1.0, 2, 2, 2, 8, -4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "height");
  EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, R, GM, 0.0, 2, 2, 2, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "spatial_scale");
  EXPECT_FAIL(vo_ps_roi_pool_backward(NULL, G, R, GM, 1.0, 2, 0, 2, 8, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "pooled_width");
  /* wrong output shape or dtype (the dispatcher's checks) */
  EXPECT_FAIL(vo_ps_roi_pool(NULL, I, R, 1.0, 1, 2, O, M), VO_ERROR_INVALID_ARGUMENT, "output");
  EXPECT_FAIL(vo_ps_roi_pool(NULL, I, R, 1.0, 2, 2, O, &map64->dl), VO_ERROR_UNSUPPORTED_DTYPE,
              "output channel_mapping must be int32");
  /* dtypes */
  /* rois of any floating dtype are accepted (test_mixed_precision.c), integer ones are not */
  vt_tensor *r64 = vt_tensor_new(vt_i64, 2, roi_shape, roi_values);
  EXPECT_FAIL(vo_ps_roi_pool(NULL, I, &r64->dl, 1.0, 2, 2, O, M), VO_ERROR_UNSUPPORTED_DTYPE,
              "rois must be float32, float64, float16 or bfloat16 (any floating dtype beside "
              "input's float32), got int64");
  vt_tensor *ii = vt_tensor_new(vt_i64, 4, in_shape, NULL);
  EXPECT_FAIL(vo_ps_roi_pool(NULL, &ii->dl, R, 1.0, 2, 2, O, M), VO_ERROR_UNSUPPORTED_DTYPE,
              "input");

  /* nothing was written by any failed call */
  int clean = 1;
  for (int64_t i = 0; i < vt_numel(O); i++) clean &= vt_get(O, i) == 55.5;
  for (int64_t i = 0; i < vt_numel(M); i++) clean &= vt_get(M, i) == 55;
  for (int64_t i = 0; i < vt_numel(GI); i++) clean &= vt_get(GI, i) == 55.5;
  CHECK_MSG(clean, "a failed ps_roi_pool call wrote its output");

  vt_tensor *all[] = {in,  rois,  out,   map,     good_map,  gin, g2, in6,
                      in3, rois4, map64, map_bad, map_short, r64, ii};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

/* Tensors that claim to live on a CUDA device: not read, and (without a
 * CUDA ps_roi_pool) the backend is reported unavailable. */
static void cuda_device(void) {
  static float fake_in[2 * 4 * 4 * 5], fake_rois[2 * 5], fake_out[2 * 1 * 2 * 2];
  static int32_t fake_map[2 * 1 * 2 * 2];
  int64_t in_shape[4] = {2, 4, 4, 5}, roi_shape[2] = {2, 5}, out_shape[4] = {2, 1, 2, 2};
  DLTensor in = {fake_in, {kDLCUDA, 0}, 4, {kDLFloat, 32, 1}, in_shape, NULL, 0};
  DLTensor rois = {fake_rois, {kDLCUDA, 0}, 2, {kDLFloat, 32, 1}, roi_shape, NULL, 0};
  DLTensor out = {fake_out, {kDLCUDA, 0}, 4, {kDLFloat, 32, 1}, out_shape, NULL, 0};
  DLTensor map = {fake_map, {kDLCUDA, 0}, 4, {kDLInt, 32, 1}, out_shape, NULL, 0};
  CHECK_STATUS(vo_ps_roi_pool(NULL, &in, &rois, 1.0, 2, 2, &out, &map),
               VO_ERROR_BACKEND_UNAVAILABLE);
  CHECK_ERROR_HAS("ps_roi_pool");
  CHECK_STATUS(vo_ps_roi_pool_backward(NULL, &out, &rois, &map, 1.0, 2, 2, 2, 4, 4, 5, &in),
               VO_ERROR_BACKEND_UNAVAILABLE);
  CHECK_ERROR_HAS("ps_roi_pool_backward");
}

/* Empty shapes: no RoIs, no channels, an empty map. */
static void empty_shapes(void) {
  double roi[5] = {0, 0, 0, 3, 3};
  double in16[64];
  for (int i = 0; i < 64; i++) in16[i] = i;
  problem pb0 = {1, 4, 4, 4, 0, 2, 2, 1.0, in16, roi, NULL};
  double out[8], gin[64];
  CHECK_STATUS(run_forward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb0, out, NULL), VO_OK);
  CHECK_STATUS(run_backward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb0, gin, NULL), VO_OK);
  int zero = 1;
  for (int i = 0; i < 64; i++) zero &= gin[i] == 0;
  CHECK_MSG(zero, "backward with no RoIs must zero grad_input");
  /* C = 0: an empty output */
  problem pb1 = {1, 0, 4, 4, 1, 2, 2, 1.0, in16, roi, NULL};
  CHECK_STATUS(run_forward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb1, out, NULL), VO_OK);
  CHECK_STATUS(run_backward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb1, gin, NULL), VO_OK);
  /* H = W = 0: every sample is outside */
  double g4[4] = {1, 1, 1, 1};
  problem pb2 = {1, 4, 0, 0, 1, 2, 2, 1.0, in16, roi, g4};
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
  CHECK_STATUS(vo_context_set_num_threads(ctx3, 3), VO_OK);
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
  return vt_finish("test_ps_roi_pool");
}
