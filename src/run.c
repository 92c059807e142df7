/* run.c - a run's own state: what its stream is, its queue of copies and
 * markers, its counts in the store's (active, queued, marked), its kept error,
 * its feed, its pace and its looks.  Every change of it is one small function
 * here, called under the run's lock by the file that decides it.  The store
 * of runs and its locks: store.c; the thread's burst notes and pass spells:
 * notes.c.
 *
 * A run caches what it learned about its stream when it opened (capturing?
 * blocking? context, device); these can only change through calls that name the
 * stream, and every such call flushes the run first, so the next copy re-opens
 * it and asks again (rule 2).  A destroyed stream's handle may come back for a
 * new stream: its run was flushed and removed at destroy (flush.c). */
#include "run.h"
#include "capture.h"

#include <stdlib.h>

/* Runs that hold copies, a pending join or a pending error.  Zero lets every
 * flush trigger return without taking a lock. */
atomic_int cb_active; /* read inline: run.h */
static atomic_int cb_nonempty; /* runs holding copies: what the timer waits for */
atomic_int cb_legacy_nonempty; /* legacy-stream runs holding copies (read inline: run.h) */
atomic_int cb_blocking_active; /* active runs of blocking streams, the legacy one's not (run.h) */
static atomic_int cb_marked; /* runs holding markers (rule 11): what event observers look for */
/* Run locks this thread holds: a driver call made from inside a submission that
 * comes back into a wrapper must not try to flush again. */
CB_TLS int cb_tls_held;
#ifdef CB_DEBUG
CB_TLS int cb_tls_forking; /* fork's prepare handler holds every run lock (run.h) */
#endif

int cb_runs_nonempty(void) { return atomic_load(&cb_nonempty) > 0; }
int cb_runs_marked(void) { return atomic_load_explicit(&cb_marked, memory_order_acquire) > 0; }

