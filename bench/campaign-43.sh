#!/usr/bin/env bash
# campaign-43.sh - issue 43 ("Beyond batching: merge what is adjacent, batch 2D
# copies, and prove it on whole programs"): the before/after instruments, in
# one device call of at most ~9 minutes.  They measure today's library too.
#
#   campaign-43.sh --bin DIR --lib PATH --out DIR [--prev PATH] [--rounds N]
#                  [--cpu N] [--budget SECONDS] [--parts LIST] [--plan]
#
#   --bin     the programs, built here by bench/build-bench.sh DIR (no GPU
#             needed): bench_copies, kv_swap, bench_tiles, bench_launch
#   --lib     libcubatch.so
#   --prev    an earlier libcubatch.so: the grid, kv and tiles parts add the
#             configuration prev (LD_PRELOAD of it), so that the report sets the
#             two libraries side by side (prev/cubatch > 1: the new one faster)
#   --out     where the results go (created); 3 files: summary.md (the tables),
#             campaign.log (everything printed), raw.tgz (raw/: grid.csv,
#             kv.csv, tiles.csv, launch.csv, train.md/.jsonl, kvswap.md/.jsonl,
#             procs.csv, comments.txt, env.txt, stats/, err/)
#   --rounds  rounds of the process-level parts (default 9, at least 7 wanted)
#   --cpu     the CPU every process is pinned to (taskset -c; default 3)
#   --budget  wall-clock seconds for everything (default 520); before each
#             round the rounds stop when the next would eat into the in-process
#             parts' reserve, and each in-process part gets what is left
#   --parts   a space or comma list, default "grid kv tiles launch train kvswap":
#     grid    bench_copies, contiguous and scattered layouts side by side (-l):
#             h2d, d2h, d2d x {256, 1024} x {4 KiB, 16 KiB}, h2d 256 x 64 KiB;
#             the loop everywhere, the hand batch in plain/plain2; one 4 MiB
#             copy each way in every process (issue 43's reference: merged
#             contiguous copies at >= 80% of its bandwidth)
#     kv      kv_swap -a driver: 1024 blocks of 16 KiB in and out, block ids in
#             runs of 1, 4, 16 and all; per block (loop), merged by hand
#             (merged), the hand batch (batch, plain/plain2)
#     tiles   bench_tiles: 256 tiles of 32 rows x 256 B, h2d and d2h, pitched
#             device and pinned host buffers: loop of cuMemcpy2DAsync, one
#             cuMemcpy3DBatchAsync, the tiles as 1D row copies, those rows as
#             one cuMemcpyBatchAsync, one 2D copy of the whole region
#     launch  bench_launch: 4096 launches of a tiny kernel a step, no copies,
#             side and legacy stream (the preload's cost per launch); configs
#             plain, plain2, cubatch, off (CUBATCH_ENABLE=0)
#     train   inproc_ab.py train: a DLRM-like training step, 64 pinned tensors
#             (one allocation each) moved with non_blocking=True, EmbeddingBags
#             and MLPs forward and backward; cubatch on/off/off2 in one process
#     kvswap  inproc_ab.py kvswap: PyTorch's KV swap as users write it (copy_
#             per layer, block, K and V on a side stream, 256 or 2,048 copies a
#             step) idle and beside decode-like products; on/off/off2
#   --plan    print the plan and the time estimate, run nothing
#
# Process-level parts: configurations plain, plain2 (the A/A column), cubatch
# (LD_PRELOAD, defaults; the launch part adds off), each process pinned with
# taskset -c CPU; per round the parts run in turn and each part's configurations
# start at a place that moves with the round and run backwards every other
# round.  Every cubatch/off process writes its JSON statistics (raw/stats/).
# bench/report-43.py makes summary.md from the raw files: medians over rounds
# of per-process medians and of per-round ratios (min-max), `~` where a ratio
# is inside its cell's A/A spread.
# Exit: 0 done, 1 a program failed or wrong bytes (the others still run), 2
# usage, 77 no GPU.
# shellcheck disable=SC2317  # the *_args functions are called by name ("${p}_args")
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

