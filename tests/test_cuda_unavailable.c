/* Built only with the CUDA backend, run where no GPU is visible: the backend
 * reports why it is unavailable, yet no op disappears and the CPU still works. */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

/* Distinct fake device addresses (outputs must not overlap inputs); never
 * dereferenced. */
static uintptr_t next_fake = 0x7f0000002000ull;

static const char *const ops[] = {
    "nms", "batched_nms", "box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou"};

/* A header for a [rows(, cols)] tensor at a fake CUDA address. */
typedef struct fake {
  DLTensor dl;
  int64_t shape[2];
} fake;

static void fake_init(fake *f, DLDataType dt, int ndim, int64_t rows, int64_t cols) {
  memset(f, 0, sizeof *f);
  f->shape[0] = rows;
  f->shape[1] = cols;
  f->dl.data = (void *)next_fake;
  next_fake += 0x100000;
  f->dl.device.device_type = kDLCUDA;
  f->dl.device.device_id = 0;
  f->dl.ndim = ndim;
  f->dl.dtype = dt;
  f->dl.shape = f->shape;
}

int main(void) {
  vo_backend_info cuda;
  memset(&cuda, 0, sizeof cuda);
  int have = 0, count = vo_backend_count();
  for (int i = 0; i < count; i++) {
    vo_backend_info info;
    if (CHECK_STATUS(vo_backend_status(i, &info), VO_OK) && info.name &&
        strcmp(info.name, "cuda") == 0) {
      cuda = info;
      have = 1;
    }
  }
  if (!CHECK_MSG(have, "no \"cuda\" backend listed although the library was built with CUDA"))
    return vt_finish("test_cuda_unavailable");
  if (cuda.available) {
    printf("skipped: a GPU is visible (%s)\n", cuda.detail);
    return 77;
  }
  printf("cuda backend: built=%d available=%d detail=\"%s\"\n", cuda.built, cuda.available,
         cuda.detail);
  CHECK(cuda.built == 1);
  CHECK(cuda.device_type == kDLCUDA);
  CHECK_MSG(cuda.detail && *cuda.detail, "the cuda backend gives no reason for being unavailable");

  /* Every op is still registered. */
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
    CHECK_MSG(vo_op_find(ops[k]) != NULL, "op %s is missing", ops[k]);

  /* The CPU still computes. */
  {
    const double boxes[] = {0, 0, 2, 2, 1, 1, 3, 3};
    const double scores[] = {0.4, 0.6};
    const int64_t s14[2] = {1, 4}, s11[2] = {1, 1}, s24[2] = {2, 4}, s2[1] = {2};
    vt_tensor *a = vt_tensor_new(vt_f32, 2, s14, boxes);
    vt_tensor *b = vt_tensor_new(vt_f32, 2, s14, boxes + 4);
    vt_tensor *o = vt_tensor_new(vt_f32, 2, s11, NULL);
    vt_tensor *bx = vt_tensor_new(vt_f32, 2, s24, boxes);
    vt_tensor *sc = vt_tensor_new(vt_f32, 1, s2, scores);
    vt_tensor *k = vt_tensor_new(vt_i64, 1, s2, NULL);
    vt_tensor *n = vt_tensor_new(vt_i64, 0, NULL, NULL);
    CHECK_STATUS(vo_box_iou(NULL, &a->dl, &b->dl, &o->dl), VO_OK);
    CHECK_MSG(vt_get(&o->dl, 0) == (double)(1.0f / 7.0f), "box_iou on the CPU: %.9g",
              vt_get(&o->dl, 0));
    CHECK_STATUS(vo_nms(NULL, &bx->dl, &sc->dl, 0.5, &k->dl, &n->dl), VO_OK);
    CHECK_MSG(vt_get(&n->dl, 0) == 2 && vt_get(&k->dl, 0) == 1 && vt_get(&k->dl, 1) == 0,
              "nms on the CPU: num_kept %g keep [%g, %g]", vt_get(&n->dl, 0), vt_get(&k->dl, 0),
              vt_get(&k->dl, 1));
    vt_tensor *all[] = {a, b, o, bx, sc, k, n};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vt_tensor_free(all[i]);
  }

  /* CUDA tensors: a clear error naming the op and the backend; the fake
   * pointers are never touched. */
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
    CHECK_ERROR_HAS("cuda");
    CHECK_STATUS(vo_box_iou(NULL, &a.dl, &b.dl, &o.dl), VO_ERROR_BACKEND_UNAVAILABLE);
    CHECK_ERROR_HAS("box_iou");
    CHECK_ERROR_HAS("cuda");
    /* The shape query needs no backend. */
    vo_tensor_desc desc;
    CHECK_STATUS(vo_box_iou_shape(NULL, &a.dl, &b.dl, &desc), VO_OK);
    CHECK(desc.device.device_type == kDLCUDA);
  }
  return vt_finish("test_cuda_unavailable");
}
