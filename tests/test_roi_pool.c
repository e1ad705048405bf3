/* roi_pool and roi_pool_backward on the CPU: against a scalar reference
 * written from SPEC.md, hand-checked values, special values, thread-count
 * determinism, and every validation error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roi_test_util.h"

/* One roi_pool problem, all values logical row-major doubles (already
 * representable in the dtype under test). */
typedef struct problem {
  int64_t n, c, h, w, k, ph, pw;
  double scale;
  double *input;   /* [n,c,h,w] */
  double *rois;    /* [k,5] */
  double *grad;    /* [k,c,ph,pw] */
  int32_t *argmax; /* [k,c,ph,pw], backward input */
} problem;

/* ------------------------------------------------------------ reference */

/* Bin i's [lo, hi) along one axis, from SPEC section 2: start = round(a *
 * scale), size = max(round(b * scale) - start + 1, 1), bin = size / pooled,
 * [floor(i*bin) + start, ceil((i+1)*bin) + start) clamped to [0, limit].
 * The arithmetic is done in the kernel's compute type (float for float32 and
 * the half types), as torchvision does, so bin edges agree exactly. */
static void ref_bin(int single, double scale, double a, double b, int64_t pooled, int64_t i,
                    int64_t limit, int64_t *lo, int64_t *hi) {
  int64_t start, end;
  if (single) {
    start = (int64_t)roundf((float)a * (float)scale);
    end = (int64_t)roundf((float)b * (float)scale);
  } else {
    start = (int64_t)round(a * scale);
    end = (int64_t)round(b * scale);
  }
  int64_t size = end - start + 1;
  if (size < 1) size = 1;
  int64_t l, h;
  if (single) {
    float bin = (float)size / (float)pooled;
    l = (int64_t)floorf((float)i * bin);
    h = (int64_t)ceilf((float)(i + 1) * bin);
  } else {
    double bin = (double)size / (double)pooled;
    l = (int64_t)floor((double)i * bin);
    h = (int64_t)ceil((double)(i + 1) * bin);
  }
  l += start;
  h += start;
  *lo = l < 0 ? 0 : l > limit ? limit : l;
  *hi = h < 0 ? 0 : h > limit ? limit : h;
}

static void ref_forward(const problem *pb, int single, double *out, int32_t *am) {
  for (int64_t k = 0; k < pb->k; k++) {
    const double *r = pb->rois + 5 * k;
    const int64_t b = (int64_t)r[0];
    for (int64_t c = 0; c < pb->c; c++) {
      const double *plane = pb->input + (b * pb->c + c) * pb->h * pb->w;
      for (int64_t ph = 0; ph < pb->ph; ph++) {
        int64_t h0, h1;
        ref_bin(single, pb->scale, r[2], r[4], pb->ph, ph, pb->h, &h0, &h1);
        for (int64_t pw = 0; pw < pb->pw; pw++) {
          int64_t w0, w1;
          ref_bin(single, pb->scale, r[1], r[3], pb->pw, pw, pb->w, &w0, &w1);
          double best = 0;
          int64_t idx = -1;
          int empty = h1 <= h0 || w1 <= w0;
          for (int64_t y = h0; y < h1; y++)
            for (int64_t x = w0; x < w1; x++) {
              double v = plane[y * pb->w + x];
              if (isnan(v)) continue;
              if (idx < 0 || v > best) {
                best = v;
                idx = y * pb->w + x;
              }
            }
          if (!empty && idx < 0) best = NAN;
          const int64_t o = ((k * pb->c + c) * pb->ph + ph) * pb->pw + pw;
          out[o] = best;
          am[o] = (int32_t)idx;
        }
      }
    }
  }
}

static void ref_backward(const problem *pb, double *gin) {
  memset(gin, 0, sizeof(double) * (size_t)(pb->n * pb->c * pb->h * pb->w));
  for (int64_t k = 0; k < pb->k; k++) {
    const int64_t b = (int64_t)pb->rois[5 * k];
    for (int64_t c = 0; c < pb->c; c++)
      for (int64_t i = 0; i < pb->ph * pb->pw; i++) {
        const int64_t o = (k * pb->c + c) * pb->ph * pb->pw + i;
        if (pb->argmax[o] >= 0) gin[(b * pb->c + c) * pb->h * pb->w + pb->argmax[o]] += pb->grad[o];
      }
  }
}

/* ------------------------------------------------------------ running */

static int is_single(DLDataType dt) { return dt.bits != 64; }

/* Runs the forward; out / am get the decoded outputs, raw (if not NULL) the
 * out bytes followed by the argmax bytes. */
static vo_status run_forward(const vo_context *ctx, DLDataType dt, int layout, const problem *pb,
                             double *out, int32_t *am, void *raw) {
  const int64_t in_shape[4] = {pb->n, pb->c, pb->h, pb->w};
  const int64_t out_shape[4] = {pb->k, pb->c, pb->ph, pb->pw};
  vt_tensor *in = rt_make_nchw(dt, in_shape, layout, pb->input);
  vt_tensor *rois = rt_make_rois(dt, pb->k, layout, pb->rois);
  vt_tensor *o = vt_tensor_new(dt, 4, out_shape, NULL);
  vt_tensor *a = vt_tensor_new(vt_i32, 4, out_shape, NULL);
  vt_fill(&o->dl, -77);
  vt_fill(&a->dl, -77);
  vo_tensor_desc desc[2];
  vo_status st =
      vo_roi_pool_shape(ctx, &in->dl, &rois->dl, pb->scale, pb->ph, pb->pw, &desc[0], &desc[1]);
  if (CHECK_STATUS(st, VO_OK)) {
    for (int i = 0; i < 2; i++) {
      CHECK(desc[i].ndim == 4 && desc[i].shape[0] == pb->k && desc[i].shape[1] == pb->c &&
            desc[i].shape[2] == pb->ph && desc[i].shape[3] == pb->pw);
      CHECK(desc[i].device.device_type == kDLCPU);
    }
    CHECK(desc[0].dtype.code == dt.code && desc[0].dtype.bits == dt.bits);
    CHECK(desc[1].dtype.code == kDLInt && desc[1].dtype.bits == 32 && desc[1].dtype.lanes == 1);
  }
  st = vo_roi_pool(ctx, &in->dl, &rois->dl, pb->scale, pb->ph, pb->pw, &o->dl, &a->dl);
  const int64_t n = vt_numel(&o->dl);
  if (st == VO_OK) { /* argmax omitted: the same maxima, bit for bit */
    vt_tensor *o2 = vt_tensor_new(dt, 4, out_shape, NULL);
    vt_fill(&o2->dl, -55);
    if (CHECK_STATUS(vo_roi_pool(ctx, &in->dl, &rois->dl, pb->scale, pb->ph, pb->pw, &o2->dl, NULL),
                     VO_OK))
      CHECK_MSG(memcmp(o->dl.data, o2->dl.data, (size_t)n * vt_dtype_bytes(dt)) == 0,
                "roi_pool %s: the maxima differ with argmax omitted", vt_dtype_name(dt));
    vt_tensor_free(o2);
  }
  vt_read_all(&o->dl, out);
  for (int64_t i = 0; i < n; i++) am[i] = ((const int32_t *)a->dl.data)[i];
  if (raw) {
    memcpy(raw, o->dl.data, (size_t)n * vt_dtype_bytes(dt));
    memcpy((char *)raw + (size_t)n * vt_dtype_bytes(dt), a->dl.data, (size_t)n * 4);
  }
  vt_tensor_free(in);
  vt_tensor_free(rois);
  vt_tensor_free(o);
  vt_tensor_free(a);
  return st;
}

