/*
 * CPU kernels for deform_attn and _deform_attn_backward over the work items
 * of kernels/deform_attn.h. Forward: OpenMP over the N*Q*M heads, each
 * item accumulating its D channels (vo_k_da_forward_head). Backward: OpenMP
 * over the N*M*L (image, head, level) slices of grad_value: a slice is
 * written only by the samples of its (n, m, l), so its thread zeroes it,
 * adds every such sample's corners in (q, p) order (vo_k_da_level_scatter)
 * and then computes those samples' location and attention-weight
 * gradients (vo_k_da_sample_grads, one owner each). No atomics, and the
 * results are bit-identical for any thread count. Half types scatter into
 * a float32 scratch of one level per thread, rounded once at the end.
 */
#include <string.h>

#include "cpu/common.h"
#include "kernels/deform_attn.h"

#ifdef VISIONOPS_HAVE_OPENMP
#include <omp.h>
#define VO_DA_PRAGMA(x) _Pragma(#x)
#define VO_DA_OMP_FOR(t) \
  VO_DA_PRAGMA(omp parallel for num_threads(t) schedule(dynamic, 1) if ((t) > 1))
#define VO_DA_THREAD() omp_get_thread_num()
#else
#define VO_DA_OMP_FOR(t) (void)(t);
#define VO_DA_THREAD() 0
#endif

/* One-thread cost estimates in nanoseconds (per sample and channel: a
 * bilinear read of four corners; the backward about three times that). */
#define VO_DA_FORWARD_NS 1.5
#define VO_DA_BACKWARD_NS 4.0

/* The kernel's sizes and strides from the call's views. */
static vo_k_deform_attn_args vo_da_args(const vo_exec *ex, int backward) {
  const vo_view *v = &ex->inputs[0], *sh = &ex->inputs[1], *st = &ex->inputs[2];
  const vo_view *loc = &ex->inputs[3], *attn = &ex->inputs[4];
  vo_k_deform_attn_args a;
  memset(&a, 0, sizeof a);
  a.batch = v->shape[0];
  a.keys = v->shape[1];
  a.heads = v->shape[2];
  a.channels = v->shape[3];
  a.queries = loc->shape[1];
  a.levels = loc->shape[3];
  a.points = loc->shape[4];
  memcpy(a.value_stride, v->stride, sizeof a.value_stride);
  memcpy(a.shapes_stride, sh->stride, sizeof a.shapes_stride);
  a.starts_stride = st->stride[0];
  memcpy(a.loc_stride, loc->stride, sizeof a.loc_stride);
  memcpy(a.attn_stride, attn->stride, sizeof a.attn_stride);
  if (backward) memcpy(a.grad_stride, ex->inputs[5].stride, sizeof a.grad_stride);
  return a;
}

/* Per storage dtype S (compute type T): the forward over heads [0, heads)
 * and the backward task of slice (n, m, l). `scratch` (half types only) is
 * the thread's float32 buffer of one level's keys x D. */
