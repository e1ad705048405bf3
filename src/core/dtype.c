/*
 * Mapping between DLPack dtypes and the library's internal dtype enum, and
 * names for every DLPack dtype (also those the library does not support).
 */
#include <stdio.h>

#include "core/internal.h"
#include "kernels/compat.h"

/* The portable kernels name dtypes by code (kernels/compat.h). */
_Static_assert(VO_F32 == VO_DT_F32 && VO_F64 == VO_DT_F64 && VO_F16 == VO_DT_F16 &&
                   VO_BF16 == VO_DT_BF16 && VO_I64 == VO_DT_I64 && VO_I32 == VO_DT_I32 &&
                   VO_U8 == VO_DT_U8 && VO_BOOL == VO_DT_BOOL && VO_I16 == VO_DT_I16 &&
                   VO_I8 == VO_DT_I8,
               "kernels/compat.h dtype codes match vo_dtype");

/* kDLBool arrived in DLPack 0.8; Debian 12's header (0.6) lacks it. */
#define VO_DL_BOOL_CODE 6u

/* Every dtype the library knows, once: its DLPack form, element size and name. */
static const struct vo_dtype_info {
  vo_dtype dtype;
  uint8_t code, bits;
  size_t size;
  const char *name;
} vo_dtypes[] = {
    {VO_F32, kDLFloat, 32, 4, "float32"}, {VO_F64, kDLFloat, 64, 8, "float64"},
    {VO_F16, kDLFloat, 16, 2, "float16"}, {VO_BF16, kDLBfloat, 16, 2, "bfloat16"},
    {VO_I64, kDLInt, 64, 8, "int64"},     {VO_I32, kDLInt, 32, 4, "int32"},
    {VO_I16, kDLInt, 16, 2, "int16"},     {VO_I8, kDLInt, 8, 1, "int8"},
    {VO_U8, kDLUInt, 8, 1, "uint8"},      {VO_BOOL, kDLUInt, 1, 1, "bool"},
};
#define VO_DTYPE_COUNT (sizeof vo_dtypes / sizeof vo_dtypes[0])

static const struct vo_dtype_info *vo_dtype_info_of(vo_dtype d) {
  for (size_t i = 0; i < VO_DTYPE_COUNT; i++)
    if (vo_dtypes[i].dtype == d) return &vo_dtypes[i];
  return NULL;
}

vo_dtype vo_dtype_from_dl(DLDataType t) {
  if (t.lanes != 1) return VO_DTYPE_INVALID;
  if (t.code == VO_DL_BOOL_CODE && t.bits == 8) return VO_BOOL; /* DLPack >= 0.8's bool */
  for (size_t i = 0; i < VO_DTYPE_COUNT; i++)
    if (vo_dtypes[i].code == t.code && vo_dtypes[i].bits == t.bits) return vo_dtypes[i].dtype;
  return VO_DTYPE_INVALID;
}

DLDataType vo_dtype_to_dl(vo_dtype d) {
  const struct vo_dtype_info *i = vo_dtype_info_of(d);
  DLDataType t = {kDLFloat, 0, 1};
  if (i) t.code = i->code, t.bits = i->bits;
  return t;
}

const char *vo_dtype_name(vo_dtype d) {
  const struct vo_dtype_info *i = vo_dtype_info_of(d);
  return i ? i->name : "unsupported";
}

size_t vo_dtype_size(vo_dtype d) {
  const struct vo_dtype_info *i = vo_dtype_info_of(d);
  return i ? i->size : 0;
}

const char *vo_dl_dtype_str(DLDataType t, char *buf, size_t size) {
  const char *kind = NULL;
  switch (t.code) {
    case kDLInt: kind = "int"; break;
    case kDLUInt: kind = "uint"; break;
    case kDLFloat: kind = "float"; break;
    case kDLBfloat: kind = "bfloat"; break;
    case kDLComplex: kind = "complex"; break;
    case kDLOpaqueHandle: kind = "opaque_handle"; break;
    default: break;
  }
  const int bool8 = t.code == VO_DL_BOOL_CODE && t.bits == 8;
  int n;
  if (bool8)
    n = snprintf(buf, size, "bool");
  else if (t.code == VO_DL_BOOL_CODE)
    n = snprintf(buf, size, "bool%u", (unsigned)t.bits);
  else if (kind)
    n = snprintf(buf, size, "%s%u", kind, (unsigned)t.bits);
  else
    n = snprintf(buf, size, "dtype code %u with %u bits", (unsigned)t.code, (unsigned)t.bits);
  if (t.lanes != 1 && n >= 0 && (size_t)n < size)
    snprintf(buf + n, size - (size_t)n, "x%u", (unsigned)t.lanes);
  return buf;
}
