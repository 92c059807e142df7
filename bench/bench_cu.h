/* bench_cu.h - what the driver-API benchmarks in C share (bench_copies.c,
 * bench_tiles.c, tiles_path.c, launch_hook.c, chunk_trace.c): a driver call
 * checked, the program ending with the driver's error's name and the line,
 * the device's primary context made current, a monotonic
 * clock in microseconds, the order of doubles for qsort, and the CPUs the
 * process may run on.  The including file
 * defines _GNU_SOURCE (sched_getaffinity) and BENCH_NAME, the program's name
 * for its messages. */
#ifndef CUBATCH_BENCH_CU_H
#define CUBATCH_BENCH_CU_H

#include <cuda.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(call)                                                                   \
    do {                                                                           \
        CUresult r_ = (call);                                                      \
        if (r_ != CUDA_SUCCESS)                                                    \
            die_cu(#call, r_, __LINE__);                                           \
    } while (0)

static void die_cu(const char *what, CUresult r, int line)
{
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
        name = "?";
    fprintf(stderr, BENCH_NAME ":%d: %s failed: %s (%d)\n", line, what, name, (int)r);
    exit(1);
}

/* Device `ordinal`'s primary context, retained and made current (cuInit
 * called before): every benchmark works in it, as a runtime-API program would. */
static void bench_primary(int ordinal, CUdevice *dev)
{
    CUcontext ctx;
    CK(cuDeviceGet(dev, ordinal));
    CK(cuDevicePrimaryCtxRetain(&ctx, *dev));
    CK(cuCtxSetCurrent(ctx));
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* "0-15" or "3" or "2,3": the CPUs this process may run on (taskset's doing). */
static void cpu_list(char *buf, size_t len)
{
    cpu_set_t set;
    size_t o = 0;
    buf[0] = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        snprintf(buf, len, "?");
        return;
    }
    for (int c = 0; c < CPU_SETSIZE && o + 16 < len; c++) {
        if (!CPU_ISSET(c, &set) || (c > 0 && CPU_ISSET(c - 1, &set)))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
            e++;
        int n = e > c ? snprintf(buf + o, len - o, "%s%d-%d", o ? "," : "", c, e)
                      : snprintf(buf + o, len - o, "%s%d", o ? "," : "", c);
        if (n > 0)
            o += (size_t)n;
    }
}

#endif /* CUBATCH_BENCH_CU_H */
