/*
 * RoI geometry shared by the bilinear RoI kernels (roi_align, ps_roi_align):
 * per-RoI start, bin size and sampling grid, one bilinear sample (corner
 * offsets and weights), a table of every sample of one RoI in (ph, pw, iy,
 * ix) order, and the chunking of RoIs by table size. The arithmetic follows
 * torchvision's order so float32 results match it. Also the OpenMP loop
 * macro and the grad_input driver (float32 accumulation for half types)
 * shared by every RoI backward, ps_roi_pool's included.
 */
#ifndef VISIONOPS_CPU_ROI_COMMON_H
#define VISIONOPS_CPU_ROI_COMMON_H

#include <math.h>
#include <string.h>

#include "cpu/common.h"

#ifdef VISIONOPS_HAVE_OPENMP
#define VO_PRAGMA(x) _Pragma(#x)
#define VO_OMP_FOR(t) VO_PRAGMA(omp parallel for num_threads(t) schedule(static) if ((t) > 1))
#define VO_OMP_PARALLEL(t) VO_PRAGMA(omp parallel num_threads(t) if ((t) > 1))
#define VO_OMP_FOR_NOWAIT VO_PRAGMA(omp for schedule(static) nowait)
#define VO_OMP_FOR_DYNAMIC VO_PRAGMA(omp for schedule(dynamic, 1))
#else
#define VO_OMP_FOR(t) (void)(t);
#define VO_OMP_PARALLEL(t) (void)(t);
#define VO_OMP_FOR_NOWAIT
#define VO_OMP_FOR_DYNAMIC
#endif

/* Largest per-RoI grid (samples per bin along one axis); torchvision keeps it
 * in an int. Clamping only avoids undefined conversions of absurd sizes. */
#define VO_RA_MAX_GRID ((int64_t)INT32_MAX)

/* Adaptive grid size from ceil(roi size / pooled size); <= 0 (or NaN) means
 * the bin has no samples. */
static inline int64_t vo_ra_grid(double v) {
  if (!(v > 0)) return 0;
  if (v >= (double)VO_RA_MAX_GRID) return VO_RA_MAX_GRID;
  return (int64_t)v;
}

/* a*b saturating at INT64_MAX (a, b >= 0). */
static inline int64_t vo_ra_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

/* Per compute type T: the RoI geometry, one bilinear sample (its corners as
 * element offsets within an [H,W] plane of strides sh, sw, and its weights),
 * and a table of all samples of one RoI in (ph, pw, iy, ix) order. The table
 * does not depend on the channel, so it is built once per RoI. */
