/*
 * The OpenCL backend's descriptor: its kernel table, the device list and
 * once-only probe, the default queues, memory (cl_mem buffers, blocking
 * copies) and the check_data hook, which runs kernels/data_checks.h on the
 * device (opencl/data_checks.cl) as src/cuda/roi_check.cu does on CUDA.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl/clblast.h"
#include "opencl/common.h"
#include "opencl/device.h"

/* An op without OpenCL glue yet has a line `#define vo_opencl_<kernel> NULL`
 * here: calling it on an OpenCL device then fails with "not implemented on
 * the opencl backend" (docs/ADDING_A_BACKEND.md; every op has its glue
 * today). */

/* The kernel table, from src/ops/ops.def's kernel column. */
static const vo_kernel_fn vo_opencl_kernels[VO_NUM_OPS] = {
#define VO_OP(name, kernel, schema, backward, shape_rule) [VO_OP_##name] = vo_opencl_##kernel,
#include "ops/ops.def"
#undef VO_OP
};

/* ------------------------------------------------------------ devices */

static vo_cl_device vo_cl_list[VO_CL_MAX_DEVICES];
static int vo_cl_count;
static int vo_cl_no_fp64;            /* VISIONOPS_OPENCL_NO_FP64=1 (device.h) */
static size_t vo_cl_group_cap = 256; /* VISIONOPS_OPENCL_MAX_GROUP (device.h) */
static char vo_cl_list_why[512];
static pthread_once_t vo_cl_list_once = PTHREAD_ONCE_INIT;

static int vo_cl_has_ext(const char *exts, const char *name) {
  const size_t n = strlen(name);
  for (const char *p = exts; (p = strstr(p, name)) != NULL; p += n)
    if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
  return 0;
}

int vo_cl_fp64_forced_off(void) { return vo_cl_no_fp64; }

size_t vo_cl_max_group(void) { return vo_cl_group_cap; }

static void vo_cl_list_devices(void) {
  const char *why = NULL;
  const char *no_fp64 = getenv("VISIONOPS_OPENCL_NO_FP64");
  vo_cl_no_fp64 = no_fp64 && strcmp(no_fp64, "1") == 0;
  const char *max_group = getenv("VISIONOPS_OPENCL_MAX_GROUP");
  if (max_group) {
    char *end;
    const long g = strtol(max_group, &end, 10);
    if (end != max_group && *end == '\0' && g >= 1 && g <= 256) vo_cl_group_cap = (size_t)g;
  }
  if (!vo_cl_load(&why)) {
    snprintf(vo_cl_list_why, sizeof vo_cl_list_why, "%s", why);
    return;
  }
  cl_platform_id platforms[8];
  cl_uint np = 0;
  const cl_int e = vo_cl.GetPlatformIDs(8, platforms, &np);
  if (e != CL_SUCCESS || np == 0) {
    char b[64];
    snprintf(vo_cl_list_why, sizeof vo_cl_list_why,
             "no OpenCL platform (%s): no ICD is registered in /etc/OpenCL/vendors "
             "(apt-get install pocl-opencl-icd, or a GPU's OpenCL driver)",
             e == CL_SUCCESS ? "none listed" : vo_cl_error_name(e, b, sizeof b));
    return;
  }
  for (cl_uint p = 0; p < np && vo_cl_count < VO_CL_MAX_DEVICES; p++) {
    cl_device_id ids[VO_CL_MAX_DEVICES];
    cl_uint nd = 0;
    if (vo_cl.GetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, VO_CL_MAX_DEVICES, ids, &nd) !=
        CL_SUCCESS)
      continue;
    for (cl_uint d = 0; d < nd && vo_cl_count < VO_CL_MAX_DEVICES; d++) {
      vo_cl_device *v = &vo_cl_list[vo_cl_count++];
      char exts[8192] = "";
      cl_device_fp_config fp = 0;
      v->platform = platforms[p];
      v->id = ids[d];
      vo_cl.GetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof v->platform_name,
                            v->platform_name, NULL);
      vo_cl.GetDeviceInfo(ids[d], CL_DEVICE_NAME, sizeof v->name, v->name, NULL);
      vo_cl.GetDeviceInfo(ids[d], CL_DEVICE_VERSION, sizeof v->version, v->version, NULL);
      vo_cl.GetDeviceInfo(ids[d], CL_DEVICE_OPENCL_C_VERSION, sizeof v->c_version, v->c_version,
                          NULL);
      vo_cl.GetDeviceInfo(ids[d], CL_DEVICE_EXTENSIONS, sizeof exts - 1, exts, NULL);
      vo_cl.GetDeviceInfo(ids[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof v->mem, &v->mem, NULL);
      vo_cl.GetDeviceInfo(ids[d], CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
      v->fp64 = vo_cl_has_ext(exts, "cl_khr_fp64") && !vo_cl_no_fp64;
      v->int64_atomics = vo_cl_has_ext(exts, "cl_khr_int64_base_atomics");
      v->fp16 = vo_cl_has_ext(exts, "cl_khr_fp16");
      v->div_sqrt_rounded = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    }
  }
  if (vo_cl_count == 0)
    snprintf(vo_cl_list_why, sizeof vo_cl_list_why, "no OpenCL device on %u platform%s", np,
             np == 1 ? "" : "s");
}

