/* run.c - the store of runs: one per stream, keyed by stream handle, a
 * per-thread default stream by (handle CU_STREAM_PER_THREAD, owning thread).
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
 * A run caches what it learned about its stream when it opened (capturing?
 * blocking? context, device); these can only change through calls that name the
 * stream, and every such call flushes the run first, so the next copy re-opens
 * it and asks again (rule 2).  A destroyed stream's handle may come back for a
 * new stream: its run was flushed and removed at destroy (flush.c). */
#include "run.h"
#include "capture.h"

#include <stdlib.h>
#include <string.h>

/* Adaptive: a thread that finds one taken spins briefly before sleeping, as the
 * holder is usually done within a microsecond. */
static pthread_mutex_t cb_store_mu = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
struct cb_run *cb_run_table;
static struct cb_run *cb_free_runs; /* removed runs, kept for reuse (store lock) */
/* Runs that hold copies, a pending join or a pending error.  Zero lets every
 * flush trigger return without taking a lock. */
atomic_int cb_active; /* read inline: run.h */
static atomic_int cb_nonempty; /* runs holding copies: what the timer waits for */
atomic_int cb_legacy_nonempty; /* legacy-stream runs holding copies (read inline: run.h) */
atomic_int cb_blocking_active; /* active runs of blocking streams, the legacy one's not (run.h) */
static atomic_int cb_marked; /* runs holding markers (rule 11): what event observers look for */
/* Run locks this thread holds: a driver call made from inside a submission that
 * comes back into a wrapper must not try to flush again. */
CB_TLS int cb_tls_held;
#ifdef CB_DEBUG
CB_TLS int cb_tls_forking; /* fork's prepare handler holds every run lock (run.h) */
#endif

/* The thread's last few runs (a thread often alternates between two streams,
 * one per direction, say): found here, a run is locked without the store's
 * lock, then checked under its own (holds_key). */
#define CB_LAST_RUNS 4
struct cb_last { struct cb_run *run; uintptr_t stream, owner; };
static CB_TLS struct cb_last cb_tls_last[CB_LAST_RUNS];
static CB_TLS unsigned cb_tls_last_next;

/* The bursts this thread began (rule 8), and whether a call on this thread has
 * named their stream since.  A warm run alone is not counted active: a
 * program's synchronize after a lone copy would otherwise lock the run and move
 * the store's counts twice per copy.  A call naming the stream marks the note
 * here, touching no run; the stream's next copy from this thread reads the
 * note under the run's lock and begins a new burst.  A burst another thread
 * began, or one whose note was pushed out, ends as before: at a flush of its
 * run. */
#define CB_BURST_NOTES 8
struct cb_burst_note {
    uintptr_t stream, owner;
    int named;
    int fast;            /* the next burst may begin without the run's lock (cb_run_pass_first_here) */
    struct cb_run *run;  /* its run when the note was written (never freed: run.c's header) */
};
static CB_TLS struct cb_burst_note cb_tls_bursts[CB_BURST_NOTES];
static CB_TLS unsigned cb_tls_bursts_next, cb_tls_bursts_open, cb_tls_bursts_last;
static CB_TLS unsigned cb_tls_bursts_legacy; /* notes of a legacy stream (one per context) */

/* This thread's pass spells (run.h): one per stream its copies last passed on
 * (a thread may alternate between streams, one per direction, say).  Runs
 * removed so far: a spell holds while none is (a run is removed with its
 * stream, and a new stream may come back with the same handle). */
struct cb_spell {
    struct cb_run *run;   /* while its bit of cb_tls_spells_live is set (never freed: this file's header) */
    uintptr_t stream;     /* the run's key (a created stream: no owner) */
    unsigned left;        /* copies it may still pass */
    unsigned removals;    /* cb_removals when it began */
    int why;              /* enum cb_stat_id they count under */
    int segment;          /* they count in the run's PASS segment (any copy passes) */
    uintptr_t upload;     /* else: only copies of this upload tag pass (copy.c) */
    uintptr_t last_alloc; /* the host allocation of its previous copy */
};
#define CB_SPELLS 4
static CB_TLS struct cb_spell cb_tls_spells[CB_SPELLS];
static CB_TLS unsigned cb_tls_spells_next;
CB_TLS unsigned cb_tls_spells_live; /* one bit per slot holding a spell (run.h) */
static atomic_uint cb_removals;

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
void cb_store_unlock(void) { pthread_mutex_unlock(&cb_store_mu); }


