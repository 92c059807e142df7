/* mockcuda: a stand-in libcuda.so.1 to smoke-test xbench without a GPU.
 *
 * Only what xbench calls, with the simplest semantics that keep its checks
 * meaningful: "device" memory is host memory (device address = host address),
 * every operation runs at once on the calling thread (all streams are
 * synchronous), and the copy kernels run on the CPU through the very source
 * of src/copy_kernel.cu (as in kemu.cpp), so xbench's byte checks exercise
 * the kernel's logic and xbench's own bookkeeping.  The batch API copies its
 * entries in reverse order.  Times are meaningless.  cb_burn sleeps
 * iters/1000 microseconds.
 *
 *   g++ -std=c++17 -O2 -shared -fPIC -Wno-unknown-pragmas -I/usr/local/cuda/include -Isrc \
 *       bench/explore/mockcuda.cpp -o DIR/libcuda.so.1
 *   LD_LIBRARY_PATH=DIR xbench --quick ...
 */
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

/* ---- the CUDA names the kernel uses ---- */
struct uint4 {
    unsigned x, y, z, w;
};
struct dim3_ {
    unsigned x, y, z;
};
static dim3_ threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __grid_constant__
#define __maxnreg__(n)
template <class T> static inline T __ldcs(const T *p)
{
    T v;
    memcpy((void *)&v, (const void *)p, sizeof(T));
    return v;
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned sh)
{
    return (unsigned)(((((uint64_t)hi) << 32) | lo) >> (sh & 31));
}
#include "../../src/copy_kernel.cu"

/* ---- handles ---- */
struct mfunc {
    int kind; /* 0 copy kernel, 1 burn */
    unsigned cap;
};
static mfunc f_copy[4] = {{0, CB_KTIER_1K}, {0, CB_KTIER_4K}, {0, CB_KTIER_16K}, {0, CB_KPARAMS_MAX}};
static mfunc f_burn = {1, 0};
struct mevent {
    double t;
};
static int dummy_obj[8];

static double now_ms()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

#define P(x) ((void *)(uintptr_t)(x))

