// The CUDA NMS every op shares (nms.cu, nms_rotated.cu): a stable radix sort
// of the scores, a 64x64-tile suppression bitmask over a box kind's sorted
// boxes and a greedy resolve that stays on the device (keep and num_kept
// with no host round trip). A box kind Kind (a small value passed to the
// kernels) has
//   typedef ... T;    the compute type (double for float64 boxes, else float)
//   typedef ... Box;  a sorted box as the mask kernel reads it (plain data)
//   __device__ Box load(const vo_cuda_view &boxes, int64_t row) const;
//   __device__ static bool suppresses(const Box &kept, const Box &candidate, T thr);
//   explicit KindOf(const vo_exec *ex);  (on the host: what it needs of ex)
// and nms_dispatch<KindOf>(ex) runs the op with KindOf<T>.
#ifndef VISIONOPS_CUDA_NMS_CUH
#define VISIONOPS_CUDA_NMS_CUH

#include <exception>

#include <cub/device/device_radix_sort.cuh>

#include "cuda/common.cuh"

namespace {

// Boxes per mask word (one bit each).
constexpr int kTile = 64;
constexpr int kResolveThreads = 1024;
constexpr int kThreads = 256;

// Radix-sort keys. Every NaN becomes the positive quiet NaN, whose bits sort
// above +inf, so NaN scores come first in a descending sort as in torch; CUB
// already treats -0.0 and +0.0 as equal, so they stay in index order.
__device__ __forceinline__ float canonical_key(float s) {
  return isnan(s) ? __int_as_float(0x7fc00000) : s;
}
__device__ __forceinline__ double canonical_key(double s) {
  return isnan(s) ? __longlong_as_double(0x7ff8000000000000LL) : s;
}

// Scores of any floating dtype (SPEC section 5: they need not have the
// boxes' dtype) as sort keys K: double for float64 scores, else float, which
// holds the half types exactly. Read by their runtime dtype: one pass.
template <typename K>
__global__ void nms_keys_kernel(vo_cuda_view scores, int64_t n, K *keys, int64_t *order) {
  VO_CUDA_GRID_STRIDE(i, n) {
    keys[i] = canonical_key(vo_cuda_load_as<K>(scores, vo_cuda_offset(scores, i)));
    order[i] = i;
  }
}

// Boxes (and categories) in score order, as the kind's Box (converted to
// the compute type), so the quadratic mask pass reads dense rows.
template <typename Kind>
__global__ void nms_gather_kernel(Kind kind, vo_cuda_view boxes, vo_cuda_view idxs,
                                  const int64_t *sorted, int64_t n, typename Kind::Box *sboxes,
                                  int64_t *sidx, int64_t *order) {
  VO_CUDA_GRID_STRIDE(i, n) {
    const int64_t o = sorted[i];
    order[i] = o;
    sboxes[i] = kind.load(boxes, o);
    if (sidx) sidx[i] = static_cast<const int64_t *>(idxs.data)[vo_cuda_offset(idxs, o)];
  }
}

// The threshold in the compute type (float: the op's float threshold, with
// the same decisions as comparing in double).
inline float threshold_in(float, const vo_nms_params &p) { return p.iou_threshold_f32; }
inline double threshold_in(double, const vo_nms_params &p) { return p.iou_threshold; }

// Mask rows of row blocks [rb0, rb1) against column blocks [rb0, col_blocks):
// word (r - rb0*64, cb - rb0) of the chunk has bit j set when sorted box
// cb*64 + j comes after r, is of its category (batched) and r suppresses it
// (Kind::suppresses). Words left of the diagonal block are never read, so
// never computed.
template <typename Kind>
__global__ void __launch_bounds__(kTile)
    nms_mask_kernel(const typename Kind::Box *sboxes, const int64_t *sidx, int64_t n,
                    typename Kind::T thr, int64_t col_blocks, int64_t rb0, int64_t rb1,
                    uint64_t *mask) {
  typedef typename Kind::Box Box;
  __shared__ Box col_box[kTile];
  __shared__ int64_t col_idx[kTile];
  const int t = threadIdx.x;
  const int64_t width = col_blocks - rb0;
  const int64_t tiles = (rb1 - rb0) * width;
  // The tile is uniform across the block, so the barriers below are too.
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t rb = rb0 + tile / width;
    const int64_t cb = rb0 + tile % width;
    if (cb < rb) continue;
    const int64_t col0 = cb * kTile;
    const int ncols = (int)(n - col0 < kTile ? n - col0 : kTile);
    if (t < ncols) {
      col_box[t] = sboxes[col0 + t];
      if (sidx) col_idx[t] = sidx[col0 + t];
    }
    __syncthreads();
    const int64_t i = rb * kTile + t;
    if (i < n) {
      const Box box = sboxes[i];
      const int64_t cat = sidx ? sidx[i] : 0;
      uint64_t bits = 0;
      for (int j = cb == rb ? t + 1 : 0; j < ncols; ++j) {
        if (sidx && col_idx[j] != cat) continue;
        if (Kind::suppresses(box, col_box[j], thr)) bits |= 1ull << j;
      }
      mask[(i - rb0 * kTile) * width + (cb - rb0)] = bits;
    }
    __syncthreads();
  }
}

