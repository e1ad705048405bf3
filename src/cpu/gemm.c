/*
 * The plain C matrix product deform_conv2d uses when visionops is built
 * without OpenBLAS (see gemm.h). Rows of C are computed in blocks of
 * VO_GEMM_BLOCK columns accumulated in a local array, so the inner loop runs
 * over contiguous columns and vectorises; A^T and B^T only change how an
 * element is addressed. Nothing is parallel here: the caller splits C's
 * columns over its threads. Built with OpenBLAS too, for test_gemm.
 */
#include "cpu/gemm.h"

#include <stdint.h>

enum { VO_GEMM_BLOCK = 256 };

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cpu/gemm.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cpu/gemm.inc"
#include "kernels/dtype_end.h"

void vo_cpu_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m,
                  int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
                  float beta, float *c, int ldc) {
  vo_gemm_f32(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void vo_cpu_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m,
                  int n, int k, double alpha, const double *a, int lda, const double *b, int ldb,
                  double beta, double *c, int ldc) {
  vo_gemm_f64(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
