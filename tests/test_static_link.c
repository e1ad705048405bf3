/* Linked against the static library: every op must still be registered (a
 * static archive drops self-registering objects) and callable by name. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "samples/samples.h"
#include "test_util.h"

/* Every op of src/ops/ops.def, the list the library registers from. */
static const char *const expected_ops[] = {
#define VO_OP(name, kernel, schema, backward, shape_rule) #name,
#include "ops/ops.def"
#undef VO_OP
};
#define NUM_EXPECTED (sizeof expected_ops / sizeof expected_ops[0])

/* [0,0,2,2] and [1,1,3,3]: IoU 1/7, enclosing box 3x3, centre distance^2 2,
 * equal aspect ratios (so CIoU == DIoU). */
static const double boxes[] = {0, 0, 2, 2, 1, 1, 3, 3};
static const double scores[] = {0.4, 0.6};

static double expected_value(const char *name) {
  if (strcmp(name, "box_iou") == 0) return 1.0 / 7;
  if (strcmp(name, "generalized_box_iou") == 0) return 1.0 / 7 - 2.0 / 9;
  return 1.0 / 7 - 2 / (18 + 1e-7);
}

/* roi_align on a 2x2 ramp {0, 1, 2, 3} with one RoI over it, 1x1 output and
 * one sample at its centre: (0 + 1 + 2 + 3) / 4. Its backward spreads a unit
 * gradient as 1/4 to each of the four pixels. */
static void call_roi_align_by_name(const vo_op_info *op) {
  const int64_t s_map[4] = {1, 1, 2, 2}, s_rois[2] = {1, 5}, s_out[4] = {1, 1, 1, 1};
  const double ramp[4] = {0, 1, 2, 3}, roi[5] = {0, 0, 0, 1, 1}, one[1] = {1};
  int backward = strcmp(op->name, "roi_align_backward") == 0;
  vt_tensor *in = vt_tensor_new(vt_f64, 4, backward ? s_out : s_map, backward ? one : ramp);
  vt_tensor *rois = vt_tensor_new(vt_f64, 2, s_rois, roi);
  vt_tensor *out = vt_tensor_new(vt_f64, 4, backward ? s_map : s_out, NULL);
  vo_value args[11] = {vo_tensor_value(&in->dl), vo_tensor_value(&rois->dl), vo_float_value(1),
                       vo_int_value(1), vo_int_value(1)};
  int nargs = 5;
  if (backward) {
    for (int i = 0; i < 4; i++) args[nargs++] = vo_int_value(s_map[i]);
  }
  args[nargs++] = vo_int_value(1);  /* sampling_ratio */
  args[nargs++] = vo_bool_value(0); /* aligned */
  DLTensor *outs[1] = {&out->dl};
  if (CHECK_STATUS(vo_call(NULL, op, args, nargs, outs, 1), VO_OK)) {
    for (int i = 0; i < (backward ? 4 : 1); i++)
      CHECK_MSG(vt_get(&out->dl, i) == (backward ? 0.25 : 1.5), "%s: element %d = %g", op->name, i,
                vt_get(&out->dl, i));
  }
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(out);
}

/* roi_pool on a 2x2 map {0, 3, 2, 1} with one RoI (0,0)-(1,1) over it and a
 * 1x1 output: the maximum 3, argmax 1. Its backward sends a unit gradient to
 * that pixel: {0, 1, 0, 0}. */
