/*
 * What an op's OpenCL glue (src/opencl/<op>.c) uses: the call's context,
 * device and queue, kernels of the programs compiled from the embedded
 * sources (src/opencl/<op>.cl with the portable headers), their arguments
 * and launch, buffer fills, and error reporting in the CPU's style. See
 * docs/ADDING_AN_OP.md ("The OpenCL glue").
 *
 * Tensors are cl_mem handles plus a byte offset (vo_backend.addressable = 0):
 * a kernel takes each tensor as two arguments, the buffer and its byte
 * offset (vo_cl_arg_view), and finds its first element with VO_CL_AT
 * (opencl/portable.clh). Workspaces come from vo_workspace_alloc(ex->ctx,
 * ex->device, bytes, ex->op_name) as cl_mem, in the call's context, and go
 * back with vo_workspace_free once the work using them is queued (OpenCL
 * keeps a released buffer alive until its enqueued commands are done).
 */
#ifndef VISIONOPS_OPENCL_COMMON_H
#define VISIONOPS_OPENCL_COMMON_H

#include "core/internal.h"
#include "opencl/loader.h"

/* The OpenCL objects one call runs with: the context's queue for the
 * backend (vo_context_set_queue(ctx, kDLOpenCL, queue)) or, when it set
 * none, the default queue of device ex->device.device_id; the context and
 * device are the queue's. */
typedef struct vo_cl_call {
  const vo_exec *ex;
  cl_command_queue queue;
  cl_context context;
  cl_device_id device;
  int fp64; /* the device has cl_khr_fp64 */
} vo_cl_call;

/* Fills c for ex. Fails (the error set) when there is no such device or the
 * queue cannot be queried; for float64 calls on devices without fp64. */
vo_status vo_cl_call_begin(const vo_exec *ex, vo_cl_call *c);

/* A blocking copy of the elements of t (its whole span, strides as they
 * are) to new host memory *copy (free() it); *first is t's first element
 * there. For work a device without fp64 cannot do exactly. */
vo_status vo_cl_read_to_host(const vo_cl_call *c, const vo_view *t, void **copy,
                             const void **first);

/* VO_OK for CL_SUCCESS, else VO_ERROR_BACKEND_FAILURE (VO_ERROR_OUT_OF_MEMORY
 * for the allocation errors) with "<op>: OpenCL <what> failed: <error>". */
vo_status vo_cl_check(const vo_exec *ex, cl_int err, const char *what);

/* One kernel launch being prepared: arguments are appended in order, the
 * first error is kept and reported by vo_cl_launch_run. */
typedef struct vo_cl_launch {
  const vo_cl_call *call;
  cl_kernel kernel;
  char name[64]; /* the kernel's, for errors (a copy: callers build names in locals) */
  cl_uint num_args;
  cl_int err;
} vo_cl_launch;

/* Kernel `kernel` of program `program` (src/opencl/<program>.cl, compiled at
 * first use for the call's context and device and cached). Fails with the
 * compiler's log when the program does not build. */
vo_status vo_cl_launch_begin(vo_cl_launch *l, const vo_cl_call *c, const char *program,
                             const char *kernel);
/* As vo_cl_launch_begin, for the ops whose entry points all take one
 * pointer-free args struct first (the kernels/<op>.h work items): kernel
 * `name`, suffixed "_<sfx>" when sfx is not NULL (the compute type's
 * entry point), with the `size` bytes at `args` as its first argument. */
vo_status vo_cl_launch_begin_with(vo_cl_launch *l, const vo_cl_call *c, const char *program,
                                  const char *name, const char *sfx, const void *args, size_t size);
/* The next argument: a value of `size` bytes (scalars, pointer-free structs
 * such as vo_k_box_area_args, passed by value). */
void vo_cl_arg(vo_cl_launch *l, const void *value, size_t size);
void vo_cl_arg_i64(vo_cl_launch *l, int64_t v);
void vo_cl_arg_f64(vo_cl_launch *l, double v); /* as a double: fp64 devices */
void vo_cl_arg_f32(vo_cl_launch *l, float v);
/* Two arguments: a buffer and the byte offset of the first element
 * (__global T *buf, ulong offset in the kernel). */
void vo_cl_arg_mem(vo_cl_launch *l, cl_mem mem, uint64_t byte_offset);
/* A view's buffer and byte offset; a NULL view passes a NULL buffer. */
void vo_cl_arg_view(vo_cl_launch *l, const vo_view *v);
/* Enqueues the kernel over enough work items for `items` (its VO_CL_FOR
 * loop strides over the rest; 1 for a single-item kernel) and releases it;
 * with items <= 0 it only releases it. */
vo_status vo_cl_launch_run(vo_cl_launch *l, int64_t items);
/* As vo_cl_launch_run for a work-group kernel: `groups` groups of `size`
 * work items (a power of two), or of fewer where the kernel allows fewer
 * (then more groups: the kernel strides over the groups it needs). */
vo_status vo_cl_launch_run_groups(vo_cl_launch *l, int64_t groups, size_t size);

/* Fills `bytes` bytes of mem from byte_offset with a pattern of 1, 2, 4, 8
 * .. 128 bytes (bytes a multiple of it), on the call's queue. */
vo_status vo_cl_fill(const vo_cl_call *c, cl_mem mem, uint64_t byte_offset, const void *pattern,
                     size_t pattern_size, size_t bytes);

/* Device memory of the call's context (a workspace, vo_workspace_alloc). */
static inline cl_mem vo_cl_workspace(const vo_exec *ex, size_t bytes) {
  return (cl_mem)vo_workspace_alloc(ex->ctx, ex->device, bytes, ex->op_name);
}

/* The kernel names' dtype suffix for storage dtype d: "f32", "f64", "f16",
 * "bf16" (NULL for others). */
const char *vo_cl_suffix(vo_dtype d);

/* The backend's check_data hook (backend.c). */
vo_status vo_opencl_check_data(const vo_exec *ex, vo_k_check_found *found);

/* The kernels of the table, vo_opencl_<kernel> for each kernel name of
 * src/ops/ops.def, each defined in src/opencl/<op>.c (until then a NULL
 * line in backend.c). */
#define VO_OP(name, kernel, schema, backward, shape_rule) \
  vo_status vo_opencl_##kernel(const vo_exec *ex);
#include "ops/ops.def"
#undef VO_OP

#endif /* VISIONOPS_OPENCL_COMMON_H */
