/*
 * The generic entry points vo_infer / vo_call: argument checks against the
 * schema, DLTensor validation into views, the op's own check, output
 * validation, then the kernel for the tensors' device; vo_call also runs the
 * value checks the op declared, before the outputs are validated. Kernels
 * never repeat these checks.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

static const char *vo_device_type_name(DLDeviceType t) {
  switch (t) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda";
    case kDLCUDAHost: return "cuda_host";
    case kDLCUDAManaged: return "cuda_managed";
    case kDLROCM: return "rocm";
    case kDLOpenCL: return "opencl";
    case kDLVulkan: return "vulkan";
    case kDLMetal: return "metal";
    default: return "device";
  }
}

static const char *vo_device_str(DLDevice d, char *buf, size_t size) {
  snprintf(buf, size, "%s:%d", vo_device_type_name(d.device_type), d.device_id);
  return buf;
}

static const char *vo_value_kind_name(vo_value_kind k) {
  switch (k) {
    case VO_VALUE_NONE: return "None";
    case VO_VALUE_TENSOR: return "tensor";
    case VO_VALUE_FLOAT: return "float";
    case VO_VALUE_INT: return "int";
    case VO_VALUE_BOOL: return "bool";
    case VO_VALUE_TENSOR_LIST: return "a tensor list";
    case VO_VALUE_FLOAT_LIST: return "a float list";
  }
  return "unknown";
}

static const char *vo_arg_type_name(vo_arg_type t) {
  switch (t) {
    case VO_ARG_TENSOR: return "a tensor";
    case VO_ARG_OPTIONAL_TENSOR: return "a tensor or None";
    case VO_ARG_FLOAT: return "a float";
    case VO_ARG_OPTIONAL_FLOAT: return "a float or None";
    case VO_ARG_INT: return "an int";
    case VO_ARG_BOOL: return "a bool";
    case VO_ARG_TENSOR_LIST: return "a list of tensors";
    case VO_ARG_FLOAT_LIST: return "a list of floats";
  }
  return "?";
}

static const vo_op_entry *vo_entry_of(const vo_exec *ex) { return vo_registry_op(ex->op); }

const char *vo_arg_name(const vo_exec *ex, int arg) { return vo_entry_of(ex)->args[arg].name; }

/* A tensor's name in messages: `kind` ("" or "output "), `name` (e.g.
 * "boxes"), and `item` ("[3]" after it) unless negative. Formatted only when
 * a message needs it: a call names every tensor it validates. */
typedef struct vo_tensor_name {
  const char *kind, *name;
  int item;
} vo_tensor_name;

static const char *vo_tensor_name_str(const vo_tensor_name *n, char *buf, size_t size) {
  if (n->item < 0)
    snprintf(buf, size, "%s%s", n->kind, n->name);
  else
    snprintf(buf, size, "%s%s[%d]", n->kind, n->name, n->item);
  return buf;
}

/* Validates a DLTensor and normalises it into a view. `tn` names it, e.g.
 * "boxes" or "output keep". With `shape_only` (shape inference) a tensor may
 * have NULL data: only its shape, strides, dtype and device are read. */
