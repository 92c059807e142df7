/* event.c - the program's events that cubatch knows (rule 11): created through
 * cuEventCreate, with their flags and context, and the run that holds a marker
 * (a queued record) of each, if any.  An event not in this table (created
 * before cubatch could see it, opened from another process or API, destroyed
 * and its handle not yet reused by cuEventCreate) is unknown: its records pass
 * through and flush, as every record did before markers.
 *
 * Rule 15: a timing-free event whose latest record went out as a stand-in
 * (engine.c) is linked to it here; the stand-in counts its links and the calls
 * answered from it at the moment (holds), and goes back to ptds.c's pool of its
 * context when the count falls to 0.  A link ends when the event is recorded
 * again, destroyed or created again, when an observer found the stand-in
 * complete or recorded the event itself (marker.c), and when its context goes.
 *
 * One uthash table keyed by handle, under its own lock: a record or an observer
 * looks an event up once, never scanning the runs.  The lock is taken under a
 * run lock or none; only ptds.c's (a leaf) is taken while it is held, to give a
 * stand-in's event back. */
#include <stdint.h>
#include <string.h>

/* Event handles are pointers: one multiply spreads them over the buckets, and
 * keys compare as one word (uthash would hash and compare them bytewise). */
static inline unsigned ptr_hash(const void *key)
{
    uintptr_t k;
    memcpy(&k, key, sizeof k);
    return (unsigned)((k * (uint64_t)0x9E3779B97F4A7C15u) >> 32);
}
static inline int ptr_differ(const void *a, const void *b)
{
    uintptr_t x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    return x != y;
}
#define HASH_FUNCTION(keyptr, keylen, hashv) ((void)(keylen), (hashv) = ptr_hash(keyptr))
#define HASH_KEYCMP(a, b, len) ((void)(len), ptr_differ((a), (b)))
#include "event.h"
#include "futex.h"
#include "ptds.h"
#include "stats.h"

#include <stdlib.h>
#include <string.h>

static struct cb_event *cb_events;
static atomic_int cb_events_mu; /* futex.h: looked up on every record */
atomic_int cb_events_linked; /* events linked to a stand-in (event.h) */

/* Lock held.  One link or hold fewer; the last gives the event back, unless
 * its context is gone (the handle died with it). */
static void release(struct cb_standin *si)
{
    if (--si->refs > 0)
        return;
    if (si->ctx)
        cb_ctx_event_put(si->ctx, si->ev);
    free(si);
}

/* Lock held. */
static void unlink_event(struct cb_event *ev)
{
    struct cb_standin *si = ev->standin;
    if (!si)
        return;
    ev->standin = NULL;
    atomic_fetch_sub_explicit(&cb_events_linked, 1, memory_order_relaxed);
    release(si);
}

static struct cb_event *find(CUevent e)
{
    struct cb_event *ev = NULL;
    if (e)
        HASH_FIND_PTR(cb_events, &e, ev);
    return ev;
}

int cb_event_info(CUevent e, struct cb_event *out)
{
    cb_futex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    if (ev)
        *out = *ev;
    cb_futex_unlock(&cb_events_mu);
    return ev ? 0 : -1;
}

int cb_event_may_queue(CUevent e)
{
    cb_futex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    int may = ev && !(ev->flags & CU_EVENT_INTERPROCESS);
    cb_futex_unlock(&cb_events_mu);
    return may;
}

int cb_event_held_by(CUevent e, const struct cb_run *run)
{
    cb_futex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    int held = ev && ev->run == run;
    cb_futex_unlock(&cb_events_mu);
    return held;
}

int cb_event_claim(CUevent e, struct cb_run *run, CUcontext ctx, int *stands)
{
    cb_futex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    int rc = !ev || (ev->flags & CU_EVENT_INTERPROCESS) || ev->ctx != ctx ? -1 : ev->run && ev->run != run ? 1 : 0;
    if (rc == 0) {
        ev->run = run;
        unlink_event(ev); /* its newer record is queued: the stand-in no longer answers for it */
        *stands = ev->flags == CU_EVENT_DISABLE_TIMING;
    }
    cb_futex_unlock(&cb_events_mu);
    return rc;
}

