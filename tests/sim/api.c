/* Simulated CUDA driver: the exported cu* entry points.  Each one takes the driver lock
 * (sim_begin), is counted, may be failed by CUSIM_FAIL, and is logged (sim_end). */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CUresult CUDAAPI cuGetProcAddress_v2_ptsz(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus);

#define BEGIN(name) struct call C_; if (sim_begin(&C_, name, 0, NULL)) return C_.rc
#define BEGIN_S(name, h) struct call C_; if (sim_begin(&C_, name, 1, (h))) return C_.rc
#define END(rc) return sim_end(&C_, (rc))
#define KV(...) sim_kv(&C_, __VA_ARGS__)

#define MAX_DEVICES 16

static int inited;
static struct sim_ctx *ctx_list;
static struct sim_ctx *primaries[MAX_DEVICES];
static struct sim_capture *captures;

/* Modules: any fatbin image loads as "cubatch's copy kernel" (its tiers' entry points and
 * their _rows twins, which also take 2D copies), plus "cusim_compute", a stand-in for the
 * program's own compute (below).  They are never freed (a handle stays recognisable after
 * unload), only marked dead. */
struct sim_module;
struct sim_func {
    struct sim_module *mod;
    const char *name;
    unsigned cap;                  /* descriptors the tier's parameter holds */
    int rows;                      /* a _rows twin: takes 2D pairs (copy_kernel.h) */
};
static const struct { const char *name; unsigned cap; } copy_kernels[] = { CB_KTIERS(CB_KTIER_ROW) };
static const struct { const char *name; unsigned cap; } copy_kernels_rows[] = { CB_KTIERS(CB_KTIER_ROWS_ROW) };
#define NKERNELS (sizeof copy_kernels / sizeof copy_kernels[0])
#define COMPUTE_NAME "cusim_compute"
struct sim_module {
    struct sim_ctx *ctx;
    int alive;
    struct sim_func fn[2 * NKERNELS]; /* the tiers, then their _rows twins */
    struct sim_func compute;
    struct sim_module *next;
};
static struct sim_module *modules;

static __thread CUcontext tls_stack[64];
static __thread int tls_n;
struct ptds_ent { struct sim_ctx *ctx; struct sim_stream *s; };
static __thread struct ptds_ent tls_ptds[32];
static __thread int tls_nptds;

/* ------------------------------------------------------------------ helpers */

static struct sim_stream *stream_new(struct sim_ctx *ctx, int kind, unsigned flags, int prio)
{
    struct sim_stream *s = kind == ST_USER ? sim_reuse_stream(ctx_list) : NULL; /* a gone one's handle (reuse.c) */
    if (!s)
        s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->kind = kind;
    s->flags = flags;
    s->prio = prio;
    s->alive = 1;
    s->id = sim_next_id();
    s->ctx = ctx;
    s->next = ctx->streams;
    ctx->streams = s;
    if (kind == ST_USER)
        sim_handle_add(s, H_STREAM);
    return s;
}

static void ctx_init_streams(struct sim_ctx *c)
{
    c->legacy = stream_new(c, ST_LEGACY, 0, 0);
}

static struct sim_ctx *ctx_new(int dev, unsigned flags, int primary)
{
    struct sim_ctx *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    c->dev = dev;
    c->flags = flags;
    c->alive = 1;
    c->primary = primary;
    c->id = sim_next_id();
    ctx_init_streams(c);
    c->next = ctx_list;
    ctx_list = c;
    sim_handle_add(c, H_CTX);
    return c;
}

/* Destroy (or, for a primary context, deactivate) a context: its pending work still runs,
 * then its streams, modules and memory die (freed memory is quarantined: a later use of
 * it, from any context, is detected). */
static void ctx_teardown(struct sim_ctx *c)
{
    sim_run_ctx(c);
    sim_mem_drop_ctx(c);
    c->sticky = CUDA_SUCCESS; /* a new (or reset primary) context starts clean */
    for (struct sim_module *m = modules; m; m = m->next)
        if (m->ctx == c)
            m->alive = 0; /* modules die with their context */
    for (struct sim_stream *s = c->streams; s; s = s->next) {
        if (s->alive && s->kind == ST_USER)
            sim_handle_del(s);
        s->alive = 0;
        s->cap = NULL;
    }
    c->alive = 0;
}

static struct sim_ctx *cur_ctx(void)
{
    return tls_n > 0 ? (struct sim_ctx *)tls_stack[tls_n - 1] : NULL;
}

static CUresult need_init(void)
{
    return inited ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

static CUresult need_ctx(struct sim_ctx **out)
{
    struct sim_ctx *c;
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    c = cur_ctx();
    if (!c || !c->alive)
        return CUDA_ERROR_INVALID_CONTEXT;
    *out = c;
    return CUDA_SUCCESS;
}

static CUresult check_dev(CUdevice d)
{
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (d < 0 || d >= sim_cfg.devices)
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

static struct sim_stream *ptds_for(struct sim_ctx *c)
{
    for (int i = 0; i < tls_nptds; i++)
        if (tls_ptds[i].ctx == c) {
            if (!tls_ptds[i].s->alive)
                tls_ptds[i].s = stream_new(c, ST_PTDS, 0, 0);
            return tls_ptds[i].s;
        }
    struct sim_stream *s = stream_new(c, ST_PTDS, 0, 0);
    if (tls_nptds < (int)(sizeof tls_ptds / sizeof tls_ptds[0]))
        tls_ptds[tls_nptds++] = (struct ptds_ent){ c, s };
    else
        tls_ptds[0] = (struct ptds_ent){ c, s };
    return s;
}

static CUresult resolve_stream(CUstream h, int ptsz, struct sim_stream **out)
{
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        struct sim_ctx *c;
        CUresult rc = need_ctx(&c);
        if (rc)
            return rc;
        int per = h == CU_STREAM_PER_THREAD || (h == NULL && ptsz);
        *out = per ? ptds_for(c) : c->legacy;
        return CUDA_SUCCESS;
    }
    if (!sim_handle_ok(h, H_STREAM))
        return CUDA_ERROR_INVALID_HANDLE;
    struct sim_stream *s = (struct sim_stream *)h;
    if (!s->alive || !s->ctx->alive)
        return CUDA_ERROR_INVALID_HANDLE;
    *out = s;
    return CUDA_SUCCESS;
}

static int is_blocking(const struct sim_stream *s)
{
    return s->kind != ST_LEGACY && !(s->flags & CU_STREAM_NON_BLOCKING);
}

/* ---- what a capture refuses (tests/data/capture-legal-h200.txt: the real driver's answers) */

/* How a call can collide with a capture in progress; a call is any combination.  Every
 * call that names a stream also meets the legacy rule (capture_refuses). */
enum {
    /* May synchronize implicitly, allocate, free or load: refused while a GLOBAL capture,
     * or a THREAD_LOCAL capture begun by the calling thread, is active (RELAXED allows it). */
    CAP_UNSAFE = 1u << 0,
    /* Waits for the named stream, or reads what the driver will not read from one that
     * captures: refused on a capturing stream (or, given a context, on a context that has
     * one) in every mode, from every thread. */
    CAP_NOT_CAPTURING = 1u << 1,
    /* Asks for the capture status: the legacy rule refuses it but leaves the capture valid. */
    CAP_PEEK = 1u << 2,
};

static int capture_active(const struct sim_capture *k)
{
    return k && k->status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

/* The capture is broken for good: its later work and its end fail (_INVALIDATED). */
static void capture_invalidate(struct sim_capture *k)
{
    if (capture_active(k))
        k->status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
}

/* Any call naming the legacy stream while a blocking stream of its context captures:
 * the legacy stream would depend on (or be depended on by) the capture, which it cannot
 * join. */
static CUresult legacy_implicit(struct sim_stream *s, int peek)
{
    int hit = 0;
    if (s->kind != ST_LEGACY)
        return CUDA_SUCCESS;
    for (struct sim_stream *o = s->ctx->streams; o; o = o->next)
        if (is_blocking(o) && capture_active(o->cap)) {
            if (!peek)
                capture_invalidate(o->cap);
            hit = 1;
        }
    return hit ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
}

/* s (if any) or a stream of ctx (if any) is capturing: the call would wait for work
 * that is not enqueued, only recorded. */
static CUresult not_capturing(struct sim_stream *s, struct sim_ctx *ctx)
{
    int hit = 0;
    if (s && s->cap) {
        capture_invalidate(s->cap);
        hit = 1;
    }
    for (struct sim_stream *o = ctx ? ctx->streams : NULL; o; o = o->next)
        if (o->cap) {
            capture_invalidate(o->cap);
            hit = 1;
        }
    return hit ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

/* A potentially unsafe call: every capture that forbids it from this thread ends
 * invalidated, wherever (any context) it runs. */
static CUresult unsafe_call(void)
{
    int hit = 0;
    for (struct sim_ctx *x = ctx_list; x; x = x->next)
        for (struct sim_stream *o = x->streams; o; o = o->next) {
            struct sim_capture *k = o->cap;
            if (!capture_active(k))
                continue;
            if (k->mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
                (k->mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && pthread_equal(k->thread, pthread_self()))) {
                capture_invalidate(k);
                hit = 1;
            }
        }
    return hit ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

/* Does a capture in progress refuse this call (what: CAP_*; s: the stream it names, or
 * NULL; ctx: the context it waits for, or NULL) from this thread now?  If so, the
 * capture is invalidated (but for a CAP_PEEK call) and the driver's error returned. */
static CUresult capture_refuses(unsigned what, struct sim_stream *s, struct sim_ctx *ctx)
{
    CUresult rc = s ? legacy_implicit(s, (what & CAP_PEEK) != 0) : CUDA_SUCCESS;
    if (!rc && (what & CAP_NOT_CAPTURING))
        rc = not_capturing(s, ctx);
    if (!rc && (what & CAP_UNSAFE))
        rc = unsafe_call();
    return rc;
}

/* Before putting work on s.  *capturing = 1: the op goes into s->cap->graph. */
static CUresult stream_use(struct sim_stream *s, int *capturing)
{
    *capturing = 0;
    if (s->ctx->sticky) /* a faulted context takes no more work */
        return s->ctx->sticky;
    if (s->cap) {
        if (s->cap->status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
            return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        *capturing = 1;
        return CUDA_SUCCESS;
    }
    return capture_refuses(0, s, NULL);
}

static struct cb_kcopy *kcopy_dup(const void *src, size_t n)
{
    struct cb_kcopy *kc = malloc((n ? n : 1) * sizeof *kc);
    if (!kc)
        abort();
    if (n)
        memcpy(kc, src, n * sizeof *kc);
    return kc;
}

/* Append a copy of op (a kernel op's descriptors are copied too: each graph owns its own). */
static void graph_add(struct sim_graph *g, const struct gop *op)
{
    if (g->nops == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 16;
        struct gop *no = realloc(g->ops, nc * sizeof *no);
        if (!no)
            abort();
        g->ops = no;
        g->cap = nc;
    }
    g->ops[g->nops] = *op;
    if (op->kind == GOP_KERNEL)
        g->ops[g->nops].kc = kcopy_dup(op->kc, op->nkc);
    g->nops++;
}

static void graph_free_ops(struct sim_graph *g)
{
    for (size_t i = 0; i < g->nops; i++)
        free(g->ops[i].kc);
    free(g->ops);
    g->ops = NULL;
    g->nops = g->cap = 0;
}

/* ------------------------------------------------------------------ pointer classification */

enum { SIDE_DEVICE, SIDE_HOST, SIDE_ANY };
struct ptrinfo {
    struct sim_alloc *a;   /* NULL: pageable host memory */
    unsigned long long id;
};

/* The host address behind an alias device address of registered memory
 * (CUSIM_REGISTERED_ALIAS); any other address unchanged. */
static void *unalias(const void *p)
{
    char *h;
    return sim_mem_find_alias(p, &h) ? h : (void *)(uintptr_t)p;
}

static CUresult classify(const void *p, size_t n, int side, struct ptrinfo *pi, const char *what)
{
    struct sim_alloc *a = sim_mem_find(p);
    pi->a = NULL;
    pi->id = 0;
    if (a) {
        int devkind = a->kind == MEM_DEVICE || a->kind == MEM_MANAGED;
        int inb = (uintptr_t)p + n <= (uintptr_t)a->base + a->size;
        if (side == SIDE_DEVICE && !devkind)
            return CUDA_ERROR_INVALID_VALUE;
        if (!inb)
            return devkind ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS; /* host: pageable path */
        pi->a = a;
        pi->id = a->buffer_id;
        return CUDA_SUCCESS;
    }
    if (sim_mem_in_quarantine(p, n)) {
        sim_error_uaf(what, p, n);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (side == SIDE_DEVICE || p == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ copies and memsets */

/* One copy on stream h.  sync: the call returns only after the copy is done (synchronous
 * API).  A pageable source is staged at call time; a pageable destination makes the copy
 * synchronous; everything else is deferred. */
static CUresult copy_op_ex(struct call *c, void *dst, const void *src, size_t n, CUstream h, int ptsz,
                           int dside, int sside, int sync, int stage)
{
    struct sim_stream *s;
    struct ptrinfo di, si;
    int capturing;
    CUresult rc;
    sim_kv(c, "dst=%p src=%p n=%zu", dst, src, n);
    if ((rc = resolve_stream(h, ptsz, &s)))
        return rc;
    if (n == 0)
        return CUDA_SUCCESS;
    if (sim_cfg.max_copy && n > sim_cfg.max_copy)
        return CUDA_ERROR_INVALID_VALUE;
    dst = unalias(dst);
    src = unalias(src);
    if ((rc = classify(dst, n, dside, &di, "copy-dst")))
        return rc;
    if ((rc = classify(src, n, sside, &si, "copy-src")))
        return rc;
    if ((rc = stream_use(s, &capturing)))
        return rc;
    if (capturing) {
        if (sync) {
            s->cap->status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
        struct gop g = { .kind = GOP_COPY, .dst = dst, .src = src, .n = n };
        graph_add(s->cap->graph, &g);
        sim_kv(c, "captured=1");
        return CUDA_SUCCESS;
    }
    struct node *nd = sim_node_new(N_COPY);
    nd->dst = dst;
    nd->src = src;
    nd->n = n;
    nd->dst_id = di.id;
    nd->src_id = si.id;
    if (!si.a || stage) { /* stage: read at the call whatever the source (DURING_API_CALL) */
        nd->staged = malloc(n);
        if (!nd->staged)
            abort();
        memcpy(nd->staged, src, n);
        sim_kv(c, "staged=1");
    }
    uint64_t id = sim_enqueue(s, nd);
    if (sync || !di.a) {
        sim_run(id);
        sim_kv(c, "sync=1");
        return s->ctx->sticky;
    }
    return CUDA_SUCCESS;
}
static CUresult copy_op(struct call *c, void *dst, const void *src, size_t n, CUstream h, int ptsz,
                        int dside, int sside, int sync)
{
    return copy_op_ex(c, dst, src, n, h, ptsz, dside, sside, sync, 0);
}

static CUresult memset_op(struct call *c, CUdeviceptr d, unsigned val, int elsize, size_t count, CUstream h,
                          int ptsz, int sync)
{
    struct sim_stream *s;
    struct ptrinfo di;
    int capturing;
    CUresult rc;
    void *dst = (void *)(uintptr_t)d;
    sim_kv(c, "dst=%p val=%u elsize=%d count=%zu", dst, val, elsize, count);
    dst = unalias(dst);
    if ((rc = resolve_stream(h, ptsz, &s)))
        return rc;
    if (count == 0)
        return CUDA_SUCCESS;
    if ((uintptr_t)dst % (uintptr_t)elsize)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = classify(dst, count * (size_t)elsize, SIDE_ANY, &di, "memset")))
        return rc;
    if (!di.a)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = stream_use(s, &capturing)))
        return rc;
    if (capturing) {
        if (sync) {
            s->cap->status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
        struct gop g = { .kind = GOP_MEMSET, .dst = dst, .n = count, .val = val, .elsize = elsize };
        graph_add(s->cap->graph, &g);
        sim_kv(c, "captured=1");
        return CUDA_SUCCESS;
    }
    struct node *nd = sim_node_new(N_MEMSET);
    nd->dst = dst;
    nd->n = count;
    nd->val = val;
    nd->elsize = elsize;
    nd->dst_id = di.id;
    uint64_t id = sim_enqueue(s, nd);
    if (sync) {
        sim_run(id);
        return s->ctx->sticky;
    }
    return CUDA_SUCCESS;
}

#define P(x) ((void *)(uintptr_t)(x))

/* async copies */
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{ BEGIN_S("cuMemcpyAsync", h); END(copy_op(&C_, P(dst), P(src), n, h, 0, SIDE_ANY, SIDE_ANY, 0)); }
CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{ BEGIN_S("cuMemcpyAsync_ptsz", h); END(copy_op(&C_, P(dst), P(src), n, h, 1, SIDE_ANY, SIDE_ANY, 0)); }
CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream h)
{ BEGIN_S("cuMemcpyHtoDAsync_v2", h); END(copy_op(&C_, P(dst), src, n, h, 0, SIDE_DEVICE, SIDE_HOST, 0)); }
CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream h)
{ BEGIN_S("cuMemcpyHtoDAsync_v2_ptsz", h); END(copy_op(&C_, P(dst), src, n, h, 1, SIDE_DEVICE, SIDE_HOST, 0)); }
CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream h)
{ BEGIN_S("cuMemcpyDtoHAsync_v2", h); END(copy_op(&C_, dst, P(src), n, h, 0, SIDE_HOST, SIDE_DEVICE, 0)); }
CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream h)
{ BEGIN_S("cuMemcpyDtoHAsync_v2_ptsz", h); END(copy_op(&C_, dst, P(src), n, h, 1, SIDE_HOST, SIDE_DEVICE, 0)); }
CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{ BEGIN_S("cuMemcpyDtoDAsync_v2", h); END(copy_op(&C_, P(dst), P(src), n, h, 0, SIDE_DEVICE, SIDE_DEVICE, 0)); }
CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{ BEGIN_S("cuMemcpyDtoDAsync_v2_ptsz", h); END(copy_op(&C_, P(dst), P(src), n, h, 1, SIDE_DEVICE, SIDE_DEVICE, 0)); }
/* A peer copy names the context of each side: both must be live contexts, and device
 * memory on a side must be memory of that context's device (unified addresses let the
 * copy reach any context of that device). */
static CUresult peer_sides(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc)
{
    const CUdeviceptr p[2] = { dst, src };
    const CUcontext c[2] = { dc, sc };
    for (int i = 0; i < 2; i++) {
        if (!inited)
            return CUDA_ERROR_NOT_INITIALIZED;
        if (!sim_handle_ok(c[i], H_CTX) || !((struct sim_ctx *)c[i])->alive)
            return CUDA_ERROR_INVALID_CONTEXT;
        struct sim_alloc *a = sim_mem_find(P(p[i]));
        if (a && a->kind == MEM_DEVICE && a->ctx && a->ctx->dev != ((struct sim_ctx *)c[i])->dev)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
#define PEER_COPY(begin, h, ptsz, sync)                                                             \
    {                                                                                               \
        begin;                                                                                      \
        CUresult rc_ = peer_sides(dst, dc, src, sc);                                                \
        if (rc_) {                                                                                  \
            KV("dst=%p src=%p n=%zu", P(dst), P(src), n);                                           \
            END(rc_);                                                                               \
        }                                                                                           \
        END(copy_op(&C_, P(dst), P(src), n, h, ptsz, SIDE_DEVICE, SIDE_DEVICE, sync));              \
    }
CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream h)
PEER_COPY(BEGIN_S("cuMemcpyPeerAsync", h), h, 0, 0)
CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream h)
PEER_COPY(BEGIN_S("cuMemcpyPeerAsync_ptsz", h), h, 1, 0)

/* synchronous copies: legacy stream (or the per-thread stream for _ptds) */
CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ BEGIN("cuMemcpy"); END(copy_op(&C_, P(dst), P(src), n, NULL, 0, SIDE_ANY, SIDE_ANY, 1)); }
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ BEGIN("cuMemcpy_ptds"); END(copy_op(&C_, P(dst), P(src), n, NULL, 1, SIDE_ANY, SIDE_ANY, 1)); }
CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{ BEGIN("cuMemcpyHtoD_v2"); END(copy_op(&C_, P(dst), src, n, NULL, 0, SIDE_DEVICE, SIDE_HOST, 1)); }
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{ BEGIN("cuMemcpyHtoD_v2_ptds"); END(copy_op(&C_, P(dst), src, n, NULL, 1, SIDE_DEVICE, SIDE_HOST, 1)); }
CUresult CUDAAPI cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{ BEGIN("cuMemcpyDtoH_v2"); END(copy_op(&C_, dst, P(src), n, NULL, 0, SIDE_HOST, SIDE_DEVICE, 1)); }
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{ BEGIN("cuMemcpyDtoH_v2_ptds"); END(copy_op(&C_, dst, P(src), n, NULL, 1, SIDE_HOST, SIDE_DEVICE, 1)); }
CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ BEGIN("cuMemcpyDtoD_v2"); END(copy_op(&C_, P(dst), P(src), n, NULL, 0, SIDE_DEVICE, SIDE_DEVICE, 1)); }
CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ BEGIN("cuMemcpyDtoD_v2_ptds"); END(copy_op(&C_, P(dst), P(src), n, NULL, 1, SIDE_DEVICE, SIDE_DEVICE, 1)); }
CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n)
PEER_COPY(BEGIN("cuMemcpyPeer"), NULL, 0, 1)
CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n)
PEER_COPY(BEGIN("cuMemcpyPeer_ptds"), NULL, 1, 1)

