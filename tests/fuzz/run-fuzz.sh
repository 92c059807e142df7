#!/bin/sh
# run-fuzz.sh - differential fuzzing of cubatch against the simulated driver.
#
#   tests/fuzz/run-fuzz.sh [--seeds A-B] [--seconds N] [--len N] [-j N]
#                          [--save DIR] [--no-replay] [--verbose]
#
# Every seed is one generated program, run plain and under
# LD_PRELOAD=libcubatch.so with option variations chosen from the seed; their
# outputs must be identical.  A divergence is shrunk and saved as DIR/<seed>.ops
# (default: tests/fuzz/regressions in the source tree).  The saved programs in
# tests/fuzz/regressions are replayed first unless --no-replay.
# Run from the build tree, or set top_builddir / top_srcdir.  Exit status 0 when
# nothing diverged.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=.}"
top_builddir=$(cd "$top_builddir" && pwd)
seeds=1-2000 seconds=0 len=150 replay=1 verbose=
jobs=$(nproc 2>/dev/null || echo 2)
save=$top_srcdir/tests/fuzz/regressions
while [ $# -gt 0 ]; do
    case $1 in
    --seeds) seeds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --len) len=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    --save) save=$2; shift 2 ;;
    --no-replay) replay=0; shift ;;
    --verbose) verbose=--verbose; shift ;;
    *) sed -n '2,15p' "$0" >&2; exit 2 ;;
    esac
done
case $seeds in *-*) ;; *) seeds=$seeds-$seeds ;; esac
fuzz=$top_builddir/tests/fuzz/fuzz
lib=$top_builddir/src/.libs/libcubatch.so
simdir=$top_builddir/tests/sim/.libs
for f in "$fuzz" "$lib" "$simdir/libcuda.so.1"; do
    [ -e "$f" ] || { echo "run-fuzz.sh: $f missing (make check builds it)" >&2; exit 2; }
done
set -- drive --lib "$lib" --simdir "$simdir" --seeds "$seeds" --seconds "$seconds" --len "$len" -j "$jobs" --regress "$save" $verbose
if [ $replay = 1 ]; then
    regs=$(ls "$top_srcdir"/tests/fuzz/regressions/*.ops 2>/dev/null)
    # shellcheck disable=SC2086
    [ -n "$regs" ] && set -- "$@" --replay $regs
fi
exec "$fuzz" "$@"
