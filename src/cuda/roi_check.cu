// The CUDA backend's check_data hook: runs a declared value check
// (kernels/data_checks.h: rois, adaptive grid, argmax, channel_mapping) on
// the device. One pass over the rows finds the first bad item (atomicMin of
// its key), a one-thread kernel records what the message needs, and 32
// bytes come back after a stream synchronisation; the dispatcher forms the
// message (core/data_checks.c), the one the host check gives.
#include "cuda/common.cuh"

namespace {

constexpr int kThreads = 256;

static_assert(sizeof(unsigned long long) == sizeof(uint64_t), "atomicMin on the 64-bit key");

__global__ void find_kernel(const void *data, vo_k_check c, int64_t rows, int64_t len,
                            vo_k_check_found *res) {
  VO_CUDA_GRID_STRIDE(r, rows) {
    const int64_t j = vo_k_check_bad_column(data, &c, r);
    if (j >= 0)
      atomicMin(reinterpret_cast<unsigned long long *>(&res->first),
                (unsigned long long)(r * len + j));
  }
}

__global__ void record_kernel(const void *data, vo_k_check c, vo_k_check_found *res) {
  if (res->first == VO_K_CHECK_NONE) return;
  vo_k_check_values(data, &c, (int64_t)res->first, res->value);
}

}  // namespace

vo_status vo_cuda_check_data(const vo_exec *ex, const vo_view *tensor, const vo_k_check *check,
                             vo_k_check_found *found) {
  const int64_t rows = vo_k_check_rows(check), len = vo_k_check_row_length(check);
  if (rows == 0) return VO_OK;
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const cudaStream_t stream = vo_cuda_stream(ex);
  vo_cuda_workspace ws(ex);
  vo_k_check_found *dev = static_cast<vo_k_check_found *>(ws.alloc(sizeof(vo_k_check_found)));
  if (!dev) return VO_ERROR_OUT_OF_MEMORY;
  vo_status st = vo_cuda_check(ex, cudaMemsetAsync(dev, 0xff, sizeof(vo_k_check_found), stream));
  if (st != VO_OK) return st;
  const void *data = vo_view_addr(tensor);
  find_kernel<<<vo_cuda_blocks(rows, kThreads), kThreads, 0, stream>>>(data, *check, rows, len,
                                                                       dev);
  record_kernel<<<1, 1, 0, stream>>>(data, *check, dev);
  if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  st = vo_cuda_check(
      ex, cudaMemcpyAsync(found, dev, sizeof(vo_k_check_found), cudaMemcpyDeviceToHost, stream));
  if (st != VO_OK) return st;
  return vo_cuda_check(ex, cudaStreamSynchronize(stream));
}
