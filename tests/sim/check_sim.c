/* Tests of the simulated CUDA driver itself (tests/sim/libcuda.so.1). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <check.h>
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "copy_kernel.h"
#include "cuda_since.h" /* types of CUDA 13.1+ functions, for an older cuda.h */
#include "cusim.h"

#ifndef SIM_SRCDIR
#define SIM_SRCDIR "."
#endif

/* exported by the sim under their real names; declared here without cuda.h's renaming */
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *,
                               size_t, CUstream);
CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *,
                                    size_t *, size_t, CUstream);
CUresult cuMemcpyBatchAsync_9(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *,
                              size_t, size_t *, CUstream) __asm__("cuMemcpyBatchAsync");
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *, CUstream);
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *, CUstream);
CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *);
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *);
CUresult cuStreamSynchronize_ptsz(CUstream);
CUresult cuStreamGetId_ptsz(CUstream, unsigned long long *);
CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
CUresult cuGetProcAddress_4(const char *, void **, int, cuuint64_t) __asm__("cuGetProcAddress");
CUresult cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode);
CUresult cuCtxCreate_v2(CUcontext *, unsigned int, CUdevice);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuLaunchKernel_ptsz(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, CUstream, void **, void **);
CUresult cuStreamQuery_ptsz(CUstream);
/* added after CUDA 13.0 (tests/sim/api13x.c), and the sim's "future" two */
CUresult cuLaunchHostFunc_v2(CUstream, CUhostFn, void *, unsigned int);
CUresult cuLaunchHostFunc_v2_ptsz(CUstream, CUhostFn, void *, unsigned int);
CUresult cuMemcpyWithAttributesAsync(CUdeviceptr, CUdeviceptr, size_t, CUmemcpyAttributes *, CUstream);
CUresult cuMemcpyWithAttributesAsync_ptsz(CUdeviceptr, CUdeviceptr, size_t, CUmemcpyAttributes *, CUstream);
CUresult cuMemcpy3DWithAttributesAsync(CUDA_MEMCPY3D_BATCH_OP *, unsigned long long, CUstream);
CUresult cuStreamBeginRecaptureToGraph(CUstream, CUstreamCaptureMode, CUgraph, CUgraphRecaptureCallback, void *);
CUresult cuStreamBeginRecaptureToGraph_ptsz(CUstream, CUstreamCaptureMode, CUgraph, CUgraphRecaptureCallback,
                                            void *);
CUresult cuStreamBeginCaptureToCig(CUstream, CUstreamCigCaptureParams *);
CUresult cuStreamEndCaptureToCig(CUstream);
CUresult cuFutureLaunchHostFunc(CUstream, CUhostFn, void *);
CUresult cuStreamSynchronize_v2(CUstream);

#define OK(x) ck_assert_int_eq((int)(x), CUDA_SUCCESS)
#define DP(p) ((CUdeviceptr)(uintptr_t)(p))
#define HP(d) ((void *)(uintptr_t)(d))

static CUcontext ctx;

static void setup(void)
{
    cusim_reset_counts(); /* re-read the environment set by the test */
    OK(cuInit(0));
    OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    OK(cuCtxSetCurrent(ctx));
}

static void fill(void *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)p)[i] = (unsigned char)(seed + i * 7u);
}

static int all(const void *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != v)
            return 0;
    return 1;
}

/* ------------------------------------------------------------ cuGetProcAddress */

static const char *sym_name(void *fn)
{
    Dl_info info;
    if (!fn)
        return "NULL";
    if (!dladdr(fn, &info) || !info.dli_sname)
        return "?";
    return info.dli_sname;
}

/* Every line of tests/data/<file> (the real 13.0 driver's answers), but those asking for
 * a version above maxver (0: none left out). */
static void check_proc_file(const char *file, int maxver)
{
    char path[1024], line[512];
    FILE *f;
    int n = 0;
    snprintf(path, sizeof path, "%s/tests/data/%s", getenv("srcdir") ? getenv("srcdir") : SIM_SRCDIR, file);
    f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    while (fgets(line, sizeof line, f)) {
        char sym[128] = "", name[128];
        int ver, flags, rc, st;
        if (line[0] == '#')
            continue;
        if (line[0] == ' ') { /* the runtime's probe: empty symbol */
            if (sscanf(line, " %d %d -> %d %127s %d", &ver, &flags, &rc, name, &st) != 5)
                continue;
        } else if (sscanf(line, "%127s %d %d -> %d %127s %d", sym, &ver, &flags, &rc, name, &st) != 6) {
            continue;
        }
        if (maxver && ver > maxver)
            continue;
        void *fn = (void *)1;
        CUdriverProcAddressQueryResult qs = (CUdriverProcAddressQueryResult)-1;
        CUresult got = cuGetProcAddress_v2(sym, &fn, ver, (cuuint64_t)flags, &qs);
        ck_assert_msg((int)got == rc, "%s %d %d: rc %d, want %d", sym, ver, flags, (int)got, rc);
        ck_assert_msg(!strcmp(sym_name(fn), name), "%s %d %d: got %s, want %s", sym, ver, flags, sym_name(fn), name);
        if (rc != 0 || !strcmp(file, "driver-proc-address-map.txt"))
            ck_assert_msg((int)qs == st, "%s %d %d: status %d, want %d", sym, ver, flags, (int)qs, st);
        /* the same through the 4-argument form and the _ptsz resolver */
        void *fn4 = (void *)1;
        ck_assert_int_eq((int)cuGetProcAddress_4(sym, &fn4, ver, (cuuint64_t)flags), rc);
        ck_assert_ptr_eq(fn4, fn);
        /* every returned variant is also exported under its name */
        if (fn)
            ck_assert_ptr_eq(dlsym(RTLD_DEFAULT, name), fn);
        n++;
    }
    fclose(f);
    ck_assert_int_gt(n, 400);
}

START_TEST(proc_map_matches_real_driver)
{
    check_proc_file("driver-proc-address-map.txt", 0);
}
END_TEST

START_TEST(proc_entry_points_match_runtime_requests)
{
    check_proc_file("cudart13-entry-points.txt", 0);
}
END_TEST

START_TEST(proc_self_and_null_status)
{
    void *fn;
    OK(cuGetProcAddress_v2("cuGetProcAddress", &fn, 11030, 0, NULL));
    ck_assert_ptr_eq(fn, dlsym(RTLD_DEFAULT, "cuGetProcAddress"));
    OK(cuGetProcAddress_v2("cuGetProcAddress", &fn, 12000, 0, NULL));
    ck_assert_ptr_eq(fn, dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"));
    ck_assert_ptr_nonnull(dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2_ptsz"));
    ck_assert_ptr_nonnull(dlsym(RTLD_DEFAULT, "cuGetExportTable"));
    /* a stub answers NOT_SUPPORTED */
    OK(cuGetProcAddress_v2("cuModuleLoad", &fn, 13000, 0, NULL));
    ck_assert_int_eq(((int (*)(void))fn)(), CUDA_ERROR_NOT_SUPPORTED);
    ck_assert_uint_eq(cusim_count("cuModuleLoad"), 1);
}
END_TEST

START_TEST(env_missing)
{
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    setenv("CUSIM_MISSING", "cuMemcpyBatchAsync,cuStreamGetId", 1);
    cusim_reset_counts();
    OK(cuGetProcAddress_v2("cuMemcpyBatchAsync", &fn, 13000, 0, &st));
    ck_assert_ptr_null(fn);
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    OK(cuGetProcAddress_v2("cuStreamGetId", &fn, 13000, 2, &st));
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    OK(cuGetProcAddress_v2("cuMemcpyAsync", &fn, 13000, 0, &st));
    ck_assert_ptr_nonnull(fn);
}
END_TEST

START_TEST(env_driver_version_12080)
{
    void *fn = (void *)1;
    int v;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)77;
    setenv("CUSIM_DRIVER_VERSION", "12080", 1);
    cusim_reset_counts();
    OK(cuDriverGetVersion(&v));
    ck_assert_int_eq(v, 12080);
    ck_assert_int_eq(cuGetProcAddress_v2("cuMemcpyBatchAsync", &fn, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    ck_assert_ptr_null(fn);
    ck_assert_int_eq((int)st, 77);
    OK(cuGetProcAddress_v2("cuMemcpyBatchAsync", &fn, 12080, 0, &st));
    ck_assert_str_eq(sym_name(fn), "cuMemcpyBatchAsync");
    OK(cuGetProcAddress_v2("cuMemcpyBatchAsync", &fn, 12080, 2, &st));
    ck_assert_str_eq(sym_name(fn), "cuMemcpyBatchAsync_ptsz");
}
END_TEST

/* ------------------------------------------------------------ basics */

START_TEST(needs_init_and_context)
{
    CUdeviceptr d;
    int n;
    cusim_reset_counts();
    ck_assert_int_eq(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    OK(cuInit(0));
    OK(cuDeviceGetCount(&n));
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(cuMemAlloc_v2(&d, 16), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext c, c2;
    OK(cuCtxCreate_v2(&c, 0, 0));
    OK(cuCtxGetCurrent(&c2));
    ck_assert_ptr_eq(c, c2);
    OK(cuMemAlloc_v2(&d, 16));
    OK(cuCtxPopCurrent_v2(&c2));
    ck_assert_int_eq(cuMemAlloc_v2(&d, 16), CUDA_ERROR_INVALID_CONTEXT);
    OK(cuCtxPushCurrent_v2(c));
    OK(cuCtxDestroy_v2(c));
    ck_assert_int_eq(cuCtxPushCurrent_v2(c), CUDA_ERROR_INVALID_CONTEXT);
    setenv("CUSIM_DEVICES", "3", 1);
    cusim_reset_counts();
    OK(cuDeviceGetCount(&n));
    ck_assert_int_eq(n, 3);
    char name[64];
    OK(cuDeviceGetName(name, sizeof name, 2));
    ck_assert_int_eq(cuDeviceGetName(name, sizeof name, 3), CUDA_ERROR_INVALID_DEVICE);
    int a;
    OK(cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
    ck_assert_int_eq(a, 1);
    const char *s;
    OK(cuGetErrorName(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, &s));
    ck_assert_str_eq(s, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT");
}
END_TEST

START_TEST(deferred_until_sync)
{
    CUstream s;
    CUdeviceptr d;
    void *h, *back;
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, 4096));
    OK(cuMemAllocHost_v2(&h, 4096));
    OK(cuMemAllocHost_v2(&back, 4096));
    fill(h, 4096, 3);
    OK(cuMemcpyHtoDAsync_v2(d, h, 4096, s));
    ck_assert(all(HP(d), 4096, 0)); /* nothing ran yet */
    ck_assert_uint_eq(cusim_pending(), 1);
    OK(cuMemcpyDtoHAsync_v2(back, d, 4096, s)); /* pinned destination: deferred too */
    ck_assert(all(back, 4096, 0));
    OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(cusim_pending(), 0);
    ck_assert_mem_eq(HP(d), h, 4096);
    ck_assert_mem_eq(back, h, 4096);
    /* query runs the work too */
    fill(h, 4096, 9);
    OK(cuMemcpyHtoDAsync_v2(d, h, 4096, s));
    OK(cuStreamQuery(s));
    ck_assert_mem_eq(HP(d), h, 4096);
    /* event synchronize */
    CUevent e;
    OK(cuEventCreate(&e, 0));
    fill(h, 4096, 11);
    OK(cuMemcpyHtoDAsync_v2(d, h, 4096, s));
    OK(cuEventRecord(e, s));
    OK(cuEventSynchronize(e));
    ck_assert_mem_eq(HP(d), h, 4096);
    /* context synchronize */
    fill(h, 4096, 12);
    OK(cuMemcpyHtoDAsync_v2(d, h, 4096, s));
    OK(cuCtxSynchronize());
    ck_assert_mem_eq(HP(d), h, 4096);
}
END_TEST

START_TEST(pageable_staging_and_sync_dtoh)
{
    CUstream s;
    CUdeviceptr d;
    unsigned char *src = malloc(1000), *dst = malloc(1000), *want = malloc(1000);
    setup();
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc_v2(&d, 1000));
    fill(src, 1000, 1);
    memcpy(want, src, 1000);
    OK(cuMemcpyHtoDAsync_v2(d, src, 1000, s));
    memset(src, 0xEE, 1000); /* the program may reuse a pageable source at once */
    ck_assert(all(HP(d), 1000, 0));
    /* DtoH into pageable memory is synchronous: runs the pending HtoD first */
    OK(cuMemcpyDtoHAsync_v2(dst, d, 1000, s));
    ck_assert_mem_eq(dst, want, 1000);
    ck_assert_uint_eq(cusim_pending(), 0);
    /* cuMemcpyAsync with a pageable destination: same */
    memset(dst, 0, 1000);
    OK(cuMemcpyAsync(DP(dst), d, 1000, s));
    ck_assert_mem_eq(dst, want, 1000);
    /* synchronous copies */
    fill(src, 1000, 5);
    OK(cuMemcpyHtoD_v2(d, src, 1000));
    ck_assert_mem_eq(HP(d), src, 1000);
    free(src);
    free(dst);
    free(want);
}
END_TEST

START_TEST(validation)
{
    CUstream s;
    CUdeviceptr d, d2;
    void *h;
    char buf[64];
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, 64));
    OK(cuMemAlloc_v2(&d2, 64));
    OK(cuMemAllocHost_v2(&h, 64));
    ck_assert_int_eq(cuMemcpyHtoDAsync_v2(d + 32, h, 64, s), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemcpyHtoDAsync_v2(DP(buf), h, 64, s), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemcpyDtoHAsync_v2(h, DP(buf), 64, s), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemcpyDtoDAsync_v2(d, d2 + 1, 64, s), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemcpyDtoDAsync_v2(d, DP(h), 64, s), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemcpyDtoDAsync_v2(d, DP(buf), 0, s)); /* 0 bytes: nothing to check */
    ck_assert_uint_eq(cusim_pending(), 0);
    ck_assert_int_eq(cuMemcpyHtoDAsync_v2(d, h, 64, (CUstream)(uintptr_t)0x1234), CUDA_ERROR_INVALID_HANDLE);
    OK(cuStreamDestroy_v2(s));
    ck_assert_int_eq(cuMemcpyHtoDAsync_v2(d, h, 64, s), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuMemsetD32Async(d + 1, 5, 4, NULL), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(destroyed_stream_work_still_runs)
{
    CUstream s;
    CUdeviceptr d;
    void *h;
    setup();
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc_v2(&d, 256));
    OK(cuMemAllocHost_v2(&h, 256));
    fill(h, 256, 4);
    OK(cuMemcpyHtoDAsync_v2(d, h, 256, s));
    OK(cuStreamDestroy_v2(s));
    ck_assert(all(HP(d), 256, 0));
    OK(cuCtxSynchronize());
    ck_assert_mem_eq(HP(d), h, 256);
}
END_TEST

/* ------------------------------------------------------------ ordering */

START_TEST(legacy_blocking_nonblocking)
{
    CUstream a, nb;
    CUdeviceptr x, y, x2, y2, x3, y3;
    void *h;
    setup();
    OK(cuStreamCreate(&a, CU_STREAM_DEFAULT));
    OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc_v2(&x, 128));
    OK(cuMemAlloc_v2(&y, 128));
    OK(cuMemAlloc_v2(&x2, 128));
    OK(cuMemAlloc_v2(&y2, 128));
    OK(cuMemAlloc_v2(&x3, 128));
    OK(cuMemAlloc_v2(&y3, 128));
    OK(cuMemAllocHost_v2(&h, 128));
    fill(h, 128, 8);
    /* legacy op waits for the blocking stream's earlier work */
    OK(cuMemcpyHtoDAsync_v2(x, h, 128, a));
    OK(cuMemcpyDtoDAsync_v2(y, x, 128, NULL));
    OK(cuStreamSynchronize(NULL));
    ck_assert_mem_eq(HP(y), h, 128);
    /* ... but not for a non-blocking stream's */
    OK(cuMemcpyHtoDAsync_v2(x2, h, 128, nb));
    OK(cuMemcpyDtoDAsync_v2(y2, x2, 128, CU_STREAM_LEGACY));
    OK(cuStreamSynchronize(CU_STREAM_LEGACY));
    ck_assert(all(HP(y2), 128, 0));
    ck_assert_uint_eq(cusim_pending(), 1);
    OK(cuStreamSynchronize(nb));
    ck_assert_mem_eq(HP(x2), h, 128);
    /* blocking stream op waits for earlier legacy work */
    OK(cuMemcpyHtoDAsync_v2(x3, h, 128, NULL));
    OK(cuMemcpyDtoDAsync_v2(y3, x3, 128, a));
    OK(cuStreamSynchronize(a));
    ck_assert_mem_eq(HP(y3), h, 128);
    /* a synchronous copy follows the blocking streams' work */
    memset(HP(y), 0, 128);
    OK(cuMemsetD8Async(x, 0x5A, 128, a));
    OK(cuMemcpyDtoD_v2(y, x, 128));
    ck_assert(all(HP(y), 128, 0x5A));
    /* and the per-thread stream (blocking) too */
    OK(cuMemsetD8Async_ptsz(x, 0x3C, 128, NULL));
    OK(cuMemcpyDtoD_v2(y, x, 128));
    ck_assert(all(HP(y), 128, 0x3C));
}
END_TEST

struct thr { CUdeviceptr d; void *h; unsigned long long id; int phase; };

static void *ptds_thread(void *arg)
{
    struct thr *t = arg;
    OK(cuCtxSetCurrent(ctx));
    OK(cuStreamGetId_ptsz(NULL, &t->id));
    OK(cuMemcpyHtoDAsync_v2_ptsz(t->d, t->h, 64, NULL));
    return NULL;
}

START_TEST(per_thread_streams)
{
    CUdeviceptr d1, d2;
    void *h;
    unsigned long long mine, viaflag, legacy;
    setup();
    OK(cuMemAlloc_v2(&d1, 64));
    OK(cuMemAlloc_v2(&d2, 64));
    OK(cuMemAllocHost_v2(&h, 64));
    fill(h, 64, 2);
    OK(cuStreamGetId_ptsz(NULL, &mine));
    OK(cuStreamGetId(CU_STREAM_PER_THREAD, &viaflag));
    OK(cuStreamGetId(NULL, &legacy));
    ck_assert(mine == viaflag);
    ck_assert(mine != legacy);
    struct thr t = { .d = d2, .h = h };
    pthread_t th;
    OK(cuMemcpyHtoDAsync_v2_ptsz(d1, h, 64, NULL));
    pthread_create(&th, NULL, ptds_thread, &t);
    pthread_join(th, NULL);
    ck_assert(t.id != mine && t.id != legacy);
    ck_assert_uint_eq(cusim_pending(), 2);
    /* my per-thread stream does not cover the other thread's */
    OK(cuStreamSynchronize_ptsz(NULL));
    ck_assert_mem_eq(HP(d1), h, 64);
    ck_assert(all(HP(d2), 64, 0));
    /* legacy work does (per-thread streams are blocking) */
    OK(cuMemsetD8Async(d1, 1, 1, NULL));
    OK(cuStreamSynchronize(NULL));
    ck_assert_mem_eq(HP(d2), h, 64);
}
END_TEST

START_TEST(events_across_streams)
{
    CUstream a, b;
    CUevent e;
    CUdeviceptr x, y;
    void *h;
    setup();
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    OK(cuMemAlloc_v2(&x, 512));
    OK(cuMemAlloc_v2(&y, 512));
    OK(cuMemAllocHost_v2(&h, 512));
    fill(h, 512, 6);
    OK(cuMemcpyHtoDAsync_v2(x, h, 512, a));
    OK(cuEventRecord(e, a));
    OK(cuMemsetD8Async(x, 0, 512, a)); /* after the record: must not be pulled in */
    OK(cuStreamWaitEvent(b, e, 0));
    OK(cuMemcpyDtoDAsync_v2(y, x, 512, b));
    OK(cuStreamSynchronize(b));
    ck_assert_mem_eq(HP(y), h, 512);
    ck_assert_uint_eq(cusim_pending(), 1);
    OK(cuEventQuery(e));
    OK(cuStreamSynchronize(a));
    ck_assert(all(HP(x), 512, 0));
    OK(cuEventDestroy_v2(e));
    ck_assert_int_eq(cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
}
END_TEST

static int order_log[8];
static int order_n;
static void host_fn(void *p)
{
    order_log[order_n++] = (int)(intptr_t)p;
}
static long chain_count;
static void chain_fn(void *p)
{
    (void)p;
    chain_count++;
}

START_TEST(host_functions_in_order)
{
    CUstream s;
    CUdeviceptr x;
    void *h;
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 8));
    OK(cuMemAllocHost_v2(&h, 8));
    OK(cuLaunchHostFunc(s, host_fn, (void *)1));
    OK(cuMemsetD8Async(x, 7, 8, s));
    OK(cuLaunchHostFunc(s, host_fn, (void *)2));
    ck_assert_int_eq(order_n, 0);
    OK(cuStreamSynchronize(s));
    ck_assert_int_eq(order_n, 2);
    ck_assert_int_eq(order_log[0], 1);
    ck_assert_int_eq(order_log[1], 2);
    /* a long chain does not recurse */
    for (int i = 0; i < 200000; i++)
        OK(cuLaunchHostFunc(s, chain_fn, NULL));
    OK(cuStreamSynchronize(s));
    ck_assert_int_eq(chain_count, 200000);
    ck_assert_int_eq(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL), CUDA_ERROR_NOT_SUPPORTED);
}
END_TEST

