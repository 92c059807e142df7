#!/bin/sh
# run-installed-demo.sh - run examples/demo under an INSTALLED cubatch launcher
# (the .deb's /usr/bin/cubatch, the wheel's console script) against the test
# suite's simulated driver, as a user without the build would: the CUDA toolkit's
# folders taken off PATH and LD_LIBRARY_PATH, no CUBATCH_LIBRARY, so the launcher
# must find its own library.  Used by tools/check-deb.sh and tools/check-wheel.sh.
#
#   tools/run-installed-demo.sh LAUNCHER [EXPECTED_LIBRARY]
#
# The demo and the simulated driver come from a build tree (CUBATCH_BUILDDIR, else
# the tree this script is in); they are built there if missing.  Checks: the demo
# says "demo: OK" and exits 0, the JSON report says batching on and copies were
# deferred and the copy kernel launched (it is embedded), and (when given) `LAUNCHER --version` names EXPECTED_LIBRARY.
# Exit 0 when all hold, 1 otherwise.
set -u
launcher=${1:?usage: run-installed-demo.sh LAUNCHER [EXPECTED_LIBRARY]}
expected=${2:-}
top=${CUBATCH_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
say() { echo "run-installed-demo: $*"; }

[ -x "$top/examples/demo" ] && [ -f "$top/tests/sim/.libs/libcuda.so.1" ] ||
    (cd "$top" && make examples/demo tests/sim/libcuda.la >/dev/null) ||
    { say "cannot build the demo and the simulated driver in $top"; exit 1; }

# The toolkit's folders (anything under a cuda directory) off both paths.
strip_cuda() { printf '%s' "$1" | tr ':' '\n' | grep -v -i 'cuda' | paste -sd: -; }
PATH=$(strip_cuda "$PATH")
LD_LIBRARY_PATH=$top/tests/sim/.libs
export PATH LD_LIBRARY_PATH
unset CUBATCH_LIBRARY LD_PRELOAD CUBATCH_BUILDDIR
say "PATH=$PATH LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

fail=0
if [ -n "$expected" ]; then
    v=$("$launcher" --version 2>&1)
    printf '%s\n' "$v" | grep -qx "library: $expected" && say "ok: $launcher --version names $expected" ||
        { say "FAILED: $launcher --version: $v"; fail=1; }
fi
tmp=$(mktemp -d)
out=$("$launcher" --stats=json --stats-file="$tmp/stats.json" "$top/examples/demo" 2>&1); rc=$?
printf '%s\n' "$out" | sed 's/^/  | /'
if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q '^demo: OK'; then
    say "ok: the demo ran under $launcher against the simulated driver"
else
    say "FAILED: the demo under $launcher (exit $rc)"
    fail=1
fi
if grep -q '"batching":true' "$tmp/stats.json" 2>/dev/null &&
   ! grep -q '"deferred":0,' "$tmp/stats.json"; then
    say "ok: its report says batching on, copies deferred"
    if grep -q '"kernel_launches":0,' "$tmp/stats.json"; then
        say "FAILED: no copy-kernel launch: was the library built without the copy kernel (nvcc)?"
        fail=1
    else
        say "ok: runs went out as copy-kernel launches (the kernel is embedded)"
    fi
else
    say "FAILED: report: $(cat "$tmp/stats.json" 2>/dev/null || echo none)"
    fail=1
fi
rm -rf "$tmp"
exit $fail
