/*
 * The portable deform_conv2d math's view of a call (kernels/deform_conv2d.h's
 * vo_k_dcn_geom) made from its params, and the walk over its column tiles,
 * for every backend alike.
 */
#ifndef VISIONOPS_DEFORM_CONV2D_GEOM_H
#define VISIONOPS_DEFORM_CONV2D_GEOM_H

#include <string.h>

#include "core/internal.h"
#include "kernels/deform_conv2d.h"

/* The 4-D strides of v (zeros without v). */
static inline void vo_dcn_strides_of(const vo_view *v, int64_t *stride) {
  for (int d = 0; d < 4; d++) stride[d] = v ? v->stride[d] : 0;
}

/* Sizes and strides of the call; the tile (n, p0, len) starts empty. */
static inline vo_k_dcn_geom vo_dcn_geom_of(const vo_deform_conv2d_params *p) {
  vo_k_dcn_geom a;
  memset(&a, 0, sizeof a);
  a.batch = p->batch;
  a.in_channels = p->in_channels;
  a.height = p->height;
  a.width = p->width;
  a.out_channels = p->out_channels;
  a.kernel_h = p->kernel_h;
  a.kernel_w = p->kernel_w;
  a.out_h = p->out_h;
  a.out_w = p->out_w;
  a.stride_h = p->stride_h;
  a.stride_w = p->stride_w;
  a.pad_h = p->pad_h;
  a.pad_w = p->pad_w;
  a.dilation_h = p->dilation_h;
  a.dilation_w = p->dilation_w;
  a.groups = p->groups;
  a.offset_groups = p->offset_groups;
  vo_dcn_strides_of(p->input, a.in_stride);
  vo_dcn_strides_of(p->weight, a.weight_stride);
  vo_dcn_strides_of(p->offset, a.offset_stride);
  vo_dcn_strides_of(p->mask, a.mask_stride);
  vo_dcn_strides_of(p->grad, a.grad_stride);
  a.bias_stride = p->bias ? p->bias->stride[0] : 0;
  a.has_mask = p->mask != NULL;
  a.has_bias = p->bias != NULL;
  return a;
}

/* Tiles of small images are this many columns wide or more. A GPU (CUDA,
 * an OpenCL GPU) wants enough work items per launch and products wide
 * enough to fill it, where one 7x7 image's product is 49 columns; a CPU
 * (the CPU backend, an OpenCL CPU device such as PoCL) wants the columns
 * to stay in cache while two threads still share a product: 256 was the
 * best of 1 image, 128, 256, 512, 1,024 and 4,096 columns on the CPU
 * backend, and PoCL was 1.1-1.35x slower at 4,096 than with one image per
 * tile (bench/RESULTS.md). */
#define VO_DCN_DEVICE_COLUMNS 4096
#define VO_DCN_CPU_COLUMNS 256

/* How many whole images a tile should hold so that its products are at
 * least `columns` wide (small images: one image's product is too narrow to
 * run a GEMM at speed); at most the batch and INT32_MAX columns (BLAS
 * sizes are int), at least 1. */
static inline int64_t vo_dcn_images_wanted(const vo_deform_conv2d_params *p, int64_t columns) {
  const int64_t plane = p->out_h * p->out_w;
  if (plane <= 0) return 1;
  int64_t k = (columns + plane - 1) / plane;
  if (k > p->batch) k = p->batch;
  if (k > INT32_MAX / plane) k = INT32_MAX / plane;
  return k < 1 ? 1 : k;
}

/* How many images a tile of len columns holds at most (what its per-image
 * buffers are sized for): len / plane whole images, else part of one. */
static inline int64_t vo_dcn_tile_images_max(const vo_deform_conv2d_params *p, int64_t len) {
  const int64_t plane = p->out_h * p->out_w;
  return plane > 0 && len > plane ? len / plane : 1;
}

/* Moves a to the call's next column tile of at most `tile` columns: the
 * next part of the current image while tile is under the plane, else the
 * next tile / plane whole images (fewer at the end of the batch). Start from
 * vo_dcn_geom_of's empty tile; 0 after the last. */
static inline int vo_dcn_next_tile(vo_k_dcn_geom *a, int64_t tile) {
  const int64_t plane = a->out_h * a->out_w;
  if (plane <= 0 || tile < 1) return 0;
  const int64_t q = a->p0 + a->len;
  a->n += q / plane;
  a->p0 = q % plane;
  if (a->n >= a->batch) return 0;
  if (tile >= plane) {
    const int64_t k = tile / plane < a->batch - a->n ? tile / plane : a->batch - a->n;
    a->len = k * plane;
  } else {
    a->len = plane - a->p0 < tile ? plane - a->p0 : tile;
  }
  return 1;
}

/* How many images the current tile completes (its last column is their
 * last pixel), counted from a->n: what a backward accumulating the input
 * gradient apart can now store. */
static inline int64_t vo_dcn_tile_completes(const vo_k_dcn_geom *a) {
  const int64_t plane = a->out_h * a->out_w, end = a->p0 + a->len;
  return end % plane == 0 ? end / plane : 0;
}

#endif /* VISIONOPS_DEFORM_CONV2D_GEOM_H */
