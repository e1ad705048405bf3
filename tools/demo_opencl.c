/* The demo's OpenCL memory (demo_opencl.h): the few entry points it needs,
 * looked up in libOpenCL.so.1 at run time; the context and queue are on the
 * first device of the first platform that has one, the OpenCL backend's
 * device 0 (it numbers every device of every platform in the loader's
 * order). */
#include "demo_opencl.h"

#include <CL/cl.h>
#include <dlfcn.h>
#include <stdio.h>

static struct {
  cl_int(CL_API_CALL *GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
  cl_int(CL_API_CALL *GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *,
                                    cl_uint *);
  cl_context(CL_API_CALL *CreateContext)(
      const cl_context_properties *, cl_uint, const cl_device_id *,
      void(CL_CALLBACK *)(const char *, const void *, size_t, void *), void *, cl_int *);
  cl_command_queue(CL_API_CALL *CreateCommandQueue)(cl_context, cl_device_id,
                                                    cl_command_queue_properties, cl_int *);
  cl_mem(CL_API_CALL *CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
  cl_int(CL_API_CALL *ReleaseMemObject)(cl_mem);
  cl_int(CL_API_CALL *EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *,
                                         cl_uint, const cl_event *, cl_event *);
  cl_int(CL_API_CALL *EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t,
                                          const void *, cl_uint, const cl_event *, cl_event *);
  cl_int(CL_API_CALL *Finish)(cl_command_queue);
} cl;

static cl_context context;
static cl_command_queue queue;

static int report(const char *what, cl_int err) {
  if (err == CL_SUCCESS) return 0;
  fprintf(stderr, "visionops demo: OpenCL %s failed: error %d\n", what, (int)err);
  return -1;
}

/* dlsym's object pointer as a function pointer (POSIX guarantees this works). */
static int lookup(void *lib, const char *name, void *slot, size_t size) {
  void *f = dlsym(lib, name);
  if (!f || size != sizeof f) return -1;
  *(void **)slot = f;
  return 0;
}

int demo_cl_open(char *why, size_t why_size) {
  if (queue) return 0;
  void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(why, why_size, "no OpenCL ICD loader (libOpenCL.so.1)");
    return -1;
  }
#define LOOKUP(name)                                                     \
  if (lookup(lib, "cl" #name, (void *)&cl.name, sizeof cl.name) != 0) {  \
    snprintf(why, why_size, "the OpenCL ICD loader has no cl%s", #name); \
    return -1;                                                           \
  }
  LOOKUP(GetPlatformIDs)
  LOOKUP(GetDeviceIDs)
  LOOKUP(CreateContext)
  LOOKUP(CreateCommandQueue)
  LOOKUP(CreateBuffer)
  LOOKUP(ReleaseMemObject)
  LOOKUP(EnqueueReadBuffer)
  LOOKUP(EnqueueWriteBuffer)
  LOOKUP(Finish)
#undef LOOKUP
  cl_platform_id platforms[8];
  cl_uint np = 0;
  if (cl.GetPlatformIDs(8, platforms, &np) != CL_SUCCESS) np = 0;
  for (cl_uint p = 0; p < np; p++) {
    cl_device_id device;
    cl_uint nd = 0;
    if (cl.GetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 1, &device, &nd) != CL_SUCCESS || !nd)
      continue;
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platforms[p],
                                           0};
    cl_int err;
    context = cl.CreateContext(props, 1, &device, NULL, NULL, &err);
    if (context) queue = cl.CreateCommandQueue(context, device, 0, &err);
    if (!queue) {
      snprintf(why, why_size, "creating an OpenCL context and queue failed: error %d", (int)err);
      return -1;
    }
    return 0;
  }
  snprintf(why, why_size, "no OpenCL device");
  return -1;
}

void *demo_cl_queue(void) { return queue; }

void *demo_cl_alloc(size_t bytes) {
  cl_int err;
  cl_mem m = cl.CreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
  return report("clCreateBuffer", err) ? NULL : (void *)m;
}

void demo_cl_free(void *buffer) {
  if (buffer) cl.ReleaseMemObject((cl_mem)buffer);
}

int demo_cl_copy(void *dst, const void *src, size_t bytes, int to_device) {
  if (to_device)
    return report("clEnqueueWriteBuffer",
                  cl.EnqueueWriteBuffer(queue, (cl_mem)dst, CL_TRUE, 0, bytes, src, 0, NULL, NULL));
  return report("clEnqueueReadBuffer", cl.EnqueueReadBuffer(queue, (cl_mem)(void *)src, CL_TRUE, 0,
                                                            bytes, dst, 0, NULL, NULL));
}

int demo_cl_finish(void) { return report("clFinish", cl.Finish(queue)); }
