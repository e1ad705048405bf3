/*
 * deform_conv2d's per-element math in the portable dialect (kernels/
 * compat.h): where one (offset group, tap, output pixel) samples and with
 * what bilinear weights (torchvision's bilinear_interpolate rules: a sample
 * outside (-1, H) x (-1, W), NaN included, is 0), one column of the deformable
 * im2col, one col2im contribution, the offset and mask gradient of one
 * (offset group, tap, pixel) and the two steps of the deterministic col2im.
 * The CPU backend (cpu/deform_conv2d.c) and the CUDA kernels
 * (cuda/deform_conv2d.cu) both run these; the products around them stay each
 * backend's own (BLAS, cuBLAS). Per-dtype bodies: kernels/deform_conv2d.inc.
 */
#ifndef VISIONOPS_KERNELS_DEFORM_CONV2D_H
#define VISIONOPS_KERNELS_DEFORM_CONV2D_H

#include "kernels/compat.h"

/* What the functions need of a call, by value: sizes, the strides (in
 * elements) of the operands, and the current column tile. Column l of the
 * tile is output pixel p0 + l counted from image n's first, running on into
 * the images after n: a tile is part of one image (p0 + len <= the plane)
 * or whole images (p0 = 0, len a multiple of the plane), so that one product
 * spans several small images. Columns (cols, dcol) are
 * [in_channels * kernel_h * kernel_w, len], row c * taps + t; the outputs
 * are contiguous. */
typedef struct vo_k_dcn_geom {
  int64_t batch, in_channels, height, width, out_channels, kernel_h, kernel_w;
  int64_t out_h, out_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  int64_t groups, offset_groups;
  int64_t in_stride[4], weight_stride[4], offset_stride[4], mask_stride[4];
  int64_t grad_stride[4]; /* the backward's incoming gradient */
  int64_t bias_stride;
  int has_mask; /* without a mask, every mask value is 1 */
  int has_bias; /* without a bias, 0 */
  int64_t n, p0, len;
} vo_k_dcn_geom;

/* The image of column l, counted from the tile's first (a->n), and its
 * pixel in that image's output plane. */
VO_KFN int64_t vo_k_dcn_column_image(const vo_k_dcn_geom *a, int64_t l, int64_t *pix) {
  const int64_t plane = a->out_h * a->out_w, q = a->p0 + l;
  if (a->p0 + a->len <= plane) { /* part of one image: no division */
    *pix = q;
    return 0;
  }
  *pix = q % plane;
  return q / plane;
}

/* How many columns from l on lie in l's image (at most the tile's rest):
 * the run the row functions below take at once. */
VO_KFN int64_t vo_k_dcn_run_length(const vo_k_dcn_geom *a, int64_t l) {
  int64_t pix;
  (void)vo_k_dcn_column_image(a, l, &pix);
  const int64_t left = a->out_h * a->out_w - pix;
  return a->len - l < left ? a->len - l : left;
}

/* How many images the tile's columns touch (1 for part of one image). */
VO_KFN int64_t vo_k_dcn_tile_images(const vo_k_dcn_geom *a) {
  const int64_t plane = a->out_h * a->out_w;
  return plane > 0 ? (a->p0 + a->len + plane - 1) / plane : 1;
}

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/deform_conv2d.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/deform_conv2d.inc"
#include "kernels/dtype_end.h"

#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "kernels/deform_conv2d.inc"
#include "kernels/dtype_end.h"

#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "kernels/deform_conv2d.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_DEFORM_CONV2D_H */
