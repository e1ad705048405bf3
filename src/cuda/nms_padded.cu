// CUDA batched_nms_padded and onnx_nms (vo_nms_padded_params): the work
// items of kernels/nms_padded.h, the ones OpenCL runs (opencl/nms_padded.c,
// whose tests on PoCL vouch for them), launched on the call's stream: per
// chunk of (image, class) problems a block a problem, then the padded
// ranks and padding, or the onnx offsets (one thread) and rows. The chunk
// is as many problems as the context's workspace limit holds slots for
// beyond the state kept for every problem (vo_k_np_chunk). Nothing waits
// for the stream.

#include "core/nms_padded_args.h"
#include "cuda/portable.cuh"

namespace {

constexpr int kThreads = 256;
// A problem's block: a tile's threads (the greedy pass's phases give each
// thread one candidate of the tile).
constexpr int kProblemThreads = VO_K_NP_TILE;
static_assert(kProblemThreads <= VO_K_SORT_GROUP_MAX, "a problem's slot counts its threads");

// Blocks stride over the chunk's problems (the loop is uniform across a
// block, so the barriers inside are too).
template <int DT>
__global__ void problems_kernel(vo_k_np_args a, const void *boxes, const void *scores, char *ws,
                                char *scratch, int64_t q0, int64_t nq) {
  typedef typename vo_k_dtype<DT>::S S;
  const S *b = static_cast<const S *>(boxes);
  for (int64_t e = blockIdx.x; e < nq; e += gridDim.x) {
    char *slot = scratch + (size_t)e * a.slot_bytes;
    VO_K_DO(DT, vo_k_np_group, &a, b, scores, ws, slot, q0 + e, threadIdx.x, blockDim.x);
  }
}

__global__ void rank_kernel(vo_k_np_args a, const void *scores, const char *ws, int64_t *keep,
                            int64_t *labels, void *scores_out) {
  VO_CUDA_GRID_STRIDE(e, a.problems * a.cap) {
    vo_k_np_rank(&a, scores, ws, keep, labels, scores_out, e);
  }
}

__global__ void finish_kernel(vo_k_np_args a, const char *ws, int64_t *keep, int64_t *labels,
                              void *scores_out, int64_t *num) {
  VO_CUDA_GRID_STRIDE(e, a.batches * (a.k_max + 1)) {
    vo_k_np_finish(&a, ws, keep, labels, scores_out, num, e);
  }
}

__global__ void offsets_kernel(vo_k_np_args a, char *ws, int64_t *num_selected) {
  if (blockIdx.x == 0 && threadIdx.x == 0) vo_k_np_offsets(&a, ws, num_selected);
}

__global__ void rows_kernel(vo_k_np_args a, const char *ws, int64_t *rows) {
  VO_CUDA_GRID_STRIDE(e, a.problems * a.cap) { vo_k_np_rows(&a, ws, rows, e); }
}

template <int DT>
vo_status problems_launch(const vo_exec *ex, cudaStream_t stream, const vo_k_np_args &a, char *ws,
                          char *scratch, int64_t q0, int64_t nq) {
  const vo_nms_padded_params &p = ex->p.nms_padded;
  problems_kernel<DT><<<(unsigned)(nq < 65535 ? nq : 65535), kProblemThreads, 0, stream>>>(
      a, vo_view_addr(p.boxes), vo_view_addr(p.scores), ws, scratch, q0, nq);
  return vo_cuda_check_launch(ex);
}

vo_status nms_padded_run(const vo_exec *ex, cudaStream_t stream) {
  const vo_nms_padded_params &p = ex->p.nms_padded;
  const vo_k_np_args a = vo_nms_padded_kernel_args(&p);
  const int64_t chunk = vo_k_np_chunk(&a, ex->ctx->workspace_limit);
  vo_cuda_workspace ws_state(ex), ws_scratch(ex);
  char *ws = static_cast<char *>(ws_state.alloc(a.total));
  if (!ws) return VO_ERROR_OUT_OF_MEMORY;
  vo_status st = VO_OK;
  if (a.cap > 0 && a.problems > 0) {
    char *scratch = static_cast<char *>(ws_scratch.alloc((size_t)chunk * a.slot_bytes));
    if (!scratch) return VO_ERROR_OUT_OF_MEMORY;
    for (int64_t q0 = 0; st == VO_OK && q0 < a.problems; q0 += chunk) {
      const int64_t nq = a.problems - q0 < chunk ? a.problems - q0 : chunk;
      switch (p.boxes->dtype) {
        case VO_F64: st = problems_launch<VO_DT_F64>(ex, stream, a, ws, scratch, q0, nq); break;
        case VO_F16: st = problems_launch<VO_DT_F16>(ex, stream, a, ws, scratch, q0, nq); break;
        case VO_BF16: st = problems_launch<VO_DT_BF16>(ex, stream, a, ws, scratch, q0, nq); break;
        default: st = problems_launch<VO_DT_F32>(ex, stream, a, ws, scratch, q0, nq); break;
      }
    }
  } else if (a.problems > 0) {
    st = vo_cuda_check(
        ex, cudaMemsetAsync(ws + a.count_at, 0, (size_t)a.problems * sizeof(int64_t), stream));
  }
  if (st != VO_OK) return st;
  if (p.onnx) {
    offsets_kernel<<<1, 1, 0, stream>>>(a, ws,
                                        static_cast<int64_t *>(vo_view_addr(p.num_selected)));
    if ((st = vo_cuda_check_launch(ex)) != VO_OK || a.problems * a.cap == 0) return st;
    rows_kernel<<<vo_cuda_blocks(a.problems * a.cap, kThreads), kThreads, 0, stream>>>(
        a, ws, static_cast<int64_t *>(vo_view_addr(p.selected)));
    return vo_cuda_check_launch(ex);
  }
  int64_t *keep = static_cast<int64_t *>(vo_view_addr(p.keep));
  int64_t *labels = static_cast<int64_t *>(vo_view_addr(p.labels));
  void *scores_out = vo_view_addr(p.scores_out);
  if (a.problems * a.cap > 0) {
    rank_kernel<<<vo_cuda_blocks(a.problems * a.cap, kThreads), kThreads, 0, stream>>>(
        a, vo_view_addr(p.scores), ws, keep, labels, scores_out);
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  }
  if (a.batches == 0) return VO_OK;
  finish_kernel<<<vo_cuda_blocks(a.batches * (a.k_max + 1), kThreads), kThreads, 0, stream>>>(
      a, ws, keep, labels, scores_out, static_cast<int64_t *>(vo_view_addr(p.num)));
  return vo_cuda_check_launch(ex);
}

}  // namespace

extern "C" vo_status vo_cuda_nms_padded(const vo_exec *ex) {
  return vo_k_on_device(ex, nullptr,
                        [&](cudaStream_t stream) { return nms_padded_run(ex, stream); });
}