bin='' lib='' out='' prev='' rounds=9 cpu=3 budget=520 plan=0
parts='grid kv tiles launch train kvswap'
while [ $# -gt 0 ]; do
    case $1 in
    --bin|--lib|--out|--prev|--rounds|--cpu|--budget|--parts)
        [ $# -ge 2 ] || { echo "campaign-43: $1 needs a value" >&2; exit 2; } ;;
    esac
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --prev) prev=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --parts) parts=${2//,/ }; shift 2 ;;
    --plan) plan=1; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "campaign-43: unknown argument $1" >&2; exit 2 ;;
    esac
done
for v in "$rounds" "$cpu" "$budget"; do
    case $v in ''|*[!0-9]*) echo "campaign-43: --rounds, --cpu, --budget take whole numbers, not '$v'" >&2; exit 2 ;; esac
done
[ "$rounds" -ge 1 ] || { echo "campaign-43: --rounds must be at least 1" >&2; exit 2; }
known=' grid kv tiles launch train kvswap '
for p in $parts; do
    case $known in *" $p "*) ;; *) echo "campaign-43: unknown part '$p'" >&2; exit 2 ;; esac
done
has() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }

# --- the commands (one place: the plan prints them, the rounds run them) --------------------
grid_cells='h2d:256:4K h2d:1024:4K h2d:256:16K h2d:1024:16K h2d:256:64K d2h:256:4K d2h:1024:4K d2h:256:16K d2h:1024:16K d2d:256:4K d2d:1024:4K d2d:256:16K d2d:1024:16K'
grid_args() {  # $1: config
    local m=loop
    case $1 in plain|plain2) m=loop,batch ;; esac
    # shellcheck disable=SC2086
    echo -r 9 -w 2 -m "$m" -l contiguous $grid_cells -l scattered $grid_cells -l contiguous -m single h2d:1:4M d2h:1:4M
}
kv_args() {
    local m=loop,merged
    case $1 in plain|plain2) m=loop,merged,batch ;; esac
    echo -a driver -S 43 -s 10 -w 2 -R 1,4,16,all -m "$m" in:1024:16K out:1024:16K
}
tiles_args() { echo -r 9 -w 2 -n 256 -t 32x256 h2d d2h; }
launch_args() { echo -r 15 -w 3 -n 4096 -s side,legacy -m step,enqueue; }
part_configs() {
    case $1 in
    launch) echo plain plain2 cubatch off ;;
    *) echo plain plain2 cubatch${prev:+ prev} ;;
    esac
}
part_prog() {
    case $1 in grid) echo bench_copies ;; kv) echo kv_swap ;; tiles) echo bench_tiles ;; launch) echo bench_launch ;; esac
}
# estimated seconds per process, H200 (first-run guesses; corrected by the
# times measured once a round has run)
est_proc() {
    case $1:$2 in
    grid:cubatch) echo 1 ;; grid:*) echo 2 ;;
    kv:cubatch) echo 3 ;; kv:*) echo 5 ;;
    tiles:*) echo 2 ;;
    launch:*) echo 2 ;;
    esac
}
proc_parts=''
for p in grid kv tiles launch; do has $p && proc_parts="$proc_parts $p"; done
round_est=0
for p in $proc_parts; do
    for c in $(part_configs "$p"); do round_est=$((round_est + $(est_proc "$p" "$c"))); done
done
reserve=0
has train && reserve=$((reserve + 60))
has kvswap && reserve=$((reserve + 90))

