/* engine.c - how a run goes out.
 *
 * A run of CUBATCH_MIN_RUN copies or more is executed by the copy kernel when
 * every copy of it may be (engine_kernel.c), else by the batch API in calls of
 * at most CUBATCH_MAX_BATCH copies (docs/design.md section 2: one batch of 51,828 descriptors
 * crashed this driver; the batch API cannot run on the legacy stream); a shorter
 * run, or a legacy-stream run the kernel cannot take, goes out copy by copy
 * through each copy's own entry point (rule 8: a batch of one is slower than
 * the copy).
 * What an engine refuses is replayed copy by copy, so that the failing copy gets
 * the driver's own error and nothing is dropped (rule 9).
 *
 * A run holding 2D copies (rule 19) goes to the copy kernel or the loop: the
 * batch API takes 1D copies only.
 *
 * The batch API and the loop take the run's merged view (rule 18: copies that
 * continue the one before them go out as one longer copy), the copy kernel the
 * copies as they were queued: a kernel entry costs the host nothing, and each
 * is one block's work, so merging would only take blocks away.  A run that
 * merges into fewer copies than a batch takes goes out as those copies, on the
 * copy engines, unless CUBATCH_ENGINE=kernel.  A refused merged copy is
 * replayed as the copies it was made of.
 *
 * Engines plug in through one table (struct cb_engine below): whether it takes
 * a run, how many copies one call of it may carry, and the call itself.  The
 * first engine of the table that takes a run executes it.
 *
 * Another thread's per-thread default stream cannot be named: its run goes to
 * the side stream, fenced (ptds.c).
 *
 * The run's markers (event records the program made while it was open) go out
 * after all of its copies, on the same stream, in record order (rule 11). */
#include "engine.h"
#include "copy_kernel.h"
#include "nvtx.h"
#include "smwork.h"
#include "stream.h"
#include "capture.h"
#include "choose.h"
#include "stats.h"

int cb_kernel_usable;
/* The batch API's chunks (bench/RESULTS.md, run X). */
#define CB_BATCH_CHUNK_H2D 32
#define CB_BATCH_CHUNK 64
static const char *cb_kernel_reason = "";

struct cb_engine {
    const char *name;
    /* 1 when the engine takes these copies for this stream */
    int (*takes)(const struct cb_copies *c, const struct cb_stream_facts *f);
    size_t (*max_per_call)(const struct cb_copies *c);
    /* copies [off, off + n) on stream; the driver's result (not replayed).  For
     * an engine with per_copy_streams, stream NULL means each copy's own stream
     * argument, as the program passed it. */
    CUresult (*submit)(const struct cb_copies *c, size_t off, size_t n, CUstream stream,
                       const struct cb_stream_facts *f);
    int per_copy_streams;
    int merges; /* it takes the run's merged view (rule 18) */
};

/* Rule 12: host memory copies go to the copy engines while another stream may
 * be running SM work they would not have waited for (smwork.c). */
static int to_copy_engines(const struct cb_copies *c, const struct cb_stream_facts *f)
{
    return c->has_host && f->sm_busy;
}

/* Rule 18: the run merges into fewer copies than a batch takes: they go out as
 * such, on the copy engines, unless the kernel was asked for whenever it can. */
static int merges_to_singles(const struct cb_copies *c)
{
    return c->merged.n != 0 && c->merged.n < cb_opt(CB_OPT_min_run) && cb_opt(CB_OPT_engine) == CB_ENGINE_AUTO;
}

/* The copy kernel would take these copies, the load of the GPU aside. */
static int kernel_fits(const struct cb_copies *c)
{
    return cb_kernel_usable && c->kernel_ok && c->arm == CB_ARM_STATIC && c->n >= cb_opt(CB_OPT_min_run) &&
           !merges_to_singles(c);
}

static int kernel_takes(const struct cb_copies *c, const struct cb_stream_facts *f)
{
    return kernel_fits(c) && !to_copy_engines(c, f) && cb_kernel_engine_ready(f->ctx);
}

/* The legacy stream only through the fenced side stream, and only when the
 * copy kernel must not take its run. */
