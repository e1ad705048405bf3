/*
 * The operator registry and the backend list. Both are const tables built
 * from src/ops/ops.def and referenced from one init-once function, so a
 * static link keeps every op and backend (no constructors anywhere).
 */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

typedef struct vo_op_source {
  const char *name;
  const char *schema;
  const char *backward;
  const char *shape_rule;
  vo_check_fn check;
} vo_op_source;

static const vo_op_source vo_op_sources[VO_NUM_OPS] = {
#define VO_OP(name, kernel, schema, backward, shape_rule) \
  {#name, schema, backward, shape_rule, vo_check_##name},
#include "ops/ops.def"
#undef VO_OP
};

/* Filled once by vo_registry_init from the const sources above; read-only
 * afterwards. */
static vo_op_entry vo_ops[VO_NUM_OPS];
static int vo_ops_by_name[VO_NUM_OPS]; /* indices into vo_ops, names ascending (vo_op_find) */
static int vo_registry_ok;
static pthread_once_t vo_registry_once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------- schema parsing */

typedef struct vo_cursor {
  const char *s;
} vo_cursor;

static void vo_skip_space(vo_cursor *c) {
  while (isspace((unsigned char)*c->s)) c->s++;
}

static int vo_accept(vo_cursor *c, const char *tok) {
  vo_skip_space(c);
  size_t n = strlen(tok);
  if (strncmp(c->s, tok, n) != 0) return 0;
  c->s += n;
  return 1;
}

/* Reads an identifier into out (size 32). */
static int vo_ident(vo_cursor *c, char *out) {
  vo_skip_space(c);
  size_t n = 0;
  while (isalnum((unsigned char)c->s[n]) || c->s[n] == '_') n++;
  if (n == 0 || n >= 32) return 0;
  memcpy(out, c->s, n);
  out[n] = '\0';
  c->s += n;
  return 1;
}

/* The default after "=": a number for float/int, True/False for bool, None
 * for an optional tensor or float. */
static int vo_parse_default(vo_cursor *c, vo_arg_spec *a) {
  vo_skip_space(c);
  const char *start = c->s;
  char *end = NULL;
  switch (a->type) {
    case VO_ARG_FLOAT: a->default_value = vo_float_value(strtod(start, &end)); break;
    case VO_ARG_INT: a->default_value = vo_int_value(strtoll(start, &end, 10)); break;
    case VO_ARG_BOOL:
      if (!vo_accept(c, "True") && !vo_accept(c, "False")) return 0;
      a->default_value = vo_bool_value(start[0] == 'T');
      end = (char *)c->s;
      break;
    case VO_ARG_OPTIONAL_TENSOR:
    case VO_ARG_OPTIONAL_FLOAT:
      if (!vo_accept(c, "None")) return 0;
      a->default_value = vo_tensor_value(NULL); /* VO_VALUE_NONE */
      end = (char *)c->s;
      break;
    case VO_ARG_TENSOR:
    case VO_ARG_TENSOR_LIST:
    case VO_ARG_FLOAT_LIST: return 0;
  }
  if (end == start) return 0;
  c->s = end;
  a->has_default = 1;
  return 1;
}

/* "name(Type arg[=default], ...) -> Tensor" or "-> (Tensor a, Tensor b)". */
static int vo_parse_schema(vo_op_entry *e, const vo_op_source *src) {
  vo_cursor c = {src->schema};
  char name[32];
  if (!vo_ident(&c, name) || strcmp(name, src->name) != 0 || !vo_accept(&c, "(")) return 0;
  int n = 0, tensor_lists = 0;
  if (!vo_accept(&c, ")")) {
    do {
      if (n == VO_MAX_ARGS) return 0;
      vo_arg_spec *a = &e->args[n];
      char type[32];
      if (!vo_ident(&c, type)) return 0;
      if (strcmp(type, "Tensor") == 0)
        a->type = vo_accept(&c, "?")    ? VO_ARG_OPTIONAL_TENSOR
                  : vo_accept(&c, "[]") ? VO_ARG_TENSOR_LIST
                                        : VO_ARG_TENSOR;
      else if (strcmp(type, "float") == 0)
        a->type = vo_accept(&c, "[]")  ? VO_ARG_FLOAT_LIST
                  : vo_accept(&c, "?") ? VO_ARG_OPTIONAL_FLOAT
                                       : VO_ARG_FLOAT;
      else if (strcmp(type, "int") == 0 || strcmp(type, "SymInt") == 0)
        a->type = VO_ARG_INT; /* SymInt: a size PyTorch may pass symbolically */
      else if (strcmp(type, "bool") == 0)
        a->type = VO_ARG_BOOL;
      else
        return 0;
      if (!vo_ident(&c, a->name)) return 0;
      if (vo_accept(&c, "=") && !vo_parse_default(&c, a)) return 0;
      if (n > 0 && e->args[n - 1].has_default && !a->has_default) return 0;
      /* vo_exec holds the views of one tensor list (list_inputs). */
      if (a->type == VO_ARG_TENSOR_LIST && tensor_lists++) return 0;
      n++;
    } while (vo_accept(&c, ","));
    if (!vo_accept(&c, ")")) return 0;
  }
  if (!vo_accept(&c, "->")) return 0;
  int nout = 0;
  if (vo_accept(&c, "(")) {
    do {
      char type[32];
      if (nout == VO_MAX_OUTPUTS || !vo_ident(&c, type) || strcmp(type, "Tensor") != 0) return 0;
      if (!vo_ident(&c, e->output_names[nout])) return 0;
      nout++;
    } while (vo_accept(&c, ","));
    if (!vo_accept(&c, ")")) return 0;
  } else {
    char type[32];
    if (!vo_ident(&c, type) || strcmp(type, "Tensor") != 0) return 0;
    strcpy(e->output_names[0], "out");
    nout = vo_accept(&c, "[]") ? -1 : 1; /* a list: its length comes from the check */
  }
  vo_skip_space(&c);
  if (*c.s != '\0') return 0;
  e->info.num_args = n;
  e->info.num_outputs = nout;
  return 1;
}

static void vo_registry_init(void) {
  int ok = 1;
  for (int i = 0; i < VO_NUM_OPS; i++) {
    vo_op_entry *e = &vo_ops[i];
    const vo_op_source *src = &vo_op_sources[i];
    e->info.index = i;
    e->info.name = src->name;
    e->info.schema = src->schema;
    e->info.backward = src->backward;
    e->info.shape_rule = src->shape_rule;
    e->check = src->check;
    if (!vo_parse_schema(e, src)) ok = 0;
    int j = i; /* insertion into the name order */
    while (j > 0 && strcmp(vo_ops[vo_ops_by_name[j - 1]].info.name, src->name) > 0) {
      vo_ops_by_name[j] = vo_ops_by_name[j - 1];
      j--;
    }
    vo_ops_by_name[j] = i;
  }
  vo_registry_ok = ok;
}

const vo_op_entry *vo_registry_op(int index) {
  pthread_once(&vo_registry_once, vo_registry_init);
  if (!vo_registry_ok || index < 0 || index >= VO_NUM_OPS) return NULL;
  return &vo_ops[index];
}

int vo_op_count(void) {
  pthread_once(&vo_registry_once, vo_registry_init);
  return vo_registry_ok ? VO_NUM_OPS : 0;
}

const vo_op_info *vo_op_get(int index) {
  const vo_op_entry *e = vo_registry_op(index);
  return e ? &e->info : NULL;
}

/* A binary search: every vo_call from a binding starts with a name. */
const vo_op_info *vo_op_find(const char *name) {
  if (!name || vo_op_count() == 0) return NULL;
  int lo = 0, hi = VO_NUM_OPS;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    const vo_op_info *info = &vo_ops[vo_ops_by_name[mid]].info;
    const int c = strcmp(info->name, name);
    if (c == 0) return info;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

static const vo_op_entry *vo_entry_of(const vo_op_info *op) {
  const vo_op_entry *e = op ? vo_registry_op(op->index) : NULL;
  return e && &e->info == op ? e : NULL;
}

vo_status vo_op_arg(const vo_op_info *op, int index, vo_arg_info *out) {
  const vo_op_entry *e = vo_entry_of(op);
  if (!e || !out)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "vo_op_arg: %s is NULL or not an op of this library",
                   !out ? "out" : "op");
  if (index < 0 || index >= e->info.num_args)
    return vo_fail(VO_ERROR_NOT_FOUND, "vo_op_arg: %s has %d arguments, got index %d", e->info.name,
                   e->info.num_args, index);
  static const vo_value_kind kinds[] = {[VO_ARG_TENSOR] = VO_VALUE_TENSOR,
                                        [VO_ARG_OPTIONAL_TENSOR] = VO_VALUE_TENSOR,
                                        [VO_ARG_FLOAT] = VO_VALUE_FLOAT,
                                        [VO_ARG_OPTIONAL_FLOAT] = VO_VALUE_FLOAT,
                                        [VO_ARG_INT] = VO_VALUE_INT,
                                        [VO_ARG_BOOL] = VO_VALUE_BOOL,
                                        [VO_ARG_TENSOR_LIST] = VO_VALUE_TENSOR_LIST,
                                        [VO_ARG_FLOAT_LIST] = VO_VALUE_FLOAT_LIST};
  const vo_arg_spec *a = &e->args[index];
  out->name = a->name;
  out->kind = kinds[a->type];
  out->optional = a->type == VO_ARG_OPTIONAL_TENSOR || a->type == VO_ARG_OPTIONAL_FLOAT;
  out->has_default = a->has_default;
  out->default_value = a->default_value;
  return VO_OK;
}

const char *vo_op_output_name(const vo_op_info *op, int index) {
  const vo_op_entry *e = vo_entry_of(op);
  if (!e || index < 0) return NULL;
  if (e->info.num_outputs < 0) return e->output_names[0];
  return index < e->info.num_outputs ? e->output_names[index] : NULL;
}

const char *vo_version(void) { return VISIONOPS_VERSION_STRING; }

/* ------------------------------------------------------------- backends */

/* Every backend the library knows (src/backends.def), built or a
 * placeholder, so `info` and errors can say what is missing and why. */
static const vo_backend *const vo_backends[VO_NUM_BACKENDS] = {
#define VO_BACKEND(name, device_type, option) &vo_##name##_backend,
#include "backends.def"
#undef VO_BACKEND
};

/* Each backend is probed once, on first need (a probe may load a driver). */
typedef struct vo_probe_result {
  int done;
  int available;
  char detail[512]; /* room for several OpenCL devices and the GEMM clause */
} vo_probe_result;

static vo_probe_result vo_probes[VO_NUM_BACKENDS];
static pthread_mutex_t vo_probe_lock = PTHREAD_MUTEX_INITIALIZER;

const vo_backend *vo_backend_get(int id) {
  return id >= 0 && id < VO_NUM_BACKENDS ? vo_backends[id] : NULL;
}

int vo_backend_index(const vo_backend *backend) {
  for (int i = 0; i < VO_NUM_BACKENDS; i++)
    if (vo_backends[i] == backend) return i;
  return -1;
}

const vo_backend *vo_backend_for_device(DLDeviceType device_type) {
  for (int i = 0; i < VO_NUM_BACKENDS; i++)
    if (vo_backends[i]->device_type == device_type) return vo_backends[i];
  return NULL;
}

int vo_backend_available(const vo_backend *backend, const char **detail) {
  const int i = vo_backend_index(backend);
  if (i < 0) {
    *detail = "unknown backend";
    return 0;
  }
  if (backend->not_built_reason) {
    *detail = backend->not_built_reason;
    return 0;
  }
  vo_probe_result *r = &vo_probes[i];
  pthread_mutex_lock(&vo_probe_lock);
  if (!r->done) {
    r->available = backend->probe(r->detail, sizeof r->detail);
    r->done = 1;
  }
  pthread_mutex_unlock(&vo_probe_lock);
  *detail = r->detail;
  return r->available;
}

int vo_backend_count(void) { return VO_NUM_BACKENDS; }

vo_status vo_backend_status(int index, vo_backend_info *out) {
  if (!out) return vo_fail(VO_ERROR_INVALID_ARGUMENT, "vo_backend_status: out is NULL");
  const vo_backend *b = vo_backend_get(index);
  if (!b)
    return vo_fail(VO_ERROR_NOT_FOUND, "vo_backend_status: no backend with index %d (there are %d)",
                   index, VO_NUM_BACKENDS);
  out->name = b->name;
  out->device_type = b->device_type;
  out->built = b->not_built_reason == NULL;
  out->available = vo_backend_available(b, &out->detail);
  return VO_OK;
}
