/* bench_copies: time N small asynchronous copies through the driver API, as a
 * loop of cuMemcpy*Async calls and as one hand-written cuMemcpyBatchAsync.
 *
 *   bench_copies [-D DEVICES] [-r REPS] [-w WARMUP] [-m MODES] [-b BUSY_US] [-s STREAM]
 *                [-l LAYOUT] CELL...
 *
 * -D (anywhere; default 0) names the devices, a comma list of ordinals: the
 * whole command runs once per device, at the same time, one thread per device
 * (its primary context current, its own streams and buffers), every mode of
 * every cell started together on all of them (a barrier).  With more than one
 * device the stream column says whose (side@dev1).
 * Other options apply to the CELLs that follow them and may be repeated between cells.
 *   CELL    DIR:COUNT:SIZE, DIR one of h2d d2h d2d, SIZE in bytes or with a K/M
 *           suffix (e.g. h2d:256:4K)
 *   MODES   comma list (default loop,batch):
 *     loop     COUNT cuMemcpy{HtoD,DtoH,DtoD}Async on one stream, then
 *              cuStreamSynchronize: what a program does (under LD_PRELOAD of
 *              libcubatch.so, this is what cubatch rewrites)
 *     batch    the same copies as one cuMemcpyBatchAsync (CUDA 13, 8 arguments,
 *              srcAccessOrder STREAM), then cuStreamSynchronize; not on the
 *              legacy stream (the batch API rejects it: skipped with a comment)
 *     single   one copy of SIZE, then cuStreamSynchronize (COUNT ignored)
 *     overlap  the loop, then a CPU busy loop of BUSY_US before the sync; the
 *              ideal is max(copy, busy).  BUSY_US 0 (the default) means this
 *              cell's batch median, measured first in the same process; give a
 *              fixed -b to compare processes (and on the legacy stream)
 *     enqueue  only the COUNT calls (no sync inside the timed region); the
 *              extra column is the cost per call in ns
 *     events1  the loop with one cuEventRecord after each copy, each copy its
 *              own event (how TensorRT-LLM's KV-cache transfers, XLA and code
 *              tracking each buffer's readiness issue copies), then the sync
 *     events2  the same with two records after each copy (two events a copy)
 *   STREAM  the stream of the cells that follow (default side):
 *     side      a created stream, CU_STREAM_NON_BLOCKING
 *     blocking  a created stream, flags 0 (synchronises with the legacy stream)
 *     legacy    CU_STREAM_LEGACY, the legacy default stream
 *     null      the NULL handle (the legacy default stream, as most programs name it)
 *     ptds      CU_STREAM_PER_THREAD, the per-thread default stream
 *   LAYOUT  where the blocks of the cells that follow lie (default contiguous):
 *     contiguous     block i at offset i*SIZE in both buffers (copy i+1 starts
 *                    where copy i ends, on both sides: a run a library could
 *                    merge into one copy)
 *     scattered[:S]  block i from slot ps[i] of the source to slot pd[i] of
 *                    the destination, ps and pd two independent random
 *                    permutations of the COUNT slots, drawn from seed S
 *                    (default 43) and COUNT: every process draws the same ones,
 *                    and no sorting of the copies makes both sides adjacent
 *            Every mode (loop, batch, overlap, enqueue, events*) copies the same
 *            blocks; single copies one block of SIZE.  With -l anywhere on the
 *            command line, the output gets a last column, layout (contiguous or
 *            scattered:S); without it the output is as before.
 *   REPS    timed repetitions (default 15); WARMUP untimed ones before (3)
 *
 * Every cell and mode is first run once on poisoned destinations (poisoned on
 * the same stream) and its bytes checked (exit 1 if wrong).  Pinned host memory;
 * clock_gettime(MONOTONIC) around enqueue + sync.  Output, CSV on stdout, '#'
 * lines are comments (the first names the device, cubatch's state and the CPUs
 * the process may run on):
 *   mode,stream,dir,count,size,reps,median_us,p10_us,p90_us,extra[,layout]
 * extra: GB/s (loop, batch, single), the busy time in us (overlap), ns per call
 * (enqueue).  Exit: 0 done, 1 error or wrong bytes, 2 usage, 77 no GPU.
 * BENCH_SIM=1 lets it run without /dev/nvidiactl, on tests/sim's simulated
 * driver (LD_LIBRARY_PATH), to test the scripts: the times mean nothing.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_NAME "bench_copies"
#include "bench_cu.h"

typedef CUresult(CUDAAPI *batch_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                    CUmemcpyAttributes *, size_t *, size_t, CUstream);

enum dir { H2D, D2H, D2D };
static const char *dir_name[] = {"h2d", "d2h", "d2d"};

/* Buffers, grown as cells need.  hsrc holds random bytes; the device source
 * (for d2h, d2d) is a copy of it.  Destinations are hdst (d2h) and ddst. */
