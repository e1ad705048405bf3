// CUDA soft_nms and batched_soft_nms (vo_soft_nms_params): the work items
// of kernels/soft_nms.h, the ones OpenCL runs (opencl/soft_nms.c, whose
// tests on PoCL vouch for them), queued on the call's stream: the
// (category, index) records and, batched, their merge passes, the gather,
// a block per category run, then (batched) the order by score and the
// rows. Nothing waits for the stream.

#include "core/soft_nms_args.h"
#include "cuda/portable.cuh"

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ const vo_k_sort_pair *pairs_at(const char *ws, uint64_t at) {
  return reinterpret_cast<const vo_k_sort_pair *>(ws + at);
}

__global__ void pair_kernel(vo_k_snms_args a, const int64_t *idxs, char *ws) {
  VO_CUDA_GRID_STRIDE(i, a.n) { vo_k_snms_pair(&a, idxs, ws, i); }
}

__global__ void sort_pass_kernel(vo_k_snms_args a, char *ws, uint64_t src, uint64_t dst,
                                 int64_t width) {
  VO_CUDA_GRID_STRIDE(e, a.n) {
    vo_k_sort_pass(reinterpret_cast<const vo_k_sort_pair *>(ws + src),
                   reinterpret_cast<vo_k_sort_pair *>(ws + dst), a.n, width, e);
  }
}

__global__ void num_kernel(vo_k_snms_args a, const char *ws, uint64_t sorted, int64_t *num_kept) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    vo_k_snms_num(&a, reinterpret_cast<const vo_k_sort_pair *>(ws + sorted), ws, num_kept);
}

// The compute type's items (T: float or double), forwarding to the
// kernels/ header's functions of its suffix (SFX: f32 or f64).
template <typename T>
struct items;
#define VO_ITEMS(T, SFX)                         \
  template <>                                    \
  struct items<T> {                              \
    template <typename... A>                     \
    __device__ static void gather(A... args) {   \
      vo_k_snms_gather_##SFX(args...);           \
    }                                            \
    template <typename... A>                     \
    __device__ static void run(A... args) {      \
      vo_k_snms_run_##SFX(args...);              \
    }                                            \
    template <typename... A>                     \
    __device__ static void mark(A... args) {     \
      vo_k_snms_mark_##SFX(args...);             \
    }                                            \
    template <typename... A>                     \
    __device__ static void rank_key(A... args) { \
      vo_k_snms_rank_key_##SFX(args...);         \
    }                                            \
    template <typename... A>                     \
    __device__ static void row(A... args) {      \
      vo_k_snms_row_##SFX(args...);              \
    }                                            \
  };
VO_ITEMS(float, f32)
VO_ITEMS(double, f64)
#undef VO_ITEMS

template <typename T>
__global__ void gather_kernel(vo_k_snms_args a, const void *boxes, const void *scores, char *ws,
                              uint64_t sorted) {
  VO_CUDA_GRID_STRIDE(s, a.n) { items<T>::gather(&a, boxes, scores, pairs_at(ws, sorted), ws, s); }
}

// A block per run: blocks stride over the slots (a slot that starts no run
// returns at once, the same for the whole block).
template <typename T>
__global__ void run_kernel(vo_k_snms_args a, char *ws, uint64_t sorted) {
  for (int64_t g = blockIdx.x; g < a.n; g += gridDim.x)
    items<T>::run(&a, pairs_at(ws, sorted), ws, g, threadIdx.x, blockDim.x);
}

template <typename T>
__global__ void mark_kernel(vo_k_snms_args a, char *ws, uint64_t sorted) {
  VO_CUDA_GRID_STRIDE(s, a.n) { items<T>::mark(&a, pairs_at(ws, sorted), ws, s); }
}

template <typename T>
__global__ void rank_key_kernel(vo_k_snms_args a, char *ws) {
  VO_CUDA_GRID_STRIDE(i, a.n) { items<T>::rank_key(&a, ws, i); }
}

