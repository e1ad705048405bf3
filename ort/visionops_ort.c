/*
 * libvisionops_ort: every visionops op as an ONNX Runtime custom op of the
 * domain "visionops" (version 1), run through the C API (vo_infer for the
 * outputs' shapes, which ONNX Runtime then allocates; vo_call for the work).
 *
 * A node is the op of the same name. Its inputs are the schema's tensors in
 * schema order, except that a tensor list ("Tensor[]") comes last, as ONNX
 * Runtime's one variadic input; an absent optional tensor ("Tensor?") is an
 * empty input name. Every other argument is an attribute of the same name:
 * float (an int is accepted), int, bool as int, float[] as floats; an
 * absent attribute takes the schema's default, and an absent "float?" is
 * None. docs/ONNX.md specifies each node.
 *
 * ONNX Runtime infers a custom node's output types from its declared input
 * and output types, before any kernel runs, and picks one of several
 * same-named declarations by the input types. So each op is declared once
 * per element type T of its primary tensors, with the output types as the
 * op gives them for T: ort/node_types.def, which the Python suite checks
 * against every op's samples through ONNX Runtime.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <visionops/visionops.h>

#include "ort_abi.h"

#define VO_ORT_DOMAIN "visionops"
#define VO_ORT_MAX_IO 16 /* node inputs or outputs; and schema arguments */

/* ------------------------------------------------------------ type table */

typedef struct vo_ort_types {
  const char *op;
  const char *inputs;
  const char *outputs;
  const char *variants;
} vo_ort_types;

static const vo_ort_types vo_ort_type_table[] = {
#define VO_ORT_TYPES(op, inputs, outputs, types) {#op, inputs, outputs, types},
#include "node_types.def"
#undef VO_ORT_TYPES
};

static const vo_ort_elem_type vo_ort_float_types[] = {VO_ORT_FLOAT, VO_ORT_DOUBLE, VO_ORT_FLOAT16,
                                                      VO_ORT_BFLOAT16};
static const vo_ort_elem_type vo_ort_all_types[] = {VO_ORT_FLOAT,    VO_ORT_DOUBLE, VO_ORT_FLOAT16,
                                                    VO_ORT_BFLOAT16, VO_ORT_INT64,  VO_ORT_INT32,
                                                    VO_ORT_INT16,    VO_ORT_INT8,   VO_ORT_UINT8};

static int vo_ort_is_int(vo_ort_elem_type t) {
  return t == VO_ORT_INT64 || t == VO_ORT_INT32 || t == VO_ORT_INT16 || t == VO_ORT_INT8 ||
         t == VO_ORT_UINT8;
}

/* The element type an output code gives for T (VO_ORT_UNDEFINED for 'S'). */
static vo_ort_elem_type vo_ort_output_type(char code, vo_ort_elem_type t) {
  switch (code) {
    case 'T': return t;
    case 'F': return t == VO_ORT_DOUBLE ? VO_ORT_DOUBLE : VO_ORT_FLOAT;
    case 'A':
      if (t == VO_ORT_FLOAT16 || t == VO_ORT_BFLOAT16) return VO_ORT_FLOAT;
      if (vo_ort_is_int(t)) return t == VO_ORT_INT64 ? VO_ORT_INT64 : VO_ORT_INT32;
      return t;
    case 'l': return VO_ORT_INT64;
    case 'i': return VO_ORT_INT32;
    default: return VO_ORT_UNDEFINED; /* 'S' */
  }
}

/* ------------------------------------------------------ the declarations */

typedef struct vo_ort_op {
  vo_ort_custom_op base; /* first: ONNX Runtime hands this pointer back */
  const vo_op_info *info;
  int num_args;
  vo_arg_info args[VO_ORT_MAX_IO];
  int num_inputs; /* node inputs declared (a list is the last, variadic) */
  int input_arg[VO_ORT_MAX_IO];
  vo_ort_elem_type input_type[VO_ORT_MAX_IO];
  vo_ort_io_characteristic input_kind[VO_ORT_MAX_IO];
  int num_outputs; /* declared outputs (a list output is one, variadic) */
  vo_ort_elem_type output_type[VO_ORT_MAX_IO];
  vo_ort_io_characteristic output_kind[VO_ORT_MAX_IO];
} vo_ort_op;

