/*
 * soft_nms and batched_soft_nms through the typed C wrappers: against a
 * plain double reference written here from SPEC-NEXT 2.2 (mmcv's order of
 * operations, ties by lowest index, NaN scores first, NaN IoUs weighing 1),
 * in every method, offsets 0 and 1; mmcv's quirks (the first selected box
 * never tested against min_score), empty input, NaN scores and IoUs; the
 * padding; the batched op against a per-category loop of the single one;
 * thread counts 1, 2, 3 and the plain and AVX2 paths bit-identical; the
 * argument errors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* ------------------------------------------------------------ reference */

typedef struct params {
  double thr, sigma, min_score, offset;
  int method;
} params;

static int better(double s, double t) { return s > t || (isnan(s) && !isnan(t)); }

/* Soft-NMS of boxes b[n][4] with scores s over the members (ascending
 * original indices; all when NULL): kept indices and scores at selection
 * into keep / kept (n each); returns their count. */
static int64_t reference(const double *b, const double *s0, const int64_t *members, int64_t n,
                         const params *p, int64_t *keep, double *kept) {
  int64_t *alive = malloc(sizeof(int64_t) * (size_t)(n + 1));
  double *s = malloc(sizeof(double) * (size_t)(n + 1));
  int64_t m = n, count = 0;
  for (int64_t k = 0; k < n; k++) alive[k] = members ? members[k] : k, s[k] = s0[alive[k]];
  while (m > 0) {
    int64_t best = 0;
    for (int64_t k = 1; k < m; k++)
      if (better(s[k], s[best])) best = k;
    const int64_t i = alive[best];
    keep[count] = i, kept[count++] = s[best];
    const double *bi = b + 4 * i;
    const double ai = (bi[2] - bi[0] + p->offset) * (bi[3] - bi[1] + p->offset);
    int64_t w = 0;
    for (int64_t k = 0; k < m; k++) {
      if (k == best) continue;
      const double *bj = b + 4 * alive[k];
      const double aj = (bj[2] - bj[0] + p->offset) * (bj[3] - bj[1] + p->offset);
      const double iw = fmax(0, fmin(bi[2], bj[2]) - fmax(bi[0], bj[0]) + p->offset);
      const double ih = fmax(0, fmin(bi[3], bj[3]) - fmax(bi[1], bj[1]) + p->offset);
      const double inter = iw * ih, iou = inter / (ai + aj - inter);
      double weight = 1;
      if (isnan(iou))
        weight = 1;
      else if (p->method == 2)
        weight = exp(-iou * iou / p->sigma);
      else if (iou >= p->thr)
        weight = p->method == 1 ? 1 - iou : 0;
      const double v = s[k] * weight;
      if (v < p->min_score) continue;
      alive[w] = alive[k], s[w++] = v;
    }
    m = w;
  }
  free(alive), free(s);
  return count;
}

/* ------------------------------------------------------------ calls */

typedef struct call {
  vt_tensor *boxes, *scores, *idxs, *dets, *keep, *num;
  int64_t n;
} call;

static void call_init(call *c, DLDataType dt, int64_t n, const double *b, const double *s,
                      const double *ids) {
  const int64_t bs[2] = {n, 4}, vs[1] = {n}, ds[2] = {n, 5};
  c->n = n;
  c->boxes = vt_tensor_new(dt, 2, bs, b);
  c->scores = vt_tensor_new(dt, 1, vs, s);
  c->idxs = vt_tensor_new(vt_i64, 1, vs, ids);
  c->dets = vt_tensor_new(dt, 2, ds, NULL);
  c->keep = vt_tensor_new(vt_i64, 1, vs, NULL);
  c->num = vt_tensor_new(vt_i64, 0, NULL, NULL);
}

static void call_free(call *c) {
  vt_tensor_free(c->boxes), vt_tensor_free(c->scores), vt_tensor_free(c->idxs);
  vt_tensor_free(c->dets), vt_tensor_free(c->keep), vt_tensor_free(c->num);
}