// `removed` words a resolve keeps in shared memory (32 KiB): the column
// blocks [rb0, col_blocks) of a chunk when they fit (N up to 262,144 boxes
// in one chunk), else they stay in global memory.
constexpr int kResolveSharedWords = 4096;

// Greedy resolve of row blocks [rb0, rb1) with the chunk's mask. `removed`
// (one bit per sorted box) and `count` persist in global memory across
// chunks; within the chunk the `removed` words are staged in shared memory
// when they fit, so the per-row-block updates below read and write shared
// memory, not global. Per row block: the diagonal mask words and the
// sorted indices of its 64 boxes are fetched in parallel, one thread walks
// the 64 boxes in order (the only sequential part, on shared memory only),
// then the whole block ORs the kept boxes' rows into `removed` for the later
// column blocks.
__global__ void __launch_bounds__(kResolveThreads)
    nms_resolve_kernel(const uint64_t *mask, const int64_t *order, int64_t n, int64_t col_blocks,
                       int64_t rb0, int64_t rb1, uint64_t *removed, int64_t *count, int64_t *keep) {
  __shared__ uint64_t diag[kTile];
  __shared__ int64_t row_order[kTile];
  __shared__ int kept_rows[kTile];
  __shared__ int num_rows_kept;
  __shared__ uint64_t staged_removed[kResolveSharedWords];
  const int t = threadIdx.x;
  const int64_t width = col_blocks - rb0;
  const bool staged = width <= kResolveSharedWords;
  // removed[cb] for cb in [rb0, col_blocks), wherever it lives
  uint64_t *rem = staged ? staged_removed : removed + rb0;
  if (staged)
    for (int64_t w = t; w < width; w += kResolveThreads) staged_removed[w] = removed[rb0 + w];
  __syncthreads();
  int64_t kept = t == 0 ? *count : 0;  // meaningful in thread 0 only
  for (int64_t rb = rb0; rb < rb1; ++rb) {
    const int64_t row0 = rb * kTile;
    const int nrows = (int)(n - row0 < kTile ? n - row0 : kTile);
    const uint64_t *rows = mask + (row0 - rb0 * kTile) * width;  // row r at rows[r * width]
    // Fetch the diagonal words and the boxes' indices in parallel: thread
    // 0's walk then touches only shared memory instead of up to 128
    // dependent global loads.
    if (t < nrows) {
      diag[t] = rows[(int64_t)t * width + (rb - rb0)];
      row_order[t] = order[row0 + t];
    }
    __syncthreads();
    if (t == 0) {
      uint64_t r = rem[rb - rb0];
      int nk = 0;
      for (int j = 0; j < nrows; ++j) {
        if (!((r >> j) & 1)) {
          keep[kept++] = row_order[j];
          kept_rows[nk++] = j;
          r |= diag[j];
        }
      }
      num_rows_kept = nk;
    }
    __syncthreads();
    const int nk = num_rows_kept;
    if (nk > 0) {
      for (int64_t cb = rb + 1 + t; cb < col_blocks; cb += kResolveThreads) {
        uint64_t acc = rem[cb - rb0];
        for (int k = 0; k < nk; ++k) acc |= rows[(int64_t)kept_rows[k] * width + (cb - rb0)];
        rem[cb - rb0] = acc;
      }
    }
    // Makes this block's `removed` words visible to the next row block's walk
    // and frees diag / row_order / kept_rows for reuse.
    __syncthreads();
  }
  // The next chunk reads the words of its own column blocks, all >= rb1.
  if (staged)
    for (int64_t w = rb1 - rb0 + t; w < width; w += kResolveThreads)
      removed[rb0 + w] = staged_removed[w];
  if (t == 0) *count = kept;
}

