/*
 * CPU glue shared by the bilinear RoI kernels (roi_align, ps_roi_align,
 * roi_align_rotated), whose arithmetic is the portable kernels/roi_align.h
 * (and kernels/roi_align_rotated.h): each RoI's
 * geometry in the call's compute type, per-RoI sample tables chunked by
 * the workspace limit, and the plain driver that runs the work items over
 * the threads. Also the position-sensitive forwards' work split and the
 * grad_input driver (float32 accumulation for half types) shared by every
 * RoI backward, ps_roi_pool's included.
 */
#ifndef VISIONOPS_CPU_ROI_COMMON_H
#define VISIONOPS_CPU_ROI_COMMON_H

#include <math.h>
#include <string.h>

#include "cpu/common.h"
#include "core/roi_align_args.h"
#include "kernels/roi_align_rotated.h"

/* A RoI's geometry in the call's compute type (float64 for float64, else
 * float32), with the fields the drivers schedule by; rotated RoIs keep
 * theirs in rf32 / rf64. */
typedef struct vo_ra_roi {
  int64_t grid_h, grid_w, batch;
  union {
    vo_k_ra_roi_f32 f32;
    vo_k_ra_roi_f64 f64;
    vo_k_rar_roi_f32 rf32;
    vo_k_rar_roi_f64 rf64;
  } t;
} vo_ra_roi;

static inline void vo_ra_geometry(const vo_k_roi_align_args *a, const void *rois, int64_t k,
                                  int f64, vo_ra_roi *g) {
  if (f64) {
    vo_k_ra_geometry_f64(a, rois, k, &g->t.f64);
    g->grid_h = g->t.f64.grid_h, g->grid_w = g->t.f64.grid_w, g->batch = g->t.f64.batch;
  } else {
    vo_k_ra_geometry_f32(a, rois, k, &g->t.f32);
    g->grid_h = g->t.f32.grid_h, g->grid_w = g->t.f32.grid_w, g->batch = g->t.f32.batch;
  }
}

/* Bytes of one sample table entry in the compute type. */
static inline size_t vo_ra_sample_size(int f64) {
  return f64 ? sizeof(vo_k_ra_sample_f64) : sizeof(vo_k_ra_sample_f32);
}

/* Zeroes `count` elements of `elem` bytes at p, split over the context's
 * threads in 1 MiB pieces. */
static inline void vo_zero_parallel(const vo_exec *ex, void *p, size_t elem, int64_t count) {
  const int64_t bytes = count * (int64_t)elem, piece = (int64_t)1 << 20;
  const int64_t pieces = (bytes + piece - 1) / piece;
  const int t = vo_cpu_threads_for(ex->ctx, pieces, 0.1 * (double)bytes); /* ~10 GB/s */
  VO_CPU_FOR(t, i, 0, pieces, {
    const int64_t at = i * piece, len = bytes - at < piece ? bytes - at : piece;
    memset((char *)p + at, 0, (size_t)len);
  });
}

/* The position-sensitive forwards' work (ps_roi_align, ps_roi_pool): items
 * are (image, bin) pairs, each split into `parts` runs of the image's RoIs
 * when there are too few pairs to balance the threads, handed out
 * dynamically; channel_mapping ([k, c] = c, the flat index mod C; NULL
 * when the caller omitted it) is filled in the same parallel region (each
 * region costs a wake-up of the other threads). first[img]..first[img + 1]
 * is image img's range in orders[ph * num_rois ...], its RoIs in visiting
 * order for bin row ph. item(arg, ord, j0, j1, img, b) computes bin b over
 * ord[j0..j1). */
typedef void (*vo_ps_item_fn)(const void *arg, const int64_t *ord, int64_t j0, int64_t j1,
                              int64_t img, int64_t b);

/* vo_ps_forward_items' loops, shared by the threads of its region (or run
 * by the calling thread alone outside one). */
