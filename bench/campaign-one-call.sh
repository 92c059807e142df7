#!/usr/bin/env bash
# campaign-one-call.sh - issue 43's GPU proof in one device call of at most
# about 9 minutes, for a session whose device time allows one machine start:
# each step's results are packed as soon as it ends (OUT/stepN.tgz: a step the
# call's time limit cuts off still leaves the ones before it).
#
#   campaign-one-call.sh --bin DIR --gpu DIR --lib PATH --base PATH --prev PATH --out DIR
#                        [--rows-budget S] [--c43-budget S]
#
#   --lib   the library to prove; --base the one it is compared with side by
#           side on the contiguous/scattered cells (step 2); --prev the one
#           the copy grid is compared with (campaign-rows.sh, campaign-43.sh)
#   --bin, --gpu as campaign-rows.sh
# Steps:
#   1. launch_hook, side and legacy stream, three times each, lib and base
#      alternately (the hook's cost per launch in one process)
#   2. run-contig.sh base/lib/lib2/plain, 7 rounds
#   3. campaign-rows.sh (tiles' bytes, rule scenarios, GPU suite, tiles and
#      the copy grid, the chunks of a contiguous run), --budget rows-budget
#      (default 150)
#   4. campaign-43.sh --parts kv,launch,train,kvswap, --budget c43-budget
#      (default 170)
# Exit: 0 every step passed, 1 a step failed, 2 usage.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin='' gpu='' lib='' base='' prev='' out='' rows_budget=150 c43_budget=170
while [ $# -gt 0 ]; do
    case $1 in
    --bin|--gpu|--lib|--base|--prev|--out|--rows-budget|--c43-budget)
        [ $# -ge 2 ] || { echo "campaign-one-call: $1 needs a value" >&2; exit 2; } ;;
    esac
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --gpu) gpu=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --prev) prev=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rows-budget) rows_budget=$2; shift 2 ;;
    --c43-budget) c43_budget=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "campaign-one-call: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ -z "$bin" ] || [ -z "$gpu" ] || [ -z "$lib" ] || [ -z "$base" ] || [ -z "$prev" ] || [ -z "$out" ]; then
    echo "usage: campaign-one-call.sh --bin DIR --gpu DIR --lib PATH --base PATH --prev PATH --out DIR" >&2
    exit 2
fi
abs() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
lib=$(abs "$lib") base=$(abs "$base") prev=$(abs "$prev")
mkdir -p "$out"
rc=0
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
pack() { (cd "$out" && tar czf "$1.tgz" "$1" && rm -rf "$1"); }
sha256sum "$lib" "$base" "$prev"

stamp "1. launch_hook"
mkdir -p "$out/step1"
for s in side legacy side legacy side legacy; do
    for which in lib base; do
        [ "$which" = lib ] && l=$lib || l=$base
        echo "## $which $s"
        LD_PRELOAD="$l" taskset -c 3 "$bin/launch_hook" -r 15 -n 4096 -s "$s" || { echo "launch_hook ($which $s) exit $?"; rc=1; }
    done
done >"$out/step1/hook.txt" 2>&1
cat "$out/step1/hook.txt"
pack step1

stamp "2. run-contig"
bash "$here/run-contig.sh" --bin "$bin" --out "$out/step2" --rounds 7 base="$base" lib="$lib" lib2="$lib" plain= ||
    { echo "run-contig exit $?"; rc=1; }
pack step2

stamp "3. campaign-rows"
bash "$here/campaign-rows.sh" --bin "$bin" --gpu "$gpu" --lib "$lib" --prev "$prev" --out "$out/step3" \
    --budget "$rows_budget" --rounds 7 >"$out/step3.log" 2>&1 || { echo "campaign-rows exit $?"; rc=1; }
mv "$out/step3.log" "$out/step3/"
tail -70 "$out/step3/step3.log"
pack step3

stamp "4. campaign-43 kv,launch,train,kvswap"
timeout $((c43_budget + 60)) bash "$here/campaign-43.sh" --bin "$bin" --lib "$lib" --prev "$prev" --out "$out/step4" \
    --parts kv,launch,train,kvswap --rounds 7 --budget "$c43_budget" >"$out/step4.log" 2>&1 ||
    { echo "campaign-43 exit $?"; rc=1; }
mv "$out/step4.log" "$out/step4/" 2>/dev/null
sed -n '/^## /,$p' "$out/step4/summary.md" 2>/dev/null | head -60
pack step4
stamp "done, exit $rc"
exit $rc
