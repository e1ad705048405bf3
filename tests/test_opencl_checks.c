/* The OpenCL backend's check_data hook (kernels/data_checks.h on the device)
 * against the host's checks of the same tensors: the same status and
 * message for good values, bad RoI rows and a bad argmax entry. Linked
 * statically, so it can build a vo_exec itself: no op with declared checks
 * has OpenCL glue yet. Skipped (77) without an OpenCL device. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "test_util.h"

enum { K = 6, C = 2, PH = 2, PW = 3 };

/* A view of host data, or of a copy of it in an OpenCL buffer. */
static vo_view view_of(void *data, vo_dtype dtype, int ndim, const int64_t *shape, DLDevice dev) {
  vo_view v;
  memset(&v, 0, sizeof v);
  v.data = data;
  v.ndim = ndim;
  v.numel = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    v.shape[d] = shape[d];
    v.stride[d] = v.numel;
    v.numel *= shape[d];
  }
  v.dtype = dtype;
  v.device = dev;
  return v;
}

/* roi_pool_backward's checks of rois (arg 1) and argmax (arg 2) on `dev`. */
static vo_status run_checks(DLDevice dev, void *rois, void *argmax, char *msg, size_t size) {
  static vo_exec ex; /* large: not on the stack */
  memset(&ex, 0, sizeof ex);
  ex.ctx = vo_default_context();
  ex.backend = vo_backend_for_device(dev.device_type);
  ex.op = VO_OP_roi_pool_backward;
  ex.op_name = "roi_pool_backward";
  ex.device = dev;
  ex.dtype = VO_F32;
  const int64_t rs[2] = {K, 5}, as[4] = {K, C, PH, PW};
  ex.inputs[1] = view_of(rois, VO_F32, 2, rs, dev);
  ex.inputs[2] = view_of(argmax, VO_I32, 4, as, dev);
  ex.num_data_checks = 2;
  vo_k_check *r = &ex.data_checks[0].check, *a = &ex.data_checks[1].check;
  ex.data_checks[0].arg = 1;
  r->kind = VO_K_CHECK_ROIS;
  r->dtype = VO_DT_F32;
  for (int d = 0; d < 4; d++) {
    r->shape[d] = d < 2 ? rs[d] : 1;
    r->stride[d] = d < 2 ? ex.inputs[1].stride[d] : 0;
    a->shape[d] = as[d];
    a->stride[d] = ex.inputs[2].stride[d];
  }
  r->batch_size = 2;
  ex.data_checks[1].arg = 2;
  a->kind = VO_K_CHECK_ARGMAX;
  a->dtype = VO_DT_I32;
  a->hw = 12;
  const vo_status st = vo_run_data_checks(&ex);
  snprintf(msg, size, "%s", st == VO_OK ? "" : vo_last_error());
  return st;
}

int main(void) {
  const vo_backend *be = vo_backend_for_device(kDLOpenCL);
  const char *detail = NULL;
  if (!be || be->not_built_reason || !vo_backend_available(be, &detail)) {
    printf("skipped: no OpenCL device (%s)\n", detail ? detail : "not built");
    return 77;
  }
  const DLDevice host = {kDLCPU, 0}, dev = {kDLOpenCL, 0};
  float rois[K * 5];
  int32_t argmax[K * C * PH * PW];
  void *d_rois = be->alloc(dev, sizeof rois, NULL), *d_argmax = be->alloc(dev, sizeof argmax, NULL);
  if (!CHECK_MSG(d_rois && d_argmax, "alloc on opencl failed"))
    return vt_finish("test_opencl_checks");
  static const char *const cases[] = {"good values", "batch index out of range and a NaN",
                                      "fractional batch index", "argmax out of range"};
  for (int c = 0; c < 4; c++) {
    for (int k = 0; k < K; k++) {
      const float row[5] = {(float)(k % 2), 1, 2, 5, 6};
      memcpy(rois + 5 * k, row, sizeof row);
    }
    for (int i = 0; i < K * C * PH * PW; i++) argmax[i] = i % 13 - 1; /* -1 .. 11 */
    if (c == 1) {
      rois[3 * 5 + 0] = 7;
      rois[4 * 5 + 2] = NAN;
    } else if (c == 2) {
      rois[5 * 5 + 0] = 0.5f;
    } else if (c == 3) {
      argmax[K * C * PH * PW - 2] = 12;
    }
    char want[1024], got[1024];
    const vo_status sw = run_checks(host, rois, argmax, want, sizeof want);
    if (be->copy_to_device(dev, d_rois, 0, rois, sizeof rois, NULL) != VO_OK ||
        be->copy_to_device(dev, d_argmax, 0, argmax, sizeof argmax, NULL) != VO_OK) {
      CHECK_MSG(0, "copy to opencl failed: %s", vo_last_error());
      break;
    }
    const vo_status sg = run_checks(dev, d_rois, d_argmax, got, sizeof got);
    CHECK_MSG(sw == sg && strcmp(want, got) == 0, "%s: opencl %d \"%s\", host %d \"%s\"", cases[c],
              (int)sg, got, (int)sw, want);
    CHECK_MSG((c == 0) == (sw == VO_OK), "%s: host status %d \"%s\"", cases[c], (int)sw, want);
    printf("  %-36s %s\n", cases[c], *got ? got : "ok");
  }
  be->free(dev, d_rois, NULL);
  be->free(dev, d_argmax, NULL);
  return vt_finish("test_opencl_checks");
}
