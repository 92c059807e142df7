#!/usr/bin/env bash
# The cubatch benchmark: every cell in six configurations and three CPU settings,
# configurations interleaved, at least 7 rounds, within a time budget.
#
#   run-bench.sh --out DIR [--lib PATH] [--bin DIR] [--budget SECONDS]
#                [--rounds N] [--reps N] [--warm N] [--configs LIST] [--cpus LIST]
#                [--parts LIST] [--one-core CPU] [--two-cores CPUS]
#                [--torch-iters N] [--quick] [--plan]
#
# Configurations, each its own process:
#   plain    no preload; also times the hand-written cuMemcpyBatchAsync ("hand")
#   plain2   no preload again: the A/A column (the noise floor of every ratio)
#   cubatch  LD_PRELOAD=libcubatch.so, defaults (CUBATCH_ENGINE=auto)
#   batch    LD_PRELOAD, CUBATCH_ENGINE=batch (the batch API only)
#   kernel   LD_PRELOAD, CUBATCH_ENGINE=kernel (the copy kernel whenever it can)
#   off      LD_PRELOAD, CUBATCH_ENABLE=0 (the pass-through's own cost)
# CPU settings: unpinned, one (taskset -c 3), two (taskset -c 2,3).
# Parts (--parts, default copies,torch):
#   copies  bench_copies, one process per round, CPU setting and configuration:
#           the grid (h2d, d2h, d2d x {8, 64, 256, 1024} x {4K, 16K}, 256 x 64K,
#           1024 x 256 B: the loop, and the hand batch in plain/plain2), then the
#           extras: one copy + sync (4K, each direction), copies then CPU work
#           (overlap: h2d 64x4K and 256x4K, d2h 64x4K, fixed busy times), enqueue
#           cost (h2d, d2h 1024x4K), copies with event records (events1: h2d
#           1024x4K, one record after each copy; events2: h2d 256x4K, two; each
#           copy its own events), the loop on the legacy default stream (d2h
#           64x4K, h2d 1024x4K; no hand batch there) and on the per-thread stream
#   torch   bench/torch_foreach.py, one process per round and configuration (not
#           kernel: PyTorch takes seconds to import), every CPU setting inside it
#   kv      kv_swap, unpinned (not by default)
# Order: CPU settings rotate from round to round; configurations rotate per round
# and CPU setting, and run backwards every other round.
# Every process runs REPS (5) timed repetitions after WARM (2) warm-ups and one
# checked run, and prints its medians; bench_report.py takes the median over
# rounds of every time and of every per-round ratio, with its min-max spread.
# --rounds (default 7), --quick: 2 rounds of a small grid, torch in round 1 only
# (a smoke test, about a minute).  --plan: print the plan and the estimate, stop.
# The estimate is printed first.  What does not fit in --budget (default 390 s)
# is dropped, in this order, and said in bench.log: the kernel configuration
# outside the one-core setting, torch's two-core setting, the kernel
# configuration, the copies' two-core setting, then rounds.  After every round
# the estimate is corrected by the times measured so far.
# Writes to DIR: bench.csv (config,round,part,cpu + bench_copies' columns),
# bench.md (bench_report.py), bench.log, bench-stats.jsonl (cubatch's JSON
# statistics of every preloaded process, with config, cpu, part, round).
# Environment: NVCC, CC, CUDA_HOME, NVCC_GENCODE, PYTHON (with PyTorch, for the
# torch part; the report needs only the standard library), BENCH_SIM=1 (test the
# scripts on tests/sim's simulated driver, LD_LIBRARY_PATH: meaningless times).
# Exit: 0 done (maybe partly, see bench.log), 1 a benchmark failed, 77 no GPU,
# 99 setup error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$top/tests/harness/lib.sh"

