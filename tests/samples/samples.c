/*
 * The per-op sample inputs of samples.h: generators (boxes, RoIs, feature
 * maps), the problem sizes of each variant, one builder per op of
 * src/ops/ops.def (the table below is generated from it) and the tolerances.
 */
#include "samples.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const DLDataType *const vs_dtypes[VS_NUM_DTYPES] = {&vt_f32, &vt_f64, &vt_f16, &vt_bf16};

static void die(const char *what, const char *detail) {
  fprintf(stderr, "samples: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(2);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory", NULL);
  return p;
}

static int64_t shape_numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  return n;
}

/* ------------------------------------------------------------ the sample */

/* A host tensor owned by the sample, laid out as the sample says; its index. */
static int add_values(vs_sample *s, DLDataType dt, int ndim, const int64_t *shape,
                      const double *values) {
  if (s->num_tensors == VS_MAX_TENSORS) die("too many tensors in one sample", s->label);
  vt_tensor *t;
  if (s->layout == VS_STRIDED && ndim > 0) {
    int64_t strides[VO_MAX_DIMS], step = 2;
    for (int d = ndim - 1; d >= 0; d--) {
      strides[d] = step;
      step *= shape[d] > 0 ? shape[d] : 1;
    }
    t = vt_tensor_strided(dt, ndim, shape, strides, vt_dtype_bytes(dt), values);
  } else if (s->layout == VS_CHANNELS_LAST && ndim == 4) {
    const int64_t c = shape[1] > 0 ? shape[1] : 1, w = shape[3] > 0 ? shape[3] : 1;
    const int64_t h = shape[2] > 0 ? shape[2] : 1;
    const int64_t strides[4] = {h * w * c, 1, w * c, c};
    t = vt_tensor_strided(dt, ndim, shape, strides, 0, values);
  } else if (s->layout == VS_FLIPPED && ndim > 0) {
    int64_t strides[VO_MAX_DIMS], step = 1;
    for (int d = ndim - 1; d >= 0; d--) {
      strides[d] = -step;
      step *= shape[d] > 0 ? shape[d] : 1;
    }
    t = vt_tensor_strided(dt, ndim, shape, strides, 0, values);
  } else {
    t = vt_tensor_new(dt, ndim, shape, values);
  }
  s->tensors[s->num_tensors] = t;
  return s->num_tensors++;
}

static int add_uniform(vs_sample *s, DLDataType dt, int ndim, const int64_t *shape, vt_rng *rng,
                       double lo, double hi) {
  const int64_t n = shape_numel(ndim, shape);
  double *v = xmalloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) v[i] = vt_rng_uniform(rng, lo, hi);
  const int t = add_values(s, dt, ndim, shape, v);
  free(v);
  return t;
}

static void push_arg(vs_sample *s, vo_value v, int tensor) {
  if (s->num_args == VS_MAX_ARGS) die("too many arguments in one sample", s->label);
  s->tensor_of[s->num_args] = tensor;
  s->args[s->num_args++] = v;
}
static void arg_tensor(vs_sample *s, int t) { push_arg(s, vo_tensor_value(&s->tensors[t]->dl), t); }
static void arg_none(vs_sample *s) { push_arg(s, vo_tensor_value(NULL), -1); }
static void arg_float(vs_sample *s, double f) { push_arg(s, vo_float_value(f), -1); }
static void arg_int(vs_sample *s, int64_t i) { push_arg(s, vo_int_value(i), -1); }
static void arg_bool(vs_sample *s, int b) { push_arg(s, vo_bool_value(b), -1); }
static void arg_floats(vs_sample *s, const double *v, int n) {
  memcpy(s->floats, v, sizeof(double) * (size_t)n);
  push_arg(s, vo_float_list_value(s->floats, n), -1);
}
static void arg_list(vs_sample *s, const int *ts, int n) {
  s->list_arg = s->num_args;
  s->list_count = n;
  memcpy(s->list_of, ts, sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) s->host_list[i] = &s->tensors[ts[i]]->dl;
  push_arg(s, vo_tensor_list_value(s->host_list, n), -1);
}

/* ------------------------------------------------------------ generators */