__global__ void nms_finish_kernel(const int64_t *count, int64_t n, int64_t *keep,
                                  int64_t *num_kept) {
  const int64_t k = *count;
  if (blockIdx.x == 0 && threadIdx.x == 0) *num_kept = k;
  for (int64_t i = k + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    keep[i] = -1;
}

// Kind: the box kind in the boxes' compute type (Kind::T, double for float64
// boxes, else float); K: the scores' sort key type.
template <typename Kind, typename K>
vo_status nms_run(const vo_exec *ex, cudaStream_t stream, const Kind &kind) {
  typedef typename Kind::T T;
  typedef typename Kind::Box Box;
  const vo_nms_params &p = ex->p.nms;
  const int64_t n = p.boxes->shape[0];
  int64_t *keep = static_cast<int64_t *>(vo_view_addr(p.keep));
  int64_t *num_kept = static_cast<int64_t *>(vo_view_addr(p.num_kept));
  vo_status st;

  if (n == 0) return vo_cuda_check(ex, cudaMemsetAsync(num_kept, 0, sizeof(int64_t), stream));

  const bool batched = p.idxs != nullptr;
  const int64_t col_blocks = (n + kTile - 1) / kTile;
  const size_t un = (size_t)n;
  const int key_bits = (int)sizeof(K) * 8;

  // Sort phase workspace: key and value double buffers plus CUB's scratch
  // (the DoubleBuffer form needs only O(P) scratch beyond the buffers).
  size_t sort_temp = 0;
  {
    cub::DoubleBuffer<K> k(nullptr, nullptr);
    cub::DoubleBuffer<int64_t> v(nullptr, nullptr);
    st = vo_cuda_check(ex, cub::DeviceRadixSort::SortPairsDescending(nullptr, sort_temp, k, v, n, 0,
                                                                     key_bits, stream));
    if (st != VO_OK) return st;
  }
  const size_t a_keys0 = 0;
  const size_t a_keys1 = a_keys0 + vo_cuda_align(un * sizeof(K));
  const size_t a_vals0 = a_keys1 + vo_cuda_align(un * sizeof(K));
  const size_t a_vals1 = a_vals0 + vo_cuda_align(un * sizeof(int64_t));
  const size_t a_temp = a_vals1 + vo_cuda_align(un * sizeof(int64_t));
  const size_t a_total = a_temp + vo_cuda_align(sort_temp);

  // State that lives through the resolve: sorted boxes, their original
  // indices and categories, the `removed` bitmap and the kept counter.
  const size_t b_boxes = 0;
  const size_t b_order = b_boxes + vo_cuda_align(un * sizeof(Box));
  const size_t b_idx = b_order + vo_cuda_align(un * sizeof(int64_t));
  const size_t b_removed = b_idx + (batched ? vo_cuda_align(un * sizeof(int64_t)) : 0);
  const size_t b_total = b_removed + vo_cuda_align(((size_t)col_blocks + 1) * sizeof(uint64_t));

  vo_cuda_workspace ws_sort(ex), ws_state(ex), ws_mask(ex);
  char *a = static_cast<char *>(ws_sort.alloc(a_total));
  if (!a) return VO_ERROR_OUT_OF_MEMORY;
  char *b = static_cast<char *>(ws_state.alloc(b_total));
  if (!b) return VO_ERROR_OUT_OF_MEMORY;

  K *keys0 = reinterpret_cast<K *>(a + a_keys0);
  K *keys1 = reinterpret_cast<K *>(a + a_keys1);
  int64_t *vals0 = reinterpret_cast<int64_t *>(a + a_vals0);
  int64_t *vals1 = reinterpret_cast<int64_t *>(a + a_vals1);
  Box *sboxes = reinterpret_cast<Box *>(b + b_boxes);
  int64_t *order = reinterpret_cast<int64_t *>(b + b_order);
  int64_t *sidx = batched ? reinterpret_cast<int64_t *>(b + b_idx) : nullptr;
  uint64_t *removed = reinterpret_cast<uint64_t *>(b + b_removed);
  int64_t *count = reinterpret_cast<int64_t *>(removed + col_blocks);

  // The mask is quadratic; it is built and resolved in chunks of row blocks
  // sized to the context's workspace limit (beyond what is held already), at
  // least one row block, so any N that fits in memory works.
  const size_t limit = ex->ctx->workspace_limit;
  const size_t budget = limit > b_total ? limit - b_total : 0;
  const size_t row_block_words = (size_t)col_blocks * kTile;  // widest chunk
  size_t cap_words;                                           // mask capacity
  if (budget / sizeof(uint64_t) / (size_t)col_blocks >= un) {
    cap_words = un * (size_t)col_blocks;  // the whole mask at once
  } else {
    size_t nrb = budget / sizeof(uint64_t) / row_block_words;
    if (nrb < 1) nrb = 1;
    cap_words = nrb * row_block_words;
  }

  const unsigned int grid_n = vo_cuda_blocks(n, kThreads);
  nms_keys_kernel<K><<<grid_n, kThreads, 0, stream>>>(vo_cuda_view_of(p.scores), n, keys0, vals0);
  if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;

  cub::DoubleBuffer<K> dkeys(keys0, keys1);
  cub::DoubleBuffer<int64_t> dvals(vals0, vals1);
  st = vo_cuda_check(ex, cub::DeviceRadixSort::SortPairsDescending(a + a_temp, sort_temp, dkeys,
                                                                   dvals, n, 0, key_bits, stream));
  if (st != VO_OK) return st;

  nms_gather_kernel<Kind><<<grid_n, kThreads, 0, stream>>>(kind, vo_cuda_view_of(p.boxes),
                                                           vo_cuda_view_of(p.idxs), dvals.Current(),
                                                           n, sboxes, sidx, order);
  if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  st = vo_cuda_check(
      ex, cudaMemsetAsync(removed, 0, ((size_t)col_blocks + 1) * sizeof(uint64_t), stream));
  if (st != VO_OK) return st;
  ws_sort.release();  // stream-ordered: the mask may reuse this memory

  // The limit may promise more than the device has free: fall back to
  // smaller chunks before giving up.
  uint64_t *mask = nullptr;
  bool retried = false;
  for (;;) {
    mask = static_cast<uint64_t *>(ws_mask.alloc(cap_words * sizeof(uint64_t)));
    if (mask || cap_words <= row_block_words) break;
    size_t nrb = cap_words / row_block_words / 2;
    if (nrb < 1) nrb = 1;
    cap_words = nrb * row_block_words;
    retried = true;
  }
  if (!mask) return VO_ERROR_OUT_OF_MEMORY;
  if (retried) vo_clear_error();  // the failed attempt's message is not this call's

  for (int64_t rb0 = 0; rb0 < col_blocks;) {
    const int64_t width = col_blocks - rb0;
    const size_t rows_left = un - (size_t)rb0 * kTile;
    int64_t rb1;
    if (rows_left <= cap_words / (size_t)width) {
      rb1 = col_blocks;
    } else {
      // cap_words >= 64 * col_blocks here, so at least one row block fits.
      rb1 = rb0 + (int64_t)(cap_words / ((size_t)width * kTile));
    }
    const int64_t tiles = (rb1 - rb0) * width;
    nms_mask_kernel<Kind><<<vo_cuda_blocks(tiles, 1), kTile, 0, stream>>>(
        sboxes, sidx, n, threshold_in(T(), p), col_blocks, rb0, rb1, mask);
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
    nms_resolve_kernel<<<1, kResolveThreads, 0, stream>>>(mask, order, n, col_blocks, rb0, rb1,
                                                          removed, count, keep);
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
    rb0 = rb1;
  }

  nms_finish_kernel<<<grid_n, kThreads, 0, stream>>>(count, n, keep, num_kept);
  return vo_cuda_check_launch(ex);
}

// The op on the device of ex for box kind KindOf<T> (T the compute type):
// the entry point of each NMS op's glue.
template <template <typename> class KindOf>
vo_status nms_dispatch(const vo_exec *ex) {
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const cudaStream_t stream = vo_cuda_stream(ex);
  // CUB's dispatch can throw cuda::cuda_error (from its device switching);
  // nothing may unwind into the C callers.
  try {
    const bool f64_boxes = ex->dtype == VO_F64, f64_scores = ex->p.nms.scores->dtype == VO_F64;
    if (f64_boxes) {
      const KindOf<double> kind(ex);
      return f64_scores ? nms_run<KindOf<double>, double>(ex, stream, kind)
                        : nms_run<KindOf<double>, float>(ex, stream, kind);
    }
    const KindOf<float> kind(ex);
    return f64_scores ? nms_run<KindOf<float>, double>(ex, stream, kind)
                      : nms_run<KindOf<float>, float>(ex, stream, kind);
  } catch (const std::exception &e) {
    (void)cudaGetLastError();
    return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: CUDA error: %s", ex->op_name, e.what());
  } catch (...) {
    (void)cudaGetLastError();
    return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: CUDA error: unexpected exception in CUB",
                   ex->op_name);
  }
}

}  // namespace

#endif  // VISIONOPS_CUDA_NMS_CUH
