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
};
/* The event table has its own lock, taken inside these functions (under a run
 * lock or none; never held while taking a run lock). */
/* A copy of what is known of e; 0 when known, -1 unknown (its records pass through). */
int cb_event_info(CUevent e, struct cb_event *out);
int cb_event_held_by(CUevent e, const struct cb_run *run); /* run holds e's latest record */
/* run (locked) now holds e's latest record; -1 when another run holds one. */
int cb_event_claim(CUevent e, struct cb_run *run);
void cb_event_add(CUevent e, unsigned int flags, CUcontext ctx); /* created (or created again) */
void cb_event_drop(CUevent e);                                    /* unknown from now on */
/* The markers of q (run's) were submitted: their events are held by no run. */
void cb_event_markers_gone(const struct cb_copies *q, const struct cb_run *run);
void cb_events_atfork_prepare(void);
void cb_events_atfork_parent(void);
void cb_events_atfork_child(void);

#endif