static __thread struct {
    size_t cap;
    unsigned char *hsrc, *hdst;
    CUdeviceptr dsrc, ddst;
} B;

/* Each device's thread has its own of these (-D). */
static __thread CUstream g_s;            /* the stream of the cells being measured */
static __thread const char *g_sname = "side";
static __thread CUstream g_side, g_blocking; /* created when first asked for */
static __thread CUdeviceptr *g_dsts, *g_srcs;
static __thread size_t *g_sizes, g_arr_cap;
/* -l: where block i lies, in bytes from the buffers' starts (source, destination) */
static __thread size_t *g_soff, *g_doff;
static __thread int g_scattered;           /* the layout of the cells being measured */
static __thread unsigned long g_seed = 43; /* scattered:S */
static int g_layout_col;                   /* -l given: print the layout column */
static __thread char g_label[32];        /* the stream column: g_sname, or g_sname@devN */
static __thread int g_devno;
static batch_fn g_batch;
/* -D with more than one device: every mode of every cell starts together */
static int g_ndevs = 1;
static pthread_barrier_t g_start;

static void ensure(size_t bytes, size_t count)
{
    if (count > g_arr_cap) {
        free(g_dsts);
        free(g_srcs);
        free(g_sizes);
        free(g_soff);
        free(g_doff);
        g_dsts = malloc(count * sizeof *g_dsts);
        g_srcs = malloc(count * sizeof *g_srcs);
        g_sizes = malloc(count * sizeof *g_sizes);
        g_soff = malloc(count * sizeof *g_soff);
        g_doff = malloc(count * sizeof *g_doff);
        if (!g_dsts || !g_srcs || !g_sizes || !g_soff || !g_doff) {
            fprintf(stderr, "bench_copies: out of memory\n");
            exit(1);
        }
        g_arr_cap = count;
    }
    if (bytes <= B.cap)
        return;
    if (B.cap) {
        CK(cuMemFreeHost(B.hsrc));
        CK(cuMemFreeHost(B.hdst));
        CK(cuMemFree(B.dsrc));
        CK(cuMemFree(B.ddst));
    }
    CK(cuMemHostAlloc((void **)&B.hsrc, bytes, 0));
    CK(cuMemHostAlloc((void **)&B.hdst, bytes, 0));
    CK(cuMemAlloc(&B.dsrc, bytes));
    CK(cuMemAlloc(&B.ddst, bytes));
    uint64_t x = 0x243f6a8885a308d3ULL ^ (uint64_t)now_us();
    for (size_t i = 0; i + 8 <= bytes; i += 8) {  /* xorshift: random, not zeros */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(B.hsrc + i, &x, 8);
    }
    CK(cuMemcpyHtoD(B.dsrc, B.hsrc, bytes));
    B.cap = bytes;
}

/* Fisher-Yates with xorshift64 from x (never 0): a permutation of 0..n-1, in slot units */
static void permute(size_t *p, size_t n, size_t size, uint64_t x)
{
    for (size_t i = 0; i < n; i++)
        p[i] = i;
    for (size_t i = n; i > 1; i--) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t k = (size_t)(x % i), t = p[i - 1];
        p[i - 1] = p[k];
        p[k] = t;
    }
    for (size_t i = 0; i < n; i++)
        p[i] *= size;
}

/* The buffers and the block offsets of a cell of COUNT blocks of SIZE, in the
 * current layout (the same permutations for every mode and process). */
static void prepare_cell(size_t count, size_t size)
{
    ensure(count * size, count);
    if (!g_scattered) {
        for (size_t i = 0; i < count; i++)
            g_soff[i] = g_doff[i] = i * size;
        return;
    }
    uint64_t base = (uint64_t)g_seed * 0x9e3779b97f4a7c15ULL ^ (uint64_t)count * 0xbf58476d1ce4e5b9ULL;
    permute(g_soff, count, size, base | 1);
    permute(g_doff, count, size, (base ^ 0x94d049bb133111ebULL) | 2);
}

