/*
 * CLBlast, the OpenCL BLAS deform_conv2d's matrix products run on, loaded
 * at first use with dlopen (libclblast.so.1, then libclblast.so) as the
 * CUDA backend loads cuBLAS: libvisionops loads where CLBlast is absent, and
 * the op then fails naming the library and its Debian package. Column-major
 * GEMMs on cl_mem regions (offsets in elements), each with a temporary
 * buffer the caller provides, so that CLBlast's padding copies come out of
 * the op's workspace too.
 */
#ifndef VISIONOPS_OPENCL_CLBLAST_H
#define VISIONOPS_OPENCL_CLBLAST_H

#include "opencl/common.h"

/* One column-major product C = op(A) * op(B) + beta * C of m x n x k, the
 * operands in one buffer each at element offsets, leading dimensions in
 * elements. */
typedef struct vo_clblast_gemm {
  int trans_a, trans_b;
  int64_t m, n, k;
  cl_mem a, b, c;
  int64_t a_offset, lda, b_offset, ldb, c_offset, ldc;
  double beta;
} vo_clblast_gemm;

/* Loads CLBlast once (thread-safe): VO_OK, or the op's error naming
 * libclblast and the package to install. */
vo_status vo_clblast_load(const vo_exec *ex);

/* The bytes of temporary buffer product g needs (0 when none) on the call's
 * queue, in float64 when f64 and float32 otherwise. */
vo_status vo_clblast_temp_size(const vo_cl_call *c, int f64, const vo_clblast_gemm *g,
                               size_t *bytes);

/* Queues product g on the call's queue with temporary buffer temp (of at
 * least vo_clblast_temp_size bytes, never NULL). */
vo_status vo_clblast_run(const vo_cl_call *c, int f64, const vo_clblast_gemm *g, cl_mem temp);

/* "deform_conv2d GEMM CLBlast (libclblast.so.1)", or "deform_conv2d GEMM
 * none" and why CLBlast cannot be loaded: the backend's probe's last clause
 * (`visionops info`). */
void vo_clblast_describe(char *out, size_t size);

#endif /* VISIONOPS_OPENCL_CLBLAST_H */
