/*
 * visionops._C: the CPython extension over the C library.
 *
 * Tensors come in through DLPack: a "dltensor" capsule, any object with
 * __dlpack__ (NumPy, PyTorch, ...), or, for objects that refuse to export
 * (NumPy's read-only arrays), the buffer protocol. They are borrowed for the
 * call and never copied. Outputs are created in the caller's framework by a
 * Python callable (torch.empty, numpy.empty, ...) from the shapes the library
 * infers, and written in place. For shape inference a tensor may also be a spec dict
 * {"shape": (...), "dtype": "float32", "device": (type, id)} with no data.
 * A dict that also has "data" (an address or handle, an int: an OpenCL
 * tensor's cl_mem), and optionally "byte_offset" and "strides" (in elements;
 * None or absent: contiguous), is a tensor with data, taken by call too:
 * the form visionops._opencl gives pyopencl arrays, which have no DLPack.
 *
 *   ops()                       -> [(name, schema, backward or None), ...]
 *   shape_rules()               -> {name: shape rule}, where each output dimension comes
 *                                  from (syntax in src/ops/ops.def)
 *   backends()                  -> [(name, built, available, detail), ...]
 *   device_types()              -> {backend name: DLPack device type}
 *   infer(op, args)             -> [(shape, dtype, (device_type, device_id)), ...]
 *   call(op, args, alloc, queue=0, num_threads=0, deterministic=False,
 *        device_checks=..., workspace=None, omit=0)
 *                               -> [output, ...], each made by alloc(shape, dtype, device),
 *                                  which returns it, or (it, the address of its first
 *                                  element) for a new contiguous tensor as described
 *                                  (alloc None, or None returned: numpy.empty(shape,
 *                                  dtype), CPU only);
 *                                  None for output k when bit k of omit is set (passed
 *                                  as NULL: an error unless the op may skip it)
 *
 * Errors: VisionOpsValueError (bad argument values or devices),
 * VisionOpsTypeError (dtypes, Python types; its subclass ForeignArray for a
 * pyopencl array, which visionops._opencl takes), VisionOpsError (everything
 * else), each with the C message; all three are RuntimeErrors too, and the
 * first two ValueError / TypeError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <visionops/visionops.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

/* Most tensors one call can involve: schema tensors, list items, outputs. */
#define MAX_TENSORS 64
#define MAX_ARGS 32

/* Everything a call borrows; released by store_release. */
typedef struct store {
  DLTensor tensors[MAX_TENSORS];
  int64_t shapes[MAX_TENSORS][VO_MAX_DIMS];
  int64_t strides[MAX_TENSORS][VO_MAX_DIMS];
  PyObject *refs[MAX_TENSORS]; /* capsules or buffer owners */
  Py_buffer buffers[MAX_TENSORS];
  int has_buffer[MAX_TENSORS];
  int num_tensors;
  const DLTensor *lists[MAX_ARGS][VO_MAX_LIST];
  double floats[MAX_ARGS][VO_MAX_LIST];
  vo_value values[MAX_ARGS];
  int num_values;
} store;

static void store_release(store *s) {
  for (int i = 0; i < s->num_tensors; i++) {
    if (s->has_buffer[i]) PyBuffer_Release(&s->buffers[i]);
    Py_XDECREF(s->refs[i]);
  }
  s->num_tensors = 0;
}

/* What a tensor is in messages: "argument 2", "argument 0[1]", "output 0".
 * Formed only when a message needs it (LABEL), not on every call. */
typedef struct label {
  const char *kind;
  Py_ssize_t index, item; /* item: -1 outside a list */
} label;

static const char *label_str(const label *l, char *buf, size_t size) {
  if (l->item < 0)
    snprintf(buf, size, "%s %zd", l->kind, l->index);
  else
    snprintf(buf, size, "%s %zd[%zd]", l->kind, l->index, l->item);
  return buf;
}
#define LABEL(l) label_str((l), (char[64]){0}, 64)

/* The package's exceptions (visionops.VisionOpsError and its two kinds),
 * created at import. Each is also a RuntimeError, which torchvision raises
 * for the same inputs, so `except RuntimeError` code keeps working. */
static PyObject *Error, *ValueErr, *TypeErr;

/* _C.ForeignArray: an argument is a pyopencl array, which has no DLPack;
 * visionops._opencl runs such calls (run_numpy catches it and goes there).
 * Asked only of arguments that are no tensor here, so NumPy and torch calls
 * never pay for it. A VisionOpsTypeError, for the calls that cannot take
 * pyopencl arrays at all. */
static PyObject *ForeignArr;

/* Whether a class in o's type's MRO comes from the pyopencl package
 * (numbers, a float list's items, are answered at once). */
