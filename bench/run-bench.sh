#!/usr/bin/env bash
# The cubatch benchmark grid, within a time budget.
#
#   run-bench.sh --out DIR [--lib PATH] [--bin DIR] [--budget SECONDS]
#                [--reps N] [--rounds N] [--max-bytes BYTES] [--quick]
#
# Every measurement runs in five configurations of the same binaries:
#   plain        no preload
#   cubatch      LD_PRELOAD=libcubatch.so, default policy
#   cubatch_all  LD_PRELOAD, CUBATCH_POLICY=all (batch every cell)
#   enable0      LD_PRELOAD, CUBATCH_ENABLE=0 (the shim's pass-through cost)
#   plain2       no preload again: the A/A repeat that shows the noise floor
# one process per configuration and part, the order of configurations rotated
# from part to part so that drift does not favour one of them.  The whole set
# runs --rounds times (default 2): one H200 process can be ~20% slower than the
# next at the same work (seen on D2D), so the report takes the median over rounds
# and shows the A/A ratio beside every result.
# Parts:
#   grid    bench_copies loop+batch for h2d, d2h, d2d x {8,64,256,1024,4096} copies
#           x {256 B, 4K, 16K, 24K, 32K, 64K, 1M}; cells above --max-bytes
#           (default 1 GiB) are left out
#   extras  bench_copies single (1 copy), overlap (copies, CPU busy loop as long
#           as the copies, then sync), enqueue (cost per call, no sync)
#   kv      kv_swap (runtime API, KV-cache block swap shape)
# Writes to DIR: bench.csv (config,part,round + bench_copies' columns), bench.md
# (tables with ratios, by bench_report.py), bench.log, bench-stats.jsonl
# (cubatch's JSON statistics of every preloaded process).
# The budget (default 360 s) is checked before each process; what does not fit
# is left out and listed in bench.log.  --quick: a small grid, 5 reps (smoke test).
# Environment: NVCC, CC, CUDA_HOME, NVCC_GENCODE, PYTHON.  Exit: 0 done (maybe
# partly, see bench.log), 1 a benchmark failed, 77 no GPU, 99 setup error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

out='' lib=${CUBATCH_LIB:-} bin='' budget=360 reps=15 rounds=2 maxbytes=$((1 << 30)) quick=0
while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --max-bytes) maxbytes=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "run-bench: unknown argument $1" >&2; exit 99 ;;
    esac
done
[ -n "$out" ] || { echo "run-bench: --out DIR is required" >&2; exit 99; }
[ -e /dev/nvidiactl ] || { echo "run-bench: no GPU here, skipped"; exit 77; }
[ -n "$lib" ] || lib=$top/src/.libs/libcubatch.so
[ -f "$lib" ] || { echo "run-bench: $lib not found (build the library or pass --lib)" >&2; exit 99; }
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
unset LD_PRELOAD
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/cubatch-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$out/bench.log csv=$out/bench.csv stats=$out/bench-stats.jsonl
: >"$log"
: >"$stats"
echo "config,part,round,mode,dir,count,size,reps,median_us,p10_us,p90_us,extra" >"$csv"
note() { printf '%s\n' "$*" | tee -a "$log"; }

if [ -z "$bin" ]; then
    bin=$work/bin
    "$here/build-bench.sh" "$bin" >>"$log" 2>&1 || { echo "run-bench: build failed, see $log" >&2; exit 99; }
fi
bin=$(cd "$bin" && pwd)

note "# cubatch bench: $(date -u +%FT%TZ), library $lib, budget ${budget}s"
note "# $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null | head -1)"

configs="plain cubatch cubatch_all enable0 plain2"
# rotated K: the configurations starting at the K-th (mod 5)
rotated() {
    local -a a
    read -r -a a <<<"$configs"
    local j n=${#a[@]}
    for ((j = 0; j < n; j++)); do printf '%s ' "${a[(j + $1) % n]}"; done
}
config_env() {
    case $1 in
    plain|plain2) echo "" ;;
    cubatch) echo "LD_PRELOAD=$lib" ;;
    cubatch_all) echo "LD_PRELOAD=$lib CUBATCH_POLICY=all" ;;
    enable0) echo "LD_PRELOAD=$lib CUBATCH_ENABLE=0" ;;
    esac
}

