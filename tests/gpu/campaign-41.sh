#!/usr/bin/env bash
# campaign-41.sh - issue 41, item 6, on one GPU in one call of at most 10 minutes
# (about 5 to 8): the GPU programs built against and run with a newer CUDA 13
# runtime (PyPI's nvidia-cuda-runtime wheel, minor-version compatibility on
# the machine's driver), cuda.core's copy_batch and copy_to(options=) beside
# cubatch's runs, the rest of the GPU suite and the rule scenarios; each
# without and with cubatch, and a summary table at the end.
#
#   campaign-41.sh --cudart DIR --out DIR [--lib PATH] [--bin DIR]
#                  [--configs LIST] [--budget SECONDS] [--seed N]
#
#   --cudart DIR   the newer runtime: DIR/lib/libcudart.so.13 and DIR/include/
#                  (the wheel's nvidia/cu13 folder; the unpacked wheel works too)
#   --out DIR      where everything goes (created)
#   --lib PATH     libcubatch.so (default: .devcarry/lib/libcubatch.so of this
#                  tree, else src/.libs/libcubatch.so)
#   --bin DIR      programs built before (build-gpu-tests.sh with CB_CUDART13X);
#                  default: build them here (about 30 s)
#   --configs LIST preload configurations of run-gpu-tests.sh, its default
#                  "default batch kernel" (default: the shipped defaults)
#   --budget S     wall-clock seconds for everything (default 480); a step that
#                  would start with too little left is skipped and says so
#   --seed N       CB_TEST_SEED for every program (default: random, printed)
#
# Steps, in this order (each runs whatever the one before did):
#   1. build (CB_CUDART13X=DIR tests/gpu/build-gpu-tests.sh; raw/build.log);
#      the 13.x programs' NEEDED, RPATH/RUNPATH and which libcudart.so.13 they
#      load: OUT/cudart13x.txt
#   2. tests/gpu/run-gpu-tests.sh, one program a call (a hang costs one
#      program): drv_copies13x, rt_shared13x, cuda_core first, then drv_copies,
#      rt_static, rt_shared, rt_ptds, rt_capture, capture_legal, torch,
#      torch_capture, cupy; their tables one after the other in
#      OUT/gpu-tests.txt; every run's output in raw/logs/PROGRAM.CONFIG.{out,err,
#      diff,json} (CONFIG plain: without cubatch)
#   3. tests/gpu/run-probe.sh (the rule scenarios of tests/rules/probe.c on the
#      real driver): the default configuration, OUT/probe-default.txt, then
#      kernel and batch if the budget allows, OUT/probe-engines.txt
#   4. OUT/summary.txt: program, configuration, without, with cubatch, same
#      CHECK lines; the probe per configuration; what the newer runtime was
# OUT holds at most 7 files (the device tool brings back 8): campaign.log
# (everything printed), summary.txt, cudart13x.txt, gpu-tests.txt,
# probe-default.txt, probe-engines.txt and raw.tgz (raw/: env.txt, build.log,
# suite-status.txt, gpu/PROGRAM/ tables and stats, logs/).
# Exit: 0 everything ran and agreed, 1 something failed, differed or did not
# run, 77 no GPU, 99 usage.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

cudart='' out='' lib='' bin='' configs='default batch kernel' budget=480 seed=${CB_TEST_SEED:-}
while [ $# -gt 0 ]; do
    case $1 in
    --cudart|--out|--lib|--bin|--configs|--budget|--seed)
        [ $# -ge 2 ] || { echo "campaign-41: $1 needs a value" >&2; exit 99; } ;;
    esac
    case $1 in
    --cudart) cudart=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "campaign-41: unknown argument $1" >&2; exit 99 ;;
    esac
done
[ -n "$out" ] || { echo "campaign-41: --out DIR is required" >&2; exit 99; }
[ -n "$cudart" ] || { echo "campaign-41: --cudart DIR is required (the wheel's nvidia/cu13 folder)" >&2; exit 99; }
case $budget in ''|*[!0-9]*) echo "campaign-41: --budget takes whole seconds" >&2; exit 99 ;; esac
case " $configs " in *" default "*) ;; *) echo "campaign-41: --configs must include default (the shipped defaults)" >&2; exit 99 ;; esac