static vo_status run_backward(const vo_context *ctx, DLDataType dt, int layout, const problem *pb,
                              double *gin, void *raw) {
  const int64_t g_shape[4] = {pb->k, pb->c, pb->ph, pb->pw};
  const int64_t in_shape[4] = {pb->n, pb->c, pb->h, pb->w};
  const int64_t ng = pb->k * pb->c * pb->ph * pb->pw;
  double *amd = malloc(sizeof(double) * (size_t)(ng > 0 ? ng : 1));
  for (int64_t i = 0; i < ng; i++) amd[i] = pb->argmax[i];
  vt_tensor *g = rt_make_nchw(dt, g_shape, layout, pb->grad);
  vt_tensor *a = rt_make_nchw(vt_i32, g_shape, layout, amd);
  vt_tensor *rois = rt_make_rois(dt, pb->k, LAYOUT_CONTIGUOUS, pb->rois);
  vt_tensor *o = vt_tensor_new(dt, 4, in_shape, NULL);
  vt_fill(&o->dl, -77); /* must be overwritten everywhere */
  vo_status st = vo_roi_pool_backward(ctx, &g->dl, &rois->dl, &a->dl, pb->scale, pb->ph, pb->pw,
                                      pb->n, pb->c, pb->h, pb->w, &o->dl);
  vt_read_all(&o->dl, gin);
  if (raw) memcpy(raw, o->dl.data, (size_t)vt_numel(&o->dl) * vt_dtype_bytes(dt));
  free(amd);
  vt_tensor_free(g);
  vt_tensor_free(a);
  vt_tensor_free(rois);
  vt_tensor_free(o);
  return st;
}

static double tolerance(DLDataType dt) {
  if (dt.bits == 64) return 1e-12;
  if (dt.code == kDLFloat && dt.bits == 32) return 1e-5;
  if (dt.code == kDLBfloat) return 1e-2;
  return 2e-3;
}

/* Forward outputs must match the reference exactly (a maximum is one of the
 * inputs); NaN matches NaN. */
static int compare_forward(DLDataType dt, const double *got, const int32_t *gam, const double *want,
                           const int32_t *wam, int64_t n, const char *desc) {
  for (int64_t i = 0; i < n; i++) {
    int same = (isnan(got[i]) && isnan(want[i])) || got[i] == want[i];
    if (!same || gam[i] != wam[i]) {
      CHECK_MSG(0, "forward %s [%s]: element %lld = %.9g argmax %d, reference %.9g argmax %d",
                vt_dtype_name(dt), desc, (long long)i, got[i], (int)gam[i], want[i], (int)wam[i]);
      return 0;
    }
  }
  return vt_pass();
}

static int compare_backward(DLDataType dt, const double *got, const double *want, int64_t n,
                            const char *desc) {
  const double tol = tolerance(dt);
  for (int64_t i = 0; i < n; i++) {
    if (!(fabs(got[i] - want[i]) <= tol * fmax(1, fabs(want[i])))) {
      CHECK_MSG(0, "backward %s [%s]: element %lld = %.9g, reference %.9g", vt_dtype_name(dt), desc,
                (long long)i, got[i], want[i]);
      return 0;
    }
  }
  return vt_pass();
}

/* ------------------------------------------------------------ hand-checked */

/* Channel 0: value x + 4y + 1 on a 4x4 map; channel 1: 7 everywhere (ties:
 * the first element of each bin in row-major order wins).
 * (a) RoI (0,0)-(3,3), 2x2 bins: size 3-0+1 = 4, bin 2: rows/cols [0,2),
 *     [2,4); maxima at (1,1), (1,3), (3,1), (3,3): 6, 8, 14, 16, argmax 5,
 *     7, 13, 15. Channel 1: bin top-left corners 0, 2, 8, 10.
 * (b) RoI (0.4, 0.6)-(1.5, 2.5), 1x1: rounding half away from zero gives x
 *     0..2, y 1..3 (banker's rounding would end at y = 2): max at (3,2) = 15,
 *     argmax 14; channel 1: first is (1,0), argmax 4.
 * (c) RoI (-2.5, -0.5)-(0.4, 0.4), 2x2: x -3..0 (size 4, bin 2), y -1..0
 *     (size 2, bin 1). Rows: [-1,0) -> empty, [0,1). Columns: [-3,-1) ->
 *     empty, [-1,1) -> [0,1). Only bin (1,1) is non-empty: (0,0), value 1 /
 *     7, argmax 0; the others 0 and -1.
 * Backward of (a) twice with grad 1 (two RoIs): 2 at its argmax positions. */
