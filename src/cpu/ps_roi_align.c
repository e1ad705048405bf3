/*
 * CPU kernels for ps_roi_align (forward, with channel_mapping) and
 * ps_roi_align_backward. The geometry, bilinear samples and sample tables
 * are roi_align's (aligned, see kernels/roi_align.h); only the channel a bin
 * reads differs: output channel c, bin (ph, pw) reads input channel
 * (c*PH + ph)*PW + pw. A RoI whose adaptive grid is empty gives 0 (the
 * shared geometry divides by max(count, 1)), where torchvision gives NaN.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/roi_common.h"

/* Forward: the bilinear samples of one bin for a block of CB output
 * channels. Bin (ph, pw) of output channel c reads input channel
 * c*PH*PW + (ph, pw), so the block's planes are cs elements apart and all
 * channels of the block share the bin's samples (corner offsets and
 * weights, computed once). Each channel accumulates its samples in (iy, ix)
 * order with torchvision's expression; acc carries the sums across chunks
 * of samples. The CB channels are independent chains the CPU overlaps. */
#define VO_DEFINE_PSA_BIN(T, SUF, ST, NAME, CB)                                                \
  static void vo_psa_bin_##NAME##_##CB(const ST *x, int64_t cs, const vo_k_ra_sample_##SUF *s, \
                                       int64_t ns, T *acc) {                                   \
    T a[CB];                                                                                   \
    for (int c = 0; c < CB; c++) a[c] = acc[c];                                                \
    for (int64_t i = 0; i < ns; i++) {                                                         \
      if (s[i].pos[0] == VO_K_RA_OUTSIDE) continue;                                            \
      for (int c = 0; c < CB; c++) a[c] += vo_k_ra_sample_sum_##NAME(x + c * cs, &s[i]);       \
    }                                                                                          \
    for (int c = 0; c < CB; c++) acc[c] = a[c];                                                \
  }

/* Output channels per block at most; more channels are split into blocks
 * of near-equal size. */
#define VO_PSA_CB 8

#define VO_DEFINE_PSA_BINS(T, SUF, ST, NAME)                                                       \
  VO_DEFINE_PSA_BIN(T, SUF, ST, NAME, 1)                                                           \
  VO_DEFINE_PSA_BIN(T, SUF, ST, NAME, 2)                                                           \
  VO_DEFINE_PSA_BIN(T, SUF, ST, NAME, 3)                                                           \
  VO_DEFINE_PSA_BIN(T, SUF, ST, NAME, 4)                                                           \
  VO_DEFINE_PSA_BIN(T, SUF, ST, NAME, 5)                                                           \
  VO_DEFINE_PSA_BIN(T, SUF, ST, NAME, 6)                                                           \
  VO_DEFINE_PSA_BIN(T, SUF, ST, NAME, 7)                                                           \
  VO_DEFINE_PSA_BIN(T, SUF, ST, NAME, 8)                                                           \
  typedef void (*vo_psa_bin_fn_##NAME)(const ST *, int64_t, const vo_k_ra_sample_##SUF *, int64_t, \
                                       T *);                                                       \
  static const vo_psa_bin_fn_##NAME vo_psa_bins_##NAME[VO_PSA_CB + 1] = {NULL,                     \
                                                                         vo_psa_bin_##NAME##_1,    \
                                                                         vo_psa_bin_##NAME##_2,    \
                                                                         vo_psa_bin_##NAME##_3,    \
                                                                         vo_psa_bin_##NAME##_4,    \
                                                                         vo_psa_bin_##NAME##_5,    \
                                                                         vo_psa_bin_##NAME##_6,    \
                                                                         vo_psa_bin_##NAME##_7,    \
                                                                         vo_psa_bin_##NAME##_8};

VO_DEFINE_PSA_BINS(float, f32, float, f32)
VO_DEFINE_PSA_BINS(double, f64, double, f64)
VO_DEFINE_PSA_BINS(float, f32, uint16_t, f16)
VO_DEFINE_PSA_BINS(float, f32, uint16_t, bf16)

