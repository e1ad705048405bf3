/* The OpenCL backend beyond the cross-backend harness. First, on PoCL, a
 * program's build (box_convert's) waits while another process (here:
 * main) holds the lock file in PoCL's cache directory (program.c: PoCL's
 * kernel cache is not safe for concurrent builds). Then four threads at
 * once make the first call of a program (its compile and cache entry under
 * the lock). Then the box ops on the box dtypes the harness's float samples
 * leave out: integer boxes (box_area's int32 / int64 areas, the IoU
 * family computed in float64), and IoU between two box sets of different
 * dtypes on a caller's queue in a caller's OpenCL context
 * (vo_context_set_queue), whose buffers the backend allocates there; all
 * against the CPU, bit for bit but for complete_box_iou's atan. Last, a
 * program that is not there fails with a clear error and the backend keeps
 * working. On a device without fp64 (also run so, as test_opencl_backend_
 * no_fp64, under the testing aid VISIONOPS_OPENCL_NO_FP64=1) every call
 * with a float64 tensor or computing in float64 is refused instead, with
 * the op and cl_khr_fp64 in the message. Tensors outside their cl_mem, or
 * in a buffer of another context, are refused. Linked statically for the
 * backend's memory functions and glue API. Skipped (77) without an OpenCL
 * device. */
#define _DEFAULT_SOURCE /* flock, usleep */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/internal.h"
#include "opencl/common.h"
#include "opencl/device.h"
#include "test_util.h"

static const vo_backend *be;

static void die(const char *what) {
  fprintf(stderr, "test_opencl_backend: %s: %s\n", what, vo_last_error());
  exit(2);
}
static const DLDevice dev = {kDLOpenCL, 0};
/* The context calls run under and its OpenCL queue (NULL: the defaults). */
static vo_context *run_ctx;
static void *run_queue;

/* A copy of host tensor h on the device (same header; data a cl_mem). */
static DLTensor on_device(const vt_tensor *h, void **mem) {
  DLTensor t = h->dl;
  *mem = be->alloc(dev, h->mem_bytes ? h->mem_bytes : 1, run_queue);
  if (!*mem || be->copy_to_device(dev, *mem, 0, h->mem, h->mem_bytes, run_queue) != VO_OK)
    die("copy to opencl failed");
  t.data = *mem;
  t.byte_offset = (uint64_t)((char *)h->dl.data - (char *)h->mem);
  t.device = dev;
  return t;
}

static vt_tensor *boxes_of(DLDataType dt, int64_t n, uint64_t seed) {
  const int64_t shape[2] = {n, 4};
  vt_tensor *t = vt_tensor_new(dt, 2, shape, NULL);
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  for (int64_t i = 0; i < n; i++) {
    const double x = (double)(int)vt_rng_uniform(&rng, 0, 40),
                 y = (double)(int)vt_rng_uniform(&rng, 0, 40);
    const double b[4] = {x, y, x + (double)(int)vt_rng_uniform(&rng, 0, 20),
                         y + (double)(int)vt_rng_uniform(&rng, 0, 20)};
    for (int k = 0; k < 4; k++) vt_set(&t->dl, i * 4 + k, b[k]);
  }
  return t;
}

