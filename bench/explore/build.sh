#!/usr/bin/env bash
# Build the copy-kernel fatbin and the xbench measurement program (no GPU needed).
#
#   bench/explore/build.sh [--fast] [--no-kemu] [--smoke] [--out DIR]
#
# Into DIR (default bench/explore/out):
#   cubatch_copy.fatbin        src/copy_kernel.cu: SASS for every real sm_XY that
#                              `nvcc --list-gpu-code` lists + PTX of the newest
#                              compute_XY (--fast: sm_90 SASS + compute_90 PTX),
#                              --compress-mode=size
#   cubatch_copy.default.fatbin  the same, default compression (fallback)
#   xbench_kernels.fatbin      the interference section's compute kernel
#   xbench_fatbins.h           both fatbins as C arrays (embedded in xbench)
#   xbench                     the measurement program (C11, driver API, -lcuda)
#   kemu                       CPU emulation check of the kernel (run here)
#   fatbin-report.txt          sizes per architecture, registers/spills per arch
#   resource-usage.txt         nvcc --resource-usage of the fatbin build
# --smoke also builds mockcuda (a CPU stand-in libcuda.so.1) and runs
# `xbench --quick` against it: checks the program's logic, not the GPU.
# Environment: NVCC, CC, CXX, CUDA_HOME.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$here/out
fast=0 kemu=1 smoke=0
while [ $# -gt 0 ]; do
    case $1 in
    --fast) fast=1 ;;
    --no-kemu) kemu=0 ;;
    --smoke) smoke=1 ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--fast] [--no-kemu] [--smoke] [--out DIR]" >&2; exit 2 ;;
    esac
    shift
done
nvcc=${NVCC:-nvcc}
command -v "$nvcc" >/dev/null || { echo "build.sh: nvcc not found" >&2; exit 1; }
cuda=${CUDA_HOME:-$(dirname "$(dirname "$(command -v "$nvcc")")")}
cc=${CC:-cc}
cxx=${CXX:-c++}
stubs=
for d in "$cuda/lib64/stubs" "$cuda/targets/x86_64-linux/lib/stubs" "$cuda/targets/sbsa-linux/lib/stubs"; do
    [ -f "$d/libcuda.so" ] && { stubs=$d; break; }
done
[ -n "$stubs" ] || { echo "build.sh: no libcuda.so stub under $cuda" >&2; exit 1; }
mkdir -p "$out"
cd "$root"

# 1. CPU emulation of the kernel (exact: its threads never communicate).
if [ $kemu = 1 ]; then
    "$cxx" -std=c++17 -O2 -Wall -Wextra -Werror -Wno-unknown-pragmas -Isrc \
        bench/explore/kemu.cpp -o "$out/kemu"
    "$out/kemu"
fi

# 2. The copy kernel's fatbin.
if [ $fast = 1 ]; then
    sms=(90)
    ptx=90
else
    mapfile -t sms < <("$nvcc" --list-gpu-code | sed -n 's/^sm_\([0-9]*\)$/\1/p' | sort -n)
    ptx=$("$nvcc" --list-gpu-arch | sed -n 's/^compute_\([0-9]*\)$/\1/p' | sort -n | tail -1)
fi
gencode=()
for a in "${sms[@]}"; do gencode+=(-gencode "arch=compute_$a,code=sm_$a"); done
gencode+=(-gencode "arch=compute_$ptx,code=compute_$ptx")
kflags=(-O3 -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra -Xptxas -warn-spills,-warn-lmem-usage)
echo "fatbin: sm_${sms[*]} + compute_$ptx PTX"
# --compress-mode=size: the default mode leaves the image almost uncompressed
# (each entry point's 32 KiB parameter bank is stored as zeros in every cubin).
"$nvcc" -fatbin "${kflags[@]}" --compress-mode=size "${gencode[@]}" --resource-usage -Isrc \
    src/copy_kernel.cu -o "$out/cubatch_copy.fatbin" >"$out/resource-usage.txt" 2>&1 ||
    { cat "$out/resource-usage.txt" >&2; exit 1; }
