/* store.c - the store of runs: one per stream, keyed by stream handle, a
 * per-thread default stream by (handle CU_STREAM_PER_THREAD, owning thread);
 * its lock, the lookup and creation of a run, its removal and reuse, and
 * fork's handlers for all of it.
 *
 * Locks.  Threads copying on different streams never wait for each other here:
 *  - each run has its own lock, held while its copies are queued and while it is
 *    submitted (so a run is never submitted twice or half-way); the program's
 *    own calls are always forwarded outside every run lock;
 *  - the store's lock guards the table: taken to create a run, to find one the
 *    thread's last-run cache does not hold, to remove one and to iterate (a
 *    context-wide flush, the legacy rules, the timer, exit, fork);
 *  - the copy path finds its run in the thread's cache and locks it without the
 *    store's lock, then checks under the run lock that the run is still in the
 *    table under that key (a removed run is marked dead and may come back for
 *    another key; either way the cache misses);
 *  - runs are never freed while the process lives: a removed run is cleared and
 *    kept for reuse, so a stale pointer (a thread's cache, an event's holder in
 *    event.c) is always safe to lock; finding another key or no marker there
 *    costs at most an extra flush.
 * Deadlock-free because every thread takes locks in one order, store -> run ->
 * helpers, and holds at most one run lock:
 *  - whatever must flush other runs (rule 3's cross flushes, a marker whose
 *    older record sits in another run, context-wide flushes, capture begin) does
 *    so before taking its own run's lock, one run at a time; so no thread ever
 *    waits for a run lock while holding another (fork's prepare handler, which
 *    takes them all in table order, holds the store lock first, so nobody else
 *    iterating can hold one of them while waiting for the store);
 *  - no path takes the store lock while holding a run lock (a lookup is made
 *    with no run lock held);
 *  - the helpers' locks (event.c's table, ptds.c's side streams and event pools,
 *    engine_kernel.c's modules, timer.c's due time, smwork.c) are leaves: taken
 *    under a run lock or none, and nothing is locked while one is held;
 *  - a driver call made under a run lock that comes back into a wrapper (a host
 *    function run during a synchronization) sees cb_runs_locked_here() and
 *    passes through, taking nothing.
 *
 * What a run's stream is, and each change of a run's own state: run.c; each
 * thread's burst notes and pass spells: notes.c. */
#include "store.h"

#include <stdlib.h>
#include <string.h>

/* Adaptive: a thread that finds one taken spins briefly before sleeping, as the
 * holder is usually done within a microsecond. */
static pthread_mutex_t cb_store_mu = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
struct cb_run *cb_run_table;
static struct cb_run *cb_free_runs; /* removed runs, kept for reuse (store lock) */
/* Runs removed so far: a pass spell (notes.c) holds while none is (a run is
 * removed with its stream, and a new stream may come back with the same
 * handle). */
atomic_uint cb_removals;

/* The thread's last few runs (a thread often alternates between two streams,
 * one per direction, say): found here, a run is locked without the store's
 * lock, then checked under its own (holds_key).  Written only by store.c. */
#define CB_LAST_RUNS 4
struct cb_last { struct cb_run *run; uintptr_t stream, owner; };
static CB_TLS struct cb_last cb_tls_last[CB_LAST_RUNS];
static CB_TLS unsigned cb_tls_last_next;

static void mutex_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

void cb_store_lock(void)
{
    CB_ASSERT(cb_tls_held == 0); /* the lock order: store, then run (this file's header) */
    pthread_mutex_lock(&cb_store_mu);
}
int cb_store_trylock(void)
{
    CB_ASSERT(cb_tls_held == 0);
    return pthread_mutex_trylock(&cb_store_mu) == 0;
}
void cb_store_unlock(void) { pthread_mutex_unlock(&cb_store_mu); }

/* Out of the counts, out of the table, emptied: kept for reuse. */
void cb_run_remove(struct cb_run *run)
{
    CB_ASSERT(cb_run_locked_here(run) && run->live);
    run->q.n = 0;
    cb_run_clear(run, NULL);
    run->pending = CUDA_SUCCESS;
    atomic_store_explicit(&run->warm, 0, memory_order_relaxed);
    run->facts.fence.ev_join = NULL;
    cb_run_set_active(run);
    HASH_DEL(cb_run_table, run);
    atomic_fetch_add_explicit(&cb_removals, 1, memory_order_release);
    run->live = 0;
    run->next_free = cb_free_runs;
    cb_free_runs = run;
    CB_ASSERT(!run->active && !run->queued && !run->marked && !run->blocking_active && !run->q.nmarks);
}

struct cb_run *cb_store_find(const struct cb_run_key *key)
{
    struct cb_run *run;
    HASH_FIND(hh, cb_run_table, key, sizeof *key, run);
    return run;
}

