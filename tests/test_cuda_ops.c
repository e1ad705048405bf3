/* Every registered op on the CUDA backend against the CPU backend: random
 * inputs per dtype and seed, deterministic backward (bit-identical runs), an
 * output above 2^31 elements, bad inputs on the GPU (same status and message
 * as on the CPU) and mixed CPU/CUDA tensors. Exits 77 where no GPU is visible;
 * VO_TEST_CUDA_OPS_ON_CPU=1 runs it with the CPU standing in for CUDA (checks
 * the harness itself). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/half.h"
#include "test_util.h"

#ifndef VISIONOPS_TEST_CUDA

/* Registered only when the CUDA backend is built; this is a safeguard. */
int main(void) {
  printf("no CUDA device: test_cuda_ops was built without the CUDA backend\n");
  return 77;
}

#else

#include <cuda_runtime_api.h>

#define MAX_ARGS 24
#define MAX_TENSORS 24
#define NUM_SEEDS 3
#define NUM_DTYPES 4
static const DLDataType *const dtypes[NUM_DTYPES] = {&vt_f32, &vt_f64, &vt_f16, &vt_bf16};
static const DLDevice cpu_dev = {kDLCPU, 0};
/* The device under test; VO_TEST_CUDA_OPS_ON_CPU=1 points it at the CPU to
 * check this harness itself on a machine without a GPU. */
static DLDevice cuda_dev = {kDLCUDA, 0};
static int harness_check;

static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------ test cases */

/* One call of an op: boxed arguments whose tensors live in `tensors` (host),
 * so the same case can be placed on any device. */
typedef struct tcase {
  const vo_op_info *op;
  char label[96];
  int num_args;
  vo_value args[MAX_ARGS];
  int tensor_of[MAX_ARGS]; /* index into tensors for a tensor argument, else -1 */
  int list_arg;            /* the Tensor[] argument, or -1 */
  int list_count;
  int list_of[VO_MAX_LIST];
  const DLTensor *host_list[VO_MAX_LIST];
  double floats[VO_MAX_LIST]; /* storage of the float[] argument */
  int num_tensors;
  vt_tensor *tensors[MAX_TENSORS];
  int num_outputs;
  vo_tensor_desc descs[VO_MAX_LIST]; /* from vo_infer on the host case */
  int rois_tensor;                   /* tensor index of rois, or -1 */
  int shape_tensor;                  /* tensor whose wrong shape is an error */
  int strided;                       /* lay new tensors out with strides */
} tcase;

static void case_init(tcase *c, const vo_op_info *op, DLDataType dt, int seed) {
  memset(c, 0, sizeof *c);
  c->op = op;
  snprintf(c->label, sizeof c->label, "%s %s seed %d", op->name, vt_dtype_name(dt), seed);
  c->list_arg = -1;
  c->rois_tensor = -1;
  c->shape_tensor = -1;
  c->num_outputs = op->num_outputs;
  for (int i = 0; i < MAX_ARGS; i++) c->tensor_of[i] = -1;
}

static void case_free(tcase *c) {
  for (int i = 0; i < c->num_tensors; i++) vt_tensor_free(c->tensors[i]);
  c->num_tensors = 0;
}

/* A host tensor (strided when the case asks for it: every other innermost
 * element, one element of byte offset) owned by the case; returns its index. */
static int add_values(tcase *c, DLDataType dt, int ndim, const int64_t *shape,
                      const double *values) {
  if (c->num_tensors == MAX_TENSORS) {
    fprintf(stderr, "test_cuda_ops: too many tensors in one case\n");
    exit(2);
  }
  vt_tensor *t;
  if (c->strided && ndim > 0) {
    int64_t strides[VO_MAX_DIMS], s = 2;
    for (int d = ndim - 1; d >= 0; d--) {
      strides[d] = s;
      s *= shape[d] > 0 ? shape[d] : 1;
    }
    t = vt_tensor_strided(dt, ndim, shape, strides, vt_dtype_bytes(dt), values);
  } else {
    t = vt_tensor_new(dt, ndim, shape, values);
  }
  c->tensors[c->num_tensors] = t;
  return c->num_tensors++;
}

static int64_t shape_numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  return n;
}

static int add_uniform(tcase *c, DLDataType dt, int ndim, const int64_t *shape, vt_rng *rng,
                       double lo, double hi) {
  const int64_t n = shape_numel(ndim, shape);
  double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  if (!v) exit(2);
  for (int64_t i = 0; i < n; i++) v[i] = vt_rng_uniform(rng, lo, hi);
  int t = add_values(c, dt, ndim, shape, v);
  free(v);
  return t;
}

static void push_arg(tcase *c, vo_value v, int tensor) {
  c->tensor_of[c->num_args] = tensor;
  c->args[c->num_args++] = v;
}
static void arg_tensor(tcase *c, int t) { push_arg(c, vo_tensor_value(&c->tensors[t]->dl), t); }
static void arg_none(tcase *c) { push_arg(c, vo_tensor_value(NULL), -1); }
static void arg_float(tcase *c, double f) { push_arg(c, vo_float_value(f), -1); }
static void arg_int(tcase *c, int64_t i) { push_arg(c, vo_int_value(i), -1); }
static void arg_bool(tcase *c, int b) { push_arg(c, vo_bool_value(b), -1); }
static void arg_floats(tcase *c, const double *v, int n) {
  memcpy(c->floats, v, sizeof(double) * (size_t)n);
  push_arg(c, vo_float_list_value(c->floats, n), -1);
}
/* A Tensor[] argument (its items are placed per device by run_case). */
static void arg_list(tcase *c, const int *ts, int n) {
  c->list_arg = c->num_args;
  c->list_count = n;
  memcpy(c->list_of, ts, sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) c->host_list[i] = &c->tensors[ts[i]]->dl;
  push_arg(c, vo_tensor_list_value(c->host_list, n), -1);
}

/* ------------------------------------------------------------ generators */

/* Boxes with duplicates (IoU exactly 1), near duplicates and tied scores. */
static void gen_boxes(vt_rng *rng, int64_t n, double *b) {
  for (int64_t i = 0; i < n; i++) {
    double *r = b + 4 * i;
    if (i > 0 && vt_rng_int(rng, 5) == 0) {
      memcpy(r, b + 4 * vt_rng_int(rng, i), sizeof(double) * 4);
      continue;
    }
    if (i > 0 && vt_rng_int(rng, 3) == 0) {
      const double *p = b + 4 * vt_rng_int(rng, i);
      for (int j = 0; j < 4; j++) r[j] = p[j] + vt_rng_uniform(rng, -2, 2);
      if (r[2] < r[0]) r[2] = r[0] + 1;
      if (r[3] < r[1]) r[3] = r[1] + 1;
      continue;
    }
    const double x = vt_rng_uniform(rng, -20, 100), y = vt_rng_uniform(rng, -20, 100);
    r[0] = x;
    r[1] = y;
    r[2] = x + vt_rng_uniform(rng, 0.5, 40);
    r[3] = y + vt_rng_uniform(rng, 0.5, 40);
  }
}