/* ------------------------------------------------------------ batches */

struct bt {
    CUstream s;
    CUdeviceptr x, y;
    void *h;
    CUdeviceptr dsts[2], srcs[2];
    size_t sizes[2];
    CUmemcpyAttributes attr;
    size_t idx;
};

static void batch_setup(struct bt *b)
{
    setup();
    OK(cuStreamCreate(&b->s, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc_v2(&b->x, 256));
    OK(cuMemAlloc_v2(&b->y, 256));
    OK(cuMemAllocHost_v2(&b->h, 256));
    fill(b->h, 256, 1);
    /* entry 0: h -> x; entry 1: x -> y (reads what entry 0 writes) */
    b->dsts[0] = b->x;
    b->srcs[0] = DP(b->h);
    b->dsts[1] = b->y;
    b->srcs[1] = b->x;
    b->sizes[0] = b->sizes[1] = 256;
    memset(&b->attr, 0, sizeof b->attr);
    b->attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    b->idx = 0;
}

START_TEST(batch_reverse_default)
{
    struct bt b;
    batch_setup(&b);
    OK(cuMemcpyBatchAsync_v2(b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, b.s));
    ck_assert(all(HP(b.x), 256, 0));
    OK(cuStreamSynchronize(b.s));
    ck_assert_mem_eq(HP(b.x), b.h, 256);
    ck_assert(all(HP(b.y), 256, 0)); /* entry 1 ran first */
    /* the same copies one by one give the other answer */
    OK(cuMemcpyHtoDAsync_v2(b.x, b.h, 256, b.s));
    OK(cuMemcpyDtoDAsync_v2(b.y, b.x, 256, b.s));
    OK(cuStreamSynchronize(b.s));
    ck_assert_mem_eq(HP(b.y), b.h, 256);
    ck_assert_uint_eq(cusim_count("cuMemcpyBatchAsync_v2"), 1);
}
END_TEST

START_TEST(batch_forward_env)
{
    struct bt b;
    setenv("CUSIM_BATCH_ORDER", "forward", 1);
    batch_setup(&b);
    OK(cuMemcpyBatchAsync_v2(b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, b.s));
    OK(cuStreamSynchronize(b.s));
    ck_assert_mem_eq(HP(b.y), b.h, 256);
}
END_TEST

/* A stream wait's event and the stream's own earlier work are both its
 * dependencies; which runs first is CUSIM_DEP_ORDER's, so a program that
 * orders the two copies below by nothing gets either answer. */
static void dep_order_run(const char *order, unsigned char want)
{
    CUstream a, b;
    CUevent e;
    CUdeviceptr y;
    unsigned char *h1, *h2;
    setenv("CUSIM_DEP_ORDER", order, 1);
    setup();
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    OK(cuMemAlloc_v2(&y, 64));
    OK(cuMemAllocHost_v2((void **)&h1, 64));
    OK(cuMemAllocHost_v2((void **)&h2, 64));
    memset(h1, 1, 64);
    memset(h2, 2, 64);
    OK(cuMemcpyHtoDAsync_v2(y, h1, 64, a));
    OK(cuEventRecord(e, a));
    OK(cuMemcpyHtoDAsync_v2(y, h2, 64, b)); /* not ordered against a's copy */
    OK(cuStreamWaitEvent(b, e, 0));
    OK(cuStreamSynchronize(b));
    ck_assert(all(HP(y), 64, want));
    unsetenv("CUSIM_DEP_ORDER");
}

START_TEST(dep_order_env)
{
    dep_order_run("forward", 2); /* the event's work first, then b's own copy */
    dep_order_run("reverse", 1); /* b's own copy first */
}
END_TEST

START_TEST(batch_pageable_source_access_order)
{
    struct bt b;
    unsigned char *pg = malloc(256), want[256];
    batch_setup(&b);
    fill(pg, 256, 40);
    memcpy(want, pg, 256);
    CUdeviceptr dsts[1] = { b.x }, srcs[1] = { DP(pg) };
    size_t sizes[1] = { 256 };
    /* STREAM: read at execution time */
    OK(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 1, &b.attr, &b.idx, 1, b.s));
    memset(pg, 0x11, 256);
    OK(cuStreamSynchronize(b.s));
    ck_assert(all(HP(b.x), 256, 0x11));
    /* DURING_API_CALL: read at call time */
    memcpy(pg, want, 256);
    b.attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    OK(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 1, &b.attr, &b.idx, 1, b.s));
    memset(pg, 0x22, 256);
    OK(cuStreamSynchronize(b.s));
    ck_assert_mem_eq(HP(b.x), want, 256);
    free(pg);
}
END_TEST

START_TEST(batch_rejections)
{
    struct bt b;
    size_t fi;
    size_t idx2[2] = { 0, 1 }, idxbad[2] = { 0, 0 }, idx1 = 1;
    CUmemcpyAttributes attrs2[2];
    batch_setup(&b);
    memcpy(&attrs2[0], &b.attr, sizeof b.attr);
    memcpy(&attrs2[1], &b.attr, sizeof b.attr);
#define REJ(code, ...) ck_assert_int_eq(cuMemcpyBatchAsync_v2(__VA_ARGS__), code)
    REJ(CUDA_ERROR_INVALID_VALUE, b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, NULL);
    REJ(CUDA_ERROR_INVALID_VALUE, b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, CU_STREAM_LEGACY);
    ck_assert_int_eq(cuMemcpyBatchAsync_v2_ptsz(b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, CU_STREAM_LEGACY),
                     CUDA_ERROR_INVALID_VALUE);
    REJ(CUDA_ERROR_INVALID_VALUE, b.dsts, b.srcs, b.sizes, 0, &b.attr, &b.idx, 1, b.s);
    REJ(CUDA_ERROR_INVALID_VALUE, b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 0, b.s);
    REJ(CUDA_ERROR_INVALID_VALUE, b.dsts, b.srcs, b.sizes, 1, attrs2, idx2, 2, b.s); /* numAttrs > count */
    REJ(CUDA_ERROR_INVALID_VALUE, b.dsts, b.srcs, b.sizes, 2, &b.attr, &idx1, 1, b.s); /* idx[0] != 0 */
    REJ(CUDA_ERROR_INVALID_VALUE, b.dsts, b.srcs, b.sizes, 2, attrs2, idxbad, 2, b.s); /* not increasing */
    REJ(CUDA_ERROR_INVALID_VALUE, b.dsts, b.srcs, b.sizes, 2, NULL, &b.idx, 1, b.s);
    b.attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    REJ(CUDA_ERROR_INVALID_VALUE, b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, b.s);
    b.attr.srcAccessOrder = (CUmemcpySrcAccessOrder)4;
    REJ(CUDA_ERROR_INVALID_VALUE, b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, b.s);
    b.attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
    b.sizes[1] = 0;
    REJ(CUDA_ERROR_INVALID_VALUE, b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, b.s);
    ck_assert_int_eq(cuMemcpyBatchAsync_9(b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, &fi, b.s),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(fi, 1);
    b.sizes[1] = 256;
    b.dsts[1] = b.y + 1; /* runs past the allocation */
    ck_assert_int_eq(cuMemcpyBatchAsync_9(b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, &fi, b.s),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(fi, 1);
    ck_assert_int_eq(cuMemcpyBatchAsync_9(b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, &fi, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(fi, SIZE_MAX);
    b.dsts[1] = b.y;
    ck_assert_uint_eq(cusim_pending(), 0);
    /* accepted: per-thread stream, either way */
    OK(cuMemcpyBatchAsync_v2(b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, CU_STREAM_PER_THREAD));
    OK(cuMemcpyBatchAsync_v2_ptsz(b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, NULL));
    OK(cuMemcpyBatchAsync_v2(b.dsts, b.srcs, b.sizes, 2, attrs2, idx2, 2, b.s));
    ck_assert_uint_eq(cusim_pending(), 3);
    /* capturing stream: refused, capture stays valid, nothing captured */
    CUstreamCaptureStatus st;
    CUgraph g;
    CUgraphExec ge;
    OK(cuStreamSynchronize(b.s));
    memset(HP(b.x), 0, 256);
    memset(HP(b.y), 0, 256);
    OK(cuStreamBeginCapture_v2(b.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    REJ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, b.dsts, b.srcs, b.sizes, 2, &b.attr, &b.idx, 1, b.s);
    OK(cuStreamIsCapturing(b.s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuStreamEndCapture(b.s, &g));
    OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    OK(cuGraphLaunch(ge, b.s));
    OK(cuStreamSynchronize(b.s));
    ck_assert(all(HP(b.x), 256, 0));
#undef REJ
}
END_TEST


static unsigned char shuffle_once(void)
{
    CUstream s;
    CUdeviceptr d;
    unsigned char *h;
    CUdeviceptr dsts[16], srcs[16];
    size_t sizes[16], idx = 0;
    CUmemcpyAttributes at;
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, 1));
    OK(cuMemAllocHost_v2((void **)&h, 16));
    memset(&at, 0, sizeof at);
    at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    for (int i = 0; i < 16; i++) {
        h[i] = (unsigned char)i;
        dsts[i] = d;
        srcs[i] = DP(h + i);
        sizes[i] = 1;
    }
    OK(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 16, &at, &idx, 1, s));
    OK(cuStreamSynchronize(s));
    return *(unsigned char *)HP(d);
}

START_TEST(batch_orders)
{
    setup();
    ck_assert_int_eq(shuffle_once(), 0); /* reverse: entry 0 written last */
    setenv("CUSIM_BATCH_ORDER", "forward", 1);
    cusim_reset_counts();
    ck_assert_int_eq(shuffle_once(), 15);
    setenv("CUSIM_BATCH_ORDER", "shuffle", 1);
    setenv("CUSIM_SEED", "7", 1);
    cusim_reset_counts();
    unsigned char a = shuffle_once(), b = shuffle_once(), c = shuffle_once();
    ck_assert_int_lt(a, 16);
    cusim_reset_counts(); /* same seed again: same sequence */
    ck_assert_int_eq(shuffle_once(), a);
    ck_assert_int_eq(shuffle_once(), b);
    ck_assert_int_eq(shuffle_once(), c);
}
END_TEST

struct mt { CUstream shared; CUdeviceptr d; void *h; long *counter; };
static void mt_inc(void *p)
{
    long *c = p;
    (*c)++;
}
static void *mt_thread(void *arg)
{
    struct mt *m = arg;
    CUstream own;
    OK(cuCtxSetCurrent(ctx));
    OK(cuStreamCreate(&own, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 2000; i++) {
        OK(cuMemcpyHtoDAsync_v2(m->d, m->h, 64, own));
        OK(cuLaunchHostFunc(m->shared, mt_inc, m->counter));
        OK(cuMemsetD8Async_ptsz(m->d, 1, 64, NULL));
        if (i % 100 == 0) {
            OK(cuStreamSynchronize(m->shared));
            OK(cuStreamSynchronize(own));
        }
    }
    OK(cuStreamSynchronize_ptsz(NULL));
    OK(cuStreamDestroy_v2(own));
    return NULL;
}

START_TEST(threads_share_streams)
{
    struct mt m[4];
    pthread_t th[4];
    long counter = 0;
    CUstream shared;
    CUdeviceptr d;
    void *h;
    setup();
    OK(cuStreamCreate(&shared, 0));
    OK(cuMemAlloc_v2(&d, 64));
    OK(cuMemAllocHost_v2(&h, 64));
    for (int i = 0; i < 4; i++) {
        m[i] = (struct mt){ shared, d, h, &counter };
        pthread_create(&th[i], NULL, mt_thread, &m[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    OK(cuCtxSynchronize());
    ck_assert_int_eq(counter, 8000);
    ck_assert_uint_eq(cusim_pending(), 0);
    ck_assert_uint_eq(cusim_count("cuLaunchHostFunc"), 8000);
}
END_TEST

/* ------------------------------------------------------------ capture and graphs */

START_TEST(capture_and_replay)
{
    CUstream s;
    CUdeviceptr x, y;
    unsigned char *pg = malloc(64);
    CUgraph g;
    CUgraphExec ge;
    CUstreamCaptureStatus st;
    cuuint64_t cid;
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 64));
    OK(cuMemAlloc_v2(&y, 64));
    fill(pg, 64, 3);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(cuStreamGetCaptureInfo_v3(s, &st, &cid, NULL, NULL, NULL, NULL));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuMemcpyHtoDAsync_v2(x, pg, 64, s));  /* pageable source: read at replay */
    OK(cuMemcpyDtoDAsync_v2(y, x, 64, s));
    OK(cuMemsetD8Async(x, 0x77, 8, s));
    OK(cuLaunchHostFunc(s, host_fn, (void *)5));
    OK(cuStreamEndCapture(s, &g));
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    ck_assert(all(HP(x), 64, 0));
    ck_assert_uint_eq(cusim_pending(), 0);
    OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    fill(pg, 64, 50);
    OK(cuGraphLaunch(ge, s));
    ck_assert(all(HP(y), 64, 0));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(y), pg, 64);
    ck_assert(all(HP(x), 8, 0x77));
    ck_assert_int_eq(order_n, 1);
    fill(pg, 64, 90);
    OK(cuGraphLaunch(ge, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(y), pg, 64);
    OK(cuGraphExecDestroy(ge));
    OK(cuGraphDestroy(g));
    free(pg);
}
END_TEST

START_TEST(capture_invalidation)
{
    CUstream s, nb;
    CUdeviceptr x;
    CUgraph g = (CUgraph)1;
    CUstreamCaptureStatus st;
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc_v2(&x, 64));
    /* synchronizing a capturing stream */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    ck_assert_int_eq(cuMemsetD8Async(x, 1, 1, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ck_assert_ptr_null(g);
    /* legacy work while a blocking stream captures */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ck_assert_int_eq(cuMemsetD8Async(x, 1, 1, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* a non-blocking capturing stream is not affected by legacy work */
    OK(cuStreamBeginCapture_v2(nb, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(cuMemsetD8Async(x, 1, 1, NULL));
    OK(cuStreamEndCapture(nb, &g));
    ck_assert_ptr_nonnull(g);
    /* context synchronize during a global capture */
    OK(cuStreamBeginCapture_v2(nb, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ck_assert_int_eq(cuStreamEndCapture(nb, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ck_assert_int_eq(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    /* a stream joins a capture by waiting on an event recorded in it */
    CUevent e;
    OK(cuEventCreate(&e, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuEventRecord(e, s));
    OK(cuStreamWaitEvent(nb, e, 0));
    OK(cuStreamIsCapturing(nb, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuStreamEndCapture(s, &g));
    OK(cuStreamIsCapturing(nb, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
}
END_TEST

/* ------------------------------------------------------------ memory */

START_TEST(pointer_attributes)
{
    CUdeviceptr d, m;
    void *p, *reg = aligned_alloc(4096, 8192);
    char pageable[16];
    unsigned int type = 99, managed = 99;
    CUcontext c;
    int ord;
    unsigned long long id1, id2;
    setup();
    OK(cuMemAlloc_v2(&d, 100));
    OK(cuMemAllocManaged(&m, 100, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemHostAlloc(&p, 100, 0));
    OK(cuMemHostRegister_v2(reg, 8192, 0));
    ck_assert_int_eq(cuMemHostRegister_v2((char *)reg + 10, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 10));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, m));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
    OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m));
    ck_assert_uint_eq(managed, 1);
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, DP(p)));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_HOST);
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, DP(reg) + 5000));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_HOST);
    ck_assert_int_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, DP(pageable)),
                     CUDA_ERROR_INVALID_VALUE);
    OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, d));
    ck_assert_ptr_eq(c, ctx);
    CUdeviceptr start;
    size_t size;
    OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 50));
    OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 50));
    ck_assert(start == d && size == 100);
    OK(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, d));
    OK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, m));
    ck_assert(id1 != id2);
    CUpointer_attribute at[3] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                  CU_POINTER_ATTRIBUTE_CONTEXT };
    void *data[3] = { &type, &ord, &c };
    type = 99;
    ord = 99;
    OK(cuPointerGetAttributes(3, at, data, DP(pageable)));
    ck_assert_uint_eq(type, 0);
    ck_assert_int_eq(ord, 0);
    ck_assert_ptr_null(c);
    OK(cuPointerGetAttributes(3, at, data, d));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
    ck_assert_ptr_eq(c, ctx);
    OK(cuMemHostUnregister(reg));
    ck_assert_int_eq(cuMemHostUnregister(reg), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    OK(cuPointerGetAttributes(3, at, data, DP(reg)));
    ck_assert_uint_eq(type, 0);
    CUdeviceptr base;
    OK(cuMemGetAddressRange_v2(&base, &size, d + 99));
    ck_assert(base == d && size == 100);
    free(reg);
}
END_TEST

START_TEST(use_after_free_detected)
{
    CUstream a, b;
    CUdeviceptr d;
    void *h;
    setup();
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    OK(cuMemAllocHost_v2(&h, 64));
    OK(cuMemAllocAsync(&d, 64, b));
    OK(cuMemcpyHtoDAsync_v2(d, h, 64, a)); /* not ordered before the free below */
    OK(cuMemFreeAsync(d, b));
    OK(cuStreamSynchronize(b));
    ck_assert_uint_eq(cusim_errors(), 0);
    OK(cuStreamSynchronize(a));
    ck_assert_uint_eq(cusim_errors(), 1);
    /* at call time */
    OK(cuMemAlloc_v2(&d, 64));
    OK(cuMemFree_v2(d));
    ck_assert_int_eq(cuMemcpyHtoDAsync_v2(d, h, 64, a), CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(cusim_errors(), 2);
    /* freeing synchronizes: pending work on the memory runs first */
    OK(cuMemAlloc_v2(&d, 64));
    fill(h, 64, 1);
    OK(cuMemcpyHtoDAsync_v2(d, h, 64, a));
    OK(cuMemFree_v2(d));
    ck_assert_uint_eq(cusim_pending(), 0);
    ck_assert_uint_eq(cusim_errors(), 2);
    void *p2;
    OK(cuMemAllocHost_v2(&p2, 64));
    OK(cuMemcpyDtoHAsync_v2(p2, d - 0, 0, a));
    OK(cuMemFreeHost(p2));
    ck_assert_int_eq(cuMemFreeHost(p2), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

/* ------------------------------------------------------------ fault injection and log */

START_TEST(env_fail)
{
    CUstream s;
    CUdeviceptr d;
    void *h;
    unsigned int t;
    setenv("CUSIM_FAIL", "cuMemcpyHtoDAsync_v2:2:700,cuPointerGetAttributes:0:1", 1);
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, 64));
    OK(cuMemAllocHost_v2(&h, 64));
    OK(cuMemcpyHtoDAsync_v2(d, h, 64, s));
    ck_assert_int_eq(cuMemcpyHtoDAsync_v2(d, h, 64, s), 700);
    ck_assert_uint_eq(cusim_pending(), 1); /* the failed call did nothing */
    OK(cuMemcpyHtoDAsync_v2(d, h, 64, s));
    ck_assert_uint_eq(cusim_count("cuMemcpyHtoDAsync_v2"), 3);
    CUpointer_attribute at = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    void *data = &t;
    ck_assert_int_eq(cuPointerGetAttributes(1, &at, &data, d), 1);
    ck_assert_int_eq(cuPointerGetAttributes(1, &at, &data, d), 1);
    cusim_reset_counts();
    ck_assert_uint_eq(cusim_count("cuMemcpyHtoDAsync_v2"), 0);
}
END_TEST

START_TEST(env_log)
{
    char path[] = "/tmp/cusim-logXXXXXX", buf[8192];
    int fd = mkstemp(path);
    CUstream s;
    CUdeviceptr d;
    void *h;
    ck_assert_int_ge(fd, 0);
    setenv("CUSIM_LOG", path, 1);
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, 64));
    OK(cuMemAllocHost_v2(&h, 64));
    OK(cuMemcpyHtoDAsync_v2(d, h, 64, s));
    CUdeviceptr ds[1] = { d }, ss[1] = { DP(h) };
    size_t sz[1] = { 64 }, idx = 0;
    CUmemcpyAttributes at;
    memset(&at, 0, sizeof at);
    at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    OK(cuMemcpyBatchAsync_v2(ds, ss, sz, 1, &at, &idx, 1, s));
    OK(cuMemFree_v2(d));
    ck_assert_int_eq(cuMemcpyHtoDAsync_v2(d, h, 64, s), CUDA_ERROR_INVALID_VALUE);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    ck_assert_int_gt(n, 0);
    buf[n] = 0;
    char want[256];
    snprintf(want, sizeof want, "cuMemcpyHtoDAsync_v2 rc=0 stream=%p dst=%p src=%p n=64\n", (void *)s, HP(d), h);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    ck_assert_ptr_nonnull(strstr(buf, "cuMemcpyBatchAsync_v2 rc=0 stream="));
    ck_assert_ptr_nonnull(strstr(buf, "count=1 order=reverse"));
    ck_assert_ptr_nonnull(strstr(buf, "cuMemAlloc_v2 rc=0 stream=- "));
    ck_assert_ptr_nonnull(strstr(buf, "USE_AFTER_FREE"));
    close(fd);
    unlink(path);
}
END_TEST

/* ------------------------------------------------------------ 2D copies */

enum { T_HOST = CU_MEMORYTYPE_HOST, T_DEV = CU_MEMORYTYPE_DEVICE, T_UNI = CU_MEMORYTYPE_UNIFIED };

