/*
 * The part of ONNX Runtime's C ABI that libvisionops_ort uses, declared here
 * because ONNX Runtime's header is neither in Debian nor in its wheel.
 *
 * The facts this relies on (ONNX Runtime's documented, stable C ABI):
 * - a custom-op library exports RegisterCustomOps(OrtSessionOptions *,
 *   const OrtApiBase *), which ONNX Runtime calls when the library is
 *   registered with a session's options;
 * - OrtApiBase holds two functions: GetApi(version), which returns the
 *   OrtApi table of that version or NULL when the runtime is older, and
 *   GetVersionString();
 * - OrtApi is a table of function pointers that only ever grows at its end,
 *   so an entry keeps its position in every version from the one that added
 *   it: VO_ORT_SLOT_* below are those positions (all present from API 8 on);
 * - OrtCustomOp starts with a version field that tells the runtime which of
 *   its later members exist; the runtime reads a member only where the
 *   version says it is there (vo_ort_custom_op lists them up to version 16,
 *   the first with status-returning kernel creation and compute).
 *
 * Only what visionops calls is declared; every handle is opaque.
 */
#ifndef VISIONOPS_ORT_ABI_H
#define VISIONOPS_ORT_ABI_H

#include <stddef.h>
#include <stdint.h>

/* The API version asked for and the OrtCustomOp version filled in: ONNX
 * Runtime 1.16 and later. */
#define VO_ORT_API_VERSION 16

typedef struct OrtStatus OrtStatus;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtCustomOpDomain OrtCustomOpDomain;
typedef struct OrtKernelInfo OrtKernelInfo;
typedef struct OrtKernelContext OrtKernelContext;
typedef struct OrtValue OrtValue;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtApi OrtApi; /* only ever reached through vo_ort_slot */

/* ONNX's TensorProto element types (the ONNX standard's numbering). */
typedef enum vo_ort_elem_type {
  VO_ORT_UNDEFINED = 0, /* in a custom op's declaration: any type */
  VO_ORT_FLOAT = 1,
  VO_ORT_UINT8 = 2,
  VO_ORT_INT8 = 3,
  VO_ORT_UINT16 = 4,
  VO_ORT_INT16 = 5,
  VO_ORT_INT32 = 6,
  VO_ORT_INT64 = 7,
  VO_ORT_STRING = 8,
  VO_ORT_BOOL = 9,
  VO_ORT_FLOAT16 = 10,
  VO_ORT_DOUBLE = 11,
  VO_ORT_UINT32 = 12,
  VO_ORT_UINT64 = 13,
  VO_ORT_BFLOAT16 = 16
} vo_ort_elem_type;

typedef enum vo_ort_error_code {
  VO_ORT_OK = 0,
  VO_ORT_FAIL = 1,
  VO_ORT_INVALID_ARGUMENT = 2,
  VO_ORT_RUNTIME_EXCEPTION = 6,
  VO_ORT_NOT_IMPLEMENTED = 9
} vo_ort_error_code;

typedef enum vo_ort_io_characteristic {
  VO_ORT_IO_REQUIRED = 0,
  VO_ORT_IO_OPTIONAL = 1,
  VO_ORT_IO_VARIADIC = 2
} vo_ort_io_characteristic;

typedef enum vo_ort_mem_type { VO_ORT_MEM_DEFAULT = 0 } vo_ort_mem_type;

typedef struct OrtApiBase {
  const OrtApi *(*GetApi)(uint32_t version);
  const char *(*GetVersionString)(void);
} OrtApiBase;

/* Positions of the OrtApi entries used, and their signatures. */
enum {
  VO_ORT_SLOT_CreateStatus = 0,
  VO_ORT_SLOT_GetErrorMessage = 2,
  VO_ORT_SLOT_CreateCustomOpDomain = 26,
  VO_ORT_SLOT_CustomOpDomain_Add = 27,
  VO_ORT_SLOT_AddCustomOpDomain = 28,
  VO_ORT_SLOT_GetTensorMutableData = 51,
  VO_ORT_SLOT_GetTensorElementType = 60,
  VO_ORT_SLOT_GetDimensionsCount = 61,
  VO_ORT_SLOT_GetDimensions = 62,
  VO_ORT_SLOT_GetTensorTypeAndShape = 65,
  VO_ORT_SLOT_KernelInfoGetAttribute_float = 85,
  VO_ORT_SLOT_KernelInfoGetAttribute_int64 = 86,
  VO_ORT_SLOT_KernelInfoGetAttribute_string = 87,
  VO_ORT_SLOT_KernelContext_GetInputCount = 88,
  VO_ORT_SLOT_KernelContext_GetOutputCount = 89,
  VO_ORT_SLOT_KernelContext_GetInput = 90,
  VO_ORT_SLOT_KernelContext_GetOutput = 91,
  VO_ORT_SLOT_ReleaseStatus = 93,
  VO_ORT_SLOT_ReleaseTensorTypeAndShapeInfo = 99,
  VO_ORT_SLOT_KernelInfoGetAttributeArray_float = 162,
  VO_ORT_SLOT_KernelInfoGetAttributeArray_int64 = 163
};

