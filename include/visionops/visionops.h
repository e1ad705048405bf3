/*
 * visionops — computer-vision detection operators (NMS, box IoUs, RoI ops, ...)
 * as a self-contained C library with CPU, CUDA and OpenCL kernels.
 *
 * Tensors are DLPack DLTensors. Inputs are borrowed for the duration of a
 * call; outputs are allocated by the caller (ask for their shapes first with
 * the op's *_shape function or vo_infer) and must be contiguous.
 * On the CPU and CUDA a tensor's data is an address; on OpenCL (kDLOpenCL)
 * it is a cl_mem of the call's queue's context, and byte_offset is the
 * first element's offset in that buffer: a tensor reaching outside its
 * buffer (CL_MEM_SIZE; negative strides reach below the first element) or
 * in a buffer of another context is refused.
 * Every function returns a vo_status; on failure vo_last_error() returns a
 * message naming the op, the argument and the offending value.
 *
 * This header compiles as C99 and as C++.
 */
#ifndef VISIONOPS_VISIONOPS_H
#define VISIONOPS_VISIONOPS_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VISIONOPS_VERSION_MAJOR 0
#define VISIONOPS_VERSION_MINOR 1
#define VISIONOPS_VERSION_PATCH 0

#if defined(_WIN32) && defined(VISIONOPS_SHARED_BUILD)
#define VO_API __declspec(dllexport)
#elif defined(__GNUC__)
#define VO_API __attribute__((visibility("default")))
#else
#define VO_API
#endif

/* Largest tensor rank accepted anywhere in the library. */
#define VO_MAX_DIMS 8
/* Most items in a list argument ("Tensor[]", "float[]") or list output. */
#define VO_MAX_LIST 16

/* ---------------------------------------------------------------- status */

typedef enum vo_status {
  VO_OK = 0,
  VO_ERROR_INVALID_ARGUMENT = 1,    /* bad shape, value, or argument list */
  VO_ERROR_UNSUPPORTED_DTYPE = 2,   /* dtype not accepted, or dtypes mixed */
  VO_ERROR_DEVICE_MISMATCH = 3,     /* tensors of one call on different devices */
  VO_ERROR_BACKEND_UNAVAILABLE = 4, /* device's backend not built, no driver, no device */
  VO_ERROR_OUT_OF_MEMORY = 5,
  VO_ERROR_NOT_FOUND = 6,      /* no operator or backend with that name/index */
  VO_ERROR_BACKEND_FAILURE = 7 /* the backend's runtime reported an error */
} vo_status;

/* Message for the last failed call on this thread ("" if none). The pointer
 * stays valid until the next visionops call on this thread. */
VO_API const char *vo_last_error(void);
/* Short constant name of a status code, e.g. "invalid argument". */
VO_API const char *vo_status_string(vo_status status);
/* "MAJOR.MINOR.PATCH" of the library actually linked. */
VO_API const char *vo_version(void);

/* --------------------------------------------------------------- context */

/* Where temporary memory comes from. `alloc` returns NULL on failure.
 * `stream` is the queue the op runs on (vo_context_set_queue; NULL on the
 * CPU). For CUDA devices it is the context's cudaStream_t, or
 * cudaStreamPerThread when it has none, `device` is current
 * during both calls, and `free` may come while work that uses the block is
 * still queued on `stream`: it must be stream-ordered (cudaFreeAsync on
 * `stream`, or reuse only after that work). */
typedef struct vo_allocator {
  void *(*alloc)(void *user, DLDevice device, size_t size, void *stream);
  void (*free)(void *user, DLDevice device, void *ptr, void *stream);
  void *user;
} vo_allocator;

/* CPU instruction sets the kernels can be restricted to (tests use this to
 * run every code path on one machine). Each level includes those below it;
 * asking for more than the CPU has gives what it has. */
typedef enum vo_isa {
  VO_ISA_AUTO = 0,   /* best the CPU supports */
  VO_ISA_SCALAR = 1, /* portable C only */
  VO_ISA_AVX2 = 2,   /* x86-64 AVX2 + FMA */
  VO_ISA_AVX512 = 3  /* and AVX-512 F: the kernels that have a 16-lane variant use it */
} vo_isa;

typedef struct vo_context vo_context;

/* A NULL context anywhere means the defaults: all CPU threads; CUDA work on
 * the calling thread's per-thread default stream (never the legacy stream 0);
 * malloc / cudaMallocAsync; fast (atomic) CUDA backward; best ISA; 256 MiB
 * workspace limit. */
VO_API vo_status vo_context_create(vo_context **out);
/* Waits for the context's pending deferred checks, if any, and drops them. */
VO_API void vo_context_destroy(vo_context *ctx);
/* 0 means "all cores" (OpenMP's default); otherwise 1..4096. */
VO_API vo_status vo_context_set_num_threads(vo_context *ctx, int num_threads);
VO_API int vo_context_num_threads(const vo_context *ctx);
/* The queue ops on devices of `device_type` run on, as void* so this header
 * needs no device headers: a cudaStream_t for kDLCUDA. NULL restores the
 * backend's default (CUDA: the calling thread's per-thread default stream).
 * A backend without queues (the CPU) takes only NULL. */
VO_API vo_status vo_context_set_queue(vo_context *ctx, DLDeviceType device_type, void *queue);
/* vo_context_set_queue(ctx, kDLCUDA, stream), kept for existing callers. */
VO_API vo_status vo_context_set_cuda_stream(vo_context *ctx, void *stream);
/* NULL restores the default allocator. The struct is copied. */
VO_API vo_status vo_context_set_allocator(vo_context *ctx, const vo_allocator *allocator);
/* Nonzero: backward kernels give bit-identical results run to run. */
VO_API vo_status vo_context_set_deterministic(vo_context *ctx, int deterministic);
VO_API vo_status vo_context_set_isa(vo_context *ctx, vo_isa isa);
/* Upper bound on temporary memory an op may take at once (ops that can tile
 * honour it; 0 restores the default). */
VO_API vo_status vo_context_set_workspace_limit(vo_context *ctx, size_t bytes);

