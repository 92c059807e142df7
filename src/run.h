/* run.h - a run: the copies deferred on one stream, in program order, waiting to
 * be submitted together; and the store of runs (run.c), with the hazard index
 * of each (hazard.c). */
#ifndef CUBATCH_RUN_H
#define CUBATCH_RUN_H

#include "engine.h"
#include "event.h"
#include "hazard.h"
#include "choose.h"
#include "stream.h"
#include "futex.h"

#include <uthash.h>


/* Which stream a run is for: made by cb_run_key_of only, from stream.h's
 * handle and owner. */
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
    unsigned chunk_shape; /* ... computed for these inputs (0: none yet) */
    int chunk_due;     /* the run reached chunk_at: one holding records goes out when the stream's next copy comes */
};

/* A run.  Its own lock guards everything below it; the store's lock (run.c)
 * guards hh, live and the table.  Never freed while the process lives: a
 * removed run is cleared and kept for reuse, so a stale pointer to it (a
 * thread's last-run cache, an event's holder) stays safe to lock.  Written by
 * run.c only, except: facts.sm_busy (smwork.c, cb_smwork_note_busy),
 * facts.fence (ptds.c, the per-thread stream's fences), seg (choose.c) and the
 * copies' arm (cb_run_set_arm); other files read it under its lock and change
 * it through run.c's functions. */
