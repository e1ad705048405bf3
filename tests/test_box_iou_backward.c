/* The box IoU ops' backward (box_iou_backward and the generalized / distance /
 * complete variants) on every available backend and floating dtype: against
 * a forward-mode (dual number) reference of torchvision's formulas with
 * torch's derivative rules, against float64 finite differences of the
 * library's own forward away from ties and kinks, hand-checked values at
 * ties and kinks, strided inputs, empty sets, thread-count invariance and
 * argument errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* The bits of a double, to compare results exactly. */
static uint64_t bits_of(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

#define NUM_DTYPES 4
static const DLDataType *const dtypes[NUM_DTYPES] = {&vt_f32, &vt_f64, &vt_f16, &vt_bf16};
static const char *const names[4] = {"box_iou", "generalized_box_iou", "distance_box_iou",
                                     "complete_box_iou"};
enum { K_IOU, K_GIOU, K_DIOU, K_CIOU };
static const double default_eps = 1e-7;
#define VT_PI 3.14159265358979323846

/* ------------------------------------------------------------ reference */

/* A value and its derivative along one direction. The rules are torch's
 * reverse-mode rules written as forward-mode: a tie of maximum / minimum
 * takes half of each side's derivative (the transpose of "half the gradient
 * to each side"), clamp(min=0) passes the derivative where x >= 0. */
typedef struct dual {
  double v, d;
} dual;

static dual dn(double v, double d) {
  dual r = {v, d};
  return r;
}
static dual d_add(dual a, dual b) { return dn(a.v + b.v, a.d + b.d); }
static dual d_sub(dual a, dual b) { return dn(a.v - b.v, a.d - b.d); }
static dual d_mul(dual a, dual b) { return dn(a.v * b.v, a.d * b.v + a.v * b.d); }
static dual d_div(dual a, dual b) { return dn(a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)); }
static dual d_scale(dual a, double s) { return dn(a.v * s, a.d * s); }
static dual d_max(dual a, dual b) {
  if (a.v == b.v) return dn(a.v, (a.d + b.d) / 2);
  return a.v > b.v ? a : b;
}
static dual d_min(dual a, dual b) {
  if (a.v == b.v) return dn(a.v, (a.d + b.d) / 2);
  return a.v < b.v ? a : b;
}
static dual d_clamp0(dual a) { return a.v >= 0 ? a : dn(0, 0); }
static dual d_atan(dual a) { return dn(atan(a.v), a.d / (1 + a.v * a.v)); }

/* torchvision/ops/boxes.py's formulas for one pair; alpha is a constant. */
static dual ref_pair(int kind, double eps, const dual *a, const dual *b) {
  dual area_a = d_mul(d_sub(a[2], a[0]), d_sub(a[3], a[1]));
  dual area_b = d_mul(d_sub(b[2], b[0]), d_sub(b[3], b[1]));
  dual w = d_clamp0(d_sub(d_min(a[2], b[2]), d_max(a[0], b[0])));
  dual h = d_clamp0(d_sub(d_min(a[3], b[3]), d_max(a[1], b[1])));
  dual inter = d_mul(w, h);
  dual uni = d_sub(d_add(area_a, area_b), inter);
  dual iou = d_div(inter, uni);
  if (kind == K_IOU) return iou;
  dual ew = d_clamp0(d_sub(d_max(a[2], b[2]), d_min(a[0], b[0])));
  dual eh = d_clamp0(d_sub(d_max(a[3], b[3]), d_min(a[1], b[1])));
  if (kind == K_GIOU) {
    dual c = d_mul(ew, eh);
    return d_sub(iou, d_div(d_sub(c, uni), c));
  }
  dual diag = d_add(d_add(d_mul(ew, ew), d_mul(eh, eh)), dn(eps, 0));
  dual dx = d_sub(d_scale(d_add(a[0], a[2]), 0.5), d_scale(d_add(b[0], b[2]), 0.5));
  dual dy = d_sub(d_scale(d_add(a[1], a[3]), 0.5), d_scale(d_add(b[1], b[3]), 0.5));
  dual diou = d_sub(iou, d_div(d_add(d_mul(dx, dx), d_mul(dy, dy)), diag));
  if (kind == K_DIOU) return diou;
  dual t = d_sub(d_atan(d_div(d_sub(a[2], a[0]), d_sub(a[3], a[1]))),
                 d_atan(d_div(d_sub(b[2], b[0]), d_sub(b[3], b[1]))));
  dual v = d_scale(d_mul(t, t), 4 / (VT_PI * VT_PI));
  double alpha = v.v / (1 - iou.v + v.v + eps);
  return d_sub(diou, d_scale(v, alpha));
}

