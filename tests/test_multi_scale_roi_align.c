/* multi_scale_roi_align and its backward on the CPU: the FPN level mapping
 * against hand-computed levels, every RoI against roi_align on the level the
 * test assigns it, the backward against per-level roi_align_backward, the
 * double backward of roi_align (adjointness), and every validation error. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

#define LEVELS 4
#define N 2
#define C 3
#define PH 3
#define PW 2
#define SAMPLING 2

/* Feature maps of a 256x320 image at strides 4..32 (FPN P2..P5). */
static const int64_t level_hw[LEVELS][2] = {{64, 80}, {32, 40}, {16, 20}, {8, 10}};
static const double scales[LEVELS] = {0.25, 0.125, 0.0625, 0.03125};

typedef struct pyramid {
  vt_tensor *features[LEVELS];
  const DLTensor *dl[LEVELS];
} pyramid;

static void pyramid_make(pyramid *p, DLDataType dtype, vt_rng *rng) {
  for (int l = 0; l < LEVELS; l++) {
    const int64_t shape[4] = {N, C, level_hw[l][0], level_hw[l][1]};
    p->features[l] = vt_tensor_new(dtype, 4, shape, NULL);
    for (int64_t i = 0; i < vt_numel(&p->features[l]->dl); i++)
      vt_set(&p->features[l]->dl, i, vt_round_to(dtype, vt_rng_uniform(rng, -1, 1)));
    p->dl[l] = &p->features[l]->dl;
  }
}

static void pyramid_free(pyramid *p) {
  for (int l = 0; l < LEVELS; l++) vt_tensor_free(p->features[l]);
}

/* FPN level index (0..3) for a box, or -1 for a NaN level; computed in double
 * here, which agrees with the float32 kernel away from level boundaries (the
 * random boxes below stay away from them). */
static int expected_level(const double *roi) {
  double area = (roi[3] - roi[1]) * (roi[4] - roi[2]);
  if (area < 0) return -1;
  double lvl = floor(4 + log2(sqrt(area) / 224) + 1e-6);
  if (lvl < 2) lvl = 2;
  if (lvl > 5) lvl = 5;
  return (int)lvl - 2;
}

static vo_status run_forward(const pyramid *p, const vt_tensor *rois, vt_tensor *out) {
  return vo_multi_scale_roi_align(NULL, p->dl, scales, LEVELS, &rois->dl, PH, PW, SAMPLING, 224, 4,
                                  0, &out->dl);
}

/* Hand-checked level mapping: sqrt(area) of 224 is level 4 (index 2), 112
 * level 3, 56 level 2; 20 clamps to level 2, 2000 to level 5; a box with
 * negative area has no level and a zero row. */
static void test_level_mapping(void) {
  const double sides[6] = {224, 112, 56, 20, 2000, -30};
  const int want[6] = {2, 1, 0, 0, 3, -1};
  vt_rng rng;
  vt_rng_seed(&rng, 7);
  pyramid p;
  pyramid_make(&p, vt_f64, &rng);
  double roi_values[6 * 5];
  for (int i = 0; i < 6; i++) {
    double *r = &roi_values[i * 5];
    r[0] = i % 2;
    r[1] = 10;
    r[2] = 20;
    r[3] = 10 + fabs(sides[i]);
    r[4] = 20 + sides[i];
    CHECK_MSG(expected_level(r) == want[i], "test's own level for side %g", sides[i]);
  }
  const int64_t rshape[2] = {6, 5}, oshape[4] = {6, C, PH, PW};
  vt_tensor *rois = vt_tensor_new(vt_f64, 2, rshape, roi_values);
  vt_tensor *out = vt_tensor_new(vt_f64, 4, oshape, NULL);
  vt_fill(&out->dl, 12345);
  if (CHECK_STATUS(run_forward(&p, rois, out), VO_OK)) {
    for (int i = 0; i < 6; i++) {
      const int64_t one_shape[2] = {1, 5}, one_out[4] = {1, C, PH, PW};
      vt_tensor *one = vt_tensor_new(vt_f64, 2, one_shape, &roi_values[i * 5]);
      vt_tensor *ref = vt_tensor_new(vt_f64, 4, one_out, NULL);
      if (want[i] >= 0)
        CHECK_STATUS(vo_roi_align(NULL, p.dl[want[i]], &one->dl, scales[want[i]], PH, PW, SAMPLING,
                                  0, &ref->dl),
                     VO_OK);
      else
        vt_fill(&ref->dl, 0);
      for (int64_t e = 0; e < C * PH * PW; e++)
        CHECK_MSG(vt_get(&out->dl, i * C * PH * PW + e) == vt_get(&ref->dl, e),
                  "side %g: element %lld = %g, want %g", sides[i], (long long)e,
                  vt_get(&out->dl, i * C * PH * PW + e), vt_get(&ref->dl, e));
      vt_tensor_free(one);
      vt_tensor_free(ref);
    }
  }
  vt_tensor_free(rois);
  vt_tensor_free(out);
  pyramid_free(&p);
}

