/*
 * The kernels' programs and their launch (opencl/common.h): each
 * src/opencl/<name>.cl is compiled at first use for a (context, device),
 * with the embedded portable headers handed to clCompileProgram as its
 * input headers (so #include works as in a file tree, nothing is read from
 * disk), linked, and cached for the process under a lock; the context is
 * retained so its handle cannot be reused by another while cached.
 *
 * PoCL (3.x, Debian 12's) keeps an on-disk kernel cache that is not safe
 * when several processes build the same program at once (pocl#1480: the
 * build fails, with an empty log). On PoCL, visionops's builds therefore
 * take an advisory lock (flock) on a file in PoCL's cache directory, which
 * serialises them across processes, and a failed build is tried once more
 * (a build by another program can still race with ours).
 */
#define _DEFAULT_SOURCE /* flock, O_CLOEXEC, mkdir */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opencl/common.h"
#include "opencl/device.h"
#include "opencl/sources.h"

vo_status vo_cl_check(const vo_exec *ex, cl_int err, const char *what) {
  if (err == CL_SUCCESS) return VO_OK;
  char b[64];
  const vo_status st = err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY
                           ? VO_ERROR_OUT_OF_MEMORY
                           : VO_ERROR_BACKEND_FAILURE;
  return vo_fail(st, "%s: OpenCL %s failed: %s", ex->op_name, what,
                 vo_cl_error_name(err, b, sizeof b));
}

/* OpenCL's handles (cl_context, cl_mem, ...) are pointers: queries and
 * arguments take sizeof(void *) for them. */
vo_status vo_cl_call_begin(const vo_exec *ex, vo_cl_call *c) {
  cl_int err;
  memset(c, 0, sizeof *c);
  c->ex = ex;
  if (!ex->queue && !vo_cl_device_at(ex->device.device_id))
    return vo_fail(VO_ERROR_BACKEND_UNAVAILABLE, "%s: there is no OpenCL device %d (%d found)",
                   ex->op_name, (int)ex->device.device_id, vo_cl_devices(NULL));
  c->queue = vo_cl_queue_for(ex->device.device_id, ex->queue, &err);
  if (!c->queue) return vo_cl_check(ex, err, "creation of the default queue");
  vo_status st = vo_cl_check(
      ex, vo_cl.GetCommandQueueInfo(c->queue, CL_QUEUE_CONTEXT, sizeof(void *), &c->context, NULL),
      "query of the queue's context");
  if (st == VO_OK)
    st = vo_cl_check(
        ex, vo_cl.GetCommandQueueInfo(c->queue, CL_QUEUE_DEVICE, sizeof(void *), &c->device, NULL),
        "query of the queue's device");
  if (st != VO_OK) return st;
  const vo_cl_device *d = vo_cl_device_find(c->device);
  char exts[8192] = "";
  if (d) {
    c->fp64 = d->fp64;
  } else if (vo_cl.GetDeviceInfo(c->device, CL_DEVICE_EXTENSIONS, sizeof exts - 1, exts, NULL) ==
             CL_SUCCESS) {
    c->fp64 = strstr(exts, "cl_khr_fp64") != NULL && !vo_cl_fp64_forced_off();
  }
  if (c->fp64) return VO_OK;
  /* Without fp64 the programs have no float64 entry points and no kernel
   * reads a float64 tensor (kernels/compat.h's VO_K_FP64): refused up front,
   * be it the compute dtype or any tensor's. */
  const char *device = d ? d->name : "the queue's device";
  const char *why = vo_cl_fp64_forced_off() ? " (as told by VISIONOPS_OPENCL_NO_FP64=1)" : "";
  if (ex->dtype == VO_F64)
    return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE,
                   "%s: float64 needs an OpenCL device with cl_khr_fp64, which %s lacks%s",
                   ex->op_name, device, why);
  for (int i = 0; i < ex->num_args; i++)
    if (ex->inputs[i].dtype == VO_F64)
      return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE,
                     "%s: %s is float64: that needs an OpenCL device with cl_khr_fp64, which %s "
                     "lacks%s",
                     ex->op_name, vo_arg_name(ex, i), device, why);
  for (int i = 0; i < ex->num_list_inputs; i++)
    if (ex->list_inputs[i].dtype == VO_F64)
      return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE,
                     "%s: tensor %d of the list is float64: that needs an OpenCL device with "
                     "cl_khr_fp64, which %s lacks%s",
                     ex->op_name, i, device, why);
  /* The outputs as the check described them: the value checks also begin
   * a call, before the dispatcher has made the outputs' views. */
  for (int i = 0; i < ex->num_outputs; i++)
    if (vo_dtype_from_dl(ex->out_desc[i].dtype) == VO_F64)
      return vo_fail(VO_ERROR_UNSUPPORTED_DTYPE,
                     "%s: output %d is float64: that needs an OpenCL device with cl_khr_fp64, "
                     "which %s lacks%s",
                     ex->op_name, i, device, why);
  return VO_OK;
}

