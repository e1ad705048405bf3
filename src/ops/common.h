/*
 * Checks shared by the op-layer files (src/ops/).
 */
#ifndef VISIONOPS_OPS_COMMON_H
#define VISIONOPS_OPS_COMMON_H

#include "core/internal.h"

/* Argument `arg` is a floating tensor (float32/64, float16, bfloat16). */
vo_status vo_expect_float(const vo_exec *ex, int arg);
/* Argument `arg` has the dtype of argument `like`. */
vo_status vo_expect_same_dtype(const vo_exec *ex, int arg, int like);
/* Argument `arg` (rois, scores, a second box set, a gradient) is a floating
 * tensor of any precision beside data tensor `like` (SPEC section 5). */
vo_status vo_expect_float_companion(const vo_exec *ex, int arg, int like);
/* The same beside a data tensor that is not an argument of its own (a list
 * item, e.g. "features[0]"), named like_name, of dtype like_dtype. */
vo_status vo_expect_float_beside(const vo_exec *ex, int arg, const char *like_name,
                                 vo_dtype like_dtype);
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
/* The arguments every RoI op shares: rois [K,5] of any floating dtype beside
 * argument `like` (features or grad, which set the precision), spatial_scale
 * finite and > 0, pooled height and width >= 1. */
vo_status vo_check_roi_args(const vo_exec *ex, int rois_arg, int like, int scale_arg, int ph_arg,
                            int pw_arg);
/* The backward arguments both position-sensitive ops share: grad (arg 0)
 * [K, C/(PH*PW), PH, PW] float, rois (arg 1), channel_mapping int32 of
 * grad's shape, the RoI arguments, and the grad_input sizes from n_arg on
 * (into sizes; C a multiple of PH*PW); declares the checks of the rois and
 * of channel_mapping holding what the forward writes. */
vo_status vo_check_ps_backward_args(vo_exec *ex, int mapping_arg, int scale_arg, int ph_arg,
                                    int pw_arg, int n_arg, int64_t sizes[4]);
/* Int argument `arg` is <= max; `why` says what the bound protects. */
vo_status vo_expect_int_at_most(const vo_exec *ex, int arg, int64_t max, const char *why);
/* sampling_ratio (int argument) is at most VO_K_MAX_SAMPLING_RATIO. */
vo_status vo_check_sampling_ratio(const vo_exec *ex, int sampling_arg);
/* The map a RoI is pooled from, as the roi_align family's geometry sees it:
 * coordinates * spatial_scale - offset, sizes at least 1 with min_size_1. */
typedef struct vo_roi_map {
  double spatial_scale, offset;
  int min_size_1;
  int64_t sampling_ratio, pooled_height, pooled_width, height, width;
} vo_roi_map;
/* Declares, for adaptive sampling (sampling_ratio <= 0: the caller decides),
 * that every RoI's grid of samples per bin on map m stays within a bound set
 * by the map (see common.c); declare it after the rois check, which makes
 * the coordinates finite. NULL (message set) past VO_MAX_DATA_CHECKS. */
vo_k_check *vo_declare_roi_grid_check(vo_exec *ex, int rois_arg, const vo_roi_map *m);
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