template <typename T>
__global__ void row_kernel(vo_k_snms_args a, const void *boxes, const char *ws, uint64_t sorted,
                           void *dets, int64_t *keep) {
  VO_CUDA_GRID_STRIDE(r, a.n) { items<T>::row(&a, boxes, pairs_at(ws, sorted), ws, dets, keep, r); }
}

// The records at *at sorted by key, stably (the other pair array as spare);
// *at is where they end.
vo_status sort(const vo_exec *ex, cudaStream_t stream, const vo_k_snms_args &a, char *ws,
               uint64_t *at) {
  uint64_t src = *at, dst = src == a.pairs_at ? a.spare_at : a.pairs_at;
  for (int64_t width = 1; width < a.n; width *= 2) {
    sort_pass_kernel<<<vo_cuda_blocks(a.n, kThreads), kThreads, 0, stream>>>(a, ws, src, dst,
                                                                             width);
    vo_status st = vo_cuda_check_launch(ex);
    if (st != VO_OK) return st;
    const uint64_t t = src;
    src = dst;
    dst = t;
  }
  *at = src;
  return VO_OK;
}

template <typename T>
vo_status steps(const vo_exec *ex, cudaStream_t stream, const vo_k_snms_args &a, char *ws) {
  const vo_soft_nms_params &p = ex->p.soft_nms;
  const int blocks = vo_cuda_blocks(a.n, kThreads);
  const void *boxes = vo_view_addr(p.boxes);
  pair_kernel<<<blocks, kThreads, 0, stream>>>(
      a, p.idxs ? static_cast<const int64_t *>(vo_view_addr(p.idxs)) : nullptr, ws);
  vo_status st = vo_cuda_check_launch(ex);
  uint64_t sorted = a.pairs_at;
  if (st == VO_OK && a.batched) st = sort(ex, stream, a, ws, &sorted);
  if (st != VO_OK) return st;
  gather_kernel<T><<<blocks, kThreads, 0, stream>>>(a, boxes, vo_view_addr(p.scores), ws, sorted);
  if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  run_kernel<T><<<(unsigned)(a.n < 65535 ? a.n : 65535), kThreads, 0, stream>>>(a, ws, sorted);
  if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  if (a.batched) {
    // pos = -1: every byte 0xff
    st = vo_cuda_check(ex, cudaMemsetAsync(ws + a.pos_at, 0xff, (size_t)a.n * 8, stream));
    if (st != VO_OK) return st;
    mark_kernel<T><<<blocks, kThreads, 0, stream>>>(a, ws, sorted);
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
    rank_key_kernel<T><<<blocks, kThreads, 0, stream>>>(a, ws);
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
    sorted = a.pairs_at;
    if ((st = sort(ex, stream, a, ws, &sorted)) != VO_OK) return st;
  }
  row_kernel<T><<<blocks, kThreads, 0, stream>>>(a, boxes, ws, sorted, vo_view_addr(p.dets),
                                                 static_cast<int64_t *>(vo_view_addr(p.keep)));
  if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  num_kernel<<<1, 1, 0, stream>>>(a, ws, sorted, static_cast<int64_t *>(vo_view_addr(p.num_kept)));
  return vo_cuda_check_launch(ex);
}

vo_status soft_nms_run(const vo_exec *ex, cudaStream_t stream) {
  const vo_k_snms_args a = vo_soft_nms_kernel_args(ex);
  if (a.n == 0)
    return vo_cuda_check(
        ex, cudaMemsetAsync(vo_view_addr(ex->p.soft_nms.num_kept), 0, sizeof(int64_t), stream));
  vo_cuda_workspace ws_mem(ex);
  char *ws = static_cast<char *>(ws_mem.alloc(a.total));
  if (!ws) return VO_ERROR_OUT_OF_MEMORY;
  return ex->dtype == VO_F64 ? steps<double>(ex, stream, a, ws) : steps<float>(ex, stream, a, ws);
}

}  // namespace

extern "C" vo_status vo_cuda_soft_nms(const vo_exec *ex) {
  return vo_k_on_device(ex, nullptr, [&](cudaStream_t stream) { return soft_nms_run(ex, stream); });
}
