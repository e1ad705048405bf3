#!/bin/sh
# Runs a command as if CLBlast were not installed: in a private mount
# namespace (unshare, no root needed where user namespaces are allowed)
# /dev/null is bound over the library libclblast.so.1 resolves to, so
# dlopen fails as on a machine without the package. Exits 77 (a skipped
# ctest) where no namespace can be made; where CLBlast is absent anyway it
# runs the command as it is. Used by the test_opencl_deform_no_clblast test.
set -eu
lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libclblast.so.1" { print $NF; exit }')
if [ -z "$lib" ]; then
  exec "$@"
fi
real=$(readlink -f "$lib")
if ! unshare -rm true 2>/dev/null; then
  echo "skipped: cannot make a mount namespace (unshare -rm) to hide $real"
  exit 77
fi
# The inner shell expands its own arguments: single quotes are meant.
# shellcheck disable=SC2016
exec unshare -rm sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$real" "$@"
