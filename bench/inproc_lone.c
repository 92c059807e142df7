/* inproc_lone.c - what cubatch adds to a copy it does not defer, measured inside
 * one process.  Process times on the lent GPUs are bimodal (the same program 1 ms
 * or 2 ms from one process to the next), which hides a difference of 1% between
 * processes.  So this program is NOT run under LD_PRELOAD: it calls the driver's
 * own functions (dlopen of libcuda.so.1) and cubatch's wrappers (dlopen of
 * libcubatch.so, RTLD_LOCAL, so they interpose nothing) in the same process, on
 * the same stream and buffers, configurations rotated from round to round:
 *
 *   plain    the driver's functions
 *   plain2   the same again (the A/A column)
 *   on       cubatch's wrappers, batching on (as preloaded with the defaults)
 *   off      cubatch's wrappers after cubatch_set_enabled(0)
 *
 * Each round makes --n lone copies per configuration: one copy, then a
 * synchronize of its stream, as a program that waits for each copy does.  Per
 * configuration it prints the median over rounds of the round's typical time
 * (the mean of the times up to twice the median) of the copy call alone (the host cost cubatch adds to a passed-through copy) and
 * of copy + synchronize, and the median of per-round ratios plain / config.
 *
 *   inproc_lone --lib PATH/libcubatch.so [--dir h2d|d2d|d2h] [--size BYTES]
 *               [--n LONE_COPIES] [--rounds N] [--stream created|legacy] [--only CONFIG]
 *               [--pollute KIB] [--pollute-code KIB]
 * --only: run that configuration alone (to profile it).
 * --pollute: before each copy, write KIB KiB of other memory; --pollute-code:
 * run KIB KiB of other code (no-operations).  An interpreter's work between two
 * copies does both, so that the copy meets cold data and instruction caches;
 * what cubatch adds then is its own cache misses, which a tight loop never
 * shows.
 * Runs on a GPU, or on tests/sim's simulated driver (LD_LIBRARY_PATH), where it
 * measures cubatch's own host cost against a driver that does no work. */
#define _GNU_SOURCE
#include <cuda.h>

#include <dlfcn.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef CUresult (*copy_fn)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
typedef CUresult (*h2d_fn)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*d2h_fn)(void *, CUdeviceptr, size_t, CUstream);
typedef CUresult (*sync_fn)(CUstream);

struct fns { h2d_fn h2d; d2h_fn d2h; copy_fn d2d; sync_fn sync; };

enum { PLAIN, PLAIN2, ON, OFF, NCONF };
static const char *const conf_name[NCONF] = {"plain", "plain2", "on", "off"};

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "inproc_lone: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

