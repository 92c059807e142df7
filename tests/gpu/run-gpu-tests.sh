#!/usr/bin/env bash
# Run the real-GPU test programs without and with cubatch preloaded; check that
# both pass and print the same CHECK lines; print one table line per program and
# preload configuration.
#
#   run-gpu-tests.sh [--bin DIR | --build DIR] [--lib PATH] [--out DIR]
#                    [--configs "default all"] [--only "drv_copies rt_static ..."]
#
#   --bin DIR      use prebuilt programs from DIR (drv_copies, rt_copies_static,
#                  rt_copies_shared, rt_copies_ptds, rt_capture, capture_legal;
#                  drv_copies13x and rt_copies_shared13x when built with
#                  CB_CUDART13X, which are then run too); default: build them
#   --build DIR    build into DIR and keep it (default: a temporary folder)
#   --lib PATH     libcubatch.so (default $CB_LIB, else src/.libs/libcubatch.so
#                  under the current folder, then under the source tree)
#   --out DIR      also write gpu-tests.txt (table + logs of failures) and
#                  gpu-tests-stats.jsonl (every stats object) there
#   --configs LIST preload configurations: default (library defaults: engine
#                  auto), batch (CUBATCH_ENGINE=batch), kernel (CUBATCH_ENGINE=kernel),
#                  all (CUBATCH_POLICY=all), off (CUBATCH_ENABLE=0); default
#                  "default batch kernel"
#   --only LIST    run only these programs
#
# Environment: CB_TEST_SEED (same data in every run; random if unset),
# NVCC, CC, CUDA_HOME, NVCC_GENCODE, PYTHON, CB_GPU_TIMEOUT (s per run, 180),
# CB_GPU_CONFIGS (default for --configs), CB_CUDART13X (build-gpu-tests.sh: also
# build and run drv_copies13x and rt_shared13x against a newer CUDA 13 runtime),
# CB_GPU_KEEP_LOGS (a folder: every run's stdout, stderr, CHECK diff and stats
# are copied there as PROGRAM.CONFIG.{out,err,diff,json}, CONFIG "plain" for the
# run without cubatch).
# Exit: 0 all passed, 1 a failure, 77 no GPU (checked before anything is built),
# 99 setup error (library or compiler missing).
set -u

here=$(cd "$(dirname "$0")" && pwd)
src_top=${srcdir:-$here/../..}
src_top=$(cd "$src_top" && pwd)
tdir=$src_top/tests/gpu

