/* demo: many small asynchronous copies through the CUDA driver API, checked byte
 * for byte.  Run it plain and under cubatch (examples/run-demo.sh does both):
 * the output must be the same, only the time and the number of driver calls change.
 *
 *   demo [-n COUNT] [-s BYTES]     COUNT copies of BYTES each way (default 256 x 4096)
 *   demo --probe                   exit 0 if a CUDA driver with a device is usable
 *
 * What it does, on two streams it creates (non-blocking):
 *   stream A: COUNT host-to-device copies from pinned memory into scattered device
 *             blocks, an event, then COUNT device-to-host copies back in order;
 *   stream B: waits for that event, then a few device-to-device copies of some of
 *             those blocks and device-to-host copies of the results.
 * Then it synchronizes both streams and compares every byte with the source.
 *
 * The driver is not linked: like the CUDA runtime, the program opens libcuda.so.1
 * with dlopen and fetches every entry point through cuGetProcAddress, asking for
 * the ABI version of the typedef it calls through (cudaTypedefs.h).  So it runs
 * against whichever libcuda.so.1 the loader finds: the real driver, or the test
 * suite's simulated one (LD_LIBRARY_PATH=tests/sim/.libs).
 *
 * Output: a line describing the work, then "demo: OK" (exit 0) or
 * "demo: WRONG BYTES ..." (exit 1); a driver error exits 1; no driver or no device
 * exits 77.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the driver entry points this program uses: name and ABI version ---------- */
#define DEMO_DRIVER_FUNCS(X)                                                          \
    X(cuInit, 2000)                                                                   \
    X(cuDriverGetVersion, 2020)                                                       \
    X(cuGetErrorName, 6000)                                                           \
    X(cuDeviceGetCount, 2000)                                                         \
    X(cuDeviceGet, 2000)                                                              \
    X(cuDevicePrimaryCtxRetain, 7000)                                                 \
    X(cuDevicePrimaryCtxRelease, 11000)                                               \
    X(cuCtxSetCurrent, 4000)                                                          \
    X(cuMemAlloc, 3020)                                                               \
    X(cuMemFree, 3020)                                                                \
    X(cuMemAllocHost, 3020)                                                           \
    X(cuMemFreeHost, 2000)                                                            \
    X(cuStreamCreate, 2000)                                                           \
    X(cuStreamDestroy, 4000)                                                          \
    X(cuStreamSynchronize, 2000)                                                      \
    X(cuStreamWaitEvent, 3020)                                                        \
    X(cuEventCreate, 2000)                                                            \
    X(cuEventRecord, 2000)                                                            \
    X(cuEventDestroy, 4000)                                                           \
    X(cuMemcpyHtoDAsync, 3020)                                                        \
    X(cuMemcpyDtoHAsync, 3020)                                                        \
    X(cuMemcpyDtoDAsync, 3020)

static struct {
#define DEMO_FIELD(name, ver) PFN_##name##_v##ver name;
    DEMO_DRIVER_FUNCS(DEMO_FIELD)
#undef DEMO_FIELD
} cu;

#define NO_DRIVER 77

static const char *err_name(CUresult r)
{
    const char *s = NULL;
    if (!cu.cuGetErrorName || cu.cuGetErrorName(r, &s) != CUDA_SUCCESS || !s)
        return "?";
    return s;
}

#define CK(call)                                                                      \
    do {                                                                              \
        CUresult r_ = (call);                                                         \
        if (r_ != CUDA_SUCCESS) {                                                     \
            fprintf(stderr, "demo: %s failed: %s (%d)\n", #call, err_name(r_), (int)r_); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

/* Open the driver and fetch every entry point; 0 on success, else an exit status. */
static int load_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "demo: no CUDA driver: %s\n", dlerror());
        return NO_DRIVER;
    }
    PFN_cuGetProcAddress_v12000 get_proc;
    void *sym = dlsym(h, "cuGetProcAddress_v2");
    memcpy(&get_proc, &sym, sizeof sym);   /* object to function pointer, as POSIX allows */
    if (!sym) {
        fprintf(stderr, "demo: libcuda.so.1 has no cuGetProcAddress_v2 (driver older than CUDA 12)\n");
        return NO_DRIVER;
    }
    static const struct { const char *name; int version; void *slot; } table[] = {
#define DEMO_ROW(name, ver) {#name, ver, &cu.name},
        DEMO_DRIVER_FUNCS(DEMO_ROW)
#undef DEMO_ROW
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        void *fn = NULL;
        CUresult r = get_proc(table[i].name, &fn, table[i].version,
                              CU_GET_PROC_ADDRESS_DEFAULT, &found);
        memcpy(table[i].slot, &fn, sizeof fn);
        if (r != CUDA_SUCCESS || !fn) {
            fprintf(stderr, "demo: cuGetProcAddress(\"%s\", %d) failed: result %d, status %d\n",
                    table[i].name, table[i].version, (int)r, (int)found);
            return 1;
        }
    }
    return 0;
}

