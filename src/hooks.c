/* hooks.c - the wrappers, generated from hooks.def.  Each one counts its call,
 * does what its row's ACTION says must happen first (flush a stream, flush all),
 * forwards to the real function with the program's arguments unchanged, and
 * returns the real result unless a flush it triggered failed: then that earlier
 * error (a copy the program queued before this call) is what the program sees,
 * as it would have seen an asynchronous error.  The resolvers (cuGetProcAddress
 * and its variants) are resolve.c's.
 *
 * One wrapper macro per action of actions.def, CB_WRAP_<ACTION>: a row expands
 * to its action's, so an action without one here is a compile error. */
#include "internal.h"
#include "waits.h"
#include "init.h"
#include "capture.h"
#include "smwork.h"
#include "stats.h"
#include "flush.h"
#include "event.h"

#define CB_ENTER(name) \
    cb_init();         \
    cb_bump(&cb_stats_thread()->calls[CB_ID_##name], 1)
/* Which call a flush happens in: the report's runs-ended table (stats.c). */
#define CB_IN(name) int cb_prev_hook_ = cb_hook_enter(CB_ID_##name)
#define CB_OUT() cb_hook_leave(cb_prev_hook_)
#define CB_FORWARD(name, args) (CB_REAL(name) ? CB_REAL(name) args : cb_absent(CB_ID_##name))

/* The pointers of a copy entry, as the library handles them. */
#define CB_COPY_ARGS(name, ptsz, dir, dst, src, bytes, stream) \
    CB_COPY_ENTRY(CB_ID_##name, ptsz, dir), (CUdeviceptr)(uintptr_t)(dst), (CUdeviceptr)(uintptr_t)(src), bytes, stream
#define CB_WRAP_COPY(name, ptsz, aarg, params, args) \
    CB_EXPORT CUresult CUDAAPI name params           \
    {                                                \
        cb_init();                                   \
        CB_IN(name);                                 \
        CUresult r_ = cb_copy(CB_CALL(CB_COPY_ARGS, name, ptsz, CB_EXPAND aarg)); \
        CB_OUT();                                    \
        return r_;                                   \
    }

#define CB_COPY2D_ARGS(name, ptsz, copy, stream) CB_COPY_ENTRY(CB_ID_##name, ptsz, CB_D_ANY), copy, stream
#define CB_WRAP_COPY2D(name, ptsz, aarg, params, args)                           \
    CB_EXPORT CUresult CUDAAPI name params                                       \
    {                                                                            \
        cb_init();                                                               \
        CB_IN(name);                                                             \
        CUresult r_ = cb_copy2d(CB_CALL(CB_COPY2D_ARGS, name, ptsz, CB_EXPAND aarg)); \
        CB_OUT();                                                                \
        return r_;                                                               \
    }

/* Every non-copy wrapper: `before` (a flush, whose error is kept) runs first, the
 * real function next, `after` (forgetting state the call invalidated, knowing its
 * result rc) last.  `st` carries what `before` learned to `after`. */
#define CB_WRAPPER(name, params, args, before, after) \
    CB_EXPORT CUresult CUDAAPI name params            \
    {                                                 \
        CB_ENTER(name);                               \
        CB_IN(name);                                  \
        struct cb_ctx_fate st = {NULL, 0, -1};        \
        struct cb_answer an = {NULL, NULL, 0, 0};     \
        (void)st, (void)an;                           \
        CUresult fe = before;                         \
        CUresult rc = CB_FORWARD(name, args);         \
        after;                                        \
        CB_OUT();                                     \
        return cb_first_error(fe, rc);                \
    }

/* A call names stream s: its pending waits (rule 16), then its run. */
static inline CUresult cb_named(CUstream s, int ptsz)
{
    CUresult fe = cb_waits_issue(s);
    return cb_first_error(fe, cb_flush_stream(s, ptsz, CB_WHY_flush_stream));
}
/* Between runs: no wait pending, nothing held, no note open on this thread.
 * A launch naming its stream then has nothing to do, and is answered by these
 * three loads rather than calls whose code the driver's launch evicts between
 * two launches (design notes, section 8). */
#define CB_BETWEEN_RUNS() (!cb_waits_pending() && cb_flush_stream_idle()) /* a macro: CB_LIKELY weighs each load */
/* A launch names its stream as any call does, unless between runs. */
static CB_ALWAYS_INLINE CUresult cb_named_launch(CUstream s, int ptsz)
{
    if (CB_LIKELY(CB_BETWEEN_RUNS()))
        return CUDA_SUCCESS;
    return cb_named(s, ptsz);
}
/* A call on a whole context: every pending wait, then every run. */
static inline CUresult cb_named_all(void)
{
    CUresult fe = cb_waits_issue_all();
    return cb_first_error(fe, cb_flush_all(CB_WHY_flush_context));
}

/* Two streams named by one call: flush both, report the first error. */
static CUresult cb_flush_two(CUstream a, CUstream b, int ptsz)
{
    CUresult fe = cb_named(a, ptsz);
    return cb_first_error(fe, cb_named(b, ptsz));
}

static inline CUresult cb_flush_wait_args(int ptsz, struct cb_answer *an, CUstream s, CUevent *e, unsigned int flags)
{
    return cb_flush_wait(s, ptsz, e, flags, an);
}
/* A context-wide record or wait of an event: every run first, then the event
 * gets a record of its own if it stands on a stand-in (rule 15). */
static inline CUresult cb_ctx_event_before(CUevent e)
{
    CUresult fe = cb_named_all();
    return cb_first_error(fe, cb_event_observe(e, NULL));
}

#define CB_FLUSH_ARG(aarg, ptsz) cb_named(CB_EXPAND aarg, ptsz)
#define CB_WRAP_STREAM(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, CB_FLUSH_ARG(aarg, ptsz), (void)0)
#define CB_WRAP_STREAM2(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, cb_flush_two(CB_EXPAND aarg, ptsz), (void)0)
/* A launch: (stream, function, blocks, threads per block, shared memory). */
#define CB_LAUNCH_STREAM(s, f, blocks, threads, smem) s
#define CB_LAUNCH_NOTE(ptsz, s, f, blocks, threads, smem) cb_smwork_launch(s, ptsz, f, blocks, threads, smem)
#define CB_CALL(macro, ...) macro(__VA_ARGS__)
#define CB_WRAP_LAUNCH(name, ptsz, aarg, params, args)                                          \
    CB_WRAPPER(name, params, args, cb_named_launch(CB_LAUNCH_STREAM aarg, ptsz), \
               if (rc == CUDA_SUCCESS) CB_CALL(CB_LAUNCH_NOTE, ptsz, CB_EXPAND aarg))
#define CB_WRAP_CTX_SYNC(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, cb_named_all(), if (rc == CUDA_SUCCESS) cb_smwork_ctx_synced aarg)
/* A capture begins under capture.c's lock, after the flushes that precede it:
 * no question cubatch asks about streams can fall between (rule 13). */
static CUresult cb_capture_begin_before(int ptsz, CUstream s, CUstreamCaptureMode mode)
{
    (void)mode;
    CUresult fe = cb_waits_issue(s); /* rule 16: a wait made before the capture stays out of it */
    fe = cb_first_error(fe, cb_flush_capture_begin(s, ptsz));
    cb_capture_lock();
    return fe;
}
#define CB_WRAP_CAPTURE_BEGIN(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, cb_capture_begin_before(ptsz, CB_EXPAND aarg), \
               cb_capture_began(CB_EXPAND aarg, ptsz, rc))
#define CB_WRAP_CAPTURE_END(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, CB_FLUSH_ARG(aarg, ptsz), cb_capture_ended(CB_EXPAND aarg, ptsz))
#define CB_WRAP_STREAM_FREE(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, CB_FLUSH_ARG(aarg, ptsz), cb_forget_classes())
/* A stream about to be destroyed: never asked about again, its run flushed. */
static CUresult cb_destroy_stream_before(CUstream s, int ptsz)
{
    cb_smwork_forget_stream(s);
    return cb_named(s, ptsz);
}
/* ... and gone: its run and any capture recorded on it are forgotten. */
static void cb_destroy_stream_after(CUstream s, CUresult rc)
{
    cb_forget_stream(s);
    if (rc == CUDA_SUCCESS)
        cb_capture_forget_stream(s);
}
#define CB_WRAP_DESTROY_STREAM(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, cb_destroy_stream_before(CB_EXPAND aarg, ptsz), cb_destroy_stream_after(CB_EXPAND aarg, rc))
#define CB_WRAP_CONTEXT(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, cb_named_all(), (void)0)
/* Memory given back: the runs that may use it go first, and its range is
 * forgotten before the driver frees it (rule 14); cached classifications are
 * dropped again afterwards, in case a thread cached it meanwhile. */
static CUresult cb_free_before(uintptr_t p, size_t size)
{
    CUresult fe = cb_flush_all(CB_WHY_flush_context);
    cb_classes_forget_range(p, size);
    return fe;
}
#define CB_WRAP_FREE(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, cb_free_before(CB_EXPAND aarg), cb_forget_classes())
/* Memory made: learned from the call (rule 14).  A registration turns pageable
 * memory into pinned memory: flushed as a free is. */
#define CB_ALLOC_FLUSHES(flush, made) (flush)
#define CB_ALLOC_MADE(flush, made) (made)
static CUresult cb_alloc_before(int flush) { return flush ? cb_free_before(0, 0) : CUDA_SUCCESS; }
#define CB_WRAP_ALLOC(name, ptsz, aarg, params, args)                                     \
    CB_WRAPPER(name, params, args, cb_alloc_before(CB_CALL(CB_ALLOC_FLUSHES, CB_EXPAND aarg)), \
               if (rc == CUDA_SUCCESS) cb_classes_announce((uintptr_t)CB_CALL(CB_ALLOC_MADE, CB_EXPAND aarg)))
#define CB_WRAP_DESTROY_CTX(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, cb_ctx_destroy_before(CB_EXPAND aarg, &st), cb_ctx_fate_after(&st, rc))
#define CB_WRAP_PRIMARY_CTX(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, cb_primary_before(CB_EXPAND aarg, &st), cb_ctx_fate_after(&st, rc))
/* An event record: queued in its stream's run as a marker (not forwarded now:
 * engine.c records it after the run's copies), or forwarded after the flushes
 * marker.c made. */
#define CB_WRAP_MARKER(name, ptsz, aarg, params, args)                                \
    CB_EXPORT CUresult CUDAAPI name params                                             \
    {                                                                                  \
        CB_ENTER(name);                                                                \
        CB_IN(name);                                                                   \
        int queued = 0;                                                                \
        CUresult fe = cb_marker_record(CB_ID_##name, ptsz, CB_EXPAND aarg, &queued);   \
        CUresult rc = queued ? CUDA_SUCCESS : CB_FORWARD(name, args);                  \
        CB_OUT();                                                                      \
        return cb_first_error(fe, rc);                                                 \
    }
#define CB_WRAP_EVENT(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, cb_event_observe(CB_EXPAND aarg), (void)0)
/* A query or synchronize: forwarded with the stand-in's event when the event
 * stands on one (rule 15; aarg: the address of the event parameter). */
#define CB_WRAP_EVENT_ASK(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, cb_event_ask(CB_EXPAND aarg, &an), cb_event_answered(&an, rc))
#define CB_WRAP_EVENT_FORGET(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, cb_event_before_forget(CB_EXPAND aarg), cb_event_forget(CB_EXPAND aarg, rc))
#define CB_WRAP_CTX_EVENT(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, cb_ctx_event_before(CB_EXPAND aarg), (void)0)
#define CB_WRAP_EVENT_CREATE(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, CUDA_SUCCESS, cb_event_created(CB_EXPAND aarg, rc))
#define CB_WRAP_EVENT_FOREIGN(name, ptsz, aarg, params, args) \
    CB_WRAPPER(name, params, args, CUDA_SUCCESS, cb_event_foreign(CB_EXPAND aarg, rc))
/* A wait: kept pending or found met (rule 16: not forwarded), or forwarded
 * as EVENT_ASK forwards. */
#define CB_WRAP_WAIT(name, ptsz, aarg, params, args)                                  \
    CB_EXPORT CUresult CUDAAPI name params                                             \
    {                                                                                  \
        CB_ENTER(name);                                                                \
        CB_IN(name);                                                                   \
        struct cb_answer an = {NULL, NULL, 0, 0};                                      \
        CUresult fe = cb_flush_wait_args(ptsz, &an, CB_EXPAND aarg);                   \
        CUresult rc = an.not_forwarded ? CUDA_SUCCESS : CB_FORWARD(name, args);        \
        cb_event_answered(&an, rc);                                                    \
        CB_OUT();                                                                      \
        return cb_first_error(fe, rc);                                                 \
    }
/* A graph's size is not known: it counts as filling the GPU (smwork.c). */
#define CB_GRAPH_NOTE(ptsz, s) cb_smwork_launch(s, ptsz, NULL, 0, 0, 0)
#define CB_WRAP_GRAPH_LAUNCH(name, ptsz, aarg, params, args)                          \
    CB_WRAPPER(name, params, args, cb_flush_graph_launch(CB_EXPAND aarg, ptsz), \
               if (rc == CUDA_SUCCESS) CB_CALL(CB_GRAPH_NOTE, ptsz, CB_EXPAND aarg))
static inline void cb_note_launch_config(const CUlaunchConfig *c, CUfunction f, int ptsz)
{
    if (c)
        cb_smwork_launch(c->hStream, ptsz, f, (uint64_t)c->gridDimX * c->gridDimY * c->gridDimZ,
                         (uint64_t)c->blockDimX * c->blockDimY * c->blockDimZ, c->sharedMemBytes);
}
/* cuLaunchKernelEx names its configured stream, and may record events its
 * attributes name (marker.c): between runs, with no event linked to a
 * stand-in, nothing to do. */
static CB_ALWAYS_INLINE CUresult cb_launch_config_before(const CUlaunchConfig *cfg, int ptsz)
{
    if (CB_LIKELY(CB_BETWEEN_RUNS() && !atomic_load_explicit(&cb_events_linked, memory_order_relaxed)))
        return CUDA_SUCCESS;
    return cb_flush_launch_config(cfg, ptsz);
}
/* cuLaunchKernelEx: the rows name the function f. */
#define CB_WRAP_LAUNCH_CONFIG(name, ptsz, aarg, params, args)                           \
    CB_WRAPPER(name, params, args, cb_launch_config_before(CB_EXPAND aarg, ptsz), \
               if (rc == CUDA_SUCCESS) cb_note_launch_config(CB_EXPAND aarg, f, ptsz))
#define CB_WRAP_RESOLVER(name, ptsz, aarg, params, args) /* resolve.c */

#define CB_HOOK(name, ptsz, action, aarg, params, args) CB_WRAP_##action(name, ptsz, aarg, params, args)
#include "hooks.def"
#undef CB_HOOK

void *const cb_wrappers[CB_HOOK_COUNT] = {
#define CB_HOOK(name, ptsz, action, aarg, params, args) (void *)name,
#include "hooks.def"
#undef CB_HOOK
};
