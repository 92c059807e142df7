/* submit.c - turning a run into driver calls.
 *
 * A run of CUBATCH_MIN_RUN copies or more becomes cuMemcpyBatchAsync calls of at
 * most CUBATCH_MAX_BATCH entries (DESIGN.md: one batch of 51,828 descriptors
 * crashed this driver); a shorter run goes out copy by copy through each copy's
 * own entry point (rule 8: a batch of one is slower than the copy).  A batch the
 * driver refuses is replayed copy by copy so that the failing copy gets the
 * driver's own error and nothing is dropped (rule 9).
 *
 * Per-thread default streams (rule 4): only the owning thread can name its
 * per-thread stream.  When another thread must flush such a run (its context
 * synchronize or legacy-stream call must observe the copies, or the background
 * timer fires), the batch goes onto a cubatch-owned non-blocking side stream of
 * the same context, fenced by events: the side stream waits for ev_start (recorded
 * on the owner's stream when the run opened, so the copies follow the owner's
 * earlier work), the batch runs, ev_done is recorded; the legacy stream waits for
 * ev_done at once (so later legacy work, and with it every blocking stream, follows
 * the copies) and the owner's stream waits for it before the owner's next call on
 * it (cb_owner_join).  Measured on an H200: about 1.3 us per run, order kept in
 * every trial. */
#include "run.h"

#include <stdlib.h>

/* Per context: the side stream and a pool of timing-free events. */
struct cb_ctxstate {
    UT_hash_handle hh;
    CUcontext ctx;
    int device;
    CUstream side;
    CUevent *pool;
    size_t npool, cap;
};
static struct cb_ctxstate *cb_ctxs; /* guarded by the queue lock, like runs */

CUresult cb_ctx_enter(CUcontext ctx, struct cb_ctx_guard *g)
{
    g->pushed = 0;
    CUcontext cur = NULL;
    if (cb_drv.CtxGetCurrent && cb_drv.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx)
        return CUDA_SUCCESS;
    if (!cb_drv.CtxPushCurrent)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult rc = cb_drv.CtxPushCurrent(ctx);
    g->pushed = rc == CUDA_SUCCESS;
    return rc;
}

void cb_ctx_leave(struct cb_ctx_guard *g)
{
    CUcontext dummy;
    if (g->pushed && cb_drv.CtxPopCurrent)
        cb_drv.CtxPopCurrent(&dummy);
    g->pushed = 0;
}

static struct cb_ctxstate *ctx_state(CUcontext ctx, int device)
{
    struct cb_ctxstate *c;
    HASH_FIND_PTR(cb_ctxs, &ctx, c);
    if (c)
        return c;
    c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->ctx = ctx;
    c->device = device;
    HASH_ADD_PTR(cb_ctxs, ctx, c);
    return c;
}

