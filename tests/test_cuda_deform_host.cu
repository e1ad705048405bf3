// Host emulation of the CUDA deform_conv2d kernels (no GPU needed): their
// per-element __host__ __device__ functions (src/cuda/deform_conv2d_math.cuh)
// run on the host over every index and are compared with the CPU backend
// through the public API, within a tolerance (the CPU's products are
// OpenBLAS's), with the two col2im variants (atomic serialised, sorted
// gather) bit-identical to each other. The ps ops' math is portable
// (kernels/ps_roi_*.h) and runs on the CPU itself; test_roi_align_gather and
// test_rounded_gather check their device-only gathers.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/deform_conv2d_geom.h"
#include "cuda/deform_conv2d_math.cuh"

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

// The view a kernel would get of a host DLTensor (NULL: no tensor).
vo_cuda_view view_of(const DLTensor *t) {
  vo_cuda_view v;
  memset(&v, 0, sizeof v);
  if (!t) return v;
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

std::vector<double> read_all(const DLTensor *t) {
  std::vector<double> v((size_t)vt_numel(t));
  if (!v.empty()) vt_read_all(t, v.data());
  return v;
}

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

// |got - want| <= tol * (1 + max |want|) everywhere; reports the worst.
bool close(const char *what, const char *desc, const std::vector<double> &got,
           const std::vector<double> &want, double tol) {
  if (!CHECK_MSG(got.size() == want.size(), "%s [%s]: %zu elements, expected %zu", what, desc,
                 got.size(), want.size()))
    return false;
  double scale = 1, worst = 0;
  size_t at = 0;
  for (double w : want) scale = fmax(scale, fabs(w));
  for (size_t i = 0; i < got.size(); i++) {
    const double d = fabs(got[i] - want[i]);
    if (!(d <= worst)) {  // NaN counts as the worst
      worst = d;
      at = i;
    }
  }
  return CHECK_MSG(worst <= tol * scale, "%s [%s]: element %zu = %.17g, CPU %.17g (tolerance %g)",
                   what, desc, at, got.empty() ? 0 : got[at], want.empty() ? 0 : want[at],
                   tol * scale);
}

std::vector<double> random_values(vt_rng *rng, int64_t n, DLDataType dt) {
  std::vector<double> v((size_t)n);
  for (auto &x : v) x = vt_round_to(dt, vt_rng_uniform(rng, -1, 1));
  return v;
}

// A host tensor; `strided` lays it out with gaps between rows and planes.
vt_tensor *make(DLDataType dt, int ndim, const int64_t *shape, const std::vector<double> &values,
                bool strided) {
  if (!strided) return vt_tensor_new(dt, ndim, shape, values.empty() ? nullptr : values.data());
  int64_t strides[VO_MAX_DIMS], s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    strides[d] = s;
    s *= shape[d] + (d % 2 ? 1 : 2);
  }
  return vt_tensor_strided(dt, ndim, shape, strides, 2 * vt_dtype_bytes(dt), values.data());
}

// ------------------------------------------------------------ deform_conv2d
// Its per-element math is the CPU's own (kernels/deform_conv2d.h), so what is
// checked here is the CUDA backend's alone: the cuBLAS products' shapes,
// replayed on the host (forward, grad_input, grad_weight, within a tolerance
// of the CPU's OpenBLAS), and the deterministic col2im (keys, sort, gather),
// bit-identical to the atomic one serialised.

struct dcn_case {
  int64_t n, cin, cout, h, w, kh, kw, sh, sw, ph, pw, dh, dw, groups, og;
  bool mask, bias, strided;
  int64_t tile;  // column tile length of the emulation
};

// cuBLAS's strided-batched GEMM (column-major) on the host: the kernels'
// GEMM shapes (vo_dcn_gemm_*) replayed with plain loops in the compute type.
template <typename T>
void gemm_cm(const vo_dcn_gemm_shape &g, const T *a, const T *b, T beta, T *c) {
  for (int64_t bt = 0; bt < g.batch; bt++) {
    const T *ab = a + bt * g.stride_a, *bb = b + bt * g.stride_b;
    T *cb = c + bt * g.stride_c;
    for (int64_t i = 0; i < g.m; i++)
      for (int64_t j = 0; j < g.n; j++) {
        T s = 0;
        for (int64_t q = 0; q < g.k; q++) {
          const T av = g.trans_a ? ab[q + i * g.lda] : ab[i + q * g.lda];
          const T bv = g.trans_b ? bb[j + q * g.ldb] : bb[q + j * g.ldb];
          s += av * bv;
        }
        T &out = cb[i + j * g.ldc];
        out = beta == 0 ? s : beta * out + s;
      }
  }
}

