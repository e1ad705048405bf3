/* Mixed precision (SPEC.md section 5) on every available backend: rois,
 * scores, box sets and gradients of another floating dtype than the data
 * tensor's, as autocast produces them (float32 rois beside bfloat16
 * features) and beyond. Each mixed call is checked against the same op on
 * inputs upcast to the data tensor's compute precision (float32, or float64
 * for float64 features), its output rounded to the data dtype, and the box
 * ops against tests/reference.c; combinations still refused name the op,
 * the argument and the dtype. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "test_util.h"

typedef struct run_ctx {
  const vo_backend_info *backend;
  DLDevice device;
} run_ctx;

static const DLDataType *const floats[4] = {&vt_f32, &vt_f64, &vt_f16, &vt_bf16};

static int same_dtype(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits; }
static int is_f64(DLDataType dt) { return same_dtype(dt, vt_f64); }
/* The precision a data dtype computes in. */
static DLDataType compute_of(DLDataType dt) { return is_f64(dt) ? vt_f64 : vt_f32; }

/* ------------------------------------------------------------ one call */

/* An op call through the generic entry point: host tensors per argument slot
 * (NULL for scalar slots, whose values are in args) and an optional tensor
 * list; run_call copies them to the device, allocates the outputs from the
 * op's shape query and reads them back as doubles. */
#define MAX_OUT 4
typedef struct call {
  const char *op;
  int num_args;
  vo_value args[VO_MAX_DIMS + 8];
  vt_tensor *tensors[VO_MAX_DIMS + 8];
  int list_arg; /* -1: none */
  vt_tensor *list[4];
  int list_count;
} call;

typedef struct result {
  int count;
  double *values[MAX_OUT];
  int64_t numel[MAX_OUT];
  DLDataType dtype[MAX_OUT];
} result;

static void result_free(result *r) {
  for (int k = 0; k < r->count; k++) free(r->values[k]);
  r->count = 0;
}

static vo_status run_call(const run_ctx *rc, call *c, result *r) {
  memset(r, 0, sizeof *r);
  const vo_op_info *op = vo_op_find(c->op);
  if (!CHECK_MSG(op != NULL, "no op %s", c->op)) return VO_ERROR_INVALID_ARGUMENT;
  vt_tensor *dev[VO_MAX_DIMS + 8] = {0}, *dlist[4] = {0};
  const DLTensor *items[4];
  for (int i = 0; i < c->num_args; i++)
    if (c->tensors[i]) {
      dev[i] = vt_to_device(c->tensors[i], rc->device);
      c->args[i] = vo_tensor_value(&dev[i]->dl);
    }
  if (c->list_arg >= 0) {
    for (int i = 0; i < c->list_count; i++) {
      dlist[i] = vt_to_device(c->list[i], rc->device);
      items[i] = &dlist[i]->dl;
    }
    c->args[c->list_arg] = vo_tensor_list_value(items, c->list_count);
  }
  int num_out = 0;
  vo_status st = vo_infer_num_outputs(NULL, op, c->args, c->num_args, &num_out);
  vo_tensor_desc desc[MAX_OUT];
  if (st == VO_OK && !CHECK(num_out <= MAX_OUT)) st = VO_ERROR_INVALID_ARGUMENT;
  if (st == VO_OK) st = vo_infer(NULL, op, c->args, c->num_args, desc, num_out);
  vt_tensor *dout[MAX_OUT] = {0};
  DLTensor *outs[MAX_OUT];
  if (st == VO_OK) {
    for (int k = 0; k < num_out; k++) {
      vt_tensor *h = vt_tensor_new(desc[k].dtype, desc[k].ndim, desc[k].shape, NULL);
      dout[k] = vt_to_device(h, rc->device);
      vt_tensor_free(h);
      outs[k] = &dout[k]->dl;
    }
    st = vo_call(NULL, op, c->args, c->num_args, outs, num_out);
  }
  if (st == VO_OK) {
    r->count = num_out;
    for (int k = 0; k < num_out; k++) {
      vt_tensor *back = vt_to_host(dout[k]);
      r->numel[k] = vt_numel(&back->dl);
      r->dtype[k] = back->dl.dtype;
      r->values[k] = malloc((size_t)(r->numel[k] > 0 ? r->numel[k] : 1) * sizeof(double));
      vt_read_all(&back->dl, r->values[k]);
      vt_tensor_free(back);
    }
  }
  for (int k = 0; k < num_out; k++) vt_tensor_free(dout[k]);
  for (int i = 0; i < c->num_args; i++) vt_tensor_free(dev[i]);
  for (int i = 0; i < c->list_count; i++) vt_tensor_free(dlist[i]);
  return st;
}

