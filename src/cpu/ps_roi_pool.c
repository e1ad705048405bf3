/*
 * CPU kernels for ps_roi_pool (forward, with channel_mapping) and
 * ps_roi_pool_backward. The forward reproduces torchvision's values and
 * arithmetic order, including its clamping of bins to rows [0, H-1) and
 * columns [0, W-1) (the last row and column never contribute). torchvision's
 * backward clamps to [0, H) and [0, W) instead, so it is not the gradient of
 * its forward there; this backward uses the forward's bins and is the true
 * gradient.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/roi_common.h"

/* Rounded RoI coordinates are kept within +-2^52 so the integer
 * conversions are defined for any finite input; every bin is clamped into
 * the map afterwards, so this never changes a bin that overlaps it unless a
 * coordinate is absurdly large. */
#define VO_PSP_COORD_LIMIT 4503599627370496.0 /* 2^52 */

static int64_t vo_psp_saturate(double v) {
  if (v > VO_PSP_COORD_LIMIT) return (int64_t)VO_PSP_COORD_LIMIT;
  if (v < -VO_PSP_COORD_LIMIT) return -(int64_t)VO_PSP_COORD_LIMIT;
  return (int64_t)v;
}

static int64_t vo_psp_clamp(int64_t v, int64_t hi) {
  if (v < 0) v = 0;
  return v > hi ? hi : v;
}

/* Per compute type T: a RoI's rounded start and bin sizes, and the bounds
 * [h0, h1) x [w0, w1) of bin (ph, pw) (empty when h1 <= h0 or w1 <= w0). */
#define VO_DEFINE_PSP_GEOMETRY(T, SUF, ROUND, FLOOR, CEIL)                                 \
  typedef struct vo_psp_roi_##SUF {                                                        \
    int64_t batch, start_h, start_w;                                                       \
    T bin_h, bin_w;                                                                        \
  } vo_psp_roi_##SUF;                                                                      \
                                                                                           \
  static void vo_psp_geometry_##SUF(const vo_ps_roi_pool_params *p, int64_t k,             \
                                    vo_psp_roi_##SUF *g) {                                 \
    const vo_view *r = p->rois;                                                            \
    const int64_t row = k * r->stride[0], s1 = r->stride[1];                               \
    const T scale = (T)p->spatial_scale;                                                   \
    g->batch = (int64_t)vo_load_host(r, row);                                              \
    g->start_w = vo_psp_saturate((double)ROUND((T)vo_load_host(r, row + s1) * scale));     \
    g->start_h = vo_psp_saturate((double)ROUND((T)vo_load_host(r, row + 2 * s1) * scale)); \
    const int64_t end_w =                                                                  \
        vo_psp_saturate((double)ROUND((T)vo_load_host(r, row + 3 * s1) * scale));          \
    const int64_t end_h =                                                                  \
        vo_psp_saturate((double)ROUND((T)vo_load_host(r, row + 4 * s1) * scale));          \
    /* RoIs are at least 1x1 (no "+1", unlike roi_pool) */                                 \
    const int64_t rw = end_w - g->start_w > 1 ? end_w - g->start_w : 1;                    \
    const int64_t rh = end_h - g->start_h > 1 ? end_h - g->start_h : 1;                    \
    g->bin_h = (T)rh / (T)p->pooled_height;                                                \
    g->bin_w = (T)rw / (T)p->pooled_width;                                                 \
  }                                                                                        \
                                                                                           \
  static void vo_psp_bin_##SUF(const vo_ps_roi_pool_params *p, const vo_psp_roi_##SUF *g,  \
                               int64_t ph, int64_t pw, int64_t b[4]) {                     \
    const int64_t h0 = (int64_t)FLOOR((T)ph * g->bin_h);                                   \
    const int64_t w0 = (int64_t)FLOOR((T)pw * g->bin_w);                                   \
    const int64_t h1 = (int64_t)CEIL((T)(ph + 1) * g->bin_h);                              \
    const int64_t w1 = (int64_t)CEIL((T)(pw + 1) * g->bin_w);                              \
    /* torchvision's forward: clamp into [0, H-1] and [0, W-1] */                          \
    b[0] = vo_psp_clamp(h0 + g->start_h, p->height - 1);                                   \
    b[1] = vo_psp_clamp(h1 + g->start_h, p->height - 1);                                   \
    b[2] = vo_psp_clamp(w0 + g->start_w, p->width - 1);                                    \
    b[3] = vo_psp_clamp(w1 + g->start_w, p->width - 1);                                    \
  }

