/* run.h - a run: the copies deferred on one stream, in program order, waiting to
 * be submitted together, with what its stream is and its own state (run.c);
 * the hazard index of each (hazard.c).  The store of runs: store.h; each
 * thread's burst notes and pass spells: notes.h. */
#ifndef CUBATCH_RUN_H
#define CUBATCH_RUN_H

#include "engine.h"
#include "event.h"
#include "hazard.h"
#include "choose.h"
#include "stream.h"
#include "futex.h"

#include <uthash.h>


/* Which stream a run is for: made by cb_run_key_of only (below), from
 * stream.h's handle and owner; store.c keeps a copy in the run it keys. */
struct cb_run_key {
    uintptr_t stream; /* the handle; CU_STREAM_PER_THREAD for a per-thread stream */
    uintptr_t owner;  /* pthread_self() of the owning thread for a per-thread stream, the
                       * context for a legacy stream, else 0 */
};

/* The pace of a stream.  Written by run.c only (cb_run_still_slow, _found_slow),
 * as copy.c and look.c decide.  Whether a burst is under way is the run's
 * `warm` (below). */
struct cb_pace {
    int slow;          /* copies come too slowly to batch: they pass through, each timed */
    uint64_t last_copy_ns, pace_ns; /* while slow: the last copy, the running mean gap */
};

/* The timer's looks at a stream.  Written by run.c only (cb_run_opened,
 * cb_run_looked, cb_run_look_at); look.c's cb_look_runs decides. */
struct cb_looks {
    uint64_t opened_ns;      /* when the run opened: the age bound */
    uint64_t burst_ns;       /* when the looks began */
    uint64_t look_ns;        /* the next look; 0: none scheduled */
    uint64_t looked_ns;      /* the previous look (or when the looks began) */
    uint64_t issued_looked;  /* issued at the previous look */
};

/* What the engines' choices need of the run as it grows.  Written by run.c
 * only (cb_run_append, cb_run_feed_copy, cb_run_chunk_sent, cb_run_chunks_end,
 * cb_run_clear). */
struct cb_feed {
    uint64_t issued;   /* copies ever queued on this stream */
    unsigned chunks;   /* chunk submissions in a row (pipelining) */
    unsigned kind;     /* CB_CHUNK_H2D: it holds a host-to-device copy; CB_CHUNK_HELD: its segment is held (engine.h) */
    size_t chunk_at;   /* the length at which the run is submitted ... */
    size_t merged_at;  /* ... or, while it merges into one copy, its bytes (rule 18; 0: the first chunk's) */
    size_t merged_next; /* the bytes of the merged chunk after the one due (0: none due) */
    unsigned chunk_shape; /* ... computed for these inputs (0: none yet) */
    int chunk_due;     /* the run reached chunk_at: one holding records goes out when the stream's next copy comes */
};

/* A run.  Its own lock guards everything below it; the store's lock (store.c)
 * guards hh, live and the table.  Never freed while the process lives: a
 * removed run is cleared and kept for reuse, so a stale pointer to it (a
 * thread's last-run cache, an event's holder) stays safe to lock.  Written by
 * run.c only, except: its place in the store (hh, next_free, live, key) and
 * its clearing when it is removed, reused or its context dies, or the process
 * forks (store.c); warm (notes.c); facts.sm_busy (smwork.c,
 * cb_smwork_note_busy), facts.fence (ptds.c, the per-thread stream's fences),
 * seg (choose.c) and the copies' arm (cb_run_set_arm); other files read it
 * under its lock and change it through these files' functions. */
