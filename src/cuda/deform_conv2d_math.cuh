// Per-element arithmetic of the CUDA deform_conv2d kernels: the sampling
// position and bilinear corners of one (offset group, tap, pixel), one
// im2col element, one (offset group, tap, pixel)'s offset and mask gradient,
// the atomic col2im of one column element and the pieces of the
// deterministic col2im (sort keys and the fixed-order gather). As
// __host__ __device__ functions in the CPU kernel's arithmetic order
// (cpu/deform_conv2d.c), so tests/test_cuda_ps_deform_host.cu runs them on
// the host against the CPU backend.
#ifndef VISIONOPS_CUDA_DEFORM_CONV2D_MATH_CUH
#define VISIONOPS_CUDA_DEFORM_CONV2D_MATH_CUH

#include "cuda/host_device.cuh"

// What the kernels need of a call, by value. Columns cover output pixels
// [p0, p0 + len) of image n; cols and dcol are [Cin*kh*kw, len].
struct vo_dcn_args {
  vo_cuda_view input, offset, mask;  // mask.data NULL without a mask
  int64_t batch, in_channels, height, width, out_channels, kernel_h, kernel_w;
  int64_t out_h, out_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  int64_t groups, offset_groups;
  int64_t n, p0, len;  // the current tile
};

// Where tap t of offset group g samples for output pixel pix of image n, its
// bilinear weights and corners (bit k of valid: corner k inside the map; the
// corners are (yl, xl), (yl, xl+1), (yl+1, xl), (yl+1, xl+1)) and its mask.
template <typename T>
struct vo_dcn_sample {
  T y, x, m;
  T w[4];
  int64_t yl, xl;
  int valid;
  bool inside;  // (y, x) in (-1, H) x (-1, W): the sample is not 0
};

template <typename S>
__host__ __device__ __forceinline__ vo_dcn_sample<typename vo_cuda_compute<S>::type>
vo_dcn_sample_at(const vo_dcn_args &a, int64_t g, int64_t t, int64_t pix) {
  typedef typename vo_cuda_compute<S>::type T;
  vo_dcn_sample<T> s;
  const int64_t taps = a.kernel_h * a.kernel_w;
  const int64_t oy = pix / a.out_w, ox = pix % a.out_w;
  const int64_t i = t / a.kernel_w, j = t % a.kernel_w;
  const T dy =
      vo_hd_load<S>(a.offset.data, vo_cuda_offset(a.offset, a.n, g * 2 * taps + 2 * t, oy, ox));
  const T dx =
      vo_hd_load<S>(a.offset.data, vo_cuda_offset(a.offset, a.n, g * 2 * taps + 2 * t + 1, oy, ox));
  s.y = (T)(oy * a.stride_h - a.pad_h + i * a.dilation_h) + dy;
  s.x = (T)(ox * a.stride_w - a.pad_w + j * a.dilation_w) + dx;
  s.m = a.mask.data ? vo_hd_load<S>(a.mask.data, vo_cuda_offset(a.mask, a.n, g * taps + t, oy, ox))
                    : (T)1;
  s.w[0] = s.w[1] = s.w[2] = s.w[3] = 0;
  s.yl = s.xl = 0;
  s.valid = 0;
  const T y = s.y, x = s.x;
  s.inside = y > -1 && y < (T)a.height && x > -1 && x < (T)a.width;
  if (!s.inside) return s;
  const T yf = vo_hd_floor(y), xf = vo_hd_floor(x);
  const int64_t yl = (int64_t)yf, xl = (int64_t)xf, h = a.height, w = a.width;
  const T ly = y - yf, lx = x - xf, hy = 1 - ly, hx = 1 - lx;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  s.yl = yl;
  s.xl = xl;
  s.valid = (yl >= 0 && xl >= 0) | (yl >= 0 && xl + 1 <= w - 1) << 1 |
            (yl + 1 <= h - 1 && xl >= 0) << 2 | (yl + 1 <= h - 1 && xl + 1 <= w - 1) << 3;
  return s;
}