/* Gradients of sum(g * op(a, b)): ga [n*4], gb [m*4], and the sums of the
 * terms' magnitudes (the scale rounding errors are relative to). */
static void ref_grad(int kind, double eps, const double *g, const double *a, int64_t n,
                     const double *b, int64_t m, double *ga, double *gb, double *ga_abs,
                     double *gb_abs) {
  memset(ga, 0, sizeof(double) * 4 * (size_t)n);
  memset(gb, 0, sizeof(double) * 4 * (size_t)m);
  memset(ga_abs, 0, sizeof(double) * 4 * (size_t)n);
  memset(gb_abs, 0, sizeof(double) * 4 * (size_t)m);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++)
      for (int dir = 0; dir < 8; dir++) {
        dual da[4], db[4];
        for (int k = 0; k < 4; k++) {
          da[k] = dn(a[4 * i + k], dir == k);
          db[k] = dn(b[4 * j + k], dir == k + 4);
        }
        double t = g[i * m + j] * ref_pair(kind, eps, da, db).d;
        double *dst = dir < 4 ? &ga[4 * i + dir] : &gb[4 * j + dir - 4];
        double *abs_dst = dir < 4 ? &ga_abs[4 * i + dir] : &gb_abs[4 * j + dir - 4];
        *dst += t;
        *abs_dst += fabs(t);
      }
}

/* ------------------------------------------------------------ running */

typedef struct run_ctx {
  const vo_backend_info *backend;
  DLDevice device;
  const vo_context *ctx;
} run_ctx;

static vo_status call_backward(int kind, const vo_context *ctx, const DLTensor *g,
                               const DLTensor *a, const DLTensor *b, double eps, DLTensor *ga,
                               DLTensor *gb) {
  switch (kind) {
    case K_IOU: return vo_box_iou_backward(ctx, g, a, b, ga, gb);
    case K_GIOU: return vo_generalized_box_iou_backward(ctx, g, a, b, ga, gb);
    case K_DIOU: return vo_distance_box_iou_backward(ctx, g, a, b, eps, ga, gb);
    default: return vo_complete_box_iou_backward(ctx, g, a, b, eps, ga, gb);
  }
}

/* Runs the backward on rc's device with host tensors g, a, b (any layout);
 * out_a [n*4] and out_b [m*4] receive the decoded gradients. Outputs start
 * filled with NaN (and so do out_a and out_b), so anything not written shows. */
static vo_status run_backward(const run_ctx *rc, int kind, const vt_tensor *g, const vt_tensor *a,
                              const vt_tensor *b, double eps, double *out_a, double *out_b) {
  const int64_t n = a->dl.shape[0], m = b->dl.shape[0];
  for (int64_t k = 0; k < 4 * n; k++) out_a[k] = NAN;
  for (int64_t k = 0; k < 4 * m; k++) out_b[k] = NAN;
  vt_tensor *dg = vt_to_device(g, rc->device);
  vt_tensor *da = vt_to_device(a, rc->device);
  vt_tensor *db = vt_to_device(b, rc->device);
  vo_tensor_desc desc[2];
  memset(desc, 0, sizeof desc);
  vo_status st = vo_box_iou_backward_shape(rc->ctx, &dg->dl, &da->dl, &db->dl, desc);
  if (st == VO_OK) {
    CHECK(desc[0].ndim == 2 && desc[0].shape[0] == n && desc[0].shape[1] == 4);
    CHECK(desc[1].ndim == 2 && desc[1].shape[0] == m && desc[1].shape[1] == 4);
    CHECK(desc[0].dtype.code == a->dl.dtype.code && desc[0].dtype.bits == a->dl.dtype.bits);
    CHECK(desc[0].device.device_type == rc->device.device_type);
    const int64_t sa[2] = {n, 4}, sb[2] = {m, 4};
    vt_tensor *ha = vt_tensor_new(a->dl.dtype, 2, sa, NULL);
    vt_tensor *hb = vt_tensor_new(a->dl.dtype, 2, sb, NULL);
    vt_fill(&ha->dl, NAN);
    vt_fill(&hb->dl, NAN);
    vt_tensor *oa = vt_to_device(ha, rc->device);
    vt_tensor *ob = vt_to_device(hb, rc->device);
    st = call_backward(kind, rc->ctx, &dg->dl, &da->dl, &db->dl, eps, &oa->dl, &ob->dl);
    vt_device_sync(rc->device);
    if (st == VO_OK) {
      vt_tensor *ra = vt_to_host(oa);
      vt_tensor *rb = vt_to_host(ob);
      vt_read_all(&ra->dl, out_a);
      vt_read_all(&rb->dl, out_b);
      vt_tensor_free(ra);
      vt_tensor_free(rb);
    }
    vt_tensor_free(ha);
    vt_tensor_free(hb);
    vt_tensor_free(oa);
    vt_tensor_free(ob);
  }
  vt_tensor_free(dg);
  vt_tensor_free(da);
  vt_tensor_free(db);
  return st;
}

