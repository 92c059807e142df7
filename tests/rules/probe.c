/* probe.c - driver-API scenarios, one per run (argv[1]), for the rule tests.
 *
 * Each scenario is an ordinary CUDA program: it knows nothing of cubatch.  The
 * harness (check_rules.c) runs it with and without LD_PRELOAD=libcubatch.so
 * against the simulated driver and compares what it prints:
 *   result: ok | result: WRONG <what>     bytes checked against host-computed data
 *   digest: <hex>                         hash of every byte the scenario observed
 *   rc: <label> <CUresult>                return codes the program saw
 *   <key>: <value>                        scenario facts (e.g. batches seen so far)
 *   stats: {json}                         cubatch's counters, when preloaded
 * Observation never goes through an extra CUDA call that would itself flush: the
 * data lands in pinned host memory and the scenario's own observing call (a sync,
 * a query, an event) is the last CUDA call before the host reads it.  A missed
 * flush therefore shows up as wrong bytes, since the simulated driver runs
 * nothing until something waits, and runs batch entries in reverse order.
 *
 * The same program runs on a real GPU (tests/gpu/run-gpu-tests.sh). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, nanosleep */
#endif
#define __CUDA_API_VERSION_INTERNAL 1 /* call exact variants: _v2, _ptsz */
#include <cuda.h>

#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

CUresult CUDAAPI cuGetProcAddress_v2_ptsz(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

#define CK(call)                                                                       \
    do {                                                                               \
        CUresult rc_ = (call);                                                         \
        if (rc_ != CUDA_SUCCESS) {                                                     \
            printf("result: WRONG %s returned %d at line %d\n", #call, (int)rc_, __LINE__); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static CUcontext g_ctx;
static int g_wrong;
static uint64_t g_digest = 1469598103934665603ull;

static void digest(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        g_digest = (g_digest ^ b[i]) * 1099511628211ull;
}

static void fill(void *p, size_t n, unsigned seed)
{
    unsigned char *b = p;
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b[i] = (unsigned char)x;
    }
}

static void expect(const char *what, const void *got, const void *want, size_t n)
{
    digest(got, n);
    if (memcmp(got, want, n)) {
        printf("result: WRONG %s\n", what);
        g_wrong = 1;
    }
}

static void *pinned(size_t n)
{
    void *p;
    CK(cuMemAllocHost_v2(&p, n));
    memset(p, 0xAB, n);
    return p;
}

static CUdeviceptr devmem(size_t n)
{
    CUdeviceptr d;
    CK(cuMemAlloc_v2(&d, n));
    return d;
}

/* Device memory filled with `src` and settled before the scenario starts. */
static CUdeviceptr devfilled(const void *src, size_t n)
{
    CUdeviceptr d = devmem(n);
    CK(cuMemcpyHtoD_v2(d, src, n));
    return d;
}

static CUstream mkstream(unsigned flags)
{
    CUstream s;
    CK(cuStreamCreate(&s, flags));
    return s;
}

static unsigned long sim_count(const char *name)
{
    unsigned long (*f)(const char *) = (unsigned long (*)(const char *))dlsym(RTLD_DEFAULT, "cusim_count");
    return f ? f(name) : 0;
}

/* Time passing on the CPU without any CUDA call.  Under tests/fakeclock (the rule
 * tests preload it) this moves the virtual CLOCK_MONOTONIC, so a rule that reads a
 * clock sees exactly this much time, however busy the machine; otherwise (a GPU
 * run) the time really passes. */
static void pass_time_us(unsigned us)
{
    static void (*advance)(uint64_t);
    static int looked;
    if (!looked) {
        advance = (void (*)(uint64_t))dlsym(RTLD_DEFAULT, "fakeclock_advance_ns");
        looked = 1;
    }
    if (advance) {
        advance((uint64_t)us * 1000u);
        return;
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < (long)us * 1000L);
}

/* The virtual clock's time (0 without tests/fakeclock). */
static uint64_t virtual_now_ns(void)
{
    uint64_t (*now)(void) = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "fakeclock_now_ns");
    return now ? now() : 0;
}

/* Reads of the virtual clock so far (0 without tests/fakeclock). */
static unsigned long clock_reads(void)
{
    unsigned long (*reads)(void) = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "fakeclock_reads");
    return reads ? reads() : 0;
}

/* Is cubatch preloaded? */
static int shim_present(void) { return dlsym(RTLD_DEFAULT, "cubatch_flush") != NULL; }

static void print_stats(void)
{
    size_t (*f)(char *, size_t) = (size_t(*)(char *, size_t))dlsym(RTLD_DEFAULT, "cubatch_stats_json");
    if (!f)
        return;
    static char buf[65536];
    f(buf, sizeof buf);
    printf("stats: %s\n", buf);
}

static void setup(void)
{
    CUdevice dev;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
    CK(cuCtxSetCurrent(g_ctx));
}

enum { N = 64, SZ = 4096 };

/* ---- scenarios ------------------------------------------------------------------ */

/* 64 H2D then 64 D2H on one stream, then a stream sync. */
static void sc_basic(void)
{
    unsigned char *in = pinned(N * SZ), *out = pinned(N * SZ);
    fill(in, N * SZ, 1);
    CUdeviceptr d = devmem(N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, s));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CK(cuStreamSynchronize(s));
    expect("round trip", out, in, N * SZ);
}

/* 16 chains A->B then B->C, all in one run: each C must get A (rule 5, RAW). */
enum { K = 16 };
static void sc_chain(void)
{
    unsigned char *a = malloc(K * SZ), *b = malloc(K * SZ);
    fill(a, K * SZ, 2);
    fill(b, K * SZ, 3);
    CUdeviceptr A = devfilled(a, K * SZ), B = devfilled(b, K * SZ), C = devmem(K * SZ);
    unsigned char *out = pinned(K * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < K; i++)
        CK(cuMemcpyDtoDAsync_v2(B + (size_t)i * SZ, A + (size_t)i * SZ, SZ, s));
    for (int i = 0; i < K; i++)
        CK(cuMemcpyDtoDAsync_v2(C + (size_t)i * SZ, B + (size_t)i * SZ, SZ, s));
    for (int i = 0; i < K; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, C + (size_t)i * SZ, SZ, s));
    CK(cuStreamSynchronize(s));
    expect("chains A->B->C", out, a, K * SZ);
    free(a);
    free(b);
}

/* Copies read D, later copies overwrite D (rule 5, WAR), then read it again. */
static void sc_overwrite(void)
{
    unsigned char *old = malloc(K * SZ), *neu = malloc(K * SZ);
    fill(old, K * SZ, 4);
    fill(neu, K * SZ, 5);
    CUdeviceptr D = devfilled(old, K * SZ);
    unsigned char *out = pinned(K * SZ), *src = pinned(K * SZ), *out2 = pinned(K * SZ);
    memcpy(src, neu, K * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < K; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, D + (size_t)i * SZ, SZ, s));
    for (int i = 0; i < K; i++)
        CK(cuMemcpyHtoDAsync_v2(D + (size_t)i * SZ, src + (size_t)i * SZ, SZ, s));
    for (int i = 0; i < K; i++)
        CK(cuMemcpyDtoHAsync_v2(out2 + (size_t)i * SZ, D + (size_t)i * SZ, SZ, s));
    CK(cuStreamSynchronize(s));
    expect("read before overwrite", out, old, K * SZ);
    expect("read after overwrite", out2, neu, K * SZ);
    free(old);
    free(neu);
}

/* Copies, then poll cuStreamQuery until done; then read pinned memory directly. */
static void sc_query(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 6);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CUresult q;
    while ((q = cuStreamQuery(s)) == CUDA_ERROR_NOT_READY)
        ;
    printf("rc: query %d\n", (int)q);
    expect("after query", out, src, N * SZ);
    free(src);
}

/* Copies on s1, event recorded on s1 and waited on by s2, which reads the data. */
static void sc_event(void)
{
    unsigned char *in = pinned(N * SZ), *out = pinned(N * SZ);
    fill(in, N * SZ, 7);
    CUdeviceptr d = devmem(N * SZ);
    CUstream s1 = mkstream(CU_STREAM_NON_BLOCKING), s2 = mkstream(CU_STREAM_NON_BLOCKING);
    CUevent ev;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, s1));
    CK(cuEventRecord(ev, s1));
    CK(cuStreamWaitEvent(s2, ev, 0));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s2));
    CK(cuStreamSynchronize(s2));
    expect("across the event", out, in, N * SZ);
}

/* Copies on a blocking stream, then legacy-stream work that must follow them. */
static void sc_legacy(void)
{
    unsigned char *in = pinned(N * SZ), *out = pinned(N * SZ);
    fill(in, N * SZ, 8);
    CUdeviceptr d = devmem(N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, s));
    /* legacy stream: waits for s; then its own sync observes everything */
    CK(cuMemcpyDtoHAsync_v2(out, d, N * SZ, NULL));
    CK(cuStreamSynchronize(CU_STREAM_LEGACY));
    expect("legacy follows blocking stream", out, in, N * SZ);
}

/* Copies on the NULL (legacy) stream itself: passed through, never batched. */
static void sc_legacy_copies(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 9);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, NULL));
    CK(cuCtxSynchronize());
    expect("legacy copies", out, src, N * SZ);
    free(src);
}

/* Copies on the legacy stream, then copies on a blocking stream that overwrite
 * what the legacy ones read: the blocking stream's work follows the legacy
 * stream's earlier work, so the legacy copies must have read the old bytes. */
static void sc_legacy_then_blocking(void)
{
    unsigned char *old = malloc(N * SZ), *fresh = pinned(N * SZ);
    fill(old, N * SZ, 35);
    fill(fresh, N * SZ, 36);
    CUdeviceptr d = devfilled(old, N * SZ);
    unsigned char *out = pinned(N * SZ), *back = pinned(N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, CU_STREAM_LEGACY));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, fresh + (size_t)i * SZ, SZ, s));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(back + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CK(cuStreamSynchronize(s));
    CK(cuStreamSynchronize(CU_STREAM_LEGACY));
    expect("legacy copies read before the overwrite", out, old, N * SZ);
    expect("the overwrite", back, fresh, N * SZ);
    free(old);
}

/* Host memory registered with cuMemHostRegister, as copy destinations. */
static void sc_registered(void)
{
    unsigned char *src = malloc(N * SZ), *host = aligned_alloc(4096, N * SZ);
    fill(src, N * SZ, 37);
    memset(host, 0, N * SZ);
    CUdeviceptr d = devfilled(src, N * SZ);
    CK(cuMemHostRegister_v2(host, N * SZ, 0));
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(host + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CK(cuStreamSynchronize(s));
    expect("registered memory", host, src, N * SZ);
    CK(cuMemHostUnregister(host));
    free(src);
    free(host);
}

/* Copies queued on the legacy stream, then a global-mode capture begins on a
 * non-blocking stream: the legacy run must go out first (a launch on the legacy
 * stream during the capture would invalidate it). */
static void sc_capture_legacy(void)
{
    unsigned char *src = malloc(N * SZ), *in = pinned(N * SZ);
    fill(src, N * SZ, 38);
    fill(in, N * SZ, 39);
    CUdeviceptr d = devfilled(src, N * SZ), d2 = devmem(N * SZ);
    unsigned char *out = pinned(N * SZ), *back = pinned(N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, CU_STREAM_LEGACY));
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
    CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d2 + (size_t)i * SZ, in + (size_t)i * SZ, SZ, s));
    CUgraph g;
    CUresult end = cuStreamEndCapture(s, &g);
    printf("rc: end_capture %d\n", (int)end);
    if (end == CUDA_SUCCESS) {
        CUgraphExec ge;
        CK(cuGraphInstantiateWithFlags(&ge, g, 0));
        CK(cuGraphLaunch(ge, s));
        CK(cuMemcpyDtoHAsync_v2(back, d2, N * SZ, s));
        CK(cuStreamSynchronize(s));
        expect("captured copies", back, in, N * SZ);
    }
    CK(cuCtxSynchronize());
    expect("legacy copies before the capture", out, src, N * SZ);
    free(src);
}

/* Legacy-stream copies while a blocking stream captures: the first is an
 * implicit dependency on the capture, which the driver refuses, invalidating
 * the capture.  A burst of legacy copies comes first, so that cubatch's legacy
 * run is open (the capture begin submits it): deferring the copies made during
 * the capture would return success and leave the capture valid. */
static void sc_legacy_during_capture(void)
{
    unsigned char *src = malloc(2 * N * SZ), *in = pinned(2 * N * SZ), *out = pinned(2 * N * SZ);
    fill(src, 2 * N * SZ, 41);
    fill(in, 2 * N * SZ, 42);
    CUdeviceptr d = devfilled(src, 2 * N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, CU_STREAM_LEGACY));
    CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    int ok = 0, implicit = 0, other = 0;
    for (int i = N; i < 2 * N; i++) {
        CUresult rc = cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, CU_STREAM_LEGACY);
        if (rc == CUDA_SUCCESS)
            ok++;
        else if (rc == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
            implicit++;
        else
            other++;
    }
    printf("rc: legacy copies during capture ok=%d implicit=%d other=%d\n", ok, implicit, other);
    CUgraph g = NULL;
    CUresult end = cuStreamEndCapture(s, &g);
    printf("rc: end_capture %d\n", (int)end);
    if (end == CUDA_SUCCESS && g)
        CK(cuGraphDestroy(g));
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH_v2(out, d, 2 * N * SZ));
    expect("legacy copies before the capture", out, in, N * SZ);
    digest(out + N * SZ, N * SZ); /* those made during it: whatever reached the device */
    free(src);
}

/* Copies larger than the copy kernel takes by itself (CUBATCH_ENGINE=auto). */
static void sc_big(void)
{
    enum { B = 512 << 10, NB = 4 };
    unsigned char *src = malloc(NB * B);
    fill(src, NB * B, 40);
    CUdeviceptr d = devfilled(src, NB * B);
    unsigned char *out = pinned(NB * B);
    CUstream s = mkstream(0);
    for (int i = 0; i < NB; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * B, d + (size_t)i * B, B, s));
    CK(cuStreamSynchronize(s));
    expect("big copies", out, src, NB * B);
    free(src);
}

/* Per-thread default stream copies in thread A; thread B's context synchronize
 * (or legacy-stream sync) must observe them while A makes no further call. */
struct xthread {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stage;
    unsigned char *out;
    CUdeviceptr d;
    int use_legacy;
};
static void stage_wait(struct xthread *x, int s)
{
    pthread_mutex_lock(&x->mu);
    while (x->stage < s)
        pthread_cond_wait(&x->cv, &x->mu);
    pthread_mutex_unlock(&x->mu);
}
static void stage_set(struct xthread *x, int s)
{
    pthread_mutex_lock(&x->mu);
    x->stage = s;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
}
static void *ptds_owner(void *arg)
{
    struct xthread *x = arg;
    CK(cuCtxSetCurrent(g_ctx));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2_ptsz(x->out + (size_t)i * SZ, x->d + (size_t)i * SZ, SZ, i % 2 ? NULL : CU_STREAM_PER_THREAD));
    stage_set(x, 1);
    stage_wait(x, 2); /* no CUDA call until the other thread has looked */
    CK(cuStreamSynchronize_ptsz(NULL));
    return NULL;
}
static void xthread_run(int use_legacy)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 10);
    struct xthread x = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, pinned(N * SZ),
                        devfilled(src, N * SZ), use_legacy};
    pthread_t th;
    pthread_create(&th, NULL, ptds_owner, &x);
    stage_wait(&x, 1);
    if (use_legacy) {
        /* work on the legacy stream waits for every blocking stream's earlier work */
        CUevent ev;
        CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
        CK(cuEventRecord(ev, CU_STREAM_LEGACY));
        CK(cuEventSynchronize(ev));
    } else
        CK(cuCtxSynchronize());
    expect("other thread's per-thread stream", x.out, src, N * SZ);
    stage_set(&x, 2);
    pthread_join(th, NULL);
    free(src);
}
static void sc_ptds_ctxsync(void) { xthread_run(0); }
static void sc_ptds_legacy(void) { xthread_run(1); }

/* A copy passed through (here by CUBATCH_POLICY) ahead of the owner's queued
 * per-thread run, then copies queued that read what it wrote: when another
 * thread flushes the run onto the side stream, the side stream must wait for
 * that copy too, not only for what preceded the run's opening. */
static void *ptds_pass_ahead_owner(void *arg)
{
    struct xthread *x = arg;
    CK(cuCtxSetCurrent(g_ctx));
    unsigned char *in = pinned(N * SZ);
    fill(in, N * SZ, 43);
    CUdeviceptr dx = devmem(N * SZ), dz = devmem(N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2_ptsz(dx + (size_t)i * SZ, in + (size_t)i * SZ, SZ, CU_STREAM_PER_THREAD));
    CK(cuMemcpyDtoDAsync_v2_ptsz(dz, x->d, N * SZ, CU_STREAM_PER_THREAD));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2_ptsz(x->out + (size_t)i * SZ, dz + (size_t)i * SZ, SZ, CU_STREAM_PER_THREAD));
    stage_set(x, 1);
    stage_wait(x, 2); /* no CUDA call until the other thread has looked */
    CK(cuStreamSynchronize_ptsz(NULL));
    return NULL;
}
static void sc_ptds_pass_ahead(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 44);
    struct xthread x = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, pinned(N * SZ),
                        devfilled(src, N * SZ), 0};
    pthread_t th;
    pthread_create(&th, NULL, ptds_pass_ahead_owner, &x);
    stage_wait(&x, 1);
    /* work on the legacy stream waits for every blocking stream's earlier work */
    CUevent ev;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CK(cuEventRecord(ev, CU_STREAM_LEGACY));
    CK(cuEventSynchronize(ev));
    expect("copies after a pass-through, flushed by another thread", x.out, src, N * SZ);
    stage_set(&x, 2);
    pthread_join(th, NULL);
    free(src);
}

/* Per-thread stream in one thread only: the owner's own sync. */
static void sc_ptds_own(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 11);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2_ptsz(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, NULL));
    CK(cuStreamSynchronize_ptsz(NULL));
    expect("own per-thread stream", out, src, N * SZ);
    free(src);
}

/* Copies queued, then capture begins on the same stream. */
static void sc_capture(void)
{
    unsigned char *in = pinned(N * SZ), *in2 = pinned(N * SZ), *out = pinned(2 * N * SZ);
    fill(in, N * SZ, 12);
    fill(in2, N * SZ, 13);
    CUdeviceptr d = devmem(N * SZ), d2 = devmem(N * SZ);
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, s));
    printf("batches_before_capture: %lu\n", sim_count("cuMemcpyBatchAsync_v2"));
    CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d2 + (size_t)i * SZ, in2 + (size_t)i * SZ, SZ, s));
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    printf("batches_in_capture: %lu\n", sim_count("cuMemcpyBatchAsync_v2"));
    CUgraphExec ge;
    CK(cuGraphInstantiateWithFlags(&ge, g, 0));
    CK(cuGraphLaunch(ge, s));
    CK(cuMemcpyDtoHAsync_v2(out, d, N * SZ, s));
    CK(cuMemcpyDtoHAsync_v2(out + N * SZ, d2, N * SZ, s));
    CK(cuStreamSynchronize(s));
    expect("copied before capture", out, in, N * SZ);
    expect("captured copies", out + N * SZ, in2, N * SZ);
}

/* A stream destroyed with copies queued on it. */
static void sc_destroy(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 14);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CK(cuStreamDestroy_v2(s));
    /* the handle may come back for a new stream: its copies are a new run */
    CUstream s2 = mkstream(0);
    unsigned char *out2 = pinned(N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out2 + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s2));
    CK(cuCtxSynchronize());
    expect("destroyed stream's copies", out, src, N * SZ);
    expect("new stream's copies", out2, src, N * SZ);
    free(src);
}

/* Pageable source reused at once; pageable destination. */
static void sc_pageable(void)
{
    unsigned char *src = malloc(N * SZ), *keep = malloc(N * SZ), *back = malloc(N * SZ);
    fill(src, N * SZ, 15);
    memcpy(keep, src, N * SZ);
    CUdeviceptr d = devmem(N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++) {
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, src + (size_t)i * SZ, SZ, s));
        memset(src + (size_t)i * SZ, 0, SZ); /* allowed: the driver staged it */
    }
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(back + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CK(cuStreamSynchronize(s));
    expect("pageable round trip", back, keep, N * SZ);
    free(src);
    free(keep);
    free(back);
}

/* Every direction cubatch tells apart, DIRN copies each, all through cuMemcpyAsync
 * (unified addresses) on one stream: host to device, device to device (reading
 * what those wrote), device to host, host to host (pinned on both sides), then
 * 0-byte copies between the device-to-host ones, which touch nothing, and copies
 * from pageable memory (cubatch classifies neither: "unknown"). */
enum { DIRN = 8 };
static void sc_directions(void)
{
    unsigned char *in = pinned(DIRN * SZ), *back = pinned(DIRN * SZ), *hh = pinned(DIRN * SZ);
    unsigned char *page = malloc(DIRN * SZ), *got = malloc(DIRN * SZ);
    fill(in, DIRN * SZ, 60);
    fill(page, DIRN * SZ, 61);
    CUdeviceptr d = devmem(DIRN * SZ), d2 = devmem(DIRN * SZ), d3 = devmem(DIRN * SZ);
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
#define AT(p, i) ((CUdeviceptr)(uintptr_t)(p) + (size_t)(i) * SZ)
    for (int i = 0; i < DIRN; i++)
        CK(cuMemcpyAsync(d + (size_t)i * SZ, AT(in, i), SZ, s));
    for (int i = 0; i < DIRN; i++)
        CK(cuMemcpyAsync(d2 + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    for (int i = 0; i < DIRN; i++) {
        CK(cuMemcpyAsync(AT(back, i), d2 + (size_t)i * SZ, SZ, s));
        CK(cuMemcpyAsync(d3 + (size_t)i * SZ, d2 + (size_t)i * SZ, 0, s));
    }
    for (int i = 0; i < DIRN; i++)
        CK(cuMemcpyAsync(AT(hh, i), AT(in, i), SZ, s));
    for (int i = 0; i < DIRN; i++)
        CK(cuMemcpyAsync(d3 + (size_t)i * SZ, AT(page, i), SZ, s));
#undef AT
    CK(cuStreamSynchronize(s));
    expect("host to device to device to host", back, in, DIRN * SZ);
    expect("host to host", hh, in, DIRN * SZ);
    CK(cuMemcpyDtoH_v2(got, d3, DIRN * SZ));
    expect("from pageable memory", got, page, DIRN * SZ);
    free(page);
    free(got);
}

/* cubatch_flush (include/cubatch.h), found as a program finds it: what is
 * queued goes out at the call, not at the later synchronize; a second call with
 * nothing queued submits nothing. */
static void sc_api_flush(void)
{
    int (*flush)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cubatch_flush");
    unsigned char *src = malloc(N * SZ), *out = pinned(N * SZ);
    fill(src, N * SZ, 62);
    CUdeviceptr d = devfilled(src, N * SZ);
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    for (int k = 0; k < 2; k++) {
        printf("rc: api_flush_%d %d\n", k, flush ? flush() : 0);
        printf("batches_after_api_flush_%d: %lu\n", k, sim_count("cuMemcpyBatchAsync_v2"));
    }
    CK(cuStreamSynchronize(s));
    expect("copies flushed by the program", out, src, N * SZ);
    free(src);
}

/* Copies queued, then CPU work with no CUDA call: the bound on waiting. */
static void sc_timer(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 16);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ);
    CUstream s = mkstream(0);
    unsigned long before = sim_count("cuMemcpyBatchAsync_v2");
    uint64_t t0 = virtual_now_ns();
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    /* The program computes on the CPU: time passes, no CUDA call.  Under cubatch
     * its timer must submit the run; wait for that up to 10 s of real time (the
     * timer thread may be slow to get a core on a busy machine), letting 10 us
     * of (virtual) time pass at each step. */
    unsigned long got = 0;
    for (int k = 0; shim_present() && k < 10000 && !got; k++) {
        pass_time_us(10);
        poll(NULL, 0, 1);
        got = sim_count("cuMemcpyBatchAsync_v2") - before;
    }
    printf("timer_batches: %lu\n", got);
    printf("timer_virtual_us: %llu\n", (unsigned long long)(virtual_now_ns() - t0) / 1000u);
    CK(cuStreamSynchronize(s));
    expect("after CPU work", out, src, N * SZ);
    free(src);
}

