/* fork.c - fork (rule 10): before it, everything the program asked for goes
 * out (the parent loses nothing); across it, every lock of cubatch's is held by
 * the forking thread, so that the child inherits no state half-changed by
 * another thread; in the child, which has no CUDA state of its own and only the
 * forking thread, each piece of state is made anew, empty.
 *
 * The table below is the one list of that state, in the one order of its
 * locks.  Each row's file says what its handlers do. */
#include "run.h"
#include "store.h"
#include "notes.h"
#include "waits.h"
#include "capture.h"
#include "allocs.h"
#include "smwork.h"

/* One row per piece of state fork must not split.  prepare takes its lock and
 * parent gives it back (both NULL: no lock held across fork, the child resets
 * it anyway); child makes it anew.  at_init: registered at initialisation,
 * whether or not a copy is ever deferred; the others at the first deferred copy
 * (life.c).  Written here only. */
struct cb_fork_row {
    void (*prepare)(void), (*parent)(void), (*child)(void);
    int at_init;
};

/* The order: a lock is taken after every lock under which some thread may take
 * it, so that the prepare handler never waits for a lock whose holder waits for
 * one the handler already holds.  A flush takes the events', the per-thread
 * helpers' and the kernel modules' locks under a run lock (after the store's);
 * the timer's, capture.c's, the pending waits' (under capture.c's) and the
 * allocation table's are taken under those too (a flush, the timer's looks);
 * anything may count, under any lock.  The parent gives them back in the
 * reverse order, and the child remakes them in table order.  pthread_atfork
 * runs prepare handlers in the reverse order of registration, the others in
 * it: the rows registered at initialisation (the counters) stand last, and
 * their child runs first, as every other row's child needs (it may count).
 * store.c's child also drops the event table (its runs' markers point into it). */
static const struct cb_fork_row cb_fork_rows[] = {
    {cb_runs_atfork_prepare, cb_runs_atfork_parent, cb_runs_atfork_child, 0}, /* the store, then every run */
    {NULL, NULL, cb_notes_atfork_child, 0}, /* the forking thread's burst notes and pass spells */
    {cb_events_atfork_prepare, cb_events_atfork_parent, NULL, 0},
    {cb_ptds_atfork_prepare, cb_ptds_atfork_parent, cb_ptds_atfork_child, 0},
    {cb_kernel_atfork_prepare, cb_kernel_atfork_parent, cb_kernel_atfork_child, 0},
    {NULL, NULL, cb_smwork_atfork_child, 0},
    {cb_timer_atfork_prepare, cb_timer_atfork_parent, cb_timer_atfork_child, 0},
    {cb_capture_atfork_prepare, cb_capture_atfork_parent, cb_capture_atfork_child, 0},
    {cb_waits_atfork_prepare, cb_waits_atfork_parent, cb_waits_atfork_child, 0},
    {cb_allocs_atfork_prepare, cb_allocs_atfork_parent, cb_allocs_atfork_child, 0},
    {NULL, NULL, cb_choose_atfork_child, 0},
    {cb_stats_atfork_prepare, cb_stats_atfork_parent, cb_stats_atfork_child, 1},
};
enum { CB_FORK_ROWS = sizeof cb_fork_rows / sizeof cb_fork_rows[0] };

static void prepare_rows(int at_init)
{
    for (int k = 0; k < CB_FORK_ROWS; k++) {
        const struct cb_fork_row *r = &cb_fork_rows[k];
        if (r->at_init == at_init && r->prepare)
            r->prepare();
    }
}
static void parent_rows(int at_init)
{
    for (int k = CB_FORK_ROWS - 1; k >= 0; k--) {
        const struct cb_fork_row *r = &cb_fork_rows[k];
        if (r->at_init == at_init && r->parent)
            r->parent();
    }
}
static void child_rows(int at_init)
{
    for (int k = 0; k < CB_FORK_ROWS; k++) {
        const struct cb_fork_row *r = &cb_fork_rows[k];
        if (r->at_init == at_init && r->child)
            r->child();
    }
}

static void init_prepare(void) { prepare_rows(1); }
static void init_parent(void) { parent_rows(1); }
static void init_child(void) { child_rows(1); }

static void prepare(void)
{
    cb_waits_issue_all(); /* the parent loses nothing (rule 16) */
    cb_flush_before_fork();
    prepare_rows(0);
}
static void parent(void) { parent_rows(0); }
static void child(void) { child_rows(0); }

void cb_fork_init(void) { pthread_atfork(init_prepare, init_parent, init_child); }
void cb_fork_arm(void) { pthread_atfork(prepare, parent, child); }
