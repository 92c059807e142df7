#!/usr/bin/env bash
# Build the benchmark programs into DIR (needs nvcc and a C compiler; no GPU).
#
#   build-bench.sh DIR
#
# DIR/bench_copies, DIR/bench_tiles, DIR/copy_path, DIR/tiles_path, DIR/chunk_trace, DIR/launch_hook and DIR/bench_threads (C11, driver API,
# -lcuda), DIR/inproc_lone (C11, loads the driver and cubatch with dlopen), DIR/kv_swap
# (runtime API and, with -a driver, driver API copies: -lcuda), DIR/bench_launch,
# DIR/load_bench, DIR/prio_probe and DIR/stage_probe (runtime API).
# Environment: NVCC (else configure's, in a build tree), CC, CUDA_HOME,
# NVCC_GENCODE (tests/harness/lib.sh: cb_cuda_toolkit, cb_gencode, as
# tests/gpu/build-gpu-tests.sh).  bench/*.py are scripts: nothing to build.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
out=$1
src=$(cd "$(dirname "$0")" && pwd)
. "$src/../tests/harness/lib.sh"
cb_cuda_toolkit build-bench
nvcc=$cb_nvcc cuda=$cb_cuda stubs=$cb_stubs
gencode=$(cb_gencode)
mkdir -p "$out"
set -x
# The stub only satisfies the linker; at run time the real libcuda.so.1 loads.
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$cuda/include" "$src/bench_copies.c" \
    -o "$out/bench_copies" -L"$stubs" -lcuda -ldl -pthread
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$cuda/include" "$src/bench_tiles.c" \
    -o "$out/bench_tiles" -L"$stubs" -lcuda -ldl
# shellcheck disable=SC2086
"$nvcc" -std=c++17 -O2 $gencode -Xcompiler -Wall,-Wextra "$src/kv_swap.cu" -o "$out/kv_swap" -L"$stubs" -lcuda
# shellcheck disable=SC2086
"$nvcc" -std=c++17 -O2 $gencode -Xcompiler -Wall,-Wextra "$src/bench_launch.cu" -o "$out/bench_launch" -ldl
# shellcheck disable=SC2086
"$nvcc" -std=c++17 -O2 $gencode -Xcompiler -Wall,-Wextra "$src/load_bench.cu" -o "$out/load_bench" -lcublas
# shellcheck disable=SC2086
"$nvcc" -std=c++17 -O2 $gencode -Xcompiler -Wall,-Wextra "$src/prio_probe.cu" -o "$out/prio_probe" -lcublas
# shellcheck disable=SC2086
"$nvcc" -std=c++17 -O2 $gencode -Xcompiler -Wall,-Wextra "$src/stage_probe.cu" -o "$out/stage_probe" -lcublas \
    -L"$stubs" -lcuda
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$cuda/include" "$src/copy_path.c" -o "$out/copy_path" -L"$stubs" -lcuda
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$cuda/include" "$src/launch_hook.c" -o "$out/launch_hook" -L"$stubs" -lcuda -ldl
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$cuda/include" "$src/tiles_path.c" -o "$out/tiles_path" -L"$stubs" -lcuda
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$cuda/include" "$src/chunk_trace.c" -o "$out/chunk_trace" -L"$stubs" -lcuda
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$cuda/include" "$src/inproc_lone.c" -o "$out/inproc_lone" -ldl
${CC:-cc} -std=c11 -O2 -Wall -Wextra -pthread -I"$cuda/include" "$src/bench_threads.c" \
    -o "$out/bench_threads" -L"$stubs" -lcuda -ldl