int vo_cl_devices(const char **why) {
  pthread_once(&vo_cl_list_once, vo_cl_list_devices);
  if (why) *why = vo_cl_list_why;
  return vo_cl_count;
}

const vo_cl_device *vo_cl_device_at(int index) {
  if (index < 0 || index >= vo_cl_devices(NULL)) return NULL;
  return &vo_cl_list[index];
}

const vo_cl_device *vo_cl_device_find(cl_device_id id) {
  for (int i = 0; i < vo_cl_devices(NULL); i++)
    if (vo_cl_list[i].id == id) return &vo_cl_list[i];
  return NULL;
}

/* Default queues, one per device in a context of its own, made at first use. */
static cl_command_queue vo_cl_default_queues[VO_CL_MAX_DEVICES];
static pthread_mutex_t vo_cl_queue_lock = PTHREAD_MUTEX_INITIALIZER;

cl_command_queue vo_cl_default_queue(int index, cl_int *err) {
  const vo_cl_device *d = vo_cl_device_at(index);
  *err = CL_SUCCESS;
  if (!d) {
    *err = CL_INVALID_DEVICE;
    return NULL;
  }
  pthread_mutex_lock(&vo_cl_queue_lock);
  cl_command_queue q = vo_cl_default_queues[index];
  if (!q) {
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform,
                                           0};
    cl_context ctx = vo_cl.CreateContext(props, 1, &d->id, NULL, NULL, err);
    /* The context lives as long as its queue, which lives for the process. */
    if (ctx) q = vo_cl.CreateCommandQueue(ctx, d->id, 0, err);
    vo_cl_default_queues[index] = q;
  }
  pthread_mutex_unlock(&vo_cl_queue_lock);
  return q;
}

cl_command_queue vo_cl_queue_for(int index, void *queue, cl_int *err) {
  *err = CL_SUCCESS;
  return queue ? (cl_command_queue)queue : vo_cl_default_queue(index, err);
}

/* ------------------------------------------------------------ probe */

