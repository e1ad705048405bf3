/*
 * CPU kernel for box_iou and its generalized / distance / complete variants:
 * boxes gathered into structure-of-arrays form with per-box terms
 * precomputed, blocks of rows claimed by the participants of a vo_cpu_run
 * region, a vectorised loop over columns. The
 * arithmetic follows torchvision's order (and its NaN propagation).
 * Their backward: one thread owns a box and sums its pairs in order.
 */
#include <math.h>
#include <string.h>

#include "core/box_iou_grad.h"
#include "cpu/common.h"

/* torch.max / torch.min propagate NaN and these do not, but it makes no
 * difference: a NaN coordinate makes that box's area, hence the union and
 * every variant's result, NaN either way. Plain selects vectorise. */
#define VO_MAXN(a, b) ((a) > (b) ? (a) : (b))
#define VO_MINN(a, b) ((a) < (b) ? (a) : (b))
/* clamp(min=0) keeps NaN, as torch's does. */
#define VO_CLAMP0(x) ((x) < 0 ? 0 : (x))

/* Per-box terms for one side: coordinates, area, centre, atan(w/h). */
typedef struct vo_side_f32 {
  const float *x1, *y1, *x2, *y2, *area, *cx, *cy, *atan_wh;
} vo_side_f32;
typedef struct vo_side_f64 {
  const double *x1, *y1, *x2, *y2, *area, *cx, *cy, *atan_wh;
} vo_side_f64;

/* One output row: out[j] = overlap(a_i, b_j) for j in [0, m). Always
 * inlined into one function per kind (below), where `kind` is a constant:
 * the branches fold away and the loop vectorises. */
#define VO_DEFINE_ROW(T, SIDE, SUFFIX, ATTR)                                              \
  ATTR static inline __attribute__((always_inline)) void vo_iou_row_##SUFFIX(             \
      vo_iou_kind kind, T eps, const SIDE *a, int64_t i, const SIDE *b, int64_t m,        \
      T *restrict out) {                                                                  \
    const T ax1 = a->x1[i], ay1 = a->y1[i], ax2 = a->x2[i], ay2 = a->y2[i];               \
    const T aarea = a->area[i], acx = a->cx[i], acy = a->cy[i], aatan = a->atan_wh[i];    \
    const T four_over_pi2 = (T)(4.0 / (3.14159265358979323846 * 3.14159265358979323846)); \
    const T *restrict bx1 = b->x1, *restrict by1 = b->y1, *restrict bx2 = b->x2;          \
    const T *restrict by2 = b->y2, *restrict barea = b->area, *restrict bcx = b->cx;      \
    const T *restrict bcy = b->cy, *restrict batan = b->atan_wh;                          \
    for (int64_t j = 0; j < m; j++) {                                                     \
      T w = VO_MINN(ax2, bx2[j]) - VO_MAXN(ax1, bx1[j]);                                  \
      T h = VO_MINN(ay2, by2[j]) - VO_MAXN(ay1, by1[j]);                                  \
      w = VO_CLAMP0(w);                                                                   \
      h = VO_CLAMP0(h);                                                                   \
      T inter = w * h;                                                                    \
      T uni = aarea + barea[j] - inter;                                                   \
      T iou = inter / uni;                                                                \
      if (kind == VO_IOU_PLAIN) {                                                         \
        out[j] = iou;                                                                     \
        continue;                                                                         \
      }                                                                                   \
      T ew = VO_MAXN(ax2, bx2[j]) - VO_MINN(ax1, bx1[j]);                                 \
      T eh = VO_MAXN(ay2, by2[j]) - VO_MINN(ay1, by1[j]);                                 \
      ew = VO_CLAMP0(ew);                                                                 \
      eh = VO_CLAMP0(eh);                                                                 \
      if (kind == VO_IOU_GENERALIZED) {                                                   \
        T enclosing = ew * eh;                                                            \
        out[j] = iou - (enclosing - uni) / enclosing;                                     \
        continue;                                                                         \
      }                                                                                   \
      T diag = ew * ew + eh * eh + eps;                                                   \
      T dx = acx - bcx[j], dy = acy - bcy[j];                                             \
      T diou = iou - (dx * dx + dy * dy) / diag;                                          \
      if (kind == VO_IOU_DISTANCE) {                                                      \
        out[j] = diou;                                                                    \
        continue;                                                                         \
      }                                                                                   \
      T d = aatan - batan[j];                                                             \
      T v = four_over_pi2 * (d * d);                                                      \
      T alpha = v / ((T)1 - iou + v + eps);                                               \
      out[j] = diou - alpha * v;                                                          \
    }                                                                                     \
  }