mkdir -p "$out" || exit 99
out=$(cd "$out" && pwd)
exec > >(tee -a "$out/campaign.log") 2>&1
start=$SECONDS
left() { echo $((budget - (SECONDS - start))); }
stamp() { echo "# [$((SECONDS - start))s] $*"; }

. "$top/tests/harness/lib.sh"
echo "# cubatch campaign-41 $(date -u +%FT%TZ), budget ${budget}s"
cb_gpu_or_skip campaign-41
cb_real_driver_only
raw=$(mktemp -d "${TMPDIR:-/tmp}/cb41.XXXXXX")/raw
mkdir -p "$raw"
py=${PYTHON:-python3}
[ -n "$seed" ] || seed=$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')
export CB_TEST_SEED=$seed
if [ -z "$lib" ]; then
    lib=$(cb_find_lib "$top/.devcarry/lib/libcubatch.so" "$top/src/.libs/libcubatch.so") ||
        { echo "campaign-41: no libcubatch.so (--lib)"; exit 99; }
else
    lib=$(cb_find_lib "$lib") || { echo "campaign-41: $lib not found"; exit 99; }
fi
if [ -d "$cudart" ]; then
    cudart=$(cd "$cudart" && pwd)
else
    echo "campaign-41: --cudart $cudart is not a folder: the 13.x programs will not be built"
fi

# --- 0. what runs ------------------------------------------------------------------
{
    echo "seed: $seed"
    echo "library: $lib"
    sha256sum "$lib" 2>/dev/null
    echo "commit: $(git -C "$top" rev-parse HEAD 2>/dev/null || echo '?')"
    nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader 2>/dev/null
    echo "nvcc: $(${NVCC:-nvcc} --version 2>/dev/null | tail -1)"
    echo "cudart13x folder: $cudart"
    ls -l "$cudart/lib/libcudart.so.13" 2>/dev/null
    echo "LD_LIBRARY_PATH: ${LD_LIBRARY_PATH:-}"
    timeout 60 "$py" - <<'EOF'
import importlib
for m in ("torch", "cupy", "cuda.core", "cuda.bindings", "numpy"):
    try:
        print(f"{m}: {getattr(importlib.import_module(m), '__version__', '?')}")
    except Exception as e:  # noqa: BLE001
        print(f"{m}: not importable ({type(e).__name__})")
EOF
} >"$raw/env.txt" 2>&1
cat "$raw/env.txt"

# --- 1. build ------------------------------------------------------------------------
build_rc=prebuilt
if [ -z "$bin" ]; then
    bin=$(dirname "$raw")/bin
    stamp "build into $bin"
    if [ -d "$cudart" ]; then
        CB_CUDART13X=$cudart timeout -k 10 300 "$here/build-gpu-tests.sh" "$bin" >"$raw/build.log" 2>&1
    else
        timeout -k 10 300 "$here/build-gpu-tests.sh" "$bin" >"$raw/build.log" 2>&1
    fi
    build_rc=$?
    [ "$build_rc" -eq 0 ] || { echo "campaign-41: build exit $build_rc (the rest runs what was built):"; tail -15 "$raw/build.log"; }
fi
bin=$(cd "$bin" && pwd)
stamp "build: $build_rc; programs: $(cd "$bin" && echo *)"
{
    for p in rt_copies_shared13x drv_copies13x; do
        echo "== $p"
        [ -f "$bin/$p" ] || { echo "not built"; continue; }
        readelf -d "$bin/$p" | grep -E 'NEEDED|RPATH|RUNPATH'
        ldd "$bin/$p" | grep -E 'libcudart|libcuda\.so'
    done
    echo "== expected cudart: $(cat "$bin/cudart13x.version" 2>/dev/null || echo '?')"
} >"$out/cudart13x.txt" 2>&1
cat "$out/cudart13x.txt"

