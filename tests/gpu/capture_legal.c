/* capture_legal.c - what the driver allows while a stream is capturing.
 *
 * For every driver call cubatch makes on its own (docs/design.md, "cubatch's own
 * driver calls during capture"), in each capture mode, on the capturing stream,
 * on another stream and on the legacy stream, from the capturing thread and
 * from another thread: begin a capture on a fresh stream, put one kernel node
 * in it, make the call, then read the capture's status and end it.  One line
 * per case:
 *
 *   <flavor> <mode> <call> <where> rc=<n> after=<status> end=<n>
 *
 * flavor: the capturing stream is nonblocking or blocking; mode: global, thread,
 * relaxed; where: cap, other, legacy or - (no stream), then @here or @thread;
 * rc: the call's result; after: the capture's status afterwards (active,
 * invalidated, none); end: cuStreamEndCapture's result.
 *
 * The same program runs on the real driver (tests/gpu: its output on an H200 is
 * tests/data/capture-legal-h200.txt) and on the simulated one (tests/sim's
 * check compares the lines the simulator claims to model with that file).
 * Driver API only; exit 0 when every case ran, 77 without a GPU, 1 on a setup
 * error.  `capture_legal --check` prefixes each line with "CHECK " for
 * tests/gpu/run-gpu-tests.sh (which compares them with and without cubatch);
 * any other argument runs only the call of that name. */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A kernel of one unsigned parameter, named as the simulated driver's compute
 * kernel so that both drivers run the same cases. */
static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry cusim_compute(.param .u32 polls)\n{\n ret;\n}\n";
/* What the simulated driver takes for a module image (tests/sim/api.c). */
static const uint32_t sim_image[4] = {0xBA55ED50u, 0, 0, 0};

static CUcontext ctx;
static CUdevice dev;
static CUfunction fn;
static void *pinned, *pageable;
static CUdeviceptr dmem;

struct kase {
    CUstream cap, other, where; /* where: the stream the call names */
    CUevent ev_other;           /* recorded on other before the capture */
    CUevent ev_cap;             /* recorded in the capture */
    CUevent scratch;
};

static CUresult launch(CUstream s)
{
    unsigned polls = 0;
    void *args[] = {&polls};
    return cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
}

