/*
 * Mapping between DLPack dtypes and the library's internal dtype enum, and
 * names for every DLPack dtype (also those the library does not support).
 */
#include <stdio.h>

#include "core/internal.h"

/* kDLBool arrived in DLPack 0.8; Debian 12's header (0.6) lacks it. */
#define VO_DL_BOOL_CODE 6u

vo_dtype vo_dtype_from_dl(DLDataType t) {
  if (t.lanes != 1) return VO_DTYPE_INVALID;
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 32) return VO_F32;
      if (t.bits == 64) return VO_F64;
      if (t.bits == 16) return VO_F16;
      break;
    case kDLBfloat:
      if (t.bits == 16) return VO_BF16;
      break;
    case kDLInt:
      if (t.bits == 64) return VO_I64;
      if (t.bits == 32) return VO_I32;
      if (t.bits == 16) return VO_I16;
      if (t.bits == 8) return VO_I8;
      break;
    case kDLUInt:
      if (t.bits == 8) return VO_U8;
      if (t.bits == 1) return VO_BOOL;
      break;
    case VO_DL_BOOL_CODE:
      if (t.bits == 8) return VO_BOOL;
      break;
    default: break;
  }
  return VO_DTYPE_INVALID;
}

DLDataType vo_dtype_to_dl(vo_dtype d) {
  DLDataType t = {kDLFloat, 32, 1};
  switch (d) {
    case VO_F32: break;
    case VO_F64: t.bits = 64; break;
    case VO_F16: t.bits = 16; break;
    case VO_BF16:
      t.code = kDLBfloat;
      t.bits = 16;
      break;
    case VO_I64:
      t.code = kDLInt;
      t.bits = 64;
      break;
    case VO_I32:
      t.code = kDLInt;
      t.bits = 32;
      break;
    case VO_I16:
      t.code = kDLInt;
      t.bits = 16;
      break;
    case VO_I8:
      t.code = kDLInt;
      t.bits = 8;
      break;
    case VO_U8:
      t.code = kDLUInt;
      t.bits = 8;
      break;
    case VO_BOOL:
      t.code = kDLUInt;
      t.bits = 1;
      break;
    case VO_DTYPE_INVALID: t.bits = 0; break;
  }
  return t;
}

const char *vo_dtype_name(vo_dtype d) {
  switch (d) {
    case VO_F32: return "float32";
    case VO_F64: return "float64";
    case VO_F16: return "float16";
    case VO_BF16: return "bfloat16";
    case VO_I64: return "int64";
    case VO_I32: return "int32";
    case VO_I16: return "int16";
    case VO_I8: return "int8";
    case VO_U8: return "uint8";
    case VO_BOOL: return "bool";
    case VO_DTYPE_INVALID: break;
  }
  return "unsupported";
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

size_t vo_dtype_size(vo_dtype d) {
  switch (d) {
    case VO_F64:
    case VO_I64: return 8;
    case VO_F32:
    case VO_I32: return 4;
    case VO_F16:
    case VO_BF16:
    case VO_I16: return 2;
    case VO_I8:
    case VO_U8:
    case VO_BOOL: return 1;
    case VO_DTYPE_INVALID: break;
  }
  return 0;
}