out='' lib=${CB_LIB:-} bin='' budget=390 rounds=7 reps=5 warm=2 quick=0 plan=0
configs="plain plain2 cubatch batch kernel off" cpus="unpinned one two" parts="copies torch"
one_core=3 two_cores=2,3 titers=50 twarm=10
set_rounds='' set_reps='' set_titers=''
while [ $# -gt 0 ]; do
    case $1 in
    --out|--lib|--bin|--budget|--rounds|--reps|--warm|--configs|--cpus|--parts|--one-core|--two-cores|--torch-iters)
        [ $# -ge 2 ] || { echo "run-bench: $1 needs a value" >&2; exit 99; } ;;
    esac
    case $1 in
    --out) out=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --rounds) set_rounds=$2; shift 2 ;;
    --reps) set_reps=$2; shift 2 ;;
    --warm) warm=$2; shift 2 ;;
    --configs) configs=${2//,/ }; shift 2 ;;
    --cpus) cpus=${2//,/ }; shift 2 ;;
    --parts) parts=${2//,/ }; shift 2 ;;
    --one-core) one_core=$2; shift 2 ;;
    --two-cores) two_cores=$2; shift 2 ;;
    --torch-iters) set_titers=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --plan) plan=1; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "run-bench: unknown argument $1" >&2; exit 99 ;;
    esac
done

die() { echo "run-bench: $*" >&2; exit 99; }
is_uint() { case $1 in ''|*[!0-9]*) return 1 ;; esac; }
in_list() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }

if [ $quick -eq 1 ]; then
    rounds=2 reps=3 warm=1 titers=10 twarm=2
fi
rounds=${set_rounds:-$rounds} reps=${set_reps:-$reps} titers=${set_titers:-$titers}
for v in budget rounds reps warm titers one_core; do
    is_uint "${!v}" || die "--${v//_/-} wants a whole number, not '${!v}'"
done
if [ "$rounds" -lt 1 ] || [ "$reps" -lt 1 ] || [ "$titers" -lt 1 ]; then
    die "--rounds, --reps, --torch-iters must be at least 1"
fi
case $two_cores in ''|*[!0-9,-]*) die "--two-cores wants a CPU list like 2,3" ;; esac
for c in $configs; do in_list "$c" "plain plain2 cubatch batch kernel off" || die "unknown configuration '$c'"; done
for c in $cpus; do in_list "$c" "unpinned one two" || die "unknown CPU setting '$c' (unpinned, one, two)"; done
for p in $parts; do in_list "$p" "copies torch kv" || die "unknown part '$p' (copies, torch, kv)"; done
in_list plain "$configs" || die "the plain configuration is needed (every ratio is against it)"
if [ -z "$configs" ] || [ -z "$cpus" ] || [ -z "$parts" ]; then
    die "empty --configs, --cpus or --parts"
fi
[ $plan -eq 1 ] || [ -n "$out" ] || die "--out DIR is required"

sim=0
[ "${BENCH_SIM:-}" = 1 ] && sim=1
if [ $plan -eq 0 ]; then
    [ $sim -eq 1 ] || cb_gpu_or_skip run-bench
    [ -n "$lib" ] || lib=$top/src/.libs/libcubatch.so
    [ -f "$lib" ] || die "$lib not found (build the library or pass --lib)"
    lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
fi
unset LD_PRELOAD
python=${PYTHON:-python3}

# --- what runs ------------------------------------------------------------------
counts="8 64 256 1024" sizes="4K 16K" extra_cells="256:64K 1024:256"
if [ $quick -eq 1 ]; then
    counts="8 256" sizes="4K" extra_cells="1024:256"
fi
grid=()
for dir in h2d d2h d2d; do
    for c in $counts; do for s in $sizes; do grid+=("$dir:$c:$s"); done; done
    for cs in $extra_cells; do grid+=("$dir:$cs"); done
