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
  const vo_k_rotated_iou_args args = {
      .a_dtype = (int)a->dtype,
      .b_dtype = (int)b->dtype,
      .a_stride = {a->stride[0], a->stride[1]},
      .b_stride = {b->stride[0], b->stride[1]},
      .n = a->shape[0],
      .m = b->shape[0],
      .aligned = ex->op == VO_OP_box_iou_rotated_aligned,
      .iof = ex->args[2].u.b,
      .reject = 1,
      .angle_scale = vo_rotated_angle_scale(ex->args[3].u.b, ex->args[4].u.b),
  };
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
