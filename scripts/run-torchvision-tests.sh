#!/usr/bin/env bash
# Runs torchvision's own operator tests (test/test_ops.py of the installed
# torchvision) with visionops in place of torchvision's operators:
#   scripts/run-torchvision-tests.sh [BUILD_DIR [PYTHON]] [-- PYTEST_ARGS...]
# BUILD_DIR (default build) holds the staged package (BUILD_DIR/python);
# PYTHON (default /usr/bin/python3) has torch, torchvision and pytest.
# The test files are not part of this repository. They are found, in order:
#   $TORCHVISION_TESTS                    a directory holding test_ops.py
#   BUILD_DIR/torchvision-tests/vision-V  a copy fetched by an earlier run
#   Debian's source package of the installed python3-torchvision (its exact
#   version), fetched with apt-get source into BUILD_DIR/torchvision-tests
#   (needs root, or at least a writable apt cache, and the Debian mirror; no
#   system apt configuration is changed).
# tests/torchvision_suite/visionops_tv_plugin.py does the swap and lists
# what is deselected (quantized tensors) and what is an expected failure
# (the README's deliberate differences).
set -euo pipefail
build=build
python=/usr/bin/python3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then build=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then python=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)
if ! ls "$build"/python/visionops/_C.*.so >/dev/null 2>&1; then
  echo "run-torchvision-tests: $build/python has no visionops package (run make first)" >&2
  exit 1
fi
version=$("$python" -c 'import re, torchvision; print(re.match(r"\d+\.\d+\.\d+", torchvision.__version__).group(0))')
cache="$build/torchvision-tests"

tests=${TORCHVISION_TESTS:-}
if [ -z "$tests" ] && [ -f "$cache/vision-$version/test/test_ops.py" ]; then
  tests="$cache/vision-$version/test"
fi
if [ -z "$tests" ]; then
  if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
    echo "run-torchvision-tests: no apt-get to fetch torchvision $version's tests; set" \
         "TORCHVISION_TESTS to a directory holding its test/test_ops.py" >&2
    exit 1
  fi
  src_version=$(dpkg-query -W -f='${source:Version}' python3-torchvision 2>/dev/null || true)
  if [ -z "$src_version" ]; then
    echo "run-torchvision-tests: torchvision is not Debian's python3-torchvision; set" \
         "TORCHVISION_TESTS to a directory holding torchvision $version's test/test_ops.py" >&2
    exit 1
  fi
  # shellcheck source=/dev/null
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  mirror=${TORCHVISION_DEB_MIRROR:-http://deb.debian.org/debian}
  apt="$cache/apt"
  mkdir -p "$apt/lists/partial" "$cache"
  echo "deb-src $mirror $codename main" > "$apt/sources.list"
  aptopts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
           -o "Dir::State::Lists=$apt/lists" -o APT::Sandbox::User=root)
  echo "run-torchvision-tests: fetching pytorch-vision $src_version's source from $mirror" >&2
  apt-get -q "${aptopts[@]}" update >&2
  # Only the upstream tarball is needed; a missing Debian tarball is not fatal.
  (cd "$cache" && apt-get -q "${aptopts[@]}" source --download-only \
     "pytorch-vision=$src_version" >&2) || true
  orig=""
  for f in "$cache"/pytorch-vision_"${src_version%-*}".orig.tar.*; do
    [ -f "$f" ] && { orig=$f; break; }
  done
  if [ -z "$orig" ]; then
    echo "run-torchvision-tests: could not fetch pytorch-vision $src_version's source" >&2
    exit 1
  fi
  top=$(set +o pipefail; tar tf "$orig" | head -1 | cut -d/ -f1)
  tar xf "$orig" -C "$cache" --wildcards "$top/test/*"
  if [ "$top" != "vision-$version" ]; then
    rm -rf "$cache/vision-$version"
    mv "$cache/$top" "$cache/vision-$version"
  fi
  tests="$cache/vision-$version/test"
fi
[ -f "$tests/test_ops.py" ] || { echo "run-torchvision-tests: $tests has no test_ops.py" >&2; exit 1; }
echo "run-torchvision-tests: torchvision $version's $tests/test_ops.py with visionops $build/python" >&2
cd "$tests"
PYTHONPATH="$build/python:$root/tests/torchvision_suite${PYTHONPATH:+:$PYTHONPATH}" \
  exec "$python" -m pytest -p visionops_tv_plugin test_ops.py -q -p no:cacheprovider -rfExX \
  -W ignore::UserWarning "$@"
