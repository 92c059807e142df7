/* run.c - the store of runs: one per stream, keyed by stream handle, a
 * per-thread default stream by (handle CU_STREAM_PER_THREAD, owning thread).
 *
 * One mutex guards all runs.  The copy path takes it once per copy
 * (uncontended: a few tens of ns); submissions happen under it too, so a run is
 * never submitted twice or half-way.  The program's own calls are always
 * forwarded outside it.
 *
 * A run caches what it learned about its stream when it opened (capturing?
 * blocking? context, device); these can only change through calls that name the
 * stream, and every such call flushes the run first, so the next copy re-opens
 * it and asks again (rule 2).  A destroyed stream's handle may come back for a
 * new stream: its run was flushed and dropped at destroy (flush.c). */
#include "run.h"

#include <stdlib.h>
#include <string.h>

/* Adaptive: a thread that finds it taken spins briefly before sleeping, as the
 * holder is usually done within a microsecond. */
static pthread_mutex_t cb_runs_mutex = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
struct cb_run *cb_run_table;
/* Runs that hold copies, a pending join or a pending error.  Zero lets every
 * flush trigger return without taking the lock. */
static atomic_int cb_active;
static atomic_int cb_nonempty; /* runs holding copies: what the timer waits for */
static atomic_int cb_legacy_nonempty; /* legacy-stream runs holding copies */
static atomic_int cb_marked; /* runs holding markers (rule 11): what event observers look for */
/* Bumped whenever a run is freed: validates the per-thread last-run cache. */
static uint64_t cb_runs_epoch = 1;
/* Set while this thread holds the lock: a driver call made from inside a
 * submission that comes back into a wrapper must not try to flush again. */
static CB_TLS int cb_tls_locked;

struct cb_last { struct cb_run *run; uintptr_t stream; uint64_t epoch; };
static CB_TLS struct cb_last cb_tls_last;

void cb_runs_lock(void)
{
    pthread_mutex_lock(&cb_runs_mutex);
    cb_tls_locked = 1;
}

int cb_runs_trylock(void)
{
    if (pthread_mutex_trylock(&cb_runs_mutex))
        return -1;
    cb_tls_locked = 1;
    return 0;
}

void cb_runs_unlock(void)
{
    cb_tls_locked = 0;
    pthread_mutex_unlock(&cb_runs_mutex);
}

int cb_runs_locked_here(void) { return cb_tls_locked; }

int cb_runs_active(void) { return atomic_load_explicit(&cb_active, memory_order_acquire) > 0; }
int cb_runs_nonempty(void) { return atomic_load(&cb_nonempty) > 0; }
int cb_runs_legacy_pending(void) { return atomic_load_explicit(&cb_legacy_nonempty, memory_order_acquire) > 0; }
int cb_runs_marked(void) { return atomic_load_explicit(&cb_marked, memory_order_acquire) > 0; }

struct cb_run_key cb_run_key_of(CUstream s, enum cb_stream_kind sk, CUcontext ctx)
{
    if (sk == CB_SK_PER_THREAD)
        return (struct cb_run_key){(uintptr_t)CU_STREAM_PER_THREAD, (uintptr_t)pthread_self()};
    if (sk == CB_SK_LEGACY) /* one legacy stream per context */
        return (struct cb_run_key){(uintptr_t)CU_STREAM_LEGACY, (uintptr_t)ctx};
    return (struct cb_run_key){(uintptr_t)s, 0};
}

void cb_run_set_active(struct cb_run *run)
{
    /* a warm stream counts too, so that a call naming it (which ends the burst)
     * takes the lock and says so */
    int a = run->q.n > 0 || run->facts.fence.ev_join != NULL || run->pending != CUDA_SUCCESS || run->warm;
    if (a != run->active) {
        atomic_fetch_add(&cb_active, a ? 1 : -1);
        run->active = a;
    }
    int q = run->q.n > 0;
    if (q != run->queued) {
        atomic_fetch_add(&cb_nonempty, q ? 1 : -1);
        if (run->facts.legacy)
            atomic_fetch_add(&cb_legacy_nonempty, q ? 1 : -1);
        run->queued = q;
    }
    int m = run->q.nmarks > 0;
    if (m != run->marked) {
        atomic_fetch_add(&cb_marked, m ? 1 : -1);
        run->marked = m;
    }
}

