#!/usr/bin/env bash
# Build the GPU test programs into DIR (needs nvcc and a C compiler; no GPU).
#
#   build-gpu-tests.sh DIR
#
# Produces DIR/drv_copies (C11, -lcuda), DIR/rt_copies_static (nvcc's default
# static cudart), DIR/rt_copies_shared (-cudart shared), DIR/rt_copies_ptds
# (--default-stream per-thread), DIR/rt_capture (graph capture in every mode,
# with cuBLAS when it links) and DIR/capture_legal (what the driver refuses
# while a stream captures).  Environment: NVCC (else configure's, in a
# build tree), CC, CUDA_HOME, NVCC_GENCODE (tests/harness/lib.sh: cb_cuda_toolkit,
# cb_gencode).
#
# CB_CUDART13X=DIR (optional): a newer CUDA 13 runtime, DIR holding
# lib/libcudart.so.13 and include/ (the nvidia/cu13 folder of PyPI's
# nvidia-cuda-runtime wheel; DIR may also be the unpacked wheel itself).  Then
# also DIR/rt_copies_shared13x: rt_copies.cu compiled by the toolkit's nvcc,
# linked against DIR/lib/libcudart.so.13 (nvcc -cudart none, the library given
# to the linker by its path: it has no libcudart.so to find with -lcudart) with
# an RPATH (not RUNPATH, so it wins over LD_LIBRARY_PATH) to DIR/lib, and
# -DCB_EXPECT_CUDART=<DIR's CUDART_VERSION> so that it fails when another
# runtime runs; and DIR/drv_copies13x: drv_copies.c compiled against DIR's
# cuda.h (-I DIR/include before the toolkit's).  Not set: nothing changes.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
out=$1
src=$(cd "$(dirname "$0")" && pwd)
. "$src/../harness/lib.sh"
cb_cuda_toolkit build-gpu-tests
nvcc=$cb_nvcc cuda=$cb_cuda stubs=$cb_stubs libdir=$cb_cudalib
gencode=$(cb_gencode)
mkdir -p "$out"
set -x
# The stub only satisfies the linker; at run time the real libcuda.so.1 loads.
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$cuda/include" "$src/drv_copies.c" \
    -o "$out/drv_copies" -L"$stubs" -lcuda -lpthread
nvflags="-std=c++17 -O2 $gencode -Xcompiler -Wall,-Wextra"
# shellcheck disable=SC2086
"$nvcc" $nvflags "$src/rt_copies.cu" -o "$out/rt_copies_static"
# shellcheck disable=SC2086
"$nvcc" $nvflags -cudart shared -Xlinker -rpath -Xlinker "$libdir" "$src/rt_copies.cu" \
    -o "$out/rt_copies_shared"
# shellcheck disable=SC2086
"$nvcc" $nvflags --default-stream per-thread "$src/rt_copies.cu" -o "$out/rt_copies_ptds"
# Capture as programs use it; cuBLAS in a capture when the toolkit has it.
# shellcheck disable=SC2086
"$nvcc" $nvflags -DWITH_CUBLAS "$src/rt_capture.cu" -o "$out/rt_capture" -lcublas \
    -Xlinker -rpath -Xlinker "$libdir" ||
    "$nvcc" $nvflags "$src/rt_capture.cu" -o "$out/rt_capture"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$cuda/include" "$src/capture_legal.c" \
    -o "$out/capture_legal" -L"$stubs" -lcuda -lpthread
# The simulated-driver rule scenarios (tests/rules/probe.c), for the real driver.
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$cuda/include" "$src/../rules/probe.c" \
    -o "$out/probe" -L"$stubs" -lcuda -lpthread -ldl

# A newer CUDA 13 runtime (minor-version compatibility): CB_CUDART13X.
if [ -n "${CB_CUDART13X:-}" ]; then
    rt13=$CB_CUDART13X
    if [ ! -f "$rt13/lib/libcudart.so.13" ] && [ -f "$rt13/nvidia/cu13/lib/libcudart.so.13" ]; then
        rt13=$rt13/nvidia/cu13  # the unpacked wheel
    fi
    if [ ! -f "$rt13/lib/libcudart.so.13" ] || [ ! -f "$rt13/include/cuda_runtime_api.h" ]; then
        echo "build-gpu-tests: CB_CUDART13X=$CB_CUDART13X holds no lib/libcudart.so.13 and include/cuda_runtime_api.h" >&2
        exit 1
    fi
    rt13=$(cd "$rt13" && pwd)
    rt13ver=$(sed -n 's/^#define CUDART_VERSION  *\([0-9][0-9]*\).*/\1/p' "$rt13/include/cuda_runtime_api.h" | head -1)
    [ -n "$rt13ver" ] || { echo "build-gpu-tests: no CUDART_VERSION in $rt13/include/cuda_runtime_api.h" >&2; exit 1; }
    # The RPATH: DIR/lib by its absolute path, then the same folder relative to
    # the program ($ORIGIN), for programs carried with DIR to another machine.
    outabs=$(cd "$out" && pwd)
    rel=$(realpath -m --relative-to="$outabs" "$rt13/lib")
    # shellcheck disable=SC2086,SC2016
    "$nvcc" $nvflags -cudart none -DCB_EXPECT_CUDART="$rt13ver" "$src/rt_copies.cu" \
        -o "$out/rt_copies_shared13x" -Xlinker "$rt13/lib/libcudart.so.13" \
        -Xlinker --disable-new-dtags -Xlinker -rpath -Xlinker "$rt13/lib:\$ORIGIN/$rel"
    ${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$rt13/include" -I"$cuda/include" "$src/drv_copies.c" \
        -o "$out/drv_copies13x" -L"$stubs" -lcuda -lpthread
    # What the runner checks and prints (run-gpu-tests.sh, campaign-41.sh).
    printf '%s\n' "$rt13ver" >"$out/cudart13x.version"
    readelf -d "$out/rt_copies_shared13x" | grep -E 'NEEDED|RPATH|RUNPATH' || true
fi