const char *vo_cl_suffix(vo_dtype d) {
  switch (d) {
    case VO_F32: return "f32";
    case VO_F64: return "f64";
    case VO_F16: return "f16";
    case VO_BF16: return "bf16";
    default: return NULL;
  }
}

/* ------------------------------------------------------------ programs */

typedef struct vo_cl_program {
  struct vo_cl_program *next;
  cl_context context;
  cl_device_id device;
  char name[64];
  cl_program program; /* NULL when the build failed */
  char *error;        /* the failure's message (with the compiler's log) */
} vo_cl_program;

static vo_cl_program *vo_cl_programs;
static pthread_mutex_t vo_cl_program_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *vo_cl_source(const char *name) {
  for (int i = 0; i < vo_opencl_num_sources; i++)
    if (strcmp(vo_opencl_sources[i].name, name) == 0) return vo_opencl_sources[i].text;
  return NULL;
}

static int vo_cl_is_header(const char *name) {
  const size_t n = strlen(name);
  return n > 3 && strcmp(name + n - 3, ".cl") != 0;
}

/* "<what>: <error>" plus the build log, in a new string. */
static char *vo_cl_build_error(cl_program p, cl_device_id dev, const char *what, cl_int err) {
  char b[64];
  size_t log_size = 0;
  char *log = NULL;
  if (p &&
      vo_cl.GetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size) == CL_SUCCESS &&
      log_size > 1) {
    log = calloc(1, log_size + 1);
    if (log &&
        vo_cl.GetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, log_size, log, NULL) != CL_SUCCESS)
      log[0] = '\0';
  }
  const size_t size = strlen(what) + 128 + (log ? strlen(log) : 0);
  char *msg = malloc(size);
  if (msg)
    snprintf(msg, size, "%s failed: %s%s%s", what, vo_cl_error_name(err, b, sizeof b),
             log && *log ? "; build log:\n" : "", log ? log : "");
  free(log);
  return msg;
}

/* Compiles and links program `name` (src/opencl/<name>.cl) for the context
 * and device: its program, or NULL with the message in *error. */
static cl_program vo_cl_build(cl_context ctx, cl_device_id dev, const char *name, char **error) {
  char file[96];
  snprintf(file, sizeof file, "opencl/%s.cl", name);
  const char *text = vo_cl_source(file);
  cl_int err = CL_SUCCESS;
  if (!text) {
    *error = vo_cl_build_error(NULL, dev, "finding the program in the embedded kernel sources",
                               CL_INVALID_PROGRAM);
    return NULL;
  }
  cl_program headers[128];
  const char *header_names[128];
  cl_uint nh = 0;
  for (int i = 0; i < vo_opencl_num_sources && nh < 128 && err == CL_SUCCESS; i++) {
    if (!vo_cl_is_header(vo_opencl_sources[i].name)) continue;
    const char *header = vo_opencl_sources[i].text;
    headers[nh] = vo_cl.CreateProgramWithSource(ctx, 1, &header, NULL, &err);
    if (err == CL_SUCCESS) header_names[nh++] = vo_opencl_sources[i].name;
  }
  cl_program src = NULL, linked = NULL;
  if (err == CL_SUCCESS) src = vo_cl.CreateProgramWithSource(ctx, 1, &text, NULL, &err);
  if (err != CL_SUCCESS) {
    *error = vo_cl_build_error(NULL, dev, "clCreateProgramWithSource", err);
  } else {
    const vo_cl_device *d = vo_cl_device_find(dev);
    /* Correctly rounded float32 division and sqrt where the device offers
     * them: the CPU's results (OpenCL allows 2.5 / 3 ulp by default); the
     * testing aid's macro (device.h). */
    char options[128];
    snprintf(options, sizeof options, "-cl-std=CL1.2%s%s",
             d && d->div_sqrt_rounded ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
             vo_cl_fp64_forced_off() ? " -D VO_CL_NO_FP64" : "");
    err = vo_cl.CompileProgram(src, 1, &dev, options, nh, headers, header_names, NULL, NULL);
    if (err != CL_SUCCESS) {
      *error = vo_cl_build_error(src, dev, "compiling the OpenCL program", err);
    } else {
      linked = vo_cl.LinkProgram(ctx, 1, &dev, "", 1, &src, NULL, NULL, &err);
      if (err != CL_SUCCESS) {
        *error = vo_cl_build_error(linked, dev, "linking the OpenCL program", err);
        if (linked) vo_cl.ReleaseProgram(linked);
        linked = NULL;
      }
    }
  }
  if (src) vo_cl.ReleaseProgram(src);
  for (cl_uint i = 0; i < nh; i++) vo_cl.ReleaseProgram(headers[i]);
  return linked;
}

