/* deform_conv2d and its backward on the CPU: against a direct 7-loop
 * reference written from SPEC.md section 3, finite differences, tiling, errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define NUM_DTYPES 4
static const DLDataType *const dtypes[NUM_DTYPES] = {&vt_f32, &vt_f64, &vt_f16, &vt_bf16};

/* One problem; values are logical row-major doubles. */
typedef struct problem {
  int64_t n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups, og;
  int has_mask, has_bias;
  double *x, *wt, *off, *mask, *bias;
} problem;

static int64_t hout(const problem *p) {
  return (p->h + 2 * p->ph - (p->dh * (p->kh - 1) + 1)) / p->sh + 1;
}
static int64_t wout(const problem *p) {
  return (p->w + 2 * p->pw - (p->dw * (p->kw - 1) + 1)) / p->sw + 1;
}
static int64_t n_x(const problem *p) { return p->n * p->cin * p->h * p->w; }
static int64_t n_w(const problem *p) { return p->cout * (p->cin / p->groups) * p->kh * p->kw; }
static int64_t n_off(const problem *p) {
  return p->n * 2 * p->og * p->kh * p->kw * hout(p) * wout(p);
}
static int64_t n_mask(const problem *p) { return p->n * p->og * p->kh * p->kw * hout(p) * wout(p); }
static int64_t n_out(const problem *p) { return p->n * p->cout * hout(p) * wout(p); }

/* ------------------------------------------------------------ reference */

/* SPEC's bilinear0: 0 outside (-1, H) x (-1, W) (and for NaN), floor corners. */
static double ref_bilinear(const double *plane, int64_t h, int64_t w, double y, double x) {
  if (!(y > -1 && y < (double)h && x > -1 && x < (double)w)) return 0;
  double yf = floor(y), xf = floor(x), ly = y - yf, lx = x - xf;
  int64_t yl = (int64_t)yf, xl = (int64_t)xf;
  double v = 0;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      int64_t yy = yl + a, xx = xl + b;
      if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
      v += (a ? ly : 1 - ly) * (b ? lx : 1 - lx) * plane[yy * w + xx];
    }
  return v;
}

/* The direct form: out[n,co,oy,ox] = bias + sum over (ci, i, j) of weight *
 * mask * sample. `plain` ignores offset and mask and reads integer taps
 * (ordinary zero-padded convolution). `mag` gets the sum of |terms|. */
static void ref_forward(const problem *p, int plain, double *out, double *mag) {
  const int64_t ho = hout(p), wo = wout(p), cg = p->cin / p->groups, cog = p->cout / p->groups;
  const int64_t taps = p->kh * p->kw, per_og = p->cin / p->og;
  for (int64_t n = 0; n < p->n; n++)
    for (int64_t co = 0; co < p->cout; co++)
      for (int64_t oy = 0; oy < ho; oy++)
        for (int64_t ox = 0; ox < wo; ox++) {
          double s = p->has_bias ? p->bias[co] : 0, m_abs = fabs(s);
          for (int64_t ci = 0; ci < cg; ci++)
            for (int64_t i = 0; i < p->kh; i++)
              for (int64_t j = 0; j < p->kw; j++) {
                const int64_t c = co / cog * cg + ci, g = c / per_og, t = i * p->kw + j;
                const double *plane = p->x + (n * p->cin + c) * p->h * p->w;
                double y = (double)(oy * p->sh - p->ph + i * p->dh);
                double x = (double)(ox * p->sw - p->pw + j * p->dw);
                double v, m = 1;
                if (plain) {
                  int64_t yi = (int64_t)y, xi = (int64_t)x;
                  v = (yi >= 0 && yi < p->h && xi >= 0 && xi < p->w) ? plane[yi * p->w + xi] : 0;
                } else {
                  const int64_t o = ((n * 2 * p->og + 0) * taps) * ho * wo;
                  y += p->off[o + ((g * taps + t) * 2 * ho + oy) * wo + ox];
                  x += p->off[o + ((g * taps + t) * 2 * ho + ho + oy) * wo + ox];
                  if (p->has_mask)
                    m = p->mask[((n * p->og + g) * taps + t) * ho * wo + oy * wo + ox];
                  v = ref_bilinear(plane, p->h, p->w, y, x);
                }
                const double term = p->wt[((co * cg + ci) * p->kh + i) * p->kw + j] * m * v;
                s += term;
                m_abs += fabs(term);
              }
          const int64_t k = ((n * p->cout + co) * ho + oy) * wo + ox;
          out[k] = s;
          if (mag) mag[k] = m_abs;
        }
}

/* ------------------------------------------------------------ running */

static vt_tensor *make(DLDataType dt, int ndim, const int64_t *shape, const double *v,
                       int strided) {
  if (!strided) return vt_tensor_new(dt, ndim, shape, v);
  /* Padded strides (every dimension one element wider) and a byte offset. */
  int64_t st[4], acc = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    st[d] = acc;
    acc *= shape[d] + 1;
  }
  return vt_tensor_strided(dt, ndim, shape, st, 2 * vt_dtype_bytes(dt), v);
}

