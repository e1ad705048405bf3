/* Bounds on work and memory layout found by fuzzing (issue 11): every
 * argument that sets the amount of work is bounded, so a call either runs in
 * time proportional to its tensors or fails at once naming the argument;
 * empty tensors with huge sizes, negative strides and misaligned data are
 * handled without undefined behaviour (this program runs under UBSan in CI). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

static const double roi_rows[] = {0, 1, 1, 5, 6, 1, 0, 2, 7, 7};

static vt_tensor *new_input(int64_t c) {
  const int64_t s[4] = {2, c, 8, 8};
  vt_tensor *t = vt_tensor_new(vt_f32, 4, s, NULL);
  for (int64_t i = 0; i < vt_numel(&t->dl); i++) vt_set(&t->dl, i, (double)(i % 13) / 13);
  return t;
}

static vt_tensor *new_rois(const double *rows, int64_t k) {
  const int64_t s[2] = {k, 5};
  return vt_tensor_new(vt_f32, 2, s, rows);
}

/* roi_align with sampling_ratio sr into a fresh output: the status. */
static vo_status roi_align_sr(const vt_tensor *in, const vt_tensor *rois, int64_t sr, int aligned) {
  const int64_t s[4] = {rois->dl.shape[0], in->dl.shape[1], 2, 2};
  vt_tensor *out = vt_tensor_new(vt_f32, 4, s, NULL);
  vt_fill(&out->dl, 42);
  vo_status st = vo_roi_align(NULL, &in->dl, &rois->dl, 1.0, 2, 2, sr, aligned, &out->dl);
  if (st != VO_OK)
    for (int64_t i = 0; i < vt_numel(&out->dl); i++)
      if (!CHECK_MSG(vt_get(&out->dl, i) == 42, "a failed roi_align wrote its output")) break;
  vt_tensor_free(out);
  return st;
}

