/* vo_context_set_device_checks on every device backend available (OpenCL
 * through PoCL on a CPU machine; CUDA on a GPU): deferred checks report a
 * bad value later with the message the synchronous check gives, in call
 * order, from vo_context_device_status or from the later call that has to
 * wait for them (pending block full, another thread on the default queue);
 * good values give the same outputs in every mode; with checks off, bad
 * values of every kind run to completion (a RoI of 1e30 pixels too) and
 * leave the good RoIs' outputs alone; host tensors are checked in every
 * mode. Then the shared kernels' guards that keep those runs in bounds,
 * called on the host, where ASan sees them. Linked statically (the
 * backends' memory functions). Skipped (77) without a device backend. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/data_checks.h"
#include "kernels/deform_attn.h"
#include "kernels/roi_align.h"
#include "kernels/roi_pool.h"
#include "opencl_test_util.h"

enum { N = 2, C = 3, H = 8, W = 9, K = 4, P = 2 };

static vt_tensor *input_of(void) {
  const int64_t shape[4] = {N, C, H, W};
  vt_tensor *t = vt_tensor_new(vt_f32, 4, shape, NULL);
  for (int64_t i = 0; i < vt_numel(&t->dl); i++) vt_set(&t->dl, i, (double)((i * 37) % 101) / 7);
  return t;
}

/* K RoIs; RoI `bad` gets batch index `batch` (or none with bad < 0). */
static vt_tensor *rois_of(int bad, double batch) {
  const int64_t shape[2] = {K, 5};
  vt_tensor *t = vt_tensor_new(vt_f32, 2, shape, NULL);
  for (int k = 0; k < K; k++) {
    const double r[5] = {k % N, 0.5 + k, 1.0 + k / 2.0, 5.5 + k / 3.0, 6.0 + k / 4.0};
    for (int j = 0; j < 5; j++) vt_set(&t->dl, k * 5 + j, r[j]);
  }
  if (bad >= 0) vt_set(&t->dl, bad * 5, batch);
  return t;
}

static vt_tensor *out_of(void) {
  const int64_t shape[4] = {K, C, P, P};
  return vt_tensor_new(vt_f32, 4, shape, NULL);
}

/* roi_align of input and rois on the device under ctx into host `out`. */
static vo_status roi_align_on(const vo_context *ctx, const vt_tensor *input, const vt_tensor *rois,
                              vt_tensor *out) {
  DLTensor i = vt_cl_on_device(input), r = vt_cl_on_device(rois), o = vt_cl_on_device(out);
  const vo_status st = vo_roi_align(ctx, &i, &r, 0.5, P, P, 0, 1, &o);
  if (st == VO_OK) vt_cl_read_back(&o, out);
  vt_cl_free_all();
  return st;
}

static vo_context *context_with(vo_device_checks mode) {
  vo_context *ctx = NULL;
  if (vo_context_create(&ctx) != VO_OK || vo_context_set_device_checks(ctx, mode) != VO_OK)
    vt_cl_die("context");
  return ctx;
}

static int same_rows(const vt_tensor *a, const vt_tensor *b, int skip) {
  const int64_t row = C * P * P;
  for (int k = 0; k < K; k++)
    if (k != skip && memcmp((const float *)a->mem + k * row, (const float *)b->mem + k * row,
                            sizeof(float) * (size_t)row) != 0)
      return 0;
  return 1;
}

static int all_finite(const vt_tensor *t) {
  for (int64_t i = 0; i < vt_numel(&t->dl); i++)
    if (!isfinite(vt_get(&t->dl, i))) return 0;
  return 1;
}

static int all_zero(const vt_tensor *t) {
  for (int64_t i = 0; i < vt_numel(&t->dl); i++)
    if (vt_get(&t->dl, i) != 0) return 0;
  return 1;
}

typedef struct {
  vo_context *ctx;
  const vt_tensor *input, *rois;
  vo_status st;
} bad_call;

static void *bad_call_thread(void *p) {
  bad_call *c = p;
  vt_tensor *out = out_of();
  c->st = roi_align_on(c->ctx, c->input, c->rois, out);
  vt_tensor_free(out);
  return NULL;
}

