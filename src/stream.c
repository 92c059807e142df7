/* stream.c - which stream a handle names (stream.h); it calls only the driver. */
#include "stream.h"

int cb_stream_blocking(CUstream s, enum cb_stream_kind sk)
{
    if (sk != CB_SK_CREATED)
        return 1; /* the legacy stream, and per-thread streams (they synchronize with it) */
    unsigned int flags = 0;
    return !cb_drv.cuStreamGetFlags || cb_drv.cuStreamGetFlags(s, &flags) != CUDA_SUCCESS ||
           !(flags & CU_STREAM_NON_BLOCKING); /* when unsure: blocking (more flushes, never fewer) */
}

int cb_stream_nonblocking(CUstream s) { return !cb_stream_blocking(s, CB_SK_CREATED); }
