// What the CUDA ps_roi_align and ps_roi_pool kernels get of a call
// (ps_roi_align's per-element math is the portable kernels/ps_roi_align.h),
// and ps_roi_pool's per-element arithmetic: RoI geometry, one forward output
// element, the atomic backward of one grad element and the deterministic
// (gather) backward of one grad_input element. __host__ __device__ so
// tests/test_cuda_ps_deform_host.cu runs the same index math on the host.
// Arithmetic in the CPU kernel's order (cpu/ps_roi_pool.c), so float32/64
// results are bit-identical to it.
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

// ------------------------------------------------------------ ps_roi_pool

// Rounded coordinates stay within +-2^52 (as the CPU's VO_PSP_COORD_LIMIT).
__host__ __device__ __forceinline__ int64_t vo_psp_saturate(double v) {
  const double lim = 4503599627370496.0;
  if (v > lim) return (int64_t)lim;
  if (v < -lim) return -(int64_t)lim;
  return (int64_t)v;
}

__host__ __device__ __forceinline__ int64_t vo_psp_clamp(int64_t v, int64_t hi) {
  if (v < 0) v = 0;
  return v > hi ? hi : v;
}

template <typename T>
struct vo_psp_roi {
  int64_t batch, start_h, start_w;
  T bin_h, bin_w;
};

template <typename S>
__host__ __device__ __forceinline__ void vo_psp_geometry(
    const vo_ps_args &a, int64_t k, vo_psp_roi<typename vo_cuda_compute<S>::type> *g) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t row = k * a.rois.stride[0], s1 = a.rois.stride[1];
  const T scale = (T)a.spatial_scale;
  g->batch = (int64_t)vo_cuda_load_as<double>(a.rois, row);
  g->start_w = vo_psp_saturate((double)vo_hd_round(vo_cuda_load_as<T>(a.rois, row + s1) * scale));
  g->start_h =
      vo_psp_saturate((double)vo_hd_round(vo_cuda_load_as<T>(a.rois, row + 2 * s1) * scale));
  const int64_t end_w =
      vo_psp_saturate((double)vo_hd_round(vo_cuda_load_as<T>(a.rois, row + 3 * s1) * scale));
  const int64_t end_h =
      vo_psp_saturate((double)vo_hd_round(vo_cuda_load_as<T>(a.rois, row + 4 * s1) * scale));
  const int64_t rw = end_w - g->start_w > 1 ? end_w - g->start_w : 1;
  const int64_t rh = end_h - g->start_h > 1 ? end_h - g->start_h : 1;
  g->bin_h = (T)rh / (T)a.pooled_h;
  g->bin_w = (T)rw / (T)a.pooled_w;
}

// Bin (ph, pw) of a RoI: rows [b[0], b[1]), columns [b[2], b[3]), clamped as
// torchvision's forward does (to H-1 and W-1).
template <typename T>
__host__ __device__ __forceinline__ void vo_psp_bin(const vo_ps_args &a, const vo_psp_roi<T> &g,
                                                    int64_t ph, int64_t pw, int64_t b[4]) {
  const int64_t h0 = (int64_t)vo_hd_floor((T)ph * g.bin_h);
  const int64_t w0 = (int64_t)vo_hd_floor((T)pw * g.bin_w);
  const int64_t h1 = (int64_t)vo_hd_ceil((T)(ph + 1) * g.bin_h);
  const int64_t w1 = (int64_t)vo_hd_ceil((T)(pw + 1) * g.bin_w);
  b[0] = vo_psp_clamp(h0 + g.start_h, a.height - 1);
  b[1] = vo_psp_clamp(h1 + g.start_h, a.height - 1);
  b[2] = vo_psp_clamp(w0 + g.start_w, a.width - 1);
  b[3] = vo_psp_clamp(w1 + g.start_w, a.width - 1);
}

