/*
 * Checks shared by the op-layer files (src/ops/).
 */
#ifndef VISIONOPS_OPS_COMMON_H
#define VISIONOPS_OPS_COMMON_H

#include "core/internal.h"

/* The largest float f with f <= t, so that for any float x,
 * x > f  <=>  (double)x > t (an NMS op's float comparison with its
 * threshold decides as the comparison in double would). */
float vo_nms_threshold_f32(double t);

/* Argument `arg` is a floating tensor (float32/64, float16, bfloat16). */
vo_status vo_expect_float(const vo_exec *ex, int arg);
/* Argument `arg` is a floating or an integer tensor (boxes, which
 * torchvision's box ops take in any of them). */
vo_status vo_expect_float_or_int(const vo_exec *ex, int arg);
/* Argument `arg` has the dtype of argument `like`. */
vo_status vo_expect_same_dtype(const vo_exec *ex, int arg, int like);
/* Argument `arg` (rois, scores, a second box set, a gradient) is a floating
 * tensor of any precision beside data tensor `like` (SPEC section 5). */
vo_status vo_expect_float_companion(const vo_exec *ex, int arg, int like);
/* The same beside a data tensor that is not an argument of its own (a list
 * item, e.g. "features[0]") of dtype like_dtype, named by the printf format
 * like_name and its arguments (formatted only for the message). */