/* When the values of input tensors in device memory (CUDA, OpenCL) are
 * checked: rois' batch indices and coordinates, argmax, channel_mapping,
 * rotated boxes, deform_attn's levels, the adaptive sampling grid (each
 * op's documentation names its checks). Tensors the host can read (CPU,
 * CUDA host memory) are always checked before the kernel. With bad values
 * the kernels stay within the tensors' memory and finish in bounded time
 * whatever the mode; only the outputs of that call are then unspecified. */
typedef enum vo_device_checks {
  /* Before the kernel, and the host waits for the result (one small copy
   * back and a queue synchronisation per call that has checks): a bad value
   * fails the call, which writes no output. The default. */
  VO_DEVICE_CHECKS_SYNC = 0,
  /* On the device, in the call's queue before its kernel, without waiting:
   * the call returns once its work is queued. The first bad value is
   * reported, with the message the call would have failed with, by
   * vo_context_device_status, or by a later call of this context that has
   * to wait for the results anyway (it then fails with that message before
   * doing anything: when 256 checks are pending, or a call goes to
   * another device or queue, or comes from another thread while no queue
   * is set). */
  VO_DEVICE_CHECKS_DEFERRED = 1,
  /* Not checked: for work that must not depend on the host, such as a CUDA
   * graph being captured. */
  VO_DEVICE_CHECKS_OFF = 2
} vo_device_checks;
/* Setting a mode first reports (and drops) the checks still pending, as
 * vo_context_device_status does. */
VO_API vo_status vo_context_set_device_checks(vo_context *ctx, vo_device_checks mode);
VO_API vo_device_checks vo_context_device_checks(const vo_context *ctx);
/* Waits for ctx's pending deferred checks and reports the first bad value
 * among them in call order (VO_OK: none), with that call's message; they
 * are then dropped. VO_OK at once when none is pending. Thread-safe, like
 * calls sharing ctx. */
VO_API vo_status vo_context_device_status(vo_context *ctx);

/* ------------------------------------------------------------- backends */

typedef struct vo_backend_info {
  const char *name;         /* "cpu", "cuda" */
  DLDeviceType device_type; /* kDLCPU, kDLCUDA */
  int built;                /* compiled into this library */
  int available;            /* usable now */
  const char *detail;       /* why not available, or what it runs on
                               (CPU ISA, GPU name); never NULL */
} vo_backend_info;

VO_API int vo_backend_count(void);
/* Fills *out for backend `index` (0 .. vo_backend_count()-1). Checking
 * availability may initialise the backend's runtime once. */
VO_API vo_status vo_backend_status(int index, vo_backend_info *out);
/* Name of the ISA the CPU kernels use under `ctx` ("avx2", "scalar"). */
VO_API const char *vo_cpu_isa(const vo_context *ctx);
/* The CPU's default allocator keeps up to four freed workspace blocks of
 * 256 KiB or more for later calls (at most VISIONOPS_CPU_CACHE_BYTES bytes
 * in all, read once; 256 MiB unless set; 0 keeps none), so that repeated
 * calls do not fault in fresh pages. This hands them back to the system.
 * Safe to call at any time from any thread. */
VO_API void vo_cpu_release_cached_memory(void);

/* ------------------------------------------------------------ operators */

typedef struct vo_op_info {
  int index;
  const char *name;     /* "nms" */
  const char *schema;   /* torch schema syntax, inputs then "->" outputs */
  const char *backward; /* name of the backward op, or NULL */
  int num_args;         /* inputs in the schema */
  int num_outputs;      /* outputs in the schema; -1 for a list ("-> Tensor[]"),
                           whose length vo_infer's caller learns from the op's
                           documentation (e.g. one per feature level) */
  /* Where each output dimension comes from, e.g. "[rois[0], input[1],
   * pooled_height, pooled_width]" (syntax in src/ops/ops.def): for computing
   * output shapes over symbolic sizes, as PyTorch's torch.export does. */
  const char *shape_rule;
} vo_op_info;

VO_API int vo_op_count(void);
VO_API const vo_op_info *vo_op_get(int index);         /* NULL if out of range */
VO_API const vo_op_info *vo_op_find(const char *name); /* NULL if unknown */

/* A boxed argument for the generic entry point. */
typedef enum vo_value_kind {
  VO_VALUE_NONE = 0, /* an absent optional ("Tensor?") */
  VO_VALUE_TENSOR,
  VO_VALUE_FLOAT,
  VO_VALUE_INT,
  VO_VALUE_BOOL,
  VO_VALUE_TENSOR_LIST, /* "Tensor[]": 1..VO_MAX_LIST borrowed tensors */
  VO_VALUE_FLOAT_LIST   /* "float[]": 1..VO_MAX_LIST values */
} vo_value_kind;

typedef struct vo_value {
  vo_value_kind kind;
  union {
    const DLTensor *tensor;
    double f;
    int64_t i;
    int b;
    struct {
      const DLTensor *const *items;
      int64_t count;
    } tensors;
    struct {
      const double *items;
      int64_t count;
    } floats;
  } u;
} vo_value;

/* Convenience constructors. */
static inline vo_value vo_tensor_value(const DLTensor *t) {
  vo_value v;
  v.kind = t ? VO_VALUE_TENSOR : VO_VALUE_NONE;
  v.u.tensor = t;
  return v;
}
static inline vo_value vo_float_value(double f) {
  vo_value v;
  v.kind = VO_VALUE_FLOAT;
  v.u.f = f;
  return v;
}
static inline vo_value vo_int_value(int64_t i) {
  vo_value v;
  v.kind = VO_VALUE_INT;
  v.u.i = i;
  return v;
}
static inline vo_value vo_bool_value(int b) {
  vo_value v;
  v.kind = VO_VALUE_BOOL;
  v.u.b = b;
  return v;
}
static inline vo_value vo_tensor_list_value(const DLTensor *const *items, int64_t count) {
  vo_value v;
  v.kind = VO_VALUE_TENSOR_LIST;
  v.u.tensors.items = items;
  v.u.tensors.count = count;
  return v;
}
static inline vo_value vo_float_list_value(const double *items, int64_t count) {
  vo_value v;
  v.kind = VO_VALUE_FLOAT_LIST;
  v.u.floats.items = items;
  v.u.floats.count = count;
  return v;
}

/* One argument of an op's schema, for bindings that map their own calls
 * onto vo_call's arguments (the ONNX Runtime library maps a node's inputs
 * and attributes by these names). */
