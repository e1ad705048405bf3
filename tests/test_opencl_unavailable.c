/* Built with the OpenCL backend, run with OCL_ICD_VENDORS naming an empty
 * folder (no OpenCL platform): the backend is listed with why it is
 * unavailable, registration loses no op, the CPU still computes, and OpenCL
 * tensors get a clear error naming the op and the backend. */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "test_util.h"

/* Distinct fake cl_mem handles (outputs must not alias inputs); never used. */
static uintptr_t next_fake = 0x7e0000001000ull;

typedef struct fake {
  DLTensor dl;
  int64_t shape[2];
} fake;

static void fake_init(fake *f, DLDataType dt, int ndim, int64_t rows, int64_t cols) {
  memset(f, 0, sizeof *f);
  f->shape[0] = rows;
  f->shape[1] = cols;
  f->dl.data = (void *)next_fake;
  next_fake += 0x1000;
  f->dl.device.device_type = kDLOpenCL;
  f->dl.ndim = ndim;
  f->dl.dtype = dt;
  f->dl.shape = f->shape;
}

int main(void) {
  vo_backend_info ocl;
  memset(&ocl, 0, sizeof ocl);
  int have = 0;
  for (int i = 0; i < vo_backend_count(); i++) {
    vo_backend_info info;
    if (CHECK_STATUS(vo_backend_status(i, &info), VO_OK) && info.name &&
        strcmp(info.name, "opencl") == 0) {
      ocl = info;
      have = 1;
    }
  }
  if (!CHECK_MSG(have, "no \"opencl\" backend listed")) return vt_finish("test_opencl_unavailable");
  if (ocl.available) {
    printf("skipped: an OpenCL device is visible (%s)\n", ocl.detail);
    return 77;
  }
  printf("opencl backend: built=%d available=%d detail=\"%s\"\n", ocl.built, ocl.available,
         ocl.detail);
  CHECK(ocl.built == 1);
  CHECK(ocl.device_type == kDLOpenCL);
  CHECK_MSG(ocl.detail && strstr(ocl.detail, "no OpenCL"),
            "the opencl backend gives no reason for being unavailable: \"%s\"", ocl.detail);

  /* Every op is still registered. */
  CHECK_MSG(vo_op_count() == VO_NUM_OPS, "%d ops registered", vo_op_count());
  for (int i = 0; i < vo_op_count(); i++) CHECK_MSG(vo_op_get(i) != NULL, "op %d is missing", i);

  /* The CPU still computes. */
  {
    const double boxes[] = {0, 0, 2, 2, 1, 1, 3, 3};
    const int64_t s14[2] = {1, 4}, s11[2] = {1, 1};
    vt_tensor *a = vt_tensor_new(vt_f32, 2, s14, boxes);
    vt_tensor *b = vt_tensor_new(vt_f32, 2, s14, boxes + 4);
    vt_tensor *o = vt_tensor_new(vt_f32, 2, s11, NULL);
    CHECK_STATUS(vo_box_iou(NULL, &a->dl, &b->dl, &o->dl), VO_OK);
    CHECK_MSG(vt_get(&o->dl, 0) == (double)(1.0f / 7.0f), "box_iou on the CPU: %.9g",
              vt_get(&o->dl, 0));
    vt_tensor_free(a);
    vt_tensor_free(b);
    vt_tensor_free(o);
  }

  /* OpenCL tensors: a clear error, the fake handles never touched. */
  {
    fake bx, sc, keep, nk, a, b, o;
    fake_init(&bx, vt_f32, 2, 2, 4);
    fake_init(&sc, vt_f32, 1, 2, 0);
    fake_init(&keep, vt_i64, 1, 2, 0);
    fake_init(&nk, vt_i64, 0, 0, 0);
    fake_init(&a, vt_f32, 2, 1, 4);
    fake_init(&b, vt_f32, 2, 1, 4);
    fake_init(&o, vt_f32, 2, 1, 1);
    CHECK_STATUS(vo_nms(NULL, &bx.dl, &sc.dl, 0.5, &keep.dl, &nk.dl), VO_ERROR_BACKEND_UNAVAILABLE);
    CHECK_ERROR_HAS("nms");
    CHECK_ERROR_HAS("opencl");
    CHECK_STATUS(vo_box_iou(NULL, &a.dl, &b.dl, &o.dl), VO_ERROR_BACKEND_UNAVAILABLE);
    CHECK_ERROR_HAS("box_iou");
    CHECK_ERROR_HAS("opencl");
    vo_tensor_desc desc;
    CHECK_STATUS(vo_box_iou_shape(NULL, &a.dl, &b.dl, &desc), VO_OK);
    CHECK(desc.device.device_type == kDLOpenCL);
  }
  return vt_finish("test_opencl_unavailable");
}
