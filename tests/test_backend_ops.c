/*
 * Every op of the sample registry (tests/samples) on every available
 * backend against the CPU's plain path (VO_ISA_SCALAR), forward and backward
 * ops, in every float dtype and every layout of the samples (contiguous,
 * strided, channels-last, negative strides): the CPU's default path (its
 * AVX2 fast paths) and each other backend, through the backend's own device
 * memory (the vtable's alloc / copy_to_device / copy_to_host). Backward ops
 * also run under vo_context_set_deterministic, three times bit-identical.
 * Each output passed as NULL in turn: refused, except the ones an op lets
 * its caller omit (roi_pool's argmax, ...), whose absence leaves the other
 * outputs bit-identical. Once per op: bad inputs fail with the CPU's status
 * and message and leave the outputs untouched, a tensor on another device
 * type is refused, and on backends that know their buffers' sizes (OpenCL)
 * each input and output in a buffer one byte short is refused. On backends
 * other than the CPU, an output above 2^31 elements (the CPU's is
 * test_large's). Prints which backends it skipped and why, and the ops a
 * backend has no kernel for yet (a NULL entry of its kernel table: such a
 * call must fail with "not implemented", which is checked, not compared).
 * VO_TEST_BACKEND_OPS_ONLY=<backend> leaves the other targets out;
 * VO_TEST_BACKEND_OPS_SKIP_LARGE=1 the >2^31-element case (both for
 * compute-sanitizer runs in scripts/gpu-check.sh);
 * VO_TEST_BACKEND_OPS_LARGE_ONLY=1 runs that case alone (ctest's
 * test_backend_ops_large, labelled "large" as test_large is);
 * VO_TEST_BACKEND_OPS_OPS=name,name,... runs only those ops (by hand, while
 * working on them).
 * On an OpenCL device without fp64 (its probe says "no fp64", e.g. under
 * the backend's testing aid VISIONOPS_OPENCL_NO_FP64=1), every float64 call
 * must be refused with the op, float64 and cl_khr_fp64 in the message, and
 * is counted, not compared.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/half.h"
#include "core/internal.h"
#include "samples/samples.h"
#include "test_util.h"

static const DLDevice host_dev = {kDLCPU, 0};

static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int ends_with(const char *s, const char *suffix) {
  const size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* ------------------------------------------------------------ targets */

/* Whether backend b has a kernel for op `index` (a NULL table entry: not
 * implemented there yet). */
static int has_kernel(const vo_backend *b, int index) {
  return b->kernels && index >= 0 && index < VO_NUM_OPS && b->kernels[index] != NULL;
}

/* A backend and the contexts a sample runs under on it. */
typedef struct target {
  char name[32];             /* "cpu-avx2", "cuda" */
  const vo_backend *backend; /* its memory functions place tensors */
  int exact;                 /* results must be bit-identical to the reference's */
  int no_fp64;               /* an OpenCL device without cl_khr_fp64: float64 refused */
  DLDevice device;
  vo_context *ctx;           /* default settings */
  vo_context *deterministic; /* vo_context_set_deterministic(1) */
} target;

#define MAX_TARGETS 8
static target targets[MAX_TARGETS];
static int num_targets;
static vo_context *plain_ctx; /* the reference: the CPU's plain path */

static vo_context *new_context(int deterministic, vo_isa isa) {
  vo_context *ctx = NULL;
  if (vo_context_create(&ctx) != VO_OK ||
      vo_context_set_deterministic(ctx, deterministic) != VO_OK ||
      vo_context_set_isa(ctx, isa) != VO_OK) {
    fprintf(stderr, "test_backend_ops: cannot set up a context: %s\n", vo_last_error());
    exit(2);
  }
  return ctx;
}

static void add_target(const char *name, const vo_backend *backend, const char *detail) {
  if (num_targets == MAX_TARGETS) {
    printf("SKIP backend %s: more than %d targets\n", name, MAX_TARGETS);
    return;
  }
  target *t = &targets[num_targets++];
  snprintf(t->name, sizeof t->name, "%s", name);
  t->backend = backend;
  t->device.device_type = backend->device_type;
  t->device.device_id = 0;
  /* the CPU's fast paths are optimisations of the plain path, bit for bit */
  t->exact = backend->device_type == kDLCPU;
  t->no_fp64 = backend->device_type == kDLOpenCL && detail && strstr(detail, "no fp64") != NULL;
  t->ctx = new_context(0, VO_ISA_AUTO);
  t->deterministic = new_context(1, VO_ISA_AUTO);
}

/* The backends of src/backends.def: each one usable becomes a target (the
 * CPU's under its default ISA, unless that is the plain path itself); the
 * others are reported with the reason. */
static void collect_targets(void) {
  const char *only = getenv("VO_TEST_BACKEND_OPS_ONLY");
  if (only && !*only) only = NULL;
  printf("reference: cpu, plain path (ISA %s)\n", vo_cpu_isa(plain_ctx));
  for (int b = 0; b < VO_NUM_BACKENDS; b++) {
    const vo_backend *be = vo_backend_get(b);
    const char *detail = NULL;
    if (!be) continue;
    if (only && strcmp(only, be->name) != 0) {
      printf("SKIP backend %s: VO_TEST_BACKEND_OPS_ONLY=%s\n", be->name, only);
    } else if (be->not_built_reason) {
      printf("SKIP backend %s: not built: %s\n", be->name, be->not_built_reason);
    } else if (!vo_backend_available(be, &detail)) {
      printf("SKIP backend %s: unavailable: %s\n", be->name, detail ? detail : "");
    } else if (!be->alloc || !be->free || !be->copy_to_device || !be->copy_to_host) {
      printf("SKIP backend %s: it has no device memory functions to place tensors with\n",
             be->name);
    } else if (be->device_type == kDLCPU) {
      vo_context *probe = new_context(0, VO_ISA_AUTO);
      const char *isa = vo_cpu_isa(probe);
      vo_context_destroy(probe);
      if (strcmp(isa, vo_cpu_isa(plain_ctx)) == 0) {
        printf("SKIP backend cpu (default path): this CPU's best ISA is the plain path's (%s)\n",
               isa);
      } else {
        char name[32];
        snprintf(name, sizeof name, "cpu-%s", isa);
        printf("backend %s: %s\n", name, detail ? detail : "");
        add_target(name, be, detail);
      }
    } else {
      printf("backend %s: %s\n", be->name, detail ? detail : "");
      add_target(be->name, be, detail);
    }
  }
}

