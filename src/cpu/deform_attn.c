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
 *
 * The fast path (float32 and float64 with value's channels contiguous, and
 * grad_output's in the backward; not under VO_ISA_SCALAR) runs the same
 * arithmetic per channel with the channel loops vectorised (AVX2 where the
 * CPU has it): a corner off the level reads a row of zeros, exactly the 0
 * the plain path reads, and the channel sums of the sample gradients keep
 * the portable VO_K_DA_LANES-lane order, 8 channels a step. test_backend_ops
 * checks it bit for bit against the plain path.
 */
#include <string.h>

#include "cpu/common.h"
#include "kernels/deform_attn.h"

/* One-thread cost estimates in nanoseconds (per sample and channel: a
 * bilinear read of four corners; the backward about three times that). */
#define VO_DA_FORWARD_NS 1.5
#define VO_DA_BACKWARD_NS 4.0

/* The kernel's sizes and strides from the call's views. */
static vo_k_deform_attn_args vo_da_args(const vo_exec *ex, int backward) {
  const vo_view *in = ex->inputs;
  return vo_k_da_args_of(in[0].shape, in[0].stride, in[1].stride, in[2].stride[0], in[3].shape,
                         in[3].stride, in[4].stride, backward ? in[5].stride : NULL);
}

/* Per storage dtype S (compute type T): the forward over heads [0, heads)
 * and the backward task of slice (n, m, l). `scratch` (half types only) is
 * the thread's float32 buffer of one level's keys x D. */
#define VO_DA_CPU(SFX, S, T, TSFX, HALF, STORE)                                                   \
  static void vo_da_forward_##SFX(const vo_k_deform_attn_args *a, const vo_exec *ex, int t) {     \
    const S *value = vo_view_addr(&ex->inputs[0]), *loc = vo_view_addr(&ex->inputs[3]);           \
    const S *attn = vo_view_addr(&ex->inputs[4]);                                                 \
    const int64_t *shapes = vo_view_addr(&ex->inputs[1]), *starts = vo_view_addr(&ex->inputs[2]); \
    S *out = vo_view_addr(&ex->outputs[0]);                                                       \
    const int64_t heads = a->batch * a->queries * a->heads;                                       \
    VO_CPU_FOR_DYNAMIC(t, h, 0, heads, {                                                          \
      vo_k_da_forward_head_##SFX(a, value, shapes, starts, loc, attn, out,                        \
                                 h / a->heads / a->queries, h / a->heads % a->queries,            \
                                 h % a->heads);                                                   \
    });                                                                                           \
  }                                                                                               \
  static void vo_da_backward_task_##SFX(const vo_k_deform_attn_args *a, const vo_exec *ex,        \
                                        int64_t task, T *scratch) {                               \
    const S *value = vo_view_addr(&ex->inputs[0]), *loc = vo_view_addr(&ex->inputs[3]);           \
    const S *attn = vo_view_addr(&ex->inputs[4]), *grad = vo_view_addr(&ex->inputs[5]);           \
    const int64_t *shapes = vo_view_addr(&ex->inputs[1]), *starts = vo_view_addr(&ex->inputs[2]); \
    S *grad_value = vo_view_addr(&ex->outputs[0]), *grad_loc = vo_view_addr(&ex->outputs[1]);     \
    S *grad_attn = vo_view_addr(&ex->outputs[2]);                                                 \
    const int64_t L = a->levels, M = a->heads, D = a->channels, P = a->points;                    \
    const int64_t l = task % L, m = task / L % M, n = task / L / M;                               \
    int64_t h, w, start;                                                                          \
    vo_k_da_level(a, shapes, starts, l, &h, &w, &start);                                          \
    const int64_t count = h * w, kstride = M * D;                                                 \
    /* no keys in the level or no channels: nothing of grad_value to write */                     \
    S *gslice = count * D > 0 ? grad_value + (n * a->keys * M + m) * D : NULL;                    \
    if (gslice && HALF) {                                                                         \
      memset(scratch, 0, sizeof(T) * (size_t)(count * D));                                        \
      vo_k_da_level_scatter_##SFX(a, shapes, starts, loc, attn, grad, n, m, l, 0, D, scratch, D,  \
                                  start);                                                         \
      for (int64_t k = 0; k < count; k++)                                                         \
        for (int64_t d = 0; d < D; d++)                                                           \
          STORE(gslice, (start + k) * kstride + d, scratch[k * D + d]);                           \
    } else if (gslice) {                                                                          \
      T *g = (T *)(void *)gslice;                                                                 \
      for (int64_t k = start; k < start + count; k++) memset(g + k * kstride, 0, sizeof(T) * D);  \
      vo_k_da_level_scatter_##SFX(a, shapes, starts, loc, attn, grad, n, m, l, 0, D, g, kstride,  \
                                  0);                                                             \
    }                                                                                             \
    const S *vhead = vo_k_da_head_##SFX(a, value, n, m);                                          \
    for (int64_t q = 0; q < a->queries; q++) {                                                    \
      const int64_t gbase = vo_k_da_grad_offset(a, n, q, m, 0);                                   \
      for (int64_t p = 0; p < P; p++) {                                                           \
        vo_k_da_sample_##TSFX s;                                                                  \
        T weight, gl[2], ga;                                                                      \
        vo_k_da_sample_of_##SFX(a, shapes, starts, loc, attn, n, q, m, l, p, &s, &weight);        \
        vo_k_da_sample_grads_##SFX(a, vhead, grad, gbase, &s, weight, gl, &ga);                   \
        const int64_t i = (((n * a->queries + q) * M + m) * L + l) * P + p;                       \
        STORE(grad_loc, 2 * i, gl[0]);                                                            \
        STORE(grad_loc, 2 * i + 1, gl[1]);                                                        \
        STORE(grad_attn, i, ga);                                                                  \
      }                                                                                           \
    }                                                                                             \
  }