counts="8 64 256 1024 4096" sizes="256 4K 16K 24K 32K 64K 1M" warm=3
if [ $quick -eq 1 ]; then
    counts="8 256" sizes="4K 24K 64K" reps=5 warm=1
fi
bytes_of() { case $1 in *K) echo $(( ${1%K} * 1024 )) ;; *M) echo $(( ${1%M} << 20 )) ;; *) echo "$1" ;; esac; }

failed=0 started=$SECONDS
# run CONFIG PART CMD...: one process, CSV lines tagged, stats kept, budget kept.
run() {
    local cfg=$1 part=$2; shift 2
    local left=$(( budget - (SECONDS - started) ))
    if [ $left -lt 5 ]; then
        note "SKIPPED (budget): round $round $cfg $part $*"
        return
    fi
    local js=$work/stats.json rc
    rm -f "$js"
    # shellcheck disable=SC2046
    env $(config_env "$cfg") CUBATCH_STATS=json CUBATCH_STATS_FILE="$js" \
        timeout -k 5 "$left" "$@" >"$work/o" 2>"$work/e"
    rc=$?
    grep -v '^#' "$work/o" | grep -v '^mode,' | sed "s/^/$cfg,$part,$round,/" >>"$csv"
    { echo "## round $round $cfg $part: $* (rc $rc, $((SECONDS - started))s)"; grep '^#' "$work/o"; cat "$work/e"; } >>"$log"
    if [ -s "$js" ]; then
        printf '{"config":"%s","part":"%s","round":%d,"stats":%s}\n' "$cfg" "$part" "$round" \
            "$(tr -d '\n' <"$js")" >>"$stats"
    fi
    if [ $rc -ne 0 ]; then
        note "FAILED: $cfg $part (rc $rc): $(tail -3 "$work/e" | tr '\n' ' ')"
        failed=1
    fi
}

for round in $(seq 1 "$rounds"); do
    # --- grid: one process per (direction, config), configs interleaved -----------
    k=0
    for dir in h2d d2h d2d; do
        cells=()
        for c in $counts; do
            for s in $sizes; do
                if [ $(( c * $(bytes_of "$s") )) -gt "$maxbytes" ]; then
                    [ "$round" -eq 1 ] && note "left out (over --max-bytes): $dir:$c:$s"
                    continue
                fi
                cells+=("$dir:$c:$s")
            done
        done
        for cfg in $(rotated $((k + round - 1))); do
            run "$cfg" grid "$bin/bench_copies" -r "$reps" -w "$warm" -m loop,batch "${cells[@]}"
        done
        k=$((k + 1))
    done

    # --- extras ---------------------------------------------------------------------
    extras=(-m single)
    for dir in h2d d2h d2d; do for s in 256 4K 16K 64K 1M; do extras+=("$dir:1:$s"); done; done
    extras+=(-m overlap)
    for dir in h2d d2h d2d; do extras+=("$dir:64:4K" "$dir:256:4K" "$dir:64:64K"); done
    extras+=(-m enqueue)
    for dir in h2d d2h d2d; do extras+=("$dir:1024:4K" "$dir:256:16K"); done
    for cfg in $(rotated $((3 + round - 1))); do
        run "$cfg" extras "$bin/bench_copies" -r "$reps" -w "$warm" "${extras[@]}"
    done

    # --- kv_swap --------------------------------------------------------------------
    kvsteps=50
    [ $quick -eq 1 ] && kvsteps=10
    for cfg in $(rotated $((4 + round - 1))); do
        run "$cfg" kv "$bin/kv_swap" -s "$kvsteps"
    done
done

note "# done in $((SECONDS - started))s"
"${PYTHON:-python3}" "$here/bench_report.py" "$csv" >"$out/bench.md" 2>>"$log" ||
    note "bench_report.py failed (CSV kept)"
[ $failed -eq 0 ] || exit 1
exit 0
