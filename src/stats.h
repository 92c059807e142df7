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
/* Only the owning thread writes a counter; the report (another thread) reads
 * it while it may be counting.  Relaxed atomic loads and stores make that a
 * defined race (no lost count: one writer) at the cost of plain moves. */
static inline void cb_bump(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}
/* The wrapper this thread is in (its hook id + 1; 0: none, e.g. the timer
 * thread), so that a flush knows which call ended the run (cb_stat_run_ended). */
extern CB_TLS int cb_tls_hook;
static inline int cb_hook_enter(int id)
{
    int prev = cb_tls_hook;
    cb_tls_hook = id + 1;
    return prev;
}
static inline void cb_hook_leave(int prev) { cb_tls_hook = prev; }
void cb_stat_run_ended(void);
#define CB_COUNT(stat) cb_bump(&cb_stats_thread()->v[CB_ST_##stat], 1)
#define CB_COUNT_N(stat, n) cb_bump(&cb_stats_thread()->v[CB_ST_##stat], (n))

#endif /* CUBATCH_STATS_H */
