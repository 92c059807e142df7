/* stats.h - counting on the copy path: this thread's block of counters, with no
 * call and no shared cache line once the thread has one (stats.c). */
#ifndef CUBATCH_STATS_H
#define CUBATCH_STATS_H

#include "internal.h"

extern CB_TLS struct cb_tstats *cb_tls_stats;
static inline struct cb_tstats *cb_stats_thread(void)
{
    struct cb_tstats *t = cb_tls_stats;
    return CB_LIKELY(t != NULL) ? t : cb_stats_thread_slow();
}
#define CB_COUNT(stat) (cb_stats_thread()->v[CB_ST_##stat]++)
#define CB_COUNT_N(stat, n) (cb_stats_thread()->v[CB_ST_##stat] += (n))

#endif /* CUBATCH_STATS_H */