int vo_cl_pocl_lock_file(void) {
  const char *dir = getenv("POCL_CACHE_DIR"), *tail = "";
  if (!dir || !*dir) {
    dir = getenv("XDG_CACHE_HOME");
    tail = "/pocl";
    if (!dir || !*dir) {
      dir = getenv("HOME");
      tail = "/.cache/pocl";
    }
    if (!dir || !*dir) return -1;
  }
  char path[4096];
  const int n = snprintf(path, sizeof path, "%s%s/visionops-build.lock", dir, tail);
  if (n < 0 || (size_t)n >= sizeof path) return -1;
  for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
    *slash = '\0';
    (void)mkdir(path, 0700); /* an existing one stays as it is */
    *slash = '/';
  }
  return open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
}

int vo_cl_is_pocl(const vo_cl_device *d) {
  return d && strstr(d->platform_name, "Portable Computing Language") != NULL;
}

/* PoCL's lock file, locked; -1 when it cannot be (the build goes on
 * unlocked). */
static int vo_cl_pocl_lock(void) {
  const int fd = vo_cl_pocl_lock_file();
  if (fd < 0) return -1;
  while (flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

static void vo_cl_pocl_unlock(int fd) {
  if (fd < 0) return;
  flock(fd, LOCK_UN);
  close(fd);
}

/* vo_cl_build, serialised across processes and tried twice on PoCL. */
static cl_program vo_cl_build_guarded(cl_context ctx, cl_device_id dev, const char *name,
                                      char **error) {
  const int pocl = vo_cl_is_pocl(vo_cl_device_find(dev));
  const int fd = pocl ? vo_cl_pocl_lock() : -1;
  cl_program p = vo_cl_build(ctx, dev, name, error);
  if (!p && pocl) {
    free(*error);
    *error = NULL;
    p = vo_cl_build(ctx, dev, name, error);
  }
  vo_cl_pocl_unlock(fd);
  return p;
}

/* The cached program, built on first use; NULL with the error set. */
static cl_program vo_cl_program_get(const vo_cl_call *c, const char *name) {
  pthread_mutex_lock(&vo_cl_program_lock);
  vo_cl_program *p = vo_cl_programs;
  while (p && !(p->context == c->context && p->device == c->device && strcmp(p->name, name) == 0))
    p = p->next;
  if (!p && (p = calloc(1, sizeof *p)) != NULL) {
    p->context = c->context;
    p->device = c->device;
    snprintf(p->name, sizeof p->name, "%s", name);
    p->program = vo_cl_build_guarded(c->context, c->device, name, &p->error);
    vo_cl.RetainContext(c->context);
    p->next = vo_cl_programs;
    vo_cl_programs = p;
  }
  cl_program prog = p ? p->program : NULL;
  if (!p)
    vo_fail(VO_ERROR_OUT_OF_MEMORY, "%s: out of host memory for the OpenCL program cache",
            c->ex->op_name);
  else if (!prog)
    vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: the OpenCL program '%s' does not build: %s",
            c->ex->op_name, name, p->error ? p->error : "(no message)");
  pthread_mutex_unlock(&vo_cl_program_lock);
  return prog;
}

/* ------------------------------------------------------------ launches */

vo_status vo_cl_launch_begin(vo_cl_launch *l, const vo_cl_call *c, const char *program,
                             const char *kernel) {
  memset(l, 0, sizeof *l);
  l->call = c;
  snprintf(l->name, sizeof l->name, "%s", kernel);
  cl_program p = vo_cl_program_get(c, program);
  if (!p) return VO_ERROR_BACKEND_FAILURE;
  cl_int err;
  /* A kernel object per launch: clSetKernelArg is not thread-safe on a
   * shared one. */
  l->kernel = vo_cl.CreateKernel(p, kernel, &err);
  if (err != CL_SUCCESS) {
    char b[64];
    return vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: OpenCL program '%s' has no kernel %s: %s",
                   c->ex->op_name, program, kernel, vo_cl_error_name(err, b, sizeof b));
  }
  return VO_OK;
}