void cb_run_free(struct cb_run *run)
{
    HASH_DEL(cb_run_table, run);
    if (run->active)
        atomic_fetch_sub(&cb_active, 1);
    if (run->queued) {
        atomic_fetch_sub(&cb_nonempty, 1);
        if (run->facts.legacy)
            atomic_fetch_sub(&cb_legacy_nonempty, 1);
    }
    if (run->marked)
        atomic_fetch_sub(&cb_marked, 1);
    free(run->q.marks);
    free(run->q.dsts);
    free(run->q.srcs);
    free(run->q.sizes);
    free(run->q.hooks);
    free(run->q.streams);
    cb_iset_free(&run->writes);
    cb_iset_free(&run->reads);
    free(run);
    cb_runs_epoch++;
}

int cb_run_is_owner(const struct cb_run *run)
{
    return run->facts.ptds && !run->facts.orphan && pthread_equal((pthread_t)run->key.owner, pthread_self());
}

int cb_stream_blocking(CUstream s, enum cb_stream_kind sk)
{
    if (sk != CB_SK_CREATED)
        return 1; /* the legacy stream, and per-thread streams (they synchronize with it) */
    unsigned int flags = 0;
    return !cb_drv.cuStreamGetFlags || cb_drv.cuStreamGetFlags(s, &flags) != CUDA_SUCCESS ||
           !(flags & CU_STREAM_NON_BLOCKING); /* when unsure: blocking (more flushes, never fewer) */
}

struct cb_run *cb_run_find(const struct cb_run_key *key)
{
    struct cb_last *last = &cb_tls_last;
    if (last->run && last->epoch == cb_runs_epoch && last->stream == key->stream &&
        last->run->key.owner == key->owner)
        return last->run;
    struct cb_run *run;
    HASH_FIND(hh, cb_run_table, key, sizeof *key, run);
    if (run)
        *last = (struct cb_last){run, key->stream, cb_runs_epoch};
    return run;
}

struct cb_run *cb_run_create(const struct cb_run_key *key)
{
    struct cb_run *run = calloc(1, sizeof *run);
    if (!run)
        return NULL;
    run->key = *key;
    run->facts.legacy = key->stream == (uintptr_t)CU_STREAM_LEGACY;
    run->facts.ptds = key->owner != 0 && !run->facts.legacy;
    HASH_ADD(hh, cb_run_table, key, sizeof run->key, run);
    return run;
}

void cb_run_clear(struct cb_run *run)
{
    run->q.n = 0;
    cb_event_markers_gone(&run->q, run);
    run->q.nmarks = 0;
    run->writes.n = 0;
    run->reads.n = 0;
    run->has_h2d = 0;
    run->q.has_host = 0;
}

int cb_run_open(struct cb_run *run, CUstream stream)
{
    struct cb_stream_facts *f = &run->facts;
    CUstream s = f->ptds ? CU_STREAM_PER_THREAD : f->legacy ? CU_STREAM_LEGACY : stream;
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    f->stream = s;
    if (f->legacy) {
        /* The legacy stream never captures (copy.c defers nothing on it while any
         * capture is under way); it is the context's own. */
        f->capturing = 0;
        f->blocking = 1;
        f->ctx = (CUcontext)run->key.owner;
        if (!cb_drv.cuCtxGetDevice || cb_drv.cuCtxGetDevice(&f->device) != CUDA_SUCCESS)
            return -1;
    } else if (!cb_drv.cuStreamIsCapturing || cb_drv.cuStreamIsCapturing(s, &cap) != CUDA_SUCCESS) {
        return -1;
    }
    f->capturing = cap != CU_STREAM_CAPTURE_STATUS_NONE;
    if (f->capturing)
        return 0; /* nothing more to learn: nothing is deferred there */
    if (f->legacy) {
        /* learned above */
    } else if (f->ptds) {
        /* The owner's stream joins the earlier side submission first, in that
         * submission's context: the thread may have switched to another
         * context, whose per-thread stream is another stream. */
        if (cb_fence_owner_join(f) != CUDA_SUCCESS)
            return -1;
        if (!cb_drv.cuCtxGetCurrent || cb_drv.cuCtxGetCurrent(&f->ctx) != CUDA_SUCCESS || !f->ctx)
            return -1;
        if (!cb_drv.cuCtxGetDevice || cb_drv.cuCtxGetDevice(&f->device) != CUDA_SUCCESS)
            return -1;
        f->blocking = 1;
        f->owner = run->key.owner;
        if (cb_fence_open(f) != CUDA_SUCCESS)
            return -1;
    } else {
        unsigned int flags = 0;
        if (!cb_drv.cuStreamGetFlags || cb_drv.cuStreamGetFlags(s, &flags) != CUDA_SUCCESS)
            return -1;
        f->blocking = !(flags & CU_STREAM_NON_BLOCKING);
        if (!cb_drv.cuStreamGetCtx || cb_drv.cuStreamGetCtx(s, &f->ctx) != CUDA_SUCCESS)
            return -1;
        CUdevice dev = -1;
        if (cb_drv.cuStreamGetDevice) {
            if (cb_drv.cuStreamGetDevice(s, &dev) != CUDA_SUCCESS)
                return -1;
        } else {
            struct cb_ctx_guard g;
            if (cb_ctx_enter(f->ctx, &g) != CUDA_SUCCESS)
                return -1;
            CUresult rc = cb_drv.cuCtxGetDevice(&dev);
            cb_ctx_leave(&g);
            if (rc != CUDA_SUCCESS)
                return -1;
        }
        f->device = dev;
    }
    uint64_t now = cb_now_ns();
    run->opened_ns = now;
    if (!run->look_ns) { /* the stream was quiet: the timer's looks begin */
        run->burst_ns = run->looked_ns = now;
        run->look_ns = now + cb_opt(CB_OPT_flush_us) * 1000u;
        run->issued_looked = run->issued;
    }
    return 0;
}