/* ------------------------------------------------------------ placing */

/* A tensor in a backend's memory: a copy of a host tensor's whole buffer
 * (so strides and byte offset carry over), or an output. */
typedef struct placed {
  DLTensor dl;
  int64_t shape[VO_MAX_DIMS];
  int64_t strides[VO_MAX_DIMS];
  const target *where;
  void *mem;
  size_t bytes;
} placed;

static void die_backend(const target *t, const char *what) {
  fprintf(stderr, "test_backend_ops: %s on %s failed: %s\n", what, t->name, vo_last_error());
  vt_failed++;
  exit(vt_finish("test_backend_ops"));
}

/* The tensor run_sample_omitting places in a device buffer one byte too
 * short for it (short_buffers): input i, or output k as SHORT_OUTPUT + k;
 * -1: none. */
enum { SHORT_OUTPUT = 1000 };
static int short_tensor = -1;

/* Bytes from the start of a vt tensor's buffer to the end of its last
 * element. */
static size_t extent_end(const DLTensor *t) {
  int64_t from = 1, expected = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    const int64_t stride = t->strides ? t->strides[i] : expected;
    if (t->shape[i] > 0 && stride > 0) from += (t->shape[i] - 1) * stride;
    expected *= t->shape[i];
  }
  return (size_t)t->byte_offset + (size_t)from * (t->dtype.bits / 8u);
}

/* The host tensor's buffer copied to the target (for NULL: borrowed as is);
 * with `cut`, into a buffer ending one byte before its last element does. */
static placed *place(const vt_tensor *host, const target *t, int cut) {
  placed *p = calloc(1, sizeof *p);
  if (!p) exit(2);
  p->dl = host->dl;
  memcpy(p->shape, host->dl.shape, sizeof(int64_t) * (size_t)host->dl.ndim);
  p->dl.shape = p->shape;
  if (host->dl.strides) {
    memcpy(p->strides, host->dl.strides, sizeof(int64_t) * (size_t)host->dl.ndim);
    p->dl.strides = p->strides;
  }
  if (!t) return p;
  p->where = t;
  p->bytes = cut ? extent_end(&host->dl) - 1 : host->mem_bytes;
  p->mem = t->backend->alloc(t->device, p->bytes ? p->bytes : 1, NULL);
  if (!p->mem) die_backend(t, "alloc");
  if (t->backend->copy_to_device(t->device, p->mem, 0, host->mem, p->bytes, NULL) != VO_OK)
    die_backend(t, "copy_to_device");
  p->dl.device = t->device;
  /* vt tensors keep data at the buffer's start and the offset in byte_offset */
  p->dl.data = p->mem;
  return p;
}

static void unplace(placed *p) {
  if (!p) return;
  if (p->where) p->where->backend->free(p->where->device, p->mem, NULL);
  free(p);
}

/* ------------------------------------------------------------ running */

typedef struct result {
  vo_status status;
  char error[1024];
  int num_outputs;
  vt_tensor *out[VO_MAX_LIST]; /* host copies of the outputs */
} result;

static void result_free(result *r) {
  for (int k = 0; k < r->num_outputs; k++) vt_tensor_free(r->out[k]);
  r->num_outputs = 0;
}

/* Runs sample s under ctx with its tensors on target t (NULL: the host),
 * tensor `elsewhere` (>= 0) instead labelled as on `other` (refused before
 * any data is read), and the outputs (shaped as descs, filled with
 * `sentinel`) on `out_t`, output k passed as NULL (omitted) where bit k of
 * `omit` is set. The outputs come back to the host in r (an omitted one
 * as its sentinel). */
static void run_sample_omitting(const vs_sample *s, const vo_tensor_desc *descs,
                                const vo_context *ctx, const target *t, int elsewhere,
                                DLDevice other, const target *out_t, double sentinel, unsigned omit,
                                result *r) {
  placed *in[VS_MAX_TENSORS] = {NULL};
  for (int i = 0; i < s->num_tensors; i++) {
    const int moved = i == elsewhere;
    in[i] =
        place(s->tensors[i], moved && other.device_type == kDLCPU ? NULL : t, i == short_tensor);
    if (moved) in[i]->dl.device = other;
  }
  vo_value args[VS_MAX_ARGS];
  const DLTensor *list[VO_MAX_LIST];
  for (int i = 0; i < s->num_args; i++) {
    args[i] = s->args[i];
    if (s->tensor_of[i] >= 0) args[i] = vo_tensor_value(&in[s->tensor_of[i]]->dl);
  }
  if (s->list_arg >= 0) {
    for (int l = 0; l < s->list_count; l++) list[l] = &in[s->list_of[l]]->dl;
    args[s->list_arg] = vo_tensor_list_value(list, s->list_count);
  }
  DLTensor *outs[VO_MAX_LIST];
  placed *out[VO_MAX_LIST] = {NULL};
  vt_tensor *host_out[VO_MAX_LIST] = {NULL};
  for (int k = 0; k < s->num_outputs; k++) {
    const vo_tensor_desc *d = &descs[k];
    host_out[k] = vt_tensor_new(d->dtype, d->ndim, d->shape, NULL);
    vt_fill(&host_out[k]->dl, sentinel);
    out[k] = place(host_out[k], out_t, SHORT_OUTPUT + k == short_tensor);
    outs[k] = k < 32 && (omit >> k & 1u) ? NULL : &out[k]->dl;
  }
  r->status = vo_call(ctx, s->op, args, s->num_args, outs, s->num_outputs);
  snprintf(r->error, sizeof r->error, "%s", r->status == VO_OK ? "" : vo_last_error());
  r->num_outputs = s->num_outputs;
  for (int k = 0; k < s->num_outputs; k++) {
    if (out_t && out_t->backend->copy_to_host(out_t->device, host_out[k]->mem, out[k]->mem, 0,
                                              out[k]->bytes, NULL) != VO_OK)
      die_backend(out_t, "copy_to_host (a kernel fault shows here)");
    r->out[k] = host_out[k];
    unplace(out[k]);
  }
  for (int i = 0; i < s->num_tensors; i++) unplace(in[i]);
}