static CUresult ptr_attrs(const void *p)
{
    CUpointer_attribute a[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,    CU_POINTER_ATTRIBUTE_IS_MANAGED,
                               CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                               CU_POINTER_ATTRIBUTE_RANGE_SIZE,     CU_POINTER_ATTRIBUTE_CONTEXT,
                               CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    unsigned type = 0;
    int managed = 0, ordinal = 0;
    CUdeviceptr start = 0, dptr = 0;
    size_t size = 0;
    CUcontext c = NULL;
    void *data[] = {&type, &managed, &ordinal, &start, &size, &c, &dptr};
    return cuPointerGetAttributes(7, a, data, (CUdeviceptr)(uintptr_t)p);
}

typedef CUresult (*call_fn)(struct kase *k);
#define CALL(name) static CUresult c_##name(struct kase *k)

CALL(ctx_current) { (void)k; CUcontext c; return cuCtxGetCurrent(&c); }
CALL(ctx_device) { (void)k; CUdevice d; return cuCtxGetDevice(&d); }
CALL(ctx_push_pop)
{
    (void)k;
    CUresult rc = cuCtxPushCurrent(ctx);
    CUcontext c;
    return rc ? rc : cuCtxPopCurrent(&c);
}
CALL(ctx_api_version) { (void)k; unsigned v; return cuCtxGetApiVersion(ctx, &v); }
CALL(driver_version) { (void)k; int v; return cuDriverGetVersion(&v); }
CALL(proc_address)
{
    (void)k;
    void *p;
    CUdriverProcAddressQueryResult st;
    return cuGetProcAddress("cuMemcpyBatchAsync", &p, 13000, 0, &st);
}
CALL(primary_state) { (void)k; unsigned f; int a; return cuDevicePrimaryCtxGetState(dev, &f, &a); }
CALL(primary_retain_release)
{
    (void)k;
    CUcontext c;
    CUresult rc = cuDevicePrimaryCtxRetain(&c, dev);
    return rc ? rc : cuDevicePrimaryCtxRelease(dev);
}
CALL(device_attr) { (void)k; int n; return cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev); }
CALL(occupancy) { (void)k; int n; return cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, 256, 0); }
CALL(ptr_device) { (void)k; return ptr_attrs((void *)(uintptr_t)dmem); }
CALL(ptr_pinned) { (void)k; return ptr_attrs(pinned); }
CALL(ptr_pageable) { (void)k; return ptr_attrs(pageable); }
CALL(module_load_unload)
{
    (void)k;
    CUmodule m;
    CUresult rc = cuModuleLoadData(&m, ptx);
    if (rc == CUDA_ERROR_INVALID_IMAGE)
        rc = cuModuleLoadData(&m, sim_image);
    return rc ? rc : cuModuleUnload(m);
}
CALL(stream_create_destroy)
{
    (void)k;
    CUstream s;
    CUresult rc = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    return rc ? rc : cuStreamDestroy(s);
}
CALL(event_create_destroy)
{
    (void)k;
    CUevent e;
    CUresult rc = cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
    return rc ? rc : cuEventDestroy(e);
}
CALL(mem_alloc_free)
{
    (void)k;
    CUdeviceptr d;
    CUresult rc = cuMemAlloc(&d, 4096);
    return rc ? rc : cuMemFree(d);
}
CALL(host_alloc_free)
{
    (void)k;
    void *h;
    CUresult rc = cuMemHostAlloc(&h, 4096, 0);
    return rc ? rc : cuMemFreeHost(h);
}
CALL(ctx_sync) { (void)k; return cuCtxSynchronize(); }
CALL(event_query_captured) { return cuEventQuery(k->ev_cap); }
CALL(event_query_other) { return cuEventQuery(k->ev_other); }
/* calls that name a stream (k->where) */
CALL(stream_is_capturing) { CUstreamCaptureStatus st; return cuStreamIsCapturing(k->where, &st); }
CALL(stream_capture_info)
{
    CUstreamCaptureStatus st;
    cuuint64_t id;
    return cuStreamGetCaptureInfo(k->where, &st, &id, NULL, NULL, NULL, NULL);
}
CALL(stream_flags) { unsigned f; return cuStreamGetFlags(k->where, &f); }
CALL(stream_ctx) { CUcontext c; return cuStreamGetCtx(k->where, &c); }
CALL(stream_device) { CUdevice d; return cuStreamGetDevice(k->where, &d); }
CALL(stream_query) { return cuStreamQuery(k->where); }
CALL(stream_sync) { return cuStreamSynchronize(k->where); }
CALL(event_record) { return cuEventRecord(k->scratch, k->where); }
CALL(wait_other_event) { return cuStreamWaitEvent(k->where, k->ev_other, 0); }
CALL(wait_captured_event) { return cuStreamWaitEvent(k->where, k->ev_cap, 0); }
CALL(launch_small) { return launch(k->where); }

static const struct call {
    const char *name;
    call_fn fn;
    int stream; /* names a stream */
} calls[] = {
#define NO(n) {#n, c_##n, 0},
#define ST(n) {#n, c_##n, 1},
    NO(ctx_current) NO(ctx_device) NO(ctx_push_pop) NO(ctx_api_version) NO(driver_version) NO(proc_address)
    NO(primary_state) NO(primary_retain_release) NO(device_attr) NO(occupancy) NO(ptr_device) NO(ptr_pinned)
    NO(ptr_pageable) NO(module_load_unload) NO(stream_create_destroy) NO(event_create_destroy)
    NO(mem_alloc_free) NO(host_alloc_free) NO(ctx_sync) NO(event_query_captured) NO(event_query_other)
    ST(stream_is_capturing) ST(stream_capture_info) ST(stream_flags) ST(stream_ctx) ST(stream_device)
    ST(stream_query) ST(stream_sync) ST(event_record) ST(wait_other_event) ST(wait_captured_event)
    ST(launch_small)
#undef NO
#undef ST
};

struct in_thread {
    const struct call *c;
    struct kase *k;
    CUresult rc;
};

static void *thread_main(void *arg)
{
    struct in_thread *t = arg;
    cuCtxSetCurrent(ctx);
    t->rc = t->c->fn(t->k);
    return NULL;
}

static const char *status_name(CUresult rc, CUstreamCaptureStatus st)
{
    if (rc != CUDA_SUCCESS)
        return "error";
    return st == CU_STREAM_CAPTURE_STATUS_ACTIVE ? "active"
           : st == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? "invalidated" : "none";
}