static vo_status run(const vo_context *ctx, call *c, int batched, const params *p) {
  if (batched)
    return vo_batched_soft_nms(ctx, &c->boxes->dl, &c->scores->dl, &c->idxs->dl, p->thr, p->sigma,
                               p->min_score, p->method, p->offset, &c->dets->dl, &c->keep->dl,
                               &c->num->dl);
  return vo_soft_nms(ctx, &c->boxes->dl, &c->scores->dl, p->thr, p->sigma, p->min_score, p->method,
                     p->offset, &c->dets->dl, &c->keep->dl, &c->num->dl);
}

static int64_t num_kept(const call *c) { return (int64_t)vt_get(&c->num->dl, 0); }

/* The call's outputs against kept indices want[k] and scores wscore[k]:
 * indices exactly, scores within rel, the coordinates the input's, the
 * padding zero / -1. */
static void check_against(const call *c, int64_t k, const int64_t *want, const double *wscore,
                          double rel, const char *what) {
  if (!CHECK_MSG(num_kept(c) == k, "%s: kept %lld, want %lld", what, (long long)num_kept(c),
                 (long long)k))
    return;
  for (int64_t r = 0; r < c->n; r++) {
    const int64_t got = (int64_t)vt_get(&c->keep->dl, r);
    if (r >= k) {
      CHECK_MSG(got == -1, "%s: keep[%lld] = %lld past num_kept", what, (long long)r,
                (long long)got);
      for (int col = 0; col < 5; col++)
        CHECK_MSG(vt_get(&c->dets->dl, 5 * r + col) == 0, "%s: dets row %lld not zero", what,
                  (long long)r);
      continue;
    }
    if (!CHECK_MSG(got == want[r], "%s: keep[%lld] = %lld, want %lld", what, (long long)r,
                   (long long)got, (long long)want[r]))
      return;
    for (int col = 0; col < 4; col++)
      CHECK_MSG(vt_get(&c->dets->dl, 5 * r + col) == vt_get(&c->boxes->dl, 4 * got + col),
                "%s: dets[%lld] coordinate %d", what, (long long)r, col);
    const double gs = vt_get(&c->dets->dl, 5 * r + 4), ws = wscore[r];
    CHECK_MSG((isnan(gs) && isnan(ws)) || fabs(gs - ws) <= rel * fmax(1, fabs(ws)),
              "%s: score[%lld] = %.17g, want %.17g", what, (long long)r, gs, ws);
  }
}

/* Clustered boxes (integer corners when `integral`) and distinct scores. */
static void gen(vt_rng *rng, int64_t n, double extent, int integral, double *b, double *s) {
  const int64_t clusters = n / 12 + 1;
  for (int64_t i = 0; i < n; i++) {
    vt_rng g = {(uint64_t)vt_rng_int(rng, clusters) * 7919u + 17u};
    const double cx = vt_rng_uniform(&g, 0, extent), cy = vt_rng_uniform(&g, 0, extent);
    const double w = vt_rng_uniform(&g, 4, 60), h = vt_rng_uniform(&g, 4, 60);
    double *r = b + 4 * i;
    r[0] = cx + vt_rng_uniform(rng, -6, 6), r[1] = cy + vt_rng_uniform(rng, -6, 6);
    r[2] = r[0] + w * vt_rng_uniform(rng, 0.8, 1.2),
    r[3] = r[1] + h * vt_rng_uniform(rng, 0.8, 1.2);
    if (integral)
      for (int k = 0; k < 4; k++) r[k] = floor(r[k]);
    s[i] = (double)(i * 7919 % n + 1) / (double)(n + 1); /* distinct */
  }
}

/* ------------------------------------------------------------ tests */

static const params methods[] = {
    {0.3, 0.5, 1e-3, 0, 1},
    {0.3, 0.5, 1e-3, 1, 1},
    {0.5, 0.5, 1e-3, 0, 0},
    {0.5, 0.5, 0.05, 1, 0},
    {0.3, 0.5, 1e-3, 0, 2},
    {0.3, 0.1, 0.01, 1, 2},
    /* gaussian with small sigmas: exp's arguments down to -100 (float
     * subnormal weights) and -250 (weights 0), kept by min_score */
    {0.3, 0.01, 1e-30, 0, 2},
    {0.3, 0.004, 0, 0, 2},
};
#define NUM_METHODS ((int)(sizeof methods / sizeof methods[0]))

/* float64 against the reference, kept lists exactly; float32 (integer
 * boxes) too, scores to float accuracy (but for the small sigmas). */
