/* smwork.c - rule 12: no copy waits behind compute it would not have waited
 * for.  The copy kernel needs SMs and the copy engines do not: while a kernel
 * that occupies every SM runs on another stream, a copy-kernel launch waits
 * until that kernel's blocks retire, where the program's own copies would have
 * run at once on the copy engines.
 *
 * cubatch sees every launch of the process, so it keeps the streams whose last
 * launches may fill the GPU: a grid of at least (blocks one SM holds of it, as
 * the driver's occupancy calculator says) x (SMs of the smallest device)
 * blocks, or any launch whose size nobody can tell (graphs, the old cuLaunch
 * entry points, a failed occupancy query for a grid of at least as many
 * blocks as SMs).  Smaller grids leave SMs free, and the copy kernel runs
 * beside them (a grid of fewer blocks than SMs is let go in smwork.h, before
 * any call: a launch-bound program's launches are mostly such).  Nothing is
 * queried on the launch path:
 * when a run of host memory copies is about to take the copy kernel, each
 * counted stream of its context is asked once (cuStreamQuery, the real one)
 * and forgotten once idle.  Work of other processes or APIs is not seen
 * (README, Limits; CUBATCH_ENGINE=batch).
 *
 * Another thread's per-thread default stream cannot be asked (only its owner can
 * name it): it counts as busy until its owner's query finds it idle or a
 * context synchronize ends everything.  More busy streams than the table holds
 * make the whole context count as busy until a context synchronize.
 *
 * Captures (rule 13, capture.c): a launch into a capturing stream runs nothing
 * until its graph is launched, so it is not counted (and the stream's flags
 * are not asked: that would invalidate the capture); a stream is never queried
 * while a capture forbids it (the stream captures, a global-mode capture runs
 * anywhere, this thread has a thread-local one): it counts as busy. */
#include "smwork.h"
#include "capture.h"
#include "stream.h"
#include "stats.h"

#define CB_BUSY_MAX 64

struct cb_busy {
    uintptr_t stream; /* handle; CU_STREAM_LEGACY or CU_STREAM_PER_THREAD for those */
    uintptr_t owner;  /* pthread_self() of a per-thread stream's owner, else 0 */
    CUcontext ctx;
    int blocking;     /* synchronizes with the legacy stream */
    uint64_t busy_ns; /* when a query last found it running (0: never) */
};

/* A stream found running is taken to be running for this long without asking
 * again: a query costs the submitting thread microseconds while a kernel runs,
 * and a kernel that ended meanwhile costs at most this long on the copy engines,
 * which are never slower than the program's own copies. */
#define CB_BUSY_TRUST_NS 200000u

static pthread_mutex_t cb_busy_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cb_busy cb_busy[CB_BUSY_MAX];
static int cb_nbusy;
static CUcontext cb_busy_overflow[CB_BUSY_MAX]; /* contexts with more busy streams than fit */
static int cb_noverflow;
static atomic_int cb_busy_any; /* cb_nbusy + cb_noverflow: the lock-free "nothing runs" */
/* Moves at every filling launch noted and every stream forgotten: a verdict
 * found at one generation holds while it stays, as only a launch cubatch sees
 * makes a stream of this process busy (cb_smwork_note_busy). */
static atomic_uint cb_busy_gen;
atomic_uint cb_smwork_min_sms; /* 0: not known yet (smwork.h) */
int cb_smwork_tracking;         /* the engine choice asks (engine.c) */

void cb_smwork_init(int track) { cb_smwork_tracking = track; }

/* At the first launch (the driver is initialised by then; it may not be when
 * cubatch initialises). */
static unsigned min_sms(void)
{
    unsigned known = atomic_load_explicit(&cb_smwork_min_sms, memory_order_relaxed);
    if (known)
        return known;
    /* every device, until the ordinal is refused (no cuDeviceGetCount: the flush
     * table test marks its phases with that call) */
    unsigned min = 0;
    int sms = 0;
    for (int d = 0; d < 1024 && cb_drv.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d) ==
                                    CUDA_SUCCESS; d++)
        if (sms > 0 && (!min || (unsigned)sms < min))
            min = (unsigned)sms;
    known = min ? min : 1; /* unknown: any grid as large as one SM holds fills */
    atomic_store_explicit(&cb_smwork_min_sms, known, memory_order_relaxed);
    return known;
}

/* Blocks of f one SM holds, per thread: the occupancy calculator is asked once
 * per (function, block size, shared memory).  0: unknown. */
