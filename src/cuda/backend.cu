// The CUDA backend's descriptor: its kernel table, the once-only availability
// probe and the default allocator, a visionops-owned stream-ordered pool per
// device.
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/common.cuh"

// An op without CUDA glue yet has a line `#define vo_cuda_<kernel> nullptr`
// here: calling it on a CUDA device then fails with "not implemented on the
// cuda backend" (every op has its glue today).

namespace {

// The kernel table, from src/ops/ops.def's kernel column: vo_cuda_KERNEL for
// each op (declared in cuda/common.cuh, defined in src/cuda/<op>.cu).
// Constant-initialised (no dynamic initialiser): registration must survive
// static linking, see DESIGN.md.
constexpr vo_kernel_fn vo_cuda_kernels[VO_NUM_OPS] = {
#define VO_OP(name, kernel, schema, backward, shape_rule) vo_cuda_##kernel,
#include "ops/ops.def"
#undef VO_OP
};
static_assert(sizeof(vo_cuda_kernels) / sizeof(vo_cuda_kernels[0]) == VO_NUM_OPS,
              "one kernel slot per op");

// Appends printf-style text at *used, never past n (vsnprintf truncates and
// NUL-terminates; *used saturates at n - 1).
__attribute__((format(printf, 4, 5))) void append(char *detail, size_t n, size_t *used,
                                                  const char *fmt, ...) {
  if (!detail || n == 0 || *used + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  const int w = vsnprintf(detail + *used, n - *used, fmt, ap);
  va_end(ap);
  if (w < 0) return;
  *used += (size_t)w;
  if (*used > n - 1) *used = n - 1;
}

// Runs once, serialised by the registry. Reports instead of failing: a
// missing driver or device only makes the backend unavailable.
int probe(char *detail, size_t n) {
  size_t used = 0;
  if (detail && n) detail[0] = '\0';
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  // Nothing of this probe may leak into the first op's launch check.
  (void)cudaGetLastError();
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count <= 0)) {
    append(detail, n, &used, "no CUDA device found");
    return 0;
  }
  if (e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary ||
      e == cudaErrorSystemDriverMismatch || e == cudaErrorCompatNotSupportedOnDevice ||
      e == cudaErrorInitializationError) {
    append(detail, n, &used, "no usable CUDA driver: %s (%s)", cudaGetErrorName(e),
           cudaGetErrorString(e));
    return 0;
  }
  if (e != cudaSuccess) {
    append(detail, n, &used, "CUDA unavailable: %s (%s)", cudaGetErrorName(e),
           cudaGetErrorString(e));
    return 0;
  }
  append(detail, n, &used, "%d device%s: ", count, count == 1 ? "" : "s");
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop;
    if (d) append(detail, n, &used, ", ");
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
      (void)cudaGetLastError();
      append(detail, n, &used, "device %d (properties unavailable)", d);
      continue;
    }
    const unsigned long long gib =
        ((unsigned long long)prop.totalGlobalMem + (1ull << 29)) >> 30;  // rounded
    append(detail, n, &used, "%s (sm_%d%d, %llu GiB)", prop.name, prop.major, prop.minor, gib);
  }
  return 1;
}

// The default allocator's pools: one visionops-owned stream-ordered pool
// per device that keeps up to VISIONOPS_CUDA_CACHE_BYTES (256 MiB unless set;
// 0 keeps none) of freed workspace across synchronisations. The device's
// default pool gives everything back at each synchronisation, so every call
// after one paid the driver's allocation again; changing that pool's
// release threshold instead would change it for every other library in the
// process. Created at a device's first allocation; never destroyed (as
// cuBLAS's handles of the main thread: no CUDA work at process exit), so a
// library unloaded and loaded again leaves the old pool's kept blocks to the
// driver. A device without pool support, or a failed creation, falls back
// to the default pool.
constexpr int kMaxPoolDevices = 64;
pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
cudaMemPool_t pools[kMaxPoolDevices];
bool pools_tried[kMaxPoolDevices];

