/* box_iou_rotated's cheap rejects (kernels/box_iou_rotated.h:
 * vo_k_rbox_apart, vo_k_rbox_separated) keep the plain algorithm's
 * decisions: the CPU's fast path (which runs them) against its plain path
 * (VO_ISA_SCALAR, which does not), bit for bit, in float32 and float64, on
 * pairs made to sit at their margins: boxes touching or a hair apart at
 * random angles, tiny boxes (whose vertex-in-box slack EPS / w is wide),
 * long thin ones, far from the origin. Also: the aligned form is the
 * pairwise diagonal, and no value is outside [0, 1]. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

#define N 192

static vo_context *context_of(vo_isa isa) {
  vo_context *ctx = NULL;
  if (vo_context_create(&ctx) != VO_OK || vo_context_set_isa(ctx, isa) != VO_OK) return NULL;
  return ctx;
}

/* Box k of a pair family: b at a random place, angle and size (tiny, thin
 * or ordinary), and its partner placed along a random direction at the
 * distance where their support extents touch, times (1 + gap). */
static void make_pair(vt_rng *r, double shift, double *a, double *b) {
  const int kind = (int)vt_rng_int(r, 4);
  for (int k = 0; k < 2; k++) {
    double *x = k ? b : a;
    x[2] = kind == 0 ? vt_rng_uniform(r, 1e-5, 1e-3) : vt_rng_uniform(r, 0.5, 40);
    x[3] = kind == 1 ? vt_rng_uniform(r, 1e-3, 0.1) : vt_rng_uniform(r, 0.5, 40);
    x[4] = vt_rng_int(r, 3) == 0 ? 90.0 * (double)vt_rng_int(r, 4) : vt_rng_uniform(r, -180, 180);
  }
  a[0] = shift + vt_rng_uniform(r, -50, 50);
  a[1] = shift + vt_rng_uniform(r, -50, 50);
  /* along direction t, each box's half extent; the partner at their sum */
  const double t = vt_rng_uniform(r, 0, 6.283185307179586), ux = cos(t), uy = sin(t);
  double reach = 0;
  for (int k = 0; k < 2; k++) {
    const double *x = k ? b : a, th = x[4] * 0.01745329251;
    const double c = cos(th), s = sin(th);
    reach += (x[2] * fabs(c * ux - s * uy) + x[3] * fabs(s * ux + c * uy)) / 2;
  }
  static const double gaps[] = {-1e-3, -1e-6, 0, 1e-7, 1e-5, 1e-4, 1e-3, 1e-2, 0.1};
  const double d = reach * (1 + gaps[vt_rng_int(r, 9)]);
  b[0] = a[0] + d * ux;
  b[1] = a[1] + d * uy;
}

static void check_dtype(vo_context *fast, vo_context *plain, DLDataType dt, double shift,
                        uint64_t seed) {
  double a[5 * N], b[5 * N];
  vt_rng r;
  vt_rng_seed(&r, seed);
  for (int i = 0; i < N; i++) make_pair(&r, shift, a + 5 * i, b + 5 * i);
  const int64_t shape[2] = {N, 5}, out_shape[2] = {N, N};
  const DLDataType out_dt = dt.bits == 64 ? vt_f64 : vt_f32;
  vt_tensor *ta = vt_tensor_new(dt, 2, shape, a), *tb = vt_tensor_new(dt, 2, shape, b);
  vt_tensor *o1 = vt_tensor_new(out_dt, 2, out_shape, NULL);
  vt_tensor *o2 = vt_tensor_new(out_dt, 2, out_shape, NULL);
  vt_tensor *d = vt_tensor_new(out_dt, 1, shape, NULL);
  for (int iof = 0; iof < 2; iof++) {
    CHECK_STATUS(vo_box_iou_rotated(fast, &ta->dl, &tb->dl, iof, 0, 0, &o1->dl), VO_OK);
    CHECK_STATUS(vo_box_iou_rotated(plain, &ta->dl, &tb->dl, iof, 0, 0, &o2->dl), VO_OK);
    CHECK_STATUS(vo_box_iou_rotated_aligned(fast, &ta->dl, &tb->dl, iof, 0, 0, &d->dl), VO_OK);
    int64_t differ = 0, outside = 0, touching = 0, first = -1;
    for (int64_t e = 0; e < (int64_t)N * N; e++) {
      const double x = vt_get(&o1->dl, e), y = vt_get(&o2->dl, e);
      if (memcmp(&x, &y, sizeof x) != 0 && differ++ == 0) first = e;
      outside += !(x >= 0 && x <= 1);
      touching += e / N == e % N && y > 0 && y < 1e-3;
    }
    for (int64_t i = 0; i < N; i++) differ += vt_get(&d->dl, i) != vt_get(&o2->dl, i * N + i);
    CHECK_MSG(differ == 0,
              "%s shift %g iof %d: %lld values differ from the plain path, first [%lld, %lld]: "
              "%.9g, plain %.9g",
              vt_dtype_name(dt), shift, iof, (long long)differ, (long long)(first / N),
              (long long)(first % N), first < 0 ? 0 : vt_get(&o1->dl, first),
              first < 0 ? 0 : vt_get(&o2->dl, first));
    CHECK_MSG(outside == 0, "%s: %lld values outside [0, 1]", vt_dtype_name(dt),
              (long long)outside);
    if (iof == 0 && shift == 0)
      printf("  %s: %d pairs at the rejects' margins, %lld of them with a sliver (< 1e-3)\n",
             vt_dtype_name(dt), N, (long long)touching);
  }
  vt_tensor_free(ta);
  vt_tensor_free(tb);
  vt_tensor_free(o1);
  vt_tensor_free(o2);
  vt_tensor_free(d);
}

int main(void) {
  vo_context *fast = context_of(VO_ISA_AUTO), *plain = context_of(VO_ISA_SCALAR);
  if (!CHECK(fast && plain)) return vt_finish("test_box_iou_rotated");
  static const double shifts[] = {0, 1e3, 1e5};
  for (int s = 0; s < 3; s++)
    for (uint64_t seed = 1; seed <= 4; seed++) {
      check_dtype(fast, plain, vt_f32, shifts[s], seed + 10 * (uint64_t)s);
      check_dtype(fast, plain, vt_f64, shifts[s], seed + 10 * (uint64_t)s);
    }
  vo_context_destroy(fast);
  vo_context_destroy(plain);
  return vt_finish("test_box_iou_rotated");
}
