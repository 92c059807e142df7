/* drv_copies: small asynchronous copies through the CUDA driver API (-lcuda),
 * in the situations cubatch must get right, each checked against bytes computed
 * on the host.
 *
 *   drv_copies [SCENARIO...]        (default: all; "list" prints the names)
 *
 * Exit: 0 all scenarios right, 1 wrong bytes or a CUDA error, 77 no GPU.
 * Each scenario prints "CHECK <name> <fnv64 of the bytes it read back>"; with
 * the same CB_TEST_SEED two runs (with and without cubatch) print the
 * same lines.  Without CB_TEST_SEED the data is fresh every run.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* libcuda exports the per-thread-default-stream twins; cuda.h declares them only
 * when the whole program is built for per-thread default streams. */
CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr, const void *, size_t, CUstream);
CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void *, CUdeviceptr, size_t, CUstream);
CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr, CUdeviceptr, size_t, CUstream);

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

/* ---- errors ---------------------------------------------------------------- */

static void die_cu(const char *what, CUresult r, int line)
{
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
        name = "?";
    fprintf(stderr, "drv_copies:%d: %s failed: %s (%d)\n", line, what, name, (int)r);
    exit(1);
}
#define CK(call)                                                                   \
    do {                                                                           \
        CUresult r_ = (call);                                                      \
        if (r_ != CUDA_SUCCESS)                                                    \
            die_cu(#call, r_, __LINE__);                                           \
    } while (0)

static CUcontext g_ctx;

/* ---- data ------------------------------------------------------------------ */

static uint64_t g_seed;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Each scenario has its own stream of random numbers, so the order in which the
 * scenarios run does not change their data. */
static uint64_t rng_for(const char *scenario)
{
    uint64_t s = g_seed;
    for (const char *p = scenario; *p; p++)
        s = (s ^ (unsigned char)*p) * 0x100000001b3ULL;
    return s;
}

static void fill_random(void *buf, size_t n, uint64_t *rng)
{
    unsigned char *b = buf;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = splitmix(rng);
        memcpy(b + i, &v, 8);
    }
    if (i < n) {
        uint64_t v = splitmix(rng);
        memcpy(b + i, &v, n - i);
    }
}

static uint64_t fnv(uint64_t h, const void *buf, size_t n)
{
    const unsigned char *b = buf;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}
#define FNV0 0xcbf29ce484222325ULL

/* Compare n bytes; report the first difference.  Returns 0 when equal. */
static int same(const char *sc, const char *what, const void *got, const void *want, size_t n)
{
    const unsigned char *g = got, *w = want;
    if (memcmp(g, w, n) == 0)
        return 0;
    size_t first = 0, bad = 0;
    for (size_t i = n; i-- > 0;)
        if (g[i] != w[i]) {
            first = i;
            bad++;
        }
    fprintf(stderr, "drv_copies: %s: %s: %zu of %zu bytes wrong, first at %zu (got %02x want %02x)\n",
            sc, what, bad, n, first, g[first], w[first]);
    return 1;
}

static void *pinned(size_t n)
{
    void *p = NULL;
    CK(cuMemHostAlloc(&p, n, CU_MEMHOSTALLOC_PORTABLE));
    memset(p, 0xa5, n);  /* poison: not what any copy writes */
    return p;
}

static CUdeviceptr dev(size_t n)
{
    CUdeviceptr p = 0;
    CK(cuMemAlloc(&p, n));
    CK(cuMemsetD8(p, 0x5a, n));
    return p;
}

static CUstream stream(unsigned flags)
{
    CUstream s = NULL;
    CK(cuStreamCreate(&s, flags));
    return s;
}

#define H(p) ((CUdeviceptr)(uintptr_t)(p))  /* host pointer as a unified address */

static void report(const char *sc, uint64_t h)
{
    printf("CHECK %s %016llx\n", sc, (unsigned long long)h);
}

/* ---- scenarios ----------------------------------------------------------------
 * Each returns 0 when every byte it read back is right. */

/* Runs of 64 small copies per direction (and one run longer than a batch),
 * alternating the typed entry points with cuMemcpyAsync. */
