/*
 * CPU multi_scale_roi_align (forward and backward): the FPN level of each
 * RoI (the portable rule of kernels/multi_scale_roi_align.h), then the roi_align kernels run once
 * per level on that level's RoIs, gathered into contiguous scratch; forward rows are scattered back
 * into the caller's RoI order.
 */
#include <math.h>
#include <string.h>

#include "cpu/common.h"
#include "kernels/multi_scale_roi_align.h"

/* Each RoI's FPN level index in [0, levels), or -1 when its level is NaN
 * (negative area: torchvision's MultiScaleRoIAlign leaves those rows zero,
 * and so do we): kernels/multi_scale_roi_align.h's rule in the call's
 * precision (float64 for float64 features, else float32; rois of any float
 * dtype are read exactly). */
static void vo_msra_levels(const vo_exec *ex, int *levels) {
  const vo_multi_scale_roi_align_params *p = &ex->p.multi_scale_roi_align;
  const vo_view *r = p->rois;
  for (int64_t k = 0; k < r->shape[0]; k++) {
    double c[4];
    for (int j = 0; j < 4; j++) c[j] = vo_load_host(r, k * r->stride[0] + (j + 1) * r->stride[1]);
    levels[k] = ex->dtype == VO_F64
                    ? vo_k_msra_level_f64(c[0], c[1], c[2], c[3], p->canonical_level,
                                          p->canonical_scale, p->first_level, p->num_levels)
                    : vo_k_msra_level_f32(c[0], c[1], c[2], c[3], p->canonical_level,
                                          p->canonical_scale, p->first_level, p->num_levels);
  }
}

static vo_view vo_contiguous_view(void *data, vo_dtype dtype, DLDevice device, int ndim,
                                  const int64_t *shape) {
  vo_view v;
  memset(&v, 0, sizeof v);
  v.data = data;
  v.ndim = ndim;
  v.dtype = dtype;
  v.device = device;
  v.numel = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    v.shape[i] = shape[i];
    v.stride[i] = v.numel;
    v.numel *= shape[i];
  }
  return v;
}

/* Rows `rows[0..count)` of a [K, ...] view (any strides) into contiguous dst. */
static void vo_gather_rows(const vo_view *src, const int64_t *rows, int64_t count, char *dst) {
  const size_t es = vo_dtype_size(src->dtype);
  int64_t inner = 1;
  for (int d = 1; d < src->ndim; d++) inner *= src->shape[d];
  for (int64_t j = 0; j < count; j++) {
    for (int64_t e = 0; e < inner; e++) {
      /* offset of element e of row rows[j], unravelled over the trailing dims */
      int64_t off = rows[j] * src->stride[0], rem = e;
      for (int d = src->ndim - 1; d >= 1; d--) {
        off += (rem % src->shape[d]) * src->stride[d];
        rem /= src->shape[d];
      }
      /* off < 0 with negative strides: signed arithmetic, never a size_t wrap */
      memcpy(dst + (size_t)(j * inner + e) * es,
             (const char *)vo_view_addr(src) + off * (int64_t)es, es);
    }
  }
}

/* The roi_align call for one level, sharing everything but its geometry
 * with the parent call. */
static vo_exec vo_level_exec(const vo_exec *ex, int level, const vo_view *rois, const vo_view *grad,
                             const vo_view *out) {
  const vo_multi_scale_roi_align_params *p = &ex->p.multi_scale_roi_align;
  const vo_view *f = &p->features[level];
  vo_exec child = *ex;
  child.op = grad ? VO_OP_roi_align_backward : VO_OP_roi_align;
  vo_roi_align_params *c = &child.p.roi_align;
  memset(c, 0, sizeof *c);
  c->input = grad ? NULL : f;
  c->grad = grad;
  c->rois = rois;
  c->spatial_scale = p->scales[level];
  c->pooled_height = p->pooled_height;
  c->pooled_width = p->pooled_width;
  c->sampling_ratio = p->sampling_ratio;
  c->aligned = p->aligned;
  c->batch_size = f->shape[0];
  c->channels = f->shape[1];
  c->height = f->shape[2];
  c->width = f->shape[3];
  c->out = out;
  return child;
}

/* Per-level RoI lists: rows of level l are order[start[l] .. start[l+1]),
 * in RoI order. */
static void vo_bucket(const int *levels, int64_t k, int num_levels, int64_t *order,
                      int64_t *start) {
  for (int l = 0; l <= num_levels; l++) start[l] = 0;
  for (int64_t i = 0; i < k; i++)
    if (levels[i] >= 0) start[levels[i] + 1]++;
  for (int l = 0; l < num_levels; l++) start[l + 1] += start[l];
  int64_t fill[VO_MAX_LIST];
  for (int l = 0; l < num_levels; l++) fill[l] = start[l];
  for (int64_t i = 0; i < k; i++)
    if (levels[i] >= 0) order[fill[levels[i]]++] = i;
}

