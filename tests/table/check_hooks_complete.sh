#!/bin/sh
# check_hooks_complete.sh - every driver function that could observe, or order
# itself against, a deferred copy is intercepted (a row of src/hooks.def) or was
# looked at and left alone on purpose (a line of src/hooks.skip with its reason).
#
# The toolkit's driver headers (cuda.h, cudaGL.h, cudaEGL.h, cudaVDPAU.h,
# cudaProfiler.h, preprocessed as the library sees them) are read and every
# function is listed that
#   - takes a stream (CUstream, CUstream *, CUlaunchConfig *, CUDA_LAUNCH_PARAMS *,
#     CUDA_GRAPH_INSTANTIATE_PARAMS *), a context or green context, or an event; or
#   - by its name frees, unmaps, releases, unregisters, destroys, unloads, trims,
#     closes, resets, detaches or changes access to something; or
#   - by its name launches, copies, sets memory, synchronizes, waits, signals,
#     writes, maps, prefetches, advises, decompresses, discards, checkpoints or
#     profiles (work that may run on an implicit stream, like cuLaunch).
# Each such function must be in exactly one of the two files.  A new toolkit that
# adds one makes this test fail until someone decides.  It also fails on rows or
# lines that name a function neither the headers nor src/driver_api.list declare.
#
# src/driver_api.list is every function the newest headers checked declare (the
# library's net takes any other name as unknown: docs/design.md rule 17).  Headers
# as new as the list must declare nothing it lacks; newer ones fail the test until
# the list is made again from them (--api) and their new functions decided.
#
# Every set of headers given is checked: CUDA_CPPFLAGS (what the library was
# compiled against), CUDA_TOOLKIT_CPPFLAGS (the toolkit's, when configure's
# --with-cuda-headers named newer ones) and CUBATCH_NEWEST_CUDA_INCLUDE (a folder
# holding a newer cuda.h, read before the toolkit's), each where set.
#
# Usage: check_hooks_complete.sh [--list | --api]
#   --list  print the classification (of CUDA_CPPFLAGS's headers)
#   --api   print src/driver_api.list as those headers make it
# Environment: top_srcdir (default .), CC (default cc), the three above.
set -eu
top_srcdir=${top_srcdir:-.}
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mode=${1:-check}
api=$top_srcdir/src/driver_api.list
api_version=$(sed -n 's/^version \([0-9][0-9]*\)$/\1/p' "$api")
grep "^cu" "$api" >"$tmp/api.names" || true
if ! LC_ALL=C sort -c "$tmp/api.names" 2>/dev/null || [ -z "$api_version" ]; then
    echo "check_hooks_complete: src/driver_api.list: needs a 'version N' line and its names sorted (LC_ALL=C)" >&2
    exit 1
fi

sed -n 's/^CB_HOOK(\([A-Za-z0-9_]*\),.*/\1/p; s/^CB_HOOK_SINCE([0-9]*, *\([A-Za-z0-9_]*\),.*/\1/p' \
    "$top_srcdir/src/hooks.def" | sort >"$tmp/hooked"
grep -v '^[[:space:]]*\(#\|$\)' "$top_srcdir/src/hooks.skip" >"$tmp/skip.lines" || true
awk '{ print $1 }' "$tmp/skip.lines" | sort >"$tmp/skipped"

fail=0
problem() { echo "check_hooks_complete: $*" >&2; fail=1; }

