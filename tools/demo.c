/* `visionops demo`: synthesises one detector's output for an image and runs
 * its post-processing on each usable backend: NMS over the detections (as
 * torchvision's batched_nms, as a deployment's fixed-shape per-image NMS,
 * and as per-class soft-NMS), their overlap with the objects, and the RoI ops a second stage pools
 * the kept detections with; prints a table (time, result, agreement with the CPU) and draws
 * nms.svg. Every op in every dtype against the CPU is tests/test_backend_ops.c's; timing every op
 * is bench/bench.c's (CPU) and tests/python/gpu_compare.py's (CUDA, beside torchvision). */
#define _POSIX_C_SOURCE 200809L

#include "demo.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "svg.h"
#include "visionops/visionops.h"

#ifdef VISIONOPS_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#ifdef VISIONOPS_HAVE_OPENCL
#include "demo_opencl.h"
#endif

#define IMAGE_W 1333.0
#define IMAGE_H 800.0
#define MAX_OBJECTS 150
#define BOXES_PER_OBJECT 33 /* 150 objects for the default 5,000 boxes */
#define BACKGROUND_FRACTION 0.15
#define IOU_THRESHOLD 0.5
#define SCORE_CUTOFF 0.05
#define IOU_ROWS 1000 /* box_iou compares this many detections with the objects */
#define MATCH_IOU 0.5
#define TIMED_RUNS 7
#define DEMO_PI 3.14159265358979323846

/* RoI ops: the top detections pooled from a backbone's feature maps */
#define ROI_COUNT 300 /* a two-stage detector's second stage takes ~300 proposals */
#define ROI_STRIDE 8.0
#define ROI_CHANNELS 64
#define POOLED 7
#define SAMPLING_RATIO 2
#define PS_CHANNELS (POOLED * POOLED * 4) /* position-sensitive: C divisible by PH*PW */
#define PS_STRIDE 16.0 /* R-FCN's score maps are big: a coarser map keeps the demo quick */
#define FPN_LEVELS 4
#define FPN_FIRST_STRIDE 4.0 /* P2..P5: strides 4, 8, 16, 32 */
#define FPN_CHANNELS 16

#define MAX_INPUTS 8 /* multi_scale_roi_align: 4 levels and the RoIs */
#define MAX_ARGS 16
#define MAX_OUTPUTS VO_MAX_LIST

/* ------------------------------------------------------------------ RNG */

/* splitmix64: tiny, seedable with any value, and identical on every platform,
 * unlike rand(). */
typedef struct rng {
  uint64_t state;
} rng;

static uint64_t rng_next(rng *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

static double rng_range(rng *r, double lo, double hi) { return lo + (hi - lo) * rng_uniform(r); }

static int64_t rng_below(rng *r, int64_t n) {
  int64_t k = (int64_t)(rng_uniform(r) * (double)n);
  return k < n ? k : n - 1;
}

static double rng_normal(rng *r) {
  double u1 = 1.0 - rng_uniform(r); /* (0, 1]: log stays finite */
  double u2 = rng_uniform(r);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * DEMO_PI * u2);
}

/* ---------------------------------------------------------------- scene */

typedef struct scene {
  int64_t n;
  int num_classes;
  float *boxes;     /* [n,4] detections */
  float *scores;    /* [n] */
  int64_t *classes; /* [n] */
  int64_t num_objects;
  float *objects;      /* [num_objects,4] ground truth */
  float *class_scores; /* [num_classes,n]: a detection's score in its class, 0 in the others */
} scene;

