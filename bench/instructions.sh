#!/usr/bin/env bash
# instructions.sh - cubatch's own instructions per call, counted by callgrind
# against the simulated driver (no GPU needed; instructions do not depend on a
# shared machine's load the way times do).  For each case, the sum of the self
# cost of every function in the library's object, divided by the calls the
# case makes, and after a slash the same with what libc and ld.so did for the
# library (own() below):
#   deferred   copy_path --n 1000 --rounds 5 (7,000 copies joining one open run;
#              CUBATCH_PIPELINE=0 CUBATCH_ENGINE=batch CUBATCH_MAX_BATCH=100000)
#   policy     the same copies passing by the policy (CUBATCH_POLICY=d2h:0-max)
#   lone       inproc_lone --only on: a lone copy and its synchronize, 8,000 of
#              them (--n 2000 --rounds 3), on a created stream
#   lone-leg   the same on the legacy stream (the copy kernel's engine)
#   record     bench_copies events1 h2d 1024 x 4 KiB (-r 3 -w 1): a copy and a
#              record of its own event, 5,120 of each, per pair
#   tile       tiles_path --rounds 5: 256 tiles of 32 rows x 256 B of one
#              pitched region, host to device, a round's loop and its
#              synchronize (the submissions included), per tile
#   launch     launch_hook -r 5 -n 1000 (BENCH_SIM=1): a kernel launch through
#              cubatch's cuLaunchKernel with nothing queued, 7,000 of them (the
#              driver's own launches beside them cost cubatch nothing)
#
#   instructions.sh BIN SIMDIR LIB [LIB2 ...]
# BIN holds copy_path, inproc_lone, bench_copies, tiles_path and launch_hook (bench/build-bench.sh);
# SIMDIR the simulated driver (tests/sim/.libs).  Prints one table row per
# library.  Needs valgrind.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 BIN SIMDIR LIB [LIB2 ...]" >&2; exit 2; }
bin=$(cd "$1" && pwd) sim=$(cd "$2" && pwd)
shift 2
command -v valgrind >/dev/null || { echo "instructions: valgrind not found" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# own LIB OUT CALLS: the library's self cost in callgrind output OUT, per call;
# then, after a slash, the same plus what the C library and the dynamic loader
# did for it (its locks, clock reads, allocations: the inclusive cost of every
# call from a function of the library into libc or ld.so), read from the raw
# callgrind file (its compressed names: "ob=(3) path" once, then "ob=(3)").
own()
{
    python3 - "$1" "$2" "$3" <<'PY'
import re, sys
lib, path, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = {}
def name(kind, v):
    m = re.match(r"\((\d+)\)(?: (.*))?", v)
    if not m:
        return v
    if m.group(2) is not None:
        names[(kind, m.group(1))] = m.group(2)
    return names.get((kind, m.group(1)), "")
ob = cob = ""
self_ = helped = 0
pending_call = False
for line in open(path):
    line = line.rstrip("\n")
    if line.startswith("ob="):
        ob = name("ob", line[3:]); cob = ob
    elif line.startswith("cob="):
        cob = name("ob", line[4:])
    elif line.startswith("fl=") or line.startswith("fi=") or line.startswith("fe=") or line.startswith("fn="):
        cob = ob
    elif line.startswith("calls="):
        pending_call = True
    elif line[:1].isdigit() or line[:1] in "+-*":
        parts = line.split()
        cost = int(parts[1]) if len(parts) > 1 else 0
        mine = ob.endswith("/" + lib) or ob == lib
        if pending_call:
            if mine and re.search(r"(libc\.so|ld-linux)", cob):
                helped += cost
            pending_call = False
            cob = ob
        elif mine:
            self_ += cost
print("%.0f / %.0f" % (self_ / calls, (self_ + helped) / calls), end="")
PY
}

echo "| library | deferred | policy | lone | lone-leg | record | tile | launch |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for lib in "$@"; do
    lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
    cg=(valgrind --tool=callgrind)
    row="| $(basename "$lib") $(sha256sum "$lib" | cut -c1-12)"
    base=$(basename "$lib")
    env LD_LIBRARY_PATH="$sim" LD_PRELOAD="$lib" CUBATCH_PIPELINE=0 CUBATCH_ENGINE=batch CUBATCH_MAX_BATCH=100000 \
        "${cg[@]}" --callgrind-out-file="$tmp/d" "$bin/copy_path" --n 1000 --rounds 5 >/dev/null 2>&1
    row+=" | $(own "$base" "$tmp/d" 7000)"
    env LD_LIBRARY_PATH="$sim" LD_PRELOAD="$lib" CUBATCH_POLICY=d2h:0-max \
        "${cg[@]}" --callgrind-out-file="$tmp/p" "$bin/copy_path" --n 1000 --rounds 5 >/dev/null 2>&1
    row+=" | $(own "$base" "$tmp/p" 7000)"
    env LD_LIBRARY_PATH="$sim" "${cg[@]}" --callgrind-out-file="$tmp/l" \
        "$bin/inproc_lone" --lib "$lib" --only on --n 2000 --rounds 3 >/dev/null 2>&1
    row+=" | $(own "$base" "$tmp/l" 8000)"
    env LD_LIBRARY_PATH="$sim" "${cg[@]}" --callgrind-out-file="$tmp/g" \
        "$bin/inproc_lone" --lib "$lib" --only on --stream legacy --n 2000 --rounds 3 >/dev/null 2>&1
    row+=" | $(own "$base" "$tmp/g" 8000)"
    env LD_LIBRARY_PATH="$sim" LD_PRELOAD="$lib" BENCH_SIM=1 \
        "${cg[@]}" --callgrind-out-file="$tmp/r" "$bin/bench_copies" -r 3 -w 1 -m events1 h2d:1024:4K >/dev/null 2>&1
    row+=" | $(own "$base" "$tmp/r" 5120)"
    env LD_LIBRARY_PATH="$sim" LD_PRELOAD="$lib" \
        "${cg[@]}" --callgrind-out-file="$tmp/t" "$bin/tiles_path" --rounds 5 >/dev/null 2>&1
    row+=" | $(own "$base" "$tmp/t" 1280)"
    env LD_LIBRARY_PATH="$sim" LD_PRELOAD="$lib" BENCH_SIM=1 \
        "${cg[@]}" --callgrind-out-file="$tmp/k" "$bin/launch_hook" -r 5 -n 1000 >/dev/null 2>&1
    row+=" | $(own "$base" "$tmp/k" 7000)"
    echo "$row |"
done
