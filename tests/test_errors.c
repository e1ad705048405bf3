/* Error paths: each bad input gives the right vo_status, a message naming the
 * op and the argument, no crash, and outputs left exactly as they were. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* Fake device addresses, far apart so they never overlap: the library must
 * never dereference them. */
#define FAKE_DEVICE_PTR(i) ((void *)(uintptr_t)(0x7f0000001000ull + 0x100000ull * (i)))

static const double box_values[] = {0, 0, 2, 2, 1, 1, 3, 3, 5, 5, 6, 7};
static const double score_values[] = {0.9, 0.8, 0.7};
static const double idx_values[] = {0, 1, 0};

/* Valid arguments for nms/batched_nms/box_iou that each case spoils in one way. */
typedef struct fixture {
  vt_tensor *boxes;    /* f32 [3,4] */
  vt_tensor *scores;   /* f32 [3] */
  vt_tensor *idxs;     /* i64 [3] */
  vt_tensor *keep;     /* i64 [3] */
  vt_tensor *num_kept; /* i64 [] */
  vt_tensor *b;        /* f32 [2,4] */
  vt_tensor *out;      /* f32 [3,2] */
} fixture;

static const double keep_sentinel = 12345, num_kept_sentinel = 777, out_sentinel = 55.5;

static void fixture_init(fixture *f) {
  const int64_t s34[2] = {3, 4}, s3[1] = {3}, s24[2] = {2, 4}, s32[2] = {3, 2};
  f->boxes = vt_tensor_new(vt_f32, 2, s34, box_values);
  f->scores = vt_tensor_new(vt_f32, 1, s3, score_values);
  f->idxs = vt_tensor_new(vt_i64, 1, s3, idx_values);
  f->keep = vt_tensor_new(vt_i64, 1, s3, NULL);
  f->num_kept = vt_tensor_new(vt_i64, 0, NULL, NULL);
  f->b = vt_tensor_new(vt_f32, 2, s24, box_values);
  f->out = vt_tensor_new(vt_f32, 2, s32, NULL);
  vt_fill(&f->keep->dl, keep_sentinel);
  vt_fill(&f->num_kept->dl, num_kept_sentinel);
  vt_fill(&f->out->dl, out_sentinel);
}

