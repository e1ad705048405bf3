/*
 * The call context (threads, a queue per backend, allocator, determinism, ISA,
 * workspace limit), CPU feature detection and workspace allocation.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#ifdef VISIONOPS_HAVE_OPENMP
#include <omp.h>
#endif

#define VO_MAX_THREADS 4096

static const vo_context vo_defaults = {
    .num_threads = 0,
    .queues = {NULL},
    .has_allocator = 0,
    .deterministic = 0,
    .isa = VO_ISA_AUTO,
    .workspace_limit = VO_DEFAULT_WORKSPACE_LIMIT,
    .device_checks = VO_DEVICE_CHECKS_SYNC,
    .deferred = NULL,
};

const vo_context *vo_default_context(void) { return &vo_defaults; }

vo_status vo_context_create(vo_context **out) {
  if (!out) return vo_fail(VO_ERROR_INVALID_ARGUMENT, "vo_context_create: out is NULL");
  vo_context *ctx = malloc(sizeof *ctx);
  if (!ctx) return vo_fail(VO_ERROR_OUT_OF_MEMORY, "vo_context_create: out of memory");
  *ctx = vo_defaults;
  *out = ctx;
  return VO_OK;
}

void vo_context_destroy(vo_context *ctx) {
  if (!ctx) return;
  vo_deferred_checks_destroy(ctx);
  free(ctx);
}

#define VO_REQUIRE_CTX(fn) \
  if (!ctx) return vo_fail(VO_ERROR_INVALID_ARGUMENT, fn ": ctx is NULL")

vo_status vo_context_set_num_threads(vo_context *ctx, int num_threads) {
  VO_REQUIRE_CTX("vo_context_set_num_threads");
  if (num_threads < 0 || num_threads > VO_MAX_THREADS)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "vo_context_set_num_threads: num_threads must be in [0, %d], got %d",
                   VO_MAX_THREADS, num_threads);
  ctx->num_threads = num_threads;
  return VO_OK;
}

int vo_context_num_threads(const vo_context *ctx) {
  if (!ctx) ctx = &vo_defaults;
  if (ctx->num_threads > 0) return ctx->num_threads;
#ifdef VISIONOPS_HAVE_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

vo_status vo_context_set_queue(vo_context *ctx, DLDeviceType device_type, void *queue) {
  VO_REQUIRE_CTX("vo_context_set_queue");
  const vo_backend *b = vo_backend_for_device(device_type);
  if (!b)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "vo_context_set_queue: visionops has no backend for device type %d",
                   (int)device_type);
  if (!b->not_built_reason && !b->has_queues && queue)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "vo_context_set_queue: the %s backend has no queues (pass NULL)", b->name);
  ctx->queues[vo_backend_index(b)] = queue;
  return VO_OK;
}

void *vo_context_queue(const vo_context *ctx, DLDevice device) {
  const vo_backend *b = vo_backend_for_device(device.device_type);
  if (!b) return NULL;
  return ctx->queues[vo_backend_index(b)];
}

vo_status vo_context_set_cuda_stream(vo_context *ctx, void *stream) {
  VO_REQUIRE_CTX("vo_context_set_cuda_stream");
  return vo_context_set_queue(ctx, kDLCUDA, stream);
}

vo_status vo_context_set_allocator(vo_context *ctx, const vo_allocator *allocator) {
  VO_REQUIRE_CTX("vo_context_set_allocator");
  if (!allocator) {
    ctx->has_allocator = 0;
    memset(&ctx->allocator, 0, sizeof ctx->allocator);
    return VO_OK;
  }
  if (!allocator->alloc || !allocator->free)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "vo_context_set_allocator: allocator->alloc and allocator->free must be set");
  ctx->allocator = *allocator;
  ctx->has_allocator = 1;
  return VO_OK;
}

vo_status vo_context_set_deterministic(vo_context *ctx, int deterministic) {
  VO_REQUIRE_CTX("vo_context_set_deterministic");
  ctx->deterministic = deterministic != 0;
  return VO_OK;
}

vo_status vo_context_set_isa(vo_context *ctx, vo_isa isa) {
  VO_REQUIRE_CTX("vo_context_set_isa");
  if (isa != VO_ISA_AUTO && isa != VO_ISA_SCALAR && isa != VO_ISA_AVX2 && isa != VO_ISA_AVX512)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "vo_context_set_isa: unknown isa %d", (int)isa);
  ctx->isa = isa;
  return VO_OK;
}

vo_status vo_context_set_workspace_limit(vo_context *ctx, size_t bytes) {
  VO_REQUIRE_CTX("vo_context_set_workspace_limit");
  ctx->workspace_limit = bytes ? bytes : VO_DEFAULT_WORKSPACE_LIMIT;
  return VO_OK;
}

int vo_cpu_threads(const vo_context *ctx, int64_t work_items) {
#ifdef VISIONOPS_HAVE_OPENMP
  if (omp_in_parallel()) return 1;
#endif
  int n = vo_context_num_threads(ctx);
  if (work_items < n) n = work_items < 1 ? 1 : (int)work_items;
  return n;
}

/* ---------------------------------------------------------------- ISA */

static vo_isa vo_detected_isa(void) {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  /* __builtin_cpu_supports initialises itself on first use and only reads
   * cpuid, so concurrent first calls are harmless. */
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return __builtin_cpu_supports("avx512f") ? VO_ISA_AVX512 : VO_ISA_AVX2;
#endif
  return VO_ISA_SCALAR;
}

vo_isa vo_cpu_effective_isa(const vo_context *ctx) {
  vo_isa best = vo_detected_isa();
  vo_isa want = ctx ? ctx->isa : VO_ISA_AUTO;
  if (want == VO_ISA_AUTO || want > best) return best;
  return want;
}

const char *vo_isa_name(vo_isa isa) {
  switch (isa) {
    case VO_ISA_AUTO: return "auto";
    case VO_ISA_SCALAR: return "scalar";
    case VO_ISA_AVX2: return "avx2";
    case VO_ISA_AVX512: return "avx512";
  }
  return "unknown";
}

const char *vo_cpu_isa(const vo_context *ctx) { return vo_isa_name(vo_cpu_effective_isa(ctx)); }

/* ---------------------------------------------------------- workspace */

void *vo_workspace_alloc(const vo_context *ctx, DLDevice device, size_t size, const char *op) {
  if (size == 0) size = 1;
  void *queue = vo_context_queue(ctx, device);
  void *p = NULL;
  if (ctx->has_allocator) {
    p = ctx->allocator.alloc(ctx->allocator.user, device, size, queue);
  } else {
    const vo_backend *b = vo_backend_for_device(device.device_type);
    if (b && b->alloc) p = b->alloc(device, size, queue);
  }
  if (!p)
    vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: could not allocate %zu bytes of workspace", op, size);
  return p;
}

void vo_workspace_free(const vo_context *ctx, DLDevice device, void *ptr) {
  if (!ptr) return;
  void *queue = vo_context_queue(ctx, device);
  if (ctx->has_allocator) {
    ctx->allocator.free(ctx->allocator.user, device, ptr, queue);
    return;
  }
  const vo_backend *b = vo_backend_for_device(device.device_type);
  if (b && b->free) b->free(device, ptr, queue);
}
