#!/usr/bin/env bash
# The demo's table keeps its columns: in every row the "ms" column ends where
# its heading does (long input lists wrap onto continuation lines instead of
# pushing the columns right). Usage: check-demo-table.sh path/to/visionops
set -euo pipefail
cli=${1:?usage: check-demo-table.sh path/to/visionops}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$cli" demo --boxes 300 --out "$out" >"$out/demo.txt"
awk '
  /^  op  / { end = index($0, " ms ") + 2; intable = 1; next }
  intable && /^$/ { intable = 0 }
  intable && /^  [a-z]/ {
    rows++
    # the 10-wide ms field, right-aligned, two spaces before and after it
    ms = substr($0, end - 9, 10)
    if (ms !~ /^ *([0-9]+\.[0-9]+|-)$/ || substr($0, end - 11, 2) != "  " ||
        substr($0, end + 1, 2) != "  ") {
      printf "misaligned row (ms column should end at %d):\n%s\n", end, $0; bad++
    }
  }
  END {
    if (!end || !rows) { print "no table found"; exit 1 }
    if (bad) exit 1
    printf "demo table: %d rows aligned\n", rows
  }' "$out/demo.txt"
