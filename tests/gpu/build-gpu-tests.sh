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
