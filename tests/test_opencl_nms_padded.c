/* batched_nms_padded and onnx_nms on OpenCL against the CPU, bit for bit,
 * beyond the cross-backend harness's samples: a YOLO-like case (B = 2, M =
 * 2000, C = 20, scores with ties), the no-threshold case (every box a
 * candidate, NaN scores among them), dense clusters at the greedy pass's
 * tile edges, class-agnostic and per-class boxes,
 * strided inputs, the problems in chunks under tiny workspace limits, and
 * empty inputs (M = 0, C = 0, caps 0). Linked statically for the backend's
 * memory functions. Skipped (77) without an OpenCL device; float64 only
 * where it has fp64. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_test_util.h"

static const vo_backend *be;
static const DLDevice dev = {kDLOpenCL, 0};

/* Boxes [B, M, 4] (or [B, M, C, 4]) in cxcywh on a 640 x 640 image and
 * scores [B, C, M] in multiples of 1/64 (ties), some NaN when asked. */
typedef struct problem {
  vt_tensor *boxes, *scores;
} problem;

static problem make_problem(DLDataType dt, int64_t b, int64_t m, int64_t c, int per_class, int nans,
                            uint64_t seed) {
  problem pr;
  const int64_t bs4[4] = {b, m, c, 4}, bs3[3] = {b, m, 4}, ss[3] = {b, c, m};
  pr.boxes = per_class ? vt_tensor_new(dt, 4, bs4, NULL) : vt_tensor_new(dt, 3, bs3, NULL);
  pr.scores = vt_tensor_new(dt, 3, ss, NULL);
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  for (int64_t i = 0; i < vt_numel(&pr.boxes->dl); i += 4) {
    vt_set(&pr.boxes->dl, i, vt_rng_uniform(&rng, 0, 640));
    vt_set(&pr.boxes->dl, i + 1, vt_rng_uniform(&rng, 0, 640));
    vt_set(&pr.boxes->dl, i + 2, vt_rng_uniform(&rng, 4, 120));
    vt_set(&pr.boxes->dl, i + 3, vt_rng_uniform(&rng, 4, 120));
  }
  for (int64_t i = 0; i < vt_numel(&pr.scores->dl); i++) {
    const double u = vt_rng_uniform(&rng, 0, 1);
    const double s = (double)(int64_t)(u * u * u * 64) / 64; /* most scores low */
    vt_set(&pr.scores->dl, i, nans && vt_rng_int(&rng, 97) == 0 ? NAN : s);
  }
  return pr;
}

static void free_problem(problem *pr) {
  vt_tensor_free(pr->boxes);
  vt_tensor_free(pr->scores);
}

/* The op's arguments beside the tensors. */
typedef struct args {
  int onnx;
  double iou;
  const double *score_threshold;
  int64_t max_per_class, max_per_image, top_k; /* onnx: max_per_class is max_output */
  int format, agnostic;                        /* onnx: format is center_point_box */
} args;

/* The op's outputs on the host. */
typedef struct outputs {
  vt_tensor *t[4];
  int n;
} outputs;

static outputs make_outputs(const problem *pr, const args *a) {
  outputs o;
  const int64_t b = pr->boxes->dl.shape[0], m = pr->boxes->dl.shape[1];
  const int64_t c = pr->scores->dl.shape[1];
  if (a->onnx) {
    const int64_t cap = a->max_per_class < 0 ? 0 : a->max_per_class < m ? a->max_per_class : m;
    const int64_t rows[2] = {b * c * cap, 3};
    o.t[0] = vt_tensor_new(vt_i64, 2, rows, NULL);
    o.t[1] = vt_tensor_new(vt_i64, 0, NULL, NULL);
    o.n = 2;
  } else {
    const int64_t padded[2] = {b, a->max_per_image};
    o.t[0] = vt_tensor_new(vt_i64, 2, padded, NULL);
    o.t[1] = vt_tensor_new(vt_i64, 2, padded, NULL);
    o.t[2] = vt_tensor_new(pr->scores->dl.dtype, 2, padded, NULL);
    o.t[3] = vt_tensor_new(vt_i64, 1, &b, NULL);
    o.n = 4;
  }
  for (int k = 0; k < o.n; k++) vt_fill(&o.t[k]->dl, 7); /* every element must be written */
  return o;
}

static void free_outputs(outputs *o) {
  for (int k = 0; k < o->n; k++) vt_tensor_free(o->t[k]);
}

/* The op on the CPU or OpenCL under ctx into o. */
static vo_status run(const vo_context *ctx, const problem *pr, const args *a, int on_opencl,
                     outputs *o) {
  DLTensor bx = on_opencl ? vt_cl_on_device(pr->boxes) : pr->boxes->dl;
  DLTensor sc = on_opencl ? vt_cl_on_device(pr->scores) : pr->scores->dl;
  DLTensor out[4];
  for (int k = 0; k < o->n; k++) out[k] = on_opencl ? vt_cl_on_device(o->t[k]) : o->t[k]->dl;
  const vo_status st =
      a->onnx ? vo_onnx_nms(ctx, &bx, &sc, a->max_per_class, a->iou, a->score_threshold, a->format,
                            &out[0], &out[1])
              : vo_batched_nms_padded(ctx, &bx, &sc, a->iou, a->score_threshold, a->max_per_class,
                                      a->max_per_image, a->format, a->agnostic, a->top_k, &out[0],
                                      &out[1], &out[2], &out[3]);
  if (on_opencl && st == VO_OK)
    for (int k = 0; k < o->n; k++) vt_cl_read_back(&out[k], o->t[k]);
  vt_cl_free_all();
  return st;
}

