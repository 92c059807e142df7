/* copies.h - what the engines know of a run: its queued copies and what its
 * stream is.  struct cb_run (run.h) holds both; engine.c and the files below it
 * see only these. */
#ifndef CUBATCH_COPIES_H
#define CUBATCH_COPIES_H

#include "internal.h"

#include <limits.h>

/* The queued copies with adjacent ones merged (docs/design.md rule 18): a copy
 * that continues the one before it (same entry point and stream argument, both
 * ranges starting where the previous copy's end, each in the same allocation,
 * no marker between) makes that entry longer instead of adding one.  Entry k
 * covers the queued copies [first[k], first[k + 1]) (the last: to n of the
 * queue); its hook and stream are theirs.  Kept as copies join (run.c), so that
 * a submission finds it ready; the queue itself stays as the program made it,
 * for the copy kernel and for replaying a refused entry copy by copy. */
struct cb_merged {
    CUdeviceptr *dsts, *srcs;
    size_t *sizes;
    unsigned char *hooks;
    CUstream *streams;
    size_t *first;
    size_t n;
    /* What a copy must match to continue the last entry, kept together: where
     * its ranges end, their allocations' ends (classify.c), its entry point
     * and stream argument, the markers queued when its last copy joined. */
    struct cb_merge_tail {
        CUdeviceptr dst_next, src_next;
        uintptr_t dst_end, src_end;
        CUstream stream;
        size_t marks;
        int hook;
    } tail;
};

/* A 2D copy's rows (docs/design.md rule 19): `height` rows of the copy's size,
 * each side's rows `pitch` apart, and the memory types the program gave each
 * side (CUmemorytype), so that it can be issued again as it came.  height 0:
 * a 1D copy. */
struct cb_rows {
    size_t height, dpitch, spitch;
    unsigned char dtype, stype;
};

/* Queued copies, struct-of-arrays, so that a batch needs no copying. */
struct cb_copies {
    CUdeviceptr *dsts, *srcs;
    size_t *sizes;
    unsigned char *hooks; /* the entry point each copy came through */
    CUstream *streams;    /* the stream argument as the program passed it */
    size_t n, cap;
    int kernel_ok;        /* every copy may be executed by the copy kernel */
    int has_host;         /* some copy reads or writes host memory (the copy engines may take it) */
    unsigned char arm;    /* enum cb_arm (choose.h): what the measured choice gave these copies to */
    /* Event records queued after some of these copies (rule 11), in record
     * order; each goes out after every copy of the submission that carries it. */
    struct cb_marker *marks;
    size_t nmarks, capmarks;
    struct cb_merged merged; /* the same copies, adjacent ones merged (n 0: merging off) */
    /* Each copy's rows, from the first 2D copy of the queue's storage on
     * (NULL before: every copy 1D); n2d: the 2D copies queued, which only the
     * copy kernel and the loop take. */
    struct cb_rows *rows;
    size_t n2d;
};

/* An event record the program made on the run's stream (marker.c queues it). */
struct cb_marker {
    CUevent ev;
    CUstream stream;      /* the stream argument as the program passed it */
    unsigned int flags;   /* the record's flags (0: only default records are queued) */
    unsigned char hook;   /* the entry point it came through (a MARKER row) */
    unsigned char stands; /* its event is timing-free: a stand-in may answer for it (rule 15) */
};

/* One record of a cubatch event, made after a run's copies in place of the
 * records of two or more of its markers of timing-free events (rule 15).
 * engine.c makes and records it; event.c links those events to it, counts
 * them and the calls answered from it now (refs), and gives the event back to
 * ptds.c's pool when the count falls to 0. */
struct cb_standin {
    CUevent ev;
    CUcontext ctx;
    unsigned refs;
};
/* A copy's and a marker's hook id are kept in one byte: engine_loop.c asserts,
 * row by row, that every COPY and MARKER row of hooks.def has an id below 256
 * (they come first in the table), so that none is sent through the wrong entry
 * point. */

/* A per-thread default stream's fences (rule 4): events that order a
 * side-stream submission after the owner's earlier work (start) and the owner's
 * and the legacy stream's later work after it (join). */
struct cb_fence {
    CUevent ev_start;  /* recorded on the owner's stream when the run opened */
    CUevent ev_join;   /* recorded on the side stream after a side submission */
    int legacy_joined; /* the legacy stream already waits for ev_join */
};

/* What a run's stream is, learned when the run opened (run.c, cb_run_open);
 * sm_busy is smwork.c's answer (cb_smwork_note_busy), fence ptds.c's, orphan
 * run.c's (cb_run_orphan). */
struct cb_stream_facts {
    CUstream stream;  /* the program's handle; CU_STREAM_PER_THREAD for a per-thread stream */
    CUcontext ctx;
    int device;
    int blocking;     /* synchronizes with the legacy stream */
    int capturing;    /* CU_STREAM_CAPTURE_STATUS_NONE or not */
    int ptds;         /* a per-thread default stream: only its owner can name it */
    int legacy;       /* the legacy default stream of ctx (copy kernel only) */
    int orphan;       /* ... whose owner thread has exited */
    uintptr_t owner;  /* ... its owner thread (pthread_self()) */
    int known;        /* a created stream's flags, context and device, learned once (they never change) */
    int sm_busy;      /* at its last submission, another stream may have been running SM work
                       * that fills the GPU (smwork.c): host copies went to the copy engines */
    unsigned busy_gen, busy_left; /* smwork.c: the busy list's generation sm_busy was found at,
                                   * and how many more questions it may answer */
    struct cb_fence fence; /* per-thread stream only */
};

#endif /* CUBATCH_COPIES_H */