/* Output of op (box_area: b NULL) on the CPU and on OpenCL, compared. */
static void compare(const char *what, int op, const vt_tensor *a, const vt_tensor *b) {
  vo_value args[2] = {vo_tensor_value(&a->dl), b ? vo_tensor_value(&b->dl) : vo_int_value(0)};
  const int nargs = b ? 2 : 1;
  vo_tensor_desc desc;
  if (!CHECK_STATUS(vo_infer(NULL, vo_op_get(op), args, nargs, &desc, 1), VO_OK)) return;
  vt_tensor *want = vt_tensor_new(desc.dtype, desc.ndim, desc.shape, NULL);
  vt_tensor *got = vt_tensor_new(desc.dtype, desc.ndim, desc.shape, NULL);
  DLTensor *wo = &want->dl;
  CHECK_STATUS(vo_call(NULL, vo_op_get(op), args, nargs, &wo, 1), VO_OK);
  void *ma, *mb = NULL, *mo;
  DLTensor da = on_device(a, &ma), db = b ? on_device(b, &mb) : da;
  DLTensor dout = on_device(got, &mo);
  DLTensor *po = &dout;
  vo_value dargs[2] = {vo_tensor_value(&da), vo_tensor_value(&db)};
  const vo_status st = vo_call(run_ctx, vo_op_get(op), dargs, nargs, &po, 1);
  /* without fp64: refused when a tensor is float64 or the IoU of integer
   * boxes computes in float64 */
  const int is_int_a = a->dl.dtype.code != kDLFloat, is_int_b = b && b->dl.dtype.code != kDLFloat;
  const int needs_f64 = (a->dl.dtype.code == kDLFloat && a->dl.dtype.bits == 64) ||
                        (b && b->dl.dtype.code == kDLFloat && b->dl.dtype.bits == 64) ||
                        (b && is_int_a && is_int_b);
  if (!vo_cl_device_at(0)->fp64 && needs_f64) {
    CHECK_MSG(st == VO_ERROR_UNSUPPORTED_DTYPE &&
                  strncmp(vo_last_error(), vo_op_get(op)->name, strlen(vo_op_get(op)->name)) == 0 &&
                  strstr(vo_last_error(), "cl_khr_fp64"),
              "%s without fp64: status %d \"%s\", not the float64 refusal", what, (int)st,
              st == VO_OK ? "" : vo_last_error());
  } else if (CHECK_MSG(st == VO_OK, "%s on opencl: %s", what, vo_last_error())) {
    if (be->copy_to_host(dev, got->mem, mo, 0, got->mem_bytes, run_queue) != VO_OK)
      die("copy to the host failed");
    /* complete_box_iou's atan is not correctly rounded in OpenCL C: a few
     * float32 ulps there, every other value bit for bit. */
    const double tol = op == VO_OP_complete_box_iou ? 1e-6 : 0;
    int64_t bad = -1;
    for (int64_t i = 0; i < vt_numel(&want->dl) && bad < 0; i++) {
      const double w = vt_get(&want->dl, i), g = vt_get(&got->dl, i);
      if (!(w == g || (w != w && g != g) || fabs(g - w) <= tol * fmax(1, fabs(w)))) bad = i;
    }
    CHECK_MSG(bad < 0, "%s: opencl differs from the CPU at element %lld", what, (long long)bad);
  }
  be->free(dev, ma, run_queue);
  if (mb) be->free(dev, mb, run_queue);
  be->free(dev, mo, run_queue);
  vt_tensor_free(want);
  vt_tensor_free(got);
}

/* One call on the device in a thread of its own: boxes uploaded, `run`
 * from them into the output, the output read back into `out`, which main
 * compares (the CHECK counters are not thread-safe); `done` once over. */
typedef struct device_call {
  const vt_tensor *boxes;
  vt_tensor *out;
  vo_status (*run)(const DLTensor *boxes, DLTensor *out);
  vo_status status;
  atomic_int done;
} device_call;

static void *call_on_device(void *arg) {
  device_call *r = arg;
  void *mb, *mo;
  DLTensor db = on_device(r->boxes, &mb), dout = on_device(r->out, &mo);
  r->status = r->run(&db, &dout);
  if (be->copy_to_host(dev, r->out->mem, mo, 0, r->out->mem_bytes, NULL) != VO_OK)
    r->status = VO_ERROR_BACKEND_FAILURE;
  be->free(dev, mb, NULL);
  be->free(dev, mo, NULL);
  atomic_store(&r->done, 1);
  return NULL;
}

/* The first-use race's call: box_area through vo_call. */
static vo_status area_of(const DLTensor *boxes, DLTensor *out) {
  vo_value args[1] = {vo_tensor_value(boxes)};
  return vo_call(NULL, vo_op_get(VO_OP_box_area), args, 1, &out, 1);
}

/* The lock check's call: box_convert, xyxy to cxcywh. */
static vo_status to_cxcywh(const DLTensor *boxes, DLTensor *out) {
  return vo_box_convert(NULL, boxes, VO_BOX_XYXY, VO_BOX_CXCYWH, out);
}

