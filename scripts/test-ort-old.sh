#!/usr/bin/env bash
# libvisionops_ort against an older ONNX Runtime (1.20; the torch 2.x lane
# tests the newest): tests/python/test_ort.py with
# Debian's torch 1.13, on the package a build staged.
#
#   scripts/test-ort-old.sh BUILD_DIR [PYTHON]
#
# The venv (over the system site-packages, which hold torch and numpy) is
# cached in $VISIONOPS_ORT_OLD_VENV (default ~/.cache/visionops/venv-ort-old),
# made anew when tests/python/requirements-ort-old.txt changes.
set -euo pipefail
build=$(cd "${1:?usage: test-ort-old.sh BUILD_DIR [PYTHON]}" && pwd)
python=${2:-$(test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)}
cd "$(dirname "$0")/.."
requirements=tests/python/requirements-ort-old.txt
venv=${VISIONOPS_ORT_OLD_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/visionops/venv-ort-old}
stamp="$(sha256sum "$requirements" | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.version)')"
if [ ! -f "$venv/.visionops-stamp" ] || [ "$(cat "$venv/.visionops-stamp")" != "$stamp" ]; then
  echo "test-ort-old: making $venv"
  rm -rf "$venv.new"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv --system-site-packages "$venv.new"
  "$venv.new/bin/python" -m pip install -q --no-cache-dir -r "$requirements"
  echo "$stamp" > "$venv.new/.visionops-stamp"
  rm -rf "$venv"
  mv "$venv.new" "$venv"
fi
py="$venv/bin/python"
"$py" -c 'import onnxruntime, torch; print("test-ort-old: onnxruntime %s, torch %s" % (onnxruntime.__version__, torch.__version__))'
PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" \
  VISIONOPS_SAMPLES_EXPORT=${VISIONOPS_SAMPLES_EXPORT:-$build/tests/vo_samples_export} \
  "$py" -m pytest -q -p no:cacheprovider tests/python/test_ort.py