void cb_event_add(CUevent e, unsigned int flags, CUcontext ctx)
{
    cb_futex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    if (!ev && (ev = calloc(1, sizeof *ev))) {
        ev->ev = e;
        HASH_ADD_PTR(cb_events, ev, ev);
    }
    if (ev) { /* else out of memory: the event stays unknown, its records flush */
        unlink_event(ev);
        ev->run = NULL;
        ev->flags = flags;
        ev->ctx = ctx;
    }
    cb_futex_unlock(&cb_events_mu);
}

void cb_event_drop(CUevent e)
{
    cb_futex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    if (ev) {
        unlink_event(ev);
        HASH_DEL(cb_events, ev);
        free(ev);
    }
    cb_futex_unlock(&cb_events_mu);
}

void cb_event_unlink(CUevent e)
{
    if (!atomic_load_explicit(&cb_events_linked, memory_order_relaxed))
        return;
    cb_futex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    if (ev)
        unlink_event(ev);
    cb_futex_unlock(&cb_events_mu);
}

struct cb_standin *cb_event_hold(CUevent e)
{
    if (!atomic_load_explicit(&cb_events_linked, memory_order_relaxed))
        return NULL;
    cb_futex_lock(&cb_events_mu);
    struct cb_event *ev = find(e);
    struct cb_standin *si = ev ? ev->standin : NULL;
    if (si)
        si->refs++;
    cb_futex_unlock(&cb_events_mu);
    return si;
}

void cb_event_unhold(CUevent e, struct cb_standin *si, int settled)
{
    cb_futex_lock(&cb_events_mu);
    struct cb_event *ev = settled ? find(e) : NULL;
    if (ev && ev->standin == si)
        unlink_event(ev);
    release(si);
    cb_futex_unlock(&cb_events_mu);
}

size_t cb_events_hold_linked(CUevent *evs, struct cb_standin **sis, size_t max)
{
    size_t n = 0;
    cb_futex_lock(&cb_events_mu);
    for (struct cb_event *ev = cb_events; ev && n < max; ev = ev->hh.next) {
        if (!ev->standin)
            continue;
        evs[n] = ev->ev;
        sis[n] = ev->standin;
        sis[n]->refs++;
        n++;
    }
    cb_futex_unlock(&cb_events_mu);
    return n;
}

void cb_events_forget_context(CUcontext ctx)
{
    cb_futex_lock(&cb_events_mu);
    for (struct cb_event *ev = cb_events; ev; ev = ev->hh.next) {
        if (ev->ctx != ctx || !ev->standin)
            continue;
        ev->standin->ctx = NULL; /* its event died with the context: never given back */
        unlink_event(ev);
    }
    cb_futex_unlock(&cb_events_mu);
}

void cb_event_markers_gone(const struct cb_copies *q, const struct cb_run *run, struct cb_standin *standin)
{
    if (!q->nmarks && !standin)
        return;
    cb_futex_lock(&cb_events_mu);
    if (standin)
        standin->refs = 1; /* held while the links are made */
    for (size_t i = 0; i < q->nmarks; i++) {
        struct cb_event *ev = find(q->marks[i].ev);
        if (!ev || ev->run != run)
            continue;
        if (standin && q->marks[i].stands && ev->standin != standin) {
            /* its latest record is the stand-in's (rule 15) */
            unlink_event(ev);
            ev->standin = standin;
            standin->refs++;
            atomic_fetch_add_explicit(&cb_events_linked, 1, memory_order_relaxed);
            CB_COUNT(markers_merged);
        }
        ev->run = NULL;
    }
    if (standin)
        release(standin);
    cb_futex_unlock(&cb_events_mu);
}

void cb_events_atfork_prepare(void) { cb_futex_lock(&cb_events_mu); }
void cb_events_atfork_parent(void) { cb_futex_unlock(&cb_events_mu); }

void cb_events_atfork_child(void)
{
    struct cb_event *ev, *tmp;
    HASH_ITER(hh, cb_events, ev, tmp) {
        if (ev->standin)
            ev->standin->ctx = NULL; /* the child has no CUDA state of its own */
        unlink_event(ev);
        HASH_DEL(cb_events, ev);
        free(ev);
    }
    atomic_store_explicit(&cb_events_mu, 0, memory_order_relaxed);
}