VO_DEFINE_PSP_GEOMETRY(float, f32, roundf, floorf, ceilf)
VO_DEFINE_PSP_GEOMETRY(double, f64, round, floor, ceil)

/* Backward: RoI k's one bin that reads input channel c_in spreads
 * grad / area over that bin of the [H,W] plane (contiguous, compute type). */
#define VO_DEFINE_PSP_BACKWARD(T, SUF)                                                            \
  static void vo_psp_backward_rc_##SUF(const vo_ps_roi_pool_params *p, const vo_psp_roi_##SUF *g, \
                                       int64_t k, int64_t c_in, T *plane) {                       \
    const vo_view *gr = p->grad;                                                                  \
    const int64_t bins = p->pooled_height * p->pooled_width, bin = c_in % bins;                   \
    const int64_t c = c_in / bins, ph = bin / p->pooled_width, pw = bin % p->pooled_width;        \
    int64_t b[4];                                                                                 \
    vo_psp_bin_##SUF(p, g, ph, pw, b);                                                            \
    if (!(b[1] > b[0] && b[3] > b[2])) return;                                                    \
    const T gv = (T)vo_load_host(                                                                 \
        gr, k * gr->stride[0] + c * gr->stride[1] + ph * gr->stride[2] + pw * gr->stride[3]);     \
    const T diff = gv / (T)((b[1] - b[0]) * (b[3] - b[2]));                                       \
    for (int64_t y = b[0]; y < b[1]; y++)                                                         \
      for (int64_t x = b[2]; x < b[3]; x++) plane[y * p->width + x] += diff;                      \
  }

VO_DEFINE_PSP_BACKWARD(float, f32)
VO_DEFINE_PSP_BACKWARD(double, f64)

/* Forward sums of one bin for a block of CB output channels: bin (ph, pw)
 * of output channel c reads input channel c*PH*PW + (ph, pw), so the
 * block's planes are cs elements apart and every channel of the block sums
 * the same rectangle bb = [h0, h1) x [w0, w1). Each channel's sum runs row
 * by row in torchvision's order; the CB sums are independent chains that
 * the CPU overlaps, where one sum alone waits on the latency of every
 * addition. */
#define VO_DEFINE_PSP_SUM(T, ST, NAME, CONV, CB)                                        \
  static void vo_psp_sum_##NAME##_##CB(const ST *x, int64_t cs, int64_t sh, int64_t sw, \
                                       const int64_t *bb, T *out) {                     \
    T a[CB];                                                                            \
    for (int c = 0; c < CB; c++) a[c] = 0;                                              \
    for (int64_t y = bb[0]; y < bb[1]; y++)                                             \
      for (int64_t xx = bb[2]; xx < bb[3]; xx++) {                                      \
        const ST *e = x + y * sh + xx * sw;                                             \
        for (int c = 0; c < CB; c++) a[c] += CONV(e[c * cs]);                           \
      }                                                                                 \
    for (int c = 0; c < CB; c++) out[c] = a[c];                                         \
  }

/* Output channels per block at most; more channels are split into blocks
 * of near-equal size. */
#define VO_PSP_CB 8