int cb_runs_nonempty(void) { return atomic_load(&cb_nonempty) > 0; }
int cb_runs_marked(void) { return atomic_load_explicit(&cb_marked, memory_order_acquire) > 0; }

void cb_run_set_active(struct cb_run *run)
{
    CB_ASSERT(cb_run_locked_here(run));
    /* a warm stream counts only while a measured segment runs with its burst
     * (choose.c): a call naming it must end both (flush.c); a burst alone ends
     * through this thread's notes (above) */
    int h = run->q.n > 0 || run->q.nmarks > 0 || run->facts.fence.ev_join != NULL || run->pending != CUDA_SUCCESS;
    if (h != atomic_load_explicit(&run->holds, memory_order_relaxed))
        atomic_store_explicit(&run->holds, h, memory_order_release);
    int a = run->q.n > 0 || run->facts.fence.ev_join != NULL || run->pending != CUDA_SUCCESS ||
            (cb_run_warm(run) && run->seg.open);
    if (a != run->active) {
        atomic_fetch_add(&cb_active, a ? 1 : -1);
        run->active = a;
    }
    int b = a && (run->facts.blocking || run->facts.ptds) && !run->facts.legacy;
    if (b != run->blocking_active) {
        atomic_fetch_add(&cb_blocking_active, b ? 1 : -1);
        run->blocking_active = b;
    }
    int q = run->q.n > 0;
    if (q != run->queued) {
        atomic_fetch_add(&cb_nonempty, q ? 1 : -1);
        if (run->facts.legacy)
            atomic_fetch_add(&cb_legacy_nonempty, q ? 1 : -1);
        run->queued = q;
    }
    int m = run->q.nmarks > 0;
    if (m != run->marked) {
        atomic_fetch_add(&cb_marked, m ? 1 : -1);
        run->marked = m;
    }
}

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

