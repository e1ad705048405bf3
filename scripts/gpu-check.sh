#!/usr/bin/env bash
# gpu-check: the whole check on a machine with an NVIDIA GPU, in one command
# that fits one 590-second call. Installs nothing (the GPU machine has no
# package registry) and needs only what its image has: nvcc, a C compiler,
# CMake (the system's or pip's) with ninja or make, and a Python with torch,
# torchvision and numpy (pytest for the Python suite, Python's headers for
# the extension). OpenBLAS, DLPack's header and pkg-config are optional: without
# OpenBLAS deform_conv2d's CPU products use the built-in one, without
# libdlpack-dev torch's copy of dlpack.h is used.
#
# Steps, each timed, then a table (step, result, seconds):
#   found        what this machine has (GPU, driver, nvcc, compute-sanitizer,
#                cmake, compiler, Python, torch, torchvision, numpy, pytest,
#                Python headers, DLPack, OpenBLAS, cuBLAS); stops here when
#                something needed is missing or no GPU is visible
#   configure    a Release build with the CUDA backend for sm_$CUDA_ARCH in
#   build        build-gpu (device code with -lineinfo)
#   gpu_compare  every op's CUDA output against the CPU's and torchvision's
#                CUDA ops, with times (alone on the machine, for the times)
#   pytest       the Python suite, in the background from here on
#   ctest        the whole C suite (GPU and "large" tests included); fails
#                if test_backend_ops skips the cuda backend
#   memcheck,    compute-sanitizer over test_backend_ops' cuda backend (every op, both
#   racecheck    backward modes, without its >2^31-element case)
# Exits non-zero if any step fails.
#
# Variables: BUILD=build-gpu  JOBS=nproc  CUDA_ARCH=90  PYTHON (default: the first
#            python3 on PATH, or /usr/bin/python3, that imports torch)
#            GPU_CHECK_LIMIT=590 (seconds for everything)
#            GPU_CHECK_SANITIZE="memcheck racecheck" (compute-sanitizer tools; "" for none)
#            SANITIZER_LIMIT=120 (seconds at most for each of them)
#            COMPARE_LIMIT=240 (seconds at most for gpu_compare)
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
SANITIZE_TOOLS=${GPU_CHECK_SANITIZE-memcheck racecheck}
SANITIZER_LIMIT=${SANITIZER_LIMIT:-120}
COMPARE_LIMIT=${COMPARE_LIMIT:-240}
LOGS=$BUILD/gpu-check-logs
deadline=$((SECONDS + LIMIT))
mkdir -p "$LOGS"

say() { printf 'gpu-check: %s\n' "$*"; }

steps=()
results=()
times=()
failed=0

record() { # record NAME RESULT SECONDS [fails]
  steps+=("$1")
  results+=("$2")
  times+=("$3")
  [ "${4:-}" = fails ] && failed=1
}

print_table() {
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
}

# ------------------------------------------------------------ found: what is here
found=()    # "what|what was found" rows
missing=()  # what stops the build
note() { found+=("$1|$2"); }
py_q() { "$PYTHON" -c "$1" 2>/dev/null; }

# One Python start for everything asked of it (importing torch takes seconds).
declare -A pyv=()
while IFS='=' read -r k v; do
  [ -n "$k" ] && pyv[$k]=$v
done < <(py_q '
import importlib, os, sys, sysconfig
print("version=" + sys.version.split()[0])
print("include=" + sysconfig.get_paths()["include"])
for m in ("torch", "torchvision", "numpy", "pytest", "cmake", "ninja"):
    try:
        mod = importlib.import_module(m)
    except Exception as e:
        print(m + "=not importable (%s)" % type(e).__name__)
        continue
    print(m + "=" + str(getattr(mod, "__version__", "?")))
    if m == "torch":
        print("torch_dir=" + os.path.dirname(mod.__file__))
        print("torch_cuda=available: %s, built for CUDA %s" % (mod.cuda.is_available(), mod.version.cuda))
    if m == "cmake":
        print("cmake_bin=" + getattr(mod, "CMAKE_BIN_DIR", ""))
    if m == "ninja":
        print("ninja_bin=" + getattr(mod, "BIN_DIR", ""))
')
torch_dir=${pyv[torch_dir]:-}
torch_site=${torch_dir:+$(dirname "$torch_dir")}

# The GPU.
gpu_ok=0
if command -v nvidia-smi >/dev/null 2>&1; then
  if gpus=$(nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1) &&
    [ -n "$gpus" ] && ! grep -qi 'fail\|error\|no devices' <<<"$gpus"; then
    gpu_ok=1
    note "GPU (nvidia-smi)" "$(tr '\n' ';' <<<"$gpus" | sed 's/;$//')"
    cuda_drv=$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -n1)
    note "driver's CUDA" "${cuda_drv:-(not shown)}"
  else
    note "GPU (nvidia-smi)" "none visible: $(head -n 2 <<<"$gpus" | tr '\n' ' ')"
  fi