/* A 2D copy of w bytes x h rows from src (memory type st, pitch sp) to dst (type dt, pitch
 * dp), X = Y = 0.  A HOST side names its pointer in *Host, any other type in *Device. */
static CUDA_MEMCPY2D m2d(int dt, const void *dst, size_t dp, int st, const void *src, size_t sp, size_t w, size_t h)
{
    CUDA_MEMCPY2D m;
    memset(&m, 0, sizeof m);
    m.dstMemoryType = (CUmemorytype)dt;
    if (dt == T_HOST)
        m.dstHost = (void *)(uintptr_t)dst;
    else
        m.dstDevice = DP(dst);
    m.dstPitch = dp;
    m.srcMemoryType = (CUmemorytype)st;
    if (st == T_HOST)
        m.srcHost = src;
    else
        m.srcDevice = DP(src);
    m.srcPitch = sp;
    m.WidthInBytes = w;
    m.Height = h;
    return m;
}

/* want[0, size): what a zeroed destination holds after h rows of w bytes from src (pitch
 * sp) were copied to it at offset off with pitch dp: the rows, zeros between and around. */
static void want2d(unsigned char *want, size_t size, size_t off, size_t dp, const void *src, size_t sp, size_t w,
                   size_t h)
{
    memset(want, 0, size);
    for (size_t r = 0; r < h; r++)
        memcpy(want + off + r * dp, (const unsigned char *)src + r * sp, w);
}

START_TEST(copy2d_directions)
{
    CUstream s;
    CUdeviceptr d, d2, m;
    unsigned char *ph, *back, *reg = aligned_alloc(4096, 4096), want[1024];
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, 1024));
    OK(cuMemAlloc_v2(&d2, 1024));
    OK(cuMemAllocManaged(&m, 1024, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemAllocHost_v2((void **)&ph, 1024));
    OK(cuMemAllocHost_v2((void **)&back, 1024));
    OK(cuMemHostRegister_v2(reg, 4096, 0));
    memset(reg, 0, 4096);
    fill(ph, 1024, 3);
    /* pinned host to device, the pitches differ: deferred, as a 1D copy */
    CUDA_MEMCPY2D c = m2d(T_DEV, HP(d), 64, T_HOST, ph, 40, 33, 5);
    OK(cuMemcpy2DAsync_v2(&c, s));
    ck_assert_uint_eq(cusim_pending(), 1);
    ck_assert(all(HP(d), 1024, 0));
    OK(cuStreamSynchronize(s));
    want2d(want, 1024, 0, 64, ph, 40, 33, 5);
    ck_assert_mem_eq(HP(d), want, 1024);
    /* device to device, X and Y on both sides: each starts at base + Y * pitch + X */
    c = m2d(T_DEV, HP(d2), 50, T_DEV, HP(d), 64, 20, 4);
    c.dstXInBytes = 3;
    c.dstY = 2;
    c.srcXInBytes = 5;
    c.srcY = 1;
    OK(cuMemcpy2DAsync_v2(&c, s));
    OK(cuStreamSynchronize(s));
    want2d(want, 1024, 2 * 50 + 3, 50, (unsigned char *)HP(d) + 64 + 5, 64, 20, 4);
    ck_assert_mem_eq(HP(d2), want, 1024);
    /* device to pinned host: deferred too */
    c = m2d(T_HOST, back, 33, T_DEV, HP(d), 64, 33, 5);
    OK(cuMemcpy2DAsync_v2(&c, s));
    ck_assert_uint_eq(cusim_pending(), 1);
    ck_assert(all(back, 1024, 0));
    OK(cuStreamSynchronize(s));
    want2d(want, 1024, 0, 33, ph, 40, 33, 5);
    ck_assert_mem_eq(back, want, 1024);
    /* UNIFIED: any memory on either side (pinned, managed, registered) */
    c = m2d(T_UNI, HP(m), 16, T_UNI, ph, 32, 16, 8);
    OK(cuMemcpy2DAsync_v2(&c, s));
    c = m2d(T_UNI, reg + 100, 100, T_UNI, HP(m), 16, 16, 8);
    OK(cuMemcpy2DAsync_v2(&c, s));
    ck_assert_uint_eq(cusim_pending(), 2);
    OK(cuStreamSynchronize(s));
    want2d(want, 1024, 0, 16, ph, 32, 16, 8);
    ck_assert_mem_eq(HP(m), want, 1024);
    want2d(want, 1024, 100, 100, ph, 32, 16, 8);
    ck_assert_mem_eq(reg, want, 1024);
    /* a HOST side naming device memory is accepted, as cuMemcpyHtoDAsync's source is */
    memset(HP(d2), 0, 1024);
    c = m2d(T_DEV, HP(d2), 64, T_HOST, HP(d), 64, 64, 3);
    OK(cuMemcpy2DAsync_v2(&c, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(d2), HP(d), 192);
    /* one row: the pitches do not matter */
    memset(HP(d2), 0, 1024);
    c = m2d(T_DEV, HP(d2), 0, T_DEV, HP(d), 0, 100, 1);
    OK(cuMemcpy2DAsync_v2(&c, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(d2), HP(d), 100);
    ck_assert(all((char *)HP(d2) + 100, 924, 0));
    /* equal pitch and width: one block */
    c = m2d(T_DEV, HP(d2), 128, T_DEV, HP(d), 128, 128, 8);
    OK(cuMemcpy2DAsync_v2(&c, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(d2), HP(d), 1024);
    ck_assert_uint_eq(cusim_errors(), 0);
    OK(cuMemHostUnregister(reg));
    free(reg);
}
END_TEST

START_TEST(copy2d_validation)
{
    CUstream s, dead;
    CUdeviceptr d, d2, f;
    void *ph;
    unsigned char pageable[256];
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamCreate(&dead, 0));
    OK(cuStreamDestroy_v2(dead));
    OK(cuMemAlloc_v2(&d, 1024));
    OK(cuMemAlloc_v2(&d2, 1024));
    OK(cuMemAllocHost_v2(&ph, 1024));
    const CUDA_MEMCPY2D good = m2d(T_DEV, HP(d), 64, T_DEV, HP(d2), 64, 64, 16); /* exactly 1024 bytes */
    CUDA_MEMCPY2D c;
#define REJ(code, ...)                                                                                  \
    do {                                                                                                \
        c = good;                                                                                       \
        __VA_ARGS__;                                                                                    \
        ck_assert_int_eq(cuMemcpy2DAsync_v2(&c, s), code);                                              \
    } while (0)
    ck_assert_int_eq(cuMemcpy2DAsync_v2(NULL, s), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemcpy2D_v2(NULL), CUDA_ERROR_INVALID_VALUE);
    /* memory types: ARRAY (no arrays here) and unknown ones, either side */
    REJ(CUDA_ERROR_INVALID_VALUE, c.dstMemoryType = CU_MEMORYTYPE_ARRAY);
    REJ(CUDA_ERROR_INVALID_VALUE, c.srcMemoryType = CU_MEMORYTYPE_ARRAY);
    REJ(CUDA_ERROR_INVALID_VALUE, c.dstMemoryType = (CUmemorytype)0);
    REJ(CUDA_ERROR_INVALID_VALUE, c.srcMemoryType = (CUmemorytype)5);
    /* rows that would overlap: width above a pitch */
    REJ(CUDA_ERROR_INVALID_VALUE, c.dstPitch = 63; c.Height = 2);
    REJ(CUDA_ERROR_INVALID_VALUE, c.srcPitch = 63; c.Height = 2);
    /* a pitch above 2^31 - 1 */
    REJ(CUDA_ERROR_INVALID_VALUE, c.dstPitch = 2147483648u; c.Height = 1);
    REJ(CUDA_ERROR_INVALID_VALUE, c.srcPitch = 2147483648u; c.Height = 1);
    /* a footprint past the end: one more row, X, Y, on either side */
    REJ(CUDA_ERROR_INVALID_VALUE, c.Height = 17);
    REJ(CUDA_ERROR_INVALID_VALUE, c.dstXInBytes = 1);
    REJ(CUDA_ERROR_INVALID_VALUE, c.srcY = 1);
    REJ(CUDA_ERROR_INVALID_VALUE, c.srcDevice = d2 + 1);
    REJ(CUDA_ERROR_INVALID_VALUE, c.dstY = SIZE_MAX / 2);     /* Y * pitch wraps */
    REJ(CUDA_ERROR_INVALID_VALUE, c.srcXInBytes = SIZE_MAX);  /* the start wraps */
    REJ(CUDA_ERROR_INVALID_VALUE, c.dstPitch = 2147483647u; c.Height = SIZE_MAX / 1024);
    /* DEVICE naming host memory (pinned or pageable), as cuMemcpyHtoDAsync's destination */
    REJ(CUDA_ERROR_INVALID_VALUE, c.dstDevice = DP(ph));
    REJ(CUDA_ERROR_INVALID_VALUE, c.srcDevice = DP(pageable); c.Height = 4);
    /* freed device memory: detected */
    OK(cuMemAlloc_v2(&f, 1024));
    OK(cuMemFree_v2(f));
    REJ(CUDA_ERROR_INVALID_VALUE, c.dstDevice = f);
    ck_assert_uint_eq(cusim_errors(), 1);
    /* streams and contexts */
    c = good;
    ck_assert_int_eq(cuMemcpy2DAsync_v2(&c, dead), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuMemcpy2DAsync_v2(&c, (CUstream)(uintptr_t)0x1234), CUDA_ERROR_INVALID_HANDLE);
    OK(cuCtxSetCurrent(NULL));
    ck_assert_int_eq(cuMemcpy2DAsync_v2(&c, NULL), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuMemcpy2D_v2(&c), CUDA_ERROR_INVALID_CONTEXT);
    OK(cuCtxSetCurrent(ctx));
    ck_assert_uint_eq(cusim_pending(), 0);
    /* nothing to copy: success after the stream is checked, whatever the rest says */
    c = good;
    c.WidthInBytes = 0;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcPitch = 2147483648u;
    OK(cuMemcpy2DAsync_v2(&c, s));
    c.WidthInBytes = 64;
    c.Height = 0;
    OK(cuMemcpy2DAsync_v2(&c, s));
    OK(cuMemcpy2D_v2(&c));
    ck_assert_int_eq(cuMemcpy2DAsync_v2(&c, dead), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_uint_eq(cusim_pending(), 0);
    /* width above the pitch is fine for one row; the footprint's end is inclusive */
    REJ(CUDA_SUCCESS, c.dstPitch = 10; c.srcPitch = 0; c.Height = 1; c.dstY = 3);
    REJ(CUDA_SUCCESS, c.WidthInBytes = 60; c.dstXInBytes = 4; c.srcXInBytes = 4);
    ck_assert_uint_eq(cusim_pending(), 2);
    OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(cusim_errors(), 1);
#undef REJ
}
END_TEST

START_TEST(copy2d_max_copy)
{
    CUstream s;
    CUdeviceptr d, d2;
    setenv("CUSIM_MAX_COPY", "100", 1);
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, 1024));
    OK(cuMemAlloc_v2(&d2, 1024));
    fill(HP(d2), 1024, 4);
    /* the limit applies to the copy's bytes (width x height), not to its footprint */
    CUDA_MEMCPY2D c = m2d(T_DEV, HP(d), 64, T_DEV, HP(d2), 64, 10, 10);
    OK(cuMemcpy2DAsync_v2(&c, s));
    c.Height = 11;
    ck_assert_int_eq(cuMemcpy2DAsync_v2(&c, s), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemcpy2D_v2(&c), CUDA_ERROR_INVALID_VALUE);
    c.WidthInBytes = 101;
    c.dstPitch = c.srcPitch = 0;
    c.Height = 1;
    ck_assert_int_eq(cuMemcpy2DAsync_v2(&c, s), CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(cusim_pending(), 1);
    OK(cuStreamSynchronize(s));
    for (int r = 0; r < 10; r++)
        ck_assert_mem_eq((char *)HP(d) + r * 64, (char *)HP(d2) + r * 64, 10);
}
END_TEST

START_TEST(copy2d_pageable)
{
    CUstream s;
    CUdeviceptr d;
    unsigned char *pg = malloc(1024), *pd = malloc(1024), *reg = aligned_alloc(4096, 8192), keep[1024], want[1024];
    setup();
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc_v2(&d, 1024));
    fill(pg, 1024, 7);
    memcpy(keep, pg, 1024);
    /* a pageable source is read at the call: the program may reuse it at once */
    CUDA_MEMCPY2D c = m2d(T_DEV, HP(d), 64, T_HOST, pg, 48, 40, 6);
    OK(cuMemcpy2DAsync_v2(&c, s));
    memset(pg, 0xEE, 1024);
    ck_assert(all(HP(d), 1024, 0));
    ck_assert_uint_eq(cusim_pending(), 1);
    /* a pageable destination makes the copy synchronous (after the stream's earlier work) */
    memset(pd, 0, 1024);
    c = m2d(T_HOST, pd, 40, T_DEV, HP(d), 64, 40, 6);
    OK(cuMemcpy2DAsync_v2(&c, s));
    ck_assert_uint_eq(cusim_pending(), 0);
    want2d(want, 1024, 0, 40, keep, 48, 40, 6);
    ck_assert_mem_eq(pd, want, 1024);
    /* UNIFIED pageable memory likewise, through the synchronous entry point too */
    memset(pd, 0, 1024);
    c = m2d(T_UNI, pd, 100, T_UNI, HP(d), 64, 40, 6);
    OK(cuMemcpy2D_v2(&c));
    want2d(want, 1024, 0, 100, keep, 48, 40, 6);
    ck_assert_mem_eq(pd, want, 1024);
    /* a footprint running past the end of registered memory is pageable memory, as for a 1D
     * copy: staged at the call */
    OK(cuMemHostRegister_v2(reg, 4096, 0));
    fill(reg, 8192, 9);
    memcpy(keep, reg + 4000, 1024);
    memset(HP(d), 0, 1024);
    c = m2d(T_DEV, HP(d), 64, T_HOST, reg + 4000, 128, 64, 8);
    OK(cuMemcpy2DAsync_v2(&c, s));
    memset(reg + 4000, 0, 1024);
    OK(cuStreamSynchronize(s));
    want2d(want, 1024, 0, 64, keep, 128, 64, 8);
    ck_assert_mem_eq(HP(d), want, 1024);
    ck_assert_uint_eq(cusim_errors(), 0);
    OK(cuMemHostUnregister(reg));
    free(reg);
    free(pg);
    free(pd);
}
END_TEST

START_TEST(copy2d_streams)
{
    CUstream a, nb;
    CUdeviceptr x, y, z;
    unsigned char want[1024], v[1024];
    setup();
    OK(cuStreamCreate(&a, CU_STREAM_DEFAULT));
    OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc_v2(&x, 1024));
    OK(cuMemAlloc_v2(&y, 1024));
    OK(cuMemAlloc_v2(&z, 1024));
    const CUDA_MEMCPY2D xy = m2d(T_DEV, HP(y), 64, T_DEV, HP(x), 64, 32, 8);
    const CUDA_MEMCPY2D yz = m2d(T_DEV, HP(z), 128, T_DEV, HP(y), 64, 32, 8);
    /* stream order: a 2D copy reads what the stream's earlier work wrote, and later work
     * reads its rows */
    OK(cuMemsetD8Async(x, 0x11, 1024, a));
    OK(cuMemcpy2DAsync_v2(&xy, a));
    OK(cuMemcpy2DAsync_v2(&yz, a));
    ck_assert(all(HP(z), 1024, 0));
    OK(cuStreamSynchronize(a));
    memset(v, 0x11, sizeof v);
    want2d(want, 1024, 0, 128, v, 64, 32, 8);
    ck_assert_mem_eq(HP(z), want, 1024);
    /* the legacy stream follows a blocking stream's earlier work */
    OK(cuMemsetD8Async(x, 0x22, 1024, a));
    OK(cuMemcpy2DAsync_v2(&xy, NULL));
    OK(cuStreamSynchronize(NULL));
    memset(v, 0x22, sizeof v);
    want2d(want, 1024, 0, 64, v, 64, 32, 8);
    ck_assert_mem_eq(HP(y), want, 1024);
    /* ... not a non-blocking stream's; and a non-blocking stream's copy is its own */
    OK(cuMemcpy2DAsync_v2(&yz, nb));
    OK(cuStreamSynchronize(NULL));
    ck_assert_uint_eq(cusim_pending(), 1);
    OK(cuStreamSynchronize(nb));
    ck_assert_uint_eq(cusim_pending(), 0);
    /* NULL through _ptsz (and CU_STREAM_PER_THREAD) is this thread's stream: a later legacy
     * copy waits for it, synchronizing the per-thread stream runs it alone */
    OK(cuMemcpy2DAsync_v2_ptsz(&xy, NULL));
    OK(cuMemcpy2DAsync_v2(&xy, CU_STREAM_PER_THREAD));
    OK(cuMemcpy2DAsync_v2(&yz, NULL));
    ck_assert_uint_eq(cusim_pending(), 3);
    OK(cuStreamSynchronize(a));
    ck_assert_uint_eq(cusim_pending(), 3);
    OK(cuStreamSynchronize_ptsz(NULL));
    ck_assert_uint_eq(cusim_pending(), 1);
    OK(cuStreamSynchronize(NULL));
    ck_assert_uint_eq(cusim_pending(), 0);
    /* the synchronous entry points: legacy (after the blocking streams' work) and per-thread */
    OK(cuMemsetD8Async(x, 0x33, 1024, a));
    OK(cuMemcpy2D_v2(&xy));
    ck_assert_uint_eq(cusim_pending(), 0);
    memset(v, 0x33, sizeof v);
    want2d(want, 1024, 0, 64, v, 64, 32, 8);
    ck_assert_mem_eq(HP(y), want, 1024);
    OK(cuMemsetD8Async(x, 0x44, 1024, nb));
    OK(cuMemsetD8Async_ptsz(z, 0x55, 1024, NULL));
    OK(cuMemcpy2D_v2_ptds(&xy)); /* follows the per-thread stream, not nb */
    ck_assert_uint_eq(cusim_pending(), 1);
    ck_assert(all(HP(z), 1024, 0x55));
    ck_assert_mem_eq(HP(y), want, 1024);
    OK(cuStreamSynchronize(nb));
    /* a faulted context takes no more work (sticky error) */
    CUmodule mod;
    CUfunction f;
    OK(cuModuleLoadData(&mod, (const unsigned char[16]){ 0x50, 0xED, 0x55, 0xBA }));
    OK(cuModuleGetFunction(&f, mod, "cubatch_copy_kernel"));
    struct cb_kparams *p = calloc(1, sizeof *p);
    p->count = 1;
    p->c[0] = (struct cb_kcopy){ y, DP(v), 16 }; /* pageable source: an illegal address */
    void *args[1] = { p };
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, a, args, NULL));
    ck_assert_int_eq(cuStreamSynchronize(a), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuMemcpy2DAsync_v2(&xy, a), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuMemcpy2D_v2(&xy), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_uint_eq(cusim_pending(), 0);
    free(p);
}
END_TEST

