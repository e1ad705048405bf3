/* Picture of what batched NMS did to the demo's detections: one SVG file,
 * "before" and "after" panels side by side. */
#ifndef VISIONOPS_TOOLS_SVG_H
#define VISIONOPS_TOOLS_SVG_H

#include <stdint.h>

typedef struct svg_nms_scene {
  double image_width, image_height;
  int64_t num_boxes;
  const float *boxes;     /* [num_boxes, 4] x1 y1 x2 y2, image pixels */
  const float *scores;    /* [num_boxes] in [0, 1] */
  const int64_t *classes; /* [num_boxes] */
  int num_classes;
  const int64_t *keep; /* first num_kept entries: indices kept by batched NMS */
  int64_t num_kept;
  double iou_threshold;
  double score_cutoff; /* boxes scoring below this are not drawn in either panel */
} svg_nms_scene;

/* Returns 0, or -1 with errno set when the file cannot be written. */
int svg_write_nms(const char *path, const svg_nms_scene *scene);

#endif /* VISIONOPS_TOOLS_SVG_H */
