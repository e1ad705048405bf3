/*
 * CPU deform_conv2d: deformable im2col / col2im (ours, OpenMP) around
 * OpenBLAS matrix products (or, built without it, cpu/gemm.c's), on column
 * tiles sized to the workspace limit.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "cpu/common.h"
#include "cpu/gemm.h"

#ifdef VISIONOPS_HAVE_OPENMP
#include <omp.h>
#endif

#define VO_DCN_PRAGMA(x) _Pragma(#x)
#ifdef VISIONOPS_HAVE_OPENMP
#define VO_DCN_OMP_FOR(t) \
  VO_DCN_PRAGMA(omp parallel for num_threads(t) schedule(static) if ((t) > 1))
#define VO_DCN_OMP_PARALLEL(t) VO_DCN_PRAGMA(omp parallel num_threads(t) if ((t) > 1))
#define VO_DCN_THREAD_ID(id, count)  \
  do {                               \
    (id) = omp_get_thread_num();     \
    (count) = omp_get_num_threads(); \
  } while (0)
#else /* serial build: the thread counts are read and ignored */
#define VO_DCN_OMP_FOR(t) (void)(t);
#define VO_DCN_OMP_PARALLEL(t) (void)(t);
#define VO_DCN_THREAD_ID(id, count) ((void)0)
#endif

/* Stores a compute-type value into element `i` of a contiguous output. */
static inline void vo_dcn_store(const vo_view *v, int64_t i, double x) {
  switch (v->dtype) {
    case VO_F32: ((float *)vo_view_addr(v))[i] = (float)x; break;
    case VO_F64: ((double *)vo_view_addr(v))[i] = x; break;
    case VO_F16: ((uint16_t *)vo_view_addr(v))[i] = vo_f32_to_f16((float)x); break;
    case VO_BF16: ((uint16_t *)vo_view_addr(v))[i] = vo_f32_to_bf16((float)x); break;
    default: break;
  }
}

/* Element [a, b, c, d] of a 4-D view, by its strides. */
static inline int64_t vo_dcn_at(const vo_view *v, int64_t a, int64_t b, int64_t c, int64_t d) {
  return a * v->stride[0] + b * v->stride[1] + c * v->stride[2] + d * v->stride[3];
}

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

/* Columns per tile so that `fixed` + `per_col` * L elements of `elem` bytes
 * stay under the workspace limit; 0 when not even one column fits. */
static int64_t vo_dcn_tile(const vo_exec *ex, int64_t fixed, int64_t per_col, size_t elem) {
  const int64_t budget = (int64_t)(ex->ctx->workspace_limit / elem);
  const int64_t plane = ex->p.deform_conv2d.out_h * ex->p.deform_conv2d.out_w;
  if (per_col == 0) return plane; /* no channels: nothing to tile */
  if (budget < fixed + per_col) return 0;
  int64_t l = (budget - fixed) / per_col;
  if (l > INT32_MAX) l = INT32_MAX; /* BLAS takes int sizes */
  return l < plane ? l : plane;
}

static vo_status vo_dcn_too_small(const vo_exec *ex, int64_t fixed, int64_t per_col, size_t elem) {
  const int64_t need = (fixed + per_col) * (int64_t)elem;
  return vo_fail(VO_ERROR_OUT_OF_MEMORY,
                 "%s: workspace limit %zu bytes is below the %lld bytes one output column needs",
                 ex->op_name, ex->ctx->workspace_limit, (long long)need);
}

/* The kernel, once per compute type T (float for float32/16/bfloat16,
 * double for float64) with its BLAS GEMM. */
