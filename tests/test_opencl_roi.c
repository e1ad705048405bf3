/* The OpenCL RoI backward paths the cross-backend harness does not reach.
 * Under a workspace limit too small for the RoI boxes, the deterministic
 * gathers of roi_align_backward and multi_scale_roi_align_backward walk
 * every RoI instead; under one too small for the half types' float32
 * accumulator, the fast backward of all three ops falls back to the gather.
 * Each such run must equal the default deterministic run bit for bit, which
 * must equal the CPU's (whose backward adds in the same order). Under a
 * limit of two of the three channels' accumulator, the half types' fast
 * backward of roi_align, roi_pool and multi_scale_roi_align runs in channel
 * chunks (within an ulp of the CPU: atomics), as the ps ops' does in chunks
 * of output channels. float32, float64, float16 and
 * bfloat16. Linked statically for the backend's memory
 * functions. Skipped (77) without an OpenCL device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_test_util.h"

static const vo_backend *be;
static const DLDevice dev = {kDLOpenCL, 0};

enum { N = 2, C = 3, H = 13, W = 11, K = 7, P = 3 };

static vt_tensor *random_tensor(DLDataType dt, int ndim, const int64_t *shape, uint64_t seed) {
  vt_tensor *t = vt_tensor_new(dt, ndim, shape, NULL);
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  for (int64_t i = 0; i < vt_numel(&t->dl); i++) vt_set(&t->dl, i, vt_rng_uniform(&rng, -1, 1));
  return t;
}

/* K RoIs on images 0..N-1, corners from -4 to beyond span, some of them
 * reversed (empty in aligned mode). */
static vt_tensor *rois_of(DLDataType dt, double span, uint64_t seed) {
  const int64_t shape[2] = {K, 5};
  vt_tensor *t = vt_tensor_new(dt, 2, shape, NULL);
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  for (int64_t k = 0; k < K; k++) {
    const double x = vt_rng_uniform(&rng, -4, span), y = vt_rng_uniform(&rng, -4, span);
    const double r[5] = {(double)(k % N), x, y, x + vt_rng_uniform(&rng, -1, span / 2),
                         y + vt_rng_uniform(&rng, -1, span / 2)};
    for (int j = 0; j < 5; j++) vt_set(&t->dl, k * 5 + j, r[j]);
  }
  return t;
}

/* The OpenCL contexts a backward runs under. */
enum { DET, DET_SMALL, FAST_SMALL, FAST_CHUNKED, NUM_MODES };
static const char *const mode_names[NUM_MODES] = {
    "deterministic", "deterministic, 1-byte workspace limit", "fast, 1-byte workspace limit",
    "fast, in channel chunks of a small limit"};
static vo_context *modes[NUM_MODES];

/* The modes dtype dt is compared in: float32 / float64's fast mode adds
 * with atomics straight into grad_input (no workspace, no fixed order). */
static int modes_for(DLDataType dt) { return vt_dtype_is_half(dt) ? NUM_MODES : FAST_SMALL; }

/* got (a device result copied back) against want, bit for bit; in the
 * chunked mode (atomics, whose float32 sums may round either way) within
 * one unit in the last place of the half type. */
static void same_bits(const char *op, DLDataType dt, const char *mode, const vt_tensor *want,
                      const vt_tensor *got) {
  if (mode == mode_names[FAST_CHUNKED]) {
    int64_t worst = 0;
    for (int64_t i = 0; i < vt_numel(&want->dl); i++) {
      const int64_t d = vt_half_ulp_distance(dt, vt_get(&want->dl, i), vt_get(&got->dl, i));
      worst = d > worst ? d : worst;
    }
    CHECK_MSG(worst <= 1, "%s %s on opencl (%s) is %lld ulp from the CPU", op, vt_dtype_name(dt),
              mode, (long long)worst);
    return;
  }
  CHECK_MSG(memcmp(want->mem, got->mem, want->mem_bytes) == 0,
            "%s %s on opencl (%s) differs from %s", op, vt_dtype_name(dt), mode,
            mode == mode_names[DET] ? "the CPU" : "the deterministic run");
}

static void roi_align_backward(DLDataType dt) {
  const int64_t gshape[4] = {K, C, P, P}, ishape[4] = {N, C, H, W};
  vt_tensor *grad = random_tensor(dt, 4, gshape, 11), *rois = rois_of(dt, 12, 12);
  vt_tensor *want = vt_tensor_new(dt, 4, ishape, NULL), *got = vt_tensor_new(dt, 4, ishape, NULL);
  CHECK_STATUS(
      vo_roi_align_backward(NULL, &grad->dl, &rois->dl, 0.8, P, P, N, C, H, W, 0, 1, &want->dl),
      VO_OK);
  for (int m = 0; m < modes_for(dt); m++) {
    vt_fill(&got->dl, 12345); /* (not the last mode's result: every element must be written) */
    DLTensor dg = vt_cl_on_device(grad), dr = vt_cl_on_device(rois), dout = vt_cl_on_device(got);
    if (CHECK_STATUS(vo_roi_align_backward(modes[m], &dg, &dr, 0.8, P, P, N, C, H, W, 0, 1, &dout),
                     VO_OK)) {
      vt_cl_read_back(&dout, got);
      same_bits("roi_align_backward", dt, mode_names[m], want, got);
    }
    vt_cl_free_all();
  }
  vt_tensor_free(grad);
  vt_tensor_free(rois);
  vt_tensor_free(want);
  vt_tensor_free(got);
}

