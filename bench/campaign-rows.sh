#!/usr/bin/env bash
# campaign-rows.sh - what rule 19 (2D copies, on as shipped) needs from a GPU,
# in one device call of about 9 minutes.  Every cubatch process runs with
# CUBATCH_DEFER_2D=1 (exported, so that a library from before 2D copies were
# on as shipped is proven too: the plain processes ignore it, an older library
# warns about it).
#
#   campaign-rows.sh --bin DIR --gpu DIR --lib PATH --out DIR [--prev PATH]
#                    [--rounds N] [--budget SECONDS]
#
#   --bin     bench/build-bench.sh DIR (bench_tiles, bench_copies, ...)
#   --gpu     tests/gpu/build-gpu-tests.sh DIR (probe, drv_copies, ...)
#   --lib     the libcubatch.so to prove; --prev an earlier one for the grid
#   --out     results: tiles.txt and tiles-stats.json (step 1), probe.txt
#             (step 2), gpu-tests.txt (step 3), summary.md and raw.tgz (step 4),
#             chunks.csv (step 5)
#   --rounds  rounds of step 4 (default 9); --budget its seconds (default 300)
#
# Steps (each prints its verdict; the first failure does not stop the rest):
#   1. bench_tiles -n 256 -t 32x256 h2d d2h under cubatch: every tile equal to
#      its source and every byte outside the tiles untouched (bench_tiles checks
#      and exits 1 otherwise); its counters (copies_2d, deferred, launches)
#   2. tests/gpu/run-probe.sh, every rule scenario (the tiles_* of rule 19
#      among them), as shipped but with 2D on: the same as without cubatch
#   3. tests/gpu/run-gpu-tests.sh --configs default: the GPU suite
#   4. bench/campaign-43.sh --parts grid,tiles: 256 tiles against their loop of
#      2D copies (issue 43: at least 5x) and one cuMemcpy3DBatchAsync (no
#      slower), and the copy grid against --prev (the 1D path no slower)
#   5. 1024 contiguous 4 KiB copies each way against one 4 MiB copy, the run
#      cut as today, in fixed chunks of 64, 128, 256 (CUBATCH_MAX_BATCH), or
#      whole (CUBATCH_PIPELINE=0), 7 rounds (chunks.csv; about 40 s): the
#      question rule 18 leaves open
# Exit: 0 all passed, 1 a step failed, 2 usage, 77 no GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
bin='' gpu='' lib='' prev='' out='' rounds=9 budget=300
while [ $# -gt 0 ]; do
    case $1 in
    --bin|--gpu|--lib|--prev|--out|--rounds|--budget)
        [ $# -ge 2 ] || { echo "campaign-rows: $1 needs a value" >&2; exit 2; } ;;
    esac
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --gpu) gpu=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --prev) prev=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "campaign-rows: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ -z "$bin" ] || [ -z "$gpu" ] || [ -z "$lib" ] || [ -z "$out" ]; then
    echo "usage: campaign-rows.sh --bin DIR --gpu DIR --lib PATH --out DIR [--prev PATH] (--help)" >&2
    exit 2
fi
# shellcheck source=SCRIPTDIR/../tests/harness/lib.sh
. "$top/tests/harness/lib.sh"
cb_gpu_or_skip campaign-rows
for f in "$lib" "$bin/bench_tiles" "$gpu/probe"; do
    [ -e "$f" ] || { echo "campaign-rows: $f not found" >&2; exit 2; }