#define VO_DEFINE_PSP_SUMS(T, ST, NAME, CONV)                                                   \
  VO_DEFINE_PSP_SUM(T, ST, NAME, CONV, 1)                                                       \
  VO_DEFINE_PSP_SUM(T, ST, NAME, CONV, 2)                                                       \
  VO_DEFINE_PSP_SUM(T, ST, NAME, CONV, 3)                                                       \
  VO_DEFINE_PSP_SUM(T, ST, NAME, CONV, 4)                                                       \
  VO_DEFINE_PSP_SUM(T, ST, NAME, CONV, 5)                                                       \
  VO_DEFINE_PSP_SUM(T, ST, NAME, CONV, 6)                                                       \
  VO_DEFINE_PSP_SUM(T, ST, NAME, CONV, 7)                                                       \
  VO_DEFINE_PSP_SUM(T, ST, NAME, CONV, 8)                                                       \
  typedef void (*vo_psp_sum_fn_##NAME)(const ST *, int64_t, int64_t, int64_t, const int64_t *,  \
                                       T *);                                                    \
  static const vo_psp_sum_fn_##NAME vo_psp_sums_##NAME[VO_PSP_CB + 1] = {NULL,                  \
                                                                         vo_psp_sum_##NAME##_1, \
                                                                         vo_psp_sum_##NAME##_2, \
                                                                         vo_psp_sum_##NAME##_3, \
                                                                         vo_psp_sum_##NAME##_4, \
                                                                         vo_psp_sum_##NAME##_5, \
                                                                         vo_psp_sum_##NAME##_6, \
                                                                         vo_psp_sum_##NAME##_7, \
                                                                         vo_psp_sum_##NAME##_8};

#define VO_PSP_CONV_NONE(v) (v)
VO_DEFINE_PSP_SUMS(float, float, f32, VO_PSP_CONV_NONE)
VO_DEFINE_PSP_SUMS(double, double, f64, VO_PSP_CONV_NONE)
VO_DEFINE_PSP_SUMS(float, uint16_t, f16, vo_f16_to_f32)
VO_DEFINE_PSP_SUMS(float, uint16_t, bf16, vo_bf16_to_f32)

/* The forward prefetches (towards L2) whole rows of an item's planes,
 * paced by the bins' tops: down to this many rows below the top of the
 * current bin, one row at a time across the planes. Measured about 20%
 * faster than none; prefetching into L1, to each bin's bottom in bursts,
 * or reading the rows ahead were no better. */
#define VO_PSP_AHEAD 16

static inline void vo_psp_prefetch_row(const char *row, int64_t cout, int64_t cs_bytes,
                                       int64_t row_bytes) {
  for (int64_t c = 0; c < cout; c++, row += cs_bytes)
    for (int64_t i = 0; i < row_bytes; i += 64) __builtin_prefetch(row + i, 0, 2);
}

/* Forward of bin b = (ph, pw) of the RoIs order[j0 .. j1) (all of image
 * img, sorted by the first row of their bin row ph), for every output
 * channel: the bin's bounds are computed once per RoI and shared by the
 * channels (each reads its own input channel), and each output is the mean
 * of the bin (0 when empty) as torchvision's. The item reads only the
 * planes c*PH*PW + b of image img, walking down them with the rows below
 * prefetched: RoI by RoI, the scattered bins were fetched from memory a
 * line at a time. */
