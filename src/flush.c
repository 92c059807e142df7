/* flush.c - submitting runs, and every reason to: a call naming the stream, a
 * legacy-stream call (rule 3), a context-wide call (rule 6), a hazard (rule 5),
 * a full run or the timer (rule 7), exit and fork (rule 10), the owner of a
 * per-thread stream exiting (rule 4).  Which wrapper asks for which is the ACTION
 * column of hooks.def; the decision to flush on the copy path is copy.c's. */
#include "run.h"
#include "store.h"
#include "notes.h"
#include "flush.h"
#include "capture.h"
#include "stats.h"
#include "nvtx.h"

atomic_int cb_flush_closed_flag; /* after the final flush at exit: nothing more is deferred */


/* What a flush does besides submitting, by its reason: the `does` column of
 * stats.def's CB_FLUSH rows (cb_flush_does), and why.
 *
 * Rule 9: a failed copy's error reaches the program.  A call of the program
 * that flushes (CALL) returns it.  Nobody waits for the timer, the pace rule's
 * look, fork or exit: the error is kept in the run (KEEPS_ERROR) for the
 * stream's next call, a copy (copy.c) or any call that flushes the stream or
 * the context.
 *
 * A call naming the stream, a context-wide one, the timer or exit end the
 * burst: the stream's next copy is the first of a new one.  A hazard, a chunk or
 * a copy passing through do not (KEEPS_BURST); nor does a stream wait.  A wait
 * must flush (rule 11: moved before earlier copies, it could make a kernel
 * elsewhere spin forever on a flag one of them sets), but it says nothing about
 * the program's pace: frameworks put one between groups of copies (JAX's
 * host-to-device stream: copy, records, wait, copy, ...), and were the copy
 * after each wait to go out alone as a burst's first, most of theirs would.
 * The copy after a wait joins a new run at once instead; an isolated one waits
 * at most for the timer's first look (CUBATCH_FLUSH_US).  Event records do not
 * end the burst either: they join the run (marker.c).
 *
 * The timer, the pace rule, exit and the API need not make the legacy stream
 * wait for another thread's per-thread run (flush_matching; no JOINS_LEGACY):
 * no legacy-ordered call of the program is being made. */