/* ------------------------------------------------------------ data */

/* values[i] as a tensor of dtype `dt` holding them as `via` would (rounded
 * to via first): the upcast copy of a `via` tensor when dt is wider. */
static vt_tensor *tensor_via(DLDataType dt, DLDataType via, int ndim, const int64_t *shape,
                             const double *values) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  for (int64_t i = 0; i < n; i++) v[i] = vt_round_to(via, values[i]);
  vt_tensor *t = vt_tensor_new(dt, ndim, shape, v);
  free(v);
  return t;
}

/* Random features and rois: K rois over N images of an H x W map, some of
 * them reaching outside it. */
enum { N = 2, C = 8, H = 7, W = 6, K = 6, PH = 2, PW = 2 };
static double feat_values[N * C * H * W], roi_values[K * 5], grad_values[K * C * PH * PW];

static void make_data(void) {
  vt_rng rng;
  vt_rng_seed(&rng, 12);
  for (int i = 0; i < N * C * H * W; i++) feat_values[i] = vt_rng_uniform(&rng, -2, 2);
  for (int i = 0; i < K * C * PH * PW; i++) grad_values[i] = vt_rng_uniform(&rng, -1, 1);
  for (int k = 0; k < K; k++) {
    double x1 = vt_rng_uniform(&rng, -1.5, W - 1), y1 = vt_rng_uniform(&rng, -1.5, H - 1);
    roi_values[k * 5] = (double)(k % N);
    roi_values[k * 5 + 1] = x1;
    roi_values[k * 5 + 2] = y1;
    roi_values[k * 5 + 3] = x1 + vt_rng_uniform(&rng, 0.3, 6);
    roi_values[k * 5 + 4] = y1 + vt_rng_uniform(&rng, 0.3, 6);
  }
}

/* Output `k` of the mixed call (data dtype fd) against the reference's
 * (computed in fd's compute precision) rounded to fd: within one ulp for the
 * half types (the half and float32 kernels may sum in different orders), a
 * float32 / float64 relative tolerance otherwise; integer outputs equal. */
static void expect_close(const char *what, DLDataType fd, const result *got, const result *ref,
                         int k) {
  if (!CHECK_MSG(got->count > k && ref->count > k && got->numel[k] == ref->numel[k],
                 "%s: output %d missing or of another size", what, k))
    return;
  const DLDataType dt = got->dtype[k];
  if (dt.code == kDLFloat && !CHECK_MSG(same_dtype(dt, fd), "%s: output %d is %s, expected %s",
                                        what, k, vt_dtype_name(dt), vt_dtype_name(fd)))
    return;
  for (int64_t i = 0; i < got->numel[k]; i++) {
    const double g = got->values[k][i], r = vt_round_to(dt, ref->values[k][i]);
    int ok;
    if (dt.code != kDLFloat)
      ok = g == r;
    else if (vt_dtype_is_half(dt))
      ok = vt_half_ulp_distance(dt, g, r) <= 1;
    else
      ok = fabs(g - r) <= (is_f64(dt) ? 1e-12 : 2e-6) * (1 + fabs(r));
    if (!CHECK_MSG(ok, "%s: output %d [%lld] = %.9g, upcast reference %.9g", what, k, (long long)i,
                   g, r))
      return;
  }
}

/* ------------------------------------------------------------ RoI ops */

static const int64_t feat_shape[4] = {N, C, H, W}, roi_shape[2] = {K, 5};
static const int64_t grad_shape[4] = {K, C, PH, PW}, ps_grad_shape[4] = {K, C / (PH * PW), PH, PW};

/* The call of RoI op `op` with data tensor dtype fd (values held as fd) and
 * rois of dtype rd (values held as rv). `extra` are the host tensors a
 * backward takes after rois (argmax / channel_mapping), NULL otherwise. */
