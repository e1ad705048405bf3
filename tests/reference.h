/* Plain scalar reference implementations of the box operators, written from
 * SPEC.md section 1 and independent of the library. */
#ifndef VISIONOPS_TEST_REFERENCE_H
#define VISIONOPS_TEST_REFERENCE_H

#include <stdint.h>

/* Inputs are decoded values in double. `single` selects the arithmetic: 0
 * computes in double (float64 inputs), 1 rounds every operation to float
 * (float32 inputs, and float16/bfloat16, which compute in float32). */

typedef enum vr_iou_kind { VR_IOU, VR_GIOU, VR_DIOU, VR_CIOU } vr_iou_kind;

/* out[i*m + j] = kind-IoU of a[i] and b[j]; a is [n,4], b is [m,4] rows
 * (x1, y1, x2, y2). eps is used by DIoU and CIoU only. */
void vr_pairwise_iou(vr_iou_kind kind, const double *a, int64_t n, const double *b, int64_t m,
                     double eps, int single, double *out);

/* Greedy NMS; keep receives the kept indices in output order. Returns how
 * many were kept. */
int64_t vr_nms(const double *boxes, const double *scores, int64_t n, double iou_threshold,
               int single, int64_t *keep);

/* NMS within each category of idxs, result sorted by score descending, ties
 * by index. */
int64_t vr_batched_nms(const double *boxes, const double *scores, const int64_t *idxs, int64_t n,
                       double iou_threshold, int single, int64_t *keep);

#endif /* VISIONOPS_TEST_REFERENCE_H */
