/* engine_kernel.c - copies executed by cubatch's own copy kernel: one launch
 * carries a whole run (up to CB_KPARAMS_MAX copies), its descriptors passed as the
 * kernel's one parameter (copy_kernel.h), so nothing is allocated, copied or
 * waited for per run, and the launch costs the host the same whatever the
 * number of copies (what it gains over the loop and the batch API:
 * docs/design.md section 6).  A kernel launch is legal on the legacy stream,
 * where the batch API is not.
 *
 * The fatbin (SASS for every architecture of the toolkit, PTX of the newest) is
 * embedded (copy_kernel_image.S) and loaded once per context, with that context
 * current, the first time one of its runs goes out this way.  A context whose
 * load fails is remembered: its runs use the other engines.
 *
 * What the kernel may touch: device memory of the stream's context, and pinned
 * host memory through its device mapping when that is the host address itself
 * (copy.c decides it per copy; a bad address would be a device fault, sticky for
 * the whole context, so nothing unsure is sent here).
 *
 * Grid: one block of 256 threads per copy, at most one block per SM, which
 * disturbs a compute-bound kernel beside the copies least of the grids measured
 * (docs/design.md section 6, "Interference"). */
#include "engine_kernel.h"
#include "capture.h"
#include "tblock.h"
#include "copy_kernel.h"
#include "stats.h"

#include <stdlib.h>
#include <uthash.h>

#ifdef CB_KERNEL_ENGINE
extern const unsigned char cb_kernel_image[];
#endif

/* The kernel's tiers (copy_kernel.h): the driver copies each tier's declared
 * parameter size on every launch, so a short run uses a short tier. */
static const struct { const char *name; unsigned capacity; } cb_tiers[] = {CB_KTIERS(CB_KTIER_ROW)};
#define CB_TIERS (sizeof cb_tiers / sizeof cb_tiers[0])
/* ... and their twins that also take 2D copies (rule 19), for runs that hold some. */
static const struct { const char *name; unsigned capacity; } cb_tiers_rows[CB_TIERS] = {CB_KTIERS(CB_KTIER_ROWS_ROW)};

/* Per context: the module and its functions (NULL module: the load failed). */
struct cb_kctx {
    UT_hash_handle hh;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn[CB_TIERS], fn_rows[CB_TIERS];
    int sms;
};
/* Shared by every run of a context, which may go out at once from several
 * threads: its own lock, a leaf (store.c), held while a module loads. */
static struct cb_kctx *cb_kctxs;
static pthread_mutex_t cb_kctxs_mu = PTHREAD_MUTEX_INITIALIZER;

/* The parameter block of the launch being made: this thread's (tblock.c). */
static struct cb_kparams *thread_kp(void)
{
    return cb_thread_block(CB_TB_KPARAMS, sizeof(struct cb_kparams));
}

int cb_kernel_engine_init(const char **why)
{
#ifdef CB_KERNEL_ENGINE
    if (!cb_drv.cuModuleLoadData || !cb_drv.cuModuleGetFunction || !cb_drv.cuLaunchKernel ||
        !cb_drv.cuDeviceGetAttribute) {
        *why = "the driver lacks a function the copy kernel needs";
        return 0;
    }
    return 1;
#else
    *why = "built without the copy-kernel engine (no nvcc at build time)";
    return 0;
#endif
}

size_t cb_kernel_engine_max(void) { return CB_KPARAMS_MAX; }

static struct cb_kctx *load(const struct cb_stream_facts *f);

/* A module load is refused (and invalidates the capture) while a global-mode
 * capture runs anywhere or this thread captures in thread-local mode (rule 13):
 * until then the context's runs take the other engines, and nothing is
 * remembered against the context. */
int cb_kernel_engine_ready(CUcontext ctx)
{
    struct cb_kctx *k;
    pthread_mutex_lock(&cb_kctxs_mu);
    HASH_FIND_PTR(cb_kctxs, &ctx, k);
    int ready = k ? k->mod != NULL : 1;
    pthread_mutex_unlock(&cb_kctxs_mu);
    if (ready && !k) {
        cb_capture_lock();
        ready = cb_capture_may_load();
        cb_capture_unlock();
        if (!ready)
            CB_COUNT(kernel_load_held);
    }
    return ready;
}

/* The context's module, loaded on first use: 0 and *out filled, -1 when it
 * cannot be. */
static int kctx(const struct cb_stream_facts *f, struct cb_kctx *out)
{
    pthread_mutex_lock(&cb_kctxs_mu);
    struct cb_kctx *k = load(f);
    if (k)
        *out = *k;
    pthread_mutex_unlock(&cb_kctxs_mu);
    return k ? 0 : -1;
}