static int is_pyopencl(PyObject *o) {
  if (PyFloat_Check(o) || PyLong_Check(o) || o == Py_None) return 0;
  PyObject *mro = Py_TYPE(o)->tp_mro;
  for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); i++) {
    PyObject *m = PyObject_GetAttrString(PyTuple_GET_ITEM(mro, i), "__module__");
    const char *name = m && PyUnicode_Check(m) ? PyUnicode_AsUTF8(m) : NULL;
    const int found = name && !strncmp(name, "pyopencl", 8) && (name[8] == '.' || !name[8]);
    Py_XDECREF(m);
    PyErr_Clear();
    if (found) return 1;
  }
  return 0;
}

/* Raises ForeignArray naming `what` if o is a pyopencl object (returns 1);
 * else 0, nothing raised. */
static int raise_if_foreign(PyObject *o, const char *op, const label *what) {
  if (!is_pyopencl(o)) return 0;
  PyErr_Format(ForeignArr, "%s: %s is a pyopencl array, which only a call on pyopencl arrays takes",
               op, LABEL(what));
  return 1;
}

static PyObject *raise_status(vo_status st) {
  const char *msg = vo_last_error();
  if (!msg || !*msg) msg = vo_status_string(st);
  PyObject *type = Error;
  if (st == VO_ERROR_INVALID_ARGUMENT || st == VO_ERROR_DEVICE_MISMATCH) type = ValueErr;
  if (st == VO_ERROR_UNSUPPORTED_DTYPE) type = TypeErr;
  PyErr_SetString(type, msg);
  return NULL;
}

static const struct {
  const char *name;
  uint8_t code, bits;
} dtype_names[] = {
    {"float32", kDLFloat, 32}, {"float64", kDLFloat, 64},
    {"float16", kDLFloat, 16}, {"bfloat16", kDLBfloat, 16},
    {"int64", kDLInt, 64},     {"int32", kDLInt, 32},
    {"int16", kDLInt, 16},     {"int8", kDLInt, 8},
    {"uint8", kDLUInt, 8},     {"bool", 6 /* kDLBool, DLPack >= 0.8 */, 8},
};

/* Interned at import: the names every call looks up or hands back (made
 * from C strings on each call, they were a string allocation per tensor
 * and per output). */
static PyObject *dlpack_method;
static PyObject *dtype_name_objects[sizeof dtype_names / sizeof dtype_names[0]];

/* The entry of dtype_names for t, or -1. */
static int dtype_index(DLDataType t) {
  for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
    if (dtype_names[i].code == t.code && dtype_names[i].bits == t.bits && t.lanes == 1)
      return (int)i;
  return -1;
}

static int dtype_from_name(const char *name, DLDataType *out) {
  for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
    if (!strcmp(dtype_names[i].name, name)) {
      out->code = dtype_names[i].code;
      out->bits = dtype_names[i].bits;
      out->lanes = 1;
      return 1;
    }
  return 0;
}

/* Buffer-protocol format character to a DLPack dtype. */
static int dtype_from_format(const char *fmt, Py_ssize_t itemsize, DLDataType *out) {
  if (!fmt) fmt = "B";
  if (*fmt == '<' || *fmt == '=' || *fmt == '@') fmt++;
  if (fmt[0] == '\0' || fmt[1] != '\0') return 0;
  out->lanes = 1;
  out->bits = (uint8_t)(itemsize * 8);
  const char c = fmt[0];
  if (strchr("efd", c)) {
    out->code = kDLFloat;
    return itemsize == 2 || itemsize == 4 || itemsize == 8;
  }
  if (strchr("bhilq", c)) {
    out->code = kDLInt;
    return 1;
  }
  if (strchr("BHILQ", c)) {
    out->code = kDLUInt;
    return 1;
  }
  if (c == '?') {
    out->code = 6; /* kDLBool, DLPack >= 0.8 */
    return itemsize == 1;
  }
  return 0;
}

static DLTensor *new_slot(store *s, const char *op, const label *what) {
  if (s->num_tensors >= MAX_TENSORS) {
    PyErr_Format(ValueErr, "%s: too many tensors in one call (%s)", op, LABEL(what));
    return NULL;
  }
  int i = s->num_tensors++;
  s->refs[i] = NULL;
  s->has_buffer[i] = 0;
  memset(&s->tensors[i], 0, sizeof s->tensors[i]);
  return &s->tensors[i];
}

