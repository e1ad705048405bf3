// CUDA box_iou, generalized_box_iou, distance_box_iou and complete_box_iou:
// one thread per output element. Their backward: one warp per box, summing
// its pairs in a fixed order (no atomics, the same bits every run), grad
// read along its rows in both passes. The per-pair math, forward and
// backward, is kernels/box_iou.h's.
#include "cuda/common.cuh"
#include "kernels/box_iou.h"

#include <type_traits>

namespace {

constexpr int kThreads = 256;

// Boxes' compute type: vo_cuda_compute's for float and half storage (and the
// T of vo_cuda_any<T>, for two box sets of different dtypes), double for
// integer boxes (torchvision computes their areas and intersections exactly,
// in integer arithmetic).
template <typename S, bool integer = std::is_integral<S>::value>
struct box_compute {
  typedef typename vo_cuda_compute<S>::type type;
};
template <typename S>
struct box_compute<S, true> {
  typedef double type;
};

template <typename S>
__device__ __forceinline__ typename box_compute<S>::type load_box(const vo_cuda_view &v,
                                                                  int64_t offset) {
  if constexpr (std::is_integral<S>::value)
    return static_cast<double>(static_cast<const S *>(v.data)[offset]);
  else
    return vo_cuda_load_view<S>(v, offset);
}

// One entry of the [N, M] matrix: kernels/box_iou.h's value of the pair.
__device__ __forceinline__ float pair_value(vo_iou_kind kind, const float *a, const float *b,
                                            float eps) {
  const vo_k_iou_box_f32 ba = vo_k_iou_box_of_f32(kind, a), bb = vo_k_iou_box_of_f32(kind, b);
  return vo_k_iou_pair_f32(kind, eps, &ba, &bb);
}
__device__ __forceinline__ double pair_value(vo_iou_kind kind, const double *a, const double *b,
                                             double eps) {
  const vo_k_iou_box_f64 ba = vo_k_iou_box_of_f64(kind, a), bb = vo_k_iou_box_of_f64(kind, b);
  return vo_k_iou_pair_f64(kind, eps, &ba, &bb);
}

// Boxes of storage type S (float, half or integer), computed in T
// (box_compute: double for double and integer boxes, else float), stored
// as O (double for double boxes, else float: torchvision's upcasting).
template <typename S, typename O>
__global__ void pairwise_iou_kernel(vo_cuda_view a, vo_cuda_view b, int64_t n, int64_t m,
                                    vo_iou_kind kind, typename box_compute<S>::type eps, O *out) {
  typedef typename box_compute<S>::type T;
  VO_CUDA_GRID_STRIDE(e, n * m) {
    const int64_t i = e / m;
    const int64_t j = e - i * m;
    T ba[4], bb[4];
    for (int k = 0; k < 4; ++k) {
      ba[k] = load_box<S>(a, vo_cuda_offset(a, i, k));
      bb[k] = load_box<S>(b, vo_cuda_offset(b, j, k));
    }
    out[e] = static_cast<O>(pair_value(kind, ba, bb, eps));
  }
}

template <typename S, typename O>
vo_status pairwise_run(const vo_exec *ex, cudaStream_t stream) {
  typedef typename box_compute<S>::type T;
  const vo_pairwise_iou_params &p = ex->p.iou;
  const int64_t n = p.a->shape[0];
  const int64_t m = p.b->shape[0];
  if (n == 0 || m == 0) return VO_OK;
  pairwise_iou_kernel<S, O><<<vo_cuda_blocks(n * m, kThreads), kThreads, 0, stream>>>(
      vo_cuda_view_of(p.a), vo_cuda_view_of(p.b), n, m, p.kind, (T)p.eps,
      static_cast<O *>(vo_view_addr(p.out)));
  return vo_cuda_check_launch(ex);
}

// ------------------------------------------------------------ backward

constexpr int kWarp = 32;

__device__ __forceinline__ float atan_ratio(const float *box) {
  return vo_k_iou_atan_ratio_f32(box);
}
__device__ __forceinline__ double atan_ratio(const double *box) {
  return vo_k_iou_atan_ratio_f64(box);
}
__device__ __forceinline__ void pair_grad(vo_iou_kind kind, float eps, const float *a,
                                          const float *b, float ta, float tb, float g, float *ga,
                                          float *gb) {
  vo_k_iou_pair_grad_f32(kind, eps, a, b, ta, tb, g, ga, gb);
}
__device__ __forceinline__ void pair_grad(vo_iou_kind kind, double eps, const double *a,
                                          const double *b, double ta, double tb, double g,
                                          double *ga, double *gb) {
  vo_k_iou_pair_grad_f64(kind, eps, a, b, ta, tb, g, ga, gb);
}

// The gradient of one box set: warp w owns box i = w of `own` (grid-stride
// over boxes); lane l sums the pairs j = l, l + 32, ... of `other` in order
// (in double), then a fixed shuffle tree adds the 32 partial sums. grad is
// [N, M] with `own` its rows (own_is_a) or its columns, of any floating
// dtype: read by its runtime dtype. out [count_own, 4] has own's dtype.
template <typename S>
__global__ void pairwise_iou_backward_kernel(vo_cuda_view grad, vo_cuda_view own,
                                             vo_cuda_view other, int64_t count_own,
                                             int64_t count_other, int own_is_a, vo_iou_kind kind,
                                             typename vo_cuda_compute<S>::type eps,
                                             vo_cuda_view out) {
  typedef typename vo_cuda_compute<S>::type T;
  const int lane = (int)(threadIdx.x % kWarp);
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / kWarp);
  for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / kWarp; i < count_own;
       i += warps) {
    T mine[4];
    for (int k = 0; k < 4; ++k) mine[k] = vo_cuda_load_view<S>(own, vo_cuda_offset(own, i, k));
    // atan(w / h) is read by complete_box_iou only: computed once per box.
    const bool complete = kind == VO_IOU_COMPLETE;
    const T t_mine = complete ? atan_ratio(mine) : T(0);
    double acc[4] = {0, 0, 0, 0};
    for (int64_t j = lane; j < count_other; j += kWarp) {
      T theirs[4], ga[4], gb[4];
      for (int k = 0; k < 4; ++k)
        theirs[k] = vo_cuda_load_view<S>(other, vo_cuda_offset(other, j, k));
      const T t_theirs = complete ? atan_ratio(theirs) : T(0);
      if (own_is_a) {
        const T g = vo_cuda_load_as<T>(grad, vo_cuda_offset(grad, i, j));
        pair_grad(kind, eps, mine, theirs, t_mine, t_theirs, g, ga, gb);
        for (int k = 0; k < 4; ++k) acc[k] += (double)ga[k];
      } else {
        const T g = vo_cuda_load_as<T>(grad, vo_cuda_offset(grad, j, i));
        pair_grad(kind, eps, theirs, mine, t_theirs, t_mine, g, ga, gb);
        for (int k = 0; k < 4; ++k) acc[k] += (double)gb[k];
      }
    }
    // i is the same in every lane, so the whole warp is here.
    for (int off = kWarp / 2; off > 0; off /= 2)
      for (int k = 0; k < 4; ++k) acc[k] += __shfl_down_sync(0xffffffffu, acc[k], off);
    if (lane == 0)
      for (int k = 0; k < 4; ++k) vo_cuda_store_view<S>(out, i * 4 + k, (T)acc[k]);
  }
}