static vo_ort_op *vo_ort_ops;
static int vo_ort_num_ops;
static char vo_ort_setup_error[512];

static const vo_ort_op *vo_ort_op_of(const vo_ort_custom_op *base) {
  return (const vo_ort_op *)(const void *)base;
}

static const char *vo_ort_get_name(const vo_ort_custom_op *base) {
  return vo_ort_op_of(base)->info->name;
}

static const char *vo_ort_get_provider(const vo_ort_custom_op *base) {
  (void)base;
  return "CPUExecutionProvider";
}

static vo_ort_elem_type vo_ort_get_input_type(const vo_ort_custom_op *base, size_t i) {
  const vo_ort_op *op = vo_ort_op_of(base);
  return i < (size_t)op->num_inputs ? op->input_type[i] : VO_ORT_UNDEFINED;
}

static size_t vo_ort_get_input_count(const vo_ort_custom_op *base) {
  return (size_t)vo_ort_op_of(base)->num_inputs;
}

static vo_ort_elem_type vo_ort_get_output_type(const vo_ort_custom_op *base, size_t i) {
  const vo_ort_op *op = vo_ort_op_of(base);
  return i < (size_t)op->num_outputs ? op->output_type[i] : VO_ORT_UNDEFINED;
}

static size_t vo_ort_get_output_count(const vo_ort_custom_op *base) {
  return (size_t)vo_ort_op_of(base)->num_outputs;
}

static vo_ort_io_characteristic vo_ort_get_input_kind(const vo_ort_custom_op *base, size_t i) {
  const vo_ort_op *op = vo_ort_op_of(base);
  return i < (size_t)op->num_inputs ? op->input_kind[i] : VO_ORT_IO_REQUIRED;
}

static vo_ort_io_characteristic vo_ort_get_output_kind(const vo_ort_custom_op *base, size_t i) {
  const vo_ort_op *op = vo_ort_op_of(base);
  return i < (size_t)op->num_outputs ? op->output_kind[i] : VO_ORT_IO_REQUIRED;
}

static vo_ort_mem_type vo_ort_get_memory_type(const vo_ort_custom_op *base, size_t i) {
  (void)base;
  (void)i;
  return VO_ORT_MEM_DEFAULT;
}

/* A variadic input or output holds one or more tensors of one type. */
static int vo_ort_one(const vo_ort_custom_op *base) {
  (void)base;
  return 1;
}

static void *vo_ort_create_kernel_v1(const vo_ort_custom_op *base, const OrtApi *api,
                                     const OrtKernelInfo *info);
static void vo_ort_compute_v1(void *kernel, OrtKernelContext *ctx);
static void vo_ort_destroy(void *kernel);
static OrtStatus *vo_ort_create_kernel(const vo_ort_custom_op *base, const OrtApi *api,
                                       const OrtKernelInfo *info, void **out);
static OrtStatus *vo_ort_compute(void *kernel, OrtKernelContext *ctx);

static int vo_ort_setup_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(vo_ort_setup_error, sizeof vo_ort_setup_error, fmt, ap);
  va_end(ap);
  return 0;
}

