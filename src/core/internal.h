/*
 * Internal interfaces shared by the op layer, the dispatcher and the
 * backends: tensor views, the context, the per-call execution record with
 * each op's typed parameters, the kernel table and error helpers.
 * Included from C and from CUDA C (.cu) files.
 */
#ifndef VISIONOPS_INTERNAL_H
#define VISIONOPS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/data_checks.h"
#include "visionops/visionops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Outputs and tensor arguments one op may have. */
#define VO_MAX_ARGS 16
#define VO_MAX_OUTPUTS VO_MAX_LIST

/* Default bound on temporary memory per call. */
#define VO_DEFAULT_WORKSPACE_LIMIT ((size_t)256 << 20)

/* ------------------------------------------------------------- dtypes */

typedef enum vo_dtype {
  VO_DTYPE_INVALID = 0,
  VO_F32,
  VO_F64,
  VO_F16,
  VO_BF16,
  VO_I64,
  VO_I32,
  VO_U8,
  VO_BOOL,
  VO_I16,
  VO_I8
} vo_dtype;

vo_dtype vo_dtype_from_dl(DLDataType t);
DLDataType vo_dtype_to_dl(vo_dtype d);
const char *vo_dtype_name(vo_dtype d);
size_t vo_dtype_size(vo_dtype d);
/* Any DLPack dtype by name ("complex64", "bool", "uint16", "float32x4"), also
 * those the library has no vo_dtype for: for messages about unsupported
 * dtypes. Writes into buf and returns it. */
const char *vo_dl_dtype_str(DLDataType t, char *buf, size_t size);
static inline int vo_dtype_is_float(vo_dtype d) {
  return d == VO_F32 || d == VO_F64 || d == VO_F16 || d == VO_BF16;
}
/* The precision a floating dtype computes in: float64 natively, float32 for
 * float32 and the half types (SPEC section 5). */
static inline vo_dtype vo_compute_dtype(vo_dtype d) { return d == VO_F64 ? VO_F64 : VO_F32; }
/* Integer dtypes (bool excluded): torchvision's IoU ops accept such boxes. */
static inline int vo_dtype_is_int(vo_dtype d) {
  return d == VO_I64 || d == VO_I32 || d == VO_I16 || d == VO_I8 || d == VO_U8;
}

/* ------------------------------------------------------------- views */

/* A validated, normalised DLTensor: strides always present and counted in
 * elements. `data` and `byte_offset` are DLPack's, kept apart: on backends
 * whose handles are addresses (vo_backend.addressable: the CPU, CUDA) a
 * kernel takes the first element's address from vo_view_addr; on others
 * (OpenCL: `data` is a cl_mem) the backend passes handle and offset to its
 * kernels. Kernels see only views. */
typedef struct vo_view {
  void *data; /* DLTensor.data: an address or a device handle */
  uint64_t byte_offset;
  int ndim;
  int64_t shape[VO_MAX_DIMS];
  int64_t stride[VO_MAX_DIMS];
  int64_t numel;
  vo_dtype dtype;
  DLDevice device;
} vo_view;

/* The first element's address, for backends whose handles are addresses. */
static inline void *vo_view_addr(const vo_view *v) {
  return v->data ? (void *)((char *)v->data + v->byte_offset) : (void *)0;
}

/* 1 if the view is dense row-major (size-1 dimensions' strides ignored). */
int vo_view_is_contiguous(const vo_view *v);

/* ------------------------------------------------------------- context */

/* The backends, in src/backends.def's order: VO_BACKEND_cpu, ... */
typedef enum vo_backend_id {
#define VO_BACKEND(name, device_type, option) VO_BACKEND_##name,
#include "backends.def"
#undef VO_BACKEND
  VO_NUM_BACKENDS
} vo_backend_id;