static void roi_call(call *c, const char *op, DLDataType fd, DLDataType fv, DLDataType rd,
                     DLDataType rv, vt_tensor *extra) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->list_arg = -1;
  const int backward = strstr(op, "backward") != NULL;
  const int ps = strncmp(op, "ps_", 3) == 0;
  const int64_t *gshape = ps ? ps_grad_shape : grad_shape;
  c->tensors[0] = backward ? tensor_via(fd, fv, 4, gshape, grad_values)
                           : tensor_via(fd, fv, 4, feat_shape, feat_values);
  c->tensors[1] = tensor_via(rd, rv, 2, roi_shape, roi_values);
  int i = 2;
  if (extra) c->tensors[i++] = extra;
  const int align = strstr(op, "align") != NULL;
  c->args[i++] = vo_float_value(0.75);
  c->args[i++] = vo_int_value(PH);
  c->args[i++] = vo_int_value(PW);
  if (align && ps) c->args[i++] = vo_int_value(2); /* ps_roi_align: sampling_ratio before sizes */
  if (backward) {
    c->args[i++] = vo_int_value(N);
    c->args[i++] = vo_int_value(C);
    c->args[i++] = vo_int_value(H);
    c->args[i++] = vo_int_value(W);
  }
  if (align && !ps) {
    c->args[i++] = vo_int_value(0); /* adaptive sampling */
    c->args[i++] = vo_bool_value(1);
  }
  c->num_args = i;
}

static void call_free(call *c) {
  for (int i = 0; i < c->num_args; i++) vt_tensor_free(c->tensors[i]);
  for (int i = 0; i < c->list_count; i++) vt_tensor_free(c->list[i]);
}

/* The index output (argmax / channel_mapping) of a forward as the int32
 * tensor its backward takes. */
static vt_tensor *index_tensor(const result *fwd, const int64_t *shape) {
  return vt_tensor_new(vt_i32, 4, shape, fwd->values[1]);
}

static void roi_case(const run_ctx *rc, const char *op, DLDataType fd, DLDataType rd) {
  const DLDataType cd = compute_of(fd);
  char what[128];
  snprintf(what, sizeof what, "%s %s: %s beside %s rois", rc->backend->name, op, vt_dtype_name(fd),
           vt_dtype_name(rd));
  const int backward = strstr(op, "backward") != NULL;
  vt_tensor *extra_mixed = NULL, *extra_ref = NULL;
  if (backward && strcmp(op, "roi_align_backward") != 0) {
    /* argmax / channel_mapping from the matching forward (all in float32) */
    char fwd_op[64];
    snprintf(fwd_op, sizeof fwd_op, "%.*s", (int)(strstr(op, "_backward") - op), op);
    call f;
    result fr;
    roi_call(&f, fwd_op, vt_f32, fd, vt_f32, rd, NULL);
    if (!CHECK_STATUS(run_call(rc, &f, &fr), VO_OK)) {
      call_free(&f);
      return;
    }
    const int ps = strncmp(op, "ps_", 3) == 0;
    extra_mixed = index_tensor(&fr, ps ? ps_grad_shape : grad_shape);
    extra_ref = index_tensor(&fr, ps ? ps_grad_shape : grad_shape);
    result_free(&fr);
    call_free(&f);
  }
  call mixed, ref;
  roi_call(&mixed, op, fd, fd, rd, rd, extra_mixed);
  roi_call(&ref, op, cd, fd, cd, rd, extra_ref);
  result got = {0}, want = {0};
  if (CHECK_STATUS(run_call(rc, &mixed, &got), VO_OK) &&
      CHECK_STATUS(run_call(rc, &ref, &want), VO_OK)) {
    for (int k = 0; k < got.count; k++) expect_close(what, fd, &got, &want, k);
  }
  result_free(&got);
  result_free(&want);
  call_free(&mixed);
  call_free(&ref);
}

