/*
 * CPU kernels for roi_pool (forward, with argmax) and roi_pool_backward,
 * following torchvision's arithmetic (rounded RoI corners, "+1" sizes, bin
 * edges by floor/ceil in the compute type) so results match it exactly.
 */
#include <math.h>
#include <string.h>

#include "cpu/common.h"

#ifdef VISIONOPS_HAVE_OPENMP
#define VO_RP_PRAGMA(x) _Pragma(#x)
#define VO_RP_OMP_FOR(t) VO_RP_PRAGMA(omp parallel for num_threads(t) schedule(static) if ((t) > 1))
#else
#define VO_RP_OMP_FOR(t) (void)(t);
#endif

/* Scaled, rounded RoI corners are kept within +-2^61, so sizes (+1) and bin
 * edges (+ start) stay far from int64 overflow; torchvision converts them to
 * int, which is undefined beyond 2^31. */
#define VO_RP_COORD_LIMIT ((int64_t)1 << 61)

/* One RoI: its image, rounded start corner and bin sizes (compute type). */
#define VO_DEFINE_GEOMETRY(T, SUF, ROUND, FLOOR, CEIL)                                           \
  typedef struct vo_rp_roi_##SUF {                                                               \
    int64_t batch, start_h, start_w;                                                             \
    T bin_h, bin_w;                                                                              \
  } vo_rp_roi_##SUF;                                                                             \
                                                                                                 \
  /* round half away from zero, saturated (inf included) */                                      \
  static int64_t vo_rp_round_##SUF(T v) {                                                        \
    v = ROUND(v);                                                                                \
    if (v >= (T)VO_RP_COORD_LIMIT) return VO_RP_COORD_LIMIT;                                     \
    if (v <= -(T)VO_RP_COORD_LIMIT) return -VO_RP_COORD_LIMIT;                                   \
    return (int64_t)v;                                                                           \
  }                                                                                              \
                                                                                                 \
  static void vo_rp_geometry_##SUF(const vo_roi_pool_params *p, int64_t k, vo_rp_roi_##SUF *g) { \
    const vo_view *r = p->rois;                                                                  \
    const int64_t row = k * r->stride[0], s1 = r->stride[1];                                     \
    const T scale = (T)p->spatial_scale;                                                         \
    g->batch = (int64_t)vo_load_host(r, row);                                                    \
    g->start_w = vo_rp_round_##SUF((T)vo_load_host(r, row + s1) * scale);                        \
    g->start_h = vo_rp_round_##SUF((T)vo_load_host(r, row + 2 * s1) * scale);                    \
    const int64_t end_w = vo_rp_round_##SUF((T)vo_load_host(r, row + 3 * s1) * scale);           \
    const int64_t end_h = vo_rp_round_##SUF((T)vo_load_host(r, row + 4 * s1) * scale);           \
    /* malformed RoIs are 1x1 */                                                                 \
    const int64_t rw = end_w - g->start_w + 1 > 1 ? end_w - g->start_w + 1 : 1;                  \
    const int64_t rh = end_h - g->start_h + 1 > 1 ? end_h - g->start_h + 1 : 1;                  \
    g->bin_h = (T)rh / (T)p->pooled_height;                                                      \
    g->bin_w = (T)rw / (T)p->pooled_width;                                                       \
  }                                                                                              \
                                                                                                 \
  /* Bin i of `bin` (pixels), shifted by start and clamped to [0, size]. */                      \
  static void vo_rp_bin_##SUF(T bin, int64_t i, int64_t start, int64_t size, int64_t *lo,        \
                              int64_t *hi) {                                                     \
    int64_t a = (int64_t)FLOOR((T)i * bin) + start;                                              \
    int64_t b = (int64_t)CEIL((T)(i + 1) * bin) + start;                                         \
    *lo = a < 0 ? 0 : a > size ? size : a;                                                       \
    *hi = b < 0 ? 0 : b > size ? size : b;                                                       \
  }

VO_DEFINE_GEOMETRY(float, f32, roundf, floorf, ceilf)
VO_DEFINE_GEOMETRY(double, f64, round, floor, ceil)

/* Forward of RoI k, channel c, for one storage type; half types (LOAD
 * converts) compare in float. The first non-NaN value starts the maximum,
 * later ones replace it only when strictly greater. */
