#!/bin/sh
# gen-flushcalls.sh HOOKS_DEF - write C (stdout) that calls every non-copy,
# non-resolver row of src/hooks.def once, for tests/flushcall.c: each parameter
# a zero-initialised local of its declared type, then filled by FILL() (streams,
# contexts, callbacks the test chose), then the exported function called by name.
# Generated at build time from the table, so the test follows the table.
set -eu
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
function strip_parens(s) { s = trim(s); return substr(s, 2, length(s) - 2) }
/^CB_HOOK\(/ { row = ""; inrow = 1 }
inrow {
    row = row " " $0
    if ($0 ~ /\)\)[ \t]*$/) {
        inrow = 0
        sub(/^[ \t]*CB_HOOK\(/, "", row); sub(/\)[ \t]*$/, "", row)
        n = split_top(row, f)
        name = f[1]; action = f[3]; params = strip_parens(f[5])
        if (action == "COPY" || action == "RESOLVER") next
        names[++count] = name; actions[count] = action
        printf "static void call_%s(void)\n{\n", name
        np = (params == "void") ? 0 : split_top(params, p)
        args = ""
        for (i = 1; i <= np; i++) {
            decl = p[i]
            arg = decl; sub(/.*[ *]/, "", arg)
            printf "    %s = {0};\n    FILL(%s);\n", decl, arg
            args = args (i > 1 ? ", " : "") arg
        }
        printf "    g_rc = %s(%s);\n}\n", name, args
    }
}
END {
    print "static const struct flushcall { const char *name, *action; void (*call)(void); } flushcalls[] = {"
    for (i = 1; i <= count; i++)
        printf "    {\"%s\", \"%s\", call_%s},\n", names[i], actions[i], names[i]
    print "};"
}' "$1"
