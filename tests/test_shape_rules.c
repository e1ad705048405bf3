/* Shape rules (vo_op_info.shape_rule, syntax in src/ops/ops.def) against the
 * check functions: for every op, random valid arguments (tensors without
 * data; an op without a generator below: every sample of the sample registry,
 * tests/samples/) through vo_infer, and the rule evaluated on the same
 * arguments, must give the same output shapes. The rule is what the Python layer evaluates
 * over symbolic sizes, so a disagreement would be a wrong shape under
 * torch.export / torch.compile(dynamic=True). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/samples.h"
#include "test_util.h"

#define MAX_TENSORS 64
#define MAX_ARGS VS_MAX_ARGS

/* ------------------------------------------------------------ the arguments */

typedef struct call {
  const vo_op_info *op;
  vo_value args[MAX_ARGS];
  int num_args;
  char names[MAX_ARGS][32]; /* argument names, from the schema */
  DLTensor tensors[MAX_TENSORS];
  int64_t shapes[MAX_TENSORS][4];
  int num_tensors;
  const DLTensor *lists[VO_MAX_LIST];
  double floats[VO_MAX_LIST];
} call;

/* The argument names of op's schema, in order. */
static void read_names(call *c) {
  const char *s = strchr(c->op->schema, '(') + 1;
  const char *end = strstr(c->op->schema, ") ->");
  int n = 0;
  while (s < end && n < MAX_ARGS) {
    const char *comma = memchr(s, ',', (size_t)(end - s));
    const char *stop = comma ? comma : end;
    const char *eq = memchr(s, '=', (size_t)(stop - s));
    const char *name_end = eq ? eq : stop;
    while (name_end > s && isspace((unsigned char)name_end[-1])) name_end--;
    const char *name = name_end;
    while (name > s && (isalnum((unsigned char)name[-1]) || name[-1] == '_')) name--;
    snprintf(c->names[n++], sizeof c->names[0], "%.*s", (int)(name_end - name), name);
    s = stop + 1;
  }
}

static const DLTensor *tensor(call *c, DLDataType dtype, int ndim, int64_t d0, int64_t d1,
                              int64_t d2, int64_t d3) {
  DLTensor *t = &c->tensors[c->num_tensors];
  int64_t *shape = c->shapes[c->num_tensors++];
  shape[0] = d0, shape[1] = d1, shape[2] = d2, shape[3] = d3;
  memset(t, 0, sizeof *t);
  t->data = NULL; /* shapes only, as vo_infer allows */
  t->device.device_type = kDLCPU;
  t->ndim = ndim;
  t->dtype = dtype;
  t->shape = shape;
  return t;
}

static void put(call *c, vo_value v) { c->args[c->num_args++] = v; }
static void put_tensor(call *c, const DLTensor *t) { put(c, vo_tensor_value(t)); }
static void put_int(call *c, int64_t i) { put(c, vo_int_value(i)); }

static int64_t rnd(vt_rng *r, int64_t lo, int64_t hi) { return lo + vt_rng_int(r, hi - lo + 1); }

/* Random valid arguments of op `name` (0 if the test has no generator for it:
 * then the op's samples serve, check_samples). */
