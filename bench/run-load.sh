#!/usr/bin/env bash
# Copies beside compute (rule 12), on the GPU: bench/load_bench under each
# configuration, one process per round and configuration, configurations
# rotated every round, pinned to one core.
#
#   run-load.sh --bin DIR --lib PATH --out DIR [--rounds N] [--reps N] [--cpu N]
#               [--configs LIST] [--loads LIST] [--cells LIST]
#
# Configurations: plain (no preload), plain2 (no preload again: the A/A
# column), cubatch (defaults), batch (CUBATCH_ENGINE=batch), kernel
# (CUBATCH_ENGINE=kernel), prev (defaults, the library $CB_PREV_LIB names: an
# A/B of two libraries in one run), fixed (CUBATCH_MEASURE=0: the fixed rules instead
# of the measured choice), prevfixed (fixed under $CB_PREV_LIB), overlap (CUBATCH_ENGINE=batch CUBATCH_OVERLAP=1),
# off (preloaded, CUBATCH_ENABLE=0), overlap-rec and plain-rec (overlap and
# plain with a timing event recorded every 32 copies: load_bench --record-every).  Writes DIR/load.csv (config,round,load,cell,copy_us,
# compute_us,ok), DIR/load.md (bench/load_report.py) and DIR/load-stats.jsonl
# (cubatch's JSON report of every preloaded process).  Exit 77 without a GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin='' lib='' out='' rounds=7 reps=5 cpu=3 configs="plain plain2 cubatch batch kernel" loads='' cells=''
while [ $# -gt 0 ]; do
    case $1 in
    --bin|--lib|--out|--rounds|--reps|--cpu|--configs|--loads|--cells)
        [ $# -ge 2 ] || { echo "run-load: $1 needs a value" >&2; exit 2; } ;;
    esac
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --configs) configs=${2//,/ }; shift 2 ;;
    --loads) loads=$2; shift 2 ;;
    --cells) cells=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "run-load: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$bin" ] && [ -n "$lib" ] && [ -n "$out" ] || { echo "usage: run-load.sh --bin DIR --lib PATH --out DIR" >&2; exit 2; }
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || { echo "run-load: no GPU" >&2; exit 77; }
mkdir -p "$out"
csv=$out/load.csv
echo "config,round,load,cell,copy_us,compute_us,ok" >"$csv"
: >"$out/load-stats.jsonl"
args=(--reps "$reps")
[ -n "$loads" ] && args+=(--loads "$loads")
[ -n "$cells" ] && args+=(--cells "$cells")
read -r -a cfgs <<<"$configs"
for ((r = 1; r <= rounds; r++)); do
    n=${#cfgs[@]}
    for ((k = 0; k < n; k++)); do
        c=${cfgs[$(((k + r) % n))]}
        env=() extra=()
        case $c in
        plain|plain2) ;;
        cubatch) env=(LD_PRELOAD="$lib") ;;
        prev) env=(LD_PRELOAD="${CB_PREV_LIB:?prev: set CB_PREV_LIB to the other library}") ;;
        batch) env=(LD_PRELOAD="$lib" CUBATCH_ENGINE=batch) ;;
        kernel) env=(LD_PRELOAD="$lib" CUBATCH_ENGINE=kernel) ;;
        fixed) env=(LD_PRELOAD="$lib" CUBATCH_MEASURE=0) ;;
        prevfixed) env=(LD_PRELOAD="${CB_PREV_LIB:?prevfixed: set CB_PREV_LIB to the other library}" CUBATCH_MEASURE=0) ;;
        overlap) env=(LD_PRELOAD="$lib" CUBATCH_ENGINE=batch CUBATCH_OVERLAP=1) ;;
        off) env=(LD_PRELOAD="$lib" CUBATCH_ENABLE=0) ;;
        overlap-rec) env=(LD_PRELOAD="$lib" CUBATCH_ENGINE=batch CUBATCH_OVERLAP=1) extra=(--record-every 32) ;;
        plain-rec) extra=(--record-every 32) ;;
        *) echo "run-load: unknown configuration $c" >&2; exit 2 ;;
        esac
        stats=$out/stats.$c.$r.json
        [ ${#env[@]} -gt 0 ] && env+=(CUBATCH_STATS=json CUBATCH_STATS_FILE="$stats")
        if ! lines=$(env "${env[@]}" taskset -c "$cpu" "$bin/load_bench" "${args[@]}" "${extra[@]}"); then
            echo "run-load: load_bench failed under $c (round $r)" >&2
            exit 1
        fi
        sed -e 's/load=\([^ ]*\) cell=\([^ ]*\) copy_us=\([^ ]*\) compute_us=\([^ ]*\) ok=\([^ ]*\)/\1,\2,\3,\4,\5/' \
            -e "s/^/$c,$r,/" <<<"$lines" >>"$csv"
        if [ -f "$stats" ]; then
            printf '{"config":"%s","round":%d,"report":%s}\n' "$c" "$r" "$(cat "$stats")" >>"$out/load-stats.jsonl"
            rm -f "$stats"
        fi
    done
done
python3 "$here/load_report.py" "$csv" >"$out/load.md"
cat "$out/load.md"
