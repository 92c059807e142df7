/* api.c - the public functions of include/cubatch.h. */
#include "engine.h"
#include "waits.h"
#include "init.h"
#include "stats.h"
#include "cubatch.h"

CB_EXPORT int cubatch_flush(void)
{
    cb_init();
    CUresult rc = cb_waits_issue_all(); /* rule 16 */
    return (int)cb_first_error(rc, cb_flush_all(CB_WHY_flush_api));
}

CB_EXPORT int cubatch_batching_enabled(void)
{
    cb_init();
    return cb_batching;
}

CB_EXPORT size_t cubatch_stats_json(char *buf, size_t len)
{
    /* What happened so far: before the program's first CUDA call nothing has,
     * and asking must not load the driver behind its back (the report then
     * says batching is not initialised yet). */
    return cb_stats_json(buf, len);
}

CB_EXPORT int cubatch_set_enabled(int enabled)
{
    cb_init();
    return (int)cb_flush_set_enabled(enabled != 0);
}