typedef struct vo_arg_info {
  const char *name;   /* "iou_threshold"; valid as long as the library is loaded */
  vo_value_kind kind; /* VO_VALUE_TENSOR, _FLOAT, _INT (also "SymInt"), _BOOL,
                         _TENSOR_LIST or _FLOAT_LIST */
  int optional;       /* "Tensor?" / "float?": VO_VALUE_NONE is accepted */
  int has_default;    /* the schema gives a default, in default_value */
  vo_value default_value;
} vo_arg_info;
/* Argument `index` (0 .. op->num_args - 1) of `op`'s schema. */
VO_API vo_status vo_op_arg(const vo_op_info *op, int index, vo_arg_info *out);
/* The schema's name of output `index` ("keep"; "out" for a single unnamed
 * output or a list), or NULL if out of range. */
VO_API const char *vo_op_output_name(const vo_op_info *op, int index);

/* Shape, dtype and device of an output the caller must allocate. */
typedef struct vo_tensor_desc {
  int32_t ndim;
  int64_t shape[VO_MAX_DIMS];
  DLDataType dtype;
  DLDevice device;
} vo_tensor_desc;

/* Validates `args` against the op's schema and fills the descriptions of its
 * `num_outputs` outputs (for a list output, exactly as many as the op
 * produces for these arguments: see vo_infer_num_outputs). Only shapes,
 * strides, dtypes and devices are read, so input tensors may have NULL data
 * (shape inference without data, e.g. for PyTorch's Meta tensors); checks of
 * input values (e.g. the batch indices in rois) then happen in vo_call. */
VO_API vo_status vo_infer(const vo_context *ctx, const vo_op_info *op, const vo_value *args,
                          int num_args, vo_tensor_desc *outputs, int num_outputs);
/* How many outputs the op produces for these arguments (a fixed number, or
 * for a list output such as one gradient per feature level, the list's
 * length). Inputs may have NULL data, as for vo_infer. */
VO_API vo_status vo_infer_num_outputs(const vo_context *ctx, const vo_op_info *op,
                                      const vo_value *args, int num_args, int *num_outputs);
/* Runs the op: validates, picks the kernel for the tensors' device and dtype,
 * computes into the caller's outputs (which must match vo_infer's
 * descriptions and be contiguous). An output that only a backward reads may
 * be NULL where the op's documentation says so (roi_pool's argmax,
 * ps_roi_align's and ps_roi_pool's channel_mapping): it is then neither
 * written nor computed; any other NULL output is an error. On error no
 * output has been written. */
VO_API vo_status vo_call(const vo_context *ctx, const vo_op_info *op, const vo_value *args,
                         int num_args, DLTensor *const *outputs, int num_outputs);

/* --------------------------------------------------- box operators (typed)
 *
 * Boxes are [N,4] rows (x1, y1, x2, y2) of float32, float64, float16 or
 * bfloat16. Half types compute in float32. nms scores may have any floating
 * dtype beside the boxes (float32 scores beside bfloat16 boxes, as
 * torch.autocast gives), read at their own precision; the boxes' dtype sets
 * the compute precision (float64 for float64, float32 otherwise).
 */

/* Greedy non-maximum suppression. Outputs: keep int64[N] (the first
 * *num_kept entries are the kept indices, sorted by score descending, ties by
 * index; the rest is filled with -1) and num_kept int64[] (a 0-d tensor on the
 * same device, so a GPU call needs no host synchronisation). */
VO_API vo_status vo_nms_shape(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                              double iou_threshold, vo_tensor_desc out[2]);
VO_API vo_status vo_nms(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                        double iou_threshold, DLTensor *keep, DLTensor *num_kept);

/* NMS within each category of idxs (int64[N]); boxes of different categories
 * never suppress each other. Exact for any coordinates. Outputs as vo_nms. */
VO_API vo_status vo_batched_nms_shape(const vo_context *ctx, const DLTensor *boxes,
                                      const DLTensor *scores, const DLTensor *idxs,
                                      double iou_threshold, vo_tensor_desc out[2]);
VO_API vo_status vo_batched_nms(const vo_context *ctx, const DLTensor *boxes,
                                const DLTensor *scores, const DLTensor *idxs, double iou_threshold,
                                DLTensor *keep, DLTensor *num_kept);

/* Greedy NMS of rotated boxes [N,5] (cx, cy, w, h, angle; angle in degrees
 * counter-clockwise on screen, y down; clockwise negates it, radians takes
 * it in radians): a box is suppressed by a kept one when their rotated IoU
 * (as vo_box_iou_rotated's) is >= iou_threshold (torchvision's rule for
 * rotated boxes; nms's is >). Coordinates and angles must be finite, w and
 * h >= 0. Scores, order and outputs as vo_nms. The batched form suppresses
 * only within each category of idxs (int64[N]). */
VO_API vo_status vo_nms_rotated(const vo_context *ctx, const DLTensor *boxes,
                                const DLTensor *scores, double iou_threshold, int clockwise,
                                int radians, DLTensor *keep, DLTensor *num_kept);
VO_API vo_status vo_batched_nms_rotated(const vo_context *ctx, const DLTensor *boxes,
                                        const DLTensor *scores, const DLTensor *idxs,
                                        double iou_threshold, int clockwise, int radians,
                                        DLTensor *keep, DLTensor *num_kept);

/* NMS per (image, class) with fixed-shape outputs, for deployment (no output
 * size depends on the data, so a GPU call needs no host synchronisation).
 * boxes [B,M,4] (shared by the classes) or, for batched_nms_padded, [B,M,C,4]
 * (a box per class); scores [B,C,M] of any floating dtype; score_threshold
 * NULL: every box is a candidate, else those with score > *score_threshold.
 *
 * batched_nms_padded (TensorRT EfficientNMS's shape): per (image, class),
 * the candidates by score (descending; ties: lower box index), at most
 * pre_nms_top_k of them (-1: all), greedy NMS with torchvision nms's IoU
 * (suppressed when IoU > iou_threshold) selecting at most max_per_class (-1:
 * no cap); then per image the max_per_image best selections across classes
 * by score (ties: lower class, then earlier selection). box_format: the
 * torchvision format of the boxes, 0 xyxy, 1 xywh, 2 cxcywh (converted as
 * box_convert does). class_agnostic: one problem per image over every
 * (class, box) pair, boxes of any class suppressing each other. Outputs:
 * keep and labels int64[B, max_per_image] (box index and class, -1 padding),
 * scores_out [B, max_per_image] (scores' dtype, 0 padding), num int64[B]. */