/* A [rows, cols] host tensor; transposed stores it column-major, and the
 * values are rounded to dt (read back with vt_get for the reference). */
static vt_tensor *make(DLDataType dt, int64_t rows, int64_t cols, int transposed,
                       const double *values) {
  const int64_t shape[2] = {rows, cols};
  if (!transposed) return vt_tensor_new(dt, 2, shape, values);
  const int64_t strides[2] = {1, rows > 0 ? rows : 1};
  return vt_tensor_strided(dt, 2, shape, strides, 0, values);
}

/* Values of a tensor in row-major order, whatever its layout. */
static void read_rows(const vt_tensor *t, double *out) { vt_read_all(&t->dl, out); }

static double tolerance(DLDataType dt) {
  if (dt.bits == 64) return 1e-11;
  if (dt.code == kDLBfloat) return 1.6e-2;
  if (dt.bits == 16) return 2e-3;
  return 2e-5;
}

/* got within tol of ref, relative to the magnitude of the summed terms. */
static int close_to(DLDataType dt, double got, double ref, double abs_sum) {
  if (isnan(ref)) return isnan(got);
  return fabs(got - ref) <= tolerance(dt) * (abs_sum + fabs(ref)) + 1e-300;
}

static void gen_boxes(vt_rng *rng, int64_t n, double extent, double *out) {
  for (int64_t i = 0; i < n; i++) {
    double w = vt_rng_uniform(rng, 0.5, extent / 2), h = vt_rng_uniform(rng, 0.5, extent / 2);
    out[4 * i] = vt_rng_uniform(rng, -extent / 4, extent - w);
    out[4 * i + 1] = vt_rng_uniform(rng, -extent / 4, extent - h);
    out[4 * i + 2] = out[4 * i] + w;
    out[4 * i + 3] = out[4 * i + 1] + h;
  }
}

/* Compares one backward call on host tensors g, a, b against the reference
 * computed from their (rounded) values. */
static void check_case(const run_ctx *rc, const char *what, int kind, double eps,
                       const vt_tensor *g, const vt_tensor *a, const vt_tensor *b) {
  const DLDataType dt = a->dl.dtype;
  const int64_t n = a->dl.shape[0], m = b->dl.shape[0];
  const size_t na = (size_t)(4 * n + 1), nb = (size_t)(4 * m + 1), nm = (size_t)(n * m + 1);
  double *gv = malloc(nm * sizeof *gv), *av = malloc(na * sizeof *av),
         *bv = malloc(nb * sizeof *bv);
  double *ra = malloc(na * sizeof *ra), *rb = malloc(nb * sizeof *rb);
  double *aa = malloc(na * sizeof *aa), *ab = malloc(nb * sizeof *ab);
  double *oa = malloc(na * sizeof *oa), *ob = malloc(nb * sizeof *ob);
  read_rows(g, gv);
  read_rows(a, av);
  read_rows(b, bv);
  ref_grad(kind, eps, gv, av, n, bv, m, ra, rb, aa, ab);
  vo_status st = run_backward(rc, kind, g, a, b, eps, oa, ob);
  if (CHECK_MSG(st == VO_OK, "%s %s %s %s: %s", rc->backend->name, names[kind], vt_dtype_name(dt),
                what, vo_last_error())) {
    int bad = 0;
    for (int64_t k = 0; k < 4 * n && bad < 3; k++)
      if (!close_to(dt, oa[k], ra[k], aa[k]))
        bad += !CHECK_MSG(0, "%s %s %s %s: grad_boxes1[%lld][%lld] = %.17g, reference %.17g",
                          rc->backend->name, names[kind], vt_dtype_name(dt), what,
                          (long long)(k / 4), (long long)(k % 4), oa[k], ra[k]);
    for (int64_t k = 0; k < 4 * m && bad < 3; k++)
      if (!close_to(dt, ob[k], rb[k], ab[k]))
        bad += !CHECK_MSG(0, "%s %s %s %s: grad_boxes2[%lld][%lld] = %.17g, reference %.17g",
                          rc->backend->name, names[kind], vt_dtype_name(dt), what,
                          (long long)(k / 4), (long long)(k % 4), ob[k], rb[k]);
    if (!bad) CHECK(1);
  }
  double *bufs[] = {gv, av, bv, ra, rb, aa, ab, oa, ob};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
}

