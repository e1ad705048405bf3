// cuBLAS through dlopen: the library is found at first use
// (libcublas.so.13, .so.12, .so, then under /usr/local/cuda/lib64), the few
// entry points deform_conv2d needs are looked up by name, and handles are
// created lazily, one per device per thread, and destroyed when their thread
// exits. Prototypes are declared here so no cuBLAS header or import library
// is needed to build.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cublas_loader.cuh"

namespace {

// cuBLAS's ABI: cublasStatus_t and cublasOperation_t are C enums.
typedef int cublas_status;
constexpr cublas_status kCublasSuccess = 0;
constexpr int kCublasOpN = 0, kCublasOpT = 1;

typedef cublas_status (*create_fn)(vo_cublas_handle *);
typedef cublas_status (*destroy_fn)(vo_cublas_handle);
typedef cublas_status (*set_stream_fn)(vo_cublas_handle, cudaStream_t);
typedef cublas_status (*set_workspace_fn)(vo_cublas_handle, void *, size_t);
typedef cublas_status (*sgemm_fn)(vo_cublas_handle, int, int, int, int, int, const float *,
                                  const float *, int, long long, const float *, int, long long,
                                  const float *, float *, int, long long, int);
typedef cublas_status (*dgemm_fn)(vo_cublas_handle, int, int, int, int, int, const double *,
                                  const double *, int, long long, const double *, int, long long,
                                  const double *, double *, int, long long, int);

struct cublas_api {
  bool ok;
  char error[512];
  create_fn create;
  destroy_fn destroy;
  set_stream_fn set_stream;
  set_workspace_fn set_workspace;
  sgemm_fn sgemm;
  dgemm_fn dgemm;
};

cublas_api api;
pthread_once_t api_once = PTHREAD_ONCE_INIT;

void load_api() {
  static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                      "/usr/local/cuda/lib64/libcublas.so.13",
                                      "/usr/local/cuda/lib64/libcublas.so.12"};
  void *lib = nullptr;
  api.error[0] = '\0';
  for (const char *name : names) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char *why = dlerror();
    // The first failure names the library we want most; keep that one.
    if (!api.error[0]) snprintf(api.error, sizeof api.error, "%s", why ? why : name);
  }
  if (!lib) return;
  api.create = reinterpret_cast<create_fn>(dlsym(lib, "cublasCreate_v2"));
  api.destroy = reinterpret_cast<destroy_fn>(dlsym(lib, "cublasDestroy_v2"));
  api.set_stream = reinterpret_cast<set_stream_fn>(dlsym(lib, "cublasSetStream_v2"));
  api.set_workspace = reinterpret_cast<set_workspace_fn>(dlsym(lib, "cublasSetWorkspace_v2"));
  api.sgemm = reinterpret_cast<sgemm_fn>(dlsym(lib, "cublasSgemmStridedBatched"));
  api.dgemm = reinterpret_cast<dgemm_fn>(dlsym(lib, "cublasDgemmStridedBatched"));
  if (!api.create || !api.destroy || !api.set_stream || !api.set_workspace || !api.sgemm ||
      !api.dgemm) {
    snprintf(api.error, sizeof api.error, "a cuBLAS entry point is missing from the library");
    return;  // the library stays loaded: unloading it buys nothing
  }
  api.ok = true;
}

// A thread's handles, one per device, destroyed when the thread exits (a
// server that starts a thread per request would otherwise keep every dead
// thread's handle and its device memory). Thread-specific data, not
// thread_local: its destructor runs at pthread exit only, never for the
// main thread at process exit, where destroying a handle would race the
// CUDA runtime's own teardown. The key is deleted when the library is
// unloaded, so no destructor runs into unmapped code (the live threads'
// handles are then left to the driver, as at process exit).
constexpr int kMaxDevices = 64;
struct thread_handles {
  vo_cublas_handle handle[kMaxDevices];
};
pthread_key_t handles_key;
bool handles_key_ok;
pthread_once_t handles_once = PTHREAD_ONCE_INIT;

void destroy_handles(void *p) {
  thread_handles *t = static_cast<thread_handles *>(p);
  for (int d = 0; d < kMaxDevices; d++)
    if (t->handle[d] && cudaSetDevice(d) == cudaSuccess) api.destroy(t->handle[d]);
  free(t);
}

void make_handles_key() { handles_key_ok = pthread_key_create(&handles_key, destroy_handles) == 0; }

__attribute__((destructor)) void delete_handles_key() {
  if (handles_key_ok) pthread_key_delete(handles_key);
}

