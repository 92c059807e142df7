#!/bin/sh
# options-table.sh - print cubatch's option table, read from src/options.def.
#
#   tools/options-table.sh [--markdown | --help-lines | --shell] [OPTIONS.DEF]
#
#   --markdown    (default) a Markdown table for README.md
#   --help-lines  one line per option for `cubatch --help`:
#                   --NAME=VALUE  (CUBATCH_NAME, default D[, range]) doc
#   --shell       one case arm per option for the launcher's flag parser:
#                   NAME) echo TYPE ;;   (NAME spelled with '-', as the flag is)
#
# OPTIONS.DEF defaults to src/options.def next to this script.  options.def is the
# only list of options: the launcher's --help and flags and the README table are
# all generated from it by this script, so they cannot drift apart.
#
# The rows are C (X-macro calls, see the comment at the top of options.def):
#   CB_OPTION(name, TYPE, default, min, max, "values", "doc")
# The parser below skips comments, keeps string literals whole and splits the
# arguments on the commas at parenthesis depth 1, so a row may span lines and a
# doc string may contain commas.  Numbers may be plain integers or of the form
# ((uint64_t)A << B); anything else is printed as written.
set -eu

mode=markdown
case ${1:-} in
--markdown|--help-lines|--shell) mode=${1#--}; shift ;;
-h|--help) sed -n '2,19p' "$0"; exit 0 ;;
-*) echo "options-table.sh: unknown option '$1'" >&2; exit 2 ;;
esac
def=${1:-$(dirname "$0")/../src/options.def}
[ -r "$def" ] || { echo "options-table.sh: cannot read $def" >&2; exit 1; }

