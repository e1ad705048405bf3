/* The demo's OpenCL memory: a context and queue on the OpenCL backend's
 * device 0, cl_mem buffers and blocking copies, through the ICD loader
 * loaded at run time (as the library loads it), so that the command runs
 * where no OpenCL is installed. */
#ifndef VISIONOPS_TOOLS_DEMO_OPENCL_H
#define VISIONOPS_TOOLS_DEMO_OPENCL_H

#include <stddef.h>

/* Opens the loader and makes the queue once: 0, or -1 with the reason in why. */
int demo_cl_open(char *why, size_t why_size);
/* The queue (a cl_command_queue) the demo's buffers and calls use. */
void *demo_cl_queue(void);
void *demo_cl_alloc(size_t bytes);
void demo_cl_free(void *buffer);
/* to_device: host `src` -> buffer `dst`; otherwise buffer `src` -> host `dst`. */
int demo_cl_copy(void *dst, const void *src, size_t bytes, int to_device);
/* Waits for the queue's work (a timing must include it). */
int demo_cl_finish(void);

#endif /* VISIONOPS_TOOLS_DEMO_OPENCL_H */
