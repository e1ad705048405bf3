// RoI operators of the CUDA backend: the device-side checks of rois and
// argmax, scalar helpers, and every per-element computation of roi_pool
// (forward, atomic backward, gather backward) as __host__ __device__
// functions, in the CPU kernel's arithmetic order, so a host test can run
// exactly the GPU's index math against the CPU backend. roi_align's and
// multi_scale_roi_align's math is the portable kernels/roi_align.h and
// kernels/multi_scale_roi_align.h.
#ifndef VISIONOPS_CUDA_ROI_COMMON_CUH
#define VISIONOPS_CUDA_ROI_COMMON_CUH

#include <math.h>
#include <string.h>

#include "cuda/common.cuh"

// Validates rois [K,5] on the device: every coordinate finite and every
// batch index an integer in [0, batch_size). The first bad entry in row-major
// order is reported with the CPU check's message (vo_check_rois_data), after
// a synchronisation of the context's stream. Call before writing any output.
vo_status vo_cuda_check_rois(const vo_exec *ex, const vo_view *rois, int64_t batch_size,
                             const char *arg_name);

// Validates a roi_pool argmax [K,C,PH,PW] (int32, any strides) on the
// device: every value -1 or in [0, hw), reported as the CPU check does.
vo_status vo_cuda_check_argmax(const vo_exec *ex, const vo_view *argmax, int64_t hw,
                               const char *arg_name);

// ------------------------------------------------------------ scalar helpers

#define VO_CR_HD __host__ __device__ __forceinline__

VO_CR_HD float vo_cr_ceil(float v) { return ceilf(v); }
VO_CR_HD double vo_cr_ceil(double v) { return ceil(v); }
VO_CR_HD float vo_cr_floor(float v) { return floorf(v); }
VO_CR_HD double vo_cr_floor(double v) { return floor(v); }
VO_CR_HD float vo_cr_round(float v) { return roundf(v); }  // half away from zero
VO_CR_HD double vo_cr_round(double v) { return round(v); }
VO_CR_HD bool vo_cr_finite(double v) { return v == v && v - v == 0; }

// Storage element -> compute type, on the host as on the device.
VO_CR_HD float vo_cr_load(const float *p, int64_t i) { return p[i]; }
VO_CR_HD double vo_cr_load(const double *p, int64_t i) { return p[i]; }
VO_CR_HD float vo_cr_load(const __half *p, int64_t i) { return __half2float(p[i]); }
VO_CR_HD float vo_cr_load(const __nv_bfloat16 *p, int64_t i) { return __bfloat162float(p[i]); }

// Any floating view element as double (rois: the CPU reads them as double).
VO_CR_HD double vo_cr_load_double(const vo_cuda_view &v, int64_t off) {
  switch (v.dtype) {
    case VO_F64: return static_cast<const double *>(v.data)[off];
    case VO_F16: return (double)__half2float(static_cast<const __half *>(v.data)[off]);
    case VO_BF16: return (double)__bfloat162float(static_cast<const __nv_bfloat16 *>(v.data)[off]);
    default: return (double)static_cast<const float *>(v.data)[off];
  }
}

// The fast backward's accumulation: atomic on the device, plain on the host
// (where the test runs it serially in index order).
VO_CR_HD void vo_cr_add(float *p, float v) {
#ifdef __CUDA_ARCH__
  atomicAdd(p, v);
#else
  *p += v;
#endif
}
VO_CR_HD void vo_cr_add(double *p, double v) {
#ifdef __CUDA_ARCH__
  atomicAdd(p, v);  // native from sm_60; we build for sm_75 and newer
#else
  *p += v;
#endif
}

// Half-type gradients accumulated in float32 are rounded once at the end.
template <typename S>
__global__ void vo_cr_convert_kernel(const float *acc, int64_t n, S *out) {
  VO_CUDA_GRID_STRIDE(i, n) vo_cuda_store(out, i, acc[i]);
}

// The context's bound on temporary memory.
inline size_t vo_cr_workspace_limit(const vo_exec *ex) {
  return ex->ctx->workspace_limit ? ex->ctx->workspace_limit : VO_DEFAULT_WORKSPACE_LIMIT;
}

// ------------------------------------------------------------ roi_pool

struct vo_crp_args {
  double spatial_scale;
  int64_t pooled_height, pooled_width;
  int64_t batch_size, channels, height, width;
};

inline vo_crp_args vo_crp_args_of(const vo_roi_pool_params *p) {
  vo_crp_args a;
  a.spatial_scale = p->spatial_scale;
  a.pooled_height = p->pooled_height;
  a.pooled_width = p->pooled_width;
  a.batch_size = p->batch_size;
  a.channels = p->channels;
  a.height = p->height;
  a.width = p->width;
  return a;
}

// The CPU's VO_RP_COORD_LIMIT: rounded corners saturate at +-2^61.
#define VO_CRP_COORD_LIMIT ((int64_t)1 << 61)

