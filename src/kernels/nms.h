/*
 * nms's suppression test in the portable dialect (kernels/compat.h): the IoU
 * of a kept box and a later candidate in torchvision's nms arithmetic and
 * its comparison with the threshold. Run by the CPU backend's plain path
 * (cpu/nms.c; its float32 AVX2 loop is a separate, bit-identical
 * optimisation) and by the CUDA mask kernel (cuda/nms.cu). Per compute type
 * (float, double) bodies: kernels/nms.inc.
 */
#ifndef VISIONOPS_KERNELS_NMS_H
#define VISIONOPS_KERNELS_NMS_H

#include "kernels/compat.h"

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/nms.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/nms.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_NMS_H */