VO_API vo_status vo_batched_nms_padded(const vo_context *ctx, const DLTensor *boxes,
                                       const DLTensor *scores, double iou_threshold,
                                       const double *score_threshold, int64_t max_per_class,
                                       int64_t max_per_image, int box_format, int class_agnostic,
                                       int64_t pre_nms_top_k, DLTensor *keep, DLTensor *labels,
                                       DLTensor *scores_out, DLTensor *num);
/* ONNX NonMaxSuppression-11 exactly: boxes [B,M,4] as [y1, x1, y2, x2] with
 * any diagonal (center_point_box 0) or [x_center, y_center, width, height]
 * (1); per (image, class) the candidates with score > score_threshold by
 * score (ties: lower index), each selected unless its IoU with a selected
 * box of its (image, class) is > iou_threshold (in [0, 1]; onnxruntime's
 * IoU, which is 0 for empty intersections and non-positive areas), at most
 * max_output_boxes_per_class (<= 0: none). Thresholds are float32, as ONNX's
 * inputs, unless the tensors are float64. Outputs: selected
 * int64[B*C*min(max_output_boxes_per_class, M), 3], the first *num_selected
 * rows (batch, class, box) in ONNX's order (batch, class, then selection),
 * the rest -1; num_selected int64[]. */
VO_API vo_status vo_onnx_nms(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                             int64_t max_output_boxes_per_class, double iou_threshold,
                             const double *score_threshold, int center_point_box,
                             DLTensor *selected, DLTensor *num_selected);

/* Soft-NMS (Bodla et al. 2017) in mmcv's order of operations: repeatedly
 * select the remaining box of highest current score (ties: lowest index; a
 * NaN score counts as the highest), then multiply every other remaining
 * box's score by a weight of its IoU with the selected one (areas and
 * extents with `offset`, usually 0 or 1) and drop those whose score falls
 * below min_score. method 0 (hard): weight 0 if IoU >= iou_threshold;
 * 1 (linear): 1 - IoU if IoU >= iou_threshold; 2 (gaussian, sigma > 0):
 * exp(-IoU^2 / sigma) for all; a NaN IoU (two boxes without a union) gives
 * weight 1. As in mmcv, the first selected box is never tested against
 * min_score. Outputs, padded to N so that no shape depends on the data:
 * dets [N,5] (boxes' dtype) rows (x1, y1, x2, y2, score at selection) in
 * selection order, zero rows past *num_kept; keep int64[N] the original
 * indices, -1 past *num_kept; num_kept int64[]. Half types compute in
 * float32, float64 in float64; scores may have any floating dtype. */
VO_API vo_status vo_soft_nms(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                             double iou_threshold, double sigma, double min_score, int method,
                             double offset, DLTensor *dets, DLTensor *keep, DLTensor *num_kept);

/* vo_soft_nms within each category of idxs (int64[N]), independently (each
 * category's first box is exempt from min_score), the results merged by
 * score at selection, descending (NaN first; ties: lower index first).
 * Outputs as vo_soft_nms. */
VO_API vo_status vo_batched_soft_nms(const vo_context *ctx, const DLTensor *boxes,
                                     const DLTensor *scores, const DLTensor *idxs,
                                     double iou_threshold, double sigma, double min_score,
                                     int method, double offset, DLTensor *dets, DLTensor *keep,
                                     DLTensor *num_kept);

/* Pairwise overlap of a[N,4] and b[M,4] into out[N,M]. Boxes are float32,
 * float64, float16, bfloat16 or integers (int64/32/16/8, uint8); the two sets
 * may differ in dtype, each read at its own precision. out is float64 when
 * either set is float64 and float32 otherwise, as torchvision's upcasting and
 * promotion give (two integer sets compute in float64, exactly). */
VO_API vo_status vo_box_iou_shape(const vo_context *ctx, const DLTensor *a, const DLTensor *b,
                                  vo_tensor_desc *out);
VO_API vo_status vo_box_iou(const vo_context *ctx, const DLTensor *a, const DLTensor *b,
                            DLTensor *out);
VO_API vo_status vo_generalized_box_iou(const vo_context *ctx, const DLTensor *a, const DLTensor *b,
                                        DLTensor *out);
VO_API vo_status vo_distance_box_iou(const vo_context *ctx, const DLTensor *a, const DLTensor *b,
                                     double eps, DLTensor *out);
VO_API vo_status vo_complete_box_iou(const vo_context *ctx, const DLTensor *a, const DLTensor *b,
                                     double eps, DLTensor *out);

/* Rotated-box overlap of a[N,5] and b[M,5] (cx, cy, w, h, angle) into
 * out[N,M], torchvision's box_iou(fmt="cxcywhr") geometry (detectron2's, with
 * its epsilons; result in [0, 1], 0 for a box of area < 1e-14): IoU, or with
 * iof the intersection over a's box area. angle in degrees counter-clockwise
 * on screen (y down); clockwise negates it, radians takes it in radians.
 * Float boxes (either set of any float dtype); coordinates and angles must
 * be finite, w and h >= 0. out is float64 when either set is float64, else
 * float32. The _aligned form pairs a[i] with b[i] (N == M) into out[N]. */
VO_API vo_status vo_box_iou_rotated(const vo_context *ctx, const DLTensor *a, const DLTensor *b,
                                    int iof, int clockwise, int radians, DLTensor *out);
VO_API vo_status vo_box_iou_rotated_aligned(const vo_context *ctx, const DLTensor *a,
                                            const DLTensor *b, int iof, int clockwise, int radians,
                                            DLTensor *out);

/* Gradients of the four pairwise ops above with respect to both box sets, as
 * torchvision's autograd computes them for its implementation: grad [N,M]
 * (the forward's output dtype, or the boxes' dtype) is the gradient of `out`;
 * float boxes only (integer boxes are not differentiable); grad_a [N,4] and grad_b [M,4]
 * (the boxes' dtype) are fully overwritten. torch.max / torch.min ties split
 * the gradient half and half, clamp(min=0) passes it at 0, and
 * complete_box_iou's alpha is a constant. grad_a[i] sums over j in order and
 * grad_b[j] over i: the result is the same for any thread count (CPU) and
 * run to run (CUDA). Half types compute in float32; sums are in float64. */
