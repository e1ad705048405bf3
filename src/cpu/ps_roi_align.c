/*
 * CPU kernels for ps_roi_align (forward, with channel_mapping) and
 * ps_roi_align_backward. The geometry, bilinear samples and sample tables
 * are roi_align's (aligned, see cpu/roi_common.h); only the channel a bin
 * reads differs: output channel c, bin (ph, pw) reads input channel
 * (c*PH + ph)*PW + pw. A RoI whose adaptive grid is empty gives 0 (the
 * shared geometry divides by max(count, 1)), where torchvision gives NaN.
 */
#include <math.h>
#include <string.h>

#include "cpu/roi_common.h"

/* Forward of RoI k, output channel c, for one storage type; also writes the
 * channel_mapping entries of those bins. Half types compute in float. */
#define VO_DEFINE_PSA_FORWARD(T, SUF, NAME, STORE)                                                \
  static void vo_psa_forward_rc_##NAME(const vo_ps_roi_align_params *q, const vo_ra_roi_##SUF *g, \
                                       const vo_ra_sample_##SUF *tab, int64_t k, int64_t c) {     \
    const vo_roi_align_params *p = &q->base;                                                      \
    const vo_view *in = p->input;                                                                 \
    const int64_t pooled_h = p->pooled_height, pooled_w = p->pooled_width;                        \
    const int64_t out0 = (k * q->channels_out + c) * pooled_h * pooled_w;                         \
    int32_t *mapping = (int32_t *)q->channel_mapping->data;                                       \
    for (int64_t ph = 0; ph < pooled_h; ph++) {                                                   \
      for (int64_t pw = 0; pw < pooled_w; pw++) {                                                 \
        const int64_t b = ph * pooled_w + pw, c_in = c * pooled_h * pooled_w + b;                 \
        const int64_t base = g->batch * in->stride[0] + c_in * in->stride[1];                     \
        STORE(out0 + b, vo_ra_bin_mean_##NAME(p, g, VO_RA_BIN_TABLE(tab, g, b), ph, pw, base));   \
        mapping[out0 + b] = (int32_t)c_in;                                                        \
      }                                                                                           \
    }                                                                                             \
  }

VO_DEFINE_PSA_FORWARD(float, f32, f32, VO_STORE_F32)
VO_DEFINE_PSA_FORWARD(double, f64, f64, VO_STORE_F64)
VO_DEFINE_PSA_FORWARD(float, f32, f16, VO_STORE_F16)
VO_DEFINE_PSA_FORWARD(float, f32, bf16, VO_STORE_BF16)

/* Backward: adds RoI k's contribution to input channel c_in, one [H,W]
 * plane (contiguous, compute type). Exactly one bin of the RoI reads that
 * channel; its samples are added in (iy, ix) and corner order, as
 * torchvision's serial kernel does. */
#define VO_DEFINE_PSA_BACKWARD(T, SUF)                                                            \
  static void vo_psa_backward_rc_##SUF(const vo_ps_roi_align_params *q, const vo_ra_roi_##SUF *g, \
                                       const vo_ra_sample_##SUF *tab, int64_t k, int64_t c_in,    \
                                       T *plane) {                                                \
    const vo_roi_align_params *p = &q->base;                                                      \
    const vo_view *gr = p->grad;                                                                  \
    const int64_t bins = p->pooled_height * p->pooled_width, bin = c_in % bins;                   \
    const int64_t c = c_in / bins, ph = bin / p->pooled_width, pw = bin % p->pooled_width;        \
    const T gv = (T)vo_load_host(                                                                 \
        gr, k * gr->stride[0] + c * gr->stride[1] + ph * gr->stride[2] + pw * gr->stride[3]);     \
    vo_ra_bin_scatter_##SUF(p, g, VO_RA_BIN_TABLE(tab, g, bin), ph, pw, gv, plane);               \
  }

VO_DEFINE_PSA_BACKWARD(float, f32)
VO_DEFINE_PSA_BACKWARD(double, f64)

/* Work items for the plain driver (roi_common.h). */
static void vo_psa_forward_rc_dispatch_f32(const vo_exec *ex, const vo_ra_roi_f32 *g,
                                           const vo_ra_sample_f32 *tab, int64_t k, int64_t c) {
  const vo_ps_roi_align_params *q = &ex->p.ps_roi_align;
  switch (ex->dtype) {
    case VO_F16: vo_psa_forward_rc_f16(q, g, tab, k, c); break;
    case VO_BF16: vo_psa_forward_rc_bf16(q, g, tab, k, c); break;
    default: vo_psa_forward_rc_f32(q, g, tab, k, c); break;
  }
}

static void vo_psa_forward_rc_dispatch_f64(const vo_exec *ex, const vo_ra_roi_f64 *g,
                                           const vo_ra_sample_f64 *tab, int64_t k, int64_t c) {
  vo_psa_forward_rc_f64(&ex->p.ps_roi_align, g, tab, k, c);
}

/* Forward items are (RoI, output channel) pairs; backward planes are input
 * channels (roi_common.h's driver). */
#define VO_DEFINE_PSA_RUN(T, SUF)                                                                \
  static void vo_psa_backward_item_##SUF(const vo_exec *ex, const vo_ra_roi_##SUF *g,            \
                                         const vo_ra_sample_##SUF *tab, int64_t k, int64_t c_in, \
                                         T *plane) {                                             \
    vo_psa_backward_rc_##SUF(&ex->p.ps_roi_align, g, tab, k, c_in, plane);                       \
  }                                                                                              \
  static vo_status vo_psa_run_##SUF(const vo_exec *ex, int backward, T *acc) {                   \
    const vo_ps_roi_align_params *q = &ex->p.ps_roi_align;                                       \
    return vo_ra_drive_##SUF(ex, &q->base, q->channels_out, vo_psa_forward_rc_dispatch_##SUF,    \
                             backward ? vo_psa_backward_item_##SUF : NULL, acc);                 \
  }
VO_DEFINE_PSA_RUN(float, f32)
VO_DEFINE_PSA_RUN(double, f64)

vo_status vo_cpu_ps_roi_align(const vo_exec *ex) {
  const vo_roi_align_params *p = &ex->p.ps_roi_align.base;
  if (p->out->numel == 0) return VO_OK;
  return ex->dtype == VO_F64 ? vo_psa_run_f64(ex, 0, NULL) : vo_psa_run_f32(ex, 0, NULL);
}

static vo_status vo_psa_backward_f32(const vo_exec *ex, float *acc) {
  return vo_psa_run_f32(ex, 1, acc);
}
static vo_status vo_psa_backward_f64(const vo_exec *ex, double *acc) {
  return vo_psa_run_f64(ex, 1, acc);
}

vo_status vo_cpu_ps_roi_align_backward(const vo_exec *ex) {
  return vo_roi_backward_into(ex, ex->p.ps_roi_align.base.out, vo_psa_backward_f32,
                              vo_psa_backward_f64);
}