bin='' build='' lib=${CB_LIB:-} out='' configs=${CB_GPU_CONFIGS:-default batch kernel} only=''
while [ $# -gt 0 ]; do
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "run-gpu-tests: unknown argument $1" >&2; exit 99 ;;
    esac
done

# --- a GPU, from the real driver's device nodes; never from the build tree ------
. "$src_top/tests/harness/lib.sh"
cb_gpu_or_skip run-gpu-tests
cb_real_driver_only

# --- the library ------------------------------------------------------------------
if [ -n "$lib" ]; then
    lib=$(cb_find_lib "$lib")
else
    lib=$(cb_find_lib "$PWD/src/.libs/libcubatch.so" "$src_top/src/.libs/libcubatch.so")
fi || { echo "run-gpu-tests: libcubatch.so not found (build it, or pass --lib / CB_LIB)" >&2; exit 99; }

work=$(mktemp -d "${TMPDIR:-/tmp}/cubatch-gpu.XXXXXX")
# shellcheck disable=SC2317  # called from the EXIT trap
keep_logs() {
    [ -n "${CB_GPU_KEEP_LOGS:-}" ] || return 0
    mkdir -p "$CB_GPU_KEEP_LOGS" &&
        find "$work" -maxdepth 1 -type f \( -name '*.out' -o -name '*.err' -o -name '*.diff' -o -name '*.json' \) \
            -exec cp {} "$CB_GPU_KEEP_LOGS/" \;
}
trap 'keep_logs; rm -rf "$work"' EXIT

# --- build --------------------------------------------------------------------------
if [ -z "$bin" ]; then
    bin=${build:-$work/bin}
    "$here/build-gpu-tests.sh" "$bin" >"$work/build.log" 2>&1 || {
        cat "$work/build.log" >&2
        echo "run-gpu-tests: build failed" >&2
        exit 99
    }
fi
bin=$(cd "$bin" && pwd)

py=${PYTHON:-python3}
seed=${CB_TEST_SEED:-$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')}
tmo=${CB_GPU_TIMEOUT:-180}
run_timeout=
command -v timeout >/dev/null && run_timeout="timeout -k 10 $tmo"

programs="drv_copies rt_static rt_shared rt_ptds rt_capture capture_legal torch torch_capture cupy cuda_core"
# Built against a newer CUDA 13 runtime (CB_CUDART13X), run beside their twins.
[ -x "$bin/drv_copies13x" ] && programs=${programs/drv_copies/drv_copies drv_copies13x}
[ -x "$bin/rt_copies_shared13x" ] && programs=${programs/rt_shared/rt_shared rt_shared13x}
[ -n "$only" ] && programs=$only

cmd_of() {
    case $1 in
    drv_copies) echo "$bin/drv_copies" ;;
    rt_static) echo "$bin/rt_copies_static" ;;
    rt_shared) echo "$bin/rt_copies_shared" ;;
    rt_shared13x) echo "$bin/rt_copies_shared13x" ;;
    drv_copies13x) echo "$bin/drv_copies13x" ;;
    rt_ptds) echo "$bin/rt_copies_ptds" ;;
    rt_capture) echo "$bin/rt_capture" ;;
    capture_legal) echo "$bin/capture_legal --check" ;;
    torch) echo "$py $tdir/torch_copies.py" ;;
    torch_capture) echo "$py $tdir/torch_capture.py" ;;
    cupy) echo "$py $tdir/cupy_copies.py" ;;
    cuda_core) echo "$py $tdir/cuda_core_copies.py" ;;
    *) return 1 ;;
    esac
}

config_env() {
    case $1 in
    default) echo "" ;;
    all) echo "CUBATCH_POLICY=all" ;;
    batch) echo "CUBATCH_ENGINE=batch" ;;
    kernel) echo "CUBATCH_ENGINE=kernel" ;;
    off) echo "CUBATCH_ENABLE=0" ;;
    *) echo "$1" ;;  # any VAR=value list
    esac
}

verdict() {  # exit status -> word
    case $1 in 0) echo ok ;; 77) echo skip ;; 124|137) echo TIMEOUT ;; *) echo "FAIL($1)" ;; esac
}

# One line of the stats JSON: batching, non-zero entry points, four counters.
summarize() {
    "$py" - "$1" <<'EOF' 2>/dev/null || echo "- (stats unreadable) - - - -"
import json, sys
d = json.load(open(sys.argv[1]))
short = {"cuMemcpyAsync": "A", "cuMemcpyHtoDAsync_v2": "HtoD",
         "cuMemcpyDtoHAsync_v2": "DtoH", "cuMemcpyDtoDAsync_v2": "DtoD"}
eps = []
for k, v in d.get("entry_points", {}).items():
    if v:
        base = k[:-5] if k.endswith("_ptsz") else k
        eps.append(short.get(base, base) + ("/pt" if k.endswith("_ptsz") else "") + "=" + str(v))
c = d.get("counters", {})
print("yes" if d.get("batching") else "no(" + str(d.get("reason", "?")).replace(" ", "_") + ")",
      ",".join(eps) or "none",
      *(c.get(k, "-") for k in ("copies", "deferred", "batches", "kernel_launches")))
EOF
}

report=$work/report.txt
stats_all=$work/stats.jsonl
details=$work/details.txt
: >"$report"
: >"$details"
: >"$stats_all"
failed=0 ran=0
say() { printf '%s\n' "$*" | tee -a "$report"; }