#define VO_DEFINE_DCN(T, SUF, DT, GEMM, FLOOR)                                                     \
  /* d sample / d y (is_y) or d x of the bilinear sample, with torchvision's guard: 0 unless all   \
   * of (y, x) is within [-1, H] x [-1, W] (which also keeps NaN out of the integer casts). */     \
  static inline T vo_dcn_coord_weight_##SUF(const vo_view *in, int64_t base, int64_t h, int64_t w, \
                                            T y, T x, int is_y) {                                  \
    if (!(y >= -1 && y <= (T)h && x >= -1 && x <= (T)w)) return 0;                                 \
    const T yf = FLOOR(y), xf = FLOOR(x);                                                          \
    const int64_t yl = (int64_t)yf, xl = (int64_t)xf, yh = yl + 1, xh = xl + 1;                    \
    const int vyl = yl >= 0 && yl < h, vyh = yh >= 0 && yh < h;                                    \
    const int vxl = xl >= 0 && xl < w, vxh = xh >= 0 && xh < w;                                    \
    const int64_t sh = in->stride[2], sw = in->stride[3];                                          \
    const T v_yx = (vyl && vxl) ? (T)vo_load_host(in, base + yl * sh + xl * sw) : 0;               \
    const T v_yX = (vyl && vxh) ? (T)vo_load_host(in, base + yl * sh + xh * sw) : 0;               \
    const T v_Yx = (vyh && vxl) ? (T)vo_load_host(in, base + yh * sh + xl * sw) : 0;               \
    const T v_YX = (vyh && vxh) ? (T)vo_load_host(in, base + yh * sh + xh * sw) : 0;               \
    if (is_y) {                                                                                    \
      const T dx = x - xf;                                                                         \
      return dx * (v_YX - v_yX) + (1 - dx) * (v_Yx - v_yx);                                        \
    }                                                                                              \
    const T dy = y - yf;                                                                           \
    return dy * (v_YX - v_Yx) + (1 - dy) * (v_yX - v_yx);                                          \
  }                                                                                                \
                                                                                                   \
  /* Sampling position of tap t at output pixel `pix` of image n, and its mask. */                 \
  static inline void vo_dcn_where_##SUF(const vo_deform_conv2d_params *p, int64_t n, int64_t g,    \
                                        int64_t t, int64_t pix, T *y, T *x, T *m) {                \
    const int64_t taps = p->kernel_h * p->kernel_w;                                                \
    const int64_t oy = pix / p->out_w, ox = pix % p->out_w;                                        \
    const int64_t i = t / p->kernel_w, j = t % p->kernel_w;                                        \
    const T dy =                                                                                   \
        (T)vo_load_host(p->offset, vo_dcn_at(p->offset, n, g * 2 * taps + 2 * t, oy, ox));         \
    const T dx =                                                                                   \
        (T)vo_load_host(p->offset, vo_dcn_at(p->offset, n, g * 2 * taps + 2 * t + 1, oy, ox));     \
    *y = (T)(oy * p->stride_h - p->pad_h + i * p->dilation_h) + dy;                                \
    *x = (T)(ox * p->stride_w - p->pad_w + j * p->dilation_w) + dx;                                \
    *m = p->mask ? (T)vo_load_host(p->mask, vo_dcn_at(p->mask, n, g * taps + t, oy, ox)) : (T)1;   \
  }                                                                                                \
                                                                                                   \
  /* Where one (offset group, tap, pixel) samples: its corners (plane offsets, a bit per           \
   * corner inside the map), bilinear weights and mask. Shared by the group's channels. */         \
  typedef struct vo_dcn_plan_##SUF {                                                               \
    int64_t idx[4]; /* corners in the input plane, by its strides */                               \
    int64_t cidx;   /* top-left corner in a contiguous H x W plane (grad_input) */                 \
    T w[4];                                                                                        \
    T m, y, x;                                                                                     \
    int valid;                                                                                     \
  } vo_dcn_plan_##SUF;                                                                             \
  /* Plan entries per column, in units of T (for workspace sizing). */                             \
  static int64_t vo_dcn_plan_units_##SUF(const vo_deform_conv2d_params *p) {                       \
    const int64_t per = (int64_t)((sizeof(vo_dcn_plan_##SUF) + sizeof(T) - 1) / sizeof(T));        \
    return p->offset_groups * p->kernel_h * p->kernel_w * per;                                     \
  }                                                                                                \
                                                                                                   \
  static void vo_dcn_plan_build_##SUF(const vo_deform_conv2d_params *p, vo_dcn_plan_##SUF *plan,   \
                                      int64_t n, int64_t p0, int64_t len, int nt) {                \
    const int64_t taps = p->kernel_h * p->kernel_w, rows = p->offset_groups * taps;                \
    const int64_t h = p->height, w = p->width, sh = p->input->stride[2], sw = p->input->stride[3]; \
    VO_DCN_OMP_FOR(nt)                                                                             \
    for (int64_t r = 0; r < rows; r++)                                                             \
      for (int64_t l = 0; l < len; l++) {                                                          \
        vo_dcn_plan_##SUF *pl = &plan[r * len + l];                                                \
        T y, x;                                                                                    \
        vo_dcn_where_##SUF(p, n, r / taps, r % taps, p0 + l, &y, &x, &pl->m);                      \
        pl->y = y;                                                                                 \
        pl->x = x;                                                                                 \
        pl->valid = 0;                                                                             \
        pl->cidx = 0;                                                                              \
        for (int k = 0; k < 4; k++) {                                                              \
          pl->idx[k] = 0;                                                                          \
          pl->w[k] = 0;                                                                            \
        }                                                                                          \
        /* 0 outside (-1, H) x (-1, W), NaN included (torchvision's bilinear_interpolate) */       \
        if (!(y > -1 && y < (T)h && x > -1 && x < (T)w)) continue;                                 \
        const T yf = FLOOR(y), xf = FLOOR(x);                                                      \
        const int64_t yl = (int64_t)yf, xl = (int64_t)xf;                                          \
        const T ly = y - yf, lx = x - xf, hy = 1 - ly, hx = 1 - lx;                                \
        pl->w[0] = hy * hx;                                                                        \
        pl->w[1] = hy * lx;                                                                        \
        pl->w[2] = ly * hx;                                                                        \
        pl->w[3] = ly * lx;                                                                        \
        pl->idx[0] = yl * sh + xl * sw;                                                            \
        pl->cidx = yl * w + xl;                                                                    \
        pl->idx[1] = pl->idx[0] + sw;                                                              \
        pl->idx[2] = pl->idx[0] + sh;                                                              \
        pl->idx[3] = pl->idx[2] + sw;                                                              \
        pl->valid = (yl >= 0 && xl >= 0) | (yl >= 0 && xl + 1 <= w - 1) << 1 |                     \
                    (yl + 1 <= h - 1 && xl >= 0) << 2 | (yl + 1 <= h - 1 && xl + 1 <= w - 1) << 3; \
      }                                                                                            \
  }                                                                                                \
                                                                                                   \
  /* cols[(c*K + t)*len + l] = mask * sample, for pixels p0 .. p0+len-1 of image n. */             \
  static void vo_dcn_im2col_##SUF(const vo_deform_conv2d_params *p, const vo_dcn_plan_##SUF *plan, \
                                  T *cols, int64_t n, int64_t len, int nt) {                       \
    const int64_t taps = p->kernel_h * p->kernel_w, rows = p->in_channels * taps;                  \
    const int64_t per_og = p->in_channels / p->offset_groups;                                      \
    const int native = p->input->dtype == DT; /* read T directly, no conversion */                 \
    VO_DCN_OMP_FOR(nt)                                                                             \
    for (int64_t r = 0; r < rows; r++) {                                                           \
      const int64_t c = r / taps, t = r % taps;                                                    \
      const int64_t base = vo_dcn_at(p->input, n, c, 0, 0);                                        \
      const vo_dcn_plan_##SUF *row = plan + (c / per_og * taps + t) * len;                         \
      T *dst = cols + r * len;                                                                     \
      if (native) {                                                                                \
        const T *src = (const T *)vo_view_addr(p->input) + base;                                           \
        for (int64_t l = 0; l < len; l++) {                                                        \
          const vo_dcn_plan_##SUF *pl = &row[l];                                                   \
          const T v1 = (pl->valid & 1) ? src[pl->idx[0]] : 0;                                      \
          const T v2 = (pl->valid & 2) ? src[pl->idx[1]] : 0;                                      \
          const T v3 = (pl->valid & 4) ? src[pl->idx[2]] : 0;                                      \
          const T v4 = (pl->valid & 8) ? src[pl->idx[3]] : 0;                                      \
          dst[l] = pl->m * (pl->w[0] * v1 + pl->w[1] * v2 + pl->w[2] * v3 + pl->w[3] * v4);        \
        }                                                                                          \
      } else {                                                                                     \
        for (int64_t l = 0; l < len; l++) {                                                        \
          const vo_dcn_plan_##SUF *pl = &row[l];                                                   \
          T v[4];                                                                                  \
          for (int k = 0; k < 4; k++)                                                              \
            v[k] = (pl->valid >> k & 1) ? (T)vo_load_host(p->input, base + pl->idx[k]) : 0;        \
          dst[l] =                                                                                 \
              pl->m * (pl->w[0] * v[0] + pl->w[1] * v[1] + pl->w[2] * v[2] + pl->w[3] * v[3]);     \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* C[m, n] = A * B (+ beta * C), row-major, split over C's columns across nt threads; every      \
   * element is one BLAS dot product over k, so the split changes no sum order. */                 \
  static void vo_dcn_gemm_##SUF(int nt, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb,          \
                                int64_t m, int64_t n, int64_t k, const T *a, int64_t lda,          \
                                const T *b, int64_t ldb, T beta, T *c, int64_t ldc) {              \
    if (m == 0 || n == 0) return;                                                                  \
    if (k == 0) { /* BLAS rejects lda = 0 (no input channels): the product is empty */             \
      for (int64_t i = 0; i < m; i++)                                                              \
        for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0 ? 0 : beta * c[i * ldc + j];    \
      return;                                                                                      \
    }                                                                                              \
    VO_DCN_OMP_PARALLEL(nt) {                                                                      \
      int id = 0, count = 1;                                                                       \
      VO_DCN_THREAD_ID(id, count);                                                                 \
      const int64_t n0 = n * id / count, n1 = n * (id + 1) / count;                                \
      if (n1 > n0)                                                                                 \
        GEMM(CblasRowMajor, ta, tb, (int)m, (int)(n1 - n0), (int)k, 1, a, (int)lda,                \
             tb == CblasNoTrans ? b + n0 : b + n0 * ldb, (int)ldb, beta, c + n0, (int)ldc);        \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* Weight as a contiguous [Cout, Cin/groups*kh*kw] matrix in T. */                               \
  static void vo_dcn_load_weight_##SUF(const vo_deform_conv2d_params *p, T *wt) {                  \
    const vo_view *w = p->weight;                                                                  \
    int64_t k = 0;                                                                                 \
    for (int64_t a = 0; a < w->shape[0]; a++)                                                      \
      for (int64_t b = 0; b < w->shape[1]; b++)                                                    \
        for (int64_t c = 0; c < w->shape[2]; c++)                                                  \
          for (int64_t d = 0; d < w->shape[3]; d++)                                                \
            wt[k++] = (T)vo_load_host(w, vo_dcn_at(w, a, b, c, d));                                \
  }                                                                                                \
                                                                                                   \
  static vo_status vo_dcn_forward_##SUF(const vo_exec *ex) {                                       \
    const vo_deform_conv2d_params *p = &ex->p.deform_conv2d;                                       \
    const int64_t taps = p->kernel_h * p->kernel_w, cgk = p->in_channels / p->groups * taps;       \
    const int64_t coutg = p->out_channels / p->groups, plane = p->out_h * p->out_w;                \
    const int64_t fixed = p->out_channels * cgk,                                                   \
                  per_col = p->in_channels * taps + p->out_channels + vo_dcn_plan_units_##SUF(p);  \
    const int64_t tile = vo_dcn_tile(ex, fixed, per_col, sizeof(T));                               \
    if (tile < 1) return vo_dcn_too_small(ex, fixed, per_col, sizeof(T));                          \
    T *ws = vo_workspace_alloc(ex->ctx, ex->device, (size_t)(fixed + per_col * tile) * sizeof(T),  \
                               ex->op_name);                                                       \
    if (!ws) return VO_ERROR_OUT_OF_MEMORY;                                                        \
    /* The plan first: the workspace's alignment suits its int64 fields. */                        \
    vo_dcn_plan_##SUF *plan = (vo_dcn_plan_##SUF *)(void *)ws;                                     \
    T *wt = ws + vo_dcn_plan_units_##SUF(p) * tile, *cols = wt + fixed;                            \
    T *obuf = cols + p->in_channels * taps * tile;                                                 \
    vo_dcn_load_weight_##SUF(p, wt);                                                               \
    /* costs (ns): ~4 per im2col element, ~10 per plan entry, 0.04 per GEMM                        \
     * multiply-add pair, ~1 per stored output */                                                  \
    const double rows_c = (double)(p->in_channels * taps),                                         \
                 rows_og = (double)(p->offset_groups * taps);                                      \
    const int nt =                                                                                 \
        vo_cpu_threads_for(ex->ctx, p->in_channels * taps, 4.0 * rows_c * (double)tile);           \
    vo_dcn_blas_serial();                                                                          \
    for (int64_t n = 0; n < p->batch; n++)                                                         \
      for (int64_t p0 = 0; p0 < plane; p0 += tile) {                                               \
        const int64_t len = plane - p0 < tile ? plane - p0 : tile;                                 \
        vo_dcn_plan_build_##SUF(p, plan, n, p0, len,                                               \
                                vo_cpu_threads_for(ex->ctx, len, 10.0 * rows_og * (double)len));   \
        vo_dcn_im2col_##SUF(p, plan, cols, n, len, nt);                                            \
        for (int64_t g = 0; g < p->groups; g++)                                                    \
          vo_dcn_gemm_##SUF(                                                                       \
              vo_cpu_threads_for(ex->ctx, len / 16, 0.04 * (double)(coutg * len) * (double)cgk),   \
              CblasNoTrans, CblasNoTrans, coutg, len, cgk, wt + g * coutg * cgk, cgk,              \
              cols + g * cgk * len, len, 0, obuf + g * coutg * len, len);                          \
        const int ntc =                                                                            \
            vo_cpu_threads_for(ex->ctx, p->out_channels, (double)(p->out_channels * len));         \
        VO_DCN_OMP_FOR(ntc)                                                                        \
        for (int64_t co = 0; co < p->out_channels; co++) {                                         \
          const T b = p->bias ? (T)vo_load_host(p->bias, co * p->bias->stride[0]) : (T)0;          \
          const int64_t dst = (n * p->out_channels + co) * plane + p0;                             \
          for (int64_t l = 0; l < len; l++) vo_dcn_store(p->out, dst + l, obuf[co * len + l] + b); \
        }                                                                                          \
      }                                                                                            \
    vo_dcn_blas_restore();                                                                         \
    vo_workspace_free(ex->ctx, ex->device, ws);                                                    \
    return VO_OK;                                                                                  \
  }                                                                                                \
                                                                                                   \
  static vo_status vo_dcn_backward_##SUF(const vo_exec *ex) {                                      \
    const vo_deform_conv2d_params *p = &ex->p.deform_conv2d;                                       \
    const int64_t taps = p->kernel_h * p->kernel_w, cgk = p->in_channels / p->groups * taps;       \
    const int64_t coutg = p->out_channels / p->groups, plane = p->out_h * p->out_w;                \
    const int64_t per_og = p->in_channels / p->offset_groups;                                      \
    const int64_t hw = p->height * p->width, in_plane = p->in_channels * hw;                       \
    /* float32/64 accumulate grad_input in the output; half types in a float32 image. */           \
    const int direct = p->grad_input->dtype == VO_F32 || p->grad_input->dtype == VO_F64;           \
    const int64_t fixed = 2 * p->out_channels * cgk + p->out_channels + (direct ? 0 : in_plane);   \
    const int64_t per_col =                                                                        \
        2 * p->in_channels * taps + p->out_channels + vo_dcn_plan_units_##SUF(p);                  \
    const int64_t tile = vo_dcn_tile(ex, fixed, per_col, sizeof(T));                               \
    if (tile < 1) return vo_dcn_too_small(ex, fixed, per_col, sizeof(T));                          \
    T *ws = vo_workspace_alloc(ex->ctx, ex->device, (size_t)(fixed + per_col * tile) * sizeof(T),  \
                               ex->op_name);                                                       \
    if (!ws) return VO_ERROR_OUT_OF_MEMORY;                                                        \
    vo_dcn_plan_##SUF *plan = (vo_dcn_plan_##SUF *)(void *)ws;                                     \
    T *wt = ws + vo_dcn_plan_units_##SUF(p) * tile;                                                \
    T *gw = wt + p->out_channels * cgk, *gb = gw + p->out_channels * cgk;                          \
    T *acc = gb + p->out_channels, *gbuf = acc + (direct ? 0 : in_plane);                          \
    T *cols = gbuf + p->out_channels * tile, *dcol = cols + p->in_channels * taps * tile;          \
    vo_dcn_load_weight_##SUF(p, wt);                                                               \
    memset(gw, 0, sizeof(T) * (size_t)(p->out_channels * cgk + p->out_channels));                  \
    if (direct)                                                                                    \
      memset(vo_view_addr(p->grad_input), 0,                                                               \
             (size_t)p->grad_input->numel *vo_dtype_size(p->grad_input->dtype));                   \
    if (!p->mask)                                                                                  \
      memset(vo_view_addr(p->grad_mask), 0,                                                                \
             (size_t)p->grad_mask->numel *vo_dtype_size(p->grad_mask->dtype));                     \
    /* costs (ns) as in the forward; ~3 per input-gradient add, ~10 per                            \
     * (offset row, pixel, channel) of the offset gradient */                                      \
    const double rows_c = (double)(p->in_channels * taps),                                         \
                 rows_og = (double)(p->offset_groups * taps);                                      \
    const int nt_rows =                                                                            \
        vo_cpu_threads_for(ex->ctx, p->in_channels * taps, 4.0 * rows_c * (double)tile);           \
    const int nt_c = vo_cpu_threads_for(ex->ctx, p->in_channels, 3.0 * rows_c * (double)tile);     \
    const int nt_og =                                                                              \
        vo_cpu_threads_for(ex->ctx, p->offset_groups * taps, 10.0 * rows_c * (double)tile);        \
    vo_dcn_blas_serial();                                                                          \
    for (int64_t n = 0; n < p->batch; n++) {                                                       \
      T *gin = direct ? (T *)vo_view_addr(p->grad_input) + n * in_plane : acc;                             \
      if (!direct) memset(acc, 0, sizeof(T) * (size_t)in_plane);                                   \
      for (int64_t p0 = 0; p0 < plane; p0 += tile) {                                               \
        const int64_t len = plane - p0 < tile ? plane - p0 : tile;                                 \
        for (int64_t co = 0; co < p->out_channels; co++)                                           \
          for (int64_t l = 0; l < len; l++) {                                                      \
            const int64_t pix = p0 + l;                                                            \
            const T v = (T)vo_load_host(                                                           \
                p->grad, vo_dcn_at(p->grad, n, co, pix / p->out_w, pix % p->out_w));               \
            gbuf[co * len + l] = v;                                                                \
            gb[co] += v;                                                                           \
          }                                                                                        \
        vo_dcn_plan_build_##SUF(p, plan, n, p0, len,                                               \
                                vo_cpu_threads_for(ex->ctx, len, 10.0 * rows_og * (double)len));   \
        vo_dcn_im2col_##SUF(p, plan, cols, n, len, nt_rows);                                       \
        for (int64_t g = 0; g < p->groups; g++) {                                                  \
          vo_dcn_gemm_##SUF(                                                                       \
              vo_cpu_threads_for(ex->ctx, cgk / 16, 0.04 * (double)(coutg * len) * (double)cgk),   \
              CblasNoTrans, CblasTrans, coutg, cgk, len, gbuf + g * coutg * len, len,              \
              cols + g * cgk * len, len, 1, gw + g * coutg * cgk, cgk);                            \
          vo_dcn_gemm_##SUF(                                                                       \
              vo_cpu_threads_for(ex->ctx, len / 16, 0.04 * (double)(coutg * len) * (double)cgk),   \
              CblasTrans, CblasNoTrans, cgk, len, coutg, wt + g * coutg * cgk, cgk,                \
              gbuf + g * coutg * len, len, 0, dcol + g * cgk * len, len);                          \
        }                                                                                          \
        /* Offset and mask gradients: one (offset group, tap) row per thread. */                   \
        VO_DCN_OMP_FOR(nt_og)                                                                      \
        for (int64_t r = 0; r < p->offset_groups * taps; r++) {                                    \
          const int64_t g = r / taps, t = r % taps;                                                \
          for (int64_t l = 0; l < len; l++) {                                                      \
            const int64_t pix = p0 + l;                                                            \
            const vo_dcn_plan_##SUF *pl = &plan[r * len + l];                                      \
            const T y = pl->y, x = pl->x, m = pl->m;                                               \
            T goy = 0, gox = 0, gm = 0;                                                            \
            if (y > -1 && y < (T)p->height && x > -1 && x < (T)p->width) {                         \
              /* inside: the plan's corners serve every channel of the group */                    \
              const T ly = y - FLOOR(y), lx = x - FLOOR(x);                                        \
              for (int64_t c = g * per_og; c < (g + 1) * per_og; c++) {                            \
                const int64_t base = vo_dcn_at(p->input, n, c, 0, 0);                              \
                T v[4];                                                                            \
                for (int k = 0; k < 4; k++)                                                        \
                  v[k] = (pl->valid >> k & 1) ? (T)vo_load_host(p->input, base + pl->idx[k]) : 0;  \
                const T d = dcol[(c * taps + t) * len + l];                                        \
                const T wy = lx * (v[3] - v[1]) + (1 - lx) * (v[2] - v[0]);                        \
                const T wx = ly * (v[3] - v[2]) + (1 - ly) * (v[1] - v[0]);                        \
                goy += m * wy * d;                                                                 \
                gox += m * wx * d;                                                                 \
                if (p->mask)                                                                       \
                  gm +=                                                                            \
                      d * (pl->w[0] * v[0] + pl->w[1] * v[1] + pl->w[2] * v[2] + pl->w[3] * v[3]); \
              }                                                                                    \
            } else {                                                                               \
              /* on the edge of [-1, H] x [-1, W] torchvision's coordinate weight is still         \
               * nonzero (e.g. y = -1 exactly, zero offsets with padding 1); the sample is 0 */    \
              for (int64_t c = g * per_og; c < (g + 1) * per_og; c++) {                            \
                const int64_t base = vo_dcn_at(p->input, n, c, 0, 0);                              \
                const T d = dcol[(c * taps + t) * len + l];                                        \
                goy += m *                                                                         \
                       vo_dcn_coord_weight_##SUF(p->input, base, p->height, p->width, y, x, 1) *   \
                       d;                                                                          \
                gox += m *                                                                         \
                       vo_dcn_coord_weight_##SUF(p->input, base, p->height, p->width, y, x, 0) *   \
                       d;                                                                          \
              }                                                                                    \
            }                                                                                      \
            const int64_t o =                                                                      \
                (n * 2 * p->offset_groups * taps + g * 2 * taps + 2 * t) * plane + pix;            \
            vo_dcn_store(p->grad_offset, o, goy);                                                  \
            vo_dcn_store(p->grad_offset, o + plane, gox);                                          \
            if (p->mask)                                                                           \
              vo_dcn_store(p->grad_mask, (n * p->offset_groups * taps + r) * plane + pix, gm);     \
          }                                                                                        \
        }                                                                                          \
        /* Input gradient: a thread owns whole channel planes, so no two threads add to one        \
         * element and the sum order is fixed (taps, then pixels). */                              \
        VO_DCN_OMP_FOR(nt_c)                                                                       \
        for (int64_t c = 0; c < p->in_channels; c++) {                                             \
          T *dst = gin + c * hw;                                                                   \
          const int64_t w = p->width;                                                              \
          for (int64_t t = 0; t < taps; t++) {                                                     \
            const vo_dcn_plan_##SUF *row = plan + (c / per_og * taps + t) * len;                   \
            for (int64_t l = 0; l < len; l++) {                                                    \
              const vo_dcn_plan_##SUF *pl = &row[l];                                               \
              if (!pl->valid) continue;                                                            \
              const T d = pl->m * dcol[(c * taps + t) * len + l];                                  \
              const int64_t k = pl->cidx;                                                          \
              if (pl->valid & 1) dst[k] += pl->w[0] * d;                                           \
              if (pl->valid & 2) dst[k + 1] += pl->w[1] * d;                                       \
              if (pl->valid & 4) dst[k + w] += pl->w[2] * d;                                       \
              if (pl->valid & 8) dst[k + w + 1] += pl->w[3] * d;                                   \
            }                                                                                      \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
      if (!direct)                                                                                 \
        for (int64_t i = 0; i < in_plane; i++)                                                     \
          vo_dcn_store(p->grad_input, n *in_plane + i, acc[i]);                                    \
    }                                                                                              \
    for (int64_t i = 0; i < p->out_channels * cgk; i++) vo_dcn_store(p->grad_weight, i, gw[i]);    \
    for (int64_t i = 0; i < p->out_channels; i++) vo_dcn_store(p->grad_bias, i, gb[i]);            \
    vo_dcn_blas_restore();                                                                         \
    vo_workspace_free(ex->ctx, ex->device, ws);                                                    \
    return VO_OK;                                                                                  \
  }

VO_DEFINE_DCN(float, f32, VO_F32, VO_CPU_SGEMM, floorf)
VO_DEFINE_DCN(double, f64, VO_F64, VO_CPU_DGEMM, floor)

vo_status vo_cpu_deform_conv2d(const vo_exec *ex) {
  return ex->dtype == VO_F64 ? vo_dcn_forward_f64(ex) : vo_dcn_forward_f32(ex);
}

vo_status vo_cpu_deform_conv2d_backward(const vo_exec *ex) {
  return ex->dtype == VO_F64 ? vo_dcn_backward_f64(ex) : vo_dcn_backward_f32(ex);
}
