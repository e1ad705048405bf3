// Compiled as C++ by ctest: the public header must work from C++ (extern "C").
#include <visionops/visionops.h>

int vo_header_check_cxx() {
  vo_value v = vo_tensor_value(nullptr);
  vo_status (*fn)(const vo_context *, const DLTensor *, const DLTensor *, DLTensor *) = vo_box_iou;
  return v.kind == VO_VALUE_NONE && fn != nullptr;
}
