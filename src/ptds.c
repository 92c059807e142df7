/* ptds.c - per-thread default streams (rule 4), and making a run's context
 * current from any thread.
 *
 * Only the owning thread can name its per-thread stream.  When another thread
 * must flush such a run (its context synchronize or legacy-stream call must
 * observe the copies, or the background timer fires), the copies go onto a
 * cubatch-owned non-blocking side stream of the same context, fenced by events:
 * the side stream waits for ev_start (recorded on the owner's stream when the
 * run opened, so the copies follow the owner's earlier work), the copies run,
 * ev_join is recorded; the legacy stream waits for ev_join right before the next
 * legacy-ordered call (so later legacy work, and with it every blocking stream,
 * follows the copies), and the owner's stream waits for it before the owner's
 * next call on it.  Why this keeps the order, and what it costs: docs/design.md
 * rule 4.
 *
 * Callers hold the lock of the run they submit (store.c).  The per-context state
 * kept here is shared by every run of the context, which may go out at once
 * from several threads: it has its own lock, a leaf (held for the table and the
 * pools, and while a context's side stream is created; never while taking
 * another).  Two runs going out on one side stream at once only add waits to
 * each other: a stream runs its work in order. */
#include "ptds.h"
#include "stats.h"

#include <stdlib.h>
#include <uthash.h>

/* Per context: the side stream and a pool of timing-free events. */
struct cb_ctxstate {
    UT_hash_handle hh;
    CUcontext ctx;
    CUstream side;
    CUevent *pool;
    size_t npool, cap;
};
static struct cb_ctxstate *cb_ctxs;
static pthread_mutex_t cb_ctxs_mu = PTHREAD_MUTEX_INITIALIZER;

CUresult cb_ctx_enter(CUcontext ctx, struct cb_ctx_guard *g)
{
    g->pushed = 0;
    CUcontext cur = NULL;
    if (cb_drv.cuCtxGetCurrent && cb_drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx)
        return CUDA_SUCCESS;
    if (!cb_drv.cuCtxPushCurrent_v2)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult rc = cb_drv.cuCtxPushCurrent_v2(ctx);
    g->pushed = rc == CUDA_SUCCESS;
    return rc;
}

void cb_ctx_leave(struct cb_ctx_guard *g)
{
    CUcontext dummy;
    if (g->pushed && cb_drv.cuCtxPopCurrent_v2)
        cb_drv.cuCtxPopCurrent_v2(&dummy);
    g->pushed = 0;
}

/* cb_ctxs_mu held. */
static struct cb_ctxstate *ctx_state(CUcontext ctx)
{
    struct cb_ctxstate *c;
    HASH_FIND_PTR(cb_ctxs, &ctx, c);
    if (c)
        return c;
    c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->ctx = ctx;
    HASH_ADD_PTR(cb_ctxs, ctx, c);
    return c;
}