/* ------------------------------------------------------------ cases */

/* Random boxes (overlapping, disjoint, nested) with a few exact copies and
 * shared edges, every kind and dtype, contiguous and transposed layouts. */
static void random_cases(const run_ctx *rc) {
  enum { N = 23, M = 17 };
  vt_rng rng;
  vt_rng_seed(&rng, 77);
  double a[4 * N], b[4 * M], g[N * M];
  gen_boxes(&rng, N, 64, a);
  gen_boxes(&rng, M, 64, b);
  memcpy(b, a, 4 * sizeof(double));                         /* an identical pair */
  memcpy(b + 4, a + 8, 2 * sizeof(double));                 /* a shared corner */
  b[8] = a[2 + 12];                                         /* touching: b[2].x1 == a[3].x2 */
  a[4 * 5] = b[4 * 6] + 1, a[4 * 5 + 2] = b[4 * 6 + 2] - 1; /* nested in x */
  for (int i = 0; i < N * M; i++) g[i] = vt_rng_uniform(&rng, -1, 1);
  for (int d = 0; d < NUM_DTYPES; d++) {
    const DLDataType dt = *dtypes[d];
    for (int kind = 0; kind < 4; kind++)
      for (int lay = 0; lay < 2; lay++) {
        vt_tensor *tg = make(dt, N, M, lay, g), *ta = make(dt, N, 4, lay, a);
        vt_tensor *tb = make(dt, M, 4, !lay, b);
        check_case(rc, lay ? "transposed" : "contiguous", kind, kind >= K_DIOU ? 0.25 : 0, tg, ta,
                   tb);
        vt_tensor_free(tg);
        vt_tensor_free(ta);
        vt_tensor_free(tb);
      }
  }
}

/* Ties and kinks by hand: identical boxes (every max/min tied), touching
 * boxes (intersection width exactly 0: clamp passes the gradient), disjoint,
 * nested, and the documented pair [0,0,2,2] x [1,1,3,3]. */
static void hand_cases(const run_ctx *rc) {
  const double a[] = {0, 0, 2, 2, 1, 1, 3, 3, 0, 0, 4, 4, 5, 5, 6, 7};
  const double b[] = {0, 0, 2, 2, 2, 0, 3, 2, 1, 1, 3, 3, 10, 10, 12, 11, 1, 1, 2, 3};
  const double g[] = {1, -0.5, 0.25, 2, 1, 1, 0.5, -1, 3, 0.75, -2, 1, 1, 0.5, 1, 1, -1, 1, 2, 1};
  for (int d = 0; d < NUM_DTYPES; d++)
    for (int kind = 0; kind < 4; kind++) {
      vt_tensor *tg = make(*dtypes[d], 4, 5, 0, g), *ta = make(*dtypes[d], 4, 4, 0, a);
      vt_tensor *tb = make(*dtypes[d], 5, 4, 0, b);
      check_case(rc, "hand", kind, default_eps, tg, ta, tb);
      vt_tensor_free(tg);
      vt_tensor_free(ta);
      vt_tensor_free(tb);
    }

  /* [0,0,2,2] x [1,1,3,3], unit gradient: IoU 1/7, d/dx2 of box 1 is 6/49
   * (intersection +1 * 7, union +1 * 1), d/dx1 is 2/49 (area only); box 2's
   * x1 -6/49, x2 -2/49. GIoU adds d(U/C) = 1/9 to box 1's x2. */
  const int64_t s14[2] = {1, 4}, s11[2] = {1, 1};
  vt_tensor *ta = vt_tensor_new(vt_f64, 2, s14, a), *tb = vt_tensor_new(vt_f64, 2, s14, a + 4);
  const double one = 1;
  vt_tensor *tg = vt_tensor_new(vt_f64, 2, s11, &one);
  double oa[4], ob[4];
  if (CHECK_STATUS(run_backward(rc, K_IOU, tg, ta, tb, 0, oa, ob), VO_OK)) {
    const double wa[4] = {2. / 49, 2. / 49, 6. / 49, 6. / 49};
    const double wb[4] = {-6. / 49, -6. / 49, -2. / 49, -2. / 49};
    for (int k = 0; k < 4; k++)
      CHECK_MSG(fabs(oa[k] - wa[k]) < 1e-15 && fabs(ob[k] - wb[k]) < 1e-15,
                "box_iou_backward hand [%d]: %.17g %.17g, want %.17g %.17g", k, oa[k], ob[k], wa[k],
                wb[k]);
  }
  if (CHECK_STATUS(run_backward(rc, K_GIOU, tg, ta, tb, 0, oa, ob), VO_OK))
    CHECK_MSG(fabs(oa[2] - (6. / 49 + 1. / 9)) < 1e-15, "giou hand: %.17g", oa[2]);
  vt_tensor_free(ta);
  vt_tensor_free(tb);
  vt_tensor_free(tg);
}

