#!/usr/bin/env bash
# `visionops demo` runs on OpenCL where the backend has a device: its table
# has an opencl row for every op (a result, or "not implemented on opencl"
# for an op without OpenCL glue yet), and the run passes (each OpenCL result
# agrees with the CPU's). Exits 77 (skip) where the demo skips OpenCL.
# Usage: check-demo-opencl.sh path/to/visionops
set -euo pipefail
cli=${1:?usage: check-demo-opencl.sh path/to/visionops}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$cli" demo --boxes 300 --out "$out" >"$out/demo.txt"
if grep -q '^  opencl skipped' "$out/demo.txt"; then
  grep '^  opencl skipped' "$out/demo.txt"
  exit 77
fi
awk '
  /^  op  / { intable = 1; next }
  intable && /^$/ { intable = 0 }
  intable && /^  [a-z]/ { ops[$1] = 1; if ($2 == "opencl") on[$1] = 1 }
  END {
    for (op in ops) { n++; if (!(op in on)) { printf "no opencl row for %s\n", op; bad++ } }
    if (!n) { print "no table found"; exit 1 }
    if (bad) exit 1
    printf "demo: %d ops with an opencl row\n", n
  }' "$out/demo.txt"
grep -E '^  [a-z_]+ +opencl ' "$out/demo.txt"