# check_headers FLAGS: the decisions against one set of headers.
check_headers() {
flags=$1
cat >"$tmp/headers.c" <<'C'
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaGL.h>
#include <cudaEGL.h>
#include <cudaVDPAU.h>
#include <cudaProfiler.h>
C
# shellcheck disable=SC2086
if ! $CC -E -P $flags "$tmp/headers.c" >"$tmp/headers.i" 2>"$tmp/cpp.err"; then
    echo "check_hooks_complete: cannot preprocess the driver headers ($flags):" >&2
    cat "$tmp/cpp.err" >&2
    echo "(the GL, EGL and VDPAU headers come from Debian's libgl-dev libegl-dev libvdpau-dev)" >&2
    exit 1
fi
# shellcheck disable=SC2086
version=$(printf '#include <cuda.h>\nCUDA_VERSION\n' | $CC -E -P $flags -x c - | tail -n 1 | tr -d ' ')

# name<TAB>parameters for every CUresult cu* declaration.
awk '
{ text = text " " $0 }
END {
    n = split(text, stmt, /[;{}]/)
    for (i = 1; i <= n; i++) {
        s = stmt[i]
        if (!match(s, /CUresult[ \t]+cu[A-Za-z0-9_]+[ \t]*\(/)) continue
        d = substr(s, RSTART)
        sub(/^CUresult[ \t]+/, "", d)
        name = d; sub(/[ \t]*\(.*/, "", name)
        params = d; sub(/^[^(]*\(/, "", params); sub(/\)[ \t]*$/, "", params)
        gsub(/[ \t]+/, " ", params)
        if (!(name in seen)) { seen[name] = 1; print name "\t" params }
    }
}' "$tmp/headers.i" | sort >"$tmp/declared"

# name<TAB>why, for the functions that must be decided.
awk -F'\t' '
{
    n = $1; p = " " $2 ","; why = ""
    if (p ~ /[ (]CUstream \*/) why = why " stream-pointer"
    else if (p ~ /[ (]CUstream [A-Za-z_]/) why = why " stream"
    if (p ~ /CUlaunchConfig/) why = why " launch-config"
    if (p ~ /CUDA_LAUNCH_PARAMS/) why = why " launch-params"
    if (p ~ /CUDA_GRAPH_INSTANTIATE_PARAMS/) why = why " instantiate-params"
    if (p ~ /CUcontext/) why = why " context"
    if (p ~ /CUgreenCtx/) why = why " green-context"
    if (p ~ /CUevent/) why = why " event"
    if (n ~ /Free|Unmap|Release|Unregister|Destroy|Unload|SetAccess|Trim|Close|Reset|Revoke|Detach/) why = why " frees"
    if (n ~ /Launch|Memcpy|Memset|Synchron|Wait|Signal|Write|Map|Prefetch|Advise|Decompress|Discard|Checkpoint|Profiler/) why = why " works"
    if (why != "") { sub(/^ /, "", why); print n "\t" why }
}' "$tmp/declared" >"$tmp/relevant"

cut -f1 "$tmp/declared" >"$tmp/declared.names"
cut -f1 "$tmp/relevant" >"$tmp/relevant.names"
# What these headers or the newest ones checked declare.
sort -u "$tmp/declared.names" "$tmp/api.names" >"$tmp/known.names"

if [ "$mode" = --api ]; then
    printf '# driver_api.list - every driver function (CUresult cu*) that the newest CUDA 13\n'
    printf '# headers checked declare (cuda.h, cudaGL.h, cudaEGL.h, cudaVDPAU.h,\n'
    printf '# cudaProfiler.h with __CUDA_API_VERSION_INTERNAL), with their CUDA_VERSION.\n'
    printf '# Made by tests/table/check_hooks_complete.sh --api; docs/design.md rule 17.\n'
    printf 'version %s\n' "$version"
    cat "$tmp/declared.names"
    exit 0
fi
if [ "$mode" = --list ]; then
    while IFS="$(printf '\t')" read -r name why; do
        if grep -qx "$name" "$tmp/hooked"; then where=hooks.def
        elif grep -qx "$name" "$tmp/skipped"; then where=hooks.skip
        else where=UNDECIDED; fi
        printf '%-48s %-11s %s\n' "$name" "$where" "$why"
    done <"$tmp/relevant"
    exit 0
fi

# Relevant functions nobody decided about.
for name in $(sort "$tmp/hooked" "$tmp/skipped" | comm -23 "$tmp/relevant.names" -); do
    why=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$tmp/relevant")
    problem "$name ($why) is neither intercepted (src/hooks.def) nor left alone with a reason (src/hooks.skip)"
done
# Decided twice.
for name in $(comm -12 "$tmp/hooked" "$tmp/skipped"); do
    problem "$name is in both src/hooks.def and src/hooks.skip"
done
# Names no header declares (cuGetProcAddress_v2_ptsz: declared by src/internal.h).
for name in $(grep -vx cuGetProcAddress_v2_ptsz "$tmp/hooked" | comm -23 - "$tmp/known.names"); do
    problem "src/hooks.def: $name is declared neither by the headers ($flags) nor in src/driver_api.list"
done
for name in $(comm -23 "$tmp/skipped" "$tmp/known.names"); do
    problem "src/hooks.skip: $name is declared neither by the headers ($flags) nor in src/driver_api.list"
done
# Headers at least as new as the list: the list has every function they declare.
if [ "$version" -ge "$api_version" ]; then
    for name in $(comm -23 "$tmp/declared.names" "$tmp/api.names"); do
        problem "$name (CUDA_VERSION $version) is not in src/driver_api.list (version $api_version): make it again with --api from these headers"
    done
    [ "$version" -eq "$api_version" ] ||
        problem "headers of CUDA_VERSION $version are newer than src/driver_api.list ($api_version): make it again with --api from them"
fi
# A skipped function that needs no decision is a stale line.
for name in $(comm -23 "$tmp/skipped" "$tmp/relevant.names" | comm -12 - "$tmp/declared.names"); do
    problem "src/hooks.skip: $name takes no stream, context or event and frees nothing: remove the line"
done
# Every skipped function has its reason.
awk 'NF < 2 { print $1 }' "$tmp/skip.lines" | while read -r name; do
    echo "check_hooks_complete: src/hooks.skip: $name has no reason" >&2
    echo x
done | grep -q x && fail=1

[ "$fail" -ne 0 ] ||
    printf 'check_hooks_complete: CUDA_VERSION %s: %d functions declared, %d need a decision: %d intercepted, %d left alone\n' \
        "$version" "$(wc -l <"$tmp/declared")" "$(wc -l <"$tmp/relevant")" \
        "$(comm -12 "$tmp/relevant.names" "$tmp/hooked" | wc -l)" "$(comm -12 "$tmp/relevant.names" "$tmp/skipped" | wc -l)"
}

if [ "$mode" != check ]; then
    check_headers "${CUDA_CPPFLAGS:-}"
    exit 0
fi
check_headers "${CUDA_CPPFLAGS:-}"
if [ -n "${CUDA_TOOLKIT_CPPFLAGS:-}" ] && [ "$CUDA_TOOLKIT_CPPFLAGS" != "${CUDA_CPPFLAGS:-}" ]; then
    check_headers "$CUDA_TOOLKIT_CPPFLAGS"
fi
if [ -n "${CUBATCH_NEWEST_CUDA_INCLUDE:-}" ]; then
    check_headers "-I$CUBATCH_NEWEST_CUDA_INCLUDE ${CUDA_TOOLKIT_CPPFLAGS:-${CUDA_CPPFLAGS:-}}"
fi
[ "$fail" -eq 0 ] || exit 1