typedef void (*vo_row_f32_fn)(float eps, const vo_side_f32 *a, int64_t i, const vo_side_f32 *b,
                              int64_t m, float *restrict out);
typedef void (*vo_row_f64_fn)(double eps, const vo_side_f64 *a, int64_t i, const vo_side_f64 *b,
                              int64_t m, double *restrict out);

#define VO_DEFINE_KIND_ROW(T, SIDE, SUFFIX, ATTR, KIND, NAME)                               \
  ATTR static void vo_iou_##NAME##_##SUFFIX(T eps, const SIDE *a, int64_t i, const SIDE *b, \
                                            int64_t m, T *restrict out) {                   \
    vo_iou_row_##SUFFIX(KIND, eps, a, i, b, m, out);                                        \
  }
/* Row functions for every kind, indexed by vo_iou_kind. */
#define VO_DEFINE_ROWS(T, SIDE, SUFFIX, BITS, ATTR)                                 \
  VO_DEFINE_ROW(T, SIDE, SUFFIX, ATTR)                                              \
  VO_DEFINE_KIND_ROW(T, SIDE, SUFFIX, ATTR, VO_IOU_PLAIN, plain)                    \
  VO_DEFINE_KIND_ROW(T, SIDE, SUFFIX, ATTR, VO_IOU_GENERALIZED, generalized)        \
  VO_DEFINE_KIND_ROW(T, SIDE, SUFFIX, ATTR, VO_IOU_DISTANCE, distance)              \
  VO_DEFINE_KIND_ROW(T, SIDE, SUFFIX, ATTR, VO_IOU_COMPLETE, complete)              \
  static const vo_row_##BITS##_fn vo_iou_rows_##SUFFIX[4] = {                       \
      vo_iou_plain_##SUFFIX, vo_iou_generalized_##SUFFIX, vo_iou_distance_##SUFFIX, \
      vo_iou_complete_##SUFFIX};

VO_DEFINE_ROWS(float, vo_side_f32, f32_scalar, f32, )
VO_DEFINE_ROWS(double, vo_side_f64, f64_scalar, f64, )
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define VO_HAVE_AVX2_KERNELS 1
VO_DEFINE_ROWS(float, vo_side_f32, f32_avx2, f32, __attribute__((target("avx2,fma"))))
VO_DEFINE_ROWS(double, vo_side_f64, f64_avx2, f64, __attribute__((target("avx2,fma"))))
#endif

/* Fills one side's per-box terms (arrays of n, laid out in `mem`). */
#define VO_DEFINE_PREPARE(T, SUFFIX, ATAN)                                          \
  static void vo_iou_prepare_##SUFFIX(const vo_view *boxes, T *mem, int64_t n,      \
                                      vo_side_##SUFFIX *s) {                        \
    T *x1 = mem, *y1 = mem + n, *x2 = mem + 2 * n, *y2 = mem + 3 * n;               \
    T *area = mem + 4 * n, *cx = mem + 5 * n, *cy = mem + 6 * n, *at = mem + 7 * n; \
    vo_cpu_boxes_##SUFFIX bx = {x1, y1, x2, y2};                                    \
    vo_cpu_gather_boxes_##SUFFIX(boxes, NULL, n, &bx);                              \
    for (int64_t i = 0; i < n; i++) {                                               \
      area[i] = (x2[i] - x1[i]) * (y2[i] - y1[i]);                                  \
      cx[i] = (x1[i] + x2[i]) / 2;                                                  \
      cy[i] = (y1[i] + y2[i]) / 2;                                                  \
      at[i] = ATAN((x2[i] - x1[i]) / (y2[i] - y1[i]));                              \
    }                                                                               \
    s->x1 = x1, s->y1 = y1, s->x2 = x2, s->y2 = y2;                                 \
    s->area = area, s->cx = cx, s->cy = cy, s->atan_wh = at;                        \
  }
VO_DEFINE_PREPARE(float, f32, atanf)
VO_DEFINE_PREPARE(double, f64, atan)