#define CK(x)                                                                           \
    do {                                                                                \
        CUresult rc_ = (x);                                                             \
        if (rc_ != CUDA_SUCCESS) {                                                      \
            fprintf(stderr, "inproc_lone: %s = %d (line %d)\n", #x, (int)rc_, __LINE__); \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

static void *need(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        die("missing symbol", name);
    return p;
}

static struct fns fns_of(void *lib)
{
    struct fns f;
    *(void **)&f.h2d = need(lib, "cuMemcpyHtoDAsync_v2");
    *(void **)&f.d2h = need(lib, "cuMemcpyDtoHAsync_v2");
    *(void **)&f.d2d = need(lib, "cuMemcpyDtoDAsync_v2");
    *(void **)&f.sync = need(lib, "cuStreamSynchronize");
    return f;
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The mean of the times up to twice the median: the clock's tick is coarse on
 * some hosts (a median moves by whole ticks), and a preemption is not the
 * copy's cost. */
static double typical_ll(long long *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_ll);
    double med = n % 2 ? (double)v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0, sum = 0;
    int k = 0;
    for (int i = 0; i < n && v[i] <= 2 * med; i++, k++)
        sum += (double)v[i];
    return k ? sum / k : med;
}

static double median_d(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

int main(int argc, char **argv)
{
    const char *lib_path = NULL, *dir = "h2d", *stream_kind = "created", *only = NULL;
    int n = 2000, rounds = 9;
    size_t size = 4096, pollute = 0, pollute_code = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--lib"))
            lib_path = argv[i + 1];
        else if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--size"))
            size = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--n"))
            n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--stream"))
            stream_kind = argv[i + 1];
        else if (!strcmp(argv[i], "--only"))
            only = argv[i + 1];
        else if (!strcmp(argv[i], "--pollute"))
            pollute = (size_t)atol(argv[i + 1]) * 1024;
        else if (!strcmp(argv[i], "--pollute-code"))
            pollute_code = (size_t)atol(argv[i + 1]) * 1024;
        else
            die("unknown argument", argv[i]);
    }
    if (!lib_path || n < 1 || rounds < 1 || size == 0 ||
        (strcmp(dir, "h2d") && strcmp(dir, "d2h") && strcmp(dir, "d2d")) ||
        (strcmp(stream_kind, "created") && strcmp(stream_kind, "legacy")))
        die("usage", "inproc_lone --lib libcubatch.so [--dir h2d|d2h|d2d] [--size B] [--n N] [--rounds R] "
                     "[--stream created|legacy]");
    if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "cubatch"))
        die("run it without LD_PRELOAD", "it loads cubatch itself, beside the driver");

    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cuda)
        die("dlopen libcuda.so.1", dlerror());
    void *shim = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!shim)
        die("dlopen cubatch", dlerror());
    struct fns conf[NCONF];
    conf[PLAIN] = conf[PLAIN2] = fns_of(cuda);
    conf[ON] = conf[OFF] = fns_of(shim);
    int (*set_enabled)(int) = (int (*)(int))need(shim, "cubatch_set_enabled");

    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))need(cuda, "cuInit");
    CUresult (*dev_get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))need(cuda, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))need(cuda, "cuDevicePrimaryCtxRetain");
    CUresult (*set_cur)(CUcontext) = (CUresult(*)(CUcontext))need(cuda, "cuCtxSetCurrent");
    CUresult (*stream_create)(CUstream *, unsigned) = (CUresult(*)(CUstream *, unsigned))need(cuda, "cuStreamCreate");
    CUresult (*alloc)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))need(cuda, "cuMemAlloc_v2");
    CUresult (*alloc_host)(void **, size_t) = (CUresult(*)(void **, size_t))need(cuda, "cuMemAllocHost_v2");
    CUdevice dev;
    CUcontext ctx;
    CUstream s = NULL;
    CK(init(0));
    CK(dev_get(&dev, 0));
    CK(retain(&ctx, dev));
    CK(set_cur(ctx));
    if (!strcmp(stream_kind, "created"))
        CK(stream_create(&s, CU_STREAM_NON_BLOCKING));
    void *host;
    CUdeviceptr a, b;
    CK(alloc_host(&host, size));
    CK(alloc(&a, size));
    CK(alloc(&b, size));
    memset(host, 1, size);

    long long *call_ns = malloc(sizeof(long long) * (size_t)n), *lone_ns = malloc(sizeof(long long) * (size_t)n);
    double *call_med[NCONF], *lone_med[NCONF];
    for (int c = 0; c < NCONF; c++) {
        call_med[c] = malloc(sizeof(double) * (size_t)rounds);
        lone_med[c] = malloc(sizeof(double) * (size_t)rounds);
    }
    volatile unsigned char *junk = pollute ? malloc(pollute) : NULL;
    if (!call_ns || !lone_ns || (pollute && !junk))
        die("out of memory", NULL);
    void (*junk_code)(void) = NULL;
    if (pollute_code) { /* x86-64: no-operations, then a return */
        unsigned char *c = mmap(NULL, pollute_code + 1, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (c == MAP_FAILED)
            die("mmap of the code to run between copies", NULL);
        memset(c, 0x90, pollute_code);
        c[pollute_code] = 0xc3;
        *(void **)&junk_code = c;
    }
    for (int r = -1; r < rounds; r++) { /* round -1 warms every configuration up */
        for (int k = 0; k < NCONF; k++) {
            int c = (k + (r < 0 ? 0 : r)) % NCONF;
            if (only && strcmp(only, conf_name[c]))
                continue;
            set_enabled(c != OFF);
            const struct fns *f = &conf[c];
            for (int i = 0; i < n; i++) {
                for (size_t o = 0; o < pollute; o += 64)
                    junk[o] = (unsigned char)(junk[o] + 1);
                if (junk_code)
                    junk_code();
                long long t0 = now_ns();
                if (dir[0] == 'h')
                    CK(f->h2d(a, host, size, s));
                else if (dir[1] == '2' && dir[2] == 'h')
                    CK(f->d2h(host, a, size, s));
                else
                    CK(f->d2d(b, a, size, s));
                long long t1 = now_ns();
                CK(f->sync(s));
                long long t2 = now_ns();
                call_ns[i] = t1 - t0;
                lone_ns[i] = t2 - t0;
            }
            if (r >= 0) {
                call_med[c][r] = typical_ll(call_ns, n);
                lone_med[c][r] = typical_ll(lone_ns, n);
            }
        }
    }
    set_enabled(1);
    printf("inproc_lone dir=%s size=%zu stream=%s n=%d rounds=%d pollute=%zuK code=%zuK\n", dir, size, stream_kind, n,
           rounds, pollute / 1024, pollute_code / 1024);
    printf("%-7s %12s %12s %14s %14s\n", "config", "call_ns", "lone_ns", "call_minus_plain", "ratio_lone");
    for (int c = 0; c < NCONF; c++) {
        if (only && strcmp(only, conf_name[c]))
            continue;
        double ratio[rounds], diff[rounds];
        for (int r = 0; r < rounds; r++) {
            ratio[r] = lone_med[PLAIN][r] / lone_med[c][r];
            diff[r] = call_med[c][r] - call_med[PLAIN][r];
        }
        double call = median_d(call_med[c], rounds), lone = median_d(lone_med[c], rounds);
        printf("%-7s %12.1f %12.1f %14.1f %14.3f\n", conf_name[c], call, lone, median_d(diff, rounds),
               median_d(ratio, rounds));
    }
    return 0;
}