static void check_modes(const vo_backend *be, DLDevice dev) {
  char tag[64], want[1024];
  snprintf(tag, sizeof tag, "%s", be->name);
  vt_cl_use(be, dev, "test_device_checks");
  vt_tensor *input = input_of(), *good = rois_of(-1, 0), *bad = rois_of(2, 5);
  vt_tensor *o_sync = out_of(), *o = out_of();
  vo_context *sync = context_with(VO_DEVICE_CHECKS_SYNC);
  vo_context *deferred = context_with(VO_DEVICE_CHECKS_DEFERRED);
  vo_context *off = context_with(VO_DEVICE_CHECKS_OFF);
  CHECK(vo_context_device_checks(deferred) == VO_DEVICE_CHECKS_DEFERRED);
  CHECK(vo_context_device_checks(NULL) == VO_DEVICE_CHECKS_SYNC);

  /* the synchronous check: the message the others must give */
  CHECK_STATUS(roi_align_on(sync, input, bad, o), VO_ERROR_INVALID_ARGUMENT);
  snprintf(want, sizeof want, "%s", vo_last_error());
  CHECK_MSG(strstr(want, "rois[2, 0] = 5 is not a batch index") != NULL, "%s: %s", tag, want);
  CHECK_STATUS(roi_align_on(sync, input, good, o_sync), VO_OK);

  /* deferred: good values as in sync mode; a bad one reported later, once */
  CHECK_STATUS(roi_align_on(deferred, input, good, o), VO_OK);
  CHECK_MSG(same_rows(o, o_sync, -1), "%s: deferred output differs", tag);
  CHECK_STATUS(vo_context_device_status(deferred), VO_OK);
  CHECK_STATUS(roi_align_on(deferred, input, good, o), VO_OK);
  CHECK_STATUS(roi_align_on(deferred, input, bad, o), VO_OK);
  CHECK_STATUS(roi_align_on(deferred, input, bad, o), VO_OK); /* (a second bad call) */
  CHECK_STATUS(vo_context_device_status(deferred), VO_ERROR_INVALID_ARGUMENT);
  CHECK_MSG(strcmp(vo_last_error(), want) == 0, "%s: deferred message '%s', want '%s'", tag,
            vo_last_error(), want);
  CHECK_STATUS(vo_context_device_status(deferred), VO_OK);

  /* a full block: the call that needs a slot waits and reports the earlier call */
  CHECK_STATUS(roi_align_on(deferred, input, bad, o), VO_OK);
  int calls = 0;
  vo_status st = VO_OK;
  while (st == VO_OK && calls < 1000) {
    st = roi_align_on(deferred, input, good, o);
    calls++;
  }
  CHECK_STATUS(st, VO_ERROR_INVALID_ARGUMENT);
  CHECK_MSG(calls > 1 && calls <= 256, "%s: reported after %d calls", tag, calls);
  CHECK_MSG(strncmp(vo_last_error(), want, strlen(want)) == 0 &&
                strstr(vo_last_error(), "deferred checks of an earlier call") != NULL,
            "%s: '%s'", tag, vo_last_error());
  CHECK_STATUS(vo_context_device_status(deferred), VO_OK);

  /* a bad call on another thread (the default queue): this thread's next
   * call reports it, and so does vo_context_device_status */
  for (int how = 0; how < 2; how++) {
    bad_call c = {deferred, input, bad, VO_ERROR_BACKEND_FAILURE};
    pthread_t t;
    if (pthread_create(&t, NULL, bad_call_thread, &c) != 0) vt_cl_die("pthread_create");
    pthread_join(t, NULL);
    CHECK_STATUS(c.st, VO_OK);
    if (how == 0) {
      CHECK_STATUS(roi_align_on(deferred, input, good, o), VO_ERROR_INVALID_ARGUMENT);
      CHECK(strstr(vo_last_error(), "earlier call") != NULL);
    } else {
      CHECK_STATUS(vo_context_device_status(deferred), VO_ERROR_INVALID_ARGUMENT);
      CHECK_MSG(strcmp(vo_last_error(), want) == 0, "%s: '%s'", tag, vo_last_error());
    }
  }
  /* setting a mode reports what is pending */
  CHECK_STATUS(roi_align_on(deferred, input, bad, o), VO_OK);
  CHECK_STATUS(vo_context_set_device_checks(deferred, VO_DEVICE_CHECKS_DEFERRED),
               VO_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(vo_context_device_status(deferred), VO_OK);

  /* off: the bad RoI runs; the good RoIs' rows are the synchronous ones */
  memset(o->mem, 0, o->mem_bytes);
  CHECK_STATUS(roi_align_on(off, input, bad, o), VO_OK);
  CHECK_MSG(same_rows(o, o_sync, 2), "%s: checks off changed the good RoIs", tag);
  CHECK_STATUS(vo_context_device_status(off), VO_OK);

  /* host tensors are checked whatever the mode */
  DLTensor hi = input->dl, hr = bad->dl, ho = o->dl;
  CHECK_STATUS(vo_roi_align(off, &hi, &hr, 0.5, P, P, 0, 1, &ho), VO_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(vo_roi_align(deferred, &hi, &hr, 0.5, P, P, 0, 1, &ho), VO_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(vo_context_device_status(deferred), VO_OK);

  vo_context_destroy(sync);
  vo_context_destroy(off);
  /* a context destroyed with checks pending waits for them (no leak, no late write) */
  CHECK_STATUS(roi_align_on(deferred, input, bad, o), VO_OK);
  vo_context_destroy(deferred);
  vt_tensor_free(input);
  vt_tensor_free(good);
  vt_tensor_free(bad);
  vt_tensor_free(o_sync);
  vt_tensor_free(o);
}

/* Bad values of every other kind with the checks off: each call completes.
 * What the outputs hold is unspecified; that nothing outside the tensors is
 * touched is what the host guard tests below show for the shared code. */
static void check_off_kinds(const vo_backend *be, DLDevice dev) {
  vt_cl_use(be, dev, "test_device_checks");
  vo_context *off = context_with(VO_DEVICE_CHECKS_OFF), *det = context_with(VO_DEVICE_CHECKS_OFF);
  vo_context_set_deterministic(det, 1);
  vt_tensor *input = input_of(), *out = out_of();
  /* a RoI of 1e30 pixels with adaptive sampling: bounded samples per bin */
  vt_tensor *huge = rois_of(1, 1);
  vt_set(&huge->dl, 1 * 5 + 3, 1e30);
  vt_set(&huge->dl, 1 * 5 + 4, 1e30);
  CHECK_STATUS(roi_align_on(off, input, huge, out), VO_OK);
  {
    vt_tensor *good = rois_of(-1, 0), *want = out_of();
    CHECK_STATUS(roi_align_on(off, input, good, want), VO_OK);
    CHECK_MSG(same_rows(out, want, 1), "%s: a huge RoI changed the others' rows", be->name);
    vt_tensor_free(good);
    vt_tensor_free(want);
  }
  /* roi_pool_backward with argmax entries outside the plane */
  {
    const int64_t gs[4] = {K, C, P, P};
    vt_tensor *grad = vt_tensor_new(vt_f32, 4, gs, NULL), *am = vt_tensor_new(vt_i32, 4, gs, NULL);
    vt_fill(&grad->dl, 1);
    for (int64_t i = 0; i < vt_numel(&am->dl); i++)
      vt_set(&am->dl, i, i % 3 == 0 ? 1000000 : (i % 3 == 1 ? -7 : (double)(i % (H * W))));
    vt_tensor *gi = input_of(), *rois = rois_of(-1, 0);
    for (int d = 0; d < 2; d++) {
      DLTensor g = vt_cl_on_device(grad), r = vt_cl_on_device(rois), a = vt_cl_on_device(am);
      DLTensor o = vt_cl_on_device(gi);
      CHECK_STATUS(vo_roi_pool_backward(d ? det : off, &g, &r, &a, 0.5, P, P, N, C, H, W, &o),
                   VO_OK);
      vt_cl_read_back(&o, gi); /* (also waits for the queue before the buffers go) */
      CHECK(all_finite(gi));
      vt_cl_free_all();
    }
    /* ps_roi_align_backward with a channel_mapping that is not the forward's */
    const int64_t ps[4] = {K, 1, P, P};
    vt_tensor *pg = vt_tensor_new(vt_f32, 4, ps, NULL), *cm = vt_tensor_new(vt_i32, 4, ps, NULL);
    vt_fill(&pg->dl, 1);
    vt_fill(&cm->dl, 12345);
    const int64_t pis[4] = {N, P * P, H, W};
    vt_tensor *pgi = vt_tensor_new(vt_f32, 4, pis, NULL);
    DLTensor g = vt_cl_on_device(pg), r = vt_cl_on_device(rois), m = vt_cl_on_device(cm);
    DLTensor o = vt_cl_on_device(pgi);
    CHECK_STATUS(vo_ps_roi_align_backward(off, &g, &r, &m, 0.5, P, P, 2, N, P * P, H, W, &o),
                 VO_OK);
    vt_cl_read_back(&o, pgi);
    CHECK(all_finite(pgi));
    vt_cl_free_all();
    vt_tensor_free(grad);
    vt_tensor_free(am);
    vt_tensor_free(gi);
    vt_tensor_free(rois);
    vt_tensor_free(pg);
    vt_tensor_free(cm);
    vt_tensor_free(pgi);
  }
  /* deform_attn with levels past value's keys, forward and backward */
  {
    enum { S = 6, M = 1, D = 2, Q = 3, L = 2, PT = 2 };
    const int64_t vs[4] = {1, S, M, D}, ss[2] = {L, 2}, ls[1] = {L};
    const int64_t locs[6] = {1, Q, M, L, PT, 2}, as[5] = {1, Q, M, L, PT}, os[3] = {1, Q, M * D};
    const double shapes[4] = {2, 2, 1000, 1000}, starts[2] = {4, 100};
    vt_tensor *value = vt_tensor_new(vt_f32, 4, vs, NULL);
    vt_tensor *sh = vt_tensor_new(vt_i64, 2, ss, shapes),
              *st = vt_tensor_new(vt_i64, 1, ls, starts);
    vt_tensor *loc = vt_tensor_new(vt_f32, 6, locs, NULL),
              *attn = vt_tensor_new(vt_f32, 5, as, NULL);
    vt_tensor *o = vt_tensor_new(vt_f32, 3, os, NULL), *gv = vt_tensor_new(vt_f32, 4, vs, NULL);
    vt_tensor *gl = vt_tensor_new(vt_f32, 6, locs, NULL), *ga = vt_tensor_new(vt_f32, 5, as, NULL);
    vt_fill(&value->dl, 1);
    vt_fill(&loc->dl, 0.5);
    vt_fill(&attn->dl, 0.25);
    vt_fill(&o->dl, 1);
    for (int d = 0; d < 2; d++) {
      DLTensor a[5] = {vt_cl_on_device(value), vt_cl_on_device(sh), vt_cl_on_device(st),
                       vt_cl_on_device(loc), vt_cl_on_device(attn)};
      DLTensor out_d = vt_cl_on_device(o);
      vo_context *ctx = d ? det : off;
      CHECK_STATUS(vo_deform_attn(ctx, &a[0], &a[1], &a[2], &a[3], &a[4], 1, &out_d), VO_OK);
      DLTensor g = vt_cl_on_device(o), g0 = vt_cl_on_device(gv), g1 = vt_cl_on_device(gl),
               g2 = vt_cl_on_device(ga);
      CHECK_STATUS(
          vo_deform_attn_backward(ctx, &a[0], &a[1], &a[2], &a[3], &a[4], &g, 1, &g0, &g1, &g2),
          VO_OK);
      /* every level is past value's keys, so empty: nothing is sampled */
      vt_cl_read_back(&out_d, o);
      vt_cl_read_back(&g0, gv);
      CHECK_MSG(all_zero(o) && all_zero(gv), "%s: deform_attn sampled a level beyond S", be->name);
      vt_fill(&o->dl, 1);
      vt_cl_free_all();
    }
    vt_tensor *ts[] = {value, sh, st, loc, attn, o, gv, gl, ga};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) vt_tensor_free(ts[i]);
  }
  vo_context_destroy(off);
  vo_context_destroy(det);
  vt_tensor_free(input);
  vt_tensor_free(out);
  vt_tensor_free(huge);
}

/* The shared kernels' guards, on the host. */
static void check_guards(void) {
  /* deform_attn: a level beyond value's S is empty; good levels are kept,
   * large ones too (division, not an overflowing product) */
  vo_k_deform_attn_args a;
  memset(&a, 0, sizeof a);
  a.keys = 100;
  a.shapes_stride[0] = 2;
  a.shapes_stride[1] = 1;
  a.starts_stride = 1;
  const struct {
    int64_t h, w, start, keys, want_h;
  } lv[] = {
      {5, 5, 0, 100, 5},
      {5, 5, 75, 100, 5},
      {5, 5, 76, 100, 0},
      {5, 5, 101, 100, 0},
      {5, 5, -1, 100, 0},
      {-2, 5, 0, 100, 0},
      {(int64_t)1 << 40, 1, 3, ((int64_t)1 << 40) + 3, (int64_t)1 << 40},
      {(int64_t)1 << 40, 2, 3, ((int64_t)1 << 40) + 3, 0},
      {(int64_t)1 << 62, (int64_t)1 << 62, 0, 100, 0},
  };
  for (size_t i = 0; i < sizeof lv / sizeof lv[0]; i++) {
    const int64_t shapes[2] = {lv[i].h, lv[i].w}, starts[1] = {lv[i].start};
    int64_t h, w, start;
    a.keys = lv[i].keys;
    vo_k_da_level(&a, shapes, starts, 0, &h, &w, &start);
    CHECK_MSG(h == lv[i].want_h && (h == 0 ? w == 0 : w == lv[i].w), "level %zu: got %lld x %lld",
              i, (long long)h, (long long)w);
    if (h) CHECK(start == lv[i].start);
  }
  /* roi_align: the adaptive grid's bound is above every grid the roi_grid
   * check lets through, and a RoI of 1e30 pixels is held to it */
  for (int64_t map = 0; map <= 3000; map += 7)
    for (int64_t pooled = 1; pooled <= 20; pooled++) {
      const int64_t b = vo_k_ra_grid_bound(map, pooled);
      if (!CHECK_MSG(b >= vo_k_adaptive_limit(map, pooled) &&
                         b <= 2 * vo_k_adaptive_limit(map, pooled) + 2,
                     "bound %lld for map %lld, pooled %lld", (long long)b, (long long)map,
                     (long long)pooled))
        return;
    }
  vo_k_roi_align_args ra;
  memset(&ra, 0, sizeof ra);
  ra.pooled_height = ra.pooled_width = 7;
  ra.height = 50;
  ra.width = 60;
  ra.aligned = 1;
  vo_k_ra_roi_f32 g;
  float rh = 1e30f, rw = 3e9f;
  vo_k_ra_bins_f32(&ra, &rh, &rw, &g);
  CHECK(g.grid_h == vo_k_ra_grid_bound(110, 7) && g.grid_w == vo_k_ra_grid_bound(110, 7));
  rh = 70;
  rw = 14;
  vo_k_ra_bins_f32(&ra, &rh, &rw, &g);
  CHECK(g.grid_h == 10 && g.grid_w == 2);
  /* roi_pool: an argmax outside the plane (and a plane without columns) lies in no bin */
  const float rois[5] = {0, 0, 0, 4, 4};
  const int64_t rs[2] = {5, 1}, ss[4] = {0, 0, 0, 1}, as[4] = {1, 1, 1, 1};
  const int32_t argmax[3] = {7, 1000, -1};
  for (int wd = 0; wd < 2; wd++) {
    const vo_k_roi_pool_args pa =
        vo_k_roi_pool_args_of(1.0, 1, 1, 1, 1, 5, wd ? 5 : 0, VO_DT_F32, rs, ss, as);
    CHECK(vo_k_roi_pool_argmax_in_bin_f32(argmax + 1, rois, &pa, 0) == 0);
    CHECK(vo_k_roi_pool_argmax_in_bin_f32(argmax + 2, rois, &pa, 0) == 1);
    if (wd) CHECK(vo_k_roi_pool_argmax_in_bin_f32(argmax, rois, &pa, 0) == 1);
  }
}

int main(void) {
  vo_context *ctx = NULL;
  CHECK_STATUS(vo_context_create(&ctx), VO_OK);
  CHECK_STATUS(vo_context_set_device_checks(ctx, (vo_device_checks)7), VO_ERROR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("unknown mode 7");
  CHECK_STATUS(vo_context_set_device_checks(NULL, VO_DEVICE_CHECKS_OFF), VO_ERROR_INVALID_ARGUMENT);
  CHECK_STATUS(vo_context_device_status(ctx), VO_OK);
  vo_context_destroy(ctx);
  check_guards();
  int ran = 0;
  const DLDeviceType types[] = {kDLOpenCL, kDLCUDA};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    const vo_backend *be = vo_backend_for_device(types[i]);
    const char *detail = NULL;
    if (!be || be->not_built_reason || !vo_backend_available(be, &detail)) continue;
    const DLDevice dev = {types[i], 0};
    check_modes(be, dev);
    check_off_kinds(be, dev);
    ran++;
  }
  const int rc = vt_finish("test_device_checks");
  if (rc == 0 && !ran) {
    printf("skipped: no device backend (the host guard tests passed)\n");
    return 77;
  }
  return rc;
}
