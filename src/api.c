/* api.c - the public functions of include/cubatch.h, and the exit report. */
#include "internal.h"
#include "cubatch.h"

#include <stdlib.h>

CB_EXPORT int cubatch_flush(void)
{
    cb_init();
    return (int)cb_flush_all(CB_WHY_EXIT);
}

CB_EXPORT int cubatch_batching_enabled(void)
{
    cb_init();
    return cb_batching;
}

CB_EXPORT size_t cubatch_stats_json(char *buf, size_t len)
{
    cb_init();
    return cb_stats_json(buf, len);
}

/* The report is written after everything else of ours at exit: it is registered
 * at initialisation, before the flush handler (atexit runs in reverse order). */
static void report_at_exit(void) { cb_stats_report(); }

void cb_api_init(void)
{
    cb_stats_init();
    if (cb_opt(CB_OPT_stats) != CB_STATS_OFF)
        atexit(report_at_exit);
}