/* RoIs (batch, x1, y1, x2, y2) in image coordinates of an h x w map at
 * `scale`: inside, partly outside, wholly outside, tiny, huge, reversed. */
static void gen_rois(vt_rng *rng, int64_t k, int64_t n, int64_t h, int64_t w, double scale,
                     double *r) {
  const double mh = (double)h / scale, mw = (double)w / scale;
  for (int64_t i = 0; i < k; i++) {
    double *q = r + 5 * i;
    double cx = vt_rng_uniform(rng, 0, mw), cy = vt_rng_uniform(rng, 0, mh);
    double hw = vt_rng_uniform(rng, 0.5, mw / 2), hh = vt_rng_uniform(rng, 0.5, mh / 2);
    switch (vt_rng_int(rng, 6)) {
      case 1: cx = vt_rng_uniform(rng, -mw / 4, mw * 1.25); break;
      case 2: cx = vt_rng_int(rng, 2) ? -mw : 2.5 * mw; break;
      case 3:
        hw = vt_rng_uniform(rng, 0.01, 0.4) / scale;
        hh = vt_rng_uniform(rng, 0.01, 0.4) / scale;
        break;
      case 4:
        hw = vt_rng_uniform(rng, 1.5, 3) * mw;
        hh = vt_rng_uniform(rng, 1.5, 3) * mh;
        break;
      case 5: hw = -hw / 3; break;
      default: break;
    }
    q[0] = (double)vt_rng_int(rng, n);
    q[1] = cx - hw;
    q[2] = cy - hh;
    q[3] = cx + hw;
    q[4] = cy + hh;
  }
}

/* The RoI problem of a seed: odd sizes, scales that are powers of two. */
typedef struct roi_problem {
  int64_t n, c, h, w, k, ph, pw, sr;
  int aligned;
  double scale;
} roi_problem;

static roi_problem roi_problem_of(int seed, int64_t channel_groups) {
  static const roi_problem base[NUM_SEEDS] = {
      {2, 5, 13, 11, 17, 3, 2, 2, 0, 0.5},
      {1, 3, 7, 9, 1, 1, 1, 0, 1, 1.0},
      {3, 4, 17, 15, 40, 2, 3, -1, 1, 0.25},
  };
  roi_problem p = base[seed];
  if (channel_groups > 0) p.c = channel_groups * p.ph * p.pw;
  return p;
}

static int add_rois(tcase *c, DLDataType dt, vt_rng *rng, const roi_problem *p) {
  double *r = malloc(sizeof(double) * (size_t)(5 * p->k));
  if (!r) exit(2);
  gen_rois(rng, p->k, p->n, p->h, p->w, p->scale, r);
  const int64_t shape[2] = {p->k, 5};
  int t = add_values(c, dt, 2, shape, r);
  free(r);
  c->rois_tensor = t;
  return t;
}

/* Input feature map; seed 1 uses small integers so maxima tie (roi_pool). */
static int add_map(tcase *c, DLDataType dt, vt_rng *rng, const roi_problem *p, int seed) {
  const int64_t shape[4] = {p->n, p->c, p->h, p->w};
  if (seed != 1) return add_uniform(c, dt, 4, shape, rng, -1, 1);
  const int64_t n = shape_numel(4, shape);
  double *v = malloc(sizeof(double) * (size_t)n);
  if (!v) exit(2);
  for (int64_t i = 0; i < n; i++) v[i] = (double)(vt_rng_int(rng, 5) - 2);
  int t = add_values(c, dt, 4, shape, v);
  free(v);
  return t;
}

static int add_pooled_grad(tcase *c, DLDataType dt, vt_rng *rng, const roi_problem *p,
                           int64_t channels) {
  const int64_t shape[4] = {p->k, channels, p->ph, p->pw};
  return add_uniform(c, dt, 4, shape, rng, -1, 1);
}

/* ------------------------------------------------------------ builders */

typedef void (*build_fn)(tcase *c, DLDataType dt, int seed, vt_rng *rng);

static const int64_t box_counts[NUM_SEEDS] = {97, 0, 1031};
static const double thresholds[NUM_SEEDS] = {0.5, 0.3, 0.7};

static void build_nms_common(tcase *c, DLDataType dt, int seed, vt_rng *rng, int batched) {
  const int64_t n = box_counts[seed];
  double *b = malloc(sizeof(double) * (size_t)(4 * n + 1));
  double *s = malloc(sizeof(double) * (size_t)(n + 1));
  double *ids = malloc(sizeof(double) * (size_t)(n + 1));
  if (!b || !s || !ids) exit(2);
  gen_boxes(rng, n, b);
  for (int64_t i = 0; i < n; i++) {
    s[i] = floor(vt_rng_uniform(rng, 0, 8)) / 8; /* many tied scores */
    ids[i] = (double)vt_rng_int(rng, 5);
  }
  const int64_t bs[2] = {n, 4}, ss[1] = {n};
  int tb = add_values(c, dt, 2, bs, b);
  arg_tensor(c, tb);
  arg_tensor(c, add_values(c, dt, 1, ss, s));
  if (batched) arg_tensor(c, add_values(c, vt_i64, 1, ss, ids));
  arg_float(c, thresholds[seed]);
  c->shape_tensor = tb;
  free(b);
  free(s);
  free(ids);
}
static void build_nms(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_nms_common(c, dt, seed, rng, 0);
}
static void build_batched_nms(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_nms_common(c, dt, seed, rng, 1);
}

/* The IoU ops (and, with `grad`, their backward: grad [N, M] first). */
static void build_iou_common(tcase *c, DLDataType dt, int seed, vt_rng *rng, int eps, int grad) {
  static const int64_t ns[NUM_SEEDS] = {37, 0, 129}, ms[NUM_SEEDS] = {53, 9, 1};
  double *b = malloc(sizeof(double) * (size_t)(4 * (ns[seed] + ms[seed])));
  if (!b) exit(2);
  gen_boxes(rng, ns[seed] + ms[seed], b);
  const int64_t gs[2] = {ns[seed], ms[seed]}, s1[2] = {ns[seed], 4}, s2[2] = {ms[seed], 4};
  if (grad) arg_tensor(c, add_uniform(c, dt, 2, gs, rng, -1, 1));
  const int t1 = add_values(c, dt, 2, s1, b);
  arg_tensor(c, t1);
  arg_tensor(c, add_values(c, dt, 2, s2, b + 4 * ns[seed]));
  if (eps) arg_float(c, 1e-7);
  c->shape_tensor = t1;
  free(b);
}
static void build_box_iou(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_iou_common(c, dt, seed, rng, 0, 0);
}
static void build_iou_eps(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_iou_common(c, dt, seed, rng, 1, 0);
}
static void build_iou_backward(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_iou_common(c, dt, seed, rng, 0, 1);
}
static void build_iou_eps_backward(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_iou_common(c, dt, seed, rng, 1, 1);
}