static int batch_takes(const struct cb_copies *c, const struct cb_stream_facts *f)
{
    return (!f->legacy || to_copy_engines(c, f)) && c->n >= cb_opt(CB_OPT_min_run) && c->n2d == 0;
}
/* A held segment goes out as back-to-back calls of one chunk each: the driver's
 * batch call costs least per copy right after another (docs/design.md, section 5). */
static size_t batch_max(const struct cb_copies *c)
{
    size_t max = cb_opt(CB_OPT_max_batch);
    return c->arm == CB_ARM_HELD && CB_BATCH_CHUNK_H2D < max ? CB_BATCH_CHUNK_H2D : max;
}
static CUresult batch_submit(const struct cb_copies *c, size_t off, size_t n, CUstream stream,
                             const struct cb_stream_facts *f)
{
    if (!f->legacy)
        return cb_batch_engine_submit(c, off, n, stream);
    CUstream side;
    CUresult rc = cb_side_legacy_begin(f, &side);
    if (!side)
        return rc; /* nothing submitted: replayed on the legacy stream itself */
    CB_COUNT(legacy_side_runs);
    CUresult sub = cb_batch_engine_submit(c, off, n, side);
    CUresult end = cb_side_legacy_end(f, side);
    if (sub == CUDA_SUCCESS && end != CUDA_SUCCESS) {
        /* the legacy stream could not be made to wait: its later work must
         * not overtake the copies, so wait here (rare: out of events), unless
         * a capture forbids the wait (rule 13): then the program hears it */
        cb_log(CB_LOG_WARN, "cannot order the legacy stream after a side batch (%d); waiting for it", (int)end);
        cb_capture_lock();
        CUresult waited = cb_capture_may_wait(side) && cb_drv.cuStreamSynchronize ? cb_drv.cuStreamSynchronize(side) : end;
        cb_capture_unlock();
        return waited;
    }
    return sub;
}

/* The loop engine takes every run: the last row. */
static int loop_takes(const struct cb_copies *c, const struct cb_stream_facts *f) { return (void)c, (void)f, 1; }
static size_t loop_max(const struct cb_copies *c) { return (void)c, SIZE_MAX; }
/* A 2D copy takes two of a launch's descriptors (copy_kernel.h). */
static size_t kernel_max(const struct cb_copies *c) { return cb_kernel_engine_max() / (c->n2d ? 2 : 1); }
static CUresult loop_submit(const struct cb_copies *c, size_t off, size_t n, CUstream stream,
                            const struct cb_stream_facts *f)
{
    (void)f;
    CB_COUNT_N(singles, n);
    return cb_loop_engine_submit(c, off, n, stream);
}

/* In order of preference: the first that takes a run executes it. */
static const struct cb_engine cb_engines[] = {
    {"kernel", kernel_takes, kernel_max, cb_kernel_engine_submit, 0, 0},
    {"batch", batch_takes, batch_max, batch_submit, 0, 1},
    {"loop", loop_takes, loop_max, loop_submit, 1, 1},
};

void cb_engines_init(void)
{
    const char *why = NULL;
    cb_kernel_usable = 0;
    if (!cb_batch_engine_init(&why)) {
        cb_batching_set(0, why);
        return;
    }
    if (!cb_opt(CB_OPT_enable)) {
        cb_batching_set(0, "switched off (CUBATCH_ENABLE=0)");
        return;
    }
    cb_batching_set(1, "ok");
    if (cb_opt(CB_OPT_engine) == CB_ENGINE_BATCH)
        cb_kernel_reason = "CUBATCH_ENGINE=batch";
    else
        cb_kernel_usable = cb_kernel_engine_init(&cb_kernel_reason);
    int automatic = cb_kernel_usable && cb_opt(CB_OPT_engine) == CB_ENGINE_AUTO;
    cb_smwork_init(automatic);
    cb_choose_init();
    if (!cb_kernel_usable)
        cb_log(CB_LOG_NOTICE, "engine: the batch API (copy kernel off: %s)", cb_kernel_reason);
    else if (!automatic)
        cb_log(CB_LOG_NOTICE, "engine: the copy kernel whenever it can (CUBATCH_ENGINE=kernel), even beside "
                              "kernels that fill the GPU");
    else
        cb_log(CB_LOG_NOTICE, "engine: the copy kernel for device and pinned memory up to %uK, except that host "
                              "memory copies go to the copy engines (batch API) while another stream of this "
                              "process may be running a kernel that fills the GPU; other processes' work is not "
                              "seen (CUBATCH_ENGINE=batch keeps every copy off the SMs)",
               (unsigned)(CB_KERNEL_AUTO_MAX / 1024));
}