static void hand_checked(void) {
  double input[32];
  for (int i = 0; i < 16; i++) input[i] = (double)i + 1;
  for (int i = 16; i < 32; i++) input[i] = 7;
  struct {
    double roi[5];
    int64_t ph, pw;
    double want[8];
    int32_t am[8];
  } cases[] = {
      {{0, 0, 0, 3, 3}, 2, 2, {6, 8, 14, 16, 7, 7, 7, 7}, {5, 7, 13, 15, 0, 2, 8, 10}},
      {{0, 0.4, 0.6, 1.5, 2.5}, 1, 1, {15, 7}, {14, 4}},
      {{0, -2.5, -0.5, 0.4, 0.4}, 2, 2, {0, 0, 0, 1, 0, 0, 0, 7}, {-1, -1, -1, 0, -1, -1, -1, 0}},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    for (int d = 0; d < RT_NUM_DTYPES; d++) {
      problem pb = {1,    2,   4, 4, 1, cases[ci].ph, cases[ci].pw, 1.0, input, cases[ci].roi,
                    NULL, NULL};
      double out[8] = {0};
      int32_t am[8] = {0};
      if (!CHECK_STATUS(run_forward(NULL, *rt_dtypes[d], LAYOUT_CONTIGUOUS, &pb, out, am, NULL),
                        VO_OK))
        continue;
      for (int64_t i = 0; i < 2 * pb.ph * pb.pw; i++)
        CHECK_MSG(out[i] == cases[ci].want[i] && am[i] == cases[ci].am[i],
                  "hand case %zu %s: out[%lld] = %g argmax %d, want %g argmax %d", ci,
                  vt_dtype_name(*rt_dtypes[d]), (long long)i, out[i], (int)am[i], cases[ci].want[i],
                  (int)cases[ci].am[i]);
    }
  }
  /* backward: two copies of RoI (a), grad 1 everywhere */
  double rois[10] = {0, 0, 0, 3, 3, 0, 0, 0, 3, 3};
  double grad[16];
  int32_t am[16] = {5, 7, 13, 15, 0, 2, 8, 10, 5, 7, 13, 15, 0, 2, 8, 10};
  for (int i = 0; i < 16; i++) grad[i] = 1;
  for (int d = 0; d < RT_NUM_DTYPES; d++) {
    problem pb = {1, 2, 4, 4, 2, 2, 2, 1.0, input, rois, grad, am};
    double gin[32] = {0};
    if (!CHECK_STATUS(run_backward(NULL, *rt_dtypes[d], LAYOUT_CONTIGUOUS, &pb, gin, NULL), VO_OK))
      continue;
    for (int i = 0; i < 32; i++) {
      int hit = i == 5 || i == 7 || i == 13 || i == 15 || i == 16 || i == 18 || i == 24 || i == 26;
      CHECK_MSG(gin[i] == (hit ? 2 : 0), "hand backward %s: grad_input[%d] = %g",
                vt_dtype_name(*rt_dtypes[d]), i, gin[i]);
    }
  }
}

/* NaN is skipped, a bin of only NaN gives NaN and -1, -inf is a real value
 * (a bin of only -inf gives -inf at its first element). */
static void special_values(void) {
  /* 1 channel, 2x4 map; RoI over all of it, 1x2 bins: columns [0,2), [2,4) */
  double input[8] = {NAN, 3, -INFINITY, -INFINITY, NAN, 3, -INFINITY, -INFINITY};
  double roi[5] = {0, 0, 0, 3, 1};
  for (int d = 0; d < RT_NUM_DTYPES; d++) {
    problem pb = {1, 1, 2, 4, 1, 1, 2, 1.0, input, roi, NULL, NULL};
    double out[2] = {0};
    int32_t am[2] = {0};
    if (!CHECK_STATUS(run_forward(NULL, *rt_dtypes[d], LAYOUT_CONTIGUOUS, &pb, out, am, NULL),
                      VO_OK))
      continue;
    CHECK_MSG(out[0] == 3 && am[0] == 1, "%s: NaN bin: %g argmax %d", vt_dtype_name(*rt_dtypes[d]),
              out[0], (int)am[0]);
    CHECK_MSG(out[1] == -INFINITY && am[1] == 2, "%s: -inf bin: %g argmax %d",
              vt_dtype_name(*rt_dtypes[d]), out[1], (int)am[1]);
    double nan_in[8];
    for (int i = 0; i < 8; i++) nan_in[i] = NAN;
    pb.input = nan_in;
    if (CHECK_STATUS(run_forward(NULL, *rt_dtypes[d], LAYOUT_CONTIGUOUS, &pb, out, am, NULL),
                     VO_OK))
      CHECK_MSG(isnan(out[0]) && am[0] == -1 && isnan(out[1]) && am[1] == -1,
                "%s: all-NaN bins: %g %d %g %d", vt_dtype_name(*rt_dtypes[d]), out[0], (int)am[0],
                out[1], (int)am[1]);
  }
  /* float64 values below -FLT_MAX are real maxima (torchvision starts at -FLT_MAX) */
  double big[8] = {-1e300, -1e301, -1e302, -1e303, -1e304, -1e305, -1e306, -1e307};
  problem pb = {1, 1, 2, 4, 1, 1, 2, 1.0, big, roi, NULL, NULL};
  double out[2] = {0};
  int32_t am[2] = {0};
  if (CHECK_STATUS(run_forward(NULL, vt_f64, LAYOUT_CONTIGUOUS, &pb, out, am, NULL), VO_OK))
    CHECK_MSG(out[0] == -1e300 && am[0] == 0 && out[1] == -1e302 && am[1] == 2,
              "float64 below -FLT_MAX: %g %d %g %d", out[0], (int)am[0], out[1], (int)am[1]);
}

/* ------------------------------------------------------------ random */

/* RoIs of every kind: inside, partly outside, wholly outside, tiny, huge,
 * reversed (x2 < x1), and with corners on .5 (rounding ties). */
static void gen_roi(vt_rng *rng, const problem *pb, DLDataType dt, double *r) {
  const double mh = (double)pb->h / pb->scale, mw = (double)pb->w / pb->scale;
  double box[4]; /* cx, cy, hw, hh */
  const int kind = rt_roi_box(rng, 7, mh, mw, pb->scale, box);
  rt_roi_store(rng, pb->n, dt, box, r);
  if (kind == 6) /* scaled corners exactly on .5 */
    for (int j = 1; j < 5; j++) r[j] = vt_round_to(dt, (floor(r[j] * pb->scale) + 0.5) / pb->scale);
}

