/* event.c - the program's events that cubatch knows (rule 11): created through
 * cuEventCreate, with their flags and context, and the run that holds a marker
 * (a queued record) of each, if any.  An event not in this table (created
 * before cubatch could see it, opened from another process or API, destroyed
 * and its handle not yet reused by cuEventCreate) is unknown: its records pass
 * through and flush, as every record did before markers.
 *
 * One uthash table keyed by handle, under the run lock (run.c): a record or an
 * observer looks an event up once, never scanning the runs. */
#include "run.h"

#include <stdlib.h>

static struct cb_event *cb_events;

struct cb_event *cb_event_find(CUevent e)
{
    struct cb_event *ev = NULL;
    if (e)
        HASH_FIND_PTR(cb_events, &e, ev);
    return ev;
}

void cb_event_add(CUevent e, unsigned int flags, CUcontext ctx)
{
    struct cb_event *ev = cb_event_find(e);
    if (!ev) {
        ev = calloc(1, sizeof *ev);
        if (!ev)
            return; /* out of memory: the event stays unknown, its records flush */
        ev->ev = e;
        HASH_ADD_PTR(cb_events, ev, ev);
    }
    ev->flags = flags;
    ev->ctx = ctx;
}

void cb_event_drop(CUevent e)
{
    struct cb_event *ev = cb_event_find(e);
    if (ev) {
        HASH_DEL(cb_events, ev);
        free(ev);
    }
}

void cb_event_markers_gone(const struct cb_copies *q, const struct cb_run *run)
{
    for (size_t i = 0; i < q->nmarks; i++) {
        struct cb_event *ev = cb_event_find(q->marks[i].ev);
        if (ev && ev->run == run)
            ev->run = NULL;
    }
}

void cb_events_atfork_child(void)
{
    struct cb_event *ev, *tmp;
    HASH_ITER(hh, cb_events, ev, tmp) {
        HASH_DEL(cb_events, ev);
        free(ev);
    }
}