/* Pipelining: a run is submitted in chunks as it grows, so the GPU copies one
 * chunk while the program issues the next; a hand-written batch makes the GPU
 * wait for the whole of it.  The batch API's cost per copy also grows with the
 * batch for host-to-device copies (bench/RESULTS.md, run X: the chunk
 * schedules).  Fixed chunks measured best and steadiest: 32 copies when the run
 * holds host-to-device copies, 64 otherwise. */
size_t cb_engine_chunk(int kernel_ok, unsigned kind, unsigned chunks)
{
    size_t max = cb_opt(CB_OPT_max_batch);
    if (kind & CB_CHUNK_HELD)
        return max;
    if (kernel_ok && cb_kernel_usable) {
        /* The copy kernel: a first launch at 32 copies, then 4 times as many at
         * each (bench/RESULTS.md, run X: the best of the schedules tried, with
         * the program spending 100 ns or 1 us per copy it issues), at most what
         * one launch carries. */
        size_t c = 32;
        for (unsigned i = 0; i < chunks && c < CB_KPARAMS_MAX; i++)
            c *= 4;
        if (!cb_opt(CB_OPT_pipeline) || c > CB_KPARAMS_MAX)
            c = CB_KPARAMS_MAX;
        return c < max ? c : max;
    }
    if (!cb_opt(CB_OPT_pipeline))
        return max;
    size_t c = kind & CB_CHUNK_H2D ? CB_BATCH_CHUNK_H2D : CB_BATCH_CHUNK;
    return c < max ? c : max;
}

size_t cb_engine_merged_next(size_t bytes, uint64_t ns, int host)
{
    if (host && bytes / CB_MERGED_ENGINE_BYTES_PER_NS < ns)
        return CB_MERGED_CHUNK_STEADY;
    int leaps = !host || bytes / (CB_MERGED_LEAP * CB_MERGED_ENGINE_BYTES_PER_NS) >= ns;
    size_t next = leaps ? bytes * CB_MERGED_LEAP : bytes + bytes / 2;
    return next < CB_MERGED_CHUNK_MAX ? next : CB_MERGED_CHUNK_MAX;
}

/* Copies [off, off + n) again one by one after an engine refused them, on the
 * side stream or (NULL) each on its own stream argument. */
static CUresult replay(const struct cb_engine *e, const struct cb_copies *c, size_t off, size_t n, CUstream stream,
                       CUresult why)
{
    cb_log(CB_LOG_NOTICE, "%s engine refused %zu copies (%d); replaying them one by one", e->name, n, (int)why);
    CB_COUNT(batch_errors);
    CUresult first = CUDA_SUCCESS;
    for (size_t i = off; i < off + n; i++) {
        CUresult rc = cb_loop_engine_submit(c, i, 1, stream);
        CB_COUNT(replayed);
        if (rc != CUDA_SUCCESS)
            CB_COUNT(replay_errors);
        first = cb_first_error(first, rc);
    }
    return first;
}

/* Before a run of host memory copies takes the copy kernel (CUBATCH_ENGINE=auto),
 * ask whether other streams may be running SM work (run's context current). */
static void check_load(const struct cb_copies *c, struct cb_stream_facts *f)
{
    if (!c->has_host || cb_opt(CB_OPT_engine) != CB_ENGINE_AUTO || !kernel_fits(c))
        return;
    CB_COUNT(load_checks);
    if (cb_smwork_note_busy(f))
        CB_COUNT(load_copy_engines);
}

#ifdef CB_DEBUG
/* The merged view holds the queue's copies, in order, each entry a seamless
 * stretch of copies of one entry point and stream. */
