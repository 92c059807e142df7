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
# lines that name a function the headers do not declare.
#
# Usage: check_hooks_complete.sh [--list]   (--list: print the classification)
# Environment: top_srcdir (default .), CC (default cc), CUDA_CPPFLAGS.
set -eu
top_srcdir=${top_srcdir:-.}
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/headers.c" <<'C'
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaGL.h>
#include <cudaEGL.h>
#include <cudaVDPAU.h>
#include <cudaProfiler.h>
C
# shellcheck disable=SC2086
if ! $CC -E -P ${CUDA_CPPFLAGS:-} "$tmp/headers.c" >"$tmp/headers.i" 2>"$tmp/cpp.err"; then
    echo "check_hooks_complete: cannot preprocess the driver headers:" >&2
    cat "$tmp/cpp.err" >&2
    echo "(the GL, EGL and VDPAU headers come from Debian's libgl-dev libegl-dev libvdpau-dev)" >&2
    exit 1
fi

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

sed -n 's/^CB_HOOK(\([A-Za-z0-9_]*\),.*/\1/p' "$top_srcdir/src/hooks.def" | sort >"$tmp/hooked"
grep -v '^[[:space:]]*\(#\|$\)' "$top_srcdir/src/hooks.skip" >"$tmp/skip.lines" || true
awk '{ print $1 }' "$tmp/skip.lines" | sort >"$tmp/skipped"
cut -f1 "$tmp/declared" >"$tmp/declared.names"
cut -f1 "$tmp/relevant" >"$tmp/relevant.names"

if [ "${1:-}" = --list ]; then
    while IFS="$(printf '\t')" read -r name why; do
        if grep -qx "$name" "$tmp/hooked"; then where=hooks.def
        elif grep -qx "$name" "$tmp/skipped"; then where=hooks.skip
        else where=UNDECIDED; fi
        printf '%-48s %-11s %s\n' "$name" "$where" "$why"
    done <"$tmp/relevant"
    exit 0
fi

fail=0
problem() { echo "check_hooks_complete: $*" >&2; fail=1; }

# Relevant functions nobody decided about.
for name in $(sort "$tmp/hooked" "$tmp/skipped" | comm -23 "$tmp/relevant.names" -); do
    why=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$tmp/relevant")
    problem "$name ($why) is neither intercepted (src/hooks.def) nor left alone with a reason (src/hooks.skip)"
done
# Decided twice.
for name in $(comm -12 "$tmp/hooked" "$tmp/skipped"); do
    problem "$name is in both src/hooks.def and src/hooks.skip"
done
# Names the headers do not declare (cuGetProcAddress_v2_ptsz: declared by src/internal.h).
for name in $(grep -vx cuGetProcAddress_v2_ptsz "$tmp/hooked" | comm -23 - "$tmp/declared.names"); do
    problem "src/hooks.def: $name is not declared by the toolkit's headers"
done
for name in $(comm -23 "$tmp/skipped" "$tmp/declared.names"); do
    problem "src/hooks.skip: $name is not declared by the toolkit's headers"
done
# A skipped function that needs no decision is a stale line.
for name in $(comm -23 "$tmp/skipped" "$tmp/relevant.names" | comm -12 - "$tmp/declared.names"); do
    problem "src/hooks.skip: $name takes no stream, context or event and frees nothing: remove the line"
done
# Every skipped function has its reason.
awk 'NF < 2 { print $1 }' "$tmp/skip.lines" | while read -r name; do
    echo "check_hooks_complete: src/hooks.skip: $name has no reason" >&2
    echo x
done | grep -q x && fail=1

if [ "$fail" -ne 0 ]; then
    exit 1
fi
printf 'check_hooks_complete: %d functions declared, %d need a decision: %d intercepted, %d left alone\n' \
    "$(wc -l <"$tmp/declared")" "$(wc -l <"$tmp/relevant")" \
    "$(comm -12 "$tmp/relevant.names" "$tmp/hooked" | wc -l)" "$(wc -l <"$tmp/skipped")"
