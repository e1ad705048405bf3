/*
 * The portable work items of the bilinear RoI ops (kernels/roi_align.h,
 * ps_roi_align.h, multi_scale_roi_align.h) that only the device backends
 * run, run here on the host over every index: the forward items (one output
 * element each), the fast backward's scatter items in index order, and the
 * deterministic backward's gather items (one grad_input element each, with
 * and without the RoI boxes). Each must reproduce the CPU backend's results
 * bit for bit on random problems: odd sizes, RoIs partly or fully outside
 * the map or inverted, strided tensors, aligned both ways, adaptive and
 * fixed sampling, NaN and infinite gradients, all four float dtypes.
 * Also: the gather's candidate windows and RoI spans never miss a sample.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/multi_scale_roi_align.h"
#include "kernels/ps_roi_align.h"
#include "test_util.h"

static int dt_code(DLDataType t) {
  if (t.code == kDLBfloat) return VO_DT_BF16;
  if (t.bits == 64) return VO_DT_F64;
  if (t.bits == 16) return VO_DT_F16;
  return VO_DT_F32;
}

/* A compute-type result as the storage type holds it. */
static double stored(double v, int dt) {
  if (dt == VO_DT_F16) return (double)vo_k_f16_to_f32(vo_k_f32_to_f16((float)v));
  if (dt == VO_DT_BF16) return (double)vo_k_bf16_to_f32(vo_k_f32_to_bf16((float)v));
  return v;
}

/* Bit-exact comparison (NaN equals NaN) of got[0..n) with t; reports the
 * first difference. */
static void same(const char *what, const char *desc, const double *got, const vt_tensor *t) {
  const int64_t n = vt_numel(&t->dl);
  for (int64_t i = 0; i < n; i++) {
    const double want = vt_get(&t->dl, i);
    if (!(got[i] == want || (got[i] != got[i] && want != want))) {
      CHECK_MSG(0, "%s [%s]: element %lld = %.17g, CPU %.17g", what, desc, (long long)i, got[i],
                want);
      return;
    }
  }
  vt_pass();
}

/* A tensor of random values in [-1, 1] (rounded to dtype); `strided` lays it
 * out with gaps between rows and planes. */
static vt_tensor *make(DLDataType dt, int ndim, const int64_t *shape, double *values, int strided) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  for (int64_t i = 0; i < n; i++) values[i] = vt_round_to(dt, values[i]);
  if (!strided) return vt_tensor_new(dt, ndim, shape, values);
  int64_t strides[VO_MAX_DIMS], s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    strides[d] = s;
    s *= shape[d] + (d % 2 ? 1 : 2);
  }
  return vt_tensor_strided(dt, ndim, shape, strides, 2 * vt_dtype_bytes(dt), values);
}

static double *random_values(vt_rng *rng, int64_t n, int special) {
  double *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) {
    v[i] = vt_rng_uniform(rng, -1, 1);
    /* NaN / inf gradients reach corners of weight 0 too (0 * inf is NaN),
     * so they show any corner the gather would skip */
    const int64_t u = special ? vt_rng_int(rng, 40) : 2;
    if (u == 0) v[i] = NAN;
    if (u == 1) v[i] = -INFINITY;
  }
  return v;
}

/* [k,5] rois: batch index, then a box that may lie partly or fully outside
 * a w x h image (image coordinates), or be inverted. */
static double *random_rois(vt_rng *rng, int64_t k, int64_t n, double w, double h) {
  double *r = malloc(sizeof *r * (size_t)(k > 0 ? 5 * k : 1));
  for (int64_t i = 0; i < k; i++) {
    double *row = &r[i * 5];
    row[0] = (double)vt_rng_int(rng, n);
    const double x1 = vt_rng_uniform(rng, -0.5 * w, 1.2 * w);
    const double y1 = vt_rng_uniform(rng, -0.5 * h, 1.2 * h);
    const int kind = (int)vt_rng_int(rng, 8);
    const double bw = kind == 0 ? -vt_rng_uniform(rng, 0, 3) : vt_rng_uniform(rng, 0, w);
    const double bh = kind == 1 ? vt_rng_uniform(rng, 0, 0.5) : vt_rng_uniform(rng, 0, h);
    row[1] = x1;
    row[2] = y1;
    row[3] = x1 + bw;
    row[4] = y1 + bh;
  }
  return r;
}