static void run_sample(const vs_sample *s, const vo_tensor_desc *descs, const vo_context *ctx,
                       const target *t, int elsewhere, DLDevice other, const target *out_t,
                       double sentinel, result *r) {
  run_sample_omitting(s, descs, ctx, t, elsewhere, other, out_t, sentinel, 0, r);
}

static void run_on(const vs_sample *s, const vo_tensor_desc *descs, const vo_context *ctx,
                   const target *t, double sentinel, result *r) {
  run_sample(s, descs, ctx, t, -1, host_dev, t, sentinel, r);
}

/* ------------------------------------------------------------ comparing */

static int is_float(DLDataType dt) { return dt.code == kDLFloat || dt.code == kDLBfloat; }

/* Output k of got against want within the op's tolerance; the worst relative
 * error (0 for identical values), INFINITY after a reported mismatch. */
static double compare_output(const vs_sample *s, const char *what, int exact, int k,
                             const vt_tensor *want, const vt_tensor *got) {
  const DLDataType dt = want->dl.dtype;
  const vs_tolerance tol = exact ? (vs_tolerance){0, 0} : vs_tolerance_of(s->op->index, k, dt);
  const int64_t n = vt_numel(&want->dl);
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    const double w = vt_get(&want->dl, i), g = vt_get(&got->dl, i);
    if (w == g || (isnan(w) && isnan(g))) continue;
    const double err = fabs(g - w) / fmax(1, fabs(w));
    int ok = is_float(dt) && err <= tol.rel;
    if (!ok && vt_dtype_is_half(dt) && vt_half_ulp_distance(dt, w, g) <= tol.half_ulps) ok = 1;
    if (!ok) {
      CHECK_MSG(0, "%s: %s output %d element %lld: %.9g, reference %.9g (relative error %.3g)",
                s->label, what, k, (long long)i, g, w, err);
      return INFINITY;
    }
    if (err > worst) worst = err;
  }
  vt_pass();
  return worst;
}

static double compare_results(const vs_sample *s, const target *t, const char *what,
                              const result *want, const result *got) {
  double worst = 0;
  for (int k = 0; k < want->num_outputs; k++)
    worst = fmax(worst, compare_output(s, what, t->exact, k, want->out[k], got->out[k]));
  return worst;
}

static int bit_identical(const result *a, const result *b) {
  for (int k = 0; k < a->num_outputs; k++)
    if (a->out[k]->mem_bytes != b->out[k]->mem_bytes ||
        memcmp(a->out[k]->mem, b->out[k]->mem, a->out[k]->mem_bytes) != 0)
      return 0;
  return 1;
}

static int all_equal(const result *r, double value) {
  for (int k = 0; k < r->num_outputs; k++)
    for (int64_t i = 0; i < vt_numel(&r->out[k]->dl); i++)
      if (vt_get(&r->out[k]->dl, i) != value) return 0;
  return 1;
}

/* ------------------------------------------------------ omitted outputs */

/* The outputs an op lets its caller omit (NULL in vo_call; the headers
 * document each): exactly these, on every backend. */
static const struct {
  const char *op;
  unsigned outputs; /* bit k: output k */
} omittable[] = {{"roi_pool", 1u << 1}, {"ps_roi_align", 1u << 1}, {"ps_roi_pool", 1u << 1}};

static unsigned omittable_outputs(const vo_op_info *op) {
  for (size_t i = 0; i < sizeof omittable / sizeof omittable[0]; i++)
    if (strcmp(op->name, omittable[i].op) == 0) return omittable[i].outputs;
  return 0;
}

/* Each output of sample s omitted in turn on target t, whose run with all
 * of them gave `full`: where the op allows it, the call succeeds and the
 * other outputs are bit-identical to full's; elsewhere it fails naming the
 * NULL output, and writes nothing. */
static void omitted_outputs(const vs_sample *s, const vo_tensor_desc *descs, const target *t,
                            const result *full) {
  const unsigned allowed = omittable_outputs(s->op);
  for (int k = 0; k < s->num_outputs && k < 32; k++) {
    result r;
    run_sample_omitting(s, descs, t->ctx, t, -1, host_dev, t, 55, 1u << k, &r);
    if (allowed >> k & 1u) {
      if (CHECK_MSG(r.status == VO_OK, "%s on %s, output %d omitted: %s", s->label, t->name, k,
                    r.error))
        for (int j = 0; j < s->num_outputs; j++)
          CHECK_MSG(j == k || memcmp(full->out[j]->mem, r.out[j]->mem, r.out[j]->mem_bytes) == 0,
                    "%s on %s, output %d omitted: output %d differs", s->label, t->name, k, j);
    } else {
      CHECK_MSG(r.status == VO_ERROR_INVALID_ARGUMENT && strstr(r.error, "is NULL") &&
                    strncmp(r.error, s->op->name, strlen(s->op->name)) == 0,
                "%s on %s, output %d NULL: status %d \"%s\", not a refusal", s->label, t->name, k,
                (int)r.status, r.error);
      CHECK_MSG(all_equal(&r, 55), "%s on %s, output %d NULL: the refused call wrote output",
                s->label, t->name, k);
    }
    result_free(&r);
  }
}