static vo_status vo_make_view(const char *op, const vo_tensor_name *tn, const DLTensor *t,
                              int shape_only, vo_view *v) {
  char buf[160], what_buf[96];
/* NAMED: the tensor's name, formatted (in error paths only). */
#define NAMED vo_tensor_name_str(tn, what_buf, sizeof what_buf)
  if (!t) return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", op, NAMED);
  if (t->ndim < 0 || t->ndim > VO_MAX_DIMS)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s has %d dimensions, at most %d are supported",
                   op, NAMED, t->ndim, VO_MAX_DIMS);
  if (t->ndim > 0 && !t->shape)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s has ndim %d but a NULL shape", op, NAMED,
                   t->ndim);
  if (t->dtype.lanes != 1)
    return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: %s has %u lanes, only 1 is supported", op,
                   NAMED, (unsigned)t->dtype.lanes);
  vo_dtype dt = vo_dtype_from_dl(t->dtype);
  if (dt == VO_DTYPE_INVALID)
    return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: %s has unsupported dtype %s", op, NAMED,
                   vo_dl_dtype_str(t->dtype, buf, sizeof buf));
  memset(v, 0, sizeof *v);
  v->ndim = t->ndim;
  v->dtype = dt;
  v->device = t->device;
  int64_t numel = 1;
  const int64_t limit = INT64_MAX / 8;
  for (int i = 0; i < t->ndim; i++) {
    if (t->shape[i] < 0)
      return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s has a negative size in shape %s", op, NAMED,
                     vo_shape_str(t->shape, t->ndim, buf, sizeof buf));
    v->shape[i] = t->shape[i];
    if (t->shape[i] != 0 && numel > limit / t->shape[i])
      return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s of shape %s has too many elements", op,
                     NAMED, vo_shape_str(t->shape, t->ndim, buf, sizeof buf));
    numel *= t->shape[i];
  }
  v->numel = numel;
  int64_t expected = 1, reach = 0;
  for (int i = t->ndim - 1; i >= 0; i--) {
    v->stride[i] = t->strides ? t->strides[i] : expected;
    /* Row-major strides of an empty tensor may overflow ([0, 1000, 2^62]):
     * they are never used, so they saturate instead. */
    if (__builtin_mul_overflow(expected, t->shape[i], &expected)) expected = INT64_MAX;
    /* Element offsets must fit in int64 for the kernels' index math. */
    int64_t s = v->stride[i], magnitude = s == INT64_MIN ? INT64_MAX : (s < 0 ? -s : s), span;
    if (numel > 0 && (__builtin_mul_overflow(t->shape[i] - 1, magnitude, &span) ||
                      __builtin_add_overflow(reach, span, &reach) || reach > limit))
      return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s has strides too large to address", op,
                     NAMED);
  }
  if (numel > 0 && !t->data && !shape_only)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s has NULL data but %lld elements", op, NAMED,
                   (long long)numel);
  /* Kernels load whole elements: a misaligned element is undefined behaviour
   * on the CPU and a fault on GPUs. On devices whose data is a handle rather
   * than an address (OpenCL), only the offset is checked. */
  const uint64_t es = vo_dtype_size(dt);
  const vo_backend *b = vo_backend_for_device(t->device.device_type);
  const int addressable = !b || b->addressable || t->device.device_type == kDLCUDAHost ||
                          t->device.device_type == kDLCUDAManaged;
  const uint64_t address = (addressable ? (uint64_t)(uintptr_t)t->data : 0) + t->byte_offset;
  if (numel > 0 && t->data && address % es != 0)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: %s's first element (data + byte_offset %llu) is not aligned to its %u-byte "
                   "elements",
                   op, NAMED, (unsigned long long)t->byte_offset, (unsigned)es);
  v->data = t->data;
  v->byte_offset = t->data ? t->byte_offset : 0;
  return VO_OK;
#undef NAMED
}

int vo_view_is_contiguous(const vo_view *v) {
  /* An empty tensor has nothing to lay out (frameworks give it any strides). */
  if (v->numel == 0) return 1;
  int64_t expected = 1;
  for (int i = v->ndim - 1; i >= 0; i--) {
    if (v->shape[i] != 1 && v->stride[i] != expected) return 0;
    expected *= v->shape[i];
  }
  return 1;
}

/* Byte range [lo, hi) a view can touch (empty when it has no elements),
 * relative to its handle: on addressable backends the handle is an address
 * and the range absolute (handle 0); elsewhere two views can only overlap
 * within one handle (one cl_mem). */