START_TEST(copy2d_capture)
{
    CUstream s;
    CUdeviceptr x, y, f;
    unsigned char *pg = malloc(1024), *pd = malloc(1024), want[1024];
    CUgraph g;
    CUgraphExec ge;
    CUstreamCaptureStatus st;
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 1024));
    OK(cuMemAlloc_v2(&y, 1024));
    memset(pd, 0, 1024);
    fill(pg, 1024, 3);
    CUDA_MEMCPY2D c1 = m2d(T_DEV, HP(x), 64, T_HOST, pg, 32, 32, 8);    /* pageable source: read at replay */
    CUDA_MEMCPY2D c2 = m2d(T_DEV, HP(y), 100, T_DEV, HP(x), 64, 30, 8);
    c2.srcXInBytes = 2;
    c2.dstY = 1;
    CUDA_MEMCPY2D c3 = m2d(T_HOST, pd, 30, T_UNI, HP(y), 100, 30, 9); /* pageable destination */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemcpy2DAsync_v2(&c1, s));
    OK(cuMemcpy2DAsync_v2(&c2, s));
    OK(cuMemcpy2DAsync_v2(&c3, s));
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuStreamEndCapture(s, &g));
    ck_assert_uint_eq(cusim_pending(), 0);
    ck_assert(all(HP(x), 1024, 0) && all(HP(y), 1024, 0) && all(pd, 1024, 0));
    OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    OK(cuGraphDestroy(g));
    for (unsigned seed = 50; seed <= 90; seed += 40) {
        unsigned char wx[1024], wy[1024];
        fill(pg, 1024, seed);
        OK(cuGraphLaunch(ge, s));
        ck_assert_uint_eq(cusim_pending(), 3);
        OK(cuStreamSynchronize(s));
        want2d(wx, 1024, 0, 64, pg, 32, 32, 8);
        ck_assert_mem_eq(HP(x), wx, 1024);
        want2d(wy, 1024, 100, 100, wx + 2, 64, 30, 8);
        ck_assert_mem_eq(HP(y), wy, 1024);
        want2d(want, 1024, 0, 30, wy, 100, 30, 9);
        ck_assert_mem_eq(pd, want, 1024);
    }
    OK(cuGraphExecDestroy(ge));
    /* the per-thread stream captures too: NULL through _ptsz is recorded; a synchronous copy
     * on it is refused (_UNSUPPORTED) and ends the capture invalidated */
    OK(cuStreamBeginCapture_v2(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(cuMemcpy2DAsync_v2_ptsz(&c2, NULL));
    ck_assert_int_eq(cuMemcpy2D_v2_ptds(&c2), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ck_assert_int_eq(cuMemcpy2DAsync_v2_ptsz(&c2, NULL), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ck_assert_int_eq(cuStreamEndCapture(CU_STREAM_PER_THREAD, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* the legacy stream while a blocking stream captures: _IMPLICIT, invalidated */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ck_assert_int_eq(cuMemcpy2DAsync_v2(&c2, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ck_assert_int_eq(cuMemcpy2D_v2(&c2), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ck_assert_uint_eq(cusim_pending(), 0);
    /* a replay naming memory freed since the capture: the op is skipped, a use after free */
    OK(cuMemAlloc_v2(&f, 1024));
    CUDA_MEMCPY2D c4 = m2d(T_DEV, HP(f), 64, T_DEV, HP(x), 64, 32, 8);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemcpy2DAsync_v2(&c4, s));
    OK(cuStreamEndCapture(s, &g));
    OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    OK(cuMemFree_v2(f));
    OK(cuGraphLaunch(ge, s));
    OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(cusim_errors(), 1);
    free(pg);
    free(pd);
}
END_TEST

START_TEST(copy2d_log_proc_fail)
{
    char path[] = "/tmp/cusim-2dlogXXXXXX", buf[8192], want[512];
    int fd = mkstemp(path);
    CUstream s;
    CUdeviceptr d;
    void *ph, *fn;
    unsigned char *pg = malloc(1024);
    CUdriverProcAddressQueryResult qs;
    ck_assert_int_ge(fd, 0);
    setenv("CUSIM_LOG", path, 1);
    setenv("CUSIM_FAIL", "cuMemcpy2DAsync_v2:1:2", 1);
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, 1024));
    OK(cuMemAllocHost_v2(&ph, 1024));
    CUDA_MEMCPY2D c = m2d(T_DEV, HP(d), 64, T_HOST, ph, 40, 33, 5);
    c.dstY = 1;
    /* CUSIM_FAIL: the first call fails and does nothing */
    ck_assert_int_eq(cuMemcpy2DAsync_v2(&c, s), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(cusim_pending(), 0);
    OK(cuMemcpy2DAsync_v2(&c, s));
    ck_assert_uint_eq(cusim_count("cuMemcpy2DAsync_v2"), 2);
    /* cuGetProcAddress answers the simulated functions (no longer stubs) */
    OK(cuGetProcAddress_v2("cuMemcpy2DAsync", &fn, 13000, 0, &qs));
    ck_assert_str_eq(sym_name(fn), "cuMemcpy2DAsync_v2");
    ck_assert_ptr_eq(fn, (void *)cuMemcpy2DAsync_v2);
    OK(cuGetProcAddress_v2("cuMemcpy2DAsync", &fn, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &qs));
    ck_assert_str_eq(sym_name(fn), "cuMemcpy2DAsync_v2_ptsz");
    OK(((CUresult(*)(const CUDA_MEMCPY2D *, CUstream))fn)(&c, s));
    OK(cuGetProcAddress_v2("cuMemcpy2D", &fn, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &qs));
    ck_assert_str_eq(sym_name(fn), "cuMemcpy2D_v2_ptds");
    OK(((CUresult(*)(const CUDA_MEMCPY2D *))fn)(&c));
    OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(cusim_pending(), 0);
    /* staged, synchronous, captured, refused */
    c = m2d(T_DEV, HP(d), 64, T_HOST, pg, 64, 64, 2);
    OK(cuMemcpy2DAsync_v2(&c, s));
    c = m2d(T_HOST, pg, 64, T_DEV, HP(d), 64, 64, 2);
    OK(cuMemcpy2DAsync_v2(&c, s));
    CUgraph g;
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemcpy2DAsync_v2(&c, s));
    OK(cuStreamEndCapture(s, &g));
    ck_assert_int_eq(cuMemcpy2DAsync_v2(NULL, s), CUDA_ERROR_INVALID_VALUE);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    ck_assert_int_gt(n, 0);
    buf[n] = 0;
    snprintf(want, sizeof want, "cuMemcpy2DAsync_v2 rc=2 stream=%p injected=1\n", (void *)s);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    snprintf(want, sizeof want,
             "cuMemcpy2DAsync_v2 rc=0 stream=%p dst=%p src=%p width=33 height=5 dpitch=64 spitch=40\n", (void *)s,
             (char *)HP(d) + 64, ph);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    snprintf(want, sizeof want, "cuMemcpy2DAsync_v2_ptsz rc=0 stream=%p dst=", (void *)s);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    ck_assert_ptr_nonnull(strstr(buf, "cuMemcpy2D_v2_ptds rc=0 stream=- dst="));
    snprintf(want, sizeof want, "src=%p width=64 height=2 dpitch=64 spitch=64 staged=1\n", pg);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    snprintf(want, sizeof want, "dst=%p src=%p width=64 height=2 dpitch=64 spitch=64 sync=1\n", pg, HP(d));
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    snprintf(want, sizeof want, "dst=%p src=%p width=64 height=2 dpitch=64 spitch=64 captured=1\n", pg, HP(d));
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    snprintf(want, sizeof want, "cuMemcpy2DAsync_v2 rc=1 stream=%p pCopy=NULL\n", (void *)s);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    close(fd);
    unlink(path);
    free(pg);
}
END_TEST

/* ------------------------------------------------------------ the copy kernel */

/* A fatbin header: magic 0xBA55ED50 (little-endian), version 1, header size 16. */
static const unsigned char fatbin[16] = { 0x50, 0xED, 0x55, 0xBA, 0x01, 0x00, 0x10, 0x00 };
/* The tiers of copy_kernel.h's CB_KTIERS, however many: the tests below name the
 * first (smallest), the second and the last (all of struct cb_kparams). */
#define KONE(cap, name) +1
enum { KTIERS = 0 CB_KTIERS(KONE), KFIRST = 0, KSECOND = 1, KMAX = KTIERS - 1 };
#undef KONE
_Static_assert(KTIERS >= 2, "the tests below launch the first, the second and the last tier");
static const struct { const char *name; unsigned cap; } ktiers[KTIERS] = { CB_KTIERS(CB_KTIER_ROW) };
/* each tier's twin that also takes 2D pairs (<entry point>_rows) */
static const struct { const char *name; unsigned cap; } ktiers_rows[KTIERS] = { CB_KTIERS(CB_KTIER_ROWS_ROW) };
#define KNAME(cap, name) #name,
#define KCAP(cap, name) cap##u,
static const char *const knames[KTIERS] = { CB_KTIERS(KNAME) };
static const unsigned kcaps[KTIERS] = { CB_KTIERS(KCAP) };
#undef KNAME
#undef KCAP
static CUfunction kfn[KTIERS], kfn_rows[KTIERS];

/* Load the module in the current context; kfn[] its tiers, kfn_rows[] their _rows twins. */
static CUmodule kload(void)
{
    CUmodule m = NULL;
    OK(cuModuleLoadData(&m, fatbin));
    ck_assert_ptr_nonnull(m);
    for (int i = 0; i < KTIERS; i++) {
        kfn[i] = kfn_rows[i] = NULL;
        OK(cuModuleGetFunction(&kfn[i], m, knames[i]));
        ck_assert_ptr_nonnull(kfn[i]);
        OK(cuModuleGetFunction(&kfn_rows[i], m, ktiers_rows[i].name));
        ck_assert_ptr_nonnull(kfn_rows[i]);
    }
    return m;
}

static struct cb_kparams *kp_new(void)
{
    struct cb_kparams *p = calloc(1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

static void kp_add(struct cb_kparams *p, CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    p->c[p->count].dst = dst;
    p->c[p->count].src = src;
    p->c[p->count].bytes = n;
    p->count++;
}

static CUresult klaunch(CUfunction f, const struct cb_kparams *p, CUstream s)
{
    void *args[1] = { (void *)(uintptr_t)p };
    return cuLaunchKernel(f, 4, 1, 1, CB_KBLOCK_DEFAULT, 1, 1, 0, s, args, NULL);
}

static CUresult klaunch_ptsz(CUfunction f, const struct cb_kparams *p, CUstream s)
{
    void *args[1] = { (void *)(uintptr_t)p };
    return cuLaunchKernel_ptsz(f, 4, 1, 1, CB_KBLOCK_DEFAULT, 1, 1, 0, s, args, NULL);
}

START_TEST(kernel_module_lifecycle)
{
    CUmodule m, m2, bad = NULL;
    CUfunction f, f2;
    CUstream s;
    CUdeviceptr x, y;
    struct cb_kparams *p = kp_new();
    static const unsigned char elf[16] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
    static const unsigned char swapped[16] = { 0xBA, 0x55, 0xED, 0x50 };
    setup();
    /* loading needs a current context, both pointers, and a fatbin */
    OK(cuCtxSetCurrent(NULL));
    ck_assert_int_eq(cuModuleLoadData(&m, fatbin), CUDA_ERROR_INVALID_CONTEXT);
    OK(cuCtxSetCurrent(ctx));
    ck_assert_int_eq(cuModuleLoadData(NULL, fatbin), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuModuleLoadData(&m, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuModuleLoadData(&bad, elf), CUDA_ERROR_INVALID_IMAGE);
    ck_assert_int_eq(cuModuleLoadData(&bad, swapped), CUDA_ERROR_INVALID_IMAGE);
    ck_assert_ptr_null(bad);
    /* copy_kernel.h's list of tiers: smallest first, the last the whole struct */
    for (size_t i = 0; i < KTIERS; i++) {
        ck_assert(i == 0 || ktiers[i - 1].cap < ktiers[i].cap);
        ck_assert(CB_KPARAMS_BYTES(ktiers[i].cap) <= CB_KPARAMS_LIMIT);
    }
    ck_assert_uint_eq(ktiers[KMAX].cap, CB_KPARAMS_MAX);
    /* the names say what they hold: the capacity, none on the last */
    char kname[64];
    for (int i = 0; i < KMAX; i++) {
        snprintf(kname, sizeof kname, "cubatch_copy_kernel_%u", kcaps[i]);
        ck_assert_str_eq(knames[i], kname);
    }
    ck_assert_str_eq(knames[KMAX], "cubatch_copy_kernel");
    /* each tier's _rows twin: the same capacity */
    for (int i = 0; i < KTIERS; i++) {
        snprintf(kname, sizeof kname, "%s_rows", knames[i]);
        ck_assert_str_eq(ktiers_rows[i].name, kname);
        ck_assert_uint_eq(ktiers_rows[i].cap, kcaps[i]);
    }
    m = kload();
    /* the tiers and their twins, distinct, the same handle when asked again */
    for (int i = 0; i < KTIERS; i++) {
        for (int j = 0; j < i; j++)
            ck_assert(kfn[i] != kfn[j] && kfn_rows[i] != kfn_rows[j] && kfn[i] != kfn_rows[j] &&
                      kfn_rows[i] != kfn[j]);
        ck_assert_ptr_ne(kfn[i], kfn_rows[i]);
        OK(cuModuleGetFunction(&f, m, knames[i]));
        ck_assert_ptr_eq(f, kfn[i]);
        OK(cuModuleGetFunction(&f, m, ktiers_rows[i].name));
        ck_assert_ptr_eq(f, kfn_rows[i]);
    }
    f = (CUfunction)1;
    snprintf(kname, sizeof kname, "cubatch_copy_kernel_%u", kcaps[KFIRST] + 1); /* no tier's capacity */
    ck_assert_int_eq(cuModuleGetFunction(&f, m, kname), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(cuModuleGetFunction(&f, m, "burn"), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(cuModuleGetFunction(&f, m, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuModuleGetFunction(NULL, m, knames[KMAX]), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuModuleGetFunction(&f, (CUmodule)(uintptr_t)0x1234, knames[KMAX]), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuModuleGetFunction(&f, NULL, knames[KMAX]), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_uint_eq(cusim_count("cuModuleLoadData"), 6);
    /* a second module is independent */
    OK(cuModuleLoadData(&m2, fatbin));
    ck_assert_ptr_ne(m2, m);
    OK(cuModuleGetFunction(&f2, m2, knames[KFIRST]));
    ck_assert_ptr_ne(f2, kfn[KFIRST]);
    /* a launch enqueued before the unload still runs */
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 64));
    OK(cuMemAlloc_v2(&y, 64));
    fill(HP(x), 64, 5);
    kp_add(p, y, x, 64);
    OK(klaunch(kfn[KFIRST], p, s));
    OK(cuModuleUnload(m));
    ck_assert(all(HP(y), 64, 0));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(y), HP(x), 64);
    /* after the unload: the module and its functions are dead handles */
    ck_assert_int_eq(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuModuleGetFunction(&f, m, knames[KMAX]), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(klaunch(kfn[KFIRST], p, s), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_uint_eq(cusim_pending(), 0);
    OK(klaunch(f2, p, s)); /* the other module still works */
    OK(cuModuleUnload(m2));
    ck_assert_int_eq(cuModuleUnload(NULL), CUDA_ERROR_INVALID_HANDLE);
    /* any other function still cannot be launched here */
    ck_assert_int_eq(cuLaunchKernel((CUfunction)(uintptr_t)0x5678, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL),
                     CUDA_ERROR_NOT_SUPPORTED);
    ck_assert_int_eq(cuLaunchKernel_ptsz(NULL, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_NOT_SUPPORTED);
    OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(cusim_kernel_copies(), 2);
    free(p);
}
END_TEST

START_TEST(kernel_modules_die_with_context)
{
    CUcontext c2, cur;
    CUmodule m, mp;
    CUfunction f;
    CUstream s2;
    CUdeviceptr x;
    struct cb_kparams *p = kp_new();
    setup();
    mp = kload(); /* primary context */
    CUfunction fprim = kfn[KFIRST];
    OK(cuCtxCreate_v2(&c2, 0, 0));
    OK(cuStreamCreate(&s2, 0));
    OK(cuMemAlloc_v2(&x, 64));
    kp_add(p, x, x + 32, 16);
    /* a function of another context cannot be launched on this context's streams */
    ck_assert_int_eq(klaunch(fprim, p, s2), CUDA_ERROR_INVALID_HANDLE);
    m = kload();
    OK(klaunch(kfn[KFIRST], p, s2));
    OK(cuCtxDestroy_v2(c2)); /* runs its work; its modules go with it */
    ck_assert_uint_eq(cusim_kernel_copies(), 1);
    ck_assert_int_eq(cuModuleGetFunction(&f, m, knames[KMAX]), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
    OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_eq(cur, ctx);
    /* a primary context reset unloads too: the library must load again */
    OK(cuModuleGetFunction(&f, mp, knames[KMAX]));
    OK(cuDevicePrimaryCtxReset_v2(0));
    OK(cuDevicePrimaryCtxRetain(&cur, 0));
    ck_assert_ptr_eq(cur, ctx);
    ck_assert_int_eq(cuModuleGetFunction(&f, mp, knames[KMAX]), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(klaunch(fprim, p, NULL), CUDA_ERROR_INVALID_HANDLE);
    kload();
    free(p);
}
END_TEST

START_TEST(kernel_launch_created_stream)
{
    CUstream s, b;
    CUevent e;
    CUdeviceptr x, y, z, m;
    void *h, *back;
    struct cb_kparams *p = kp_new();
    setup();
    kload();
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    OK(cuMemAlloc_v2(&x, 4096));
    OK(cuMemAlloc_v2(&y, 4096));
    OK(cuMemAlloc_v2(&z, 4096));
    OK(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemAllocHost_v2(&h, 4096));
    OK(cuMemAllocHost_v2(&back, 4096));
    fill(h, 4096, 3);
    /* HtoD, then the kernel reads what it wrote, then DtoH reads what the kernel wrote */
    OK(cuMemcpyHtoDAsync_v2(x, h, 4096, s));
    kp_add(p, y, x, 1000);                  /* device -> device */
    kp_add(p, y + 1000, DP(h) + 1000, 3); /* pinned -> device, odd size and offset */
    kp_add(p, m + 7, x + 1003, 3089);       /* device -> managed, unaligned */
    kp_add(p, DP(0xdead), DP(0xbeef), 0);    /* 0 bytes: a no-op, touches nothing */
    OK(klaunch(kfn[KFIRST], p, s));
    OK(cuMemcpyDtoHAsync_v2(back, y, 1003, s));
    OK(cuEventRecord(e, s));
    OK(cuStreamWaitEvent(b, e, 0));
    OK(cuMemcpyDtoDAsync_v2(z, m + 7, 3089, b)); /* after the kernel, through the event */
    ck_assert_uint_eq(cusim_pending(), 6);
    ck_assert(all(HP(y), 4096, 0) && all(back, 4096, 0));
    ck_assert_uint_eq(cusim_kernel_copies(), 0);
    OK(cuStreamSynchronize(b));
    ck_assert_uint_eq(cusim_pending(), 0);
    ck_assert_mem_eq(HP(y), h, 1003);
    ck_assert_mem_eq(back, h, 1003);
    ck_assert(all(HP(m), 7, 0));
    ck_assert_mem_eq(HP(m + 7), (char *)h + 1003, 3089);
    ck_assert_mem_eq(HP(z), (char *)h + 1003, 3089);
    ck_assert_uint_eq(cusim_kernel_copies(), 4);
    ck_assert_uint_eq(cusim_count("cuLaunchKernel"), 1);
    /* device -> pinned */
    p->count = 0;
    kp_add(p, DP(back) + 2048, x, 2048);
    OK(klaunch(kfn[KMAX], p, s));
    OK(cuStreamQuery(s));
    ck_assert_mem_eq((char *)back + 2048, h, 2048);
    ck_assert_uint_eq(cusim_errors(), 0);
    free(p);
}
END_TEST

START_TEST(kernel_launch_legacy_per_thread_nonblocking)
{
    CUstream a, nb;
    CUdeviceptr x, y;
    struct cb_kparams *p = kp_new();
    setup();
    kload();
    OK(cuStreamCreate(&a, 0));
    OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc_v2(&x, 256));
    OK(cuMemAlloc_v2(&y, 256));
    kp_add(p, y, x, 256);
    /* legacy (NULL through the plain entry): after the blocking stream's earlier work */
    OK(cuMemsetD8Async(x, 0x11, 256, a));
    OK(klaunch(kfn[KSECOND], p, NULL));
    OK(cuStreamSynchronize_ptsz(NULL)); /* not the per-thread stream's work */
    ck_assert_uint_eq(cusim_pending(), 2);
    OK(cuStreamSynchronize(CU_STREAM_LEGACY));
    ck_assert(all(HP(y), 256, 0x11));
    /* CU_STREAM_LEGACY, before a blocking stream's later work */
    OK(klaunch(kfn[KSECOND], p, CU_STREAM_LEGACY));
    OK(cuMemsetD8Async(x, 0x12, 256, a));
    OK(cuStreamSynchronize(a));
    ck_assert(all(HP(y), 256, 0x11) && all(HP(x), 256, 0x12));
    /* ... but not after a non-blocking stream's */
    memset(HP(x), 0x33, 256);
    OK(cuMemsetD8Async(x, 0x22, 256, nb));
    OK(klaunch(kfn[KSECOND], p, NULL));
    OK(cuStreamSynchronize(NULL));
    ck_assert(all(HP(y), 256, 0x33));
    ck_assert_uint_eq(cusim_pending(), 1);
    OK(cuStreamSynchronize(nb));
    /* per-thread: NULL through _ptsz, or CU_STREAM_PER_THREAD; blocking (waits for legacy) */
    OK(cuMemsetD8Async(x, 0x44, 256, NULL));
    OK(klaunch_ptsz(kfn[KSECOND], p, NULL));
    OK(cuStreamSynchronize(nb));
    ck_assert_uint_eq(cusim_pending(), 2);
    OK(cuStreamSynchronize_ptsz(NULL));
    ck_assert(all(HP(y), 256, 0x44));
    OK(cuMemsetD8Async(x, 0x45, 256, NULL));
    OK(klaunch(kfn[KSECOND], p, CU_STREAM_PER_THREAD));
    OK(cuStreamQuery_ptsz(NULL));
    ck_assert(all(HP(y), 256, 0x45));
    /* a non-blocking stream's launch does not wait for legacy work */
    memset(HP(x), 0x66, 256);
    OK(cuMemsetD8Async(x, 0x55, 256, NULL));
    OK(klaunch(kfn[KSECOND], p, nb));
    OK(cuStreamSynchronize(nb));
    ck_assert(all(HP(y), 256, 0x66));
    ck_assert_uint_eq(cusim_pending(), 1);
    OK(cuCtxSynchronize());
    ck_assert(all(HP(x), 256, 0x55));
    ck_assert_uint_eq(cusim_count("cuLaunchKernel"), 5);
    ck_assert_uint_eq(cusim_count("cuLaunchKernel_ptsz"), 1);
    free(p);
}
END_TEST

/* 16 one-byte copies into the same byte: which one lands last shows the order. */
static unsigned char kernel_order_once(void)
{
    CUstream s;
    CUdeviceptr d;
    unsigned char *h;
    struct cb_kparams *p = kp_new();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, 1));
    OK(cuMemAllocHost_v2((void **)&h, 16));
    for (int i = 0; i < 16; i++) {
        h[i] = (unsigned char)i;
        kp_add(p, d, DP(h + i), 1);
    }
    OK(klaunch(kfn[KFIRST], p, s));
    OK(cuStreamSynchronize(s));
    free(p);
    return *(unsigned char *)HP(d);
}

START_TEST(kernel_scrambled_order)
{
    CUstream s;
    CUdeviceptr x, y;
    void *h;
    struct cb_kparams *p = kp_new();
    setup();
    kload();
    ck_assert_int_eq(kernel_order_once(), 0); /* reverse (default): descriptor 0 lands last */
    /* a read-after-write inside one launch (what the hazard check must prevent) goes wrong */
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc_v2(&x, 256));
    OK(cuMemAlloc_v2(&y, 256));
    OK(cuMemAllocHost_v2(&h, 256));
    fill(h, 256, 1);
    kp_add(p, x, DP(h), 256);
    kp_add(p, y, x, 256);
    OK(klaunch(kfn[KFIRST], p, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(x), h, 256);
    ck_assert(all(HP(y), 256, 0));
    setenv("CUSIM_BATCH_ORDER", "forward", 1);
    cusim_reset_counts();
    ck_assert_int_eq(kernel_order_once(), 15);
    setenv("CUSIM_BATCH_ORDER", "shuffle", 1);
    setenv("CUSIM_SEED", "7", 1);
    cusim_reset_counts();
    unsigned char a = kernel_order_once(), b = kernel_order_once(), c = kernel_order_once();
    ck_assert(a != 0 || b != 0 || c != 0);
    ck_assert(a != 15 || b != 15 || c != 15);
    cusim_reset_counts(); /* same seed again: same sequence */
    ck_assert_int_eq(kernel_order_once(), a);
    ck_assert_int_eq(kernel_order_once(), b);
    ck_assert_int_eq(kernel_order_once(), c);
    setenv("CUSIM_SEED", "8", 1);
    cusim_reset_counts();
    unsigned char a8 = kernel_order_once(), b8 = kernel_order_once(), c8 = kernel_order_once();
    ck_assert(a8 != a || b8 != b || c8 != c);
    free(p);
}
END_TEST

START_TEST(kernel_tier_capacity)
{
    CUstream s;
    CUdeviceptr d;
    void *h;
    struct cb_kparams *p = kp_new();
    setup();
    kload();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, CB_KPARAMS_MAX + 1));
    OK(cuMemAllocHost_v2(&h, CB_KPARAMS_MAX + 1));
    fill(h, CB_KPARAMS_MAX + 1, 9);
    for (unsigned i = 0; i < CB_KPARAMS_MAX; i++) /* descriptor i: byte i */
        kp_add(p, d + i, DP(h) + i, 1);
    unsigned long copies = 0;
    for (int t = 0; t < KTIERS; t++) {
        OK(cuStreamSynchronize(s));
        memset(HP(d), 0, CB_KPARAMS_MAX + 1);
        /* one more than the tier holds: refused (the last tier: one more than the struct holds) */
        p->count = kcaps[t] + 1;
        ck_assert_int_eq(klaunch(kfn[t], p, s), CUDA_ERROR_INVALID_VALUE);
        ck_assert_uint_eq(cusim_pending(), 0);
        /* exactly full: every descriptor runs */
        p->count = kcaps[t];
        OK(klaunch(kfn[t], p, s));
        OK(cuStreamSynchronize(s));
        copies += kcaps[t];
        ck_assert_uint_eq(cusim_kernel_copies(), copies);
        ck_assert_mem_eq(HP(d), h, kcaps[t]);
        ck_assert(all((char *)HP(d) + kcaps[t], CB_KPARAMS_MAX + 1 - kcaps[t], 0));
        /* a smaller count goes to any tier whose capacity is >= count */
        p->count = 3;
        OK(klaunch(kfn[t], p, s));
        copies += 3;
    }
    p->count = 0; /* nothing to copy: accepted */
    OK(klaunch(kfn[KMAX], p, s));
    OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(cusim_kernel_copies(), copies);
    free(p);
}
END_TEST

START_TEST(kernel_launch_validation)
{
    CUstream s, dead;
    CUdeviceptr x, y;
    struct cb_kparams *p = kp_new();
    void *args[1] = { p }, *nullarg[1] = { NULL }, *extra[1] = { NULL };
    setup();
    kload();
    CUfunction f = kfn[KFIRST];
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamCreate(&dead, 0));
    OK(cuStreamDestroy_v2(dead));
    OK(cuMemAlloc_v2(&x, 64));
    OK(cuMemAlloc_v2(&y, 64));
    fill(HP(x), 64, 2);
    kp_add(p, y, x, 64);
#define LREJ(code, gx, gy, gz, bx, by, bz, sm, st, pa, ex) \
    ck_assert_int_eq(cuLaunchKernel(f, gx, gy, gz, bx, by, bz, sm, st, pa, ex), code)
    LREJ(CUDA_ERROR_INVALID_VALUE, 0, 1, 1, 256, 1, 1, 0, s, args, NULL);          /* empty grid */
    LREJ(CUDA_ERROR_INVALID_VALUE, 0x80000000u, 1, 1, 256, 1, 1, 0, s, args, NULL); /* grid x > 2^31-1 */
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 0, 1, 256, 1, 1, 0, s, args, NULL);
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 2, 1, 256, 1, 1, 0, s, args, NULL);          /* the kernel is 1-D */
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 1, 2, 256, 1, 1, 0, s, args, NULL);
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 1, 1, 0, 1, 1, 0, s, args, NULL);            /* empty block */
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 1, 1, 1025, 1, 1, 0, s, args, NULL);         /* > 1024 threads */
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 1, 1, 256, 2, 1, 0, s, args, NULL);
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 1, 1, 256, 1, 2, 0, s, args, NULL);
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 1, 1, 256, 1, 0, 0, s, args, NULL);
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 1, 1, 256, 1, 1, 16, s, args, NULL);         /* dynamic shared memory */
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 1, 1, 256, 1, 1, 0, s, NULL, NULL);          /* no kernelParams */
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 1, 1, 256, 1, 1, 0, s, nullarg, NULL);       /* kernelParams[0] NULL */
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 1, 1, 256, 1, 1, 0, s, args, extra);         /* extra */
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 1, 1, 256, 1, 1, 0, s, NULL, extra);
    p->flags = 1; /* reserved: 0 */
    LREJ(CUDA_ERROR_INVALID_VALUE, 1, 1, 1, 256, 1, 1, 0, s, args, NULL);
    p->flags = 0;
    LREJ(CUDA_ERROR_INVALID_HANDLE, 1, 1, 1, 256, 1, 1, 0, dead, args, NULL);
    LREJ(CUDA_ERROR_INVALID_HANDLE, 1, 1, 1, 256, 1, 1, 0, (CUstream)(uintptr_t)0x1234, args, NULL);
    OK(cuCtxSetCurrent(NULL));
    LREJ(CUDA_ERROR_INVALID_CONTEXT, 1, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    OK(cuCtxSetCurrent(ctx));
    ck_assert_int_eq(cuLaunchKernel_ptsz(f, 0, 1, 1, 256, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuLaunchKernel_ptsz(f, 1, 1, 1, 2048, 1, 1, 0, s, args, NULL), CUDA_ERROR_INVALID_VALUE);
#undef LREJ
    ck_assert_uint_eq(cusim_pending(), 0);
    ck_assert(all(HP(y), 64, 0));
    /* the limits themselves are fine */
    OK(cuLaunchKernel(f, 2147483647u, 1, 1, 1024, 1, 1, 0, s, args, NULL));
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(y), HP(x), 64);
    ck_assert_uint_eq(cusim_kernel_copies(), 2);
    free(p);
}
END_TEST

