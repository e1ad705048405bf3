/*
 * deform_attn and _deform_attn_backward through the typed C wrappers:
 * against a plain double reference written here from SPEC-NEXT 5.3-5.4
 * (bilinear with zero padding, pixel-centre convention, the sample window),
 * the gradients also against central differences of the forward; thread
 * counts 1, 2, 3 bit-identical (both of the CPU backward's task shapes);
 * im2col_step changing nothing; NaN and far-away locations; the levels
 * check (each kind of inconsistency, with the output left untouched) and
 * the other argument errors; the half types' workspace limit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* A problem: sizes and the inputs' values (double, row-major). */
typedef struct problem {
  int64_t n, s, m, d, q, l, p;
  int64_t hw[4][2], start[4];
  double *value, *loc, *attn, *grad;
} problem;

static int64_t numel_value(const problem *pb) { return pb->n * pb->s * pb->m * pb->d; }
static int64_t numel_attn(const problem *pb) { return pb->n * pb->q * pb->m * pb->l * pb->p; }
static int64_t numel_out(const problem *pb) { return pb->n * pb->q * pb->m * pb->d; }

static void problem_init(problem *pb, int64_t n, int64_t m, int64_t d, int64_t q, int64_t p,
                         int64_t levels, const int64_t hw[][2], vt_rng *rng, double lo, double hi) {
  memset(pb, 0, sizeof *pb);
  pb->n = n, pb->m = m, pb->d = d, pb->q = q, pb->p = p, pb->l = levels;
  for (int64_t l = 0; l < levels; l++) {
    pb->hw[l][0] = hw[l][0], pb->hw[l][1] = hw[l][1];
    pb->start[l] = pb->s;
    pb->s += hw[l][0] * hw[l][1];
  }
  pb->value = malloc(sizeof(double) * (size_t)(numel_value(pb) + 1));
  pb->loc = malloc(sizeof(double) * (size_t)(2 * numel_attn(pb) + 1));
  pb->attn = malloc(sizeof(double) * (size_t)(numel_attn(pb) + 1));
  pb->grad = malloc(sizeof(double) * (size_t)(numel_out(pb) + 1));
  for (int64_t i = 0; i < numel_value(pb); i++) pb->value[i] = vt_rng_uniform(rng, -1, 1);
  for (int64_t i = 0; i < 2 * numel_attn(pb); i++) pb->loc[i] = vt_rng_uniform(rng, lo, hi);
  for (int64_t i = 0; i < numel_attn(pb); i++) pb->attn[i] = vt_rng_uniform(rng, 0, 1);
  for (int64_t i = 0; i < numel_out(pb); i++) pb->grad[i] = vt_rng_uniform(rng, -1, 1);
}

static void problem_free(problem *pb) {
  free(pb->value), free(pb->loc), free(pb->attn), free(pb->grad);
}

/* The sample's bilinear value in channel c (corners off the level are 0),
 * or its weights' derivatives along x and y when dx / dy are non-NULL. */
static double ref_bilinear(const problem *pb, int64_t n, int64_t m, int64_t l, double lx, double ly,
                           int64_t c, double *dx, double *dy) {
  const int64_t h = pb->hw[l][0], w = pb->hw[l][1];
  const double y = ly * (double)h - 0.5, x = lx * (double)w - 0.5;
  if (dx) *dx = 0, *dy = 0;
  if (!(y > -1 && x > -1 && y < (double)h && x < (double)w)) return 0;
  const double y0 = floor(y), x0 = floor(x), fy = y - y0, fx = x - x0;
  double v = 0;
  for (int cy = 0; cy < 2; cy++)
    for (int cx = 0; cx < 2; cx++) {
      const int64_t yy = (int64_t)y0 + cy, xx = (int64_t)x0 + cx;
      if (yy < 0 || xx < 0 || yy >= h || xx >= w) continue;
      const double val =
          pb->value[((n * pb->s + pb->start[l] + yy * w + xx) * pb->m + m) * pb->d + c];
      const double wy = cy ? fy : 1 - fy, wx = cx ? fx : 1 - fx;
      v += wy * wx * val;
      if (dx) {
        *dx += wy * (cx ? 1 : -1) * val * (double)w; /* d/dloc_x */
        *dy += wx * (cy ? 1 : -1) * val * (double)h;
      }
    }
  return v;
}