/* One region's rows: participants claim blocks of rows. */
typedef struct vo_iou_rows {
  const vo_pairwise_iou_params *p;
  int64_t m;
  vo_cpu_range rows;
  const void *a, *b; /* vo_side_f32 / vo_side_f64 */
  vo_row_f32_fn row_f32;
  vo_row_f64_fn row_f64;
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
      r->row_f64(r->p->eps, r->a, i, r->b, m, row);
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
    for (int64_t i = i0; i < i1; i++) r->row_f32(eps, r->a, i, r->b, r->m, out + i * r->m);
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
  const int avx2 = vo_cpu_effective_isa(ex->ctx) == VO_ISA_AVX2;
  (void)avx2;
  /* Blocks of rows worth about 20 us each: few claims, fine balance. */
  vo_iou_rows r = {.p = p, .m = m};
  vo_cpu_range_init(&r.rows, n, (int64_t)(20000.0 / row_ns) + 1);

  if (use_f64) {
    vo_side_f64 a, b;
    vo_iou_prepare_f64(p->a, (double *)mem, n, &a);
    vo_iou_prepare_f64(p->b, (double *)mem + 8 * n, m, &b);
    r.a = &a, r.b = &b;
    if (narrow_out) r.scratch = (void *)((char *)mem + side_bytes);
    r.row_f64 = vo_iou_rows_f64_scalar[p->kind];
#ifdef VO_HAVE_AVX2_KERNELS
    if (avx2) r.row_f64 = vo_iou_rows_f64_avx2[p->kind];
#endif
    vo_cpu_run(threads, vo_iou_rows_f64_task, &r);
  } else {
    vo_side_f32 a, b;
    vo_iou_prepare_f32(p->a, (float *)mem, n, &a);
    vo_iou_prepare_f32(p->b, (float *)mem + 8 * n, m, &b);
    r.a = &a, r.b = &b;
    r.row_f32 = vo_iou_rows_f32_scalar[p->kind];
#ifdef VO_HAVE_AVX2_KERNELS
    if (avx2) r.row_f32 = vo_iou_rows_f32_avx2[p->kind];
#endif
    vo_cpu_run(threads, vo_iou_rows_f32_task, &r);
  }
  vo_workspace_free(ex->ctx, ex->device, mem);
  return VO_OK;
}

/* ------------------------------------------------------------- backward */

