/* soft_nms and batched_soft_nms on OpenCL against the CPU beyond the
 * cross-backend harness's samples: 3,000 boxes in one category (a run far
 * longer than a work group), batched over 1 to 40 categories with negative
 * and huge category ids, each method, score ties, NaN scores, min_score 0,
 * strided inputs and no boxes. The selections (keep, num_kept) must be the
 * CPU's exactly; dets too for hard and linear (the same arithmetic), and
 * within a few float32 ulps for gaussian (the devices' exp is
 * kernels/exp.h's, the CPU's the C library's). Linked statically for the
 * backend's memory functions. Skipped (77) without an OpenCL device;
 * float64 only where it has fp64. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_test_util.h"

static const vo_backend *be;
static const DLDevice dev = {kDLOpenCL, 0};

typedef struct problem {
  vt_tensor *boxes, *scores, *idxs; /* idxs NULL: soft_nms */
} problem;

/* n boxes (clusters, so that boxes overlap), scores in multiples of 1/256
 * (ties), a NaN among them when asked; idxs among `categories` ids spread
 * over int64 (negative and huge) unless categories is 0. */
static problem make_problem(DLDataType dt, int64_t n, int64_t categories, int nans, uint64_t seed) {
  problem pr;
  const int64_t bs[2] = {n, 4};
  pr.boxes = vt_tensor_new(dt, 2, bs, NULL);
  pr.scores = vt_tensor_new(dt, 1, &n, NULL);
  pr.idxs = categories ? vt_tensor_new(vt_i64, 1, &n, NULL) : NULL;
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  for (int64_t i = 0; i < n; i++) {
    const double cx = 40 * (double)vt_rng_int(&rng, 16) + vt_rng_uniform(&rng, -8, 8);
    const double cy = 40 * (double)vt_rng_int(&rng, 16) + vt_rng_uniform(&rng, -8, 8);
    const double w = vt_rng_uniform(&rng, 10, 60), h = vt_rng_uniform(&rng, 10, 60);
    vt_set(&pr.boxes->dl, 4 * i, cx - w / 2);
    vt_set(&pr.boxes->dl, 4 * i + 1, cy - h / 2);
    vt_set(&pr.boxes->dl, 4 * i + 2, cx + w / 2);
    vt_set(&pr.boxes->dl, 4 * i + 3, cy + h / 2);
    const double s = (double)vt_rng_int(&rng, 256) / 256;
    vt_set(&pr.scores->dl, i, nans && vt_rng_int(&rng, 200) == 0 ? NAN : s);
    if (pr.idxs) {
      const int64_t c = vt_rng_int(&rng, (uint64_t)categories);
      vt_set(&pr.idxs->dl, i, (double)(c % 2 ? -c * ((int64_t)1 << 40) : c * ((int64_t)1 << 50)));
    }
  }
  return pr;
}

static void free_problem(problem *pr) {
  vt_tensor_free(pr->boxes);
  vt_tensor_free(pr->scores);
  if (pr->idxs) vt_tensor_free(pr->idxs);
}

typedef struct args {
  double thr, sigma, min_score, offset;
  int method;
} args;

typedef struct outputs {
  vt_tensor *dets, *keep, *num;
} outputs;

static outputs make_outputs(const problem *pr) {
  const int64_t n = pr->boxes->dl.shape[0], ds[2] = {n, 5};
  outputs o = {vt_tensor_new(pr->boxes->dl.dtype, 2, ds, NULL), vt_tensor_new(vt_i64, 1, &n, NULL),
               vt_tensor_new(vt_i64, 0, NULL, NULL)};
  vt_fill(&o.dets->dl, 7), vt_fill(&o.keep->dl, 7), vt_fill(&o.num->dl, 7);
  return o;
}

static void free_outputs(outputs *o) {
  vt_tensor_free(o->dets), vt_tensor_free(o->keep), vt_tensor_free(o->num);
}

static vo_status run(const vo_context *ctx, const problem *pr, const args *a, int on_opencl,
                     outputs *o) {
  DLTensor bx = on_opencl ? vt_cl_on_device(pr->boxes) : pr->boxes->dl;
  DLTensor sc = on_opencl ? vt_cl_on_device(pr->scores) : pr->scores->dl;
  DLTensor ix = pr->idxs ? (on_opencl ? vt_cl_on_device(pr->idxs) : pr->idxs->dl) : bx;
  DLTensor d = on_opencl ? vt_cl_on_device(o->dets) : o->dets->dl;
  DLTensor k = on_opencl ? vt_cl_on_device(o->keep) : o->keep->dl;
  DLTensor n = on_opencl ? vt_cl_on_device(o->num) : o->num->dl;
  const vo_status st = pr->idxs
                           ? vo_batched_soft_nms(ctx, &bx, &sc, &ix, a->thr, a->sigma, a->min_score,
                                                 a->method, a->offset, &d, &k, &n)
                           : vo_soft_nms(ctx, &bx, &sc, a->thr, a->sigma, a->min_score, a->method,
                                         a->offset, &d, &k, &n);
  if (on_opencl && st == VO_OK) {
    vt_cl_read_back(&d, o->dets);
    vt_cl_read_back(&k, o->keep);
    vt_cl_read_back(&n, o->num);
  }
  vt_cl_free_all();
  return st;
}

