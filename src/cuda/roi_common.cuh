// RoI operators of the CUDA backend: every per-element computation of
// roi_align and
// multi_scale_roi_align (forward, atomic backward, gather backward) as
// __host__ __device__ functions, in the CPU kernels' arithmetic order, so a
// host test can run exactly the GPU's index math against the CPU backend.
#ifndef VISIONOPS_CUDA_ROI_COMMON_CUH
#define VISIONOPS_CUDA_ROI_COMMON_CUH

#include <math.h>
#include <string.h>

#include "cuda/common.cuh"

// ------------------------------------------------------------ scalar helpers

#define VO_CR_HD __host__ __device__ __forceinline__

VO_CR_HD float vo_cr_ceil(float v) { return ceilf(v); }
VO_CR_HD double vo_cr_ceil(double v) { return ceil(v); }
VO_CR_HD float vo_cr_floor(float v) { return floorf(v); }
VO_CR_HD double vo_cr_floor(double v) { return floor(v); }
VO_CR_HD float vo_cr_round(float v) { return roundf(v); }  // half away from zero
VO_CR_HD double vo_cr_round(double v) { return round(v); }
VO_CR_HD float vo_cr_sqrt(float v) { return sqrtf(v); }
VO_CR_HD double vo_cr_sqrt(double v) { return sqrt(v); }
VO_CR_HD float vo_cr_log2(float v) { return log2f(v); }
VO_CR_HD double vo_cr_log2(double v) { return log2(v); }
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

// Unit roundoff of the compute type (bounds the sample positions' error).
template <typename T>
struct vo_cr_eps {
  static constexpr double value = 1.0 / 16777216.0;  // 2^-24
};
template <>
struct vo_cr_eps<double> {
  static constexpr double value = 1.0 / 9007199254740992.0;  // 2^-53
};

// ------------------------------------------------------------ roi_align

// Everything of vo_roi_align_params a kernel needs, by value.
struct vo_cra_args {
  double spatial_scale;
  int64_t pooled_height, pooled_width, sampling_ratio;
  int aligned;
  int64_t batch_size, channels, height, width;
};

inline vo_cra_args vo_cra_args_of(const vo_roi_align_params *p) {
  vo_cra_args a;
  a.spatial_scale = p->spatial_scale;
  a.pooled_height = p->pooled_height;
  a.pooled_width = p->pooled_width;
  a.sampling_ratio = p->sampling_ratio;
  a.aligned = p->aligned;
  a.batch_size = p->batch_size;
  a.channels = p->channels;
  a.height = p->height;
  a.width = p->width;
  return a;
}

// Largest per-RoI grid along one axis, as the CPU's VO_RA_MAX_GRID.
#define VO_CRA_MAX_GRID ((int64_t)2147483647)

VO_CR_HD int64_t vo_cra_grid(double v) {
  if (!(v > 0)) return 0;
  if (v >= (double)VO_CRA_MAX_GRID) return VO_CRA_MAX_GRID;
  return (int64_t)v;
}

template <typename T>
struct vo_cra_roi {
  T start_h, start_w, bin_h, bin_w, count;
  int64_t grid_h, grid_w, batch;
};

