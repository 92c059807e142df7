/* waits.h - stream waits that ride (docs/design.md rule 16): waits.c's names.
 * Apart from internal.h because cb_waits_issue is inline and calls waits.c:
 * a shared header that called a file above the ones including it would tie
 * them in a circle. */
#ifndef CUBATCH_WAITS_H
#define CUBATCH_WAITS_H

#include "internal.h"

/* A wait of s for e (WAIT rows) kept as s's pending wait: 1 when it was (the
 * program's call is then not forwarded), 0 when it must go to the driver. */
int cb_wait_ride(CUstream s, int ptsz, CUevent e, unsigned int flags);
/* What rule 16 asks of a wait before any lock: default flags, riding switched
 * on, a created stream (whether it is non-blocking is the driver's answer,
 * cb_stream_nonblocking, asked under capture.c's lock).  1: it may ride or be
 * found met. */
int cb_wait_may_skip(CUstream s, int ptsz, unsigned int flags);
/* The pending waits of s (before any call that names s), for e (before e is
 * recorded again or destroyed), or all (before a context-wide call) go to the
 * driver; the first error.  One load while none is pending: cb_waits_issue
 * makes it inline, cb_waits_issue_of is for a caller that made it already. */
extern atomic_int cb_waits_pending_n;
static inline int cb_waits_pending(void)
{
    return atomic_load_explicit(&cb_waits_pending_n, memory_order_relaxed) != 0;
}
CUresult cb_waits_issue_of(CUstream s);
static inline CUresult cb_waits_issue(CUstream s)
{
    return CB_UNLIKELY(cb_waits_pending()) ? cb_waits_issue_of(s) : CUDA_SUCCESS;
}
CUresult cb_waits_issue_event(CUevent e);
CUresult cb_waits_issue_all(void);
void cb_waits_atfork_prepare(void);
void cb_waits_atfork_parent(void);
void cb_waits_atfork_child(void);

#endif /* CUBATCH_WAITS_H */
