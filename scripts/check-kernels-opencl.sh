#!/usr/bin/env bash
# The portable kernel headers (src/kernels/*.h) must stay OpenCL C: compiles
# each, with kernels/compat_opencl.h, as OpenCL C 1.2 with clang (syntax and
# types only; the OpenCL backend compiles them for real). Exits 77 (skipped)
# without a clang that knows OpenCL C.
set -euo pipefail
src=$(cd "$(dirname "$0")/../src" && pwd)
clang=${CLANG:-clang}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! command -v "$clang" >/dev/null ||
   ! echo '__kernel void k(__global float *a) { a[0] = ceil(a[1]); }' > "$tmp/probe.cl" ||
   ! "$clang" -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -fsyntax-only "$tmp/probe.cl" 2>/dev/null; then
  echo "check-kernels-opencl: no clang with OpenCL C support: skipped"
  exit 77
fi
status=0
count=0
for header in "$src"/kernels/*.h; do
  name=$(basename "$header")
  case $name in compat_c.h | compat_cuda.h | compat_opencl.h | dtype_begin.h | dtype_end.h) continue ;; esac
  printf '#include "kernels/%s"\n__kernel void vo_check_compiles(__global float *a) { a[0] = 0; }\n' \
    "$name" > "$tmp/$name.cl"
  if "$clang" -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -fsyntax-only \
       -Werror -Wno-unused-function -I "$src" "$tmp/$name.cl"; then
    count=$((count + 1))
  else
    echo "check-kernels-opencl: src/kernels/$name is not OpenCL C (errors above)"
    status=1
  fi
done
echo "check-kernels-opencl: $count portable headers compile as OpenCL C 1.2"
exit $status
