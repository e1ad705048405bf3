/*
 * ps_roi_align's per-element math in the portable dialect: roi_align's
 * geometry and bins (kernels/roi_align.h, always aligned, so without the
 * 1x1 minimum), where output channel c, bin (ph, pw) reads input channel
 * (c*PH + ph)*PW + pw. The forward, fast (scatter) and deterministic
 * (gather) backward items of the CUDA kernels; the CPU plain path uses
 * roi_align's bin mean and scatter directly. Per-type bodies are
 * kernels/ps_roi_align.inc.
 */
#ifndef VISIONOPS_KERNELS_PS_ROI_ALIGN_H
#define VISIONOPS_KERNELS_PS_ROI_ALIGN_H

#include "kernels/roi_align.h"

/* The input channel output channel c's bin (ph, pw) reads: its
 * channel_mapping entry. */
VO_KFN int64_t vo_k_psa_channel(int64_t c, int64_t ph, int64_t pw, int64_t pooled_h,
                                int64_t pooled_w) {
  return (c * pooled_h + ph) * pooled_w + pw;
}

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/ps_roi_align.inc"
#include "kernels/dtype_end.h"
#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/ps_roi_align.inc"
#include "kernels/dtype_end.h"
#define VO_S_F16
#include "kernels/dtype_begin.h"
#include "kernels/ps_roi_align.inc"
#include "kernels/dtype_end.h"
#define VO_S_BF16
#include "kernels/dtype_begin.h"
#include "kernels/ps_roi_align.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_PS_ROI_ALIGN_H */