done
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
mkdir -p "$out" && out=$(cd "$out" && pwd)
export CUBATCH_DEFER_2D=1
rc=0 start=$SECONDS
stamp() { echo "# [$((SECONDS - start))s] $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
sha256sum "$lib"

stamp "1. bench_tiles under cubatch"
LD_PRELOAD=$lib CUBATCH_STATS=json CUBATCH_STATS_FILE="$out/tiles-stats.json" \
    taskset -c 3 "$bin/bench_tiles" -r 5 -w 1 -n 256 -t 32x256 h2d d2h >"$out/tiles.txt" 2>&1
st=$?
grep -v '^#' "$out/tiles.txt" | tail -12
python3 - "$out/tiles-stats.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
print({k: c.get(k) for k in ("copies_2d", "deferred", "kernel_launches", "kernel_copies", "pass_rows",
                             "pass_first", "flush_hazard", "batch_errors")})
PY
[ $st -eq 0 ] || { echo "campaign-rows: bench_tiles exit $st (wrong bytes or an error)"; rc=1; }

stamp "2. the rule scenarios, as shipped with 2D on"
CB_GPU_CONFIGS=default timeout 240 bash "$top/tests/gpu/run-probe.sh" "$gpu/probe" "$lib" "$out/probe.txt" \
    >"$out/probe.log" 2>&1
[ $? -eq 124 ] && { echo "campaign-rows: run-probe ran out of time"; rc=1; }
# A scenario fails the step when cubatch changes its answer or fails where the
# plain process passed.  Those that need a newer driver than the GPU's (the
# simulated driver acting as 13.1 or newer) fail both ways, the same.
bad=$(awk 'NR > 1 && $2 == "default" && ($5 != "yes" || ($3 == "ok" && $4 != "ok"))' "$out/probe.txt")
[ -z "$bad" ] || { echo "campaign-rows: scenarios differ under cubatch:"; echo "$bad"; rc=1; }
echo "scenarios: $(awk 'NR > 1 && $2 == "default"' "$out/probe.txt" | wc -l)," \
    "failing both ways, the same: $(awk 'NR > 1 && $2 == "default" && $3 == "FAIL" && $5 == "yes" { printf "%s ", $1 }' "$out/probe.txt"); tiles:"
grep '^tiles_' "$out/probe.txt"

stamp "3. the GPU suite, as shipped with 2D on"
CB_GPU_TIMEOUT=60 timeout 240 bash "$top/tests/gpu/run-gpu-tests.sh" --bin "$gpu" --lib "$lib" --out "$out" \
    --configs default >"$out/gpu.log" 2>&1 || { echo "campaign-rows: the GPU suite failed"; rc=1; }
tail -16 "$out/gpu.log"

stamp "4. tiles and the copy grid (campaign-43)"
timeout $((budget + 30)) bash "$here/campaign-43.sh" --bin "$bin" --lib "$lib" ${prev:+--prev "$prev"} \
    --out "$out/c43" --rounds "$rounds" --budget "$budget" --parts grid,tiles >/dev/null 2>&1 ||
    { echo "campaign-rows: campaign-43 exit $?"; rc=1; }
mv "$out/c43/summary.md" "$out/summary.md" 2>/dev/null
mv "$out/c43/raw.tgz" "$out/raw.tgz" 2>/dev/null
sed -n '/^## Copy grid/,/^## KV/p;/^## 2D tiles/,/^## Launch/p' "$out/summary.md" | head -60
stamp "5. the chunks of a contiguous run (design notes, rule 18, The chunks of a merged run)"
# 1024 contiguous 4 KiB copies each way, merged, over one 4 MiB copy in the
# same process, as the run is cut today (32, then 4 times as many), in fixed
# chunks (CUBATCH_MAX_BATCH: a run this long goes out) or whole
# (CUBATCH_PIPELINE=0); "default2" is the A/A column.  Configurations rotate.
chunk_cfgs=(default default2 max64 max128 max256 whole)
: >"$out/chunks.csv"
for r in 1 2 3 4 5 6 7; do
    n=${#chunk_cfgs[@]}
    for ((k = 0; k < n; k++)); do
        c=${chunk_cfgs[$(((k + r) % n))]}
        set -- LD_PRELOAD="$lib"
        case $c in max*) set -- "$@" CUBATCH_MAX_BATCH="${c#max}" ;; whole) set -- "$@" CUBATCH_PIPELINE=0 ;; esac
        env "$@" taskset -c 3 "$bin/bench_copies" -r 9 -w 2 -m loop -l contiguous h2d:1024:4K d2h:1024:4K \
            -m single h2d:1:4M d2h:1:4M >"$out/chunks.one" 2>>"$out/chunks.err" ||
            { echo "campaign-rows: bench_copies ($c, round $r) exit $? (wrong bytes or an error)"; rc=1; }
        sed "/^#/d; s/^/$c,$r,/" "$out/chunks.one" >>"$out/chunks.csv"
    done
done
rm -f "$out/chunks.one"
python3 - "$out/chunks.csv" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(dict)  # (config, round, dir) -> mode -> median us
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) < 9 or f[2] == "mode":
        continue
    t[(f[0], f[1], f[4])][f[2]] = float(f[8])
print("| config | dir | loop of 1024 x 4 KiB / one 4 MiB copy, median (min-max) over rounds | loop us |")
print("| --- | --- | --- | ---: |")
for c in ("default", "default2", "max64", "max128", "max256", "whole"):
    for d in ("h2d", "d2h"):
        fr = [v["single"] / v["loop"] for (cc, _, dd), v in t.items() if cc == c and dd == d and "loop" in v and "single" in v]
        us = [v["loop"] for (cc, _, dd), v in t.items() if cc == c and dd == d and "loop" in v]
        if fr:
            print("| %s | %s | %.2f (%.2f-%.2f) | %.1f |" % (c, d, statistics.median(fr), min(fr), max(fr), statistics.median(us)))
PY

stamp "done, exit $rc"
exit $rc
