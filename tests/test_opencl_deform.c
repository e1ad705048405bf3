/* deform_conv2d and its backward on OpenCL beyond the harness's samples,
 * against the CPU: every dtype, with and without mask and bias, groups and
 * offset groups, in a workspace limit that makes the column tiles a few
 * pixels wide (fast and deterministic backward, the latter three times
 * bit-identical) and one below a single column (the op's error, outputs
 * untouched). With the argument "indirect", CLBlast is first told to take
 * its indirect GEMM (padding copies into the temporary buffer the op
 * provides from its workspace) at every size, which it otherwise keeps for
 * products above ~1e9 multiply-adds. Where CLBlast cannot be loaded the op
 * must fail naming libclblast1 (test_opencl_deform_no_clblast runs it so,
 * through scripts/without-clblast.sh). Linked statically for the backend's memory
 * functions. Skipped (77) without an OpenCL device. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "opencl/common.h"
#include "opencl/device.h"
#include "test_util.h"

static const vo_backend *be;
static const DLDevice dev = {kDLOpenCL, 0};
static int clblast_present;

static void die(const char *what) {
  fprintf(stderr, "test_opencl_deform: %s: %s\n", what, vo_last_error());
  exit(2);
}

/* A host tensor and its copy on the device (same layout). */
typedef struct pair {
  vt_tensor *host;
  DLTensor dl; /* on the device */
  void *mem;
} pair;

static void pair_upload(pair *p) {
  if (be->copy_to_device(dev, p->mem, 0, p->host->mem, p->host->mem_bytes, NULL) != VO_OK)
    die("copy to opencl failed");
}

/* A tensor of `shape`, values uniform in [lo, hi) (NaN for an output). */
static pair pair_new(DLDataType dt, int ndim, const int64_t *shape, vt_rng *rng, double lo,
                     double hi) {
  pair p;
  p.host = vt_tensor_new(dt, ndim, shape, NULL);
  const int64_t n = vt_numel(&p.host->dl);
  for (int64_t i = 0; i < n; i++) vt_set(&p.host->dl, i, rng ? vt_rng_uniform(rng, lo, hi) : NAN);
  p.mem = be->alloc(dev, p.host->mem_bytes ? p.host->mem_bytes : 1, NULL);
  if (!p.mem) die("opencl alloc failed");
  p.dl = p.host->dl;
  p.dl.data = p.mem;
  p.dl.byte_offset = 0;
  p.dl.device = dev;
  pair_upload(&p);
  return p;
}

static void pair_free(pair *p) {
  be->free(dev, p->mem, NULL);
  vt_tensor_free(p->host);
}

/* The device copy of p, read back into a new host tensor. */
static vt_tensor *pair_download(const pair *p) {
  vt_tensor *t = vt_tensor_new(p->host->dl.dtype, p->host->dl.ndim, p->host->dl.shape, NULL);
  if (be->copy_to_host(dev, t->mem, p->mem, 0, t->mem_bytes, NULL) != VO_OK)
    die("copy to the host failed");
  return t;
}

/* One call's geometry. */
typedef struct dcn_case {
  const char *name;
  int64_t n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups, og;
  int mask, bias;
} dcn_case;

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* The tolerance of a device value against the CPU's: other summation
 * orders, and for the half types one rounding of the result. */
static double tolerance(DLDataType dt) {
  if (dt.bits == 64) return 1e-11;
  if (dt.code == kDLBfloat) return 2e-2;
  if (dt.bits == 16) return 3e-3;
  return 2e-4;
}

/* got (device results read back) against want, element by element. */
static int matches(const char *what, const vt_tensor *want, const vt_tensor *got) {
  const double tol = tolerance(want->dl.dtype);
  const int64_t n = vt_numel(&want->dl);
  for (int64_t i = 0; i < n; i++) {
    const double w = vt_get(&want->dl, i), g = vt_get(&got->dl, i);
    if (!(fabs(g - w) <= tol * (1 + fabs(w))))
      return CHECK_MSG(0, "%s: element %lld is %.9g on opencl, %.9g on the cpu", what, (long long)i,
                       g, w);
  }
  return 1;
}