#define VO_DEFINE_FORWARD_RC(T, SUF, NAME, LOAD, STORE)                                      \
  static void vo_rp_forward_rc_##NAME(const vo_roi_pool_params *p, const vo_rp_roi_##SUF *g, \
                                      int64_t k, int64_t c) {                                \
    const vo_view *in = p->input;                                                            \
    const int64_t sh = in->stride[2], sw = in->stride[3];                                    \
    const int64_t base = g->batch * in->stride[0] + c * in->stride[1];                       \
    const int64_t out0 = (k * p->channels + c) * p->pooled_height * p->pooled_width;         \
    int32_t *am = p->argmax_out->data;                                                       \
    for (int64_t ph = 0; ph < p->pooled_height; ph++) {                                      \
      int64_t h0, h1;                                                                        \
      vo_rp_bin_##SUF(g->bin_h, ph, g->start_h, p->height, &h0, &h1);                        \
      for (int64_t pw = 0; pw < p->pooled_width; pw++) {                                     \
        int64_t w0, w1;                                                                      \
        vo_rp_bin_##SUF(g->bin_w, pw, g->start_w, p->width, &w0, &w1);                       \
        T best = 0;                                                                          \
        int64_t idx = -1;                                                                    \
        if (h1 > h0 && w1 > w0) {                                                            \
          for (int64_t h = h0; h < h1; h++) {                                                \
            for (int64_t w = w0; w < w1; w++) {                                              \
              const T v = LOAD(base + h * sh + w * sw);                                      \
              if (idx < 0 ? !isnan(v) : v > best) {                                          \
                best = v;                                                                    \
                idx = h * p->width + w;                                                      \
              }                                                                              \
            }                                                                                \
          }                                                                                  \
          if (idx < 0) best = (T)NAN; /* every value was NaN */                              \
        }                                                                                    \
        const int64_t o = out0 + ph * p->pooled_width + pw;                                  \
        STORE(o, best);                                                                      \
        am[o] = (int32_t)idx; /* the op layer checked H*W <= 2^31 */                         \
      }                                                                                      \
    }                                                                                        \
  }

#define VO_LOAD_F32(i) (((const float *)in->data)[i])
#define VO_LOAD_F64(i) (((const double *)in->data)[i])
#define VO_LOAD_F16(i) vo_f16_to_f32(((const uint16_t *)in->data)[i])
#define VO_LOAD_BF16(i) vo_bf16_to_f32(((const uint16_t *)in->data)[i])
#define VO_STORE_F32(i, v) (((float *)p->out->data)[i] = (v))
#define VO_STORE_F64(i, v) (((double *)p->out->data)[i] = (v))
#define VO_STORE_F16(i, v) (((uint16_t *)p->out->data)[i] = vo_f32_to_f16(v))
#define VO_STORE_BF16(i, v) (((uint16_t *)p->out->data)[i] = vo_f32_to_bf16(v))

VO_DEFINE_FORWARD_RC(float, f32, f32, VO_LOAD_F32, VO_STORE_F32)
VO_DEFINE_FORWARD_RC(double, f64, f64, VO_LOAD_F64, VO_STORE_F64)
VO_DEFINE_FORWARD_RC(float, f32, f16, VO_LOAD_F16, VO_STORE_F16)
VO_DEFINE_FORWARD_RC(float, f32, bf16, VO_LOAD_BF16, VO_STORE_BF16)

vo_status vo_cpu_roi_pool(const vo_exec *ex) {
  const vo_roi_pool_params *p = &ex->p.roi_pool;
  if (p->out->numel == 0) return VO_OK;
  const int64_t items = p->rois->shape[0] * p->channels;
  const int t = vo_cpu_threads(ex->ctx, items);
  const vo_dtype dt = ex->dtype;
  VO_RP_OMP_FOR(t)
  for (int64_t it = 0; it < items; it++) {
    const int64_t k = it / p->channels, c = it % p->channels;
    if (dt == VO_F64) {
      vo_rp_roi_f64 g;
      vo_rp_geometry_f64(p, k, &g);
      vo_rp_forward_rc_f64(p, &g, k, c);
    } else {
      vo_rp_roi_f32 g;
      vo_rp_geometry_f32(p, k, &g);
      if (dt == VO_F16)
        vo_rp_forward_rc_f16(p, &g, k, c);
      else if (dt == VO_BF16)
        vo_rp_forward_rc_bf16(p, &g, k, c);
      else
        vo_rp_forward_rc_f32(p, &g, k, c);
    }
  }
  return VO_OK;
}

/* Backward: grad_input[b, c, argmax] += grad. Work items are (image,
 * channel) planes, each owned by one thread that zeroes its plane and walks
 * the RoIs of its image in RoI order, (ph, pw) within each: the sums are
 * those of torchvision's serial loop, for any thread count, with no atomics.
 * `first`/`order` list the RoIs of image b as order[first[b] .. first[b+1]). */
