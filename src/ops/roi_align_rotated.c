/*
 * roi_align_rotated and roi_align_rotated_backward: roi_align's checks on
 * rotated RoIs [K,6] (batch, cx, cy, w, h, angle; declared value checks:
 * batch indices, finite values, w and h >= 0, the adaptive grid), output
 * shapes, and the angle's scale from clockwise and radians.
 */
#include "kernels/box_iou_rotated.h" /* vo_rotated_angle_scale */
#include "ops/common.h"

static vo_status vo_finish(vo_exec *ex, const vo_roi_layout *l, const int64_t sizes[4]) {
  vo_roi_align_rotated_params *p = &ex->p.roi_align_rotated;
  vo_fill_roi_align_params(ex, l, sizes, &p->base);
  /* clockwise and radians follow aligned in both schemas */
  p->angle_scale =
      vo_rotated_angle_scale(ex->args[l->aligned + 1].u.b != 0, ex->args[l->aligned + 2].u.b != 0);
  return VO_OK;
}

VO_ROI_OP_CHECKS(roi_align_rotated, vo_finish)