START_TEST(kernel_params_copied_at_launch)
{
    CUstream s;
    CUdeviceptr x, y, z;
    struct cb_kparams *p = kp_new();
    setup();
    kload();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 256));
    OK(cuMemAlloc_v2(&y, 256));
    OK(cuMemAlloc_v2(&z, 256));
    fill(HP(x), 256, 4);
    kp_add(p, y, x, 100);
    kp_add(p, y + 100, x + 100, 156);
    OK(klaunch(kfn[KFIRST], p, s));
    /* the library reuses its parameter block at once */
    memset(p, 0, sizeof *p);
    kp_add(p, z, x, 8);
    memset(p->c + 1, 0xff, 2 * sizeof p->c[0]);
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(y), HP(x), 256);
    ck_assert(all(HP(z), 256, 0));
    ck_assert_uint_eq(cusim_kernel_copies(), 2);
    ck_assert_uint_eq(cusim_errors(), 0);
    free(p);
}
END_TEST

START_TEST(kernel_reads_only_tier_bytes)
{
    CUstream s;
    CUdeviceptr x, y;
    long pg = sysconf(_SC_PAGESIZE);
    setup();
    kload();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 64));
    OK(cuMemAlloc_v2(&y, 64));
    fill(HP(x), 64, 6);
    /* each tier's parameter block ends right before inaccessible pages (more than a
     * struct cb_kparams of them) */
    size_t guard = ((sizeof(struct cb_kparams) + (size_t)pg - 1) / (size_t)pg + 1) * (size_t)pg;
    char *map = mmap(NULL, (size_t)pg * 9 + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(map != MAP_FAILED);
    ck_assert_int_eq(mprotect(map + 9 * pg, guard, PROT_NONE), 0);
    for (int t = 0; t < KTIERS; t++) {
        size_t bytes = CB_KPARAMS_BYTES(kcaps[t]);
        struct cb_kparams *p = (struct cb_kparams *)(void *)(map + 9 * pg - bytes);
        ck_assert_int_eq((int)((uintptr_t)p % 8), 0);
        memset(p, 0, bytes);
        for (unsigned i = 0; i < kcaps[t]; i++)
            kp_add(p, y + (i % 64), x + (i % 64), 1);
        OK(klaunch(kfn[t], p, s));
    }
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(y), HP(x), 64);
    munmap(map, (size_t)pg * 9 + guard);
}
END_TEST

START_TEST(kernel_reachable_memory)
{
    CUstream s;
    CUdeviceptr d, m;
    void *ph, *pha, *reg = aligned_alloc(4096, 8192);
    struct cb_kparams *p = kp_new();
    setup();
    kload();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, 1024));
    OK(cuMemAllocManaged(&m, 1024, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemAllocHost_v2(&ph, 1024));
    OK(cuMemHostAlloc(&pha, 1024, CU_MEMHOSTALLOC_PORTABLE));
    OK(cuMemHostRegister_v2(reg, 8192, 0));
    fill(ph, 1024, 1);
    /* whole ranges, up to the last byte of each allocation */
    kp_add(p, d, DP(ph), 1024);
    kp_add(p, m + 1000, DP(ph), 24);
    kp_add(p, DP(pha) + 1, DP(ph) + 1, 1023);
    kp_add(p, DP(reg) + 8192 - 512, DP(ph), 512);
    kp_add(p, DP(reg), DP(ph), 1);
    OK(klaunch(kfn[KFIRST], p, s));
    OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(cusim_errors(), 0);
    ck_assert_mem_eq(HP(d), ph, 1024);
    ck_assert_mem_eq(HP(m + 1000), ph, 24);
    ck_assert_mem_eq((char *)pha + 1, (char *)ph + 1, 1023);
    ck_assert_mem_eq((char *)reg + 8192 - 512, ph, 512);
    ck_assert_uint_eq(cusim_kernel_copies(), 5);
    OK(cuMemHostUnregister(reg));
    free(reg);
    free(p);
}
END_TEST

static CUresult cb_status = (CUresult)-1;
static void status_cb(CUstream h, CUresult st, void *ud)
{
    (void)h;
    (void)ud;
    cb_status = st;
}
static int host_ran;
static void host_mark(void *ud)
{
    (void)ud;
    host_ran++;
}

START_TEST(kernel_fault_sticky)
{
    CUstream s, o;
    CUevent e;
    CUdeviceptr x, y, z;
    CUcontext c2;
    unsigned char *pageable = malloc(64);
    struct cb_kparams *p = kp_new();
    setup();
    kload();
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamCreate(&o, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&e, 0));
    OK(cuMemAlloc_v2(&x, 64));
    OK(cuMemAlloc_v2(&y, 64));
    OK(cuMemAlloc_v2(&z, 64));
    fill(HP(x), 64, 7);
    fill(pageable, 64, 8);
    kp_add(p, y, x, 64);               /* fine */
    kp_add(p, z, DP(pageable), 64);    /* pageable source: an illegal address */
    OK(klaunch(kfn[KFIRST], p, s));      /* faults are asynchronous: the launch succeeds */
    OK(cuMemsetD8Async(z, 0x5A, 64, s));
    OK(cuStreamAddCallback(s, status_cb, NULL, 0));
    OK(cuLaunchHostFunc(s, host_mark, NULL));
    OK(cuEventRecord(e, s));
    ck_assert_uint_eq(cusim_errors(), 0);
    OK(cuStreamSynchronize(o)); /* does not run it */
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_uint_eq(cusim_errors(), 1);
    /* no copy of the launch happened, and the context's later device work did not run */
    ck_assert(all(HP(y), 64, 0) && all(HP(z), 64, 0));
    ck_assert_uint_eq(cusim_kernel_copies(), 0);
    ck_assert_int_eq(cb_status, CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(host_ran, 1);
    /* sticky: every synchronizing call of the context, and new work, fail */
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuStreamQuery(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuStreamSynchronize(o), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuStreamSynchronize(NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuStreamSynchronize_ptsz(NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuCtxSynchronize_v2(ctx), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuEventSynchronize(e), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuEventQuery(e), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuMemcpyDtoDAsync_v2(y, x, 64, o), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuMemcpyDtoD_v2(y, x, 64), CUDA_ERROR_ILLEGAL_ADDRESS);
    p->count = 1;
    ck_assert_int_eq(klaunch(kfn[KFIRST], p, o), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_uint_eq(cusim_pending(), 0);
    ck_assert(all(HP(y), 64, 0));
    ck_assert_uint_eq(cusim_errors(), 1);
    /* another context is not affected */
    OK(cuCtxCreate_v2(&c2, 0, 0));
    OK(cuCtxSynchronize());
    OK(cuStreamSynchronize(NULL));
    OK(cuCtxDestroy_v2(c2));
    /* a reset primary context starts clean */
    OK(cuDevicePrimaryCtxReset_v2(0));
    OK(cuDevicePrimaryCtxRetain(&c2, 0));
    OK(cuCtxSynchronize());
    OK(cuStreamSynchronize(NULL));
    free(pageable);
    free(p);
}
END_TEST

enum { F_PAGEABLE_DST, F_PAGEABLE_SRC, F_FREED, F_FREED_HOST, F_PAST_END, F_BEFORE, F_SPANS_TWO, F_OTHER_CTX,
       F_UNREGISTERED, F_WRAP, F_NCASES };

static const char *const fault_why[F_NCASES] = {
    "side=dst reason=unmapped", "side=src reason=unmapped", "side=src reason=freed", "side=dst reason=freed",
    "side=dst reason=range", "side=src reason=unmapped", "side=dst reason=range", "side=dst reason=other-context",
    "side=dst reason=unmapped", "side=dst reason=range",
};

/* In a fresh context: one launch whose descriptor 1 (of 3) is bad in way `how`; the log
 * (fd) gets its KERNEL_FAULT line. */
static void fault_case(int how, int logfd)
{
    CUcontext c, c2;
    CUstream s;
    CUdeviceptr a, b, other;
    void *ph;
    char *pg = malloc(256), *reg = aligned_alloc(4096, 4096);
    struct cb_kparams *p = kp_new();
    unsigned long err0 = cusim_errors();
    OK(cuCtxCreate_v2(&c, 0, 0));
    kload();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&a, 256));
    OK(cuMemAlloc_v2(&b, 256));
    OK(cuMemAllocHost_v2(&ph, 256));
    fill(HP(a), 256, 1);
    kp_add(p, b, a, 128);
    CUdeviceptr dst = b + 128, src = a + 128;
    size_t n = 128;
    switch (how) {
    case F_PAGEABLE_DST: dst = DP(pg); break;
    case F_PAGEABLE_SRC: src = DP(pg); break;
    case F_FREED: { /* freed device memory (quarantined) */
        CUdeviceptr f;
        OK(cuMemAlloc_v2(&f, 256));
        OK(cuMemFree_v2(f));
        src = f;
        break;
    }
    case F_FREED_HOST: {
        void *f;
        OK(cuMemAllocHost_v2(&f, 256));
        OK(cuMemFreeHost(f));
        dst = DP(f);
        break;
    }
    case F_PAST_END: dst = b + 129; break;      /* one byte past the allocation */
    case F_BEFORE: src = DP(ph) - 1; break;       /* one byte before pinned memory */
    case F_SPANS_TWO: n = 300; dst = b; src = DP(ph); break;
    case F_OTHER_CTX:                             /* device memory of another context */
        OK(cuCtxCreate_v2(&c2, 0, 0));
        OK(cuMemAlloc_v2(&other, 256));
        OK(cuCtxPopCurrent_v2(NULL));
        dst = other;
        break;
    case F_UNREGISTERED:                          /* registered, then unregistered */
        OK(cuMemHostRegister_v2(reg, 4096, 0));
        OK(cuMemHostUnregister(reg));
        dst = DP(reg);
        break;
    /* dst + n wraps around past 0 (a length stays below 2^62: copy_kernel.h's flag bits) */
    case F_WRAP: dst = (CUdeviceptr)0 - 64; break;
    }
    kp_add(p, dst, src, n);
    kp_add(p, DP(ph), a, 256);
    OK(klaunch(kfn[KFIRST], p, s));
    ck_assert_uint_eq(cusim_errors(), err0);
    ck_assert_msg(cuStreamSynchronize(s) == CUDA_ERROR_ILLEGAL_ADDRESS, "case %d: no fault", how);
    ck_assert_uint_eq(cusim_errors(), err0 + 1);
    ck_assert(all(HP(b), 256, 0) && all(ph, 256, 0));
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    OK(cuCtxDestroy_v2(c));
    char buf[8192], want[256];
    ssize_t got = read(logfd, buf, sizeof buf - 1);
    ck_assert_int_gt(got, 0);
    buf[got] = 0;
    snprintf(want, sizeof want, "KERNEL_FAULT ptr=%p n=%zu kernel=%s index=1 %s\n",
             HP(strstr(fault_why[how], "dst") ? dst : src), n, knames[KFIRST], fault_why[how]);
    ck_assert_msg(strstr(buf, want) != NULL, "case %d, log:\n%s\nwant: %s", how, buf, want);
    free(pg);
    free(reg);
    free(p);
}

START_TEST(kernel_fault_kinds)
{
    char path[] = "/tmp/cusim-kfaultXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    setenv("CUSIM_LOG", path, 1);
    setup();
    for (int how = 0; how < F_NCASES; how++)
        fault_case(how, fd);
    close(fd);
    unlink(path);
    ck_assert_uint_eq(cusim_errors(), F_NCASES);
    ck_assert_uint_eq(cusim_kernel_copies(), 0);
    OK(cuCtxSynchronize()); /* the primary context never faulted */
}
END_TEST

START_TEST(kernel_fault_at_execution_time)
{
    CUstream a, b;
    CUdeviceptr d, x;
    struct cb_kparams *p = kp_new();
    setup();
    kload();
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc_v2(&x, 64));
    /* memory valid at launch, freed (stream-ordered, unordered with the launch) before it runs */
    OK(cuMemAllocAsync(&d, 64, b));
    kp_add(p, d, x, 64);
    OK(klaunch(kfn[KFIRST], p, a));
    OK(cuMemFreeAsync(d, b));
    OK(cuStreamSynchronize(b));
    ck_assert_uint_eq(cusim_errors(), 0);
    ck_assert_int_eq(cuStreamSynchronize(a), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_uint_eq(cusim_errors(), 1);
    free(p);
}
END_TEST

START_TEST(kernel_registered_default)
{
    CUstream s;
    CUdeviceptr d, dp;
    void *ph;
    char *reg = aligned_alloc(4096, 4096);
    int can = -1;
    struct cb_kparams *p = kp_new();
    setup();
    kload();
    OK(cuDeviceGetAttribute(&can, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 0));
    ck_assert_int_eq(can, 1);
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, 4096));
    OK(cuMemAllocHost_v2(&ph, 64));
    OK(cuMemHostRegister_v2(reg, 4096, 0));
    OK(cuMemHostGetDevicePointer_v2(&dp, reg + 10, 0));
    ck_assert(dp == DP(reg) + 10);
    OK(cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, DP(reg) + 5));
    ck_assert(dp == DP(reg) + 5);
    OK(cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, DP(ph) + 3));
    ck_assert(dp == DP(ph) + 3);
    OK(cuMemHostGetDevicePointer_v2(&dp, ph, 0));
    ck_assert(dp == DP(ph));
    fill(reg, 4096, 3);
    kp_add(p, d, DP(reg), 4096); /* the host address is the device address */
    OK(klaunch(kfn[KFIRST], p, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(d), reg, 4096);
    OK(cuMemHostUnregister(reg));
    free(reg);
    free(p);
}
END_TEST

