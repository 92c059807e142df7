#!/usr/bin/env bash
# The timing-sensitive extras only (one copy + sync, copies then CPU work, enqueue
# cost), plain and under cubatch, alternating, ROUNDS times: a quick re-measure
# after a change to the flush timer.   quick-extras.sh BIN_DIR LIB [ROUNDS]
set -u
bin=$1 lib=$2 rounds=${3:-3}
args=(-r 25 -w 5 -m single h2d:1:4K d2h:1:4K h2d:1:64K d2h:1:64K -m overlap h2d:64:4K h2d:256:4K d2h:64:4K
      d2h:256:4K d2h:64:64K h2d:64:64K -m enqueue h2d:1024:4K d2h:1024:4K d2h:256:16K h2d:256:16K)
for r in $(seq "$rounds"); do
    echo "## round $r plain";   "$bin/bench_copies" "${args[@]}"
    echo "## round $r cubatch"; LD_PRELOAD=$lib "$bin/bench_copies" "${args[@]}"
done