/* cb_kctxs_mu held. */
static struct cb_kctx *load(const struct cb_stream_facts *f)
{
    struct cb_kctx *k;
    HASH_FIND_PTR(cb_kctxs, &f->ctx, k);
    if (k)
        return k->mod ? k : NULL;
    k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    /* under capture.c's lock: no capture can begin between the question and the load */
    cb_capture_lock();
    if (!cb_capture_may_load()) {
        cb_capture_unlock();
        free(k);
        return NULL; /* a capture began since cb_kernel_engine_ready: not now */
    }
    k->ctx = f->ctx;
    HASH_ADD_PTR(cb_kctxs, ctx, k);
#ifdef CB_KERNEL_ENGINE
    CUresult rc = cb_drv.cuModuleLoadData(&k->mod, cb_kernel_image);
#else
    CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
#endif
    for (size_t i = 0; rc == CUDA_SUCCESS && i < CB_TIERS; i++) {
        rc = cb_drv.cuModuleGetFunction(&k->fn[i], k->mod, cb_tiers[i].name);
        if (rc == CUDA_SUCCESS)
            rc = cb_drv.cuModuleGetFunction(&k->fn_rows[i], k->mod, cb_tiers_rows[i].name);
    }
    if (rc == CUDA_SUCCESS)
        rc = cb_drv.cuDeviceGetAttribute(&k->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, f->device);
    cb_capture_unlock();
    if (rc != CUDA_SUCCESS || k->sms < 1) {
        cb_log(CB_LOG_NOTICE, "the copy kernel cannot be loaded in context %p (%d): its runs use the batch API",
               (void *)f->ctx, (int)rc);
        if (k->mod && cb_drv.cuModuleUnload)
            cb_drv.cuModuleUnload(k->mod);
        k->mod = NULL;
        return NULL;
    }
    return k;
}

/* The descriptors of copies [off, off + n) of c: one a 1D copy, two a 2D copy
 * (copy_kernel.h); returns how many, which the caller's n keeps within
 * CB_KPARAMS_MAX (engine.c: half as many copies when the run holds 2D ones). */
static size_t fill(struct cb_kparams *kp, const struct cb_copies *c, size_t off, size_t n)
{
    size_t slots = 0;
    for (size_t i = off; i < off + n; i++) {
        const struct cb_rows *r = c->rows ? &c->rows[i] : NULL;
        if (r && r->height) {
            CB_ASSERT(slots + 2 <= CB_KPARAMS_MAX && c->sizes[i] <= r->dpitch && c->sizes[i] <= r->spitch);
            kp->c[slots++] = (struct cb_kcopy){c->dsts[i], c->srcs[i], c->sizes[i] | CB_KROWS};
            kp->c[slots++] = (struct cb_kcopy){r->dpitch, r->spitch, r->height | CB_KROWS_TAIL};
        } else {
            CB_ASSERT(slots < CB_KPARAMS_MAX);
            kp->c[slots++] = (struct cb_kcopy){c->dsts[i], c->srcs[i], c->sizes[i]};
        }
    }
    kp->count = (uint32_t)slots;
    kp->flags = 0;
    return slots;
}

CUresult cb_kernel_engine_submit(const struct cb_copies *c, size_t off, size_t n, CUstream stream,
                                 const struct cb_stream_facts *f)
{
    struct cb_kctx k;
    struct cb_kparams *kp = thread_kp();
    if (!kp)
        return CUDA_ERROR_OUT_OF_MEMORY; /* replayed copy by copy */
    if (kctx(f, &k))
        return CUDA_ERROR_NOT_SUPPORTED; /* replayed copy by copy */
    size_t slots = fill(kp, c, off, n), t = 0;
    while (cb_tiers[t].capacity < slots)
        t++;
    void *params[] = {kp};
    unsigned grid = cb_kgrid(slots, (unsigned)k.sms, c->n2d != 0);
    CUfunction fn = c->n2d ? k.fn_rows[t] : k.fn[t];
    CUresult rc = cb_drv.cuLaunchKernel(fn, grid, 1, 1, CB_KBLOCK_DEFAULT, 1, 1, 0, stream, params, NULL);
    if (rc == CUDA_SUCCESS) {
        CB_COUNT(kernel_launches);
        CB_COUNT_N(kernel_copies, n);
        cb_stat_max(CB_ST_batch_max, n);
    }
    return rc;
}

/* The module died with its context: forget it (the next context of that
 * address loads anew). */
void cb_forget_context_kernel(CUcontext ctx)
{
    struct cb_kctx *k;
    pthread_mutex_lock(&cb_kctxs_mu);
    HASH_FIND_PTR(cb_kctxs, &ctx, k);
    if (k) {
        HASH_DEL(cb_kctxs, k);
        free(k);
    }
    pthread_mutex_unlock(&cb_kctxs_mu);
}

void cb_kernel_atfork_prepare(void) { pthread_mutex_lock(&cb_kctxs_mu); }
void cb_kernel_atfork_parent(void) { pthread_mutex_unlock(&cb_kctxs_mu); }

void cb_kernel_atfork_child(void)
{
    pthread_mutex_init(&cb_kctxs_mu, NULL);
    struct cb_kctx *k, *tmp;
    HASH_ITER(hh, cb_kctxs, k, tmp) {
        HASH_DEL(cb_kctxs, k);
        free(k);
    }
}