elif compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
  gpu_ok=1
  note "GPU" "nvidia-smi not found; $(compgen -G '/dev/nvidia[0-9]*' | tr '\n' ' ')"
else
  note "GPU" "none (no nvidia-smi, no /dev/nvidia*)"
fi

# nvcc: PATH, the usual toolkit folders, pip's nvidia-cuda-nvcc.
nvcc=$(command -v nvcc 2>/dev/null)
if [ -z "$nvcc" ]; then
  for c in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc /opt/cuda/bin/nvcc \
    ${torch_site:+"$torch_site"/nvidia/*/bin/nvcc}; do
    if [ -n "$c" ] && [ -x "$c" ]; then
      nvcc=$c
      break
    fi
  done
fi
cmake_flags=(-DCMAKE_BUILD_TYPE=Release -DVISIONOPS_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCH")
cuda_root=""
if [ -n "$nvcc" ]; then
  cmake_flags+=("-DCMAKE_CUDA_COMPILER=$nvcc")
  PATH=$(dirname "$nvcc"):$PATH
  cuda_root=$(cd "$(dirname "$nvcc")/.." && pwd)
  note "nvcc" "$nvcc, $("$nvcc" --version | grep -o 'release [0-9.]*, V[0-9.]*')"
else
  note "nvcc" "not found"
  missing+=("nvcc (the CUDA toolkit; looked on PATH, /usr/local/cuda*/bin, /opt/cuda/bin)")
fi

# compute-sanitizer: PATH, beside nvcc, the toolkit's own folder.
sanitizer=$(command -v compute-sanitizer 2>/dev/null)
if [ -z "$sanitizer" ]; then
  for c in ${cuda_root:+"$cuda_root/bin/compute-sanitizer" "$cuda_root/compute-sanitizer/compute-sanitizer"} \
    /usr/local/cuda*/compute-sanitizer/compute-sanitizer /opt/nvidia/*/compute-sanitizer*/compute-sanitizer; do
    if [ -x "$c" ]; then
      sanitizer=$c
      break
    fi
  done
fi
if [ -n "$sanitizer" ]; then
  note "compute-sanitizer" "$sanitizer, $("$sanitizer" --version 2>/dev/null | grep -io 'version [0-9.]*' | head -n1)"
else
  note "compute-sanitizer" "not found: the memcheck / racecheck steps skip"
fi

# CMake: the system's, else pip's cmake package; ninja (system's or pip's), else make.
if ! command -v cmake >/dev/null 2>&1; then
  d=${pyv[cmake_bin]:-} && [ -n "$d" ] && [ -x "$d/cmake" ] && PATH=$d:$PATH
fi
if command -v cmake >/dev/null 2>&1; then
  note "cmake" "$(command -v cmake), $(cmake --version | head -n1)"
  command -v ctest >/dev/null 2>&1 || missing+=("ctest (comes with cmake)")
else
  note "cmake" "not found"
  missing+=("cmake (apt: cmake; or pip's cmake package)")
fi
if ! command -v ninja >/dev/null 2>&1; then
  d=${pyv[ninja_bin]:-} && [ -n "$d" ] && [ -x "$d/ninja" ] && PATH=$d:$PATH
fi
if command -v ninja >/dev/null 2>&1; then
  generator=Ninja
  note "build tool" "ninja $(ninja --version) ($(command -v ninja))"
elif command -v make >/dev/null 2>&1; then
  generator="Unix Makefiles"
  note "build tool" "make ($(command -v make))"