static void call_roi_pool_by_name(const vo_op_info *op) {
  const int64_t s_map[4] = {1, 1, 2, 2}, s_rois[2] = {1, 5}, s_out[4] = {1, 1, 1, 1};
  const double map[4] = {0, 3, 2, 1}, roi[5] = {0, 0, 0, 1, 1}, one[1] = {1};
  int backward = strcmp(op->name, "roi_pool_backward") == 0;
  vt_tensor *in = vt_tensor_new(vt_f64, 4, backward ? s_out : s_map, backward ? one : map);
  vt_tensor *rois = vt_tensor_new(vt_f64, 2, s_rois, roi);
  vt_tensor *am = vt_tensor_new(vt_i32, 4, s_out, one); /* argmax: in for backward, out forward */
  vt_tensor *out = vt_tensor_new(vt_f64, 4, backward ? s_map : s_out, NULL);
  vo_value args[10] = {vo_tensor_value(&in->dl), vo_tensor_value(&rois->dl)};
  int nargs = 2;
  if (backward) args[nargs++] = vo_tensor_value(&am->dl);
  args[nargs++] = vo_float_value(1);
  args[nargs++] = vo_int_value(1);
  args[nargs++] = vo_int_value(1);
  if (backward) {
    for (int i = 0; i < 4; i++) args[nargs++] = vo_int_value(s_map[i]);
  }
  DLTensor *outs[2] = {&out->dl, &am->dl};
  if (!backward) vt_fill(&am->dl, -7);
  if (CHECK_STATUS(vo_call(NULL, op, args, nargs, outs, backward ? 1 : 2), VO_OK)) {
    if (backward) {
      for (int i = 0; i < 4; i++)
        CHECK_MSG(vt_get(&out->dl, i) == (i == 1 ? 1 : 0), "%s: element %d = %g", op->name, i,
                  vt_get(&out->dl, i));
    } else {
      CHECK_MSG(vt_get(&out->dl, 0) == 3 && vt_get(&am->dl, 0) == 1, "%s: %g argmax %g", op->name,
                vt_get(&out->dl, 0), vt_get(&am->dl, 0));
    }
  }
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(am);
  vt_tensor_free(out);
}

/* ps_roi_align with C = 2, 2x1 bins, on a 2x2 map: channel 0 = {0, 1, 2, 3},
 * channel 1 = {10, 11, 12, 13}. RoI (0.5, 0.5)-(2.5, 2.5) becomes (0, 0)-(2, 2)
 * after the half-pixel offset: bins 1 high and 2 wide, one sample each at
 * x = 1 (the last column) and y = 0.5 (bin 0, channel 0: (1 + 3) / 2 = 2) or
 * y = 1.5 (bin 1, channel 1: clamped to the last row, 13); channel_mapping
 * {0, 1}. The backward of a unit gradient puts 0.5 on channel 0 at (0, 1) and
 * (1, 1), and 1 on channel 1 at (1, 1). */
static void call_ps_roi_align_by_name(const vo_op_info *op) {
  const int64_t s_map[4] = {1, 2, 2, 2}, s_rois[2] = {1, 5}, s_out[4] = {1, 1, 2, 1};
  const double map[8] = {0, 1, 2, 3, 10, 11, 12, 13}, roi[5] = {0, 0.5, 0.5, 2.5, 2.5};
  const double ones[2] = {1, 1}, mapping[2] = {0, 1};
  const double want_fwd[2] = {2, 13}, want_bwd[8] = {0, 0.5, 0, 0.5, 0, 0, 0, 1};
  int backward = strcmp(op->name, "ps_roi_align_backward") == 0;
  vt_tensor *in = vt_tensor_new(vt_f64, 4, backward ? s_out : s_map, backward ? ones : map);
  vt_tensor *rois = vt_tensor_new(vt_f64, 2, s_rois, roi);
  vt_tensor *cm = vt_tensor_new(vt_i32, 4, s_out, mapping);
  vt_tensor *out = vt_tensor_new(vt_f64, 4, backward ? s_map : s_out, NULL);
  vt_tensor *out_cm = vt_tensor_new(vt_i32, 4, s_out, NULL);
  vo_value args[11];
  int nargs = 0;
  args[nargs++] = vo_tensor_value(&in->dl);
  args[nargs++] = vo_tensor_value(&rois->dl);
  if (backward) args[nargs++] = vo_tensor_value(&cm->dl);
  args[nargs++] = vo_float_value(1);
  args[nargs++] = vo_int_value(2); /* pooled_height */
  args[nargs++] = vo_int_value(1); /* pooled_width */
  args[nargs++] = vo_int_value(1); /* sampling_ratio */
  if (backward)
    for (int i = 0; i < 4; i++) args[nargs++] = vo_int_value(s_map[i]);
  DLTensor *outs[2] = {&out->dl, &out_cm->dl};
  if (CHECK_STATUS(vo_call(NULL, op, args, nargs, outs, backward ? 1 : 2), VO_OK)) {
    for (int i = 0; i < (backward ? 8 : 2); i++) {
      double want = backward ? want_bwd[i] : want_fwd[i];
      CHECK_MSG(vt_get(&out->dl, i) == want, "%s: element %d = %g, expected %g", op->name, i,
                vt_get(&out->dl, i), want);
    }
    if (!backward)
      CHECK_MSG(vt_get(&out_cm->dl, 0) == 0 && vt_get(&out_cm->dl, 1) == 1,
                "%s: channel_mapping [%g, %g], expected [0, 1]", op->name, vt_get(&out_cm->dl, 0),
                vt_get(&out_cm->dl, 1));
  }
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(cm);
  vt_tensor_free(out);
  vt_tensor_free(out_cm);
}

