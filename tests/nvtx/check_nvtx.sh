#!/bin/sh
# NVTX ranges and markers (src/nvtx.c), without Nsight: tests/libnvtxrec.so is
# the injected tool (NVTX_INJECTION64_PATH) and records what it is handed.  The
# demo runs under the preload against the simulated driver, with each engine:
#   - one range per submission, pushed and popped on the submitting thread, as
#     many as the report's flushes (the flush_* counters), each text
#     "cubatch: N copies DIRS SIZE, ENGINE (flush_REASON)";
#   - the exact ranges of the demo's first runs (chunks of 32 and 128, then the
#     rest when the program's call named the stream), for kernel, batch and loop;
#   - a marker before each range whose run a call ended (not chunks, not the
#     timer: the reasons whose row in src/stats.def has CB_FD_MARK), naming the
#     reason; none without a tool, none with CUBATCH_ENABLE=0.
b=${top_builddir:-.}
s=${top_srcdir:-.}
L=$(cd "$b" && pwd)/src/.libs/libcubatch.so
INJ=$(cd "$b" && pwd)/tests/.libs/libnvtxrec.so
fail=0
ok() { echo "check_nvtx: ok: $1"; }
bad() { echo "check_nvtx: FAILED: $1"; fail=1; }
if [ ! -f "$INJ" ]; then
    echo "check_nvtx: built without NVTX (no nvtx3 headers, or --disable-nvtx): skipped"
    exit 77
fi
command -v python3 >/dev/null 2>&1 || { echo "check_nvtx: no python3: skipped"; exit 77; }
d=$b/nvtx-test.tmp
rm -rf "$d" && mkdir -p "$d" || exit 99

run() { # NAME, then settings; the record in $d/NAME.nvtx, the report in $d/NAME.json
    name=$1
    shift
    env LD_LIBRARY_PATH="$b/tests/sim/.libs" LD_PRELOAD="$L" CUBATCH_STATS=json CUBATCH_STATS_FILE="$d/$name.json" \
        CUBATCH_FLUSH_US=1000000 CUBATCH_SLOW_NS=1000000000 NVTXREC_FILE="$d/$name.nvtx" "$@" \
        "$b/examples/demo" >"$d/$name.out" 2>&1 || bad "$name: the demo failed: $(cat "$d/$name.out")"
}

# the record against the report: balance, count, texts, markers
verify() { # NAME ENGINE
    python3 - "$d/$1.nvtx" "$d/$1.json" "$2" "$s/src/stats.def" <<'PY'
import json, re, sys
rec, rep, engine, table = sys.argv[1:5]
lines = open(rec).read().splitlines()
# the reasons a marker announces: the table's word, not a list of this test's
rows = re.findall(r'^CB_FLUSH\((flush_[a-z]+), *([A-Z0-9_ |]*),', open(table).read(), re.M)
marked = {name for name, does in rows if "CB_FD_MARK" in does}
if len(rows) < 2 or not marked:
    sys.exit("check_nvtx: FAILED: no CB_FLUSH rows with CB_FD_MARK in %s" % table)
counters = json.load(open(rep))["counters"]
flushes = sum(v for k, v in counters.items() if k.startswith("flush_"))
text = re.compile(r"^cubatch: (\d+) cop(y|ies) ((H2D|D2H|D2D|H2H|any)(\+(H2D|D2H|D2D|H2H|any))*) "
                  r"\d+(\.\d)? (B|KiB|MiB|GiB)(?P<merged> merged into \d+)?, (?P<engine>kernel|batch|loop|batch\+loop) "
                  r"\((?P<why>flush_[a-z]+)\)$")
open_, ranges, marks, errors, last_mark = {}, [], 0, [], {}
for ln in lines:
    kind, tid, msg = (ln.split(" ", 2) + [""])[:3]
    if kind == "push":
        if tid in open_:
            errors.append("nested range on thread %s: %s" % (tid, msg))
        open_[tid] = msg
        m = text.match(msg)
        if not m:
            errors.append("range text: %r" % msg)
            continue
        ranges.append(msg)
        if m.group("merged") and m.group("engine") == "kernel":
            errors.append("the copy kernel takes copies unmerged: %r" % msg)
        elif m.group("engine") != engine and engine != "any" and not m.group("merged"):
            errors.append("engine %s, expected %s: %r" % (m.group("engine"), engine, msg))
        why = m.group("why")
        call = why in marked
        if call != (last_mark.get(tid) == why):
            errors.append("marker for %r: %r" % (msg, last_mark.get(tid)))
        last_mark[tid] = None
    elif kind == "pop":
        if tid not in open_:
            errors.append("pop without a range on thread %s" % tid)
        open_.pop(tid, None)
    elif kind == "mark":
        marks += 1
        m = re.match(r"^cubatch: run ended: .+ \((flush_[a-z]+)\)$", msg)
        if not m:
            errors.append("marker text: %r" % msg)
        else:
            last_mark[tid] = m.group(1)
    else:
        errors.append("record line: %r" % ln)
if open_:
    errors.append("ranges never popped: %s" % open_)
if len(ranges) != flushes:
    errors.append("%d ranges, the report counts %d flushes" % (len(ranges), flushes))
for e in errors:
    print("check_nvtx: FAILED: %s" % e)
if not errors:
    print("check_nvtx: ok: %s: %d ranges (= the report's flushes), balanced per thread, texts well formed, "
          "%d markers, each before the range of a run a call ended" % (engine, len(ranges), marks))
sys.exit(1 if errors else 0)
PY
}
want() { # NAME LINE...: each LINE (without the thread id) is in the record
    name=$1
    shift
    sed 's/^\([a-z]*\) [0-9]* /\1 /' "$d/$name.nvtx" >"$d/$name.plain"
    for line in "$@"; do
        grep -qxF "$line" "$d/$name.plain" || { bad "$name: no '$line' in: $(cat "$d/$name.plain")"; return; }
    done
    ok "$name: the first ranges and marker"
}