int cb_run_is_owner(const struct cb_run *run)
{
    return run->facts.ptds && !run->facts.orphan && pthread_equal((pthread_t)run->key.owner, pthread_self());
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
        cb_run_lock(run); /* a stale pointer's holder may be looking at it */
        /* removed empty, out of every count (cb_run_remove) */
        CB_ASSERT(!run->live && run->q.n == 0 && !run->q.nmarks && !run->active && !run->queued && !run->marked);
        memset(&run->key, 0, sizeof *run - offsetof(struct cb_run, key));
        atomic_store_explicit(&run->warm, 0, memory_order_relaxed); /* a stale note may have written it */
        run->q = (struct cb_copies){.dsts = q.dsts, .srcs = q.srcs, .sizes = q.sizes, .hooks = q.hooks,
                                    .streams = q.streams, .cap = q.cap, .marks = q.marks, .capmarks = q.capmarks};
        run->writes = (struct cb_iset){w.v, 0, w.cap};
        run->reads = (struct cb_iset){r.v, 0, r.cap};
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

void cb_run_clear(struct cb_run *run, struct cb_standin *standin)
{
    CB_ASSERT(cb_run_locked_here(run));
    run->q.n = 0;
    cb_event_markers_gone(&run->q, run, standin);
    run->q.nmarks = 0;
    run->writes.n = 0;
    run->reads.n = 0;
    run->feed.kind = 0;
    run->feed.chunk_shape = 0;
    run->feed.chunk_due = 0;
    run->q.has_host = 0;
    run->q.arm = CB_ARM_STATIC;
}

int cb_run_open(struct cb_run *run, CUstream stream)
{
    struct cb_stream_facts *f = &run->facts;
    CUstream s = cb_stream_handle(stream, cb_facts_kind(f));
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    f->stream = s;
    if (f->known && !cb_captures_active()) {
        /* A stream captures only after a call that begins a capture, which
         * capture.c counts: with none under way, nothing need be asked again. */
        f->capturing = 0;
        return 0;
    }
    if (f->legacy) {
        /* The legacy stream never captures (copy.c defers nothing on it while any
         * capture is under way); it is the context's own. */
        f->capturing = 0;
        f->blocking = 1;
        f->ctx = (CUcontext)run->key.owner;
        if (!cb_drv.cuCtxGetDevice || cb_drv.cuCtxGetDevice(&f->device) != CUDA_SUCCESS)
            return -1;
    } else if (!cb_drv.cuStreamIsCapturing || cb_drv.cuStreamIsCapturing(s, &cap) != CUDA_SUCCESS) {
        return -1;
    }
    f->capturing = cap != CU_STREAM_CAPTURE_STATUS_NONE;
    if (f->capturing)
        return 0; /* nothing more to learn: nothing is deferred there */
    if (f->legacy) {
        /* learned above */
    } else if (f->ptds) {
        /* The owner's stream joins the earlier side submission first, in that
         * submission's context: the thread may have switched to another
         * context, whose per-thread stream is another stream. */
        if (cb_fence_owner_join(f) != CUDA_SUCCESS)
            return -1;
        if (!cb_drv.cuCtxGetCurrent || cb_drv.cuCtxGetCurrent(&f->ctx) != CUDA_SUCCESS || !f->ctx)
            return -1;
        if (!cb_drv.cuCtxGetDevice || cb_drv.cuCtxGetDevice(&f->device) != CUDA_SUCCESS)
            return -1;
        f->blocking = 1;
        f->owner = run->key.owner;
        if (cb_fence_open(f) != CUDA_SUCCESS)
            return -1;
    } else {
        unsigned int flags = 0;
        if (!cb_drv.cuStreamGetFlags || cb_drv.cuStreamGetFlags(s, &flags) != CUDA_SUCCESS)
            return -1;
        f->blocking = !(flags & CU_STREAM_NON_BLOCKING);
        if (!cb_drv.cuStreamGetCtx || cb_drv.cuStreamGetCtx(s, &f->ctx) != CUDA_SUCCESS)
            return -1;
        CUdevice dev = -1;
        if (cb_drv.cuStreamGetDevice) {
            if (cb_drv.cuStreamGetDevice(s, &dev) != CUDA_SUCCESS)
                return -1;
        } else {
            struct cb_ctx_guard g;
            if (cb_ctx_enter(f->ctx, &g) != CUDA_SUCCESS)
                return -1;
            CUresult rc = cb_drv.cuCtxGetDevice(&dev);
            cb_ctx_leave(&g);
            if (rc != CUDA_SUCCESS)
                return -1;
        }
        f->device = dev;
        f->known = 1;
    }
    return 0;
}

void cb_run_opened(struct cb_run *run)
{
    uint64_t now = cb_now_ns();
    struct cb_looks *l = &run->looks;
    l->opened_ns = now;
    if (!l->look_ns) { /* the stream was quiet: the timer's looks begin */
        l->burst_ns = l->looked_ns = now;
        l->look_ns = now + cb_opt(CB_OPT_flush_us) * 1000u;
        l->issued_looked = run->feed.issued;
    }
}

static int run_grow(struct cb_run *run)
{
    size_t cap = run->q.cap ? 2 * run->q.cap : 16;
    size_t max = cb_opt(CB_OPT_max_batch);
    if (cap > max)
        cap = max;
#define GROW(field)                                                       \
    do {                                                                  \
        void *p = realloc(run->q.field, cap * sizeof run->q.field[0]);    \
        if (!p)                                                           \
            return -1;                                                    \
        run->q.field = p;                                                 \
    } while (0)
    GROW(dsts);
    GROW(srcs);
    GROW(sizes);
    GROW(hooks);
    GROW(streams);
#undef GROW
    run->q.cap = cap;
    return 0;
}

int cb_run_append(struct cb_run *run, const struct cb_copy_req *rq)
{
    if (run->q.n == run->q.cap && run_grow(run))
        return -1;
    if (cb_iset_add(&run->writes, rq->dst, rq->dst + rq->bytes) ||
        cb_iset_add(&run->reads, rq->src, rq->src + rq->bytes))
        return -1;
    size_t i = run->q.n++;
    run->q.dsts[i] = rq->dst;
    run->q.srcs[i] = rq->src;
    run->q.sizes[i] = rq->bytes;
    run->q.hooks[i] = (unsigned char)rq->hook;
    run->q.streams[i] = rq->stream;
    run->feed.issued++;
    run->feed.kind |= rq->scls.kind == CB_MEM_HOST && rq->dcls.kind != CB_MEM_HOST ? CB_CHUNK_H2D : 0u;
    run->q.has_host |= rq->scls.kind == CB_MEM_HOST || rq->dcls.kind == CB_MEM_HOST;
    run->q.kernel_ok = (i == 0 || run->q.kernel_ok) && rq->kernel_ok;
    return 0;
}

int cb_run_mark_room(struct cb_run *run)
{
    if (run->q.nmarks == run->q.capmarks) {
        size_t cap = run->q.capmarks ? 2 * run->q.capmarks : 8;
        struct cb_marker *p = realloc(run->q.marks, cap * sizeof *p);
        if (!p)
            return -1;
        run->q.marks = p;
        run->q.capmarks = cap;
    }
    return 0;
}

void cb_run_mark(struct cb_run *run, const struct cb_marker *m)
{
    run->q.marks[run->q.nmarks++] = *m;
    if (!run->marked) /* the only count a marker can change */
        cb_run_set_active(run);
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
        run->q.n = 0;
        run->writes.n = run->reads.n = 0;
        atomic_store(&run->mu, 0);
        CB_IF_DEBUG(run->locker = 0;)
    }
    atomic_store(&cb_active, 0);
    atomic_store(&cb_nonempty, 0);
    atomic_store(&cb_legacy_nonempty, 0);
    atomic_store(&cb_blocking_active, 0);
    atomic_store(&cb_marked, 0);
    cb_events_atfork_child();
    memset(cb_tls_last, 0, sizeof cb_tls_last);
    memset(cb_tls_bursts, 0, sizeof cb_tls_bursts);
    cb_tls_bursts_open = cb_tls_bursts_last = cb_tls_bursts_legacy = 0;
    memset(cb_tls_spells, 0, sizeof cb_tls_spells);
    cb_tls_spells_live = 0;
    mutex_init(&cb_store_mu);
    cb_tls_held = 0;
    CB_IF_DEBUG(cb_tls_forking = 0;)
}