struct cb_occ { CUfunction f; uint64_t threads, smem; int per_sm; };
#define CB_OCC_SLOTS 16
static CB_TLS struct cb_occ cb_occ_cache[CB_OCC_SLOTS];

static int blocks_per_sm(CUfunction f, uint64_t threads, uint64_t smem)
{
    struct cb_occ *o = &cb_occ_cache[(((uintptr_t)f >> 4) ^ threads) % CB_OCC_SLOTS];
    if (o->f == f && o->threads == threads && o->smem == smem)
        return o->per_sm;
    int n = 0;
    if (!cb_drv.cuOccupancyMaxActiveBlocksPerMultiprocessor || threads > INT32_MAX || smem > SIZE_MAX ||
        cb_drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, (int)threads, (size_t)smem) != CUDA_SUCCESS)
        n = 0;
    *o = (struct cb_occ){f, threads, smem, n > 0 ? n : 0};
    return o->per_sm;
}

static int may_fill(CUfunction f, uint64_t blocks, uint64_t threads, uint64_t smem)
{
    if (f && blocks < min_sms())
        return 0; /* each block runs on one SM: some stay free, whatever the occupancy */
    int per_sm = f && threads ? blocks_per_sm(f, threads, smem) : 0;
    if (!per_sm) {
        CB_COUNT(launches_unsized);
        return 1;
    }
    return blocks >= (uint64_t)per_sm * min_sms();
}

static int same_stream(const struct cb_busy *b, uintptr_t stream, uintptr_t owner, CUcontext ctx)
{
    return b->stream == stream && b->owner == owner && b->ctx == ctx;
}