static void build_roi_align(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  const roi_problem p = roi_problem_of(seed, 0);
  arg_tensor(c, add_map(c, dt, rng, &p, seed));
  arg_tensor(c, add_rois(c, dt, rng, &p));
  arg_float(c, p.scale);
  arg_int(c, p.ph);
  arg_int(c, p.pw);
  arg_int(c, p.sr);
  arg_bool(c, p.aligned);
  c->shape_tensor = c->rois_tensor;
}

static void build_roi_align_backward(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  const roi_problem p = roi_problem_of(seed, 0);
  arg_tensor(c, add_pooled_grad(c, dt, rng, &p, p.c));
  arg_tensor(c, add_rois(c, dt, rng, &p));
  arg_float(c, p.scale);
  arg_int(c, p.ph);
  arg_int(c, p.pw);
  arg_int(c, p.n);
  arg_int(c, p.c);
  arg_int(c, p.h);
  arg_int(c, p.w);
  arg_int(c, p.sr);
  arg_bool(c, p.aligned);
  c->shape_tensor = c->rois_tensor;
}

static void build_roi_pool(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  const roi_problem p = roi_problem_of(seed, 0);
  arg_tensor(c, add_map(c, dt, rng, &p, seed));
  arg_tensor(c, add_rois(c, dt, rng, &p));
  arg_float(c, p.scale);
  arg_int(c, p.ph);
  arg_int(c, p.pw);
  c->shape_tensor = c->rois_tensor;
}

/* Runs a two-output forward on the host and returns (as a new tensor of the
 * case) its second output: roi_pool's argmax or a channel_mapping. */
static int forward_second_output(tcase *c, const char *op_name, const vo_value *args, int nargs) {
  const vo_op_info *op = vo_op_find(op_name);
  vo_tensor_desc d[2];
  if (!op || vo_infer(NULL, op, args, nargs, d, 2) != VO_OK) {
    fprintf(stderr, "test_cuda_ops: %s on the host failed: %s\n", op_name, vo_last_error());
    exit(2);
  }
  vt_tensor *out = vt_tensor_new(d[0].dtype, d[0].ndim, d[0].shape, NULL);
  const int saved = c->strided;
  c->strided = 0; /* the forward writes contiguous outputs */
  int t = add_values(c, d[1].dtype, d[1].ndim, d[1].shape, NULL);
  c->strided = saved;
  DLTensor *outs[2] = {&out->dl, &c->tensors[t]->dl};
  if (vo_call(NULL, op, args, nargs, outs, 2) != VO_OK) {
    fprintf(stderr, "test_cuda_ops: %s on the host failed: %s\n", op_name, vo_last_error());
    exit(2);
  }
  vt_tensor_free(out);
  return t;
}

static void build_roi_pool_backward(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  const roi_problem p = roi_problem_of(seed, 0);
  const int x = add_map(c, dt, rng, &p, seed);
  const int r = add_rois(c, dt, rng, &p);
  const vo_value fwd[5] = {vo_tensor_value(&c->tensors[x]->dl), vo_tensor_value(&c->tensors[r]->dl),
                           vo_float_value(p.scale), vo_int_value(p.ph), vo_int_value(p.pw)};
  const int argmax = forward_second_output(c, "roi_pool", fwd, 5);
  arg_tensor(c, add_pooled_grad(c, dt, rng, &p, p.c));
  arg_tensor(c, r);
  arg_tensor(c, argmax);
  arg_float(c, p.scale);
  arg_int(c, p.ph);
  arg_int(c, p.pw);
  arg_int(c, p.n);
  arg_int(c, p.c);
  arg_int(c, p.h);
  arg_int(c, p.w);
  c->shape_tensor = c->rois_tensor;
}

static void build_ps_common(tcase *c, DLDataType dt, int seed, vt_rng *rng, int align) {
  const roi_problem p = roi_problem_of(seed, 3);
  arg_tensor(c, add_map(c, dt, rng, &p, seed));
  arg_tensor(c, add_rois(c, dt, rng, &p));
  arg_float(c, p.scale);
  arg_int(c, p.ph);
  arg_int(c, p.pw);
  if (align) arg_int(c, p.sr);
  c->shape_tensor = c->rois_tensor;
}
static void build_ps_roi_align(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_ps_common(c, dt, seed, rng, 1);
}
static void build_ps_roi_pool(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_ps_common(c, dt, seed, rng, 0);
}

static void build_ps_backward_common(tcase *c, DLDataType dt, int seed, vt_rng *rng, int align) {
  const roi_problem p = roi_problem_of(seed, 3);
  const int x = add_map(c, dt, rng, &p, seed);
  const int r = add_rois(c, dt, rng, &p);
  const vo_value fwd[6] = {vo_tensor_value(&c->tensors[x]->dl),
                           vo_tensor_value(&c->tensors[r]->dl),
                           vo_float_value(p.scale),
                           vo_int_value(p.ph),
                           vo_int_value(p.pw),
                           vo_int_value(p.sr)};
  const int cm =
      forward_second_output(c, align ? "ps_roi_align" : "ps_roi_pool", fwd, align ? 6 : 5);
  arg_tensor(c, add_pooled_grad(c, dt, rng, &p, p.c / (p.ph * p.pw)));
  arg_tensor(c, r);
  arg_tensor(c, cm);
  arg_float(c, p.scale);
  arg_int(c, p.ph);
  arg_int(c, p.pw);
  if (align) arg_int(c, p.sr);
  arg_int(c, p.n);
  arg_int(c, p.c);
  arg_int(c, p.h);
  arg_int(c, p.w);
  c->shape_tensor = c->rois_tensor;
}
static void build_ps_roi_align_backward(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_ps_backward_common(c, dt, seed, rng, 1);
}
static void build_ps_roi_pool_backward(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_ps_backward_common(c, dt, seed, rng, 0);
}