/* ---- the run's own state, written here only (run.h) ----------------------------- */

CUresult cb_run_take_pending(struct cb_run *run)
{
    CUresult rc = run->pending;
    run->pending = CUDA_SUCCESS;
    return rc;
}

void cb_run_keep_pending(struct cb_run *run, CUresult err) { run->pending = err; }

/* Note n is of stream's burst, kept by owner (any_owner: by any). */
static int note_of(const struct cb_burst_note *n, uintptr_t stream, uintptr_t owner, int any_owner)
{
    return n->stream == stream && (any_owner || n->owner == owner);
}

/* The note of a stream's burst: the last one found (cb_tls_bursts_last) first,
 * as a lone copy and its synchronize name the same stream one after the other. */
static struct cb_burst_note *find_note(uintptr_t stream, uintptr_t owner, int any_owner)
{
    struct cb_burst_note *n = &cb_tls_bursts[cb_tls_bursts_last];
    if (CB_LIKELY(note_of(n, stream, owner, any_owner)))
        return n;
    for (unsigned i = 0; i < CB_BURST_NOTES; i++)
        if (note_of(&cb_tls_bursts[i], stream, owner, any_owner)) {
            cb_tls_bursts_last = i;
            return &cb_tls_bursts[i];
        }
    return NULL;
}
static struct cb_burst_note *burst_note(uintptr_t stream, uintptr_t owner) { return find_note(stream, owner, 0); }

/* A created or legacy stream that is not slow: nothing but the burst itself
 * decides how its first copy goes (a per-thread stream's first copy may have
 * a fence of its run to give back first: copy.c's pass). */
static int note_fast(const struct cb_run *run)
{
    return !run->facts.ptds && !run->pace.slow;
}

void cb_run_burst_begins(struct cb_run *run)
{
    atomic_store_explicit(&run->warm, 1, memory_order_relaxed);
    struct cb_burst_note *n = burst_note(run->key.stream, run->key.owner);
    if (!n) {
        cb_tls_bursts_last = cb_tls_bursts_next++ % CB_BURST_NOTES;
        n = &cb_tls_bursts[cb_tls_bursts_last];
        if (n->stream && !n->named)
            cb_tls_bursts_open--; /* pushed out: that burst ends at its run's flush */
        cb_tls_bursts_legacy -= n->stream == (uintptr_t)CU_STREAM_LEGACY;
        cb_tls_bursts_legacy += run->key.stream == (uintptr_t)CU_STREAM_LEGACY;
        *n = (struct cb_burst_note){run->key.stream, run->key.owner, 1, 0, NULL};
    }
    n->fast = note_fast(run);
    n->run = run;
    if (n->named) {
        n->named = 0;
        cb_tls_bursts_open++;
    }
}

void cb_run_burst_ends(struct cb_run *run) { atomic_store_explicit(&run->warm, 0, memory_order_relaxed); }

int cb_run_burst_first_segment(struct cb_run *run)
{
    int first = 1; /* warm: 1 from the burst's first copy, 2 once its first segment began */
    return atomic_compare_exchange_strong_explicit(&run->warm, &first, 2, memory_order_relaxed, memory_order_relaxed);
}