#define VO_DEFINE_PSP_FORWARD_ITEM(T, SUF, ST, NAME, STORE)                                       \
  static void vo_psp_forward_item_##NAME(const vo_ps_roi_pool_params *p,                          \
                                         const vo_psp_roi_##SUF *geo, const int64_t *order,       \
                                         int64_t j0, int64_t j1, int64_t img, int64_t b) {        \
    const vo_view *in = p->input;                                                                 \
    const int64_t bins = p->pooled_height * p->pooled_width, cout = p->channels_out;              \
    const int64_t ph = b / p->pooled_width, pw = b % p->pooled_width;                             \
    const int64_t cs = bins * in->stride[1], sh = in->stride[2], sw = in->stride[3];              \
    const int64_t nblocks = (cout + VO_PSP_CB - 1) / VO_PSP_CB;                                   \
    const ST *x = (const ST *)vo_view_addr(in) + img * in->stride[0] + b * in->stride[1];                 \
    const int64_t cs_bytes = cs * (int64_t)sizeof(ST);                                            \
    const int64_t row_bytes = p->width * (int64_t)sizeof(ST);                                     \
    int64_t front = 0; /* rows above this one have been prefetched */                             \
    for (int64_t j = j0; j < j1; j++) {                                                           \
      const int64_t k = order[j];                                                                 \
      int64_t bb[4];                                                                              \
      vo_psp_bin_##SUF(p, &geo[k], ph, pw, bb);                                                   \
      const int empty = !(bb[1] > bb[0] && bb[3] > bb[2]);                                        \
      if (!empty && sw == 1) {                                                                    \
        const int64_t to = bb[0] + VO_PSP_AHEAD < p->height ? bb[0] + VO_PSP_AHEAD : p->height;   \
        for (; front < to; front++)                                                               \
          vo_psp_prefetch_row((const char *)(x + front * sh), cout, cs_bytes, row_bytes);         \
      }                                                                                           \
      const T area = empty ? (T)1 : (T)((bb[1] - bb[0]) * (bb[3] - bb[2]));                       \
      /* output [k, c, ph, pw] is element k * C + c * PH*PW + b of the flat output */             \
      const int64_t o = k * p->channels + b;                                                      \
      for (int64_t blk = 0, c0 = 0; blk < nblocks; blk++) {                                       \
        const int64_t c1 = cout * (blk + 1) / nblocks;                                            \
        T acc[VO_PSP_CB];                                                                         \
        if (!empty) vo_psp_sums_##NAME[c1 - c0](x + c0 * cs, cs, sh, sw, bb, acc);                \
        for (int64_t c = c0; c < c1; c++) STORE(o + c * bins, empty ? (T)0 : acc[c - c0] / area); \
        c0 = c1;                                                                                  \
      }                                                                                           \
    }                                                                                             \
  }

VO_DEFINE_PSP_FORWARD_ITEM(float, f32, float, f32, VO_STORE_F32)
VO_DEFINE_PSP_FORWARD_ITEM(double, f64, double, f64, VO_STORE_F64)
VO_DEFINE_PSP_FORWARD_ITEM(float, f32, uint16_t, f16, VO_STORE_F16)
VO_DEFINE_PSP_FORWARD_ITEM(float, f32, uint16_t, bf16, VO_STORE_BF16)

/* RoIs grouped by image, stable: image b's RoIs are order[first[b] ..
 * first[b+1]) in increasing k. */
static void vo_psp_group(int64_t n, int64_t num_rois, const int64_t *batch_of, int64_t *first,
                         int64_t *order) {
  memset(first, 0, sizeof(int64_t) * (size_t)(n + 1));
  for (int64_t k = 0; k < num_rois; k++) first[batch_of[k] + 1]++;
  for (int64_t b = 0; b < n; b++) first[b + 1] += first[b];
  for (int64_t k = 0; k < num_rois; k++) order[first[batch_of[k]]++] = k;
  for (int64_t b = n; b > 0; b--) first[b] = first[b - 1];
  first[0] = 0;
}

/* A RoI's sort key for the forward's visiting order. */
typedef struct vo_psp_key {
  int64_t h, w, k;
} vo_psp_key;

static int vo_psp_key_cmp(const void *a, const void *b) {
  const vo_psp_key *x = a, *y = b;
  if (x->h != y->h) return x->h < y->h ? -1 : 1;
  if (x->w != y->w) return x->w < y->w ? -1 : 1;
  return x->k < y->k ? -1 : x->k > y->k;
}

/* The driver for one compute type: geometry of every RoI, RoIs grouped by
 * image, then the work items.
 * Forward: items are (image, bin) pairs (split further by RoIs when there
 * are few): item (n, b) reads the output channels' planes c*PH*PW + b of
 * image n, which no other item reads, so the input streams from memory
 * once, and each RoI's bin bounds serve all its output channels side by
 * side (vo_psp_forward_item). Each image's RoIs go in order of the top row
 * of their bin row ph, so an item's bins walk down its planes. Every
 * output element is computed exactly as torchvision does, in any order.
 * Backward: items are (image, input channel) planes. Each plane of
 * grad_input is owned by one thread, zeroed and filled while in cache,
 * walking the RoIs in order (bit-identical for any thread count, no
 * atomics). `acc` is grad_input itself (float32/float64) or a float32 copy
 * for half types, stored plane by plane as soon as the plane is complete. */
