/*
 * CPU kernel for nms_rotated and batched_nms_rotated: nms's greedy pass
 * (cpu/nms.h: the stable score sort, the grouping by category, the
 * multi-threaded chunked pass) over rotated boxes, with
 * kernels/nms_rotated.h's suppression test.
 */
#include "cpu/nms.h"
#include "kernels/nms_rotated.h"

/* The plain path (the context asks for the scalar ISA, as
 * test_backend_ops's reference does) computes every pair's polygon IoU;
 * otherwise, on any CPU, pairs proven disjoint are rejected first, which
 * test_backend_ops checks gives the plain path's keep. */
static int vo_nms_rotated_plain(const vo_exec *ex) { return ex->ctx->isa == VO_ISA_SCALAR; }

#define VO_S_F32
#include "kernels/dtype_begin.h"
#include "cpu/nms_rotated.inc"
#include "kernels/dtype_end.h"

#define VO_S_F64
#include "kernels/dtype_begin.h"
#include "cpu/nms_rotated.inc"
#include "kernels/dtype_end.h"

/* A category of boxes in the compute type, with the threshold (for float,
 * the smallest float not below it). */
static void vo_nms_rotated_gather(const vo_exec *ex, void *store, int64_t n, int64_t start,
                                  int64_t m, const int64_t *slot_index, vo_nms_boxes *nb) {
  if (ex->dtype == VO_F64) {
    vo_nms_rotated_gather_f64(ex, store, n, start, m, slot_index, nb);
    nb->thr_f64 = ex->p.nms.iou_threshold;
  } else {
    vo_nms_rotated_gather_f32(ex, store, n, start, m, slot_index, nb);
    nb->thr_f32 = ex->p.nms.iou_threshold_f32;
  }
}

/* A test costs a few ns for a pair the rejects settle and some hundreds
 * for a polygon IoU; on the benchmark's dense oriented detections the pass
 * takes about 45 ns per pair of the kinds' common estimate, (kept / 30) x
 * later boxes (bench/RESULTS.md, "Issue 15"), so above 1,024 boxes a
 * category's pass is milliseconds and may be worth several threads. */
static const vo_nms_kind vo_nms_rotated_kind = {
    .box_bytes = {sizeof(vo_k_nms_rbox_f32), sizeof(vo_k_nms_rbox_f64)},
    .pair_ns = 45,
    .parallel_min = 1024,
    .gather = vo_nms_rotated_gather,
};

vo_status vo_cpu_nms_rotated(const vo_exec *ex) { return vo_cpu_nms_run(ex, &vo_nms_rotated_kind); }