static void random_cases(const vo_context *ctx1, const vo_context *ctx2) {
  static const double scales[3] = {1.0, 0.5, 0.25};
  static const int64_t sizes[3][4] = {{7, 9, 3, 2}, {5, 11, 2, 3}, {13, 6, 4, 5}}; /* h w ph pw */
  for (uint64_t seed = 1; seed <= 3; seed++) {
    for (int d = 0; d < RT_NUM_DTYPES; d++) {
      const DLDataType dt = *rt_dtypes[d];
      for (int ties = 0; ties < 2; ties++) {
        vt_rng rng;
        vt_rng_seed(&rng, seed * 1000 + (uint64_t)(d * 10 + ties));
        const int64_t *sz = sizes[seed - 1];
        problem pb = {2,    3,    sz[0], sz[1], 11, sz[2], sz[3], scales[seed - 1],
                      NULL, NULL, NULL,  NULL};
        const int64_t nin = pb.n * pb.c * pb.h * pb.w, nout = pb.k * pb.c * pb.ph * pb.pw;
        pb.input = malloc(sizeof(double) * (size_t)nin);
        pb.rois = malloc(sizeof(double) * (size_t)(5 * pb.k));
        pb.grad = malloc(sizeof(double) * (size_t)nout);
        pb.argmax = malloc(sizeof(int32_t) * (size_t)nout);
        /* ties: a few distinct values, so bins hold repeated maxima */
        for (int64_t i = 0; i < nin; i++)
          pb.input[i] = ties ? (double)(vt_rng_int(&rng, 4) - 2)
                             : vt_round_to(dt, vt_rng_uniform(&rng, -1, 1));
        rt_fill_uniform(&rng, dt, pb.grad, nout);
        for (int64_t k = 0; k < pb.k; k++) gen_roi(&rng, &pb, dt, pb.rois + 5 * k);
        double *want = malloc(sizeof(double) * (size_t)nout);
        double *got = malloc(sizeof(double) * (size_t)nout);
        int32_t *wam = malloc(sizeof(int32_t) * (size_t)nout);
        int32_t *gam = malloc(sizeof(int32_t) * (size_t)nout);
        double *gwant = malloc(sizeof(double) * (size_t)nin);
        double *ggot = malloc(sizeof(double) * (size_t)nin);
        const size_t esz = vt_dtype_bytes(dt);
        const size_t rawsz = (esz + 4) * (size_t)(nin > nout ? nin : nout);
        unsigned char *raw1 = malloc(rawsz), *raw2 = malloc(rawsz);
        ref_forward(&pb, is_single(dt), want, wam);
        char desc[96];
        for (int layout = 0; layout < NUM_LAYOUTS; layout++) {
          snprintf(desc, sizeof desc, "seed %llu ties %d layout %d", (unsigned long long)seed, ties,
                   layout);
          if (CHECK_STATUS(run_forward(ctx1, dt, layout, &pb, got, gam, raw1), VO_OK))
            compare_forward(dt, got, gam, want, wam, nout, desc);
          if (CHECK_STATUS(run_forward(ctx2, dt, layout, &pb, got, gam, raw2), VO_OK))
            CHECK_MSG(memcmp(raw1, raw2, (esz + 4) * (size_t)nout) == 0,
                      "forward %s [%s]: 1 and 2 threads differ", vt_dtype_name(dt), desc);
          /* backward with the forward's argmax, then with random indices
           * (collisions and -1) */
          for (int which = 0; which < 2; which++) {
            for (int64_t i = 0; i < nout; i++)
              pb.argmax[i] = which ? (int32_t)(vt_rng_int(&rng, pb.h * pb.w + 1) - 1) : wam[i];
            ref_backward(&pb, gwant);
            if (CHECK_STATUS(run_backward(ctx1, dt, layout, &pb, ggot, raw1), VO_OK))
              compare_backward(dt, ggot, gwant, nin, desc);
            if (CHECK_STATUS(run_backward(ctx2, dt, layout, &pb, ggot, raw2), VO_OK))
              CHECK_MSG(memcmp(raw1, raw2, esz * (size_t)nin) == 0,
                        "backward %s [%s]: 1 and 2 threads differ", vt_dtype_name(dt), desc);
          }
        }
        free(raw1);
        free(raw2);
        free(want);
        free(got);
        free(wam);
        free(gam);
        free(gwant);
        free(ggot);
        free(pb.input);
        free(pb.rois);
        free(pb.grad);
        free(pb.argmax);
      }
    }
  }
}

/* ------------------------------------------------------------ kernel paths */

/* The forward has a channels-last path (the input directly when its channel
 * stride is 1, else a workspace tile of the box of each image its RoIs read,
 * for a block of channels; AVX-512, AVX2 or plain C bins) and the NCHW
 * scan, taken when a cost model finds it cheaper or the tile does not fit
 * the workspace limit. Every path must give the same bytes: 70 or 88
 * channels (blocks of 64 and 6 or 24, so full vectors, partial or masked
 * vectors and a scalar tail), NaN, infinities, signed zeros and ties among
 * the values. Contexts: 1 and 2 threads, scalar ISA, a limit that shrinks
 * the block to 8 channels (float) or forces the scan (float64), a 1-byte
 * limit (always the scan for NCHW input), and AVX2 (on AVX-512 CPUs). The
 * backward runs on each context too. Three sets of RoIs: every kind on a
 * small map (channels-last), two tiny RoIs in opposite corners of image 1 of
 * a larger map (the scan), and 40 overlapping RoIs clustered inside image 1
 * (channels-last over a box that starts inside the map; image 0 reads
 * nothing). */
enum { PATHS_MIXED, PATHS_SPARSE, PATHS_CLUSTERED, PATHS_SETS };

static void paths_rois(vt_rng *rng, int set, const problem *pb, DLDataType dt) {
  for (int64_t k = 0; k < pb->k; k++) {
    double *r = pb->rois + 5 * k;
    if (set == PATHS_MIXED) {
      gen_roi(rng, pb, dt, r);
      continue;
    }
    double y = 1, x = 1, side = 3; /* map units */
    if (set == PATHS_SPARSE && k == 1) {
      y = (double)pb->h - 5;
      x = (double)pb->w - 5;
    } else if (set == PATHS_CLUSTERED) {
      y = 10 + vt_rng_uniform(rng, 0, 10);
      x = 20 + vt_rng_uniform(rng, 0, 12);
      side = 6 + vt_rng_uniform(rng, 0, 12);
    }
    r[0] = 1;
    r[1] = vt_round_to(dt, x / pb->scale);
    r[2] = vt_round_to(dt, y / pb->scale);
    r[3] = vt_round_to(dt, (x + side) / pb->scale);
    r[4] = vt_round_to(dt, (y + side * 0.8) / pb->scale);
  }
}

