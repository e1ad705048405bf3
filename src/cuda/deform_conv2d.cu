// CUDA deform_conv2d and deform_conv2d_backward: deformable im2col / col2im
// kernels (per-element math in cuda/deform_conv2d_math.cuh) around cuBLAS
// products (loaded at first use, cuda/cublas_loader.cuh), on column tiles of
// output pixels sized to the context's workspace limit, as the CPU backend.
// Half types compute in float32. The backward's col2im is atomic, or in a
// deterministic context a stable sort of every contribution by its target
// followed by a fixed-order gather (the CPU's summation order).
#include <exception>

#include <cub/device/device_radix_sort.cuh>

#include "cuda/cublas_loader.cuh"
#include "cuda/deform_conv2d_math.cuh"

namespace {

constexpr int kThreads = 256;

vo_dcn_args make_args(const vo_deform_conv2d_params &p) {
  vo_dcn_args a;
  a.input = vo_cuda_view_of(p.input);
  a.offset = vo_cuda_view_of(p.offset);
  a.mask = vo_cuda_view_of(p.mask);
  a.batch = p.batch;
  a.in_channels = p.in_channels;
  a.height = p.height;
  a.width = p.width;
  a.out_channels = p.out_channels;
  a.kernel_h = p.kernel_h;
  a.kernel_w = p.kernel_w;
  a.out_h = p.out_h;
  a.out_w = p.out_w;
  a.stride_h = p.stride_h;
  a.stride_w = p.stride_w;
  a.pad_h = p.pad_h;
  a.pad_w = p.pad_w;
  a.dilation_h = p.dilation_h;
  a.dilation_w = p.dilation_w;
  a.groups = p.groups;
  a.offset_groups = p.offset_groups;
  a.n = a.p0 = a.len = 0;
  return a;
}

// ------------------------------------------------------------ kernels

// The weight [Cout, Cin/groups, kh, kw] (any strides) as a contiguous matrix.
template <typename S>
__global__ void weight_kernel(vo_cuda_view w, int64_t d1, int64_t d2, int64_t d3, int64_t n,
                              typename vo_cuda_compute<S>::type *out) {
  VO_CUDA_GRID_STRIDE(i, n) {
    const int64_t d = i % d3, c = (i / d3) % d2, b = (i / (d2 * d3)) % d1, a = i / (d1 * d2 * d3);
    out[i] = vo_hd_load<S>(w.data, vo_cuda_offset(w, a, b, c, d));
  }
}

template <typename S>
__global__ void im2col_kernel(vo_dcn_args a, int64_t n, typename vo_cuda_compute<S>::type *cols) {
  VO_CUDA_GRID_STRIDE(i, n) { cols[i] = vo_dcn_im2col_at<S>(a, i); }
}

// out[n, co, p0 + l] = obuf[co, l] + bias[co].
template <typename S>
__global__ void epilogue_kernel(vo_dcn_args a, const typename vo_cuda_compute<S>::type *obuf,
                                vo_cuda_view bias, int64_t n, S *out) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t plane = a.out_h * a.out_w;
  VO_CUDA_GRID_STRIDE(i, n) {
    const int64_t co = i / a.len, l = i % a.len;
    const T b = bias.data ? vo_hd_load<S>(bias.data, vo_cuda_offset(bias, co)) : (T)0;
    vo_hd_store(out, (a.n * a.out_channels + co) * plane + a.p0 + l, obuf[i] + b);
  }
}

// The tile's incoming gradient as a [Cout, len] matrix.
template <typename S>
__global__ void grad_tile_kernel(vo_dcn_args a, vo_cuda_view grad, int64_t n,
                                 typename vo_cuda_compute<S>::type *gbuf) {
  VO_CUDA_GRID_STRIDE(i, n) {
    const int64_t co = i / a.len, pix = a.p0 + i % a.len;
    gbuf[i] = vo_hd_load<S>(grad.data, vo_cuda_offset(grad, a.n, co, pix / a.out_w, pix % a.out_w));
  }
}

