#!/usr/bin/env bash
# Copies beside compute and with a pinned allocation per block (issue 24), on
# the GPU, in one command: bench/run-load.sh over the loads none, fill (a
# kernel filling every thread slot) and gemm (six cuBLAS SGEMMs), then
# bench/torch_load.py in one process (cubatch switched on and off between
# rounds), then lone copies (one copy and its synchronize, 201 times a process,
# idle GPU).
#
#   load-campaign.sh --bin DIR --lib PATH --out DIR [--rounds N] [--torch-rounds N]
#                    [--cells LIST] [--configs LIST] [--no-torch] [--no-lone]
#
# DIR receives load.csv, load.md, load-stats.jsonl (run-load.sh), torch.jsonl,
# lone.csv, lone.md and campaign.log.  Exit 77 without a GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin='' lib='' out='' rounds=7 trounds=9 torch=1 lone=1
cells=h2d-1024x4K,h2d-1024x4K-blk,h2d-256x4K,h2d-256x4K-blk,h2d-256x64K,h2d-256x64K-blk,h2d-1024x16K-blk,d2h-1024x4K,d2h-1024x4K-blk
configs="plain plain2 cubatch fixed batch off"
while [ $# -gt 0 ]; do
    case $1 in
    --bin|--lib|--out|--rounds|--torch-rounds|--cells|--configs)
        [ $# -ge 2 ] || { echo "load-campaign: $1 needs a value" >&2; exit 2; } ;;
    esac
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --torch-rounds) trounds=$2; shift 2 ;;
    --cells) cells=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --no-torch) torch=0; shift ;;
    --no-lone) lone=0; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "load-campaign: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$bin" ] && [ -n "$lib" ] && [ -n "$out" ] || { echo "usage: load-campaign.sh --bin DIR --lib PATH --out DIR" >&2; exit 2; }
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || { echo "load-campaign: no GPU" >&2; exit 77; }
mkdir -p "$out"
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
exec > >(tee -a "$out/campaign.log") 2>&1
echo "# load campaign $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rc=0
start=$SECONDS
"$here/run-load.sh" --bin "$bin" --lib "$lib" --out "$out" --rounds "$rounds" --configs "$configs" \
    --loads none,fill,gemm --cells "$cells" || rc=1
echo "# load bench: $((SECONDS - start)) s"
if [ "$lone" = 1 ]; then
    "$here/run-load.sh" --bin "$bin" --lib "$lib" --out "$out/lone" --rounds "$rounds" --reps 201 \
        --configs "plain plain2 cubatch off" --loads none --cells h2d-1x4K,d2d-1x4K || rc=1
    mv "$out/lone/load.csv" "$out/lone.csv"
    mv "$out/lone/load.md" "$out/lone.md"
    rm -rf "$out/lone"
    echo "# lone copies: $((SECONDS - start)) s"
fi
if [ "$torch" = 1 ]; then
    LD_PRELOAD=$lib PYTHONUNBUFFERED=1 taskset -c 3 python3 "$here/torch_load.py" --rounds "$trounds" --json \
        >"$out/torch.jsonl" || rc=1
    cat "$out/torch.jsonl"
    echo "# torch: $((SECONDS - start)) s"
fi
exit $rc