struct vo_context {
  int num_threads;               /* 0: all */
  void *queues[VO_NUM_BACKENDS]; /* per backend; NULL: the backend's default queue */
  vo_allocator allocator;
  int has_allocator;
  int deterministic;
  vo_isa isa;
  size_t workspace_limit; /* never 0: the defaults and the setter give VO_DEFAULT_WORKSPACE_LIMIT */
  vo_device_checks device_checks;
  /* Deferred checks still pending (core/data_checks.c); allocated when the
   * mode is first set to VO_DEVICE_CHECKS_DEFERRED, so a call that takes
   * the context as const reaches it through the pointer. */
  struct vo_deferred_checks *deferred;
};

/* The defaults used when a caller passes a NULL context. */
const vo_context *vo_default_context(void);

/* Threads a CPU kernel may use: ctx's count, 1 inside an outer parallel
 * region, never more than `work_items` (at least 1). */
int vo_cpu_threads(const vo_context *ctx, int64_t work_items);

/* ISA the CPU kernels should use under ctx: the lower of the override and
 * what the CPU supports. */
vo_isa vo_cpu_effective_isa(const vo_context *ctx);
const char *vo_isa_name(vo_isa isa);

/* Temporary memory on `device`, through the context's allocator or the
 * device's default. vo_workspace_alloc sets the error message on failure. */
void *vo_workspace_alloc(const vo_context *ctx, DLDevice device, size_t size, const char *op);
void vo_workspace_free(const vo_context *ctx, DLDevice device, void *ptr);

/* ------------------------------------------------------------- ops */

typedef enum vo_op_id {
#define VO_OP(name, kernel, schema, backward, shape_rule) VO_OP_##name,
#include "ops/ops.def"
#undef VO_OP
  VO_NUM_OPS
} vo_op_id;

typedef enum vo_iou_kind {
  VO_IOU_PLAIN,
  VO_IOU_GENERALIZED,
  VO_IOU_DISTANCE,
  VO_IOU_COMPLETE
} vo_iou_kind;

/* nms, batched_nms, nms_rotated and batched_nms_rotated. */
typedef struct vo_nms_params {
  const vo_view *boxes;  /* [N,4] float; rotated: [N,5] (cx, cy, w, h, angle) */
  const vo_view *scores; /* [N] any floating dtype */
  const vo_view *idxs;   /* [N] int64, NULL for the unbatched ops */
  double iou_threshold;
  /* The float threshold whose float comparisons decide as double ones: the
   * largest float <= iou_threshold (nms: IoU > it), the smallest float >=
   * it (nms_rotated: IoU >= it). */
  float iou_threshold_f32;
  double angle_scale;      /* rotated: vo_rotated_angle_scale of the flags */
  const vo_view *keep;     /* out: int64 [N], contiguous */
  const vo_view *num_kept; /* out: int64 [], contiguous */
} vo_nms_params;

/* batched_nms_padded and onnx_nms: NMS per (image, class) problem (per
 * image with class_agnostic), then per image the best max_per_image across
 * classes (padded) or every selection in (image, class) order (onnx). */
