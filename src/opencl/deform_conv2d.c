/*
 * OpenCL deform_conv2d and deform_conv2d_backward: opencl/deform_conv2d.cl's
 * deformable im2col / col2im kernels around CLBlast products
 * (opencl/clblast.h, loaded at first use), on column tiles of output pixels
 * sized to the context's workspace limit, as the CUDA glue
 * (cuda/deform_conv2d.cu) does. Half types compute in float32 (Sgemm on
 * float32 columns). The backward's col2im is atomic, or in a deterministic
 * context a stable sort of every contribution by its target followed by a
 * fixed-order gather (the CPU's summation order).
 */
#include <stdio.h>

#include "core/deform_conv2d_geom.h"
#include "opencl/clblast.h"
#include "opencl/common.h"

/* Workspace regions start at multiples of this many bytes. */
#define VO_DCN_ALIGN 256

/* One call's sizes, and where a tile of `len` columns puts its regions in
 * the workspace block (byte offsets; a region the call does not need has no
 * bytes) plus the CLBlast temporary buffer its products need. */
typedef struct vo_dcn_plan {
  const vo_cl_call *c;
  const vo_deform_conv2d_params *p;
  int backward, det, direct, f64, col2im;
  size_t es; /* the compute type's size */
  int64_t taps, cgk, coutg, plane, hw, in_plane;
  uint64_t wt, gw, acc, mat, cols, dcol, keys0, keys1, vals0, vals1, run_begin, run_end;
  uint64_t block; /* the block's bytes */
  size_t temp;    /* CLBlast's temporary buffer */
  vo_status st;   /* a failed temporary-size query */
} vo_dcn_plan;

/* An operand of a product: its element offset in the workspace block, its
 * leading dimension and the stride from one group's matrix to the next. */
typedef struct vo_dcn_operand {
  int64_t at, ld, stride;
} vo_dcn_operand;

/* A column-major product C = op(A) * op(B) + beta * C over the groups, in
 * the CUDA glue's shapes. */
typedef struct vo_dcn_gemm {
  int trans_a, trans_b;
  int64_t m, n, k;
  vo_dcn_operand a, b, c;
  double beta;
} vo_dcn_gemm;

static uint64_t vo_dcn_take(uint64_t *used, uint64_t bytes) {
  const uint64_t at = *used;
  *used += (bytes + VO_DCN_ALIGN - 1) / VO_DCN_ALIGN * VO_DCN_ALIGN;
  return at;
}

static vo_dcn_operand vo_dcn_operand_at(const vo_dcn_plan *q, uint64_t at, int64_t ld,
                                        int64_t stride) {
  const vo_dcn_operand o = {(int64_t)(at / q->es), ld, stride};
  return o;
}

/* Row-major obuf_g[coutg, len] = W_g[coutg, cgk] * cols_g[cgk, len], i.e.
 * column-major obuf^T = cols^T (len x cgk) * W^T (cgk x coutg). */
static vo_dcn_gemm vo_dcn_gemm_forward(const vo_dcn_plan *q, int64_t len) {
  const vo_dcn_gemm g = {.trans_a = 0,
                         .trans_b = 0,
                         .m = len,
                         .n = q->coutg,
                         .k = q->cgk,
                         .a = vo_dcn_operand_at(q, q->cols, len, q->cgk * len),
                         .b = vo_dcn_operand_at(q, q->wt, q->cgk, q->coutg * q->cgk),
                         .c = vo_dcn_operand_at(q, q->mat, len, q->coutg * len),
                         .beta = 0.0};
  return g;
}

/* Row-major gw_g[coutg, cgk] += gbuf_g[coutg, len] * cols_g[cgk, len]^T, i.e.
 * column-major gw^T (cgk x coutg) += cols (stored transposed) * gbuf^T. */
static vo_dcn_gemm vo_dcn_gemm_grad_weight(const vo_dcn_plan *q, int64_t len) {
  const vo_dcn_gemm g = {.trans_a = 1,
                         .trans_b = 0,
                         .m = q->cgk,
                         .n = q->coutg,
                         .k = len,
                         .a = vo_dcn_operand_at(q, q->cols, len, q->cgk * len),
                         .b = vo_dcn_operand_at(q, q->mat, len, q->coutg * len),
                         .c = vo_dcn_operand_at(q, q->gw, q->cgk, q->coutg * q->cgk),
                         .beta = 1.0};
  return g;
}

