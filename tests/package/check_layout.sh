#!/bin/sh
# The words every copy reads sit together (docs/design.md section 8): each
# global marked CB_COPY_PATH in src/ is in the library's cb.copy_path section,
# each thread-local marked CB_TLS_COPY_PATH in .tdata, and the two stay small.
# The names are read from the sources, so a word marked there and placed
# elsewhere by a later build (a renamed section, a lost attribute) fails here.
lib=${top_builddir:-.}/src/.libs/libcubatch.so
src=${top_srcdir:-.}/src
[ -f "$lib" ] || { echo "check_layout: $lib not built"; exit 1; }
# "NAME CB_COPY_PATH" in a definition, or "CB_TLS_COPY_PATH TYPE NAME[, NAME...];"
globals=$(sed -n 's/.*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\)\(\[[^]]*\]\)\{0,1\} CB_COPY_PATH[ ;=].*/\1/p' "$src"/*.c | sort -u)
tls=$(sed -n 's/^\(static \)\{0,1\}CB_TLS_COPY_PATH \([^;=]*\)[;=].*/\2/p' "$src"/*.c |
      awk -F, '{ n = split($1, w, /[ *]+/); print w[n]; for (i = 2; i <= NF; i++) { gsub(/[ *]/, "", $i); print $i } }' |
      sort -u)
[ "$(printf '%s\n' "$globals" | grep -c .)" -ge 8 ] || { echo "check_layout: found only: $globals"; exit 1; }
[ "$(printf '%s\n' "$tls" | grep -c .)" -ge 6 ] || { echo "check_layout: found only: $tls"; exit 1; }
index_of() { readelf -SW "$lib" | sed -n "s/^ *\[ *\([0-9]*\)\] $1 .*/\1/p"; }
# the field K places after section NAME's name in readelf -S: 2 its address, 4 its size
section_field() { readelf -SW "$lib" | awk -v s="$1" -v k="$2" '$0 ~ "] " s " " { for (i = 1; i <= NF; i++) if ($i == s) print $(i + k) }'; }
size_of() { section_field "$1" 4; }
# the index of the section holding symbol NAME
section_of() { readelf -sW "$lib" | awk -v n="$1" '$8 == n { print $7; exit }'; }
hot=$(index_of 'cb\.copy_path') tdata=$(index_of '\.tdata')
[ -n "$hot" ] && [ -n "$tdata" ] || { echo "check_layout: no cb.copy_path or .tdata section"; exit 1; }
fail=0
for name in $globals; do
    ndx=$(section_of "$name")
    [ "$ndx" = "$hot" ] || { echo "check_layout: $name is in section $ndx, not cb.copy_path ($hot)"; fail=1; }
done
for name in $tls; do
    ndx=$(readelf -sW "$lib" | awk -v n="$name" '$8 == n && $4 == "TLS" { print $7; exit }')
    [ "$ndx" = "$tdata" ] || { echo "check_layout: $name is in section $ndx, not .tdata ($tdata)"; fail=1; }
done
# a few cache lines each: a large array marked by mistake would spread them again
# (the globals: the options' values, 144 bytes, and two words per direction of
# the policy, 64, among them)
for limit in cb.copy_path:320 .tdata:256; do
    s=${limit%:*} max=${limit#*:}
    size=$(printf '%d' "0x$(size_of "$s")")
    [ "$size" -le "$max" ] || { echo "check_layout: $s holds $size bytes (at most $max)"; fail=1; }
done
# The copy path's page: cb.copy_path begins a page, and cb.copy_path_page
# (the real functions' addresses, the count of active runs) ends on it.
path_at=$(printf '%d' "0x$(section_field cb.copy_path 2)")
page_at=$(printf '%d' "0x$(section_field cb.copy_path_page 2)")
page_end=$((page_at + $(printf '%d' "0x$(size_of cb.copy_path_page)")))
[ $((path_at % 4096)) = 0 ] || { echo "check_layout: cb.copy_path does not begin a page (at $path_at)"; fail=1; }
[ $(((page_end - 1) / 4096)) = $((path_at / 4096)) ] ||
    { echo "check_layout: cb.copy_path_page ends at $page_end, off cb.copy_path's page ($path_at)"; fail=1; }
page_ndx=$(index_of 'cb\.copy_path_page')
for name in cb_real cb_active; do
    ndx=$(section_of "$name")
    [ "$ndx" = "$page_ndx" ] || { echo "check_layout: $name is in section $ndx, not cb.copy_path_page"; fail=1; }
done
# The lone copy's code: the functions marked CB_HOT_CODE in src/, the copy
# wrappers (COPY rows of hooks.def) and those of hot_hooks.def lie together, no
# other function among them (one that lost its mark lies elsewhere in .text),
# within three pages unless a sanitizer's instrumentation makes them larger.
hot_code=$( (sed -n 's/^\(static \)\{0,1\}\(__attribute__((noinline)) \)\{0,1\}CB_HOT_CODE [^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\3/p' "$src"/*.c
        sed -n 's/^CB_HOOK(\([A-Za-z0-9_]*\), [01], COPY,.*/\1/p' "$src/hooks.def"
        sed -n 's/^CB_HOT_HOOK(\([A-Za-z0-9_]*\))$/\1/p' "$src/hot_hooks.def") | sort -u)
[ "$(printf '%s\n' "$hot_code" | grep -c .)" -ge 20 ] || { echo "check_layout: hot code found only: $hot_code"; exit 1; }
# "ADDRESS SIZE NAME" of every function, in address order, NAME marked hot or not
funcs=$(nm -S -n "$lib" | awk -v names="$(echo $hot_code)" '
    BEGIN { n = split(names, w, " "); for (i = 1; i <= n; i++) want[w[i]] = 1 }
    NF == 4 && ($3 == "t" || $3 == "T") { print $1, $2, $4, ($4 in want) ? "hot" : "-" }')
missing=$(for name in $hot_code; do printf '%s\n' "$funcs" | awk -v n="$name" '$3 == n { f = 1 } END { exit !f }' || echo "$name"; done)
[ -z "$missing" ] || { echo "check_layout: no function of that name in the library: $missing"; fail=1; }
# the rows from the first hot function to the last: all hot
between=$(printf '%s\n' "$funcs" | awk '{ row[NR] = $0 } $4 == "hot" { if (!first) first = NR; last = NR }
    END { for (i = first; i <= last; i++) if (row[i] !~ / hot$/) print row[i] }')
[ -z "$between" ] || { echo "check_layout: among the lone copy's code: $between"; fail=1; }
first=$(printf '%s\n' "$funcs" | awk '$4 == "hot" { print $1; exit }')
end=$(printf '%s\n' "$funcs" | awk '$4 == "hot" { e = $1 " " $2 } END { print e }')
span=$((0x${end% *} + 0x${end#* } - 0x$first))
if nm "$lib" | grep -q '__[at]san_'; then
    echo "check_layout: a sanitizer's build: the lone copy's code spans $span bytes, not limited"
elif [ "$span" -gt 12288 ]; then
    echo "check_layout: the lone copy's code spans $span bytes (at most 12288)"; fail=1
fi
[ "$fail" = 0 ] || exit 1
echo "check_layout: $(echo $globals | wc -w) globals in cb.copy_path, $(echo $tls | wc -w) thread-locals in .tdata," \
    "cb_real and cb_active on their page, $(echo $hot_code | wc -w) functions of the lone copy in $span bytes"
