/*
 * The deterministic (gather) backwards of roi_pool and ps_roi_pool, which
 * only device backends run: kernels/roi_pool.h's and kernels/ps_roi_pool.h's
 * gather of every grad_input element, compiled here as C, must equal the
 * CPU backward (its plane-owned scatter of the same portable header) bit for
 * bit, on random problems with RoIs of every kind (inside, partly or wholly
 * outside the map, tiny, huge, reversed), both layouts, all four dtypes; for roi_pool with the
 * forward's argmax (also checked to lie in its bins) and with arbitrary indices.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/ps_roi_pool.h"
#include "kernels/roi_pool.h"
#include "roi_test_util.h"

static int vo_code(DLDataType t) {
  if (t.code == kDLBfloat) return VO_DT_BF16;
  if (t.bits == 64) return VO_DT_F64;
  if (t.bits == 16) return VO_DT_F16;
  return VO_DT_F32;
}

/* A random 4-d tensor in `layout`: uniform values in [-1, 1), and with
 * `nan_ties` some NaNs and ties (argmax must pick the same element). */
static vt_tensor *random_tensor(vt_rng *rng, DLDataType dt, const int64_t shape[4], int layout,
                                int nan_ties) {
  const int64_t n = shape[0] * shape[1] * shape[2] * shape[3];
  double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  rt_fill_uniform(rng, dt, v, n);
  for (int64_t i = 0; nan_ties && i < n; i++) {
    const int64_t u = vt_rng_int(rng, 16);
    if (u == 0) v[i] = 0.25;
    if (u == 1) v[i] = NAN;
  }
  vt_tensor *t = rt_make_nchw(dt, shape, layout, v);
  free(v);
  return t;
}

/* k random RoIs of every kind rt_roi_box makes, on an h x w map. */
static vt_tensor *random_rois(vt_rng *rng, DLDataType dt, int64_t k, int64_t n, int64_t h,
                              int64_t w, double scale, int layout) {
  double *r = malloc(sizeof(double) * (size_t)(5 * k + 1));
  for (int64_t i = 0; i < k; i++) {
    double box[4];
    rt_roi_box(rng, 6, (double)h / scale, (double)w / scale, scale, box);
    rt_roi_store(rng, n, dt, box, r + 5 * i);
  }
  vt_tensor *t = rt_make_rois(dt, k, layout, r);
  free(r);
  return t;
}

/* kernels/roi_pool.h's gather for the storage type, as the stored value. */
static double rp_gather(DLDataType dt, const void *grad, const int32_t *argmax, const void *rois,
                        const vo_k_roi_pool_args *a, int64_t num_rois, int in_bins, int64_t i) {
  switch (vo_code(dt)) {
    case VO_DT_F64: return vo_k_roi_pool_gather_at_f64(grad, argmax, rois, a, num_rois, in_bins, i);
    case VO_DT_F16:
      return vt_round_to(dt,
                         vo_k_roi_pool_gather_at_f16(grad, argmax, rois, a, num_rois, in_bins, i));
    case VO_DT_BF16:
      return vt_round_to(dt,
                         vo_k_roi_pool_gather_at_bf16(grad, argmax, rois, a, num_rois, in_bins, i));
    default: return vo_k_roi_pool_gather_at_f32(grad, argmax, rois, a, num_rois, in_bins, i);
  }
}

static double psp_gather(DLDataType dt, const void *grad, const void *rois,
                         const vo_k_ps_roi_pool_args *a, int64_t e) {
  switch (vo_code(dt)) {
    case VO_DT_F64: return vo_k_ps_roi_pool_gather_at_f64(grad, rois, a, e);
    case VO_DT_F16: return vt_round_to(dt, vo_k_ps_roi_pool_gather_at_f16(grad, rois, a, e));
    case VO_DT_BF16: return vt_round_to(dt, vo_k_ps_roi_pool_gather_at_bf16(grad, rois, a, e));
    default: return vo_k_ps_roi_pool_gather_at_f32(grad, rois, a, e);
  }
}