static void vo_cl_append(char *detail, size_t n, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void vo_cl_append(char *detail, size_t n, size_t *used, const char *fmt, ...) {
  if (!detail || n == 0 || *used + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  const int w = vsnprintf(detail + *used, n - *used, fmt, ap);
  va_end(ap);
  if (w < 0) return;
  *used += (size_t)w;
  if (*used > n - 1) *used = n - 1;
}

static int vo_opencl_probe(char *detail, size_t n) {
  size_t used = 0;
  const char *why = NULL;
  if (detail && n) detail[0] = '\0';
  const int count = vo_cl_devices(&why);
  if (count == 0) {
    vo_cl_append(detail, n, &used, "%s", why);
    return 0;
  }
  vo_cl_append(detail, n, &used, "%d device%s: ", count, count == 1 ? "" : "s");
  for (int i = 0; i < count; i++) {
    const vo_cl_device *d = &vo_cl_list[i];
    vo_cl_append(detail, n, &used, "%s%s (%s, %s, %s; %s, %s, %s, %llu MiB)", i ? ", " : "",
                 d->name, d->platform_name, d->version, d->c_version,
                 d->fp64         ? "fp64"
                 : vo_cl_no_fp64 ? "no fp64 (VISIONOPS_OPENCL_NO_FP64=1)"
                                 : "no fp64",
                 d->int64_atomics ? "int64 atomics" : "no int64 atomics",
                 d->fp16 ? "fp16" : "no fp16", (unsigned long long)(d->mem >> 20));
  }
  if (detail && used + 3 < n) {
    memcpy(detail + used, "; ", 3);
    vo_clblast_describe(detail + used + 2, n - used - 2);
  }
  return 1;
}

/* ------------------------------------------------------------ memory */

/* The context of the queue a call on `device` with queue `queue` uses. */
static cl_context vo_cl_context_for(DLDevice device, void *queue, cl_int *err) {
  cl_command_queue q = vo_cl_queue_for(device.device_id, queue, err);
  cl_context ctx = NULL;
  if (q) *err = vo_cl.GetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(void *), &ctx, NULL);
  return *err == CL_SUCCESS ? ctx : NULL;
}

static void *vo_opencl_alloc(DLDevice device, size_t size, void *queue) {
  cl_int err;
  if (!vo_cl_devices(NULL)) return NULL;
  cl_context ctx = vo_cl_context_for(device, queue, &err);
  if (!ctx) return NULL;
  cl_mem m = vo_cl.CreateBuffer(ctx, CL_MEM_READ_WRITE, size ? size : 1, NULL, &err);
  return err == CL_SUCCESS ? (void *)m : NULL;
}

/* OpenCL keeps a released buffer until the commands queued on it are done. */
static void vo_opencl_free(DLDevice device, void *ptr, void *queue) {
  (void)device;
  (void)queue;
  if (ptr && vo_cl.ReleaseMemObject) vo_cl.ReleaseMemObject((cl_mem)ptr);
}

/* The backend's buffer_size hook: CL_MEM_SIZE, once the buffer is known to
 * belong to the context of the call's queue (a buffer of another context
 * is undefined behaviour in a kernel). */
static int vo_opencl_buffer_size(DLDevice device, void *handle, void *queue, uint64_t *size,
                                 char *why, size_t why_size) {
  char name[64];
  cl_int err;
  cl_context queue_ctx = vo_cl_context_for(device, queue, &err), mem_ctx = NULL;
  size_t bytes = 0;
  if (!queue_ctx) {
    snprintf(why, why_size, "the queue's context cannot be queried: %s",
             vo_cl_error_name(err, name, sizeof name));
    return 0;
  }
  err = vo_cl.GetMemObjectInfo((cl_mem)handle, CL_MEM_CONTEXT, sizeof mem_ctx, &mem_ctx, NULL);
  if (err == CL_SUCCESS)
    err = vo_cl.GetMemObjectInfo((cl_mem)handle, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
  if (err != CL_SUCCESS) {
    snprintf(why, why_size, "it is not an OpenCL buffer: %s",
             vo_cl_error_name(err, name, sizeof name));
    return 0;
  }
  if (mem_ctx != queue_ctx) {
    snprintf(why, why_size, "its buffer belongs to another OpenCL context than the queue's");
    return 0;
  }
  *size = bytes;
  return 1;
}

static vo_status vo_cl_copy_failed(const char *what, size_t size, cl_int err) {
  char b[64];
  return vo_fail(VO_ERROR_BACKEND_FAILURE, "opencl: %s of %zu bytes failed: %s", what, size,
                 vo_cl_error_name(err, b, sizeof b));
}

static vo_status vo_opencl_copy_to_device(DLDevice device, void *dst, uint64_t dst_offset,
                                          const void *src, size_t size, void *queue) {
  cl_int err;
  cl_command_queue q = vo_cl_queue_for(device.device_id, queue, &err);
  if (q && size)
    err = vo_cl.EnqueueWriteBuffer(q, (cl_mem)dst, CL_TRUE, (size_t)dst_offset, size, src, 0, NULL,
                                   NULL);
  return err == CL_SUCCESS ? VO_OK : vo_cl_copy_failed("copy to the device", size, err);
}

static vo_status vo_opencl_copy_to_host(DLDevice device, void *dst, const void *src,
                                        uint64_t src_offset, size_t size, void *queue) {
  cl_int err;
  cl_command_queue q = vo_cl_queue_for(device.device_id, queue, &err);
  if (q && size)
    err = vo_cl.EnqueueReadBuffer(q, (cl_mem)src, CL_TRUE, (size_t)src_offset, size, dst, 0, NULL,
                                  NULL);
  return err == CL_SUCCESS ? VO_OK : vo_cl_copy_failed("copy to the host", size, err);
}

/* ------------------------------------------------------------ data checks */

vo_status vo_cl_read_to_host(const vo_cl_call *c, const vo_view *t, void **copy_out,
                             const void **first) {
  const vo_exec *ex = c->ex;
  int64_t lo = 0, hi = 0; /* element offsets of the span */
  for (int d = 0; d < t->ndim; d++) {
    const int64_t reach = (t->shape[d] - 1) * t->stride[d];
    if (reach < 0)
      lo += reach;
    else
      hi += reach;
  }
  const size_t es = vo_dtype_size(t->dtype), bytes = (size_t)(hi - lo + 1) * es;
  unsigned char *copy = malloc(bytes);
  if (!copy)
    return vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: out of host memory for a copy of %zu bytes",
                   ex->op_name, bytes);
  const vo_status st =
      vo_cl_check(ex,
                  vo_cl.EnqueueReadBuffer(c->queue, (cl_mem)t->data, CL_TRUE,
                                          (size_t)((int64_t)t->byte_offset + lo * (int64_t)es),
                                          bytes, copy, 0, NULL, NULL),
                  "read of a tensor to the host");
  if (st != VO_OK) {
    free(copy);
    return st;
  }
  *copy_out = copy;
  *first = copy + (size_t)(-lo) * es;
  return VO_OK;
}

/* Without float64 on the device (the checks compute in double: their
 * decisions are the CPU's exactly), the host runs them: each checked
 * tensor's span of elements is read back and walked row by row. */
static vo_status vo_cl_check_on_host(const vo_cl_call *c, vo_k_check_found *found) {
  const vo_exec *ex = c->ex;
  for (int i = 0; i < ex->num_data_checks; i++) {
    const vo_k_check *k = &ex->data_checks[i].check;
    const vo_view *t = &ex->inputs[ex->data_checks[i].arg];
    const int arg2 = vo_data_check_second(&ex->data_checks[i]);
    const int64_t rows = vo_k_check_rows(k), len = vo_k_check_row_length(k);
    if (t->numel == 0 || rows == 0) continue;
    void *copy, *copy2 = NULL;
    const void *first, *first2;
    vo_status st = vo_cl_read_to_host(c, t, &copy, &first);
    if (st != VO_OK) return st;
    first2 = first;
    if (arg2 != ex->data_checks[i].arg &&
        (st = vo_cl_read_to_host(c, &ex->inputs[arg2], &copy2, &first2)) != VO_OK) {
      free(copy);
      return st;
    }
    for (int64_t r = 0; r < rows; r++) {
      const int64_t j = vo_k_check_bad_column(first, first2, k, r);
      if (j < 0) continue;
      found[i].first = (uint64_t)(r * len + j);
      vo_k_check_values(first, first2, k, r * len + j, found[i].value);
      break;
    }
    free(copy);
    free(copy2);
  }
  return VO_OK;
}

/* Queues the checks of a device with float64 into `results` (at byte
 * `offset`): per check, one pass over the rows finds the first bad item (an
 * atomic minimum of its key) and a one-item kernel records what the
 * message needs. */
static vo_status vo_cl_queue_checks(const vo_cl_call *c, cl_mem results, uint64_t offset) {
  const vo_exec *ex = c->ex;
  const int count = ex->num_data_checks;
  const unsigned char ones = 0xff;
  vo_status st = vo_cl_fill(c, results, offset, &ones, 1, sizeof(vo_k_check_found) * (size_t)count);
  for (int i = 0; i < count && st == VO_OK; i++) {
    const vo_k_check *k = &ex->data_checks[i].check;
    const vo_view *t = &ex->inputs[ex->data_checks[i].arg];
    const vo_view *t2 = &ex->inputs[vo_data_check_second(&ex->data_checks[i])];
    const int64_t rows = vo_k_check_rows(k);
    if (t->numel == 0 || rows == 0) continue;
    const uint64_t at = offset + (uint64_t)i * sizeof(vo_k_check_found);
    vo_cl_launch l;
    if ((st = vo_cl_launch_begin(&l, c, "data_checks", "vo_cl_check_find")) != VO_OK) break;
    vo_cl_arg_view(&l, t);
    vo_cl_arg_view(&l, t2);
    vo_cl_arg(&l, k, sizeof *k);
    vo_cl_arg_i64(&l, rows);
    vo_cl_arg_i64(&l, vo_k_check_row_length(k));
    vo_cl_arg_mem(&l, results, at);
    if ((st = vo_cl_launch_run(&l, rows)) != VO_OK) break;
    if ((st = vo_cl_launch_begin(&l, c, "data_checks", "vo_cl_check_record")) != VO_OK) break;
    vo_cl_arg_view(&l, t);
    vo_cl_arg_view(&l, t2);
    vo_cl_arg(&l, k, sizeof *k);
    vo_cl_arg_mem(&l, results, at);
    st = vo_cl_launch_run(&l, 1);
  }
  return st;
}

/* The results of all checks come back in one blocking read. */
vo_status vo_opencl_check_data(const vo_exec *ex, vo_k_check_found *found) {
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK) return st;
  if (!c.fp64) return vo_cl_check_on_host(&c, found);
  const size_t bytes = sizeof(vo_k_check_found) * (size_t)ex->num_data_checks;
  cl_mem dev = vo_cl_workspace(ex, bytes);
  if (!dev) return VO_ERROR_OUT_OF_MEMORY;
  st = vo_cl_queue_checks(&c, dev, 0);
  if (st == VO_OK)
    st = vo_cl_check(ex,
                     vo_cl.EnqueueReadBuffer(c.queue, dev, CL_TRUE, 0, bytes, found, 0, NULL, NULL),
                     "read of the check results");
  vo_workspace_free(ex->ctx, ex->device, dev);
  return st;
}

