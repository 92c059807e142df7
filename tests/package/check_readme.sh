#!/bin/sh
# check_readme.sh - the README says only what the tree holds: at most 350
# lines (the rest is in docs/), every path it names exists (a built tool by its
# source), and (tests/package/check_facts.py) every measured figure it and the
# man pages give (speed-ups, times, percentages, A/A spreads) is one of the
# run of bench/RESULTS.md that the README names once ("Figures:
# bench/RESULTS.md, run LABEL"), every count it, docs/testing.md and the man
# pages name (functions wrapped and skipped, options, counters, tests,
# mutants...) the count of its source.  Sources only: it runs in distcheck's tree.
srcdir=${top_srcdir:-.}
readme=$srcdir/README.md
results=$srcdir/bench/RESULTS.md
fail=0
bad() { echo "check_readme: $*"; fail=1; }
lines=$(wc -l <"$readme")
[ "$lines" -le 350 ] || bad "README.md has $lines lines (at most 350: move the long explanations to docs/)"
for p in $(grep -oE '(^|[^A-Za-z0-9_./-])(src|bench|docs|tests|tools|man|examples|include|python|debian)/[A-Za-z0-9_./-]*[A-Za-z0-9_]' "$readme" |
           sed 's/^[^a-z]//' | sort -u); do
    # a built tool counts by its source (tools/options-doc from tools/options-doc.c)
    [ -e "$srcdir/$p" ] || [ -e "$srcdir/$p.c" ] || [ -e "$srcdir/$p.in" ] ||
        bad "README.md names $p, which is not in the tree"
done
if command -v python3 >/dev/null 2>&1; then
    python3 "$srcdir/tests/package/check_facts.py" "$srcdir" || fail=1
else
    echo "check_readme: no python3: the figures and counts are not checked"
    [ $fail = 0 ] && exit 77
fi
[ $fail = 0 ] && echo "check_readme: ok: $lines lines, its paths in the tree"
exit $fail