// Output element o: the bin's mean (0 when empty); *c_in as for ps_roi_align.
template <typename S>
__host__ __device__ __forceinline__ typename vo_cuda_compute<S>::type vo_psp_forward_at(
    const vo_ps_args &a, int64_t o, int64_t *c_in_out) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t bins = a.pooled_h * a.pooled_w;
  const int64_t k = o / a.channels, c_in = o % a.channels, bin = c_in % bins;
  const int64_t ph = bin / a.pooled_w, pw = bin % a.pooled_w;
  *c_in_out = c_in;
  vo_psp_roi<T> g;
  vo_psp_geometry<S>(a, k, &g);
  int64_t b[4];
  vo_psp_bin(a, g, ph, pw, b);
  const int64_t sh = a.src.stride[2], sw = a.src.stride[3];
  const int64_t base = g.batch * a.src.stride[0] + c_in * a.src.stride[1];
  T val = 0;
  if (b[1] > b[0] && b[3] > b[2]) {
    for (int64_t y = b[0]; y < b[1]; y++)
      for (int64_t x = b[2]; x < b[3]; x++)
        val += vo_hd_load<S>(a.src.data, base + y * sh + x * sw);
    val /= (T)((b[1] - b[0]) * (b[3] - b[2]));
  }
  return val;
}

// Atomic backward of grad element o (of [K, C/(PH*PW), PH, PW], flat index
// k*C + c_in): grad / area to every element of its bin.
template <typename S, typename Add>
__host__ __device__ __forceinline__ void vo_psp_scatter_at(const vo_ps_args &a, int64_t o,
                                                           typename vo_cuda_compute<S>::type *acc,
                                                           const Add &add) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t bins = a.pooled_h * a.pooled_w;
  const int64_t k = o / a.channels, c_in = o % a.channels, bin = c_in % bins, c = c_in / bins;
  const int64_t ph = bin / a.pooled_w, pw = bin % a.pooled_w;
  vo_psp_roi<T> g;
  vo_psp_geometry<S>(a, k, &g);
  int64_t b[4];
  vo_psp_bin(a, g, ph, pw, b);
  if (!(b[1] > b[0] && b[3] > b[2])) return;
  const T gv = vo_hd_load<S>(a.src.data, vo_cuda_offset(a.src, k, c, ph, pw));
  const T diff = gv / (T)((b[1] - b[0]) * (b[3] - b[2]));
  const int64_t base = (g.batch * a.channels + c_in) * a.height * a.width;
  for (int64_t y = b[0]; y < b[1]; y++)
    for (int64_t x = b[2]; x < b[3]; x++) add(acc, base + y * a.width + x, diff);
}

// Deterministic backward of grad_input element e: the RoIs' shares in RoI
// order, as the CPU adds them.
template <typename S>
__host__ __device__ __forceinline__ typename vo_cuda_compute<S>::type vo_psp_gather_at(
    const vo_ps_args &a, int64_t e) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t xx = e % a.width, yy = (e / a.width) % a.height;
  const int64_t c_in = (e / (a.width * a.height)) % a.channels;
  const int64_t bn = e / (a.width * a.height * a.channels);
  const int64_t bins = a.pooled_h * a.pooled_w, bin = c_in % bins, c = c_in / bins;
  const int64_t ph = bin / a.pooled_w, pw = bin % a.pooled_w;
  T sum = 0;
  for (int64_t k = 0; k < a.num_rois; k++) {
    if ((int64_t)vo_cuda_load_as<double>(a.rois, k * a.rois.stride[0]) != bn) continue;
    vo_psp_roi<T> g;
    vo_psp_geometry<S>(a, k, &g);
    int64_t b[4];
    vo_psp_bin(a, g, ph, pw, b);
    if (!(yy >= b[0] && yy < b[1] && xx >= b[2] && xx < b[3])) continue;
    const T gv = vo_hd_load<S>(a.src.data, vo_cuda_offset(a.src, k, c, ph, pw));
    sum += gv / (T)((b[1] - b[0]) * (b[3] - b[2]));
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