static int sc_runs(void)
{
    static const size_t sizes[] = {256, 512, 4 * KiB, 16 * KiB, 64 * KiB};
    uint64_t rng = rng_for("runs"), h = FNV0;
    int bad = 0;
    CUstream s = stream(CU_STREAM_NON_BLOCKING);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes + 1; k++) {
        size_t sz = k < sizeof sizes / sizeof *sizes ? sizes[k] : 256;
        size_t n = k < sizeof sizes / sizeof *sizes ? 64 : 2500;  /* last: > 2 batches */
        unsigned char *src = pinned(n * sz), *out = pinned(n * sz), *want = malloc(n * sz);
        size_t *perm = malloc(n * sizeof *perm);
        CUdeviceptr a = dev(n * sz), b = dev(n * sz);
        fill_random(src, n * sz, &rng);
        for (size_t i = 0; i < n; i++)
            perm[i] = i;
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = splitmix(&rng) % (i + 1), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (size_t i = 0; i < n; i++)
            if (i % 2)
                CK(cuMemcpyHtoDAsync(a + i * sz, src + i * sz, sz, s));
            else
                CK(cuMemcpyAsync(a + i * sz, H(src + i * sz), sz, s));
        CK(cuStreamSynchronize(s));
        for (size_t i = 0; i < n; i++)
            if (i % 2)
                CK(cuMemcpyDtoDAsync(b + perm[i] * sz, a + i * sz, sz, s));
            else
                CK(cuMemcpyAsync(b + perm[i] * sz, a + i * sz, sz, s));
        CK(cuStreamSynchronize(s));
        for (size_t i = 0; i < n; i++)
            if (i % 2)
                CK(cuMemcpyDtoHAsync(out + i * sz, b + i * sz, sz, s));
            else
                CK(cuMemcpyAsync(H(out + i * sz), b + i * sz, sz, s));
        CK(cuStreamSynchronize(s));
        for (size_t i = 0; i < n; i++)
            memcpy(want + perm[i] * sz, src + i * sz, sz);
        bad |= same("runs", "permuted blocks", out, want, n * sz);
        h = fnv(h, out, n * sz);
        CK(cuMemFree(a));
        CK(cuMemFree(b));
        CK(cuMemFreeHost(src));
        CK(cuMemFreeHost(out));
        free(want);
        free(perm);
    }
    CK(cuStreamDestroy(s));
    report("runs", h);
    return bad;
}

/* Dependent copies queued back to back: H2D A, A->B, B->C, C->host, first
 * grouped by stage, then interleaved per block.  One sync at the end. */
static int sc_chain(void)
{
    const size_t n = 48, sz = 4 * KiB;
    uint64_t rng = rng_for("chain"), h = FNV0;
    int bad = 0;
    CUstream s = stream(CU_STREAM_NON_BLOCKING);
    unsigned char *src = pinned(n * sz), *out = pinned(n * sz);
    CUdeviceptr a = dev(n * sz), b = dev(n * sz), c = dev(n * sz);
    for (int round = 0; round < 2; round++) {
        fill_random(src, n * sz, &rng);
        memset(out, 0xa5, n * sz);
        if (round == 0) {
            for (size_t i = 0; i < n; i++)
                CK(cuMemcpyHtoDAsync(a + i * sz, src + i * sz, sz, s));
            for (size_t i = 0; i < n; i++)
                CK(cuMemcpyDtoDAsync(b + i * sz, a + i * sz, sz, s));
            for (size_t i = 0; i < n; i++)
                CK(cuMemcpyDtoDAsync(c + i * sz, b + i * sz, sz, s));
            for (size_t i = 0; i < n; i++)
                CK(cuMemcpyDtoHAsync(out + i * sz, c + i * sz, sz, s));
        } else {
            for (size_t i = 0; i < n; i++) {
                CK(cuMemcpyAsync(a + i * sz, H(src + i * sz), sz, s));
                CK(cuMemcpyAsync(b + i * sz, a + i * sz, sz, s));
                CK(cuMemcpyAsync(c + i * sz, b + i * sz, sz, s));
                CK(cuMemcpyAsync(H(out + i * sz), c + i * sz, sz, s));
            }
        }
        CK(cuStreamSynchronize(s));
        bad |= same("chain", round ? "interleaved" : "staged", out, src, n * sz);
        h = fnv(h, out, n * sz);
    }
    /* Overlapping but not identical ranges: shift a buffer by half a block. */
    fill_random(src, n * sz, &rng);
    CK(cuMemcpyHtoDAsync(a, src, n * sz / 2, s));
    CK(cuMemcpyDtoDAsync(a + sz / 2, a, sz, s));  /* reads [0,sz), writes [sz/2, 3sz/2) */
    CK(cuMemcpyDtoHAsync(out, a, 2 * sz, s));
    CK(cuStreamSynchronize(s));
    {
        unsigned char *want = malloc(2 * sz);
        memcpy(want, src, 2 * sz);
        memmove(want + sz / 2, src, sz);
        bad |= same("chain", "overlapping shift", out, want, 2 * sz);
        h = fnv(h, out, 2 * sz);
        free(want);
    }
    CK(cuMemFree(a));
    CK(cuMemFree(b));
    CK(cuMemFree(c));
    CK(cuMemFreeHost(src));
    CK(cuMemFreeHost(out));
    CK(cuStreamDestroy(s));
    report("chain", h);
    return bad;
}

