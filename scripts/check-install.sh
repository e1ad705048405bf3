#!/usr/bin/env bash
# Installs a built tree into a scratch prefix and builds the quick start
# against it three ways: pkg-config (shared), pkg-config --static, and a CMake
# project using find_package(visionops); where the build has libvisionops_ort,
# checks that pkg-config and the CMake package (visionops::ort) name the
# installed one and that it exports RegisterCustomOps alone.
# Usage: check-install.sh BUILD_DIR [EXTRA_CFLAGS]
set -euo pipefail
build=$1
extra=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
pcdir=$(dirname "$(find "$work/prefix" -name visionops.pc | head -n1)")
libdir=$(dirname "$pcdir")
export PKG_CONFIG_PATH=$pcdir
expect="kept 2 boxes: 0 2"

# The Python module belongs to the wheel (pip install .), not to the prefix.
stray=$(find "$work/prefix" -name '_C*.so' -o -name '_C*.pyd')
if [ -n "$stray" ]; then
  echo "cmake --install put a Python module under the prefix: ${stray#"$work/prefix/"}" >&2
  exit 1
fi
echo "no Python module under the prefix: ok"

if ! command -v pkg-config >/dev/null 2>&1; then
  echo "pkg-config not found: its two checks skipped (apt-get install pkg-config)"
  skip_pkg_config=1
fi

if [ -z "${skip_pkg_config:-}" ]; then
# shellcheck disable=SC2046,SC2086
"${CC:-cc}" -std=c99 $extra "$src/examples/quickstart.c" -o "$work/shared" $(pkg-config --cflags --libs visionops) \
  -Wl,-rpath,"$libdir"
"$work/shared" | grep -q "$expect"
echo "pkg-config shared: ok"

# shellcheck disable=SC2046,SC2086
"${CC:-cc}" -std=c99 $extra "$src/examples/quickstart.c" -o "$work/static" $(pkg-config --cflags visionops) \
  $(pkg-config --static --libs visionops | sed 's/-lvisionops/-l:libvisionops.a/')
"$work/static" | grep -q "$expect"
ldd "$work/static" | grep -q libvisionops && { echo "static binary links libvisionops.so" >&2; exit 1; }
echo "pkg-config static: ok"
fi

mkdir -p "$work/consumer"
cp "$src/examples/quickstart.c" "$work/consumer/"
cat > "$work/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(consumer C)
find_package(visionops REQUIRED)
add_executable(quickstart_shared quickstart.c)
target_link_libraries(quickstart_shared visionops::visionops)
add_executable(quickstart_static quickstart.c)
target_link_libraries(quickstart_static visionops::visionops_static)
if(TARGET visionops::ort)
  file(GENERATE OUTPUT ort_library.txt CONTENT "$<TARGET_FILE:visionops::ort>")
endif()
CMAKE
# The consumer uses the build's own generator and build tool (the GPU image
# has ninja but no make).
gen=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build/CMakeCache.txt")
mk=$(sed -n 's/^CMAKE_MAKE_PROGRAM:[A-Z]*=//p' "$build/CMakeCache.txt")
cmake -S "$work/consumer" -B "$work/consumer/build" ${gen:+-G "$gen"} ${mk:+-DCMAKE_MAKE_PROGRAM="$mk"} \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_C_FLAGS="$extra" -DCMAKE_EXE_LINKER_FLAGS="$extra" >/dev/null
cmake --build "$work/consumer/build" >/dev/null
"$work/consumer/build/quickstart_shared" | grep -q "$expect"
"$work/consumer/build/quickstart_static" | grep -q "$expect"
echo "cmake find_package shared + static: ok"

if [ -f "$build/libvisionops_ort.so" ]; then
  ort=$libdir/libvisionops_ort.so
  test -f "$ort" || { echo "libvisionops_ort.so was not installed in $libdir" >&2; exit 1; }
  exported=$(nm -D --defined-only "$ort" | awk '{print $3}')
  [ "$exported" = RegisterCustomOps ] || { echo "libvisionops_ort exports: $exported" >&2; exit 1; }
  if [ -z "${skip_pkg_config:-}" ]; then
    [ "$(readlink -f "$(pkg-config --variable=ort_library visionops)")" = "$(readlink -f "$ort")" ]
  fi
  [ "$(readlink -f "$(cat "$work/consumer/build/ort_library.txt")")" = "$(readlink -f "$ort")" ]
  echo "libvisionops_ort installed, named by pkg-config and visionops::ort, exports RegisterCustomOps alone: ok"
fi