/* fork() with copies queued: the parent loses nothing, the child starts empty. */
static void sc_fork(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 17);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    unsigned long before = sim_count("cuMemcpyBatchAsync_v2");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* nothing queued here: a flush in the child submits nothing */
        int (*flush)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cubatch_flush");
        unsigned long c0 = sim_count("cuMemcpyBatchAsync_v2");
        int rc = flush ? flush() : 0;
        printf("child_flush: %d %lu\n", rc, sim_count("cuMemcpyBatchAsync_v2") - c0);
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("batches_at_fork: %lu\n", sim_count("cuMemcpyBatchAsync_v2") - before);
    CK(cuStreamSynchronize(s));
    expect("parent after fork", out, src, N * SZ);
    free(src);
}

/* Exit with copies queued and no sync: they must still be submitted. */
static void sc_exit(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 18);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    print_stats();
    printf("result: ok\n");
    fflush(stdout);
    exit(0);
}

/* Every copy's return code and the sync's, for the fault-injection runs. */
static void sc_errors(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 19);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ);
    CUstream s = mkstream(0);
    int first = 0;
    for (int i = 0; i < N; i++) {
        CUresult rc = cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s);
        if (rc && !first)
            first = rc;
    }
    CUresult rc = cuStreamSynchronize(s);
    if (rc && !first)
        first = rc;
    printf("rc: first_error %d\n", first);
    digest(out, N * SZ); /* a failed copy leaves its bytes; the same with and without */
    if (!first)
        expect("no error, all bytes", out, src, N * SZ);
    free(src);
}

/* Several threads on one shared stream and on private streams. */
struct mt { CUstream shared; CUdeviceptr d; unsigned char *out; int idx; };
static void *mt_worker(void *arg)
{
    struct mt *m = arg;
    CK(cuCtxSetCurrent(g_ctx));
    CUstream own = mkstream(0);
    for (int i = 0; i < N; i++) {
        size_t off = ((size_t)m->idx * N + (size_t)i) * 512;
        CK(cuMemcpyDtoHAsync_v2(m->out + off, m->d + off, 512, i % 3 ? m->shared : own));
    }
    CK(cuStreamSynchronize(own));
    return NULL;
}
static void sc_threads(void)
{
    enum { T = 8 };
    unsigned char *src = malloc(T * N * 512);
    fill(src, T * N * 512, 20);
    struct mt m[T];
    CUstream shared = mkstream(0);
    CUdeviceptr d = devfilled(src, T * N * 512);
    unsigned char *out = pinned(T * N * 512);
    pthread_t th[T];
    for (int t = 0; t < T; t++) {
        m[t] = (struct mt){shared, d, out, t};
        pthread_create(&th[t], NULL, mt_worker, &m[t]);
    }
    for (int t = 0; t < T; t++)
        pthread_join(th[t], NULL);
    CK(cuStreamSynchronize(shared));
    expect("threads", out, src, T * N * 512);
    free(src);
}

/* Threads that copy at once on their own streams (blocking and non-blocking),
 * on a shared stream and on their per-thread default streams, while another
 * thread synchronizes the context, copies on the legacy stream, flushes
 * through the API, lets the timer look (virtual time) and forks: every byte
 * lands where the plain run puts it.  Each thread's copies go to its own part
 * of the output; on its own streams each goes host -> device -> host, so a
 * run's hazard and every flush order matter. */
enum { ST_T = 4, ST_R = 32, ST_K = 12, ST_SZ = 1024 };
struct st {
    CUstream shared;
    CUdeviceptr src_d, work;
    const unsigned char *src_h;
    unsigned char *out;
    int idx;
};
static atomic_int st_running;
static pthread_barrier_t st_start;
static void *st_worker(void *arg)
{
    struct st *m = arg;
    CK(cuCtxSetCurrent(g_ctx));
    CUstream own_nb = mkstream(CU_STREAM_NON_BLOCKING), own_b = mkstream(0);
    CUstream streams[4] = {own_nb, own_b, CU_STREAM_PER_THREAD, m->shared};
    pthread_barrier_wait(&st_start); /* all at once */
    for (int r = 0; r < ST_R; r++) {
        for (int k = 0; k < ST_K; k++) {
            /* every third copy on the shared stream: the threads' copies meet in its run */
            CUstream s = k % 3 == 2 ? m->shared : streams[(r + m->idx) % 4];
            size_t off = (((size_t)m->idx * ST_R + (size_t)r) * ST_K + (size_t)k) * ST_SZ;
            if (s == m->shared) {
                CK(cuMemcpyDtoHAsync_v2(m->out + off, m->src_d + off, ST_SZ, s));
            } else {
                CK(cuMemcpyHtoDAsync_v2(m->work + off, m->src_h + off, ST_SZ, s));
                CK(cuMemcpyDtoHAsync_v2(m->out + off, m->work + off, ST_SZ, s));
            }
        }
        if (r % 8 == 7)
            CK(cuStreamSynchronize(streams[(r + m->idx) % 4]));
        else if (r % 5 == 4)
            pass_time_us(40); /* CPU work: the timer's looks find the runs */
    }
    for (int i = 0; i < 4; i++)
        CK(cuStreamSynchronize(streams[i]));
    CK(cuStreamDestroy_v2(own_nb));
    CK(cuStreamDestroy_v2(own_b));
    atomic_fetch_sub(&st_running, 1);
    return NULL;
}
static void *st_chaos(void *arg)
{
    (void)arg;
    CK(cuCtxSetCurrent(g_ctx));
    int (*api_flush)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cubatch_flush");
    unsigned char *h = pinned(4096);
    CUdeviceptr d = devmem(2 * 4096);
    fill(h, 4096, 31);
    for (int i = 0; i < 10 || atomic_load(&st_running) > 0; i++) {
        switch (i % 5) {
        case 0: CK(cuCtxSynchronize()); break;
        case 1: /* legacy-stream work: every blocking stream's run goes first */
            CK(cuMemcpyHtoDAsync_v2(d, h, 4096, NULL));
            CK(cuMemcpyDtoDAsync_v2(d + 4096, d, 4096, NULL));
            break;
        case 2:
            if (api_flush)
                api_flush();
            break;
        case 3: pass_time_us(30); break;
        case 4:
            if (i == 9) {
                fflush(stdout);
                pid_t pid = fork();
                if (pid == 0)
                    _exit(0);
                int st;
                waitpid(pid, &st, 0);
            }
            break;
        }
        sched_yield();
    }
    CK(cuCtxSynchronize());
    unsigned char back[4096];
    CK(cuMemcpyDtoH_v2(back, d + 4096, 4096));
    expect("legacy copies", back, h, 4096);
    return NULL;
}
static void sc_stress(void)
{
    size_t n = (size_t)ST_T * ST_R * ST_K * ST_SZ;
    unsigned char *src = pinned(n), *out = pinned(n);
    fill(src, n, 30);
    memset(out, 0, n);
    CUstream shared = mkstream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr src_d = devfilled(src, n), work = devmem(n);
    struct st m[ST_T];
    pthread_t th[ST_T], chaos;
    pass_time_us(0); /* its lookup made here, before the threads use it */
    atomic_store(&st_running, ST_T);
    pthread_barrier_init(&st_start, NULL, ST_T);
    for (int t = 0; t < ST_T; t++) {
        m[t] = (struct st){shared, src_d, work, src, out, t};
        pthread_create(&th[t], NULL, st_worker, &m[t]);
    }
    pthread_create(&chaos, NULL, st_chaos, NULL);
    for (int t = 0; t < ST_T; t++)
        pthread_join(th[t], NULL);
    pthread_join(chaos, NULL);
    pthread_barrier_destroy(&st_start);
    CK(cuStreamSynchronize(shared));
    expect("stress", out, src, n);
}

/* Copies of one size and direction, then sync (policy, single copy, chunking). */
static void copies_then_sync(int h2d, size_t count, size_t size)
{
    unsigned char *in = pinned(count * size), *out = pinned(count * size);
    fill(in, count * size, 21);
    CUdeviceptr d = devmem(count * size);
    CUstream s = mkstream(0);
    if (h2d) {
        for (size_t i = 0; i < count; i++)
            CK(cuMemcpyHtoDAsync_v2(d + i * size, in + i * size, size, s));
        CK(cuStreamSynchronize(s));
        CK(cuMemcpyDtoH_v2(out, d, count * size));
    } else {
        CK(cuMemcpyHtoD_v2(d, in, count * size));
        for (size_t i = 0; i < count; i++)
            CK(cuMemcpyDtoHAsync_v2(out + i * size, d + i * size, size, s));
        CK(cuStreamSynchronize(s));
    }
    expect("copies", out, in, count * size);
}
static void sc_h2d_16k(void) { copies_then_sync(1, 16, 16384); }
static void sc_h2d_4k(void) { copies_then_sync(1, 16, 4096); }
static void sc_single(void) { copies_then_sync(0, 1, 4096); }
static void sc_pair(void) { copies_then_sync(0, 2, 4096); }
static void sc_d2h_20(void) { copies_then_sync(0, 20, 4096); }

/* Rule 8's notes: this thread's lone copy and its synchronize leave a note
 * that the stream's next burst may begin without the run's lock.  Another
 * thread then queues a copy on the stream (the burst is under way for it) and
 * is joined; this thread's next copy, to the same bytes, comes after that copy
 * in the program's order and must reach the driver after it too. */
struct other_copy { int upload; CUstream s; CUdeviceptr d; unsigned char *host; };
static void *other_copy_run(void *arg)
{
    struct other_copy *o = arg;
    CK(cuCtxSetCurrent(g_ctx));
    if (o->upload)
        CK(cuMemcpyHtoDAsync_v2(o->d, o->host, SZ, o->s));
    else
        CK(cuMemcpyDtoHAsync_v2(o->host, o->d, SZ, o->s));
    return NULL;
}
/* One copy of SZ bytes on stream s (upload: host to d, else d to host), queued
 * by another thread, which is joined before this returns. */
static void copy_on_other_thread(int upload, CUstream s, CUdeviceptr d, unsigned char *host)
{
    struct other_copy o = {upload, s, d, host};
    pthread_t th;
    pthread_create(&th, NULL, other_copy_run, &o);
    pthread_join(th, NULL);
}
static void lone_after_thread_on(CUstream s)
{
    unsigned char *first = pinned(SZ), *other = pinned(SZ), *last = pinned(SZ), *back = malloc(SZ);
    fill(first, SZ, 62);
    fill(other, SZ, 63);
    fill(last, SZ, 64);
    CUdeviceptr d = devmem(SZ);
    CK(cuMemcpyHtoDAsync_v2(d, first, SZ, s));
    CK(cuStreamSynchronize(s));
    copy_on_other_thread(1, s, d, other);
    CK(cuMemcpyHtoDAsync_v2(d, last, SZ, s));
    CK(cuStreamSynchronize(s));
    CK(cuMemcpyDtoH_v2(back, d, SZ));
    expect("the last copy's bytes, after the other thread's", back, last, SZ);
    free(back);
}
static void sc_lone_after_thread(void) { lone_after_thread_on(mkstream(CU_STREAM_NON_BLOCKING)); }
/* ... on the legacy stream, whose run both threads find by their (one) context */
static void sc_lone_after_thread_legacy(void) { lone_after_thread_on(CU_STREAM_LEGACY); }

/* One thread, two contexts of one device, each with its own legacy stream.  A
 * lone copy and its synchronize in one context leave the thread a note of the
 * legacy stream; the thread switches to the other context at once and makes a
 * burst there: uploads, then downloads of what they wrote, on that context's
 * legacy stream.  Each legacy run must stay its context's (cubatch keys it by
 * the current context, asked when the copy may join a run; a note of another
 * context's legacy stream may only pass a copy first).  Every byte checked in
 * each context. */
static void sc_legacy_two_contexts(void)
{
    enum { BYTES = N * SZ };
    CUdevice dev;
    CUcontext ctx[2];
    CK(cuDeviceGet(&dev, 0));
    ctx[0] = g_ctx;
    CK(cuCtxCreate_v2(&ctx[1], 0, dev));
    unsigned char *in[2], *out[2], *lone[2];
    CUdeviceptr d[2], dl[2];
    for (int c = 0; c < 2; c++) {
        CK(cuCtxSetCurrent(ctx[c]));
        in[c] = pinned(BYTES);
        out[c] = pinned(BYTES);
        lone[c] = pinned(SZ);
        fill(in[c], BYTES, 90 + (unsigned)c);
        fill(lone[c], SZ, 92 + (unsigned)c);
        d[c] = devmem(BYTES);
        dl[c] = devmem(SZ);
    }
    for (int round = 0; round < 4; round++)
        for (int c = 0; c < 2; c++) {
            int o = 1 - c;
            CK(cuCtxSetCurrent(ctx[c]));
            CK(cuMemcpyHtoDAsync_v2(dl[c], lone[c], SZ, NULL));
            CK(cuStreamSynchronize(NULL));
            CK(cuCtxSetCurrent(ctx[o]));
            for (int i = 0; i < N; i++)
                CK(cuMemcpyHtoDAsync_v2(d[o] + (size_t)i * SZ, in[o] + (size_t)i * SZ, SZ, NULL));
            for (int i = 0; i < N; i++)
                CK(cuMemcpyDtoHAsync_v2(out[o] + (size_t)i * SZ, d[o] + (size_t)i * SZ, SZ, NULL));
        }
    for (int c = 0; c < 2; c++) {
        CK(cuCtxSetCurrent(ctx[c]));
        CK(cuCtxSynchronize());
        expect(c ? "the created context's legacy stream" : "the primary context's legacy stream", out[c], in[c],
               BYTES);
        unsigned char back[SZ];
        CK(cuMemcpyDtoH_v2(back, dl[c], SZ));
        expect("a lone legacy copy", back, lone[c], SZ);
    }
    CK(cuCtxSetCurrent(g_ctx));
    CK(cuCtxDestroy_v2(ctx[1]));
    CK(cuCtxSetCurrent(g_ctx));
}

/* Copies made by a thread-exit destructor of the program's that runs after
 * cubatch's own (its key was made later, so it comes later in each round of
 * destructors): cubatch's per-thread state (counters, classified ranges, the
 * kernel's parameter block) is gone by then and must be made again, never
 * used freed.  memcheck and ASan see the difference (check_valgrind). */
struct late {
    CUdeviceptr d;
    unsigned char *in, *out;
    CUstream s;
};
static pthread_key_t g_late_key;
static void late_round_trip(struct late *l)
{
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(l->d + (size_t)i * SZ, l->in + (size_t)i * SZ, SZ, l->s));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(l->out + (size_t)i * SZ, l->d + (size_t)i * SZ, SZ, l->s));
    CK(cuStreamSynchronize(l->s));
}
static void late_destructor(void *arg) { late_round_trip(arg); }
static void *late_worker(void *arg)
{
    CK(cuCtxSetCurrent(g_ctx));
    late_round_trip(arg); /* cubatch's per-thread state is made here */
    pthread_setspecific(g_late_key, arg);
    return NULL;
}
static void sc_exit_destructor(void)
{
    struct late l = {devmem(N * SZ), pinned(N * SZ), pinned(N * SZ), mkstream(CU_STREAM_NON_BLOCKING)};
    fill(l.in, N * SZ, 41);
    late_round_trip(&l); /* cubatch makes its thread keys here, before the program's */
    pthread_key_create(&g_late_key, late_destructor);
    memset(l.out, 0, N * SZ);
    pthread_t th;
    pthread_create(&th, NULL, late_worker, &l);
    pthread_join(th, NULL);
    expect("copies from a late thread-exit destructor", l.out, l.in, N * SZ);
}

/* A framework's copy loop between many allocations: PyTorch's pinned-memory
 * allocator gives each host tensor its own, so `_foreach_copy_` of 256 tensors
 * goes between 256 host ranges.  Three rounds of host-to-device copies from 256
 * pinned buffers, then one round from 600 (more ranges than a thread keeps:
 * some are dropped, the bytes stay right).  Prints the pointer queries
 * of rounds 2 and 3: the driver is asked once per range, in round 1. */
static void sc_many_pinned(void)
{
    enum { NB = 600, NR = 256 };
    unsigned char *h[NB], *back = pinned((size_t)NB * SZ), *want = malloc((size_t)NB * SZ);
    for (int i = 0; i < NB; i++) {
        h[i] = pinned(SZ);
        fill(h[i], SZ, 40 + i);
    }
    CUdeviceptr d = devmem((size_t)NB * SZ);
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
    unsigned long later = 0;
    for (int round = 0; round < 4; round++) {
        int n = round < 3 ? NR : NB;
        unsigned long q0 = sim_count("cuPointerGetAttributes");
        for (int i = 0; i < n; i++)
            CK(cuMemcpyHtoDAsync_v2(d + (CUdeviceptr)i * SZ, h[(i + round) % n], SZ, s));
        CK(cuStreamSynchronize(s));
        if (round == 1 || round == 2)
            later += sim_count("cuPointerGetAttributes") - q0;
    }
    for (int i = 0; i < NB; i++)
        memcpy(want + (size_t)i * SZ, h[(i + 3) % NB], SZ);
    CK(cuMemcpyDtoHAsync_v2(back, d, (size_t)NB * SZ, s));
    CK(cuStreamSynchronize(s));
    expect("many_pinned", back, want, (size_t)NB * SZ);
    printf("pointer_queries_in_rounds_2_3: %lu\n", later);
    free(want);
}

/* Rule 14: a pinned allocation per block, as PyTorch gives each pinned tensor,
 * more of them than a thread's cache of driver answers holds.  Memory made
 * through the wrapped allocators is known from its allocation: the copy loop
 * asks the driver nothing. */
static void sc_pinned_per_block(void)
{
    enum { NB = 2048 };
    unsigned char **h = malloc(NB * sizeof *h), *back = pinned((size_t)NB * SZ), *want = malloc((size_t)NB * SZ);
    for (int i = 0; i < NB; i++) {
        if (i % 2) {
            CK(cuMemHostAlloc((void **)&h[i], SZ, 0));
        } else {
            h[i] = pinned(SZ);
        }
        fill(h[i], SZ, 50 + i);
        memcpy(want + (size_t)i * SZ, h[i], SZ);
    }
    CUdeviceptr d;
    CK(cuMemAlloc_v2(&d, (size_t)NB * SZ));
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
    unsigned long q0 = sim_count("cuPointerGetAttributes");
    for (int i = 0; i < NB; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (CUdeviceptr)i * SZ, h[i], SZ, s));
    CK(cuStreamSynchronize(s));
    printf("pointer_queries_in_loop: %lu\n", sim_count("cuPointerGetAttributes") - q0);
    CK(cuMemcpyDtoHAsync_v2(back, d, (size_t)NB * SZ, s));
    CK(cuStreamSynchronize(s));
    expect("pinned_per_block", back, want, (size_t)NB * SZ);
    for (int i = 0; i < NB; i++)
        CK(cuMemFreeHost(h[i]));
    free(h);
    free(want);
}

/* Rule 14: memory registered, copied from, unregistered, then copied from
 * again: the second loop's source is pageable (the program may reuse it as soon
 * as each call returns) and must not be deferred, although the table knew the
 * range as pinned a moment earlier; then registered again, it is pinned again. */
struct queued_arg { CUstream s; CUdeviceptr d; unsigned char *out; };
static void *queue_two_in(void *p)
{
    struct queued_arg *a = p;
    CK(cuCtxSetCurrent(g_ctx));
    for (int i = 0; i < 2; i++) /* the burst's first passes, the second stays queued */
        CK(cuMemcpyDtoHAsync_v2(a->out + (size_t)i * SZ, a->d + (size_t)i * SZ, SZ, a->s));
    return NULL;
}

/* With other_run, another thread's copy stays queued on its own stream while
 * the pageable pass runs: no copy of the pass is a burst's first that passes
 * unexamined (no run anywhere would hold nothing), each goes where the
 * registered pass's copies went and must find its source pageable now. */
static void unregister_pass(int other_run)
{
    unsigned char *host = aligned_alloc(4096, N * SZ), *want = malloc(N * SZ), *back = pinned(N * SZ);
    CUdeviceptr d = devmem(N * SZ);
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING), t = mkstream(CU_STREAM_NON_BLOCKING);
    struct queued_arg other = {t, d, pinned(2 * SZ)};
    for (int pass = 0; pass < 3; pass++) {
        if (pass != 1)
            CK(cuMemHostRegister_v2(host, N * SZ, 0));
        if (pass == 1 && other_run) {
            pthread_t th;
            pthread_create(&th, NULL, queue_two_in, &other);
            pthread_join(th, NULL);
        }
        for (int i = 0; i < N; i++) {
            fill(host + (size_t)i * SZ, SZ, 60 + pass * N + i);
            memcpy(want + (size_t)i * SZ, host + (size_t)i * SZ, SZ);
            CK(cuMemcpyHtoDAsync_v2(d + (CUdeviceptr)i * SZ, host + (size_t)i * SZ, SZ, s));
            if (pass == 1) /* pageable: the source may be reused at once */
                memset(host + (size_t)i * SZ, 0xEE, SZ);
        }
        if (other_run) { /* read back by a synchronous copy: each pass's copies are the last this thread queues */
            CK(cuStreamSynchronize(s));
            CK(cuMemcpyDtoH_v2(back, d, N * SZ));
        } else {
            CK(cuMemcpyDtoHAsync_v2(back, d, N * SZ, s));
            CK(cuStreamSynchronize(s));
        }
        expect(pass == 1 ? "copied while pageable" : "copied while registered", back, want, N * SZ);
        if (pass != 1)
            CK(cuMemHostUnregister(host));
    }
    CK(cuStreamSynchronize(t));
    free(host);
    free(want);
}
static void sc_unregister_forgets(void) { unregister_pass(0); }
static void sc_unregister_known(void) { unregister_pass(1); }

/* A stream's copies between two allocations, while another thread's run is
 * queued: the last runs past the end of its device memory (it passes as the
 * driver's to answer, the run before it goes out); then the stream is
 * destroyed and a new one made at its handle (CUSIM_HANDLE_REUSE=1), whose
 * copies between the same allocations go to its own run, not to the
 * destroyed stream's. */
static void sc_known_edges(void)
{
    unsigned char *src = malloc((N + 1) * SZ), *in = pinned((N + 1) * SZ), *back = pinned(N * SZ);
    CUdeviceptr d = devmem(N * SZ);
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING), t = mkstream(CU_STREAM_NON_BLOCKING);
    struct queued_arg other = {t, d, pinned(2 * SZ)};
    pthread_t th;
    pthread_create(&th, NULL, queue_two_in, &other);
    pthread_join(th, NULL);
    fill(src, (N + 1) * SZ, 70);
    memcpy(in, src, (N + 1) * SZ);
    for (int i = 0; i < N - 1; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (CUdeviceptr)i * SZ, in + (size_t)i * SZ, SZ, s));
    CUresult past = cuMemcpyHtoDAsync_v2(d + (CUdeviceptr)(N - 1) * SZ, in + (size_t)(N - 1) * SZ, 2 * SZ, s);
    printf("past_end_rc: %d\n", (int)past);
    CK(cuStreamSynchronize(s));
    CK(cuMemcpyDtoH_v2(back, d, (N - 1) * SZ));
    expect("a run before a copy past its memory's end", back, src, (N - 1) * SZ);
    CK(cuStreamDestroy_v2(s));
    pthread_create(&th, NULL, queue_two_in, &other);
    pthread_join(th, NULL);
    CUstream again = mkstream(CU_STREAM_NON_BLOCKING);
    printf("stream_handle_reused: %d\n", again == s);
    fill(src, N * SZ, 71);
    memcpy(in, src, N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (CUdeviceptr)i * SZ, in + (size_t)i * SZ, SZ, again));
    CK(cuStreamSynchronize(again));
    CK(cuMemcpyDtoH_v2(back, d, N * SZ));
    expect("a new stream's copies at a destroyed one's handle", back, src, N * SZ);
    CK(cuStreamSynchronize(t));
    free(src);
}

/* Deferred 4 KiB D2H copies interleaved with 16 KiB H2D copies that the policy
 * passes through: disjoint ones do not break the run; one that overwrites what a
 * queued copy still has to read must wait for it (rule 5 across pass-through). */
static void sc_interleave(void)
{
    enum { BIG = 16384 };
    unsigned char *old = malloc(K * SZ);
    fill(old, K * SZ, 26);
    CUdeviceptr dA = devfilled(old, K * SZ), dB = devmem(K * BIG);
    unsigned char *out = pinned(K * SZ), *in = pinned(K * BIG), *back = pinned(K * BIG + K * SZ);
    fill(in, K * BIG, 27);
    CUstream s = mkstream(0);
    for (int i = 0; i < K; i++) {
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, dA + (size_t)i * SZ, SZ, s));
        CK(cuMemcpyHtoDAsync_v2(dB + (size_t)i * BIG, in + (size_t)i * BIG, BIG, s));
    }
    /* overwrites dA while the queued D2H copies have not read it yet */
    CK(cuMemcpyHtoDAsync_v2(dA, in, BIG, s));
    CK(cuMemcpyDtoHAsync_v2(back, dB, K * BIG, s));
    CK(cuMemcpyDtoHAsync_v2(back + K * BIG, dA, BIG, s));
    CK(cuStreamSynchronize(s));
    expect("read before the overwrite", out, old, K * SZ);
    expect("passed-through copies", back, in, K * BIG);
    expect("the overwrite", back + K * BIG, in, BIG);
    free(old);
}