/* Random RoIs away from level boundaries, every dtype: each output row equals
 * roi_align on the RoI's level, bit for bit; the backward equals the sum of
 * per-level roi_align_backward calls on each level's RoIs (in order). */
static void test_random(DLDataType dtype, uint64_t seed) {
  enum { K = 40 };
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  pyramid p;
  pyramid_make(&p, dtype, &rng);
  double roi_values[K * 5];
  int level[K];
  for (int i = 0; i < K; i++) {
    double *r = &roi_values[i * 5];
    double side, frac;
    do { /* log-uniform sides, rejecting those within 5% of a level boundary */
      side = exp(vt_rng_uniform(&rng, log(8), log(900)));
      double x = 4 + log2(side / 224);
      frac = x - floor(x);
    } while (frac < 0.05 || frac > 0.95);
    r[0] = (double)vt_rng_int(&rng, N);
    r[1] = vt_round_to(dtype, vt_rng_uniform(&rng, -20, 300));
    r[2] = vt_round_to(dtype, vt_rng_uniform(&rng, -20, 240));
    r[3] = vt_round_to(dtype, r[1] + side * vt_rng_uniform(&rng, 0.9, 1.1));
    r[4] = vt_round_to(dtype, r[2] + side * side / (r[3] - r[1]));
    level[i] = expected_level(r);
  }
  const int64_t rshape[2] = {K, 5}, oshape[4] = {K, C, PH, PW};
  vt_tensor *rois = vt_tensor_new(dtype, 2, rshape, roi_values);
  vt_tensor *out = vt_tensor_new(dtype, 4, oshape, NULL);
  vt_tensor *grad = vt_tensor_new(dtype, 4, oshape, NULL);
  for (int64_t e = 0; e < vt_numel(&grad->dl); e++)
    vt_set(&grad->dl, e, vt_round_to(dtype, vt_rng_uniform(&rng, -1, 1)));
  if (CHECK_STATUS(run_forward(&p, rois, out), VO_OK)) {
    for (int i = 0; i < K; i++) {
      const int64_t one_shape[2] = {1, 5}, one_out[4] = {1, C, PH, PW};
      vt_tensor *one = vt_tensor_new(dtype, 2, one_shape, &roi_values[i * 5]);
      vt_tensor *ref = vt_tensor_new(dtype, 4, one_out, NULL);
      CHECK_STATUS(vo_roi_align(NULL, p.dl[level[i]], &one->dl, scales[level[i]], PH, PW, SAMPLING,
                                0, &ref->dl),
                   VO_OK);
      for (int64_t e = 0; e < C * PH * PW; e++)
        CHECK_MSG(vt_get(&out->dl, i * C * PH * PW + e) == vt_get(&ref->dl, e),
                  "%s seed %llu roi %d: element %lld differs", vt_dtype_name(dtype),
                  (unsigned long long)seed, i, (long long)e);
      vt_tensor_free(one);
      vt_tensor_free(ref);
    }
  }

  vt_tensor *grads[LEVELS];
  DLTensor *grad_dl[LEVELS];
  for (int l = 0; l < LEVELS; l++) {
    grads[l] = vt_tensor_new(dtype, 4, p.features[l]->shape, NULL);
    grad_dl[l] = &grads[l]->dl;
  }
  if (CHECK_STATUS(vo_multi_scale_roi_align_backward(NULL, &grad->dl, &rois->dl, p.dl, scales,
                                                     LEVELS, PH, PW, SAMPLING, 224, 4, 0, grad_dl),
                   VO_OK)) {
    for (int l = 0; l < LEVELS; l++) {
      /* The level's RoIs and their gradients, in RoI order. */
      double sub_rois[K * 5], sub_grad[K * C * PH * PW];
      int64_t count = 0;
      for (int i = 0; i < K; i++) {
        if (level[i] != l) continue;
        memcpy(&sub_rois[count * 5], &roi_values[i * 5], sizeof(double) * 5);
        for (int64_t e = 0; e < C * PH * PW; e++)
          sub_grad[count * C * PH * PW + e] = vt_get(&grad->dl, i * C * PH * PW + e);
        count++;
      }
      vt_tensor *want = vt_tensor_new(dtype, 4, p.features[l]->shape, NULL);
      if (count == 0) {
        vt_fill(&want->dl, 0);
      } else {
        const int64_t srs[2] = {count, 5}, sgs[4] = {count, C, PH, PW};
        vt_tensor *sr = vt_tensor_new(dtype, 2, srs, sub_rois);
        vt_tensor *sg = vt_tensor_new(dtype, 4, sgs, sub_grad);
        CHECK_STATUS(vo_roi_align_backward(NULL, &sg->dl, &sr->dl, scales[l], PH, PW, N, C,
                                           level_hw[l][0], level_hw[l][1], SAMPLING, 0, &want->dl),
                     VO_OK);
        vt_tensor_free(sr);
        vt_tensor_free(sg);
      }
      int64_t bad = 0;
      for (int64_t e = 0; e < vt_numel(&want->dl); e++)
        bad += vt_get(grad_dl[l], e) != vt_get(&want->dl, e);
      CHECK_MSG(bad == 0, "%s seed %llu: level %d gradient differs in %lld elements",
                vt_dtype_name(dtype), (unsigned long long)seed, l, (long long)bad);
      vt_tensor_free(want);
    }
  }
  for (int l = 0; l < LEVELS; l++) vt_tensor_free(grads[l]);
  vt_tensor_free(rois);
  vt_tensor_free(out);
  vt_tensor_free(grad);
  pyramid_free(&p);
}

