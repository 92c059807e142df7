#!/usr/bin/env bash
# Two GPUs under cubatch (issue 20), in one command, on a machine with two GPUs.
#
#   run-two-gpu.sh --out DIR [--bin DIR] [--lib PATH] [--launcher PATH]
#                  [--parts LIST] [--rounds N] [--bench-budget SECONDS]
#
# Parts (--parts, default probe,torch,nccl,bench1,bench2), each checked against
# the same program without the preload:
#   probe   the two-device scenarios of tests/probe.c (two_*), each without and
#           with the preload in three configurations (default, CUBATCH_ENGINE=
#           kernel, CUBATCH_ENGINE=batch), through tests/gpu/run-probe.sh: same
#           digest and return codes, "result: ok"; and none of them may say
#           "two_devices: skipped"
#   torch   tests/gpu/two_gpu.py single (tensors to both devices, _foreach_copy_
#           per device, torch.cuda.set_device switches, peer copies): the same
#           CHECK lines without and with the preload, in the three configurations
#   nccl    an NCCL all-reduce of two processes (torchrun --nproc_per_node=2
#           two_gpu.py allreduce) without, then under the launcher with
#           --stats=json --stats-file=DIR/nccl.%p.json: the same CHECK lines, and
#           one report per rank process (its pid in the file name)
#   bench1  the benchmark's one-device grid on the second device
#           (CUDA_VISIBLE_DEVICES=<its index>, bench/run-bench.sh --parts copies)
#   bench2  both devices at once, one thread per device (bench_copies -D 0,1):
#           the loop in configurations plain, plain2 (A/A), cubatch (auto),
#           kernel, batch, interleaved over --rounds (default 5) rounds, and the
#           ratios plain/config per device and cell (two-bench.md)
#
#   --bin       prebuilt programs: probe and bench_copies (bench/campaign.sh
#               --prebuild DIR builds them, no GPU needed); default: build them
#               here (needs nvcc)
#   --lib       libcubatch.so (default: src/.libs/libcubatch.so of this tree)
#   --launcher  the cubatch launcher (default: ./cubatch of this tree, then
#               `cubatch` on PATH); it needs its tools/cubatch-check beside it
#   --bench-budget  seconds for bench1 (default 200; run-bench.sh drops what
#               does not fit and says so)
# Writes to DIR: two-gpu.log (everything), two-probe.txt, two-torch.txt,
# two-nccl.txt (and nccl.<pid>.json, the reports), bench-dev1/ (run-bench.sh's
# files), two-bench.csv, two-bench.md, two-stats.jsonl (every report of the
# preloaded runs, tagged).
# Environment: PYTHON (with PyTorch for torch and nccl), CB_TEST_SEED (the
# data; random if unset), NVCC, CC, CUDA_HOME, NVCC_GENCODE (when building),
# BENCH_SIM=1 (test this script on tests/sim's simulated driver with
# CUSIM_DEVICES=2: times and PyTorch parts mean nothing there).
# Exit: 0 every check passed, 1 a check failed, 77 fewer than two GPUs visible,
# 99 setup error.  The benchmark's ratios are reported, never a failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

out='' bin='' lib=${CB_LIB:-} launcher='' parts="probe torch nccl bench1 bench2" rounds=5 bbudget=200
while [ $# -gt 0 ]; do
    case $1 in
    --out|--bin|--lib|--launcher|--parts|--rounds|--bench-budget)
        [ $# -ge 2 ] || { echo "run-two-gpu: $1 needs a value" >&2; exit 99; } ;;
    esac
    case $1 in
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --launcher) launcher=$2; shift 2 ;;
    --parts) parts=${2//,/ }; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --bench-budget) bbudget=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "run-two-gpu: unknown argument $1" >&2; exit 99 ;;
    esac
done
die() { echo "run-two-gpu: $*" >&2; exit 99; }
for p in $parts; do
    case $p in probe|torch|nccl|bench1|bench2) ;; *) die "unknown part '$p' (probe, torch, nccl, bench1, bench2)" ;; esac