// RoI k's geometry: vo_ra_roi_geometry of cpu/roi_common.h, step for step.
// batch is -1 when rois[k, 0] is not a batch index (the op never runs then;
// kernels treat such a RoI as empty rather than read out of bounds).
template <typename T>
VO_CR_HD void vo_cra_geometry(const vo_cra_args &a, const vo_cuda_view &rois, int64_t k,
                              vo_cra_roi<T> *g) {
  const int64_t row = k * rois.stride[0], s1 = rois.stride[1];
  const T scale = (T)a.spatial_scale;
  const T off = a.aligned ? (T)0.5 : (T)0;
  const double b = vo_cr_load_double(rois, row);
  g->batch = (b >= 0 && b < (double)a.batch_size) ? (int64_t)b : -1;
  const T sw = (T)vo_cr_load_double(rois, row + s1) * scale - off;
  const T sh = (T)vo_cr_load_double(rois, row + 2 * s1) * scale - off;
  const T ew = (T)vo_cr_load_double(rois, row + 3 * s1) * scale - off;
  const T eh = (T)vo_cr_load_double(rois, row + 4 * s1) * scale - off;
  T rw = ew - sw, rh = eh - sh;
  if (!a.aligned) {
    rw = rw < (T)1 ? (T)1 : rw;
    rh = rh < (T)1 ? (T)1 : rh;
  }
  g->start_h = sh;
  g->start_w = sw;
  g->bin_h = rh / (T)a.pooled_height;
  g->bin_w = rw / (T)a.pooled_width;
  const int64_t sr = a.sampling_ratio > VO_CRA_MAX_GRID ? VO_CRA_MAX_GRID : a.sampling_ratio;
  g->grid_h = sr > 0 ? sr : vo_cra_grid((double)vo_cr_ceil(rh / (T)a.pooled_height));
  g->grid_w = sr > 0 ? sr : vo_cra_grid((double)vo_cr_ceil(rw / (T)a.pooled_width));
  const int64_t n = g->grid_h * g->grid_w;
  g->count = (T)(n > 1 ? n : 1);
}

// One axis of a bilinear sample: position start + p*bin + (i + 0.5)*bin/grid
// on an axis of `size` pixels. A sample is in the map when both axes are
// valid; its corner weights are products of the axes' h and l.
template <typename T>
struct vo_cra_axis {
  int64_t lo, hi;
  T l, h;
  bool valid;
};

template <typename T>
VO_CR_HD vo_cra_axis<T> vo_cra_axis_at(T start, T bin, int64_t grid, int64_t p, int64_t i,
                                       int64_t size) {
  vo_cra_axis<T> r;
  T y = start + (T)p * bin + ((T)i + (T)0.5) * bin / (T)grid;
  // negated range test: NaN positions count as outside
  r.valid = size > 0 && y >= (T)-1 && y <= (T)size;
  r.lo = r.hi = 0;
  r.l = r.h = 0;
  if (!r.valid) return r;
  if (y <= 0) y = 0;
  r.lo = (int64_t)y;
  if (r.lo >= size - 1) {
    r.hi = r.lo = size - 1;
    y = (T)r.lo;
  } else {
    r.hi = r.lo + 1;
  }
  r.l = y - (T)r.lo;
  r.h = (T)1 - r.l;
  return r;
}

// Output element `index` of roi_align ([K,C,PH,PW] row-major): the mean of
// the bin's bilinear samples, accumulated as vo_ra_bin_mean does.
template <typename S>
VO_CR_HD typename vo_cuda_compute<S>::type vo_cra_forward_at(const vo_cra_args &a,
                                                             const vo_cuda_view &in,
                                                             const vo_cuda_view &rois,
                                                             int64_t index) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t PH = a.pooled_height, PW = a.pooled_width;
  const int64_t pw = index % PW;
  int64_t t = index / PW;
  const int64_t ph = t % PH;
  t /= PH;
  const int64_t c = t % a.channels;
  const int64_t k = t / a.channels;
  vo_cra_roi<T> g;
  vo_cra_geometry<T>(a, rois, k, &g);
  if (g.batch < 0) return (T)0;
  const S *x = static_cast<const S *>(in.data);
  const int64_t base = g.batch * in.stride[0] + c * in.stride[1];
  const int64_t sh = in.stride[2], sw = in.stride[3];
  T val = 0;
  for (int64_t iy = 0; iy < g.grid_h; iy++) {
    const vo_cra_axis<T> ay = vo_cra_axis_at<T>(g.start_h, g.bin_h, g.grid_h, ph, iy, a.height);
    if (!ay.valid) continue;
    for (int64_t ix = 0; ix < g.grid_w; ix++) {
      const vo_cra_axis<T> ax = vo_cra_axis_at<T>(g.start_w, g.bin_w, g.grid_w, pw, ix, a.width);
      if (!ax.valid) continue;
      const T w0 = ay.h * ax.h, w1 = ay.h * ax.l, w2 = ay.l * ax.h, w3 = ay.l * ax.l;
      const int64_t r0 = base + ay.lo * sh, r1 = base + ay.hi * sh;
      val += w0 * vo_cr_load(x, r0 + ax.lo * sw) + w1 * vo_cr_load(x, r0 + ax.hi * sw) +
             w2 * vo_cr_load(x, r1 + ax.lo * sw) + w3 * vo_cr_load(x, r1 + ax.hi * sw);
    }
  }
  return val / g.count;
}

