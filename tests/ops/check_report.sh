#!/bin/sh
# cubatch-report against reports of real runs on the simulated driver: four
# processes of tests/probe (two that batch, one with CUBATCH_ENABLE=0, one whose
# copies are all pageable), one JSON report each (%h.%p); the sums must equal the
# sums of the files' own counters, per host and in total, and the two ranks that
# never batched must be named with their reason.  Bad input: a clear error, exit 1.
b=${top_builddir:-.}
L=$(cd "$b" && pwd)/src/.libs/libcubatch.so
R=$b/cubatch-report
fail=0
ok() { echo "check_report: ok: $1"; }
bad() { echo "check_report: FAILED: $1"; fail=1; }
command -v python3 >/dev/null 2>&1 || { echo "check_report: no python3: skipped"; exit 77; }

d=$b/report-test.tmp
rm -rf "$d" && mkdir -p "$d" || exit 99
run() { # CUBATCH settings... -- scenario
    env LD_LIBRARY_PATH="$b/tests/sim/.libs" LD_PRELOAD="$L" CUBATCH_STATS=json \
        CUBATCH_STATS_FILE="$d/stats.%h.%p.json" CUBATCH_FLUSH_US=1000000 CUBATCH_SLOW_NS=1000000000 \
        "$@" >/dev/null 2>&1
}
run CUBATCH_ENGINE=batch "$b/tests/probe" basic || bad "probe basic failed"
run "$b/tests/probe" d2h_20 || bad "probe d2h_20 failed"
run CUBATCH_ENABLE=0 "$b/tests/probe" basic || bad "probe basic (disabled) failed"
run "$b/tests/probe" pageable || bad "probe pageable failed"
n=$(ls "$d"/stats.*.json 2>/dev/null | wc -l)
[ "$n" -eq 4 ] && ok "four reports written" || bad "$n reports written, not 4"

out=$("$R" "$d"/stats.*.json 2>&1); rc=$?
[ $rc -eq 0 ] && ok "summed (exit 0)" || bad "exit $rc: $out"
host=$(hostname 2>/dev/null || uname -n)
printf '%s\n' "$out" | grep -q "^host $host: 4 processes, batching on in 3, off in 1 (.*CUBATCH_ENABLE=0)" &&
    ok "per-host line" || bad "per-host line missing in: $out"
printf '%s\n' "$out" | grep -q '^total (1 host): 4 processes' && ok "total line" || bad "total line missing"

# every summed counter equals the sum (largest for batch_max) of the files' own
python3 - "$out" "$d"/stats.*.json <<'PY' || fail=1
import json, re, sys
text, files = sys.argv[1], sys.argv[2:]
reps = [json.load(open(f)) for f in files]
total = text.split("\ntotal (")[1]
bad = 0
for name in reps[0]["counters"]:
    vals = [r["counters"][name] for r in reps]
    want = max(vals) if name == "batch_max" else sum(vals)
    m = re.search(r"^  %s +(\d+)  " % re.escape(name), total, re.M)
    got = int(m.group(1)) if m else 0
    if got != want:
        print("check_report: FAILED: total %s = %d, the files add up to %d" % (name, got, want)); bad = 1
if not bad:
    print("check_report: ok: every total counter is the files' sum (batch_max their largest)")
sys.exit(bad)
PY

# the runs-ended table every report carries, summed as the counters are
python3 - "$out" "$d"/stats.*.json <<'PY' || fail=1
import json, re, sys
text, files = sys.argv[1], sys.argv[2:]
total = text.split("\ntotal (")[1].split("\n  counter ")[0]
want = {}
for f in files:
    for k, v in (json.load(open(f)).get("runs_ended_by") or {}).items():
        want[k] = want.get(k, 0) + v
want = {k: v for k, v in want.items() if v}
got = {m.group(1): int(m.group(2)) for m in re.finditer(r"^  (cu\w+) +(\d+)$", total.split("runs ended by a call of")[-1], re.M)}
if not want or "runs ended by a call of" not in total or got != want:
    print("check_report: FAILED: runs ended by: printed %s, the files add up to %s" % (got, want)); sys.exit(1)
print("check_report: ok: the runs-ended table is the files' sum (%s)" % ", ".join("%s %d" % kv for kv in sorted(want.items())))
PY

never=$(printf '%s\n' "$out" | sed -n '/^never batched: /,$p')
printf '%s\n' "$never" | grep -q '^never batched: 2 of 4 processes' && ok "two ranks never batched" ||
    bad "never-batched count: $never"
printf '%s\n' "$never" | grep -q 'batching off (.*CUBATCH_ENABLE=0)' && ok "the disabled rank, with its reason" ||
    bad "disabled rank not named: $never"
printf '%s\n' "$never" | grep -q 'none deferred: pass_pageable [0-9]* (pageable or unregistered host memory)' &&
    ok "the pageable rank, with its pass_ reason" || bad "pageable rank not named: $never"

js=$("$R" --json "$d"/stats.*.json) && printf '%s' "$js" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["processes"] == 4 and len(j["never_batched"]) == 2 and len(j["hosts"]) == 1, j' &&
    ok "--json" || bad "--json: $js"

# functions no table names (the net, design notes rule 17), summed over processes
for pid in 11 12; do
    printf '{"cubatch":"0","pid":%s,"host":"h","batching":true,"reason":"r","counters":{"copies":1},' "$pid"
    printf '"unknown_functions":{"cuFutureA":%s,"cuFutureB":1}}\n' "$pid"
done >"$d/net.11.json"
sed -n 2p "$d/net.11.json" >"$d/net.12.json" && sed -i 1q "$d/net.11.json"
out=$("$R" "$d/net.11.json" "$d/net.12.json" 2>&1)
printf '%s\n' "$out" | grep -q '^  cuFutureA  *23$' && printf '%s\n' "$out" | grep -q '^  cuFutureB  *2$' &&
    "$R" --json "$d/net.11.json" "$d/net.12.json" | grep -q '"cuFutureA": 23' &&
    ok "calls of unknown driver functions summed (text and --json)" || bad "unknown functions: $out"

echo 'cubatch 0.2.0 report (pid 1): batching on' >"$d/text.txt"
out=$("$R" "$d/text.txt" 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s\n' "$out" | grep -q 'is not JSON' && ok "a text report: clear error, exit 1" || bad "text report (exit $rc): $out"
out=$("$R" "$d/none.json" 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s\n' "$out" | grep -q 'cannot read' && ok "a missing file: exit 1" || bad "missing file (exit $rc): $out"
echo '{"a":1}' >"$d/other.json"
out=$("$R" "$d/other.json" 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s\n' "$out" | grep -q 'not a cubatch JSON report' && ok "foreign JSON: exit 1" || bad "foreign JSON (exit $rc): $out"
"$R" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok "no file: usage, exit 2" || bad "no file (exit $rc)"

[ $fail -eq 0 ] && rm -rf "$d"
exit $fail
