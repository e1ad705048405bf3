/*
 * Status strings and the thread-local error message every failing call sets.
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/internal.h"

static _Thread_local char vo_error_message[1024];

const char *vo_last_error(void) { return vo_error_message; }

void vo_clear_error(void) { vo_error_message[0] = '\0'; }

vo_status vo_fail(vo_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(vo_error_message, sizeof vo_error_message, fmt, ap);
  va_end(ap);
  return status;
}

const char *vo_status_string(vo_status status) {
  switch (status) {
    case VO_OK: return "ok";
    case VO_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case VO_ERROR_UNSUPPORTED_DTYPE: return "unsupported dtype";
    case VO_ERROR_DEVICE_MISMATCH: return "device mismatch";
    case VO_ERROR_BACKEND_UNAVAILABLE: return "backend unavailable";
    case VO_ERROR_OUT_OF_MEMORY: return "out of memory";
    case VO_ERROR_NOT_FOUND: return "not found";
    case VO_ERROR_BACKEND_FAILURE: return "backend failure";
  }
  return "unknown status";
}

const char *vo_shape_str(const int64_t *shape, int ndim, char *buf, size_t size) {
  size_t used = 0;
  if (size == 0) return buf;
  buf[0] = '\0';
  used += (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < ndim && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
  return buf;
}