static void vo_view_extent(const vo_view *v, uintptr_t *handle, uintptr_t *lo, uintptr_t *hi) {
  const vo_backend *b = vo_backend_for_device(v->device.device_type);
  const int addressable = !b || b->addressable;
  *handle = addressable ? 0 : (uintptr_t)v->data;
  if (v->numel == 0 || !v->data) { /* empty, or an omitted output: no memory */
    *lo = *hi = 0;
    return;
  }
  int64_t min_off = 0, max_off = 0;
  for (int i = 0; i < v->ndim; i++) {
    int64_t span = (v->shape[i] - 1) * v->stride[i];
    if (span < 0)
      min_off += span;
    else
      max_off += span;
  }
  /* Unsigned address arithmetic: offsets are bounded (vo_make_view) but the
   * range may lie below data (negative strides), where pointer arithmetic
   * outside the caller's object would be undefined. */
  const uintptr_t base = (addressable ? (uintptr_t)v->data : 0) + (uintptr_t)v->byte_offset;
  const uintptr_t elem = vo_dtype_size(v->dtype);
  *lo = base - (uintptr_t)(-min_off) * elem;
  *hi = base + (uintptr_t)(max_off + 1) * elem;
}

static int vo_views_overlap(const vo_view *a, const vo_view *b) {
  if (a->device.device_type != b->device.device_type || a->device.device_id != b->device.device_id)
    return 0;
  uintptr_t ah, alo, ahi, bh, blo, bhi;
  vo_view_extent(a, &ah, &alo, &ahi);
  vo_view_extent(b, &bh, &blo, &bhi);
  return ah == bh && alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

/* On backends whose tensors are handles with a queryable size (OpenCL's
 * cl_mem: vo_backend.buffer_size), that every byte v can touch lies within
 * its buffer: a kernel would otherwise read or write out of bounds, which
 * on the CPU no library can see but here is one query away. */
static vo_status vo_check_in_buffer(const vo_exec *ex, const vo_tensor_name *tn, const vo_view *v) {
  const vo_backend *b = ex->backend;
  if (!b || !b->buffer_size || !v->data || v->numel == 0) return VO_OK;
  char what_buf[96], why[160];
  uint64_t size = 0;
  if (!b->buffer_size(ex->device, v->data, ex->queue, &size, why, sizeof why))
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s: %s", ex->op_name,
                   vo_tensor_name_str(tn, what_buf, sizeof what_buf), why);
  /* Bytes below and from the first element: [lo, hi) is relative to the
   * handle, so around byte_offset (unsigned arithmetic: lo may wrap). */
  uintptr_t handle, lo, hi;
  vo_view_extent(v, &handle, &lo, &hi);
  const uint64_t below = v->byte_offset - (uint64_t)lo, from = (uint64_t)hi - v->byte_offset;
  if (below > v->byte_offset || v->byte_offset > size || from > size - v->byte_offset)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: %s does not fit its buffer of %llu bytes: from byte offset %llu it "
                   "reaches %llu bytes below and %llu bytes on",
                   ex->op_name, vo_tensor_name_str(tn, what_buf, sizeof what_buf),
                   (unsigned long long)size, (unsigned long long)v->byte_offset,
                   (unsigned long long)below, (unsigned long long)from);
  return VO_OK;
}

/* vo_check_in_buffer for every input of the call, list items included. */
static vo_status vo_check_inputs_in_buffers(const vo_exec *ex) {
  const vo_op_entry *e = vo_entry_of(ex);
  for (int i = 0; i < ex->num_args; i++) {
    const vo_tensor_name name = {"", e->args[i].name, -1};
    vo_status st = VO_OK;
    if (ex->args[i].kind == VO_VALUE_TENSOR)
      st = vo_check_in_buffer(ex, &name, &ex->inputs[i]);
    else if (ex->args[i].kind == VO_VALUE_TENSOR_LIST)
      for (int t = 0; t < ex->num_list_inputs && st == VO_OK; t++) {
        const vo_tensor_name item = {"", e->args[i].name, t};
        st = vo_check_in_buffer(ex, &item, &ex->list_inputs[t]);
      }
    if (st != VO_OK) return st;
  }
  return VO_OK;
}