START_TEST(kernel_registered_alias)
{
    CUstream s;
    CUdeviceptr d, dp, dp2, start;
    CUcontext c2;
    void *ph, *hp;
    char *reg = aligned_alloc(4096, 4096);
    int can = -1;
    unsigned int type = 0;
    struct cb_kparams *p = kp_new();
    setenv("CUSIM_REGISTERED_ALIAS", "1", 1);
    setup();
    kload();
    CUfunction fprim = kfn[KFIRST];
    OK(cuDeviceGetAttribute(&can, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 0));
    ck_assert_int_eq(can, 0);
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&d, 4096));
    OK(cuMemAllocHost_v2(&ph, 4096));
    OK(cuMemHostRegister_v2(reg, 4096, 0));
    /* the device address differs, and every query agrees on it */
    OK(cuMemHostGetDevicePointer_v2(&dp, reg, 0));
    ck_assert(dp != DP(reg));
    OK(cuMemHostGetDevicePointer_v2(&dp2, reg + 100, 0));
    ck_assert(dp2 == dp + 100);
    OK(cuPointerGetAttribute(&dp2, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, DP(reg) + 7));
    ck_assert(dp2 == dp + 7);
    CUpointer_attribute at[2] = { CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_MEMORY_TYPE };
    void *data[2] = { &dp2, &type };
    OK(cuPointerGetAttributes(2, at, data, DP(reg)));
    ck_assert(dp2 == dp);
    ck_assert_uint_eq(type, CU_MEMORYTYPE_HOST);
    /* asked through the device address: the same allocation, seen from the device side */
    OK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, dp + 9));
    ck_assert_ptr_eq(hp, reg + 9);
    OK(cuPointerGetAttribute(&dp2, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, dp + 9));
    ck_assert(dp2 == dp + 9);
    OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dp + 9));
    ck_assert(start == dp);
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dp));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_HOST);
    /* pinned memory keeps its own address */
    OK(cuPointerGetAttribute(&dp2, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, DP(ph) + 1));
    ck_assert(dp2 == DP(ph) + 1);
    OK(cuMemHostGetDevicePointer_v2(&dp2, ph, 0));
    ck_assert(dp2 == DP(ph));
    /* the kernel reaches registered memory through the alias, pinned memory directly */
    fill(reg, 4096, 5);
    kp_add(p, d, dp, 2048);
    kp_add(p, dp + 2048, DP(ph), 2048); /* writes land in the host memory */
    OK(klaunch(kfn[KFIRST], p, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(d), reg, 2048);
    ck_assert(all(reg + 2048, 2048, 0));
    ck_assert_uint_eq(cusim_kernel_copies(), 2);
    /* copies take the alias too */
    OK(cuMemcpyAsync(d + 2048, dp + 100, 100, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(d + 2048), reg + 100, 100);
    ck_assert_uint_eq(cusim_errors(), 0);
    /* the host address of registered memory faults (in a context of its own) */
    char *reg2 = aligned_alloc(4096, 4096);
    CUdeviceptr d2;
    OK(cuCtxCreate_v2(&c2, 0, 0));
    kload();
    OK(cuMemAlloc_v2(&d2, 64));
    OK(cuMemHostRegister_v2(reg2, 4096, 0));
    p->count = 0;
    kp_add(p, d2, DP(reg2), 64);
    OK(klaunch(kfn[KFIRST], p, NULL));
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_uint_eq(cusim_errors(), 1);
    OK(cuMemHostUnregister(reg2));
    OK(cuCtxDestroy_v2(c2));
    /* after the unregister, the alias faults */
    OK(cuCtxCreate_v2(&c2, 0, 0));
    kload();
    OK(cuMemAlloc_v2(&d2, 64));
    OK(cuMemHostRegister_v2(reg2, 4096, 0));
    OK(cuMemHostGetDevicePointer_v2(&dp2, reg2, 0));
    OK(cuMemHostUnregister(reg2));
    p->count = 0;
    kp_add(p, d2, dp2, 64);
    OK(klaunch(kfn[KFIRST], p, NULL));
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_uint_eq(cusim_errors(), 2);
    OK(cuCtxDestroy_v2(c2));
    /* the alias past the end of the registration faults */
    p->count = 0;
    kp_add(p, d, dp + 4000, 97);
    OK(klaunch(fprim, p, s));
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_uint_eq(cusim_errors(), 3);
    OK(cuMemHostUnregister(reg));
    free(reg);
    free(reg2);
    free(p);
}
END_TEST

START_TEST(kernel_capture_replay)
{
    CUstream s;
    CUdeviceptr x, y, f;
    void *h;
    CUgraph g;
    CUgraphExec ge, ge2;
    CUstreamCaptureStatus st;
    struct cb_kparams *p = kp_new();
    setup();
    kload();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 256));
    OK(cuMemAlloc_v2(&y, 256));
    OK(cuMemAllocHost_v2(&h, 256));
    kp_add(p, x, DP(h), 256);
    kp_add(p, y + 128, x, 128); /* read-after-write inside the launch: order shows */
    kp_add(p, y, DP(h), 128);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(klaunch(kfn[KFIRST], p, s));
    memset(p, 0, sizeof *p); /* captured at the call */
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuStreamEndCapture(s, &g));
    ck_assert_uint_eq(cusim_pending(), 0);
    ck_assert(all(HP(x), 256, 0) && all(HP(y), 256, 0));
    OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    OK(cuGraphDestroy(g)); /* the executable graph keeps its own descriptors */
    fill(h, 256, 20);
    OK(cuGraphLaunch(ge, s));
    ck_assert(all(HP(x), 256, 0));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(x), h, 256);
    ck_assert_mem_eq(HP(y), h, 128);
    ck_assert(all(HP(y + 128), 128, 0)); /* reverse: descriptor 1 ran before descriptor 0 */
    ck_assert_uint_eq(cusim_kernel_copies(), 3);
    unsigned char old[128];
    memcpy(old, HP(x), 128);
    fill(h, 256, 40);
    OK(cuGraphLaunch(ge, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(x), h, 256);
    ck_assert_mem_eq(HP(y + 128), old, 128); /* again the x of before the launch */
    ck_assert_uint_eq(cusim_kernel_copies(), 6);
    /* launching the graph into another capture copies the kernel op again */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuGraphLaunch(ge, s));
    OK(cuStreamEndCapture(s, &g));
    OK(cuGraphExecDestroy(ge));
    OK(cuGraphInstantiateWithFlags(&ge2, g, 0));
    OK(cuGraphDestroy(g));
    fill(h, 256, 60);
    OK(cuGraphLaunch(ge2, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(x), h, 256);
    ck_assert_uint_eq(cusim_kernel_copies(), 9);
    /* legacy-stream launch while a blocking stream captures: invalidates it */
    p->count = 0;
    kp_add(p, y, x, 16);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ck_assert_int_eq(klaunch(kfn[KFIRST], p, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* a replay that touches memory freed since the capture faults when it runs */
    OK(cuMemAlloc_v2(&f, 64));
    p->count = 0;
    kp_add(p, f, x, 64);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(klaunch(kfn[KFIRST], p, s));
    OK(cuStreamEndCapture(s, &g));
    OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    OK(cuMemFree_v2(f));
    OK(cuGraphLaunch(ge, s));
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_uint_eq(cusim_errors(), 1);
    OK(cuGraphExecDestroy(ge2));
    free(p);
}
END_TEST

START_TEST(kernel_log_format)
{
    char path[] = "/tmp/cusim-klogXXXXXX", buf[16384], want[512];
    int fd = mkstemp(path);
    CUstream s;
    CUdeviceptr x, y;
    char *pageable = malloc(64);
    struct cb_kparams *p = kp_new();
    ck_assert_int_ge(fd, 0);
    setenv("CUSIM_LOG", path, 1);
    setenv("CUSIM_BATCH_ORDER", "shuffle", 1);
    setup();
    kload();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 64));
    OK(cuMemAlloc_v2(&y, 64));
    kp_add(p, y, x, 64);
    kp_add(p, x, y, 0);
    void *args[1] = { p };
    OK(cuLaunchKernel(kfn[KSECOND], 3, 1, 1, 128, 1, 1, 0, s, args, NULL));
    OK(cuLaunchKernel_ptsz(kfn[KMAX], 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
    ck_assert_int_eq(cuLaunchKernel(kfn[KFIRST], 0, 1, 1, 64, 1, 1, 0, s, args, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL), CUDA_ERROR_NOT_SUPPORTED);
    p->count = 1;
    p->c[0].src = DP(pageable);
    OK(cuLaunchKernel(kfn[KFIRST], 1, 1, 1, 256, 1, 1, 0, s, args, NULL));
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    ck_assert_int_gt(n, 0);
    buf[n] = 0;
    snprintf(want, sizeof want, "cuLaunchKernel rc=0 stream=%p kernel=%s count=2 grid=3 block=128 order=shuffle\n",
             (void *)s, knames[KSECOND]);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    snprintf(want, sizeof want, "cuLaunchKernel_ptsz rc=0 stream=0x0 kernel=%s count=2 grid=1 block=64 order=shuffle\n",
             knames[KMAX]);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    ck_assert_ptr_nonnull(strstr(buf, "cuLaunchKernel rc=1 stream="));
    snprintf(want, sizeof want, "kernel=%s count=2 grid=0 block=64", knames[KFIRST]);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    snprintf(want, sizeof want, "cuLaunchKernel rc=801 stream=%p\n", (void *)s);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    snprintf(want, sizeof want, "KERNEL_FAULT ptr=%p n=64 kernel=%s index=0 side=src", pageable, knames[KFIRST]);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    ck_assert_ptr_nonnull(strstr(buf, "cuModuleLoadData rc=0 stream=- module="));
    ck_assert_ptr_nonnull(strstr(buf, "cuModuleGetFunction rc=0 stream=- module="));
    ck_assert_ptr_nonnull(strstr(buf, "cuStreamSynchronize rc=700 stream="));
    close(fd);
    unlink(path);
    free(pageable);
    free(p);
}
END_TEST

/* A 2D pair (copy_kernel.h): {dst, src, w | CB_KROWS}, {dst pitch, src pitch, h | CB_KROWS_TAIL}. */
static void kp_add2d(struct cb_kparams *p, CUdeviceptr dst, size_t dp, CUdeviceptr src, size_t sp, size_t w, size_t h)
{
    kp_add(p, dst, src, w);
    p->c[p->count - 1].bytes |= CB_KROWS;
    kp_add(p, dp, sp, h);
    p->c[p->count - 1].bytes |= CB_KROWS_TAIL;
}

/* One launch mixing 1D descriptors and 2D pairs (of every direction, zero ones, one row
 * wider than its pitches); run as launched and as a graph replays it, in each order.  The
 * bytes between and around the rows stay untouched. */
static void kernel_2d_mixed_run(const char *order)
{
    CUstream s;
    CUdeviceptr x, y, z;
    unsigned char *h, *back, wx[4096], wy[4096], wb[1024];
    struct cb_kparams *p = kp_new();
    setenv("CUSIM_BATCH_ORDER", order, 1);
    setup();
    kload();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 4096));
    OK(cuMemAlloc_v2(&y, 4096));
    OK(cuMemAlloc_v2(&z, 4096));
    OK(cuMemAllocHost_v2((void **)&h, 4096));
    OK(cuMemAllocHost_v2((void **)&back, 1024));
    fill(h, 4096, 5);
    fill(HP(z), 4096, 6);
    kp_add(p, x, DP(h), 100);                                /* 1D */
    kp_add2d(p, x + 1024, 64, DP(h) + 200, 40, 33, 7);       /* host to device, pitches differ */
    kp_add(p, y, DP(h) + 300, 50);                           /* 1D */
    kp_add2d(p, y + 1024 + 5, 100, z + 3, 64, 60, 9);        /* device to device, offsets */
    kp_add2d(p, DP(back), 48, z + 2048, 64, 48, 6);          /* device to host */
    kp_add2d(p, x + 3000, 16, z, 16, 0, 5);                  /* zero width: nothing */
    kp_add2d(p, x + 3000, 16, z, 16, 16, 0);                 /* zero height: nothing */
    kp_add2d(p, y + 3000, 0, z + 100, 0, 70, 1);             /* one row: pitches do not matter */
    kp_add(p, x + 3500, z, 0);                               /* 1D, 0 bytes */
    ck_assert_uint_eq(p->count, 15);
    ck_assert_int_eq(klaunch(kfn[KFIRST], p, s), CUDA_ERROR_INVALID_VALUE); /* a plain tier takes no pair */
    ck_assert_uint_eq(cusim_errors(), 1);
    cusim_reset_counts();
    memset(wx, 0, sizeof wx);
    memcpy(wx, h, 100);
    for (int r = 0; r < 7; r++)
        memcpy(wx + 1024 + r * 64, h + 200 + r * 40, 33);
    memset(wy, 0, sizeof wy);
    memcpy(wy, h + 300, 50);
    for (int r = 0; r < 9; r++)
        memcpy(wy + 1024 + 5 + r * 100, (unsigned char *)HP(z) + 3 + r * 64, 60);
    memcpy(wy + 3000, (unsigned char *)HP(z) + 100, 70);
    want2d(wb, 1024, 0, 48, (unsigned char *)HP(z) + 2048, 64, 48, 6);
    /* as launched */
    OK(klaunch(kfn_rows[KFIRST], p, s));
    ck_assert_uint_eq(cusim_pending(), 1);
    ck_assert(all(HP(x), 4096, 0));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(x), wx, 4096);
    ck_assert_mem_eq(HP(y), wy, 4096);
    ck_assert_mem_eq(back, wb, 1024);
    ck_assert_uint_eq(cusim_kernel_copies(), 15); /* descriptors: both slots of each pair */
    ck_assert_uint_eq(cusim_errors(), 0);
    /* captured, then replayed */
    CUgraph g;
    CUgraphExec ge;
    memset(HP(x), 0, 4096);
    memset(HP(y), 0, 4096);
    memset(back, 0, 1024);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(klaunch(kfn_rows[KSECOND], p, s));
    OK(cuStreamEndCapture(s, &g));
    memset(p, 0, sizeof *p); /* captured at the call */
    OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    ck_assert(all(HP(x), 4096, 0));
    OK(cuGraphLaunch(ge, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(x), wx, 4096);
    ck_assert_mem_eq(HP(y), wy, 4096);
    ck_assert_mem_eq(back, wb, 1024);
    ck_assert_uint_eq(cusim_kernel_copies(), 30);
    ck_assert_uint_eq(cusim_errors(), 0);
    free(p);
}

START_TEST(kernel_2d_mixed)
{
    kernel_2d_mixed_run("reverse");
    kernel_2d_mixed_run("forward");
    kernel_2d_mixed_run("shuffle");
}
END_TEST

/* Malformed 2D pairs: the launch is refused (CUDA_ERROR_INVALID_VALUE), nothing is enqueued
 * or captured, the misuse is counted (cusim_errors) and logged. */
START_TEST(kernel_2d_malformed)
{
    char path[] = "/tmp/cusim-k2dXXXXXX", buf[16384], want[256];
    int fd = mkstemp(path);
    CUstream s;
    CUdeviceptr x, y;
    CUstreamCaptureStatus st;
    struct cb_kparams *p = kp_new();
    ck_assert_int_ge(fd, 0);
    setenv("CUSIM_LOG", path, 1);
    setup();
    kload();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 1024));
    OK(cuMemAlloc_v2(&y, 1024));
    fill(HP(x), 1024, 2);
    static const struct { int index; const char *why; } cases[] = {
        { 1, "no-tail" },      /* a head in the last slot */
        { 0, "no-tail" },      /* a head, then a 1D descriptor */
        { 0, "no-tail" },      /* a head, then a whole pair */
        { 0, "stray-tail" },   /* a tail first */
        { 2, "stray-tail" },   /* a tail after a whole pair */
        { 0, "stray-tail" },   /* a slot that is both */
        { 0, "no-tail" },      /* a head whose next slot is both */
        { 0, "rows-overlap" }, /* width above the destination pitch, 2 rows */
        { 2, "rows-overlap" }, /* width above the source pitch, after a whole pair */
        { 0, "stray-tail" },   /* a 1D length of 2^62 */
    };
    for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
        p->count = 0;
        switch (k) {
        case 0: kp_add(p, y, x, 8); kp_add(p, y + 8, x, 8); p->c[1].bytes |= CB_KROWS; break;
        case 1: kp_add(p, y, x, 8); p->c[0].bytes |= CB_KROWS; kp_add(p, y + 8, x, 8); break;
        case 2: kp_add(p, y, x, 8); p->c[0].bytes |= CB_KROWS; kp_add2d(p, y + 100, 16, x, 16, 8, 2); break;
        case 3: kp_add(p, 16, 16, 2); p->c[0].bytes |= CB_KROWS_TAIL; kp_add(p, y, x, 8); break;
        case 4: kp_add2d(p, y, 16, x, 16, 8, 2); kp_add(p, 16, 16, 2); p->c[2].bytes |= CB_KROWS_TAIL; break;
        case 5: kp_add2d(p, y, 16, x, 16, 8, 2); p->c[0].bytes |= CB_KROWS_TAIL; break;
        case 6: kp_add2d(p, y, 16, x, 16, 8, 2); p->c[1].bytes |= CB_KROWS; break;
        case 7: kp_add2d(p, y, 64, x, 128, 65, 2); break;
        case 8: kp_add2d(p, y, 16, x, 16, 8, 2); kp_add2d(p, y + 512, 128, x, 64, 65, 2); break;
        case 9: kp_add(p, y, x, (size_t)1 << 62); break;
        }
        unsigned long err = cusim_errors();
        ck_assert_msg(klaunch(kfn_rows[KFIRST], p, s) == CUDA_ERROR_INVALID_VALUE, "case %d accepted", k);
        ck_assert_uint_eq(cusim_errors(), err + 1);
        ck_assert_uint_eq(cusim_pending(), 0);
        /* the same on a capturing stream: refused, nothing captured, the capture still valid */
        OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        ck_assert_int_eq(klaunch(kfn_rows[KFIRST], p, s), CUDA_ERROR_INVALID_VALUE);
        OK(cuStreamIsCapturing(s, &st));
        ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
        CUgraph g;
        CUgraphExec ge;
        OK(cuStreamEndCapture(s, &g));
        OK(cuGraphInstantiateWithFlags(&ge, g, 0));
        OK(cuGraphLaunch(ge, s));
        OK(cuStreamSynchronize(s));
        OK(cuGraphExecDestroy(ge));
        OK(cuGraphDestroy(g));
        ck_assert_uint_eq(cusim_kernel_copies(), 0);
        ck_assert(all(HP(y), 1024, 0));
    }
    /* a plain tier takes no flagged slot at all, even a well-formed pair (a GPU would read
     * the flags as a length) */
    p->count = 0;
    kp_add(p, y + 512, x, 8);
    kp_add2d(p, y, 64, x, 128, 64, 2);
    ck_assert_int_eq(klaunch(kfn[KSECOND], p, s), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(klaunch_ptsz(kfn[KMAX], p, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(cusim_pending(), 0);
    /* a well-formed pair after all that, on a _rows twin: runs */
    OK(klaunch(kfn_rows[KMAX], p, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(y), HP(x), 64);
    ck_assert_mem_eq((char *)HP(y) + 64, (char *)HP(x) + 128, 64);
    ck_assert_mem_eq((char *)HP(y) + 512, HP(x), 8);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    ck_assert_int_gt(n, 0);
    buf[n] = 0;
    for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
        snprintf(want, sizeof want, "KERNEL_BAD_PARAMS kernel=%s index=%d reason=%s\n", ktiers_rows[KFIRST].name,
                 cases[k].index, cases[k].why);
        ck_assert_msg(strstr(buf, want) != NULL, "case %d, log:\n%s\nwant: %s", k, buf, want);
        snprintf(want, sizeof want, "malformed=%d reason=%s\n", cases[k].index, cases[k].why);
        ck_assert_msg(strstr(buf, want) != NULL, "case %d, log:\n%s\nwant: %s", k, buf, want);
    }
    snprintf(want, sizeof want, "KERNEL_BAD_PARAMS kernel=%s index=1 reason=not-rows-kernel\n", knames[KSECOND]);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    snprintf(want, sizeof want, "kernel=%s count=3 grid=4 block=256 order=reverse malformed=1 reason=not-rows-kernel\n",
             knames[KMAX]);
    ck_assert_msg(strstr(buf, want) != NULL, "log:\n%s\nwant: %s", buf, want);
    ck_assert_uint_eq(cusim_errors(), sizeof cases / sizeof cases[0] * 2 + 2);
    close(fd);
    unlink(path);
    free(p);
}
END_TEST

/* A 2D pair with a row outside reachable memory faults as a bad 1D descriptor does: when the
 * launch runs, no copy of it happens, one KERNEL_FAULT line (with the row), the sticky 700. */
static void kernel_2d_fault_case(int how, int logfd)
{
    CUcontext c;
    CUstream s;
    CUdeviceptr a, b, o;
    char *pg = malloc(1024);
    struct cb_kparams *p = kp_new();
    unsigned long err0 = cusim_errors();
    OK(cuCtxCreate_v2(&c, 0, 0));
    kload();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&a, 256));
    OK(cuMemAlloc_v2(&b, 256));
    OK(cuMemAlloc_v2(&o, 256));
    fill(HP(a), 256, 1);
    kp_add(p, o, a, 56); /* fine */
    CUdeviceptr bad = 0;
    const char *why = NULL;
    unsigned row = 0;
    switch (how) {
    case 0: /* the last row runs one byte past the destination's end */
        kp_add2d(p, b + 1, 64, a, 64, 64, 4);
        bad = b + 1 + 3 * 64, why = "side=dst reason=range", row = 3;
        break;
    case 1: /* a source in pageable memory */
        kp_add2d(p, b, 64, DP(pg), 64, 32, 3);
        bad = DP(pg), why = "side=src reason=unmapped", row = 0;
        break;
    case 2: /* the second row's address wraps around */
        kp_add2d(p, b, (size_t)0 - 16, a, 64, 8, 2);
        bad = b, why = "side=dst reason=range", row = 1;
        break;
    case 3: /* the source's last row runs past its allocation */
        kp_add2d(p, b, 16, a + 100, 75, 10, 3);
        bad = a + 100 + 2 * 75, why = "side=src reason=range", row = 2;
        break;
    }
    OK(klaunch(kfn_rows[KFIRST], p, s));
    ck_assert_uint_eq(cusim_errors(), err0);
    ck_assert_msg(cuStreamSynchronize(s) == CUDA_ERROR_ILLEGAL_ADDRESS, "case %d: no fault", how);
    ck_assert_uint_eq(cusim_errors(), err0 + 1);
    ck_assert(all(HP(b), 256, 0) && all(HP(o), 256, 0));
    ck_assert_uint_eq(cusim_kernel_copies(), 0);
    CUDA_MEMCPY2D m = m2d(T_DEV, HP(b), 64, T_DEV, HP(a), 64, 8, 2);
    ck_assert_int_eq(cuMemcpy2DAsync_v2(&m, s), CUDA_ERROR_ILLEGAL_ADDRESS);
    OK(cuCtxDestroy_v2(c));
    char buf[8192], want[256];
    ssize_t got = read(logfd, buf, sizeof buf - 1);
    ck_assert_int_gt(got, 0);
    buf[got] = 0;
    snprintf(want, sizeof want, "KERNEL_FAULT ptr=%p n=%llu kernel=%s index=1 %s row=%u\n", HP(bad),
             (unsigned long long)(p->c[1].bytes & CB_KLEN_MASK), ktiers_rows[KFIRST].name, why, row);
    ck_assert_msg(strstr(buf, want) != NULL, "case %d, log:\n%s\nwant: %s", how, buf, want);
    free(pg);
    free(p);
}