static void roi_pool_backward(DLDataType dt) {
  const int64_t gshape[4] = {K, C, P, P}, ishape[4] = {N, C, H, W};
  vt_tensor *in = random_tensor(dt, 4, ishape, 21), *rois = rois_of(dt, 12, 22);
  vt_tensor *grad = random_tensor(dt, 4, gshape, 23);
  vt_tensor *out = vt_tensor_new(dt, 4, gshape, NULL),
            *argmax = vt_tensor_new(vt_i32, 4, gshape, NULL);
  vt_tensor *want = vt_tensor_new(dt, 4, ishape, NULL), *got = vt_tensor_new(dt, 4, ishape, NULL);
  CHECK_STATUS(vo_roi_pool(NULL, &in->dl, &rois->dl, 0.8, P, P, &out->dl, &argmax->dl), VO_OK);
  CHECK_STATUS(vo_roi_pool_backward(NULL, &grad->dl, &rois->dl, &argmax->dl, 0.8, P, P, N, C, H, W,
                                    &want->dl),
               VO_OK);
  for (int m = 0; m < modes_for(dt); m++) {
    vt_fill(&got->dl, 12345);
    DLTensor dg = vt_cl_on_device(grad), dr = vt_cl_on_device(rois), da = vt_cl_on_device(argmax);
    DLTensor dout = vt_cl_on_device(got);
    if (CHECK_STATUS(vo_roi_pool_backward(modes[m], &dg, &dr, &da, 0.8, P, P, N, C, H, W, &dout),
                     VO_OK)) {
      vt_cl_read_back(&dout, got);
      same_bits("roi_pool_backward", dt, mode_names[m], want, got);
    }
    vt_cl_free_all();
  }
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(grad);
  vt_tensor_free(out);
  vt_tensor_free(argmax);
  vt_tensor_free(want);
  vt_tensor_free(got);
}

/* ps_roi_align and ps_roi_pool (CO output channels, CI = CO * P * P
 * inputs): the half types' fast backward under a limit of one output
 * channel's accumulator (P * P input channels) runs in CO chunks, within an
 * ulp of the CPU. */
static void ps_backward(DLDataType dt, int pool) {
  enum { CO = 2, CI = CO * P * P };
  const int64_t gshape[4] = {K, CO, P, P}, ishape[4] = {N, CI, H, W};
  vt_tensor *in = random_tensor(dt, 4, ishape, 41), *rois = rois_of(dt, 12, 42);
  vt_tensor *grad = random_tensor(dt, 4, gshape, 43);
  vt_tensor *out = vt_tensor_new(dt, 4, gshape, NULL),
            *map = vt_tensor_new(vt_i32, 4, gshape, NULL);
  vt_tensor *want = vt_tensor_new(dt, 4, ishape, NULL), *got = vt_tensor_new(dt, 4, ishape, NULL);
  const char *op = pool ? "ps_roi_pool_backward" : "ps_roi_align_backward";
  CHECK_STATUS(pool ? vo_ps_roi_pool(NULL, &in->dl, &rois->dl, 0.8, P, P, &out->dl, &map->dl)
                    : vo_ps_roi_align(NULL, &in->dl, &rois->dl, 0.8, P, P, 2, &out->dl, &map->dl),
               VO_OK);
  CHECK_STATUS(pool ? vo_ps_roi_pool_backward(NULL, &grad->dl, &rois->dl, &map->dl, 0.8, P, P, N,
                                              CI, H, W, &want->dl)
                    : vo_ps_roi_align_backward(NULL, &grad->dl, &rois->dl, &map->dl, 0.8, P, P, 2,
                                               N, CI, H, W, &want->dl),
               VO_OK);
  vo_context *ctx;
  if (vo_context_create(&ctx) != VO_OK) vt_cl_die("vo_context_create");
  vo_context_set_workspace_limit(ctx, sizeof(float) * N * P * P * H * W);
  vt_fill(&got->dl, 12345);
  DLTensor dg = vt_cl_on_device(grad), dr = vt_cl_on_device(rois), dm = vt_cl_on_device(map);
  DLTensor dout = vt_cl_on_device(got);
  const vo_status st =
      pool ? vo_ps_roi_pool_backward(ctx, &dg, &dr, &dm, 0.8, P, P, N, CI, H, W, &dout)
           : vo_ps_roi_align_backward(ctx, &dg, &dr, &dm, 0.8, P, P, 2, N, CI, H, W, &dout);
  if (CHECK_STATUS(st, VO_OK)) {
    vt_cl_read_back(&dout, got);
    same_bits(op, dt, mode_names[FAST_CHUNKED], want, got);
  }
  vt_cl_free_all();
  vo_context_destroy(ctx);
  vt_tensor *ts[] = {in, rois, grad, out, map, want, got};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) vt_tensor_free(ts[i]);
}

