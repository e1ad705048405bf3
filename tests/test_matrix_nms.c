/*
 * matrix_nms through the typed C wrappers: against a plain double
 * reference written here from SPEC-NEXT 3.1-3.2 (an IoU matrix, column max
 * K_j, the decays with std::min's rule, the keep and cross-class orders),
 * in float64 (identical) and float32 (same detections, scores to float
 * rounding), with duplicate boxes (K_j = 1, linear), touching boxes in the
 * pixel convention, nothing above score_threshold, nms_top_k below the
 * candidates, keep_top_k across classes, a background class; the padded
 * rows; thread counts 1, 2, 3 bit-identical; the shapes; every argument
 * error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

typedef struct config {
  int64_t b, c, m;
  double score_threshold, post_threshold, sigma;
  int64_t nms_top_k, keep_top_k, background;
  int gaussian, normalized;
} config;

typedef struct det {
  double score;
  int64_t cls, rank, box;
} det;

/* ------------------------------------------------------------ reference */

static double ref_area(const double *r, int normalized) {
  if (r[2] < r[0] || r[3] < r[1]) return 0;
  const double w = r[2] - r[0], h = r[3] - r[1];
  return normalized ? w * h : (w + 1) * (h + 1);
}

static double ref_iou(const double *a, const double *b, int normalized) {
  if (b[0] > a[2] || b[2] < a[0] || b[1] > a[3] || b[3] < a[1]) return 0;
  const double e = normalized ? 0 : 1;
  const double iw = fmin(a[2], b[2]) - fmax(a[0], b[0]) + e;
  const double ih = fmin(a[3], b[3]) - fmax(a[1], b[1]) + e;
  const double inter = iw * ih;
  return inter / (ref_area(a, normalized) + ref_area(b, normalized) - inter);
}

/* d before e: decayed score descending, then class, then rank. */
static int det_before(const det *d, const det *e) {
  if (d->score != e->score) return d->score > e->score;
  if (d->cls != e->cls) return d->cls < e->cls;
  return d->rank < e->rank;
}

/* Image b's detections into out (room for c * m); returns how many. */
static int64_t ref_image(const config *g, const double *boxes, const double *scores, int64_t b,
                         det *out) {
  const int64_t m = g->m;
  int64_t *order = malloc(sizeof(int64_t) * (size_t)(m + 1));
  double *x = malloc(sizeof(double) * (size_t)(m * m + 1)),
         *k = malloc(sizeof(double) * (size_t)(m + 1));
  int64_t count = 0;
  for (int64_t c = 0; c < g->c; c++) {
    if (c == g->background) continue;
    const double *s = scores + (b * g->c + c) * m;
    int64_t n = 0;
    for (int64_t i = 0; i < m; i++) {
      if (!(s[i] > g->score_threshold)) continue;
      int64_t at = n++; /* insertion: score descending, then index */
      while (at > 0 && s[order[at - 1]] < s[i]) order[at] = order[at - 1], at--;
      order[at] = i;
    }
    if (g->nms_top_k >= 0 && n > g->nms_top_k) n = g->nms_top_k;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < i; j++)
        x[i * n + j] =
            ref_iou(boxes + 4 * (b * m + order[i]), boxes + 4 * (b * m + order[j]), g->normalized);
    for (int64_t j = 0; j < n; j++) {
      k[j] = 0;
      for (int64_t l = 0; l < j; l++)
        if (x[j * n + l] > k[j]) k[j] = x[j * n + l];
    }
    for (int64_t i = 0; i < n; i++) {
      double d = 1;
      for (int64_t j = 0; j < i; j++) {
        const double xi = x[i * n + j];
        const double dj =
            g->gaussian ? exp((k[j] * k[j] - xi * xi) * g->sigma) : (1 - xi) / (1 - k[j]);
        if (dj < d) d = dj; /* std::min(d, dj): NaN and +inf never taken */
      }
      const double ds = d * s[order[i]];
      if (ds > g->post_threshold) out[count++] = (det){ds, c, i, order[i]};
    }
  }
  for (int64_t i = 1; i < count; i++) /* insertion sort in output order */
    for (int64_t j = i; j > 0 && det_before(&out[j], &out[j - 1]); j--) {
      const det t = out[j];
      out[j] = out[j - 1], out[j - 1] = t;
    }
  if (g->keep_top_k >= 0 && count > g->keep_top_k) count = g->keep_top_k;
  free(order), free(x), free(k);
  return count;
}

