/*
 * visionops_bench: times each op at model-sized inputs on the CPU, at one
 * thread and at all threads, and prints medians (a Markdown table with
 * --markdown). It is what `make bench` falls back to where /usr/bin/python3
 * lacks torch/torchvision (the side-by-side comparison is
 * bench/compare_torchvision.py). --quick: one timed run per cell. --load:
 * with one busy process per core in the background (bench/contention.py is
 * the same with torch), flagging ops whose all-threads time is over 1.5x
 * their 1-thread time. An op without a case of its own here is timed on
 * its model-sized sample from the test sample registry (tests/samples), so
 * a new op is timed with no edit here.
 * Benchmarks are never tests: nothing here fails on speed.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "samples/samples.h"
#include "visionops/visionops.h"

#define MAX_TENSORS 8
#define MAX_ARGS VS_MAX_ARGS

/* ------------------------------------------------------------ inputs */

static uint64_t rng_state = 0x5eed;
static double uniform(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

typedef struct tensor {
  DLTensor t;
  int64_t shape[4];
} tensor;

static tensor *tensor_new(DLDataType dtype, int ndim, const int64_t *shape) {
  tensor *x = calloc(1, sizeof *x);
  if (!x) return NULL;
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)(x->shape[i] = shape[i]);
  x->t.data = calloc(n ? n : 1, dtype.bits / 8);
  if (!x->t.data) {
    free(x);
    return NULL;
  }
  x->t.device = (DLDevice){kDLCPU, 0};
  x->t.ndim = ndim;
  x->t.dtype = dtype;
  x->t.shape = x->shape;
  return x;
}

static void tensor_free(tensor *x) {
  if (x) free(x->t.data);
  free(x);
}

static const DLDataType F32 = {kDLFloat, 32, 1};
static const DLDataType I64 = {kDLInt, 64, 1};

/* Box i of n detector-like boxes (cx, cy, w, h and, with `angle`, an angle
 * in degrees): clusters of jittered boxes around n / 30 + 1 objects in a
 * 1333x800 image (the object's own draws seeded from `seed`), so NMS
 * suppresses as it does on real detections. */
static void detection(int64_t i, int64_t n, uint64_t seed, double *angle, double box[4]) {
  const int64_t objects = n / 30 + 1;
  uint64_t saved = rng_state;
  rng_state = seed + (uint64_t)(i % objects) * 7919u;
  double cx = uniform() * 1333, cy = uniform() * 800;
  double w = 16 + uniform() * 300, h = 16 + uniform() * 300;
  const double a = uniform() * 180 - 90;
  rng_state = saved + 1;
  box[0] = cx + (uniform() - 0.5) * 0.2 * w;
  box[1] = cy + (uniform() - 0.5) * 0.2 * h;
  box[2] = w * (0.8 + 0.4 * uniform());
  box[3] = h * (0.8 + 0.4 * uniform());
  if (angle) *angle = a + (uniform() - 0.5) * 10;
}

/* n detections as (x1, y1, x2, y2). */
static tensor *detections(int64_t n) {
  int64_t shape[2] = {n, 4};
  tensor *x = tensor_new(F32, 2, shape);
  if (!x) return NULL;
  float *b = x->t.data;
  for (int64_t i = 0; i < n; i++) {
    double d[4];
    detection(i, n, 0xb0c5, NULL, d);
    b[4 * i + 0] = (float)(d[0] - d[2] / 2);
    b[4 * i + 1] = (float)(d[1] - d[3] / 2);
    b[4 * i + 2] = (float)(d[0] + d[2] / 2);
    b[4 * i + 3] = (float)(d[1] + d[3] / 2);
  }
  return x;
}

/* n rotated detections (cx, cy, w, h, angle in degrees): each object at its
 * own angle, its copies within a few degrees of it. */
static tensor *rotated_detections(int64_t n) {
  int64_t shape[2] = {n, 5};
  tensor *x = tensor_new(F32, 2, shape);
  if (!x) return NULL;
  float *b = x->t.data;
  for (int64_t i = 0; i < n; i++) {
    double d[4], a;
    detection(i, n, 0x5107, &a, d);
    for (int k = 0; k < 4; k++) b[5 * i + k] = (float)d[k];
    b[5 * i + 4] = (float)a;
  }
  return x;
}