VO_API vo_status vo_box_iou_backward_shape(const vo_context *ctx, const DLTensor *grad,
                                           const DLTensor *a, const DLTensor *b,
                                           vo_tensor_desc out[2]);
VO_API vo_status vo_box_iou_backward(const vo_context *ctx, const DLTensor *grad, const DLTensor *a,
                                     const DLTensor *b, DLTensor *grad_a, DLTensor *grad_b);
VO_API vo_status vo_generalized_box_iou_backward(const vo_context *ctx, const DLTensor *grad,
                                                 const DLTensor *a, const DLTensor *b,
                                                 DLTensor *grad_a, DLTensor *grad_b);
VO_API vo_status vo_distance_box_iou_backward(const vo_context *ctx, const DLTensor *grad,
                                              const DLTensor *a, const DLTensor *b, double eps,
                                              DLTensor *grad_a, DLTensor *grad_b);
VO_API vo_status vo_complete_box_iou_backward(const vo_context *ctx, const DLTensor *grad,
                                              const DLTensor *a, const DLTensor *b, double eps,
                                              DLTensor *grad_a, DLTensor *grad_b);

/* Box formats of vo_box_convert, torchvision's (image coordinates, y down):
 * XYXY (x1, y1, x2, y2) corners; XYWH (x1, y1, w, h); CXCYWH (cx, cy, w, h);
 * the rotated CXCYWHR (cx, cy, w, h, r) and XYWHR (x1, y1, w, h, r) with r
 * in degrees, counter-clockwise on screen, (x1, y1) the rotated top-left
 * corner; XYXYXYXY the four corners top-left, top-right, bottom-right,
 * bottom-left. Boxes have 4, 5 or 8 coordinates. */
typedef enum vo_box_format {
  VO_BOX_XYXY = 0,
  VO_BOX_XYWH = 1,
  VO_BOX_CXCYWH = 2,
  VO_BOX_CXCYWHR = 3,
  VO_BOX_XYWHR = 4,
  VO_BOX_XYXYXYXY = 5
} vo_box_format;

/* boxes [N, K_in] in in_fmt into out [N, K_out] in out_fmt, as
 * torchvision.ops.box_convert (0.29) computes it, operation by operation:
 * any pair among the axis-aligned formats or among the rotated ones (an
 * axis-aligned <-> rotated pair is refused, as in torchvision), the same
 * format a copy. Elementwise: NaN and Inf pass through. Float boxes
 * (float32, float64, float16, bfloat16) keep their dtype (half types
 * compute in float32, each operation rounded to the half type as torch's
 * ops round); integer boxes (int64/32/16/8, uint8) keep theirs, sums
 * wrapping as torch's, except that the pairs with CXCYWH on one side give
 * float32 (torch's true division), and the rotated pairs compute in float32
 * and round half to even back to the boxes' dtype. */
VO_API vo_status vo_box_convert_shape(const vo_context *ctx, const DLTensor *boxes,
                                      vo_box_format in_fmt, vo_box_format out_fmt,
                                      vo_tensor_desc *out);
VO_API vo_status vo_box_convert(const vo_context *ctx, const DLTensor *boxes, vo_box_format in_fmt,
                                vo_box_format out_fmt, DLTensor *out);
/* Its gradient with respect to float boxes, as torch's autograd computes it
 * through torchvision's arithmetic: grad [N, K_out] (any float dtype) into
 * grad_boxes [N, K_in] (the boxes' dtype), fully overwritten. */
VO_API vo_status vo_box_convert_backward(const vo_context *ctx, const DLTensor *grad,
                                         const DLTensor *boxes, vo_box_format in_fmt,
                                         vo_box_format out_fmt, DLTensor *grad_boxes);

/* --------------------------------------------------- RoI operators (typed)
 *
 * input is [N,C,H,W] of float32, float64, float16 or bfloat16 (any strides);
 * rois is [K,5] of any floating dtype (float32 rois beside bfloat16 features,
 * as torch.autocast gives, are read at their own precision), rows
 * (batch_index, x1, y1, x2, y2) in input coordinates before spatial_scale.
 * Every batch index must be an integer in [0, N) and every coordinate finite
 * (an error otherwise, checked before any output is written). The input's
 * dtype sets the compute precision (float64 for float64, float32 otherwise)
 * and the output's dtype; backward ops likewise take the gradient's.
 */

/* RoIAlign as torchvision.ops.roi_align: out[K,C,pooled_height,pooled_width]
 * (input dtype) is the mean of bilinear samples on a grid of sampling_ratio x
 * sampling_ratio points per bin (sampling_ratio <= 0: ceil(roi size / pooled
 * size) points, per RoI). aligned != 0 shifts coordinates by -0.5 pixel
 * (pixel centres); otherwise RoIs are at least 1x1. spatial_scale must be
 * finite and > 0; pooled sizes >= 1. */
VO_API vo_status vo_roi_align_shape(const vo_context *ctx, const DLTensor *input,
                                    const DLTensor *rois, double spatial_scale,
                                    int64_t pooled_height, int64_t pooled_width,
                                    int64_t sampling_ratio, int aligned, vo_tensor_desc *out);
VO_API vo_status vo_roi_align(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                              double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                              int64_t sampling_ratio, int aligned, DLTensor *out);

/* Gradient of vo_roi_align with respect to its input: grad is
 * [K,C,pooled_height,pooled_width], grad_input [batch_size,channels,height,
 * width] (grad's dtype) is fully overwritten. No gradient for rois. The CPU
 * result is bit-identical for any thread count. It is linear in grad, so its
 * own gradient is a vo_roi_align of the incoming gradient. */
VO_API vo_status vo_roi_align_backward(const vo_context *ctx, const DLTensor *grad,
                                       const DLTensor *rois, double spatial_scale,
                                       int64_t pooled_height, int64_t pooled_width,
                                       int64_t batch_size, int64_t channels, int64_t height,
                                       int64_t width, int64_t sampling_ratio, int aligned,
                                       DLTensor *grad_input);