/* Samples computed at a time (a bin has grid_h * grid_w of them; sampling
 * ratio 2 gives 4). */
#define VO_PSA_CHUNK 64

/* Rows [top, bottom] that bin row ph of RoI g can read, clamped to the
 * map's `limit` rows; a RoI with a reversed or NaN extent gets the whole
 * map. Computed in the compute type; it only orders the RoIs, never
 * changes a result. */
static void vo_psa_row_span(const vo_ra_roi *g, int f64, int64_t ph, int64_t limit, int64_t r[2]) {
  double a, b;
  if (f64) {
    a = g->t.f64.start_h + (double)ph * g->t.f64.bin_h;
    b = a + g->t.f64.bin_h;
  } else {
    const float lo = g->t.f32.start_h + (float)ph * g->t.f32.bin_h;
    a = lo;
    b = lo + g->t.f32.bin_h;
  }
  r[0] = 0;
  r[1] = limit - 1;
  if (!(a <= b)) return;
  if (a > 0) r[0] = a >= (double)(limit - 1) ? limit - 1 : (int64_t)a;
  if (b < (double)(limit - 1)) r[1] = b < 0 ? 0 : (int64_t)b + 1;
}

/* What the forward's items share. */
typedef struct vo_psa_items {
  const vo_ps_roi_align_params *q;
  const vo_ra_roi *geo;
  vo_dtype dt;
} vo_psa_items;

/* A chunk of one bin's samples, and a block's sums, in the compute type. */
typedef union vo_psa_samples {
  vo_k_ra_sample_f32 f32[VO_PSA_CHUNK];
  vo_k_ra_sample_f64 f64[VO_PSA_CHUNK];
} vo_psa_samples;
typedef union vo_psa_sums {
  float f32[VO_PSA_CB];
  double f64[VO_PSA_CB];
} vo_psa_sums;

/* Adds samples s[0..n) of nc output channels (planes cs elements apart from
 * x) to their sums. */
static void vo_psa_block(vo_dtype dt, const void *x, int64_t cs, const vo_psa_samples *s, int64_t n,
                         int64_t nc, vo_psa_sums *acc) {
  switch (dt) {
    case VO_F64: vo_psa_bins_f64[nc](x, cs, s->f64, n, acc->f64); break;
    case VO_F16: vo_psa_bins_f16[nc](x, cs, s->f32, n, acc->f32); break;
    case VO_BF16: vo_psa_bins_bf16[nc](x, cs, s->f32, n, acc->f32); break;
    default: vo_psa_bins_f32[nc](x, cs, s->f32, n, acc->f32); break;
  }
}

/* Output element `o` of the channels' sums: the sum c over g's count. */
static void vo_psa_store(vo_dtype dt, void *out, int64_t o, const vo_psa_sums *acc, int64_t c,
                         const vo_ra_roi *g) {
  switch (dt) {
    case VO_F64: ((double *)out)[o] = acc->f64[c] / g->t.f64.count; break;
    case VO_F16: ((uint16_t *)out)[o] = vo_f32_to_f16(acc->f32[c] / g->t.f32.count); break;
    case VO_BF16: ((uint16_t *)out)[o] = vo_f32_to_bf16(acc->f32[c] / g->t.f32.count); break;
    default: ((float *)out)[o] = acc->f32[c] / g->t.f32.count; break;
  }
}

/* Samples [i0, i0 + n) of RoI g's bin (ph, pw), in (iy, ix) order. */
static void vo_psa_samples_of(const vo_roi_align_params *p, const vo_ra_roi *g, int f64, int64_t ph,
                              int64_t pw, int64_t i0, int64_t n, vo_psa_samples *s) {
  const int64_t sh = p->input->stride[2], sw = p->input->stride[3];
  for (int64_t i = 0; i < n; i++) {
    const int64_t iy = (i0 + i) / g->grid_w, ix = (i0 + i) % g->grid_w;
    if (f64)
      vo_k_ra_sample_at_f64(&g->t.f64, p->height, p->width, sh, sw, ph, pw, iy, ix, &s->f64[i]);
    else
      vo_k_ra_sample_at_f32(&g->t.f32, p->height, p->width, sh, sw, ph, pw, iy, ix, &s->f32[i]);
  }
}