static void ref_forward(const problem *pb, double *out) {
  for (int64_t n = 0; n < pb->n; n++)
    for (int64_t q = 0; q < pb->q; q++)
      for (int64_t m = 0; m < pb->m; m++)
        for (int64_t c = 0; c < pb->d; c++) {
          double acc = 0;
          for (int64_t l = 0; l < pb->l; l++)
            for (int64_t p = 0; p < pb->p; p++) {
              const int64_t i = (((n * pb->q + q) * pb->m + m) * pb->l + l) * pb->p + p;
              acc += pb->attn[i] *
                     ref_bilinear(pb, n, m, l, pb->loc[2 * i], pb->loc[2 * i + 1], c, NULL, NULL);
            }
          out[((n * pb->q + q) * pb->m + m) * pb->d + c] = acc;
        }
}

/* grad_value by scattering each sample's weights; grad_loc and grad_attn
 * from the derivatives. */
static void ref_backward(const problem *pb, double *gv, double *gl, double *ga) {
  memset(gv, 0, sizeof(double) * (size_t)numel_value(pb));
  for (int64_t n = 0; n < pb->n; n++)
    for (int64_t q = 0; q < pb->q; q++)
      for (int64_t m = 0; m < pb->m; m++)
        for (int64_t l = 0; l < pb->l; l++)
          for (int64_t p = 0; p < pb->p; p++) {
            const int64_t i = (((n * pb->q + q) * pb->m + m) * pb->l + l) * pb->p + p;
            const double lx = pb->loc[2 * i], ly = pb->loc[2 * i + 1], a = pb->attn[i];
            double sx = 0, sy = 0, sa = 0;
            for (int64_t c = 0; c < pb->d; c++) {
              const double g = pb->grad[((n * pb->q + q) * pb->m + m) * pb->d + c];
              double dx, dy;
              sa += g * ref_bilinear(pb, n, m, l, lx, ly, c, &dx, &dy);
              sx += g * a * dx, sy += g * a * dy;
            }
            gl[2 * i] = sx, gl[2 * i + 1] = sy, ga[i] = sa;
            const int64_t h = pb->hw[l][0], w = pb->hw[l][1];
            const double y = ly * (double)h - 0.5, x = lx * (double)w - 0.5;
            if (!(y > -1 && x > -1 && y < (double)h && x < (double)w)) continue;
            const double y0 = floor(y), x0 = floor(x), fy = y - y0, fx = x - x0;
            for (int cy = 0; cy < 2; cy++)
              for (int cx = 0; cx < 2; cx++) {
                const int64_t yy = (int64_t)y0 + cy, xx = (int64_t)x0 + cx;
                if (yy < 0 || xx < 0 || yy >= h || xx >= w) continue;
                const double wgt = (cy ? fy : 1 - fy) * (cx ? fx : 1 - fx);
                for (int64_t c = 0; c < pb->d; c++)
                  gv[((n * pb->s + pb->start[l] + yy * w + xx) * pb->m + m) * pb->d + c] +=
                      wgt * a * pb->grad[((n * pb->q + q) * pb->m + m) * pb->d + c];
              }
          }
}

/* The call's tensors in dtype dt, and its outputs. */
typedef struct call {
  vt_tensor *value, *shapes, *starts, *loc, *attn, *grad;
  vt_tensor *out, *gv, *gl, *ga;
} call;