#define SETUP(x)                                                                  \
    do {                                                                          \
        CUresult r_ = (x);                                                        \
        if (r_ != CUDA_SUCCESS) {                                                 \
            fprintf(stderr, "capture_legal: %s: %d (line %d)\n", #x, (int)r_, __LINE__); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

static const char *line_prefix = "";

static void one(unsigned flavor, CUstreamCaptureMode mode, const char *mode_name, const struct call *c,
                int where, int in_thread)
{
    static const char *const wheres[] = {"cap", "other", "legacy", "-"};
    struct kase k;
    SETUP(cuStreamCreate(&k.cap, flavor));
    SETUP(cuStreamCreate(&k.other, CU_STREAM_NON_BLOCKING));
    SETUP(cuEventCreate(&k.ev_other, CU_EVENT_DISABLE_TIMING));
    SETUP(cuEventCreate(&k.ev_cap, CU_EVENT_DISABLE_TIMING));
    SETUP(cuEventCreate(&k.scratch, CU_EVENT_DISABLE_TIMING));
    SETUP(cuEventRecord(k.ev_other, k.other));
    k.where = where == 0 ? k.cap : where == 1 ? k.other : CU_STREAM_LEGACY;
    SETUP(cuStreamBeginCapture(k.cap, mode));
    SETUP(launch(k.cap));
    SETUP(cuEventRecord(k.ev_cap, k.cap));
    CUresult rc;
    if (in_thread) {
        struct in_thread t = {c, &k, CUDA_SUCCESS};
        pthread_t th;
        if (pthread_create(&th, NULL, thread_main, &t))
            exit(1);
        pthread_join(th, NULL);
        rc = t.rc;
    } else {
        rc = c->fn(&k);
    }
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult qrc = cuStreamIsCapturing(k.cap, &st);
    CUgraph g = NULL;
    CUresult end = cuStreamEndCapture(k.cap, &g);
    if (g)
        cuGraphDestroy(g);
    /* a stream that joined the capture through a captured event ended with it */
    printf("%s%s %s %s %s@%s rc=%d after=%s end=%d\n", line_prefix, flavor ? "nonblocking" : "blocking", mode_name, c->name,
           wheres[c->stream ? where : 3], in_thread ? "thread" : "here", (int)rc, status_name(qrc, st), (int)end);
    fflush(stdout);
    cuCtxSynchronize();
    cuStreamDestroy(k.cap);
    cuStreamDestroy(k.other);
    cuEventDestroy(k.ev_other);
    cuEventDestroy(k.ev_cap);
    cuEventDestroy(k.scratch);
    cuCtxSynchronize();
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL; /* one call's name */
    if (only && !strcmp(only, "--check")) {
        line_prefix = "CHECK ";
        only = NULL;
    }
    if (cuInit(0) != CUDA_SUCCESS)
        return 77;
    int n = 0;
    if (cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1)
        return 77;
    SETUP(cuDeviceGet(&dev, 0));
    SETUP(cuDevicePrimaryCtxRetain(&ctx, dev));
    SETUP(cuCtxSetCurrent(ctx));
    CUmodule m;
    CUresult rc = cuModuleLoadData(&m, ptx);
    if (rc == CUDA_ERROR_INVALID_IMAGE)
        rc = cuModuleLoadData(&m, sim_image);
    SETUP(rc);
    SETUP(cuModuleGetFunction(&fn, m, "cusim_compute"));
    SETUP(cuMemAlloc(&dmem, 4096));
    SETUP(cuMemHostAlloc(&pinned, 4096, 0));
    pageable = malloc(4096);
    static const struct { CUstreamCaptureMode mode; const char *name; } modes[] = {
        {CU_STREAM_CAPTURE_MODE_GLOBAL, "global"},
        {CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, "thread"},
        {CU_STREAM_CAPTURE_MODE_RELAXED, "relaxed"},
    };
    static const unsigned flavors[] = {CU_STREAM_NON_BLOCKING, CU_STREAM_DEFAULT};
    for (size_t f = 0; f < 2; f++)
        for (size_t mi = 0; mi < 3; mi++)
            for (size_t ci = 0; ci < sizeof calls / sizeof calls[0]; ci++) {
                if (only && strcmp(only, calls[ci].name))
                    continue;
                for (int where = 0; where < (calls[ci].stream ? 3 : 1); where++)
                    for (int th = 0; th < 2; th++)
                        one(flavors[f], modes[mi].mode, modes[mi].name, &calls[ci], where, th);
            }
    free(pageable);
    return 0;
}