/* A new run for key, or a removed one made new (store lock held). */
static struct cb_run *store_create(const struct cb_run_key *key)
{
    struct cb_run *run = cb_free_runs;
    if (run) {
        cb_free_runs = run->next_free;
        /* everything but its lock and the storage of its arrays */
        struct cb_copies q = run->q;
        struct cb_iset w = run->writes, r = run->reads;
        struct cb_shapes sh = run->shapes;
        cb_run_lock(run); /* a stale pointer's holder may be looking at it */
        /* removed empty, out of every count (cb_run_remove) */
        CB_ASSERT(!run->live && run->q.n == 0 && !run->q.nmarks && !run->active && !run->queued && !run->marked);
        memset(&run->key, 0, sizeof *run - offsetof(struct cb_run, key));
        atomic_store_explicit(&run->warm, 0, memory_order_relaxed); /* a stale note may have written it */
        struct cb_merged m = q.merged;
        run->q = (struct cb_copies){.dsts = q.dsts, .srcs = q.srcs, .sizes = q.sizes, .hooks = q.hooks,
                                    .streams = q.streams, .cap = q.cap, .marks = q.marks, .capmarks = q.capmarks,
                                    .merged = {.dsts = m.dsts, .srcs = m.srcs, .sizes = m.sizes, .hooks = m.hooks,
                                               .streams = m.streams, .first = m.first},
                                    .rows = q.rows};
        run->writes = (struct cb_iset){w.v, 0, w.cap};
        run->reads = (struct cb_iset){r.v, 0, r.cap};
        run->shapes = cb_shapes_emptied(sh);
    } else {
        if (!(run = calloc(1, sizeof *run)))
            return NULL;
        cb_run_lock(run);
    }
    run->key = *key;
    run->facts.legacy = key->stream == (uintptr_t)CU_STREAM_LEGACY;
    run->facts.ptds = key->owner != 0 && !run->facts.legacy;
    run->live = 1;
    cb_run_unlock(run);
    HASH_ADD(hh, cb_run_table, key, sizeof run->key, run);
    return run;
}

static int holds_key(const struct cb_run *run, const struct cb_run_key *key)
{
    return run->live && run->key.stream == key->stream && run->key.owner == key->owner;
}

struct cb_run *cb_run_lock_key(const struct cb_run_key *key, int create, int *created)
{
    struct cb_run *run;
    if (created)
        *created = 0;
    for (unsigned i = 0; i < CB_LAST_RUNS; i++) {
        struct cb_last *last = &cb_tls_last[i];
        if (!last->run || last->stream != key->stream || last->owner != key->owner)
            continue;
        run = last->run;
        cb_run_lock(run);
        if (CB_LIKELY(holds_key(run, key)))
            return run;
        cb_run_unlock(run);
        last->run = NULL;
        break;
    }
    for (;;) {
        cb_store_lock();
        run = cb_store_find(key);
        if (!run && create && (run = store_create(key)) && created)
            *created = 1;
        cb_store_unlock();
        if (!run)
            return NULL;
        cb_run_lock(run);
        if (holds_key(run, key))
            break;
        cb_run_unlock(run); /* removed in between (its stream destroyed by another thread): again */
    }
    cb_tls_last[cb_tls_last_next++ % CB_LAST_RUNS] = (struct cb_last){run, key->stream, key->owner};
    return run;
}

void cb_forget_context_runs(CUcontext ctx)
{
    struct cb_run *run, *tmp;
    cb_store_lock();
    CB_RUNS_EACH(run, tmp) {
        cb_run_lock(run);
        if (run->q.n == 0 && run->facts.ctx == ctx) {
            /* its events died with the context */
            run->facts.fence.ev_join = NULL;
            run->facts.fence.ev_start = NULL;
            cb_run_set_active(run);
            /* so did a created stream, and the context's legacy stream: a stream
             * or context made later at the same handle learns its own facts
             * (a created stream's are learned once, cb_run_open) */
            if (!run->facts.ptds)
                cb_run_remove(run);
        }
        cb_run_unlock(run);
    }
    cb_store_unlock();
}

void cb_runs_atfork_prepare(void)
{
    struct cb_run *run, *tmp;
    cb_store_lock();
    CB_IF_DEBUG(cb_tls_forking = 1;)
    CB_RUNS_EACH(run, tmp)
        cb_run_lock(run);
}

void cb_runs_atfork_parent(void)
{
    struct cb_run *run, *tmp;
    CB_RUNS_EACH(run, tmp)
        cb_run_unlock(run);
    CB_IF_DEBUG(cb_tls_forking = 0;)
    cb_store_unlock();
}

void cb_runs_atfork_child(void)
{
    /* The child starts with empty queues and no CUDA state of its own; every
     * lock is made anew (only this thread survived the fork). */
    struct cb_run *run, *tmp;
    CB_RUNS_EACH(run, tmp) {
        run->active = run->queued = run->marked = run->blocking_active = 0;
        run->q.nmarks = 0; /* the event table is dropped below */
        HASH_DEL(cb_run_table, run);
        run->live = 0;
        run->next_free = cb_free_runs;
        cb_free_runs = run;
    }
    for (run = cb_free_runs; run; run = run->next_free) {
        run->q.n = run->q.merged.n = run->q.n2d = 0;
        run->writes.n = run->reads.n = run->shapes.n = 0;
        atomic_store(&run->mu, 0);
        CB_IF_DEBUG(run->locker = 0;)
    }
    cb_run_counts_atfork_child();
    cb_events_atfork_child();
    memset(cb_tls_last, 0, sizeof cb_tls_last);
    mutex_init(&cb_store_mu);
    cb_tls_held = 0;
    CB_IF_DEBUG(cb_tls_forking = 0;)
}

#ifdef CB_DEBUG
/* The debug build's check (store.h), changing nothing. */
int cb_run_keyed(const struct cb_run *run, const struct cb_run_key *key)
{
    return run->live && run->key.stream == key->stream && run->key.owner == key->owner;
}
#endif