/* roi_align_backward is linear in grad, and its registered backward is
 * roi_align: <backward(g), v> must equal <g, roi_align(v)>. */
static void test_double_backward_is_adjoint(void) {
  const vo_op_info *bw = vo_op_find("roi_align_backward");
  if (!CHECK(bw != NULL && bw->backward != NULL)) return;
  CHECK_MSG(strcmp(bw->backward, "roi_align") == 0, "backward of roi_align_backward is %s",
            bw->backward);
  vt_rng rng;
  vt_rng_seed(&rng, 99);
  const int64_t vshape[4] = {N, C, 11, 13}, rshape[2] = {5, 5}, gshape[4] = {5, C, PH, PW};
  vt_tensor *v = vt_tensor_new(vt_f64, 4, vshape, NULL);
  vt_tensor *g = vt_tensor_new(vt_f64, 4, gshape, NULL);
  vt_tensor *rois = vt_tensor_new(vt_f64, 2, rshape, NULL);
  vt_tensor *bg = vt_tensor_new(vt_f64, 4, vshape, NULL);
  vt_tensor *fv = vt_tensor_new(vt_f64, 4, gshape, NULL);
  for (int64_t e = 0; e < vt_numel(&v->dl); e++) vt_set(&v->dl, e, vt_rng_uniform(&rng, -1, 1));
  for (int64_t e = 0; e < vt_numel(&g->dl); e++) vt_set(&g->dl, e, vt_rng_uniform(&rng, -1, 1));
  for (int i = 0; i < 5; i++) {
    double x = vt_rng_uniform(&rng, -2, 10), y = vt_rng_uniform(&rng, -2, 8);
    const double r[5] = {(double)(i % N), x, y, x + vt_rng_uniform(&rng, 0.5, 6),
                         y + vt_rng_uniform(&rng, 0.5, 6)};
    for (int j = 0; j < 5; j++) vt_set(&rois->dl, i * 5 + j, r[j]);
  }
  for (int aligned = 0; aligned < 2; aligned++) {
    if (!CHECK_STATUS(vo_roi_align_backward(NULL, &g->dl, &rois->dl, 0.5, PH, PW, N, C, 11, 13, -1,
                                            aligned, &bg->dl),
                      VO_OK) ||
        !CHECK_STATUS(vo_roi_align(NULL, &v->dl, &rois->dl, 0.5, PH, PW, -1, aligned, &fv->dl),
                      VO_OK))
      continue;
    double lhs = 0, rhs = 0;
    for (int64_t e = 0; e < vt_numel(&v->dl); e++) lhs += vt_get(&bg->dl, e) * vt_get(&v->dl, e);
    for (int64_t e = 0; e < vt_numel(&g->dl); e++) rhs += vt_get(&g->dl, e) * vt_get(&fv->dl, e);
    CHECK_MSG(fabs(lhs - rhs) <= 1e-12 * (1 + fabs(lhs)),
              "aligned %d: <B g, v> = %.17g but <g, F v> = %.17g", aligned, lhs, rhs);
  }
  vt_tensor_free(v);
  vt_tensor_free(g);
  vt_tensor_free(rois);
  vt_tensor_free(bg);
  vt_tensor_free(fv);
}

