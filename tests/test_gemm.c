/* visionops' own matrix products (src/cpu/gemm.c) that deform_conv2d uses in
 * a build without OpenBLAS, and for float32 where OpenBLAS runs generic
 * kernels (AVX2 / AVX-512 tiles on such CPUs): against a float64 reference
 * for every transpose combination and odd sizes (blocks of 256 columns and their remainders),
 * beta = 0 never reading C, splitting C's columns changing no bit, and, in
 * a build with OpenBLAS, against OpenBLAS's own product; the CPU backend's
 * description names the product and, with OpenBLAS, the kernels it runs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/gemm.h"
#include "test_util.h"

/* Two floats with the same bits (NaN included). */
static int same_bits(float x, float y) {
  uint32_t a, b;
  memcpy(&a, &x, sizeof a);
  memcpy(&b, &y, sizeof b);
  return a == b;
}

/* op(X)[r][c] of a row-major matrix with leading dimension ld. */
static double at(const float *x, int trans, int64_t ld, int64_t r, int64_t c) {
  return trans ? x[c * ld + r] : x[r * ld + c];
}

static void check_case(vt_rng *rng, int ta, int tb, int m, int n, int k, float beta) {
  /* Leading dimensions a little larger than needed: the product must use them. */
  const int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
  const int64_t ra = ta ? k : m, rb = tb ? n : k, nc = (int64_t)m * ldc;
  float *a = calloc((size_t)(ra * lda) + 1, sizeof(float));
  float *b = calloc((size_t)(rb * ldb) + 1, sizeof(float));
  float *c0 = calloc((size_t)nc + 1, sizeof(float));
  float *c = calloc((size_t)nc + 1, sizeof(float));
  float *cs = calloc((size_t)nc + 1, sizeof(float));
  if (!a || !b || !c0 || !c || !cs) exit(2);
  for (int64_t i = 0; i < ra * lda; i++) a[i] = (float)vt_rng_uniform(rng, -1, 1);
  for (int64_t i = 0; i < rb * ldb; i++) b[i] = (float)vt_rng_uniform(rng, -1, 1);
  /* With beta = 0, C's old contents are NaN: a product that reads them fails. */
  for (int64_t i = 0; i < nc; i++) c0[i] = beta == 0 ? NAN : (float)vt_rng_uniform(rng, -1, 1);
  memcpy(c, c0, sizeof(float) * (size_t)nc);
  memcpy(cs, c0, sizeof(float) * (size_t)nc);
  const enum CBLAS_TRANSPOSE eta = ta ? CblasTrans : CblasNoTrans;
  const enum CBLAS_TRANSPOSE etb = tb ? CblasTrans : CblasNoTrans;
  vo_cpu_sgemm(CblasRowMajor, eta, etb, m, n, k, 1, a, lda, b, ldb, beta, c, ldc);
  /* The same product in three column slices, as deform_conv2d's threads split it. */
  const int cuts[4] = {0, n / 3, n / 3 + (n > 1), n};
  for (int s = 0; s < 3; s++) {
    const int n0 = cuts[s], n1 = cuts[s + 1] > n0 ? cuts[s + 1] : n0;
    if (n1 > n0)
      vo_cpu_sgemm(CblasRowMajor, eta, etb, m, n1 - n0, k, 1, a, lda,
                   tb ? b + (int64_t)n0 * ldb : b + n0, ldb, beta, cs + n0, ldc);
  }
  double worst = 0;
  int64_t split_diff = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double want = beta == 0 ? 0 : beta * (double)c0[i * ldc + j];
      for (int64_t p = 0; p < k; p++) want += at(a, ta, lda, i, p) * at(b, tb, ldb, p, j);
      const double err = fabs((double)c[i * ldc + j] - want) / (1 + fabs(want));
      if (!(err <= worst)) worst = isnan(err) ? INFINITY : err;
      if (!same_bits(c[i * ldc + j], cs[i * ldc + j])) split_diff++;
    }
  /* float32 sums of k terms of magnitude <= 1: well inside k * 2^-23. */
  CHECK_MSG(worst <= 1e-6 * (k + 1), "sgemm ta=%d tb=%d m=%d n=%d k=%d beta=%g: error %.3g", ta, tb,
            m, n, k, (double)beta, worst);
  CHECK_MSG(split_diff == 0, "sgemm ta=%d tb=%d m=%d n=%d k=%d: %lld elements differ when split",
            ta, tb, m, n, k, (long long)split_diff);
  /* Columns past n and padding in the leading dimension are never written. */
  int64_t pad_written = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = n; j < ldc; j++)
      if (!same_bits(c[i * ldc + j], c0[i * ldc + j])) pad_written++;
  CHECK_MSG(pad_written == 0, "sgemm wrote %lld elements beyond n", (long long)pad_written);
#ifdef VISIONOPS_HAVE_BLAS
  float *cb = calloc((size_t)nc + 1, sizeof(float));
  if (!cb) exit(2);
  memcpy(cb, c0, sizeof(float) * (size_t)nc);
  if (beta != 0 || k > 0) { /* OpenBLAS rejects some degenerate shapes; the reference covers them */
    cblas_sgemm(CblasRowMajor, eta, etb, m, n, k, 1, a, lda, b, ldb, beta, cb, ldc);
    double vs = 0;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        const double d = fabs((double)c[i * ldc + j] - (double)cb[i * ldc + j]);
        if (!(d <= vs)) vs = isnan(d) ? INFINITY : d;
      }
    CHECK_MSG(vs <= 1e-5 * (k + 1), "sgemm ta=%d tb=%d m=%d n=%d k=%d: %.3g from OpenBLAS", ta, tb,
              m, n, k, vs);
  }
  free(cb);
