// Host emulation of the CUDA RoI kernels (no GPU needed): the per-element
// __host__ __device__ functions of src/cuda/roi_common.cuh, run on the host
// over every output index (the forwards), every grad index in order (the
// atomic backwards, serialised) and every grad_input index (the deterministic
// gather backwards), must reproduce the CPU backend's results bit for bit on
// random problems: odd sizes, RoIs partly or fully outside the map, strided
// inputs, aligned both ways, adaptive and fixed sampling, all four dtypes.
// (roi_pool's kernels are kernels/roi_pool.h, which the CPU runs; its
// device-only gather is tested by test_rounded_gather.)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>
#include <vector>

#include "cuda/roi_common.cuh"

extern "C" {
#include "test_util.h"
}

namespace {

vo_dtype vo_of(DLDataType t) {
  if (t.code == kDLBfloat) return VO_BF16;
  if (t.bits == 64) return VO_F64;
  if (t.bits == 16) return VO_F16;
  return VO_F32;
}

// The view a kernel would get of a host DLTensor.
vo_cuda_view view_of(const DLTensor *t) {
  vo_cuda_view v;
  memset(&v, 0, sizeof v);
  v.data = (char *)t->data + t->byte_offset;
  v.dtype = t->dtype.code == kDLInt ? VO_I32 : vo_of(t->dtype);
  int64_t s = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    v.stride[d] = t->strides ? t->strides[d] : s;
    s *= t->shape[d];
  }
  return v;
}

// A compute-type result as the storage type would hold it, as double.
double stored(float v, DLDataType dt) {
  if (dt.code == kDLBfloat) return (double)__bfloat162float(__float2bfloat16_rn(v));
  if (dt.bits == 16) return (double)__half2float(__float2half_rn(v));
  return (double)v;
}
double stored(double v, DLDataType) { return v; }

// Bit-exact comparison (NaN equals NaN); reports the first difference.
bool same(const char *what, const char *desc, const std::vector<double> &got,
          const std::vector<double> &want) {
  if (!CHECK_MSG(got.size() == want.size(), "%s [%s]: %zu elements, expected %zu", what, desc,
                 got.size(), want.size()))
    return false;
  for (size_t i = 0; i < got.size(); i++) {
    const bool eq = got[i] == want[i] || (got[i] != got[i] && want[i] != want[i]);
    if (!eq) {
      CHECK_MSG(0, "%s [%s]: element %zu = %.17g, CPU %.17g", what, desc, i, got[i], want[i]);
      return false;
    }
  }
  return vt_pass();
}

std::vector<double> read_all(const DLTensor *t) {
  std::vector<double> v((size_t)vt_numel(t));
  if (!v.empty()) vt_read_all(t, v.data());
  return v;
}