#define VO_DEFINE_GEOMETRY(T, SUF, CEIL)                                                           \
  typedef struct vo_ra_roi_##SUF {                                                                 \
    T start_h, start_w, bin_h, bin_w, count;                                                       \
    int64_t grid_h, grid_w, batch;                                                                 \
  } vo_ra_roi_##SUF;                                                                               \
                                                                                                   \
  /* pos[0] < 0: the sample lies outside the map and contributes 0. */                             \
  typedef struct vo_ra_sample_##SUF {                                                              \
    int64_t pos[4];                                                                                \
    T w[4];                                                                                        \
  } vo_ra_sample_##SUF;                                                                            \
                                                                                                   \
  static inline void vo_ra_roi_geometry_##SUF(const vo_roi_align_params *p, int64_t k,             \
                                              vo_ra_roi_##SUF *g) {                                \
    const vo_view *r = p->rois;                                                                    \
    const int64_t row = k * r->stride[0], s1 = r->stride[1];                                       \
    const T scale = (T)p->spatial_scale;                                                           \
    const T off = p->aligned ? (T)0.5 : (T)0;                                                      \
    g->batch = (int64_t)vo_load_host(r, row);                                                      \
    const T sw = (T)vo_load_host(r, row + s1) * scale - off;                                       \
    const T sh = (T)vo_load_host(r, row + 2 * s1) * scale - off;                                   \
    const T ew = (T)vo_load_host(r, row + 3 * s1) * scale - off;                                   \
    const T eh = (T)vo_load_host(r, row + 4 * s1) * scale - off;                                   \
    T rw = ew - sw, rh = eh - sh;                                                                  \
    if (!p->aligned) {                                                                             \
      /* legacy mode: RoIs are at least 1x1 (torchvision's std::max order) */                      \
      rw = rw < (T)1 ? (T)1 : rw;                                                                  \
      rh = rh < (T)1 ? (T)1 : rh;                                                                  \
    }                                                                                              \
    g->start_h = sh;                                                                               \
    g->start_w = sw;                                                                               \
    g->bin_h = rh / (T)p->pooled_height;                                                           \
    g->bin_w = rw / (T)p->pooled_width;                                                            \
    const int64_t sr = p->sampling_ratio > VO_RA_MAX_GRID ? VO_RA_MAX_GRID : p->sampling_ratio;    \
    g->grid_h = sr > 0 ? sr : vo_ra_grid((double)CEIL(rh / (T)p->pooled_height));                  \
    g->grid_w = sr > 0 ? sr : vo_ra_grid((double)CEIL(rw / (T)p->pooled_width));                   \
    const int64_t n = g->grid_h * g->grid_w; /* both <= 2^31 - 1: no overflow */                   \
    g->count = (T)(n > 1 ? n : 1);                                                                 \
  }                                                                                                \
                                                                                                   \
  static inline void vo_ra_sample_at_##SUF(                                                        \
      const vo_ra_roi_##SUF *g, int64_t height, int64_t width, int64_t sh, int64_t sw, int64_t ph, \
      int64_t pw, int64_t iy, int64_t ix, vo_ra_sample_##SUF *s) {                                 \
    T y = g->start_h + (T)ph * g->bin_h + ((T)iy + (T)0.5) * g->bin_h / (T)g->grid_h;              \
    T x = g->start_w + (T)pw * g->bin_w + ((T)ix + (T)0.5) * g->bin_w / (T)g->grid_w;              \
    /* Written as a negated range test so NaN positions count as outside. */                       \
    if (height == 0 || width == 0 ||                                                               \
        !(y >= (T)-1 && y <= (T)height && x >= (T)-1 && x <= (T)width)) {                          \
      memset(s, 0, sizeof *s);                                                                     \
      s->pos[0] = -1;                                                                              \
      return;                                                                                      \
    }                                                                                              \
    if (y <= 0) y = 0;                                                                             \
    if (x <= 0) x = 0;                                                                             \
    int64_t y_lo = (int64_t)y, x_lo = (int64_t)x, y_hi, x_hi;                                      \
    if (y_lo >= height - 1) {                                                                      \
      y_hi = y_lo = height - 1;                                                                    \
      y = (T)y_lo;                                                                                 \
    } else {                                                                                       \
      y_hi = y_lo + 1;                                                                             \
    }                                                                                              \
    if (x_lo >= width - 1) {                                                                       \
      x_hi = x_lo = width - 1;                                                                     \
      x = (T)x_lo;                                                                                 \
    } else {                                                                                       \
      x_hi = x_lo + 1;                                                                             \
    }                                                                                              \
    const T ly = y - (T)y_lo, lx = x - (T)x_lo;                                                    \
    const T hy = (T)1 - ly, hx = (T)1 - lx;                                                        \
    s->w[0] = hy * hx;                                                                             \
    s->w[1] = hy * lx;                                                                             \
    s->w[2] = ly * hx;                                                                             \
    s->w[3] = ly * lx;                                                                             \
    s->pos[0] = y_lo * sh + x_lo * sw;                                                             \
    s->pos[1] = y_lo * sh + x_hi * sw;                                                             \
    s->pos[2] = y_hi * sh + x_lo * sw;                                                             \
    s->pos[3] = y_hi * sh + x_hi * sw;                                                             \
  }                                                                                                \
                                                                                                   \
  static inline void vo_ra_fill_table_##SUF(const vo_roi_align_params *p,                          \
                                            const vo_ra_roi_##SUF *g, int64_t sh, int64_t sw,      \
                                            vo_ra_sample_##SUF *tab) {                             \
    int64_t i = 0;                                                                                 \
    for (int64_t ph = 0; ph < p->pooled_height; ph++)                                              \
      for (int64_t pw = 0; pw < p->pooled_width; pw++)                                             \
        for (int64_t iy = 0; iy < g->grid_h; iy++)                                                 \
          for (int64_t ix = 0; ix < g->grid_w; ix++)                                               \
            vo_ra_sample_at_##SUF(g, p->height, p->width, sh, sw, ph, pw, iy, ix, &tab[i++]);      \
  }

VO_DEFINE_GEOMETRY(float, f32, ceilf)
VO_DEFINE_GEOMETRY(double, f64, ceil)

