/*
 * CPU kernel for box_iou and its generalized / distance / complete variants
 * and their backward: the per-pair math of kernels/box_iou.h, in rows
 * (cpu/box_iou.inc, per compute type) whose blocks the participants of a
 * vo_cpu_run region claim; the backward's threads each own a box.
 */
#include <math.h>
#include <string.h>

#include "cpu/common.h"
#include "kernels/box_iou.h"

_Static_assert(VO_K_IOU_PLAIN == VO_IOU_PLAIN && VO_K_IOU_GENERALIZED == VO_IOU_GENERALIZED &&
                   VO_K_IOU_DISTANCE == VO_IOU_DISTANCE && VO_K_IOU_COMPLETE == VO_IOU_COMPLETE,
               "kernels/box_iou.h's kinds are vo_iou_kind's");

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define VO_HAVE_AVX2_KERNELS 1
#endif

/* One-thread cost of a pair's gradient in nanoseconds (loads through the
 * grad view's strides and a double accumulation: a coarse estimate). */
#define VO_IOU_GRAD_PAIR_NS 5.0

/* Stores the four sums of box i into a contiguous [n,4] output. */
static void vo_iou_grad_store(const vo_view *out, int64_t i, const double acc[4]) {
  for (int k = 0; k < 4; k++) {
    const int64_t e = i * 4 + k;
    switch (out->dtype) {
      case VO_F64: ((double *)vo_view_addr(out))[e] = acc[k]; break;
      case VO_F16: ((uint16_t *)vo_view_addr(out))[e] = vo_f32_to_f16((float)acc[k]); break;
      case VO_BF16: ((uint16_t *)vo_view_addr(out))[e] = vo_f32_to_bf16((float)acc[k]); break;
      default: ((float *)vo_view_addr(out))[e] = (float)acc[k]; break;
    }
  }
}

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cpu/box_iou.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cpu/box_iou.inc"
#include "kernels/dtype_end.h"

/* One region's rows: participants claim blocks of rows. */
typedef struct vo_iou_rows {
  const vo_pairwise_iou_params *p;
  int64_t m;
  vo_cpu_range rows;
  const void *a, *b; /* vo_side_f32 / vo_side_f64 */
  vo_row_fn_f32 row_f32;
  vo_row_fn_f64 row_f64;
  double *scratch; /* a double row per slot when a float64 compute narrows */
} vo_iou_rows;

/* Computes in float64 (float64 and integer boxes); integer boxes store
 * float32 through the slot's row. */
static void vo_iou_rows_f64_task(void *arg, int slot) {
  vo_iou_rows *r = arg;
  const int64_t m = r->m;
  void *out = vo_view_addr(r->p->out);
  const int narrow = r->scratch != NULL;
  int64_t i0, i1;
  while (vo_cpu_claim(&r->rows, &i0, &i1)) {
    for (int64_t i = i0; i < i1; i++) {
      double *row = narrow ? r->scratch + (size_t)slot * (size_t)m : (double *)out + i * m;
      r->row_f64(r->p->kind, r->p->eps, r->a, i, r->b, m, row);
      if (narrow) {
        float *o = (float *)out + i * m;
        for (int64_t j = 0; j < m; j++) o[j] = (float)row[j];
      }
    }
  }
}

/* Computes in float32 (float32, float16 and bfloat16 boxes), output float32. */
static void vo_iou_rows_f32_task(void *arg, int slot) {
  (void)slot;
  vo_iou_rows *r = arg;
  float *out = vo_view_addr(r->p->out);
  const float eps = (float)r->p->eps;
  int64_t i0, i1;
  while (vo_cpu_claim(&r->rows, &i0, &i1))
    for (int64_t i = i0; i < i1; i++)
      r->row_f32(r->p->kind, eps, r->a, i, r->b, r->m, out + i * r->m);
}

/* One-thread cost of a pair in nanoseconds (benchmark machine, AVX2:
 * 0.4-0.66 ns for the four kinds in float32; double about twice). */
#define VO_IOU_PAIR_NS 0.6