/* Every element of got equals want's (NaN equals NaN); reports the first
 * that does not. */
static void same(const char *what, const char *desc, const double *got, const vt_tensor *want) {
  const int64_t n = vt_numel(&want->dl);
  for (int64_t i = 0; i < n; i++) {
    const double w = vt_get(&want->dl, i);
    if (!(got[i] == w || (got[i] != got[i] && w != w))) {
      CHECK_MSG(0, "%s [%s]: element %lld = %.17g, CPU %.17g", what, desc, (long long)i, got[i], w);
      return;
    }
  }
  vt_pass();
}

typedef struct pool_case {
  int64_t n, cout, h, w, k, ph, pw;
  double scale;
  int layout;
} pool_case;

static void check_roi_pool(const pool_case *t, DLDataType dt, vt_rng *rng, const char *desc) {
  const int64_t c = t->cout;
  const int64_t in_shape[4] = {t->n, c, t->h, t->w}, o_shape[4] = {t->k, c, t->ph, t->pw};
  vt_tensor *in = random_tensor(rng, dt, in_shape, t->layout, 1);
  vt_tensor *rois = random_rois(rng, dt, t->k, t->n, t->h, t->w, t->scale, t->layout);
  vt_tensor *grad = random_tensor(rng, dt, o_shape, t->layout, 0);
  vt_tensor *out = vt_tensor_new(dt, 4, o_shape, NULL);
  vt_tensor *am = vt_tensor_new(vt_i32, 4, o_shape, NULL);
  vt_tensor *gin = vt_tensor_new(dt, 4, in_shape, NULL);
  const int64_t no = vt_numel(&out->dl), ni = vt_numel(&gin->dl);
  double *ga = calloc((size_t)(ni + 1), sizeof(double)),
         *full = calloc((size_t)(ni + 1), sizeof(double));
  int ok = CHECK_STATUS(
      vo_roi_pool(NULL, &in->dl, &rois->dl, t->scale, t->ph, t->pw, &out->dl, &am->dl), VO_OK);
  for (int pass = 0; ok && pass < 2; pass++) {
    if (pass == 1) /* arbitrary indices, not inside their bins */
      for (int64_t i = 0; i < no; i++)
        vt_set(&am->dl, i, (double)(vt_rng_int(rng, t->h * t->w + 1) - 1));
    if (!CHECK_STATUS(vo_roi_pool_backward(NULL, &grad->dl, &rois->dl, &am->dl, t->scale, t->ph,
                                           t->pw, t->n, c, t->h, t->w, &gin->dl),
                      VO_OK))
      break;
    int64_t rs[2] = {0}, gs[4] = {0}, as[4] = {0};
    vt_strides(rois, rs);
    vt_strides(grad, gs);
    vt_strides(am, as);
    const vo_k_roi_pool_args a =
        vo_k_roi_pool_args_of(t->scale, t->ph, t->pw, t->n, c, t->h, t->w, vo_code(dt), rs, gs, as);
    const int32_t *amd = vt_first(am);
    int in_bins = 1;
    for (int64_t i = 0; i < no && in_bins; i++)
      in_bins = dt.bits == 64 ? vo_k_roi_pool_argmax_in_bin_f64(amd, vt_first(rois), &a, i)
                              : vo_k_roi_pool_argmax_in_bin_f32(amd, vt_first(rois), &a, i);
    CHECK_MSG(pass == 1 || in_bins, "roi_pool [%s]: a forward argmax outside its bin", desc);
    for (int64_t i = 0; i < ni; i++) {
      ga[i] = rp_gather(dt, vt_first(grad), amd, vt_first(rois), &a, t->k, in_bins, i);
      full[i] = rp_gather(dt, vt_first(grad), amd, vt_first(rois), &a, t->k, 0, i);
    }
    same("roi_pool backward (gather)", desc, ga, gin);
    same("roi_pool backward (gather over every bin)", desc, full, gin);
  }
  free(ga);
  free(full);
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(grad);
  vt_tensor_free(out);
  vt_tensor_free(am);
  vt_tensor_free(gin);
}