# the same with the default compression: xbench's fallback, and a load-time comparison
"$nvcc" -fatbin "${kflags[@]}" "${gencode[@]}" -Isrc src/copy_kernel.cu \
    -o "$out/cubatch_copy.default.fatbin"
"$nvcc" -fatbin -O3 -std=c++17 -Werror all-warnings \
    -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
    bench/explore/xbench_kernels.cu -o "$out/xbench_kernels.fatbin"

# 3. Report: size per architecture and registers of cubatch_copy_kernel.
{
    echo "cubatch_copy.fatbin: $(stat -c %s "$out/cubatch_copy.fatbin") bytes" \
        "(nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), --compress-mode=size)"
    echo "arch     cubin_bytes  regs(main)  spill_st  spill_ld  regs(tiers 40/168/680)"
    tmp=$(mktemp -d)
    for a in "${sms[@]}"; do
        "$nvcc" -cubin "${kflags[@]}" -arch="sm_$a" --resource-usage -Isrc src/copy_kernel.cu \
            -o "$tmp/k$a.cubin" >"$tmp/r$a.txt" 2>&1
        awk -v a="$a" -v sz="$(stat -c %s "$tmp/k$a.cubin")" '
            /Function properties for/ { f = $NF }
            /spill stores/ { st[f] = $5; ld[f] = $9 }
            /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) if ($i == "Used") r[f] = $(i + 1) }
            END { printf "sm_%-5s %11d  %10s  %8s  %8s  %s/%s/%s\n", a, sz,
                  r["cubatch_copy_kernel"], st["cubatch_copy_kernel"], ld["cubatch_copy_kernel"],
                  r["cubatch_copy_kernel_40"], r["cubatch_copy_kernel_168"], r["cubatch_copy_kernel_680"] }
        ' "$tmp/r$a.txt"
    done
    "$nvcc" -ptx -O3 -std=c++17 -arch="compute_$ptx" -Isrc src/copy_kernel.cu -o "$tmp/k.ptx"
    echo "compute_$ptx PTX: $(stat -c %s "$tmp/k.ptx") bytes uncompressed"
    "$nvcc" -fatbin -O3 -std=c++17 --compress-mode=none "${gencode[@]}" -Isrc \
        src/copy_kernel.cu -o "$tmp/c-none.fatbin"
    echo "fatbin with --compress-mode=none: $(stat -c %s "$tmp/c-none.fatbin") bytes"
    echo "fatbin with --compress-mode=default: $(stat -c %s "$out/cubatch_copy.default.fatbin") bytes"
    rm -rf "$tmp"
} >"$out/fatbin-report.txt"
cat "$out/fatbin-report.txt"

# 4. The program, with both fatbins embedded as 64-byte aligned arrays.
emb() {
    echo "static const unsigned char $2[] __attribute__((aligned(64))) = {"
    od -An -v -tx1 "$1" | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'
    echo "};"
}
{
    echo "/* generated by bench/explore/build.sh */"
    emb "$out/cubatch_copy.fatbin" cb_copy_fatbin
    emb "$out/cubatch_copy.default.fatbin" cb_copy_fatbin_default
    emb "$out/xbench_kernels.fatbin" xb_kernels_fatbin
} >"$out/xbench_fatbins.h"
# The stub libcuda.so only satisfies the linker; at run time the real
# libcuda.so.1 loads.
"$cc" -std=c11 -O2 -Wall -Wextra -Werror -I"$cuda/include" -Isrc -I"$out" \
    bench/explore/xbench.c -o "$out/xbench" -L"$stubs" -lcuda
echo "built $out/xbench"

# 5. Optional smoke test against the CPU stand-in driver.
if [ $smoke = 1 ]; then
    mkdir -p "$out/mock"
    "$cxx" -std=c++17 -O2 -shared -fPIC -Wall -Wextra -Werror -Wno-unknown-pragmas \
        -I"$cuda/include" -Isrc bench/explore/mockcuda.cpp -o "$out/mock/libcuda.so.1"
    LD_LIBRARY_PATH="$out/mock" "$out/xbench" --quick --reps 2 --reps2 2 --rounds 2 \
        --out "$out/smoke" --pin-note smoke >"$out/smoke.txt" 2>"$out/smoke.log"
    tail -n 3 "$out/smoke.txt"
fi
