# lib.sh - what the test, example and benchmark scripts share; sourced
# (. "$(dirname "$0")/../harness/lib.sh" from tests/gpu), POSIX sh:
#
#   cb_have_gpu               true when the real driver's device node is there
#   cb_gpu_or_skip NAME       exit 77 ("NAME: no GPU here, skipped") without one
#   cb_real_driver_only       the simulated driver (tests/sim) out of
#                             LD_LIBRARY_PATH, LD_PRELOAD unset: the real
#                             driver, never the build tree's stand-in
#   cb_find_lib PATH...       the first PATH that is a file, made absolute
#                             (status 1 when none)
#   cb_cuda_toolkit NAME      nvcc ($NVCC; else the one configure found, from the
#                             Makefile of the build tree $top_builddir or the
#                             current folder; else on PATH), the toolkit
#                             ($CUDA_HOME, else nvcc's), its libcuda.so stub:
#                             sets cb_nvcc, cb_cuda, cb_stubs, cb_cudalib; exits 1
#                             with "NAME: ..."
#   cb_gencode                the nvcc -gencode flags: $NVCC_GENCODE, else SASS
#                             for sm_90 (the H200 the project measures on) and
#                             PTX for compute_75 (any later GPU)

cb_have_gpu() { [ -e /dev/nvidiactl ]; }

cb_gpu_or_skip() {
    cb_have_gpu && return 0
    echo "$1: no GPU here (no /dev/nvidiactl), skipped"
    exit 77
}

cb_real_driver_only() {
    if [ -n "${LD_LIBRARY_PATH:-}" ]; then
        LD_LIBRARY_PATH=$(printf '%s' "$LD_LIBRARY_PATH" | tr ':' '\n' | grep -v 'tests/sim' | paste -sd: -)
        export LD_LIBRARY_PATH
    fi
    unset LD_PRELOAD
}

cb_find_lib() {
    for cb_c in "$@"; do
        if [ -n "$cb_c" ] && [ -f "$cb_c" ]; then
            printf '%s/%s\n' "$(cd "$(dirname "$cb_c")" && pwd)" "$(basename "$cb_c")"
            return 0
        fi
    done
    return 1
}

cb_cuda_toolkit() {
    cb_nvcc=${NVCC:-}
    if [ -z "$cb_nvcc" ] && [ -f "${top_builddir:-.}/Makefile" ]; then
        cb_nvcc=$(sed -n 's/^NVCC = *//p' "${top_builddir:-.}/Makefile" | head -1)
    fi
    cb_nvcc=${cb_nvcc:-nvcc}
    command -v "$cb_nvcc" >/dev/null 2>&1 || { echo "$1: nvcc not found (set NVCC, or put it on PATH)" >&2; exit 1; }
    cb_cuda=${CUDA_HOME:-$(dirname "$(dirname "$(command -v "$cb_nvcc")")")}
    cb_stubs=
    for cb_d in "$cb_cuda/lib64/stubs" "$cb_cuda/targets/x86_64-linux/lib/stubs" "$cb_cuda/lib/stubs"; do
        [ -f "$cb_d/libcuda.so" ] && { cb_stubs=$cb_d; break; }
    done
    [ -n "$cb_stubs" ] || { echo "$1: no libcuda.so stub under $cb_cuda (set CUDA_HOME)" >&2; exit 1; }
    cb_cudalib=$(dirname "$cb_stubs")
}

cb_gencode() {
    printf '%s\n' "${NVCC_GENCODE:--gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75}"
}