/* Fills op from the schema and the type table's row for element type t. */
static int vo_ort_declare(vo_ort_op *op, const vo_op_info *info, const vo_ort_types *row,
                          vo_ort_elem_type t) {
  memset(op, 0, sizeof *op);
  op->info = info;
  op->num_args = info->num_args;
  if (info->num_args > VO_ORT_MAX_IO)
    return vo_ort_setup_fail("%s: %d arguments, more than %d", info->name, info->num_args,
                             VO_ORT_MAX_IO);
  const char *in = row->inputs;
  int list_arg = -1, wildcards = 0;
  char list_code = 0;
  for (int a = 0; a < info->num_args; a++) {
    if (vo_op_arg(info, a, &op->args[a]) != VO_OK)
      return vo_ort_setup_fail("%s: %s", info->name, vo_last_error());
    const vo_arg_info *arg = &op->args[a];
    if (arg->kind != VO_VALUE_TENSOR && arg->kind != VO_VALUE_TENSOR_LIST) continue;
    if (*in != 'T' && *in != '*')
      return vo_ort_setup_fail("%s: the type table has no code for tensor %s", info->name,
                               arg->name);
    const char code = *in++;
    wildcards += code == '*';
    if (arg->kind == VO_VALUE_TENSOR_LIST) { /* declared last */
      list_arg = a;
      list_code = code;
      continue;
    }
    const int k = op->num_inputs++;
    op->input_arg[k] = a;
    op->input_type[k] = code == 'T' ? t : VO_ORT_UNDEFINED;
    op->input_kind[k] = arg->optional ? VO_ORT_IO_OPTIONAL : VO_ORT_IO_REQUIRED;
  }
  if (*in)
    return vo_ort_setup_fail("%s: the type table has more input codes than tensors", info->name);
  if (list_arg >= 0) {
    const int k = op->num_inputs++;
    op->input_arg[k] = list_arg;
    op->input_type[k] = list_code == 'T' ? t : VO_ORT_UNDEFINED;
    op->input_kind[k] = VO_ORT_IO_VARIADIC;
  }
  for (const char *out = row->outputs; *out; out++) {
    if (!strchr("TFAliS", *out))
      return vo_ort_setup_fail("%s: unknown output code '%c'", info->name, *out);
    if (*out == 'S' && wildcards != 1)
      return vo_ort_setup_fail("%s: an 'S' output needs exactly one '*' input", info->name);
    const int k = op->num_outputs++;
    op->output_type[k] = vo_ort_output_type(*out, t);
    op->output_kind[k] = out[1] == '?' ? VO_ORT_IO_OPTIONAL : VO_ORT_IO_REQUIRED;
    if (out[1] == '?') out++;
  }
  const int want = info->num_outputs < 0 ? 1 : info->num_outputs;
  if (op->num_outputs != want)
    return vo_ort_setup_fail("%s: the type table has %d outputs, the schema %d", info->name,
                             op->num_outputs, want);
  if (info->num_outputs < 0) op->output_kind[0] = VO_ORT_IO_VARIADIC;

  vo_ort_custom_op *b = &op->base;
  b->version = VO_ORT_API_VERSION;
  b->CreateKernel = vo_ort_create_kernel_v1;
  b->GetName = vo_ort_get_name;
  b->GetExecutionProviderType = vo_ort_get_provider;
  b->GetInputType = vo_ort_get_input_type;
  b->GetInputTypeCount = vo_ort_get_input_count;
  b->GetOutputType = vo_ort_get_output_type;
  b->GetOutputTypeCount = vo_ort_get_output_count;
  b->KernelCompute = vo_ort_compute_v1;
  b->KernelDestroy = vo_ort_destroy;
  b->GetInputCharacteristic = vo_ort_get_input_kind;
  b->GetOutputCharacteristic = vo_ort_get_output_kind;
  b->GetInputMemoryType = vo_ort_get_memory_type;
  b->GetVariadicInputMinArity = vo_ort_one;
  b->GetVariadicInputHomogeneity = vo_ort_one;
  b->GetVariadicOutputMinArity = vo_ort_one;
  b->GetVariadicOutputHomogeneity = vo_ort_one;
  b->CreateKernelV2 = vo_ort_create_kernel;
  b->KernelComputeV2 = vo_ort_compute;
  return 1;
}

