#!/usr/bin/env bash
# The portable kernel headers (src/kernels/*.h) must stay OpenCL C: compiles
# each, with kernels/compat_opencl.h, as OpenCL C 1.2 with clang (syntax and
# types only; the OpenCL backend compiles them for real), then each header
# and each OpenCL program (src/opencl/*.cl) again as for a device without
# cl_khr_fp64 (clang's -cl-ext=-cl_khr_fp64: no double type, the macro
# undefined), where the float64 code must compile to nothing (kernels/
# compat.h's VO_K_FP64). There, unsuffixed floating constants become float
# (OpenCL C's rule on such devices; clang warns "double precision constant
# requires cl_khr_fp64, casting to single precision", a warning no flag
# names): that one warning is allowed, any other fails. Exits 77 (skipped)
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
opencl_c=("$clang" -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -fsyntax-only
          -Wno-unused-function -I "$src")
no_fp64=(-Xclang -cl-ext=-cl_khr_fp64)
# The double type must be gone with the extension: else the second pass
# would prove nothing.
echo '__kernel void k(__global float *a) { double d = a[1]; a[0] = d; }' > "$tmp/double.cl"
if "${opencl_c[@]}" "${no_fp64[@]}" "$tmp/double.cl" 2>/dev/null; then
  echo "check-kernels-opencl: $clang still accepts double with ${no_fp64[*]}"
  exit 1
fi
# compile FILE WHAT: both passes over FILE; counts and reports.
status=0
count=0
count_no_fp64=0
compile() {
  if "${opencl_c[@]}" -Werror "$1"; then
    count=$((count + 1))
  else
    echo "check-kernels-opencl: $2 is not OpenCL C (errors above)"
    status=1
  fi
  local log="$tmp/no_fp64.log" ok=1
  "${opencl_c[@]}" "${no_fp64[@]}" "$1" 2> "$log" || ok=0
  { grep 'warning:' "$log" || true; } | { grep -v 'double precision constant requires cl_khr_fp64' || true; } \
    > "$tmp/other_warnings"
  if [ "$ok" = 1 ] && [ ! -s "$tmp/other_warnings" ]; then
    count_no_fp64=$((count_no_fp64 + 1))
  else
    cat "$log"
    echo "check-kernels-opencl: $2 does not compile without cl_khr_fp64 (errors above)"
    status=1
  fi
}
for header in "$src"/kernels/*.h; do
  name=$(basename "$header")
  case $name in compat_c.h | compat_cuda.h | compat_opencl.h | dtype_begin.h | dtype_end.h) continue ;; esac
  printf '#include "kernels/%s"\n__kernel void vo_check_compiles(__global float *a) { a[0] = 0; }\n' \
    "$name" > "$tmp/$name.cl"
  compile "$tmp/$name.cl" "src/kernels/$name"
done
programs=0
for program in "$src"/opencl/*.cl; do
  compile "$program" "src/opencl/$(basename "$program")"
  programs=$((programs + 1))
done
echo "check-kernels-opencl: $count portable headers and OpenCL programs compile as OpenCL C 1.2" \
     "($programs programs), $count_no_fp64 of them also without cl_khr_fp64"
exit $status