/* multi_scale_roi_align over two levels (scales 1 and 1/2) and its backward. */
static void msra_call(call *c, int backward, DLDataType fd, DLDataType fv, DLDataType rd,
                      DLDataType rv) {
  static const double scales[2] = {1.0, 0.5};
  const int64_t l0[4] = {N, C, 2 * H, 2 * W}, l1[4] = {N, C, H, W};
  static double big[N * C * 4 * H * W];
  for (int i = 0; i < N * C * 4 * H * W; i++) big[i] = feat_values[i % (N * C * H * W)] * 0.5;
  memset(c, 0, sizeof *c);
  c->op = backward ? "multi_scale_roi_align_backward" : "multi_scale_roi_align";
  if (backward) c->tensors[0] = tensor_via(fd, fv, 4, grad_shape, grad_values);
  c->list_arg = backward ? 2 : 0; /* features; rois are argument 1 either way */
  c->list[0] = tensor_via(fd, fv, 4, l0, big);
  c->list[1] = tensor_via(fd, fv, 4, l1, feat_values);
  c->list_count = 2;
  /* rois scaled up so they spread over both levels (canonical scale 4) */
  double rv_scaled[K * 5];
  for (int k = 0; k < K * 5; k++) rv_scaled[k] = k % 5 ? roi_values[k] * 1.5 : roi_values[k];
  c->tensors[1] = tensor_via(rd, rv, 2, roi_shape, rv_scaled);
  int i = backward ? 3 : 2;
  c->args[i++] = vo_float_list_value(scales, 2);
  c->args[i++] = vo_int_value(PH);
  c->args[i++] = vo_int_value(PW);
  c->args[i++] = vo_int_value(2);
  c->args[i++] = vo_int_value(4); /* canonical_scale */
  c->args[i++] = vo_int_value(1); /* canonical_level */
  c->args[i++] = vo_bool_value(0);
  c->num_args = i;
}

static void msra_case(const run_ctx *rc, int backward, DLDataType fd, DLDataType rd) {
  char what[128];
  snprintf(what, sizeof what, "%s multi_scale_roi_align%s: %s beside %s rois", rc->backend->name,
           backward ? "_backward" : "", vt_dtype_name(fd), vt_dtype_name(rd));
  call mixed, ref;
  msra_call(&mixed, backward, fd, fd, rd, rd);
  msra_call(&ref, backward, compute_of(fd), fd, compute_of(fd), rd);
  result got = {0}, want = {0};
  if (CHECK_STATUS(run_call(rc, &mixed, &got), VO_OK) &&
      CHECK_STATUS(run_call(rc, &ref, &want), VO_OK))
    for (int k = 0; k < got.count; k++) expect_close(what, fd, &got, &want, k);
  result_free(&got);
  result_free(&want);
  call_free(&mixed);
  call_free(&ref);
}

static void roi_cases(const run_ctx *rc) {
  static const char *const ops[] = {
      "roi_align",    "roi_align_backward",    "roi_pool",    "roi_pool_backward",
      "ps_roi_align", "ps_roi_align_backward", "ps_roi_pool", "ps_roi_pool_backward"};
  for (int f = 0; f < 4; f++)
    for (int r = 0; r < 4; r++) {
      if (r == f) continue;
      for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        roi_case(rc, ops[o], *floats[f], *floats[r]);
      msra_case(rc, 0, *floats[f], *floats[r]);
      msra_case(rc, 1, *floats[f], *floats[r]);
    }
}

/* ------------------------------------------------------------ box ops */

enum { NB = 9, MB = 7 };

static void gen_boxes(vt_rng *rng, int n, double *out) {
  for (int i = 0; i < n; i++) {
    /* integer-valued corners: exact in every dtype, integer ones included */
    const double x = (double)vt_rng_int(rng, 20), y = (double)vt_rng_int(rng, 20);
    out[i * 4] = x;
    out[i * 4 + 1] = y;
    out[i * 4 + 2] = x + 1 + (double)vt_rng_int(rng, 12);
    out[i * 4 + 3] = y + 1 + (double)vt_rng_int(rng, 12);
  }
}

static vo_status iou_call(const run_ctx *rc, int kind, const vt_tensor *a, const vt_tensor *b,
                          result *r) {
  static const char *const names[4] = {"box_iou", "generalized_box_iou", "distance_box_iou",
                                       "complete_box_iou"};
  call c;
  memset(&c, 0, sizeof c);
  c.op = names[kind];
  c.list_arg = -1;
  c.tensors[0] = (vt_tensor *)a;
  c.tensors[1] = (vt_tensor *)b;
  c.num_args = kind >= 2 ? 3 : 2;
  c.args[2] = vo_float_value(1e-7);
  return run_call(rc, &c, r);
}

