/* Harness shared by the RoI operator tests (roi_align, roi_pool, ps_roi_align,
 * ps_roi_pool): the dtypes and layouts they loop over, NCHW and rois tensor
 * builders, random data and RoIs, the tolerance comparison, and the error
 * checks with the invalid-rois tables. */
#ifndef VISIONOPS_ROI_TEST_UTIL_H
#define VISIONOPS_ROI_TEST_UTIL_H

#include <stdint.h>

#include "test_util.h"

/* The floating dtypes every RoI op takes: f32, f64, f16, bf16. */
#define RT_NUM_DTYPES 4
extern const DLDataType *const rt_dtypes[RT_NUM_DTYPES];

/* Tensor layouts the random cases run in: contiguous NCHW and rows of rois,
 * or channels-last NCHW and rois as a [K,5] view of every other row. */
enum { LAYOUT_CONTIGUOUS, LAYOUT_CHANNELS_LAST, NUM_LAYOUTS };

/* A 4-d NCHW host tensor in `layout` holding `values` (logical row-major). */
vt_tensor *rt_make_nchw(DLDataType dt, const int64_t shape[4], int layout, const double *values);
/* A [k,5] rois host tensor in `layout` holding `values` (row-major). */
vt_tensor *rt_make_rois(DLDataType dt, int64_t k, int layout, const double *values);

/* v[i] = uniform in [-1, 1) rounded to dt, for i < n, in order. */
void rt_fill_uniform(vt_rng *rng, DLDataType dt, double *v, int64_t n);

/* A random RoI on a map of mh x mw (image units) as box = {cx, cy, hw, hh}:
 * kind (drawn from [0, kinds)) 0 inside, 1 partly outside, 2 wholly outside,
 * 3 tiny (under a pixel at `scale`), 4 huge, 5 reversed (x2 < x1); kinds
 * from 6 on are left to the caller to shape. Returns the kind. */
int rt_roi_box(vt_rng *rng, int kinds, double mh, double mw, double scale, double box[4]);
/* r = {batch index drawn from [0, n), x1, y1, x2, y2} of box, rounded to dt. */
void rt_roi_store(vt_rng *rng, int64_t n, DLDataType dt, const double box[4], double r[5]);

/* Relative tolerance (per unit of magnitude, at least 1) of an op computed in
 * double for float64 and in float32 otherwise, half types rounding the result. */
double rt_tolerance(DLDataType dt);
/* One check: every got[i] within rt_tolerance of want[i]; a failure names
 * the first element that is not, reported at the caller's file:line. */
#define RT_COMPARE(what, dt, got, want, n, desc) \
  rt_compare(__FILE__, __LINE__, (what), (dt), (got), (want), (n), (desc))
int rt_compare(const char *file, int line, const char *what, DLDataType dt, const double *got,
               const double *want, int64_t n, const char *desc);

/* `call` fails with `status`, and the message names op and arg. */
#define RT_EXPECT_FAIL(op, call, status, arg) \
  do {                                        \
    if (CHECK_STATUS((call), (status))) {     \
      CHECK_ERROR_HAS(op);                    \
      CHECK_ERROR_HAS(arg);                   \
    }                                         \
  } while (0)

/* An invalid value for element [row, col] of a [2,5] rois tensor and the
 * message it must give. rt_bad_rois: batch indices out of range or not
 * integral, and every non-finite kind; rt_bad_rois_short: four of those. */
typedef struct rt_bad_roi {
  int64_t row, col;
  double value;
  const char *needle;
} rt_bad_roi;
#define RT_NUM_BAD_ROIS 8
#define RT_NUM_BAD_ROIS_SHORT 4
extern const rt_bad_roi rt_bad_rois[RT_NUM_BAD_ROIS];
extern const rt_bad_roi rt_bad_rois_short[RT_NUM_BAD_ROIS_SHORT];
/* A float32 [2,5] rois tensor of `values` with bad's element set. */
vt_tensor *rt_bad_rois_tensor(const rt_bad_roi *bad, const double values[10]);

/* ------------------------------------------------------------ references */

/* roi_align's bilinear sample at (y, x) on an h x w map (torchvision's
 * clamping): the 4 corners' flat positions and weights; returns 0 for a
 * sample outside the map (it adds nothing). */
int rt_bilinear(int64_t h, int64_t w, double y, double x, int64_t pos[4], double wt[4]);

/* ------------------------------------------------------------ position-sensitive */

/* The channel_mapping a ps forward writes, (c*PH + ph)*PW + pw, as a host
 * int32 tensor [k, cout, ph, pw]. */
vt_tensor *rt_ps_mapping(int64_t k, int64_t cout, int64_t ph, int64_t pw);
/* A ps op's shape query (4 checks): output and channel_mapping [k, cout,
 * ph, pw] on the CPU, of dtype dt and int32. */
#define RT_CHECK_PS_SHAPES(desc, dt, k, cout, ph, pw) \
  rt_check_ps_shapes(__FILE__, __LINE__, (desc), (dt), (k), (cout), (ph), (pw))
void rt_check_ps_shapes(const char *file, int line, const vo_tensor_desc desc[2], DLDataType dt,
                        int64_t k, int64_t cout, int64_t ph, int64_t pw);
/* One check: the int32 tensor m holds rt_ps_mapping(k, cout, ph, pw). */
#define RT_CHECK_PS_MAPPING(m, dt, k, cout, ph, pw) \
  rt_check_ps_mapping(__FILE__, __LINE__, (m), (dt), (k), (cout), (ph), (pw))
int rt_check_ps_mapping(const char *file, int line, const DLTensor *m, DLDataType dt, int64_t k,
                        int64_t cout, int64_t ph, int64_t pw);

#endif /* VISIONOPS_ROI_TEST_UTIL_H */
