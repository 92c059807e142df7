/* copies.h - what the engines know of a run: its queued copies and what its
 * stream is.  struct cb_run (run.h) holds both; engine.c and the files below it
 * see only these. */
#ifndef CUBATCH_COPIES_H
#define CUBATCH_COPIES_H

#include "internal.h"

#include <limits.h>

/* Queued copies, struct-of-arrays, so that a batch needs no copying. */
struct cb_copies {
    CUdeviceptr *dsts, *srcs;
    size_t *sizes;
    unsigned char *hooks; /* the entry point each copy came through */
    CUstream *streams;    /* the stream argument as the program passed it */
    size_t n, cap;
    int kernel_ok;        /* every copy may be executed by the copy kernel */
};
/* A copy's hook id is kept in one byte (run.c stores it so): one row of hooks.def
 * past 256 would send copies through the wrong entry point, silently.  Widen
 * `hooks` here and the store in run.c together when this fails. */
_Static_assert(CB_HOOK_COUNT <= UCHAR_MAX + 1, "every hook id of hooks.def fits cb_copies.hooks (unsigned char)");

/* A per-thread default stream's fences (rule 4): events that order a
 * side-stream submission after the owner's earlier work (start) and the owner's
 * and the legacy stream's later work after it (join). */
struct cb_fence {
    CUevent ev_start;  /* recorded on the owner's stream when the run opened */
    CUevent ev_join;   /* recorded on the side stream after a side submission */
    int legacy_joined; /* the legacy stream already waits for ev_join */
};

/* What a run's stream is, learned when the run opened (run.c). */
struct cb_stream_facts {
    CUstream stream;  /* the program's handle; CU_STREAM_PER_THREAD for a per-thread stream */
    CUcontext ctx;
    int device;
    int blocking;     /* synchronizes with the legacy stream */
    int capturing;    /* CU_STREAM_CAPTURE_STATUS_NONE or not */
    int ptds;         /* a per-thread default stream: only its owner can name it */
    int legacy;       /* the legacy default stream of ctx (copy kernel only) */
    int orphan;       /* ... whose owner thread has exited */
    struct cb_fence fence; /* per-thread stream only */
};

#endif /* CUBATCH_COPIES_H */