static void check_merged(const struct cb_copies *c)
{
    const struct cb_merged *m = &c->merged;
    CB_ASSERT(m->n <= c->n && (m->n == 0 || m->first[0] == 0));
    for (size_t k = 0; k < m->n; k++) {
        size_t to = k + 1 < m->n ? m->first[k + 1] : c->n, at = 0;
        CB_ASSERT(m->first[k] < to);
        for (size_t i = m->first[k]; i < to; at += c->sizes[i++])
            CB_ASSERT(c->dsts[i] == m->dsts[k] + at && c->srcs[i] == m->srcs[k] + at && c->hooks[i] == m->hooks[k] &&
                      c->streams[i] == m->streams[k]);
        CB_ASSERT(at == m->sizes[k]);
    }
}
#endif

/* What an engine that merges takes (rule 18): the merged view of c, in *view,
 * when some copy merged; else c itself. */
static const struct cb_copies *merged_view(const struct cb_copies *c, struct cb_copies *view)
{
    const struct cb_merged *m = &c->merged;
    CB_IF_DEBUG(check_merged(c));
    if (m->n == 0 || m->n == c->n)
        return c;
    *view = *c;
    view->dsts = m->dsts;
    view->srcs = m->srcs;
    view->sizes = m->sizes;
    view->hooks = m->hooks;
    view->streams = m->streams;
    view->n = m->n;
    return view;
}

/* The queued copies [*from, *to) of c that entries [off, off + n) of the
 * view `mine` stand for. */
static void covered(const struct cb_copies *c, const struct cb_copies *mine, size_t off, size_t n, size_t *from,
                    size_t *to)
{
    if (mine == c) {
        *from = off;
        *to = off + n;
        return;
    }
    *from = c->merged.first[off];
    *to = off + n < mine->n ? c->merged.first[off + n] : c->n;
}

/* The copies of c through engine e, as `mine` (c or its merged view) holds them. */
static CUresult submit_through(const struct cb_copies *c, const struct cb_copies *mine, const struct cb_engine *e,
                               struct cb_stream_facts *f, CUstream side)
{
    CUstream own = cb_facts_handle(f);
    CUstream stream = side ? side : e->per_copy_streams ? NULL : own;
    CUresult first = CUDA_SUCCESS;
    /* the loop takes merged copies one at a time: a refused one is replayed alone */
    size_t max = mine != c && e->per_copy_streams ? 1 : e->max_per_call(mine);
    for (size_t off = 0; off < mine->n; off += max) {
        size_t cnt = mine->n - off < max ? mine->n - off : max, from, to;
        CUresult rc = e->submit(mine, off, cnt, stream, f);
        covered(c, mine, off, cnt, &from, &to);
        /* The loop engine's errors are the copies' own, a merged copy's
         * aside; any other refusal is replayed, as the copies were queued.
         * Copies of one run never overlap, so running a copy again that the
         * driver may already have done writes the same bytes. */
        if (rc != CUDA_SUCCESS && (!e->per_copy_streams || to - from > cnt))
            rc = replay(e, c, from, to - from, side, rc);
        first = cb_first_error(first, rc);
    }
    return first;
}

/* Copies [a, b) of c, a run holding 2D copies, as a queue of their own
 * (markers aside: the run's go out after all its copies): 1D copies, or one
 * 2D copy. */
static struct cb_copies stretch(const struct cb_copies *c, size_t a, size_t b)
{
    struct cb_copies part = *c;
    part.dsts += a;
    part.srcs += a;
    part.sizes += a;
    part.hooks += a;
    part.streams += a;
    part.n = b - a;
    part.rows = c->rows + a;
    part.n2d = c->rows[a].height != 0;
    CB_ASSERT(part.n2d == 0 || part.n == 1);
    part.merged.n = 0; /* a run holding 2D copies merges nothing */
    part.nmarks = 0;
    return part;
}

/* A run holding 2D copies that the copy kernel does not take (rule 19): the
 * loop alone takes its 2D copies, so each stretch of 1D copies between them
 * goes out as a run of its own, through the engine that takes that, and each
 * 2D copy through the loop, in the order they were queued. */
static CUresult submit_stretches(const struct cb_copies *c, struct cb_stream_facts *f, CUstream side)
{
    CB_ASSERT(c->rows && c->n2d > 0); /* the rows of a run holding 2D copies are kept (run.c) */
    CUresult first = CUDA_SUCCESS;
    for (size_t a = 0, b; a < c->n; a = b) {
        b = a + 1;
        if (!c->rows[a].height)
            while (b < c->n && !c->rows[b].height)
                b++;
        struct cb_copies part = stretch(c, a, b);
        const struct cb_engine *e = cb_engines;
        while (!e->takes(&part, f))
            e++;
        first = cb_first_error(first, submit_through(&part, &part, e, f, side));
    }
    return first;
}

