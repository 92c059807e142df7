/* marker.c - event records that ride in runs, and the calls that observe them
 * (docs/design.md rule 11; the MARKER, EVENT*, WAIT, GRAPH_LAUNCH and LAUNCH_CONFIG
 * rows of hooks.def).
 *
 * A record (default flags) of an event cubatch knows to be safe, on a stream
 * whose run holds copies, is queued in that run as a marker instead of
 * flushing it; the run's copies go out first, then its markers in record order,
 * on the run's stream (engine.c; another thread's per-thread run: on the side
 * stream, after its side submission, which waits for everything the owner put
 * on its stream before the run opened or after a copy passed ahead of it).  A
 * marker thus only moves later, past copies of its own stream: the event
 * completes no sooner than the program asked, and no copy gains a dependency.
 *
 * It must not be observed early, so every call that could observe the event
 * first submits the run holding its record: query, synchronize, elapsed time,
 * a stream wait on any stream, destroy, an IPC handle, graph nodes that take
 * it, a new record of it anywhere (the driver keeps only the latest record:
 * the older one must not land after the newer), and a launch whose attributes
 * name it.  A graph launch submits every marker: a graph may record or wait for
 * events through nodes cubatch never saw (captured, cloned, set through generic
 * node parameters).  What already flushes the stream or the context (stream
 * synchronize, capture begin, context synchronize, ...) submits the markers with
 * the copies.
 *
 * Not deferred, so flushing as any call naming the stream: interprocess events
 * (another process may wait on them without a call cubatch sees), records with
 * CU_EVENT_RECORD_EXTERNAL, records on a capturing stream (its run holds no
 * copies), events cubatch did not see created, and events of another context
 * than the stream's (the driver refuses those: it must say so at the call). */
#include "run.h"
#include "store.h"
#include "notes.h"
#include "flush.h"
#include "waits.h"
#include "capture.h"
#include "ptds.h"
#include "stats.h"

/* cb_marker_record's record m, safe to queue, joins the run of its stream
 * (key) as a marker when that run holds copies (for a legacy or per-thread
 * stream, of the current context cur) and the event claims no other run: 1
 * (m's `stands` filled in).  A claim refused because an older record of the
 * event sits in another run sends that run out first and tries again, three
 * times at most; *rc keeps the first error. */
static int queue_marker(struct cb_marker *m, const struct cb_run_key *key, enum cb_stream_kind sk, CUcontext cur,
                        CUresult *rc)
{
    CUevent e = m->ev;
    for (int tries = 0; tries < 3; tries++) {
        struct cb_run *run = cb_run_lock_key(key, 0, NULL);
        int defer = run && run->q.n > 0 && (sk == CB_SK_CREATED || cur == run->facts.ctx);
        int claim = -1, stands = 0;
        if (defer && !cb_run_mark_room(run)) {
            claim = cb_event_claim(e, run, run->facts.ctx, &stands);
            if (claim == 0) {
                m->stands = (unsigned char)stands;
                cb_run_mark(run, m);
                CB_COUNT(markers);
                cb_run_unlock(run);
                return 1;
            }
            /* claim 1: an older record sits in another run; -1: not queueable */
        }
        if (run)
            cb_run_unlock(run);
        if (claim != 1)
            break;
        /* A new record of the event: its older one must reach the driver
         * first (with no run lock held: one run lock at a time). */
        *rc = cb_first_error(*rc, cb_flush_holder(e));
    }
    return 0;
}

CUresult cb_marker_record(int hook, int ptsz, CUevent e, CUstream s, unsigned int flags, int *queued)
{
    *queued = 0;
    /* rule 16: the stream's pending waits come before the record, and every
     * pending wait for this event waits for the record it named */
    CUresult waited = CUDA_SUCCESS;
    if (CB_UNLIKELY(cb_waits_pending())) {
        waited = cb_waits_issue_of(s);
        waited = cb_first_error(waited, cb_waits_issue_event(e));
    }
    if (cb_runs_locked_here() || !cb_runs_active()) {
        cb_event_unlink(e); /* rule 15: its new record answers from here on */
        return waited; /* nothing is queued anywhere: it goes out as it came */
    }
    enum cb_stream_kind sk = cb_stream_kind(s, ptsz);
    CUcontext cur = NULL;
    if (sk != CB_SK_CREATED && (!cb_drv.cuCtxGetCurrent || cb_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS))
        cur = NULL;
    struct cb_run_key key = cb_run_key_of(s, sk, cur);
    CUresult rc = waited;
    /* what the event is (known, not interprocess, its context) is asked with
     * the claim, under the run's lock */
    int safe = flags == 0 && !cb_flush_closed() && !cb_flush_paused();
    if (safe) {
        /* the record follows what rule 3 orders it after, as the run's copies
         * do: before its run's lock is taken (store.c) */
        rc = cb_first_error(rc, cb_flush_cross(s, sk));
        struct cb_marker m = {e, s, flags, (unsigned char)hook, 0};
        if (queue_marker(&m, &key, sk, cur, &rc)) {
            *queued = 1;
            return rc;
        }
    }
    /* Not queued (an empty run, say: the record right after a burst's first
     * copy): an older record of the event goes first, then the stream's run.
     * A record that could have been queued does not end the burst either, so
     * that copy, record, copy, record... still batches. */
    rc = cb_first_error(rc, cb_flush_holder(e));
    cb_event_unlink(e); /* recorded again now: its own record answers from here on */
    safe = safe && cb_event_may_queue(e); /* else its record ends the burst, as a stream call does */
    return cb_first_error(rc, cb_flush_stream(s, ptsz, safe ? CB_WHY_flush_wait : CB_WHY_flush_stream));
}

