// Per-element arithmetic of the CUDA ps_roi_align kernels: RoI geometry, one
// forward output element, the atomic backward of one grad element and the
// deterministic (gather) backward of one grad_input element, with the
// arguments of both ps drivers (ps_roi_pool's math is kernels/ps_roi_pool.h).
// __host__ __device__ so tests/test_cuda_ps_deform_host.cu runs the same index
// math on the host. Arithmetic in the CPU kernels' order (cpu/roi_common.h),
// so float32/64 results are bit-identical to them.
#ifndef VISIONOPS_CUDA_PS_ROI_MATH_CUH
#define VISIONOPS_CUDA_PS_ROI_MATH_CUH

#include "cuda/host_device.cuh"

// What the ps kernels need of a call, by value.
struct vo_ps_args {
  vo_cuda_view rois;  // [K,5], any floating dtype (read by its runtime dtype, SPEC section 5)
  vo_cuda_view src;   // forward: input [N,C,H,W]; backward: grad [K,C/(PH*PW),PH,PW]
  double spatial_scale;
  int64_t num_rois, batch_size, channels, height, width;
  int64_t pooled_h, pooled_w, channels_out;
  int64_t sampling_ratio;  // ps_roi_align only
};

// ------------------------------------------------------------ ps_roi_align

// Largest per-RoI sampling grid along one axis (as the CPU's VO_RA_MAX_GRID).
#define VO_PSA_MAX_GRID ((int64_t)2147483647)

template <typename T>
struct vo_psa_roi {
  T start_h, start_w, bin_h, bin_w, count;
  int64_t grid_h, grid_w, batch;
};

__host__ __device__ __forceinline__ int64_t vo_psa_grid(double v) {
  if (!(v > 0)) return 0;
  if (v >= (double)VO_PSA_MAX_GRID) return VO_PSA_MAX_GRID;
  return (int64_t)v;
}

// RoI k's geometry: roi_align's with the 0.5 offset and no 1x1 minimum.
template <typename S>
__host__ __device__ __forceinline__ void vo_psa_geometry(
    const vo_ps_args &a, int64_t k, vo_psa_roi<typename vo_cuda_compute<S>::type> *g) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t row = k * a.rois.stride[0], s1 = a.rois.stride[1];
  const T scale = (T)a.spatial_scale, off = (T)0.5;
  g->batch = (int64_t)vo_cuda_load_as<double>(a.rois, row);
  const T sw = vo_cuda_load_as<T>(a.rois, row + s1) * scale - off;
  const T sh = vo_cuda_load_as<T>(a.rois, row + 2 * s1) * scale - off;
  const T ew = vo_cuda_load_as<T>(a.rois, row + 3 * s1) * scale - off;
  const T eh = vo_cuda_load_as<T>(a.rois, row + 4 * s1) * scale - off;
  const T rw = ew - sw, rh = eh - sh;
  g->start_h = sh;
  g->start_w = sw;
  g->bin_h = rh / (T)a.pooled_h;
  g->bin_w = rw / (T)a.pooled_w;
  const int64_t sr = a.sampling_ratio > VO_PSA_MAX_GRID ? VO_PSA_MAX_GRID : a.sampling_ratio;
  g->grid_h = sr > 0 ? sr : vo_psa_grid((double)vo_hd_ceil(rh / (T)a.pooled_h));
  g->grid_w = sr > 0 ? sr : vo_psa_grid((double)vo_hd_ceil(rw / (T)a.pooled_w));
  const int64_t n = g->grid_h * g->grid_w;
  g->count = (T)(n > 1 ? n : 1);
}

// One axis of a bilinear sample: its two rows (columns) and weights. The
// validity test of the two axes together is the CPU's negated range test.
template <typename T>
struct vo_psa_axis {
  int64_t lo, hi;
  T l, h;
  bool valid;
};

template <typename T>
__host__ __device__ __forceinline__ vo_psa_axis<T> vo_psa_axis_at(T v, int64_t size) {
  vo_psa_axis<T> r;
  r.valid = size != 0 && v >= (T)-1 && v <= (T)size;
  r.lo = r.hi = 0;
  r.l = r.h = 0;
  if (!r.valid) return r;
  if (v <= 0) v = 0;
  r.lo = (int64_t)v;
  if (r.lo >= size - 1) {
    r.hi = r.lo = size - 1;
    v = (T)r.lo;
  } else {
    r.hi = r.lo + 1;
  }
  r.l = v - (T)r.lo;
  r.h = (T)1 - r.l;
  return r;
}