/* Prefetches (towards L2) the lines samples s[0..n) read in cout planes
 * cs_bytes apart from x: each sample's top-left and bottom-right corners,
 * whose lines hold all four corners unless the sample straddles a line. */
static void vo_psa_prefetch_samples(const char *x, int64_t cout, int64_t cs_bytes, int64_t es,
                                    const vo_psa_samples *s, int64_t n, int f64) {
  for (int64_t i = 0; i < n; i++) {
    const int64_t *pos = f64 ? s->f64[i].pos : s->f32[i].pos;
    if (pos[0] == VO_K_RA_OUTSIDE) continue;
    const char *a = x + pos[0] * es, *d = x + pos[3] * es;
    for (int64_t c = 0; c < cout; c++, a += cs_bytes, d += cs_bytes) {
      __builtin_prefetch(a, 0, 2);
      __builtin_prefetch(d, 0, 2);
    }
  }
}

/* RoIs whose samples an item computes (and prefetches) before it needs
 * them: their loads are in flight while it computes the RoIs between. */
#define VO_PSA_AHEAD 2

/* Forward of bin b = (ph, pw) of the RoIs order[j0 .. j1) (all of image
 * img, sorted by their bin row's top), for every output channel: the bin's
 * samples are computed once and shared by the channels, each output is
 * the mean of its samples as torchvision's (0 when the grid is empty), and
 * channel_mapping is filled elsewhere. The item reads only the planes
 * c*PH*PW + b of image img. The loads are prefetched ahead of use: a RoI's
 * samples are computed VO_PSA_AHEAD RoIs early and the lines they read
 * prefetched in every plane, so only the lines the samples touch are
 * fetched (43% of the planes' lines for 1,000 proposals at 7x7 with
 * sampling ratio 2; streaming the rows the bins span, as ps_roi_pool does,
 * fetched them all). A bin of more than VO_PSA_CHUNK samples computes them
 * in chunks when it is reached, without prefetching. */
static void vo_psa_item(const void *arg, const int64_t *order, int64_t j0, int64_t j1, int64_t img,
                        int64_t b) {
  const vo_psa_items *it = arg;
  const vo_roi_align_params *p = &it->q->base;
  const vo_view *in = p->input;
  const vo_dtype dt = it->dt;
  const int f64 = dt == VO_F64;
  const int64_t es = (int64_t)vo_dtype_size(dt);
  const int64_t bins = p->pooled_height * p->pooled_width, cout = it->q->channels_out;
  const int64_t ph = b / p->pooled_width, pw = b % p->pooled_width;
  const int64_t cs = bins * in->stride[1];
  const int64_t nblocks = (cout + VO_PSA_CB - 1) / VO_PSA_CB, channels = cout * bins;
  const char *x = (const char *)vo_view_addr(in) + (img * in->stride[0] + b * in->stride[1]) * es;
  void *out = vo_view_addr(p->out);
  vo_psa_samples ring[VO_PSA_AHEAD + 1], chunk;
  /* ring[j % (AHEAD + 1)]: RoI order[j]'s samples, for the RoIs that have
   * at most a chunk of them, from j - AHEAD on */
  for (int64_t j = j0; j < j1 + VO_PSA_AHEAD; j++) {
    if (j < j1) { /* RoI order[j]'s samples, for later */
      const vo_ra_roi *ga = &it->geo[order[j]];
      const int64_t na = ga->grid_h * ga->grid_w;
      if (na > 0 && na <= VO_PSA_CHUNK) {
        vo_psa_samples *sa = &ring[j % (VO_PSA_AHEAD + 1)];
        vo_psa_samples_of(p, ga, f64, ph, pw, 0, na, sa);
        vo_psa_prefetch_samples(x, cout, cs * es, es, sa, na, f64);
      }
    }
    const int64_t jc = j - VO_PSA_AHEAD; /* the RoI computed now */
    if (jc < j0) continue;
    const int64_t k = order[jc];
    const vo_ra_roi *g = &it->geo[k];
    const int64_t ns = g->grid_h * g->grid_w;
    const int64_t o = k * channels + b;
    for (int64_t blk = 0, c0 = 0; blk < nblocks; blk++) {
      const int64_t c1 = cout * (blk + 1) / nblocks;
      vo_psa_sums acc;
      memset(&acc, 0, sizeof acc);
      if (ns <= VO_PSA_CHUNK) {
        vo_psa_block(dt, x + c0 * cs * es, cs, &ring[jc % (VO_PSA_AHEAD + 1)], ns, c1 - c0, &acc);
      } else {
        for (int64_t i0 = 0; i0 < ns; i0 += VO_PSA_CHUNK) {
          const int64_t n1 = ns - i0 < VO_PSA_CHUNK ? ns - i0 : VO_PSA_CHUNK;
          vo_psa_samples_of(p, g, f64, ph, pw, i0, n1, &chunk);
          vo_psa_block(dt, x + c0 * cs * es, cs, &chunk, n1, c1 - c0, &acc);
        }
      }
      for (int64_t c = c0; c < c1; c++) vo_psa_store(dt, out, o + c * bins, &acc, c - c0, g);
      c0 = c1;
    }
  }
}