/* Row-major dcol_g[cgk, len] = W_g[coutg, cgk]^T * gbuf_g[coutg, len], i.e.
 * column-major dcol^T (len x cgk) = gbuf^T (len x coutg) * W (stored
 * transposed). */
static vo_dcn_gemm vo_dcn_gemm_grad_cols(const vo_dcn_plan *q, int64_t len) {
  const vo_dcn_gemm g = {.trans_a = 0,
                         .trans_b = 1,
                         .m = len,
                         .n = q->cgk,
                         .k = q->coutg,
                         .a = vo_dcn_operand_at(q, q->mat, len, q->coutg * len),
                         .b = vo_dcn_operand_at(q, q->wt, q->cgk, q->coutg * q->cgk),
                         .c = vo_dcn_operand_at(q, q->dcol, len, q->cgk * len),
                         .beta = 0.0};
  return g;
}

/* Group g of product s on the workspace block ws. */
static vo_clblast_gemm vo_dcn_group(const vo_dcn_gemm *s, int64_t g, cl_mem ws) {
  const vo_clblast_gemm one = {.trans_a = s->trans_a,
                               .trans_b = s->trans_b,
                               .m = s->m,
                               .n = s->n,
                               .k = s->k,
                               .a = ws,
                               .b = ws,
                               .c = ws,
                               .a_offset = s->a.at + g * s->a.stride,
                               .lda = s->a.ld,
                               .b_offset = s->b.at + g * s->b.stride,
                               .ldb = s->b.ld,
                               .c_offset = s->c.at + g * s->c.stride,
                               .ldc = s->c.ld,
                               .beta = s->beta};
  return one;
}

static int vo_dcn_has_product(const vo_dcn_plan *q) { return q->cgk > 0 && q->coutg > 0; }

/* The largest temporary buffer product s needs over the groups: group 1's
 * (nonzero offsets, which may need padding copies that group 0 avoids). */
static size_t vo_dcn_temp_of(vo_dcn_plan *q, const vo_dcn_gemm *s) {
  if (q->st != VO_OK) return 0;
  const vo_clblast_gemm g = vo_dcn_group(s, q->p->groups > 1 ? 1 : 0, NULL);
  size_t bytes = 0;
  q->st = vo_clblast_temp_size(q->c, q->f64, &g, &bytes);
  return bytes;
}

/* Lays out a tile of len columns; its bytes in all (block and temporary). */
static uint64_t vo_dcn_layout(vo_dcn_plan *q, int64_t len) {
  const vo_deform_conv2d_params *p = q->p;
  const uint64_t es = q->es, rows = (uint64_t)(p->in_channels * q->taps * len);
  const uint64_t images = (uint64_t)vo_dcn_tile_images_max(p, len);
  const uint64_t weights = (uint64_t)(p->out_channels * q->cgk) * es;
  const uint64_t entries = 4 * (uint64_t)(q->taps * len);
  const int sorting = q->backward && q->det && q->col2im;
  uint64_t used = 0;
  q->wt = vo_dcn_take(&used, weights);
  q->gw = vo_dcn_take(&used, q->backward ? weights : 0);
  q->acc = vo_dcn_take(&used, q->backward && !q->direct ? images * (uint64_t)q->in_plane * 4 : 0);
  q->mat = vo_dcn_take(&used, (uint64_t)(p->out_channels * len) * es); /* obuf or gbuf */
  q->cols = vo_dcn_take(&used, rows * es);
  q->dcol = vo_dcn_take(&used, q->backward ? rows * es : 0);
  q->keys0 = vo_dcn_take(&used, sorting ? entries * 8 : 0);
  q->keys1 = vo_dcn_take(&used, sorting ? entries * 8 : 0);
  q->vals0 = vo_dcn_take(&used, sorting ? entries * 4 : 0);
  q->vals1 = vo_dcn_take(&used, sorting ? entries * 4 : 0);
  q->run_begin = vo_dcn_take(&used, sorting ? images * (uint64_t)q->hw * 4 : 0);
  q->run_end = vo_dcn_take(&used, sorting ? images * (uint64_t)q->hw * 4 : 0);
  q->block = used;
  size_t temp = 0;
  if (vo_dcn_has_product(q)) {
    vo_dcn_gemm s[2] = {q->backward ? vo_dcn_gemm_grad_weight(q, len) : vo_dcn_gemm_forward(q, len),
                        vo_dcn_gemm_grad_cols(q, len)};
    for (int i = 0; i < (q->backward ? 2 : 1); i++) {
      const size_t t = vo_dcn_temp_of(q, &s[i]);
      if (t > temp) temp = t;
    }
  }
  /* CLBlast's GEMMs always get a buffer, unused when they need none. */
  q->temp = temp < VO_DCN_ALIGN ? VO_DCN_ALIGN : temp;
  return used + q->temp;
}

