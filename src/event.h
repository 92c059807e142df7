/* event.h - the program's events that cubatch knows (rule 11), and the run
 * holding a marker of each (event.c owns the table).  Below the runs: a run is
 * only a pointer here, compared and stored, never followed. */
#ifndef CUBATCH_EVENT_H
#define CUBATCH_EVENT_H

#include "copies.h"

#include <uthash.h>

struct cb_run;

struct cb_event {
    UT_hash_handle hh;
    CUevent ev;
    unsigned int flags; /* as created (CU_EVENT_INTERPROCESS: never deferred) */
    CUcontext ctx;      /* current when it was created: records only on its streams */
    struct cb_run *run; /* the run holding a marker of it; NULL: none */
    struct cb_standin *standin; /* its latest record went out as this stand-in (rule 15); NULL: its own */
};
/* The event table has its own lock, taken inside these functions (under a run
 * lock or none; never held while taking a run lock). */
/* A copy of what is known of e; 0 when known, -1 unknown (its records pass through). */
int cb_event_info(CUevent e, struct cb_event *out);
int cb_event_held_by(CUevent e, const struct cb_run *run); /* run holds e's latest record */
int cb_event_may_queue(CUevent e); /* known and not interprocess: its default records may be queued */
/* run (locked, its stream's context ctx) now holds e's latest record: 0, and
 * *stands says whether a stand-in may answer for it (rule 15); 1 when another
 * run holds one; -1 when e's records may not be queued (unknown, interprocess,
 * of another context). */
int cb_event_claim(CUevent e, struct cb_run *run, CUcontext ctx, int *stands);
void cb_event_add(CUevent e, unsigned int flags, CUcontext ctx); /* created (or created again) */
void cb_event_drop(CUevent e);                                    /* unknown from now on */
/* The markers of q (run's) were submitted: their events are held by no run.
 * standin (engine.c's, or NULL): the record made for the markers that may
 * stand on it; their events are linked to it (rule 15), and it is given back
 * when none was. */
void cb_event_markers_gone(const struct cb_copies *q, const struct cb_run *run, struct cb_standin *standin);

/* Rule 15.  Events linked to a stand-in now: 0 spares every call below its lock. */
extern atomic_int cb_events_linked;
void cb_event_unlink(CUevent e); /* e is recorded again: its own record answers */
/* e's stand-in, held (never given back meanwhile) until cb_event_unhold; NULL:
 * e is linked to none.  settled: e need not stand on it any more (the call
 * found it complete, or recorded e itself after it): the link ends. */
struct cb_standin *cb_event_hold(CUevent e);
void cb_event_unhold(CUevent e, struct cb_standin *si, int settled);
/* Up to max linked events and their stand-ins, each held. */
size_t cb_events_hold_linked(CUevent *evs, struct cb_standin **sis, size_t max);
/* ctx is gone: its events' links end, and their stand-ins' events (dead with
 * it) are never given back. */
void cb_events_forget_context(CUcontext ctx);
void cb_events_atfork_prepare(void);
void cb_events_atfork_parent(void);
void cb_events_atfork_child(void);

#endif