else
  generator=""
  note "build tool" "neither ninja nor make"
  missing+=("ninja or make (pip's ninja package will do)")
fi
# The C compiler: cc, else gcc or clang (nvcc's host compiler is there in any case).
CC_BIN=""
for c in ${CC:-} cc gcc clang; do
  if command -v "$c" >/dev/null 2>&1; then
    CC_BIN=$(command -v "$c")
    break
  fi
done
if [ -n "$CC_BIN" ]; then
  cmake_flags+=("-DCMAKE_C_COMPILER=$CC_BIN")
  note "C compiler" "$CC_BIN: $("$CC_BIN" --version | head -n1)"
  if printf 'int main(void){return 0;}\n' | "$CC_BIN" -fopenmp -x c - -o "$LOGS/omp-probe" >/dev/null 2>&1; then
    note "OpenMP" "yes"
  else
    note "OpenMP" "no: CPU kernels single-threaded"
  fi
else
  note "C compiler" "not found"
  missing+=("a C compiler: cc, gcc or clang (apt: build-essential)")
fi

# Python and its packages.
py=$(command -v "$PYTHON" 2>/dev/null)
if [ -n "$py" ]; then
  note "python" "$py, ${pyv[version]:-?}"
  for m in torch torchvision numpy pytest; do
    note "  $m" "${pyv[$m]:-not importable}"
  done
  note "  torch.cuda" "${pyv[torch_cuda]:-(no torch)}"
  pyinc=${pyv[include]:-}
  if [ -n "$pyinc" ] && [ -f "$pyinc/Python.h" ]; then
    note "  Python headers" "$pyinc/Python.h"
  else
    note "  Python headers" "missing ($pyinc/Python.h): the extension is not built, pytest skips"
  fi
  # The Python extension and the parity test for the interpreter that has torch.
  cmake_flags+=("-DPython3_EXECUTABLE=$py" "-DVISIONOPS_PYTHON_EXE=$py")
else
  note "python" "$PYTHON not found: pytest and gpu_compare skip"
fi

# DLPack's header: the system's (libdlpack-dev), else the copy that ships with torch.
if [ -n "$CC_BIN" ] && printf '#include <dlpack/dlpack.h>\n' | "$CC_BIN" -E -x c - >/dev/null 2>&1; then
  note "DLPack header" "the system's dlpack/dlpack.h"
else
  tdl=${torch_dir:+$torch_dir/include/ATen/dlpack.h}
  if [ -n "$tdl" ] && [ -f "$tdl" ]; then
    mkdir -p "$BUILD/dlpack-include/dlpack"
    cp "$tdl" "$BUILD/dlpack-include/dlpack/dlpack.h"
    cmake_flags+=("-DDLPACK_INCLUDE_DIR=$BUILD/dlpack-include")
    note "DLPack header" "torch's copy ($tdl; no libdlpack-dev)"
  else
    note "DLPack header" "not found"
    missing+=("dlpack/dlpack.h (apt: libdlpack-dev; torch's include/ATen/dlpack.h not found either)")
  fi
fi

# OpenBLAS: optional (VISIONOPS_BLAS=AUTO); configure's own finding is in its log.
openblas="no"
# (The cache read whole: with pipefail, grep -q leaving early would fail the pipe.)
ldcache=$(ldconfig -p 2>/dev/null)
if grep -q 'libopenblas\.so' <<<"$ldcache"; then
  for h in /usr/include/cblas.h /usr/include/*/cblas.h /usr/include/openblas/cblas.h \
    /usr/include/*/openblas*/cblas.h; do
    [ -f "$h" ] && openblas="yes ($h)" && break
  done
fi
if [ "$openblas" = no ]; then
  note "OpenBLAS" "not found: deform_conv2d's CPU products use the built-in GEMM"
else
  note "OpenBLAS" "$openblas"
fi

# deform_conv2d's CUDA path dlopens cuBLAS: the toolkit's, else the one pip's
# torch brings (nvidia/cublas/lib).
cublas_dirs=()
if [ -n "$cuda_root" ]; then
  for d in "$cuda_root/lib64" "$cuda_root"/targets/*/lib; do
    compgen -G "$d/libcublas.so*" >/dev/null && cublas_dirs+=("$d")
  done
fi
if [ ${#cublas_dirs[@]} -eq 0 ] && ! grep -q 'libcublas\.so' <<<"$ldcache"; then
  for d in ${torch_site:+"$torch_site"/nvidia/*/lib}; do
    compgen -G "$d/libcublas.so*" >/dev/null && cublas_dirs+=("$d") && break
  done