START_TEST(kernel_2d_faults)
{
    char path[] = "/tmp/cusim-k2dfXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    setenv("CUSIM_LOG", path, 1);
    setup();
    for (int how = 0; how < 4; how++)
        kernel_2d_fault_case(how, fd);
    close(fd);
    unlink(path);
}
END_TEST

/* ------------------------------------------------------------ two devices (CUSIM_DEVICES=2) */

static CUcontext ctx1;

/* Both devices' primary contexts retained; device 0's current. */
static void setup2(void)
{
    setenv("CUSIM_DEVICES", "2", 1);
    setup();
    OK(cuDevicePrimaryCtxRetain(&ctx1, 1));
}

START_TEST(two_devices_contexts_and_streams)
{
    CUcontext again, c;
    CUdevice dev;
    CUstream s0, s1;
    unsigned long long id0, id1;
    setup2();
    int n;
    OK(cuDeviceGetCount(&n));
    ck_assert_int_eq(n, 2);
    /* one primary context per device, the same on every retain */
    ck_assert_ptr_ne(ctx, ctx1);
    OK(cuDevicePrimaryCtxRetain(&again, 1));
    ck_assert_ptr_eq(again, ctx1);
    OK(cuDevicePrimaryCtxRelease_v2(1));
    OK(cuCtxGetDevice_v2(&dev, ctx1));
    ck_assert_int_eq(dev, 1);
    /* streams are their context's, and the current one follows cuCtxSetCurrent */
    OK(cuStreamCreate(&s0, 0));
    OK(cuCtxSetCurrent(ctx1));
    OK(cuCtxGetDevice(&dev));
    ck_assert_int_eq(dev, 1);
    OK(cuStreamCreate(&s1, 0));
    OK(cuStreamGetCtx(s1, &c));
    ck_assert_ptr_eq(c, ctx1);
    OK(cuStreamGetDevice(s1, &dev));
    ck_assert_int_eq(dev, 1);
    OK(cuStreamGetDevice(s0, &dev));
    ck_assert_int_eq(dev, 0);
    /* an event is recorded only on its own context's streams (a wait may cross) */
    CUevent e0, e1;
    OK(cuEventCreate(&e1, 0));
    OK(cuCtxSetCurrent(ctx));
    OK(cuEventCreate(&e0, 0));
    ck_assert_int_eq(cuEventRecord(e1, s0), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuEventRecord(e1, NULL), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuCtxRecordEvent(ctx, e1), CUDA_ERROR_INVALID_HANDLE);
    OK(cuEventRecord(e0, s0));
    OK(cuStreamWaitEvent(s1, e0, 0));
    OK(cuCtxSetCurrent(ctx1));
    ck_assert_int_eq(cuEventRecord(e0, s1), CUDA_ERROR_INVALID_HANDLE);
    OK(cuEventRecord(e1, s1));
    OK(cuStreamWaitEvent(s0, e1, 0));
    OK(cuStreamSynchronize(s0));
    /* a per-thread stream per (thread, context) */
    OK(cuStreamGetId_ptsz(NULL, &id1));
    OK(cuCtxSetCurrent(ctx));
    OK(cuStreamGetId_ptsz(NULL, &id0));
    ck_assert_uint_ne(id0, id1);
    /* each context its own legacy stream: device 1's legacy work and context
     * synchronize wait for nothing of device 0 (blocking stream, legacy stream) */
    CUdeviceptr d0, d1;
    unsigned char h0[64], h1[64], *pin;
    OK(cuMemAllocHost_v2((void **)&pin, 256));
    fill(pin, 256, 3);
    OK(cuMemAlloc_v2(&d0, 128));
    OK(cuMemcpyHtoDAsync_v2(d0, pin, 64, s0));
    OK(cuMemcpyHtoDAsync_v2(d0 + 64, pin + 64, 64, NULL));
    OK(cuCtxSetCurrent(ctx1));
    OK(cuMemAlloc_v2(&d1, 64));
    OK(cuMemcpyHtoDAsync_v2(d1, pin + 128, 64, NULL));
    OK(cuStreamSynchronize(NULL));
    ck_assert_mem_eq(HP(d1), pin + 128, 64);
    ck_assert_uint_eq(cusim_pending(), 2);
    OK(cuCtxSynchronize());
    ck_assert_uint_eq(cusim_pending(), 2);
    OK(cuCtxSetCurrent(ctx));
    OK(cuCtxSynchronize());
    ck_assert_uint_eq(cusim_pending(), 0);
    OK(cuMemcpyDtoH_v2(h0, d0, 64));
    OK(cuMemcpyDtoH_v2(h1, d0 + 64, 64));
    ck_assert_mem_eq(h0, pin, 64);
    ck_assert_mem_eq(h1, pin + 64, 64);
    OK(cuMemFreeHost(pin));
}
END_TEST

START_TEST(two_devices_memory)
{
    CUdeviceptr d0, d1;
    int ord = -1;
    CUcontext owner = NULL;
    void *pin1;
    char *reg = aligned_alloc(4096, 4096);
    setup2();
    OK(cuMemAlloc_v2(&d0, 256));
    OK(cuCtxSetCurrent(ctx1));
    OK(cuMemAlloc_v2(&d1, 256));
    OK(cuMemAllocHost_v2(&pin1, 256));
    OK(cuMemHostRegister_v2(reg, 4096, 0));
    OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d1));
    ck_assert_int_eq(ord, 1);
    OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d1));
    ck_assert_ptr_eq(owner, ctx1);
    OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d0));
    ck_assert_int_eq(ord, 0);
    /* the end of device 1's primary context takes its memory with it (pending work
     * runs first); device 0's stays */
    OK(cuMemsetD8Async(d1, 0x5a, 256, NULL));
    OK(cuCtxSetCurrent(ctx));
    OK(cuDevicePrimaryCtxReset_v2(1));
    unsigned type = 0;
    ck_assert_int_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d1), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, DP(pin1)),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, DP(reg)), CUDA_ERROR_INVALID_VALUE);
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d0));
    ck_assert_uint_eq(cusim_errors(), 0);
    /* a late use of device 1's memory is detected, not performed */
    ck_assert_int_eq(cuMemcpyDtoDAsync_v2(d0, d1, 64, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(cusim_errors(), 1);
    /* registered memory is the program's: unregistered, not freed (registrable again) */
    reg[0] = 1;
    OK(cuMemHostRegister_v2(reg, 4096, 0));
    OK(cuMemHostUnregister(reg));
    free(reg);
}
END_TEST

START_TEST(two_devices_peer_copies)
{
    CUdeviceptr d0, d1;
    CUstream s0;
    CUcontext dead;
    unsigned char h[64], *pin;
    int can = 0;
    setup2();
    OK(cuDeviceCanAccessPeer(&can, 0, 1));
    ck_assert_int_eq(can, 1);
    OK(cuMemAllocHost_v2((void **)&pin, 64));
    fill(pin, 64, 9);
    OK(cuMemAlloc_v2(&d0, 64));
    OK(cuMemcpyHtoD_v2(d0, pin, 64));
    OK(cuStreamCreate(&s0, 0));
    OK(cuCtxSetCurrent(ctx1));
    OK(cuMemAlloc_v2(&d1, 128));
    OK(cuCtxSetCurrent(ctx));
    /* deferred on the stream named, like any copy */
    OK(cuMemcpyPeerAsync(d1, ctx1, d0, ctx, 64, s0));
    ck_assert(all(HP(d1), 64, 0));
    OK(cuStreamSynchronize(s0));
    ck_assert_mem_eq(HP(d1), pin, 64);
    /* unified addresses: a device-to-device copy between the devices works too */
    OK(cuMemcpyDtoDAsync_v2(d1 + 64, d0, 64, s0));
    OK(cuStreamSynchronize(s0));
    ck_assert_mem_eq(HP(d1 + 64), pin, 64);
    /* each side's context must be live, and its device the memory's */
    ck_assert_int_eq(cuMemcpyPeerAsync(d1, ctx, d0, ctx1, 64, s0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemcpyPeerAsync(d1, NULL, d0, ctx, 64, s0), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuMemcpyPeer(d1, ctx1, d0, (CUcontext)(uintptr_t)0x1234, 64), CUDA_ERROR_INVALID_CONTEXT);
    OK(cuCtxCreate_v2(&dead, 0, 1));
    OK(cuCtxDestroy_v2(dead));
    OK(cuCtxSetCurrent(ctx));
    ck_assert_int_eq(cuMemcpyPeerAsync(d1, dead, d0, ctx, 64, s0), CUDA_ERROR_INVALID_CONTEXT);
    /* the synchronous one */
    OK(cuMemcpyPeer(d0, ctx, d1 + 64, ctx1, 64));
    OK(cuMemcpyDtoH_v2(h, d0, 64));
    ck_assert_mem_eq(h, pin, 64);
    ck_assert_uint_eq(cusim_errors(), 0);
}
END_TEST

START_TEST(two_devices_copy_kernel)
{
    CUdeviceptr d0, d1;
    CUstream s0, s1;
    unsigned char *pin0;
    struct cb_kparams *p = kp_new();
    setup2();
    /* one module per context: device 0's functions do not launch on device 1 */
    kload();
    CUfunction f0 = kfn[KFIRST];
    OK(cuMemAllocHost_v2((void **)&pin0, 128)); /* device 0's context's pinned memory */
    fill(pin0, 128, 11);
    OK(cuMemAlloc_v2(&d0, 64));
    OK(cuStreamCreate(&s0, 0));
    OK(cuCtxSetCurrent(ctx1));
    OK(cuMemAlloc_v2(&d1, 64));
    OK(cuStreamCreate(&s1, 0));
    kp_add(p, d1, DP(pin0), 64);
    ck_assert_int_eq(klaunch(f0, p, s1), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(klaunch(f0, p, NULL), CUDA_ERROR_INVALID_HANDLE);
    kload();
    ck_assert_ptr_ne(kfn[KFIRST], f0);
    /* pinned memory of device 0's context is reachable from device 1 (unified addresses) */
    OK(klaunch(kfn[KFIRST], p, s1));
    OK(cuStreamSynchronize(s1));
    ck_assert_mem_eq(HP(d1), pin0, 64);
    /* device 0's memory is not: a fault, sticky in device 1's context only */
    p->count = 0;
    kp_add(p, d0, d1, 64);
    OK(klaunch(kfn[KFIRST], p, s1));
    ck_assert_int_eq(cuStreamSynchronize(s1), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_uint_eq(cusim_errors(), 1);
    OK(cuCtxSetCurrent(ctx));
    OK(cuMemcpyHtoDAsync_v2(d0, pin0 + 64, 64, s0));
    OK(cuStreamSynchronize(s0));
    ck_assert_mem_eq(HP(d0), pin0 + 64, 64);
    OK(cuCtxSynchronize());
    /* device 1's reset clears it; its module is gone */
    OK(cuDevicePrimaryCtxReset_v2(1));
    OK(cuDevicePrimaryCtxRetain(&ctx1, 1));
    OK(cuCtxSetCurrent(ctx1));
    OK(cuCtxSynchronize());
    ck_assert_int_eq(klaunch(kfn[KFIRST], p, NULL), CUDA_ERROR_INVALID_HANDLE);
    free(p);
}
END_TEST

/* ------------------------------------------------------------ acting as a newer driver (api13x.c) */

/* cuGetProcAddress_v2's answer (must be CUDA_SUCCESS): the variant's name ("NULL") and status. */
static const char *proc_name(const char *sym, int ver, int flags, int *st)
{
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult q = (CUdriverProcAddressQueryResult)-1;
    OK(cuGetProcAddress_v2(sym, &fn, ver, (cuuint64_t)flags, &q));
    *st = (int)q;
    return sym_name(fn);
}

static void set_driver(const char *v)
{
    setenv("CUSIM_DRIVER_VERSION", v, 1);
    cusim_reset_counts();
}

/* What CUDA 13.1 to 13.5 added (cudaTypedefs.h of 13.5: PFN_<name>_v<from>): the base name,
 * the version from which the real driver has it, its variant, its per-thread variant. */
static const struct { const char *base; int from; const char *name, *pt; } newer[] = {
    { "cuLaunchHostFunc", 13010, "cuLaunchHostFunc_v2", "cuLaunchHostFunc_v2_ptsz" },
    { "cuStreamBeginCaptureToCig", 13010, "cuStreamBeginCaptureToCig", "cuStreamBeginCaptureToCig_ptsz" },
    { "cuStreamEndCaptureToCig", 13010, "cuStreamEndCaptureToCig", "cuStreamEndCaptureToCig_ptsz" },
    { "cuStreamGetDevResource", 13010, "cuStreamGetDevResource", "cuStreamGetDevResource_ptsz" },
    { "cuMemcpyWithAttributesAsync", 13020, "cuMemcpyWithAttributesAsync", "cuMemcpyWithAttributesAsync_ptsz" },
    { "cuMemcpy3DWithAttributesAsync", 13020, "cuMemcpy3DWithAttributesAsync", "cuMemcpy3DWithAttributesAsync_ptsz" },
    { "cuStreamBeginRecaptureToGraph", 13030, "cuStreamBeginRecaptureToGraph", "cuStreamBeginRecaptureToGraph_ptsz" },
    { "cuLogicalEndpointDestroy", 13030, "cuLogicalEndpointDestroy", NULL },
    { "cuLogicalEndpointIdRelease", 13030, "cuLogicalEndpointIdRelease", NULL },
    { "cuCheckpointOperationComplete", 13040, "cuCheckpointOperationComplete", NULL },
    { "cuFabricCpyBatchAsync", 13050, "cuFabricCpyBatchAsync", "cuFabricCpyBatchAsync_ptsz" },
    { "cuTensorMapSetAllocationClass", 13050, "cuTensorMapSetAllocationClass", NULL },
};
#define NNEWER (sizeof newer / sizeof newer[0])

START_TEST(newer_procs_default_13000)
{
    int st;
    void *fn = (void *)1;
    setup();
    for (size_t i = 0; i < NNEWER; i++) {
        int old = !strcmp(newer[i].base, "cuLaunchHostFunc");
        for (int fl = 0; fl <= 2; fl += 2) {
            const char *got = proc_name(newer[i].base, 13000, fl, &st);
            /* a 13.0 driver knows none of them (but cuLaunchHostFunc's first variant) */
            ck_assert_str_eq(got, old ? (fl ? "cuLaunchHostFunc_ptsz" : "cuLaunchHostFunc") : "NULL");
            ck_assert_int_eq(st, old ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
            /* and a version above its own is refused */
            ck_assert_int_eq(cuGetProcAddress_v2(newer[i].base, &fn, newer[i].from, (cuuint64_t)fl, NULL),
                             CUDA_ERROR_INVALID_VALUE);
            ck_assert_ptr_null(fn);
        }
        /* exported whatever the version acted (a real 13.0 driver has no such symbols) */
        ck_assert_ptr_nonnull(dlsym(RTLD_DEFAULT, newer[i].name));
        if (newer[i].pt)
            ck_assert_ptr_nonnull(dlsym(RTLD_DEFAULT, newer[i].pt));
    }
}
END_TEST

START_TEST(newer_procs_13050)
{
    int st;
    setenv("CUSIM_DRIVER_VERSION", "13050", 1);
    setup();
    int v;
    OK(cuDriverGetVersion(&v));
    ck_assert_int_eq(v, 13050);
    for (size_t i = 0; i < NNEWER; i++) {
        int old = !strcmp(newer[i].base, "cuLaunchHostFunc");
        /* below its version: the old variant, else VERSION_NOT_SUFFICIENT (the base is known) */
        const char *got = proc_name(newer[i].base, newer[i].from - 10, 0, &st);
        ck_assert_str_eq(got, old ? "cuLaunchHostFunc" : "NULL");
        ck_assert_int_eq(st, old ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
        for (int ver = newer[i].from; ver <= 13050; ver += 10) {
            ck_assert_str_eq(proc_name(newer[i].base, ver, 0, &st), newer[i].name);
            ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
            ck_assert_str_eq(proc_name(newer[i].base, ver, 2, &st), newer[i].pt ? newer[i].pt : newer[i].name);
            ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
            void *fn4 = NULL;
            OK(cuGetProcAddress_4(newer[i].base, &fn4, ver, 0));
            ck_assert_ptr_eq(fn4, dlsym(RTLD_DEFAULT, newer[i].name));
        }
    }
    ck_assert_str_eq(proc_name("cuLaunchHostFunc", 13000, 2, &st), "cuLaunchHostFunc_ptsz");
    /* the future ones are not there yet */
    ck_assert_str_eq(proc_name("cuFutureLaunchHostFunc", 13050, 0, &st), "NULL");
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    ck_assert_str_eq(proc_name("cuStreamSynchronize", 13050, 0, &st), "cuStreamSynchronize");
    /* every old request below 13.0's limit answers as the real 13.0 driver did */
    check_proc_file("driver-proc-address-map.txt", 13000);
    check_proc_file("cudart13-entry-points.txt", 13000);
}
END_TEST

START_TEST(newer_procs_13020)
{
    int st;
    setenv("CUSIM_DRIVER_VERSION", "13020", 1);
    setup();
    ck_assert_str_eq(proc_name("cuMemcpyWithAttributesAsync", 13020, 2, &st), "cuMemcpyWithAttributesAsync_ptsz");
    ck_assert_str_eq(proc_name("cuLaunchHostFunc", 13020, 0, &st), "cuLaunchHostFunc_v2");
    /* a 13.2 driver does not know what 13.3 added */
    ck_assert_str_eq(proc_name("cuStreamBeginRecaptureToGraph", 13020, 0, &st), "NULL");
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    ck_assert_str_eq(proc_name("cuFabricCpyBatchAsync", 13000, 0, &st), "NULL");
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}
END_TEST

static unsigned char snap[64];
static int snap_n;
static void snap_fn(void *p)
{
    memcpy(snap, p, sizeof snap);
    snap_n++;
}

typedef CUresult (*hostfunc2_t)(CUstream, CUhostFn, void *, unsigned int);

START_TEST(newer_host_func_v2)
{
    CUstream s, dead;
    CUdeviceptr x;
    void *h, *fn;
    CUgraph g;
    CUgraphExec ge;
    setenv("CUSIM_DRIVER_VERSION", "13050", 1);
    setup();
    OK(cuGetProcAddress_v2("cuLaunchHostFunc", &fn, 13050, 0, NULL));
    ck_assert_str_eq(sym_name(fn), "cuLaunchHostFunc_v2");
    hostfunc2_t hf2 = (hostfunc2_t)fn;
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 64));
    OK(cuMemAllocHost_v2(&h, 64));
    /* after the earlier copies of its stream, before the later ones */
    OK(cuMemsetD8Async(x, 0x5a, 64, s));
    OK(cuMemcpyDtoHAsync_v2(h, x, 64, s));
    OK(hf2(s, snap_fn, h, 0));
    OK(cuMemsetD8Async(x, 0x11, 64, s));
    OK(cuMemcpyDtoHAsync_v2(h, x, 64, s));
    ck_assert_int_eq(snap_n, 0);
    OK(cuStreamSynchronize(s));
    ck_assert_int_eq(snap_n, 1);
    ck_assert(all(snap, 64, 0x5a));
    ck_assert(all(h, 64, 0x11));
    ck_assert_uint_eq(cusim_count("cuLaunchHostFunc_v2"), 1);
    /* any syncMode; refused where cuLaunchHostFunc is */
    OK(cuLaunchHostFunc_v2(s, snap_fn, h, 0xffffffffu));
    ck_assert_int_eq(cuLaunchHostFunc_v2(s, NULL, h, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuStreamCreate(&dead, 0));
    OK(cuStreamDestroy_v2(dead));
    ck_assert_int_eq(cuLaunchHostFunc_v2(dead, snap_fn, h, 0), CUDA_ERROR_INVALID_HANDLE);
    OK(cuStreamSynchronize(s));
    ck_assert_int_eq(snap_n, 2);
    /* _ptsz: NULL is the thread's per-thread stream */
    OK(cuLaunchHostFunc_v2_ptsz(NULL, snap_fn, h, 1));
    OK(cuStreamSynchronize_ptsz(NULL));
    ck_assert_int_eq(snap_n, 3);
    /* captured as a host node */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuLaunchHostFunc_v2(s, snap_fn, h, 0));
    OK(cuStreamEndCapture(s, &g));
    ck_assert_int_eq(snap_n, 3);
    OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    OK(cuGraphLaunch(ge, s));
    OK(cuStreamSynchronize(s));
    ck_assert_int_eq(snap_n, 4);
}
END_TEST

START_TEST(newer_copy_with_attributes)
{
    CUstream s;
    CUdeviceptr x, y;
    void *h;
    unsigned char *pg = malloc(64), want[64];
    CUmemcpyAttributes at;
    CUstreamCaptureStatus st;
    CUgraph g;
    CUgraphExec ge;
    setenv("CUSIM_DRIVER_VERSION", "13050", 1);
    setup();
    memset(&at, 0, sizeof at);
    at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 64));
    OK(cuMemAlloc_v2(&y, 64));
    OK(cuMemAllocHost_v2(&h, 64));
    /* its place in stream order */
    OK(cuMemsetD8Async(x, 1, 64, s));
    OK(cuMemcpyWithAttributesAsync(y, x, 64, &at, s));
    OK(cuMemsetD8Async(x, 2, 64, s));
    OK(cuMemcpyWithAttributesAsync(DP(h), y, 64, &at, s));
    ck_assert(all(h, 64, 0));
    OK(cuStreamSynchronize(s));
    ck_assert(all(h, 64, 1));
    ck_assert(all(HP(y), 64, 1));
    ck_assert(all(HP(x), 64, 2));
    /* cuMemcpyAsync's validation, and the attribute's */
    ck_assert_int_eq(cuMemcpyWithAttributesAsync(y, x, 64, NULL, s), CUDA_ERROR_INVALID_VALUE);
    at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    ck_assert_int_eq(cuMemcpyWithAttributesAsync(y, x, 64, &at, s), CUDA_ERROR_INVALID_VALUE);
    at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    ck_assert_int_eq(cuMemcpyWithAttributesAsync(y + 32, x, 64, &at, s), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemcpyWithAttributesAsync(y, x, 0, &at, s));
    /* pageable source, stream order: staged at the call, as cuMemcpyAsync does */
    fill(pg, 64, 7);
    fill(want, 64, 7);
    OK(cuMemcpyWithAttributesAsync(y, DP(pg), 64, &at, s));
    memset(pg, 0, 64);
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(y), want, 64);
    /* pinned source, stream order: read when the copy runs */
    memset(h, 3, 64);
    OK(cuMemcpyWithAttributesAsync(x, DP(h), 64, &at, s));
    memset(h, 4, 64);
    OK(cuStreamSynchronize(s));
    ck_assert(all(HP(x), 64, 4));
    /* DURING_API_CALL: read at the call, whatever the memory */
    at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    memset(h, 5, 64);
    OK(cuMemcpyWithAttributesAsync(x, DP(h), 64, &at, s));
    memset(h, 6, 64);
    OK(cuStreamSynchronize(s));
    ck_assert(all(HP(x), 64, 5));
    /* ... device memory too, before the stream's earlier work has written it */
    OK(cuMemsetD8Async(y, 8, 64, s));
    OK(cuMemcpyWithAttributesAsync(x, y, 64, &at, s));
    OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(HP(x), want, 64);
    ck_assert(all(HP(y), 64, 8));
    /* _ptsz: NULL is the per-thread stream */
    at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    OK(cuMemcpyWithAttributesAsync_ptsz(x, y, 64, &at, NULL));
    OK(cuStreamSynchronize_ptsz(NULL));
    ck_assert(all(HP(x), 64, 8));
    /* captured as cuMemcpyAsync */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemcpyWithAttributesAsync(x, y, 64, &at, s));
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuStreamEndCapture(s, &g));
    OK(cuMemsetD8_v2(y, 9, 64));
    ck_assert(all(HP(x), 64, 8));
    OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    OK(cuGraphLaunch(ge, s));
    OK(cuStreamSynchronize(s));
    ck_assert(all(HP(x), 64, 9));
    /* 3D copies are not simulated */
    ck_assert_int_eq(cuMemcpy3DWithAttributesAsync(NULL, 0, s), CUDA_ERROR_NOT_SUPPORTED);
    free(pg);
}
END_TEST

