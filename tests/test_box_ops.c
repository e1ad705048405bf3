/* Box operators (nms, batched_nms and the four IoUs) on every available
 * backend and floating dtype, against tests/reference.c and hand-checked values. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "test_util.h"

#define NUM_DTYPES 4
static const DLDataType *const dtypes[NUM_DTYPES] = {&vt_f32, &vt_f64, &vt_f16, &vt_bf16};

static const char *const iou_names[4] = {"box_iou", "generalized_box_iou", "distance_box_iou",
                                         "complete_box_iou"};
static const double default_eps = 1e-7;

/* Float32 (and half types') arithmetic is what the reference emulates; only
 * float64 computes in double. */
static int computes_in_float(DLDataType dt) { return !(dt.code == kDLFloat && dt.bits == 64); }

static int is_f64(DLDataType dt) { return dt.code == kDLFloat && dt.bits == 64; }

/* ------------------------------------------------------------ layouts */

/* How a [rows, cols] input is laid out in memory: the kernels must honour
 * strides and byte_offset, so every comparison runs over several layouts. */
typedef enum layout {
  LAYOUT_CONTIGUOUS,  /* strides NULL */
  LAYOUT_EVERY_OTHER, /* a view of every other row of a [2*rows, cols] buffer */
  LAYOUT_TRANSPOSED,  /* column-major storage: strides {1, rows} */
  LAYOUT_OFFSET,      /* explicit row-major strides plus a byte_offset */
  NUM_LAYOUTS
} layout;

static const char *const layout_names[NUM_LAYOUTS] = {"contiguous", "every-other-row", "transposed",
                                                      "byte-offset"};

/* A host tensor of shape [rows] (cols == 0) or [rows, cols] in `lay`. */
static vt_tensor *make_input(DLDataType dt, int64_t rows, int64_t cols, layout lay,
                             const double *values) {
  int ndim = cols > 0 ? 2 : 1;
  int64_t shape[2] = {rows, cols};
  int64_t c = cols > 0 ? cols : 1;
  int64_t strides[2];
  switch (lay) {
    case LAYOUT_EVERY_OTHER:
      strides[0] = 2 * c;
      strides[1] = 1;
      break;
    case LAYOUT_TRANSPOSED:
      if (ndim == 1) {
        strides[0] = 3; /* a 1-d "transpose" is just a stride > 1 */
      } else {
        strides[0] = 1;
        strides[1] = rows > 0 ? rows : 1;
      }
      break;
    case LAYOUT_OFFSET:
      strides[0] = c;
      strides[1] = 1;
      return vt_tensor_strided(dt, ndim, shape, strides, 3 * vt_dtype_bytes(dt), values);
    default: return vt_tensor_new(dt, ndim, shape, values);
  }
  return vt_tensor_strided(dt, ndim, shape, strides, 0, values);
}

/* ------------------------------------------------------------ generators */

typedef enum box_mode { BOXES_UNIFORM, BOXES_CLUSTERED, BOXES_NEGATIVE, BOXES_MIXED } box_mode;
static const char *const mode_names[4] = {"uniform", "clustered", "negative", "mixed"};

/* Clustered boxes are detector-like: many jittered copies of fewer objects,
 * so neighbours overlap heavily and NMS has real work. Negative boxes lie
 * wholly below -1, where torchvision's batched_nms offset trick was inexact. */
static void gen_boxes(vt_rng *rng, int64_t n, box_mode mode, double *out) {
  int64_t clusters = 1 + n / 16;
  for (int64_t i = 0; i < n; i++) {
    double *b = out + 4 * i;
    box_mode m = mode == BOXES_MIXED ? (box_mode)vt_rng_int(rng, 3) : mode;
    if (m == BOXES_CLUSTERED) {
      vt_rng cl;
      vt_rng_seed(&cl, 1000 + (uint64_t)vt_rng_int(rng, clusters));
      double cx = vt_rng_uniform(&cl, 0, 900), cy = vt_rng_uniform(&cl, 0, 900);
      double w = vt_rng_uniform(&cl, 8, 120), h = vt_rng_uniform(&cl, 8, 120);
      double jw = w * vt_rng_uniform(rng, 0.85, 1.15), jh = h * vt_rng_uniform(rng, 0.85, 1.15);
      cx += vt_rng_uniform(rng, -0.1, 0.1) * w;
      cy += vt_rng_uniform(rng, -0.1, 0.1) * h;
      b[0] = cx - jw / 2;
      b[1] = cy - jh / 2;
      b[2] = cx + jw / 2;
      b[3] = cy + jh / 2;
    } else {
      double lo = m == BOXES_NEGATIVE ? -600 : 0, hi = m == BOXES_NEGATIVE ? -2 : 1000;
      double w = vt_rng_uniform(rng, 0.5, 150), h = vt_rng_uniform(rng, 0.5, 150);
      b[0] = vt_rng_uniform(rng, lo, hi - w);
      b[1] = vt_rng_uniform(rng, lo, hi - h);
      b[2] = b[0] + w;
      b[3] = b[1] + h;
    }
  }
}

/* Scores quantised to 0.1 so that many are exactly tied. */
static void gen_scores(vt_rng *rng, int64_t n, int quantised, double *out) {
  for (int64_t i = 0; i < n; i++) {
    double s = vt_rng_uniform(rng, 0, 1);
    out[i] = quantised ? floor(s * 10) / 10 : s;
  }
}

/* ------------------------------------------------------------ running ops */

typedef struct run_ctx {
  const vo_backend_info *backend;
  DLDevice device;
  const vo_context *ctx;
} run_ctx;

static vo_status call_iou(vr_iou_kind kind, const vo_context *ctx, const DLTensor *a,
                          const DLTensor *b, double eps, DLTensor *out) {
  switch (kind) {
    case VR_IOU: return vo_box_iou(ctx, a, b, out);
    case VR_GIOU: return vo_generalized_box_iou(ctx, a, b, out);
    case VR_DIOU: return vo_distance_box_iou(ctx, a, b, eps, out);
    default: return vo_complete_box_iou(ctx, a, b, eps, out);
  }
}

/* Runs a pairwise op on rc's device; out receives n*m decoded values. */
static vo_status run_iou(const run_ctx *rc, vr_iou_kind kind, const vt_tensor *a,
                         const vt_tensor *b, double eps, double *out) {
  int64_t n = a->dl.shape[0], m = b->dl.shape[0];
  vt_tensor *da = vt_to_device(a, rc->device);
  vt_tensor *db = vt_to_device(b, rc->device);

  vo_tensor_desc desc;
  vo_status st = vo_box_iou_shape(rc->ctx, &da->dl, &db->dl, &desc);
  CHECK_STATUS(st, VO_OK);
  CHECK_MSG(desc.ndim == 2 && desc.shape[0] == n && desc.shape[1] == m,
            "box_iou_shape: ndim %d shape [%lld, %lld], expected [%lld, %lld]", (int)desc.ndim,
            (long long)desc.shape[0], (long long)desc.shape[1], (long long)n, (long long)m);
  /* torchvision's upcasting: float64 boxes give float64, all others float32. */
  const DLDataType out_dt = is_f64(a->dl.dtype) ? vt_f64 : vt_f32;
  CHECK_MSG(
      desc.dtype.code == out_dt.code && desc.dtype.bits == out_dt.bits && desc.dtype.lanes == 1,
      "box_iou_shape: output dtype code %u bits %u for %s boxes", (unsigned)desc.dtype.code,
      (unsigned)desc.dtype.bits, vt_dtype_name(a->dl.dtype));
  CHECK(desc.device.device_type == rc->device.device_type &&
        desc.device.device_id == rc->device.device_id);

  int64_t shape[2] = {n, m};
  vt_tensor *host_out = vt_tensor_new(out_dt, 2, shape, NULL);
  vt_fill(&host_out->dl, -123.0);
  vt_tensor *dout = vt_to_device(host_out, rc->device);
  st = call_iou(kind, rc->ctx, &da->dl, &db->dl, eps, &dout->dl);
  vt_tensor *back = vt_to_host(dout);
  vt_read_all(&back->dl, out);
  vt_tensor_free(back);
  vt_tensor_free(dout);
  vt_tensor_free(host_out);
  vt_tensor_free(da);
  vt_tensor_free(db);
  return st;
}