#define VO_DA_STORE_PLAIN(p, i, v) ((p)[i] = (v))
#define VO_DA_STORE_F16(p, i, v) ((p)[i] = vo_f32_to_f16(v))
#define VO_DA_STORE_BF16(p, i, v) ((p)[i] = vo_f32_to_bf16(v))
VO_DA_CPU(f32, float, float, f32, 0, VO_DA_STORE_PLAIN)
VO_DA_CPU(f64, double, double, f64, 0, VO_DA_STORE_PLAIN)
VO_DA_CPU(f16, uint16_t, float, f32, 1, VO_DA_STORE_F16)
VO_DA_CPU(bf16, uint16_t, float, f32, 1, VO_DA_STORE_BF16)

/* ------------------------------------------------------------ fast path */

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define VO_DA_HAVE_AVX2 1
#define VO_DA_AVX2_ATTR __attribute__((target("avx2,fma")))
#endif

_Static_assert(VO_K_DA_LANES == 8, "the fast path sums 8 channel lanes a step");

/* Per compute type T (float, double) and ISA: the forward of one head and
 * the backward task of one (n, m, l) slice, with value's rows (and
 * grad_output's) contiguous in channels. zeros holds D zeros. */
/* Samples located ahead of their arithmetic, so that the rows their corners
 * read (and, backward, write) are fetched from memory in parallel: value
 * is usually far larger than the caches and the corners are scattered. */
#define VO_DA_AHEAD 16
/* Queries ahead whose per-query rows (locations, weights, grad_output and
 * the location and weight gradients) the backward asks for. */
#define VO_DA_QUERIES_AHEAD 4

/* Asks for the cache lines of `bytes` bytes at p. */
static inline void vo_da_prefetch(const void *p, size_t bytes, int write) {
  const char *c = (const char *)p;
  for (size_t o = 0; o < bytes; o += 64) {
    if (write)
      __builtin_prefetch(c + o, 1);
    else
      __builtin_prefetch(c + o, 0);
  }
}

/* Channel d's terms of a sample's gradients into lane e (the portable
 * vo_k_da_sample_grads' arithmetic; names from the fast backward). */
#define VO_DA_LANE_STEP(T, dd, e)                               \
  do {                                                          \
    const int64_t d_ = (dd);                                    \
    const T gd = gr[d_];                                        \
    const T v1 = c1[d_], v2 = c2[d_], v3 = c3[d_], v4 = c4[d_]; \
    const T gh = hw * (v3 - v1) + lw * (v4 - v2);               \
    const T gw = hh * (v2 - v1) + lh * (v4 - v3);               \
    sa[e] += gd * (w1 * v1 + w2 * v2 + w3 * v3 + w4 * v4);      \
    sx[e] += gd * gw;                                           \
    sy[e] += gd * gh;                                           \
  } while (0)