/* An FPN pyramid of a 130x98 image (levels of ceil sizes) and RoIs of sizes
 * 4..300 pixels, so they spread over the levels; one reversed RoI has no level. */
static void build_msra_common(tcase *c, DLDataType dt, int seed, vt_rng *rng, int backward) {
  static const int levels[NUM_SEEDS] = {4, 1, 3};
  const roi_problem p = roi_problem_of(seed, 0);
  const int nl = levels[seed];
  int feats[VO_MAX_LIST];
  double scales[VO_MAX_LIST];
  for (int l = 0; l < nl; l++) {
    const int64_t s = (int64_t)4 << l;
    const int64_t shape[4] = {p.n, p.c, (98 + s - 1) / s, (130 + s - 1) / s};
    feats[l] = add_uniform(c, dt, 4, shape, rng, -1, 1);
    scales[l] = 1.0 / (double)s;
  }
  double *r = malloc(sizeof(double) * (size_t)(5 * p.k));
  if (!r) exit(2);
  for (int64_t i = 0; i < p.k; i++) {
    const double x = vt_rng_uniform(rng, -10, 120), y = vt_rng_uniform(rng, -10, 90);
    r[5 * i] = (double)vt_rng_int(rng, p.n);
    r[5 * i + 1] = x;
    r[5 * i + 2] = y;
    r[5 * i + 3] = x + exp(vt_rng_uniform(rng, log(4.0), log(300.0)));
    r[5 * i + 4] = y + exp(vt_rng_uniform(rng, log(4.0), log(300.0)));
  }
  if (p.k > 2) r[5 * 2 + 3] = r[5 * 2 + 1] - 5; /* reversed: negative area */
  const int64_t rs[2] = {p.k, 5};
  const int rt = add_values(c, dt, 2, rs, r);
  free(r);
  c->rois_tensor = rt;
  c->shape_tensor = rt;
  if (backward) {
    arg_tensor(c, add_pooled_grad(c, dt, rng, &p, p.c));
    arg_tensor(c, rt);
    arg_list(c, feats, nl);
    c->num_outputs = nl;
  } else {
    arg_list(c, feats, nl);
    arg_tensor(c, rt);
  }
  arg_floats(c, scales, nl);
  arg_int(c, p.ph);
  arg_int(c, p.pw);
  arg_int(c, p.sr);
  arg_int(c, 224);
  arg_int(c, 4);
  arg_bool(c, p.aligned);
}
static void build_msra(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_msra_common(c, dt, seed, rng, 0);
}
static void build_msra_backward(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_msra_common(c, dt, seed, rng, 1);
}

typedef struct dcn_problem {
  int64_t n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups, og;
  int mask, bias;
} dcn_problem;

static void build_dcn_common(tcase *c, DLDataType dt, int seed, vt_rng *rng, int backward) {
  static const dcn_problem probs[NUM_SEEDS] = {
      {2, 4, 9, 7, 6, 3, 2, 2, 1, 1, 0, 2, 1, 2, 2, 1, 1},
      {1, 3, 5, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0},
      {3, 6, 11, 10, 6, 3, 3, 1, 2, 2, 1, 1, 2, 3, 3, 1, 0},
  };
  const dcn_problem d = probs[seed];
  const int64_t ho = (d.h + 2 * d.ph - (d.dh * (d.kh - 1) + 1)) / d.sh + 1;
  const int64_t wo = (d.w + 2 * d.pw - (d.dw * (d.kw - 1) + 1)) / d.sw + 1;
  const int64_t xs[4] = {d.n, d.cin, d.h, d.w}, ws[4] = {d.cout, d.cin / d.groups, d.kh, d.kw};
  const int64_t os[4] = {d.n, 2 * d.og * d.kh * d.kw, ho, wo},
                ms[4] = {d.n, d.og * d.kh * d.kw, ho, wo};
  const int64_t bs[1] = {d.cout}, gs[4] = {d.n, d.cout, ho, wo};
  if (backward) arg_tensor(c, add_uniform(c, dt, 4, gs, rng, -1, 1));
  arg_tensor(c, add_uniform(c, dt, 4, xs, rng, -1, 1));
  arg_tensor(c, add_uniform(c, dt, 4, ws, rng, -1, 1));
  const int off = add_uniform(c, dt, 4, os, rng, -3, 3);
  arg_tensor(c, off);
  if (d.mask)
    arg_tensor(c, add_uniform(c, dt, 4, ms, rng, 0, 1));
  else
    arg_none(c);
  if (d.bias)
    arg_tensor(c, add_uniform(c, dt, 1, bs, rng, -1, 1));
  else
    arg_none(c);
  const int64_t ints[8] = {d.sh, d.sw, d.ph, d.pw, d.dh, d.dw, d.groups, d.og};
  for (int i = 0; i < 8; i++) arg_int(c, ints[i]);
  arg_bool(c, d.mask);
  c->shape_tensor = off;
}
static void build_dcn(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_dcn_common(c, dt, seed, rng, 0);
}
static void build_dcn_backward(tcase *c, DLDataType dt, int seed, vt_rng *rng) {
  build_dcn_common(c, dt, seed, rng, 1);
}

static const struct {
  const char *name;
  build_fn build;
} builders[] = {
    {"nms", build_nms},
    {"batched_nms", build_batched_nms},
    {"box_iou", build_box_iou},
    {"generalized_box_iou", build_box_iou},
    {"distance_box_iou", build_iou_eps},
    {"complete_box_iou", build_iou_eps},
    {"roi_align", build_roi_align},
    {"roi_align_backward", build_roi_align_backward},
    {"roi_pool", build_roi_pool},
    {"roi_pool_backward", build_roi_pool_backward},
    {"ps_roi_align", build_ps_roi_align},
    {"ps_roi_align_backward", build_ps_roi_align_backward},
    {"multi_scale_roi_align", build_msra},
    {"multi_scale_roi_align_backward", build_msra_backward},
    {"ps_roi_pool", build_ps_roi_pool},
    {"ps_roi_pool_backward", build_ps_roi_pool_backward},
    {"deform_conv2d", build_dcn},
    {"deform_conv2d_backward", build_dcn_backward},
    {"box_iou_backward", build_iou_backward},
    {"generalized_box_iou_backward", build_iou_backward},
    {"distance_box_iou_backward", build_iou_eps_backward},
    {"complete_box_iou_backward", build_iou_eps_backward},
};

static build_fn find_builder(const char *name) {
  for (size_t i = 0; i < sizeof builders / sizeof builders[0]; i++)
    if (strcmp(builders[i].name, name) == 0) return builders[i].build;
  return NULL;
}

/* ------------------------------------------------------------ running */

