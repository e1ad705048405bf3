/*
 * deform_conv2d's CPU matrix products. With OpenBLAS (VISIONOPS_HAVE_BLAS)
 * they are its cblas_sgemm / cblas_dgemm; without it (-DVISIONOPS_BLAS=OFF,
 * or AUTO where OpenBLAS is missing) they are vo_cpu_sgemm / vo_cpu_dgemm
 * (gemm.c), plain C products with the same row-major CBLAS calling
 * convention. Those are built either way, so that the default build's tests
 * (test_gemm) check them against OpenBLAS.
 */
#ifndef VISIONOPS_CPU_GEMM_H
#define VISIONOPS_CPU_GEMM_H

#ifdef VISIONOPS_HAVE_BLAS
#include <cblas.h>
#define VO_CPU_SGEMM cblas_sgemm
#define VO_CPU_DGEMM cblas_dgemm
#define VO_CPU_GEMM_NAME "OpenBLAS"
#else
/* The CBLAS names of the layout and transpose arguments. */
enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };
#define VO_CPU_SGEMM vo_cpu_sgemm
#define VO_CPU_DGEMM vo_cpu_dgemm
#define VO_CPU_GEMM_NAME "built-in (no OpenBLAS; slower)"
#endif

/* C = alpha * op(A) * op(B) + beta * C, row-major only (order must be
 * CblasRowMajor); beta == 0 never reads C. Each element of C is one sum over
 * k in ascending order, so splitting C's columns across calls changes no
 * value. */
void vo_cpu_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m,
                  int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
                  float beta, float *c, int ldc);
void vo_cpu_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m,
                  int n, int k, double alpha, const double *a, int lda, const double *b, int ldb,
                  double beta, double *c, int ldc);

#endif /* VISIONOPS_CPU_GEMM_H */
