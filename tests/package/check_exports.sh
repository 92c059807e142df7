#!/bin/sh
# Only interposed symbols (cu*), dlsym, the cubatch_ API and the launcher's option
# check may be exported: everything else is hidden, so nothing of ours can clash
# with the program's; and nothing test-only is exported (the unit tests link the
# internals instead).  The library binds its own functions to itself
# (-Bsymbolic-functions): no relocation names a function it defines.
lib=${top_builddir:-.}/src/.libs/libcubatch.so
[ -f "$lib" ] || { echo "check_exports: $lib not built"; exit 1; }
syms=$(nm -D --defined-only "$lib" | awk '{print $3}')
bad=$(printf '%s\n' "$syms" | grep -v -E '^(cu[A-Z][A-Za-z0-9_]*|dlsym|cubatch_[a-z_]+|cubatch__check_options)$' || true)
if [ -n "$bad" ]; then
    echo "check_exports: unexpected exported symbols:"; echo "$bad"; exit 1
fi
n=$(printf '%s\n' "$syms" | grep -c -E '^cu[A-Z]')
[ "$n" -ge 200 ] || { echo "check_exports: only $n cu* symbols exported"; exit 1; }
for s in dlsym cuGetProcAddress cuGetProcAddress_v2 cuGetProcAddress_v2_ptsz cuMemcpyAsync \
         cuMemcpyAsync_ptsz cuMemcpyHtoDAsync_v2 cuMemcpyHtoDAsync_v2_ptsz cuMemcpyDtoHAsync_v2 \
         cuMemcpyDtoHAsync_v2_ptsz cuMemcpyDtoDAsync_v2 cuMemcpyDtoDAsync_v2_ptsz cubatch_flush; do
    printf '%s\n' "$syms" | grep -qx "$s" || { echo "check_exports: $s is not exported"; exit 1; }
done
# the library must not depend on libcuda at link time: it opens the driver itself
if readelf -d "$lib" | grep -q 'NEEDED.*libcuda'; then
    echo "check_exports: libcubatch links against libcuda"; exit 1
fi
# relocations that name one of the library's own exported functions
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$syms" | sort -u >"$tmp/own"
readelf -rW "$lib" | awk 'NF >= 5 && $1 ~ /^[0-9a-f]+$/ { sub(/@.*/, "", $5); print $5 }' | sort -u >"$tmp/named"
self=$(comm -12 "$tmp/own" "$tmp/named")
if [ -n "$self" ]; then
    echo "check_exports: relocations against the library's own functions (link with -Bsymbolic-functions):"
    printf '%s\n' "$self" | head -20
    exit 1
fi
echo "check_exports: $n cu* wrappers, dlsym and the cubatch_ API exported; nothing else; no self-relocations"