typedef struct tensors {
  vt_tensor *x, *wt, *off, *mask, *bias;
} tensors;

static tensors make_inputs(const problem *p, DLDataType dt, int strided) {
  const int64_t ho = hout(p), wo = wout(p), taps = p->kh * p->kw;
  const int64_t xs[4] = {p->n, p->cin, p->h, p->w};
  const int64_t ws[4] = {p->cout, p->cin / p->groups, p->kh, p->kw};
  const int64_t os[4] = {p->n, 2 * p->og * taps, ho, wo};
  const int64_t ms[4] = {p->n, p->og * taps, ho, wo};
  const int64_t bs[1] = {p->cout};
  tensors t;
  t.x = make(dt, 4, xs, p->x, strided);
  t.wt = make(dt, 4, ws, p->wt, strided);
  t.off = make(dt, 4, os, p->off, strided);
  t.mask = p->has_mask ? make(dt, 4, ms, p->mask, strided) : NULL;
  t.bias = p->has_bias ? make(dt, 1, bs, p->bias, strided) : NULL;
  return t;
}

static void free_inputs(tensors *t) {
  vt_tensor_free(t->x);
  vt_tensor_free(t->wt);
  vt_tensor_free(t->off);
  if (t->mask) vt_tensor_free(t->mask);
  if (t->bias) vt_tensor_free(t->bias);
}

static vo_status run_forward(const vo_context *ctx, const problem *p, DLDataType dt, int strided,
                             double *out) {
  tensors t = make_inputs(p, dt, strided);
  const int64_t os[4] = {p->n, p->cout, hout(p), wout(p)};
  vt_tensor *o = vt_tensor_new(dt, 4, os, NULL);
  vo_status st = vo_deform_conv2d(ctx, &t.x->dl, &t.wt->dl, &t.off->dl, t.mask ? &t.mask->dl : NULL,
                                  t.bias ? &t.bias->dl : NULL, p->sh, p->sw, p->ph, p->pw, p->dh,
                                  p->dw, p->groups, p->og, &o->dl);
  if (st == VO_OK) vt_read_all(&o->dl, out);
  vt_tensor_free(o);
  free_inputs(&t);
  return st;
}

/* The five gradients, in the order of the backward's outputs. */
typedef struct grads {
  double *gx, *gw, *goff, *gmask, *gbias;
} grads;

static grads grads_new(const problem *p) {
  grads g = {calloc((size_t)n_x(p) + 1, sizeof(double)), calloc((size_t)n_w(p) + 1, sizeof(double)),
             calloc((size_t)n_off(p) + 1, sizeof(double)),
             calloc((size_t)n_mask(p) + 1, sizeof(double)),
             calloc((size_t)p->cout + 1, sizeof(double))};
  return g;
}

static void grads_free(grads *g) {
  free(g->gx);
  free(g->gw);
  free(g->goff);
  free(g->gmask);
  free(g->gbias);
}

static vo_status run_backward(const vo_context *ctx, const problem *p, DLDataType dt, int strided,
                              const double *grad, grads *g) {
  tensors t = make_inputs(p, dt, strided);
  const int64_t ho = hout(p), wo = wout(p), taps = p->kh * p->kw;
  const int64_t gs[4] = {p->n, p->cout, ho, wo};
  const int64_t xs[4] = {p->n, p->cin, p->h, p->w};
  const int64_t ws[4] = {p->cout, p->cin / p->groups, p->kh, p->kw};
  const int64_t os[4] = {p->n, 2 * p->og * taps, ho, wo};
  const int64_t ms[4] = {p->n, p->og * taps, ho, wo};
  const int64_t bs[1] = {p->cout};
  vt_tensor *gr = make(dt, 4, gs, grad, strided);
  vt_tensor *o[5] = {vt_tensor_new(dt, 4, xs, NULL), vt_tensor_new(dt, 4, ws, NULL),
                     vt_tensor_new(dt, 4, os, NULL), vt_tensor_new(dt, 4, ms, NULL),
                     vt_tensor_new(dt, 1, bs, NULL)};
  for (int k = 0; k < 5; k++) vt_fill(&o[k]->dl, 77); /* every element must be overwritten */
  vo_status st = vo_deform_conv2d_backward(
      ctx, &gr->dl, &t.x->dl, &t.wt->dl, &t.off->dl, t.mask ? &t.mask->dl : NULL,
      t.bias ? &t.bias->dl : NULL, p->sh, p->sw, p->ph, p->pw, p->dh, p->dw, p->groups, p->og,
      &o[0]->dl, &o[1]->dl, &o[2]->dl, &o[3]->dl, &o[4]->dl);
  if (st == VO_OK) {
    vt_read_all(&o[0]->dl, g->gx);
    vt_read_all(&o[1]->dl, g->gw);
    vt_read_all(&o[2]->dl, g->goff);
    vt_read_all(&o[3]->dl, g->gmask);
    vt_read_all(&o[4]->dl, g->gbias);
  }
  for (int k = 0; k < 5; k++) vt_tensor_free(o[k]);
  vt_tensor_free(gr);
  free_inputs(&t);
  return st;
}