done
# extras ARGS for the hand-batch modes: plain and plain2 time the hand batch too
extras() {
    local hand=$1
    # fixed busy times (about the plain batch time of each cell on the H200), so
    # that every configuration does the same CPU work
    echo -m single h2d:1:4K d2h:1:4K d2d:1:4K \
        -m overlap -b 100 h2d:64:4K -b 420 h2d:256:4K -b 60 d2h:64:4K -b 0 \
        -m enqueue h2d:1024:4K d2h:1024:4K \
        -m events1 h2d:1024:4K -m events2 h2d:256:4K \
        -s legacy -m loop d2h:64:4K h2d:1024:4K \
        -s ptds -m "loop$hand" d2h:64:4K h2d:1024:4K -s side
}
# copies_args CONFIG: bench_copies' arguments for that configuration
copies_args() {
    local hand=''
    case $1 in plain|plain2) hand=,batch ;; esac
    # shellcheck disable=SC2046
    printf '%s\n' -r "$reps" -w "$warm" -m "loop$hand" "${grid[@]}" $(extras "$hand")
}

# --- the estimate (ms) ----------------------------------------------------------
# Costs measured on the H200 (docs/design.md section 6, bench/RESULTS.md): a bench_copies process
# starts and ends in about 0.45 s; per copy, a loop costs 2.6 (h2d), 2.1 (d2h),
# 5.3 (d2d) us, the batch API 1.5, 0.6, 5.0 us, plus the bytes at 50 GB/s; a
# PyTorch process imports and starts in 3-5 s, and a variant costs about 1.5 ms
# an iteration.  Each process's estimate is scaled by the measured/estimated
# ratio of its part so far.
est_copies_ms() {   # CONFIG
    copies_args "$1" | awk -v runs=$((warm + reps + 1)) '
        function per(d, m) {
            if (m == "batch") return d == "h2d" ? 1.5 : d == "d2h" ? 0.6 : 5.0
            return d == "h2d" ? 2.6 : d == "d2h" ? 2.1 : 5.3
        }
        BEGIN { modes = "loop,batch"; busy = 0 }
        opt == "-m" { modes = $0; opt = ""; next }
        opt == "-b" { busy = $0; opt = ""; next }
        opt != "" { opt = ""; next }
        /^-/ { opt = $0; next }
        {
            split($0, c, ":"); n = c[2]; sz = c[3]
            if (sz ~ /K$/) sz = sz * 1024; else if (sz ~ /M$/) sz = sz * 1048576
            k = split(modes, ms, ",")
            for (i = 1; i <= k; i++) {
                m = ms[i]; cnt = m == "single" ? 1 : n
                us = 10 + cnt * (per(c[1], m) + sz / 50000)
                if (m == "overlap") us += busy
                total += us
            }
        }
        END { printf "%d\n", 450 + runs * total / 1000 }'
}
trim() { local -a a; read -r -a a <<<"$1"; echo "${a[*]}"; }
words() { local -a a; read -r -a a <<<"$1"; echo "${#a[@]}"; }
torch_cpus_n() { words "$torch_cpus"; }
est_torch_ms() { echo $(( 4500 + $(torch_cpus_n) * 4 * (twarm + titers + 1) * 3 / 2 )); }
kvsteps=50
[ $quick -eq 1 ] && kvsteps=10
est_kv_ms() { echo $(( 1500 + kvsteps * 12 )); }