awk -v mode="$mode" '
# ---- C lexing: collect every CB_OPTION(...) call as an array of arguments ----
{ text = text $0 "\n" }
END {
    n = length(text); i = 1; nrows = 0
    while (i <= n) {
        c = substr(text, i, 1); c2 = substr(text, i, 2)
        if (c2 == "/*") { j = index(substr(text, i + 2), "*/"); i = (j ? i + j + 3 : n + 1); continue }
        if (c2 == "//") { j = index(substr(text, i), "\n"); i = (j ? i + j : n + 1); continue }
        if (c == "\"") { i = skip_string(i) ; continue }
        if (substr(text, i, 9) == "CB_OPTION" && !isident(substr(text, i - 1, 1)) &&
            !isident(substr(text, i + 9, 1))) {
            i = parse_call(i + 9); continue
        }
        i++
    }
    if (nrows == 0) { print "options-table.sh: no CB_OPTION rows found" > "/dev/stderr"; exit 1 }
    emit()
}
function isident(ch) { return ch ~ /[A-Za-z0-9_]/ }
# index just past the string literal starting at i
function skip_string(i,    ch) {
    for (i++; i <= n; i++) {
        ch = substr(text, i, 1)
        if (ch == "\\") { i++; continue }
        if (ch == "\"") return i + 1
    }
    return n + 1
}
# text[i..] is "(" args ")" (after optional blanks); store the row, return the index after it
function parse_call(i,    depth, start, ch, nargs, k, a) {
    while (substr(text, i, 1) ~ /[ \t\n]/) i++
    if (substr(text, i, 1) != "(") return i
    depth = 1; i++; start = i; nargs = 0
    while (i <= n && depth > 0) {
        ch = substr(text, i, 1)
        if (ch == "\"") { i = skip_string(i); continue }
        if (ch == "/" && substr(text, i + 1, 1) == "*") {   # comment inside a row: blank it
            k = index(substr(text, i + 2), "*/"); k = (k ? k + 3 : n - i + 1)
            text = substr(text, 1, i - 1) sprintf("%" k "s", "") substr(text, i + k)
            i += k; continue
        }
        if (ch == "(") depth++
        else if (ch == ")") depth--
        if ((ch == "," && depth == 1) || depth == 0) {
            a = substr(text, start, i - start)
            gsub(/^[ \t\n]+|[ \t\n]+$/, "", a)
            arg[nrows + 1, ++nargs] = a
            start = i + 1
        }
        i++
    }
    if (nargs != 7) {
        printf "options-table.sh: a CB_OPTION row has %d arguments, expected 7: %s\n", nargs, arg[nrows + 1, 1] > "/dev/stderr"
        exit 1
    }
    nrows++
    return i
}
# the value of one or more adjacent string literals
function cstring(s,    out, k, ch, inq) {
    out = ""; inq = 0
    for (k = 1; k <= length(s); k++) {
        ch = substr(s, k, 1)
        if (!inq) { if (ch == "\"") inq = 1; continue }
        if (ch == "\\") { k++; ch = substr(s, k, 1); if (ch == "n") ch = " "; out = out ch; continue }
        if (ch == "\"") { inq = 0; continue }
        out = out ch
    }
    return out
}
# a number written as an integer, or as ((type)A << B); "" if neither
function cnumber(s,    t, p) {
    t = s
    gsub(/\([a-z_0-9 ]+_t\)|\(unsigned( long)*\)|[() \t\n]|ULL|UL|LL|U|L/, "", t)
    if (t ~ /^[0-9]+$/) return t + 0
    if (t ~ /^[0-9]+<<[0-9]+$/) { p = index(t, "<<"); return substr(t, 1, p - 1) * 2 ^ substr(t, p + 2) }
    return ""
}
# bytes with the largest exact binary suffix: 1048576 -> 1M
function bytes(v,    u, k) {
    u = "KMGT"
    for (k = 4; k >= 1; k--)
        if (v >= 1024 ^ k && v % (1024 ^ k) == 0) return sprintf("%.0f%s", v / 1024 ^ k, substr(u, k, 1))
    return sprintf("%.0f", v)
}
function num(type, s,    v) {
    v = cnumber(s)
    if (v == "") return s
    return (type == "SIZE") ? bytes(v) : sprintf("%.0f", v)
}
function dashed(name,    s) { s = name; gsub(/_/, "-", s); return s }
function envname(name) { return "CUBATCH_" toupper(name) }
function placeholder(r, type,    v) {
    if (type == "BOOL") return "0|1"
    if (type == "UINT") return "N"
    if (type == "SIZE") return "BYTES"
    if (type == "ENUM") return cstring(arg[r, 6])
    if (arg[r, 1] ~ /file$/) return "FILE"
    return "TEXT"
}
function default_of(r, type,    w, nw) {
    if (type == "ENUM") {
        nw = split(cstring(arg[r, 6]), w, "|")
        v = cnumber(arg[r, 3])
        return (v != "" && v + 1 <= nw) ? w[v + 1] : arg[r, 3]
    }
    if (type == "STRING") return (arg[r, 3] ~ /^"/) ? cstring(arg[r, 3]) : "unset"
    return num(type, arg[r, 3])
}
function range_of(r, type) {
    if (type == "UINT" || type == "SIZE") return num(type, arg[r, 4]) ".." num(type, arg[r, 5])
    return ""
}
function emit(    r, name, type, d, rg, mdv) {
    if (mode == "markdown") {
        print "| Option | Environment variable | Values | Default | Meaning |"
        print "| --- | --- | --- | --- | --- |"
    }
    for (r = 1; r <= nrows; r++) {
        name = arg[r, 1]; type = arg[r, 2]
        d = default_of(r, type); rg = range_of(r, type)
        if (mode == "shell") {
            printf "    %s) echo %s ;;\n", dashed(name), type
        } else if (mode == "help-lines") {
            printf "  --%s=%s  (%s, default %s%s) %s\n", dashed(name), placeholder(r, type),
                envname(name), d, (rg != "" ? ", " rg : ""), cstring(arg[r, 7])
        } else {
            mdv = placeholder(r, type)
            if (rg != "") mdv = mdv " (" rg ")"
            gsub(/\|/, "\\|", mdv)
            printf "| `--%s` | `%s` | %s | `%s` | %s |\n", dashed(name), envname(name), mdv, d,
                mdcell(cstring(arg[r, 7]))
        }
    }
}
function mdcell(s) { gsub(/\|/, "\\|", s); return s }
' "$def"
