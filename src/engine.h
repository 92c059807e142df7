/* engine.h - the bottom of the copy path: turning queued copies into driver
 * calls.  engine.c chooses how a run goes out and replays a refused submission;
 * each engine executes copies one way (engine_batch.c: cuMemcpyBatchAsync;
 * engine_loop.c: each copy through its own entry point); ptds.c fences a run of
 * another thread's per-thread default stream onto a side stream.
 *
 * What these files know of a run is only what is declared here (the queued
 * copies, and what its stream is); struct cb_run (run.h) holds both. */
#ifndef CUBATCH_ENGINE_H
#define CUBATCH_ENGINE_H

#include "internal.h"

/* Queued copies, struct-of-arrays, so that a batch needs no copying. */
struct cb_copies {
    CUdeviceptr *dsts, *srcs;
    size_t *sizes;
    unsigned char *hooks; /* the entry point each copy came through */
    CUstream *streams;    /* the stream argument as the program passed it */
    size_t n, cap;
};

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
    int orphan;       /* ... whose owner thread has exited */
    struct cb_fence fence; /* per-thread stream only */
};

/* ---- engine.c: a run's way out ------------------------------------------------- */
/* Whether copies may be deferred at all (version rule, CUBATCH_ENABLE) and why not. */
extern int cb_batching;
extern const char *cb_batching_reason;
/* At initialisation: decide cb_batching from the driver and the options. */
void cb_engines_init(void);
/* Submit c's copies for a stream.  owner: the calling thread owns the
 * per-thread stream (else another thread's per-thread stream goes through the
 * side stream).  Nothing is dropped: a refused batch is replayed copy by copy,
 * and the first error the program must see is returned. */
CUresult cb_engine_submit(const struct cb_copies *c, struct cb_stream_facts *f, int owner);

/* ---- engine_batch.c: cuMemcpyBatchAsync ---------------------------------------- */
/* 1 when the CUDA 13.0 batch entry point exists (else *why says what is missing). */
int cb_batch_engine_init(const char **why);
/* One batch call for copies [off, off + n) on stream; the driver's result. */
CUresult cb_batch_engine_submit(const struct cb_copies *c, size_t off, size_t n, CUstream stream);

/* ---- engine_loop.c: each copy through its own entry point ---------------------- */
/* Issue one copy through the real variant of entry point `hook`, unchanged. */
CUresult cb_issue_copy(int hook, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
/* Copies [off, off + n), each on `stream` (NULL: the program's own stream
 * argument); returns the first error. */
CUresult cb_loop_engine_submit(const struct cb_copies *c, size_t off, size_t n, CUstream stream);

/* ---- ptds.c: per-thread default streams and contexts ----------------------------- */
/* Make ctx current for the duration of a submission from any thread. */
struct cb_ctx_guard { int pushed; };
CUresult cb_ctx_enter(CUcontext ctx, struct cb_ctx_guard *g);
void cb_ctx_leave(struct cb_ctx_guard *g);
/* The owner opens a run: record ev_start on its per-thread stream. */
CUresult cb_fence_open(struct cb_stream_facts *f);
/* The run went out on the owner's stream (or never opened): give ev_start back. */
void cb_fence_release(struct cb_stream_facts *f);
/* A copy passed through on the owner's stream after the run opened: later
 * queued copies may depend on it, so ev_start moves past it. */
CUresult cb_fence_rerecord(struct cb_stream_facts *f);
/* The owner's stream waits for an earlier side submission (before its next call). */
CUresult cb_fence_owner_join(struct cb_stream_facts *f);
/* The legacy stream waits for it (right before the next legacy-ordered call). */
CUresult cb_fence_legacy_join(struct cb_stream_facts *f);
/* Side submission: begin (context current, side stream waits for ev_start),
 * then the copies go to *side (NULL: no side stream could be had), then end
 * (ev_join recorded on the side stream unless begin failed). */
CUresult cb_side_begin(struct cb_stream_facts *f, CUstream *side, struct cb_ctx_guard *g);
CUresult cb_side_end(struct cb_stream_facts *f, CUstream side, CUresult begun, struct cb_ctx_guard *g);
/* A context is gone: its helpers (side stream, events) died with it. */
void cb_forget_context_helpers(CUcontext ctx);
void cb_ptds_atfork_child(void); /* the child has no CUDA state of its own */

#endif /* CUBATCH_ENGINE_H */
