#!/usr/bin/env bash
# The README's install path, as a user takes it: `cmake --install` into
# /usr/local (what `make install PREFIX=/usr/local` runs), then the installed
# `visionops` command and the C quick start built with
# `cc quickstart.c $(pkg-config --cflags --libs visionops)` -- no rpath, no
# LD_LIBRARY_PATH: the dynamic linker must find libvisionops.so.0 on its own,
# which needs the ldconfig that the install runs as root.
#
# Nothing on this machine changes: it runs in a private mount namespace in
# which /usr/local and /etc (where ldconfig writes ld.so.cache) are overlays
# on a scratch folder, dropped when it ends. Needs root, unshare and
# overlayfs; exits 77 (a skip for ctest) where they are missing.
# Usage: check-system-install.sh BUILD_DIR [EXTRA_CFLAGS]
set -euo pipefail
build=$(cd "${1:?usage: check-system-install.sh BUILD_DIR [EXTRA_CFLAGS]}" && pwd)
extra=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)

skip() {
  echo "check-system-install: skipped: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (to mount overlays in a private namespace)"
command -v unshare >/dev/null 2>&1 || skip "needs unshare (util-linux)"

if [ "${VO_IN_NAMESPACE:-}" != 1 ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work"/{etc,usr}/{upper,work} "$work/home"
  if ! unshare --mount --propagation private true 2>/dev/null; then
    skip "unshare --mount is not permitted here"
  fi
  rc=0
  VO_IN_NAMESPACE=1 VO_WORK=$work unshare --mount --propagation private "$0" "$build" "$extra" || rc=$?
  exit $rc
fi

# --- inside the private namespace ------------------------------------------
work=$VO_WORK
for d in etc usr/local; do
  n=${d%%/*}
  mount -t overlay overlay -o "lowerdir=/$d,upperdir=$work/$n/upper,workdir=$work/$n/work" "/$d" 2>/dev/null ||
    skip "cannot mount an overlay on /$d (overlayfs unavailable here)"
done
expect="kept 2 boxes: 0 2"
cd "$work/home"

echo "\$ cmake --install $build --prefix /usr/local"
cmake --install "$build" --prefix /usr/local | grep -v '^-- \(Installing\|Up-to-date\)' || true

# The library is in the linker's cache, so nothing else is needed to find it.
# (Read whole first: with pipefail, grep -q leaving early would fail the pipe.)
cache=$(ldconfig -p)
if ! grep -q 'libvisionops\.so\.0 .*=> /usr/local/lib/' <<<"$cache"; then
  echo "libvisionops.so.0 is not in the dynamic linker's cache after the install" >&2
  exit 1
fi
echo "ldconfig cache has libvisionops.so.0 in /usr/local/lib: ok"

if [ -e /usr/local/visionops ]; then
  echo "the install left /usr/local/visionops: $(find /usr/local/visionops | tr "\n" " ")" >&2
  exit 1
fi

if [ -x /usr/local/bin/visionops ]; then
  (unset LD_LIBRARY_PATH; /usr/local/bin/visionops info) >info.txt
  head -n 1 info.txt
  echo "installed visionops runs: ok"
fi

cp "$src/examples/quickstart.c" .
if command -v pkg-config >/dev/null 2>&1; then
  echo "\$ cc quickstart.c \$(pkg-config --cflags --libs visionops) && ./a.out"
  # shellcheck disable=SC2046,SC2086
  env -u PKG_CONFIG_PATH "${CC:-cc}" $extra quickstart.c $(env -u PKG_CONFIG_PATH pkg-config --cflags --libs visionops)
else
  echo "pkg-config not found: building the quick start with -lvisionops"
  # shellcheck disable=SC2086
  "${CC:-cc}" $extra quickstart.c -lvisionops
fi
if readelf -d a.out | grep -qE 'RPATH|RUNPATH'; then
  echo "a.out has an rpath: this check must not have one" >&2
  exit 1
fi
(unset LD_LIBRARY_PATH; ./a.out) | tee out.txt
grep -q "$expect" out.txt
echo "check-system-install: the installed library is found without an rpath: ok"
