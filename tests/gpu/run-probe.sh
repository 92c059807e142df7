#!/usr/bin/env bash
# The rule scenarios of tests/rules/probe.c (written for the simulated driver) on a real
# GPU: each runs without and with cubatch; both must say "result: ok" and print
# the same digest and return codes.  One table line per scenario with cubatch's
# counters, per preload configuration.  Skips (77) without a GPU.
#
#   run-probe.sh PROBE LIBCUBATCH [OUTFILE]
#
# The scenarios are the probe's own list (its usage line), so a new one is never
# left out; CB_PROBE_SCENARIOS (a space list) runs only those of them that it
# names (run-two-gpu.sh: the two-device ones).  CB_GPU_CONFIGS (default "default
# kernel batch") names the configurations: default (library defaults), kernel
# (CUBATCH_ENGINE=kernel), batch (CUBATCH_ENGINE=batch).
set -u
. "$(dirname "$0")/../harness/lib.sh"
# BENCH_SIM=1: on tests/sim's simulated driver (LD_LIBRARY_PATH), to test the scripts
[ "${BENCH_SIM:-}" = 1 ] || cb_gpu_or_skip run-probe
probe=$1 lib=$2 out=${3:-/dev/null}
unset LD_PRELOAD
fail=0
tmp=$(mktemp -d)
configs=${CB_GPU_CONFIGS:-default kernel batch}
scenarios=$("$probe" 2>&1 | sed -n 's/^scenarios://p')
[ -n "$scenarios" ] || { echo "run-probe: $probe printed no scenario list"; exit 1; }
if [ -n "${CB_PROBE_SCENARIOS:-}" ]; then
    for sc in $CB_PROBE_SCENARIOS; do
        case " $scenarios " in *" $sc "*) ;; *) echo "run-probe: $probe has no scenario $sc"; exit 1 ;; esac
    done
    scenarios=$CB_PROBE_SCENARIOS
fi
printf '%-20s %-7s %-6s %-6s %-5s %s\n' scenario config plain cubatch same counters | tee "$out"
for sc in $scenarios; do
  timeout 120 "$probe" "$sc" >"$tmp/plain" 2>&1; p=$?
  for cfg in $configs; do
    case $cfg in
    default) env=() ;;
    kernel) env=(CUBATCH_ENGINE=kernel) ;;
    batch) env=(CUBATCH_ENGINE=batch) ;;
    *) echo "run-probe: unknown configuration $cfg"; exit 1 ;;
    esac
    env "${env[@]}" CUBATCH_STATS=json CUBATCH_STATS_FILE="$tmp/stats.json" LD_PRELOAD="$lib" \
        timeout 120 "$probe" "$sc" >"$tmp/shim" 2>&1; s=$?
    same=yes
    for k in 'digest:' 'rc:'; do
        cmp -s <(grep "^$k" "$tmp/plain") <(grep "^$k" "$tmp/shim") || same=no
    done
    if [ "$sc" = resolve ]; then
        # the driver's answers (everything before lib=) must not change
        cmp -s <(grep '^resolve:' "$tmp/plain" | sed 's/ lib=.*//') \
               <(grep '^resolve:' "$tmp/shim" | sed 's/ lib=.*//') || same=no
        wrapped=$(grep -c '^resolve:.*lib=libcubatch.so' "$tmp/shim")
    fi
    counters=$(python3 - "$tmp/stats.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("no stats"); sys.exit()
c = d["counters"]
keys = ["copies", "deferred", "batches", "kernel_launches", "kernel_copies", "legacy_runs", "singles",
        "side_submits", "flush_hazard", "flush_full", "flush_timer", "pass_first", "pass_capture",
        "pass_pageable", "pass_legacy", "pass_policy", "pass_slow", "pass_query", "pass_foreign",
        "batch_errors", "replayed"]
print(" ".join(f"{k}={c[k]}" for k in keys if c.get(k)))
PY
)
    [ "$sc" = resolve ] && counters="$counters wrapped_lines=$wrapped"
    pr=$(grep -q '^result: ok' "$tmp/plain" && [ $p -eq 0 ] && echo ok || echo FAIL)
    sr=$(grep -q '^result: ok' "$tmp/shim" && [ $s -eq 0 ] && echo ok || echo FAIL)
    printf '%-20s %-7s %-6s %-6s %-5s %s\n' "$sc" "$cfg" "$pr" "$sr" "$same" "$counters" | tee -a "$out"
    if [ "$pr$sr$same" != okokyes ]; then
        fail=1
        { echo "--- $sc plain (exit $p)"; tail -5 "$tmp/plain"; echo "--- $sc $cfg cubatch (exit $s)"; tail -5 "$tmp/shim"; } | tee -a "$out"
    fi
    rm -f "$tmp/stats.json"
  done
done
rm -rf "$tmp"
exit $fail