done
for v in "$rounds" "$bbudget"; do
    case $v in ''|*[!0-9]*) die "--rounds and --bench-budget take whole numbers, not '$v'" ;; esac
done
[ -n "$out" ] || die "--out DIR is required"
has() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }

sim=0
[ "${BENCH_SIM:-}" = 1 ] && sim=1
py=${PYTHON:-python3}
unset LD_PRELOAD

# --- two GPUs, or nothing to do ----------------------------------------------------
if [ $sim -eq 0 ]; then
    [ -e /dev/nvidiactl ] || { echo "run-two-gpu: no GPU here (/dev/nvidiactl missing), skipped"; exit 77; }
    # the simulated driver of tests/sim must never stand in for the real one
    if [ -n "${LD_LIBRARY_PATH:-}" ]; then
        LD_LIBRARY_PATH=$(printf '%s' "$LD_LIBRARY_PATH" | tr ':' '\n' | grep -v 'tests/sim' | paste -sd: -)
        export LD_LIBRARY_PATH
    fi
fi
# what the driver sees (CUDA_VISIBLE_DEVICES applies), without PyTorch
ngpu=$("$py" - <<'EOF' 2>/dev/null
import ctypes
try:
    cu = ctypes.CDLL("libcuda.so.1")
    n = ctypes.c_int(0)
    print(n.value if cu.cuInit(0) == 0 and cu.cuDeviceGetCount(ctypes.byref(n)) == 0 else 0)
except OSError:
    print(0)
EOF
)
ngpu=${ngpu:-0}
if [ "$ngpu" -lt 2 ]; then
    echo "run-two-gpu: $ngpu GPU(s) visible, two needed (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}): skipped"
    exit 77
fi

mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
exec > >(tee -a "$out/two-gpu.log") 2>&1
echo "# run-two-gpu $(date -u +%FT%TZ): $ngpu GPUs, parts: $parts"
[ $sim -eq 1 ] || nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv,noheader 2>/dev/null
[ $sim -eq 1 ] || nvidia-smi topo -m 2>/dev/null | head -4

[ -n "$lib" ] || lib=$top/src/.libs/libcubatch.so
[ -f "$lib" ] || die "$lib not found (build the library or pass --lib)"
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
work=$(mktemp -d "${TMPDIR:-/tmp}/cubatch-two.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -z "$bin" ]; then
    bin=$work/bin
    { "$here/build-gpu-tests.sh" "$bin" && "$top/bench/build-bench.sh" "$bin"; } >"$work/build.log" 2>&1 ||
        { cat "$work/build.log"; die "build failed"; }
fi
bin=$(cd "$bin" && pwd)
seed=${CB_TEST_SEED:-$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')}
export CB_TEST_SEED=$seed
echo "# library $lib, programs $bin, seed $seed"
tmo=300
run_timeout=
command -v timeout >/dev/null && run_timeout="timeout -k 10 $tmo"
fail=0
verdict() { case $1 in 0) echo ok ;; 77) echo skip ;; 124|137) echo TIMEOUT ;; *) echo "FAIL($1)" ;; esac; }
config_env() {
    case $1 in default) echo "" ;; kernel) echo "CUBATCH_ENGINE=kernel" ;; batch) echo "CUBATCH_ENGINE=batch" ;; esac
}
# counters of a stats report, one line; tagged into two-stats.jsonl
counters() {   # FILE TAG
    "$py" - "$1" "$2" "$out/two-stats.jsonl" <<'EOF' 2>/dev/null || echo "(no stats)"
import json, sys
d = json.load(open(sys.argv[1]))
with open(sys.argv[3], "a") as f:
    f.write(json.dumps({"tag": sys.argv[2], "stats": d}) + "\n")
c = d["counters"]
keys = ["copies", "deferred", "kernel_launches", "batches", "legacy_runs", "side_submits", "singles",
        "pass_foreign", "pass_legacy", "pass_first", "pass_slow", "batch_errors", "replayed"]
print(" ".join(f"{k}={c[k]}" for k in keys if c.get(k)))
EOF
}