# --- 2. the GPU programs, one call each ---------------------------------------------------
probe_reserve=150   # the probe's default configuration gets at least this much
ncfg=$(echo "$configs" | wc -w)
programs="drv_copies13x rt_shared13x cuda_core drv_copies rt_static rt_shared rt_ptds rt_capture capture_legal torch torch_capture cupy"
: >"$raw/suite-status.txt"
for p in $programs; do
    case $p in
    drv_copies13x) [ -x "$bin/drv_copies13x" ] || { echo "$p not-built" >>"$raw/suite-status.txt"; continue; } ;;
    rt_shared13x) [ -x "$bin/rt_copies_shared13x" ] || { echo "$p not-built" >>"$raw/suite-status.txt"; continue; } ;;
    esac
    cap=$(($(left) - probe_reserve))
    [ $cap -gt 170 ] && cap=170
    if [ $cap -lt 20 ]; then
        stamp "$p: not run, the budget is spent"
        echo "$p no-time" >>"$raw/suite-status.txt"
        continue
    fi
    stamp "$p (at most ${cap}s)"
    # each run's limit: all of them fit in the cap (a run takes seconds; a hang
    # costs this one program)
    CB_GPU_TIMEOUT=$(((cap - 5) / (1 + ncfg) > 25 ? (cap - 5) / (1 + ncfg) : 25)) CB_GPU_KEEP_LOGS=$raw/logs \
        timeout -k 10 "$cap" "$here/run-gpu-tests.sh" --bin "$bin" --lib "$lib" --configs "$configs" \
        --only "$p" --out "$raw/gpu/$p"
    echo "$p exit-$?" >>"$raw/suite-status.txt"
    cat "$raw/gpu/$p/gpu-tests.txt" >>"$out/gpu-tests.txt" 2>/dev/null
done

# --- 3. the rule scenarios on the real driver ------------------------------------------------
probe_status=''
if [ -x "$bin/probe" ]; then
    for pc in default engines; do
        cap=$(($(left) - 20))
        if [ $cap -lt 30 ]; then
            stamp "probe $pc: not run, the budget is spent"
            probe_status="$probe_status $pc:no-time"
            continue
        fi
        cfgs=default
        [ $pc = engines ] && cfgs=$(echo "$configs" | tr ' ' '\n' | grep -v -x default | grep -x -E 'kernel|batch' | paste -sd' ' -)
        [ -n "$cfgs" ] || continue
        stamp "probe, configurations: $cfgs (at most ${cap}s)"
        CB_GPU_CONFIGS=$cfgs timeout -k 10 "$cap" "$here/run-probe.sh" "$bin/probe" "$lib" "$out/probe-$pc.txt" >/dev/null
        prc=$?
        probe_status="$probe_status $pc:exit-$prc"
        [ $prc -eq 124 ] || [ $prc -eq 137 ] && stamp "probe $pc cut short by the budget"
    done
else
    probe_status=" not-built"
fi

