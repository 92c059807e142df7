#!/usr/bin/env bash
# Two questions the grid leaves open, measured in one short run (about 40 s):
#
#  1. The copy path alone.  The grid's enqueue cells time 1024 calls under the
#     default options, which submit chunks while the loop runs (pipelining): the
#     ns per call include those launches.  Here the same cells also run with
#     CUBATCH_PIPELINE=0 (a run of 1024 stays queued until the sync, outside the
#     timed part), so the difference is the chunk submissions' share.
#  2. The pass-through's own cost (CUBATCH_ENABLE=0) on the loop cells where the
#     grid showed off/loop above the A/A spread (H2D 256 x 64 KiB), next to a
#     cell where it did not (H2D 256 x 4 KiB).
#
#   open-questions.sh BIN_DIR LIB [ROUNDS] [CPU]     (defaults: 7 rounds, CPU 3)
#
# Configurations are separate processes, pinned to one core, their order
# rotated every round; medians over rounds of the per-process medians, with
# min-max, and an A/A column (plain2/plain).  Exit 77 without a GPU.
set -u
. "$(dirname "$0")/../tests/harness/lib.sh"
[ -n "${BENCH_SIM:-}" ] || cb_gpu_or_skip open-questions
bin=$1 lib=$2 rounds=${3:-7} cpu=${4:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

enq=(-r 15 -w 3 -m enqueue h2d:1024:4K d2h:1024:4K d2d:1024:4K)
loop=(-r 15 -w 3 -m loop h2d:256:64K h2d:256:4K)
configs=(plain cubatch nopipe off plain2)
run() {   # CONFIG ROUND
    local env=()
    case $1 in
    cubatch) env=("LD_PRELOAD=$lib") ;;
    nopipe) env=("LD_PRELOAD=$lib" CUBATCH_PIPELINE=0) ;;
    off) env=("LD_PRELOAD=$lib" CUBATCH_ENABLE=0) ;;
    esac
    env "${env[@]}" taskset -c "$cpu" "$bin/bench_copies" "${enq[@]}" "${loop[@]}" 2>&1 |
        grep -v -e "^#" -e "^mode," | sed "s/^/$1,$2,/" >>"$tmp/all.csv" ||
        echo "open-questions: $1 round $2 failed" >&2
}
for r in $(seq "$rounds"); do
    n=${#configs[@]}
    for i in $(seq 0 $((n - 1))); do
        run "${configs[$(( (i + r) % n ))]}" "$r"
    done
done
python3 - "$tmp/all.csv" <<'PY'
import csv, sys, statistics as st
rows = {}
for cfg, rnd, mode, stream, d, count, size, reps, med, p10, p90, extra in csv.reader(open(sys.argv[1])):
    key = (mode, d, count, size)
    val = float(extra) if mode == "enqueue" else float(med)
    rows.setdefault(key, {}).setdefault(cfg, {})[int(rnd)] = val
def num(x):
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"
def cell(v):
    return f"{num(st.median(v))} ({num(min(v))}-{num(max(v))})" if v else "-"
def ratio(a, b):
    rs = [a[r] / b[r] for r in a if r in b]
    return f"{st.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})" if rs else "-"
print("| cell | what | plain | cubatch | nopipe | off | plain2 | off/plain | A/A |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for (mode, d, count, size), by in sorted(rows.items()):
    what = "ns per call" if mode == "enqueue" else "us, loop + sync"
    vals = [cell(list(by.get(c, {}).values())) for c in ("plain", "cubatch", "nopipe", "off", "plain2")]
    p = by.get("plain", {})
    print(f"| {d.upper()} {count} x {size} | {what} | " + " | ".join(vals) +
          f" | {ratio(by.get('off', {}), p)} | {ratio(by.get('plain2', {}), p)} |")
PY
