/* kernels/exp.h's portable exp (the devices' exp), compiled as C, against
 * the C library's: the special values, the edges of the range (overflow,
 * the subnormal results, underflow to 0) and a million random arguments
 * across the whole range, within 1 ulp of exp (double) and, for float, the
 * float of exp(double) bit for bit but in at most 0.1% of cases (each
 * within 1 ulp). The devices run the same code (on PoCL in
 * test_opencl_soft_nms and test_opencl_matrix_nms, within an ulp of the
 * CPU's C-library exp), so this vouches for them. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/exp.h"
#include "test_util.h"

/* How many representable doubles lie between a and b (0: the same). */
static uint64_t ulps_f64(double a, double b) {
  if (a == b) return 0;
  int64_t x, y;
  memcpy(&x, &a, 8);
  memcpy(&y, &b, 8);
  if (x < 0) x = INT64_MIN - x;
  if (y < 0) y = INT64_MIN - y;
  return x > y ? (uint64_t)(x - y) : (uint64_t)(y - x);
}

static uint32_t ulps_f32(float a, float b) {
  if (a == b) return 0;
  int32_t x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  if (x < 0) x = INT32_MIN - x;
  if (y < 0) y = INT32_MIN - y;
  return x > y ? (uint32_t)(x - y) : (uint32_t)(y - x);
}

static void specials(void) {
  CHECK(vo_k_exp_f64(0.0) == 1.0 && vo_k_exp_f64(-0.0) == 1.0);
  CHECK(vo_k_exp_f32(0.0f) == 1.0f && vo_k_exp_f32(-0.0f) == 1.0f);
  CHECK(isnan(vo_k_exp_f64(NAN)) && isnan(vo_k_exp_f32(NAN)));
  CHECK(vo_k_exp_f64(INFINITY) == INFINITY && vo_k_exp_f64(-INFINITY) == 0.0);
  CHECK(vo_k_exp_f32(INFINITY) == INFINITY && vo_k_exp_f32(-INFINITY) == 0.0f);
  CHECK(vo_k_exp_f64(710.0) == INFINITY && vo_k_exp_f64(-746.0) == 0.0);
  CHECK(vo_k_exp_f32(89.0f) == INFINITY && vo_k_exp_f32(-105.0f) == 0.0f);
  CHECK(ulps_f64(vo_k_exp_f64(1.0), 2.718281828459045) <= 1);
  CHECK(vo_k_exp_f64(709.78) < INFINITY && vo_k_exp_f64(709.78) > 1e308);
  CHECK(vo_k_exp_f64(-745.0) > 0.0 && vo_k_exp_f64(-745.0) < DBL_MIN); /* subnormal */
  CHECK(vo_k_exp_f32(88.7f) < INFINITY && vo_k_exp_f32(-103.0f) > 0.0f);
}

/* exp(x) for x on a grid over [lo, hi] and uniform random ones in it. */
static void compare_range(vt_rng *rng, double lo, double hi, int n) {
  uint64_t worst64 = 0, differ64 = 0;
  uint32_t worst32 = 0, differ32 = 0, worst32_expf = 0;
  for (int i = 0; i < n; i++) {
    const double x = i % 2 ? lo + (hi - lo) * i / n : vt_rng_uniform(rng, lo, hi);
    const uint64_t u = ulps_f64(vo_k_exp_f64(x), exp(x));
    worst64 = u > worst64 ? u : worst64;
    differ64 += u != 0;
    const float xf = (float)x;
    if (xf < -103.9f || xf > 88.7f) continue;
    const uint32_t v = ulps_f32(vo_k_exp_f32(xf), (float)exp((double)xf));
    worst32 = v > worst32 ? v : worst32;
    differ32 += v != 0;
    const uint32_t w = ulps_f32(vo_k_exp_f32(xf), expf(xf));
    worst32_expf = w > worst32_expf ? w : worst32_expf;
  }
  printf(
      "exp on [%g, %g], %d arguments: double %llu differ from exp (worst %llu ulp), float %u "
      "from (float)exp (worst %u ulp; %u ulp from expf)\n",
      lo, hi, n, (unsigned long long)differ64, (unsigned long long)worst64, differ32, worst32,
      worst32_expf);
  CHECK_MSG(worst64 <= 1, "exp on [%g, %g]: %llu ulps from the C library's", lo, hi,
            (unsigned long long)worst64);
  CHECK_MSG(worst32 <= 1 && differ32 <= (uint32_t)n / 1000 + 2,
            "float exp on [%g, %g]: %u differ from (float)exp, worst %u ulps", lo, hi, differ32,
            worst32);
  CHECK_MSG(worst32_expf <= 1, "float exp on [%g, %g]: %u ulps from expf", lo, hi, worst32_expf);
}

int main(void) {
  specials();
  vt_rng rng;
  vt_rng_seed(&rng, 7);
  compare_range(&rng, -745.2, 709.8, 1000000); /* the whole range, subnormals and both edges */
  compare_range(&rng, -1, 0, 1000000);         /* the gaussian decays' arguments */
  compare_range(&rng, -104, 89, 1000000);      /* float's range */
  return vt_finish("test_exp");
}
