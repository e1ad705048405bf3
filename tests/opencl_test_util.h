/* Device copies for the OpenCL tests that reach the backend directly
 * (test_opencl_roi, test_opencl_deform_attn: STATIC builds): host tensors
 * copied to the device, freed together, and read back. */
#ifndef VISIONOPS_TEST_OPENCL_TEST_UTIL_H
#define VISIONOPS_TEST_OPENCL_TEST_UTIL_H

#include "core/internal.h"
#include "test_util.h"

/* Uses backend `be` on device `dev` from now on; `program` names the test
 * in fatal messages. */
void vt_cl_use(const vo_backend *be, DLDevice dev, const char *program);
/* Exits with the library's last error: a test's set-up failed. */
void vt_cl_die(const char *what);
/* A device copy of h (same layout), a tensor on the device; freed by
 * vt_cl_free_all. */
DLTensor vt_cl_on_device(const vt_tensor *h);
void vt_cl_free_all(void);
/* Device tensor d (made by vt_cl_on_device from h's layout) back into h. */
void vt_cl_read_back(const DLTensor *d, vt_tensor *h);

#endif /* VISIONOPS_TEST_OPENCL_TEST_UTIL_H */
