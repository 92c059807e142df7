#!/usr/bin/env bash
# run-contig.sh - libraries side by side on issue 43's copy-loop target: 1024
# contiguous 4 KiB copies each way against one 4 MiB copy in the same process,
# and the same blocks in scattered order, each process pinned to one CPU,
# configurations rotating between rounds.  Give one library twice (two labels)
# for the A/A column.
#
#   run-contig.sh --bin DIR --out DIR [--rounds N] [--cpu N] LABEL=LIB [LABEL=LIB ...]
#
#   --bin     bench/build-bench.sh DIR (bench_copies)
#   --out     raw.csv (every process's rows, prefixed by label and round) and
#             table.md (what is printed)
#   --rounds  default 7; --cpu the CPU every process is pinned to (default 3)
#   LABEL=LIB a libcubatch.so to preload; LABEL= (nothing after =): the plain
#             process
# Printed: per label and direction, the contiguous loop's share of one 4 MiB
# copy's bandwidth (single / loop, median (min-max) over rounds) and the
# scattered loop's time over the first label's in the same round.
# Exit: 0 done, 1 a process failed (wrong bytes or an error), 2 usage.
set -u
bin='' out='' rounds=7 cpu=3
while [ $# -gt 0 ]; do
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *=*) break ;;
    *) echo "run-contig: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ -z "$bin" ] || [ -z "$out" ] || [ $# -eq 0 ]; then
    echo "usage: run-contig.sh --bin DIR --out DIR [--rounds N] LABEL=LIB [...]" >&2
    exit 2
fi
mkdir -p "$out"
labels=() libs=()
for a in "$@"; do
    labels+=("${a%%=*}")
    libs+=("${a#*=}")
done
rc=0
: >"$out/raw.csv"
n=${#labels[@]}
for ((r = 1; r <= rounds; r++)); do
    for ((k = 0; k < n; k++)); do
        i=$(((k + r) % n))
        set --
        [ -n "${libs[$i]}" ] && set -- LD_PRELOAD="${libs[$i]}"
        env "$@" taskset -c "$cpu" "$bin/bench_copies" -r 9 -w 2 -m loop -l contiguous h2d:1024:4K d2h:1024:4K \
            -l scattered h2d:1024:4K d2h:1024:4K -m single -l contiguous h2d:1:4M d2h:1:4M \
            >"$out/one.csv" 2>>"$out/err.txt" ||
            { echo "run-contig: bench_copies (${labels[$i]}, round $r) exit $?"; rc=1; }
        sed "/^#/d; /^mode/d; s/^/${labels[$i]},$r,/" "$out/one.csv" >>"$out/raw.csv"
    done
done
rm -f "$out/one.csv"
python3 - "$out/raw.csv" "${labels[@]}" <<'PY' | tee "$out/table.md"
import collections, statistics, sys
path, labels = sys.argv[1], sys.argv[2:]
t = collections.defaultdict(dict)  # (label, round, dir) -> (mode, layout) -> median us
for line in open(path):
    f = line.strip().split(",")
    if len(f) < 13:
        continue
    label, rnd, mode, d, us, layout = f[0], f[1], f[2], f[4], float(f[8]), f[12].split(":")[0]
    t[(label, rnd, d)][(mode, layout)] = us
def mmm(v):
    return "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v)) if v else "-"
print("| label | dir | contiguous: one 4 MiB / loop | contiguous loop us | scattered loop / %s's | scattered loop us |" % labels[0])
print("| --- | --- | --- | ---: | --- | ---: |")
for lab in dict.fromkeys(labels):
    for d in ("h2d", "d2h"):
        rows = {r: v for (l, r, dd), v in t.items() if l == lab and dd == d}
        share = [v[("single", "contiguous")] / v[("loop", "contiguous")] for v in rows.values()
                 if ("single", "contiguous") in v and ("loop", "contiguous") in v]
        cus = [v[("loop", "contiguous")] for v in rows.values() if ("loop", "contiguous") in v]
        sus = [v[("loop", "scattered")] for v in rows.values() if ("loop", "scattered") in v]
        rel = []
        for r, v in rows.items():
            base = t.get((labels[0], r, d), {})
            if ("loop", "scattered") in v and ("loop", "scattered") in base:
                rel.append(v[("loop", "scattered")] / base[("loop", "scattered")])
        print("| %s | %s | %s | %.1f | %s | %.1f |" % (lab, d, mmm(share), statistics.median(cus) if cus else 0,
                                                    mmm(rel), statistics.median(sus) if sus else 0))
PY
exit $rc