static int identical(const char *what, const vt_tensor *a, const vt_tensor *b) {
  return CHECK_MSG(a->mem_bytes == b->mem_bytes && memcmp(a->mem, b->mem, a->mem_bytes) == 0,
                   "%s: not bit-identical to the first deterministic run", what);
}

enum { NUM_GRADS = 5 };

/* The case's inputs, outputs and the CPU's results. */
typedef struct dcn_call {
  const dcn_case *k;
  pair input, weight, offset, mask, bias, grad, out;
  pair grads[NUM_GRADS]; /* grad_input, grad_weight, grad_offset, grad_mask, grad_bias */
  vt_tensor *want_out, *want_grads[NUM_GRADS];
} dcn_call;

static vo_status forward(const vo_context *ctx, dcn_call *c, int on_host) {
  const dcn_case *k = c->k;
  const DLTensor *in = on_host ? &c->input.host->dl : &c->input.dl;
  const DLTensor *wt = on_host ? &c->weight.host->dl : &c->weight.dl;
  const DLTensor *off = on_host ? &c->offset.host->dl : &c->offset.dl;
  const DLTensor *m = !k->mask ? NULL : on_host ? &c->mask.host->dl : &c->mask.dl;
  const DLTensor *b = !k->bias ? NULL : on_host ? &c->bias.host->dl : &c->bias.dl;
  DLTensor *out = on_host ? &c->want_out->dl : &c->out.dl;
  return vo_deform_conv2d(ctx, in, wt, off, m, b, k->sh, k->sw, k->ph, k->pw, k->dh, k->dw,
                          k->groups, k->og, out);
}

static vo_status backward(const vo_context *ctx, dcn_call *c, int on_host) {
  const dcn_case *k = c->k;
  const DLTensor *g = on_host ? &c->grad.host->dl : &c->grad.dl;
  const DLTensor *in = on_host ? &c->input.host->dl : &c->input.dl;
  const DLTensor *wt = on_host ? &c->weight.host->dl : &c->weight.dl;
  const DLTensor *off = on_host ? &c->offset.host->dl : &c->offset.dl;
  const DLTensor *m = !k->mask ? NULL : on_host ? &c->mask.host->dl : &c->mask.dl;
  const DLTensor *b = !k->bias ? NULL : on_host ? &c->bias.host->dl : &c->bias.dl;
  DLTensor *o[NUM_GRADS];
  for (int i = 0; i < NUM_GRADS; i++) o[i] = on_host ? &c->want_grads[i]->dl : &c->grads[i].dl;
  return vo_deform_conv2d_backward(ctx, g, in, wt, off, m, b, k->sh, k->sw, k->ph, k->pw, k->dh,
                                   k->dw, k->groups, k->og, o[0], o[1], o[2], o[3], o[4]);
}