/* Runs nms (idxs NULL) or batched_nms; keep receives all n entries and
 * *num_kept the 0-d output. */
static vo_status run_nms(const run_ctx *rc, const vt_tensor *boxes, const vt_tensor *scores,
                         const vt_tensor *idxs, double thr, int64_t *keep, int64_t *num_kept) {
  int64_t n = boxes->dl.shape[0];
  vt_tensor *db = vt_to_device(boxes, rc->device);
  vt_tensor *ds = vt_to_device(scores, rc->device);
  vt_tensor *di = idxs ? vt_to_device(idxs, rc->device) : NULL;

  vo_tensor_desc desc[2];
  vo_status st = idxs ? vo_batched_nms_shape(rc->ctx, &db->dl, &ds->dl, &di->dl, thr, desc)
                      : vo_nms_shape(rc->ctx, &db->dl, &ds->dl, thr, desc);
  if (CHECK_STATUS(st, VO_OK)) {
    CHECK_MSG(desc[0].ndim == 1 && desc[0].shape[0] == n, "keep desc: ndim %d shape[0] %lld",
              (int)desc[0].ndim, (long long)desc[0].shape[0]);
    CHECK(desc[0].dtype.code == kDLInt && desc[0].dtype.bits == 64 && desc[0].dtype.lanes == 1);
    CHECK_MSG(desc[1].ndim == 0, "num_kept desc: ndim %d, expected 0", (int)desc[1].ndim);
    CHECK(desc[1].dtype.code == kDLInt && desc[1].dtype.bits == 64 && desc[1].dtype.lanes == 1);
    CHECK(desc[0].device.device_type == rc->device.device_type &&
          desc[1].device.device_type == rc->device.device_type);
  }

  int64_t kshape[1] = {n};
  vt_tensor *hk = vt_tensor_new(vt_i64, 1, kshape, NULL);
  vt_tensor *hn = vt_tensor_new(vt_i64, 0, NULL, NULL);
  vt_fill(&hk->dl, -7);
  vt_fill(&hn->dl, -7);
  vt_tensor *dk = vt_to_device(hk, rc->device);
  vt_tensor *dn = vt_to_device(hn, rc->device);
  st = idxs ? vo_batched_nms(rc->ctx, &db->dl, &ds->dl, &di->dl, thr, &dk->dl, &dn->dl)
            : vo_nms(rc->ctx, &db->dl, &ds->dl, thr, &dk->dl, &dn->dl);
  vt_tensor *bk = vt_to_host(dk);
  vt_tensor *bn = vt_to_host(dn);
  for (int64_t i = 0; i < n; i++) keep[i] = (int64_t)vt_get(&bk->dl, i);
  *num_kept = (int64_t)vt_get(&bn->dl, 0);
  vt_tensor *all[] = {db, ds, di, hk, hn, dk, dn, bk, bn};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
  return st;
}

/* ------------------------------------------------------------ comparisons */

/* Equal values, NaN matching NaN. */
static int identical(const double *a, const double *b, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!(a[i] == b[i] || (isnan(a[i]) && isnan(b[i])))) return 0;
  return 1;
}

/* Whether `got` (already in dt) matches `ref`, the reference computed in
 * dt's compute precision. IoU-type results are differences of quantities of
 * magnitude <= 1, so errors are bounded relative to 1 + |ref|. */
static int iou_close(DLDataType dt, double got, double ref) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got);
  if (is_f64(dt)) return fabs(got - ref) <= 1e-12 * (1 + fabs(ref));
  if (!vt_dtype_is_half(dt)) return fabs(got - ref) <= 1e-5 * (1 + fabs(ref));
  /* Half types: the float32 result rounded to dt, within one ulp of dt. A
   * result near zero (GIoU/DIoU cancellation) can differ in many half ulps
   * while both float32 computations are within a few float ulps of each
   * other, so that is accepted too. */
  if (vt_half_ulp_distance(dt, got, vt_round_to(dt, ref)) <= 1) return 1;
  return fabs(got - ref) <= 4 * FLT_EPSILON * (1 + fabs(ref));
}

/* Compares n*m pairwise results; reports the first mismatch of the case. */
static void expect_iou(const char *what, DLDataType dt, const double *got, const double *ref,
                       int64_t n, int64_t m) {
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < n * m; i++) {
    if (!iou_close(dt, got[i], ref[i])) {
      if (first < 0) first = i;
      bad++;
    }
  }
  if (first < 0) {
    CHECK(1);
    return;
  }
  CHECK_MSG(0, "%s: %lld of %lld values differ; first at [%lld, %lld]: got %.17g, expected %.17g",
            what, (long long)bad, (long long)(n * m), (long long)(first / m),
            (long long)(first % m), got[first], ref[first]);
}

static void expect_keep(const char *what, const int64_t *keep, int64_t num_kept, const int64_t *ref,
                        int64_t ref_kept, int64_t n) {
  if (!CHECK_MSG(num_kept == ref_kept, "%s: num_kept %lld, expected %lld", what,
                 (long long)num_kept, (long long)ref_kept))
    return;
  for (int64_t i = 0; i < ref_kept; i++) {
    if (!CHECK_MSG(keep[i] == ref[i], "%s: keep[%lld] = %lld, expected %lld", what, (long long)i,
                   (long long)keep[i], (long long)ref[i]))
      return;
  }
  for (int64_t i = ref_kept; i < n; i++) {
    if (!CHECK_MSG(keep[i] == -1, "%s: keep[%lld] = %lld past num_kept, expected -1", what,
                   (long long)i, (long long)keep[i]))
      return;
  }
  CHECK(1);
}

/* ------------------------------------------------------------ random IoU cases */

static void random_iou_cases(const run_ctx *rc) {
  static const int64_t sizes[][2] = {{1, 1}, {7, 5}, {33, 64}, {129, 17}, {257, 130}};
  for (int d = 0; d < NUM_DTYPES; d++) {
    DLDataType dt = *dtypes[d];
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      int64_t n = sizes[s][0], m = sizes[s][1];
      uint64_t seed = 17 + 31 * (uint64_t)s + 1000 * (uint64_t)d;
      vt_rng rng;
      vt_rng_seed(&rng, seed);
      double *a = malloc(sizeof(double) * 4 * (size_t)n);
      double *b = malloc(sizeof(double) * 4 * (size_t)m);
      double *da = malloc(sizeof(double) * 4 * (size_t)n);
      double *db = malloc(sizeof(double) * 4 * (size_t)m);
      double *got = malloc(sizeof(double) * (size_t)(n * m));
      double *ref = malloc(sizeof(double) * (size_t)(n * m));
      gen_boxes(&rng, n, (box_mode)(s % 4), a);
      gen_boxes(&rng, m, (box_mode)((s + 1) % 4), b);
      layout la = (layout)(s % NUM_LAYOUTS), lb = (layout)((s + 2) % NUM_LAYOUTS);
      vt_tensor *ta = make_input(dt, n, 4, la, a);
      vt_tensor *tb = make_input(dt, m, 4, lb, b);
      /* The reference sees exactly the values the tensors hold. */
      vt_read_all(&ta->dl, da);
      vt_read_all(&tb->dl, db);
      for (int k = 0; k < 4; k++) {
        /* A large eps too, so a kernel that ignores it is caught. */
        double eps = (k >= VR_DIOU && s % 2) ? 0.25 : default_eps;
        vr_pairwise_iou((vr_iou_kind)k, da, n, db, m, eps, computes_in_float(dt), ref);
        char what[200];
        snprintf(what, sizeof what, "%s %s %s [%lld]x[%lld] %s/%s eps %g seed %llu",
                 rc->backend->name, iou_names[k], vt_dtype_name(dt), (long long)n, (long long)m,
                 layout_names[la], layout_names[lb], eps, (unsigned long long)seed);
        if (CHECK_MSG(run_iou(rc, (vr_iou_kind)k, ta, tb, eps, got) == VO_OK, "%s: %s", what,
                      vo_last_error()))
          expect_iou(what, dt, got, ref, n, m);
      }
      vt_tensor_free(ta);
      vt_tensor_free(tb);
      free(a);
      free(b);
      free(da);
      free(db);
      free(got);
      free(ref);
    }
  }
}

