/*
 * Fuzz target over the generic entry points vo_infer / vo_call: the input
 * picks an op and every argument (kinds, values, tensor dtype, rank, sizes,
 * strides, byte offset, device, data; see fuzz_format.h). Tensors are
 * allocated exactly as large as their sizes and strides reach, so any read
 * or write out of bounds trips AddressSanitizer. Beyond crashes it checks the
 * API's promises: a failed call leaves every output untouched, an output
 * aliasing an input or laid out wrongly is refused, and on OpenCL a tensor
 * reaching outside its cl_mem is refused.
 *
 * Device tensors are real device memory of the size their layout reaches,
 * made and read through the backend's memory functions (core/internal.h:
 * the one use of the library's internals here), so the target links the
 * static library. A device whose backend cannot run here gets a
 * placeholder address: the call is refused as unavailable before any data
 * is read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <visionops/visionops.h>

#include "core/internal.h"
#include "fuzz_format.h"
#include "fuzz_run.h"

typedef struct reader {
  const uint8_t *p;
  size_t left;
} reader;

static uint8_t rd_u8(reader *r) {
  if (!r->left) return 0;
  r->left--;
  return *r->p++;
}

static void rd_bytes(reader *r, void *dst, size_t n) {
  size_t take = n < r->left ? n : r->left;
  memcpy(dst, r->p, take);
  memset((char *)dst + take, 0, n - take);
  r->p += take;
  r->left -= take;
}

typedef enum arg_kind {
  ARG_TENSOR,
  ARG_OPT_TENSOR,
  ARG_TENSOR_LIST,
  ARG_FLOAT,
  ARG_INT,
  ARG_BOOL,
  ARG_FLOAT_LIST
} arg_kind;

/* Argument kinds from the op's schema string, "name(Tensor a, int b=1) -> ...". */
static int schema_kinds(const char *schema, arg_kind *kinds, int max) {
  const char *s = strchr(schema, '(');
  int n = 0;
  if (!s) return 0;
  s++;
  while (*s && *s != ')' && n < max) {
    while (*s == ' ' || *s == ',') s++;
    if (!strncmp(s, "Tensor[]", 8))
      kinds[n++] = ARG_TENSOR_LIST;
    else if (!strncmp(s, "Tensor?", 7))
      kinds[n++] = ARG_OPT_TENSOR;
    else if (!strncmp(s, "Tensor", 6))
      kinds[n++] = ARG_TENSOR;
    else if (!strncmp(s, "float[]", 7))
      kinds[n++] = ARG_FLOAT_LIST;
    else if (!strncmp(s, "float", 5))
      kinds[n++] = ARG_FLOAT;
    else if (!strncmp(s, "int", 3) || !strncmp(s, "SymInt", 6))
      kinds[n++] = ARG_INT;
    else if (!strncmp(s, "bool", 4))
      kinds[n++] = ARG_BOOL;
    else
      return n;
    while (*s && *s != ',' && *s != ')') s++;
  }
  return n;
}

/* One decoded tensor and the memory behind it: host memory `mem`, or a
 * device buffer `dev_mem` (then `bytes` is the buffer's size and
 * t.byte_offset its first element's offset there). */
typedef struct fuzz_tensor {
  DLTensor t;
  int64_t shape[VO_MAX_DIMS + 2];
  int64_t strides[VO_MAX_DIMS + 2];
  void *mem;
  void *dev_mem;
  size_t bytes;
} fuzz_tensor;

#define MAX_TENSORS 64
typedef struct arena {
  fuzz_tensor tensors[MAX_TENSORS];
  int count;
  /* A tensor with elements in a cl_mem too small for it: the call must fail. */
  int must_fail;
  DLTensor *lists[VO_MAX_LIST + 4][VO_MAX_LIST + 4];
  double floats[VO_MAX_LIST + 4][VO_MAX_LIST + 4];
} arena;

/* The backend holding device memory of `type` when it can run here (NULL
 * for host memory and for devices without a usable backend). */
static const vo_backend *device_backend(DLDeviceType type) {
  if (type == kDLCPU || type == kDLCUDAHost) return NULL;
  const vo_backend *b = vo_backend_for_device(type);
  const char *detail;
  return b && !b->not_built_reason && b->alloc && vo_backend_available(b, &detail) ? b : NULL;
}