// Fast backward of grad element `index` ([K,C,PH,PW]): adds each sample's
// corner shares g*w/count into acc ([N,C,H,W] contiguous, compute type or
// float32 for half types) with vo_cr_add (atomic on the device).
template <typename S, typename A>
VO_CR_HD void vo_cra_scatter_at(const vo_cra_args &a, const vo_cuda_view &grad,
                                const vo_cuda_view &rois, int64_t index, A *acc) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t PH = a.pooled_height, PW = a.pooled_width;
  const int64_t pw = index % PW;
  int64_t t = index / PW;
  const int64_t ph = t % PH;
  t /= PH;
  const int64_t c = t % a.channels;
  const int64_t k = t / a.channels;
  vo_cra_roi<T> g;
  vo_cra_geometry<T>(a, rois, k, &g);
  if (g.batch < 0 || g.grid_h * g.grid_w == 0) return;
  const T gv = vo_cr_load(static_cast<const S *>(grad.data), vo_cuda_offset(grad, k, c, ph, pw));
  A *plane = acc + (g.batch * a.channels + c) * a.height * a.width;
  const int64_t W = a.width;
  for (int64_t iy = 0; iy < g.grid_h; iy++) {
    const vo_cra_axis<T> ay = vo_cra_axis_at<T>(g.start_h, g.bin_h, g.grid_h, ph, iy, a.height);
    if (!ay.valid) continue;
    for (int64_t ix = 0; ix < g.grid_w; ix++) {
      const vo_cra_axis<T> ax = vo_cra_axis_at<T>(g.start_w, g.bin_w, g.grid_w, pw, ix, a.width);
      if (!ax.valid) continue;
      const T w[4] = {ay.h * ax.h, ay.h * ax.l, ay.l * ax.h, ay.l * ax.l};
      const int64_t pos[4] = {ay.lo * W + ax.lo, ay.lo * W + ax.hi, ay.hi * W + ax.lo,
                              ay.hi * W + ax.hi};
      for (int j = 0; j < 4; j++) vo_cr_add(plane + pos[j], (A)(gv * w[j] / g.count));
    }
  }
}