/* The items per storage dtype. */
static double ra_forward(int dt, const vo_k_roi_align_args *a, const void *in, const void *rois,
                         int64_t i) {
  switch (dt) {
    case VO_DT_F64: return vo_k_roi_align_forward_item_f64(a, in, rois, i);
    case VO_DT_F16: return vo_k_roi_align_forward_item_f16(a, in, rois, i);
    case VO_DT_BF16: return vo_k_roi_align_forward_item_bf16(a, in, rois, i);
    default: return vo_k_roi_align_forward_item_f32(a, in, rois, i);
  }
}
static void ra_scatter(int dt, const vo_k_roi_align_args *a, const void *grad, const void *rois,
                       int64_t i, void *acc) {
  switch (dt) {
    case VO_DT_F64: vo_k_roi_align_scatter_item_f64(a, grad, rois, i, acc); break;
    case VO_DT_F16: vo_k_roi_align_scatter_item_f16(a, grad, rois, i, acc); break;
    case VO_DT_BF16: vo_k_roi_align_scatter_item_bf16(a, grad, rois, i, acc); break;
    default: vo_k_roi_align_scatter_item_f32(a, grad, rois, i, acc); break;
  }
}
static double ra_gather(int dt, const vo_k_roi_align_args *a, const void *grad, const void *rois,
                        const vo_k_ra_box *boxes, int64_t k, int64_t i) {
  switch (dt) {
    case VO_DT_F64: return vo_k_roi_align_gather_item_f64(a, grad, rois, boxes, k, i);
    case VO_DT_F16: return vo_k_roi_align_gather_item_f16(a, grad, rois, boxes, k, i);
    case VO_DT_BF16: return vo_k_roi_align_gather_item_bf16(a, grad, rois, boxes, k, i);
    default: return vo_k_roi_align_gather_item_f32(a, grad, rois, boxes, k, i);
  }
}

/* The accumulator of the scatter items: the compute type, n elements. */
static double acc_get(const void *acc, int dt, int64_t i) {
  return dt == VO_DT_F64 ? ((const double *)acc)[i] : (double)((const float *)acc)[i];
}

typedef struct ra_case {
  int64_t n, c, h, w, k, ph, pw, sr;
  int aligned, strided;
  double scale;
} ra_case;

static vo_k_roi_align_args args_of(const ra_case *t, const vt_tensor *rois, const vt_tensor *src) {
  vo_k_roi_align_args a;
  memset(&a, 0, sizeof a);
  a.spatial_scale = t->scale;
  a.pooled_height = t->ph;
  a.pooled_width = t->pw;
  a.sampling_ratio = t->sr;
  a.aligned = t->aligned;
  a.batch_size = t->n;
  a.channels = t->c;
  a.height = t->h;
  a.width = t->w;
  a.rois_dtype = dt_code(rois->dl.dtype);
  vt_strides(rois, a.rois_stride);
  vt_strides(src, a.src_stride);
  return a;
}

/* Runs every item of one problem (ps: ps_roi_align, t->c output channels).
 * CPU results come through the public API. */
