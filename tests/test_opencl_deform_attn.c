/* deform_attn's OpenCL paths the cross-backend harness does not reach: the
 * backward under workspace limits that hold one or two images of float32
 * grad_value (runs of images for the half types), bit for bit the CPU's in
 * the deterministic mode and close to it in the fast one; a limit below one
 * image (a clear out-of-memory error); levels without keys and heads
 * without channels; an inconsistent level_start_index refused by the
 * device check with the CPU's message. Linked statically for the backend's
 * memory functions. Skipped (77) without an OpenCL device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_test_util.h"

static const vo_backend *be;
static const DLDevice dev = {kDLOpenCL, 0};

/* N images, two levels (4 x 5 and 3 x 2: S = 26 keys), M heads of D
 * channels, Q queries, P points. */
enum { N = 3, S = 26, M = 2, D = 3, Q = 4, L = 2, P = 3 };
static const double shapes_values[2 * L] = {4, 5, 3, 2};
static const double starts_good[L] = {0, 20};

static vt_tensor *random_tensor(DLDataType dt, int ndim, const int64_t *shape, double lo, double hi,
                                uint64_t seed) {
  vt_tensor *t = vt_tensor_new(dt, ndim, shape, NULL);
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  for (int64_t i = 0; i < vt_numel(&t->dl); i++) vt_set(&t->dl, i, vt_rng_uniform(&rng, lo, hi));
  return t;
}

/* The op's inputs on the host: value, spatial_shapes, level_start_index,
 * sampling_loc (some outside [0, 1]), attn_weight, grad_output. */
typedef struct inputs {
  vt_tensor *t[6];
} inputs;

static void make_inputs(inputs *in, DLDataType dt, const double *starts) {
  const int64_t vs[4] = {N, S, M, D}, ss[2] = {L, 2}, st[1] = {L};
  const int64_t ls[6] = {N, Q, M, L, P, 2}, as[5] = {N, Q, M, L, P}, gs[3] = {N, Q, M * D};
  in->t[0] = random_tensor(dt, 4, vs, -1, 1, 11);
  in->t[1] = vt_tensor_new(vt_i64, 2, ss, shapes_values);
  in->t[2] = vt_tensor_new(vt_i64, 1, st, starts);
  in->t[3] = random_tensor(dt, 6, ls, -0.2, 1.2, 12);
  in->t[4] = random_tensor(dt, 5, as, 0, 1, 13);
  in->t[5] = random_tensor(dt, 3, gs, -1, 1, 14);
}

static void free_inputs(inputs *in) {
  for (int k = 0; k < 6; k++) vt_tensor_free(in->t[k]);
}

/* The three gradients, on the host. */
typedef struct grads {
  vt_tensor *t[3];
} grads;

static void make_grads(grads *g, DLDataType dt) {
  const int64_t vs[4] = {N, S, M, D}, ls[6] = {N, Q, M, L, P, 2}, as[5] = {N, Q, M, L, P};
  g->t[0] = vt_tensor_new(dt, 4, vs, NULL);
  g->t[1] = vt_tensor_new(dt, 6, ls, NULL);
  g->t[2] = vt_tensor_new(dt, 5, as, NULL);
}

static void free_grads(grads *g) {
  for (int k = 0; k < 3; k++) vt_tensor_free(g->t[k]);
}

/* The backward on the CPU (device 0) or OpenCL (1) under ctx into g. */
static vo_status backward(const vo_context *ctx, const inputs *in, int on_opencl, grads *g) {
  DLTensor a[6], o[3];
  for (int k = 0; k < 6; k++) a[k] = on_opencl ? vt_cl_on_device(in->t[k]) : in->t[k]->dl;
  for (int k = 0; k < 3; k++) o[k] = on_opencl ? vt_cl_on_device(g->t[k]) : g->t[k]->dl;
  const vo_status st = vo_deform_attn_backward(ctx, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], 1,
                                               &o[0], &o[1], &o[2]);
  if (on_opencl && st == VO_OK)
    for (int k = 0; k < 3; k++) vt_cl_read_back(&o[k], g->t[k]);
  vt_cl_free_all();
  return st;
}

/* Largest difference between two tensors of the same shape. */
static double max_diff(const vt_tensor *a, const vt_tensor *b) {
  double worst = 0;
  for (int64_t i = 0; i < vt_numel(&a->dl); i++) {
    const double d = vt_get(&a->dl, i) - vt_get(&b->dl, i);
    if (d > worst || -d > worst) worst = d < 0 ? -d : d;
  }
  return worst;
}