static void copy_one(enum dir d, size_t i, size_t size)
{
    size_t so = g_soff[i], dof = g_doff[i];
    switch (d) {
    case H2D: CK(cuMemcpyHtoDAsync(B.ddst + dof, B.hsrc + so, size, g_s)); break;
    case D2H: CK(cuMemcpyDtoHAsync(B.hdst + dof, B.dsrc + so, size, g_s)); break;
    case D2D: CK(cuMemcpyDtoDAsync(B.ddst + dof, B.dsrc + so, size, g_s)); break;
    }
}

static void loop(enum dir d, size_t count, size_t size)
{
    for (size_t i = 0; i < count; i++)
        copy_one(d, i, size);
}

/* events1/events2: every copy followed by `per` records of its own events */
static __thread CUevent *g_events; /* each device thread's own (events are per context) */
static __thread size_t g_nevents;
static void loop_events(enum dir d, size_t count, size_t size, int per)
{
    size_t need = count * (size_t)per;
    if (need > g_nevents) {
        g_events = realloc(g_events, need * sizeof *g_events);
        if (!g_events) {
            fprintf(stderr, "bench_copies: out of memory\n");
            exit(1);
        }
        for (size_t i = g_nevents; i < need; i++)
            CK(cuEventCreate(&g_events[i], CU_EVENT_DISABLE_TIMING));
        g_nevents = need;
    }
    for (size_t i = 0; i < count; i++) {
        copy_one(d, i, size);
        for (int k = 0; k < per; k++)
            CK(cuEventRecord(g_events[i * (size_t)per + (size_t)k], g_s));
    }
}
static int events_per_copy(const char *mode)
{
    return !strcmp(mode, "events1") ? 1 : !strcmp(mode, "events2") ? 2 : 0;
}

static void batch(enum dir d, size_t count, size_t size)
{
    CUmemcpyAttributes attr;
    memset(&attr, 0, sizeof attr);
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attr.srcLocHint.type = d == H2D ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
    attr.dstLocHint.type = d == D2H ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
    size_t idx0 = 0;
    CUdeviceptr src = d == H2D ? (CUdeviceptr)(uintptr_t)B.hsrc : B.dsrc;
    CUdeviceptr dst = d == D2H ? (CUdeviceptr)(uintptr_t)B.hdst : B.ddst;
    for (size_t i = 0; i < count; i++) {  /* filled each time, as a program would */
        g_srcs[i] = src + g_soff[i];
        g_dsts[i] = dst + g_doff[i];
        g_sizes[i] = size;
    }
    CK(g_batch(g_dsts, g_srcs, g_sizes, count, &attr, &idx0, 1, g_s));
}

static void busy_until(double t)
{
    while (now_us() < t)
        ;
}

/* Poison the destination, run once, compare with the source. */
static void prepare_and_check(const char *mode, enum dir d, size_t count, size_t size)
{
    size_t n = count * size;
    if (d == D2H)
        memset(B.hdst, 0xa5, n);
    else  /* on the measured stream: a non-blocking stream would not wait for cuMemsetD8 */
        CK(cuMemsetD8Async(B.ddst, 0xa5, n, g_s));
    if (strcmp(mode, "batch") == 0)
        batch(d, count, size);
    else if (events_per_copy(mode))
        loop_events(d, count, size, events_per_copy(mode));
    else
        loop(d, count, size);
    CK(cuStreamSynchronize(g_s));
    if (d != D2H)
        CK(cuMemcpyDtoH(B.hdst, B.ddst, n));
    for (size_t i = 0; i < count; i++)
        if (memcmp(B.hdst + g_doff[i], B.hsrc + g_soff[i], size) != 0) {
            fprintf(stderr, "bench_copies: %s %s %zu x %zu (%s): wrong bytes in block %zu\n", mode,
                    dir_name[d], count, size, g_scattered ? "scattered" : "contiguous", i);
            exit(1);
        }
}

struct stats { double med, p10, p90; };

static struct stats summarize(double *t, int n)
{
    qsort(t, n, sizeof *t, cmp_d);
    struct stats s = {t[n / 2], t[n / 10], t[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1]};
    if (n % 2 == 0)
        s.med = (t[n / 2 - 1] + t[n / 2]) / 2;
    return s;
}

