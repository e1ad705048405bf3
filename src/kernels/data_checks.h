/*
 * Value checks of tensor data, written once for every backend. An op's check
 * function declares the checks a call needs (vo_exec.data_checks); vo_call
 * runs them before the kernel, on the host over these functions for tensors
 * the host can read, otherwise through the backend's check_data hook, whose
 * kernel runs the same functions on the device (src/cuda/roi_check.cu). The
 * message about the first bad item is formed once, on the host
 * (core/data_checks.c), from what vo_k_check_values records.
 *
 * A check looks at the tensor row by row: a row [5] (rois, roi_grid,
 * rotated boxes; [6] for rotated rois), a row of the last dimension of a
 * 4-D int32 tensor (argmax, channel_mapping; roi_grid's rows have length
 * 1) or a level of deform_attn (a row (H, W) of spatial_shapes and its
 * level_start_index, the check's second tensor: rows of length 3). vo_k_check_bad_column
 * gives a row's first bad column; the first bad item overall is the least
 * key row * row length + column, the row-major order in which the op layer
 * has always searched.
 */
#ifndef VISIONOPS_KERNELS_DATA_CHECKS_H
#define VISIONOPS_KERNELS_DATA_CHECKS_H

#include "kernels/compat.h"
#include "kernels/multi_scale_roi_align.h"

/* Kinds of check. */
#define VO_K_CHECK_ROIS 1     /* rois [K,5]: finite; column 0 an integer in [0, N) */
#define VO_K_CHECK_ROI_GRID 2 /* rois [K,5]: adaptive samples per bin within a bound */
/* (both also for rotated rois [K,6], (batch, cx, cy, w, h, angle), with
 * `rotated`: then w and h must be >= 0 too) */
#define VO_K_CHECK_ARGMAX 3          /* int32 [K,C,PH,PW]: -1 or an index in [0, H*W) */
#define VO_K_CHECK_CHANNEL_MAPPING 4 /* int32 [K,C',PH,PW]: (c*PH + ph)*PW + pw */
#define VO_K_CHECK_RBOXES 5          /* rotated boxes [K,5]: finite; w, h (columns 2, 3) >= 0 */
/* deform_attn's levels: spatial_shapes [L,2] int64 (H_l, W_l >= 0, summing
 * H_l * W_l to the check's `keys`, value's S) and, as the second tensor,
 * level_start_index [L] int64 (the keys of the levels before l) */
#define VO_K_CHECK_LEVELS 6
/* Most levels a deform_attn call may have (its level check is O(L^2)). */
#define VO_K_MAX_LEVELS 4096

/* Most samples per bin along one axis an explicit sampling_ratio may ask
 * for, and the least bound the adaptive grid gets. */
#define VO_K_MAX_SAMPLING_RATIO 128
/* Feature maps a roi_grid check may choose from (VO_MAX_LIST). */
#define VO_K_CHECK_MAX_MAPS 16
/* vo_k_check_found.first when no item is bad. */
#define VO_K_CHECK_NONE (~(uint64_t)0)

/* The checks compute in double, so that their decisions are the CPU's
 * exactly: on an OpenCL device without float64 (VO_K_FP64 0) nothing below
 * compiles, and the backend runs them on the host over a copy of the
 * tensor (opencl/backend.c). */
#if VO_K_FP64

/* One declared check: the tensor's layout (elements; unused trailing
 * dimensions have size 1 and stride 0) and the kind's parameters. Holds no
 * pointer, so a device kernel takes it by value. */
typedef struct vo_k_check {
  int kind;    /* VO_K_CHECK_* */
  int dtype;   /* VO_DT_* of the tensor */
  int rotated; /* rois and roi_grid: rotated rois [K,6] */
  int64_t shape[4], stride[4];
  int64_t stride2;                     /* levels: level_start_index's stride */
  int64_t keys;                        /* levels: S of value */
  int64_t batch_size;                  /* rois: N of the input */
  int64_t hw;                          /* argmax: H*W, saturated at INT64_MAX */
  int64_t pooled_height, pooled_width; /* roi_grid */
  /* roi_grid: a RoI spans (coordinate * scale - offset) pixels of its map,
   * at least 1 with min_size_1. With `pyramid`, RoI k's FPN level chooses
   * map l (torchvision's MultiScaleRoIAlign rule, in double); a RoI without
   * a level (NaN: a zero row) is not checked. Otherwise map 0 serves all. */
  double offset;
  int min_size_1;
  int pyramid, num_maps;
  double first_level; /* pyramid: -log2(scale[0]) */
  int64_t canonical_scale, canonical_level;
  double scale[VO_K_CHECK_MAX_MAPS];
  int64_t height[VO_K_CHECK_MAX_MAPS], width[VO_K_CHECK_MAX_MAPS];
} vo_k_check;