/* ------------------------------------------------------------ bad inputs */

/* The sample must fail on target t with the reference's status and message,
 * and leave t's outputs untouched. */
static void expect_same_failure(const vs_sample *s, const vo_tensor_desc *descs, const target *t,
                                const char *what) {
  result ref, got;
  run_on(s, descs, plain_ctx, NULL, -77, &ref);
  run_on(s, descs, t->ctx, t, 55, &got);
  CHECK_MSG(ref.status != VO_OK, "%s (%s): the CPU accepted it", s->label, what);
  CHECK_MSG(got.status == ref.status && strcmp(got.error, ref.error) == 0,
            "%s (%s): %s gives %d \"%s\", the CPU %d \"%s\"", s->label, what, t->name,
            (int)got.status, got.error, (int)ref.status, ref.error);
  CHECK_MSG(got.status == VO_OK || all_equal(&got, 55), "%s (%s): a failed call on %s wrote output",
            s->label, what, t->name);
  result_free(&ref);
  result_free(&got);
}

/* Bad RoI rows (batch index out of range, fractional or negative; NaN and
 * infinite coordinates; two bad rows, of which the first is named), an
 * argmax out of range, a channel_mapping entry the forward would not write,
 * an adaptive grid beyond the map's bound, and a tensor one element too
 * long. */
static void bad_inputs(vs_sample *s, const vo_tensor_desc *descs, const target *t) {
  if (s->rois_tensor >= 0) {
    DLTensor *r = &s->tensors[s->rois_tensor]->dl;
    const int64_t k = r->shape[0], len = r->shape[1]; /* 5, or 6 for rotated RoIs */
    const struct {
      int64_t row, col;
      double value;
      const char *what;
    } bad[] = {
        {k - 1, 0, 7, "batch index out of range"},   {0, 0, 0.5, "fractional batch index"},
        {k / 2, 0, -1, "negative batch index"},      {0, 2, NAN, "NaN coordinate"},
        {k - 1, 3, INFINITY, "infinite coordinate"},
    };
    for (size_t i = 0; k > 0 && i < sizeof bad / sizeof bad[0]; i++) {
      const int64_t at = bad[i].row * len + bad[i].col;
      const double saved = vt_get(r, at);
      vt_set(r, at, bad[i].value);
      expect_same_failure(s, descs, t, bad[i].what);
      vt_set(r, at, saved);
    }
    if (k >= 6) {
      const double s3 = vt_get(r, 3 * len + 0), s5 = vt_get(r, 5 * len + 2);
      vt_set(r, 5 * len + 2, NAN);
      vt_set(r, 3 * len + 0, 9);
      expect_same_failure(s, descs, t, "two bad RoIs");
      vt_set(r, 3 * len + 0, s3);
      vt_set(r, 5 * len + 2, s5);
    }
    for (int64_t col = 3; len == 6 && k > 0 && col <= 5; col++) { /* rotated: w, h, angle */
      const double saved = vt_get(r, (k - 1) * len + col);
      vt_set(r, (k - 1) * len + col, col == 5 ? NAN : -0.5);
      expect_same_failure(s, descs, t, col == 5 ? "NaN angle" : "negative box size");
      vt_set(r, (k - 1) * len + col, saved);
    }
  }
  if (strcmp(s->op->name, "roi_pool_backward") == 0) {
    DLTensor *a = &s->tensors[s->tensor_of[2]]->dl;
    if (vt_numel(a) > 0) {
      const int64_t at = vt_numel(a) - 1;
      const double saved = vt_get(a, at);
      vt_set(a, at, (double)(s->args[8].u.i * s->args[9].u.i)); /* height * width */
      expect_same_failure(s, descs, t, "argmax out of range");
      vt_set(a, at, saved);
    }
  }
  if (strncmp(s->op->name, "ps_roi_", 7) == 0 && strstr(s->op->name, "_backward")) {
    DLTensor *m = &s->tensors[s->tensor_of[2]]->dl; /* channel_mapping */
    if (vt_numel(m) > 0) {
      const int64_t at = vt_numel(m) / 2;
      const double saved = vt_get(m, at);
      vt_set(m, at, saved + 1);
      expect_same_failure(s, descs, t, "channel_mapping entry not what the forward writes");
      vt_set(m, at, saved);
    }
  }
  /* Adaptive sampling of a RoI far larger than its map (checked on devices
   * too, by vo_call's declared value checks): sampling_ratio 0 for the call. */
  static const struct {
    const char *op;
    int sampling_arg;
  } adaptive[] = {{"roi_align", 5},
                  {"roi_align_backward", 9},
                  {"ps_roi_align", 5},
                  {"ps_roi_align_backward", 6},
                  {"multi_scale_roi_align", 5},
                  {"multi_scale_roi_align_backward", 6},
                  {"roi_align_rotated", 5},
                  {"roi_align_rotated_backward", 9}};
  for (size_t i = 0; i < sizeof adaptive / sizeof adaptive[0]; i++) {
    if (strcmp(s->op->name, adaptive[i].op) != 0 || s->rois_tensor < 0) continue;
    DLTensor *r = &s->tensors[s->rois_tensor]->dl;
    if (r->shape[0] == 0) continue;
    const vo_value saved_arg = s->args[adaptive[i].sampling_arg];
    const double saved_x2 = vt_get(r, 3);
    s->args[adaptive[i].sampling_arg] = vo_int_value(0);
    vt_set(r, 3, 60000); /* rois[0, 3]: x2 (rotated: w), still finite in float16 */
    expect_same_failure(s, descs, t, "adaptive sampling grid beyond the map's bound");
    vt_set(r, 3, saved_x2);
    s->args[adaptive[i].sampling_arg] = saved_arg;
  }
  if (s->shape_tensor >= 0) {
    vt_tensor *orig = s->tensors[s->shape_tensor];
    int64_t shape[VO_MAX_DIMS];
    const int nd = orig->dl.ndim;
    memcpy(shape, orig->dl.shape, sizeof(int64_t) * (size_t)nd);
    shape[nd - 1] += 1;
    vt_tensor *wrong = vt_tensor_new(orig->dl.dtype, nd, shape, NULL);
    s->tensors[s->shape_tensor] = wrong;
    for (int i = 0; i < s->num_args; i++)
      if (s->tensor_of[i] == s->shape_tensor) s->args[i] = vo_tensor_value(&wrong->dl);
    expect_same_failure(s, descs, t, "wrong shape");
    s->tensors[s->shape_tensor] = orig;
    for (int i = 0; i < s->num_args; i++)
      if (s->tensor_of[i] == s->shape_tensor) s->args[i] = vo_tensor_value(&orig->dl);
    vt_tensor_free(wrong);
  }
}