/* ps_roi_pool with C = 2, 2x1 bins, on a 3x3 map: channel 0 = 0..8,
 * channel 1 = 10..18 (row-major). RoI (0, 0)-(2, 2): bins 1 row high and 2
 * columns wide; bin 0 averages channel 0 at row 0, columns 0-1: 0.5; bin 1
 * channel 1 at row 1: (13 + 14) / 2 = 13.5; channel_mapping {0, 1}. The
 * backward of a unit gradient puts 0.5 on those four pixels. */
static void call_ps_roi_pool_by_name(const vo_op_info *op) {
  const int64_t s_map[4] = {1, 2, 3, 3}, s_rois[2] = {1, 5}, s_out[4] = {1, 1, 2, 1};
  double map[18], want_bwd[18] = {0};
  for (int i = 0; i < 18; i++) map[i] = i < 9 ? i : i + 1;
  want_bwd[0] = want_bwd[1] = want_bwd[9 + 3] = want_bwd[9 + 4] = 0.5;
  const double roi[5] = {0, 0, 0, 2, 2}, ones[2] = {1, 1}, mapping[2] = {0, 1};
  const double want_fwd[2] = {0.5, 13.5};
  int backward = strcmp(op->name, "ps_roi_pool_backward") == 0;
  vt_tensor *in = vt_tensor_new(vt_f64, 4, backward ? s_out : s_map, backward ? ones : map);
  vt_tensor *rois = vt_tensor_new(vt_f64, 2, s_rois, roi);
  vt_tensor *cm = vt_tensor_new(vt_i32, 4, s_out, mapping);
  vt_tensor *out = vt_tensor_new(vt_f64, 4, backward ? s_map : s_out, NULL);
  vt_tensor *out_cm = vt_tensor_new(vt_i32, 4, s_out, NULL);
  vo_value args[10];
  int nargs = 0;
  args[nargs++] = vo_tensor_value(&in->dl);
  args[nargs++] = vo_tensor_value(&rois->dl);
  if (backward) args[nargs++] = vo_tensor_value(&cm->dl);
  args[nargs++] = vo_float_value(1);
  args[nargs++] = vo_int_value(2); /* pooled_height */
  args[nargs++] = vo_int_value(1); /* pooled_width */
  if (backward)
    for (int i = 0; i < 4; i++) args[nargs++] = vo_int_value(s_map[i]);
  DLTensor *outs[2] = {&out->dl, &out_cm->dl};
  if (CHECK_STATUS(vo_call(NULL, op, args, nargs, outs, backward ? 1 : 2), VO_OK)) {
    for (int i = 0; i < (backward ? 18 : 2); i++) {
      double want = backward ? want_bwd[i] : want_fwd[i];
      CHECK_MSG(vt_get(&out->dl, i) == want, "%s: element %d = %g, expected %g", op->name, i,
                vt_get(&out->dl, i), want);
    }
    if (!backward)
      CHECK_MSG(vt_get(&out_cm->dl, 0) == 0 && vt_get(&out_cm->dl, 1) == 1,
                "%s: channel_mapping [%g, %g], expected [0, 1]", op->name, vt_get(&out_cm->dl, 0),
                vt_get(&out_cm->dl, 1));
  }
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(cm);
  vt_tensor_free(out);
  vt_tensor_free(out_cm);
}

/* multi_scale_roi_align with one pyramid level: every RoI lands on it, so it
 * is roi_align's 2x2-ramp case (1.5; the backward spreads 1/4 per pixel). The
 * backward's output is a list, one tensor per level. */