// A random [k,5] rois table: batch index, then a box that may lie partly or
// fully outside an image of w x h pixels (image coordinates), or be inverted.
std::vector<double> random_rois(vt_rng *rng, int64_t k, int64_t n, double w, double h) {
  std::vector<double> r((size_t)k * 5);
  for (int64_t i = 0; i < k; i++) {
    double *row = &r[(size_t)i * 5];
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

std::vector<double> random_values(vt_rng *rng, int64_t n) {
  std::vector<double> v((size_t)n);
  for (auto &x : v) x = vt_rng_uniform(rng, -1, 1);
  return v;
}

// A host tensor; `strided` lays it out with padded, permuted-looking strides.
vt_tensor *make(DLDataType dt, int ndim, const int64_t *shape, const std::vector<double> &values,
                bool strided) {
  if (!strided) return vt_tensor_new(dt, ndim, shape, values.empty() ? nullptr : values.data());
  int64_t strides[VO_MAX_DIMS], s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    strides[d] = s;
    s *= shape[d] + (d % 2 ? 1 : 2);  // gaps between rows and planes
  }
  return vt_tensor_strided(dt, ndim, shape, strides, 2 * vt_dtype_bytes(dt), values.data());
}

// ------------------------------------------------------------ roi_align

struct ra_case {
  int64_t n, c, h, w, k, ph, pw, sr;
  int aligned;
  double scale;
  bool strided;
};

template <typename S>
void check_roi_align(const ra_case &t, DLDataType dt, vt_rng *rng, const char *desc) {
  typedef typename vo_cuda_compute<S>::type T;
  typedef typename std::conditional<sizeof(S) == sizeof(T), T, float>::type A;
  const int64_t in_shape[4] = {t.n, t.c, t.h, t.w}, r_shape[2] = {t.k, 5};
  const int64_t o_shape[4] = {t.k, t.c, t.ph, t.pw};
  std::vector<double> in_v = random_values(rng, t.n * t.c * t.h * t.w);
  std::vector<double> r_v =
      random_rois(rng, t.k, t.n, (double)t.w / t.scale, (double)t.h / t.scale);
  std::vector<double> g_v = random_values(rng, t.k * t.c * t.ph * t.pw);
  // NaN / inf gradients reach corners of weight 0 too (0 * inf is NaN), so
  // they show any corner the gather would skip
  for (auto &x : g_v) {
    const int64_t u = vt_rng_int(rng, 40);
    if (u == 0) x = NAN;
    if (u == 1) x = -INFINITY;
  }
  for (auto &x : in_v) x = vt_round_to(dt, x);
  for (auto &x : r_v) x = vt_round_to(dt, x);
  for (auto &x : g_v) x = vt_round_to(dt, x);
  vt_tensor *in = make(dt, 4, in_shape, in_v, t.strided);
  vt_tensor *rois = make(dt, 2, r_shape, r_v, t.strided);
  vt_tensor *grad = make(dt, 4, o_shape, g_v, t.strided);
  vt_tensor *out = vt_tensor_new(dt, 4, o_shape, nullptr);
  vt_tensor *gin = vt_tensor_new(dt, 4, in_shape, nullptr);
  if (CHECK_STATUS(
          vo_roi_align(nullptr, &in->dl, &rois->dl, t.scale, t.ph, t.pw, t.sr, t.aligned, &out->dl),
          VO_OK) &&
      CHECK_STATUS(vo_roi_align_backward(nullptr, &grad->dl, &rois->dl, t.scale, t.ph, t.pw, t.n,
                                         t.c, t.h, t.w, t.sr, t.aligned, &gin->dl),
                   VO_OK)) {
    vo_cra_args a;
    a.spatial_scale = t.scale;
    a.pooled_height = t.ph;
    a.pooled_width = t.pw;
    a.sampling_ratio = t.sr;
    a.aligned = t.aligned;
    a.batch_size = t.n;
    a.channels = t.c;
    a.height = t.h;
    a.width = t.w;
    const vo_cuda_view iv = view_of(&in->dl), rv = view_of(&rois->dl), gv = view_of(&grad->dl);
    const int64_t no = vt_numel(&out->dl), ni = vt_numel(&gin->dl);
    std::vector<double> fwd((size_t)no);
    for (int64_t i = 0; i < no; i++)
      fwd[(size_t)i] = stored(vo_cra_forward_at<S>(a, iv, rv, i), dt);
    same("roi_align forward", desc, fwd, read_all(&out->dl));

    std::vector<A> acc((size_t)ni, (A)0);
    for (int64_t i = 0; i < no; i++) vo_cra_scatter_at<S, A>(a, gv, rv, i, acc.data());
    std::vector<vo_cra_box> boxes((size_t)t.k);
    for (int64_t k = 0; k < t.k; k++) boxes[(size_t)k] = vo_cra_box_of<T>(a, rv, k);
    std::vector<double> sc((size_t)ni), ga((size_t)ni), gb((size_t)ni);
    for (int64_t i = 0; i < ni; i++) {
      sc[(size_t)i] = stored(acc[(size_t)i], dt);
      ga[(size_t)i] = stored(vo_cra_gather_at<S>(a, gv, rv, nullptr, t.k, i), dt);
      gb[(size_t)i] = stored(vo_cra_gather_at<S>(a, gv, rv, boxes.data(), t.k, i), dt);
    }
    const std::vector<double> want = read_all(&gin->dl);
    same("roi_align backward (atomic, serialised)", desc, sc, want);
    same("roi_align backward (deterministic gather)", desc, ga, want);
    same("roi_align backward (deterministic gather, RoI boxes)", desc, gb, want);
  }
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(grad);
  vt_tensor_free(out);
  vt_tensor_free(gin);
}

// ------------------------------------------------------------ multi_scale_roi_align

template <typename S>
void check_msra(int64_t n, int64_t c, int64_t img_h, int64_t img_w, int levels, int64_t k,
                int64_t ph, int64_t pw, int64_t sr, int aligned, bool strided, DLDataType dt,
                vt_rng *rng, const char *desc) {
  typedef typename vo_cuda_compute<S>::type T;
  typedef typename std::conditional<sizeof(S) == sizeof(T), T, float>::type A;
  double scales[VO_MAX_LIST];
  vt_tensor *feat[VO_MAX_LIST], *gfeat[VO_MAX_LIST];
  const DLTensor *fp[VO_MAX_LIST];
  DLTensor *gp[VO_MAX_LIST];
  for (int l = 0; l < levels; l++) {
    scales[l] = 1.0 / (double)(4 << l);  // levels 2, 3, ...
    const int64_t shape[4] = {n, c, (img_h + (4 << l) - 1) / (4 << l),
                              (img_w + (4 << l) - 1) / (4 << l)};
    std::vector<double> v = random_values(rng, n * c * shape[2] * shape[3]);
    for (auto &x : v) x = vt_round_to(dt, x);
    feat[l] = make(dt, 4, shape, v, strided);
    gfeat[l] = vt_tensor_new(dt, 4, shape, nullptr);
    fp[l] = &feat[l]->dl;
    gp[l] = &gfeat[l]->dl;
  }
  // boxes from a few pixels to the whole image, so every level is used
  std::vector<double> r_v((size_t)k * 5);
  for (int64_t i = 0; i < k; i++) {
    double *row = &r_v[(size_t)i * 5];
    const double side = exp(vt_rng_uniform(rng, log(4.0), log(4.0 * (double)img_w)));
    row[0] = (double)vt_rng_int(rng, n);
    row[1] = vt_rng_uniform(rng, -0.3 * (double)img_w, (double)img_w);
    row[2] = vt_rng_uniform(rng, -0.3 * (double)img_h, (double)img_h);
    row[3] = row[1] + (vt_rng_int(rng, 10) == 0 ? -2.0 : side);  // negative area: no level
    row[4] = row[2] + side * vt_rng_uniform(rng, 0.5, 2);
  }
  for (auto &x : r_v) x = vt_round_to(dt, x);
  const int64_t r_shape[2] = {k, 5}, o_shape[4] = {k, c, ph, pw};
  std::vector<double> g_v = random_values(rng, k * c * ph * pw);
  for (auto &x : g_v) x = vt_round_to(dt, x);
  vt_tensor *rois = make(dt, 2, r_shape, r_v, strided);
  vt_tensor *grad = make(dt, 4, o_shape, g_v, strided);
  vt_tensor *out = vt_tensor_new(dt, 4, o_shape, nullptr);
  if (CHECK_STATUS(vo_multi_scale_roi_align(nullptr, fp, scales, levels, &rois->dl, ph, pw, sr, 224,
                                            4, aligned, &out->dl),
                   VO_OK) &&
      CHECK_STATUS(vo_multi_scale_roi_align_backward(nullptr, &grad->dl, &rois->dl, fp, scales,
                                                     levels, ph, pw, sr, 224, 4, aligned, gp),
                   VO_OK)) {
    vo_cmsra_levels L;
    memset(&L, 0, sizeof L);
    L.num_levels = levels;
    for (int l = 0; l < levels; l++) {
      L.features[l] = view_of(fp[l]);
      L.height[l] = fp[l]->shape[2];
      L.width[l] = fp[l]->shape[3];
      L.scale[l] = scales[l];
    }
    L.first_level = 2;
    L.canonical_scale = 224;
    L.canonical_level = 4;
    L.pooled_height = ph;
    L.pooled_width = pw;
    L.sampling_ratio = sr;
    L.aligned = aligned;
    L.batch_size = n;
    L.channels = c;
    const vo_cuda_view rv = view_of(&rois->dl), gv = view_of(&grad->dl);
    const int64_t no = vt_numel(&out->dl);
    std::vector<double> fwd((size_t)no);
    for (int64_t i = 0; i < no; i++) fwd[(size_t)i] = stored(vo_cmsra_forward_at<S>(L, rv, i), dt);
    same("multi_scale_roi_align forward", desc, fwd, read_all(&out->dl));
    std::vector<std::vector<A>> acc((size_t)levels);
    A *ptrs[VO_MAX_LIST];
    for (int l = 0; l < levels; l++) {
      acc[(size_t)l].assign((size_t)vt_numel(gp[l]), (A)0);
      ptrs[l] = acc[(size_t)l].data();
    }
    for (int64_t i = 0; i < no; i++) vo_cmsra_scatter_at<S, A>(L, gv, rv, i, ptrs);
    std::vector<vo_cra_box> boxes((size_t)k);
    for (int64_t j = 0; j < k; j++) boxes[(size_t)j] = vo_cmsra_box_of<T>(L, rv, j);
    for (int l = 0; l < levels; l++) {
      const int64_t ni = vt_numel(gp[l]);
      std::vector<double> sc((size_t)ni), ga((size_t)ni), gb((size_t)ni);
      for (int64_t i = 0; i < ni; i++) {
        sc[(size_t)i] = stored(acc[(size_t)l][(size_t)i], dt);
        ga[(size_t)i] = stored(vo_cmsra_gather_at<S>(L, l, gv, rv, nullptr, k, i), dt);
        gb[(size_t)i] = stored(vo_cmsra_gather_at<S>(L, l, gv, rv, boxes.data(), k, i), dt);
      }
      const std::vector<double> want = read_all(gp[l]);
      same("multi_scale_roi_align backward (atomic, serialised)", desc, sc, want);
      same("multi_scale_roi_align backward (deterministic gather)", desc, ga, want);
      same("multi_scale_roi_align backward (deterministic gather, RoI boxes)", desc, gb, want);
    }
  }
  for (int l = 0; l < levels; l++) {
    vt_tensor_free(feat[l]);
    vt_tensor_free(gfeat[l]);
  }
  vt_tensor_free(rois);
  vt_tensor_free(grad);
  vt_tensor_free(out);
}

template <typename S>
void run_dtype(DLDataType dt, uint64_t seed) {
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
    t.sr = it % 3 == 2 ? 1 + vt_rng_int(&rng, 3) : (it % 3) * 2;  // 0, 2, 1..3
    t.aligned = (it / 3) % 2;
    t.scale = it % 4 == 3 ? 0.25 : it % 4 == 2 ? 0.5 : 1.0;
    t.strided = it % 5 == 4;
    snprintf(desc, sizeof desc,
             "%s seed %llu case %d: N=%lld C=%lld H=%lld W=%lld K=%lld PH=%lld PW=%lld sr=%lld "
             "aligned=%d scale=%g%s",
             vt_dtype_name(dt), (unsigned long long)seed, it, (long long)t.n, (long long)t.c,
             (long long)t.h, (long long)t.w, (long long)t.k, (long long)t.ph, (long long)t.pw,
             (long long)t.sr, t.aligned, t.scale, t.strided ? " strided" : "");
    check_roi_align<S>(t, dt, &rng, desc);
  }
  for (int it = 0; it < 6; it++) {
    const int64_t n = 1 + vt_rng_int(&rng, 2), c = 1 + vt_rng_int(&rng, 3);
    const int64_t img_h = 24 + vt_rng_int(&rng, 60), img_w = 24 + vt_rng_int(&rng, 60);
    const int levels = 1 + (int)vt_rng_int(&rng, 4);
    const int64_t k = vt_rng_int(&rng, 12), ph = 1 + vt_rng_int(&rng, 3);
    const int64_t pw = 1 + vt_rng_int(&rng, 3), sr = (it % 2) * 2;
    const int aligned = (it / 2) % 2;
    const bool strided = it == 5;
    snprintf(desc, sizeof desc,
             "%s seed %llu msra case %d: N=%lld C=%lld image %lldx%lld levels=%d K=%lld PH=%lld "
             "PW=%lld sr=%lld aligned=%d%s",
             vt_dtype_name(dt), (unsigned long long)seed, it, (long long)n, (long long)c,
             (long long)img_h, (long long)img_w, levels, (long long)k, (long long)ph, (long long)pw,
             (long long)sr, aligned, strided ? " strided" : "");
    check_msra<S>(n, c, img_h, img_w, levels, k, ph, pw, sr, aligned, strided, dt, &rng, desc);
  }
}

// The candidate window and the RoI span of the gather never miss a sample:
// compare them with a scan of every sample on extreme geometries (huge
// starts, tiny steps, negative and zero bins).
void check_candidates() {
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
    vo_cra_span<float>(start, bin, grid, pooled, size, &lo, &hi);
    for (int64_t y = 0; y < size; y++) {
      int64_t t0 = 0, t1 = -1;
      const bool any = vo_cra_candidates<float>(start, bin, grid, pooled, y, &t0, &t1);
      for (int64_t t = 0; t < pooled * grid; t++) {
        const vo_cra_axis<float> a =
            vo_cra_axis_at<float>(start, bin, grid, t / grid, t % grid, size);
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

}  // namespace

int main(void) {
  check_candidates();
  for (uint64_t seed = 1; seed <= 3; seed++) {
    run_dtype<float>(vt_f32, seed);
    run_dtype<double>(vt_f64, seed);
  }
  run_dtype<__half>(vt_f16, 7);
  run_dtype<__nv_bfloat16>(vt_bf16, 8);
  return vt_finish("test_cuda_roi_host");
}