struct cb_run {
    UT_hash_handle hh;
    atomic_int mu;                /* its lock (futex.h) */
#ifdef CB_DEBUG
    uintptr_t locker; /* the debug build's: the thread holding mu (its &cb_tls_held), 0: none */
#endif
    /* a burst is under way: its first copy passed through, the next join the
     * run (rule 8).  Written by notes.c only (and cleared by store.c's removal
     * and reuse): under mu, or without it by the thread whose note says a new
     * burst begins (cb_run_pass_first_here); kept out of the part a reused run
     * clears, so such a write never meets that clearing */
    atomic_int warm;
    /* it holds copies, markers, a pending join or a pending error: a pass spell
     * (cb_run_spell_here) reads it without the lock.  Written by
     * cb_run_set_active only */
    atomic_int holds;
    struct cb_run *next_free;     /* the store's free list */
    int live;                     /* in the table, under key (read under mu or the store lock) */
    struct cb_run_key key;
    struct cb_stream_facts facts; /* learned when the run opened (cb_run_open) */
    struct cb_copies q;           /* the queued copies */
    struct cb_iset writes, reads; /* what its 1D copies write and read (hazard.c) */
    struct cb_shapes shapes;      /* its 2D copies (hazard.c) */
    /* the store's counts (run.c, cb_run_set_active) */
    int active;                   /* counted in cb_runs_active() */
    int queued;                   /* counted in cb_runs_nonempty() */
    int marked;                   /* holds markers: counted in cb_runs_marked() */
    int blocking_active;          /* counted in cb_runs_blocking_active() */
    CUresult pending; /* error of a flush made on this stream's behalf, not yet reported (cb_run_keep_pending) */
    struct cb_pace pace;
    struct cb_looks looks;
    struct cb_feed feed;
    struct cb_segment seg;        /* the measured choice covering its copies (choose.c writes it) */
};

/* A copy the program asked for, classified.  Written only by copy.c. */
struct cb_copy_req {
    int hook;
    CUdeviceptr dst, src;
    size_t bytes;
    size_t width;    /* a 2D copy's row length (bytes: all its rows) */
    CUstream stream; /* as the program passed it */
    enum cb_stream_kind sk;
    struct cb_class dcls, scls;
    CUcontext ctx;  /* the current context (known for a legacy-stream copy) */
    int kernel_ok;  /* the copy kernel may execute it on its stream (copy.c) */
    struct cb_rows rows; /* a 2D copy's rows (height 0: a 1D copy) */
    int is_2d;                   /* it came through a 2D entry point (copy2d may be NULL) */
    const CUDA_MEMCPY2D *copy2d; /* ... and the program's description of it, to issue it as it came */
};

/* A copy's footprint, for the hazard checks. */
static inline struct cb_shape cb_req_shape(const struct cb_copy_req *rq)
{
    if (!rq->rows.height)
        return (struct cb_shape){rq->dst, rq->src, rq->bytes, 1, 0, 0};
    return (struct cb_shape){rq->dst, rq->src, rq->width, rq->rows.height, rq->rows.dpitch, rq->rows.spitch};
}

/* ---- run.c: a run's lock and its own state ----------------------------------------- */
/* Locks (store.c's header says why this is deadlock-free): the store's lock, one
 * lock per run, taken in that order; a thread holds at most one run lock
 * (fork's prepare handler: all).  Helper locks (events, ptds.c, the kernel's
 * modules, the timer, smwork.c) are taken under a run lock, never the other way. */
extern CB_TLS int cb_tls_held; /* run locks this thread holds */
/* This thread holds a run lock: a submission's driver call re-entered a wrapper. */
static inline int cb_runs_locked_here(void) { return cb_tls_held > 0; }
/* For CB_ASSERT (internal.h; defined in the debug build only): fork's prepare
 * handler takes every run lock (store.c); this thread holds run's lock (without
 * the debug build's record of who holds it: some run lock). */
extern CB_TLS int cb_tls_forking;
#ifdef CB_DEBUG
static inline int cb_run_locked_here(const struct cb_run *run) { return run->locker == (uintptr_t)&cb_tls_held; }
#else
static inline int cb_run_locked_here(const struct cb_run *run) { return (void)run, cb_tls_held > 0; }
#endif
/* A stream's key: the handle; (CU_STREAM_PER_THREAD, owner thread); or
 * (CU_STREAM_LEGACY, ctx) for the legacy stream of the current context ctx. */
static inline struct cb_run_key cb_run_key_of(CUstream s, enum cb_stream_kind sk, CUcontext ctx)
{
    uintptr_t owner = sk == CB_SK_LEGACY ? (uintptr_t)ctx : cb_stream_owner(sk); /* one legacy stream per context */
    return (struct cb_run_key){(uintptr_t)cb_stream_handle(s, sk), owner};
}
/* The run's lock just taken: this thread holds one more (the debug build
 * records which). */
