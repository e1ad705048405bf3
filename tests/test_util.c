/* Test harness shared by the C test programs: failure-counting checks, host
 * (and optionally GPU) DLTensors built from doubles, a backend loop and an RNG. */
#include "test_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"

#ifdef VISIONOPS_TEST_CUDA
#include <cuda_runtime_api.h>
#endif

long vt_passed;
long vt_failed;

/* ---------------------------------------------------------------- checks */

void vt_fail(const char *file, int line, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  /* clang-analyzer reports ap as uninitialised here although va_start set
   * it: a false positive. */
  vsnprintf(msg, sizeof msg, fmt, ap);  // NOLINT(clang-analyzer-valist.Uninitialized)
  va_end(ap);
  vt_failed++;
  fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, msg);
}

int vt_check_status(vo_status got, vo_status want, const char *file, int line, const char *expr) {
  return CHECK_AT(file, line, got == want,
                  "%s returned %d (%s), expected %d (%s); last error: \"%s\"", expr, (int)got,
                  vo_status_string(got), (int)want, vo_status_string(want), vo_last_error());
}

int vt_check_error_has(const char *needle, const char *file, int line) {
  const char *msg = vo_last_error();
  return CHECK_AT(file, line, msg != NULL && strstr(msg, needle) != NULL,
                  "last error \"%s\" does not mention \"%s\"", msg ? msg : "(null)", needle);
}

int vt_finish(const char *program) {
  printf("%s: %ld passed, %ld failed\n", program, vt_passed, vt_failed);
  return vt_failed == 0 ? 0 : 1;
}

static void vt_die(const char *what) {
  fprintf(stderr, "test harness: %s\n", what);
  exit(2);
}

/* ---------------------------------------------------------------- dtypes */

const DLDataType vt_f32 = {kDLFloat, 32, 1};
const DLDataType vt_f64 = {kDLFloat, 64, 1};
const DLDataType vt_f16 = {kDLFloat, 16, 1};
const DLDataType vt_bf16 = {kDLBfloat, 16, 1};
const DLDataType vt_i64 = {kDLInt, 64, 1};
const DLDataType vt_i32 = {kDLInt, 32, 1};
const DLDataType vt_i16 = {kDLInt, 16, 1};
const DLDataType vt_i8 = {kDLInt, 8, 1};
const DLDataType vt_u8 = {kDLUInt, 8, 1};

static int same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

const char *vt_dtype_name(DLDataType dtype) {
  if (same_dtype(dtype, vt_f32)) return "float32";
  if (same_dtype(dtype, vt_f64)) return "float64";
  if (same_dtype(dtype, vt_f16)) return "float16";
  if (same_dtype(dtype, vt_bf16)) return "bfloat16";
  if (same_dtype(dtype, vt_i64)) return "int64";
  if (same_dtype(dtype, vt_i32)) return "int32";
  if (same_dtype(dtype, vt_i16)) return "int16";
  if (same_dtype(dtype, vt_i8)) return "int8";
  if (same_dtype(dtype, vt_u8)) return "uint8";
  return "?";
}

size_t vt_dtype_bytes(DLDataType dtype) { return (size_t)(dtype.bits * dtype.lanes + 7) / 8; }

int vt_dtype_is_half(DLDataType dtype) {
  return same_dtype(dtype, vt_f16) || same_dtype(dtype, vt_bf16);
}