static void call_make(dcn_call *c, const dcn_case *k, DLDataType dt, uint64_t seed) {
  memset(c, 0, sizeof *c);
  c->k = k;
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  const int64_t ho = out_size(k->h, k->kh, k->sh, k->ph, k->dh);
  const int64_t wo = out_size(k->w, k->kw, k->sw, k->pw, k->dw);
  const int64_t taps = k->kh * k->kw;
  const int64_t s_in[4] = {k->n, k->cin, k->h, k->w};
  const int64_t s_wt[4] = {k->cout, k->cin / k->groups, k->kh, k->kw};
  const int64_t s_off[4] = {k->n, 2 * k->og * taps, ho, wo};
  const int64_t s_mask[4] = {k->n, k->og * taps, ho, wo};
  const int64_t s_bias[1] = {k->cout};
  const int64_t s_out[4] = {k->n, k->cout, ho, wo};
  c->input = pair_new(dt, 4, s_in, &rng, -1, 1);
  c->weight = pair_new(dt, 4, s_wt, &rng, -1, 1);
  c->offset = pair_new(dt, 4, s_off, &rng, -3, 3);
  c->mask = pair_new(dt, 4, s_mask, &rng, 0, 1);
  c->bias = pair_new(dt, 1, s_bias, &rng, -1, 1);
  c->grad = pair_new(dt, 4, s_out, &rng, -1, 1);
  c->out = pair_new(dt, 4, s_out, NULL, 0, 0);
  c->want_out = vt_tensor_new(dt, 4, s_out, NULL);
  const pair *like[NUM_GRADS] = {&c->input, &c->weight, &c->offset, &c->mask, &c->bias};
  for (int i = 0; i < NUM_GRADS; i++) {
    const DLTensor *l = &like[i]->host->dl;
    c->grads[i] = pair_new(dt, l->ndim, l->shape, NULL, 0, 0);
    c->want_grads[i] = vt_tensor_new(dt, l->ndim, l->shape, NULL);
  }
  if (!CHECK_STATUS(forward(NULL, c, 1), VO_OK) || !CHECK_STATUS(backward(NULL, c, 1), VO_OK))
    die("the cpu reference failed");
}

