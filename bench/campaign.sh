#!/usr/bin/env bash
# The whole real-GPU campaign in one command: GPU tests, then the benchmark grid,
# within one time budget.
#
#   campaign.sh --out DIR [--lib PATH] [--bin DIR] [--budget SECONDS]
#               [--bench-budget SECONDS] [--quick] [-- RUN-BENCH OPTIONS...]
#   campaign.sh --prebuild DIR      build every program into DIR and stop (no GPU needed)
#
#   --lib     libcubatch.so (default src/.libs/libcubatch.so of this tree)
#   --bin     prebuilt programs (from --prebuild); default: build them first
#   --budget  wall-clock seconds for everything (default 540: the GPU tests take
#             about a minute); the benchmark gets what the tests leave, less 15 s
#             for the end, and at most --bench-budget
#   --bench-budget  the most the benchmark may take (default 390: its full plan,
#             six configurations x three CPU settings x 7 rounds and PyTorch, is
#             estimated at about 335 s on the H200; bench/run-bench.sh --plan)
#   --quick   a small benchmark (smoke test, about a minute)
#   after --   options for bench/run-bench.sh (--parts copies, --rounds 9, ...)
# DIR receives at most 8 files: campaign.log, gpu-tests.txt,
# gpu-tests-stats.jsonl, probe.txt, bench.csv, bench.md, bench.log, bench-stats.jsonl.
# Exit: 0 all passed, 1 a test or benchmark failed, 77 no GPU, 99 setup error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

out='' lib=${CB_LIB:-$top/src/.libs/libcubatch.so} bin='' budget=540 bbudget=390 quick=''
bench_opts=()
while [ $# -gt 0 ]; do
    case $1 in
    --prebuild|--out|--lib|--bin|--budget|--bench-budget)
        [ $# -ge 2 ] || { echo "campaign: $1 needs a value" >&2; exit 99; } ;;
    esac
    case $1 in
    --prebuild)
        "$top/tests/gpu/build-gpu-tests.sh" "$2" && "$here/build-bench.sh" "$2"
        exit ;;
    --out) out=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --bench-budget) bbudget=$2; shift 2 ;;
    --quick) quick=--quick; shift ;;
    --) shift; bench_opts=("$@"); break ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "campaign: unknown argument $1" >&2; exit 99 ;;
    esac
done
[ -n "$out" ] || { echo "campaign: --out DIR is required" >&2; exit 99; }
for v in "$budget" "$bbudget"; do
    case $v in ''|*[!0-9]*) echo "campaign: a budget is a whole number of seconds, not '$v'" >&2; exit 99 ;; esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
clog=$out/campaign.log
exec > >(tee -a "$clog") 2>&1
start=$SECONDS

echo "# cubatch campaign $(date -u +%FT%TZ), budget ${budget}s"
. "$top/tests/harness/lib.sh"
cb_gpu_or_skip campaign
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
echo "# --- rule scenarios (tests/rules/probe.c) on the GPU"
"$top/tests/gpu/run-probe.sh" "$bin/probe" "$lib" "$out/probe.txt" >/dev/null
prc=$?
echo "# probe: exit $prc after $((SECONDS - start))s"
[ $prc -eq 0 ] || trc=1

# about 25 s: the copy path without chunk submissions, the pass-through's cost
qrc=0
echo "# --- open questions (bench/open-questions.sh)"
"$here/open-questions.sh" "$bin" "$lib" 7 || qrc=1
echo "# open questions: exit $qrc after $((SECONDS - start))s"

left=$(( budget - (SECONDS - start) - 15 ))
[ $left -gt "$bbudget" ] && left=$bbudget
brc=0
if [ "$left" -gt 30 ]; then
    echo "# --- benchmark, ${left}s"
    # shellcheck disable=SC2086
    "$here/run-bench.sh" --bin "$bin" --lib "$lib" --out "$out" --budget "$left" $quick "${bench_opts[@]}"
    brc=$?
    echo "# bench: exit $brc after $((SECONDS - start))s"
    [ -f "$out/bench.md" ] && cat "$out/bench.md"
else
    echo "# benchmark skipped: only ${left}s left"
    brc=1
fi
echo "# --- test table"
cat "$out/gpu-tests.txt" 2>/dev/null
echo "# --- probe table"
cat "$out/probe.txt" 2>/dev/null
[ $trc -eq 0 ] && [ $brc -eq 0 ] && [ $qrc -eq 0 ] && exit 0
exit 1