/* ------------------------------------------------------------ problems */

/* Random values, rounded to dtype; offsets keep every sampling position's
 * fractional part in [0.2, 0.8] so finite differences never cross a kink. */
static void fill_random(problem *p, DLDataType dt, vt_rng *rng) {
  p->x = calloc((size_t)(n_x(p) + 1), sizeof(double));
  p->wt = calloc((size_t)(n_w(p) + 1), sizeof(double));
  p->off = calloc((size_t)(n_off(p) + 1), sizeof(double));
  p->mask = calloc((size_t)(n_mask(p) + 1), sizeof(double));
  p->bias = calloc((size_t)(p->cout + 1), sizeof(double));
  for (int64_t i = 0; i < n_x(p); i++) p->x[i] = vt_round_to(dt, vt_rng_uniform(rng, -1, 1));
  for (int64_t i = 0; i < n_w(p); i++) p->wt[i] = vt_round_to(dt, vt_rng_uniform(rng, -1, 1));
  for (int64_t i = 0; i < n_off(p); i++) {
    double whole = (double)(vt_rng_int(rng, 5) - 2), frac = vt_rng_uniform(rng, 0.2, 0.8);
    p->off[i] = vt_round_to(dt, whole + frac);
  }
  for (int64_t i = 0; i < n_mask(p); i++) p->mask[i] = vt_round_to(dt, vt_rng_uniform(rng, 0, 1));
  for (int64_t i = 0; i < p->cout; i++) p->bias[i] = vt_round_to(dt, vt_rng_uniform(rng, -1, 1));
}

static void free_problem(problem *p) {
  free(p->x);
  free(p->wt);
  free(p->off);
  free(p->mask);
  free(p->bias);
}

/* The unusual parameters: Cin 6, Cout 4, kernel 3x2, groups 2,
 * offset groups 3, stride 2x1, padding 1x0, dilation 2x1, odd sizes. */
static problem unusual(int64_t n) {
  problem p = {n, 6, 7, 5, 4, 3, 2, 2, 1, 1, 0, 2, 1, 2, 3, 1, 1, NULL, NULL, NULL, NULL, NULL};
  return p;
}

static double tol_of(DLDataType dt) {
  if (dt.bits == 64) return 1e-12;
  if (dt.bits == 32) return 2e-6;
  return dt.code == kDLBfloat ? 1.6e-2 : 2e-3;
}

static void compare(const char *what, const double *got, const double *want, const double *mag,
                    int64_t count, double tol) {
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < count; i++)
    if (!(fabs(got[i] - want[i]) <= tol * (1 + (mag ? mag[i] : fabs(want[i]))))) {
      if (first < 0) first = i;
      bad++;
    }
  CHECK_MSG(bad == 0, "%s: %lld of %lld differ; first [%lld] got %.9g want %.9g", what,
            (long long)bad, (long long)count, (long long)first, first >= 0 ? got[first] : 0.0,
            first >= 0 ? want[first] : 0.0);
}

/* ------------------------------------------------------------ tests */

static void forward_vs_reference(vo_context *const *ctxs, int nctx) {
  vt_rng rng;
  vt_rng_seed(&rng, 7);
  for (int d = 0; d < NUM_DTYPES; d++)
    for (int64_t n = 1; n <= 5; n += 4)
      for (int variant = 0; variant < 4; variant++) {
        problem p = unusual(n);
        p.has_mask = variant & 1;
        p.has_bias = (variant >> 1) & 1;
        fill_random(&p, *dtypes[d], &rng);
        double *want = calloc((size_t)n_out(&p), sizeof(double));
        double *mag = calloc((size_t)n_out(&p), sizeof(double));
        double *got = calloc((size_t)n_out(&p), sizeof(double));
        ref_forward(&p, 0, want, mag);
        for (int c = 0; c < nctx; c++)
          for (int strided = 0; strided < 2; strided++) {
            char what[128];
            snprintf(what, sizeof what, "forward %s n=%lld mask=%d bias=%d ctx=%d strided=%d",
                     vt_dtype_name(*dtypes[d]), (long long)n, p.has_mask, p.has_bias, c, strided);
            if (CHECK_STATUS(run_forward(ctxs[c], &p, *dtypes[d], strided, got), VO_OK))
              compare(what, got, want, mag, n_out(&p), tol_of(*dtypes[d]));
          }
        free(want);
        free(mag);
        free(got);
        free_problem(&p);
      }
}

