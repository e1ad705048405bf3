/* Run with PoCL told to pass the kernel compiler a bad option
 * (POCL_EXTRA_BUILD_FLAGS), so that no OpenCL program builds: every op stays
 * registered, an OpenCL call fails with the op's error, the program's name
 * and the compiler's log, writes no output, fails the same way again (the
 * failure is cached), and the CPU still computes. Linked statically for the
 * backend's memory functions. Skipped (77) without an OpenCL device, or
 * where the programs build anyway (a driver other than PoCL). */
#include <stdio.h>

#include "core/internal.h"
#include "test_util.h"

int main(void) {
  const vo_backend *be = vo_backend_for_device(kDLOpenCL);
  const char *detail = NULL;
  if (!be || be->not_built_reason || !vo_backend_available(be, &detail)) {
    printf("skipped: no OpenCL device (%s)\n", detail ? detail : "not built");
    return 77;
  }
  CHECK_MSG(vo_op_count() == VO_NUM_OPS, "%d ops registered", vo_op_count());
  const DLDevice dev = {kDLOpenCL, 0};
  const double boxes[] = {0, 0, 2, 2, 1, 1, 3, 3};
  const int64_t s24[2] = {2, 4}, s22[2] = {2, 2};
  vt_tensor *a = vt_tensor_new(vt_f32, 2, s24, boxes);
  vt_tensor *o = vt_tensor_new(vt_f32, 2, s22, NULL);
  const float sentinel[4] = {55, 55, 55, 55};
  void *da = be->alloc(dev, a->mem_bytes, NULL), *dout = be->alloc(dev, sizeof sentinel, NULL);
  if (!CHECK_MSG(da && dout, "alloc on opencl failed") ||
      !CHECK_STATUS(be->copy_to_device(dev, da, 0, a->mem, a->mem_bytes, NULL), VO_OK) ||
      !CHECK_STATUS(be->copy_to_device(dev, dout, 0, sentinel, sizeof sentinel, NULL), VO_OK))
    return vt_finish("test_opencl_build_failure");
  DLTensor ta = a->dl, to = o->dl;
  ta.data = da;
  ta.device = dev;
  to.data = dout;
  to.device = dev;
  const vo_status first = vo_box_iou(NULL, &ta, &ta, &to);
  if (first == VO_OK) {
    printf("skipped: the programs built despite POCL_EXTRA_BUILD_FLAGS (not PoCL?)\n");
    return 77;
  }
  for (int round = 0; round < 2; round++) {
    if (round)
      CHECK_STATUS(vo_box_iou(NULL, &ta, &ta, &to), VO_ERROR_BACKEND_FAILURE);
    else
      CHECK(first == VO_ERROR_BACKEND_FAILURE);
    CHECK_ERROR_HAS("box_iou: the OpenCL program 'box_iou' does not build");
    CHECK_ERROR_HAS("build log");
  }
  printf("box_iou on opencl: %.200s\n", vo_last_error());
  float back[4] = {0, 0, 0, 0};
  CHECK_STATUS(be->copy_to_host(dev, back, dout, 0, sizeof back, NULL), VO_OK);
  int untouched = 1;
  for (int i = 0; i < 4; i++) untouched &= back[i] == sentinel[i];
  CHECK_MSG(untouched, "the failed call wrote output");
  /* The CPU still computes. */
  CHECK_STATUS(vo_box_iou(NULL, &a->dl, &a->dl, &o->dl), VO_OK);
  CHECK_MSG(vt_get(&o->dl, 1) == (double)(1.0f / 7.0f), "box_iou on the CPU: %.9g",
            vt_get(&o->dl, 1));
  be->free(dev, da, NULL);
  be->free(dev, dout, NULL);
  vt_tensor_free(a);
  vt_tensor_free(o);
  return vt_finish("test_opencl_build_failure");
}
