#!/bin/sh
# check_fuzz.sh - the fuzzer's `make check` test: the fuzzer leaks nothing itself,
# the README lists every saved regression and calls none open, then every saved
# regression is replayed and a fixed budget of generated programs (seeds 1-2000,
# stopped after 90 s) is run.  New divergences are saved under the build tree
# (tests/fuzz/new-regressions).
: "${top_builddir:=.}"
: "${top_srcdir:=.}"
export top_builddir top_srcdir
fuzz=$top_builddir/tests/fuzz/fuzz
readme=$top_srcdir/tests/fuzz/README.md

# No leak in the fuzzer: LeakSanitizer in an AddressSanitizer build (as a user
# runs it, ASAN_OPTIONS unset), memcheck in the plain build.
if ldd "$fuzz" 2>/dev/null | grep -q libasan; then
    (unset ASAN_OPTIONS; "$fuzz" gen --seed 7 --len 40 >/dev/null) ||
        { echo "check_fuzz: the fuzzer leaks (LeakSanitizer, above)"; exit 1; }
elif command -v valgrind >/dev/null 2>&1 && ! ldd "$fuzz" 2>/dev/null | grep -q libtsan; then
    valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9 \
        "$fuzz" gen --seed 7 --len 40 >/dev/null ||
        { echo "check_fuzz: the fuzzer leaks (memcheck, above)"; exit 1; }
fi
echo "check_fuzz: the fuzzer itself leaks nothing"

# The README's account of the regressions: all there, none called open.
for f in "$top_srcdir"/tests/fuzz/regressions/*.ops; do
    n=$(basename "$f")
    grep -q "\`$n\`" "$readme" || { echo "check_fuzz: tests/fuzz/README.md does not list $n"; exit 1; }
done
if grep -n -i '(open' "$readme"; then
    echo "check_fuzz: tests/fuzz/README.md calls a regression open, but make check replays them all and they pass"
    exit 1
fi

exec "$top_srcdir/tests/fuzz/run-fuzz.sh" --seeds 1-2000 --seconds 90 --len 150 -j 2 \
    --save "$top_builddir/tests/fuzz/new-regressions"
