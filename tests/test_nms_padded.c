/*
 * batched_nms_padded and onnx_nms through their typed C wrappers: the padded
 * op against a per-image loop of vo_batched_nms (class as the category) plus
 * a top-k by score, onnx_nms against a plain restatement of onnxruntime's
 * NonMaxSuppression written here, the same bits at 1, 2 and 3 threads and
 * with the scalar and AVX2 paths, the padding, and argument errors.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { B = 3, M = 150, C = 5, K = 40 };

/* Detector-like boxes: clusters around a few objects (overlaps to
 * suppress) and scattered ones; distinct scores. */
static void make_inputs(vt_rng *r, double *boxes, double *scores) {
  for (int64_t i = 0; i < B * M; i++) {
    double *b = boxes + 4 * i;
    const double cx = (i % 7 < 4) ? 40 + 60 * (double)(i % 4) + vt_rng_uniform(r, -6, 6)
                                  : vt_rng_uniform(r, 0, 300);
    const double cy = (i % 7 < 4) ? 50 + vt_rng_uniform(r, -6, 6) : vt_rng_uniform(r, 0, 300);
    const double w = vt_rng_uniform(r, 10, 40), h = vt_rng_uniform(r, 10, 40);
    b[0] = cx - w / 2, b[1] = cy - h / 2, b[2] = cx + w / 2, b[3] = cy + h / 2;
  }
  for (int64_t i = 0; i < B * C * M; i++)
    scores[i] = vt_rng_uniform(r, 0, 1) + 1e-9 * (double)i; /* distinct */
}

typedef struct padded_out {
  vt_tensor *keep, *labels, *scores, *num;
} padded_out;

static padded_out padded_new(int64_t b, int64_t k, DLDataType score_dtype) {
  const int64_t s2[2] = {b, k}, s1[1] = {b};
  padded_out o = {vt_tensor_new(vt_i64, 2, s2, NULL), vt_tensor_new(vt_i64, 2, s2, NULL),
                  vt_tensor_new(score_dtype, 2, s2, NULL), vt_tensor_new(vt_i64, 1, s1, NULL)};
  return o;
}

static void padded_free(padded_out *o) {
  vt_tensor_free(o->keep), vt_tensor_free(o->labels), vt_tensor_free(o->scores);
  vt_tensor_free(o->num);
}

static int same_bytes(const vt_tensor *a, const vt_tensor *b) {
  return a->mem_bytes == b->mem_bytes && memcmp(a->mem, b->mem, a->mem_bytes) == 0;
}

/* The reference of image b: vo_batched_nms over the candidates (score >
 * thr) with the class as category, then the first K by score (ties: lower
 * class, then lower box: the candidates are listed class-major, box-minor,
 * and vo_batched_nms keeps ties in index order). */
static void padded_reference(const double *boxes, const double *scores, double iou, double thr,
                             int64_t b, int64_t *keep, int64_t *labels, double *kept_scores,
                             int64_t *num) {
  double *cb = malloc(sizeof(double) * 4 * C * M), *cs = malloc(sizeof(double) * C * M);
  double *ci = malloc(sizeof(double) * C * M);
  int64_t *box_of = malloc(sizeof(int64_t) * C * M), n = 0;
  for (int64_t c = 0; c < C; c++)
    for (int64_t m = 0; m < M; m++) {
      const double s = scores[(b * C + c) * M + m];
      if (!(s > thr)) continue;
      memcpy(cb + 4 * n, boxes + 4 * (b * M + m), sizeof(double) * 4);
      cs[n] = s, ci[n] = (double)c, box_of[n] = m, n++;
    }
  const int64_t bs[2] = {n, 4}, ns[1] = {n};
  vt_tensor *tb = vt_tensor_new(vt_f64, 2, bs, cb), *ts = vt_tensor_new(vt_f64, 1, ns, cs);
  vt_tensor *ti = vt_tensor_new(vt_i64, 1, ns, ci), *tk = vt_tensor_new(vt_i64, 1, ns, NULL);
  vt_tensor *tn = vt_tensor_new(vt_i64, 0, NULL, NULL);
  CHECK_STATUS(vo_batched_nms(NULL, &tb->dl, &ts->dl, &ti->dl, iou, &tk->dl, &tn->dl), VO_OK);
  const int64_t kept = (int64_t)vt_get(&tn->dl, 0);
  *num = kept < K ? kept : K;
  for (int64_t k = 0; k < *num; k++) {
    const int64_t j = (int64_t)vt_get(&tk->dl, k);
    keep[k] = box_of[j], labels[k] = (int64_t)ci[j], kept_scores[k] = cs[j];
  }
  vt_tensor_free(tb), vt_tensor_free(ts), vt_tensor_free(ti), vt_tensor_free(tk);
  vt_tensor_free(tn);
  free(cb), free(cs), free(ci), free(box_of);
}