static void fixture_free(fixture *f) {
  vt_tensor *all[] = {f->boxes, f->scores, f->idxs, f->keep, f->num_kept, f->b, f->out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

/* Raw bytes of every output buffer, to prove a failed call wrote nothing. */
static int untouched(const vt_tensor *t, double sentinel) {
  int64_t n = vt_numel(&t->dl);
  for (int64_t i = 0; i < n; i++)
    if (vt_get(&t->dl, i) != sentinel) return 0;
  return 1;
}

static void expect_untouched(const fixture *f, const char *what, int line) {
  CHECK_AT(__FILE__, line,
           untouched(f->keep, keep_sentinel) && untouched(f->num_kept, num_kept_sentinel) &&
               untouched(f->out, out_sentinel),
           "%s: an output was written by a failed call", what);
}

/* The status, and a message naming the op and (if given) the argument. */
static void expect_fail_at(vo_status got, vo_status want, const char *op, const char *arg,
                           const char *what, int line) {
  const char *msg = vo_last_error();
  if (!msg) msg = "(null)";
  CHECK_AT(__FILE__, line, got == want, "%s: status %d (%s), expected %d (%s); message \"%s\"",
           what, (int)got, vo_status_string(got), (int)want, vo_status_string(want), msg);
  if (got == VO_OK) return;
  CHECK_AT(__FILE__, line, strstr(msg, op) != NULL, "%s: message \"%s\" does not name op \"%s\"",
           what, msg, op);
  if (arg)
    CHECK_AT(__FILE__, line, strstr(msg, arg) != NULL,
             "%s: message \"%s\" does not name argument \"%s\"", what, msg, arg);
}

#define EXPECT_FAIL(call, want, op, arg) \
  expect_fail_at((call), (want), (op), (arg), #call, __LINE__)

/* A tensor header with its own shape array, pointing at someone else's data. */
typedef struct header {
  DLTensor dl;
  int64_t shape[VO_MAX_DIMS + 2];
  int64_t strides[VO_MAX_DIMS + 2];
} header;

static void header_from(header *h, const vt_tensor *t) {
  memset(h, 0, sizeof *h);
  h->dl = t->dl;
  for (int d = 0; d < t->dl.ndim; d++) h->shape[d] = t->dl.shape[d];
  h->dl.shape = h->shape;
  h->dl.strides = NULL;
}

/* ------------------------------------------------------------ nms */

static void nms_errors(void) {
  fixture f;
  fixture_init(&f);
  DLTensor *B = &f.boxes->dl, *S = &f.scores->dl, *K = &f.keep->dl, *NK = &f.num_kept->dl;
  header h;

  /* Sanity: the fixture itself is valid (on a copy of the outputs). */
  {
    vt_tensor *k2 = vt_tensor_new(vt_i64, 1, f.keep->shape, NULL);
    vt_tensor *n2 = vt_tensor_new(vt_i64, 0, NULL, NULL);
    CHECK_STATUS(vo_nms(NULL, B, S, 0.5, &k2->dl, &n2->dl), VO_OK);
    CHECK(vt_get(&n2->dl, 0) == 3);
    vt_tensor_free(k2);
    vt_tensor_free(n2);
  }

  /* Shapes. */
  header_from(&h, f.boxes);
  h.shape[1] = 5;
  h.dl.data = malloc(3 * 5 * sizeof(float));
  EXPECT_FAIL(vo_nms(NULL, &h.dl, S, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "boxes");
  expect_untouched(&f, "boxes [3,5]", __LINE__);
  free(h.dl.data);

  header_from(&h, f.boxes);
  h.dl.ndim = 1;
  h.shape[0] = 12;
  EXPECT_FAIL(vo_nms(NULL, &h.dl, S, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "boxes");

  header_from(&h, f.boxes);
  h.dl.ndim = 3;
  h.shape[2] = 1;
  EXPECT_FAIL(vo_nms(NULL, &h.dl, S, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "boxes");

  /* Dtypes are named: int16 is a known dtype (not "code 0, 16 bits"), and
   * dtypes the library has no use for are named too. */
  {
    static const struct {
      DLDataType dt;
      const char *name;
    } named[] = {{{kDLInt, 16, 1}, "got int16"},
                 {{kDLInt, 8, 1}, "got int8"},
                 {{kDLUInt, 16, 1}, "unsupported dtype uint16"},
                 {{kDLComplex, 64, 1}, "unsupported dtype complex64"},
                 {{kDLComplex, 128, 1}, "unsupported dtype complex128"},
                 {{6 /* kDLBool */, 8, 1}, "got bool"},
                 {{kDLFloat, 8, 1}, "unsupported dtype float8"}};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
      header_from(&h, f.boxes);
      h.dl.dtype = named[i].dt;
      EXPECT_FAIL(vo_nms(NULL, &h.dl, S, 0.5, K, NK), VO_ERROR_UNSUPPORTED_DTYPE, "nms", "boxes");
      CHECK_ERROR_HAS(named[i].name);
    }
  }

  {
    const int64_t s4[1] = {4};
    vt_tensor *s4t = vt_tensor_new(vt_f32, 1, s4, NULL);
    EXPECT_FAIL(vo_nms(NULL, B, &s4t->dl, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "scores");
    expect_untouched(&f, "scores [4]", __LINE__);
    vt_tensor_free(s4t);
  }
  header_from(&h, f.scores);
  h.dl.ndim = 2;
  h.shape[1] = 1;
  EXPECT_FAIL(vo_nms(NULL, B, &h.dl, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "scores");

  /* Rank out of range and negative sizes: rejected before the shape is read
   * past VO_MAX_DIMS. */
  header_from(&h, f.boxes);
  h.dl.ndim = VO_MAX_DIMS + 1;
  for (int d = 0; d < VO_MAX_DIMS + 1; d++) h.shape[d] = 1;
  EXPECT_FAIL(vo_nms(NULL, &h.dl, S, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "boxes");
  header_from(&h, f.boxes);
  h.dl.ndim = -1;
  EXPECT_FAIL(vo_nms(NULL, &h.dl, S, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "boxes");
  header_from(&h, f.boxes);
  h.shape[0] = -3;
  EXPECT_FAIL(vo_nms(NULL, &h.dl, S, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "boxes");
  header_from(&h, f.boxes);
  h.dl.shape = NULL;
  EXPECT_FAIL(vo_nms(NULL, &h.dl, S, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "boxes");
  expect_untouched(&f, "rank/size errors", __LINE__);

  /* Dtypes. */
  {
    const int64_t s3[1] = {3}, s34[2] = {3, 4};
    vt_tensor *s64 = vt_tensor_new(vt_f64, 1, s3, score_values);
    vt_tensor *bi = vt_tensor_new(vt_i64, 2, s34, box_values);
    vt_tensor *si = vt_tensor_new(vt_i64, 1, s3, NULL);
    /* float64 scores beside float32 boxes are fine (SPEC section 5)... */
    CHECK_STATUS(vo_nms(NULL, B, &s64->dl, 0.5, K, NK), VO_OK);
    vt_fill(K, keep_sentinel);
    vt_fill(NK, num_kept_sentinel);
    /* ...integer ones are not */
    EXPECT_FAIL(vo_nms(NULL, &bi->dl, &si->dl, 0.5, K, NK), VO_ERROR_UNSUPPORTED_DTYPE, "nms",
                "boxes");
    EXPECT_FAIL(vo_nms(NULL, B, &si->dl, 0.5, K, NK), VO_ERROR_UNSUPPORTED_DTYPE, "nms", "scores");
    expect_untouched(&f, "dtype errors", __LINE__);
    vt_tensor_free(s64);
    vt_tensor_free(bi);
    vt_tensor_free(si);
  }
  header_from(&h, f.boxes);
  h.dl.dtype.lanes = 2;
  h.shape[1] = 2; /* same bytes as [3,4] float32 */
  EXPECT_FAIL(vo_nms(NULL, &h.dl, S, 0.5, K, NK), VO_ERROR_UNSUPPORTED_DTYPE, "nms", "boxes");
  header_from(&h, f.boxes);
  h.dl.dtype.code = 99;
  EXPECT_FAIL(vo_nms(NULL, &h.dl, S, 0.5, K, NK), VO_ERROR_UNSUPPORTED_DTYPE, "nms", "boxes");

  /* NULL tensors and NULL data. */
  EXPECT_FAIL(vo_nms(NULL, NULL, S, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "boxes");
  EXPECT_FAIL(vo_nms(NULL, B, NULL, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "scores");
  EXPECT_FAIL(vo_nms(NULL, B, S, 0.5, NULL, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "keep");
  EXPECT_FAIL(vo_nms(NULL, B, S, 0.5, K, NULL), VO_ERROR_INVALID_ARGUMENT, "nms", "num_kept");
  header_from(&h, f.boxes);
  h.dl.data = NULL;
  EXPECT_FAIL(vo_nms(NULL, &h.dl, S, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "boxes");
  {
    header hk;
    header_from(&hk, f.keep);
    hk.dl.data = NULL;
    EXPECT_FAIL(vo_nms(NULL, B, S, 0.5, &hk.dl, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "keep");
  }
  expect_untouched(&f, "NULL errors", __LINE__);

  /* Threshold. */
  EXPECT_FAIL(vo_nms(NULL, B, S, NAN, K, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "iou_threshold");
  CHECK_ERROR_HAS("nan");
  expect_untouched(&f, "threshold NaN", __LINE__);

  /* Outputs: contiguity, shape, dtype. */
  {
    const int64_t s[1] = {3}, st[1] = {2};
    vt_tensor *ks = vt_tensor_strided(vt_i64, 1, s, st, 0, NULL);
    vt_fill(&ks->dl, keep_sentinel);
    EXPECT_FAIL(vo_nms(NULL, B, S, 0.5, &ks->dl, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "keep");
    CHECK_ERROR_HAS("contiguous");
    CHECK(untouched(ks, keep_sentinel));
    vt_tensor_free(ks);

    const int64_t s4[1] = {4}, s31[2] = {3, 1}, s1[1] = {1};
    vt_tensor *k4 = vt_tensor_new(vt_i64, 1, s4, NULL);
    vt_tensor *k31 = vt_tensor_new(vt_i64, 2, s31, NULL);
    vt_tensor *kf = vt_tensor_new(vt_f32, 1, s, NULL);
    vt_tensor *ki32 = vt_tensor_new(vt_i32, 1, s, NULL);
    vt_tensor *n1 = vt_tensor_new(vt_i64, 1, s1, NULL);
    vt_tensor *nf = vt_tensor_new(vt_f64, 0, NULL, NULL);
    EXPECT_FAIL(vo_nms(NULL, B, S, 0.5, &k4->dl, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "keep");
    EXPECT_FAIL(vo_nms(NULL, B, S, 0.5, &k31->dl, NK), VO_ERROR_INVALID_ARGUMENT, "nms", "keep");
    EXPECT_FAIL(vo_nms(NULL, B, S, 0.5, K, &n1->dl), VO_ERROR_INVALID_ARGUMENT, "nms", "num_kept");
    EXPECT_FAIL(vo_nms(NULL, B, S, 0.5, &kf->dl, NK), VO_ERROR_UNSUPPORTED_DTYPE, "nms", "keep");
    EXPECT_FAIL(vo_nms(NULL, B, S, 0.5, &ki32->dl, NK), VO_ERROR_UNSUPPORTED_DTYPE, "nms", "keep");
    EXPECT_FAIL(vo_nms(NULL, B, S, 0.5, K, &nf->dl), VO_ERROR_UNSUPPORTED_DTYPE, "nms", "num_kept");
    expect_untouched(&f, "bad outputs", __LINE__);
    vt_tensor *all[] = {k4, k31, kf, ki32, n1, nf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
  }

  /* Outputs overlapping an input or each other. */
  {
    const int64_t s3[1] = {3}, s34[2] = {3, 4};
    vt_tensor *b64 = vt_tensor_new(vt_f64, 2, s34, box_values);
    vt_tensor *s64 = vt_tensor_new(vt_f64, 1, s3, score_values);
    header hk;
    header_from(&hk, f.keep);
    hk.dl.data = b64->dl.data; /* keep's 24 bytes inside boxes' 96 */
    hk.dl.byte_offset = 16;
    EXPECT_FAIL(vo_nms(NULL, &b64->dl, &s64->dl, 0.5, &hk.dl, NK), VO_ERROR_INVALID_ARGUMENT, "nms",
                "keep");
    CHECK_MSG(vt_get(&b64->dl, 2) == 2 && vt_get(&b64->dl, 5) == 1, "boxes were overwritten");
    header hn;
    header_from(&hn, f.num_kept);
    hn.dl.data = f.keep->dl.data;
    hn.dl.byte_offset = 8; /* num_kept aliases keep[1] */
    EXPECT_FAIL(vo_nms(NULL, &b64->dl, &s64->dl, 0.5, K, &hn.dl), VO_ERROR_INVALID_ARGUMENT, "nms",
                NULL);
    header_from(&hn, f.num_kept);
    hn.dl.data = s64->dl.data; /* num_kept aliases scores[0] */
    EXPECT_FAIL(vo_nms(NULL, &b64->dl, &s64->dl, 0.5, K, &hn.dl), VO_ERROR_INVALID_ARGUMENT, "nms",
                "num_kept");
    CHECK_MSG(vt_get(&s64->dl, 0) == 0.9, "scores were overwritten");
    expect_untouched(&f, "overlapping outputs", __LINE__);
    vt_tensor_free(b64);
    vt_tensor_free(s64);
  }

  /* Devices: one tensor on CUDA (a fake pointer), the rest on the CPU. */
  header_from(&h, f.boxes);
  h.dl.data = FAKE_DEVICE_PTR(0);
  h.dl.device.device_type = kDLCUDA;
  EXPECT_FAIL(vo_nms(NULL, &h.dl, S, 0.5, K, NK), VO_ERROR_DEVICE_MISMATCH, "nms", NULL);
  CHECK_MSG(strstr(vo_last_error(), "boxes") || strstr(vo_last_error(), "scores"),
            "device mismatch message \"%s\" names neither boxes nor scores", vo_last_error());
  {
    header hk;
    header_from(&hk, f.keep);
    hk.dl.data = FAKE_DEVICE_PTR(0);
    hk.dl.device.device_type = kDLCUDA;
    EXPECT_FAIL(vo_nms(NULL, B, S, 0.5, &hk.dl, NK), VO_ERROR_DEVICE_MISMATCH, "nms", "keep");
    /* Both on CUDA, but on different GPUs. */
    header_from(&hk, f.scores);
    hk.dl.device.device_id = 1;
    hk.dl.device.device_type = kDLCUDA;
    hk.dl.data = FAKE_DEVICE_PTR(1);
    header hb;
    header_from(&hb, f.boxes);
    hb.dl.data = FAKE_DEVICE_PTR(0);
    hb.dl.device.device_type = kDLCUDA;
    EXPECT_FAIL(vo_nms(NULL, &hb.dl, &hk.dl, 0.5, K, NK), VO_ERROR_DEVICE_MISMATCH, "nms", NULL);
  }
  expect_untouched(&f, "device mismatch", __LINE__);

  /* A device type no backend serves (all tensors on it, never dereferenced). */
  {
    header hb, hs, hk, hn;
    header *hs_all[] = {&hb, &hs, &hk, &hn};
    const vt_tensor *src[] = {f.boxes, f.scores, f.keep, f.num_kept};
    for (int i = 0; i < 4; i++) {
      header_from(hs_all[i], src[i]);
      hs_all[i]->dl.data = FAKE_DEVICE_PTR(i);
      hs_all[i]->dl.device.device_type = kDLVulkan;
    }
    EXPECT_FAIL(vo_nms(NULL, &hb.dl, &hs.dl, 0.5, &hk.dl, &hn.dl), VO_ERROR_BACKEND_UNAVAILABLE,
                "nms", NULL);
  }
  fixture_free(&f);
}

/* ------------------------------------------------------------ batched_nms */

static void batched_nms_errors(void) {
  fixture f;
  fixture_init(&f);
  DLTensor *B = &f.boxes->dl, *S = &f.scores->dl, *I = &f.idxs->dl, *K = &f.keep->dl,
           *NK = &f.num_kept->dl;
  const int64_t s3[1] = {3}, s4[1] = {4};
  vt_tensor *i4 = vt_tensor_new(vt_i64, 1, s4, NULL);
  vt_tensor *if32 = vt_tensor_new(vt_f32, 1, s3, idx_values);
  vt_tensor *ii32 = vt_tensor_new(vt_i32, 1, s3, idx_values);
  EXPECT_FAIL(vo_batched_nms(NULL, B, S, &i4->dl, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT,
              "batched_nms", "idxs");
  EXPECT_FAIL(vo_batched_nms(NULL, B, S, &if32->dl, 0.5, K, NK), VO_ERROR_UNSUPPORTED_DTYPE,
              "batched_nms", "idxs");
  EXPECT_FAIL(vo_batched_nms(NULL, B, S, &ii32->dl, 0.5, K, NK), VO_ERROR_UNSUPPORTED_DTYPE,
              "batched_nms", "idxs");
  EXPECT_FAIL(vo_batched_nms(NULL, B, S, NULL, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT,
              "batched_nms", "idxs");
  EXPECT_FAIL(vo_batched_nms(NULL, B, S, I, NAN, K, NK), VO_ERROR_INVALID_ARGUMENT, "batched_nms",
              "iou_threshold");
  CHECK_ERROR_HAS("nan");
  header h;
  header_from(&h, f.idxs);
  h.dl.ndim = 2;
  h.shape[1] = 1;
  EXPECT_FAIL(vo_batched_nms(NULL, B, S, &h.dl, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT,
              "batched_nms", "idxs");
  header_from(&h, f.idxs);
  h.dl.data = FAKE_DEVICE_PTR(0);
  h.dl.device.device_type = kDLCUDA;
  EXPECT_FAIL(vo_batched_nms(NULL, B, S, &h.dl, 0.5, K, NK), VO_ERROR_DEVICE_MISMATCH,
              "batched_nms", NULL);
  {
    const int64_t s34[2] = {3, 5};
    vt_tensor *b5 = vt_tensor_new(vt_f32, 2, s34, NULL);
    EXPECT_FAIL(vo_batched_nms(NULL, &b5->dl, S, I, 0.5, K, NK), VO_ERROR_INVALID_ARGUMENT,
                "batched_nms", "boxes");
    vt_tensor_free(b5);
  }
  header_from(&h, f.keep);
  h.dl.data = f.idxs->dl.data; /* keep written over idxs */
  EXPECT_FAIL(vo_batched_nms(NULL, B, S, I, 0.5, &h.dl, NK), VO_ERROR_INVALID_ARGUMENT,
              "batched_nms", "keep");
  CHECK_MSG(vt_get(I, 0) == 0 && vt_get(I, 1) == 1 && vt_get(I, 2) == 0, "idxs were overwritten");
  expect_untouched(&f, "batched_nms errors", __LINE__);
  vt_tensor_free(i4);
  vt_tensor_free(if32);
  vt_tensor_free(ii32);
  fixture_free(&f);
}

/* ------------------------------------------------------------ box_iou family */

typedef vo_status (*iou_fn)(const vo_context *, const DLTensor *, const DLTensor *, DLTensor *);

static vo_status diou_default(const vo_context *c, const DLTensor *a, const DLTensor *b,
                              DLTensor *o) {
  return vo_distance_box_iou(c, a, b, 1e-7, o);
}
static vo_status ciou_default(const vo_context *c, const DLTensor *a, const DLTensor *b,
                              DLTensor *o) {
  return vo_complete_box_iou(c, a, b, 1e-7, o);
}

static void iou_errors(void) {
  static const struct {
    const char *name;
    iou_fn fn;
  } ops[4] = {{"box_iou", vo_box_iou},
              {"generalized_box_iou", vo_generalized_box_iou},
              {"distance_box_iou", diou_default},
              {"complete_box_iou", ciou_default}};
  for (int k = 0; k < 4; k++) {
    const char *op = ops[k].name;
    iou_fn fn = ops[k].fn;
    fixture f;
    fixture_init(&f);
    DLTensor *A = &f.boxes->dl, *Bt = &f.b->dl, *O = &f.out->dl;
    header h;

    header_from(&h, f.boxes);
    h.shape[1] = 3;
    EXPECT_FAIL(fn(NULL, &h.dl, Bt, O), VO_ERROR_INVALID_ARGUMENT, op, "boxes1");
    header_from(&h, f.b);
    h.dl.ndim = 3;
    h.shape[0] = 1;
    h.shape[1] = 2;
    h.shape[2] = 4;
    EXPECT_FAIL(fn(NULL, A, &h.dl, O), VO_ERROR_INVALID_ARGUMENT, op, "boxes2");
    EXPECT_FAIL(fn(NULL, NULL, Bt, O), VO_ERROR_INVALID_ARGUMENT, op, "boxes1");
    EXPECT_FAIL(fn(NULL, A, NULL, O), VO_ERROR_INVALID_ARGUMENT, op, "boxes2");
    EXPECT_FAIL(fn(NULL, A, Bt, NULL), VO_ERROR_INVALID_ARGUMENT, op, NULL);
    header_from(&h, f.b);
    h.dl.data = NULL;
    EXPECT_FAIL(fn(NULL, A, &h.dl, O), VO_ERROR_INVALID_ARGUMENT, op, "boxes2");

    {
      const int64_t s24[2] = {2, 4};
      vt_tensor *b64 = vt_tensor_new(vt_f64, 2, s24, box_values);
      vt_tensor *bi = vt_tensor_new(vt_i64, 2, s24, box_values);
      /* The sets may differ in dtype (SPEC section 5); float64 on either
       * side asks for a float64 output, so the float32 O is refused. */
      EXPECT_FAIL(fn(NULL, A, &b64->dl, O), VO_ERROR_UNSUPPORTED_DTYPE, op, "output");
      CHECK_ERROR_HAS("must be float64, got float32");
      /* Integer boxes are accepted (torchvision's upcasting), also beside
       * float boxes; bool / complex are no boxes, on either side. */
      bi->dl.dtype = (DLDataType){6 /* kDLBool */, 8, 1};
      EXPECT_FAIL(fn(NULL, A, &bi->dl, O), VO_ERROR_UNSUPPORTED_DTYPE, op, "boxes2");
      CHECK_ERROR_HAS("got bool");
      EXPECT_FAIL(fn(NULL, &bi->dl, &bi->dl, O), VO_ERROR_UNSUPPORTED_DTYPE, op, "boxes1");
      CHECK_ERROR_HAS("got bool");
      bi->dl.dtype = (DLDataType){kDLComplex, 64, 1};
      EXPECT_FAIL(fn(NULL, &bi->dl, &bi->dl, O), VO_ERROR_UNSUPPORTED_DTYPE, op, "boxes1");
      CHECK_ERROR_HAS("unsupported dtype complex64");
      vt_tensor_free(b64);
      vt_tensor_free(bi);
    }
    header_from(&h, f.b);
    h.dl.dtype.lanes = 4;
    h.shape[1] = 1;
    EXPECT_FAIL(fn(NULL, A, &h.dl, O), VO_ERROR_UNSUPPORTED_DTYPE, op, "boxes2");

    /* The output: shape, dtype, contiguity, aliasing. */
    {
      const int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s6[1] = {6}, tr[2] = {1, 3};
      vt_tensor *o23 = vt_tensor_new(vt_f32, 2, s23, NULL);
      vt_tensor *o6 = vt_tensor_new(vt_f32, 1, s6, NULL);
      vt_tensor *o64 = vt_tensor_new(vt_f64, 2, s32, NULL);
      vt_tensor *ot = vt_tensor_strided(vt_f32, 2, s32, tr, 0, NULL);
      vt_fill(&ot->dl, out_sentinel);
      EXPECT_FAIL(fn(NULL, A, Bt, &o23->dl), VO_ERROR_INVALID_ARGUMENT, op, NULL);
      EXPECT_FAIL(fn(NULL, A, Bt, &o6->dl), VO_ERROR_INVALID_ARGUMENT, op, NULL);
      EXPECT_FAIL(fn(NULL, A, Bt, &o64->dl), VO_ERROR_UNSUPPORTED_DTYPE, op, NULL);
      EXPECT_FAIL(fn(NULL, A, Bt, &ot->dl), VO_ERROR_INVALID_ARGUMENT, op, NULL);
      CHECK_ERROR_HAS("contiguous");
      CHECK(untouched(ot, out_sentinel));
      vt_tensor *all[] = {o23, o6, o64, ot};
      for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
    }
    {
      /* out [3,2] float32 is 24 bytes; boxes1 [3,4] float32 is 48. */
      header ho;
      header_from(&ho, f.out);
      ho.dl.data = f.boxes->dl.data;
      ho.dl.byte_offset = 8;
      EXPECT_FAIL(fn(NULL, A, Bt, &ho.dl), VO_ERROR_INVALID_ARGUMENT, op, NULL);
      CHECK_MSG(vt_get(A, 2) == 2 && vt_get(A, 4) == 1, "%s: boxes1 was overwritten", op);
      ho.dl.data = f.b->dl.data;
      ho.dl.byte_offset = 0;
      EXPECT_FAIL(fn(NULL, A, Bt, &ho.dl), VO_ERROR_INVALID_ARGUMENT, op, NULL);
      CHECK_MSG(vt_get(Bt, 2) == 2, "%s: boxes2 was overwritten", op);
    }

    header_from(&h, f.b);
    h.dl.data = FAKE_DEVICE_PTR(0);
    h.dl.device.device_type = kDLCUDA;
    EXPECT_FAIL(fn(NULL, A, &h.dl, O), VO_ERROR_DEVICE_MISMATCH, op, NULL);
    header_from(&h, f.out);
    h.dl.data = FAKE_DEVICE_PTR(0);
    h.dl.device.device_type = kDLCUDA;
    EXPECT_FAIL(fn(NULL, A, Bt, &h.dl), VO_ERROR_DEVICE_MISMATCH, op, NULL);
    expect_untouched(&f, op, __LINE__);
    fixture_free(&f);
  }
}

/* ------------------------------------------------------------ generic path */

static void generic_errors(void) {
  CHECK(vo_op_find("no_such_op") == NULL);
  CHECK(vo_op_find("") == NULL);
  CHECK(vo_op_find(NULL) == NULL);
  CHECK(vo_op_find("nms ") == NULL);
  CHECK(vo_op_find("zzz") == NULL); /* past the last name, and before the first: */
  CHECK(vo_op_find("a") == NULL);
  for (int i = 0; i < vo_op_count(); i++) /* the binary search finds every op */
    CHECK_MSG(vo_op_find(vo_op_get(i)->name) == vo_op_get(i), "vo_op_find(\"%s\")",
              vo_op_get(i)->name);
  CHECK(vo_op_get(-1) == NULL);
  CHECK(vo_op_get(vo_op_count()) == NULL);
  CHECK(vo_op_get(1 << 30) == NULL);

  const vo_op_info *nms = vo_op_find("nms");
  const vo_op_info *iou = vo_op_find("box_iou");
  const vo_op_info *diou = vo_op_find("distance_box_iou");
  if (!CHECK(nms && iou && diou)) return;
  fixture f;
  fixture_init(&f);
  vo_value args[5] = {vo_tensor_value(&f.boxes->dl), vo_tensor_value(&f.scores->dl),
                      vo_float_value(0.5), vo_float_value(0.5), vo_float_value(0.5)};
  vo_tensor_desc desc[2];
  DLTensor *outs[2] = {&f.keep->dl, &f.num_kept->dl};

  CHECK_STATUS(vo_infer(NULL, nms, args, 3, desc, 2), VO_OK);
  EXPECT_FAIL(vo_infer(NULL, nms, args, 2, desc, 2), VO_ERROR_INVALID_ARGUMENT, "nms", NULL);
  EXPECT_FAIL(vo_infer(NULL, nms, args, 4, desc, 2), VO_ERROR_INVALID_ARGUMENT, "nms", NULL);
  EXPECT_FAIL(vo_infer(NULL, nms, args, -1, desc, 2), VO_ERROR_INVALID_ARGUMENT, "nms", NULL);
  EXPECT_FAIL(vo_infer(NULL, nms, NULL, 3, desc, 2), VO_ERROR_INVALID_ARGUMENT, "nms", NULL);
  EXPECT_FAIL(vo_infer(NULL, nms, args, 3, desc, 1), VO_ERROR_INVALID_ARGUMENT, "nms", NULL);
  EXPECT_FAIL(vo_infer(NULL, nms, args, 3, NULL, 2), VO_ERROR_INVALID_ARGUMENT, "nms", NULL);
  EXPECT_FAIL(vo_call(NULL, nms, args, 2, outs, 2), VO_ERROR_INVALID_ARGUMENT, "nms", NULL);
  EXPECT_FAIL(vo_call(NULL, nms, args, 4, outs, 2), VO_ERROR_INVALID_ARGUMENT, "nms", NULL);
  EXPECT_FAIL(vo_call(NULL, nms, args, 3, outs, 1), VO_ERROR_INVALID_ARGUMENT, "nms", NULL);
  EXPECT_FAIL(vo_call(NULL, nms, args, 3, NULL, 2), VO_ERROR_INVALID_ARGUMENT, "nms", NULL);
  {
    DLTensor *half_outs[2] = {&f.keep->dl, NULL};
    EXPECT_FAIL(vo_call(NULL, nms, args, 3, half_outs, 2), VO_ERROR_INVALID_ARGUMENT, "nms",
                "num_kept");
  }
  CHECK(vo_infer(NULL, NULL, args, 3, desc, 2) != VO_OK && *vo_last_error() != '\0');
  CHECK(vo_call(NULL, NULL, args, 3, outs, 2) != VO_OK && *vo_last_error() != '\0');

  /* Wrong kinds. */
  vo_value bad[3];
  memcpy(bad, args, sizeof bad);
  bad[0] = vo_float_value(1.0);
  EXPECT_FAIL(vo_infer(NULL, nms, bad, 3, desc, 2), VO_ERROR_INVALID_ARGUMENT, "nms", "boxes");
  EXPECT_FAIL(vo_call(NULL, nms, bad, 3, outs, 2), VO_ERROR_INVALID_ARGUMENT, "nms", "boxes");
  bad[0] = vo_tensor_value(NULL); /* absent, but boxes is not optional */
  EXPECT_FAIL(vo_call(NULL, nms, bad, 3, outs, 2), VO_ERROR_INVALID_ARGUMENT, "nms", "boxes");
  bad[0] = args[0];
  bad[1] = vo_int_value(3);
  EXPECT_FAIL(vo_call(NULL, nms, bad, 3, outs, 2), VO_ERROR_INVALID_ARGUMENT, "nms", "scores");
  bad[1] = args[1];
  bad[2] = vo_tensor_value(&f.scores->dl);
  EXPECT_FAIL(vo_call(NULL, nms, bad, 3, outs, 2), VO_ERROR_INVALID_ARGUMENT, "nms",
              "iou_threshold");
  bad[2] = vo_float_value(NAN);
  EXPECT_FAIL(vo_call(NULL, nms, bad, 3, outs, 2), VO_ERROR_INVALID_ARGUMENT, "nms",
              "iou_threshold");
  bad[2].kind = (vo_value_kind)42;
  EXPECT_FAIL(vo_call(NULL, nms, bad, 3, outs, 2), VO_ERROR_INVALID_ARGUMENT, "nms",
              "iou_threshold");
  expect_untouched(&f, "generic nms errors", __LINE__);

  /* box_iou takes exactly two tensors; distance_box_iou's eps is optional
   * but, when given, must be a number. */
  vo_value iargs[3] = {vo_tensor_value(&f.boxes->dl), vo_tensor_value(&f.b->dl),
                       vo_float_value(1e-7)};
  DLTensor *o[1] = {&f.out->dl};
  EXPECT_FAIL(vo_call(NULL, iou, iargs, 3, o, 1), VO_ERROR_INVALID_ARGUMENT, "box_iou", NULL);
  EXPECT_FAIL(vo_call(NULL, iou, iargs, 1, o, 1), VO_ERROR_INVALID_ARGUMENT, "box_iou", NULL);
  iargs[2] = vo_tensor_value(&f.boxes->dl);
  EXPECT_FAIL(vo_call(NULL, diou, iargs, 3, o, 1), VO_ERROR_INVALID_ARGUMENT, "distance_box_iou",
              "eps");
  iargs[1] = vo_bool_value(1);
  EXPECT_FAIL(vo_call(NULL, iou, iargs, 2, o, 1), VO_ERROR_INVALID_ARGUMENT, "box_iou", "boxes2");
  expect_untouched(&f, "generic box_iou errors", __LINE__);
  fixture_free(&f);
}

/* ------------------------------------------------------------ context, backends, status */

static void *failing_alloc(void *user, DLDevice device, size_t size, void *stream) {
  (void)device, (void)size, (void)stream;
  ++*(int *)user;
  return NULL;
}
static void failing_free(void *user, DLDevice device, void *ptr, void *stream) {
  (void)user, (void)device, (void)ptr, (void)stream;
}

typedef struct counting {
  int allocs, frees;
} counting;

static void *counting_alloc(void *user, DLDevice device, size_t size, void *stream) {
  (void)device, (void)stream;
  ((counting *)user)->allocs++;
  return malloc(size ? size : 1);
}
static void counting_free(void *user, DLDevice device, void *ptr, void *stream) {
  (void)device, (void)stream;
  if (ptr) ((counting *)user)->frees++;
  free(ptr);
}

static void context_errors(void) {
  EXPECT_FAIL(vo_context_create(NULL), VO_ERROR_INVALID_ARGUMENT, "context", NULL);
  vo_context *ctx = NULL;
  if (!CHECK_STATUS(vo_context_create(&ctx), VO_OK)) return;
  EXPECT_FAIL(vo_context_set_num_threads(ctx, -1), VO_ERROR_INVALID_ARGUMENT, "num_threads", NULL);
  EXPECT_FAIL(vo_context_set_num_threads(ctx, 4097), VO_ERROR_INVALID_ARGUMENT, "num_threads",
              NULL);
  CHECK_STATUS(vo_context_set_num_threads(ctx, 0), VO_OK);
  CHECK_STATUS(vo_context_set_num_threads(ctx, 4096), VO_OK);
  CHECK(vo_context_num_threads(ctx) == 4096);
  EXPECT_FAIL(vo_context_set_num_threads(ctx, -5), VO_ERROR_INVALID_ARGUMENT, "num_threads", NULL);
  CHECK(vo_context_num_threads(ctx) == 4096); /* a failed setter changes nothing */
  EXPECT_FAIL(vo_context_set_num_threads(NULL, 1), VO_ERROR_INVALID_ARGUMENT, "context", NULL);
  EXPECT_FAIL(vo_context_set_isa(ctx, (vo_isa)99), VO_ERROR_INVALID_ARGUMENT, "isa", NULL);
  EXPECT_FAIL(vo_context_set_isa(ctx, (vo_isa)-1), VO_ERROR_INVALID_ARGUMENT, "isa", NULL);
  EXPECT_FAIL(vo_context_set_isa(NULL, VO_ISA_SCALAR), VO_ERROR_INVALID_ARGUMENT, "context", NULL);
  CHECK(vo_context_set_deterministic(NULL, 1) == VO_ERROR_INVALID_ARGUMENT);
  CHECK(vo_context_set_workspace_limit(NULL, 1) == VO_ERROR_INVALID_ARGUMENT);
  CHECK(vo_context_set_cuda_stream(NULL, NULL) == VO_ERROR_INVALID_ARGUMENT);
  /* One queue setter for every backend: a queue only where the backend has
   * queues, a device type only where visionops has a backend. */
  EXPECT_FAIL(vo_context_set_queue(ctx, kDLCPU, (void *)0x10), VO_ERROR_INVALID_ARGUMENT,
              "the cpu backend has no queues", NULL);
  CHECK_STATUS(vo_context_set_queue(ctx, kDLCPU, NULL), VO_OK);
  EXPECT_FAIL(vo_context_set_queue(ctx, kDLVulkan, NULL), VO_ERROR_INVALID_ARGUMENT,
              "no backend for device type 7", NULL);
  EXPECT_FAIL(vo_context_set_queue(NULL, kDLCUDA, NULL), VO_ERROR_INVALID_ARGUMENT, "ctx", NULL);
  CHECK_STATUS(vo_context_set_queue(ctx, kDLCUDA, (void *)0x10), VO_OK);
  CHECK_STATUS(vo_context_set_cuda_stream(ctx, NULL), VO_OK);
  CHECK(vo_context_set_allocator(NULL, NULL) == VO_ERROR_INVALID_ARGUMENT);
  {
    vo_allocator half_alloc = {NULL, failing_free, NULL};
    EXPECT_FAIL(vo_context_set_allocator(ctx, &half_alloc), VO_ERROR_INVALID_ARGUMENT, "alloc",
                NULL);
  }
  CHECK_STATUS(vo_context_set_allocator(ctx, NULL), VO_OK);
  vo_context_destroy(NULL);

  /* An allocator that always fails: a call either needs no temporary memory
   * (and then must succeed correctly) or reports out of memory with its
   * outputs untouched. */
  {
    int attempts = 0;
    vo_allocator fail = {failing_alloc, failing_free, &attempts};
    CHECK_STATUS(vo_context_set_allocator(ctx, &fail), VO_OK);
    fixture f;
    fixture_init(&f);
    vo_status st = vo_nms(ctx, &f.boxes->dl, &f.scores->dl, 0.5, &f.keep->dl, &f.num_kept->dl);
    if (st == VO_OK) {
      CHECK_MSG(attempts == 0, "nms succeeded although %d allocations failed", attempts);
      CHECK(vt_get(&f.num_kept->dl, 0) == 3);
    } else {
      EXPECT_FAIL(st, VO_ERROR_OUT_OF_MEMORY, "nms", NULL);
      expect_untouched(&f, "nms out of memory", __LINE__);
    }
    fixture_free(&f);
  }
  /* A counting allocator: every block the library takes it gives back. */
  {
    counting c = {0, 0};
    vo_allocator count = {counting_alloc, counting_free, &c};
    CHECK_STATUS(vo_context_set_allocator(ctx, &count), VO_OK);
    enum { N = 200 };
    double b[4 * N], s[N], cat[N];
    for (int i = 0; i < N; i++) {
      b[4 * i] = i % 17;
      b[4 * i + 1] = i % 13;
      b[4 * i + 2] = i % 17 + 5;
      b[4 * i + 3] = i % 13 + 5;
      s[i] = (i * 37 % 101) / 100.0;
      cat[i] = i % 3;
    }
    const int64_t s4[2] = {N, 4}, s1[1] = {N}, snn[2] = {N, N};
    vt_tensor *tb = vt_tensor_new(vt_f32, 2, s4, b), *ts = vt_tensor_new(vt_f32, 1, s1, s);
    vt_tensor *ti = vt_tensor_new(vt_i64, 1, s1, cat), *tk = vt_tensor_new(vt_i64, 1, s1, NULL);
    vt_tensor *tn = vt_tensor_new(vt_i64, 0, NULL, NULL), *to = vt_tensor_new(vt_f32, 2, snn, NULL);
    CHECK_STATUS(vo_nms(ctx, &tb->dl, &ts->dl, 0.5, &tk->dl, &tn->dl), VO_OK);
    CHECK_STATUS(vo_batched_nms(ctx, &tb->dl, &ts->dl, &ti->dl, 0.5, &tk->dl, &tn->dl), VO_OK);
    CHECK_STATUS(vo_box_iou(ctx, &tb->dl, &tb->dl, &to->dl), VO_OK);
    CHECK_MSG(c.allocs == c.frees, "custom allocator: %d allocations, %d frees", c.allocs, c.frees);
    printf("custom allocator: %d blocks taken and returned\n", c.allocs);
    vt_tensor *all[] = {tb, ts, ti, tk, tn, to};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
  }
  vo_context_destroy(ctx);
}

static void backend_and_status_errors(void) {
  vo_backend_info info;
  int count = vo_backend_count();
  CHECK(count >= 1);
  EXPECT_FAIL(vo_backend_status(-1, &info), VO_ERROR_NOT_FOUND, "-1", NULL);
  CHECK_STATUS(vo_backend_status(count, &info), VO_ERROR_NOT_FOUND);
  CHECK(*vo_last_error() != '\0');
  CHECK_STATUS(vo_backend_status(1 << 30, &info), VO_ERROR_NOT_FOUND);
  CHECK_STATUS(vo_backend_status(0, NULL), VO_ERROR_INVALID_ARGUMENT);
  CHECK(*vo_last_error() != '\0');
  for (int i = 0; i < count; i++) {
    memset(&info, 0, sizeof info);
    if (!CHECK_STATUS(vo_backend_status(i, &info), VO_OK)) continue;
    CHECK(info.name && *info.name && info.detail);
    CHECK(!info.available || info.built);
    printf("backend %d: %s built=%d available=%d (%s)\n", i, info.name, info.built, info.available,
           info.detail);
  }

  for (int s = VO_OK; s <= VO_ERROR_BACKEND_FAILURE; s++) {
    const char *str = vo_status_string((vo_status)s);
    CHECK_MSG(str && *str, "vo_status_string(%d) is empty", s);
    for (int t = VO_OK; t < s && str; t++)
      CHECK_MSG(strcmp(str, vo_status_string((vo_status)t)) != 0,
                "vo_status_string(%d) == vo_status_string(%d)", s, t);
  }
  CHECK(vo_status_string((vo_status)99) != NULL);
  CHECK(vo_last_error() != NULL);
  const char *v = vo_version();
  CHECK(v && strcmp(v, "0.1.0") == 0);
}

/* CUDA tensors where CUDA cannot run them (not built, or no device): the
 * backend is unavailable, and the message says which one. */
static void cuda_unavailable_errors(void) {
  int count = vo_backend_count();
  for (int i = 0; i < count; i++) {
    vo_backend_info info;
    if (vo_backend_status(i, &info) == VO_OK && info.device_type == kDLCUDA && info.available) {
      printf("SKIP cuda-unavailable errors: a GPU is visible\n");
      return;
    }
  }
  fixture f;
  fixture_init(&f);
  header hb, hs, hk, hn;
  header *hs_all[] = {&hb, &hs, &hk, &hn};
  const vt_tensor *src[] = {f.boxes, f.scores, f.keep, f.num_kept};
  for (int i = 0; i < 4; i++) {
    header_from(hs_all[i], src[i]);
    hs_all[i]->dl.data = FAKE_DEVICE_PTR(i);
    hs_all[i]->dl.device.device_type = kDLCUDA;
  }
  EXPECT_FAIL(vo_nms(NULL, &hb.dl, &hs.dl, 0.5, &hk.dl, &hn.dl), VO_ERROR_BACKEND_UNAVAILABLE,
              "nms", "cuda");
  fixture_free(&f);
}

/* vo_op_arg / vo_op_output_name: the parsed schema, as bindings read it. */
static void op_arg_introspection(void) {
  for (int i = 0; i < vo_op_count(); i++) {
    const vo_op_info *op = vo_op_get(i);
    for (int a = 0; a < op->num_args; a++) {
      vo_arg_info info;
      CHECK(vo_op_arg(op, a, &info) == VO_OK && info.name && info.name[0]);
    }
    vo_arg_info info;
    CHECK(vo_op_arg(op, op->num_args, &info) == VO_ERROR_NOT_FOUND);
    CHECK(strstr(vo_last_error(), op->name) != NULL);
    CHECK(vo_op_output_name(op, 0) != NULL);
    CHECK(op->num_outputs < 0 || vo_op_output_name(op, op->num_outputs) == NULL);
  }
  vo_arg_info info;
  const vo_op_info *nms = vo_op_find("nms");
  CHECK(vo_op_arg(nms, 2, &info) == VO_OK && strcmp(info.name, "iou_threshold") == 0 &&
        info.kind == VO_VALUE_FLOAT && !info.optional && !info.has_default);
  CHECK(strcmp(vo_op_output_name(nms, 1), "num_kept") == 0);
  CHECK(vo_op_arg(vo_op_find("soft_nms"), 2, &info) == VO_OK && info.has_default &&
        info.default_value.kind == VO_VALUE_FLOAT && info.default_value.u.f == 0.3);
  CHECK(vo_op_arg(vo_op_find("batched_nms_padded"), 3, &info) == VO_OK && info.optional &&
        info.kind == VO_VALUE_FLOAT && info.default_value.kind == VO_VALUE_NONE);
  CHECK(vo_op_arg(vo_op_find("deform_conv2d"), 3, &info) == VO_OK && info.optional &&
        info.kind == VO_VALUE_TENSOR && strcmp(info.name, "mask") == 0);
  CHECK(vo_op_arg(vo_op_find("multi_scale_roi_align"), 0, &info) == VO_OK &&
        info.kind == VO_VALUE_TENSOR_LIST);
  CHECK(vo_op_arg(vo_op_find("roi_align"), 6, &info) == VO_OK && info.kind == VO_VALUE_BOOL);
  CHECK(vo_op_arg(NULL, 0, &info) == VO_ERROR_INVALID_ARGUMENT);
  CHECK(vo_op_arg(nms, 0, NULL) == VO_ERROR_INVALID_ARGUMENT);
  CHECK(vo_op_arg(nms, -1, &info) == VO_ERROR_NOT_FOUND);
  CHECK(vo_op_output_name(NULL, 0) == NULL);
}

int main(void) {
  op_arg_introspection();
  nms_errors();
  batched_nms_errors();
  iou_errors();
  generic_errors();
  context_errors();
  backend_and_status_errors();
  cuda_unavailable_errors();
  return vt_finish("test_errors");
}