/* A device buffer of `bytes` bytes holding `src` (NULL: `fill` bytes). */
static void *device_buffer(const vo_backend *b, DLDevice dev, const void *src, size_t bytes,
                           unsigned char fill) {
  void *m = b->alloc(dev, bytes ? bytes : 1, NULL);
  if (!m) abort();
  void *staged = NULL;
  if (!src && bytes) {
    staged = malloc(bytes);
    if (!staged) abort();
    memset(staged, fill, bytes);
    src = staged;
  }
  if (bytes && b->copy_to_device(dev, m, 0, src, bytes, NULL) != VO_OK) abort();
  free(staged);
  return m;
}

static const DLDataType dtypes[FUZZ_DTYPE_COUNT] = {
    {kDLFloat, 32, 1},  {kDLFloat, 64, 1}, {kDLFloat, 16, 1},
    {kDLBfloat, 16, 1}, {kDLInt, 64, 1},   {kDLInt, 32, 1},
    {kDLInt, 16, 1},    {kDLUInt, 8, 1},   {6 /* kDLBool in DLPack >= 0.8 */, 8, 1},
    {kDLComplex, 64, 1}};

static int64_t size_of_code(uint8_t c) {
  static const int64_t special[] = {
      (int64_t)1 << 31, (int64_t)1 << 62, -1, ((int64_t)1 << 32) + 1, 1000, (int64_t)1 << 40};
  if (c < FUZZ_SIZE_SPECIAL) return c;
  return special[(c - FUZZ_SIZE_SPECIAL) % (sizeof special / sizeof special[0])];
}

static int64_t stride_of_code(uint8_t c) {
  if (c == 0x7F) return (int64_t)1 << 40;
  if (c == 0x80) return -((int64_t)1 << 40);
  return (int8_t)c;
}

static char dummy_byte[64] __attribute__((aligned(64)));