static tensor *uniform_tensor(int ndim, const int64_t *shape, double lo, double hi) {
  tensor *x = tensor_new(F32, ndim, shape);
  if (!x) return NULL;
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  float *p = x->t.data;
  for (size_t i = 0; i < n; i++) p[i] = (float)(lo + (hi - lo) * uniform());
  return x;
}

/* k RoIs [k,5] over n images of an 800x1088 image (x2 > x1, y2 > y1), sizes
 * log-uniform from 16 to 512 pixels as proposals after NMS are. */
static tensor *proposals(int64_t k, int64_t n) {
  int64_t shape[2] = {k, 5};
  tensor *x = tensor_new(F32, 2, shape);
  if (!x) return NULL;
  float *r = x->t.data;
  for (int64_t i = 0; i < k; i++) {
    double w = 16 * pow(32, uniform()), h = 16 * pow(32, uniform());
    double x1 = uniform() * (1088 - w), y1 = uniform() * (800 - h);
    r[5 * i + 0] = (float)(int64_t)(uniform() * (double)n);
    r[5 * i + 1] = (float)x1;
    r[5 * i + 2] = (float)y1;
    r[5 * i + 3] = (float)(x1 + w);
    r[5 * i + 4] = (float)(y1 + h);
  }
  return x;
}

static tensor *categories(int64_t n, int64_t classes) {
  tensor *x = tensor_new(I64, 1, &n);
  if (!x) return NULL;
  int64_t *c = x->t.data;
  for (int64_t i = 0; i < n; i++) c[i] = (int64_t)(uniform() * (double)classes);
  return x;
}

/* ------------------------------------------------------------- cases */

typedef struct bench_case {
  const char *op;
  const char *label;
  vo_value args[MAX_ARGS];
  int num_args;
  tensor *owned[MAX_TENSORS];
  int num_owned;
  const DLTensor *items[MAX_TENSORS]; /* what a Tensor[] argument points into */
  int num_list_outputs;               /* an op returning Tensor[]: its length */
  vs_sample *sample;                  /* a registry sample's case: its arguments' owner */
} bench_case;

static void add_tensor(bench_case *c, tensor *x) {
  c->owned[c->num_owned++] = x;
  c->args[c->num_args++] = vo_tensor_value(x ? &x->t : NULL);
}

static void add_value(bench_case *c, vo_value v) { c->args[c->num_args++] = v; }

/* A Tensor[] argument of n new tensors. */
static void add_tensor_list(bench_case *c, tensor *const *xs, int n) {
  for (int i = 0; i < n; i++) {
    c->owned[c->num_owned++] = xs[i];
    c->items[i] = xs[i] ? &xs[i]->t : NULL;
  }
  c->args[c->num_args++] = vo_tensor_list_value(c->items, n);
}

static void build_case(bench_case *c, const char *op, const char *label) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->label = label;
}

static int make_more_roi_cases(bench_case *cases, int n, int max);
static int make_rotated_roi_cases(bench_case *cases, int n, int max);
static int make_pyramid_and_iou_backward_cases(bench_case *cases, int n, int max);