static void call_init(call *c, const problem *pb, DLDataType dt) {
  double sh[8], st[4];
  for (int64_t l = 0; l < pb->l; l++) {
    sh[2 * l] = (double)pb->hw[l][0], sh[2 * l + 1] = (double)pb->hw[l][1];
    st[l] = (double)pb->start[l];
  }
  const int64_t vs[4] = {pb->n, pb->s, pb->m, pb->d}, ss[2] = {pb->l, 2}, ls[1] = {pb->l};
  const int64_t locs[6] = {pb->n, pb->q, pb->m, pb->l, pb->p, 2};
  const int64_t as[5] = {pb->n, pb->q, pb->m, pb->l, pb->p}, os[3] = {pb->n, pb->q, pb->m * pb->d};
  c->value = vt_tensor_new(dt, 4, vs, pb->value);
  c->shapes = vt_tensor_new(vt_i64, 2, ss, sh);
  c->starts = vt_tensor_new(vt_i64, 1, ls, st);
  c->loc = vt_tensor_new(dt, 6, locs, pb->loc);
  c->attn = vt_tensor_new(dt, 5, as, pb->attn);
  c->grad = vt_tensor_new(dt, 3, os, pb->grad);
  c->out = vt_tensor_new(dt, 3, os, NULL);
  c->gv = vt_tensor_new(dt, 4, vs, NULL);
  c->gl = vt_tensor_new(dt, 6, locs, NULL);
  c->ga = vt_tensor_new(dt, 5, as, NULL);
}

static void call_free(call *c) {
  vt_tensor *all[] = {c->value, c->shapes, c->starts, c->loc, c->attn,
                      c->grad,  c->out,    c->gv,     c->gl,  c->ga};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
}

static vo_status run_forward(const vo_context *ctx, call *c, int64_t step) {
  return vo_deform_attn(ctx, &c->value->dl, &c->shapes->dl, &c->starts->dl, &c->loc->dl,
                        &c->attn->dl, step, &c->out->dl);
}

static vo_status run_backward(const vo_context *ctx, call *c, int64_t step) {
  return vo_deform_attn_backward(ctx, &c->value->dl, &c->shapes->dl, &c->starts->dl, &c->loc->dl,
                                 &c->attn->dl, &c->grad->dl, step, &c->gv->dl, &c->gl->dl,
                                 &c->ga->dl);
}

static double max_diff(const DLTensor *t, const double *want, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(vt_get(t, i) - want[i]));
  return worst;
}

/* float64 against the reference: forward, the three gradients, and the
 * location gradient against central differences of the reference forward. */
static void against_reference(void) {
  static const int64_t hw[3][2] = {{5, 7}, {3, 4}, {1, 1}};
  vt_rng rng;
  vt_rng_seed(&rng, 16);
  problem pb;
  problem_init(&pb, 2, 2, 3, 7, 4, 3, hw, &rng, -0.2, 1.2);
  call c;
  call_init(&c, &pb, vt_f64);
  double *want = malloc(sizeof(double) * (size_t)numel_out(&pb));
  double *gv = malloc(sizeof(double) * (size_t)numel_value(&pb));
  double *gl = malloc(sizeof(double) * (size_t)(2 * numel_attn(&pb)));
  double *ga = malloc(sizeof(double) * (size_t)numel_attn(&pb));
  ref_forward(&pb, want);
  ref_backward(&pb, gv, gl, ga);
  CHECK_STATUS(run_forward(NULL, &c, 64), VO_OK);
  CHECK_STATUS(run_backward(NULL, &c, 64), VO_OK);
  const double ef = max_diff(&c.out->dl, want, numel_out(&pb));
  const double ev = max_diff(&c.gv->dl, gv, numel_value(&pb));
  const double el = max_diff(&c.gl->dl, gl, 2 * numel_attn(&pb));
  const double ea = max_diff(&c.ga->dl, ga, numel_attn(&pb));
  CHECK_MSG(ef < 1e-12 && ev < 1e-12 && el < 1e-11 && ea < 1e-12,
            "float64 against the reference: out %g, grad_value %g, grad_loc %g, grad_attn %g", ef,
            ev, el, ea);
  /* central differences of sum(grad * out) in the locations (away from
   * cell edges, where the bilinear form has a kink) */
  int checked = 0;
  for (int64_t i = 0; i < 2 * numel_attn(&pb) && checked < 40; i += 7) {
    const double saved = pb.loc[i], hstep = 1e-6;
    double f[2];
    for (int side = 0; side < 2; side++) {
      pb.loc[i] = saved + (side ? hstep : -hstep);
      ref_forward(&pb, want);
      f[side] = 0;
      for (int64_t k = 0; k < numel_out(&pb); k++) f[side] += pb.grad[k] * want[k];
    }
    pb.loc[i] = saved;
    const double fd = (f[1] - f[0]) / (2 * hstep);
    const double got = vt_get(&c.gl->dl, i);
    const int64_t l = i / 2 / pb.p % pb.l, size = pb.hw[l][i % 2 ? 0 : 1];
    const double px = saved * (double)size - 0.5;
    if (fabs(px - floor(px)) < 1e-3 || fabs(px - floor(px) - 1) < 1e-3) continue;
    CHECK_MSG(fabs(fd - got) < 1e-6 * (1 + fabs(fd)),
              "grad_sampling_loc[%lld] = %.12g, finite "
              "difference %.12g",
              (long long)i, got, fd);
    checked++;
  }
  CHECK(checked >= 20);
  free(want), free(gv), free(gl), free(ga);
  call_free(&c);
  problem_free(&pb);
}

