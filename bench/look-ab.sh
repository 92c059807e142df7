#!/usr/bin/env bash
# look-ab.sh - what the flush timer's looks cost a copy loop when the timer's
# thread may run on another core (rule 7, *The look waits for no lock*):
# configurations side by side, each process pinned to a CPU list, the order
# rotating from round to round.  Give one configuration twice (two labels) for
# the A/A column.
#
#   look-ab.sh --bin DIR --out FILE [--rounds N] [--cpus LIST] LABEL=LIB[:VAR=VALUE...] ...
#
#   --bin     bench/build-bench.sh DIR (bench_copies)
#   --out     every process's rows, prefixed by label and round (CSV)
#   --rounds  default 24; --cpus the CPU list every process is pinned to
#             (default 0,1: the program's thread and a core to spare)
#   LABEL=LIB a libcubatch.so to preload, then environment settings for it
# Each process times the calls of 1024 host-to-device copies of 4 KiB, without
# their synchronize (`enqueue`) and with it (`loop`), contiguous and scattered,
# 15 repetitions after 2.  Printed: per label, the median process and the range,
# the mean, and how many processes issued the contiguous copies slower than --slow-us
# (default 80, about twice the fast processes' time on the simulated driver);
# then each label's per-round ratio to the first label's.  BENCH_SIM=1 in the
# environment runs it on the simulated driver (LD_LIBRARY_PATH to tests/sim/.libs).
# Exit: 0 done, 1 a process failed, 2 usage.
set -u -o pipefail
bin='' out='' rounds=24 cpus=0,1 slow=80
while [ $# -gt 0 ]; do
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --slow-us) slow=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *=*) break ;;
    *) echo "look-ab: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ -z "$bin" ] || [ -z "$out" ] || [ $# -eq 0 ]; then
    echo "usage: look-ab.sh --bin DIR --out FILE [--rounds N] [--cpus LIST] LABEL=LIB[:VAR=VALUE...] ..." >&2
    exit 2
fi
labels=() confs=()
for a in "$@"; do
    labels+=("${a%%=*}")
    confs+=("${a#*=}")
done
rc=0 n=${#labels[@]}
: >"$out"
for ((r = 1; r <= rounds; r++)); do
    for ((k = 0; k < n; k++)); do
        i=$(((k + r) % n))
        IFS=: read -r -a parts <<<"${confs[$i]}"
        env LD_PRELOAD="${parts[0]}" "${parts[@]:1}" taskset -c "$cpus" "$bin/bench_copies" -r 15 -w 2 \
            -m enqueue,loop -l contiguous h2d:1024:4K -l scattered h2d:1024:4K 2>/dev/null |
            sed "/^#/d; /^mode/d; s/^/${labels[$i]},$r,/" >>"$out" ||
            { echo "look-ab: bench_copies (${labels[$i]}, round $r) failed"; rc=1; }
    done
done
python3 - "$out" "$slow" "${labels[@]}" <<'PY'
import collections, statistics as st, sys
path, slow, labels = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
cells = collections.defaultdict(dict)
for line in open(path):
    f = line.strip().split(",")
    if len(f) < 13:
        continue
    cells[(f[0], f[2], f[-1].split(":")[0])][int(f[1])] = float(f[8])
keys = [("enqueue", "contiguous"), ("loop", "contiguous"), ("enqueue", "scattered"), ("loop", "scattered")]
print("| label | " + " | ".join(f"{m} {l} (us)" for m, l in keys) + f" | enqueue contiguous: mean, processes over {slow:g} us |")
print("| --- |" + " ---: |" * (len(keys) + 1))
for lab in labels:
    row = []
    for m, l in keys:
        v = list(cells[(lab, m, l)].values())
        row.append(f"{st.median(v):.1f} ({min(v):.1f}-{max(v):.1f})" if v else "-")
    v = list(cells[(lab, "enqueue", "contiguous")].values())
    print(f"| {lab} | " + " | ".join(row) + f" | {st.mean(v):.1f}, {sum(x > slow for x in v)}/{len(v)} |")
print()
for lab in labels[1:]:
    for m, l in keys:
        a, b = cells[(lab, m, l)], cells[(labels[0], m, l)]
        q = [a[r] / b[r] for r in a if r in b]
        if q:
            print(f"{lab}/{labels[0]} {m} {l}: {st.median(q):.3f} ({min(q):.3f}-{max(q):.3f})")
PY
exit $rc