/* The first bad item's key (VO_K_CHECK_NONE: none) and what its message
 * needs: rois and int32 tensors its value; roi_grid the RoI's height and
 * width in map pixels and its map. */
typedef struct vo_k_check_found {
  uint64_t first;
  double value[3];
} vo_k_check_found;

/* 1 for the kinds whose rows are the rows of a 2-D tensor ([K,5] RoIs
 * and boxes, [L,2] levels). */
VO_KFN int vo_k_check_is_roi(const vo_k_check *c) {
  return c->kind == VO_K_CHECK_ROIS || c->kind == VO_K_CHECK_ROI_GRID ||
         c->kind == VO_K_CHECK_RBOXES || c->kind == VO_K_CHECK_LEVELS;
}

/* Rows and row length of the tensor as this check walks it. */
VO_KFN int64_t vo_k_check_rows(const vo_k_check *c) {
  return vo_k_check_is_roi(c) ? c->shape[0] : c->shape[0] * c->shape[1] * c->shape[2];
}
VO_KFN int64_t vo_k_check_row_length(const vo_k_check *c) {
  if (c->kind == VO_K_CHECK_ROI_GRID) return 1;
  if (c->kind == VO_K_CHECK_ROIS) return c->rotated ? 6 : 5;
  if (c->kind == VO_K_CHECK_LEVELS) return 3;
  return c->kind == VO_K_CHECK_RBOXES ? 5 : c->shape[3];
}

/* Element offset of row `row`, and its (i0, i1, i2) for the 4-D kinds. */
VO_KFN int64_t vo_k_check_row_offset(const vo_k_check *c, int64_t row, int64_t idx[3]) {
  if (vo_k_check_is_roi(c)) {
    idx[0] = row;
    idx[1] = idx[2] = 0;
    return row * c->stride[0];
  }
  idx[2] = row % c->shape[2];
  idx[1] = row / c->shape[2] % c->shape[1];
  idx[0] = row / c->shape[2] / c->shape[1];
  return idx[0] * c->stride[0] + idx[1] * c->stride[1] + idx[2] * c->stride[2];
}

/* Bound on the adaptive grid along an axis of `map` pixels pooled into
 * `pooled` bins: 4x the ceil((map + 2) / pooled) samples a RoI inside the
 * map needs, or VO_K_MAX_SAMPLING_RATIO if larger. */
VO_KFN int64_t vo_k_adaptive_limit(int64_t map, int64_t pooled) {
  const double l = ceil(4.0 * ((double)map + 2) / (double)pooled);
  if (!(l > VO_K_MAX_SAMPLING_RATIO)) return VO_K_MAX_SAMPLING_RATIO;
  return (int64_t)(l < 1e18 ? l : 1e18);
}

/* The adaptive grid's bounds (vo_k_adaptive_limit) on map m: a rotated RoI
 * inside an H x W map may run along its diagonal, so both of its axes get
 * the bound of H + W pixels (more than the diagonal). */
VO_KFN void vo_k_check_grid_limits(const vo_k_check *c, int m, int64_t *lh, int64_t *lw) {
  const int64_t h = c->height[m], w = c->width[m];
  *lh = vo_k_adaptive_limit(c->rotated ? h + w : h, c->pooled_height);
  *lw = vo_k_adaptive_limit(c->rotated ? h + w : w, c->pooled_width);
}

/* RoI row `row`'s map for a roi_grid check, or -1 when its FPN level is NaN
 * (then it is not checked). */
VO_KFN int vo_k_roi_map_of(const VO_GLOBAL void *data, const vo_k_check *c, int64_t row) {
  if (!c->pyramid) return 0;
  const int64_t o = row * c->stride[0], s1 = c->stride[1];
  const double x1 = vo_k_load_as_double(data, c->dtype, o + s1);
  const double y1 = vo_k_load_as_double(data, c->dtype, o + 2 * s1);
  const double x2 = vo_k_load_as_double(data, c->dtype, o + 3 * s1);
  const double y2 = vo_k_load_as_double(data, c->dtype, o + 4 * s1);
  /* the kernels' level rule, in double (first_level is an integer: the
   * scales are powers of two) */
  return vo_k_msra_level_f64(x1, y1, x2, y2, c->canonical_level, c->canonical_scale,
                             (int64_t)c->first_level, c->num_maps);
}

