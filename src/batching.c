/* batching.c - the batching switch: whether copies may be deferred at all, and
 * why not.  Decided once, at initialisation: by engine.c from the driver and the
 * options, by init.c when there is no driver.  Read on the copy path (copy.c),
 * by the API and in the report's first line (stats.c).  It calls nothing. */
#include "internal.h"

/* Written here only, through cb_batching_set. */
int cb_batching;
const char *cb_batching_reason = "not started: no intercepted CUDA call yet";

void cb_batching_set(int on, const char *reason)
{
    cb_batching = on;
    cb_batching_reason = reason;
}