static int run_grow(struct cb_run *run)
{
    size_t cap = run->q.cap ? 2 * run->q.cap : 16;
    size_t max = cb_opt(CB_OPT_max_batch);
    if (cap > max)
        cap = max;
#define GROW(field)                                                       \
    do {                                                                  \
        void *p = realloc(run->q.field, cap * sizeof run->q.field[0]);    \
        if (!p)                                                           \
            return -1;                                                    \
        run->q.field = p;                                                 \
    } while (0)
    GROW(dsts);
    GROW(srcs);
    GROW(sizes);
    GROW(hooks);
    GROW(streams);
#undef GROW
    run->q.cap = cap;
    return 0;
}

int cb_run_hazard(const struct cb_run *run, const struct cb_copy_req *rq)
{
    return cb_hazard(&run->writes, &run->reads, rq->dst, rq->src, rq->bytes);
}

int cb_run_append(struct cb_run *run, const struct cb_copy_req *rq)
{
    if (run->q.n == run->q.cap && run_grow(run))
        return -1;
    if (cb_iset_add(&run->writes, rq->dst, rq->dst + rq->bytes) ||
        cb_iset_add(&run->reads, rq->src, rq->src + rq->bytes))
        return -1;
    size_t i = run->q.n++;
    run->q.dsts[i] = rq->dst;
    run->q.srcs[i] = rq->src;
    run->q.sizes[i] = rq->bytes;
    run->q.hooks[i] = (unsigned char)rq->hook;
    run->q.streams[i] = rq->stream;
    run->issued++;
    run->has_h2d |= rq->scls.kind == CB_MEM_HOST && rq->dcls.kind != CB_MEM_HOST;
    run->q.has_host |= rq->scls.kind == CB_MEM_HOST || rq->dcls.kind == CB_MEM_HOST;
    run->q.kernel_ok = (i == 0 || run->q.kernel_ok) && rq->kernel_ok;
    return 0;
}

int cb_run_mark(struct cb_run *run, const struct cb_marker *m)
{
    if (run->q.nmarks == run->q.capmarks) {
        size_t cap = run->q.capmarks ? 2 * run->q.capmarks : 8;
        struct cb_marker *p = realloc(run->q.marks, cap * sizeof *p);
        if (!p)
            return -1;
        run->q.marks = p;
        run->q.capmarks = cap;
    }
    run->q.marks[run->q.nmarks++] = *m;
    return 0;
}

void cb_forget_context_runs(CUcontext ctx)
{
    struct cb_run *run, *tmp;
    CB_RUNS_EACH(run, tmp) {
        if (run->q.n == 0 && run->facts.ctx == ctx) {
            /* its events died with the context */
            run->facts.fence.ev_join = NULL;
            run->facts.fence.ev_start = NULL;
            cb_run_set_active(run);
        }
    }
}

void cb_runs_atfork_child(void)
{
    /* The child starts with empty queues and no CUDA state of its own. */
    struct cb_run *run, *tmp;
    HASH_ITER(hh, cb_run_table, run, tmp) {
        run->active = 0;
        run->queued = 0;
        run->marked = 0;
        cb_run_free(run);
    }
    atomic_store(&cb_active, 0);
    atomic_store(&cb_nonempty, 0);
    atomic_store(&cb_legacy_nonempty, 0);
    atomic_store(&cb_marked, 0);
    cb_events_atfork_child();
    cb_tls_last.run = NULL;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&cb_runs_mutex, &a);
    pthread_mutexattr_destroy(&a);
    cb_tls_locked = 0;
}