/* Zero offsets and a unit mask give an ordinary convolution. */
static void plain_convolution(void) {
  vt_rng rng;
  vt_rng_seed(&rng, 11);
  for (int d = 0; d < NUM_DTYPES; d++) {
    problem p = unusual(2);
    p.has_mask = 1;
    fill_random(&p, *dtypes[d], &rng);
    for (int64_t i = 0; i < n_off(&p); i++) p.off[i] = 0;
    for (int64_t i = 0; i < n_mask(&p); i++) p.mask[i] = 1;
    double *want = calloc((size_t)n_out(&p), sizeof(double));
    double *mag = calloc((size_t)n_out(&p), sizeof(double));
    double *got = calloc((size_t)n_out(&p), sizeof(double));
    ref_forward(&p, 1, want, mag);
    if (CHECK_STATUS(run_forward(NULL, &p, *dtypes[d], 0, got), VO_OK))
      compare("zero offsets = convolution", got, want, mag, n_out(&p), tol_of(*dtypes[d]));
    free(want);
    free(mag);
    free(got);
    free_problem(&p);
  }
}

/* d(sum(out * grad)) / d(param) by central differences of the reference. */
static double fd(problem *p, const double *grad, double *param) {
  const double eps = 1e-6, saved = *param;
  double *out = calloc((size_t)n_out(p), sizeof(double));
  double lp = 0, lm = 0;
  *param = saved + eps;
  ref_forward(p, 0, out, NULL);
  for (int64_t i = 0; i < n_out(p); i++) lp += out[i] * grad[i];
  *param = saved - eps;
  ref_forward(p, 0, out, NULL);
  for (int64_t i = 0; i < n_out(p); i++) lm += out[i] * grad[i];
  *param = saved;
  free(out);
  return (lp - lm) / (2 * eps);
}

static void check_fd(const char *what, problem *p, const double *grad, double *params,
                     const double *got, int64_t count) {
  int64_t bad = 0, first = -1;
  double want_first = 0;
  for (int64_t i = 0; i < count; i++) {
    double want = fd(p, grad, &params[i]);
    if (!(fabs(got[i] - want) <= 1e-6 * (1 + fabs(want)))) {
      if (first < 0) {
        first = i;
        want_first = want;
      }
      bad++;
    }
  }
  CHECK_MSG(bad == 0,
            "%s: %lld of %lld differ from finite differences; first [%lld] got %.12g want %.12g",
            what, (long long)bad, (long long)count, (long long)first, first >= 0 ? got[first] : 0.0,
            want_first);
}

static void backward_vs_finite_differences(vo_context *const *ctxs, int nctx) {
  vt_rng rng;
  vt_rng_seed(&rng, 23);
  for (int variant = 0; variant < 2; variant++) {
    problem p = unusual(variant ? 1 : 2);
    p.has_mask = variant == 0;
    p.has_bias = variant == 0;
    fill_random(&p, vt_f64, &rng);
    double *grad = calloc((size_t)n_out(&p), sizeof(double));
    for (int64_t i = 0; i < n_out(&p); i++) grad[i] = vt_rng_uniform(&rng, -1, 1);
    grads g = grads_new(&p);
    if (CHECK_STATUS(run_backward(NULL, &p, vt_f64, 1, grad, &g), VO_OK)) {
      check_fd("grad_input", &p, grad, p.x, g.gx, n_x(&p));
      check_fd("grad_weight", &p, grad, p.wt, g.gw, n_w(&p));
      check_fd("grad_offset", &p, grad, p.off, g.goff, n_off(&p));
      if (p.has_mask) {
        check_fd("grad_mask", &p, grad, p.mask, g.gmask, n_mask(&p));
        check_fd("grad_bias", &p, grad, p.bias, g.gbias, p.cout);
      } else {
        int zero = 1;
        for (int64_t i = 0; i < n_mask(&p); i++) zero &= g.gmask[i] == 0;
        CHECK_MSG(zero, "grad_mask without a mask must be zeros");
        /* without a bias, grad_bias is still the sum of grad */
        const int64_t plane = hout(&p) * wout(&p);
        for (int64_t co = 0; co < p.cout; co++) {
          double s = 0;
          for (int64_t n = 0; n < p.n; n++)
            for (int64_t i = 0; i < plane; i++) s += grad[(n * p.cout + co) * plane + i];
          CHECK_MSG(fabs(g.gbias[co] - s) <= 1e-12 * (1 + fabs(s)), "grad_bias[%lld]",
                    (long long)co);
        }
      }
    }
    /* every dtype and context against the float64 result */
    const int64_t counts[5] = {n_x(&p), n_w(&p), n_off(&p), n_mask(&p), p.cout};
    for (int d = 0; d < NUM_DTYPES; d++)
      for (int c = 0; c < nctx; c++) {
        problem r = p;                     /* same values, rounded to dtype */
        fill_random(&r, *dtypes[d], &rng); /* storage of the right sizes */
        for (int64_t i = 0; i < n_x(&p); i++) r.x[i] = vt_round_to(*dtypes[d], p.x[i]);
        for (int64_t i = 0; i < n_w(&p); i++) r.wt[i] = vt_round_to(*dtypes[d], p.wt[i]);
        for (int64_t i = 0; i < n_off(&p); i++) r.off[i] = vt_round_to(*dtypes[d], p.off[i]);
        for (int64_t i = 0; i < n_mask(&p); i++) r.mask[i] = vt_round_to(*dtypes[d], p.mask[i]);
        for (int64_t i = 0; i < p.cout; i++) r.bias[i] = vt_round_to(*dtypes[d], p.bias[i]);
        double *gq = calloc((size_t)n_out(&p), sizeof(double));
        for (int64_t i = 0; i < n_out(&p); i++) gq[i] = vt_round_to(*dtypes[d], grad[i]);
        grads want = grads_new(&p), got = grads_new(&p);
        if (CHECK_STATUS(run_backward(NULL, &r, vt_f64, 0, gq, &want), VO_OK) &&
            CHECK_STATUS(run_backward(ctxs[c], &r, *dtypes[d], c & 1, gq, &got), VO_OK)) {
          double *w5[5] = {want.gx, want.gw, want.goff, want.gmask, want.gbias};
          double *g5[5] = {got.gx, got.gw, got.goff, got.gmask, got.gbias};
          static const char *names[5] = {"grad_input", "grad_weight", "grad_offset", "grad_mask",
                                         "grad_bias"};
          for (int k = 0; k < 5; k++) {
            double scale = 0;
            for (int64_t i = 0; i < counts[k]; i++) scale = fmax(scale, fabs(w5[k][i]));
            char what[128];
            snprintf(what, sizeof what, "backward %s %s ctx=%d", vt_dtype_name(*dtypes[d]),
                     names[k], c);
            double tol = tol_of(*dtypes[d]) * 8 * (1 + scale);
            int64_t bad = 0;
            for (int64_t i = 0; i < counts[k]; i++) bad += !(fabs(g5[k][i] - w5[k][i]) <= tol);
            CHECK_MSG(bad == 0, "%s: %lld differ", what, (long long)bad);
          }
        }
        grads_free(&want);
        grads_free(&got);
        free(gq);
        free_problem(&r);
      }
    grads_free(&g);
    free(grad);
    free_problem(&p);
  }
}