/* The largest m in [1, cap] whose tile of m * unit columns has a workspace
 * within the limit (the bytes grow with the length); 0 when not even one
 * unit fits or a query failed (q->st). */
static int64_t vo_dcn_choose_tile(vo_dcn_plan *q, size_t limit, int64_t cap, int64_t unit) {
  if (vo_dcn_layout(q, unit) > limit || q->st != VO_OK) return 0;
  if (vo_dcn_layout(q, cap * unit) <= limit) return q->st == VO_OK ? cap : 0;
  int64_t lo = 1, hi = cap; /* lo fits, hi does not */
  while (hi - lo > 1 && q->st == VO_OK) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (vo_dcn_layout(q, mid * unit) <= limit)
      lo = mid;
    else
      hi = mid;
  }
  return q->st == VO_OK ? lo : 0;
}

/* The tile: the largest part of one image whose workspace fits or, when a
 * whole image fits, as many whole images as vo_dcn_images_wanted asks
 * (VO_DCN_DEVICE_COLUMNS, or VO_DCN_CPU_COLUMNS on a CPU device) and the
 * limit allows; at most cap columns. */
static int64_t vo_dcn_choose_tile_images(vo_dcn_plan *q, size_t limit, int64_t cap) {
  const int64_t tile = vo_dcn_choose_tile(q, limit, cap < q->plane ? cap : q->plane, 1);
  if (tile < q->plane) return tile;
  cl_device_type type = 0;
  if (vo_cl.GetDeviceInfo(q->c->device, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS)
    type = 0;
  const int64_t columns = (type & CL_DEVICE_TYPE_CPU) ? VO_DCN_CPU_COLUMNS : VO_DCN_DEVICE_COLUMNS;
  int64_t k = vo_dcn_images_wanted(q->p, columns);
  if (k > cap / q->plane) k = cap / q->plane;
  return k > 1 ? vo_dcn_choose_tile(q, limit, k, q->plane) * q->plane : tile;
}

static vo_status vo_dcn_plan_make(vo_dcn_plan *q, const vo_cl_call *c, int backward,
                                  int64_t *tile) {
  const vo_exec *ex = c->ex;
  const vo_deform_conv2d_params *p = &ex->p.deform_conv2d;
  memset(q, 0, sizeof *q);
  q->c = c;
  q->p = p;
  q->backward = backward;
  q->det = ex->ctx->deterministic != 0;
  q->f64 = ex->dtype == VO_F64;
  q->direct = vo_dtype_size(p->input->dtype) != 2; /* float32/64 accumulate in grad_input */
  q->es = q->f64 ? 8 : 4;
  q->taps = p->kernel_h * p->kernel_w;
  q->cgk = p->in_channels / p->groups * q->taps;
  q->coutg = p->out_channels / p->groups;
  q->plane = p->out_h * p->out_w;
  q->hw = p->height * p->width;
  q->in_plane = p->in_channels * q->hw;
  q->col2im = p->in_channels > 0 && q->hw > 0;
  vo_status st = vo_dcn_has_product(q) ? vo_clblast_load(ex) : VO_OK;
  if (st != VO_OK) return st;
  /* CLBlast's kernels take element offsets as int: a block under 2 GiB. */
  size_t limit = ex->ctx->workspace_limit;
  if (limit > (size_t)INT32_MAX) limit = (size_t)INT32_MAX;
  int64_t cap = INT32_MAX;
  /* The deterministic col2im's entry ids are 32-bit. */
  if (backward && q->det && cap > (int64_t)(UINT32_MAX / 4) / q->taps)
    cap = (int64_t)(UINT32_MAX / 4) / q->taps;
  if (cap < 1) cap = 1;
  *tile = vo_dcn_choose_tile_images(q, limit, cap);
  if (q->st != VO_OK) return q->st;
  if (*tile < 1) {
    const uint64_t need = vo_dcn_layout(q, 1);
    if (q->st != VO_OK) return q->st;
    return vo_fail(VO_ERROR_OUT_OF_MEMORY,
                   "%s: workspace limit %zu bytes is below the %llu bytes one output column needs",
                   ex->op_name, limit, (unsigned long long)need);
  }
  vo_dcn_layout(q, *tile);
  return q->st;
}

/* The call's workspace: the block and CLBlast's temporary buffer. */
typedef struct vo_dcn_ws {
  cl_mem block, temp;
} vo_dcn_ws;

static vo_status vo_dcn_ws_alloc(const vo_exec *ex, const vo_dcn_plan *q, vo_dcn_ws *w) {
  w->block = vo_cl_workspace(ex, (size_t)q->block);
  w->temp = w->block ? vo_cl_workspace(ex, q->temp) : NULL;
  return w->temp ? VO_OK : VO_ERROR_OUT_OF_MEMORY;
}

static void vo_dcn_ws_free(const vo_exec *ex, vo_dcn_ws *w) {
  if (w->temp) vo_workspace_free(ex->ctx, ex->device, w->temp);
  if (w->block) vo_workspace_free(ex->ctx, ex->device, w->block);
}

/* Product s of the current tile, one CLBlast GEMM per group. */
static vo_status vo_dcn_gemm_run(const vo_dcn_plan *q, const vo_dcn_ws *w, const vo_dcn_gemm *s) {
  vo_status st = VO_OK;
  for (int64_t g = 0; g < q->p->groups && st == VO_OK; g++) {
    const vo_clblast_gemm one = vo_dcn_group(s, g, w->block);
    st = vo_clblast_run(q->c, q->f64, &one, w->temp);
  }
  return st;
}

/* Begins kernel vo_cl_dcn_<what>_<storage suffix>, its geometry first. */
static vo_status vo_dcn_begin(vo_cl_launch *l, const vo_dcn_plan *q, const char *what,
                              const vo_k_dcn_geom *a) {
  char name[64];
  snprintf(name, sizeof name, "vo_cl_dcn_%s_%s", what, vo_cl_suffix(q->p->input->dtype));
  const vo_status st = vo_cl_launch_begin(l, q->c, "deform_conv2d", name);
  if (st == VO_OK && a) vo_cl_arg(l, a, sizeof *a);
  return st;
}

/* A workspace region as a kernel's tensor argument. */
static void vo_dcn_arg_ws(vo_cl_launch *l, const vo_dcn_ws *w, uint64_t at) {
  vo_cl_arg_mem(l, w->block, at);
}

/* Zeroes `bytes` bytes of mem from byte offset at. */
static vo_status vo_dcn_zero(const vo_dcn_plan *q, cl_mem mem, uint64_t at, uint64_t bytes) {
  const unsigned char zero = 0;
  return vo_cl_fill(q->c, mem, at, &zero, 1, (size_t)bytes);
}

/* The weight as the contiguous [Cout, cgk] matrix wt. */
static vo_status vo_dcn_weight(const vo_dcn_plan *q, const vo_dcn_ws *w, const vo_k_dcn_geom *a) {
  const int64_t n = q->p->out_channels * q->cgk;
  if (n == 0) return VO_OK;
  vo_cl_launch l;
  vo_status st = vo_dcn_begin(&l, q, "weight", a);
  if (st != VO_OK) return st;
  vo_cl_arg_view(&l, q->p->weight);
  vo_cl_arg_i64(&l, n);
  vo_dcn_arg_ws(&l, w, q->wt);
  return vo_cl_launch_run(&l, n);
}

/* The tile's columns: the deformable im2col of a->len output pixels. */
static vo_status vo_dcn_im2col(const vo_dcn_plan *q, const vo_dcn_ws *w, const vo_k_dcn_geom *a) {
  const int64_t n = q->p->in_channels * q->taps * a->len;
  if (n == 0) return VO_OK;
  vo_cl_launch l;
  vo_status st = vo_dcn_begin(&l, q, "im2col", a);
  if (st != VO_OK) return st;
  vo_cl_arg_view(&l, q->p->input);
  vo_cl_arg_view(&l, q->p->offset);
  vo_cl_arg_view(&l, q->p->mask);
  vo_cl_arg_i64(&l, n);
  vo_dcn_arg_ws(&l, w, q->cols);
  return vo_cl_launch_run(&l, n);
}

vo_status vo_opencl_deform_conv2d(const vo_exec *ex) {
  const vo_deform_conv2d_params *p = &ex->p.deform_conv2d;
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || p->out->numel == 0) return st;
  vo_dcn_plan q;
  int64_t tile = 0;
  if ((st = vo_dcn_plan_make(&q, &c, 0, &tile)) != VO_OK) return st;
  vo_dcn_ws w = {NULL, NULL};
  if ((st = vo_dcn_ws_alloc(ex, &q, &w)) != VO_OK) {
    vo_dcn_ws_free(ex, &w);
    return st;
  }
  vo_k_dcn_geom a = vo_dcn_geom_of(p);
  st = vo_dcn_weight(&q, &w, &a);
  while (st == VO_OK && vo_dcn_next_tile(&a, tile)) {
    const int64_t len = a.len;
    st = vo_dcn_im2col(&q, &w, &a);
    if (st == VO_OK && vo_dcn_has_product(&q)) {
      const vo_dcn_gemm s = vo_dcn_gemm_forward(&q, len);
      st = vo_dcn_gemm_run(&q, &w, &s);
    } else if (st == VO_OK) {
      st = vo_dcn_zero(&q, w.block, q.mat, (uint64_t)(p->out_channels * len) * q.es);
    }
    vo_cl_launch l;
    if (st == VO_OK) st = vo_dcn_begin(&l, &q, "epilogue", &a);
    if (st == VO_OK) {
      vo_dcn_arg_ws(&l, &w, q.mat);
      vo_cl_arg_view(&l, p->bias);
      vo_cl_arg_i64(&l, p->out_channels * len);
      vo_cl_arg_view(&l, p->out);
      st = vo_cl_launch_run(&l, p->out_channels * len);
    }
  }
  vo_dcn_ws_free(ex, &w);
  return st;
}