// One thread per (offset group, tap, pixel): owns its two offset gradients
// and its mask gradient, so no atomics.
template <typename S>
__global__ void offset_grad_kernel(vo_dcn_args a, const typename vo_cuda_compute<S>::type *dcol,
                                   int64_t n, S *grad_offset, S *grad_mask) {
  typedef typename vo_cuda_compute<S>::type T;
  const int64_t taps = a.kernel_h * a.kernel_w, plane = a.out_h * a.out_w;
  VO_CUDA_GRID_STRIDE(i, n) {
    T goff[2], gm;
    vo_dcn_offset_grad_at<S>(a, dcol, i, goff, &gm);
    const int64_t r = i / a.len, g = r / taps, t = r % taps, pix = a.p0 + i % a.len;
    const int64_t o = (a.n * 2 * a.offset_groups * taps + g * 2 * taps + 2 * t) * plane + pix;
    vo_hd_store(grad_offset, o, goff[0]);
    vo_hd_store(grad_offset, o + plane, goff[1]);
    if (a.mask.data) vo_hd_store(grad_mask, (a.n * a.offset_groups * taps + r) * plane + pix, gm);
  }
}

template <typename S>
__global__ void col2im_atomic_kernel(vo_dcn_args a, const typename vo_cuda_compute<S>::type *dcol,
                                     int64_t n, typename vo_cuda_compute<S>::type *acc) {
  VO_CUDA_GRID_STRIDE(i, n) { vo_dcn_col2im_scatter_at<S>(a, dcol, i, acc, vo_hd_atomic_add()); }
}

template <typename S>
__global__ void col2im_keys_kernel(vo_dcn_args a, int64_t g, int64_t n, unsigned long long *keys,
                                   uint32_t *vals) {
  VO_CUDA_GRID_STRIDE(i, n) {
    unsigned long long k[4];
    vo_dcn_col2im_keys_at<S>(a, g, i, k);
    for (int j = 0; j < 4; j++) {
      keys[4 * i + j] = k[j];
      vals[4 * i + j] = (uint32_t)(4 * i + j);
    }
  }
}

// Where each target's run of sorted entries begins and ends (targets with
// no entry keep begin = end = 0).
__global__ void segments_kernel(const unsigned long long *keys, int64_t n, unsigned long long none,
                                uint32_t *begin, uint32_t *end) {
  VO_CUDA_GRID_STRIDE(i, n) {
    const unsigned long long k = keys[i];
    if (k == none) continue;
    if (i == 0 || keys[i - 1] != k) begin[k] = (uint32_t)i;
    if (i == n - 1 || keys[i + 1] != k) end[k] = (uint32_t)(i + 1);
  }
}

// One thread per (channel of offset group g, plane element): the element's
// contributions in sorted order, added to acc (the image's [Cin, H, W]).
template <typename S>
__global__ void col2im_gather_kernel(vo_dcn_args a, const typename vo_cuda_compute<S>::type *dcol,
                                     int64_t g, const uint32_t *vals, const uint32_t *begin,
                                     const uint32_t *end, int64_t n,
                                     typename vo_cuda_compute<S>::type *acc) {
  const int64_t hw = a.height * a.width, per_og = a.in_channels / a.offset_groups;
  VO_CUDA_GRID_STRIDE(i, n) {
    const int64_t c = g * per_og + i / hw, q = i % hw;
    const int64_t b = begin[q], e = end[q];
    if (b < e) vo_dcn_col2im_gather_at<S>(a, dcol, c, vals, b, e, acc + c * hw + q);
  }
}