static void paths(void) {
  enum { NCTX = 8 };
  vo_context *ctx[NCTX];
  for (int i = 0; i < NCTX; i++) {
    CHECK_STATUS(vo_context_create(&ctx[i]), VO_OK);
    CHECK_STATUS(vo_context_set_num_threads(ctx[i], i % 2 ? 2 : 1), VO_OK);
  }
  CHECK_STATUS(vo_context_set_isa(ctx[2], VO_ISA_SCALAR), VO_OK);
  CHECK_STATUS(vo_context_set_isa(ctx[3], VO_ISA_SCALAR), VO_OK);
  CHECK_STATUS(vo_context_set_workspace_limit(ctx[4], 8192), VO_OK);
  CHECK_STATUS(vo_context_set_workspace_limit(ctx[5], 1), VO_OK);
  /* AVX2 where the default is AVX-512: both loops of the channels-last bin */
  CHECK_STATUS(vo_context_set_isa(ctx[6], VO_ISA_AVX2), VO_OK);
  CHECK_STATUS(vo_context_set_isa(ctx[7], VO_ISA_AVX2), VO_OK);
  static const double specials[7] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0};
  static const problem shapes[PATHS_SETS] = {
      {2, 70, 9, 11, 13, 3, 4, 0.5, NULL, NULL, NULL, NULL},
      {2, 70, 40, 48, 2, 3, 4, 0.5, NULL, NULL, NULL, NULL},
      {2, 88, 40, 48, 40, 3, 4, 0.5, NULL, NULL, NULL, NULL}};
  for (int sd = 0; sd < PATHS_SETS * RT_NUM_DTYPES; sd++) {
    const int set = sd / RT_NUM_DTYPES, d = sd % RT_NUM_DTYPES;
    const DLDataType dt = *rt_dtypes[d];
    vt_rng rng;
    vt_rng_seed(&rng, 777 + (uint64_t)sd);
    problem pb = shapes[set];
    const int64_t nin = pb.n * pb.c * pb.h * pb.w, nout = pb.k * pb.c * pb.ph * pb.pw;
    pb.input = malloc(sizeof(double) * (size_t)nin);
    pb.rois = malloc(sizeof(double) * (size_t)(5 * pb.k));
    pb.grad = malloc(sizeof(double) * (size_t)nout);
    pb.argmax = malloc(sizeof(int32_t) * (size_t)nout);
    for (int64_t i = 0; i < nin; i++) {
      const int64_t kind = vt_rng_int(&rng, 10);
      pb.input[i] = kind < 2   ? specials[vt_rng_int(&rng, 7)]
                    : kind < 5 ? (double)(vt_rng_int(&rng, 3) - 1)
                               : vt_round_to(dt, vt_rng_uniform(&rng, -1, 1));
    }
    /* a few channels entirely NaN in one image: all-NaN bins in vector lanes */
    for (int64_t c = 3; c < pb.c; c += 17)
      for (int64_t i = 0; i < pb.h * pb.w; i++) pb.input[c * pb.h * pb.w + i] = NAN;
    rt_fill_uniform(&rng, dt, pb.grad, nout);
    paths_rois(&rng, set, &pb, dt);
    double *want = malloc(sizeof(double) * (size_t)nout);
    double *got = malloc(sizeof(double) * (size_t)nout);
    int32_t *wam = malloc(sizeof(int32_t) * (size_t)nout);
    int32_t *gam = malloc(sizeof(int32_t) * (size_t)nout);
    double *gin = malloc(sizeof(double) * (size_t)nin);
    const size_t esz = vt_dtype_bytes(dt);
    const size_t fsz = (esz + 4) * (size_t)nout, bsz = esz * (size_t)nin;
    unsigned char *raw0 = malloc(fsz), *raw = malloc(fsz);
    unsigned char *graw0 = malloc(bsz), *graw = malloc(bsz);
    ref_forward(&pb, is_single(dt), want, wam);
    for (int layout = 0; layout < NUM_LAYOUTS; layout++) {
      for (int i = 0; i < NCTX; i++) {
        char desc[64];
        snprintf(desc, sizeof desc, "paths set %d layout %d context %d", set, layout, i);
        if (!CHECK_STATUS(run_forward(ctx[i], dt, layout, &pb, got, gam, i ? raw : raw0), VO_OK))
          continue;
        if (i == 0)
          compare_forward(dt, got, gam, want, wam, nout, desc);
        else
          CHECK_MSG(memcmp(raw0, raw, fsz) == 0, "forward %s [%s]: differs from context 0",
                    vt_dtype_name(dt), desc);
        for (int64_t j = 0; j < nout; j++) pb.argmax[j] = gam[j];
        if (CHECK_STATUS(run_backward(ctx[i], dt, layout, &pb, gin, i ? graw : graw0), VO_OK) && i)
          CHECK_MSG(memcmp(graw0, graw, bsz) == 0, "backward %s [%s]: differs from context 0",
                    vt_dtype_name(dt), desc);
      }
    }
    free(raw0);
    free(raw);
    free(graw0);
    free(graw);
    free(want);
    free(got);
    free(wam);
    free(gam);
    free(gin);
    free(pb.input);
    free(pb.rois);
    free(pb.grad);
    free(pb.argmax);
  }
  for (int i = 0; i < NCTX; i++) vo_context_destroy(ctx[i]);
}

/* A float32 output of 16 MB and more (with argmax) is gathered per RoI and
 * streamed out: 700 RoIs x 70 channels x 7x7 bins, 32-bin groups across bin
 * rows, 8x8 blocks and their tails (70 = 64 + 6 channels). The reference,
 * then every path (AVX-512, AVX2, scalar, the scan under a small workspace
 * limit) bit-identical, argmax omitted or not (run_forward). */
