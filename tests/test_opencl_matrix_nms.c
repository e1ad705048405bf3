/* matrix_nms on OpenCL against the CPU beyond the cross-backend harness's
 * samples: B = 2 images of 1,000 boxes and 8 classes (clusters, so that
 * boxes overlap; scores with ties), both decays, nms_top_k and keep_top_k
 * caps, a background class, the pixel convention, the problems in chunks
 * under tiny workspace limits, strided inputs and empty inputs. index and
 * num must be the CPU's exactly; dets too for the linear decay, and within
 * a few float32 ulps for gaussian (the devices' exp is kernels/exp.h's, the
 * CPU's the C library's). Without fp64 the linear decay (Paddle's float64
 * division) is refused. Linked statically for the backend's memory
 * functions. Skipped (77) without an OpenCL device; float64 only where it
 * has fp64. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_test_util.h"

static const vo_backend *be;
static const DLDevice dev = {kDLOpenCL, 0};

typedef struct problem {
  vt_tensor *boxes, *scores; /* [B, M, 4], [B, C, M] */
} problem;

static problem make_problem(DLDataType dt, int64_t b, int64_t m, int64_t c, uint64_t seed) {
  const int64_t bs[3] = {b, m, 4}, ss[3] = {b, c, m};
  problem pr = {vt_tensor_new(dt, 3, bs, NULL), vt_tensor_new(dt, 3, ss, NULL)};
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  for (int64_t i = 0; i < b * m; i++) {
    const double cx = 0.1 * (double)vt_rng_int(&rng, 8) + vt_rng_uniform(&rng, 0, 0.05);
    const double cy = 0.1 * (double)vt_rng_int(&rng, 8) + vt_rng_uniform(&rng, 0, 0.05);
    const double w = vt_rng_uniform(&rng, 0.02, 0.2), h = vt_rng_uniform(&rng, 0.02, 0.2);
    const double v[4] = {cx, cy, cx + w, cy + h};
    for (int k = 0; k < 4; k++) vt_set(&pr.boxes->dl, 4 * i + k, v[k]);
  }
  for (int64_t i = 0; i < b * c * m; i++)
    vt_set(&pr.scores->dl, i, (double)vt_rng_int(&rng, 512) / 512);
  return pr;
}

static void free_problem(problem *pr) { vt_tensor_free(pr->boxes), vt_tensor_free(pr->scores); }

typedef struct args {
  double score_threshold, post_threshold;
  int64_t nms_top_k, keep_top_k;
  int gaussian;
  double sigma;
  int64_t background;
  int normalized;
} args;

typedef struct outputs {
  vt_tensor *dets, *index, *num;
} outputs;

static outputs make_outputs(const problem *pr, const args *a) {
  vo_tensor_desc d[3];
  if (vo_matrix_nms_shape(NULL, &pr->boxes->dl, &pr->scores->dl, a->score_threshold,
                          a->post_threshold, a->nms_top_k, a->keep_top_k, a->gaussian, a->sigma,
                          a->background, a->normalized, d) != VO_OK)
    vt_cl_die("vo_matrix_nms_shape");
  outputs o = {vt_tensor_new(d[0].dtype, d[0].ndim, d[0].shape, NULL),
               vt_tensor_new(d[1].dtype, d[1].ndim, d[1].shape, NULL),
               vt_tensor_new(d[2].dtype, d[2].ndim, d[2].shape, NULL)};
  vt_fill(&o.dets->dl, 7), vt_fill(&o.index->dl, 7), vt_fill(&o.num->dl, 7);
  return o;
}

static void free_outputs(outputs *o) {
  vt_tensor_free(o->dets), vt_tensor_free(o->index), vt_tensor_free(o->num);
}

static vo_status run(const vo_context *ctx, const problem *pr, const args *a, int on_opencl,
                     outputs *o) {
  DLTensor bx = on_opencl ? vt_cl_on_device(pr->boxes) : pr->boxes->dl;
  DLTensor sc = on_opencl ? vt_cl_on_device(pr->scores) : pr->scores->dl;
  DLTensor d = on_opencl ? vt_cl_on_device(o->dets) : o->dets->dl;
  DLTensor ix = on_opencl ? vt_cl_on_device(o->index) : o->index->dl;
  DLTensor n = on_opencl ? vt_cl_on_device(o->num) : o->num->dl;
  const vo_status st = vo_matrix_nms(ctx, &bx, &sc, a->score_threshold, a->post_threshold,
                                     a->nms_top_k, a->keep_top_k, a->gaussian, a->sigma,
                                     a->background, a->normalized, &d, &ix, &n);
  if (on_opencl && st == VO_OK) {
    vt_cl_read_back(&d, o->dets);
    vt_cl_read_back(&ix, o->index);
    vt_cl_read_back(&n, o->num);
  }
  vt_cl_free_all();
  return st;
}

/* Workspace limits: the default (one chunk), one problem a chunk. */
static const size_t limits[2] = {0, 1};

static int fp64; /* the device has cl_khr_fp64 */