/* A copy's source is overwritten by a later copy (write after read), the same
 * destination is written twice (write after write), on device and host sides. */
static int sc_overwrite(void)
{
    const size_t n = 32, sz = 8 * KiB, tot = n * sz;
    uint64_t rng = rng_for("overwrite"), h = FNV0;
    int bad = 0;
    CUstream s = stream(CU_STREAM_NON_BLOCKING);
    unsigned char *s1 = pinned(tot), *s2 = pinned(tot), *s3 = pinned(tot), *s4 = pinned(tot);
    unsigned char *o1 = pinned(tot), *o2 = pinned(tot), *o3 = pinned(tot), *o4 = pinned(tot);
    CUdeviceptr a = dev(tot), b = dev(tot), c = dev(tot);
    fill_random(s1, tot, &rng);
    fill_random(s2, tot, &rng);
    fill_random(s3, tot, &rng);
    fill_random(s4, tot, &rng);
    CK(cuMemcpyHtoD(a, s1, tot));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoDAsync(b + i * sz, a + i * sz, sz, s));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyHtoDAsync(a + i * sz, s2 + i * sz, sz, s));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyHtoDAsync(c + i * sz, s3 + i * sz, sz, s));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyHtoDAsync(c + i * sz, s4 + i * sz, sz, s));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoHAsync(o1 + i * sz, b + i * sz, sz, s));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoHAsync(o2 + i * sz, a + i * sz, sz, s));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoHAsync(o3 + i * sz, c + i * sz, sz, s));
    /* Same host destination twice: the later copy (from b, = s1) must win. */
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoHAsync(o4 + i * sz, a + i * sz, sz, s));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoHAsync(o4 + i * sz, b + i * sz, sz, s));
    /* The host source of a queued H2D is the destination of a later D2H. */
    for (size_t i = 0; i < n; i++) CK(cuMemcpyHtoDAsync(a + i * sz, s3 + i * sz, sz, s));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoHAsync(s3 + i * sz, c + i * sz, sz, s));
    CK(cuStreamSynchronize(s));
    bad |= same("overwrite", "read before overwrite (dev)", o1, s1, tot);
    bad |= same("overwrite", "overwritten source (dev)", o2, s2, tot);
    bad |= same("overwrite", "double write (dev)", o3, s4, tot);
    bad |= same("overwrite", "double write (host)", o4, s1, tot);
    bad |= same("overwrite", "host source then host destination", s3, s4, tot);
    CK(cuMemcpyDtoH(o1, a, tot));
    unsigned char *want = malloc(tot);
    uint64_t r2 = rng_for("overwrite");  /* regenerate s3's original bytes */
    fill_random(want, tot, &r2);
    fill_random(want, tot, &r2);
    fill_random(want, tot, &r2);
    bad |= same("overwrite", "H2D read its source before the D2H rewrote it", o1, want, tot);
    free(want);
    h = fnv(fnv(fnv(fnv(h, o1, tot), o2, tot), o3, tot), o4, tot);
    CK(cuMemFree(a));
    CK(cuMemFree(b));
    CK(cuMemFree(c));
    unsigned char *all[] = {s1, s2, s3, s4, o1, o2, o3, o4};
    for (size_t i = 0; i < 8; i++)
        CK(cuMemFreeHost(all[i]));
    CK(cuStreamDestroy(s));
    report("overwrite", h);
    return bad;
}

