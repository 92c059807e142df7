/* bench_threads.c - threads that copy at once, each on its own stream: T threads,
 * each with its own non-blocking stream, each issuing N copies of SIZE bytes
 * (host to device by default) then synchronizing its stream, all released at
 * once; the time is the wall time of the whole set, from the release to the
 * last thread's return from its synchronize.
 *
 * Under LD_PRELOAD=libcubatch.so the rounds interleave four modes, so that one
 * process measures both sides and their spread (an A/A column for each):
 *   plain    cubatch_set_enabled(0): every copy passes through (the loop)
 *   cubatch  cubatch_set_enabled(1): copies batch
 *   plain2, cubatch2  the same again
 * Without cubatch (no preload) only plain and plain2 are measured.
 *
 *   bench_threads [--threads T] [--n N] [--size BYTES] [--dir h2d|d2h|d2d] [--rounds R]
 * Prints one line per mode: the median and the minimum of the set's wall time
 * in ms, then the speedup of cubatch over plain (medians) and each A/A ratio.
 * Every thread spins (the workers for their release, the main thread for their
 * end): pinned to no more cores than workers, the main thread shares a worker's
 * core and rounds wait for the scheduler's time slices (bench/RESULTS.md, run
 * AJ).  Give it one core more than threads. */
#define _GNU_SOURCE
#include <cuda.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x)                                                                             \
    do {                                                                                  \
        CUresult rc_ = (x);                                                               \
        if (rc_ != CUDA_SUCCESS) {                                                        \
            fprintf(stderr, "bench_threads: %s = %d (line %d)\n", #x, (int)rc_, __LINE__); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

enum { MAXT = 64, MODES = 4 };
static const char *const mode_names[MODES] = {"plain", "cubatch", "plain2", "cubatch2"};

static CUcontext g_ctx;
static int g_n, g_dir; /* 0 h2d, 1 d2h, 2 d2d */
static size_t g_size;
static atomic_int g_round = -1; /* the round the workers may start; -2: quit */
static atomic_int g_left;       /* workers still copying in this round */

struct worker {
    pthread_t th;
    CUstream s;
    void *host;
    CUdeviceptr a, b;
};

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    CK(cuCtxSetCurrent(g_ctx));
    for (int done = -1;;) {
        int r;
        while ((r = atomic_load_explicit(&g_round, memory_order_acquire)) == done)
            ; /* spin: the release must not wait for a wake-up */
        if (r == -2)
            return NULL;
        done = r;
        for (int i = 0; i < g_n; i++) {
            size_t off = (size_t)i * g_size;
            if (g_dir == 1)
                CK(cuMemcpyDtoHAsync_v2((char *)w->host + off, w->a + off, g_size, w->s));
            else if (g_dir == 2)
                CK(cuMemcpyDtoDAsync_v2(w->b + off, w->a + off, g_size, w->s));
            else
                CK(cuMemcpyHtoDAsync_v2(w->a + off, (char *)w->host + off, g_size, w->s));
        }
        CK(cuStreamSynchronize(w->s));
        atomic_fetch_sub_explicit(&g_left, 1, memory_order_release);
    }
}

int main(int argc, char **argv)
{
    int threads = 8, rounds = 15;
    const char *dir = "h2d";
    g_n = 1024;
    g_size = 4096;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--n"))
            g_n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--size"))
            g_size = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: bench_threads [--threads T] [--n N] [--size BYTES] [--dir h2d|d2h|d2d] "
                            "[--rounds R]\n");
            return 2;
        }
    }
    g_dir = !strcmp(dir, "d2h") ? 1 : !strcmp(dir, "d2d") ? 2 : !strcmp(dir, "h2d") ? 0 : -1;
    if (threads < 1 || threads > MAXT || g_n < 1 || g_size == 0 || rounds < 1 || g_dir < 0) {
        fprintf(stderr, "bench_threads: --threads 1..%d, --n >= 1, --size >= 1, --rounds >= 1, --dir h2d|d2h|d2d\n",
                MAXT);
        return 2;
    }
    int (*set_enabled)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "cubatch_set_enabled");
    CUdevice dev;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
    CK(cuCtxSetCurrent(g_ctx));
    static struct worker w[MAXT];
    size_t bytes = (size_t)g_n * g_size;
    for (int t = 0; t < threads; t++) {
        CK(cuStreamCreate(&w[t].s, CU_STREAM_NON_BLOCKING));
        CK(cuMemAllocHost_v2(&w[t].host, bytes));
        memset(w[t].host, t + 1, bytes);
        CK(cuMemAlloc_v2(&w[t].a, bytes));
        CK(cuMemAlloc_v2(&w[t].b, bytes));
        CK(cuMemsetD8_v2(w[t].a, (unsigned char)t, bytes));
    }
    CK(cuCtxSynchronize());
    for (int t = 0; t < threads; t++)
        if (pthread_create(&w[t].th, NULL, worker_main, &w[t])) {
            fprintf(stderr, "bench_threads: pthread_create failed\n");
            return 1;
        }
    int modes = set_enabled ? MODES : 1; /* without cubatch: plain, and its A/A below */
    double *ms[MODES];
    for (int m = 0; m < MODES; m++)
        ms[m] = calloc((size_t)rounds, sizeof(double));
    int round = 0;
    /* two warm-up rounds of each mode, then the measured ones, modes interleaved */
    for (int r = -2; r < rounds; r++) {
        for (int m = 0; m < (set_enabled ? MODES : 2); m++) {
            if (set_enabled)
                set_enabled(m == 1 || m == 3);
            atomic_store(&g_left, threads);
            double t0 = now_ns();
            atomic_store_explicit(&g_round, round++, memory_order_release);
            while (atomic_load_explicit(&g_left, memory_order_acquire) > 0)
                ;
            double t1 = now_ns();
            if (r >= 0)
                ms[set_enabled ? m : 2 * m][r] = (t1 - t0) / 1e6;
        }
    }
    atomic_store(&g_round, -2);
    for (int t = 0; t < threads; t++)
        pthread_join(w[t].th, NULL);
    if (set_enabled)
        set_enabled(1);
    double med[MODES] = {0};
    printf("bench_threads threads=%d n=%d size=%zu dir=%s rounds=%d cubatch=%s\n", threads, g_n, g_size, dir, rounds,
           set_enabled ? "preloaded" : "absent");
    for (int m = 0; m < MODES; m++) {
        if (!set_enabled && (m == 1 || m == 3))
            continue;
        qsort(ms[m], (size_t)rounds, sizeof(double), cmp);
        med[m] = ms[m][rounds / 2];
        printf("  %-8s median %.4f ms  min %.4f ms\n", mode_names[m], med[m], ms[m][0]);
    }
    if (modes > 1)
        printf("  speedup %.2fx (plain/cubatch medians)  A/A plain2/plain %.3f  cubatch2/cubatch %.3f\n",
               med[0] / med[1], med[2] / med[0], med[3] / med[1]);
    else
        printf("  A/A plain2/plain %.3f\n", med[2] / med[0]);
    for (int m = 0; m < MODES; m++)
        free(ms[m]);
    return 0;
}
