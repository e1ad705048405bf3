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

/* Forward of RoI k, output channel c: the mean of each bin of input channel
 * (c*PH + ph)*PW + pw (0 for an empty bin), summed row by row. */
#define VO_DEFINE_PSP_FORWARD(T, SUF, NAME, LOAD, STORE)                                          \
  static void vo_psp_forward_rc_##NAME(const vo_ps_roi_pool_params *p, const vo_psp_roi_##SUF *g, \
                                       int64_t k, int64_t c) {                                    \
    const vo_view *in = p->input;                                                                 \
    const int64_t sh = in->stride[2], sw = in->stride[3];                                         \
    const int64_t pooled_h = p->pooled_height, pooled_w = p->pooled_width;                        \
    const int64_t out0 = (k * p->channels_out + c) * pooled_h * pooled_w;                         \
    int32_t *mapping = (int32_t *)p->channel_mapping->data;                                       \
    for (int64_t ph = 0; ph < pooled_h; ph++) {                                                   \
      for (int64_t pw = 0; pw < pooled_w; pw++) {                                                 \
        const int64_t c_in = (c * pooled_h + ph) * pooled_w + pw;                                 \
        const int64_t base = g->batch * in->stride[0] + c_in * in->stride[1];                     \
        int64_t b[4];                                                                             \
        vo_psp_bin_##SUF(p, g, ph, pw, b);                                                        \
        T val = 0;                                                                                \
        if (b[1] > b[0] && b[3] > b[2]) {                                                         \
          for (int64_t y = b[0]; y < b[1]; y++)                                                   \
            for (int64_t x = b[2]; x < b[3]; x++) val += LOAD(base + y * sh + x * sw);            \
          val /= (T)((b[1] - b[0]) * (b[3] - b[2]));                                              \
        }                                                                                         \
        STORE(out0 + ph * pooled_w + pw, val);                                                    \
        mapping[out0 + ph * pooled_w + pw] = (int32_t)c_in;                                       \
      }                                                                                           \
    }                                                                                             \
  }

#define VO_LOAD_F32(i) (((const float *)in->data)[i])
#define VO_LOAD_F64(i) (((const double *)in->data)[i])
#define VO_LOAD_F16(i) vo_f16_to_f32(((const uint16_t *)in->data)[i])
#define VO_LOAD_BF16(i) vo_bf16_to_f32(((const uint16_t *)in->data)[i])
#define VO_STORE_F32(i, v) (((float *)p->out->data)[i] = (v))
#define VO_STORE_F64(i, v) (((double *)p->out->data)[i] = (v))
#define VO_STORE_F16(i, v) (((uint16_t *)p->out->data)[i] = vo_f32_to_f16(v))
#define VO_STORE_BF16(i, v) (((uint16_t *)p->out->data)[i] = vo_f32_to_bf16(v))

VO_DEFINE_PSP_FORWARD(float, f32, f32, VO_LOAD_F32, VO_STORE_F32)
VO_DEFINE_PSP_FORWARD(double, f64, f64, VO_LOAD_F64, VO_STORE_F64)
VO_DEFINE_PSP_FORWARD(float, f32, f16, VO_LOAD_F16, VO_STORE_F16)
VO_DEFINE_PSP_FORWARD(float, f32, bf16, VO_LOAD_BF16, VO_STORE_BF16)

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

/* The driver for one compute type: geometry of every RoI, then the work
 * items: (RoI, output channel) pairs forward; (image, input channel) planes
 * of grad_input backward, each owned by one thread that walks the RoIs in
 * order (bit-identical for any thread count, no atomics). */
#define VO_DEFINE_PSP_DRIVER(T, SUF)                                                            \
  static vo_status vo_psp_run_##SUF(const vo_exec *ex, int backward, T *acc) {                  \
    const vo_ps_roi_pool_params *p = &ex->p.ps_roi_pool;                                        \
    const int64_t num_rois = p->rois->shape[0];                                                 \
    vo_psp_roi_##SUF *geo = vo_workspace_alloc(                                                 \
        ex->ctx, ex->device, (size_t)(num_rois > 0 ? num_rois : 1) * sizeof *geo, ex->op_name); \
    if (!geo) return VO_ERROR_OUT_OF_MEMORY;                                                    \
    for (int64_t k = 0; k < num_rois; k++) vo_psp_geometry_##SUF(p, k, &geo[k]);                \
    if (!backward) {                                                                            \
      const int64_t cout = p->channels_out, items = num_rois * cout;                            \
      const int t = vo_cpu_threads(ex->ctx, items);                                             \
      VO_OMP_FOR(t)                                                                             \
      for (int64_t it = 0; it < items; it++) {                                                  \
        const int64_t k = it / cout, c = it % cout;                                             \
        vo_psp_forward_rc_dispatch_##SUF(ex, p, &geo[k], k, c);                                 \
      }                                                                                         \
    } else {                                                                                    \
      const int64_t planes = p->batch_size * p->channels, hw = p->height * p->width;            \
      const int t = vo_cpu_threads(ex->ctx, planes);                                            \
      VO_OMP_FOR(t)                                                                             \
      for (int64_t pl = 0; pl < planes; pl++) {                                                 \
        const int64_t b = pl / p->channels, c_in = pl % p->channels;                            \
        for (int64_t k = 0; k < num_rois; k++)                                                  \
          if (geo[k].batch == b) vo_psp_backward_rc_##SUF(p, &geo[k], k, c_in, acc + pl * hw);  \
      }                                                                                         \
    }                                                                                           \
    vo_workspace_free(ex->ctx, ex->device, geo);                                                \
    return VO_OK;                                                                               \
  }

static void vo_psp_forward_rc_dispatch_f32(const vo_exec *ex, const vo_ps_roi_pool_params *p,
                                           const vo_psp_roi_f32 *g, int64_t k, int64_t c) {
  switch (ex->dtype) {
    case VO_F16: vo_psp_forward_rc_f16(p, g, k, c); break;
    case VO_BF16: vo_psp_forward_rc_bf16(p, g, k, c); break;
    default: vo_psp_forward_rc_f32(p, g, k, c); break;
  }
}

static void vo_psp_forward_rc_dispatch_f64(const vo_exec *ex, const vo_ps_roi_pool_params *p,
                                           const vo_psp_roi_f64 *g, int64_t k, int64_t c) {
  (void)ex;
  vo_psp_forward_rc_f64(p, g, k, c);
}

VO_DEFINE_PSP_DRIVER(float, f32)
VO_DEFINE_PSP_DRIVER(double, f64)

vo_status vo_cpu_ps_roi_pool(const vo_exec *ex) {
  if (ex->p.ps_roi_pool.out->numel == 0) return VO_OK;
  return ex->dtype == VO_F64 ? vo_psp_run_f64(ex, 0, NULL) : vo_psp_run_f32(ex, 0, NULL);
}

static vo_status vo_psp_backward_f32(const vo_exec *ex, float *acc) {
  return vo_psp_run_f32(ex, 1, acc);
}
static vo_status vo_psp_backward_f64(const vo_exec *ex, double *acc) {
  return vo_psp_run_f64(ex, 1, acc);
}

vo_status vo_cpu_ps_roi_pool_backward(const vo_exec *ex) {
  return vo_roi_backward_into(ex, ex->p.ps_roi_pool.out, vo_psp_backward_f32, vo_psp_backward_f64);
}