/* One valid batch entry on stream s (x <- y, 64 bytes). */
static CUresult batch_one(CUstream s, CUdeviceptr x, CUdeviceptr y)
{
    CUdeviceptr ds[1] = { x }, ss[1] = { y };
    size_t sz[1] = { 64 }, idx = 0, fail = 0;
    CUmemcpyAttributes at;
    memset(&at, 0, sizeof at);
    at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    CUresult rc = cuMemcpyBatchAsync_9(ds, ss, sz, 1, &at, &idx, 1, &fail, s);
    ck_assert_int_eq(cuMemcpyBatchAsync_v2(ds, ss, sz, 1, &at, &idx, 1, s), rc);
    return rc;
}

START_TEST(newer_recapture)
{
    CUstream s;
    CUdeviceptr x, y;
    CUgraph g, g2 = NULL, g3, cg = NULL;
    CUgraphExec ge;
    CUstreamCaptureStatus st;
    cuuint64_t cid;
    setenv("CUSIM_DRIVER_VERSION", "13050", 1);
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 64));
    OK(cuMemAlloc_v2(&y, 64));
    /* a graph of one op: x = 1 */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemsetD8Async(x, 1, 64, s));
    OK(cuStreamEndCapture(s, &g));
    ck_assert_int_eq(cuStreamBeginRecaptureToGraph(s, CU_STREAM_CAPTURE_MODE_GLOBAL, (CUgraph)&x, NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuStreamBeginRecaptureToGraph(s, (CUstreamCaptureMode)7, g, NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    /* recaptured: y = 2 */
    OK(cuStreamBeginRecaptureToGraph(s, CU_STREAM_CAPTURE_MODE_GLOBAL, g, NULL, NULL));
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuStreamGetCaptureInfo_v3(s, &st, &cid, &cg, NULL, NULL, NULL));
    ck_assert_ptr_eq(cg, g);
    /* the batch API refuses a capturing stream, the capture stays valid */
    ck_assert_int_eq(batch_one(s, x, y), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    ck_assert_int_eq(cuStreamBeginRecaptureToGraph(s, CU_STREAM_CAPTURE_MODE_GLOBAL, g, NULL, NULL),
                     CUDA_ERROR_ILLEGAL_STATE);
    OK(cuMemsetD8Async(y, 2, 64, s));
    /* GLOBAL: an unsafe call from anywhere is refused */
    CUdeviceptr z;
    ck_assert_int_eq(cuMemAlloc_v2(&z, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    ck_assert_int_eq(cuStreamEndCapture(s, &g2), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ck_assert_ptr_null(g2);
    /* the graph is as it was: x = 1 */
    OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    OK(cuGraphLaunch(ge, s));
    OK(cuStreamSynchronize(s));
    ck_assert(all(HP(x), 64, 1));
    ck_assert(all(HP(y), 64, 0));
    OK(cuGraphExecDestroy(ge));
    OK(cuMemsetD8_v2(x, 0, 64));
    /* a valid recapture: its ops replace the graph's, the same handle comes back */
    OK(cuStreamBeginRecaptureToGraph(s, CU_STREAM_CAPTURE_MODE_RELAXED, g, NULL, NULL));
    ck_assert_int_eq(batch_one(s, x, y), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    OK(cuMemsetD8Async(y, 2, 64, s));
    OK(cuStreamEndCapture(s, &g2));
    ck_assert_ptr_eq(g2, g);
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    ck_assert(all(HP(y), 64, 0));
    OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    OK(cuGraphLaunch(ge, s));
    OK(cuStreamSynchronize(s));
    ck_assert(all(HP(y), 64, 2));
    ck_assert(all(HP(x), 64, 0));
    /* into an empty graph (_ptsz entry, a created stream) */
    OK(cuGraphCreate(&g3, 0));
    OK(cuStreamBeginRecaptureToGraph_ptsz(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, g3, NULL, NULL));
    OK(cuMemsetD8Async(x, 3, 64, s));
    OK(cuStreamEndCapture(s, &g2));
    ck_assert_ptr_eq(g2, g3);
    OK(cuGraphInstantiateWithFlags(&ge, g3, 0));
    OK(cuGraphLaunch(ge, s));
    OK(cuStreamSynchronize(s));
    ck_assert(all(HP(x), 64, 3));
    OK(cuGraphDestroy(g));
    OK(cuGraphDestroy(g3));
}
END_TEST

START_TEST(newer_cig_capture)
{
    CUstream s;
    CUdeviceptr x, y;
    CUstreamCaptureStatus st;
    CUgraph g = NULL;
    long dummy = 0;
    CUstreamCigCaptureParams *cp = (CUstreamCigCaptureParams *)(void *)&dummy;
    setenv("CUSIM_DRIVER_VERSION", "13050", 1);
    setup();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 64));
    OK(cuMemAlloc_v2(&y, 64));
    ck_assert_int_eq(cuStreamBeginCaptureToCig(s, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuStreamEndCaptureToCig(s), CUDA_ERROR_INVALID_VALUE);
    OK(cuStreamBeginCaptureToCig(s, cp));
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    ck_assert_int_eq(batch_one(s, x, y), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuMemsetD8Async(x, 7, 64, s));
    /* RELAXED: unsafe calls are allowed */
    CUdeviceptr z;
    OK(cuMemAlloc_v2(&z, 64));
    /* only cuStreamEndCaptureToCig ends it */
    ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    ck_assert(all(HP(x), 64, 0));
    OK(cuStreamEndCaptureToCig(s));
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    OK(cuStreamSynchronize(s));
    ck_assert(all(HP(x), 64, 7));
    /* host functions are not allowed into CIG: refused, the capture invalidated */
    OK(cuStreamBeginCaptureToCig(s, cp));
    ck_assert_int_eq(cuLaunchHostFunc(s, snap_fn, HP(x)), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    ck_assert_int_eq(cuStreamEndCaptureToCig(s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    /* a plain capture is not a CIG one */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    ck_assert_int_eq(cuStreamEndCaptureToCig(s), CUDA_ERROR_INVALID_VALUE);
    OK(cuStreamEndCapture(s, &g));
    OK(cuGraphDestroy(g));
}
END_TEST

START_TEST(newer_future_function_and_variant)
{
    int st;
    void *fn = (void *)1, *h;
    CUstream s;
    CUdeviceptr x;
    /* exported whatever the version */
    ck_assert_ptr_nonnull(dlsym(RTLD_DEFAULT, "cuFutureLaunchHostFunc"));
    ck_assert_ptr_nonnull(dlsym(RTLD_DEFAULT, "cuStreamSynchronize_v2"));
    setup();
    ck_assert_str_eq(proc_name("cuFutureLaunchHostFunc", 13000, 0, &st), "NULL");
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    ck_assert_str_eq(proc_name("cuStreamSynchronize", 13000, 0, &st), "cuStreamSynchronize");
    set_driver("13050");
    ck_assert_str_eq(proc_name("cuFutureLaunchHostFunc", 13050, 0, &st), "NULL");
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    ck_assert_int_eq(cuGetProcAddress_v2("cuFutureLaunchHostFunc", &fn, 13060, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_str_eq(proc_name("cuStreamSynchronize", 13050, 0, &st), "cuStreamSynchronize");
    set_driver("13060");
    ck_assert_str_eq(proc_name("cuFutureLaunchHostFunc", 13050, 0, &st), "NULL");
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    ck_assert_str_eq(proc_name("cuFutureLaunchHostFunc", 13060, 0, &st), "cuFutureLaunchHostFunc");
    ck_assert_str_eq(proc_name("cuFutureLaunchHostFunc", 13060, 2, &st), "cuFutureLaunchHostFunc");
    ck_assert_str_eq(proc_name("cuStreamSynchronize", 13060, 0, &st), "cuStreamSynchronize_v2");
    ck_assert_str_eq(proc_name("cuStreamSynchronize", 13050, 0, &st), "cuStreamSynchronize");
    ck_assert_str_eq(proc_name("cuStreamSynchronize", 13060, 2, &st), "cuStreamSynchronize_ptsz");
    ck_assert_str_eq(proc_name("cuLaunchHostFunc", 13060, 0, &st), "cuLaunchHostFunc_v2");
    /* both work as the functions they stand for */
    OK(cuInit(0));
    OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    OK(cuCtxSetCurrent(ctx));
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 64));
    OK(cuMemAllocHost_v2(&h, 64));
    OK(cuMemsetD8Async(x, 0x33, 64, s));
    OK(cuMemcpyDtoHAsync_v2(h, x, 64, s));
    OK(cuFutureLaunchHostFunc(s, snap_fn, h));
    OK(cuMemsetD8Async(x, 0x44, 64, s));
    OK(cuMemcpyDtoHAsync_v2(h, x, 64, s));
    ck_assert_int_eq(snap_n, 0);
    ck_assert_uint_gt(cusim_pending(), 0);
    OK(cuStreamSynchronize_v2(s));
    ck_assert_uint_eq(cusim_pending(), 0);
    ck_assert_int_eq(snap_n, 1);
    ck_assert(all(snap, 64, 0x33));
    ck_assert(all(h, 64, 0x44));
    ck_assert_int_eq(cuFutureLaunchHostFunc(s, NULL, h), CUDA_ERROR_INVALID_VALUE);
    /* on a capturing stream: refused, the capture invalidated, as cuStreamSynchronize */
    CUstreamCaptureStatus cst;
    CUgraph g;
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    ck_assert_int_eq(cuStreamSynchronize_v2(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    OK(cuStreamIsCapturing(s, &cst));
    ck_assert_int_eq(cst, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}
END_TEST

START_TEST(newer_log_order)
{
    char path[] = "/tmp/cusim-logXXXXXX", buf[8192];
    int fd = mkstemp(path);
    CUstream s;
    CUdeviceptr x, y;
    CUgraph g, g2;
    CUmemcpyAttributes at;
    long dummy = 0;
    void *fn;
    ck_assert_int_ge(fd, 0);
    setenv("CUSIM_LOG", path, 1);
    setenv("CUSIM_DRIVER_VERSION", "13060", 1);
    setup();
    memset(&at, 0, sizeof at);
    at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc_v2(&x, 64));
    OK(cuMemAlloc_v2(&y, 64));
    OK(cuLaunchHostFunc_v2(s, snap_fn, HP(x), 3));
    OK(cuMemcpyWithAttributesAsync(x, y, 64, &at, s));
    OK(cuGraphCreate(&g, 0));
    OK(cuStreamBeginRecaptureToGraph(s, CU_STREAM_CAPTURE_MODE_RELAXED, g, NULL, NULL));
    OK(cuStreamEndCapture(s, &g2));
    OK(cuStreamBeginCaptureToCig(s, (CUstreamCigCaptureParams *)(void *)&dummy));
    OK(cuStreamEndCaptureToCig(s));
    OK(cuFutureLaunchHostFunc(s, snap_fn, HP(x)));
    OK(cuStreamSynchronize_v2(s));
    OK(cuGetProcAddress_v2("cuLogicalEndpointDestroy", &fn, 13060, 0, NULL));
    ck_assert_int_eq(((CUresult (*)(unsigned))fn)(0), CUDA_ERROR_NOT_SUPPORTED);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    ck_assert_int_gt(n, 0);
    buf[n] = 0;
    static const char *const want[] = {
        "cuLaunchHostFunc_v2 rc=0 stream=", "syncMode=3",
        "cuMemcpyWithAttributesAsync rc=0 stream=", "order=2 dst=",
        "cuStreamBeginRecaptureToGraph rc=0 stream=", "cuStreamEndCapture rc=0",
        "cuStreamBeginCaptureToCig rc=0", "cuStreamEndCaptureToCig rc=0",
        "cuFutureLaunchHostFunc rc=0", "cuStreamSynchronize_v2 rc=0",
        "cuLogicalEndpointDestroy rc=801 stream=- stub=1",
    };
    const char *at_ = buf;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *p = strstr(at_, want[i]);
        ck_assert_msg(p != NULL, "log:\n%s\nwant (in order): %s", buf, want[i]);
        at_ = p + strlen(want[i]);
    }
    ck_assert_ptr_nonnull(strstr(buf, "staged=1"));
    close(fd);
    unlink(path);
}
END_TEST

static Suite *sim_suite(void)
{
    Suite *s = suite_create("sim");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, proc_map_matches_real_driver);
    tcase_add_test(t, proc_entry_points_match_runtime_requests);
    tcase_add_test(t, proc_self_and_null_status);
    tcase_add_test(t, env_missing);
    tcase_add_test(t, env_driver_version_12080);
    tcase_add_test(t, needs_init_and_context);
    tcase_add_test(t, deferred_until_sync);
    tcase_add_test(t, pageable_staging_and_sync_dtoh);
    tcase_add_test(t, validation);
    tcase_add_test(t, destroyed_stream_work_still_runs);
    tcase_add_test(t, legacy_blocking_nonblocking);
    tcase_add_test(t, per_thread_streams);
    tcase_add_test(t, events_across_streams);
    tcase_add_test(t, host_functions_in_order);
    tcase_add_test(t, batch_reverse_default);
    tcase_add_test(t, batch_forward_env);
    tcase_add_test(t, dep_order_env);
    tcase_add_test(t, batch_pageable_source_access_order);
    tcase_add_test(t, batch_rejections);
    tcase_add_test(t, batch_orders);
    tcase_add_test(t, threads_share_streams);
    tcase_add_test(t, capture_and_replay);
    tcase_add_test(t, capture_invalidation);
    tcase_add_test(t, pointer_attributes);
    tcase_add_test(t, use_after_free_detected);
    tcase_add_test(t, env_fail);
    tcase_add_test(t, env_log);
    suite_add_tcase(s, t);
    TCase *c2d = tcase_create("copy2d");
    tcase_add_test(c2d, copy2d_directions);
    tcase_add_test(c2d, copy2d_validation);
    tcase_add_test(c2d, copy2d_max_copy);
    tcase_add_test(c2d, copy2d_pageable);
    tcase_add_test(c2d, copy2d_streams);
    tcase_add_test(c2d, copy2d_capture);
    tcase_add_test(c2d, copy2d_log_proc_fail);
    suite_add_tcase(s, c2d);
    TCase *k = tcase_create("copy_kernel");
    tcase_set_timeout(k, 60);
    tcase_add_test(k, kernel_module_lifecycle);
    tcase_add_test(k, kernel_modules_die_with_context);
    tcase_add_test(k, kernel_launch_created_stream);
    tcase_add_test(k, kernel_launch_legacy_per_thread_nonblocking);
    tcase_add_test(k, kernel_scrambled_order);
    tcase_add_test(k, kernel_tier_capacity);
    tcase_add_test(k, kernel_launch_validation);
    tcase_add_test(k, kernel_params_copied_at_launch);
    tcase_add_test(k, kernel_reads_only_tier_bytes);
    tcase_add_test(k, kernel_reachable_memory);
    tcase_add_test(k, kernel_fault_sticky);
    tcase_add_test(k, kernel_fault_kinds);
    tcase_add_test(k, kernel_fault_at_execution_time);
    tcase_add_test(k, kernel_registered_default);
    tcase_add_test(k, kernel_registered_alias);
    tcase_add_test(k, kernel_capture_replay);
    tcase_add_test(k, kernel_log_format);
    tcase_add_test(k, kernel_2d_mixed);
    tcase_add_test(k, kernel_2d_malformed);
    tcase_add_test(k, kernel_2d_faults);
    suite_add_tcase(s, k);
    TCase *two = tcase_create("two_devices");
    tcase_add_test(two, two_devices_contexts_and_streams);
    tcase_add_test(two, two_devices_memory);
    tcase_add_test(two, two_devices_peer_copies);
    tcase_add_test(two, two_devices_copy_kernel);
    suite_add_tcase(s, two);
    TCase *nw = tcase_create("newer_driver");
    tcase_set_timeout(nw, 60);
    tcase_add_test(nw, newer_procs_default_13000);
    tcase_add_test(nw, newer_procs_13050);
    tcase_add_test(nw, newer_procs_13020);
    tcase_add_test(nw, newer_host_func_v2);
    tcase_add_test(nw, newer_copy_with_attributes);
    tcase_add_test(nw, newer_recapture);
    tcase_add_test(nw, newer_cig_capture);
    tcase_add_test(nw, newer_future_function_and_variant);
    tcase_add_test(nw, newer_log_order);
    suite_add_tcase(s, nw);
    return s;
}

int main(void)
{
    static const char *const vars[] = { "CUSIM_BATCH_ORDER", "CUSIM_FAIL", "CUSIM_MISSING", "CUSIM_DRIVER_VERSION",
                                        "CUSIM_DEVICES", "CUSIM_LOG", "CUSIM_SEED",
                                        "CUSIM_REGISTERED_ALIAS", "CUSIM_DEP_ORDER", "CUSIM_MAX_COPY" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    SRunner *r = srunner_create(sim_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