/* ------------------------------------------------------------ the op */

typedef struct result {
  vt_tensor *dets, *index, *num;
  int64_t k;
} result;

static vo_status run(const vo_context *ctx, const config *g, DLDataType dt, const double *boxes,
                     const double *scores, result *r) {
  const int64_t bs[3] = {g->b, g->m, 4}, ss[3] = {g->b, g->c, g->m};
  vt_tensor *tb = vt_tensor_new(dt, 3, bs, boxes), *ts = vt_tensor_new(dt, 3, ss, scores);
  vo_tensor_desc d[3];
  memset(r, 0, sizeof *r);
  vo_status st = vo_matrix_nms_shape(ctx, &tb->dl, &ts->dl, g->score_threshold, g->post_threshold,
                                     g->nms_top_k, g->keep_top_k, g->gaussian, g->sigma,
                                     g->background, g->normalized, d);
  if (st == VO_OK) {
    r->k = d[1].shape[1];
    r->dets = vt_tensor_new(dt, 3, d[0].shape, NULL);
    r->index = vt_tensor_new(vt_i64, 2, d[1].shape, NULL);
    r->num = vt_tensor_new(vt_i64, 1, d[2].shape, NULL);
    vt_fill(&r->dets->dl, 7), vt_fill(&r->index->dl, 7), vt_fill(&r->num->dl, 7);
    st = vo_matrix_nms(ctx, &tb->dl, &ts->dl, g->score_threshold, g->post_threshold, g->nms_top_k,
                       g->keep_top_k, g->gaussian, g->sigma, g->background, g->normalized,
                       &r->dets->dl, &r->index->dl, &r->num->dl);
  }
  vt_tensor_free(tb), vt_tensor_free(ts);
  return st;
}

static void result_free(result *r) {
  if (r->dets) vt_tensor_free(r->dets), vt_tensor_free(r->index), vt_tensor_free(r->num);
}

/* The op in dtype dt against the reference on values rounded to dt. */
static void check_against_reference(const char *what, const config *g, DLDataType dt, double *boxes,
                                    double *scores) {
  const int64_t nbox = g->b * g->m * 4, nsc = g->b * g->c * g->m;
  for (int64_t i = 0; i < nbox; i++) boxes[i] = vt_round_to(dt, boxes[i]);
  for (int64_t i = 0; i < nsc; i++) scores[i] = vt_round_to(dt, scores[i]);
  result r;
  if (!CHECK_STATUS(run(NULL, g, dt, boxes, scores, &r), VO_OK)) return;
  const int64_t per = g->nms_top_k >= 0 && g->nms_top_k < g->m ? g->nms_top_k : g->m;
  CHECK_MSG(r.k == (g->keep_top_k >= 0 ? g->keep_top_k : g->c * per), "%s: K = %lld", what,
            (long long)r.k);
  det *want = malloc(sizeof(det) * (size_t)(g->c * g->m + 1));
  const double tol = dt.bits == 64 ? 0 : 2e-6;
  for (int64_t b = 0; b < g->b; b++) {
    const int64_t n = ref_image(g, boxes, scores, b, want);
    const int64_t got = (int64_t)vt_get(&r.num->dl, b);
    if (!CHECK_MSG(got == n, "%s %s image %lld: %lld detections, want %lld", what,
                   vt_dtype_name(dt), (long long)b, (long long)got, (long long)n))
      continue;
    for (int64_t i = 0; i < r.k; i++) {
      const double *dv = NULL;
      double row[6];
      for (int j = 0; j < 6; j++) row[j] = vt_get(&r.dets->dl, (b * r.k + i) * 6 + j);
      const int64_t index = (int64_t)vt_get(&r.index->dl, b * r.k + i);
      if (i >= n) {
        int zero = index == -1;
        for (int j = 0; j < 6; j++) zero &= row[j] == 0;
        CHECK_MSG(zero, "%s image %lld row %lld: padding not zero / -1", what, (long long)b,
                  (long long)i);
        continue;
      }
      const det *w = &want[i];
      dv = boxes + 4 * (b * g->m + w->box);
      int same = index == b * g->m + w->box && row[0] == (double)w->cls &&
                 fabs(row[1] - w->score) <= tol * fabs(w->score);
      for (int j = 0; j < 4; j++) same &= row[2 + j] == dv[j];
      CHECK_MSG(same,
                "%s %s image %lld row %lld: (%g, %.9g, box %lld), want (%lld, %.9g, box %lld)",
                what, vt_dtype_name(dt), (long long)b, (long long)i, row[0], row[1],
                (long long)index, (long long)w->cls, w->score, (long long)(b * g->m + w->box));
    }
  }
  free(want);
  result_free(&r);
}