/* RoIAlignRotated (detectron2's ROIAlignRotated when aligned != 0): rois
 * [K,6] are (batch index, cx, cy, w, h, angle), the angle in degrees,
 * counter-clockwise on screen as torchvision's rotated boxes (clockwise != 0
 * negates it, radians != 0 takes it in radians). Each bin's sampling grid
 * (sampling_ratio <= 0: ceil(roi size / pooled size) points per axis) is
 * laid on the un-rotated box and turned about its centre, then sampled as
 * vo_roi_align does. aligned != 0 shifts the centre by -0.5 pixel;
 * otherwise w and h are at least 1 (mmcv's rule). w, h < 0 are refused.
 * out is [K,C,pooled_height,pooled_width] in input's dtype. */
VO_API vo_status vo_roi_align_rotated_shape(const vo_context *ctx, const DLTensor *input,
                                            const DLTensor *rois, double spatial_scale,
                                            int64_t pooled_height, int64_t pooled_width,
                                            int64_t sampling_ratio, int aligned, int clockwise,
                                            int radians, vo_tensor_desc *out);
VO_API vo_status vo_roi_align_rotated(const vo_context *ctx, const DLTensor *input,
                                      const DLTensor *rois, double spatial_scale,
                                      int64_t pooled_height, int64_t pooled_width,
                                      int64_t sampling_ratio, int aligned, int clockwise,
                                      int radians, DLTensor *out);

/* Gradient of vo_roi_align_rotated with respect to its input, as
 * vo_roi_align_backward is of vo_roi_align (grad_input fully overwritten;
 * bit-identical on the CPU for any thread count; linear in grad, so its own
 * gradient is a vo_roi_align_rotated). */
VO_API vo_status vo_roi_align_rotated_backward(const vo_context *ctx, const DLTensor *grad,
                                               const DLTensor *rois, double spatial_scale,
                                               int64_t pooled_height, int64_t pooled_width,
                                               int64_t batch_size, int64_t channels, int64_t height,
                                               int64_t width, int64_t sampling_ratio, int aligned,
                                               int clockwise, int radians, DLTensor *grad_input);

/* MultiScaleRoIAlign as torchvision.ops.MultiScaleRoIAlign, in one call:
 * features are num_levels maps [N,C,H_l,W_l] of one dtype (finest first) and
 * scales their spatial scales, each half the previous (powers of two, as
 * MultiScaleRoIAlign infers them). RoI k goes to FPN level
 * floor(canonical_level + log2(sqrt(area_k) / canonical_scale) + 1e-6), clamped
 * to the pyramid (area from the RoI's image coordinates), and is roi_align'ed
 * there with that level's scale. out[K,C,PH,PW] keeps the RoIs' order. A RoI
 * with negative area has no level (NaN, as in torchvision) and a zero row.
 * torchvision's defaults: canonical_scale 224, canonical_level 4, aligned 0. */
VO_API vo_status vo_multi_scale_roi_align_shape(
    const vo_context *ctx, const DLTensor *const *features, const double *scales, int num_levels,
    const DLTensor *rois, int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
    int64_t canonical_scale, int64_t canonical_level, int aligned, vo_tensor_desc *out);
VO_API vo_status vo_multi_scale_roi_align(const vo_context *ctx, const DLTensor *const *features,
                                          const double *scales, int num_levels,
                                          const DLTensor *rois, int64_t pooled_height,
                                          int64_t pooled_width, int64_t sampling_ratio,
                                          int64_t canonical_scale, int64_t canonical_level,
                                          int aligned, DLTensor *out);
/* Its gradient with respect to every level: grad_features[l] is shaped like
 * features[l] (whose data is not read) and fully overwritten. Deterministic. */
VO_API vo_status vo_multi_scale_roi_align_backward(
    const vo_context *ctx, const DLTensor *grad, const DLTensor *rois,
    const DLTensor *const *features, const double *scales, int num_levels, int64_t pooled_height,
    int64_t pooled_width, int64_t sampling_ratio, int64_t canonical_scale, int64_t canonical_level,
    int aligned, DLTensor *const *grad_features);

/* Position-sensitive RoIAlign as torchvision.ops.ps_roi_align. C (input
 * channels) must be a multiple of pooled_height * pooled_width; out is
 * [K, C/(PH*PW), PH, PW] (input dtype) and channel_mapping int32 of the same
 * shape. Output channel c, bin (ph, pw) averages bilinear samples of input
 * channel (c*PH + ph)*PW + pw, which channel_mapping records. Geometry as
 * vo_roi_align with aligned = 1 (half-pixel offset, no 1x1 minimum), and a
 * bin averages sampling_ratio^2 samples (<= 0: adaptive, ceil(roi size /
 * pooled size) per axis). Unlike torchvision, which returns NaN there, a RoI
 * whose adaptive grid is empty (zero or negative size) gives 0.
 * channel_mapping may be NULL (inference: no backward will read it). */
VO_API vo_status vo_ps_roi_align_shape(const vo_context *ctx, const DLTensor *input,
                                       const DLTensor *rois, double spatial_scale,
                                       int64_t pooled_height, int64_t pooled_width,
                                       int64_t sampling_ratio, vo_tensor_desc out[2]);
VO_API vo_status vo_ps_roi_align(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                                 double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                 int64_t sampling_ratio, DLTensor *out, DLTensor *channel_mapping);

/* Gradient of vo_ps_roi_align with respect to its input: grad and
 * channel_mapping are [K, channels/(PH*PW), PH, PW] (channel_mapping as the
 * forward wrote it: for host memory every entry is checked), grad_input
 * [batch_size, channels, height, width] (grad's dtype) is fully overwritten.
 * No gradient for rois. The CPU result is bit-identical for any thread count.
 * It is linear in grad, so its own gradient (double backward) is a
 * vo_ps_roi_align of the incoming gradient: for any g and v,
 * sum(backward(g) * v) == sum(g * forward(v)). */
VO_API vo_status vo_ps_roi_align_backward(const vo_context *ctx, const DLTensor *grad,
                                          const DLTensor *rois, const DLTensor *channel_mapping,
                                          double spatial_scale, int64_t pooled_height,
                                          int64_t pooled_width, int64_t sampling_ratio,
                                          int64_t batch_size, int64_t channels, int64_t height,
                                          int64_t width, DLTensor *grad_input);