// grad_bias[co] = sum of grad[:, co]: one block per channel, a fixed
// per-thread order and a fixed tree, so the same bits every run.
template <typename S>
__global__ void __launch_bounds__(kThreads)
    bias_grad_kernel(vo_dcn_args a, vo_cuda_view grad, S *grad_bias) {
  typedef typename vo_cuda_compute<S>::type T;
  __shared__ T part[kThreads];
  const int64_t plane = a.out_h * a.out_w, total = a.batch * plane;
  for (int64_t co = blockIdx.x; co < a.out_channels; co += gridDim.x) {
    T s = 0;
    for (int64_t i = threadIdx.x; i < total; i += kThreads) {
      const int64_t n = i / plane, pix = i % plane;
      s += vo_hd_load<S>(grad.data, vo_cuda_offset(grad, n, co, pix / a.out_w, pix % a.out_w));
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = kThreads / 2; w > 0; w /= 2) {
      if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) vo_hd_store(grad_bias, co, part[0]);
    __syncthreads();
  }
}

template <typename S>
__global__ void store_kernel(const typename vo_cuda_compute<S>::type *src, int64_t n, S *dst) {
  VO_CUDA_GRID_STRIDE(i, n) { vo_hd_store(dst, i, src[i]); }
}

// ------------------------------------------------------------ host side

// Grid-stride launch over n items (nothing to do for n == 0).
#define VO_DCN_LAUNCH(kernel, n, ...)                                              \
  do {                                                                             \
    if ((n) > 0) {                                                                 \
      kernel<<<vo_cuda_blocks((n), kThreads), kThreads, 0, stream>>>(__VA_ARGS__); \
      if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;                     \
    }                                                                              \
  } while (0)

size_t workspace_limit(const vo_exec *ex) {
  return ex->ctx->workspace_limit ? ex->ctx->workspace_limit : VO_DEFAULT_WORKSPACE_LIMIT;
}

// cuBLAS's own workspace comes out of ours too: up to 4 MiB when the limit is
// generous, none (slower algorithms, same results) when it is tight.
size_t cublas_workspace(size_t limit) {
  size_t b = limit / 16;
  if (b > ((size_t)4 << 20)) b = (size_t)4 << 20;
  b &= ~(size_t)255;
  return b < ((size_t)64 << 10) ? 0 : b;
}

// Carves 256-byte aligned regions out of one block, in order. The block is
// allocated 255 bytes larger (counted in `used` from the start) and aligned
// here, as cuBLAS's workspace must be, whatever the context's allocator
// returns.
struct carver {
  char *base;
  size_t used;
  static carver sizing() { return carver{nullptr, 255}; }
  static carver over(void *block) {
    const uintptr_t b = reinterpret_cast<uintptr_t>(block);
    return carver{reinterpret_cast<char *>((b + 255) & ~(uintptr_t)255), 0};
  }
  template <typename P>
  P *take(size_t bytes) {
    P *p = reinterpret_cast<P *>(base ? base + used : nullptr);
    used += vo_cuda_align(bytes);
    return p;
  }
};

template <typename T>
vo_status run_gemm(const vo_exec *ex, vo_cublas_handle h, const vo_dcn_gemm_shape &g, const T *a,
                   const T *b, T beta, T *c) {
  return vo_cublas_gemm(ex, h, g.trans_a, g.trans_b, g.m, g.n, g.k, a, g.lda, g.stride_a, b, g.ldb,
                        g.stride_b, beta, c, g.ldc, g.stride_c, g.batch);
}

vo_status too_small(const vo_exec *ex, size_t need) {
  return vo_fail(VO_ERROR_OUT_OF_MEMORY,
                 "%s: workspace limit %zu bytes is below the %zu bytes one output column needs",
                 ex->op_name, workspace_limit(ex), need);
}