static inline void vo_ps_run_items(int64_t pooled_width, int64_t num_rois, const int64_t *first,
                                   const int64_t *orders, int32_t *mapping, int64_t channels,
                                   int64_t bins, int64_t parts, int64_t items, vo_ps_item_fn item,
                                   const void *arg) {
  VO_CPU_OMP_FOR_NOWAIT
  for (int64_t k = 0; k < (mapping ? num_rois : 0); k++)
    for (int64_t c = 0; c < channels; c++) mapping[k * channels + c] = (int32_t)c;
  VO_CPU_OMP_FOR_DYNAMIC
  for (int64_t it = 0; it < items; it++) {
    const int64_t pair = it / parts, part = it % parts;
    const int64_t img = pair / bins, b = pair % bins;
    const int64_t m = first[img + 1] - first[img];
    const int64_t j0 = first[img] + m * part / parts;
    const int64_t j1 = first[img] + m * (part + 1) / parts;
    item(arg, orders + (b / pooled_width) * num_rois, j0, j1, img, b);
  }
}

static inline void vo_ps_forward_items(const vo_exec *ex, int64_t n, int64_t pooled_height,
                                       int64_t pooled_width, int64_t num_rois, const int64_t *first,
                                       const int64_t *orders, int32_t *mapping, int64_t channels,
                                       vo_ps_item_fn item, const void *arg) {
  const int64_t bins = pooled_height * pooled_width, pairs = n * bins;
  /* ~4 ns per (RoI, bin, output channel): a few samples or pixels each */
  int t = vo_cpu_threads_for(ex->ctx, pairs * (num_rois > 0 ? num_rois : 1),
                             4.0 * (double)num_rois * (double)bins * (double)channels);
  int64_t parts = pairs > 0 ? (4 * (int64_t)t + pairs - 1) / pairs : 1;
  if (parts > num_rois) parts = num_rois > 0 ? num_rois : 1;
  const int64_t items = pairs * parts;
  if (t > items) t = (int)items;
  if (t > 1) {
    VO_CPU_PARALLEL(t)
    vo_ps_run_items(pooled_width, num_rois, first, orders, mapping, channels, bins, parts, items,
                    item, arg);
  } else {
    vo_ps_run_items(pooled_width, num_rois, first, orders, mapping, channels, bins, parts, items,
                    item, arg);
  }
}

/* Bin b's first entry in a RoI's sample table of entries of `size` bytes
 * (NULL stays NULL). */
static inline const void *vo_ra_bin_table(const void *tab, const vo_ra_roi *g, int64_t b,
                                          size_t size) {
  return tab ? (const char *)tab + (size_t)(b * g->grid_h * g->grid_w) * size : NULL;
}

/* Samples in one RoI's table (saturating). */
static inline int64_t vo_ra_table_entries(const vo_roi_align_params *p, int64_t grid_h,
                                          int64_t grid_w) {
  return vo_k_ra_mul(vo_k_ra_mul(p->pooled_height, p->pooled_width), vo_k_ra_mul(grid_h, grid_w));
}

/* RoIs are processed in chunks whose sample tables fit the context's
 * workspace limit together. tab_off[k] is RoI k's first table entry within
 * its chunk, or -1 when even its own table does not fit: that RoI (alone in
 * its chunk) computes its samples on the fly, with identical arithmetic. */
static inline int64_t vo_ra_next_chunk(const int64_t *entries, int64_t k0, int64_t num_rois,
                                       int64_t capacity, int64_t *tab_off) {
  int64_t used = 0, k = k0;
  for (; k < num_rois; k++) {
    if (entries[k] > capacity - used) break;
    tab_off[k] = used;
    used += entries[k];
  }
  if (k == k0) {
    tab_off[k0] = -1;
    k = k0 + 1;
  }
  return k;
}

/* How a driver gets a RoI's geometry and builds its sample table (the
 * entries of vo_ra_table_entries, (ph, pw, iy, ix) order, corner offsets for
 * strides sh, sw); NULL stands for roi_align's (vo_ra_geometry,
 * vo_k_ra_roi_samples). */