vo_status vo_cpu_pairwise_iou(const vo_exec *ex) {
  const vo_pairwise_iou_params *p = &ex->p.iou;
  const int64_t n = p->a->shape[0], m = p->b->shape[0];
  if (n == 0 || m == 0) return VO_OK;
  /* Compute in float64 for float64 and integer boxes, else float32; the
   * output is float64 or float32. */
  const int use_f64 = ex->dtype == VO_F64;
  const int narrow_out = use_f64 && p->out->dtype == VO_F32;
  const size_t elem = use_f64 ? sizeof(double) : sizeof(float);
  const double row_ns = VO_IOU_PAIR_NS * (double)m * (use_f64 ? 2 : 1);
  const int threads = vo_cpu_threads_for(ex->ctx, n, row_ns * (double)n);
  /* 8 per-box arrays per side, plus a double row per thread when narrowing. */
  const size_t side_bytes = 8 * (size_t)(n + m) * elem;
  const size_t row_bytes = narrow_out ? (size_t)threads * (size_t)m * sizeof(double) : 0;
  void *mem = vo_workspace_alloc(ex->ctx, ex->device, side_bytes + row_bytes, ex->op_name);
  if (!mem) return VO_ERROR_OUT_OF_MEMORY;
  const int avx2 = vo_cpu_effective_isa(ex->ctx) >= VO_ISA_AVX2;
  (void)avx2;
  /* Blocks of rows worth about 20 us each: few claims, fine balance. */
  vo_iou_rows r = {.p = p, .m = m};
  vo_cpu_range_init(&r.rows, n, (int64_t)(20000.0 / row_ns) + 1);

  if (use_f64) {
    vo_side_f64 a, b;
    vo_iou_prepare_f64(p->kind, p->a, (double *)mem, n, &a);
    vo_iou_prepare_f64(p->kind, p->b, (double *)mem + 8 * n, m, &b);
    r.a = &a, r.b = &b;
    if (narrow_out) r.scratch = (void *)((char *)mem + side_bytes);
    r.row_f64 = vo_iou_row_scalar_f64;
#ifdef VO_HAVE_AVX2_KERNELS
    if (avx2) r.row_f64 = vo_iou_row_avx2_f64;
#endif
    vo_cpu_run(threads, vo_iou_rows_f64_task, &r);
  } else {
    vo_side_f32 a, b;
    vo_iou_prepare_f32(p->kind, p->a, (float *)mem, n, &a);
    vo_iou_prepare_f32(p->kind, p->b, (float *)mem + 8 * n, m, &b);
    r.a = &a, r.b = &b;
    r.row_f32 = vo_iou_row_scalar_f32;
#ifdef VO_HAVE_AVX2_KERNELS
    if (avx2) r.row_f32 = vo_iou_row_avx2_f32;
#endif
    vo_cpu_run(threads, vo_iou_rows_f32_task, &r);
  }
  vo_workspace_free(ex->ctx, ex->device, mem);
  return VO_OK;
}

vo_status vo_cpu_pairwise_iou_backward(const vo_exec *ex) {
  const vo_pairwise_iou_backward_params *p = &ex->p.iou_backward;
  const int64_t n = p->a->shape[0], m = p->b->shape[0];
  if (n == 0 || m == 0) {
    /* No pairs: the other side's gradient is all zeros. */
    if (n) memset(vo_view_addr(p->grad_a), 0, (size_t)n * 4 * vo_dtype_size(p->grad_a->dtype));
    if (m) memset(vo_view_addr(p->grad_b), 0, (size_t)m * 4 * vo_dtype_size(p->grad_b->dtype));
    return VO_OK;
  }
  const int use_f64 = ex->dtype == VO_F64;
  const size_t elem = use_f64 ? sizeof(double) : sizeof(float);
  void *mem = vo_workspace_alloc(ex->ctx, ex->device, 5 * (size_t)(n + m) * elem, ex->op_name);
  if (!mem) return VO_ERROR_OUT_OF_MEMORY;
  if (use_f64)
    vo_iou_grad_run_f64(ex, mem, n, m);
  else
    vo_iou_grad_run_f32(ex, mem, n, m);
  vo_workspace_free(ex->ctx, ex->device, mem);
  return VO_OK;
}