static void scene_free(scene *s) {
  free(s->boxes);
  free(s->scores);
  free(s->classes);
  free(s->objects);
  free(s->class_scores);
  memset(s, 0, sizeof *s);
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Ordered, inside the image, at least a pixel wide: what a detector's
 * post-processing hands to NMS. */
static void clip_box(double b[4]) {
  double t;
  if (b[2] < b[0]) t = b[0], b[0] = b[2], b[2] = t;
  if (b[3] < b[1]) t = b[1], b[1] = b[3], b[3] = t;
  b[0] = clampd(b[0], 0.0, IMAGE_W - 1.0);
  b[1] = clampd(b[1], 0.0, IMAGE_H - 1.0);
  b[2] = clampd(b[2], b[0] + 1.0, IMAGE_W);
  b[3] = clampd(b[3], b[1] + 1.0, IMAGE_H);
}

static double iou(const double a[4], const double b[4]) {
  double w = fmin(a[2], b[2]) - fmax(a[0], b[0]);
  double h = fmin(a[3], b[3]) - fmax(a[1], b[1]);
  if (w <= 0 || h <= 0) return 0.0;
  double inter = w * h;
  double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  return inter / (area_a + area_b - inter);
}

/* Sizes and aspect ratios log-normal: many small objects, a few big ones. */
static void random_box(rng *r, double median_side, double min_side, double max_side, double b[4]) {
  double w = clampd(median_side * exp(0.75 * rng_normal(r)), min_side, max_side);
  double h = clampd(w * exp(0.4 * rng_normal(r)), min_side, 0.95 * IMAGE_H);
  double x = rng_range(r, 0.0, IMAGE_W - w), y = rng_range(r, 0.0, IMAGE_H - h);
  b[0] = x, b[1] = y, b[2] = x + w, b[3] = y + h;
  clip_box(b);
}

/* Zipf-like class frequencies, as in COCO where "person" dominates. */
static int64_t sample_class(rng *r, const double *cdf, int num_classes) {
  double u = rng_uniform(r) * cdf[num_classes - 1];
  int lo = 0, hi = num_classes - 1;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (cdf[mid] > u)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

static void store_box(float *dst, const double b[4]) {
  for (int k = 0; k < 4; ++k) dst[k] = (float)b[k];
}

/* Objects with a cluster of jittered proposals each (score falling with the
 * jitter, now and then the wrong class), some crowded together so NMS has
 * real decisions to make, plus low-score background boxes; shuffled, as a
 * detector's flattened per-class output is in no useful order. */
static int generate_scene(const demo_options *opt, scene *s) {
  memset(s, 0, sizeof *s);
  int64_t n = opt->num_boxes;
  int nc = opt->num_classes;
  if (n < 1 || nc < 1) return -1;
  int64_t num_objects = n / BOXES_PER_OBJECT;
  if (num_objects > MAX_OBJECTS) num_objects = MAX_OBJECTS;
  if (num_objects < 1) num_objects = 1;
  s->n = n;
  s->num_classes = nc;
  s->num_objects = num_objects;
  s->boxes = malloc((size_t)n * 4 * sizeof(float));
  s->scores = malloc((size_t)n * sizeof(float));
  s->classes = malloc((size_t)n * sizeof(int64_t));
  s->objects = malloc((size_t)num_objects * 4 * sizeof(float));
  double *cdf = malloc((size_t)nc * sizeof(double));
  int64_t *object_class = malloc((size_t)num_objects * sizeof(int64_t));
  double *confidence = malloc((size_t)num_objects * sizeof(double));
  double *weight = malloc((size_t)num_objects * sizeof(double));
  int64_t *count = malloc((size_t)num_objects * sizeof(int64_t));
  if (!s->boxes || !s->scores || !s->classes || !s->objects || !cdf || !object_class ||
      !confidence || !weight || !count) {
    free(cdf), free(object_class), free(confidence), free(weight), free(count);
    scene_free(s);
    return -1;
  }

  rng r = {opt->seed};
  double total = 0.0;
  for (int c = 0; c < nc; ++c) cdf[c] = (total += pow(c + 1.0, -0.9));

  double wsum = 0.0;
  for (int64_t g = 0; g < num_objects; ++g) {
    double b[4];
    if (g > 0 && rng_uniform(&r) < 0.25) {
      /* a crowd: next to an earlier object of the same class, overlapping it */
      int64_t p = rng_below(&r, g);
      const float *pb = s->objects + 4 * p;
      double w = (pb[2] - pb[0]) * exp(0.2 * rng_normal(&r));
      double h = (pb[3] - pb[1]) * exp(0.2 * rng_normal(&r));
      double cx = 0.5 * (pb[0] + pb[2]) + 0.6 * w * rng_normal(&r);
      double cy = 0.5 * (pb[1] + pb[3]) + 0.25 * h * rng_normal(&r);
      b[0] = cx - 0.5 * w, b[1] = cy - 0.5 * h, b[2] = cx + 0.5 * w, b[3] = cy + 0.5 * h;
      clip_box(b);
      object_class[g] = object_class[p];
    } else {
      random_box(&r, 64.0, 10.0, 0.6 * IMAGE_W, b);
      object_class[g] = sample_class(&r, cdf, nc);
    }
    store_box(s->objects + 4 * g, b);
    confidence[g] = 0.4 + 0.59 * sqrt(rng_uniform(&r));
    /* bigger objects overlap more anchors, so they collect more proposals */
    weight[g] = pow((b[2] - b[0]) * (b[3] - b[1]), 0.25) * (0.5 + rng_uniform(&r));
    wsum += weight[g];
  }

  int64_t background = (int64_t)((double)n * BACKGROUND_FRACTION);
  int64_t clustered = n - background, assigned = 0;
  for (int64_t g = 0; g < num_objects; ++g) {
    count[g] = (int64_t)((double)clustered * weight[g] / wsum);
    assigned += count[g];
  }
  for (int64_t g = 0; assigned < clustered; g = (g + 1) % num_objects) ++count[g], ++assigned;

  int64_t i = 0;
  for (int64_t g = 0; g < num_objects; ++g) {
    const float *ob = s->objects + 4 * g;
    double gt[4] = {ob[0], ob[1], ob[2], ob[3]};
    double w = gt[2] - gt[0], h = gt[3] - gt[1];
    for (int64_t k = 0; k < count[g]; ++k, ++i) {
      double jitter = 0.02 + 0.10 * fabs(rng_normal(&r));
      double b[4] = {gt[0] + jitter * w * rng_normal(&r), gt[1] + jitter * h * rng_normal(&r),
                     gt[2] + jitter * w * rng_normal(&r), gt[3] + jitter * h * rng_normal(&r)};
      clip_box(b);
      /* a classifier head is sharp: confidence drops fast once the box is off */
      double miss = (1.0 - iou(b, gt)) / 0.15;
      double score = confidence[g] * exp(-miss * miss) * (0.8 + 0.2 * rng_uniform(&r));
      int64_t cls = object_class[g];
      if (rng_uniform(&r) < 0.05) { /* mistaken for a look-alike class, less sure */
        cls = (cls + 1) % nc;
        score *= 0.4;
      }
      store_box(s->boxes + 4 * i, b);
      s->scores[i] = (float)clampd(score, 1e-4, 1.0);
      s->classes[i] = cls;
    }
  }
  for (; i < n; ++i) {
    double b[4];
    random_box(&r, 48.0, 8.0, 0.4 * IMAGE_W, b);
    double u = rng_uniform(&r);
    store_box(s->boxes + 4 * i, b);
    s->scores[i] = (float)(0.001 + 0.12 * pow(u, 6.0));
    s->classes[i] = sample_class(&r, cdf, nc);
  }

  for (int64_t a = n - 1; a > 0; --a) { /* Fisher-Yates */
    int64_t b = rng_below(&r, a + 1);
    float tb[4], ts = s->scores[a];
    int64_t tc = s->classes[a];
    memcpy(tb, s->boxes + 4 * a, sizeof tb);
    memcpy(s->boxes + 4 * a, s->boxes + 4 * b, sizeof tb);
    memcpy(s->boxes + 4 * b, tb, sizeof tb);
    s->scores[a] = s->scores[b], s->scores[b] = ts;
    s->classes[a] = s->classes[b], s->classes[b] = tc;
  }

  free(cdf), free(object_class), free(confidence), free(weight), free(count);
  s->class_scores = calloc((size_t)nc * (size_t)n, sizeof(float));
  if (!s->class_scores) return -1;
  for (int64_t j = 0; j < n; ++j) s->class_scores[s->classes[j] * n + j] = s->scores[j];
  return 0;
}

/* ----------------------------------------------------------- RoI inputs */

/* One [1,C,H,W] float32 map of the image at `stride`. */
typedef struct feature_map {
  float *data;
  int64_t shape[4];
  double scale; /* 1 / stride: image coordinates -> map coordinates */
} feature_map;

typedef struct roi_inputs {
  int64_t num_rois;
  float *rois;                 /* [num_rois,5]: (0, x1, y1, x2, y2), best score first */
  feature_map map;             /* roi_align, roi_pool */
  feature_map ps_map;          /* ps_roi_align, ps_roi_pool */
  feature_map fpn[FPN_LEVELS]; /* multi_scale_roi_align, finest first */
  double fpn_scales[FPN_LEVELS];
} roi_inputs;

static void roi_inputs_free(roi_inputs *in) {
  free(in->rois);
  free(in->map.data);
  free(in->ps_map.data);
  for (int l = 0; l < FPN_LEVELS; ++l) free(in->fpn[l].data);
  memset(in, 0, sizeof *in);
}

/* What a backbone's activations look like to the RoI ops: a bump on every
 * object (so the pooled boxes see structure, not noise), weighted per
 * channel, plus a smooth per-channel texture so the channels differ. Both
 * are separable, which keeps this to a few multiply-adds per element. */
static int make_feature_map(feature_map *m, const scene *s, int64_t channels, double stride,
                            uint64_t seed) {
  int64_t h = (int64_t)ceil(IMAGE_H / stride), w = (int64_t)ceil(IMAGE_W / stride);
  m->shape[0] = 1, m->shape[1] = channels, m->shape[2] = h, m->shape[3] = w;
  m->scale = 1.0 / stride;
  m->data = malloc((size_t)(channels * h * w) * sizeof(float));
  float *objectness = calloc((size_t)(h * w), sizeof(float));
  float *gx = malloc((size_t)w * sizeof(float)), *gy = malloc((size_t)h * sizeof(float));
  if (!m->data || !objectness || !gx || !gy) {
    free(objectness), free(gx), free(gy);
    free(m->data), m->data = NULL;
    return -1;
  }

  for (int64_t g = 0; g < s->num_objects; ++g) {
    const float *b = s->objects + 4 * g;
    /* in map pixels, whose centres sit at (x + 0.5) * stride in the image */
    double cx = 0.5 * (b[0] + b[2]) / stride - 0.5, cy = 0.5 * (b[1] + b[3]) / stride - 0.5;
    double sx = fmax(0.25 * (b[2] - b[0]) / stride, 0.5);
    double sy = fmax(0.25 * (b[3] - b[1]) / stride, 0.5);
    int64_t x0 = (int64_t)fmax(0.0, floor(cx - 3.0 * sx)),
            x1 = (int64_t)fmin(w - 1.0, ceil(cx + 3.0 * sx));
    int64_t y0 = (int64_t)fmax(0.0, floor(cy - 3.0 * sy)),
            y1 = (int64_t)fmin(h - 1.0, ceil(cy + 3.0 * sy));
    for (int64_t x = x0; x <= x1; ++x) gx[x] = (float)exp(-0.5 * ((x - cx) / sx) * ((x - cx) / sx));
    for (int64_t y = y0; y <= y1; ++y) gy[y] = (float)exp(-0.5 * ((y - cy) / sy) * ((y - cy) / sy));
    for (int64_t y = y0; y <= y1; ++y)
      for (int64_t x = x0; x <= x1; ++x) {
        float v = gy[y] * gx[x], *o = &objectness[y * w + x];
        *o = v > *o ? v : *o;
      }
  }

  rng r = {seed};
  for (int64_t c = 0; c < channels; ++c) {
    double weight = rng_range(&r, -0.5, 1.5); /* some channels fire on objects, some less */
    double fx = rng_range(&r, 0.05, 0.6), px = rng_range(&r, 0.0, 2.0 * DEMO_PI);
    double fy = rng_range(&r, 0.05, 0.6), py = rng_range(&r, 0.0, 2.0 * DEMO_PI);
    double amp = rng_range(&r, 0.1, 0.4);
    for (int64_t x = 0; x < w; ++x) gx[x] = (float)(amp * sin(fx * (double)x + px));
    for (int64_t y = 0; y < h; ++y) gy[y] = (float)cos(fy * (double)y + py);
    float *dst = m->data + c * h * w;
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        dst[y * w + x] = (float)weight * objectness[y * w + x] + gy[y] * gx[x];
  }
  free(objectness), free(gx), free(gy);
  return 0;
}

/* The RoIs are the ROI_COUNT best-scoring detections batched_nms kept (its
 * keep list is in score order), as a detector hands its proposals to the
 * second stage. */
static int make_roi_inputs(const scene *s, const int64_t *keep, int64_t kept, uint64_t seed,
                           roi_inputs *in) {
  memset(in, 0, sizeof *in);
  int64_t k = kept < ROI_COUNT ? kept : ROI_COUNT;
  in->rois = malloc((size_t)(k > 0 ? k : 1) * 5 * sizeof(float));
  if (!in->rois) return -1;
  in->num_rois = k;
  for (int64_t i = 0; i < k; ++i) {
    in->rois[5 * i] = 0.0f;
    memcpy(in->rois + 5 * i + 1, s->boxes + 4 * keep[i], 4 * sizeof(float));
  }

  /* distinct seeds: each map is a different layer of the backbone */
  int rc = make_feature_map(&in->map, s, ROI_CHANNELS, ROI_STRIDE, seed ^ 0x10);
  if (rc == 0) rc = make_feature_map(&in->ps_map, s, PS_CHANNELS, PS_STRIDE, seed ^ 0x20);
  for (int l = 0; l < FPN_LEVELS && rc == 0; ++l) {
    double stride = FPN_FIRST_STRIDE * (double)(1 << l);
    rc = make_feature_map(&in->fpn[l], s, FPN_CHANNELS, stride, seed ^ (uint64_t)(0x30 + l));
    in->fpn_scales[l] = 1.0 / stride;
  }
  if (rc != 0) roi_inputs_free(in);
  return rc;
}

/* ------------------------------------------------------- device memory */

/* Where the demo can put tensors: the CPU, a CUDA GPU when this command was
 * built against the CUDA runtime, and an OpenCL device when it was built
 * with the OpenCL headers (demo_opencl.c). */
typedef struct target {
  const char *name;
  DLDevice device;
} target;

#ifdef VISIONOPS_HAVE_CUDA
static int cuda_check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 0;
  fprintf(stderr, "visionops demo: %s failed: %s (%s)\n", what, cudaGetErrorString(e),
          cudaGetErrorName(e));
  return -1;
}
#endif

static void *mem_alloc(DLDevice d, size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (d.device_type == kDLCPU) {
    void *p = malloc(bytes);
    if (!p) fprintf(stderr, "visionops demo: out of host memory (%zu bytes)\n", bytes);
    return p;
  }
#ifdef VISIONOPS_HAVE_CUDA
  if (d.device_type == kDLCUDA) {
    void *p = NULL;
    if (cuda_check(cudaSetDevice(d.device_id), "cudaSetDevice") ||
        cuda_check(cudaMalloc(&p, bytes), "cudaMalloc"))
      return NULL;
    return p;
  }
#endif
#ifdef VISIONOPS_HAVE_OPENCL
  if (d.device_type == kDLOpenCL) return demo_cl_alloc(bytes);
#endif
  fprintf(stderr, "visionops demo: cannot allocate on device type %d\n", (int)d.device_type);
  return NULL;
}

static void mem_free(DLDevice d, void *p) {
  if (!p) return;
  if (d.device_type == kDLCPU) free(p);
#ifdef VISIONOPS_HAVE_CUDA
  else if (d.device_type == kDLCUDA)
    cudaFree(p);
#endif
#ifdef VISIONOPS_HAVE_OPENCL
  else if (d.device_type == kDLOpenCL)
    demo_cl_free(p);
#endif
}

/* to_device: host `src` -> `dst` on d; otherwise `src` on d -> host `dst`. */
static int mem_copy(DLDevice d, void *dst, const void *src, size_t bytes, int to_device) {
  if (d.device_type == kDLCPU) {
    memcpy(dst, src, bytes);
    return 0;
  }
#ifdef VISIONOPS_HAVE_CUDA
  if (d.device_type == kDLCUDA)
    return cuda_check(
        cudaMemcpy(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost),
        "cudaMemcpy");
#endif
#ifdef VISIONOPS_HAVE_OPENCL
  if (d.device_type == kDLOpenCL) return demo_cl_copy(dst, src, bytes, to_device);
#endif
  (void)to_device;
  return -1;
}

/* GPU ops return once queued; a timing must include the work itself. */
static int mem_sync(DLDevice d) {
#ifdef VISIONOPS_HAVE_CUDA
  if (d.device_type == kDLCUDA) return cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
#endif
#ifdef VISIONOPS_HAVE_OPENCL
  if (d.device_type == kDLOpenCL) return demo_cl_finish();
#endif
  (void)d;
  return 0;
}

/* ------------------------------------------------------------ op cases */

typedef struct tensor {
  DLTensor t;
  int64_t shape[VO_MAX_DIMS];
} tensor;

static const DLDataType F32 = {kDLFloat, 32, 1};
static const DLDataType I32 = {kDLInt, 32, 1};
static const DLDataType I64 = {kDLInt, 64, 1};
static const DLDevice CPU = {kDLCPU, 0};

static void tensor_init(tensor *x, void *data, DLDataType dtype, DLDevice device, int ndim,
                        const int64_t *shape) {
  memset(x, 0, sizeof *x);
  for (int k = 0; k < ndim; ++k) x->shape[k] = shape[k];
  x->t.data = data;
  x->t.device = device;
  x->t.ndim = ndim;
  x->t.dtype = dtype;
  x->t.shape = x->shape;
  x->t.strides = NULL; /* contiguous */
  x->t.byte_offset = 0;
}

static int64_t numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int k = 0; k < ndim; ++k) n *= shape[k];
  return n;
}