/* The backward under limits of one and two images of float32 grad_value
 * (runs of images for the half types; float32 and float64 accumulate in
 * grad_value itself and need no workspace). */
static void limited_runs(DLDataType dt) {
  inputs in;
  make_inputs(&in, dt, starts_good);
  grads ref;
  make_grads(&ref, dt);
  vo_context *cpu;
  if (vo_context_create(&cpu) != VO_OK) vt_cl_die("vo_context_create");
  CHECK(backward(cpu, &in, 0, &ref) == VO_OK);
  const size_t image = (size_t)S * M * D * sizeof(float);
  const size_t limits[3] = {image, 2 * image, image + image / 2};
  for (int det = 0; det < 2; det++)
    for (int k = 0; k < 3; k++) {
      vo_context *ctx;
      if (vo_context_create(&ctx) != VO_OK) vt_cl_die("vo_context_create");
      vo_context_set_deterministic(ctx, det);
      vo_context_set_workspace_limit(ctx, limits[k]);
      grads got;
      make_grads(&got, dt);
      if (CHECK_MSG(backward(ctx, &in, 1, &got) == VO_OK, "%s, limit %zu: %s", vt_dtype_name(dt),
                    limits[k], vo_last_error()))
        for (int j = 0; j < 3; j++) {
          if (det || j > 0)
            CHECK_MSG(memcmp(got.t[j]->mem, ref.t[j]->mem, ref.t[j]->mem_bytes) == 0,
                      "%s %s, limit %zu: gradient %d differs from the CPU's", vt_dtype_name(dt),
                      det ? "deterministic" : "fast", limits[k], j);
          else /* fast grad_value: float32 atomics in another order, rounded once */
            CHECK_MSG(max_diff(got.t[j], ref.t[j]) <= 0.02, "%s fast, limit %zu: grad_value %g off",
                      vt_dtype_name(dt), limits[k], max_diff(got.t[j], ref.t[j]));
        }
      free_grads(&got);
      vo_context_destroy(ctx);
    }
  /* below one image: the half types are refused, naming the op and the bytes */
  if (!vt_dtype_is_half(dt)) {
    vo_context_destroy(cpu);
    free_grads(&ref);
    free_inputs(&in);
    return;
  }
  vo_context *tiny;
  if (vo_context_create(&tiny) != VO_OK) vt_cl_die("vo_context_create");
  vo_context_set_workspace_limit(tiny, image - 1);
  grads got;
  make_grads(&got, dt);
  CHECK(backward(tiny, &in, 1, &got) == VO_ERROR_OUT_OF_MEMORY);
  CHECK_ERROR_HAS("_deform_attn_backward");
  char bytes[32];
  snprintf(bytes, sizeof bytes, "%zu bytes", image);
  CHECK_ERROR_HAS(bytes);
  free_grads(&got);
  vo_context_destroy(tiny);
  vo_context_destroy(cpu);
  free_grads(&ref);
  free_inputs(&in);
}

/* Inconsistent levels: the CPU's message on OpenCL too. */
static void bad_levels(DLDataType dt, const double *starts) {
  inputs in;
  make_inputs(&in, dt, starts);
  vo_context *ctx;
  if (vo_context_create(&ctx) != VO_OK) vt_cl_die("vo_context_create");
  grads g;
  make_grads(&g, dt);
  CHECK(backward(ctx, &in, 0, &g) == VO_ERROR_INVALID_ARGUMENT);
  char cpu_msg[512];
  snprintf(cpu_msg, sizeof cpu_msg, "%s", vo_last_error());
  CHECK(backward(ctx, &in, 1, &g) == VO_ERROR_INVALID_ARGUMENT);
  CHECK_MSG(strcmp(cpu_msg, vo_last_error()) == 0, "CPU: \"%s\", OpenCL: \"%s\"", cpu_msg,
            vo_last_error());
  printf("  bad levels (%s): %s\n", vt_dtype_name(dt), vo_last_error());
  free_grads(&g);
  vo_context_destroy(ctx);
  free_inputs(&in);
}

/* Levels without keys (S = 0) and heads without channels (D = 0): the
 * forward and backward equal the CPU's (zeros) and write every element. */