static int spec_tensor(store *s, PyObject *obj, DLTensor *t, const char *op, const label *what) {
  int i = (int)(t - s->tensors);
  PyObject *shape = PyDict_GetItemString(obj, "shape");
  PyObject *dtype = PyDict_GetItemString(obj, "dtype");
  PyObject *device = PyDict_GetItemString(obj, "device");
  if (!shape || !dtype || !PyUnicode_Check(dtype)) {
    PyErr_Format(TypeErr, "%s: %s: a tensor spec needs 'shape' and 'dtype'", op, LABEL(what));
    return -1;
  }
  PyObject *seq = PySequence_Fast(shape, "shape must be a sequence");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n > VO_MAX_DIMS) {
    Py_DECREF(seq);
    PyErr_Format(ValueErr, "%s: %s has %zd dimensions, at most %d are supported", op, LABEL(what),
                 n, VO_MAX_DIMS);
    return -1;
  }
  for (Py_ssize_t d = 0; d < n; d++) {
    s->shapes[i][d] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, d));
    if (s->shapes[i][d] == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return -1;
    }
  }
  Py_DECREF(seq);
  if (!dtype_from_name(PyUnicode_AsUTF8(dtype), &t->dtype)) {
    PyErr_Format(TypeErr, "%s: %s has unsupported dtype %U", op, LABEL(what), dtype);
    return -1;
  }
  t->device.device_type = kDLCPU;
  if (device && device != Py_None &&
      !PyArg_ParseTuple(device, "ii", (int *)&t->device.device_type, &t->device.device_id))
    return -1;
  t->ndim = (int32_t)n;
  t->shape = s->shapes[i];
  t->strides = NULL;
  t->data = NULL;
  PyObject *data = PyDict_GetItemString(obj, "data");
  if (!data) return 0;
  t->data = PyLong_AsVoidPtr(data);
  if (PyErr_Occurred()) return -1;
  PyObject *offset = PyDict_GetItemString(obj, "byte_offset");
  if (offset) {
    t->byte_offset = PyLong_AsUnsignedLongLong(offset);
    if (PyErr_Occurred()) return -1;
  }
  PyObject *strides = PyDict_GetItemString(obj, "strides");
  if (!strides || strides == Py_None) return 0;
  seq = PySequence_Fast(strides, "strides must be a sequence");
  if (!seq) return -1;
  if (PySequence_Fast_GET_SIZE(seq) != n) {
    Py_DECREF(seq);
    PyErr_Format(ValueErr, "%s: %s has %zd strides for %zd dimensions", op, LABEL(what),
                 PySequence_Fast_GET_SIZE(seq), n);
    return -1;
  }
  for (Py_ssize_t d = 0; d < n; d++) {
    s->strides[i][d] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, d));
    if (s->strides[i][d] == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return -1;
    }
  }
  Py_DECREF(seq);
  t->strides = s->strides[i];
  return 0;
}

static int buffer_tensor(store *s, PyObject *obj, DLTensor *t, int writable, const char *op,
                         const label *what) {
  int i = (int)(t - s->tensors);
  Py_buffer *b = &s->buffers[i];
  int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj, b, flags) != 0) return -1;
  s->has_buffer[i] = 1;
  if (!dtype_from_format(b->format, b->itemsize, &t->dtype)) {
    PyErr_Format(TypeErr, "%s: %s has unsupported buffer format '%s'", op, LABEL(what),
                 b->format ? b->format : "B");
    return -1;
  }
  if (b->ndim > VO_MAX_DIMS) {
    PyErr_Format(ValueErr, "%s: %s has %d dimensions, at most %d are supported", op, LABEL(what),
                 b->ndim, VO_MAX_DIMS);
    return -1;
  }
  for (int d = 0; d < b->ndim; d++) {
    s->shapes[i][d] = b->shape[d];
    if (b->strides[d] % b->itemsize != 0) {
      PyErr_Format(ValueErr, "%s: %s has a stride not a multiple of its item size", op,
                   LABEL(what));
      return -1;
    }
    s->strides[i][d] = b->strides[d] / b->itemsize;
  }
  t->data = b->buf;
  t->device.device_type = kDLCPU;
  t->ndim = b->ndim;
  t->shape = s->shapes[i];
  t->strides = s->strides[i];
  return 0;
}

/* A Python tensor-like to a borrowed DLTensor. `spec_ok`: spec dicts without
 * data allowed (dicts with data always are). */
