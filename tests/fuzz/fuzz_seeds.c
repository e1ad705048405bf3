/*
 * Writes the fuzz corpus's seeds: one valid call of every registered op, in
 * the format of fuzz_format.h. fuzz_seeds DIR. An op of the registry without
 * a sample here is an error, so a new op cannot go unfuzzed (the seeds are
 * written and replayed with --expect-ok by ctest).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <visionops/visionops.h>

#include "fuzz_format.h"

typedef struct enc {
  uint8_t buf[1 << 16];
  size_t len;
  uint64_t rng;
} enc;

static void put(enc *e, const void *p, size_t n) {
  if (e->len + n > sizeof e->buf) {
    fprintf(stderr, "fuzz_seeds: sample too large\n");
    exit(1);
  }
  memcpy(e->buf + e->len, p, n);
  e->len += n;
}

static void put_u8(enc *e, uint8_t b) { put(e, &b, 1); }

static double uniform(enc *e) { /* [0, 1) */
  e->rng = e->rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(e->rng >> 11) / 9007199254740992.0;
}

static void put_f(enc *e, double d) {
  put_u8(e, 0);
  put(e, &d, sizeof d);
}
static void put_i(enc *e, int64_t i) {
  put_u8(e, 0);
  put(e, &i, sizeof i);
}
/* Consecutive int arguments. */
#define INTS(...) \
  (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]) { __VA_ARGS__ }
static void put_ints(enc *e, int n, const int64_t *v) {
  for (int k = 0; k < n; k++) put_i(e, v[k]);
}
static void put_b(enc *e, int b) {
  put_u8(e, 0);
  put_u8(e, (uint8_t)b);
}

/* The element values come from fill(e, index, ctx). */
typedef double (*fill_fn)(enc *e, int64_t index, const int64_t *dims);

static void tensor_item(enc *e, int dtype, int ndim, const int64_t *dims, fill_fn fill) {
  put_u8(e, 0);
  put_u8(e, (uint8_t)dtype);
  put_u8(e, (uint8_t)ndim);
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++) {
    put_u8(e, (uint8_t)dims[i]);
    numel *= dims[i];
  }
  for (int64_t k = 0; k < numel; k++) {
    const double v = fill(e, k, dims);
    switch (dtype) {
      case FUZZ_F32: {
        float f = (float)v;
        put(e, &f, 4);
      } break;
      case FUZZ_F64: put(e, &v, 8); break;
      case FUZZ_I64: {
        int64_t i = (int64_t)v;
        put(e, &i, 8);
      } break;
      case FUZZ_I32: {
        int32_t i = (int32_t)v;
        put(e, &i, 4);
      } break;
      default: fprintf(stderr, "fuzz_seeds: dtype %d not written\n", dtype); exit(1);
    }
  }
}

static void tensor(enc *e, int dtype, int ndim, const int64_t *dims, fill_fn fill) {
  put_u8(e, 0); /* the schema's kind */
  tensor_item(e, dtype, ndim, dims, fill);
}

#define DIMS(...) \
  (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]) { __VA_ARGS__ }

static double fill_uniform(enc *e, int64_t k, const int64_t *d) {
  (void)k, (void)d;
  return uniform(e);
}
/* Boxes (x1, y1, x2, y2) with x2 > x1, y2 > y1, inside [0, 24). */
static double fill_boxes(enc *e, int64_t k, const int64_t *d) {
  (void)d;
  static double lo[2];
  const int c = (int)(k % 4);
  if (c < 2) return lo[c] = uniform(e) * 12;
  return lo[c - 2] + 1 + uniform(e) * 10;
}
/* RoIs (batch, x1, y1, x2, y2) on a 2-image batch of 8 x 8 maps. */
static double fill_rois(enc *e, int64_t k, const int64_t *d) {
  (void)d;
  static double lo[2];
  const int c = (int)(k % 5);
  if (c == 0) return (double)((k / 5) % 2);
  if (c < 3) return lo[c - 1] = uniform(e) * 4;
  return lo[c - 3] + 1 + uniform(e) * 3;
}
static double fill_class(enc *e, int64_t k, const int64_t *d) {
  (void)e, (void)d;
  return (double)(k % 3);
}
static double fill_zero(enc *e, int64_t k, const int64_t *d) {
  (void)e, (void)k, (void)d;
  return 0;
}
/* What ps_roi_* write: output channel c of bin (ph, pw) reads (c*PH + ph)*PW + pw. */
static double fill_channel_mapping(enc *e, int64_t k, const int64_t *d) {
  (void)e;
  const int64_t pw = k % d[3], ph = (k / d[3]) % d[2], c = (k / (d[3] * d[2])) % d[1];
  return (double)((c * d[2] + ph) * d[3] + pw);
}

