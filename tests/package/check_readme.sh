#!/bin/sh
# check_readme.sh - the README says only what the tree holds: at most 350
# lines (the rest is in docs/), every path it names exists (a built tool by its
# source), and every speed-up it gives (a figure such as 9.01×) is one
# bench/RESULTS.md records.
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
for f in $(grep -oE '[0-9]+\.[0-9]+×' "$readme" | sort -u); do
    n=${f%×}
    grep -q -- "$n" "$results" || bad "README.md gives $f, which bench/RESULTS.md does not record"
done
[ $fail = 0 ] && echo "check_readme: ok: $lines lines, its paths in the tree, its speed-ups in bench/RESULTS.md"
exit $fail
