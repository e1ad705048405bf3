/*
 * Host glue shared by the OpenCL RoI ops (roi_align.c, roi_pool.c,
 * multi_scale_roi_align.c, roi_align_rotated.c): zeroing an output,
 * optional workspaces (within the context's limit; the caller falls back to
 * a path without them), the half-type accumulator's rounding, whether a
 * dtype's atomics exist on the device, small read-only argument buffers,
 * and the launches of the roi_align-family programs (opencl/roi_align.c).
 */
#ifndef VISIONOPS_OPENCL_ROI_COMMON_H
#define VISIONOPS_OPENCL_ROI_COMMON_H

#include "opencl/common.h"

/* Zeroes view v (numel elements of its dtype) on the call's queue. */
vo_status vo_cl_roi_zero(const vo_cl_call *c, const vo_view *v);

/* A workspace of `bytes` when that fits the context's workspace limit and
 * can be allocated, else NULL with no error left set. */
cl_mem vo_cl_roi_try_workspace(const vo_exec *ex, uint64_t bytes);

/* Rounds n float32 values of acc (from byte acc_off) into out, a float16 or
 * bfloat16 view, with program `program`'s vo_cl_roi_convert_<suffix>. */
vo_status vo_cl_roi_convert(const vo_cl_call *c, const char *program, cl_mem acc, uint64_t acc_off,
                            const vo_view *out);

/* A view of channels [c0, c0 + cc) of v, whose dimension 1 is channels
 * (grad, argmax [K,C,PH,PW]): same handle and strides, later first element. */
vo_view vo_cl_roi_channels(const vo_view *v, int64_t c0, int64_t cc);

/* Spreads the grad of channels [c0, c0 + cc) into acc: output l's zeroed
 * contiguous float32 [N,cc,H,W] at byte acc_off[l] (the ops' scatter over
 * those channels). */
typedef vo_status (*vo_cl_roi_scatter_fn)(const vo_cl_call *c, const void *user, int64_t c0,
                                          int64_t cc, cl_mem acc, const uint64_t *acc_off);
/* The half-type fast backward into outs ([N,C,H_l,W_l] float16 /
 * bfloat16, num_outs of them: multi_scale_roi_align's levels, else one):
 * atomics into float32 accumulators in one workspace, rounded once into the
 * outputs, over as many channels at a time as fit the workspace limit (all
 * of them, usually), a multiple of `granule` (the ps ops' bins per output
 * channel; 1), so every grad element is spread once whatever the limit.
 * *done = 0 (and nothing written) when not even one granule's accumulator
 * fits: the caller then gathers. */
vo_status vo_cl_roi_half_scatter(const vo_cl_call *c, const char *program, const vo_view *outs,
                                 int num_outs, int64_t granule, vo_cl_roi_scatter_fn scatter,
                                 const void *user, int *done);

/* 1 when the fast (atomic) backward can run in dtype d's compute type on
 * the call's device: float64 atomics need cl_khr_int64_base_atomics. */
int vo_cl_roi_atomics(const vo_cl_call *c, vo_dtype d);

/* *out = a read-only buffer holding a copy of `size` bytes at host, in the
 * call's context, for arguments too large to pass by value (a kernel's
 * arguments may total only 1 KiB, CL_DEVICE_MAX_PARAMETER_SIZE's minimum).
 * Release it with vo_cl.ReleaseMemObject once queued. */
vo_status vo_cl_roi_constants(const vo_cl_call *c, const void *host, size_t size, cl_mem *out);

/* A roi_align-family program (roi_align.cl, roi_align_rotated.cl) whose
 * kernels vo_cl_<program>{,_scatter,_box,_gather}_<suffix> take roi_align.cl's
 * argument lists after their argument struct `args` (by value) and a
 * vo_cl_roi_convert_<suffix>; p: the call's roi_align parameters. */
typedef struct vo_cl_ra_kernels {
  const char *program;
  const void *args;
  size_t args_size;
  const vo_roi_align_params *p;
} vo_cl_ra_kernels;
/* The forward over every output element, and the backward (atomic, or
 * the deterministic gather), as opencl/roi_align.c runs roi_align. */
vo_status vo_cl_ra_forward(const vo_exec *ex, const vo_cl_ra_kernels *k);
vo_status vo_cl_ra_backward(const vo_exec *ex, const vo_cl_ra_kernels *k);

#endif /* VISIONOPS_OPENCL_ROI_COMMON_H */