# what each round runs, as the drops leave it
kernel_cpus=$cpus copies_cpus=$cpus torch_cpus=$cpus
torch_configs=''
for c in $configs; do [ "$c" = kernel ] || torch_configs+="$c "; done
declare -A est_ms scale=([copies]=100 [torch]=100 [kv]=100)  # scale: measured/estimated, %
refresh_est() {
    local c
    for c in $configs; do est_ms[$c]=$(est_copies_ms "$c"); done
    est_ms[torch]=$(est_torch_ms)
    est_ms[kv]=$(est_kv_ms)
}
round_ms() {   # [ROUND]: the estimate of one round
    local r=${1:-2} t=0 cpu c
    if in_list copies "$parts"; then
        for cpu in $copies_cpus; do
            for c in $configs; do
                [ "$c" = kernel ] && ! in_list "$cpu" "$kernel_cpus" && continue
                t=$(( t + est_ms[$c] * scale[copies] / 100 ))
            done
        done
    fi
    if in_list torch "$parts" && [ -n "$torch_cpus" ] && [ "$r" -le "$torch_rounds" ]; then
        for c in $torch_configs; do t=$(( t + est_ms[torch] * scale[torch] / 100 )); done
    fi
    if in_list kv "$parts"; then
        for c in $configs; do t=$(( t + est_ms[kv] * scale[kv] / 100 )); done
    fi
    echo $t
}
remaining_ms() {  # FIRST_ROUND: the estimate of rounds FIRST_ROUND..rounds
    local r t=0
    for ((r = $1; r <= rounds; r++)); do t=$(( t + $(round_ms "$r") )); done
    echo $t
}
torch_rounds=$rounds
[ $quick -eq 1 ] && torch_rounds=1
margin_ms=6000   # the report and the last process's end
prewarm_ms=0
in_list torch "$parts" && prewarm_ms=9000

note() { printf '%s\n' "$*" | if [ -n "${log:-}" ]; then tee -a "$log"; else cat; fi; }

# drop_to_fit FIRST_ROUND LEFT_MS: drop what does not fit, in the documented order
drop_to_fit() {
    local first=$1 left=$2 step=0 need
    while need=$(remaining_ms "$first"); [ "$need" -gt "$left" ]; do
        step=$((step + 1))
        case $step in
        1) if in_list kernel "$configs" && [ "$kernel_cpus" != one ] && in_list one "$copies_cpus"; then
               kernel_cpus=one
               note "DROPPED (budget: ${need} ms needed, ${left} ms left): the kernel configuration outside the one-core setting, from round $first"
           fi ;;
        2) if in_list two "$torch_cpus"; then
               torch_cpus=$(for c in $torch_cpus; do [ "$c" = two ] || printf '%s ' "$c"; done)
               est_ms[torch]=$(est_torch_ms)
               note "DROPPED (budget: ${need} ms needed, ${left} ms left): torch's two-core setting, from round $first"
           fi ;;
        3) if in_list kernel "$configs"; then
               configs=$(for c in $configs; do [ "$c" = kernel ] || printf '%s ' "$c"; done)
               note "DROPPED (budget: ${need} ms needed, ${left} ms left): the kernel configuration, from round $first"
           fi ;;
        4) if in_list two "$copies_cpus" && [ "$copies_cpus" != two ]; then
               copies_cpus=$(for c in $copies_cpus; do [ "$c" = two ] || printf '%s ' "$c"; done)
               note "DROPPED (budget: ${need} ms needed, ${left} ms left): the copies' two-core setting, from round $first"
           fi ;;
        *) local per n
           per=$(round_ms "$first")
           n=$(( left / (per > 0 ? per : 1) ))
           if [ $n -lt 1 ]; then   # this round still runs, as far as the budget goes
               n=1
               note "DROPPED (budget: ${per} ms a round, ${left} ms left): round $first runs only as far as the budget goes"
           fi
           [ $((first + n)) -le "$rounds" ] &&
               note "DROPPED (budget: ${need} ms needed, ${left} ms left): rounds $((first + n))..$rounds (${per} ms a round)"
           rounds=$(( first - 1 + n ))
           [ "$torch_rounds" -gt "$rounds" ] && torch_rounds=$rounds
           return ;;
        esac
    done
}

