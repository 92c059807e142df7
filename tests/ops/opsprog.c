/* opsprog.c - a small driver-API program for the operations tests (check_ops.c):
 * reports at exit, from one process or many, and across fork().
 *
 *   opsprog copies N [AT]
 *                      N device-to-host copies of 4 KiB on a created stream
 *                      (N = 0: none), one stream sync, exit; with AT (a
 *                      CLOCK_MONOTONIC time in ns), exit at that time, so that
 *                      processes started together write their reports together
 *   opsprog fork       16 such copies and a sync, then fork(): the child makes no
 *                      CUDA call and leaves through exit(), so its own report is
 *                      written; the parent waits for it, then exits
 * It prints "opsprog: ok" (and, after fork, "opsprog: child PID") when every
 * byte arrived. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CK(call)                                                                  \
    do {                                                                          \
        CUresult rc_ = (call);                                                    \
        if (rc_ != CUDA_SUCCESS) {                                                \
            printf("opsprog: %s returned %d\n", #call, (int)rc_);                 \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

enum { SZ = 4096 };

/* n device-to-host copies of a filled device buffer; 0 when every byte arrived */
static int copies(int n)
{
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    size_t bytes = (size_t)(n ? n : 1) * SZ;
    unsigned char *src = malloc(bytes), *out;
    for (size_t i = 0; i < bytes; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    CUdeviceptr d;
    CUstream s;
    CK(cuMemAlloc_v2(&d, bytes));
    CK(cuMemcpyHtoD_v2(d, src, bytes));
    CK(cuMemAllocHost_v2((void **)&out, bytes));
    CK(cuStreamCreate(&s, 0));
    for (int i = 0; i < n; i++)
        CK(cuMemcpyDtoHAsync_v2(out + (size_t)i * SZ, d + (size_t)i * SZ, SZ, s));
    CK(cuStreamSynchronize(s));
    int wrong = n && memcmp(out, src, bytes);
    free(src);
    return wrong;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if ((argc == 3 || argc == 4) && !strcmp(argv[1], "copies")) {
        if (copies(atoi(argv[2])))
            return 1;
        printf("opsprog: ok\n");
        if (argc == 4) {
            struct timespec at = {(time_t)(strtoull(argv[3], NULL, 10) / 1000000000u),
                                  (long)(strtoull(argv[3], NULL, 10) % 1000000000u)};
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL))
                ;
        }
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "fork")) {
        if (copies(16))
            return 1;
        pid_t pid = fork();
        if (pid == 0)
            exit(0); /* through the exit handlers: the child's own report */
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
            return 1;
        printf("opsprog: child %d\nopsprog: ok\n", (int)pid);
        return 0;
    }
    fprintf(stderr, "usage: opsprog copies N [AT] | opsprog fork\n");
    return 2;
}