static int vo_same_device(DLDevice a, DLDevice b) {
  return a.device_type == b.device_type && a.device_id == b.device_id;
}

vo_status vo_expect_shape(const vo_exec *ex, int arg, int ndim, const int64_t *dims,
                          const char *what, ...) {
  const vo_view *v = &ex->inputs[arg];
  int ok = v->ndim == ndim;
  for (int i = 0; ok && i < ndim; i++) ok = dims[i] < 0 || dims[i] == v->shape[i];
  if (ok) return VO_OK;
  char layout[160], buf[160];
  va_list ap;
  va_start(ap, what);
  vsnprintf(layout, sizeof layout, what, ap);
  va_end(ap);
  return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s must have shape [%s], got %s", ex->op_name,
                 vo_arg_name(ex, arg), layout, vo_shape_str(v->shape, v->ndim, buf, sizeof buf));
}

/* Schema check of the boxed arguments, tensor views, device agreement and
 * the op's own check. Leaves ex ready for output validation. */
static vo_status vo_prepare(vo_exec *ex, const vo_context *ctx, const vo_op_info *op,
                            const vo_value *args, int num_args, int shape_only) {
  memset(ex, 0, offsetof(vo_exec, inputs)); /* (the views: below, as they are made) */
  if (!op) return vo_fail(VO_ERROR_INVALID_ARGUMENT, "visionops: op is NULL (unknown op name?)");
  const vo_op_entry *e = vo_registry_op(op->index);
  if (!e || &e->info != op)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "visionops: op does not come from vo_op_get / vo_op_find");
  ex->ctx = ctx ? ctx : vo_default_context();
  ex->op = (vo_op_id)op->index;
  ex->op_name = op->name;
  ex->num_args = op->num_args;
  ex->num_outputs = op->num_outputs;
  int required = 0;
  while (required < op->num_args && !e->args[required].has_default) required++;
  if (num_args < required || num_args > op->num_args || (num_args > 0 && !args)) {
    char names[512] = "";
    size_t used = 0;
    for (int i = 0; i < op->num_args && used < sizeof names; i++)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                               e->args[i].name);
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: expected %d to %d arguments (%s), got %d%s",
                   op->name, required, op->num_args, names, num_args,
                   num_args > 0 && !args ? " with a NULL argument array" : "");
  }

  vo_tensor_name first_name = {"", "", -1};
  int have_device = 0;
  for (int i = 0; i < op->num_args; i++) {
    const vo_arg_spec *s = &e->args[i];
    vo_value v = i < num_args ? args[i] : s->default_value;
    if (v.kind == VO_VALUE_TENSOR && !v.u.tensor) v.kind = VO_VALUE_NONE;
    int ok = 0;
    switch (s->type) {
      case VO_ARG_TENSOR: ok = v.kind == VO_VALUE_TENSOR; break;
      case VO_ARG_OPTIONAL_TENSOR: ok = v.kind == VO_VALUE_TENSOR || v.kind == VO_VALUE_NONE; break;
      case VO_ARG_FLOAT:
        if (v.kind == VO_VALUE_INT) v = vo_float_value((double)v.u.i);
        ok = v.kind == VO_VALUE_FLOAT;
        break;
      case VO_ARG_OPTIONAL_FLOAT:
        if (v.kind == VO_VALUE_INT) v = vo_float_value((double)v.u.i);
        ok = v.kind == VO_VALUE_FLOAT || v.kind == VO_VALUE_NONE;
        break;
      case VO_ARG_INT: ok = v.kind == VO_VALUE_INT; break;
      case VO_ARG_BOOL:
        if (v.kind == VO_VALUE_INT && (v.u.i == 0 || v.u.i == 1)) v = vo_bool_value((int)v.u.i);
        ok = v.kind == VO_VALUE_BOOL;
        break;
      case VO_ARG_TENSOR_LIST: ok = v.kind == VO_VALUE_TENSOR_LIST; break;
      case VO_ARG_FLOAT_LIST: ok = v.kind == VO_VALUE_FLOAT_LIST; break;
    }
    if (!ok) {
      if (s->type == VO_ARG_TENSOR && i < num_args && args[i].kind == VO_VALUE_TENSOR)
        return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", op->name, s->name);
      return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: argument %d (%s) must be %s, got %s", op->name,
                     i, s->name, vo_arg_type_name(s->type), vo_value_kind_name(v.kind));
    }
    if (v.kind == VO_VALUE_TENSOR_LIST || v.kind == VO_VALUE_FLOAT_LIST) {
      int64_t count = v.kind == VO_VALUE_TENSOR_LIST ? v.u.tensors.count : v.u.floats.count;
      const void *items = v.kind == VO_VALUE_TENSOR_LIST ? (const void *)v.u.tensors.items
                                                         : (const void *)v.u.floats.items;
      if (count < 1 || count > VO_MAX_LIST || !items)
        return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s must hold 1 to %d items, got %lld%s",
                       op->name, s->name, VO_MAX_LIST, (long long)count,
                       items ? "" : " (NULL items)");
    }
    ex->args[i] = v;
    if (v.kind != VO_VALUE_TENSOR) memset(&ex->inputs[i], 0, sizeof ex->inputs[i]);
    /* Every tensor of the call, list items included, gets a view and must
     * share the first tensor's device. */
    int num_tensors = v.kind == VO_VALUE_TENSOR        ? 1
                      : v.kind == VO_VALUE_TENSOR_LIST ? (int)v.u.tensors.count
                                                       : 0;
    for (int t = 0; t < num_tensors; t++) {
      vo_view *view;
      const DLTensor *tensor;
      const vo_tensor_name name = {"", s->name, v.kind == VO_VALUE_TENSOR ? -1 : t};
      if (v.kind == VO_VALUE_TENSOR) {
        view = &ex->inputs[i];
        tensor = v.u.tensor;
      } else {
        view = &ex->list_inputs[t];
        tensor = v.u.tensors.items[t];
        ex->num_list_inputs = num_tensors;
      }
      vo_status st = vo_make_view(op->name, &name, tensor, shape_only, view);
      if (st != VO_OK) return st;
      if (!have_device) {
        ex->device = view->device;
        have_device = 1;
        first_name = name;
      } else if (!vo_same_device(ex->device, view->device)) {
        char a[48], b[48], na[96], nb[96];
        return vo_fail(
            VO_ERROR_DEVICE_MISMATCH, "%s: %s is on %s but %s is on %s", op->name,
            vo_tensor_name_str(&name, na, sizeof na), vo_device_str(view->device, a, sizeof a),
            vo_tensor_name_str(&first_name, nb, sizeof nb), vo_device_str(ex->device, b, sizeof b));
      }
    }
  }
  if (!have_device) ex->device = (DLDevice){kDLCPU, 0};
  vo_status st = e->check(ex);
  if (st == VO_OK && (ex->num_outputs < 1 || ex->num_outputs > VO_MAX_OUTPUTS))
    return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: internal error: %d outputs", op->name,
                   ex->num_outputs);
  return st;
}