uint64_t cache_bytes() {
  const char *v = getenv("VISIONOPS_CUDA_CACHE_BYTES");
  char *end = nullptr;
  const unsigned long long n = v ? strtoull(v, &end, 10) : 0;
  return v && end != v && *end == 0 ? (uint64_t)n : (uint64_t)256 << 20;
}

cudaMemPool_t pool_of(int device) {
  if (device < 0 || device >= kMaxPoolDevices) return nullptr;
  pthread_mutex_lock(&pools_lock);
  if (!pools_tried[device]) {
    pools_tried[device] = true;
    int supported = 0;
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    uint64_t keep = cache_bytes();
    if (cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device) ==
            cudaSuccess &&
        supported && cudaMemPoolCreate(&pool, &props) == cudaSuccess) {
      if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess)
        pools[device] = pool;
      else
        (void)cudaMemPoolDestroy(pool);
    }
    (void)cudaGetLastError();  // nothing of this may reach the op's launch check
  }
  cudaMemPool_t pool = pools[device];
  pthread_mutex_unlock(&pools_lock);
  return pool;
}

// The op has made `device` current; NULL (the context default) means the
// per-thread stream, the same one the kernels run on.
void *default_alloc(DLDevice device, size_t size, void *stream) {
  void *p = nullptr;
  const cudaStream_t s = stream ? (cudaStream_t)stream : cudaStreamPerThread;
  const cudaMemPool_t pool = pool_of(device.device_id);
  const cudaError_t e =
      pool ? cudaMallocFromPoolAsync(&p, size, pool, s) : cudaMallocAsync(&p, size, s);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // an allocation failure is reported as OOM, not later
    return nullptr;
  }
  return p;
}

// cudaFreeAsync returns a block to the pool it came from.
void default_free(DLDevice device, void *ptr, void *stream) {
  (void)device;
  if (!ptr) return;
  const cudaStream_t s = stream ? (cudaStream_t)stream : cudaStreamPerThread;
  if (cudaFreeAsync(ptr, s) != cudaSuccess) (void)cudaGetLastError();
}

// Blocking copies between host memory and device memory at ptr + offset,
// ordered after the work queued on `stream`.
vo_status copy(DLDevice device, void *dst, const void *src, size_t size, cudaMemcpyKind kind,
               void *stream) {
  vo_cuda_device_guard guard(device.device_id);
  cudaError_t e = guard.error();
  const cudaStream_t s = stream ? (cudaStream_t)stream : cudaStreamPerThread;
  if (e == cudaSuccess && size) e = cudaMemcpyAsync(dst, src, size, kind, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e == cudaSuccess) return VO_OK;
  (void)cudaGetLastError();
  return vo_fail(VO_ERROR_BACKEND_FAILURE, "cuda: copy of %zu bytes failed: %s", size,
                 cudaGetErrorString(e));
}

vo_status copy_to_device(DLDevice device, void *dst, uint64_t dst_offset, const void *src,
                         size_t size, void *stream) {
  return copy(device, (char *)dst + dst_offset, src, size, cudaMemcpyHostToDevice, stream);
}

vo_status copy_to_host(DLDevice device, void *dst, const void *src, uint64_t src_offset,
                       size_t size, void *stream) {
  return copy(device, dst, (const char *)src + src_offset, size, cudaMemcpyDeviceToHost, stream);
}

}  // namespace

// Constant-initialised, in vo_backend's field order (no designated
// initialisers before C++20): registration must survive static linking.
extern "C" const vo_backend vo_cuda_backend = {
    "cuda",                     // name
    kDLCUDA,                    // device_type
    nullptr,                    // not_built_reason
    1,                          // addressable
    vo_cuda_kernels,            // kernels
    probe,                      // probe
    1,                          // has_queues
    default_alloc,              // alloc
    default_free,               // free
    copy_to_device,             // copy_to_device
    copy_to_host,               // copy_to_host
    vo_cuda_check_data,         // check_data
    vo_cuda_queue_data_checks,  // queue_data_checks
    vo_cuda_synchronize,        // synchronize
    nullptr,                    // buffer_size: addresses, not handles
};
