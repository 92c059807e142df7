#!/usr/bin/env bash
# events-campaign.sh - one GPU call for rules 15 and 16 (records answered by one
# record, waits that ride) and for the re-measured cells of the load work:
# correctness first, then the measurements, each with an A/A column.
#
#   events-campaign.sh --bin DIR --lib PATH --out DIR [--rounds N] [--cpu N] [--parts LIST]
#
# --bin    programs from bench/campaign.sh --prebuild (bench_copies, copy_path,
#          load_bench, probe and the GPU test programs)
# --parts  a space list, in this order by default:
#   suite      tests/gpu/run-gpu-tests.sh, the library's defaults
#   probe      the rule scenarios on the real driver, the library's defaults
#   events     bench_copies: the bare loop, a record after each copy (events1,
#              1024 x 4 KiB), two (events2, 256 x 4 KiB); plain, plain2 (A/A),
#              cubatch, cubatch with CUBATCH_MERGE_RECORDS=0; one process each,
#              configurations rotated, pinned
#   jax        inproc_ab.py jax: device_put of pytrees, cubatch on/off/off2 in
#              one process, the share of host-to-device copies batched
#   torch      inproc_ab.py torch
#   hf         inproc_ab.py hf: transformers' generate() with the offloaded KV
#              cache on a small random Llama, on/off/off2 in one process
#   torchload  torch_load.py: side-stream copies beside cuBLAS products
#   load       run-load.sh: host-to-device copies of a pinned allocation per
#              block beside nothing and beside cuBLAS products (plain, plain2,
#              cubatch)
#   lone       one copy and its synchronize, 201 a process (run-load.sh):
#              plain, plain2, cubatch, off
#   inlone     inproc_lone: lone copies (copy + synchronize) and the calls'
#              own host time, plain / plain2 / cubatch on / cubatch off in ONE
#              process (no bimodal process times); h2d and d2d on a created
#              stream, h2d on the legacy stream, h2d passing by policy; and
#              with CB_PREV_LIB set, the same for that library
#   coldlone   inproc_lone after the program's own work: before each lone copy
#              nothing, 2 MiB of other memory written, or 2 MiB of other code
#              run (docs/design.md section 8); 500 copies per configuration and
#              round, $((2 * rounds + 1)) rounds; three processes per library,
#              the library and CB_PREV_LIB's alternated
#   pass       copy_path with every copy passing through (CUBATCH_POLICY=d2h:0-max
#              for host-to-device copies): ns per call against the bare call
# Writes OUT/campaign.md (everything, in order) and OUT/raw.tgz (the raw
# files); exit 77 without a GPU, 1 when a part failed (the others still run).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
bin='' lib='' out='' rounds=7 cpu=3 parts='suite probe events jax torch hf torchload load lone inlone coldlone pass'
while [ $# -gt 0 ]; do
    case $1 in
    --bin|--lib|--out|--rounds|--cpu|--parts) [ $# -ge 2 ] || { echo "events-campaign: $1 needs a value" >&2; exit 2; } ;;
    esac
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "events-campaign: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$bin" ] && [ -n "$lib" ] && [ -n "$out" ] || { echo "usage: events-campaign.sh --bin DIR --lib PATH --out DIR" >&2; exit 2; }
[ -e /dev/nvidiactl ] || { echo "events-campaign: no GPU" >&2; exit 77; }
mkdir -p "$out/raw"
out=$(cd "$out" && pwd)
bin=$(cd "$bin" && pwd)
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
md=$out/campaign.md
raw=$out/raw
exec > >(tee -a "$md") 2>&1
export PYTHONUNBUFFERED=1
rc=0
start=$SECONDS
part() { printf '\n## %s (at %d s)\n\n' "$*" $((SECONDS - start)); }
echo "# events campaign $(date -u +%FT%TZ), library sha256 $(sha256sum "$lib" | cut -c1-16)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

for p in $parts; do
case $p in
suite)
    part "GPU test programs, library defaults"
    "$top/tests/gpu/run-gpu-tests.sh" --bin "$bin" --lib "$lib" --configs default --out "$raw/suite" || rc=1 ;;