static void check_ps_roi_pool(const pool_case *t, DLDataType dt, vt_rng *rng, const char *desc) {
  const int64_t c = t->cout * t->ph * t->pw;
  const int64_t in_shape[4] = {t->n, c, t->h, t->w}, o_shape[4] = {t->k, t->cout, t->ph, t->pw};
  vt_tensor *in = random_tensor(rng, dt, in_shape, t->layout, 0);
  vt_tensor *rois = random_rois(rng, dt, t->k, t->n, t->h, t->w, t->scale, t->layout);
  vt_tensor *grad = random_tensor(rng, dt, o_shape, t->layout, 0);
  vt_tensor *out = vt_tensor_new(dt, 4, o_shape, NULL);
  vt_tensor *map = vt_tensor_new(vt_i32, 4, o_shape, NULL);
  vt_tensor *gin = vt_tensor_new(dt, 4, in_shape, NULL);
  const int64_t ni = vt_numel(&gin->dl);
  if (CHECK_STATUS(
          vo_ps_roi_pool(NULL, &in->dl, &rois->dl, t->scale, t->ph, t->pw, &out->dl, &map->dl),
          VO_OK) &&
      CHECK_STATUS(vo_ps_roi_pool_backward(NULL, &grad->dl, &rois->dl, &map->dl, t->scale, t->ph,
                                           t->pw, t->n, c, t->h, t->w, &gin->dl),
                   VO_OK)) {
    int64_t rs[2] = {0}, gs[4] = {0};
    vt_strides(rois, rs);
    vt_strides(grad, gs);
    const vo_k_ps_roi_pool_args a = vo_k_ps_roi_pool_args_of(
        t->scale, t->k, t->n, c, t->h, t->w, t->ph, t->pw, t->cout, vo_code(dt), rs, gs);
    double *ga = calloc((size_t)(ni + 1), sizeof(double));
    for (int64_t e = 0; e < ni; e++) ga[e] = psp_gather(dt, vt_first(grad), vt_first(rois), &a, e);
    same("ps_roi_pool backward (gather)", desc, ga, gin);
    free(ga);
  }
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(grad);
  vt_tensor_free(out);
  vt_tensor_free(map);
  vt_tensor_free(gin);
}

int main(void) {
  const DLDataType dts[4] = {vt_f32, vt_f64, vt_f16, vt_bf16};
  for (int d = 0; d < 4; d++) {
    vt_rng rng;
    vt_rng_seed(&rng, 11 + (uint64_t)d);
    for (int it = 0; it < 40; it++) {
      pool_case t;
      t.n = 1 + vt_rng_int(&rng, 3);
      t.cout = 1 + vt_rng_int(&rng, 3);
      t.h = 1 + vt_rng_int(&rng, 12);
      t.w = 1 + vt_rng_int(&rng, 12);
      t.k = vt_rng_int(&rng, 8);
      t.ph = 1 + vt_rng_int(&rng, 4);
      t.pw = 1 + vt_rng_int(&rng, 4);
      t.scale = it % 4 == 3 ? 0.25 : it % 4 == 2 ? 0.5 : it % 4 == 1 ? 0.6 : 1.0;
      t.layout = it % NUM_LAYOUTS;
      char desc[256];
      snprintf(desc, sizeof desc,
               "%s case %d: N=%lld C=%lld H=%lld W=%lld K=%lld PH=%lld PW=%lld scale=%g layout %d",
               vt_dtype_name(dts[d]), it, (long long)t.n, (long long)t.cout, (long long)t.h,
               (long long)t.w, (long long)t.k, (long long)t.ph, (long long)t.pw, t.scale, t.layout);
      check_roi_pool(&t, dts[d], &rng, desc);
      check_ps_roi_pool(&t, dts[d], &rng, desc);
    }
  }
  return vt_finish("test_rounded_gather");
}
