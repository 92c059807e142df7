#!/bin/sh
# dl-threads.sh - what the preload costs a program without CUDA that uses
# dlopen/dlsym from many threads: bench/dl_threads.c, plain and under
# LD_PRELOAD=libcubatch.so, interleaved, CPU only (no GPU, no driver needed).
#
#   bench/dl-threads.sh [--lib PATH] [--rounds N] [--threads "1 4 8"] [--iterations N]
#                       [--modes "driver cuprefix plain open"]
#
# Builds dl_threads and one plugin per thread with cc in a temporary folder,
# then for every mode and thread count runs `plain`, `cubatch` (preloaded) and
# `plain2` (plain again: the A/A column) in rotated order, --rounds times
# (default 5), and prints a Markdown table of median seconds and the ratios
# cubatch/plain and plain2/plain.  Each thread makes --iterations rounds of
# lookups (default 20000), or a tenth as many loads in "open" mode.  --lib
# defaults to src/.libs/libcubatch.so under $top_builddir (or the current folder).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lib=${top_builddir:-.}/src/.libs/libcubatch.so
rounds=5 threads="1 4 8" iterations=20000 modes="driver cuprefix plain open"
while [ $# -gt 0 ]; do
    case $1 in
    --lib) lib=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
    esac
done
[ -f "$lib" ] || { echo "dl-threads.sh: $lib not found (build cubatch, or pass --lib)" >&2; exit 2; }
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
${CC:-cc} -O2 -o "$work/dl_threads" "$here/dl_threads.c" -ldl -lpthread
maxt=1
for t in $threads; do [ "$t" -gt "$maxt" ] && maxt=$t; done
i=0
while [ $i -lt "$maxt" ]; do
    ${CC:-cc} -O2 -shared -fPIC -o "$work/libdlplug$i.so" "$here/dl_plugin.c"
    i=$((i + 1))
done

# one run: prints seconds; the preloaded run's FOUND must be 0 (no CUDA here)
one() { # config mode threads
    n=$iterations
    [ "$2" = open ] && n=$((iterations / 10))
    if [ "$1" = cubatch ]; then
        out=$(LD_PRELOAD=$lib "$work/dl_threads" "$2" "$3" "$n" "$work")
    else
        out=$("$work/dl_threads" "$2" "$3" "$n" "$work")
    fi
    # shellcheck disable=SC2086  # the words of the line, on purpose
    set -- $out
    [ "$6" = 0 ] || echo "dl-threads.sh: warning: $2 found $6 driver functions in a process without CUDA" >&2
    echo "$5"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "library: $lib"
echo "machine: $(uname -m), $(getconf _NPROCESSORS_ONLN) CPUs, $(ldd --version 2>&1 | head -1)"
echo "iterations per thread: $iterations ($((iterations / 10)) loads in open mode), rounds: $rounds (median)"
echo
echo "| mode | threads | plain (s) | cubatch (s) | plain2 (s) | cubatch/plain | A/A |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for m in $modes; do
    for t in $threads; do
        : >"$work/plain"; : >"$work/cubatch"; : >"$work/plain2"
        r=0
        while [ $r -lt "$rounds" ]; do
            case $((r % 3)) in
            0) order="plain cubatch plain2" ;;
            1) order="cubatch plain2 plain" ;;
            *) order="plain2 plain cubatch" ;;
            esac
            for c in $order; do one "$c" "$m" "$t" >>"$work/$c"; done
            r=$((r + 1))
        done
        p=$(median <"$work/plain"); c=$(median <"$work/cubatch"); p2=$(median <"$work/plain2")
        awk -v m="$m" -v t="$t" -v p="$p" -v c="$c" -v q="$p2" \
            'BEGIN { printf "| %s | %s | %.4f | %.4f | %.4f | %.2f | %.2f |\n", m, t, p, c, q, c / p, q / p }'
    done
done