/* Rule 15: e, linked to stand-in si (held), gets a latest record of its own
 * that completes when si does, for a call that cannot be answered from si: it
 * keeps the event (a graph node), names it beside another (an elapsed time) or
 * waits for it in a capture, where an event recorded outside the capture is
 * refused and one never recorded is not.  It is recorded on the context's side
 * stream after a wait for si.  may_settle (a graph launch, which only waits for
 * the latest records of the events its nodes name): a complete stand-in needs
 * no record, since a timing-free event whose latest record completed is waited
 * for as one never recorded.  The hold ends, and the link with it when e has
 * its record.  1: it has. */
static int record_late(CUevent e, struct cb_standin *si, int may_settle)
{
    int settled = 0;
    if (may_settle) {
        cb_capture_lock(); /* the query and the question whether it may be made: one step (rule 13) */
        if (cb_capture_may_load() && cb_drv.cuEventQuery(si->ev) == CUDA_SUCCESS)
            settled = 1;
        cb_capture_unlock();
    }
    struct cb_ctx_guard g;
    CUstream side = NULL;
    if (!settled && si->ctx && cb_ctx_enter(si->ctx, &g) == CUDA_SUCCESS) {
        settled = cb_ctx_side_stream(si->ctx, &side) == CUDA_SUCCESS &&
                  cb_drv.cuStreamWaitEvent(side, si->ev, 0) == CUDA_SUCCESS &&
                  cb_drv.cuEventRecord(e, side) == CUDA_SUCCESS;
        cb_ctx_leave(&g);
        if (settled)
            CB_COUNT(merged_late);
    }
    if (!settled)
        cb_log(CB_LOG_WARN, "event %p: cannot record it after its run's record; it is answered from that record", (void *)e);
    cb_event_unhold(e, si, settled);
    return settled;
}

static void observe_linked(CUevent e)
{
    struct cb_standin *si = e ? cb_event_hold(e) : NULL;
    if (si)
        record_late(e, si, 0);
}

CUresult cb_event_flush_holder(CUevent e)
{
    if (cb_runs_locked_here() || !cb_runs_marked())
        return CUDA_SUCCESS;
    return cb_flush_holder(e);
}

CUresult cb_event_before_forget(CUevent e)
{
    CUresult rc = cb_waits_issue_event(e); /* rule 16: they wait for its last record */
    return cb_first_error(rc, cb_event_flush_holder(e));
}

CUresult cb_event_observe(CUevent a, CUevent b)
{
    if (cb_runs_locked_here())
        return CUDA_SUCCESS;
    CUresult rc = CUDA_SUCCESS;
    if (cb_runs_marked()) {
        rc = cb_flush_holder(a);
        if (b)
            rc = cb_first_error(rc, cb_flush_holder(b));
    }
    observe_linked(a);
    observe_linked(b);
    return rc;
}

/* Rule 15: a query, synchronize or wait of a linked event is the same call on
 * its stand-in, whose latest record completes exactly when the event's would
 * have. */
static void answer_from_standin(CUevent *e, struct cb_answer *an)
{
    an->asked = *e;
    an->standin = cb_runs_locked_here() ? NULL : cb_event_hold(*e);
    if (an->standin)
        *e = an->standin->ev;
}

CUresult cb_event_ask(CUevent *e, struct cb_answer *an)
{
    CUresult rc = cb_event_flush_holder(*e); /* the run holding its record goes out */
    answer_from_standin(e, an);
    an->success_settles = 1;
    return rc;
}

void cb_event_answered(struct cb_answer *an, CUresult rc)
{
    if (an->standin)
        cb_event_unhold(an->asked, an->standin, an->success_settles && rc == CUDA_SUCCESS);
    an->standin = NULL;
}

/* Rule 16: a wait of a created non-blocking stream for an event whose latest
 * record has completed adds nothing (on the legacy stream, and on a blocking
 * one, the wait itself is work that follows the other streams' or the legacy
 * stream's).  1 when e (known, its record submitted) is found complete.
 * Asked only while no capture is under way (a query of a captured event would
 * end its capture), of the stand-in when e has one. */
