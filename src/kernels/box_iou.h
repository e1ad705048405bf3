/*
 * box_iou, generalized_box_iou, distance_box_iou and complete_box_iou per
 * pair of boxes (x1, y1, x2, y2) in the portable dialect (kernels/compat.h):
 * the forward value in torchvision's operation order (torchvision/ops/
 * boxes.py, each product rounded on its own) and its gradient with respect
 * to both boxes as torchvision's autograd computes it. Run by the CPU
 * backend (cpu/box_iou.c, whose AVX2 rows compile the same functions for
 * that ISA) and by the CUDA kernels (cuda/box_iou.cu). Per compute type
 * (float, double) bodies: kernels/box_iou.inc.
 */
#ifndef VISIONOPS_KERNELS_BOX_IOU_H
#define VISIONOPS_KERNELS_BOX_IOU_H

#include "kernels/compat.h"

/* The variants: the values of core/internal.h's vo_iou_kind (cpu/box_iou.c
 * checks they agree). */
#define VO_K_IOU_PLAIN 0
#define VO_K_IOU_GENERALIZED 1
#define VO_K_IOU_DISTANCE 2
#define VO_K_IOU_COMPLETE 3

/* torchvision's 4 / (torch.pi ** 2), a Python double, rounded to the
 * compute type where it meets a tensor. Without float64 (VO_K_FP64 0) the
 * literals would be float and the quotient float's: there, the float the
 * double rounds to. */
#if VO_K_FP64
#define VO_K_IOU_FOUR_OVER_PI2 (4.0 / (3.14159265358979323846 * 3.14159265358979323846))
#else
#define VO_K_IOU_FOUR_OVER_PI2 0x1.9f02f6p-2f
#endif

/* Only the compute types: storage is each backend's to read. */
#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/box_iou.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/box_iou.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_BOX_IOU_H */
