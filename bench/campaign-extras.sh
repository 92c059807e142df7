#!/usr/bin/env bash
# The measurements the benchmark grid (run-bench.sh) does not hold, in one
# command on the GPU machine: copies beside compute (run-load.sh), PyTorch beside
# cuBLAS products (torch_load.py), in-process A/B of PyTorch and JAX copy
# patterns (inproc_ab.py), copies with event records (bench_copies events1 and
# events2, with an A/A column), the deferred copy's own cost (copy_path), and
# threads on their own streams (bench_threads, when built).
#
#   campaign-extras.sh --bin DIR --lib PATH --out DIR [--rounds N] [--cpu N]
#
# Writes DIR/extras.md (everything, in order) and DIR/load.csv; exit 77 without
# a GPU, 1 if a part failed (the others still run).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin='' lib='' out='' rounds=7 cpu=3
while [ $# -gt 0 ]; do
    case $1 in
    --bin|--lib|--out|--rounds|--cpu) [ $# -ge 2 ] || { echo "campaign-extras: $1 needs a value" >&2; exit 2; } ;;
    esac
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "campaign-extras: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$bin" ] && [ -n "$lib" ] && [ -n "$out" ] || { echo "usage: campaign-extras.sh --bin DIR --lib PATH --out DIR" >&2; exit 2; }
[ -e /dev/nvidiactl ] || { echo "campaign-extras: no GPU" >&2; exit 77; }
mkdir -p "$out"
md=$out/extras.md
: >"$md"
rc=0
export PYTHONUNBUFFERED=1
part() { printf '\n## %s\n\n' "$*" | tee -a "$md"; }

part "Copies beside compute (run-load.sh, $rounds rounds, pinned to CPU $cpu)"
"$here/run-load.sh" --bin "$bin" --lib "$lib" --out "$out/load" --rounds "$rounds" --reps 3 --cpu "$cpu" >>"$md" 2>&1 || rc=1
cp "$out/load/load.csv" "$out/load.csv" 2>/dev/null

part "The cost of a stream query beside a kernel that fills the GPU"
taskset -c "$cpu" "$bin/load_bench" --query-cost >>"$md" 2>&1 || rc=1

part "PyTorch side-stream copies beside cuBLAS products, in-process on/off (torch_load.py)"
LD_PRELOAD=$lib taskset -c "$cpu" timeout 240 python3 "$here/torch_load.py" --rounds 9 >>"$md" 2>&1 || rc=1

for fw in torch jax; do
    part "In-process A/B, $fw (inproc_ab.py)"
    LD_PRELOAD=$lib CUBATCH_STATS=json CUBATCH_STATS_FILE="$out/ab-$fw.json" taskset -c "$cpu" timeout 200 \
        python3 "$here/inproc_ab.py" "$fw" --rounds 7 >>"$md" 2>&1 || rc=1
done
part "In-process A/B, torch, the pace rule off (CUBATCH_SLOW_NS=1000000000: every copy deferred)"
LD_PRELOAD=$lib CUBATCH_SLOW_NS=1000000000 taskset -c "$cpu" timeout 200 python3 "$here/inproc_ab.py" torch --rounds 7 >>"$md" 2>&1 || rc=1

part "Copies with event records (bench_copies events1/events2; plain, plain2 = A/A, cubatch; $rounds rounds)"
{
    echo "config,round,mode,stream,dir,count,size,reps,median_us,p10_us,p90_us,extra"
    for ((r = 1; r <= rounds; r++)); do
        for c in plain plain2 cubatch; do
            pre=(); [ $c = cubatch ] && pre=(LD_PRELOAD="$lib")
            env "${pre[@]}" taskset -c "$cpu" "$bin/bench_copies" -r 9 -w 2 -m loop -m events1 h2d:1024:4K -m events2 h2d:256:4K 2>/dev/null |
                grep -v '^#' | grep -v '^mode' | sed "s/^/$c,$r,/"
        done
    done
} >"$out/events.csv"
python3 - "$out/events.csv" >>"$md" <<'PY' || rc=1
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = {}
for r in rows:
    t.setdefault((r["mode"], r["count"]), {}).setdefault(r["config"], {})[r["round"]] = float(r["median_us"])
print("| pattern | plain us | A/A | cubatch speedup (min-max) |\n| --- | --- | --- | --- |")
for (mode, n), c in sorted(t.items()):
    p, p2, cb = c.get("plain", {}), c.get("plain2", {}), c.get("cubatch", {})
    aa = [p[k] / p2[k] for k in p if k in p2]
    sp = [p[k] / cb[k] for k in p if k in cb]
    f = lambda v: "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v)) if v else "-"
    print(f"| {mode} h2d {n} x 4K | {statistics.median(p.values()):.1f} | {f(aa)} | {f(sp)} |")
PY

part "The deferred copy's own cost (copy_path, CUBATCH_PIPELINE=0, one open run)"
for d in h2d d2h d2d; do
    LD_PRELOAD=$lib CUBATCH_PIPELINE=0 CUBATCH_MAX_BATCH=32768 CUBATCH_ENGINE=batch taskset -c "$cpu" "$bin/copy_path" --dir $d --n 1000 --rounds 21 >>"$md" 2>&1 || rc=1
done

if [ -x "$bin/bench_threads" ]; then
    part "Threads on their own streams (bench_threads: plain and cubatch rounds inside one preloaded process, A/A; then the loop without cubatch loaded)"
    for t in 1 2 4 8; do
        LD_PRELOAD=$lib timeout 120 "$bin/bench_threads" --threads $t --n 1024 --size 4096 --dir h2d --rounds 15 >>"$md" 2>&1 || rc=1
    done
    timeout 120 "$bin/bench_threads" --threads 8 --n 1024 --size 4096 --dir h2d --rounds 15 >>"$md" 2>&1 || rc=1
fi
cat "$md"
exit $rc