static size_t tensor_bytes(const DLTensor *t) {
  return (size_t)numel(t->ndim, t->shape) * (((size_t)t->dtype.bits * t->dtype.lanes + 7) / 8);
}

/* One op's argument list over host tensors; copied per backend, which moves
 * the tensors and re-points the arguments at the copies. */
typedef struct op_case {
  int num_args;
  vo_value args[MAX_ARGS];
  int input_of_arg[MAX_ARGS]; /* index into inputs, -1 for a scalar */
  int list_len[MAX_ARGS];     /* a Tensor[] of this many inputs from input_of_arg; 0: a tensor */
  int num_inputs;
  tensor inputs[MAX_INPUTS];
  const DLTensor *items[MAX_INPUTS]; /* &inputs[k].t, what Tensor[] arguments point into */
} op_case;

static void case_tensor_nd(op_case *c, void *data, DLDataType dtype, int ndim,
                           const int64_t *shape) {
  tensor_init(&c->inputs[c->num_inputs], data, dtype, CPU, ndim, shape);
  c->list_len[c->num_args] = 0;
  c->input_of_arg[c->num_args++] = c->num_inputs++;
}

static void case_tensor(op_case *c, void *data, DLDataType dtype, int ndim, int64_t d0,
                        int64_t d1) {
  int64_t shape[2] = {d0, d1};
  case_tensor_nd(c, data, dtype, ndim, shape);
}