/* Two box sets of different dtypes (floats and integers): torchvision's
 * promotion gives float64 when either is float64, else float32; values
 * against the scalar reference computed in that precision (float32
 * arithmetic beside any float32-or-narrower float set). */
static void iou_cases(const run_ctx *rc) {
  static const DLDataType *const all[7] = {&vt_f32, &vt_f64, &vt_f16, &vt_bf16,
                                           &vt_i64, &vt_i32, &vt_u8};
  vt_rng rng;
  vt_rng_seed(&rng, 5);
  double av[NB * 4], bv[MB * 4], ref[NB * MB];
  gen_boxes(&rng, NB, av);
  gen_boxes(&rng, MB, bv);
  const int64_t sa[2] = {NB, 4}, sb[2] = {MB, 4};
  for (int i = 0; i < 7; i++)
    for (int j = 0; j < 7; j++) {
      const DLDataType da = *all[i], db = *all[j];
      if (same_dtype(da, db)) continue;
      const int any_f64 = is_f64(da) || is_f64(db);
      const int both_int = da.code != kDLFloat && db.code != kDLFloat;
      const DLDataType out = any_f64 ? vt_f64 : vt_f32;
      vt_tensor *ta = vt_tensor_new(da, 2, sa, av), *tb = vt_tensor_new(db, 2, sb, bv);
      for (int kind = 0; kind < 4; kind++) {
        result got;
        if (!CHECK_STATUS(iou_call(rc, kind, ta, tb, &got), VO_OK)) continue;
        vr_pairwise_iou((vr_iou_kind)kind, av, NB, bv, MB, 1e-7, !(any_f64 || both_int), ref);
        CHECK_MSG(same_dtype(got.dtype[0], out), "%s: iou kind %d of %s and %s gave %s",
                  rc->backend->name, kind, vt_dtype_name(da), vt_dtype_name(db),
                  vt_dtype_name(got.dtype[0]));
        for (int e = 0; e < NB * MB; e++) {
          const double r = vt_round_to(out, ref[e]), g = got.values[0][e];
          if (!CHECK_MSG(fabs(g - r) <= (any_f64 ? 1e-12 : 1e-5) * (1 + fabs(r)),
                         "%s: iou kind %d of %s and %s [%d] = %.9g, reference %.9g",
                         rc->backend->name, kind, vt_dtype_name(da), vt_dtype_name(db), e, g, r))
            break;
        }
        result_free(&got);
      }
      vt_tensor_free(ta);
      vt_tensor_free(tb);
    }
}

/* The IoU backward with box sets (and grad) of different float dtypes:
 * each gradient in its set's dtype, equal to the backward on both sets
 * upcast to the compute precision, rounded. */
static void iou_backward_cases(const run_ctx *rc) {
  static const char *const names[4] = {"box_iou_backward", "generalized_box_iou_backward",
                                       "distance_box_iou_backward", "complete_box_iou_backward"};
  vt_rng rng;
  vt_rng_seed(&rng, 6);
  double av[NB * 4], bv[MB * 4], gv[NB * MB];
  gen_boxes(&rng, NB, av);
  gen_boxes(&rng, MB, bv);
  for (int e = 0; e < NB * MB; e++) gv[e] = vt_rng_uniform(&rng, -1, 1);
  const int64_t sa[2] = {NB, 4}, sb[2] = {MB, 4}, sg[2] = {NB, MB};
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      if (i == j) continue;
      const DLDataType da = *floats[i], db = *floats[j];
      const DLDataType cd = is_f64(da) || is_f64(db) ? vt_f64 : vt_f32;
      for (int kind = 0; kind < 4; kind++) {
        call mixed, ref;
        memset(&mixed, 0, sizeof mixed);
        mixed.op = names[kind];
        mixed.list_arg = -1;
        mixed.num_args = kind >= 2 ? 4 : 3;
        mixed.args[3] = vo_float_value(1e-7);
        ref = mixed;
        mixed.tensors[0] = vt_tensor_new(vt_f32, 2, sg, gv);
        mixed.tensors[1] = vt_tensor_new(da, 2, sa, av);
        mixed.tensors[2] = vt_tensor_new(db, 2, sb, bv);
        ref.tensors[0] = tensor_via(cd, vt_f32, 2, sg, gv);
        ref.tensors[1] = vt_tensor_new(cd, 2, sa, av);
        ref.tensors[2] = vt_tensor_new(cd, 2, sb, bv);
        result got, want;
        char what[128];
        snprintf(what, sizeof what, "%s %s: %s and %s", rc->backend->name, names[kind],
                 vt_dtype_name(da), vt_dtype_name(db));
        if (CHECK_STATUS(run_call(rc, &mixed, &got), VO_OK) &&
            CHECK_STATUS(run_call(rc, &ref, &want), VO_OK)) {
          expect_close(what, da, &got, &want, 0);
          expect_close(what, db, &got, &want, 1);
        }
        result_free(&got);
        result_free(&want);
        call_free(&mixed);
        call_free(&ref);
      }
    }
}