/* Copies issued slowly (40 us apart, like a Python loop), then, after a pause, a
 * fast loop: the first pass through, the second is batched. */
static void sc_pace(void)
{
    unsigned char *src = malloc(2 * N * SZ);
    fill(src, 2 * N * SZ, 28);
    CUdeviceptr d = devfilled(src, 2 * N * SZ);
    unsigned char *out = pinned(2 * N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++) {
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
        pass_time_us(40);
    }
    pass_time_us(2000);
    for (int i = N; i < 2 * N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CK(cuStreamSynchronize(s));
    expect("slow then fast copies", out, src, 2 * N * SZ);
    free(src);
}

/* Copies queued, then the primary context is reset: they must reach the driver
 * before it goes (the call log shows the order; the memory is gone after). */
static void sc_ctx_reset(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 29);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CK(cuStreamSynchronize(s)); /* these are checked */
    digest(out, N * SZ);
    if (memcmp(out, src, N * SZ))
        g_wrong = 1, printf("result: WRONG before reset\n");
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxReset_v2(dev)); /* these must have been submitted first */
    free(src);
}

/* Copies queued on a stream of a context the program created, then that context
 * is destroyed: they must reach the driver first (the call log shows it). */
static void sc_ctx_destroy(void)
{
    CUdevice dev;
    CUcontext c2;
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate_v2(&c2, 0, dev));
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 30);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CK(cuCtxDestroy_v2(c2));
    CK(cuCtxSetCurrent(g_ctx));
    digest(src, N * SZ);
    free(src);
}

/* Copies queued, then an event recorded on the whole context (cuCtxRecordEvent)
 * and waited for: it stands for all work of the context, the queued copies too. */
static void sc_ctx_event(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 31);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ);
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
    CUevent ev;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CK(cuCtxRecordEvent(g_ctx, ev));
    CK(cuEventSynchronize(ev));
    expect("copies before a context event", out, src, N * SZ);
    free(src);
}

/* Helper state of contexts that stay alive must survive a primary-context release
 * that does not destroy anything, and one that destroys the primary context only.
 * Every side submission (another thread's per-thread-stream run flushed by this
 * thread's cuCtxSynchronize) needs cubatch's side stream in that context: the
 * count of streams created tells whether a context's helpers were forgotten. */
struct side_arg { CUcontext ctx; CUdeviceptr d; unsigned char *out; };
static void *queue_ptds_in(void *p)
{
    struct side_arg *a = p;
    CK(cuCtxSetCurrent(a->ctx));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2_ptsz(a->out + (size_t)i * SZ, a->d + (size_t)i * SZ, SZ, NULL));
    return NULL; /* thread exit: its run is flushed through the side stream */
}
static void side_submit_in(CUcontext ctx, unsigned seed)
{
    CK(cuCtxSetCurrent(ctx));
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, seed);
    struct side_arg a = {ctx, devfilled(src, N * SZ), pinned(N * SZ)};
    pthread_t th;
    pthread_create(&th, NULL, queue_ptds_in, &a);
    pthread_join(th, NULL);
    CK(cuCtxSynchronize());
    expect("per-thread copies of an exited thread", a.out, src, N * SZ);
    free(src);
}
static void sc_primary_release(void)
{
    CUdevice dev;
    CUcontext other, p2;
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate_v2(&other, 0, dev));
    side_submit_in(g_ctx, 32);
    side_submit_in(other, 33);
    unsigned long made = sim_count("cuStreamCreate");
    CK(cuDevicePrimaryCtxRetain(&p2, dev)); /* retained twice now */
    CK(cuDevicePrimaryCtxRelease_v2(dev));  /* still alive: nothing goes away */
    side_submit_in(g_ctx, 34);
    side_submit_in(other, 35);
    printf("streams_after_release_of_a_live_primary: %lu\n", sim_count("cuStreamCreate") - made);
    CK(cuDevicePrimaryCtxRelease_v2(dev));  /* the primary context goes away */
    side_submit_in(other, 36);
    printf("streams_after_primary_destroyed: %lu\n", sim_count("cuStreamCreate") - made);
    CK(cuDevicePrimaryCtxRetain(&g_ctx, dev)); /* a new primary context for the rest */
    CK(cuCtxSetCurrent(g_ctx));
}

/* The real driver gives a dead context's or stream's handle to the next one made
 * (CUSIM_HANDLE_REUSE=1 makes the simulated driver do so): nothing cubatch keyed
 * by the old one (its copy kernel's module, side stream and event pool, a
 * stream's facts) may serve the new one.  One round in a context: uploads then
 * downloads on a created stream (flags), downloads on the legacy stream, another
 * thread's per-thread copies flushed through the side stream, and timing-free
 * records riding in a run (stand-ins from the event pool); every byte checked. */
static void reuse_round(CUcontext ctx, CUstream s, unsigned seed)
{
    CK(cuCtxSetCurrent(ctx));
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, seed);
    unsigned char *in = pinned(N * SZ), *out = pinned(N * SZ);
    memcpy(in, src, N * SZ);
    CUdeviceptr d = devmem(N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, s));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CUevent ev[2];
    for (int e = 0; e < 2; e++) {
        CK(cuEventCreate(&ev[e], CU_EVENT_DISABLE_TIMING));
        CK(cuEventRecord(ev[e], s));
    }
    CK(cuStreamSynchronize(s));
    expect("a created stream's round trip", out, src, N * SZ);
    memset(out, 0xAB, N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, NULL));
    CK(cuCtxSynchronize());
    expect("the legacy stream's downloads", out, src, N * SZ);
    struct side_arg a = {ctx, d, pinned(N * SZ)};
    pthread_t th;
    pthread_create(&th, NULL, queue_ptds_in, &a);
    pthread_join(th, NULL);
    CK(cuCtxSynchronize());
    expect("per-thread copies of an exited thread", a.out, src, N * SZ);
    for (int e = 0; e < 2; e++)
        CK(cuEventDestroy_v2(ev[e]));
    free(src);
}
static void sc_ctx_reuse(void)
{
    CUdevice dev;
    CUcontext first, second;
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate_v2(&first, 0, dev));
    CUstream gone = mkstream(CU_STREAM_NON_BLOCKING); /* dies with its context */
    reuse_round(first, gone, 40);
    CK(cuCtxSetCurrent(g_ctx));
    CK(cuCtxDestroy_v2(first));
    CK(cuCtxSetCurrent(g_ctx));
    /* A blocking stream of the primary context, at the handle of the
     * non-blocking one that died: uploads deferred on it, then downloads of
     * what they wrote on the legacy stream, which follows them (rule 3). */
    CUstream s = mkstream(0);
    printf("stream_handle_reused: %d\n", s == gone);
    unsigned char *src = malloc(N * SZ), *in = pinned(N * SZ), *out = pinned(N * SZ);
    fill(src, N * SZ, 41);
    memcpy(in, src, N * SZ);
    CUdeviceptr d = devmem(N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, s));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, CU_STREAM_LEGACY));
    CK(cuStreamSynchronize(CU_STREAM_LEGACY));
    expect("legacy downloads after a reused stream's uploads", out, src, N * SZ);
    reuse_round(g_ctx, s, 42);
    CK(cuStreamDestroy_v2(s));
    /* A context at the destroyed one's handle, and a stream at a gone one's. */
    CK(cuCtxCreate_v2(&second, 0, dev));
    printf("context_handle_reused: %d\n", second == first);
    reuse_round(second, mkstream(CU_STREAM_NON_BLOCKING), 43);
    CK(cuCtxSetCurrent(g_ctx));
    CK(cuCtxDestroy_v2(second));
    CK(cuCtxSetCurrent(g_ctx));
    free(src);
}

/* cuMemcpyAsync (unified) with managed and pinned memory, both directions. */
static void sc_managed(void)
{
    CUdeviceptr m;
    CK(cuMemAllocManaged(&m, N * SZ, CU_MEM_ATTACH_GLOBAL));
    unsigned char *in = pinned(N * SZ), *out = pinned(N * SZ);
    fill(in, N * SZ, 22);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyAsync(m + (size_t)i * SZ, (CUdeviceptr)(uintptr_t)(in + (size_t)i * SZ), SZ, s));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)(out + (size_t)i * SZ), m + (size_t)i * SZ, SZ, s));
    CK(cuStreamSynchronize(s));
    expect("managed round trip", out, in, N * SZ);
}

/* A long fast loop (pipelining: the run goes out in chunks as it grows), and
 * how many times the clock was read while it was issued. */
static void sc_long_loop(void)
{
    enum { L = 1000 };
    unsigned char *src = malloc(L * 512);
    fill(src, L * 512, 33);
    CUdeviceptr d = devfilled(src, L * 512);
    unsigned char *out = pinned(L * 512);
    CUstream s = mkstream(0);
    unsigned long r0 = clock_reads();
    for (int i = 0; i < L; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * 512, d + (size_t)i * 512, 512, s));
    printf("clock_reads_in_loop: %lu\n", clock_reads() - r0);
    CK(cuStreamSynchronize(s));
    expect("long loop", out, src, L * 512);
    free(src);
}

/* A loop that never stops adding copies, 1 us apart (virtual): only the age
 * bound (CUBATCH_MAX_WAIT_US) submits its run. */
static void sc_age(void)
{
    enum { L = 3000 };
    unsigned char *src = malloc(L * 256);
    fill(src, L * 256, 34);
    CUdeviceptr d = devfilled(src, L * 256);
    unsigned char *out = pinned(L * 256);
    CUstream s = mkstream(0);
    unsigned long b0 = sim_count("cuMemcpyBatchAsync_v2");
    for (int i = 0; i < L; i++) {
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * 256, d + (size_t)i * 256, 256, s));
        pass_time_us(1);
    }
    printf("age_batches_before_sync: %lu\n", sim_count("cuMemcpyBatchAsync_v2") - b0);
    CK(cuStreamSynchronize(s));
    expect("age", out, src, L * 256);
    free(src);
}

/* Memory freed and reallocated between copies: no stale classification. */
static void sc_free_realloc(void)
{
    unsigned char *in = pinned(N * SZ), *out = pinned(N * SZ);
    fill(in, N * SZ, 23);
    CUstream s = mkstream(0);
    CUdeviceptr d = devmem(N * SZ);
    CK(cuMemcpyHtoDAsync_v2(d, in, SZ, s)); /* the first of the burst: issued at once */
    CK(cuMemcpyHtoDAsync_v2(d + SZ, in + SZ, SZ, s));
    CK(cuMemcpyHtoDAsync_v2(d + 2 * SZ, in + 2 * SZ, SZ, s));
    CK(cuMemFree_v2(d)); /* flushes first: the copies ran on live memory */
    d = devmem(N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, s));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CK(cuStreamSynchronize(s));
    expect("after free and realloc", out, in, N * SZ);
}

/* Host function ("kernel") in stream order reading what the copies wrote. */
struct hf { unsigned char *host; const unsigned char *want; int ok; };
static void CUDA_CB hostfn(void *arg)
{
    struct hf *h = arg;
    h->ok = memcmp(h->host, h->want, N * SZ) == 0;
}
static void CUDA_CB hostfn_nothing(void *arg) { (void)arg; }
static void sc_hostfunc(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 24);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ);
    CUstream s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    struct hf h = {out, src, -1};
    CK(cuLaunchHostFunc(s, hostfn, &h));
    CK(cuStreamSynchronize(s));
    printf("hostfn_saw_copies: %d\n", h.ok);
    if (h.ok != 1)
        g_wrong = 1, printf("result: WRONG host function ran before the copies\n");
    digest(out, N * SZ);
    free(src);
}

/* ---- interposition ---------------------------------------------------------------- */

static const char *lib_of(void *p)
{
    Dl_info di;
    if (!p || !dladdr(p, &di) || !di.dli_fname)
        return "-";
    const char *slash = strrchr(di.dli_fname, '/');
    return slash ? slash + 1 : di.dli_fname;
}
static const char *sym_of(void *p)
{
    Dl_info di;
    if (!p || !dladdr(p, &di) || !di.dli_sname)
        return "-";
    return di.dli_sname;
}
static void show(const char *how, const char *name, int ver, int flags, CUresult rc, int status, void *p)
{
    printf("resolve: %s %s %d %d -> rc=%d status=%d lib=%s sym=%s\n", how, name, ver, flags, (int)rc, status,
           lib_of(p), sym_of(p));
}

static void sc_resolve(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    const char *names[] = {"cuMemcpyAsync",        "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz",
                           "cuMemcpyDtoDAsync_v2", "cuStreamSynchronize",  "cuGetProcAddress",
                           "cuGetProcAddress_v2",  "cuInit",               "cuNoSuchFunction"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        show("dlsym-handle", names[i], 0, 0, 0, 0, dlsym(h, names[i]));
        show("dlsym-default", names[i], 0, 0, 0, 0, dlsym(RTLD_DEFAULT, names[i]));
        show("dlsym-next", names[i], 0, 0, 0, 0, dlsym(RTLD_NEXT, names[i]));
    }
    /* direct reference through the link */
    show("direct", "cuMemcpyHtoDAsync_v2", 0, 0, 0, 0, (void *)cuMemcpyHtoDAsync_v2);

    /* the runtime's way: resolver through dlsym, then everything through it */
    typedef CUresult (*gpa4_t)(const char *, void **, int, cuuint64_t);
    typedef CUresult (*gpa5_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    gpa5_t gpa5 = (gpa5_t)dlsym(h, "cuGetProcAddress_v2");
    gpa5_t gpa5p = (gpa5_t)dlsym(h, "cuGetProcAddress_v2_ptsz");
    gpa4_t gpa4 = (gpa4_t)dlsym(h, "cuGetProcAddress");
    printf("has_gpa_v2_ptsz: %d\n", gpa5p != NULL);
    const char *asks[] = {"cuMemcpyAsync", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemcpyDtoDAsync",
                          "cuEventRecord",  "cuStreamSynchronize", "cuLaunchKernel",  "cuMemcpyBatchAsync",
                          "cuGetProcAddress", "cuCtxSynchronize", "cuMemAlloc", "cuNoSuchFunction"};
    const int versions[] = {1000, 3020, 7000, 11030, 12000, 12080, 13000, 13010};
    for (size_t a = 0; a < sizeof asks / sizeof asks[0]; a++)
        for (size_t v = 0; v < sizeof versions / sizeof versions[0]; v++)
            for (int flags = 0; flags <= 2; flags += 2) {
                void *p = (void *)0x1;
                CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
                CUresult rc = gpa5(asks[a], &p, versions[v], (cuuint64_t)flags, &st);
                show("gpa_v2", asks[a], versions[v], flags, rc, (int)st, p);
                if (gpa5p) { /* not every driver exports it */
                    p = (void *)0x1;
                    st = (CUdriverProcAddressQueryResult)-1;
                    rc = gpa5p(asks[a], &p, versions[v], (cuuint64_t)flags, &st);
                    show("gpa_v2_ptsz", asks[a], versions[v], flags, rc, (int)st, p);
                }
                p = (void *)0x1;
                rc = gpa4(asks[a], &p, versions[v], (cuuint64_t)flags);
                show("gpa", asks[a], versions[v], flags, rc, -1, p);
            }
    /* the runtime's second step: the resolver it got for "cuGetProcAddress" */
    void *self4 = NULL, *self5 = NULL;
    gpa5("cuGetProcAddress", &self4, 11030, 0, NULL);
    gpa5("cuGetProcAddress", &self5, 12000, 0, NULL);
    void *p = NULL;
    CUresult rc = ((gpa4_t)self4)("cuMemcpyHtoDAsync", &p, 7000, 2);
    show("self4", "cuMemcpyHtoDAsync", 7000, 2, rc, -1, p);
    p = NULL;
    rc = ((gpa5_t)self5)("cuMemcpyDtoHAsync", &p, 12000, 0, NULL);
    show("self5", "cuMemcpyDtoHAsync", 12000, 0, rc, -1, p);

    /* call through what the resolver handed out: the right wrapper counts it */
    typedef CUresult (*h2d_t)(CUdeviceptr, const void *, size_t, CUstream);
    h2d_t leg = NULL, pt = NULL;
    CK(gpa5("cuMemcpyHtoDAsync", (void **)&leg, 12000, 0, NULL));
    CK(gpa5("cuMemcpyHtoDAsync", (void **)&pt, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
    unsigned char *in = pinned(SZ), *out = pinned(2 * SZ);
    fill(in, SZ, 25);
    CUdeviceptr d = devmem(2 * SZ);
    CUstream s = mkstream(0);
    CK(leg(d, in, SZ, s));
    CK(pt(d + SZ, in, SZ, NULL));
    CK(cuStreamSynchronize(s));
    CK(cuStreamSynchronize_ptsz(NULL));
    CK(cuMemcpyDtoH_v2(out, d, 2 * SZ));
    expect("through resolved pointers", out, in, SZ);
    expect("through resolved pointers (per-thread)", out + SZ, in, SZ);
}

/* ---- rule 12: copies beside compute on another stream ----------------------------------- */

/* The simulated driver's stand-in for the program's compute (tests/sim/README.md), from a
 * module of any fatbin image; on a real GPU a kernel of the same name and parameter that
 * returns at once (the scenarios then launch and capture real grids, which finish before
 * anything waits for them). */
static CUfunction compute_fn(void)
{
    static const uint32_t image[4] = {0xBA55ED50u, 0, 0, 0};
    static const char ptx[] = ".version 8.0\n.target sm_52\n.address_size 64\n"
                              ".visible .entry cusim_compute(.param .u32 polls)\n{\n ret;\n}\n";
    CUmodule m;
    CUfunction f = NULL;
    const void *img = dlsym(RTLD_DEFAULT, "cusim_count") ? (const void *)image : (const void *)ptx;
    if (cuModuleLoadData(&m, img) != CUDA_SUCCESS || cuModuleGetFunction(&f, m, "cusim_compute") != CUDA_SUCCESS)
        return NULL;
    return f;
}

/* Compute on s: `blocks_per_sm` blocks of 256 threads per SM of the device (8 fill
 * it), running until `polls` queries of s found it running, or something waits. */
static void compute_blocks(CUfunction f, CUstream s, int blocks_per_sm, unsigned polls)
{
    if (!f)
        return;
    int sms = 0;
    CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    void *params[] = {&polls};
    /* blocks_per_sm -1: one block fewer than the SMs */
    unsigned blocks = blocks_per_sm < 0 ? (unsigned)sms - 1 : (unsigned)blocks_per_sm * (unsigned)sms;
    CK(cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, s, params, NULL));
}
static void compute(CUfunction f, CUstream s, unsigned blocks_per_sm, unsigned polls)
{
    compute_blocks(f, s, (int)blocks_per_sm, polls);
}

/* The timer submits the owner's per-thread run on the side stream while its
 * thread computes on the CPU (rule 4); the owner's next copy, the first of a new
 * burst, passes through and overwrites what the last queued copy reads: it must
 * wait for the side submission like any other call naming the stream.  On the
 * simulated driver nothing runs until something waits; here cubatch's own query
 * of this per-thread stream (rule 12: a kernel filling the GPU ran there, and the
 * second upload on another stream begins a segment that asks) runs the stream,
 * and a copy not ordered after the side submission runs before it
 * (tests/fuzz/regressions/609409.ops, where the pace rule's look submitted). */
static void sc_ptds_timer_pass(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 61);
    CUdeviceptr d = devfilled(src, N * SZ), d2 = devmem(2 * SZ);
    unsigned char *out = pinned(N * SZ), *first = pinned(SZ), *up = pinned(SZ);
    fill(up, SZ, 62);
    CUstream s2 = mkstream(0);
    compute(compute_fn(), CU_STREAM_PER_THREAD, 8, 0);
    CK(cuMemcpyDtoHAsync_v2_ptsz(first, d, SZ, NULL)); /* a burst's first: passes */
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2_ptsz(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, NULL));
    /* CPU work until the timer has submitted the run (its side stream waits for
     * the run's opening): up to 10 s of real time, 10 us of virtual time a step */
    unsigned long before = sim_count("cuStreamWaitEvent"), got = 0;
    for (int k = 0; shim_present() && k < 10000 && !got; k++) {
        pass_time_us(10);
        poll(NULL, 0, 1);
        got = sim_count("cuStreamWaitEvent") - before;
    }
    printf("side_waits: %lu\n", got ? 1ul : 0ul);
    CK(cuMemcpyHtoDAsync_v2_ptsz(d + N * SZ - 1, up, 1, NULL)); /* after the queued copies' reads */
    CK(cuMemcpyHtoDAsync_v2(d2, up, SZ, s2));
    CK(cuMemcpyHtoDAsync_v2(d2 + SZ, up, SZ, s2));
    CK(cuStreamSynchronize_ptsz(NULL));
    CK(cuCtxSynchronize());
    expect("copies the timer submitted, then the owner's next copy", out, src, N * SZ);
    free(src);
}

/* Another thread switches cubatch off while the owner's per-thread run holds
 * copies: its flush submits them on the side stream (rule 4).  The owner's next
 * copy, issued as it came now that cubatch is off, overwrites what the last of
 * them reads: it must wait for that submission all the same.  The program's
 * query of its per-thread stream runs the stream on the simulated driver, so a
 * copy not ordered after the side submission runs before it. */
/* cubatch_set_enabled (include/cubatch.h), found as a program finds it; NULL
 * without cubatch. */
typedef int (*set_enabled_fn)(int);
static set_enabled_fn cubatch_switch(void) { return (set_enabled_fn)dlsym(RTLD_DEFAULT, "cubatch_set_enabled"); }

static void *switch_off_run(void *arg)
{
    CK(cuCtxSetCurrent(g_ctx));
    set_enabled_fn set = cubatch_switch();
    *(int *)arg = set ? set(0) : -1;
    return NULL;
}
static void sc_ptds_pause_pass(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 65);
    CUdeviceptr d = devfilled(src, N * SZ);
    unsigned char *out = pinned(N * SZ), *first = pinned(SZ), *up = pinned(SZ);
    fill(up, SZ, 66);
    CK(cuMemcpyDtoHAsync_v2_ptsz(first, d, SZ, NULL)); /* a burst's first: passes */
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2_ptsz(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, NULL));
    int off = 0;
    pthread_t th;
    pthread_create(&th, NULL, switch_off_run, &off);
    pthread_join(th, NULL);
    if (off != -1)
        printf("switched_off: %d\n", off);
    CK(cuMemcpyHtoDAsync_v2_ptsz(d + N * SZ - 1, up, 1, NULL)); /* after the queued copies' reads */
    CUresult q = cuStreamQuery_ptsz(NULL);
    if (q != CUDA_SUCCESS && q != CUDA_ERROR_NOT_READY)
        CK(q);
    CK(cuStreamSynchronize_ptsz(NULL));
    CK(cuCtxSynchronize());
    expect("copies submitted by another thread's switch, then the owner's next copy", out, src, N * SZ);
    set_enabled_fn set = cubatch_switch();
    if (set)
        set(1);
    free(src);
}

enum sm_mode { SM_BUSY, SM_IDLE_SYNC, SM_IDLE_EVENT, SM_IDLE_QUERY, SM_ROOM, SM_FEW, SM_BUSY_D2D, SM_BUSY_LEGACY,
               SM_LEGACY_COMPUTE, SM_DESTROYED };

/* Compute on a non-blocking stream (the legacy stream for SM_LEGACY_COMPUTE), then 64
 * copies there and back on another stream; the facts line says which engine may
 * take them (tests/check_rules.c reads the counters). */
