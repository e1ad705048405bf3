/*
 * The OpenCL API through the ICD loader, loaded at run time (dlopen of
 * libOpenCL.so.1, then libOpenCL.so): libvisionops loads on machines
 * without OpenCL and the backend reports why it is unavailable. The entry
 * points the backend uses are the members of `vo_cl`, named as the API's
 * functions without the "cl" prefix (vo_cl.CreateBuffer(...)); an op that
 * needs another adds its line to VO_CL_FUNCTIONS.
 */
#ifndef VISIONOPS_OPENCL_LOADER_H
#define VISIONOPS_OPENCL_LOADER_H

#include <CL/cl.h>

/* X(return type, name without "cl", parameter list) for each entry point. */
#define VO_CL_FUNCTIONS(X)                                                                       \
  X(cl_int, GetPlatformIDs, (cl_uint, cl_platform_id *, cl_uint *))                              \
  X(cl_int, GetPlatformInfo, (cl_platform_id, cl_platform_info, size_t, void *, size_t *))       \
  X(cl_int, GetDeviceIDs, (cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *))  \
  X(cl_int, GetDeviceInfo, (cl_device_id, cl_device_info, size_t, void *, size_t *))             \
  X(cl_context, CreateContext,                                                                   \
    (const cl_context_properties *, cl_uint, const cl_device_id *,                               \
     void(CL_CALLBACK *)(const char *, const void *, size_t, void *), void *, cl_int *))         \
  X(cl_int, RetainContext, (cl_context))                                                         \
  X(cl_int, ReleaseContext, (cl_context))                                                        \
  X(cl_command_queue, CreateCommandQueue,                                                        \
    (cl_context, cl_device_id, cl_command_queue_properties, cl_int *))                           \
  X(cl_int, ReleaseCommandQueue, (cl_command_queue))                                             \
  X(cl_int, GetCommandQueueInfo,                                                                 \
    (cl_command_queue, cl_command_queue_info, size_t, void *, size_t *))                         \
  X(cl_mem, CreateBuffer, (cl_context, cl_mem_flags, size_t, void *, cl_int *))                  \
  X(cl_int, ReleaseMemObject, (cl_mem))                                                          \
  X(cl_int, GetMemObjectInfo, (cl_mem, cl_mem_info, size_t, void *, size_t *))                   \
  X(cl_int, EnqueueReadBuffer,                                                                   \
    (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint, const cl_event *,       \
     cl_event *))                                                                                \
  X(cl_int, EnqueueWriteBuffer,                                                                  \
    (cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, cl_uint, const cl_event *, \
     cl_event *))                                                                                \
  X(cl_int, EnqueueFillBuffer,                                                                   \
    (cl_command_queue, cl_mem, const void *, size_t, size_t, size_t, cl_uint, const cl_event *,  \
     cl_event *))                                                                                \
  X(cl_program, CreateProgramWithSource,                                                         \
    (cl_context, cl_uint, const char **, const size_t *, cl_int *))                              \
  X(cl_int, CompileProgram,                                                                      \
    (cl_program, cl_uint, const cl_device_id *, const char *, cl_uint, const cl_program *,       \
     const char **, void(CL_CALLBACK *)(cl_program, void *), void *))                            \
  X(cl_program, LinkProgram,                                                                     \
    (cl_context, cl_uint, const cl_device_id *, const char *, cl_uint, const cl_program *,       \
     void(CL_CALLBACK *)(cl_program, void *), void *, cl_int *))                                 \
  X(cl_int, GetProgramBuildInfo,                                                                 \
    (cl_program, cl_device_id, cl_program_build_info, size_t, void *, size_t *))                 \
  X(cl_int, ReleaseProgram, (cl_program))                                                        \
  X(cl_kernel, CreateKernel, (cl_program, const char *, cl_int *))                               \
  X(cl_int, SetKernelArg, (cl_kernel, cl_uint, size_t, const void *))                            \
  X(cl_int, GetKernelWorkGroupInfo,                                                              \
    (cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t, void *, size_t *))              \
  X(cl_int, ReleaseKernel, (cl_kernel))                                                          \
  X(cl_int, EnqueueNDRangeKernel,                                                                \
    (cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *,       \
     cl_uint, const cl_event *, cl_event *))

typedef struct vo_cl_api {
#define VO_CL_MEMBER(ret, name, params) ret(CL_API_CALL *name) params;
  VO_CL_FUNCTIONS(VO_CL_MEMBER)
#undef VO_CL_MEMBER
} vo_cl_api;

/* The entry points; valid once vo_cl_load() has returned 1. */
extern vo_cl_api vo_cl;

/* Loads the ICD loader once (thread-safe): 1 when every entry point was
 * found, else 0 with the reason in *why. */
int vo_cl_load(const char **why);

/* "CL_OUT_OF_RESOURCES (-5)" for an error code. */
const char *vo_cl_error_name(cl_int err, char *buf, size_t size);

#endif /* VISIONOPS_OPENCL_LOADER_H */