static void call_multi_scale_by_name(const vo_op_info *op) {
  const int64_t s_map[4] = {1, 1, 2, 2}, s_rois[2] = {1, 5}, s_out[4] = {1, 1, 1, 1};
  const double ramp[4] = {0, 1, 2, 3}, roi[5] = {0, 0, 0, 1, 1}, one[1] = {1}, scale[1] = {1};
  int backward = strcmp(op->name, "multi_scale_roi_align_backward") == 0;
  vt_tensor *map = vt_tensor_new(vt_f64, 4, s_map, ramp);
  vt_tensor *rois = vt_tensor_new(vt_f64, 2, s_rois, roi);
  vt_tensor *grad = vt_tensor_new(vt_f64, 4, s_out, one);
  vt_tensor *out = vt_tensor_new(vt_f64, 4, backward ? s_map : s_out, NULL);
  const DLTensor *levels[1] = {&map->dl};
  vo_value args[10];
  int nargs = 0;
  if (backward) args[nargs++] = vo_tensor_value(&grad->dl);
  if (backward) args[nargs++] = vo_tensor_value(&rois->dl);
  args[nargs++] = vo_tensor_list_value(levels, 1);
  if (!backward) args[nargs++] = vo_tensor_value(&rois->dl);
  args[nargs++] = vo_float_list_value(scale, 1);
  args[nargs++] = vo_int_value(1); /* pooled_height */
  args[nargs++] = vo_int_value(1); /* pooled_width */
  args[nargs++] = vo_int_value(1); /* sampling_ratio; the rest default */
  DLTensor *outs[1] = {&out->dl};
  CHECK(op->num_outputs == (backward ? -1 : 1));
  if (CHECK_STATUS(vo_call(NULL, op, args, nargs, outs, 1), VO_OK)) {
    for (int i = 0; i < (backward ? 4 : 1); i++)
      CHECK_MSG(vt_get(&out->dl, i) == (backward ? 0.25 : 1.5), "%s: element %d = %g", op->name, i,
                vt_get(&out->dl, i));
  }
  vt_tensor_free(map);
  vt_tensor_free(rois);
  vt_tensor_free(grad);
  vt_tensor_free(out);
}

/* deform_conv2d on the 2x2 ramp {0, 1, 2, 3}: 1x1 kernel of weight 2, bias 1,
 * every offset (0.5, 0.5) and mask 0.5, so output pixel (0, 0) samples the
 * ramp's centre, 1.5: 2 * 0.5 * 1.5 + 1 = 2.5. Its backward with a unit
 * gradient: grad_bias = 4 pixels, grad_weight = 0.5 * (1.5 + 1 + 1.25 + 0.75)
 * (the samples at (y, x) = (0.5|1.5, 0.5|1.5); corners outside read 0). */