/* The cases: sizes from the detection models the ops serve. */
static int make_cases(bench_case *cases, int max) {
  int n = 0;
  static const int64_t nms_sizes[] = {1000, 5000, 20000};
  static const char *nms_labels[] = {"1,000 boxes", "5,000 boxes", "20,000 boxes"};
  for (int i = 0; i < 3 && n < max; i++, n++) {
    build_case(&cases[n], "nms", nms_labels[i]);
    add_tensor(&cases[n], detections(nms_sizes[i]));
    add_tensor(&cases[n], uniform_tensor(1, &nms_sizes[i], 0, 1));
    add_value(&cases[n], vo_float_value(0.5));
  }
  if (n < max) {
    int64_t k = 20000;
    build_case(&cases[n], "batched_nms", "20,000 boxes, 80 classes");
    add_tensor(&cases[n], detections(k));
    add_tensor(&cases[n], uniform_tensor(1, &k, 0, 1));
    add_tensor(&cases[n], categories(k, 80));
    add_value(&cases[n], vo_float_value(0.5));
    n++;
  }
  static const int64_t rotated_sizes[] = {5000, 20000};
  static const char *rotated_labels[] = {"5,000 oriented boxes", "20,000 oriented boxes"};
  for (int i = 0; i < 2 && n < max; i++, n++) {
    build_case(&cases[n], "nms_rotated", rotated_labels[i]);
    add_tensor(&cases[n], rotated_detections(rotated_sizes[i]));
    add_tensor(&cases[n], uniform_tensor(1, &rotated_sizes[i], 0, 1));
    add_value(&cases[n], vo_float_value(0.5));
  }
  static const char *batched_rotated_labels[] = {"5,000 oriented boxes, 16 classes",
                                                 "20,000 oriented boxes, 16 classes"};
  for (int i = 0; i < 2 && n < max; i++, n++) {
    build_case(&cases[n], "batched_nms_rotated", batched_rotated_labels[i]);
    add_tensor(&cases[n], rotated_detections(rotated_sizes[i]));
    add_tensor(&cases[n], uniform_tensor(1, &rotated_sizes[i], 0, 1));
    add_tensor(&cases[n], categories(rotated_sizes[i], 16));
    add_value(&cases[n], vo_float_value(0.5));
  }
  static const char *pairwise[] = {"box_iou", "generalized_box_iou", "distance_box_iou",
                                   "complete_box_iou"};
  for (int i = 0; i < 4 && n < max; i++, n++) {
    build_case(&cases[n], pairwise[i], i == 0 ? "5,000 x 5,000" : "1,000 x 1,000");
    int64_t rows = i == 0 ? 5000 : 1000;
    add_tensor(&cases[n], detections(rows));
    add_tensor(&cases[n], detections(rows));
  }
  if (n < max) { /* issue 15: rotated detections, every pair */
    build_case(&cases[n], "box_iou_rotated", "2,000 x 2,000");
    add_tensor(&cases[n], rotated_detections(2000));
    add_tensor(&cases[n], rotated_detections(2000));
    for (int k = 0; k < 3; k++) add_value(&cases[n], vo_bool_value(0)); /* iou, ccw, degrees */
    n++;
  }
  /* RoI heads: Faster R-CNN box head (7x7) and Mask R-CNN mask head (14x14)
   * on a stride-4 feature map of two 800x1088 images, 1,000 RoIs. */
  static const int64_t heads[2] = {7, 14};
  static const char *fwd_labels[2] = {"box head 2x256x200x272, 1000 RoIs, 7x7",
                                      "mask head 2x256x200x272, 1000 RoIs, 14x14"};
  const int64_t fmap[4] = {2, 256, 200, 272};
  for (int h = 0; h < 2 && n + 2 <= max; h++) {
    int64_t gshape[4] = {1000, 256, heads[h], heads[h]};
    build_case(&cases[n], "roi_align", fwd_labels[h]);
    add_tensor(&cases[n], uniform_tensor(4, fmap, -1, 1));
    add_tensor(&cases[n], proposals(1000, 2));
    add_value(&cases[n], vo_float_value(0.25));
    add_value(&cases[n], vo_int_value(heads[h]));
    add_value(&cases[n], vo_int_value(heads[h]));
    add_value(&cases[n], vo_int_value(2));
    add_value(&cases[n], vo_bool_value(1));
    n++;
    build_case(&cases[n], "roi_align_backward", fwd_labels[h]);
    add_tensor(&cases[n], uniform_tensor(4, gshape, -1, 1));
    add_tensor(&cases[n], proposals(1000, 2));
    add_value(&cases[n], vo_float_value(0.25));
    add_value(&cases[n], vo_int_value(heads[h]));
    add_value(&cases[n], vo_int_value(heads[h]));
    for (int d = 0; d < 4; d++) add_value(&cases[n], vo_int_value(fmap[d]));
    add_value(&cases[n], vo_int_value(2));
    add_value(&cases[n], vo_bool_value(1));
    n++;
  }
  n = make_more_roi_cases(cases, n, max);
  n = make_rotated_roi_cases(cases, n, max);
  n = make_pyramid_and_iou_backward_cases(cases, n, max);
  /* DCN (deformable conv v2) as in a ResNet stage: 2x256x64x64, 3x3, 256
   * out, offset groups 1, with mask, padding 1. */
  const int64_t x_shape[4] = {2, 256, 64, 64}, w_shape[4] = {256, 256, 3, 3};
  const int64_t o_shape[4] = {2, 18, 64, 64}, m_shape[4] = {2, 9, 64, 64}, b_shape[1] = {256};
  for (int back = 0; back < 2 && n < max; back++, n++) {
    build_case(&cases[n], back ? "deform_conv2d_backward" : "deform_conv2d",
               "2x256x64x64, 3x3, 256 out, mask");
    if (back) add_tensor(&cases[n], uniform_tensor(4, x_shape, -1, 1)); /* grad: same shape */
    add_tensor(&cases[n], uniform_tensor(4, x_shape, -1, 1));
    add_tensor(&cases[n], uniform_tensor(4, w_shape, -0.05, 0.05));
    add_tensor(&cases[n], uniform_tensor(4, o_shape, -2, 2));
    add_tensor(&cases[n], uniform_tensor(4, m_shape, 0, 1));
    add_tensor(&cases[n], uniform_tensor(1, b_shape, -1, 1));
    static const int64_t ints[8] = {1, 1, 1, 1, 1, 1, 1, 1}; /* stride, pad, dilation, groups */
    for (int i = 0; i < 8; i++) add_value(&cases[n], vo_int_value(ints[i]));
    add_value(&cases[n], vo_bool_value(1));
  }
  return n;
}