static void streamed(void) {
  enum { NCTX = 4 };
  vo_context *ctx[NCTX];
  for (int i = 0; i < NCTX; i++) {
    CHECK_STATUS(vo_context_create(&ctx[i]), VO_OK);
    CHECK_STATUS(vo_context_set_num_threads(ctx[i], 2), VO_OK);
  }
  CHECK_STATUS(vo_context_set_isa(ctx[1], VO_ISA_AVX2), VO_OK);
  CHECK_STATUS(vo_context_set_isa(ctx[2], VO_ISA_SCALAR), VO_OK);
  CHECK_STATUS(vo_context_set_workspace_limit(ctx[3], 1), VO_OK);
  problem pb = {1, 70, 24, 26, 700, 7, 7, 0.5, NULL, NULL, NULL, NULL};
  const int64_t nin = pb.n * pb.c * pb.h * pb.w, nout = pb.k * pb.c * pb.ph * pb.pw;
  vt_rng rng;
  vt_rng_seed(&rng, 4711);
  pb.input = malloc(sizeof(double) * (size_t)nin);
  pb.rois = malloc(sizeof(double) * (size_t)(5 * pb.k));
  for (int64_t i = 0; i < nin; i++)
    pb.input[i] =
        vt_rng_int(&rng, 10) == 0 ? NAN : vt_round_to(vt_f32, vt_rng_uniform(&rng, -1, 1));
  for (int64_t k = 0; k < pb.k; k++) gen_roi(&rng, &pb, vt_f32, pb.rois + 5 * k);
  double *want = malloc(sizeof(double) * (size_t)nout),
         *got = malloc(sizeof(double) * (size_t)nout);
  int32_t *wam = malloc(sizeof(int32_t) * (size_t)nout),
          *gam = malloc(sizeof(int32_t) * (size_t)nout);
  const size_t bytes = 8 * (size_t)nout;
  unsigned char *raw0 = malloc(bytes), *raw = malloc(bytes);
  ref_forward(&pb, 1, want, wam);
  for (int i = 0; i < NCTX; i++) {
    char desc[64];
    snprintf(desc, sizeof desc, "streamed outputs, context %d", i);
    if (!CHECK_STATUS(run_forward(ctx[i], vt_f32, LAYOUT_CONTIGUOUS, &pb, got, gam, i ? raw : raw0),
                      VO_OK))
      continue;
    if (i == 0)
      compare_forward(vt_f32, got, gam, want, wam, nout, desc);
    else
      CHECK_MSG(memcmp(raw0, raw, bytes) == 0, "%s: differs from context 0", desc);
  }
  free(raw0);
  free(raw);
  free(want);
  free(got);
  free(wam);
  free(gam);
  free(pb.input);
  free(pb.rois);
  for (int i = 0; i < NCTX; i++) vo_context_destroy(ctx[i]);
}

/* ------------------------------------------------------------ errors */

#define EXPECT_FAIL(call, status, arg) RT_EXPECT_FAIL("roi_pool", call, status, arg)