/* A workspace that holds a few columns gives the large one's result, and one
 * too small for a single column is a clear error. */
static void tiny_workspace(void) {
  vo_context *small = NULL, *tiny = NULL;
  CHECK_STATUS(vo_context_create(&small), VO_OK);
  CHECK_STATUS(vo_context_create(&tiny), VO_OK);
  /* the weights, their gradient and bias, plus about 3 columns (each ~2 KiB
   * in float64 with its sampling plan) */
  CHECK_STATUS(vo_context_set_workspace_limit(small, 8000), VO_OK);
  CHECK_STATUS(vo_context_set_workspace_limit(tiny, 16), VO_OK);
  vt_rng rng;
  vt_rng_seed(&rng, 5);
  problem p = unusual(5);
  p.has_mask = p.has_bias = 1;
  fill_random(&p, vt_f64, &rng);
  double *a = calloc((size_t)n_out(&p), sizeof(double));
  double *b = calloc((size_t)n_out(&p), sizeof(double));
  if (CHECK_STATUS(run_forward(NULL, &p, vt_f64, 0, a), VO_OK) &&
      CHECK_STATUS(run_forward(small, &p, vt_f64, 0, b), VO_OK))
    compare("tiny workspace forward", b, a, NULL, n_out(&p), 1e-13);
  double *grad = calloc((size_t)n_out(&p), sizeof(double));
  for (int64_t i = 0; i < n_out(&p); i++) grad[i] = vt_rng_uniform(&rng, -1, 1);
  grads ga = grads_new(&p), gb = grads_new(&p);
  if (CHECK_STATUS(run_backward(NULL, &p, vt_f64, 0, grad, &ga), VO_OK) &&
      CHECK_STATUS(run_backward(small, &p, vt_f64, 0, grad, &gb), VO_OK)) {
    compare("tiny workspace grad_input", gb.gx, ga.gx, NULL, n_x(&p), 1e-13);
    compare("tiny workspace grad_weight", gb.gw, ga.gw, NULL, n_w(&p), 1e-13);
    compare("tiny workspace grad_offset", gb.goff, ga.goff, NULL, n_off(&p), 1e-13);
    compare("tiny workspace grad_mask", gb.gmask, ga.gmask, NULL, n_mask(&p), 1e-13);
    compare("tiny workspace grad_bias", gb.gbias, ga.gbias, NULL, p.cout, 1e-13);
  }
  if (CHECK_STATUS(run_forward(tiny, &p, vt_f64, 0, b), VO_ERROR_OUT_OF_MEMORY))
    CHECK_ERROR_HAS("workspace limit");
  grads_free(&ga);
  grads_free(&gb);
  free(grad);
  free(a);
  free(b);
  free_problem(&p);
  vo_context_destroy(small);
  vo_context_destroy(tiny);
}

/* Tiles of several images (a tile takes whole small images together, as many
 * as the workspace holds, fewer at the batch's end) give what tiles of part
 * of one image give, forward and backward, in every dtype: a sweep of
 * workspace limits from a few columns per tile to the whole batch in one
 * (the half types' float32 accumulators then hold several images). */
