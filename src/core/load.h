/*
 * Reading one element of a float or integer view in host memory as double
 * (exact for every float dtype): used by CPU kernels and by op-layer checks that look
 * at CPU data (e.g. RoI batch indices).
 */
#ifndef VISIONOPS_LOAD_H
#define VISIONOPS_LOAD_H

#include "core/half.h"
#include "core/internal.h"

static inline double vo_load_host(const vo_view *v, int64_t offset) {
  switch (v->dtype) {
    case VO_F32: return ((const float *)vo_view_addr(v))[offset];
    case VO_F64: return ((const double *)vo_view_addr(v))[offset];
    case VO_F16: return vo_f16_to_f32(((const uint16_t *)vo_view_addr(v))[offset]);
    case VO_BF16: return vo_bf16_to_f32(((const uint16_t *)vo_view_addr(v))[offset]);
    /* Integer boxes (the IoU ops): exact below 2^53 in magnitude. */
    case VO_I64: return (double)((const int64_t *)vo_view_addr(v))[offset];
    case VO_I32: return ((const int32_t *)vo_view_addr(v))[offset];
    case VO_I16: return ((const int16_t *)vo_view_addr(v))[offset];
    case VO_I8: return ((const int8_t *)vo_view_addr(v))[offset];
    case VO_U8: return ((const uint8_t *)vo_view_addr(v))[offset];
    default: return 0;
  }
}

#endif /* VISIONOPS_LOAD_H */