static void call_free(dcn_call *c) {
  pair *all[] = {&c->input, &c->weight, &c->offset, &c->mask, &c->bias, &c->grad, &c->out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pair_free(all[i]);
  vt_tensor_free(c->want_out);
  for (int i = 0; i < NUM_GRADS; i++) {
    pair_free(&c->grads[i]);
    vt_tensor_free(c->want_grads[i]);
  }
}

static const char *const grad_names[NUM_GRADS] = {"grad_input", "grad_weight", "grad_offset",
                                                  "grad_mask", "grad_bias"};

/* Forward and backward under ctx against the CPU; the backward's results
 * stay in got[] (the caller frees them). */
static void check_call(dcn_call *c, const vo_context *ctx, const char *label,
                       vt_tensor *got[NUM_GRADS]) {
  char what[320];
  snprintf(what, sizeof what, "%s forward", label);
  if (CHECK_MSG(forward(ctx, c, 0) == VO_OK, "%s: %s", what, vo_last_error())) {
    vt_tensor *out = pair_download(&c->out);
    matches(what, c->want_out, out);
    vt_tensor_free(out);
  }
  const int ok = CHECK_MSG(backward(ctx, c, 0) == VO_OK, "%s backward: %s", label, vo_last_error());
  for (int i = 0; i < NUM_GRADS; i++) {
    got[i] = ok ? pair_download(&c->grads[i]) : NULL;
    snprintf(what, sizeof what, "%s backward %s", label, grad_names[i]);
    if (got[i]) matches(what, c->want_grads[i], got[i]);
  }
}

static void free_all(vt_tensor *t[NUM_GRADS]) {
  for (int i = 0; i < NUM_GRADS; i++) vt_tensor_free(t[i]);
}

/* Whether forward and backward, fast and deterministic, run in `limit`. */
static int fits(dcn_call *c, size_t limit) {
  int ok = 1;
  for (int det = 0; det < 2 && ok; det++) {
    vo_context *ctx = NULL;
    if (vo_context_create(&ctx) != VO_OK) die("vo_context_create");
    ok = vo_context_set_workspace_limit(ctx, limit) == VO_OK &&
         vo_context_set_deterministic(ctx, det) == VO_OK && forward(ctx, c, 0) == VO_OK &&
         backward(ctx, c, 0) == VO_OK;
    vo_context_destroy(ctx);
  }
  return ok;
}

/* The workspace limit of the tiled runs: the least that fits, to 256
 * bytes, so that a tile is one or a few columns. Probed rather than
 * fixed: CLBlast's indirect GEMM pads its operands into a temporary buffer
 * whose size follows its tuning for the device (~20 KiB on one PoCL CPU,
 * over 48 KiB on another). */
static size_t tiled_limit_for(dcn_call *c) {
  size_t lo = 512, hi = 4096; /* lo does not fit (check_too_small), hi is probed */
  while (!fits(c, hi)) {
    lo = hi;
    hi *= 2;
    if (hi > ((size_t)64 << 20)) die("no workspace limit up to 64 MiB fits the case");
  }
  while (hi - lo > 256) {
    const size_t mid = lo + (hi - lo) / 2;
    if (fits(c, mid))
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

/* A workspace limit below one column: the op's error, the output untouched. */
static void check_too_small(dcn_call *c, const char *label) {
  vo_context *ctx = NULL;
  if (!CHECK_STATUS(vo_context_create(&ctx), VO_OK)) return;
  CHECK_STATUS(vo_context_set_workspace_limit(ctx, 512), VO_OK);
  pair_upload(&c->out);
  const vo_status st = forward(ctx, c, 0);
  CHECK_MSG(
      st == VO_ERROR_OUT_OF_MEMORY && strstr(vo_last_error(), "deform_conv2d: workspace limit"),
      "%s with a 512-byte workspace: status %d \"%s\"", label, (int)st, vo_last_error());
  vt_tensor *out = pair_download(&c->out);
  int64_t touched = 0;
  for (int64_t i = 0; i < vt_numel(&out->dl); i++) touched += !isnan(vt_get(&out->dl, i));
  CHECK_MSG(touched == 0, "%s: the failed call wrote %lld output elements", label,
            (long long)touched);
  vt_tensor_free(out);
  vo_context_destroy(ctx);
}

static void check_case(const dcn_case *k, DLDataType dt, uint64_t seed) {
  dcn_call c;
  call_make(&c, k, dt, seed);
  char label[96];
  snprintf(label, sizeof label, "%s %s", k->name, vt_dtype_name(dt));
  if (!clblast_present) {
    /* The op's products need CLBlast: its absence is the op's clear error. */
    vo_status st = forward(NULL, &c, 0);
    CHECK_MSG(st == VO_ERROR_BACKEND_UNAVAILABLE && strstr(vo_last_error(), "libclblast1"),
              "%s without CLBlast: status %d \"%s\"", label, (int)st, vo_last_error());
    st = backward(NULL, &c, 0);
    CHECK_MSG(st == VO_ERROR_BACKEND_UNAVAILABLE && strstr(vo_last_error(), "libclblast1"),
              "%s backward without CLBlast: status %d \"%s\"", label, (int)st, vo_last_error());
    call_free(&c);
    return;
  }
  vt_tensor *got[NUM_GRADS], *det[3][NUM_GRADS];
  check_call(&c, NULL, label, got);
  free_all(got);
  /* Column tiles of a few pixels. */
  const size_t tiled_limit = tiled_limit_for(&c);
  vo_context *tiled = NULL, *tiled_det = NULL;
  if (!CHECK_STATUS(vo_context_create(&tiled), VO_OK) ||
      !CHECK_STATUS(vo_context_create(&tiled_det), VO_OK))
    die("vo_context_create");
  CHECK_STATUS(vo_context_set_workspace_limit(tiled, tiled_limit), VO_OK);
  CHECK_STATUS(vo_context_set_workspace_limit(tiled_det, tiled_limit), VO_OK);
  CHECK_STATUS(vo_context_set_deterministic(tiled_det, 1), VO_OK);
  char what[320];
  snprintf(what, sizeof what, "%s, %zu-byte workspace", label, tiled_limit);
  check_call(&c, tiled, what, got);
  free_all(got);
  for (int r = 0; r < 3; r++) {
    snprintf(what, sizeof what, "%s, %zu-byte workspace, deterministic run %d", label, tiled_limit,
             r);
    check_call(&c, tiled_det, what, det[r]);
    for (int i = 0; r > 0 && i < NUM_GRADS; i++)
      if (det[0][i] && det[r][i]) identical(what, det[0][i], det[r][i]);
  }
  for (int r = 0; r < 3; r++) free_all(det[r]);
  /* Tiles of whole images, fewer than the batch (several small images to a
   * product, the last tile shorter): limits from the tiled one up. */
  for (size_t limit = tiled_limit * 3 / 2; k->n > 2 && limit < tiled_limit * 40;
       limit = limit * 3 / 2) {
    for (int d = 0; d < 2; d++) {
      vo_context *ctx = NULL;
      if (!CHECK_STATUS(vo_context_create(&ctx), VO_OK)) die("vo_context_create");
      CHECK_STATUS(vo_context_set_workspace_limit(ctx, limit), VO_OK);
      CHECK_STATUS(vo_context_set_deterministic(ctx, d), VO_OK);
      snprintf(what, sizeof what, "%s, %zu-byte workspace%s", label, limit,
               d ? ", deterministic" : "");
      check_call(&c, ctx, what, got);
      free_all(got);
      vo_context_destroy(ctx);
    }
  }
  check_too_small(&c, label);
  vo_context_destroy(tiled);
  vo_context_destroy(tiled_det);
  call_free(&c);
}

/* CLBlast's GEMM routine takes its indirect kernel above this size; 1 makes
 * every product indirect (float32 and float64, for device 0). */
static void force_indirect_gemm(void *clblast) {
  typedef int (*override_fn)(cl_device_id, const char *, int, size_t, const char **,
                             const size_t *);
  override_fn override;
  *(void **)&override = dlsym(clblast, "CLBlastOverrideParameters");
  if (!override) die("libclblast has no CLBlastOverrideParameters");
  const char *names[1] = {"XGEMM_MIN_INDIRECT_SIZE"};
  const size_t values[1] = {1};
  const int precisions[2] = {32, 64};
  for (int i = 0; i < 2; i++) {
    const int s = override(vo_cl_device_at(0)->id, "GemmRoutine", precisions[i], 1, names, values);
    if (s != 0) {
      fprintf(stderr, "test_opencl_deform: CLBlastOverrideParameters: status %d\n", s);
      exit(2);
    }
  }
}

int main(int argc, char **argv) {
  const char *detail = NULL;
  be = vo_backend_for_device(kDLOpenCL);
  if (!be || be->not_built_reason || !vo_backend_available(be, &detail)) {
    printf("skipped: no OpenCL device (%s)\n", detail ? detail : "not built");
    return 77;
  }
  void *clblast = dlopen("libclblast.so.1", RTLD_NOW | RTLD_LOCAL);
  clblast_present = clblast != NULL;
  const int indirect = argc > 1 && strcmp(argv[1], "indirect") == 0;
  if (!clblast_present) printf("CLBlast absent (%s): checking the op's error only\n", dlerror());
  /* `visionops info` says which GEMM the backend uses, or why none. */
  CHECK_MSG(strstr(detail, clblast_present ? "deform_conv2d GEMM CLBlast"
                                           : "deform_conv2d GEMM none, CLBlast did not load"),
            "the OpenCL backend's description lacks its GEMM: %s", detail);
  if (clblast_present && indirect) force_indirect_gemm(clblast);
  static const dcn_case cases[] = {
      {"groups 2, offset groups 3, mask, bias", 2, 6, 9, 11, 8, 3, 2, 1, 2, 1, 1, 1, 2, 2, 3, 1, 1},
      {"no mask, no bias", 1, 4, 7, 6, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0},
      {"5 small images, offset groups 2, mask", 5, 4, 4, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1},
  };
  const DLDataType dts[] = {vt_f32, vt_f64, vt_f16, vt_bf16};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) check_case(&cases[k], dts[d], 7 + d);
  return vt_finish(indirect ? "test_opencl_deform indirect" : "test_opencl_deform");
}