typedef struct vo_nms_padded_params {
  const vo_view *boxes;                      /* [B, M, 4], or [B, M, C, 4] (per_class_boxes) */
  const vo_view *scores;                     /* [B, C, M] any floating dtype */
  int64_t batches, boxes_per_image, classes; /* B, M, C */
  /* The (image, class) problems: B * C, or B when class_agnostic; 0 when
   * there are no boxes (M = 0), so that empty scores with huge B and C
   * cost nothing (B * C may even overflow then). */
  int64_t problems;
  /* The candidates a problem can have: M, or C * M class-agnostic (0
   * without images, where C * M may overflow). */
  int64_t items;
  int per_class_boxes, class_agnostic, onnx;
  int kind, format; /* VO_K_NP_* (kernels/nms_padded.h); the torchvision format */
  /* Suppression: IoU > iou_threshold in double for float64 boxes, else
   * IoU > iou_threshold_f32 in float (the op's rounding of the threshold). */
  double iou_threshold;
  float iou_threshold_f32;
  /* Candidates: (double)score > score_threshold (the op's rounding of its
   * threshold already applied), or every box when !has_score_threshold. */
  int has_score_threshold;
  double score_threshold;
  float score_threshold_f32;
  int64_t max_candidates; /* per problem, after the score sort (pre-NMS top-k) */
  int64_t max_selected;   /* per problem */
  int64_t max_per_image;  /* padded */
  const vo_view *keep, *labels, *scores_out, *num; /* padded: [B, K], [B, K], [B, K], [B] */
  const vo_view *selected, *num_selected;          /* onnx: [B * C * max_selected, 3], [] */
} vo_nms_padded_params;
/* soft_nms and batched_soft_nms (kernels/soft_nms.h has the per-pair math). */
typedef struct vo_soft_nms_params {
  const vo_view *boxes;  /* [N,4] float (x1, y1, x2, y2) */
  const vo_view *scores; /* [N] any floating dtype */
  const vo_view *idxs;   /* [N] int64, NULL for soft_nms */
  int method;            /* VO_K_SOFT_NMS_HARD, _LINEAR, _GAUSSIAN */
  double iou_threshold, sigma, min_score, offset;
  /* The float forms for float32 compute: thresholds as the smallest float
   * >= the value (IoU >= it and score < it then decide as in double),
   * sigma and offset rounded to nearest. */
  float iou_threshold_f32, min_score_f32, sigma_f32, offset_f32;
  const vo_view *dets;     /* out: [N,5] the boxes' dtype, contiguous */
  const vo_view *keep;     /* out: int64 [N], contiguous */
  const vo_view *num_kept; /* out: int64 [], contiguous */
} vo_soft_nms_params;

/* box_iou and its generalized / distance / complete variants. */
typedef struct vo_pairwise_iou_params {
  const vo_view *a;   /* [N,4] float or integer; ex->dtype is the compute dtype */
  const vo_view *b;   /* [M,4] same dtype */
  const vo_view *out; /* out: [N,M] float64 for float64 boxes, else float32; contiguous */
  vo_iou_kind kind;
  double eps; /* distance/complete only */
} vo_pairwise_iou_params;

/* box_iou_backward and its variants: the gradient of the pairwise op with
 * respect to both box sets (src/kernels/box_iou.h has the per-pair math). */
typedef struct vo_pairwise_iou_backward_params {
  const vo_view *grad;   /* [N,M], the forward's output dtype or the boxes' */
  const vo_view *a;      /* [N,4] */
  const vo_view *b;      /* [M,4] */
  const vo_view *grad_a; /* out: [N,4], contiguous */
  const vo_view *grad_b; /* out: [M,4], contiguous */
  vo_iou_kind kind;
  double eps; /* distance/complete only */
} vo_pairwise_iou_backward_params;

/* roi_align and roi_align_backward: one geometry, two directions. */
typedef struct vo_roi_align_params {
  const vo_view *input;                /* forward: [N,C,H,W] float; NULL for the backward */
  const vo_view *grad;                 /* backward: [K,C,PH,PW] float; NULL for the forward */
  const vo_view *rois;                 /* [K,5] same dtype: (batch_index, x1, y1, x2, y2) */
  double spatial_scale;                /* finite, > 0 */
  int64_t pooled_height, pooled_width; /* >= 1 */
  int64_t sampling_ratio;              /* <= 0: adaptive, ceil(roi size / pooled size) */
  int aligned;
  int64_t batch_size, channels, height, width; /* N, C, H, W of the input */
  const vo_view *out; /* out, contiguous: forward [K,C,PH,PW], backward [N,C,H,W] */
} vo_roi_align_params;

/* roi_align_rotated and its backward: roi_align's parameters (base.rois is
 * [K,6]: batch_index, cx, cy, w, h, angle) and the angle's scale to radians,
 * counter-clockwise (clockwise and radians folded in). */
typedef struct vo_roi_align_rotated_params {
  vo_roi_align_params base;
  double angle_scale;
} vo_roi_align_rotated_params;