/* Two levels (scales 1/4, 1/8 of a 52 x 44 image); canonical scale 16 at
 * level 2 sends the RoIs (sides up to ~26) to both. */
static void msra_backward(DLDataType dt) {
  enum { L = 2 };
  const double scales[L] = {0.25, 0.125};
  const int64_t gshape[4] = {K, C, P, P};
  const int64_t fshape[L][4] = {{N, C, H, W}, {N, C, (H + 1) / 2, (W + 1) / 2}};
  vt_tensor *grad = random_tensor(dt, 4, gshape, 31), *rois = rois_of(dt, 44, 32);
  vt_tensor *feat[L], *want[L], *got[L];
  const DLTensor *hf[L];
  DLTensor *hw[L];
  for (int l = 0; l < L; l++) {
    feat[l] = vt_tensor_new(dt, 4, fshape[l], NULL);
    want[l] = vt_tensor_new(dt, 4, fshape[l], NULL);
    got[l] = vt_tensor_new(dt, 4, fshape[l], NULL);
    hf[l] = &feat[l]->dl;
    hw[l] = &want[l]->dl;
  }
  CHECK_STATUS(vo_multi_scale_roi_align_backward(NULL, &grad->dl, &rois->dl, hf, scales, L, P, P, 2,
                                                 16, 2, 1, hw),
               VO_OK);
  for (int m = 0; m < modes_for(dt); m++) {
    DLTensor dg = vt_cl_on_device(grad), dr = vt_cl_on_device(rois), df[L], dout[L];
    const DLTensor *pf[L];
    DLTensor *po[L];
    for (int l = 0; l < L; l++) {
      vt_fill(&got[l]->dl, 12345);
      df[l] = vt_cl_on_device(feat[l]);
      dout[l] = vt_cl_on_device(got[l]);
      pf[l] = &df[l];
      po[l] = &dout[l];
    }
    if (CHECK_STATUS(vo_multi_scale_roi_align_backward(modes[m], &dg, &dr, pf, scales, L, P, P, 2,
                                                       16, 2, 1, po),
                     VO_OK)) {
      for (int l = 0; l < L; l++) {
        vt_cl_read_back(&dout[l], got[l]);
        same_bits(l ? "multi_scale_roi_align_backward (level 1)"
                    : "multi_scale_roi_align_backward (level 0)",
                  dt, mode_names[m], want[l], got[l]);
      }
    }
    vt_cl_free_all();
  }
  for (int l = 0; l < L; l++) {
    vt_tensor_free(feat[l]);
    vt_tensor_free(want[l]);
    vt_tensor_free(got[l]);
  }
  vt_tensor_free(grad);
  vt_tensor_free(rois);
}

int main(void) {
  be = vo_backend_for_device(kDLOpenCL);
  const char *why = "not built";
  vt_cl_use(be, dev, "test_opencl_roi");
  if (!be || !vo_backend_available(be, &why)) {
    printf("test_opencl_roi: SKIP: no OpenCL device (%s)\n", why);
    return 77;
  }
  for (int m = 0; m < NUM_MODES; m++) {
    if (vo_context_create(&modes[m]) != VO_OK) vt_cl_die("vo_context_create");
    if (m != FAST_SMALL && m != FAST_CHUNKED) vo_context_set_deterministic(modes[m], 1);
    if (m != DET) vo_context_set_workspace_limit(modes[m], 1);
  }
  /* the half types' float32 accumulator in chunks of two of the C = 3
   * channels (roi_align, roi_pool; multi_scale_roi_align in one-channel chunks) */
  vo_context_set_workspace_limit(modes[FAST_CHUNKED], 2 * sizeof(float) * N * H * W);
  const DLDataType dtypes[4] = {vt_f32, vt_f64, vt_f16, vt_bf16};
  for (int d = 0; d < 4; d++) {
    const DLDataType dt = dtypes[d];
    roi_align_backward(dt);
    roi_pool_backward(dt);
    msra_backward(dt);
    if (vt_dtype_is_half(dt)) {
      ps_backward(dt, 0);
      ps_backward(dt, 1);
    }
  }
  for (int m = 0; m < NUM_MODES; m++) vo_context_destroy(modes[m]);
  return vt_finish("test_opencl_roi");
}