static void store(DLDataType dtype, void *p, double v) {
  if (same_dtype(dtype, vt_f32)) {
    float f = (float)v;
    memcpy(p, &f, sizeof f);
  } else if (same_dtype(dtype, vt_f64)) {
    memcpy(p, &v, sizeof v);
  } else if (same_dtype(dtype, vt_f16)) {
    uint16_t h = vo_f32_to_f16((float)v);
    memcpy(p, &h, sizeof h);
  } else if (same_dtype(dtype, vt_bf16)) {
    uint16_t h = vo_f32_to_bf16((float)v);
    memcpy(p, &h, sizeof h);
  } else if (same_dtype(dtype, vt_i64)) {
    int64_t i = (int64_t)v;
    memcpy(p, &i, sizeof i);
  } else if (same_dtype(dtype, vt_i32)) {
    int32_t i = (int32_t)(int64_t)v; /* wraps as torch's casts do, without C's UB */
    memcpy(p, &i, sizeof i);
  } else if (same_dtype(dtype, vt_i16)) {
    int16_t i = (int16_t)(int64_t)v; /* wraps as torch's casts do, without C's UB */
    memcpy(p, &i, sizeof i);
  } else if (same_dtype(dtype, vt_i8)) {
    int8_t i = (int8_t)(int64_t)v; /* wraps as torch's casts do, without C's UB */
    memcpy(p, &i, sizeof i);
  } else if (same_dtype(dtype, vt_u8)) {
    uint8_t i = (uint8_t)(int64_t)v; /* wraps as torch's casts do, without C's UB */
    memcpy(p, &i, sizeof i);
  } else {
    vt_die("store: dtype not supported by the harness");
  }
}

static double load(DLDataType dtype, const void *p) {
  if (same_dtype(dtype, vt_f32)) {
    float f;
    memcpy(&f, p, sizeof f);
    return f;
  }
  if (same_dtype(dtype, vt_f64)) {
    double d;
    memcpy(&d, p, sizeof d);
    return d;
  }
  if (same_dtype(dtype, vt_f16) || same_dtype(dtype, vt_bf16)) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return dtype.code == kDLBfloat ? vo_bf16_to_f32(h) : vo_f16_to_f32(h);
  }
  if (same_dtype(dtype, vt_i64)) {
    int64_t i;
    memcpy(&i, p, sizeof i);
    return (double)i;
  }
  if (same_dtype(dtype, vt_i32)) {
    int32_t i;
    memcpy(&i, p, sizeof i);
    return i;
  }
  if (same_dtype(dtype, vt_i16)) {
    int16_t i;
    memcpy(&i, p, sizeof i);
    return i;
  }
  if (same_dtype(dtype, vt_i8)) {
    int8_t i;
    memcpy(&i, p, sizeof i);
    return i;
  }
  if (same_dtype(dtype, vt_u8)) {
    uint8_t i;
    memcpy(&i, p, sizeof i);
    return i;
  }
  vt_die("load: dtype not supported by the harness");
  return 0;
}

double vt_round_to(DLDataType dtype, double value) {
  unsigned char buf[8];
  store(dtype, buf, value);
  return load(dtype, buf);
}

int64_t vt_half_ulp_distance(DLDataType dtype, double a, double b) {
  if (isnan(a) || isnan(b)) return (isnan(a) && isnan(b)) ? 0 : INT64_MAX;
  unsigned char ba[8], bb[8]; /* store() may write up to 8 bytes */
  uint16_t ha, hb;
  store(dtype, ba, a);
  store(dtype, bb, b);
  memcpy(&ha, ba, sizeof ha);
  memcpy(&hb, bb, sizeof hb);
  /* Sign-magnitude to a monotonic integer line (+0 and -0 coincide). */
  int64_t oa = (ha & 0x8000u) ? -(int64_t)(ha & 0x7fffu) : (int64_t)ha;
  int64_t ob = (hb & 0x8000u) ? -(int64_t)(hb & 0x7fffu) : (int64_t)hb;
  return oa > ob ? oa - ob : ob - oa;
}

/* ---------------------------------------------------------------- tensors */