int cb_run_in_burst(struct cb_run *run)
{
    struct cb_burst_note *n = burst_note(run->key.stream, run->key.owner);
    if (n)
        n->fast = note_fast(run) && n->run == run; /* the stream may have turned slow */
    if (!cb_run_warm(run))
        return 0;
    if (n && n->named) {
        cb_run_burst_ends(run); /* a call on this thread named the stream since */
        return 0;
    }
    return 1;
}

/* The note of the legacy stream while this thread has noted one context's
 * only; NULL with none, or with two (the caller asks which is current). */
static struct cb_burst_note *legacy_note(void)
{
    if (cb_tls_bursts_legacy != 1)
        return NULL;
    return find_note((uintptr_t)CU_STREAM_LEGACY, 0, 1);
}

int cb_run_pass_first_here(const struct cb_run_key *key)
{
    if (!cb_tls_bursts[cb_tls_bursts_last].stream)
        return 0; /* no note at all */
    int any_context = key->stream == (uintptr_t)CU_STREAM_LEGACY && !key->owner;
    struct cb_burst_note *n = any_context ? legacy_note() : burst_note(key->stream, key->owner);
    if (!n || !n->named || !n->fast)
        return 0;
    n->named = 0;
    cb_tls_bursts_open++;
    atomic_store_explicit(&n->run->warm, 1, memory_order_relaxed);
    return 1;
}

#ifdef CB_DEBUG
/* The debug build's checks (run.h), each changing nothing. */
struct cb_run *cb_run_first_note(const struct cb_run_key *key, struct cb_run_key *noted)
{
    if (!cb_tls_bursts[cb_tls_bursts_last].stream)
        return NULL;
    int any_context = key->stream == (uintptr_t)CU_STREAM_LEGACY && !key->owner;
    const struct cb_burst_note *n = NULL;
    if (!any_context) {
        for (unsigned i = 0; i < CB_BURST_NOTES && !n; i++)
            if (note_of(&cb_tls_bursts[i], key->stream, key->owner, 0))
                n = &cb_tls_bursts[i];
    } else if (cb_tls_bursts_legacy == 1) {
        for (unsigned i = 0; i < CB_BURST_NOTES && !n; i++)
            if (note_of(&cb_tls_bursts[i], key->stream, 0, 1))
                n = &cb_tls_bursts[i];
    }
    if (!n)
        return NULL;
    *noted = (struct cb_run_key){n->stream, n->owner};
    return n->run;
}

int cb_run_keyed(const struct cb_run *run, const struct cb_run_key *key)
{
    return run->live && run->key.stream == key->stream && run->key.owner == key->owner;
}

int cb_run_slow_peek(const struct cb_run *run)
{
    const struct cb_pace *p = &run->pace;
    if (!p->slow)
        return 0;
    uint64_t gap = cb_now_ns() - p->last_copy_ns;
    return (gap < 100000u ? (3 * p->pace_ns + gap) / 4 : 0) > cb_opt(CB_OPT_slow_ns);
}

int cb_run_in_burst_peek(const struct cb_run *run)
{
    const struct cb_burst_note *n = NULL;
    for (unsigned i = 0; i < CB_BURST_NOTES && !n; i++)
        if (note_of(&cb_tls_bursts[i], run->key.stream, run->key.owner, 0))
            n = &cb_tls_bursts[i];
    return atomic_load_explicit(&run->warm, memory_order_relaxed) && !(n && n->named);
}
#endif

static void note_named(struct cb_burst_note *n)
{
    if (!n->named) {
        n->named = 1;
        cb_tls_bursts_open--;
    }
}

/* The spell of a stream (its key's handle), or NULL. */
static struct cb_spell *spell_of(uintptr_t stream)
{
    for (unsigned i = 0; i < CB_SPELLS; i++)
        if ((cb_tls_spells_live & 1u << i) && cb_tls_spells[i].stream == stream)
            return &cb_tls_spells[i];
    return NULL;
}

static void spell_end(struct cb_spell *sp)
{
    cb_tls_spells_live &= ~(1u << (unsigned)(sp - cb_tls_spells));
}

