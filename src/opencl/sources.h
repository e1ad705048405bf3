/*
 * The kernel sources embedded in the library at build time
 * (src/opencl/embed_sources.cmake): the portable headers of src/kernels/
 * and the OpenCL C files of src/opencl/, by their path under src/.
 */
#ifndef VISIONOPS_OPENCL_SOURCES_H
#define VISIONOPS_OPENCL_SOURCES_H

typedef struct vo_opencl_source {
  const char *name; /* "kernels/box_area.h", "opencl/box_area.cl" */
  const char *text;
} vo_opencl_source;

extern const vo_opencl_source vo_opencl_sources[];
extern const int vo_opencl_num_sources;

#endif /* VISIONOPS_OPENCL_SOURCES_H */