/* Output `which` of running `op` on `c`'s arguments once: the saved tensor
 * (argmax, channel_mapping) a backward case needs. NULL on failure. */
static tensor *forward_output(const char *op_name, const bench_case *c, int which) {
  const vo_op_info *op = vo_op_find(op_name);
  vo_tensor_desc desc[4];
  if (!op || op->num_outputs < 1 || op->num_outputs > 4 ||
      vo_infer(NULL, op, c->args, c->num_args, desc, op->num_outputs) != VO_OK)
    return NULL;
  tensor *outs[4] = {0};
  DLTensor *ptrs[4];
  int ok = 1;
  for (int k = 0; k < op->num_outputs; k++) {
    outs[k] = tensor_new(desc[k].dtype, desc[k].ndim, desc[k].shape);
    ok &= outs[k] != NULL;
    ptrs[k] = outs[k] ? &outs[k]->t : NULL;
  }
  if (ok) ok = vo_call(NULL, op, c->args, c->num_args, ptrs, op->num_outputs) == VO_OK;
  tensor *keep = ok ? outs[which] : NULL;
  for (int k = 0; k < op->num_outputs; k++)
    if (outs[k] != keep) tensor_free(outs[k]);
  return keep;
}

/* The RoI ops beyond roi_align at the same head sizes: roi_pool (7x7, 14x14),
 * the position-sensitive ops with 7x7 bins over 490 channels (R-FCN), and
 * multi_scale_roi_align on a 4-level FPN pyramid. Backward cases get the
 * forward's saved outputs. */