static void test_padded_against_batched_nms(void) {
  vt_rng r;
  vt_rng_seed(&r, 17);
  double *boxes = malloc(sizeof(double) * 4 * B * M), *scores = malloc(sizeof(double) * B * C * M);
  make_inputs(&r, boxes, scores);
  const int64_t bs[3] = {B, M, 4}, ss[3] = {B, C, M};
  vt_tensor *tb = vt_tensor_new(vt_f64, 3, bs, boxes), *ts = vt_tensor_new(vt_f64, 3, ss, scores);
  const double iou = 0.45, thr = 0.3;
  padded_out o = padded_new(B, K, vt_f64);
  CHECK_STATUS(vo_batched_nms_padded(NULL, &tb->dl, &ts->dl, iou, &thr, -1, K, 0, 0, -1,
                                     &o.keep->dl, &o.labels->dl, &o.scores->dl, &o.num->dl),
               VO_OK);
  for (int64_t b = 0; b < B; b++) {
    int64_t keep[K], labels[K], num;
    double s[K];
    padded_reference(boxes, scores, iou, thr, b, keep, labels, s, &num);
    CHECK_MSG((int64_t)vt_get(&o.num->dl, b) == num, "image %lld: num %g, expected %lld",
              (long long)b, vt_get(&o.num->dl, b), (long long)num);
    for (int64_t k = 0; k < K; k++) {
      const int pad = k >= num;
      CHECK_MSG((int64_t)vt_get(&o.keep->dl, b * K + k) == (pad ? -1 : keep[k]) &&
                    (int64_t)vt_get(&o.labels->dl, b * K + k) == (pad ? -1 : labels[k]) &&
                    vt_get(&o.scores->dl, b * K + k) == (pad ? 0 : s[k]),
                "image %lld slot %lld differs", (long long)b, (long long)k);
    }
  }
  padded_free(&o);
  vt_tensor_free(tb), vt_tensor_free(ts);
  free(boxes), free(scores);
}

/* onnxruntime's SuppressByIOU, in float, box [y1, x1, y2, x2]. */
static int ort_suppresses(const float *a, const float *b, float thr) {
  const float ax1 = a[1] < a[3] ? a[1] : a[3], ax2 = a[1] < a[3] ? a[3] : a[1];
  const float bx1 = b[1] < b[3] ? b[1] : b[3], bx2 = b[1] < b[3] ? b[3] : b[1];
  const float ay1 = a[0] < a[2] ? a[0] : a[2], ay2 = a[0] < a[2] ? a[2] : a[0];
  const float by1 = b[0] < b[2] ? b[0] : b[2], by2 = b[0] < b[2] ? b[2] : b[0];
  const float ix1 = ax1 < bx1 ? bx1 : ax1, ix2 = bx2 < ax2 ? bx2 : ax2;
  const float iy1 = ay1 < by1 ? by1 : ay1, iy2 = by2 < ay2 ? by2 : ay2;
  if (ix2 <= ix1 || iy2 <= iy1) return 0;
  const float inter = (ix2 - ix1) * (iy2 - iy1);
  const float area_a = (ax2 - ax1) * (ay2 - ay1), area_b = (bx2 - bx1) * (by2 - by1);
  const float uni = area_a + area_b - inter;
  if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return 0;
  return inter / uni > thr;
}