#endif
  free(a);
  free(b);
  free(c0);
  free(c);
  free(cs);
}

/* float64 once per transpose pair, exactly representable products (small
 * integers), so the result is exact. */
static void check_double(int ta, int tb) {
  enum { M = 5, N = 300, K = 7 };
  static double a[M * K], b[K * N], c[M * N];
  for (int i = 0; i < M * K; i++) a[i] = (i * 7) % 11 - 5;
  for (int i = 0; i < K * N; i++) b[i] = (i * 5) % 13 - 6;
  for (int i = 0; i < M * N; i++) c[i] = 1;
  vo_cpu_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
               K, 1, a, ta ? M : K, b, tb ? K : N, 2, c, N);
  int bad = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double want = 2;
      for (int p = 0; p < K; p++)
        want += (ta ? a[p * M + i] : a[i * K + p]) * (tb ? b[j * K + p] : b[p * N + j]);
      if (c[i * N + j] != want) bad++;
    }
  CHECK_MSG(bad == 0, "dgemm ta=%d tb=%d: %d wrong elements", ta, tb, bad);
}

/* The AVX-512 and AVX2 tiles give the same bits (one FMA a term, in the
 * same order). */
static void check_widths(vt_rng *rng) {
  const int m = 11, n = 83, k = 301;
  float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n);
  float *c1 = malloc(sizeof(float) * m * n), *c2 = malloc(sizeof(float) * m * n);
  if (!a || !b || !c1 || !c2) exit(2);
  for (int i = 0; i < m * k; i++) a[i] = (float)vt_rng_uniform(rng, -1, 1);
  for (int i = 0; i < k * n; i++) b[i] = (float)vt_rng_uniform(rng, -1, 1);
  vo_cpu_sgemm_test_narrow(0);
  vo_cpu_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, a, k, b, n, 0, c1, n);
  vo_cpu_sgemm_test_narrow(1);
  vo_cpu_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, a, k, b, n, 0, c2, n);
  int differ = 0;
  for (int i = 0; i < m * n; i++) differ += !same_bits(c1[i], c2[i]);
  CHECK_MSG(differ == 0, "AVX-512 and AVX2 tiles: %d of %d elements differ", differ, m * n);
  free(a);
  free(b);
  free(c1);
  free(c2);
}

/* `visionops info`'s CPU line names the product, OpenBLAS's kernels, and a
 * way out when OpenBLAS took its SSE3 kernels on a CPU with AVX2. */
static void check_description(void) {
  const char *detail = NULL;
  for (int i = 0; i < vo_backend_count(); i++) {
    vo_backend_info b;
    if (vo_backend_status(i, &b) == VO_OK && b.device_type == kDLCPU) detail = b.detail;
  }
  if (!CHECK_MSG(detail != NULL, "no CPU backend")) return;
  printf("CPU backend: %s\n", detail);
  CHECK_MSG(strstr(detail, "deform_conv2d GEMM " VO_CPU_GEMM_NAME) != NULL,
            "the CPU description lacks its product: %s", detail);
#ifdef VISIONOPS_HAVE_BLAS
  char kernels[96];
  snprintf(kernels, sizeof kernels, "(%s kernels", openblas_get_corename());
  CHECK_MSG(strstr(detail, kernels) != NULL, "the CPU description lacks OpenBLAS's %s): %s",
            kernels, detail);
#if defined(__x86_64__) || defined(__i386__)
  if (strcmp(openblas_get_corename(), "Prescott") == 0 && __builtin_cpu_supports("avx2"))
    CHECK_MSG(strstr(detail, "OPENBLAS_CORETYPE=") != NULL,
              "SSE3 kernels on an AVX2 CPU without the hint: %s", detail);
#endif
#endif
}

int main(void) {
  printf("deform_conv2d's CPU product in this build: %s\n", VO_CPU_GEMM_NAME);
  check_description();
  vt_rng rng;
  vt_rng_seed(&rng, 20261201);
  static const int sizes[][3] = {{1, 1, 1},    {3, 5, 2}, {7, 256, 9},   {4, 257, 33}, {2, 600, 1},
                                 {6, 513, 18}, {5, 3, 0}, {1, 1000, 64}, {13, 70, 700}};
  /* On an AVX-512 CPU, the AVX2 tiles too (the same sums: the same bits). */
  for (int narrow = 0; narrow < 1 + vo_cpu_sgemm_is_avx512(); narrow++) {
    vo_cpu_sgemm_test_narrow(narrow);
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
          check_case(&rng, ta, tb, sizes[s][0], sizes[s][1], sizes[s][2], 0);
          check_case(&rng, ta, tb, sizes[s][0], sizes[s][1], sizes[s][2], 1);
        }
        if (!narrow) check_double(ta, tb);
      }
  }
  if (vo_cpu_sgemm_is_avx512()) check_widths(&rng);
  vo_cpu_sgemm_test_narrow(0);
  return vt_finish("test_gemm");
}