static void sm_scenario(enum sm_mode mode)
{
    CUfunction f = compute_fn();
    CUstream a = mode == SM_LEGACY_COMPUTE ? NULL : mkstream(CU_STREAM_NON_BLOCKING);
    CUstream b = mode == SM_BUSY_LEGACY ? NULL : mkstream(mode == SM_LEGACY_COMPUTE ? 0 : CU_STREAM_NON_BLOCKING);
    unsigned char *in = pinned(N * SZ), *out = pinned(N * SZ);
    fill(in, N * SZ, 40 + mode);
    CUdeviceptr d = devmem(N * SZ), d2 = devmem(N * SZ);
    compute_blocks(f, a, mode == SM_ROOM ? 2 : mode == SM_FEW ? -1 : 8, mode == SM_IDLE_QUERY ? 3 : 1u << 30);
    if (mode == SM_IDLE_SYNC)
        CK(cuStreamSynchronize(a));
    if (mode == SM_DESTROYED) { /* its work still runs; the handle is gone */
        CK(cuStreamDestroy_v2(a));
        a = mkstream(CU_STREAM_NON_BLOCKING);
    }
    if (mode == SM_IDLE_EVENT) {
        CUevent e;
        CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
        CK(cuEventRecord(e, a));
        CK(cuEventSynchronize(e));
        CK(cuEventDestroy_v2(e));
    }
    if (mode == SM_IDLE_QUERY) {
        CUresult q;
        int polls = 0;
        while ((q = cuStreamQuery(a)) == CUDA_ERROR_NOT_READY)
            polls++;
        /* a real GPU's grid returns at once: how many polls is timing there */
        printf("rc: query %d after %d\n", (int)q, dlsym(RTLD_DEFAULT, "cusim_count") ? polls : 3);
    }
    if (mode == SM_BUSY_D2D) {
        CK(cuMemcpyHtoD_v2(d2, in, N * SZ));
        for (int i = 0; i < N; i++)
            CK(cuMemcpyDtoDAsync_v2(d + (size_t)i * SZ, d2 + (size_t)i * SZ, SZ, b));
    } else {
        for (int i = 0; i < N; i++)
            CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, b));
    }
    if (mode == SM_BUSY_D2D) { /* a run of device-to-device copies only */
        CK(cuStreamSynchronize(b));
        CK(cuMemcpyDtoH_v2(out, d, N * SZ));
    } else {
        for (int i = 0; i < N; i++)
            CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, b));
        CK(cuStreamSynchronize(b));
    }
    expect("copies beside compute", out, in, N * SZ);
    CK(cuStreamSynchronize(a));
}
static void sc_sm_busy(void) { sm_scenario(SM_BUSY); }
static void sc_sm_idle_sync(void) { sm_scenario(SM_IDLE_SYNC); }
static void sc_sm_idle_event(void) { sm_scenario(SM_IDLE_EVENT); }
static void sc_sm_idle_query(void) { sm_scenario(SM_IDLE_QUERY); }
static void sc_sm_room(void) { sm_scenario(SM_ROOM); }
static void sc_sm_few(void) { sm_scenario(SM_FEW); }
static void sc_sm_busy_d2d(void) { sm_scenario(SM_BUSY_D2D); }
static void sc_sm_busy_legacy(void) { sm_scenario(SM_BUSY_LEGACY); }
static void sc_sm_legacy_compute(void) { sm_scenario(SM_LEGACY_COMPUTE); }
static void sc_sm_destroyed(void) { sm_scenario(SM_DESTROYED); }
/* The measured choice (docs/design.md section 5): beside a kernel filling the GPU,
 * bursts of 4 KiB host-to-device copies on two streams, one from a single pinned
 * buffer, one from a pinned allocation per block; device-to-host bursts on a
 * third.  What each arm costs is the simulated driver's CUSIM_COST. */
static void sc_measured(void)
{
    enum { BURSTS = 48, NC = 96 };
    CUfunction f = compute_fn();
    CUstream a = mkstream(CU_STREAM_NON_BLOCKING), one = mkstream(CU_STREAM_NON_BLOCKING),
             per = mkstream(CU_STREAM_NON_BLOCKING), back = mkstream(CU_STREAM_NON_BLOCKING);
    unsigned char *buf = pinned(NC * SZ), *out = pinned(NC * SZ), *blk[NC];
    for (int i = 0; i < NC; i++)
        blk[i] = pinned(SZ);
    CUdeviceptr d1 = devmem(NC * SZ), d2 = devmem(NC * SZ);
    compute(f, a, 8, 1u << 30);
    for (int b = 0; b < BURSTS; b++) {
        fill(buf, NC * SZ, 70 + b);
        for (int i = 0; i < NC; i++)
            fill(blk[i], SZ, 90 + b + i);
        for (int i = 0; i < NC; i++) {
            CK(cuMemcpyHtoDAsync_v2(d1 + (size_t)i * SZ, buf + (size_t)i * SZ, SZ, one));
            CK(cuMemcpyHtoDAsync_v2(d2 + (size_t)i * SZ, blk[i], SZ, per));
        }
        CK(cuStreamSynchronize(one));
        CK(cuStreamSynchronize(per));
        for (int i = 0; i < NC; i++)
            CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d2 + (size_t)i * SZ, SZ, back));
        CK(cuStreamSynchronize(back));
        for (int i = 0; i < NC; i++)
            expect("per-block burst", out + (size_t)i * SZ, blk[i], SZ);
        CK(cuMemcpyDtoHAsync_v2(out, d1, NC * SZ, back));
        CK(cuStreamSynchronize(back));
        expect("one-buffer burst", out, buf, NC * SZ);
    }
    CK(cuStreamSynchronize(a));
}

/* The held arm (docs/design.md section 5): beside a kernel filling the GPU,
 * bursts of 4 KiB host-to-device copies from one pinned buffer, the program
 * asking the driver something (its own work) between two copies, as a
 * framework does; under CUSIM_COST's cold term a batch call after such work
 * costs more per copy than one right after another batch call.  From burst
 * `records_from` on (rule 11), a record after every copy, a query of an early
 * record mid-burst (the held run goes out there), and the burst's last record
 * waited for before its bytes are read back through the legacy stream, which
 * the non-blocking stream does not wait for: the record completes only after
 * every copy before it, held or not. */
enum { HELD_BURSTS = 48, HELD_NC = 96 };
static void held_bursts(int records_from)
{
    CUfunction f = compute_fn();
    CUstream a = mkstream(CU_STREAM_NON_BLOCKING), s = mkstream(CU_STREAM_NON_BLOCKING);
    unsigned char *buf = pinned(HELD_NC * SZ), *out = pinned(HELD_NC * SZ);
    CUdeviceptr d = devmem(HELD_NC * SZ);
    CUevent ev[HELD_NC];
    for (int i = 0; i < HELD_NC && records_from < HELD_BURSTS; i++)
        CK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
    compute(f, a, 8, 1u << 30);
    for (int b = 0; b < HELD_BURSTS; b++) {
        int records = b >= records_from;
        fill(buf, HELD_NC * SZ, 30 + b);
        for (int i = 0; i < HELD_NC; i++) {
            CUdevice dev;
            CK(cuCtxGetDevice(&dev));
            CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, buf + (size_t)i * SZ, SZ, s));
            if (records)
                CK(cuEventRecord(ev[i], s));
            if (records && i == 40) {
                CUresult q = cuEventQuery(ev[10]);
                if (q != CUDA_SUCCESS && q != CUDA_ERROR_NOT_READY)
                    CK(q);
            }
        }
        if (records) {
            CK(cuEventSynchronize(ev[HELD_NC - 1]));
            CK(cuMemcpyDtoH_v2(out, d, HELD_NC * SZ));
            expect("held burst read after its last record", out, buf, HELD_NC * SZ);
        } else {
            CK(cuStreamSynchronize(s));
            CK(cuMemcpyDtoHAsync_v2(out, d, HELD_NC * SZ, s));
            CK(cuStreamSynchronize(s));
            expect("held burst", out, buf, HELD_NC * SZ);
        }
        CK(cuStreamSynchronize(s));
    }
    CK(cuStreamSynchronize(a));
}
static void sc_measured_cold(void) { held_bursts(HELD_BURSTS); }
static void sc_held_records(void) { held_bursts(HELD_BURSTS / 2); }

/* A verdict on the GPU's load answers later questions only while nothing it
 * depends on changed (smwork.c, cb_smwork_note_busy).  sm_busy_later: compute
 * on the copies' own stream (which they would wait for anyway) leaves the GPU
 * free for them: the first run goes to the copy kernel; then compute on
 * another stream fills the GPU, and the second run must keep off the kernel. */
static void sc_sm_busy_later(void)
{
    CUfunction f = compute_fn();
    CUstream a = mkstream(CU_STREAM_NON_BLOCKING), b = mkstream(CU_STREAM_NON_BLOCKING);
    unsigned char *in = pinned(N * SZ), *out = pinned(N * SZ);
    fill(in, N * SZ, 51);
    CUdeviceptr d = devmem(N * SZ);
    compute(f, b, 8, 3);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, b));
    CK(cuStreamSynchronize(b));
    compute(f, a, 8, 1u << 30);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, b));
    CK(cuStreamSynchronize(b));
    expect("copies before and beside compute", out, in, N * SZ);
    CK(cuStreamSynchronize(a));
}
/* sm_busy_ends: compute on another stream that runs on for two queries; 256
 * host-to-device copies, 100 us of CPU work every 16: once the copies found it
 * busy they pass through, and a verdict is asked again after a bounded number
 * of copies, so they find it finished and batch again. */
static void sc_sm_busy_ends(void)
{
    enum { NB = 256 };
    CUfunction f = compute_fn();
    CUstream a = mkstream(CU_STREAM_NON_BLOCKING), b = mkstream(CU_STREAM_NON_BLOCKING);
    unsigned char *in = pinned(NB * SZ), *out = pinned(NB * SZ);
    fill(in, NB * SZ, 52);
    CUdeviceptr d = devmem(NB * SZ);
    compute(f, a, 8, 2);
    for (int i = 0; i < NB; i++) {
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, b));
        if (i % 16 == 15)
            pass_time_us(100);
    }
    CK(cuStreamSynchronize(b));
    CK(cuMemcpyDtoH_v2(out, d, NB * SZ));
    expect("copies while compute ends", out, in, NB * SZ);
    CK(cuStreamSynchronize(a));
}

/* sm_busy_turns: the same compute; downloads and uploads take turns on a
 * stream.  Each upload finds a download queued, so it asks the verdict without
 * taking its answers for a spell (the download goes out first, and its
 * submission asks too), 100 us of CPU work every 8 turns: the answers run out
 * all the same, and the verdict is asked again. */
static void sc_sm_busy_turns(void)
{
    enum { NB = 128 };
    CUfunction f = compute_fn();
    CUstream a = mkstream(CU_STREAM_NON_BLOCKING), b = mkstream(CU_STREAM_NON_BLOCKING);
    unsigned char *in = pinned(NB * SZ), *out = pinned(NB * SZ);
    fill(in, NB * SZ, 53);
    CUdeviceptr d = devfilled(in, NB * SZ), e = devmem(NB * SZ);
    compute(f, a, 8, 2);
    for (int i = 0; i < NB; i++) {
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, b));
        CK(cuMemcpyHtoDAsync_v2(e + (size_t)i * SZ, in + (size_t)i * SZ, SZ, b));
        if (i % 8 == 7)
            pass_time_us(100);
    }
    CK(cuStreamSynchronize(b));
    expect("downloads taking turns with uploads", out, in, NB * SZ);
    CK(cuMemcpyDtoH_v2(out, e, NB * SZ));
    expect("uploads taking turns with downloads", out, in, NB * SZ);
    CK(cuStreamSynchronize(a));
}

/* Pass spells (notes.h): beside compute filling the GPU, uploads pass through,
 * the stream's later ones by the thread's spell.  A download queued on the
 * stream meanwhile (not an upload: deferred) must go before the next upload,
 * which reads what it writes; and a call naming the stream ends the spell. */
/* Compute filling the GPU on a new stream (*a), then NB uploads of in's blocks
 * to d on stream b: once one passed, the later ones pass on the spell. */
enum { SPELL_NB = 64 };
static void spell_uploads(CUstream *a, CUstream b, unsigned char *in, unsigned seed, CUdeviceptr d)
{
    CUfunction f = compute_fn();
    *a = mkstream(CU_STREAM_NON_BLOCKING);
    fill(in, SPELL_NB * SZ, seed);
    compute(f, *a, 8, 1u << 30);
    for (int i = 0; i < SPELL_NB; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, b));
}
static void sc_spell_queued(void)
{
    CUstream a, b = mkstream(CU_STREAM_NON_BLOCKING);
    unsigned char *in = pinned(SPELL_NB * SZ), *back = pinned(SZ), *out = pinned(2 * SZ);
    memset(back, 0, SZ);
    CUdeviceptr d = devmem(SPELL_NB * SZ), d2 = devmem(2 * SZ);
    spell_uploads(&a, b, in, 53, d);
    CK(cuMemcpyDtoHAsync_v2(back, d + 5 * SZ, SZ, b));
    CK(cuMemcpyHtoDAsync_v2(d2, back, SZ, b));
    (void)cuStreamQuery(b); /* names the stream: the spell ends */
    CK(cuMemcpyHtoDAsync_v2(d2 + SZ, in + 6 * SZ, SZ, b));
    CK(cuStreamSynchronize(b));
    CK(cuMemcpyDtoH_v2(out, d2, 2 * SZ));
    expect("an upload after a queued download", out, in + 5 * SZ, 2 * SZ);
    CK(cuStreamSynchronize(a));
}

/* ... the download queued by another thread, joined before the next upload:
 * the spell this thread holds must see the stream's run hold it. */
static void sc_spell_thread(void)
{
    CUstream a, b = mkstream(CU_STREAM_NON_BLOCKING);
    unsigned char *in = pinned(SPELL_NB * SZ), *back = pinned(SZ), *out = pinned(SZ);
    memset(back, 0, SZ);
    CUdeviceptr d = devmem(SPELL_NB * SZ), d2 = devmem(SZ);
    spell_uploads(&a, b, in, 54, d);
    copy_on_other_thread(0, b, d + 9 * SZ, back);
    CK(cuMemcpyHtoDAsync_v2(d2, back, SZ, b));
    CK(cuStreamSynchronize(b));
    CK(cuMemcpyDtoH_v2(out, d2, SZ));
    expect("an upload after another thread's queued download", out, in + 9 * SZ, SZ);
    CK(cuStreamSynchronize(a));
}

/* ... a call naming the stream while this thread holds a spell on it.  The
 * compute runs on for one query of its stream.  Three rounds of SPELL_ROUND
 * uploads: the first round's rest joins a run, whose submission at the
 * synchronize finds the GPU busy; in the second, the second upload's verdict
 * (busy) hands its remaining answers to a spell, and the rest pass on it; a
 * query names the stream with the spell's count far from used up, then 300 us
 * of CPU work pass (the busy verdict's trust ends).  The query ends the spell
 * as it ends the burst (rule 8): the third round's first upload begins a new
 * burst, its second asks the verdict again, finds the compute done, and the
 * round's rest joins a run; a spell that outlived the query would pass them
 * all (check_rules counts them). */
enum { SPELL_ROUND = 8 };
static void sc_spell_named(void)
{
    CUstream a = mkstream(CU_STREAM_NON_BLOCKING), b = mkstream(CU_STREAM_NON_BLOCKING);
    unsigned char *in = pinned(3 * SPELL_ROUND * SZ), *out = pinned(3 * SPELL_ROUND * SZ);
    CUdeviceptr d = devmem(3 * SPELL_ROUND * SZ);
    fill(in, 3 * SPELL_ROUND * SZ, 55);
    compute(compute_fn(), a, 8, 1);
    for (int i = 0; i < 3 * SPELL_ROUND; i++) {
        if (i == SPELL_ROUND)
            CK(cuStreamSynchronize(b));
        if (i == 2 * SPELL_ROUND) {
            (void)cuStreamQuery(b); /* names the stream: the spell ends */
            pass_time_us(300);
        }
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, b));
    }
    CK(cuStreamSynchronize(b));
    CK(cuMemcpyDtoH_v2(out, d, 3 * SPELL_ROUND * SZ));
    expect("uploads around calls naming their stream", out, in, 3 * SPELL_ROUND * SZ);
    CK(cuStreamSynchronize(a));
}

/* The measured choice before it has measured anything: compute fills the GPU
 * from another stream, and a small grid on the copies' own stream holds back
 * everything behind it (cubatch's timing events too) for 40 queries.  Sixteen
 * bursts of host-to-device copies, each ended by a query of the stream: the
 * first samples stay under way throughout, and the segments begun meanwhile
 * go to the batch API (docs/design.md, section 5). */
static void sc_measured_unsampled(void)
{
    enum { BURSTS = 16, NC = 32 };
    CUfunction f = compute_fn();
    CUstream a = mkstream(CU_STREAM_NON_BLOCKING), one = mkstream(CU_STREAM_NON_BLOCKING);
    unsigned char *in = pinned(BURSTS * NC * SZ), *out = pinned(BURSTS * NC * SZ);
    fill(in, BURSTS * NC * SZ, 53);
    CUdeviceptr d = devmem(BURSTS * NC * SZ);
    compute(f, a, 8, 1u << 30);
    compute(f, one, 1, 40);
    for (int b = 0; b < BURSTS; b++) {
        for (int i = 0; i < NC; i++) {
            size_t at = ((size_t)b * NC + (size_t)i) * SZ;
            CK(cuMemcpyHtoDAsync_v2(d + at, in + at, SZ, one));
        }
        CUresult q = cuStreamQuery(one);
        if (q != CUDA_SUCCESS && q != CUDA_ERROR_NOT_READY)
            CK(q);
    }
    CK(cuStreamSynchronize(one));
    CK(cuMemcpyDtoH_v2(out, d, BURSTS * NC * SZ));
    expect("bursts before any sample", out, in, BURSTS * NC * SZ);
    CK(cuStreamSynchronize(a));
}

/* ---- rule 13: cubatch's own calls while the program captures ------------------------------ */

static const struct { CUstreamCaptureMode mode; const char *name; } cap_modes[] = {
    {CU_STREAM_CAPTURE_MODE_GLOBAL, "global"},
    {CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, "thread_local"},
    {CU_STREAM_CAPTURE_MODE_RELAXED, "relaxed"},
};
#define CAP_MODES (sizeof cap_modes / sizeof cap_modes[0])

/* End the capture of s, print what the program saw, replay the graph once. */
static void capture_end_replay(CUstream s, const char *label)
{
    CUgraph g = NULL;
    CUresult end = cuStreamEndCapture(s, &g);
    printf("rc: %s end_capture %d\n", label, (int)end);
    if (end != CUDA_SUCCESS)
        return;
    CUgraphExec ge;
    CK(cuGraphInstantiateWithFlags(&ge, g, 0));
    CK(cuGraphLaunch(ge, s));
    CK(cuStreamSynchronize(s));
    CK(cuGraphExecDestroy(ge));
    CK(cuGraphDestroy(g));
}

/* In each mode: a run queued on s, then a capture of s holding a grid that
 * fills the GPU, an event record, a small grid and copies; ended and replayed.
 * Under the defaults cubatch tracks filling launches (rule 12): the one into
 * the capturing stream must neither be asked about nor counted. */
static void sc_capture_launch(void)
{
    CUfunction f = compute_fn();
    unsigned char *in = pinned(N * SZ), *out = pinned(N * SZ);
    fill(in, N * SZ, 90);
    CUdeviceptr d = devmem(N * SZ);
    for (size_t m = 0; m < CAP_MODES; m++) {
        CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
        CUevent e;
        CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
        for (int i = 0; i < N; i++) /* deferred: the capture begin submits them */
            CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, s));
        CK(cuStreamBeginCapture_v2(s, cap_modes[m].mode));
        compute(f, s, 8, 0);
        printf("rc: %s record %d\n", cap_modes[m].name, (int)cuEventRecord(e, s));
        compute(f, s, 1, 0);
        for (int i = 0; i < N; i++) /* captured, not deferred */
            printf("%s", cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s) ? "rc: copy failed\n" : "");
        capture_end_replay(s, cap_modes[m].name);
        expect("copies captured after a filling launch", out, in, N * SZ);
        memset(out, 0xAB, N * SZ);
        CK(cuEventDestroy_v2(e));
        CK(cuStreamDestroy_v2(s));
    }
}

/* The copying thread's work while another thread (or itself) captures: runs of
 * host-to-device and device-to-host copies on its own stream t, flushed in
 * chunks, with (busy) a filling kernel still running on stream x that rule 12
 * would ask about.  Only asynchronous calls while the capture lasts: the program may
 * make no query or synchronize then (global mode: in any thread). */
struct cap_copier {
    struct xthread x;
    CUstream t;
    CUdeviceptr d;
    unsigned char *in, *out;
};
static void capture_copies(struct cap_copier *c)
{
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < N; i++)
            CK(cuMemcpyHtoDAsync_v2(c->d + (size_t)i * SZ, c->in + (size_t)i * SZ, SZ, c->t));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(c->out + (size_t)i * SZ, c->d + (size_t)i * SZ, SZ, c->t));
}
static void *cap_copier_main(void *arg)
{
    struct cap_copier *c = arg;
    CK(cuCtxSetCurrent(g_ctx));
    stage_wait(&c->x, 1); /* the capture has begun */
    capture_copies(c);
    stage_set(&c->x, 2);
    stage_wait(&c->x, 3); /* the capture has ended */
    CK(cuStreamSynchronize(c->t));
    return NULL;
}
static void capture_beside(int same_thread, int busy)
{
    CUfunction f = compute_fn();
    struct cap_copier c = {{PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, 0, 0}, NULL, 0, NULL, NULL};
    c.in = pinned(N * SZ);
    c.out = pinned(N * SZ);
    c.d = devmem(N * SZ);
    fill(c.in, N * SZ, 91);
    CUstream x = mkstream(CU_STREAM_NON_BLOCKING);
    for (size_t m = 0; m < CAP_MODES; m++) {
        c.t = mkstream(CU_STREAM_NON_BLOCKING);
        c.x.stage = 0;
        if (busy)
            compute(f, x, 8, 1u << 30); /* runs until something waits for it */
        CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
        pthread_t th;
        if (!same_thread)
            pthread_create(&th, NULL, cap_copier_main, &c);
        CK(cuStreamBeginCapture_v2(s, cap_modes[m].mode));
        compute(f, s, 1, 0);
        if (same_thread) {
            capture_copies(&c);
        } else {
            stage_set(&c.x, 1);
            stage_wait(&c.x, 2);
        }
        compute(f, s, 1, 0);
        capture_end_replay(s, cap_modes[m].name);
        if (same_thread) {
            CK(cuStreamSynchronize(c.t));
        } else {
            stage_set(&c.x, 3);
            pthread_join(th, NULL);
        }
        expect("copies beside a capture", c.out, c.in, N * SZ);
        memset(c.out, 0xAB, N * SZ);
        CK(cuStreamSynchronize(x));
        CK(cuStreamDestroy_v2(s));
        CK(cuStreamDestroy_v2(c.t));
    }
}
static void sc_capture_beside_thread(void) { capture_beside(0, 1); }
static void sc_capture_beside_own(void) { capture_beside(1, 1); }
/* Nothing else runs: the copy kernel takes the runs, and its module is not
 * loaded yet when the first capture begins. */
static void sc_capture_first_kernel(void) { capture_beside(0, 0); }
static void sc_capture_first_kernel_own(void) { capture_beside(1, 0); }

/* ---- rule 11: event records as markers ----------------------------------------------- */

/* 64 device-to-host copies on s1, each followed by a record of its own event
 * (the issue's pattern: each buffer's readiness tracked by an event); the first
 * copy goes out at once, the other copies form one run and their records join
 * it as markers.  Then one call observes the last event (or the scenario
 * does something else), and the host reads the copies' destination with no
 * other CUDA call in between: a marker submitted too late, or before its copy,
 * shows as wrong bytes. */
enum { MK = 64 };
struct marker_setup {
    CUstream s1, s2;
    CUevent ev[MK], spare;
    unsigned char *src, *out;
    CUdeviceptr d;
};
static void marker_setup(struct marker_setup *m, unsigned evflags, int records_per_copy)
{
    m->src = malloc(MK * SZ);
    fill(m->src, MK * SZ, 50);
    m->d = devfilled(m->src, MK * SZ);
    m->out = pinned(MK * SZ);
    m->s1 = mkstream(CU_STREAM_NON_BLOCKING);
    m->s2 = mkstream(CU_STREAM_NON_BLOCKING);
    for (int i = 0; i < MK; i++)
        CK(cuEventCreate(&m->ev[i], evflags));
    CK(cuEventCreate(&m->spare, evflags & ~(unsigned)CU_EVENT_INTERPROCESS));
    for (int i = 0; i < MK; i++) {
        CK(cuMemcpyDtoHAsync_v2(m->out + (size_t)i * SZ, m->d + (size_t)i * SZ, SZ, m->s1));
        for (int r = 0; r < records_per_copy; r++)
            CK(cuEventRecord(r ? m->spare : m->ev[i], m->s1));
    }
    printf("records_reaching_the_driver_before_the_observer: %lu\n", sim_count("cuEventRecord"));
}
static void marker_check(struct marker_setup *m, const char *what)
{
    expect(what, m->out, m->src, MK * SZ);
    free(m->src);
}

static void sc_marker_sync(void)
{
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_DISABLE_TIMING, 1);
    CK(cuEventSynchronize(m.ev[MK - 1]));
    marker_check(&m, "after cuEventSynchronize");
}