/* Same bits for 1, 2 and 3 threads, and for any im2col_step. The CPU
 * backward runs a task per (image, head) when N*M >= 4 per thread, else per
 * (image, head, level): N*M = 2 takes the second at every count, 16 the
 * first, and 8 the first at 1 and 2 threads but the second at 3. */
static void threads_and_steps(void) {
  static const int64_t hw[4][2] = {{8, 5}, {4, 3}, {2, 2}, {1, 1}};
  static const int64_t shapes[3][2] = {{1, 2}, {2, 8}, {1, 8}};
  for (int shape = 0; shape < 3; shape++) {
    const int64_t n = shapes[shape][0], m = shapes[shape][1];
    for (int dti = 0; dti < 2; dti++) {
      const DLDataType dt = dti ? vt_bf16 : vt_f32;
      vt_rng rng;
      vt_rng_seed(&rng, 99 + (uint64_t)shape);
      problem pb;
      problem_init(&pb, n, m, 16, 9, 3, 4, hw, &rng, -0.1, 1.1);
      call ref, c;
      call_init(&ref, &pb, dt);
      call_init(&c, &pb, dt);
      vo_context *ctx1;
      CHECK_STATUS(vo_context_create(&ctx1), VO_OK);
      CHECK_STATUS(vo_context_set_num_threads(ctx1, 1), VO_OK);
      CHECK_STATUS(run_forward(ctx1, &ref, 64), VO_OK);
      CHECK_STATUS(run_backward(ctx1, &ref, 64), VO_OK);
      for (int t = 2; t <= 3; t++) {
        vo_context *ctx;
        CHECK_STATUS(vo_context_create(&ctx), VO_OK);
        CHECK_STATUS(vo_context_set_num_threads(ctx, t), VO_OK);
        const int64_t step = t == 2 ? 1 : 1000;
        CHECK_STATUS(run_forward(ctx, &c, step), VO_OK);
        CHECK_STATUS(run_backward(ctx, &c, step), VO_OK);
        const vt_tensor *a[4] = {ref.out, ref.gv, ref.gl, ref.ga},
                        *b[4] = {c.out, c.gv, c.gl, c.ga};
        for (int k = 0; k < 4; k++)
          CHECK_MSG(memcmp(vt_first(a[k]), vt_first(b[k]),
                           (size_t)vt_numel(&a[k]->dl) * vt_dtype_bytes(dt)) == 0,
                    "%s N=%lld M=%lld: output %d at %d threads (im2col_step %lld) differs from 1 "
                    "thread",
                    vt_dtype_name(dt), (long long)n, (long long)m, k, t, (long long)step);
        vo_context_destroy(ctx);
      }
      vo_context_destroy(ctx1);
      call_free(&ref);
      call_free(&c);
      problem_free(&pb);
    }
  }
}

