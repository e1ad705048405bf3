/*
 * visionops' own matrix products (see gemm.h): for float32 on a CPU with
 * AVX2 and FMA, register tiles (6 x 16, or 6 x 32 with AVX-512) over packed
 * panels of B; otherwise, and for float64, a plain C product whose rows of
 * C are computed in blocks of VO_GEMM_BLOCK columns accumulated in a local
 * array, so the inner loop runs over contiguous columns and vectorises. A^T
 * and B^T only change how an element is addressed. Nothing is parallel
 * here: the caller splits C's columns over its threads. Built with OpenBLAS
 * too: test_gemm checks both against it, and deform_conv2d takes the tiles
 * where OpenBLAS runs generic kernels (gemm.h). Also here: whether it
 * does, and the CPU backend's description of the products.
 */
#include "cpu/gemm.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VO_GEMM_HAVE_AVX2 1
#endif

enum { VO_GEMM_BLOCK = 256 };

/* Set by tests (vo_cpu_sgemm_test_narrow) to run the AVX2 tiles on an
 * AVX-512 CPU. */
static int vo_sgemm_narrow;

void vo_cpu_sgemm_test_narrow(int narrow) { vo_sgemm_narrow = narrow; }

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cpu/gemm.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cpu/gemm.inc"
#include "kernels/dtype_end.h"

#ifdef VO_GEMM_HAVE_AVX2
enum { VO_GEMM_MR = 6, VO_GEMM_NR_MAX = 32 };

/* The register tiles, one body (cpu/gemm_tile.inc) for two vector widths:
 * 6 x 32 with AVX-512, 6 x 16 with AVX2 and FMA. Both add one FMA a term
 * in ascending p, so they give the same bits. */
#define VO_SGEMM_TILE vo_sgemm_tile_avx512
#define VO_SGEMM_TARGET "avx512f"
#define VO_SGEMM_V __m512
#define VO_SGEMM_W 16
#define VO_SGEMM_ZERO _mm512_setzero_ps
#define VO_SGEMM_LOAD _mm512_load_ps
#define VO_SGEMM_SET1 _mm512_set1_ps
#define VO_SGEMM_FMADD _mm512_fmadd_ps
#define VO_SGEMM_STORE _mm512_storeu_ps
#include "cpu/gemm_tile.inc"

#define VO_SGEMM_TILE vo_sgemm_tile_avx2
#define VO_SGEMM_TARGET "avx2,fma"
#define VO_SGEMM_V __m256
#define VO_SGEMM_W 8
#define VO_SGEMM_ZERO _mm256_setzero_ps
#define VO_SGEMM_LOAD _mm256_load_ps
#define VO_SGEMM_SET1 _mm256_set1_ps
#define VO_SGEMM_FMADD _mm256_fmadd_ps
#define VO_SGEMM_STORE _mm256_storeu_ps
#include "cpu/gemm_tile.inc"

/* The float32 product on 6 x nr tiles (nr 32 with AVX-512, else 16): each
 * nr-column panel of op(B) is packed once (k x nr, zero past n) and swept
 * by every 6-row tile of op(A), read in place (rows past m repeat the last
 * one; their sums are dropped). Each element of C is one ascending sum over
 * k, one FMA a term, whatever the columns a call covers and the tile width.
 * 0 when the panel's memory is not to be had (the caller then takes the
 * plain product). */