static void tiles_of_several_images(void) {
  static const size_t limits[] = {6000,  12000, 24000,  36000,  48000,  64000,
                                  80000, 96000, 128000, 160000, 1 << 20};
  const int nlim = (int)(sizeof limits / sizeof limits[0]);
  for (int d = 0; d < NUM_DTYPES; d++) {
    const DLDataType dt = *dtypes[d];
    vt_rng rng;
    vt_rng_seed(&rng, 11 + (uint64_t)d);
    problem p = unusual(5);
    p.has_mask = p.has_bias = 1;
    fill_random(&p, dt, &rng);
    double *want = calloc((size_t)n_out(&p), sizeof(double));
    double *mag = calloc((size_t)n_out(&p), sizeof(double));
    double *got = calloc((size_t)n_out(&p), sizeof(double));
    double *grad = calloc((size_t)n_out(&p), sizeof(double));
    for (int64_t i = 0; i < n_out(&p); i++) grad[i] = vt_round_to(dt, vt_rng_uniform(&rng, -1, 1));
    ref_forward(&p, 0, want, mag);
    grads first = grads_new(&p), g = grads_new(&p);
    int have_first = 0, ran = 0;
    const double tol = tol_of(dt) * 4;
    for (int k = 0; k < nlim; k++) {
      vo_context *ctx = NULL;
      CHECK_STATUS(vo_context_create(&ctx), VO_OK);
      CHECK_STATUS(vo_context_set_num_threads(ctx, 1 + k % 2), VO_OK);
      CHECK_STATUS(vo_context_set_workspace_limit(ctx, limits[k]), VO_OK);
      char what[160];
      const vo_status fs = run_forward(ctx, &p, dt, k % 3 == 1, got);
      if (fs == VO_ERROR_OUT_OF_MEMORY) { /* not one column fits: the sweep's start */
        CHECK_ERROR_HAS("workspace limit");
        vo_context_destroy(ctx);
        continue;
      }
      ran++;
      snprintf(what, sizeof what, "several images %s limit %zu forward", vt_dtype_name(dt),
               limits[k]);
      if (CHECK_STATUS(fs, VO_OK)) compare(what, got, want, mag, n_out(&p), tol_of(dt));
      if (CHECK_STATUS(run_backward(ctx, &p, dt, k % 3 == 2, grad, &g), VO_OK)) {
        if (!have_first) {
          grads_free(&first);
          first = g;
          g = grads_new(&p);
          have_first = 1;
        } else {
          const double *gv[5] = {g.gx, g.gw, g.goff, g.gmask, g.gbias};
          const double *fv[5] = {first.gx, first.gw, first.goff, first.gmask, first.gbias};
          const int64_t counts[5] = {n_x(&p), n_w(&p), n_off(&p), n_mask(&p), p.cout};
          static const char *const names[5] = {"grad_input", "grad_weight", "grad_offset",
                                               "grad_mask", "grad_bias"};
          for (int j = 0; j < 5; j++) {
            snprintf(what, sizeof what, "several images %s limit %zu %s", vt_dtype_name(dt),
                     limits[k], names[j]);
            compare(what, gv[j], fv[j], NULL, counts[j], tol);
          }
        }
      }
      vo_context_destroy(ctx);
    }
    CHECK_MSG(ran >= nlim - 2, "several images %s: only %d of %d limits ran", vt_dtype_name(dt),
              ran, nlim);
    grads_free(&first);
    grads_free(&g);
    free(want);
    free(mag);
    free(got);
    free(grad);
    free_problem(&p);
  }
}

/* NaN offsets sample zero and crash nothing. */
static void nan_offsets(void) {
  vt_rng rng;
  vt_rng_seed(&rng, 3);
  problem p = unusual(1);
  p.has_mask = 1;
  fill_random(&p, vt_f32, &rng);
  for (int64_t i = 0; i < n_off(&p); i += 3) p.off[i] = NAN;
  double *want = calloc((size_t)n_out(&p), sizeof(double));
  double *mag = calloc((size_t)n_out(&p), sizeof(double));
  double *got = calloc((size_t)n_out(&p), sizeof(double));
  ref_forward(&p, 0, want, mag);
  if (CHECK_STATUS(run_forward(NULL, &p, vt_f32, 0, got), VO_OK))
    compare("NaN offsets", got, want, mag, n_out(&p), tol_of(vt_f32));
  grads g = grads_new(&p);
  CHECK_STATUS(run_backward(NULL, &p, vt_f32, 0, want, &g), VO_OK);
  int finite = 1;
  for (int64_t i = 0; i < n_x(&p); i++) finite &= isfinite(g.gx[i]);
  CHECK_MSG(finite, "grad_input must stay finite with NaN offsets");
  grads_free(&g);
  free(want);
  free(mag);
  free(got);
  free_problem(&p);
}

#define EXPECT_FAIL(call, needle)                          \
  do {                                                     \
    if (CHECK_STATUS((call), VO_ERROR_INVALID_ARGUMENT)) { \
      CHECK_ERROR_HAS("deform_conv2d");                    \
      CHECK_ERROR_HAS(needle);                             \
    }                                                      \
  } while (0)

