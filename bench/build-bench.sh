#!/usr/bin/env bash
# Build the benchmark programs into DIR (needs nvcc and a C compiler; no GPU).
#
#   build-bench.sh DIR
#
# DIR/bench_copies, DIR/copy_path and DIR/bench_threads (C11, driver API, -lcuda), DIR/kv_swap and
# DIR/load_bench (runtime API).
# Environment: NVCC, CC, CUDA_HOME, NVCC_GENCODE (default: SASS for sm_90, the
# H200, plus its PTX).  bench/torch_foreach.py is a script: nothing to build.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
out=$1
src=$(cd "$(dirname "$0")" && pwd)
nvcc=${NVCC:-nvcc}
command -v "$nvcc" >/dev/null || { echo "build-bench: nvcc not found" >&2; exit 1; }
cuda=${CUDA_HOME:-$(dirname "$(dirname "$(command -v "$nvcc")")")}
stubs=
for d in "$cuda/lib64/stubs" "$cuda/targets/x86_64-linux/lib/stubs" "$cuda/lib/stubs"; do
    [ -f "$d/libcuda.so" ] && { stubs=$d; break; }
done
[ -n "$stubs" ] || { echo "build-bench: no libcuda.so stub under $cuda" >&2; exit 1; }
gencode=${NVCC_GENCODE:--gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90}
mkdir -p "$out"
set -x
# The stub only satisfies the linker; at run time the real libcuda.so.1 loads.
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$cuda/include" "$src/bench_copies.c" \
    -o "$out/bench_copies" -L"$stubs" -lcuda -ldl
# shellcheck disable=SC2086
"$nvcc" -std=c++17 -O2 $gencode -Xcompiler -Wall,-Wextra "$src/kv_swap.cu" -o "$out/kv_swap"
# shellcheck disable=SC2086
"$nvcc" -std=c++17 -O2 $gencode -Xcompiler -Wall,-Wextra "$src/load_bench.cu" -o "$out/load_bench"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$cuda/include" "$src/copy_path.c" -o "$out/copy_path" -L"$stubs" -lcuda
${CC:-cc} -std=c11 -O2 -Wall -Wextra -pthread -I"$cuda/include" "$src/bench_threads.c" \
    -o "$out/bench_threads" -L"$stubs" -lcuda -ldl