static void compare(const char *what, const problem *pr, const args *a) {
  const char *dt = vt_dtype_name(pr->boxes->dl.dtype);
  if (!fp64 && !a->gaussian) { /* the linear decay is refused there, naming the extension */
    outputs got = make_outputs(pr, a);
    CHECK_MSG(run(NULL, pr, a, 1, &got) == VO_ERROR_UNSUPPORTED_DTYPE,
              "%s (%s): linear decay "
              "accepted without fp64",
              what, dt);
    CHECK_ERROR_HAS("cl_khr_fp64");
    free_outputs(&got);
    return;
  }
  vo_context *ctx;
  if (vo_context_create(&ctx) != VO_OK) vt_cl_die("vo_context_create");
  outputs ref = make_outputs(pr, a);
  if (!CHECK_MSG(run(ctx, pr, a, 0, &ref) == VO_OK, "%s: CPU: %s", what, vo_last_error())) {
    free_outputs(&ref);
    vo_context_destroy(ctx);
    return;
  }
  for (int l = 0; l < 2; l++) {
    if (limits[l]) vo_context_set_workspace_limit(ctx, limits[l]);
    outputs got = make_outputs(pr, a);
    if (CHECK_MSG(run(ctx, pr, a, 1, &got) == VO_OK, "%s (%s): OpenCL: %s", what, dt,
                  vo_last_error())) {
      CHECK_MSG(memcmp(got.index->mem, ref.index->mem, ref.index->mem_bytes) == 0 &&
                    memcmp(got.num->mem, ref.num->mem, ref.num->mem_bytes) == 0,
                "%s (%s, limit %zu): the selections differ from the CPU's", what, dt, limits[l]);
      double worst = 0;
      for (int64_t i = 0; i < vt_numel(&ref.dets->dl); i++) {
        const double x = vt_get(&ref.dets->dl, i), y = vt_get(&got.dets->dl, i);
        if (x != y) worst = fmax(worst, fabs(x - y) / fmax(fabs(x), 1e-30));
      }
      /* gaussian: a float32 ulp or two of exp, or one ulp of a half type */
      const double tol = !a->gaussian ? 0 : pr->boxes->dl.dtype.bits == 16 ? 1.0 / 512 : 1e-6;
      CHECK_MSG(worst <= tol, "%s (%s, limit %zu): dets %.3g from the CPU's", what, dt, limits[l],
                worst);
    }
    free_outputs(&got);
  }
  CHECK_MSG(
      vt_get(&ref.num->dl, 0) > 0 || pr->boxes->dl.shape[1] == 0 || pr->scores->dl.shape[1] == 0,
      "%s: nothing kept", what);
  free_outputs(&ref);
  vo_context_destroy(ctx);
}

static void cases(DLDataType dt) {
  problem pr = make_problem(dt, 2, 1000, 8, 71);
  const args cases_[] = {
      {0.05, 0.05, -1, -1, 0, 2.0, -1, 1},  /* linear, every candidate */
      {0.05, 0.05, -1, 100, 1, 2.0, -1, 1}, /* gaussian, 100 per image */
      {0.1, 0.2, 200, 150, 0, 2.0, 0, 1},   /* nms_top_k, background class 0 */
      {0.1, 0.1, 300, -1, 1, 0.5, 3, 0},    /* gaussian, pixel convention */
  };
  for (size_t k = 0; k < sizeof cases_ / sizeof cases_[0]; k++)
    compare("matrix_nms", &pr, &cases_[k]);
  free_problem(&pr);
  /* strided: scores [B, C, M] laid out [M, C, B], boxes [4, B, M] */
  problem dense = make_problem(dt, 2, 300, 4, 72);
  const int64_t b = 2, m = 300, c = 4, ss[3] = {b, c, m}, s_strides[3] = {1, b, b * c};
  const int64_t bs[3] = {b, m, 4}, b_strides[3] = {m, 1, b * m};
  double *sv = malloc(sizeof(double) * (size_t)(b * c * m));
  double *bv = malloc(sizeof(double) * (size_t)(b * m * 4));
  if (!sv || !bv) vt_cl_die("malloc");
  vt_read_all(&dense.scores->dl, sv);
  vt_read_all(&dense.boxes->dl, bv);
  problem st = {vt_tensor_strided(dt, 3, bs, b_strides, 0, bv),
                vt_tensor_strided(dt, 3, ss, s_strides, 0, sv)};
  compare("strided", &st, &cases_[1]);
  free_problem(&st), free_problem(&dense);
  free(sv), free(bv);
  /* no boxes, no classes */
  const int64_t shapes[2][2] = {{0, 4}, {50, 0}};
  for (int s = 0; s < 2; s++) {
    problem none = make_problem(dt, 2, shapes[s][0], shapes[s][1], 73);
    const args a = {0.05, 0.05, -1, 10, 0, 2.0, -1, 1};
    compare("empty", &none, &a);
    free_problem(&none);
  }
}

int main(void) {
  be = vo_backend_for_device(kDLOpenCL);
  const char *why = "not built";
  vt_cl_use(be, dev, "test_opencl_matrix_nms");
  if (!be || !vo_backend_available(be, &why)) {
    printf("test_opencl_matrix_nms: SKIP: no OpenCL device (%s)\n", why);
    return 77;
  }
  fp64 = strstr(why, "no fp64") == NULL;
  const DLDataType dtypes[3] = {vt_f32, vt_f64, vt_f16};
  for (int d = 0; d < 3; d++)
    if (fp64 || dtypes[d].bits != 64) cases(dtypes[d]);
  return vt_finish("test_opencl_matrix_nms");
}
