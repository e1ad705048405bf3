/* dlopen, run ops that start the CPU thread pool, dlclose, repeat: the
 * pool's workers must be gone before the library's code is unmapped (a
 * worker still spinning or sleeping in it would crash the process). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <visionops/visionops.h>

typedef vo_status (*box_iou_fn)(const vo_context *, const DLTensor *, const DLTensor *, DLTensor *);
typedef vo_status (*ctx_create_fn)(vo_context **);
typedef vo_status (*ctx_threads_fn)(vo_context *, int);
typedef void (*ctx_destroy_fn)(vo_context *);

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_dlclose LIBRARY\n");
    return 2;
  }
  enum { N = 512 };
  static float boxes[N][4], out[N][N];
  for (int i = 0; i < N; i++) {
    boxes[i][0] = (float)(i % 17), boxes[i][1] = (float)(i % 13);
    boxes[i][2] = boxes[i][0] + 5, boxes[i][3] = boxes[i][1] + 7;
  }
  int64_t bs[2] = {N, 4}, os[2] = {N, N};
  DLTensor b = {boxes, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, bs, NULL, 0};
  DLTensor o = {out, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, os, NULL, 0};
  for (int round = 0; round < 20; round++) {
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      fprintf(stderr, "test_dlclose: %s\n", dlerror());
      return 1;
    }
    box_iou_fn iou = (box_iou_fn)dlsym(lib, "vo_box_iou");
    ctx_create_fn create = (ctx_create_fn)dlsym(lib, "vo_context_create");
    ctx_threads_fn threads = (ctx_threads_fn)dlsym(lib, "vo_context_set_num_threads");
    ctx_destroy_fn destroy = (ctx_destroy_fn)dlsym(lib, "vo_context_destroy");
    vo_context *ctx = NULL;
    if (!iou || !create || !threads || !destroy || create(&ctx) != VO_OK ||
        threads(ctx, 4) != VO_OK) {
      fprintf(stderr, "test_dlclose: cannot set up round %d\n", round);
      return 1;
    }
    for (int k = 0; k < 3; k++)
      if (iou(ctx, &b, &b, &o) != VO_OK || out[1][1] != 1.0f) {
        fprintf(stderr, "test_dlclose: box_iou failed in round %d\n", round);
        return 1;
      }
    destroy(ctx);
    dlclose(lib);
    /* Long enough for a worker left behind to wake in unmapped code. */
    nanosleep(&(struct timespec){0, 2000000}, NULL);
  }
  printf("test_dlclose: 20 passed, 0 failed\n");
  return 0;
}