have_torch=1
if has torch || has nccl; then
    "$py" -c 'import torch' 2>/dev/null || { have_torch=0; echo "# PyTorch not importable by $py: torch and nccl skipped"; }
fi

# --- probe: the two-device rule scenarios --------------------------------------------
if has probe; then
    echo "# --- probe: two-device scenarios"
    list=$("$bin/probe" 2>&1 | sed -n 's/^scenarios://p')
    two=$(for s in $list; do case $s in two_*) printf '%s ' "$s" ;; esac; done)
    if [ -z "$two" ]; then
        echo "run-two-gpu: $bin/probe has no two_* scenario (an old build?)"
        fail=1
    else
        for s in $two; do
            if $run_timeout "$bin/probe" "$s" 2>&1 | grep -q '^two_devices: skipped'; then
                echo "run-two-gpu: probe $s skipped: it does not see two devices"
                fail=1
            fi
        done
        CB_PROBE_SCENARIOS="$two" CB_GPU_CONFIGS="default kernel batch" \
            "$here/run-probe.sh" "$bin/probe" "$lib" "$out/two-probe.txt" || fail=1
    fi
fi

# --- torch: one process, two devices ---------------------------------------------------
if has torch && [ $have_torch -eq 1 ]; then
    echo "# --- torch: two_gpu.py single"
    : >"$out/two-torch.txt"
    $run_timeout "$py" "$here/two_gpu.py" single >"$work/torch.plain" 2>&1
    prc=$?
    if [ $prc -eq 77 ]; then
        echo "torch: skipped ($(tail -1 "$work/torch.plain"))" | tee -a "$out/two-torch.txt"
    else
        printf '%-8s %-6s %-7s %-5s %s\n' config plain cubatch same counters | tee -a "$out/two-torch.txt"
        for cfg in default kernel batch; do
            # shellcheck disable=SC2046
            env $(config_env $cfg) CUBATCH_STATS=json CUBATCH_STATS_FILE="$work/torch.json" LD_PRELOAD="$lib" \
                $run_timeout "$py" "$here/two_gpu.py" single >"$work/torch.shim" 2>&1
            src=$?
            same=no
            cmp -s <(grep '^CHECK' "$work/torch.plain") <(grep '^CHECK' "$work/torch.shim") &&
                [ -n "$(grep '^CHECK' "$work/torch.plain")" ] && same=yes
            printf '%-8s %-6s %-7s %-5s %s\n' $cfg "$(verdict $prc)" "$(verdict $src)" $same \
                "$(counters "$work/torch.json" "torch $cfg")" | tee -a "$out/two-torch.txt"
            if [ $prc -ne 0 ] || [ $src -ne 0 ] || [ $same != yes ]; then
                fail=1
                { echo "--- plain"; tail -20 "$work/torch.plain"; echo "--- $cfg"; tail -20 "$work/torch.shim"; } |
                    tee -a "$out/two-torch.txt"
            fi
            rm -f "$work/torch.json"
        done
    fi
fi

