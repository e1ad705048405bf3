/*
 * OpenCL box_convert and box_convert_backward: the host glue of
 * opencl/box_convert.cl's entry points, one per storage dtype of the float
 * boxes and one for integer boxes.
 */
#include <stdio.h>

#include "kernels/box_convert.h"
#include "opencl/common.h"

vo_status vo_opencl_box_convert(const vo_exec *ex) {
  const vo_view *boxes = &ex->inputs[0], *out = &ex->outputs[0];
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || out->numel == 0) return st;
  const int64_t n = boxes->shape[0];
  const vo_k_box_convert_args a = vo_k_box_convert_args_of(
      (int)ex->args[1].u.i, (int)ex->args[2].u.i, (int)boxes->dtype, boxes->stride, 0, NULL);
  const char *sfx = vo_cl_suffix(boxes->dtype);
  char name[64];
  snprintf(name, sizeof name, "vo_cl_box_convert_%s", sfx ? sfx : "int");
  vo_cl_launch l;
  if ((st = vo_cl_launch_begin(&l, &c, "box_convert", name)) != VO_OK) return st;
  vo_cl_arg(&l, &a, sizeof a);
  vo_cl_arg_view(&l, boxes);
  vo_cl_arg_i64(&l, n);
  vo_cl_arg_view(&l, out);
  return vo_cl_launch_run(&l, n);
}

vo_status vo_opencl_box_convert_backward(const vo_exec *ex) {
  const vo_view *grad = &ex->inputs[0], *boxes = &ex->inputs[1], *out = &ex->outputs[0];
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || out->numel == 0) return st;
  const int64_t n = boxes->shape[0];
  const vo_k_box_convert_args a =
      vo_k_box_convert_args_of((int)ex->args[2].u.i, (int)ex->args[3].u.i, (int)boxes->dtype,
                               boxes->stride, (int)grad->dtype, grad->stride);
  char name[64];
  snprintf(name, sizeof name, "vo_cl_box_convert_backward_%s", vo_cl_suffix(boxes->dtype));
  vo_cl_launch l;
  if ((st = vo_cl_launch_begin(&l, &c, "box_convert", name)) != VO_OK) return st;
  vo_cl_arg(&l, &a, sizeof a);
  vo_cl_arg_view(&l, boxes);
  vo_cl_arg_view(&l, grad);
  vo_cl_arg_i64(&l, n);
  vo_cl_arg_view(&l, out);
  return vo_cl_launch_run(&l, n);
}