/* Deterministic col2im of the tile into acc (mem at byte offset acc_at):
 * per offset group, every contribution's key, a stable sort by key, the runs
 * of each target, and a gather in sorted order. */
static vo_status vo_dcn_col2im_sorted(const vo_dcn_plan *q, const vo_dcn_ws *w,
                                      const vo_k_dcn_geom *a, cl_mem acc, uint64_t acc_at) {
  const vo_deform_conv2d_params *p = q->p;
  const int64_t items = q->taps * a->len, entries = 4 * items;
  const int64_t per_og = p->in_channels / p->offset_groups;
  const int64_t keys = vo_k_dcn_tile_images(a) * q->hw; /* targets; also the sentinel */
  vo_status st = VO_OK;
  for (int64_t g = 0; g < p->offset_groups && st == VO_OK; g++) {
    vo_cl_launch l;
    if ((st = vo_dcn_begin(&l, q, "col2im_keys", a)) != VO_OK) break;
    vo_cl_arg_view(&l, p->offset);
    vo_cl_arg_view(&l, p->mask);
    vo_cl_arg_i64(&l, g);
    vo_cl_arg_i64(&l, items);
    vo_dcn_arg_ws(&l, w, q->keys0);
    vo_dcn_arg_ws(&l, w, q->vals0);
    if ((st = vo_cl_launch_run(&l, items)) != VO_OK) break;
    /* Merge passes, ping-ponging between the two buffers. */
    uint64_t keys_in = q->keys0, vals_in = q->vals0, keys_out = q->keys1, vals_out = q->vals1;
    for (int64_t width = 1; width < entries && st == VO_OK; width *= 2) {
      if ((st = vo_cl_launch_begin(&l, q->c, "deform_conv2d", "vo_cl_dcn_merge")) != VO_OK) break;
      vo_dcn_arg_ws(&l, w, keys_in);
      vo_dcn_arg_ws(&l, w, vals_in);
      vo_cl_arg_i64(&l, entries);
      vo_cl_arg_i64(&l, width);
      vo_dcn_arg_ws(&l, w, keys_out);
      vo_dcn_arg_ws(&l, w, vals_out);
      st = vo_cl_launch_run(&l, entries);
      uint64_t t = keys_in;
      keys_in = keys_out;
      keys_out = t;
      t = vals_in;
      vals_in = vals_out;
      vals_out = t;
    }
    if (st == VO_OK) st = vo_dcn_zero(q, w->block, q->run_begin, (uint64_t)keys * 4);
    if (st == VO_OK) st = vo_dcn_zero(q, w->block, q->run_end, (uint64_t)keys * 4);
    if (st == VO_OK) st = vo_cl_launch_begin(&l, q->c, "deform_conv2d", "vo_cl_dcn_segments");
    if (st != VO_OK) break;
    const cl_ulong none = (cl_ulong)keys;
    vo_dcn_arg_ws(&l, w, keys_in);
    vo_cl_arg_i64(&l, entries);
    vo_cl_arg(&l, &none, sizeof none);
    vo_dcn_arg_ws(&l, w, q->run_begin);
    vo_dcn_arg_ws(&l, w, q->run_end);
    if ((st = vo_cl_launch_run(&l, entries)) != VO_OK) break;
    if ((st = vo_dcn_begin(&l, q, "col2im_gather", a)) != VO_OK) break;
    vo_cl_arg_view(&l, p->offset);
    vo_cl_arg_view(&l, p->mask);
    vo_dcn_arg_ws(&l, w, q->dcol);
    vo_cl_arg_i64(&l, g);
    vo_dcn_arg_ws(&l, w, vals_in);
    vo_dcn_arg_ws(&l, w, q->run_begin);
    vo_dcn_arg_ws(&l, w, q->run_end);
    vo_cl_arg_i64(&l, per_og * keys);
    vo_cl_arg_mem(&l, acc, acc_at);
    st = vo_cl_launch_run(&l, per_og * keys);
  }
  return st;
}

