// What the CUDA deform_conv2d kernels (cuda/deform_conv2d.cu) are built
// from: the portable per-element math of kernels/deform_conv2d.h bound per
// storage dtype (vo_dcn_dtype_f32 .. _bf16, cuda/deform_conv2d_dtype.inc),
// and the shapes of the cuBLAS products. Host code can run both, so
// tests/test_cuda_deform_host.cu replays a call's products and col2im
// variants on the host.
#ifndef VISIONOPS_CUDA_DEFORM_CONV2D_MATH_CUH
#define VISIONOPS_CUDA_DEFORM_CONV2D_MATH_CUH

#include "cuda/common.cuh"
#include "kernels/deform_conv2d.h"

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cuda/deform_conv2d_dtype.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cuda/deform_conv2d_dtype.inc"
#include "kernels/dtype_end.h"

#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "cuda/deform_conv2d_dtype.inc"
#include "kernels/dtype_end.h"

#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "cuda/deform_conv2d_dtype.inc"
#include "kernels/dtype_end.h"

// The three products of a tile as column-major strided-batched GEMMs over the
// groups (cuBLAS's terms; the test replays them with a host GEMM): C = op(A)
// * op(B) + beta * C, m x n x k, leading dimensions and batch strides.
struct vo_dcn_gemm_shape {
  bool trans_a, trans_b;
  int64_t m, n, k, lda, stride_a, ldb, stride_b, ldc, stride_c, batch;
};

__host__ __device__ __forceinline__ vo_dcn_gemm_shape vo_dcn_gemm_make(
    bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t stride_a,
    int64_t ldb, int64_t stride_b, int64_t ldc, int64_t stride_c, int64_t batch) {
  vo_dcn_gemm_shape g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = lda;
  g.stride_a = stride_a;
  g.ldb = ldb;
  g.stride_b = stride_b;
  g.ldc = ldc;
  g.stride_c = stride_c;
  g.batch = batch;
  return g;
}

// Row-major obuf_g[coutg, len] = W_g[coutg, cgk] * cols_g[cgk, len], i.e.
// column-major obuf^T (len x coutg) = cols^T (len x cgk) * W^T (cgk x coutg).
// A = cols, B = weight, C = obuf.
__host__ __device__ __forceinline__ vo_dcn_gemm_shape vo_dcn_gemm_forward(int64_t cgk,
                                                                          int64_t coutg,
                                                                          int64_t len,
                                                                          int64_t groups) {
  return vo_dcn_gemm_make(false, false, len, coutg, cgk, len, cgk * len, cgk, coutg * cgk, len,
                          coutg * len, groups);
}

// Row-major gw_g[coutg, cgk] (+)= gbuf_g[coutg, len] * cols_g[cgk, len]^T, i.e.
// column-major gw^T (cgk x coutg) = cols (cgk x len, stored transposed) *
// gbuf^T (len x coutg). A = cols, B = tile grad, C = grad_weight.
__host__ __device__ __forceinline__ vo_dcn_gemm_shape vo_dcn_gemm_grad_weight(int64_t cgk,
                                                                              int64_t coutg,
                                                                              int64_t len,
                                                                              int64_t groups) {
  return vo_dcn_gemm_make(true, false, cgk, coutg, len, len, cgk * len, len, coutg * len, cgk,
                          coutg * cgk, groups);
}

// Row-major dcol_g[cgk, len] = W_g[coutg, cgk]^T * gbuf_g[coutg, len], i.e.
// column-major dcol^T (len x cgk) = gbuf^T (len x coutg) * W (coutg x cgk,
// stored transposed). A = tile grad, B = weight, C = dcol.
__host__ __device__ __forceinline__ vo_dcn_gemm_shape vo_dcn_gemm_grad_cols(int64_t cgk,
                                                                            int64_t coutg,
                                                                            int64_t len,
                                                                            int64_t groups) {
  return vo_dcn_gemm_make(false, true, len, cgk, coutg, len, coutg * len, cgk, coutg * cgk, len,
                          cgk * len, groups);
}

#endif  // VISIONOPS_CUDA_DEFORM_CONV2D_MATH_CUH
