#!/usr/bin/env bash
# The whole real-GPU campaign in one command: GPU tests, then the benchmark grid,
# within one time budget.
#
#   campaign.sh --out DIR [--lib PATH] [--bin DIR] [--budget SECONDS] [--quick]
#   campaign.sh --prebuild DIR      build every program into DIR and stop (no GPU needed)
#
#   --lib     libcubatch.so (default src/.libs/libcubatch.so of this tree)
#   --bin     prebuilt programs (from --prebuild); default: build them first
#   --budget  wall-clock seconds for everything (default 540); the benchmark
#             gets what the tests leave, less a margin for the report
#   --quick   a small benchmark grid (smoke test)
# DIR receives at most 7 files: campaign.log, gpu-tests.txt,
# gpu-tests-stats.jsonl, bench.csv, bench.md, bench.log, bench-stats.jsonl.
# Exit: 0 all passed, 1 a test or benchmark failed, 77 no GPU, 99 setup error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

out='' lib=${CUBATCH_LIB:-$top/src/.libs/libcubatch.so} bin='' budget=540 quick=''
while [ $# -gt 0 ]; do
    case $1 in
    --prebuild)
        "$top/tests/gpu/build-gpu-tests.sh" "$2" && "$here/build-bench.sh" "$2"
        exit ;;
    --out) out=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --quick) quick=--quick; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "campaign: unknown argument $1" >&2; exit 99 ;;
    esac
done
[ -n "$out" ] || { echo "campaign: --out DIR is required" >&2; exit 99; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
clog=$out/campaign.log
exec > >(tee -a "$clog") 2>&1
start=$SECONDS

echo "# cubatch campaign $(date -u +%FT%TZ), budget ${budget}s"
[ -e /dev/nvidiactl ] || { echo "campaign: no GPU here"; exit 77; }
nvidia-smi --query-gpu=name,driver_version,memory.used,clocks.sm --format=csv,noheader 2>/dev/null
[ -f "$lib" ] || { echo "campaign: $lib not found"; exit 99; }
ls -l "$lib"

if [ -z "$bin" ]; then
    bin=$(mktemp -d "${TMPDIR:-/tmp}/cubatch-bin.XXXXXX")
    if ! { "$top/tests/gpu/build-gpu-tests.sh" "$bin" && "$here/build-bench.sh" "$bin"; } \
        >"$out/build.log" 2>&1; then
        cat "$out/build.log"
        echo "campaign: build failed"
        exit 99
    fi
    rm -f "$out/build.log"
    echo "# built in $((SECONDS - start))s"
fi

echo "# --- GPU tests"
"$top/tests/gpu/run-gpu-tests.sh" --bin "$bin" --lib "$lib" --out "$out"
trc=$?
echo "# tests: exit $trc after $((SECONDS - start))s"

left=$(( budget - (SECONDS - start) - 15 ))
brc=0
if [ $left -gt 30 ]; then
    echo "# --- benchmark, ${left}s"
    # shellcheck disable=SC2086
    "$here/run-bench.sh" --bin "$bin" --lib "$lib" --out "$out" --budget "$left" $quick
    brc=$?
    echo "# bench: exit $brc after $((SECONDS - start))s"
    [ -f "$out/bench.md" ] && cat "$out/bench.md"
else
    echo "# benchmark skipped: only ${left}s left"
    brc=1
fi
echo "# --- test table"
cat "$out/gpu-tests.txt" 2>/dev/null
[ $trc -eq 0 ] && [ $brc -eq 0 ] && exit 0
exit 1