static int already_met(CUstream s, int ptsz, CUevent e, unsigned int flags)
{
    struct cb_event info;
    if (!cb_wait_may_skip(s, ptsz, flags) || cb_captures_active() || cb_event_info(e, &info) || info.run)
        return 0;
    struct cb_standin *si = cb_event_hold(e);
    cb_capture_lock();
    int met = !cb_captures_active() && cb_stream_nonblocking(s) &&
              cb_drv.cuEventQuery(si ? si->ev : e) == CUDA_SUCCESS;
    cb_capture_unlock();
    if (si)
        cb_event_unhold(e, si, met);
    return met;
}

CUresult cb_flush_wait(CUstream s, int ptsz, CUevent *e, unsigned int flags, struct cb_answer *an)
{
    an->standin = NULL;
    an->success_settles = 0; /* an enqueued wait says nothing about completion */
    an->not_forwarded = 0;
    if (!cb_runs_locked_here() && (cb_runs_active() || cb_runs_burst_here())) {
        /* rule 16: kept until s's next call; the run of s ends (its copies go
         * before the wait), not its burst */
        if (cb_wait_ride(s, ptsz, *e, flags)) {
            an->not_forwarded = 1;
            return cb_flush_stream(s, ptsz, CB_WHY_flush_wait);
        }
        if (already_met(s, ptsz, *e, flags)) {
            an->not_forwarded = 1;
            CB_COUNT(waits_met);
            return CUDA_SUCCESS; /* nothing to order: the run of s goes on */
        }
    }
    CUresult rc = cb_waits_issue(s); /* its pending waits first: this one may make s join a capture */
    rc = cb_first_error(rc, cb_event_flush_holder(*e));
    if (cb_captures_active() || (flags & CU_EVENT_WAIT_EXTERNAL))
        observe_linked(*e); /* a captured wait keeps the event in the graph: its own record */
    else
        answer_from_standin(e, an);
    return cb_first_error(rc, cb_flush_stream(s, ptsz, CB_WHY_flush_wait));
}

CUresult cb_flush_graph_launch(CUstream s, int ptsz)
{
    CUresult rc = cb_waits_issue_all(); /* rule 16: it may record any event a pending wait names */
    if (!cb_runs_locked_here() && cb_runs_marked()) {
        struct cb_run *run, *tmp;
        cb_store_lock();
        CB_RUNS_EACH(run, tmp) {
            cb_run_lock(run);
            if (run->q.nmarks > 0)
                rc = cb_first_error(rc, cb_flush_run(run, CB_WHY_flush_event));
            cb_run_unlock(run);
        }
        cb_store_unlock();
    }
    /* rule 15: a graph may wait for any event, and keeps the handle */
    while (!cb_runs_locked_here() && atomic_load_explicit(&cb_events_linked, memory_order_relaxed) > 0) {
        CUevent evs[64];
        struct cb_standin *sis[64];
        size_t n = cb_events_hold_linked(evs, sis, 64);
        size_t settled = 0;
        for (size_t i = 0; i < n; i++)
            settled += record_late(evs[i], sis[i], 1);
        if (settled < n || n < 64)
            break; /* every link ended, or one cannot: not forever */
    }
    return cb_first_error(rc, cb_flush_stream(s, ptsz, CB_WHY_flush_stream));
}

CUresult cb_flush_launch_config(const CUlaunchConfig *cfg, int ptsz)
{
    CUresult rc = cfg ? cb_waits_issue(cfg->hStream) : CUDA_SUCCESS; /* rule 16 */
    if (cfg && cfg->attrs && !cb_runs_locked_here() &&
        (cb_runs_marked() || atomic_load_explicit(&cb_events_linked, memory_order_relaxed) ||
         cb_waits_pending())) {
        for (unsigned int i = 0; i < cfg->numAttrs; i++) {
            const CUlaunchAttribute *a = &cfg->attrs[i];
            CUevent e = a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT ? a->value.programmaticEvent.event
                        : a->id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT ? a->value.launchCompletionEvent.event
                                                                                : NULL;
            if (e) {
                rc = cb_first_error(rc, cb_waits_issue_event(e)); /* the launch records it */
                rc = cb_first_error(rc, cb_flush_holder(e));
                cb_event_unlink(e);
            }
        }
    }
    return cb_first_error(rc, cb_flush_stream(cfg ? cfg->hStream : NULL, ptsz, CB_WHY_flush_stream));
}

void cb_event_created(CUevent *ph, unsigned int flags, CUresult rc)
{
    if (rc != CUDA_SUCCESS || !ph || !*ph || cb_runs_locked_here())
        return;
    CUcontext cur = NULL;
    if (!cb_drv.cuCtxGetCurrent || cb_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || !cur)
        return; /* unknown: its records pass through */
    cb_event_add(*ph, flags, cur);
}

void cb_event_forget(CUevent e, CUresult rc)
{
    if (rc != CUDA_SUCCESS || !e || cb_runs_locked_here())
        return;
    cb_event_drop(e); /* its handle may come back for another event */
}

void cb_event_foreign(CUevent *ph, CUresult rc)
{
    if (rc == CUDA_SUCCESS && ph)
        cb_event_forget(*ph, rc);
}