static const vo_ort_types *vo_ort_row(const char *name) {
  for (size_t i = 0; i < sizeof vo_ort_type_table / sizeof *vo_ort_type_table; i++)
    if (strcmp(vo_ort_type_table[i].op, name) == 0) return &vo_ort_type_table[i];
  return NULL;
}

static void vo_ort_setup(void) {
  const int n = vo_op_count();
  if (n == 0) {
    vo_ort_setup_fail("the visionops registry is empty: %s", vo_last_error());
    return;
  }
  vo_ort_op *ops =
      calloc((size_t)n * (sizeof vo_ort_all_types / sizeof *vo_ort_all_types), sizeof *ops);
  if (!ops) {
    vo_ort_setup_fail("out of memory");
    return;
  }
  int count = 0;
  for (int i = 0; i < n; i++) {
    const vo_op_info *info = vo_op_get(i);
    const vo_ort_types *row = vo_ort_row(info->name);
    if (!row) {
      vo_ort_setup_fail("%s has no row in the ONNX Runtime type table", info->name);
      free(ops);
      return;
    }
    const int all = strcmp(row->variants, "n") == 0;
    const vo_ort_elem_type *types = all ? vo_ort_all_types : vo_ort_float_types;
    const size_t num_types = all ? sizeof vo_ort_all_types / sizeof *vo_ort_all_types
                                 : sizeof vo_ort_float_types / sizeof *vo_ort_float_types;
    for (size_t v = 0; v < num_types; v++) {
      if (!vo_ort_declare(&ops[count++], info, row, types[v])) {
        free(ops);
        return;
      }
    }
  }
  vo_ort_ops = ops;
  vo_ort_num_ops = count;
}

/* ------------------------------------------------------------- statuses */

static OrtStatus *vo_ort_status(const OrtApi *api, vo_ort_error_code code, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return VO_ORT(api, CreateStatus)(code, msg);
}

/* The status of a failed visionops call, with the library's message. */
static OrtStatus *vo_ort_vo_status(const OrtApi *api, vo_status s) {
  const vo_ort_error_code code = s == VO_ERROR_INVALID_ARGUMENT ||
                                         s == VO_ERROR_UNSUPPORTED_DTYPE ||
                                         s == VO_ERROR_DEVICE_MISMATCH
                                     ? VO_ORT_INVALID_ARGUMENT
                                     : VO_ORT_FAIL;
  return vo_ort_status(api, code, "visionops: %s", vo_last_error());
}

static void vo_ort_drop(const OrtApi *api, OrtStatus *s) {
  if (s) VO_ORT(api, ReleaseStatus)(s);
}

/* -------------------------------------------------------------- kernels */

typedef struct vo_ort_kernel {
  const vo_ort_op *op;
  const OrtApi *api;
  vo_value args[VO_ORT_MAX_IO]; /* the attributes; tensors are filled per call */
  double lists[VO_ORT_MAX_IO][VO_MAX_LIST];
} vo_ort_kernel;

/* Whether the node has attribute `name` of some type other than float / int. */
static int vo_ort_has_other_attr(const OrtApi *api, const OrtKernelInfo *info, const char *name) {
  size_t size = 0;
  OrtStatus *s = VO_ORT(api, KernelInfoGetAttributeArray_float)(info, name, NULL, &size);
  if (!s) return 1;
  vo_ort_drop(api, s);
  s = VO_ORT(api, KernelInfoGetAttributeArray_int64)(info, name, NULL, &size);
  if (!s) return 1;
  vo_ort_drop(api, s);
  s = VO_ORT(api, KernelInfoGetAttribute_string)(info, name, NULL, &size);
  if (!s) return 1;
  vo_ort_drop(api, s);
  return 0;
}