static int make_more_roi_cases(bench_case *cases, int n, int max) {
  const int64_t fmap[4] = {2, 256, 200, 272}, psmap[4] = {2, 490, 200, 272};
  static const int64_t heads[2] = {7, 14};
  static const char *labels[2] = {"box head 2x256x200x272, 1000 RoIs, 7x7",
                                  "mask head 2x256x200x272, 1000 RoIs, 14x14"};
  for (int h = 0; h < 2 && n + 2 <= max; h++) {
    bench_case *f = &cases[n++];
    build_case(f, "roi_pool", labels[h]);
    add_tensor(f, uniform_tensor(4, fmap, -1, 1));
    add_tensor(f, proposals(1000, 2));
    add_value(f, vo_float_value(0.25));
    add_value(f, vo_int_value(heads[h]));
    add_value(f, vo_int_value(heads[h]));
    bench_case *b = &cases[n++];
    int64_t gshape[4] = {1000, 256, heads[h], heads[h]};
    build_case(b, "roi_pool_backward", labels[h]);
    add_tensor(b, uniform_tensor(4, gshape, -1, 1));
    add_value(b, f->args[1]); /* the forward's RoIs, so its argmax fits */
    add_tensor(b, forward_output("roi_pool", f, 1));
    add_value(b, vo_float_value(0.25));
    add_value(b, vo_int_value(heads[h]));
    add_value(b, vo_int_value(heads[h]));
    for (int d = 0; d < 4; d++) add_value(b, vo_int_value(fmap[d]));
  }
  static const char *ps_ops[2] = {"ps_roi_align", "ps_roi_pool"};
  for (int o = 0; o < 2 && n + 2 <= max; o++) {
    int align = o == 0;
    bench_case *f = &cases[n++];
    build_case(f, ps_ops[o], "2x490x200x272, 1000 RoIs, 7x7");
    add_tensor(f, uniform_tensor(4, psmap, -1, 1));
    add_tensor(f, proposals(1000, 2));
    add_value(f, vo_float_value(0.25));
    add_value(f, vo_int_value(7));
    add_value(f, vo_int_value(7));
    if (align) add_value(f, vo_int_value(2));
    bench_case *b = &cases[n++];
    int64_t gshape[4] = {1000, 10, 7, 7};
    build_case(b, align ? "ps_roi_align_backward" : "ps_roi_pool_backward",
               "2x490x200x272, 1000 RoIs, 7x7");
    add_tensor(b, uniform_tensor(4, gshape, -1, 1));
    add_value(b, f->args[1]);
    add_tensor(b, forward_output(ps_ops[o], f, 1));
    add_value(b, vo_float_value(0.25));
    add_value(b, vo_int_value(7));
    add_value(b, vo_int_value(7));
    if (align) add_value(b, vo_int_value(2));
    for (int d = 0; d < 4; d++) add_value(b, vo_int_value(psmap[d]));
  }
  return n;
}

/* roi_align_rotated (and its backward) at the box-head size of its model
 * sample (a stride-16 map of two 800x1088 images, 512 RoIs, 7x7, 2x2
 * samples per bin), beside roi_align on the same map and the same RoIs
 * unrotated: proposals (cx, cy, w, h) with angles uniform in [-90, 90). */
static int make_rotated_roi_cases(bench_case *cases, int n, int max) {
  static const char *label = "box head 2x256x50x68, 512 RoIs, 7x7";
  const int64_t fmap[4] = {2, 256, 50, 68}, gshape[4] = {512, 256, 7, 7}, rshape[2] = {512, 6};
  if (n + 3 > max) return n;
  /* each case owns its tensors: the backward gets a copy of the RoIs */
  tensor *xyxy = proposals(512, 2), *rot = tensor_new(F32, 2, rshape);
  tensor *rot2 = tensor_new(F32, 2, rshape);
  if (!xyxy || !rot || !rot2) {
    tensor_free(xyxy);
    tensor_free(rot);
    tensor_free(rot2);
    return n;
  }
  const float *a = xyxy->t.data;
  float *r = rot->t.data;
  for (int64_t i = 0; i < 512; i++, a += 5, r += 6) {
    r[0] = a[0];
    r[1] = (a[1] + a[3]) / 2, r[2] = (a[2] + a[4]) / 2;
    r[3] = a[3] - a[1], r[4] = a[4] - a[2];
    r[5] = (float)(180 * uniform() - 90);
  }
  memcpy(rot2->t.data, rot->t.data, sizeof(float) * 512 * 6);
  for (int op = 0; op < 3; op++, n++) {
    bench_case *c = &cases[n];
    build_case(c,
               op == 0   ? "roi_align"
               : op == 1 ? "roi_align_rotated"
                         : "roi_align_rotated_backward",
               label);
    add_tensor(c, uniform_tensor(4, op == 2 ? gshape : fmap, -1, 1));
    add_tensor(c, op == 0 ? xyxy : op == 1 ? rot : rot2);
    add_value(c, vo_float_value(1.0 / 16));
    add_value(c, vo_int_value(7));
    add_value(c, vo_int_value(7));
    for (int d = 0; op == 2 && d < 4; d++) add_value(c, vo_int_value(fmap[d]));
    add_value(c, vo_int_value(2));
    add_value(c, vo_bool_value(1));
  }
  return n;
}

/* multi_scale_roi_align (and its backward) on an FPN pyramid P2..P5 of two
 * 800x1088 images, 256 channels, 1000 RoIs, 7x7; the IoU ops' backward at
 * 1,000 x 1,000. */