#define VO_DA_CPU(SFX, S, T, TSFX, HALF, STORE)                                                  \
  static void vo_da_forward_##SFX(const vo_k_deform_attn_args *a, const vo_exec *ex, int t) {   \
    const S *value = vo_view_addr(&ex->inputs[0]), *loc = vo_view_addr(&ex->inputs[3]);         \
    const S *attn = vo_view_addr(&ex->inputs[4]);                                                \
    const int64_t *shapes = vo_view_addr(&ex->inputs[1]), *starts = vo_view_addr(&ex->inputs[2]); \
    S *out = vo_view_addr(&ex->outputs[0]);                                                      \
    const int64_t heads = a->batch * a->queries * a->heads;                                      \
    VO_DA_OMP_FOR(t)                                                                             \
    for (int64_t h = 0; h < heads; h++)                                                          \
      vo_k_da_forward_head_##SFX(a, value, shapes, starts, loc, attn, out, h / a->heads /        \
                                 a->queries, h / a->heads % a->queries, h % a->heads);           \
  }                                                                                              \
  static void vo_da_backward_task_##SFX(const vo_k_deform_attn_args *a, const vo_exec *ex,       \
                                        int64_t task, T *scratch) {                              \
    const S *value = vo_view_addr(&ex->inputs[0]), *loc = vo_view_addr(&ex->inputs[3]);         \
    const S *attn = vo_view_addr(&ex->inputs[4]), *grad = vo_view_addr(&ex->inputs[5]);         \
    const int64_t *shapes = vo_view_addr(&ex->inputs[1]), *starts = vo_view_addr(&ex->inputs[2]); \
    S *grad_value = vo_view_addr(&ex->outputs[0]), *grad_loc = vo_view_addr(&ex->outputs[1]);    \
    S *grad_attn = vo_view_addr(&ex->outputs[2]);                                                \
    const int64_t L = a->levels, M = a->heads, D = a->channels, P = a->points;                   \
    const int64_t l = task % L, m = task / L % M, n = task / L / M;                              \
    int64_t h, w, start;                                                                         \
    vo_k_da_level(a, shapes, starts, l, &h, &w, &start);                                         \
    const int64_t count = h * w, kstride = M * D;                                                \
    S *gslice = grad_value + (n * a->keys * M + m) * D;                                          \
    if (HALF) {                                                                                  \
      memset(scratch, 0, sizeof(T) * (size_t)(count * D));                                       \
      vo_k_da_level_scatter_##SFX(a, shapes, starts, loc, attn, grad, n, m, l, 0, D, scratch, D, \
                                  start);                                                        \
      for (int64_t k = 0; k < count; k++)                                                        \
        for (int64_t d = 0; d < D; d++) STORE(gslice, (start + k) * kstride + d,                 \
                                             scratch[k * D + d]);                                \
    } else {                                                                                     \
      T *g = (T *)(void *)gslice;                                                                \
      for (int64_t k = start; k < start + count; k++) memset(g + k * kstride, 0, sizeof(T) * D); \
      vo_k_da_level_scatter_##SFX(a, shapes, starts, loc, attn, grad, n, m, l, 0, D, g, kstride, \
                                  0);                                                            \
    }                                                                                            \
    const S *vhead = vo_k_da_head_##SFX(a, value, n, m);                                         \
    for (int64_t q = 0; q < a->queries; q++) {                                                   \
      const int64_t gbase = vo_k_da_grad_offset(a, n, q, m, 0);                                  \
      for (int64_t p = 0; p < P; p++) {                                                          \
        vo_k_da_sample_##TSFX s;                                                                 \
        T weight, gl[2], ga;                                                                     \
        vo_k_da_sample_of_##SFX(a, shapes, starts, loc, attn, n, q, m, l, p, &s, &weight);       \
        vo_k_da_sample_grads_##SFX(a, vhead, grad, gbase, &s, weight, gl, &ga);                  \
        const int64_t i = (((n * a->queries + q) * M + m) * L + l) * P + p;                      \
        STORE(grad_loc, 2 * i, gl[0]);                                                           \
        STORE(grad_loc, 2 * i + 1, gl[1]);                                                       \
        STORE(grad_attn, i, ga);                                                                 \
      }                                                                                          \
    }                                                                                            \
  }

#define VO_DA_STORE_PLAIN(p, i, v) ((p)[i] = (v))
#define VO_DA_STORE_F16(p, i, v) ((p)[i] = vo_f32_to_f16(v))
#define VO_DA_STORE_BF16(p, i, v) ((p)[i] = vo_f32_to_bf16(v))
VO_DA_CPU(f32, float, float, f32, 0, VO_DA_STORE_PLAIN)
VO_DA_CPU(f64, double, double, f64, 0, VO_DA_STORE_PLAIN)
VO_DA_CPU(f16, uint16_t, float, f32, 1, VO_DA_STORE_F16)
VO_DA_CPU(bf16, uint16_t, float, f32, 1, VO_DA_STORE_BF16)