#define VO_DEFINE_BACKWARD_PLANE(T, SUF)                                                    \
  static void vo_rp_backward_plane_##SUF(const vo_roi_pool_params *p, const int64_t *first, \
                                         const int64_t *order, int64_t pl, T *plane) {      \
    const vo_view *gr = p->grad, *am = p->argmax;                                           \
    const int32_t *amd = am->data;                                                          \
    const int64_t b = pl / p->channels, c = pl % p->channels;                               \
    memset(plane, 0, sizeof(T) * (size_t)(p->height * p->width));                           \
    for (int64_t j = first[b]; j < first[b + 1]; j++) {                                     \
      const int64_t k = order[j];                                                           \
      const int64_t gb = k * gr->stride[0] + c * gr->stride[1];                             \
      const int64_t ab = k * am->stride[0] + c * am->stride[1];                             \
      for (int64_t ph = 0; ph < p->pooled_height; ph++) {                                   \
        for (int64_t pw = 0; pw < p->pooled_width; pw++) {                                  \
          const int32_t a = amd[ab + ph * am->stride[2] + pw * am->stride[3]];              \
          if (a < 0) continue;                                                              \
          plane[a] += (T)vo_load_host(gr, gb + ph * gr->stride[2] + pw * gr->stride[3]);    \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
  }

VO_DEFINE_BACKWARD_PLANE(float, f32)
VO_DEFINE_BACKWARD_PLANE(double, f64)

vo_status vo_cpu_roi_pool_backward(const vo_exec *ex) {
  const vo_roi_pool_params *p = &ex->p.roi_pool;
  if (p->out->numel == 0) return VO_OK;
  const int64_t n = p->batch_size, k_count = p->rois->shape[0];
  const int64_t hw = p->height * p->width, planes = n * p->channels;
  const int half = ex->dtype == VO_F16 || ex->dtype == VO_BF16;
  /* RoIs grouped by image (a stable counting sort); for half types, then a
   * float32 copy of grad_input, so no partial sum is rounded to 16 bits. */
  size_t lists = ((size_t)n + 1 + (size_t)k_count) * sizeof(int64_t);
  size_t acc_bytes = 0;
  if (half) {
    if ((uint64_t)p->out->numel > SIZE_MAX / sizeof(float))
      return vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: grad_input too large for a float32 workspace",
                     ex->op_name);
    acc_bytes = (size_t)p->out->numel * sizeof(float);
  }
  int64_t *first = vo_workspace_alloc(ex->ctx, ex->device, lists, ex->op_name);
  if (!first) return VO_ERROR_OUT_OF_MEMORY;
  int64_t *order = first + n + 1;
  float *acc = NULL;
  if (half) {
    acc = vo_workspace_alloc(ex->ctx, ex->device, acc_bytes, ex->op_name);
    if (!acc) {
      vo_workspace_free(ex->ctx, ex->device, first);
      return VO_ERROR_OUT_OF_MEMORY;
    }
  }
  memset(first, 0, sizeof(int64_t) * (size_t)(n + 1));
  for (int64_t k = 0; k < k_count; k++) {
    const int64_t b = (int64_t)vo_load_host(p->rois, k * p->rois->stride[0]);
    first[b + 1]++;
  }
  for (int64_t b = 0; b < n; b++) first[b + 1] += first[b];
  /* order[] filled with a moving cursor per image; first[] is restored after */
  for (int64_t k = 0; k < k_count; k++) {
    const int64_t b = (int64_t)vo_load_host(p->rois, k * p->rois->stride[0]);
    order[first[b]++] = k;
  }
  for (int64_t b = n; b > 0; b--) first[b] = first[b - 1];
  first[0] = 0;

  const int t = vo_cpu_threads(ex->ctx, planes);
  const vo_dtype dt = ex->dtype;
  VO_RP_OMP_FOR(t)
  for (int64_t pl = 0; pl < planes; pl++) {
    if (!acc) {
      if (dt == VO_F64)
        vo_rp_backward_plane_f64(p, first, order, pl, (double *)p->out->data + pl * hw);
      else
        vo_rp_backward_plane_f32(p, first, order, pl, (float *)p->out->data + pl * hw);
    } else {
      float *plane = acc + pl * hw;
      vo_rp_backward_plane_f32(p, first, order, pl, plane);
      uint16_t *o = (uint16_t *)p->out->data + pl * hw;
      if (dt == VO_F16)
        for (int64_t i = 0; i < hw; i++) o[i] = vo_f32_to_f16(plane[i]);
      else
        for (int64_t i = 0; i < hw; i++) o[i] = vo_f32_to_bf16(plane[i]);
    }
  }
  if (acc) vo_workspace_free(ex->ctx, ex->device, acc);
  vo_workspace_free(ex->ctx, ex->device, first);
  return VO_OK;
}