/* Random boxes (x, y in [0, span), sizes up to span / 3), distinct scores in [0, 1). */
static void random_inputs(const config *g, vt_rng *rng, double span, double *boxes,
                          double *scores) {
  for (int64_t i = 0; i < g->b * g->m; i++) {
    double *r = boxes + 4 * i;
    r[0] = vt_rng_uniform(rng, 0, span), r[1] = vt_rng_uniform(rng, 0, span);
    r[2] = r[0] + vt_rng_uniform(rng, 0.01, span / 3),
    r[3] = r[1] + vt_rng_uniform(rng, 0.01, span / 3);
  }
  for (int64_t i = 0; i < g->b * g->c * g->m; i++) scores[i] = vt_rng_uniform(rng, 0, 1);
}

static void against_reference(void) {
  vt_rng rng;
  vt_rng_seed(&rng, 17);
  const config cases[] = {
      {2, 3, 40, 0.1, 0.05, 2.0, 30, 50, -1, 0, 1}, {2, 3, 40, 0.1, 0.05, 2.0, 30, 50, 0, 1, 1},
      {3, 4, 60, 0.2, 0.1, 0.5, -1, -1, -1, 1, 0},  {1, 5, 80, 0.05, 0.3, 2.0, 10, 12, 2, 0, 0},
      {2, 2, 25, 0.3, 0.0, 3.0, 5, -1, -1, 1, 1},   {1, 6, 50, 0.1, 0.2, 2.0, -1, 4, -1, 0, 1},
      {2, 3, 30, 2.0, 0.0, 2.0, -1, -1, -1, 0, 1}, /* nothing above score_threshold */
      {1, 3, 12, 0.1, 0.0, 2.0, 0, -1, -1, 0, 1},  /* nms_top_k 0 */
      {2, 3, 0, 0.1, 0.0, 2.0, -1, 3, -1, 0, 1},   /* no boxes, padded rows only */
  };
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
    const config *g = &cases[t];
    double *boxes = malloc(sizeof(double) * (size_t)(4 * g->b * g->m + 1));
    double *scores = malloc(sizeof(double) * (size_t)(g->b * g->c * g->m + 1));
    for (int d = 0; d < 2; d++) {
      random_inputs(g, &rng, g->normalized ? 1.0 : 60.0, boxes, scores);
      /* duplicates (IoU 1, so K_j = 1 for the second: a linear decay of
       * 0 / 0 or x / 0 from it, ignored) and, in pixel boxes, touching ones */
      for (int64_t i = 3; i + 1 < g->m; i += 7) {
        memcpy(boxes + 4 * (i + 1), boxes + 4 * i, 4 * sizeof(double));
        if (!g->normalized && i + 2 < g->m) {
          double *r = boxes + 4 * (i + 2);
          memcpy(r, boxes + 4 * i, 4 * sizeof(double));
          r[0] = boxes[4 * i + 2], r[2] = r[0] + 5; /* x1 on the first's x2 */
        }
      }
      char what[32];
      snprintf(what, sizeof what, "case %d", (int)t);
      check_against_reference(what, g, d ? vt_f32 : vt_f64, boxes, scores);
    }
    free(boxes), free(scores);
  }
}

/* Thread counts 1, 2 and 3 give the same bits. */
static void threads(void) {
  const config g = {3, 20, 300, 0.05, 0.02, 2.0, 120, 100, 0, 1, 1};
  vt_rng rng;
  vt_rng_seed(&rng, 5);
  double *boxes = malloc(sizeof(double) * (size_t)(4 * g.b * g.m));
  double *scores = malloc(sizeof(double) * (size_t)(g.b * g.c * g.m));
  random_inputs(&g, &rng, 1.0, boxes, scores);
  result r[3];
  for (int t = 0; t < 3; t++) {
    vo_context *ctx;
    if (!CHECK_STATUS(vo_context_create(&ctx), VO_OK)) return;
    vo_context_set_num_threads(ctx, t + 1);
    CHECK_STATUS(run(ctx, &g, vt_f32, boxes, scores, &r[t]), VO_OK);
    vo_context_destroy(ctx);
  }
  for (int t = 1; t < 3; t++) {
    CHECK(memcmp(vt_first(r[t].dets), vt_first(r[0].dets), r[0].dets->mem_bytes) == 0);
    CHECK(memcmp(vt_first(r[t].index), vt_first(r[0].index), r[0].index->mem_bytes) == 0);
    CHECK(memcmp(vt_first(r[t].num), vt_first(r[0].num), r[0].num->mem_bytes) == 0);
  }
  CHECK(vt_get(&r[0].num->dl, 0) == 100);
  for (int t = 0; t < 3; t++) result_free(&r[t]);
  free(boxes), free(scores);
}