/* sum(G * op(a, b)) through the library's float64 forward on the CPU; for
 * complete_box_iou alpha stays at its value for (a0, b0), as under
 * torch.no_grad(): distance_box_iou minus alpha0 * v. */
static double loss(int kind, double eps, const double *g, const double *a, int64_t n,
                   const double *b, int64_t m, const double *alpha0) {
  const int64_t sa[2] = {n, 4}, sb[2] = {m, 4}, so[2] = {n, m};
  vt_tensor *ta = vt_tensor_new(vt_f64, 2, sa, a), *tb = vt_tensor_new(vt_f64, 2, sb, b);
  vt_tensor *to = vt_tensor_new(vt_f64, 2, so, NULL);
  vo_status st;
  switch (kind) {
    case K_IOU: st = vo_box_iou(NULL, &ta->dl, &tb->dl, &to->dl); break;
    case K_GIOU: st = vo_generalized_box_iou(NULL, &ta->dl, &tb->dl, &to->dl); break;
    default: st = vo_distance_box_iou(NULL, &ta->dl, &tb->dl, eps, &to->dl); break;
  }
  CHECK_STATUS(st, VO_OK);
  double s = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      double v = vt_get(&to->dl, i * m + j);
      if (kind == K_CIOU) {
        const double *p = a + 4 * i, *q = b + 4 * j;
        double t = atan((p[2] - p[0]) / (p[3] - p[1])) - atan((q[2] - q[0]) / (q[3] - q[1]));
        v -= alpha0[i * m + j] * (4 / (VT_PI * VT_PI)) * t * t;
      }
      s += g[i * m + j] * v;
    }
  vt_tensor_free(ta);
  vt_tensor_free(tb);
  vt_tensor_free(to);
  return s;
}

/* Central differences in float64 on random boxes (no ties or kinks within
 * the step) against the backend's float64 backward. */
static void finite_difference_cases(const run_ctx *rc) {
  enum { N = 5, M = 4 };
  vt_rng rng;
  vt_rng_seed(&rng, 4711);
  double a[4 * N], b[4 * M], g[N * M], alpha0[N * M];
  gen_boxes(&rng, N, 20, a);
  gen_boxes(&rng, M, 20, b);
  for (int i = 0; i < N * M; i++) g[i] = vt_rng_uniform(&rng, -1, 1);
  /* alpha = v / (1 - iou + v + eps) at the unperturbed boxes */
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++) {
      dual da[4], db[4];
      for (int k = 0; k < 4; k++) da[k] = dn(a[4 * i + k], 0), db[k] = dn(b[4 * j + k], 0);
      const double iou = ref_pair(K_IOU, default_eps, da, db).v;
      const double t = atan((a[4 * i + 2] - a[4 * i]) / (a[4 * i + 3] - a[4 * i + 1])) -
                       atan((b[4 * j + 2] - b[4 * j]) / (b[4 * j + 3] - b[4 * j + 1]));
      const double v = 4 / (VT_PI * VT_PI) * t * t;
      alpha0[i * M + j] = v / (1 - iou + v + default_eps);
    }
  const int64_t sa[2] = {N, 4}, sb[2] = {M, 4}, sg[2] = {N, M};
  vt_tensor *ta = vt_tensor_new(vt_f64, 2, sa, a), *tb = vt_tensor_new(vt_f64, 2, sb, b);
  vt_tensor *tg = vt_tensor_new(vt_f64, 2, sg, g);
  for (int kind = 0; kind < 4; kind++) {
    double oa[4 * N], ob[4 * M];
    if (!CHECK_STATUS(run_backward(rc, kind, tg, ta, tb, default_eps, oa, ob), VO_OK)) continue;
    int bad = 0;
    for (int side = 0; side < 2; side++)
      for (int k = 0; k < (side ? 4 * M : 4 * N) && bad < 3; k++) {
        double pa[4 * N], pb[4 * M];
        memcpy(pa, a, sizeof pa);
        memcpy(pb, b, sizeof pb);
        double *x = side ? &pb[k] : &pa[k];
        const double h = 1e-5, x0 = *x;
        *x = x0 + h;
        double up = loss(kind, default_eps, g, pa, N, pb, M, alpha0);
        *x = x0 - h;
        double down = loss(kind, default_eps, g, pa, N, pb, M, alpha0);
        double fd = (up - down) / (2 * h), got = side ? ob[k] : oa[k];
        if (!(fabs(fd - got) <= 1e-6 * (1e-3 + fabs(fd))))
          bad += !CHECK_MSG(0, "%s %s: finite difference of grad_boxes%d[%d][%d]: %.12g, got %.12g",
                            rc->backend->name, names[kind], side + 1, k / 4, k % 4, fd, got);
      }
    if (!bad) CHECK(1);
  }
  vt_tensor_free(ta);
  vt_tensor_free(tb);
  vt_tensor_free(tg);
}