/* roi_pool and roi_pool_backward. */
typedef struct vo_roi_pool_params {
  const vo_view *input;                /* forward: [N,C,H,W] float; NULL for the backward */
  const vo_view *grad;                 /* backward: [K,C,PH,PW] float; NULL for the forward */
  const vo_view *argmax;               /* backward: [K,C,PH,PW] int32, -1 or in [0, H*W) */
  const vo_view *rois;                 /* [K,5] same dtype: (batch_index, x1, y1, x2, y2) */
  double spatial_scale;                /* finite, > 0 */
  int64_t pooled_height, pooled_width; /* >= 1 */
  int64_t batch_size, channels, height, width; /* N, C, H, W of the input; H*W <= 2^31 */
  const vo_view *out;        /* out, contiguous: forward [K,C,PH,PW], backward [N,C,H,W] */
  const vo_view *argmax_out; /* forward out: int32 [K,C,PH,PW], contiguous (NULL data: omitted);
                                NULL backward */
} vo_roi_pool_params;

/* ps_roi_align and ps_roi_align_backward: roi_align's geometry with
 * aligned = 1 (base.channels is the input's C; base.out is the forward's
 * [K,C/(PH*PW),PH,PW] output or the backward's [N,C,H,W] grad_input). Output
 * channel c, bin (ph, pw) reads input channel (c*PH + ph)*PW + pw. */
typedef struct vo_ps_roi_align_params {
  vo_roi_align_params base;
  int64_t channels_out;           /* C / (PH*PW) */
  const vo_view *channel_mapping; /* int32 [K,C/(PH*PW),PH,PW]: forward output (NULL data:
                                     omitted), backward input */
} vo_ps_roi_align_params;

/* ps_roi_pool and ps_roi_pool_backward (rounded bins, mean pooling):
 * roi_pool's geometry without argmax (base.argmax and base.argmax_out are
 * NULL; base.grad is [K,C/(PH*PW),PH,PW], base.out the forward's
 * [K,C/(PH*PW),PH,PW] output or the backward's [N,C,H,W] grad_input). */
typedef struct vo_ps_roi_pool_params {
  vo_roi_pool_params base;
  int64_t channels_out;           /* C / (PH*PW) */
  const vo_view *channel_mapping; /* int32: forward output, backward input */
} vo_ps_roi_pool_params;

/* multi_scale_roi_align and its backward: FPN level per RoI, then roi_align
 * on that level. */
typedef struct vo_multi_scale_roi_align_params {
  const vo_view *features; /* [num_levels] of [N,C,H_l,W_l]; backward: shapes only */
  int num_levels;
  const double *scales; /* [num_levels], halving from level to level */
  int64_t first_level;  /* -log2(scales[0]): the FPN level of features[0] */
  const vo_view *rois;  /* [K,5] */
  const vo_view *grad;  /* backward: [K,C,PH,PW]; NULL for the forward */
  int64_t pooled_height, pooled_width, sampling_ratio;
  int64_t canonical_scale, canonical_level;
  int aligned;
  const vo_view *out; /* forward: [K,C,PH,PW]; backward: [num_levels] like features */
} vo_multi_scale_roi_align_params;

/* deform_conv2d and deform_conv2d_backward (sizes as in SPEC section 3). */
typedef struct vo_deform_conv2d_params {
  const vo_view *input;  /* [N,Cin,H,W] float */
  const vo_view *weight; /* [Cout,Cin/groups,kh,kw] */
  const vo_view *offset; /* [N,2*og*kh*kw,Hout,Wout] */
  const vo_view *mask;   /* [N,og*kh*kw,Hout,Wout], NULL without a mask */
  const vo_view *bias;   /* [Cout], NULL without a bias */
  const vo_view *grad;   /* backward: [N,Cout,Hout,Wout]; NULL for the forward */
  int64_t batch, in_channels, height, width, out_channels, kernel_h, kernel_w;
  int64_t out_h, out_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  int64_t groups, offset_groups;
  /* Outputs, contiguous: forward out [N,Cout,Hout,Wout]; the backward's five
   * gradients (grad_input .. grad_bias), NULL in the forward. */
  const vo_view *out;
  const vo_view *grad_input, *grad_weight, *grad_offset, *grad_mask, *grad_bias;
} vo_deform_conv2d_params;