/* Completion observed through cuStreamQuery alone, then host memory read. */
static int sc_query(void)
{
    const size_t n = 64, sz = 4 * KiB, tot = n * sz;
    uint64_t rng = rng_for("query");
    CUstream s = stream(CU_STREAM_NON_BLOCKING);
    unsigned char *src = pinned(tot), *out = pinned(tot);
    CUdeviceptr a = dev(tot);
    fill_random(src, tot, &rng);
    for (size_t i = 0; i < n; i++) CK(cuMemcpyHtoDAsync(a + i * sz, src + i * sz, sz, s));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoHAsync(out + i * sz, a + i * sz, sz, s));
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long polls = 0;
    for (;;) {
        CUresult r = cuStreamQuery(s);
        polls++;
        if (r == CUDA_SUCCESS)
            break;
        if (r != CUDA_ERROR_NOT_READY)
            die_cu("cuStreamQuery", r, __LINE__);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 10) {
            fprintf(stderr, "drv_copies: query: stream still busy after 10 s (%ld polls)\n", polls);
            return 1;
        }
    }
    int bad = same("query", "after cuStreamQuery == SUCCESS", out, src, tot);
    report("query", fnv(FNV0, out, tot));
    CK(cuMemFree(a));
    CK(cuMemFreeHost(src));
    CK(cuMemFreeHost(out));
    CK(cuStreamDestroy(s));
    return bad;
}

/* Copies on s1, event recorded there and waited on by s2, which reads them. */
static int sc_event(void)
{
    const size_t n = 64, sz = 4 * KiB, tot = n * sz;
    uint64_t rng = rng_for("event");
    CUstream s1 = stream(CU_STREAM_NON_BLOCKING), s2 = stream(CU_STREAM_NON_BLOCKING);
    CUevent ev, done;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    unsigned char *src = pinned(tot), *out = pinned(tot);
    CUdeviceptr a = dev(tot), b = dev(tot);
    fill_random(src, tot, &rng);
    for (size_t i = 0; i < n; i++) CK(cuMemcpyHtoDAsync(a + i * sz, src + i * sz, sz, s1));
    CK(cuEventRecord(ev, s1));
    CK(cuStreamWaitEvent(s2, ev, 0));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoDAsync(b + i * sz, a + i * sz, sz, s2));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoHAsync(out + i * sz, b + i * sz, sz, s2));
    CK(cuEventRecord(done, s2));
    CK(cuEventSynchronize(done));
    int bad = same("event", "read on the waiting stream", out, src, tot);
    report("event", fnv(FNV0, out, tot));
    CK(cuEventDestroy(ev));
    CK(cuEventDestroy(done));
    CK(cuMemFree(a));
    CK(cuMemFree(b));
    CK(cuMemFreeHost(src));
    CK(cuMemFreeHost(out));
    CK(cuStreamDestroy(s1));
    CK(cuStreamDestroy(s2));
    return bad;
}

/* Copies on a blocking stream, then legacy-stream work that must follow them:
 * a synchronous cuMemcpyDtoH, cuMemsetD8Async on NULL + async D2H on NULL, and
 * a synchronous cuMemsetD8. */