/* nms and batched_nms with boxes and scores of different float dtypes:
 * the same kept indices as the reference on the values the tensors hold,
 * the IoU in the boxes' precision. */
static void nms_cases(const run_ctx *rc) {
  enum { NN = 40 };
  vt_rng rng;
  vt_rng_seed(&rng, 7);
  double bv[NN * 4], sv[NN], iv[NN];
  gen_boxes(&rng, NN, bv);
  for (int i = 0; i < NN; i++) {
    sv[i] = (double)((i * 17) % NN) / 64.0 + 0.25; /* distinct, exact in every dtype */
    iv[i] = (double)(i % 3);
  }
  const int64_t sb[2] = {NN, 4}, ss[1] = {NN};
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      if (i == j) continue;
      const DLDataType bd = *floats[i], sd = *floats[j];
      for (int batched = 0; batched < 2; batched++) {
        call c;
        memset(&c, 0, sizeof c);
        c.op = batched ? "batched_nms" : "nms";
        c.list_arg = -1;
        c.tensors[0] = vt_tensor_new(bd, 2, sb, bv);
        c.tensors[1] = vt_tensor_new(sd, 1, ss, sv);
        if (batched) c.tensors[2] = vt_tensor_new(vt_i64, 1, ss, iv);
        c.num_args = batched ? 4 : 3;
        c.args[c.num_args - 1] = vo_float_value(0.3);
        int64_t want[NN], idx[NN];
        for (int k = 0; k < NN; k++) idx[k] = (int64_t)iv[k];
        const int64_t kept = batched ? vr_batched_nms(bv, sv, idx, NN, 0.3, !is_f64(bd), want)
                                     : vr_nms(bv, sv, NN, 0.3, !is_f64(bd), want);
        result got;
        if (CHECK_STATUS(run_call(rc, &c, &got), VO_OK)) {
          int same = (int64_t)got.values[1][0] == kept;
          for (int64_t k = 0; same && k < kept; k++) same = (int64_t)got.values[0][k] == want[k];
          CHECK_MSG(same, "%s %s: %s boxes beside %s scores keep other boxes than the reference",
                    rc->backend->name, c.op, vt_dtype_name(bd), vt_dtype_name(sd));
        }
        result_free(&got);
        call_free(&c);
      }
    }
}

/* ------------------------------------------------------------ refusals */

/* Combinations the rule does not cover: integer rois / scores / grads, and
 * deform_conv2d's operands, which share one dtype (autocast casts them). */