/* ------------------------------------------------------------ mixed devices */

/* Whether tensor i of the sample is one of the call's arguments (a backward
 * sample also holds the forward input it computed argmax from). */
static int is_argument(const vs_sample *s, int i) {
  for (int a = 0; a < s->num_args; a++)
    if (s->tensor_of[a] == i) return 1;
  for (int l = 0; s->list_arg >= 0 && l < s->list_count; l++)
    if (s->list_of[l] == i) return 1;
  return 0;
}

/* On a target whose backend knows its buffers' sizes (OpenCL), each
 * argument tensor and each output with elements in turn in a buffer one
 * byte too short: refused naming it, with nothing written. */
static void short_buffers(const vs_sample *s, const vo_tensor_desc *descs, const target *t) {
  if (!t->backend->buffer_size) return;
  for (int i = 0; i < SHORT_OUTPUT + s->num_outputs; i++) {
    if (i == s->num_tensors) i = SHORT_OUTPUT;
    const int out = i >= SHORT_OUTPUT;
    int64_t numel = 1;
    if (out)
      for (int d = 0; d < descs[i - SHORT_OUTPUT].ndim; d++)
        numel *= descs[i - SHORT_OUTPUT].shape[d];
    else
      numel = is_argument(s, i) ? vt_numel(&s->tensors[i]->dl) : 0;
    if (numel == 0) continue;
    result r;
    short_tensor = i;
    run_on(s, descs, t->ctx, t, 55, &r);
    short_tensor = -1;
    CHECK_MSG(r.status == VO_ERROR_INVALID_ARGUMENT &&
                  strncmp(r.error, s->op->name, strlen(s->op->name)) == 0 &&
                  strstr(r.error, "does not fit its buffer"),
              "%s on %s, %s %d one byte short: status %d \"%s\"", s->label, t->name,
              out ? "output" : "tensor", out ? i - SHORT_OUTPUT : i, (int)r.status, r.error);
    CHECK_MSG(all_equal(&r, 55), "%s on %s: a call refused for a short buffer wrote output",
              s->label, t->name);
    result_free(&r);
  }
}

/* Each tensor in turn labelled as on each other device type of the backend
 * list (built or not: the dispatcher refuses before reading any data), and
 * on a usable backend its outputs on the host or its inputs on the host. */
static void mixed_devices(const vs_sample *s, const vo_tensor_desc *descs) {
  result r;
  for (int b = 0; b < VO_NUM_BACKENDS; b++) {
    const vo_backend *be = vo_backend_get(b);
    if (!be || be->device_type == kDLCPU) continue;
    const DLDevice other = {be->device_type, 0};
    for (int i = 0; i < s->num_tensors; i++) {
      if (!is_argument(s, i)) continue;
      run_sample(s, descs, NULL, NULL, i, other, NULL, 55, &r);
      CHECK_MSG(r.status == VO_ERROR_DEVICE_MISMATCH,
                "%s with tensor %d on %s and the rest on the CPU: status %d \"%s\"", s->label, i,
                be->name, (int)r.status, r.error);
      CHECK_MSG(all_equal(&r, 55), "%s: a refused mixed-device call wrote output", s->label);
      result_free(&r);
    }
  }
  for (int t = 0; t < num_targets; t++) {
    const target *tg = &targets[t];
    if (tg->device.device_type == kDLCPU) continue;
    for (int i = 0; i < s->num_tensors; i++) { /* tensor i on the host, the rest on tg */
      if (!is_argument(s, i)) continue;
      run_sample(s, descs, NULL, tg, i, host_dev, tg, 55, &r);
      CHECK_MSG(r.status == VO_ERROR_DEVICE_MISMATCH,
                "%s with tensor %d on the CPU and the rest on %s: status %d \"%s\"", s->label, i,
                tg->name, (int)r.status, r.error);
      result_free(&r);
    }
    run_sample(s, descs, NULL, tg, -1, host_dev, NULL, 55, &r);
    CHECK_MSG(r.status == VO_ERROR_DEVICE_MISMATCH,
              "%s with inputs on %s and outputs on the CPU: status %d \"%s\"", s->label, tg->name,
              (int)r.status, r.error);
    result_free(&r);
    run_sample(s, descs, NULL, NULL, -1, host_dev, tg, 55, &r);
    CHECK_MSG(r.status == VO_ERROR_DEVICE_MISMATCH,
              "%s with inputs on the CPU and outputs on %s: status %d \"%s\"", s->label, tg->name,
              (int)r.status, r.error);
    result_free(&r);
  }
}

