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
#include <unistd.h>

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
CUresult cuStreamSynchronize_ptsz(CUstream);
CUresult cuStreamGetId_ptsz(CUstream, unsigned long long *);
CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
CUresult cuGetProcAddress_4(const char *, void **, int, cuuint64_t) __asm__("cuGetProcAddress");
CUresult cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode);
CUresult cuCtxCreate_v2(CUcontext *, unsigned int, CUdevice);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr, unsigned char, size_t, CUstream);

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

static void check_proc_file(const char *file)
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
    check_proc_file("driver-proc-address-map.txt");
}
END_TEST

START_TEST(proc_entry_points_match_runtime_requests)
{
    check_proc_file("cudart13-entry-points.txt");
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
    return s;
}

int main(void)
{
    static const char *const vars[] = { "CUSIM_BATCH_ORDER", "CUSIM_FAIL", "CUSIM_MISSING", "CUSIM_DRIVER_VERSION",
                                        "CUSIM_DEVICES", "CUSIM_LOG", "CUSIM_SEED" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    SRunner *r = srunner_create(sim_suite());
    srunner_set_fork_status(r, CK_FORK);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