static void sc_marker_two(void)
{
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_DISABLE_TIMING, 2);
    CK(cuEventSynchronize(m.spare));
    marker_check(&m, "after cuEventSynchronize (two records a copy)");
}

static void sc_marker_query(void)
{
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_DISABLE_TIMING, 1);
    CUresult q;
    while ((q = cuEventQuery(m.ev[MK - 1])) == CUDA_ERROR_NOT_READY)
        ;
    printf("rc: query %d\n", (int)q);
    marker_check(&m, "after cuEventQuery");
}

/* the pending event as the end, then as the start of an elapsed time */
static void sc_marker_elapsed_end(void)
{
    struct marker_setup m;
    marker_setup(&m, 0, 1);
    CK(cuEventRecord(m.spare, m.s2)); /* s2 holds nothing: at once */
    float ms;
    CUresult r;
    while ((r = cuEventElapsedTime_v2(&ms, m.spare, m.ev[MK - 1])) == CUDA_ERROR_NOT_READY)
        ;
    printf("rc: elapsed %d\n", (int)r);
    marker_check(&m, "after cuEventElapsedTime (end event)");
}

static void sc_marker_elapsed_start(void)
{
    struct marker_setup m;
    marker_setup(&m, 0, 1);
    CK(cuEventRecord(m.spare, m.s2));
    float ms;
    CUresult r;
    while ((r = cuEventElapsedTime(&ms, m.ev[MK - 1], m.spare)) == CUDA_ERROR_NOT_READY)
        ;
    printf("rc: elapsed %d\n", (int)r);
    marker_check(&m, "after cuEventElapsedTime (start event)");
}

/* another stream waits for the pending event, and the host for that stream */
static void sc_marker_wait(void)
{
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_DISABLE_TIMING, 1);
    CK(cuStreamWaitEvent(m.s2, m.ev[MK - 1], 0));
    CK(cuStreamSynchronize(m.s2));
    marker_check(&m, "after a wait on another stream");
}

/* every event destroyed while its record is queued: then the stream's sync
 * must report what it reports without cubatch (a marker recorded after its
 * event's destroy would fail) */
static void sc_marker_destroy(void)
{
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_DISABLE_TIMING, 1);
    for (int i = MK - 1; i >= 0; i--)
        CK(cuEventDestroy_v2(m.ev[i]));
    printf("rc: sync_after_destroy %d\n", (int)cuStreamSynchronize(m.s1));
    marker_check(&m, "after destroying the events");
}

/* the pending event recorded again on an idle stream after a copy there: the
 * event then stands for that copy, not for s1's run */
static void sc_marker_rerecord(void)
{
    unsigned char *src2 = malloc(SZ), *out2 = pinned(SZ);
    fill(src2, SZ, 51);
    CUdeviceptr d2 = devfilled(src2, SZ); /* settled before the run opens */
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_DISABLE_TIMING, 1);
    CK(cuMemcpyDtoHAsync_v2(out2, d2, SZ, m.s2));
    CK(cuEventRecord(m.ev[MK - 1], m.s2));
    CK(cuEventSynchronize(m.ev[MK - 1]));
    expect("the copy the event was recorded after again", out2, src2, SZ);
    CK(cuStreamSynchronize(m.s1));
    marker_check(&m, "after the stream sync");
    free(src2);
}

/* calls the simulated driver does not execute (their return codes are compared):
 * the run holding the event's record must reach the driver before them */
static void sc_marker_ipc(void)
{
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_DISABLE_TIMING, 1);
    CUipcEventHandle h;
    printf("rc: ipc_get %d\n", (int)cuIpcGetEventHandle(&h, m.ev[MK - 1]));
    CK(cuStreamSynchronize(m.s1));
    marker_check(&m, "after the stream sync");
}

static void sc_marker_graph_node(void)
{
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_DISABLE_TIMING, 1);
    CUgraph g;
    CK(cuGraphCreate(&g, 0));
    CUgraphNode node;
    printf("rc: add_event_record_node %d\n", (int)cuGraphAddEventRecordNode(&node, g, NULL, 0, m.ev[MK - 1]));
    CK(cuStreamSynchronize(m.s1));
    marker_check(&m, "after the stream sync");
}

static void sc_marker_launch_config(void)
{
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_DISABLE_TIMING, 1);
    CUlaunchAttribute a;
    memset(&a, 0, sizeof a);
    a.id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
    a.value.launchCompletionEvent.event = m.ev[MK - 1];
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = m.s2;
    cfg.attrs = &a;
    cfg.numAttrs = 1;
    printf("rc: launch_ex %d\n", (int)cuLaunchKernelEx(&cfg, NULL, NULL, NULL));
    CK(cuStreamSynchronize(m.s1));
    marker_check(&m, "after the stream sync");
}

/* a graph launched on another stream may record or wait for any event */
static void sc_marker_graph_launch(void)
{
    CUdeviceptr dz = devmem(SZ);
    CUstream s3 = mkstream(CU_STREAM_NON_BLOCKING);
    CK(cuStreamBeginCapture_v2(s3, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(cuMemsetD8Async(dz, 7, SZ, s3));
    CUgraph g;
    CK(cuStreamEndCapture(s3, &g));
    CUgraphExec ge;
    CK(cuGraphInstantiateWithFlags(&ge, g, 0));
    CK(cuStreamSynchronize(s3));
    /* a small grid first: the SM count is known when the graph launches (a
     * graph's size stays unknown all the same) */
    compute_blocks(compute_fn(), s3, -1, 1);
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_DISABLE_TIMING, 1);
    CK(cuGraphLaunch(ge, s3));
    CK(cuStreamSynchronize(s3));
    CK(cuStreamSynchronize(m.s1));
    marker_check(&m, "after the stream sync");
}

/* records the driver must see at once: an interprocess event (another process
 * may wait for it), an external record */
static void sc_marker_interprocess(void)
{
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING, 1);
    CK(cuStreamSynchronize(m.s1));
    marker_check(&m, "after the stream sync");
}

/* one interprocess record in the middle of a run: it goes out at once, after
 * the copies before it, however the run got there */
static void sc_marker_interprocess_mid(void)
{
    unsigned char *src = malloc(N * SZ), *out = pinned(N * SZ);
    fill(src, N * SZ, 69);
    CUdeviceptr d = devfilled(src, N * SZ);
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
    CUevent ipc;
    CK(cuEventCreate(&ipc, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    for (int i = 0; i < N; i++) {
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
        if (i == N / 2)
            CK(cuEventRecord(ipc, s));
    }
    printf("records_reaching_the_driver_at_once: %lu\n", sim_count("cuEventRecord"));
    CK(cuStreamSynchronize(s));
    expect("copies around an interprocess record", out, src, N * SZ);
    free(src);
}

static void sc_marker_external(void)
{
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_DISABLE_TIMING, 0);
    /* the real driver permits external records only in a capture (401 outside
     * one): the return code is compared, and the stream waited for instead */
    CUresult rc = cuEventRecordWithFlags(m.ev[0], m.s1, CU_EVENT_RECORD_EXTERNAL);
    printf("rc: external_record %d\n", (int)rc);
    printf("records_reaching_the_driver_at_once: %lu\n", sim_count("cuEventRecordWithFlags"));
    if (rc == CUDA_SUCCESS)
        CK(cuEventSynchronize(m.ev[0]));
    else
        CK(cuStreamSynchronize(m.s1));
    marker_check(&m, "after cuEventSynchronize");
}

/* markers of another thread's per-thread stream: submitted on the side stream,
 * after the owner's earlier work, when this thread waits for the event */
struct marker_ptds {
    struct xthread x;
    CUevent ev;
};
static void *marker_ptds_owner(void *arg)
{
    struct marker_ptds *mp = arg;
    CK(cuCtxSetCurrent(g_ctx));
    for (int i = 0; i < N; i++) {
        CK(cuMemcpyDtoHAsync_v2_ptsz(mp->x.out + (size_t)i * SZ, mp->x.d + (size_t)i * SZ, SZ, NULL));
        CK(cuEventRecord_ptsz(mp->ev, NULL));
    }
    stage_set(&mp->x, 1);
    stage_wait(&mp->x, 2); /* no CUDA call until the other thread has looked */
    CK(cuStreamSynchronize_ptsz(NULL));
    return NULL;
}
static void sc_marker_ptds(void)
{
    unsigned char *src = malloc(N * SZ);
    fill(src, N * SZ, 52);
    struct marker_ptds mp = {{PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, pinned(N * SZ),
                              devfilled(src, N * SZ), 0}, NULL};
    CK(cuEventCreate(&mp.ev, CU_EVENT_DISABLE_TIMING));
    pthread_t th;
    pthread_create(&th, NULL, marker_ptds_owner, &mp);
    stage_wait(&mp.x, 1);
    CK(cuEventSynchronize(mp.ev));
    expect("another thread's per-thread stream, through its event", mp.x.out, src, N * SZ);
    stage_set(&mp.x, 2);
    pthread_join(th, NULL);
    free(src);
}

/* the legacy stream's run (the copy kernel's) with markers */
static void sc_marker_legacy(void)
{
    unsigned char *src = malloc(N * SZ), *out = pinned(N * SZ);
    fill(src, N * SZ, 53);
    CUdeviceptr d = devfilled(src, N * SZ);
    CUevent ev;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    for (int i = 0; i < N; i++) {
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, NULL));
        CK(cuEventRecord(ev, NULL));
    }
    CK(cuEventSynchronize(ev));
    expect("legacy stream, through its event", out, src, N * SZ);
    free(src);
}

/* the timer submits markers with the copies: the program computes on the CPU
 * and only then looks at its events */
static void sc_marker_timer(void)
{
    struct marker_setup m;
    marker_setup(&m, CU_EVENT_DISABLE_TIMING, 1);
    /* as sc_timer: up to 10 s of real time, 10 us of virtual time a step */
    int sim = dlsym(RTLD_DEFAULT, "cusim_count") != NULL; /* a GPU: time really passes */
    if (!sim)
        pass_time_us(2000);
    /* until the timer submits the run: its markers reach the driver (one record
     * in place of all of them unless CUBATCH_MERGE_RECORDS=0, rule 15) */
    for (int k = 0; sim && shim_present() && k < 10000 && sim_count("cuEventRecord") < 2; k++) {
        pass_time_us(10);
        poll(NULL, 0, 1);
    }
    printf("records_after_cpu_work: %lu\n", sim_count("cuEventRecord"));
    CK(cuEventSynchronize(m.ev[MK - 1]));
    marker_check(&m, "after cuEventSynchronize");
}

/* Rule 15: the run's 63 markers of timing-free events go out as one record of
 * a stand-in when another stream's wait (which runs nothing here) submits the
 * run; then a second call names another of those events, which the driver
 * never saw recorded: it must be answered as if it had been. */
static void merged_setup(struct marker_setup *m)
{
    marker_setup(m, CU_EVENT_DISABLE_TIMING, 1);
    CK(cuStreamWaitEvent(m->s2, m->ev[MK - 1], 0));
}
static void merged_done(struct marker_setup *m)
{
    CK(cuStreamSynchronize(m->s1));
    marker_check(m, "after the stream sync");
    printf("records_in_all: %lu\n", sim_count("cuEventRecord"));
}

static void sc_merged_sync(void)
{
    struct marker_setup m;
    merged_setup(&m);
    CK(cuEventSynchronize(m.ev[MK / 2]));
    expect("after cuEventSynchronize of a merged event", m.out, m.src, (MK / 2 + 1) * SZ);
    merged_done(&m);
}

static void sc_merged_query(void)
{
    struct marker_setup m;
    merged_setup(&m);
    CUresult q;
    while ((q = cuEventQuery(m.ev[MK / 2])) == CUDA_ERROR_NOT_READY)
        ;
    printf("rc: query %d\n", (int)q);
    expect("after cuEventQuery of a merged event", m.out, m.src, (MK / 2 + 1) * SZ);
    merged_done(&m);
}

/* The run holding a merged event's record went out and nothing is queued or
 * pending when a launch names that event as its completion event: the event
 * stands for the launch from then on, not for the run's stand-in (rule 15), so
 * a query finds the launch still running.  Only the simulated driver can say
 * so without timing: a real GPU's grid returns at once. */
static void sc_merged_launch_ex(void)
{
    struct marker_setup m;
    merged_setup(&m);
    CK(cuStreamSynchronize(m.s1));
    CK(cuStreamSynchronize(m.s2)); /* names s2: its wait is made */
    CUfunction f = compute_fn();
    unsigned polls = 3;
    void *params[] = {&polls};
    CUlaunchAttribute a;
    memset(&a, 0, sizeof a);
    a.id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
    a.value.launchCompletionEvent.event = m.ev[MK / 2];
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.blockDimX = 32;
    cfg.hStream = m.s2;
    cfg.attrs = &a;
    cfg.numAttrs = 1;
    CK(cuLaunchKernelEx(&cfg, f, params, NULL));
    CUresult q = cuEventQuery(m.ev[MK / 2]);
    printf("launch_ex_query: %d\n", dlsym(RTLD_DEFAULT, "cusim_count") ? (int)q : (int)CUDA_ERROR_NOT_READY);
    CK(cuEventSynchronize(m.ev[MK / 2]));
    CK(cuStreamSynchronize(m.s2));
    marker_check(&m, "after the launch");
}

static void sc_merged_wait(void)
{
    struct marker_setup m;
    merged_setup(&m);
    CUstream s3 = mkstream(CU_STREAM_NON_BLOCKING);
    CK(cuStreamWaitEvent(s3, m.ev[MK / 2], 0));
    CK(cuStreamSynchronize(s3));
    expect("after a wait for a merged event", m.out, m.src, (MK / 2 + 1) * SZ);
    merged_done(&m);
}

/* recorded again after a copy on another stream: it stands for that copy now,
 * and the other events still for the run */
static void sc_merged_rerecord(void)
{
    unsigned char *src2 = malloc(SZ), *out2 = pinned(SZ);
    fill(src2, SZ, 57);
    CUdeviceptr d2 = devfilled(src2, SZ);
    struct marker_setup m;
    merged_setup(&m);
    CUstream s3 = mkstream(CU_STREAM_NON_BLOCKING);
    CK(cuMemcpyDtoHAsync_v2(out2, d2, SZ, s3));
    CK(cuEventRecord(m.ev[MK / 2], s3));
    CK(cuEventSynchronize(m.ev[MK / 2]));
    expect("the copy the merged event was recorded after again", out2, src2, SZ);
    CK(cuEventSynchronize(m.ev[MK / 3]));
    expect("after cuEventSynchronize of another merged event", m.out, m.src, (MK / 3 + 1) * SZ);
    merged_done(&m);
    free(src2);
}

static void sc_merged_destroy(void)
{
    struct marker_setup m;
    merged_setup(&m);
    CK(cuEventDestroy_v2(m.ev[MK / 2]));
    CUevent fresh;
    CK(cuEventCreate(&fresh, CU_EVENT_DISABLE_TIMING)); /* may reuse the handle */
    printf("rc: fresh_query %d\n", (int)cuEventQuery(fresh));
    CK(cuEventSynchronize(m.ev[MK / 3]));
    expect("after cuEventSynchronize of another merged event", m.out, m.src, (MK / 3 + 1) * SZ);
    merged_done(&m);
}

/* calls that keep the event or cannot be asked of the stand-in: the event is
 * recorded for them, after the stand-in */
static void sc_merged_graph_node(void)
{
    struct marker_setup m;
    merged_setup(&m);
    CUgraph g;
    CK(cuGraphCreate(&g, 0));
    CUgraphNode node;
    printf("rc: add_event_wait_node %d\n", (int)cuGraphAddEventWaitNode(&node, g, NULL, 0, m.ev[MK / 2]));
    merged_done(&m);
}

static void sc_merged_elapsed(void)
{
    struct marker_setup m;
    merged_setup(&m);
    float ms;
    printf("rc: elapsed %d\n", (int)cuEventElapsedTime_v2(&ms, m.ev[MK / 2], m.ev[MK / 3]));
    merged_done(&m);
}

/* a capture may not wait for an event recorded outside it (it may for one never
 * recorded): the merged event must be seen recorded */
static void sc_merged_capture_wait(void)
{
    struct marker_setup m;
    merged_setup(&m);
    CUstream s3 = mkstream(CU_STREAM_NON_BLOCKING);
    CK(cuStreamBeginCapture_v2(s3, CU_STREAM_CAPTURE_MODE_GLOBAL));
    printf("rc: captured_wait %d\n", (int)cuStreamWaitEvent(s3, m.ev[MK / 2], 0));
    CUgraph g = NULL;
    printf("rc: end_capture %d\n", (int)cuStreamEndCapture(s3, &g));
    merged_done(&m);
}

