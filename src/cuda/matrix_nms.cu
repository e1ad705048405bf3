// CUDA matrix_nms: the work items of kernels/matrix_nms.h, the ones OpenCL
// runs (opencl/matrix_nms.c, whose tests on PoCL vouch for them), queued on
// the call's stream: per chunk of (image, class) problems the ranking (a
// block a problem), the two row passes (a thread a row) and the kept rows
// (a block a problem); then the placement of every kept row and the
// padding. Nothing waits for the stream.

#include "core/matrix_nms_args.h"
#include "cuda/portable.cuh"

namespace {

constexpr int kThreads = 256;
// A problem's block: its threads scan, sort and gather the problem
// together; small blocks spread the problems over the SMs.
constexpr int kProblemThreads = 64;
static_assert(kProblemThreads <= VO_K_SORT_GROUP_MAX, "a problem's slot counts its threads");

// The compute type's items (T: float or double), forwarding to the
// kernels/ header's functions of its suffix (SFX: f32 or f64).
template <typename T>
struct items;
#define VO_ITEMS(T, SFX)                        \
  template <>                                   \
  struct items<T> {                             \
    template <typename... A>                    \
    __device__ static void problem(A... args) { \
      vo_k_mnms_problem_##SFX(args...);         \
    }                                           \
    template <typename... A>                    \
    __device__ static void rows(A... args) {    \
      vo_k_mnms_rows_##SFX(args...);            \
    }                                           \
    template <typename... A>                    \
    __device__ static void keep(A... args) {    \
      vo_k_mnms_keep_##SFX(args...);            \
    }                                           \
    template <typename... A>                    \
    __device__ static void place(A... args) {   \
      vo_k_mnms_place_##SFX(args...);           \
    }                                           \
  };
VO_ITEMS(float, f32)
VO_ITEMS(double, f64)
#undef VO_ITEMS

// Blocks stride over the chunk's problems (uniform across a block, so the
// barriers inside are too).
template <typename T>
__global__ void problem_kernel(vo_k_mnms_args a, const void *boxes, const void *scores, char *ws,
                               char *scratch, int64_t q0, int64_t nq) {
  for (int64_t e = blockIdx.x; e < nq; e += gridDim.x)
    items<T>::problem(&a, boxes, scores, ws, scratch + (size_t)e * a.slot_bytes, q0 + e,
                      (int64_t)threadIdx.x, (int64_t)blockDim.x);
}

template <typename T>
__global__ void rows_kernel(vo_k_mnms_args a, char *ws, char *scratch, int64_t q0, int64_t nq,
                            int second) {
  VO_CUDA_GRID_STRIDE(e, nq * a.per_class) { items<T>::rows(&a, ws, scratch, q0, second, e); }
}

template <typename T>
__global__ void keep_kernel(vo_k_mnms_args a, char *ws, char *scratch, int64_t q0, int64_t nq) {
  for (int64_t e = blockIdx.x; e < nq; e += gridDim.x)
    items<T>::keep(&a, ws, scratch + (size_t)e * a.slot_bytes, q0 + e, (int64_t)threadIdx.x,
                   (int64_t)blockDim.x);
}

template <typename T>
__global__ void place_kernel(vo_k_mnms_args a, const void *boxes, const char *ws, void *dets,
                             int64_t *index) {
  VO_CUDA_GRID_STRIDE(e, a.problems * a.per_class) {
    items<T>::place(&a, boxes, ws, dets, index, e);
  }
}

__global__ void finish_kernel(vo_k_mnms_args a, const char *ws, void *dets, int64_t *index,
                              int64_t *num) {
  VO_CUDA_GRID_STRIDE(e, a.batch * (a.k + 1)) { vo_k_mnms_finish(&a, ws, dets, index, num, e); }
}

template <typename T>
vo_status steps(const vo_exec *ex, cudaStream_t stream, const vo_k_mnms_args &a, char *ws,
                vo_cuda_workspace &ws_scratch) {
  const void *boxes = vo_view_addr(&ex->inputs[0]), *scores = vo_view_addr(&ex->inputs[1]);
  void *dets = vo_view_addr(&ex->outputs[0]);
  int64_t *index = static_cast<int64_t *>(vo_view_addr(&ex->outputs[1]));
  vo_status st = VO_OK;
  if (a.problems > 0) {
    const int64_t chunk = vo_k_mnms_chunk(&a, ex->ctx->workspace_limit);
    char *scratch = static_cast<char *>(ws_scratch.alloc((size_t)chunk * a.slot_bytes));
    if (!scratch) return VO_ERROR_OUT_OF_MEMORY;
    for (int64_t q0 = 0; st == VO_OK && q0 < a.problems; q0 += chunk) {
      const int64_t nq = a.problems - q0 < chunk ? a.problems - q0 : chunk;
      const unsigned groups = (unsigned)(nq < 65535 ? nq : 65535);
      problem_kernel<T>
          <<<groups, kProblemThreads, 0, stream>>>(a, boxes, scores, ws, scratch, q0, nq);
      if ((st = vo_cuda_check_launch(ex)) != VO_OK) break;
      for (int second = 0; st == VO_OK && second < 2; second++) {
        rows_kernel<T><<<vo_cuda_blocks(nq * a.per_class, kThreads), kThreads, 0, stream>>>(
            a, ws, scratch, q0, nq, second);
        st = vo_cuda_check_launch(ex);
      }
      if (st != VO_OK) break;
      keep_kernel<T><<<groups, kProblemThreads, 0, stream>>>(a, ws, scratch, q0, nq);
      st = vo_cuda_check_launch(ex);
    }
    if (st != VO_OK) return st;
    place_kernel<T><<<vo_cuda_blocks(a.problems * a.per_class, kThreads), kThreads, 0, stream>>>(
        a, boxes, ws, dets, index);
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  }
  finish_kernel<<<vo_cuda_blocks(a.batch * (a.k + 1), kThreads), kThreads, 0, stream>>>(
      a, ws, dets, index, static_cast<int64_t *>(vo_view_addr(&ex->outputs[2])));
  return vo_cuda_check_launch(ex);
}

vo_status matrix_nms_run(const vo_exec *ex, cudaStream_t stream) {
  const vo_k_mnms_args a = vo_matrix_nms_kernel_args(ex);
  if (a.batch == 0) return VO_OK;
  vo_cuda_workspace ws_state(ex), ws_scratch(ex);
  char *ws = static_cast<char *>(ws_state.alloc(a.total));
  if (!ws) return VO_ERROR_OUT_OF_MEMORY;
  return ex->dtype == VO_F64 ? steps<double>(ex, stream, a, ws, ws_scratch)
                             : steps<float>(ex, stream, a, ws, ws_scratch);
}

}  // namespace

extern "C" vo_status vo_cuda_matrix_nms(const vo_exec *ex) {
  return vo_k_on_device(ex, nullptr,
                        [&](cudaStream_t stream) { return matrix_nms_run(ex, stream); });
}
