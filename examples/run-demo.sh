#!/bin/sh
# run-demo.sh - run examples/demo without cubatch, then under the cubatch launcher
# with --stats, and say which CUDA driver it ran against.
#
#   examples/run-demo.sh [--sim] [-- demo arguments...]
#
#   --sim   use the simulated driver even when a real GPU is present
#
# The driver: the real one when /dev/nvidiactl exists and `demo --probe` finds a
# device through it; otherwise the test suite's simulated libcuda.so.1
# (tests/sim/.libs, built here with `make tests/sim/libcuda.la` if it is missing),
# and a line says so.  Run it from the build tree (where `make` ran), or set
# CB_BUILDDIR.  Each run compares every byte it copied back ("demo: OK"
# says so).  Exit: the status of the run under cubatch (0 = "demo: OK"),
# 1 if the run without cubatch already failed, 99 if something could not be built.
set -u

here=$(cd "$(dirname "$0")" && pwd)
force_sim=0
while [ $# -gt 0 ]; do
    case $1 in
    --sim) force_sim=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "run-demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

# ---- the build tree -------------------------------------------------------------
if [ -n "${CB_BUILDDIR:-}" ]; then
    top=$CB_BUILDDIR
elif [ -f config.status ] && [ -f Makefile ]; then
    top=.
else
    top=$here/..
fi
top=$(cd "$top" && pwd)
[ -f "$top/Makefile" ] || { echo "run-demo: $top is not a configured build tree (run ./configure && make, or set CB_BUILDDIR)" >&2; exit 99; }

MAKE=${MAKE:-make}
need=''
[ -x "$top/examples/demo" ] || need="$need examples/demo"
[ -x "$top/cubatch" ] || need="$need cubatch"
[ -f "$top/src/.libs/libcubatch.so" ] || need="$need src/libcubatch.la"
if [ -n "$need" ]; then
    echo "run-demo: building$need"
    # shellcheck disable=SC2086
    (cd "$top" && $MAKE $need) >&2 || { echo "run-demo: build failed" >&2; exit 99; }
fi
demo=$top/examples/demo

# ---- which driver -----------------------------------------------------------------
# Never let an inherited LD_LIBRARY_PATH to the simulator pass for the real driver.
. "$here/../tests/harness/lib.sh"
cb_real_driver_only

why=''
if [ "$force_sim" = 1 ]; then
    why='--sim was given'
elif ! cb_have_gpu; then
    why='no /dev/nvidiactl, so no NVIDIA GPU here'
elif ! probe=$("$demo" --probe 2>&1); then
    why="the real driver is not usable ($(printf '%s' "$probe" | tail -1))"
fi

if [ -z "$why" ]; then
    echo "run-demo: running against the REAL CUDA driver: $probe"
else
    sim=$top/tests/sim/.libs
    if [ ! -f "$sim/libcuda.so.1" ]; then
        echo "run-demo: building the simulated driver (make tests/sim/libcuda.la)"
        (cd "$top" && $MAKE tests/sim/libcuda.la) >&2 || { echo "run-demo: could not build the simulated driver" >&2; exit 99; }
    fi
    LD_LIBRARY_PATH=$sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
    echo "run-demo: $why: running against the SIMULATED CUDA driver ($sim/libcuda.so.1), not a GPU; counts are meaningful, times are not"
fi

# ---- run it -------------------------------------------------------------------------
echo "run-demo: without cubatch:"
"$demo" "$@"
plain=$?
echo
# The command as it can be pasted into a shell: with the library path, and the
# simulated driver's folder when it runs against that.
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
cmd="CUBATCH_LIBRARY=$(q "$top/src/.libs/libcubatch.so")"
[ -n "$why" ] && cmd="$cmd LD_LIBRARY_PATH=$(q "$LD_LIBRARY_PATH")"
cmd="$cmd $(q "$top/cubatch") --stats $(q "$demo")"
for a in "$@"; do cmd="$cmd $(q "$a")"; done
echo "run-demo: with cubatch: $cmd"
CUBATCH_LIBRARY=$top/src/.libs/libcubatch.so "$top/cubatch" --stats "$demo" "$@"
rc=$?
if [ $plain -ne 0 ] && [ $rc -eq 0 ]; then
    echo "run-demo: the demo failed without cubatch (status $plain)" >&2
    exit 1
fi
exit $rc
