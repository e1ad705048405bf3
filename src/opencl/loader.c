/*
 * The OpenCL ICD loader through dlopen (opencl/loader.h): looked up once, on
 * the backend's probe, and every entry point found by name.
 */
#include "opencl/loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

vo_cl_api vo_cl;

static pthread_once_t vo_cl_once = PTHREAD_ONCE_INIT;
static int vo_cl_ok;
static char vo_cl_why[512];

static void vo_cl_load_once(void) {
  static const char *const names[] = {"libOpenCL.so.1", "libOpenCL.so"};
  void *lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) {
    lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib && i == 0) {
      const char *e = dlerror();
      snprintf(vo_cl_why, sizeof vo_cl_why,
               "no OpenCL ICD loader: %s (apt-get install ocl-icd-libopencl1)", e ? e : names[0]);
    }
  }
  if (!lib) return;
    /* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
#define VO_CL_LOOKUP(ret, name, params)                                                    \
  *(void **)(&vo_cl.name) = dlsym(lib, "cl" #name);                                        \
  if (!vo_cl.name) {                                                                       \
    snprintf(vo_cl_why, sizeof vo_cl_why,                                                  \
             "the OpenCL ICD loader has no cl" #name " (an OpenCL 1.2 loader is needed)"); \
    return;                                                                                \
  }
  VO_CL_FUNCTIONS(VO_CL_LOOKUP)
#undef VO_CL_LOOKUP
  vo_cl_ok = 1;
}

int vo_cl_load(const char **why) {
  pthread_once(&vo_cl_once, vo_cl_load_once);
  if (why) *why = vo_cl_ok ? "" : vo_cl_why;
  return vo_cl_ok;
}

const char *vo_cl_error_name(cl_int err, char *buf, size_t size) {
  const char *name = NULL;
  switch (err) {
#define VO_CL_ERR(e) \
  case e: name = #e; break;
    VO_CL_ERR(CL_DEVICE_NOT_FOUND)
    VO_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
    VO_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
    VO_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    VO_CL_ERR(CL_OUT_OF_RESOURCES)
    VO_CL_ERR(CL_OUT_OF_HOST_MEMORY)
    VO_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
    VO_CL_ERR(CL_COMPILE_PROGRAM_FAILURE)
    VO_CL_ERR(CL_LINK_PROGRAM_FAILURE)
    VO_CL_ERR(CL_INVALID_VALUE)
    VO_CL_ERR(CL_INVALID_DEVICE)
    VO_CL_ERR(CL_INVALID_CONTEXT)
    VO_CL_ERR(CL_INVALID_COMMAND_QUEUE)
    VO_CL_ERR(CL_INVALID_MEM_OBJECT)
    VO_CL_ERR(CL_INVALID_PROGRAM)
    VO_CL_ERR(CL_INVALID_KERNEL_NAME)
    VO_CL_ERR(CL_INVALID_KERNEL)
    VO_CL_ERR(CL_INVALID_ARG_INDEX)
    VO_CL_ERR(CL_INVALID_ARG_VALUE)
    VO_CL_ERR(CL_INVALID_ARG_SIZE)
    VO_CL_ERR(CL_INVALID_KERNEL_ARGS)
    VO_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
    VO_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
    VO_CL_ERR(CL_INVALID_BUFFER_SIZE)
    VO_CL_ERR(CL_INVALID_OPERATION)
    VO_CL_ERR(CL_INVALID_BUILD_OPTIONS)
    VO_CL_ERR(CL_INVALID_COMPILER_OPTIONS)
    VO_CL_ERR(CL_INVALID_LINKER_OPTIONS)
    VO_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
#undef VO_CL_ERR
    case -1001: name = "CL_PLATFORM_NOT_FOUND_KHR"; break; /* cl_khr_icd: no platform */
    default: break;
  }
  if (name)
    snprintf(buf, size, "%s (%d)", name, (int)err);
  else
    snprintf(buf, size, "OpenCL error %d", (int)err);
  return buf;
}