/* Deferred checks: queued as above; a device without float64 checks on
 * the host (it waits anyway to read the tensors) and writes the results. */
static vo_status vo_opencl_queue_data_checks(const vo_exec *ex, void *results, uint64_t offset) {
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK) return st;
  if (c.fp64) return vo_cl_queue_checks(&c, (cl_mem)results, offset);
  vo_k_check_found found[VO_MAX_DATA_CHECKS];
  for (int i = 0; i < ex->num_data_checks; i++) found[i].first = VO_K_CHECK_NONE;
  if ((st = vo_cl_check_on_host(&c, found)) != VO_OK) return st;
  return vo_cl_check(
      ex,
      vo_cl.EnqueueWriteBuffer(c.queue, (cl_mem)results, CL_TRUE, (size_t)offset,
                               sizeof found[0] * (size_t)ex->num_data_checks, found, 0, NULL, NULL),
      "write of the check results");
}

const vo_backend vo_opencl_backend = {
    .name = "opencl",
    .device_type = kDLOpenCL,
    .not_built_reason = NULL,
    .addressable = 0,
    .kernels = vo_opencl_kernels,
    .probe = vo_opencl_probe,
    .has_queues = 1,
    .alloc = vo_opencl_alloc,
    .free = vo_opencl_free,
    .copy_to_device = vo_opencl_copy_to_device,
    .copy_to_host = vo_opencl_copy_to_host,
    .check_data = vo_opencl_check_data,
    .queue_data_checks = vo_opencl_queue_data_checks,
    .synchronize = NULL, /* the default queue is the device's, for all threads */
    .buffer_size = vo_opencl_buffer_size,
};