static void errors(void) {
  const int64_t in_shape[4] = {2, 3, 4, 5}, roi_shape[2] = {2, 5}, out_shape[4] = {2, 3, 2, 2};
  const double roi_values[10] = {0, 0, 0, 2, 2, 1, 1, 1, 3, 3};
  vt_tensor *in = vt_tensor_new(vt_f32, 4, in_shape, NULL);
  vt_tensor *rois = vt_tensor_new(vt_f32, 2, roi_shape, roi_values);
  vt_tensor *out = vt_tensor_new(vt_f32, 4, out_shape, NULL);
  vt_tensor *am = vt_tensor_new(vt_i32, 4, out_shape, NULL);
  vt_tensor *gin = vt_tensor_new(vt_f32, 4, in_shape, NULL);
  vt_tensor *g = vt_tensor_new(vt_f32, 4, out_shape, NULL);
  vt_tensor *ga = vt_tensor_new(vt_i32, 4, out_shape, NULL); /* argmax input: zeros */
  const DLTensor *I = &in->dl, *R = &rois->dl, *G = &g->dl, *GA = &ga->dl;
  DLTensor *O = &out->dl, *A = &am->dl, *GI = &gin->dl;

  CHECK_STATUS(vo_roi_pool(NULL, I, R, 1.0, 2, 2, O, A), VO_OK);
  CHECK_STATUS(vo_roi_pool_backward(NULL, G, R, GA, 1.0, 2, 2, 2, 3, 4, 5, GI), VO_OK);
  vt_fill(O, 55.5);
  vt_fill(A, 55);
  vt_fill(GI, 55.5);

  /* shapes */
  const int64_t s3[3] = {3, 4, 5}, r4[2] = {2, 4};
  vt_tensor *in3 = vt_tensor_new(vt_f32, 3, s3, NULL);
  vt_tensor *rois4 = vt_tensor_new(vt_f32, 2, r4, NULL);
  EXPECT_FAIL(vo_roi_pool(NULL, &in3->dl, R, 1.0, 2, 2, O, A), VO_ERROR_INVALID_ARGUMENT, "input");
  EXPECT_FAIL(vo_roi_pool(NULL, I, &rois4->dl, 1.0, 2, 2, O, A), VO_ERROR_INVALID_ARGUMENT, "rois");
  /* pooled sizes, scale */
  EXPECT_FAIL(vo_roi_pool(NULL, I, R, 1.0, 0, 2, O, A), VO_ERROR_INVALID_ARGUMENT, "pooled_height");
  EXPECT_FAIL(vo_roi_pool(NULL, I, R, 1.0, 2, -3, O, A), VO_ERROR_INVALID_ARGUMENT, "pooled_width");
  EXPECT_FAIL(vo_roi_pool(NULL, I, R, -1.0, 2, 2, O, A), VO_ERROR_INVALID_ARGUMENT,
              "spatial_scale");
  EXPECT_FAIL(vo_roi_pool(NULL, I, R, 0.0, 2, 2, O, A), VO_ERROR_INVALID_ARGUMENT, "spatial_scale");
  EXPECT_FAIL(vo_roi_pool(NULL, I, R, NAN, 2, 2, O, A), VO_ERROR_INVALID_ARGUMENT, "spatial_scale");
  EXPECT_FAIL(vo_roi_pool(NULL, I, R, INFINITY, 2, 2, O, A), VO_ERROR_INVALID_ARGUMENT,
              "spatial_scale");
  /* batch indices and coordinates */
  for (size_t i = 0; i < RT_NUM_BAD_ROIS; i++) {
    const rt_bad_roi *bad = &rt_bad_rois[i];
    vt_tensor *r = rt_bad_rois_tensor(bad, roi_values);
    EXPECT_FAIL(vo_roi_pool(NULL, I, &r->dl, 1.0, 2, 2, O, A), VO_ERROR_INVALID_ARGUMENT,
                bad->needle);
    EXPECT_FAIL(vo_roi_pool_backward(NULL, G, &r->dl, GA, 1.0, 2, 2, 2, 3, 4, 5, GI),
                VO_ERROR_INVALID_ARGUMENT, bad->needle);
    vt_tensor_free(r);
  }
  /* backward: batch index against batch_size */
  EXPECT_FAIL(vo_roi_pool_backward(NULL, G, R, GA, 1.0, 2, 2, 1, 3, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "rois[1, 0] = 1 is not a batch index of input with N = 1");
  /* backward: grad and argmax shapes, argmax dtype and values, sizes */
  EXPECT_FAIL(vo_roi_pool_backward(NULL, G, R, GA, 1.0, 3, 2, 2, 3, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "grad");
  EXPECT_FAIL(vo_roi_pool_backward(NULL, G, R, GA, 1.0, 2, 2, 2, 4, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "grad");
  EXPECT_FAIL(vo_roi_pool_backward(NULL, G, &rois4->dl, GA, 1.0, 2, 2, 2, 3, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "rois");
  EXPECT_FAIL(vo_roi_pool_backward(NULL, &in3->dl, R, GA, 1.0, 2, 2, 2, 3, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "grad");
  const int64_t a_bad_shape[4] = {2, 3, 2, 3};
  vt_tensor *a_shape = vt_tensor_new(vt_i32, 4, a_bad_shape, NULL);
  EXPECT_FAIL(vo_roi_pool_backward(NULL, G, R, &a_shape->dl, 1.0, 2, 2, 2, 3, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "argmax must have shape [2, 3, 2, 2]");
  vt_tensor *a_i64 = vt_tensor_new(vt_i64, 4, out_shape, NULL);
  EXPECT_FAIL(vo_roi_pool_backward(NULL, G, R, &a_i64->dl, 1.0, 2, 2, 2, 3, 4, 5, GI),
              VO_ERROR_UNSUPPORTED_DTYPE, "argmax must be int32");
  vt_tensor *a_f32 = vt_tensor_new(vt_f32, 4, out_shape, NULL);
  EXPECT_FAIL(vo_roi_pool_backward(NULL, G, R, &a_f32->dl, 1.0, 2, 2, 2, 3, 4, 5, GI),
              VO_ERROR_UNSUPPORTED_DTYPE, "argmax");
  struct {
    int64_t index;
    double value;
    const char *needle;
  } bad_am[] = {
      {5, -2, "argmax[0, 1, 0, 1] = -2 is neither -1 nor an index in [0, H*W = 20)"},
      {0, 20, "argmax[0, 0, 0, 0] = 20 is neither -1"},
      {23, 2147483647.0, "argmax[1, 2, 1, 1] = 2147483647"},
      {12, -2147483648.0, "argmax[1, 0, 0, 0] = -2147483648"},
  };
  for (size_t i = 0; i < sizeof bad_am / sizeof bad_am[0]; i++) {
    vt_tensor *a = vt_tensor_new(vt_i32, 4, out_shape, NULL);
    vt_set(&a->dl, bad_am[i].index, bad_am[i].value);
    EXPECT_FAIL(vo_roi_pool_backward(NULL, G, R, &a->dl, 1.0, 2, 2, 2, 3, 4, 5, GI),
                VO_ERROR_INVALID_ARGUMENT, bad_am[i].needle);
    vt_tensor_free(a);
  }
  /* a large argmax is checked on several threads, in pieces: the item
   * reported is still the first bad one (two bad values in different
   * pieces, the later one found first by whichever thread gets there) */
  {
    enum { K = 4000, C = 64 };
    const int64_t ga_shape[4] = {K, C, 2, 2}, r_shape[2] = {K, 5}, gi_shape[4] = {1, C, 4, 4};
    vt_tensor *gl = vt_tensor_new(vt_f32, 4, ga_shape, NULL);
    vt_tensor *al = vt_tensor_new(vt_i32, 4, ga_shape, NULL);
    vt_tensor *rl = vt_tensor_new(vt_f32, 2, r_shape, NULL);
    vt_tensor *gil = vt_tensor_new(vt_f32, 4, gi_shape, NULL);
    vo_context *two = NULL;
    CHECK_STATUS(vo_context_create(&two), VO_OK);
    CHECK_STATUS(vo_context_set_num_threads(two, 2), VO_OK);
    static const int64_t early = 400001, late = 900003;
    const int64_t at[2] = {late, early};
    for (int i = 0; i < 2; i++) {
      vt_set(&al->dl, at[i], -3);
      const int64_t e = i ? early : late;
      char needle[96];
      snprintf(needle, sizeof needle, "argmax[%lld, %lld, %lld, %lld] = -3",
               (long long)(e / (C * 4)), (long long)(e / 4 % C), (long long)(e / 2 % 2),
               (long long)(e % 2));
      EXPECT_FAIL(
          vo_roi_pool_backward(two, &gl->dl, &rl->dl, &al->dl, 1.0, 2, 2, 1, C, 4, 4, &gil->dl),
          VO_ERROR_INVALID_ARGUMENT, needle);
    }
    vo_context_destroy(two);
    vt_tensor_free(gl);
    vt_tensor_free(al);
    vt_tensor_free(rl);
    vt_tensor_free(gil);
  }
  /* the same argmax value is fine for a larger map */
  {
    vt_tensor *a = vt_tensor_new(vt_i32, 4, out_shape, NULL);
    vt_set(&a->dl, 0, 20);
    const int64_t big_shape[4] = {2, 3, 5, 5};
    vt_tensor *gbig = vt_tensor_new(vt_f32, 4, big_shape, NULL);
    CHECK_STATUS(vo_roi_pool_backward(NULL, G, R, &a->dl, 1.0, 2, 2, 2, 3, 5, 5, &gbig->dl), VO_OK);
    vt_tensor_free(a);
    vt_tensor_free(gbig);
  }
  EXPECT_FAIL(vo_roi_pool_backward(NULL, G, R, GA, 1.0, 2, 2, -1, 3, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "batch_size");
  EXPECT_FAIL(vo_roi_pool_backward(NULL, G, R, GA, 1.0, 2, 2, 2, 3, -4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "height");
  EXPECT_FAIL(vo_roi_pool_backward(NULL, G, R, GA, 1.0, 2, 2, 2, 3, 4, -5, GI),
              VO_ERROR_INVALID_ARGUMENT, "width");
  EXPECT_FAIL(vo_roi_pool_backward(NULL, G, R, GA, -2.0, 2, 2, 2, 3, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "spatial_scale");
  EXPECT_FAIL(vo_roi_pool_backward(NULL, G, R, GA, 1.0, 2, 0, 2, 3, 4, 5, GI),
              VO_ERROR_INVALID_ARGUMENT, "pooled_width");
  /* wrong output shapes / dtypes (the dispatcher's checks) */
  EXPECT_FAIL(vo_roi_pool(NULL, I, R, 1.0, 2, 3, O, A), VO_ERROR_INVALID_ARGUMENT, "output");
  vt_tensor *am64 = vt_tensor_new(vt_i64, 4, out_shape, NULL);
  EXPECT_FAIL(vo_roi_pool(NULL, I, R, 1.0, 2, 2, O, &am64->dl), VO_ERROR_UNSUPPORTED_DTYPE,
              "output argmax");
  /* dtypes */
  /* rois of any floating dtype are accepted (test_mixed_precision.c), integer ones are not */
  vt_tensor *r64 = vt_tensor_new(vt_i64, 2, roi_shape, roi_values);
  EXPECT_FAIL(vo_roi_pool(NULL, I, &r64->dl, 1.0, 2, 2, O, A), VO_ERROR_UNSUPPORTED_DTYPE,
              "rois must be float32, float64, float16 or bfloat16 (any floating dtype beside "
              "input's float32), got int64");
  vt_tensor *ii = vt_tensor_new(vt_i64, 4, in_shape, NULL);
  EXPECT_FAIL(vo_roi_pool(NULL, &ii->dl, R, 1.0, 2, 2, O, A), VO_ERROR_UNSUPPORTED_DTYPE, "input");
  vt_tensor *gi64 = vt_tensor_new(vt_i64, 4, out_shape, NULL);
  EXPECT_FAIL(vo_roi_pool_backward(NULL, &gi64->dl, R, GA, 1.0, 2, 2, 2, 3, 4, 5, GI),
              VO_ERROR_UNSUPPORTED_DTYPE, "grad");
  /* an input plane too large for int32 argmax (no data: N = 0) */
  {
    static float dummy[1];
    int64_t huge_shape[4] = {0, 1, 65536, 32769};
    DLTensor huge = {dummy, {kDLCPU, 0}, 4, {kDLFloat, 32, 1}, huge_shape, NULL, 0};
    const double none[5] = {0};
    const int64_t r0[2] = {0, 5};
    vt_tensor *rz = vt_tensor_new(vt_f32, 2, r0, none);
    vo_tensor_desc d[2];
    EXPECT_FAIL(vo_roi_pool_shape(NULL, &huge, &rz->dl, 1.0, 2, 2, &d[0], &d[1]),
                VO_ERROR_INVALID_ARGUMENT, "H*W");
    vt_tensor_free(rz);
  }

  /* nothing was written by any failed call */
  int clean = 1;
  for (int64_t i = 0; i < vt_numel(O); i++) clean &= vt_get(O, i) == 55.5;
  for (int64_t i = 0; i < vt_numel(A); i++) clean &= vt_get(A, i) == 55;
  for (int64_t i = 0; i < vt_numel(GI); i++) clean &= vt_get(GI, i) == 55.5;
  CHECK_MSG(clean, "a failed roi_pool call wrote its output");

  vt_tensor *all[] = {in,    rois,    out,   am,    gin,  g,   ga, in3,
                      rois4, a_shape, a_i64, a_f32, am64, r64, ii, gi64};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

/* Tensors that claim to live on a CUDA device: the library must not read
 * them, and (without a CUDA roi_pool) must say the backend cannot run it. */
static void cuda_device(void) {
  static float fake_in[2 * 3 * 4 * 5], fake_rois[2 * 5], fake_out[2 * 3 * 2 * 2];
  static int32_t fake_am[2 * 3 * 2 * 2];
  int64_t in_shape[4] = {2, 3, 4, 5}, roi_shape[2] = {2, 5}, out_shape[4] = {2, 3, 2, 2};
  DLTensor in = {fake_in, {kDLCUDA, 0}, 4, {kDLFloat, 32, 1}, in_shape, NULL, 0};
  DLTensor rois = {fake_rois, {kDLCUDA, 0}, 2, {kDLFloat, 32, 1}, roi_shape, NULL, 0};
  DLTensor out = {fake_out, {kDLCUDA, 0}, 4, {kDLFloat, 32, 1}, out_shape, NULL, 0};
  DLTensor am = {fake_am, {kDLCUDA, 0}, 4, {kDLInt, 32, 1}, out_shape, NULL, 0};
  CHECK_STATUS(vo_roi_pool(NULL, &in, &rois, 1.0, 2, 2, &out, &am), VO_ERROR_BACKEND_UNAVAILABLE);
  CHECK_ERROR_HAS("roi_pool");
  CHECK_STATUS(vo_roi_pool_backward(NULL, &out, &rois, &am, 1.0, 2, 2, 2, 3, 4, 5, &in),
               VO_ERROR_BACKEND_UNAVAILABLE);
  CHECK_ERROR_HAS("roi_pool_backward");
}

/* Empty shapes: no RoIs, no channels, an empty map. */
static void empty_shapes(void) {
  double roi[5] = {0, 0, 0, 3, 3};
  double in16[32];
  for (int i = 0; i < 32; i++) in16[i] = i;
  int32_t am0[1] = {0};
  problem pb0 = {1, 2, 4, 4, 0, 2, 2, 1.0, in16, roi, NULL, am0};
  double out[8] = {0}, gin[32] = {0};
  int32_t am[8] = {0};
  CHECK_STATUS(run_forward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb0, out, am, NULL), VO_OK);
  CHECK_STATUS(run_backward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb0, gin, NULL), VO_OK);
  int zero = 1;
  for (int i = 0; i < 32; i++) zero &= gin[i] == 0;
  CHECK_MSG(zero, "backward with no RoIs must zero grad_input");
  /* H = W = 0: every bin is empty */
  double input[1] = {0};
  problem pb1 = {1, 1, 0, 0, 1, 2, 2, 1.0, input, roi, NULL, NULL};
  if (CHECK_STATUS(run_forward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb1, out, am, NULL), VO_OK))
    CHECK(out[0] == 0 && out[3] == 0 && am[0] == -1 && am[3] == -1);
  double g4[4] = {1, 1, 1, 1};
  int32_t m4[4] = {-1, -1, -1, -1};
  pb1.grad = g4;
  pb1.argmax = m4;
  CHECK_STATUS(run_backward(NULL, vt_f32, LAYOUT_CONTIGUOUS, &pb1, gin, NULL), VO_OK);
}

int main(void) {
  vo_context *ctx1 = NULL, *ctx2 = NULL;
  CHECK_STATUS(vo_context_create(&ctx1), VO_OK);
  CHECK_STATUS(vo_context_create(&ctx2), VO_OK);
  CHECK_STATUS(vo_context_set_num_threads(ctx1, 1), VO_OK);
  CHECK_STATUS(vo_context_set_num_threads(ctx2, 2), VO_OK);
  hand_checked();
  special_values();
  random_cases(ctx1, ctx2);
  paths();
  streamed();
  errors();
  cuda_device();
  empty_shapes();
  vo_context_destroy(ctx1);
  vo_context_destroy(ctx2);
  return vt_finish("test_roi_pool");
}
