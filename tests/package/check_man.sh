#!/bin/sh
# The man pages as make builds them: each renders without a single warning
# (groff -ww, or man --warnings where groff is missing), also when filled in
# for a long installation prefix, and cubatch(1) and
# cubatch(7) list every option of src/options.def, flag and variable.
b=${top_builddir:-.}
s=${top_srcdir:-.}
fail=0
ok() { echo "check_man: ok: $1"; }
bad() { echo "check_man: FAILED: $1"; fail=1; }

if command -v groff >/dev/null 2>&1; then
    render() { groff -ww -man -z "$1" 2>&1; }
    how='groff -ww -man -z'
elif command -v man >/dev/null 2>&1; then
    # shellcheck disable=SC2069 # the warnings (stderr) only, not the page
    render() { man --warnings -l "$1" 2>&1 >/dev/null; }
    how='man --warnings -l'
else
    echo "check_man: neither groff nor man is installed (Debian: groff-base): skipped"
    exit 77
fi

for page in cubatch.1 cubatch.7 cubatch-report.1; do
    f=$b/man/$page
    if [ ! -s "$f" ]; then
        bad "$f was not built"
        continue
    fi
    out=$(LC_ALL=C.UTF-8 MANWIDTH=80 render "$f")
    [ -z "$out" ] && ok "$page renders without warnings ($how)" || bad "$page: $out"
    grep -n '@[A-Za-z_]*@' "$f" && bad "$page: placeholder left"
done

# The same pages filled in for a long prefix (make distcheck installs under
# its build tree): an installed path must break, not overflow the line.
long=/$(printf 'a-very-long-installation-prefix/%.0s' 1 2 3 4)usr
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
for page in cubatch.1 cubatch.7 cubatch-report.1; do
    if ! sh "$s/man/fill.sh" "$s/man/$page.in" "$b/man/options.roff" \
        "$long/lib" "$long/libexec/cubatch" 0.0 >"$tmp/$page"; then
        bad "man/fill.sh failed on $page.in"
        continue
    fi
    out=$(LC_ALL=C.UTF-8 MANWIDTH=80 render "$tmp/$page")
    [ -z "$out" ] && ok "$page renders without warnings under a ${#long}-character prefix" \
        || bad "$page under a ${#long}-character prefix: $out"
done

for page in cubatch.1 cubatch.7; do
    for name in $(sed -n 's/^CB_OPTION(\([a-z_]*\),.*/\1/p' "$s/src/options.def"); do
        var=CUBATCH_$(printf '%s' "$name" | tr a-z A-Z)
        flag=$(printf '%s' "$name" | sed 's/_/\\\\-/g')
        grep -q "^\\\\fB\\\\-\\\\-$flag\\\\fR=.*\\\\fB$var\\\\fR" "$b/man/$page" || bad "$page lacks --$name ($var)"
    done
done
[ $fail -eq 0 ] && ok "cubatch.1 and cubatch.7 list every option of options.def"
exit $fail