int64_t vt_numel(const DLTensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

static vt_tensor *tensor_header(DLDataType dtype, int ndim, const int64_t *shape) {
  if (ndim < 0 || ndim > VO_MAX_DIMS) vt_die("tensor rank out of range");
  vt_tensor *t = calloc(1, sizeof *t);
  if (!t) vt_die("out of memory");
  for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
  t->dl.ndim = ndim;
  t->dl.shape = t->shape;
  t->dl.strides = NULL;
  t->dl.dtype = dtype;
  t->dl.device.device_type = kDLCPU;
  t->dl.device.device_id = 0;
  return t;
}

static void tensor_alloc(vt_tensor *t, size_t bytes) {
  /* Never a NULL data pointer, even for empty tensors. */
  t->mem_bytes = bytes > 0 ? bytes : 16;
  t->mem = malloc(t->mem_bytes);
  if (!t->mem) vt_die("out of memory");
  memset(t->mem, 0xff, t->mem_bytes);
}

vt_tensor *vt_tensor_new(DLDataType dtype, int ndim, const int64_t *shape, const double *values) {
  vt_tensor *t = tensor_header(dtype, ndim, shape);
  int64_t n = vt_numel(&t->dl);
  tensor_alloc(t, (size_t)n * vt_dtype_bytes(dtype));
  t->dl.data = t->mem;
  for (int64_t i = 0; i < n; i++) vt_set(&t->dl, i, values ? values[i] : 0.0);
  return t;
}

vt_tensor *vt_tensor_strided(DLDataType dtype, int ndim, const int64_t *shape,
                             const int64_t *strides, uint64_t byte_offset, const double *values) {
  vt_tensor *t = tensor_header(dtype, ndim, shape);
  /* the lowest and highest element offsets from the first element */
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < ndim; d++) {
    t->strides[d] = strides[d];
    if (shape[d] > 0) *(strides[d] < 0 ? &lo : &hi) += (shape[d] - 1) * strides[d];
  }
  const size_t es = vt_dtype_bytes(dtype);
  t->dl.strides = t->strides;
  t->dl.byte_offset = byte_offset + (uint64_t)(-lo) * es;
  /* One spare element of padding past the end as well. */
  tensor_alloc(t, (size_t)byte_offset + (size_t)(hi - lo + 2) * es);
  t->dl.data = t->mem;
  int64_t n = vt_numel(&t->dl);
  for (int64_t i = 0; i < n; i++) vt_set(&t->dl, i, values ? values[i] : 0.0);
  return t;
}

void vt_tensor_free(vt_tensor *t) {
  if (!t) return;
#ifdef VISIONOPS_TEST_CUDA
  if (t->dl.device.device_type == kDLCUDA) {
    cudaFree(t->mem);
    free(t);
    return;
  }
#endif
  free(t->mem);
  free(t);
}

static void *element(const DLTensor *t, int64_t i) {
  int64_t offset = 0;
  if (t->strides) {
    for (int d = t->ndim - 1; d >= 0; d--) {
      offset += (i % t->shape[d]) * t->strides[d];
      i /= t->shape[d];
    }
  } else {
    offset = i;
  }
  return (char *)t->data + t->byte_offset + offset * (int64_t)vt_dtype_bytes(t->dtype);
}

const void *vt_first(const vt_tensor *t) { return (const char *)t->dl.data + t->dl.byte_offset; }

void vt_strides(const vt_tensor *t, int64_t *s) {
  int64_t n = 1;
  for (int d = t->dl.ndim - 1; d >= 0; d--) {
    s[d] = t->dl.strides ? t->dl.strides[d] : n;
    n *= t->dl.shape[d];
  }
}

double vt_get(const DLTensor *t, int64_t i) {
  if (t->device.device_type != kDLCPU) vt_die("vt_get on a device tensor");
  return load(t->dtype, element(t, i));
}

void vt_set(DLTensor *t, int64_t i, double value) {
  if (t->device.device_type != kDLCPU) vt_die("vt_set on a device tensor");
  store(t->dtype, element(t, i), value);
}

void vt_fill(DLTensor *t, double value) {
  int64_t n = vt_numel(t);
  for (int64_t i = 0; i < n; i++) vt_set(t, i, value);
}

void vt_read_all(const DLTensor *t, double *out) {
  int64_t n = vt_numel(t);
  for (int64_t i = 0; i < n; i++) out[i] = vt_get(t, i);
}

static vt_tensor *clone_header(const vt_tensor *src) {
  vt_tensor *t = malloc(sizeof *t);
  if (!t) vt_die("out of memory");
  *t = *src;
  t->dl.shape = t->shape;
  t->dl.strides = src->dl.strides ? t->strides : NULL;
  return t;
}

