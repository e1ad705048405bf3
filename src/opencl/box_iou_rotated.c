/*
 * OpenCL box_iou_rotated and box_iou_rotated_aligned (kernel rotated_iou):
 * the host glue of opencl/box_iou_rotated.cl's entry points, one per compute
 * type (ex->dtype: float64 when either box set is float64).
 */
#include "kernels/box_iou_rotated.h"
#include "opencl/common.h"

vo_status vo_opencl_rotated_iou(const vo_exec *ex) {
  const vo_view *a = &ex->inputs[0], *b = &ex->inputs[1], *out = &ex->outputs[0];
  vo_cl_call c;
  vo_status st = vo_cl_call_begin(ex, &c);
  if (st != VO_OK || out->numel == 0) return st;
  const vo_k_rotated_iou_args args = vo_k_rotated_iou_args_of(
      (int)a->dtype, a->stride, (int)b->dtype, b->stride, a->shape[0], b->shape[0],
      ex->op == VO_OP_box_iou_rotated_aligned, ex->args[2].u.b, 1,
      vo_rotated_angle_scale(ex->args[3].u.b, ex->args[4].u.b));
  vo_cl_launch l;
  st = vo_cl_launch_begin(&l, &c, "box_iou_rotated",
                          ex->dtype == VO_F64 ? "vo_cl_rotated_iou_f64" : "vo_cl_rotated_iou_f32");
  if (st != VO_OK) return st;
  vo_cl_arg(&l, &args, sizeof args);
  vo_cl_arg_view(&l, a);
  vo_cl_arg_view(&l, b);
  vo_cl_arg_i64(&l, out->numel);
  vo_cl_arg_view(&l, out);
  return vo_cl_launch_run(&l, out->numel);
}
