#!/bin/sh
# check_capture_legal.sh - the simulated driver refuses during capture what the
# real one refuses.  tests/gpu/capture_legal.c, built against the simulated
# driver (tests/sim/capture_legal), is run on it with nothing preloaded, and its
# output must equal, line for line, the same program's output on an NVIDIA H200
# (tests/data/capture-legal-h200.txt): each call's result, the capture's status
# after it and cuStreamEndCapture's result, for every capture mode, stream and
# thread.  There are no exceptions: every line is modelled.  A difference fails
# the test and prints the lines that differ.
set -eu
top_builddir=${top_builddir:-.}
srcdir=${srcdir:-${top_srcdir:-.}}
expected="$srcdir/tests/data/capture-legal-h200.txt"
prog="$top_builddir/tests/sim/capture_legal"
simdir="$top_builddir/tests/sim/.libs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

status=0
env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$simdir" \
    ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1 \
    TSAN_OPTIONS=halt_on_error=1 \
    "$prog" >"$tmp/observed" 2>"$tmp/stderr" || status=$?
if [ "$status" -ne 0 ]; then
    echo "check_capture_legal: $prog exited with status $status" >&2
    cat "$tmp/stderr" >&2
    exit 1
fi

if ! diff "$expected" "$tmp/observed" >"$tmp/diff"; then
    echo "check_capture_legal: the simulated driver answers differently from the H200" >&2
    echo "(< $expected, > the simulated driver)" >&2
    cat "$tmp/diff" >&2
    exit 1
fi
echo "check_capture_legal: $(wc -l <"$tmp/observed") cases answered as on the H200"
