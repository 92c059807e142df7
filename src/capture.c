/* capture.c - the stream captures under way, and what they forbid cubatch's own
 * driver calls (docs/design.md rule 13, and its table of cubatch's calls).
 *
 * While a stream captures, the real driver refuses some calls and invalidates
 * the capture for them, which the program then sees at its next captured call:
 *  - on the capturing stream, in every mode: its flags, its device, a query, a
 *    synchronize;
 *  - in global mode from any thread, and in thread-local mode from the thread
 *    that began it: a query or synchronize of any stream, an event query, a
 *    module load, an allocation or free;
 *  - while a blocking stream captures: anything naming the legacy stream.
 * cubatch sees every call that begins or ends a capture (the CAPTURE_BEGIN and
 * CAPTURE_END rows of hooks.def), so it keeps which captures are under way and
 * in which mode, and whoever is about to make such a call asks here first.  A
 * stream that joined a capture through an event wait is not recorded: the
 * driver is asked about the stream itself (cuStreamIsCapturing is legal
 * everywhere, and answers CUDA_ERROR_STREAM_CAPTURE_IMPLICIT for the legacy
 * stream while a blocking stream captures, without harm).
 *
 * A question and the call it allows hold one lock, which a capture's begin
 * holds too, so no capture can begin in between.  More captures at once than
 * the table holds count as global ones until they end. */
#include "capture.h"

#define CB_CAPTURES_MAX 64

struct cb_capture {
    uintptr_t stream; /* handle, or CU_STREAM_PER_THREAD of owner */
    uintptr_t owner;  /* pthread_self() of the thread that began it */
    CUstreamCaptureMode mode;
};

atomic_int cb_captures_n; /* begun or about to begin, not ended */
static pthread_mutex_t cb_capture_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cb_capture cb_captures[CB_CAPTURES_MAX];
static int cb_ncaptures;
static int cb_captures_untracked; /* begun while the table was full: taken as global */
static int cb_global_captures;    /* recorded in global mode, plus the untracked */
static CB_TLS int cb_thread_local_captures; /* this thread's, in thread-local mode */

void cb_capture_lock(void) { pthread_mutex_lock(&cb_capture_mu); }
void cb_capture_unlock(void) { pthread_mutex_unlock(&cb_capture_mu); }

void cb_capture_pending(void) { atomic_fetch_add(&cb_captures_n, 1); }

static uintptr_t stream_key(CUstream s, int ptsz)
{
    return cb_stream_kind(s, ptsz) == CB_SK_PER_THREAD ? (uintptr_t)CU_STREAM_PER_THREAD : (uintptr_t)s;
}

void cb_capture_began(CUstream s, CUstreamCaptureMode mode, int ptsz, CUresult rc)
{
    if (rc != CUDA_SUCCESS) {
        atomic_fetch_sub(&cb_captures_n, 1);
    } else if (cb_ncaptures < CB_CAPTURES_MAX) {
        cb_captures[cb_ncaptures++] = (struct cb_capture){stream_key(s, ptsz), (uintptr_t)pthread_self(), mode};
        cb_global_captures += mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
        cb_thread_local_captures += mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    } else {
        cb_captures_untracked++;
        cb_global_captures++;
    }
    cb_capture_unlock();
}

/* Lock held: entry i ends. */
static void drop(int i)
{
    struct cb_capture c = cb_captures[i];
    cb_captures[i] = cb_captures[--cb_ncaptures];
    cb_global_captures -= c.mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (c.mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && c.owner == (uintptr_t)pthread_self())
        cb_thread_local_captures--;
    atomic_fetch_sub(&cb_captures_n, 1);
}

/* Lock held: the entry of s as this thread names it, or -1; a per-thread
 * stream's capture is its owner's. */
static int find(uintptr_t key)
{
    for (int i = 0; i < cb_ncaptures; i++)
        if (cb_captures[i].stream == key &&
            (key != (uintptr_t)CU_STREAM_PER_THREAD || cb_captures[i].owner == (uintptr_t)pthread_self()))
            return i;
    return -1;
}

/* Lock held: forget what s began; without an entry, one untracked capture. */
static void forget(uintptr_t key)
{
    int i = find(key);
    if (i >= 0) {
        drop(i);
    } else if (cb_captures_untracked > 0) {
        cb_captures_untracked--;
        cb_global_captures--;
        atomic_fetch_sub(&cb_captures_n, 1);
    }
}

void cb_capture_ended(CUstream s, int ptsz)
{
    if (!cb_captures_active())
        return;
    cb_capture_lock();
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    /* an end refused (another thread's thread-local capture) leaves it going */
    if (!cb_drv.cuStreamIsCapturing || cb_drv.cuStreamIsCapturing(s, &st) != CUDA_SUCCESS ||
        st == CU_STREAM_CAPTURE_STATUS_NONE)
        forget(stream_key(s, ptsz));
    cb_capture_unlock();
}

void cb_capture_forget_stream(CUstream s)
{
    if (!cb_captures_active() || cb_stream_kind(s, 0) != CB_SK_CREATED)
        return;
    cb_capture_lock();
    int i = find((uintptr_t)s);
    if (i >= 0)
        drop(i);
    cb_capture_unlock();
}

int cb_capture_stream_free(CUstream s, int ptsz)
{
    if (!cb_captures_active())
        return 1;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    return cb_drv.cuStreamIsCapturing && cb_drv.cuStreamIsCapturing((CUstream)stream_key(s, ptsz), &st) == CUDA_SUCCESS &&
           st == CU_STREAM_CAPTURE_STATUS_NONE;
}

int cb_capture_may_load(void)
{
    return !cb_captures_active() || (cb_global_captures == 0 && cb_thread_local_captures == 0);
}

int cb_capture_may_wait(CUstream s) { return cb_capture_may_load() && cb_capture_stream_free(s, 0); }

void cb_capture_atfork_prepare(void) { cb_capture_lock(); }
void cb_capture_atfork_parent(void) { cb_capture_unlock(); }

void cb_capture_atfork_child(void)
{
    pthread_mutex_init(&cb_capture_mu, NULL);
    cb_ncaptures = cb_captures_untracked = cb_global_captures = 0;
    cb_thread_local_captures = 0;
    atomic_store(&cb_captures_n, 0);
}