/* Reads argument `a`'s attribute into k->args[a]: NULL, or a status naming it. */
static OrtStatus *vo_ort_read_attr(vo_ort_kernel *k, const OrtKernelInfo *info, int a) {
  const OrtApi *api = k->api;
  const vo_arg_info *arg = &k->op->args[a];
  const char *op = k->op->info->name;
  vo_value *v = &k->args[a];
  float f;
  int64_t i;
  OrtStatus *s;
  switch (arg->kind) {
    case VO_VALUE_FLOAT:
      if (!(s = VO_ORT(api, KernelInfoGetAttribute_float)(info, arg->name, &f))) {
        *v = vo_float_value(f);
        return NULL;
      }
      vo_ort_drop(api, s);
      if (!(s = VO_ORT(api, KernelInfoGetAttribute_int64)(info, arg->name, &i))) {
        *v = vo_float_value((double)i);
        return NULL;
      }
      vo_ort_drop(api, s);
      break;
    case VO_VALUE_INT:
    case VO_VALUE_BOOL:
      if (!(s = VO_ORT(api, KernelInfoGetAttribute_int64)(info, arg->name, &i))) {
        *v = arg->kind == VO_VALUE_INT ? vo_int_value(i) : vo_bool_value(i != 0);
        return NULL;
      }
      vo_ort_drop(api, s);
      break;
    case VO_VALUE_FLOAT_LIST: {
      size_t n = 0;
      if (!(s = VO_ORT(api, KernelInfoGetAttributeArray_float)(info, arg->name, NULL, &n))) {
        if (n < 1 || n > VO_MAX_LIST)
          return vo_ort_status(api, VO_ORT_INVALID_ARGUMENT,
                               "visionops: %s: attribute %s must have 1 to %d floats, got %zu", op,
                               arg->name, VO_MAX_LIST, n);
        float buf[VO_MAX_LIST];
        if ((s = VO_ORT(api, KernelInfoGetAttributeArray_float)(info, arg->name, buf, &n)))
          return s;
        for (size_t j = 0; j < n; j++) k->lists[a][j] = buf[j];
        *v = vo_float_list_value(k->lists[a], (int64_t)n);
        return NULL;
      }
      vo_ort_drop(api, s);
      break;
    }
    default: return NULL; /* tensors */
  }
  static const char *const kinds[] = {[VO_VALUE_FLOAT] = "a float",
                                      [VO_VALUE_INT] = "an int",
                                      [VO_VALUE_BOOL] = "an int (a bool)",
                                      [VO_VALUE_FLOAT_LIST] = "floats"};
  if (vo_ort_has_other_attr(api, info, arg->name))
    return vo_ort_status(api, VO_ORT_INVALID_ARGUMENT,
                         "visionops: %s: attribute %s must be %s, the node gives another type", op,
                         arg->name, kinds[arg->kind]);
  if (arg->has_default) {
    *v = arg->default_value;
    return NULL;
  }
  if (arg->optional) {
    v->kind = VO_VALUE_NONE;
    return NULL;
  }
  return vo_ort_status(api, VO_ORT_INVALID_ARGUMENT,
                       "visionops: %s: the node has no attribute %s (%s), which has no default", op,
                       arg->name, kinds[arg->kind]);
}

static OrtStatus *vo_ort_create_kernel(const vo_ort_custom_op *base, const OrtApi *api,
                                       const OrtKernelInfo *info, void **out) {
  *out = NULL;
  vo_ort_kernel *k = calloc(1, sizeof *k);
  if (!k) return VO_ORT(api, CreateStatus)(VO_ORT_FAIL, "visionops: out of memory");
  k->op = vo_ort_op_of(base);
  k->api = api;
  for (int a = 0; a < k->op->num_args; a++) {
    OrtStatus *s = vo_ort_read_attr(k, info, a);
    if (s) {
      free(k);
      return s;
    }
  }
  *out = k;
  return NULL;
}

/* ONNX Runtime calls the version-16 members; these exist because the
 * struct must have them. A runtime that called them anyway gets a kernel
 * that fails cleanly. */
