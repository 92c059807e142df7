/* cuda_since.h - the types of the driver functions that CUDA 13.1 to 13.5 added
 * and hooks.def wraps (its CB_HOOK_SINCE rows), for a build against an older
 * cuda.h.  The library is built by the toolkit at hand (13.0 on CI) but must
 * wrap what a newer driver hands out (docs/design.md rule 17), so each row is
 * compiled whatever the header: its own definition declares the function, and
 * only the types a row's parameters name must come from somewhere.  Each block
 * stands for the header version that brought its types; a wrapper only passes
 * the arguments on, so an opaque struct is all a pointer parameter needs.
 * Included by internal.h, the simulated driver and the tests that call them. */
#ifndef CUBATCH_CUDA_SINCE_H
#define CUBATCH_CUDA_SINCE_H

#include <cuda.h>

#if CUDA_VERSION < 13020 /* cuStreamBeginCaptureToCig */
typedef struct CUstreamCigCaptureParams_st CUstreamCigCaptureParams;
#endif

#if CUDA_VERSION < 13030 /* cuStreamBeginRecaptureToGraph */
typedef enum CUgraphRecaptureStatus_enum {
    CU_GRAPH_RECAPTURE_ELIGIBLE_FOR_UPDATE = 0,
    CU_GRAPH_RECAPTURE_INELIGIBLE_FOR_UPDATE = 1,
    CU_GRAPH_RECAPTURE_ERROR = 2
} CUgraphRecaptureStatus;
typedef CUresult(CUDA_CB *CUgraphRecaptureCallback)(void *data, CUgraphNode node,
                                                     const CUgraphNodeParams *originalParams,
                                                     const CUgraphNodeParams *recaptureParams,
                                                     CUgraphRecaptureStatus status);
typedef cuuint32_t CUlogicalEndpointId; /* cuLogicalEndpointDestroy */
#endif

#if CUDA_VERSION < 13040 /* cuCheckpointOperationComplete */
typedef struct CUIcheckpointOperation_st *CUcheckpointOperationHandle;
#endif

#if CUDA_VERSION < 13050 /* cuFabricCpyBatchAsync */
typedef struct CUDA_FABRIC_COPY_BATCH_OP_st CUDA_FABRIC_COPY_BATCH_OP;
#endif

/* The functions of those rows, declared for a file that calls them (the
 * declaration a newer header makes is the same). */
#define CB_HOOK(name, ptsz, action, aarg, params, args)
#define CB_HOOK_SINCE(version, name, ptsz, action, aarg, params, args) CUresult CUDAAPI name params;
#include "hooks.def"
#undef CB_HOOK_SINCE
#undef CB_HOOK

#endif
