#!/bin/sh
# quickstart.sh - build cubatch and run its demo, on a fresh Debian 12 machine
# that has the CUDA toolkit (nvcc on PATH, or pass --with-cuda=DIR).
#
#   ./quickstart.sh [configure options...]
#
# 1. installs the build dependencies with apt-get (through sudo when not root;
#    skipped when they are all installed already),
# 2. autoreconf -fi, ./configure with the arguments given here, make,
# 3. examples/run-demo.sh: the demo without cubatch, then under the cubatch
#    launcher with --stats, against the real driver when there is a GPU, else
#    against the test suite's simulated driver (it says which).
# Then `make check` runs the test suite.
set -eu
cd "$(dirname "$0")"

say() { printf '\n==> %s\n' "$*"; }

packages="autoconf automake libtool pkg-config check uthash-dev make gcc"
if command -v apt-get >/dev/null 2>&1; then
    missing=''
    for p in $packages; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        sudo=''
        if [ "$(id -u)" -ne 0 ]; then
            command -v sudo >/dev/null 2>&1 || {
                echo "quickstart: need root (or sudo) to install:$missing" >&2
                exit 1
            }
            sudo=sudo
        fi
        say "installing build dependencies:$missing"
        $sudo apt-get update
        # shellcheck disable=SC2086
        $sudo apt-get install -y $packages
    else
        say "build dependencies already installed ($packages)"
    fi
else
    say "no apt-get: install these (or your system's equivalents) yourself: $packages"
fi

say "autoreconf -fi"
autoreconf -fi
say "./configure $*"
./configure "$@"
say "make"
make -j"$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
say "examples/run-demo.sh"
examples/run-demo.sh
say "done; next: make check (the test suite), and see README.md for using cubatch"