# --- 4. summary ------------------------------------------------------------------------------
stamp "summary"
sum=$out/summary.txt
fail=0
{
    echo "# campaign-41 summary: seed $seed, library $lib"
    echo "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); build: $build_rc"
    printf '%-14s %-8s %-8s %-8s %s\n' program config without with same-as-plain
    for p in $programs; do
        st=$(awk -v p="$p" '$1 == p { print $2 }' "$raw/suite-status.txt")
        t=$raw/gpu/$p/gpu-tests.txt
        if [ -s "$t" ] && awk -v p="$p" '$1 == p { f = 1 } END { exit !f }' "$t"; then
            awk -v p="$p" '$1 == p {
                same = ($3 == "skip") ? "skip" : ($5 == "yes" ? "yes" : ($5 == "none" ? "no(no CHECK lines)" : "NO"))
                printf "%-14s %-8s %-8s %-8s %s\n", $1, $2, $3, $4, same }' "$t"
        else
            case $st in
            exit-124|exit-137) st="cut short by its time limit: rows in campaign.log" ;;
            esac
            printf '%-14s %-8s %-8s %-8s %s\n' "$p" - - - "not run ($st)"
        fi
    done
    echo
    echo "# the newer runtime (rt_shared13x: the cudart that ran; drv_copies13x: the cuda.h compiled against)"
    for f in "$raw"/logs/rt_shared13x.*.out "$raw"/logs/drv_copies13x.*.out; do
        [ -f "$f" ] && printf '%-28s %s\n' "$(basename "$f" .out)" "$(head -1 "$f")"
    done
    grep -h 'rt_shared13x: cudart' "$raw"/gpu/rt_shared13x/gpu-tests.txt 2>/dev/null
    # shellcheck disable=SC2013  # program names, one word each
    for p in $(awk '$3 == "skip" { print $1 }' "$raw"/gpu/*/gpu-tests.txt 2>/dev/null); do
        printf '%-28s %s\n' "skipped: $p" "$(tail -1 "$raw/logs/$p.plain.err" 2>/dev/null | cut -c1-160)"
    done
    echo
    echo "# cuda.core (cuda_core_copies.py): CHECK, SKIP and NOTE lines without cubatch"
    grep -h -E '^(CHECK|SKIP|NOTE)' "$raw/logs/cuda_core.plain.out" 2>/dev/null || echo "(no output kept)"
    grep -h 'cuda_core_copies: cuda.core' "$raw/logs/cuda_core.plain.err" 2>/dev/null
    echo
    echo "# rule scenarios (run-probe.sh):$probe_status"
    printf '%-14s %-8s %s\n' probe config "scenarios, same-as-plain, both ok"
    for pc in default engines; do
        f=$out/probe-$pc.txt
        [ -s "$f" ] || continue
        awk 'NR > 1 && NF >= 5 && $2 ~ /^(default|kernel|batch)$/ {
                n[$2]++; if ($5 == "yes") s[$2]++; if ($3 == "ok" && $4 == "ok") k[$2]++
                if ($5 != "yes" || $3 != "ok" || $4 != "ok") bad[$2] = bad[$2] " " $1 }
             END { for (c in n) printf "%-14s %-8s %d scenarios, %d same, %d ok both ways%s\n",
                   "probe", c, n[c], s[c] + 0, k[c] + 0, (c in bad) ? "; not:" bad[c] : "" }' "$f"
    done
} >"$sum"

# The verdict: a failure, a difference, or something that did not run or was
# cut short fails; a program that skipped (77: a module missing) is named.
bad=$(awk 'NF == 5 && $1 !~ /^(#|probe$|program$)/ &&
           ($3 ~ /FAIL|TIMEOUT/ || $4 ~ /FAIL|TIMEOUT|NOSTATS/ || $5 ~ /^(NO|no\(|not)/) { print $1 "/" $2 }
           /^[a-z_0-9]+ +- +- +- +not run/ { print $1 }' "$sum" | sort -u | paste -sd' ' -)
skipped=$(awk 'NF == 5 && $5 == "skip" { print $1 }' "$sum" | sort -u | paste -sd' ' -)
for t in $probe_status; do
    case $t in *:exit-0) ;; *) bad="$bad probe:$t" ;; esac
done
grep -q '; not:' "$sum" && bad="$bad probe-scenarios"
bad=${bad# }
{
    [ -n "$skipped" ] && echo "# skipped (exit 77, said why in raw/logs/*.plain.err): $skipped"
    if [ -z "$bad" ]; then
        echo "# verdict: everything that ran agreed with and without cubatch"
    else
        echo "# verdict: FAILED or incomplete: $bad"
        fail=1
    fi
} >>"$sum"
echo "# --- summary ($((SECONDS - start))s)"
cat "$sum"
tar -czf "$out/raw.tgz" -C "$(dirname "$raw")" raw 2>/dev/null || echo "campaign-41: raw.tgz not written"
rm -rf "$(dirname "$raw")"
exit $fail
