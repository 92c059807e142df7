/* context.c - contexts that go away, and what cubatch forgets with them.
 *
 * cubatch keeps per-context helpers (a side stream and an event pool for
 * per-thread-stream runs, ptds.c) and runs that remember their context.  When a
 * context is destroyed, those handles die with it; forgetting them is needed so
 * that a later context does not get dead handles.  Forgetting a context that is
 * still alive would only leak its helpers and recreate them, so each call forgets
 * exactly the context it destroyed, and only when it is really gone:
 *  - cuCtxDestroy destroys its context when it succeeds; cuCtxDetach only when it
 *    dropped the last reference (the context no longer answers afterwards);
 *  - cuDevicePrimaryCtxRelease destroys the device's primary context only when it
 *    dropped the last retain (the primary context is inactive afterwards), and
 *    never touches contexts made by cuCtxCreate on the same device;
 *  - cuDevicePrimaryCtxReset destroys the primary context's state whenever it
 *    succeeds.
 * Every one of them flushes every run first (docs/design.md rule 6). */
#include "run.h"
#include "store.h"
#include "waits.h"
#include "smwork.h"

CUresult cb_ctx_destroy_before(CUcontext ctx, int destroys, struct cb_ctx_fate *f)
{
    f->ctx = ctx;
    /* cuCtxDestroy destroys whenever it succeeds, whatever a later question about
     * the dead handle answers (a driver need not refuse it: the context's module,
     * side stream and events were then kept, and a context made later at the
     * same handle used them); cuCtxDetach only when it dropped the last
     * reference (context_gone) */
    f->destroys = destroys;
    f->device = -1;
    cb_smwork_ctx_synced(ctx); /* its streams are never asked about again */
    CUresult rc = cb_waits_issue_all(); /* rule 16 */
    rc = cb_first_error(rc, cb_flush_all(CB_WHY_flush_context));
    cb_classes_forget_context(ctx); /* before its memory may be given back (rule 14) */
    return rc;
}

/* The device's primary context, if it exists, without changing its retain count
 * (a retain/release pair of our own around the lookup). */
static CUcontext primary_of(CUdevice dev)
{
    unsigned int flags = 0;
    int active = 0;
    CUcontext pctx = NULL;
    if (!cb_drv.cuDevicePrimaryCtxGetState || !cb_drv.cuDevicePrimaryCtxRetain ||
        !cb_drv.cuDevicePrimaryCtxRelease_v2 || cb_drv.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS ||
        !active)
        return NULL;
    if (cb_drv.cuDevicePrimaryCtxRetain(&pctx, dev) != CUDA_SUCCESS)
        return NULL;
    cb_drv.cuDevicePrimaryCtxRelease_v2(dev);
    return pctx;
}

CUresult cb_primary_before(CUdevice dev, int reset, struct cb_ctx_fate *f)
{
    CUresult rc = cb_waits_issue_all(); /* rule 16 */
    rc = cb_first_error(rc, cb_flush_all(CB_WHY_flush_context));
    f->ctx = primary_of(dev);
    f->destroys = reset;
    f->device = dev;
    if (f->ctx) {
        cb_smwork_ctx_synced(f->ctx); /* it may go: its streams are never asked about again */
        cb_classes_forget_context(f->ctx);
    }
    return rc;
}

static int context_gone(const struct cb_ctx_fate *f)
{
    if (f->device >= 0) { /* a primary context: gone when no longer active */
        unsigned int flags = 0;
        int active = 1;
        return cb_drv.cuDevicePrimaryCtxGetState &&
               cb_drv.cuDevicePrimaryCtxGetState(f->device, &flags, &active) == CUDA_SUCCESS && !active;
    }
    unsigned int version = 0;
    return cb_drv.cuCtxGetApiVersion && cb_drv.cuCtxGetApiVersion(f->ctx, &version) != CUDA_SUCCESS;
}

void cb_ctx_fate_after(const struct cb_ctx_fate *f, CUresult rc)
{
    if (!f->ctx)
        return;
    if ((f->destroys && rc == CUDA_SUCCESS) || context_gone(f)) {
        cb_forget_classes();
        cb_forget_context_runs(f->ctx);
        cb_events_forget_context(f->ctx); /* before its helpers: their pool is gone with it */
        cb_forget_context_helpers(f->ctx);
        cb_forget_context_kernel(f->ctx);
        cb_choose_forget_context(f->ctx);
    }
}