/* Checks of tensor values a call declares (at most this many). */
#define VO_MAX_DATA_CHECKS 4

/* One declared check of the values of tensor argument `arg`: what
 * kernels/data_checks.h checks and with which parameters. The op's check
 * function declares it (ops/common.h), vo_call runs it before the kernel
 * (core/data_checks.c), vo_infer never. */
typedef struct vo_data_check {
  int arg;
  int arg2; /* levels: the second tensor argument (level_start_index); unused otherwise */
  vo_k_check check;
} vo_data_check;

/* The argument whose data a check's predicate gets as data2: arg2 for the
 * levels kind, the checked tensor itself (unread) for the others. */
static inline int vo_data_check_second(const vo_data_check *d) {
  return d->check.kind == VO_K_CHECK_LEVELS ? d->arg2 : d->arg;
}

/* Everything about one call, built by the dispatcher and the op's check
 * function, read by the kernel. */
typedef struct vo_exec {
  const vo_context *ctx;            /* never NULL */
  const struct vo_backend *backend; /* of the call's device (set by vo_call) */
  void *queue;                      /* ctx's queue on that backend (vo_context_queue) */
  vo_op_id op;
  const char *op_name;
  int num_args;
  vo_value args[VO_MAX_ARGS]; /* defaults filled in, ints promoted for floats */
  int num_list_inputs;
  int num_outputs; /* a list output's length is set by the check function */
  DLDevice device; /* of every tensor in the call */
  vo_dtype dtype;  /* compute dtype chosen by check */
  int num_data_checks;
  /* Bit k: output k may be omitted (NULL in vo_call), set by the check
   * function for an output the kernels can skip. An omitted output's view
   * has NULL data (a present one with elements never has), so a kernel
   * tests vo_view_addr(v) before writing it. */
  unsigned optional_outputs;
  union {
    vo_nms_params nms;
    vo_nms_padded_params nms_padded;
    vo_soft_nms_params soft_nms;
    vo_pairwise_iou_params iou;
    vo_pairwise_iou_backward_params iou_backward;
    vo_roi_align_params roi_align;
    vo_multi_scale_roi_align_params multi_scale_roi_align;
    vo_roi_pool_params roi_pool;
    vo_ps_roi_align_params ps_roi_align;
    vo_ps_roi_pool_params ps_roi_pool;
    vo_deform_conv2d_params deform_conv2d;
    vo_roi_align_rotated_params roi_align_rotated;
  } p;
  /* The arrays from here on are not zeroed before a call (vo_prepare zeroes
   * what comes before: 12.8 KB zeroed twice a Python call was a sixth of
   * its glue); only their first num_... entries are ever read. */
  vo_view inputs[VO_MAX_ARGS];             /* views of tensor args (index as in args; zeroed
                                              for the other args) */
  vo_view list_inputs[VO_MAX_LIST];        /* views of the op's one "Tensor[]" arg */
  vo_tensor_desc out_desc[VO_MAX_OUTPUTS]; /* set by the check function */
  vo_view outputs[VO_MAX_OUTPUTS];         /* set by the dispatcher */
  /* Value checks declared by the check function, in the order they run. */
  vo_data_check data_checks[VO_MAX_DATA_CHECKS];
} vo_exec;

/* Argument check + shape inference of one op: validates ex->args/inputs,
 * fills ex->out_desc, ex->dtype and ex->p (pointing output views into
 * ex->outputs, which the dispatcher fills afterwards). No data is touched. */
typedef vo_status (*vo_check_fn)(vo_exec *ex);