// The four corner values of a sample in channel c of image a.n (0 outside).
template <typename S>
__host__ __device__ __forceinline__ void vo_dcn_corners(
    const vo_dcn_args &a, const vo_dcn_sample<typename vo_cuda_compute<S>::type> &s, int64_t c,
    typename vo_cuda_compute<S>::type v[4]) {
  const int64_t sh = a.input.stride[2], sw = a.input.stride[3];
  const int64_t i0 = vo_cuda_offset(a.input, a.n, c, 0, 0) + s.yl * sh + s.xl * sw;
  v[0] = (s.valid & 1) ? vo_hd_load<S>(a.input.data, i0) : 0;
  v[1] = (s.valid & 2) ? vo_hd_load<S>(a.input.data, i0 + sw) : 0;
  v[2] = (s.valid & 4) ? vo_hd_load<S>(a.input.data, i0 + sh) : 0;
  v[3] = (s.valid & 8) ? vo_hd_load<S>(a.input.data, i0 + sh + sw) : 0;
}

// Column element r*len + l (r = c*kh*kw + t): mask * bilinear sample.
template <typename S>
__host__ __device__ __forceinline__ typename vo_cuda_compute<S>::type vo_dcn_im2col_at(
    const vo_dcn_args &a, int64_t idx) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t taps = a.kernel_h * a.kernel_w, per_og = a.in_channels / a.offset_groups;
  const int64_t l = idx % a.len, r = idx / a.len, c = r / taps, t = r % taps;
  const vo_dcn_sample<T> s = vo_dcn_sample_at<S>(a, c / per_og, t, a.p0 + l);
  T v[4];
  vo_dcn_corners<S>(a, s, c, v);
  return s.m * (s.w[0] * v[0] + s.w[1] * v[1] + s.w[2] * v[2] + s.w[3] * v[3]);
}

// torchvision's coordinate weight (d sample / dy when is_y, else / dx) for
// samples on the edge of the map, where it is nonzero although the sample is
// 0; 0 unless (y, x) is in [-1, H] x [-1, W].
template <typename S>
__host__ __device__ __forceinline__ typename vo_cuda_compute<S>::type vo_dcn_coord_weight(
    const vo_dcn_args &a, int64_t c, typename vo_cuda_compute<S>::type y,
    typename vo_cuda_compute<S>::type x, bool is_y) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t h = a.height, w = a.width;
  if (!(y >= -1 && y <= (T)h && x >= -1 && x <= (T)w)) return 0;
  const T yf = vo_hd_floor(y), xf = vo_hd_floor(x);
  const int64_t yl = (int64_t)yf, xl = (int64_t)xf, yh = yl + 1, xh = xl + 1;
  const bool vyl = yl >= 0 && yl < h, vyh = yh >= 0 && yh < h;
  const bool vxl = xl >= 0 && xl < w, vxh = xh >= 0 && xh < w;
  const int64_t sh = a.input.stride[2], sw = a.input.stride[3];
  const int64_t base = vo_cuda_offset(a.input, a.n, c, 0, 0);
  const T v_yx = (vyl && vxl) ? vo_hd_load<S>(a.input.data, base + yl * sh + xl * sw) : 0;
  const T v_yX = (vyl && vxh) ? vo_hd_load<S>(a.input.data, base + yl * sh + xh * sw) : 0;
  const T v_Yx = (vyh && vxl) ? vo_hd_load<S>(a.input.data, base + yh * sh + xl * sw) : 0;
  const T v_YX = (vyh && vxh) ? vo_hd_load<S>(a.input.data, base + yh * sh + xh * sw) : 0;
  if (is_y) {
    const T dx = x - xf;
    return dx * (v_YX - v_yX) + (1 - dx) * (v_Yx - v_yx);
  }
  const T dy = y - yf;
  return dy * (v_YX - v_Yx) + (1 - dy) * (v_yX - v_yx);
}

