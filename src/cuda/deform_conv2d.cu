// CUDA deform_conv2d and deform_conv2d_backward: deformable im2col / col2im
// kernels (the portable math of kernels/deform_conv2d.h) around cuBLAS
// products (loaded at first use, cuda/cublas_loader.cuh), on column tiles of
// output pixels sized to the context's workspace limit, as the CPU backend:
// part of one image, or several small images to a product.
// Half types compute in float32. The backward's col2im is atomic, or in a
// deterministic context a stable sort of every contribution by its target
// followed by a fixed-order gather (the CPU's summation order).
#include <exception>

#include <cub/device/device_radix_sort.cuh>

#include "core/deform_conv2d_geom.h"
#include "cuda/cublas_loader.cuh"
#include "cuda/deform_conv2d_math.cuh"
#include "cuda/portable.cuh"

namespace {

constexpr int kThreads = 256;

// ------------------------------------------------------------ kernels
// Each is a grid-stride loop over one portable work item of
// kernels/deform_conv2d.h, for the storage dtype D (vo_dcn_dtype_*).

// A contiguous matrix of the call: the weight [Cout, Cin/groups, kh, kw]
// (any strides), or with kGrad the tile's incoming gradient as [Cout, len].
template <typename D, bool kGrad>
__global__ void matrix_kernel(vo_k_dcn_geom a, const typename D::S *src, int64_t n,
                              typename D::T *out) {
  VO_CUDA_GRID_STRIDE(i, n) {
    if constexpr (kGrad)
      D::grad_run(a, src, i / a.len, i % a.len, 1, out + i);
    else
      D::weight_run(a, src, i, 1, out + i);
  }
}

template <typename D>
__global__ void im2col_kernel(vo_k_dcn_geom a, const typename D::S *input,
                              const typename D::S *offset, const typename D::S *mask, int64_t n,
                              typename D::T *cols) {
  VO_CUDA_GRID_STRIDE(i, n) { cols[i] = D::im2col_at(a, input, offset, mask, i); }
}

// out[image, co, pixel] of column l = obuf[co, l] + bias[co].
template <typename D>
__global__ void epilogue_kernel(vo_k_dcn_geom a, const typename D::T *obuf,
                                const typename D::S *bias, int64_t n, typename D::S *out) {
  VO_CUDA_GRID_STRIDE(i, n) { D::epilogue_run(a, obuf, bias, i / a.len, i % a.len, 1, out); }
}

template <typename D>
__global__ void offset_grad_kernel(vo_k_dcn_geom a, const typename D::S *input,
                                   const typename D::S *offset, const typename D::S *mask,
                                   const typename D::T *dcol, int64_t n, typename D::S *grad_offset,
                                   typename D::S *grad_mask) {
  VO_CUDA_GRID_STRIDE(i, n) {
    D::offset_grad_at(a, input, offset, mask, dcol, i, grad_offset, grad_mask);
  }
}

template <typename D>
__global__ void col2im_atomic_kernel(vo_k_dcn_geom a, const typename D::S *offset,
                                     const typename D::S *mask, const typename D::T *dcol,
                                     int64_t n, typename D::T *acc) {
  VO_CUDA_GRID_STRIDE(i, n) { D::col2im_at(a, offset, mask, dcol, i, acc); }
}

template <typename D>
__global__ void col2im_keys_kernel(vo_k_dcn_geom a, const typename D::S *offset,
                                   const typename D::S *mask, int64_t g, int64_t n,
                                   unsigned long long *keys, uint32_t *vals) {
  VO_CUDA_GRID_STRIDE(i, n) {
    int64_t k[4];
    D::col2im_keys_at(a, offset, mask, g, i, k);
    for (int j = 0; j < 4; j++) {
      keys[4 * i + j] = (unsigned long long)k[j];
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

// One thread per (channel of offset group g, plane element of the tile's
// images): the element's contributions in sorted order, added to acc (the
// images' [Cin, H, W]).
template <typename D>
__global__ void col2im_gather_kernel(vo_k_dcn_geom a, const typename D::S *offset,
                                     const typename D::S *mask, const typename D::T *dcol,
                                     int64_t g, const uint32_t *vals, const uint32_t *begin,
                                     const uint32_t *end, int64_t n, typename D::T *acc) {
  VO_CUDA_GRID_STRIDE(i, n) {
    D::col2im_gather_item_at(a, offset, mask, dcol, g, vals, begin, end, i, acc);
  }
}

// grad_bias[co] = sum of grad[:, co]: one block per channel, a fixed
// per-thread order and a fixed tree, so the same bits every run.
template <typename D>
__global__ void __launch_bounds__(kThreads)
    bias_grad_kernel(vo_k_dcn_geom a, const typename D::S *grad, typename D::S *grad_bias) {
  typedef typename D::T T;
  __shared__ T part[kThreads];
  const int64_t plane = a.out_h * a.out_w, total = a.batch * plane;
  const int64_t *gs = a.grad_stride;
  for (int64_t co = blockIdx.x; co < a.out_channels; co += gridDim.x) {
    T s = 0;
    for (int64_t i = threadIdx.x; i < total; i += kThreads) {
      const int64_t n = i / plane, pix = i % plane;
      s +=
          D::load(grad, n * gs[0] + co * gs[1] + (pix / a.out_w) * gs[2] + (pix % a.out_w) * gs[3]);
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = kThreads / 2; w > 0; w /= 2) {
      if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) D::store(grad_bias, co, part[0]);
    __syncthreads();
  }
}

template <typename D>
__global__ void store_kernel(const typename D::T *src, int64_t n, typename D::S *dst) {
  VO_CUDA_GRID_STRIDE(i, n) { D::store(dst, i, src[i]); }
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

// cuBLAS's own workspace comes out of ours too: an eighth of the limit, up to
// 4 MiB (32 MiB from sm_90 on, what cuBLAS's documentation recommends for
// Hopper's kernels: the default 256 MiB limit gives that), none (slower
// algorithms) when the limit is tight. The size depends on the device and
// the limit only, so a call repeats its results.
size_t cublas_workspace(size_t limit) {
  int device = 0, major = 0;
  const bool hopper =
      cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      major >= 9;
  const size_t cap = (size_t)(hopper ? 32 : 4) << 20;
  size_t b = limit / 8;
  if (b > cap) b = cap;
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
                 ex->op_name, ex->ctx->workspace_limit, need);
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

// The tile length: the largest part of one image whose workspace fits or,
// when a whole image fits, as many whole images as vo_dcn_images_wanted asks
// (VO_DCN_DEVICE_COLUMNS) and the limit allows; at most cap columns. 0 when
// not even one column fits.
template <typename F>
int64_t choose_tile_images(const vo_deform_conv2d_params &p, size_t limit, int64_t cap, F bytes) {
  const int64_t plane = p.out_h * p.out_w;
  const int64_t tile = choose_tile(limit, cap < plane ? cap : plane, bytes);
  if (tile < plane) return tile;
  int64_t k = vo_dcn_images_wanted(&p, VO_DCN_DEVICE_COLUMNS);
  if (k > cap / plane) k = cap / plane;
  if (k <= 1) return tile;
  return plane * choose_tile(limit, k, [&](int64_t m) { return bytes(m * plane); });
}

// The tensors' first elements as D's storage type (NULL without the tensor).
template <typename D>
typename D::S *addr(const vo_view *v) {
  return v ? static_cast<typename D::S *>(vo_view_addr(v)) : nullptr;
}

// The binding of the portable math (deform_conv2d_math.cuh) for dtype code DT.
template <int DT>
struct dcn_dtype;
template <>
struct dcn_dtype<VO_DT_F32> {
  typedef vo_dcn_dtype_f32 type;
};
template <>
struct dcn_dtype<VO_DT_F64> {
  typedef vo_dcn_dtype_f64 type;
};
template <>
struct dcn_dtype<VO_DT_F16> {
  typedef vo_dcn_dtype_f16 type;
};
template <>
struct dcn_dtype<VO_DT_BF16> {
  typedef vo_dcn_dtype_bf16 type;
};

template <int DT>
struct run_forward {
  static vo_status run(const vo_exec *ex, cudaStream_t stream) {
    typedef typename dcn_dtype<DT>::type D;
    typedef typename D::T T;
    const vo_deform_conv2d_params &p = ex->p.deform_conv2d;
    vo_k_dcn_geom a = vo_dcn_geom_of(&p);
    const int64_t taps = p.kernel_h * p.kernel_w, cgk = p.in_channels / p.groups * taps;
    const int64_t coutg = p.out_channels / p.groups;
    if (p.out->numel == 0) return VO_OK;
    const size_t limit = ex->ctx->workspace_limit, cbws = cublas_workspace(limit);
    auto bytes = [&](int64_t len) {
      carver c = carver::sizing();
      c.take<T>((size_t)(p.out_channels * cgk) * sizeof(T));
      c.take<T>((size_t)(p.in_channels * taps * len) * sizeof(T));
      c.take<T>((size_t)(p.out_channels * len) * sizeof(T));
      c.take<char>(cbws);
      return c.used;
    };
    const int64_t tile = choose_tile_images(p, limit, INT32_MAX, bytes);
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
    VO_DCN_LAUNCH((matrix_kernel<D, false>), p.out_channels * cgk, a, addr<D>(p.weight),
                  p.out_channels * cgk, wt);
    const bool product = cgk > 0 && coutg > 0;
    vo_cublas_handle h = nullptr;
    if (product && (st = vo_cublas_bind(ex, stream, cublas_ws, cbws, &h)) != VO_OK) return st;
    const typename D::S *input = addr<D>(p.input), *offset = addr<D>(p.offset);
    const typename D::S *mask = addr<D>(p.mask);
    while (vo_dcn_next_tile(&a, tile)) {
      const int64_t len = a.len;
      VO_DCN_LAUNCH(im2col_kernel<D>, p.in_channels * taps * len, a, input, offset, mask,
                    p.in_channels * taps * len, cols);
      if (product) {
        // row-major obuf_g[coutg, len] = W_g[coutg, cgk] * cols_g[cgk, len]
        st = run_gemm(ex, h, vo_dcn_gemm_forward(cgk, coutg, len, p.groups), cols, wt, (T)0, obuf);
        if (st != VO_OK) return st;
      } else {
        st = vo_cuda_check(
            ex, cudaMemsetAsync(obuf, 0, (size_t)(p.out_channels * len) * sizeof(T), stream));
        if (st != VO_OK) return st;
      }
      VO_DCN_LAUNCH(epilogue_kernel<D>, p.out_channels * len, a, obuf, addr<D>(p.bias),
                    p.out_channels * len, addr<D>(p.out));
    }
    return VO_OK;
  }
};

template <int DT>
struct run_backward {
  static vo_status run(const vo_exec *ex, cudaStream_t stream) {
    typedef typename dcn_dtype<DT>::type D;
    typedef typename D::S S;
    typedef typename D::T T;
    const vo_deform_conv2d_params &p = ex->p.deform_conv2d;
    vo_k_dcn_geom a = vo_dcn_geom_of(&p);
    const int64_t taps = p.kernel_h * p.kernel_w, cgk = p.in_channels / p.groups * taps;
    const int64_t coutg = p.out_channels / p.groups;
    const int64_t og = p.offset_groups, per_og = p.in_channels / og;
    const int64_t hw = p.height * p.width, in_plane = p.in_channels * hw;
    const bool direct = sizeof(S) != 2;  // float32/64 accumulate in grad_input itself
    const bool det = ex->ctx->deterministic != 0;
    const bool col2im = p.in_channels > 0 && hw > 0;
    const size_t limit = ex->ctx->workspace_limit, cbws = cublas_workspace(limit);
    // The bits of a tile of len columns' keys: plane elements of its images
    // or the sentinel images * hw.
    auto key_bits_of = [&](int64_t len) {
      int bits = 1;
      while (bits < 63 && ((int64_t)1 << bits) <= vo_dcn_tile_images_max(&p, len) * hw) bits++;
      return bits;
    };

    // CUB's scratch for sorting `items` (key, entry) pairs of key_bits bits;
    // 0 on failure, which the sort itself then reports.
    auto sort_temp = [&](int64_t items, int key_bits) {
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
      const int64_t entries = 4 * taps * len, images = vo_dcn_tile_images_max(&p, len);
      c.take<T>((size_t)(p.out_channels * cgk) * sizeof(T));                    // wt
      c.take<T>((size_t)(p.out_channels * cgk) * sizeof(T));                    // gw
      c.take<float>(direct ? 0 : (size_t)(images * in_plane) * sizeof(float));  // acc
      c.take<T>((size_t)(p.out_channels * len) * sizeof(T));                    // gbuf
      c.take<T>((size_t)(p.in_channels * taps * len) * sizeof(T));              // cols
      c.take<T>((size_t)(p.in_channels * taps * len) * sizeof(T));              // dcol
      c.take<char>(cbws);                                                       // cuBLAS
      if (det && col2im) {
        c.take<unsigned long long>((size_t)entries * 8);  // keys, double-buffered
        c.take<unsigned long long>((size_t)entries * 8);
        c.take<uint32_t>((size_t)entries * 4);  // entry ids, double-buffered
        c.take<uint32_t>((size_t)entries * 4);
        c.take<uint32_t>((size_t)(images * hw) * 4);  // run begin / end per target
        c.take<uint32_t>((size_t)(images * hw) * 4);
        c.take<char>(sort_temp(entries, key_bits_of(len)));
      }
      return c.used;
    };
    int64_t cap = INT32_MAX;  // cuBLAS's int sizes; the entry ids are 32-bit
    if (det && cap > (int64_t)(UINT32_MAX / 4) / taps) cap = (int64_t)(UINT32_MAX / 4) / taps;
    if (cap < 1) cap = 1;
    const int64_t tile = choose_tile_images(p, limit, cap, bytes);
    if (tile < 1) return too_small(ex, bytes(1));
    const int64_t max_images = vo_dcn_tile_images_max(&p, tile);
    const int key_bits = key_bits_of(tile);
    vo_cuda_workspace ws(ex);
    char *base = static_cast<char *>(ws.alloc(bytes(tile)));
    if (!base) return VO_ERROR_OUT_OF_MEMORY;
    const int64_t max_entries = 4 * taps * tile;
    carver c = carver::over(base);
    T *wt = c.take<T>((size_t)(p.out_channels * cgk) * sizeof(T));
    T *gw = c.take<T>((size_t)(p.out_channels * cgk) * sizeof(T));
    float *acc_ws = c.take<float>(direct ? 0 : (size_t)(max_images * in_plane) * sizeof(float));
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
      run_begin = c.take<uint32_t>((size_t)(max_images * hw) * 4);
      run_end = c.take<uint32_t>((size_t)(max_images * hw) * 4);
      sort_bytes = sort_temp(max_entries, key_bits);
      sort_ws = c.take<char>(sort_bytes);
    }

    vo_status st;
    S *grad_input = addr<D>(p.grad_input);
    if (direct && p.grad_input->numel > 0) {
      st = vo_cuda_check(
          ex, cudaMemsetAsync(grad_input, 0, (size_t)p.grad_input->numel * sizeof(S), stream));
      if (st != VO_OK) return st;
    }
    if (!p.mask && p.grad_mask->numel > 0) {
      st = vo_cuda_check(ex, cudaMemsetAsync(vo_view_addr(p.grad_mask), 0,
                                             (size_t)p.grad_mask->numel * sizeof(S), stream));
      if (st != VO_OK) return st;
    }
    VO_DCN_LAUNCH((matrix_kernel<D, false>), p.out_channels * cgk, a, addr<D>(p.weight),
                  p.out_channels * cgk, wt);
    if (p.out_channels * cgk > 0) {
      st = vo_cuda_check(
          ex, cudaMemsetAsync(gw, 0, (size_t)(p.out_channels * cgk) * sizeof(T), stream));
      if (st != VO_OK) return st;
    }
    const bool product = cgk > 0 && coutg > 0;
    vo_cublas_handle h = nullptr;
    if (product && p.batch > 0 && (st = vo_cublas_bind(ex, stream, cublas_ws, cbws, &h)) != VO_OK)
      return st;
    const S *grad = addr<D>(p.grad), *input = addr<D>(p.input), *offset = addr<D>(p.offset);
    const S *mask = addr<D>(p.mask);
    S *grad_offset = addr<D>(p.grad_offset), *grad_mask = addr<D>(p.grad_mask);
    while (vo_dcn_next_tile(&a, tile)) {
      const int64_t len = a.len, rows = p.in_channels * taps * len;
      const int64_t images = vo_k_dcn_tile_images(&a), keys = images * hw;
      // float32/64 accumulate in grad_input's images from a.n, the half
      // types in float32 images of the workspace, zeroed as an image begins
      // and stored once the tile completes it
      T *acc = direct ? reinterpret_cast<T *>(grad_input) + a.n * in_plane
                      : reinterpret_cast<T *>(acc_ws);
      if (!direct && a.p0 == 0 && in_plane > 0) {
        st = vo_cuda_check(
            ex, cudaMemsetAsync(acc_ws, 0, (size_t)(images * in_plane) * sizeof(float), stream));
        if (st != VO_OK) return st;
      }
      VO_DCN_LAUNCH((matrix_kernel<D, true>), p.out_channels * len, a, grad, p.out_channels * len,
                    gbuf);
      VO_DCN_LAUNCH(im2col_kernel<D>, rows, a, input, offset, mask, rows, cols);
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
      VO_DCN_LAUNCH(offset_grad_kernel<D>, og * taps * len, a, input, offset, mask, dcol,
                    og * taps * len, grad_offset, grad_mask);
      if (col2im && !det)
        VO_DCN_LAUNCH(col2im_atomic_kernel<D>, rows, a, offset, mask, dcol, rows, acc);
      const int64_t entries = 4 * taps * len;
      for (int64_t g = 0; col2im && det && g < og; g++) {
        VO_DCN_LAUNCH(col2im_keys_kernel<D>, taps * len, a, offset, mask, g, taps * len, keys0,
                      vals0);
        cub::DoubleBuffer<unsigned long long> dk(keys0, keys1);
        cub::DoubleBuffer<uint32_t> dv(vals0, vals1);
        size_t temp = sort_bytes;
        st = vo_cuda_check(ex, cub::DeviceRadixSort::SortPairs(sort_ws, temp, dk, dv, entries, 0,
                                                               key_bits, stream));
        if (st != VO_OK) return st;
        st = vo_cuda_check(ex, cudaMemsetAsync(run_begin, 0, (size_t)keys * 4, stream));
        if (st != VO_OK) return st;
        st = vo_cuda_check(ex, cudaMemsetAsync(run_end, 0, (size_t)keys * 4, stream));
        if (st != VO_OK) return st;
        VO_DCN_LAUNCH(segments_kernel, entries, dk.Current(), entries, (unsigned long long)keys,
                      run_begin, run_end);
        VO_DCN_LAUNCH(col2im_gather_kernel<D>, per_og * keys, a, offset, mask, dcol, g,
                      dv.Current(), run_begin, run_end, per_og * keys, acc);
      }
      const int64_t done = vo_dcn_tile_completes(&a) * in_plane;
      if (!direct)
        VO_DCN_LAUNCH(store_kernel<D>, done, reinterpret_cast<const T *>(acc_ws), done,
                      grad_input + a.n * in_plane);
    }
    if (p.out_channels > 0) {
      const unsigned int blocks = (unsigned int)(p.out_channels < 65535 ? p.out_channels : 65535);
      bias_grad_kernel<D><<<blocks, kThreads, 0, stream>>>(a, grad, addr<D>(p.grad_bias));
      if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
    }
    VO_DCN_LAUNCH(store_kernel<D>, p.out_channels * cgk, gw, p.out_channels * cgk,
                  addr<D>(p.grad_weight));
    return VO_OK;
  }
};

template <template <int> class Run>
vo_status dispatch(const vo_exec *ex) {
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const cudaStream_t stream = vo_cuda_stream(ex);
  // CUB's dispatch can throw; nothing may unwind into the C callers.
  try {
    return vo_k_run_dtype<Run>(ex, stream);
  } catch (const std::exception &e) {
    (void)cudaGetLastError();
    return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: CUDA error: %s", ex->op_name, e.what());
  } catch (...) {
    (void)cudaGetLastError();
    return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: CUDA error: unexpected exception", ex->op_name);
  }
}

}  // namespace

extern "C" vo_status vo_cuda_deform_conv2d(const vo_exec *ex) { return dispatch<run_forward>(ex); }

extern "C" vo_status vo_cuda_deform_conv2d_backward(const vo_exec *ex) {
  return dispatch<run_backward>(ex);
}