static int make_args(call *c, const char *name, vt_rng *r) {
  const int backward = strstr(name, "_backward") != NULL;
  const int64_t n = rnd(r, 1, 4), k = rnd(r, 0, 9), ch = rnd(r, 1, 6);
  const int64_t h = rnd(r, 1, 40), w = rnd(r, 1, 40), ph = rnd(r, 1, 4), pw = rnd(r, 1, 4);
  if (strcmp(name, "nms") == 0 || strcmp(name, "batched_nms") == 0) {
    put_tensor(c, tensor(c, vt_f32, 2, k, 4, 0, 0));
    put_tensor(c, tensor(c, vt_f32, 1, k, 0, 0, 0));
    if (name[0] == 'b') put_tensor(c, tensor(c, vt_i64, 1, k, 0, 0, 0));
    put(c, vo_float_value(0.5));
  } else if (strstr(name, "box_iou") && !strstr(name, "rotated")) { /* rotated: samples */
    const int64_t m = rnd(r, 0, 9);
    if (backward) put_tensor(c, tensor(c, vt_f32, 2, k, m, 0, 0));
    put_tensor(c, tensor(c, vt_f32, 2, k, 4, 0, 0));
    put_tensor(c, tensor(c, vt_f32, 2, m, 4, 0, 0));
    if (strstr(name, "distance") || strstr(name, "complete")) put(c, vo_float_value(1e-7));
  } else if ((strncmp(name, "roi_align", 9) == 0 && !strstr(name, "rotated")) ||
             strncmp(name, "roi_pool", 8) == 0) {
    const int align = name[4] == 'a';
    put_tensor(c,
               backward ? tensor(c, vt_f32, 4, k, ch, ph, pw) : tensor(c, vt_f32, 4, n, ch, h, w));
    put_tensor(c, tensor(c, vt_f32, 2, k, 5, 0, 0));
    if (backward && !align) put_tensor(c, tensor(c, vt_i32, 4, k, ch, ph, pw));
    put(c, vo_float_value(0.25));
    put_int(c, ph);
    put_int(c, pw);
    if (backward) {
      put_int(c, n);
      put_int(c, ch);
      put_int(c, h);
      put_int(c, w);
    }
    if (align) {
      put_int(c, rnd(r, -1, 3));
      put(c, vo_bool_value((int)rnd(r, 0, 1)));
    }
  } else if (strncmp(name, "ps_roi_", 7) == 0) {
    const int align = name[7] == 'a';
    const int64_t c_in = ch * ph * pw;
    put_tensor(
        c, backward ? tensor(c, vt_f32, 4, k, ch, ph, pw) : tensor(c, vt_f32, 4, n, c_in, h, w));
    put_tensor(c, tensor(c, vt_f32, 2, k, 5, 0, 0));
    if (backward) put_tensor(c, tensor(c, vt_i32, 4, k, ch, ph, pw));
    put(c, vo_float_value(0.5));
    put_int(c, ph);
    put_int(c, pw);
    if (align) put_int(c, rnd(r, -1, 3));
    if (backward) {
      put_int(c, n);
      put_int(c, c_in);
      put_int(c, h);
      put_int(c, w);
    }
  } else if (strncmp(name, "multi_scale_roi_align", 21) == 0) {
    const int levels = (int)rnd(r, 1, 4);
    double scale = 1.0 / (double)((int64_t)1 << rnd(r, 0, 3));
    for (int l = 0; l < levels; l++, scale /= 2) {
      c->lists[l] = tensor(c, vt_f32, 4, n, ch, rnd(r, 1, 30), rnd(r, 1, 30));
      c->floats[l] = scale;
    }
    if (backward)
      put_tensor(c, tensor(c, vt_f32, 4, k, ch, ph, pw));
    else
      put(c, vo_tensor_list_value(c->lists, levels));
    put_tensor(c, tensor(c, vt_f32, 2, k, 5, 0, 0));
    if (backward) put(c, vo_tensor_list_value(c->lists, levels));
    put(c, vo_float_list_value(c->floats, levels));
    put_int(c, ph);
    put_int(c, pw);
    put_int(c, rnd(r, -1, 3));
    put_int(c, 224);
    put_int(c, 4);
    put(c, vo_bool_value((int)rnd(r, 0, 1)));
  } else if (strncmp(name, "deform_conv2d", 13) == 0) {
    const int64_t groups = rnd(r, 1, 3), og = rnd(r, 1, 2);
    const int64_t cin = groups * og * rnd(r, 1, 2), cout = groups * rnd(r, 1, 3);
    const int64_t kh = rnd(r, 1, 3), kw = rnd(r, 1, 3), sh = rnd(r, 1, 3), sw = rnd(r, 1, 3);
    const int64_t pad_h = rnd(r, 0, 2), pad_w = rnd(r, 0, 2), dh = rnd(r, 1, 2), dw = rnd(r, 1, 2);
    const int64_t hi = dh * (kh - 1) + 1 + rnd(r, 0, 20), wi = dw * (kw - 1) + 1 + rnd(r, 0, 20);
    const int64_t hout = (hi + 2 * pad_h - dh * (kh - 1) - 1) / sh + 1;
    const int64_t wout = (wi + 2 * pad_w - dw * (kw - 1) - 1) / sw + 1;
    const int use_mask = (int)rnd(r, 0, 1), use_bias = (int)rnd(r, 0, 1);
    if (backward) put_tensor(c, tensor(c, vt_f32, 4, n, cout, hout, wout));
    put_tensor(c, tensor(c, vt_f32, 4, n, cin, hi, wi));
    put_tensor(c, tensor(c, vt_f32, 4, cout, cin / groups, kh, kw));
    put_tensor(c, tensor(c, vt_f32, 4, n, 2 * og * kh * kw, hout, wout));
    put_tensor(c, use_mask ? tensor(c, vt_f32, 4, n, og * kh * kw, hout, wout) : NULL);
    put_tensor(c, use_bias ? tensor(c, vt_f32, 1, cout, 0, 0, 0) : NULL);
    const int64_t ints[] = {sh, sw, pad_h, pad_w, dh, dw, groups, og};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) put_int(c, ints[i]);
    put(c, vo_bool_value(use_mask));
  } else {
    return 0;
  }
  return 1;
}