static void errors(void) {
  /* A valid call: N 2, Cin 4, 5x5, Cout 2, 3x3, groups 2, og 2 -> 3x3 output. */
  const int64_t xs[4] = {2, 4, 5, 5}, ws[4] = {2, 2, 3, 3}, os[4] = {2, 36, 3, 3},
                ms[4] = {2, 18, 3, 3}, bs[1] = {2}, outs[4] = {2, 2, 3, 3};
  vt_tensor *x = vt_tensor_new(vt_f32, 4, xs, NULL), *w = vt_tensor_new(vt_f32, 4, ws, NULL);
  vt_tensor *o = vt_tensor_new(vt_f32, 4, os, NULL), *m = vt_tensor_new(vt_f32, 4, ms, NULL);
  vt_tensor *b = vt_tensor_new(vt_f32, 1, bs, NULL), *out = vt_tensor_new(vt_f32, 4, outs, NULL);
  DLTensor *X = &x->dl, *W = &w->dl, *O = &o->dl, *M = &m->dl, *B = &b->dl, *Y = &out->dl;
  vt_fill(Y, 55.5);
  CHECK_STATUS(vo_deform_conv2d(NULL, X, W, O, M, B, 1, 1, 0, 0, 1, 1, 2, 2, Y), VO_OK);
  vt_fill(Y, 55.5);

  const int64_t w3s[4] = {2, 3, 3, 3}, w5s[4] = {3, 2, 3, 3}, o_bad[4] = {2, 30, 3, 3},
                m_bad[4] = {2, 9, 3, 3}, on[4] = {1, 36, 3, 3}, mn[4] = {1, 18, 3, 3},
                b_bad[1] = {3}, x5s[4] = {2, 5, 5, 5};
  vt_tensor *w3 = vt_tensor_new(vt_f32, 4, w3s, NULL), *w5 = vt_tensor_new(vt_f32, 4, w5s, NULL);
  vt_tensor *ob = vt_tensor_new(vt_f32, 4, o_bad, NULL),
            *mb = vt_tensor_new(vt_f32, 4, m_bad, NULL);
  vt_tensor *o1 = vt_tensor_new(vt_f32, 4, on, NULL), *m1 = vt_tensor_new(vt_f32, 4, mn, NULL);
  vt_tensor *bb = vt_tensor_new(vt_f32, 1, b_bad, NULL), *x5 = vt_tensor_new(vt_f32, 4, x5s, NULL);
  vt_tensor *w64 = vt_tensor_new(vt_f64, 4, ws, NULL);
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, &w3->dl, O, M, B, 1, 1, 0, 0, 1, 1, 2, 2, Y),
              "weight has 3 input channels per group");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, &w5->dl, O, M, B, 1, 1, 0, 0, 1, 1, 2, 2, Y), "Cout = 3");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, &ob->dl, M, B, 1, 1, 0, 0, 1, 1, 2, 2, Y),
              "offset has 30 channels");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, &mb->dl, B, 1, 1, 0, 0, 1, 1, 2, 2, Y),
              "mask has 9 channels");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, M, &bb->dl, 1, 1, 0, 0, 1, 1, 2, 2, Y), "bias");
  EXPECT_FAIL(vo_deform_conv2d(NULL, &x5->dl, W, O, M, B, 1, 1, 0, 0, 1, 1, 2, 2, Y),
              "not divisible by groups");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, M, B, 1, 1, 0, 0, 1, 1, 2, 3, Y),
              "not divisible by offset_groups");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, M, B, 0, 1, 0, 0, 1, 1, 2, 2, Y), "stride_h");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, M, B, 1, -2, 0, 0, 1, 1, 2, 2, Y), "stride_w");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, M, B, 1, 1, 0, 0, 0, 1, 2, 2, Y), "dilation_h");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, M, B, 1, 1, 0, 0, 1, -1, 2, 2, Y), "dilation_w");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, M, B, 1, 1, -1, 0, 1, 1, 2, 2, Y), "pad_h");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, M, B, 1, 1, 0, -1, 1, 1, 2, 2, Y), "pad_w");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, M, B, 1, 1, 0, 0, 1, 1, 0, 2, Y), "groups");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, M, B, 1, 1, 0, 0, 3, 1, 2, 2, Y),
              "output size would be below 1");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, &o1->dl, M, B, 1, 1, 0, 0, 1, 1, 2, 2, Y),
              "offset has batch size 1 but input has N = 2");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, &m1->dl, B, 1, 1, 0, 0, 1, 1, 2, 2, Y),
              "mask has batch size 1 but input has N = 2");
  EXPECT_FAIL(vo_deform_conv2d(NULL, X, W, O, M, B, 2, 1, 0, 0, 1, 1, 2, 2, Y),
              "offset must have spatial size");
  CHECK_STATUS(vo_deform_conv2d(NULL, X, &w64->dl, O, M, B, 1, 1, 0, 0, 1, 1, 2, 2, Y),
               VO_ERROR_UNSUPPORTED_DTYPE);
  CHECK_ERROR_HAS("weight");
  /* use_mask without a mask, through the boxed entry point */
  {
    const vo_value args[] = {vo_tensor_value(X),    vo_tensor_value(W), vo_tensor_value(O),
                             vo_tensor_value(NULL), vo_tensor_value(B), vo_int_value(1),
                             vo_int_value(1),       vo_int_value(0),    vo_int_value(0),
                             vo_int_value(1),       vo_int_value(1),    vo_int_value(2),
                             vo_int_value(2),       vo_bool_value(1)};
    DLTensor *const outs1[] = {Y};
    EXPECT_FAIL(vo_call(NULL, vo_op_find("deform_conv2d"), args, 14, outs1, 1),
                "use_mask is True but mask is None");
  }
  /* backward: grad shape */
  {
    const int64_t gbad[4] = {2, 2, 3, 4};
    vt_tensor *gb = vt_tensor_new(vt_f32, 4, gbad, NULL);
    vt_tensor *g0 = vt_tensor_new(vt_f32, 4, xs, NULL), *g1 = vt_tensor_new(vt_f32, 4, ws, NULL);
    vt_tensor *g2 = vt_tensor_new(vt_f32, 4, os, NULL), *g3 = vt_tensor_new(vt_f32, 4, ms, NULL);
    vt_tensor *g4 = vt_tensor_new(vt_f32, 1, bs, NULL);
    EXPECT_FAIL(vo_deform_conv2d_backward(NULL, &gb->dl, X, W, O, M, B, 1, 1, 0, 0, 1, 1, 2, 2,
                                          &g0->dl, &g1->dl, &g2->dl, &g3->dl, &g4->dl),
                "grad");
    EXPECT_FAIL(vo_deform_conv2d_backward(NULL, Y, X, W, &o1->dl, M, B, 1, 1, 0, 0, 1, 1, 2, 2,
                                          &g0->dl, &g1->dl, &g2->dl, &g3->dl, &g4->dl),
                "offset has batch size 1");
    CHECK_STATUS(vo_deform_conv2d_backward(NULL, Y, X, W, O, NULL, NULL, 1, 1, 0, 0, 1, 1, 2, 2,
                                           &g0->dl, &g1->dl, &g2->dl, &g3->dl, &g4->dl),
                 VO_OK);
    vt_tensor *gg[] = {gb, g0, g1, g2, g3, g4};
    for (size_t i = 0; i < sizeof gg / sizeof gg[0]; i++) vt_tensor_free(gg[i]);
  }
  int clean = 1;
  for (int64_t i = 0; i < vt_numel(Y); i++) clean &= vt_get(Y, i) == 55.5;
  CHECK_MSG(clean, "a failed deform_conv2d call wrote its output");
  vt_tensor *all[] = {x, w, o, m, b, out, w3, w5, ob, mb, o1, m1, bb, x5, w64};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