#define CB_STAT(name, kind, doc)
#define CB_FLUSH(name, does, doc)                                              \
    _Static_assert(!((does) & CB_FD_CALL) == !!((does) & CB_FD_KEEPS_ERROR), \
                   #name ": its error is returned to the waiting call, or kept for the next");
#include "stats.def"
#undef CB_FLUSH
#undef CB_STAT

CUresult cb_flush_run(struct cb_run *run, enum cb_flush_why why)
{
    CB_ASSERT(cb_run_locked_here(run)); /* a run is submitted by the thread holding its lock, once */
    CUresult rc = CUDA_SUCCESS;
    unsigned does = cb_flush_does(why);
    if (!(does & CB_FD_KEEPS_BURST))
        cb_run_burst_ends(run);
    if (!(does & CB_FD_CHUNK))
        cb_run_chunks_end(run);
    int owner = cb_run_is_owner(run), submitted = run->q.n > 0;
    if (run->q.n > 0) {
        cb_bump(&cb_stats_thread()->v[cb_flush_stat(why)], 1);
        if (!(does & CB_FD_CHUNK))
            cb_stat_run_ended(); /* the call this thread is in, if any */
        if (run->facts.legacy)
            CB_COUNT(legacy_runs);
        cb_nvtx_flush(why); /* the reason, for a profiler's range and marker (nvtx.c) */
        struct cb_standin *standin = NULL;
        rc = cb_engine_submit(&run->q, &run->facts, owner, &standin);
        cb_run_clear(run, standin);
    }
    /* A measured segment ends with the submission of its copies, a passed-
     * through one with its burst (choose.c). */
    if (run->seg.open && (run->seg.arm == CB_ARM_PASS ? !(does & CB_FD_KEEPS_BURST) : submitted))
        cb_segment_end(&run->seg, run->facts.stream);
    if (!submitted && owner && run->facts.fence.ev_join)
        rc = cb_fence_owner_join(&run->facts);
    /* an error kept by an earlier flush came first */
    CUresult err = cb_first_error(run->pending, rc);
    int keep = (does & CB_FD_KEEPS_ERROR) != 0;
    cb_run_keep_pending(run, keep ? err : CUDA_SUCCESS);
    cb_run_set_active(run);
    return keep ? CUDA_SUCCESS : err;
}

/* Which runs a flush takes. */
enum cb_which { CB_ALL_RUNS, CB_BLOCKING_RUNS, CB_BLOCKING_NOT_LEGACY, CB_LEGACY_RUNS };

static int matches(const struct cb_run *run, enum cb_which which)
{
    int blocking = run->facts.blocking || run->facts.ptds;
    switch (which) {
    case CB_ALL_RUNS: return 1;
    case CB_BLOCKING_RUNS: return blocking;
    case CB_BLOCKING_NOT_LEGACY: return blocking && !run->facts.legacy;
    case CB_LEGACY_RUNS: return run->facts.legacy;
    }
    return 1;
}

/* Flush every active run that matches, in table order, one run lock at a time
 * (no run lock held: store.c). */
static CUresult flush_matching(enum cb_which which, enum cb_flush_why why)
{
    CUresult first = CUDA_SUCCESS;
    struct cb_run *run, *tmp;
    cb_store_lock();
    CB_RUNS_EACH(run, tmp) {
        cb_run_lock(run);
        if (!(run->active || cb_run_warm(run)) || !matches(run, which)) {
            cb_run_unlock(run);
            continue;
        }
        CUresult rc = cb_flush_run(run, why);
        /* legacy-ordered calls (and context-wide ones, which include synchronous
         * copies) must follow other threads' side-submitted per-thread copies,
         * a refused submission's replayed ones too */
        if ((cb_flush_does(why) & CB_FD_JOINS_LEGACY) && run->facts.ptds)
            rc = cb_first_error(rc, cb_fence_legacy_join(&run->facts));
        cb_run_unlock(run);
        first = cb_first_error(first, rc);
    }
    cb_store_unlock();
    return first;
}

static CUresult flush_unless_idle(enum cb_which which, enum cb_flush_why why)
{
    if (which == CB_ALL_RUNS && !(cb_flush_does(why) & CB_FD_KEEPS_BURST))
        cb_runs_all_named_here();
    if (cb_runs_locked_here() || !cb_runs_active())
        return CUDA_SUCCESS;
    return flush_matching(which, why);
}

CUresult cb_flush_legacy(void) { return flush_unless_idle(CB_BLOCKING_RUNS, CB_WHY_flush_legacy); }

CUresult cb_flush_all(enum cb_flush_why why) { return flush_unless_idle(CB_ALL_RUNS, why); }

/* Does work on s follow the legacy stream's earlier work (rule 3's mirror
 * image)?  A created stream's flags are asked only of a stream that does not
 * capture, under capture.c's lock (rule 13: cuStreamGetFlags of a capturing
 * stream invalidates its capture).  A legacy run can be counted non-empty
 * while a capture runs, for an instant: a legacy copy that found no capture
 * counted counts its run before it reads the captures again and takes itself
 * back (copy.c, legacy_run_raced_a_capture).  Work captured into a graph runs
 * when the graph does: it follows no legacy run. */
static int follows_legacy(CUstream s, enum cb_stream_kind sk)
{
    if (sk != CB_SK_CREATED)
        return 1; /* per-thread streams synchronize with the legacy stream: nothing asked */
    cb_capture_lock();
    int follows = cb_capture_stream_free(s, 0) && cb_stream_blocking(s, sk);
    cb_capture_unlock();
    return follows;
}

CUresult cb_flush_cross(CUstream s, enum cb_stream_kind sk)
{
    if (!cb_runs_cross_pending(sk))
        return CUDA_SUCCESS;
    /* Rule 3: work on the legacy stream follows every blocking stream's earlier
     * work; and the mirror image: work on a blocking stream (a per-thread one
     * too) follows the legacy stream's earlier work, so a legacy run goes first. */
    if (sk == CB_SK_LEGACY)
        return flush_matching(CB_BLOCKING_NOT_LEGACY, CB_WHY_flush_legacy);
    if (cb_runs_legacy_pending() && follows_legacy(s, sk))
        return flush_matching(CB_LEGACY_RUNS, CB_WHY_flush_legacy);
    return CUDA_SUCCESS;
}

CUresult cb_flush_capture_begin(CUstream s, int ptsz_entry)
{
    CUresult rc = cb_flush_stream(s, ptsz_entry, CB_WHY_flush_stream);
    /* counted before the capture begins: no legacy run may open from now on.
     * A copy that found none counted and is joining a legacy run right now
     * either shows here (its run counted non-empty) or sees this count and
     * takes the copy back (copy.c): the count and that run's are each written
     * before the other is read, all sequentially consistent (one total order). */
    cb_capture_pending();
    if (!cb_runs_locked_here() && atomic_load(&cb_legacy_nonempty) > 0)
        rc = cb_first_error(rc, flush_matching(CB_LEGACY_RUNS, CB_WHY_flush_stream));
    return rc;
}

/* The run holding e's latest record goes out (no run lock held).  The holder
 * is read from the event table, then checked again under its own lock: it may
 * have gone out meanwhile, or been removed (runs are never freed, store.c). */
CUresult cb_flush_holder(CUevent e)
{
    struct cb_event info;
    if (cb_event_info(e, &info) || !info.run)
        return CUDA_SUCCESS;
    struct cb_run *run = info.run;
    CUresult rc = CUDA_SUCCESS;
    cb_run_lock(run);
    if (cb_event_held_by(e, run))
        rc = cb_flush_run(run, CB_WHY_flush_event); /* clears the holder (run.c) */
    cb_run_unlock(run);
    return rc;
}

/* The runs a call naming stream s must submit first, while some run holds
 * something.  Apart from cb_flush_stream, so that a call made while nothing is
 * held (a lone copy's synchronize) does not pay for this body's registers. */
static __attribute__((noinline)) CUresult flush_stream_runs(CUstream s, enum cb_stream_kind sk, enum cb_flush_why why)
{
    if (sk == CB_SK_LEGACY)
        return cb_flush_legacy();
    struct cb_run_key key = cb_run_key_of(s, sk, NULL);
    CUresult rc = cb_flush_cross(s, sk);
    struct cb_run *run = cb_run_lock_key(&key, 0, NULL);
    if (run) {
        if (run->active || cb_run_warm(run))
            rc = cb_first_error(rc, cb_flush_run(run, why));
        cb_run_unlock(run);
    }
    return rc;
}

CUresult cb_flush_stream(CUstream s, int ptsz_entry, enum cb_flush_why why)
{
    enum cb_stream_kind sk = cb_stream_kind(s, ptsz_entry);
    if (!(cb_flush_does(why) & CB_FD_KEEPS_BURST))
        cb_runs_named_here(s, sk);
    if (cb_runs_locked_here() || !cb_runs_active())
        return CUDA_SUCCESS;
    return flush_stream_runs(s, sk, why);
}

CUresult cb_issue_ahead_of_run(const struct cb_copy_req *rq)
{
    if (!cb_runs_active() || cb_runs_locked_here())
        return cb_issue_copy(rq->hook, rq->dst, rq->src, rq->bytes, rq->stream);
    struct cb_run_key key = cb_run_key_of(rq->stream, rq->sk, rq->ctx);
    CUresult fe = cb_flush_cross(rq->stream, rq->sk);
    struct cb_run *run = cb_run_lock_key(&key, 0, NULL);
    /* the cross flush's error, if any, came first: it is the one reported */
    if (run && run->q.n > 0 && cb_run_hazard(run, rq))
        fe = cb_first_error(fe, cb_flush_run(run, CB_WHY_flush_hazard));
    else if (run && run->q.n == 0 && (run->facts.fence.ev_join || run->pending != CUDA_SUCCESS))
        fe = cb_first_error(fe, cb_flush_run(run, CB_WHY_flush_passthrough)); /* a pending join or error: settle it */
    /* Issued under the run's lock so that no other thread can flush the run
     * between the copy and the fence below. */
    CUresult rc = cb_issue_copy(rq->hook, rq->dst, rq->src, rq->bytes, rq->stream);
    if (run && run->q.n > 0 && run->facts.ptds && run->facts.fence.ev_start) {
        /* Copies queued from now on may depend on this one; a side-stream
         * submission waits for ev_start only, so move it past this copy. */
        if (cb_fence_rerecord(&run->facts) != CUDA_SUCCESS)
            fe = cb_first_error(fe, cb_flush_run(run, CB_WHY_flush_stream));
    }
    if (run)
        cb_run_unlock(run);
    return cb_first_error(fe, rc);
}

/* An error no call of the program can be told any more (its stream is
 * destroyed, its thread or the process exits): said where it still can be. */
static void untold(CUresult rc, const char *why)
{
    if (rc != CUDA_SUCCESS)
        cb_warn("a deferred copy failed (CUresult %d) and %s: the program was never told", (int)rc, why);
}

void cb_forget_stream(CUstream s)
{
    if (cb_stream_kind(s, 0) != CB_SK_CREATED)
        return;
    struct cb_run_key key = {(uintptr_t)s, 0};
    cb_store_lock();
    struct cb_run *run = cb_store_find(&key);
    if (run) {
        cb_run_lock(run);
        CUresult rc = CUDA_SUCCESS;
        if (run->q.n > 0) /* queued between the flush and the destroy by another thread */
            rc = cb_flush_run(run, CB_WHY_flush_stream);
        untold(cb_first_error(rc, run->pending), "its stream was destroyed");
        cb_run_remove(run);
        cb_run_unlock(run);
    }
    cb_store_unlock();
}

void cb_flush_thread_gone(void)
{
    struct cb_run_key key = {(uintptr_t)CU_STREAM_PER_THREAD, (uintptr_t)pthread_self()};
    cb_store_lock();
    struct cb_run *run = cb_store_find(&key);
    if (run) {
        cb_run_lock(run);
        cb_run_orphan(run); /* its stream can no longer be named: side stream */
        if (run->q.n > 0)
            cb_flush_run(run, CB_WHY_flush_exit);
        untold(run->pending, "its thread exited");
        cb_fence_legacy_join(&run->facts); /* nobody will join later: the legacy stream waits now */
        cb_run_remove(run);
        cb_run_unlock(run);
    }
    cb_store_unlock();
}

void cb_flush_exit(void)
{
    /* closed first: a copy that takes its run's lock after the flush below
     * reached that run sees it and passes through */
    atomic_store(&cb_flush_closed_flag, 1);
    flush_matching(CB_ALL_RUNS, CB_WHY_flush_exit);
    struct cb_run *run, *tmp;
    cb_store_lock();
    CB_RUNS_EACH(run, tmp) {
        cb_run_lock(run);
        untold(run->pending, "the process exited");
        cb_run_unlock(run);
    }
    cb_store_unlock();
}

/* cubatch_set_enabled(0): copies pass through (copy.c reads this on the copy
 * path and again under the run lock, so that none joins a run after the flush
 * below). */
atomic_int cb_flush_paused_flag;

CUresult cb_flush_set_enabled(int on)
{
    atomic_store(&cb_flush_paused_flag, !on);
    if (on || cb_runs_locked_here())
        return CUDA_SUCCESS;
    return flush_matching(CB_ALL_RUNS, CB_WHY_flush_api);
}

/* Before fork (fork.c): every run is submitted, so that the parent loses nothing
 * and the child starts with empty queues; nobody waits for this flush: its
 * row keeps the error for the stream's next call (stats.def). */
void cb_flush_before_fork(void)
{
    flush_matching(CB_ALL_RUNS, CB_WHY_flush_exit); /* the parent loses nothing */
}