static void check_case(const ra_case *t, int ps, DLDataType dt, vt_rng *rng, const char *desc) {
  const int d = dt_code(dt);
  const int64_t bins = t->ph * t->pw, cin = ps ? t->c * bins : t->c;
  const int64_t in_shape[4] = {t->n, cin, t->h, t->w}, r_shape[2] = {t->k, 5};
  const int64_t o_shape[4] = {t->k, t->c, t->ph, t->pw};
  double *in_v = random_values(rng, t->n * cin * t->h * t->w, 0);
  double *r_v = random_rois(rng, t->k, t->n, (double)t->w / t->scale, (double)t->h / t->scale);
  double *g_v = random_values(rng, t->k * t->c * bins, 1);
  vt_tensor *in = make(dt, 4, in_shape, in_v, t->strided);
  vt_tensor *rois = make(dt, 2, r_shape, r_v, t->strided);
  vt_tensor *grad = make(dt, 4, o_shape, g_v, t->strided);
  vt_tensor *out = vt_tensor_new(dt, 4, o_shape, NULL);
  vt_tensor *map = vt_tensor_new(vt_i32, 4, o_shape, NULL);
  vt_tensor *gin = vt_tensor_new(dt, 4, in_shape, NULL);
  vo_status fs, bs;
  if (ps) {
    fs = vo_ps_roi_align(NULL, &in->dl, &rois->dl, t->scale, t->ph, t->pw, t->sr, &out->dl,
                         &map->dl);
    bs = fs != VO_OK
             ? fs
             : vo_ps_roi_align_backward(NULL, &grad->dl, &rois->dl, &map->dl, t->scale, t->ph,
                                        t->pw, t->sr, t->n, cin, t->h, t->w, &gin->dl);
  } else {
    fs =
        vo_roi_align(NULL, &in->dl, &rois->dl, t->scale, t->ph, t->pw, t->sr, t->aligned, &out->dl);
    bs = fs != VO_OK ? fs
                     : vo_roi_align_backward(NULL, &grad->dl, &rois->dl, t->scale, t->ph, t->pw,
                                             t->n, t->c, t->h, t->w, t->sr, t->aligned, &gin->dl);
  }
  if (CHECK_STATUS(fs, VO_OK) && CHECK_STATUS(bs, VO_OK)) {
    ra_case u = *t;
    u.c = cin;
    if (ps) u.aligned = 1;
    const vo_k_roi_align_args fa = args_of(&u, rois, in), ba = args_of(&u, rois, grad);
    const int64_t no = vt_numel(&out->dl), ni = vt_numel(&gin->dl);
    double *got = calloc((size_t)(no > ni ? no + 1 : ni + 1), sizeof *got);
    double *mapping = calloc((size_t)(no + 1), sizeof *mapping);
    for (int64_t i = 0; i < no; i++) {
      int64_t c_in = -1;
      double v;
      if (ps) {
        switch (d) {
          case VO_DT_F64:
            v = vo_k_ps_roi_align_forward_item_f64(&fa, vt_first(in), vt_first(rois), i, &c_in);
            break;
          case VO_DT_F16:
            v = vo_k_ps_roi_align_forward_item_f16(&fa, vt_first(in), vt_first(rois), i, &c_in);
            break;
          case VO_DT_BF16:
            v = vo_k_ps_roi_align_forward_item_bf16(&fa, vt_first(in), vt_first(rois), i, &c_in);
            break;
          default:
            v = vo_k_ps_roi_align_forward_item_f32(&fa, vt_first(in), vt_first(rois), i, &c_in);
        }
      } else {
        v = ra_forward(d, &fa, vt_first(in), vt_first(rois), i);
      }
      got[i] = stored(v, d);
      mapping[i] = (double)c_in;
    }
    same(ps ? "ps_roi_align forward item" : "roi_align forward item", desc, got, out);
    if (ps) same("ps_roi_align forward item's channel", desc, mapping, map);

    /* the fast backward, one grad element after another */
    const size_t es = d == VO_DT_F64 ? sizeof(double) : sizeof(float);
    void *acc = calloc((size_t)ni + 1, es);
    for (int64_t i = 0; i < no; i++) {
      if (!ps)
        ra_scatter(d, &ba, vt_first(grad), vt_first(rois), i, acc);
      else if (d == VO_DT_F64)
        vo_k_ps_roi_align_scatter_item_f64(&ba, vt_first(grad), vt_first(rois), i, acc);
      else if (d == VO_DT_F16)
        vo_k_ps_roi_align_scatter_item_f16(&ba, vt_first(grad), vt_first(rois), i, acc);
      else if (d == VO_DT_BF16)
        vo_k_ps_roi_align_scatter_item_bf16(&ba, vt_first(grad), vt_first(rois), i, acc);
      else
        vo_k_ps_roi_align_scatter_item_f32(&ba, vt_first(grad), vt_first(rois), i, acc);
    }
    for (int64_t i = 0; i < ni; i++) got[i] = stored(acc_get(acc, d, i), d);
    same(ps ? "ps_roi_align scatter items (serialised)" : "roi_align scatter items (serialised)",
         desc, got, gin);
    free(acc);

    /* the deterministic backward; roi_align with and without RoI boxes */
    vo_k_ra_box *boxes = malloc(sizeof *boxes * (size_t)(t->k + 1));
    for (int64_t k = 0; k < t->k; k++)
      boxes[k] = d == VO_DT_F64 ? vo_k_ra_box_of_f64(&ba, vt_first(rois), k)
                                : vo_k_ra_box_of_f32(&ba, vt_first(rois), k);
    for (int pass = 0; pass < (ps ? 1 : 2); pass++) {
      for (int64_t i = 0; i < ni; i++) {
        double v;
        if (!ps)
          v = ra_gather(d, &ba, vt_first(grad), vt_first(rois), pass ? boxes : NULL, t->k, i);
        else if (d == VO_DT_F64)
          v = vo_k_ps_roi_align_gather_item_f64(&ba, vt_first(grad), vt_first(rois), t->k, i);
        else if (d == VO_DT_F16)
          v = vo_k_ps_roi_align_gather_item_f16(&ba, vt_first(grad), vt_first(rois), t->k, i);
        else if (d == VO_DT_BF16)
          v = vo_k_ps_roi_align_gather_item_bf16(&ba, vt_first(grad), vt_first(rois), t->k, i);
        else
          v = vo_k_ps_roi_align_gather_item_f32(&ba, vt_first(grad), vt_first(rois), t->k, i);
        got[i] = stored(v, d);
      }
      same(ps     ? "ps_roi_align gather items"
           : pass ? "roi_align gather items (RoI boxes)"
                  : "roi_align gather items",
           desc, got, gin);
    }
    free(boxes);
    free(got);
    free(mapping);
  }
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(grad);
  vt_tensor_free(out);
  vt_tensor_free(map);
  vt_tensor_free(gin);
  free(in_v);
  free(r_v);
  free(g_v);
}

