#!/bin/sh
# quickstart.sh - build cubatch and run its demo, on a fresh Debian 12 machine
# that has the CUDA toolkit (nvcc on PATH, or pass --with-cuda=DIR).
#
#   ./quickstart.sh [configure options...]
#
# 1. installs the build and test dependencies (tools/install-deps.sh: apt-get,
#    through sudo when not root; skipped when they are all installed already),
# 2. autoreconf -fi, ./configure with the arguments given here, make,
# 3. examples/run-demo.sh: the demo without cubatch, then under the cubatch
#    launcher with --stats, against the real driver when there is a GPU, else
#    against the test suite's simulated driver (it says which).
# Then `make check` runs the test suite.
set -eu
cd "$(dirname "$0")"

say() { printf '\n==> %s\n' "$*"; }

tools/install-deps.sh

say "autoreconf -fi"
autoreconf -fi
say "./configure $*"
./configure "$@"
say "make"
make -j"$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
say "examples/run-demo.sh"
examples/run-demo.sh
say "done; next: make check (the test suite), and see README.md for using cubatch"