/* ------------------------------------------------------------ per op */

/* The samples each op runs per dtype: the random ones (in the seeds'
 * layouts, and one with negative strides), then the edge cases. */
static const struct {
  vs_variant variant;
  uint64_t seed;
  vs_layout layout;
} runs[] = {{VS_RANDOM, 0, VS_SEED_LAYOUT}, {VS_RANDOM, 1, VS_SEED_LAYOUT},
            {VS_RANDOM, 2, VS_SEED_LAYOUT}, {VS_RANDOM, 3, VS_SEED_LAYOUT},
            {VS_RANDOM, 1, VS_FLIPPED},     {VS_EDGE, 0, VS_SEED_LAYOUT},
            {VS_EDGE, 1, VS_SEED_LAYOUT}};
#define NUM_RUNS ((int)(sizeof runs / sizeof runs[0]))

typedef struct op_stats {
  int samples, refused;
  double worst;
} op_stats;

static void test_op(const vo_op_info *op) {
  const int backward = ends_with(op->name, "_backward");
  for (int d = 0; d < VS_NUM_DTYPES; d++) {
    const DLDataType dt = *vs_dtypes[d];
    op_stats stats[MAX_TARGETS];
    memset(stats, 0, sizeof stats);
    int supported = 1;
    for (int run = 0; run < NUM_RUNS && supported; run++) {
      vs_sample s;
      vs_build_as(&s, op->index, runs[run].variant, dt, runs[run].seed, runs[run].layout);
      vo_tensor_desc descs[VO_MAX_LIST];
      const vo_status st = vo_infer(NULL, op, s.args, s.num_args, descs, s.num_outputs);
      if (st == VO_ERROR_UNSUPPORTED_DTYPE && run == 0) {
        printf("  %-32s %-9s not supported by the CPU: %s\n", op->name, vt_dtype_name(dt),
               vo_last_error());
        supported = 0;
        vs_free(&s);
        break;
      }
      if (!CHECK_MSG(st == VO_OK, "%s: vo_infer: %s", s.label, vo_last_error())) {
        vs_free(&s);
        continue;
      }
      result ref;
      run_on(&s, descs, plain_ctx, NULL, -77, &ref);
      if (!CHECK_MSG(ref.status == VO_OK, "%s on the CPU's plain path: %s", s.label, ref.error)) {
        vs_free(&s);
        continue;
      }
      for (int t = 0; t < num_targets; t++) {
        const target *tg = &targets[t];
        result got;
        if (!has_kernel(tg->backend, op->index)) continue; /* listed by test_op's caller */
        run_on(&s, descs, tg->ctx, tg, 55, &got);
        /* without fp64, a float64 call is refused, and so is one whose
         * arithmetic is float64's whatever the dtype (matrix_nms's linear
         * decay); one with no float64 tensor (integer boxes) and one
         * running no kernel (empty outputs) succeed, and are compared */
        if (tg->no_fp64 && got.status != VO_OK &&
            (dt.bits == 64 || strstr(got.error, "needs float64 arithmetic"))) {
          CHECK_MSG(got.status == VO_ERROR_UNSUPPORTED_DTYPE &&
                        strncmp(got.error, op->name, strlen(op->name)) == 0 &&
                        strstr(got.error, "float64") && strstr(got.error, "cl_khr_fp64"),
                    "%s on %s without fp64: status %d \"%s\", not the float64 refusal", s.label,
                    tg->name, (int)got.status, got.error);
          stats[t].refused++;
          result_free(&got);
          continue;
        }
        if (got.status == VO_ERROR_BACKEND_UNAVAILABLE && strstr(got.error, "not implemented")) {
          CHECK_MSG(0, "no %s kernel for %s (%s)", tg->name, op->name, got.error);
        } else if (CHECK_MSG(got.status == VO_OK, "%s on %s: %s", s.label, tg->name, got.error)) {
          stats[t].worst = fmax(stats[t].worst, compare_results(&s, tg, tg->name, &ref, &got));
          if (tg->exact)
            CHECK_MSG(bit_identical(&ref, &got), "%s on %s: not bit-identical to the plain path",
                      s.label, tg->name);
          omitted_outputs(&s, descs, tg, &got);
          stats[t].samples++;
        }
        result_free(&got);
        if (!backward) continue;
        result det[3];
        for (int i = 0; i < 3; i++) run_on(&s, descs, tg->deterministic, tg, 55, &det[i]);
        if (CHECK_MSG(det[0].status == VO_OK, "%s deterministic on %s: %s", s.label, tg->name,
                      det[0].error)) {
          char what[64];
          snprintf(what, sizeof what, "%.31s deterministic", tg->name);
          stats[t].worst = fmax(stats[t].worst, compare_results(&s, tg, what, &ref, &det[0]));
          for (int i = 1; i < 3; i++)
            CHECK_MSG(det[i].status == VO_OK && bit_identical(&det[0], &det[i]),
                      "%s: deterministic run %d on %s differs from run 0", s.label, i, tg->name);
        }
        for (int i = 0; i < 3; i++) result_free(&det[i]);
      }
      result_free(&ref);
      if (d == 0 && run == 0) {
        for (int t = 0; t < num_targets; t++)
          if (has_kernel(targets[t].backend, op->index)) {
            bad_inputs(&s, descs, &targets[t]);
            short_buffers(&s, descs, &targets[t]);
          }
        mixed_devices(&s, descs);
      }
      vs_free(&s);
    }
    for (int t = 0; supported && t < num_targets; t++)
      if (!has_kernel(targets[t].backend, op->index))
        continue;
      else if (stats[t].refused)
        printf("  %-32s %-9s %-9s %d samples refused (no fp64 on the device), %d run\n", op->name,
               vt_dtype_name(dt), targets[t].name, stats[t].refused, stats[t].samples);
      else if (targets[t].exact)
        printf("  %-32s %-9s %-9s %d samples, bit-identical checked\n", op->name, vt_dtype_name(dt),
               targets[t].name, stats[t].samples);
      else
        printf("  %-32s %-9s %-9s %d samples, worst relative error %.3g\n", op->name,
               vt_dtype_name(dt), targets[t].name, stats[t].samples, stats[t].worst);
  }
}

