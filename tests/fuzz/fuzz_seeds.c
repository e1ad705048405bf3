/*
 * Writes the fuzz corpus's seeds: one valid call of every registered op, in
 * the format of fuzz_format.h, encoded from the sample registry's small
 * float32 sample (tests/samples), whose builder table ops.def generates: a
 * new op cannot go unfuzzed. fuzz_seeds DIR (the seeds are written and
 * replayed with --expect-ok by ctest).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_format.h"
#include "samples/samples.h"

typedef struct enc {
  uint8_t buf[1 << 16];
  size_t len;
  const char *op;
} enc;

static void put(enc *e, const void *p, size_t n) {
  if (e->len + n > sizeof e->buf) {
    fprintf(stderr, "fuzz_seeds: the sample of %s is too large for a seed\n", e->op);
    exit(1);
  }
  memcpy(e->buf + e->len, p, n);
  e->len += n;
}

static void put_u8(enc *e, uint8_t b) { put(e, &b, 1); }

/* The fuzz harness's dtype code of a DLPack dtype. */
static uint8_t dtype_code(const enc *e, DLDataType t) {
  static const struct {
    uint8_t code, bits, fuzz;
  } table[] = {{kDLFloat, 32, FUZZ_F32},   {kDLFloat, 64, FUZZ_F64}, {kDLFloat, 16, FUZZ_F16},
               {kDLBfloat, 16, FUZZ_BF16}, {kDLInt, 64, FUZZ_I64},   {kDLInt, 32, FUZZ_I32},
               {kDLInt, 16, FUZZ_I16},     {kDLUInt, 8, FUZZ_U8}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (t.code == table[i].code && t.bits == table[i].bits && t.lanes == 1) return table[i].fuzz;
  fprintf(stderr, "fuzz_seeds: the sample of %s has a dtype the fuzz format lacks\n", e->op);
  exit(1);
}

/* A tensor item (no kind byte): contiguous, its elements in logical order. */
static void put_tensor_item(enc *e, const DLTensor *t) {
  put_u8(e, 0); /* flags: on the CPU, default strides, no offset */
  put_u8(e, dtype_code(e, t->dtype));
  put_u8(e, (uint8_t)t->ndim);
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] >= FUZZ_SIZE_SPECIAL) {
      fprintf(stderr, "fuzz_seeds: the sample of %s has a size the fuzz format lacks\n", e->op);
      exit(1);
    }
    put_u8(e, (uint8_t)t->shape[d]);
  }
  const size_t es = vt_dtype_bytes(t->dtype);
  const int64_t n = vt_numel(t);
  int64_t idx[VO_MAX_DIMS] = {0};
  for (int64_t k = 0; k < n; k++) {
    int64_t off = 0, step = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
      off += idx[d] * (t->strides ? t->strides[d] : step);
      step *= t->shape[d];
    }
    put(e, (const char *)t->data + t->byte_offset + off * (int64_t)es, es);
    for (int d = t->ndim - 1; d >= 0; d--) {
      if (++idx[d] < t->shape[d]) break;
      idx[d] = 0;
    }
  }
}

static void put_arg(enc *e, const vo_value *v) {
  put_u8(e, 0); /* the schema's kind */
  switch (v->kind) {
    case VO_VALUE_NONE:
      put_u8(e, FUZZ_T_NONE);
      put_u8(e, 0);
      put_u8(e, 0);
      break;
    case VO_VALUE_TENSOR: put_tensor_item(e, v->u.tensor); break;
    case VO_VALUE_FLOAT: put(e, &v->u.f, sizeof v->u.f); break;
    case VO_VALUE_INT: put(e, &v->u.i, sizeof v->u.i); break;
    case VO_VALUE_BOOL: put_u8(e, (uint8_t)v->u.b); break;
    case VO_VALUE_TENSOR_LIST:
      put_u8(e, (uint8_t)v->u.tensors.count);
      for (int64_t i = 0; i < v->u.tensors.count; i++) put_tensor_item(e, v->u.tensors.items[i]);
      break;
    case VO_VALUE_FLOAT_LIST:
      put_u8(e, (uint8_t)v->u.floats.count);
      put(e, v->u.floats.items, sizeof(double) * (size_t)v->u.floats.count);
      break;
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fuzz_seeds DIR\n");
    return 2;
  }
  mkdir(argv[1], 0777); /* an existing directory is fine; fopen reports the rest */
  for (int i = 0; i < vo_op_count(); i++) {
    vs_sample s;
    vs_build(&s, i, VS_SMALL, vt_f32, 0);
    static enc e;
    e.len = 0;
    e.op = s.op->name;
    put_u8(&e, (uint8_t)i);
    put_u8(&e, FUZZ_NARGS_EXACT);
    put_u8(&e, 1); /* two threads, default workspace */
    for (int a = 0; a < s.num_args; a++) put_arg(&e, &s.args[a]);
    put_u8(&e, 0); /* outputs exactly as described */
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%s", argv[1], s.op->name);
    vs_free(&s);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(e.buf, 1, e.len, f) != e.len || fclose(f) != 0) {
      fprintf(stderr, "fuzz_seeds: cannot write %s\n", path);
      return 1;
    }
  }
  printf("fuzz_seeds: %d seeds in %s\n", vo_op_count(), argv[1]);
  return 0;
}