/* Time one mode of one cell; returns the median in µs. */
static double run_mode(const char *mode, enum dir d, size_t count, size_t size, int reps,
                       int warm, double busy_us)
{
    int is_batch = !strcmp(mode, "batch"), is_enq = !strcmp(mode, "enqueue");
    int is_over = !strcmp(mode, "overlap");
    if (!strcmp(mode, "single"))
        count = 1;
    prepare_cell(count, size);
    prepare_and_check(mode, d, count, size);
    if (g_ndevs > 1)
        pthread_barrier_wait(&g_start);
    double *t = malloc(reps * sizeof *t);
    for (int r = -warm; r < reps; r++) {
        CK(cuStreamSynchronize(g_s));
        double t0 = now_us(), t1;
        if (is_batch)
            batch(d, count, size);
        else if (events_per_copy(mode))
            loop_events(d, count, size, events_per_copy(mode));
        else
            loop(d, count, size);
        if (is_enq) {
            t1 = now_us();
            CK(cuStreamSynchronize(g_s));
        } else {
            if (is_over)
                busy_until(t0 + busy_us);
            CK(cuStreamSynchronize(g_s));
            t1 = now_us();
        }
        if (r >= 0)
            t[r] = t1 - t0;
    }
    struct stats s = summarize(t, reps);
    free(t);
    char extra[64];
    if (is_enq)
        snprintf(extra, sizeof extra, "%.1f", s.med * 1e3 / count);  /* ns per call */
    else if (is_over)
        snprintf(extra, sizeof extra, "%.1f", busy_us);
    else
        snprintf(extra, sizeof extra, "%.3f", count * size / s.med / 1e3);  /* GB/s */
    if (g_ndevs > 1)
        snprintf(g_label, sizeof g_label, "%s@dev%d", g_sname, g_devno);
    else
        snprintf(g_label, sizeof g_label, "%s", g_sname);
    char layout[48] = "";
    if (g_layout_col)
        snprintf(layout, sizeof layout, g_scattered ? ",scattered:%lu" : ",contiguous", g_seed);
    printf("%s,%s,%s,%zu,%zu,%d,%.2f,%.2f,%.2f,%s%s\n", mode, g_label, dir_name[d], count, size,
           reps, s.med, s.p10, s.p90, extra, layout);
    fflush(stdout);
    return s.med;
}

/* Select the stream named NAME for the cells that follow; -1 if unknown. */
static int select_stream(const char *name)
{
    if (!strcmp(name, "side")) {
        if (!g_side)
            CK(cuStreamCreate(&g_side, CU_STREAM_NON_BLOCKING));
        g_s = g_side;
        g_sname = "side";
    } else if (!strcmp(name, "blocking")) {
        if (!g_blocking)
            CK(cuStreamCreate(&g_blocking, CU_STREAM_DEFAULT));
        g_s = g_blocking;
        g_sname = "blocking";
    } else if (!strcmp(name, "legacy")) {
        g_s = CU_STREAM_LEGACY;
        g_sname = "legacy";
    } else if (!strcmp(name, "null")) {
        g_s = NULL;
        g_sname = "null";
    } else if (!strcmp(name, "ptds")) {
        g_s = CU_STREAM_PER_THREAD;
        g_sname = "ptds";
    } else {
        return -1;
    }
    return 0;
}

static int on_legacy(void)
{
    return g_s == NULL || g_s == CU_STREAM_LEGACY;
}

static void print_header(void)
{
    printf("mode,stream,dir,count,size,reps,median_us,p10_us,p90_us,extra%s\n", g_layout_col ? ",layout" : "");
}

/* -l contiguous | scattered[:SEED]; -1 if malformed */
static int select_layout(const char *v)
{
    if (!strcmp(v, "contiguous")) {
        g_scattered = 0;
        return 0;
    }
    if (strncmp(v, "scattered", 9) != 0)
        return -1;
    g_scattered = 1;
    g_seed = 43;
    if (v[9] == 0)
        return 0;
    char *end;
    if (v[9] != ':' || !v[10])
        return -1;
    g_seed = strtoul(v + 10, &end, 10);
    return *end ? -1 : 0;
}