/* One bin (ph, pw) of a RoI, shared by roi_align and ps_roi_align: the mean
 * of its bilinear samples of the plane at `base` (forward), or its gradient
 * gv spread to a contiguous [H,W] plane (backward). tab is the bin's first
 * table entry, or NULL to compute the samples on the fly; samples and
 * corners go in torchvision's order. */
#define VO_DEFINE_BIN_MEAN(T, SUF, NAME, LOAD)                                                  \
  static inline T vo_ra_bin_mean_##NAME(const vo_roi_align_params *p, const vo_ra_roi_##SUF *g, \
                                        const vo_ra_sample_##SUF *tab, int64_t ph, int64_t pw,  \
                                        int64_t base) {                                         \
    const vo_view *in = p->input;                                                               \
    const int64_t sh = in->stride[2], sw = in->stride[3];                                       \
    T val = 0;                                                                                  \
    for (int64_t iy = 0; iy < g->grid_h; iy++) {                                                \
      for (int64_t ix = 0; ix < g->grid_w; ix++) {                                              \
        vo_ra_sample_##SUF local;                                                               \
        const vo_ra_sample_##SUF *s = &local;                                                   \
        if (tab)                                                                                \
          s = tab++;                                                                            \
        else                                                                                    \
          vo_ra_sample_at_##SUF(g, p->height, p->width, sh, sw, ph, pw, iy, ix, &local);        \
        if (s->pos[0] < 0) continue;                                                            \
        val += s->w[0] * LOAD(base + s->pos[0]) + s->w[1] * LOAD(base + s->pos[1]) +            \
               s->w[2] * LOAD(base + s->pos[2]) + s->w[3] * LOAD(base + s->pos[3]);             \
      }                                                                                         \
    }                                                                                           \
    return val / g->count;                                                                      \
  }
VO_DEFINE_BIN_MEAN(float, f32, f32, VO_LOAD_F32)
VO_DEFINE_BIN_MEAN(double, f64, f64, VO_LOAD_F64)
VO_DEFINE_BIN_MEAN(float, f32, f16, VO_LOAD_F16)
VO_DEFINE_BIN_MEAN(float, f32, bf16, VO_LOAD_BF16)

#define VO_DEFINE_BIN_SCATTER(T, SUF)                                                         \
  static inline void vo_ra_bin_scatter_##SUF(                                                 \
      const vo_roi_align_params *p, const vo_ra_roi_##SUF *g, const vo_ra_sample_##SUF *tab,  \
      int64_t ph, int64_t pw, T gv, T *plane) {                                               \
    for (int64_t iy = 0; iy < g->grid_h; iy++) {                                              \
      for (int64_t ix = 0; ix < g->grid_w; ix++) {                                            \
        vo_ra_sample_##SUF local;                                                             \
        const vo_ra_sample_##SUF *s = &local;                                                 \
        if (tab)                                                                              \
          s = tab++;                                                                          \
        else                                                                                  \
          vo_ra_sample_at_##SUF(g, p->height, p->width, p->width, 1, ph, pw, iy, ix, &local); \
        if (s->pos[0] < 0) continue;                                                          \
        for (int j = 0; j < 4; j++) plane[s->pos[j]] += gv * s->w[j] / g->count;              \
      }                                                                                       \
    }                                                                                         \
  }
VO_DEFINE_BIN_SCATTER(float, f32)
VO_DEFINE_BIN_SCATTER(double, f64)

/* Zeroes `count` elements of `elem` bytes at p, split over the context's
 * threads in 1 MiB pieces. */
static inline void vo_zero_parallel(const vo_exec *ex, void *p, size_t elem, int64_t count) {
  const int64_t bytes = count * (int64_t)elem, piece = (int64_t)1 << 20;
  const int64_t pieces = (bytes + piece - 1) / piece;
  const int t = vo_cpu_threads_for(ex->ctx, pieces, 0.1 * (double)bytes); /* ~10 GB/s */
  VO_OMP_FOR(t)
  for (int64_t i = 0; i < pieces; i++) {
    const int64_t at = i * piece, len = bytes - at < piece ? bytes - at : piece;
    memset((char *)p + at, 0, (size_t)len);
  }
}

/* The position-sensitive forwards' work (ps_roi_align, ps_roi_pool): items
 * are (image, bin) pairs, each split into `parts` runs of the image's RoIs
 * when there are too few pairs to balance the threads, handed out
 * dynamically; channel_mapping ([k, c] = c, the flat index mod C) is filled
 * in the same parallel region (each region costs a wake-up of the other
 * threads). first[img]..first[img + 1] is image img's range in
 * orders[ph * num_rois ...], its RoIs in visiting order for bin row ph.
 * item(arg, ord, j0, j1, img, b) computes bin b over ord[j0..j1). */