typedef struct vo_msra_scratch {
  void *mem;
  int *levels;
  int64_t *order;
  int64_t start[VO_MAX_LIST + 1];
  char *rois; /* [K,5] gathered per level */
  char *rows; /* forward: [K,C,PH,PW] per level; backward: gathered grad */
} vo_msra_scratch;

static vo_status vo_msra_prepare(const vo_exec *ex, vo_msra_scratch *s) {
  const vo_multi_scale_roi_align_params *p = &ex->p.multi_scale_roi_align;
  const int64_t k = p->rois->shape[0];
  const size_t es = vo_dtype_size(ex->dtype);
  const size_t row = (size_t)(p->features[0].shape[1] * p->pooled_height * p->pooled_width);
  const size_t head = ((size_t)k * (sizeof(int64_t) + sizeof(int)) + 63) & ~(size_t)63;
  /* rois keep their own dtype (SPEC section 5: any floating precision) */
  const size_t rois_bytes = ((size_t)k * 5 * vo_dtype_size(p->rois->dtype) + 63) & ~(size_t)63;
  s->mem = vo_workspace_alloc(ex->ctx, ex->device, head + rois_bytes + (size_t)k * row * es,
                              ex->op_name);
  if (!s->mem) return VO_ERROR_OUT_OF_MEMORY;
  s->order = s->mem;
  s->levels = (int *)(s->order + k);
  s->rois = (char *)s->mem + head;
  s->rows = s->rois + rois_bytes;
  vo_msra_levels(ex, s->levels);
  vo_bucket(s->levels, k, p->num_levels, s->order, s->start);
  return VO_OK;
}

vo_status vo_cpu_multi_scale_roi_align(const vo_exec *ex) {
  const vo_multi_scale_roi_align_params *p = &ex->p.multi_scale_roi_align;
  const int64_t k = p->rois->shape[0];
  if (p->out->numel == 0) return VO_OK;
  vo_msra_scratch s;
  vo_status st = vo_msra_prepare(ex, &s);
  if (st != VO_OK) return st;
  const size_t es = vo_dtype_size(ex->dtype);
  const int64_t c = p->features[0].shape[1];
  const size_t row_bytes = (size_t)(c * p->pooled_height * p->pooled_width) * es;
  char *out = vo_view_addr(p->out);
  for (int64_t i = 0; i < k; i++)
    if (s.levels[i] < 0) memset(out + (size_t)i * row_bytes, 0, row_bytes);
  for (int l = 0; l < p->num_levels && st == VO_OK; l++) {
    const int64_t *rows = s.order + s.start[l];
    const int64_t count = s.start[l + 1] - s.start[l];
    if (count == 0) continue;
    vo_gather_rows(p->rois, rows, count, s.rois);
    const int64_t rshape[2] = {count, 5};
    const int64_t oshape[4] = {count, c, p->pooled_height, p->pooled_width};
    vo_view rois = vo_contiguous_view(s.rois, p->rois->dtype, ex->device, 2, rshape);
    vo_view level_out = vo_contiguous_view(s.rows, ex->dtype, ex->device, 4, oshape);
    vo_exec child = vo_level_exec(ex, l, &rois, NULL, &level_out);
    st = vo_cpu_roi_align(&child);
    for (int64_t j = 0; st == VO_OK && j < count; j++)
      memcpy(out + (size_t)rows[j] * row_bytes, s.rows + (size_t)j * row_bytes, row_bytes);
  }
  vo_workspace_free(ex->ctx, ex->device, s.mem);
  return st;
}

vo_status vo_cpu_multi_scale_roi_align_backward(const vo_exec *ex) {
  const vo_multi_scale_roi_align_params *p = &ex->p.multi_scale_roi_align;
  vo_msra_scratch s;
  vo_status st = vo_msra_prepare(ex, &s);
  if (st != VO_OK) return st;
  const int64_t c = p->features[0].shape[1];
  for (int l = 0; l < p->num_levels && st == VO_OK; l++) {
    const vo_view *grad_level = &p->out[l];
    const int64_t *rows = s.order + s.start[l];
    const int64_t count = s.start[l + 1] - s.start[l];
    if (count == 0) {
      memset(vo_view_addr(grad_level), 0, (size_t)grad_level->numel * vo_dtype_size(ex->dtype));
      continue;
    }
    vo_gather_rows(p->rois, rows, count, s.rois);
    vo_gather_rows(p->grad, rows, count, s.rows);
    const int64_t rshape[2] = {count, 5};
    const int64_t gshape[4] = {count, c, p->pooled_height, p->pooled_width};
    vo_view rois = vo_contiguous_view(s.rois, p->rois->dtype, ex->device, 2, rshape);
    vo_view grad = vo_contiguous_view(s.rows, ex->dtype, ex->device, 4, gshape);
    vo_exec child = vo_level_exec(ex, l, &rois, &grad, grad_level);
    st = vo_cpu_roi_align_backward(&child);
  }
  vo_workspace_free(ex->ctx, ex->device, s.mem);
  return st;
}