probe)
    part "Rule scenarios on the real driver, library defaults"
    CB_GPU_CONFIGS=default "$top/tests/gpu/run-probe.sh" "$bin/probe" "$lib" "$raw/probe.txt" >/dev/null || rc=1
    awk 'NR == 1 || $5 != "yes"' "$raw/probe.txt"
    echo "scenarios: $(($(wc -l <"$raw/probe.txt") - 1)), same: $(awk 'NR > 1 && $5 == "yes"' "$raw/probe.txt" | wc -l)"
    grep -E '^(marker|merged|waits|jax)' "$raw/probe.txt" ;;
events)
    part "Copies with event records (bench_copies; plain, plain2 = A/A, cubatch, nomerge = CUBATCH_MERGE_RECORDS=0, prev = \$CB_PREV_LIB if set; $rounds rounds)"
    cfgs=(plain plain2 cubatch nomerge)
    [ -n "${CB_PREV_LIB:-}" ] && cfgs+=(prev)
    {
        echo "config,round,mode,stream,dir,count,size,reps,median_us,p10_us,p90_us,extra"
        for ((r = 0; r < rounds; r++)); do
            for ((k = 0; k < ${#cfgs[@]}; k++)); do
                c=${cfgs[$(((r + k) % ${#cfgs[@]}))]}
                pre=()
                case $c in
                cubatch) pre=(LD_PRELOAD="$lib") ;;
                nomerge) pre=(LD_PRELOAD="$lib" CUBATCH_MERGE_RECORDS=0) ;;
                prev) pre=(LD_PRELOAD="$CB_PREV_LIB") ;;
                esac
                env "${pre[@]}" taskset -c "$cpu" "$bin/bench_copies" -r 9 -w 2 -m loop -m events1 h2d:1024:4K \
                    -m events2 h2d:256:4K 2>/dev/null | grep -v '^#' | grep -v '^mode' | sed "s/^/$c,$r,/"
            done
        done
    } >"$raw/events.csv"
    python3 - "$raw/events.csv" <<'PY' || rc=1
import csv, statistics, sys
t = {}
for r in csv.DictReader(open(sys.argv[1])):
    t.setdefault((r["mode"], r["count"]), {}).setdefault(r["config"], {})[r["round"]] = float(r["median_us"])
f = lambda v: "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v)) if v else "-"
print("| pattern | plain µs | A/A | cubatch | merging off | prev |\n| --- | ---: | --- | --- | --- | --- |")
for (mode, n), c in sorted(t.items()):
    p = c.get("plain", {})
    ratio = lambda other: [p[k] / c[other][k] for k in p if k in c.get(other, {})]
    print(f"| {mode} h2d {n} x 4K | {statistics.median(p.values()):.1f} | {f(ratio('plain2'))} | "
          f"{f(ratio('cubatch'))} | {f(ratio('nomerge'))} | {f(ratio('prev'))} |")
PY
    ;;
jax|torch|hf)
    iters=30
    [ "$p" = hf ] && iters=5
    part "In-process A/B, $p (inproc_ab.py, $rounds rounds of $iters)"
    LD_PRELOAD=$lib CUBATCH_STATS=json CUBATCH_STATS_FILE="$raw/ab-$p.json" taskset -c "$cpu" timeout 240 \
        python3 "$here/inproc_ab.py" "$p" --rounds "$rounds" --iters "$iters" --json "$raw/ab-$p.jsonl" || rc=1 ;;
torchload)
    part "PyTorch side-stream copies beside cuBLAS products (torch_load.py, 15 rounds of on/off/off2)"
    LD_PRELOAD=$lib taskset -c "$cpu" timeout 300 python3 "$here/torch_load.py" --rounds 15 || rc=1 ;;
load)
    part "Copies beside compute, a pinned allocation per block (run-load.sh, $rounds rounds)"
    "$here/run-load.sh" --bin "$bin" --lib "$lib" --out "$raw/load" --rounds "$rounds" \
        --configs "plain plain2 cubatch" --loads none,gemm --cells h2d-1024x4K-blk,h2d-256x4K-blk,d2h-1024x4K-blk \
        --cpu "$cpu" >/dev/null || rc=1
    cat "$raw/load/load.md" ;;
lone)
    part "Lone copies: one copy and its synchronize, 201 a process ($((2 * rounds + 1)) rounds)"
    "$here/run-load.sh" --bin "$bin" --lib "$lib" --out "$raw/lone" --rounds $((2 * rounds + 1)) --reps 201 \
        --configs "plain plain2 cubatch off" --loads none --cells h2d-1x4K,d2d-1x4K --cpu "$cpu" >/dev/null || rc=1
    cat "$raw/lone/load.md" ;;
inlone)
    part "Lone copies in one process: inproc_lone, 2000 lone copies per configuration and round, $((2 * rounds + 1)) rounds, rotated"
    for l in "$lib" ${CB_PREV_LIB:+"$CB_PREV_LIB"}; do
        for args in "--dir h2d" "--dir d2d" "--dir h2d --stream legacy" "policy --dir h2d"; do
            pre=()
            case $args in policy*) pre=(CUBATCH_POLICY=d2h:0-max); args=${args#policy } ;; esac
            echo '```'
            echo "library $l ${pre[*]}"
            # shellcheck disable=SC2086
            env "${pre[@]}" taskset -c "$cpu" "$bin/inproc_lone" --lib "$l" $args --n 2000 --rounds $((2 * rounds + 1)) 2>&1 || rc=1
            echo '```'
        done
    done ;;
coldlone)
    part "Lone copies after other work: inproc_lone --pollute / --pollute-code 2048, 500 lone copies per configuration and round, $((2 * rounds + 1)) rounds"
    for cold in "" "--pollute 2048" "--pollute-code 2048"; do
        for i in 1 2 3; do
            for l in "$lib" ${CB_PREV_LIB:+"$CB_PREV_LIB"}; do
                echo '```'
                echo "library $l process $i ${cold:-(nothing between copies)}"
                # shellcheck disable=SC2086
                taskset -c "$cpu" "$bin/inproc_lone" --lib "$l" --dir h2d --n 500 --rounds $((2 * rounds + 1)) $cold 2>&1 || rc=1
                echo '```'
            done
        done
    done ;;
