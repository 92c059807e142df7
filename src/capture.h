/* capture.h - the stream captures under way in the process (capture.c), and
 * what they forbid cubatch's own driver calls (docs/design.md rule 13).  A leaf:
 * it calls only the driver. */
#ifndef CUBATCH_CAPTURE_H
#define CUBATCH_CAPTURE_H

#include "internal.h"

/* Captures begun (or about to begin) and not yet ended, in any thread: the one
 * load every question below starts with (none: everything is allowed). */
extern atomic_int cb_captures_n;
static inline int cb_captures_active(void) { return atomic_load_explicit(&cb_captures_n, memory_order_acquire) > 0; }

/* A capture is about to begin on s (before the flushes that precede it): from
 * now on nothing is deferred on the legacy stream.  Then, right before the real
 * call, cb_capture_lock(); right after it, cb_capture_began() records it (rc
 * CUDA_SUCCESS) or undoes the count, and gives the lock back. */
void cb_capture_pending(void);
void cb_capture_began(CUstream s, CUstreamCaptureMode mode, int ptsz, CUresult rc);
/* After the program's end-capture call on s (whatever it returned): forgets the
 * capture once the driver says s no longer captures.  After a stream destroy:
 * forgets any capture recorded on it. */
void cb_capture_ended(CUstream s, int ptsz);
void cb_capture_forget_stream(CUstream s);

/* A question and the call it allows are one step against a capture beginning in
 * another thread: hold this lock (a leaf) across both. */
void cb_capture_lock(void);
void cb_capture_unlock(void);

/* Lock held.  1 when s (as the program named it, ptsz: through a per-thread
 * entry) is not capturing, so that calls refused on a capturing stream
 * (cuStreamGetFlags, cuStreamGetDevice) may be made.  Asks the driver
 * (cuStreamIsCapturing, legal everywhere) only while a capture is under way. */
int cb_capture_stream_free(CUstream s, int ptsz);
/* Lock held.  1 when this thread may query or synchronize stream s (and wait
 * for events): no global-mode capture anywhere, no thread-local capture of
 * this thread, s not capturing, and s not the legacy stream while a blocking
 * stream captures. */
int cb_capture_may_wait(CUstream s);
/* Lock held.  1 when this thread may load a module or allocate: no global-mode
 * capture anywhere and no thread-local capture of this thread. */
int cb_capture_may_load(void);

void cb_capture_atfork_prepare(void);
void cb_capture_atfork_parent(void);
void cb_capture_atfork_child(void); /* the child has no captures */

#endif /* CUBATCH_CAPTURE_H */
