/* Quick start: NMS and box IoU on CPU tensors described with DLPack. */
#include <stdio.h>
#include <visionops/visionops.h>

int main(void) {
  float boxes[3][4] = {{0, 0, 10, 10}, {1, 1, 11, 11}, {20, 20, 30, 30}};
  float scores[3] = {0.9f, 0.8f, 0.7f};
  int64_t boxes_shape[2] = {3, 4}, scores_shape[1] = {3};
  DLTensor b = {boxes, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, boxes_shape, NULL, 0};
  DLTensor s = {scores, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, scores_shape, NULL, 0};

  /* Outputs are the caller's: ask for their shapes, then allocate. */
  vo_tensor_desc out[2];
  if (vo_nms_shape(NULL, &b, &s, 0.5, out) != VO_OK) return 1;
  int64_t keep[3], num_kept;
  DLTensor k = {keep, {kDLCPU, 0}, 1, out[0].dtype, out[0].shape, NULL, 0};
  DLTensor n = {&num_kept, {kDLCPU, 0}, 0, out[1].dtype, NULL, NULL, 0};
  if (vo_nms(NULL, &b, &s, 0.5, &k, &n) != VO_OK) {
    fprintf(stderr, "%s\n", vo_last_error());
    return 1;
  }
  printf("kept %lld boxes:", (long long)num_kept);
  for (int64_t i = 0; i < num_kept; i++) printf(" %lld", (long long)keep[i]);
  printf("\n");

  float iou[3][3];
  int64_t iou_shape[2] = {3, 3};
  DLTensor o = {iou, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, iou_shape, NULL, 0};
  if (vo_box_iou(NULL, &b, &b, &o) != VO_OK) {
    fprintf(stderr, "%s\n", vo_last_error());
    return 1;
  }
  printf("IoU(box 0, box 1) = %.4f\n", iou[0][1]);

  /* Bad input gives a status and a message, never a crash. */
  boxes_shape[1] = 5;
  if (vo_nms(NULL, &b, &s, 0.5, &k, &n) != VO_OK) printf("error: %s\n", vo_last_error());
  return 0;
}