/* ------------------------------------------------------- the rule evaluator */

typedef struct rule_cursor {
  const char *s;
  const call *c;
  int64_t item; /* `i`: the output's index in a list output, -1 for other outputs */
  int ok, verbose;
} rule_cursor;

static void skip(rule_cursor *p) {
  while (isspace((unsigned char)*p->s)) p->s++;
}

static int accept(rule_cursor *p, const char *tok) {
  skip(p);
  size_t n = strlen(tok);
  if (strncmp(p->s, tok, n) != 0) return 0;
  p->s += n;
  return 1;
}

static int64_t fail(rule_cursor *p, const char *why) {
  if (p->ok && p->verbose)
    fprintf(stderr, "%s: shape rule: %s at \"%s\"\n", p->c->op->name, why, p->s);
  p->ok = 0;
  return 0;
}

static int64_t expr(rule_cursor *p);

static int64_t index_of(rule_cursor *p) {
  if (accept(p, "i")) return p->item >= 0 ? p->item : fail(p, "`i` outside a list output");
  char *end;
  const long long v = strtoll(p->s, &end, 10);
  if (end == p->s) return fail(p, "expected an index");
  p->s = end;
  return v;
}

static const DLTensor *nth(rule_cursor *p, const vo_value *v, int64_t j) {
  if (v->kind != VO_VALUE_TENSOR_LIST || j < 0 || j >= v->u.tensors.count)
    return fail(p, "not an item of a tensor list"), NULL;
  return v->u.tensors.items[j];
}

static int64_t dim(rule_cursor *p, const DLTensor *t, int64_t d) {
  if (!t || d < 0 || d >= t->ndim) return fail(p, "no such tensor dimension");
  return t->shape[d];
}

/* A constant, an int argument, t[d], l[j][d], min(a, b), max(a, b) or a
 * parenthesised expression. */
static int64_t factor(rule_cursor *p) {
  skip(p);
  const int is_min = accept(p, "min(");
  if (is_min || accept(p, "max(")) {
    const int64_t a = expr(p);
    if (!accept(p, ",")) return fail(p, "expected , in min / max");
    const int64_t b = expr(p);
    if (!accept(p, ")")) return fail(p, "expected )");
    return is_min ? (a < b ? a : b) : (a < b ? b : a);
  }
  if (accept(p, "(")) {
    const int64_t v = expr(p);
    if (!accept(p, ")")) return fail(p, "expected )");
    return v;
  }
  if (isdigit((unsigned char)*p->s)) {
    char *end;
    const long long v = strtoll(p->s, &end, 10);
    p->s = end;
    return v;
  }
  size_t len = 0;
  while (isalnum((unsigned char)p->s[len]) || p->s[len] == '_') len++;
  int a = 0;
  while (a < p->c->num_args &&
         !(strlen(p->c->names[a]) == len && strncmp(p->c->names[a], p->s, len) == 0))
    a++;
  if (len == 0 || a == p->c->num_args) return fail(p, "unknown argument");
  p->s += len;
  const vo_value *v = &p->c->args[a];
  if (!accept(p, "[")) {
    if (v->kind != VO_VALUE_INT) return fail(p, "not an int argument");
    return v->u.i;
  }
  const int64_t j = index_of(p);
  if (!accept(p, "]")) return fail(p, "expected ]");
  if (v->kind == VO_VALUE_TENSOR) return dim(p, v->u.tensor, j);
  if (!accept(p, "[")) return fail(p, "a tensor list needs [item][dim]");
  const int64_t d = index_of(p);
  if (!accept(p, "]")) return fail(p, "expected ]");
  return dim(p, nth(p, v, j), d);
}