#define VO_DEFINE_PSP_DRIVER(T, SUF)                                                           \
  typedef struct vo_psp_items_##SUF {                                                          \
    const vo_ps_roi_pool_params *p;                                                            \
    const vo_psp_roi_##SUF *geo;                                                               \
    vo_dtype dt;                                                                               \
  } vo_psp_items_##SUF;                                                                        \
  static void vo_psp_item_##SUF(const void *arg, const int64_t *ord, int64_t j0, int64_t j1,   \
                                int64_t img, int64_t b) {                                      \
    const vo_psp_items_##SUF *a = arg;                                                         \
    const vo_dtype dt = a->dt;                                                                 \
    (void)dt;                                                                                  \
    VO_PSP_FORWARD_ITEM_##SUF(a->p, a->geo, ord, j0, j1, img, b);                              \
  }                                                                                            \
  static vo_status vo_psp_run_##SUF(const vo_exec *ex, int backward, T *acc) {                 \
    const vo_ps_roi_pool_params *p = &ex->p.ps_roi_pool;                                       \
    const int64_t num_rois = p->rois->shape[0], n = p->batch_size;                             \
    const size_t geo_bytes = (size_t)(num_rois > 0 ? num_rois : 1) * sizeof(vo_psp_roi_##SUF); \
    /* the forward also sorts one order per bin row (PH*K <= the output's size) */             \
    const int64_t orders_len = backward ? 0 : p->pooled_height * num_rois;                     \
    const size_t list_bytes = (size_t)(n + 1 + 2 * num_rois + orders_len) * sizeof(int64_t) +  \
                              (size_t)num_rois * sizeof(vo_psp_key);                           \
    vo_psp_roi_##SUF *geo =                                                                    \
        vo_workspace_alloc(ex->ctx, ex->device, geo_bytes + list_bytes, ex->op_name);          \
    if (!geo) return VO_ERROR_OUT_OF_MEMORY;                                                   \
    int64_t *first = (int64_t *)((char *)geo + geo_bytes), *order = first + n + 1;             \
    int64_t *batch_of = order + num_rois;                                                      \
    for (int64_t k = 0; k < num_rois; k++) {                                                   \
      vo_psp_geometry_##SUF(p, k, &geo[k]);                                                    \
      batch_of[k] = geo[k].batch;                                                              \
    }                                                                                          \
    vo_psp_group(n, num_rois, batch_of, first, order);                                         \
    const vo_dtype dt = ex->dtype;                                                             \
    if (!backward) {                                                                           \
      vo_psp_key *keys = (vo_psp_key *)(batch_of + num_rois);                                  \
      /* orders[ph]: each image's RoIs by the first row of their bin row ph (then              \
       * column, then index), so the bins of one item walk down the planes.                    \
       * Outputs are independent, so any order gives the same bits. */                         \
      const int64_t ph_count = p->pooled_height;                                               \
      int64_t *orders = (int64_t *)(keys + num_rois);                                          \
      for (int64_t ph = 0; ph < ph_count; ph++)                                                \
        for (int64_t img = 0; img < n; img++) {                                                \
          const int64_t m = first[img + 1] - first[img];                                       \
          for (int64_t j = 0; j < m; j++) {                                                    \
            const int64_t k = order[first[img] + j];                                           \
            int64_t bb[4];                                                                     \
            vo_psp_bin_##SUF(p, &geo[k], ph, 0, bb);                                           \
            keys[j] = (vo_psp_key){bb[0], bb[2], k};                                           \
          }                                                                                    \
          qsort(keys, (size_t)m, sizeof *keys, vo_psp_key_cmp);                                \
          for (int64_t j = 0; j < m; j++) orders[ph * num_rois + first[img] + j] = keys[j].k;  \
        }                                                                                      \
      /* channel_mapping[k, c, ph, pw] = c*PH*PW + ph*PW + pw, flat index mod C */             \
      const vo_psp_items_##SUF arg = {p, geo, dt};                                             \
      vo_ps_forward_items(ex, n, p->pooled_height, p->pooled_width, num_rois, first, orders,   \
                          (int32_t *)vo_view_addr(p->channel_mapping), p->channels, vo_psp_item_##SUF, \
                          &arg);                                                               \
    } else {                                                                                   \
      const int64_t planes = n * p->channels, hw = p->height * p->width;                       \
      const int t = vo_cpu_threads_for(                                                        \
          ex->ctx, planes, 0.1 * (double)planes * (double)hw + 4.0 * (double)p->grad->numel);  \
      VO_OMP_FOR(t)                                                                            \
      for (int64_t pl = 0; pl < planes; pl++) {                                                \
        const int64_t b = pl / p->channels, c_in = pl % p->channels;                           \
        T *plane = acc + pl * hw;                                                              \
        memset(plane, 0, sizeof(T) * (size_t)hw);                                              \
        for (int64_t j = first[b]; j < first[b + 1]; j++)                                      \
          vo_psp_backward_rc_##SUF(p, &geo[order[j]], order[j], c_in, plane);                  \
        VO_PSP_STORE_PLANE_##SUF(plane, pl, hw);                                               \
      }                                                                                        \
    }                                                                                          \
    (void)dt;                                                                                  \
    vo_workspace_free(ex->ctx, ex->device, geo);                                               \
    return VO_OK;                                                                              \
  }