vo_status vo_infer(const vo_context *ctx, const vo_op_info *op, const vo_value *args, int num_args,
                   vo_tensor_desc *outputs, int num_outputs) {
  vo_exec ex;
  vo_status st = vo_prepare(&ex, ctx, op, args, num_args, 1);
  if (st != VO_OK) return st;
  if (!outputs || num_outputs != ex.num_outputs)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                   "%s: expected room for %d output descriptions, got %d%s", ex.op_name,
                   ex.num_outputs, num_outputs, outputs ? "" : " (NULL)");
  memcpy(outputs, ex.out_desc, sizeof(vo_tensor_desc) * (size_t)ex.num_outputs);
  return VO_OK;
}

vo_status vo_infer_num_outputs(const vo_context *ctx, const vo_op_info *op, const vo_value *args,
                               int num_args, int *num_outputs) {
  if (!num_outputs)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "vo_infer_num_outputs: num_outputs is NULL");
  vo_exec ex;
  vo_status st = vo_prepare(&ex, ctx, op, args, num_args, 1);
  if (st != VO_OK) return st;
  *num_outputs = ex.num_outputs;
  return VO_OK;
}

/* The view of an output the caller omitted (ex->optional_outputs): its
 * description, contiguous, on the call's device, with NULL data. */
static void vo_omitted_view(const vo_exec *ex, const vo_tensor_desc *d, vo_view *v) {
  memset(v, 0, sizeof *v);
  v->ndim = d->ndim;
  v->dtype = vo_dtype_from_dl(d->dtype);
  v->device = ex->device;
  int64_t numel = 1;
  for (int i = d->ndim - 1; i >= 0; i--) {
    v->shape[i] = d->shape[i];
    v->stride[i] = numel;
    numel *= d->shape[i]; /* the check function checked that it fits */
  }
  v->numel = numel;
}