static int64_t term(rule_cursor *p) {
  int64_t v = factor(p);
  for (;;) {
    if (accept(p, "*")) {
      v *= factor(p);
    } else if (accept(p, "//")) {
      const int64_t d = factor(p);
      if (d == 0) return fail(p, "division by zero");
      const int64_t q = v / d;
      v = q * d != v && (v < 0) != (d < 0) ? q - 1 : q; /* floor, as Python's // */
    } else {
      return v;
    }
  }
}

static int64_t expr(rule_cursor *p) {
  int64_t v = term(p);
  for (;;) {
    if (accept(p, "+"))
      v += term(p);
    else if (accept(p, "-"))
      v -= term(p);
    else
      return v;
  }
}

/* The shape of output `k` into dims; `verbose` prints why a rule fails. */
static int rule_shape(const call *c, int k, int verbose, int64_t *dims, int *ndim) {
  const int list = c->op->num_outputs < 0;
  rule_cursor p = {c->op->shape_rule, c, list ? k : -1, 1, verbose};
  for (int j = 0; j < (list ? 0 : k); j++) {
    const char *next = strchr(p.s, ';');
    if (!next) return fail(&p, "fewer outputs than the schema"), 0;
    p.s = next + 1;
  }
  if (!accept(&p, "[")) return fail(&p, "expected ["), 0;
  *ndim = 0;
  if (!accept(&p, "]")) {
    do {
      if (*ndim == VO_MAX_DIMS) return fail(&p, "too many dimensions"), 0;
      dims[(*ndim)++] = expr(&p);
    } while (p.ok && accept(&p, ","));
    if (!accept(&p, "]")) fail(&p, "expected ]");
  }
  skip(&p);
  if (*p.s != '\0' && *p.s != ';') fail(&p, "trailing text");
  return p.ok;
}

/* ------------------------------------------------------------------ tests */

/* vo_infer and the rule on the arguments of c; `what` names the call. */
static int check_call(call *c, const char *what) {
  const vo_op_info *op = c->op;
  int count = 0;
  vo_tensor_desc desc[VO_MAX_LIST];
  vo_status st = vo_infer_num_outputs(NULL, op, c->args, c->num_args, &count);
  if (st == VO_OK) st = vo_infer(NULL, op, c->args, c->num_args, desc, count);
  if (!CHECK_MSG(st == VO_OK, "%s: arguments rejected: %s", what, vo_last_error())) return 0;
  const int rule_outputs = op->num_outputs < 0 ? count : op->num_outputs;
  if (!CHECK_MSG(rule_outputs == count, "%s: %d outputs, the rule has %d", what, count,
                 rule_outputs))
    return 0;
  for (int k = 0; k < count; k++) {
    int64_t dims[VO_MAX_DIMS];
    int ndim = 0;
    if (!CHECK_MSG(rule_shape(c, k, 1, dims, &ndim), "%s: rule \"%s\" does not evaluate", what,
                   op->shape_rule))
      return 0;
    char want[96], got[96];
    snprintf(want, sizeof want, "%s", "");
    int same = ndim == desc[k].ndim;
    for (int d = 0; same && d < ndim; d++) same = dims[d] == desc[k].shape[d];
    if (!same) {
      int used = 0;
      for (int d = 0; d < desc[k].ndim; d++)
        used +=
            snprintf(want + used, sizeof want - (size_t)used, "%lld ", (long long)desc[k].shape[d]);
      used = 0;
      got[0] = '\0';
      for (int d = 0; d < ndim; d++)
        used += snprintf(got + used, sizeof got - (size_t)used, "%lld ", (long long)dims[d]);
    }
    if (!CHECK_MSG(same, "%s output %d: vo_infer gives [%s], the rule [%s]", what, k, want,
                   same ? "" : got))
      return 0;
  }
  return 1;
}

