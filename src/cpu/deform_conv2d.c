/*
 * CPU deform_conv2d: deformable im2col / col2im (the per-element math of
 * kernels/deform_conv2d.h, scheduled over OpenMP threads) around OpenBLAS
 * matrix products (or, built without it, cpu/gemm.c's), on column tiles sized
 * to the workspace limit, several small images to a tile. The per-dtype
 * driver is cpu/deform_conv2d.inc.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "core/deform_conv2d_geom.h"
#include "cpu/common.h"
#include "cpu/gemm.h"

/* OpenBLAS's thread pool and our OpenMP threads would fight over the cores
 * (each spin-waits while the other works), so the products run on our
 * threads, each on a slice of the output columns, with OpenBLAS single-
 * threaded. Its thread count is process-wide (OpenBLAS 0.3.21 has no
 * per-call setting), so concurrent calls share one reference count: the
 * first to enter saves the caller's setting and sets 1, the last to leave
 * restores it. Without the count, two overlapping calls could leave the
 * process at 1 thread for good. */
#ifdef VISIONOPS_HAVE_BLAS
static pthread_mutex_t vo_dcn_blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int vo_dcn_blas_users;
static int vo_dcn_blas_saved;

static void vo_dcn_blas_serial(void) {
  pthread_mutex_lock(&vo_dcn_blas_lock);
  if (vo_dcn_blas_users++ == 0) {
    vo_dcn_blas_saved = openblas_get_num_threads();
    if (vo_dcn_blas_saved != 1) openblas_set_num_threads(1);
  }
  pthread_mutex_unlock(&vo_dcn_blas_lock);
}

static void vo_dcn_blas_restore(void) {
  pthread_mutex_lock(&vo_dcn_blas_lock);
  if (--vo_dcn_blas_users == 0 && vo_dcn_blas_saved != 1)
    openblas_set_num_threads(vo_dcn_blas_saved);
  pthread_mutex_unlock(&vo_dcn_blas_lock);
}
#else /* the built-in product (cpu/gemm.c) has no threads of its own */
static void vo_dcn_blas_serial(void) {}
static void vo_dcn_blas_restore(void) {}
#endif

/* Columns per tile so that `fixed` + `per_col` * L elements, plus
 * `per_image` for each image the tile holds, of `elem` bytes stay under the
 * workspace limit: a part of one image when a whole one does not fit, else
 * whole images, as many as vo_dcn_images_wanted asks and the limit allows.
 * 0 when not even one column fits. */
static int64_t vo_dcn_tile(const vo_exec *ex, int64_t fixed, int64_t per_col, int64_t per_image,
                           size_t elem) {
  const vo_deform_conv2d_params *p = &ex->p.deform_conv2d;
  const int64_t budget = (int64_t)(ex->ctx->workspace_limit / elem);
  const int64_t plane = p->out_h * p->out_w;
  if (per_col == 0) return plane; /* no channels: nothing to tile */
  if (budget < fixed + per_image + per_col) return 0;
  int64_t l = (budget - fixed - per_image) / per_col;
  if (l > INT32_MAX) l = INT32_MAX; /* BLAS takes int sizes */
  if (l < plane) return l;
  /* per_col * plane <= budget here, so the product does not overflow */
  int64_t k = (budget - fixed) / (per_col * plane + per_image);
  const int64_t want = vo_dcn_images_wanted(p, VO_DCN_CPU_COLUMNS);
  if (k > want) k = want;
  return (k < 1 ? 1 : k) * plane;
}

static vo_status vo_dcn_too_small(const vo_exec *ex, int64_t need_elems, size_t elem) {
  const int64_t need = need_elems * (int64_t)elem;
  return vo_fail(VO_ERROR_OUT_OF_MEMORY,
                 "%s: workspace limit %zu bytes is below the %lld bytes one output column needs",
                 ex->op_name, ex->ctx->workspace_limit, (long long)need);
}

/* The workspace for the largest tile the limit allows (*tile columns, as
 * vo_dcn_tile chooses). NULL, the error set, when not even one column fits
 * or the allocation fails. */
static void *vo_dcn_workspace(const vo_exec *ex, int64_t fixed, int64_t per_col, int64_t per_image,
                              size_t elem, int64_t *tile) {
  *tile = vo_dcn_tile(ex, fixed, per_col, per_image, elem);
  if (*tile < 1) {
    (void)vo_dcn_too_small(ex, fixed + per_col + per_image, elem);
    return NULL;
  }
  const int64_t elems =
      fixed + per_col * *tile + per_image * vo_dcn_tile_images_max(&ex->p.deform_conv2d, *tile);
  return vo_workspace_alloc(ex->ctx, ex->device, (size_t)elems * elem, ex->op_name);
}

/* Each compute type's BLAS product, for deform_conv2d.inc's VO_TN(vo_dcn_blas). */
#define vo_dcn_blas_f32 VO_CPU_SGEMM
#define vo_dcn_blas_f64 VO_CPU_DGEMM

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cpu/deform_conv2d.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cpu/deform_conv2d.inc"
#include "kernels/dtype_end.h"

#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "cpu/deform_conv2d.inc"
#include "kernels/dtype_end.h"

#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "cpu/deform_conv2d.inc"
#include "kernels/dtype_end.h"

/* The per-dtype driver of the call's dtype, in either direction. */
static vo_status vo_dcn_run(const vo_exec *ex, int backward) {
  switch (ex->dtype) {
    case VO_F64: return backward ? vo_dcn_backward_f64(ex) : vo_dcn_forward_f64(ex);
    case VO_F16: return backward ? vo_dcn_backward_f16(ex) : vo_dcn_forward_f16(ex);
    case VO_BF16: return backward ? vo_dcn_backward_bf16(ex) : vo_dcn_forward_bf16(ex);
    default: return backward ? vo_dcn_backward_f32(ex) : vo_dcn_forward_f32(ex);
  }
}

vo_status vo_cpu_deform_conv2d(const vo_exec *ex) { return vo_dcn_run(ex, 0); }

vo_status vo_cpu_deform_conv2d_backward(const vo_exec *ex) { return vo_dcn_run(ex, 1); }