static void nms(enc *e) {
  tensor(e, FUZZ_F32, DIMS(6, 4), fill_boxes);
  tensor(e, FUZZ_F32, DIMS(6), fill_uniform);
  put_f(e, 0.5);
}
static void batched_nms(enc *e) {
  tensor(e, FUZZ_F32, DIMS(6, 4), fill_boxes);
  tensor(e, FUZZ_F32, DIMS(6), fill_uniform);
  tensor(e, FUZZ_I64, DIMS(6), fill_class);
  put_f(e, 0.5);
}
static void box_pair(enc *e) {
  tensor(e, FUZZ_F32, DIMS(4, 4), fill_boxes);
  tensor(e, FUZZ_F32, DIMS(5, 4), fill_boxes);
}
static void box_pair_eps(enc *e) {
  box_pair(e);
  put_f(e, 1e-7);
}
static void box_backward(enc *e) {
  tensor(e, FUZZ_F32, DIMS(4, 5), fill_uniform);
  box_pair(e);
}
static void box_backward_eps(enc *e) {
  box_backward(e);
  put_f(e, 1e-7);
}
static void rois(enc *e) { tensor(e, FUZZ_F32, DIMS(3, 5), fill_rois); }

static void roi_align(enc *e) {
  tensor(e, FUZZ_F32, DIMS(2, 4, 8, 8), fill_uniform);
  rois(e);
  put_f(e, 1.0);
  put_ints(e, INTS(2, 2, 2));
  put_b(e, 1);
}
static void roi_align_backward(enc *e) {
  tensor(e, FUZZ_F32, DIMS(3, 4, 2, 2), fill_uniform);
  rois(e);
  put_f(e, 1.0);
  put_ints(e, INTS(2, 2, 2, 4, 8, 8, 2));
  put_b(e, 1);
}
static void roi_pool(enc *e) {
  tensor(e, FUZZ_F32, DIMS(2, 4, 8, 8), fill_uniform);
  rois(e);
  put_f(e, 1.0);
  put_ints(e, INTS(2, 2));
}
static void roi_pool_backward(enc *e) {
  tensor(e, FUZZ_F32, DIMS(3, 4, 2, 2), fill_uniform);
  rois(e);
  tensor(e, FUZZ_I32, DIMS(3, 4, 2, 2), fill_zero);
  put_f(e, 1.0);
  put_ints(e, INTS(2, 2, 2, 4, 8, 8));
}
static void ps_roi_align(enc *e) {
  tensor(e, FUZZ_F32, DIMS(2, 8, 8, 8), fill_uniform);
  rois(e);
  put_f(e, 1.0);
  put_ints(e, INTS(2, 2, 2));
}
static void ps_roi_align_backward(enc *e) {
  tensor(e, FUZZ_F32, DIMS(3, 2, 2, 2), fill_uniform);
  rois(e);
  tensor(e, FUZZ_I32, DIMS(3, 2, 2, 2), fill_channel_mapping);
  put_f(e, 1.0);
  put_ints(e, INTS(2, 2, 2, 2, 8, 8, 8));
}
static void ps_roi_pool(enc *e) {
  tensor(e, FUZZ_F32, DIMS(2, 8, 8, 8), fill_uniform);
  rois(e);
  put_f(e, 1.0);
  put_ints(e, INTS(2, 2));
}
static void ps_roi_pool_backward(enc *e) {
  tensor(e, FUZZ_F32, DIMS(3, 2, 2, 2), fill_uniform);
  rois(e);
  tensor(e, FUZZ_I32, DIMS(3, 2, 2, 2), fill_channel_mapping);
  put_f(e, 1.0);
  put_ints(e, INTS(2, 2, 2, 8, 8, 8));
}
static void feature_list(enc *e) {
  put_u8(e, 0);
  put_u8(e, 2);
  tensor_item(e, FUZZ_F32, DIMS(2, 4, 8, 8), fill_uniform);
  tensor_item(e, FUZZ_F32, DIMS(2, 4, 4, 4), fill_uniform);
}
static void msra_tail(enc *e) {
  put_u8(e, 0); /* scales */
  put_u8(e, 2);
  const double scales[2] = {1.0, 0.5};
  put(e, scales, sizeof scales);
  put_ints(e, INTS(2, 2, 2, 224, 4));
  put_b(e, 0);
}
static void multi_scale_roi_align(enc *e) {
  feature_list(e);
  rois(e);
  msra_tail(e);
}
static void multi_scale_roi_align_backward(enc *e) {
  tensor(e, FUZZ_F32, DIMS(3, 4, 2, 2), fill_uniform);
  rois(e);
  feature_list(e);
  msra_tail(e);
}
static void dcn_tail(enc *e) {
  /* stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups, offset_groups */
  put_ints(e, INTS(1, 1, 1, 1, 1, 1, 1, 1));
  put_b(e, 1);
}
static void dcn_inputs(enc *e) {
  tensor(e, FUZZ_F32, DIMS(1, 2, 5, 5), fill_uniform);
  tensor(e, FUZZ_F32, DIMS(2, 2, 3, 3), fill_uniform);
  tensor(e, FUZZ_F32, DIMS(1, 18, 5, 5), fill_uniform);
  tensor(e, FUZZ_F32, DIMS(1, 9, 5, 5), fill_uniform);
  tensor(e, FUZZ_F32, DIMS(2), fill_uniform);
}
static void deform_conv2d(enc *e) {
  dcn_inputs(e);
  dcn_tail(e);
}
static void deform_conv2d_backward(enc *e) {
  tensor(e, FUZZ_F32, DIMS(1, 2, 5, 5), fill_uniform);
  dcn_inputs(e);
  dcn_tail(e);
}

