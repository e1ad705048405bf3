// The CUDA backend's check_data hook: runs a call's declared value checks
// (kernels/data_checks.h: rois, adaptive grid, argmax, channel_mapping,
// rotated boxes, deform_attn's levels) on
// the device. Per check, one pass over the rows finds the first bad item
// (atomicMin of its key) and a one-thread kernel records what the message
// needs; 32 bytes per check come back after one stream synchronisation for
// the call, and the dispatcher forms the message (core/data_checks.c), the
// one the host check gives. Deferred checks (vo_context_set_device_checks)
// queue the same kernels into the context's block without waiting.
#include "cuda/common.cuh"

namespace {

constexpr int kThreads = 256;

static_assert(sizeof(unsigned long long) == sizeof(uint64_t), "atomicMin on the 64-bit key");

__global__ void find_kernel(const void *data, const void *data2, vo_k_check c, int64_t rows,
                            int64_t len, vo_k_check_found *res) {
  VO_CUDA_GRID_STRIDE(r, rows) {
    const int64_t j = vo_k_check_bad_column(data, data2, &c, r);
    if (j >= 0)
      atomicMin(reinterpret_cast<unsigned long long *>(&res->first),
                (unsigned long long)(r * len + j));
  }
}

__global__ void record_kernel(const void *data, const void *data2, vo_k_check c,
                              vo_k_check_found *res) {
  if (res->first == VO_K_CHECK_NONE) return;
  vo_k_check_values(data, data2, &c, (int64_t)res->first, res->value);
}

}  // namespace

// Queues the checks into `results` at byte `offset` (vo_backend's
// queue_data_checks; also the first half of check_data).
vo_status vo_cuda_queue_data_checks(const vo_exec *ex, void *results, uint64_t offset) {
  const int count = ex->num_data_checks;
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const cudaStream_t stream = vo_cuda_stream(ex);
  vo_k_check_found *dev =
      reinterpret_cast<vo_k_check_found *>(static_cast<char *>(results) + offset);
  vo_status st = vo_cuda_check(
      ex, cudaMemsetAsync(dev, 0xff, sizeof(vo_k_check_found) * (size_t)count, stream));
  if (st != VO_OK) return st;
  for (int i = 0; i < count; i++) {
    const vo_k_check &c = ex->data_checks[i].check;
    const vo_view *t = &ex->inputs[ex->data_checks[i].arg];
    const int64_t rows = vo_k_check_rows(&c);
    if (t->numel == 0 || rows == 0) continue;
    const int arg2 = vo_data_check_second(&ex->data_checks[i]);
    const void *data = vo_view_addr(t), *data2 = vo_view_addr(&ex->inputs[arg2]);
    find_kernel<<<vo_cuda_blocks(rows, kThreads), kThreads, 0, stream>>>(
        data, data2, c, rows, vo_k_check_row_length(&c), dev + i);
    record_kernel<<<1, 1, 0, stream>>>(data, data2, c, dev + i);
    if ((st = vo_cuda_check_launch(ex)) != VO_OK) return st;
  }
  return VO_OK;
}

vo_status vo_cuda_check_data(const vo_exec *ex, vo_k_check_found *found) {
  vo_cuda_device_guard guard(ex->device.device_id);
  if (guard.error() != cudaSuccess) return vo_cuda_check(ex, guard.error());
  const cudaStream_t stream = vo_cuda_stream(ex);
  vo_cuda_workspace ws(ex);
  const size_t bytes = sizeof(vo_k_check_found) * (size_t)ex->num_data_checks;
  void *dev = ws.alloc(bytes);
  if (!dev) return VO_ERROR_OUT_OF_MEMORY;
  vo_status st = vo_cuda_queue_data_checks(ex, dev, 0);
  if (st != VO_OK) return st;
  st = vo_cuda_check(ex, cudaMemcpyAsync(found, dev, bytes, cudaMemcpyDeviceToHost, stream));
  if (st != VO_OK) return st;
  return vo_cuda_check(ex, cudaStreamSynchronize(stream));
}

// Waits for every stream of the device (deferred checks queued by another
// thread on its per-thread default stream).
vo_status vo_cuda_synchronize(DLDevice device) {
  vo_cuda_device_guard guard(device.device_id);
  cudaError_t e = guard.error();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return VO_OK;
  (void)cudaGetLastError();
  return vo_fail(VO_ERROR_BACKEND_FAILURE, "cuda: synchronisation of device %d failed: %s",
                 device.device_id, cudaGetErrorString(e));
}
