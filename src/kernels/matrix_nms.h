/*
 * Matrix NMS (SOLOv2; Paddle's matrix_nms) in the portable dialect
 * (kernels/compat.h): the pairwise IoU of two ranked candidates of one
 * (image, class) problem in both box conventions, the two decay functions,
 * and the work item of one candidate row. A problem's candidates are sorted
 * by score (rank 0 first) and held structure-of-arrays in the compute type:
 * boxes[0..n) x1, [n..2n) y1, [2n..3n) x2, [3n..4n) y2, [4n..5n) area.
 * The op is one parallel pass over an n x n IoU: K_i, the largest IoU of
 * row i (against the higher-ranked candidates), and d_i, the least decay
 * of row i given every K_j, j < i. A device runs the row item twice (all
 * K_i, then all d_i); the CPU runs it once per row in rank order, so K_j of
 * every j < i is known when row i is reached. Per compute type (float,
 * double) bodies: kernels/matrix_nms.inc.
 */
#ifndef VISIONOPS_KERNELS_MATRIX_NMS_H
#define VISIONOPS_KERNELS_MATRIX_NMS_H

#include "kernels/compat.h"

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "kernels/matrix_nms.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "kernels/matrix_nms.inc"
#include "kernels/dtype_end.h"

#endif /* VISIONOPS_KERNELS_MATRIX_NMS_H */