static void test_onnx_against_restatement(void) {
  vt_rng r;
  vt_rng_seed(&r, 23);
  double *boxes = malloc(sizeof(double) * 4 * B * M), *scores = malloc(sizeof(double) * B * C * M);
  make_inputs(&r, boxes, scores);
  for (int64_t i = 0; i < B * M; i += 3) { /* the other diagonal, [y1, x1, y2, x2] order */
    double *b = boxes + 4 * i, t = b[0];
    b[0] = b[2], b[2] = t;
  }
  float *fb = malloc(sizeof(float) * 4 * B * M);
  for (int64_t i = 0; i < 4 * B * M; i++) fb[i] = (float)boxes[i];
  const int64_t bs[3] = {B, M, 4}, ss[3] = {B, C, M}, max_out = 7;
  vt_tensor *tb = vt_tensor_new(vt_f32, 3, bs, boxes), *ts = vt_tensor_new(vt_f32, 3, ss, scores);
  const int64_t rows = B * C * max_out, sel_shape[2] = {rows, 3};
  vt_tensor *sel = vt_tensor_new(vt_i64, 2, sel_shape, NULL);
  vt_tensor *num = vt_tensor_new(vt_i64, 0, NULL, NULL);
  const double thr = 0.25;
  CHECK_STATUS(vo_onnx_nms(NULL, &tb->dl, &ts->dl, max_out, 0.5, &thr, 0, &sel->dl, &num->dl),
               VO_OK);
  int64_t row = 0;
  for (int64_t b = 0; b < B; b++)
    for (int64_t c = 0; c < C; c++) {
      /* candidates by score (distinct), selection against the selected */
      int64_t order[M], n = 0, chosen[M], count = 0;
      for (int64_t m = 0; m < M; m++)
        if ((float)scores[(b * C + c) * M + m] > (float)thr) order[n++] = m;
      for (int64_t i = 1; i < n; i++)
        for (int64_t j = i; j > 0 && (float)scores[(b * C + c) * M + order[j - 1]] <
                                         (float)scores[(b * C + c) * M + order[j]];
             j--) {
          const int64_t t = order[j];
          order[j] = order[j - 1], order[j - 1] = t;
        }
      for (int64_t i = 0; i < n && count < max_out; i++) {
        int hit = 0;
        for (int64_t k = 0; k < count && !hit; k++)
          hit = ort_suppresses(fb + 4 * (b * M + chosen[k]), fb + 4 * (b * M + order[i]), 0.5f);
        if (!hit) chosen[count++] = order[i];
      }
      for (int64_t k = 0; k < count; k++, row++)
        CHECK_MSG((int64_t)vt_get(&sel->dl, 3 * row) == b &&
                      (int64_t)vt_get(&sel->dl, 3 * row + 1) == c &&
                      (int64_t)vt_get(&sel->dl, 3 * row + 2) == chosen[k],
                  "row %lld differs", (long long)row);
    }
  CHECK((int64_t)vt_get(&num->dl, 0) == row);
  for (int64_t i = 3 * row; i < 3 * rows; i++) CHECK(vt_get(&sel->dl, i) == -1);
  vt_tensor_free(tb), vt_tensor_free(ts), vt_tensor_free(sel), vt_tensor_free(num);
  free(boxes), free(scores), free(fb);
}

/* Every thread count and both ISAs give the same bytes, for float32 and
 * float16 boxes, shared and per-class, class-agnostic or not. */
