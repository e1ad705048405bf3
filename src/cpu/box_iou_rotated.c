/*
 * CPU kernel for box_iou_rotated and box_iou_rotated_aligned (kernel
 * rotated_iou): blocks of output elements claimed by the participants of a
 * vo_cpu_run region. The plain path (VO_ISA_SCALAR) runs the portable work
 * item of kernels/box_iou_rotated.h per element; the fast path prepares
 * every box once (cos / sin, reach, slack) and skips the pairs that
 * vo_k_rbox_apart or vo_k_rbox_separated prove disjoint, with the same
 * values (test_backend_ops compares the two).
 */
#include "cpu/common.h"
#include "kernels/box_iou_rotated.h"

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cpu/box_iou_rotated.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cpu/box_iou_rotated.inc"
#include "kernels/dtype_end.h"

/* One-thread cost of an element in nanoseconds: a few for a rejected pair,
 * 200-500 for an overlapping one (benchmark machine, float32; 2,000 x 2,000
 * rotated detections average about 35); a coarse mix for the thread count. */
#define VO_ROT_ELEMENT_NS 40.0

/* One region's work: participants claim blocks of output elements. */
typedef struct vo_rot_work {
  const vo_k_rotated_iou_args *args;
  const void *a, *b;           /* the box tensors (plain path) */
  const void *side_a, *side_b; /* vo_rot_side_f32 / _f64 (fast path), NULL for plain */
  int f64;
  void *out;
  vo_cpu_range elements;
} vo_rot_work;

static void vo_rot_task(void *arg, int slot) {
  (void)slot;
  vo_rot_work *w = arg;
  int64_t e0, e1;
  while (vo_cpu_claim(&w->elements, &e0, &e1)) {
    if (w->f64) {
      if (w->side_a)
        vo_rot_fast_f64(w->args, w->side_a, w->side_b, e0, e1, w->out);
      else
        vo_rot_plain_f64(w->args, w->a, w->b, e0, e1, w->out);
    } else {
      if (w->side_a)
        vo_rot_fast_f32(w->args, w->side_a, w->side_b, e0, e1, w->out);
      else
        vo_rot_plain_f32(w->args, w->a, w->b, e0, e1, w->out);
    }
  }
}

vo_status vo_cpu_rotated_iou(const vo_exec *ex) {
  const vo_view *a = &ex->inputs[0], *b = &ex->inputs[1];
  const int64_t total = ex->outputs[0].numel;
  if (total == 0) return VO_OK;
  const int aligned = ex->op == VO_OP_box_iou_rotated_aligned;
  const double scale = vo_rotated_angle_scale(ex->args[3].u.b, ex->args[4].u.b);
  const vo_k_rotated_iou_args args =
      vo_k_rotated_iou_args_of((int)a->dtype, a->stride, (int)b->dtype, b->stride, a->shape[0],
                               b->shape[0], aligned, ex->args[2].u.b, 0, scale);
  const int f64 = ex->dtype == VO_F64;
  vo_rot_work w = {.args = &args,
                   .a = vo_view_addr(a),
                   .b = vo_view_addr(b),
                   .f64 = f64,
                   .out = vo_view_addr(&ex->outputs[0])};
  const double cost_ns = VO_ROT_ELEMENT_NS * (double)total * (f64 ? 1.5 : 1);
  const int threads = vo_cpu_threads_for(ex->ctx, total, cost_ns);
  /* Blocks worth about 20 us: few claims, fine balance. */
  vo_cpu_range_init(&w.elements, total, (int64_t)(20000.0 / VO_ROT_ELEMENT_NS));
  void *mem = NULL;
  vo_rot_side_f32 sa32, sb32;
  vo_rot_side_f64 sa64, sb64;
  /* The fast path is portable C: every CPU takes it unless the context asks
   * for the plain path (VO_ISA_SCALAR, as test_backend_ops's reference). */
  if (!(ex->ctx && ex->ctx->isa == VO_ISA_SCALAR)) {
    const int64_t na = a->shape[0], nb = b->shape[0];
    const size_t box = f64 ? sizeof(vo_k_rbox_f64) : sizeof(vo_k_rbox_f32);
    mem = vo_workspace_alloc(ex->ctx, ex->device, (size_t)(na + nb) * (box + 2 * sizeof(double)),
                             ex->op_name);
    if (!mem) return VO_ERROR_OUT_OF_MEMORY;
    double *reach = mem, *slack = reach + na + nb;
    void *boxes = slack + na + nb;
    if (f64) {
      sa64 = (vo_rot_side_f64){(vo_k_rbox_f64 *)boxes, reach, slack};
      sb64 = (vo_rot_side_f64){(vo_k_rbox_f64 *)boxes + na, reach + na, slack + na};
      vo_rot_prepare_f64(a, scale, na, &sa64);
      vo_rot_prepare_f64(b, scale, nb, &sb64);
      w.side_a = &sa64, w.side_b = &sb64;
    } else {
      sa32 = (vo_rot_side_f32){(vo_k_rbox_f32 *)boxes, reach, slack};
      sb32 = (vo_rot_side_f32){(vo_k_rbox_f32 *)boxes + na, reach + na, slack + na};
      vo_rot_prepare_f32(a, scale, na, &sa32);
      vo_rot_prepare_f32(b, scale, nb, &sb32);
      w.side_a = &sa32, w.side_b = &sb32;
    }
  }
  vo_cpu_run(threads, vo_rot_task, &w);
  if (mem) vo_workspace_free(ex->ctx, ex->device, mem);
  return VO_OK;
}