static const struct sample {
  const char *op;
  void (*write)(enc *);
} samples[] = {
    {"nms", nms},
    {"batched_nms", batched_nms},
    {"box_iou", box_pair},
    {"generalized_box_iou", box_pair},
    {"distance_box_iou", box_pair_eps},
    {"complete_box_iou", box_pair_eps},
    {"box_iou_backward", box_backward},
    {"generalized_box_iou_backward", box_backward},
    {"distance_box_iou_backward", box_backward_eps},
    {"complete_box_iou_backward", box_backward_eps},
    {"roi_align", roi_align},
    {"roi_align_backward", roi_align_backward},
    {"roi_pool", roi_pool},
    {"roi_pool_backward", roi_pool_backward},
    {"ps_roi_align", ps_roi_align},
    {"ps_roi_align_backward", ps_roi_align_backward},
    {"ps_roi_pool", ps_roi_pool},
    {"ps_roi_pool_backward", ps_roi_pool_backward},
    {"multi_scale_roi_align", multi_scale_roi_align},
    {"multi_scale_roi_align_backward", multi_scale_roi_align_backward},
    {"deform_conv2d", deform_conv2d},
    {"deform_conv2d_backward", deform_conv2d_backward},
};

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fuzz_seeds DIR\n");
    return 2;
  }
  mkdir(argv[1], 0777); /* an existing directory is fine; fopen reports the rest */
  int missing = 0;
  for (int i = 0; i < vo_op_count(); i++) {
    const vo_op_info *op = vo_op_get(i);
    const struct sample *s = NULL;
    for (size_t j = 0; j < sizeof samples / sizeof samples[0]; j++)
      if (!strcmp(samples[j].op, op->name)) s = &samples[j];
    if (!s) {
      fprintf(stderr, "fuzz_seeds: op %s has no sample call in tests/fuzz/fuzz_seeds.c\n",
              op->name);
      missing++;
      continue;
    }
    static enc e;
    e.len = 0;
    e.rng = 0x9E3779B97F4A7C15ULL + (uint64_t)i;
    put_u8(&e, (uint8_t)i);
    put_u8(&e, FUZZ_NARGS_EXACT);
    put_u8(&e, 1); /* two threads, default workspace */
    s->write(&e);
    put_u8(&e, 0); /* outputs exactly as described */
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%s", argv[1], op->name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(e.buf, 1, e.len, f) != e.len || fclose(f) != 0) {
      fprintf(stderr, "fuzz_seeds: cannot write %s\n", path);
      return 1;
    }
  }
  printf("fuzz_seeds: %d seeds in %s\n", vo_op_count() - missing, argv[1]);
  return missing ? 1 : 0;
}