static void *vo_ort_create_kernel_v1(const vo_ort_custom_op *base, const OrtApi *api,
                                     const OrtKernelInfo *info) {
  void *k = NULL;
  vo_ort_drop(api, vo_ort_create_kernel(base, api, info, &k));
  return k;
}

static void vo_ort_compute_v1(void *kernel, OrtKernelContext *ctx) {
  vo_ort_kernel *k = kernel;
  if (k) vo_ort_drop(k->api, vo_ort_compute(k, ctx));
}

static void vo_ort_destroy(void *kernel) { free(kernel); }

static int vo_ort_dtype(vo_ort_elem_type t, DLDataType *out) {
  DLDataType d = {kDLFloat, 32, 1};
  switch (t) {
    case VO_ORT_FLOAT: break;
    case VO_ORT_DOUBLE: d.bits = 64; break;
    case VO_ORT_FLOAT16: d.bits = 16; break;
    case VO_ORT_BFLOAT16: d.code = kDLBfloat, d.bits = 16; break;
    case VO_ORT_INT64: d.code = kDLInt, d.bits = 64; break;
    case VO_ORT_INT32: d.code = kDLInt, d.bits = 32; break;
    case VO_ORT_INT16: d.code = kDLInt, d.bits = 16; break;
    case VO_ORT_INT8: d.code = kDLInt, d.bits = 8; break;
    case VO_ORT_UINT8: d.code = kDLUInt, d.bits = 8; break;
    case VO_ORT_UINT16: d.code = kDLUInt, d.bits = 16; break;
    case VO_ORT_UINT32: d.code = kDLUInt, d.bits = 32; break;
    case VO_ORT_UINT64: d.code = kDLUInt, d.bits = 64; break;
    default: return 0;
  }
  *out = d;
  return 1;
}

static const char *vo_ort_dtype_name(DLDataType d) {
  if (d.code == kDLBfloat) return "bfloat16";
  if (d.code == kDLFloat) return d.bits == 64 ? "float64" : d.bits == 16 ? "float16" : "float32";
  if (d.code == kDLUInt) return d.bits == 8 ? "uint8" : "an unsigned integer type";
  return d.bits == 64 ? "int64" : d.bits == 32 ? "int32" : d.bits == 16 ? "int16" : "int8";
}

/* A tensor's element type and shape (at most VO_MAX_DIMS dimensions). */
static OrtStatus *vo_ort_describe(const OrtApi *api, const OrtValue *value, vo_ort_elem_type *type,
                                  int *ndim, int64_t *shape) {
  OrtTensorTypeAndShapeInfo *ti = NULL;
  OrtStatus *s = VO_ORT(api, GetTensorTypeAndShape)(value, &ti);
  size_t n = 0;
  if (!s) s = VO_ORT(api, GetTensorElementType)(ti, type);
  if (!s) s = VO_ORT(api, GetDimensionsCount)(ti, &n);
  if (!s && n <= VO_MAX_DIMS) s = VO_ORT(api, GetDimensions)(ti, shape, n);
  if (ti) VO_ORT(api, ReleaseTensorTypeAndShapeInfo)(ti);
  *ndim = (int)n;
  return s;
}

/* Fills t (its shape in `shape`) from ONNX Runtime's tensor `value`. */
static OrtStatus *vo_ort_tensor(const vo_ort_kernel *k, const OrtValue *value, const char *what,
                                DLTensor *t, int64_t *shape) {
  const OrtApi *api = k->api;
  vo_ort_elem_type type = VO_ORT_UNDEFINED;
  int ndim = 0;
  OrtStatus *s = vo_ort_describe(api, value, &type, &ndim, shape);
  if (s) return s;
  const char *op = k->op->info->name;
  if (ndim > VO_MAX_DIMS)
    return vo_ort_status(api, VO_ORT_INVALID_ARGUMENT,
                         "visionops: %s: %s has %d dimensions, more than %d", op, what, ndim,
                         VO_MAX_DIMS);
  memset(t, 0, sizeof *t);
  if (!vo_ort_dtype(type, &t->dtype))
    return vo_ort_status(api, VO_ORT_INVALID_ARGUMENT,
                         "visionops: %s: %s has ONNX element type %d, which no visionops op takes",
                         op, what, (int)type);
  void *data = NULL;
  if ((s = VO_ORT(api, GetTensorMutableData)((OrtValue *)value, &data))) return s;
  t->data = data;
  t->device.device_type = kDLCPU;
  t->ndim = ndim;
  t->shape = shape;
  return NULL;
}