/* Output `k`'s name in messages. */
static vo_tensor_name vo_output_name(const vo_exec *ex, int k) {
  const vo_op_entry *e = vo_entry_of(ex);
  return e->info.num_outputs < 0 ? (vo_tensor_name){"output ", e->output_names[0], k}
                                 : (vo_tensor_name){"output ", e->output_names[k], -1};
}

/* An output on another device than the inputs, refused before the call
 * touches any input memory (buffer queries, value checks): memory labelled
 * with one device is not read as another's. The rest of the outputs'
 * checks come after the value checks (vo_check_outputs). */
static vo_status vo_check_output_devices(const vo_exec *ex, DLTensor *const *outputs,
                                         int num_outputs) {
  for (int k = 0; outputs && num_outputs == ex->num_outputs && k < num_outputs; k++)
    if (outputs[k] && !vo_same_device(outputs[k]->device, ex->device)) {
      const vo_tensor_name name = vo_output_name(ex, k);
      char what_buf[96], a[48], b[48];
      return vo_fail(VO_ERROR_DEVICE_MISMATCH, "%s: %s is on %s but the inputs are on %s",
                     ex->op_name, vo_tensor_name_str(&name, what_buf, sizeof what_buf),
                     vo_device_str(outputs[k]->device, a, sizeof a),
                     vo_device_str(ex->device, b, sizeof b));
    }
  return VO_OK;
}

/* The outputs' count, shapes, dtypes, layout, buffers and overlaps (their
 * devices: vo_check_output_devices, earlier in vo_call). */
