#!/usr/bin/env bash
# Packaging check: `pip install .` into a fresh venv (over the system
# site-packages, so torch/numpy come from Debian), then runs the Python quick
# start against the installed package from outside the tree. Needs PyPI for
# the build backend (scikit-build-core). CUDA is left out to keep it short.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-$(test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)}
venv=$(mktemp -d /tmp/visionops-pip.XXXXXX)
trap 'rm -rf "$venv"' EXIT
"$python" -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --config-settings=cmake.define.VISIONOPS_CUDA=OFF .
(cd "$venv" && "$venv/bin/python" "$OLDPWD/examples/quickstart.py")
echo "check-pip-install: pip install . works and the quick start runs"
