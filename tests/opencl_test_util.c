/* Device copies for the OpenCL tests (opencl_test_util.h). */
#include "opencl_test_util.h"

#include <stdio.h>
#include <stdlib.h>

enum { MAX_MEMS = 32 };

static const vo_backend *vt_be;
static DLDevice vt_dev;
static const char *vt_program = "test";
static void *vt_mems[MAX_MEMS];
static int vt_num_mems;

void vt_cl_use(const vo_backend *be, DLDevice dev, const char *program) {
  vt_be = be;
  vt_dev = dev;
  vt_program = program;
}

void vt_cl_die(const char *what) {
  fprintf(stderr, "%s: %s: %s\n", vt_program, what, vo_last_error());
  exit(2);
}

DLTensor vt_cl_on_device(const vt_tensor *h) {
  if (vt_num_mems == MAX_MEMS) vt_cl_die("too many device tensors");
  void *m = vt_be->alloc(vt_dev, h->mem_bytes ? h->mem_bytes : 1, NULL);
  if (!m || vt_be->copy_to_device(vt_dev, m, 0, h->mem, h->mem_bytes, NULL) != VO_OK)
    vt_cl_die("copy to opencl failed");
  vt_mems[vt_num_mems++] = m;
  DLTensor t = h->dl;
  t.data = m;
  t.byte_offset = (uint64_t)((char *)h->dl.data - (char *)h->mem) + h->dl.byte_offset;
  t.device = vt_dev;
  return t;
}

void vt_cl_free_all(void) {
  while (vt_num_mems) vt_be->free(vt_dev, vt_mems[--vt_num_mems], NULL);
}

void vt_cl_read_back(const DLTensor *d, vt_tensor *h) {
  /* d's buffer holds h's whole allocation (vt_cl_on_device), or h is laid
   * out as d from its first byte */
  const uint64_t start = d->byte_offset >= h->dl.byte_offset ? d->byte_offset - h->dl.byte_offset : 0;
  if (vt_be->copy_to_host(vt_dev, h->mem, d->data, start, h->mem_bytes, NULL) != VO_OK)
    vt_cl_die("copy to the host failed");
}