// Samples t = p*grid + i (p < pooled, i < grid) of one axis whose corners
// can be pixel `y`: the sample's position must lie in [y-1, y+1] ([-1, 2]
// for y = 1, as positions in [-1, 0] clamp to 0 with corners 0 and 1). The range
// is widened by a bound on the positions' rounding error (and one index), so
// it never misses a sample; the caller tests each candidate exactly.
// Returns false when no sample can touch y.
template <typename T>
VO_CR_HD bool vo_cra_candidates(T start, T bin, int64_t grid, int64_t pooled, int64_t y,
                                int64_t *t0, int64_t *t1) {
  if (grid <= 0 || !vo_cr_finite((double)start) || !vo_cr_finite((double)bin)) return false;
  const double n = (double)pooled * (double)grid;  // samples on the axis
  const double s = (double)start, b = (double)bin;
  const double step = b / (double)grid;
  const double err = 8.0 * vo_cr_eps<T>::value * (fabs(s) + ((double)pooled + 2.0) * fabs(b));
  // positions in [-1, 0] clamp to 0, whose upper corner is row 1
  const double lo = (y <= 1 ? -1.0 : (double)y - 1.0) - err, hi = (double)y + 1.0 + err;
  double a0, a1;
  if (step == 0 || !vo_cr_finite(step)) {
    // every sample at the same place (or an unbounded step): all candidates
    if (step == 0 && (s < lo || s > hi)) return false;
    a0 = 0;
    a1 = n - 1;
  } else {
    a0 = (lo - s) / step - 0.5;
    a1 = (hi - s) / step - 0.5;
    if (step < 0) {
      const double tmp = a0;
      a0 = a1;
      a1 = tmp;
    }
    a0 = floor(a0) - 1.0;
    a1 = ceil(a1) + 1.0;
    if (!(a0 <= n - 1) || !(a1 >= 0)) return false;
    if (a0 < 0) a0 = 0;
    if (a1 > n - 1) a1 = n - 1;
  }
  // n - 1 may round up in double: clamp the last index in integers too
  const int64_t last =
      pooled > (((int64_t)1 << 62) / grid) ? ((int64_t)1 << 62) : pooled * grid - 1;
  *t0 = (int64_t)a0;
  *t1 = (int64_t)a1 < last ? (int64_t)a1 : last;
  return *t0 <= *t1;
}

// Deterministic backward: RoI k's share of grad_input element (c, y, x) of
// its image, in the CPU's order (ph, pw, iy, ix, corner), added to *acc. The
// same terms g*w/count, summed in the same order, as the CPU backward.
template <typename S>
VO_CR_HD void vo_cra_gather_roi(const vo_cra_args &a,
                                const vo_cra_roi<typename vo_cuda_compute<S>::type> &g,
                                const vo_cuda_view &grad, int64_t k, int64_t c, int64_t y,
                                int64_t x, typename vo_cuda_compute<S>::type *acc) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t gh = g.grid_h, gw = g.grid_w;
  int64_t ty0, ty1, tx0, tx1;
  if (gh * gw == 0) return;
  if (!vo_cra_candidates<T>(g.start_h, g.bin_h, gh, a.pooled_height, y, &ty0, &ty1)) return;
  if (!vo_cra_candidates<T>(g.start_w, g.bin_w, gw, a.pooled_width, x, &tx0, &tx1)) return;
  const S *gd = static_cast<const S *>(grad.data);
  T sum = *acc;
  for (int64_t ph = ty0 / gh; ph <= ty1 / gh; ph++) {
    const int64_t iy0 = ty0 - ph * gh > 0 ? ty0 - ph * gh : 0;
    const int64_t iy1 = ty1 - ph * gh < gh - 1 ? ty1 - ph * gh : gh - 1;
    for (int64_t pw = tx0 / gw; pw <= tx1 / gw; pw++) {
      const int64_t ix0 = tx0 - pw * gw > 0 ? tx0 - pw * gw : 0;
      const int64_t ix1 = tx1 - pw * gw < gw - 1 ? tx1 - pw * gw : gw - 1;
      bool loaded = false;
      T gv = 0;
      for (int64_t iy = iy0; iy <= iy1; iy++) {
        const vo_cra_axis<T> ay = vo_cra_axis_at<T>(g.start_h, g.bin_h, gh, ph, iy, a.height);
        if (!ay.valid || (ay.lo != y && ay.hi != y)) continue;
        for (int64_t ix = ix0; ix <= ix1; ix++) {
          const vo_cra_axis<T> ax = vo_cra_axis_at<T>(g.start_w, g.bin_w, gw, pw, ix, a.width);
          if (!ax.valid || (ax.lo != x && ax.hi != x)) continue;
          if (!loaded) {
            gv = vo_cr_load(gd, vo_cuda_offset(grad, k, c, ph, pw));
            loaded = true;
          }
          const T w[4] = {ay.h * ax.h, ay.h * ax.l, ay.l * ax.h, ay.l * ax.l};
          const int64_t cy[4] = {ay.lo, ay.lo, ay.hi, ay.hi};
          const int64_t cx[4] = {ax.lo, ax.hi, ax.lo, ax.hi};
          for (int j = 0; j < 4; j++)
            if (cy[j] == y && cx[j] == x) sum += gv * w[j] / g.count;
        }
      }
    }
  }
  *acc = sum;
}