// Offset and mask gradient of row r = g*kh*kw + t, column l: sums over the
// offset group's channels of dcol (the columns' gradient, [Cin*kh*kw, len]).
// Writes goff[0] (d/dy), goff[1] (d/dx) and *gmask.
template <typename S>
__host__ __device__ __forceinline__ void vo_dcn_offset_grad_at(
    const vo_dcn_args &a, const typename vo_cuda_compute<S>::type *dcol, int64_t idx,
    typename vo_cuda_compute<S>::type goff[2], typename vo_cuda_compute<S>::type *gmask) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t taps = a.kernel_h * a.kernel_w, per_og = a.in_channels / a.offset_groups;
  const int64_t l = idx % a.len, r = idx / a.len, g = r / taps, t = r % taps;
  const vo_dcn_sample<T> s = vo_dcn_sample_at<S>(a, g, t, a.p0 + l);
  const T y = s.y, x = s.x, m = s.m;
  T goy = 0, gox = 0, gm = 0;
  if (s.inside) {
    const T ly = y - vo_hd_floor(y), lx = x - vo_hd_floor(x);
    for (int64_t c = g * per_og; c < (g + 1) * per_og; c++) {
      T v[4];
      vo_dcn_corners<S>(a, s, c, v);
      const T d = dcol[(c * taps + t) * a.len + l];
      const T wy = lx * (v[3] - v[1]) + (1 - lx) * (v[2] - v[0]);
      const T wx = ly * (v[3] - v[2]) + (1 - ly) * (v[1] - v[0]);
      goy += m * wy * d;
      gox += m * wx * d;
      if (a.mask.data) gm += d * (s.w[0] * v[0] + s.w[1] * v[1] + s.w[2] * v[2] + s.w[3] * v[3]);
    }
  } else {
    for (int64_t c = g * per_og; c < (g + 1) * per_og; c++) {
      const T d = dcol[(c * taps + t) * a.len + l];
      goy += m * vo_dcn_coord_weight<S>(a, c, y, x, true) * d;
      gox += m * vo_dcn_coord_weight<S>(a, c, y, x, false) * d;
    }
  }
  goff[0] = goy;
  goff[1] = gox;
  *gmask = gm;
}

// Atomic col2im of column element idx (as in im2col): its gradient times the
// mask, spread to the sample's corners in plane c of acc (the image's
// contiguous [Cin, H, W] gradient).
template <typename S, typename Add>
__host__ __device__ __forceinline__ void vo_dcn_col2im_scatter_at(
    const vo_dcn_args &a, const typename vo_cuda_compute<S>::type *dcol, int64_t idx,
    typename vo_cuda_compute<S>::type *acc, const Add &add) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t taps = a.kernel_h * a.kernel_w, per_og = a.in_channels / a.offset_groups;
  const int64_t l = idx % a.len, r = idx / a.len, c = r / taps, t = r % taps;
  const vo_dcn_sample<T> s = vo_dcn_sample_at<S>(a, c / per_og, t, a.p0 + l);
  if (!s.valid) return;
  const T d = s.m * dcol[idx];
  const int64_t w = a.width, k = (c * a.height + s.yl) * w + s.xl;
  if (s.valid & 1) add(acc, k, s.w[0] * d);
  if (s.valid & 2) add(acc, k + 1, s.w[1] * d);
  if (s.valid & 4) add(acc, k + w, s.w[2] * d);
  if (s.valid & 8) add(acc, k + w + 1, s.w[3] * d);
}

// Deterministic col2im, step 1: the four entries of sample (t, l) of offset
// group g are entries 4*(t*len + l) + j; entry e's key is the plane index
// (y*W + x) its corner j adds to, or H*W when that corner is outside. A
// stable sort by key then lists, per plane element, its contributions in
// the CPU's order (taps, pixels, corners).
template <typename S>
__host__ __device__ __forceinline__ void vo_dcn_col2im_keys_at(const vo_dcn_args &a, int64_t g,
                                                               int64_t idx,
                                                               unsigned long long keys[4]) {
  const int64_t l = idx % a.len, t = idx / a.len;
  const vo_dcn_sample<typename vo_cuda_compute<S>::type> s = vo_dcn_sample_at<S>(a, g, t, a.p0 + l);
  const int64_t w = a.width, k = s.yl * w + s.xl, none = a.height * w;
  keys[0] = (unsigned long long)((s.valid & 1) ? k : none);
  keys[1] = (unsigned long long)((s.valid & 2) ? k + 1 : none);
  keys[2] = (unsigned long long)((s.valid & 4) ? k + w : none);
  keys[3] = (unsigned long long)((s.valid & 8) ? k + w + 1 : none);
}