/* An op without a generator: the rule on every sample of the registry (every
 * variant, seed and dtype). */
static void check_samples(const vo_op_info *op) {
  static const int seeds[VS_NUM_VARIANTS] = {VS_RANDOM_SEEDS, VS_EDGE_SEEDS, 1, 1};
  for (int v = 0; v < VS_NUM_VARIANTS; v++)
    for (int seed = 0; seed < seeds[v]; seed++)
      for (int d = 0; d < VS_NUM_DTYPES; d++) {
        vs_sample s;
        vs_build(&s, op->index, (vs_variant)v, *vs_dtypes[d], (uint64_t)seed);
        call c;
        memset(&c, 0, sizeof c);
        c.op = op;
        read_names(&c);
        memcpy(c.args, s.args, sizeof(vo_value) * (size_t)s.num_args);
        c.num_args = s.num_args;
        const int ok = check_call(&c, s.label);
        vs_free(&s);
        if (!ok) return;
      }
}

static void check_op(const vo_op_info *op, vt_rng *r, int trials) {
  for (int t = 0; t < trials; t++) {
    call c;
    memset(&c, 0, sizeof c);
    c.op = op;
    read_names(&c);
    if (!make_args(&c, op->name, r)) {
      check_samples(op);
      return;
    }
    char what[96];
    snprintf(what, sizeof what, "%s (trial %d)", op->name, t);
    if (!check_call(&c, what)) return;
  }
}

/* Malformed rules are refused, not misread. */
static void check_evaluator(void) {
  call c;
  memset(&c, 0, sizeof c);
  vo_op_info fake = *vo_op_find("roi_align");
  c.op = &fake;
  read_names(&c);
  vt_rng r;
  vt_rng_seed(&r, 7);
  make_args(&c, "roi_align", &r);
  const char *bad[] = {"[rois[0]",  "[nope]",      "[rois[9]]",       "[spatial_scale]",
                       "[rois[i]]", "[(input[1]]", "[input[1] // 0]", "[input[1]] x",
                       "[min(input[1])]", "[max(1, 2]"};
  int64_t dims[VO_MAX_DIMS];
  int ndim;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    fake.shape_rule = bad[i];
    CHECK_MSG(!rule_shape(&c, 0, 0, dims, &ndim), "bad rule \"%s\" was accepted", bad[i]);
  }
  fake.shape_rule = "[min(input[1], 3), max(pooled_width - 100, 0) + 1]";
  CHECK(rule_shape(&c, 0, 0, dims, &ndim) && ndim == 2);
  CHECK(dims[0] == (c.shapes[0][1] < 3 ? c.shapes[0][1] : 3) && dims[1] == 1);
  fake.shape_rule = "[(input[2] - 7) // 2, 2 * pooled_height - 1]";
  CHECK(rule_shape(&c, 0, 0, dims, &ndim) && ndim == 2);
  /* floor division, as Python's, also below zero */
  CHECK(dims[0] ==
        ((c.shapes[0][2] - 7) >= 0 ? (c.shapes[0][2] - 7) / 2 : -((7 - c.shapes[0][2] + 1) / 2)));
  CHECK(dims[1] == 2 * c.args[3].u.i - 1);
}

int main(void) {
  vt_rng r;
  vt_rng_seed(&r, 20261201);
  for (int i = 0; i < vo_op_count(); i++) {
    const vo_op_info *op = vo_op_get(i);
    if (CHECK_MSG(op->shape_rule && op->shape_rule[0] == '[', "%s has no shape rule", op->name))
      check_op(op, &r, 200);
  }
  check_evaluator();
  return vt_finish("test_shape_rules");
}
