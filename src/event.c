/* event.c - the program's events that cubatch knows (rule 11): created through
 * cuEventCreate, with their flags and context, and the run that holds a marker
 * (a queued record) of each, if any.  An event not in this table (created
 * before cubatch could see it, opened from another process or API, destroyed
 * and its handle not yet reused by cuEventCreate) is unknown: its records pass
 * through and flush, as every record did before markers.
 *
 * One uthash table keyed by handle, under its own lock: a record or an observer
 * looks an event up once, never scanning the runs.  The lock is a leaf (run.c):
 * taken under a run lock or none, and nothing is taken while it is held. */
#include "event.h"

#include <pthread.h>

#include <stdlib.h>
#include <string.h>

static struct cb_event *cb_events;
static pthread_mutex_t cb_events_mu = PTHREAD_MUTEX_INITIALIZER;

static struct cb_event *find(CUevent e)
{
    struct cb_event *ev = NULL;
    if (e)
        HASH_FIND_PTR(cb_events, &e, ev);
    return ev;
}

int cb_event_info(CUevent e, struct cb_event *out)
{
    pthread_mutex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    if (ev)
        *out = *ev;
    pthread_mutex_unlock(&cb_events_mu);
    return ev ? 0 : -1;
}

int cb_event_held_by(CUevent e, const struct cb_run *run)
{
    pthread_mutex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    int held = ev && ev->run == run;
    pthread_mutex_unlock(&cb_events_mu);
    return held;
}

int cb_event_claim(CUevent e, struct cb_run *run)
{
    pthread_mutex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    int ok = ev && (!ev->run || ev->run == run);
    if (ok)
        ev->run = run;
    pthread_mutex_unlock(&cb_events_mu);
    return ok ? 0 : -1;
}

void cb_event_add(CUevent e, unsigned int flags, CUcontext ctx)
{
    pthread_mutex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    if (!ev && (ev = calloc(1, sizeof *ev))) {
        ev->ev = e;
        HASH_ADD_PTR(cb_events, ev, ev);
    }
    if (ev) { /* else out of memory: the event stays unknown, its records flush */
        ev->flags = flags;
        ev->ctx = ctx;
    }
    pthread_mutex_unlock(&cb_events_mu);
}

void cb_event_drop(CUevent e)
{
    pthread_mutex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    if (ev) {
        HASH_DEL(cb_events, ev);
        free(ev);
    }
    pthread_mutex_unlock(&cb_events_mu);
}

void cb_event_markers_gone(const struct cb_copies *q, const struct cb_run *run)
{
    if (!q->nmarks)
        return;
    pthread_mutex_lock(&cb_events_mu);
    for (size_t i = 0; i < q->nmarks; i++) {
        struct cb_event *ev = find(q->marks[i].ev);
        if (ev && ev->run == run)
            ev->run = NULL;
    }
    pthread_mutex_unlock(&cb_events_mu);
}

void cb_events_atfork_prepare(void) { pthread_mutex_lock(&cb_events_mu); }
void cb_events_atfork_parent(void) { pthread_mutex_unlock(&cb_events_mu); }

void cb_events_atfork_child(void)
{
    struct cb_event *ev, *tmp;
    HASH_ITER(hh, cb_events, ev, tmp) {
        HASH_DEL(cb_events, ev);
        free(ev);
    }
    pthread_mutex_init(&cb_events_mu, NULL);
}