extern "C" {

CUresult CUDAAPI cuGetErrorName(CUresult e, const char **s)
{
    static char b[32];
    snprintf(b, sizeof b, "MOCK_ERROR_%d", (int)e);
    *s = b;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice *d, int) { return *d = 0, CUDA_SUCCESS; }
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice)
{
    *c = (CUcontext)&dummy_obj[0];
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *c)
{
    *c = (CUcontext)&dummy_obj[0];
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize(void) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDeviceGetName(char *n, int len, CUdevice)
{
    snprintf(n, (size_t)len, "mockcuda (CPU)");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: *v = 1; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleLoadData(CUmodule *m, const void *img)
{
    uint32_t magic;
    memcpy(&magic, img, 4);
    if (magic != 0xBA55ED50u) {
        fprintf(stderr, "mockcuda: image is not a fatbin (magic %#x)\n", magic);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    *m = (CUmodule)&dummy_obj[1];
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule, const char *name)
{
    if (!strcmp(name, CB_KERNEL_NAME_40)) *f = (CUfunction)&f_copy[0];
    else if (!strcmp(name, CB_KERNEL_NAME_168)) *f = (CUfunction)&f_copy[1];
    else if (!strcmp(name, CB_KERNEL_NAME_680)) *f = (CUfunction)&f_copy[2];
    else if (!strcmp(name, CB_KERNEL_NAME)) *f = (CUfunction)&f_copy[3];
    else if (!strcmp(name, "cb_burn")) *f = (CUfunction)&f_burn;
    else return CUDA_ERROR_NOT_FOUND;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction)
{
    *v = a == CU_FUNC_ATTRIBUTE_NUM_REGS ? 40 : a == CU_FUNC_ATTRIBUTE_BINARY_VERSION ? 90 : 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *sz)
{
    if (i != 0) return CUDA_ERROR_INVALID_VALUE;
    mfunc *m = (mfunc *)f;
    *off = 0;
    *sz = m->kind == 0 ? CB_KPARAMS_BYTES(m->cap) : 16;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction, int, size_t)
{
    *n = 6;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamCreate(CUstream *s, unsigned int)
{
    *s = (CUstream)malloc(8);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *s, unsigned int, int)
{
    *s = (CUstream)malloc(8);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *lo, int *hi)
{
    *lo = 0;
    *hi = -5;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamQuery(CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamWaitEvent(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventCreate(CUevent *e, unsigned int)
{
    *e = (CUevent) new mevent{0};
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent e)
{
    delete (mevent *)e;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent e, CUstream)
{
    ((mevent *)e)->t = now_ms();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    *ms = (float)(((mevent *)b)->t - ((mevent *)a)->t);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAllocHost(void **p, size_t n)
{
    *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuMemFreeHost(void *p)
{
    free(p);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *d, size_t n)
{
    void *p = aligned_alloc(256, (n + 255) & ~(size_t)255);
    *d = (CUdeviceptr)(uintptr_t)p;
    return p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr d)
{
    free(P(d));
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *d, void *p, unsigned int)
{
    *d = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostRegister(void *, size_t, unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuMemHostUnregister(void *) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n)
{
    memcpy(P(d), s, n);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n)
{
    memcpy(d, P(s), n);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n)
{
    memset(P(d), v, n);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream)
{
    memcpy(P(d), s, n);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream)
{
    memcpy(d, P(s), n);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream)
{
    memcpy(P(d), P(s), n);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                    size_t count, CUmemcpyAttributes *attrs, size_t *idx,
                                    size_t nattrs, CUstream st)
{
    if (count == 0 || nattrs != 1 || idx[0] != 0 ||
        attrs[0].srcAccessOrder != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM || st == CU_STREAM_LEGACY ||
        st == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (getenv("MOCK_BREAK") && count > 1)
        count--; /* drop a copy: xbench must notice */
    for (size_t i = count; i-- > 0;) {
        if (!sizes[i]) return CUDA_ERROR_INVALID_VALUE;
        memcpy(P(dsts[i]), P(srcs[i]), sizes[i]);
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned smem, CUstream, void **args,
                                void **extra)
{
    mfunc *m = (mfunc *)f;
    if (gy != 1 || gz != 1 || by != 1 || bz != 1 || extra || !args || bx == 0 || bx > 1024 ||
        gx == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (m->kind == 1) {
        unsigned iters;
        memcpy(&iters, args[1], 4);
        (void)smem;
        usleep(iters / 1000);
        return CUDA_SUCCESS;
    }
    const struct cb_kparams *p = (const struct cb_kparams *)args[0];
    gridDim = {gx, 1, 1};
    blockDim = {bx, 1, 1};
    for (unsigned b = getenv("MOCK_BREAK") && gx > 1 ? 1 : 0; b < gx; b++)
        for (unsigned t = 0; t < bx; t++) {
            blockIdx = {b, 0, 0};
            threadIdx = {t, 0, 0};
            switch (m->cap) {
            case CB_KTIER_1K: cb_copy_run<CB_KTIER_1K>(*p); break;
            case CB_KTIER_4K: cb_copy_run<CB_KTIER_4K>(*p); break;
            case CB_KTIER_16K: cb_copy_run<CB_KTIER_16K>(*p); break;
            default: cb_copy_run<CB_KPARAMS_MAX>(*p);
            }
        }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerGetAttributes(unsigned int n, CUpointer_attribute *a, void **data,
                                        CUdeviceptr ptr)
{
    for (unsigned i = 0; i < n; i++)
        switch (a[i]) {
        case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data[i] = (CUcontext)&dummy_obj[0]; break;
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data[i] = CU_MEMORYTYPE_DEVICE; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data[i] = ptr; break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data[i] = 0; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[i] = 0; break;
        default: return CUDA_ERROR_INVALID_VALUE;
        }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr ptr)
{
    if (a != CU_POINTER_ATTRIBUTE_DEVICE_POINTER) return CUDA_ERROR_INVALID_VALUE;
    *(CUdeviceptr *)data = ptr;
    return CUDA_SUCCESS;
}

} /* extern "C" */