/* ------------------------------------------------------------ random NMS cases */

/* One nms or batched_nms comparison on n random boxes. */
static void random_nms_case(const run_ctx *rc, DLDataType dt, int64_t n, box_mode mode, int batched,
                            double thr, layout lay, uint64_t seed) {
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  double *boxes = malloc(sizeof(double) * 4 * (size_t)n + 1);
  double *scores = malloc(sizeof(double) * (size_t)n + 1);
  double *cats = malloc(sizeof(double) * (size_t)n + 1);
  int64_t *idxs = malloc(sizeof(int64_t) * (size_t)n + 1);
  int64_t *ref = malloc(sizeof(int64_t) * (size_t)n + 1);
  int64_t *keep = malloc(sizeof(int64_t) * (size_t)n + 1);
  gen_boxes(&rng, n, mode, boxes);
  gen_scores(&rng, n, (int)(seed % 3 != 0), scores);
  for (int64_t i = 0; i < n; i++) cats[i] = (double)vt_rng_int(&rng, 7);

  vt_tensor *tb = make_input(dt, n, 4, lay, boxes);
  vt_tensor *ts = make_input(dt, n, 0, (layout)((lay + 1) % NUM_LAYOUTS), scores);
  vt_tensor *ti = batched ? make_input(vt_i64, n, 0, lay, cats) : NULL;
  vt_read_all(&tb->dl, boxes);
  vt_read_all(&ts->dl, scores);
  for (int64_t i = 0; i < n; i++) idxs[i] = (int64_t)cats[i];

  int single = computes_in_float(dt);
  int64_t ref_kept = batched ? vr_batched_nms(boxes, scores, idxs, n, thr, single, ref)
                             : vr_nms(boxes, scores, n, thr, single, ref);
  int64_t num_kept = -1;
  char what[200];
  snprintf(what, sizeof what, "%s %s %s n=%lld thr %g %s boxes %s seed %llu", rc->backend->name,
           batched ? "batched_nms" : "nms", vt_dtype_name(dt), (long long)n, thr, mode_names[mode],
           layout_names[lay], (unsigned long long)seed);
  if (CHECK_MSG(run_nms(rc, tb, ts, ti, thr, keep, &num_kept) == VO_OK, "%s: %s", what,
                vo_last_error()))
    expect_keep(what, keep, num_kept, ref, ref_kept, n);
  if (n >= 10000) printf("%s: kept %lld\n", what, (long long)num_kept);

  vt_tensor_free(tb);
  vt_tensor_free(ts);
  vt_tensor_free(ti);
  free(boxes);
  free(scores);
  free(cats);
  free(idxs);
  free(ref);
  free(keep);
}

/* nms on contiguous float32 boxes and scores, n rows (the selection's
 * vector fill, eight rows a step), scores that include NaN, -0 and +0,
 * infinities, negatives and ties, each in several lane positions. */
static void special_scores_nms_case(const run_ctx *rc, int64_t n, int disjoint, uint64_t seed) {
  static const double specials[] = {NAN, -0.0, 0.0, INFINITY, -INFINITY, -0.5, 0.25, 0.25};
  const int num_specials = (int)(sizeof specials / sizeof specials[0]);
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  double *boxes = malloc(sizeof(double) * 4 * (size_t)n),
         *scores = malloc(sizeof(double) * (size_t)n);
  int64_t *ref = malloc(sizeof(int64_t) * (size_t)n), *keep = malloc(sizeof(int64_t) * (size_t)n);
  gen_boxes(&rng, n, BOXES_CLUSTERED, boxes);
  if (disjoint) /* every box kept: the output is the whole score order */
    for (int64_t i = 0; i < n; i++) {
      const double b[4] = {10.0 * (double)i, 0, 10.0 * (double)i + 5, 5};
      memcpy(boxes + 4 * i, b, sizeof b);
    }
  gen_scores(&rng, n, 0, scores);
  for (int64_t i = 0; i < n; i++)
    if (vt_rng_int(&rng, 3) == 0) scores[i] = specials[vt_rng_int(&rng, num_specials)];
  vt_tensor *tb = make_input(vt_f32, n, 4, LAYOUT_CONTIGUOUS, boxes);
  vt_tensor *ts = make_input(vt_f32, n, 0, LAYOUT_CONTIGUOUS, scores);
  vt_read_all(&tb->dl, boxes);
  vt_read_all(&ts->dl, scores);
  const int64_t ref_kept = vr_nms(boxes, scores, n, 0.5, 1, ref);
  int64_t num_kept = -1;
  char what[160];
  snprintf(what, sizeof what, "%s nms float32 n=%lld special scores%s seed %llu", rc->backend->name,
           (long long)n, disjoint ? ", disjoint boxes" : "", (unsigned long long)seed);
  if (CHECK_MSG(run_nms(rc, tb, ts, NULL, 0.5, keep, &num_kept) == VO_OK, "%s: %s", what,
                vo_last_error()))
    expect_keep(what, keep, num_kept, ref, ref_kept, n);
  vt_tensor_free(tb);
  vt_tensor_free(ts);
  free(boxes);
  free(scores);
  free(ref);
  free(keep);
}

static void random_nms_cases(const run_ctx *rc) {
  static const double thresholds[3] = {0.3, 0.5, 0.7};
  for (int d = 0; d < NUM_DTYPES; d++) {
    DLDataType dt = *dtypes[d];
    for (int t = 0; t < 3; t++) {
      layout lay = (layout)((t + d) % NUM_LAYOUTS);
      uint64_t seed = 100 + 10 * (uint64_t)d + (uint64_t)t;
      random_nms_case(rc, dt, 10000, BOXES_MIXED, 0, thresholds[t], lay, seed);
      random_nms_case(rc, dt, 1 + (int64_t)(seed % 97), BOXES_CLUSTERED, 0, thresholds[t], lay,
                      seed + 1);
      random_nms_case(rc, dt, 3001, BOXES_MIXED, 1, thresholds[t], lay, seed + 2);
      /* All coordinates below -1, where torchvision's offset trick is inexact. */
      random_nms_case(rc, dt, 2000, BOXES_NEGATIVE, 1, thresholds[t], lay, seed + 3);
    }
  }
  /* One category on one thread runs the CPU's selection pass (float32
   * compute): sizes around its vector width and its squeezes of dead
   * entries, thresholds that suppress everything, half, or nothing
   * (only the kept box leaves each pass), quantised and distinct scores. */
  static const int64_t sizes[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 100, 257, 1000};
  static const double select_thresholds[4] = {0.0, 0.5, 0.9, 1.0};
  for (int d = 0; d < NUM_DTYPES; d++)
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
      for (int t = 0; t < 4; t++) {
        const uint64_t seed = 500 + 40 * (uint64_t)d + 4 * (uint64_t)k + (uint64_t)t;
        random_nms_case(rc, *dtypes[d], sizes[k], (box_mode)(seed % 4), 0, select_thresholds[t],
                        (layout)(seed % NUM_LAYOUTS), seed);
      }
  for (int64_t n = 7; n <= 41; n += 2)
    for (int disjoint = 0; disjoint < 2; disjoint++)
      special_scores_nms_case(rc, n, disjoint, 900 + 2 * (uint64_t)n + (uint64_t)disjoint);
}

