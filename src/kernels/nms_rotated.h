/*
 * nms_rotated's suppression test in the portable dialect (kernels/compat.h):
 * a rotated box of kernels/box_iou_rotated.h with its reach, and whether a
 * kept box suppresses a later candidate (IoU >= the threshold), optionally
 * rejecting pairs proven disjoint before the polygon IoU. Run by the CPU's greedy
 * pass (cpu/nms_rotated.c) and the CUDA and OpenCL mask kernels
 * (cuda/nms_rotated.cu, opencl/nms_rotated.cl). Per compute type (float,
 * double) bodies: kernels/nms_rotated.inc.
 */
#ifndef VISIONOPS_KERNELS_NMS_ROTATED_H
#define VISIONOPS_KERNELS_NMS_ROTATED_H

#include "kernels/box_iou_rotated.h"

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/nms_rotated.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/nms_rotated.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_NMS_ROTATED_H */