// Sample position along y (row iy of bin ph) and x.
template <typename T>
__host__ __device__ __forceinline__ T vo_psa_y(const vo_psa_roi<T> &g, int64_t ph, int64_t iy) {
  return g.start_h + (T)ph * g.bin_h + ((T)iy + (T)0.5) * g.bin_h / (T)g.grid_h;
}
template <typename T>
__host__ __device__ __forceinline__ T vo_psa_x(const vo_psa_roi<T> &g, int64_t pw, int64_t ix) {
  return g.start_w + (T)pw * g.bin_w + ((T)ix + (T)0.5) * g.bin_w / (T)g.grid_w;
}

// Output element o of [K, C/(PH*PW), PH, PW]: the bin's mean; *c_in is the
// input channel it reads (its channel_mapping entry).
template <typename S>
__host__ __device__ __forceinline__ typename vo_cuda_compute<S>::type vo_psa_forward_at(
    const vo_ps_args &a, int64_t o, int64_t *c_in_out) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t pw = o % a.pooled_w, ph = (o / a.pooled_w) % a.pooled_h;
  const int64_t c = (o / (a.pooled_w * a.pooled_h)) % a.channels_out;
  const int64_t k = o / (a.pooled_w * a.pooled_h * a.channels_out);
  const int64_t c_in = (c * a.pooled_h + ph) * a.pooled_w + pw;
  *c_in_out = c_in;
  vo_psa_roi<T> g;
  vo_psa_geometry<S>(a, k, &g);
  const int64_t sh = a.src.stride[2], sw = a.src.stride[3];
  const int64_t base = g.batch * a.src.stride[0] + c_in * a.src.stride[1];
  T val = 0;
  for (int64_t iy = 0; iy < g.grid_h; iy++) {
    const vo_psa_axis<T> y = vo_psa_axis_at(vo_psa_y(g, ph, iy), a.height);
    for (int64_t ix = 0; ix < g.grid_w; ix++) {
      const vo_psa_axis<T> x = vo_psa_axis_at(vo_psa_x(g, pw, ix), a.width);
      if (!y.valid || !x.valid) continue;
      const T w0 = y.h * x.h, w1 = y.h * x.l, w2 = y.l * x.h, w3 = y.l * x.l;
      val += w0 * vo_hd_load<S>(a.src.data, base + y.lo * sh + x.lo * sw) +
             w1 * vo_hd_load<S>(a.src.data, base + y.lo * sh + x.hi * sw) +
             w2 * vo_hd_load<S>(a.src.data, base + y.hi * sh + x.lo * sw) +
             w3 * vo_hd_load<S>(a.src.data, base + y.hi * sh + x.hi * sw);
    }
  }
  return val / g.count;
}

// Atomic backward of grad element o: its share of every sample goes to the
// four corners in acc, the contiguous [N,C,H,W] accumulator.
template <typename S, typename Add>
__host__ __device__ __forceinline__ void vo_psa_scatter_at(const vo_ps_args &a, int64_t o,
                                                           typename vo_cuda_compute<S>::type *acc,
                                                           const Add &add) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t pw = o % a.pooled_w, ph = (o / a.pooled_w) % a.pooled_h;
  const int64_t c = (o / (a.pooled_w * a.pooled_h)) % a.channels_out;
  const int64_t k = o / (a.pooled_w * a.pooled_h * a.channels_out);
  const int64_t c_in = (c * a.pooled_h + ph) * a.pooled_w + pw;
  vo_psa_roi<T> g;
  vo_psa_geometry<S>(a, k, &g);
  const T gv = vo_hd_load<S>(a.src.data, vo_cuda_offset(a.src, k, c, ph, pw));
  const int64_t w = a.width, base = (g.batch * a.channels + c_in) * a.height * w;
  for (int64_t iy = 0; iy < g.grid_h; iy++) {
    const vo_psa_axis<T> y = vo_psa_axis_at(vo_psa_y(g, ph, iy), a.height);
    if (!y.valid) continue;
    for (int64_t ix = 0; ix < g.grid_w; ix++) {
      const vo_psa_axis<T> x = vo_psa_axis_at(vo_psa_x(g, pw, ix), a.width);
      if (!x.valid) continue;
      add(acc, base + y.lo * w + x.lo, gv * (y.h * x.h) / g.count);
      add(acc, base + y.lo * w + x.hi, gv * (y.h * x.l) / g.count);
      add(acc, base + y.hi * w + x.lo, gv * (y.l * x.h) / g.count);
      add(acc, base + y.hi * w + x.hi, gv * (y.l * x.l) / g.count);
    }
  }
}