/* ------------------------------------------------------------ hand-checked NMS */

/* Runs a hand case on every dtype and checks the exact expected indices; the
 * reference must agree too, or the reference itself is wrong. */
static void nms_hand(const run_ctx *rc, const char *name, const double *boxes, const double *scores,
                     const int64_t *idxs, int64_t n, double thr, const int64_t *expected,
                     int64_t expected_kept) {
  int64_t ref[16], keep[16];
  double cats[16], b[64], s[16];
  if (n > 16) abort();
  for (int64_t i = 0; i < n; i++) cats[i] = idxs ? (double)idxs[i] : 0;
  for (int d = 0; d < NUM_DTYPES; d++) {
    DLDataType dt = *dtypes[d];
    char what[200];
    snprintf(what, sizeof what, "%s %s %s", rc->backend->name, name, vt_dtype_name(dt));
    vt_tensor *tb = make_input(dt, n, 4, (layout)(d % NUM_LAYOUTS), boxes);
    vt_tensor *ts = make_input(dt, n, 0, LAYOUT_CONTIGUOUS, scores);
    vt_tensor *ti = idxs ? make_input(vt_i64, n, 0, LAYOUT_CONTIGUOUS, cats) : NULL;
    vt_read_all(&tb->dl, b);
    vt_read_all(&ts->dl, s);
    int64_t ref_kept = idxs ? vr_batched_nms(b, s, idxs, n, thr, computes_in_float(dt), ref)
                            : vr_nms(b, s, n, thr, computes_in_float(dt), ref);
    char rwhat[220];
    snprintf(rwhat, sizeof rwhat, "reference for %s", what);
    expect_keep(rwhat, ref, ref_kept, expected, expected_kept, ref_kept);

    int64_t num_kept = -1;
    if (CHECK_MSG(run_nms(rc, tb, ts, ti, thr, keep, &num_kept) == VO_OK, "%s: %s", what,
                  vo_last_error()))
      expect_keep(what, keep, num_kept, expected, expected_kept, n);
    vt_tensor_free(tb);
    vt_tensor_free(ts);
    vt_tensor_free(ti);
  }
}

static void hand_nms_cases(const run_ctx *rc) {
  const double nan = NAN;
  {
    /* Disjoint boxes: output is just the stable descending order. */
    const double b[] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9};
    const double s[] = {0.5, 0.9, 0.5, 0.9, 0.75};
    const int64_t e[] = {1, 3, 4, 0, 2};
    nms_hand(rc, "stable order on ties", b, s, NULL, 5, 0.5, e, 5);
  }
  {
    /* Equal scores: the lower index comes first and suppresses its twin. */
    const double b[] = {20, 20, 30, 30, 0, 0, 10, 10, 0, 0, 10, 10, 20, 20, 30, 30};
    const double s[] = {0.5, 0.5, 0.5, 0.5};
    const int64_t e[] = {0, 1};
    nms_hand(rc, "tied scores suppress by index", b, s, NULL, 4, 0.5, e, 2);
  }
  {
    /* IoU exactly 0.5 (inter 1, union 2): not strictly greater than 0.5. */
    const double b[] = {0, 0, 2, 1, 0, 0, 1, 1};
    const double s[] = {0.9, 0.8};
    const int64_t both[] = {0, 1}, first[] = {0};
    nms_hand(rc, "IoU == threshold keeps both", b, s, NULL, 2, 0.5, both, 2);
    nms_hand(rc, "IoU > threshold suppresses", b, s, NULL, 2, 0.49, first, 1);
  }
  {
    /* Identical boxes have IoU exactly 1, which threshold 1 never exceeds. */
    const double b[] = {2, 3, 7, 9, 2, 3, 7, 9};
    const double s[] = {0.8, 0.9};
    const int64_t e[] = {1, 0};
    nms_hand(rc, "threshold 1 suppresses nothing", b, s, NULL, 2, 1.0, e, 2);
  }
  {
    /* Zero-area boxes: two identical points give 0/0 = NaN, which never
     * suppresses, even at threshold 0; a point inside a box has IoU 0. */
    const double b[] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 10, 10, 5, 5, 5, 5, 0, 0, 10, 0, 0, 0, 10, 0};
    const double s[] = {0.9, 0.8, 0.7, 0.6, 0.5, 0.4};
    const int64_t e[] = {0, 1, 2, 3, 4, 5};
    nms_hand(rc, "zero-area boxes", b, s, NULL, 6, 0.0, e, 6);
  }
  {
    /* A NaN coordinate makes every IoU with that box NaN: it is kept and
     * suppresses nothing, while the other boxes still suppress each other. */
    const double b[] = {0, 0, 10, 10, nan, 0, 10, 10, 0, 0, 10, 10, 0, 0, 10, nan};
    const double s[] = {0.9, 0.8, 0.7, 0.95};
    const int64_t e[] = {3, 0, 1};
    nms_hand(rc, "NaN coordinates", b, s, NULL, 4, 0.5, e, 3);
  }
  {
    /* NaN scores sort first (as torch's descending sort) and do suppress. */
    const double b[] = {0, 0, 10, 10, 0, 0, 10, 10, 20, 20, 30, 30, 40, 40, 50, 50};
    const double s[] = {0.9, nan, 0.5, nan};
    const int64_t e[] = {1, 3, 2};
    nms_hand(rc, "NaN scores first", b, s, NULL, 4, 0.5, e, 3);
  }
  {
    const double b[] = {0, 0, 1, 1};
    const double s[] = {0.1};
    const int64_t e[] = {0};
    nms_hand(rc, "one box", b, s, NULL, 1, 0.5, e, 1);
    nms_hand(rc, "empty", b, s, NULL, 0, 0.5, e, 0);
  }
  {
    /* All identical: only the first of the highest scores survives. */
    double b[24];
    for (int i = 0; i < 6; i++) {
      b[4 * i] = 3;
      b[4 * i + 1] = 4;
      b[4 * i + 2] = 13;
      b[4 * i + 3] = 24;
    }
    const double s[] = {0.3, 0.9, 0.9, 0.1, 0.9, 0.5};
    const int64_t e[] = {1};
    nms_hand(rc, "all identical", b, s, NULL, 6, 0.5, e, 1);
  }
  {
    /* Identical boxes of different categories both survive; same category
     * suppresses. */
    const double b[] = {0, 0, 10, 10, 0, 0, 10, 10, 0, 0, 10, 10};
    const double s[] = {0.9, 0.8, 0.7};
    const int64_t idxs[] = {0, 1, 0};
    const int64_t e[] = {0, 1};
    nms_hand(rc, "batched: categories are independent", b, s, idxs, 3, 0.5, e, 2);
  }
  {
    /* Coordinates below -1: torchvision's offset (max_coordinate + 1 = 0)
     * would leave boxes 0 and 1 overlapping (IoU 49/79) and drop box 1. */
    const double b[] = {-10, -10, -2, -2, -9, -9, -1, -1, -10, -10, -2, -2, -30, -30, -20, -20};
    const double s[] = {0.9, 0.8, 0.7, 0.95};
    const int64_t idxs[] = {0, 1, 0, 5};
    const int64_t e[] = {3, 0, 1};
    nms_hand(rc, "batched: negative coordinates", b, s, idxs, 4, 0.5, e, 3);
  }
  {
    /* Categories interleaved with ties: output is by score, then index. */
    const double b[] = {0,  0,  10, 10, 1, 1, 11, 11, 0,  0,  10, 10,
                        50, 50, 60, 60, 1, 1, 11, 11, 50, 50, 60, 60};
    const double s[] = {0.5, 0.5, 0.7, 0.5, 0.7, 0.2};
    const int64_t idxs[] = {3, 2, 2, 3, 3, -4};
    /* Category 3: 4 (0.7) suppresses 0 (IoU 81/119); 3 is far. Category 2:
     * 2 (0.7) suppresses 1. Category -4: 5 alone. */
    const int64_t e[] = {2, 4, 3, 5};
    nms_hand(rc, "batched: interleaved categories", b, s, idxs, 6, 0.5, e, 4);
  }
}