/* The op on OpenCL under each workspace limit equals the CPU's bit for bit. */
static void compare(const char *what, const problem *pr, const args *a, const size_t *limits,
                    int n_limits) {
  vo_context *ctx;
  if (vo_context_create(&ctx) != VO_OK) vt_cl_die("vo_context_create");
  outputs ref = make_outputs(pr, a);
  if (!CHECK_MSG(run(ctx, pr, a, 0, &ref) == VO_OK, "%s: CPU: %s", what, vo_last_error())) {
    free_outputs(&ref);
    vo_context_destroy(ctx);
    return;
  }
  for (int l = 0; l < n_limits; l++) {
    vo_context_set_workspace_limit(ctx, limits[l]);
    outputs got = make_outputs(pr, a);
    if (CHECK_MSG(run(ctx, pr, a, 1, &got) == VO_OK, "%s, limit %zu: %s", what, limits[l],
                  vo_last_error()))
      for (int k = 0; k < ref.n; k++)
        CHECK_MSG(memcmp(got.t[k]->mem, ref.t[k]->mem, ref.t[k]->mem_bytes) == 0,
                  "%s (%s), limit %zu: output %d differs from the CPU's", what,
                  vt_dtype_name(pr->scores->dl.dtype), limits[l], k);
    free_outputs(&got);
  }
  if (!a->onnx) /* the case is not trivial: something selected */
    CHECK_MSG(vt_get(&ref.t[3]->dl, 0) > 0 || pr->boxes->dl.shape[1] == 0 ||
                  pr->scores->dl.shape[1] == 0 || a->max_per_image == 0 || a->max_per_class == 0 ||
                  a->top_k == 0,
              "%s: nothing selected", what);
  free_outputs(&ref);
  vo_context_destroy(ctx);
}

/* Limits: the default (one chunk), one problem a chunk, a few. */
static const size_t limits[3] = {0, 1, 200000};

static void yolo_cases(DLDataType dt) {
  problem pr = make_problem(dt, 2, 2000, 20, 0, 0, 31);
  const double thr = 0.25;
  for (int fmt = 0; fmt < 3; fmt++) {
    const args a = {0, 0.45, &thr, 100, 300, -1, fmt, 0};
    compare("yolo padded", &pr, &a, limits, 3);
  }
  const args agn = {0, 0.5, &thr, -1, 100, 1000, 2, 1};
  compare("yolo padded class-agnostic", &pr, &agn, limits, 3);
  const args top = {0, 0.6, &thr, 50, 120, 200, 0, 0};
  compare("yolo padded top-k", &pr, &top, limits, 3);
  for (int center = 0; center < 2; center++) {
    const args o = {1, 0.45, &thr, 100, 0, 0, center, 0};
    compare("yolo onnx", &pr, &o, limits, 3);
  }
  free_problem(&pr);
  /* no threshold: every box a candidate, NaN scores first */
  problem all = make_problem(dt, 2, 300, 6, 0, 1, 32);
  const args none = {0, 0.5, NULL, -1, 1000, -1, 2, 0};
  compare("no threshold padded", &all, &none, limits, 3);
  const args none_onnx = {1, 0.5, NULL, 400, 0, 0, 1, 0};
  compare("no threshold onnx", &all, &none_onnx, limits, 3);
  free_problem(&all);
  /* tile edges (the devices' greedy pass takes 64 candidates a tile) and
   * dense clusters: every box a candidate, the centres in a 100-pixel
   * square, so the tiles suppress inside themselves and against the boxes
   * kept before them */
  const int64_t sizes[6] = {63, 64, 65, 128, 129, 1500};
  for (int s = 0; s < 6; s++) {
    problem cl = make_problem(dt, 2, sizes[s], 3, 0, 0, 60 + (uint64_t)s);
    for (int64_t i = 0; i < vt_numel(&cl.boxes->dl); i += 4)
      for (int k = 0; k < 2; k++)
        vt_set(&cl.boxes->dl, i + k, 270 + vt_get(&cl.boxes->dl, i + k) / 6.4);
    const args dense = {0, 0.5, NULL, -1, 400, -1, 2, 0};
    compare("dense tiles padded", &cl, &dense, limits, 3);
    const args dense_cap = {0, 0.3, NULL, 70, 150, -1, 2, 0};
    compare("dense tiles padded, 70 a class", &cl, &dense_cap, limits, 3);
    const args dense_onnx = {1, 0.5, NULL, 1000, 0, 0, 1, 0};
    compare("dense tiles onnx", &cl, &dense_onnx, limits, 3);
    free_problem(&cl);
  }
  /* per-class boxes [B, M, C, 4] */
  problem pc = make_problem(dt, 2, 200, 5, 1, 0, 33);
  const double low = 0.05;
  const args per = {0, 0.5, &low, 30, 60, -1, 1, 0};
  compare("per-class boxes", &pc, &per, limits, 3);
  free_problem(&pc);
}