static int sc_legacy(void)
{
    const size_t n = 64, sz = 4 * KiB, tot = n * sz;
    uint64_t rng = rng_for("legacy"), h = FNV0;
    int bad = 0;
    CUstream s = stream(CU_STREAM_DEFAULT);  /* blocking: ordered with the legacy stream */
    unsigned char *src = pinned(tot), *out = pinned(tot), *want = malloc(tot);
    CUdeviceptr a = dev(tot);
    for (int part = 0; part < 3; part++) {
        fill_random(src, tot, &rng);
        memset(out, 0xa5, tot);
        memcpy(want, src, tot);
        for (size_t i = 0; i < n; i++)
            CK(cuMemcpyHtoDAsync(a + i * sz, src + i * sz, sz, s));
        size_t off = 1 + splitmix(&rng) % (tot / 2), len = 1 + splitmix(&rng) % (tot / 4);
        if (part == 0) {
            CK(cuMemcpyDtoH(out, a, tot));
        } else if (part == 1) {
            CK(cuMemsetD8Async(a + off, 0x3c, len, NULL));
            memset(want + off, 0x3c, len);
            CK(cuMemcpyDtoHAsync(out, a, tot, NULL));
            CK(cuStreamSynchronize(NULL));
        } else {
            CK(cuMemsetD8(a + off, 0xc3, len));
            memset(want + off, 0xc3, len);
            CK(cuMemcpyDtoH(out, a, tot));
        }
        static const char *what[] = {"sync cuMemcpyDtoH", "memset+D2H on NULL", "sync cuMemsetD8"};
        bad |= same("legacy", what[part], out, want, tot);
        h = fnv(h, out, tot);
    }
    CK(cuStreamSynchronize(s));
    CK(cuMemFree(a));
    CK(cuMemFreeHost(src));
    CK(cuMemFreeHost(out));
    free(want);
    CK(cuStreamDestroy(s));
    report("legacy", h);
    return bad;
}

/* Per-thread default stream: one thread queues copies (ending in pinned host
 * memory) and does not synchronize; another thread synchronizes the context
 * (or does legacy-stream work) and must then see every byte. */
struct ptds_job {
    size_t n, sz;
    unsigned char *src, *out;
    CUdeviceptr a, b;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stage;  /* 1: copies queued, 2: checked */
};