void cb_smwork_note_launch(CUstream s, int ptsz, CUfunction f, uint64_t blocks, uint64_t threads, uint64_t smem)
{
    if (!may_fill(f, blocks, threads, smem))
        return;
    enum cb_stream_kind sk = cb_stream_kind(s, ptsz);
    cb_capture_lock();
    int captured = !cb_capture_stream_free(s, ptsz);
    int blocking = captured || cb_stream_blocking(s, sk);
    cb_capture_unlock();
    if (captured) {
        CB_COUNT(launches_captured);
        return;
    }
    CB_COUNT(launches_filling);
    CUcontext ctx = NULL;
    if (!cb_drv.cuCtxGetCurrent || cb_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
        ctx = NULL;
    uintptr_t stream = (uintptr_t)cb_stream_handle(s, sk), owner = cb_stream_owner(sk);
    pthread_mutex_lock(&cb_busy_mu);
    int i = 0;
    while (i < cb_nbusy && !same_stream(&cb_busy[i], stream, owner, ctx))
        i++;
    if (i == cb_nbusy) {
        if (cb_nbusy < CB_BUSY_MAX) {
            cb_busy[cb_nbusy++] = (struct cb_busy){stream, owner, ctx, blocking, 0};
            atomic_fetch_add(&cb_busy_any, 1);
        } else {
            int j = 0;
            while (j < cb_noverflow && cb_busy_overflow[j] != ctx)
                j++;
            if (j == cb_noverflow && cb_noverflow < CB_BUSY_MAX) {
                cb_busy_overflow[cb_noverflow++] = ctx;
                atomic_fetch_add(&cb_busy_any, 1);
            }
        }
    }
    atomic_fetch_add_explicit(&cb_busy_gen, 1, memory_order_release);
    pthread_mutex_unlock(&cb_busy_mu);
}

static void forget(int i)
{
    cb_busy[i] = cb_busy[--cb_nbusy];
    atomic_fetch_sub(&cb_busy_any, 1);
    atomic_fetch_add_explicit(&cb_busy_gen, 1, memory_order_release);
}

void cb_smwork_ctx_synced(CUcontext ctx)
{
    if (!atomic_load(&cb_busy_any) || (!ctx && (!cb_drv.cuCtxGetCurrent || cb_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)))
        return;
    pthread_mutex_lock(&cb_busy_mu);
    for (int i = cb_nbusy - 1; i >= 0; i--)
        if (cb_busy[i].ctx == ctx)
            forget(i);
    for (int j = cb_noverflow - 1; j >= 0; j--)
        if (cb_busy_overflow[j] == ctx) {
            cb_busy_overflow[j] = cb_busy_overflow[--cb_noverflow];
            atomic_fetch_sub(&cb_busy_any, 1);
            atomic_fetch_add_explicit(&cb_busy_gen, 1, memory_order_release);
        }
    pthread_mutex_unlock(&cb_busy_mu);
}

/* Would a copy issued now on the run's stream, without cubatch, have waited for
 * this stream's work anyway?  Legacy-stream work waits for every blocking
 * stream, and blocking-stream work for the legacy stream (rule 3); a stream's
 * own work precedes its copies. */
static int would_wait_anyway(const struct cb_busy *b, const struct cb_stream_facts *f)
{
    uintptr_t own = (uintptr_t)cb_facts_handle(f);
    if (b->stream == own && b->owner == (f->ptds ? f->owner : 0))
        return 1;
    if (f->legacy && b->blocking)
        return 1;
    return (f->blocking || f->ptds) && b->stream == (uintptr_t)CU_STREAM_LEGACY;
}

/* The verdict itself, asked anew (smwork.h: cb_smwork_note_busy). */
static int may_delay(const struct cb_stream_facts *f)
{
    if (!atomic_load_explicit(&cb_busy_any, memory_order_relaxed))
        return 0;
    int busy = 0;
    uint64_t now = cb_now_ns();
    pthread_mutex_lock(&cb_busy_mu);
    for (int j = 0; j < cb_noverflow; j++)
        busy |= cb_busy_overflow[j] == f->ctx;
    for (int i = cb_nbusy - 1; i >= 0 && !busy; i--) {
        const struct cb_busy *b = &cb_busy[i];
        if (b->ctx != f->ctx || would_wait_anyway(b, f))
            continue;
        if (b->owner && b->owner != (uintptr_t)pthread_self()) {
            busy = 1; /* another thread's per-thread stream: cannot be asked */
            break;
        }
        if (b->busy_ns && now - b->busy_ns < CB_BUSY_TRUST_NS) {
            busy = 1;
            break;
        }
        cb_capture_lock();
        int may = cb_capture_may_wait((CUstream)b->stream);
        CUresult q = may ? cb_drv.cuStreamQuery((CUstream)b->stream) : CUDA_ERROR_NOT_READY;
        cb_capture_unlock();
        if (may)
            CB_COUNT(load_queries);
        else
            CB_COUNT(load_unasked); /* a capture forbids the query: taken as running */
        if (q == CUDA_ERROR_NOT_READY)
            busy = 1, cb_busy[i].busy_ns = now;
        else
            forget(i); /* idle (or gone: a destroyed stream runs nothing of ours to wait for) */
    }
    pthread_mutex_unlock(&cb_busy_mu);
    return busy;
}

void cb_smwork_forget_stream(CUstream s)
{
    if (!atomic_load(&cb_busy_any) || cb_stream_kind(s, 0) != CB_SK_CREATED)
        return;
    pthread_mutex_lock(&cb_busy_mu);
    for (int i = cb_nbusy - 1; i >= 0; i--)
        if (cb_busy[i].stream == (uintptr_t)s && !cb_busy[i].owner)
            forget(i);
    pthread_mutex_unlock(&cb_busy_mu);
}

void cb_smwork_atfork_child(void)
{
    /* the child has no CUDA work of its own */
    cb_nbusy = 0;
    cb_noverflow = 0;
    atomic_store(&cb_busy_any, 0);
    pthread_mutex_init(&cb_busy_mu, NULL);
}

/* A verdict answers the stream's next CB_BUSY_REUSE questions while the busy
 * list's generation stays: a copy passing through beside busy streams then
 * takes no lock and reads no clock (the copies a stale "busy" sends to the
 * copy engines, never slower than the program's own, are at most these; a
 * stale "idle" cannot be, as any launch that could end it moves the
 * generation). */
#define CB_BUSY_REUSE 32u

int cb_smwork_note_busy(struct cb_stream_facts *f)
{
    if (!atomic_load_explicit(&cb_busy_any, memory_order_relaxed))
        return f->sm_busy = 0;
    unsigned gen = atomic_load_explicit(&cb_busy_gen, memory_order_acquire);
    if (f->busy_left > 0 && f->busy_gen == gen) {
        f->busy_left--;
        return f->sm_busy;
    }
    f->sm_busy = may_delay(f);
    f->busy_gen = gen; /* read before the list: a change meanwhile is asked again next time */
    f->busy_left = CB_BUSY_REUSE;
    return f->sm_busy;
}

unsigned cb_smwork_busy_claim(struct cb_stream_facts *f)
{
    unsigned left = f->sm_busy ? f->busy_left : 0;
    f->busy_left = 0;
    return left;
}