void cb_run_set_active(struct cb_run *run)
{
    CB_ASSERT(cb_run_locked_here(run));
    /* a warm stream counts only while a measured segment runs with its burst
     * (choose.c): a call naming it must end both (flush.c); a burst alone ends
     * through this thread's notes (notes.c) */
    int h = run->q.n > 0 || run->q.nmarks > 0 || run->facts.fence.ev_join != NULL || run->pending != CUDA_SUCCESS;
    if (h != atomic_load_explicit(&run->holds, memory_order_relaxed))
        atomic_store_explicit(&run->holds, h, memory_order_release);
    int a = run->q.n > 0 || run->facts.fence.ev_join != NULL || run->pending != CUDA_SUCCESS ||
            (cb_run_warm(run) && run->seg.open);
    if (a != run->active) {
        atomic_fetch_add(&cb_active, a ? 1 : -1);
        run->active = a;
    }
    int b = a && (run->facts.blocking || run->facts.ptds) && !run->facts.legacy;
    if (b != run->blocking_active) {
        atomic_fetch_add(&cb_blocking_active, b ? 1 : -1);
        run->blocking_active = b;
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

void cb_run_counts_atfork_child(void)
{
    atomic_store(&cb_active, 0);
    atomic_store(&cb_nonempty, 0);
    atomic_store(&cb_legacy_nonempty, 0);
    atomic_store(&cb_blocking_active, 0);
    atomic_store(&cb_marked, 0);
}

int cb_run_is_owner(const struct cb_run *run)
{
    return run->facts.ptds && !run->facts.orphan && pthread_equal((pthread_t)run->key.owner, pthread_self());
}

void cb_run_clear(struct cb_run *run, struct cb_standin *standin)
{
    CB_ASSERT(cb_run_locked_here(run));
    run->q.n = 0;
    run->q.merged.n = 0;
    cb_event_markers_gone(&run->q, run, standin);
    run->q.nmarks = 0;
    run->writes.n = 0;
    run->reads.n = 0;
    run->shapes.n = 0;
    run->q.n2d = 0;
    run->feed.kind = 0;
    run->feed.chunk_shape = 0;
    run->feed.chunk_due = 0;
    run->q.has_host = 0;
    run->q.arm = CB_ARM_STATIC;
}

/* cb_run_open's per-thread stream, not capturing: its owner's context and
 * device, its fences; -1 when a driver call failed. */
static int open_per_thread(struct cb_stream_facts *f, uintptr_t owner)
{
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
    f->owner = owner;
    if (cb_fence_open(f) != CUDA_SUCCESS)
        return -1;
    return 0;
}

/* cb_run_open's created stream s, not capturing: whether it is blocking, its
 * context and device, learned once (f->known); -1 when a driver query failed. */
static int open_created(struct cb_stream_facts *f, CUstream s)
{
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
    f->known = 1;
    return 0;
}

int cb_run_open(struct cb_run *run, CUstream stream)
{
    struct cb_stream_facts *f = &run->facts;
    CUstream s = cb_stream_handle(stream, cb_facts_kind(f));
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    f->stream = s;
    if (f->known && !cb_captures_active()) {
        /* A stream captures only after a call that begins a capture, which
         * capture.c counts: with none under way, nothing need be asked again. */
        f->capturing = 0;
        return 0;
    }
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
    if (f->legacy)
        return 0; /* learned above */
    return f->ptds ? open_per_thread(f, run->key.owner) : open_created(f, s);
}

void cb_run_opened(struct cb_run *run)
{
    uint64_t now = cb_now_ns();
    struct cb_looks *l = &run->looks;
    l->opened_ns = now;
    if (!l->look_ns) { /* the stream was quiet: the timer's looks begin */
        l->burst_ns = l->looked_ns = now;
        l->look_ns = now + cb_opt(CB_OPT_flush_us) * 1000u;
        l->issued_looked = run->feed.issued;
    }
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
    GROW(merged.dsts);
    GROW(merged.srcs);
    GROW(merged.sizes);
    GROW(merged.hooks);
    GROW(merged.streams);
    GROW(merged.first);
    if (run->q.rows)
        GROW(rows);
#undef GROW
    run->q.cap = cap;
    return 0;
}

/* Rule 18: the copy continues the last merged entry (copies.h says how). */
static int continues(const struct cb_merged *m, size_t nmarks, const struct cb_copy_req *rq)
{
    const struct cb_merge_tail *t = &m->tail;
    return m->n > 0 && t->dst_next == rq->dst && t->src_next == rq->src && t->dst_end == rq->dcls.end &&
           t->src_end == rq->scls.end && rq->dcls.end != 0 && rq->scls.end != 0 && t->hook == rq->hook &&
           t->stream == rq->stream && t->marks == nmarks;
}

/* The copy just queued (index i) joins the merged view: the last entry grows,
 * or it begins one.  Merging switched off, the view stays empty. */
static void merge_copy(struct cb_copies *q, size_t i, const struct cb_copy_req *rq)
{
    struct cb_merged *m = &q->merged;
    if (!cb_opt(CB_OPT_merge_adjacent) || q->n2d) {
        m->n = 0; /* a run holding 2D copies merges nothing: its queue goes out as it is */
        return;
    }
    CB_ASSERT(m->n <= i && (m->n > 0) == (i > 0)); /* a run merges from its first copy or not at all */
    if (continues(m, q->nmarks, rq)) {
        m->sizes[m->n - 1] += rq->bytes;
    } else {
        size_t k = m->n++;
        m->dsts[k] = rq->dst;
        m->srcs[k] = rq->src;
        m->sizes[k] = rq->bytes;
        m->hooks[k] = (unsigned char)rq->hook;
        m->streams[k] = rq->stream;
        m->first[k] = i;
        m->tail = (struct cb_merge_tail){.dst_end = rq->dcls.end, .src_end = rq->scls.end, .stream = rq->stream,
                                         .hook = rq->hook};
    }
    m->tail.dst_next = rq->dst + rq->bytes;
    m->tail.src_next = rq->src + rq->bytes;
    m->tail.marks = q->nmarks;
}

/* Room for the copies' rows once the first 2D copy joins (the copies before
 * it, zeroed, are 1D). */
static int rows_room(struct cb_copies *q)
{
    if (!q->rows && !(q->rows = calloc(q->cap, sizeof *q->rows)))
        return -1;
    return 0;
}

/* Where the copy's footprint is kept for the hazard checks: a 2D copy whole,
 * a 1D copy in the interval sets. */
static int note_footprint(struct cb_run *run, const struct cb_copy_req *rq)
{
    if (rq->rows.height) {
        struct cb_shape c = cb_req_shape(rq);
        return rows_room(&run->q) || cb_shapes_add(&run->shapes, &c);
    }
    return cb_iset_add(&run->writes, rq->dst, rq->dst + rq->bytes) ||
           cb_iset_add(&run->reads, rq->src, rq->src + rq->bytes);
}

int cb_run_append(struct cb_run *run, const struct cb_copy_req *rq)
{
    if (run->q.n == run->q.cap && run_grow(run))
        return -1;
    if (note_footprint(run, rq))
        return -1;
    size_t i = run->q.n++;
    run->q.dsts[i] = rq->dst;
    run->q.srcs[i] = rq->src;
    run->q.sizes[i] = rq->bytes;
    if (CB_UNLIKELY(run->q.rows)) { /* the run holds 2D copies (note_footprint made the room) */
        run->q.rows[i] = rq->rows;
        if (rq->rows.height) {
            run->q.n2d++;
            run->q.sizes[i] = rq->width; /* a 2D copy's: its row length */
        }
    }
    run->q.hooks[i] = (unsigned char)rq->hook;
    run->q.streams[i] = rq->stream;
    run->feed.issued++;
    run->feed.kind |= rq->scls.kind == CB_MEM_HOST && rq->dcls.kind != CB_MEM_HOST ? CB_CHUNK_H2D : 0u;
    run->q.has_host |= rq->scls.kind == CB_MEM_HOST || rq->dcls.kind == CB_MEM_HOST;
    run->q.kernel_ok = (i == 0 || run->q.kernel_ok) && rq->kernel_ok;
    merge_copy(&run->q, i, rq);
    return 0;
}

int cb_run_mark_room(struct cb_run *run)
{
    if (run->q.nmarks == run->q.capmarks) {
        size_t cap = run->q.capmarks ? 2 * run->q.capmarks : 8;
        struct cb_marker *p = realloc(run->q.marks, cap * sizeof *p);
        if (!p)
            return -1;
        run->q.marks = p;
        run->q.capmarks = cap;
    }
    return 0;
}

void cb_run_mark(struct cb_run *run, const struct cb_marker *m)
{
    run->q.marks[run->q.nmarks++] = *m;
    if (!run->marked) /* the only count a marker can change */
        cb_run_set_active(run);
}

CUresult cb_run_take_pending(struct cb_run *run)
{
    CUresult rc = run->pending;
    run->pending = CUDA_SUCCESS;
    return rc;
}

void cb_run_keep_pending(struct cb_run *run, CUresult err) { run->pending = err; }

int cb_run_still_slow(struct cb_run *run)
{
    struct cb_pace *p = &run->pace;
    uint64_t now = cb_now_ns(), gap = now - p->last_copy_ns;
    p->last_copy_ns = now;
    p->pace_ns = gap < 100000u ? (3 * p->pace_ns + gap) / 4 : 0;
    p->slow = p->pace_ns > cb_opt(CB_OPT_slow_ns);
    return p->slow;
}

void cb_run_found_slow(struct cb_run *run, uint64_t pace_ns, uint64_t now)
{
    run->pace.slow = 1;
    run->pace.pace_ns = pace_ns;
    run->pace.last_copy_ns = now;
}

#ifdef CB_DEBUG
/* The debug build's check (run.h), changing nothing. */
int cb_run_slow_peek(const struct cb_run *run)
{
    const struct cb_pace *p = &run->pace;
    if (!p->slow)
        return 0;
    uint64_t gap = cb_now_ns() - p->last_copy_ns;
    return (gap < 100000u ? (3 * p->pace_ns + gap) / 4 : 0) > cb_opt(CB_OPT_slow_ns);
}
#endif

void cb_run_chunk_sent(struct cb_run *run)
{
    run->feed.chunks++;
    run->feed.merged_at = run->feed.merged_next; /* a chunk of copies: the next merged one is a first */
    run->feed.merged_next = 0;
}

void cb_run_chunks_end(struct cb_run *run)
{
    run->feed.chunks = 0;
    run->feed.merged_at = run->feed.merged_next = 0;
}

void cb_run_orphan(struct cb_run *run) { run->facts.orphan = 1; }

void cb_run_looked(struct cb_run *run, uint64_t now, uint64_t *joined, uint64_t *span)
{
    struct cb_looks *l = &run->looks;
    *joined = run->feed.issued - l->issued_looked;
    *span = now - l->looked_ns;
    l->issued_looked = run->feed.issued;
    l->looked_ns = now;
}

void cb_run_look_at(struct cb_run *run, uint64_t at) { run->looks.look_ns = at; }