static void test_reference(void) {
  vt_rng rng;
  vt_rng_seed(&rng, 17);
  static const int64_t sizes[] = {1, 2, 7, 64, 301};
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
    const int64_t n = sizes[z];
    double *b = malloc(sizeof(double) * (size_t)(4 * n)), *s = malloc(sizeof(double) * (size_t)n);
    int64_t *want = malloc(sizeof(int64_t) * (size_t)n);
    double *ws = malloc(sizeof(double) * (size_t)n);
    for (int integral = 0; integral < 2; integral++) {
      gen(&rng, n, 200, integral, b, s);
      for (int mi = 0; mi < NUM_METHODS; mi++) {
        const params *p = &methods[mi];
        const DLDataType dt = integral ? vt_f32 : vt_f64;
        /* the small sigmas' weights underflow float32 where the float64
         * reference keeps them, and the ties at 0 then order by index */
        if (dt.bits == 32 && p->sigma < 0.05) continue;
        const int64_t k = reference(b, s, NULL, n, p, want, ws);
        call c;
        call_init(&c, dt, n, b, s, NULL);
        char what[96];
        snprintf(what, sizeof what, "soft_nms %s n=%lld method %d offset %g", vt_dtype_name(dt),
                 (long long)n, p->method, p->offset);
        if (CHECK_STATUS(run(NULL, &c, 0, p), VO_OK))
          check_against(&c, k, want, ws, integral ? 2e-6 : 1e-12, what);
        call_free(&c);
      }
    }
    free(b), free(s), free(want), free(ws);
  }
}

/* mmcv's quirks and the NaN rules. */
static void test_quirks(void) {
  const params lin = {0.3, 0.5, 0.5, 0, 1}, gauss = {0.3, 0.5, 1e-3, 0, 2};
  call c;
  /* one box under min_score: returned (the first selection is not tested) */
  const double one[4] = {0, 0, 10, 10}, low[1] = {0.1};
  call_init(&c, vt_f32, 1, one, low, NULL);
  CHECK_STATUS(run(NULL, &c, 0, &lin), VO_OK);
  CHECK(num_kept(&c) == 1 && vt_get(&c.keep->dl, 0) == 0);
  CHECK(fabs(vt_get(&c.dets->dl, 4) - 0.1) < 1e-7);
  call_free(&c);
  /* every box under min_score: only the first selected (the highest) */
  const double far[12] = {0, 0, 1, 1, 10, 10, 11, 11, 20, 20, 21, 21}, lows[3] = {0.1, 0.3, 0.2};
  call_init(&c, vt_f64, 3, far, lows, NULL);
  CHECK_STATUS(run(NULL, &c, 0, &lin), VO_OK);
  CHECK(num_kept(&c) == 1 && vt_get(&c.keep->dl, 0) == 1);
  call_free(&c);
  /* empty input */
  call_init(&c, vt_f32, 0, NULL, NULL, NULL);
  CHECK_STATUS(run(NULL, &c, 0, &lin), VO_OK);
  CHECK(num_kept(&c) == 0);
  CHECK_STATUS(run(NULL, &c, 1, &lin), VO_OK);
  CHECK(num_kept(&c) == 0);
  call_free(&c);
  /* a NaN score is selected first; ties go to the lower index */
  const double nb[12] = {0, 0, 10, 10, 30, 30, 40, 40, 60, 60, 70, 70};
  const double ns[3] = {0.5, NAN, 0.5};
  call_init(&c, vt_f32, 3, nb, ns, NULL);
  CHECK_STATUS(run(NULL, &c, 0, &gauss), VO_OK);
  CHECK(num_kept(&c) == 3 && vt_get(&c.keep->dl, 0) == 1 && vt_get(&c.keep->dl, 1) == 0 &&
        vt_get(&c.keep->dl, 2) == 2);
  CHECK(isnan(vt_get(&c.dets->dl, 4)));
  call_free(&c);
  /* two zero-area boxes at one point, offset 0: IoU 0 / 0 = NaN weighs 1
   * (gaussian's formula would give NaN); with offset 1 they overlap fully */
  const double pts[8] = {5, 5, 5, 5, 5, 5, 5, 5}, ps[2] = {0.9, 0.8};
  call_init(&c, vt_f32, 2, pts, ps, NULL);
  CHECK_STATUS(run(NULL, &c, 0, &gauss), VO_OK);
  CHECK(num_kept(&c) == 2 && fabs(vt_get(&c.dets->dl, 9) - 0.8) < 1e-7);
  const params gauss1 = {0.3, 0.5, 1e-3, 1, 2};
  CHECK_STATUS(run(NULL, &c, 0, &gauss1), VO_OK);
  CHECK(num_kept(&c) == 2 && fabs(vt_get(&c.dets->dl, 9) - 0.8 * exp(-2.0)) < 1e-7);
  call_free(&c);
}