/* One box set in the compute type T: coordinates and atan(w/h) per box. */
#define VO_DEFINE_BACKWARD(T, SUFFIX)                                                           \
  typedef struct vo_iou_grad_side_##SUFFIX {                                                    \
    const T *x1, *y1, *x2, *y2, *atan_wh;                                                       \
  } vo_iou_grad_side_##SUFFIX;                                                                  \
                                                                                                \
  /* Gathers `boxes` into mem (5 arrays of n). */                                               \
  static void vo_iou_grad_prepare_##SUFFIX(const vo_view *boxes, T *mem, int64_t n,             \
                                           vo_iou_grad_side_##SUFFIX *s) {                      \
    vo_cpu_boxes_##SUFFIX bx = {mem, mem + n, mem + 2 * n, mem + 3 * n};                        \
    T *at = mem + 4 * n;                                                                        \
    vo_cpu_gather_boxes_##SUFFIX(boxes, NULL, n, &bx);                                          \
    for (int64_t i = 0; i < n; i++) {                                                           \
      const T box[4] = {bx.x1[i], bx.y1[i], bx.x2[i], bx.y2[i]};                                \
      at[i] = vo_iou_atan_ratio_##SUFFIX(box);                                                  \
    }                                                                                           \
    s->x1 = bx.x1, s->y1 = bx.y1, s->x2 = bx.x2, s->y2 = bx.y2, s->atan_wh = at;                \
  }                                                                                             \
                                                                                                \
  /* The gradient of box i of `own` summed over every box j of `other` in                       \
   * order, in double, into acc. own_is_a: own is the op's first box set                        \
   * (grad[i, j]); otherwise its second (grad[j, i]). */                                        \
  static void vo_iou_grad_box_##SUFFIX(const vo_pairwise_iou_backward_params *p, int own_is_a,  \
                                       const vo_iou_grad_side_##SUFFIX *own, int64_t i,         \
                                       const vo_iou_grad_side_##SUFFIX *other, int64_t count,   \
                                       double acc[4]) {                                         \
    const T eps = (T)p->eps;                                                                    \
    const T mine[4] = {own->x1[i], own->y1[i], own->x2[i], own->y2[i]};                         \
    const T t_mine = own->atan_wh[i];                                                           \
    const int64_t gs0 = p->grad->stride[0], gs1 = p->grad->stride[1];                           \
    for (int k = 0; k < 4; k++) acc[k] = 0;                                                     \
    if (own_is_a) {                                                                             \
      for (int64_t j = 0; j < count; j++) {                                                     \
        const T theirs[4] = {other->x1[j], other->y1[j], other->x2[j], other->y2[j]};           \
        const T g = (T)vo_load_host(p->grad, i * gs0 + j * gs1);                                \
        T ga[4], gb[4];                                                                         \
        vo_iou_pair_grad_##SUFFIX(p->kind, eps, mine, theirs, t_mine, other->atan_wh[j], g, ga, \
                                  gb);                                                          \
        for (int k = 0; k < 4; k++) acc[k] += (double)ga[k];                                    \
      }                                                                                         \
    } else {                                                                                    \
      for (int64_t j = 0; j < count; j++) {                                                     \
        const T theirs[4] = {other->x1[j], other->y1[j], other->x2[j], other->y2[j]};           \
        const T g = (T)vo_load_host(p->grad, j * gs0 + i * gs1);                                \
        T ga[4], gb[4];                                                                         \
        vo_iou_pair_grad_##SUFFIX(p->kind, eps, theirs, mine, other->atan_wh[j], t_mine, g, ga, \
                                  gb);                                                          \
        for (int k = 0; k < 4; k++) acc[k] += (double)gb[k];                                    \
      }                                                                                         \
    }                                                                                           \
  }                                                                                             \
                                                                                                \
  /* One box set's gradient into out [count_own, 4]: a participant owns a                       \
   * box (claimed in blocks). */                                                                \
  typedef struct vo_iou_grad_job_##SUFFIX {                                                     \
    const vo_pairwise_iou_backward_params *p;                                                   \
    int own_is_a;                                                                               \
    const vo_iou_grad_side_##SUFFIX *own, *other;                                               \
    int64_t count_other;                                                                        \
    const vo_view *out;                                                                         \
    vo_cpu_range boxes;                                                                         \
  } vo_iou_grad_job_##SUFFIX;                                                                   \
                                                                                                \
  static void vo_iou_grad_task_##SUFFIX(void *arg, int slot) {                                  \
    (void)slot;                                                                                 \
    vo_iou_grad_job_##SUFFIX *j = arg;                                                          \
    int64_t i0, i1;                                                                             \
    while (vo_cpu_claim(&j->boxes, &i0, &i1))                                                   \
      for (int64_t i = i0; i < i1; i++) {                                                       \
        double acc[4];                                                                          \
        vo_iou_grad_box_##SUFFIX(j->p, j->own_is_a, j->own, i, j->other, j->count_other, acc);  \
        vo_iou_grad_store(j->out, i, acc);                                                      \
      }                                                                                         \
  }                                                                                             \
                                                                                                \
  static void vo_iou_grad_set_##SUFFIX(                                                         \
      const vo_exec *ex, int own_is_a, const vo_iou_grad_side_##SUFFIX *own, int64_t count_own, \
      const vo_iou_grad_side_##SUFFIX *other, int64_t count_other, const vo_view *out) {        \
    vo_iou_grad_job_##SUFFIX j = {.p = &ex->p.iou_backward,                                     \
                                  .own_is_a = own_is_a,                                         \
                                  .own = own,                                                   \
                                  .other = other,                                               \
                                  .count_other = count_other,                                   \
                                  .out = out};                                                  \
    const double box_ns = VO_IOU_GRAD_PAIR_NS * (double)count_other;                            \
    vo_cpu_range_init(&j.boxes, count_own, (int64_t)(20000.0 / box_ns) + 1);                    \
    vo_cpu_run(vo_cpu_threads_for(ex->ctx, count_own, box_ns *(double)count_own),               \
               vo_iou_grad_task_##SUFFIX, &j);                                                  \
  }                                                                                             \
                                                                                                \
  static void vo_iou_grad_run_##SUFFIX(const vo_exec *ex, T *mem, int64_t n, int64_t m) {       \
    const vo_pairwise_iou_backward_params *p = &ex->p.iou_backward;                             \
    vo_iou_grad_side_##SUFFIX a, b;                                                             \
    vo_iou_grad_prepare_##SUFFIX(p->a, mem, n, &a);                                             \
    vo_iou_grad_prepare_##SUFFIX(p->b, mem + 5 * n, m, &b);                                     \
    vo_iou_grad_set_##SUFFIX(ex, 1, &a, n, &b, m, p->grad_a);                                   \
    vo_iou_grad_set_##SUFFIX(ex, 0, &b, m, &a, n, p->grad_b);                                   \
  }

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

VO_DEFINE_BACKWARD(float, f32)
VO_DEFINE_BACKWARD(double, f64)

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