/* Every copy of c: on the side stream, or (side NULL) on the run's own stream. */
static CUresult submit_on(const struct cb_copies *c, struct cb_stream_facts *f, CUstream side)
{
    check_load(c, f);
    struct cb_copies merged;
    const struct cb_copies *view = merged_view(c, &merged);
    const struct cb_engine *e = cb_engines;
    while (!e->takes(e->merges ? view : c, f))
        e++;
    const struct cb_copies *mine = e->merges ? view : c;
    if (mine != c)
        CB_COUNT_N(copies_merged, c->n - mine->n);
    int apart = e->takes == loop_takes && c->n2d && c->n2d < c->n;
    cb_nvtx_submit_begin(mine, c->n, apart ? "batch+loop" : e->name); /* a profiler's range (nvtx.c) */
    CUresult first = apart ? submit_stretches(c, f, side) : submit_through(c, mine, e, f, side);
    cb_nvtx_submit_end();
    return first;
}

/* Rule 15: a run with two or more markers of timing-free events records one
 * pooled cubatch event in place of theirs (ctx current); NULL: each its own. */
static struct cb_standin *standin_for(const struct cb_copies *c, CUcontext ctx)
{
    size_t stands = 0;
    for (size_t i = 0; i < c->nmarks && stands < 2; i++)
        stands += c->marks[i].stands;
    if (stands < 2 || !cb_opt(CB_OPT_merge_records))
        return NULL;
    struct cb_standin *si = malloc(sizeof *si);
    if (!si)
        return NULL;
    *si = (struct cb_standin){cb_ctx_event_get(ctx), ctx, 0};
    if (!si->ev) {
        free(si);
        return NULL;
    }
    return si;
}

/* The run's markers after its copies (rule 11), on `side` (NULL: the run's own
 * stream); *made: the stand-in recorded for them, if any. */
static CUresult submit_markers(const struct cb_copies *c, CUcontext ctx, CUstream side, struct cb_standin **made)
{
    struct cb_standin *si = standin_for(c, ctx);
    CUevent ev = si ? si->ev : NULL;
    CUresult rc = cb_loop_engine_markers(c, side, &ev);
    if (si && !ev) {
        cb_ctx_event_put(ctx, si->ev);
        free(si);
        si = NULL;
    }
    if (si)
        CB_COUNT(merged_records);
    *made = si;
    return rc;
}

/* Another thread's per-thread-stream run, through the side stream. */
static CUresult submit_side(const struct cb_copies *c, struct cb_stream_facts *f, struct cb_standin **made)
{
    CUstream side;
    struct cb_ctx_guard g;
    CUresult begun = cb_side_begin(f, &side, &g);
    if (!side)
        return begun;
    CUresult sub = submit_on(c, f, side);
    CUresult mk = submit_markers(c, f->ctx, side, made); /* rule 11: after every copy, before the join */
    sub = cb_first_error(sub, mk);
    return cb_first_error(sub, cb_side_end(f, side, begun, &g));
}

CUresult cb_engine_submit(const struct cb_copies *c, struct cb_stream_facts *f, int owner, struct cb_standin **made)
{
    *made = NULL;
    if (f->ptds && !owner)
        return submit_side(c, f, made);
    struct cb_ctx_guard g;
    CUresult entered = cb_ctx_enter(f->ctx, &g);
    if (entered != CUDA_SUCCESS) {
        /* cannot make its context current: still never drop the copies, whose
         * own errors are what the program is told */
        cb_log(CB_LOG_WARN, "cannot make the run's context current (%d); submitting anyway", (int)entered);
    }
    CUresult rc = submit_on(c, f, NULL);
    CUevent none = NULL; /* no stand-in from a context that could not be made current */
    CUresult mk = entered == CUDA_SUCCESS ? submit_markers(c, f->ctx, NULL, made) /* rule 11: after every copy */
                                          : cb_loop_engine_markers(c, NULL, &none);
    rc = cb_first_error(rc, mk);
    cb_fence_release(f);
    cb_ctx_leave(&g);
    return rc;
}