/* The batched op against a per-category loop of the reference, merged by
 * score (ties: index); thread counts 1, 2, 3 and the plain path identical. */
static void test_batched_and_threads(void) {
  vt_rng rng;
  vt_rng_seed(&rng, 5);
  const int64_t n = 2400, categories = 6;
  double *b = malloc(sizeof(double) * (size_t)(4 * n)), *s = malloc(sizeof(double) * (size_t)n);
  double *ids = malloc(sizeof(double) * (size_t)n);
  int64_t *members = malloc(sizeof(int64_t) * (size_t)n),
          *want = malloc(sizeof(int64_t) * (size_t)n);
  double *ws = malloc(sizeof(double) * (size_t)n);
  int64_t *mk = malloc(sizeof(int64_t) * (size_t)n);
  double *ms = malloc(sizeof(double) * (size_t)n);
  gen(&rng, n, 300, 0, b, s);
  for (int64_t i = 0; i < n; i++) ids[i] = (double)(vt_rng_int(&rng, categories) * 3 - 4);
  for (int mi = 0; mi < NUM_METHODS; mi++) {
    const params *p = &methods[mi];
    /* reference: per category, then an insertion merge by (score desc, index) */
    int64_t k = 0;
    for (int64_t cat = 0; cat < categories; cat++) {
      int64_t m = 0;
      for (int64_t i = 0; i < n; i++)
        if (ids[i] == (double)(cat * 3 - 4)) members[m++] = i;
      const int64_t got = reference(b, s, members, m, p, mk, ms);
      for (int64_t r = 0; r < got; r++) {
        int64_t at = k++;
        while (at > 0 && (ws[at - 1] < ms[r] || (ws[at - 1] == ms[r] && want[at - 1] > mk[r])))
          want[at] = want[at - 1], ws[at] = ws[at - 1], at--;
        want[at] = mk[r], ws[at] = ms[r];
      }
    }
    for (int dti = 0; dti < 2; dti++) {
      const DLDataType dt = dti ? vt_f32 : vt_f64;
      call ref;
      call_init(&ref, dt, n, b, s, ids);
      vo_context *plain;
      CHECK_STATUS(vo_context_create(&plain), VO_OK);
      CHECK_STATUS(vo_context_set_num_threads(plain, 1), VO_OK);
      CHECK_STATUS(vo_context_set_isa(plain, VO_ISA_SCALAR), VO_OK);
      CHECK_STATUS(run(plain, &ref, 1, p), VO_OK);
      vo_context_destroy(plain);
      if (!dti) {
        char what[64];
        snprintf(what, sizeof what, "batched_soft_nms method %d offset %g", p->method, p->offset);
        check_against(&ref, k, want, ws, 1e-12, what);
      }
      for (int t = 1; t <= 3; t++) {
        for (int single = 0; single < 2; single++) {
          vo_context *ctx;
          CHECK_STATUS(vo_context_create(&ctx), VO_OK);
          CHECK_STATUS(vo_context_set_num_threads(ctx, t), VO_OK);
          call c;
          call_init(&c, dt, n, b, s, ids);
          call one;
          call_init(&one, dt, n, b, s, ids);
          CHECK_STATUS(run(ctx, &c, 1, p), VO_OK);
          CHECK_MSG(memcmp(vt_first(c.dets), vt_first(ref.dets), c.dets->mem_bytes) == 0 &&
                        memcmp(vt_first(c.keep), vt_first(ref.keep), c.keep->mem_bytes) == 0 &&
                        num_kept(&c) == num_kept(&ref),
                    "batched %s method %d, %d threads: not bit-identical to the plain path",
                    vt_dtype_name(dt), p->method, t);
          if (single) {
            /* soft_nms, plain and default ISA */
            vo_context *sp;
            CHECK_STATUS(vo_context_create(&sp), VO_OK);
            CHECK_STATUS(vo_context_set_isa(sp, VO_ISA_SCALAR), VO_OK);
            CHECK_STATUS(run(sp, &one, 0, p), VO_OK);
            CHECK_STATUS(run(ctx, &c, 0, p), VO_OK);
            CHECK_MSG(memcmp(vt_first(c.dets), vt_first(one.dets), c.dets->mem_bytes) == 0 &&
                          memcmp(vt_first(c.keep), vt_first(one.keep), c.keep->mem_bytes) == 0,
                      "soft_nms %s method %d: the AVX2 path is not the plain path's bits",
                      vt_dtype_name(dt), p->method);
            vo_context_destroy(sp);
          }
          call_free(&c), call_free(&one);
          vo_context_destroy(ctx);
        }
      }
      call_free(&ref);
    }
  }
  free(b), free(s), free(ids), free(members), free(want), free(ws), free(mk), free(ms);
}