/* N or M zero: no pairs, so the other side's gradient is all zeros. */
static void empty_cases(const run_ctx *rc) {
  const double a[8] = {0, 0, 1, 1, 2, 2, 5, 6};
  for (int d = 0; d < NUM_DTYPES; d++)
    for (int kind = 0; kind < 4; kind++) {
      vt_tensor *t2 = make(*dtypes[d], 2, 4, 0, a), *t0 = make(*dtypes[d], 0, 4, 0, NULL);
      vt_tensor *g20 = make(*dtypes[d], 2, 0, 0, NULL), *g02 = make(*dtypes[d], 0, 2, 0, NULL);
      double oa[8], ob[8];
      if (CHECK_STATUS(run_backward(rc, kind, g20, t2, t0, default_eps, oa, ob), VO_OK))
        for (int k = 0; k < 8; k++) CHECK_MSG(oa[k] == 0, "%s empty M: %g", names[kind], oa[k]);
      if (CHECK_STATUS(run_backward(rc, kind, g02, t0, t2, default_eps, oa, ob), VO_OK))
        for (int k = 0; k < 8; k++) CHECK_MSG(ob[k] == 0, "%s empty N: %g", names[kind], ob[k]);
      vt_tensor_free(t2);
      vt_tensor_free(t0);
      vt_tensor_free(g20);
      vt_tensor_free(g02);
    }
}

/* Half boxes: the forward returns float32, so autograd hands the backward a
 * float32 grad; a half grad (the boxes' dtype) stays accepted. With grad
 * values that half holds exactly, both give the same gradients. */
static void float32_grad_cases(const run_ctx *rc) {
  const double a[8] = {0, 0, 1, 1, 2, 2, 5, 6}, b[12] = {0.5, 0, 2, 1.5, 1, 1, 4, 7, 3, 3, 6, 6};
  const double g[6] = {1, -0.5, 0.25, 2, 0.125, -1};
  const DLDataType *const halves[2] = {&vt_f16, &vt_bf16};
  for (int h = 0; h < 2; h++)
    for (int kind = 0; kind < 4; kind++) {
      vt_tensor *ta = make(*halves[h], 2, 4, 0, a), *tb = make(*halves[h], 3, 4, 1, b);
      vt_tensor *g32 = make(vt_f32, 2, 3, 0, g), *gh = make(*halves[h], 2, 3, 0, g);
      double oa32[8], ob32[12], oah[8], obh[12];
      if (CHECK_STATUS(run_backward(rc, kind, g32, ta, tb, default_eps, oa32, ob32), VO_OK) &&
          CHECK_STATUS(run_backward(rc, kind, gh, ta, tb, default_eps, oah, obh), VO_OK)) {
        int same = 1; /* bit for bit: NaN payloads and signed zeros included */
        for (int i = 0; i < 8; i++) same &= bits_of(oa32[i]) == bits_of(oah[i]);
        for (int i = 0; i < 12; i++) same &= bits_of(ob32[i]) == bits_of(obh[i]);
        CHECK_MSG(same, "%s %s: float32 grad and %s grad give different gradients", names[kind],
                  vt_dtype_name(*halves[h]), vt_dtype_name(*halves[h]));
      }
      /* grad of any floating dtype is read at its own precision (SPEC
       * section 5): float64 grad values that float32 holds exactly give the
       * same bits; an integer grad is refused. */
      vt_tensor *g64 = make(vt_f64, 2, 3, 0, g);
      if (CHECK_STATUS(run_backward(rc, kind, g64, ta, tb, default_eps, oah, obh), VO_OK)) {
        int same = 1;
        for (int i = 0; i < 8; i++) same &= bits_of(oa32[i]) == bits_of(oah[i]);
        for (int i = 0; i < 12; i++) same &= bits_of(ob32[i]) == bits_of(obh[i]);
        CHECK_MSG(same, "%s %s: float32 grad and float64 grad give different gradients",
                  names[kind], vt_dtype_name(*halves[h]));
      }
      g64->dl.dtype = vt_i64;
      CHECK_STATUS(run_backward(rc, kind, g64, ta, tb, default_eps, oa32, ob32),
                   VO_ERROR_UNSUPPORTED_DTYPE);
      CHECK_ERROR_HAS("grad must be float32, float64, float16 or bfloat16 (any floating dtype");
      vt_tensor_free(ta);
      vt_tensor_free(tb);
      vt_tensor_free(g32);
      vt_tensor_free(gh);
      vt_tensor_free(g64);
    }
}