/* a graph may wait for any event: every merged event is settled first */
static void sc_merged_graph_launch(void)
{
    CUdeviceptr dz = devmem(SZ);
    CUstream s3 = mkstream(CU_STREAM_NON_BLOCKING);
    CK(cuStreamBeginCapture_v2(s3, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(cuMemsetD8Async(dz, 7, SZ, s3));
    CUgraph g;
    CK(cuStreamEndCapture(s3, &g));
    CUgraphExec ge;
    CK(cuGraphInstantiateWithFlags(&ge, g, 0));
    CK(cuStreamSynchronize(s3));
    struct marker_setup m;
    merged_setup(&m);
    CK(cuGraphLaunch(ge, s3));
    CK(cuStreamSynchronize(s3));
    merged_done(&m);
}

/* Rule 16: JAX's pattern.  Each host-to-device copy on the copy stream is
 * followed by a record of its own event, and the compute stream waits for that
 * event at once; those waits ride (the copy stream's run keeps growing).  Then
 * one call names the compute stream (or the whole context, or an event a
 * pending wait names), and the compute stream's view of the copied bytes is
 * checked through a copy made after it: the pending waits must have reached
 * the driver before that call, after the run holding their records. */
enum waits_then { WT_COPY, WT_RECORD, WT_SYNC, WT_QUERY, WT_CAPTURE, WT_DESTROY, WT_RERECORD, WT_CTX_SYNC,
                  WT_GRAPH, WT_LAUNCH };
static void waits_ride(enum waits_then then)
{
    unsigned char *hsrc = pinned(N * SZ), *back = malloc(N * SZ), *src2 = malloc(SZ), *out2 = pinned(SZ);
    fill(hsrc, N * SZ, 58);
    fill(src2, SZ, 59);
    CUdeviceptr dh = devmem(N * SZ), dcopy = devmem(N * SZ), d2 = devfilled(src2, SZ);
    CUstream copy_s = mkstream(CU_STREAM_NON_BLOCKING), compute_s = mkstream(CU_STREAM_NON_BLOCKING),
             other_s = mkstream(CU_STREAM_NON_BLOCKING);
    CUevent ev[N], after;
    for (int i = 0; i < N; i++)
        CK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
    CK(cuEventCreate(&after, CU_EVENT_DISABLE_TIMING));
    CUgraphExec ge = NULL;
    if (then == WT_GRAPH) { /* made before the copies: launching it is what names the context's events */
        CUdeviceptr dz = devmem(SZ);
        CK(cuStreamBeginCapture_v2(other_s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CK(cuMemsetD8Async(dz, 7, SZ, other_s));
        CUgraph g;
        CK(cuStreamEndCapture(other_s, &g));
        CK(cuGraphInstantiateWithFlags(&ge, g, 0));
        CK(cuStreamSynchronize(other_s));
    }
    for (int i = 0; i < N; i++) {
        CK(cuMemcpyHtoDAsync_v2(dh + (size_t)i * SZ, hsrc + (size_t)i * SZ, SZ, copy_s));
        CK(cuEventRecord(ev[i], copy_s));
        CK(cuStreamWaitEvent(compute_s, ev[i], 0));
    }
    CUresult q = CUDA_SUCCESS;
    CUgraph captured = NULL;
    switch (then) {
    case WT_COPY: break; /* the copy below names it */
    case WT_RECORD: /* another stream follows the compute stream's record */
        CK(cuEventRecord(after, compute_s));
        CK(cuStreamWaitEvent(other_s, after, 0));
        break;
    case WT_SYNC: CK(cuStreamSynchronize(compute_s)); break;
    case WT_QUERY:
        while ((q = cuStreamQuery(compute_s)) == CUDA_ERROR_NOT_READY)
            ;
        printf("rc: stream_query %d\n", (int)q);
        break;
    case WT_CAPTURE: /* the waits were made before the capture: not in its graph */
        CK(cuStreamBeginCapture_v2(compute_s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        printf("rc: end_capture %d\n", (int)cuStreamEndCapture(compute_s, &captured));
        break;
    case WT_DESTROY:
        for (int i = 0; i < N; i++)
            CK(cuEventDestroy_v2(ev[i]));
        break;
    case WT_RERECORD: /* the pending waits are for the records they named, not these */
        CK(cuMemcpyDtoHAsync_v2(out2, d2, SZ, other_s));
        for (int i = 0; i < N; i++)
            CK(cuEventRecord(ev[i], other_s));
        break;
    case WT_CTX_SYNC: CK(cuCtxSynchronize()); break;
    case WT_LAUNCH: { /* the copy stream's run goes out by its own synchronize; the
                       * waits still pending are the compute stream's: its launch makes them */
        CK(cuStreamSynchronize(copy_s));
        unsigned long made = sim_count("cuStreamWaitEvent");
        compute_blocks(compute_fn(), compute_s, -1, 1);
        printf("launch_made_waits: %lu\n", sim_count("cuStreamWaitEvent") > made ? 1ul : 0ul);
        break;
    }
    case WT_GRAPH: CK(cuGraphLaunch(ge, other_s)); break;
    }
    /* what the compute stream (or the stream following its record) sees */
    CUstream seer = then == WT_RECORD ? other_s : compute_s;
    CK(cuMemcpyDtoDAsync_v2(dcopy, dh, N * SZ, seer));
    CK(cuStreamSynchronize(seer));
    CK(cuMemcpyDtoH_v2(back, dcopy, N * SZ));
    expect("the copies, as the waiting stream sees them", back, hsrc, N * SZ);
    if (then == WT_RERECORD) {
        CK(cuStreamSynchronize(other_s));
        expect("the copy before the event's new record", out2, src2, SZ);
    }
    CK(cuCtxSynchronize());
    free(back);
    free(src2);
}
static void sc_waits_copy(void) { waits_ride(WT_COPY); }
static void sc_waits_record(void) { waits_ride(WT_RECORD); }
static void sc_waits_sync(void) { waits_ride(WT_SYNC); }
static void sc_waits_query(void) { waits_ride(WT_QUERY); }
static void sc_waits_capture(void) { waits_ride(WT_CAPTURE); }
static void sc_waits_destroy(void) { waits_ride(WT_DESTROY); }
static void sc_waits_rerecord(void) { waits_ride(WT_RERECORD); }
static void sc_waits_ctx_sync(void) { waits_ride(WT_CTX_SYNC); }
static void sc_waits_launch(void) { waits_ride(WT_LAUNCH); }
static void sc_waits_graph(void) { waits_ride(WT_GRAPH); }

/* Rule 16: a wait for an event that is already complete orders nothing; one
 * recorded behind compute that still runs must still be made. */
static void sc_waits_met(void)
{
    unsigned char *hsrc = pinned(N * SZ), *back = malloc(N * SZ);
    fill(hsrc, N * SZ, 60);
    CUdeviceptr dh = devmem(N * SZ), dcopy = devmem(N * SZ);
    CUstream copy_s = mkstream(CU_STREAM_NON_BLOCKING), compute_s = mkstream(CU_STREAM_NON_BLOCKING);
    CUevent done, busy;
    CK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    CK(cuEventCreate(&busy, CU_EVENT_DISABLE_TIMING));
    CK(cuEventRecord(done, compute_s));
    CK(cuEventSynchronize(done)); /* complete */
    for (int i = 0; i < N; i++) {
        CK(cuMemcpyHtoDAsync_v2(dh + (size_t)i * SZ, hsrc + (size_t)i * SZ, SZ, copy_s));
        CK(cuStreamWaitEvent(copy_s, done, 0));
    }
    /* compute that a query finds running, then an event behind it: the copy
     * stream must wait for it, so what follows on it sees the compute's end */
    compute(compute_fn(), compute_s, 1, 1000);
    CK(cuEventRecord(busy, compute_s));
    CK(cuStreamWaitEvent(copy_s, busy, 0));
    CK(cuMemcpyDtoDAsync_v2(dcopy, dh, N * SZ, copy_s));
    CK(cuStreamSynchronize(copy_s));
    CK(cuMemcpyDtoH_v2(back, dcopy, N * SZ));
    expect("copies around waits for complete events", back, hsrc, N * SZ);
    printf("rc: busy_query_after %d\n", (int)cuEventQuery(busy));
    free(back);
}

/* Rule 16 and rule 8: the waiting stream's next copy is a burst's first (its
 * note says a synchronize named it), and the run holding the records went out
 * already (a query named the copy stream), so nothing is queued anywhere: the
 * copy may pass through at once, but only after the waits still pending for it. */
static void sc_waits_first_copy(void)
{
    unsigned char *hsrc = pinned(N * SZ), *back = malloc(N * SZ);
    fill(hsrc, N * SZ, 62);
    CUdeviceptr dh = devmem(N * SZ), dcopy = devmem(N * SZ);
    CUstream copy_s = mkstream(CU_STREAM_NON_BLOCKING), compute_s = mkstream(CU_STREAM_NON_BLOCKING);
    CUevent ev[N];
    for (int i = 0; i < N; i++)
        CK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
    CK(cuMemcpyHtoDAsync_v2(dcopy, hsrc, SZ, compute_s)); /* a burst on the waiting stream ... */
    CK(cuStreamSynchronize(compute_s));                  /* ... named since */
    for (int i = 0; i < N; i++) {
        CK(cuMemcpyHtoDAsync_v2(dh + (size_t)i * SZ, hsrc + (size_t)i * SZ, SZ, copy_s));
        CK(cuEventRecord(ev[i], copy_s));
        CK(cuStreamWaitEvent(compute_s, ev[i], 0));
    }
    /* it names the copy stream (its run goes out); whether the copies are done
     * by then is the GPU's timing, not a result to compare */
    CUresult q = cuStreamQuery(copy_s);
    if (q != CUDA_ERROR_NOT_READY)
        CK(q);
    CK(cuMemcpyDtoDAsync_v2(dcopy, dh, N * SZ, compute_s));
    CK(cuStreamSynchronize(compute_s));
    CK(cuMemcpyDtoH_v2(back, dcopy, N * SZ));
    expect("the copies, as the waiting stream's first copy sees them", back, hsrc, N * SZ);
    CK(cuCtxSynchronize());
    free(back);
}

/* TensorRT-LLM's KV-cache onboarding, as its transfer manager issues it: per
 * block, a copy from the host pool and a record of the block's own event on
 * the copy stream; the compute stream waits for each of a layer's block events,
 * then runs the layer (a kernel, and a device-to-device copy that reads the
 * blocks); the copy stream then waits for each layer and offloads its blocks
 * back to another host pool.  Rules 11, 15 and 16 together: the records ride
 * in the copy stream's runs, the compute stream's waits ride until its launch,
 * and every byte each stream reads is the plain program's. */
enum { TRT_LAYERS = 8, TRT_BLOCKS = 16, TRT_N = TRT_LAYERS * TRT_BLOCKS };
static void sc_trtllm(void)
{
    unsigned char *hpool = pinned(TRT_N * SZ), *hback = pinned(TRT_N * SZ), *out = malloc(TRT_N * SZ);
    fill(hpool, TRT_N * SZ, 61);
    CUdeviceptr dkv = devmem(TRT_N * SZ), dlayer = devmem(TRT_N * SZ);
    CUstream cs = mkstream(CU_STREAM_NON_BLOCKING), ks = mkstream(CU_STREAM_NON_BLOCKING);
    CUevent block_ev[TRT_N], layer_ev[TRT_LAYERS];
    for (int i = 0; i < TRT_N; i++)
        CK(cuEventCreate(&block_ev[i], CU_EVENT_DISABLE_TIMING));
    for (int l = 0; l < TRT_LAYERS; l++)
        CK(cuEventCreate(&layer_ev[l], CU_EVENT_DISABLE_TIMING));
    CUfunction f = compute_fn();
    for (int l = 0; l < TRT_LAYERS; l++) {
        size_t layer = (size_t)l * TRT_BLOCKS * SZ;
        for (int b = 0; b < TRT_BLOCKS; b++) {
            int i = l * TRT_BLOCKS + b;
            CK(cuMemcpyHtoDAsync_v2(dkv + (size_t)i * SZ, hpool + (size_t)i * SZ, SZ, cs));
            CK(cuEventRecord(block_ev[i], cs));
        }
        for (int b = 0; b < TRT_BLOCKS; b++)
            CK(cuStreamWaitEvent(ks, block_ev[l * TRT_BLOCKS + b], 0));
        compute(f, ks, 1, 10);
        CK(cuMemcpyDtoDAsync_v2(dlayer + layer, dkv + layer, TRT_BLOCKS * SZ, ks));
        CK(cuEventRecord(layer_ev[l], ks));
    }
    for (int l = 0; l < TRT_LAYERS; l++) {
        CK(cuStreamWaitEvent(cs, layer_ev[l], 0));
        for (int b = 0; b < TRT_BLOCKS; b++) {
            size_t at = (size_t)(l * TRT_BLOCKS + b) * SZ;
            CK(cuMemcpyDtoHAsync_v2(hback + at, dlayer + at, SZ, cs));
        }
    }
    CK(cuStreamSynchronize(cs));
    CK(cuStreamSynchronize(ks));
    CK(cuMemcpyDtoH_v2(out, dlayer, TRT_N * SZ));
    expect("the layers, as the compute stream read its blocks", out, hpool, TRT_N * SZ);
    expect("the blocks offloaded after their layers", hback, hpool, TRT_N * SZ);
    free(out);
}

/* cubatch_set_enabled: 0 submits what is queued at once, then copies pass
 * through; 1 defers again. */
static void sc_set_enabled(void)
{
    set_enabled_fn set = cubatch_switch();
    unsigned char *src = malloc(3 * N * SZ), *out = pinned(3 * N * SZ);
    fill(src, 3 * N * SZ, 56);
    CUdeviceptr d = devfilled(src, 3 * N * SZ);
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
    for (int part = 0; part < 3; part++) {
        for (int i = part * N; i < (part + 1) * N; i++)
            CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
        if (set && part < 2) {
            printf("set_enabled_returned: %d\n", set(part)); /* off after the first part, on after the second */
            printf("batches_after_set_enabled_%d: %lu\n", part, sim_count("cuMemcpyBatchAsync_v2"));
        }
    }
    CK(cuStreamSynchronize(s));
    expect("copies on, off and on again", out, src, 3 * N * SZ);
    free(src);
}

/* Lone copies (each followed by its stream's synchronize), counted: on a
 * created stream switched on, the same switched off, then on the legacy
 * stream switched on.  After the first, each is a burst's first copy that the
 * thread's note alone may pass (rule 8); switched off or on a legacy stream
 * the copy kernel may not take, it is counted as such all the same. */
static void sc_lone_counted(void)
{
    set_enabled_fn set = cubatch_switch();
    unsigned char *src = pinned(SZ), *back = malloc(SZ);
    fill(src, SZ, 65);
    CUdeviceptr d = devmem(SZ);
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
    for (int part = 0; part < 3; part++) {
        if (set)
            set(part != 1);
        CUstream on = part == 2 ? CU_STREAM_LEGACY : s;
        for (int i = 0; i < 4; i++) {
            CK(cuMemcpyHtoDAsync_v2(d, src, SZ, on));
            CK(cuStreamSynchronize(on));
        }
    }
    CK(cuMemcpyDtoH_v2(back, d, SZ));
    expect("a lone copy's bytes", back, src, SZ);
    free(back);
}

/* JAX device_put of a pytree, as recorded on an H200 (docs/design.md section 7): on
 * the host-to-device stream, between consecutive copies, nothing (about half
 * the gaps), one or two event records, or records then a wait for an event of
 * another stream; on each device-to-host stream a host function, then two
 * records, between copies.  How many host-to-device copies batch is the
 * figure (check_rules). */
static void CUDA_CB jax_host_fn(void *arg) { (void)arg; }
enum { JAXN = 512 };
static void sc_jax(void)
{
    unsigned char *hsrc = pinned(JAXN * SZ), *dout = pinned(JAXN / 2 * SZ), *back = malloc(JAXN * SZ);
    unsigned char *dsrc = malloc(JAXN / 2 * SZ);
    fill(hsrc, JAXN * SZ, 54);
    fill(dsrc, JAXN / 2 * SZ, 55);
    CUdeviceptr dh = devmem(JAXN * SZ), dd = devfilled(dsrc, JAXN / 2 * SZ);
    CUstream h2d = mkstream(CU_STREAM_NON_BLOCKING), d2h[2] = {mkstream(CU_STREAM_NON_BLOCKING),
                                                                mkstream(CU_STREAM_NON_BLOCKING)};
    enum { NE = 64 };
    CUevent ev[NE], dev_ev[2];
    for (int i = 0; i < NE; i++)
        CK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
    CK(cuEventCreate(&dev_ev[0], CU_EVENT_DISABLE_TIMING));
    CK(cuEventCreate(&dev_ev[1], CU_EVENT_DISABLE_TIMING));
    CK(cuEventRecord(dev_ev[0], d2h[0]));
    CK(cuEventRecord(dev_ev[1], d2h[1]));
    uint32_t x = 12345;
    unsigned e = 0, gaps[3] = {0, 0, 0};
    for (int i = 0; i < JAXN; i++) {
        CK(cuMemcpyHtoDAsync_v2(dh + (size_t)i * SZ, hsrc + (size_t)i * SZ, SZ, h2d));
        x = x * 1103515245u + 12345u;
        unsigned r = (x >> 16) % 100;
        if (r < 49) {
            gaps[0]++;
        } else if (r < 74) {
            gaps[1]++;
            for (unsigned k = 0; k < 1 + (x >> 8) % 2; k++)
                CK(cuEventRecord(ev[e++ % NE], h2d));
        } else {
            gaps[2]++;
            for (unsigned k = 0; k < ((x >> 8) % 2 ? 4u : 2u); k++)
                CK(cuEventRecord(ev[e++ % NE], h2d));
            CK(cuStreamWaitEvent(h2d, dev_ev[(x >> 9) % 2], 0));
        }
        if (i % 2) {
            int k = (i / 2) % 2, j = i / 2;
            CK(cuMemcpyDtoHAsync_v2(dout + (size_t)j * SZ, dd + (size_t)j * SZ, SZ, d2h[k]));
            CK(cuLaunchHostFunc(d2h[k], jax_host_fn, NULL));
            CK(cuEventRecord(dev_ev[k], d2h[k]));
            CK(cuEventRecord(ev[e++ % NE], d2h[k]));
        }
    }
    printf("jax_gaps: nothing=%u records=%u records_then_wait=%u\n", gaps[0], gaps[1], gaps[2]);
    CK(cuCtxSynchronize());
    expect("device-to-host streams", dout, dsrc, JAXN / 2 * SZ);
    CK(cuMemcpyDtoH_v2(back, dh, JAXN * SZ));
    expect("host-to-device stream", back, hsrc, JAXN * SZ);
    free(back);
    free(dsrc);
}

/* ---- rule 9 for every reason to flush -------------------------------------------------------- */

/* A deferred copy fails: the tests make the driver fail the second device-to-host
 * copy it is given, and refuse every batch and launch, so that a run's copies
 * go out one by one and the program's second copy is the one that fails, with
 * and without cubatch.  Each scenario makes its stream's run go out for one
 * reason; the program must see the driver's error at the call that made cubatch
 * flush, or, when nobody was waiting (the timer, the pace rule, fork), at its
 * stream's next call.  Printed: the first error (an rc: line, the same both
 * ways) and the call that returned it (error_at:, which differs). */
enum { EN = 16 };
struct errs {
    unsigned char *src, *out;
    CUdeviceptr d;
    CUstream s;
    CUresult first;
    char at[32];
    int copies; /* regions copied so far, from 0 */
};

static void err_note(struct errs *e, const char *at, CUresult rc)
{
    if (rc == CUDA_SUCCESS || e->first != CUDA_SUCCESS)
        return;
    e->first = rc;
    snprintf(e->at, sizeof e->at, "%s", at);
}

static void err_begin(struct errs *e, unsigned seed)
{
    memset(e, 0, sizeof *e);
    e->src = malloc((EN + 1) * SZ);
    fill(e->src, (EN + 1) * SZ, seed);
    e->d = devfilled(e->src, (EN + 1) * SZ);
    e->out = pinned((EN + 1) * SZ);
    e->s = mkstream(0);
}

/* Region i copied back, the call named `at` (NULL: "copy<i>"). */
static void err_copy(struct errs *e, int i, const char *at)
{
    char name[16];
    snprintf(name, sizeof name, "copy%d", i);
    err_note(e, at ? at : name, cuMemcpyDtoHAsync_v2(e->out + (size_t)i * SZ, e->d + (size_t)i * SZ, SZ, e->s));
    if (i >= e->copies)
        e->copies = i + 1;
}

/* The first EN regions, gap_us of (virtual) time after each copy. */
static void err_copies(struct errs *e, unsigned gap_us)
{
    for (int i = 0; i < EN; i++) {
        err_copy(e, i, NULL);
        if (gap_us)
            pass_time_us(gap_us);
    }
}

static void err_end(struct errs *e)
{
    err_note(e, "sync", cuStreamSynchronize(e->s));
    printf("rc: first_error %d\n", (int)e->first);
    printf("error_at: %s\n", e->first ? e->at : "none");
    digest(e->out, (size_t)e->copies * SZ); /* a failed copy leaves its bytes: the same both ways */
    if (!e->first)
        expect("no error, all bytes", e->out, e->src, (size_t)e->copies * SZ);
    free(e->src);
}

static void sc_err_stream(void)
{
    struct errs e;
    err_begin(&e, 60);
    err_copies(&e, 0);
    err_note(&e, "trigger", cuStreamSynchronize(e.s));
    err_end(&e);
}

static void sc_err_wait(void)
{
    struct errs e;
    err_begin(&e, 61);
    CUstream other = mkstream(CU_STREAM_NON_BLOCKING);
    CUevent ev;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CK(cuEventRecord(ev, other));
    err_copies(&e, 0);
    err_note(&e, "trigger", cuStreamWaitEvent(e.s, ev, 0));
    err_end(&e);
}

static void sc_err_event(void)
{
    struct errs e;
    err_begin(&e, 62);
    CUevent ev;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    for (int i = 0; i < EN; i++) {
        err_copy(&e, i, NULL);
        if (i == EN / 2)
            err_note(&e, "record", cuEventRecord(ev, e.s)); /* joins the run as a marker */
    }
    err_note(&e, "trigger", cuEventSynchronize(ev));
    err_end(&e);
}

static void sc_err_legacy(void)
{
    struct errs e;
    err_begin(&e, 63);
    err_copies(&e, 0); /* on a blocking stream: the legacy stream's work follows them */
    err_note(&e, "trigger", cuStreamSynchronize(CU_STREAM_LEGACY));
    err_end(&e);
}

static void sc_err_context(void)
{
    struct errs e;
    err_begin(&e, 64);
    err_copies(&e, 0);
    err_note(&e, "trigger", cuCtxSynchronize());
    err_end(&e);
}

static void sc_err_hazard(void)
{
    struct errs e;
    err_begin(&e, 65);
    err_copies(&e, 0);
    err_copy(&e, 3, "trigger"); /* writes what a queued copy writes (the same bytes) */
    err_end(&e);
}

/* With CUBATCH_MAX_BATCH=8 (the test's): the ninth copy fills the run. */
static void sc_err_full(void)
{
    struct errs e;
    err_begin(&e, 66);
    err_copies(&e, 0);
    err_end(&e);
}

static void sc_err_passthrough(void)
{
    struct errs e;
    err_begin(&e, 67);
    unsigned char *pageable = malloc(SZ);
    fill(pageable, SZ, 68);
    CUdeviceptr scratch = devmem(SZ);
    err_copies(&e, 0);
    err_note(&e, "trigger", cuMemcpyHtoDAsync_v2(scratch, pageable, SZ, e.s));
    err_end(&e);
    free(pageable);
}

/* The program computes on the CPU until cubatch's timer has submitted the run
 * (each of its copies reached the simulated driver; on a GPU, for 10 ms), then
 * makes one more copy. */
static void sc_err_timer(void)
{
    struct errs e;
    err_begin(&e, 69);
    err_copies(&e, 0);
    int steps = dlsym(RTLD_DEFAULT, "cusim_count") ? 10000 : 10;
    for (int k = 0; shim_present() && k < steps && sim_count("cuMemcpyDtoHAsync_v2") < EN; k++) {
        pass_time_us(10);
        poll(NULL, 0, 1);
    }
    err_copy(&e, EN, "after");
    err_end(&e);
}

/* Copies 40 us apart (with CUBATCH_SLOW_NS=10000, the test's): the pace rule's
 * look submits the run of the second copy, and the third passes through. */
static void sc_err_slow(void)
{
    struct errs e;
    err_begin(&e, 70);
    err_copies(&e, 40);
    err_end(&e);
}

/* fork() submits every run (the child does nothing); the parent goes on. */
static void sc_err_fork(void)
{
    struct errs e;
    err_begin(&e, 71);
    err_copies(&e, 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    int st;
    waitpid(pid, &st, 0);
    err_copy(&e, EN, "after");
    err_end(&e);
}

static void sc_err_api(void)
{
    struct errs e;
    err_begin(&e, 72);
    err_copies(&e, 0);
    int (*flush)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cubatch_flush");
    if (flush)
        err_note(&e, "trigger", (CUresult)flush());
    err_end(&e);
}

/* ---- two devices in one process ----------------------------------------------------------- */

/* Device 1's primary context (device 0's is g_ctx).  With fewer than two devices
 * (one real GPU, or the simulated driver without CUSIM_DEVICES=2) every two-device
 * scenario says so and checks nothing: the same lines with and without cubatch. */
static CUcontext g_ctx1;
static CUdevice g_dev1;

static int two_devices(void)
{
    int n = 0;
    CK(cuDeviceGetCount(&n));
    if (n < 2) {
        printf("two_devices: skipped (%d device)\n", n);
        return 0;
    }
    CK(cuDeviceGet(&g_dev1, 1));
    CK(cuDevicePrimaryCtxRetain(&g_ctx1, g_dev1));
    return 1;
}

static void on_dev(int dev) { CK(cuCtxSetCurrent(dev ? g_ctx1 : g_ctx)); }

/* The four streams a copy may name (the current context's): a created blocking
 * stream, a created non-blocking one, the legacy stream, the per-thread stream. */
enum { K_BLOCKING, K_NONBLOCKING, K_LEGACY, K_PER_THREAD, K_KINDS };
static void h2d_kind(int kind, CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    if (kind == K_PER_THREAD)
        CK(cuMemcpyHtoDAsync_v2_ptsz(dst, src, n, NULL));
    else
        CK(cuMemcpyHtoDAsync_v2(dst, src, n, kind == K_LEGACY ? NULL : s));
}
static void d2h_kind(int kind, void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    if (kind == K_PER_THREAD)
        CK(cuMemcpyDtoHAsync_v2_ptsz(dst, src, n, NULL));
    else
        CK(cuMemcpyDtoHAsync_v2(dst, src, n, kind == K_LEGACY ? NULL : s));
}

/* One device's side of a scenario: memory and streams made in its context. */
struct dev_side {
    CUstream s[K_KINDS];
    unsigned char *in, *out;
    CUdeviceptr d;
};
static void dev_side_init(struct dev_side *x, int dev, size_t bytes, unsigned seed)
{
    on_dev(dev);
    x->s[K_BLOCKING] = mkstream(0);
    x->s[K_NONBLOCKING] = mkstream(CU_STREAM_NON_BLOCKING);
    x->s[K_LEGACY] = x->s[K_PER_THREAD] = NULL;
    x->in = pinned(bytes);
    x->out = pinned(bytes);
    fill(x->in, bytes, seed);
    x->d = devmem(bytes);
}

/* Copies on each device's four streams, the devices taking turns every 8 copies
 * (a cuCtxSetCurrent switch each time): host to device, then back, each stream
 * kind in turn; then each context is synchronized and every byte checked. */
static void sc_two_streams(void)
{
    if (!two_devices())
        return;
    enum { T = 8, BYTES = K_KINDS * N * SZ };
    struct dev_side x[2];
    for (int dev = 0; dev < 2; dev++)
        dev_side_init(&x[dev], dev, BYTES, 60 + (unsigned)dev);
    for (int pass = 0; pass < 2; pass++)
        for (int kind = 0; kind < K_KINDS; kind++)
            for (int i = 0; i < N; i += T)
                for (int dev = 0; dev < 2; dev++) {
                    on_dev(dev);
                    for (int j = i; j < i + T; j++) {
                        size_t off = ((size_t)kind * N + (size_t)j) * SZ;
                        if (pass == 0)
                            h2d_kind(kind, x[dev].d + off, x[dev].in + off, SZ, x[dev].s[kind]);
                        else
                            d2h_kind(kind, x[dev].out + off, x[dev].d + off, SZ, x[dev].s[kind]);
                    }
                }
    for (int dev = 0; dev < 2; dev++) {
        on_dev(dev);
        CK(cuCtxSynchronize());
        CK(cuStreamSynchronize(x[dev].s[K_NONBLOCKING])); /* a context synchronize covers it too */
    }
    expect("device 0, four streams", x[0].out, x[0].in, BYTES);
    expect("device 1, four streams", x[1].out, x[1].in, BYTES);
    on_dev(0);
}

/* Peer copies between the devices, amid runs of their own device's copies on the
 * same stream: the program's cuMemcpyPeerAsync, and device-to-device copies
 * through unified addresses (cuMemcpyDtoDAsync_v2, cuMemcpyAsync) whose sides are
 * on different devices.  Each reads what the stream's run before it wrote. */
static void sc_two_peer(void)
{
    if (!two_devices())
        return;
    enum { BYTES = N * SZ };
    on_dev(1);
    CUdeviceptr b1 = devmem(BYTES), c1 = devmem(BYTES), u1 = devmem(BYTES), e1 = devmem(BYTES);
    CUstream s1 = mkstream(0);
    unsigned char *out1 = pinned(3 * BYTES), *in1 = pinned(BYTES);
    fill(in1, BYTES, 71);
    on_dev(0);
    CUdeviceptr a0 = devmem(BYTES), f0 = devmem(BYTES);
    CUstream s0 = mkstream(0);
    unsigned char *in0 = pinned(BYTES), *out0 = pinned(BYTES);
    fill(in0, BYTES, 70);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(a0 + (size_t)i * SZ, in0 + (size_t)i * SZ, SZ, s0));
    for (int i = 0; i < N; i++) {
        size_t o = (size_t)i * SZ;
        CK(cuMemcpyDtoDAsync_v2(b1 + o, a0 + o, SZ, s0));
        CK(cuMemcpyPeerAsync(c1 + o, g_ctx1, a0 + o, g_ctx, SZ, s0));
        CK(cuMemcpyAsync(u1 + o, a0 + o, SZ, s0));
    }
    CK(cuStreamSynchronize(s0));
    /* the other way: device 1's run, then its memory copied to device 0's */
    on_dev(1);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(e1 + (size_t)i * SZ, in1 + (size_t)i * SZ, SZ, s1));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyPeerAsync(f0 + (size_t)i * SZ, g_ctx, e1 + (size_t)i * SZ, g_ctx1, SZ, s1));
    for (int i = 0; i < N; i++) {
        size_t o = (size_t)i * SZ;
        CK(cuMemcpyDtoHAsync_v2(out1 + o, b1 + o, SZ, s1));
        CK(cuMemcpyDtoHAsync_v2(out1 + BYTES + o, c1 + o, SZ, s1));
        CK(cuMemcpyDtoHAsync_v2(out1 + 2 * BYTES + o, u1 + o, SZ, s1));
    }
    CK(cuStreamSynchronize(s1));
    expect("peer copy (DtoD)", out1, in0, BYTES);
    expect("peer copy (cuMemcpyPeerAsync)", out1 + BYTES, in0, BYTES);
    expect("peer copy (cuMemcpyAsync)", out1 + 2 * BYTES, in0, BYTES);
    on_dev(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out0 + (size_t)i * SZ, f0 + (size_t)i * SZ, SZ, s0));
    CK(cuStreamSynchronize(s0));
    expect("peer copy from device 1", out0, in1, BYTES);
}

/* Runs open on device 1 (a created non-blocking stream and the legacy stream)
 * while device 0's context is synchronized; then device 1's stream gets copies
 * that overwrite what the first run wrote: the later ones must land last.  (Non-
 * blocking streams, so that no legacy-stream rule flushes a run before.) */
static void sc_two_ctxsync(void)
{
    if (!two_devices())
        return;
    enum { BYTES = N * SZ };
    unsigned char *src1 = malloc(BYTES), *src2 = malloc(BYTES);
    fill(src1, BYTES, 72);
    fill(src2, BYTES, 73);
    on_dev(1);
    CUdeviceptr d1 = devfilled(src1, BYTES), d2 = devfilled(src2, BYTES);
    unsigned char *out1 = pinned(BYTES), *outl = pinned(BYTES);
    CUstream s1 = mkstream(CU_STREAM_NON_BLOCKING);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out1 + (size_t)i * SZ, d1 + (size_t)i * SZ, SZ, s1));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(outl + (size_t)i * SZ, d1 + (size_t)i * SZ, SZ, NULL));
    on_dev(0);
    struct dev_side x;
    dev_side_init(&x, 0, BYTES, 74);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(x.d + (size_t)i * SZ, x.in + (size_t)i * SZ, SZ, x.s[K_NONBLOCKING]));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(x.out + (size_t)i * SZ, x.d + (size_t)i * SZ, SZ, x.s[K_NONBLOCKING]));
    CK(cuCtxSynchronize()); /* device 0's context only */
    expect("device 0 after its context synchronize", x.out, x.in, BYTES);
    on_dev(1);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out1 + (size_t)i * SZ, d2 + (size_t)i * SZ, SZ, s1));
    CK(cuStreamSynchronize(s1));
    expect("device 1's stream, later copies last", out1, src2, BYTES);
    CK(cuStreamSynchronize(NULL));
    expect("device 1's legacy stream", outl, src1, BYTES);
    on_dev(0);
    free(src1);
    free(src2);
}