template <typename D>
void check_deform(const dcn_case &t, DLDataType dt, vt_rng *rng, const char *desc) {
  typedef typename D::S S;
  typedef typename D::T T;
  const int64_t taps = t.kh * t.kw;
  const int64_t ho = (t.h + 2 * t.ph - (t.dh * (t.kh - 1) + 1)) / t.sh + 1;
  const int64_t wo = (t.w + 2 * t.pw - (t.dw * (t.kw - 1) + 1)) / t.sw + 1;
  const int64_t plane = ho * wo, cgk = t.cin / t.groups * taps, coutg = t.cout / t.groups;
  const int64_t in_shape[4] = {t.n, t.cin, t.h, t.w};
  const int64_t w_shape[4] = {t.cout, t.cin / t.groups, t.kh, t.kw};
  const int64_t off_shape[4] = {t.n, 2 * t.og * taps, ho, wo};
  const int64_t m_shape[4] = {t.n, t.og * taps, ho, wo};
  const int64_t b_shape[1] = {t.cout}, o_shape[4] = {t.n, t.cout, ho, wo};
  std::vector<double> off_v((size_t)(t.n * 2 * t.og * taps * plane));
  for (auto &x : off_v) {
    const int64_t u = vt_rng_int(rng, 10);
    // integers and halves put samples exactly on the map's edges and corners
    x = u == 0   ? (double)(vt_rng_int(rng, 5) - 2)
        : u == 1 ? 0.5 * (double)(vt_rng_int(rng, 7) - 3)
        : u == 2 ? NAN
                 : vt_rng_uniform(rng, -3, 3);
    x = vt_round_to(dt, x);
  }
  std::vector<double> m_v = random_values(rng, t.n * t.og * taps * plane, dt);
  vt_tensor *in = make(dt, 4, in_shape, random_values(rng, t.n * t.cin * t.h * t.w, dt), t.strided);
  vt_tensor *wt = make(dt, 4, w_shape, random_values(rng, t.cout * cgk, dt), t.strided);
  vt_tensor *off = make(dt, 4, off_shape, off_v, t.strided);
  vt_tensor *mk = t.mask ? make(dt, 4, m_shape, m_v, t.strided) : nullptr;
  vt_tensor *bias = t.bias ? make(dt, 1, b_shape, random_values(rng, t.cout, dt), false) : nullptr;
  vt_tensor *grad = make(dt, 4, o_shape, random_values(rng, t.n * t.cout * plane, dt), t.strided);
  vt_tensor *out = vt_tensor_new(dt, 4, o_shape, nullptr);
  vt_tensor *g_in = vt_tensor_new(dt, 4, in_shape, nullptr);
  vt_tensor *g_w = vt_tensor_new(dt, 4, w_shape, nullptr);
  vt_tensor *g_off = vt_tensor_new(dt, 4, off_shape, nullptr);
  vt_tensor *g_m = vt_tensor_new(dt, 4, m_shape, nullptr);
  vt_tensor *g_b = vt_tensor_new(dt, 1, b_shape, nullptr);
  const DLTensor *mdl = mk ? &mk->dl : nullptr, *bdl = bias ? &bias->dl : nullptr;
  const vo_status fs = vo_deform_conv2d(nullptr, &in->dl, &wt->dl, &off->dl, mdl, bdl, t.sh, t.sw,
                                        t.ph, t.pw, t.dh, t.dw, t.groups, t.og, &out->dl);
  const vo_status bs = fs != VO_OK ? fs
                                   : vo_deform_conv2d_backward(
                                         nullptr, &grad->dl, &in->dl, &wt->dl, &off->dl, mdl, bdl,
                                         t.sh, t.sw, t.ph, t.pw, t.dh, t.dw, t.groups, t.og,
                                         &g_in->dl, &g_w->dl, &g_off->dl, &g_m->dl, &g_b->dl);
  if (CHECK_STATUS(fs, VO_OK) && CHECK_STATUS(bs, VO_OK)) {
    const vo_cuda_view iv = view_of(&in->dl), ov = view_of(&off->dl), mv = view_of(mdl);
    const S *input = static_cast<const S *>(iv.data), *offset = static_cast<const S *>(ov.data);
    const S *mask = static_cast<const S *>(mv.data);
    vo_k_dcn_geom a;
    memset(&a, 0, sizeof a);
    const vo_cuda_view wv = view_of(&wt->dl), gv = view_of(&grad->dl), bv = view_of(bdl);
    const S *weight = static_cast<const S *>(wv.data), *gr = static_cast<const S *>(gv.data);
    for (int d = 0; d < 4; d++) {
      a.in_stride[d] = iv.stride[d];
      a.offset_stride[d] = ov.stride[d];
      a.mask_stride[d] = mv.stride[d];
      a.weight_stride[d] = wv.stride[d];
      a.grad_stride[d] = gv.stride[d];
    }
    a.has_mask = t.mask;
    a.batch = t.n;
    a.in_channels = t.cin;
    a.height = t.h;
    a.width = t.w;
    a.out_channels = t.cout;
    a.kernel_h = t.kh;
    a.kernel_w = t.kw;
    a.out_h = ho;
    a.out_w = wo;
    a.stride_h = t.sh;
    a.stride_w = t.sw;
    a.pad_h = t.ph;
    a.pad_w = t.pw;
    a.dilation_h = t.dh;
    a.dilation_w = t.dw;
    a.groups = t.groups;
    a.offset_groups = t.og;
    std::vector<T> wmat((size_t)(t.cout * cgk));
    for (int64_t i = 0; i < t.cout * cgk; i++)  // as the kernel: runs of 1
      D::weight_run(a, weight, i, 1, wmat.data() + i);
    const int64_t hw = t.h * t.w, per_og = t.cin / t.og;
    std::vector<double> fwd((size_t)(t.n * t.cout * plane)), gin_fast((size_t)(t.n * t.cin * hw));
    std::vector<double> gin_det(gin_fast.size());
    std::vector<T> gw((size_t)(t.cout * cgk), (T)0);
    // The driver's walk: the images' gradients accumulate in per-tile
    // buffers (as the half types' float32 images) stored as tiles complete.
    std::vector<T> acc_fast, acc_det;
    while (vo_dcn_next_tile(&a, t.tile)) {
      const int64_t len = a.len, images = vo_k_dcn_tile_images(&a), keys = images * hw;
      if (a.p0 == 0) {
        acc_fast.assign((size_t)(images * t.cin * hw), (T)0);
        acc_det = acc_fast;
      }
      std::vector<T> cols((size_t)(t.cin * taps * len)), obuf((size_t)(t.cout * len));
      std::vector<T> gbuf(obuf.size()), dcol(cols.size());
      for (int64_t i = 0; i < (int64_t)cols.size(); i++)
        cols[(size_t)i] = D::im2col_at(a, input, offset, mask, i);
      for (int64_t i = 0; i < (int64_t)gbuf.size(); i++)  // as the kernel: runs of 1
        D::grad_run(a, gr, i / len, i % len, 1, gbuf.data() + i);
      gemm_cm<T>(vo_dcn_gemm_forward(cgk, coutg, len, t.groups), cols.data(), wmat.data(), 0,
                 obuf.data());
      gemm_cm<T>(vo_dcn_gemm_grad_weight(cgk, coutg, len, t.groups), cols.data(), gbuf.data(), 1,
                 gw.data());
      gemm_cm<T>(vo_dcn_gemm_grad_cols(cgk, coutg, len, t.groups), gbuf.data(), wmat.data(), 0,
                 dcol.data());
      for (int64_t i = 0; i < t.cout * len; i++) {
        const int64_t co = i / len, q = a.p0 + i % len, n = a.n + q / plane;
        const T b = bv.data ? D::load(static_cast<const S *>(bv.data), co * bv.stride[0]) : (T)0;
        fwd[(size_t)((n * t.cout + co) * plane + q % plane)] = stored(obuf[(size_t)i] + b, dt);
      }
      for (int64_t i = 0; i < (int64_t)dcol.size(); i++)
        D::col2im_at(a, offset, mask, dcol.data(), i, acc_fast.data());
      // The deterministic col2im: keys, stable sort, runs, gather.
      for (int64_t g = 0; g < t.og; g++) {
        std::vector<std::pair<unsigned long long, uint32_t>> e((size_t)(4 * taps * len));
        for (int64_t i = 0; i < taps * len; i++) {
          int64_t k[4];
          D::col2im_keys_at(a, offset, mask, g, i, k);
          for (int j = 0; j < 4; j++)
            e[(size_t)(4 * i + j)] = {(unsigned long long)k[j], (uint32_t)(4 * i + j)};
        }
        std::stable_sort(
            e.begin(), e.end(),
            [](const std::pair<unsigned long long, uint32_t> &x,
               const std::pair<unsigned long long, uint32_t> &y) { return x.first < y.first; });
        std::vector<uint32_t> vals(e.size()), begin((size_t)keys, 0), end((size_t)keys, 0);
        for (size_t i = 0; i < e.size(); i++) {
          vals[i] = e[i].second;
          const unsigned long long k = e[i].first;
          if (k == (unsigned long long)keys) continue;
          if (i == 0 || e[i - 1].first != k) begin[k] = (uint32_t)i;
          if (i + 1 == e.size() || e[i + 1].first != k) end[k] = (uint32_t)(i + 1);
        }
        for (int64_t i = 0; i < per_og * keys; i++)
          D::col2im_gather_item_at(a, offset, mask, dcol.data(), g, vals.data(), begin.data(),
                                   end.data(), i, acc_det.data());
      }
      for (int64_t i = 0; i < vo_dcn_tile_completes(&a) * t.cin * hw; i++) {
        gin_fast[(size_t)(a.n * t.cin * hw + i)] = stored(acc_fast[(size_t)i], dt);
        gin_det[(size_t)(a.n * t.cin * hw + i)] = stored(acc_det[(size_t)i], dt);
      }
    }
    std::vector<double> gwd(gw.size());
    for (size_t i = 0; i < gw.size(); i++) gwd[i] = stored(gw[i], dt);
    const double tol = sizeof(T) == 8 ? 1e-11 : 2e-5;
    close("deform_conv2d forward", desc, fwd, read_all(&out->dl), tol);
    same("deform_conv2d col2im: sorted gather vs atomic (serialised)", desc, gin_det, gin_fast);
    close("deform_conv2d grad_input", desc, gin_det, read_all(&g_in->dl), tol);
    close("deform_conv2d grad_weight", desc, gwd, read_all(&g_w->dl), tol);
  }
  for (vt_tensor *x : {in, wt, off, mk, bias, grad, out, g_in, g_w, g_off, g_m, g_b})
    if (x) vt_tensor_free(x);
}