/* The ops target t has no kernel for, listed; a call of one there fails
 * with "not implemented on the <backend> backend". */
static void not_implemented(const target *t) {
  char names[2048] = "";
  size_t used = 0;
  int count = 0;
  for (int i = 0; i < vo_op_count(); i++) {
    const vo_op_info *op = vo_op_get(i);
    if (!op || has_kernel(t->backend, op->index)) continue;
    const int w =
        snprintf(names + used, sizeof names - used, "%s%s", count++ ? ", " : "", op->name);
    if (w > 0 && used + (size_t)w < sizeof names) used += (size_t)w;
    vs_sample s;
    vs_build(&s, op->index, VS_RANDOM, vt_f32, 0);
    vo_tensor_desc descs[VO_MAX_LIST];
    if (vo_infer(NULL, op, s.args, s.num_args, descs, s.num_outputs) == VO_OK) {
      result got;
      run_on(&s, descs, t->ctx, t, 55, &got);
      CHECK_MSG(got.status == VO_ERROR_BACKEND_UNAVAILABLE && strstr(got.error, "not implemented"),
                "%s on %s without a kernel: status %d \"%s\"", op->name, t->name, (int)got.status,
                got.error);
      result_free(&got);
    }
    vs_free(&s);
  }
  if (count) printf("SKIP %d ops not implemented on %s: %s\n", count, t->name, names);
}

/* ------------------------------------------------------------ > 2^31 */

enum { BIG_C = 64, BIG_H = 64, BIG_W = 64, BIG_P = 32 };
static const int64_t big_k = 32769; /* 32769 * 64 * 32 * 32 > 2^31 */

static DLTensor dl_at(void *data, uint64_t offset, DLDevice dev, DLDataType dt, int ndim,
                      int64_t *shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.byte_offset = offset;
  t.device = dev;
  t.ndim = ndim;
  t.dtype = dt;
  t.shape = shape;
  return t;
}

/* roi_align (float16) into one output of more than 2^31 elements on target
 * t equals two half-size calls there, and its last RoIs equal the CPU's. */