/* ------------------------------------------------------------ hand-checked IoUs */

static void iou_hand(const run_ctx *rc, const char *name, const double *a, const double *b,
                     const double expected[4]) {
  for (int d = 0; d < NUM_DTYPES; d++) {
    DLDataType dt = *dtypes[d];
    vt_tensor *ta = make_input(dt, 1, 4, LAYOUT_CONTIGUOUS, a);
    vt_tensor *tb = make_input(dt, 1, 4, LAYOUT_CONTIGUOUS, b);
    for (int k = 0; k < 4; k++) {
      double got = -1;
      double ref = expected[k];
      if (!is_f64(dt)) ref = (float)ref;
      char what[200];
      snprintf(what, sizeof what, "%s %s %s %s", rc->backend->name, iou_names[k], name,
               vt_dtype_name(dt));
      if (CHECK_MSG(run_iou(rc, (vr_iou_kind)k, ta, tb, default_eps, &got) == VO_OK, "%s: %s", what,
                    vo_last_error()))
        CHECK_MSG(iou_close(dt, got, ref), "%s: got %.17g, expected %.17g", what, got, ref);
      /* And the reference agrees with the hand value. */
      double r;
      double da[4], db[4];
      vt_read_all(&ta->dl, da);
      vt_read_all(&tb->dl, db);
      vr_pairwise_iou((vr_iou_kind)k, da, 1, db, 1, default_eps, computes_in_float(dt), &r);
      CHECK_MSG(iou_close(dt, vt_round_to(dt, r), ref), "reference for %s: %.17g, expected %.17g",
                what, r, ref);
    }
    vt_tensor_free(ta);
    vt_tensor_free(tb);
  }
}

/* Integer boxes (as torchvision accepts them): the exact IoU of integer
 * coordinates, computed in float64, returned as float32; the reference
 * computes in double from the same integer values. The coordinates span
 * what int8 / uint8 hold, and larger ones (areas above 2^24, where float32
 * arithmetic would round) for the wider types. */
static void integer_iou_cases(const run_ctx *rc) {
  static const DLDataType *const int_dtypes[] = {&vt_i64, &vt_i32, &vt_i16, &vt_i8, &vt_u8};
  const int64_t n = 9, m = 7;
  for (size_t d = 0; d < sizeof int_dtypes / sizeof int_dtypes[0]; d++) {
    const DLDataType dt = *int_dtypes[d];
    const int narrow = dt.bits == 8;
    const double span = narrow ? 60 : (dt.bits == 16 ? 16000 : 3000000);
    vt_rng rng;
    vt_rng_seed(&rng, 4242 + d);
    double a[4 * 9], b[4 * 7], ref[9 * 7], got[9 * 7];
    for (int64_t i = 0; i < 4 * n; i++) a[i] = floor(vt_rng_uniform(&rng, 0, span));
    for (int64_t i = 0; i < 4 * m; i++) b[i] = floor(vt_rng_uniform(&rng, 0, span));
    for (int64_t i = 0; i < n; i++) a[4 * i + 2] += a[4 * i], a[4 * i + 3] += a[4 * i + 1];
    for (int64_t i = 0; i < m; i++) b[4 * i + 2] += b[4 * i], b[4 * i + 3] += b[4 * i + 1];
    b[0] = a[0], b[1] = a[1], b[2] = a[2], b[3] = a[3]; /* one identical pair: IoU 1 */
    for (int lay = 0; lay < NUM_LAYOUTS; lay++) {
      vt_tensor *ta = make_input(dt, n, 4, (layout)lay, a);
      vt_tensor *tb = make_input(dt, m, 4, (layout)((lay + 1) % NUM_LAYOUTS), b);
      for (int k = 0; k < 4; k++) {
        vr_pairwise_iou((vr_iou_kind)k, a, n, b, m, default_eps, 0, ref);
        for (int64_t i = 0; i < n * m; i++) ref[i] = (float)ref[i];
        char what[160];
        snprintf(what, sizeof what, "%s %s %s boxes, %s", rc->backend->name, iou_names[k],
                 vt_dtype_name(dt), layout_names[lay]);
        if (CHECK_MSG(run_iou(rc, (vr_iou_kind)k, ta, tb, default_eps, got) == VO_OK, "%s: %s",
                      what, vo_last_error())) {
          CHECK_MSG(got[0] == 1.0f, "%s: identical boxes give %.9g", what, got[0]);
          expect_iou(what, vt_f32, got, ref, n, m);
        }
      }
      vt_tensor_free(ta);
      vt_tensor_free(tb);
    }
  }
}

static void hand_iou_cases(const run_ctx *rc) {
  const double pi = 3.14159265358979323846, eps = default_eps, nan = NAN;
  {
    /* inter 1, union 7, enclosing 3x3, centres (1,1) and (2,2); same aspect
     * ratio, so CIoU == DIoU. */
    const double a[] = {0, 0, 2, 2}, b[] = {1, 1, 3, 3};
    const double diou = 1.0 / 7 - 2 / (18 + eps);
    const double e[4] = {1.0 / 7, 1.0 / 7 - 2.0 / 9, diou, diou};
    iou_hand(rc, "[0,0,2,2] vs [1,1,3,3]", a, b, e);
  }
  {
    /* b encloses a: union == enclosing area; aspect ratios 1 and 2. */
    const double a[] = {0, 0, 2, 2}, b[] = {0, 0, 4, 2};
    const double diou = 0.5 - 1 / (20 + eps);
    const double v = 4 / (pi * pi) * (pi / 4 - atan(2.0)) * (pi / 4 - atan(2.0));
    const double alpha = v / (1 - 0.5 + v + eps);
    const double e[4] = {0.5, 0.5, diou, diou - alpha * v};
    iou_hand(rc, "[0,0,2,2] vs [0,0,4,2]", a, b, e);
  }
  {
    /* Disjoint: IoU 0, enclosing 9, union 2, centre distance^2 8. */
    const double a[] = {0, 0, 1, 1}, b[] = {2, 2, 3, 3};
    const double e[4] = {0, -7.0 / 9, -8 / (18 + eps), -8 / (18 + eps)};
    iou_hand(rc, "disjoint", a, b, e);
  }
  {
    const double a[] = {-5, 3, 7, 9}, b[] = {-5, 3, 7, 9};
    const double e[4] = {1, 1, 1, 1};
    iou_hand(rc, "identical", a, b, e);
  }
  {
    /* Two identical points: 0/0. */
    const double a[] = {1, 1, 1, 1}, b[] = {1, 1, 1, 1};
    const double e[4] = {nan, nan, nan, nan};
    iou_hand(rc, "identical points", a, b, e);
  }
  {
    const double a[] = {0, 0, nan, 2}, b[] = {1, 1, 3, 3};
    const double e[4] = {nan, nan, nan, nan};
    iou_hand(rc, "NaN coordinate", a, b, e);
  }
  {
    /* Empty inputs give an empty [N, M] output. */
    const double box[] = {0, 0, 1, 1};
    for (int d = 0; d < NUM_DTYPES; d++) {
      vt_tensor *ta = make_input(*dtypes[d], 0, 4, LAYOUT_CONTIGUOUS, box);
      vt_tensor *tb = make_input(*dtypes[d], 1, 4, LAYOUT_CONTIGUOUS, box);
      double dummy;
      for (int k = 0; k < 4; k++) {
        CHECK_MSG(run_iou(rc, (vr_iou_kind)k, ta, tb, eps, &dummy) == VO_OK, "%s %s [0]x[1]: %s",
                  rc->backend->name, iou_names[k], vo_last_error());
        CHECK_MSG(run_iou(rc, (vr_iou_kind)k, tb, ta, eps, &dummy) == VO_OK, "%s %s [1]x[0]: %s",
                  rc->backend->name, iou_names[k], vo_last_error());
      }
      vt_tensor_free(ta);
      vt_tensor_free(tb);
    }
  }
}