/* A RoI's sort key for the forward's visiting order. */
typedef struct vo_psa_key {
  int64_t row, k;
} vo_psa_key;

static int vo_psa_key_cmp(const void *a, const void *b) {
  const vo_psa_key *x = a, *y = b;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  return x->k < y->k ? -1 : x->k > y->k;
}

/* The forward: geometry of every RoI (in the call's compute type); per bin
 * row ph, each image's RoIs sorted by the top row of that bin row; then
 * items (image, bin) (split further by RoIs when there are few), each
 * reading its own planes c*PH*PW + b, so the input streams from memory
 * once. Outputs are independent, so every order gives the same bits. */
static vo_status vo_psa_forward(const vo_exec *ex) {
  const vo_ps_roi_align_params *q = &ex->p.ps_roi_align;
  const vo_roi_align_params *p = &q->base;
  const int f64 = ex->dtype == VO_F64;
  const int64_t num_rois = p->rois->shape[0], n = p->batch_size;
  const int64_t ph_count = p->pooled_height, bins = ph_count * p->pooled_width;
  /* geo[K], keys[K], first[n+1], orders[PH][K] (PH*K <= the output's size), cursor[n] */
  const size_t bytes = (size_t)num_rois * (sizeof(vo_ra_roi) + sizeof(vo_psa_key)) +
                       (size_t)(2 * n + 1 + ph_count * num_rois) * sizeof(int64_t);
  char *mem = vo_workspace_alloc(ex->ctx, ex->device, bytes, ex->op_name);
  if (!mem) return VO_ERROR_OUT_OF_MEMORY;
  vo_ra_roi *geo = (vo_ra_roi *)mem;
  vo_psa_key *keys = (vo_psa_key *)(geo + num_rois);
  int64_t *first = (int64_t *)(keys + num_rois), *orders = first + n + 1;
  memset(first, 0, sizeof(int64_t) * (size_t)(n + 1));
  const vo_k_roi_align_args a = vo_roi_align_kernel_args(p, NULL);
  for (int64_t k = 0; k < num_rois; k++) {
    vo_ra_geometry(&a, vo_view_addr(p->rois), k, f64, &geo[k]);
    first[geo[k].batch + 1]++;
  }
  for (int64_t i = 0; i < n; i++) first[i + 1] += first[i];
  /* orders[0]: RoIs grouped by image (stable), cursor[] counting up */
  int64_t *cursor = orders + ph_count * num_rois;
  memcpy(cursor, first, sizeof(int64_t) * (size_t)n);
  for (int64_t k = 0; k < num_rois; k++) orders[cursor[geo[k].batch]++] = k;
  for (int64_t ph = ph_count - 1; ph >= 0; ph--) {
    int64_t *ord = orders + ph * num_rois;
    for (int64_t i = 0; i < n; i++) {
      const int64_t m0 = first[i], m = first[i + 1] - m0;
      for (int64_t j = 0; j < m; j++) {
        const int64_t k = orders[m0 + j]; /* orders[0] is rewritten last */
        int64_t r[2] = {0, 0};
        if (p->height > 0) vo_psa_row_span(&geo[k], f64, ph, p->height, r);
        keys[j] = (vo_psa_key){r[0], k};
      }
      qsort(keys, (size_t)m, sizeof *keys, vo_psa_key_cmp);
      for (int64_t j = 0; j < m; j++) ord[m0 + j] = keys[j].k;
    }
  }
  /* channel_mapping[k, c, ph, pw] = c*PH*PW + ph*PW + pw: the flat index mod C */
  const vo_psa_items arg = {q, geo, ex->dtype};
  vo_ps_forward_items(ex, n, ph_count, p->pooled_width, num_rois, first, orders,
                      (int32_t *)vo_view_addr(q->channel_mapping), q->channels_out * bins,
                      vo_psa_item, &arg);
  vo_workspace_free(ex->ctx, ex->device, mem);
  return VO_OK;
}

