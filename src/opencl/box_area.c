/*
 * OpenCL box_area and box_area_backward: the host glue of
 * opencl/box_area.cl's entry points, one per storage dtype of the boxes.
 */
#include <stdio.h>

#include "kernels/box_area.h"
#include "opencl/common.h"

/* The entry point for the boxes' storage dtype, e.g. vo_cl_box_area_f16. */
static void vo_cl_box_area_name(char *buf, size_t size, const char *base, vo_dtype boxes) {
  const char *sfx = vo_cl_suffix(boxes);
  if (!sfx) sfx = boxes == VO_I64 ? "i64" : "i32"; /* int32, int16, int8, uint8: int32 areas */
  snprintf(buf, size, "%s_%s", base, sfx);
}

vo_status vo_opencl_box_area(const vo_exec *ex) {
  const vo_view *boxes = &ex->inputs[0], *out = &ex->outputs[0];
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || out->numel == 0) return st;
  const int64_t n = boxes->shape[0];
  const vo_k_box_area_args a = vo_k_box_area_args_of((int)boxes->dtype, boxes->stride, 0, 0);
  char name[64];
  vo_cl_box_area_name(name, sizeof name, "vo_cl_box_area", boxes->dtype);
  vo_cl_launch l;
  if ((st = vo_cl_launch_begin(&l, &c, "box_area", name)) != VO_OK) return st;
  vo_cl_arg(&l, &a, sizeof a);
  vo_cl_arg_view(&l, boxes);
  vo_cl_arg_i64(&l, n);
  vo_cl_arg_view(&l, out);
  return vo_cl_launch_run(&l, n);
}

vo_status vo_opencl_box_area_backward(const vo_exec *ex) {
  const vo_view *grad = &ex->inputs[0], *boxes = &ex->inputs[1], *out = &ex->outputs[0];
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || out->numel == 0) return st;
  const int64_t n = 4 * boxes->shape[0];
  const vo_k_box_area_args a =
      vo_k_box_area_args_of((int)boxes->dtype, boxes->stride, (int)grad->dtype, grad->stride[0]);
  char name[64];
  vo_cl_box_area_name(name, sizeof name, "vo_cl_box_area_backward", boxes->dtype);
  vo_cl_launch l;
  if ((st = vo_cl_launch_begin(&l, &c, "box_area", name)) != VO_OK) return st;
  vo_cl_arg(&l, &a, sizeof a);
  vo_cl_arg_view(&l, boxes);
  vo_cl_arg_view(&l, grad);
  vo_cl_arg_i64(&l, n);
  vo_cl_arg_view(&l, out);
  return vo_cl_launch_run(&l, n);
}
