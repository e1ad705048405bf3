#!/usr/bin/env bash
# gpu-check: the whole check on a machine with an NVIDIA GPU, in one command.
# Configures a Release build with the CUDA backend for sm_90 only into
# build-gpu, builds it, runs the C suite (ctest, the GPU and "large" tests
# included), the Python suite (pytest, when pytest and the package's
# extension are there) and tests/python/gpu_compare.py, then prints a summary
# (step, result, seconds). Exits non-zero if any step fails; fails at once
# where no GPU is visible. Installs nothing (the GPU machine has no network).
#
# Variables: BUILD=build-gpu  JOBS=nproc  CUDA_ARCH=90  PYTHON (default: the first
#            python3 on PATH, or /usr/bin/python3, that imports torch)
#            GPU_CHECK_LIMIT=590 (seconds for everything)
#            GPU_CHECK_LOGS=dir (a copy of every step's log, e.g. $OUT)
#            CTEST_ARGS (more ctest arguments, e.g. -LE large)
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build-gpu}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
CUDA_ARCH=${CUDA_ARCH:-90}
if [ -z "${PYTHON:-}" ]; then # the first python3 that has torch
  PYTHON=python3
  for c in python3 /usr/bin/python3; do
    if "$c" -c 'import torch' >/dev/null 2>&1; then
      PYTHON=$c
      break
    fi
  done
fi
LIMIT=${GPU_CHECK_LIMIT:-590}
LOGS=$BUILD/gpu-check-logs
deadline=$((SECONDS + LIMIT))

say() { printf 'gpu-check: %s\n' "$*"; }
die() {
  say "$*" >&2
  exit 1
}

# ------------------------------------------------------------ a GPU at all
if command -v nvidia-smi >/dev/null 2>&1; then
  if ! gpus=$(nvidia-smi -L 2>&1) || ! grep -q '^GPU ' <<<"$gpus"; then
    die "no CUDA GPU visible (nvidia-smi -L: $(head -n 3 <<<"$gpus" | tr '\n' ' '))"
  fi
elif compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
  gpus="(nvidia-smi not found; $(compgen -G '/dev/nvidia[0-9]*' | tr '\n' ' '))"
else
  die "no CUDA GPU visible (nvidia-smi not found, and no /dev/nvidia* device)"
fi
say "GPUs: $(tr '\n' ';' <<<"$gpus")"

# ------------------------------------------------------------ tools (no installs)
missing=()
cmake_flags=(-DCMAKE_BUILD_TYPE=Release -DVISIONOPS_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCH")

if ! command -v cmake >/dev/null 2>&1; then
  # pip's cmake package, if the Python environment has one
  d=$("$PYTHON" -c 'import cmake; print(cmake.CMAKE_BIN_DIR)' 2>/dev/null) && [ -x "$d/cmake" ] &&
    PATH=$d:$PATH
  command -v cmake >/dev/null 2>&1 || missing+=("cmake (apt: cmake)")
fi
if ! command -v ctest >/dev/null 2>&1 && command -v cmake >/dev/null 2>&1; then
  missing+=("ctest (comes with cmake)")
fi
command -v cc >/dev/null 2>&1 || missing+=("a C compiler, cc (apt: build-essential)")

nvcc=$(command -v nvcc 2>/dev/null)
if [ -z "$nvcc" ]; then
  for c in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc /opt/cuda/bin/nvcc \
    "$("$PYTHON" -c 'import glob, os, torch
s = os.path.dirname(os.path.dirname(torch.__file__))
print(min(glob.glob(os.path.join(s, "nvidia", "*", "bin", "nvcc")), default=""))' 2>/dev/null)"; do
    if [ -n "$c" ] && [ -x "$c" ]; then
      nvcc=$c
      break
    fi
  done
fi
if [ -n "$nvcc" ]; then
  cmake_flags+=("-DCMAKE_CUDA_COMPILER=$nvcc")
  PATH=$(dirname "$nvcc"):$PATH
else
  missing+=("nvcc (the CUDA toolkit; looked on PATH, /usr/local/cuda*/bin, /opt/cuda/bin)")
fi

# DLPack's header: the system's (libdlpack-dev), else the copy that ships with torch.
if ! printf '#include <dlpack/dlpack.h>\n' | cc -E -x c - >/dev/null 2>&1; then
  tdl=$("$PYTHON" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "dlpack.h"))' 2>/dev/null)
  if [ -n "$tdl" ] && [ -f "$tdl" ]; then
    mkdir -p "$BUILD/dlpack-include/dlpack"
    cp "$tdl" "$BUILD/dlpack-include/dlpack/dlpack.h"
    cmake_flags+=("-DDLPACK_INCLUDE_DIR=$BUILD/dlpack-include")
    say "dlpack/dlpack.h not installed: using torch's copy ($tdl)"
  else
    missing+=("dlpack/dlpack.h (apt: libdlpack-dev; torch's include/ATen/dlpack.h not found either)")
  fi
