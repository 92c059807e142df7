#!/usr/bin/env bash
# nvtx-cost.sh - does the copy path cost more with the NVTX ranges compiled in
# (src/nvtx.c), with no profiler attached?  (issue 19)
#
#   bench/nvtx-cost.sh [ROUNDS] [CPU]          (defaults: 7 rounds, CPU 3; about 1 min + the builds)
#
# Builds the library twice from this tree's `make dist` (configured: default,
# with NVTX; and --disable-nvtx), and bench_copies (build-bench.sh), then runs,
# pinned to one core, in rotating order every round, separate processes:
# plain, nvtx (NVTX compiled in), nonvtx (compiled out), plain2 (the A/A).
# Cells: the enqueue cost (ns per call, no sync) of H2D/D2H/D2D 1024 x 4 KiB, and
# loop + sync of H2D and D2H 256 x 4 KiB.  Prints medians (min-max) over rounds
# and the ratios nvtx/nonvtx and plain2/plain: NVTX costs nothing when nvtx/nonvtx
# sits inside the A/A spread.  NVTX_INJECTION64_PATH must be unset (it is unset
# here).  Exit 77 without a GPU.
set -u
[ -e /dev/nvidiactl ] || [ -n "${BENCH_SIM:-}" ] || { echo "nvtx-cost: no GPU here"; exit 77; }
rounds=${1:-7} cpu=${2:-3}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset NVTX_INJECTION64_PATH LD_PRELOAD
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)

[ -f "$src/Makefile" ] || { echo "nvtx-cost: configure the tree first (./configure && make)" >&2; exit 2; }
make -C "$src" dist >/dev/null || exit 1
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$src/Makefile")
for v in nvtx nonvtx; do
    mkdir "$tmp/$v" && tar -xzf "$src/cubatch-$version.tar.gz" -C "$tmp/$v" || exit 1
    flag=
    [ $v = nonvtx ] && flag=--disable-nvtx
    (cd "$tmp/$v/cubatch-$version" && ./configure $flag >/dev/null && make -j"$jobs" src/libcubatch.la >/dev/null) ||
        { echo "nvtx-cost: building the $v library failed" >&2; exit 1; }
    grep -q "^#define CB_NVTX 1" "$tmp/$v/cubatch-$version/config.h" && has=in || has=out
    echo "nvtx-cost: $v library: NVTX compiled $has"
done
"$src/bench/build-bench.sh" "$tmp/bin" >/dev/null 2>&1 || { echo "nvtx-cost: build-bench.sh failed" >&2; exit 1; }

cells=(-r 15 -w 3 -m enqueue h2d:1024:4K d2h:1024:4K d2d:1024:4K -m loop h2d:256:4K d2h:256:4K)
configs=(plain nvtx nonvtx plain2)
run() {   # CONFIG ROUND
    local env=()
    case $1 in
    nvtx|nonvtx) env=("LD_PRELOAD=$tmp/$1/cubatch-$version/src/.libs/libcubatch.so") ;;
    esac
    env "${env[@]}" taskset -c "$cpu" "$tmp/bin/bench_copies" "${cells[@]}" 2>&1 |
        grep -v -e "^#" -e "^mode," | sed "s/^/$1,$2,/" >>"$tmp/all.csv" ||
        echo "nvtx-cost: $1 round $2 failed" >&2
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
    val = float(extra) if mode == "enqueue" else float(med)
    rows.setdefault((mode, d, count, size), {}).setdefault(cfg, {})[int(rnd)] = val
def num(x):
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"
def cell(v):
    return f"{num(st.median(v))} ({num(min(v))}-{num(max(v))})" if v else "-"
def ratio(a, b):
    rs = [a[r] / b[r] for r in a if r in b]
    return f"{st.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})" if rs else "-"
print("| cell | what | plain | nvtx | nonvtx | plain2 | nvtx/nonvtx | A/A |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for (mode, d, count, size), by in sorted(rows.items()):
    what = "ns per call" if mode == "enqueue" else "us, loop + sync"
    vals = [cell(list(by.get(c, {}).values())) for c in ("plain", "nvtx", "nonvtx", "plain2")]
    print(f"| {d.upper()} {count} x {size} | {what} | " + " | ".join(vals) +
          f" | {ratio(by.get('nvtx', {}), by.get('nonvtx', {}))} | {ratio(by.get('plain2', {}), by.get('plain', {}))} |")
PY