/* Strided inputs: scores laid out [M, C, B], boxes [4, B, M] (the harness
 * pads them with 0xff: a kernel ignoring strides reads garbage). */
static void strided_cases(DLDataType dt) {
  problem dense = make_problem(dt, 2, 300, 4, 0, 0, 34);
  const int64_t b = 2, m = 300, c = 4;
  double *sv = malloc(sizeof(double) * (size_t)(b * c * m));
  double *bv = malloc(sizeof(double) * (size_t)(b * m * 4));
  if (!sv || !bv) vt_cl_die("malloc");
  vt_read_all(&dense.scores->dl, sv);
  vt_read_all(&dense.boxes->dl, bv);
  const int64_t ss[3] = {b, c, m}, s_strides[3] = {1, b, b * c};
  const int64_t bs[3] = {b, m, 4}, b_strides[3] = {m, 1, b * m};
  problem pr;
  pr.scores = vt_tensor_strided(dt, 3, ss, s_strides, 0, sv);
  pr.boxes = vt_tensor_strided(dt, 3, bs, b_strides, 0, bv);
  const double thr = 0.1;
  const args pad = {0, 0.5, &thr, 20, 50, -1, 2, 0};
  compare("strided padded", &pr, &pad, limits, 3);
  const args onnx = {1, 0.5, &thr, 20, 0, 0, 0, 0};
  compare("strided onnx", &pr, &onnx, limits, 3);
  free_problem(&pr);
  free_problem(&dense);
  free(sv);
  free(bv);
}

/* M = 0, C = 0 (and M = 0 with a huge C), caps 0: every output written as
 * the CPU writes it. */
static void empty_cases(DLDataType dt) {
  const double thr = 0.1;
  /* (M, C); the last: no boxes but a C whose B * C problems would overflow */
  const int64_t shapes[4][2] = {{0, 4}, {50, 0}, {0, 0}, {0, (int64_t)1 << 40}};
  for (int s = 0; s < 4; s++) {
    problem pr = make_problem(dt, 2, shapes[s][0], shapes[s][1], 0, 0, 40 + (uint64_t)s);
    const args pad = {0, 0.5, &thr, -1, 10, -1, 0, 0};
    compare("empty padded", &pr, &pad, limits, 2);
    const args agn = {0, 0.5, NULL, -1, 10, -1, 0, 1};
    compare("empty padded class-agnostic", &pr, &agn, limits, 2);
    const args onnx = {1, 0.5, &thr, 5, 0, 0, 0, 0};
    compare("empty onnx", &pr, &onnx, limits, 2);
    free_problem(&pr);
  }
  problem pr = make_problem(dt, 2, 40, 3, 0, 0, 45);
  const args k0 = {0, 0.5, &thr, -1, 0, -1, 0, 0}, cls0 = {0, 0.5, &thr, 0, 10, -1, 0, 0};
  const args top0 = {0, 0.5, NULL, -1, 10, 0, 0, 0}, onnx0 = {1, 0.5, &thr, 0, 0, 0, 0, 0};
  compare("max_per_image 0", &pr, &k0, limits, 2);
  compare("max_per_class 0", &pr, &cls0, limits, 2);
  compare("pre_nms_top_k 0", &pr, &top0, limits, 2);
  compare("onnx max 0", &pr, &onnx0, limits, 2);
  free_problem(&pr);
}

int main(void) {
  be = vo_backend_for_device(kDLOpenCL);
  const char *why = "not built";
  vt_cl_use(be, dev, "test_opencl_nms_padded");
  if (!be || !vo_backend_available(be, &why)) {
    printf("test_opencl_nms_padded: SKIP: no OpenCL device (%s)\n", why);
    return 77;
  }
  const int fp64 = strstr(why, "no fp64") == NULL; /* else float64 calls are refused */
  const DLDataType dtypes[3] = {vt_f32, vt_f64, vt_f16};
  for (int d = 0; d < 3; d++)
    if (fp64 || dtypes[d].bits != 64) {
      yolo_cases(dtypes[d]);
      strided_cases(dtypes[d]);
      empty_cases(dtypes[d]);
    }
  if (!fp64) { /* float64 refused with the backend's error, not run */
    problem pr = make_problem(vt_f64, 1, 10, 2, 0, 0, 50);
    const double thr = 0.1;
    const args a = {0, 0.5, &thr, -1, 5, -1, 0, 0};
    outputs o = make_outputs(&pr, &a);
    vo_context *ctx;
    if (vo_context_create(&ctx) != VO_OK) vt_cl_die("vo_context_create");
    CHECK(run(ctx, &pr, &a, 1, &o) != VO_OK);
    CHECK_ERROR_HAS("cl_khr_fp64");
    vo_context_destroy(ctx);
    free_outputs(&o);
    free_problem(&pr);
  }
  return vt_finish("test_opencl_nms_padded");
}