// The gradient of `b`, the columns of grad: the same warp-per-box sums as the
// kernel above (lane l adds the pairs j = l, l + 32, ... in order, then the
// same shuffle tree), but a block of 8 warps owns 8 consecutive boxes and
// stages each 32 x 8 tile of grad (rows j0.., those 8 columns: one 32-byte
// sector a row in float32) in shared memory first: one warp per box reading
// its column directly made 32 separate transactions per step. (8 warps, not
// 32: a 1,024-thread block caps registers at 64, and float64 then spills.)
constexpr int kColumnWarps = 8;

template <typename S>
__global__ void __launch_bounds__(kColumnWarps *kWarp)
    pairwise_iou_backward_columns_kernel(vo_cuda_view grad, vo_cuda_view own, vo_cuda_view other,
                                         int64_t count_own, int64_t count_other, vo_iou_kind kind,
                                         typename vo_cuda_compute<S>::type eps, vo_cuda_view out) {
  typedef typename vo_cuda_compute<S>::type T;
  __shared__ T tile[kWarp][kColumnWarps + 1];  // [row][column], padded against bank conflicts
  const int lane = (int)(threadIdx.x % kWarp), w = (int)(threadIdx.x / kWarp);
  const bool complete = kind == VO_IOU_COMPLETE;
  for (int64_t i0 = (int64_t)blockIdx.x * kColumnWarps; i0 < count_own;
       i0 += (int64_t)gridDim.x * kColumnWarps) {
    const int64_t i = i0 + w;
    const bool active = i < count_own;  // the same in the whole warp
    T mine[4] = {0, 0, 0, 0};
    if (active)
      for (int k = 0; k < 4; ++k) mine[k] = vo_cuda_load_view<S>(own, vo_cuda_offset(own, i, k));
    const T t_mine = active && complete ? atan_ratio(mine) : T(0);
    double acc[4] = {0, 0, 0, 0};
    for (int64_t j0 = 0; j0 < count_other; j0 += kWarp) {
      const int tr = (int)threadIdx.x / kColumnWarps, tc = (int)threadIdx.x % kColumnWarps;
      const int64_t r = j0 + tr, c = i0 + tc;  // thread (tr, tc) stages grad[r, c]
      tile[tr][tc] = r < count_other && c < count_own
                         ? vo_cuda_load_as<T>(grad, vo_cuda_offset(grad, r, c))
                         : T(0);
      __syncthreads();
      const int64_t j = j0 + lane;
      if (active && j < count_other) {
        T theirs[4], ga[4], gb[4];
        for (int k = 0; k < 4; ++k)
          theirs[k] = vo_cuda_load_view<S>(other, vo_cuda_offset(other, j, k));
        const T t_theirs = complete ? atan_ratio(theirs) : T(0);
        pair_grad(kind, eps, theirs, mine, t_theirs, t_mine, tile[lane][w], ga, gb);
        for (int k = 0; k < 4; ++k) acc[k] += (double)gb[k];
      }
      __syncthreads();  // the tile is rewritten next step
    }
    if (active) {
      for (int off = kWarp / 2; off > 0; off /= 2)
        for (int k = 0; k < 4; ++k) acc[k] += __shfl_down_sync(0xffffffffu, acc[k], off);
      if (lane == 0)
        for (int k = 0; k < 4; ++k) vo_cuda_store_view<S>(out, i * 4 + k, (T)acc[k]);
    }
  }
}

