#!/usr/bin/env bash
# Runs the Python test suite (tests/python, pytest) against the package
# staged by a build: scripts/test-python.sh BUILD_DIR [PYTHON]. The tests run
# in a venv (BUILD_DIR/venv) made with --system-site-packages over the
# interpreter that has Debian's python3-numpy, python3-torchvision and
# python3-pytest, so nothing is downloaded.
set -euo pipefail
build=${1:?usage: test-python.sh BUILD_DIR [PYTHON]}
python=${2:-python3}
build=$(cd "$build" && pwd)
cd "$(dirname "$0")/.."
if ! ls "$build"/python/visionops/_C.*.so >/dev/null 2>&1; then
  echo "test-python: $build has no Python extension (python3-dev missing, or VISIONOPS_PYTHON=OFF)" >&2
  exit 1
fi
venv="$build/venv"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv --system-site-packages "$venv"
fi
if ! "$venv/bin/python" -c "import pytest" 2>/dev/null; then
  echo "test-python: pytest is not importable from $python (apt-get install python3-pytest)" >&2
  exit 1
fi
PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" \
  exec "$venv/bin/python" -m pytest tests/python -q -p no:cacheprovider