if [ $plan -eq 1 ]; then
    echo "# campaign-43 plan: $rounds rounds of [$proc_parts ], about ${round_est}s a round; in-process:$(has train && echo ' train (~60s)')$(has kvswap && echo ' kvswap (~90s)')"
    echo "# estimate: $((rounds * round_est + reserve + 15))s of a ${budget}s budget"
    for p in $proc_parts; do
        for c in $(part_configs "$p"); do
            pre='' ; case $c in cubatch) pre="LD_PRELOAD=LIB " ;; prev) pre="LD_PRELOAD=PREV " ;; off) pre="LD_PRELOAD=LIB CUBATCH_ENABLE=0 " ;; esac
            echo "$p/$c: ${pre}taskset -c $cpu BIN/$(part_prog "$p") $("${p}_args" "$c")"
        done
    done
    has train && echo "train: LD_PRELOAD=LIB taskset -c $cpu python3 bench/inproc_ab.py train --rounds 9 --iters 20 --warm 3"
    has kvswap && echo "kvswap: LD_PRELOAD=LIB taskset -c $cpu python3 bench/inproc_ab.py kvswap --rounds 9 --iters 10 --warm 2"
    exit 0
fi

if [ -z "$bin" ] || [ -z "$lib" ] || [ -z "$out" ]; then
    echo "usage: campaign-43.sh --bin DIR --lib PATH --out DIR (--help)" >&2
    exit 2
fi
# shellcheck source=SCRIPTDIR/../tests/harness/lib.sh
. "$top/tests/harness/lib.sh"
cb_gpu_or_skip campaign-43
cb_real_driver_only
[ -f "$lib" ] || { echo "campaign-43: $lib not found" >&2; exit 2; }
[ -z "$prev" ] || [ -f "$prev" ] || { echo "campaign-43: $prev not found" >&2; exit 2; }
[ -z "$prev" ] || prev=$(cd "$(dirname "$prev")" && pwd)/$(basename "$prev")
[ -d "$bin" ] || { echo "campaign-43: $bin not found" >&2; exit 2; }
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
bin=$(cd "$bin" && pwd)
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
raw=$(mktemp -d "${TMPDIR:-/tmp}/cb43.XXXXXX")/raw
mkdir -p "$raw/stats" "$raw/err"
exec > >(tee -a "$out/campaign.log") 2>&1
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
start=$SECONDS
rc=0
stamp() { echo "# [$((SECONDS - start))s] $*"; }

echo "# cubatch campaign-43 $(date -u +%FT%TZ), budget ${budget}s, $rounds rounds, cpu $cpu, parts: $parts"
{
    echo "library: $lib"
    sha256sum "$lib"
    [ -z "$prev" ] || { echo "prev: $prev"; sha256sum "$prev"; }
    # the scripts' tree; the library is the file named above, known by its sha256
    echo "scripts' commit: $(git -C "$top" rev-parse HEAD 2>/dev/null || echo '?')"
    nvidia-smi --query-gpu=name,driver_version,memory.used,clocks.sm --format=csv,noheader 2>/dev/null
    nproc
    for p in bench_copies kv_swap bench_tiles bench_launch; do
        [ -x "$bin/$p" ] && sha256sum "$bin/$p" || echo "$p: not built"
    done
} >"$raw/env.txt" 2>&1
cat "$raw/env.txt"

# --- process-level parts, interleaved --------------------------------------------------------
run_proc() {  # part config round
    local p=$1 c=$2 r=$3 prog pre=() t0 st
    prog=$(part_prog "$p")
    [ -x "$bin/$prog" ] || { echo "# $p: $bin/$prog not built, skipped"; return; }
    case $c in
    cubatch) pre=(LD_PRELOAD="$lib" CUBATCH_STATS=json CUBATCH_STATS_FILE="$raw/stats/$p.$c.$r.json") ;;
    prev) pre=(LD_PRELOAD="$prev" CUBATCH_STATS=json CUBATCH_STATS_FILE="$raw/stats/$p.$c.$r.json") ;;
    off) pre=(LD_PRELOAD="$lib" CUBATCH_ENABLE=0 CUBATCH_STATS=json CUBATCH_STATS_FILE="$raw/stats/$p.$c.$r.json") ;;
    esac
    t0=$SECONDS
    # shellcheck disable=SC2046
    env "${pre[@]}" timeout -k 5 90 taskset -c "$cpu" "$bin/$prog" $("${p}_args" "$c") \
        >"$raw/o" 2>"$raw/err/$p.$c.$r.txt"
    st=$?
    if [ ! -s "$raw/$p.csv" ]; then  # the header, from the first process that printed one
        grep -m1 '^mode,' "$raw/o" | sed 's/^/config,round,/' >"$raw/$p.csv"
    fi
    grep -v -e '^#' -e '^mode,' "$raw/o" | sed "s/^/$c,$r,/" >>"$raw/$p.csv"
    grep '^#' "$raw/o" | sed "s/^/$p $c $r /" >>"$raw/comments.txt"
    [ -s "$raw/err/$p.$c.$r.txt" ] || rm -f "$raw/err/$p.$c.$r.txt"
    echo "$p,$c,$r,$st,$((SECONDS - t0))" >>"$raw/procs.csv"
    if [ $st -ne 0 ]; then
        echo "# $p $c round $r: exit $st"
        tail -3 "$raw/err/$p.$c.$r.txt" 2>/dev/null
        rc=1
    fi
}