#define VO_DA_FAST(T, TSFX, NAME, ATTR)                                                            \
  ATTR static void vo_da_fast_forward_##NAME(const vo_k_deform_attn_args *a, const T *value,       \
                                             const int64_t *shapes, const int64_t *starts,         \
                                             const T *loc, const T *attn, T *out, int64_t h0,      \
                                             int64_t h1, const T *zeros) {                         \
    const int64_t D = a->channels, M = a->heads, Q = a->queries, P = a->points;                    \
    const int64_t LP = a->levels * P, vs = a->value_stride[1];                                     \
    const size_t row = sizeof(T) * (size_t)D;                                                      \
    for (int64_t hd = h0; hd < h1; hd++) {                                                         \
      const int64_t m = hd % M, q = hd / M % Q, n = hd / M / Q;                                    \
      const T *vhead = vo_k_da_head_##TSFX(a, value, n, m);                                        \
      T *restrict o = out + hd * D;                                                                \
      for (int64_t d = 0; d < D; d++) o[d] = (T)0;                                                 \
      int64_t l = 0, p = 0; /* the next sample's level and point */                                \
      for (int64_t b0 = 0; b0 < LP; b0 += VO_DA_AHEAD) {                                           \
        const int nb = LP - b0 < VO_DA_AHEAD ? (int)(LP - b0) : VO_DA_AHEAD;                       \
        vo_k_da_sample_##TSFX smp[VO_DA_AHEAD];                                                    \
        T wts[VO_DA_AHEAD];                                                                        \
        for (int j = 0; j < nb; j++) {                                                             \
          vo_k_da_sample_of_##TSFX(a, shapes, starts, loc, attn, n, q, m, l, p, &smp[j], &wts[j]); \
          if (++p == P) p = 0, l++;                                                                \
          for (int k = 0; k < 4; k++)                                                              \
            if (smp[j].valid >> k & 1) vo_da_prefetch(vhead + smp[j].key[k] * vs, row, 0);         \
        }                                                                                          \
        for (int j = 0; j < nb; j++) {                                                             \
          const vo_k_da_sample_##TSFX *sp = &smp[j];                                               \
          if (!sp->inside) continue;                                                               \
          const T wt = wts[j];                                                                     \
          const T w1 = sp->hh * sp->hw, w2 = sp->hh * sp->lw, w3 = sp->lh * sp->hw,                \
                  w4 = sp->lh * sp->lw;                                                            \
          const T *restrict c1 = sp->valid & 1 ? vhead + sp->key[0] * vs : zeros;                  \
          const T *restrict c2 = sp->valid & 2 ? vhead + sp->key[1] * vs : zeros;                  \
          const T *restrict c3 = sp->valid & 4 ? vhead + sp->key[2] * vs : zeros;                  \
          const T *restrict c4 = sp->valid & 8 ? vhead + sp->key[3] * vs : zeros;                  \
          for (int64_t d = 0; d < D; d++)                                                          \
            o[d] += (w1 * c1[d] + w2 * c2[d] + w3 * c3[d] + w4 * c4[d]) * wt;                      \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  ATTR static void vo_da_fast_backward_##NAME(const vo_k_deform_attn_args *a, const vo_exec *ex,   \
                                              int64_t task, int64_t groups, const T *zeros) {      \
    const T *value = vo_view_addr(&ex->inputs[0]), *loc = vo_view_addr(&ex->inputs[3]);            \
    const T *attn = vo_view_addr(&ex->inputs[4]), *grad = vo_view_addr(&ex->inputs[5]);            \
    const int64_t *shapes = vo_view_addr(&ex->inputs[1]), *starts = vo_view_addr(&ex->inputs[2]);  \
    T *grad_loc = vo_view_addr(&ex->outputs[1]), *grad_attn = vo_view_addr(&ex->outputs[2]);       \
    const int64_t L = a->levels, M = a->heads, D = a->channels, P = a->points;                     \
    /* levels [l0, l1) of head m of image n: all of them, or one */                                \
    const int64_t g = task % groups, m = task / groups % M, n = task / groups / M;                 \
    const int64_t l0 = groups == 1 ? 0 : g, LG = groups == 1 ? L : 1;                              \
    const int64_t kstride = M * D, vs = a->value_stride[1];                                        \
    T *gslice = ex->outputs[0].numel                                                               \
                    ? (T *)vo_view_addr(&ex->outputs[0]) + (n * a->keys * M + m) * D               \
                    : NULL; /* NULL: no keys or no channels, nothing to add */                     \
    /* grad_value is zeroed (vo_da_zero) before the tasks run */                                   \
    const T *vhead = vo_k_da_head_##TSFX(a, value, n, m);                                          \
    const size_t row = sizeof(T) * (size_t)D;                                                      \
    /* samples in (q, l, p) order: each grad_value element still receives                          \
     * its (q, p) contributions in the plain path's order */                                       \
    const int64_t QP = a->queries * LG * P;                                                        \
    /* a ring of the next VO_DA_AHEAD samples, located (and their rows asked                       \
     * for) that many samples before their arithmetic */                                           \
    vo_k_da_sample_##TSFX smp[VO_DA_AHEAD];                                                        \
    T wts[VO_DA_AHEAD];                                                                            \
    int64_t sq[VO_DA_AHEAD], sl[VO_DA_AHEAD], spt[VO_DA_AHEAD];                                    \
    int64_t nq = 0, nl = l0, np = 0; /* the next sample to locate */                               \
    for (int64_t idx = -VO_DA_AHEAD; idx < QP; idx++) {                                            \
      const int r = (int)((idx + VO_DA_AHEAD) % VO_DA_AHEAD);                                      \
      if (idx >= 0) { /* sample idx, located VO_DA_AHEAD steps ago in slot r */                    \
        const int64_t q = sq[r], l = sl[r], p = spt[r];                                            \
        const T *restrict gr = grad + vo_k_da_grad_offset(a, n, q, m, 0);                          \
        const vo_k_da_sample_##TSFX *sp = &smp[r];                                                 \
        const T wt = wts[r];                                                                       \
        const int64_t i = (((n * a->queries + q) * M + m) * L + l) * P + p;                        \
        if (!sp->inside) {                                                                         \
          grad_loc[2 * i] = grad_loc[2 * i + 1] = grad_attn[i] = (T)0;                             \
        } else {                                                                                   \
          const T hh = sp->hh, hw = sp->hw, lh = sp->lh, lw = sp->lw, fh = sp->fh, fw = sp->fw;    \
          const T w1 = hh * hw, w2 = hh * lw, w3 = lh * hw, w4 = lh * lw;                          \
          const T wk[4] = {w1, w2, w3, w4};                                                        \
          for (int k = 0; k < 4; k++) {                                                            \
            if (!gslice || !(sp->valid >> k & 1)) continue;                                        \
            T *restrict dst = gslice + sp->key[k] * kstride;                                       \
            const T wgt = wk[k];                                                                   \
            for (int64_t d = 0; d < D; d++) dst[d] += wgt * (gr[d] * wt);                          \
          }                                                                                        \
          const T *restrict c1 = sp->valid & 1 ? vhead + sp->key[0] * vs : zeros;                  \
          const T *restrict c2 = sp->valid & 2 ? vhead + sp->key[1] * vs : zeros;                  \
          const T *restrict c3 = sp->valid & 4 ? vhead + sp->key[2] * vs : zeros;                  \
          const T *restrict c4 = sp->valid & 8 ? vhead + sp->key[3] * vs : zeros;                  \
          T sx[8] = {0}, sy[8] = {0}, sa[8] = {0};                                                 \
          const int64_t full = D - D % 8;                                                          \
          for (int64_t d0 = 0; d0 < full; d0 += 8) /* 8 lanes: one or two SIMD registers */        \
            for (int e = 0; e < 8; e++) VO_DA_LANE_STEP(T, d0 + e, e);                             \
          for (int e = 0; e < (int)(D - full); e++) VO_DA_LANE_STEP(T, full + e, e);               \
          grad_loc[2 * i] = fw * wt * vo_k_da_lane_total_##TSFX(sx);                               \
          grad_loc[2 * i + 1] = fh * wt * vo_k_da_lane_total_##TSFX(sy);                           \
          grad_attn[i] = vo_k_da_lane_total_##TSFX(sa);                                            \
        }                                                                                          \
      }                                                                                            \
      if (idx + VO_DA_AHEAD >= QP) continue;                                                       \
      /* locate sample idx + VO_DA_AHEAD into slot r */                                            \
      if (nl == l0 && np == 0 && nq + VO_DA_QUERIES_AHEAD < a->queries) {                          \
        /* the rows of a query further ahead, which sit 1 KB and more apart */                     \
        const int64_t qa = nq + VO_DA_QUERIES_AHEAD;                                               \
        const int64_t ia = (((n * a->queries + qa) * M + m) * L + l0) * P;                         \
        vo_da_prefetch(loc + vo_k_da_loc_offset(a, n, qa, m, l0, 0), sizeof(T) * 2 * LG * P, 0);   \
        vo_da_prefetch(attn + vo_k_da_attn_offset(a, n, qa, m, l0, 0), sizeof(T) * LG * P, 0);     \
        vo_da_prefetch(grad + vo_k_da_grad_offset(a, n, qa, m, 0), row, 0);                        \
        vo_da_prefetch(grad_loc + 2 * ia, sizeof(T) * 2 * LG * P, 1);                              \
        vo_da_prefetch(grad_attn + ia, sizeof(T) * LG * P, 1);                                     \
      }                                                                                            \
      sq[r] = nq, sl[r] = nl, spt[r] = np;                                                         \
      if (++np == P && (np = 0, ++nl == l0 + LG)) nl = l0, nq++;                                   \
      vo_k_da_sample_of_##TSFX(a, shapes, starts, loc, attn, n, sq[r], m, sl[r], spt[r], &smp[r],  \
                               &wts[r]);                                                           \
      for (int k = 0; k < 4; k++)                                                                  \
        if (smp[r].valid >> k & 1) {                                                               \
          vo_da_prefetch(vhead + smp[r].key[k] * vs, row, 0);                                      \
          if (gslice) vo_da_prefetch(gslice + smp[r].key[k] * kstride, row, 1);                    \
        }                                                                                          \
    }                                                                                              \
  }

VO_DA_FAST(float, f32, f32, )
VO_DA_FAST(double, f64, f64, )
#ifdef VO_DA_HAVE_AVX2
VO_DA_FAST(float, f32, f32_avx2, VO_DA_AVX2_ATTR)
VO_DA_FAST(double, f64, f64_avx2, VO_DA_AVX2_ATTR)
#endif

/* Zeroes a contiguous output in one contiguous range per thread. The fast
 * backward's tasks, each one head's rows (128 bytes in every 1 KB of a
 * Deformable-DETR grad_value), would otherwise zero interleaved lines from
 * two threads at once: measured 2.5x slower at 2 threads than at 1 on the
 * decoder case, where zeroing is most of the work. */
static void vo_da_zero(const vo_view *v, int t) {
  char *base = vo_view_addr(v);
  const size_t bytes = (size_t)v->numel * vo_dtype_size(v->dtype), step = (size_t)1 << 20;
  const int64_t chunks = (int64_t)((bytes + step - 1) / step);
  VO_CPU_FOR(chunks > 1 ? t : 1, c, 0, chunks, {
    const size_t at = (size_t)c * step;
    memset(base + at, 0, bytes - at < step ? bytes - at : step);
  });
}

/* The fast forward of heads [h0, h1) and the fast backward task `task`, in
 * the call's dtype (f64 or f32) and ISA. */
static void vo_da_fast_forward_heads(int avx2, int f64, const vo_k_deform_attn_args *a,
                                     const void *value, const int64_t *shapes,
                                     const int64_t *starts, const void *loc, const void *attn,
                                     void *out, int64_t h0, int64_t h1, const void *zeros) {
  (void)avx2;
#ifdef VO_DA_HAVE_AVX2
  if (avx2 && f64)
    vo_da_fast_forward_f64_avx2(a, value, shapes, starts, loc, attn, out, h0, h1, zeros);
  else if (avx2)
    vo_da_fast_forward_f32_avx2(a, value, shapes, starts, loc, attn, out, h0, h1, zeros);
  else
#endif
      if (f64)
    vo_da_fast_forward_f64(a, value, shapes, starts, loc, attn, out, h0, h1, zeros);
  else
    vo_da_fast_forward_f32(a, value, shapes, starts, loc, attn, out, h0, h1, zeros);
}

static void vo_da_fast_backward_at(int avx2, int f64, const vo_k_deform_attn_args *a,
                                   const vo_exec *ex, int64_t task, int64_t groups,
                                   const void *zeros) {
  (void)avx2;
#ifdef VO_DA_HAVE_AVX2
  if (avx2 && f64)
    vo_da_fast_backward_f64_avx2(a, ex, task, groups, zeros);
  else if (avx2)
    vo_da_fast_backward_f32_avx2(a, ex, task, groups, zeros);
  else
#endif
      if (f64)
    vo_da_fast_backward_f64(a, ex, task, groups, zeros);
  else
    vo_da_fast_backward_f32(a, ex, task, groups, zeros);
}

/* Whether the call takes the fast path, and its ISA. */
static int vo_da_fast(const vo_exec *ex, const vo_k_deform_attn_args *a, int backward, int *avx2) {
  const vo_isa isa = vo_cpu_effective_isa(ex->ctx);
  const vo_dtype dt = ex->inputs[0].dtype;
  *avx2 = 0;
#ifdef VO_DA_HAVE_AVX2
  *avx2 = isa >= VO_ISA_AVX2;
#endif
  return isa != VO_ISA_SCALAR && (dt == VO_F32 || dt == VO_F64) && a->value_stride[3] == 1 &&
         (!backward || a->grad_stride[2] == 1);
}

vo_status vo_cpu_deform_attn(const vo_exec *ex) {
  if (ex->outputs[0].numel == 0) return VO_OK;
  const vo_k_deform_attn_args a = vo_da_args(ex, 0);
  const int64_t heads = a.batch * a.queries * a.heads;
  const double cost =
      VO_DA_FORWARD_NS * (double)heads * (double)(a.levels * a.points) * (double)a.channels;
  const int t = vo_cpu_threads_for(ex->ctx, heads, cost);
  int avx2;
  if (vo_da_fast(ex, &a, 0, &avx2)) {
    const int f64 = ex->inputs[0].dtype == VO_F64;
    void *zeros =
        vo_workspace_alloc(ex->ctx, ex->device, (size_t)(a.channels + 1) * 8, ex->op_name);
    if (!zeros) return VO_ERROR_OUT_OF_MEMORY;
    memset(zeros, 0, (size_t)(a.channels + 1) * 8);
    const void *value = vo_view_addr(&ex->inputs[0]), *loc = vo_view_addr(&ex->inputs[3]);
    const void *attn = vo_view_addr(&ex->inputs[4]);
    const int64_t *shapes = vo_view_addr(&ex->inputs[1]), *starts = vo_view_addr(&ex->inputs[2]);
    void *out = vo_view_addr(&ex->outputs[0]);
    const int64_t block = 16, blocks = (heads + block - 1) / block;
    VO_CPU_FOR_DYNAMIC(t, b, 0, blocks, {
      const int64_t h0 = b * block, h1 = h0 + block < heads ? h0 + block : heads;
      vo_da_fast_forward_heads(avx2, f64, &a, value, shapes, starts, loc, attn, out, h0, h1, zeros);
    });
    vo_workspace_free(ex->ctx, ex->device, zeros);
    return VO_OK;
  }
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
    const int64_t k =
        shapes[l * a->shapes_stride[0]] * shapes[l * a->shapes_stride[0] + a->shapes_stride[1]];
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
  int avx2;
  if (vo_da_fast(ex, &a, 1, &avx2)) {
    const int f64 = dt == VO_F64;
    /* a task per (image, head) reads each query's locations, weights and
     * gradient once; per (image, head, level) where that would leave
     * threads without enough tasks (the results are the same) */
    const int64_t groups = a.batch * a.heads >= 4 * (int64_t)t ? 1 : a.levels;
    const int64_t fast_tasks = a.batch * a.heads * groups;
    void *zeros =
        vo_workspace_alloc(ex->ctx, ex->device, (size_t)(a.channels + 1) * 8, ex->op_name);
    if (!zeros) return VO_ERROR_OUT_OF_MEMORY;
    memset(zeros, 0, (size_t)(a.channels + 1) * 8);
    vo_da_zero(&ex->outputs[0], t);
    VO_CPU_FOR_DYNAMIC(t, task, 0, fast_tasks,
                       { vo_da_fast_backward_at(avx2, f64, &a, ex, task, groups, zeros); });
    vo_workspace_free(ex->ctx, ex->device, zeros);
    return VO_OK;
  }
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
  VO_CPU_FOR_DYNAMIC(t, task, 0, tasks, {
    float *mine = scratch ? scratch + stride * (size_t)VO_CPU_THREAD() : NULL;
    switch (dt) {
      case VO_F64: vo_da_backward_task_f64(&a, ex, task, NULL); break;
      case VO_F16: vo_da_backward_task_f16(&a, ex, task, mine); break;
      case VO_BF16: vo_da_backward_task_bf16(&a, ex, task, mine); break;
      default: vo_da_backward_task_f32(&a, ex, task, NULL); break;
    }
  });
  if (scratch) vo_workspace_free(ex->ctx, ex->device, scratch);
  return VO_OK;
}