/* multi_scale_roi_align: levels 2, 3, ... of an img_h x img_w image. */
static void check_msra(int64_t n, int64_t c, int64_t img_h, int64_t img_w, int levels, int64_t k,
                       int64_t ph, int64_t pw, int64_t sr, int aligned, int strided, DLDataType dt,
                       vt_rng *rng, const char *desc) {
  const int d = dt_code(dt);
  double scales[VO_MAX_LIST];
  vt_tensor *feat[VO_MAX_LIST], *gfeat[VO_MAX_LIST];
  const DLTensor *fp[VO_MAX_LIST];
  DLTensor *gp[VO_MAX_LIST];
  for (int l = 0; l < levels; l++) {
    scales[l] = 1.0 / (double)(4 << l);
    const int64_t shape[4] = {n, c, (img_h + (4 << l) - 1) / (4 << l),
                              (img_w + (4 << l) - 1) / (4 << l)};
    double *v = random_values(rng, n * c * shape[2] * shape[3], 0);
    feat[l] = make(dt, 4, shape, v, strided);
    free(v);
    gfeat[l] = vt_tensor_new(dt, 4, shape, NULL);
    fp[l] = &feat[l]->dl;
    gp[l] = &gfeat[l]->dl;
  }
  /* boxes from a few pixels to the whole image, so every level is used */
  double *r_v = malloc(sizeof *r_v * (size_t)(5 * k + 1));
  for (int64_t i = 0; i < k; i++) {
    double *row = &r_v[i * 5];
    const double side = exp(vt_rng_uniform(rng, log(4.0), log(4.0 * (double)img_w)));
    row[0] = (double)vt_rng_int(rng, n);
    row[1] = vt_rng_uniform(rng, -0.3 * (double)img_w, (double)img_w);
    row[2] = vt_rng_uniform(rng, -0.3 * (double)img_h, (double)img_h);
    row[3] = row[1] + (vt_rng_int(rng, 10) == 0 ? -2.0 : side); /* negative area: no level */
    row[4] = row[2] + side * vt_rng_uniform(rng, 0.5, 2);
  }
  const int64_t r_shape[2] = {k, 5}, o_shape[4] = {k, c, ph, pw};
  double *g_v = random_values(rng, k * c * ph * pw, 0);
  vt_tensor *rois = make(dt, 2, r_shape, r_v, strided);
  vt_tensor *grad = make(dt, 4, o_shape, g_v, strided);
  vt_tensor *out = vt_tensor_new(dt, 4, o_shape, NULL);
  if (CHECK_STATUS(vo_multi_scale_roi_align(NULL, fp, scales, levels, &rois->dl, ph, pw, sr, 224, 4,
                                            aligned, &out->dl),
                   VO_OK) &&
      CHECK_STATUS(vo_multi_scale_roi_align_backward(NULL, &grad->dl, &rois->dl, fp, scales, levels,
                                                     ph, pw, sr, 224, 4, aligned, gp),
                   VO_OK)) {
    vo_k_msra_args m;
    memset(&m, 0, sizeof m);
    m.num_levels = levels;
    m.first_level = 2;
    m.canonical_scale = 224;
    m.canonical_level = 4;
    m.pooled_height = ph;
    m.pooled_width = pw;
    m.sampling_ratio = sr;
    m.aligned = aligned;
    m.batch_size = n;
    m.channels = c;
    m.rois_dtype = dt_code(rois->dl.dtype);
    vt_strides(rois, m.rois_stride);
    vt_strides(grad, m.grad_stride);
    for (int l = 0; l < levels; l++) {
      m.height[l] = fp[l]->shape[2];
      m.width[l] = fp[l]->shape[3];
      m.scale[l] = scales[l];
      vt_strides(feat[l], m.feature_stride[l]);
    }
    const void *rv = vt_first(rois), *gv = vt_first(grad);
    const int64_t no = vt_numel(&out->dl), per_roi = c * ph * pw;
    double *got = calloc((size_t)(no + 1), sizeof *got);
    for (int64_t i = 0; i < no; i++) {
      const int l = d == VO_DT_F64 ? vo_k_msra_level_of_f64(&m, rv, i / per_roi)
                                   : vo_k_msra_level_of_f32(&m, rv, i / per_roi);
      double v = 0;
      if (l >= 0) {
        const vo_k_roi_align_args a = vo_k_msra_level_args(&m, l, 0);
        v = ra_forward(d, &a, vt_first(feat[l]), rv, i);
      }
      got[i] = stored(v, d);
    }
    same("multi_scale_roi_align forward items", desc, got, out);
    free(got);
    void *acc[VO_MAX_LIST];
    const size_t es = d == VO_DT_F64 ? sizeof(double) : sizeof(float);
    for (int l = 0; l < levels; l++) acc[l] = calloc((size_t)vt_numel(gp[l]) + 1, es);
    for (int64_t i = 0; i < no; i++) {
      const int l = d == VO_DT_F64 ? vo_k_msra_level_of_f64(&m, rv, i / per_roi)
                                   : vo_k_msra_level_of_f32(&m, rv, i / per_roi);
      if (l < 0) continue;
      const vo_k_roi_align_args a = vo_k_msra_level_args(&m, l, 1);
      ra_scatter(d, &a, gv, rv, i, acc[l]);
    }
    vo_k_ra_box *boxes = malloc(sizeof *boxes * (size_t)(k + 1));
    for (int64_t j = 0; j < k; j++)
      boxes[j] = d == VO_DT_F64 ? vo_k_msra_box_of_f64(&m, rv, j) : vo_k_msra_box_of_f32(&m, rv, j);
    for (int l = 0; l < levels; l++) {
      const int64_t ni = vt_numel(gp[l]);
      double *lv = calloc((size_t)(ni + 1), sizeof *lv);
      for (int64_t i = 0; i < ni; i++) lv[i] = stored(acc_get(acc[l], d, i), d);
      same("multi_scale_roi_align scatter items (serialised)", desc, lv, gfeat[l]);
      for (int pass = 0; pass < 2; pass++) {
        const vo_k_ra_box *b = pass ? boxes : NULL;
        for (int64_t i = 0; i < ni; i++) {
          double v;
          switch (d) {
            case VO_DT_F64: v = vo_k_msra_gather_item_f64(&m, l, gv, rv, b, k, i); break;
            case VO_DT_F16: v = vo_k_msra_gather_item_f16(&m, l, gv, rv, b, k, i); break;
            case VO_DT_BF16: v = vo_k_msra_gather_item_bf16(&m, l, gv, rv, b, k, i); break;
            default: v = vo_k_msra_gather_item_f32(&m, l, gv, rv, b, k, i); break;
          }
          lv[i] = stored(v, d);
        }
        same(pass ? "multi_scale_roi_align gather items (RoI boxes)"
                  : "multi_scale_roi_align gather items",
             desc, lv, gfeat[l]);
      }
      free(lv);
      free(acc[l]);
    }
    free(boxes);
  }
  for (int l = 0; l < levels; l++) {
    vt_tensor_free(feat[l]);
    vt_tensor_free(gfeat[l]);
  }
  vt_tensor_free(rois);
  vt_tensor_free(grad);
  vt_tensor_free(out);
  free(r_v);
  free(g_v);
}

