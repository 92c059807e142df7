/* bench_cu.h - what the driver-API benchmarks in C share (bench_copies.c,
 * bench_tiles.c): a driver call checked, the program ending with the driver's
 * error's name and the line, and a monotonic clock in microseconds.  The
 * including file defines BENCH_NAME, the program's name for its messages. */
#ifndef CUBATCH_BENCH_CU_H
#define CUBATCH_BENCH_CU_H

#include <cuda.h>
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

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

#endif /* CUBATCH_BENCH_CU_H */