/* Backward item of the plain driver (roi_common.h), whose planes are input
 * channels: adds RoI k's contribution to input channel c_in, one [H,W]
 * plane (contiguous, compute type). Exactly one bin of the RoI reads that
 * channel. */
static void vo_psa_backward_item(const vo_exec *ex, const vo_k_roi_align_args *a,
                                 const vo_ra_roi *g, const void *tab, int64_t k, int64_t c_in,
                                 void *plane) {
  const vo_roi_align_params *p = &ex->p.ps_roi_align.base;
  const int64_t bins = p->pooled_height * p->pooled_width, bin = c_in % bins;
  const int64_t c = c_in / bins, ph = bin / p->pooled_width, pw = bin % p->pooled_width;
  const int64_t *s = a->src_stride;
  const double gv = vo_load_host(p->grad, k * s[0] + c * s[1] + ph * s[2] + pw * s[3]);
  const int f64 = ex->dtype == VO_F64;
  const void *bt = vo_ra_bin_table(tab, g, bin, vo_ra_sample_size(f64));
  if (f64)
    vo_k_ra_bin_scatter_f64(plane, p->height, p->width, &g->t.f64, ph, pw, gv, bt);
  else
    vo_k_ra_bin_scatter_f32(plane, p->height, p->width, &g->t.f32, ph, pw, (float)gv, bt);
}

vo_status vo_cpu_ps_roi_align(const vo_exec *ex) {
  const vo_roi_align_params *p = &ex->p.ps_roi_align.base;
  if (p->out->numel == 0) return VO_OK;
  return vo_psa_forward(ex);
}

static vo_status vo_psa_backward_run(const vo_exec *ex, void *acc) {
  const vo_ps_roi_align_params *q = &ex->p.ps_roi_align;
  return vo_ra_drive(ex, &q->base, NULL, ex->dtype == VO_F64, q->channels_out, NULL,
                     vo_psa_backward_item, acc);
}
static vo_status vo_psa_backward_f32(const vo_exec *ex, float *acc) {
  return vo_psa_backward_run(ex, acc);
}
static vo_status vo_psa_backward_f64(const vo_exec *ex, double *acc) {
  return vo_psa_backward_run(ex, acc);
}

vo_status vo_cpu_ps_roi_align_backward(const vo_exec *ex) {
  return vo_roi_backward_into(ex, ex->p.ps_roi_align.base.out, vo_psa_backward_f32,
                              vo_psa_backward_f64);
}