static const DLTensor *to_tensor(store *s, PyObject *obj, int writable, int spec_ok, const char *op,
                                 const label *what) {
  DLTensor *t = new_slot(s, op, what);
  if (!t) return NULL;
  int i = (int)(t - s->tensors);
  if (PyDict_Check(obj) && (spec_ok || PyDict_GetItemString(obj, "data")))
    return spec_tensor(s, obj, t, op, what) ? NULL : t;
  PyObject *capsule = NULL;
  int use_buffer = 0;
  if (PyCapsule_CheckExact(obj)) {
    Py_INCREF(obj);
    capsule = obj;
  } else if (PyObject_HasAttr(obj, dlpack_method)) {
    capsule = PyObject_CallMethodNoArgs(obj, dlpack_method);
    if (!capsule) {
      /* NumPy will not export read-only arrays; read them in place. */
      if (writable || !PyErr_ExceptionMatches(PyExc_BufferError) || !PyObject_CheckBuffer(obj))
        return NULL;
      PyErr_Clear();
      use_buffer = 1;
    }
  } else {
    use_buffer = PyObject_CheckBuffer(obj);
    if (!use_buffer) {
      if (raise_if_foreign(obj, op, what)) return NULL;
      PyErr_Format(TypeErr,
                   "%s: %s must be a tensor (an object with __dlpack__ or the buffer protocol), "
                   "got %s",
                   op, LABEL(what), Py_TYPE(obj)->tp_name);
      return NULL;
    }
  }
  if (use_buffer) return buffer_tensor(s, obj, t, writable, op, what) ? NULL : t;
  s->refs[i] = capsule;
  if (!PyCapsule_IsValid(capsule, "dltensor")) {
    PyErr_Format(TypeErr, "%s: %s: __dlpack__ did not return an unused DLPack capsule", op,
                 LABEL(what));
    return NULL;
  }
  DLManagedTensor *m = (DLManagedTensor *)PyCapsule_GetPointer(capsule, "dltensor");
  if (!m) return NULL;
  /* The capsule stays unconsumed: its own destructor frees the tensor when
   * store_release drops our reference. */
  *t = m->dl_tensor;
  return t;
}

/* A new contiguous output as vo_infer described it, at `data`. */
static DLTensor *described_tensor(store *s, const vo_tensor_desc *d, void *data, const char *op,
                                  const label *what) {
  DLTensor *t = new_slot(s, op, what);
  if (!t) return NULL;
  int i = (int)(t - s->tensors);
  memcpy(s->shapes[i], d->shape, sizeof(int64_t) * (size_t)d->ndim);
  t->data = data;
  t->device = d->device;
  t->ndim = d->ndim;
  t->dtype = d->dtype;
  t->shape = s->shapes[i];
  return t;
}

static int is_tensor_like(PyObject *o) {
  if (PyLong_Check(o) || PyFloat_Check(o)) return 0; /* NumPy scalars export buffers too */
  return PyCapsule_CheckExact(o) || PyDict_Check(o) || PyObject_HasAttr(o, dlpack_method) ||
         PyObject_CheckBuffer(o);
}

/* Boxes the Python arguments by their Python type; the library checks them
 * against the schema and reports mismatches by argument name. */
static int convert_args(store *s, const vo_op_info *op, PyObject *args, int spec_ok) {
  PyObject *seq = PySequence_Fast(args, "args must be a sequence");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n > MAX_ARGS) {
    Py_DECREF(seq);
    PyErr_Format(ValueErr, "%s: too many arguments (%zd)", op->name, n);
    return -1;
  }
  for (Py_ssize_t a = 0; a < n; a++) {
    PyObject *o = PySequence_Fast_GET_ITEM(seq, a);
    vo_value *v = &s->values[a];
    if (o == Py_None) {
      v->kind = VO_VALUE_NONE;
    } else if (PyBool_Check(o)) {
      *v = vo_bool_value(o == Py_True);
    } else if (PyLong_Check(o)) {
      long long x = PyLong_AsLongLong(o);
      if (x == -1 && PyErr_Occurred()) goto fail;
      *v = vo_int_value(x);
    } else if (PyFloat_Check(o)) {
      *v = vo_float_value(PyFloat_AsDouble(o));
    } else if (PyList_Check(o) || PyTuple_Check(o)) {
      Py_ssize_t k = PySequence_Size(o);
      if (k > VO_MAX_LIST) {
        PyErr_Format(ValueErr, "%s: argument %zd holds %zd items, at most %d are supported",
                     op->name, a, k, VO_MAX_LIST);
        goto fail;
      }
      PyObject *first = k > 0 ? PySequence_GetItem(o, 0) : NULL;
      int tensors = first && is_tensor_like(first);
      const label first_item = {"argument", a, 0};
      const int foreign = first && !tensors && raise_if_foreign(first, op->name, &first_item);
      Py_XDECREF(first);
      if (foreign) goto fail;
      for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *item = PySequence_GetItem(o, j);
        if (!item) goto fail;
        if (tensors) {
          const label what = {"argument", a, j};
          s->lists[a][j] = to_tensor(s, item, 0, spec_ok, op->name, &what);
          Py_DECREF(item);
          if (!s->lists[a][j]) goto fail;
        } else {
          s->floats[a][j] = PyFloat_AsDouble(item);
          Py_DECREF(item);
          if (s->floats[a][j] == -1.0 && PyErr_Occurred()) goto fail;
        }
      }
      *v = tensors ? vo_tensor_list_value(s->lists[a], k) : vo_float_list_value(s->floats[a], k);
    } else if (is_tensor_like(o)) {
      const label what = {"argument", a, -1};
      const DLTensor *t = to_tensor(s, o, 0, spec_ok, op->name, &what);
      if (!t) goto fail;
      *v = vo_tensor_value(t);
    } else {
      const label what = {"argument", a, -1};
      if (!raise_if_foreign(o, op->name, &what))
        PyErr_Format(TypeErr, "%s: argument %zd has unsupported type %s", op->name, a,
                     Py_TYPE(o)->tp_name);
      goto fail;
    }
  }
  s->num_values = (int)n;
  Py_DECREF(seq);
  return 0;