/* Decodes one tensor; returns NULL for "no tensor". */
static DLTensor *rd_tensor(reader *r, arena *a) {
  const uint8_t flags = rd_u8(r);
  const uint8_t dt = rd_u8(r);
  const int ndim = rd_u8(r) % (VO_MAX_DIMS + 2);
  if (flags & FUZZ_T_NONE || a->count == MAX_TENSORS) return NULL;
  fuzz_tensor *f = &a->tensors[a->count++];
  memset(f, 0, sizeof *f);
  f->t.dtype = dtypes[dt % FUZZ_DTYPE_COUNT];
  if (flags & FUZZ_T_LANES) f->t.dtype.lanes = 2;
  static const DLDeviceType devices[] = {kDLCPU, kDLCUDA, kDLOpenCL, kDLCUDAHost,
                                         kDLCPU, kDLCPU,  kDLOpenCL, kDLCPU};
  const int dev = (flags & FUZZ_T_DEVICE) >> 4;
  const int short_buffer = dev == FUZZ_DEV_OPENCL_SHORT;
  f->t.device.device_type = devices[dev];
  f->t.ndim = ndim;
  f->t.shape = f->shape;
  int64_t numel = 1;
  int huge = 0;
  for (int i = 0; i < ndim; i++) {
    f->shape[i] = size_of_code(rd_u8(r));
    if (f->shape[i] == 0)
      numel = 0;
    else if (f->shape[i] < 0 || (numel && __builtin_mul_overflow(numel, f->shape[i], &numel)))
      huge = 1;
  }
  if (numel == 0) huge = 0;
  if (flags & FUZZ_T_STRIDES) {
    for (int i = 0; i < ndim; i++) f->strides[i] = stride_of_code(rd_u8(r));
    f->t.strides = f->strides;
  }
  const uint64_t byte_offset = flags & FUZZ_T_OFFSET ? rd_u8(r) : 0;
  f->t.byte_offset = byte_offset;
  const size_t elem = f->t.dtype.bits / 8 ? f->t.dtype.bits / 8 : 1;
  /* Element offsets reached (as DLPack lays them out, default strides row-major). */
  int64_t lo = 0, hi = 0, expected = 1;
  for (int i = ndim - 1; i >= 0 && !huge && numel > 0; i--) {
    int64_t s = f->t.strides ? f->strides[i] : expected, span;
    if (!f->t.strides && __builtin_mul_overflow(expected, f->shape[i], &expected)) huge = 1;
    if (__builtin_mul_overflow(f->shape[i] - 1, s, &span))
      huge = 1;
    else if (span < 0)
      huge |= __builtin_add_overflow(lo, span, &lo);
    else
      huge |= __builtin_add_overflow(hi, span, &hi);
  }
  const int64_t reach = hi - lo + 1; /* elements from the lowest to the highest */
  /* CUDA host (pinned) memory is host memory: the library may read it on
   * the host (its value checks do), so it is allocated as a CPU tensor is. */
  const int host = f->t.device.device_type == kDLCPU || f->t.device.device_type == kDLCUDAHost;
  const vo_backend *backend = device_backend(f->t.device.device_type);
  /* Where the library can tell a buffer's size (OpenCL), a device tensor
   * too large to allocate gets a small real buffer, which it must refuse. */
  const int sized = backend && backend->buffer_size;
  if (flags & FUZZ_T_NODATA || (!host && !backend) || huge || numel > FUZZ_MAX_ELEMENTS ||
      (numel > 0 && reach > 4 * FUZZ_MAX_ELEMENTS)) {
    /* Not allocated: the library must refuse it (or never dereference it). */
    if (!(flags & FUZZ_T_NODATA) && !host && !backend) {
      f->t.data = dummy_byte; /* refused as unavailable */
    } else if (!(flags & FUZZ_T_NODATA) && sized) {
      f->bytes = 64;
      f->dev_mem = f->t.data = device_buffer(backend, f->t.device, NULL, f->bytes, 0x5A);
      a->must_fail |= numel > 0;
    } else {
      f->t.data = NULL;
    }
    size_t skip = numel > 0 && numel <= FUZZ_MAX_ELEMENTS ? (size_t)numel * elem : 0;
    r->p += skip < r->left ? skip : r->left;
    r->left -= skip < r->left ? skip : r->left;
    return &f->t;
  }
  if (numel == 0) {
    if (backend) /* a real, empty-enough buffer: nothing is read */
      f->dev_mem = f->t.data = device_buffer(backend, f->t.device, NULL, 1, 0x5A);
    else
      f->t.data = (char *)dummy_byte - byte_offset;
    return &f->t;
  }
  f->bytes = (size_t)reach * elem;
  f->mem = malloc(f->bytes);
  if (!f->mem) abort();
  /* Fill in element order from the input; the gaps between strided
   * elements get a recognisable pattern. */
  memset(f->mem, 0x5A, f->bytes);
  char *origin = (char *)f->mem + (size_t)(-lo) * elem;
  int64_t idx[VO_MAX_DIMS + 2] = {0};
  for (int64_t e = 0; e < numel; e++) {
    int64_t off = 0, exp2 = 1;
    for (int i = ndim - 1; i >= 0; i--) {
      off += idx[i] * (f->t.strides ? f->strides[i] : exp2);
      exp2 *= f->shape[i];
    }
    rd_bytes(r, origin + off * (int64_t)elem, elem);
    for (int i = ndim - 1; i >= 0; i--) {
      if (++idx[i] < f->shape[i]) break;
      idx[i] = 0;
    }
  }
  if (backend) {
    /* The device buffer: byte_offset bytes, then the elements as laid out
     * on the host (one byte short for FUZZ_DEV_OPENCL_SHORT). */
    const int shorten = short_buffer && (size_t)byte_offset + f->bytes > 1;
    const size_t bytes = (size_t)byte_offset + f->bytes - (size_t)shorten;
    unsigned char *staged = malloc(bytes);
    if (!staged) abort();
    memset(staged, 0x5A, (size_t)byte_offset);
    memcpy(staged + byte_offset, f->mem, bytes - (size_t)byte_offset);
    f->dev_mem = device_buffer(backend, f->t.device, staged, bytes, 0);
    free(staged);
    free(f->mem);
    f->mem = NULL;
    f->bytes = bytes;
    f->t.data = f->dev_mem;
    f->t.byte_offset = byte_offset + (uint64_t)(-lo) * elem;
    a->must_fail |= shorten && sized;
    return &f->t;
  }
  /* data + byte_offset is element 0's address, as DLPack defines it. */
  f->t.data = (void *)((uintptr_t)origin - byte_offset);
  return &f->t;
}

static vo_value rd_value(reader *r, arena *a, arg_kind kind, int slot) {
  const uint8_t override = rd_u8(r);
  if (override >= FUZZ_KIND_OVERRIDE) kind = (arg_kind)((override - FUZZ_KIND_OVERRIDE) % 7);
  vo_value v;
  memset(&v, 0, sizeof v);
  switch (kind) {
    case ARG_TENSOR:
    case ARG_OPT_TENSOR: return vo_tensor_value(rd_tensor(r, a));
    case ARG_TENSOR_LIST: {
      const int64_t n = rd_u8(r) % (VO_MAX_LIST + 3);
      for (int64_t i = 0; i < n; i++) a->lists[slot][i] = rd_tensor(r, a);
      return vo_tensor_list_value((const DLTensor *const *)a->lists[slot], n);
    }
    case ARG_FLOAT_LIST: {
      const int64_t n = rd_u8(r) % (VO_MAX_LIST + 3);
      for (int64_t i = 0; i < n; i++) rd_bytes(r, &a->floats[slot][i], sizeof(double));
      return vo_float_list_value(a->floats[slot], n);
    }
    case ARG_FLOAT: {
      double d;
      rd_bytes(r, &d, sizeof d);
      return vo_float_value(d);
    }
    case ARG_INT: {
      int64_t i;
      rd_bytes(r, &i, sizeof i);
      return vo_int_value(i);
    }
    case ARG_BOOL: return vo_bool_value(rd_u8(r));
  }
  return v;
}