static void test_threads_and_isa(void) {
  vt_rng r;
  vt_rng_seed(&r, 29);
  double *boxes = malloc(sizeof(double) * 4 * B * M * C),
         *scores = malloc(sizeof(double) * B * C * M);
  make_inputs(&r, boxes, scores);
  for (int64_t i = 4 * B * M; i < 4 * B * M * C; i++) boxes[i] = boxes[i % (4 * B * M)] + 1;
  const DLDataType dtypes[2] = {vt_f32, vt_f16};
  for (int d = 0; d < 2; d++)
    for (int variant = 0; variant < 3; variant++) {
      const int per_class = variant == 2, agnostic = variant == 1;
      const int64_t bs3[3] = {B, M, 4}, bs4[4] = {B, M, C, 4}, ss[3] = {B, C, M};
      vt_tensor *tb = per_class ? vt_tensor_new(dtypes[d], 4, bs4, boxes)
                                : vt_tensor_new(dtypes[d], 3, bs3, boxes);
      vt_tensor *ts = vt_tensor_new(dtypes[d], 3, ss, scores);
      padded_out ref = padded_new(B, K, dtypes[d]);
      const double thr = 0.2;
      int first = 1;
      for (int isa = VO_ISA_SCALAR; isa <= VO_ISA_AVX2; isa++)
        for (int t = 1; t <= 3; t++) {
          vo_context *ctx;
          CHECK_STATUS(vo_context_create(&ctx), VO_OK);
          vo_context_set_num_threads(ctx, t);
          if (vo_context_set_isa(ctx, (vo_isa)isa) != VO_OK) { /* no AVX2 here */
            vo_context_destroy(ctx);
            continue;
          }
          padded_out o = padded_new(B, K, dtypes[d]);
          CHECK_STATUS(
              vo_batched_nms_padded(ctx, &tb->dl, &ts->dl, 0.5, &thr, 6, K, 2 * d, agnostic, 60,
                                    &o.keep->dl, &o.labels->dl, &o.scores->dl, &o.num->dl),
              VO_OK);
          if (first) {
            padded_free(&ref);
            ref = o;
            first = 0;
          } else {
            CHECK_MSG(same_bytes(o.keep, ref.keep) && same_bytes(o.labels, ref.labels) &&
                          same_bytes(o.scores, ref.scores) && same_bytes(o.num, ref.num),
                      "%s variant %d: isa %d, %d threads differ", vt_dtype_name(dtypes[d]), variant,
                      isa, t);
            padded_free(&o);
          }
          vo_context_destroy(ctx);
        }
      padded_free(&ref);
      vt_tensor_free(tb), vt_tensor_free(ts);
    }
  free(boxes), free(scores);
}