static void run_dtype(DLDataType dt, uint64_t seed) {
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  char desc[256];
  for (int it = 0; it < 24; it++) {
    ra_case t;
    t.n = 1 + vt_rng_int(&rng, 3);
    t.c = 1 + vt_rng_int(&rng, 3);
    t.h = 1 + vt_rng_int(&rng, 11);
    t.w = 1 + vt_rng_int(&rng, 11);
    t.k = vt_rng_int(&rng, 7);
    t.ph = 1 + vt_rng_int(&rng, 4);
    t.pw = 1 + vt_rng_int(&rng, 4);
    t.sr = it % 3 == 2 ? 1 + vt_rng_int(&rng, 3) : (it % 3) * 2; /* 0, 2, 1..3 */
    t.aligned = (it / 3) % 2;
    t.scale = it % 4 == 3 ? 0.25 : it % 4 == 2 ? 0.5 : 1.0;
    t.strided = it % 5 == 4;
    snprintf(desc, sizeof desc,
             "%s seed %llu case %d: N=%lld C=%lld H=%lld W=%lld K=%lld PH=%lld PW=%lld sr=%lld "
             "aligned=%d scale=%g%s",
             vt_dtype_name(dt), (unsigned long long)seed, it, (long long)t.n, (long long)t.c,
             (long long)t.h, (long long)t.w, (long long)t.k, (long long)t.ph, (long long)t.pw,
             (long long)t.sr, t.aligned, t.scale, t.strided ? " strided" : "");
    check_case(&t, 0, dt, &rng, desc);
    check_case(&t, 1, dt, &rng, desc);
  }
  for (int it = 0; it < 6; it++) {
    const int64_t n = 1 + vt_rng_int(&rng, 2), c = 1 + vt_rng_int(&rng, 3);
    const int64_t img_h = 24 + vt_rng_int(&rng, 60), img_w = 24 + vt_rng_int(&rng, 60);
    const int levels = 1 + (int)vt_rng_int(&rng, 4);
    const int64_t k = vt_rng_int(&rng, 12), ph = 1 + vt_rng_int(&rng, 3);
    const int64_t pw = 1 + vt_rng_int(&rng, 3), sr = (it % 2) * 2;
    const int aligned = (it / 2) % 2, strided = it == 5;
    snprintf(desc, sizeof desc,
             "%s seed %llu msra case %d: N=%lld C=%lld image %lldx%lld levels=%d K=%lld PH=%lld "
             "PW=%lld sr=%lld aligned=%d%s",
             vt_dtype_name(dt), (unsigned long long)seed, it, (long long)n, (long long)c,
             (long long)img_h, (long long)img_w, levels, (long long)k, (long long)ph, (long long)pw,
             (long long)sr, aligned, strided ? " strided" : "");
    check_msra(n, c, img_h, img_w, levels, k, ph, pw, sr, aligned, strided, dt, &rng, desc);
  }
}

