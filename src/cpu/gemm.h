/*
 * deform_conv2d's CPU matrix products. With OpenBLAS (VISIONOPS_HAVE_BLAS)
 * they are its cblas_sgemm / cblas_dgemm, except float32 where OpenBLAS runs
 * generic SSE-era kernels on an AVX2 CPU (vo_cpu_blas_is_generic); without
 * it (-DVISIONOPS_BLAS=OFF, or AUTO where OpenBLAS is missing) they are
 * vo_cpu_sgemm / vo_cpu_dgemm (gemm.c): register tiles for float32 on AVX2
 * and AVX-512, plain C otherwise, with the same row-major CBLAS calling
 * convention. Those are built either way, so that the default build's tests
 * (test_gemm) check them against OpenBLAS.
 */
#ifndef VISIONOPS_CPU_GEMM_H
#define VISIONOPS_CPU_GEMM_H

#include <stddef.h>

#ifdef VISIONOPS_HAVE_BLAS
#include <cblas.h>
#define VO_CPU_SGEMM vo_cpu_blas_sgemm
#define VO_CPU_DGEMM cblas_dgemm
#define VO_CPU_GEMM_NAME "OpenBLAS"
#else
/* The CBLAS names of the layout and transpose arguments. */
enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };
#define VO_CPU_SGEMM vo_cpu_sgemm
#define VO_CPU_DGEMM vo_cpu_dgemm
#define VO_CPU_GEMM_NAME "built-in (no OpenBLAS)"
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
/* Whether vo_cpu_sgemm runs its AVX2 / FMA tiles on this CPU, and its
 * wider AVX-512 ones (the same sums, so the same bits). */
int vo_cpu_sgemm_is_avx2(void);
int vo_cpu_sgemm_is_avx512(void);
/* For test_gemm: nonzero runs the AVX2 tiles even where AVX-512 is there
 * (not thread-safe; tests only). */
void vo_cpu_sgemm_test_narrow(int narrow);

#ifdef VISIONOPS_HAVE_BLAS
/* Whether OpenBLAS runs generic SSE-era kernels on this CPU (a release
 * older than the CPU: it picks kernels by CPU model) although the CPU has
 * AVX2: then deform_conv2d's float32 products are vo_cpu_sgemm's, several
 * times faster (bench/RESULTS.md). */
int vo_cpu_blas_is_generic(void);
/* cblas_sgemm, or vo_cpu_sgemm where vo_cpu_blas_is_generic(). */
void vo_cpu_blas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb,
                       int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                       int ldb, float beta, float *c, int ldc);
#endif

/* What runs the products, for the CPU backend's description. */
void vo_cpu_gemm_describe(char *out, size_t size);

#endif /* VISIONOPS_CPU_GEMM_H */