# --- setup ----------------------------------------------------------------------
if [ $plan -eq 0 ]; then
    mkdir -p "$out" || die "cannot create $out"
    out=$(cd "$out" && pwd)
    work=$(mktemp -d "${TMPDIR:-/tmp}/cubatch-bench.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    log=$out/bench.log csv=$out/bench.csv stats=$out/bench-stats.jsonl
    : >"$log"
    : >"$stats"
    echo "config,round,part,cpu,mode,stream,dir,count,size,reps,median_us,p10_us,p90_us,extra" >"$csv"
    if [ -z "$bin" ]; then
        bin=$work/bin
        "$here/build-bench.sh" "$bin" >>"$log" 2>&1 || die "build failed, see $log"
    fi
    bin=$(cd "$bin" && pwd)
    [ -x "$bin/bench_copies" ] || die "$bin/bench_copies not found"
    note "# cubatch bench: $(date -u +%FT%TZ), library $lib, budget ${budget}s"
    note "# $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null | head -1)"
    [ $sim -eq 1 ] && note "# BENCH_SIM=1: the simulated driver of tests/sim; every time below is meaningless"
    # CPU settings: taskset must work with the asked CPUs
    for c in one two; do
        mask=$one_core
        [ $c = two ] && mask=$two_cores
        if in_list $c "$cpus" && ! taskset -c "$mask" true 2>/dev/null; then
            note "DROPPED: CPU setting $c (taskset -c $mask fails here: $(nproc) CPUs)"
            cpus=$(for x in $cpus; do [ "$x" = $c ] || printf '%s ' "$x"; done)
        fi
    done
    [ -n "$cpus" ] || die "no CPU setting left"
    kernel_cpus=$cpus copies_cpus=$cpus torch_cpus=$cpus
    note "# cpu settings: unpinned = $(taskset -pc $$ 2>/dev/null | sed 's/.*: //'), one = taskset -c $one_core, two = taskset -c $two_cores (torch: every thread pinned inside its process)"
else
    log=''
fi
refresh_est
start_ms() { local t=${EPOCHREALTIME//[.,]/}; echo $(( t / 1000 )); }
t_start=$(start_ms)
elapsed_ms() { echo $(( $(start_ms) - t_start )); }

describe_plan() {
    local per_c=0 n_c=0 cpu c
    for cpu in $copies_cpus; do
        for c in $configs; do
            [ "$c" = kernel ] && ! in_list "$cpu" "$kernel_cpus" && continue
            n_c=$((n_c + 1)); per_c=$((per_c + est_ms[$c]))
        done
    done
    local kin=''
    in_list kernel "$configs" && kin="; kernel in: $(trim "$kernel_cpus")"
    note "# plan: $rounds rounds; configurations: $(trim "$configs")"
    in_list copies "$parts" && note "#   copies: ${#grid[@]} grid cells + extras, $reps reps after $warm warm-ups, CPU settings $(trim "$copies_cpus")$kin: $n_c processes a round (plain ${est_ms[plain]} ms, cubatch ${est_ms[cubatch]:-?} ms each): $((per_c / 1000)) s a round"
    if in_list torch "$parts"; then
        local nt
        nt=$(words "$torch_configs")
        note "#   torch: $nt processes a round in rounds 1..$torch_rounds ($(trim "$torch_configs")), CPU settings $(trim "$torch_cpus") inside, $titers iterations after $twarm: ${est_ms[torch]} ms each, $((nt * est_ms[torch] / 1000)) s a round; a first unmeasured PyTorch process checks and warms up (~$((prewarm_ms / 1000)) s)"
    fi
    in_list kv "$parts" && note "#   kv: kv_swap -s $kvsteps, unpinned, ${est_ms[kv]} ms a process"
    note "# estimate: $(( (prewarm_ms + $(remaining_ms 1) + margin_ms) / 1000 )) s for a budget of ${budget} s"
}
drop_to_fit 1 $(( budget * 1000 - prewarm_ms - margin_ms ))
describe_plan
[ $plan -eq 1 ] && exit 0

# --- running --------------------------------------------------------------------
failed=0
declare -A act_sum est_sum   # per part: measured and estimated ms so far
env_of() {   # CONFIG -> the array cfg_env
    cfg_env=()
    case $1 in
    cubatch) cfg_env=("LD_PRELOAD=$lib") ;;
    batch) cfg_env=("LD_PRELOAD=$lib" CUBATCH_ENGINE=batch) ;;
    kernel) cfg_env=("LD_PRELOAD=$lib" CUBATCH_ENGINE=kernel) ;;
    off) cfg_env=("LD_PRELOAD=$lib" CUBATCH_ENABLE=0) ;;
    esac
}
pin_of() {   # CPU setting -> the array pin
    pin=()
    case $1 in
    one) pin=(taskset -c "$one_core") ;;
    two) pin=(taskset -c "$two_cores") ;;
    esac
}
# run_proc PART CONFIG CPU PREFIX EST_MS CMD...: one process, its CSV lines tagged
# with PREFIX, its statistics kept, within the budget.
run_proc() {
    local part=$1 cfg=$2 cpu=$3 prefix=$4 est=$5; shift 5
    local need=$(( est * scale[$part] / 100 )) left=$(( budget * 1000 - $(elapsed_ms) - margin_ms ))
    if [ "$need" -gt "$left" ]; then
        note "SKIPPED (budget: ~${need} ms needed, ${left} ms left): round $round $part $cfg $cpu"
        return
    fi
    local js=$work/stats.json rc t0 dt
    rm -f "$js"
    env_of "$cfg"
    pin_of "$cpu"
    [ "$part" = torch ] && pin=()   # torch pins itself, thread by thread
    # a process that hangs may not eat the budget: five times its estimate, at
    # least 30 s, at most what the budget has left
    local limit=$(( need * 5 > 30000 ? need * 5 : 30000 ))
    [ $limit -gt $(( left + margin_ms / 2 )) ] && limit=$(( left + margin_ms / 2 ))
    t0=$(elapsed_ms)
    timeout -k 5 $(( (limit + 999) / 1000 )) \
        env "${cfg_env[@]}" CUBATCH_STATS=json CUBATCH_STATS_FILE="$js" "${pin[@]}" "$@" \
        >"$work/o" 2>"$work/e"
    rc=$?
    dt=$(( $(elapsed_ms) - t0 ))
    grep -v -e '^#' -e '^mode,' -e '^cpu,' "$work/o" | add_stream "$part" | sed "s/^/$prefix/" >>"$csv"
    { echo "## round $round $part $cfg $cpu: rc $rc, ${dt} ms (estimate ${need}), at $(( $(elapsed_ms) / 1000 )) s"
      [ "$round" -eq 1 ] && echo "# command: ${cfg_env[*]} ${pin[*]} $*"
      grep '^#' "$work/o"; cat "$work/e"; } >>"$log"
    if [ -s "$js" ]; then
        printf '{"config":"%s","cpu":"%s","part":"%s","round":%d,"rc":%d,"ms":%d,"stats":%s}\n' \
            "$cfg" "$cpu" "$part" "$round" "$rc" "$dt" "$(tr -d '\n' <"$js")" >>"$stats"
    fi
    if [ $rc -ne 0 ]; then
        note "FAILED: round $round $part $cfg $cpu (rc $rc): $(tail -3 "$work/e" | tr '\n' ' ')"
        failed=1
    fi
    act_sum[$part]=$(( ${act_sum[$part]:-0} + dt ))
    est_sum[$part]=$(( ${est_sum[$part]:-0} + est ))
}
# kv_swap's lines have no stream column: its stream is a created side stream
add_stream() {
    if [ "$1" = kv ]; then sed -E 's/^([^,]*),/\1,side,/'; else cat; fi
}
# order LIST K: LIST rotated by K, backwards when the round is even
order() {
    local -a a
    read -r -a a <<<"$1"
    local j n=${#a[@]} k=$2 res=()
    for ((j = 0; j < n; j++)); do res+=("${a[(j + k) % n]}"); done
    if [ $((round % 2)) -eq 0 ]; then
        for ((j = n - 1; j >= 0; j--)); do printf '%s ' "${res[j]}"; done
    else
        printf '%s ' "${res[@]}"
    fi
}
torch_cpu_args() {
    local c
    for c in $torch_cpus; do
        case $c in
        unpinned) printf '%s\n' --cpu unpinned=all ;;
        one) printf '%s\n' --cpu "one=$one_core" ;;
        two) printf '%s\n' --cpu "two=$two_cores" ;;
        esac
    done
}