/* NaN, infinite and far-away locations sample 0 and get zero gradients;
 * zero weights give zero output. */
static void odd_locations(void) {
  static const int64_t hw[2][2] = {{3, 4}, {2, 2}};
  vt_rng rng;
  vt_rng_seed(&rng, 5);
  problem pb;
  problem_init(&pb, 1, 1, 4, 3, 2, 2, hw, &rng, 0, 1);
  const double odd[] = {NAN, INFINITY, -INFINITY, 1e300, -1e300, 2.0};
  for (int64_t i = 0; i < numel_attn(&pb); i++) pb.loc[2 * i] = odd[i % 6];
  call c;
  call_init(&c, &pb, vt_f64);
  CHECK_STATUS(run_forward(NULL, &c, 64), VO_OK);
  CHECK_STATUS(run_backward(NULL, &c, 64), VO_OK);
  int zeros = 1;
  for (int64_t i = 0; i < vt_numel(&c.out->dl); i++) zeros &= vt_get(&c.out->dl, i) == 0;
  for (int64_t i = 0; i < vt_numel(&c.gv->dl); i++) zeros &= vt_get(&c.gv->dl, i) == 0;
  for (int64_t i = 0; i < vt_numel(&c.gl->dl); i++) zeros &= vt_get(&c.gl->dl, i) == 0;
  for (int64_t i = 0; i < vt_numel(&c.ga->dl); i++) zeros &= vt_get(&c.ga->dl, i) == 0;
  CHECK_MSG(zeros, "samples outside the window (NaN, inf, far away) must give exact zeros");
  call_free(&c);
  problem_free(&pb);
}

/* One bad call: its status, a message fragment, and output left as it was. */
static void expect_refused(call *c, vo_status want, const char *needle, int line) {
  vt_fill(&c->out->dl, 7);
  const vo_status st = run_forward(NULL, c, 64);
  CHECK_AT(__FILE__, line, st == want, "status %d, want %d: %s", (int)st, (int)want,
           vo_last_error());
  CHECK_AT(__FILE__, line, strstr(vo_last_error(), needle) != NULL, "\"%s\" lacks \"%s\"",
           vo_last_error(), needle);
  int untouched = 1;
  for (int64_t i = 0; i < vt_numel(&c->out->dl); i++) untouched &= vt_get(&c->out->dl, i) == 7;
  CHECK_AT(__FILE__, line, untouched, "a refused call wrote its output");
}