/* Argument errors: op, argument and value named; outputs untouched. */
static void test_errors(void) {
  const double b[8] = {0, 0, 1, 1, 2, 2, 3, 3}, s[2] = {0.5, 0.4}, ids[2] = {0, 1};
  call c;
  call_init(&c, vt_f32, 2, b, s, ids);
  vt_fill(&c.keep->dl, 7);
  const params bad_method = {0.3, 0.5, 1e-3, 0, 3};
  CHECK_STATUS(run(NULL, &c, 0, &bad_method), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("soft_nms: method must be 0 (hard), 1 (linear) or 2 (gaussian), got 3");
  const params bad_sigma = {0.3, 0, 1e-3, 0, 2};
  CHECK_STATUS(run(NULL, &c, 1, &bad_sigma), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("batched_soft_nms: sigma must be > 0 for the gaussian method, got 0");
  const params zero_sigma_linear = {0.3, 0, 1e-3, 0, 1};
  CHECK_STATUS(run(NULL, &c, 0, &zero_sigma_linear), VO_OK);
  vt_fill(&c.keep->dl, 7);
  const params nan_thr = {NAN, 0.5, 1e-3, 0, 1};
  CHECK_STATUS(run(NULL, &c, 0, &nan_thr), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("soft_nms: iou_threshold must be a number, got nan");
  const params nan_min = {0.3, 0.5, NAN, 0, 1};
  CHECK_STATUS(run(NULL, &c, 0, &nan_min), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("soft_nms: min_score must be a number, got nan");
  const params nan_sigma = {0.3, NAN, 1e-3, 0, 1};
  CHECK_STATUS(run(NULL, &c, 0, &nan_sigma), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("soft_nms: sigma must be a number, got nan");
  const params inf_offset = {0.3, 0.5, 1e-3, INFINITY, 1};
  CHECK_STATUS(run(NULL, &c, 0, &inf_offset), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("soft_nms: offset must be finite, got inf");
  CHECK(vt_get(&c.keep->dl, 0) == 7 && vt_get(&c.keep->dl, 1) == 7);
  call_free(&c);

  const params ok = {0.3, 0.5, 1e-3, 0, 1};
  const int64_t b3s[2] = {2, 3}, s3[1] = {3}, ds[2] = {2, 5}, ks[1] = {2};
  vt_tensor *b3 = vt_tensor_new(vt_f32, 2, b3s, NULL), *sc3 = vt_tensor_new(vt_f32, 1, s3, NULL);
  vt_tensor *i32 = vt_tensor_new(vt_i32, 1, ks, ids), *dets = vt_tensor_new(vt_f32, 2, ds, NULL);
  vt_tensor *keep = vt_tensor_new(vt_i64, 1, ks, NULL), *num = vt_tensor_new(vt_i64, 0, NULL, NULL);
  call_init(&c, vt_f32, 2, b, s, ids);
  CHECK_STATUS(vo_soft_nms(NULL, &b3->dl, &c.scores->dl, ok.thr, ok.sigma, ok.min_score, ok.method,
                           ok.offset, &dets->dl, &keep->dl, &num->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("soft_nms: boxes");
  CHECK_STATUS(vo_soft_nms(NULL, &c.boxes->dl, &sc3->dl, ok.thr, ok.sigma, ok.min_score, ok.method,
                           ok.offset, &dets->dl, &keep->dl, &num->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("soft_nms: scores");
  CHECK_STATUS(
      vo_batched_soft_nms(NULL, &c.boxes->dl, &c.scores->dl, &i32->dl, ok.thr, ok.sigma,
                          ok.min_score, ok.method, ok.offset, &dets->dl, &keep->dl, &num->dl),
      VO_ERROR_UNSUPPORTED_DTYPE);
  CHECK_ERROR_HAS("batched_soft_nms: idxs must be int64, got int32");
  /* a wrong output shape */
  const int64_t d4[2] = {2, 4};
  vt_tensor *dets4 = vt_tensor_new(vt_f32, 2, d4, NULL);
  CHECK_STATUS(vo_soft_nms(NULL, &c.boxes->dl, &c.scores->dl, ok.thr, ok.sigma, ok.min_score,
                           ok.method, ok.offset, &dets4->dl, &keep->dl, &num->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("soft_nms");
  vt_tensor_free(b3), vt_tensor_free(sc3), vt_tensor_free(i32), vt_tensor_free(dets);
  vt_tensor_free(keep), vt_tensor_free(num), vt_tensor_free(dets4);
  call_free(&c);
}

/* Gaussian weights across exp's whole float range, the AVX2 path against
 * the plain one bit for bit: 24 pairs of boxes far apart, each a box A
 * (selected first) and a lower box B at IoU t with it, t from 0.55 to 0.7,
 * so that with sigma 0.004 and min_score 0 B's weight exp(-t^2 / sigma)
 * runs from 1e-33 through float subnormals (t about 0.59 to 0.645) to 0. */
static void test_gaussian_range(void) {
  enum { pairs = 24, n = 2 * pairs };
  double b[4 * n], s[n];
  for (int k = 0; k < pairs; k++) {
    const double t = 0.55 + 0.15 * k / (pairs - 1), d = 10 * (1 - t) / (1 + t);
    const double a[4] = {100.0 * k, 0, 100.0 * k + 10, 10};
    const double bb[4] = {100.0 * k + d, 0, 100.0 * k + d + 10, 10};
    memcpy(b + 8 * k, a, sizeof a), memcpy(b + 8 * k + 4, bb, sizeof bb);
    s[2 * k] = 0.9 + 0.001 * k, s[2 * k + 1] = 0.8;
  }
  const params p = {0.3, 0.004, 0, 0, 2};
  call plain, fast;
  call_init(&plain, vt_f32, n, b, s, NULL);
  call_init(&fast, vt_f32, n, b, s, NULL);
  vo_context *sp;
  CHECK_STATUS(vo_context_create(&sp), VO_OK);
  CHECK_STATUS(vo_context_set_isa(sp, VO_ISA_SCALAR), VO_OK);
  CHECK_STATUS(run(sp, &plain, 0, &p), VO_OK);
  CHECK_STATUS(run(NULL, &fast, 0, &p), VO_OK);
  vo_context_destroy(sp);
  CHECK_MSG(memcmp(vt_first(fast.dets), vt_first(plain.dets), fast.dets->mem_bytes) == 0 &&
                memcmp(vt_first(fast.keep), vt_first(plain.keep), fast.keep->mem_bytes) == 0,
            "gaussian weights over exp's range: the AVX2 path is not the plain path's bits");
  /* the range was covered: scores at selection that are float subnormals
   * (weights of about 1e-39 to 1e-45) and zeros */
  int subnormal = 0, zero = 0;
  for (int r = 0; r < n; r++) {
    const float got = (float)vt_get(&plain.dets->dl, 5 * r + 4);
    subnormal += got > 0 && got < 1.17549435e-38f;
    zero += got == 0;
  }
  CHECK_MSG(subnormal > 0 && zero > 0, "the weights reach %d subnormals and %d zeros", subnormal,
            zero);
  call_free(&plain), call_free(&fast);
}

int main(void) {
  test_reference();
  test_gaussian_range();
  test_quirks();
  test_batched_and_threads();
  test_errors();
  return vt_finish("test_soft_nms");
}