/* With the lock held here for 2 s (a build of this small program takes
 * ~0.1 s warm, ~1 s cold), the first box_convert on the device (its
 * program's build) does not return before the lock is let go; it returns
 * then, with the CPU's result. */
static void check_build_waits_for_lock(void) {
  vt_tensor *a = boxes_of(vt_f32, 11, 5);
  vt_tensor *want = vt_tensor_new(vt_f32, 2, a->dl.shape, NULL);
  CHECK_STATUS(to_cxcywh(&a->dl, &want->dl), VO_OK);
  device_call r = {a, vt_tensor_new(vt_f32, 2, a->dl.shape, NULL), to_cxcywh, VO_OK, 0};
  const int fd = vo_cl_pocl_lock_file();
  if (CHECK_MSG(fd >= 0 && flock(fd, LOCK_EX) == 0, "PoCL's build lock file cannot be locked")) {
    pthread_t t;
    if (pthread_create(&t, NULL, call_on_device, &r) != 0) die("pthread_create");
    for (int i = 0; i < 200 && !atomic_load(&r.done); i++) usleep(10 * 1000);
    CHECK_MSG(!atomic_load(&r.done), "a program built while another process held PoCL's lock");
    flock(fd, LOCK_UN);
    pthread_join(t, NULL);
    CHECK_MSG(r.status == VO_OK && memcmp(r.out->mem, want->mem, want->mem_bytes) == 0,
              "box_convert on opencl after the lock: status %d", (int)r.status);
  }
  if (fd >= 0) close(fd);
  vt_tensor_free(r.out);
  vt_tensor_free(want);
  vt_tensor_free(a);
}

static vo_status area_of(const DLTensor *boxes, DLTensor *out);

/* box_area of 5 float32 boxes (80 bytes) at byte `offset` of a buffer of
 * `bytes` bytes of context `in` (NULL: the default queue's), row stride
 * `row_stride` elements, into an output buffer of `out_bytes` bytes; the
 * status, and whether the output buffer kept its pattern. */
static vo_status area_in_buffer(cl_context in, size_t bytes, uint64_t offset, int64_t row_stride,
                                size_t out_bytes, int *out_untouched) {
  static const unsigned char pattern[128] = {0};
  unsigned char back[128];
  cl_int err = CL_SUCCESS;
  void *mb = in ? (void *)vo_cl.CreateBuffer(in, CL_MEM_READ_WRITE, bytes, NULL, &err)
                : be->alloc(dev, bytes, NULL);
  void *mo = be->alloc(dev, out_bytes, NULL);
  if (!mb || !mo || err != CL_SUCCESS) die("alloc");
  if (be->copy_to_device(dev, mo, 0, pattern, out_bytes, NULL) != VO_OK) die("copy to opencl");
  const int64_t shape[2] = {5, 4}, strides[2] = {row_stride, 1}, out_shape[1] = {5};
  DLTensor boxes = {mb, dev, 2, {kDLFloat, 32, 1}, (int64_t *)shape, (int64_t *)strides, offset};
  DLTensor out = {mo, dev, 1, {kDLFloat, 32, 1}, (int64_t *)out_shape, NULL, 0};
  const vo_status st = area_of(&boxes, &out);
  if (be->copy_to_host(dev, back, mo, 0, out_bytes, NULL) != VO_OK) die("copy to the host");
  *out_untouched = st == VO_OK || memcmp(back, pattern, out_bytes) == 0;
  if (in)
    vo_cl.ReleaseMemObject((cl_mem)mb);
  else
    be->free(dev, mb, NULL);
  be->free(dev, mo, NULL);
  return st;
}

/* A tensor must lie within its cl_mem: one reaching past its end, below
 * its start (negative strides) or starting beyond it, an output too small,
 * and a buffer of another OpenCL context are refused by name, before
 * anything is written; tight fits run. */