# --- nccl: two processes under the launcher, one report each ---------------------------
if has nccl && [ $have_torch -eq 1 ]; then
    echo "# --- nccl: all-reduce of two processes"
    : >"$out/two-nccl.txt"
    if [ -z "$launcher" ]; then
        if [ -x "$top/cubatch" ]; then launcher=$top/cubatch
        else launcher=$(command -v cubatch || true); fi
    fi
    if command -v torchrun >/dev/null; then trun=(torchrun)
    else trun=("$py" -m torch.distributed.run); fi
    trun+=(--standalone --nproc_per_node=2 "$here/two_gpu.py" allreduce)
    if [ -z "$launcher" ] || [ ! -x "$launcher" ]; then
        echo "nccl: FAIL: no cubatch launcher (build it: ./cubatch, or pass --launcher)" | tee -a "$out/two-nccl.txt"
        fail=1
    else
        $run_timeout "${trun[@]}" >"$work/nccl.plain" 2>&1
        prc=$?
        if [ $prc -eq 77 ] || grep -q 'PyTorch not installed\|two needed: skipped' "$work/nccl.plain"; then
            echo "nccl: skipped ($(grep -m1 'skipped' "$work/nccl.plain"))" | tee -a "$out/two-nccl.txt"
        else
            rm -f "$out"/nccl.*.json
            CUBATCH_LIBRARY=$lib $run_timeout "$launcher" --stats=json --stats-file="$out/nccl.%p.json" \
                "${trun[@]}" >"$work/nccl.shim" 2>&1
            src=$?
            same=no
            a=$(grep -o 'CHECK allreduce [0-9a-f]*' "$work/nccl.plain" | sort)
            b=$(grep -o 'CHECK allreduce [0-9a-f]*' "$work/nccl.shim" | sort)
            [ "$(printf '%s\n' "$a" | grep -c CHECK)" -eq 2 ] && [ "$a" = "$b" ] && same=yes
            reports=0 missing=''
            for pid in $(grep -o 'RANK [0-9]* PID [0-9]*' "$work/nccl.shim" | awk '{print $4}'); do
                if [ -s "$out/nccl.$pid.json" ]; then
                    reports=$((reports + 1))
                    echo "rank pid $pid: $(counters "$out/nccl.$pid.json" "nccl pid $pid")" >>"$work/nccl.ranks"
                else
                    missing="$missing $pid"
                fi
            done
            total=$(find "$out" -maxdepth 1 -name 'nccl.*.json' | wc -l)
            printf 'nccl: plain %s, cubatch %s, same %s, rank reports %s of 2 (%s report files in all)%s\n' \
                "$(verdict $prc)" "$(verdict $src)" $same $reports "$total" \
                "${missing:+, missing for pids$missing}" | tee -a "$out/two-nccl.txt"
            [ -f "$work/nccl.ranks" ] && tee -a "$out/two-nccl.txt" <"$work/nccl.ranks"
            if [ $prc -ne 0 ] || [ $src -ne 0 ] || [ $same != yes ] || [ $reports -ne 2 ]; then
                fail=1
                { echo "--- plain"; tail -20 "$work/nccl.plain"; echo "--- cubatch"; tail -20 "$work/nccl.shim"; } |
                    tee -a "$out/two-nccl.txt"
            fi
        fi
    fi
fi

# --- bench1: the one-device grid on the second device ----------------------------------
if has bench1; then
    second=1
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then second=$(printf '%s' "$CUDA_VISIBLE_DEVICES" | cut -d, -f2); fi
    echo "# --- bench1: the grid on the second device (CUDA_VISIBLE_DEVICES=$second), ${bbudget}s"
    CUDA_VISIBLE_DEVICES=$second "$top/bench/run-bench.sh" --bin "$bin" --lib "$lib" --out "$out/bench-dev1" \
        --parts copies --budget "$bbudget"
    brc=$?
    echo "# bench1: exit $brc"
    [ $brc -eq 0 ] || fail=1
    [ -f "$out/bench-dev1/bench.md" ] && cat "$out/bench-dev1/bench.md"
fi