#define VO_OP(name, kernel, schema, backward, shape_rule) vo_status vo_check_##name(vo_exec *ex);
#include "ops/ops.def"
#undef VO_OP

/* Kernel: computes ex->outputs. Validation already happened; a kernel fails
 * only on resource errors (and then before writing any output). */
typedef vo_status (*vo_kernel_fn)(const vo_exec *ex);

/* ------------------------------------------------------------- registry */

typedef enum vo_arg_type {
  VO_ARG_TENSOR,
  VO_ARG_OPTIONAL_TENSOR,
  VO_ARG_FLOAT,
  VO_ARG_OPTIONAL_FLOAT, /* "float?": a float or None (VO_VALUE_NONE) */
  VO_ARG_INT,
  VO_ARG_BOOL,
  VO_ARG_TENSOR_LIST,
  VO_ARG_FLOAT_LIST
} vo_arg_type;

typedef struct vo_arg_spec {
  vo_arg_type type;
  char name[32];
  int has_default;
  vo_value default_value;
} vo_arg_spec;

/* One registered op: public info plus its schema, parsed once at init. */
typedef struct vo_op_entry {
  vo_op_info info;
  vo_arg_spec args[VO_MAX_ARGS];
  char output_names[VO_MAX_OUTPUTS][32];
  vo_check_fn check;
} vo_op_entry;

/* NULL before a successful init or for an out-of-range id. Initialises the
 * registry (once, thread-safe) on first use. */
const vo_op_entry *vo_registry_op(int index);

/* ------------------------------------------------------------- backends */

/* One backend: a const table of what the dispatcher, the context and the
 * tests need of it. src/backends.def lists them; each is defined in its own
 * folder (src/<name>/backend.*), or generated as a placeholder with only
 * name, device_type and not_built_reason when the build leaves it out. */
typedef struct vo_backend {
  const char *name;             /* "cpu", "cuda": also its folder under src/ */
  DLDeviceType device_type;     /* the DLPack device type it serves */
  const char *not_built_reason; /* non-NULL only in a placeholder */
  /* Whether DLTensor.data is an address (kernels then use vo_view_addr) or
   * a handle such as a cl_mem (kernels pass handle and byte_offset). */
  int addressable;
  const vo_kernel_fn *kernels; /* [VO_NUM_OPS]; NULL entries: op not implemented here */
  /* Once-only availability probe: returns nonzero when usable and writes
   * the reason / device description to detail. */
  int (*probe)(char *detail, size_t detail_size);
  /* Whether calls run on a queue (CUDA stream, OpenCL command queue) that
   * the context may set (vo_context_set_queue). A NULL queue means the
   * backend's default one (CUDA: the per-thread default stream). */
  int has_queues;
  /* Device memory, ordered on `queue`: allocation for workspaces (and the
   * tests' tensors), and blocking copies between host memory and device
   * memory at handle + byte offset. */
  void *(*alloc)(DLDevice device, size_t size, void *queue);
  void (*free)(DLDevice device, void *ptr, void *queue);
  vo_status (*copy_to_device)(DLDevice device, void *dst, uint64_t dst_offset, const void *src,
                              size_t size, void *queue);
  vo_status (*copy_to_host)(DLDevice device, void *dst, const void *src, uint64_t src_offset,
                            size_t size, void *queue);
  /* The declared value checks (ex->data_checks) on the device, for tensors
   * the host cannot read: for each check, the first bad item of its tensor
   * as kernels/data_checks.h defines it and its values, in found[i]
   * (found[i].first is VO_K_CHECK_NONE when none is bad; a tensor without
   * elements is left so). All at once, so one synchronisation serves the
   * call; the dispatcher reports the first check that found one, with the
   * message it forms. Run by vo_call before the kernel, so no output is
   * written for bad values. The CPU's runs vo_find_on_host_rows on its
   * threads; NULL lets the host read the tensors itself, serially. */
  vo_status (*check_data)(const struct vo_exec *ex, vo_k_check_found *found);
  /* The same checks queued on ex->queue without waiting
   * (VO_DEVICE_CHECKS_DEFERRED): check i's result goes to device memory
   * `results` (a workspace block) at byte `offset + i *
   * sizeof(vo_k_check_found)`, slots the hook fills first. NULL: the
   * dispatcher checks synchronously instead. */
  vo_status (*queue_data_checks)(const struct vo_exec *ex, void *results, uint64_t offset);
  /* Waits for all work queued on `device`, on any queue: deferred checks
   * queued on another thread's default queue are read after it. NULL when
   * the backend's default queue is one for all threads. */
  vo_status (*synchronize)(DLDevice device);
  /* The size in bytes of the buffer behind `handle` (a cl_mem), for a call
   * on `device` with queue `queue`: 1 with *size set, or 0 with the reason
   * in why (not a buffer of the queue's context). vo_call then refuses any
   * tensor reaching outside its buffer, which a kernel would read or write
   * out of bounds. Only for handle backends (addressable = 0); NULL where
   * the backend cannot tell (addresses: CPU, CUDA). */
  int (*buffer_size)(DLDevice device, void *handle, void *queue, uint64_t *size, char *why,
                     size_t why_size);
} vo_backend;