static int vo_sgemm_tiles(enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
                          int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                          int64_t ldb, float beta, float *c, int64_t ldc) {
  const int64_t sa_i = ta == CblasNoTrans ? lda : 1, sa_p = ta == CblasNoTrans ? 1 : lda;
  const int64_t sb_p = tb == CblasNoTrans ? ldb : 1, sb_j = tb == CblasNoTrans ? 1 : ldb;
  const int wide = vo_cpu_sgemm_is_avx512() && !vo_sgemm_narrow;
  const int64_t nr = wide ? 32 : 16;
  const size_t bytes = sizeof(float) * (size_t)nr * (size_t)(k > 0 ? k : 1);
  float *panel = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!panel) return 0;
  float acc[VO_GEMM_MR * VO_GEMM_NR_MAX];
  for (int64_t j0 = 0; j0 < n; j0 += nr) {
    const int64_t nb = n - j0 < nr ? n - j0 : nr;
    for (int64_t p = 0; p < k; p++) {
      float *dst = panel + p * nr;
      const float *src = b + p * sb_p + j0 * sb_j;
      int64_t j = 0;
      if (sb_j == 1)
        for (; j < nb; j++) dst[j] = src[j];
      else
        for (; j < nb; j++) dst[j] = src[j * sb_j];
      for (; j < nr; j++) dst[j] = 0;
    }
    for (int64_t i0 = 0; i0 < m; i0 += VO_GEMM_MR) {
      const int64_t mb = m - i0 < VO_GEMM_MR ? m - i0 : VO_GEMM_MR;
      const float *ar[VO_GEMM_MR];
      for (int64_t r = 0; r < VO_GEMM_MR; r++) ar[r] = a + (i0 + (r < mb ? r : mb - 1)) * sa_i;
      if (wide)
        vo_sgemm_tile_avx512(k, ar, sa_p, panel, acc);
      else
        vo_sgemm_tile_avx2(k, ar, sa_p, panel, acc);
      for (int64_t r = 0; r < mb; r++) {
        float *cr = c + (i0 + r) * ldc + j0;
        const float *ac = acc + r * nr;
        if (beta == 0)
          for (int64_t j = 0; j < nb; j++) cr[j] = alpha * ac[j];
        else
          for (int64_t j = 0; j < nb; j++) cr[j] = alpha * ac[j] + beta * cr[j];
      }
    }
  }
  free(panel);
  return 1;
}
#endif

int vo_cpu_sgemm_is_avx512(void) {
#ifdef VO_GEMM_HAVE_AVX2
  return vo_cpu_sgemm_is_avx2() && __builtin_cpu_supports("avx512f");
#else
  return 0;
#endif
}

int vo_cpu_sgemm_is_avx2(void) {
#ifdef VO_GEMM_HAVE_AVX2
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return 0;
#endif
}

void vo_cpu_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m,
                  int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
                  float beta, float *c, int ldc) {
#ifdef VO_GEMM_HAVE_AVX2
  if (m > 0 && n > 0 && vo_cpu_sgemm_is_avx2() &&
      vo_sgemm_tiles(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    return;
#endif
  vo_gemm_f32(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void vo_cpu_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m,
                  int n, int k, double alpha, const double *a, int lda, const double *b, int ldb,
                  double beta, double *c, int ldc) {
  vo_gemm_f64(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#ifdef VISIONOPS_HAVE_BLAS
/* OpenBLAS's generic cores (kernels without AVX). */
static int vo_cpu_blas_core_generic(const char *core) {
  static const char *const generic[] = {"Prescott", "Core2",  "Penryn",     "Dunnington",
                                        "Nehalem",  "Katmai", "Coppermine", "Northwood",
                                        "Banias",   "Atom"};
  for (size_t i = 0; core && i < sizeof generic / sizeof generic[0]; i++)
    if (strcmp(core, generic[i]) == 0) return 1;
  return 0;
}

static int vo_cpu_blas_generic;
static pthread_once_t vo_cpu_blas_once = PTHREAD_ONCE_INIT;

static void vo_cpu_blas_probe(void) {
  vo_cpu_blas_generic = vo_cpu_sgemm_is_avx2() && vo_cpu_blas_core_generic(openblas_get_corename());
}

int vo_cpu_blas_is_generic(void) {
  pthread_once(&vo_cpu_blas_once, vo_cpu_blas_probe);
  return vo_cpu_blas_generic;
}

void vo_cpu_blas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb,
                       int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                       int ldb, float beta, float *c, int ldc) {
  if (vo_cpu_blas_is_generic())
    vo_cpu_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    cblas_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
#endif

void vo_cpu_gemm_describe(char *out, size_t size) {
#ifdef VISIONOPS_HAVE_BLAS
  const char *core = openblas_get_corename();
#ifdef VO_GEMM_HAVE_AVX2
  const char *better = __builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell";
#else
  const char *better = "";
#endif
  if (vo_cpu_blas_is_generic())
    snprintf(out, size,
             "OpenBLAS (%s kernels: it does not know this CPU; float32 products are visionops' "
             "%s tiles instead, and OPENBLAS_CORETYPE=%s in the environment speeds up the "
             "float64 ones)",
             core, vo_cpu_sgemm_is_avx512() ? "AVX-512" : "AVX2", better);
  else
    snprintf(out, size, "OpenBLAS (%s kernels)", core ? core : "unknown");
#else
  snprintf(out, size, "%s, %s", VO_CPU_GEMM_NAME,
           vo_cpu_sgemm_is_avx512() ? "AVX-512 float32 tiles"
           : vo_cpu_sgemm_is_avx2() ? "AVX2 float32 tiles"
                                    : "plain C: slower");
#endif
}