// What the gathers need first of RoI k, computed once per RoI: its image
// (-1 when it has no sample in the map), its level (multi_scale_roi_align;
// 0 otherwise) and the rows [y0, y1] and columns [x0, x1] its samples can
// touch, so a grad_input thread skips most RoIs with four compares.
struct vo_cra_box {
  int64_t batch, y0, y1, x0, x1;
  int level;
};

// Pixels [*lo, *hi] of an axis of `size` that the samples start + (t +
// 0.5)*bin/grid, t < pooled*grid, can touch as a corner (*lo > *hi: none).
// Widened by the positions' rounding error bound and a pixel each side.
template <typename T>
VO_CR_HD void vo_cra_span(T start, T bin, int64_t grid, int64_t pooled, int64_t size, int64_t *lo,
                          int64_t *hi) {
  *lo = 0;
  *hi = -1;
  if (grid <= 0 || size <= 0 || !vo_cr_finite((double)start) || !vo_cr_finite((double)bin)) return;
  const double s = (double)start, b = (double)bin, step = b / (double)grid;
  const double n = (double)pooled * (double)grid;
  const double err = 8.0 * vo_cr_eps<T>::value * (fabs(s) + ((double)pooled + 2.0) * fabs(b));
  double p0 = s + 0.5 * step, p1 = s + (n - 0.5) * step;
  if (p0 > p1) {
    const double tmp = p0;
    p0 = p1;
    p1 = tmp;
  }
  p0 -= err;
  p1 += err;
  if (!(p1 >= -1.0) || !(p0 <= (double)size)) return;  // every sample outside
  // positions in [-1, 0] clamp to 0 (corners 0 and 1), those in [size - 1,
  // size] to size - 1
  p0 = p0 < 0 ? 0 : p0;
  p1 = p1 < 0 ? 0 : p1 > (double)size ? (double)size : p1;
  const int64_t a0 = (int64_t)floor(p0) - 1, a1 = (int64_t)floor(p1) + 1;
  *lo = a0 < 0 ? 0 : a0;
  *hi = a1 > size - 1 ? size - 1 : a1;
}

template <typename T>
VO_CR_HD vo_cra_box vo_cra_box_of(const vo_cra_args &a, const vo_cuda_view &rois, int64_t k) {
  vo_cra_roi<T> g;
  vo_cra_geometry<T>(a, rois, k, &g);
  vo_cra_box box;
  box.batch = g.batch;
  box.level = 0;
  box.y0 = box.x0 = 0;
  box.y1 = box.x1 = -1;
  if (g.batch >= 0 && g.grid_h * g.grid_w > 0) {
    vo_cra_span<T>(g.start_h, g.bin_h, g.grid_h, a.pooled_height, a.height, &box.y0, &box.y1);
    vo_cra_span<T>(g.start_w, g.bin_w, g.grid_w, a.pooled_width, a.width, &box.x0, &box.x1);
  }
  if (box.y0 > box.y1 || box.x0 > box.x1) box.batch = -1;
  return box;
}