pass)
    part "Calls that pass through: copy_path h2d, 1000 calls a round, 21 rounds a process ($((2 * rounds + 1)) processes each)"
    {
        for ((r = 0; r < 2 * rounds + 1; r++)); do
            for c in plain plain2 pass off; do
                pre=()
                case $c in pass) pre=(LD_PRELOAD="$lib" CUBATCH_POLICY=d2h:0-max) ;; off) pre=(LD_PRELOAD="$lib" CUBATCH_ENABLE=0) ;; esac
                env "${pre[@]}" taskset -c "$cpu" "$bin/copy_path" --dir h2d --n 1000 --rounds 21 2>/dev/null | sed "s/^/$c $r /"
            done
        done
    } >"$raw/pass.txt"
    python3 - "$raw/pass.txt" <<'PY' || rc=1
import re, statistics, sys
v = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) (\d+) .*ns_per_copy_median=([\d.]+)", line)
    if m:
        v.setdefault(m.group(1), {})[m.group(2)] = float(m.group(3))
p = v.get("plain", {})
print("| config | ns per call (median over processes) | minus plain, per process pair: median (min-max) |\n| --- | ---: | --- |")
for c in ("plain", "plain2", "pass", "off"):
    d = [v[c][k] - p[k] for k in p if k in v.get(c, {})]
    print(f"| {c} | {statistics.median(v[c].values()):.1f} | "
          f"{statistics.median(d):+.1f} ({min(d):+.1f} to {max(d):+.1f}) |" if c in v and d else f"| {c} | - | - |")
PY
    ;;
*) echo "events-campaign: unknown part $p"; rc=1 ;;
esac
done
echo "# done in $((SECONDS - start)) s, exit $rc"
tar -C "$out" -czf "$out/raw.tgz" raw && rm -rf "$raw"
exit $rc