static double normal(vt_rng *rng) {
  const double u1 = 1.0 - vt_rng_uniform(rng, 0, 1), u2 = vt_rng_uniform(rng, 0, 1);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Boxes with duplicates (IoU exactly 1), near duplicates and tied scores. */
static void gen_boxes_mixed(vt_rng *rng, int64_t n, double *b) {
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

/* Zero-width, zero-height, point, reversed, duplicated, nested and far-away
 * boxes (coordinates within float16's range). */
static void gen_boxes_degenerate(vt_rng *rng, int64_t n, double *b) {
  for (int64_t i = 0; i < n; i++) {
    double *r = b + 4 * i;
    const double x = (double)vt_rng_int(rng, 64) - 16, y = (double)vt_rng_int(rng, 64) - 16;
    const double w = (double)(1 + vt_rng_int(rng, 20)), h = (double)(1 + vt_rng_int(rng, 20));
    r[0] = x, r[1] = y, r[2] = x + w, r[3] = y + h;
    switch (i % 8) {
      case 0: r[2] = r[0]; break;                /* zero width */
      case 1: r[3] = r[1]; break;                /* zero height */
      case 2: r[2] = r[0], r[3] = r[1]; break;   /* a point */
      case 3: r[2] = x - w, r[3] = y - h; break; /* reversed */
      case 4:
        if (i > 0) memcpy(r, b + 4 * (i - 1), sizeof(double) * 4); /* duplicate */
        break;
      case 5: /* inside the previous box */
        if (i > 0) {
          const double *p = b + 4 * (i - 1);
          r[0] = p[0] + 0.25 * (p[2] - p[0]), r[1] = p[1] + 0.25 * (p[3] - p[1]);
          r[2] = p[0] + 0.75 * (p[2] - p[0]), r[3] = p[1] + 0.75 * (p[3] - p[1]);
        }
        break;
      case 6: r[0] += 20000, r[2] += 20000, r[1] -= 20000, r[3] -= 20000; break; /* far away */
      default: break;
    }
  }
}

/* Tiny boxes inside [0, 24). */
static void gen_boxes_small(vt_rng *rng, int64_t n, double *b) {
  for (int64_t i = 0; i < n; i++) {
    const double x = vt_rng_uniform(rng, 0, 12), y = vt_rng_uniform(rng, 0, 12);
    b[4 * i] = x, b[4 * i + 1] = y;
    b[4 * i + 2] = x + 1 + vt_rng_uniform(rng, 0, 10);
    b[4 * i + 3] = y + 1 + vt_rng_uniform(rng, 0, 10);
  }
}

/* Clusters of jittered boxes in an 800x800 extent, as a detector emits them. */
static void gen_boxes_detections(vt_rng *rng, int64_t n, double *b) {
  const int64_t m = n / 20 + 1;
  double *centre = xmalloc(sizeof(double) * (size_t)(4 * m));
  for (int64_t j = 0; j < m; j++) {
    centre[4 * j] = vt_rng_uniform(rng, 0, 800), centre[4 * j + 1] = vt_rng_uniform(rng, 0, 800);
    centre[4 * j + 2] = vt_rng_uniform(rng, 10, 200),
                   centre[4 * j + 3] = vt_rng_uniform(rng, 10, 200);
  }
  for (int64_t i = 0; i < n; i++) {
    const double *c = centre + 4 * vt_rng_int(rng, m);
    const double cx = c[0] + 8 * normal(rng), cy = c[1] + 8 * normal(rng);
    const double w = c[2] * vt_rng_uniform(rng, 0.8, 1.2), h = c[3] * vt_rng_uniform(rng, 0.8, 1.2);
    b[4 * i] = cx - w / 2, b[4 * i + 1] = cy - h / 2, b[4 * i + 2] = cx + w / 2,
          b[4 * i + 3] = cy + h / 2;
  }
  free(centre);
}

typedef enum box_kind { BOXES_MIXED, BOXES_DEGENERATE, BOXES_SMALL, BOXES_DETECTIONS } box_kind;

static void gen_boxes(box_kind kind, vt_rng *rng, int64_t n, double *b) {
  switch (kind) {
    case BOXES_MIXED: gen_boxes_mixed(rng, n, b); break;
    case BOXES_DEGENERATE: gen_boxes_degenerate(rng, n, b); break;
    case BOXES_SMALL: gen_boxes_small(rng, n, b); break;
    case BOXES_DETECTIONS: gen_boxes_detections(rng, n, b); break;
  }
}

typedef enum roi_kind {
  ROIS_MIXED,       /* inside, partly outside, wholly outside, tiny, huge, reversed */
  ROIS_DEGENERATE,  /* zero-size, points, reversed, on the border, outside */
  ROIS_SMALL,       /* inside the map */
  ROIS_MODEL,       /* log-uniform sizes 8..400 pixels, some past the image's border */
  ROIS_MODEL_INSIDE /* the same inside 70% of the image (clear of the last row/col) */
} roi_kind;

/* The RoI problem of a variant and seed. */
typedef struct roi_problem {
  int64_t n, c, h, w, k, ph, pw, sr;
  int aligned;
  double scale;
  roi_kind rois;
} roi_problem;

static void gen_rois(const roi_problem *p, vt_rng *rng, double *r) {
  const double mh = (double)p->h / p->scale, mw = (double)p->w / p->scale;
  for (int64_t i = 0; i < p->k; i++) {
    double *q = r + 5 * i;
    q[0] = (double)vt_rng_int(rng, p->n);
    if (p->rois == ROIS_MIXED) {
      double cx = vt_rng_uniform(rng, 0, mw), cy = vt_rng_uniform(rng, 0, mh);
      double hw = vt_rng_uniform(rng, 0.5, mw / 2), hh = vt_rng_uniform(rng, 0.5, mh / 2);
      switch (vt_rng_int(rng, 6)) {
        case 1: cx = vt_rng_uniform(rng, -mw / 4, mw * 1.25); break;
        case 2: cx = vt_rng_int(rng, 2) ? -mw : 2.5 * mw; break;
        case 3:
          hw = vt_rng_uniform(rng, 0.01, 0.4) / p->scale;
          hh = vt_rng_uniform(rng, 0.01, 0.4) / p->scale;
          break;
        case 4:
          hw = vt_rng_uniform(rng, 1.5, 3) * mw;
          hh = vt_rng_uniform(rng, 1.5, 3) * mh;
          break;
        case 5: hw = -hw / 3; break;
        default: break;
      }
      q[1] = cx - hw, q[2] = cy - hh, q[3] = cx + hw, q[4] = cy + hh;
    } else if (p->rois == ROIS_DEGENERATE) {
      const double x = floor(vt_rng_uniform(rng, 0, mw)), y = floor(vt_rng_uniform(rng, 0, mh));
      q[1] = x, q[2] = y, q[3] = x + 2 / p->scale, q[4] = y + 2 / p->scale;
      switch (i % 7) {
        case 0: q[3] = q[1]; break;                                        /* zero width */
        case 1: q[1] = q[3] = x, q[2] = q[4] = y; break;                   /* a point */
        case 2: q[3] = x - 3, q[4] = y - 3; break;                         /* reversed */
        case 3: q[1] = mw - 1, q[3] = mw, q[2] = mh - 1, q[4] = mh; break; /* last pixel */
        case 4: q[1] = -mw, q[3] = -1, q[2] = -mh, q[4] = -1; break;       /* wholly outside */
        case 5: q[1] = 0, q[2] = 0, q[3] = mw, q[4] = mh; break;           /* the whole map */
        default: break;                                                    /* 2x2 pixels */
      }
    } else if (p->rois == ROIS_SMALL) {
      const double x = vt_rng_uniform(rng, 0, mw / 2), y = vt_rng_uniform(rng, 0, mh / 2);
      q[0] = (double)(i % p->n);
      q[1] = x, q[2] = y;
      q[3] = x + 1 + vt_rng_uniform(rng, 0, mw / 2 - 1);
      q[4] = y + 1 + vt_rng_uniform(rng, 0, mh / 2 - 1);
    } else {
      const double inside = p->rois == ROIS_MODEL_INSIDE ? 0.7 : 1.0;
      const double lo = inside >= 1 ? -0.05 : 0.0;
      const double x1 = (lo + vt_rng_uniform(rng, 0, 1) * (inside - lo)) * mw;
      const double y1 = (lo + vt_rng_uniform(rng, 0, 1) * (inside - lo)) * mh;
      const double w = exp(vt_rng_uniform(rng, log(8.0), log(400.0)));
      const double h = exp(vt_rng_uniform(rng, log(8.0), log(400.0)));
      q[1] = x1, q[2] = y1, q[3] = x1 + w, q[4] = y1 + h;
      if (inside < 1) q[3] = fmin(q[3], mw * inside), q[4] = fmin(q[4], mh * inside);
    }
  }
  if (p->rois == ROIS_MODEL || p->rois == ROIS_MODEL_INSIDE) { /* sorted by image */
    int64_t at = 0;
    for (int64_t b = 0; b < p->n; b++)
      for (int64_t i = at; i < p->k; i++)
        if (r[5 * i] == (double)b) {
          double t[5];
          memcpy(t, r + 5 * i, sizeof t);
          memmove(r + 5 * (at + 1), r + 5 * at, sizeof(double) * 5 * (size_t)(i - at));
          memcpy(r + 5 * at++, t, sizeof t);
        }
  }
}

/* channel_groups > 0: a position-sensitive op with that many output channels. */
static roi_problem roi_problem_of(vs_variant variant, uint64_t seed, int64_t channel_groups) {
  static const roi_problem random_problems[VS_RANDOM_SEEDS] = {
      {2, 10, 13, 11, 17, 3, 2, 2, 0, 0.5, ROIS_MIXED},
      {1, 3, 7, 9, 1, 1, 1, 0, 1, 1.0, ROIS_MIXED},
      {3, 9, 17, 15, 40, 2, 3, -1, 1, 0.25, ROIS_MIXED},
      {2, 16, 12, 10, 23, 2, 2, 2, 1, 0.5, ROIS_MIXED},
  };
  static const roi_problem edge_problems[VS_EDGE_SEEDS] = {
      {2, 3, 9, 8, 0, 2, 2, 2, 1, 0.5, ROIS_DEGENERATE},
      {2, 3, 9, 8, 14, 3, 3, 0, 0, 1.0, ROIS_DEGENERATE},
  };
  static const roi_problem small = {2, 4, 8, 8, 3, 2, 2, 2, 1, 1.0, ROIS_SMALL};
  static const roi_problem model = {2, 256, 50, 68, 512, 7, 7, 2, 1, 1.0 / 16, ROIS_MODEL};
  roi_problem p = variant == VS_RANDOM  ? random_problems[seed % VS_RANDOM_SEEDS]
                  : variant == VS_EDGE  ? edge_problems[seed % VS_EDGE_SEEDS]
                  : variant == VS_SMALL ? small
                                        : model;
  if (channel_groups > 0) {
    if (variant == VS_SMALL) channel_groups = 2;
    if (variant == VS_MODEL) channel_groups = 10, p.k = 256;
    p.c = channel_groups * p.ph * p.pw;
  }
  return p;
}

static int add_rois(vs_sample *s, DLDataType dt, vt_rng *rng, const roi_problem *p) {
  double *r = xmalloc(sizeof(double) * (size_t)(5 * p->k));
  gen_rois(p, rng, r);
  const int64_t shape[2] = {p->k, 5};
  const int t = add_values(s, dt, 2, shape, r);
  free(r);
  s->rois_tensor = t;
  return t;
}

/* The feature map; random seed 1 uses small integers so maxima tie (roi_pool). */
static int add_map(vs_sample *s, DLDataType dt, vt_rng *rng, const roi_problem *p, int ties) {
  const int64_t shape[4] = {p->n, p->c, p->h, p->w};
  if (!ties) return add_uniform(s, dt, 4, shape, rng, -1, 1);
  const int64_t n = shape_numel(4, shape);
  double *v = xmalloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) v[i] = (double)(vt_rng_int(rng, 5) - 2);
  const int t = add_values(s, dt, 4, shape, v);
  free(v);
  return t;
}

static int add_pooled_grad(vs_sample *s, DLDataType dt, vt_rng *rng, const roi_problem *p,
                           int64_t channels) {
  const int64_t shape[4] = {p->k, channels, p->ph, p->pw};
  return add_uniform(s, dt, 4, shape, rng, -1, 1);
}

/* Runs a two-output forward on the host and keeps its second output (roi_pool's
 * argmax, a channel_mapping) as a new tensor of the sample. */
static int forward_second_output(vs_sample *s, const char *op_name, const vo_value *args,
                                 int nargs) {
  const vo_op_info *op = vo_op_find(op_name);
  vo_tensor_desc d[2];
  if (!op || vo_infer(NULL, op, args, nargs, d, 2) != VO_OK) die(op_name, vo_last_error());
  vt_tensor *out = vt_tensor_new(d[0].dtype, d[0].ndim, d[0].shape, NULL);
  const vs_layout saved = s->layout;
  s->layout = VS_CONTIGUOUS; /* the forward writes contiguous outputs */
  const int t = add_values(s, d[1].dtype, d[1].ndim, d[1].shape, NULL);
  s->layout = saved;
  DLTensor *outs[2] = {&out->dl, &s->tensors[t]->dl};
  if (vo_call(NULL, op, args, nargs, outs, 2) != VO_OK) die(op_name, vo_last_error());
  vt_tensor_free(out);
  return t;
}

/* ------------------------------------------------------------ builders */

/* What a builder gets besides the sample. */
typedef struct vs_params {
  vs_variant variant;
  uint64_t seed;
  DLDataType dt;
  vt_rng *rng;
} vs_params;

/* A random permutation of n log-spaced scores (distinct in float16 too). */
static void log_spaced_scores(vt_rng *rng, int64_t n, double *sc) {
  for (int64_t i = 0; i < n; i++) sc[i] = exp2((double)i * (15.0 / (double)n) - 5);
  for (int64_t i = n - 1; i > 0; i--) {
    const int64_t j = vt_rng_int(rng, i + 1);
    const double t = sc[i];
    sc[i] = sc[j], sc[j] = t;
  }
}

/* nms / batched_nms: random 97, 0, 1031 and 300 boxes with many tied
 * scores; edge: none, or degenerate boxes with equal scores; model: 6000
 * detections with distinct scores (log-spaced, distinct in float16 too, as
 * torchvision's sort is not stable); 24,000 coordinates put torchvision's
 * CUDA batched_nms on its exact per-class path (above 20,000; below, it
 * shifts boxes by class, which float rounding makes inexact). */
static void build_nms_common(vs_sample *s, const vs_params *q, int batched) {
  static const int64_t random_counts[VS_RANDOM_SEEDS] = {97, 0, 1031, 300};
  static const double thresholds[VS_RANDOM_SEEDS] = {0.5, 0.3, 0.7, 0.45};
  int64_t n = 6;
  double threshold = 0.5;
  box_kind kind = BOXES_SMALL;
  if (q->variant == VS_RANDOM) {
    n = random_counts[q->seed % VS_RANDOM_SEEDS];
    threshold = thresholds[q->seed % VS_RANDOM_SEEDS];
    kind = BOXES_MIXED;
  } else if (q->variant == VS_EDGE) {
    n = q->seed % VS_EDGE_SEEDS == 0 ? 0 : 40;
    kind = BOXES_DEGENERATE;
  } else if (q->variant == VS_MODEL) {
    n = 6000;
    kind = BOXES_DETECTIONS;
  }
  double *b = xmalloc(sizeof(double) * (size_t)(4 * n));
  double *sc = xmalloc(sizeof(double) * (size_t)n);
  double *ids = xmalloc(sizeof(double) * (size_t)n);
  gen_boxes(kind, q->rng, n, b);
  for (int64_t i = 0; i < n; i++) {
    sc[i] = q->variant == VS_EDGE     ? 0.5
            : q->variant == VS_RANDOM ? floor(vt_rng_uniform(q->rng, 0, 8)) / 8
                                      : vt_rng_uniform(q->rng, 0, 1);
    ids[i] = (double)vt_rng_int(q->rng, q->variant == VS_MODEL   ? 80
                                        : q->variant == VS_SMALL ? 3
                                                                 : 5);
  }
  if (q->variant == VS_MODEL) log_spaced_scores(q->rng, n, sc);
  const int64_t bs[2] = {n, 4}, ss[1] = {n};
  const int tb = add_values(s, q->dt, 2, bs, b);
  arg_tensor(s, tb);
  arg_tensor(s, add_values(s, q->dt, 1, ss, sc));
  if (batched) arg_tensor(s, add_values(s, vt_i64, 1, ss, ids));
  arg_float(s, threshold);
  s->shape_tensor = tb;
  s->note = q->variant == VS_MODEL ? "keep[:num_kept] vs torchvision" : NULL;
  free(b);
  free(sc);
  free(ids);
}
static void sample_nms(vs_sample *s, const vs_params *q) { build_nms_common(s, q, 0); }
static void sample_batched_nms(vs_sample *s, const vs_params *q) { build_nms_common(s, q, 1); }

/* The IoU ops (and, with `grad`, their backward: grad [N, M] first). */
static void build_iou_common(vs_sample *s, const vs_params *q, int eps, int grad) {
  static const int64_t random_n[VS_RANDOM_SEEDS] = {37, 0, 129, 64},
                       random_m[VS_RANDOM_SEEDS] = {53, 9, 1, 40};
  int64_t n = 4, m = 5;
  box_kind kind = BOXES_SMALL;
  if (q->variant == VS_RANDOM) {
    n = random_n[q->seed % VS_RANDOM_SEEDS], m = random_m[q->seed % VS_RANDOM_SEEDS];
    kind = BOXES_MIXED;
  } else if (q->variant == VS_EDGE) {
    const int empty = q->seed % VS_EDGE_SEEDS == 0;
    n = empty ? 3 : 20, m = empty ? 0 : 17;
    kind = BOXES_DEGENERATE;
  } else if (q->variant == VS_MODEL) {
    n = 1500, m = 1000;
    kind = BOXES_DETECTIONS;
  }
  double *b = xmalloc(sizeof(double) * (size_t)(4 * (n + m)));
  gen_boxes(kind, q->rng, n + m, b);
  const int64_t gs[2] = {n, m}, s1[2] = {n, 4}, s2[2] = {m, 4};
  if (grad) arg_tensor(s, add_uniform(s, q->dt, 2, gs, q->rng, -1, 1));
  const int t1 = add_values(s, q->dt, 2, s1, b);
  arg_tensor(s, t1);
  arg_tensor(s, add_values(s, q->dt, 2, s2, b + 4 * n));
  if (eps) arg_float(s, 1e-7);
  s->shape_tensor = t1;
  free(b);
}
static void sample_box_iou(vs_sample *s, const vs_params *q) { build_iou_common(s, q, 0, 0); }
static void sample_generalized_box_iou(vs_sample *s, const vs_params *q) {
  build_iou_common(s, q, 0, 0);
}
static void sample_distance_box_iou(vs_sample *s, const vs_params *q) {
  build_iou_common(s, q, 1, 0);
}
static void sample_complete_box_iou(vs_sample *s, const vs_params *q) {
  build_iou_common(s, q, 1, 0);
}
static void sample_box_iou_backward(vs_sample *s, const vs_params *q) {
  build_iou_common(s, q, 0, 1);
}
static void sample_generalized_box_iou_backward(vs_sample *s, const vs_params *q) {
  build_iou_common(s, q, 0, 1);
}
static void sample_distance_box_iou_backward(vs_sample *s, const vs_params *q) {
  build_iou_common(s, q, 1, 1);
}
static void sample_complete_box_iou_backward(vs_sample *s, const vs_params *q) {
  build_iou_common(s, q, 1, 1);
}

static int map_ties(const vs_params *q) {
  return q->variant == VS_RANDOM && q->seed % VS_RANDOM_SEEDS == 1;
}

/* roi_align_rotated: roi_align's problems, each RoI (x1, y1, x2, y2) turned
 * into (cx, cy, |x2 - x1|, |y2 - y1|) (so off the map, tiny, huge and
 * zero-size boxes stay) with an angle cycling through 0, 90, 180, -45 and a
 * random one (degrees, or radians with `radians`). Random seed 2 passes
 * clockwise, seed 3 radians; the edge seeds are empty, then unaligned with
 * adaptive sampling. */
static int add_rotated_rois(vs_sample *s, DLDataType dt, vt_rng *rng, const roi_problem *p,
                            int radians) {
  static const double angles[4] = {0, 90, 180, -45};
  double *r = xmalloc(sizeof(double) * (size_t)(5 * p->k));
  double *q = xmalloc(sizeof(double) * (size_t)(6 * p->k));
  gen_rois(p, rng, r);
  for (int64_t i = 0; i < p->k; i++) {
    const double *a = r + 5 * i;
    double *b = q + 6 * i;
    const double deg = i % 5 < 4 ? angles[i % 5] : vt_rng_uniform(rng, -180, 180);
    b[0] = a[0];
    b[1] = (a[1] + a[3]) / 2, b[2] = (a[2] + a[4]) / 2;
    b[3] = fabs(a[3] - a[1]), b[4] = fabs(a[4] - a[2]);
    b[5] = radians ? deg * 3.14159265358979323846 / 180 : deg;
  }
  const int64_t shape[2] = {p->k, 6};
  const int t = add_values(s, dt, 2, shape, q);
  free(r);
  free(q);
  s->rois_tensor = t;
  return t;
}

/* roi_align and roi_align_rotated, forward or backward: one argument list
 * (roi_align_rotated's adds clockwise and radians). */
static void build_roi_align_common(vs_sample *s, const vs_params *q, int backward, int rotated) {
  const roi_problem p = roi_problem_of(q->variant, q->seed, 0);
  const int clockwise = rotated && q->variant == VS_RANDOM && q->seed % VS_RANDOM_SEEDS == 2;
  const int radians = rotated && q->variant == VS_RANDOM && q->seed % VS_RANDOM_SEEDS == 3;
  if (backward)
    arg_tensor(s, add_pooled_grad(s, q->dt, q->rng, &p, p.c));
  else
    arg_tensor(s, add_map(s, q->dt, q->rng, &p, map_ties(q)));
  arg_tensor(s, rotated ? add_rotated_rois(s, q->dt, q->rng, &p, radians)
                        : add_rois(s, q->dt, q->rng, &p));
  arg_float(s, p.scale);
  arg_int(s, p.ph);
  arg_int(s, p.pw);
  if (backward) {
    arg_int(s, p.n);
    arg_int(s, p.c);
    arg_int(s, p.h);
    arg_int(s, p.w);
  }
  arg_int(s, p.sr);
  arg_bool(s, p.aligned);
  if (rotated) {
    arg_bool(s, clockwise);
    arg_bool(s, radians);
  }
  s->shape_tensor = s->rois_tensor;
  s->note = rotated && q->variant == VS_MODEL ? "box head, rotated RoIs" : NULL;
}
static void sample_roi_align(vs_sample *s, const vs_params *q) {
  build_roi_align_common(s, q, 0, 0);
}
static void sample_roi_align_backward(vs_sample *s, const vs_params *q) {
  build_roi_align_common(s, q, 1, 0);
}
static void sample_roi_align_rotated(vs_sample *s, const vs_params *q) {
  build_roi_align_common(s, q, 0, 1);
}
static void sample_roi_align_rotated_backward(vs_sample *s, const vs_params *q) {
  build_roi_align_common(s, q, 1, 1);
}

static void sample_roi_pool(vs_sample *s, const vs_params *q) {
  const roi_problem p = roi_problem_of(q->variant, q->seed, 0);
  arg_tensor(s, add_map(s, q->dt, q->rng, &p, map_ties(q)));
  arg_tensor(s, add_rois(s, q->dt, q->rng, &p));
  arg_float(s, p.scale);
  arg_int(s, p.ph);
  arg_int(s, p.pw);
  s->shape_tensor = s->rois_tensor;
  s->note = q->variant == VS_MODEL ? "argmax exact" : NULL;
}

static void sample_roi_pool_backward(vs_sample *s, const vs_params *q) {
  const roi_problem p = roi_problem_of(q->variant, q->seed, 0);
  const int x = add_map(s, q->dt, q->rng, &p, map_ties(q));
  const int r = add_rois(s, q->dt, q->rng, &p);
  const vo_value fwd[5] = {vo_tensor_value(&s->tensors[x]->dl), vo_tensor_value(&s->tensors[r]->dl),
                           vo_float_value(p.scale), vo_int_value(p.ph), vo_int_value(p.pw)};
  const int argmax = forward_second_output(s, "roi_pool", fwd, 5);
  arg_tensor(s, add_pooled_grad(s, q->dt, q->rng, &p, p.c));
  arg_tensor(s, r);
  arg_tensor(s, argmax);
  arg_float(s, p.scale);
  arg_int(s, p.ph);
  arg_int(s, p.pw);
  arg_int(s, p.n);
  arg_int(s, p.c);
  arg_int(s, p.h);
  arg_int(s, p.w);
  s->shape_tensor = s->rois_tensor;
}

static void build_ps_common(vs_sample *s, const vs_params *q, int align) {
  const roi_problem p = roi_problem_of(q->variant, q->seed, 3);
  arg_tensor(s, add_map(s, q->dt, q->rng, &p, map_ties(q)));
  arg_tensor(s, add_rois(s, q->dt, q->rng, &p));
  arg_float(s, p.scale);
  arg_int(s, p.ph);
  arg_int(s, p.pw);
  if (align) arg_int(s, p.sr);
  s->shape_tensor = s->rois_tensor;
  s->note = q->variant == VS_MODEL ? "channel_mapping exact" : NULL;
}
static void sample_ps_roi_align(vs_sample *s, const vs_params *q) { build_ps_common(s, q, 1); }
static void sample_ps_roi_pool(vs_sample *s, const vs_params *q) { build_ps_common(s, q, 0); }

static void build_ps_backward_common(vs_sample *s, const vs_params *q, int align) {
  roi_problem p = roi_problem_of(q->variant, q->seed, 3);
  /* torchvision's ps_roi_pool backward clamps bins to H, W where its forward
   * clamps to H-1, W-1: the model sample keeps clear of that edge. */
  if (!align && p.rois == ROIS_MODEL) p.rois = ROIS_MODEL_INSIDE;
  const int x = add_map(s, q->dt, q->rng, &p, map_ties(q));
  const int r = add_rois(s, q->dt, q->rng, &p);
  const vo_value fwd[6] = {vo_tensor_value(&s->tensors[x]->dl),
                           vo_tensor_value(&s->tensors[r]->dl),
                           vo_float_value(p.scale),
                           vo_int_value(p.ph),
                           vo_int_value(p.pw),
                           vo_int_value(p.sr)};
  const int cm =
      forward_second_output(s, align ? "ps_roi_align" : "ps_roi_pool", fwd, align ? 6 : 5);
  arg_tensor(s, add_pooled_grad(s, q->dt, q->rng, &p, p.c / (p.ph * p.pw)));
  arg_tensor(s, r);
  arg_tensor(s, cm);
  arg_float(s, p.scale);
  arg_int(s, p.ph);
  arg_int(s, p.pw);
  if (align) arg_int(s, p.sr);
  arg_int(s, p.n);
  arg_int(s, p.c);
  arg_int(s, p.h);
  arg_int(s, p.w);
  s->shape_tensor = s->rois_tensor;
  s->note = !align && q->variant == VS_MODEL ? "RoIs clear of the last row/col" : NULL;
}
static void sample_ps_roi_align_backward(vs_sample *s, const vs_params *q) {
  build_ps_backward_common(s, q, 1);
}
static void sample_ps_roi_pool_backward(vs_sample *s, const vs_params *q) {
  build_ps_backward_common(s, q, 0);
}

/* An FPN pyramid: random, an image of 130x98 (levels of ceil sizes) with
 * RoIs of 4..300 pixels spread over the levels, one reversed (no level);
 * edge: no RoIs, or degenerate ones; small: two levels 8x8 and 4x4;
 * model: P2..P5 of an 800x1216 image, 256 channels, 512 RoIs. */
static void build_msra_common(vs_sample *s, const vs_params *q, int backward) {
  static const int random_levels[VS_RANDOM_SEEDS] = {4, 1, 3, 2};
  roi_problem p = roi_problem_of(q->variant, q->seed, 0);
  int nl = 3;
  int64_t img_h = 98, img_w = 130, first_stride = 4;
  if (q->variant == VS_RANDOM) nl = random_levels[q->seed % VS_RANDOM_SEEDS];
  if (q->variant == VS_SMALL) nl = 2, img_h = 8, img_w = 8, first_stride = 1;
  if (q->variant == VS_MODEL) nl = 4, img_h = 800, img_w = 1216;
  int feats[VO_MAX_LIST];
  double scales[VO_MAX_LIST];
  for (int l = 0; l < nl; l++) {
    const int64_t st = first_stride << l;
    const int64_t shape[4] = {p.n, p.c, (img_h + st - 1) / st, (img_w + st - 1) / st};
    feats[l] = add_uniform(s, q->dt, 4, shape, q->rng, -1, 1);
    scales[l] = 1.0 / (double)st;
  }
  double *r = xmalloc(sizeof(double) * (size_t)(5 * p.k));
  if (q->variant == VS_RANDOM) {
    for (int64_t i = 0; i < p.k; i++) {
      const double x = vt_rng_uniform(q->rng, -10, 120), y = vt_rng_uniform(q->rng, -10, 90);
      r[5 * i] = (double)vt_rng_int(q->rng, p.n);
      r[5 * i + 1] = x;
      r[5 * i + 2] = y;
      r[5 * i + 3] = x + exp(vt_rng_uniform(q->rng, log(4.0), log(300.0)));
      r[5 * i + 4] = y + exp(vt_rng_uniform(q->rng, log(4.0), log(300.0)));
    }
    if (p.k > 2) r[5 * 2 + 3] = r[5 * 2 + 1] - 5; /* reversed: negative area */
  } else {
    /* the RoIs in image coordinates: the problem's map is the image */
    p.h = img_h, p.w = img_w, p.scale = 1.0;
    gen_rois(&p, q->rng, r);
  }
  const int64_t rs[2] = {p.k, 5};
  const int rt = add_values(s, q->dt, 2, rs, r);
  free(r);
  s->rois_tensor = rt;
  s->shape_tensor = rt;
  if (backward) {
    arg_tensor(s, add_pooled_grad(s, q->dt, q->rng, &p, p.c));
    arg_tensor(s, rt);
    arg_list(s, feats, nl);
    s->num_outputs = nl;
  } else {
    arg_list(s, feats, nl);
    arg_tensor(s, rt);
  }
  arg_floats(s, scales, nl);
  arg_int(s, p.ph);
  arg_int(s, p.pw);
  arg_int(s, p.sr);
  arg_int(s, 224);
  arg_int(s, 4);
  arg_bool(s, q->variant == VS_SMALL || q->variant == VS_MODEL ? 0 : p.aligned);
  s->note = q->variant == VS_MODEL ? "MultiScaleRoIAlign" : NULL;
}
static void sample_multi_scale_roi_align(vs_sample *s, const vs_params *q) {
  build_msra_common(s, q, 0);
}
static void sample_multi_scale_roi_align_backward(vs_sample *s, const vs_params *q) {
  build_msra_common(s, q, 1);
}

typedef struct dcn_problem {
  int64_t n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups, og;
  int mask, bias;
  double offset_range; /* offsets uniform in +-range */
  int integer_offsets; /* rounded: samples on the grid (bilinear weights 0 and 1) */
} dcn_problem;

static dcn_problem dcn_problem_of(vs_variant variant, uint64_t seed) {
  static const dcn_problem random_problems[VS_RANDOM_SEEDS] = {
      {2, 4, 9, 7, 6, 3, 2, 2, 1, 1, 0, 2, 1, 2, 2, 1, 1, 3, 0},
      {1, 3, 5, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 3, 0},
      {3, 6, 11, 10, 6, 3, 3, 1, 2, 2, 1, 1, 2, 3, 3, 1, 0, 3, 0},
      {2, 8, 8, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 2, 2, 1, 1, 3, 0},
  };
  static const dcn_problem edge_problems[VS_EDGE_SEEDS] = {
      {2, 4, 6, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2, 2, 1, 1, 3, 1},  /* on the grid */
      {1, 2, 5, 5, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 40, 0}, /* far outside */
  };
  static const dcn_problem small = {1, 2, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
  static const dcn_problem model = {4, 64, 33, 33, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 0};
  return variant == VS_RANDOM  ? random_problems[seed % VS_RANDOM_SEEDS]
         : variant == VS_EDGE  ? edge_problems[seed % VS_EDGE_SEEDS]
         : variant == VS_SMALL ? small
                               : model;
}

static void build_dcn_common(vs_sample *s, const vs_params *q, int backward) {
  const dcn_problem d = dcn_problem_of(q->variant, q->seed);
  const int64_t ho = (d.h + 2 * d.ph - (d.dh * (d.kh - 1) + 1)) / d.sh + 1;
  const int64_t wo = (d.w + 2 * d.pw - (d.dw * (d.kw - 1) + 1)) / d.sw + 1;
  const int64_t xs[4] = {d.n, d.cin, d.h, d.w}, ws[4] = {d.cout, d.cin / d.groups, d.kh, d.kw};
  const int64_t os[4] = {d.n, 2 * d.og * d.kh * d.kw, ho, wo},
                ms[4] = {d.n, d.og * d.kh * d.kw, ho, wo};
  const int64_t bs[1] = {d.cout}, gs[4] = {d.n, d.cout, ho, wo};
  const double wscale = q->variant == VS_MODEL ? 0.1 : 1;
  if (backward) arg_tensor(s, add_uniform(s, q->dt, 4, gs, q->rng, -1, 1));
  arg_tensor(s, add_uniform(s, q->dt, 4, xs, q->rng, -1, 1));
  arg_tensor(s, add_uniform(s, q->dt, 4, ws, q->rng, -wscale, wscale));
  const int64_t no = shape_numel(4, os);
  double *ov = xmalloc(sizeof(double) * (size_t)no);
  for (int64_t i = 0; i < no; i++) {
    ov[i] = vt_rng_uniform(q->rng, -d.offset_range, d.offset_range);
    if (d.integer_offsets) ov[i] = round(ov[i]);
  }
  const int off = add_values(s, q->dt, 4, os, ov);
  free(ov);
  arg_tensor(s, off);
  if (d.mask)
    arg_tensor(s, add_uniform(s, q->dt, 4, ms, q->rng, 0, 1));
  else
    arg_none(s);
  if (d.bias)
    arg_tensor(s, add_uniform(s, q->dt, 1, bs, q->rng, -1, 1));
  else
    arg_none(s);
  const int64_t ints[8] = {d.sh, d.sw, d.ph, d.pw, d.dh, d.dw, d.groups, d.og};
  for (int i = 0; i < 8; i++) arg_int(s, ints[i]);
  arg_bool(s, d.mask);
  s->shape_tensor = off;
  s->note = q->variant == VS_MODEL && !backward ? "with mask and bias" : NULL;
}
static void sample_deform_conv2d(vs_sample *s, const vs_params *q) { build_dcn_common(s, q, 0); }
static void sample_deform_conv2d_backward(vs_sample *s, const vs_params *q) {
  build_dcn_common(s, q, 1);
}

/* The integer dtype of the boxes ops' integer samples beside float dtype
 * dt: int64 beside float64, uint8 beside bfloat16, int16 beside float16,
 * int32 beside float32. */
static DLDataType int_boxes_beside(DLDataType dt) {
  return dt.bits == 64                          ? vt_i64
         : dt.code == kDLBfloat                 ? vt_u8
         : dt.code == kDLFloat && dt.bits == 16 ? vt_i16
                                                : vt_i32;
}

/* box_area (and, with `grad`, its backward: grad [N] first): random 97,
 * 257 and 64 mixed boxes, and at seed 1 (forward) 45 integer boxes (int32
 * beside float32, int64 beside float64, int16 beside float16, uint8 beside
 * bfloat16; every fifth one reversed where the dtype is signed); edge: none,
 * or degenerate boxes; model: 6000 detections. */
static void build_box_area_common(vs_sample *s, const vs_params *q, int grad) {
  static const int64_t random_n[VS_RANDOM_SEEDS] = {97, 45, 257, 64};
  int64_t n = 6;
  box_kind kind = BOXES_SMALL;
  DLDataType dt = q->dt;
  if (q->variant == VS_RANDOM) {
    n = random_n[q->seed % VS_RANDOM_SEEDS];
    kind = BOXES_MIXED;
    if (q->seed % VS_RANDOM_SEEDS == 1 && !grad) {
      kind = BOXES_SMALL;
      dt = int_boxes_beside(q->dt);
    }
  } else if (q->variant == VS_EDGE) {
    n = q->seed % VS_EDGE_SEEDS == 0 ? 0 : 40;
    kind = BOXES_DEGENERATE;
  } else if (q->variant == VS_MODEL) {
    n = 6000;
    kind = BOXES_DETECTIONS;
  }
  double *b = xmalloc(sizeof(double) * (size_t)(4 * n));
  gen_boxes(kind, q->rng, n, b);
  if (dt.code != q->dt.code || dt.bits != q->dt.bits) {
    for (int64_t i = 0; i < 4 * n; i++) b[i] = floor(8 * b[i]);
    for (int64_t i = 0; dt.code == kDLInt && i < n; i += 5) {
      const double x1 = b[4 * i], y1 = b[4 * i + 1];
      b[4 * i] = b[4 * i + 2], b[4 * i + 1] = b[4 * i + 3];
      b[4 * i + 2] = x1, b[4 * i + 3] = y1;
    }
  }
  const int64_t bs[2] = {n, 4}, gs[1] = {n};
  if (grad) arg_tensor(s, add_uniform(s, q->dt, 1, gs, q->rng, -1, 1));
  const int tb = add_values(s, dt, 2, bs, b);
  arg_tensor(s, tb);
  s->shape_tensor = tb;
  free(b);
}
static void sample_box_area(vs_sample *s, const vs_params *q) { build_box_area_common(s, q, 0); }
static void sample_box_area_backward(vs_sample *s, const vs_params *q) {
  build_box_area_common(s, q, 1);
}

/* box_convert (and, with `grad`, its backward: grad [N, K_out] first). The
 * 18 pairs torchvision converts (the 12 conversions and the 6 copies) are
 * spread over the samples and dtypes: sample slot k (random seeds 0-3, edge
 * seed 1, small, model) in the d-th dtype of vs_dtypes converts pair
 * (4 k + d) % 18, so every pair runs in some dtype and seed. Random: 97, 45,
 * 257 and 64 mixed boxes, at seed 1 (forward) integer boxes as box_area's;
 * edge: none, or degenerate boxes at right angles, whole turns and beyond;
 * model: 6000 detections. Rotated boxes take angles in [-180, 180]. */
static const int box_convert_pairs[18][2] = {{1, 0}, {3, 4}, {0, 2}, {5, 3}, {2, 0}, {4, 5},
                                             {0, 1}, {3, 5}, {1, 2}, {5, 4}, {2, 1}, {4, 3},
                                             {0, 0}, {3, 3}, {1, 1}, {4, 4}, {2, 2}, {5, 5}};

/* Box b (x1, y1, x2, y2) with angle r (degrees) as format fmt, into out. */
static int box_in_format(const double *b, double r, int fmt, double *out) {
  const double cx = 0.5 * (b[0] + b[2]), cy = 0.5 * (b[1] + b[3]);
  const double w = b[2] - b[0], h = b[3] - b[1];
  const double t = r * 3.141592653589793 / 180, c = cos(t), s = sin(t);
  const double x1 = cx - 0.5 * w * c - 0.5 * h * s, y1 = cy - 0.5 * h * c + 0.5 * w * s;
  switch (fmt) {
    case 0: memcpy(out, b, sizeof(double) * 4); return 4;
    case 1: out[0] = b[0], out[1] = b[1], out[2] = w, out[3] = h; return 4;
    case 2: out[0] = cx, out[1] = cy, out[2] = w, out[3] = h; return 4;
    case 3: out[0] = cx, out[1] = cy, out[2] = w, out[3] = h, out[4] = r; return 5;
    case 4: out[0] = x1, out[1] = y1, out[2] = w, out[3] = h, out[4] = r; return 5;
    default: /* TL, TR, BR, BL */
      out[0] = x1, out[1] = y1, out[2] = x1 + w * c, out[3] = y1 - w * s;
      out[4] = out[2] + h * s, out[5] = out[3] + h * c, out[6] = x1 + h * s, out[7] = y1 + h * c;
      return 8;
  }
}

static void build_box_convert_common(vs_sample *s, const vs_params *q, int grad) {
  static const int64_t random_n[VS_RANDOM_SEEDS] = {97, 45, 257, 64};
  static const double edge_angles[8] = {0, 90, -90, 180, 45, 360, -270, 30.5};
  int64_t n = 6, slot = 5;
  box_kind kind = BOXES_SMALL;
  DLDataType dt = q->dt;
  if (q->variant == VS_RANDOM) {
    slot = (int64_t)(q->seed % VS_RANDOM_SEEDS);
    n = random_n[slot];
    kind = BOXES_MIXED;
    if (slot == 1 && !grad) {
      kind = BOXES_SMALL;
      dt = int_boxes_beside(q->dt);
    }
  } else if (q->variant == VS_EDGE) {
    n = q->seed % VS_EDGE_SEEDS == 0 ? 0 : 40;
    slot = 4;
    kind = BOXES_DEGENERATE;
  } else if (q->variant == VS_MODEL) {
    n = 6000;
    slot = 6;
    kind = BOXES_DETECTIONS;
  }
  int d = 0;
  while (d < VS_NUM_DTYPES - 1 &&
         (vs_dtypes[d]->code != q->dt.code || vs_dtypes[d]->bits != q->dt.bits))
    d++;
  const int *pair = box_convert_pairs[(4 * slot + d) % 18];
  const int in_k = 4 + pair[0] / 3 + 3 * (pair[0] / 5), out_k = 4 + pair[1] / 3 + 3 * (pair[1] / 5);
  const int is_int = dt.code != q->dt.code || dt.bits != q->dt.bits;
  double *b = xmalloc(sizeof(double) * (size_t)(4 * n));
  double *v = xmalloc(sizeof(double) * (size_t)(8 * n));
  gen_boxes(kind, q->rng, n, b);
  for (int64_t i = 0; i < n; i++) {
    double *r = b + 4 * i;
    if (is_int) {
      for (int k = 0; k < 4; k++) r[k] = floor(8 * r[k]);
      if (dt.code == kDLInt && i % 5 == 0) { /* reversed, where the dtype is signed */
        const double x1 = r[0], y1 = r[1];
        r[0] = r[2], r[1] = r[3], r[2] = x1, r[3] = y1;
      }
    }
    double angle = q->variant == VS_EDGE ? edge_angles[i % 8] : vt_rng_uniform(q->rng, -180, 180);
    if (is_int) angle = dt.code == kDLUInt ? floor(fabs(angle)) : floor(angle);
    double *o = v + in_k * i;
    box_in_format(r, angle, pair[0], o);
    for (int k = 0; is_int && k < in_k; k++)
      o[k] = dt.code == kDLUInt ? fmin(fabs(round(o[k])), 255) : round(o[k]);
  }
  const int64_t bs[2] = {n, in_k}, gs[2] = {n, out_k};
  if (grad) arg_tensor(s, add_uniform(s, q->dt, 2, gs, q->rng, -1, 1));
  const int tb = add_values(s, dt, 2, bs, v);
  arg_tensor(s, tb);
  arg_int(s, pair[0]);
  arg_int(s, pair[1]);
  s->shape_tensor = tb;
  free(b);
  free(v);
}
static void sample_box_convert(vs_sample *s, const vs_params *q) {
  build_box_convert_common(s, q, 0);
}
static void sample_box_convert_backward(vs_sample *s, const vs_params *q) {
  build_box_convert_common(s, q, 1);
}

/* Rotated boxes (cx, cy, w, h, angle in degrees): SPEC-NEXT 1.3's edge
 * cases as pairs (row k of boxes1 with row k of boxes2) and random boxes
 * with copies, 90/180-degree turns of squares and near-duplicates. */
static const double rbox_edge_pairs[][10] = {
    {10, 10, 8, 4, 30, 10, 10, 8, 4, 30},               /* identical */
    {20, 20, 6, 6, 0, 20, 20, 6, 6, 90},                /* a square turned 90 */
    {20, 20, 6, 6, 0, 20, 20, 6, 6, 180},               /* and 180 */
    {5, 3, 4, 2, -90, 5, 3, 4, 2, 90},                  /* detectron2's docstring pair */
    {0, 0, 2, 2, 0, 2, 0, 2, 2, 0},                     /* a shared edge */
    {0, 0, 2, 2, 0, 2, 2, 2, 2, 0},                     /* a shared corner */
    {50, 50, 20, 10, 15, 50, 50, 4, 2, 15},             /* containment */
    {50, 50, 20, 20, 0, 52, 49, 4, 3, 37},              /* rotated containment */
    {0, 0, 4, 2, 0, 1, 0, 4, 2, 0},                     /* collinear edges */
    {0, 0, 10, 5, 0, 0, 0, 10, 5, 1e-4},                /* near-parallel edges */
    {0, 0, 0, 4, 0, 0, 0, 4, 4, 0},                     /* zero width */
    {0, 0, 4, 0, 30, 0, 0, 4, 4, 30},                   /* zero height */
    {3e4, 3e4, 10, 5, 20, 3e4 + 3, 3e4 + 1, 8, 6, -40}, /* far from the origin */
    {0, 0, 10, 5, 20, 3, 1, 8, 6, -40},                 /* the same pair near it */
    {0, 0, 1e-4, 1e-4, 0, 0.15, 0, 0.1, 0.1, 0},        /* a tiny box: wide vertex slack */
    {0, 0, 4, 4, 0, 100, 100, 4, 4, 45},                /* far apart */
    {0, 0, 2, 2, 0, 2.001, 0, 2, 2, 0},                 /* a small gap */
    {10, 10, 6, 3, 400, 10, 10, 6, 3, 40},              /* angles 360 apart */
    {-7, 3, 5, 9, -135, -6, 2, 9, 5, 44},               /* negative coordinates */
};
#define RBOX_EDGE_PAIRS ((int64_t)(sizeof rbox_edge_pairs / sizeof rbox_edge_pairs[0]))

/* Random rotated boxes; with exact_turns some are squares' copies turned
 * by multiples of 90 degrees (exact in degrees, not in radians: such pairs'
 * float32 IoU is ill-conditioned, see kernels/box_iou_rotated.inc). */
static void gen_rboxes(vt_rng *rng, int64_t n, double *b, int exact_turns) {
  for (int64_t i = 0; i < n; i++) {
    double *r = b + 5 * i;
    const int64_t pick = i > 0 ? vt_rng_int(rng, 8) : 7;
    const double *p = i > 0 ? b + 5 * vt_rng_int(rng, i) : NULL;
    if (pick == 0) { /* a copy */
      memcpy(r, p, sizeof(double) * 5);
    } else if (pick == 1 && exact_turns && p[2] == p[3]) { /* a square turned */
      memcpy(r, p, sizeof(double) * 5);
      r[4] += 90.0 * (double)vt_rng_int(rng, 4);
    } else if (pick == 2) { /* a near-duplicate */
      for (int j = 0; j < 5; j++) r[j] = p[j] + vt_rng_uniform(rng, -1, 1);
      r[2] = fabs(r[2]) + 0.5;
      r[3] = fabs(r[3]) + 0.5;
    } else {
      r[0] = vt_rng_uniform(rng, 0, 100);
      r[1] = vt_rng_uniform(rng, 0, 100);
      r[2] = vt_rng_uniform(rng, 1, 50);
      r[3] = pick == 1 ? r[2] : vt_rng_uniform(rng, 1, 50); /* squares to turn later */
      r[4] = vt_rng_uniform(rng, -180, 180);
    }
  }
}

/* box_iou_rotated and its aligned form (N == M): random sizes (seed 1 with
 * iof, 2 clockwise, 3 radians), the edge pairs (seed 0 of the edge variant
 * empty), a small one and a model-sized one (every proposal against the
 * ground truth of a rotated detector's image, aligned: 2000 pairs). */
static void build_rotated_iou(vs_sample *s, const vs_params *q, int aligned) {
  static const int64_t random_n[VS_RANDOM_SEEDS] = {37, 0, 129, 64},
                       random_m[VS_RANDOM_SEEDS] = {53, 9, 1, 40};
  int64_t n = 4, m = 5;
  int iof = 0, clockwise = 0, radians = 0;
  if (q->variant == VS_RANDOM) {
    const uint64_t k = q->seed % VS_RANDOM_SEEDS;
    n = random_n[k], m = random_m[k];
    iof = k == 1, clockwise = k == 2, radians = k == 3;
  } else if (q->variant == VS_EDGE) {
    const int empty = q->seed % VS_EDGE_SEEDS == 0;
    n = empty ? 3 : RBOX_EDGE_PAIRS, m = empty ? 0 : RBOX_EDGE_PAIRS;
  } else if (q->variant == VS_MODEL) {
    n = 1000, m = 600;
  }
  if (aligned) m = n;
  double *b = xmalloc(sizeof(double) * (size_t)(5 * (n + m)));
  if (q->variant == VS_EDGE && m > 0) {
    for (int64_t k = 0; k < n; k++) {
      memcpy(b + 5 * k, rbox_edge_pairs[k], sizeof(double) * 5);
      memcpy(b + 5 * (n + k), rbox_edge_pairs[k] + 5, sizeof(double) * 5);
    }
  } else {
    gen_rboxes(q->rng, n + m, b, !radians);
    if (q->variant == VS_MODEL) /* proposals around the ground truth */
      for (int64_t k = 0; k < n; k++) {
        const double *g = b + 5 * (n + vt_rng_int(q->rng, m));
        double *r = b + 5 * k;
        for (int j = 0; j < 5; j++) r[j] = g[j] + vt_rng_uniform(q->rng, -4, 4);
        r[2] = fabs(r[2]) + 1;
        r[3] = fabs(r[3]) + 1;
      }
  }
  if (radians)
    for (int64_t k = 0; k < n + m; k++) b[5 * k + 4] *= 0.017453292519943295;
  const int64_t s1[2] = {n, 5}, s2[2] = {m, 5};
  const int t1 = add_values(s, q->dt, 2, s1, b);
  arg_tensor(s, t1);
  arg_tensor(s, add_values(s, q->dt, 2, s2, b + 5 * n));
  arg_bool(s, iof);
  arg_bool(s, clockwise);
  arg_bool(s, radians);
  s->shape_tensor = t1;
  free(b);
}
static void sample_box_iou_rotated(vs_sample *s, const vs_params *q) { build_rotated_iou(s, q, 0); }
static void sample_box_iou_rotated_aligned(vs_sample *s, const vs_params *q) {
  build_rotated_iou(s, q, 1);
}

/* nms_rotated / batched_nms_rotated. Rotated boxes (cx, cy, w, h, angle in
 * degrees) of set `kind`:
 * - clusters: oriented detections, jittered copies around objects in an
 *   extent x extent image, each object at its own angle (a tenth at exactly
 *   0 or 90 degrees); one box in six a duplicate of an earlier one (IoU 1),
 *   one in ten an earlier one turned by 180 degrees (the same rectangle);
 * - degenerate: zero width, zero height, points, duplicates, a box nested in
 *   the previous one, far away (+20000), the previous box beside itself
 *   (shared edge, the same angle), square boxes at 0 and 90 degrees. */
typedef enum rbox_set { RBOXES_CLUSTERS, RBOXES_DEGENERATE } rbox_set;

static void gen_rbox_set(rbox_set kind, vt_rng *rng, int64_t n, double extent, double *b) {
  const int64_t objects = n / 12 + 1;
  double *obj = xmalloc(sizeof(double) * (size_t)(5 * objects));
  for (int64_t k = 0; k < objects; k++) {
    double *o = obj + 5 * k;
    o[0] = vt_rng_uniform(rng, 0, extent), o[1] = vt_rng_uniform(rng, 0, extent);
    o[2] = vt_rng_uniform(rng, 0.02, 0.25) * extent, o[3] = vt_rng_uniform(rng, 0.02, 0.1) * extent;
    o[4] = vt_rng_int(rng, 10) == 0 ? 90.0 * (double)vt_rng_int(rng, 2)
                                    : vt_rng_uniform(rng, -180, 180);
  }
  for (int64_t i = 0; i < n; i++) {
    double *r = b + 5 * i;
    const double *p = i > 0 ? b + 5 * (i - 1) : NULL;
    if (kind == RBOXES_CLUSTERS) {
      if (i > 0 && vt_rng_int(rng, 6) == 0) {
        memcpy(r, b + 5 * vt_rng_int(rng, i), sizeof(double) * 5);
        continue;
      }
      if (i > 0 && vt_rng_int(rng, 10) == 0) {
        memcpy(r, b + 5 * vt_rng_int(rng, i), sizeof(double) * 5);
        r[4] += r[4] > 0 ? -180 : 180;
        continue;
      }
      const double *o = obj + 5 * vt_rng_int(rng, objects);
      r[0] = o[0] + 0.1 * o[2] * normal(rng), r[1] = o[1] + 0.1 * o[3] * normal(rng);
      r[2] = o[2] * vt_rng_uniform(rng, 0.85, 1.15), r[3] = o[3] * vt_rng_uniform(rng, 0.85, 1.15);
      r[4] = o[4] == 0 || o[4] == 90 ? o[4] : o[4] + 6 * normal(rng);
      continue;
    }
    const double x = (double)vt_rng_int(rng, 64) - 16, y = (double)vt_rng_int(rng, 64) - 16;
    r[0] = x, r[1] = y, r[2] = (double)(1 + vt_rng_int(rng, 20)),
    r[3] = (double)(1 + vt_rng_int(rng, 20));
    r[4] = (double)(15 * vt_rng_int(rng, 24) - 180);
    switch (i % 8) {
      case 0: r[2] = 0; break;        /* zero width */
      case 1: r[3] = 0; break;        /* zero height */
      case 2: r[2] = r[3] = 0; break; /* a point */
      case 3:                         /* duplicate */
        if (p) memcpy(r, p, sizeof(double) * 5);
        break;
      case 4: /* inside the previous box */
        if (p) memcpy(r, p, sizeof(double) * 5), r[2] *= 0.5, r[3] *= 0.5;
        break;
      case 5: r[0] += 20000, r[1] -= 20000; break; /* far away */
      case 6:                                      /* beside the previous box, sharing its edge */
        if (p) {
          const double t = p[4] * 0.017453292519943295;
          memcpy(r, p, sizeof(double) * 5);
          r[0] += p[2] * cos(t), r[1] -= p[2] * sin(t);
        }
        break;
      default: r[3] = r[2], r[4] = 90.0 * (double)vt_rng_int(rng, 2); break; /* a square */
    }
  }
  free(obj);
}

/* Random: 97, 0, 1031 and 300 oriented detections with tied scores (eighths),
 * thresholds 0.5, 0.3, 0.7 and 0 (a threshold <= 0 suppresses disjoint boxes
 * too); edge: none, or 40 degenerate boxes with equal scores; small: 6
 * boxes, 3 categories; model: 4,000 oriented detections of a 1024x1024
 * aerial image, 16 categories, distinct scores (log-spaced). */
static void build_nms_rotated_common(vs_sample *s, const vs_params *q, int batched) {
  static const int64_t random_counts[VS_RANDOM_SEEDS] = {97, 0, 1031, 300};
  static const double thresholds[VS_RANDOM_SEEDS] = {0.5, 0.3, 0.7, 0.0};
  int64_t n = 6, categories = 3;
  double threshold = 0.5, extent = 24;
  rbox_set kind = RBOXES_CLUSTERS;
  if (q->variant == VS_RANDOM) {
    n = random_counts[q->seed % VS_RANDOM_SEEDS];
    threshold = thresholds[q->seed % VS_RANDOM_SEEDS];
    extent = 200, categories = 5;
  } else if (q->variant == VS_EDGE) {
    n = q->seed % VS_EDGE_SEEDS == 0 ? 0 : 40;
    kind = RBOXES_DEGENERATE;
  } else if (q->variant == VS_MODEL) {
    n = 4000, extent = 1024, categories = 16;
  }
  double *b = xmalloc(sizeof(double) * (size_t)(5 * n));
  double *sc = xmalloc(sizeof(double) * (size_t)n);
  double *ids = xmalloc(sizeof(double) * (size_t)n);
  gen_rbox_set(kind, q->rng, n, extent, b);
  for (int64_t i = 0; i < n; i++) {
    sc[i] = q->variant == VS_EDGE ? 0.5 : floor(vt_rng_uniform(q->rng, 0, 8)) / 8;
    ids[i] = (double)vt_rng_int(q->rng, categories);
  }
  if (q->variant == VS_MODEL) log_spaced_scores(q->rng, n, sc);
  const int64_t bs[2] = {n, 5}, ss[1] = {n};
  const int tb = add_values(s, q->dt, 2, bs, b);
  arg_tensor(s, tb);
  arg_tensor(s, add_values(s, q->dt, 1, ss, sc));
  if (batched) arg_tensor(s, add_values(s, vt_i64, 1, ss, ids));
  arg_float(s, threshold);
  arg_bool(s, q->variant == VS_RANDOM && q->seed % VS_RANDOM_SEEDS == 2); /* clockwise */
  arg_bool(s, 0);                                                         /* radians */
  s->shape_tensor = tb;
  free(b);
  free(sc);
  free(ids);
}
static void sample_nms_rotated(vs_sample *s, const vs_params *q) {
  build_nms_rotated_common(s, q, 0);
}
static void sample_batched_nms_rotated(vs_sample *s, const vs_params *q) {
  build_nms_rotated_common(s, q, 1);
}

/* deform_attn (and, with `grad`, _deform_attn_backward: grad_output [N,Q,M*D]
 * after attn_weight). Random: SPEC-NEXT 5.3's measured case (levels 5x7,
 * 3x4, 1x1, locations partly outside [0, 1]), one level with P = 1, D = 70
 * (beyond one 64-channel chunk), four levels down to 1x1; edge: no queries,
 * or NaN, infinite, huge, exactly 0 and 1 locations, zero weights and an
 * empty (0 x 5) level; small: SPEC-NEXT 5.6's gradcheck shape; model: a
 * Deformable-DETR decoder on an 800x1088 image (strides 8-64, Q = 300). */
typedef struct da_problem {
  int64_t n, m, d, q, p, levels;
  int64_t hw[4][2];
  int special; /* edge seed 1's locations and weights */
} da_problem;

static da_problem da_problem_of(vs_variant variant, uint64_t seed) {
  static const da_problem random[VS_RANDOM_SEEDS] = {
      {2, 2, 3, 7, 4, 3, {{5, 7}, {3, 4}, {1, 1}}, 0},
      {1, 3, 8, 11, 1, 1, {{6, 9}}, 0},
      {3, 1, 70, 5, 2, 2, {{4, 4}, {2, 3}}, 0},
      {2, 4, 4, 9, 3, 4, {{8, 5}, {4, 3}, {2, 2}, {1, 1}}, 0}};
  static const da_problem edge[VS_EDGE_SEEDS] = {{2, 2, 3, 0, 2, 2, {{3, 4}, {2, 2}}, 0},
                                                 {2, 2, 5, 6, 4, 3, {{4, 6}, {0, 5}, {3, 3}}, 1}};
  static const da_problem small = {2, 2, 3, 5, 2, 2, {{3, 4}, {2, 2}}, 0};
  static const da_problem model = {2, 8, 32, 300, 4, 4, {{100, 136}, {50, 68}, {25, 34}, {13, 17}},
                                   0};
  return variant == VS_RANDOM  ? random[seed % VS_RANDOM_SEEDS]
         : variant == VS_EDGE  ? edge[seed % VS_EDGE_SEEDS]
         : variant == VS_SMALL ? small
                               : model;
}

static void build_deform_attn_common(vs_sample *s, const vs_params *q, int grad) {
  const da_problem d = da_problem_of(q->variant, q->seed);
  double shapes[8], starts[4];
  int64_t keys = 0;
  for (int64_t l = 0; l < d.levels; l++) {
    shapes[2 * l] = (double)d.hw[l][0];
    shapes[2 * l + 1] = (double)d.hw[l][1];
    starts[l] = (double)keys;
    keys += d.hw[l][0] * d.hw[l][1];
  }
  const int64_t vs[4] = {d.n, keys, d.m, d.d}, ss[2] = {d.levels, 2}, ls[1] = {d.levels};
  const int64_t locs[6] = {d.n, d.q, d.m, d.levels, d.p, 2}, as[5] = {d.n, d.q, d.m, d.levels, d.p};
  const int64_t gs[3] = {d.n, d.q, d.m * d.d};
  arg_tensor(s, add_uniform(s, q->dt, 4, vs, q->rng, -1, 1));
  arg_tensor(s, add_values(s, vt_i64, 2, ss, shapes));
  arg_tensor(s, add_values(s, vt_i64, 1, ls, starts));
  const int64_t nl = shape_numel(6, locs), na = shape_numel(5, as);
  double *lv = xmalloc(sizeof(double) * (size_t)(nl + 1));
  double *av = xmalloc(sizeof(double) * (size_t)(na + 1));
  static const double odd[] = {NAN, INFINITY, -INFINITY, 1e30, -1e30, 0, 1, 0.5, -0.5, 1.5};
  for (int64_t i = 0; i < nl; i++) {
    lv[i] = vt_rng_uniform(q->rng, -0.15, 1.15);
    if (d.special && i % 7 == 3) lv[i] = odd[(i / 7) % (int64_t)(sizeof odd / sizeof odd[0])];
  }
  for (int64_t i = 0; i < na; i++) {
    av[i] = vt_rng_uniform(q->rng, 0, 1);
    if (d.special && i % 5 == 1) av[i] = 0;
  }
  const int tl = add_values(s, q->dt, 6, locs, lv);
  arg_tensor(s, tl);
  arg_tensor(s, add_values(s, q->dt, 5, as, av));
  free(lv);
  free(av);
  if (grad) arg_tensor(s, add_uniform(s, q->dt, 3, gs, q->rng, -1, 1));
  arg_int(s, q->variant == VS_RANDOM && q->seed % VS_RANDOM_SEEDS == 0 ? 64 : 3);
  s->shape_tensor = tl;
  s->note = q->variant == VS_MODEL ? "Deformable-DETR decoder, 4 levels, Q = 300" : NULL;
}
static void sample_deform_attn(vs_sample *s, const vs_params *q) {
  build_deform_attn_common(s, q, 0);
}
static void sample__deform_attn_backward(vs_sample *s, const vs_params *q) {
  build_deform_attn_common(s, q, 1);
}

/* batched_nms_padded / onnx_nms: B images of M boxes, C classes. Random:
 * (B, M, C) = (2, 97, 3) without a score threshold, (1, 0, 4), (3, 300, 5)
 * and (2, 64, 2) (batched_nms_padded: boxes per class [B, M, C, 4], xywh;
 * seed 2 cxcywh and class-agnostic; onnx: seed 2 center_point_box 1), with
 * scores on a grid of eighths (many ties); edge: no boxes, or degenerate
 * boxes with equal scores; small: (1, 6, 2); model: a YOLO head's output
 * (B = 2, 8400 anchors, 80 classes). */
static void build_nms_padded_common(vs_sample *s, const vs_params *q, int onnx) {
  static const int64_t random[VS_RANDOM_SEEDS][3] = {
      {2, 97, 3}, {1, 0, 4}, {3, 300, 5}, {2, 64, 2}};
  int64_t b = 1, m = 6, c = 2;
  const int seed = (int)(q->seed % VS_RANDOM_SEEDS);
  box_kind kind = BOXES_SMALL;
  if (q->variant == VS_RANDOM) {
    b = random[seed][0], m = random[seed][1], c = random[seed][2];
    kind = BOXES_MIXED;
  } else if (q->variant == VS_EDGE) {
    b = 2, m = q->seed % VS_EDGE_SEEDS == 0 ? 0 : 40, c = 3;
    kind = BOXES_DEGENERATE;
  } else if (q->variant == VS_MODEL) {
    b = 2, m = 8400, c = 80;
    kind = BOXES_DETECTIONS;
  }
  const int per_class = !onnx && q->variant == VS_RANDOM && seed == 3;
  const int64_t rows = b * m * (per_class ? c : 1);
  double *bv = xmalloc(sizeof(double) * (size_t)(4 * rows + 1));
  double *sv = xmalloc(sizeof(double) * (size_t)(b * c * m + 1));
  gen_boxes(kind, q->rng, rows, bv);
  for (int64_t i = 0; i < b * c * m; i++)
    sv[i] = q->variant == VS_EDGE     ? 0.5
            : q->variant == VS_RANDOM ? floor(vt_rng_uniform(q->rng, 0, 8)) / 8
            : q->variant == VS_MODEL  ? pow(vt_rng_uniform(q->rng, 0, 1), 6)
                                      : vt_rng_uniform(q->rng, 0, 1);
  const int64_t bs3[3] = {b, m, 4}, bs4[4] = {b, m, c, 4}, ss[3] = {b, c, m};
  const int tb = per_class ? add_values(s, q->dt, 4, bs4, bv) : add_values(s, q->dt, 3, bs3, bv);
  arg_tensor(s, tb);
  arg_tensor(s, add_values(s, q->dt, 3, ss, sv));
  const double iou = q->variant == VS_RANDOM ? (double[]){0.5, 0.3, 0.7, 0.45}[seed] : 0.5;
  const int no_threshold = q->variant == VS_RANDOM && seed == 0;
  const double score_threshold = q->variant == VS_MODEL ? 0.25 : 0.2;
  const int64_t cap = q->variant == VS_RANDOM ? (int64_t[]){5, 10, 100, 1000}[seed] : 100;
  if (onnx) {
    arg_int(s, cap);
    arg_float(s, iou);
    if (no_threshold)
      arg_none(s);
    else
      arg_float(s, score_threshold);
    arg_int(s, q->variant == VS_RANDOM && seed == 2);
  } else {
    arg_float(s, iou);
    if (no_threshold)
      arg_none(s);
    else
      arg_float(s, score_threshold);
    arg_int(s, q->variant == VS_RANDOM && seed == 1 ? -1 : cap);
    arg_int(s, q->variant == VS_RANDOM ? (int64_t[]){20, 7, 50, 30}[seed] : 100);
    arg_int(s, q->variant == VS_RANDOM ? (int64_t[]){0, 0, 2, 1}[seed] : 0);
    arg_bool(s, q->variant == VS_RANDOM && seed == 2);
    arg_int(s, q->variant == VS_RANDOM && seed == 0 ? 40 : -1);
  }
  s->shape_tensor = tb;
  free(bv);
  free(sv);
}
static void sample_batched_nms_padded(vs_sample *s, const vs_params *q) {
  build_nms_padded_common(s, q, 0);
}
static void sample_onnx_nms(vs_sample *s, const vs_params *q) { build_nms_padded_common(s, q, 1); }
/* soft_nms / batched_soft_nms. Random: 97, 64, 1031 and 300 boxes with
 * duplicates and tied scores (eighths), linear, gaussian, hard with offset 1
 * (seed 2) and gaussian with a small sigma; edge: none, or degenerate boxes
 * (0 / 0 IoUs, reversed boxes) with equal scores, a NaN, an infinite and
 * scores under min_score, hard with threshold 0 (disjoint boxes too); small:
 * 6 boxes, 3 categories, linear; model: 5,000 detections (80 categories),
 * gaussian, distinct scores. */
static void build_soft_nms_common(vs_sample *s, const vs_params *q, int batched) {
  static const int64_t random_counts[VS_RANDOM_SEEDS] = {97, 64, 1031, 300};
  static const double thresholds[VS_RANDOM_SEEDS] = {0.3, 0.5, 0.5, 0.45};
  static const int methods[VS_RANDOM_SEEDS] = {1, 2, 0, 2};
  static const double sigmas[VS_RANDOM_SEEDS] = {0.5, 0.5, 0.5, 0.05};
  int64_t n = 6, categories = 3;
  double threshold = 0.3, sigma = 0.5, min_score = 1e-3, offset = 0;
  int method = 1;
  box_kind kind = BOXES_SMALL;
  if (q->variant == VS_RANDOM) {
    const uint64_t k = q->seed % VS_RANDOM_SEEDS;
    n = random_counts[k], threshold = thresholds[k], method = methods[k], sigma = sigmas[k];
    offset = k == 2 ? 1 : 0, min_score = k == 3 ? 0.05 : 1e-3;
    kind = BOXES_MIXED, categories = 5;
  } else if (q->variant == VS_EDGE) {
    n = q->seed % VS_EDGE_SEEDS == 0 ? 0 : 40;
    kind = BOXES_DEGENERATE, method = 0, threshold = 0, min_score = 0.2;
  } else if (q->variant == VS_MODEL) {
    n = 5000, kind = BOXES_DETECTIONS, categories = 80, method = 2;
  }
  double *b = xmalloc(sizeof(double) * (size_t)(4 * n));
  double *sc = xmalloc(sizeof(double) * (size_t)n);
  double *ids = xmalloc(sizeof(double) * (size_t)n);
  gen_boxes(kind, q->rng, n, b);
  for (int64_t i = 0; i < n; i++) {
    sc[i] = q->variant == VS_EDGE     ? (i % 3 == 0 ? 0.1 : 0.5)
            : q->variant == VS_RANDOM ? floor(vt_rng_uniform(q->rng, 0, 8)) / 8
                                      : vt_rng_uniform(q->rng, 0, 1);
    ids[i] = (double)vt_rng_int(q->rng, categories);
  }
  if (q->variant == VS_EDGE && n > 0) sc[5] = NAN, sc[7] = INFINITY, sc[11] = -INFINITY;
  if (q->variant == VS_MODEL) log_spaced_scores(q->rng, n, sc);
  const int64_t bs[2] = {n, 4}, ss[1] = {n};
  const int tb = add_values(s, q->dt, 2, bs, b);
  arg_tensor(s, tb);
  arg_tensor(s, add_values(s, q->dt, 1, ss, sc));
  if (batched) arg_tensor(s, add_values(s, vt_i64, 1, ss, ids));
  arg_float(s, threshold);
  arg_float(s, sigma);
  arg_float(s, min_score);
  arg_int(s, method);
  arg_float(s, offset);
  s->shape_tensor = tb;
  s->note = q->variant == VS_MODEL ? "5,000 detections, gaussian" : NULL;
  free(b);
  free(sc);
  free(ids);
}
static void sample_soft_nms(vs_sample *s, const vs_params *q) { build_soft_nms_common(s, q, 0); }
static void sample_batched_soft_nms(vs_sample *s, const vs_params *q) {
  build_soft_nms_common(s, q, 1);
}

/* matrix_nms: boxes [B, M, 4] per image, scores [B, C, M]. Random: four
 * mixes of B x C x M, kernels, conventions, background label and top-k
 * limits (seed 1 has no boxes), scores on a grid of 1/16 so that ties and
 * duplicate boxes (K_j = 1) occur; edge: empty batches and classes, or
 * degenerate boxes with equal scores in the pixel convention; model: a
 * YOLO-like head (80 classes, 1,000 boxes per image). */
static void sample_matrix_nms(vs_sample *s, const vs_params *q) {
  static const int64_t rb[VS_RANDOM_SEEDS] = {2, 3, 1, 2}, rc[VS_RANDOM_SEEDS] = {3, 2, 4, 5};
  static const int64_t rm[VS_RANDOM_SEEDS] = {40, 0, 97, 64};
  static const int64_t top[VS_RANDOM_SEEDS] = {-1, 5, 30, 16},
                       keep[VS_RANDOM_SEEDS] = {-1, 7, 50, 20};
  int64_t nb = 1, nc = 2, m = 6, nms_top_k = -1, keep_top_k = -1, background = -1;
  int gaussian = 0, normalized = 1;
  double score_threshold = 0.1, post_threshold = 0.05, sigma = 2.0;
  box_kind kind = BOXES_SMALL;
  const uint64_t seed = q->seed;
  if (q->variant == VS_RANDOM) {
    const int v = (int)(seed % VS_RANDOM_SEEDS);
    nb = rb[v], nc = rc[v], m = rm[v], nms_top_k = top[v], keep_top_k = keep[v];
    gaussian = v % 2, normalized = v != 2, background = v == 3 ? 0 : -1;
    sigma = v == 3 ? 0.5 : 2.0;
    kind = BOXES_MIXED;
  } else if (q->variant == VS_EDGE) {
    if (seed % VS_EDGE_SEEDS == 0) {
      nb = 2, nc = 0, m = 3, keep_top_k = 4;
    } else {
      nb = 2, nc = 3, m = 24, normalized = 0, score_threshold = 0.0, post_threshold = 0.0;
      kind = BOXES_DEGENERATE;
    }
  } else if (q->variant == VS_MODEL) {
    nb = 4, nc = 80, m = 1000, nms_top_k = 200, keep_top_k = 100, gaussian = 1;
    score_threshold = 0.05;
    kind = BOXES_DETECTIONS;
  }
  double *b = xmalloc(sizeof(double) * (size_t)(4 * nb * m));
  double *sc = xmalloc(sizeof(double) * (size_t)(nb * nc * m));
  for (int64_t i = 0; i < nb; i++) gen_boxes(kind, q->rng, m, b + 4 * i * m);
  for (int64_t i = 0; i < nb * nc * m; i++)
    sc[i] = q->variant == VS_EDGE    ? 0.5
            : q->variant == VS_MODEL ? vt_rng_uniform(q->rng, 0, 1)
                                     : floor(vt_rng_uniform(q->rng, 0, 16)) / 16;
  const int64_t bs[3] = {nb, m, 4}, ss[3] = {nb, nc, m};
  const int tb = add_values(s, q->dt, 3, bs, b);
  arg_tensor(s, tb);
  arg_tensor(s, add_values(s, q->dt, 3, ss, sc));
  arg_float(s, score_threshold);
  arg_float(s, post_threshold);
  arg_int(s, nms_top_k);
  arg_int(s, keep_top_k);
  arg_bool(s, gaussian);
  arg_float(s, sigma);
  arg_int(s, background);
  arg_bool(s, normalized);
  s->shape_tensor = tb;
  s->note = q->variant == VS_MODEL ? "YOLO-like head, 80 classes" : NULL;
  free(b);
  free(sc);
}

/* ------------------------------------------------------------ the table */

/* One builder per op of ops.def, in its order: an op without sample_<name>
 * above is a build error ("used but never defined", then undefined). */
typedef void (*vs_builder)(vs_sample *s, const vs_params *q);
#define VO_OP(name, kernel, schema, backward, shape_rule) \
  static void sample_##name(vs_sample *s, const vs_params *q);
#include "ops/ops.def"
#undef VO_OP
static const vs_builder builders[] = {
#define VO_OP(name, kernel, schema, backward, shape_rule) sample_##name,
#include "ops/ops.def"
#undef VO_OP
};
#define NUM_BUILDERS ((int)(sizeof builders / sizeof builders[0]))

const char *vs_variant_name(vs_variant variant) {
  switch (variant) {
    case VS_RANDOM: return "random";
    case VS_EDGE: return "edge";
    case VS_SMALL: return "small";
    case VS_MODEL: return "model";
    default: return "?";
  }
}

void vs_build(vs_sample *s, int op_index, vs_variant variant, DLDataType dtype, uint64_t seed) {
  vs_build_as(s, op_index, variant, dtype, seed, VS_SEED_LAYOUT);
}

void vs_build_as(vs_sample *s, int op_index, vs_variant variant, DLDataType dtype, uint64_t seed,
                 vs_layout layout) {
  const vo_op_info *op = vo_op_get(op_index);
  if (!op) die("no such op", NULL);
  if (op_index >= NUM_BUILDERS || vo_op_count() != NUM_BUILDERS)
    die("the library's ops are not tests/samples' ops.def", op->name);
  memset(s, 0, sizeof *s);
  s->op = op;
  snprintf(s->label, sizeof s->label, "%s %s %s seed %llu", op->name, vt_dtype_name(dtype),
           vs_variant_name(variant), (unsigned long long)seed);
  s->list_arg = -1;
  s->rois_tensor = -1;
  s->shape_tensor = -1;
  s->num_outputs = op->num_outputs;
  for (int i = 0; i < VS_MAX_ARGS; i++) s->tensor_of[i] = -1;
  if (variant == VS_RANDOM && seed % VS_RANDOM_SEEDS == 2) s->layout = VS_STRIDED;
  if (variant == VS_RANDOM && seed % VS_RANDOM_SEEDS == 3) s->layout = VS_CHANNELS_LAST;
  if (layout != VS_SEED_LAYOUT) s->layout = layout;
  if (s->layout == VS_FLIPPED) {
    const size_t n = strlen(s->label);
    snprintf(s->label + n, sizeof s->label - n, " flipped");
  }
  vt_rng rng;
  vt_rng_seed(&rng, 7919u * (uint64_t)(op_index + 1) + 101u * (uint64_t)variant +
                        1000003u * (uint64_t)dtype.bits + 13u * (uint64_t)dtype.code + seed);
  const vs_params q = {variant, seed, dtype, &rng};
  builders[op_index](s, &q);
}

void vs_free(vs_sample *s) {
  for (int i = 0; i < s->num_tensors; i++) vt_tensor_free(s->tensors[i]);
  s->num_tensors = 0;
}

/* ------------------------------------------------------------ tolerances */

vs_tolerance vs_tolerance_of(int op_index, int output, DLDataType dt) {
  (void)op_index, (void)output; /* one rule serves every op today */
  vs_tolerance t = {0, 2};
  if (dt.code == kDLBfloat)
    t.rel = 1e-2;
  else if (dt.code == kDLFloat && dt.bits == 16)
    t.rel = 5e-3;
  else if (dt.code == kDLFloat && dt.bits == 32)
    t.rel = 1e-5;
  else if (dt.code == kDLFloat)
    t.rel = 1e-9;
  return t;
}