vo_status vo_expect_float_beside(const vo_exec *ex, int arg, vo_dtype like_dtype,
                                 const char *like_name, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Argument `arg` has the 4-D shape dims (all known; vo_expect_shape). */
vo_status vo_expect_dims4(const vo_exec *ex, int arg, const int64_t dims[4]);
/* Argument `arg` has dtype `dt`. */
vo_status vo_expect_dtype(const vo_exec *ex, int arg, vo_dtype dt);
/* Argument `arg` (a float) is not NaN / not infinite. */
vo_status vo_expect_not_nan(const vo_exec *ex, int arg);
vo_status vo_expect_finite(const vo_exec *ex, int arg);
/* Int argument `arg` is >= min. */
vo_status vo_expect_int_at_least(const vo_exec *ex, int arg, int64_t min);
/* a*b*c*d for sizes >= 0, or -1 when it overflows int64. */
int64_t vo_product4(int64_t a, int64_t b, int64_t c, int64_t d);
/* An output of shape dims (4-D) must have at most 2^63 - 1 elements;
 * `what` names it in the error ("output", "grad_input"). */
vo_status vo_expect_fits4(const vo_exec *ex, const char *what, const int64_t dims[4]);
/* A backward's grad_input sizes: the four consecutive int arguments from
 * `first` (batch_size, channels, height, width), each >= 0, into sizes. */
vo_status vo_expect_input_sizes(const vo_exec *ex, int first, int64_t sizes[4]);
/* Declares a check of the values of tensor argument `arg` (shape already
 * checked) of kind VO_K_CHECK_* (kernels/data_checks.h), which vo_call runs
 * before the kernel on any device, in declaration order, and vo_infer never;
 * the caller fills the kind's parameters into the result. NULL (message
 * set) past VO_MAX_DATA_CHECKS. */
vo_k_check *vo_declare_data_check(vo_exec *ex, int kind, int arg);
/* Declares the check of RoIs [K,5]: every batch index an integer in [0, n),
 * every coordinate finite (kernels index with them). */
vo_status vo_declare_rois_check(vo_exec *ex, int rois_arg, int64_t n);
/* The same for rotated RoIs [K,6] (batch, cx, cy, w, h, angle): also w, h
 * >= 0 (negative sizes are errors, as for the axis-aligned ops). */
vo_status vo_declare_rotated_rois_check(vo_exec *ex, int rois_arg, int64_t n);
/* Declares the check of rotated boxes [K,5] (cx, cy, w, h, angle): every
 * value finite, w and h >= 0 (the rotated ops' geometry assumes both). */
vo_status vo_declare_rboxes_check(vo_exec *ex, int arg);
/* Declares deform_attn's check of its levels: spatial_shapes (argument
 * shapes_arg, [L,2] int64, L >= 1) rows H, W >= 0 whose H * W sum to `keys`,
 * and level_start_index (starts_arg, [L] int64) each level's first key. */
vo_status vo_declare_levels_check(vo_exec *ex, int shapes_arg, int starts_arg, int64_t keys);
/* Int argument `arg` is <= max; `why` says what the bound protects. */
vo_status vo_expect_int_at_most(const vo_exec *ex, int arg, int64_t max, const char *why);
/* sampling_ratio (int argument) is at most VO_K_MAX_SAMPLING_RATIO. */
vo_status vo_check_sampling_ratio(const vo_exec *ex, int sampling_arg);
/* The map a RoI is pooled from, as the roi_align family's geometry sees it:
 * coordinates * spatial_scale - offset, sizes at least 1 with min_size_1. */
typedef struct vo_roi_map {
  double spatial_scale, offset;
  int min_size_1;
  int rotated; /* rois [K,6]: the size is (w, h) * spatial_scale, any angle */
  int64_t sampling_ratio, pooled_height, pooled_width, height, width;
} vo_roi_map;
/* Declares, for adaptive sampling (sampling_ratio <= 0: the caller decides),
 * that every RoI's grid of samples per bin on map m stays within a bound set
 * by the map (see common.c); declare it after the rois check, which makes
 * the coordinates finite. NULL (message set) past VO_MAX_DATA_CHECKS. */
vo_k_check *vo_declare_roi_grid_check(vo_exec *ex, int rois_arg, const vo_roi_map *m);
/* Where a RoI op's arguments stand (input or grad is argument 0, rois 1):
 * -1 for an argument the op does not have. */
typedef struct vo_roi_layout {
  int backward;
  int scale, pooled_height, pooled_width; /* spatial_scale, pooled sizes */
  int sampling;                           /* sampling_ratio (the roi_align family) */
  int aligned;    /* aligned; -1 with sampling: always aligned (ps_roi_align) */
  int batch_size; /* backward: batch_size, then channels, height, width */
  int index;      /* backward: int32 tensor of grad's shape (argmax, channel_mapping) */
  int grouped;    /* position-sensitive: C is a multiple of PH*PW, pooled to C/(PH*PW) */
  int int32_out;  /* forward: output 1 is int32 of output 0's shape (argmax, channel_mapping) */
  int rotated;    /* rois [K,6] (batch, cx, cy, w, h, angle) instead of [K,5] */
} vo_roi_layout;
/* The four RoI ops' layouts, [0] the forward, [1] the backward. */
extern const vo_roi_layout vo_roi_align_layouts[2], vo_ps_roi_align_layouts[2],
    vo_roi_pool_layouts[2], vo_ps_roi_pool_layouts[2], vo_roi_align_rotated_layouts[2];
/* What a RoI op checks and fills itself, once the shared checks passed:
 * sizes are the input's N, C, H, W. */
typedef vo_status (*vo_roi_finish_fn)(vo_exec *ex, const vo_roi_layout *l, const int64_t sizes[4]);
/* A RoI op's checks. Forward: input [N,C,H,W] float, rois [K,5] of any
 * floating dtype beside it ([K,6] with l->rotated), spatial_scale finite and > 0 (and in float32
 * below float64), pooled sizes >= 1, C grouped with l->grouped, the output
 * [K, C or C/(PH*PW), PH, PW] fits. Backward: grad [K, C or C/(PH*PW), PH,
 * PW] float, the same RoI arguments, the grad_input sizes (C grouped with
 * l->grouped), the index tensor int32 of grad's shape. Both: declares the
 * rois check (and, grouped backward, the channel_mapping check), checks the
 * sampling (declaring the adaptive grid check), sets ex->dtype and the
 * outputs, then runs finish. */
vo_status vo_check_roi_op(vo_exec *ex, const vo_roi_layout *l, vo_roi_finish_fn finish);
/* Defines a RoI op's two check entry points (vo_check_<name> and
 * vo_check_<name>_backward, as ops.def names them) on its layouts and its
 * finish. */
#define VO_ROI_OP_CHECKS(name, finish)                           \
  vo_status vo_check_##name(vo_exec *ex) {                       \
    return vo_check_roi_op(ex, &vo_##name##_layouts[0], finish); \
  }                                                              \
  vo_status vo_check_##name##_backward(vo_exec *ex) {            \
    return vo_check_roi_op(ex, &vo_##name##_layouts[1], finish); \
  }
/* The parameters roi_align and ps_roi_align (base), roi_pool and
 * ps_roi_pool (base; argmax left NULL) share, from the arguments and the
 * input sizes; input or grad is argument 0 per l->backward. */
void vo_fill_roi_align_params(vo_exec *ex, const vo_roi_layout *l, const int64_t sizes[4],
                              vo_roi_align_params *p);
void vo_fill_roi_pool_params(vo_exec *ex, const vo_roi_layout *l, const int64_t sizes[4],
                             vo_roi_pool_params *p);
/* The typed wrappers' boxing of a RoI op's leading arguments: data (input
 * or grad), rois, with has_index the index tensor (argmax,
 * channel_mapping), spatial_scale, pooled sizes. Returns how many it wrote. */
int vo_box_roi_args(vo_value *args, const DLTensor *data, const DLTensor *rois, int has_index,
                    const DLTensor *index, double spatial_scale, int64_t pooled_height,
                    int64_t pooled_width);
/* Boxes count int arguments (e.g. a backward's grad_input sizes); returns
 * count. */
int vo_box_ints(vo_value *args, const int64_t *values, int count);
/* The typed wrappers of the pooling RoI ops (roi_pool, ps_roi_pool), whose
 * arguments are alike: out and an int32 index (argmax, channel_mapping);
 * the backward's grad_input sizes are batch_size, channels, height, width. */
vo_status vo_infer_roi_pooling(const vo_context *ctx, vo_op_id op, const DLTensor *input,
                               const DLTensor *rois, double spatial_scale, int64_t pooled_height,
                               int64_t pooled_width, vo_tensor_desc out[2]);
vo_status vo_call_roi_pooling(const vo_context *ctx, vo_op_id op, const DLTensor *input,
                              const DLTensor *rois, double spatial_scale, int64_t pooled_height,
                              int64_t pooled_width, DLTensor *out, DLTensor *index);
vo_status vo_call_roi_pooling_backward(const vo_context *ctx, vo_op_id op, const DLTensor *grad,
                                       const DLTensor *rois, const DLTensor *index,
                                       double spatial_scale, int64_t pooled_height,
                                       int64_t pooled_width, const int64_t sizes[4],
                                       DLTensor *grad_input);
/* The arguments every NMS op shares (nms, nms_rotated and their batched
 * forms): boxes [N, box_columns] float (argument 0), scores [N] of any
 * floating dtype (1), idxs [N] int64 (idxs_arg; < 0 without), the IoU
 * threshold not NaN (threshold_arg). Sets ex->dtype (the boxes'), the
 * outputs keep int64 [N] and num_kept int64 [] and ex->p.nms, all but
 * iou_threshold_f32 and angle_scale (the op's own). */
/* The NMS ops' tensors: boxes [N, box_columns] float, scores [N] of any
 * floating dtype beside them, idxs [N] int64 (idxs_arg >= 0: the batched
 * ops). */
vo_status vo_expect_nms_tensors(vo_exec *ex, int box_columns, int idxs_arg);
vo_status vo_check_nms_args(vo_exec *ex, int box_columns, int idxs_arg, int threshold_arg);
/* Output description k: dtype, device of the call, shape. */
void vo_set_output(vo_exec *ex, int k, vo_dtype dt, int ndim, const int64_t *shape);
/* Position-sensitive RoI ops: the channel count `c` (of tensor argument
 * `arg`, or int argument `arg` itself) is a multiple of ph * pw. */
vo_status vo_check_channel_groups(const vo_exec *ex, int arg, int64_t c, int64_t ph, int64_t pw);
/* Position-sensitive RoI ops: declares that a channel_mapping
 * [K,C/(PH*PW),PH,PW] (int32, shape already checked) holds what the forward
 * writes, input channel (c*PH + ph)*PW + pw at [k, c, ph, pw]. */
vo_status vo_declare_channel_mapping_check(vo_exec *ex, int arg);

#endif /* VISIONOPS_OPS_COMMON_H */