/* a and b hold the same bits (NaN included). */
static int same_bits(const double *a, const double *b, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint64_t x, y;
    memcpy(&x, &a[i], sizeof x);
    memcpy(&y, &b[i], sizeof y);
    if (x != y) return 0;
  }
  return 1;
}

/* The same result for 1 and 2 CPU threads, bit for bit; and the same for
 * strided inputs as for contiguous ones. */
static void thread_cases(void) {
  enum { N = 301, M = 67 };
  vo_context *c1 = NULL, *c2 = NULL;
  if (!CHECK_STATUS(vo_context_create(&c1), VO_OK) || !CHECK_STATUS(vo_context_create(&c2), VO_OK))
    return;
  CHECK_STATUS(vo_context_set_num_threads(c1, 1), VO_OK);
  CHECK_STATUS(vo_context_set_num_threads(c2, 2), VO_OK);
  vt_rng rng;
  vt_rng_seed(&rng, 99);
  double *a = malloc(sizeof(double) * 4 * N), *b = malloc(sizeof(double) * 4 * M);
  double *g = malloc(sizeof(double) * N * M);
  gen_boxes(&rng, N, 200, a);
  gen_boxes(&rng, M, 200, b);
  for (int i = 0; i < N * M; i++) g[i] = vt_rng_uniform(&rng, -1, 1);
  vo_backend_info cpu;
  memset(&cpu, 0, sizeof cpu);
  cpu.name = "cpu";
  const run_ctx r1 = {&cpu, {kDLCPU, 0}, c1}, r2 = {&cpu, {kDLCPU, 0}, c2};
  for (int d = 0; d < NUM_DTYPES; d++)
    for (int kind = 0; kind < 4; kind++) {
      double oa[3][4 * N], ob[3][4 * M];
      vt_tensor *tg = make(*dtypes[d], N, M, 0, g), *ta = make(*dtypes[d], N, 4, 0, a);
      vt_tensor *tb = make(*dtypes[d], M, 4, 0, b);
      vt_tensor *sg = make(*dtypes[d], N, M, 1, g), *sa = make(*dtypes[d], N, 4, 1, a);
      vt_tensor *sb = make(*dtypes[d], M, 4, 1, b);
      CHECK_STATUS(run_backward(&r1, kind, tg, ta, tb, default_eps, oa[0], ob[0]), VO_OK);
      CHECK_STATUS(run_backward(&r2, kind, tg, ta, tb, default_eps, oa[1], ob[1]), VO_OK);
      CHECK_STATUS(run_backward(&r2, kind, sg, sa, sb, default_eps, oa[2], ob[2]), VO_OK);
      for (int r = 1; r < 3; r++)
        CHECK_MSG(same_bits(oa[0], oa[r], 4 * N) && same_bits(ob[0], ob[r], 4 * M),
                  "%s %s: %s differs from 1 thread", names[kind], vt_dtype_name(*dtypes[d]),
                  r == 1 ? "2 threads" : "strided inputs");
      vt_tensor *all[] = {tg, ta, tb, sg, sa, sb};
      for (size_t i = 0; i < 6; i++) vt_tensor_free(all[i]);
    }
  free(a);
  free(b);
  free(g);
  vo_context_destroy(c1);
  vo_context_destroy(c2);
}

/* Bad arguments: the op, the argument and the value are named, and the
 * outputs are not touched. */
