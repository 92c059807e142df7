#!/bin/sh
# check_fuzz.sh - the fuzzer's `make check` test: every saved regression, then a
# fixed budget of generated programs (seeds 1-2000, stopped after 90 s).  New
# divergences are saved under the build tree (tests/fuzz/new-regressions).
: "${top_builddir:=.}"
: "${top_srcdir:=.}"
export top_builddir top_srcdir
exec "$top_srcdir/tests/fuzz/run-fuzz.sh" --seeds 1-2000 --seconds 90 --len 150 -j 2 \
    --save "$top_builddir/tests/fuzz/new-regressions"
