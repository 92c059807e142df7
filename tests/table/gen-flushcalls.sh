#!/bin/sh
# gen-flushcalls.sh SRCDIR BUILDSRC - write C (stdout) that calls every row of
# SRCDIR/hooks.def that flushes (every action but COPY and RESOLVER) once, for
# tests/table/flushcall.c: each parameter a zero-initialised local of its declared
# type, then filled by FILL() (streams, contexts, callbacks the test chose), then
# the exported function called by name.  Generated at build time from the table,
# so the test follows the table.
#
# The table is read by the C preprocessor through hooks_each.h (made from
# src/actions.def in BUILDSRC, the build tree's src/), as the library reads it:
# one line per row, "CB_ROW name ACTION (parameters)"; only the parameter list
# is split here.  $CC (default cc) runs it.
set -eu
src=$1 built=$2
printf '%s\n' \
    '#define CB_ON_OTHER(name, ptsz, action, aarg, params, args) CB_ROW name action params' \
    '#define CB_ON_COPY(...)' \
    '#define CB_ON_RESOLVER(...)' \
    '#include "hooks_each.h"' |
${CC:-cc} -E -P -I"$built" -I"$src" -x c - |
awk '
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
# split s (no outer parentheses) on top-level commas into a[1..n]
function split_top(s, a,    n, i, c, depth, cur) {
    n = 0; depth = 0; cur = ""
    for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "(") depth++
        if (c == ")") depth--
        if (c == "," && depth == 0) { a[++n] = trim(cur); cur = ""; continue }
        cur = cur c
    }
    if (trim(cur) != "") a[++n] = trim(cur)
    return n
}
$1 == "CB_ROW" {
    name = $2; action = $3
    params = $0; sub(/^[^(]*\(/, "", params); sub(/\)[ \t]*$/, "", params)
    names[++count] = name; actions[count] = action
    printf "static void call_%s(void)\n{\n", name
    np = (trim(params) == "void") ? 0 : split_top(params, p)
    args = ""
    for (i = 1; i <= np; i++) {
        decl = p[i]
        arg = decl; sub(/.*[ *]/, "", arg)
        printf "    %s = {0};\n    FILL(%s);\n", decl, arg
        args = args (i > 1 ? ", " : "") arg
    }
    printf "    g_rc = %s(%s);\n}\n", name, args
}
END {
    if (count == 0) { print "gen-flushcalls: no row read from the table" > "/dev/stderr"; exit 1 }
    print "static const struct flushcall { const char *name, *action; void (*call)(void); } flushcalls[] = {"
    for (i = 1; i <= count; i++)
        printf "    {\"%s\", \"%s\", call_%s},\n", names[i], actions[i], names[i]
    print "};"
}'