static OrtStatus *vo_ort_compute(void *kernel, OrtKernelContext *ctx) {
  const vo_ort_kernel *k = kernel;
  const vo_ort_op *op = k->op;
  const OrtApi *api = k->api;
  const char *name = op->info->name;
  vo_value args[VO_ORT_MAX_IO];
  memcpy(args, k->args, sizeof args);

  size_t num_in = 0, num_node_out = 0;
  OrtStatus *s = VO_ORT(api, KernelContext_GetInputCount)(ctx, &num_in);
  if (!s) s = VO_ORT(api, KernelContext_GetOutputCount)(ctx, &num_node_out);
  if (s) return s;
  const int has_list =
      op->num_inputs > 0 && op->input_kind[op->num_inputs - 1] == VO_ORT_IO_VARIADIC;
  const size_t max_in = (size_t)op->num_inputs - (size_t)has_list + (has_list ? VO_MAX_LIST : 0);
  if (num_in > max_in)
    return vo_ort_status(api, VO_ORT_INVALID_ARGUMENT,
                         "visionops: %s: the node has %zu inputs, at most %zu allowed", name,
                         num_in, max_in);

  DLTensor tensors[VO_ORT_MAX_IO + VO_MAX_LIST];
  int64_t shapes[VO_ORT_MAX_IO + VO_MAX_LIST][VO_MAX_DIMS];
  const DLTensor *items[VO_MAX_LIST];
  int64_t num_items = 0;
  for (int j = 0; j < op->num_inputs; j++)
    if (op->input_kind[j] != VO_ORT_IO_VARIADIC) args[op->input_arg[j]].kind = VO_VALUE_NONE;
  for (size_t j = 0; j < num_in; j++) {
    const int slot = j < (size_t)op->num_inputs ? (int)j : op->num_inputs - 1;
    const int a = op->input_arg[slot];
    const OrtValue *value = NULL;
    if ((s = VO_ORT(api, KernelContext_GetInput)(ctx, j, &value))) return s;
    if (!value) continue; /* an absent optional input */
    char what[64];
    if (op->input_kind[slot] == VO_ORT_IO_VARIADIC)
      snprintf(what, sizeof what, "%s[%d]", op->args[a].name, (int)num_items);
    else
      snprintf(what, sizeof what, "%s", op->args[a].name);
    if ((s = vo_ort_tensor(k, value, what, &tensors[j], shapes[j]))) return s;
    if (op->input_kind[slot] == VO_ORT_IO_VARIADIC)
      items[num_items++] = &tensors[j];
    else
      args[a] = vo_tensor_value(&tensors[j]);
  }
  if (has_list) args[op->input_arg[op->num_inputs - 1]] = vo_tensor_list_value(items, num_items);

  int num_out = op->info->num_outputs;
  vo_status vs = VO_OK;
  if (num_out < 0) vs = vo_infer_num_outputs(NULL, op->info, args, op->num_args, &num_out);
  if (vs == VO_OK &&
      (num_out > VO_ORT_MAX_IO || (op->info->num_outputs < 0 && (size_t)num_out != num_node_out)))
    return vo_ort_status(api, VO_ORT_INVALID_ARGUMENT,
                         "visionops: %s: the node has %zu outputs, the op gives %d", name,
                         num_node_out, num_out);
  vo_tensor_desc desc[VO_ORT_MAX_IO];
  if (vs == VO_OK) vs = vo_infer(NULL, op->info, args, op->num_args, desc, num_out);
  if (vs != VO_OK) return vo_ort_vo_status(api, vs);

  DLTensor out_tensors[VO_ORT_MAX_IO];
  int64_t out_shapes[VO_ORT_MAX_IO][VO_MAX_DIMS];
  DLTensor *outs[VO_ORT_MAX_IO];
  for (int j = 0; j < num_out; j++) {
    outs[j] = NULL;
    OrtValue *value = NULL;
    const char *oname = vo_op_output_name(op->info, j);
    if ((size_t)j < num_node_out &&
        (s = VO_ORT(api, KernelContext_GetOutput)(ctx, (size_t)j, desc[j].shape,
                                                  (size_t)desc[j].ndim, &value))) {
      /* e.g. out of memory: say which output of which op asked for it */
      OrtStatus *named = vo_ort_status(api, VO_ORT_FAIL, "visionops: %s: output %s: %s", name,
                                       oname, VO_ORT(api, GetErrorMessage)(s));
      vo_ort_drop(api, s);
      return named;
    }
    if (!value) continue; /* omitted by the node: vo_call says whether it may be */
    if ((s = vo_ort_tensor(k, value, oname, &out_tensors[j], out_shapes[j]))) return s;
    const DLDataType got = out_tensors[j].dtype, want = desc[j].dtype;
    if (got.code != want.code || got.bits != want.bits)
      return vo_ort_status(api, VO_ORT_INVALID_ARGUMENT,
                           "visionops: %s: output %s has element type %s in the graph, but the op "
                           "gives %s for these inputs and attributes (cast the inputs to a "
                           "float type first)",
                           name, oname, vo_ort_dtype_name(got), vo_ort_dtype_name(want));
    outs[j] = &out_tensors[j];
  }
  vs = vo_call(NULL, op->info, args, op->num_args, outs, num_out);
  return vs == VO_OK ? NULL : vo_ort_vo_status(api, vs);
}

