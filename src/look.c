/* look.c - the timer's look at the runs (rule 7), and the pace of a stream:
 * which runs stopped growing, grow too slowly or grew old, and when each is
 * looked at next.  timer.c says when a look runs; flush.c submits what a look
 * decides; run.c writes each run's looks and pace (cb_run_looked,
 * cb_run_look_at, cb_run_found_slow). */
#include "run.h"
#include "store.h"
#include "stats.h"

/* The sooner of the next look found so far (0: none yet) and t. */
static uint64_t sooner(uint64_t next, uint64_t t) { return !next || t < next ? t : next; }

/* A look at a stream whose run holds copies (timer.c runs them when due), with
 * its copies counted since the previous look:
 *  - none joined: the program has moved on (to CPU work, say) and its copies
 *    should be running: the run is submitted;
 *  - they joined further apart than CUBATCH_SLOW_NS on average (a Python loop):
 *    a batch would only make them late, since the GPU would have run each while
 *    the program issued the next: the run is submitted and the stream is slow
 *    (copy.c passes its copies through until they come faster again);
 *  - a fast loop still issuing: looked at again after half the burst's age (at
 *    least CUBATCH_FLUSH_US), so a long burst is looked at only a few times, and
 *    the program's last copy waits at most half as long again as the burst took;
 *  - in any case a run CUBATCH_MAX_WAIT_US old is submitted.
 * No lock held: the store's lock is taken to go through the runs, each run's in
 * turn, but never waited for.  A run whose lock another thread holds (a copy
 * joining it, a flush) is looked at again CUBATCH_FLUSH_US later, and every
 * run when the store's lock is held: a look that waited for a run's lock on
 * another core slowed the copy loop filling that run (docs/design.md rule 7,
 * *The look waits for no lock*).  Returns when the next look is due, 0 when
 * none is. */
uint64_t cb_look_runs(uint64_t now)
{
    uint64_t next = 0, g = cb_opt(CB_OPT_flush_us) * 1000u, max_wait = cb_opt(CB_OPT_max_wait_us) * 1000u;
    CB_COUNT(timer_looks);
    struct cb_run *run, *tmp;
    if (!cb_store_trylock())
        return now + g;
    CB_RUNS_EACH(run, tmp) {
        if (!cb_run_trylock(run)) {
            next = sooner(next, now + g);
            continue;
        }
        const struct cb_looks *l = &run->looks;
        if (!l->look_ns) {
            cb_run_unlock(run);
            continue;
        }
        if (now >= l->look_ns) {
            uint64_t joined, span;
            cb_run_looked(run, now, &joined, &span);
            if (run->q.n > 0) {
                /* nobody waits for these flushes: their rows keep the error
                 * for the stream's next call (stats.def) */
                if (joined && span / joined > cb_opt(CB_OPT_slow_ns)) {
                    cb_flush_run(run, CB_WHY_flush_slow);
                    cb_run_found_slow(run, span / joined, now);
                } else if (!joined || now - l->opened_ns >= max_wait) {
                    cb_flush_run(run, CB_WHY_flush_timer);
                }
            }
            if (run->q.n == 0 && !joined) {
                cb_run_look_at(run, 0); /* quiet: the looks end until its next run opens */
                cb_run_unlock(run);
                continue;
            }
            uint64_t half = (now - l->burst_ns) / 2;
            cb_run_look_at(run, now + (half > g ? half : g));
        }
        if (run->q.n > 0 && l->opened_ns + max_wait < l->look_ns)
            cb_run_look_at(run, l->opened_ns + max_wait);
        next = sooner(next, l->look_ns);
        cb_run_unlock(run);
    }
    cb_store_unlock();
    return next;
}