static void call_deform_conv2d_by_name(const vo_op_info *op) {
  const int64_t s_map[4] = {1, 1, 2, 2}, s_w[4] = {1, 1, 1, 1}, s_off[4] = {1, 2, 2, 2},
                s_mask[4] = {1, 1, 2, 2}, s_b[1] = {1};
  const double ramp[4] = {0, 1, 2, 3}, two[1] = {2}, half8[8] = {.5, .5, .5, .5, .5, .5, .5, .5},
               ones[4] = {1, 1, 1, 1};
  int backward = strcmp(op->name, "deform_conv2d_backward") == 0;
  vt_tensor *in = vt_tensor_new(vt_f64, 4, s_map, ramp), *w = vt_tensor_new(vt_f64, 4, s_w, two);
  vt_tensor *off = vt_tensor_new(vt_f64, 4, s_off, half8);
  vt_tensor *mask = vt_tensor_new(vt_f64, 4, s_mask, half8);
  vt_tensor *bias = vt_tensor_new(vt_f64, 1, s_b, ones),
            *grad = vt_tensor_new(vt_f64, 4, s_map, ones);
  vt_tensor *o[5] = {vt_tensor_new(vt_f64, 4, s_map, NULL), vt_tensor_new(vt_f64, 4, s_w, NULL),
                     vt_tensor_new(vt_f64, 4, s_off, NULL), vt_tensor_new(vt_f64, 4, s_mask, NULL),
                     vt_tensor_new(vt_f64, 1, s_b, NULL)};
  vo_value args[15];
  int nargs = 0;
  if (backward) args[nargs++] = vo_tensor_value(&grad->dl);
  args[nargs++] = vo_tensor_value(&in->dl);
  args[nargs++] = vo_tensor_value(&w->dl);
  args[nargs++] = vo_tensor_value(&off->dl);
  args[nargs++] = vo_tensor_value(&mask->dl);
  args[nargs++] = vo_tensor_value(&bias->dl);
  const int64_t ints[8] = {1, 1, 0, 0, 1, 1, 1, 1}; /* stride, padding, dilation, groups */
  for (int i = 0; i < 8; i++) args[nargs++] = vo_int_value(ints[i]);
  args[nargs++] = vo_bool_value(1);
  DLTensor *outs[5] = {&o[0]->dl, &o[1]->dl, &o[2]->dl, &o[3]->dl, &o[4]->dl};
  if (CHECK_STATUS(vo_call(NULL, op, args, nargs, outs, backward ? 5 : 1), VO_OK)) {
    if (backward)
      CHECK_MSG(vt_get(outs[4], 0) == 4 && vt_get(outs[1], 0) == 2.25,
                "%s: grad_bias %g grad_weight %g, expected 4 and 2.25", op->name,
                vt_get(outs[4], 0), vt_get(outs[1], 0));
    else
      CHECK_MSG(vt_get(outs[0], 0) == 2.5, "%s: out[0] = %g, expected 2.5", op->name,
                vt_get(outs[0], 0));
  }
  vt_tensor *all[] = {in, w, off, mask, bias, grad, o[0], o[1], o[2], o[3], o[4]};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

/* The IoU backwards on the two boxes with a unit gradient: box 1's x1 and x2
 * gradients. IoU 1/7: x2 moves the intersection (+1, height 1) and box 1's
 * area (+2), x1 only the area (-2), so d/dx2 = (7 - 1) / 49 and d/dx1 =
 * 2 / 49. GIoU = IoU - 1 + U/C with C = 9 (x1 also widens the enclosing box:
 * -3): +1/9 at x2, +(-2*9 + 7*3)/81 = 1/27 at x1. DIoU = IoU - rho2/D with
 * rho2 = 2, D = 18 + 1e-7: x2 moves the centre (d rho2 = -1): +1/D; x1 the
 * centre and the enclosing box (dD = -6): +(D - 12)/D^2. CIoU == DIoU here
 * (equal aspect ratios: v = 0 and alpha = 0). Box 2's gradient sums with box
 * 1's to 0 in x (a shift of both changes nothing). */
static void call_iou_backward_by_name(const vo_op_info *op) {
  const int64_t s14[2] = {1, 4}, s11[2] = {1, 1};
  const double one[1] = {1}, d = 18 + 1e-7;
  vt_tensor *a = vt_tensor_new(vt_f64, 2, s14, boxes),
            *b = vt_tensor_new(vt_f64, 2, s14, boxes + 4);
  vt_tensor *g = vt_tensor_new(vt_f64, 2, s11, one);
  vt_tensor *ga = vt_tensor_new(vt_f64, 2, s14, NULL), *gb = vt_tensor_new(vt_f64, 2, s14, NULL);
  double want_x1 = 2.0 / 49, want_x2 = 6.0 / 49;
  if (strcmp(op->name, "generalized_box_iou_backward") == 0)
    want_x1 += 1.0 / 27, want_x2 += 1.0 / 9;
  else if (strcmp(op->name, "box_iou_backward") != 0)
    want_x1 += (d - 12) / (d * d), want_x2 += 1 / d;
  vo_value args[3] = {vo_tensor_value(&g->dl), vo_tensor_value(&a->dl), vo_tensor_value(&b->dl)};
  DLTensor *outs[2] = {&ga->dl, &gb->dl};
  CHECK(op->num_outputs == 2);
  if (CHECK_STATUS(vo_call(NULL, op, args, 3, outs, 2), VO_OK)) {
    double x1 = vt_get(outs[0], 0), x2 = vt_get(outs[0], 2);
    CHECK_MSG(fabs(x1 - want_x1) < 1e-12 && fabs(x2 - want_x2) < 1e-12,
              "%s: grad_boxes1 x1 %.17g x2 %.17g, expected %.17g %.17g", op->name, x1, x2, want_x1,
              want_x2);
    double sum_x = x1 + x2 + vt_get(outs[1], 0) + vt_get(outs[1], 2);
    CHECK_MSG(fabs(sum_x) < 1e-12, "%s: x gradients sum to %g, expected 0", op->name, sum_x);
  }
  vt_tensor *all[] = {a, b, g, ga, gb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

/* An op without a known-value case below: its small sample (float64) from
 * the sample registry, called by name; it must run and give finite outputs. */
static void call_sample_by_name(const vo_op_info *op) {
  vs_sample s;
  vs_build(&s, op->index, VS_SMALL, vt_f64, 0);
  int count = 0;
  vo_tensor_desc desc[VO_MAX_LIST];
  vt_tensor *out[VO_MAX_LIST] = {NULL};
  DLTensor *outs[VO_MAX_LIST];
  if (CHECK_STATUS(vo_infer_num_outputs(NULL, op, s.args, s.num_args, &count), VO_OK) &&
      CHECK_STATUS(vo_infer(NULL, op, s.args, s.num_args, desc, count), VO_OK)) {
    for (int k = 0; k < count; k++) {
      out[k] = vt_tensor_new(desc[k].dtype, desc[k].ndim, desc[k].shape, NULL);
      outs[k] = &out[k]->dl;
    }
    if (CHECK_STATUS(vo_call(NULL, op, s.args, s.num_args, outs, count), VO_OK))
      for (int k = 0; k < count; k++) {
        const int64_t n = vt_numel(outs[k]);
        for (int64_t i = 0; i < n; i++)
          if (!CHECK_MSG(isfinite(vt_get(outs[k], i)), "%s: output %d element %lld = %g", s.label,
                         k, (long long)i, vt_get(outs[k], i)))
            break;
      }
  }
  for (int k = 0; k < count; k++) vt_tensor_free(out[k]);
  vs_free(&s);
}

/* Runs `op` by name and checks its documented value: the two boxes for nms,
 * batched_nms and the IoU forwards, a case above for the other ops it knows,
 * else the op's sample. */
static void call_by_name(const vo_op_info *op) {
  const size_t len = strlen(op->name);
  if (len >= 16 && strcmp(op->name + len - 16, "box_iou_backward") == 0) {
    call_iou_backward_by_name(op);
    return;
  }
  if (strncmp(op->name, "deform_conv2d", 13) == 0) {
    call_deform_conv2d_by_name(op);
    return;
  }
  if (strncmp(op->name, "multi_scale_roi_align", 21) == 0) {
    call_multi_scale_by_name(op);
    return;
  }
  if (strncmp(op->name, "roi_pool", 8) == 0) {
    call_roi_pool_by_name(op);
    return;
  }
  if (strcmp(op->name, "roi_align") == 0 || strcmp(op->name, "roi_align_backward") == 0) {
    call_roi_align_by_name(op);
    return;
  }
  if (strncmp(op->name, "ps_roi_align", 12) == 0) {
    call_ps_roi_align_by_name(op);
    return;
  }
  if (strncmp(op->name, "ps_roi_pool", 11) == 0) {
    call_ps_roi_pool_by_name(op);
    return;
  }
  const int two_box_sets = strcmp(op->name, "nms") == 0 || strcmp(op->name, "batched_nms") == 0 ||
                           (len >= 7 && strcmp(op->name + len - 7, "box_iou") == 0);
  if (!two_box_sets) {
    call_sample_by_name(op);
    return;
  }
  const int64_t s24[2] = {2, 4}, s14[2] = {1, 4}, s2[1] = {2};
  vt_tensor *two = vt_tensor_new(vt_f64, 2, s24, boxes);
  vt_tensor *first = vt_tensor_new(vt_f64, 2, s14, boxes);
  vt_tensor *second = vt_tensor_new(vt_f64, 2, s14, boxes + 4);
  vt_tensor *sc = vt_tensor_new(vt_f64, 1, s2, scores);
  vt_tensor *idxs = vt_tensor_new(vt_i64, 1, s2, NULL);
  vt_tensor *out[2] = {NULL, NULL};
  DLTensor *outs[2] = {NULL, NULL};

  vo_value args[4];
  int nargs;
  if (strcmp(op->name, "nms") == 0 || strcmp(op->name, "batched_nms") == 0) {
    int batched = op->name[0] == 'b';
    args[0] = vo_tensor_value(&two->dl);
    args[1] = vo_tensor_value(&sc->dl);
    args[2] = batched ? vo_tensor_value(&idxs->dl) : vo_float_value(0.1);
    args[3] = vo_float_value(0.1);
    nargs = batched ? 4 : 3;
  } else {
    args[0] = vo_tensor_value(&first->dl);
    args[1] = vo_tensor_value(&second->dl);
    nargs = 2; /* eps, where the op has one, left to its default */
  }

  vo_tensor_desc desc[2];
  memset(desc, 0, sizeof desc);
  if (!CHECK_MSG(op->num_outputs >= 1 && op->num_outputs <= 2, "%s: %d outputs", op->name,
                 op->num_outputs) ||
      !CHECK_STATUS(vo_infer(NULL, op, args, nargs, desc, op->num_outputs), VO_OK))
    goto done;
  for (int i = 0; i < op->num_outputs; i++) {
    out[i] = vt_tensor_new(desc[i].dtype, desc[i].ndim, desc[i].shape, NULL);
    outs[i] = &out[i]->dl;
  }
  if (!CHECK_STATUS(vo_call(NULL, op, args, nargs, outs, op->num_outputs), VO_OK)) goto done;

  if (op->num_outputs == 2) {
    /* IoU 1/7 > 0.1: the higher-scored box 1 suppresses box 0. */
    CHECK_MSG(desc[0].ndim == 1 && desc[0].shape[0] == 2 && desc[1].ndim == 0, "%s: output shapes",
              op->name);
    CHECK_MSG(vt_get(outs[1], 0) == 1 && vt_get(outs[0], 0) == 1 && vt_get(outs[0], 1) == -1,
              "%s: num_kept %g keep [%g, %g], expected 1 [1, -1]", op->name, vt_get(outs[1], 0),
              vt_get(outs[0], 0), vt_get(outs[0], 1));
  } else {
    CHECK_MSG(desc[0].ndim == 2 && desc[0].shape[0] == 1 && desc[0].shape[1] == 1,
              "%s: output shape", op->name);
    double got = vt_get(outs[0], 0), want = expected_value(op->name);
    CHECK_MSG(fabs(got - want) < 1e-12, "%s: got %.17g, expected %.17g", op->name, got, want);
  }
done:
  vt_tensor_free(two);
  vt_tensor_free(first);
  vt_tensor_free(second);
  vt_tensor_free(sc);
  vt_tensor_free(idxs);
  vt_tensor_free(out[0]);
  vt_tensor_free(out[1]);
}

int main(void) {
  int count = vo_op_count();
  int found[NUM_EXPECTED] = {0};
  /* The static archive must register every op of ops.def. */
  CHECK_MSG(count == (int)NUM_EXPECTED, "vo_op_count() = %d, ops.def lists %d", count,
            (int)NUM_EXPECTED);
  for (int i = 0; i < count; i++) {
    const vo_op_info *op = vo_op_get(i);
    if (!CHECK_MSG(op != NULL, "vo_op_get(%d) is NULL", i)) continue;
    CHECK_MSG(op->index == i, "vo_op_get(%d)->index = %d", i, op->index);
    for (size_t k = 0; k < NUM_EXPECTED; k++)
      if (op->name && strcmp(op->name, expected_ops[k]) == 0) found[k]++;
  }
  for (size_t k = 0; k < NUM_EXPECTED; k++) {
    const char *name = expected_ops[k];
    CHECK_MSG(found[k] == 1, "op %s listed %d times by vo_op_get", name, found[k]);
    const vo_op_info *op = vo_op_find(name);
    if (!CHECK_MSG(op != NULL, "vo_op_find(\"%s\") is NULL", name)) continue;
    size_t len = strlen(name);
    CHECK_MSG(op->schema && strncmp(op->schema, name, len) == 0 && op->schema[len] == '(',
              "%s: schema \"%s\" does not start with \"%s(\"", name,
              op->schema ? op->schema : "(null)", name);
    CHECK_MSG(op->schema && strstr(op->schema, "->") != NULL, "%s: schema has no outputs", name);
    CHECK(op == vo_op_get(op->index));
    call_by_name(op);
  }
  return vt_finish("test_static_link");
}