typedef OrtStatus *(*vo_ort_CreateStatus)(vo_ort_error_code code, const char *msg);
typedef const char *(*vo_ort_GetErrorMessage)(const OrtStatus *status);
typedef OrtStatus *(*vo_ort_CreateCustomOpDomain)(const char *domain, OrtCustomOpDomain **out);
typedef OrtStatus *(*vo_ort_CustomOpDomain_Add)(OrtCustomOpDomain *domain, const void *op);
typedef OrtStatus *(*vo_ort_AddCustomOpDomain)(OrtSessionOptions *options,
                                               OrtCustomOpDomain *domain);
typedef OrtStatus *(*vo_ort_GetTensorMutableData)(OrtValue *value, void **out);
typedef OrtStatus *(*vo_ort_GetTensorElementType)(const OrtTensorTypeAndShapeInfo *info,
                                                  vo_ort_elem_type *out);
typedef OrtStatus *(*vo_ort_GetDimensionsCount)(const OrtTensorTypeAndShapeInfo *info, size_t *out);
typedef OrtStatus *(*vo_ort_GetDimensions)(const OrtTensorTypeAndShapeInfo *info, int64_t *dims,
                                           size_t count);
typedef OrtStatus *(*vo_ort_GetTensorTypeAndShape)(const OrtValue *value,
                                                   OrtTensorTypeAndShapeInfo **out);
typedef OrtStatus *(*vo_ort_KernelInfoGetAttribute_float)(const OrtKernelInfo *info,
                                                          const char *name, float *out);
typedef OrtStatus *(*vo_ort_KernelInfoGetAttribute_int64)(const OrtKernelInfo *info,
                                                          const char *name, int64_t *out);
/* With out == NULL: *size becomes the string's size, its '\0' included. */
typedef OrtStatus *(*vo_ort_KernelInfoGetAttribute_string)(const OrtKernelInfo *info,
                                                           const char *name, char *out,
                                                           size_t *size);
typedef OrtStatus *(*vo_ort_KernelContext_GetInputCount)(const OrtKernelContext *ctx, size_t *out);
typedef OrtStatus *(*vo_ort_KernelContext_GetOutputCount)(const OrtKernelContext *ctx, size_t *out);
typedef OrtStatus *(*vo_ort_KernelContext_GetInput)(const OrtKernelContext *ctx, size_t index,
                                                    const OrtValue **out);
typedef OrtStatus *(*vo_ort_KernelContext_GetOutput)(OrtKernelContext *ctx, size_t index,
                                                     const int64_t *dims, size_t ndim,
                                                     OrtValue **out);
typedef void (*vo_ort_ReleaseStatus)(OrtStatus *status);
typedef void (*vo_ort_ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo *info);
/* With out == NULL: *size becomes the array's length. */
typedef OrtStatus *(*vo_ort_KernelInfoGetAttributeArray_float)(const OrtKernelInfo *info,
                                                               const char *name, float *out,
                                                               size_t *size);
typedef OrtStatus *(*vo_ort_KernelInfoGetAttributeArray_int64)(const OrtKernelInfo *info,
                                                               const char *name, int64_t *out,
                                                               size_t *size);

/* The OrtApi entry NAME of table `api`, with its signature. */
typedef void (*vo_ort_any_fn)(void);
#define VO_ORT(api, NAME) \
  ((vo_ort_##NAME)((const vo_ort_any_fn *)(const void *)(api))[VO_ORT_SLOT_##NAME])

/* OrtCustomOp, members up to version 16 in their order. The runtime passes
 * back the pointer that was registered, so a struct that begins with this
 * one can carry more. */
typedef struct vo_ort_custom_op {
  uint32_t version;
  void *(*CreateKernel)(const struct vo_ort_custom_op *op, const OrtApi *api,
                        const OrtKernelInfo *info);
  const char *(*GetName)(const struct vo_ort_custom_op *op);
  const char *(*GetExecutionProviderType)(const struct vo_ort_custom_op *op);
  vo_ort_elem_type (*GetInputType)(const struct vo_ort_custom_op *op, size_t index);
  size_t (*GetInputTypeCount)(const struct vo_ort_custom_op *op);
  vo_ort_elem_type (*GetOutputType)(const struct vo_ort_custom_op *op, size_t index);
  size_t (*GetOutputTypeCount)(const struct vo_ort_custom_op *op);
  void (*KernelCompute)(void *kernel, OrtKernelContext *ctx);
  void (*KernelDestroy)(void *kernel);
  /* version 8 */
  vo_ort_io_characteristic (*GetInputCharacteristic)(const struct vo_ort_custom_op *op,
                                                     size_t index);
  vo_ort_io_characteristic (*GetOutputCharacteristic)(const struct vo_ort_custom_op *op,
                                                      size_t index);
  /* version 13 */
  vo_ort_mem_type (*GetInputMemoryType)(const struct vo_ort_custom_op *op, size_t index);
  /* version 14 */
  int (*GetVariadicInputMinArity)(const struct vo_ort_custom_op *op);
  int (*GetVariadicInputHomogeneity)(const struct vo_ort_custom_op *op);
  int (*GetVariadicOutputMinArity)(const struct vo_ort_custom_op *op);
  int (*GetVariadicOutputHomogeneity)(const struct vo_ort_custom_op *op);
  /* version 16 */
  OrtStatus *(*CreateKernelV2)(const struct vo_ort_custom_op *op, const OrtApi *api,
                               const OrtKernelInfo *info, void **kernel);
  OrtStatus *(*KernelComputeV2)(void *kernel, OrtKernelContext *ctx);
} vo_ort_custom_op;

#endif