/* The backward of one tile (a->n, a->p0, a->len): its gradient matrix and
 * columns, grad_weight's product into gw, the columns' gradient dcol, the
 * offset and mask gradients, and col2im into acc (mem at acc_at, the tile's
 * first image). */
static vo_status vo_dcn_backward_tile(const vo_dcn_plan *q, const vo_dcn_ws *w,
                                      const vo_k_dcn_geom *a, cl_mem acc, uint64_t acc_at) {
  const vo_deform_conv2d_params *p = q->p;
  const int64_t len = a->len, rows = p->in_channels * q->taps * len;
  const int64_t og_items = p->offset_groups * q->taps * len;
  vo_cl_launch l;
  vo_status st = VO_OK;
  if (p->out_channels * len > 0) {
    if ((st = vo_dcn_begin(&l, q, "grad", a)) != VO_OK) return st;
    vo_cl_arg_view(&l, p->grad);
    vo_cl_arg_i64(&l, p->out_channels * len);
    vo_dcn_arg_ws(&l, w, q->mat);
    if ((st = vo_cl_launch_run(&l, p->out_channels * len)) != VO_OK) return st;
  }
  if ((st = vo_dcn_im2col(q, w, a)) != VO_OK) return st;
  if (vo_dcn_has_product(q)) {
    const vo_dcn_gemm gw = vo_dcn_gemm_grad_weight(q, len), gc = vo_dcn_gemm_grad_cols(q, len);
    if ((st = vo_dcn_gemm_run(q, w, &gw)) != VO_OK) return st;
    if ((st = vo_dcn_gemm_run(q, w, &gc)) != VO_OK) return st;
  } else if (rows > 0) {
    if ((st = vo_dcn_zero(q, w->block, q->dcol, (uint64_t)rows * q->es)) != VO_OK) return st;
  }
  if (og_items > 0) {
    if ((st = vo_dcn_begin(&l, q, "offset_grad", a)) != VO_OK) return st;
    vo_cl_arg_view(&l, p->input);
    vo_cl_arg_view(&l, p->offset);
    vo_cl_arg_view(&l, p->mask);
    vo_dcn_arg_ws(&l, w, q->dcol);
    vo_cl_arg_i64(&l, og_items);
    vo_cl_arg_view(&l, p->grad_offset);
    vo_cl_arg_view(&l, p->grad_mask);
    if ((st = vo_cl_launch_run(&l, og_items)) != VO_OK) return st;
  }
  if (!q->col2im || rows == 0) return VO_OK;
  if (q->det) return vo_dcn_col2im_sorted(q, w, a, acc, acc_at);
  if ((st = vo_dcn_begin(&l, q, "col2im_atomic", a)) != VO_OK) return st;
  vo_cl_arg_view(&l, p->offset);
  vo_cl_arg_view(&l, p->mask);
  vo_dcn_arg_ws(&l, w, q->dcol);
  vo_cl_arg_i64(&l, rows);
  vo_cl_arg_mem(&l, acc, acc_at);
  return vo_cl_launch_run(&l, rows);
}