/* Device-to-device and pinned-memory copies on both devices, three rounds; device
 * 1's first runs go out from device 0's context synchronize (so the copy kernel,
 * if it takes them, is loaded for device 1 while device 0's context is current).
 * The facts line says how many modules were loaded (the simulated driver's count;
 * 0 on a real GPU, where tests/check_rules.c does not run). */
static void sc_two_module(void)
{
    if (!two_devices())
        return;
    enum { BYTES = N * SZ };
    struct dev_side x[2];
    CUdeviceptr src[2];
    for (int dev = 0; dev < 2; dev++) {
        dev_side_init(&x[dev], dev, BYTES, 75 + (unsigned)dev);
        src[dev] = devfilled(x[dev].in, BYTES);
    }
    unsigned long loads = sim_count("cuModuleLoadData");
    for (int round = 0; round < 3; round++) {
        for (int dev = 1; dev >= 0; dev--) {
            on_dev(dev);
            for (int i = 0; i < N; i++)
                CK(cuMemcpyDtoDAsync_v2(x[dev].d + (size_t)i * SZ, src[dev] + (size_t)i * SZ, SZ,
                                        round == 1 ? NULL : x[dev].s[K_BLOCKING]));
        }
        CK(cuCtxSynchronize()); /* device 0's: device 1's runs must still be right */
        for (int dev = 0; dev < 2; dev++) {
            on_dev(dev);
            for (int i = 0; i < N; i++)
                d2h_kind(round == 2 ? K_PER_THREAD : K_NONBLOCKING, x[dev].out + (size_t)i * SZ,
                         x[dev].d + (size_t)i * SZ, SZ, x[dev].s[K_NONBLOCKING]);
        }
        for (int dev = 0; dev < 2; dev++) {
            on_dev(dev);
            CK(cuCtxSynchronize());
            expect("a round on two devices", x[dev].out, x[dev].in, BYTES);
            memset(x[dev].out, 0, BYTES);
        }
    }
    printf("modules_loaded: %lu\n", sim_count("cuModuleLoadData") - loads);
    on_dev(0);
}

/* Runs open on both devices, then device 1's primary context goes (its last
 * release, or a reset): device 1's copies must reach the driver first, device 0's
 * runs go on untouched; then device 1 gets a new primary context and copies again. */
static void two_primary(int reset)
{
    if (!two_devices())
        return;
    enum { BYTES = N * SZ };
    struct dev_side x[2];
    for (int dev = 0; dev < 2; dev++)
        dev_side_init(&x[dev], dev, BYTES, 77 + (unsigned)dev);
    on_dev(0);
    unsigned char *late = pinned(BYTES); /* device 0's: it outlives device 1's context */
    on_dev(1);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(x[1].d + (size_t)i * SZ, x[1].in + (size_t)i * SZ, SZ, x[1].s[K_BLOCKING]));
    CK(cuStreamSynchronize(x[1].s[K_BLOCKING]));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(late + (size_t)i * SZ, x[1].d + (size_t)i * SZ, SZ, x[1].s[K_BLOCKING]));
    on_dev(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(x[0].d + (size_t)i * SZ, x[0].in + (size_t)i * SZ, SZ, x[0].s[K_BLOCKING]));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(x[0].out + (size_t)i * SZ, x[0].d + (size_t)i * SZ, SZ, NULL));
    if (reset)
        CK(cuDevicePrimaryCtxReset_v2(g_dev1));
    else
        CK(cuDevicePrimaryCtxRelease_v2(g_dev1)); /* the only retain: it goes */
    int active = 1;
    unsigned flags = 0;
    CK(cuDevicePrimaryCtxGetState(g_dev1, &flags, &active));
    printf("device1_active_after: %d\n", active);
    expect("device 1's copies before its context went", late, x[1].in, BYTES);
    /* device 0 goes on: more copies on the stream that had a run open */
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(x[0].d + (size_t)i * SZ, x[0].out + (size_t)i * SZ, SZ, x[0].s[K_BLOCKING]));
    CK(cuCtxSynchronize());
    expect("device 0 beside device 1's context going", x[0].out, x[0].in, BYTES);
    memset(x[0].out, 0, BYTES);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(x[0].out + (size_t)i * SZ, x[0].d + (size_t)i * SZ, SZ, x[0].s[K_BLOCKING]));
    CK(cuStreamSynchronize(x[0].s[K_BLOCKING]));
    expect("device 0 after device 1's context went", x[0].out, x[0].in, BYTES);
    /* a new primary context on device 1: new streams, memory, and copies */
    CK(cuDevicePrimaryCtxRetain(&g_ctx1, g_dev1));
    struct dev_side y;
    dev_side_init(&y, 1, BYTES, 79);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(y.d + (size_t)i * SZ, y.in + (size_t)i * SZ, SZ, NULL));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(y.out + (size_t)i * SZ, y.d + (size_t)i * SZ, SZ, NULL));
    CK(cuCtxSynchronize());
    expect("device 1 in its new primary context", y.out, y.in, BYTES);
    on_dev(0);
}
static void sc_two_release(void) { two_primary(0); }
static void sc_two_reset(void) { two_primary(1); }

/* A thread's per-thread-stream run on device 0 is submitted by another thread
 * (its legacy-stream work must follow it: cubatch's side stream); the owner then
 * switches to device 1 and opens a run on its per-thread stream there, switches
 * back and synchronizes its device 0 per-thread stream: the side-submitted copies
 * must be done (device 0's stream waits for them, not device 1's). */
struct switcher {
    struct xthread x;
    unsigned char *src, *out1;
    CUdeviceptr d1;
};
static void *ptds_switcher(void *arg)
{
    struct switcher *w = arg;
    on_dev(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2_ptsz(w->x.out + (size_t)i * SZ, w->x.d + (size_t)i * SZ, SZ, NULL));
    stage_set(&w->x, 1);
    stage_wait(&w->x, 2); /* the other thread's legacy-stream work */
    on_dev(1);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2_ptsz(w->out1 + (size_t)i * SZ, w->d1 + (size_t)i * SZ, SZ, NULL));
    on_dev(0);
    CK(cuStreamSynchronize_ptsz(NULL));
    expect("device 0's per-thread copies, submitted by another thread", w->x.out, w->src, N * SZ);
    on_dev(1);
    CK(cuStreamSynchronize_ptsz(NULL));
    expect("device 1's per-thread copies", w->out1, w->src, N * SZ);
    return NULL;
}
static void sc_two_ptds_switch(void)
{
    if (!two_devices())
        return;
    struct switcher w = {{PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, 0, 0}, malloc(N * SZ),
                         NULL, 0};
    fill(w.src, N * SZ, 80);
    on_dev(1);
    w.d1 = devfilled(w.src, N * SZ);
    w.out1 = pinned(N * SZ);
    on_dev(0);
    w.x.d = devfilled(w.src, N * SZ);
    w.x.out = pinned(N * SZ);
    pthread_t th;
    pthread_create(&th, NULL, ptds_switcher, &w);
    stage_wait(&w.x, 1);
    CUevent ev;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CK(cuEventRecord(ev, CU_STREAM_LEGACY)); /* follows the owner's per-thread copies */
    stage_set(&w.x, 2);
    pthread_join(th, NULL);
    CK(cuEventSynchronize(ev));
    CK(cuEventDestroy_v2(ev));
    free(w.src);
}

/* ---- functions of drivers newer than 13.0 (design.md rule 17) ----------------------
 * Run against the simulated driver acting as a newer one (CUSIM_DRIVER_VERSION).
 * The functions are fetched as the 13.5 runtime fetches them: cuGetProcAddress
 * with the version they appeared in. */
typedef CUresult(CUDAAPI *host_v2_t)(CUstream, CUhostFn, void *, unsigned int);
typedef CUresult(CUDAAPI *host_t)(CUstream, CUhostFn, void *);
typedef CUresult(CUDAAPI *attr_copy_t)(CUdeviceptr, CUdeviceptr, size_t, CUmemcpyAttributes *, CUstream);
typedef CUresult(CUDAAPI *recapture_t)(CUstream, CUstreamCaptureMode, CUgraph, void *, void *);
typedef CUresult(CUDAAPI *cig_begin_t)(CUstream, void *);
typedef CUresult(CUDAAPI *stream_t)(CUstream);

/* The driver's function for sym at version ver (NULL, said, when it has none). */
static void *proc_at(const char *sym, int ver, cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    if (cuGetProcAddress_v2(sym, &p, ver, flags, &st) != CUDA_SUCCESS || !p) {
        printf("result: WRONG %s at %d: not found\n", sym, ver);
        g_wrong = 1;
        return NULL;
    }
    return p;
}

/* Device-to-host copies of N regions into pinned memory on s, deferred under
 * cubatch; then `observe` (a host function's or a synchronize's view). */
struct newer_d2h { unsigned char *src, *out; CUdeviceptr d; CUstream s; };
static struct newer_d2h newer_d2h_begin(unsigned seed)
{
    struct newer_d2h c;
    c.src = malloc(N * SZ);
    fill(c.src, N * SZ, seed);
    c.d = devfilled(c.src, N * SZ);
    c.out = pinned(N * SZ);
    c.s = mkstream(0);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(c.out + (size_t)i * SZ, c.d + (size_t)i * SZ, SZ, c.s));
    return c;
}

/* cuLaunchHostFunc_v2 (13.1) after deferred copies: a host function (rule 11).
 * Then the per-thread stream's twin (flags 2, the NULL stream). */
static void sc_newer_hostfunc(void)
{
    struct newer_d2h c = newer_d2h_begin(80);
    host_v2_t f = (host_v2_t)proc_at("cuLaunchHostFunc", 13010, 0);
    host_v2_t fp = (host_v2_t)proc_at("cuLaunchHostFunc", 13010, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    if (!f || !fp)
        return;
    struct hf h = {c.out, c.src, -1};
    CK(f(c.s, hostfn, &h, 1));
    CK(cuStreamSynchronize(c.s));
    printf("hostfn_v2_saw_copies: %d\n", h.ok);
    digest(c.out, N * SZ);
    memset(c.out, 0, N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2_ptsz(c.out + (size_t)i * SZ, c.d + (size_t)i * SZ, SZ, NULL));
    struct hf hp = {c.out, c.src, -1};
    CK(fp(NULL, hostfn, &hp, 0));
    CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    printf("hostfn_v2_ptsz_saw_copies: %d\n", hp.ok);
    if (h.ok != 1 || hp.ok != 1)
        g_wrong = 1, printf("result: WRONG host function v2 ran before the copies\n");
    digest(c.out, N * SZ);
    free(c.src);
}

/* cuMemcpyWithAttributesAsync (13.2) between deferred copies on one stream: it
 * reads what the copies before it wrote, and a copy after it reads what it
 * wrote.  With DURING_API_CALL its pinned source is overwritten as soon as the
 * call returns: the copy must have read it during the call. */
static void sc_newer_attr_copy(void)
{
    attr_copy_t f = (attr_copy_t)proc_at("cuMemcpyWithAttributesAsync", 13020, 0);
    if (!f)
        return;
    unsigned char *in = pinned(N * SZ), *out = pinned(N * SZ), *late = pinned(SZ);
    fill(in, N * SZ, 81);
    CUdeviceptr a = devmem(N * SZ), b = devmem(N * SZ);
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(a + (size_t)i * SZ, in + (size_t)i * SZ, SZ, s));
    CUmemcpyAttributes at;
    memset(&at, 0, sizeof at);
    at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    at.srcLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
    at.dstLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CK(f(b, a, N * SZ, &at, s)); /* reads what the copies above wrote */
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, b + (size_t)i * SZ, SZ, s));
    fill(late, SZ, 82);
    unsigned char want_late[SZ];
    memcpy(want_late, late, SZ);
    CUmemcpyAttributes now = at;
    now.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    now.srcLocHint.type = CU_MEM_LOCATION_TYPE_HOST;
    CK(f(a, (CUdeviceptr)(uintptr_t)late, SZ, &now, s));
    memset(late, 0, SZ); /* the program may: the call read it */
    unsigned char *back = pinned(SZ);
    CK(cuMemcpyDtoHAsync_v2(back, a, SZ, s));
    CK(cuStreamSynchronize(s));
    expect("with-attributes copy in stream order", out, in, N * SZ);
    expect("source read during the call", back, want_late, SZ);
}

/* cuStreamBeginRecaptureToGraph (13.3): a capture into an existing graph.  The
 * copies made while it captures are captured (never deferred: a batch on a
 * capturing stream fails and leaves them out of the graph), and the graph
 * launched afterwards makes them.  Then a CIG capture (13.1), likewise never
 * deferred into. */
static void sc_newer_recapture(void)
{
    recapture_t rec = (recapture_t)proc_at("cuStreamBeginRecaptureToGraph", 13030, 0);
    cig_begin_t cig = (cig_begin_t)proc_at("cuStreamBeginCaptureToCig", 13010, 0);
    stream_t cig_end = (stream_t)proc_at("cuStreamEndCaptureToCig", 13010, 0);
    if (!rec || !cig || !cig_end)
        return;
    unsigned char *in = pinned(N * SZ), *out = pinned(N * SZ);
    fill(in, N * SZ, 83);
    CUdeviceptr d = devmem(N * SZ);
    CUstream s = mkstream(CU_STREAM_NON_BLOCKING), c = mkstream(CU_STREAM_NON_BLOCKING);
    /* both streams known to cubatch before they capture: it asks no more */
    for (int i = 0; i < N; i++) {
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, s));
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, c));
    }
    CK(cuStreamSynchronize(s));
    CK(cuStreamSynchronize(c));
    unsigned long before = sim_count("cuMemcpyBatchAsync_v2");
    memset(out, 0, N * SZ);
    CK(cuMemcpyHtoD_v2(d, out, N * SZ));
    CUgraph g;
    CK(cuGraphCreate(&g, 0));
    CK(rec(s, CU_STREAM_CAPTURE_MODE_GLOBAL, g, NULL, NULL));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, s));
    CUgraph got;
    CK(cuStreamEndCapture(s, &got));
    printf("batches_in_recapture: %lu\n", sim_count("cuMemcpyBatchAsync_v2") - before);
    CUgraphExec ge;
    CK(cuGraphInstantiateWithFlags(&ge, got, 0));
    CK(cuGraphLaunch(ge, s));
    CK(cuMemcpyDtoHAsync_v2(out, d, N * SZ, s));
    CK(cuStreamSynchronize(s));
    expect("recaptured copies", out, in, N * SZ);
    before = sim_count("cuMemcpyBatchAsync_v2");
    void *cig_param = NULL, *cig_params[1] = {&cig_param}; /* CUstreamCigCaptureParams: a pointer */
    CK(cig(c, cig_params));
    for (int i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync_v2(d + (size_t)i * SZ, in + (size_t)i * SZ, SZ, c));
    CK(cig_end(c));
    printf("batches_in_cig_capture: %lu\n", sim_count("cuMemcpyBatchAsync_v2") - before);
}

/* A host function launched through a function no CUDA header names (the
 * simulator's cuFutureLaunchHostFunc, from a 13.6-acting driver), fetched by
 * cuGetProcAddress, then by dlsym; then a newer ABI of a known name
 * (cuStreamSynchronize at 13060): each after deferred copies must see them. */
static void sc_newer_future(void)
{
    struct newer_d2h c = newer_d2h_begin(84);
    host_t f = (host_t)proc_at("cuFutureLaunchHostFunc", 13060, 0);
    host_t g = (host_t)dlsym(RTLD_DEFAULT, "cuFutureLaunchHostFunc");
    stream_t sync2 = (stream_t)proc_at("cuStreamSynchronize", 13060, 0);
    if (!f || !g || !sync2) {
        printf("result: WRONG future functions missing\n");
        g_wrong = 1;
        return;
    }
    struct hf h = {c.out, c.src, -1};
    CK(f(c.s, hostfn, &h));
    CK(cuStreamSynchronize(c.s));
    digest(c.out, N * SZ);
    memset(c.out, 0, N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(c.out + (size_t)i * SZ, c.d + (size_t)i * SZ, SZ, c.s));
    struct hf hd = {c.out, c.src, -1};
    CK(g(c.s, hostfn, &hd));
    CK(cuStreamSynchronize(c.s));
    digest(c.out, N * SZ);
    memset(c.out, 0, N * SZ);
    for (int i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync_v2(c.out + (size_t)i * SZ, c.d + (size_t)i * SZ, SZ, c.s));
    CK(sync2(c.s));
    int variant_saw = memcmp(c.out, c.src, N * SZ) == 0;
    printf("future_saw_copies: %d %d %d\n", h.ok, hd.ok, variant_saw);
    if (h.ok != 1 || hd.ok != 1 || !variant_saw)
        g_wrong = 1, printf("result: WRONG a function no table names overtook the copies\n");
    digest(c.out, N * SZ);
    free(c.src);
}

/* What the program gets for cuLaunchHostFunc_v2 by dlsym: cubatch's wrapper
 * only from a driver that has it (13.1 on), the driver's own otherwise. */
static void sc_newer_wrapped(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *p = h ? dlsym(h, "cuLaunchHostFunc_v2") : NULL;
    int v = 0;
    CK(cuDriverGetVersion(&v));
    printf("driver: %d\n", v);
    printf("host_func_v2_from: %s\n", lib_of(p));
}

/* Rule 9 for the net's flush: copies, then a function no table names (the
 * flush nobody waits for), then the next copy gets the error. */
static void sc_err_unknown(void)
{
    struct errs e;
    err_begin(&e, 73);
    err_copies(&e, 0);
    host_t f = (host_t)proc_at("cuFutureLaunchHostFunc", 13060, 0);
    if (f)
        err_note(&e, "trigger", f(e.s, hostfn_nothing, NULL));
    err_copy(&e, EN, "after");
    err_end(&e);
}

/* ---- rule 18: adjacent copies merged -------------------------------------------- */

/* Host-to-device copies of blocks on one stream (long_slow_d2d: device to
 * device), then a synchronize, the device buffer read back block by block,
 * synchronously (a driver limit of CUSIM_MAX_COPY must not refuse the check
 * itself):
 *   contiguous  1 + 63 blocks of 4K in order: both sides continue
 *   long        1 + 4095 blocks of 4K in order (16M): chunks cut by bytes
 *   long_mid    long, 1 us passing after each 32nd copy (128 GB/s: faster
 *               than the copy engines drain them)
 *   long_slow   long, 1 us passing after each copy (4 GB/s: slower than the
 *               copy engines drain them)
 *   long_slow_d2d  long between device buffers (the host blocks copied to a
 *               second device buffer first), 1 us passing after each 8th
 *               copy (32 GB/s: slower than the engines drain host memory)
 *   scattered   64 blocks of 4K: the first half to scattered places, the
 *               second half from them: one side continues, never both
 *   kv4         64 blocks of 4K in runs of 4 adjacent ones, the runs scattered
 *   big         1 + 8 blocks of 512K in order (beyond the copy kernel's reach)
 *   marker      big, with an event recorded after the fifth block
 *   two_regs    big, from two host registrations side by side (one buffer)
 *   two_hooks   big, every other copy through cuMemcpyAsync
 *   own_error   big, the fourth block's copy 768K: more than CUSIM_MAX_COPY
 *               takes, when the test sets it, for the program as for the
 *               copy merged from it
 * Prints h2d_calls (copies through cuMemcpyHtoDAsync_v2; none for
 * long_slow_d2d) and the first error. */
enum merge_shape { MS_CONTIGUOUS, MS_LONG, MS_LONG_MID, MS_LONG_SLOW, MS_LONG_SLOW_D2D, MS_SCATTERED, MS_KV4, MS_BIG, MS_MARKER, MS_TWO_REGS, MS_TWO_HOOKS, MS_OWN_ERROR };
static void merge_copies(enum merge_shape shape)
{
    int lng = shape == MS_LONG || shape == MS_LONG_MID || shape == MS_LONG_SLOW || shape == MS_LONG_SLOW_D2D;
    int small = lng || shape == MS_CONTIGUOUS || shape == MS_SCATTERED || shape == MS_KV4;
    size_t bs = small ? 4096 : (size_t)512 << 10, nb = lng ? 4096 : small ? 64 : 9;
    size_t total = nb * bs + (shape == MS_OWN_ERROR ? bs / 2 : 0);
    unsigned char *in, *out = malloc(total), *want = malloc(total);
    if (shape == MS_TWO_REGS) {
        in = aligned_alloc(4096, total);
        CK(cuMemHostRegister_v2(in, 5 * bs, 0));
        CK(cuMemHostRegister_v2(in + 5 * bs, total - 5 * bs, 0));
    } else {
        in = pinned(total);
    }
    fill(in, total, 71);
    CUdeviceptr d = devmem(total);
    CK(cuMemsetD8Async(d, 0, total, NULL));
    CK(cuCtxSynchronize());
    memset(want, 0, total);
    CUdeviceptr dsrc = 0; /* the d2d shape's source: `in`, copied to the device */
    if (shape == MS_LONG_SLOW_D2D) {
        dsrc = devmem(total);
        CK(cuMemcpyHtoD_v2(dsrc, in, total));
    }
    CUstream s = mkstream(0);
    CUevent ev = NULL;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    unsigned long before = sim_count("cuMemcpyHtoDAsync_v2");
    int first = 0;
    size_t off = 0;
    for (size_t i = 0; i < nb; i++) {
        size_t src = i * bs, dst = i * bs, n = bs;
        if (shape == MS_SCATTERED)
            *(i < nb / 2 ? &dst : &src) = (i * 37 % nb) * bs;
        if (shape == MS_KV4)
            src = dst = ((i / 4 * 7 % (nb / 4)) * 4 + i % 4) * bs;
        if (!small) { /* blocks one after another: the own_error's fourth is longer */
            src = dst = off;
            n = shape == MS_OWN_ERROR && i == 4 ? bs + bs / 2 : bs;
            off += n;
        }
        CUresult rc;
        if (shape == MS_LONG_SLOW_D2D)
            rc = cuMemcpyDtoDAsync_v2(d + dst, dsrc + src, n, s);
        else if (shape == MS_TWO_HOOKS && i % 2)
            rc = cuMemcpyAsync(d + dst, (CUdeviceptr)(uintptr_t)(in + src), n, s);
        else
            rc = cuMemcpyHtoDAsync_v2(d + dst, in + src, n, s);
        if (rc == CUDA_SUCCESS)
            memcpy(want + dst, in + src, n);
        else if (!first)
            first = rc;
        if (shape == MS_MARKER && i == 4)
            CK(cuEventRecord(ev, s));
        if (shape == MS_LONG_SLOW || (shape == MS_LONG_SLOW_D2D && i % 8 == 7) || (shape == MS_LONG_MID && i % 32 == 31))
            pass_time_us(1);
    }
    CUresult rc = cuStreamSynchronize(s);
    if (rc && !first)
        first = rc;
    printf("h2d_calls: %lu\n", sim_count("cuMemcpyHtoDAsync_v2") - before);
    printf("rc: first_error %d\n", first);
    for (size_t at = 0; at < total; at += bs)
        CK(cuMemcpyDtoH_v2(out + at, d + at, total - at < bs ? total - at : bs));
    if (first) /* a deferred copy's error comes later than its call: what it left is the digest's */
        digest(out, total);
    else
        expect("merged copies", out, want, total);
    CK(cuEventDestroy_v2(ev));
    CK(cuStreamDestroy_v2(s));
    CK(cuMemFree_v2(d));
    if (dsrc)
        CK(cuMemFree_v2(dsrc));
    if (shape == MS_TWO_REGS) {
        CK(cuMemHostUnregister(in));
        CK(cuMemHostUnregister(in + 5 * bs));
        free(in);
    } else {
        CK(cuMemFreeHost(in));
    }
    free(out);
    free(want);
}
static void sc_merge_contiguous(void) { merge_copies(MS_CONTIGUOUS); }
static void sc_merge_long(void) { merge_copies(MS_LONG); }
static void sc_merge_long_mid(void) { merge_copies(MS_LONG_MID); }
static void sc_merge_long_slow(void) { merge_copies(MS_LONG_SLOW); }
static void sc_merge_long_slow_d2d(void) { merge_copies(MS_LONG_SLOW_D2D); }
static void sc_merge_scattered(void) { merge_copies(MS_SCATTERED); }
static void sc_merge_kv4(void) { merge_copies(MS_KV4); }
static void sc_merge_big(void) { merge_copies(MS_BIG); }
static void sc_merge_marker(void) { merge_copies(MS_MARKER); }
static void sc_merge_two_regs(void) { merge_copies(MS_TWO_REGS); }
static void sc_merge_two_hooks(void) { merge_copies(MS_TWO_HOOKS); }
static void sc_merge_own_error(void) { merge_copies(MS_OWN_ERROR); }

