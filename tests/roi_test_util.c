/* Harness shared by the RoI operator tests; see roi_test_util.h. */
#include "roi_test_util.h"

#include <math.h>
#include <string.h>

const DLDataType *const rt_dtypes[RT_NUM_DTYPES] = {&vt_f32, &vt_f64, &vt_f16, &vt_bf16};

vt_tensor *rt_make_nchw(DLDataType dt, const int64_t shape[4], int layout, const double *values) {
  if (layout == LAYOUT_CONTIGUOUS) return vt_tensor_new(dt, 4, shape, values);
  const int64_t c = shape[1], h = shape[2], w = shape[3];
  const int64_t strides[4] = {h * w * c, 1, w * c, c};
  return vt_tensor_strided(dt, 4, shape, strides, 0, values);
}

vt_tensor *rt_make_rois(DLDataType dt, int64_t k, int layout, const double *values) {
  const int64_t shape[2] = {k, 5};
  if (layout == LAYOUT_CONTIGUOUS) return vt_tensor_new(dt, 2, shape, values);
  const int64_t strides[2] = {10, 1};
  return vt_tensor_strided(dt, 2, shape, strides, 0, values);
}

void rt_fill_uniform(vt_rng *rng, DLDataType dt, double *v, int64_t n) {
  for (int64_t i = 0; i < n; i++) v[i] = vt_round_to(dt, vt_rng_uniform(rng, -1, 1));
}

int rt_roi_box(vt_rng *rng, int kinds, double mh, double mw, double scale, double box[4]) {
  const int kind = (int)vt_rng_int(rng, kinds);
  double cx = vt_rng_uniform(rng, 0, mw), cy = vt_rng_uniform(rng, 0, mh);
  double hw = vt_rng_uniform(rng, 0.5, mw / 2), hh = vt_rng_uniform(rng, 0.5, mh / 2);
  switch (kind) {
    case 1: /* partly outside */ cx = vt_rng_uniform(rng, -mw / 4, mw * 1.25); break;
    case 2: /* wholly outside */ cx = vt_rng_int(rng, 2) ? -mw : 2.5 * mw; break;
    case 3: /* tiny */
      hw = vt_rng_uniform(rng, 0.01, 0.4) / scale;
      hh = vt_rng_uniform(rng, 0.01, 0.4) / scale;
      break;
    case 4: /* huge */
      hw = vt_rng_uniform(rng, 1.5, 3) * mw;
      hh = vt_rng_uniform(rng, 1.5, 3) * mh;
      break;
    case 5: /* reversed */ hw = -hw / 3; break;
    default: break;
  }
  box[0] = cx;
  box[1] = cy;
  box[2] = hw;
  box[3] = hh;
  return kind;
}

void rt_roi_store(vt_rng *rng, int64_t n, DLDataType dt, const double box[4], double r[5]) {
  const double cx = box[0], cy = box[1], hw = box[2], hh = box[3];
  r[0] = (double)vt_rng_int(rng, n);
  r[1] = vt_round_to(dt, cx - hw);
  r[2] = vt_round_to(dt, cy - hh);
  r[3] = vt_round_to(dt, cx + hw);
  r[4] = vt_round_to(dt, cy + hh);
}

double rt_tolerance(DLDataType dt) {
  if (dt.bits == 64) return 1e-11;
  if (dt.code == kDLFloat && dt.bits == 32) return 2e-5;
  if (dt.code == kDLBfloat) return 1e-2;
  return 2e-3;
}

int rt_compare(const char *file, int line, const char *what, DLDataType dt, const double *got,
               const double *want, int64_t n, const char *desc) {
  const double tol = rt_tolerance(dt);
  for (int64_t i = 0; i < n; i++) {
    double lim = tol * fmax(1, fabs(want[i]));
    if (!(fabs(got[i] - want[i]) <= lim)) {
      CHECK_AT(file, line, 0, "%s %s [%s]: element %lld = %.9g, reference %.9g", what,
               vt_dtype_name(dt), desc, (long long)i, got[i], want[i]);
      return 0;
    }
  }
  return vt_pass();
}