/* RoI row `row`'s height and width in pixels of map m. */
VO_KFN void vo_k_roi_extent(const VO_GLOBAL void *data, const vo_k_check *c, int64_t row, int m,
                            double *rh, double *rw) {
  const int64_t o = row * c->stride[0], s1 = c->stride[1];
  const double scale = c->scale[m];
  if (c->rotated) { /* (batch, cx, cy, w, h, angle): the un-rotated grid's size */
    double w = vo_k_load_as_double(data, c->dtype, o + 3 * s1) * scale;
    double h = vo_k_load_as_double(data, c->dtype, o + 4 * s1) * scale;
    if (c->min_size_1) {
      w = w < 1 ? 1 : w;
      h = h < 1 ? 1 : h;
    }
    *rh = h;
    *rw = w;
    return;
  }
  const double x1 = vo_k_load_as_double(data, c->dtype, o + s1) * scale - c->offset;
  const double y1 = vo_k_load_as_double(data, c->dtype, o + 2 * s1) * scale - c->offset;
  const double x2 = vo_k_load_as_double(data, c->dtype, o + 3 * s1) * scale - c->offset;
  const double y2 = vo_k_load_as_double(data, c->dtype, o + 4 * s1) * scale - c->offset;
  double w = x2 - x1, h = y2 - y1;
  if (c->min_size_1) {
    w = w < 1 ? 1 : w;
    h = h < 1 ? 1 : h;
  }
  *rh = h;
  *rw = w;
}

/* Level `row` of a levels check: its first bad column (0 H, 1 W, 2 its
 * start) or -1, and the keys of the levels before it (*before) and through
 * it (*through, saturated at keys + 1). A row after a bad one is not
 * judged (-1): the first bad row reports. */
VO_KFN int64_t vo_k_check_level(const VO_GLOBAL int64_t *shapes, const VO_GLOBAL int64_t *starts,
                                const vo_k_check *c, int64_t row, int64_t *before,
                                int64_t *through) {
  const int64_t s0 = c->stride[0], s1 = c->stride[1], keys = c->keys;
  int64_t acc = 0;
  *before = *through = 0;
  for (int64_t k = 0; k <= row; k++) {
    const int64_t h = shapes[k * s0], w = shapes[k * s0 + s1];
    const int64_t start = starts[k * c->stride2];
    const int sized = h >= 0 && w >= 0;
    const int over = sized && w > 0 && h > (keys - acc) / w; /* acc + h*w > keys */
    const int64_t sum = !sized ? acc : over ? keys + 1 : acc + h * w;
    const int64_t col = h < 0                                           ? 0
                        : w < 0                                         ? 1
                        : start != acc                                  ? 2
                        : over || (k == c->shape[0] - 1 && sum != keys) ? 1
                                                                        : -1;
    if (k < row && col >= 0) return -1;
    if (k == row) {
      *before = acc;
      *through = sum;
      return col;
    }
    acc += h * w;
  }
  return -1;
}

/* The first bad column of row `row` of the tensor at `data` (its first
 * element; data2 the check's second tensor, levels only), or -1 when the
 * row is fine; o and idx are the row's element offset and (i0, i1, i2), as
 * vo_k_check_row_offset gives them (a host loop walks them without its
 * divisions). */