// Deterministic backward: grad_input element `index` ([N,C,H,W] row-major),
// walking the RoIs of its image in RoI order. boxes (vo_cra_box_of of each
// RoI) may be NULL, when the workspace could not hold them.
template <typename S>
VO_CR_HD typename vo_cuda_compute<S>::type vo_cra_gather_at(const vo_cra_args &a,
                                                            const vo_cuda_view &grad,
                                                            const vo_cuda_view &rois,
                                                            const vo_cra_box *boxes,
                                                            int64_t num_rois, int64_t index) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t x = index % a.width;
  int64_t t = index / a.width;
  const int64_t y = t % a.height;
  t /= a.height;
  const int64_t c = t % a.channels;
  const int64_t b = t / a.channels;
  T acc = 0;
  for (int64_t k = 0; k < num_rois; k++) {
    if (boxes) {
      const vo_cra_box &bx = boxes[k];
      if (bx.batch != b || y < bx.y0 || y > bx.y1 || x < bx.x0 || x > bx.x1) continue;
    } else {
      // the batch index first: most RoIs belong to other images
      const double bk = vo_cr_load_double(rois, k * rois.stride[0]);
      if (!(bk >= (double)b && bk < (double)(b + 1))) continue;
    }
    vo_cra_roi<T> g;
    vo_cra_geometry<T>(a, rois, k, &g);
    if (g.batch != b) continue;
    vo_cra_gather_roi<S>(a, g, grad, k, c, y, x, &acc);
  }
  return acc;
}

// ------------------------------------------------------------ multi_scale_roi_align

// The pyramid, by value: level l's features view and sizes.
struct vo_cmsra_levels {
  vo_cuda_view features[VO_MAX_LIST];
  int64_t height[VO_MAX_LIST], width[VO_MAX_LIST];
  double scale[VO_MAX_LIST];
  int num_levels;
  int64_t first_level, canonical_scale, canonical_level;
  int64_t pooled_height, pooled_width, sampling_ratio;
  int aligned;
  int64_t batch_size, channels;
};

inline vo_cmsra_levels vo_cmsra_levels_of(const vo_multi_scale_roi_align_params *p) {
  vo_cmsra_levels L;
  memset(&L, 0, sizeof L);
  L.num_levels = p->num_levels;
  for (int l = 0; l < p->num_levels; l++) {
    L.features[l] = vo_cuda_view_of(&p->features[l]);
    L.height[l] = p->features[l].shape[2];
    L.width[l] = p->features[l].shape[3];
    L.scale[l] = p->scales[l];
  }
  L.first_level = p->first_level;
  L.canonical_scale = p->canonical_scale;
  L.canonical_level = p->canonical_level;
  L.pooled_height = p->pooled_height;
  L.pooled_width = p->pooled_width;
  L.sampling_ratio = p->sampling_ratio;
  L.aligned = p->aligned;
  L.batch_size = p->features[0].shape[0];
  L.channels = p->features[0].shape[1];
  return L;
}

// roi_align's arguments for level l.
VO_CR_HD vo_cra_args vo_cmsra_level_args(const vo_cmsra_levels &L, int l) {
  vo_cra_args a;
  a.spatial_scale = L.scale[l];
  a.pooled_height = L.pooled_height;
  a.pooled_width = L.pooled_width;
  a.sampling_ratio = L.sampling_ratio;
  a.aligned = L.aligned;
  a.batch_size = L.batch_size;
  a.channels = L.channels;
  a.height = L.height[l];
  a.width = L.width[l];
  return a;
}

// RoI k's level index in [0, num_levels), or -1 (negative area: a zero row),
// as vo_msra_levels of cpu/multi_scale_roi_align.c computes it in T.
template <typename T>
VO_CR_HD int vo_cmsra_level(const vo_cmsra_levels &L, const vo_cuda_view &rois, int64_t k) {
  const int64_t row = k * rois.stride[0], s1 = rois.stride[1];
  const int64_t k_min = L.first_level, k_max = L.first_level + L.num_levels - 1;
  const T x1 = (T)vo_cr_load_double(rois, row + s1);
  const T y1 = (T)vo_cr_load_double(rois, row + 2 * s1);
  const T x2 = (T)vo_cr_load_double(rois, row + 3 * s1);
  const T y2 = (T)vo_cr_load_double(rois, row + 4 * s1);
  const T s = vo_cr_sqrt((x2 - x1) * (y2 - y1));
  T lvl = vo_cr_floor((T)L.canonical_level + vo_cr_log2(s / (T)L.canonical_scale) + (T)1e-6);
  if (!(lvl == lvl)) return -1;
  if (lvl < (T)k_min) lvl = (T)k_min;
  if (lvl > (T)k_max) lvl = (T)k_max;
  return (int)((int64_t)lvl - k_min);
}