static void arena_free(arena *a) {
  for (int i = 0; i < a->count; i++) {
    fuzz_tensor *f = &a->tensors[i];
    free(f->mem);
    if (f->dev_mem)
      vo_backend_for_device(f->t.device.device_type)->free(f->t.device, f->dev_mem, NULL);
  }
}

#define PATTERN 0xA5

static int untouched(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != PATTERN) return 0;
  return 1;
}

/* untouched() for output memory on `dev` (a device buffer where `b`). */
static int output_untouched(const vo_backend *b, DLDevice dev, const void *mem, size_t n) {
  if (!b) return untouched(mem, n);
  unsigned char *back = malloc(n ? n : 1);
  if (!back || (n && b->copy_to_host(dev, back, mem, 0, n, NULL) != VO_OK)) abort();
  const int same = untouched(back, n);
  free(back);
  return same;
}

static void fail(const char *what, const char *op) {
  fprintf(stderr, "fuzz_call: %s (op %s): %s\n", what, op, vo_last_error());
  abort();
}

int fuzz_run(const uint8_t *data, size_t size, vo_status *call_status) {
  reader r = {data, size};
  static arena a; /* large; the fuzzer runs one input at a time */
  a.count = 0;
  a.must_fail = 0;
  *call_status = VO_ERROR_INVALID_ARGUMENT;
  const vo_op_info *op = vo_op_get(rd_u8(&r) % vo_op_count());
  const uint8_t nargs_delta = rd_u8(&r);
  const uint8_t ctx_byte = rd_u8(&r);
  arg_kind kinds[32];
  const int schema_args = schema_kinds(op->schema, kinds, 32);
  int nargs = schema_args;
  if (nargs_delta != FUZZ_NARGS_EXACT) nargs = (nargs + nargs_delta % 5) - 2;
  if (nargs < 0) nargs = 0;
  if (nargs > 32) nargs = 32;
  vo_value args[32];
  for (int i = 0; i < nargs; i++)
    args[i] = rd_value(&r, &a, i < schema_args ? kinds[i] : ARG_INT, i);

  vo_context *ctx = NULL;
  if (vo_context_create(&ctx) != VO_OK) abort();
  vo_context_set_num_threads(ctx, FUZZ_CTX_THREADS(ctx_byte));
  static const size_t limits[] = {0, 1 << 10, 64 << 10, 1 << 20};
  vo_context_set_workspace_limit(ctx, limits[FUZZ_CTX_WORKSPACE(ctx_byte)]);

  const uint8_t out_mode = rd_u8(&r) % FUZZ_OUT_MODES;
  int num_out = 0;
  vo_tensor_desc desc[VO_MAX_LIST];
  if (vo_infer_num_outputs(ctx, op, args, nargs, &num_out) != VO_OK) goto done;
  if (num_out < 1 || num_out > VO_MAX_LIST) fail("vo_infer_num_outputs gave a bad count", op->name);
  if (vo_infer(ctx, op, args, nargs, desc, num_out) != VO_OK) goto done;

  DLTensor outs[VO_MAX_LIST];
  DLTensor *out_ptrs[VO_MAX_LIST];
  int64_t out_strides[VO_MAX_LIST][VO_MAX_DIMS];
  void *out_mem[VO_MAX_LIST] = {0};
  size_t out_bytes[VO_MAX_LIST] = {0};
  int64_t out_elements = 0, in_elements = 0;
  for (int t = 0; t < a.count; t++) {
    const DLTensor *x = &a.tensors[t].t;
    int64_t n = 1;
    for (int d = 0; d < x->ndim && n; d++)
      if (x->shape[d] <= 0 || __builtin_mul_overflow(n, x->shape[d], &n)) n = 0;
    in_elements += n;
  }
  for (int i = 0; i < num_out; i++) {
    int64_t numel = 1;
    if (desc[i].ndim < 0 || desc[i].ndim > VO_MAX_DIMS) fail("vo_infer gave a bad rank", op->name);
    for (int d = 0; d < desc[i].ndim; d++) {
      if (desc[i].shape[d] < 0) fail("vo_infer gave a negative size", op->name);
      if (__builtin_mul_overflow(numel, desc[i].shape[d], &numel))
        fail("vo_infer gave a shape whose size overflows", op->name);
    }
    out_elements += numel;
    if (out_elements > FUZZ_MAX_OUTPUT_ELEMENTS) goto done;
    out_bytes[i] = (size_t)numel * (desc[i].dtype.bits / 8);
  }
  if ((in_elements + 1) > FUZZ_MAX_WORK / (out_elements + 1)) goto done;
  /* Outputs on a device that can run here are device buffers. */
  const vo_backend *out_backend = num_out ? device_backend(desc[0].device.device_type) : NULL;
  for (int i = 0; i < num_out; i++) {
    if (out_backend) {
      out_mem[i] = device_buffer(out_backend, desc[i].device, NULL, out_bytes[i], PATTERN);
    } else {
      out_mem[i] = malloc(out_bytes[i] ? out_bytes[i] : 1);
      if (!out_mem[i]) abort();
      memset(out_mem[i], PATTERN, out_bytes[i]);
    }
    DLTensor o = {out_mem[i], desc[i].device, desc[i].ndim, desc[i].dtype, NULL, NULL, 0};
    outs[i] = o;
    outs[i].shape = desc[i].shape;
    out_ptrs[i] = &outs[i];
  }
  /* Perturb the first output: each such call must be refused. */
  int expect_error = 0;
  const DLTensor *first_in = NULL;
  for (int i = 0; i < nargs && !first_in; i++)
    if (args[i].kind == VO_VALUE_TENSOR && args[i].u.tensor->data) first_in = args[i].u.tensor;
  int64_t out0_numel = out_bytes[0] / (desc[0].dtype.bits / 8 ? desc[0].dtype.bits / 8 : 1);
  if (out_mode == 1 && out0_numel > 0) {
    outs[0].dtype.bits = outs[0].dtype.bits == 32 ? 64 : 32;
    expect_error = 1;
  } else if (out_mode == 2 && out0_numel > 0 && first_in &&
             (first_in->device.device_type == kDLCPU || out_backend)) {
    /* Alias the first input only where its allocation is big enough, so a
     * missed overlap check shows as an accepted call, not a heap overflow
     * (on a device: the output at the start of the input's buffer). */
    for (int t = 0; t < a.count; t++) {
      const fuzz_tensor *f = &a.tensors[t];
      void *mem = out_backend ? f->dev_mem : f->mem;
      if (&f->t == first_in && f->bytes >= out_bytes[0] && mem &&
          (!out_backend || first_in->byte_offset < out_bytes[0])) {
        outs[0].data = mem;
        expect_error = 1;
      }
    }
  } else if (out_mode == 3 && desc[0].ndim >= 2 && desc[0].shape[desc[0].ndim - 1] > 1 &&
             desc[0].shape[desc[0].ndim - 2] > 1) {
    /* Column-major strides: the same bytes, not contiguous. */
    int64_t s = 1;
    for (int d = 0; d < desc[0].ndim; d++) {
      out_strides[0][d] = s;
      s *= desc[0].shape[d];
    }
    outs[0].strides = out_strides[0];
    expect_error = 1;
  } else if (out_mode == 4) {
    out_ptrs[0] = NULL;
    expect_error = 1;
  } else if (out_mode == 5 && num_out >= 2) {
    out_ptrs[num_out - 1] = NULL; /* either outcome; the kernels must not write through it */
  }
  *call_status = vo_call(ctx, op, args, nargs, out_ptrs, num_out);
  if (*call_status == VO_OK && expect_error) fail("a malformed output was accepted", op->name);
  if (*call_status == VO_OK && a.must_fail)
    fail("a tensor reaching outside its buffer was accepted", op->name);
  if (*call_status != VO_OK) {
    if (!vo_last_error()[0]) fail("an error without a message", op->name);
    for (int i = 0; i < num_out; i++)
      if (!(out_mode == 2 && i == 0) &&
          !output_untouched(out_backend, desc[i].device, out_mem[i], out_bytes[i]))
        fail("a failed call wrote an output", op->name);
  }
  for (int i = 0; i < num_out; i++)
    if (out_backend)
      out_backend->free(desc[i].device, out_mem[i], NULL);
    else
      free(out_mem[i]);
done:
  vo_context_destroy(ctx);
  arena_free(&a);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  vo_status status;
  return fuzz_run(data, size, &status);
}