/* ------------------------------------------------------------------ 2D copies */

/* The largest pitch a 2D copy takes (the device's CU_DEVICE_ATTRIBUTE_MAX_PITCH). */
#define MAX_PITCH 2147483647u

/* Where one side of a CUDA_MEMCPY2D starts (its base, by its memory type) and how classify
 * is to see it: HOST as a host-to-device copy's source, DEVICE as its destination, UNIFIED
 * as cuMemcpyAsync's (any memory).  -1: ARRAY (the sim has no arrays) or an unknown type. */
static int side2d(CUmemorytype t, const void *host, CUdeviceptr dev, uintptr_t *base)
{
    switch (t) {
    case CU_MEMORYTYPE_HOST: *base = (uintptr_t)host; return SIDE_HOST;
    case CU_MEMORYTYPE_DEVICE: *base = (uintptr_t)dev; return SIDE_DEVICE;
    case CU_MEMORYTYPE_UNIFIED: *base = (uintptr_t)dev; return SIDE_ANY;
    default: *base = 0; return -1;
    }
}

/* A side's footprint: its first row at base + y * pitch + x, *len bytes up to the end of
 * its last row ((h - 1) * pitch + w, h > 0).  0: the arithmetic, or the range, wraps. */
static int foot2d(uintptr_t base, size_t x, size_t y, size_t pitch, size_t w, size_t h, size_t *len)
{
    if (pitch && y > (SIZE_MAX - x) / pitch)
        return 0;
    size_t off = y * pitch + x;
    if (pitch && h - 1 > (SIZE_MAX - w) / pitch)
        return 0;
    *len = (h - 1) * pitch + w;
    return base <= UINTPTR_MAX - off && *len <= UINTPTR_MAX - (base + off);
}

/* cuMemcpy2D(Async): Height rows of WidthInBytes bytes, row r from src + r * srcPitch to
 * dst + r * dstPitch, each side starting at base + Y * pitch + XInBytes.  Exactly a 1D copy
 * of each side's whole footprint as far as memory goes (classify, the pageable rules, the
 * stream rules, capture, CUSIM_MAX_COPY on the total bytes); then one node copies the rows
 * in order.  A pageable source is staged at the call (its rows, packed). */
static CUresult copy2d_op(struct call *c, const CUDA_MEMCPY2D *p, CUstream h, int ptsz, int sync)
{
    struct sim_stream *s;
    struct ptrinfo di, si;
    uintptr_t dbase, sbase;
    size_t dfoot, sfoot;
    int capturing;
    CUresult rc;
    if (!p) {
        sim_kv(c, "pCopy=NULL");
        return CUDA_ERROR_INVALID_VALUE;
    }
    int dside = side2d(p->dstMemoryType, p->dstHost, p->dstDevice, &dbase);
    int sside = side2d(p->srcMemoryType, p->srcHost, p->srcDevice, &sbase);
    size_t w = p->WidthInBytes, rows = p->Height;
    /* the starts as the driver computes them (unsigned: wrapping is caught by foot2d) */
    char *dst = (char *)(dbase + p->dstY * p->dstPitch + p->dstXInBytes);
    const char *src = (const char *)(sbase + p->srcY * p->srcPitch + p->srcXInBytes);
    sim_kv(c, "dst=%p src=%p width=%zu height=%zu dpitch=%zu spitch=%zu", (void *)dst, (const void *)src, w, rows,
           p->dstPitch, p->srcPitch);
    if ((rc = resolve_stream(h, ptsz, &s)))
        return rc;
    if (w == 0 || rows == 0)
        return CUDA_SUCCESS;
    if (dside < 0 || sside < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->dstPitch > MAX_PITCH || p->srcPitch > MAX_PITCH)
        return CUDA_ERROR_INVALID_VALUE;
    if (rows > 1 && (w > p->dstPitch || w > p->srcPitch)) /* rows would overlap */
        return CUDA_ERROR_INVALID_VALUE;
    if (!foot2d(dbase, p->dstXInBytes, p->dstY, p->dstPitch, w, rows, &dfoot) ||
        !foot2d(sbase, p->srcXInBytes, p->srcY, p->srcPitch, w, rows, &sfoot))
        return CUDA_ERROR_INVALID_VALUE;
    /* w <= each pitch (or one row): w * rows <= each footprint, no overflow */
    if (sim_cfg.max_copy && w * rows > sim_cfg.max_copy)
        return CUDA_ERROR_INVALID_VALUE;
    dst = unalias(dst);
    src = unalias(src);
    if ((rc = classify(dst, dfoot, dside, &di, "copy2d-dst")))
        return rc;
    if ((rc = classify(src, sfoot, sside, &si, "copy2d-src")))
        return rc;
    if ((rc = stream_use(s, &capturing)))
        return rc;
    if (capturing) {
        if (sync) {
            s->cap->status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
        struct gop g = { .kind = GOP_COPY2D, .dst = dst, .src = src, .n = w, .rows = rows,
                         .dpitch = p->dstPitch, .spitch = p->srcPitch };
        graph_add(s->cap->graph, &g);
        sim_kv(c, "captured=1");
        return CUDA_SUCCESS;
    }
    struct node *nd = sim_node_new(N_COPY2D);
    nd->dst = dst;
    nd->src = src;
    nd->n = w;
    nd->rows = rows;
    nd->dpitch = p->dstPitch;
    nd->spitch = p->srcPitch;
    nd->dst_id = di.id;
    nd->src_id = si.id;
    if (!si.a) { /* pageable: the rows are read now (not what lies between them) */
        nd->staged = malloc(w * rows);
        if (!nd->staged)
            abort();
        for (size_t r = 0; r < rows; r++)
            memcpy(nd->staged + r * w, src + r * p->srcPitch, w);
        sim_kv(c, "staged=1");
    }
    uint64_t id = sim_enqueue(s, nd);
    if (sync || !di.a) {
        sim_run(id);
        sim_kv(c, "sync=1");
        return s->ctx->sticky;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream h)
{ BEGIN_S("cuMemcpy2DAsync_v2", h); END(copy2d_op(&C_, p, h, 0, 0)); }
CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream h)
{ BEGIN_S("cuMemcpy2DAsync_v2_ptsz", h); END(copy2d_op(&C_, p, h, 1, 0)); }
/* synchronous: legacy stream (per-thread for _ptds); Unaligned is the same here (no
 * alignment rule is simulated) */
CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D *p)
{ BEGIN("cuMemcpy2D_v2"); END(copy2d_op(&C_, p, NULL, 0, 1)); }
CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p)
{ BEGIN("cuMemcpy2D_v2_ptds"); END(copy2d_op(&C_, p, NULL, 1, 1)); }
CUresult CUDAAPI cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *p)
{ BEGIN("cuMemcpy2DUnaligned_v2"); END(copy2d_op(&C_, p, NULL, 0, 1)); }
CUresult CUDAAPI cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p)
{ BEGIN("cuMemcpy2DUnaligned_v2_ptds"); END(copy2d_op(&C_, p, NULL, 1, 1)); }