/* The candidate window and the RoI span of the gather never miss a sample:
 * compare them with a scan of every sample on extreme geometries (huge
 * starts, tiny steps, negative and zero bins). */
static void check_candidates(void) {
  vt_rng rng;
  vt_rng_seed(&rng, 99);
  for (int it = 0; it < 4000; it++) {
    const float start = (float)(vt_rng_int(&rng, 3) == 0 ? vt_rng_uniform(&rng, -3e5, 3e5)
                                                         : vt_rng_uniform(&rng, -20, 20));
    const int kind = (int)vt_rng_int(&rng, 5);
    const float bin = kind == 0   ? 0.0f
                      : kind == 1 ? (float)vt_rng_uniform(&rng, -5, 0)
                      : kind == 2 ? (float)vt_rng_uniform(&rng, 0, 1e-3)
                                  : (float)vt_rng_uniform(&rng, 0, 8);
    const int64_t grid = 1 + vt_rng_int(&rng, 40), pooled = 1 + vt_rng_int(&rng, 7);
    const int64_t size = 1 + vt_rng_int(&rng, 12);
    int64_t lo, hi;
    vo_k_ra_span_f32(start, bin, grid, pooled, size, &lo, &hi);
    for (int64_t y = 0; y < size; y++) {
      int64_t t0 = 0, t1 = -1;
      const int any = vo_k_ra_candidates_f32(start, bin, grid, pooled, y, &t0, &t1);
      for (int64_t t = 0; t < pooled * grid; t++) {
        const vo_k_ra_axis_f32 a = vo_k_ra_axis_at_f32(start, bin, grid, t / grid, t % grid, size);
        if (!a.valid || (a.lo != y && a.hi != y)) continue;
        if (!CHECK_MSG(any && t >= t0 && t <= t1,
                       "candidates(start=%.9g, bin=%.9g, grid=%lld, pooled=%lld, y=%lld) = "
                       "[%lld, %lld] miss sample %lld",
                       (double)start, (double)bin, (long long)grid, (long long)pooled, (long long)y,
                       (long long)t0, (long long)t1, (long long)t))
          return;
        if (!CHECK_MSG(y >= lo && y <= hi,
                       "span(start=%.9g, bin=%.9g, grid=%lld, pooled=%lld, size=%lld) = "
                       "[%lld, %lld] misses row %lld of sample %lld",
                       (double)start, (double)bin, (long long)grid, (long long)pooled,
                       (long long)size, (long long)lo, (long long)hi, (long long)y, (long long)t))
          return;
      }
    }
  }
  vt_pass();
}

int main(void) {
  check_candidates();
  for (uint64_t seed = 1; seed <= 3; seed++) {
    run_dtype(vt_f32, seed);
    run_dtype(vt_f64, seed);
  }
  run_dtype(vt_f16, 7);
  run_dtype(vt_bf16, 8);
  return vt_finish("test_roi_align_gather");
}