// Deterministic col2im, step 2: plane element q of channel c (of offset
// group g) adds its sorted contributions vals[begin, end) to *acc in order.
template <typename S>
__host__ __device__ __forceinline__ void vo_dcn_col2im_gather_at(
    const vo_dcn_args &a, const typename vo_cuda_compute<S>::type *dcol, int64_t c,
    const uint32_t *vals, int64_t begin, int64_t end, typename vo_cuda_compute<S>::type *acc) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t taps = a.kernel_h * a.kernel_w, g = c / (a.in_channels / a.offset_groups);
  T sum = *acc;
  for (int64_t i = begin; i < end; i++) {
    const int64_t e = vals[i], j = e % 4, l = (e / 4) % a.len, t = e / 4 / a.len;
    const vo_dcn_sample<T> s = vo_dcn_sample_at<S>(a, g, t, a.p0 + l);
    const T d = s.m * dcol[(c * taps + t) * a.len + l];
    sum += s.w[j] * d;
  }
  *acc = sum;
}

// The three products of a tile as column-major strided-batched GEMMs over the
// groups (cuBLAS's terms; the test replays them with a host GEMM): C = op(A)
// * op(B) + beta * C, m x n x k, leading dimensions and batch strides.
struct vo_dcn_gemm_shape {
  bool trans_a, trans_b;
  int64_t m, n, k, lda, stride_a, ldb, stride_b, ldc, stride_c, batch;
};

__host__ __device__ __forceinline__ vo_dcn_gemm_shape vo_dcn_gemm_make(
    bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t stride_a,
    int64_t ldb, int64_t stride_b, int64_t ldc, int64_t stride_c, int64_t batch) {
  vo_dcn_gemm_shape g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = lda;
  g.stride_a = stride_a;
  g.ldb = ldb;
  g.stride_b = stride_b;
  g.ldc = ldc;
  g.stride_c = stride_c;
  g.batch = batch;
  return g;
}

// Row-major obuf_g[coutg, len] = W_g[coutg, cgk] * cols_g[cgk, len], i.e.
// column-major obuf^T (len x coutg) = cols^T (len x cgk) * W^T (cgk x coutg).
// A = cols, B = weight, C = obuf.
__host__ __device__ __forceinline__ vo_dcn_gemm_shape vo_dcn_gemm_forward(int64_t cgk,
                                                                          int64_t coutg,
                                                                          int64_t len,
                                                                          int64_t groups) {
  return vo_dcn_gemm_make(false, false, len, coutg, cgk, len, cgk * len, cgk, coutg * cgk, len,
                          coutg * len, groups);
}

// Row-major gw_g[coutg, cgk] (+)= gbuf_g[coutg, len] * cols_g[cgk, len]^T, i.e.
// column-major gw^T (cgk x coutg) = cols (cgk x len, stored transposed) *
// gbuf^T (len x coutg). A = cols, B = tile grad, C = grad_weight.
__host__ __device__ __forceinline__ vo_dcn_gemm_shape vo_dcn_gemm_grad_weight(int64_t cgk,
                                                                              int64_t coutg,
                                                                              int64_t len,
                                                                              int64_t groups) {
  return vo_dcn_gemm_make(true, false, cgk, coutg, len, len, cgk * len, len, coutg * len, cgk,
                          coutg * cgk, groups);
}

// Row-major dcol_g[cgk, len] = W_g[coutg, cgk]^T * gbuf_g[coutg, len], i.e.
// column-major dcol^T (len x cgk) = gbuf^T (len x coutg) * W (coutg x cgk,
// stored transposed). A = tile grad, B = weight, C = dcol.
__host__ __device__ __forceinline__ vo_dcn_gemm_shape vo_dcn_gemm_grad_cols(int64_t cgk,
                                                                            int64_t coutg,
                                                                            int64_t len,
                                                                            int64_t groups) {
  return vo_dcn_gemm_make(false, true, len, cgk, coutg, len, coutg * len, cgk, coutg * cgk, len,
                          cgk * len, groups);
}

#endif  // VISIONOPS_CUDA_DEFORM_CONV2D_MATH_CUH
