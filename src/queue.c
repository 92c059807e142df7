/* queue.c - runs of deferred copies, one per stream, and every reason to flush one.
 *
 * One mutex guards all runs.  The copy path takes it once per copy (uncontended:
 * a few tens of ns); submissions happen under it too, so a run is never submitted
 * twice or half-way.  The program's own calls are always forwarded outside it.
 *
 * Runs are keyed by stream handle; a per-thread default stream by (handle
 * CU_STREAM_PER_THREAD, owning thread).  A run caches what it learned about its
 * stream when it opened (capturing? blocking? context, device); these can only
 * change through calls that name the stream, and every such call flushes the run
 * first, so the next copy re-opens it and asks again (rule 2).  A destroyed
 * stream's handle may come back for a new stream: its run was flushed and
 * dropped at destroy.
 *
 * Hazards (rule 5): copies of one batch run in no defined order, so a copy may
 * not join a run if it reads what a queued copy writes, or writes what a queued
 * copy reads or writes.  Each run keeps the union of its written ranges and of its
 * read ranges as sorted disjoint intervals; the check is two binary searches, the
 * insert usually an append (copy loops walk memory upwards).  Exact: no false
 * negatives; adjacent ranges do not conflict. */
#include "run.h"

#include <stdlib.h>
#include <string.h>

/* Adaptive: a thread that finds it taken spins briefly before sleeping, as the
 * holder is usually done within a microsecond. */
static pthread_mutex_t cb_q_lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static struct cb_run *cb_runs;
/* Runs that hold copies, a pending join or a pending error.  Zero lets every
 * flush trigger return without taking the lock. */
static atomic_int cb_active;
static atomic_int cb_nonempty; /* runs holding copies: what the timer waits for */
/* Bumped whenever a run is freed: validates the per-thread last-run cache. */
static uint64_t cb_runs_epoch = 1;
static int cb_exiting;
/* Set while this thread holds cb_q_lock: a driver call made from inside a
 * submission that comes back into a wrapper must not try to flush again. */
static CB_TLS int cb_tls_locked;

static void q_lock(void)
{
    pthread_mutex_lock(&cb_q_lock);
    cb_tls_locked = 1;
}

static void q_unlock(void)
{
    cb_tls_locked = 0;
    pthread_mutex_unlock(&cb_q_lock);
}

struct cb_last { struct cb_run *run; uintptr_t stream; uint64_t epoch; };
static CB_TLS struct cb_last cb_tls_last;
static pthread_key_t cb_thread_key;
static pthread_once_t cb_thread_key_once = PTHREAD_ONCE_INIT;

/* ---- interval sets --------------------------------------------------------- */