/* ctx must be current. */
static CUevent event_get(struct cb_ctxstate *c)
{
    if (c->npool)
        return c->pool[--c->npool];
    CUevent e = NULL;
    if (!cb_drv.EventCreate || cb_drv.EventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return NULL;
    return e;
}

static void event_put(struct cb_ctxstate *c, CUevent e)
{
    if (!e)
        return;
    if (c->npool == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        CUevent *p = realloc(c->pool, cap * sizeof *p);
        if (!p)
            return; /* leak one event rather than fail */
        c->pool = p;
        c->cap = cap;
    }
    c->pool[c->npool++] = e;
}

CUresult cb_ptds_open(struct cb_run *run)
{
    struct cb_ctxstate *c = ctx_state(run->ctx, run->device);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    run->ev_start = event_get(c);
    if (!run->ev_start)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = cb_drv.EventRecord(run->ev_start, CU_STREAM_PER_THREAD);
    if (rc != CUDA_SUCCESS) {
        event_put(c, run->ev_start);
        run->ev_start = NULL;
    }
    return rc;
}

void cb_ptds_release(struct cb_run *run)
{
    if (!run->ev_start)
        return;
    struct cb_ctxstate *c = ctx_state(run->ctx, run->device);
    if (c)
        event_put(c, run->ev_start);
    run->ev_start = NULL;
}

CUresult cb_legacy_join(struct cb_run *run)
{
    if (!run->ev_join || run->legacy_joined)
        return CUDA_SUCCESS;
    struct cb_ctx_guard g;
    CUresult rc = cb_ctx_enter(run->ctx, &g);
    if (rc == CUDA_SUCCESS)
        rc = cb_drv.StreamWaitEvent(CU_STREAM_LEGACY, run->ev_join, 0);
    cb_ctx_leave(&g);
    run->legacy_joined = rc == CUDA_SUCCESS;
    if (run->orphan && run->legacy_joined) { /* no owner will ever join */
        struct cb_ctxstate *c = ctx_state(run->ctx, run->device);
        if (c)
            event_put(c, run->ev_join);
        run->ev_join = NULL;
    }
    return rc;
}

CUresult cb_owner_join(struct cb_run *run)
{
    if (!run->ev_join)
        return CUDA_SUCCESS;
    struct cb_ctx_guard g;
    CUresult rc = cb_ctx_enter(run->ctx, &g);
    if (rc == CUDA_SUCCESS)
        rc = cb_drv.StreamWaitEvent(CU_STREAM_PER_THREAD, run->ev_join, 0);
    cb_ctx_leave(&g);
    struct cb_ctxstate *c = ctx_state(run->ctx, run->device);
    if (c)
        event_put(c, run->ev_join);
    run->ev_join = NULL;
    return rc;
}

/* One copy through its own entry point; on `stream` when given (side stream). */
static CUresult single(const struct cb_run *run, size_t i, CUstream side)
{
    return cb_copy_forward(run->hooks[i], run->dsts[i], run->srcs[i], run->sizes[i], side ? side : run->streams[i]);
}

/* Submit run->dsts[0..n) on `stream` (the program's handle, CU_STREAM_PER_THREAD,
 * or the side stream).  Returns the first error the program must see. */
static CUresult submit_on(struct cb_run *run, CUstream stream, CUstream side)
{
    CUresult first = CUDA_SUCCESS;
    size_t n = run->n;
    struct cb_tstats *t = cb_stats_thread();
    if (n < cb_opt(CB_OPT_min_run)) {
        for (size_t i = 0; i < n; i++) {
            CUresult rc = single(run, i, side);
            if (rc != CUDA_SUCCESS && first == CUDA_SUCCESS)
                first = rc;
        }
        t->v[CB_ST_singles] += n;
        return first;
    }
    CUmemcpyAttributes attr = {0};
    attr.srcAccessOrder = cb_opt(CB_OPT_src_order) == CB_SRC_ORDER_ANY ? CU_MEMCPY_SRC_ACCESS_ORDER_ANY
                                                                        : CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attr.flags = cb_opt(CB_OPT_overlap) ? CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE : 0;
    /* A run is flushed when it reaches CUBATCH_MAX_BATCH, so this loop runs once;
     * it only guarantees that no call ever exceeds the bound. */
    size_t max = cb_opt(CB_OPT_max_batch);
    for (size_t off = 0; off < n; off += max) {
        size_t cnt = n - off < max ? n - off : max;
        size_t zero = 0;
        CUresult rc = cb_drv.MemcpyBatchAsync(run->dsts + off, run->srcs + off, run->sizes + off, cnt, &attr, &zero,
                                              1, stream);
        if (rc == CUDA_SUCCESS) {
            t->v[CB_ST_batches]++;
            t->v[CB_ST_batched_copies] += cnt;
            cb_stat_max(CB_ST_batch_max, cnt);
        } else {
            /* Replay one by one: the failing copy gets the driver's own error.
             * Copies of one run never overlap, so re-running a copy the driver
             * may already have done writes the same bytes. */
            cb_log(CB_LOG_NOTICE, "cuMemcpyBatchAsync of %zu copies failed (%d); replaying them one by one", cnt,
                   (int)rc);
            t->v[CB_ST_batch_errors]++;
            rc = CUDA_SUCCESS;
            for (size_t i = off; i < off + cnt; i++) {
                CUresult r1 = single(run, i, side);
                t->v[CB_ST_replayed]++;
                if (r1 != CUDA_SUCCESS) {
                    t->v[CB_ST_replay_errors]++;
                    if (rc == CUDA_SUCCESS)
                        rc = r1;
                }
            }
        }
        if (rc != CUDA_SUCCESS && first == CUDA_SUCCESS)
            first = rc;
    }
    return first;
}

/* Side-stream submission of another thread's per-thread-stream run. */
static CUresult submit_side(struct cb_run *run)
{
    struct cb_ctx_guard g;
    CUresult rc = cb_ctx_enter(run->ctx, &g);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct cb_ctxstate *c = ctx_state(run->ctx, run->device);
    if (!c) {
        cb_ctx_leave(&g);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!c->side && (rc = cb_drv.StreamCreate(&c->side, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
        c->side = NULL;
        cb_ctx_leave(&g);
        return rc;
    }
    CUevent done = event_get(c);
    if (!done) {
        cb_ctx_leave(&g);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (run->ev_start)
        rc = cb_drv.StreamWaitEvent(c->side, run->ev_start, 0);
    CUresult sub = submit_on(run, c->side, c->side);
    if (rc == CUDA_SUCCESS)
        rc = cb_drv.EventRecord(done, c->side);
    cb_ptds_release(run);
    if (run->ev_join) /* an earlier side submission the owner never joined: the new one follows it */
        event_put(c, run->ev_join);
    /* The legacy stream must not start its next work before these copies (the
     * owner's stream is blocking): cb_legacy_join makes it wait, right before
     * the next legacy-ordered call.  Not now: a wait on the legacy stream while
     * another stream captures in global mode would invalidate that capture (the
     * differential fuzzer found it), and this may run on the timer thread. */
    run->ev_join = done;
    run->legacy_joined = 0;
    cb_stats_thread()->v[CB_ST_side_submits]++;
    cb_ctx_leave(&g);
    return sub != CUDA_SUCCESS ? sub : rc;
}

CUresult cb_submit(struct cb_run *run, int owner)
{
    if (run->ptds && !owner)
        return submit_side(run);
    struct cb_ctx_guard g;
    CUresult rc = cb_ctx_enter(run->ctx, &g);
    if (rc != CUDA_SUCCESS) {
        /* cannot make its context current: still never drop the copies */
        cb_log(CB_LOG_WARN, "cannot make the run's context current (%d); submitting anyway", (int)rc);
    }
    rc = submit_on(run, run->ptds ? CU_STREAM_PER_THREAD : (CUstream)run->key.stream, NULL);
    cb_ptds_release(run);
    cb_ctx_leave(&g);
    return rc;
}

/* Drop the helpers of a context that is gone (all: of every context).  The
 * handles died with the context: only memory is freed. */
static void drop_contexts(CUcontext ctx, int all)
{
    struct cb_ctxstate *c, *tmp;
    HASH_ITER(hh, cb_ctxs, c, tmp) {
        if (all || c->ctx == ctx) {
            HASH_DEL(cb_ctxs, c);
            free(c->pool);
            free(c);
        }
    }
}

void cb_submit_forget_context(CUcontext ctx) { drop_contexts(ctx, 0); }

/* The child of a fork has no usable CUDA state of its own. */
void cb_submit_atfork_child(void) { drop_contexts(NULL, 1); }
