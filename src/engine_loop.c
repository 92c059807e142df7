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
#define CB_ON_COPY(name, ptsz, action, aarg, params, args)                                                \
    case CB_ID_##name:                                                                          \
        return CB_REAL(name) ? CB_REAL(name)(CB_ARGS(CB_DIR_OF aarg, dst, src), bytes, stream) \
                             : cb_absent(CB_ID_##name);
#include "hooks_each.h"
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

CUresult cb_issue_copy2d(int hook, const CUDA_MEMCPY2D *copy, CUstream stream)
{
    switch (hook) {
#define CB_ON_COPY2D(name, ptsz, action, aarg, params, args) \
    case CB_ID_##name:                                       \
        return CB_REAL(name) ? CB_REAL(name)(copy, stream) : cb_absent(CB_ID_##name);
#include "hooks_each.h"
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

/* A queued 2D copy as the program described it: its start in each side's
 * pointer of the memory type it gave (the row and column offsets are in the
 * start already). */
static CUresult issue_rows(const struct cb_copies *c, size_t i, CUstream stream)
{
    const struct cb_rows *r = &c->rows[i];
    CUDA_MEMCPY2D p = {.srcMemoryType = (CUmemorytype)r->stype, .srcPitch = r->spitch,
                       .dstMemoryType = (CUmemorytype)r->dtype, .dstPitch = r->dpitch,
                       .WidthInBytes = c->sizes[i], .Height = r->height};
    if (p.srcMemoryType == CU_MEMORYTYPE_HOST)
        p.srcHost = (const void *)(uintptr_t)c->srcs[i];
    else
        p.srcDevice = c->srcs[i];
    if (p.dstMemoryType == CU_MEMORYTYPE_HOST)
        p.dstHost = (void *)(uintptr_t)c->dsts[i];
    else
        p.dstDevice = c->dsts[i];
    return cb_issue_copy2d(c->hooks[i], &p, stream);
}

CUresult cb_loop_engine_submit(const struct cb_copies *c, size_t off, size_t n, CUstream stream)
{
    CUresult first = CUDA_SUCCESS;
    for (size_t i = off; i < off + n; i++) {
        CUstream s = stream ? stream : c->streams[i];
        CUresult rc = c->rows && c->rows[i].height ? issue_rows(c, i, s)
                                                   : cb_issue_copy(c->hooks[i], c->dsts[i], c->srcs[i], c->sizes[i], s);
        first = cb_first_error(first, rc);
    }
    return first;
}

/* A marker keeps its row's id in an unsigned char, as a queued copy does. */
#define CB_ON_MARKER(name, ptsz, action, aarg, params, args) \
    _Static_assert(CB_ID_##name < 256, #name ": its hook id must fit a marker's byte");
#define CB_ON_COPY(name, ptsz, action, aarg, params, args) \
    _Static_assert(CB_ID_##name < 256, #name ": its hook id must fit a copy's byte");
#define CB_ON_COPY2D CB_ON_COPY
#include "hooks_each.h"

/* A marker is recorded through the entry point the program called, with the
 * row's own argument list (its parameter names bound to the marker's values). */
static CUresult record_marker(const struct cb_marker *m, CUstream stream)
{
    CUevent hEvent = m->ev;
    CUstream hStream = stream;
    unsigned int flags = m->flags;
    (void)hEvent, (void)hStream, (void)flags;
    switch (m->hook) {
#define CB_ON_MARKER(name, ptsz, action, aarg, params, args) \
    case CB_ID_##name:                                        \
        return CB_REAL(name) ? CB_REAL(name) args : cb_absent(CB_ID_##name);
#include "hooks_each.h"
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

CUresult cb_loop_engine_markers(const struct cb_copies *c, CUstream stream, CUevent *standin)
{
    if (*standin) {
        /* rule 15: recorded once, as the first marker that may stand on it was
         * (entry point and stream), in place of all of them */
        CUresult rc = CUDA_ERROR_INVALID_VALUE;
        for (size_t i = 0; i < c->nmarks; i++) {
            if (!c->marks[i].stands)
                continue;
            struct cb_marker m = c->marks[i];
            m.ev = *standin;
            rc = record_marker(&m, stream ? stream : m.stream);
            break;
        }
        if (rc != CUDA_SUCCESS)
            *standin = NULL; /* each marker records its own event: their errors are the program's */
    }
    CUresult first = CUDA_SUCCESS;
    for (size_t i = 0; i < c->nmarks; i++) {
        if (*standin && c->marks[i].stands)
            continue;
        CUresult rc = record_marker(&c->marks[i], stream ? stream : c->marks[i].stream);
        first = cb_first_error(first, rc);
    }
    return first;
}
