#!/bin/sh
# check_flush_table.sh - the table-driven flush test.  For every row of
# src/hooks.def that is not a copy or a resolver, tests/flushcall queues copies
# on five streams (S, N, B, P, O: see tests/table/flushcall.c), calls the row's wrapper
# once with its stream arguments set to S ("named") and once to NULL ("null"),
# and the simulated driver's call log shows which runs were submitted before the
# call reached the driver; and a third time ("legacy") with runs only on N and on
# the legacy stream (L, executed by the copy kernel) and the stream arguments set
# to S, a blocking stream, whose work follows the legacy stream's.  The scope
# observed for each row must equal the one recorded in tests/table/flush-table.expected:
#   named=S      only the stream the call names (STREAM rows)
#   null=SBPO    a legacy-stream call: every blocking stream, per-thread ones too
#   null=P       NULL through a _ptsz entry: the caller's per-thread stream
#   SNBPO        a context-wide call (CONTEXT, FREE, DESTROY_CTX, PRIMARY_CTX)
#   legacy=L     a call on a blocking stream: the legacy run goes first
#   legacy=NL    a context-wide call
# Every CUevent argument names an event whose record is queued in B's run (N's in
# mode legacy): a call observing it submits B first (N).  An event record the
# driver never saw during the call joined a run as a marker: "+queued" (the
# scope then is every run submitted during the call).
# A row deleted from hooks.def, or an action changed, changes what is observed:
# the test fails and prints the difference.  After a deliberate change to the
# table, review the difference and record it: check_flush_table.sh --update.
set -eu
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
expected="$top_srcdir/tests/table/flush-table.expected"
flushcall="$top_builddir/tests/flushcall"
lib="$top_builddir/src/.libs/libcubatch.so"
clock="$top_builddir/tests/.libs/libfakeclock.so"
simdir="$top_builddir/tests/sim/.libs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The scope of one call: letters of the runs whose batch came before it.  The
# simulated driver acts as the newest one it can (CUSIM_DRIVER_VERSION), so that
# the rows of functions newer than 13.0 reach it too (rule 17).  Each run is
# known by its number of copies, so none is merged (rule 18).
observe() { # name mode
    log="$tmp/$1.$2.log"
    env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$simdir" LD_PRELOAD="$lib $clock" CUSIM_LOG="$log" CUSIM_DRIVER_VERSION=13060 CUBATCH_PIPELINE=0 CUBATCH_MERGE_ADJACENT=0 \
        ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1 \
        TSAN_OPTIONS=halt_on_error=1:report_signal_unsafe=0 \
        "$flushcall" "$1" "$2" >"$tmp/$1.$2.out" 2>&1 || { echo "$1 $2 FAILED-TO-RUN"; return; }
    ms=$(sed -n 's/^marker_stream=//p' "$tmp/$1.$2.out")
    awk -v name="$1" -v mode="$2" -v ms="$ms" '
        $1 == "cuDeviceGetCount" { marks++; next }
        marks == 1 { line[++n] = $0; if ($1 == name && index($0, " stream=" ms " ") == 0) last = n }
        END {
            scope = ""
            split("- - S N B P O L", letter, " ")
            queued = !last && name ~ /^cuEventRecord/
            if (queued) last = n + 1
            for (i = 1; i < last; i++) {
                if (line[i] !~ /^(cuMemcpyBatchAsync_v2|cuLaunchKernel) rc=0 /) continue
                if (match(line[i], / count=[0-9]+/)) {
                    c = substr(line[i], RSTART + 7, RLENGTH - 7) + 0
                    if (c >= 2 && c <= 7) seen[c] = 1
                }
            }
            for (c = 2; c <= 7; c++) if (seen[c]) scope = scope letter[c + 1]
            if (!last) scope = "CALL-NOT-SEEN"
            print mode "=" (scope == "" ? "-" : scope) (queued ? "+queued" : "")
        }' "$log"
}

if [ "${1:-}" = --one ]; then # internal: one row, both modes, one line
    printf '%s %s %s %s\n' "$2" "$(observe "$2" named)" "$(observe "$2" null)" "$(observe "$2" legacy)"
    exit 0
fi

"$flushcall" --list >"$tmp/rows"
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
awk '{ print $1 }' "$tmp/rows" |
    TMPDIR="$tmp" xargs -n 1 -P "$jobs" sh "$0" --one | sort >"$tmp/observed"

if [ "${1:-}" = --update ]; then
    {
        echo "# Which runs each intercepted call submits before it reaches the driver"
        echo "# (tests/table/check_flush_table.sh; regenerate with --update after reviewing a change)."
        cat "$tmp/observed"
    } >"$expected"
    echo "check_flush_table: wrote $(wc -l <"$tmp/observed") rows to $expected"
    exit 0
fi

grep -v '^#' "$expected" >"$tmp/expected"
if ! diff -u "$tmp/expected" "$tmp/observed" >"$tmp/diff"; then
    echo "check_flush_table: what the wrappers flush differs from tests/table/flush-table.expected" >&2
    echo "(- expected, + observed; a row missing from the observed side is no longer intercepted)" >&2
    cat "$tmp/diff" >&2
    exit 1
fi
echo "check_flush_table: $(wc -l <"$tmp/observed") rows flush what they must"