static int make_pyramid_and_iou_backward_cases(bench_case *cases, int n, int max) {
  static const double scales[4] = {0.25, 0.125, 0.0625, 0.03125};
  const char *label = "FPN 2x256x200x272..25x34, 1000 RoIs, 7x7";
  for (int back = 0; back < 2 && n < max; back++, n++) {
    bench_case *c = &cases[n];
    build_case(c, back ? "multi_scale_roi_align_backward" : "multi_scale_roi_align", label);
    tensor *levels[4];
    for (int l = 0; l < 4; l++) {
      const int64_t shape[4] = {2, 256, 200 >> l, 272 >> l};
      levels[l] = uniform_tensor(4, shape, -1, 1);
    }
    if (back) {
      const int64_t gshape[4] = {1000, 256, 7, 7};
      add_tensor(c, uniform_tensor(4, gshape, -1, 1));
      add_tensor(c, proposals(1000, 2));
      add_tensor_list(c, levels, 4);
      c->num_list_outputs = 4; /* one gradient per level */
    } else {
      add_tensor_list(c, levels, 4);
      add_tensor(c, proposals(1000, 2));
    }
    add_value(c, vo_float_list_value(scales, 4));
    add_value(c, vo_int_value(7));
    add_value(c, vo_int_value(7));
    add_value(c, vo_int_value(2));
  }
  static const char *pairwise[] = {"box_iou_backward", "generalized_box_iou_backward",
                                   "distance_box_iou_backward", "complete_box_iou_backward"};
  const int64_t gshape[2] = {1000, 1000};
  for (int i = 0; i < 4 && n < max; i++, n++) {
    build_case(&cases[n], pairwise[i], "1,000 x 1,000");
    add_tensor(&cases[n], uniform_tensor(2, gshape, -1, 1));
    add_tensor(&cases[n], detections(1000));
    add_tensor(&cases[n], detections(1000));
    if (i >= 2) add_value(&cases[n], vo_float_value(1e-7));
  }
  return n;
}

/* Cases for the ops that have none above: each op's model-sized float32
 * sample of the registry (what tests/python/gpu_compare.py times too). */
static int make_registry_cases(bench_case *cases, int n, int max) {
  for (int i = 0; i < vo_op_count() && n < max; i++) {
    const char *name = vo_op_get(i)->name;
    int found = 0;
    for (int j = 0; j < n; j++) found |= strcmp(cases[j].op, name) == 0;
    if (found) continue;
    vs_sample *s = malloc(sizeof *s);
    if (!s) break;
    vs_build(s, i, VS_MODEL, vt_f32, 0);
    bench_case *c = &cases[n++];
    build_case(c, name, "registry model sample");
    c->sample = s;
    c->num_args = s->num_args;
    memcpy(c->args, s->args, sizeof(vo_value) * (size_t)s->num_args);
    c->num_list_outputs = s->num_outputs;
  }
  return n;
}

static void free_case(bench_case *c) {
  for (int i = 0; i < c->num_owned; i++) tensor_free(c->owned[i]);
  if (c->sample) {
    vs_free(c->sample);
    free(c->sample);
  }
}

/* ------------------------------------------------------------ timing */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median milliseconds of `reps` runs after one warm-up; < 0 on error. */
static double time_case(const bench_case *c, const vo_context *ctx, int reps) {
  const vo_op_info *op = vo_op_find(c->op);
  if (!op) {
    fprintf(stderr, "bench: no op %s in this build\n", c->op);
    return -1;
  }
  const int num_outputs = op->num_outputs >= 0 ? op->num_outputs : c->num_list_outputs;
  vo_tensor_desc desc[5];
  if (num_outputs < 1 || num_outputs > 5 ||
      vo_infer(ctx, op, c->args, c->num_args, desc, num_outputs) != VO_OK) {
    fprintf(stderr, "bench: %s\n", vo_last_error());
    return -1;
  }
  tensor *outs[5] = {0};
  DLTensor *out_ptrs[5];
  double result = -1;
  for (int k = 0; k < num_outputs; k++) {
    outs[k] = tensor_new(desc[k].dtype, desc[k].ndim, desc[k].shape);
    if (!outs[k]) goto done;
    out_ptrs[k] = &outs[k]->t;
  }
  double *times = malloc(sizeof(double) * (size_t)reps);
  if (!times) goto done;
  for (int r = -1; r < reps; r++) {
    double t0 = now_ms();
    if (vo_call(ctx, op, c->args, c->num_args, out_ptrs, num_outputs) != VO_OK) {
      fprintf(stderr, "bench: %s\n", vo_last_error());
      free(times);
      goto done;
    }
    if (r >= 0) times[r] = now_ms() - t0;
  }
  qsort(times, (size_t)reps, sizeof *times, cmp_double);
  result = times[reps / 2];
  free(times);
done:
  for (int k = 0; k < num_outputs; k++) tensor_free(outs[k]);
  return result;
}