run kernel NVTX_INJECTION64_PATH="$INJ"
verify kernel kernel || fail=1
want kernel 'push cubatch: 32 copies H2D 128.0 KiB, kernel (flush_full)' \
    'push cubatch: 128 copies H2D 512.0 KiB, kernel (flush_full)' \
    'mark cubatch: run ended: the next copy overlaps a queued one (flush_hazard)' \
    'push cubatch: 256 copies H2D+D2H 1.0 MiB, kernel (flush_hazard)'

# each engine by itself: merging (rule 18) would send the demo's adjacent
# copies as one, through the loop
run batch NVTX_INJECTION64_PATH="$INJ" CUBATCH_ENGINE=batch CUBATCH_MERGE_ADJACENT=0
verify batch batch || fail=1
want batch 'push cubatch: 32 copies H2D 128.0 KiB, batch (flush_full)'

run merged NVTX_INJECTION64_PATH="$INJ" CUBATCH_ENGINE=batch
verify merged any || fail=1
if grep -q '^push [0-9]* cubatch: [0-9]* copies [A-Z2+]* [0-9.]* [KM]*i*B merged into [0-9]*, loop' "$d/merged.nvtx"; then
    ok "merged: a range says what its copies were merged into"
else
    bad "merged: no range of merged copies in: $(head -5 "$d/merged.nvtx")"
fi

run loop NVTX_INJECTION64_PATH="$INJ" CUBATCH_ENGINE=batch CUBATCH_MIN_RUN=32768 CUBATCH_MERGE_ADJACENT=0
verify loop loop || fail=1
want loop 'push cubatch: 32 copies H2D 128.0 KiB, loop (flush_full)'

# 2D copies (rule 19): a range counts every row of its tiles (32 tiles of 8
# rows x 192 B, the first passing as its burst's first)
if [ ! -x "$b/tests/probe" ]; then
    bad "tiles: no $b/tests/probe (make check builds it)"
else
    env LD_LIBRARY_PATH="$b/tests/sim/.libs" LD_PRELOAD="$L" CUBATCH_FLUSH_US=1000000 \
        NVTX_INJECTION64_PATH="$INJ" NVTXREC_FILE="$d/tiles.nvtx" "$b/tests/probe" tiles_h2d >"$d/tiles.out" 2>&1 ||
        bad "tiles: the probe failed: $(cat "$d/tiles.out")"
    want tiles 'push cubatch: 31 copies any 46.5 KiB, kernel (flush_stream)'
fi

run notool
[ ! -e "$d/notool.nvtx" ] && ok "no tool attached: nothing recorded" || bad "without a tool: $(cat "$d/notool.nvtx")"
run off NVTX_INJECTION64_PATH="$INJ" CUBATCH_ENABLE=0
if [ ! -s "$d/off.nvtx" ]; then ok "CUBATCH_ENABLE=0: no range"; else bad "CUBATCH_ENABLE=0: $(cat "$d/off.nvtx")"; fi

[ $fail -eq 0 ] && rm -rf "$d"
exit $fail
