/* clock.c - the one clock cubatch reads.  Tests replace CLOCK_MONOTONIC by a
 * virtual one (tests/shims/fakeclock.c), so every rule that reads this clock is tested
 * the same on an idle or a busy machine. */
#include "internal.h"

#include <time.h>

uint64_t cb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