static vo_status vo_check_outputs(vo_exec *ex, DLTensor *const *outputs, int num_outputs) {
  const vo_op_entry *e = vo_entry_of(ex);
  if (!outputs || num_outputs != ex->num_outputs)
    return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: expected %d outputs, got %d%s", ex->op_name,
                   ex->num_outputs, num_outputs, outputs ? "" : " (NULL)");
  for (int k = 0; k < ex->num_outputs; k++) {
    char what_buf[96], got[160], want[160];
    const vo_tensor_name name = vo_output_name(ex, k);
#define NAMED vo_tensor_name_str(&name, what_buf, sizeof what_buf)
    vo_view *v = &ex->outputs[k];
    const vo_tensor_desc *d = &ex->out_desc[k];
    if (!outputs[k] && k < 32 && (ex->optional_outputs >> k & 1u)) {
      vo_omitted_view(ex, d, v);
      continue;
    }
    vo_status st = vo_make_view(ex->op_name, &name, outputs[k], 0, v);
    if (st != VO_OK) return st;
    int shape_ok = v->ndim == d->ndim;
    for (int i = 0; shape_ok && i < d->ndim; i++) shape_ok = v->shape[i] == d->shape[i];
    if (!shape_ok)
      return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s must have shape %s, got %s", ex->op_name,
                     NAMED, vo_shape_str(d->shape, d->ndim, want, sizeof want),
                     vo_shape_str(v->shape, v->ndim, got, sizeof got));
    vo_dtype want_dt = vo_dtype_from_dl(d->dtype);
    if (v->dtype != want_dt)
      return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE, "%s: %s must be %s, got %s", ex->op_name, NAMED,
                     vo_dtype_name(want_dt), vo_dtype_name(v->dtype));
    if (!vo_view_is_contiguous(v))
      return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s must be contiguous", ex->op_name, NAMED);
    if ((st = vo_check_in_buffer(ex, &name, v)) != VO_OK) return st;
    for (int i = 0; i < ex->num_args; i++)
      if (ex->args[i].kind == VO_VALUE_TENSOR && vo_views_overlap(v, &ex->inputs[i]))
        return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s overlaps the memory of input %s",
                       ex->op_name, NAMED, e->args[i].name);
    for (int i = 0; i < ex->num_list_inputs; i++)
      if (vo_views_overlap(v, &ex->list_inputs[i]))
        return vo_fail(VO_ERROR_INVALID_ARGUMENT,
                       "%s: %s overlaps the memory of an input list item", ex->op_name, NAMED);
    for (int j = 0; j < k; j++)
      if (vo_views_overlap(v, &ex->outputs[j]))
        return vo_fail(VO_ERROR_INVALID_ARGUMENT, "%s: %s overlaps the memory of output %d",
                       ex->op_name, NAMED, j);
#undef NAMED
  }
  return VO_OK;
}

vo_status vo_call(const vo_context *ctx, const vo_op_info *op, const vo_value *args, int num_args,
                  DLTensor *const *outputs, int num_outputs) {
  vo_exec ex;
  vo_status st = vo_prepare(&ex, ctx, op, args, num_args, 0);
  if (st != VO_OK) return st;
  /* The values of the inputs are checked before the outputs, so a call with
   * bad values fails alike on every device (the op layer used to read host
   * values while it checked the arguments): on the host for host memory,
   * else on the device, when its backend can run (if not, that is reported
   * below). */
  const vo_backend *b = vo_backend_for_device(ex.device.device_type);
  const char *detail = NULL;
  if (b && !b->not_built_reason && vo_backend_available(b, &detail)) {
    ex.backend = b;
    ex.queue = vo_context_queue(ex.ctx, ex.device);
  }
  if ((st = vo_check_output_devices(&ex, outputs, num_outputs)) != VO_OK) return st;
  if ((st = vo_check_inputs_in_buffers(&ex)) != VO_OK) return st;
  if ((st = vo_run_data_checks(&ex)) != VO_OK) return st;
  st = vo_check_outputs(&ex, outputs, num_outputs);
  if (st != VO_OK) return st;

  char dev[48]; /* formed for a message only */
#define DEVICE vo_device_str(ex.device, dev, sizeof dev)
  if (!b)
    return vo_fail(VO_ERROR_BACKEND_UNAVAILABLE, "%s: cannot run on %s: %s", ex.op_name, DEVICE,
                   "visionops has no backend for this device type");
  if (b->not_built_reason)
    return vo_fail(VO_ERROR_BACKEND_UNAVAILABLE, "%s: cannot run on %s: %s", ex.op_name, DEVICE,
                   b->not_built_reason);
  if (!vo_backend_available(b, &detail))
    return vo_fail(VO_ERROR_BACKEND_UNAVAILABLE, "%s: the %s backend is unavailable for %s: %s",
                   ex.op_name, b->name, DEVICE, detail);
#undef DEVICE
  vo_kernel_fn kernel = b->kernels[ex.op];
  if (!kernel)
    return vo_fail(VO_ERROR_BACKEND_UNAVAILABLE, "%s: not implemented on the %s backend",
                   ex.op_name, b->name);
  return kernel(&ex);
}