vo_status vo_cpu_deform_attn(const vo_exec *ex) {
  if (ex->outputs[0].numel == 0) return VO_OK;
  const vo_k_deform_attn_args a = vo_da_args(ex, 0);
  const int64_t heads = a.batch * a.queries * a.heads;
  const double cost = VO_DA_FORWARD_NS * (double)heads * (double)(a.levels * a.points) *
                      (double)a.channels;
  const int t = vo_cpu_threads_for(ex->ctx, heads, cost);
  switch (ex->inputs[0].dtype) {
    case VO_F64: vo_da_forward_f64(&a, ex, t); break;
    case VO_F16: vo_da_forward_f16(&a, ex, t); break;
    case VO_BF16: vo_da_forward_bf16(&a, ex, t); break;
    default: vo_da_forward_f32(&a, ex, t); break;
  }
  return VO_OK;
}

/* Keys of the largest level (the half types' scratch per thread). */
static int64_t vo_da_largest_level(const vo_exec *ex, const vo_k_deform_attn_args *a) {
  const int64_t *shapes = vo_view_addr(&ex->inputs[1]);
  int64_t most = 0;
  for (int64_t l = 0; l < a->levels; l++) {
    const int64_t k = shapes[l * a->shapes_stride[0]] * shapes[l * a->shapes_stride[0] +
                                                               a->shapes_stride[1]];
    most = k > most ? k : most;
  }
  return most;
}

vo_status vo_cpu_deform_attn_backward(const vo_exec *ex) {
  const vo_k_deform_attn_args a = vo_da_args(ex, 1);
  const vo_dtype dt = ex->inputs[0].dtype;
  const int half = dt == VO_F16 || dt == VO_BF16;
  const int64_t tasks = a.batch * a.heads * a.levels;
  /* every sample belongs to one task; without tasks (no levels, no heads
   * or images) there is nothing but zeros to write */
  if (tasks == 0) {
    for (int k = 0; k < 3; k++)
      if (ex->outputs[k].numel)
        memset(vo_view_addr(&ex->outputs[k]), 0,
               (size_t)ex->outputs[k].numel * vo_dtype_size(ex->outputs[k].dtype));
    return VO_OK;
  }
  const double cost = VO_DA_BACKWARD_NS * (double)(a.batch * a.queries * a.heads) *
                      (double)(a.levels * a.points) * (double)a.channels;
  int t = vo_cpu_threads_for(ex->ctx, tasks, cost);
  float *scratch = NULL;
  size_t per_thread = 0;
  if (half) {
    per_thread = (size_t)(vo_da_largest_level(ex, &a) * a.channels) * sizeof(float);
    if (per_thread > ex->ctx->workspace_limit)
      return vo_fail(VO_ERROR_OUT_OF_MEMORY,
                     "%s: workspace limit %zu bytes is below the %zu bytes of float32 gradient "
                     "one level of value needs",
                     ex->op_name, ex->ctx->workspace_limit, per_thread);
    if (per_thread && (size_t)t > ex->ctx->workspace_limit / per_thread)
      t = (int)(ex->ctx->workspace_limit / per_thread);
    if (per_thread) {
      scratch = vo_workspace_alloc(ex->ctx, ex->device, per_thread * (size_t)t, ex->op_name);
      if (!scratch) return VO_ERROR_OUT_OF_MEMORY;
    }
  }
  const size_t stride = per_thread / sizeof(float);
  VO_DA_OMP_FOR(t)
  for (int64_t task = 0; task < tasks; task++) {
    float *mine = scratch ? scratch + stride * (size_t)VO_DA_THREAD() : NULL;
    switch (dt) {
      case VO_F64: vo_da_backward_task_f64(&a, ex, task, NULL); break;
      case VO_F16: vo_da_backward_task_f16(&a, ex, task, mine); break;
      case VO_BF16: vo_da_backward_task_bf16(&a, ex, task, mine); break;
      default: vo_da_backward_task_f32(&a, ex, task, NULL); break;
    }
  }
  if (scratch) vo_workspace_free(ex->ctx, ex->device, scratch);
  return VO_OK;
}