typedef struct result {
  vo_status status;
  char error[1024];
  int num_outputs;
  vt_tensor *out[VO_MAX_LIST]; /* host copies of the outputs */
} result;

static void result_free(result *r) {
  for (int k = 0; k < r->num_outputs; k++) vt_tensor_free(r->out[k]);
  r->num_outputs = 0;
}

/* Waits for the GPU; a kernel fault is sticky and ends the program. */
static void sync_or_die(const char *label) {
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    fprintf(stderr, "%s: CUDA error after the call: %s (%s)\n", label, cudaGetErrorName(e),
            cudaGetErrorString(e));
    vt_failed++;
    exit(vt_finish("test_cuda_ops"));
  }
}

/* Runs the case with its tensors on in_dev (tensor `on_cpu` on the host
 * instead, when >= 0) and its outputs (shaped as c->descs, filled with
 * `sentinel`) on out_dev. Outputs come back to the host in r. */
static void run_case(const tcase *c, const vo_context *ctx, DLDevice in_dev, int on_cpu,
                     DLDevice out_dev, double sentinel, result *r) {
  vt_tensor *copies[MAX_TENSORS] = {NULL};
  const DLTensor *place[MAX_TENSORS];
  for (int t = 0; t < c->num_tensors; t++) {
    if (t != on_cpu && in_dev.device_type != kDLCPU)
      copies[t] = vt_to_device(c->tensors[t], in_dev);
    place[t] = copies[t] ? &copies[t]->dl : &c->tensors[t]->dl;
  }
  vo_value args[MAX_ARGS];
  const DLTensor *list[VO_MAX_LIST];
  for (int i = 0; i < c->num_args; i++) {
    args[i] = c->args[i];
    if (c->tensor_of[i] >= 0) args[i] = vo_tensor_value(place[c->tensor_of[i]]);
  }
  if (c->list_arg >= 0) {
    for (int l = 0; l < c->list_count; l++) list[l] = place[c->list_of[l]];
    args[c->list_arg] = vo_tensor_list_value(list, c->list_count);
  }
  DLTensor *outs[VO_MAX_LIST];
  vt_tensor *dev_out[VO_MAX_LIST] = {NULL};
  for (int k = 0; k < c->num_outputs; k++) {
    const vo_tensor_desc *d = &c->descs[k];
    vt_tensor *h = vt_tensor_new(d->dtype, d->ndim, d->shape, NULL);
    vt_fill(&h->dl, sentinel);
    if (out_dev.device_type != kDLCPU) {
      dev_out[k] = vt_to_device(h, out_dev);
      vt_tensor_free(h);
    } else {
      dev_out[k] = h;
    }
    outs[k] = &dev_out[k]->dl;
  }
  r->status = vo_call(ctx, c->op, args, c->num_args, outs, c->num_outputs);
  snprintf(r->error, sizeof r->error, "%s", r->status == VO_OK ? "" : vo_last_error());
  if (in_dev.device_type != kDLCPU || out_dev.device_type != kDLCPU) sync_or_die(c->label);
  r->num_outputs = c->num_outputs;
  for (int k = 0; k < c->num_outputs; k++) {
    r->out[k] = vt_to_host(dev_out[k]);
    vt_tensor_free(dev_out[k]);
  }
  for (int t = 0; t < c->num_tensors; t++) vt_tensor_free(copies[t]);
}

/* ------------------------------------------------------------ comparing */

static int is_float(DLDataType dt) { return dt.code == kDLFloat || dt.code == kDLBfloat; }

/* Relative tolerance (to max(1, |cpu|)) per output dtype. */
static double tolerance(DLDataType dt) {
  if (dt.code == kDLBfloat) return 1e-2;
  if (dt.bits == 16) return 5e-3;
  if (dt.bits == 32) return 1e-5;
  return 1e-9;
}

/* Compares output k of got with want; returns the worst relative error seen
 * (0 for identical integers), or INFINITY after a reported mismatch. */
static double compare_output(const char *label, const char *what, int k, const vt_tensor *want,
                             const vt_tensor *got) {
  const DLDataType dt = want->dl.dtype;
  const int64_t n = vt_numel(&want->dl);
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    const double w = vt_get(&want->dl, i), g = vt_get(&got->dl, i);
    if (w == g || (isnan(w) && isnan(g))) continue;
    double err = fabs(g - w) / fmax(1, fabs(w));
    int ok = is_float(dt) && err <= tolerance(dt);
    if (!ok && vt_dtype_is_half(dt) && vt_half_ulp_distance(dt, w, g) <= 2) ok = 1;
    if (!ok) {
      CHECK_MSG(0, "%s: %s output %d element %lld: cuda %.9g, cpu %.9g (relative error %.3g)",
                label, what, k, (long long)i, g, w, err);
      return INFINITY;
    }
    if (err > worst) worst = err;
  }
  vt_pass();
  return worst;
}

static double compare_results(const char *label, const char *what, const result *want,
                              const result *got) {
  double worst = 0;
  for (int k = 0; k < want->num_outputs; k++)
    worst = fmax(worst, compare_output(label, what, k, want->out[k], got->out[k]));
  return worst;
}

static int bit_identical(const result *a, const result *b) {
  for (int k = 0; k < a->num_outputs; k++)
    if (a->out[k]->mem_bytes != b->out[k]->mem_bytes ||
        memcmp(a->out[k]->mem, b->out[k]->mem, a->out[k]->mem_bytes) != 0)
      return 0;
  return 1;
}

static int all_equal(const result *r, double value) {
  for (int k = 0; k < r->num_outputs; k++)
    for (int64_t i = 0; i < vt_numel(&r->out[k]->dl); i++)
      if (vt_get(&r->out[k]->dl, i) != value) return 0;
  return 1;
}

