#!/usr/bin/env bash
# Graph capture on the real GPU, as issue 23 asks it to be checked: the whole
# GPU suite (run-gpu-tests.sh: rt_capture, capture_legal and torch_capture among
# its programs), the rule scenarios (run-probe.sh), capture_legal's output against
# the recorded H200 table, and any other capture programs given (cuda-samples
# binaries, say), each without cubatch and under the default, batch and kernel
# configurations.
#
#   capture-campaign.sh --bin DIR --lib PATH --out DIR [--samples DIR]
#
# --bin: the programs of build-gpu-tests.sh; --samples: every executable in DIR
# is run in it, and passes when its exit status and its output lines that carry
# no number of seconds or milliseconds agree with the plain run's.  Prints one
# line per check; exit 1 when any failed, 77 without a GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../harness/lib.sh"
cb_gpu_or_skip capture-campaign
bin='' lib='' out='' samples=''
while [ $# -gt 0 ]; do
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    *) echo "usage: $0 --bin DIR --lib PATH --out DIR [--samples DIR]" >&2; exit 2 ;;
    esac
done
[ -n "$bin" ] && [ -n "$lib" ] && [ -n "$out" ] || { echo "usage: $0 --bin DIR --lib PATH --out DIR [--samples DIR]" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -z "$samples" ] || samples=$(cd "$samples" && pwd) # the samples run in $out
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
failed=0
say() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }

say "# capture campaign: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
"$bin/capture_legal" >"$out/capture-legal.txt"
if diff "$here/../data/capture-legal-h200.txt" "$out/capture-legal.txt" >"$out/capture-legal.diff"; then
    say "capture_legal: the driver refuses what tests/data/capture-legal-h200.txt says (648 cases)"
else
    say "capture_legal: DIFFERS from tests/data/capture-legal-h200.txt ($out/capture-legal.diff)"
    failed=1
fi

"$here/run-gpu-tests.sh" --bin "$bin" --lib "$lib" --out "$out/gpu" --configs "default batch kernel" >"$out/gpu-tests.log" 2>&1
rc=$?
say "run-gpu-tests.sh: exit $rc ($out/gpu/gpu-tests.txt)"
[ $rc -eq 0 ] || failed=1

"$here/run-probe.sh" "$bin/probe" "$lib" "$out/probe.txt" >"$out/probe.log" 2>&1
rc=$?
say "run-probe.sh: exit $rc ($(grep -c . "$out/probe.txt" 2>/dev/null) lines)"
[ $rc -eq 0 ] || failed=1

if [ -n "$samples" ]; then
    for p in "$samples"/*; do
        [ -x "$p" ] && [ -f "$p" ] || continue
        name=$(basename "$p")
        (cd "$out" && timeout 300 "$p" >"$out/$name.plain.out" 2>&1)
        rc0=$?
        for cfg in default batch kernel; do
            case $cfg in default) e=() ;; batch) e=(CUBATCH_ENGINE=batch) ;; kernel) e=(CUBATCH_ENGINE=kernel) ;; esac
            (cd "$out" && env "${e[@]}" LD_PRELOAD="$lib" timeout 300 "$p" >"$out/$name.$cfg.out" 2>&1)
            rc1=$?
            same=yes
            diff <(grep -viE '[0-9.]+ *(s|ms|msec|sec|seconds)\b|time|cubatch' "$out/$name.plain.out") \
                <(grep -viE '[0-9.]+ *(s|ms|msec|sec|seconds)\b|time|cubatch' "$out/$name.$cfg.out") >/dev/null || same=NO
            say "$name $cfg: plain exit $rc0, cubatch exit $rc1, output same: $same"
            [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ $same = yes ] || failed=1
        done
    done
fi
[ $failed -eq 0 ] && say "capture campaign: all passed" || say "capture campaign: FAILED"
exit $failed
