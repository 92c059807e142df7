/* copy_path.c - the cost of one deferred copy on the copying thread: a loop of
 * cuMemcpyHtoDAsync (or DtoH, DtoD) calls joining an open run, timed from the
 * first call to the last return, no synchronize inside.  Run it under cubatch with
 * CUBATCH_PIPELINE=0 and a CUBATCH_MAX_BATCH above --n, so that only the copy path
 * is timed (no submission); on a GPU, or on tests/sim's simulated driver (where
 * the copy path runs the same code: classification is cached, nothing reaches the
 * driver while a copy joins a run).
 *
 *   copy_path [--dir h2d|d2h|d2d] [--n COPIES] [--size BYTES] [--rounds N] [--blocks 1]
 * --blocks 1: the host side of each copy is its own pinned allocation (as
 * PyTorch's pinned tensors are), instead of one buffer.
 * Prints the median over rounds of ns per copy, and the minimum. */
#define _GNU_SOURCE
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x)                                                                        \
    do {                                                                             \
        CUresult rc_ = (x);                                                          \
        if (rc_ != CUDA_SUCCESS) {                                                   \
            fprintf(stderr, "copy_path: %s = %d (line %d)\n", #x, (int)rc_, __LINE__); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *dir = "h2d";
    int n = 1000, rounds = 21, blocks = 0;
    size_t size = 4096;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--n"))
            n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--size"))
            size = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--blocks"))
            blocks = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: copy_path [--dir h2d|d2h|d2d] [--n COPIES] [--size BYTES] [--rounds N] [--blocks 1]\n");
            return 2;
        }
    }
    if (n < 2 || rounds < 1 || size == 0) {
        fprintf(stderr, "copy_path: --n >= 2, --rounds >= 1, --size >= 1\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    void *host;
    CUdeviceptr a, b;
    CK(cuMemAllocHost_v2(&host, (size_t)n * size));
    CK(cuMemAlloc_v2(&a, (size_t)n * size));
    CK(cuMemAlloc_v2(&b, (size_t)n * size));
    memset(host, 1, (size_t)n * size);
    char **hb = malloc(sizeof(char *) * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (blocks)
            CK(cuMemAllocHost_v2((void **)&hb[i], size));
        else
            hb[i] = (char *)host + (size_t)i * size;
    }
    double *per = malloc(sizeof(double) * (size_t)rounds);
    for (int r = -2; r < rounds; r++) {
        double t0 = now_ns();
        for (int i = 0; i < n; i++) {
            size_t off = (size_t)i * size;
            if (!strcmp(dir, "d2h"))
                CK(cuMemcpyDtoHAsync_v2(hb[i], a + off, size, s));
            else if (!strcmp(dir, "d2d"))
                CK(cuMemcpyDtoDAsync_v2(b + off, a + off, size, s));
            else
                CK(cuMemcpyHtoDAsync_v2(a + off, hb[i], size, s));
        }
        double t1 = now_ns();
        CK(cuStreamSynchronize(s));
        if (r >= 0)
            per[r] = (t1 - t0) / n;
    }
    qsort(per, (size_t)rounds, sizeof *per, cmp);
    printf("copy_path dir=%s n=%d size=%zu blocks=%d ns_per_copy_median=%.1f min=%.1f\n", dir, n, size, blocks, per[rounds / 2], per[0]);
    return 0;
}