typedef void (*vo_ps_item_fn)(const void *arg, const int64_t *ord, int64_t j0, int64_t j1,
                              int64_t img, int64_t b);
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
  VO_OMP_PARALLEL(t) {
    VO_OMP_FOR_NOWAIT
    for (int64_t k = 0; k < num_rois; k++)
      for (int64_t c = 0; c < channels; c++) mapping[k * channels + c] = (int32_t)c;
    VO_OMP_FOR_DYNAMIC
    for (int64_t it = 0; it < items; it++) {
      const int64_t pair = it / parts, part = it % parts;
      const int64_t img = pair / bins, b = pair % bins;
      const int64_t m = first[img + 1] - first[img];
      const int64_t j0 = first[img] + m * part / parts;
      const int64_t j1 = first[img] + m * (part + 1) / parts;
      item(arg, orders + (b / pooled_width) * num_rois, j0, j1, img, b);
    }
  }
}

/* Bin b's first entry in a RoI's sample table (NULL stays NULL). */
#define VO_RA_BIN_TABLE(tab, g, b) ((tab) ? (tab) + (b) * (g)->grid_h * (g)->grid_w : NULL)

/* Samples in one RoI's table (saturating). */
static inline int64_t vo_ra_table_entries(const vo_roi_align_params *p, int64_t grid_h,
                                          int64_t grid_w) {
  return vo_ra_mul(vo_ra_mul(p->pooled_height, p->pooled_width), vo_ra_mul(grid_h, grid_w));
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

/* The plain driver of the bilinear RoI ops, for one compute type: geometry of
 * every RoI, then chunk by chunk (the chunk's sample tables fit the
 * workspace limit): build the tables (parallel over RoIs), then run the work
 * items. Forward items are (RoI, output channel) pairs, `fwd_channels` per
 * RoI. Backward items (bwd != NULL) are (image, channel) planes of the
 * contiguous accumulator acc, each owned by one thread that walks the
 * chunk's RoIs in order, so the sums never depend on the thread count and
 * need no atomics; the owner also zeroes its plane first. A RoI whose table does not fit gets tab
 * == NULL and computes its samples on the fly. */
#define VO_DEFINE_RA_DRIVER(T, SUF)                                                                \
  typedef void (*vo_ra_forward_item_##SUF)(const vo_exec *ex, const vo_ra_roi_##SUF *g,            \
                                           const vo_ra_sample_##SUF *tab, int64_t k, int64_t c);   \
  typedef void (*vo_ra_backward_item_##SUF)(const vo_exec *ex, const vo_ra_roi_##SUF *g,           \
                                            const vo_ra_sample_##SUF *tab, int64_t k, int64_t c,   \
                                            T *plane);                                             \
  static inline vo_status vo_ra_drive_##SUF(const vo_exec *ex, const vo_roi_align_params *p,       \
                                            int64_t fwd_channels, vo_ra_forward_item_##SUF fwd,    \
                                            vo_ra_backward_item_##SUF bwd, T *acc) {               \
    const int backward = bwd != NULL;                                                              \
    const int64_t num_rois = p->rois->shape[0];                                                    \
    /* table corner offsets: input strides forward, the contiguous plane backward */               \
    const int64_t sh = backward ? p->width : p->input->stride[2];                                  \
    const int64_t sw = backward ? 1 : p->input->stride[3];                                         \
    const size_t per_roi = sizeof(vo_ra_roi_##SUF) + 2 * sizeof(int64_t);                          \
    char *meta = vo_workspace_alloc(ex->ctx, ex->device, (size_t)num_rois * per_roi, ex->op_name); \
    if (!meta) return VO_ERROR_OUT_OF_MEMORY;                                                      \
    vo_ra_roi_##SUF *geo = (void *)meta;                                                           \
    int64_t *entries = (void *)(meta + (size_t)num_rois * sizeof *geo);                            \
    int64_t *tab_off = entries + num_rois;                                                         \
    int64_t total = 0;                                                                             \
    for (int64_t k = 0; k < num_rois; k++) {                                                       \
      vo_ra_roi_geometry_##SUF(p, k, &geo[k]);                                                     \
      entries[k] = vo_ra_table_entries(p, geo[k].grid_h, geo[k].grid_w);                           \
      total = total > INT64_MAX - entries[k] ? INT64_MAX : total + entries[k];                     \
    }                                                                                              \
    int64_t capacity = (int64_t)(ex->ctx->workspace_limit / sizeof(vo_ra_sample_##SUF));           \
    if (total < capacity) capacity = total;                                                        \
    vo_ra_sample_##SUF *tab = NULL;                                                                \
    if (capacity > 0) {                                                                            \
      tab = vo_workspace_alloc(ex->ctx, ex->device, (size_t)capacity * sizeof(vo_ra_sample_##SUF), \
                               ex->op_name);                                                       \
      if (!tab) {                                                                                  \
        vo_workspace_free(ex->ctx, ex->device, meta);                                              \
        return VO_ERROR_OUT_OF_MEMORY;                                                             \
      }                                                                                            \
    }                                                                                              \
    const int64_t planes = p->batch_size * p->channels;                                            \
    if (backward && num_rois == 0) /* no chunk below zeroes the planes */                          \
      vo_zero_parallel(ex, acc, sizeof(T), planes * p->height * p->width);                         \
    for (int64_t k0 = 0, k1; k0 < num_rois; k0 = k1) {                                             \
      k1 = vo_ra_next_chunk(entries, k0, num_rois, capacity, tab_off);                             \
      /* costs: ~2 ns a table entry, ~1 ns a sample per channel (forward) */                       \
      double chunk_entries = 0;                                                                    \
      for (int64_t k = k0; k < k1; k++) chunk_entries += (double)entries[k];                       \
      const int tt = vo_cpu_threads_for(ex->ctx, k1 - k0, 2.0 * chunk_entries);                    \
      VO_OMP_FOR(tt)                                                                               \
      for (int64_t k = k0; k < k1; k++)                                                            \
        if (tab && tab_off[k] >= 0 && entries[k] > 0)                                              \
          vo_ra_fill_table_##SUF(p, &geo[k], sh, sw, tab + tab_off[k]);                            \
      if (!backward) {                                                                             \
        const int64_t items = (k1 - k0) * fwd_channels;                                            \
        const int t = vo_cpu_threads_for(ex->ctx, items, chunk_entries * (double)fwd_channels);    \
        VO_OMP_FOR(t)                                                                              \
        for (int64_t it = 0; it < items; it++) {                                                   \
          const int64_t k = k0 + it / fwd_channels, c = it % fwd_channels;                         \
          fwd(ex, &geo[k], tab &&tab_off[k] >= 0 ? tab + tab_off[k] : NULL, k, c);                 \
        }                                                                                          \
      } else {                                                                                     \
        const int64_t hw = p->height * p->width;                                                   \
        const int t = vo_cpu_threads_for(ex->ctx, planes,                                          \
                                         (double)hw * (double)planes * (k0 == 0 ? 0.1 : 0) +       \
                                             1.5 * chunk_entries * (double)p->channels);           \
        VO_OMP_FOR(t)                                                                              \
        for (int64_t pl = 0; pl < planes; pl++) {                                                  \
          const int64_t b = pl / p->channels, c = pl % p->channels;                                \
          /* the owner zeroes its plane (in parallel, and it stays in cache) */                    \
          if (k0 == 0) memset(acc + pl * hw, 0, sizeof(T) * (size_t)hw);                           \
          for (int64_t k = k0; k < k1; k++) {                                                      \
            if (geo[k].batch != b) continue;                                                       \
            bwd(ex, &geo[k], tab &&tab_off[k] >= 0 ? tab + tab_off[k] : NULL, k, c,                \
                acc + pl * hw);                                                                    \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    if (tab) vo_workspace_free(ex->ctx, ex->device, tab);                                          \
    vo_workspace_free(ex->ctx, ex->device, meta);                                                  \
    return VO_OK;                                                                                  \
  }
VO_DEFINE_RA_DRIVER(float, f32)
VO_DEFINE_RA_DRIVER(double, f64)

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
    return ex->dtype == VO_F64 ? f64(ex, (double *)vo_view_addr(out)) : f32(ex, (float *)vo_view_addr(out));
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
      VO_OMP_FOR(t)
      for (int64_t i = 0; i < numel; i++) o[i] = vo_f32_to_f16(acc[i]);
    } else {
      VO_OMP_FOR(t)
      for (int64_t i = 0; i < numel; i++) o[i] = vo_f32_to_bf16(acc[i]);
    }
  }
  vo_workspace_free(ex->ctx, ex->device, acc);
  return st;
}

#endif /* VISIONOPS_CPU_ROI_COMMON_H */
