/*
 * Every op of the sample registry (tests/samples) with its input tensors
 * as flipped views (vs_build_as's VS_FLIPPED: every stride negative, the
 * first element the last in memory; the same logical values) against the
 * same sample in vs_build's layouts: the outputs must be bit-identical, on
 * the CPU's plain path and its default (AVX2) path, in float32 and float64,
 * on random and edge-case samples. DLPack allows negative strides. Kernels
 * that take a negative offset for a sentinel (the bilinear RoI ops' "outside
 * the map" was pos < 0) give wrong values; ones that compute an address as
 * (size_t)offset * size wrap (undefined behaviour: CI runs this program
 * under gcc's and clang's UBSan). test_backend_ops runs flipped samples on
 * the other backends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/samples.h"
#include "test_util.h"

typedef struct result {
  vo_status status;
  char error[512];
  int num_outputs;
  vt_tensor *out[VO_MAX_LIST];
} result;

static void result_free(result *r) {
  for (int k = 0; k < r->num_outputs; k++) vt_tensor_free(r->out[k]);
  r->num_outputs = 0;
}

/* Runs s under ctx into outputs shaped as descs and filled with a sentinel. */
static void run(const vs_sample *s, const vo_tensor_desc *descs, const vo_context *ctx, result *r) {
  DLTensor *outs[VO_MAX_LIST];
  for (int k = 0; k < s->num_outputs; k++) {
    r->out[k] = vt_tensor_new(descs[k].dtype, descs[k].ndim, descs[k].shape, NULL);
    vt_fill(&r->out[k]->dl, 55);
    outs[k] = &r->out[k]->dl;
  }
  r->num_outputs = s->num_outputs;
  r->status = vo_call(ctx, s->op, s->args, s->num_args, outs, s->num_outputs);
  snprintf(r->error, sizeof r->error, "%s", r->status == VO_OK ? "" : vo_last_error());
}

static int bit_identical(const result *a, const result *b) {
  for (int k = 0; k < a->num_outputs; k++)
    if (a->out[k]->mem_bytes != b->out[k]->mem_bytes ||
        memcmp(a->out[k]->mem, b->out[k]->mem, a->out[k]->mem_bytes) != 0) {
      for (int64_t i = 0; i < vt_numel(&a->out[k]->dl); i++)
        if (vt_get(&a->out[k]->dl, i) != vt_get(&b->out[k]->dl, i)) {
          fprintf(stderr, "  output %d element %lld of %lld: %.17g, flipped %.17g\n", k,
                  (long long)i, (long long)vt_numel(&a->out[k]->dl), vt_get(&a->out[k]->dl, i),
                  vt_get(&b->out[k]->dl, i));
          break;
        }
      return 0;
    }
  return 1;
}

/* Every layout vs_build gives (contiguous, strided, channels-last) and the edge cases. */
static const struct {
  vs_variant variant;
  uint64_t seed;
} cases[] = {{VS_RANDOM, 0}, {VS_RANDOM, 1}, {VS_RANDOM, 2},
             {VS_RANDOM, 3}, {VS_EDGE, 0},   {VS_EDGE, 1}};

int main(void) {
  vo_context *ctxs[2] = {NULL, NULL};
  const vo_isa isas[2] = {VO_ISA_SCALAR, VO_ISA_AUTO};
  for (int c = 0; c < 2; c++)
    if (vo_context_create(&ctxs[c]) != VO_OK || vo_context_set_isa(ctxs[c], isas[c]) != VO_OK) {
      fprintf(stderr, "test_flipped_inputs: cannot set up a context: %s\n", vo_last_error());
      return 2;
    }
  const DLDataType dtypes[2] = {vt_f32, vt_f64};
  int calls = 0;
  for (int index = 0; index < vo_op_count(); index++) {
    const vo_op_info *op = vo_op_get(index);
    for (int d = 0; d < 2; d++)
      for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        vs_sample s, f;
        vs_build(&s, op->index, cases[k].variant, dtypes[d], cases[k].seed);
        vs_build_as(&f, op->index, cases[k].variant, dtypes[d], cases[k].seed, VS_FLIPPED);
        vo_tensor_desc descs[VO_MAX_LIST];
        if (vo_infer(NULL, op, s.args, s.num_args, descs, s.num_outputs) != VO_OK) {
          vs_free(&s), vs_free(&f); /* an unsupported dtype: test_backend_ops lists those */
          continue;
        }
        for (int c = 0; c < 2; c++) {
          const char *path = c ? "default" : "plain";
          result want, got;
          run(&s, descs, ctxs[c], &want);
          run(&f, descs, ctxs[c], &got);
          if (want.status == VO_OK &&
              CHECK_MSG(got.status == VO_OK, "%s (%s path): %s", f.label, path, got.error))
            CHECK_MSG(bit_identical(&want, &got), "%s (%s path): outputs differ from %s's", f.label,
                      path, vs_variant_name(cases[k].variant));
          calls += want.status == VO_OK;
          result_free(&want), result_free(&got);
        }
        vs_free(&s), vs_free(&f);
      }
  }
  printf("%d calls compared with flipped inputs\n", calls);
  vo_context_destroy(ctxs[0]), vo_context_destroy(ctxs[1]);
  return vt_finish("test_flipped_inputs");
}
