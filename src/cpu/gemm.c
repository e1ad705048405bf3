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

#define VO_DEFINE_GEMM(T, NAME)                                                              \
  void NAME(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m, \
            int n, int k, T alpha, const T *a, int lda, const T *b, int ldb, T beta, T *c,   \
            int ldc) {                                                                       \
    (void)order; /* row-major only, as deform_conv2d calls it */                             \
    const int64_t sa_i = ta == CblasNoTrans ? lda : 1, sa_p = ta == CblasNoTrans ? 1 : lda;  \
    const int64_t sb_p = tb == CblasNoTrans ? ldb : 1, sb_j = tb == CblasNoTrans ? 1 : ldb;  \
    T acc[VO_GEMM_BLOCK];                                                                    \
    for (int64_t i = 0; i < m; i++) {                                                        \
      T *ci = c + i * (int64_t)ldc;                                                          \
      for (int64_t j0 = 0; j0 < n; j0 += VO_GEMM_BLOCK) {                                    \
        const int64_t nb = n - j0 < VO_GEMM_BLOCK ? n - j0 : VO_GEMM_BLOCK;                  \
        for (int64_t j = 0; j < nb; j++) acc[j] = 0;                                         \
        if (sb_j == 1) { /* B's rows are contiguous: a column block is a vector */           \
          for (int64_t p = 0; p < k; p++) {                                                  \
            const T av = a[i * sa_i + p * sa_p];                                             \
            const T *bp = b + p * sb_p + j0;                                                 \
            for (int64_t j = 0; j < nb; j++) acc[j] += av * bp[j];                           \
          }                                                                                  \
        } else { /* B^T: each element is a dot product of two contiguous rows */             \
          for (int64_t j = 0; j < nb; j++) {                                                 \
            const T *bj = b + (j0 + j) * sb_j;                                               \
            T s = 0;                                                                         \
            for (int64_t p = 0; p < k; p++) s += a[i * sa_i + p * sa_p] * bj[p];             \
            acc[j] = s;                                                                      \
          }                                                                                  \
        }                                                                                    \
        if (beta == 0)                                                                       \
          for (int64_t j = 0; j < nb; j++) ci[j0 + j] = alpha * acc[j];                      \
        else                                                                                 \
          for (int64_t j = 0; j < nb; j++) ci[j0 + j] = alpha * acc[j] + beta * ci[j0 + j];  \
      }                                                                                      \
    }                                                                                        \
  }

VO_DEFINE_GEMM(float, vo_cpu_sgemm)
VO_DEFINE_GEMM(double, vo_cpu_dgemm)
