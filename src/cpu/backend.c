/*
 * The CPU backend: its kernel table, availability (always), default
 * allocator, and the box gathering shared by the box kernels.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cpu/common.h"
#include "cpu/gemm.h"

#ifdef VISIONOPS_HAVE_OPENMP
#include <omp.h>
#endif

vo_status vo_cpu_nms(const vo_exec *ex);
vo_status vo_cpu_pairwise_iou(const vo_exec *ex);
vo_status vo_cpu_pairwise_iou_backward(const vo_exec *ex);
vo_status vo_cpu_multi_scale_roi_align(const vo_exec *ex);
vo_status vo_cpu_multi_scale_roi_align_backward(const vo_exec *ex);
vo_status vo_cpu_ps_roi_align(const vo_exec *ex);
vo_status vo_cpu_ps_roi_align_backward(const vo_exec *ex);
vo_status vo_cpu_ps_roi_pool(const vo_exec *ex);
vo_status vo_cpu_ps_roi_pool_backward(const vo_exec *ex);
vo_status vo_cpu_roi_pool(const vo_exec *ex);
vo_status vo_cpu_roi_pool_backward(const vo_exec *ex);
vo_status vo_cpu_deform_conv2d(const vo_exec *ex);
vo_status vo_cpu_deform_conv2d_backward(const vo_exec *ex);

static const vo_kernel_fn vo_cpu_kernels[VO_NUM_OPS] = {
    [VO_OP_nms] = vo_cpu_nms,
    [VO_OP_batched_nms] = vo_cpu_nms,
    [VO_OP_box_iou] = vo_cpu_pairwise_iou,
    [VO_OP_generalized_box_iou] = vo_cpu_pairwise_iou,
    [VO_OP_distance_box_iou] = vo_cpu_pairwise_iou,
    [VO_OP_complete_box_iou] = vo_cpu_pairwise_iou,
    [VO_OP_roi_align] = vo_cpu_roi_align,
    [VO_OP_roi_align_backward] = vo_cpu_roi_align_backward,
    [VO_OP_multi_scale_roi_align] = vo_cpu_multi_scale_roi_align,
    [VO_OP_multi_scale_roi_align_backward] = vo_cpu_multi_scale_roi_align_backward,
    [VO_OP_ps_roi_align] = vo_cpu_ps_roi_align,
    [VO_OP_ps_roi_align_backward] = vo_cpu_ps_roi_align_backward,
    [VO_OP_ps_roi_pool] = vo_cpu_ps_roi_pool,
    [VO_OP_ps_roi_pool_backward] = vo_cpu_ps_roi_pool_backward,
    [VO_OP_roi_pool] = vo_cpu_roi_pool,
    [VO_OP_roi_pool_backward] = vo_cpu_roi_pool_backward,
    [VO_OP_deform_conv2d] = vo_cpu_deform_conv2d,
    [VO_OP_deform_conv2d_backward] = vo_cpu_deform_conv2d_backward,
    [VO_OP_box_iou_backward] = vo_cpu_pairwise_iou_backward,
    [VO_OP_generalized_box_iou_backward] = vo_cpu_pairwise_iou_backward,
    [VO_OP_distance_box_iou_backward] = vo_cpu_pairwise_iou_backward,
    [VO_OP_complete_box_iou_backward] = vo_cpu_pairwise_iou_backward,
};

static int vo_cpu_probe(char *detail, size_t size) {
#ifdef VISIONOPS_HAVE_OPENMP
  snprintf(detail, size, "%d threads (OpenMP), ISA %s, deform_conv2d GEMM %s",
           omp_get_max_threads(), vo_cpu_isa(NULL), VO_CPU_GEMM_NAME);
#else
  snprintf(detail, size, "1 thread (built without OpenMP), ISA %s, deform_conv2d GEMM %s",
           vo_cpu_isa(NULL), VO_CPU_GEMM_NAME);
#endif
  return 1;
}

static void *vo_cpu_alloc(DLDevice device, size_t size, void *stream) {
  (void)device;
  (void)stream;
  /* 64-byte alignment suits every vector width the kernels use. */
  size_t rounded = (size + 63) & ~(size_t)63;
  if (rounded < size) return NULL;
  return aligned_alloc(64, rounded);
}

static void vo_cpu_free(DLDevice device, void *ptr, void *stream) {
  (void)device;
  (void)stream;
  free(ptr);
}

const vo_backend vo_cpu_backend = {
    .name = "cpu",
    .device_type = kDLCPU,
    .kernels = vo_cpu_kernels,
    .probe = vo_cpu_probe,
    .default_alloc = vo_cpu_alloc,
    .default_free = vo_cpu_free,
};

#define VO_DEFINE_GATHER(T, SUFFIX)                                                        \
  void vo_cpu_gather_boxes_##SUFFIX(const vo_view *boxes, const int64_t *order, int64_t n, \
                                    vo_cpu_boxes_##SUFFIX *out) {                          \
    const int64_t s0 = boxes->stride[0], s1 = boxes->stride[1];                            \
    for (int64_t i = 0; i < n; i++) {                                                      \
      int64_t row = (order ? order[i] : i) * s0;                                           \
      out->x1[i] = (T)vo_load_host(boxes, row);                                            \
      out->y1[i] = (T)vo_load_host(boxes, row + s1);                                       \
      out->x2[i] = (T)vo_load_host(boxes, row + 2 * s1);                                   \
      out->y2[i] = (T)vo_load_host(boxes, row + 3 * s1);                                   \
    }                                                                                      \
  }
VO_DEFINE_GATHER(float, f32)
VO_DEFINE_GATHER(double, f64)