if in_list torch "$parts"; then
    round=0
    t0=$(elapsed_ms)
    if timeout 120 "$python" "$here/torch_foreach.py" --check-only >"$work/o" 2>"$work/e"; then
        note "# torch check (plain, not timed): ok in $(( $(elapsed_ms) - t0 )) ms; $(grep '^# torch' "$work/o")"
    else
        note "DROPPED: the torch part (torch_foreach.py --check-only failed: $(tail -2 "$work/e" "$work/o" | tr '\n' ' '))"
        parts=$(for p in $parts; do [ "$p" = torch ] || printf '%s ' "$p"; done)
    fi
fi

for ((round = 1; round <= rounds; round++)); do
    if [ $round -gt 1 ]; then   # correct the estimate by what the parts really took
        for p in copies torch kv; do
            [ "${est_sum[$p]:-0}" -gt 0 ] && scale[$p]=$(( act_sum[$p] * 100 / est_sum[$p] ))
        done
        drop_to_fit "$round" $(( budget * 1000 - $(elapsed_ms) - margin_ms ))
        [ $round -le "$rounds" ] || break
        note "# round $round at $(( $(elapsed_ms) / 1000 )) s; measured/estimated: copies ${scale[copies]}%, torch ${scale[torch]}%; rest ~$(( $(remaining_ms "$round") / 1000 )) s"
    fi
    if in_list copies "$parts"; then
        k=0
        for cpu in $(order "$copies_cpus" $((round - 1))); do
            for cfg in $(order "$configs" $((round - 1 + 2 * k))); do
                [ "$cfg" = kernel ] && ! in_list "$cpu" "$kernel_cpus" && continue
                mapfile -t args < <(copies_args "$cfg")
                run_proc copies "$cfg" "$cpu" "$cfg,$round,copies,$cpu," "${est_ms[$cfg]}" \
                    "$bin/bench_copies" "${args[@]}"
            done
            k=$((k + 1))
        done
    fi
    if in_list torch "$parts" && [ -n "$torch_cpus" ] && [ $round -le "$torch_rounds" ]; then
        mapfile -t targs < <(torch_cpu_args)
        for cfg in $(order "$torch_configs" $((round - 1))); do
            run_proc torch "$cfg" - "$cfg,$round,torch," "${est_ms[torch]}" \
                "$python" "$here/torch_foreach.py" --iters "$titers" --warm "$twarm" \
                --rotate $((round - 1)) "${targs[@]}"
        done
    fi
    if in_list kv "$parts"; then
        for cfg in $(order "$configs" $((round - 1))); do
            run_proc kv "$cfg" unpinned "$cfg,$round,kv,unpinned," "${est_ms[kv]}" \
                "$bin/kv_swap" -s "$kvsteps"
        done
    fi
done

note "# done in $(( $(elapsed_ms) / 1000 )) s"
if ! "${PYTHON:-python3}" "$here/bench_report.py" "$csv" --stats "$stats" --log "$log" \
    >"$out/bench.md" 2>"$work/report.err"; then
    cat "$work/report.err" >>"$log"
    note "bench_report.py failed (CSV kept)"
fi
[ $failed -eq 0 ] || exit 1
exit 0
