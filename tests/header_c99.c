/* Compiled with -std=c99 -pedantic by ctest: the public header must be C99. */
#include <visionops/visionops.h>

int vo_header_check(void);
int vo_header_check(void) {
  vo_value v = vo_float_value(0.5);
  return v.kind == VO_VALUE_FLOAT && VO_MAX_DIMS == 8;
}