fi

have_openblas=0
if ldconfig -p 2>/dev/null | grep 'libopenblas\.so' >/dev/null; then
  for h in /usr/include/cblas.h /usr/include/*/cblas.h /usr/include/openblas/cblas.h \
    /usr/include/*/openblas*/cblas.h; do
    [ -f "$h" ] && have_openblas=1 && break
  done
fi
[ "$have_openblas" = 1 ] || missing+=("OpenBLAS with cblas.h (apt: libopenblas-dev)")

# deform_conv2d's CUDA path dlopens cuBLAS: the toolkit's, else the one pip's
# torch brings (nvidia/cublas/lib).
cublas_dirs=()
if [ -n "$nvcc" ]; then
  cuda_root=$(cd "$(dirname "$nvcc")/.." && pwd)
  for d in "$cuda_root/lib64" "$cuda_root"/targets/*/lib; do
    compgen -G "$d/libcublas.so*" >/dev/null && cublas_dirs+=("$d")
  done
fi
if [ ${#cublas_dirs[@]} -eq 0 ] && ! ldconfig -p 2>/dev/null | grep 'libcublas\.so' >/dev/null; then
  d=$("$PYTHON" -c 'import glob, os, torch
s = os.path.dirname(os.path.dirname(torch.__file__))
print(min(glob.glob(os.path.join(s, "nvidia", "*", "lib", "libcublas.so*")), default=""))' 2>/dev/null)
  if [ -n "$d" ]; then
    cublas_dirs+=("$(dirname "$d")")
  else
    say "warning: no libcublas found: deform_conv2d on CUDA will report it missing"
  fi
fi
for d in ${cublas_dirs[@]+"${cublas_dirs[@]}"}; do LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; done
export LD_LIBRARY_PATH PATH

if [ ${#missing[@]} -gt 0 ]; then
  say "cannot build here, missing (nothing is installed by this script):" >&2
  printf '  - %s\n' "${missing[@]}" >&2
  exit 1
fi

say "driver: $(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -n1)," \
  "nvcc: $("$nvcc" --version | grep -o 'release [0-9.]*')"

py=$(command -v "$PYTHON" 2>/dev/null)
if [ -n "$py" ]; then
  # The Python extension and the parity test for the interpreter that has torch.
  cmake_flags+=("-DPython3_EXECUTABLE=$py" "-DVISIONOPS_PYTHON_EXE=$py")
fi

# ------------------------------------------------------------ steps
mkdir -p "$LOGS"
steps=()
results=()
times=()
failed=0

left() { echo $((deadline - SECONDS > 1 ? deadline - SECONDS : 1)); }

# run_step NAME COMMAND...: runs it (within the time left), log in $LOGS/NAME.log.
run_step() {
  local name=$1 start=$SECONDS rc
  shift
  say "--- $name: $*"
  timeout --kill-after=10 "$(left)" "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  steps+=("$name")
  times+=($((SECONDS - start)))
  if [ $rc -eq 0 ]; then
    results+=("ok")
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    results+=("FAIL (out of time, ${LIMIT}s in all)")
    failed=1
  else
    results+=("FAIL (exit $rc)")
    failed=1
  fi
  if [ $rc -ne 0 ]; then
    say "$name failed; last lines of $LOGS/$name.log:"
    tail -n 40 "$LOGS/$name.log"
  fi
  return $rc
}

skip_step() {
  steps+=("$1")
  results+=("SKIP ($2)")
  times+=(0)
  say "--- $1: skipped: $2"
}

if run_step configure cmake -S . -B "$BUILD" "${cmake_flags[@]}"; then
  grep -E '^-- visionops' "$LOGS/configure.log"
  if run_step build cmake --build "$BUILD" -j "$JOBS"; then
    # The whole C suite; CPU-heavy tests use every core, so a few at a time.
    # shellcheck disable=SC2086
    run_step ctest ctest --test-dir "$BUILD" --output-on-failure -j 4 --timeout 500 ${CTEST_ARGS:-}
    grep -E 'tests passed|Skipped|Not Run|\*\*\*Failed|Timeout' "$LOGS/ctest.log" | tail -n 25
    # Every test's full output (test_cuda_ops' per-op lines among them).
    cp "$BUILD/Testing/Temporary/LastTest.log" "$LOGS/ctest-output.log" 2>/dev/null
    # On a GPU machine the GPU tests must run, not skip.
    if grep -Eq 'test_cuda_ops .*(\*\*\*Skipped|Not Run)' "$LOGS/ctest.log"; then
      say "test_cuda_ops skipped although a GPU is visible:"
      grep -m1 'no CUDA device' "$LOGS/ctest-output.log"
      results[${#results[@]} - 1]="FAIL (test_cuda_ops skipped on a GPU machine)"
      failed=1
    fi

    # The Python suite.
    stage=$BUILD/python
    if [ -z "$py" ]; then
      skip_step pytest "no $PYTHON"
    elif ! "$py" -c 'import pytest' >/dev/null 2>&1; then
      skip_step pytest "pytest is not installed for $py"
    elif ! "$py" -c 'import numpy' >/dev/null 2>&1; then
      skip_step pytest "numpy is not installed for $py"
    elif ! compgen -G "$stage/visionops/_C*.so" >/dev/null; then
      if [ -d python/visionops ]; then
        skip_step pytest "the package's extension was not built (Python headers missing? see $LOGS/configure.log)"
      else
        skip_step pytest "no Python package in this checkout"
      fi
    else
      PYTHONPATH=$stage${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        VISIONOPS_LIB=$BUILD/libvisionops.so PYTHONDONTWRITEBYTECODE=1 \
        run_step pytest "$py" -m pytest tests/python -q -p no:cacheprovider &&
        tail -n 1 "$LOGS/pytest.log"
    fi

    # CUDA against the CPU and torchvision, with times.
    if [ -z "$py" ]; then
      skip_step gpu_compare "no $PYTHON"
    elif run_step gpu_compare "$py" tests/python/gpu_compare.py "$BUILD/libvisionops.so"; then
      if grep -q 'skipped' "$LOGS/gpu_compare.log"; then
        results[${#results[@]} - 1]="SKIP ($(grep -m1 skipped "$LOGS/gpu_compare.log" | cut -c1-100))"
      fi
    fi
    sed -n '/^| op /,/^gpu_compare:/p' "$LOGS/gpu_compare.log"
  fi
fi

if [ -n "${GPU_CHECK_LOGS:-}" ]; then
  mkdir -p "$GPU_CHECK_LOGS" && cp "$LOGS"/*.log "$GPU_CHECK_LOGS"/ 2>/dev/null
fi

echo
echo "| step | result | seconds |"
echo "|---|---|---|"
for i in "${!steps[@]}"; do
  echo "| ${steps[$i]} | ${results[$i]} | ${times[$i]} |"
done
echo "| total | $([ $failed -eq 0 ] && echo ok || echo FAIL) | $SECONDS |"
exit $failed