static void empty_cases(DLDataType dt) {
  static const double no_keys[4] = {0, 5, 2, 0}, one_level[2] = {2, 3}, zero_starts[2] = {0, 0};
  for (int c = 0; c < 2; c++) {
    const int64_t levels = c == 0 ? 2 : 1, keys = c == 0 ? 0 : 6, d = c == 0 ? 3 : 0;
    const int64_t vs[4] = {2, keys, 2, d}, ss[2] = {levels, 2}, st[1] = {levels};
    const int64_t ls[6] = {2, 3, 2, levels, 2, 2}, as[5] = {2, 3, 2, levels, 2};
    const int64_t gs[3] = {2, 3, 2 * d};
    inputs in;
    in.t[0] = random_tensor(dt, 4, vs, -1, 1, 21);
    in.t[1] = vt_tensor_new(vt_i64, 2, ss, c == 0 ? no_keys : one_level);
    in.t[2] = vt_tensor_new(vt_i64, 1, st, zero_starts);
    in.t[3] = random_tensor(dt, 6, ls, -0.2, 1.2, 22);
    in.t[4] = random_tensor(dt, 5, as, 0, 1, 23);
    in.t[5] = random_tensor(dt, 3, gs, -1, 1, 24);
    const int64_t os[3] = {2, 3, 2 * d};
    vt_tensor *ref = vt_tensor_new(dt, 3, os, NULL), *got = vt_tensor_new(dt, 3, os, NULL);
    vt_fill(&got->dl, 7); /* every element must be written */
    vo_context *ctx;
    if (vo_context_create(&ctx) != VO_OK) vt_cl_die("vo_context_create");
    DLTensor a[6];
    for (int k = 0; k < 5; k++) a[k] = vt_cl_on_device(in.t[k]);
    DLTensor o = vt_cl_on_device(got);
    CHECK(vo_deform_attn(ctx, &in.t[0]->dl, &in.t[1]->dl, &in.t[2]->dl, &in.t[3]->dl, &in.t[4]->dl,
                         1, &ref->dl) == VO_OK);
    CHECK_MSG(vo_deform_attn(ctx, &a[0], &a[1], &a[2], &a[3], &a[4], 1, &o) == VO_OK, "%s",
              vo_last_error());
    vt_cl_read_back(&o, got);
    vt_cl_free_all();
    CHECK_MSG(memcmp(got->mem, ref->mem, ref->mem_bytes) == 0, "%s empty case %d: forward differs",
              vt_dtype_name(dt), c);
    const int64_t gvs[4] = {2, keys, 2, d};
    grads gr, gg;
    gr.t[0] = vt_tensor_new(dt, 4, gvs, NULL);
    gr.t[1] = vt_tensor_new(dt, 6, ls, NULL);
    gr.t[2] = vt_tensor_new(dt, 5, as, NULL);
    gg.t[0] = vt_tensor_new(dt, 4, gvs, NULL);
    gg.t[1] = vt_tensor_new(dt, 6, ls, NULL);
    gg.t[2] = vt_tensor_new(dt, 5, as, NULL);
    for (int k = 0; k < 3; k++) vt_fill(&gg.t[k]->dl, 7);
    CHECK(backward(ctx, &in, 0, &gr) == VO_OK);
    for (int det = 0; det < 2; det++) {
      vo_context_set_deterministic(ctx, det);
      CHECK_MSG(backward(ctx, &in, 1, &gg) == VO_OK, "%s", vo_last_error());
      for (int k = 0; k < 3; k++)
        CHECK_MSG(memcmp(gg.t[k]->mem, gr.t[k]->mem, gr.t[k]->mem_bytes) == 0,
                  "%s empty case %d: gradient %d differs", vt_dtype_name(dt), c, k);
    }
    free_grads(&gr);
    free_grads(&gg);
    vt_tensor_free(ref);
    vt_tensor_free(got);
    vo_context_destroy(ctx);
    free_inputs(&in);
  }
}

int main(void) {
  be = vo_backend_for_device(kDLOpenCL);
  const char *why = "not built";
  vt_cl_use(be, dev, "test_opencl_deform_attn");
  if (!be || !vo_backend_available(be, &why)) {
    printf("test_opencl_deform_attn: SKIP: no OpenCL device (%s)\n", why);
    return 77;
  }
  const int fp64 = strstr(why, "no fp64") == NULL; /* else float64 calls are refused */
  const DLDataType dtypes[4] = {vt_f32, vt_f64, vt_f16, vt_bf16};
  for (int d = 0; d < 4; d++)
    if (fp64 || dtypes[d].bits != 64) {
      limited_runs(dtypes[d]);
      empty_cases(dtypes[d]);
    }
  const double starts_shifted[L] = {0, 21}, starts_late[L] = {1, 21};
  bad_levels(vt_f32, starts_shifted);
  bad_levels(vt_f16, starts_late);
  return vt_finish("test_opencl_deform_attn");
}