static void sampling_ratio_bound(void) {
  vt_tensor *in = new_input(3), *rois = new_rois(roi_rows, 2);
  CHECK_STATUS(roi_align_sr(in, rois, 128, 1), VO_OK);
  /* 2^40 ran for ever before (2^62 samples per bin after the int32 cap). */
  CHECK_STATUS(roi_align_sr(in, rois, (int64_t)1 << 40, 1), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("roi_align: sampling_ratio must be at most 128");
  CHECK_ERROR_HAS("got 1099511627776");
  CHECK_STATUS(roi_align_sr(in, rois, 129, 0), VO_ERROR_INVALID_ARGUMENT);

  const int64_t gs[4] = {2, 3, 2, 2};
  vt_tensor *grad = vt_tensor_new(vt_f32, 4, gs, NULL),
            *gin = vt_tensor_new(vt_f32, 4, in->shape, NULL);
  CHECK_STATUS(
      vo_roi_align_backward(NULL, &grad->dl, &rois->dl, 1.0, 2, 2, 2, 3, 8, 8, 1000, 1, &gin->dl),
      VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("roi_align_backward: sampling_ratio must be at most 128");

  /* ps_roi_align: C = 4 * (PH * PW) channels. */
  vt_tensor *ps_in = new_input(8);
  const int64_t ps[4] = {2, 2, 2, 2};
  vt_tensor *ps_out = vt_tensor_new(vt_f32, 4, ps, NULL), *map = vt_tensor_new(vt_i32, 4, ps, NULL);
  CHECK_STATUS(vo_ps_roi_align(NULL, &ps_in->dl, &rois->dl, 1.0, 2, 2, (int64_t)1 << 33,
                               &ps_out->dl, &map->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("ps_roi_align: sampling_ratio must be at most 128");
  CHECK_STATUS(vo_ps_roi_align(NULL, &ps_in->dl, &rois->dl, 1.0, 2, 2, 2, &ps_out->dl, &map->dl),
               VO_OK);
  vt_tensor *ps_gin = vt_tensor_new(vt_f32, 4, ps_in->shape, NULL);
  CHECK_STATUS(vo_ps_roi_align_backward(NULL, &ps_out->dl, &rois->dl, &map->dl, 1.0, 2, 2, 500, 2,
                                        8, 8, 8, &ps_gin->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("ps_roi_align_backward: sampling_ratio must be at most 128");

  /* multi_scale_roi_align: two levels, 8x8 and 4x4. */
  const int64_t l1[4] = {2, 3, 4, 4};
  vt_tensor *lvl1 = vt_tensor_new(vt_f32, 4, l1, NULL);
  const DLTensor *features[2] = {&in->dl, &lvl1->dl};
  const double scales[2] = {1.0, 0.5};
  vt_tensor *ms_out = vt_tensor_new(vt_f32, 4, gs, NULL);
  CHECK_STATUS(vo_multi_scale_roi_align(NULL, features, scales, 2, &rois->dl, 2, 2, 1 << 20, 224, 4,
                                        0, &ms_out->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("multi_scale_roi_align: sampling_ratio must be at most 128");
  CHECK_STATUS(vo_multi_scale_roi_align(NULL, features, scales, 2, &rois->dl, 2, 2, 2, 224, 4, 0,
                                        &ms_out->dl),
               VO_OK);

  vt_tensor *all[] = {in, rois, grad, gin, ps_in, ps_out, map, ps_gin, lvl1, ms_out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

/* Adaptive sampling (sampling_ratio <= 0) follows the RoI's size: a RoI far
 * larger than its map is refused (it would take ~RoI-area samples per
 * channel); one a few times the map still runs, exactly as before. */
static void adaptive_grid_bound(void) {
  vt_tensor *in = new_input(3);
  /* 8x8 map, PH = PW = 2: the bound is max(128, ceil(4 * 10 / 2) = 20) = 128
   * samples per bin, i.e. RoIs up to 256 feature pixels per side. */
  const double fits[] = {0, -100, -100, 150, 150};
  vt_tensor *ok = new_rois(fits, 1);
  CHECK_STATUS(roi_align_sr(in, ok, 0, 1), VO_OK);
  CHECK_STATUS(roi_align_sr(in, ok, -1, 0), VO_OK);
  const double huge[] = {0, 1, 1, 5, 6, 1, 0, 0, 1e9, 3};
  vt_tensor *bad = new_rois(huge, 2);
  CHECK_STATUS(roi_align_sr(in, bad, 0, 1), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("roi_align: rois[1] spans");
  CHECK_ERROR_HAS("pass a sampling_ratio in 1..128");
  /* An explicit sampling_ratio makes the same RoI cheap again. */
  CHECK_STATUS(roi_align_sr(in, bad, 2, 1), VO_OK);

  vt_tensor *ps_in = new_input(8);
  const int64_t ps[4] = {2, 2, 2, 2};
  vt_tensor *ps_out = vt_tensor_new(vt_f32, 4, ps, NULL), *map = vt_tensor_new(vt_i32, 4, ps, NULL);
  CHECK_STATUS(vo_ps_roi_align(NULL, &ps_in->dl, &bad->dl, 1.0, 2, 2, 0, &ps_out->dl, &map->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("ps_roi_align: rois[1] spans");

  const int64_t l1[4] = {2, 3, 4, 4}, gs[4] = {2, 3, 2, 2};
  vt_tensor *lvl1 = vt_tensor_new(vt_f32, 4, l1, NULL),
            *ms_out = vt_tensor_new(vt_f32, 4, gs, NULL);
  const DLTensor *features[2] = {&in->dl, &lvl1->dl};
  const double scales[2] = {1.0, 0.5};
  CHECK_STATUS(vo_multi_scale_roi_align(NULL, features, scales, 2, &bad->dl, 2, 2, 0, 224, 4, 0,
                                        &ms_out->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("multi_scale_roi_align: rois[1] spans");

  vt_tensor *all[] = {in, ok, bad, ps_in, ps_out, map, lvl1, ms_out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

static void deform_conv2d_bounds(void) {
  const int64_t xs[4] = {1, 2, 5, 5}, ws[4] = {2, 2, 3, 3}, os[4] = {1, 18, 5, 5},
                ys[4] = {1, 2, 5, 5};
  vt_tensor *x = vt_tensor_new(vt_f32, 4, xs, NULL), *w = vt_tensor_new(vt_f32, 4, ws, NULL);
  vt_tensor *off = vt_tensor_new(vt_f32, 4, os, NULL), *y = vt_tensor_new(vt_f32, 4, ys, NULL);
  CHECK_STATUS(
      vo_deform_conv2d(NULL, &x->dl, &w->dl, &off->dl, NULL, NULL, 1, 1, 1, 1, 1, 1, 1, 1, &y->dl),
      VO_OK);
  CHECK_STATUS(vo_deform_conv2d(NULL, &x->dl, &w->dl, &off->dl, NULL, NULL, 1, 1, 1,
                                (int64_t)1 << 41, 1, 1, 1, 1, &y->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("deform_conv2d: pad_w must be at most 1099511627776");
  CHECK_STATUS(vo_deform_conv2d(NULL, &x->dl, &w->dl, &off->dl, NULL, NULL, 1, 1, 1, 1,
                                (int64_t)1 << 50, 1, 1, 1, &y->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("deform_conv2d: dilation_h must be at most");
  vt_tensor *all[] = {x, w, off, y};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

/* An empty tensor may have any other sizes: [0, 1000, 2^62] boxes are an
 * empty set of boxes of the wrong rank (its row-major strides overflowed
 * int64 before). */
static void empty_with_huge_sizes(void) {
  int64_t shape[3] = {0, 1000, (int64_t)1 << 62};
  static float dummy[4];
  DLTensor boxes = {dummy, {kDLCPU, 0}, 3, {kDLFloat, 32, 1}, shape, NULL, 0};
  const int64_t s0[1] = {0};
  vt_tensor *scores = vt_tensor_new(vt_f32, 1, s0, NULL);
  vo_tensor_desc out[2];
  CHECK_STATUS(vo_nms_shape(NULL, &boxes, &scores->dl, 0.5, out), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("nms: boxes must have shape [N, 4]");
  int64_t shape2[2] = {0, (int64_t)1 << 62};
  DLTensor b2 = {dummy, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape2, NULL, 0};
  CHECK_STATUS(vo_box_iou_shape(NULL, &b2, &b2, out), VO_ERROR_INVALID_ARGUMENT);
  vt_tensor_free(scores);
}

/* multi_scale_roi_align gathers each level's RoIs through their strides;
 * negative strides (a flipped view) gave a size_t wrap before. */
static void msra_negative_strides(void) {
  const double rows[] = {0, 1, 1, 5, 6, 1, 0, 2, 7, 7, 0, 2, 2, 3, 4};
  double flipped[15];
  for (int k = 0; k < 3; k++)
    for (int j = 0; j < 5; j++) flipped[k * 5 + j] = rows[(2 - k) * 5 + j];
  vt_tensor *rois = new_rois(rows, 3), *store = new_rois(flipped, 3);
  /* A view of `store` whose row i is store's row 2 - i, i.e. rows again. */
  DLTensor view = store->dl;
  int64_t strides[2] = {-5, 1};
  view.strides = strides;
  view.data = (float *)store->dl.data + 10;
  vt_tensor *in = new_input(3);
  const int64_t l1[4] = {2, 3, 4, 4}, gs[4] = {3, 3, 2, 2};
  vt_tensor *lvl1 = vt_tensor_new(vt_f32, 4, l1, NULL);
  for (int64_t i = 0; i < vt_numel(&lvl1->dl); i++) vt_set(&lvl1->dl, i, (double)(i % 7));
  const DLTensor *features[2] = {&in->dl, &lvl1->dl};
  const double scales[2] = {1.0, 0.5};
  vt_tensor *a = vt_tensor_new(vt_f32, 4, gs, NULL), *b = vt_tensor_new(vt_f32, 4, gs, NULL);
  CHECK_STATUS(
      vo_multi_scale_roi_align(NULL, features, scales, 2, &rois->dl, 2, 2, 2, 4, 4, 1, &a->dl),
      VO_OK);
  CHECK_STATUS(vo_multi_scale_roi_align(NULL, features, scales, 2, &view, 2, 2, 2, 4, 4, 1, &b->dl),
               VO_OK);
  int same = 1;
  for (int64_t i = 0; i < vt_numel(&a->dl); i++) same &= vt_get(&a->dl, i) == vt_get(&b->dl, i);
  CHECK_MSG(same, "negative-stride rois give a different multi_scale_roi_align");
  vt_tensor *all[] = {rois, store, in, lvl1, a, b};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

/* Elements must be aligned to their size: a float32 tensor starting at an
 * odd byte would be undefined behaviour for every kernel. */
static void misaligned(void) {
  const int64_t s[2] = {2, 4}, o[2] = {2, 2};
  vt_tensor *boxes = vt_tensor_new(vt_f32, 2, s, NULL), *out = vt_tensor_new(vt_f32, 2, o, NULL);
  DLTensor odd = boxes->dl;
  odd.byte_offset = 1;
  CHECK_STATUS(vo_box_iou(NULL, &odd, &boxes->dl, &out->dl), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("box_iou: boxes1's first element (data + byte_offset 1) is not aligned");
  DLTensor odd_out = out->dl;
  odd_out.data = (char *)out->dl.data + 2;
  CHECK_STATUS(vo_box_iou(NULL, &boxes->dl, &boxes->dl, &odd_out), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("is not aligned to its 4-byte elements");
  vt_tensor_free(boxes);
  vt_tensor_free(out);
}

/* A spatial_scale beyond float32's range is inf in the float32 compute
 * type (0 * inf: a NaN coordinate, converted to an integer by roi_pool). */
static void scale_beyond_float(void) {
  vt_tensor *in = new_input(3), *rois = new_rois(roi_rows, 2);
  const int64_t s[4] = {2, 3, 2, 2};
  vt_tensor *out = vt_tensor_new(vt_f32, 4, s, NULL), *arg = vt_tensor_new(vt_i32, 4, s, NULL);
  CHECK_STATUS(vo_roi_pool(NULL, &in->dl, &rois->dl, 1e300, 2, 2, &out->dl, &arg->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("roi_pool: spatial_scale = 1e+300 is not finite in float32");
  CHECK_STATUS(vo_roi_pool(NULL, &in->dl, &rois->dl, 3e38, 2, 2, &out->dl, &arg->dl), VO_OK);
  vt_tensor *all[] = {in, rois, out, arg};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

int main(void) {
  scale_beyond_float();
  sampling_ratio_bound();
  adaptive_grid_bound();
  deform_conv2d_bounds();
  empty_with_huge_sizes();
  msra_negative_strides();
  misaligned();
  return vt_finish("test_work_bounds");
}