#define VO_BACKEND(name, device_type, option) extern const vo_backend vo_##name##_backend;
#include "backends.def"
#undef VO_BACKEND

/* Backend `id` (a vo_backend_id), built or a placeholder. */
const vo_backend *vo_backend_get(int id);
/* The backend serving `device_type` (built or a placeholder), or NULL when
 * visionops has none for it. */
const vo_backend *vo_backend_for_device(DLDeviceType device_type);
/* Its index in the list (vo_backend_id). */
int vo_backend_index(const vo_backend *backend);
/* Availability of a backend, probed once; a placeholder is unavailable with
 * its not-built reason. */
int vo_backend_available(const vo_backend *backend, const char **detail);
/* The queue ctx gives the backend serving `device`: NULL for the backend's
 * default (and on backends without queues). */
void *vo_context_queue(const vo_context *ctx, DLDevice device);

/* Runs ex's declared value checks in order (core/data_checks.c): on the
 * host for tensors it can read (kDLCPU, kDLCUDAHost), else through
 * ex->backend's check_data (skipped while ex->backend is NULL: no usable
 * backend, which vo_call reports). Fails with the first bad value's
 * message. */
vo_status vo_run_data_checks(const vo_exec *ex);
/* Drops ctx's deferred checks after waiting for them (vo_context_destroy). */
void vo_deferred_checks_destroy(vo_context *ctx);
/* The first bad item of rows [r0, r1) of check c's tensor t (t2: the
 * check's second tensor), read on the host: found->first and its values
 * set, or found left alone when none is bad (core/data_checks.c). */
void vo_find_on_host_rows(const vo_view *t, const vo_view *t2, const vo_k_check *c, int64_t r0,
                          int64_t r1, vo_k_check_found *found);

/* ------------------------------------------------------------- errors */

/* Sets this thread's error message (printf-style) and returns status. */
vo_status vo_fail(vo_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void vo_clear_error(void);
/* "[3, 4]" into buf. */
const char *vo_shape_str(const int64_t *shape, int ndim, char *buf, size_t size);

/* Shape check helpers for check functions: the view has rank ndim and each
 * dims[i] >= 0 matches (-1 means any). Fails with
 * "<op>: <arg> must have shape [<what>], got [..]", `what` a printf format
 * of the arguments after it, formatted only then (a successful call's
 * checks format nothing). */
vo_status vo_expect_shape(const vo_exec *ex, int arg, int ndim, const int64_t *dims,
                          const char *what, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* Name of argument `arg` of ex's op in its schema. */
const char *vo_arg_name(const vo_exec *ex, int arg);

#ifdef __cplusplus
}
#endif

#endif /* VISIONOPS_INTERNAL_H */