static void refused_cases(const run_ctx *rc) {
  struct {
    const char *op, *needle;
    DLDataType fd, rd;
  } cases[] = {
      {"roi_align",
       "roi_align: rois must be float32, float64, float16 or bfloat16 (any floating "
       "dtype beside input's bfloat16), got int64",
       vt_bf16, vt_i64},
      {"roi_pool",
       "roi_pool: rois must be float32, float64, float16 or bfloat16 (any floating "
       "dtype beside input's float16), got int32",
       vt_f16, vt_i32},
      {"ps_roi_align", "ps_roi_align: rois must be float32", vt_bf16, vt_u8},
      {"ps_roi_pool", "ps_roi_pool: rois must be float32", vt_f32, vt_i64},
      {"roi_align_backward",
       "roi_align_backward: rois must be float32, float64, float16 or "
       "bfloat16 (any floating dtype beside grad's bfloat16), got int64",
       vt_bf16, vt_i64},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    call c;
    result r;
    roi_call(&c, cases[i].op, cases[i].fd, cases[i].fd, cases[i].rd, cases[i].rd, NULL);
    if (CHECK_STATUS(run_call(rc, &c, &r), VO_ERROR_UNSUPPORTED_DTYPE))
      CHECK_ERROR_HAS(cases[i].needle);
    result_free(&r);
    call_free(&c);
  }
  {
    call c;
    result r;
    msra_call(&c, 0, vt_bf16, vt_bf16, vt_i64, vt_i64);
    if (CHECK_STATUS(run_call(rc, &c, &r), VO_ERROR_UNSUPPORTED_DTYPE))
      CHECK_ERROR_HAS(
          "multi_scale_roi_align: rois must be float32, float64, float16 or bfloat16 "
          "(any floating dtype beside features[0]'s bfloat16), got int64");
    call_free(&c);
    msra_call(&c, 1, vt_bf16, vt_bf16, vt_f32, vt_f32);
    vt_tensor_free(c.tensors[0]); /* a float32 grad beside bfloat16 features */
    c.tensors[0] = tensor_via(vt_f32, vt_f32, 4, grad_shape, grad_values);
    if (CHECK_STATUS(run_call(rc, &c, &r), VO_ERROR_UNSUPPORTED_DTYPE))
      CHECK_ERROR_HAS(
          "multi_scale_roi_align_backward: grad must have the dtype of features[0] "
          "(bfloat16), got float32");
    call_free(&c);
  }
  {
    call c;
    result r;
    memset(&c, 0, sizeof c);
    c.op = "nms";
    c.list_arg = -1;
    const int64_t sb[2] = {3, 4}, ss[1] = {3};
    c.tensors[0] = vt_tensor_new(vt_bf16, 2, sb, NULL);
    c.tensors[1] = vt_tensor_new(vt_i64, 1, ss, NULL);
    c.num_args = 3;
    c.args[2] = vo_float_value(0.5);
    if (CHECK_STATUS(run_call(rc, &c, &r), VO_ERROR_UNSUPPORTED_DTYPE))
      CHECK_ERROR_HAS(
          "nms: scores must be float32, float64, float16 or bfloat16 (any floating "
          "dtype beside boxes's bfloat16), got int64");
    call_free(&c);
  }
  {
    /* deform_conv2d: a float32 offset beside bfloat16 input and weight */
    call c;
    result r;
    memset(&c, 0, sizeof c);
    c.op = "deform_conv2d";
    c.list_arg = -1;
    const int64_t si[4] = {1, 2, 4, 4}, sw[4] = {2, 2, 3, 3}, so[4] = {1, 18, 2, 2};
    c.tensors[0] = vt_tensor_new(vt_bf16, 4, si, NULL);
    c.tensors[1] = vt_tensor_new(vt_bf16, 4, sw, NULL);
    c.tensors[2] = vt_tensor_new(vt_f32, 4, so, NULL);
    c.args[3] = vo_tensor_value(NULL);
    c.args[4] = vo_tensor_value(NULL);
    const int64_t ints[8] = {1, 1, 0, 0, 1, 1, 1, 1};
    for (int i = 0; i < 8; i++) c.args[5 + i] = vo_int_value(ints[i]);
    c.args[13] = vo_bool_value(0);
    c.num_args = 14;
    if (CHECK_STATUS(run_call(rc, &c, &r), VO_ERROR_UNSUPPORTED_DTYPE))
      CHECK_ERROR_HAS("deform_conv2d: offset must have the dtype of input (bfloat16), got float32");
    call_free(&c);
  }
}

static void per_backend(const vo_backend_info *backend, void *user) {
  (void)user;
  run_ctx rc = {backend, {backend->device_type, 0}};
  printf("backend %s (%s)\n", backend->name, backend->detail);
  roi_cases(&rc);
  iou_cases(&rc);
  iou_backward_cases(&rc);
  nms_cases(&rc);
  refused_cases(&rc);
}

int main(void) {
  make_data();
  vt_for_each_backend(per_backend, NULL);
  return vt_finish("test_mixed_precision");
}
