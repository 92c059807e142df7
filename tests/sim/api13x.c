/* Simulated CUDA driver: the entry points that CUDA 13.1 to 13.5 added and the sim
 * simulates, plus two that no CUDA header names yet (a driver newer than 13.5).  Which
 * of them cuGetProcAddress hands out depends on the driver the sim acts as
 * (CUSIM_DRIVER_VERSION, procs.c); every one is exported whatever that version.  The
 * build may use an older cuda.h (13.0): these functions are declared here, and
 * cuda_since.h (src/) has the types such a header lacks.  The rest of what 13.1-13.5
 * added (cuStreamGetDevResource, cuLogicalEndpoint*, cuCheckpointOperationComplete,
 * cuFabricCpyBatchAsync, cuTensorMapSetAllocationClass, ...) are procs.c's logged weak
 * stubs (CUDA_ERROR_NOT_SUPPORTED).  See README.md, "Acting as a newer driver". */
#include "sim.h"

#include "cuda_since.h"

#define BEGIN(name) struct call C_; if (sim_begin(&C_, name, 0, NULL)) return C_.rc
#define BEGIN_S(name, h) struct call C_; if (sim_begin(&C_, name, 1, (h))) return C_.rc
#define END(rc) return sim_end(&C_, (rc))
#define KV(...) sim_kv(&C_, __VA_ARGS__)
#define P(x) ((void *)(uintptr_t)(x))

/* Exported under these exact names (cuda.h's per-thread renaming does not apply here). */
CUresult CUDAAPI cuLaunchHostFunc_v2(CUstream hStream, CUhostFn fn, void *userData, unsigned int syncMode);
CUresult CUDAAPI cuLaunchHostFunc_v2_ptsz(CUstream hStream, CUhostFn fn, void *userData, unsigned int syncMode);
CUresult CUDAAPI cuMemcpyWithAttributesAsync(CUdeviceptr dst, CUdeviceptr src, size_t size, CUmemcpyAttributes *attr,
                                             CUstream hStream);
CUresult CUDAAPI cuMemcpyWithAttributesAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t size,
                                                  CUmemcpyAttributes *attr, CUstream hStream);
CUresult CUDAAPI cuMemcpy3DWithAttributesAsync(CUDA_MEMCPY3D_BATCH_OP *op, unsigned long long flags, CUstream hStream);
CUresult CUDAAPI cuMemcpy3DWithAttributesAsync_ptsz(CUDA_MEMCPY3D_BATCH_OP *op, unsigned long long flags,
                                                    CUstream hStream);
CUresult CUDAAPI cuStreamBeginRecaptureToGraph(CUstream hStream, CUstreamCaptureMode mode, CUgraph hGraph,
                                               CUgraphRecaptureCallback callbackFunc, void *userData);
CUresult CUDAAPI cuStreamBeginRecaptureToGraph_ptsz(CUstream hStream, CUstreamCaptureMode mode, CUgraph hGraph,
                                                    CUgraphRecaptureCallback callbackFunc, void *userData);
CUresult CUDAAPI cuStreamBeginCaptureToCig(CUstream hStream, CUstreamCigCaptureParams *streamCigCaptureParams);
CUresult CUDAAPI cuStreamBeginCaptureToCig_ptsz(CUstream hStream, CUstreamCigCaptureParams *streamCigCaptureParams);
CUresult CUDAAPI cuStreamEndCaptureToCig(CUstream hStream);
CUresult CUDAAPI cuStreamEndCaptureToCig_ptsz(CUstream hStream);
/* No CUDA header names these (yet): the sim's "future" driver, CUSIM_DRIVER_VERSION >= 13060. */
CUresult CUDAAPI cuFutureLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);
CUresult CUDAAPI cuStreamSynchronize_v2(CUstream hStream);

int sim_driver_version(void)
{
    return sim_cfg.driver_version;
}

/* ------------------------------------------------------------------ host functions (13.1) */

/* Any syncMode is accepted (the sim has no blocking/non-blocking distinction to make):
 * otherwise exactly cuLaunchHostFunc. */
CUresult CUDAAPI cuLaunchHostFunc_v2(CUstream h, CUhostFn fn, void *ud, unsigned int syncMode)
{ BEGIN_S("cuLaunchHostFunc_v2", h); KV("syncMode=%u", syncMode); END(sim_host_func(&C_, h, 0, fn, ud)); }
CUresult CUDAAPI cuLaunchHostFunc_v2_ptsz(CUstream h, CUhostFn fn, void *ud, unsigned int syncMode)
{ BEGIN_S("cuLaunchHostFunc_v2_ptsz", h); KV("syncMode=%u", syncMode); END(sim_host_func(&C_, h, 1, fn, ud)); }

/* ------------------------------------------------------------------ copies with attributes (13.2) */

/* cuMemcpyAsync with one CUmemcpyAttributes: the same validation, stream order, pageable
 * staging and capture; a NULL attr or an invalid srcAccessOrder is CUDA_ERROR_INVALID_VALUE;
 * CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL reads the source (any memory) at the call. */
