/* flushcall.c - the table-driven flush test's program: queue copies on five
 * streams, call ONE intercepted driver function (a row of src/hooks.def), exit.
 *
 *   flushcall NAME named|null      call NAME with its stream arguments = S, or NULL
 *   flushcall NAME legacy          runs on N and on the legacy stream only (L, by
 *                                  the copy kernel); NAME called with S, which is
 *                                  blocking: its work follows the legacy stream's
 *   flushcall --list               print the rows it can call
 *
 * Before the call, runs hold D2H copies on (the first copy of each burst goes
 * out at once, so one more is issued on each):
 *   S  a blocking stream                      2 copies
 *   N  a non-blocking stream                  3 copies
 *   B  another blocking stream                4 copies
 *   P  this thread's per-thread stream        5 copies
 *   O  another thread's per-thread stream     6 copies
 *   L  the legacy stream (mode legacy only)   7 copies
 * and an event's record queued after B's copies (N's in mode legacy), which every
 * CUevent parameter names: a call observing it submits B (N), and a launch
 * configuration names it as its launch-completion event;
 * so each batch or copy-kernel launch in the simulated driver's log (CUSIM_LOG)
 * says by its count which run went out.  cuDeviceGetCount marks the log before and after the call;
 * tests/table/check_flush_table.sh reads which batches reached the driver before the call.
 * Every other parameter is zero, except contexts (a second, idle context),
 * callbacks (no-ops), out-pointers the simulated driver would write through, and
 * launch configurations (naming the chosen stream). */
#include "config.h"

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaGL.h>
#include <cudaEGL.h>
#include <cudaProfiler.h>
#include "cuda_since.h" /* the functions hooks.def has from newer drivers */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CUstream g_stream;         /* what every CUstream parameter gets */
static CUstream g_stream_slot;    /* what a CUstream * parameter points to */
static CUcontext g_other_ctx;     /* what every CUcontext parameter gets */
static CUdeviceptr g_dptr_slot;
static CUlaunchConfig g_cfg;
static CUlaunchAttribute g_attr;  /* the launch configuration's one attribute: names g_event */
static CUevent g_event;           /* what every CUevent parameter gets: its record is queued in
                                   * B's run (N's in mode legacy), a marker (rule 11) */
static CUresult g_rc;

static void noop_host(void *ud) { (void)ud; }
static void noop_callback(CUstream s, CUresult r, void *ud) { (void)s, (void)r, (void)ud; }

#define FILL(x)                                                                                     \
    x = _Generic((x), CUstream: g_stream, CUstream *: &g_stream_slot, CUcontext: g_other_ctx,       \
                 CUevent: g_event, CUhostFn: noop_host, CUstreamCallback: noop_callback, CUdeviceptr *: &g_dptr_slot, \
                 const CUlaunchConfig *: &g_cfg, default: (x))

#include "flushcalls.inc"

#define CK(call)                                                                      \
    do {                                                                              \
        CUresult rc_ = (call);                                                        \
        if (rc_ != CUDA_SUCCESS) {                                                    \
            fprintf(stderr, "flushcall: %s failed: %d (line %d)\n", #call, (int)rc_, __LINE__); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

enum { SZ = 4096 };
static CUcontext g_ctx;
static CUdeviceptr g_dev;
static unsigned char *g_host;
static size_t g_slot; /* next free SZ slot of g_dev / g_host */

static void queue_on(CUstream s, int n, int ptsz)
{
    for (int i = 0; i < n; i++, g_slot++) {
        size_t off = g_slot * SZ;
        if (ptsz)
            CK(cuMemcpyDtoHAsync_v2_ptsz(g_host + off, g_dev + off, SZ, s));
        else
            CK(cuMemcpyDtoHAsync_v2(g_host + off, g_dev + off, SZ, s));
    }
}

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_other_queued;

/* O: queues on its own per-thread stream, then stays alive until the process exits. */
static void *other_thread(void *arg)
{
    (void)arg;
    CK(cuCtxSetCurrent(g_ctx));
    queue_on(NULL, 7, 1);
    pthread_mutex_lock(&g_mu);
    g_other_queued = 1;
    pthread_cond_broadcast(&g_cv);
    for (;;)
        pthread_cond_wait(&g_cv, &g_mu);
    return NULL;
}

int main(int argc, char **argv)
{
    size_t nrows = sizeof flushcalls / sizeof flushcalls[0];
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < nrows; i++)
            printf("%s %s\n", flushcalls[i].name, flushcalls[i].action);
        return 0;
    }
    if (argc != 3 || (strcmp(argv[2], "named") && strcmp(argv[2], "null") && strcmp(argv[2], "legacy"))) {
        fprintf(stderr, "usage: flushcall NAME named|null|legacy | flushcall --list\n");
        return 2;
    }
    const struct flushcall *fc = NULL;
    for (size_t i = 0; i < nrows; i++)
        if (!strcmp(flushcalls[i].name, argv[1]))
            fc = &flushcalls[i];
    if (!fc) {
        fprintf(stderr, "flushcall: %s is not a row of src/hooks.def\n", argv[1]);
        return 2;
    }
    CUdevice dev;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate_v2(&g_other_ctx, 0, dev)); /* idle: what context parameters name */
    CK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
    CK(cuCtxSetCurrent(g_ctx));
    CK(cuMemAlloc_v2(&g_dev, 32 * SZ));
    CK(cuMemAllocHost_v2((void **)&g_host, 32 * SZ));
    CUstream s, n, b;
    CK(cuStreamCreate(&s, 0));
    CK(cuStreamCreate(&n, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&b, 0));
    if (!strcmp(argv[2], "legacy")) {
        queue_on(n, 4, 0);
        queue_on(CU_STREAM_LEGACY, 8, 0);
    } else {
        queue_on(s, 3, 0);
        queue_on(n, 4, 0);
        queue_on(b, 5, 0);
        queue_on(NULL, 6, 1);
        pthread_t th;
        if (pthread_create(&th, NULL, other_thread, NULL))
            return 1;
        pthread_mutex_lock(&g_mu);
        while (!g_other_queued)
            pthread_cond_wait(&g_cv, &g_mu);
        pthread_mutex_unlock(&g_mu);
    }

    CK(cuEventCreate(&g_event, CU_EVENT_DISABLE_TIMING));
    CUstream marked = strcmp(argv[2], "legacy") ? b : n;
    CK(cuEventRecord(g_event, marked));
    printf("marker_stream=%p\n", (void *)marked); /* check_flush_table.sh: that record is not the call */
    g_attr.id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
    g_attr.value.launchCompletionEvent.event = g_event;
    g_cfg.attrs = &g_attr;
    g_cfg.numAttrs = 1;
    g_stream = strcmp(argv[2], "null") ? s : NULL;
    g_stream_slot = g_stream;
    g_cfg.hStream = g_stream;
    int count;
    CK(cuDeviceGetCount(&count)); /* marks the log (cubatch never calls it): the call follows */
    fc->call();
    CK(cuDeviceGetCount(&count)); /* and is done */
    printf("%s %s rc=%d\n", fc->name, argv[2], (int)g_rc);
    fflush(stdout);
    exit(0); /* the other thread stays blocked; cubatch flushes what is left at exit */
}