static void *ptds_producer(void *arg)
{
    struct ptds_job *j = arg;
    size_t sz = j->sz;
    CK(cuCtxSetCurrent(g_ctx));
    for (size_t i = 0; i < j->n; i++)
        if (i % 2)
            CK(cuMemcpyHtoDAsync_v2_ptsz(j->a + i * sz, j->src + i * sz, sz, NULL));
        else
            CK(cuMemcpyHtoDAsync_v2(j->a + i * sz, j->src + i * sz, sz, CU_STREAM_PER_THREAD));
    for (size_t i = 0; i < j->n; i++)
        if (i % 2)
            CK(cuMemcpyDtoDAsync_v2_ptsz(j->b + i * sz, j->a + i * sz, sz, NULL));
        else
            CK(cuMemcpyAsync_ptsz(j->b + i * sz, j->a + i * sz, sz, NULL));
    for (size_t i = 0; i < j->n; i++)
        if (i % 2)
            CK(cuMemcpyDtoHAsync_v2_ptsz(j->out + i * sz, j->b + i * sz, sz, NULL));
        else
            CK(cuMemcpyDtoHAsync_v2(j->out + i * sz, j->b + i * sz, sz, CU_STREAM_PER_THREAD));
    pthread_mutex_lock(&j->mu);
    j->stage = 1;
    pthread_cond_broadcast(&j->cv);
    while (j->stage < 2)  /* stay alive, without syncing, until the check is done */
        pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static int sc_ptds(void)
{
    uint64_t rng = rng_for("ptds"), h = FNV0;
    int bad = 0;
    for (int how = 0; how < 2; how++) {
        struct ptds_job j = {.n = 64, .sz = 4 * KiB, .stage = 0};
        size_t tot = j.n * j.sz;
        j.src = pinned(tot);
        j.out = pinned(tot);
        j.a = dev(tot);
        j.b = dev(tot);
        fill_random(j.src, tot, &rng);
        pthread_mutex_init(&j.mu, NULL);
        pthread_cond_init(&j.cv, NULL);
        pthread_t t;
        if (pthread_create(&t, NULL, ptds_producer, &j) != 0) {
            fprintf(stderr, "drv_copies: pthread_create failed\n");
            return 1;
        }
        pthread_mutex_lock(&j.mu);
        while (j.stage < 1)
            pthread_cond_wait(&j.cv, &j.mu);
        pthread_mutex_unlock(&j.mu);
        if (how == 0) {
            CK(cuCtxSynchronize());
            bad |= same("ptds", "other thread's cuCtxSynchronize", j.out, j.src, tot);
            h = fnv(h, j.out, tot);
        } else {
            /* A synchronous legacy copy waits for every blocking stream, the
             * producer's per-thread stream included. */
            unsigned char *got = malloc(tot);
            CK(cuMemcpyDtoH(got, j.b, tot));
            bad |= same("ptds", "other thread's legacy cuMemcpyDtoH", got, j.src, tot);
            h = fnv(h, got, tot);
            free(got);
        }
        pthread_mutex_lock(&j.mu);
        j.stage = 2;
        pthread_cond_broadcast(&j.cv);
        pthread_mutex_unlock(&j.mu);
        pthread_join(t, NULL);
        CK(cuCtxSynchronize());
        if (how == 1)
            bad |= same("ptds", "producer's D2H", j.out, j.src, tot);
        CK(cuMemFree(j.a));
        CK(cuMemFree(j.b));
        CK(cuMemFreeHost(j.src));
        CK(cuMemFreeHost(j.out));
        pthread_mutex_destroy(&j.mu);
        pthread_cond_destroy(&j.cv);
    }
    report("ptds", h);
    return bad;
}

/* Copies queued, then capture begun on the same stream: the queued copies run
 * now, the captured ones enter the graph (all of them), and the graph replays. */
static int sc_capture(void)
{
    const size_t n = 32, sz = 4 * KiB, tot = n * sz;
    uint64_t rng = rng_for("capture"), h = FNV0;
    int bad = 0;
    CUstream s = stream(CU_STREAM_NON_BLOCKING);
    unsigned char *src = pinned(tot), *out = pinned(tot), *early = pinned(tot);
    CUdeviceptr a = dev(tot), b = dev(tot);
    fill_random(src, tot, &rng);
    for (size_t i = 0; i < n; i++) CK(cuMemcpyHtoDAsync(a + i * sz, src + i * sz, sz, s));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoHAsync(early + i * sz, a + i * sz, sz, s));
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoDAsync(b + i * sz, a + i * sz, sz, s));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoHAsync(out + i * sz, b + i * sz, sz, s));
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    size_t nodes = 0;
    CK(cuGraphGetNodes(g, NULL, &nodes));
    if (nodes != 2 * n) {
        fprintf(stderr, "drv_copies: capture: graph has %zu nodes, want %zu\n", nodes, 2 * n);
        bad = 1;
    }
    CK(cuStreamSynchronize(s));
    bad |= same("capture", "copies queued before capture", early, src, tot);
    CUgraphExec ge;
    CK(cuGraphInstantiate(&ge, g, 0));
    for (int round = 0; round < 2; round++) {
        if (round) {  /* new data through queued copies, then replay */
            fill_random(src, tot, &rng);
            for (size_t i = 0; i < n; i++)
                CK(cuMemcpyHtoDAsync(a + i * sz, src + i * sz, sz, s));
        }
        memset(out, 0xa5, tot);
        CK(cuGraphLaunch(ge, s));
        CK(cuStreamSynchronize(s));
        bad |= same("capture", round ? "second replay" : "first replay", out, src, tot);
        h = fnv(h, out, tot);
    }
    CK(cuGraphExecDestroy(ge));
    CK(cuGraphDestroy(g));
    CK(cuMemFree(a));
    CK(cuMemFree(b));
    CK(cuMemFreeHost(src));
    CK(cuMemFreeHost(out));
    CK(cuMemFreeHost(early));
    CK(cuStreamDestroy(s));
    report("capture", h);
    return bad;
}

