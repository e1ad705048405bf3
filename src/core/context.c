/*
 * The call context (threads, CUDA stream, allocator, determinism, ISA,
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
    .cuda_stream = NULL,
    .has_allocator = 0,
    .deterministic = 0,
    .isa = VO_ISA_AUTO,
    .workspace_limit = VO_DEFAULT_WORKSPACE_LIMIT,
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

void vo_context_destroy(vo_context *ctx) { free(ctx); }

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

vo_status vo_context_set_cuda_stream(vo_context *ctx, void *stream) {
  VO_REQUIRE_CTX("vo_context_set_cuda_stream");
  ctx->cuda_stream = stream;
  return VO_OK;
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
  if (isa != VO_ISA_AUTO && isa != VO_ISA_SCALAR && isa != VO_ISA_AVX2)
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
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return VO_ISA_AVX2;
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
  }
  return "unknown";
}

const char *vo_cpu_isa(const vo_context *ctx) { return vo_isa_name(vo_cpu_effective_isa(ctx)); }

/* ---------------------------------------------------------- workspace */

static const vo_backend *vo_backend_for(DLDevice device) {
  if (device.device_type == kDLCPU) return &vo_cpu_backend;
#ifdef VISIONOPS_HAVE_CUDA
  if (device.device_type == kDLCUDA) return &vo_cuda_backend;
#endif
  return NULL;
}

static void *vo_stream_of(const vo_context *ctx, DLDevice device) {
  if (device.device_type != kDLCUDA) return NULL;
  return ctx->cuda_stream ? ctx->cuda_stream : VO_CUDA_STREAM_PER_THREAD;
}

void *vo_workspace_alloc(const vo_context *ctx, DLDevice device, size_t size, const char *op) {
  if (size == 0) size = 1;
  void *stream = vo_stream_of(ctx, device);
  void *p = NULL;
  if (ctx->has_allocator) {
    p = ctx->allocator.alloc(ctx->allocator.user, device, size, stream);
  } else {
    const vo_backend *b = vo_backend_for(device);
    if (b) p = b->default_alloc(device, size, stream);
  }
  if (!p)
    vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: could not allocate %zu bytes of workspace", op, size);
  return p;
}

void vo_workspace_free(const vo_context *ctx, DLDevice device, void *ptr) {
  if (!ptr) return;
  void *stream = vo_stream_of(ctx, device);
  if (ctx->has_allocator) {
    ctx->allocator.free(ctx->allocator.user, device, ptr, stream);
    return;
  }
  const vo_backend *b = vo_backend_for(device);
  if (b) b->default_free(device, ptr, stream);
}