/* Empty batch, no input channels, no output channels: valid, and the
 * output (bias only, or nothing) is right. */
static void empty_shapes(void) {
  vt_rng rng;
  vt_rng_seed(&rng, 9);
  const int64_t shapes[3][3] = {{0, 6, 4}, {2, 0, 4}, {2, 6, 0}}; /* n, cin, cout */
  for (int k = 0; k < 3; k++) {
    problem p = unusual(shapes[k][0]);
    p.cin = shapes[k][1];
    p.cout = shapes[k][2];
    p.groups = p.og = 1;
    p.has_mask = p.has_bias = 1;
    fill_random(&p, vt_f64, &rng);
    double *want = calloc((size_t)n_out(&p) + 1, sizeof(double));
    double *got = calloc((size_t)n_out(&p) + 1, sizeof(double));
    ref_forward(&p, 0, want, NULL);
    if (CHECK_STATUS(run_forward(NULL, &p, vt_f64, 0, got), VO_OK))
      compare("empty shapes", got, want, NULL, n_out(&p), 1e-12);
    grads g = grads_new(&p);
    CHECK_STATUS(run_backward(NULL, &p, vt_f64, 0, want, &g), VO_OK);
    grads_free(&g);
    free(want);
    free(got);
    free_problem(&p);
  }
}

int main(void) {
  vo_context *ctxs[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; i++) {
    CHECK_STATUS(vo_context_create(&ctxs[i]), VO_OK);
    CHECK_STATUS(vo_context_set_num_threads(ctxs[i], i == 0 ? 1 : 2), VO_OK);
  }
  /* room for the weights and one to a few columns of the unusual problem */
  CHECK_STATUS(vo_context_set_workspace_limit(ctxs[2], 4000), VO_OK);
  forward_vs_reference(ctxs, 3);
  plain_convolution();
  backward_vs_finite_differences(ctxs, 3);
  tiny_workspace();
  tiles_of_several_images();
  nan_offsets();
  empty_shapes();
  errors();
  for (int i = 0; i < 3; i++) vo_context_destroy(ctxs[i]);
  return vt_finish("test_deform_conv2d");
}