/* Stream destroyed while copies are queued on it: they still complete. */
static int sc_destroy(void)
{
    const size_t n = 64, sz = 4 * KiB, tot = n * sz;
    uint64_t rng = rng_for("destroy");
    CUstream s = stream(CU_STREAM_NON_BLOCKING);
    unsigned char *src = pinned(tot), *out = pinned(tot);
    CUdeviceptr a = dev(tot);
    fill_random(src, tot, &rng);
    for (size_t i = 0; i < n; i++) CK(cuMemcpyHtoDAsync(a + i * sz, src + i * sz, sz, s));
    for (size_t i = 0; i < n; i++) CK(cuMemcpyDtoHAsync(out + i * sz, a + i * sz, sz, s));
    CK(cuStreamDestroy(s));
    CK(cuCtxSynchronize());
    int bad = same("destroy", "after destroy + cuCtxSynchronize", out, src, tot);
    report("destroy", fnv(FNV0, out, tot));
    CK(cuMemFree(a));
    CK(cuMemFreeHost(src));
    CK(cuMemFreeHost(out));
    return bad;
}

/* Pageable host memory: an H2D source may be reused as soon as the call
 * returns; a D2H into pageable memory has landed when the call returns. */
static int sc_pageable(void)
{
    const size_t n = 64, sz = 4 * KiB, tot = n * sz;
    uint64_t rng = rng_for("pageable"), h = FNV0;
    int bad = 0;
    CUstream s = stream(CU_STREAM_NON_BLOCKING);
    unsigned char *src = malloc(tot), *want = malloc(tot), *out = malloc(tot);
    unsigned char *pin = pinned(tot), *pout = pinned(tot);
    CUdeviceptr a = dev(tot);
    fill_random(want, tot, &rng);
    fill_random(pin, tot, &rng);
    memcpy(src, want, tot);
    memset(out, 0xa5, tot);
    for (size_t i = 0; i < n; i++) {
        CK(cuMemcpyHtoDAsync(a + i * sz, src + i * sz, sz, s));
        memset(src + i * sz, 0xee, sz);  /* allowed: the driver staged it */
    }
    for (size_t i = 0; i < n; i++)
        CK(cuMemcpyDtoHAsync(out + i * sz, a + i * sz, sz, s));
    bad |= same("pageable", "D2H into pageable, before any sync", out, want, tot);
    h = fnv(h, out, tot);
    /* Pinned and pageable copies interleaved on one stream keep their order. */
    for (size_t i = 0; i < n; i++) {
        if (i % 3 == 0) {
            memcpy(src, pin + i * sz, sz);
            CK(cuMemcpyHtoDAsync(a + i * sz, src, sz, s));
        } else {
            CK(cuMemcpyHtoDAsync(a + i * sz, pin + i * sz, sz, s));
        }
    }
    for (size_t i = 0; i < n; i++)
        CK(cuMemcpyDtoHAsync(pout + i * sz, a + i * sz, sz, s));
    CK(cuStreamSynchronize(s));
    bad |= same("pageable", "interleaved pinned/pageable", pout, pin, tot);
    h = fnv(h, pout, tot);
    CK(cuMemFree(a));
    CK(cuMemFreeHost(pin));
    CK(cuMemFreeHost(pout));
    free(src);
    free(want);
    free(out);
    CK(cuStreamDestroy(s));
    report("pageable", h);
    return bad;
}

/* Random sizes from 256 B to 1 MiB (the policy's edges included), some at odd
 * offsets, through all three directions in one run. */