static int parse_cell(const char *arg, enum dir *d, size_t *count, size_t *size)
{
    char ds[8], suf = 0;
    unsigned long c;
    double sz;
    int n = sscanf(arg, "%7[a-z2]:%lu:%lf%c", ds, &c, &sz, &suf);
    if (n < 3 || c == 0 || sz < 1)
        return -1;
    if (!strcmp(ds, "h2d")) *d = H2D;
    else if (!strcmp(ds, "d2h")) *d = D2H;
    else if (!strcmp(ds, "d2d")) *d = D2D;
    else return -1;
    if (n == 4) {
        if (suf == 'K' || suf == 'k') sz *= 1024;
        else if (suf == 'M' || suf == 'm') sz *= 1024 * 1024;
        else return -1;
    }
    *count = c;
    *size = (size_t)sz;
    return 0;
}

/* The whole command line on one device (this thread's). */
struct devrun { int argc; char **argv; int dev; int status; };

static void *run_device(void *arg)
{
    struct devrun *dr = arg;
    int argc = dr->argc;
    char **argv = dr->argv;
    CUdevice dev;
    char name[128];
    int drv = 0;
    g_devno = dr->dev;
    bench_primary(dr->dev, &dev);
    CK(cuDeviceGetName(name, sizeof name, dev));
    CK(cuDriverGetVersion(&drv));
    select_stream("side");

    int (*cb_enabled)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cubatch_batching_enabled");
    char cpus[256];
    cpu_list(cpus, sizeof cpus);
    char ordinal[32] = "";
    if (g_ndevs > 1 || dr->dev != 0)
        snprintf(ordinal, sizeof ordinal, " (ordinal %d)", dr->dev);
    printf("# device %s%s, driver %d, cuMemcpyBatchAsync %s, cubatch %s, cpus %s\n", name, ordinal, drv,
           g_batch ? "found" : "MISSING",
           cb_enabled ? (cb_enabled() ? "loaded, batching" : "loaded, pass-through") : "not loaded",
           cpus);
    if (g_ndevs == 1) /* with several, main printed it before the threads started */
        print_header();
    fflush(stdout);

    int reps = 15, warm = 3;
    double busy = 0;
    char modes[128] = "loop,batch";
    dr->status = 2;
    for (int a = 1; a < argc; a++) {
        const char *o = argv[a];
        if (o[0] == '-' && a + 1 < argc) {
            const char *v = argv[++a];
            switch (o[1]) {
            case 'D': break; /* main's */
            case 'r': reps = atoi(v); break;
            case 'w': warm = atoi(v); break;
            case 'b': busy = atof(v); break;
            case 'm': snprintf(modes, sizeof modes, "%s", v); break;
            case 'l':
                if (select_layout(v) != 0) {
                    fprintf(stderr, "bench_copies: unknown layout '%s' (contiguous, scattered[:SEED])\n", v);
                    return dr;
                }
                break;
            case 's':
                if (select_stream(v) != 0) {
                    fprintf(stderr, "bench_copies: unknown stream '%s' (side, blocking, legacy, null, ptds)\n", v);
                    return dr;
                }
                break;
            default: fprintf(stderr, "bench_copies: unknown option %s\n", o); return dr;
            }
            if (reps < 1 || warm < 0) {
                fprintf(stderr, "bench_copies: bad -r/-w\n");
                return dr;
            }
            continue;
        }
        enum dir d;
        size_t count, size;
        if (parse_cell(o, &d, &count, &size) != 0) {
            fprintf(stderr, "bench_copies: bad cell '%s' (want DIR:COUNT:SIZE)\n", o);
            return dr;
        }
        double batch_med = 0;
        char list[128], *save = NULL;
        snprintf(list, sizeof list, "%s", modes);
        for (char *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
            if (strcmp(m, "loop") && strcmp(m, "batch") && strcmp(m, "single") &&
                strcmp(m, "overlap") && strcmp(m, "enqueue") && !events_per_copy(m)) {
                fprintf(stderr, "bench_copies: unknown mode '%s'\n", m);
                return dr;
            }
            int needs_batch = !strcmp(m, "batch") || (!strcmp(m, "overlap") && busy <= 0);
            if (needs_batch && !g_batch) {
                fprintf(stderr, "bench_copies: cuMemcpyBatchAsync unavailable, %s skipped\n", m);
                continue;
            }
            if (needs_batch && on_legacy()) {  /* a comment: the report shows "–" */
                printf("# %s %s:%zu:%zu on the %s stream: not measured (the batch API rejects "
                       "the legacy stream%s)\n", m, dir_name[d], count, size, g_sname,
                       strcmp(m, "batch") ? "; give -b" : "");
                continue;
            }
            double bu = busy;
            if (!strcmp(m, "overlap") && bu <= 0) {
                if (batch_med <= 0) {  /* quietly measure the copy time first */
                    prepare_cell(count, size);
                    double t[5];
                    for (int i = 0; i < 5; i++) {
                        double t0 = now_us();
                        batch(d, count, size);
                        CK(cuStreamSynchronize(g_s));
                        t[i] = now_us() - t0;
                    }
                    batch_med = summarize(t, 5).med;
                }
                bu = batch_med;
            }
            double med = run_mode(m, d, count, size, reps, warm, bu);
            if (!strcmp(m, "batch"))
                batch_med = med;
        }
    }
    if (g_side)
        CK(cuStreamDestroy(g_side));
    if (g_blocking)
        CK(cuStreamDestroy(g_blocking));
    CK(cuDevicePrimaryCtxRelease(dev));
    dr->status = 0;
    return dr;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_copies [-D DEVICES] [-r REPS] [-w WARMUP] [-m MODES] [-b BUSY_US] "
                        "[-s side|blocking|legacy|null|ptds] [-l contiguous|scattered[:SEED]] DIR:COUNT:SIZE...\n");
        return 2;
    }
    /* BENCH_SIM=1: allowed to run on tests/sim's simulated driver (to test the
     * scripts; its times mean nothing) */
    const char *sim = getenv("BENCH_SIM");
    if (access("/dev/nvidiactl", F_OK) != 0 && !(sim && !strcmp(sim, "1"))) {
        fprintf(stderr, "bench_copies: no GPU (/dev/nvidiactl missing)\n");
        return 77;
    }
    int ndev = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&ndev) != CUDA_SUCCESS || ndev == 0) {
        fprintf(stderr, "bench_copies: no usable GPU\n");
        return 77;
    }
    enum { MAXDEV = 16 };
    int devs[MAXDEV] = {0};
    const char *dlist = "0";
    for (int a = 1; a + 1 < argc; a++) {
        if (!strcmp(argv[a], "-D"))
            dlist = argv[a + 1];
        if (!strcmp(argv[a], "-l"))
            g_layout_col = 1;
    }
    g_ndevs = 0;
    for (const char *p = dlist; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || g_ndevs == MAXDEV || (*end && *end != ',')) {
            fprintf(stderr, "bench_copies: bad -D '%s' (want ordinals like 0,1)\n", dlist);
            return 2;
        }
        for (int i = 0; i < g_ndevs; i++)
            if (devs[i] == (int)v) {
                fprintf(stderr, "bench_copies: device %ld named twice in -D\n", v);
                return 2;
            }
        if (v >= ndev) {
            fprintf(stderr, "bench_copies: no device %ld (%d visible)\n", v, ndev);
            return 77;
        }
        devs[g_ndevs++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (g_ndevs == 0) {
        fprintf(stderr, "bench_copies: bad -D '%s' (want ordinals like 0,1)\n", dlist);
        return 2;
    }

    CUdriverProcAddressQueryResult st;
    void *p = NULL;
    CUresult r = cuGetProcAddress("cuMemcpyBatchAsync", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    g_batch = r == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS ? (batch_fn)p : NULL;

    struct devrun dr[MAXDEV];
    for (int i = 0; i < g_ndevs; i++)
        dr[i] = (struct devrun){argc, argv, devs[i], 2};
    if (g_ndevs == 1) {
        run_device(&dr[0]);
        return dr[0].status;
    }
    print_header();
    pthread_barrier_init(&g_start, NULL, (unsigned)g_ndevs);
    pthread_t th[MAXDEV];
    for (int i = 0; i < g_ndevs; i++)
        if (pthread_create(&th[i], NULL, run_device, &dr[i]) != 0) {
            fprintf(stderr, "bench_copies: cannot start a thread\n");
            return 1;
        }
    int status = 0;
    for (int i = 0; i < g_ndevs; i++) {
        pthread_join(th[i], NULL);
        if (dr[i].status > status)
            status = dr[i].status;
    }
    pthread_barrier_destroy(&g_start);
    return status;
}