typedef struct vo_ra_geometry_ops {
  void (*geometry)(const vo_exec *ex, const vo_k_roi_align_args *a, const void *rois, int64_t k,
                   int f64, vo_ra_roi *g);
  void (*samples)(const vo_ra_roi *g, const vo_roi_align_params *p, int64_t sh, int64_t sw, int f64,
                  void *tab);
} vo_ra_geometry_ops;

/* The plain driver of the bilinear RoI ops, in the call's compute type
 * (f64: double, else float), with ops' geometry (NULL: roi_align's):
 * geometry of every RoI, then chunk by chunk (the
 * chunk's sample tables fit the workspace limit): build the tables
 * (parallel over RoIs), then run the work items. Forward items are (RoI,
 * output channel) pairs, `fwd_channels` per RoI. Backward items (bwd !=
 * NULL) are (image, channel) planes of the contiguous accumulator acc
 * (compute type), each owned by one thread that walks the chunk's RoIs in
 * order, so the sums never depend on the thread count and need no atomics;
 * the owner also zeroes its plane first. A RoI whose table does not fit
 * gets tab == NULL and computes its samples on the fly. a: the kernel
 * arguments, whose src is the input (forward) or grad (backward). */
typedef void (*vo_ra_forward_item)(const vo_exec *ex, const vo_k_roi_align_args *a,
                                   const vo_ra_roi *g, const void *tab, int64_t k, int64_t c);
typedef void (*vo_ra_backward_item)(const vo_exec *ex, const vo_k_roi_align_args *a,
                                    const vo_ra_roi *g, const void *tab, int64_t k, int64_t c,
                                    void *plane);
