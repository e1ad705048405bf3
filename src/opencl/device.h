/*
 * The OpenCL devices visionops numbers (DLDevice.device_id: every device of
 * every platform, in the loader's order) and their default queues; shared
 * by the backend's vtable (backend.c) and the program cache (program.c).
 */
#ifndef VISIONOPS_OPENCL_DEVICE_H
#define VISIONOPS_OPENCL_DEVICE_H

#include <stddef.h>

#include "opencl/loader.h"

#define VO_CL_MAX_DEVICES 16

typedef struct vo_cl_device {
  cl_platform_id platform;
  cl_device_id id;
  char name[128], platform_name[128], version[64], c_version[64];
  int fp64, int64_atomics, fp16, div_sqrt_rounded;
  cl_ulong mem;
} vo_cl_device;

/* A testing aid: with VISIONOPS_OPENCL_NO_FP64=1 in the environment when
 * the devices are enumerated, every device is treated as lacking
 * cl_khr_fp64 (its fp64 is 0, float64 calls are refused, programs build
 * with -D VO_CL_NO_FP64, which kernels/compat_opencl.h turns into the
 * extension's absence), so that a device with fp64 such as PoCL runs the
 * backend as one without. Whether it is on (after vo_cl_devices). */
int vo_cl_fp64_forced_off(void);

/* The testing aid VISIONOPS_OPENCL_MAX_GROUP=N (1 to 256, read with the
 * devices) caps the work-group size of every launch at N, so that a device
 * allowing large groups such as PoCL runs the work-group kernels as a
 * small device would (threads fewer than a tile's candidates, groups
 * striding). The cap, 256 without it (after vo_cl_devices). */
size_t vo_cl_max_group(void);

/* Whether device d (NULL: not one of the list) is PoCL's. */
int vo_cl_is_pocl(const vo_cl_device *d);
/* The lock file in PoCL's kernel cache directory that serialises
 * visionops's program builds across processes (program.c), found as PoCL
 * finds its cache (POCL_CACHE_DIR, else $XDG_CACHE_HOME/pocl, else
 * $HOME/.cache/pocl) and made with its directories when missing (the
 * first builds are the ones that race): opened read-write, not locked; -1
 * when it cannot be. */
int vo_cl_pocl_lock_file(void);

/* Enumerates the devices once (thread-safe): their count, 0 with the reason
 * in *why (no loader, no platform, no device). */
int vo_cl_devices(const char **why);
/* Device `index` of that list (NULL when out of range). */
const vo_cl_device *vo_cl_device_at(int index);
/* The list entry of device id (NULL when it is not one of them, e.g. a
 * sub-device of a caller's context). */
const vo_cl_device *vo_cl_device_find(cl_device_id id);
/* The default queue of device `index`, made once (its own context), or NULL
 * with *err set. */
cl_command_queue vo_cl_default_queue(int index, cl_int *err);
/* The queue a call on device `index` with context queue `queue` runs on:
 * `queue` itself, or the default one. */
cl_command_queue vo_cl_queue_for(int index, void *queue, cl_int *err);

#endif /* VISIONOPS_OPENCL_DEVICE_H */
