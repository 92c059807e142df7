/* run.h - a run: the copies deferred on one stream, in program order, waiting to
 * be submitted together.  Shared by queue.c (collecting, hazards, triggers) and
 * submit.c (turning a run into driver calls). */
#ifndef CUBATCH_RUN_H
#define CUBATCH_RUN_H

#include "internal.h"

#include <uthash.h>

/* Disjoint half-open address intervals, sorted: the hazard index of a run. */
struct cb_ival { uintptr_t lo, hi; };
struct cb_iset { struct cb_ival *v; size_t n, cap; };

struct cb_run_key {
    uintptr_t stream; /* the handle; CU_STREAM_PER_THREAD for a per-thread stream */
    uintptr_t owner;  /* pthread_self() of the owning thread for a per-thread stream, else 0 */
};

struct cb_run {
    UT_hash_handle hh;
    struct cb_run_key key;
    int ptds;           /* a per-thread default stream: only its owner may submit to it */
    int orphan;         /* its owner thread has exited */
    int blocking;       /* synchronizes with the legacy stream */
    int active;         /* counted in cb_active (see queue.c) */
    int queued;         /* counted in cb_nonempty */
    CUcontext ctx;
    int device;
    /* the queued copies, struct-of-arrays so a batch needs no copying */
    CUdeviceptr *dsts, *srcs;
    size_t *sizes;
    unsigned char *hooks;  /* entry point each copy came through */
    CUstream *streams;     /* stream argument as the program passed it */
    size_t n, cap;
    struct cb_iset writes, reads;
    uint64_t opened_ns; /* when the first copy was queued */
    size_t seen_n;      /* n at the timer's previous look (flusher.c) */
    uint64_t last_copy_ns, pace_ns; /* the stream's copy pace (queue.c, run_pace) */
    unsigned idle_looks;/* consecutive looks that found n unchanged */
    CUevent ev_start;   /* per-thread stream: recorded on it when the run opened */
    CUevent ev_join;    /* per-thread stream: side-submitted, owner must wait on it */
    int legacy_joined;  /* the legacy stream already waits on ev_join */
    CUresult pending;   /* error of a flush made on this stream's behalf, not yet reported */
};

/* submit.c */
CUresult cb_submit(struct cb_run *run, int owner);  /* run->n > 0; empties nothing */
CUresult cb_owner_join(struct cb_run *run);         /* owner waits for a side submission */
CUresult cb_legacy_join(struct cb_run *run);        /* the legacy stream waits for it */
CUresult cb_ptds_open(struct cb_run *run);          /* record ev_start on the owner's stream */
void cb_ptds_release(struct cb_run *run);           /* give ev_start back */
void cb_submit_forget_context(CUcontext ctx);
void cb_submit_atfork_child(void);

/* Make ctx current for the duration of a submission from any thread. */
struct cb_ctx_guard { int pushed; };
CUresult cb_ctx_enter(CUcontext ctx, struct cb_ctx_guard *g);
void cb_ctx_leave(struct cb_ctx_guard *g);

#endif