fail:
  Py_DECREF(seq);
  return -1;
}

static const vo_op_info *find_op(const char *name) {
  const vo_op_info *op = vo_op_find(name);
  if (!op) PyErr_Format(ValueErr, "visionops: no operator named '%s'", name);
  return op;
}

/* d's shape as a tuple of ints. */
static PyObject *shape_tuple(const vo_tensor_desc *d) {
  PyObject *shape = PyTuple_New(d->ndim);
  for (int i = 0; shape && i < d->ndim; i++) {
    PyObject *n = PyLong_FromLongLong(d->shape[i]);
    if (!n)
      Py_CLEAR(shape);
    else
      PyTuple_SET_ITEM(shape, i, n);
  }
  return shape;
}

static PyObject *describe(const vo_tensor_desc *d) {
  PyObject *shape = shape_tuple(d);
  if (!shape) return NULL;
  const int i = dtype_index(d->dtype);
  if (i < 0)
    return Py_BuildValue("(Ns(ii))", shape, "unknown", (int)d->device.device_type,
                         (int)d->device.device_id);
  return Py_BuildValue("(NO(ii))", shape, dtype_name_objects[i], (int)d->device.device_type,
                       (int)d->device.device_id);
}

/* numpy.empty, looked up on the first call that allocates NumPy outputs. */
static PyObject *numpy_empty;

/* A new NumPy array as d describes (call's alloc None, or an alloc that
 * returned None): numpy.empty called from here, which spares every NumPy
 * call a Python allocation function per output. */
static PyObject *numpy_output(const vo_tensor_desc *d) {
  if (d->device.device_type != kDLCPU)
    return PyErr_Format(Error, "visionops: NumPy inputs live on the CPU, got device type %d",
                        (int)d->device.device_type);
  const int i = dtype_index(d->dtype);
  if (i < 0 || d->dtype.code == kDLBfloat)
    return PyErr_Format(TypeErr, "visionops: NumPy has no %s", i < 0 ? "such dtype" : "bfloat16");
  if (!numpy_empty) {
    PyObject *np = PyImport_ImportModule("numpy");
    numpy_empty = np ? PyObject_GetAttrString(np, "empty") : NULL;
    Py_XDECREF(np);
    if (!numpy_empty) return NULL;
  }
  PyObject *shape = shape_tuple(d);
  if (!shape) return NULL;
  PyObject *out = PyObject_CallFunctionObjArgs(numpy_empty, shape, dtype_name_objects[i], NULL);
  Py_DECREF(shape);
  return out;
}

static PyObject *py_infer(PyObject *self, PyObject *pargs) {
  (void)self;
  const char *name;
  PyObject *args;
  if (!PyArg_ParseTuple(pargs, "sO:infer", &name, &args)) return NULL;
  const vo_op_info *op = find_op(name);
  if (!op) return NULL;
  store storage, *s = &storage; /* ~25 KB on the stack: no allocation, no zeroing */
  s->num_tensors = s->num_values = 0;
  PyObject *result = NULL;
  vo_tensor_desc desc[VO_MAX_LIST];
  int count = 0;
  if (convert_args(s, op, args, 1) != 0) goto done;
  vo_status st = vo_infer_num_outputs(NULL, op, s->values, s->num_values, &count);
  if (st == VO_OK) st = vo_infer(NULL, op, s->values, s->num_values, desc, count);
  if (st != VO_OK) {
    raise_status(st);
    goto done;
  }
  result = PyList_New(count);
  for (int k = 0; result && k < count; k++) {
    PyObject *item = describe(&desc[k]);
    if (!item) {
      Py_CLEAR(result);
      break;
    }
    PyList_SET_ITEM(result, k, item);
  }
done:
  store_release(s);
  return result;
}

/* A fresh output the op will write whole, allocated just now by the
 * framework's CPU allocator: asks the kernel to back it with transparent huge
 * pages (the 2 MiB pages wholly inside it). Large framework allocations are
 * fresh mappings, so every call first-touches its output one 4 KiB page
 * fault at a time; roi_align's 50 MB output at 1,000 RoIs spent 13 ms of a
 * 45 ms call in those faults on torch tensors (NumPy advises its own large
 * arrays the same way). Only a hint: it changes no data, and the memory is
 * ours until the call returns it. */