// Whether samples between positions v0 and v1 (the first and last of a bin
// along one axis) can touch index i; conservative, compared in double.
template <typename T>
__host__ __device__ __forceinline__ bool vo_psa_may_touch(T v0, T v1, int64_t i) {
  const double lo = (double)(v0 < v1 ? v0 : v1), hi = (double)(v0 < v1 ? v1 : v0);
  return (double)i >= floor(lo) - 2 && (double)i <= ceil(hi) + 2;
}

// Deterministic backward of grad_input element e of [N,C,H,W]: the sum, in
// the CPU's order (RoIs, then samples, then corners), of every contribution
// to it. Only the one bin of each RoI that reads channel c_in can touch it.
template <typename S>
__host__ __device__ __forceinline__ typename vo_cuda_compute<S>::type vo_psa_gather_at(
    const vo_ps_args &a, int64_t e) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t xx = e % a.width, yy = (e / a.width) % a.height;
  const int64_t c_in = (e / (a.width * a.height)) % a.channels;
  const int64_t b = e / (a.width * a.height * a.channels);
  const int64_t bins = a.pooled_h * a.pooled_w, bin = c_in % bins, c = c_in / bins;
  const int64_t ph = bin / a.pooled_w, pw = bin % a.pooled_w;
  T sum = 0;
  for (int64_t k = 0; k < a.num_rois; k++) {
    if ((int64_t)vo_cuda_load_as<double>(a.rois, k * a.rois.stride[0]) != b) continue;
    vo_psa_roi<T> g;
    vo_psa_geometry<S>(a, k, &g);
    if (g.grid_h < 1 || g.grid_w < 1) continue;
    // Sample positions are monotone in iy (ix), and a sample at y touches
    // rows within [floor(y), y + 1]: RoIs whose bin cannot reach (yy, xx)
    // are skipped without walking their samples (NaN positions never
    // contribute either way).
    if (!vo_psa_may_touch(vo_psa_y(g, ph, 0), vo_psa_y(g, ph, g.grid_h - 1), yy) ||
        !vo_psa_may_touch(vo_psa_x(g, pw, 0), vo_psa_x(g, pw, g.grid_w - 1), xx))
      continue;
    const T gv = vo_hd_load<S>(a.src.data, vo_cuda_offset(a.src, k, c, ph, pw));
    for (int64_t iy = 0; iy < g.grid_h; iy++) {
      const vo_psa_axis<T> y = vo_psa_axis_at(vo_psa_y(g, ph, iy), a.height);
      if (!y.valid || (y.lo != yy && y.hi != yy)) continue;
      for (int64_t ix = 0; ix < g.grid_w; ix++) {
        const vo_psa_axis<T> x = vo_psa_axis_at(vo_psa_x(g, pw, ix), a.width);
        if (!x.valid || (x.lo != xx && x.hi != xx)) continue;
        if (y.lo == yy && x.lo == xx) sum += gv * (y.h * x.h) / g.count;
        if (y.lo == yy && x.hi == xx) sum += gv * (y.h * x.l) / g.count;
        if (y.hi == yy && x.lo == xx) sum += gv * (y.l * x.h) / g.count;
        if (y.hi == yy && x.hi == xx) sum += gv * (y.l * x.l) / g.count;
      }
    }
  }
  return sum;
}

// channel_mapping element [k, c, y, x] must hold (c*PH + y)*PW + x.
__host__ __device__ __forceinline__ int64_t vo_ps_expected_mapping(const vo_ps_args &a, int64_t o) {
  const int64_t x = o % a.pooled_w, y = (o / a.pooled_w) % a.pooled_h;
  const int64_t c = (o / (a.pooled_w * a.pooled_h)) % a.channels_out;
  return (c * a.pooled_h + y) * a.pooled_w + x;
}

#endif  // VISIONOPS_CUDA_PS_ROI_MATH_CUH
