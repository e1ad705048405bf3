/* LARGE TEST (about 7 GiB of memory, tens of seconds): roi_align with an
 * output of more than 2^31 elements, where 32-bit index arithmetic would
 * wrap (torchvision crashes there), must equal two half-size calls. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "test_util.h"

enum { C = 64, H = 64, W = 64, PH = 32, PW = 32 };
/* K * C * PH * PW = 2,147,549,184 > 2^31. */
static const int64_t K = 32769;

static DLTensor make_tensor(void *data, DLDataType dtype, int ndim, int64_t *shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device = (DLDevice){kDLCPU, 0};
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

int main(void) {
  const int64_t row = (int64_t)C * PH * PW; /* output elements per RoI */
  CHECK_MSG(K * row > ((int64_t)1 << 31), "the case must exceed 2^31 elements");
  const size_t es = 2; /* float16 keeps the footprint within a 24 GiB machine */
  uint16_t *input = malloc((size_t)C * H * W * es);
  uint16_t *rois = malloc((size_t)K * 5 * es);
  uint16_t *big = malloc((size_t)(K * row) * es);
  const int64_t half_k = K / 2;
  uint16_t *half = malloc((size_t)((K - half_k) * row) * es);
  if (!input || !rois || !big || !half) {
    printf("skipped: could not allocate the %.1f GiB this test needs\n",
           (double)(K * row + (K - half_k) * row) * (double)es / (1 << 30));
    free(input);
    free(rois);
    free(big);
    free(half);
    return 77;
  }
  vt_rng rng;
  vt_rng_seed(&rng, 2031);
  for (int64_t i = 0; i < (int64_t)C * H * W; i++)
    input[i] = vo_f32_to_f16((float)vt_rng_uniform(&rng, -1, 1));
  for (int64_t k = 0; k < K; k++) {
    double x = vt_rng_uniform(&rng, -4, 60), y = vt_rng_uniform(&rng, -4, 60);
    const double r[5] = {0, x, y, x + vt_rng_uniform(&rng, 1, 30), y + vt_rng_uniform(&rng, 1, 30)};
    for (int j = 0; j < 5; j++) rois[k * 5 + j] = vo_f32_to_f16((float)r[j]);
  }

  int64_t in_shape[4] = {1, C, H, W}, roi_shape[2] = {K, 5}, out_shape[4] = {K, C, PH, PW};
  DLTensor in_t = make_tensor(input, vt_f16, 4, in_shape);
  DLTensor rois_t = make_tensor(rois, vt_f16, 2, roi_shape);
  DLTensor big_t = make_tensor(big, vt_f16, 4, out_shape);
  CHECK_STATUS(vo_roi_align(NULL, &in_t, &rois_t, 1.0, PH, PW, 1, 1, &big_t), VO_OK);

  /* The same RoIs in two calls: [0, half_k) and [half_k, K). */
  for (int part = 0; part < 2; part++) {
    const int64_t k0 = part ? half_k : 0, k1 = part ? K : half_k;
    int64_t part_rois_shape[2] = {k1 - k0, 5}, part_out_shape[4] = {k1 - k0, C, PH, PW};
    DLTensor part_rois = make_tensor(rois + k0 * 5, vt_f16, 2, part_rois_shape);
    DLTensor part_out = make_tensor(half, vt_f16, 4, part_out_shape);
    if (!CHECK_STATUS(vo_roi_align(NULL, &in_t, &part_rois, 1.0, PH, PW, 1, 1, &part_out), VO_OK))
      continue;
    /* Compare RoI by RoI so a mismatch says where. */
    int64_t bad = -1;
    for (int64_t k = k0; k < k1 && bad < 0; k++)
      if (memcmp(big + k * row, half + (k - k0) * row, (size_t)row * es) != 0) bad = k;
    CHECK_MSG(bad < 0, "RoI %lld of the >2^31-element output differs from the half-size call",
              (long long)bad);
  }
  /* The last element really was written (offset > 2^31). */
  int nonzero = 0;
  for (int64_t i = (K - 1) * row; i < K * row && !nonzero; i++) nonzero = big[i] != 0;
  CHECK_MSG(nonzero, "the last RoI's output is all zeros");
  free(input);
  free(rois);
  free(big);
  free(half);
  return vt_finish("test_large");
}
