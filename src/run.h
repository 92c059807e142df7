/* run.h - a run: the copies deferred on one stream, in program order, waiting to
 * be submitted together; and the store of runs (run.c), with the hazard index
 * of each (hazard.c). */
#ifndef CUBATCH_RUN_H
#define CUBATCH_RUN_H

#include "engine.h"
#include "hazard.h"

#include <uthash.h>


struct cb_run_key {
    uintptr_t stream; /* the handle; CU_STREAM_PER_THREAD for a per-thread stream */
    uintptr_t owner;  /* pthread_self() of the owning thread for a per-thread stream, the
                       * context for a legacy stream, else 0 */
};

struct cb_run {
    UT_hash_handle hh;
    struct cb_run_key key;
    struct cb_stream_facts facts; /* learned when the run opened (cb_run_open) */
    struct cb_copies q;           /* the queued copies */
    struct cb_iset writes, reads; /* what they write and read (hazard.c) */
    int active;                   /* counted in cb_runs_active() */
    int queued;                   /* counted in cb_runs_nonempty() */
    int marked;                   /* holds markers: counted in cb_runs_marked() */
    CUresult pending; /* error of a flush made on this stream's behalf, not yet reported */
    /* the burst of copies on this stream (copy.c) */
    int warm;          /* a burst is under way: the first copy passed through, the next join the run */
    int slow;          /* copies come too slowly to batch: they pass through, each timed */
    uint64_t last_copy_ns, pace_ns; /* while slow: the last copy, the running mean gap */
    uint64_t issued;   /* copies ever queued on this stream */
    unsigned chunks;   /* chunk submissions in a row (pipelining) */
    int has_h2d;       /* the run holds a host-to-device copy */
    /* the timer's looks at this stream (flush.c, cb_flush_timer_look) */
    uint64_t opened_ns;      /* when the run opened: the age bound */
    uint64_t burst_ns;       /* when the looks began */
    uint64_t look_ns;        /* the next look; 0: none scheduled */
    uint64_t looked_ns;      /* the previous look (or when the looks began) */
    uint64_t issued_looked;  /* issued at the previous look */
};

/* A copy the program asked for, classified (copy.c). */
struct cb_copy_req {
    int hook;
    CUdeviceptr dst, src;
    size_t bytes;
    CUstream stream; /* as the program passed it */
    enum cb_stream_kind sk;
    struct cb_class dcls, scls;
    CUcontext ctx;  /* the current context (known for a legacy-stream copy) */
    int kernel_ok;  /* the copy kernel may execute it on its stream (copy.c) */
};

/* ---- event.c: the program's events cubatch knows (rule 11) ------------------------- */
struct cb_event {
    UT_hash_handle hh;
    CUevent ev;
    unsigned int flags; /* as created (CU_EVENT_INTERPROCESS: never deferred) */
    CUcontext ctx;      /* current when it was created: records only on its streams */
    struct cb_run *run; /* the run holding a marker of it; NULL: none */
};
/* All under the run lock.  NULL: unknown (its records pass through). */
struct cb_event *cb_event_find(CUevent e);
void cb_event_add(CUevent e, unsigned int flags, CUcontext ctx); /* created (or created again) */
void cb_event_drop(CUevent e);                                    /* unknown from now on */
/* The markers of q (run's) were submitted: their events are held by no run. */
void cb_event_markers_gone(const struct cb_copies *q, const struct cb_run *run);
void cb_events_atfork_child(void);

/* ---- run.c: the store of runs ------------------------------------------------------ */
/* One lock guards every run.  The copy path takes it once per copy (uncontended:
 * tens of ns); submissions happen under it too. */
void cb_runs_lock(void);
void cb_runs_unlock(void);
int cb_runs_trylock(void);    /* 0 when taken */
int cb_runs_locked_here(void); /* this thread holds it: a submission's driver call re-entered a wrapper */
/* A stream's key: the handle; (CU_STREAM_PER_THREAD, owner thread); or
 * (CU_STREAM_LEGACY, ctx) for the legacy stream of the current context ctx. */
struct cb_run_key cb_run_key_of(CUstream s, enum cb_stream_kind sk, CUcontext ctx);
/* Does the stream synchronize with the legacy stream (rule 3)? */
int cb_stream_blocking(CUstream s, enum cb_stream_kind sk);
struct cb_run *cb_run_find(const struct cb_run_key *key);   /* lock held; NULL: none */
struct cb_run *cb_run_create(const struct cb_run_key *key); /* lock held; NULL: out of memory */
void cb_run_free(struct cb_run *run);                       /* lock held */
/* Learn what the run's stream is (run->facts); -1 when a driver query failed.
 * For a per-thread stream, the owner's earlier side submission is joined and
 * ev_start recorded.  The run's age counts from now; if the stream was quiet,
 * the timer's first look is due CUBATCH_FLUSH_US from now (run->look_ns). */
int cb_run_open(struct cb_run *run, CUstream stream);
/* Queue a copy (hazards already checked); -1 out of memory (nothing queued, the
 * hazard sets possibly larger: only ever more conservative). */
int cb_run_append(struct cb_run *run, const struct cb_copy_req *rq);
int cb_run_hazard(const struct cb_run *run, const struct cb_copy_req *rq);
/* Queue an event record after the copies queued so far (rule 11; events.c);
 * -1 out of memory (nothing queued). */
int cb_run_mark(struct cb_run *run, const struct cb_marker *m);
void cb_run_clear(struct cb_run *run);      /* after a submission */
void cb_run_set_active(struct cb_run *run); /* after any change of q.n, pending, fences */
int cb_run_is_owner(const struct cb_run *run);
int cb_runs_active(void);   /* some run holds copies, a pending join or a pending error */
int cb_runs_nonempty(void); /* some run holds copies */
int cb_runs_legacy_pending(void); /* some legacy-stream run holds copies */
int cb_runs_marked(void);         /* some run holds markers */
/* Each run, in turn (lock held); the current one may be freed. */
#define CB_RUNS_EACH(run, tmp) HASH_ITER(hh, cb_run_table, run, tmp)
extern struct cb_run *cb_run_table;
void cb_forget_context_runs(CUcontext ctx); /* lock held: its runs' events died with it */
void cb_runs_atfork_child(void);           /* the child's store is empty, its lock new */

#endif /* CUBATCH_RUN_H */