template <typename S>
vo_status pairwise_backward_run(const vo_exec *ex, cudaStream_t stream) {
  typedef typename vo_cuda_compute<S>::type T;
  const vo_pairwise_iou_backward_params &p = ex->p.iou_backward;
  const int64_t n = p.a->shape[0];
  const int64_t m = p.b->shape[0];
  const vo_cuda_view grad_a = vo_cuda_view_of(p.grad_a), grad_b = vo_cuda_view_of(p.grad_b);
  if (n == 0 || m == 0) {
    // No pairs: the other side's gradient is all zeros.
    if (n)
      return vo_cuda_check(
          ex, cudaMemsetAsync(grad_a.data, 0, (size_t)n * 4 * vo_dtype_size(grad_a.dtype), stream));
    if (m)
      return vo_cuda_check(
          ex, cudaMemsetAsync(grad_b.data, 0, (size_t)m * 4 * vo_dtype_size(grad_b.dtype), stream));
    return VO_OK;
  }
  const vo_cuda_view g = vo_cuda_view_of(p.grad);
  const vo_cuda_view a = vo_cuda_view_of(p.a);
  const vo_cuda_view b = vo_cuda_view_of(p.b);
  const T eps = (T)p.eps;
  pairwise_iou_backward_kernel<S><<<vo_cuda_blocks(n * kWarp, kThreads), kThreads, 0, stream>>>(
      g, a, b, n, m, 1, p.kind, eps, grad_a);
  vo_status st = vo_cuda_check_launch(ex);
  if (st != VO_OK) return st;
  pairwise_iou_backward_columns_kernel<S>
      <<<vo_cuda_blocks(m, kColumnWarps), kColumnWarps * kWarp, 0, stream>>>(g, b, a, m, n, p.kind,
                                                                             eps, grad_b);
  return vo_cuda_check_launch(ex);
}

}  // namespace

extern "C" vo_status vo_cuda_pairwise_iou_backward(const vo_exec *ex) {
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const cudaStream_t stream = vo_cuda_stream(ex);
  // Box sets of two dtypes: each read at its own, computing in ex->dtype.
  const vo_dtype boxes = ex->p.iou_backward.a->dtype;
  if (ex->p.iou_backward.b->dtype != boxes)
    return ex->dtype == VO_F64 ? pairwise_backward_run<vo_cuda_any<double>>(ex, stream)
                               : pairwise_backward_run<vo_cuda_any<float>>(ex, stream);
  switch (boxes) {
    case VO_F32: return pairwise_backward_run<float>(ex, stream);
    case VO_F64: return pairwise_backward_run<double>(ex, stream);
    case VO_F16: return pairwise_backward_run<__half>(ex, stream);
    case VO_BF16: return pairwise_backward_run<__nv_bfloat16>(ex, stream);
    default:
      return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: CUDA kernel has no dtype %s", ex->op_name,
                     vo_dtype_name(boxes));
  }
}

extern "C" vo_status vo_cuda_pairwise_iou(const vo_exec *ex) {
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const cudaStream_t stream = vo_cuda_stream(ex);
  const vo_dtype boxes = ex->p.iou.a->dtype;
  // Box sets of two dtypes: each read at its own, computing in ex->dtype,
  // stored in the output's dtype (float64 when either set is float64).
  if (ex->p.iou.b->dtype != boxes) {
    if (ex->dtype != VO_F64) return pairwise_run<vo_cuda_any<float>, float>(ex, stream);
    return ex->p.iou.out->dtype == VO_F64 ? pairwise_run<vo_cuda_any<double>, double>(ex, stream)
                                          : pairwise_run<vo_cuda_any<double>, float>(ex, stream);
  }
  switch (boxes) {
    case VO_F32: return pairwise_run<float, float>(ex, stream);
    case VO_F64: return pairwise_run<double, double>(ex, stream);
    case VO_F16: return pairwise_run<__half, float>(ex, stream);
    case VO_BF16: return pairwise_run<__nv_bfloat16, float>(ex, stream);
    case VO_I64: return pairwise_run<int64_t, float>(ex, stream);
    case VO_I32: return pairwise_run<int32_t, float>(ex, stream);
    case VO_I16: return pairwise_run<int16_t, float>(ex, stream);
    case VO_I8: return pairwise_run<int8_t, float>(ex, stream);
    case VO_U8: return pairwise_run<uint8_t, float>(ex, stream);
    default:
      return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: CUDA kernel has no dtype %s", ex->op_name,
                     vo_dtype_name(boxes));
  }
}
