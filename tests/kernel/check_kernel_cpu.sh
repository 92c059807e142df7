#!/bin/sh
# check_kernel_cpu.sh - the copy kernel's device code run on the CPU
# (tests/kernel/kernel_cpu.cc), built here with the host C++ compiler
# (CXX, else g++, which nvcc needs anyway) under AddressSanitizer and UBSan.
# Skips (77) without a C++ compiler.
set -u
top=${srcdir:-$(dirname "$0")/../..}
cxx=${CXX:-g++}
command -v "$cxx" >/dev/null 2>&1 || { echo "check_kernel_cpu: no C++ compiler ($cxx): skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cxx" -std=c++17 -O1 -g -Wall -Wextra -Wno-unknown-pragmas -fsanitize=address,undefined -fno-sanitize-recover=all \
    -I"$top/src" -I"$top/tests/kernel" "$top/tests/kernel/kernel_cpu.cc" -o "$tmp/kernel_cpu" || exit 99
ASAN_OPTIONS=detect_leaks=0 "$tmp/kernel_cpu" "${CB_KERNEL_TRIALS:-1500}"
