/*
 * Rounded-bin RoI geometry shared by roi_pool and ps_roi_pool (portable
 * dialect, kernels/compat.h): a RoI's corners scaled and rounded half away
 * from zero in the compute type, saturated to +-limit; its size (at least
 * one pixel) split into pooled_height x pooled_width bins; bin i spans
 * [floor(i * bin), ceil((i + 1) * bin)) pixels from the rounded start,
 * clamped into [0, limit] of the map. Instantiated per compute type:
 * vo_k_rounded_roi_f32 / _f64 and the functions below with those suffixes.
 */
#ifndef VISIONOPS_KERNELS_ROUNDED_BINS_H
#define VISIONOPS_KERNELS_ROUNDED_BINS_H

#include "kernels/compat.h"

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/rounded_bins.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/rounded_bins.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_ROUNDED_BINS_H */