static void large_output(const target *t) {
  const vo_backend *be = t->backend;
  if (!has_kernel(be, VO_OP_roi_align)) {
    printf("SKIP >2^31-element output on %s: no roi_align kernel there yet\n", t->name);
    return;
  }
  const DLDevice dev = t->device;
  const int64_t row = (int64_t)BIG_C * BIG_P * BIG_P;
  const size_t es = 2, out_bytes = (size_t)(big_k * row) * es;
  const size_t in_n = (size_t)BIG_C * BIG_H * BIG_W, rois_bytes = (size_t)big_k * 5 * es;
  const size_t chunk = (size_t)64 << 20;
  const double t0 = now_s();
  uint16_t *h_in = malloc(in_n * es), *h_rois = malloc(rois_bytes);
  unsigned char *ha = malloc(chunk), *hb = malloc(chunk);
  void *d_in = NULL, *d_rois = NULL, *d_big = NULL, *d_halves = NULL;
  if (!h_in || !h_rois || !ha || !hb) {
    printf("SKIP >2^31-element output on %s: no host memory\n", t->name);
    goto done;
  }
  d_in = be->alloc(dev, in_n * es, NULL);
  d_rois = be->alloc(dev, rois_bytes, NULL);
  d_big = be->alloc(dev, out_bytes, NULL);
  d_halves = be->alloc(dev, out_bytes, NULL);
  if (!d_in || !d_rois || !d_big || !d_halves) {
    printf("SKIP >2^31-element output on %s: cannot allocate 2 x %.1f GiB there\n", t->name,
           (double)out_bytes / (1 << 30));
    goto done;
  }
  vt_rng rng;
  vt_rng_seed(&rng, 2031);
  for (size_t i = 0; i < in_n; i++) h_in[i] = vo_f32_to_f16((float)vt_rng_uniform(&rng, -1, 1));
  for (int64_t k = 0; k < big_k; k++) {
    const double x = vt_rng_uniform(&rng, -4, 60), y = vt_rng_uniform(&rng, -4, 60);
    const double r[5] = {0, x, y, x + vt_rng_uniform(&rng, 1, 30), y + vt_rng_uniform(&rng, 1, 30)};
    for (int j = 0; j < 5; j++) h_rois[k * 5 + j] = vo_f32_to_f16((float)r[j]);
  }
  if (be->copy_to_device(dev, d_in, 0, h_in, in_n * es, NULL) != VO_OK ||
      be->copy_to_device(dev, d_rois, 0, h_rois, rois_bytes, NULL) != VO_OK)
    die_backend(t, "copy_to_device");
  {
    int64_t in_shape[4] = {1, BIG_C, BIG_H, BIG_W}, rois_shape[2] = {big_k, 5};
    int64_t out_shape[4] = {big_k, BIG_C, BIG_P, BIG_P};
    DLTensor in = dl_at(d_in, 0, dev, vt_f16, 4, in_shape);
    DLTensor rois = dl_at(d_rois, 0, dev, vt_f16, 2, rois_shape);
    DLTensor out = dl_at(d_big, 0, dev, vt_f16, 4, out_shape);
    if (!CHECK_STATUS(vo_roi_align(t->ctx, &in, &rois, 1.0, BIG_P, BIG_P, 1, 1, &out), VO_OK))
      goto done;
    const int64_t half_k = big_k / 2;
    for (int part = 0; part < 2; part++) {
      const int64_t k0 = part ? half_k : 0, k1 = part ? big_k : half_k;
      int64_t prs[2] = {k1 - k0, 5}, pos[4] = {k1 - k0, BIG_C, BIG_P, BIG_P};
      DLTensor pr = dl_at(d_rois, (uint64_t)(k0 * 5) * es, dev, vt_f16, 2, prs);
      DLTensor po = dl_at(d_halves, (uint64_t)(k0 * row) * es, dev, vt_f16, 4, pos);
      CHECK_STATUS(vo_roi_align(t->ctx, &in, &pr, 1.0, BIG_P, BIG_P, 1, 1, &po), VO_OK);
    }
    size_t bad = (size_t)-1;
    for (size_t off = 0; off < out_bytes && bad == (size_t)-1; off += chunk) {
      const size_t n = out_bytes - off < chunk ? out_bytes - off : chunk;
      if (be->copy_to_host(dev, ha, d_big, off, n, NULL) != VO_OK ||
          be->copy_to_host(dev, hb, d_halves, off, n, NULL) != VO_OK)
        die_backend(t, "copy_to_host");
      if (memcmp(ha, hb, n) != 0) bad = off;
    }
    CHECK_MSG(bad == (size_t)-1,
              "roi_align on %s: the >2^31-element output differs from two half-size calls "
              "near byte %zu (RoI %lld)",
              t->name, bad, (long long)(bad / ((size_t)row * es)));
    /* The last RoIs (offsets beyond 2^31) against the CPU. */
    enum { LAST = 8 };
    int64_t lrs[2] = {LAST, 5}, los[4] = {LAST, BIG_C, BIG_P, BIG_P};
    const size_t last_n = (size_t)(LAST * row);
    uint16_t *cpu_out = malloc(last_n * es), *dev_out = malloc(last_n * es);
    if (cpu_out && dev_out) {
      DLTensor hin = dl_at(h_in, 0, host_dev, vt_f16, 4, in_shape);
      DLTensor hr = dl_at(h_rois + (big_k - LAST) * 5, 0, host_dev, vt_f16, 2, lrs);
      DLTensor ho = dl_at(cpu_out, 0, host_dev, vt_f16, 4, los);
      CHECK_STATUS(vo_roi_align(plain_ctx, &hin, &hr, 1.0, BIG_P, BIG_P, 1, 1, &ho), VO_OK);
      if (be->copy_to_host(dev, dev_out, d_big, (uint64_t)((big_k - LAST) * row) * es, last_n * es,
                           NULL) != VO_OK)
        die_backend(t, "copy_to_host");
      int64_t mismatch = -1, nonzero = 0;
      for (size_t i = 0; i < last_n && mismatch < 0; i++) {
        const double w = vo_f16_to_f32(cpu_out[i]), g = vo_f16_to_f32(dev_out[i]);
        nonzero += dev_out[i] != 0;
        if (!(fabs(g - w) <= 5e-3 * fmax(1, fabs(w))) && vt_half_ulp_distance(vt_f16, w, g) > 2)
          mismatch = (int64_t)i;
      }
      CHECK_MSG(mismatch < 0,
                "roi_align on %s: the last RoIs of the >2^31 output differ from the CPU at "
                "element %lld",
                t->name, (long long)mismatch);
      CHECK_MSG(nonzero > 0, "roi_align on %s: the last RoIs of the >2^31 output are all zero",
                t->name);
    }
    free(cpu_out);
    free(dev_out);
  }
  printf("  >2^31-element roi_align output on %s: %.1f s\n", t->name, now_s() - t0);
done:
  if (d_in) be->free(dev, d_in, NULL);
  if (d_rois) be->free(dev, d_rois, NULL);
  if (d_big) be->free(dev, d_big, NULL);
  if (d_halves) be->free(dev, d_halves, NULL);
  free(h_in);
  free(h_rois);
  free(ha);
  free(hb);
}

/* Whether `name` is an item of the comma-separated `list`. */
static int listed(const char *list, const char *name) {
  const size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    const size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  plain_ctx = new_context(0, VO_ISA_SCALAR);
  collect_targets();
  if (num_targets == 0) printf("no target beside the reference: only the refusals are checked\n");
  const double t0 = now_s();
  const char *large_only = getenv("VO_TEST_BACKEND_OPS_LARGE_ONLY");
  const char *skip_large = getenv("VO_TEST_BACKEND_OPS_SKIP_LARGE");
  if (large_only && strcmp(large_only, "1") == 0) {
    printf("only the >2^31-element case: VO_TEST_BACKEND_OPS_LARGE_ONLY=1\n");
  } else {
    const char *ops = getenv("VO_TEST_BACKEND_OPS_OPS");
    for (int i = 0; i < vo_op_count(); i++) {
      const vo_op_info *op = vo_op_get(i);
      if (!CHECK_MSG(op != NULL, "vo_op_get(%d) is NULL", i)) continue;
      if (ops && *ops && !listed(ops, op->name)) continue;
      test_op(op);
    }
    for (int t = 0; t < num_targets && !(ops && *ops); t++) not_implemented(&targets[t]);
    printf("  ops: %.1f s\n", now_s() - t0);
  }
  for (int t = 0; t < num_targets; t++) {
    if (targets[t].device.device_type == kDLCPU) continue; /* test_large's */
    if (skip_large && strcmp(skip_large, "1") == 0)
      printf("SKIP >2^31-element output on %s: VO_TEST_BACKEND_OPS_SKIP_LARGE=1\n",
             targets[t].name);
    else
      large_output(&targets[t]);
  }
  for (int t = 0; t < num_targets; t++) {
    vo_context_destroy(targets[t].ctx);
    vo_context_destroy(targets[t].deterministic);
  }
  vo_context_destroy(plain_ctx);
  return vt_finish("test_backend_ops");
}
