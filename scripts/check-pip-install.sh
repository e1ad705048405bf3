#!/usr/bin/env bash
# Packaging check: `pip install .` into a fresh venv (over the system
# site-packages, so torch/numpy come from Debian), then runs the Python quick
# start against the installed package from outside the tree, and checks that
# the wheel ships libvisionops_ort beside the extension. Needs PyPI for
# the build backend (scikit-build-core). CUDA is left out to keep it short.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-$(test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)}
venv=$(mktemp -d /tmp/visionops-pip.XXXXXX)
trap 'rm -rf "$venv"' EXIT
"$python" -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --config-settings=cmake.define.VISIONOPS_CUDA=OFF .
(cd "$venv" && "$venv/bin/python" "$OLDPWD/examples/quickstart.py")
(cd "$venv" && "$venv/bin/python" -c 'import os, visionops.onnx as o; p = o.ort_library_path(); assert os.path.dirname(p) == os.path.dirname(o.__file__), p; print("ships", os.path.basename(p))')
echo "check-pip-install: pip install . works and the quick start runs"