/* Index of the first interval whose end is above lo. */
static size_t iset_find(const struct cb_iset *s, uintptr_t lo)
{
    size_t a = 0, b = s->n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (s->v[m].hi <= lo)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

static int iset_overlaps(const struct cb_iset *s, uintptr_t lo, uintptr_t hi)
{
    if (s->n == 0 || lo >= s->v[s->n - 1].hi || hi <= s->v[0].lo)
        return 0;
    size_t i = iset_find(s, lo);
    return i < s->n && s->v[i].lo < hi;
}

/* Add [lo, hi), merging what it overlaps or touches.  -1 when out of memory. */
static int iset_add(struct cb_iset *s, uintptr_t lo, uintptr_t hi)
{
    if (s->n && s->v[s->n - 1].hi == lo) { /* the common case: right after the last */
        s->v[s->n - 1].hi = hi;
        return 0;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        struct cb_ival *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    size_t a = s->n && lo > s->v[s->n - 1].hi ? s->n : iset_find(s, lo);
    if (a > 0 && s->v[a - 1].hi == lo)
        a--; /* touches the one before */
    size_t b = a;
    while (b < s->n && s->v[b].lo <= hi)
        b++;
    if (b > a) { /* merge [a, b) with the new range */
        if (s->v[a].lo < lo)
            lo = s->v[a].lo;
        if (s->v[b - 1].hi > hi)
            hi = s->v[b - 1].hi;
        s->v[a] = (struct cb_ival){lo, hi};
        memmove(&s->v[a + 1], &s->v[b], (s->n - b) * sizeof s->v[0]);
        s->n -= b - a - 1;
    } else {
        memmove(&s->v[a + 1], &s->v[a], (s->n - a) * sizeof s->v[0]);
        s->v[a] = (struct cb_ival){lo, hi};
        s->n++;
    }
    return 0;
}

/* Rule 5: may a copy (dst, src, n) join a run whose copies wrote `w` and read `r`? */
static int hazard_sets(const struct cb_iset *w, const struct cb_iset *r, uintptr_t d, uintptr_t s, uintptr_t n)
{
    return iset_overlaps(w, s, s + n)     /* reads what a queued copy writes */
           || iset_overlaps(w, d, d + n)  /* writes what a queued copy writes */
           || iset_overlaps(r, d, d + n); /* writes what a queued copy reads */
}

/* For the unit tests: index of the first copy of a list that may not join the run
 * formed by those before it, -1 if none (-2 out of memory). */
CB_EXPORT int cubatch__hazard_probe(const uintptr_t (*copies)[3], size_t n)
{
    struct cb_iset w = {0}, r = {0};
    int hazard_at = -1;
    for (size_t i = 0; i < n && hazard_at < 0; i++) {
        uintptr_t d = copies[i][0], s = copies[i][1], len = copies[i][2];
        if (hazard_sets(&w, &r, d, s, len))
            hazard_at = (int)i;
        else if (iset_add(&w, d, d + len) || iset_add(&r, s, s + len))
            hazard_at = -2;
    }
    free(w.v);
    free(r.v);
    return hazard_at;
}

/* ---- runs ---------------------------------------------------------------------- */

static void run_set_active(struct cb_run *run)
{
    int a = run->n > 0 || run->ev_join != NULL || run->pending != CUDA_SUCCESS;
    if (a != run->active) {
        atomic_fetch_add(&cb_active, a ? 1 : -1);
        run->active = a;
    }
    int q = run->n > 0;
    if (q != run->queued) {
        atomic_fetch_add(&cb_nonempty, q ? 1 : -1);
        run->queued = q;
    }
}

static void run_free(struct cb_run *run)
{
    HASH_DEL(cb_runs, run);
    if (run->active)
        atomic_fetch_sub(&cb_active, 1);
    if (run->queued)
        atomic_fetch_sub(&cb_nonempty, 1);
    free(run->dsts);
    free(run->srcs);
    free(run->sizes);
    free(run->hooks);
    free(run->streams);
    free(run->writes.v);
    free(run->reads.v);
    free(run);
    cb_runs_epoch++;
}

static int run_is_owner(const struct cb_run *run)
{
    return run->ptds && !run->orphan && pthread_equal((pthread_t)run->key.owner, pthread_self());
}

static void thread_gone(void *arg);
static void make_thread_key(void) { pthread_key_create(&cb_thread_key, thread_gone); }

static struct cb_run *run_find(const struct cb_run_key *key)
{
    struct cb_last *last = &cb_tls_last;
    if (last->run && last->epoch == cb_runs_epoch && last->stream == key->stream &&
        last->run->key.owner == key->owner)
        return last->run;
    struct cb_run *run;
    HASH_FIND(hh, cb_runs, key, sizeof *key, run);
    if (run)
        *last = (struct cb_last){run, key->stream, cb_runs_epoch};
    return run;
}

static struct cb_run *run_create(const struct cb_run_key *key)
{
    struct cb_run *run = calloc(1, sizeof *run);
    if (!run)
        return NULL;
    run->key = *key;
    run->ptds = key->owner != 0;
    HASH_ADD(hh, cb_runs, key, sizeof run->key, run);
    if (run->ptds) {
        /* at the owner's exit its run is flushed through the side stream */
        pthread_once(&cb_thread_key_once, make_thread_key);
        pthread_setspecific(cb_thread_key, run);
    }
    return run;
}

static void run_clear(struct cb_run *run)
{
    run->n = 0;
    run->writes.n = 0;
    run->reads.n = 0;
}

static enum cb_stat_id why_stat(enum cb_flush_why why)
{
    static const enum cb_stat_id map[] = {
        [CB_WHY_STREAM] = CB_ST_flush_stream,   [CB_WHY_LEGACY] = CB_ST_flush_legacy,
        [CB_WHY_CONTEXT] = CB_ST_flush_context, [CB_WHY_HAZARD] = CB_ST_flush_hazard,
        [CB_WHY_FULL] = CB_ST_flush_full,       [CB_WHY_PASSTHROUGH] = CB_ST_flush_passthrough,
        [CB_WHY_TIMER] = CB_ST_flush_timer,     [CB_WHY_EXIT] = CB_ST_flush_exit,
    };
    return map[why];
}

/* Submit and empty a run (lock held).  Returns the error the caller must report:
 * an earlier one left pending on this run first, else this submission's. */
static CUresult run_flush(struct cb_run *run, enum cb_flush_why why)
{
    CUresult rc = CUDA_SUCCESS;
    int owner = run_is_owner(run);
    if (run->n > 0) {
        cb_stats_thread()->v[why_stat(why)]++;
        rc = cb_submit(run, owner);
        run_clear(run);
    } else if (owner && run->ev_join) {
        rc = cb_owner_join(run);
    }
    CUresult pending = run->pending;
    run->pending = CUDA_SUCCESS;
    if (pending == CUDA_SUCCESS)
        pending = rc;
    /* Nobody is waiting on a timer flush: keep its error for the next call on
     * this stream (or the next context-wide call). */
    if (why == CB_WHY_TIMER && pending != CUDA_SUCCESS) {
        run->pending = pending;
        pending = CUDA_SUCCESS;
    }
    run_set_active(run);
    return pending;
}

static void thread_gone(void *arg)
{
    (void)arg;
    q_lock();
    struct cb_run_key key = {(uintptr_t)CU_STREAM_PER_THREAD, (uintptr_t)pthread_self()};
    struct cb_run *run;
    HASH_FIND(hh, cb_runs, &key, sizeof key, run);
    if (run) {
        run->orphan = 1; /* its stream can no longer be named: side stream */
        if (run->n > 0)
            run_flush(run, CB_WHY_EXIT);
        cb_legacy_join(run); /* nobody will join later: the legacy stream waits now */
        run_free(run);
    }
    q_unlock();
}

/* Learn what the run's stream is; 0 to defer on it, else the stat saying why not. */
static int run_open(struct cb_run *run, const struct cb_copy_req *rq, enum cb_stat_id *why)
{
    CUstream s = run->ptds ? CU_STREAM_PER_THREAD : rq->stream;
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    *why = CB_ST_pass_query;
    if (!cb_drv.StreamIsCapturing || cb_drv.StreamIsCapturing(s, &cap) != CUDA_SUCCESS)
        return -1;
    if (cap != CU_STREAM_CAPTURE_STATUS_NONE) {
        *why = CB_ST_pass_capture; /* rule 2: captured as before, never batched */
        return -1;
    }
    if (run->ptds) {
        if (!cb_drv.CtxGetCurrent || cb_drv.CtxGetCurrent(&run->ctx) != CUDA_SUCCESS || !run->ctx)
            return -1;
        if (!cb_drv.CtxGetDevice || cb_drv.CtxGetDevice(&run->device) != CUDA_SUCCESS)
            return -1;
        run->blocking = 1;
        if (cb_owner_join(run) != CUDA_SUCCESS || cb_ptds_open(run) != CUDA_SUCCESS)
            return -1;
    } else {
        unsigned int flags = 0;
        if (!cb_drv.StreamGetFlags || cb_drv.StreamGetFlags(s, &flags) != CUDA_SUCCESS)
            return -1;
        run->blocking = !(flags & CU_STREAM_NON_BLOCKING);
        if (!cb_drv.StreamGetCtx || cb_drv.StreamGetCtx(s, &run->ctx) != CUDA_SUCCESS)
            return -1;
        CUdevice dev = -1;
        if (cb_drv.StreamGetDevice) {
            if (cb_drv.StreamGetDevice(s, &dev) != CUDA_SUCCESS)
                return -1;
        } else {
            struct cb_ctx_guard g;
            if (cb_ctx_enter(run->ctx, &g) != CUDA_SUCCESS)
                return -1;
            CUresult rc = cb_drv.CtxGetDevice(&dev);
            cb_ctx_leave(&g);
            if (rc != CUDA_SUCCESS)
                return -1;
        }
        run->device = dev;
    }
    run->opened_ns = cb_now_ns();
    run->seen_n = 0;
    run->idle_looks = 0;
    return 0;
}

static int run_grow(struct cb_run *run)
{
    size_t cap = run->cap ? 2 * run->cap : 16;
    size_t max = cb_opt(CB_OPT_max_batch);
    if (cap > max)
        cap = max;
#define GROW(field)                                                       \
    do {                                                                  \
        void *p = realloc(run->field, cap * sizeof run->field[0]);        \
        if (!p)                                                           \
            return -1;                                                    \
        run->field = p;                                                   \
    } while (0)
    GROW(dsts);
    GROW(srcs);
    GROW(sizes);
    GROW(hooks);
    GROW(streams);
#undef GROW
    run->cap = cap;
    return 0;
}

static int hazard(const struct cb_run *run, const struct cb_copy_req *rq)
{
    return hazard_sets(&run->writes, &run->reads, rq->dst, rq->src, rq->bytes);
}

/* The pace of a stream's eligible copies.  Batching saves the program about one
 * microsecond of driver time per copy, but a deferred copy starts late: when the
 * program itself spends several microseconds between copies (a Python loop), the
 * GPU would have run each copy while the next was being issued, and deferring
 * them costs more than it saves (measured: a PyTorch soak ran 13-20% slower).
 * So copies whose running mean gap (between copies that would be deferred)
 * exceeds CUBATCH_SLOW_NS pass through.  A gap
 * over 100 us is a pause between bursts, not a pace: it starts the mean afresh,
 * so a fast loop after a pause is batched from its first copy, and a slow one is
 * recognised within two or three copies (which then go out at once).
 * Returns 1 when the stream is slow.  Lock held. */
static int run_pace(struct cb_run *run)
{
    uint64_t now = cb_now_ns(), gap = now - run->last_copy_ns;
    run->last_copy_ns = now;
    run->pace_ns = gap < 100000u ? (3 * run->pace_ns + gap) / 4 : 0;
    return run->pace_ns > cb_opt(CB_OPT_slow_ns);
}

static struct cb_run_key key_for(CUstream s, enum cb_stream_kind sk)
{
    if (sk == CB_STREAM_PTDS)
        return (struct cb_run_key){(uintptr_t)CU_STREAM_PER_THREAD, (uintptr_t)pthread_self()};
    return (struct cb_run_key){(uintptr_t)s, 0};
}

int cb_enqueue(const struct cb_copy_req *rq, CUresult *rc)
{
    struct cb_tstats *t = cb_stats_thread();
    struct cb_run_key key = key_for(rq->stream, rq->sk);
    enum cb_stat_id why = CB_ST_pass_nomem;
    struct cb_run *run = NULL;
    *rc = CUDA_SUCCESS;
    if (cb_tls_locked) { /* re-entered from a submission: just pass through */
        t->v[CB_ST_pass_query]++;
        return 0;
    }
    q_lock();
    if (cb_exiting) {
        why = CB_ST_pass_disabled;
        goto pass;
    }
    run = run_find(&key);
    if (!run && !(run = run_create(&key)))
        goto pass;
    if (run_pace(run)) {
        /* Copies come too slowly for a batch to pay (see run_pace): issue this
         * one now, after whatever the run holds (pass: below). */
        why = CB_ST_pass_slow;
        goto pass;
    }
    if (run->n > 0 && hazard(run, rq)) {
        *rc = run_flush(run, CB_WHY_HAZARD);
    }
    if (run->n > 0 && run->ptds) {
        CUcontext cur = NULL;
        if (cb_drv.CtxGetCurrent(&cur) != CUDA_SUCCESS || cur != run->ctx)
            *rc = run_flush(run, CB_WHY_STREAM); /* the thread switched context */
    }
    int opened = 0;
    if (run->n == 0) {
        if (run_open(run, rq, &why))
            goto pass;
        opened = 1;
    }
    /* Device memory must belong to the stream's device (peer copies pass). */
    if ((rq->dcls.kind == CB_MEM_DEVICE && rq->dcls.device != run->device) ||
        (rq->scls.kind == CB_MEM_DEVICE && rq->scls.device != run->device)) {
        why = CB_ST_pass_foreign;
        goto pass;
    }
    if (run->n == run->cap && run_grow(run))
        goto pass;
    if (iset_add(&run->writes, rq->dst, rq->dst + rq->bytes) || iset_add(&run->reads, rq->src, rq->src + rq->bytes)) {
        /* the sets may now over-approximate: only ever more conservative */
        goto pass;
    }
    size_t i = run->n++;
    run->dsts[i] = rq->dst;
    run->srcs[i] = rq->src;
    run->sizes[i] = rq->bytes;
    run->hooks[i] = (unsigned char)rq->hook;
    run->streams[i] = rq->stream;
    if (run->n >= cb_opt(CB_OPT_max_batch)) {
        CUresult fr = run_flush(run, CB_WHY_FULL);
        if (*rc == CUDA_SUCCESS)
            *rc = fr;
    }
    run_set_active(run);
    q_unlock();
    if (opened)
        cb_flusher_kick(); /* after the run is counted: see flusher.c */
    cb_lifecycle_arm();
    return 1;

pass:
    /* The copy passes through; whatever is queued on its stream goes first. */
    if (run && run->n > 0) {
        CUresult fr = run_flush(run, CB_WHY_PASSTHROUGH);
        if (*rc == CUDA_SUCCESS)
            *rc = fr;
    } else if (run && run->ptds && run->ev_start) {
        cb_ptds_release(run);
    }
    if (run)
        run_set_active(run);
    t->v[why]++;
    q_unlock();
    return 0;
}

CUresult cb_flush_stream(CUstream s, int ptsz_entry, enum cb_flush_why why)
{
    if (cb_tls_locked)
        return CUDA_SUCCESS;
    if (atomic_load_explicit(&cb_active, memory_order_acquire) == 0)
        return CUDA_SUCCESS;
    enum cb_stream_kind sk = cb_stream_kind(s, ptsz_entry);
    if (sk == CB_STREAM_LEGACY_KIND)
        return cb_flush_legacy();
    struct cb_run_key key = key_for(s, sk);
    CUresult rc = CUDA_SUCCESS;
    q_lock();
    struct cb_run *run = run_find(&key);
    if (run && run->active)
        rc = run_flush(run, why);
    q_unlock();
    return rc;
}

int cb_runs_pending(void) { return atomic_load(&cb_nonempty) > 0; }

CUresult cb_pass_eligible(const struct cb_copy_req *rq)
{
    if (atomic_load_explicit(&cb_active, memory_order_acquire) == 0 || cb_tls_locked)
        return cb_copy_forward(rq->hook, rq->dst, rq->src, rq->bytes, rq->stream);
    struct cb_run_key key = key_for(rq->stream, rq->sk);
    CUresult fe = CUDA_SUCCESS;
    q_lock();
    struct cb_run *run = run_find(&key);
    if (run && run->n > 0 && hazard(run, rq))
        fe = run_flush(run, CB_WHY_HAZARD);
    else if (run && run->active && run->n == 0)
        fe = run_flush(run, CB_WHY_STREAM); /* a pending join or error: settle it */
    /* Issued under the lock so that no other thread can flush the run between the
     * copy and the fence below. */
    CUresult rc = cb_copy_forward(rq->hook, rq->dst, rq->src, rq->bytes, rq->stream);
    if (run && run->n > 0 && run->ptds && run->ev_start) {
        /* Copies queued from now on may depend on this one; a side-stream
         * submission waits for ev_start only, so move it past this copy. */
        CUresult er = cb_drv.EventRecord(run->ev_start, CU_STREAM_PER_THREAD);
        if (er != CUDA_SUCCESS && fe == CUDA_SUCCESS)
            fe = run_flush(run, CB_WHY_STREAM);
    }
    q_unlock();
    return fe != CUDA_SUCCESS ? fe : rc;
}

/* Flush every active run, or only blocking ones (legacy rule).  Lock held. */
static CUresult flush_matching(int only_blocking, enum cb_flush_why why)
{
    CUresult first = CUDA_SUCCESS;
    struct cb_run *run, *tmp;
    HASH_ITER(hh, cb_runs, run, tmp) {
        if (!run->active || (only_blocking && !run->blocking && !run->ptds))
            continue;
        CUresult rc = run_flush(run, why);
        /* legacy-ordered calls (and context-wide ones, which include synchronous
         * copies) must follow other threads' side-submitted per-thread copies */
        if (why != CB_WHY_TIMER && why != CB_WHY_EXIT && rc == CUDA_SUCCESS && run->ptds)
            rc = cb_legacy_join(run);
        if (rc != CUDA_SUCCESS && first == CUDA_SUCCESS)
            first = rc;
    }
    return first;
}

CUresult cb_flush_legacy(void)
{
    if (cb_tls_locked)
        return CUDA_SUCCESS;
    if (atomic_load_explicit(&cb_active, memory_order_acquire) == 0)
        return CUDA_SUCCESS;
    q_lock();
    CUresult rc = flush_matching(1, CB_WHY_LEGACY);
    q_unlock();
    return rc;
}

CUresult cb_flush_all(enum cb_flush_why why)
{
    if (cb_tls_locked)
        return CUDA_SUCCESS;
    if (atomic_load_explicit(&cb_active, memory_order_acquire) == 0)
        return CUDA_SUCCESS;
    q_lock();
    CUresult rc = flush_matching(0, why);
    q_unlock();
    return rc;
}

void cb_forget_stream(CUstream s)
{
    if (cb_stream_kind(s, 0) != CB_STREAM_REGULAR)
        return;
    struct cb_run_key key = {(uintptr_t)s, 0};
    q_lock();
    struct cb_run *run;
    HASH_FIND(hh, cb_runs, &key, sizeof key, run);
    if (run) {
        if (run->n > 0) /* queued between the flush and the destroy by another thread */
            run_flush(run, CB_WHY_STREAM);
        run_free(run);
    }
    q_unlock();
}

void cb_forget_context(CUcontext ctx)
{
    q_lock();
    struct cb_run *run, *tmp;
    HASH_ITER(hh, cb_runs, run, tmp) {
        if (run->n == 0 && run->ctx == ctx) {
            /* its events died with the context */
            run->ev_join = NULL;
            run->ev_start = NULL;
            run_set_active(run);
        }
    }
    cb_submit_forget_context(ctx);
    q_unlock();
}

/* Rule 7.  The timer looks at the runs every CUBATCH_FLUSH_US / 10 (flusher.c).
 * A run that did not grow over two looks in a row, i.e. no copy joined it for
 * 10 to 30 us with the default 100 us, is submitted: the program has moved on
 * (to CPU work, say) and its copies should be running.  A run is also submitted,
 * whatever its pace, once it is 10 x CUBATCH_FLUSH_US old (1 ms by default: a
 * fast loop of 4096 copies fits; a shorter bound split such loops on the H200).
 * Programs that issue copies microseconds apart are not deferred at all (the pace
 * rule, run_pace), so this bound rarely decides anything.  Nothing on the copy
 * path reads a clock: the timer compares run lengths.  If the program holds the
 * queue lock, it is busy queueing and the look is skipped.  Returns 1 while runs
 * hold copies. */
int cb_runs_timer_pass(uint64_t now_ns)
{
    if (atomic_load_explicit(&cb_nonempty, memory_order_acquire) == 0)
        return 0;
    if (pthread_mutex_trylock(&cb_q_lock))
        return 1;
    cb_tls_locked = 1;
    uint64_t max_age = 10 * cb_opt(CB_OPT_flush_us) * 1000u;
    struct cb_run *run, *tmp;
    HASH_ITER(hh, cb_runs, run, tmp) {
        if (run->n == 0)
            continue;
        if (run->n != run->seen_n) {
            run->seen_n = run->n;
            run->idle_looks = 0;
        } else {
            run->idle_looks++;
        }
        if (run->idle_looks >= 2 || now_ns - run->opened_ns >= max_age)
            run_flush(run, CB_WHY_TIMER);
    }
    q_unlock();
    return 1;
}

void cb_queue_exit(void)
{
    q_lock();
    flush_matching(0, CB_WHY_EXIT);
    cb_exiting = 1;
    q_unlock();
}

void cb_queue_atfork_prepare(void)
{
    q_lock();
    flush_matching(0, CB_WHY_EXIT); /* the parent loses nothing */
}

void cb_queue_atfork_parent(void) { q_unlock(); }

void cb_queue_atfork_child(void)
{
    /* The child starts with empty queues and no CUDA state of its own. */
    struct cb_run *run, *tmp;
    HASH_ITER(hh, cb_runs, run, tmp) {
        run->active = 0;
        run->queued = 0;
        run_free(run);
    }
    atomic_store(&cb_active, 0);
    atomic_store(&cb_nonempty, 0);
    cb_tls_last.run = NULL;
    cb_submit_atfork_child();
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&cb_q_lock, &a);
    pthread_mutexattr_destroy(&a);
    cb_tls_locked = 0;
}
