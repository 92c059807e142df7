#!/usr/bin/env bash
# pages.sh - the pages of cubatch's own code and data that a lone copy and its
# synchronize touch (docs/design.md section 8), counted under valgrind against
# the simulated driver: inproc_lone --only on (and off), run twice, with 50
# and 150 lone copies a round (2 rounds).  What a lone copy touches is what
# the second run touched at least once more per extra copy than the first
# (initialisation is the same in both).  Code: the library's instructions
# executed (callgrind --dump-instr); data: the addresses its instructions read
# or wrote (lackey), the stack left out.  Per library and configuration, one
# table row: code pages and 64-byte lines, data pages and lines.
#
#   pages.sh BIN SIMDIR LIB [LIB2 ...]
# BIN holds inproc_lone (bench/build-bench.sh); SIMDIR the simulated driver
# (tests/sim/.libs).  Needs valgrind and a C compiler.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 BIN SIMDIR LIB [LIB2 ...]" >&2; exit 2; }
bin=$(cd "$1" && pwd) sim=$(cd "$2" && pwd)
shift 2
command -v valgrind >/dev/null || { echo "pages: valgrind not found" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the library's mappings, printed at exit (lackey's addresses are the process's)
printf '%s\n' '#include <stdio.h>' \
    '__attribute__((destructor)) static void dump(void) { FILE *f = fopen("/proc/self/maps", "r"); char l[512];' \
    '    while (f && fgets(l, sizeof l, f)) fprintf(stderr, "MAPS %s", l); }' >"$tmp/maps.c"
${CC:-cc} -shared -fPIC -O2 -o "$tmp/maps.so" "$tmp/maps.c"
echo "| library | config | code pages | code lines | data pages | data lines |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for lib in "$@"; do
    lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
    for conf in on off; do
        for n in 50 150; do
            env LD_LIBRARY_PATH="$sim" valgrind --tool=callgrind --dump-instr=yes --compress-pos=no \
                --callgrind-out-file="$tmp/cg$n" "$bin/inproc_lone" --lib "$lib" --only $conf --n $n --rounds 2 >/dev/null 2>&1
            env LD_LIBRARY_PATH="$sim" LD_PRELOAD="$tmp/maps.so" valgrind --tool=lackey --trace-mem=yes \
                --log-file="$tmp/lk$n" "$bin/inproc_lone" --lib "$lib" --only $conf --n $n --rounds 2 >/dev/null 2>"$tmp/maps$n"
        done
        python3 - "$tmp" "$lib" 200 "$(basename "$lib") $(sha256sum "$lib" | cut -c1-12)" "$conf" <<'PY'
import re, sys
tmp, lib, extra, label, conf = sys.argv[1:6]
extra = int(extra)  # lone copies the second run made more than the first
def counts(n):
    cg, lk, maps = "%s/cg%d" % (tmp, n), "%s/lk%d" % (tmp, n), "%s/maps%d" % (tmp, n)
    # code: callgrind's per-instruction costs of the library's object
    names, ob, addr, cost, in_call = {}, "", 0, {}, False
    def name(v):
        m = re.match(r"\((\d+)\)(?: (.*))?", v)
        if not m:
            return v
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "")
    for line in open(cg):
        line = line.rstrip("\n")
        if line.startswith("ob="):
            ob = name(line[3:]); continue
        if line.startswith("cob="):
            name(line[4:]); continue
        if line.startswith("calls="):
            in_call = True; continue
        if not line.startswith("0x"):
            continue
        parts = line.split()
        addr = int(parts[0], 16)
        if in_call:
            in_call = False; continue
        if ob == lib:
            cost[addr] = cost.get(addr, 0) + int(parts[-1])
    # data: lackey's loads and stores made by the library's code, the stack left out
    code, stack = [], None
    for l in open(maps):
        f = l.split()
        if len(f) >= 6 and f[0] == "MAPS":
            lo, hi = (int(x, 16) for x in f[1].split("-"))
            if f[-1] == lib and "x" in f[2]:
                code.append((lo, hi))
            if f[-1] == "[stack]":
                stack = (lo, hi)
    pages, lines, mine = {}, {}, False
    for l in open(lk):
        if l.startswith("I"):
            a = int(l.split()[1].split(",")[0], 16)
            mine = any(lo <= a < hi for lo, hi in code); continue
        if not mine or not l.startswith(" "):
            continue
        a = int(l.split()[1].split(",")[0], 16)
        if stack and stack[0] - (1 << 20) <= a < stack[1]:
            continue
        pages[a >> 12] = pages.get(a >> 12, 0) + 1
        lines[a >> 6] = lines.get(a >> 6, 0) + 1
    return cost, pages, lines

def more(a, b):  # what b touched at least once per extra copy more than a
    return {k for k, c in b.items() if c - a.get(k, 0) >= extra}

c1, p1, l1 = counts(50)
c3, p3, l3 = counts(150)
hot = more(c1, c3)
print("| %s | %s | %d | %d | %d | %d |" % (label, conf, len({a >> 12 for a in hot}), len({a >> 6 for a in hot}),
                                         len(more(p1, p3)), len(more(l1, l3))))
PY
    done
done