static inline vo_status vo_ra_drive(const vo_exec *ex, const vo_roi_align_params *p,
                                    const vo_ra_geometry_ops *ops, int f64, int64_t fwd_channels,
                                    vo_ra_forward_item fwd, vo_ra_backward_item bwd, void *acc) {
  const int backward = bwd != NULL;
  const int64_t num_rois = p->rois->shape[0];
  const vo_k_roi_align_args a = vo_roi_align_kernel_args(p, backward ? p->grad : p->input);
  const void *rois = vo_view_addr(p->rois);
  const size_t sample = vo_ra_sample_size(f64), elem = f64 ? sizeof(double) : sizeof(float);
  /* table corner offsets: input strides forward, the contiguous plane backward */
  const int64_t sh = backward ? p->width : p->input->stride[2];
  const int64_t sw = backward ? 1 : p->input->stride[3];
  const size_t per_roi = sizeof(vo_ra_roi) + 2 * sizeof(int64_t);
  char *meta = vo_workspace_alloc(ex->ctx, ex->device, (size_t)num_rois * per_roi, ex->op_name);
  if (!meta) return VO_ERROR_OUT_OF_MEMORY;
  vo_ra_roi *geo = (void *)meta;
  int64_t *entries = (void *)(meta + (size_t)num_rois * sizeof *geo);
  int64_t *tab_off = entries + num_rois;
  int64_t total = 0;
  for (int64_t k = 0; k < num_rois; k++) {
    if (ops)
      ops->geometry(ex, &a, rois, k, f64, &geo[k]);
    else
      vo_ra_geometry(&a, rois, k, f64, &geo[k]);
    entries[k] = vo_ra_table_entries(p, geo[k].grid_h, geo[k].grid_w);
    total = total > INT64_MAX - entries[k] ? INT64_MAX : total + entries[k];
  }
  int64_t capacity = (int64_t)(ex->ctx->workspace_limit / sample);
  if (total < capacity) capacity = total;
  char *tab = NULL;
  if (capacity > 0) {
    tab = vo_workspace_alloc(ex->ctx, ex->device, (size_t)capacity * sample, ex->op_name);
    if (!tab) {
      vo_workspace_free(ex->ctx, ex->device, meta);
      return VO_ERROR_OUT_OF_MEMORY;
    }
  }
  const int64_t planes = p->batch_size * p->channels;
  if (backward && num_rois == 0) /* no chunk below zeroes the planes */
    vo_zero_parallel(ex, acc, elem, planes * p->height * p->width);
  for (int64_t k0 = 0, k1; k0 < num_rois; k0 = k1) {
    k1 = vo_ra_next_chunk(entries, k0, num_rois, capacity, tab_off);
    /* costs: ~2 ns a table entry, ~1 ns a sample per channel (forward) */
    double chunk_entries = 0;
    for (int64_t k = k0; k < k1; k++) chunk_entries += (double)entries[k];
    const int tt = vo_cpu_threads_for(ex->ctx, k1 - k0, 2.0 * chunk_entries);
    VO_CPU_FOR(tt, k, k0, k1, {
      if (!tab || tab_off[k] < 0 || entries[k] == 0) continue;
      void *t = tab + (size_t)tab_off[k] * sample;
      if (ops)
        ops->samples(&geo[k], p, sh, sw, f64, t);
      else if (f64)
        vo_k_ra_roi_samples_f64(&geo[k].t.f64, p->pooled_height, p->pooled_width, p->height,
                                p->width, sh, sw, t);
      else
        vo_k_ra_roi_samples_f32(&geo[k].t.f32, p->pooled_height, p->pooled_width, p->height,
                                p->width, sh, sw, t);
    });
    if (!backward) {
      const int64_t items = (k1 - k0) * fwd_channels;
      const int t = vo_cpu_threads_for(ex->ctx, items, chunk_entries * (double)fwd_channels);
      VO_CPU_FOR(t, it, 0, items, {
        const int64_t k = k0 + it / fwd_channels, c = it % fwd_channels;
        fwd(ex, &a, &geo[k], tab && tab_off[k] >= 0 ? tab + (size_t)tab_off[k] * sample : NULL, k,
            c);
      });
    } else {
      const int64_t hw = p->height * p->width;
      const int t = vo_cpu_threads_for(ex->ctx, planes,
                                       (double)hw * (double)planes * (k0 == 0 ? 0.1 : 0) +
                                           1.5 * chunk_entries * (double)p->channels);
      VO_CPU_FOR(t, pl, 0, planes, {
        const int64_t b = pl / p->channels, c = pl % p->channels;
        char *plane = (char *)acc + (size_t)(pl * hw) * elem;
        /* the owner zeroes its plane (in parallel, and it stays in cache) */
        if (k0 == 0) memset(plane, 0, elem * (size_t)hw);
        for (int64_t k = k0; k < k1; k++) {
          if (geo[k].batch != b) continue;
          bwd(ex, &a, &geo[k], tab && tab_off[k] >= 0 ? tab + (size_t)tab_off[k] * sample : NULL, k,
              c, plane);
        }
      });
    }
  }
  if (tab) vo_workspace_free(ex->ctx, ex->device, tab);
  vo_workspace_free(ex->ctx, ex->device, meta);
  return VO_OK;
}

/* Runs a plane-owned RoI backward (the driver above, which zeroes each plane
 * in the thread that owns it) into grad_input `out` (contiguous, dtype
 * ex->dtype): f64 / f32 add every RoI's share. Half types accumulate in a
 * float32 copy of grad_input, stored at the end, so no partial sum is
 * rounded to 16 bits. */