template <typename T>
struct vo_crp_roi {
  int64_t batch, start_h, start_w;
  T bin_h, bin_w;
};

template <typename T>
VO_CR_HD int64_t vo_crp_round(T v) {
  v = vo_cr_round(v);
  if (v >= (T)VO_CRP_COORD_LIMIT) return VO_CRP_COORD_LIMIT;
  if (v <= -(T)VO_CRP_COORD_LIMIT) return -VO_CRP_COORD_LIMIT;
  if (!(v == v)) return 0;  // not reached for checked rois; avoids UB
  return (int64_t)v;
}

// vo_rp_geometry of cpu/roi_pool.c; batch -1 for a bad batch index.
template <typename T>
VO_CR_HD void vo_crp_geometry(const vo_crp_args &a, const vo_cuda_view &rois, int64_t k,
                              vo_crp_roi<T> *g) {
  const int64_t row = k * rois.stride[0], s1 = rois.stride[1];
  const T scale = (T)a.spatial_scale;
  const double b = vo_cr_load_double(rois, row);
  g->batch = (b >= 0 && b < (double)a.batch_size) ? (int64_t)b : -1;
  g->start_w = vo_crp_round<T>((T)vo_cr_load_double(rois, row + s1) * scale);
  g->start_h = vo_crp_round<T>((T)vo_cr_load_double(rois, row + 2 * s1) * scale);
  const int64_t end_w = vo_crp_round<T>((T)vo_cr_load_double(rois, row + 3 * s1) * scale);
  const int64_t end_h = vo_crp_round<T>((T)vo_cr_load_double(rois, row + 4 * s1) * scale);
  const int64_t rw = end_w - g->start_w + 1 > 1 ? end_w - g->start_w + 1 : 1;
  const int64_t rh = end_h - g->start_h + 1 > 1 ? end_h - g->start_h + 1 : 1;
  g->bin_h = (T)rh / (T)a.pooled_height;
  g->bin_w = (T)rw / (T)a.pooled_width;
}

// Bin i's pixel range [lo, hi) along one axis, clamped to [0, size].
template <typename T>
VO_CR_HD void vo_crp_bin(T bin, int64_t i, int64_t start, int64_t size, int64_t *lo, int64_t *hi) {
  const int64_t a = (int64_t)vo_cr_floor((T)i * bin) + start;
  const int64_t b = (int64_t)vo_cr_ceil((T)(i + 1) * bin) + start;
  *lo = a < 0 ? 0 : a > size ? size : a;
  *hi = b < 0 ? 0 : b > size ? size : b;
}

// Output element `index`: the bin's maximum (the first non-NaN value starts
// it, a strictly greater one replaces it) and its h*W + w, or 0 and -1 for an
// empty bin, NaN and -1 for a bin of NaN only.
template <typename S>
VO_CR_HD typename vo_cuda_compute<S>::type vo_crp_forward_at(const vo_crp_args &a,
                                                             const vo_cuda_view &in,
                                                             const vo_cuda_view &rois,
                                                             int64_t index, int32_t *argmax) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t PH = a.pooled_height, PW = a.pooled_width;
  const int64_t pw = index % PW;
  int64_t t = index / PW;
  const int64_t ph = t % PH;
  t /= PH;
  const int64_t c = t % a.channels;
  const int64_t k = t / a.channels;
  vo_crp_roi<T> g;
  vo_crp_geometry<T>(a, rois, k, &g);
  *argmax = -1;
  if (g.batch < 0) return (T)0;
  int64_t h0, h1, w0, w1;
  vo_crp_bin<T>(g.bin_h, ph, g.start_h, a.height, &h0, &h1);
  vo_crp_bin<T>(g.bin_w, pw, g.start_w, a.width, &w0, &w1);
  if (!(h1 > h0 && w1 > w0)) return (T)0;
  const S *x = static_cast<const S *>(in.data);
  const int64_t base = g.batch * in.stride[0] + c * in.stride[1];
  T best = 0;
  int64_t idx = -1;
  for (int64_t h = h0; h < h1; h++) {
    for (int64_t w = w0; w < w1; w++) {
      const T v = vo_cr_load(x, base + h * in.stride[2] + w * in.stride[3]);
      if (idx < 0 ? v == v : v > best) {
        best = v;
        idx = h * a.width + w;
      }
    }
  }
  if (idx < 0) best = (T)NAN;
  *argmax = (int32_t)idx;
  return best;
}