const rt_bad_roi rt_bad_rois[RT_NUM_BAD_ROIS] = {
    {1, 0, 7, "rois[1, 0] = 7 is not a batch index of input with N = 2"},
    {0, 0, 2, "rois[0, 0] = 2 is not a batch index"},
    {1, 0, -1, "rois[1, 0] = -1 is not a batch index"},
    {1, 0, 0.5, "rois[1, 0] = 0.5 is not a batch index"},
    {0, 0, NAN, "rois[0, 0] = nan is not finite"},
    {1, 3, NAN, "rois[1, 3] = nan is not finite"},
    {0, 2, INFINITY, "rois[0, 2] = inf is not finite"},
    {1, 4, -INFINITY, "rois[1, 4] = -inf is not finite"},
};

const rt_bad_roi rt_bad_rois_short[RT_NUM_BAD_ROIS_SHORT] = {
    {1, 0, 7, "rois[1, 0] = 7 is not a batch index of input with N = 2"},
    {1, 0, 0.5, "rois[1, 0] = 0.5 is not a batch index"},
    {0, 0, NAN, "rois[0, 0] = nan is not finite"},
    {1, 3, INFINITY, "rois[1, 3] = inf is not finite"},
};

vt_tensor *rt_bad_rois_tensor(const rt_bad_roi *bad, const double values[10]) {
  const int64_t shape[2] = {2, 5};
  vt_tensor *r = vt_tensor_new(vt_f32, 2, shape, values);
  vt_set(&r->dl, bad->row * 5 + bad->col, bad->value);
  return r;
}

int rt_bilinear(int64_t h, int64_t w, double y, double x, int64_t pos[4], double wt[4]) {
  if (y < -1 || y > (double)h || x < -1 || x > (double)w) return 0;
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
  if (yl >= h - 1) {
    yl = yh = h - 1;
    y = (double)yl;
  } else {
    yh = yl + 1;
  }
  if (xl >= w - 1) {
    xl = xh = w - 1;
    x = (double)xl;
  } else {
    xh = xl + 1;
  }
  double ly = y - (double)yl, lx = x - (double)xl;
  wt[0] = (1 - ly) * (1 - lx);
  wt[1] = (1 - ly) * lx;
  wt[2] = ly * (1 - lx);
  wt[3] = ly * lx;
  pos[0] = yl * w + xl;
  pos[1] = yl * w + xh;
  pos[2] = yh * w + xl;
  pos[3] = yh * w + xh;
  return 1;
}

vt_tensor *rt_ps_mapping(int64_t k, int64_t cout, int64_t ph, int64_t pw) {
  const int64_t shape[4] = {k, cout, ph, pw};
  vt_tensor *m = vt_tensor_new(vt_i32, 4, shape, NULL);
  int64_t i = 0;
  for (int64_t r = 0; r < k; r++)
    for (int64_t c = 0; c < cout; c++)
      for (int64_t y = 0; y < ph; y++)
        for (int64_t x = 0; x < pw; x++) vt_set(&m->dl, i++, (double)((c * ph + y) * pw + x));
  return m;
}

void rt_check_ps_shapes(const char *file, int line, const vo_tensor_desc desc[2], DLDataType dt,
                        int64_t k, int64_t cout, int64_t ph, int64_t pw) {
  for (int j = 0; j < 2; j++)
    CHECK_AT(file, line,
             desc[j].ndim == 4 && desc[j].shape[0] == k && desc[j].shape[1] == cout &&
                 desc[j].shape[2] == ph && desc[j].shape[3] == pw &&
                 desc[j].device.device_type == kDLCPU,
             "shape query: desc[%d] is not a [%lld, %lld, %lld, %lld] CPU tensor", j, (long long)k,
             (long long)cout, (long long)ph, (long long)pw);
  CHECK_AT(file, line, desc[0].dtype.code == dt.code && desc[0].dtype.bits == dt.bits,
           "shape query: output dtype is not %s", vt_dtype_name(dt));
  CHECK_AT(file, line, desc[1].dtype.code == kDLInt && desc[1].dtype.bits == 32,
           "shape query: channel_mapping dtype is not int32");
}

int rt_check_ps_mapping(const char *file, int line, const DLTensor *m, DLDataType dt, int64_t k,
                        int64_t cout, int64_t ph, int64_t pw) {
  vt_tensor *want = rt_ps_mapping(k, cout, ph, pw);
  const int ok =
      CHECK_AT(file, line,
               memcmp(want->dl.data, m->data, sizeof(int32_t) * (size_t)(k * cout * ph * pw)) == 0,
               "forward %s: channel_mapping differs from (c*PH + ph)*PW + pw", vt_dtype_name(dt));
  vt_tensor_free(want);
  return ok;
}