/* Position-sensitive RoI pooling as torchvision.ops.ps_roi_pool. C must be
 * a multiple of pooled_height * pooled_width; out is [K, C/(PH*PW), PH, PW]
 * (input dtype) and channel_mapping int32 of the same shape, as for
 * vo_ps_roi_align. Coordinates are rounded (half away from zero) after
 * spatial_scale, RoIs are at least 1x1, and bin (ph, pw) covers rows
 * [floor(ph*bh), ceil((ph+1)*bh)) + y1 and columns likewise, clamped into
 * [0, H-1] and [0, W-1] exactly as torchvision's forward does (so the last
 * row and column of the map never contribute). Output channel c, bin
 * (ph, pw) is the mean of input channel (c*PH + ph)*PW + pw over the bin,
 * 0 for an empty bin. Values match torchvision's forward. channel_mapping
 * may be NULL (inference: no backward will read it). */
VO_API vo_status vo_ps_roi_pool_shape(const vo_context *ctx, const DLTensor *input,
                                      const DLTensor *rois, double spatial_scale,
                                      int64_t pooled_height, int64_t pooled_width,
                                      vo_tensor_desc out[2]);
VO_API vo_status vo_ps_roi_pool(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                                double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                DLTensor *out, DLTensor *channel_mapping);

/* Gradient of vo_ps_roi_pool with respect to its input (grad,
 * channel_mapping and grad_input as for vo_ps_roi_align_backward). This is
 * the true gradient of the forward: each bin spreads grad / area over the
 * same clamped bin the forward averaged. torchvision's backward clamps bins
 * to [0, H] and [0, W] instead of the forward's [0, H-1] and [0, W-1], so it
 * differs from this one (and from its own forward's gradient) for bins that
 * reach the last row or column. The CPU result is bit-identical for any
 * thread count; it is linear in grad, and its own gradient is a
 * vo_ps_roi_pool of the incoming gradient. */
VO_API vo_status vo_ps_roi_pool_backward(const vo_context *ctx, const DLTensor *grad,
                                         const DLTensor *rois, const DLTensor *channel_mapping,
                                         double spatial_scale, int64_t pooled_height,
                                         int64_t pooled_width, int64_t batch_size, int64_t channels,
                                         int64_t height, int64_t width, DLTensor *grad_input);

/* RoIPool as torchvision.ops.roi_pool: RoI corners are rounded (half away
 * from zero) after spatial_scale and the RoI covers round(x1)..round(x2)
 * inclusive (at least 1 pixel); bin (ph, pw) covers rows
 * [floor(ph*bh), ceil((ph+1)*bh)) of it (bh = roi height / pooled_height),
 * clamped to the map, and likewise columns. Outputs: out[K,C,pooled_height,
 * pooled_width] (input dtype), the maximum of each bin (the first one in
 * row-major order on ties), and argmax (int32, same shape), its index h*W + w
 * in the input plane. An empty bin gives 0 and argmax -1. NaN inputs are
 * skipped (as torchvision); a non-empty bin of only NaN gives NaN and -1.
 * Unlike torchvision, values at or below -FLT_MAX (-inf, and such float64
 * values) are real maxima. H*W must be at most 2^31. spatial_scale must be
 * finite and > 0; pooled sizes >= 1; scaled coordinates beyond +-2^61 saturate.
 * argmax may be NULL when no backward will read it (inference): the maxima
 * alone are computed, with the same values, and the call writes half as many
 * bytes. */
VO_API vo_status vo_roi_pool_shape(const vo_context *ctx, const DLTensor *input,
                                   const DLTensor *rois, double spatial_scale,
                                   int64_t pooled_height, int64_t pooled_width, vo_tensor_desc *out,
                                   vo_tensor_desc *argmax);
VO_API vo_status vo_roi_pool(const vo_context *ctx, const DLTensor *input, const DLTensor *rois,
                             double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                             DLTensor *out, DLTensor *argmax);

/* Gradient of vo_roi_pool with respect to its input: grad and argmax (the
 * forward's, int32) are [K,C,pooled_height,pooled_width]; grad_input
 * [batch_size,channels,height,width] (grad's dtype) is fully overwritten with
 * grad_input[b, c, argmax] summed over the RoIs of image b (argmax -1 adds
 * nothing). Every argmax value must be -1 or in [0, height*width) (checked
 * before any output is written). The CPU result is bit-identical for any
 * thread count; float16 / bfloat16 accumulate in float32. */
VO_API vo_status vo_roi_pool_backward(const vo_context *ctx, const DLTensor *grad,
                                      const DLTensor *rois, const DLTensor *argmax,
                                      double spatial_scale, int64_t pooled_height,
                                      int64_t pooled_width, int64_t batch_size, int64_t channels,
                                      int64_t height, int64_t width, DLTensor *grad_input);

/* Deformable convolution as torchvision.ops.deform_conv2d (v1; v2 with a
 * mask): input [N,Cin,H,W], weight [Cout,Cin/groups,kh,kw], offset
 * [N,2*offset_groups*kh*kw,Hout,Wout] (dy, dx per tap), mask
 * [N,offset_groups*kh*kw,Hout,Wout] or NULL (no modulation), bias [Cout] or
 * NULL; all one float dtype, any strides. out [N,Cout,Hout,Wout] with
 * Hout = (H + 2*pad_h - (dilation_h*(kh-1) + 1)) / stride_h + 1 (likewise W).
 * Samples outside the map, and NaN offsets, read 0. The matrix products run
 * in OpenBLAS; temporary memory stays under the context's workspace limit
 * (columns are tiled), whatever N, H and W. Half types compute in float32. */
VO_API vo_status vo_deform_conv2d_shape(const vo_context *ctx, const DLTensor *input,
                                        const DLTensor *weight, const DLTensor *offset,
                                        const DLTensor *mask, const DLTensor *bias,
                                        int64_t stride_h, int64_t stride_w, int64_t pad_h,
                                        int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
                                        int64_t groups, int64_t offset_groups, vo_tensor_desc *out);
VO_API vo_status vo_deform_conv2d(const vo_context *ctx, const DLTensor *input,
                                  const DLTensor *weight, const DLTensor *offset,
                                  const DLTensor *mask, const DLTensor *bias, int64_t stride_h,
                                  int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                  int64_t dilation_h, int64_t dilation_w, int64_t groups,
                                  int64_t offset_groups, DLTensor *out);