vt_tensor *vt_to_device(const vt_tensor *host, DLDevice device) {
  if (host->dl.device.device_type != kDLCPU) vt_die("vt_to_device: source is not on the host");
  vt_tensor *t = clone_header(host);
  t->dl.device = device;
  if (device.device_type == kDLCPU) {
    t->mem = malloc(host->mem_bytes);
    if (!t->mem) vt_die("out of memory");
    memcpy(t->mem, host->mem, host->mem_bytes);
  } else {
#ifdef VISIONOPS_TEST_CUDA
    if (device.device_type != kDLCUDA) vt_die("vt_to_device: unsupported device type");
    if (cudaSetDevice(device.device_id) != cudaSuccess) vt_die("cudaSetDevice failed");
    if (cudaMalloc(&t->mem, host->mem_bytes) != cudaSuccess) vt_die("cudaMalloc failed");
    if (cudaMemcpy(t->mem, host->mem, host->mem_bytes, cudaMemcpyHostToDevice) != cudaSuccess)
      vt_die("cudaMemcpy to the device failed");
#else
    vt_die("vt_to_device: this test program was built without CUDA");
#endif
  }
  t->dl.data = (char *)t->mem + ((char *)host->dl.data - (char *)host->mem);
  return t;
}

vt_tensor *vt_to_host(const vt_tensor *src) {
  vt_tensor *t = clone_header(src);
  t->dl.device.device_type = kDLCPU;
  t->dl.device.device_id = 0;
  t->mem = malloc(src->mem_bytes);
  if (!t->mem) vt_die("out of memory");
  if (src->dl.device.device_type == kDLCPU) {
    memcpy(t->mem, src->mem, src->mem_bytes);
  } else {
#ifdef VISIONOPS_TEST_CUDA
    vt_device_sync(src->dl.device);
    if (cudaMemcpy(t->mem, src->mem, src->mem_bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
      vt_die("cudaMemcpy to the host failed");
#else
    vt_die("vt_to_host: this test program was built without CUDA");
#endif
  }
  t->dl.data = (char *)t->mem + ((char *)src->dl.data - (char *)src->mem);
  return t;
}

void vt_device_sync(DLDevice device) {
#ifdef VISIONOPS_TEST_CUDA
  if (device.device_type == kDLCUDA && cudaDeviceSynchronize() != cudaSuccess)
    vt_die("cudaDeviceSynchronize failed");
#else
  (void)device;
#endif
}

/* ---------------------------------------------------------------- backends */

void vt_for_each_backend(vt_backend_fn fn, void *user) {
  static unsigned char announced[64];
  int count = vo_backend_count();
  CHECK_MSG(count >= 1, "vo_backend_count() = %d", count);
  for (int i = 0; i < count; i++) {
    vo_backend_info info;
    memset(&info, 0, sizeof info);
    if (!CHECK_STATUS(vo_backend_status(i, &info), VO_OK)) continue;
    if (!info.built) continue;
    const char *why = NULL;
    if (!info.available) {
      why = info.detail;
    } else if (info.device_type != kDLCPU) {
#ifdef VISIONOPS_TEST_CUDA
      if (info.device_type != kDLCUDA) why = "this test program cannot place data on that device";
#else
      why = "this test program was built without CUDA";
#endif
    }
    if (why) {
      if (i < 64 && !announced[i]) {
        printf("SKIP %s: %s\n", info.name, why);
        announced[i] = 1;
      }
      continue;
    }
    fn(&info, user);
  }
}

/* ---------------------------------------------------------------- RNG */

void vt_rng_seed(vt_rng *rng, uint64_t seed) { rng->state = seed; }

/* splitmix64: tiny, fast, and the same sequence on every platform. */
uint64_t vt_rng_next(vt_rng *rng) {
  uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double vt_rng_uniform(vt_rng *rng, double lo, double hi) {
  double u = (double)(vt_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
  return lo + (hi - lo) * u;
}

int64_t vt_rng_int(vt_rng *rng, int64_t n) { return (int64_t)(vt_rng_next(rng) % (uint64_t)n); }