static void test_errors(void) {
  const int64_t bs[3] = {2, 5, 4}, ss[3] = {2, 3, 5}, bad[3] = {2, 3, 4};
  vt_tensor *tb = vt_tensor_new(vt_f32, 3, bs, NULL), *ts = vt_tensor_new(vt_f32, 3, ss, NULL);
  vt_tensor *wrong = vt_tensor_new(vt_f32, 3, bad, NULL);
  padded_out o = padded_new(2, 4, vt_f32);
  const double nan = NAN;
  CHECK_STATUS(vo_batched_nms_padded(NULL, &tb->dl, &wrong->dl, 0.5, NULL, -1, 4, 0, 0, -1,
                                     &o.keep->dl, &o.labels->dl, &o.scores->dl, &o.num->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("batched_nms_padded: scores must have shape [2, C, 5], got [2, 3, 4]");
  CHECK_STATUS(vo_batched_nms_padded(NULL, &tb->dl, &ts->dl, 0.5, &nan, -1, 4, 0, 0, -1,
                                     &o.keep->dl, &o.labels->dl, &o.scores->dl, &o.num->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("score_threshold");
  CHECK_STATUS(vo_batched_nms_padded(NULL, &tb->dl, &ts->dl, 0.5, NULL, -3, 4, 0, 0, -1,
                                     &o.keep->dl, &o.labels->dl, &o.scores->dl, &o.num->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("max_per_class must be -1 (no cap) or >= 0, got -3");
  CHECK_STATUS(vo_batched_nms_padded(NULL, &tb->dl, &ts->dl, 0.5, NULL, -1, 4, 5, 0, -1,
                                     &o.keep->dl, &o.labels->dl, &o.scores->dl, &o.num->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("box_format must be 0 (xyxy), 1 (xywh) or 2 (cxcywh), got 5");
  const int64_t sel_shape[2] = {6, 3};
  vt_tensor *sel = vt_tensor_new(vt_i64, 2, sel_shape, NULL);
  vt_tensor *num = vt_tensor_new(vt_i64, 0, NULL, NULL);
  CHECK_STATUS(vo_onnx_nms(NULL, &tb->dl, &ts->dl, 1, 1.5, NULL, 0, &sel->dl, &num->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("onnx_nms: iou_threshold must be in [0, 1]");
  CHECK_STATUS(vo_onnx_nms(NULL, &tb->dl, &ts->dl, 1, 0.5, NULL, 3, &sel->dl, &num->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("center_point_box must be 0");
  /* min(max, M) rows: a huge count cannot overflow the shape */
  vo_tensor_desc d[2];
  const vo_value args[] = {vo_tensor_value(&tb->dl), vo_tensor_value(&ts->dl),
                           vo_int_value(INT64_MAX), vo_float_value(0.5)};
  CHECK_STATUS(vo_infer(NULL, vo_op_find("onnx_nms"), args, 4, d, 2), VO_OK);
  CHECK(d[0].ndim == 2 && d[0].shape[0] == 2 * 3 * 5 && d[0].shape[1] == 3 && d[1].ndim == 0);
  padded_free(&o);
  vt_tensor_free(tb), vt_tensor_free(ts), vt_tensor_free(wrong), vt_tensor_free(sel);
  vt_tensor_free(num);
}

/* No boxes but huge B * C (the scores are empty): only the outputs' size of
 * work, no B * C problems (whose count overflows int64 here). */
static void test_empty_with_huge_sizes(void) {
  const int64_t big = (int64_t)1 << 40, bs[3] = {3, 0, 4}, ss[3] = {3, big, 0};
  vt_tensor *tb = vt_tensor_new(vt_f32, 3, bs, NULL), *ts = vt_tensor_new(vt_f32, 3, ss, NULL);
  padded_out o = padded_new(3, 5, vt_f32);
  CHECK_STATUS(vo_batched_nms_padded(NULL, &tb->dl, &ts->dl, 0.5, NULL, -1, 5, 0, 0, -1,
                                     &o.keep->dl, &o.labels->dl, &o.scores->dl, &o.num->dl),
               VO_OK);
  for (int64_t i = 0; i < 15; i++)
    CHECK(vt_get(&o.keep->dl, i) == -1 && vt_get(&o.labels->dl, i) == -1 &&
          vt_get(&o.scores->dl, i) == 0);
  for (int64_t b = 0; b < 3; b++) CHECK(vt_get(&o.num->dl, b) == 0);
  const int64_t sel_shape[2] = {0, 3};
  vt_tensor *sel = vt_tensor_new(vt_i64, 2, sel_shape, NULL);
  vt_tensor *num = vt_tensor_new(vt_i64, 0, NULL, NULL);
  vt_set(&num->dl, 0, 42);
  CHECK_STATUS(vo_onnx_nms(NULL, &tb->dl, &ts->dl, 100, 0.5, NULL, 0, &sel->dl, &num->dl), VO_OK);
  CHECK(vt_get(&num->dl, 0) == 0);
  padded_free(&o);
  vt_tensor_free(tb), vt_tensor_free(ts), vt_tensor_free(sel), vt_tensor_free(num);
  /* No images: C * M (class-agnostic candidates) may overflow, nothing runs. */
  const int64_t eb[3] = {0, big, 4}, es[3] = {0, big, big};
  tb = vt_tensor_new(vt_f32, 3, eb, NULL), ts = vt_tensor_new(vt_f32, 3, es, NULL);
  o = padded_new(0, 5, vt_f32);
  CHECK_STATUS(vo_batched_nms_padded(NULL, &tb->dl, &ts->dl, 0.5, NULL, -1, 5, 0, 1, -1,
                                     &o.keep->dl, &o.labels->dl, &o.scores->dl, &o.num->dl),
               VO_OK);
  padded_free(&o);
  vt_tensor_free(tb), vt_tensor_free(ts);
}

int main(void) {
  test_padded_against_batched_nms();
  test_onnx_against_restatement();
  test_threads_and_isa();
  test_errors();
  test_empty_with_huge_sizes();
  return vt_finish("test_nms_padded");
}