static CUresult copy_attr(struct call *c, CUdeviceptr dst, CUdeviceptr src, size_t n, const CUmemcpyAttributes *attr,
                          CUstream h, int ptsz)
{
    if (!attr)
        return CUDA_ERROR_INVALID_VALUE;
    CUmemcpySrcAccessOrder o = attr->srcAccessOrder;
    sim_kv(c, "order=%d", (int)o);
    if (o != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM && o != CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL &&
        o != CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
        return CUDA_ERROR_INVALID_VALUE;
    return sim_copy_async(c, P(dst), P(src), n, h, ptsz, o == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL);
}
CUresult CUDAAPI cuMemcpyWithAttributesAsync(CUdeviceptr dst, CUdeviceptr src, size_t size, CUmemcpyAttributes *attr,
                                             CUstream h)
{ BEGIN_S("cuMemcpyWithAttributesAsync", h); END(copy_attr(&C_, dst, src, size, attr, h, 0)); }
CUresult CUDAAPI cuMemcpyWithAttributesAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t size,
                                                  CUmemcpyAttributes *attr, CUstream h)
{ BEGIN_S("cuMemcpyWithAttributesAsync_ptsz", h); END(copy_attr(&C_, dst, src, size, attr, h, 1)); }

/* 3D copies are not simulated. */
CUresult CUDAAPI cuMemcpy3DWithAttributesAsync(CUDA_MEMCPY3D_BATCH_OP *op, unsigned long long flags, CUstream h)
{
    (void)op;
    (void)flags;
    BEGIN_S("cuMemcpy3DWithAttributesAsync", h);
    KV("stub=1");
    END(CUDA_ERROR_NOT_SUPPORTED);
}
CUresult CUDAAPI cuMemcpy3DWithAttributesAsync_ptsz(CUDA_MEMCPY3D_BATCH_OP *op, unsigned long long flags, CUstream h)
{
    (void)op;
    (void)flags;
    BEGIN_S("cuMemcpy3DWithAttributesAsync_ptsz", h);
    KV("stub=1");
    END(CUDA_ERROR_NOT_SUPPORTED);
}

/* ------------------------------------------------------------------ recapture (13.3) */

/* A capture of the stream in mode (as cuStreamBeginCapture_v2) whose ops, when
 * cuStreamEndCapture ends it valid, replace hGraph's (the same handle comes back); an
 * invalidated one leaves hGraph as it was.  Not simulated: the topology and parameter
 * comparison with the old nodes (callbackFunc is never called). */
static CUresult recapture(CUstream h, int ptsz, CUstreamCaptureMode mode, CUgraph g)
{
    if (!sim_handle_ok(g, H_GRAPH))
        return CUDA_ERROR_INVALID_VALUE;
    return sim_begin_capture(h, ptsz, mode, (struct sim_graph *)g, 0);
}
CUresult CUDAAPI cuStreamBeginRecaptureToGraph(CUstream h, CUstreamCaptureMode mode, CUgraph g,
                                               CUgraphRecaptureCallback cb, void *ud)
{
    (void)cb;
    (void)ud;
    BEGIN_S("cuStreamBeginRecaptureToGraph", h);
    KV("mode=%d graph=%p", (int)mode, (void *)g);
    END(recapture(h, 0, mode, g));
}
CUresult CUDAAPI cuStreamBeginRecaptureToGraph_ptsz(CUstream h, CUstreamCaptureMode mode, CUgraph g,
                                                    CUgraphRecaptureCallback cb, void *ud)
{
    (void)cb;
    (void)ud;
    BEGIN_S("cuStreamBeginRecaptureToGraph_ptsz", h);
    KV("mode=%d graph=%p", (int)mode, (void *)g);
    END(recapture(h, 1, mode, g));
}

/* ------------------------------------------------------------------ CIG capture (13.1) */

/* A RELAXED capture into a graph the sim keeps; only cuStreamEndCaptureToCig ends it
 * (cuStreamEndCapture: CUDA_ERROR_ILLEGAL_STATE), and then its work runs on the stream as
 * if the graphics API submitted the command list at once.  The params are not read
 * (no graphics API here), only required. */
static CUresult cig_begin(CUstream h, int ptsz, const CUstreamCigCaptureParams *params)
{
    if (!params)
        return CUDA_ERROR_INVALID_VALUE;
    return sim_begin_capture(h, ptsz, CU_STREAM_CAPTURE_MODE_RELAXED, NULL, 1);
}
CUresult CUDAAPI cuStreamBeginCaptureToCig(CUstream h, CUstreamCigCaptureParams *params)
{ BEGIN_S("cuStreamBeginCaptureToCig", h); END(cig_begin(h, 0, params)); }
CUresult CUDAAPI cuStreamBeginCaptureToCig_ptsz(CUstream h, CUstreamCigCaptureParams *params)
{ BEGIN_S("cuStreamBeginCaptureToCig_ptsz", h); END(cig_begin(h, 1, params)); }
CUresult CUDAAPI cuStreamEndCaptureToCig(CUstream h)
{ BEGIN_S("cuStreamEndCaptureToCig", h); END(sim_end_capture_cig(&C_, h, 0)); }
CUresult CUDAAPI cuStreamEndCaptureToCig_ptsz(CUstream h)
{ BEGIN_S("cuStreamEndCaptureToCig_ptsz", h); END(sim_end_capture_cig(&C_, h, 1)); }

/* ------------------------------------------------------------------ the "future" driver (13.6) */

/* A function no header names: cuLaunchHostFunc under another name, for testing what a
 * library does with an entry point it has never heard of. */
CUresult CUDAAPI cuFutureLaunchHostFunc(CUstream h, CUhostFn fn, void *ud)
{ BEGIN_S("cuFutureLaunchHostFunc", h); END(sim_host_func(&C_, h, 0, fn, ud)); }

/* A new variant of an old name (cuGetProcAddress("cuStreamSynchronize", >= 13060)):
 * synchronizes as cuStreamSynchronize does. */
CUresult CUDAAPI cuStreamSynchronize_v2(CUstream h)
{ BEGIN_S("cuStreamSynchronize_v2", h); END(sim_stream_sync(h, 0)); }