static void error_cases(void) {
  const double a[8] = {0, 0, 1, 1, 2, 2, 5, 6};
  const int64_t s24[2] = {2, 4}, s34[2] = {3, 4}, s23[2] = {2, 3}, s22[2] = {2, 2}, s4[1] = {4};
  vt_tensor *ta = vt_tensor_new(vt_f32, 2, s24, a), *tb = vt_tensor_new(vt_f32, 2, s34, NULL);
  vt_tensor *g = vt_tensor_new(vt_f32, 2, s23, NULL), *g_bad = vt_tensor_new(vt_f32, 2, s22, NULL);
  vt_tensor *g64 = vt_tensor_new(vt_f64, 2, s23, NULL), *b1 = vt_tensor_new(vt_f32, 1, s4, NULL);
  vt_tensor *gi = vt_tensor_new(vt_i64, 2, s23, NULL), *ai = vt_tensor_new(vt_i64, 2, s24, NULL);
  vt_tensor *oa = vt_tensor_new(vt_f32, 2, s24, NULL), *ob = vt_tensor_new(vt_f32, 2, s34, NULL);
  vt_tensor *ob_bad = vt_tensor_new(vt_f32, 2, s24, NULL);
  vt_fill(&oa->dl, 7);
  CHECK_STATUS(vo_box_iou_backward(NULL, &g_bad->dl, &ta->dl, &tb->dl, &oa->dl, &ob->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("box_iou_backward: grad must have shape [N, M] = [2, 3]");
  CHECK_ERROR_HAS("got [2, 2]");
  CHECK(vt_get(&oa->dl, 0) == 7);
  g64->dl.dtype = vt_i64; /* any floating grad is fine, an integer one is not */
  CHECK_STATUS(vo_generalized_box_iou_backward(NULL, &g64->dl, &ta->dl, &tb->dl, &oa->dl, &ob->dl),
               VO_ERROR_UNSUPPORTED_DTYPE);
  CHECK_ERROR_HAS(
      "generalized_box_iou_backward: grad must be float32, float64, float16 or "
      "bfloat16 (any floating dtype beside boxes1's float32), got int64");
  CHECK_STATUS(vo_box_iou_backward(NULL, &gi->dl, &ai->dl, &tb->dl, &oa->dl, &ob->dl),
               VO_ERROR_UNSUPPORTED_DTYPE);
  CHECK_ERROR_HAS("boxes1 must be float32, float64, float16 or bfloat16, got int64");
  CHECK_STATUS(vo_box_iou_backward(NULL, &g->dl, &ta->dl, &b1->dl, &oa->dl, &ob->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("boxes2 must have shape [M, 4]");
  CHECK_STATUS(vo_distance_box_iou_backward(NULL, &g->dl, &ta->dl, &tb->dl, NAN, &oa->dl, &ob->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("distance_box_iou_backward: eps must be finite, got nan");
  CHECK_STATUS(
      vo_complete_box_iou_backward(NULL, &g->dl, &ta->dl, &tb->dl, INFINITY, &oa->dl, &ob->dl),
      VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("complete_box_iou_backward: eps must be finite, got inf");
  CHECK_STATUS(vo_box_iou_backward(NULL, &g->dl, &ta->dl, &tb->dl, &oa->dl, &ob_bad->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("box_iou_backward");
  CHECK(vt_get(&oa->dl, 0) == 7);
  /* the generic entry point knows the schema: eps defaults, outputs named */
  const vo_op_info *op = vo_op_find("complete_box_iou_backward");
  if (CHECK(op != NULL)) {
    CHECK(op->num_args == 4 && op->num_outputs == 2);
    vo_value args[3] = {vo_tensor_value(&g->dl), vo_tensor_value(&ta->dl),
                        vo_tensor_value(&tb->dl)};
    DLTensor *outs[2] = {&oa->dl, &ob->dl};
    CHECK_STATUS(vo_call(NULL, op, args, 3, outs, 2), VO_OK);
  }
  const char *const fwd[4] = {"box_iou", "generalized_box_iou", "distance_box_iou",
                              "complete_box_iou"};
  for (int k = 0; k < 4; k++) {
    const vo_op_info *f = vo_op_find(fwd[k]);
    char want[64];
    snprintf(want, sizeof want, "%s_backward", fwd[k]);
    CHECK_MSG(f && f->backward && strcmp(f->backward, want) == 0, "%s: backward %s", fwd[k],
              f && f->backward ? f->backward : "(null)");
  }
  vt_tensor *all[] = {ta, tb, g, g_bad, g64, b1, gi, ai, oa, ob, ob_bad};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

static void per_backend(const vo_backend_info *backend, void *user) {
  (void)user;
  run_ctx rc = {backend, {backend->device_type, 0}, NULL};
  printf("backend %s (%s)\n", backend->name, backend->detail);
  hand_cases(&rc);
  random_cases(&rc);
  finite_difference_cases(&rc);
  empty_cases(&rc);
  float32_grad_cases(&rc);
}

int main(void) {
  vt_for_each_backend(per_backend, NULL);
  thread_cases();
  error_cases();
  return vt_finish("test_box_iou_backward");
}