static void advise_huge_pages(const DLTensor *t) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  enum { HUGE_PAGE = 2 << 20 };
  if (t->device.device_type != kDLCPU || !t->data) return;
  uint64_t elements = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->strides && t->shape[i] != 1 && t->strides[i] != (int64_t)elements) return;
    elements *= (uint64_t)t->shape[i];
  }
  uint64_t bytes = elements * ((t->dtype.bits + 7u) / 8u);
  if (bytes < 2 * HUGE_PAGE) return;
  uintptr_t start = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
  uintptr_t first = (start + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
  uintptr_t last = (start + (uintptr_t)bytes) & ~(uintptr_t)(HUGE_PAGE - 1);
  if (last > first) (void)madvise((void *)first, last - first, MADV_HUGEPAGE);
#else
  (void)t;
#endif
}

/* A caller's workspace allocator (the `workspace` argument of call): Python
 * callables alloc(size, device_type, device_id, stream) -> address (0: none)
 * and free(address, device_type, device_id, stream), run with the GIL taken
 * again (vo_call runs without it, perhaps on worker threads). A failure or
 * an exception in them is a failed allocation (the op reports it) or is
 * dropped. */
typedef struct py_allocator {
  PyObject *alloc, *free;
} py_allocator;

static void *py_workspace_alloc(void *user, DLDevice device, size_t size, void *stream) {
  const py_allocator *a = user;
  const PyGILState_STATE g = PyGILState_Ensure();
  PyObject *r = PyObject_CallFunction(a->alloc, "niiK", (Py_ssize_t)size, (int)device.device_type,
                                      (int)device.device_id, (unsigned long long)(uintptr_t)stream);
  void *p = r ? PyLong_AsVoidPtr(r) : NULL;
  Py_XDECREF(r);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    p = NULL;
  }
  PyGILState_Release(g);
  return p;
}

static void py_workspace_free(void *user, DLDevice device, void *ptr, void *stream) {
  const py_allocator *a = user;
  const PyGILState_STATE g = PyGILState_Ensure();
  PyObject *r = PyObject_CallFunction(a->free, "KiiK", (unsigned long long)(uintptr_t)ptr,
                                      (int)device.device_type, (int)device.device_id,
                                      (unsigned long long)(uintptr_t)stream);
  Py_XDECREF(r);
  if (PyErr_Occurred()) PyErr_Clear();
  PyGILState_Release(g);
}

/* Converts the arguments once, infers the outputs, has `alloc(shape, dtype,
 * device)` create each in the caller's framework, then runs the op with the
 * GIL released. Returns the list of allocated outputs. `device_checks` is a
 * vo_device_checks other than deferred (a context lives for one call):
 * VO_DEVICE_CHECKS_OFF while a CUDA graph is captured. `workspace`, when
 * not None, is an (alloc, free) pair the op's temporary memory comes from
 * (py_allocator: torch's caching allocator for CUDA tensors). Bit k of
 * `omit` leaves output k out: not allocated, NULL to vo_call (which refuses
 * it unless the op may skip that output), None in the list. */