static inline void cb_run_taken(struct cb_run *run)
{
    CB_IF_DEBUG(CB_ASSERT(run->locker == 0); run->locker = (uintptr_t)&cb_tls_held;)
    (void)run;
    cb_tls_held++;
}
/* A run's lock (futex.h), taken and released inline on the copy path. */
static inline void cb_run_lock(struct cb_run *run)
{
    CB_ASSERT(cb_tls_held == 0 || cb_tls_forking); /* at most one run lock: the lock order */
    cb_futex_lock(&run->mu);
    cb_run_taken(run);
}
/* cb_run_lock, unless another thread holds the lock: 0, nothing changed. */
static inline int cb_run_trylock(struct cb_run *run)
{
    CB_ASSERT(cb_tls_held == 0);
    if (!cb_futex_trylock(&run->mu))
        return 0;
    cb_run_taken(run);
    return 1;
}
static inline void cb_run_unlock(struct cb_run *run)
{
    /* what the store counts agrees with the queue whenever the lock is let go */
    CB_IF_DEBUG(CB_ASSERT(cb_run_locked_here(run)); run->locker = 0;
                CB_ASSERT(!run->live || (run->queued == (run->q.n > 0) && (!run->queued || run->active) &&
                                         run->marked == (run->q.nmarks > 0)));)
    cb_tls_held--;
    cb_futex_unlock(&run->mu);
}
/* Learn what the run's stream is (run->facts); -1 when a driver query failed.
 * For a per-thread stream, the owner's earlier side submission is joined and
 * ev_start recorded.  No clock is read: a copy that passes through after all
 * costs none. */
int cb_run_open(struct cb_run *run, CUstream stream);
/* The empty run's first copy joins it: the run's age counts from now; if the
 * stream was quiet, the timer's first look is due CUBATCH_FLUSH_US from now
 * (run->looks.look_ns). */
void cb_run_opened(struct cb_run *run);
/* Queue a copy (hazards already checked); -1 out of memory (nothing queued, the
 * hazard sets possibly larger: only ever more conservative). */
int cb_run_append(struct cb_run *run, const struct cb_copy_req *rq);
static inline int cb_run_hazard(const struct cb_run *run, const struct cb_copy_req *rq)
{
    if (CB_LIKELY(!rq->rows.height && !run->shapes.n))
        return cb_hazard(&run->writes, &run->reads, rq->dst, rq->src, rq->bytes);
    struct cb_shape c = cb_req_shape(rq);
    return cb_hazard_shaped(&run->writes, &run->reads, &run->shapes, &c);
}
/* Queue an event record after the copies queued so far (rule 11; marker.c):
 * room for one more first (-1: out of memory), then the record, which the
 * room made sure cannot fail. */
int cb_run_mark_room(struct cb_run *run);
void cb_run_mark(struct cb_run *run, const struct cb_marker *m);
void cb_run_clear(struct cb_run *run, struct cb_standin *standin); /* after a submission (standin: engine.c's, or NULL) */

/* The run's own state is written here only; each call below is one change of
 * it, made under the run's lock by the file that decides it. */
CUresult cb_run_take_pending(struct cb_run *run);      /* the error kept for the stream's next call, now told */
void cb_run_keep_pending(struct cb_run *run, CUresult err); /* ... kept (flush.c) */
static inline int cb_run_warm(struct cb_run *run) { return atomic_load_explicit(&run->warm, memory_order_relaxed); }
/* Batching saves the program about one microsecond of driver time per copy, but
 * a deferred copy starts late: when the program itself spends several
 * microseconds between copies (a Python loop), the GPU would have run each copy
 * while the next was being issued, and deferring them costs more than it saves.
 * The timer's looks find such a stream (flush.c: copies joined its run further
 * apart than CUBATCH_SLOW_NS: cb_run_found_slow); from then on its copies pass
 * through, each read against the clock for a running mean of the gaps, until
 * they come faster again.  A gap over 100 us is a pause between bursts, not a
 * pace: it ends the slow spell at once.  No clock is read for a stream that is
 * not slow.  cb_run_still_slow: 1 while the stream is slow. */
int cb_run_still_slow(struct cb_run *run);
void cb_run_found_slow(struct cb_run *run, uint64_t pace_ns, uint64_t now);
#ifdef CB_DEBUG
/* The debug build's check of the pace's shortcut (copy.c), changing nothing:
 * cb_run_still_slow's answer now. */
int cb_run_slow_peek(const struct cb_run *run);
#endif
/* A copy joined: the chunk length (by the engine its previous submission took)
 * computed again when what decides it changed, or for a run merging into one
 * copy its bytes against the merged chunk's (rule 18); 1 when the run reached
 * it (it goes out now, or when the stream's next copy comes if it holds
 * records). */