void cb_run_spell_begin(struct cb_run *run, unsigned copies, int why, int segment, uintptr_t host_alloc,
                        uintptr_t upload)
{
    struct cb_spell *sp = spell_of(run->key.stream);
    /* a created stream's key has no owner (a legacy or per-thread one has) */
    if (!copies || run->key.owner || run->pace.slow ||
        atomic_load_explicit(&run->holds, memory_order_relaxed)) {
        if (sp)
            spell_end(sp);
        return;
    }
    if (!sp)
        sp = &cb_tls_spells[cb_tls_spells_next++ % CB_SPELLS];
    *sp = (struct cb_spell){.run = run,
                            .stream = run->key.stream,
                            .left = copies,
                            .removals = atomic_load_explicit(&cb_removals, memory_order_acquire),
                            .why = why,
                            .segment = segment,
                            .upload = upload,
                            .last_alloc = host_alloc};
    cb_tls_spells_live |= 1u << (unsigned)(sp - cb_tls_spells);
}

int cb_run_spell_here(const struct cb_run_key *key, uintptr_t host_alloc, uintptr_t upload)
{
    struct cb_spell *sp = key->owner ? NULL : spell_of(key->stream);
    if (!sp || !sp->left || (!sp->segment && sp->upload != upload))
        return 0;
    if (atomic_load_explicit(&sp->run->holds, memory_order_acquire) ||
        atomic_load_explicit(&cb_removals, memory_order_acquire) != sp->removals || cb_runs_legacy_pending()) {
        spell_end(sp);
        return 0;
    }
    sp->left--;
    if (sp->segment) {
        cb_segment_spelled(&sp->run->seg, host_alloc != sp->last_alloc);
        sp->last_alloc = host_alloc;
    }
    return sp->why;
}

#ifdef CB_DEBUG
int cb_run_spell_peek(const struct cb_run_key *key, uintptr_t upload)
{
    const struct cb_spell *sp = key->owner ? NULL : spell_of(key->stream);
    if (!sp || !sp->left || (!sp->segment && sp->upload != upload))
        return 0;
    if (atomic_load_explicit(&sp->run->holds, memory_order_acquire) ||
        atomic_load_explicit(&cb_removals, memory_order_acquire) != sp->removals || cb_runs_legacy_pending())
        return 0;
    return sp->why;
}
#endif

void cb_runs_named_here(CUstream s, enum cb_stream_kind sk)
{
    if (CB_UNLIKELY(cb_tls_spells_live)) {
        struct cb_spell *sp = spell_of((uintptr_t)cb_stream_handle(s, sk));
        if (sp)
            spell_end(sp);
    }
    if (!cb_tls_bursts_open)
        return;
    struct cb_run_key key = cb_run_key_of(s, sk, NULL);
    if (sk != CB_SK_LEGACY) {
        struct cb_burst_note *n = burst_note(key.stream, key.owner);
        if (n)
            note_named(n);
        return;
    }
    /* the legacy stream's key holds its context: any context's will do here */
    for (unsigned i = 0; i < CB_BURST_NOTES; i++)
        if (cb_tls_bursts[i].stream == key.stream)
            note_named(&cb_tls_bursts[i]);
}

void cb_runs_all_named_here(void)
{
    cb_tls_spells_live = 0;
    for (unsigned i = 0; i < CB_BURST_NOTES; i++)
        cb_tls_bursts[i].named = 1;
    cb_tls_bursts_open = 0;
}

int cb_runs_burst_here(void) { return cb_tls_bursts_open > 0; }

int cb_run_still_slow(struct cb_run *run)
{
    struct cb_pace *p = &run->pace;
    uint64_t now = cb_now_ns(), gap = now - p->last_copy_ns;
    p->last_copy_ns = now;
    p->pace_ns = gap < 100000u ? (3 * p->pace_ns + gap) / 4 : 0;
    p->slow = p->pace_ns > cb_opt(CB_OPT_slow_ns);
    return p->slow;
}

void cb_run_found_slow(struct cb_run *run, uint64_t pace_ns, uint64_t now)
{
    run->pace.slow = 1;
    run->pace.pace_ns = pace_ns;
    run->pace.last_copy_ns = now;
}

void cb_run_chunk_sent(struct cb_run *run) { run->feed.chunks++; }

void cb_run_chunks_end(struct cb_run *run) { run->feed.chunks = 0; }

void cb_run_orphan(struct cb_run *run) { run->facts.orphan = 1; }

void cb_run_looked(struct cb_run *run, uint64_t now, uint64_t *joined, uint64_t *span)
{
    struct cb_looks *l = &run->looks;
    *joined = run->feed.issued - l->issued_looked;
    *span = now - l->looked_ns;
    l->issued_looked = run->feed.issued;
    l->looked_ns = now;
}

void cb_run_look_at(struct cb_run *run, uint64_t at) { run->looks.look_ns = at; }
