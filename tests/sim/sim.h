/* Simulated CUDA driver (libcuda.so.1) for cubatch's test suite: internal declarations.
 * See tests/sim/README.md.  Everything here is hidden (the library exports only
 * names matching ^(cu|cusim_), see local.mk). */
#ifndef CUSIM_SIM_H
#define CUSIM_SIM_H

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <uthash.h>

#include "copy_kernel.h" /* struct cb_kcopy / cb_kparams: cubatch's copy kernel (src/) */

/* ---- configuration (environment, read at first use and by cusim_reset_counts) ---- */
enum { ORDER_REVERSE, ORDER_FORWARD, ORDER_SHUFFLE };
struct fail_rule { char name[96]; unsigned long nth; int code; };
struct sim_config {
    int driver_version;
    int devices;
    int batch_order;
    size_t max_copy; /* CUSIM_MAX_COPY: a copy or batch entry larger than this is refused (0: none) */
    int deps_reversed;             /* CUSIM_DEP_ORDER=reverse: a node's last dependency runs first */
    unsigned long long seed;
    char missing[64][96];
    int nmissing;
    struct fail_rule fail[64];
    int nfail;
    int logfd;
    int registered_alias;          /* CUSIM_REGISTERED_ALIAS: registered memory gets another device address */
    /* CUSIM_COST: what executing each kind of work costs on the simulated GPU
     * clock (ns), which timing events read; all 0 by default (elapsed 0).
     * cold: more per entry of a batch call that did not come right after
     * another batch call of the same thread (the real driver's call costs more
     * per copy after the program's own work: docs/design.md, section 8) */
    struct sim_cost { unsigned long long copy, batch, entry, alloc, kernel, kcopy, cold; } cost;
};
extern struct sim_config sim_cfg;

/* ---- the driver-wide lock ---- */
extern pthread_mutex_t sim_mu;
extern pthread_cond_t sim_cv;

/* ---- one exported call in flight: counted, fault-injected, logged ---- */
struct call {
    const char *name;
    CUstream stream;
    int has_stream;
    CUresult rc;
    int after_batch;               /* the thread's previous call was a batch call */
    size_t kvlen;
    char kv[400];
};
/* Lock, count, apply CUSIM_FAIL.  Returns 1 (lock released, call logged) if the call
 * must return c->rc right away. */