/* A Tensor[] argument: the maps become consecutive inputs, so they move to
 * each backend like any other input. */
static void case_tensor_list(op_case *c, const feature_map *maps, int count) {
  c->list_len[c->num_args] = count;
  c->input_of_arg[c->num_args++] = c->num_inputs;
  for (int l = 0; l < count; ++l)
    tensor_init(&c->inputs[c->num_inputs++], maps[l].data, F32, CPU, 4, maps[l].shape);
}

static void case_scalar(op_case *c, vo_value v) {
  c->input_of_arg[c->num_args] = -1;
  c->args[c->num_args++] = v;
}

static void case_bind(op_case *c) {
  for (int k = 0; k < c->num_inputs; ++k) c->items[k] = &c->inputs[k].t;
  for (int a = 0; a < c->num_args; ++a) {
    int first = c->input_of_arg[a];
    if (first < 0) continue;
    c->args[a] = c->list_len[a] > 0 ? vo_tensor_list_value(c->items + first, c->list_len[a])
                                    : vo_tensor_value(&c->inputs[first].t);
  }
}

/* Everything a builder may draw on. */
typedef struct demo_inputs {
  const scene *s;
  const roi_inputs *roi;
} demo_inputs;

static void build_nms(op_case *c, const demo_inputs *in) {
  case_tensor(c, in->s->boxes, F32, 2, in->s->n, 4);
  case_tensor(c, in->s->scores, F32, 1, in->s->n, 0);
  case_scalar(c, vo_float_value(IOU_THRESHOLD));
}

static void build_batched_nms(op_case *c, const demo_inputs *in) {
  case_tensor(c, in->s->boxes, F32, 2, in->s->n, 4);
  case_tensor(c, in->s->scores, F32, 1, in->s->n, 0);
  case_tensor(c, in->s->classes, I64, 1, in->s->n, 0);
  case_scalar(c, vo_float_value(IOU_THRESHOLD));
}

/* One image's boxes [1,N,4] and per-class scores [1,C,N]: the score cutoff,
 * up to 100 detections per image, as a deployed detector's NMS step. */
static void build_batched_nms_padded(op_case *c, const demo_inputs *in) {
  const scene *s = in->s;
  const int64_t boxes[3] = {1, s->n, 4}, scores[3] = {1, s->num_classes, s->n};
  case_tensor_nd(c, s->boxes, F32, 3, boxes);
  case_tensor_nd(c, s->class_scores, F32, 3, scores);
  case_scalar(c, vo_float_value(IOU_THRESHOLD));
  case_scalar(c, vo_float_value(SCORE_CUTOFF)); /* score_threshold */
  case_scalar(c, vo_int_value(-1));             /* max_per_class: no cap */
  case_scalar(c, vo_int_value(100));            /* max_per_image */
}

/* Per-class linear soft-NMS (mmcv's defaults; boxes whose rescored score
 * falls under the score cutoff are dropped). */
static void build_batched_soft_nms(op_case *c, const demo_inputs *in) {
  build_batched_nms(c, in);
  c->args[c->num_args - 1] = vo_float_value(0.3); /* iou_threshold */
  case_scalar(c, vo_float_value(0.5));            /* sigma */
  case_scalar(c, vo_float_value(SCORE_CUTOFF));   /* min_score */
}

static void build_box_iou(op_case *c, const demo_inputs *in) {
  const scene *s = in->s;
  case_tensor(c, s->boxes, F32, 2, s->n < IOU_ROWS ? s->n : IOU_ROWS, 4);
  case_tensor(c, s->objects, F32, 2, s->num_objects, 4);
}

/* ---- RoI ops */

static void case_map(op_case *c, const feature_map *m) {
  case_tensor_nd(c, m->data, F32, 4, m->shape);
}

static void case_rois(op_case *c, const roi_inputs *roi) {
  case_tensor(c, roi->rois, F32, 2, roi->num_rois, 5);
}

typedef struct result {
  int num_outputs;
  vo_tensor_desc desc[MAX_OUTPUTS];
  void *host[MAX_OUTPUTS]; /* outputs copied back to the host */
  double ms;               /* median of TIMED_RUNS */
} result;

static void result_free(result *r) {
  for (int k = 0; k < r->num_outputs; ++k) free(r->host[k]);
  memset(r, 0, sizeof *r);
}

static void build_roi_align(op_case *c, const demo_inputs *in) {
  case_map(c, &in->roi->map);
  case_rois(c, in->roi);
  case_scalar(c, vo_float_value(in->roi->map.scale));
  case_scalar(c, vo_int_value(POOLED));
  case_scalar(c, vo_int_value(POOLED));
  case_scalar(c, vo_int_value(SAMPLING_RATIO));
  case_scalar(c, vo_bool_value(1)); /* pixel-centre aligned, as Detectron2's ROIAlignV2 */
}

/* roi_pool, ps_roi_pool: (input, rois, spatial_scale, PH, PW) */
static void build_pool(op_case *c, const feature_map *m, const roi_inputs *roi) {
  case_map(c, m);
  case_rois(c, roi);
  case_scalar(c, vo_float_value(m->scale));
  case_scalar(c, vo_int_value(POOLED));
  case_scalar(c, vo_int_value(POOLED));
}

static void build_roi_pool(op_case *c, const demo_inputs *in) {
  build_pool(c, &in->roi->map, in->roi);
}

static void build_ps_roi_pool(op_case *c, const demo_inputs *in) {
  build_pool(c, &in->roi->ps_map, in->roi);
}

