// Device-side validation of RoI op inputs the host cannot read: rois (finite
// coordinates, integer batch indices in range) and roi_pool's argmax. One
// pass finds the first bad entry, a one-thread kernel records its value, and
// 16 bytes come back to the host, so messages match the CPU checks.
#include "cuda/roi_common.cuh"

namespace {

constexpr int kThreads = 256;
constexpr unsigned long long kNone = ~0ull;

// What comes back to the host: the first bad flat index and its value.
struct check_result {
  unsigned long long first;
  double value;
};

// Row i's first bad column; 5 when the row is fine. The same tests, in the
// same order, as vo_check_rois_data.
__device__ __forceinline__ int bad_column(const vo_cuda_view &r, int64_t i, int64_t n) {
  for (int j = 0; j < 5; j++) {
    const double v = vo_cr_load_double(r, i * r.stride[0] + j * r.stride[1]);
    if (!vo_cr_finite(v)) return j;
    if (j == 0 && !(v >= 0 && v < (double)n && v == floor(v))) return 0;
  }
  return 5;
}

__global__ void check_rois_kernel(vo_cuda_view r, int64_t k, int64_t n, check_result *res) {
  VO_CUDA_GRID_STRIDE(i, k) {
    const int j = bad_column(r, i, n);
    if (j < 5) atomicMin(&res->first, (unsigned long long)(i * 5 + j));
  }
}

__global__ void record_rois_kernel(vo_cuda_view r, check_result *res) {
  if (res->first == kNone) return;
  const int64_t i = (int64_t)(res->first / 5), j = (int64_t)(res->first % 5);
  res->value = vo_cr_load_double(r, i * r.stride[0] + j * r.stride[1]);
}

// argmax [K,C,PH,PW]: flat row-major index of the first value that is
// neither -1 nor in [0, hw).
__global__ void check_argmax_kernel(vo_cuda_view a, int64_t d1, int64_t d2, int64_t d3,
                                    int64_t numel, int64_t hw, check_result *res) {
  VO_CUDA_GRID_STRIDE(i, numel) {
    const int64_t i3 = i % d3, i2 = i / d3 % d2, i1 = i / d3 / d2 % d1, i0 = i / d3 / d2 / d1;
    const int32_t v = static_cast<const int32_t *>(a.data)[vo_cuda_offset(a, i0, i1, i2, i3)];
    if (!(v == -1 || (v >= 0 && (int64_t)v < hw))) atomicMin(&res->first, (unsigned long long)i);
  }
}

__global__ void record_argmax_kernel(vo_cuda_view a, int64_t d1, int64_t d2, int64_t d3,
                                     check_result *res) {
  if (res->first == kNone) return;
  const int64_t i = (int64_t)res->first;
  const int64_t i3 = i % d3, i2 = i / d3 % d2, i1 = i / d3 / d2 % d1, i0 = i / d3 / d2 / d1;
  res->value = (double)static_cast<const int32_t *>(a.data)[vo_cuda_offset(a, i0, i1, i2, i3)];
}

// Runs `launch` (the check and record kernels) on a zeroed result and
// brings it back. The caller's device guard is in place.
template <typename F>
vo_status run_check(const vo_exec *ex, F launch, check_result *host) {
  const cudaStream_t stream = vo_cuda_stream(ex);
  vo_cuda_workspace ws(ex);
  check_result *dev = static_cast<check_result *>(ws.alloc(sizeof(check_result)));
  if (!dev) return VO_ERROR_OUT_OF_MEMORY;
  vo_status st = vo_cuda_check(ex, cudaMemsetAsync(dev, 0xff, sizeof(check_result), stream));
  if (st != VO_OK) return st;
  launch(stream, dev);
  if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  st = vo_cuda_check(
      ex, cudaMemcpyAsync(host, dev, sizeof(check_result), cudaMemcpyDeviceToHost, stream));
  if (st != VO_OK) return st;
  return vo_cuda_check(ex, cudaStreamSynchronize(stream));
}

}  // namespace

vo_status vo_cuda_check_rois(const vo_exec *ex, const vo_view *rois, int64_t batch_size,
                             const char *arg_name) {
  const int64_t k = rois->shape[0];
  if (k == 0) return VO_OK;
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const vo_cuda_view r = vo_cuda_view_of(rois);
  check_result res;
  vo_status st = run_check(
      ex,
      [&](cudaStream_t stream, check_result *dev) {
        check_rois_kernel<<<vo_cuda_blocks(k, kThreads), kThreads, 0, stream>>>(r, k, batch_size,
                                                                                dev);
        record_rois_kernel<<<1, 1, 0, stream>>>(r, dev);
      },
      &res);
  if (st != VO_OK) return st;
  if (res.first == kNone) return VO_OK;
  const long long i = (long long)(res.first / 5), j = (long long)(res.first % 5);
  if (!vo_cr_finite(res.value))
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s[%lld, %lld] = %g is not finite", ex->op_name,
                   arg_name, i, j, res.value);
  return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                 "%s: %s[%lld, 0] = %g is not a batch index of input with N = %lld", ex->op_name,
                 arg_name, i, res.value, (long long)batch_size);
}

vo_status vo_cuda_check_argmax(const vo_exec *ex, const vo_view *argmax, int64_t hw,
                               const char *arg_name) {
  const int64_t numel = argmax->numel;
  if (numel == 0) return VO_OK;
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const vo_cuda_view a = vo_cuda_view_of(argmax);
  const int64_t d1 = argmax->shape[1], d2 = argmax->shape[2], d3 = argmax->shape[3];
  check_result res;
  vo_status st = run_check(
      ex,
      [&](cudaStream_t stream, check_result *dev) {
        check_argmax_kernel<<<vo_cuda_blocks(numel, kThreads), kThreads, 0, stream>>>(
            a, d1, d2, d3, numel, hw, dev);
        record_argmax_kernel<<<1, 1, 0, stream>>>(a, d1, d2, d3, dev);
      },
      &res);
  if (st != VO_OK) return st;
  if (res.first == kNone) return VO_OK;
  const int64_t i = (int64_t)res.first;
  const long long i3 = i % d3, i2 = i / d3 % d2, i1 = i / d3 / d2 % d1, i0 = i / d3 / d2 / d1;
  return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                 "%s: %s[%lld, %lld, %lld, %lld] = %d is neither -1 nor an index in "
                 "[0, H*W = %lld)",
                 ex->op_name, arg_name, i0, i1, i2, i3, (int)res.value, (long long)hw);
}