/* The byte pattern of the source: every 8-byte word differs from every other. */
static uint64_t word_at(size_t block, size_t word)
{
    uint64_t z = ((uint64_t)block << 32 | word) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void fill_block(unsigned char *p, size_t block, size_t size)
{
    for (size_t off = 0; off < size; off += 8) {
        uint64_t w = word_at(block, off / 8);
        memcpy(p + off, &w, size - off < 8 ? size - off : 8);
    }
}

/* Number of the first wrong byte of a block of `size` at `got` that should hold
 * source block `block`, or -1 if all are right. */
static long check_block(const unsigned char *got, size_t block, size_t size, unsigned char *scratch)
{
    fill_block(scratch, block, size);
    for (size_t i = 0; i < size; i++)
        if (got[i] != scratch[i])
            return (long)i;
    return -1;
}

static size_t parse_count(const char *s, const char *what)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || v == 0 || v > (1u << 20)) {
        fprintf(stderr, "demo: bad %s '%s' (a number from 1 to %u)\n", what, s, 1u << 20);
        exit(2);
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    size_t count = 256, size = 4096;
    int probe = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--probe"))
            probe = 1;
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            count = parse_count(argv[++i], "count");
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            size = parse_count(argv[++i], "size");
        else {
            fprintf(stderr, "usage: demo [-n COUNT] [-s BYTES] | demo --probe\n");
            return 2;
        }
    }

    setvbuf(stdout, NULL, _IOLBF, 0); /* keep our lines in order with stderr reports */
    int rc = load_driver();
    if (rc)
        return rc;
    CUresult r = cu.cuInit(0);
    int ndev = 0, version = 0;
    if (r == CUDA_SUCCESS)
        r = cu.cuDeviceGetCount(&ndev);
    if (r != CUDA_SUCCESS || ndev == 0) {
        fprintf(stderr, "demo: no usable CUDA device (%s)\n", r ? err_name(r) : "0 devices");
        return NO_DRIVER;
    }
    CK(cu.cuDriverGetVersion(&version));
    if (probe) {
        printf("demo: CUDA driver %d.%d, %d device(s)\n", version / 1000, version % 1000 / 10, ndev);
        return 0;
    }

    CUdevice dev;
    CUcontext ctx;
    CK(cu.cuDeviceGet(&dev, 0));
    CK(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cu.cuCtxSetCurrent(ctx));

    const size_t side = count < 16 ? count : 16;     /* copies on stream B */
    const size_t stride = count / side;              /* B copies every stride-th block */
    /* Scatter the device blocks: slot(i) = i * step mod count, step coprime to count. */
    size_t step = count / 2 + 1;
    for (;;) {
        size_t a = step, b = count;
        while (b) { size_t t = a % b; a = b; b = t; }
        if (a == 1)
            break;
        step++;
    }
#define SLOT(i) ((size_t)(((unsigned long long)(i) * step) % count))

    unsigned char *src, *dst, *dst_b, *scratch = malloc(size);
    CUdeviceptr dev_blocks, dev_b;
    CK(cu.cuMemAllocHost((void **)&src, count * size));
    CK(cu.cuMemAllocHost((void **)&dst, count * size));
    CK(cu.cuMemAllocHost((void **)&dst_b, side * size));
    CK(cu.cuMemAlloc(&dev_blocks, count * size));
    CK(cu.cuMemAlloc(&dev_b, side * size));
    if (!scratch) {
        fprintf(stderr, "demo: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < count; i++)
        fill_block(src + i * size, i, size);
    memset(dst, 0xee, count * size);
    memset(dst_b, 0xee, side * size);

    CUstream a, b;
    CUevent uploaded;
    CK(cu.cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CK(cu.cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CK(cu.cuEventCreate(&uploaded, CU_EVENT_DISABLE_TIMING));

    /* Stream A: up, event, back down. */
    for (size_t i = 0; i < count; i++)
        CK(cu.cuMemcpyHtoDAsync(dev_blocks + SLOT(i) * size, src + i * size, size, a));
    CK(cu.cuEventRecord(uploaded, a));
    for (size_t i = 0; i < count; i++)
        CK(cu.cuMemcpyDtoHAsync(dst + i * size, dev_blocks + SLOT(i) * size, size, a));
    /* Stream B: after the upload, copy every stride-th block on the device, then down. */
    CK(cu.cuStreamWaitEvent(b, uploaded, 0));
    for (size_t j = 0; j < side; j++)
        CK(cu.cuMemcpyDtoDAsync(dev_b + j * size, dev_blocks + SLOT(j * stride) * size, size, b));
    for (size_t j = 0; j < side; j++)
        CK(cu.cuMemcpyDtoHAsync(dst_b + j * size, dev_b + j * size, size, b));
    CK(cu.cuStreamSynchronize(a));
    CK(cu.cuStreamSynchronize(b));

    printf("demo: %zu x %zu B host-to-device + %zu device-to-host on stream A; "
           "%zu device-to-device + %zu device-to-host on stream B after an event (driver %d.%d)\n",
           count, size, count, side, side, version / 1000, version % 1000 / 10);
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) {
        long at = check_block(dst + i * size, i, size, scratch);
        if (at >= 0 && wrong++ < 3)
            fprintf(stderr, "demo: stream A block %zu: first wrong byte at %ld\n", i, at);
    }
    for (size_t j = 0; j < side; j++) {
        long at = check_block(dst_b + j * size, j * stride, size, scratch);
        if (at >= 0 && wrong++ < 3)
            fprintf(stderr, "demo: stream B block %zu: first wrong byte at %ld\n", j, at);
    }

    CK(cu.cuEventDestroy(uploaded));
    CK(cu.cuStreamDestroy(a));
    CK(cu.cuStreamDestroy(b));
    CK(cu.cuMemFree(dev_blocks));
    CK(cu.cuMemFree(dev_b));
    CK(cu.cuMemFreeHost(src));
    CK(cu.cuMemFreeHost(dst));
    CK(cu.cuMemFreeHost(dst_b));
    CK(cu.cuDevicePrimaryCtxRelease(dev));
    free(scratch);

    if (wrong) {
        printf("demo: WRONG BYTES (%zu of %zu blocks)\n", wrong, count + side);
        return 1;
    }
    printf("demo: OK (every byte of the %zu blocks read back was compared with what was sent)\n", count + side);
    return 0;
}