// The largest tile length in [1, cap] whose workspace (bytes(len), monotone)
// fits the limit; 0 when not even one column does.
template <typename F>
int64_t choose_tile(size_t limit, int64_t cap, F bytes) {
  if (bytes(1) > limit) return 0;
  if (bytes(cap) <= limit) return cap;
  int64_t lo = 1, hi = cap;  // bytes(lo) fits, bytes(hi) does not
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (bytes(mid) <= limit)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

template <typename S>
vo_status forward(const vo_exec *ex, cudaStream_t stream) {
  typedef typename vo_cuda_compute<S>::type T;
  const vo_deform_conv2d_params &p = ex->p.deform_conv2d;
  vo_dcn_args a = make_args(p);
  const int64_t taps = p.kernel_h * p.kernel_w, cgk = p.in_channels / p.groups * taps;
  const int64_t coutg = p.out_channels / p.groups, plane = p.out_h * p.out_w;
  if (p.out->numel == 0) return VO_OK;
  const size_t limit = workspace_limit(ex), cbws = cublas_workspace(limit);
  auto bytes = [&](int64_t len) {
    carver c = carver::sizing();
    c.take<T>((size_t)(p.out_channels * cgk) * sizeof(T));
    c.take<T>((size_t)(p.in_channels * taps * len) * sizeof(T));
    c.take<T>((size_t)(p.out_channels * len) * sizeof(T));
    c.take<char>(cbws);
    return c.used;
  };
  const int64_t tile = choose_tile(limit, plane < INT32_MAX ? plane : INT32_MAX, bytes);
  if (tile < 1) return too_small(ex, bytes(1));
  vo_cuda_workspace ws(ex);
  char *base = static_cast<char *>(ws.alloc(bytes(tile)));
  if (!base) return VO_ERROR_OUT_OF_MEMORY;
  carver c = carver::over(base);
  T *wt = c.take<T>((size_t)(p.out_channels * cgk) * sizeof(T));
  T *cols = c.take<T>((size_t)(p.in_channels * taps * tile) * sizeof(T));
  T *obuf = c.take<T>((size_t)(p.out_channels * tile) * sizeof(T));
  void *cublas_ws = cbws ? c.take<char>(cbws) : nullptr;

  vo_status st;
  const vo_view *w = p.weight;
  VO_DCN_LAUNCH(weight_kernel<S>, p.out_channels * cgk, vo_cuda_view_of(w), w->shape[1],
                w->shape[2], w->shape[3], p.out_channels * cgk, wt);
  const bool product = cgk > 0 && coutg > 0;
  vo_cublas_handle h = nullptr;
  if (product && (st = vo_cublas_bind(ex, stream, cublas_ws, cbws, &h)) != VO_OK) return st;
  const vo_cuda_view bias = vo_cuda_view_of(p.bias);
  for (int64_t n = 0; n < p.batch; n++) {
    for (int64_t p0 = 0; p0 < plane; p0 += tile) {
      const int64_t len = plane - p0 < tile ? plane - p0 : tile;
      a.n = n;
      a.p0 = p0;
      a.len = len;
      VO_DCN_LAUNCH(im2col_kernel<S>, p.in_channels * taps * len, a, p.in_channels * taps * len,
                    cols);
      if (product) {
        // row-major obuf_g[coutg, len] = W_g[coutg, cgk] * cols_g[cgk, len]
        st = run_gemm(ex, h, vo_dcn_gemm_forward(cgk, coutg, len, p.groups), cols, wt, (T)0, obuf);
        if (st != VO_OK) return st;
      } else {
        st = vo_cuda_check(
            ex, cudaMemsetAsync(obuf, 0, (size_t)(p.out_channels * len) * sizeof(T), stream));
        if (st != VO_OK) return st;
      }
      VO_DCN_LAUNCH(epilogue_kernel<S>, p.out_channels * len, a, obuf, bias, p.out_channels * len,
                    static_cast<S *>(vo_view_addr(p.out)));
    }
  }
  return VO_OK;
}

template <typename S>
vo_status backward(const vo_exec *ex, cudaStream_t stream) {
  typedef typename vo_cuda_compute<S>::type T;
  const vo_deform_conv2d_params &p = ex->p.deform_conv2d;
  vo_dcn_args a = make_args(p);
  const int64_t taps = p.kernel_h * p.kernel_w, cgk = p.in_channels / p.groups * taps;
  const int64_t coutg = p.out_channels / p.groups, plane = p.out_h * p.out_w;
  const int64_t og = p.offset_groups, per_og = p.in_channels / og;
  const int64_t hw = p.height * p.width, in_plane = p.in_channels * hw;
  const bool direct = sizeof(S) != 2;  // float32/64 accumulate in grad_input itself
  const bool det = ex->ctx->deterministic != 0;
  const bool col2im = p.in_channels > 0 && hw > 0;
  const size_t limit = workspace_limit(ex), cbws = cublas_workspace(limit);
  int key_bits = 1;  // keys are plane indices or the sentinel hw
  while (key_bits < 63 && ((int64_t)1 << key_bits) <= hw) key_bits++;

  // CUB's scratch for sorting `items` (key, entry) pairs; 0 on failure,
  // which the sort itself then reports.
  auto sort_temp = [&](int64_t items) {
    size_t temp = 0;
    cub::DoubleBuffer<unsigned long long> k(nullptr, nullptr);
    cub::DoubleBuffer<uint32_t> v(nullptr, nullptr);
    if (cub::DeviceRadixSort::SortPairs(nullptr, temp, k, v, items, 0, key_bits, stream) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      return (size_t)0;
    }
    return temp;
  };
  auto bytes = [&](int64_t len) {
    carver c = carver::sizing();
    const int64_t entries = 4 * taps * len;
    c.take<T>((size_t)(p.out_channels * cgk) * sizeof(T));         // wt
    c.take<T>((size_t)(p.out_channels * cgk) * sizeof(T));         // gw
    c.take<float>(direct ? 0 : (size_t)in_plane * sizeof(float));  // acc
    c.take<T>((size_t)(p.out_channels * len) * sizeof(T));         // gbuf
    c.take<T>((size_t)(p.in_channels * taps * len) * sizeof(T));   // cols
    c.take<T>((size_t)(p.in_channels * taps * len) * sizeof(T));   // dcol
    c.take<char>(cbws);                                            // cuBLAS
    if (det && col2im) {
      c.take<unsigned long long>((size_t)entries * 8);  // keys, double-buffered
      c.take<unsigned long long>((size_t)entries * 8);
      c.take<uint32_t>((size_t)entries * 4);  // entry ids, double-buffered
      c.take<uint32_t>((size_t)entries * 4);
      c.take<uint32_t>((size_t)hw * 4);  // run begin / end per target
      c.take<uint32_t>((size_t)hw * 4);
      c.take<char>(sort_temp(entries));
    }
    return c.used;
  };
  int64_t cap = plane < INT32_MAX ? plane : INT32_MAX;
  if (det && cap > (int64_t)(UINT32_MAX / 4) / taps) cap = (int64_t)(UINT32_MAX / 4) / taps;
  if (cap < 1) cap = 1;
  const int64_t tile = choose_tile(limit, cap, bytes);
  if (tile < 1) return too_small(ex, bytes(1));
  vo_cuda_workspace ws(ex);
  char *base = static_cast<char *>(ws.alloc(bytes(tile)));
  if (!base) return VO_ERROR_OUT_OF_MEMORY;
  const int64_t max_entries = 4 * taps * tile;
  carver c = carver::over(base);
  T *wt = c.take<T>((size_t)(p.out_channels * cgk) * sizeof(T));
  T *gw = c.take<T>((size_t)(p.out_channels * cgk) * sizeof(T));
  float *acc_ws = c.take<float>(direct ? 0 : (size_t)in_plane * sizeof(float));
  T *gbuf = c.take<T>((size_t)(p.out_channels * tile) * sizeof(T));
  T *cols = c.take<T>((size_t)(p.in_channels * taps * tile) * sizeof(T));
  T *dcol = c.take<T>((size_t)(p.in_channels * taps * tile) * sizeof(T));
  void *cublas_ws = c.take<char>(cbws);
  unsigned long long *keys0 = nullptr, *keys1 = nullptr;
  uint32_t *vals0 = nullptr, *vals1 = nullptr, *run_begin = nullptr, *run_end = nullptr;
  void *sort_ws = nullptr;
  size_t sort_bytes = 0;
  if (det && col2im) {
    keys0 = c.take<unsigned long long>((size_t)max_entries * 8);
    keys1 = c.take<unsigned long long>((size_t)max_entries * 8);
    vals0 = c.take<uint32_t>((size_t)max_entries * 4);
    vals1 = c.take<uint32_t>((size_t)max_entries * 4);
    run_begin = c.take<uint32_t>((size_t)hw * 4);
    run_end = c.take<uint32_t>((size_t)hw * 4);
    sort_bytes = sort_temp(max_entries);
    sort_ws = c.take<char>(sort_bytes);
  }

  vo_status st;
  S *grad_input = static_cast<S *>(vo_view_addr(p.grad_input));
  if (direct && p.grad_input->numel > 0) {
    st = vo_cuda_check(
        ex, cudaMemsetAsync(grad_input, 0, (size_t)p.grad_input->numel * sizeof(S), stream));
    if (st != VO_OK) return st;
  }
  if (!p.mask && p.grad_mask->numel > 0) {
    st = vo_cuda_check(
        ex, cudaMemsetAsync(vo_view_addr(p.grad_mask), 0, (size_t)p.grad_mask->numel * sizeof(S), stream));
    if (st != VO_OK) return st;
  }
  const vo_view *w = p.weight;
  VO_DCN_LAUNCH(weight_kernel<S>, p.out_channels * cgk, vo_cuda_view_of(w), w->shape[1],
                w->shape[2], w->shape[3], p.out_channels * cgk, wt);
  if (p.out_channels * cgk > 0) {
    st = vo_cuda_check(ex,
                       cudaMemsetAsync(gw, 0, (size_t)(p.out_channels * cgk) * sizeof(T), stream));
    if (st != VO_OK) return st;
  }
  const bool product = cgk > 0 && coutg > 0;
  vo_cublas_handle h = nullptr;
  if (product && p.batch > 0 && (st = vo_cublas_bind(ex, stream, cublas_ws, cbws, &h)) != VO_OK)
    return st;
  const vo_cuda_view grad = vo_cuda_view_of(p.grad);
  S *grad_offset = static_cast<S *>(vo_view_addr(p.grad_offset));
  S *grad_mask = static_cast<S *>(vo_view_addr(p.grad_mask));
  for (int64_t n = 0; n < p.batch; n++) {
    T *acc =
        direct ? reinterpret_cast<T *>(grad_input) + n * in_plane : reinterpret_cast<T *>(acc_ws);
    if (!direct && in_plane > 0) {
      st = vo_cuda_check(ex, cudaMemsetAsync(acc_ws, 0, (size_t)in_plane * sizeof(float), stream));
      if (st != VO_OK) return st;
    }
    for (int64_t p0 = 0; p0 < plane; p0 += tile) {
      const int64_t len = plane - p0 < tile ? plane - p0 : tile;
      const int64_t rows = p.in_channels * taps * len;
      a.n = n;
      a.p0 = p0;
      a.len = len;
      VO_DCN_LAUNCH(grad_tile_kernel<S>, p.out_channels * len, a, grad, p.out_channels * len, gbuf);
      VO_DCN_LAUNCH(im2col_kernel<S>, rows, a, rows, cols);
      if (product) {
        // row-major gw_g[coutg, cgk] += gbuf_g[coutg, len] * cols_g[cgk, len]^T
        st = run_gemm(ex, h, vo_dcn_gemm_grad_weight(cgk, coutg, len, p.groups), cols, gbuf, (T)1,
                      gw);
        if (st != VO_OK) return st;
        // row-major dcol_g[cgk, len] = W_g[coutg, cgk]^T * gbuf_g[coutg, len]
        st =
            run_gemm(ex, h, vo_dcn_gemm_grad_cols(cgk, coutg, len, p.groups), gbuf, wt, (T)0, dcol);
        if (st != VO_OK) return st;
      } else if (rows > 0) {
        st = vo_cuda_check(ex, cudaMemsetAsync(dcol, 0, (size_t)rows * sizeof(T), stream));
        if (st != VO_OK) return st;
      }
      VO_DCN_LAUNCH(offset_grad_kernel<S>, og * taps * len, a, dcol, og * taps * len, grad_offset,
                    grad_mask);
      if (!col2im) continue;
      if (!det) {
        VO_DCN_LAUNCH(col2im_atomic_kernel<S>, rows, a, dcol, rows, acc);
        continue;
      }
      const int64_t entries = 4 * taps * len;
      for (int64_t g = 0; g < og; g++) {
        VO_DCN_LAUNCH(col2im_keys_kernel<S>, taps * len, a, g, taps * len, keys0, vals0);
        cub::DoubleBuffer<unsigned long long> dk(keys0, keys1);
        cub::DoubleBuffer<uint32_t> dv(vals0, vals1);
        size_t temp = sort_bytes;
        st = vo_cuda_check(ex, cub::DeviceRadixSort::SortPairs(sort_ws, temp, dk, dv, entries, 0,
                                                               key_bits, stream));
        if (st != VO_OK) return st;
        st = vo_cuda_check(ex, cudaMemsetAsync(run_begin, 0, (size_t)hw * 4, stream));
        if (st != VO_OK) return st;
        st = vo_cuda_check(ex, cudaMemsetAsync(run_end, 0, (size_t)hw * 4, stream));
        if (st != VO_OK) return st;
        VO_DCN_LAUNCH(segments_kernel, entries, dk.Current(), entries, (unsigned long long)hw,
                      run_begin, run_end);
        VO_DCN_LAUNCH(col2im_gather_kernel<S>, per_og * hw, a, dcol, g, dv.Current(), run_begin,
                      run_end, per_og * hw, acc);
      }
    }
    if (!direct)
      VO_DCN_LAUNCH(store_kernel<S>, in_plane, reinterpret_cast<const T *>(acc_ws), in_plane,
                    grad_input + n * in_plane);
  }
  if (p.out_channels > 0) {
    const unsigned int blocks = (unsigned int)(p.out_channels < 65535 ? p.out_channels : 65535);
    bias_grad_kernel<S>
        <<<blocks, kThreads, 0, stream>>>(a, grad, static_cast<S *>(vo_view_addr(p.grad_bias)));
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  }
  VO_DCN_LAUNCH(store_kernel<S>, p.out_channels * cgk, gw, p.out_channels * cgk,
                static_cast<S *>(vo_view_addr(p.grad_weight)));
  return VO_OK;
}

template <template <typename> class Run>
vo_status dispatch(const vo_exec *ex) {
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const cudaStream_t stream = vo_cuda_stream(ex);
  // CUB's dispatch can throw; nothing may unwind into the C callers.
  try {
    switch (ex->dtype) {
      case VO_F32: return Run<float>::run(ex, stream);
      case VO_F64: return Run<double>::run(ex, stream);
      case VO_F16: return Run<__half>::run(ex, stream);
      case VO_BF16: return Run<__nv_bfloat16>::run(ex, stream);
      default:
        return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: CUDA kernel has no dtype %s", ex->op_name,
                       vo_dtype_name(ex->dtype));
    }
  } catch (const std::exception &e) {
    (void)cudaGetLastError();
    return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: CUDA error: %s", ex->op_name, e.what());
  } catch (...) {
    (void)cudaGetLastError();
    return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: CUDA error: unexpected exception", ex->op_name);
  }
}

template <typename S>
struct run_forward {
  static vo_status run(const vo_exec *ex, cudaStream_t s) { return forward<S>(ex, s); }
};
template <typename S>
struct run_backward {
  static vo_status run(const vo_exec *ex, cudaStream_t s) { return backward<S>(ex, s); }
};

}  // namespace

extern "C" vo_status vo_cuda_deform_conv2d(const vo_exec *ex) { return dispatch<run_forward>(ex); }

extern "C" vo_status vo_cuda_deform_conv2d_backward(const vo_exec *ex) {
  return dispatch<run_backward>(ex);
}
