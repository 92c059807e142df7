/* engine_loop.c - copies issued one by one, each through the very entry point
 * the program called, with its own arguments: the copies of a run too short to
 * batch (rule 8), the replay of a refused batch (rule 9), and every copy that
 * passes through.  The forwarders are generated from the COPY rows of
 * hooks.def: the direction of a row says the pointer types its entry takes. */
#include "engine_loop.h"

/* The program's pointers, as each direction's entry point takes them. */
#define CB_ARGS_CB_D_ANY(d, s) (d), (s)
#define CB_ARGS_CB_D_H2D(d, s) (d), (const void *)(uintptr_t)(s)
#define CB_ARGS_CB_D_D2H(d, s) (void *)(uintptr_t)(d), (s)
#define CB_ARGS_CB_D_D2D(d, s) (d), (s)
#define CB_ARGS(dir, d, s) CB_ARGS_(dir, d, s) /* dir expanded first */
#define CB_ARGS_(dir, d, s) CB_ARGS_##dir(d, s)
#define CB_DIR_OF(dir, ...) dir

CUresult cb_issue_copy(int hook, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    switch (hook) {
#define CB_ISSUE_COPY(name, aarg)                                                       \
    case CB_ID_##name:                                                                  \
        return CB_REAL(name) ? CB_REAL(name)(CB_ARGS(CB_DIR_OF aarg, dst, src), bytes, stream) \
                             : cb_absent(CB_ID_##name);
#define CB_ISSUE_OTHER(name, aarg)
#define CB_ISSUE_MARKER CB_ISSUE_OTHER
#define CB_ISSUE_EVENT CB_ISSUE_OTHER
#define CB_ISSUE_EVENT_FORGET CB_ISSUE_OTHER
#define CB_ISSUE_EVENT_CREATE CB_ISSUE_OTHER
#define CB_ISSUE_EVENT_FOREIGN CB_ISSUE_OTHER
#define CB_ISSUE_WAIT CB_ISSUE_OTHER
#define CB_ISSUE_GRAPH_LAUNCH CB_ISSUE_OTHER
#define CB_ISSUE_LAUNCH_CONFIG CB_ISSUE_OTHER
#define CB_HOOK(name, ptsz, action, aarg, params, args) CB_ISSUE_##action(name, aarg)
#define CB_ISSUE_STREAM CB_ISSUE_OTHER
#define CB_ISSUE_STREAM2 CB_ISSUE_OTHER
#define CB_ISSUE_LAUNCH CB_ISSUE_OTHER
#define CB_ISSUE_CTX_SYNC CB_ISSUE_OTHER
#define CB_ISSUE_CAPTURE_BEGIN CB_ISSUE_OTHER
#define CB_ISSUE_CAPTURE_END CB_ISSUE_OTHER
#define CB_ISSUE_STREAM_FREE CB_ISSUE_OTHER
#define CB_ISSUE_DESTROY_STREAM CB_ISSUE_OTHER
#define CB_ISSUE_CONTEXT CB_ISSUE_OTHER
#define CB_ISSUE_FREE CB_ISSUE_OTHER
#define CB_ISSUE_DESTROY_CTX CB_ISSUE_OTHER
#define CB_ISSUE_PRIMARY_CTX CB_ISSUE_OTHER
#define CB_ISSUE_RESOLVER CB_ISSUE_OTHER
#include "hooks.def"
#undef CB_HOOK
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

CUresult cb_loop_engine_submit(const struct cb_copies *c, size_t off, size_t n, CUstream stream)
{
    CUresult first = CUDA_SUCCESS;
    for (size_t i = off; i < off + n; i++) {
        CUresult rc = cb_issue_copy(c->hooks[i], c->dsts[i], c->srcs[i], c->sizes[i], stream ? stream : c->streams[i]);
        if (rc != CUDA_SUCCESS && first == CUDA_SUCCESS)
            first = rc;
    }
    return first;
}

/* A marker keeps its row's id in an unsigned char, as a queued copy does. */
#define CB_ID_FITS_MARKER(name) _Static_assert(CB_ID_##name < 256, #name ": its hook id must fit a marker's byte");
#define CB_ID_FITS_COPY(name) _Static_assert(CB_ID_##name < 256, #name ": its hook id must fit a copy's byte");
#define CB_HOOK(name, ptsz, action, aarg, params, args) CB_ID_FITS_##action(name)
#define CB_ID_FITS_STREAM(name)
#define CB_ID_FITS_STREAM2(name)
#define CB_ID_FITS_CAPTURE_BEGIN(name)
#define CB_ID_FITS_CAPTURE_END(name)
#define CB_ID_FITS_STREAM_FREE(name)
#define CB_ID_FITS_DESTROY_STREAM(name)
#define CB_ID_FITS_CONTEXT(name)
#define CB_ID_FITS_FREE(name)
#define CB_ID_FITS_DESTROY_CTX(name)
#define CB_ID_FITS_PRIMARY_CTX(name)
#define CB_ID_FITS_RESOLVER(name)
#define CB_ID_FITS_EVENT(name)
#define CB_ID_FITS_EVENT_FORGET(name)
#define CB_ID_FITS_EVENT_CREATE(name)
#define CB_ID_FITS_EVENT_FOREIGN(name)
#define CB_ID_FITS_WAIT(name)
#define CB_ID_FITS_GRAPH_LAUNCH(name)
#define CB_ID_FITS_LAUNCH_CONFIG(name)
#define CB_ID_FITS_LAUNCH(name)
#define CB_ID_FITS_CTX_SYNC(name)
#include "hooks.def"
#undef CB_HOOK

/* A marker is recorded through the entry point the program called, with the
 * row's own argument list (its parameter names bound to the marker's values). */
static CUresult record_marker(const struct cb_marker *m, CUstream stream)
{
    CUevent hEvent = m->ev;
    CUstream hStream = stream;
    unsigned int flags = m->flags;
    (void)hEvent, (void)hStream, (void)flags;
    switch (m->hook) {
#define CB_RECORD_MARKER(name, args) \
    case CB_ID_##name:               \
        return CB_REAL(name) ? CB_REAL(name) args : cb_absent(CB_ID_##name);
#define CB_RECORD_OTHER(name, args)
#define CB_HOOK(name, ptsz, action, aarg, params, args) CB_RECORD_##action(name, args)
#define CB_RECORD_COPY CB_RECORD_OTHER
#define CB_RECORD_STREAM CB_RECORD_OTHER
#define CB_RECORD_STREAM2 CB_RECORD_OTHER
#define CB_RECORD_CAPTURE_BEGIN CB_RECORD_OTHER
#define CB_RECORD_CAPTURE_END CB_RECORD_OTHER
#define CB_RECORD_STREAM_FREE CB_RECORD_OTHER
#define CB_RECORD_DESTROY_STREAM CB_RECORD_OTHER
#define CB_RECORD_CONTEXT CB_RECORD_OTHER
#define CB_RECORD_FREE CB_RECORD_OTHER
#define CB_RECORD_DESTROY_CTX CB_RECORD_OTHER
#define CB_RECORD_PRIMARY_CTX CB_RECORD_OTHER
#define CB_RECORD_RESOLVER CB_RECORD_OTHER
#define CB_RECORD_EVENT CB_RECORD_OTHER
#define CB_RECORD_EVENT_FORGET CB_RECORD_OTHER
#define CB_RECORD_EVENT_CREATE CB_RECORD_OTHER
#define CB_RECORD_EVENT_FOREIGN CB_RECORD_OTHER
#define CB_RECORD_WAIT CB_RECORD_OTHER
#define CB_RECORD_GRAPH_LAUNCH CB_RECORD_OTHER
#define CB_RECORD_LAUNCH_CONFIG CB_RECORD_OTHER
#define CB_RECORD_LAUNCH CB_RECORD_OTHER
#define CB_RECORD_CTX_SYNC CB_RECORD_OTHER
#include "hooks.def"
#undef CB_HOOK
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

CUresult cb_loop_engine_markers(const struct cb_copies *c, CUstream stream)
{
    CUresult first = CUDA_SUCCESS;
    for (size_t i = 0; i < c->nmarks; i++) {
        CUresult rc = record_marker(&c->marks[i], stream ? stream : c->marks[i].stream);
        if (rc != CUDA_SUCCESS && first == CUDA_SUCCESS)
            first = rc;
    }
    return first;
}