struct cb_run {
    UT_hash_handle hh;
    atomic_int mu;                /* its lock (futex.h) */
#ifdef CB_DEBUG
    uintptr_t locker; /* the debug build's: the thread holding mu (its &cb_tls_held), 0: none */
#endif
    /* a burst is under way: its first copy passed through, the next join the
     * run (rule 8).  Written by run.c only: under mu, or without it by the
     * thread whose note says a new burst begins (cb_run_pass_first_here); kept
     * out of the part a reused run clears, so such a write never meets that
     * clearing */
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
    struct cb_iset writes, reads; /* what they write and read (hazard.c) */
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

/* A copy the program asked for, classified (copy.c). */
struct cb_copy_req {
    int hook;
    CUdeviceptr dst, src;
    size_t bytes;
    CUstream stream; /* as the program passed it */
    enum cb_stream_kind sk;
    struct cb_class dcls, scls;
    CUcontext ctx;  /* the current context (known for a legacy-stream copy) */
    int kernel_ok;  /* the copy kernel may execute it on its stream (copy.c) */
};

/* ---- run.c: the store of runs ------------------------------------------------------ */
/* Locks (run.c's header says why this is deadlock-free): the store's lock, one
 * lock per run, taken in that order; a thread holds at most one run lock
 * (fork's prepare handler: all).  Helper locks (events, ptds.c, the kernel's
 * modules, the timer, smwork.c) are taken under a run lock, never the other way. */
extern CB_TLS int cb_tls_held; /* run locks this thread holds */
/* This thread holds a run lock: a submission's driver call re-entered a wrapper. */
static inline int cb_runs_locked_here(void) { return cb_tls_held > 0; }
/* For CB_ASSERT (internal.h; defined in the debug build only): fork's prepare
 * handler takes every run lock (run.c); this thread holds run's lock (without
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
/* The stream's run, locked (no run lock held before); create: make it when
 * there is none (*created = 1).  NULL: none (or out of memory). */
struct cb_run *cb_run_lock_key(const struct cb_run_key *key, int create, int *created);
/* A run's lock (futex.h), taken and released inline on the copy path. */
static inline void cb_run_lock(struct cb_run *run)
{
    CB_ASSERT(cb_tls_held == 0 || cb_tls_forking); /* at most one run lock: the lock order */
    cb_futex_lock(&run->mu);
    CB_IF_DEBUG(CB_ASSERT(run->locker == 0); run->locker = (uintptr_t)&cb_tls_held;)
    cb_tls_held++;
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
/* The store's lock: held to iterate (CB_RUNS_EACH) and to remove. */
void cb_store_lock(void);
void cb_store_unlock(void);
struct cb_run *cb_store_find(const struct cb_run_key *key); /* store lock held */
void cb_run_remove(struct cb_run *run); /* store lock and run lock held: cleared, kept for reuse */
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
    return cb_hazard(&run->writes, &run->reads, rq->dst, rq->src, rq->bytes);
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
void cb_run_burst_begins(struct cb_run *run);          /* its first copy passed through (rule 8) */
void cb_run_burst_ends(struct cb_run *run);            /* a call named the stream */
int cb_run_in_burst(struct cb_run *run);               /* its next copy joins the run (rule 8) */
/* A segment begins (the run's lock held): 1 when it is the first of its burst,
 * once per burst.  A note written by another thread meanwhile may make it 0:
 * the held arm is then not offered to that burst, nothing else changes. */
int cb_run_burst_first_segment(struct cb_run *run);
static inline int cb_run_warm(struct cb_run *run) { return atomic_load_explicit(&run->warm, memory_order_relaxed); }
/* Rule 8 without a lock: a copy on a created or the legacy stream whose burst this thread
 * began and a call on this thread has named since begins a new burst and
 * passes through.  Asked only while no run anywhere holds anything
 * (!cb_runs_active(): so neither does this stream's, and the run's lock would
 * find it empty; a copy another thread queues meanwhile is not ordered with
 * this one).  A legacy key may leave its context out (owner 0): while the
 * thread has noted one context's legacy stream only, that note answers (0
 * with two: the caller asks for the context).  Passing through is right on
 * any stream while nothing is held; the note only says a burst begins, so
 * another context's (the thread switched since) at worst passes one copy
 * more.  1: it does. */
int cb_run_pass_first_here(const struct cb_run_key *key);
#ifdef CB_DEBUG
/* The debug build's checks of the shortcuts (copy.c), each changing nothing:
 * the run of the note cb_run_pass_first_here would read, and the key it was
 * noted under (NULL: no note); whether run is still key's (a removed run may
 * have been reused for another stream); cb_run_still_slow's, cb_run_in_burst's
 * and cb_run_spell_here's answers now. */
struct cb_run *cb_run_first_note(const struct cb_run_key *key, struct cb_run_key *noted);
int cb_run_keyed(const struct cb_run *run, const struct cb_run_key *key);
int cb_run_slow_peek(const struct cb_run *run);
int cb_run_in_burst_peek(const struct cb_run *run);
int cb_run_spell_peek(const struct cb_run_key *key, uintptr_t upload);
#endif
/* Pass spells.  A copy that passes through on a created stream because the
 * measured choice passes its segment (pass_chosen) or because the GPU is busy
 * (pass_busy) would take the run's lock only to find the same answer for the
 * stream's next copies: the segment passes its `limit` copies, whatever they
 * are; a load verdict answers the stream's next 32 questions, asked by uploads
 * the copy kernel could take.  So the thread that passed it notes a spell: its
 * next copies on that stream (as many as the segment or the verdict has left;
 * for a verdict, uploads of the same tag only) pass through without the lock,
 * while the run holds nothing (its `holds`), no run was removed since (a
 * reused handle is another stream), and no legacy run waits (rule 3).  A call
 * on this thread naming the stream ends the spell, as it ends the burst.
 * Passing through is what the program would have done: a spell only decides
 * sooner that nothing is batched.  cb_run_spell_begin (the run's lock held,
 * after the copy passed): copies: how many may pass so (0: none); why: the
 * reason they count under; segment: they count in the run's open PASS segment
 * (else upload: the tag they must have, never 0).  cb_run_spell_here: upload:
 * the copy's tag (0: not an upload the kernel could take); the reason when the
 * copy passes by the spell, else 0. */
void cb_run_spell_begin(struct cb_run *run, unsigned copies, int why, int segment, uintptr_t host_alloc,
                        uintptr_t upload);
int cb_run_spell_here(const struct cb_run_key *key, uintptr_t host_alloc, uintptr_t upload);
extern CB_TLS unsigned cb_tls_spells_live;
/* This thread holds a spell (asked first: nearly always no). */
static inline int cb_run_spells_here(void) { return cb_tls_spells_live != 0; }
/* A call on this thread names stream s (or, below, every stream): the bursts
 * this thread began there end (no run touched). */
void cb_runs_named_here(CUstream s, enum cb_stream_kind sk);
void cb_runs_all_named_here(void);
int cb_runs_burst_here(void); /* this thread began a burst no call has named yet */
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
/* A copy joined: the chunk length (by the engine its previous submission took)
 * computed again when what decides it changed; 1 when the run reached it (it
 * goes out now, or when the stream's next copy comes if it holds records). */
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
    if (run->q.n >= fd->chunk_at)
        fd->chunk_due = 1;
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
/* Each run in the table, in turn (store lock held; lock each to look at it). */
#define CB_RUNS_EACH(run, tmp) HASH_ITER(hh, cb_run_table, run, tmp)
extern struct cb_run *cb_run_table;
void cb_forget_context_runs(CUcontext ctx); /* no lock held: its runs' events died with it */
/* fork: prepare takes the store lock and every run lock in table order;
 * parent releases them; the child's store is empty, its locks new. */
void cb_runs_atfork_prepare(void);
void cb_runs_atfork_parent(void);
void cb_runs_atfork_child(void);

#endif /* CUBATCH_RUN_H */