template <typename D>
void deform_suite(DLDataType dt, uint64_t seed) {
  vt_rng rng;
  vt_rng_seed(&rng, seed);
  for (int it = 0; it < 10; it++) {
    dcn_case t;
    t.groups = 1 + vt_rng_int(&rng, 2);
    t.og = 1 + vt_rng_int(&rng, 2);
    t.cin = t.groups * t.og * (1 + vt_rng_int(&rng, 2));
    t.cout = t.groups * (1 + vt_rng_int(&rng, 3));
    t.n = 1 + vt_rng_int(&rng, 2);
    t.h = 1 + vt_rng_int(&rng, 8);
    t.w = 1 + vt_rng_int(&rng, 8);
    t.kh = 1 + vt_rng_int(&rng, 3);
    t.kw = 1 + vt_rng_int(&rng, 3);
    t.sh = 1 + vt_rng_int(&rng, 2);
    t.sw = 1 + vt_rng_int(&rng, 2);
    t.ph = vt_rng_int(&rng, 3);
    t.pw = vt_rng_int(&rng, 3);
    t.dh = 1 + vt_rng_int(&rng, 2);
    t.dw = 1 + vt_rng_int(&rng, 2);
    t.mask = it % 2 == 0;
    t.bias = it % 3 != 2;
    t.strided = it % 4 == 1;
    // parts of an image, or (when it is small) 1 to 3 whole images
    t.tile = 1 + vt_rng_int(&rng, 7);
    if (t.h + 2 * t.ph < t.dh * (t.kh - 1) + 1) t.ph = t.dh * (t.kh - 1);
    if (t.w + 2 * t.pw < t.dw * (t.kw - 1) + 1) t.pw = t.dw * (t.kw - 1);
    if (it % 3 == 0) {
      t.n = 2 + vt_rng_int(&rng, 4);
      const int64_t ho = (t.h + 2 * t.ph - (t.dh * (t.kh - 1) + 1)) / t.sh + 1;
      const int64_t wo = (t.w + 2 * t.pw - (t.dw * (t.kw - 1) + 1)) / t.sw + 1;
      t.tile = ho * wo * (1 + vt_rng_int(&rng, 3));
    }
    char desc[512];
    snprintf(
        desc, sizeof desc,
        "%s seed %llu case %d: N=%lld Cin=%lld Cout=%lld %lldx%lld kernel %lldx%lld stride "
        "%lldx%lld pad %lldx%lld dil %lldx%lld groups %lld og %lld mask %d bias %d tile %lld%s",
        vt_dtype_name(dt), (unsigned long long)seed, it, (long long)t.n, (long long)t.cin,
        (long long)t.cout, (long long)t.h, (long long)t.w, (long long)t.kh, (long long)t.kw,
        (long long)t.sh, (long long)t.sw, (long long)t.ph, (long long)t.pw, (long long)t.dh,
        (long long)t.dw, (long long)t.groups, (long long)t.og, (int)t.mask, (int)t.bias,
        (long long)t.tile, t.strided ? " strided" : "");
    check_deform<D>(t, dt, &rng, desc);
  }
}

}  // namespace

int main() {
  for (uint64_t seed = 1; seed <= 4; seed++) {
    deform_suite<vo_dcn_dtype_f32>(vt_f32, seed);
    deform_suite<vo_dcn_dtype_f64>(vt_f64, seed);
  }
  return vt_finish("test_cuda_deform_host");
}