/* Gradients of vo_deform_conv2d: grad is [N,Cout,Hout,Wout]; every output
 * (grad's dtype, shapes of input, weight, offset, mask and bias) is fully
 * overwritten. Without a mask (NULL), grad_mask is still
 * [N,offset_groups*kh*kw,Hout,Wout] and all zeros; without a bias, grad_bias
 * is still [Cout] and holds the sum of grad over N, Hout, Wout. The CPU result
 * is deterministic (no atomics) for a given thread count. */
VO_API vo_status vo_deform_conv2d_backward(
    const vo_context *ctx, const DLTensor *grad, const DLTensor *input, const DLTensor *weight,
    const DLTensor *offset, const DLTensor *mask, const DLTensor *bias, int64_t stride_h,
    int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
    int64_t groups, int64_t offset_groups, DLTensor *grad_input, DLTensor *grad_weight,
    DLTensor *grad_offset, DLTensor *grad_mask, DLTensor *grad_bias);

/* Multi-scale deformable attention (Deformable DETR's MSDeformAttn core;
 * torchvision main's deform_attn): value [N,S,M,D] holds the keys of L
 * levels, level l (rows H_l, W_l of spatial_shapes [L,2] int64) at keys
 * level_start_index[l] .. + H_l*W_l (row-major); sampling_loc
 * [N,Q,M,L,P,2] holds normalised (x, y) in [0, 1] (pixel centres at
 * (j + 0.5) / W), attn_weight [N,Q,M,L,P] the samples' weights (not
 * normalised here). out [N,Q,M*D] (value's dtype):
 *   out[n,q,m*D+d] = sum_l,p attn[n,q,m,l,p] * bilinear_l(value[n,.,m,d],
 *                    x = loc_x * W_l - 0.5, y = loc_y * H_l - 0.5),
 * corners off the level reading 0 (grid_sample's zeros padding,
 * align_corners=False); a NaN location samples 0. value, sampling_loc and
 * attn_weight share one float dtype (half types compute in float32), any
 * strides. spatial_shapes must sum H_l*W_l to S and level_start_index
 * hold each level's first key (checked before any output is written, on
 * the tensors' device). im2col_step (>= 1) is accepted for compatibility
 * and changes nothing. */
VO_API vo_status vo_deform_attn(const vo_context *ctx, const DLTensor *value,
                                const DLTensor *spatial_shapes, const DLTensor *level_start_index,
                                const DLTensor *sampling_loc, const DLTensor *attn_weight,
                                int64_t im2col_step, DLTensor *out);

/* Gradients of vo_deform_attn for grad_output [N,Q,M*D]: grad_value
 * [N,S,M,D], grad_sampling_loc [N,Q,M,L,P,2] and grad_attn_weight
 * [N,Q,M,L,P] (value's dtype) are fully overwritten. A sample outside
 * (-1, H_l) x (-1, W_l) in pixels, or at a NaN location, has zero
 * gradients. The CPU result is bit-identical for any thread count; the
 * device backends add grad_value atomically unless the context is
 * deterministic (vo_context_set_deterministic), when they give the CPU's
 * summation order. */
VO_API vo_status vo_deform_attn_backward(const vo_context *ctx, const DLTensor *value,
                                         const DLTensor *spatial_shapes,
                                         const DLTensor *level_start_index,
                                         const DLTensor *sampling_loc, const DLTensor *attn_weight,
                                         const DLTensor *grad_output, int64_t im2col_step,
                                         DLTensor *grad_value, DLTensor *grad_sampling_loc,
                                         DLTensor *grad_attn_weight);

/* Matrix NMS (SOLOv2; Paddle's matrix_nms) per image and class, with
 * padded outputs (no shape depends on the data, so a device never
 * synchronises). boxes [B,M,4] (x1, y1, x2, y2) of a float dtype, scores
 * [B,C,M] of any float dtype (read in the boxes' compute precision). Per
 * image b and class c != background_label (-1: none): the candidates are
 * the boxes with score > score_threshold, by score descending (ties: lower
 * box index first), the first nms_top_k of them (-1: all); candidate i's
 * decayed score is d_i * s_i with d_i = min(1, min over higher-ranked j of
 * exp((K_j^2 - X_ij^2) * gaussian_sigma) (use_gaussian) or (1 - X_ij) /
 * (1 - K_j)), X_ij their IoU (normalized = 0: the pixel convention, +1 per
 * side) and K_j the largest IoU of j with a candidate above it; a decay
 * that is not finite is ignored, but -inf. Kept: decayed score >
 * post_threshold; per image the keep_top_k (-1: all) highest decayed
 * scores over the classes (ties: lower class, then earlier candidate).
 * Outputs: dets [B,K,6] in the boxes' dtype, rows (class, decayed score,
 * x1, y1, x2, y2) by decayed score descending, zero past num[b]; index
 * [B,K] int64, b*M + box index, -1 past num[b]; num [B] int64. K is
 * keep_top_k when >= 0, else C * min(nms_top_k, M) (M for nms_top_k -1).
 * nms_top_k and keep_top_k >= -1, background_label >= -1, the thresholds
 * not NaN, gaussian_sigma finite. Float32, float16 and bfloat16 compute in
 * float32, float64 in float64. */
VO_API vo_status vo_matrix_nms_shape(const vo_context *ctx, const DLTensor *boxes,
                                     const DLTensor *scores, double score_threshold,
                                     double post_threshold, int64_t nms_top_k, int64_t keep_top_k,
                                     int use_gaussian, double gaussian_sigma,
                                     int64_t background_label, int normalized,
                                     vo_tensor_desc out[3]);
VO_API vo_status vo_matrix_nms(const vo_context *ctx, const DLTensor *boxes, const DLTensor *scores,
                               double score_threshold, double post_threshold, int64_t nms_top_k,
                               int64_t keep_top_k, int use_gaussian, double gaussian_sigma,
                               int64_t background_label, int normalized, DLTensor *dets,
                               DLTensor *index, DLTensor *num);

#ifdef __cplusplus
}
#endif

#endif /* VISIONOPS_VISIONOPS_H */