vo_status vo_cl_launch_begin_with(vo_cl_launch *l, const vo_cl_call *c, const char *program,
                                  const char *name, const char *sfx, const void *args,
                                  size_t size) {
  char full[64];
  snprintf(full, sizeof full, "%s%s%s", name, sfx ? "_" : "", sfx ? sfx : "");
  vo_status st = vo_cl_launch_begin(l, c, program, full);
  if (st == VO_OK) vo_cl_arg(l, args, size);
  return st;
}

void vo_cl_arg(vo_cl_launch *l, const void *value, size_t size) {
  const cl_int err = vo_cl.SetKernelArg(l->kernel, l->num_args++, size, value);
  if (l->err == CL_SUCCESS) l->err = err;
}

void vo_cl_arg_i64(vo_cl_launch *l, int64_t v) {
  const cl_long x = v;
  vo_cl_arg(l, &x, sizeof x);
}

void vo_cl_arg_f64(vo_cl_launch *l, double v) { vo_cl_arg(l, &v, sizeof v); }

void vo_cl_arg_f32(vo_cl_launch *l, float v) { vo_cl_arg(l, &v, sizeof v); }

void vo_cl_arg_mem(vo_cl_launch *l, cl_mem mem, uint64_t byte_offset) {
  const cl_ulong off = byte_offset;
  vo_cl_arg(l, &mem, sizeof(void *)); /* OpenCL handles are pointers */
  vo_cl_arg(l, &off, sizeof off);
}

void vo_cl_arg_view(vo_cl_launch *l, const vo_view *v) {
  vo_cl_arg_mem(l, v ? (cl_mem)v->data : NULL, v ? v->byte_offset : 0);
}

/* The launch over `items` work items in groups of at most `local_max`. */
static vo_status vo_cl_launch_enqueue(vo_cl_launch *l, int64_t items, size_t local_max) {
  const vo_exec *ex = l->call->ex;
  vo_status st = VO_OK;
  if (l->err != CL_SUCCESS) {
    char b[64];
    st = vo_fail(VO_ERROR_BACKEND_FAILURE, "%s: OpenCL argument %u of kernel %s: %s", ex->op_name,
                 l->num_args, l->name, vo_cl_error_name(l->err, b, sizeof b));
  } else if (items > 0) {
    size_t local = 1;
    if (items > 1) {
      size_t max = 0;
      vo_cl.GetKernelWorkGroupInfo(l->kernel, l->call->device, CL_KERNEL_WORK_GROUP_SIZE,
                                   sizeof max, &max, NULL);
      local = local_max < vo_cl_max_group() ? local_max : vo_cl_max_group();
      while (local > 1 && local > max) local /= 2;
    }
    /* Enough groups to cover the items, at most 65536: VO_CL_FOR strides
     * over the rest in 64-bit indices. */
    int64_t groups = (items + (int64_t)local - 1) / (int64_t)local;
    if (groups > 65536) groups = 65536;
    const size_t global = (size_t)groups * local;
    st = vo_cl_check(ex,
                     vo_cl.EnqueueNDRangeKernel(l->call->queue, l->kernel, 1, NULL, &global, &local,
                                                0, NULL, NULL),
                     l->name);
  }
  vo_cl.ReleaseKernel(l->kernel);
  l->kernel = NULL;
  return st;
}

vo_status vo_cl_launch_run(vo_cl_launch *l, int64_t items) {
  return vo_cl_launch_enqueue(l, items, 256);
}

vo_status vo_cl_launch_run_groups(vo_cl_launch *l, int64_t groups, size_t size) {
  return vo_cl_launch_enqueue(l, groups * (int64_t)size, size);
}

vo_status vo_cl_fill(const vo_cl_call *c, cl_mem mem, uint64_t byte_offset, const void *pattern,
                     size_t pattern_size, size_t bytes) {
  if (bytes == 0) return VO_OK;
  return vo_cl_check(c->ex,
                     vo_cl.EnqueueFillBuffer(c->queue, mem, pattern, pattern_size,
                                             (size_t)byte_offset, bytes, 0, NULL, NULL),
                     "buffer fill");
}
