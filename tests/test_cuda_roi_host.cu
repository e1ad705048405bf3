// Host emulation of the CUDA roi_pool kernels (no GPU needed): the
// per-element __host__ __device__ functions of src/cuda/roi_common.cuh, run
// on the host over every output index (the forward), every grad index in
// order (the atomic backward, serialised) and every grad_input index (the
// deterministic gather backward), must reproduce the CPU backend's results
// bit for bit on random problems: odd sizes, RoIs partly or fully outside
// the map, strided inputs, all four dtypes. (roi_align's and
// multi_scale_roi_align's math is the portable kernels/roi_align.h, which
// the CPU runs itself; tests/test_roi_align_gather.c checks its gather.)
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

// ------------------------------------------------------------ cases

struct ra_case {
  int64_t n, c, h, w, k, ph, pw, sr;
  int aligned;
  double scale;
  bool strided;
};

// ------------------------------------------------------------ roi_pool

template <typename S>
void check_roi_pool(const ra_case &t, DLDataType dt, vt_rng *rng, const char *desc) {
  typedef typename vo_cuda_compute<S>::type T;
  typedef typename std::conditional<sizeof(S) == sizeof(T), T, float>::type A;
  const int64_t in_shape[4] = {t.n, t.c, t.h, t.w}, r_shape[2] = {t.k, 5};
  const int64_t o_shape[4] = {t.k, t.c, t.ph, t.pw};
  std::vector<double> in_v = random_values(rng, t.n * t.c * t.h * t.w);
  // a few ties and NaNs: argmax must pick the same element
  for (auto &x : in_v) {
    const int64_t u = vt_rng_int(rng, 16);
    if (u == 0) x = 0.25;
    if (u == 1) x = NAN;
  }
  std::vector<double> r_v =
      random_rois(rng, t.k, t.n, (double)t.w / t.scale, (double)t.h / t.scale);
  std::vector<double> g_v = random_values(rng, t.k * t.c * t.ph * t.pw);
  for (auto &x : in_v) x = vt_round_to(dt, x);
  for (auto &x : r_v) x = vt_round_to(dt, x);
  for (auto &x : g_v) x = vt_round_to(dt, x);
  vt_tensor *in = make(dt, 4, in_shape, in_v, t.strided);
  vt_tensor *rois = make(dt, 2, r_shape, r_v, t.strided);
  vt_tensor *grad = make(dt, 4, o_shape, g_v, t.strided);
  vt_tensor *out = vt_tensor_new(dt, 4, o_shape, nullptr);
  vt_tensor *am = vt_tensor_new(vt_i32, 4, o_shape, nullptr);
  vt_tensor *gin = vt_tensor_new(dt, 4, in_shape, nullptr);
  vo_crp_args a;
  a.spatial_scale = t.scale;
  a.pooled_height = t.ph;
  a.pooled_width = t.pw;
  a.batch_size = t.n;
  a.channels = t.c;
  a.height = t.h;
  a.width = t.w;
  const vo_cuda_view rv = view_of(&rois->dl), gv = view_of(&grad->dl);
  const int64_t no = vt_numel(&out->dl), ni = vt_numel(&gin->dl);
  if (CHECK_STATUS(vo_roi_pool(nullptr, &in->dl, &rois->dl, t.scale, t.ph, t.pw, &out->dl, &am->dl),
                   VO_OK)) {
    std::vector<double> fwd((size_t)no), arg((size_t)no);
    const vo_cuda_view iv = view_of(&in->dl);
    for (int64_t i = 0; i < no; i++) {
      int32_t m;
      fwd[(size_t)i] = stored(vo_crp_forward_at<S>(a, iv, rv, i, &m), dt);
      arg[(size_t)i] = m;
    }
    same("roi_pool forward", desc, fwd, read_all(&out->dl));
    same("roi_pool argmax", desc, arg, read_all(&am->dl));
  }
  // The backward twice: with the forward's argmax, then with arbitrary
  // indices (not inside their bins), which the gather must also sum.
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1)
      for (int64_t i = 0; i < no; i++)
        vt_set(&am->dl, i, (double)(vt_rng_int(rng, t.h * t.w + 1) - 1));
    if (!CHECK_STATUS(vo_roi_pool_backward(nullptr, &grad->dl, &rois->dl, &am->dl, t.scale, t.ph,
                                           t.pw, t.n, t.c, t.h, t.w, &gin->dl),
                      VO_OK))
      break;
    const vo_cuda_view av = view_of(&am->dl);
    bool in_bins = true;
    for (int64_t i = 0; i < no; i++) in_bins = in_bins && vo_crp_argmax_in_bin<T>(a, av, rv, i);
    CHECK_MSG(pass == 1 || in_bins, "roi_pool [%s]: a forward argmax outside its bin", desc);
    std::vector<A> acc((size_t)ni, (A)0);
    for (int64_t i = 0; i < no; i++) vo_crp_scatter_at<S, A>(a, gv, av, rv, i, acc.data());
    std::vector<double> sc((size_t)ni), ga((size_t)ni), full((size_t)ni);
    for (int64_t i = 0; i < ni; i++) {
      sc[(size_t)i] = stored(acc[(size_t)i], dt);
      ga[(size_t)i] = stored(vo_crp_gather_at<S>(a, gv, av, rv, t.k, in_bins, i), dt);
      full[(size_t)i] = stored(vo_crp_gather_at<S>(a, gv, av, rv, t.k, false, i), dt);
    }
    const std::vector<double> want = read_all(&gin->dl);
    same("roi_pool backward (atomic, serialised)", desc, sc, want);
    same("roi_pool backward (deterministic gather)", desc, ga, want);
    same("roi_pool backward (gather over every bin)", desc, full, want);
  }
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(grad);
  vt_tensor_free(out);
  vt_tensor_free(am);
  vt_tensor_free(gin);
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
    check_roi_pool<S>(t, dt, &rng, desc);
  }
}

}  // namespace

int main(void) {
  for (uint64_t seed = 1; seed <= 3; seed++) {
    run_dtype<float>(vt_f32, seed);
    run_dtype<double>(vt_f64, seed);
  }
  run_dtype<__half>(vt_f16, 7);
  run_dtype<__nv_bfloat16>(vt_bf16, 8);
  return vt_finish("test_cuda_roi_host");
}