# --- bench2: both devices at once, one thread per device ----------------------------------
if has bench2; then
    echo "# --- bench2: both devices at once (bench_copies -D 0,1), $rounds rounds"
    cells=()
    for d in h2d d2h d2d; do for c in 8 64 256 1024; do for s in 4K 16K; do cells+=("$d:$c:$s"); done; done; done
    cpus=''
    [ "$(nproc)" -ge 4 ] && cpus='taskset -c 2,3'  # one core per device's thread
    csv=$out/two-bench.csv
    echo "config,round,mode,stream,dir,count,size,reps,median_us,p10_us,p90_us,extra" >"$csv"
    configs="plain plain2 cubatch kernel batch"
    for r in $(seq 1 "$rounds"); do
        order=$configs
        [ $((r % 2)) -eq 0 ] && order=$(printf '%s\n' $configs | tac | tr '\n' ' ')
        for cfg in $order; do
            case $cfg in
            plain|plain2) envs=() modes=loop,batch ;;
            cubatch) envs=(LD_PRELOAD="$lib") modes=loop ;;
            kernel) envs=(LD_PRELOAD="$lib" CUBATCH_ENGINE=kernel) modes=loop ;;
            batch) envs=(LD_PRELOAD="$lib" CUBATCH_ENGINE=batch) modes=loop ;;
            esac
            # shellcheck disable=SC2086
            env "${envs[@]}" CUBATCH_STATS=json CUBATCH_STATS_FILE="$work/b.json" $run_timeout $cpus \
                "$bin/bench_copies" -D 0,1 -r 5 -w 2 -m $modes "${cells[@]}" >"$work/b.out" 2>"$work/b.err"
            rc=$?
            if [ $rc -ne 0 ]; then
                echo "bench2: $cfg round $r: exit $rc"; tail -5 "$work/b.err"; fail=1
            fi
            grep -v '^#' "$work/b.out" | grep -v '^mode,' | sed "s/^/$cfg,$r,/" >>"$csv"
            [ -f "$work/b.json" ] && counters "$work/b.json" "bench2 $cfg round $r" >/dev/null
            rm -f "$work/b.json"
        done
    done
    "$py" - "$csv" "$out/two-bench.md" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = {}
for r in rows:
    if r["mode"] != "loop":
        continue
    key = (r["stream"], r["dir"], int(r["count"]), int(r["size"]))
    t.setdefault(key, {}).setdefault(r["config"], {})[r["round"]] = float(r["median_us"])
out = ["# Both devices at once (bench_copies -D 0,1): the loop, median over rounds, us",
       "", "ratios: plain / config (> 1: faster than the plain loop); A/A: plain / plain2, its min-max over rounds",
       "", "| device | dir | count x size | plain | A/A | cubatch | kernel | batch |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
slower = []
for key in sorted(t):
    c = t[key]
    if "plain" not in c:
        continue
    med = {k: statistics.median(v.values()) for k, v in c.items()}
    def ratio(k):
        per = [c["plain"][r] / c[k][r] for r in c["plain"] if r in c.get(k, {})]
        return statistics.median(per) if per else None, per
    aa, aas = ratio("plain2")
    cells = []
    for k in ("cubatch", "kernel", "batch"):
        m, per = ratio(k)
        cells.append("-" if m is None else f"{m:.2f}")
        if m is not None and m < 1 and (not aas or m < min(aas)):
            slower.append(f"{key[0]} {key[1]} {key[2]}x{key[3]}: {k} {m:.2f} (A/A {min(aas) if aas else 0:.2f}-{max(aas) if aas else 0:.2f})")
    aa_txt = "-" if aa is None else f"{aa:.2f} ({min(aas):.2f}-{max(aas):.2f})"
    out.append(f"| {key[0]} | {key[1]} | {key[2]} x {key[3]} | {med['plain']:.1f} | {aa_txt} | " + " | ".join(cells) + " |")
out += ["", "slower than the plain loop beyond the A/A spread: " + ("none" if not slower else ""), *slower]
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
EOF
fi

echo "# run-two-gpu: $( [ $fail -eq 0 ] && echo 'every check passed' || echo 'a check FAILED' ) ($(date -u +%FT%TZ))"
exit $fail