#define VO_PSP_FORWARD_ITEM_f32(p, geo, order, j0, j1, img, b)               \
  (dt == VO_F16    ? vo_psp_forward_item_f16(p, geo, order, j0, j1, img, b)  \
   : dt == VO_BF16 ? vo_psp_forward_item_bf16(p, geo, order, j0, j1, img, b) \
                   : vo_psp_forward_item_f32(p, geo, order, j0, j1, img, b))
#define VO_PSP_FORWARD_ITEM_f64(p, geo, order, j0, j1, img, b) \
  vo_psp_forward_item_f64(p, geo, order, j0, j1, img, b)
/* half types: the finished float32 plane goes to grad_input */
#define VO_PSP_STORE_PLANE_f32(plane, pl, hw)                                     \
  do {                                                                            \
    uint16_t *o_ = (uint16_t *)vo_view_addr(p->out) + (pl) * (hw);                        \
    if (dt == VO_F16)                                                             \
      for (int64_t i_ = 0; i_ < (hw); i_++) o_[i_] = vo_f32_to_f16((plane)[i_]);  \
    else if (dt == VO_BF16)                                                       \
      for (int64_t i_ = 0; i_ < (hw); i_++) o_[i_] = vo_f32_to_bf16((plane)[i_]); \
  } while (0)
#define VO_PSP_STORE_PLANE_f64(plane, pl, hw) (void)0

VO_DEFINE_PSP_DRIVER(float, f32)
VO_DEFINE_PSP_DRIVER(double, f64)

vo_status vo_cpu_ps_roi_pool(const vo_exec *ex) {
  if (ex->p.ps_roi_pool.out->numel == 0) return VO_OK;
  return ex->dtype == VO_F64 ? vo_psp_run_f64(ex, 0, NULL) : vo_psp_run_f32(ex, 0, NULL);
}

/* Not vo_roi_backward_into: that zeroes all of grad_input (and converts all
 * of it for half types) in separate passes over memory; here each plane is
 * zeroed and stored while it is in cache. */
vo_status vo_cpu_ps_roi_pool_backward(const vo_exec *ex) {
  const vo_view *out = ex->p.ps_roi_pool.out;
  const int64_t numel = out->numel;
  if (numel == 0) return VO_OK;
  if (ex->dtype == VO_F64) return vo_psp_run_f64(ex, 1, (double *)vo_view_addr(out));
  if (ex->dtype == VO_F32) return vo_psp_run_f32(ex, 1, (float *)vo_view_addr(out));
  if ((uint64_t)numel > SIZE_MAX / sizeof(float))
    return vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: grad_input too large for a float32 workspace",
                   ex->op_name);
  float *acc = vo_workspace_alloc(ex->ctx, ex->device, (size_t)numel * sizeof(float), ex->op_name);
  if (!acc) return VO_ERROR_OUT_OF_MEMORY;
  const vo_status st = vo_psp_run_f32(ex, 1, acc);
  vo_workspace_free(ex->ctx, ex->device, acc);
  return st;
}