/* OpenCL against the CPU: selections exactly, dets bit for bit (gaussian:
 * within the device exp's ulps). */
static void compare(const char *what, const problem *pr, const args *a) {
  const char *dt = vt_dtype_name(pr->boxes->dl.dtype);
  outputs ref = make_outputs(pr), got = make_outputs(pr);
  if (CHECK_MSG(run(NULL, pr, a, 0, &ref) == VO_OK, "%s: CPU: %s", what, vo_last_error()) &&
      CHECK_MSG(run(NULL, pr, a, 1, &got) == VO_OK, "%s (%s, method %d): OpenCL: %s", what, dt,
                a->method, vo_last_error())) {
    CHECK_MSG(memcmp(got.keep->mem, ref.keep->mem, ref.keep->mem_bytes) == 0 &&
                  vt_get(&got.num->dl, 0) == vt_get(&ref.num->dl, 0),
              "%s (%s, method %d): the selections differ from the CPU's (%g vs %g kept)", what, dt,
              a->method, vt_get(&got.num->dl, 0), vt_get(&ref.num->dl, 0));
    if (a->method != 2) {
      CHECK_MSG(memcmp(got.dets->mem, ref.dets->mem, ref.dets->mem_bytes) == 0,
                "%s (%s, method %d): dets differ from the CPU's", what, dt, a->method);
    } else {
      double worst = 0;
      for (int64_t i = 0; i < vt_numel(&ref.dets->dl); i++) {
        const double x = vt_get(&ref.dets->dl, i), y = vt_get(&got.dets->dl, i);
        if (x != y && !(isnan(x) && isnan(y)))
          worst = fmax(worst, fabs(x - y) / fmax(fabs(x), 1e-30));
      }
      /* a float32 ulp or two of exp, or one ulp of a half type it crosses a rounding of */
      const double tol = pr->boxes->dl.dtype.bits == 16 ? 1.0 / 512 : 1e-6;
      CHECK_MSG(worst <= tol, "%s (%s, gaussian): dets %.3g from the CPU's", what, dt, worst);
    }
    CHECK_MSG(vt_get(&ref.num->dl, 0) > 0 || pr->boxes->dl.shape[0] == 0, "%s: nothing kept", what);
  }
  free_outputs(&ref);
  free_outputs(&got);
}

static void cases(DLDataType dt) {
  const args methods[3] = {
      {0.3, 0.5, 0.001, 0, 0}, {0.3, 0.5, 0.001, 0, 1}, {0.3, 0.5, 0.01, 1, 2}};
  problem one = make_problem(dt, 3000, 0, 0, 61);
  for (int m = 0; m < 3; m++) compare("soft_nms, 3000 boxes", &one, &methods[m]);
  free_problem(&one);
  const int64_t cats[3] = {1, 7, 40};
  for (int c = 0; c < 3; c++) {
    problem pr = make_problem(dt, 1500, cats[c], 1, 62 + (uint64_t)c);
    for (int m = 0; m < 3; m++) compare("batched_soft_nms", &pr, &methods[m]);
    const args keep_all = {0.5, 0.5, 0, 0, 1};
    compare("batched_soft_nms, min_score 0", &pr, &keep_all);
    free_problem(&pr);
  }
  /* strided: boxes [N, 4] as columns of a [4, N] buffer, scores every other */
  problem dense = make_problem(dt, 500, 5, 0, 66);
  const int64_t n = 500, bs[2] = {n, 4}, b_strides[2] = {1, n}, s_stride[1] = {2};
  double *bv = malloc(sizeof(double) * 4 * n), *sv = malloc(sizeof(double) * n);
  if (!bv || !sv) vt_cl_die("malloc");
  vt_read_all(&dense.boxes->dl, bv);
  vt_read_all(&dense.scores->dl, sv);
  problem st = {vt_tensor_strided(dt, 2, bs, b_strides, 0, bv),
                vt_tensor_strided(dt, 1, &n, s_stride, 0, sv), dense.idxs};
  compare("strided", &st, &methods[1]);
  vt_tensor_free(st.boxes), vt_tensor_free(st.scores);
  free(bv), free(sv);
  free_problem(&dense);
  for (int c = 0; c < 2; c++) {
    problem none = make_problem(dt, 0, c * 3, 0, 67);
    outputs ref = make_outputs(&none), got = make_outputs(&none);
    CHECK(run(NULL, &none, &methods[1], 1, &got) == VO_OK);
    CHECK_MSG(vt_get(&got.num->dl, 0) == 0, "no boxes: num_kept %g", vt_get(&got.num->dl, 0));
    free_outputs(&ref), free_outputs(&got);
    free_problem(&none);
  }
}

int main(void) {
  be = vo_backend_for_device(kDLOpenCL);
  const char *why = "not built";
  vt_cl_use(be, dev, "test_opencl_soft_nms");
  if (!be || !vo_backend_available(be, &why)) {
    printf("test_opencl_soft_nms: SKIP: no OpenCL device (%s)\n", why);
    return 77;
  }
  const int fp64 = strstr(why, "no fp64") == NULL;
  const DLDataType dtypes[3] = {vt_f32, vt_f64, vt_f16};
  for (int d = 0; d < 3; d++)
    if (fp64 || dtypes[d].bits != 64) cases(dtypes[d]);
  return vt_finish("test_opencl_soft_nms");
}