/* n busy child processes (the background load of --load); their pids go
 * to pids, the count started is returned. */
static int start_load(pid_t *pids, int n) {
  int started = 0;
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      volatile unsigned long spin = 0;
      for (;;) spin++;
    }
    if (pid > 0) pids[started++] = pid;
  }
  return started;
}

static void stop_load(const pid_t *pids, int n) {
  for (int i = 0; i < n; i++) kill(pids[i], SIGTERM);
  for (int i = 0; i < n; i++) waitpid(pids[i], NULL, 0);
}

int main(int argc, char **argv) {
  int reps = 11, markdown = 0, load = 0;
  const char *filter = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc) {
      filter = argv[++i];
    } else if (strcmp(argv[i], "--markdown") == 0) {
      markdown = 1;
    } else if (strcmp(argv[i], "--quick") == 0) {
      reps = 1;
    } else if (strcmp(argv[i], "--load") == 0) {
      load = 1;
    } else {
      fprintf(
          stderr,
          "usage: %s [--reps N] [--quick] [--load] [--filter OP_OR_CASE_SUBSTRING] [--markdown]\n",
          argv[0]);
      return 2;
    }
  }
  if (reps < 1) reps = 1;

  vo_context *one = NULL, *all = NULL;
  if (vo_context_create(&one) != VO_OK || vo_context_create(&all) != VO_OK) return 1;
  vo_context_set_num_threads(one, 1);
  const int threads = vo_context_num_threads(all);

  bench_case cases[64];
  int n = make_registry_cases(cases, make_cases(cases, 64), 64);
  pid_t pids[256];
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const int loaded = load ? start_load(pids, cpus < 1 ? 1 : cpus > 256 ? 256 : (int)cpus) : 0;
  if (load) printf("background load: %d busy processes\n", loaded);
  char all_title[32];
  snprintf(all_title, sizeof all_title, "%d threads (ms)", threads);
  if (markdown)
    printf("| op | case | 1 thread (ms) | %s | speed-up |\n|---|---|---|---|---|\n", all_title);
  else
    printf("%-22s %-28s %14s %16s %9s\n", "op", "case", "1 thread (ms)", all_title, "speed-up");
  int status = 0;
  for (int i = 0; i < n; i++) {
    const bench_case *c = &cases[i];
    if (filter && !strstr(c->op, filter) && !strstr(c->label, filter)) continue;
    int ok = 1;
    for (int k = 0; k < c->num_owned; k++) ok &= c->owned[k] != NULL;
    if (!ok) {
      fprintf(stderr, "bench: could not build the inputs of %s\n", c->op);
      status = 1;
      continue;
    }
    double t1 = time_case(c, one, reps), tn = time_case(c, all, reps);
    if (t1 < 0 || tn < 0) {
      status = 1;
      continue;
    }
    printf(
        markdown ? "| %s | %s | %.3f | %.3f | %.2fx%s |\n" : "%-22s %-28s %14.3f %16.3f %8.2fx%s\n",
        c->op, c->label, t1, tn, t1 / tn, load && tn > 1.5 * t1 ? " (over 1.5x)" : "");
  }
  stop_load(pids, loaded);
  /* Every op of the library has a case (the demo no longer times them). */
  for (int i = 0; !filter && i < vo_op_count(); i++) {
    int found = 0;
    for (int j = 0; j < n; j++) found |= strcmp(cases[j].op, vo_op_get(i)->name) == 0;
    if (!found) {
      fprintf(stderr, "bench: op %s has no case in bench/bench.c\n", vo_op_get(i)->name);
      status = 1;
    }
  }
  for (int i = 0; i < n; i++) free_case(&cases[i]);
  vo_context_destroy(one);
  vo_context_destroy(all);
  return status;
}
