/* waits.c - stream waits that ride (docs/design.md rule 16).
 *
 * A wait of stream B for an event whose latest record is still a marker in an
 * open run (rule 11) is kept here as B's pending wait instead of submitting
 * that run at once, so that a loop of copy, record, and another stream's wait
 * keeps one run growing.  A wait orders only B's later work after the event's
 * completion; nothing B runs before its next call can be affected by it.  So
 * the waits of B are issued right before any call that names B (hooks.c,
 * copy.c and marker.c call cb_waits_issue), every pending wait before a call
 * on a whole context, and the waits for an event before it is recorded again
 * or destroyed (the wait is for the record it named): each time the run
 * holding the record goes out first, then the wait, answered from the
 * event's stand-in when it has one (rule 15).  Waits commute, so issuing some
 * of a stream's waits before others changes nothing, and waits in a row answered
 * by one stand-in are issued once.
 *
 * Only waits that cannot meet a capture or the legacy stream ride: default
 * flags, on a created non-blocking stream, while no capture is under way (a
 * capture beginning on B names B).  Everything else goes to the driver as it
 * came, after B's pending waits.
 *
 * The table is a vector in call order under its own lock (taken with no run
 * lock held, or under capture.c's, and nothing is taken while it is held); a
 * count read without the lock keeps every check to one load while nothing is
 * pending. */
#include "run.h"
#include "waits.h"
#include "capture.h"
#include "stats.h"

#include <pthread.h>
#include <stdlib.h>

struct cb_wait {
    CUstream stream;
    CUevent ev;
};
static struct cb_wait *cb_waits;
static size_t cb_nwaits, cb_capwaits;
static pthread_mutex_t cb_waits_mu = PTHREAD_MUTEX_INITIALIZER;
atomic_int cb_waits_pending_n;

/* The pending waits that match (stream, or event, or all), taken out in call
 * order; *n of them, in a block the caller frees.  NULL: none (or no memory,
 * then nothing was taken out). */
enum cb_wait_match { CB_WAITS_OF_STREAM, CB_WAITS_FOR_EVENT, CB_WAITS_ALL };
static struct cb_wait *take(enum cb_wait_match by, const void *key, size_t *n)
{
    *n = 0;
    pthread_mutex_lock(&cb_waits_mu);
    size_t count = 0;
    for (size_t i = 0; i < cb_nwaits; i++)
        count += by == CB_WAITS_ALL || (by == CB_WAITS_OF_STREAM ? (const void *)cb_waits[i].stream == key
                                                                 : (const void *)cb_waits[i].ev == key);
    struct cb_wait *out = count ? malloc(count * sizeof *out) : NULL;
    if (out) {
        size_t kept = 0;
        for (size_t i = 0; i < cb_nwaits; i++) {
            struct cb_wait w = cb_waits[i];
            int m = by == CB_WAITS_ALL || (by == CB_WAITS_OF_STREAM ? (const void *)w.stream == key
                                                                    : (const void *)w.ev == key);
            if (m)
                out[(*n)++] = w;
            else
                cb_waits[kept++] = w;
        }
        cb_nwaits = kept;
        atomic_store_explicit(&cb_waits_pending_n, (int)kept, memory_order_relaxed);
    }
    pthread_mutex_unlock(&cb_waits_mu);
    return out;
}

/* The waits taken out go to the driver: each event's holder first, then the
 * wait, once per event that answers (rule 15's stand-in or the event). */
static CUresult issue(struct cb_wait *w, size_t n)
{
    CUresult first = CUDA_SUCCESS;
    for (size_t i = 0; i < n; i++) {
        CUevent asked = w[i].ev;
        first = cb_first_error(first, cb_flush_holder(asked));
        struct cb_standin *si = cb_event_hold(asked);
        CUevent answer = si ? si->ev : asked;
        /* waits made in a row for one run's events share its stand-in and lie
         * side by side: the one before is all that is compared (a longer look
         * would cost the square of a long run's waits) */
        int again = i > 0 && w[i - 1].stream == w[i].stream && w[i - 1].ev == answer;
        if (!again)
            first = cb_first_error(first, cb_drv.cuStreamWaitEvent(w[i].stream, answer, 0));
        w[i].ev = answer; /* what was waited for, for the check above */
        if (si)
            cb_event_unhold(asked, si, 0);
    }
    free(w);
    return first;
}

static CUresult take_and_issue(enum cb_wait_match by, const void *key)
{
    if (cb_runs_locked_here() || !cb_waits_pending())
        return CUDA_SUCCESS;
    size_t n;
    struct cb_wait *w = take(by, key, &n);
    return w ? issue(w, n) : CUDA_SUCCESS;
}

CUresult cb_waits_issue_of(CUstream s) { return take_and_issue(CB_WAITS_OF_STREAM, (const void *)s); }
CUresult cb_waits_issue_event(CUevent e) { return take_and_issue(CB_WAITS_FOR_EVENT, (const void *)e); }
CUresult cb_waits_issue_all(void) { return take_and_issue(CB_WAITS_ALL, NULL); }

int cb_wait_may_skip(CUstream s, int ptsz, unsigned int flags)
{
    return flags == 0 && cb_opt(CB_OPT_ride_waits) && cb_stream_kind(s, ptsz) == CB_SK_CREATED;
}

int cb_wait_ride(CUstream s, int ptsz, CUevent e, unsigned int flags)
{
    struct cb_event info;
    if (!cb_wait_may_skip(s, ptsz, flags) || cb_runs_locked_here() || !cb_runs_marked() || cb_event_info(e, &info) ||
        !info.run)
        return 0;
    cb_capture_lock(); /* the flags question and the queueing: one step against a capture beginning */
    int ride = !cb_captures_active() && cb_stream_nonblocking(s);
    if (ride) {
        pthread_mutex_lock(&cb_waits_mu);
        if (cb_nwaits == cb_capwaits) {
            size_t cap = cb_capwaits ? 2 * cb_capwaits : 64;
            struct cb_wait *p = realloc(cb_waits, cap * sizeof *p);
            if (p) {
                cb_waits = p;
                cb_capwaits = cap;
            }
        }
        ride = cb_nwaits < cb_capwaits; /* else no memory: it goes to the driver */
        if (ride) {
            cb_waits[cb_nwaits++] = (struct cb_wait){s, e};
            atomic_store_explicit(&cb_waits_pending_n, (int)cb_nwaits, memory_order_relaxed);
        }
        pthread_mutex_unlock(&cb_waits_mu);
    }
    cb_capture_unlock();
    if (ride)
        CB_COUNT(waits_ridden);
    return ride;
}

void cb_waits_atfork_prepare(void) { pthread_mutex_lock(&cb_waits_mu); }
void cb_waits_atfork_parent(void) { pthread_mutex_unlock(&cb_waits_mu); }

void cb_waits_atfork_child(void)
{
    cb_nwaits = 0; /* the child has no CUDA state of its own */
    atomic_store_explicit(&cb_waits_pending_n, 0, memory_order_relaxed);
    pthread_mutex_init(&cb_waits_mu, NULL);
}
