/* copy.c - the body shared by the eight copy wrappers (cuMemcpyAsync,
 * cuMemcpy{HtoD,DtoH,DtoD}Async_v2 and their _ptsz twins): decide whether this
 * copy may be deferred (DESIGN.md rules 1-3 and the size policy) and either hand
 * it to its stream's run or pass it through unchanged, after flushing the run it
 * must follow. */
#include "internal.h"

CUresult cb_copy_forward(int hook, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    switch (hook) {
#define CB_FWD(name, d, s) \
    case CB_ID_##name:     \
        return CB_REAL(name) ? CB_REAL(name)(d, s, bytes, stream) : cb_absent(CB_ID_##name);
        CB_FWD(cuMemcpyAsync, dst, src)
        CB_FWD(cuMemcpyAsync_ptsz, dst, src)
        CB_FWD(cuMemcpyHtoDAsync_v2, dst, (const void *)(uintptr_t)src)
        CB_FWD(cuMemcpyHtoDAsync_v2_ptsz, dst, (const void *)(uintptr_t)src)
        CB_FWD(cuMemcpyDtoHAsync_v2, (void *)(uintptr_t)dst, src)
        CB_FWD(cuMemcpyDtoHAsync_v2_ptsz, (void *)(uintptr_t)dst, src)
        CB_FWD(cuMemcpyDtoDAsync_v2, dst, src)
        CB_FWD(cuMemcpyDtoDAsync_v2_ptsz, dst, src)
#undef CB_FWD
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

enum cb_stream_kind cb_stream_kind(CUstream s, int ptsz_entry)
{
    if (s == NULL)
        return ptsz_entry ? CB_STREAM_PTDS : CB_STREAM_LEGACY_KIND;
    if (s == CU_STREAM_LEGACY)
        return CB_STREAM_LEGACY_KIND;
    if (s == CU_STREAM_PER_THREAD)
        return CB_STREAM_PTDS;
    return CB_STREAM_REGULAR;
}

static int host_side(enum cb_kind k) { return k == CB_MEM_HOST || k == CB_MEM_MANAGED; }
static int dev_side(enum cb_kind k) { return k == CB_MEM_DEVICE || k == CB_MEM_MANAGED; }

/* Direction of a copy between two classified (non-pageable) pointers; managed
 * memory counts as device memory, as the driver migrates it on demand. */
static enum cb_direction direction(enum cb_kind d, enum cb_kind s)
{
    int dh = d == CB_MEM_HOST, sh = s == CB_MEM_HOST;
    return sh ? (dh ? CB_D_H2H : CB_D_H2D) : (dh ? CB_D_D2H : CB_D_D2D);
}

/* Does the entry point's own direction agree with the memory?  The explicit
 * HtoD/DtoH/DtoD entries are issued as themselves on pass-through, so a batch may
 * only stand in for them when the pointers are what the entry expects. */
static int entry_agrees(int hint, enum cb_kind d, enum cb_kind s)
{
    switch (hint) {
    case CB_HOOK_DIR_H2D: return dev_side(d) && host_side(s);
    case CB_HOOK_DIR_D2H: return host_side(d) && dev_side(s);
    case CB_HOOK_DIR_D2D: return dev_side(d) && dev_side(s);
    default: return 1;
    }
}

CUresult cb_copy(int hook, int ptsz, int dirhint, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    cb_init();
    struct cb_tstats *t = cb_stats_thread();
    t->calls[hook]++;
    t->v[CB_ST_copies]++;
    if (!cb_batching) {
        t->v[cb_opt(CB_OPT_enable) ? CB_ST_pass_version : CB_ST_pass_disabled]++;
        t->v[CB_ST_copies_unknown]++;
        return cb_copy_forward(hook, dst, src, bytes, stream);
    }
    struct cb_copy_req rq = {.hook = hook, .dst = dst, .src = src, .bytes = bytes, .stream = stream};
    rq.sk = cb_stream_kind(stream, ptsz);
    if (rq.sk == CB_STREAM_LEGACY_KIND) {
        /* Rule 3: never batch on the legacy stream; it waits for every blocking
         * stream, so their runs go first. */
        t->v[CB_ST_pass_legacy]++;
        t->v[CB_ST_copies_unknown]++;
        CUresult fe = cb_flush_legacy();
        CUresult rc = cb_copy_forward(hook, dst, src, bytes, stream);
        return fe != CUDA_SUCCESS ? fe : rc;
    }
    enum cb_stat_id why;
    if (bytes == 0) {
        /* The batch API refuses 0-byte entries; the copy touches no memory and
         * waits for nothing, so it need not follow the queued run either. */
        t->v[CB_ST_pass_zero]++;
        t->v[CB_ST_copies_unknown]++;
        return cb_copy_forward(hook, dst, src, bytes, stream);
    }
    if (cb_classify(dst, &rq.dcls) || cb_classify(src, &rq.scls)) {
        why = CB_ST_pass_query;
    } else if (rq.dcls.kind == CB_MEM_UNKNOWN || rq.scls.kind == CB_MEM_UNKNOWN) {
        why = CB_ST_pass_pageable; /* rule 1: the driver stages or synchronizes these */
    } else if (!entry_agrees(dirhint, rq.dcls.kind, rq.scls.kind) ||
               (rq.dcls.end && bytes > rq.dcls.end - dst) || (rq.scls.end && bytes > rq.scls.end - src) ||
               (rq.dcls.kind == CB_MEM_DEVICE && rq.scls.kind == CB_MEM_DEVICE &&
                rq.dcls.device != rq.scls.device)) {
        why = CB_ST_pass_foreign; /* let the driver say what it says about these */
    } else {
        enum cb_direction d = direction(rq.dcls.kind, rq.scls.kind);
        t->v[CB_ST_copies_h2d + d]++;
        if (bytes > cb_opt(CB_OPT_max_copy) || !cb_policy_defer(d, bytes)) {
            /* Eligible memory, just not worth batching.  This copy is asynchronous
             * and holds the host to nothing, so issuing it ahead of the queued run
             * is unobservable unless their ranges overlap (rule 5): only then must
             * the run go first.  Interleaved copies of both kinds keep batching. */
            t->v[bytes > cb_opt(CB_OPT_max_copy) ? CB_ST_pass_size : CB_ST_pass_policy]++;
            return cb_pass_eligible(&rq);
        }
        CUresult rc = CUDA_SUCCESS;
        if (cb_enqueue(&rq, &rc)) {
            t->v[CB_ST_deferred]++;
            return rc;
        }
        /* cb_enqueue counted its reason and flushed the stream already */
        CUresult fr = cb_copy_forward(hook, dst, src, bytes, stream);
        return rc != CUDA_SUCCESS ? rc : fr;
    }
    t->v[CB_ST_copies_unknown]++;
    t->v[why]++;
    CUresult fe = cb_flush_stream(stream, ptsz, CB_WHY_PASSTHROUGH);
    CUresult rc = cb_copy_forward(hook, dst, src, bytes, stream);
    return fe != CUDA_SUCCESS ? fe : rc;
}