// Fast backward of grad element `index`: grad_input[b, c, argmax] += g.
template <typename S, typename A>
VO_CR_HD void vo_crp_scatter_at(const vo_crp_args &a, const vo_cuda_view &grad,
                                const vo_cuda_view &argmax, const vo_cuda_view &rois, int64_t index,
                                A *acc) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t PH = a.pooled_height, PW = a.pooled_width;
  const int64_t pw = index % PW;
  int64_t t = index / PW;
  const int64_t ph = t % PH;
  t /= PH;
  const int64_t c = t % a.channels;
  const int64_t k = t / a.channels;
  const int32_t am =
      static_cast<const int32_t *>(argmax.data)[vo_cuda_offset(argmax, k, c, ph, pw)];
  const int64_t hw = a.height * a.width;
  if (am < 0 || (int64_t)am >= hw) return;
  const double b = vo_cr_load_double(rois, k * rois.stride[0]);
  if (!(b >= 0 && b < (double)a.batch_size)) return;
  const T gv = vo_cr_load(static_cast<const S *>(grad.data), vo_cuda_offset(grad, k, c, ph, pw));
  vo_cr_add(acc + ((int64_t)b * a.channels + c) * hw + am, (A)gv);
}

// 1 when argmax entry `index` is -1 or lies inside its own bin (what the
// forward writes): then the gather may look at the bins covering a pixel
// only. Any other valid index sends the gather over every bin.
template <typename T>
VO_CR_HD bool vo_crp_argmax_in_bin(const vo_crp_args &a, const vo_cuda_view &argmax,
                                   const vo_cuda_view &rois, int64_t index) {
  const int64_t PH = a.pooled_height, PW = a.pooled_width;
  const int64_t pw = index % PW;
  int64_t t = index / PW;
  const int64_t ph = t % PH;
  t /= PH;
  const int64_t c = t % a.channels;
  const int64_t k = t / a.channels;
  const int32_t am =
      static_cast<const int32_t *>(argmax.data)[vo_cuda_offset(argmax, k, c, ph, pw)];
  if (am < 0) return true;
  vo_crp_roi<T> g;
  vo_crp_geometry<T>(a, rois, k, &g);
  int64_t h0, h1, w0, w1;
  vo_crp_bin<T>(g.bin_h, ph, g.start_h, a.height, &h0, &h1);
  vo_crp_bin<T>(g.bin_w, pw, g.start_w, a.width, &w0, &w1);
  const int64_t y = am / a.width, x = am % a.width;
  return y >= h0 && y < h1 && x >= w0 && x < w1;
}

// Deterministic backward: grad_input element `index` ([N,C,H,W]) sums the
// gradients of the bins whose argmax is this pixel, in (RoI, ph, pw) order
// as the CPU does. With `in_bins` (every argmax inside its bin) only bins
// covering the pixel are looked at.
template <typename S>
VO_CR_HD typename vo_cuda_compute<S>::type vo_crp_gather_at(
    const vo_crp_args &a, const vo_cuda_view &grad, const vo_cuda_view &argmax,
    const vo_cuda_view &rois, int64_t num_rois, bool in_bins, int64_t index) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t x = index % a.width;
  int64_t t = index / a.width;
  const int64_t y = t % a.height;
  t /= a.height;
  const int64_t c = t % a.channels;
  const int64_t b = t / a.channels;
  const int32_t target = (int32_t)(y * a.width + x);
  const int32_t *am = static_cast<const int32_t *>(argmax.data);
  const S *gd = static_cast<const S *>(grad.data);
  const int64_t PH = a.pooled_height, PW = a.pooled_width;
  T acc = 0;
  for (int64_t k = 0; k < num_rois; k++) {
    const double bk = vo_cr_load_double(rois, k * rois.stride[0]);
    if (!(bk >= (double)b && bk < (double)(b + 1))) continue;
    int64_t ph0 = 0, ph1 = PH, pw0 = 0, pw1 = PW;
    if (in_bins) {
      // bins are monotone in ph (pw): those covering y (x) are contiguous
      vo_crp_roi<T> g;
      vo_crp_geometry<T>(a, rois, k, &g);
      ph0 = PH, ph1 = 0, pw0 = PW, pw1 = 0;
      for (int64_t ph = 0; ph < PH; ph++) {
        int64_t lo, hi;
        vo_crp_bin<T>(g.bin_h, ph, g.start_h, a.height, &lo, &hi);
        if (y >= lo && y < hi) {
          if (ph < ph0) ph0 = ph;
          ph1 = ph + 1;
        }
      }
      if (ph0 >= ph1) continue;
      for (int64_t pw = 0; pw < PW; pw++) {
        int64_t lo, hi;
        vo_crp_bin<T>(g.bin_w, pw, g.start_w, a.width, &lo, &hi);
        if (x >= lo && x < hi) {
          if (pw < pw0) pw0 = pw;
          pw1 = pw + 1;
        }
      }
    }
    for (int64_t ph = ph0; ph < ph1; ph++)
      for (int64_t pw = pw0; pw < pw1; pw++)
        if (am[vo_cuda_offset(argmax, k, c, ph, pw)] == target)
          acc += vo_cr_load(gd, vo_cuda_offset(grad, k, c, ph, pw));
  }
  return acc;
}

#endif  // VISIONOPS_CUDA_ROI_COMMON_CUH
