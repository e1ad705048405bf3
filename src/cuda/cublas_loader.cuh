// cuBLAS loaded at first use (dlopen), so libvisionops links no cuBLAS and
// stays loadable where none is installed: strided-batched float32/float64
// GEMMs on one lazily created handle per device per thread, destroyed when
// the thread exits.
#ifndef VISIONOPS_CUDA_CUBLAS_LOADER_CUH
#define VISIONOPS_CUDA_CUBLAS_LOADER_CUH

#include "cuda/common.cuh"

// cuBLAS's opaque handle (cublasHandle_t), declared here: no cuBLAS header.
typedef struct cublasContext *vo_cublas_handle;

// The current device's handle for this thread, bound to `stream` and to the
// caller's `workspace` (256-byte aligned, may be NULL with 0 bytes), so cuBLAS
// allocates nothing of its own. Fails with VO_ERROR_BACKEND_FAILURE and
// "<op>: cuBLAS could not be loaded (...)" where no cuBLAS is found.
vo_status vo_cublas_bind(const vo_exec *ex, cudaStream_t stream, void *workspace,
                         size_t workspace_bytes, vo_cublas_handle *handle);

// Column-major C_i = op(A_i) * op(B_i) + beta * C_i for i < batch (alpha = 1),
// as cublas<t>gemmStridedBatched; trans_a / trans_b select op = transpose.
vo_status vo_cublas_gemm(const vo_exec *ex, vo_cublas_handle h, bool trans_a, bool trans_b,
                         int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                         int64_t stride_a, const float *b, int64_t ldb, int64_t stride_b,
                         float beta, float *c, int64_t ldc, int64_t stride_c, int64_t batch);
vo_status vo_cublas_gemm(const vo_exec *ex, vo_cublas_handle h, bool trans_a, bool trans_b,
                         int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                         int64_t stride_a, const double *b, int64_t ldb, int64_t stride_b,
                         double beta, double *c, int64_t ldc, int64_t stride_c, int64_t batch);

#endif  // VISIONOPS_CUDA_CUBLAS_LOADER_CUH