static void build_ps_roi_align(op_case *c, const demo_inputs *in) {
  build_pool(c, &in->roi->ps_map, in->roi);
  case_scalar(c, vo_int_value(SAMPLING_RATIO));
}

/* canonical_scale, canonical_level and aligned are left out: the schema's
 * defaults are torchvision's MultiScaleRoIAlign's, which is what to show */
static void build_multi_scale_roi_align(op_case *c, const demo_inputs *in) {
  case_tensor_list(c, in->roi->fpn, FPN_LEVELS);
  case_rois(c, in->roi);
  case_scalar(c, vo_float_list_value(in->roi->fpn_scales, FPN_LEVELS));
  case_scalar(c, vo_int_value(POOLED));
  case_scalar(c, vo_int_value(POOLED));
  case_scalar(c, vo_int_value(SAMPLING_RATIO));
}

typedef enum result_kind { RESULT_KEEP, RESULT_MATRIX, RESULT_VALUES } result_kind;

typedef struct known_op {
  const char *name;
  void (*build)(op_case *c, const demo_inputs *in);
  result_kind kind;
  const char *empty_bins; /* RESULT_VALUES: int32 output whose -1 marks an empty bin */
  int keep_output;        /* RESULT_KEEP: the kept box indices (-1 padded) and their count */
  int num_output;
} known_op;

/* The demo's pipeline, in order: NMS as a detector's post-processing does
 * it (per class, then class-agnostic), how the detections overlap the
 * objects, and the RoI ops of second stages on the detections NMS kept. */
static const known_op DEMO_OPS[] = {
    {"batched_nms", build_batched_nms, RESULT_KEEP, NULL, 0, 1},
    {"nms", build_nms, RESULT_KEEP, NULL, 0, 1},
    {"batched_nms_padded", build_batched_nms_padded, RESULT_KEEP, NULL, 0, 3},
    {"batched_soft_nms", build_batched_soft_nms, RESULT_KEEP, NULL, 1, 2},
    {"box_iou", build_box_iou, RESULT_MATRIX, NULL, 0, 0},
    {"roi_align", build_roi_align, RESULT_VALUES, NULL, 0, 0},
    {"roi_pool", build_roi_pool, RESULT_VALUES, "argmax", 0, 0},
    {"ps_roi_align", build_ps_roi_align, RESULT_VALUES, NULL, 0, 0},
    {"ps_roi_pool", build_ps_roi_pool, RESULT_VALUES, NULL, 0, 0},
    {"multi_scale_roi_align", build_multi_scale_roi_align, RESULT_VALUES, NULL, 0, 0},
};
#define NUM_DEMO_OPS (sizeof DEMO_OPS / sizeof DEMO_OPS[0])

/* ------------------------------------------------------------- running */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

static void report_library_error(const char *what, const vo_op_info *op, const target *tg,
                                 vo_status st) {
  fprintf(stderr, "visionops demo: %s(%s) on %s failed: %s: %s\n", what, op->name, tg->name,
          vo_status_string(st), vo_last_error());
}

/* The library has the op but no kernel for this backend (yet): the demo says
 * so in the table instead of failing. Any other unavailability is an error,
 * as the backend said it was usable. The CPU backend runs every op. */
static int is_missing_kernel(const target *tg, vo_status st) {
  return st == VO_ERROR_BACKEND_UNAVAILABLE && tg->device.device_type != kDLCPU &&
         strstr(vo_last_error(), "not implemented on the ") != NULL;
}

/* Moves the inputs to the target, asks for the output shapes, allocates the
 * outputs there, times the op and copies the outputs back. Returns 0, or 1
 * when the backend has no kernel for the op (`err` says so), or -1 on failure:
 * the reason has been printed to stderr and `err` says it in a few words. */
static int run_on_target(const vo_context *ctx, const vo_op_info *op, const op_case *host_case,
                         const target *tg, result *r, char *err, size_t err_size) {
  op_case c = *host_case;
  void *dev_in[MAX_INPUTS] = {0};
  tensor out[MAX_OUTPUTS];
  DLTensor *out_ptr[MAX_OUTPUTS] = {0};
  void *dev_out[MAX_OUTPUTS] = {0};
  double times[TIMED_RUNS];
  int rc = -1;
  vo_status st;
  memset(r, 0, sizeof *r);

  int num_outputs = op->num_outputs;
  if (num_outputs < 1 || num_outputs > MAX_OUTPUTS) {
    snprintf(err, err_size, "error: %d outputs, demo handles 1..%d", num_outputs, MAX_OUTPUTS);
    return -1;
  }
  if (tg->device.device_type != kDLCPU) {
    for (int k = 0; k < c.num_inputs; ++k) {
      size_t bytes = tensor_bytes(&c.inputs[k].t);
      if (!(dev_in[k] = mem_alloc(tg->device, bytes)) ||
          mem_copy(tg->device, dev_in[k], c.inputs[k].t.data, bytes, 1)) {
        snprintf(err, err_size, "error: copying inputs to %s", tg->name);
        goto done;
      }
      c.inputs[k].t.data = dev_in[k];
      c.inputs[k].t.device = tg->device;
    }
  }
  case_bind(&c);

  r->num_outputs = num_outputs;
  st = vo_infer(ctx, op, c.args, c.num_args, r->desc, num_outputs);
  if (st != VO_OK) {
    report_library_error("vo_infer", op, tg, st);
    snprintf(err, err_size, "error: %s", vo_status_string(st));
    goto done;
  }
  for (int k = 0; k < num_outputs; ++k) {
    const vo_tensor_desc *d = &r->desc[k];
    tensor_init(&out[k], NULL, d->dtype, d->device, d->ndim, d->shape);
    size_t bytes = tensor_bytes(&out[k].t);
    r->host[k] = malloc(bytes ? bytes : 1);
    dev_out[k] = out[k].t.data = mem_alloc(d->device, bytes);
    if (!r->host[k] || !dev_out[k]) {
      snprintf(err, err_size, "error: allocating outputs");
      goto done;
    }
    out_ptr[k] = &out[k].t;
  }

  /* one untimed call first: lazy initialisation and first-touch page faults
   * are not what the table is about */
  for (int run = -1; run < TIMED_RUNS; ++run) {
    double t0 = now_ms();
    st = vo_call(ctx, op, c.args, c.num_args, out_ptr, num_outputs);
    if (st != VO_OK && is_missing_kernel(tg, st)) {
      snprintf(err, err_size, "not implemented on %s", tg->name);
      rc = 1;
      goto done;
    }
    if (st != VO_OK) {
      report_library_error("vo_call", op, tg, st);
      snprintf(err, err_size, "error: %s", vo_status_string(st));
      goto done;
    }
    if (mem_sync(tg->device)) {
      snprintf(err, err_size, "error: synchronising %s", tg->name);
      goto done;
    }
    if (run >= 0) times[run] = now_ms() - t0;
  }
  qsort(times, TIMED_RUNS, sizeof times[0], cmp_double);
  r->ms = times[TIMED_RUNS / 2];

  for (int k = 0; k < num_outputs; ++k)
    if (mem_copy(r->desc[k].device, r->host[k], dev_out[k], tensor_bytes(&out[k].t), 0)) {
      snprintf(err, err_size, "error: copying outputs from %s", tg->name);
      goto done;
    }
  rc = 0;

done:
  for (int k = 0; k < MAX_OUTPUTS; ++k)
    if (dev_out[k]) mem_free(out[k].t.device, dev_out[k]);
  for (int k = 0; k < MAX_INPUTS; ++k) mem_free(tg->device, dev_in[k]);
  if (rc != 0) result_free(r);
  return rc;
}