static void bad_inputs(void) {
  static const int64_t hw[3][2] = {{3, 4}, {2, 2}, {1, 3}};
  vt_rng rng;
  vt_rng_seed(&rng, 7);
  problem pb;
  problem_init(&pb, 1, 2, 3, 4, 2, 3, hw, &rng, 0, 1);
  call c;
  call_init(&c, &pb, vt_f32);
  CHECK_STATUS(run_forward(NULL, &c, 64), VO_OK);
  /* the levels check, one inconsistency at a time */
  vt_set(&c.shapes->dl, 2, -2); /* level 1's H */
  expect_refused(&c, VO_ERROR_INVALID_ARGUMENT, "spatial_shapes[1, 0] = -2 is negative", __LINE__);
  vt_set(&c.shapes->dl, 2, 2);
  vt_set(&c.starts->dl, 2, 15); /* should be 16 */
  expect_refused(&c, VO_ERROR_INVALID_ARGUMENT, "level_start_index[2] = 15, expected 16", __LINE__);
  vt_set(&c.starts->dl, 2, 16);
  vt_set(&c.shapes->dl, 5, 2); /* the last level 1x2: 18 keys, S = 19 */
  expect_refused(&c, VO_ERROR_INVALID_ARGUMENT,
                 "3 levels hold 18 keys (H * W), but value has S = 19", __LINE__);
  vt_set(&c.shapes->dl, 0, 4000000000.0); /* level 0 far larger than S */
  expect_refused(&c, VO_ERROR_INVALID_ARGUMENT, "levels 0..0 hold more keys", __LINE__);
  vt_set(&c.shapes->dl, 0, 3);
  vt_set(&c.shapes->dl, 1, 3037000500.0); /* H * W overflows int64 */
  vt_set(&c.shapes->dl, 0, 3037000500.0);
  expect_refused(&c, VO_ERROR_INVALID_ARGUMENT, "levels 0..0 hold more keys", __LINE__);
  vt_set(&c.shapes->dl, 0, 3), vt_set(&c.shapes->dl, 1, 4), vt_set(&c.shapes->dl, 5, 3);
  CHECK_STATUS(run_forward(NULL, &c, 64), VO_OK);
  /* shapes, dtypes and im2col_step */
  CHECK_STATUS(run_forward(NULL, &c, 0), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("im2col_step");
  vt_tensor *i32 = vt_tensor_new(vt_i32, 2, c.shapes->dl.shape, NULL);
  vt_tensor *saved = c.shapes;
  c.shapes = i32;
  expect_refused(&c, VO_ERROR_UNSUPPORTED_DTYPE, "spatial_shapes", __LINE__);
  c.shapes = saved;
  vt_tensor_free(i32);
  vt_tensor *f64 = vt_tensor_new(vt_f64, 5, c.attn->dl.shape, NULL);
  saved = c.attn;
  c.attn = f64;
  expect_refused(&c, VO_ERROR_UNSUPPORTED_DTYPE, "attn_weight", __LINE__);
  c.attn = saved;
  vt_tensor_free(f64);
  const int64_t wrong[6] = {1, 4, 2, 2, 2, 2}; /* L = 2 against 3 levels */
  vt_tensor *loc = vt_tensor_new(vt_f32, 6, wrong, NULL);
  saved = c.loc;
  c.loc = loc;
  expect_refused(&c, VO_ERROR_INVALID_ARGUMENT, "sampling_loc", __LINE__);
  c.loc = saved;
  vt_tensor_free(loc);
  /* an empty value whose M * D is no size */
  const int64_t huge[4] = {0, 0, (int64_t)1 << 40, (int64_t)1 << 40};
  vt_tensor *v = vt_tensor_strided(vt_f32, 4, huge, (const int64_t[4]){0, 0, 0, 0}, 0, NULL);
  saved = c.value;
  c.value = v;
  CHECK_STATUS(run_forward(NULL, &c, 64), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("M * D");
  c.value = saved;
  vt_tensor_free(v);
  call_free(&c);
  problem_free(&pb);
}

/* The half types scatter into a float32 level per thread: below that, a
 * clear out-of-memory error; float32 needs no workspace of that size. */
static void half_workspace(void) {
  static const int64_t hw[1][2] = {{64, 64}};
  vt_rng rng;
  vt_rng_seed(&rng, 8);
  problem pb;
  problem_init(&pb, 1, 1, 32, 4, 2, 1, hw, &rng, 0, 1);
  vo_context *ctx;
  CHECK_STATUS(vo_context_create(&ctx), VO_OK);
  CHECK_STATUS(vo_context_set_workspace_limit(ctx, 4096), VO_OK);
  call c;
  call_init(&c, &pb, vt_f16);
  CHECK_STATUS(run_backward(ctx, &c, 64), VO_ERROR_OUT_OF_MEMORY);
  CHECK_ERROR_HAS("workspace limit 4096 bytes");
  call_free(&c);
  call_init(&c, &pb, vt_f32);
  CHECK_STATUS(run_backward(ctx, &c, 64), VO_OK);
  call_free(&c);
  vo_context_destroy(ctx);
  problem_free(&pb);
}

int main(void) {
  against_reference();
  threads_and_steps();
  odd_locations();
  bad_inputs();
  half_workspace();
  return vt_finish("test_deform_attn");
}
