#!/usr/bin/env bash
# Installs what building and testing visionops needs on Debian/Ubuntu, only
# the packages that are missing. Run as root (or with sudo available).
#   install-deps.sh        build and test (make build / run / test / install)
#   install-deps.sh --dev  and the tools of make format / make lint:
#                          clang-format, clang-tidy (with run-clang-tidy), cppcheck, shellcheck
set -euo pipefail

# python3-torchvision (+ numpy) is the reference the parity tests compare against.
# python3-dev builds the extension; python3-venv and python3-pytest run its tests.
# libopenblas-dev runs deform_conv2d's CPU products (without it, a slower built-in one).
# The OpenCL backend builds on opencl-headers and loads the ICD loader
# (ocl-icd-opencl-dev); PoCL (pocl-opencl-icd) is the CPU device its tests
# run on everywhere, clinfo lists devices, libclblast-dev runs deform_conv2d's
# products there and python3-pyopencl carries its tensors in Python.
packages=(build-essential cmake pkg-config libdlpack-dev libopenblas-dev python3 python3-dev
          python3-venv python3-pytest python3-numpy python3-torchvision
          pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo libclblast-dev python3-pyopencl)
# --dev: the tools of make format / make lint; other arguments are more
# packages to install (make fuzz: clang and its runtimes).
for arg in "$@"; do
  case $arg in
    --dev) packages+=(clang-format clang-tidy cppcheck shellcheck) ;;
    -*)
      echo "usage: install-deps.sh [--dev] [PACKAGE...]" >&2
      exit 2
      ;;
    *) packages+=("$arg") ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "visionops: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1; then
  sudo="sudo"
else
  echo "visionops: missing packages ${missing[*]}; install them as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