fi
if [ ${#cublas_dirs[@]} -gt 0 ]; then
  note "cuBLAS" "${cublas_dirs[*]}"
elif grep -q 'libcublas\.so' <<<"$ldcache"; then
  note "cuBLAS" "on the loader's path"
else
  note "cuBLAS" "not found: deform_conv2d on CUDA will report it missing"
fi
for d in ${cublas_dirs[@]+"${cublas_dirs[@]}"}; do LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; done
export LD_LIBRARY_PATH PATH

if command -v pkg-config >/dev/null 2>&1; then
  note "pkg-config" "yes"
else
  note "pkg-config" "not found: the install test checks only the CMake package"
fi
note "CPU" "$(nproc 2>/dev/null) cores; build -j $JOBS; time limit ${LIMIT}s"

{
  echo "| what | found |"
  echo "|---|---|"
  for row in "${found[@]}"; do echo "| ${row%%|*} | ${row#*|} |"; done
} | tee "$LOGS/found.log"

if [ ${#missing[@]} -gt 0 ]; then
  say "cannot build here, missing (nothing is installed by this script):" >&2
  printf '  - %s\n' "${missing[@]}" | tee -a "$LOGS/found.log" >&2
  record found "FAIL (missing: ${#missing[@]}, see above)" "$SECONDS" fails
  print_table
  exit 1
fi
if [ $gpu_ok = 0 ]; then
  say "no CUDA GPU visible: nothing to check here" >&2
  record found "FAIL (no CUDA GPU visible)" "$SECONDS" fails
  print_table
  exit 1
fi
record found ok "$SECONDS"

# ------------------------------------------------------------ steps
left() { echo $((deadline - SECONDS > 1 ? deadline - SECONDS : 1)); }

# outcome NAME RC SECONDS: records a finished step; prints its log's end on failure.
outcome() {
  local name=$1 rc=$2 took=$3
  if [ "$rc" -eq 0 ]; then
    record "$name" ok "$took"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    record "$name" "FAIL (out of time after ${took}s)" "$took" fails
  else
    record "$name" "FAIL (exit $rc)" "$took" fails
  fi
  if [ "$rc" -ne 0 ]; then
    say "$name failed; last lines of $LOGS/$name.log:"
    tail -n 40 "$LOGS/$name.log"
  fi
  return "$rc"
}

# run_step NAME [--cap SECONDS] COMMAND...: runs it within the time left
# (and the cap), log in $LOGS/NAME.log.
run_step() {
  local name=$1 start=$SECONDS rc limit
  shift
  limit=$(left)
  if [ "$1" = --cap ]; then
    [ "$2" -lt "$limit" ] && limit=$2
    shift 2
  fi
  say "--- $name (at most ${limit}s): $*"
  timeout --kill-after=10 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  outcome "$name" $rc $((SECONDS - start))
}

skip_step() {
  record "$1" "SKIP ($2)" 0
  say "--- $1: skipped: $2"
}

# A step in the background: bg_start NAME COMMAND..., later bg_wait NAME.
declare -A bg_pid bg_start_s
bg_start() {
  local name=$1
  shift
  local limit=$(($(left) - 5))
  [ $limit -ge 1 ] || limit=1
  say "--- $name (background, at most ${limit}s): $*"
  bg_start_s[$name]=$SECONDS
  (
    timeout --kill-after=5 $limit "$@" >"$LOGS/$name.log" 2>&1
    echo $? >"$LOGS/$name.rc"
  ) &
  bg_pid[$name]=$!
}
bg_wait() {
  local name=$1 rc
  wait "${bg_pid[$name]}"
  rc=$(cat "$LOGS/$name.rc" 2>/dev/null || echo 1)
  outcome "$name" "$rc" $((SECONDS - ${bg_start_s[$name]}))
}

gen_flags=()
[ -f "$BUILD/CMakeCache.txt" ] || gen_flags=(-G "$generator")
run_step configure cmake -S . -B "$BUILD" "${gen_flags[@]}" "${cmake_flags[@]}" || {
  print_table
  exit 1
}
grep -E '^-- visionops|OpenBLAS' "$LOGS/configure.log"
run_step build cmake --build "$BUILD" -j "$JOBS" || {
  print_table
  exit 1
}

stage=$BUILD/python
py_env=(env "PYTHONPATH=$stage${PYTHONPATH:+:$PYTHONPATH}"
  "LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  "VISIONOPS_LIB=$BUILD/libvisionops.so" PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1)

# CUDA against the CPU and torchvision, with times: alone, so the times mean something.
if [ -z "$py" ]; then
  skip_step gpu_compare "no $PYTHON"
elif run_step gpu_compare --cap "$COMPARE_LIMIT" "$py" tests/python/gpu_compare.py "$BUILD/libvisionops.so"; then
  if grep -q 'skipped' "$LOGS/gpu_compare.log"; then
    results[${#results[@]} - 1]="SKIP ($(grep -m1 skipped "$LOGS/gpu_compare.log" | cut -c1-100))"
  fi
fi
sed -n '/^| op /,/^gpu_compare:/p' "$LOGS/gpu_compare.log"

# The Python suite, in the background while the C suite and the sanitizers run.
pytest_bg=0
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
  # A quarter of the cores: ctest's programs use the rest meanwhile.
  bg_start pytest "${py_env[@]}" "OMP_NUM_THREADS=$(((JOBS + 3) / 4))" \
    "$py" -m pytest tests/python -q -p no:cacheprovider
  pytest_bg=1
fi

# The whole C suite; CPU-heavy tests use every core, so a few at a time.
# shellcheck disable=SC2086
run_step ctest ctest --test-dir "$BUILD" --output-on-failure -j 4 --timeout 500 ${CTEST_ARGS:-}
grep -E 'tests passed|Skipped|Not Run|\*\*\*Failed|Timeout' "$LOGS/ctest.log" | tail -n 25
# Every test's full output (test_backend_ops' per-op lines among them).
cp "$BUILD/Testing/Temporary/LastTest.log" "$LOGS/ctest-output.log" 2>/dev/null
# On a GPU machine the GPU tests must run, not skip.
if grep -q 'SKIP backend cuda' "$LOGS/ctest-output.log"; then
  say "test_backend_ops skipped the cuda backend although a GPU is visible:"
  grep -m1 'SKIP backend cuda' "$LOGS/ctest-output.log"
  results[${#results[@]} - 1]="FAIL (test_backend_ops skipped cuda on a GPU machine)"
  failed=1
fi

# compute-sanitizer over every op's CUDA kernels (test_backend_ops, small cases).
for tool in $SANITIZE_TOOLS; do
  if [ -z "$sanitizer" ]; then
    skip_step "$tool" "compute-sanitizer not found"
  elif [ ! -x "$BUILD/tests/test_backend_ops" ]; then
    skip_step "$tool" "no tests/test_backend_ops in $BUILD"
  else
    run_step "$tool" --cap "$SANITIZER_LIMIT" \
      env VO_TEST_BACKEND_OPS_SKIP_LARGE=1 VO_TEST_BACKEND_OPS_ONLY=cuda \
      "$sanitizer" --tool "$tool" --error-exitcode 99 \
      --print-limit 20 "$BUILD/tests/test_backend_ops"
    rc=$?
    grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test_backend_ops:' "$LOGS/$tool.log" | tail -n 3
    # A device the tool refuses (seen under gVisor) is no finding about this code.
    if [ $rc -ne 0 ] && grep -qiE 'device not supported|not supported on this (platform|device)' "$LOGS/$tool.log"; then
      results[${#results[@]} - 1]="SKIP (compute-sanitizer: $(grep -m1 -ioE 'device not supported|not supported on this [a-z]+' "$LOGS/$tool.log"))"
      failed=0
      for r in "${results[@]}"; do case $r in FAIL*) failed=1 ;; esac; done
    fi
  fi
done

if [ $pytest_bg = 1 ]; then
  bg_wait pytest && tail -n 1 "$LOGS/pytest.log"
fi

print_table
exit $failed