static PyObject *py_call(PyObject *self, PyObject *pargs, PyObject *kwargs) {
  (void)self;
  static char *kwlist[] = {
      "op",        "args", "alloc", "queue", "num_threads", "deterministic", "device_checks",
      "workspace", "omit", NULL};
  const char *name;
  PyObject *args, *alloc;
  unsigned long long queue = 0;
  PyObject *workspace = Py_None;
  int num_threads = 0, deterministic = 0, device_checks = VO_DEVICE_CHECKS_SYNC;
  unsigned long long omit = 0;
  if (!PyArg_ParseTupleAndKeywords(pargs, kwargs, "sOO|KipiOK:call", kwlist, &name, &args, &alloc,
                                   &queue, &num_threads, &deterministic, &device_checks, &workspace,
                                   &omit))
    return NULL;
  py_allocator pya = {NULL, NULL};
  if (workspace != Py_None) {
    if (!PyTuple_Check(workspace) || PyTuple_GET_SIZE(workspace) != 2 ||
        !PyCallable_Check(PyTuple_GET_ITEM(workspace, 0)) ||
        !PyCallable_Check(PyTuple_GET_ITEM(workspace, 1))) {
      PyErr_SetString(PyExc_TypeError, "call: workspace must be None or (alloc, free) callables");
      return NULL;
    }
    pya.alloc = PyTuple_GET_ITEM(workspace, 0);
    pya.free = PyTuple_GET_ITEM(workspace, 1);
  }
  if (device_checks == VO_DEVICE_CHECKS_DEFERRED) {
    PyErr_SetString(PyExc_ValueError,
                    "call: device_checks cannot be deferred (its context lives for one call)");
    return NULL;
  }
  const vo_op_info *op = find_op(name);
  if (!op) return NULL;
  store storage, *s = &storage; /* ~25 KB on the stack: no allocation, no zeroing */
  s->num_tensors = s->num_values = 0;
  PyObject *result = NULL;
  DLTensor *outs[VO_MAX_LIST];
  vo_tensor_desc desc[VO_MAX_LIST];
  vo_context *ctx = NULL;
  int n = 0;
  if (convert_args(s, op, args, 0) != 0) goto done;
  /* (a fixed output count needs no inference pass of its own) */
  vo_status st = op->num_outputs >= 0
                     ? (n = op->num_outputs, VO_OK)
                     : vo_infer_num_outputs(NULL, op, s->values, s->num_values, &n);
  if (st == VO_OK) st = vo_infer(NULL, op, s->values, s->num_values, desc, n);
  if (st != VO_OK) {
    raise_status(st);
    goto done;
  }
  result = PyList_New(n);
  if (!result) goto done;
  for (int k = 0; k < n; k++) {
    if (k < 64 && (omit >> k & 1u)) { /* an output the caller drops: NULL, if the op allows it */
      Py_INCREF(Py_None);
      PyList_SET_ITEM(result, k, Py_None);
      outs[k] = NULL;
      continue;
    }
    PyObject *made;
    if (alloc == Py_None) {
      made = numpy_output(&desc[k]);
    } else {
      PyObject *d = describe(&desc[k]);
      made = d ? PyObject_CallObject(alloc, d) : NULL;
      Py_XDECREF(d);
      if (made == Py_None) { /* the output left to NumPy (out= given for others) */
        Py_DECREF(made);
        made = numpy_output(&desc[k]);
      }
    }
    if (!made) {
      Py_CLEAR(result);
      goto done;
    }
    const label what = {"output", k, -1};
    if (PyTuple_CheckExact(made) && PyTuple_GET_SIZE(made) == 2) {
      /* (output, address of its first element): a new contiguous tensor
       * exactly as described, which the result list keeps alive */
      PyObject *obj = PyTuple_GET_ITEM(made, 0);
      void *data = PyLong_AsVoidPtr(PyTuple_GET_ITEM(made, 1));
      Py_INCREF(obj);
      Py_DECREF(made);
      PyList_SET_ITEM(result, k, obj);
      outs[k] =
          data || !PyErr_Occurred() ? described_tensor(s, &desc[k], data, op->name, &what) : NULL;
    } else {
      PyList_SET_ITEM(result, k, made);
      outs[k] = (DLTensor *)to_tensor(s, made, 1, 0, op->name, &what);
    }
    if (!outs[k]) {
      Py_CLEAR(result);
      goto done;
    }
    advise_huge_pages(outs[k]);
  }
  st = vo_context_create(&ctx);
  if (st == VO_OK) st = vo_context_set_num_threads(ctx, num_threads);
  if (st == VO_OK) st = vo_context_set_deterministic(ctx, deterministic);
  if (st == VO_OK && device_checks != VO_DEVICE_CHECKS_SYNC)
    st = vo_context_set_device_checks(ctx, (vo_device_checks)device_checks);
  if (st == VO_OK && pya.alloc) {
    const vo_allocator a = {py_workspace_alloc, py_workspace_free, &pya};
    st = vo_context_set_allocator(ctx, &a);
  }
  /* The queue (a CUDA stream, ...) of the outputs' device: the op's device. */
  const DLTensor *first_out = NULL;
  for (int k = 0; k < n && !first_out; k++) first_out = outs[k];
  if (st == VO_OK && queue && first_out)
    st = vo_context_set_queue(ctx, first_out->device.device_type, (void *)(uintptr_t)queue);
  if (st == VO_OK) {
    Py_BEGIN_ALLOW_THREADS st = vo_call(ctx, op, s->values, s->num_values, outs, n);
    Py_END_ALLOW_THREADS
  }
  if (st != VO_OK) {
    Py_CLEAR(result);
    raise_status(st);
  }
done:
  vo_context_destroy(ctx);
  store_release(s);
  return result;
}