CUevent cb_ctx_event_get(CUcontext ctx)
{
    pthread_mutex_lock(&cb_ctxs_mu);
    struct cb_ctxstate *c = ctx_state(ctx);
    CUevent e = c && c->npool ? c->pool[--c->npool] : NULL;
    pthread_mutex_unlock(&cb_ctxs_mu);
    if (e)
        return e;
    if (!cb_drv.cuEventCreate || cb_drv.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return NULL;
    return e;
}

void cb_ctx_event_put(CUcontext ctx, CUevent e)
{
    if (!e)
        return;
    pthread_mutex_lock(&cb_ctxs_mu);
    struct cb_ctxstate *c = ctx_state(ctx);
    if (c && c->npool == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        CUevent *p = realloc(c->pool, cap * sizeof *p);
        if (p) {
            c->pool = p;
            c->cap = cap;
        }
    }
    if (c && c->npool < c->cap) /* else out of memory: leak one event rather than fail */
        c->pool[c->npool++] = e;
    pthread_mutex_unlock(&cb_ctxs_mu);
}

CUresult cb_fence_open(struct cb_stream_facts *f)
{
    f->fence.ev_start = cb_ctx_event_get(f->ctx);
    if (!f->fence.ev_start)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = cb_fence_rerecord(f);
    if (rc != CUDA_SUCCESS)
        cb_fence_release(f);
    return rc;
}

CUresult cb_fence_rerecord(struct cb_stream_facts *f)
{
    return cb_drv.cuEventRecord(f->fence.ev_start, CU_STREAM_PER_THREAD);
}

void cb_fence_release(struct cb_stream_facts *f)
{
    if (!f->fence.ev_start)
        return;
    cb_ctx_event_put(f->ctx, f->fence.ev_start);
    f->fence.ev_start = NULL;
}

/* Stream s of the run's context waits for the side submission's completion. */
static CUresult join_in(const struct cb_stream_facts *f, CUstream s)
{
    struct cb_ctx_guard g;
    CUresult rc = cb_ctx_enter(f->ctx, &g);
    if (rc == CUDA_SUCCESS)
        rc = cb_drv.cuStreamWaitEvent(s, f->fence.ev_join, 0);
    cb_ctx_leave(&g);
    return rc;
}

CUresult cb_fence_legacy_join(struct cb_stream_facts *f)
{
    if (!f->fence.ev_join || f->fence.legacy_joined)
        return CUDA_SUCCESS;
    CUresult rc = join_in(f, CU_STREAM_LEGACY);
    f->fence.legacy_joined = rc == CUDA_SUCCESS;
    if (f->orphan && f->fence.legacy_joined) { /* no owner will ever join */
        cb_ctx_event_put(f->ctx, f->fence.ev_join);
        f->fence.ev_join = NULL;
    }
    return rc;
}

CUresult cb_fence_owner_join(struct cb_stream_facts *f)
{
    if (!f->fence.ev_join)
        return CUDA_SUCCESS;
    CUresult rc = join_in(f, CU_STREAM_PER_THREAD);
    cb_ctx_event_put(f->ctx, f->fence.ev_join);
    f->fence.ev_join = NULL;
    return rc;
}

CUresult cb_ctx_side_stream(CUcontext ctx, CUstream *out)
{
    pthread_mutex_lock(&cb_ctxs_mu);
    struct cb_ctxstate *c = ctx_state(ctx);
    CUresult rc = c ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    if (c && !c->side && (rc = cb_drv.cuStreamCreate(&c->side, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
        c->side = NULL;
    *out = c ? c->side : NULL;
    pthread_mutex_unlock(&cb_ctxs_mu);
    return rc;
}

CUresult cb_side_begin(struct cb_stream_facts *f, CUstream *side, struct cb_ctx_guard *g)
{
    *side = NULL;
    CUresult rc = cb_ctx_enter(f->ctx, g);
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((rc = cb_ctx_side_stream(f->ctx, side)) != CUDA_SUCCESS) {
        *side = NULL;
        cb_ctx_leave(g);
        return rc;
    }
    return f->fence.ev_start ? cb_drv.cuStreamWaitEvent(*side, f->fence.ev_start, 0) : CUDA_SUCCESS;
}

/* `from` waits for everything submitted to `to` so far (ctx current). */
static CUresult order_after(CUcontext ctx, CUstream to, CUstream from)
{
    CUevent e = cb_ctx_event_get(ctx);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = cb_drv.cuEventRecord(e, from);
    if (rc == CUDA_SUCCESS)
        rc = cb_drv.cuStreamWaitEvent(to, e, 0);
    /* a wait already enqueued keeps the state the event had: it may be reused */
    cb_ctx_event_put(ctx, e);
    return rc;
}

CUresult cb_side_legacy_begin(const struct cb_stream_facts *f, CUstream *side)
{
    CUstream s = NULL;
    *side = NULL;
    CUresult rc = cb_ctx_side_stream(f->ctx, &s);
    if (rc == CUDA_SUCCESS)
        rc = order_after(f->ctx, s, CU_STREAM_LEGACY);
    if (rc == CUDA_SUCCESS)
        *side = s;
    return rc;
}

CUresult cb_side_legacy_end(const struct cb_stream_facts *f, CUstream side)
{
    return order_after(f->ctx, CU_STREAM_LEGACY, side);
}

CUresult cb_side_end(struct cb_stream_facts *f, CUstream side, CUresult begun, struct cb_ctx_guard *g)
{
    CUevent done = cb_ctx_event_get(f->ctx);
    CUresult rc = !done ? CUDA_ERROR_OUT_OF_MEMORY : begun != CUDA_SUCCESS ? begun : cb_drv.cuEventRecord(done, side);
    cb_fence_release(f);
    if (f->fence.ev_join) /* an earlier side submission the owner never joined: the new one follows it */
        cb_ctx_event_put(f->ctx, f->fence.ev_join);
    /* The legacy stream must not start its next work before these copies (the
     * owner's stream is blocking): cb_fence_legacy_join makes it wait, right
     * before the next legacy-ordered call.  Not now: a wait on the legacy stream
     * while another stream captures in global mode would invalidate that capture
     * (the differential fuzzer found it), and this may run on the timer thread. */
    f->fence.ev_join = rc == CUDA_SUCCESS ? done : NULL;
    f->fence.legacy_joined = 0;
    CB_COUNT(side_submits);
    cb_ctx_leave(g);
    return rc;
}

/* Drop the helpers of a context that is gone (all: of every context).  The
 * handles died with the context: only memory is freed. */
static void drop_contexts(CUcontext ctx, int all)
{
    struct cb_ctxstate *c, *tmp;
    pthread_mutex_lock(&cb_ctxs_mu);
    HASH_ITER(hh, cb_ctxs, c, tmp) {
        if (all || c->ctx == ctx) {
            HASH_DEL(cb_ctxs, c);
            free(c->pool);
            free(c);
        }
    }
    pthread_mutex_unlock(&cb_ctxs_mu);
}

void cb_forget_context_helpers(CUcontext ctx) { drop_contexts(ctx, 0); }

void cb_ptds_atfork_prepare(void) { pthread_mutex_lock(&cb_ctxs_mu); }
void cb_ptds_atfork_parent(void) { pthread_mutex_unlock(&cb_ctxs_mu); }

void cb_ptds_atfork_child(void)
{
    pthread_mutex_init(&cb_ctxs_mu, NULL);
    drop_contexts(NULL, 1);
}
