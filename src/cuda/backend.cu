// The CUDA backend's descriptor: its kernel table, the once-only availability
// probe and the default stream-ordered allocator.
#include <stdarg.h>
#include <stdio.h>

#include "cuda/common.cuh"

namespace {

// Which kernel serves op `op`; nullptr where this backend has none. A function
// of the op id rather than a positional list, so the table below cannot drift
// out of order when ops.def grows.
constexpr vo_kernel_fn cuda_kernel_for(int op) {
  return op == VO_OP_nms                              ? vo_cuda_nms
         : op == VO_OP_batched_nms                    ? vo_cuda_nms
         : op == VO_OP_box_iou                        ? vo_cuda_pairwise_iou
         : op == VO_OP_generalized_box_iou            ? vo_cuda_pairwise_iou
         : op == VO_OP_distance_box_iou               ? vo_cuda_pairwise_iou
         : op == VO_OP_complete_box_iou               ? vo_cuda_pairwise_iou
         : op == VO_OP_roi_align                      ? vo_cuda_roi_align
         : op == VO_OP_roi_align_backward             ? vo_cuda_roi_align_backward
         : op == VO_OP_roi_pool                       ? vo_cuda_roi_pool
         : op == VO_OP_roi_pool_backward              ? vo_cuda_roi_pool_backward
         : op == VO_OP_multi_scale_roi_align          ? vo_cuda_multi_scale_roi_align
         : op == VO_OP_multi_scale_roi_align_backward ? vo_cuda_multi_scale_roi_align_backward
         : op == VO_OP_ps_roi_align                   ? vo_cuda_ps_roi_align
         : op == VO_OP_ps_roi_align_backward          ? vo_cuda_ps_roi_align_backward
         : op == VO_OP_ps_roi_pool                    ? vo_cuda_ps_roi_pool
         : op == VO_OP_ps_roi_pool_backward           ? vo_cuda_ps_roi_pool_backward
         : op == VO_OP_deform_conv2d                  ? vo_cuda_deform_conv2d
         : op == VO_OP_deform_conv2d_backward         ? vo_cuda_deform_conv2d_backward
         : op == VO_OP_box_iou_backward               ? vo_cuda_pairwise_iou_backward
         : op == VO_OP_generalized_box_iou_backward   ? vo_cuda_pairwise_iou_backward
         : op == VO_OP_distance_box_iou_backward      ? vo_cuda_pairwise_iou_backward
         : op == VO_OP_complete_box_iou_backward      ? vo_cuda_pairwise_iou_backward
                                                      : nullptr;
}

// Constant-initialised (no dynamic initialiser): registration must survive
// static linking, see DESIGN.md.
constexpr vo_kernel_fn vo_cuda_kernels[VO_NUM_OPS] = {
#define VO_OP(name, schema, backward, shape_rule) cuda_kernel_for(VO_OP_##name),
#include "ops/ops.def"
#undef VO_OP
};

static_assert(sizeof(vo_cuda_kernels) / sizeof(vo_cuda_kernels[0]) == VO_NUM_OPS,
              "one kernel slot per op");
static_assert(vo_cuda_kernels[VO_OP_nms] == vo_cuda_nms, "nms slot");
static_assert(vo_cuda_kernels[VO_OP_batched_nms] == vo_cuda_nms, "batched_nms slot");
static_assert(vo_cuda_kernels[VO_OP_box_iou] == vo_cuda_pairwise_iou, "box_iou slot");
static_assert(vo_cuda_kernels[VO_OP_generalized_box_iou] == vo_cuda_pairwise_iou,
              "generalized_box_iou slot");
static_assert(vo_cuda_kernels[VO_OP_distance_box_iou] == vo_cuda_pairwise_iou,
              "distance_box_iou slot");
static_assert(vo_cuda_kernels[VO_OP_complete_box_iou] == vo_cuda_pairwise_iou,
              "complete_box_iou slot");
static_assert(vo_cuda_kernels[VO_OP_roi_align] == vo_cuda_roi_align, "roi_align slot");
static_assert(vo_cuda_kernels[VO_OP_roi_align_backward] == vo_cuda_roi_align_backward,
              "roi_align_backward slot");
static_assert(vo_cuda_kernels[VO_OP_roi_pool] == vo_cuda_roi_pool, "roi_pool slot");
static_assert(vo_cuda_kernels[VO_OP_roi_pool_backward] == vo_cuda_roi_pool_backward,
              "roi_pool_backward slot");
static_assert(vo_cuda_kernels[VO_OP_multi_scale_roi_align] == vo_cuda_multi_scale_roi_align,
              "multi_scale_roi_align slot");
static_assert(vo_cuda_kernels[VO_OP_multi_scale_roi_align_backward] ==
                  vo_cuda_multi_scale_roi_align_backward,
              "multi_scale_roi_align_backward slot");
static_assert(vo_cuda_kernels[VO_OP_ps_roi_align] == vo_cuda_ps_roi_align, "ps_roi_align slot");
static_assert(vo_cuda_kernels[VO_OP_ps_roi_align_backward] == vo_cuda_ps_roi_align_backward,
              "ps_roi_align_backward slot");
static_assert(vo_cuda_kernels[VO_OP_ps_roi_pool] == vo_cuda_ps_roi_pool, "ps_roi_pool slot");
static_assert(vo_cuda_kernels[VO_OP_ps_roi_pool_backward] == vo_cuda_ps_roi_pool_backward,
              "ps_roi_pool_backward slot");
static_assert(vo_cuda_kernels[VO_OP_deform_conv2d] == vo_cuda_deform_conv2d, "deform_conv2d slot");
static_assert(vo_cuda_kernels[VO_OP_deform_conv2d_backward] == vo_cuda_deform_conv2d_backward,
              "deform_conv2d_backward slot");
static_assert(vo_cuda_kernels[VO_OP_box_iou_backward] == vo_cuda_pairwise_iou_backward,
              "box_iou_backward slot");
static_assert(vo_cuda_kernels[VO_OP_generalized_box_iou_backward] == vo_cuda_pairwise_iou_backward,
              "generalized_box_iou_backward slot");
static_assert(vo_cuda_kernels[VO_OP_distance_box_iou_backward] == vo_cuda_pairwise_iou_backward,
              "distance_box_iou_backward slot");
static_assert(vo_cuda_kernels[VO_OP_complete_box_iou_backward] == vo_cuda_pairwise_iou_backward,
              "complete_box_iou_backward slot");

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

// The op has made `device` current; NULL (the context default) means the
// per-thread stream, the same one the kernels run on.
void *default_alloc(DLDevice device, size_t size, void *stream) {
  (void)device;
  void *p = nullptr;
  const cudaStream_t s = stream ? (cudaStream_t)stream : cudaStreamPerThread;
  if (cudaMallocAsync(&p, size, s) != cudaSuccess) {
    (void)cudaGetLastError();  // an allocation failure is reported as OOM, not later
    return nullptr;
  }
  return p;
}

void default_free(DLDevice device, void *ptr, void *stream) {
  (void)device;
  if (!ptr) return;
  const cudaStream_t s = stream ? (cudaStream_t)stream : cudaStreamPerThread;
  if (cudaFreeAsync(ptr, s) != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace

extern "C" const vo_backend vo_cuda_backend = {"cuda", kDLCUDA,       vo_cuda_kernels,
                                               probe,  default_alloc, default_free};