/* memsets */
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr d, unsigned char uc, size_t n, CUstream h)
{ BEGIN_S("cuMemsetD8Async", h); END(memset_op(&C_, d, uc, 1, n, h, 0, 0)); }
CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char uc, size_t n, CUstream h)
{ BEGIN_S("cuMemsetD8Async_ptsz", h); END(memset_op(&C_, d, uc, 1, n, h, 1, 0)); }
CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr d, unsigned short us, size_t n, CUstream h)
{ BEGIN_S("cuMemsetD16Async", h); END(memset_op(&C_, d, us, 2, n, h, 0, 0)); }
CUresult CUDAAPI cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short us, size_t n, CUstream h)
{ BEGIN_S("cuMemsetD16Async_ptsz", h); END(memset_op(&C_, d, us, 2, n, h, 1, 0)); }
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr d, unsigned int ui, size_t n, CUstream h)
{ BEGIN_S("cuMemsetD32Async", h); END(memset_op(&C_, d, ui, 4, n, h, 0, 0)); }
CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int ui, size_t n, CUstream h)
{ BEGIN_S("cuMemsetD32Async_ptsz", h); END(memset_op(&C_, d, ui, 4, n, h, 1, 0)); }
CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr d, unsigned char uc, size_t n)
{ BEGIN("cuMemsetD8_v2"); END(memset_op(&C_, d, uc, 1, n, NULL, 0, 1)); }
CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char uc, size_t n)
{ BEGIN("cuMemsetD8_v2_ptds"); END(memset_op(&C_, d, uc, 1, n, NULL, 1, 1)); }
CUresult CUDAAPI cuMemsetD16_v2(CUdeviceptr d, unsigned short us, size_t n)
{ BEGIN("cuMemsetD16_v2"); END(memset_op(&C_, d, us, 2, n, NULL, 0, 1)); }
CUresult CUDAAPI cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short us, size_t n)
{ BEGIN("cuMemsetD16_v2_ptds"); END(memset_op(&C_, d, us, 2, n, NULL, 1, 1)); }
CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr d, unsigned int ui, size_t n)
{ BEGIN("cuMemsetD32_v2"); END(memset_op(&C_, d, ui, 4, n, NULL, 0, 1)); }
CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int ui, size_t n)
{ BEGIN("cuMemsetD32_v2_ptds"); END(memset_op(&C_, d, ui, 4, n, NULL, 1, 1)); }

/* ------------------------------------------------------------------ batch copies */

static CUresult batch_op(struct call *c, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                         CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                         CUstream h, int ptsz)
{
    struct sim_stream *s;
    CUresult rc;
    int capturing;
    static const char *const names[] = { "reverse", "forward", "shuffle" };
    sim_kv(c, "count=%zu order=%s", count, names[sim_cfg.batch_order]);
    if (failIdx)
        *failIdx = SIZE_MAX;
    if (h == CU_STREAM_LEGACY || (h == NULL && !ptsz))
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = resolve_stream(h, ptsz, &s)))
        return rc;
    if (s->kind == ST_LEGACY)
        return CUDA_ERROR_INVALID_VALUE;
    if (count == 0 || !dsts || !srcs || !sizes || !attrs || !attrsIdxs || numAttrs == 0 || numAttrs > count)
        return CUDA_ERROR_INVALID_VALUE;
    if (attrsIdxs[0] != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < numAttrs; k++) {
        if (k > 0 && attrsIdxs[k] <= attrsIdxs[k - 1])
            return CUDA_ERROR_INVALID_VALUE;
        if (attrsIdxs[k] >= count)
            return CUDA_ERROR_INVALID_VALUE;
        CUmemcpySrcAccessOrder o = attrs[k].srcAccessOrder;
        if (o != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM && o != CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL &&
            o != CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; i < count; i++)
        if (sizes[i] == 0 || (sim_cfg.max_copy && sizes[i] > sim_cfg.max_copy)) {
            if (failIdx)
                *failIdx = i;
            return CUDA_ERROR_INVALID_VALUE;
        }
    if (s->cap) {
        if (s->cap->status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
            return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* capture stays valid */
    }
    struct bentry *ents = calloc(count, sizeof *ents);
    if (!ents)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t ai = 0;
    for (size_t i = 0; i < count; i++) {
        struct ptrinfo di, si;
        while (ai + 1 < numAttrs && attrsIdxs[ai + 1] <= i)
            ai++;
        void *dst = unalias(P(dsts[i]));
        const void *src = unalias(P(srcs[i]));
        if ((rc = classify(dst, sizes[i], SIDE_ANY, &di, "batch-dst")) ||
            (rc = classify(src, sizes[i], SIDE_ANY, &si, "batch-src"))) {
            for (size_t j = 0; j < i; j++)
                free(ents[j].staged);
            free(ents);
            if (failIdx)
                *failIdx = i;
            return rc;
        }
        ents[i].dst = dst;
        ents[i].src = src;
        ents[i].n = sizes[i];
        ents[i].dst_id = di.id;
        ents[i].src_id = si.id;
        if (!si.a && attrs[ai].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL) {
            ents[i].staged = malloc(sizes[i]);
            if (!ents[i].staged)
                abort();
            memcpy(ents[i].staged, src, sizes[i]);
        }
    }
    if ((rc = stream_use(s, &capturing))) {
        for (size_t j = 0; j < count; j++)
            free(ents[j].staged);
        free(ents);
        return rc;
    }
    struct node *nd = sim_node_new(N_BATCH);
    nd->ents = ents;
    nd->nents = count;
    nd->order = sim_cfg.batch_order;
    nd->cold = !c->after_batch;
    sim_enqueue(s, nd);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                       CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream h)
{ BEGIN_S("cuMemcpyBatchAsync_v2", h); END(batch_op(&C_, dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, h, 0)); }
CUresult CUDAAPI cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                            CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream h)
{ BEGIN_S("cuMemcpyBatchAsync_v2_ptsz", h); END(batch_op(&C_, dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, h, 1)); }
CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                    CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                    CUstream h)
{ BEGIN_S("cuMemcpyBatchAsync", h); END(batch_op(&C_, dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, h, 0)); }
CUresult CUDAAPI cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                         CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                         CUstream h)
{ BEGIN_S("cuMemcpyBatchAsync_ptsz", h); END(batch_op(&C_, dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, h, 1)); }

/* ------------------------------------------------------------------ init, version, devices */

CUresult CUDAAPI cuInit(unsigned int flags)
{
    BEGIN("cuInit");
    if (flags != 0)
        END(CUDA_ERROR_INVALID_VALUE);
    if (sim_cfg.devices == 0)
        END(CUDA_ERROR_NO_DEVICE);
    inited = 1;
    END(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDriverGetVersion(int *v)
{
    BEGIN("cuDriverGetVersion");
    if (!v)
        END(CUDA_ERROR_INVALID_VALUE);
    *v = sim_cfg.driver_version;
    END(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGet(CUdevice *d, int ordinal)
{
    BEGIN("cuDeviceGet");
    CUresult rc = need_init();
    if (!rc && !d)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && (ordinal < 0 || ordinal >= sim_cfg.devices))
        rc = CUDA_ERROR_INVALID_DEVICE;
    if (!rc)
        *d = ordinal;
    END(rc);
}

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    BEGIN("cuDeviceGetCount");
    CUresult rc = need_init();
    if (!rc && !count)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *count = sim_cfg.devices;
    END(rc);
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    BEGIN("cuDeviceGetName");
    CUresult rc = check_dev(dev);
    if (!rc && (!name || len <= 0))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        snprintf(name, (size_t)len, "cusim simulated device %d", dev);
    END(rc);
}

CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    BEGIN("cuDeviceGetUuid_v2");
    CUresult rc = check_dev(dev);
    if (!rc && !uuid)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) {
        memset(uuid, 0, sizeof *uuid);
        memcpy(uuid->bytes, "cusim-dev", 9);
        uuid->bytes[15] = (char)dev;
    }
    END(rc);
}

CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    BEGIN("cuDeviceGetUuid");
    CUresult rc = check_dev(dev);
    if (!rc && !uuid)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) {
        memset(uuid, 0, sizeof *uuid);
        memcpy(uuid->bytes, "cusim-dev", 9);
        uuid->bytes[15] = (char)dev;
    }
    END(rc);
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    BEGIN("cuDeviceTotalMem_v2");
    CUresult rc = check_dev(dev);
    if (!rc && !bytes)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *bytes = (size_t)143771009024ull;
    END(rc);
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_b, size_t *total)
{
    BEGIN("cuMemGetInfo_v2");
    struct sim_ctx *c;
    CUresult rc = need_ctx(&c);
    if (!rc) {
        if (free_b)
            *free_b = (size_t)140000000000ull;
        if (total)
            *total = (size_t)143771009024ull;
    }
    END(rc);
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    BEGIN("cuDeviceGetAttribute");
    CUresult rc = check_dev(dev);
    if (!rc && !pi)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && ((int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) {
        int v = 0;
        switch (attrib) {
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
        case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = 132; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = 9; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 3; break;
        case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = dev + 1; break;
        case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: v = !sim_cfg.registered_alias; break;
        case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = 5120; break;
        case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = 1980000; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = 2619000; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = 49152; break;
        case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = 52428800; break;
        default: v = 0; break;
        }
        *pi = v;
    }
    END(rc);
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    BEGIN("cuDeviceCanAccessPeer");
    CUresult rc = check_dev(dev);
    if (!rc)
        rc = check_dev(peer);
    if (!rc && !can)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *can = dev != peer;
    END(rc);
}

/* ------------------------------------------------------------------ errors */

struct errname { int code; const char *name; const char *str; };
static const struct errname errnames[] = {
#define E(c, s) { c, #c, s }
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    E(CUDA_ERROR_PROFILER_DISABLED, "profiler disabled while using external profiling tool"),
    E(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    E(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable"),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_DEVICE_NOT_LICENSED, "device doesn't have valid Grid license"),
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    E(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    E(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed"),
    E(CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"),
    E(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
    E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
    E(CUDA_ERROR_ALREADY_ACQUIRED, "resource already acquired"),
    E(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
    E(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "resource not mapped as array"),
    E(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "resource not mapped as pointer"),
    E(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered"),
    E(CUDA_ERROR_UNSUPPORTED_LIMIT, "limit is not supported on this architecture"),
    E(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "exclusive-thread device already in use by a different thread"),
    E(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices"),
    E(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    E(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid OpenGL or DirectX context"),
    E(CUDA_ERROR_NVLINK_UNCORRECTABLE, "uncorrectable NVLink error detected during the execution"),
    E(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found"),
    E(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
    E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    E(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found"),
    E(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed"),
    E(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    E(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
    E(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "launch uses incompatible texturing mode"),
    E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
    E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"),
    E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "cannot set while device is active in this process"),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    E(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    E(CUDA_ERROR_TOO_MANY_PEERS, "peer mapping resources exhausted"),
    E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"),
    E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
    E(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
    E(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"),
    E(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    E(CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation not supported on global/shared address space"),
    E(CUDA_ERROR_INVALID_PC, "invalid program counter"),
    E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    E(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch"),
    E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"),
    E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination"),
    E(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "forward compatibility was attempted on non supported HW"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
    E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
    E(CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work"),
    E(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream"),
    E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream"),
    E(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream"),
    E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread"),
    E(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
    E(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"),
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
#undef E
};

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    BEGIN("cuGetErrorName");
    if (!pStr)
        END(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < sizeof errnames / sizeof errnames[0]; i++)
        if (errnames[i].code == (int)error) {
            *pStr = errnames[i].name;
            END(CUDA_SUCCESS);
        }
    *pStr = NULL;
    END(CUDA_ERROR_INVALID_VALUE);
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    BEGIN("cuGetErrorString");
    if (!pStr)
        END(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < sizeof errnames / sizeof errnames[0]; i++)
        if (errnames[i].code == (int)error) {
            *pStr = errnames[i].str;
            END(CUDA_SUCCESS);
        }
    *pStr = NULL;
    END(CUDA_ERROR_INVALID_VALUE);
}

/* ------------------------------------------------------------------ entry points */

static CUresult proc_address(struct call *c, const char *symbol, void **pfn, int ver, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    sim_kv(c, "symbol=%s version=%d flags=%llu", symbol ? symbol : "(null)", ver, (unsigned long long)flags);
    if (!pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (!symbol || flags > 3 || ver > sim_cfg.driver_version)
        return CUDA_ERROR_INVALID_VALUE;
    int st = sim_proc_lookup(symbol, ver, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, pfn);
    if (status)
        *status = st == 0 ? CU_GET_PROC_ADDRESS_SUCCESS
                : st == 1 ? CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
                          : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    sim_kv(c, "status=%d", st);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{ BEGIN("cuGetProcAddress"); END(proc_address(&C_, symbol, pfn, cudaVersion, flags, NULL)); }
CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus)
{ BEGIN("cuGetProcAddress_v2"); END(proc_address(&C_, symbol, pfn, cudaVersion, flags, symbolStatus)); }
CUresult CUDAAPI cuGetProcAddress_v2_ptsz(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                          CUdriverProcAddressQueryResult *symbolStatus)
{ BEGIN("cuGetProcAddress_v2_ptsz"); END(proc_address(&C_, symbol, pfn, cudaVersion, flags, symbolStatus)); }

CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    (void)pExportTableId;
    BEGIN("cuGetExportTable");
    if (ppExportTable)
        *ppExportTable = NULL;
    END(CUDA_ERROR_NOT_SUPPORTED);
}

/* ------------------------------------------------------------------ contexts */

static CUresult primary_retain(CUcontext *pctx, CUdevice dev)
{
    CUresult rc = check_dev(dev);
    if (rc)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_ctx *c = primaries[dev];
    if (!c) {
        c = primaries[dev] = ctx_new(dev, 0, 1);
    } else if (!c->alive) {
        c->alive = 1;
        ctx_init_streams(c);
        sim_handle_add(c, H_CTX);
    }
    c->refcount++;
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

static CUresult primary_release(CUdevice dev)
{
    CUresult rc = check_dev(dev);
    if (rc)
        return rc;
    struct sim_ctx *c = primaries[dev];
    if (!c || !c->alive || c->refcount <= 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    /* only the last release ends the context (runs its work, frees its memory) */
    if (c->refcount == 1 && (rc = capture_refuses(CAP_UNSAFE, NULL, NULL)))
        return rc;
    if (--c->refcount == 0) {
        ctx_teardown(c);
        sim_handle_del(c);
    }
    return CUDA_SUCCESS;
}

static CUresult primary_reset(CUdevice dev)
{
    CUresult rc = check_dev(dev);
    if (rc)
        return rc;
    struct sim_ctx *c = primaries[dev];
    if (c && c->alive) {
        if ((rc = capture_refuses(CAP_UNSAFE, NULL, NULL)))
            return rc;
        ctx_teardown(c);
        sim_handle_del(c);
        c->refcount = 0;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{ BEGIN("cuDevicePrimaryCtxRetain"); KV("dev=%d", dev); END(primary_retain(pctx, dev)); }
CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{ BEGIN("cuDevicePrimaryCtxRelease_v2"); KV("dev=%d", dev); END(primary_release(dev)); }
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{ BEGIN("cuDevicePrimaryCtxRelease"); KV("dev=%d", dev); END(primary_release(dev)); }
CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{ BEGIN("cuDevicePrimaryCtxReset_v2"); KV("dev=%d", dev); END(primary_reset(dev)); }
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{ BEGIN("cuDevicePrimaryCtxReset"); KV("dev=%d", dev); END(primary_reset(dev)); }

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    BEGIN("cuDevicePrimaryCtxGetState");
    CUresult rc = check_dev(dev);
    if (!rc && (!flags || !active))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) {
        struct sim_ctx *c = primaries[dev];
        *flags = c ? c->flags : 0;
        *active = c && c->alive && c->refcount > 0;
    }
    END(rc);
}

static CUresult primary_setflags(CUdevice dev, unsigned flags)
{
    CUresult rc = check_dev(dev);
    if (rc)
        return rc;
    struct sim_ctx *c = primaries[dev];
    if (!c)
        c = primaries[dev] = ctx_new(dev, flags, 1), c->alive = 0, sim_handle_del(c);
    c->flags = flags;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{ BEGIN("cuDevicePrimaryCtxSetFlags_v2"); END(primary_setflags(dev, flags)); }
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{ BEGIN("cuDevicePrimaryCtxSetFlags"); END(primary_setflags(dev, flags)); }

static void push_ctx(struct sim_ctx *c)
{
    if (tls_n < (int)(sizeof tls_stack / sizeof tls_stack[0]))
        tls_stack[tls_n++] = (CUcontext)c;
}

static CUresult ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    CUresult rc = check_dev(dev);
    if (rc)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_ctx *c = sim_reuse_ctx(ctx_list); /* CUSIM_HANDLE_REUSE: a destroyed one's handle (reuse.c) */
    if (c) { /* made anew, as a primary context is revived */
        c->dev = dev;
        c->flags = flags;
        c->alive = 1;
        c->sticky = CUDA_SUCCESS;
        c->id = sim_next_id();
        ctx_init_streams(c);
        sim_handle_add(c, H_CTX);
    } else {
        c = ctx_new(dev, flags, 0);
    }
    push_ctx(c);
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{ BEGIN("cuCtxCreate_v2"); END(ctx_create(pctx, flags, dev)); }
CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int numParams, unsigned int flags,
                                CUdevice dev)
{ (void)params; (void)numParams; BEGIN("cuCtxCreate_v3"); END(ctx_create(pctx, flags, dev)); }
CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{ (void)params; BEGIN("cuCtxCreate_v4"); END(ctx_create(pctx, flags, dev)); }

static CUresult ctx_destroy(CUcontext ctx)
{
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!sim_handle_ok(ctx, H_CTX))
        return CUDA_ERROR_INVALID_CONTEXT;
    struct sim_ctx *c = (struct sim_ctx *)ctx;
    if (c->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUresult rc = capture_refuses(CAP_UNSAFE, NULL, NULL);
    if (rc)
        return rc;
    ctx_teardown(c);
    sim_handle_del(c);
    /* a destroyed context current to this thread is popped */
    for (int i = tls_n - 1; i >= 0; i--)
        if (tls_stack[i] == ctx) {
            memmove(tls_stack + i, tls_stack + i + 1, (size_t)(tls_n - i - 1) * sizeof tls_stack[0]);
            tls_n--;
        }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) { BEGIN("cuCtxDestroy_v2"); END(ctx_destroy(ctx)); }
CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) { BEGIN("cuCtxDestroy"); END(ctx_destroy(ctx)); }

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    BEGIN("cuCtxSetCurrent");
    if (!inited)
        END(CUDA_ERROR_NOT_INITIALIZED);
    if (ctx && !sim_handle_ok(ctx, H_CTX))
        END(CUDA_ERROR_INVALID_CONTEXT);
    if (tls_n == 0) {
        if (ctx)
            tls_stack[tls_n++] = ctx;
    } else if (ctx) {
        tls_stack[tls_n - 1] = ctx;
    } else {
        tls_n--;
    }
    END(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    BEGIN("cuCtxGetCurrent");
    if (!inited)
        END(CUDA_ERROR_NOT_INITIALIZED);
    if (!pctx)
        END(CUDA_ERROR_INVALID_VALUE);
    *pctx = tls_n ? tls_stack[tls_n - 1] : NULL;
    END(CUDA_SUCCESS);
}

static CUresult ctx_push(CUcontext ctx)
{
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!sim_handle_ok(ctx, H_CTX))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (tls_n >= (int)(sizeof tls_stack / sizeof tls_stack[0]))
        return CUDA_ERROR_OUT_OF_MEMORY;
    tls_stack[tls_n++] = ctx;
    return CUDA_SUCCESS;
}
static CUresult ctx_pop(CUcontext *pctx)
{
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (tls_n == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = tls_stack[--tls_n];
    if (pctx)
        *pctx = c;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) { BEGIN("cuCtxPushCurrent_v2"); END(ctx_push(ctx)); }
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) { BEGIN("cuCtxPushCurrent"); END(ctx_push(ctx)); }
CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx) { BEGIN("cuCtxPopCurrent_v2"); END(ctx_pop(pctx)); }
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx) { BEGIN("cuCtxPopCurrent"); END(ctx_pop(pctx)); }

CUresult CUDAAPI cuCtxGetDevice(CUdevice *dev)
{
    BEGIN("cuCtxGetDevice");
    struct sim_ctx *c;
    CUresult rc = need_ctx(&c);
    if (!rc && !dev)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *dev = c->dev;
    END(rc);
}

CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx)
{
    BEGIN("cuCtxGetDevice_v2");
    struct sim_ctx *c = NULL;
    CUresult rc = CUDA_SUCCESS;
    if (ctx) {
        if (!inited)
            rc = CUDA_ERROR_NOT_INITIALIZED;
        else if (!sim_handle_ok(ctx, H_CTX))
            rc = CUDA_ERROR_INVALID_CONTEXT;
        else
            c = (struct sim_ctx *)ctx;
    } else {
        rc = need_ctx(&c);
    }
    if (!rc && !dev)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *dev = c->dev;
    END(rc);
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
    BEGIN("cuCtxGetFlags");
    struct sim_ctx *c;
    CUresult rc = need_ctx(&c);
    if (!rc && !flags)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *flags = c->flags;
    END(rc);
}

CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
    BEGIN("cuCtxGetId");
    struct sim_ctx *c = NULL;
    CUresult rc = CUDA_SUCCESS;
    if (ctx) {
        if (!sim_handle_ok(ctx, H_CTX))
            rc = CUDA_ERROR_INVALID_CONTEXT;
        else
            c = (struct sim_ctx *)ctx;
    } else {
        rc = need_ctx(&c);
    }
    if (!rc && !id)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *id = c->id;
    END(rc);
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    BEGIN("cuCtxGetApiVersion");
    (void)ctx;
    if (!version)
        END(CUDA_ERROR_INVALID_VALUE);
    *version = 3020;
    END(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    BEGIN("cuCtxGetStreamPriorityRange");
    struct sim_ctx *c;
    CUresult rc = need_ctx(&c);
    if (!rc) {
        if (least)
            *least = 0;
        if (greatest)
            *greatest = -5;
    }
    END(rc);
}

/* Waits for every stream of c: refused while one of them captures, in any mode. */
static CUresult ctx_sync(struct sim_ctx *c)
{
    CUresult rc = capture_refuses(CAP_NOT_CAPTURING | CAP_UNSAFE, NULL, c);
    if (rc)
        return rc;
    sim_run_ctx(c);
    return c->sticky;
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
    BEGIN("cuCtxSynchronize");
    struct sim_ctx *c;
    CUresult rc = need_ctx(&c);
    if (!rc)
        rc = ctx_sync(c);
    END(rc);
}

CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
    BEGIN("cuCtxSynchronize_v2");
    struct sim_ctx *c = NULL;
    CUresult rc = CUDA_SUCCESS;
    if (ctx) {
        if (!inited)
            rc = CUDA_ERROR_NOT_INITIALIZED;
        else if (!sim_handle_ok(ctx, H_CTX))
            rc = CUDA_ERROR_INVALID_CONTEXT;
        else
            c = (struct sim_ctx *)ctx;
    } else {
        rc = need_ctx(&c);
    }
    if (!rc)
        rc = ctx_sync(c);
    END(rc);
}

/* ------------------------------------------------------------------ memory */

static CUresult alloc_mem(void **out, size_t n, int kind, unsigned flags, struct sim_ctx *c)
{
    size_t align = kind == MEM_DEVICE ? 512 : 4096;
    size_t rn = (n + align - 1) / align * align;
    void *p;
    if (n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    p = aligned_alloc(align, rn);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(p, 0, rn);
    struct sim_alloc *a = sim_mem_add(p, n, kind, c, flags);
    if (!a) {
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = p;
    return CUDA_SUCCESS;
}

/* An allocation outside stream order (not cuMemAllocAsync) is a potentially unsafe call
 * during capture. */
static CUresult alloc_now(void **out, size_t n, int kind, unsigned flags, struct sim_ctx *c)
{
    CUresult rc = capture_refuses(CAP_UNSAFE, NULL, NULL);
    return rc ? rc : alloc_mem(out, n, kind, flags, c);
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t n)
{
    BEGIN("cuMemAlloc_v2");
    struct sim_ctx *c;
    void *p = NULL;
    CUresult rc = need_ctx(&c);
    if (!rc && !dptr)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        rc = alloc_now(&p, n, MEM_DEVICE, 0, c);
    if (!rc)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    KV("ptr=%p n=%zu", p, n);
    END(rc);
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t n, unsigned int flags)
{
    BEGIN("cuMemAllocManaged");
    struct sim_ctx *c;
    void *p = NULL;
    CUresult rc = need_ctx(&c);
    if (!rc && !dptr)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        rc = alloc_now(&p, n, MEM_MANAGED, flags, c);
    if (!rc)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    KV("ptr=%p n=%zu", p, n);
    END(rc);
}

CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t n)
{
    BEGIN("cuMemAllocHost_v2");
    struct sim_ctx *c;
    void *p = NULL;
    CUresult rc = need_ctx(&c);
    if (!rc && !pp)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        rc = alloc_now(&p, n, MEM_PINNED, 0, c);
    if (!rc)
        *pp = p;
    KV("ptr=%p n=%zu", p, n);
    END(rc);
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
    BEGIN("cuMemHostAlloc");
    struct sim_ctx *c;
    void *p = NULL;
    CUresult rc = need_ctx(&c);
    if (!rc && !pp)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc && (flags & ~7u))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        rc = alloc_now(&p, n, MEM_PINNED, flags, c);
    if (!rc)
        *pp = p;
    KV("ptr=%p n=%zu", p, n);
    END(rc);
}

/* free: implicit synchronization of the device, then the memory is gone */
static CUresult free_mem(void *p, int kind, struct call *c)
{
    struct sim_ctx *cx;
    CUresult rc = need_ctx(&cx);
    sim_kv(c, "ptr=%p", p);
    if (rc)
        return rc;
    if (!p)
        return CUDA_SUCCESS;
    struct sim_alloc *a = sim_mem_find(p);
    if (!a || a->base != p || (kind == MEM_PINNED ? a->kind != MEM_PINNED
                                                  : (a->kind != MEM_DEVICE && a->kind != MEM_MANAGED)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = capture_refuses(CAP_UNSAFE, NULL, NULL)))
        return rc;
    sim_run_dev(a->ctx ? a->ctx->dev : cx->dev);
    a = sim_mem_find(p); /* work that just ran may have freed it (cuMemFreeAsync) */
    if (!a || a->base != p)
        return CUDA_ERROR_INVALID_VALUE;
    sim_mem_remove(a, 1);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr p)
{ BEGIN("cuMemFree_v2"); END(free_mem(P(p), MEM_DEVICE, &C_)); }
CUresult CUDAAPI cuMemFreeHost(void *p)
{ BEGIN("cuMemFreeHost"); END(free_mem(p, MEM_PINNED, &C_)); }

CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t n, unsigned int flags)
{
    BEGIN("cuMemHostRegister_v2");
    struct sim_ctx *c;
    CUresult rc = need_ctx(&c);
    KV("ptr=%p n=%zu", p, n);
    if (!rc && (!p || n == 0))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) {
        struct sim_alloc *a = sim_mem_find((char *)p + n - 1);
        if (sim_mem_find(p) || (a && (uintptr_t)a->base + a->size > (uintptr_t)p))
            rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    if (!rc) {
        struct sim_alloc *a = sim_mem_add(p, n, MEM_REGISTERED, c, flags);
        if (!a)
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        else
            a->alias = sim_cfg.registered_alias;
        if (a && a->alias)
            KV("devptr=%p", (void *)sim_mem_devptr(a, p));
    }
    END(rc);
}

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    BEGIN("cuMemHostUnregister");
    struct sim_ctx *c;
    CUresult rc = need_ctx(&c);
    KV("ptr=%p", p);
    if (!rc) {
        struct sim_alloc *a = sim_mem_find(p);
        if (!a || a->base != p || a->kind != MEM_REGISTERED)
            rc = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
        else if (!(rc = capture_refuses(CAP_UNSAFE, NULL, NULL))) {
            sim_run_dev(a->ctx ? a->ctx->dev : c->dev);
            sim_mem_remove(a, 0);
        }
    }
    END(rc);
}

CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int flags)
{
    BEGIN("cuMemHostGetDevicePointer_v2");
    struct sim_ctx *c;
    CUresult rc = need_ctx(&c);
    if (!rc && (!pdptr || flags))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) {
        struct sim_alloc *a = sim_mem_find(p);
        if (!a || (a->kind != MEM_PINNED && a->kind != MEM_REGISTERED))
            rc = CUDA_ERROR_INVALID_VALUE;
        else
            *pdptr = (CUdeviceptr)sim_mem_devptr(a, p);
    }
    END(rc);
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    BEGIN("cuMemHostGetFlags");
    struct sim_ctx *c;
    CUresult rc = need_ctx(&c);
    if (!rc) {
        struct sim_alloc *a = sim_mem_find(p);
        if (!a || !pFlags || (a->kind != MEM_PINNED && a->kind != MEM_REGISTERED))
            rc = CUDA_ERROR_INVALID_VALUE;
        else
            *pFlags = a->flags;
    }
    END(rc);
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    BEGIN("cuMemGetAddressRange_v2");
    struct sim_ctx *c;
    CUresult rc = need_ctx(&c);
    if (!rc) {
        struct sim_alloc *a = sim_mem_find(P(dptr));
        if (!a)
            rc = CUDA_ERROR_NOT_FOUND;
        else {
            if (pbase)
                *pbase = (CUdeviceptr)(uintptr_t)a->base;
            if (psize)
                *psize = a->size;
        }
    }
    END(rc);
}

static CUresult alloc_async(struct call *c, CUdeviceptr *dptr, size_t n, CUstream h, int ptsz)
{
    struct sim_stream *s;
    CUresult rc;
    int capturing;
    void *p = NULL;
    if ((rc = resolve_stream(h, ptsz, &s)))
        return rc;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = stream_use(s, &capturing)))
        return rc;
    if (capturing) {
        s->cap->status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if ((rc = alloc_mem(&p, n, MEM_DEVICE, 0, s->ctx)))
        return rc;
    sim_mem_find(p)->async = 1;
    *dptr = (CUdeviceptr)(uintptr_t)p;
    sim_kv(c, "ptr=%p n=%zu", p, n);
    return CUDA_SUCCESS;
}

static CUresult free_async(struct call *c, CUdeviceptr d, CUstream h, int ptsz)
{
    struct sim_stream *s;
    CUresult rc;
    int capturing;
    void *p = P(d);
    sim_kv(c, "ptr=%p", p);
    if ((rc = resolve_stream(h, ptsz, &s)))
        return rc;
    struct sim_alloc *a = sim_mem_find(p);
    if (!a || a->base != p || a->kind != MEM_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = stream_use(s, &capturing)))
        return rc;
    if (capturing) {
        s->cap->status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    struct node *nd = sim_node_new(N_FREE);
    nd->fptr = p;
    sim_enqueue(s, nd);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t n, CUstream h)
{ BEGIN_S("cuMemAllocAsync", h); END(alloc_async(&C_, dptr, n, h, 0)); }
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t n, CUstream h)
{ BEGIN_S("cuMemAllocAsync_ptsz", h); END(alloc_async(&C_, dptr, n, h, 1)); }
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr d, CUstream h)
{ BEGIN_S("cuMemFreeAsync", h); END(free_async(&C_, d, h, 0)); }
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream h)
{ BEGIN_S("cuMemFreeAsync_ptsz", h); END(free_async(&C_, d, h, 1)); }

/* pointer attributes.  Booleans are written as unsigned int. */
static size_t attr_size(CUpointer_attribute a)
{
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: return sizeof(CUcontext);
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: return sizeof(unsigned int);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: return sizeof(CUdeviceptr);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: return sizeof(void *);
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: return sizeof(unsigned int);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: return sizeof(unsigned int);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: return sizeof(unsigned int);
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: return sizeof(CUdeviceptr);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: return sizeof(size_t);
    case CU_POINTER_ATTRIBUTE_MAPPED: return sizeof(unsigned int);
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: return sizeof(unsigned int);
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: return sizeof(unsigned int);
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: return sizeof(void *);
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: return sizeof(size_t);
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: return sizeof(void *);
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: return sizeof(unsigned long long);
    default: return 0;
    }
}

/* The allocation holding ptr, a host address or an alias device address of registered
 * memory (*via_alias = 1, *host = the host address). */
static struct sim_alloc *attr_find(CUdeviceptr ptr, int *via_alias, char **host)
{
    struct sim_alloc *a = sim_mem_find(P(ptr));
    *via_alias = 0;
    *host = P(ptr);
    if (!a && (a = sim_mem_find_alias(P(ptr), host)))
        *via_alias = 1;
    return a;
}

/* 0 ok, else error; strict: HOST_POINTER of device memory is an error.  ptr may be an alias
 * device address of registered memory: then host addresses are its host side. */
static CUresult attr_value(struct sim_alloc *a, CUpointer_attribute at, void *data, CUdeviceptr ptr, int strict)
{
    int via_alias;
    char *host;
    attr_find(ptr, &via_alias, &host);
    uintptr_t dev = via_alias ? (uintptr_t)ptr : sim_mem_devptr(a, host);
    uintptr_t shift = via_alias ? SIM_ALIAS_OFFSET : 0; /* ranges in the address space of ptr */
    union { CUcontext c; unsigned u; CUdeviceptr d; void *p; unsigned long long ull; int i; size_t z; } v;
    int devkind = a->kind == MEM_DEVICE || a->kind == MEM_MANAGED;
    size_t sz = attr_size(at);
    memset(&v, 0, sizeof v);
    if (!sz)
        return CUDA_ERROR_INVALID_VALUE;
    switch (at) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: v.c = (CUcontext)a->ctx; break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: v.u = devkind ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: v.d = (CUdeviceptr)dev; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (a->kind == MEM_DEVICE) {
            if (strict)
                return CUDA_ERROR_INVALID_VALUE;
        } else {
            v.p = host;
        }
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: v.u = 0; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: v.ull = a->buffer_id; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: v.u = a->kind == MEM_MANAGED; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: v.i = a->ctx ? a->ctx->dev : 0; break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: v.u = a->kind == MEM_DEVICE && !a->async; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: v.d = (CUdeviceptr)((uintptr_t)a->base + shift); break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: v.z = a->size; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: v.u = 1; break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: v.u = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE; break;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: v.z = a->size; break;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: v.p = (void *)((uintptr_t)a->base + shift); break;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: v.ull = a->buffer_id; break;
    default: break;
    }
    memcpy(data, &v, sz);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    BEGIN("cuPointerGetAttribute");
    KV("ptr=%p attr=%d", P(ptr), (int)attribute);
    if (!inited)
        END(CUDA_ERROR_NOT_INITIALIZED);
    if (!data)
        END(CUDA_ERROR_INVALID_VALUE);
    int via_alias;
    char *host;
    struct sim_alloc *a = attr_find(ptr, &via_alias, &host);
    if (!a)
        END(CUDA_ERROR_INVALID_VALUE);
    END(attr_value(a, attribute, data, ptr, 1));
}

CUresult CUDAAPI cuPointerGetAttributes(unsigned int num, CUpointer_attribute *attributes, void **data, CUdeviceptr ptr)
{
    BEGIN("cuPointerGetAttributes");
    KV("ptr=%p num=%u", P(ptr), num);
    if (!inited)
        END(CUDA_ERROR_NOT_INITIALIZED);
    if (!attributes || !data || num == 0)
        END(CUDA_ERROR_INVALID_VALUE);
    int via_alias;
    char *host;
    struct sim_alloc *a = attr_find(ptr, &via_alias, &host);
    for (unsigned i = 0; i < num; i++) {
        size_t sz = attr_size(attributes[i]);
        if (!sz)
            END(CUDA_ERROR_INVALID_VALUE);
        if (!data[i])
            continue;
        if (!a) {
            memset(data[i], 0, sz);
            continue;
        }
        CUresult rc = attr_value(a, attributes[i], data[i], ptr, 0);
        if (rc)
            END(rc);
    }
    KV("type=%d", a ? (a->kind == MEM_DEVICE || a->kind == MEM_MANAGED ? 2 : 1) : 0);
    END(CUDA_SUCCESS);
}

/* ------------------------------------------------------------------ streams */

static CUresult stream_create(CUstream *ph, unsigned flags, int prio)
{
    struct sim_ctx *c;
    CUresult rc = need_ctx(&c);
    if (rc)
        return rc;
    if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    if (prio > 0)
        prio = 0;
    if (prio < -5)
        prio = -5;
    *ph = (CUstream)stream_new(c, ST_USER, flags, prio);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *ph, unsigned int flags)
{
    BEGIN("cuStreamCreate");
    CUresult rc = stream_create(ph, flags, 0);
    if (!rc)
        KV("new=%p flags=%u", (void *)*ph, flags);
    END(rc);
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *ph, unsigned int flags, int priority)
{
    BEGIN("cuStreamCreateWithPriority");
    CUresult rc = stream_create(ph, flags, priority);
    if (!rc)
        KV("new=%p flags=%u", (void *)*ph, flags);
    END(rc);
}

static CUresult stream_destroy(CUstream h)
{
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!sim_handle_ok(h, H_STREAM))
        return CUDA_ERROR_INVALID_HANDLE;
    struct sim_stream *s = (struct sim_stream *)h;
    sim_handle_del(s);
    s->alive = 0; /* its pending work still runs (at the next synchronization) */
    s->cap = NULL;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy_v2(CUstream h) { BEGIN_S("cuStreamDestroy_v2", h); END(stream_destroy(h)); }
CUresult CUDAAPI cuStreamDestroy(CUstream h) { BEGIN_S("cuStreamDestroy", h); END(stream_destroy(h)); }

/* what: the getter's CAP_* collisions (the legacy rule applies to every one) */
#define STREAM_GETTER(fn, ptsz, what, T, out, expr)                            \
    CUresult CUDAAPI fn(CUstream h, T *out)                                    \
    {                                                                          \
        BEGIN_S(#fn, h);                                                       \
        struct sim_stream *s;                                                  \
        CUresult rc = resolve_stream(h, ptsz, &s);                             \
        if (!rc && !out)                                                       \
            rc = CUDA_ERROR_INVALID_VALUE;                                     \
        if (!rc)                                                               \
            rc = capture_refuses((what), s, NULL);                             \
        if (!rc)                                                               \
            *out = (expr);                                                     \
        END(rc);                                                               \
    }
/* The driver refuses the flags and the device of a capturing stream, not its context. */
STREAM_GETTER(cuStreamGetFlags, 0, CAP_NOT_CAPTURING, unsigned int, flags, s->flags)
STREAM_GETTER(cuStreamGetFlags_ptsz, 1, CAP_NOT_CAPTURING, unsigned int, flags, s->flags)
STREAM_GETTER(cuStreamGetPriority, 0, 0, int, prio, s->prio)
STREAM_GETTER(cuStreamGetPriority_ptsz, 1, 0, int, prio, s->prio)
STREAM_GETTER(cuStreamGetCtx, 0, 0, CUcontext, pctx, (CUcontext)s->ctx)
STREAM_GETTER(cuStreamGetCtx_ptsz, 1, 0, CUcontext, pctx, (CUcontext)s->ctx)
STREAM_GETTER(cuStreamGetDevice, 0, CAP_NOT_CAPTURING, CUdevice, dev, s->ctx->dev)
STREAM_GETTER(cuStreamGetDevice_ptsz, 1, CAP_NOT_CAPTURING, CUdevice, dev, s->ctx->dev)
STREAM_GETTER(cuStreamGetId, 0, 0, unsigned long long, id, s->id)
STREAM_GETTER(cuStreamGetId_ptsz, 1, 0, unsigned long long, id, s->id)

static CUresult stream_getctx2(CUstream h, int ptsz, CUcontext *pctx, CUgreenCtx *pg)
{
    struct sim_stream *s;
    CUresult rc = resolve_stream(h, ptsz, &s);
    if (!rc)
        rc = capture_refuses(0, s, NULL);
    if (rc)
        return rc;
    if (pctx)
        *pctx = (CUcontext)s->ctx;
    if (pg)
        *pg = NULL;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetCtx_v2(CUstream h, CUcontext *pctx, CUgreenCtx *pg)
{ BEGIN_S("cuStreamGetCtx_v2", h); END(stream_getctx2(h, 0, pctx, pg)); }
CUresult CUDAAPI cuStreamGetCtx_v2_ptsz(CUstream h, CUcontext *pctx, CUgreenCtx *pg)
{ BEGIN_S("cuStreamGetCtx_v2_ptsz", h); END(stream_getctx2(h, 1, pctx, pg)); }

/* A synchronize or a query waits for the stream: refused on a capturing one in any
 * mode, and, as potentially unsafe calls, on any stream while a capture forbids those. */
#define STREAM_WAIT (CAP_NOT_CAPTURING | CAP_UNSAFE)
static CUresult stream_sync(CUstream h, int ptsz)
{
    struct sim_stream *s;
    CUresult rc = resolve_stream(h, ptsz, &s);
    if (!rc)
        rc = capture_refuses(STREAM_WAIT, s, NULL);
    if (rc)
        return rc;
    sim_run(s->last);
    return s->ctx->sticky;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream h) { BEGIN_S("cuStreamSynchronize", h); END(stream_sync(h, 0)); }
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream h) { BEGIN_S("cuStreamSynchronize_ptsz", h); END(stream_sync(h, 1)); }
/* A query runs the stream's work, unless a cusim_compute launch still runs there. */
static CUresult stream_query(CUstream h, int ptsz)
{
    struct sim_stream *s;
    CUresult rc = resolve_stream(h, ptsz, &s);
    if (!rc)
        rc = capture_refuses(STREAM_WAIT, s, NULL);
    if (rc)
        return rc;
    if (s->compute_last && sim_node_pending(s->compute_last) && s->compute_polls > 0) {
        s->compute_polls--;
        return CUDA_ERROR_NOT_READY;
    }
    sim_run(s->last);
    return s->ctx->sticky;
}
CUresult CUDAAPI cuStreamQuery(CUstream h) { BEGIN_S("cuStreamQuery", h); END(stream_query(h, 0)); }
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream h) { BEGIN_S("cuStreamQuery_ptsz", h); END(stream_query(h, 1)); }

static CUresult host_op(struct call *c, CUstream h, int ptsz, CUhostFn fn, CUstreamCallback cb, void *ud)
{
    struct sim_stream *s;
    int capturing;
    CUresult rc = resolve_stream(h, ptsz, &s);
    if (rc)
        return rc;
    if (!fn && !cb)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = stream_use(s, &capturing)))
        return rc;
    if (capturing) {
        if (cb || s->cap->cig) { /* callbacks cannot be captured, nor anything host-side into CIG */
            s->cap->status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
        struct gop g = { .kind = GOP_HOST, .fn = fn, .ud = ud };
        graph_add(s->cap->graph, &g);
        sim_kv(c, "captured=1");
        return CUDA_SUCCESS;
    }
    struct node *nd = sim_node_new(fn ? N_HOST : N_CALLBACK);
    nd->fn = fn;
    nd->cb = cb;
    nd->ud = ud;
    nd->handle = h;
    sim_enqueue(s, nd);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuLaunchHostFunc(CUstream h, CUhostFn fn, void *ud)
{ BEGIN_S("cuLaunchHostFunc", h); END(host_op(&C_, h, 0, fn, NULL, ud)); }
CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream h, CUhostFn fn, void *ud)
{ BEGIN_S("cuLaunchHostFunc_ptsz", h); END(host_op(&C_, h, 1, fn, NULL, ud)); }
CUresult CUDAAPI cuStreamAddCallback(CUstream h, CUstreamCallback cb, void *ud, unsigned int flags)
{ BEGIN_S("cuStreamAddCallback", h); END(flags ? CUDA_ERROR_INVALID_VALUE : host_op(&C_, h, 0, NULL, cb, ud)); }
CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream h, CUstreamCallback cb, void *ud, unsigned int flags)
{ BEGIN_S("cuStreamAddCallback_ptsz", h); END(flags ? CUDA_ERROR_INVALID_VALUE : host_op(&C_, h, 1, NULL, cb, ud)); }

/* ------------------------------------------------------------------ modules and the copy kernel */

#define FATBIN_MAGIC 0xBA55ED50u

/* Any image that starts with the fatbin magic is taken for cubatch's copy-kernel fatbin
 * (its contents are not parsed): a module of the current context with the tiers of CB_KTIERS. */
CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
    BEGIN("cuModuleLoadData");
    struct sim_ctx *c;
    uint32_t magic = 0;
    CUresult rc = need_ctx(&c);
    if (!rc && (!module || !image))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) /* loading is a potentially unsafe call */
        rc = capture_refuses(CAP_UNSAFE, NULL, NULL);
    if (!rc) {
        memcpy(&magic, image, sizeof magic);
        if (magic != FATBIN_MAGIC)
            rc = CUDA_ERROR_INVALID_IMAGE;
    }
    if (!rc) {
        struct sim_module *m = calloc(1, sizeof *m);
        if (!m)
            abort();
        m->ctx = c;
        m->alive = 1;
        for (size_t i = 0; i < NKERNELS; i++) {
            m->fn[i] = (struct sim_func){ m, copy_kernels[i].name, copy_kernels[i].cap, 0 };
            m->fn[NKERNELS + i] = (struct sim_func){ m, copy_kernels_rows[i].name, copy_kernels_rows[i].cap, 1 };
            sim_handle_add(&m->fn[i], H_FUNC);
            sim_handle_add(&m->fn[NKERNELS + i], H_FUNC);
        }
        m->compute = (struct sim_func){ m, COMPUTE_NAME, 0, 0 };
        sim_handle_add(&m->compute, H_FUNC);
        m->next = modules;
        modules = m;
        sim_handle_add(m, H_MODULE);
        *module = (CUmodule)m;
        KV("module=%p", (void *)m);
    }
    END(rc);
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    BEGIN("cuModuleGetFunction");
    KV("module=%p name=%s", (void *)hmod, name ? name : "(null)");
    if (!inited)
        END(CUDA_ERROR_NOT_INITIALIZED);
    if (!sim_handle_ok(hmod, H_MODULE) || !((struct sim_module *)hmod)->alive)
        END(CUDA_ERROR_INVALID_HANDLE);
    if (!hfunc || !name)
        END(CUDA_ERROR_INVALID_VALUE);
    struct sim_module *m = (struct sim_module *)hmod;
    for (size_t i = 0; i < 2 * NKERNELS; i++)
        if (!strcmp(name, m->fn[i].name)) {
            *hfunc = (CUfunction)&m->fn[i];
            END(CUDA_SUCCESS);
        }
    if (!strcmp(name, COMPUTE_NAME)) {
        *hfunc = (CUfunction)&m->compute;
        END(CUDA_SUCCESS);
    }
    END(CUDA_ERROR_NOT_FOUND);
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
    BEGIN("cuModuleUnload");
    KV("module=%p", (void *)hmod);
    if (!inited)
        END(CUDA_ERROR_NOT_INITIALIZED);
    if (!sim_handle_ok(hmod, H_MODULE) || !((struct sim_module *)hmod)->alive)
        END(CUDA_ERROR_INVALID_HANDLE);
    /* launches already enqueued hold their descriptors: they still run */
    ((struct sim_module *)hmod)->alive = 0;
    END(CUDA_SUCCESS);
}

/* What every launch checks first: the driver is up, f's module is loaded, and the
 * stream resolves to one of f's context (a function of another context: invalid). */
static CUresult launch_stream(const struct sim_func *f, CUstream h, int ptsz, struct sim_stream **s)
{
    CUresult rc;
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!f->mod->alive)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((rc = resolve_stream(h, ptsz, s)))
        return rc;
    return (*s)->ctx != f->mod->ctx ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

/* cusim_compute: the program's own SM work, which does nothing when it runs, but which
 * cuStreamQuery finds running (CUDA_ERROR_NOT_READY, nothing executed) for as many queries
 * as its one parameter (unsigned int) says; a synchronize, an event or a context
 * synchronize that waits for it ends it at once.  Any grid and block of at most 1024
 * threads. */
static CUresult compute_op(struct call *c, const struct sim_func *f, unsigned blocks, unsigned threads,
                           CUstream h, void **params, int ptsz)
{
    struct sim_stream *s;
    int capturing;
    CUresult rc;
    unsigned polls = params && params[0] ? *(const unsigned *)params[0] : 0;
    sim_kv(c, "kernel=%s grid=%u block=%u polls=%u", f->name, blocks, threads, polls);
    if ((rc = launch_stream(f, h, ptsz, &s)))
        return rc;
    if (blocks == 0 || threads == 0 || threads > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = stream_use(s, &capturing)))
        return rc;
    if (capturing)
        return CUDA_SUCCESS; /* nothing to replay */
    s->compute_last = sim_enqueue(s, sim_node_new(N_COMPUTE));
    s->compute_polls = polls;
    return CUDA_SUCCESS;
}

/* The occupancy calculator: 2048 threads per SM, at most 32 blocks. */
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction hf, int threads, size_t smem)
{
    BEGIN("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    KV("threads=%d smem=%zu", threads, smem);
    if (!inited)
        END(CUDA_ERROR_NOT_INITIALIZED);
    if (!sim_handle_ok(hf, H_FUNC))
        END(CUDA_ERROR_INVALID_HANDLE);
    if (!n || threads <= 0 || threads > 1024)
        END(CUDA_ERROR_INVALID_VALUE);
    *n = 2048 / threads < 32 ? 2048 / threads : 32;
    END(CUDA_SUCCESS);
}

/* The 2D pairs of a launch's descriptors (copy_kernel.h).  A _rows twin (rows): a CB_KROWS
 * head is followed by its CB_KROWS_TAIL slot, a tail follows its head, no slot is both, and
 * the rows of a pair of more than one row do not overlap (width <= each pitch; the sim
 * copies rows in order, so an overlap would not show as wrong bytes).  A plain tier: no
 * slot has either flag (on a GPU it would read them as a length).  The first slot that
 * breaks this (*why: the reason), or -1.  The library builds these; a wrong one is its bug:
 * the launch is refused as a wrong count is, and the misuse counted and logged (so that a
 * library that goes on copy by copy after the refusal is still caught). */
static long kdesc_malformed(const struct cb_kcopy *kc, size_t count, int rows, const char **why)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t b = kc[i].bytes;
        if (!rows && (b & (CB_KROWS | CB_KROWS_TAIL))) {
            *why = "not-rows-kernel";
            return (long)i;
        }
        if (b & CB_KROWS_TAIL) {
            *why = "stray-tail"; /* also a head that is a tail too */
            return (long)i;
        }
        if (!(b & CB_KROWS))
            continue;
        if (i + 1 >= count || !(kc[i + 1].bytes & CB_KROWS_TAIL) || (kc[i + 1].bytes & CB_KROWS)) {
            *why = "no-tail";
            return (long)i;
        }
        uint64_t w = b & CB_KLEN_MASK, h = kc[i + 1].bytes & CB_KLEN_MASK;
        if (h > 1 && (w > kc[i + 1].dst || w > kc[i + 1].src)) {
            *why = "rows-overlap";
            return (long)i;
        }
        i++; /* its tail */
    }
    return -1;
}

/* cuLaunchKernel(_ptsz).  A function that is not one of cubatch's copy kernels cannot run
 * here: CUDA_ERROR_NOT_SUPPORTED, as before.  A copy kernel is checked like a launch (plus
 * the kernel's contract: 1-D grid and block, no dynamic shared memory, count <= capacity,
 * flags 0, well-formed 2D pairs and only for a _rows twin: kdesc_malformed), its
 * descriptors are copied now (the real driver copies kernelParams at launch),
 * and one node does the copies when it runs (kernel_access, run_kernel in core.c). */
static CUresult launch_op(struct call *c, CUfunction hf, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned smem, CUstream h, void **params, void **extra,
                          int ptsz)
{
    static const char *const orders[] = { "reverse", "forward", "shuffle" };
    struct sim_stream *s;
    int capturing;
    CUresult rc;
    if (!sim_handle_ok(hf, H_FUNC))
        return CUDA_ERROR_NOT_SUPPORTED;
    const struct sim_func *f = (const struct sim_func *)hf;
    if (f == &f->mod->compute)
        return compute_op(c, f, gx * gy * gz, bx * by * bz, h, params, ptsz);
    const unsigned char *kp = params ? params[0] : NULL;
    uint32_t count = 0, flags = 0;
    if (kp) { /* only the tier's CB_KPARAMS_BYTES(cap) bytes may be read: count, flags, count descriptors */
        memcpy(&count, kp + offsetof(struct cb_kparams, count), sizeof count);
        memcpy(&flags, kp + offsetof(struct cb_kparams, flags), sizeof flags);
        sim_kv(c, "kernel=%s count=%u grid=%u block=%u order=%s", f->name, count, gx, bx, orders[sim_cfg.batch_order]);
    } else {
        sim_kv(c, "kernel=%s count=- grid=%u block=%u order=%s", f->name, gx, bx, orders[sim_cfg.batch_order]);
    }
    if ((rc = launch_stream(f, h, ptsz, &s)))
        return rc;
    if (gx == 0 || gx > 2147483647u || gy != 1 || gz != 1 || bx == 0 || bx > 1024 || by != 1 || bz != 1)
        return CUDA_ERROR_INVALID_VALUE;
    if (smem != 0 || !kp || extra) /* kp: kernelParams and kernelParams[0] */
        return CUDA_ERROR_INVALID_VALUE;
    if (count > f->cap || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct cb_kcopy *kc = kcopy_dup(kp + offsetof(struct cb_kparams, c), count); /* copied now, as the driver does */
    const char *why;
    long bad = kdesc_malformed(kc, count, f->rows, &why);
    if (bad >= 0) {
        sim_kv(c, "malformed=%ld reason=%s", bad, why);
        sim_errors_n++;
        sim_logline("KERNEL_BAD_PARAMS kernel=%s index=%ld reason=%s", f->name, bad, why);
        free(kc);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if ((rc = stream_use(s, &capturing))) {
        free(kc);
        return rc;
    }
    if (capturing) {
        struct gop g = { .kind = GOP_KERNEL, .kc = kc, .nkc = count, .kname = f->name };
        graph_add(s->cap->graph, &g); /* copies the descriptors */
        free(kc);
        sim_kv(c, "captured=1");
        return CUDA_SUCCESS;
    }
    struct node *nd = sim_node_new(N_KERNEL);
    nd->kc = kc;
    nd->nkc = count;
    nd->kname = f->name;
    nd->order = sim_cfg.batch_order;
    sim_enqueue(s, nd);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                unsigned int by, unsigned int bz, unsigned int smem, CUstream h, void **params,
                                void **extra)
{ BEGIN_S("cuLaunchKernel", h); END(launch_op(&C_, f, gx, gy, gz, bx, by, bz, smem, h, params, extra, 0)); }
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                     unsigned int by, unsigned int bz, unsigned int smem, CUstream h, void **params,
                                     void **extra)
{ BEGIN_S("cuLaunchKernel_ptsz", h); END(launch_op(&C_, f, gx, gy, gz, bx, by, bz, smem, h, params, extra, 1)); }
/* Only the compute stand-in runs here (the copy kernel is launched by
 * cuLaunchKernel); its launch completion and programmatic events are recorded
 * after it, as a record on its stream would be. */
static CUresult event_record(struct call *c, CUevent h, CUstream hs, int ptsz);
static CUresult launch_ex_op(struct call *c, const CUlaunchConfig *cfg, CUfunction hf, void **params, int ptsz)
{
    if (!cfg)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_handle_ok(hf, H_FUNC) || (const struct sim_func *)hf != &((const struct sim_func *)hf)->mod->compute)
        return CUDA_ERROR_NOT_SUPPORTED;
    const struct sim_func *f = (const struct sim_func *)hf;
    CUresult rc = compute_op(c, f, cfg->gridDimX * cfg->gridDimY * cfg->gridDimZ,
                             cfg->blockDimX * cfg->blockDimY * cfg->blockDimZ, cfg->hStream, params, ptsz);
    for (unsigned i = 0; rc == CUDA_SUCCESS && cfg->attrs && i < cfg->numAttrs; i++) {
        const CUlaunchAttribute *a = &cfg->attrs[i];
        CUevent e = a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT ? a->value.programmaticEvent.event
                    : a->id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT ? a->value.launchCompletionEvent.event
                                                                            : NULL;
        if (e)
            rc = event_record(c, e, cfg->hStream, ptsz);
    }
    return rc;
}
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    (void)extra;
    BEGIN_S("cuLaunchKernelEx", config ? config->hStream : NULL);
    END(launch_ex_op(&C_, config, f, params, 0));
}
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    (void)extra;
    BEGIN_S("cuLaunchKernelEx_ptsz", config ? config->hStream : NULL);
    END(launch_ex_op(&C_, config, f, params, 1));
}

/* ------------------------------------------------------------------ events */

CUresult CUDAAPI cuEventCreate(CUevent *ph, unsigned int flags)
{
    BEGIN("cuEventCreate");
    struct sim_ctx *c;
    CUresult rc = need_ctx(&c);
    if (!rc && (!ph || (flags & ~0xfu)))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc) {
        struct sim_event *e = calloc(1, sizeof *e);
        if (!e)
            abort();
        e->flags = flags;
        e->ctx = c;
        sim_handle_add(e, H_EVENT);
        *ph = (CUevent)e;
        KV("event=%p", (void *)e);
    }
    END(rc);
}

static CUresult event_destroy(CUevent h)
{
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!sim_handle_ok(h, H_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    sim_handle_del(h);
    free(h);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy_v2(CUevent h) { BEGIN("cuEventDestroy_v2"); END(event_destroy(h)); }
CUresult CUDAAPI cuEventDestroy(CUevent h) { BEGIN("cuEventDestroy"); END(event_destroy(h)); }

static CUresult event_record(struct call *c, CUevent h, CUstream hs, int ptsz)
{
    struct sim_stream *s;
    int capturing;
    CUresult rc;
    sim_kv(c, "event=%p", (void *)h);
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!sim_handle_ok(h, H_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((rc = resolve_stream(hs, ptsz, &s)))
        return rc;
    struct sim_event *e = (struct sim_event *)h;
    if (e->ctx != s->ctx) /* an event of another context (a wait may cross contexts, a record may not) */
        return CUDA_ERROR_INVALID_HANDLE;
    if ((rc = stream_use(s, &capturing)))
        return rc;
    if (capturing) {
        struct gop g = { .kind = GOP_NOP };
        graph_add(s->cap->graph, &g);
        e->cap = s->cap;
        e->node = 0;
        return CUDA_SUCCESS;
    }
    e->cap = NULL;
    struct node *nd = sim_node_new(N_NOP);
    nd->stamp = e;
    e->node = sim_enqueue(s, nd);
    e->gate = s->compute_last && sim_node_pending(s->compute_last) ? s->compute_last : 0;
    e->gate_s = e->gate ? s : NULL;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent h, CUstream s) { BEGIN_S("cuEventRecord", s); END(event_record(&C_, h, s, 0)); }
CUresult CUDAAPI cuEventRecord_ptsz(CUevent h, CUstream s) { BEGIN_S("cuEventRecord_ptsz", s); END(event_record(&C_, h, s, 1)); }
CUresult CUDAAPI cuEventRecordWithFlags(CUevent h, CUstream s, unsigned int flags)
{ (void)flags; BEGIN_S("cuEventRecordWithFlags", s); END(event_record(&C_, h, s, 0)); }
CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent h, CUstream s, unsigned int flags)
{ (void)flags; BEGIN_S("cuEventRecordWithFlags_ptsz", s); END(event_record(&C_, h, s, 1)); }

/* An event standing for all work of a context so far (CUDA 12.5+). */
static CUresult ctx_record_event(struct call *c, CUcontext hctx, CUevent h)
{
    struct sim_ctx *ctx = NULL;
    CUresult rc;
    sim_kv(c, "event=%p", (void *)h);
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (hctx) {
        if (!sim_handle_ok(hctx, H_CTX) || !((struct sim_ctx *)hctx)->alive)
            return CUDA_ERROR_INVALID_CONTEXT;
        ctx = (struct sim_ctx *)hctx;
    } else if ((rc = need_ctx(&ctx))) {
        return rc;
    }
    if (!sim_handle_ok(h, H_EVENT) || ((struct sim_event *)h)->ctx != ctx)
        return CUDA_ERROR_INVALID_HANDLE;
    for (struct sim_stream *o = ctx->streams; o; o = o->next)
        if (o->cap)
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    struct sim_event *e = (struct sim_event *)h;
    e->cap = NULL;
    e->node = sim_enqueue_ctx(ctx, sim_node_new(N_NOP));
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxRecordEvent(CUcontext ctx, CUevent h) { BEGIN("cuCtxRecordEvent"); END(ctx_record_event(&C_, ctx, h)); }

/* A query or a synchronize of an event recorded in a capture in progress waits for work
 * that will never run: refused and the capture invalidated, in every mode.  Any other
 * event's is a potentially unsafe call.  A query of an event recorded behind a
 * cusim_compute launch finds it running (CUDA_ERROR_NOT_READY, nothing executed) while
 * that launch's stream has polls left, as cuStreamQuery does. */
static CUresult event_sync(CUevent h, int query)
{
    CUresult rc;
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!sim_handle_ok(h, H_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    struct sim_event *e = (struct sim_event *)h;
    if (capture_active(e->cap)) {
        capture_invalidate(e->cap);
        return CUDA_ERROR_CAPTURED_EVENT;
    }
    if ((rc = capture_refuses(CAP_UNSAFE, NULL, NULL)))
        return rc;
    if (query && e->gate && sim_handle_ok(e->gate_s, H_STREAM) && e->gate_s->compute_last == e->gate &&
        sim_node_pending(e->gate) && e->gate_s->compute_polls > 0) {
        e->gate_s->compute_polls--;
        return CUDA_ERROR_NOT_READY;
    }
    sim_run(e->node);
    return e->ctx->sticky;
}
CUresult CUDAAPI cuEventSynchronize(CUevent h) { BEGIN("cuEventSynchronize"); KV("event=%p", (void *)h); END(event_sync(h, 0)); }
CUresult CUDAAPI cuEventQuery(CUevent h) { BEGIN("cuEventQuery"); KV("event=%p", (void *)h); END(event_sync(h, 1)); }

static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
    if (!inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_handle_ok(a, H_EVENT) || !sim_handle_ok(b, H_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((((struct sim_event *)a)->flags | ((struct sim_event *)b)->flags) & CU_EVENT_DISABLE_TIMING)
        return CUDA_ERROR_INVALID_HANDLE;
    sim_run(((struct sim_event *)a)->node);
    sim_run(((struct sim_event *)b)->node);
    if (((struct sim_event *)a)->ctx->sticky)
        return ((struct sim_event *)a)->ctx->sticky;
    /* the simulated GPU clock between the two records (CUSIM_COST; 0 without) */
    *ms = (float)((double)((long long)((struct sim_event *)b)->stamp_ns - (long long)((struct sim_event *)a)->stamp_ns) / 1e6);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{ BEGIN("cuEventElapsedTime"); END(elapsed(ms, a, b)); }
CUresult CUDAAPI cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{ BEGIN("cuEventElapsedTime_v2"); END(elapsed(ms, a, b)); }

/* A capture may depend only on its own work: an event last recorded outside any capture
 * is uncaptured work, unless waited for as an external event. */
static int wait_isolated(const struct sim_event *e, const struct sim_capture *k, unsigned flags)
{
    return e->cap != k && e->node != 0 && !(flags & CU_EVENT_WAIT_EXTERNAL);
}

static CUresult wait_event(struct call *c, CUstream hs, CUevent h, unsigned flags, int ptsz)
{
    struct sim_stream *s;
    int capturing;
    CUresult rc;
    sim_kv(c, "event=%p", (void *)h);
    if ((rc = resolve_stream(hs, ptsz, &s)))
        return rc;
    if (!sim_handle_ok(h, H_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~1u)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_event *e = (struct sim_event *)h;
    if ((rc = capture_refuses(0, s, NULL)))
        return rc;
    if (capture_active(e->cap) && !s->cap) {
        if (s->kind == ST_LEGACY) { /* the legacy stream cannot join a capture */
            capture_invalidate(e->cap);
            return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        }
        s->cap = e->cap; /* the waiting stream joins the capture */
        sim_kv(c, "joined=1");
        return CUDA_SUCCESS;
    }
    if (capture_active(s->cap) && wait_isolated(e, s->cap, flags)) {
        capture_invalidate(s->cap);
        return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    if ((rc = stream_use(s, &capturing)))
        return rc;
    if (capturing) /* ordering inside a graph is its op order (linear) */
        return CUDA_SUCCESS;
    struct node *nd = sim_node_new(N_NOP);
    sim_node_add_dep(nd, e->node);
    sim_enqueue(s, nd);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{ BEGIN_S("cuStreamWaitEvent", s); END(wait_event(&C_, s, e, flags, 0)); }
CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int flags)
{ BEGIN_S("cuStreamWaitEvent_ptsz", s); END(wait_event(&C_, s, e, flags, 1)); }

/* ------------------------------------------------------------------ capture and graphs */

static CUresult begin_capture(CUstream h, int ptsz, CUstreamCaptureMode mode)
{
    struct sim_stream *s;
    CUresult rc = resolve_stream(h, ptsz, &s);
    if (rc)
        return rc;
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->kind == ST_LEGACY)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (s->cap)
        return CUDA_ERROR_ILLEGAL_STATE;
    struct sim_capture *k = calloc(1, sizeof *k);
    struct sim_graph *g = calloc(1, sizeof *g);
    if (!k || !g)
        abort();
    k->id = sim_next_id();
    k->status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    k->mode = mode;
    k->thread = pthread_self();
    k->origin = s;
    k->graph = g;
    k->next = captures;
    captures = k;
    s->cap = k;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode)
{ BEGIN_S("cuStreamBeginCapture_v2", h); KV("mode=%d", (int)mode); END(begin_capture(h, 0, mode)); }
CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode)
{ BEGIN_S("cuStreamBeginCapture_v2_ptsz", h); KV("mode=%d", (int)mode); END(begin_capture(h, 1, mode)); }
CUresult CUDAAPI cuStreamBeginCapture(CUstream h)
{ BEGIN_S("cuStreamBeginCapture", h); END(begin_capture(h, 0, CU_STREAM_CAPTURE_MODE_GLOBAL)); }
CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream h)
{ BEGIN_S("cuStreamBeginCapture_ptsz", h); END(begin_capture(h, 1, CU_STREAM_CAPTURE_MODE_GLOBAL)); }

static CUresult end_capture(CUstream h, int ptsz, CUgraph *pg)
{
    struct sim_stream *s;
    CUresult rc = resolve_stream(h, ptsz, &s);
    if (rc)
        return rc;
    if (!pg)
        return CUDA_ERROR_INVALID_VALUE;
    if (!s->cap)
        return CUDA_ERROR_ILLEGAL_STATE;
    struct sim_capture *k = s->cap;
    if (k->origin != s)
        return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    if (k->cig) /* ended by cuStreamEndCaptureToCig only (api13x.c) */
        return CUDA_ERROR_ILLEGAL_STATE;
    if (k->mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && !pthread_equal(k->thread, pthread_self()))
        return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    for (struct sim_stream *o = s->ctx->streams; o; o = o->next)
        if (o->cap == k)
            o->cap = NULL;
    *pg = NULL;
    if (k->status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        graph_free_ops(k->graph);
        free(k->graph);
        k->graph = NULL;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    if (k->target && sim_handle_ok(k->target, H_GRAPH)) { /* a recapture: its ops replace the graph's */
        graph_free_ops(k->target);
        *k->target = *k->graph;
        free(k->graph);
        *pg = (CUgraph)k->target;
    } else {
        sim_handle_add(k->graph, H_GRAPH);
        *pg = (CUgraph)k->graph;
    }
    k->graph = NULL;
    /* k stays allocated: events recorded during the capture still point at it */
    k->status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamEndCapture(CUstream h, CUgraph *pg) { BEGIN_S("cuStreamEndCapture", h); END(end_capture(h, 0, pg)); }
CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream h, CUgraph *pg) { BEGIN_S("cuStreamEndCapture_ptsz", h); END(end_capture(h, 1, pg)); }

static CUresult is_capturing(CUstream h, int ptsz, CUstreamCaptureStatus *st)
{
    struct sim_stream *s;
    CUresult rc = resolve_stream(h, ptsz, &s);
    if (rc)
        return rc;
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = capture_refuses(CAP_PEEK, s, NULL)))
        return rc;
    *st = s->cap ? (CUstreamCaptureStatus)s->cap->status : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *st)
{ BEGIN_S("cuStreamIsCapturing", h); END(is_capturing(h, 0, st)); }
CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus *st)
{ BEGIN_S("cuStreamIsCapturing_ptsz", h); END(is_capturing(h, 1, st)); }

static CUresult capture_info(CUstream h, int ptsz, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                             const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
    CUresult rc = is_capturing(h, ptsz, st);
    if (rc)
        return rc;
    struct sim_stream *s;
    resolve_stream(h, ptsz, &s);
    if (s->cap) {
        if (id)
            *id = s->cap->id;
        if (g)
            *g = (CUgraph)(s->cap->target ? s->cap->target : s->cap->graph);
    }
    if (deps)
        *deps = NULL;
    if (edges)
        *edges = NULL;
    if (ndeps)
        *ndeps = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                           const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *n)
{ BEGIN_S("cuStreamGetCaptureInfo_v3", h); END(capture_info(h, 0, st, id, g, deps, edges, n)); }
CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                                const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *n)
{ BEGIN_S("cuStreamGetCaptureInfo_v3_ptsz", h); END(capture_info(h, 1, st, id, g, deps, edges, n)); }
CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                           const CUgraphNode **deps, size_t *n)
{ BEGIN_S("cuStreamGetCaptureInfo_v2", h); END(capture_info(h, 0, st, id, g, deps, NULL, n)); }
CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                                const CUgraphNode **deps, size_t *n)
{ BEGIN_S("cuStreamGetCaptureInfo_v2_ptsz", h); END(capture_info(h, 1, st, id, g, deps, NULL, n)); }
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id)
{ BEGIN_S("cuStreamGetCaptureInfo", h); END(capture_info(h, 0, st, id, NULL, NULL, NULL, NULL)); }
CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id)
{ BEGIN_S("cuStreamGetCaptureInfo_ptsz", h); END(capture_info(h, 1, st, id, NULL, NULL, NULL, NULL)); }

CUresult CUDAAPI cuGraphCreate(CUgraph *pg, unsigned int flags)
{
    BEGIN("cuGraphCreate");
    if (!pg || flags)
        END(CUDA_ERROR_INVALID_VALUE);
    struct sim_graph *g = calloc(1, sizeof *g);
    if (!g)
        abort();
    sim_handle_add(g, H_GRAPH);
    *pg = (CUgraph)g;
    END(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphDestroy(CUgraph h)
{
    BEGIN("cuGraphDestroy");
    if (!sim_handle_ok(h, H_GRAPH))
        END(CUDA_ERROR_INVALID_VALUE);
    struct sim_graph *g = (struct sim_graph *)h;
    sim_handle_del(g);
    graph_free_ops(g);
    free(g);
    END(CUDA_SUCCESS);
}

static CUresult instantiate(CUgraphExec *pe, CUgraph h)
{
    if (!pe || !sim_handle_ok(h, H_GRAPH))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_graph *g = (struct sim_graph *)h, *x = calloc(1, sizeof *x);
    if (!x)
        abort();
    for (size_t i = 0; i < g->nops; i++)
        graph_add(x, &g->ops[i]);
    sim_handle_add(x, H_GEXEC);
    *pe = (CUgraphExec)x;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g, unsigned long long flags)
{ (void)flags; BEGIN("cuGraphInstantiateWithFlags"); END(instantiate(pe, g)); }
CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *pe, CUgraph g, CUgraphNode *errNode, char *log, size_t logsz)
{
    BEGIN("cuGraphInstantiate_v2");
    if (errNode)
        *errNode = NULL;
    if (log && logsz)
        log[0] = 0;
    END(instantiate(pe, g));
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec h)
{
    BEGIN("cuGraphExecDestroy");
    if (!sim_handle_ok(h, H_GEXEC))
        END(CUDA_ERROR_INVALID_VALUE);
    struct sim_graph *x = (struct sim_graph *)h;
    sim_handle_del(x);
    graph_free_ops(x);
    free(x);
    END(CUDA_SUCCESS);
}

/* graph ops run as stream-ordered nodes on the launch stream, in capture order */
static CUresult graph_launch(struct call *c, CUgraphExec h, CUstream hs, int ptsz)
{
    struct sim_stream *s;
    int capturing;
    CUresult rc;
    if ((rc = resolve_stream(hs, ptsz, &s)))
        return rc;
    if (!sim_handle_ok(h, H_GEXEC))
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = stream_use(s, &capturing)))
        return rc;
    struct sim_graph *x = (struct sim_graph *)h;
    sim_kv(c, "ops=%zu", x->nops);
    for (size_t i = 0; i < x->nops; i++) {
        const struct gop *g = &x->ops[i];
        if (capturing) {
            graph_add(s->cap->graph, g);
            continue;
        }
        /* a 2D copy's sides: their footprints (checked at capture not to wrap) */
        size_t dfoot = g->rows ? (g->rows - 1) * g->dpitch + g->n : g->n;
        size_t sfoot = g->rows ? (g->rows - 1) * g->spitch + g->n : g->n;
        if (((g->kind == GOP_COPY || g->kind == GOP_COPY2D) &&
             (sim_mem_in_quarantine(g->dst, dfoot) || sim_mem_in_quarantine(g->src, sfoot))) ||
            (g->kind == GOP_MEMSET && sim_mem_in_quarantine(g->dst, g->n * (size_t)g->elsize))) {
            sim_error_uaf("graph-launch", g->dst, g->n); /* the graph names freed memory: skip the op */
            continue;
        }
        struct node *nd;
        switch (g->kind) {
        case GOP_COPY:
            nd = sim_node_new(N_COPY);
            nd->dst = g->dst;
            nd->src = g->src;
            nd->n = g->n;
            { /* re-check buffers at execution only if they are live allocations now */
                struct sim_alloc *a = sim_mem_find(g->dst);
                nd->dst_id = a ? a->buffer_id : 0;
                a = sim_mem_find(g->src);
                nd->src_id = a ? a->buffer_id : 0;
            }
            break;
        case GOP_COPY2D: /* as GOP_COPY: a pageable source is read when it runs */
            nd = sim_node_new(N_COPY2D);
            nd->dst = g->dst;
            nd->src = g->src;
            nd->n = g->n;
            nd->rows = g->rows;
            nd->dpitch = g->dpitch;
            nd->spitch = g->spitch;
            {
                struct sim_alloc *a = sim_mem_find(g->dst);
                nd->dst_id = a ? a->buffer_id : 0;
                a = sim_mem_find(g->src);
                nd->src_id = a ? a->buffer_id : 0;
            }
            break;
        case GOP_MEMSET:
            nd = sim_node_new(N_MEMSET);
            nd->dst = g->dst;
            nd->n = g->n;
            nd->val = g->val;
            nd->elsize = g->elsize;
            {
                struct sim_alloc *a = sim_mem_find(g->dst);
                nd->dst_id = a ? a->buffer_id : 0;
            }
            break;
        case GOP_KERNEL: /* checked (faults) and scrambled when it executes, as launched */
            nd = sim_node_new(N_KERNEL);
            nd->kc = kcopy_dup(g->kc, g->nkc);
            nd->nkc = g->nkc;
            nd->kname = g->kname;
            nd->order = sim_cfg.batch_order;
            break;
        case GOP_HOST:
            nd = sim_node_new(N_HOST);
            nd->fn = g->fn;
            nd->ud = g->ud;
            break;
        default:
            nd = sim_node_new(N_NOP);
            break;
        }
        sim_enqueue(s, nd);
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphLaunch(CUgraphExec h, CUstream s) { BEGIN_S("cuGraphLaunch", s); END(graph_launch(&C_, h, s, 0)); }
CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec h, CUstream s) { BEGIN_S("cuGraphLaunch_ptsz", s); END(graph_launch(&C_, h, s, 1)); }

/* ------------------------------------------------------------------ for api13x.c (sim.h) */

CUresult sim_copy_async(struct call *c, void *dst, const void *src, size_t n, CUstream h, int ptsz, int stage_src)
{ return copy_op_ex(c, dst, src, n, h, ptsz, SIDE_ANY, SIDE_ANY, 0, stage_src); }
CUresult sim_host_func(struct call *c, CUstream h, int ptsz, CUhostFn fn, void *ud)
{ return host_op(c, h, ptsz, fn, NULL, ud); }
CUresult sim_stream_sync(CUstream h, int ptsz) { return stream_sync(h, ptsz); }

CUresult sim_begin_capture(CUstream h, int ptsz, CUstreamCaptureMode mode, struct sim_graph *target, int cig)
{
    struct sim_stream *s;
    CUresult rc = begin_capture(h, ptsz, mode);
    if (rc)
        return rc;
    resolve_stream(h, ptsz, &s);
    s->cap->target = target;
    s->cap->cig = cig;
    return CUDA_SUCCESS;
}

/* The stream leaves its CIG capture (and so do the streams that joined it); a valid
 * capture's work runs on the stream as a graph launch would run it: the sim's stand-in for
 * the graphics API submitting the command list right away. */
CUresult sim_end_capture_cig(struct call *c, CUstream h, int ptsz)
{
    struct sim_stream *s;
    CUresult rc = resolve_stream(h, ptsz, &s);
    if (rc)
        return rc;
    struct sim_capture *k = s->cap;
    if (!k || !k->cig || k->origin != s)
        return CUDA_ERROR_INVALID_VALUE;
    for (struct sim_stream *o = s->ctx->streams; o; o = o->next)
        if (o->cap == k)
            o->cap = NULL;
    struct sim_graph *g = k->graph;
    k->graph = NULL;
    if (k->status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        k->status = CU_STREAM_CAPTURE_STATUS_NONE;
        sim_handle_add(g, H_GEXEC);
        rc = graph_launch(c, (CUgraphExec)g, h, ptsz);
        sim_handle_del(g);
    } else {
        rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    graph_free_ops(g);
    free(g);
    return rc;
}