// This thread's handle table, created at first use (NULL if out of memory).
thread_handles *this_thread_handles() {
  pthread_once(&handles_once, make_handles_key);
  if (!handles_key_ok) return nullptr;
  thread_handles *t = static_cast<thread_handles *>(pthread_getspecific(handles_key));
  if (!t) {
    t = static_cast<thread_handles *>(calloc(1, sizeof *t));
    if (t && pthread_setspecific(handles_key, t) != 0) {
      free(t);
      t = nullptr;
    }
  }
  return t;
}

vo_status status_error(const vo_exec *ex, const char *what, cublas_status s) {
  return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: %s failed with cuBLAS status %d", ex->op_name, what,
                 s);
}

bool fits_int(int64_t v) { return v >= 0 && v <= 2147483647; }

}  // namespace

vo_status vo_cublas_bind(const vo_exec *ex, cudaStream_t stream, void *workspace,
                         size_t workspace_bytes, vo_cublas_handle *handle) {
  pthread_once(&api_once, load_api);
  if (!api.ok)
    return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: cuBLAS could not be loaded (%s)", ex->op_name,
                   api.error);
  int device = 0;
  vo_status st = vo_cuda_check(ex, cudaGetDevice(&device));
  if (st != VO_OK) return st;
  if (device < 0 || device >= kMaxDevices)
    return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: CUDA device %d is beyond the %d cuBLAS supports",
                   ex->op_name, device, kMaxDevices);
  thread_handles *handles = this_thread_handles();
  if (!handles)
    return vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: no memory for this thread's cuBLAS handles",
                   ex->op_name);
  if (!handles->handle[device]) {
    vo_cublas_handle h = nullptr;
    const cublas_status s = api.create(&h);
    if (s != kCublasSuccess) return status_error(ex, "cublasCreate", s);
    handles->handle[device] = h;
  }
  vo_cublas_handle h = handles->handle[device];
  // Setting the stream resets the workspace to cuBLAS's own pool: stream first.
  cublas_status s = api.set_stream(h, stream);
  if (s != kCublasSuccess) return status_error(ex, "cublasSetStream", s);
  s = api.set_workspace(h, workspace_bytes ? workspace : nullptr, workspace_bytes);
  if (s != kCublasSuccess) return status_error(ex, "cublasSetWorkspace", s);
  *handle = h;
  return VO_OK;
}

template <typename T, typename F>
static vo_status gemm(const vo_exec *ex, F fn, const char *name, vo_cublas_handle h, bool trans_a,
                      bool trans_b, int64_t m, int64_t n, int64_t k, const T *a, int64_t lda,
                      int64_t stride_a, const T *b, int64_t ldb, int64_t stride_b, T beta, T *c,
                      int64_t ldc, int64_t stride_c, int64_t batch) {
  if (!fits_int(m) || !fits_int(n) || !fits_int(k) || !fits_int(lda) || !fits_int(ldb) ||
      !fits_int(ldc) || !fits_int(batch))
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: a matrix product of %lld x %lld x %lld (x %lld) is too large for cuBLAS",
                   ex->op_name, (long long)m, (long long)n, (long long)k, (long long)batch);
  const T one = 1;
  const cublas_status s =
      fn(h, trans_a ? kCublasOpT : kCublasOpN, trans_b ? kCublasOpT : kCublasOpN, (int)m, (int)n,
         (int)k, &one, a, (int)lda, (long long)stride_a, b, (int)ldb, (long long)stride_b, &beta, c,
         (int)ldc, (long long)stride_c, (int)batch);
  return s == kCublasSuccess ? VO_OK : status_error(ex, name, s);
}

vo_status vo_cublas_gemm(const vo_exec *ex, vo_cublas_handle h, bool trans_a, bool trans_b,
                         int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                         int64_t stride_a, const float *b, int64_t ldb, int64_t stride_b,
                         float beta, float *c, int64_t ldc, int64_t stride_c, int64_t batch) {
  return gemm<float>(ex, api.sgemm, "cublasSgemmStridedBatched", h, trans_a, trans_b, m, n, k, a,
                     lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
}

vo_status vo_cublas_gemm(const vo_exec *ex, vo_cublas_handle h, bool trans_a, bool trans_b,
                         int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                         int64_t stride_a, const double *b, int64_t ldb, int64_t stride_b,
                         double beta, double *c, int64_t ldc, int64_t stride_c, int64_t batch) {
  return gemm<double>(ex, api.dgemm, "cublasDgemmStridedBatched", h, trans_a, trans_b, m, n, k, a,
                      lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
}