/* ------------------------------------------------------------ generic path */

static int desc_is(const vo_tensor_desc *d, int ndim, const int64_t *shape, DLDataType dt,
                   DLDevice dev) {
  if (d->ndim != ndim) return 0;
  for (int i = 0; i < ndim; i++)
    if (d->shape[i] != shape[i]) return 0;
  return d->dtype.code == dt.code && d->dtype.bits == dt.bits && d->dtype.lanes == dt.lanes &&
         d->device.device_type == dev.device_type && d->device.device_id == dev.device_id;
}

/* nms and the IoUs through vo_op_find + vo_infer + vo_call; results must
 * equal the typed wrappers'. */
static void generic_path_cases(const run_ctx *rc) {
  const vo_op_info *op = vo_op_find("nms");
  if (!CHECK(op != NULL)) return;
  CHECK(strcmp(op->name, "nms") == 0);
  CHECK(op->num_args == 3 && op->num_outputs == 2);

  enum { N = 300 };
  vt_rng rng;
  vt_rng_seed(&rng, 4242);
  double boxes[4 * N], scores[N];
  gen_boxes(&rng, N, BOXES_CLUSTERED, boxes);
  gen_scores(&rng, N, 1, scores);
  vt_tensor *hb = make_input(vt_f32, N, 4, LAYOUT_EVERY_OTHER, boxes);
  vt_tensor *hs = make_input(vt_f32, N, 0, LAYOUT_CONTIGUOUS, scores);
  vt_tensor *db = vt_to_device(hb, rc->device);
  vt_tensor *ds = vt_to_device(hs, rc->device);

  vo_value args[3] = {vo_tensor_value(&db->dl), vo_tensor_value(&ds->dl), vo_float_value(0.5)};
  vo_tensor_desc desc[2];
  memset(desc, 0, sizeof desc);
  CHECK_STATUS(vo_infer(rc->ctx, op, args, 3, desc, 2), VO_OK);
  const int64_t nshape[1] = {N};
  CHECK_MSG(desc_is(&desc[0], 1, nshape, vt_i64, rc->device),
            "nms keep desc: ndim %d shape[0] %lld dtype %d/%d", (int)desc[0].ndim,
            (long long)desc[0].shape[0], desc[0].dtype.code, desc[0].dtype.bits);
  CHECK_MSG(desc_is(&desc[1], 0, NULL, vt_i64, rc->device), "nms num_kept desc: ndim %d",
            (int)desc[1].ndim);

  vt_tensor *hk = vt_tensor_new(vt_i64, 1, nshape, NULL);
  vt_tensor *hn = vt_tensor_new(vt_i64, 0, NULL, NULL);
  vt_tensor *dk = vt_to_device(hk, rc->device);
  vt_tensor *dn = vt_to_device(hn, rc->device);
  DLTensor *outs[2] = {&dk->dl, &dn->dl};
  CHECK_STATUS(vo_call(rc->ctx, op, args, 3, outs, 2), VO_OK);
  vt_tensor *bk = vt_to_host(dk);
  vt_tensor *bn = vt_to_host(dn);

  int64_t typed[N], typed_kept = -1;
  CHECK_STATUS(run_nms(rc, hb, hs, NULL, 0.5, typed, &typed_kept), VO_OK);
  int64_t generic[N];
  for (int i = 0; i < N; i++) generic[i] = (int64_t)vt_get(&bk->dl, i);
  expect_keep("generic nms vs typed", generic, (int64_t)vt_get(&bn->dl, 0), typed, typed_kept, N);
  CHECK(typed_kept > 0 && typed_kept < N);

  /* IoU ops; distance/complete also with eps left to its schema default. */
  double ref[N * 7], got[N * 7];
  vt_tensor *hb2 = make_input(vt_f32, 7, 4, LAYOUT_TRANSPOSED, boxes);
  vt_tensor *db2 = vt_to_device(hb2, rc->device);
  for (int k = 0; k < 4; k++) {
    const vo_op_info *iop = vo_op_find(iou_names[k]);
    if (!CHECK_MSG(iop != NULL, "vo_op_find(\"%s\")", iou_names[k])) continue;
    CHECK_MSG(iop->num_args == (k >= VR_DIOU ? 3 : 2) && iop->num_outputs == 1,
              "%s: num_args %d num_outputs %d", iou_names[k], iop->num_args, iop->num_outputs);
    CHECK_STATUS(run_iou(rc, (vr_iou_kind)k, hb, hb2, default_eps, ref), VO_OK);
    int has_eps = k >= VR_DIOU ? 1 : 0;
    for (int with_eps = 0; with_eps <= has_eps; with_eps++) {
      vo_value iargs[3] = {vo_tensor_value(&db->dl), vo_tensor_value(&db2->dl),
                           vo_float_value(default_eps)};
      int nargs = 2 + with_eps;
      vo_tensor_desc od;
      memset(&od, 0, sizeof od);
      const int64_t oshape[2] = {N, 7};
      if (CHECK_STATUS(vo_infer(rc->ctx, iop, iargs, nargs, &od, 1), VO_OK))
        CHECK_MSG(desc_is(&od, 2, oshape, vt_f32, rc->device), "%s desc: ndim %d [%lld, %lld]",
                  iou_names[k], (int)od.ndim, (long long)od.shape[0], (long long)od.shape[1]);
      vt_tensor *ho = vt_tensor_new(vt_f32, 2, oshape, NULL);
      vt_tensor *dout = vt_to_device(ho, rc->device);
      DLTensor *o[1] = {&dout->dl};
      CHECK_STATUS(vo_call(rc->ctx, iop, iargs, nargs, o, 1), VO_OK);
      vt_tensor *bo = vt_to_host(dout);
      vt_read_all(&bo->dl, got);
      CHECK_MSG(identical(got, ref, N * 7), "generic %s (%d args) differs from typed", iou_names[k],
                nargs);
      vt_tensor_free(ho);
      vt_tensor_free(dout);
      vt_tensor_free(bo);
    }
  }
  vt_tensor *all[] = {hb, hs, db, ds, hk, hn, dk, dn, bk, bn, hb2, db2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

/* ------------------------------------------------------------ contexts (CPU) */

/* Thread count and ISA are CPU settings: results must not depend on them
 * (NMS exactly; IoUs exactly across thread counts, within float tolerance
 * across ISAs, since vector code may contract or reorder). */
static void context_cases(void) {
  vo_context *ctx[4] = {NULL, NULL, NULL, NULL}; /* 1 thread, 2 threads, scalar, auto */
  for (int i = 0; i < 4; i++)
    if (!CHECK_STATUS(vo_context_create(&ctx[i]), VO_OK)) return;
  CHECK_STATUS(vo_context_set_num_threads(ctx[0], 1), VO_OK);
  CHECK_STATUS(vo_context_set_num_threads(ctx[1], 2), VO_OK);
  CHECK(vo_context_num_threads(ctx[0]) == 1 && vo_context_num_threads(ctx[1]) == 2);
  CHECK_STATUS(vo_context_set_isa(ctx[2], VO_ISA_SCALAR), VO_OK);
  CHECK_STATUS(vo_context_set_isa(ctx[3], VO_ISA_AUTO), VO_OK);
  const char *isa = vo_cpu_isa(ctx[2]);
  CHECK_MSG(isa && strcmp(isa, "scalar") == 0, "vo_cpu_isa(scalar ctx) = \"%s\"", isa ? isa : "");
  isa = vo_cpu_isa(ctx[3]);
  CHECK(isa && *isa);
  printf("CPU ISA under VO_ISA_AUTO: %s\n", isa ? isa : "(null)");

  vo_backend_info cpu = {"cpu", kDLCPU, 1, 1, ""};
  enum { N = 1500, M = 301 }; /* 1500 x 301 IoUs: enough work for two threads */
  vt_rng rng;
  vt_rng_seed(&rng, 99);
  double *boxes = malloc(sizeof(double) * 4 * N), *scores = malloc(sizeof(double) * N);
  double *cats = malloc(sizeof(double) * N);
  gen_boxes(&rng, N, BOXES_MIXED, boxes);
  gen_scores(&rng, N, 1, scores);
  for (int i = 0; i < N; i++) cats[i] = (double)vt_rng_int(&rng, 4);
  for (int d = 0; d < NUM_DTYPES; d++) {
    DLDataType dt = *dtypes[d];
    vt_tensor *tb = make_input(dt, N, 4, LAYOUT_CONTIGUOUS, boxes);
    vt_tensor *tm = make_input(dt, M, 4, LAYOUT_EVERY_OTHER, boxes + 8);
    vt_tensor *ts = make_input(dt, N, 0, LAYOUT_CONTIGUOUS, scores);
    vt_tensor *ti = make_input(vt_i64, N, 0, LAYOUT_CONTIGUOUS, cats);
    int64_t *keep[4], kept[4];
    int64_t *bkeep[4], bkept[4];
    double *iou[4][4];
    for (int c = 0; c < 4; c++) {
      run_ctx rc = {&cpu, {kDLCPU, 0}, ctx[c]};
      keep[c] = malloc(sizeof(int64_t) * N);
      bkeep[c] = malloc(sizeof(int64_t) * N);
      CHECK_STATUS(run_nms(&rc, tb, ts, NULL, 0.5, keep[c], &kept[c]), VO_OK);
      CHECK_STATUS(run_nms(&rc, tb, ts, ti, 0.6, bkeep[c], &bkept[c]), VO_OK);
      for (int k = 0; k < 4; k++) {
        iou[c][k] = malloc(sizeof(double) * N * M);
        CHECK_STATUS(run_iou(&rc, (vr_iou_kind)k, tb, tm, default_eps, iou[c][k]), VO_OK);
      }
    }
    static const int pairs[2][2] = {{0, 1}, {2, 3}};
    static const char *const pair_names[2] = {"1 vs 2 threads", "scalar vs auto ISA"};
    for (int p = 0; p < 2; p++) {
      int x = pairs[p][0], y = pairs[p][1];
      char what[120];
      snprintf(what, sizeof what, "nms %s %s", vt_dtype_name(dt), pair_names[p]);
      expect_keep(what, keep[y], kept[y], keep[x], kept[x], N);
      snprintf(what, sizeof what, "batched_nms %s %s", vt_dtype_name(dt), pair_names[p]);
      expect_keep(what, bkeep[y], bkept[y], bkeep[x], bkept[x], N);
      for (int k = 0; k < 4; k++) {
        snprintf(what, sizeof what, "%s %s %s", iou_names[k], vt_dtype_name(dt), pair_names[p]);
        if (p == 0)
          CHECK_MSG(identical(iou[x][k], iou[y][k], (int64_t)N * M), "%s: not identical", what);
        else
          expect_iou(what, dt, iou[y][k], iou[x][k], N, M);
      }
    }
    for (int c = 0; c < 4; c++) {
      free(keep[c]);
      free(bkeep[c]);
      for (int k = 0; k < 4; k++) free(iou[c][k]);
    }
    vt_tensor_free(tb);
    vt_tensor_free(tm);
    vt_tensor_free(ts);
    vt_tensor_free(ti);
  }
  free(boxes);
  free(scores);
  free(cats);
  for (int i = 0; i < 4; i++) vo_context_destroy(ctx[i]);
}

/* ------------------------------------------------------------ NMS on several threads */

/* Inputs for the multi-threaded greedy pass (categories of 8,192 boxes and
 * more, cut into 512-box chunks): few or many kept, exact ties, NaNs. */
typedef enum big_mode { BIG_FEW_KEPT, BIG_MANY_KEPT, BIG_TIES, BIG_NAN, NUM_BIG_MODES } big_mode;
static const char *const big_names[NUM_BIG_MODES] = {"few kept", "many kept", "tie-heavy",
                                                     "NaN boxes and scores"};

static void gen_big(vt_rng *rng, int64_t n, big_mode mode, double *boxes, double *scores,
                    double *cats) {
  for (int64_t i = 0; i < n; i++) {
    double *b = boxes + 4 * i;
    if (mode != BIG_MANY_KEPT) {
      /* Jittered copies of a few objects (of 400 with NaNs); for ties,
       * exact copies of a pool of 50 boxes with scores in steps of 0.1. */
      static const int objects[NUM_BIG_MODES] = {6, 0, 50, 400};
      vt_rng obj;
      vt_rng_seed(&obj, 7 + (uint64_t)vt_rng_int(rng, objects[mode]));
      double cx = vt_rng_uniform(&obj, 0, 1000), cy = vt_rng_uniform(&obj, 0, 1000);
      double w = vt_rng_uniform(&obj, 20, 200), h = vt_rng_uniform(&obj, 20, 200);
      if (mode != BIG_TIES) {
        cx += vt_rng_uniform(rng, -0.05, 0.05) * w;
        cy += vt_rng_uniform(rng, -0.05, 0.05) * h;
      }
      b[0] = cx - w / 2, b[1] = cy - h / 2, b[2] = cx + w / 2, b[3] = cy + h / 2;
    } else {
      /* Small boxes spread thin: most are kept. */
      double w = vt_rng_uniform(rng, 0.5, 6), h = vt_rng_uniform(rng, 0.5, 6);
      b[0] = vt_rng_uniform(rng, 0, 1000), b[1] = vt_rng_uniform(rng, 0, 1000);
      b[2] = b[0] + w, b[3] = b[1] + h;
    }
    double sc = vt_rng_uniform(rng, 0, 1);
    scores[i] = mode == BIG_TIES ? floor(sc * 10) / 10 : sc;
    if (mode == BIG_NAN && vt_rng_int(rng, 50) == 0) b[vt_rng_int(rng, 4)] = NAN;
    if (mode == BIG_NAN && vt_rng_int(rng, 100) == 0) scores[i] = NAN;
    /* batched: one category large enough for the threaded pass, the rest
     * in 30 small ones */
    cats[i] = vt_rng_int(rng, 10) < 7 ? 3 : (double)vt_rng_int(rng, 30) - 10;
  }
}

/* nms and batched_nms at 10k and 30k boxes: the kept list at 1, 2 and 3
 * threads (and 3 threads with the scalar kernels) is the reference's,
 * index for index. */
static void threaded_nms_cases(void) {
  vo_context *ctx[4] = {NULL, NULL, NULL, NULL};
  static const int threads[4] = {1, 2, 3, 3};
  static const char *const ctx_names[4] = {"1 thread", "2 threads", "3 threads",
                                           "3 threads scalar"};
  for (int c = 0; c < 4; c++) {
    if (!CHECK_STATUS(vo_context_create(&ctx[c]), VO_OK)) return;
    CHECK_STATUS(vo_context_set_num_threads(ctx[c], threads[c]), VO_OK);
  }
  CHECK_STATUS(vo_context_set_isa(ctx[3], VO_ISA_SCALAR), VO_OK);
  vo_backend_info cpu = {"cpu", kDLCPU, 1, 1, ""};
  static const int64_t sizes[2] = {10000, 30000};
  static const DLDataType *const dts[2] = {&vt_f32, &vt_f64};
  for (int si = 0; si < 2; si++) {
    const int64_t n = sizes[si];
    double *boxes = malloc(sizeof(double) * 4 * (size_t)n),
           *scores = malloc(sizeof(double) * (size_t)n);
    double *cats = malloc(sizeof(double) * (size_t)n);
    int64_t *idxs = malloc(sizeof(int64_t) * (size_t)n), *ref = malloc(sizeof(int64_t) * (size_t)n);
    int64_t *keep = malloc(sizeof(int64_t) * (size_t)n);
    for (int mode = 0; mode < NUM_BIG_MODES; mode++) {
      if (mode == BIG_MANY_KEPT && n > 10000) continue; /* ~n^2/2 IoUs per run: keep it short */
      vt_rng rng;
      vt_rng_seed(&rng, 4242 + 10 * (uint64_t)mode + (uint64_t)si);
      gen_big(&rng, n, (big_mode)mode, boxes, scores, cats);
      for (int d = 0; d < 2; d++) {
        const DLDataType dt = *dts[d];
        vt_tensor *tb = make_input(dt, n, 4, LAYOUT_CONTIGUOUS, boxes);
        vt_tensor *ts = make_input(dt, n, 0, LAYOUT_CONTIGUOUS, scores);
        vt_tensor *ti = make_input(vt_i64, n, 0, LAYOUT_CONTIGUOUS, cats);
        double *b = malloc(sizeof(double) * 4 * (size_t)n),
               *sc = malloc(sizeof(double) * (size_t)n);
        vt_read_all(&tb->dl, b);
        vt_read_all(&ts->dl, sc);
        for (int64_t i = 0; i < n; i++) idxs[i] = (int64_t)cats[i];
        for (int batched = 0; batched < 2; batched++) {
          const double thr = batched ? 0.6 : 0.5;
          const int64_t ref_kept = batched ? vr_batched_nms(b, sc, idxs, n, thr, !is_f64(dt), ref)
                                           : vr_nms(b, sc, n, thr, !is_f64(dt), ref);
          for (int c = 0; c < 4; c++) {
            run_ctx rc = {&cpu, {kDLCPU, 0}, ctx[c]};
            char what[200];
            snprintf(what, sizeof what, "%s %s n=%lld %s %s (reference keeps %lld)",
                     batched ? "batched_nms" : "nms", vt_dtype_name(dt), (long long)n,
                     big_names[mode], ctx_names[c], (long long)ref_kept);
            int64_t num_kept = -1;
            if (CHECK_MSG(run_nms(&rc, tb, ts, batched ? ti : NULL, thr, keep, &num_kept) == VO_OK,
                          "%s: %s", what, vo_last_error()))
              expect_keep(what, keep, num_kept, ref, ref_kept, n);
          }
          printf("threaded %s %s n=%lld %s: kept %lld\n", batched ? "batched_nms" : "nms",
                 vt_dtype_name(dt), (long long)n, big_names[mode], (long long)ref_kept);
        }
        free(b);
        free(sc);
        vt_tensor_free(tb);
        vt_tensor_free(ts);
        vt_tensor_free(ti);
      }
    }
    free(boxes);
    free(scores);
    free(cats);
    free(idxs);
    free(ref);
    free(keep);
  }
  for (int c = 0; c < 4; c++) vo_context_destroy(ctx[c]);
}

/* ------------------------------------------------------------ main */

static void per_backend(const vo_backend_info *backend, void *user) {
  (void)user;
  run_ctx rc = {backend, {backend->device_type, 0}, NULL};
  printf("backend %s (%s)\n", backend->name, backend->detail);
  hand_iou_cases(&rc);
  integer_iou_cases(&rc);
  hand_nms_cases(&rc);
  generic_path_cases(&rc);
  random_iou_cases(&rc);
  random_nms_cases(&rc);
  if (backend->device_type == kDLCPU) {
    /* AVX2 where the default is AVX-512: the selection's 8-lane pass too */
    vo_context *avx2 = NULL;
    if (CHECK_STATUS(vo_context_create(&avx2), VO_OK) &&
        CHECK_STATUS(vo_context_set_isa(avx2, VO_ISA_AVX2), VO_OK)) {
      rc.ctx = avx2;
      random_nms_cases(&rc);
    }
    vo_context_destroy(avx2);
  }
}

/* box_convert's typed wrappers on the CPU: known values of an axis-aligned
 * and a rotated pair, integer boxes' float32 result, a refused pair, and
 * the backward's gradient (autograd's: x gets the grads of x1 and x2). */
static void box_convert_cases(void) {
  const int64_t s4[2] = {1, 4}, s5[2] = {1, 5}, s8[2] = {1, 8};
  const double xywh[4] = {1, 2, 3, 4}, rot[5] = {10, 20, 4, 2, 90};
  vt_tensor *a = vt_tensor_new(vt_f32, 2, s4, xywh), *out = vt_tensor_new(vt_f32, 2, s4, NULL);
  vo_tensor_desc d;
  if (CHECK_STATUS(vo_box_convert_shape(NULL, &a->dl, VO_BOX_XYWH, VO_BOX_XYXY, &d), VO_OK))
    CHECK(d.ndim == 2 && d.shape[0] == 1 && d.shape[1] == 4 && d.dtype.code == kDLFloat);
  if (CHECK_STATUS(vo_box_convert(NULL, &a->dl, VO_BOX_XYWH, VO_BOX_XYXY, &out->dl), VO_OK))
    CHECK(vt_get(&out->dl, 0) == 1 && vt_get(&out->dl, 1) == 2 && vt_get(&out->dl, 2) == 4 &&
          vt_get(&out->dl, 3) == 6);
  vt_tensor *grad = vt_tensor_new(vt_f32, 2, s4, xywh), *ga = vt_tensor_new(vt_f32, 2, s4, NULL);
  if (CHECK_STATUS(
          vo_box_convert_backward(NULL, &grad->dl, &a->dl, VO_BOX_XYWH, VO_BOX_XYXY, &ga->dl),
          VO_OK))
    CHECK(vt_get(&ga->dl, 0) == 4 && vt_get(&ga->dl, 1) == 6 && vt_get(&ga->dl, 2) == 3 &&
          vt_get(&ga->dl, 3) == 4);
  /* a quarter turn: TL (9, 22), TR = TL + 4 (cos, -sin) = (9, 18), ... */
  vt_tensor *r = vt_tensor_new(vt_f64, 2, s5, rot), *corners = vt_tensor_new(vt_f64, 2, s8, NULL);
  const double want[8] = {9, 22, 9, 18, 11, 18, 11, 22};
  if (CHECK_STATUS(vo_box_convert(NULL, &r->dl, VO_BOX_CXCYWHR, VO_BOX_XYXYXYXY, &corners->dl),
                   VO_OK))
    for (int k = 0; k < 8; k++)
      CHECK_MSG(fabs(vt_get(&corners->dl, k) - want[k]) < 1e-12, "corner %d: %.17g", k,
                vt_get(&corners->dl, k));
  vt_tensor *ints = vt_tensor_new(vt_i16, 2, s4, xywh);
  if (CHECK_STATUS(vo_box_convert_shape(NULL, &ints->dl, VO_BOX_XYXY, VO_BOX_CXCYWH, &d), VO_OK))
    CHECK(d.dtype.code == kDLFloat && d.dtype.bits == 32);
  CHECK_STATUS(vo_box_convert_shape(NULL, &a->dl, VO_BOX_XYXY, VO_BOX_XYWHR, &d),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_MSG(strstr(vo_last_error(), "no conversion from xyxy (0) to xywhr (4)") != NULL, "%s",
            vo_last_error());
  CHECK_STATUS(vo_box_convert_shape(NULL, &a->dl, VO_BOX_CXCYWHR, VO_BOX_XYWHR, &d),
               VO_ERROR_INVALID_ARGUMENT);
  vt_tensor *all[] = {a, out, grad, ga, r, corners, ints};
  for (int i = 0; i < 7; i++) vt_tensor_free(all[i]);
}

int main(void) {
  printf("visionops %s\n", vo_version());
  vt_for_each_backend(per_backend, NULL);
  context_cases();
  threaded_nms_cases();
  box_convert_cases();
  return vt_finish("test_box_ops");
}