/* ------------------------------------------------------------ errors */

static void expect_error(const config *g, DLDataType bdt, const int64_t *bs, const int64_t *ss,
                         const char *needle) {
  vt_tensor *tb = vt_tensor_new(bdt, 3, bs, NULL), *ts = vt_tensor_new(vt_f32, 3, ss, NULL);
  vo_tensor_desc d[3];
  CHECK_STATUS(vo_matrix_nms_shape(NULL, &tb->dl, &ts->dl, g->score_threshold, g->post_threshold,
                                   g->nms_top_k, g->keep_top_k, g->gaussian, g->sigma,
                                   g->background, g->normalized, d),
               bdt.code == kDLInt ? VO_ERROR_UNSUPPORTED_DTYPE : VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("matrix_nms");
  CHECK_ERROR_HAS(needle);
  vt_tensor_free(tb), vt_tensor_free(ts);
}

static void bad_inputs(void) {
  const config ok = {2, 3, 5, 0.1, 0.05, 2.0, -1, -1, -1, 0, 1};
  const int64_t bs[3] = {2, 5, 4}, ss[3] = {2, 3, 5};
  const int64_t b5[3] = {2, 5, 5}, s_m[3] = {2, 3, 6}, s_b[3] = {1, 3, 5};
  expect_error(&ok, vt_f32, b5, ss, "boxes");
  expect_error(&ok, vt_f32, bs, s_m, "scores");
  expect_error(&ok, vt_f32, bs, s_b, "scores");
  expect_error(&ok, vt_i32, bs, ss, "boxes");
  config g = ok;
  g.score_threshold = NAN;
  expect_error(&g, vt_f32, bs, ss, "score_threshold");
  g = ok, g.post_threshold = NAN;
  expect_error(&g, vt_f32, bs, ss, "post_threshold");
  g = ok, g.nms_top_k = -2;
  expect_error(&g, vt_f32, bs, ss, "nms_top_k");
  expect_error(&g, vt_f32, bs, ss, "-2");
  g = ok, g.keep_top_k = -5;
  expect_error(&g, vt_f32, bs, ss, "keep_top_k");
  g = ok, g.sigma = INFINITY;
  expect_error(&g, vt_f32, bs, ss, "gaussian_sigma");
  g = ok, g.background = -3;
  expect_error(&g, vt_f32, bs, ss, "background_label");

  /* sizes that overflow: shapes only (vo_infer reads no data); no images,
   * so that C * M overflows while the inputs have no elements */
  const int64_t big = (int64_t)1 << 40;
  DLTensor boxes = {NULL, {kDLCPU, 0}, 3, vt_f32, (int64_t[]){0, big, 4}, NULL, 0};
  DLTensor scores = {NULL, {kDLCPU, 0}, 3, vt_f32, (int64_t[]){0, big, big}, NULL, 0};
  vo_tensor_desc d[3];
  CHECK_STATUS(vo_matrix_nms_shape(NULL, &boxes, &scores, 0.1, 0.1, -1, -1, 0, 2.0, -1, 1, d),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("keep_top_k");
  boxes.shape[0] = scores.shape[0] = 2;
  boxes.shape[1] = scores.shape[1] = scores.shape[2] = 1;
  CHECK_STATUS(
      vo_matrix_nms_shape(NULL, &boxes, &scores, 0.1, 0.1, -1, (int64_t)1 << 62, 0, 2.0, -1, 1, d),
      VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("dets");
  /* a large keep_top_k is only padding */
  CHECK_STATUS(vo_matrix_nms_shape(NULL, &boxes, &scores, 0.1, 0.1, 3, 1000, 0, 2.0, -1, 1, d),
               VO_OK);
  CHECK(d[0].shape[1] == 1000 && d[1].shape[1] == 1000 && d[2].shape[0] == 2);
}

int main(void) {
  against_reference();
  threads();
  bad_inputs();
  return vt_finish("test_matrix_nms");
}