/* ---------------------------------------------------------- registration */

static pthread_once_t vo_ort_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t vo_ort_lock = PTHREAD_MUTEX_INITIALIZER;
static OrtCustomOpDomain *vo_ort_domain; /* one for every session; lives as the process */

__attribute__((visibility("default"))) OrtStatus *RegisterCustomOps(OrtSessionOptions *options,
                                                                    const OrtApiBase *base);

OrtStatus *RegisterCustomOps(OrtSessionOptions *options, const OrtApiBase *base) {
  const OrtApi *api = base ? base->GetApi(VO_ORT_API_VERSION) : NULL;
  if (!api) {
    const OrtApi *old = base ? base->GetApi(1) : NULL;
    if (!old) return NULL; /* no way to report anything */
    return VO_ORT(old, CreateStatus)(VO_ORT_FAIL,
                                     "libvisionops_ort needs ONNX Runtime 1.16 or later");
  }
  pthread_once(&vo_ort_once, vo_ort_setup);
  if (!vo_ort_ops)
    return vo_ort_status(api, VO_ORT_FAIL, "libvisionops_ort: %s", vo_ort_setup_error);
  OrtStatus *s = NULL;
  pthread_mutex_lock(&vo_ort_lock);
  if (!vo_ort_domain) {
    OrtCustomOpDomain *domain = NULL;
    s = VO_ORT(api, CreateCustomOpDomain)(VO_ORT_DOMAIN, &domain);
    for (int i = 0; !s && i < vo_ort_num_ops; i++)
      s = VO_ORT(api, CustomOpDomain_Add)(domain, &vo_ort_ops[i].base);
    if (!s) vo_ort_domain = domain; /* a failed domain is left behind, not reused */
  }
  pthread_mutex_unlock(&vo_ort_lock);
  if (!s) s = VO_ORT(api, AddCustomOpDomain)(options, vo_ort_domain);
  return s;
}
