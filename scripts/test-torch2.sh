#!/usr/bin/env bash
# The torch 2.x lane: builds visionops into a cached venv that holds the
# newest torch and torchvision from PyPI plus onnx and onnxruntime
# (tests/python/requirements-torch2.txt), then runs the whole Python suite
# there: parity with torchvision 0.29, torch.library.opcheck on every op,
# torch.compile, torch.export, ONNX (run in onnxruntime), autocast,
# TorchScript, torch.func and DDP.
#
#   scripts/test-torch2.sh [PYTHON]
#
# The venv lives outside the clone, in $VISIONOPS_TORCH2_VENV (default
# ~/.cache/visionops/venv-torch2; several GB); it is made anew when the
# requirements file or the interpreter changes, and kept otherwise. The
# extension is built with CUDA off (the Debian lane builds CUDA), in
# $VISIONOPS_TORCH2_BUILD (default build-torch2), incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-$(test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)}
requirements=tests/python/requirements-torch2.txt
venv=${VISIONOPS_TORCH2_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/visionops/venv-torch2}
build_dir=${VISIONOPS_TORCH2_BUILD:-build-torch2}

stamp="$(sha256sum "$requirements" | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.version)')"
if [ ! -f "$venv/.visionops-stamp" ] || [ "$(cat "$venv/.visionops-stamp")" != "$stamp" ]; then
  echo "test-torch2: making $venv (downloads torch from PyPI, several GB)"
  rm -rf "$venv.new"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv.new"
  "$venv.new/bin/pip" install -q --no-cache-dir --upgrade pip
  "$venv.new/bin/pip" install -q --no-cache-dir -r "$requirements"
  echo "$stamp" > "$venv.new/.visionops-stamp"
  rm -rf "$venv"
  mv "$venv.new" "$venv"
fi
# A venv moved after creation keeps its old paths in its scripts: call the
# interpreter, never bin/pip.
py="$venv/bin/python"
"$py" -c 'import torch, torchvision, onnx, onnxruntime; print("test-torch2: torch %s, torchvision %s, onnx %s, onnxruntime %s" % (torch.__version__, torchvision.__version__, onnx.__version__, onnxruntime.__version__))'

"$py" -m pip install -q --no-deps --no-build-isolation \
  --config-settings=cmake.define.VISIONOPS_CUDA=OFF \
  --config-settings=build-dir="$build_dir" .
# pytest runs from the tree's root but imports the installed package.
"$py" -c 'import visionops, os; assert not visionops.__file__.startswith(os.getcwd() + "/python"), visionops.__file__'
exec "$py" -m pytest tests/python -q -p no:cacheprovider