static PyObject *py_ops(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  int n = vo_op_count();
  PyObject *list = PyList_New(n);
  for (int i = 0; list && i < n; i++) {
    const vo_op_info *op = vo_op_get(i);
    PyObject *item = Py_BuildValue("(ssz)", op->name, op->schema, op->backward);
    if (!item) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

static PyObject *py_shape_rules(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  PyObject *rules = PyDict_New();
  for (int i = 0; rules && i < vo_op_count(); i++) {
    const vo_op_info *op = vo_op_get(i);
    PyObject *rule = PyUnicode_FromString(op->shape_rule);
    if (!rule || PyDict_SetItemString(rules, op->name, rule) != 0) Py_CLEAR(rules);
    Py_XDECREF(rule);
  }
  return rules;
}

static PyObject *py_backends(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  int n = vo_backend_count();
  PyObject *list = PyList_New(n);
  for (int i = 0; list && i < n; i++) {
    vo_backend_info b;
    vo_status st = vo_backend_status(i, &b);
    if (st != VO_OK) {
      Py_DECREF(list);
      return raise_status(st);
    }
    PyObject *item = Py_BuildValue("(sNNs)", b.name, PyBool_FromLong(b.built),
                                   PyBool_FromLong(b.available), b.detail);
    if (!item) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

/* {backend name: DLPack device type}, for every backend the library knows. */
static PyObject *py_device_types(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  PyObject *dict = PyDict_New();
  for (int i = 0; dict && i < vo_backend_count(); i++) {
    vo_backend_info b;
    vo_status st = vo_backend_status(i, &b);
    if (st != VO_OK) {
      Py_DECREF(dict);
      return raise_status(st);
    }
    PyObject *t = PyLong_FromLong((long)b.device_type);
    if (!t || PyDict_SetItemString(dict, b.name, t) != 0) Py_CLEAR(dict);
    Py_XDECREF(t);
  }
  return dict;
}

static PyObject *py_release_cached_memory(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  vo_cpu_release_cached_memory();
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"ops", py_ops, METH_NOARGS, "ops() -> [(name, schema, backward or None), ...]"},
    {"shape_rules", py_shape_rules, METH_NOARGS,
     "shape_rules() -> {name: rule}: where each output dimension of each op comes from"},
    {"backends", py_backends, METH_NOARGS, "backends() -> [(name, built, available, detail), ...]"},
    {"device_types", py_device_types, METH_NOARGS,
     "device_types() -> {backend name: DLPack device type}"},
    {"infer", py_infer, METH_VARARGS,
     "infer(op, args) -> [(shape, dtype, (device_type, device_id)), ...]: the outputs op "
     "would produce; tensors may be spec dicts without data"},
    {"call", (PyCFunction)(void (*)(void))py_call, METH_VARARGS | METH_KEYWORDS,
     "call(op, args, alloc, queue=0, num_threads=0, deterministic=False, device_checks=0, "
     "workspace=None, omit=0) -> outputs: alloc(shape, dtype, device) creates each output in "
     "the caller's framework; output k is None (not computed) when bit k of omit is set"},
    {"release_cached_memory", py_release_cached_memory, METH_NOARGS,
     "release_cached_memory(): hands back the CPU workspace blocks kept for later calls"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "visionops._C",
    "visionops' C library, over DLPack.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

/* A new exception class visionops.<name> with the given bases, added to m. */
static PyObject *add_exception(PyObject *m, const char *name, PyObject *bases, const char *doc) {
  char qualified[64];
  snprintf(qualified, sizeof qualified, "visionops.%s", name);
  PyObject *type = PyErr_NewExceptionWithDoc(qualified, doc, bases, NULL);
  if (!type) return NULL;
  if (PyModule_AddObject(m, name, type) != 0) {
    Py_DECREF(type);
    return NULL;
  }
  Py_INCREF(type); /* one reference for the module, one for this file */
  return type;
}

PyMODINIT_FUNC PyInit__C(void) {
  PyObject *m = PyModule_Create(&module);
  if (!m) return NULL;
  if (!(dlpack_method = PyUnicode_InternFromString("__dlpack__"))) goto fail;
  for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
    if (!(dtype_name_objects[i] = PyUnicode_InternFromString(dtype_names[i].name))) goto fail;
  if (PyModule_AddStringConstant(m, "version", vo_version()) != 0) goto fail;
  Error = add_exception(m, "VisionOpsError", PyExc_RuntimeError,
                        "An error of the visionops C library (a RuntimeError, as torchvision's).");
  if (!Error) goto fail;
  PyObject *bases = Py_BuildValue("(OO)", Error, PyExc_ValueError);
  ValueErr = bases ? add_exception(m, "VisionOpsValueError", bases,
                                   "A bad argument value, shape or device: a ValueError and a "
                                   "RuntimeError.")
                   : NULL;
  Py_XDECREF(bases);
  if (!ValueErr) goto fail;
  bases = Py_BuildValue("(OO)", Error, PyExc_TypeError);
  TypeErr = bases ? add_exception(m, "VisionOpsTypeError", bases,
                                  "A bad dtype or Python type: a TypeError and a RuntimeError.")
                  : NULL;
  Py_XDECREF(bases);
  if (!TypeErr) goto fail;
  ForeignArr = add_exception(m, "ForeignArray", TypeErr,
                             "A pyopencl array where the call takes none (visionops._opencl "
                             "runs the calls on pyopencl arrays alone).");
  if (!ForeignArr) goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