/* --------------------------------------------------------- summaries */

static int is_dtype(DLDataType t, DLDataType want) {
  return t.code == want.code && t.bits == want.bits && t.lanes == want.lanes;
}

/* "kept K of N" (N boxes in); a malformed keep list (k's outputs: box
 * indices padded with -1, their count first in the count output) is a
 * library bug and fails the demo. */
static int summarise_keep(const result *r, const result *ref, const known_op *k, int64_t n,
                          char *out, size_t size) {
  const int ko = k->keep_output, no = k->num_output;
  if (r->num_outputs <= (ko > no ? ko : no) || !is_dtype(r->desc[ko].dtype, I64) ||
      !is_dtype(r->desc[no].dtype, I64)) {
    snprintf(out, size, "INVALID: outputs %d and %d are not the kept indices and count", ko, no);
    return -1;
  }
  const int64_t *keep = r->host[ko];
  const int64_t slots = numel(r->desc[ko].ndim, r->desc[ko].shape);
  const int64_t kept = *(const int64_t *)r->host[no];
  int bad = kept < 0 || kept > slots;
  for (int64_t i = 0; !bad && i < slots; ++i)
    bad = i < kept ? (keep[i] < 0 || keep[i] >= n) : keep[i] != -1;
  if (bad) {
    snprintf(out, size, "INVALID keep list (%lld kept of %lld)", (long long)kept, (long long)n);
    return -1;
  }
  int len = snprintf(out, size, "kept %lld of %lld", (long long)kept, (long long)n);
  if (ref && len > 0 && (size_t)len < size) {
    int64_t ref_kept = *(const int64_t *)ref->host[no];
    int same = ref_kept == kept && memcmp(ref->host[ko], keep, (size_t)kept * sizeof(int64_t)) == 0;
    snprintf(out + len, size - (size_t)len, same ? ", same as cpu" : ", DIFFERS from cpu");
    if (!same) return -1;
  }
  return 0;
}

/* Mean and max of the matrix, and how many rows (detections) have a best
 * match at IoU-like value >= MATCH_IOU. */
static int summarise_matrix(const result *r, const result *ref, char *out, size_t size) {
  if (r->num_outputs != 1 || !is_dtype(r->desc[0].dtype, F32) || r->desc[0].ndim != 2) {
    snprintf(out, size, "INVALID: output is not float32[N,M]");
    return -1;
  }
  const float *m = r->host[0];
  int64_t rows = r->desc[0].shape[0], cols = r->desc[0].shape[1];
  double sum = 0.0, mx = -INFINITY;
  int64_t matched = 0;
  for (int64_t i = 0; i < rows; ++i) {
    double best = -INFINITY;
    for (int64_t j = 0; j < cols; ++j) {
      double v = m[i * cols + j];
      sum += v;
      best = v > best ? v : best;
    }
    matched += best >= MATCH_IOU;
    mx = best > mx ? best : mx;
  }
  double mean = rows > 0 && cols > 0 ? sum / (double)(rows * cols) : 0.0;
  int len = snprintf(out, size, "mean %.4f  max %.4f  best >= %.1f: %lld of %lld", mean, mx,
                     MATCH_IOU, (long long)matched, (long long)rows);
  if (ref && len > 0 && (size_t)len < size) {
    const float *mr = ref->host[0];
    double diff = 0.0;
    for (int64_t i = 0; i < rows * cols; ++i) diff = fmax(diff, fabs((double)m[i] - mr[i]));
    snprintf(out + len, size - (size_t)len, ", max |diff| vs cpu %.1e", diff);
    if (!(diff <= 1e-4)) return -1;
  }
  return 0;
}

/* Mean and max over the float32 output, and
 * for roi_pool how many bins were empty; non-finite values, or a backend
 * disagreeing with the CPU, fail the demo. */
static int summarise_values(const result *r, const result *ref, const known_op *k, char *out,
                            size_t size) {
  double sum = 0.0, mx = -INFINITY, ref_mag = 0.0, diff = 0.0;
  int64_t count = 0, nonfinite = 0, empty = 0, bins = 0, index_mismatch = 0;
  for (int o = 0; o < r->num_outputs; ++o) {
    const vo_tensor_desc *d = &r->desc[o];
    int64_t n = numel(d->ndim, d->shape);
    int is_i32 = is_dtype(d->dtype, I32);
    if (!is_dtype(d->dtype, F32) && !is_i32) {
      snprintf(out, size, "INVALID: output %d is neither float32 nor int32", o);
      return -1;
    }
    if (is_i32) {
      const int32_t *v = r->host[o];
      if (k->empty_bins)
        for (int64_t i = 0; i < n; ++i) empty += v[i] == -1;
      bins += n;
      if (ref) index_mismatch += memcmp(v, ref->host[o], (size_t)n * sizeof *v) != 0;
      continue;
    }
    const float *v = r->host[o], *vr = ref ? ref->host[o] : NULL;
    for (int64_t i = 0; i < n; ++i) {
      double x = v[i];
      if (!isfinite(x)) {
        ++nonfinite;
        continue;
      }
      sum += x;
      mx = x > mx ? x : mx;
      if (vr) {
        ref_mag = fmax(ref_mag, fabs((double)vr[i]));
        diff = fmax(diff, fabs(x - vr[i]));
      }
    }
    count += n;
  }
  if (nonfinite) {
    snprintf(out, size, "INVALID: %lld non-finite values", (long long)nonfinite);
    return -1;
  }
  size_t len = 0;
  if (len < size)
    len += (size_t)snprintf(out + len, size - len, "mean %.4f  max %.4f",
                            count ? sum / (double)count : 0.0, mx);
  if (k->empty_bins && len < size)
    len += (size_t)snprintf(out + len, size - len, "  %s -1 in %lld of %lld bins", k->empty_bins,
                            (long long)empty, (long long)bins);
  if (ref && len < size) {
    /* backward ops sum in a different order on a GPU: compare relative to
     * the values' size */
    snprintf(out + len, size - len, ", max |diff| vs cpu %.1e%s", diff,
             index_mismatch ? ", indices DIFFER" : "");
    if (!(diff <= 1e-4 * fmax(1.0, ref_mag)) || index_mismatch) return -1;
  }
  return 0;
}

/* ------------------------------------------------------------- table */

typedef struct table {
  int op_width;
} table;