static void check_buffer_bounds(cl_context other) {
  int untouched = 0;
  CHECK_STATUS(area_in_buffer(NULL, 80, 0, 4, 20, &untouched), VO_OK);
  CHECK_STATUS(area_in_buffer(NULL, 96, 16, 4, 20, &untouched), VO_OK);
  CHECK_STATUS(area_in_buffer(NULL, 80, 64, -4, 20, &untouched), VO_OK); /* rows flipped */
  CHECK_STATUS(area_in_buffer(NULL, 79, 0, 4, 20, &untouched), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS(
      "box_area: boxes does not fit its buffer of 79 bytes: from byte offset 0 it "
      "reaches 0 bytes below and 80 bytes on");
  CHECK_MSG(untouched, "a refused call wrote its output");
  CHECK_STATUS(area_in_buffer(NULL, 80, 48, -4, 20, &untouched), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("from byte offset 48 it reaches 64 bytes below and 16 bytes on");
  CHECK_STATUS(area_in_buffer(NULL, 80, 96, 4, 20, &untouched), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("boxes does not fit its buffer of 80 bytes");
  CHECK_STATUS(area_in_buffer(NULL, 80, 0, 4, 16, &untouched), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("box_area: output out does not fit its buffer of 16 bytes");
  CHECK_MSG(untouched, "a refused call wrote its output");
  CHECK_STATUS(area_in_buffer(other, 80, 0, 4, 20, &untouched), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("box_area: boxes: its buffer belongs to another OpenCL context than the queue's");
  CHECK_MSG(untouched, "a refused call wrote its output");
}

int main(void) {
  const char *detail = NULL;
  be = vo_backend_for_device(kDLOpenCL);
  if (!be || be->not_built_reason || !vo_backend_available(be, &detail)) {
    printf("skipped: no OpenCL device (%s)\n", detail ? detail : "not built");
    return 77;
  }
  if (vo_cl_is_pocl(vo_cl_device_at(0))) check_build_waits_for_lock();
  {
    vt_tensor *a = boxes_of(vt_f32, 101, 7);
    const int64_t n[1] = {101};
    vt_tensor *want = vt_tensor_new(vt_f32, 1, n, NULL);
    CHECK_STATUS(area_of(&a->dl, &want->dl), VO_OK);
    pthread_t threads[4];
    device_call races[4];
    for (int i = 0; i < 4; i++) {
      races[i] = (device_call){a, vt_tensor_new(vt_f32, 1, n, NULL), area_of, VO_OK, 0};
      if (pthread_create(&threads[i], NULL, call_on_device, &races[i]) != 0) die("pthread_create");
    }
    for (int i = 0; i < 4; i++) {
      pthread_join(threads[i], NULL);
      CHECK_MSG(
          races[i].status == VO_OK && memcmp(races[i].out->mem, want->mem, want->mem_bytes) == 0,
          "box_area on opencl, thread %d of 4 at first use: status %d", i, (int)races[i].status);
      vt_tensor_free(races[i].out);
    }
    vt_tensor_free(want);
    vt_tensor_free(a);
  }
  const DLDataType ints[] = {vt_i64, vt_i32, vt_i16, vt_i8, vt_u8};
  const int iou_ops[] = {VO_OP_box_iou, VO_OP_generalized_box_iou, VO_OP_distance_box_iou,
                         VO_OP_complete_box_iou};
  for (size_t d = 0; d < sizeof ints / sizeof ints[0]; d++) {
    vt_tensor *a = boxes_of(ints[d], 37, 1 + d), *b = boxes_of(ints[d], 29, 11 + d);
    char what[96];
    snprintf(what, sizeof what, "box_area %s", vt_dtype_name(ints[d]));
    compare(what, VO_OP_box_area, a, NULL);
    for (size_t k = 0; k < 4; k++) {
      snprintf(what, sizeof what, "%s %s", vo_op_get(iou_ops[k])->name, vt_dtype_name(ints[d]));
      compare(what, iou_ops[k], a, b);
    }
    vt_tensor_free(a);
    vt_tensor_free(b);
  }
  /* Two box sets of different dtypes, on a queue of the caller's own context. */
  const vo_cl_device *d = vo_cl_device_at(0);
  cl_int err = CL_SUCCESS;
  cl_context user = vo_cl.CreateContext(NULL, 1, &d->id, NULL, NULL, &err);
  cl_command_queue queue = user ? vo_cl.CreateCommandQueue(user, d->id, 0, &err) : NULL;
  if (!CHECK_MSG(queue != NULL, "cannot make an OpenCL queue: error %d", (int)err) ||
      !CHECK_STATUS(vo_context_create(&run_ctx), VO_OK) ||
      !CHECK_STATUS(vo_context_set_queue(run_ctx, kDLOpenCL, queue), VO_OK))
    return vt_finish("test_opencl_backend");
  run_queue = queue;
  const DLDataType pairs[][2] = {
      {vt_f32, vt_f64}, {vt_f16, vt_f32}, {vt_bf16, vt_f16}, {vt_i32, vt_f32}};
  for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
    vt_tensor *a = boxes_of(pairs[p][0], 23, 40 + p), *b = boxes_of(pairs[p][1], 31, 50 + p);
    for (size_t k = 0; k < 4; k++) {
      char what[96];
      snprintf(what, sizeof what, "%s %s x %s", vo_op_get(iou_ops[k])->name,
               vt_dtype_name(pairs[p][0]), vt_dtype_name(pairs[p][1]));
      compare(what, iou_ops[k], a, b);
    }
    vt_tensor_free(a);
    vt_tensor_free(b);
  }
  vo_context_destroy(run_ctx);
  run_ctx = NULL;
  run_queue = NULL;
  check_buffer_bounds(user);
  /* The caller's objects are the caller's to release (the library's
   * programs for that context keep their own reference). */
  vo_cl.ReleaseCommandQueue(queue);
  vo_cl.ReleaseContext(user);

  /* A program the library does not hold: the launch fails with the op's
   * error naming the program, and later calls still work. */
  {
    static vo_exec ex;
    ex.ctx = vo_default_context();
    ex.op_name = "box_area";
    ex.device = dev;
    ex.dtype = VO_F32;
    vo_cl_call c;
    vo_cl_launch l;
    if (CHECK_STATUS(vo_cl_call_begin(&ex, &c), VO_OK)) {
      CHECK_STATUS(vo_cl_launch_begin(&l, &c, "no_such_op", "vo_cl_no_such_op_f32"),
                   VO_ERROR_BACKEND_FAILURE);
      CHECK_ERROR_HAS("box_area: the OpenCL program 'no_such_op' does not build");
      CHECK_STATUS(vo_cl_launch_begin(&l, &c, "box_area", "vo_cl_no_such_kernel"),
                   VO_ERROR_BACKEND_FAILURE);
      CHECK_ERROR_HAS("has no kernel vo_cl_no_such_kernel");
    }
    run_ctx = NULL;
    run_queue = NULL;
    vt_tensor *a = boxes_of(vt_f64, 9, 3);
    compare("box_area float64 after the failures", VO_OP_box_area, a, NULL);
    vt_tensor_free(a);
  }
  /* Without fp64, a float64 tensor of a float32 call (nms's scores) is
   * refused by name before anything runs. */
  if (!vo_cl_device_at(0)->fp64) {
    vt_tensor *boxes = boxes_of(vt_f32, 5, 9);
    const int64_t n[1] = {5}, none[1] = {0};
    vt_tensor *scores = vt_tensor_new(vt_f64, 1, n, NULL),
              *keep = vt_tensor_new(vt_i64, 1, n, NULL);
    vt_tensor *kept = vt_tensor_new(vt_i64, 0, none, NULL);
    void *mb, *ms, *mk, *mn;
    DLTensor db = on_device(boxes, &mb), ds = on_device(scores, &ms), dk = on_device(keep, &mk);
    DLTensor dn = on_device(kept, &mn);
    DLTensor *outs[2] = {&dk, &dn};
    vo_value args[3] = {vo_tensor_value(&db), vo_tensor_value(&ds), vo_float_value(0.5)};
    CHECK_STATUS(vo_call(NULL, vo_op_get(VO_OP_nms), args, 3, outs, 2), VO_ERROR_UNSUPPORTED_DTYPE);
    CHECK_ERROR_HAS("nms: scores is float64: that needs an OpenCL device with cl_khr_fp64");
    be->free(dev, mb, NULL);
    be->free(dev, ms, NULL);
    be->free(dev, mk, NULL);
    be->free(dev, mn, NULL);
    vt_tensor_free(boxes);
    vt_tensor_free(scores);
    vt_tensor_free(keep);
    vt_tensor_free(kept);
  }
  return vt_finish("test_opencl_backend");
}