int sim_begin(struct call *c, const char *name, int has_stream, CUstream stream);
/* Log, unlock, return rc. */
CUresult sim_end(struct call *c, CUresult rc);
void sim_kv(struct call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sim_logline(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sim_error_uaf(const char *what, const void *p, size_t n);
int sim_stub(const char *name);
int sim_is_missing(const char *base);

/* cuGetProcAddress table lookup (procs.c): 0 found, 1 not found, 2 version too old. */
int sim_proc_lookup(const char *sym, int version, int per_thread, void **pfn);
int sim_driver_version(void);      /* sim_cfg.driver_version (api13x.c; procs.c has no sim.h) */

/* ---- contexts, streams, events ---- */
enum { ST_LEGACY, ST_PTDS, ST_USER };
struct sim_capture;
struct sim_ctx;

struct sim_stream {
    int kind;
    unsigned flags;
    int prio;
    int alive;
    unsigned long long id;
    struct sim_ctx *ctx;
    uint64_t last;                 /* id of the last node enqueued (0: none) */
    struct sim_capture *cap;       /* capture this stream belongs to, or NULL */
    struct sim_stream *next;       /* in ctx->streams */
    uint64_t compute_last;         /* the last cusim_compute launch (0: none) */
    unsigned long compute_polls;   /* queries that still find it running */
};

struct sim_ctx {
    int dev;
    unsigned flags;
    int alive;
    CUresult sticky;               /* sticky error (a copy-kernel fault: CUDA_ERROR_ILLEGAL_ADDRESS), 0: none */
    int primary;
    int refcount;                  /* primary: retain count */
    unsigned long long id;
    struct sim_stream *legacy;
    struct sim_stream *streams;    /* every stream ever created in it (legacy, ptds, user) */
    struct sim_ctx *next;
};

struct sim_event {
    unsigned flags;
    unsigned long long stamp_ns;   /* the simulated GPU clock when its last record executed */
    uint64_t node;                 /* node that completes it, 0 = complete / never recorded */
    struct sim_capture *cap;       /* recorded during this capture */
    struct sim_ctx *ctx;
    struct sim_stream *gate_s;     /* recorded on this stream behind its cusim_compute launch gate, */
    uint64_t gate;                 /* ... which a query finds running while the stream's polls last */
};

/* graphs: a linear list of captured operations */
enum { GOP_COPY, GOP_MEMSET, GOP_HOST, GOP_NOP, GOP_KERNEL, GOP_COPY2D };
struct gop {
    int kind;
    /* GOP_COPY2D: rows rows of n bytes, row r from src + r * spitch to dst + r * dpitch */
    size_t rows, dpitch, spitch;
    /* GOP_KERNEL: the launch's descriptors (owned: deep-copied with the graph) */
    struct cb_kcopy *kc;
    size_t nkc;
    const char *kname;
    void *dst;
    const void *src;
    size_t n;
    unsigned val;
    int elsize;
    CUhostFn fn;
    void *ud;
};
struct sim_graph { struct gop *ops; size_t nops, cap; };
struct sim_capture {
    unsigned long long id;
    int status;                    /* CU_STREAM_CAPTURE_STATUS_ACTIVE / _INVALIDATED */
    int mode;
    pthread_t thread;
    struct sim_stream *origin;
    struct sim_graph *graph;
    struct sim_capture *next;      /* all captures stay allocated: events may point at them */
    struct sim_graph *target;      /* cuStreamBeginRecaptureToGraph: the caller's graph, whose ops
                                    * the captured ones replace at cuStreamEndCapture (else NULL) */
    int cig;                       /* cuStreamBeginCaptureToCig: ended by cuStreamEndCaptureToCig only */
};

/* handle registry: which pointers are live handles of which type */
enum { H_CTX = 1, H_STREAM, H_EVENT, H_GRAPH, H_GEXEC, H_MODULE, H_FUNC };
void sim_handle_add(void *p, int type);
void sim_handle_del(void *p);
int sim_handle_ok(const void *p, int type);
/* CUSIM_HANDLE_REUSE=1 (reuse.c): a dead created context of list to make anew, a
 * gone stream (unlinked from its context's list, zeroed) to create again; NULL: none */
int sim_handle_reuse(void);
struct sim_ctx *sim_reuse_ctx(struct sim_ctx *list);
struct sim_stream *sim_reuse_stream(struct sim_ctx *list);

/* ---- memory registry ---- */
enum { MEM_DEVICE = 1, MEM_PINNED, MEM_REGISTERED, MEM_MANAGED };
struct sim_alloc {
    char *base;
    size_t size;
    int kind;
    int async;                     /* from cuMemAllocAsync */
    unsigned flags;
    struct sim_ctx *ctx;
    unsigned long long buffer_id;
    int alias;                     /* MEM_REGISTERED under CUSIM_REGISTERED_ALIAS: device address = base + SIM_ALIAS_OFFSET */
};

/* Under CUSIM_REGISTERED_ALIAS=1 registered host memory is seen by the device at
 * host address + SIM_ALIAS_OFFSET (above every user-space address on x86-64/aarch64). */
#define SIM_ALIAS_OFFSET 0x0100000000000000ull
struct sim_alloc *sim_mem_find(const void *p);               /* live allocation holding p */
int sim_mem_in_quarantine(const void *p, size_t n);          /* p..p+n touches freed memory */
struct sim_alloc *sim_mem_add(void *base, size_t size, int kind, struct sim_ctx *ctx, unsigned flags);
void sim_mem_remove(struct sim_alloc *a, int quarantine);     /* drop from registry (and free memory) */
/* A context's end: every allocation made in it goes (registered memory is unregistered). */
void sim_mem_drop_ctx(const struct sim_ctx *ctx);
int sim_mem_live_id(const void *p, size_t n, unsigned long long id); /* range still in buffer id */
/* p is an alias device address of live registered memory: that allocation (*host: the host
 * address), else NULL. */
struct sim_alloc *sim_mem_find_alias(const void *p, char **host);
/* The device pointer of host address p in registered/pinned allocation a. */
uintptr_t sim_mem_devptr(const struct sim_alloc *a, const void *p);

/* ---- work nodes ---- */
enum { N_NOP, N_COPY, N_MEMSET, N_HOST, N_CALLBACK, N_BATCH, N_FREE, N_KERNEL, N_COMPUTE, N_COPY2D };
struct bentry {
    char *dst;
    const char *src;
    size_t n;
    char *staged;
    unsigned long long dst_id, src_id;   /* buffer ids to re-check at execution (0: none) */
};
struct node {
    uint64_t id;
    UT_hash_handle hh;
    int kind;
    int running;
    struct sim_ctx *ctx;
    CUstream handle;               /* for stream callbacks */
    uint64_t *deps;
    size_t ndeps, dpos;
    /* copy / memset */
    char *dst;
    const char *src;
    size_t n;
    char *staged;
    unsigned long long dst_id, src_id;
    unsigned val;
    int elsize;
    /* 2D copy: n bytes per row, rows rows, row r from src + r * spitch to dst + r * dpitch;
     * staged (a pageable source read at the call): the rows packed, n bytes apart; the ids
     * are re-checked over each side's footprint, (rows - 1) * pitch + n bytes */
    size_t rows, dpitch, spitch;
    /* host function / callback */
    CUhostFn fn;
    CUstreamCallback cb;
    void *ud;
    /* batch */
    struct bentry *ents;
    size_t nents;
    int order;
    int cold;                      /* its call did not follow another batch call (CUSIM_COST cold) */
    /* free */
    void *fptr;
    /* copy kernel: descriptors copied at launch (order: as batches) */
    struct cb_kcopy *kc;
    size_t nkc;
    const char *kname;
    /* an event record: the event whose stamp it sets when it executes */
    struct sim_event *stamp;
};
struct node *sim_node_new(int kind);
/* Give the node its stream-order dependencies, register it, make it s->last. */
uint64_t sim_enqueue(struct sim_stream *s, struct node *n);
/* A node after the last work of every stream of ctx, on no stream (cuCtxRecordEvent). */
uint64_t sim_enqueue_ctx(struct sim_ctx *ctx, struct node *n);
void sim_node_add_dep(struct node *n, uint64_t dep);
void sim_run(uint64_t id);                 /* run node id and everything it depends on */
void sim_run_ctx(struct sim_ctx *ctx);     /* run every pending node of ctx (NULL: all) */
void sim_run_dev(int dev);
int sim_node_pending(uint64_t id);
unsigned long sim_pending_count(void);

/* ---- api.c's operations, for the entry points of api13x.c (CUDA 13.1 and later) ---- */
/* A stream-ordered copy as cuMemcpyAsync's (stage_src: the source is read at the call, whatever it is). */
CUresult sim_copy_async(struct call *c, void *dst, const void *src, size_t n, CUstream h, int ptsz, int stage_src);
/* A host function in stream order, as cuLaunchHostFunc's. */
CUresult sim_host_func(struct call *c, CUstream h, int ptsz, CUhostFn fn, void *ud);
CUresult sim_stream_sync(CUstream h, int ptsz);               /* as cuStreamSynchronize */
/* A capture as cuStreamBeginCapture_v2's, into target (a recapture) or a CIG one. */
CUresult sim_begin_capture(CUstream h, int ptsz, CUstreamCaptureMode mode, struct sim_graph *target, int cig);
/* The end of a CIG capture: its work is enqueued on the stream (the command list submitted). */
CUresult sim_end_capture_cig(struct call *c, CUstream h, int ptsz);

extern unsigned long sim_errors_n;
extern unsigned long sim_kernel_copies_n;
unsigned long long sim_next_id(void);

#endif
