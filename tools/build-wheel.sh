#!/bin/sh
# build-wheel.sh - build the cubatch wheel from the tree:
#
#   tools/build-wheel.sh [--out DIR] [configure options...]
#
# configure + make in a folder of its own (the tree itself is untouched: from
# `make dist` when the tree is configured, else from a copy bootstrapped with
# autoreconf), make install into a staging folder, then tools/make-wheel.py packs
# the library (copy kernel embedded; links only libc/libdl/libpthread), the
# launcher, cubatch-report and the Python module python/cubatch into
# DIR/cubatch-VERSION-py3-none-manylinux_2_N_ARCH.whl (DIR: _build/wheel).
# The CUDA toolkit is found as by ./configure (nvcc on PATH, or --with-cuda=DIR).
# The same tree gives the same wheel, byte for byte (SOURCE_DATE_EPOCH dates the
# entries; the build folder stays out of the binaries).
# Prints the wheel's path last.  Then: pip install DIR/cubatch-*.whl
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
out=$src/_build/wheel
if [ "${1:-}" = --out ]; then
    out=${2:?--out needs a folder}
    shift 2
fi
case $out in /*) ;; *) out=$(pwd)/$out ;; esac
say() { printf '==> build-wheel: %s\n' "$*" >&2; }
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -f "$src/Makefile" ]; then
    say "sources from make dist"
    make -C "$src" dist >/dev/null
    version=$(sed -n 's/^PACKAGE_VERSION = //p' "$src/Makefile")
    tar -xzf "$src/cubatch-$version.tar.gz" -C "$work"
    tree=$work/cubatch-$version
else
    say "sources copied from $src, autoreconf -fi"
    tree=$work/tree
    mkdir "$tree"
    (cd "$src" && tar --exclude=./.git --exclude=./_build -cf - .) | (cd "$tree" && tar -xf -)
    (cd "$tree" && autoreconf -fi) >/dev/null 2>&1
fi
prefix=/opt/cubatch   # never used at run time: the console script names the library
say "configure $*; make; make install"
# The build folder's name stays out of the binaries (debug paths, and so the
# build id): the same tree gives the same library wherever it is built.
map="-ffile-prefix-map=$tree=/usr/src/cubatch"
(cd "$tree" && ./configure --prefix="$prefix" CFLAGS="${CFLAGS:--g -O2} $map" CCASFLAGS="${CCASFLAGS:--g -O2} $map" \
    "$@" >"$work/configure.log" 2>&1) ||
    { tail -30 "$work/configure.log" >&2; exit 1; }
grep -q '^#define CB_KERNEL_ENGINE 1' "$tree/config.h" ||
    { echo "build-wheel: configure found no nvcc: the wheel would lack the copy kernel (put nvcc on PATH or pass --with-cuda=DIR)" >&2; exit 1; }
(cd "$tree" && make -j"$jobs" >"$work/make.log" 2>&1 && make install DESTDIR="$work/stage" >>"$work/make.log" 2>&1) ||
    { tail -30 "$work/make.log" >&2; exit 1; }
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$tree/Makefile")
st=$work/stage$prefix
check=$(find "$st" -name cubatch-check -type f)
# debug information stays out of the wheel (the symbols the preload needs are dynamic)
strip --strip-debug "$st/lib/libcubatch.so" "$check"
say "packing"
python3 "$src/tools/make-wheel.py" --lib "$st/lib/libcubatch.so" --launcher "$st/bin/cubatch" \
    --report "$st/bin/cubatch-report" --check "$check" --python "$src/python" --license "$src/LICENSE" --version "$version" --out "$out"