static int sc_mixed(void)
{
    static const size_t sizes[] = {256, 1000, 4 * KiB, 8 * KiB - 1, 8 * KiB, 12 * KiB,
                                   16 * KiB, 24 * KiB, 28 * KiB - 1, 28 * KiB, 32 * KiB,
                                   64 * KiB, 256 * KiB, 1 * MiB};
    enum { N = 120 };
    uint64_t rng = rng_for("mixed");
    size_t off[N + 1], len[N];
    off[0] = 0;
    for (size_t i = 0; i < N; i++) {
        len[i] = sizes[splitmix(&rng) % (sizeof sizes / sizeof *sizes)];
        off[i + 1] = off[i] + len[i] + (splitmix(&rng) % 4);  /* odd gaps: odd offsets */
    }
    size_t tot = off[N];
    CUstream s = stream(CU_STREAM_NON_BLOCKING);
    unsigned char *src = pinned(tot), *out = pinned(tot);
    CUdeviceptr a = dev(tot), b = dev(tot);
    fill_random(src, tot, &rng);
    for (size_t i = 0; i < N; i++)
        CK(cuMemcpyHtoDAsync(a + off[i], src + off[i], len[i], s));
    for (size_t i = 0; i < N; i++)
        CK(cuMemcpyDtoDAsync(b + off[i], a + off[i], len[i], s));
    for (size_t i = 0; i < N; i++)
        CK(cuMemcpyDtoHAsync(out + off[i], b + off[i], len[i], s));
    CK(cuStreamSynchronize(s));
    int bad = 0;
    uint64_t h = FNV0;
    for (size_t i = 0; i < N && !bad; i++) {
        char what[64];
        snprintf(what, sizeof what, "copy %zu (%zu bytes at %zu)", i, len[i], off[i]);
        bad |= same("mixed", what, out + off[i], src + off[i], len[i]);
        h = fnv(h, out + off[i], len[i]);
    }
    CK(cuMemFree(a));
    CK(cuMemFree(b));
    CK(cuMemFreeHost(src));
    CK(cuMemFreeHost(out));
    CK(cuStreamDestroy(s));
    report("mixed", h);
    return bad;
}

/* ---- main -------------------------------------------------------------------- */

static const struct {
    const char *name;
    int (*fn)(void);
} scenarios[] = {
    {"runs", sc_runs},         {"chain", sc_chain},       {"overwrite", sc_overwrite},
    {"query", sc_query},       {"event", sc_event},       {"legacy", sc_legacy},
    {"ptds", sc_ptds},         {"capture", sc_capture},   {"destroy", sc_destroy},
    {"pageable", sc_pageable}, {"mixed", sc_mixed},
};
#define NSC (sizeof scenarios / sizeof *scenarios)

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "list") == 0) {
        for (size_t i = 0; i < NSC; i++)
            puts(scenarios[i].name);
        return 0;
    }
    for (int a = 1; a < argc; a++) {
        size_t i = 0;
        while (i < NSC && strcmp(argv[a], scenarios[i].name) != 0)
            i++;
        if (i == NSC) {
            fprintf(stderr, "drv_copies: unknown scenario '%s' (try: drv_copies list)\n", argv[a]);
            return 1;
        }
    }
    if (access("/dev/nvidiactl", F_OK) != 0) {
        fprintf(stderr, "drv_copies: no /dev/nvidiactl: no GPU, skipped\n");
        return 77;
    }
    CUresult r = cuInit(0);
    int ndev = 0;
    if (r != CUDA_SUCCESS || cuDeviceGetCount(&ndev) != CUDA_SUCCESS || ndev == 0) {
        fprintf(stderr, "drv_copies: cuInit: %d, %d devices: no usable GPU, skipped\n", (int)r, ndev);
        return 77;
    }
    const char *seed = getenv("CB_TEST_SEED");
    g_seed = seed && *seed ? strtoull(seed, NULL, 0)
                           : (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
    int drv_version = 0;
    cuDriverGetVersion(&drv_version);
    printf("drv_copies: seed %llu, cuda.h %d, driver %d\n", (unsigned long long)g_seed, CUDA_VERSION,
           drv_version);

    CUdevice d;
    CK(cuDeviceGet(&d, 0));
    CK(cuDevicePrimaryCtxRetain(&g_ctx, d));
    CK(cuCtxSetCurrent(g_ctx));

    int failed = 0;
    for (size_t i = 0; i < NSC; i++) {
        int wanted = argc == 1;
        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], scenarios[i].name) == 0;
        if (!wanted)
            continue;
        int bad = scenarios[i].fn();
        printf("%-10s %s\n", scenarios[i].name, bad ? "FAIL" : "ok");
        fflush(stdout);
        failed |= bad;
    }
    CK(cuCtxSynchronize());
    CK(cuDevicePrimaryCtxRelease(d));
    return failed ? 1 : 0;
}