static int ends_with(const char *s, const char *suffix) {
  const size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* ------------------------------------------------------------ bad inputs */

/* The case on the CPU and on CUDA must fail alike; CUDA outputs stay untouched. */
static void expect_same_failure(const tcase *c, const char *what) {
  result cpu, gpu;
  run_case(c, NULL, cpu_dev, -1, cpu_dev, -77, &cpu);
  run_case(c, NULL, cuda_dev, -1, cuda_dev, 55, &gpu);
  CHECK_MSG(cpu.status != VO_OK, "%s (%s): the CPU accepted it", c->label, what);
  CHECK_MSG(gpu.status == cpu.status && strcmp(gpu.error, cpu.error) == 0,
            "%s (%s): cuda gives %d \"%s\", cpu gives %d \"%s\"", c->label, what, (int)gpu.status,
            gpu.error, (int)cpu.status, cpu.error);
  CHECK_MSG(gpu.status == VO_OK || all_equal(&gpu, 55), "%s (%s): a failed CUDA call wrote output",
            c->label, what);
  result_free(&cpu);
  result_free(&gpu);
}

static void bad_inputs(tcase *c) {
  if (c->rois_tensor >= 0) {
    DLTensor *r = &c->tensors[c->rois_tensor]->dl;
    const int64_t k = r->shape[0];
    const struct {
      int64_t row, col;
      double value;
      const char *what;
    } bad[] = {
        {k - 1, 0, 7, "batch index out of range"},   {0, 0, 0.5, "fractional batch index"},
        {k / 2, 0, -1, "negative batch index"},      {0, 2, NAN, "NaN coordinate"},
        {k - 1, 3, INFINITY, "infinite coordinate"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      const int64_t at = bad[i].row * 5 + bad[i].col;
      const double saved = vt_get(r, at);
      vt_set(r, at, bad[i].value);
      expect_same_failure(c, bad[i].what);
      vt_set(r, at, saved);
    }
    if (k >= 6) { /* two bad rows: both backends must name the first */
      const double s3 = vt_get(r, 3 * 5 + 0), s5 = vt_get(r, 5 * 5 + 2);
      vt_set(r, 5 * 5 + 2, NAN);
      vt_set(r, 3 * 5 + 0, 9);
      expect_same_failure(c, "two bad RoIs");
      vt_set(r, 3 * 5 + 0, s3);
      vt_set(r, 5 * 5 + 2, s5);
    }
  }
  if (strcmp(c->op->name, "roi_pool_backward") == 0) { /* argmax out of range */
    DLTensor *a = &c->tensors[c->tensor_of[2]]->dl;
    if (vt_numel(a) > 0) {
      const int64_t at = vt_numel(a) - 1;
      const double saved = vt_get(a, at);
      vt_set(a, at, (double)(c->args[8].u.i * c->args[9].u.i)); /* height * width */
      expect_same_failure(c, "argmax out of range");
      vt_set(a, at, saved);
    }
  }
  if (strncmp(c->op->name, "ps_roi_", 7) == 0 && strstr(c->op->name, "_backward")) {
    DLTensor *m = &c->tensors[c->tensor_of[2]]->dl; /* channel_mapping */
    if (vt_numel(m) > 0) {
      const int64_t at = vt_numel(m) / 2;
      const double saved = vt_get(m, at);
      vt_set(m, at, saved + 1);
      expect_same_failure(c, "channel_mapping entry not what the forward writes");
      vt_set(m, at, saved);
    }
  }
  /* Adaptive sampling of a RoI far larger than its map (checked on the
   * device too since issue 13): sampling_ratio set to 0 for the call. */
  static const struct {
    const char *op;
    int sampling_arg;
  } adaptive[] = {{"roi_align", 5},    {"roi_align_backward", 9},
                  {"ps_roi_align", 5}, {"ps_roi_align_backward", 6},
                  {"multi_scale_roi_align", 5}, {"multi_scale_roi_align_backward", 6}};
  for (size_t i = 0; i < sizeof adaptive / sizeof adaptive[0]; i++) {
    if (strcmp(c->op->name, adaptive[i].op) != 0 || c->rois_tensor < 0) continue;
    DLTensor *r = &c->tensors[c->rois_tensor]->dl;
    const vo_value saved_arg = c->args[adaptive[i].sampling_arg];
    const double saved_x2 = vt_get(r, 3);
    c->args[adaptive[i].sampling_arg] = vo_int_value(0);
    vt_set(r, 3, 60000); /* rois[0, 3]: x2, still finite in float16 */
    expect_same_failure(c, "adaptive sampling grid beyond the map's bound");
    vt_set(r, 3, saved_x2);
    c->args[adaptive[i].sampling_arg] = saved_arg;
  }
  if (c->shape_tensor >= 0) { /* last dimension one too long */
    vt_tensor *orig = c->tensors[c->shape_tensor];
    int64_t shape[VO_MAX_DIMS];
    const int nd = orig->dl.ndim;
    memcpy(shape, orig->dl.shape, sizeof(int64_t) * (size_t)nd);
    shape[nd - 1] += 1;
    vt_tensor *wrong = vt_tensor_new(orig->dl.dtype, nd, shape, NULL);
    c->tensors[c->shape_tensor] = wrong;
    for (int i = 0; i < c->num_args; i++)
      if (c->tensor_of[i] == c->shape_tensor) c->args[i] = vo_tensor_value(&wrong->dl);
    expect_same_failure(c, "wrong shape");
    c->tensors[c->shape_tensor] = orig;
    for (int i = 0; i < c->num_args; i++)
      if (c->tensor_of[i] == c->shape_tensor) c->args[i] = vo_tensor_value(&orig->dl);
    vt_tensor_free(wrong);
  }
}

/* One input on the host, or the outputs on the host: a device mismatch. */
static void mixed_devices(const tcase *c) {
  result r;
  for (int t = 0; t < c->num_tensors; t++) {
    run_case(c, NULL, cuda_dev, t, cuda_dev, 55, &r);
    CHECK_MSG(r.status == VO_ERROR_DEVICE_MISMATCH,
              "%s with tensor %d on the CPU and the rest on CUDA: status %d \"%s\"", c->label, t,
              (int)r.status, r.error);
    result_free(&r);
  }
  run_case(c, NULL, cuda_dev, -1, cpu_dev, 55, &r);
  CHECK_MSG(r.status == VO_ERROR_DEVICE_MISMATCH,
            "%s with inputs on CUDA and outputs on the CPU: status %d \"%s\"", c->label,
            (int)r.status, r.error);
  result_free(&r);
  run_case(c, NULL, cpu_dev, -1, cuda_dev, 55, &r);
  CHECK_MSG(r.status == VO_ERROR_DEVICE_MISMATCH,
            "%s with inputs on the CPU and outputs on CUDA: status %d \"%s\"", c->label,
            (int)r.status, r.error);
  result_free(&r);
}

/* ------------------------------------------------------------ per op */

/* Every dtype x seed: CUDA (fast, and for backward ops deterministic x3,
 * bit-identical) against the CPU; bad inputs and mixed devices once. */
static void test_op(const vo_op_info *op, const vo_context *det) {
  const build_fn build = find_builder(op->name);
  if (!CHECK_MSG(build != NULL, "no test case for op %s: add a builder to tests/test_cuda_ops.c",
                 op->name))
    return;
  const int backward = ends_with(op->name, "_backward");
  for (int d = 0; d < NUM_DTYPES; d++) {
    const DLDataType dt = *dtypes[d];
    double worst = 0;
    int cases = 0;
    for (int seed = 0; seed < NUM_SEEDS; seed++) {
      tcase c;
      vt_rng rng;
      case_init(&c, op, dt, seed);
      vt_rng_seed(&rng, 7919u * (uint64_t)(op->index + 1) + 101u * (uint64_t)d + (uint64_t)seed);
      c.strided = seed == 2;
      build(&c, dt, seed, &rng);
      const vo_status st = vo_infer(NULL, op, c.args, c.num_args, c.descs, c.num_outputs);
      if (st == VO_ERROR_UNSUPPORTED_DTYPE && seed == 0) {
        printf("  %-32s %-9s not supported by the CPU backend: %s\n", op->name, vt_dtype_name(dt),
               vo_last_error());
        case_free(&c);
        break;
      }
      if (!CHECK_MSG(st == VO_OK, "%s: vo_infer on the host: %s", c.label, vo_last_error())) {
        case_free(&c);
        continue;
      }
      result cpu, gpu;
      run_case(&c, NULL, cpu_dev, -1, cpu_dev, -77, &cpu);
      run_case(&c, NULL, cuda_dev, -1, cuda_dev, 55, &gpu);
      if (gpu.status == VO_ERROR_BACKEND_UNAVAILABLE && strstr(gpu.error, "not implemented")) {
        CHECK_MSG(0, "no CUDA kernel for %s (%s)", op->name, gpu.error);
        result_free(&cpu);
        result_free(&gpu);
        case_free(&c);
        return;
      }
      if (CHECK_MSG(cpu.status == VO_OK, "%s on the CPU: %s", c.label, cpu.error) &&
          CHECK_MSG(gpu.status == VO_OK, "%s on CUDA: %s", c.label, gpu.error)) {
        worst = fmax(worst, compare_results(c.label, "fast", &cpu, &gpu));
        cases++;
      }
      if (backward && cpu.status == VO_OK) {
        result det_r[3];
        for (int i = 0; i < 3; i++) run_case(&c, det, cuda_dev, -1, cuda_dev, 55, &det_r[i]);
        if (CHECK_MSG(det_r[0].status == VO_OK, "%s deterministic on CUDA: %s", c.label,
                      det_r[0].error)) {
          worst = fmax(worst, compare_results(c.label, "deterministic", &cpu, &det_r[0]));
          for (int i = 1; i < 3; i++)
            CHECK_MSG(det_r[i].status == VO_OK && bit_identical(&det_r[0], &det_r[i]),
                      "%s: deterministic CUDA run %d differs from run 0", c.label, i);
        }
        for (int i = 0; i < 3; i++) result_free(&det_r[i]);
      }
      result_free(&cpu);
      result_free(&gpu);
      if (d == 0 && seed == 0) {
        bad_inputs(&c);
        if (!harness_check) mixed_devices(&c);
      }
      case_free(&c);
    }
    if (cases > 0)
      printf("  %-32s %-9s %d cases, worst relative error %.3g\n", op->name, vt_dtype_name(dt),
             cases, worst);
  }
}

/* ------------------------------------------------------------ > 2^31 */

enum { BIG_C = 64, BIG_H = 64, BIG_W = 64, BIG_P = 32 };
static const int64_t big_k = 32769; /* 32769 * 64 * 32 * 32 > 2^31 */

static DLTensor dl_at(void *data, DLDevice dev, DLDataType dt, int ndim, int64_t *shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device = dev;
  t.ndim = ndim;
  t.dtype = dt;
  t.shape = shape;
  return t;
}

/* roi_align (float16) into one output of more than 2^31 elements equals two
 * half-size calls, and its last RoIs equal the CPU's. */
static void large_output(void) {
  const int64_t row = (int64_t)BIG_C * BIG_P * BIG_P;
  const size_t es = 2, out_bytes = (size_t)(big_k * row) * es;
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess || free_b < 2 * out_bytes + (1ull << 30)) {
    printf("SKIP >2^31-element output: %.1f GiB free on the GPU, %.1f GiB needed\n",
           (double)free_b / (1 << 30), (double)(2 * out_bytes + (1ull << 30)) / (1 << 30));
    return;
  }
  const double t0 = now_s();
  const size_t in_n = (size_t)BIG_C * BIG_H * BIG_W;
  uint16_t *h_in = malloc(in_n * es), *h_rois = malloc((size_t)big_k * 5 * es);
  const size_t chunk = (size_t)64 << 20;
  unsigned char *ha = malloc(chunk), *hb = malloc(chunk);
  if (!h_in || !h_rois || !ha || !hb) {
    printf("SKIP >2^31-element output: no host memory\n");
    free(h_in);
    free(h_rois);
    free(ha);
    free(hb);
    return;
  }
  vt_rng rng;
  vt_rng_seed(&rng, 2031);
  for (size_t i = 0; i < in_n; i++) h_in[i] = vo_f32_to_f16((float)vt_rng_uniform(&rng, -1, 1));
  for (int64_t k = 0; k < big_k; k++) {
    const double x = vt_rng_uniform(&rng, -4, 60), y = vt_rng_uniform(&rng, -4, 60);
    const double r[5] = {0, x, y, x + vt_rng_uniform(&rng, 1, 30), y + vt_rng_uniform(&rng, 1, 30)};
    for (int j = 0; j < 5; j++) h_rois[k * 5 + j] = vo_f32_to_f16((float)r[j]);
  }
  void *d_in = NULL, *d_rois = NULL, *d_big = NULL, *d_halves = NULL;
  if (cudaMalloc(&d_in, in_n * es) != cudaSuccess ||
      cudaMalloc(&d_rois, (size_t)big_k * 5 * es) != cudaSuccess ||
      cudaMalloc(&d_big, out_bytes) != cudaSuccess ||
      cudaMalloc(&d_halves, out_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    printf("SKIP >2^31-element output: cudaMalloc failed\n");
    goto done;
  }
  cudaMemcpy(d_in, h_in, in_n * es, cudaMemcpyHostToDevice);
  cudaMemcpy(d_rois, h_rois, (size_t)big_k * 5 * es, cudaMemcpyHostToDevice);
  cudaMemset(d_big, 0, out_bytes);
  cudaMemset(d_halves, 0xff, out_bytes);
  {
    int64_t in_shape[4] = {1, BIG_C, BIG_H, BIG_W}, rois_shape[2] = {big_k, 5};
    int64_t out_shape[4] = {big_k, BIG_C, BIG_P, BIG_P};
    DLTensor in = dl_at(d_in, cuda_dev, vt_f16, 4, in_shape);
    DLTensor rois = dl_at(d_rois, cuda_dev, vt_f16, 2, rois_shape);
    DLTensor out = dl_at(d_big, cuda_dev, vt_f16, 4, out_shape);
    if (!CHECK_STATUS(vo_roi_align(NULL, &in, &rois, 1.0, BIG_P, BIG_P, 1, 1, &out), VO_OK))
      goto done;
    const int64_t half_k = big_k / 2;
    for (int part = 0; part < 2; part++) {
      const int64_t k0 = part ? half_k : 0, k1 = part ? big_k : half_k;
      int64_t prs[2] = {k1 - k0, 5}, pos[4] = {k1 - k0, BIG_C, BIG_P, BIG_P};
      DLTensor pr = dl_at((char *)d_rois + (size_t)(k0 * 5) * es, cuda_dev, vt_f16, 2, prs);
      DLTensor po = dl_at((char *)d_halves + (size_t)(k0 * row) * es, cuda_dev, vt_f16, 4, pos);
      CHECK_STATUS(vo_roi_align(NULL, &in, &pr, 1.0, BIG_P, BIG_P, 1, 1, &po), VO_OK);
    }
    sync_or_die("roi_align >2^31 elements");
    size_t bad = (size_t)-1;
    for (size_t off = 0; off < out_bytes && bad == (size_t)-1; off += chunk) {
      const size_t n = out_bytes - off < chunk ? out_bytes - off : chunk;
      cudaMemcpy(ha, (char *)d_big + off, n, cudaMemcpyDeviceToHost);
      cudaMemcpy(hb, (char *)d_halves + off, n, cudaMemcpyDeviceToHost);
      if (memcmp(ha, hb, n) != 0) bad = off;
    }
    CHECK_MSG(bad == (size_t)-1,
              "roi_align on CUDA: the >2^31-element output differs from two half-size calls "
              "near byte %zu (RoI %lld)",
              bad, (long long)(bad / ((size_t)row * es)));
    /* The last RoIs (offsets beyond 2^31) against the CPU. */
    enum { LAST = 8 };
    int64_t lrs[2] = {LAST, 5}, los[4] = {LAST, BIG_C, BIG_P, BIG_P};
    const size_t last_n = (size_t)(LAST * row);
    uint16_t *cpu_out = malloc(last_n * es), *gpu_out = malloc(last_n * es);
    if (cpu_out && gpu_out) {
      DLTensor hin = dl_at(h_in, cpu_dev, vt_f16, 4, in_shape);
      DLTensor hr = dl_at(h_rois + (big_k - LAST) * 5, cpu_dev, vt_f16, 2, lrs);
      DLTensor ho = dl_at(cpu_out, cpu_dev, vt_f16, 4, los);
      CHECK_STATUS(vo_roi_align(NULL, &hin, &hr, 1.0, BIG_P, BIG_P, 1, 1, &ho), VO_OK);
      cudaMemcpy(gpu_out, (char *)d_big + (size_t)((big_k - LAST) * row) * es, last_n * es,
                 cudaMemcpyDeviceToHost);
      int64_t mismatch = -1, nonzero = 0;
      for (size_t i = 0; i < last_n && mismatch < 0; i++) {
        const double w = vo_f16_to_f32(cpu_out[i]), g = vo_f16_to_f32(gpu_out[i]);
        nonzero += gpu_out[i] != 0;
        if (!(fabs(g - w) <= 5e-3 * fmax(1, fabs(w))) && vt_half_ulp_distance(vt_f16, w, g) > 2)
          mismatch = (int64_t)i;
      }
      CHECK_MSG(mismatch < 0,
                "roi_align on CUDA: the last RoIs of the >2^31 output differ from "
                "the CPU at element %lld",
                (long long)mismatch);
      CHECK_MSG(nonzero > 0, "roi_align on CUDA: the last RoIs of the >2^31 output are all zero");
    }
    free(cpu_out);
    free(gpu_out);
  }
  printf("  >2^31-element roi_align output: %.1f s\n", now_s() - t0);
done:
  cudaFree(d_in);
  cudaFree(d_rois);
  cudaFree(d_big);
  cudaFree(d_halves);
  free(h_in);
  free(h_rois);
  free(ha);
  free(hb);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *on_cpu = getenv("VO_TEST_CUDA_OPS_ON_CPU");
  if (on_cpu && strcmp(on_cpu, "1") == 0) {
    printf("VO_TEST_CUDA_OPS_ON_CPU=1: the CPU stands in for CUDA (checks this harness only)\n");
    cuda_dev = cpu_dev;
    harness_check = 1;
    vo_context *det = NULL;
    CHECK_STATUS(vo_context_create(&det), VO_OK);
    for (int i = 0; i < vo_op_count(); i++) test_op(vo_op_get(i), det);
    vo_context_destroy(det);
    return vt_finish("test_cuda_ops");
  }
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count < 1) {
    printf("no CUDA device: %s\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount() found 0 devices");
    return 77;
  }
  (void)cudaGetLastError();
  vo_backend_info cuda;
  memset(&cuda, 0, sizeof cuda);
  for (int i = 0; i < vo_backend_count(); i++) {
    vo_backend_info info;
    if (vo_backend_status(i, &info) == VO_OK && info.device_type == kDLCUDA) cuda = info;
  }
  if (!CHECK_MSG(cuda.available,
                 "the CUDA runtime sees %d device(s) but the cuda backend is "
                 "unavailable: %s",
                 count, cuda.detail ? cuda.detail : "(not listed)"))
    return vt_finish("test_cuda_ops");
  printf("cuda backend: %s\n", cuda.detail);
  vo_context *det = NULL;
  CHECK_STATUS(vo_context_create(&det), VO_OK);
  CHECK_STATUS(vo_context_set_deterministic(det, 1), VO_OK);
  const double t0 = now_s();
  for (int i = 0; i < vo_op_count(); i++) {
    const vo_op_info *op = vo_op_get(i);
    if (CHECK_MSG(op != NULL, "vo_op_get(%d) is NULL", i)) test_op(op, det);
  }
  printf("  ops: %.1f s\n", now_s() - t0);
  /* Under compute-sanitizer (gpu-check) the >2^31-element case would take
   * most of the time budget and checks nothing the small cases do not. */
  const char *skip_large = getenv("VO_TEST_CUDA_OPS_SKIP_LARGE");
  if (skip_large && strcmp(skip_large, "1") == 0)
    printf("SKIP >2^31-element output: VO_TEST_CUDA_OPS_SKIP_LARGE=1\n");
  else
    large_output();
  vo_context_destroy(det);
  return vt_finish("test_cuda_ops");
}

#endif /* VISIONOPS_TEST_CUDA */