typedef vo_status (*vo_roi_backward_f32_fn)(const vo_exec *ex, float *acc);
typedef vo_status (*vo_roi_backward_f64_fn)(const vo_exec *ex, double *acc);
static inline vo_status vo_roi_backward_into(const vo_exec *ex, const vo_view *out,
                                             vo_roi_backward_f32_fn f32,
                                             vo_roi_backward_f64_fn f64) {
  const int64_t numel = out->numel;
  if (numel == 0) return VO_OK;
  if (ex->dtype != VO_F16 && ex->dtype != VO_BF16)
    return ex->dtype == VO_F64 ? f64(ex, (double *)vo_view_addr(out))
                               : f32(ex, (float *)vo_view_addr(out));
  if ((uint64_t)numel > SIZE_MAX / sizeof(float))
    return vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: grad_input too large for a float32 workspace",
                   ex->op_name);
  float *acc = vo_workspace_alloc(ex->ctx, ex->device, (size_t)numel * sizeof(float), ex->op_name);
  if (!acc) return VO_ERROR_OUT_OF_MEMORY;
  vo_status st = f32(ex, acc);
  if (st == VO_OK) {
    uint16_t *o = vo_view_addr(out);
    const int t = vo_cpu_threads_for(ex->ctx, numel / 4096, 0.5 * (double)numel);
    if (ex->dtype == VO_F16) {
      VO_CPU_FOR(t, i, 0, numel, { o[i] = vo_f32_to_f16(acc[i]); });
    } else {
      VO_CPU_FOR(t, i, 0, numel, { o[i] = vo_f32_to_bf16(acc[i]); });
    }
  }
  vo_workspace_free(ex->ctx, ex->device, acc);
  return st;
}

/* ps_roi_pool's forward prefetches (towards L2; ps_roi_align prefetches
 * only the lines its samples read, see cpu/ps_roi_align.c). An item (the
 * planes of one bin of one image, RoIs by their bin's top) whose bins are
 * dense streams whole rows of its planes: down to VO_PS_AHEAD rows below the
 * current bin's top, one row at a time across the planes, so each line is
 * fetched once, in order, from far ahead (about 20% faster than no
 * prefetch; prefetching into L1, to each bin's bottom in bursts, or reading
 * the rows ahead were no better). An item of sparse bins prefetches only the
 * next RoI's bin while it computes the current one: streaming rows there
 * would fetch whole planes for a few RoIs. Dense: the lines of the rows the
 * bins span are at most VO_PS_DENSE times the lines the bins read. */
#define VO_PS_AHEAD 16
#define VO_PS_DENSE 2.0

/* Lines of a bin of `rows` rows and bytes [b0, b1) of each. */
static inline double vo_ps_bin_lines(int64_t rows, int64_t b0, int64_t b1) {
  return rows <= 0 || b1 <= b0 ? 0.0 : (double)rows * (double)((b1 - b0 + 63) / 64 + 1);
}

/* Whether an item whose bins span rows [top, bottom) of row_bytes each and
 * read bin_lines lines streams rows. */
static inline int vo_ps_streams_rows(int64_t top, int64_t bottom, int64_t row_bytes,
                                     double bin_lines) {
  return bottom > top &&
         (double)(bottom - top) * (double)((row_bytes + 63) / 64) <= VO_PS_DENSE * bin_lines;
}

/* One row of an item's cout planes (cs_bytes apart). */
static inline void vo_ps_prefetch_row(const char *row, int64_t cout, int64_t cs_bytes,
                                      int64_t row_bytes) {
  for (int64_t c = 0; c < cout; c++, row += cs_bytes)
    for (int64_t i = 0; i < row_bytes; i += 64) __builtin_prefetch(row + i, 0, 2);
}

/* What one bin reads: rows [r0, r1) (row_bytes apart) and bytes [b0, b1)
 * of each row of an item's cout planes (cs_bytes apart), from x. */
static inline void vo_ps_prefetch_bin(const char *x, int64_t cout, int64_t cs_bytes,
                                      int64_t row_bytes, int64_t r0, int64_t r1, int64_t b0,
                                      int64_t b1) {
  if (r1 <= r0 || b1 <= b0) return;
  const int64_t lead = (int64_t)((uintptr_t)(x + b0) & 63); /* to the start of b0's line */
  for (int64_t c = 0; c < cout; c++)
    for (int64_t r = r0; r < r1; r++) {
      const char *row = x + c * cs_bytes + r * row_bytes + b0 - lead;
      for (int64_t i = 0; i < b1 - b0 + lead; i += 64) __builtin_prefetch(row + i, 0, 2);
    }
}

#endif /* VISIONOPS_CPU_ROI_COMMON_H */