// Forward output element `index` ([K,C,PH,PW]): roi_align on RoI k's level.
template <typename S>
VO_CR_HD typename vo_cuda_compute<S>::type vo_cmsra_forward_at(const vo_cmsra_levels &L,
                                                               const vo_cuda_view &rois,
                                                               int64_t index) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t k = index / (L.channels * L.pooled_height * L.pooled_width);
  const int l = vo_cmsra_level<T>(L, rois, k);
  if (l < 0) return (T)0;
  return vo_cra_forward_at<S>(vo_cmsra_level_args(L, l), L.features[l], rois, index);
}

// Fast backward of grad element `index` into level accumulators acc[l].
template <typename S, typename A>
VO_CR_HD void vo_cmsra_scatter_at(const vo_cmsra_levels &L, const vo_cuda_view &grad,
                                  const vo_cuda_view &rois, int64_t index, A *const *acc) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t k = index / (L.channels * L.pooled_height * L.pooled_width);
  const int l = vo_cmsra_level<T>(L, rois, k);
  if (l < 0) return;
  vo_cra_scatter_at<S, A>(vo_cmsra_level_args(L, l), grad, rois, index, acc[l]);
}

// RoI k's box (see vo_cra_box) on its own level; batch -1 without a level.
template <typename T>
VO_CR_HD vo_cra_box vo_cmsra_box_of(const vo_cmsra_levels &L, const vo_cuda_view &rois, int64_t k) {
  const int l = vo_cmsra_level<T>(L, rois, k);
  vo_cra_box box;
  if (l < 0) {
    box.batch = -1;
    box.y0 = box.x0 = 0;
    box.y1 = box.x1 = -1;
    box.level = -1;
    return box;
  }
  box = vo_cra_box_of<T>(vo_cmsra_level_args(L, l), rois, k);
  box.level = l;
  return box;
}

// Deterministic backward: element `index` of level l's gradient, walking
// the RoIs of that level and image in RoI order (the CPU runs roi_align's
// backward per level on that level's RoIs, in RoI order). boxes
// (vo_cmsra_box_of of each RoI) may be NULL.
template <typename S>
VO_CR_HD typename vo_cuda_compute<S>::type vo_cmsra_gather_at(const vo_cmsra_levels &L, int l,
                                                              const vo_cuda_view &grad,
                                                              const vo_cuda_view &rois,
                                                              const vo_cra_box *boxes,
                                                              int64_t num_rois, int64_t index) {
  typedef typename vo_cuda_compute<S>::type T;
  const vo_cra_args a = vo_cmsra_level_args(L, l);
  const int64_t x = index % a.width;
  int64_t t = index / a.width;
  const int64_t y = t % a.height;
  t /= a.height;
  const int64_t c = t % a.channels;
  const int64_t b = t / a.channels;
  T acc = 0;
  for (int64_t k = 0; k < num_rois; k++) {
    if (boxes) {
      const vo_cra_box &bx = boxes[k];
      if (bx.level != l || bx.batch != b || y < bx.y0 || y > bx.y1 || x < bx.x0 || x > bx.x1)
        continue;
    } else {
      const double bk = vo_cr_load_double(rois, k * rois.stride[0]);
      if (!(bk >= (double)b && bk < (double)(b + 1))) continue;
      if (vo_cmsra_level<T>(L, rois, k) != l) continue;
    }
    vo_cra_roi<T> g;
    vo_cra_geometry<T>(a, rois, k, &g);
    if (g.batch != b) continue;
    vo_cra_gather_roi<S>(a, g, grad, k, c, y, x, &acc);
  }
  return acc;
}

#endif  // VISIONOPS_CUDA_ROI_COMMON_CUH