/* The inputs' shapes, a Tensor[] as its first item and how many follow. */
static void shapes_string(const op_case *c, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (int a = 0; a < c->num_args && len < size; ++a) {
    if (c->input_of_arg[a] < 0) continue;
    const DLTensor *t = &c->inputs[c->input_of_arg[a]].t;
    len += (size_t)snprintf(out + len, size - len, "%s[", len ? " " : "");
    for (int d = 0; d < t->ndim && len < size; ++d)
      len +=
          (size_t)snprintf(out + len, size - len, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    if (len < size) len += (size_t)snprintf(out + len, size - len, "]");
    if (c->list_len[a] > 1 && len < size)
      len += (size_t)snprintf(out + len, size - len, "+%d", c->list_len[a] - 1);
  }
}

/* The inputs column's width; longer shape lists wrap at a space onto
 * continuation lines under the column, so the columns after it stay aligned. */
enum { SHAPES_WIDTH = 38 };

/* Length of the first line of `s` within SHAPES_WIDTH: up to its last space
 * that fits (the whole width if there is none). */
static int shapes_cut(const char *s) {
  const char *space = NULL, *q = s;
  for (; *q && q - s <= SHAPES_WIDTH; ++q)
    if (*q == ' ') space = q;
  if (!*q && q - s <= SHAPES_WIDTH) return (int)(q - s); /* all of it fits */
  return space && space > s ? (int)(space - s) : SHAPES_WIDTH;
}

static void print_row(const table *tb, const char *op, const char *backend, const char *shapes,
                      const char *ms, const char *summary) {
  int cut = shapes_cut(shapes);
  printf("  %-*s  %-7s  %-*.*s  %10s  %s\n", tb->op_width, op, backend, SHAPES_WIDTH, cut, shapes,
         ms, summary);
  for (shapes += cut; *shapes; shapes += cut) {
    while (*shapes == ' ') ++shapes;
    cut = shapes_cut(shapes);
    if (cut > 0) printf("  %-*s  %-7s  %.*s\n", tb->op_width, "", "", cut, shapes);
  }
  fflush(stdout);
}

/* --------------------------------------------------------------- SVG */

static const char *out_dir(const demo_options *opt) {
  return opt->out_dir && opt->out_dir[0] ? opt->out_dir : ".";
}

/* `mkdir -p`: --out may name a directory that does not exist yet. */
static int make_dirs(const char *dir) {
  size_t len = strlen(dir);
  char *p = malloc(len + 1);
  if (!p) return -1;
  memcpy(p, dir, len + 1);
  int rc = 0;
  for (size_t i = 1; i <= len && rc == 0; ++i) {
    if (p[i] != '/' && p[i] != '\0') continue;
    char c = p[i];
    p[i] = '\0';
    struct stat st;
    if (mkdir(p, 0777) == 0) {
      /* created */
    } else if (errno != EEXIST || stat(p, &st) != 0) {
      rc = -1;
    } else if (!S_ISDIR(st.st_mode)) {
      errno = ENOTDIR;
      rc = -1;
    }
    p[i] = c;
  }
  free(p);
  return rc;
}

/* batched_nms on the CPU through the typed wrappers, as a C program
 * embedding the library would call them: the kept detections the RoI ops
 * pool and nms.svg draws. Returns the keep list (malloc'ed) or NULL. */
static int64_t *keep_detections(const vo_context *ctx, const scene *s, int64_t *kept) {
  tensor boxes, scores, idxs, keep, num_kept;
  int64_t bshape[2] = {s->n, 4}, nshape[1] = {s->n};
  tensor_init(&boxes, s->boxes, F32, CPU, 2, bshape);
  tensor_init(&scores, s->scores, F32, CPU, 1, nshape);
  tensor_init(&idxs, s->classes, I64, CPU, 1, nshape);
  vo_tensor_desc desc[2];
  vo_status st = vo_batched_nms_shape(ctx, &boxes.t, &scores.t, &idxs.t, IOU_THRESHOLD, desc);
  if (st != VO_OK) {
    fprintf(stderr, "visionops demo: vo_batched_nms_shape failed: %s: %s\n", vo_status_string(st),
            vo_last_error());
    return NULL;
  }
  if (!is_dtype(desc[0].dtype, I64) || !is_dtype(desc[1].dtype, I64) || desc[0].ndim != 1 ||
      desc[1].ndim != 0) {
    fprintf(stderr, "visionops demo: vo_batched_nms_shape: outputs are not int64[N], int64[]\n");
    return NULL;
  }
  int64_t *keep_data = malloc((size_t)(desc[0].shape[0] + 1) * sizeof(int64_t));
  if (!keep_data) {
    fprintf(stderr, "visionops demo: out of memory\n");
    return NULL;
  }
  tensor_init(&keep, keep_data, desc[0].dtype, desc[0].device, desc[0].ndim, desc[0].shape);
  tensor_init(&num_kept, kept, desc[1].dtype, desc[1].device, desc[1].ndim, desc[1].shape);
  st = vo_batched_nms(ctx, &boxes.t, &scores.t, &idxs.t, IOU_THRESHOLD, &keep.t, &num_kept.t);
  if (st != VO_OK) {
    fprintf(stderr, "visionops demo: vo_batched_nms failed: %s: %s\n", vo_status_string(st),
            vo_last_error());
    free(keep_data);
    return NULL;
  }
  return keep_data;
}

static int write_svg(const demo_options *opt, const scene *s, const int64_t *keep_data,
                     int64_t kept) {
  const char *dir = out_dir(opt);
  size_t len = strlen(dir);
  char *path = malloc(len + sizeof "/nms.svg");
  if (!path) return -1;
  snprintf(path, len + sizeof "/nms.svg", "%s%snms.svg", dir,
           len && dir[len - 1] == '/' ? "" : "/");
  svg_nms_scene sc = {
      .image_width = IMAGE_W,
      .image_height = IMAGE_H,
      .num_boxes = s->n,
      .boxes = s->boxes,
      .scores = s->scores,
      .classes = s->classes,
      .num_classes = s->num_classes,
      .keep = keep_data,
      .num_kept = kept,
      .iou_threshold = IOU_THRESHOLD,
      .score_cutoff = SCORE_CUTOFF,
  };
  int rc = svg_write_nms(path, &sc);
  if (rc != 0)
    fprintf(stderr, "visionops demo: cannot write %s: %s\n", path, strerror(errno));
  else
    printf("wrote %s\n", path);
  free(path);
  return rc;
}

/* -------------------------------------------------------------- main */

/* Lists the backends, and returns those the demo can put tensors on. An
 * OpenCL target's calls run on the demo's queue (set in ctx), where its
 * buffers are. */
static int collect_targets(vo_context *ctx, target *targets, int max_targets) {
  int count = 0;
  for (int b = 0; b < vo_backend_count(); ++b) {
    vo_backend_info info;
    vo_status st = vo_backend_status(b, &info);
    if (st != VO_OK) {
      fprintf(stderr, "visionops demo: vo_backend_status(%d) failed: %s: %s\n", b,
              vo_status_string(st), vo_last_error());
      return -1;
    }
    if (!info.built || !info.available) {
      printf("  %-5s skipped: %s\n", info.name, info.detail);
      continue;
    }
#ifndef VISIONOPS_HAVE_CUDA
    if (info.device_type == kDLCUDA) {
      printf(
          "  %-5s skipped: available (%s), but this visionops command was built without the "
          "CUDA runtime, so it cannot put inputs on the GPU\n",
          info.name, info.detail);
      continue;
    }
#endif
    int placeable = info.device_type == kDLCPU || info.device_type == kDLCUDA;
#ifdef VISIONOPS_HAVE_OPENCL
    if (info.device_type == kDLOpenCL) {
      char why[256];
      int ready = demo_cl_open(why, sizeof why) == 0;
      if (ready && vo_context_set_queue(ctx, kDLOpenCL, demo_cl_queue()) != VO_OK) {
        snprintf(why, sizeof why, "%s", vo_last_error());
        ready = 0;
      }
      if (!ready) {
        printf("  %-5s skipped: available (%s), but the demo cannot make a queue on it: %s\n",
               info.name, info.detail, why);
        continue;
      }
      placeable = 1;
    }
#endif
    if (!placeable) {
      printf("  %-5s skipped: the demo cannot put inputs on this device (%s)\n", info.name,
             info.detail);
      continue;
    }
    if (info.device_type == kDLCPU) {
      /* the detail describes the defaults; --threads may have changed them */
      int threads = vo_context_num_threads(ctx);
      char tbuf[32];
      snprintf(tbuf, sizeof tbuf, "%d thread%s", threads, threads == 1 ? "" : "s");
      printf("  %-5s %s; this run: %s, ISA %s\n", info.name, info.detail,
             threads ? tbuf : "all cores", vo_cpu_isa(ctx));
    } else {
      printf("  %-5s %s\n", info.name, info.detail);
    }
    if (count < max_targets) {
      targets[count].name = info.name;
      targets[count].device.device_type = info.device_type;
      targets[count].device.device_id = 0;
      ++count;
    }
  }
  return count;
}

int demo_run(const demo_options *opt) {
  vo_context *ctx = NULL;
  scene s;
  roi_inputs roi;
  int failures = 0;
  vo_status st = vo_context_create(&ctx);
  if (st == VO_OK) st = vo_context_set_num_threads(ctx, opt->num_threads);
  if (st != VO_OK) {
    fprintf(stderr, "visionops demo: setting up the context failed: %s: %s\n", vo_status_string(st),
            vo_last_error());
    vo_context_destroy(ctx);
    return 1;
  }
  /* a bad --out should fail before the benchmark, not after it */
  const char *dir = out_dir(opt);
  if (make_dirs(dir) != 0) {
    fprintf(stderr, "visionops demo: cannot create directory %s: %s\n", dir, strerror(errno));
    vo_context_destroy(ctx);
    return 1;
  }
  if (generate_scene(opt, &s) != 0) {
    fprintf(stderr, "visionops demo: out of memory generating %lld boxes\n",
            (long long)opt->num_boxes);
    vo_context_destroy(ctx);
    return 1;
  }
  int64_t kept = 0, *keep = keep_detections(ctx, &s, &kept);
  if (!keep) {
    scene_free(&s);
    vo_context_destroy(ctx);
    return 1;
  }
  if (make_roi_inputs(&s, keep, kept, opt->seed, &roi) != 0) {
    fprintf(stderr, "visionops demo: out of memory generating the feature maps\n");
    free(keep);
    scene_free(&s);
    vo_context_destroy(ctx);
    return 1;
  }

  printf(
      "visionops %s demo: %lld detections of %lld objects, %d classes, %.0fx%.0f image, "
      "seed %llu\n",
      vo_version(), (long long)s.n, (long long)s.num_objects, s.num_classes, IMAGE_W, IMAGE_H,
      (unsigned long long)opt->seed);
  printf(
      "float32; NMS IoU threshold %g; box_iou: first %lld detections x %lld objects; "
      "time: median of %d runs\n",
      IOU_THRESHOLD, (long long)(s.n < IOU_ROWS ? s.n : IOU_ROWS), (long long)s.num_objects,
      TIMED_RUNS);
  const feature_map *fm = &roi.map, *pm = &roi.ps_map;
  printf(
      "RoI ops: the best %lld detection%s batched_nms kept, %dx%d bins, sampling ratio %d, on a "
      "stride-%g "
      "[1,%lld,%lld,%lld] map (ps ops: stride-%g [1,%lld,%lld,%lld]; multi-scale: %d levels of "
      "%d channels, strides %g..%g)\n",
      (long long)roi.num_rois, roi.num_rois == 1 ? "" : "s", POOLED, POOLED, SAMPLING_RATIO,
      ROI_STRIDE, (long long)fm->shape[1], (long long)fm->shape[2], (long long)fm->shape[3],
      PS_STRIDE, (long long)pm->shape[1], (long long)pm->shape[2], (long long)pm->shape[3],
      FPN_LEVELS, FPN_CHANNELS, FPN_FIRST_STRIDE,
      FPN_FIRST_STRIDE * (double)(1 << (FPN_LEVELS - 1)));
  printf("backends:\n");
  target targets[8];
  int num_targets = collect_targets(ctx, targets, 8);
  if (num_targets < 0) {
    free(keep);
    roi_inputs_free(&roi);
    scene_free(&s);
    vo_context_destroy(ctx);
    return 1;
  }

  table tb = {(int)strlen("op")};
  for (size_t i = 0; i < NUM_DEMO_OPS; ++i)
    if ((int)strlen(DEMO_OPS[i].name) > tb.op_width) tb.op_width = (int)strlen(DEMO_OPS[i].name);
  printf("\n");
  print_row(&tb, "op", "backend", "inputs", "ms", "result");
  demo_inputs in = {&s, &roi};

  for (size_t i = 0; i < NUM_DEMO_OPS; ++i) {
    const known_op *k = &DEMO_OPS[i];
    const vo_op_info *op = vo_op_find(k->name);
    if (!op) {
      fprintf(stderr, "visionops demo: this library has no op %s\n", k->name);
      ++failures;
      continue;
    }
    op_case c;
    memset(&c, 0, sizeof c);
    k->build(&c, &in);
    char shapes[96];
    shapes_string(&c, shapes, sizeof shapes);

    result cpu_ref;
    int have_ref = 0;
    for (int t = 0; t < num_targets; ++t) {
      result r;
      char summary[160], ms[32];
      int run = run_on_target(ctx, op, &c, &targets[t], &r, summary, sizeof summary);
      if (run != 0) {
        print_row(&tb, op->name, targets[t].name, shapes, "-", summary);
        failures += run < 0;
        continue;
      }
      const result *ref = (have_ref && targets[t].device.device_type != kDLCPU) ? &cpu_ref : NULL;
      int bad = k->kind == RESULT_KEEP ? summarise_keep(&r, ref, k, s.n, summary, sizeof summary)
                : k->kind == RESULT_MATRIX ? summarise_matrix(&r, ref, summary, sizeof summary)
                                           : summarise_values(&r, ref, k, summary, sizeof summary);
      failures += bad != 0;
      snprintf(ms, sizeof ms, "%.3f", r.ms);
      print_row(&tb, op->name, targets[t].name, shapes, ms, summary);
      if (!have_ref && targets[t].device.device_type == kDLCPU && !bad) {
        cpu_ref = r;
        have_ref = 1;
      } else {
        result_free(&r);
      }
    }
    if (have_ref) result_free(&cpu_ref);
  }
  printf("\n");

  if (write_svg(opt, &s, keep, kept) != 0) ++failures;
  free(keep);

  roi_inputs_free(&roi);
  scene_free(&s);
  vo_context_destroy(ctx);
  if (failures) {
    fprintf(stderr, "visionops demo: %d failure%s (see messages above)\n", failures,
            failures == 1 ? "" : "s");
    return 1;
  }
  return 0;
}
