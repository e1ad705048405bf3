/* Test harness shared by the C test programs: failure-counting checks, host
 * (and optionally GPU) DLTensors built from doubles, a backend loop and an RNG. */
#ifndef VISIONOPS_TEST_UTIL_H
#define VISIONOPS_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "visionops/visionops.h"

/* ---------------------------------------------------------------- checks */

extern long vt_passed;
extern long vt_failed;

/* Records a failure: prints file:line and the printf-style message. */
void vt_fail(const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Each check is an expression worth 1 if it passed and 0 if it failed, so
 * `if (!CHECK(p)) return;` guards p for the code after it (the helpers are
 * inline so static analysers see that too). */
static inline int vt_pass(void) { return (int)(++vt_passed > 0); }
static inline int vt_zero(void) { return 0; }
#define CHECK(cond) ((cond) ? vt_pass() : (vt_fail(__FILE__, __LINE__, "%s", #cond), vt_zero()))
#define CHECK_MSG(cond, ...) \
  ((cond) ? vt_pass() : (vt_fail(__FILE__, __LINE__, __VA_ARGS__), vt_zero()))
/* CHECK_MSG reported at a caller's place (for helpers that check on its behalf). */
#define CHECK_AT(file, line, cond, ...) \
  ((cond) ? vt_pass() : (vt_fail((file), (line), __VA_ARGS__), vt_zero()))
/* A vo_status comparison that prints both codes and the library's message. */
#define CHECK_STATUS(got, want) vt_check_status((got), (want), __FILE__, __LINE__, #got)
/* The last error message contains `needle` (case-sensitive). */
#define CHECK_ERROR_HAS(needle) vt_check_error_has((needle), __FILE__, __LINE__)

int vt_check_status(vo_status got, vo_status want, const char *file, int line, const char *expr);
int vt_check_error_has(const char *needle, const char *file, int line);

/* Prints "<program>: N passed, N failed" and returns the process exit code. */
int vt_finish(const char *program);

/* ---------------------------------------------------------------- dtypes */

extern const DLDataType vt_f32, vt_f64, vt_f16, vt_bf16, vt_i64, vt_i32, vt_i16, vt_i8, vt_u8;

const char *vt_dtype_name(DLDataType dtype);
size_t vt_dtype_bytes(DLDataType dtype);
int vt_dtype_is_half(DLDataType dtype);
/* Round a double through the storage type (the value a tensor of that dtype
 * would hold). Integers are truncated toward zero. */
double vt_round_to(DLDataType dtype, double value);
/* Distance in units in the last place between two values of a 16-bit float
 * type (both already representable in it); NaN vs non-NaN is "infinite". */
int64_t vt_half_ulp_distance(DLDataType dtype, double a, double b);

/* ---------------------------------------------------------------- tensors */

/* A DLTensor with its shape/strides arrays and the memory it owns (host or
 * device). `dl` must stay inside the struct (shape points into it), so these
 * are always handled by pointer. */
typedef struct vt_tensor {
  DLTensor dl;
  int64_t shape[VO_MAX_DIMS];
  int64_t strides[VO_MAX_DIMS];
  void *mem;        /* allocation the data lives in */
  size_t mem_bytes; /* its size */
} vt_tensor;

/* Contiguous host tensor (strides NULL); `values` (row-major, may be NULL for
 * zeros) are converted to dtype. */
vt_tensor *vt_tensor_new(DLDataType dtype, int ndim, const int64_t *shape, const double *values);
/* Host tensor laid out with explicit element strides and byte_offset inside a
 * buffer of 0xff bytes (NaN for floats, -1 for integers), so a kernel that
 * ignores the strides or the offset reads garbage. With negative strides the
 * first element is not the buffer's lowest: byte_offset grows by the bytes
 * the view reaches below it (data stays the buffer's start). */
vt_tensor *vt_tensor_strided(DLDataType dtype, int ndim, const int64_t *shape,
                             const int64_t *strides, uint64_t byte_offset, const double *values);
void vt_tensor_free(vt_tensor *t);

int64_t vt_numel(const DLTensor *t);
/* Element at row-major logical index i (strides honoured), as double. Host only. */
double vt_get(const DLTensor *t, int64_t i);
/* The address of t's first element (data + byte_offset). */
const void *vt_first(const vt_tensor *t);
/* t's element strides into s[0..ndim) (row-major when it has none). */
void vt_strides(const vt_tensor *t, int64_t *s);
void vt_set(DLTensor *t, int64_t i, double value);
/* Every element (logical order) to `value`. */
void vt_fill(DLTensor *t, double value);
/* Copies all logical elements into out (length vt_numel). */
void vt_read_all(const DLTensor *t, double *out);

/* A copy of a host tensor on `device` (same layout and strides); for kDLCPU a
 * plain host copy. vt_to_host copies any tensor back to the host. Device
 * copies exist only in programs built with VISIONOPS_TEST_CUDA. */
vt_tensor *vt_to_device(const vt_tensor *host, DLDevice device);
vt_tensor *vt_to_host(const vt_tensor *t);
/* Waits for outstanding GPU work (no-op on the CPU). */
void vt_device_sync(DLDevice device);

/* ---------------------------------------------------------------- backends */

/* Calls fn once for every backend that is built, available and reachable
 * from this test program; prints "SKIP <backend>: <detail>" once per backend
 * that is built but unusable. */
typedef void (*vt_backend_fn)(const vo_backend_info *backend, void *user);
void vt_for_each_backend(vt_backend_fn fn, void *user);

/* ---------------------------------------------------------------- RNG */

typedef struct vt_rng {
  uint64_t state;
} vt_rng;

void vt_rng_seed(vt_rng *rng, uint64_t seed);
uint64_t vt_rng_next(vt_rng *rng);
/* Uniform in [lo, hi). */
double vt_rng_uniform(vt_rng *rng, double lo, double hi);
/* Uniform integer in [0, n). */
int64_t vt_rng_int(vt_rng *rng, int64_t n);

#endif /* VISIONOPS_TEST_UTIL_H */