VO_KFN int64_t vo_k_check_bad_column_at(const VO_GLOBAL void *data, const VO_GLOBAL void *data2,
                                        const vo_k_check *c, int64_t row, int64_t o,
                                        const int64_t idx[3]) {
  if (c->kind == VO_K_CHECK_LEVELS) {
    int64_t before, through;
    return vo_k_check_level((const VO_GLOBAL int64_t *)data, (const VO_GLOBAL int64_t *)data2, c,
                            row, &before, &through);
  }
  if (c->kind == VO_K_CHECK_ROIS) {
    const int64_t len = c->rotated ? 6 : 5;
    for (int64_t j = 0; j < len; j++) {
      const double v = vo_k_load_as_double(data, c->dtype, o + j * c->stride[1]);
      if (!vo_k_isfinite(v)) return j;
      if (j == 0 && !(v >= 0 && v < (double)c->batch_size && v == floor(v))) return 0;
      if (c->rotated && (j == 3 || j == 4) && v < 0) return j; /* w, h */
    }
    return -1;
  }
  if (c->kind == VO_K_CHECK_RBOXES) {
    for (int64_t j = 0; j < 5; j++) {
      const double v = vo_k_load_as_double(data, c->dtype, o + j * c->stride[1]);
      if (!vo_k_isfinite(v) || ((j == 2 || j == 3) && v < 0)) return j;
    }
    return -1;
  }
  if (c->kind == VO_K_CHECK_ROI_GRID) {
    const int m = vo_k_roi_map_of(data, c, row);
    if (m < 0) return -1;
    double rh, rw;
    vo_k_roi_extent(data, c, row, m, &rh, &rw);
    const double gh = ceil(rh / (double)c->pooled_height);
    const double gw = ceil(rw / (double)c->pooled_width);
    int64_t lh, lw;
    vo_k_check_grid_limits(c, m, &lh, &lw);
    return gh > (double)lh || gw > (double)lw ? 0 : -1;
  }
  const VO_GLOBAL int32_t *d = (const VO_GLOBAL int32_t *)data;
  const int64_t len = c->shape[3], s3 = c->stride[3];
  if (c->kind == VO_K_CHECK_ARGMAX) {
    for (int64_t j = 0; j < len; j++) {
      const int32_t v = d[o + j * s3];
      if (!(v == -1 || (v >= 0 && (int64_t)v < c->hw))) return j;
    }
    return -1;
  }
  /* channel_mapping: [k, c, ph, pw] holds input channel (c*PH + ph)*PW + pw */
  const int64_t first = (idx[1] * c->shape[2] + idx[2]) * len;
  for (int64_t j = 0; j < len; j++)
    if ((int64_t)d[o + j * s3] != first + j) return j;
  return -1;
}

/* The same for row `row` alone (a device work item). */
VO_KFN int64_t vo_k_check_bad_column(const VO_GLOBAL void *data, const VO_GLOBAL void *data2,
                                     const vo_k_check *c, int64_t row) {
  int64_t idx[3];
  const int64_t o = vo_k_check_row_offset(c, row, idx);
  return vo_k_check_bad_column_at(data, data2, c, row, o, idx);
}

/* What the message about bad item `key` needs (see vo_k_check_found;
 * levels: the bad value, the keys through the level and before it). */
VO_KFN void vo_k_check_values(const VO_GLOBAL void *data, const VO_GLOBAL void *data2,
                              const vo_k_check *c, int64_t key, double value[3]) {
  const int64_t len = vo_k_check_row_length(c), row = key / len, col = key % len;
  int64_t idx[3];
  const int64_t o = vo_k_check_row_offset(c, row, idx);
  value[0] = value[1] = value[2] = 0;
  if (c->kind == VO_K_CHECK_LEVELS) {
    const VO_GLOBAL int64_t *shapes = (const VO_GLOBAL int64_t *)data;
    const VO_GLOBAL int64_t *starts = (const VO_GLOBAL int64_t *)data2;
    int64_t before, through;
    vo_k_check_level(shapes, starts, c, row, &before, &through);
    value[0] = (double)(col == 2 ? starts[row * c->stride2] : shapes[o + col * c->stride[1]]);
    value[1] = (double)through;
    value[2] = (double)before;
  } else if (c->kind == VO_K_CHECK_ROIS || c->kind == VO_K_CHECK_RBOXES) {
    value[0] = vo_k_load_as_double(data, c->dtype, o + col * c->stride[1]);
  } else if (c->kind == VO_K_CHECK_ROI_GRID) {
    /* (m is a map: the find pass never reports a row without one, but the
     * data may have changed since when the checks run deferred) */
    const int m = vo_k_roi_map_of(data, c, row);
    if (m >= 0) vo_k_roi_extent(data, c, row, m, &value[0], &value[1]);
    value[2] = (double)(m >= 0 ? m : 0);
  } else {
    value[0] = (double)((const VO_GLOBAL int32_t *)data)[o + col * c->stride[3]];
  }
}

#endif /* VO_K_FP64 */

#endif /* VISIONOPS_KERNELS_DATA_CHECKS_H */