echo "part,config,round,exit,seconds" >"$raw/procs.csv"
done_rounds=0
if [ -n "$proc_parts" ]; then
    for ((r = 0; r < rounds; r++)); do
        elapsed=$((SECONDS - start))
        if [ $r -gt 0 ]; then
            round_est=$(( (elapsed + r - 1) / r ))
        fi
        if [ $((elapsed + round_est + reserve + 15)) -gt "$budget" ]; then
            stamp "rounds stop at $r of $rounds: the next (~${round_est}s) would eat into the in-process parts' ${reserve}s"
            break
        fi
        stamp "round $((r + 1)) of $rounds"
        k=0
        for p in $proc_parts; do
            read -r -a cfgs <<<"$(part_configs "$p")"
            n=${#cfgs[@]}
            for ((i = 0; i < n; i++)); do
                j=$(( (r + k + i) % n ))
                [ $((r % 2)) -eq 1 ] && j=$(( (r + k + n - 1 - i) % n ))
                run_proc "$p" "${cfgs[$j]}" "$r"
            done
            k=$((k + 1))
        done
        done_rounds=$((r + 1))
    done
    stamp "process-level parts: $done_rounds rounds"
fi

# --- in-process parts ------------------------------------------------------------------------
inproc() {  # what iters warm reserve-after
    local what=$1 iters=$2 warm=$3 after=$4 cap
    cap=$((budget - (SECONDS - start) - after - 10))
    if [ $cap -lt 30 ]; then
        stamp "$what: not run, ${cap}s left"
        echo "$what,inproc,0,no-time,0" >>"$raw/procs.csv"
        rc=1
        return
    fi
    stamp "$what: inproc_ab.py, 9 rounds of on/off/off2 (at most ${cap}s)"
    local t0=$SECONDS st
    LD_PRELOAD=$lib CUBATCH_STATS=json CUBATCH_STATS_FILE="$raw/stats/$what.inproc.json" \
        timeout -k 5 "$cap" taskset -c "$cpu" "$py" "$here/inproc_ab.py" "$what" --rounds 9 \
        --iters "$iters" --warm "$warm" --json "$raw/$what.jsonl" >"$raw/$what.md" 2>"$raw/err/$what.txt"
    st=$?
    echo "$what,inproc,0,$st,$((SECONDS - t0))" >>"$raw/procs.csv"
    cat "$raw/$what.md"
    [ $st -eq 0 ] || { echo "# $what: exit $st"; tail -5 "$raw/err/$what.txt"; rc=1; }
}
has train && { a=0; has kvswap && a=90; inproc train 20 3 $a; }
has kvswap && inproc kvswap 10 2 0

# --- summary ------------------------------------------------------------------------------------
stamp "summary"
"$py" "$here/report-43.py" "$raw" --rounds-planned "$rounds" >"$out/summary.md" || rc=1
cat "$out/summary.md"
tar -C "$(dirname "$raw")" -czf "$out/raw.tgz" raw && rm -rf "$(dirname "$raw")"
stamp "done, exit $rc"
exit $rc