/* ---- 2D copies (rule 19) -------------------------------------------------------------------- */

/* A region of 4 x 8 tiles of 8 rows of 192 bytes in pitched buffers: the
 * device's pitch 1600, the host's 2048 (each side's rows apart from the
 * tiles' columns).  Tiles go in a scattered order; each side's start is given
 * through X/Y offsets, as tiling code does. */
enum { T_COLS = 8, T_ROWS = 4, T_H = 8, T_W = 192, T_DP = 1600, T_HP = 2048, T_N = T_COLS * T_ROWS };
enum tile_case { TC_H2D, TC_D2H, TC_D2D, TC_UNIFIED, TC_HAZARD, TC_MIXED, TC_PAGEABLE, TC_ERRORS, TC_LEGACY,
                 TC_PTDS, TC_CAPTURE, TC_ONE_ROW, TC_BIG };

/* A description of tile t: from (base src, its type, pitch) to (dst ...). */
static CUDA_MEMCPY2D tile_desc(unsigned t, CUmemorytype st, uintptr_t src, size_t sp, CUmemorytype dt, uintptr_t dst,
                               size_t dpitch)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    size_t x = (t % T_COLS) * T_W, y = (t / T_COLS) * T_H;
    c.srcMemoryType = st;
    if (st == CU_MEMORYTYPE_HOST)
        c.srcHost = (const void *)src;
    else
        c.srcDevice = (CUdeviceptr)src;
    c.srcXInBytes = x;
    c.srcY = y;
    c.srcPitch = sp;
    c.dstMemoryType = dt;
    if (dt == CU_MEMORYTYPE_HOST)
        c.dstHost = (void *)dst;
    else
        c.dstDevice = (CUdeviceptr)dst;
    c.dstXInBytes = x;
    c.dstY = y;
    c.dstPitch = dpitch;
    c.WidthInBytes = T_W;
    c.Height = T_H;
    return c;
}

/* What tile t of a copy from `src` (pitch sp) to `dst` (pitch dp) does, on the host. */
static void tile_on_host(unsigned t, const unsigned char *src, size_t sp, unsigned char *dst, size_t dp, size_t h,
                         size_t w)
{
    size_t x = (t % T_COLS) * T_W, y = (t / T_COLS) * T_H;
    for (size_t r = 0; r < h; r++)
        memmove(dst + (y + r) * dp + x, src + (y + r) * sp + x, w);
}

static CUresult copy2d(const CUDA_MEMCPY2D *c, CUstream s, int ptsz)
{
    return ptsz ? cuMemcpy2DAsync_v2_ptsz(c, s) : cuMemcpy2DAsync_v2(c, s);
}

static void tiles(enum tile_case tc)
{
    const size_t hbytes = (size_t)T_ROWS * T_H * T_HP, dbytes = (size_t)T_ROWS * T_H * T_DP;
    unsigned char *h = tc == TC_PAGEABLE ? malloc(hbytes) : pinned(hbytes);
    unsigned char *want_h = malloc(hbytes), *want_d = malloc(dbytes), *want_e = malloc(dbytes);
    unsigned char *init_d = malloc(dbytes), *init_e = malloc(dbytes), *got = pinned(dbytes);
    fill(h, hbytes, 91);
    fill(init_d, dbytes, 92);
    fill(init_e, dbytes, 93);
    CUdeviceptr d = devfilled(init_d, dbytes), e = devfilled(init_e, dbytes);
    memcpy(want_h, h, hbytes);
    memcpy(want_d, init_d, dbytes);
    memcpy(want_e, init_e, dbytes);
    CUstream s = tc == TC_LEGACY || tc == TC_PTDS ? NULL : mkstream(CU_STREAM_NON_BLOCKING);
    int ptsz = tc == TC_PTDS;
    CUgraph g = NULL;
    if (tc == TC_CAPTURE)
        CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    unsigned long before = sim_count("cuMemcpy2DAsync_v2") + sim_count("cuMemcpy2DAsync_v2_ptsz");
    CUresult first = CUDA_SUCCESS;
    /* TC_BIG: uploads of 512 KiB, deferred but too long for the copy kernel,
     * before the tiles and after them: the run goes to the engines in stretches */
    enum { BIG = 512 * 1024, NBIG = 8 };
    unsigned char *bh = tc == TC_BIG ? pinned(2 * NBIG * (size_t)BIG) : NULL;
    CUdeviceptr bd = tc == TC_BIG ? devmem(2 * NBIG * (size_t)BIG) : 0;
    if (bh)
        fill(bh, 2 * NBIG * (size_t)BIG, 94);
    for (unsigned i = 0; bh && i < NBIG; i++)
        CK(cuMemcpyHtoDAsync_v2(bd + (size_t)i * BIG, bh + (size_t)i * BIG, BIG, s));
    for (unsigned k = 0; k < T_N; k++) {
        unsigned t = k * 13 % T_N; /* scattered: neighbours' rows interleave in the run */
        CUDA_MEMCPY2D c;
        CUresult rc;
        switch (tc) {
        case TC_D2H:
            c = tile_desc(t, CU_MEMORYTYPE_DEVICE, d, T_DP, CU_MEMORYTYPE_HOST, (uintptr_t)h, T_HP);
            tile_on_host(t, want_d, T_DP, want_h, T_HP, T_H, T_W);
            break;
        case TC_D2D:
        case TC_HAZARD:
            c = tile_desc(t, CU_MEMORYTYPE_DEVICE, d, T_DP, CU_MEMORYTYPE_DEVICE, e, T_DP);
            tile_on_host(t, want_d, T_DP, want_e, T_DP, T_H, T_W);
            break;
        case TC_UNIFIED:
            c = tile_desc(t, CU_MEMORYTYPE_UNIFIED, (uintptr_t)h, T_HP, CU_MEMORYTYPE_UNIFIED, d, T_DP);
            tile_on_host(t, want_h, T_HP, want_d, T_DP, T_H, T_W);
            break;
        default:
            c = tile_desc(t, CU_MEMORYTYPE_HOST, (uintptr_t)h, T_HP, CU_MEMORYTYPE_DEVICE, d, T_DP);
            if (tc == TC_ONE_ROW) /* one row each; every fourth none at all */
                c.Height = k % 4 ? 1 : 0;
            tile_on_host(t, want_h, T_HP, want_d, T_DP, c.Height, T_W);
            break;
        }
        if (tc == TC_ERRORS && k % 8 == 3) {
            /* a width over the pitch, an array, rows past the allocation's end */
            CUDA_MEMCPY2D bad = c;
            if (k == 3)
                bad.WidthInBytes = T_DP + 1;
            else if (k == 11)
                bad.srcMemoryType = CU_MEMORYTYPE_ARRAY;
            else
                bad.Height = T_ROWS * T_H + 1;
            rc = copy2d(&bad, s, 0);
            printf("rc: bad tile %u %d\n", k, (int)rc);
            first = first ? first : rc;
            if (!rc)
                printf("result: WRONG a bad 2D copy succeeded\n");
            size_t x = (t % T_COLS) * T_W, y = (t / T_COLS) * T_H;
            for (size_t r = 0; r < T_H; r++) /* the tile was not copied: its destination keeps what it held */
                memcpy(want_d + (y + r) * T_DP + x, init_d + (y + r) * T_DP + x, T_W);
            continue;
        }
        rc = copy2d(&c, s, ptsz);
        if (rc)
            printf("rc: tile %u %d\n", k, (int)rc);
        if (tc == TC_HAZARD && k % 4 == 1) {
            /* the tile just written is read back into d (rule 5: read after
             * write), then d's tile is overwritten from h (write after read) */
            CUDA_MEMCPY2D back = tile_desc(t, CU_MEMORYTYPE_DEVICE, e, T_DP, CU_MEMORYTYPE_DEVICE, d, T_DP);
            back.srcXInBytes += 16; /* shifted: the rows overlap two of d's tiles' columns */
            back.WidthInBytes = T_W - 16;
            CK(copy2d(&back, s, 0));
            size_t x = (t % T_COLS) * T_W, y = (t / T_COLS) * T_H;
            for (size_t r = 0; r < T_H; r++)
                memmove(want_d + (y + r) * T_DP + x, want_e + (y + r) * T_DP + x + 16, T_W - 16);
            CK(cuMemcpyHtoDAsync_v2(d + y * T_DP + x, h + y * T_HP + x, T_W, s));
            memcpy(want_d + y * T_DP + x, h + y * T_HP + x, T_W);
        }
        if (tc == TC_HAZARD && k % 4 == 3) {
            /* a 1D copy reads the tile's last row just written (read after
             * write only: it writes the gap beside d's rows, which no tile reads) */
            size_t x = (t % T_COLS) * T_W, y = (t / T_COLS) * T_H, gap = T_COLS * T_W;
            CK(cuMemcpyDtoDAsync_v2(d + y * T_DP + gap, e + (y + T_H - 1) * T_DP + x + 5, 50, s));
            memcpy(want_d + y * T_DP + gap, want_e + (y + T_H - 1) * T_DP + x + 5, 50);
        }
        if (tc == TC_MIXED && k % 3 == 2) {
            /* a 1D copy into the tile's first row (write after write), and one
             * into the row gap beside it, which no tile touches */
            size_t x = (t % T_COLS) * T_W, y = (t / T_COLS) * T_H;
            CK(cuMemcpyHtoDAsync_v2(d + y * T_DP + x + 8, h + 5, 100, s));
            memcpy(want_d + y * T_DP + x + 8, h + 5, 100);
            CK(cuMemcpyHtoDAsync_v2(d + y * T_DP + T_COLS * T_W, h + 300, T_DP - T_COLS * T_W, s));
            memcpy(want_d + y * T_DP + T_COLS * T_W, h + 300, T_DP - T_COLS * T_W);
        }
    }
    for (unsigned i = NBIG; bh && i < 2 * NBIG; i++)
        CK(cuMemcpyHtoDAsync_v2(bd + (size_t)i * BIG, bh + (size_t)i * BIG, BIG, s));
    if (tc == TC_CAPTURE) {
        CK(cuStreamEndCapture(s, &g));
        CUgraphExec ge;
        CK(cuGraphInstantiateWithFlags(&ge, g, 0));
        CK(cuGraphLaunch(ge, s));
        CK(cuGraphExecDestroy(ge));
        CK(cuGraphDestroy(g));
    }
    CUresult rc = ptsz ? cuStreamSynchronize_ptsz(s) : cuStreamSynchronize(s);
    printf("rc: sync %d\n", (int)rc);
    printf("rows_calls: %lu\n", sim_count("cuMemcpy2DAsync_v2") + sim_count("cuMemcpy2DAsync_v2_ptsz") - before);
    (void)first;
    if (tc == TC_D2H || tc == TC_PAGEABLE) {
        expect("2D copies to the host", h, want_h, hbytes);
    } else {
        CK(cuMemcpyDtoH_v2(got, d, dbytes));
        expect("2D copies to d", got, want_d, dbytes);
        CK(cuMemcpyDtoH_v2(got, e, dbytes));
        expect("2D copies to e", got, want_e, dbytes);
        if (tc == TC_UNIFIED)
            expect("2D copies' host sources", h, want_h, hbytes);
    }
    if (bh) {
        unsigned char *back = malloc(2 * NBIG * (size_t)BIG);
        CK(cuMemcpyDtoH_v2(back, bd, 2 * NBIG * (size_t)BIG));
        expect("uploads beside the tiles", back, bh, 2 * NBIG * (size_t)BIG);
        free(back);
        CK(cuMemFree_v2(bd));
        CK(cuMemFreeHost(bh));
    }
    if (s)
        CK(cuStreamDestroy_v2(s));
    CK(cuMemFree_v2(d));
    CK(cuMemFree_v2(e));
    if (tc == TC_PAGEABLE)
        free(h);
    else
        CK(cuMemFreeHost(h));
    CK(cuMemFreeHost(got));
    free(want_h);
    free(want_d);
    free(want_e);
    free(init_d);
    free(init_e);
}
/* tiles_packed: 2D copies whose rows are packed (pitch = width on both
 * sides), each starting where the one before ends, downloaded beside compute
 * that fills the GPU: the run keeps off the copy kernel and goes to the loop,
 * where each must go out as it came (rule 18 merges nothing in a run holding
 * 2D copies, though these continue each other). */
static void sc_tiles_packed(void)
{
    enum { NT = 16, W = 256, H = 8 };
    const size_t each = (size_t)W * H, bytes = NT * each;
    CUfunction f = compute_fn();
    CUstream a = mkstream(CU_STREAM_NON_BLOCKING), s = mkstream(CU_STREAM_NON_BLOCKING);
    unsigned char *h = pinned(bytes), *want = malloc(bytes);
    fill(want, bytes, 95);
    memset(h, 0, bytes);
    CUdeviceptr d = devfilled(want, bytes);
    compute(f, a, 8, 1u << 30);
    for (unsigned k = 0; k < NT; k++) {
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = d + k * each;
        c.srcPitch = W;
        c.dstMemoryType = CU_MEMORYTYPE_HOST;
        c.dstHost = h + k * each;
        c.dstPitch = W;
        c.WidthInBytes = W;
        c.Height = H;
        CUresult rc = cuMemcpy2DAsync_v2(&c, s);
        if (rc)
            printf("rc: packed tile %u %d\n", k, (int)rc);
    }
    CUresult rc = cuStreamSynchronize(s);
    printf("rc: sync %d\n", (int)rc);
    expect("packed 2D copies", h, want, bytes);
    CK(cuStreamSynchronize(a));
    CK(cuStreamDestroy_v2(s));
    CK(cuStreamDestroy_v2(a));
    CK(cuMemFree_v2(d));
    CK(cuMemFreeHost(h));
    free(want);
}
static void sc_tiles_h2d(void) { tiles(TC_H2D); }
static void sc_tiles_d2h(void) { tiles(TC_D2H); }
static void sc_tiles_d2d(void) { tiles(TC_D2D); }
static void sc_tiles_unified(void) { tiles(TC_UNIFIED); }
static void sc_tiles_hazard(void) { tiles(TC_HAZARD); }
static void sc_tiles_mixed(void) { tiles(TC_MIXED); }
static void sc_tiles_pageable(void) { tiles(TC_PAGEABLE); }
static void sc_tiles_errors(void) { tiles(TC_ERRORS); }
static void sc_tiles_legacy(void) { tiles(TC_LEGACY); }
static void sc_tiles_ptds(void) { tiles(TC_PTDS); }
static void sc_tiles_capture(void) { tiles(TC_CAPTURE); }
static void sc_tiles_one_row(void) { tiles(TC_ONE_ROW); }
static void sc_tiles_big(void) { tiles(TC_BIG); }

static const struct { const char *name; void (*fn)(void); } scenarios[] = {
    {"basic", sc_basic},           {"chain", sc_chain},
    {"overwrite", sc_overwrite},   {"query", sc_query},
    {"event", sc_event},           {"legacy", sc_legacy},
    {"legacy_copies", sc_legacy_copies},
    {"ptds_ctxsync", sc_ptds_ctxsync}, {"ptds_legacy", sc_ptds_legacy},
    {"ptds_own", sc_ptds_own},     {"ptds_timer_pass", sc_ptds_timer_pass},
    {"ptds_pause_pass", sc_ptds_pause_pass}, {"ptds_pass_ahead", sc_ptds_pass_ahead},
    {"capture", sc_capture},
    {"destroy", sc_destroy},       {"pageable", sc_pageable},
    {"timer", sc_timer},           {"fork", sc_fork},
    {"exit", sc_exit},             {"errors", sc_errors},
    {"threads", sc_threads},       {"stress", sc_stress},       {"h2d_16k", sc_h2d_16k},
    {"h2d_4k", sc_h2d_4k},         {"single", sc_single},       {"pair", sc_pair},
    {"lone_after_thread", sc_lone_after_thread}, {"lone_counted", sc_lone_counted},
    {"lone_after_thread_legacy", sc_lone_after_thread_legacy},
    {"legacy_two_contexts", sc_legacy_two_contexts},
    {"long_loop", sc_long_loop},   {"age", sc_age},
    {"legacy_then_blocking", sc_legacy_then_blocking}, {"registered", sc_registered},
    {"capture_legacy", sc_capture_legacy}, {"legacy_during_capture", sc_legacy_during_capture},
    {"big", sc_big},
    {"d2h_20", sc_d2h_20},         {"managed", sc_managed},
    {"free_realloc", sc_free_realloc}, {"hostfunc", sc_hostfunc},
    {"interleave", sc_interleave},   {"many_pinned", sc_many_pinned}, {"pinned_per_block", sc_pinned_per_block}, {"unregister_forgets", sc_unregister_forgets}, {"unregister_known", sc_unregister_known}, {"known_edges", sc_known_edges}, {"exit_destructor", sc_exit_destructor},   {"pace", sc_pace},     {"ctx_reset", sc_ctx_reset}, {"ctx_destroy", sc_ctx_destroy},
    {"ctx_event", sc_ctx_event},     {"primary_release", sc_primary_release}, {"ctx_reuse", sc_ctx_reuse},   {"resolve", sc_resolve},
    {"sm_busy", sc_sm_busy},         {"sm_idle_sync", sc_sm_idle_sync},   {"sm_idle_event", sc_sm_idle_event},
    {"sm_idle_query", sc_sm_idle_query}, {"sm_room", sc_sm_room}, {"sm_few", sc_sm_few},         {"sm_busy_d2d", sc_sm_busy_d2d},
    {"sm_busy_legacy", sc_sm_busy_legacy}, {"sm_legacy_compute", sc_sm_legacy_compute},
    {"sm_destroyed", sc_sm_destroyed}, {"measured", sc_measured}, {"measured_cold", sc_measured_cold}, {"held_records", sc_held_records},
    {"sm_busy_later", sc_sm_busy_later}, {"sm_busy_ends", sc_sm_busy_ends},
    {"sm_busy_turns", sc_sm_busy_turns},
    {"measured_unsampled", sc_measured_unsampled}, {"spell_queued", sc_spell_queued},
    {"spell_thread", sc_spell_thread}, {"spell_named", sc_spell_named},
    {"marker_sync", sc_marker_sync},   {"marker_two", sc_marker_two},     {"marker_query", sc_marker_query},
    {"marker_elapsed_end", sc_marker_elapsed_end}, {"marker_elapsed_start", sc_marker_elapsed_start},
    {"marker_wait", sc_marker_wait},   {"marker_destroy", sc_marker_destroy}, {"marker_rerecord", sc_marker_rerecord},
    {"marker_ipc", sc_marker_ipc},     {"marker_graph_node", sc_marker_graph_node},
    {"marker_launch_config", sc_marker_launch_config}, {"marker_graph_launch", sc_marker_graph_launch},
    {"marker_interprocess", sc_marker_interprocess}, {"marker_external", sc_marker_external},
    {"marker_ptds", sc_marker_ptds},   {"marker_legacy", sc_marker_legacy}, {"marker_timer", sc_marker_timer},
    {"marker_interprocess_mid", sc_marker_interprocess_mid},
    {"merged_sync", sc_merged_sync},   {"merged_query", sc_merged_query}, {"merged_wait", sc_merged_wait},
    {"merged_rerecord", sc_merged_rerecord}, {"merged_destroy", sc_merged_destroy},
    {"merged_graph_node", sc_merged_graph_node}, {"merged_elapsed", sc_merged_elapsed},
    {"merged_capture_wait", sc_merged_capture_wait}, {"merged_launch_ex", sc_merged_launch_ex}, {"merged_graph_launch", sc_merged_graph_launch},
    {"waits_copy", sc_waits_copy},     {"waits_record", sc_waits_record}, {"waits_sync", sc_waits_sync},
    {"waits_query", sc_waits_query},   {"waits_capture", sc_waits_capture}, {"waits_destroy", sc_waits_destroy},
    {"waits_rerecord", sc_waits_rerecord}, {"waits_ctx_sync", sc_waits_ctx_sync}, {"waits_graph", sc_waits_graph},
    {"waits_launch", sc_waits_launch},
    {"waits_met", sc_waits_met}, {"waits_first_copy", sc_waits_first_copy},
    {"jax", sc_jax},                   {"trtllm", sc_trtllm},           {"set_enabled", sc_set_enabled},
    {"directions", sc_directions},     {"api_flush", sc_api_flush},
    {"err_stream", sc_err_stream},     {"err_wait", sc_err_wait},       {"err_event", sc_err_event},
    {"err_legacy", sc_err_legacy},     {"err_context", sc_err_context}, {"err_hazard", sc_err_hazard},
    {"err_full", sc_err_full},         {"err_passthrough", sc_err_passthrough}, {"err_timer", sc_err_timer},
    {"err_slow", sc_err_slow},         {"err_fork", sc_err_fork},       {"err_api", sc_err_api},
    {"err_unknown", sc_err_unknown},
    {"newer_hostfunc", sc_newer_hostfunc}, {"newer_attr_copy", sc_newer_attr_copy},
    {"newer_recapture", sc_newer_recapture}, {"newer_future", sc_newer_future},
    {"newer_wrapped", sc_newer_wrapped},
    {"two_streams", sc_two_streams}, {"two_peer", sc_two_peer}, {"two_ctxsync", sc_two_ctxsync},
    {"two_module", sc_two_module},   {"two_release", sc_two_release}, {"two_reset", sc_two_reset},
    {"two_ptds_switch", sc_two_ptds_switch},
    {"capture_launch", sc_capture_launch}, {"capture_beside_thread", sc_capture_beside_thread},
    {"capture_beside_own", sc_capture_beside_own}, {"capture_first_kernel", sc_capture_first_kernel},
    {"capture_first_kernel_own", sc_capture_first_kernel_own},
    {"merge_contiguous", sc_merge_contiguous}, {"merge_long", sc_merge_long},
    {"merge_long_mid", sc_merge_long_mid}, {"merge_long_slow", sc_merge_long_slow}, {"merge_long_slow_d2d", sc_merge_long_slow_d2d}, {"merge_scattered", sc_merge_scattered}, {"merge_kv4", sc_merge_kv4},
    {"merge_big", sc_merge_big},     {"merge_marker", sc_merge_marker}, {"merge_two_regs", sc_merge_two_regs},
    {"merge_two_hooks", sc_merge_two_hooks}, {"merge_own_error", sc_merge_own_error},
    {"tiles_h2d", sc_tiles_h2d}, {"tiles_d2h", sc_tiles_d2h}, {"tiles_d2d", sc_tiles_d2d},
    {"tiles_unified", sc_tiles_unified}, {"tiles_hazard", sc_tiles_hazard}, {"tiles_mixed", sc_tiles_mixed},
    {"tiles_pageable", sc_tiles_pageable}, {"tiles_errors", sc_tiles_errors}, {"tiles_legacy", sc_tiles_legacy},
    {"tiles_ptds", sc_tiles_ptds}, {"tiles_capture", sc_tiles_capture}, {"tiles_one_row", sc_tiles_one_row},
    {"tiles_big", sc_tiles_big}, {"tiles_packed", sc_tiles_packed},
};

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: probe SCENARIO\nscenarios:");
        for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
            fprintf(stderr, " %s", scenarios[i].name);
        fprintf(stderr, "\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        if (strcmp(argv[1], scenarios[i].name))
            continue;
        setup();
        scenarios[i].fn();
        printf("digest: %016llx\n", (unsigned long long)g_digest);
        print_stats();
        printf("result: %s\n", g_wrong ? "WRONG" : "ok");
        return g_wrong;
    }
    fprintf(stderr, "probe: unknown scenario %s\n", argv[1]);
    return 2;
}