static inline int cb_run_feed_copy(struct cb_run *run)
{
    /* what decides the length changes only when the run opens, a copy outside
     * the kernel's reach or the first host-to-device copy joins */
    struct cb_feed *fd = &run->feed;
    int kernel_chunks = run->q.kernel_ok && !(run->facts.sm_busy && run->q.has_host);
    unsigned shape = 1u | (unsigned)kernel_chunks << 1 | fd->kind << 2;
    if (CB_UNLIKELY(shape != fd->chunk_shape)) {
        fd->chunk_shape = shape;
        fd->chunk_at = cb_engine_chunk(kernel_chunks, fd->kind, fd->chunks);
    }
    if (kernel_chunks && cb_engine_merged_one(&run->q, fd->kind)) {
        size_t bytes = run->q.merged.sizes[0], at = fd->merged_at ? fd->merged_at : CB_MERGED_CHUNK_FIRST;
        if (!fd->chunk_due && (bytes >= at || run->q.n >= cb_opt(CB_OPT_max_batch))) {
            fd->chunk_due = 1;
            fd->merged_next = cb_engine_merged_next(bytes, cb_now_ns() - run->looks.opened_ns, run->q.has_host);
        }
    } else if (run->q.n >= fd->chunk_at) {
        fd->chunk_due = 1;
    }
    return fd->chunk_due;
}
void cb_run_chunk_sent(struct cb_run *run);  /* a chunk went out: the next is longer */
void cb_run_chunks_end(struct cb_run *run);  /* a flush that ends the growth */
void cb_run_orphan(struct cb_run *run);      /* its per-thread stream's owner exited */
/* The timer looks at it (flush.c): copies joined and time passed since its
 * previous look; the next look at `at` (0: none until a run opens). */
void cb_run_looked(struct cb_run *run, uint64_t now, uint64_t *joined, uint64_t *span);
void cb_run_look_at(struct cb_run *run, uint64_t at);
/* What the measured choice gave the copies queued from now on (choose.c). */
static inline void cb_run_set_arm(struct cb_run *run, enum cb_arm arm)
{
    run->q.arm = (unsigned char)arm;
    run->feed.kind = (run->feed.kind & ~(unsigned)CB_CHUNK_HELD) | (arm == CB_ARM_HELD ? (unsigned)CB_CHUNK_HELD : 0u);
}
void cb_run_set_active(struct cb_run *run); /* after any change of q.n, pending, fences */
/* After a copy joined the run: counted already unless the run was empty (its
 * stream's facts and markers change only while it is). */
static inline void cb_run_set_queued(struct cb_run *run)
{
    if (CB_UNLIKELY(!run->queued || !run->active))
        cb_run_set_active(run);
}
int cb_run_is_owner(const struct cb_run *run);
extern atomic_int cb_active;
/* some run holds copies, a pending join or a pending error */
static inline int cb_runs_active(void) { return atomic_load_explicit(&cb_active, memory_order_acquire) > 0; }
int cb_runs_nonempty(void); /* some run holds copies */
/* Two counts of run.c's (it alone writes them), read inline: every copy asks
 * whether rule 3 orders it after another stream's run, and the answer is
 * nearly always no. */
extern atomic_int cb_legacy_nonempty, cb_blocking_active;
/* some legacy-stream run holds copies */
static inline int cb_runs_legacy_pending(void)
{
    return atomic_load_explicit(&cb_legacy_nonempty, memory_order_acquire) > 0;
}
/* some active run of a blocking stream other than the legacy one */
static inline int cb_runs_blocking_active(void)
{
    return atomic_load_explicit(&cb_blocking_active, memory_order_acquire) > 0;
}
/* A copy on a stream of kind sk may have to follow another stream's run (rule 3:
 * blocking runs before a legacy-stream copy; its mirror image: legacy runs before
 * a blocking-stream copy); cb_flush_cross (flush.c) finds out and flushes. */
static inline int cb_runs_cross_pending(enum cb_stream_kind sk)
{
    return sk == CB_SK_LEGACY ? cb_runs_blocking_active() : cb_runs_legacy_pending();
}
int cb_runs_marked(void);         /* some run holds markers */
/* fork's child (store.c's cb_runs_atfork_child): every count starts from zero. */
void cb_run_counts_atfork_child(void);

#endif /* CUBATCH_RUN_H */