/* dst (mem at byte offset dst_at, the storage dtype) = n compute-type values
 * of the workspace from src_at. */
static vo_status vo_dcn_store(const vo_dcn_plan *q, const vo_dcn_ws *w, uint64_t src_at, int64_t n,
                              cl_mem dst, uint64_t dst_at) {
  if (n == 0) return VO_OK;
  vo_cl_launch l;
  vo_status st = vo_dcn_begin(&l, q, "store", NULL);
  if (st != VO_OK) return st;
  vo_dcn_arg_ws(&l, w, src_at);
  vo_cl_arg_i64(&l, n);
  vo_cl_arg_mem(&l, dst, dst_at);
  return vo_cl_launch_run(&l, n);
}

static vo_status vo_dcn_backward(const vo_dcn_plan *q, const vo_dcn_ws *w, int64_t tile) {
  const vo_deform_conv2d_params *p = q->p;
  const size_t ss = vo_dtype_size(p->input->dtype);
  const uint64_t weights = (uint64_t)(p->out_channels * q->cgk);
  cl_mem grad_input = (cl_mem)p->grad_input->data;
  vo_k_dcn_geom a = vo_dcn_geom_of(p);
  vo_status st = VO_OK;
  if (q->direct && p->grad_input->numel > 0)
    st =
        vo_dcn_zero(q, grad_input, p->grad_input->byte_offset, (uint64_t)p->grad_input->numel * ss);
  if (st == VO_OK && !p->mask && p->grad_mask->numel > 0)
    st = vo_dcn_zero(q, (cl_mem)p->grad_mask->data, p->grad_mask->byte_offset,
                     (uint64_t)p->grad_mask->numel * ss);
  if (st == VO_OK) st = vo_dcn_weight(q, w, &a);
  if (st == VO_OK) st = vo_dcn_zero(q, w->block, q->gw, weights * q->es);
  while (st == VO_OK && vo_dcn_next_tile(&a, tile)) {
    /* float32 / float64 accumulate in grad_input's images from a.n, the
     * half types in float32 images of the workspace, zeroed as an image
     * begins and stored once the tile completes it. */
    const uint64_t image_at = p->grad_input->byte_offset + (uint64_t)(a.n * q->in_plane) * ss;
    cl_mem acc = q->direct ? grad_input : w->block;
    const uint64_t acc_at = q->direct ? image_at : q->acc;
    if (!q->direct && a.p0 == 0)
      st = vo_dcn_zero(q, w->block, q->acc, (uint64_t)(vo_k_dcn_tile_images(&a) * q->in_plane) * 4);
    if (st == VO_OK) st = vo_dcn_backward_tile(q, w, &a, acc, acc_at);
    if (st == VO_OK && !q->direct)
      st =
          vo_dcn_store(q, w, q->acc, vo_dcn_tile_completes(&a) * q->in_plane, grad_input, image_at);
  }
  if (st == VO_OK && p->out_channels > 0) {
    vo_cl_launch l;
    st = vo_dcn_begin(&l, q, "bias_grad", &a);
    if (st == VO_OK) {
      vo_cl_arg_view(&l, p->grad);
      vo_cl_arg_view(&l, p->grad_bias);
      /* Up to 256 work items per group (the kernel's local array), a group
       * per channel. */
      st = vo_cl_launch_run(&l, p->out_channels * 256);
    }
  }
  if (st == VO_OK)
    st = vo_dcn_store(q, w, q->gw, (int64_t)weights, (cl_mem)p->grad_weight->data,
                      p->grad_weight->byte_offset);
  return st;
}

vo_status vo_opencl_deform_conv2d_backward(const vo_exec *ex) {
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK) return st;
  vo_dcn_plan q;
  int64_t tile = 0;
  if ((st = vo_dcn_plan_make(&q, &c, 1, &tile)) != VO_OK) return st;
  vo_dcn_ws w = {NULL, NULL};
  if ((st = vo_dcn_ws_alloc(ex, &q, &w)) == VO_OK) st = vo_dcn_backward(&q, &w, tile);
  vo_dcn_ws_free(ex, &w);
  return st;
}