say "# cubatch GPU tests: seed $seed, library $lib"
say "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
if [ -x "$bin/rt_copies_shared13x" ]; then
    say "# rt_shared13x: cudart $(cat "$bin/cudart13x.version" 2>/dev/null || echo '?') expected; loads $(ldd "$bin/rt_copies_shared13x" 2>/dev/null | sed -n 's/^[[:space:]]*libcudart\.so\.13 => \([^ ]*\).*/\1/p')"
fi
fmt='%-11s %-8s %-6s %-8s %-5s %-9s %-44s %7s %8s %7s %8s\n'
# shellcheck disable=SC2059
say "$(printf "$fmt" program config plain preload same batching entry_points copies deferred batches launches)"

for p in $programs; do
    cmd=$(cmd_of "$p") || { say "unknown program $p"; failed=1; continue; }
    base=$work/$p
    # $cmd and $run_timeout are word lists on purpose.
    # shellcheck disable=SC2086
    CB_TEST_SEED=$seed $run_timeout $cmd >"$base.plain.out" 2>"$base.plain.err"
    rc0=$?
    if [ $rc0 -eq 77 ]; then
        # shellcheck disable=SC2059
        say "$(printf "$fmt" "$p" - skip - - - "$(tail -1 "$base.plain.err" | cut -c1-44)" - - - -)"
        continue
    fi
    ran=1
    [ $rc0 -ne 0 ] && { failed=1; { echo "--- $p without cubatch:"; tail -20 "$base.plain.err"; } >>"$details"; }
    for cfg in $configs; do
        js=$base.$cfg.json
        rm -f "$js"
        # shellcheck disable=SC2046,SC2086
        env $(config_env "$cfg") LD_PRELOAD="$lib" CUBATCH_STATS=json CUBATCH_STATS_FILE="$js" \
            CB_TEST_SEED="$seed" $run_timeout $cmd >"$base.$cfg.out" 2>"$base.$cfg.err"
        rc1=$?
        same=yes
        if ! diff <(grep '^CHECK ' "$base.plain.out" | sort) <(grep '^CHECK ' "$base.$cfg.out" | sort) \
            >"$base.$cfg.diff"; then
            same=NO
        fi
        [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ "$(grep -c '^CHECK ' "$base.plain.out")" -eq 0 ] && same=none
        if [ -s "$js" ]; then
            read -r batching eps copies deferred batches batched <<<"$(summarize "$js")"
            printf '{"program":"%s","config":"%s","rc":%d,"stats":%s}\n' "$p" "$cfg" "$rc1" \
                "$(tr -d '\n' <"$js")" >>"$stats_all"
        else
            batching=NOSTATS eps=- copies=- deferred=- batches=- batched=-
        fi
        r1=$(verdict $rc1)
        bad=0
        [ $rc0 -ne 0 ] || [ $rc1 -ne 0 ] || [ "$same" != yes ] || [ "$batching" = NOSTATS ] && bad=1
        # shellcheck disable=SC2059
        say "$(printf "$fmt" "$p" "$cfg" "$(verdict $rc0)" "$r1" "$same" "$batching" "$eps" \
            "$copies" "$deferred" "$batches" "$batched")"
        if [ $bad -ne 0 ]; then
            failed=1
            {
                echo "--- $p [$cfg] with cubatch (rc $rc1):"
                tail -20 "$base.$cfg.err"
                [ "$same" = NO ] && { echo "--- CHECK lines differ (< without, > with):"; cat "$base.$cfg.diff"; }
            } >>"$details"
        fi
    done
done

if [ $failed -ne 0 ]; then
    say "run-gpu-tests: FAILED; details:"
    tee -a "$report" <"$details"
fi
if [ -n "$out" ]; then
    mkdir -p "$out"
    cp "$report" "$out/gpu-tests.txt"
    cp "$stats_all" "$out/gpu-tests-stats.jsonl"
fi
[ $failed -ne 0 ] && exit 1
[ $ran -eq 0 ] && exit 77
exit 0
