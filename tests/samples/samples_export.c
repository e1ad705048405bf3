/*
 * vo_samples_export DIR [VARIANT[:SEED] [DTYPE...]]: writes the sample
 * registry's samples of every op (default: the model-sized variant, seed 0,
 * in float32 and float16) for programs outside C, as
 * tests/python/gpu_compare.py and the Python tests' generic cases. DIR gets
 * index.json, a list of {"op", "dtype", "variant", "seed", "seeds" (how
 * many distinct seeds the variant has), "num_outputs", "note", "args"},
 * each argument {"kind": "tensor", "dtype", "shape", "file"} (the file
 * holds the elements in logical order, little-endian), {"kind": "none"},
 * {"kind": "float"|"int"|"bool", "value"}, {"kind": "tensor_list", "items":
 * [tensors]} or {"kind": "float_list", "values"}; and the tensors' files.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "samples/samples.h"

static const char *dir;
static int files;

static void fail(const char *what) {
  fprintf(stderr, "vo_samples_export: %s\n", what);
  exit(1);
}

/* A JSON number Python reads back as a float (never as an int). */
static void put_float(FILE *f, double v) {
  char buf[40];
  const int n = snprintf(buf, sizeof buf, "%.17g", v);
  if (!strpbrk(buf, ".eEn") && n > 0 && (size_t)n + 3 <= sizeof buf) memcpy(buf + n, ".0", 3);
  fputs(buf, f);
}

/* The tensor's elements in logical (row-major) order, whatever its strides:
 * a strided or channels-last sample is written as its contiguous copy. */
static void put_tensor(FILE *f, const DLTensor *t) {
  const size_t es = vt_dtype_bytes(t->dtype);
  const int64_t n = vt_numel(t);
  char name[64], path[4096];
  snprintf(name, sizeof name, "t%d.bin", files++);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *out = fopen(path, "wb");
  if (!out) fail("cannot write a tensor file");
  const char *data = (const char *)t->data + t->byte_offset;
  for (int64_t i = 0; i < n; i++) {
    int64_t rest = i, offset = 0, step = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
      const int64_t at = rest % t->shape[d];
      rest /= t->shape[d];
      offset += at * (t->strides ? t->strides[d] : step);
      step *= t->shape[d];
    }
    if (fwrite(data + offset * (int64_t)es, es, 1, out) != 1) fail("cannot write a tensor file");
  }
  if (fclose(out) != 0) fail("cannot write a tensor file");
  fprintf(f, "{\"kind\": \"tensor\", \"dtype\": \"%s\", \"shape\": [", vt_dtype_name(t->dtype));
  for (int d = 0; d < t->ndim; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  fprintf(f, "], \"file\": \"%s\"}", name);
}

static void put_arg(FILE *f, const vo_value *v) {
  switch (v->kind) {
    case VO_VALUE_NONE: fputs("{\"kind\": \"none\"}", f); break;
    case VO_VALUE_TENSOR: put_tensor(f, v->u.tensor); break;
    case VO_VALUE_FLOAT:
      fputs("{\"kind\": \"float\", \"value\": ", f);
      put_float(f, v->u.f);
      fputs("}", f);
      break;
    case VO_VALUE_INT: fprintf(f, "{\"kind\": \"int\", \"value\": %lld}", (long long)v->u.i); break;
    case VO_VALUE_BOOL:
      fprintf(f, "{\"kind\": \"bool\", \"value\": %s}", v->u.b ? "true" : "false");
      break;
    case VO_VALUE_TENSOR_LIST:
      fputs("{\"kind\": \"tensor_list\", \"items\": [", f);
      for (int64_t i = 0; i < v->u.tensors.count; i++) {
        if (i) fputs(", ", f);
        put_tensor(f, v->u.tensors.items[i]);
      }
      fputs("]}", f);
      break;
    case VO_VALUE_FLOAT_LIST:
      fputs("{\"kind\": \"float_list\", \"values\": [", f);
      for (int64_t i = 0; i < v->u.floats.count; i++) {
        if (i) fputs(", ", f);
        put_float(f, v->u.floats.items[i]);
      }
      fputs("]}", f);
      break;
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: vo_samples_export DIR [random|edge|small|model[:SEED] [DTYPE...]]\n");
    return 2;
  }
  dir = argv[1];
  vs_variant variant = VS_MODEL;
  uint64_t seed = 0;
  if (argc > 2) {
    const char *colon = strchr(argv[2], ':');
    const size_t len = colon ? (size_t)(colon - argv[2]) : strlen(argv[2]);
    variant = VS_NUM_VARIANTS;
    for (int v = 0; v < VS_NUM_VARIANTS; v++) {
      const char *name = vs_variant_name((vs_variant)v);
      if (strlen(name) == len && strncmp(argv[2], name, len) == 0) variant = (vs_variant)v;
    }
    if (variant == VS_NUM_VARIANTS) fail("unknown variant");
    if (colon) {
      char *end;
      seed = strtoull(colon + 1, &end, 10);
      if (end == colon + 1 || *end) fail("the seed after ':' must be a decimal number");
    }
  }
  const DLDataType *dtypes[VS_NUM_DTYPES] = {&vt_f32, &vt_f16};
  int num_dtypes = 2;
  if (argc > 3) {
    num_dtypes = 0;
    for (int a = 3; a < argc && num_dtypes < VS_NUM_DTYPES; a++) {
      const DLDataType *found = NULL;
      for (int d = 0; d < VS_NUM_DTYPES; d++)
        if (strcmp(argv[a], vt_dtype_name(*vs_dtypes[d])) == 0) found = vs_dtypes[d];
      if (!found) fail("unknown dtype (float32, float64, float16, bfloat16)");
      dtypes[num_dtypes++] = found;
    }
  }
  const int seeds = variant == VS_RANDOM ? VS_RANDOM_SEEDS : variant == VS_EDGE ? VS_EDGE_SEEDS : 1;
  mkdir(dir, 0777); /* an existing directory is fine; fopen reports the rest */
  char path[4096];
  snprintf(path, sizeof path, "%s/index.json", dir);
  FILE *f = fopen(path, "w");
  if (!f) fail("cannot write index.json");
  fputs("[\n", f);
  int count = 0;
  for (int i = 0; i < vo_op_count(); i++) {
    for (int d = 0; d < num_dtypes; d++) {
      vs_sample s;
      vs_build(&s, i, variant, *dtypes[d], seed);
      fprintf(f, "%s  {\"op\": \"%s\", \"dtype\": \"%s\", \"variant\": \"%s\", ",
              count++ ? ",\n" : "", s.op->name, vt_dtype_name(*dtypes[d]),
              vs_variant_name(variant));
      fprintf(f, "\"seed\": %llu, \"seeds\": %d, \"num_outputs\": %d, ", (unsigned long long)seed,
              seeds, s.num_outputs);
      fprintf(f, "\"note\": \"%s\", \"args\": [", s.note ? s.note : "");
      for (int a = 0; a < s.num_args; a++) {
        if (a) fputs(", ", f);
        put_arg(f, &s.args[a]);
      }
      fputs("]}", f);
      vs_free(&s);
    }
  }
  fputs("\n]\n", f);
  if (fclose(f) != 0) fail("cannot write index.json");
  printf("vo_samples_export: %d samples (%s) in %s\n", count, vs_variant_name(variant), dir);
  return 0;
}