static void test_errors(void) {
  vt_rng rng;
  vt_rng_seed(&rng, 3);
  pyramid p;
  pyramid_make(&p, vt_f32, &rng);
  const double roi_values[5] = {0, 10, 10, 60, 60};
  const int64_t rshape[2] = {1, 5}, oshape[4] = {1, C, PH, PW};
  vt_tensor *rois = vt_tensor_new(vt_f32, 2, rshape, roi_values);
  vt_tensor *out = vt_tensor_new(vt_f32, 4, oshape, NULL);
  const char *op = "multi_scale_roi_align";

  const double not_halving[LEVELS] = {0.25, 0.125, 0.125, 0.03125};
  CHECK_STATUS(vo_multi_scale_roi_align(NULL, p.dl, not_halving, LEVELS, &rois->dl, PH, PW, 2, 224,
                                        4, 0, &out->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS(op);
  CHECK_ERROR_HAS("scales[2]");
  const double not_pow2[LEVELS] = {0.3, 0.15, 0.075, 0.0375};
  CHECK_STATUS(vo_multi_scale_roi_align(NULL, p.dl, not_pow2, LEVELS, &rois->dl, PH, PW, 2, 224, 4,
                                        0, &out->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("power of two");
  /* One scale short of the levels: the list lengths disagree. */
  const vo_value args[9] = {vo_tensor_list_value(p.dl, LEVELS),
                            vo_tensor_value(&rois->dl),
                            vo_float_list_value(scales, LEVELS - 1),
                            vo_int_value(PH),
                            vo_int_value(PW),
                            vo_int_value(2),
                            vo_int_value(224),
                            vo_int_value(4),
                            vo_bool_value(0)};
  DLTensor *outs[1] = {&out->dl};
  CHECK_STATUS(vo_call(NULL, vo_op_find(op), args, 9, outs, 1), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("scales");
  /* Defaults: 6 arguments suffice (canonical_scale, canonical_level, aligned). */
  CHECK_STATUS(vo_call(NULL, vo_op_find(op), args, 6, outs, 1), VO_ERROR_INVALID_ARGUMENT);
  vo_value ok_args[6];
  memcpy(ok_args, args, sizeof ok_args);
  ok_args[2] = vo_float_list_value(scales, LEVELS);
  CHECK_STATUS(vo_call(NULL, vo_op_find(op), ok_args, 6, outs, 1), VO_OK);
  /* Empty list, NULL items. */
  ok_args[0] = vo_tensor_list_value(p.dl, 0);
  CHECK_STATUS(vo_call(NULL, vo_op_find(op), ok_args, 6, outs, 1), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("features");
  ok_args[0] = vo_tensor_list_value(NULL, LEVELS);
  CHECK_STATUS(vo_call(NULL, vo_op_find(op), ok_args, 6, outs, 1), VO_ERROR_INVALID_ARGUMENT);
  /* A level with other channels, or another dtype. */
  const int64_t odd_shape[4] = {N, C + 1, 8, 10};
  vt_tensor *odd = vt_tensor_new(vt_f32, 4, odd_shape, NULL);
  const DLTensor *mixed[LEVELS] = {p.dl[0], p.dl[1], p.dl[2], &odd->dl};
  CHECK_STATUS(vo_multi_scale_roi_align(NULL, mixed, scales, LEVELS, &rois->dl, PH, PW, 2, 224, 4,
                                        0, &out->dl),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("features[3]");
  vt_tensor *f64 = vt_tensor_new(vt_f64, 4, p.features[3]->shape, NULL);
  mixed[3] = &f64->dl;
  CHECK_STATUS(vo_multi_scale_roi_align(NULL, mixed, scales, LEVELS, &rois->dl, PH, PW, 2, 224, 4,
                                        0, &out->dl),
               VO_ERROR_UNSUPPORTED_DTYPE);
  /* A batch index past N, a NaN coordinate. */
  vt_set(&rois->dl, 0, N);
  CHECK_STATUS(run_forward(&p, rois, out), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("rois[0, 0]");
  vt_set(&rois->dl, 0, 0);
  vt_set(&rois->dl, 3, NAN);
  CHECK_STATUS(run_forward(&p, rois, out), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("not finite");
  vt_set(&rois->dl, 3, 60);
  /* The backward wants one output per level, shaped like the level. */
  DLTensor *too_few[LEVELS - 1] = {NULL, NULL, NULL};
  vt_tensor *g = vt_tensor_new(vt_f32, 4, oshape, NULL);
  CHECK_STATUS(vo_call(NULL, vo_op_find("multi_scale_roi_align_backward"),
                       (const vo_value[]){vo_tensor_value(&g->dl), vo_tensor_value(&rois->dl),
                                          vo_tensor_list_value(p.dl, LEVELS),
                                          vo_float_list_value(scales, LEVELS), vo_int_value(PH),
                                          vo_int_value(PW), vo_int_value(2)},
                       7, too_few, LEVELS - 1),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("outputs");
  CHECK(vo_op_find("multi_scale_roi_align_backward")->num_outputs == -1);
  vt_tensor_free(g);
  vt_tensor_free(f64);
  vt_tensor_free(odd);
  vt_tensor_free(rois);
  vt_tensor_free(out);
  pyramid_free(&p);
}

int main(void) {
  test_level_mapping();
  const DLDataType *dtypes[4] = {&vt_f32, &vt_f64, &vt_f16, &vt_bf16};
  for (int d = 0; d < 4; d++)
    for (uint64_t seed = 1; seed <= 3; seed++) test_random(*dtypes[d], seed);
  test_double_backward_is_adjoint();
  test_errors();
  return vt_finish("test_multi_scale_roi_align");
}
