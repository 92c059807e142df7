/* Simulated CUDA driver: configuration, call log, counters, fault injection, handle and
 * memory registries, and the deferred-work engine. */
#include "sim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

struct sim_config sim_cfg;
pthread_mutex_t sim_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sim_cv = PTHREAD_COND_INITIALIZER;
unsigned long sim_errors_n;
unsigned long sim_kernel_copies_n;
static int cfg_loaded;
static unsigned long long id_counter;

unsigned long long sim_next_id(void) { return ++id_counter; }

/* ------------------------------------------------------------------ configuration */

static void load_config(void)
{
    const char *e;
    if (sim_cfg.logfd > 0)
        close(sim_cfg.logfd);
    memset(&sim_cfg, 0, sizeof sim_cfg);
    sim_cfg.driver_version = 13000;
    sim_cfg.devices = 1;
    sim_cfg.batch_order = ORDER_REVERSE;
    sim_cfg.seed = 1;
    sim_cfg.logfd = -1;
    if ((e = getenv("CUSIM_DRIVER_VERSION")) && *e)
        sim_cfg.driver_version = atoi(e);
    if ((e = getenv("CUSIM_DEVICES")) && *e) {
        sim_cfg.devices = atoi(e);
        if (sim_cfg.devices < 0)
            sim_cfg.devices = 0;
        if (sim_cfg.devices > 16)
            sim_cfg.devices = 16;
    }
    if ((e = getenv("CUSIM_BATCH_ORDER")) && *e) {
        if (!strcmp(e, "forward"))
            sim_cfg.batch_order = ORDER_FORWARD;
        else if (!strcmp(e, "shuffle"))
            sim_cfg.batch_order = ORDER_SHUFFLE;
        else
            sim_cfg.batch_order = ORDER_REVERSE;
    }
    if ((e = getenv("CUSIM_MAX_COPY")) && *e)
        sim_cfg.max_copy = strtoull(e, NULL, 0);
    if ((e = getenv("CUSIM_DEP_ORDER")) && *e)
        sim_cfg.deps_reversed = !strcmp(e, "reverse");
    if ((e = getenv("CUSIM_SEED")) && *e)
        sim_cfg.seed = strtoull(e, NULL, 0);
    if (sim_cfg.seed == 0)
        sim_cfg.seed = 0x9e3779b97f4a7c15ull;
    if ((e = getenv("CUSIM_MISSING")) && *e) {
        const char *p = e;
        while (*p && sim_cfg.nmissing < 64) {
            size_t len = strcspn(p, ",");
            if (len > 0 && len < sizeof sim_cfg.missing[0]) {
                memcpy(sim_cfg.missing[sim_cfg.nmissing], p, len);
                sim_cfg.missing[sim_cfg.nmissing][len] = 0;
                sim_cfg.nmissing++;
            }
            p += len;
            if (*p == ',')
                p++;
        }
    }
    if ((e = getenv("CUSIM_FAIL")) && *e) {
        const char *p = e;
        while (*p && sim_cfg.nfail < 64) {
            size_t len = strcspn(p, ",");
            char item[160];
            if (len < sizeof item) {
                char *c1, *c2;
                memcpy(item, p, len);
                item[len] = 0;
                c1 = strchr(item, ':');
                c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (c1 && c2 && (size_t)(c1 - item) < sizeof sim_cfg.fail[0].name) {
                    struct fail_rule *r = &sim_cfg.fail[sim_cfg.nfail++];
                    memcpy(r->name, item, (size_t)(c1 - item));
                    r->name[c1 - item] = 0;
                    r->nth = strtoul(c1 + 1, NULL, 10);
                    r->code = atoi(c2 + 1);
                }
            }
            p += len;
            if (*p == ',')
                p++;
        }
    }
    if ((e = getenv("CUSIM_REGISTERED_ALIAS")) && *e)
        sim_cfg.registered_alias = atoi(e) != 0;
    if ((e = getenv("CUSIM_COST")) && *e) {
        /* name=ns,... with names copy, batch, entry, alloc, kernel, kcopy, cold */
        static const struct { const char *name; size_t off; } costs[] = {
            {"copy", offsetof(struct sim_cost, copy)},     {"batch", offsetof(struct sim_cost, batch)},
            {"entry", offsetof(struct sim_cost, entry)},   {"alloc", offsetof(struct sim_cost, alloc)},
            {"kernel", offsetof(struct sim_cost, kernel)}, {"kcopy", offsetof(struct sim_cost, kcopy)},
            {"cold", offsetof(struct sim_cost, cold)}};
        for (const char *p = e; *p;) {
            size_t len = strcspn(p, ",");
            for (size_t i = 0; i < sizeof costs / sizeof costs[0]; i++) {
                size_t nl = strlen(costs[i].name);
                if (len > nl && !strncmp(p, costs[i].name, nl) && p[nl] == '=')
                    *(unsigned long long *)((char *)&sim_cfg.cost + costs[i].off) = strtoull(p + nl + 1, NULL, 10);
            }
            p += len;
            if (*p == ',')
                p++;
        }
    }
    if ((e = getenv("CUSIM_LOG")) && *e)
        sim_cfg.logfd = open(e, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    cfg_loaded = 1;
}

int sim_is_missing(const char *base)
{
    for (int i = 0; i < sim_cfg.nmissing; i++)
        if (!strcmp(sim_cfg.missing[i], base))
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ counters */

struct counter {
    char name[96];
    unsigned long n;
    UT_hash_handle hh;
};
static struct counter *counters;

static unsigned long count_call(const char *name)
{
    struct counter *c;
    HASH_FIND_STR(counters, name, c);
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c)
            abort();
        snprintf(c->name, sizeof c->name, "%s", name);
        HASH_ADD_STR(counters, name, c);
    }
    return ++c->n;
}

unsigned long cusim_count(const char *exported_name)
{
    struct counter *c;
    unsigned long n = 0;
    if (!exported_name)
        return 0;
    pthread_mutex_lock(&sim_mu);
    HASH_FIND_STR(counters, exported_name, c);
    if (c)
        n = c->n;
    pthread_mutex_unlock(&sim_mu);
    return n;
}

void cusim_reset_counts(void)
{
    struct counter *c, *t;
    pthread_mutex_lock(&sim_mu);
    HASH_ITER(hh, counters, c, t) {
        HASH_DEL(counters, c);
        free(c);
    }
    sim_errors_n = 0;
    sim_kernel_copies_n = 0;
    load_config();
    pthread_mutex_unlock(&sim_mu);
}

unsigned long cusim_errors(void)
{
    unsigned long n;
    pthread_mutex_lock(&sim_mu);
    n = sim_errors_n;
    pthread_mutex_unlock(&sim_mu);
    return n;
}

unsigned long cusim_kernel_copies(void)
{
    unsigned long n;
    pthread_mutex_lock(&sim_mu);
    n = sim_kernel_copies_n;
    pthread_mutex_unlock(&sim_mu);
    return n;
}

unsigned long cusim_pending(void)
{
    unsigned long n;
    pthread_mutex_lock(&sim_mu);
    n = sim_pending_count();
    pthread_mutex_unlock(&sim_mu);
    return n;
}

/* ------------------------------------------------------------------ log */

static void log_write(const char *buf, size_t len)
{
    if (sim_cfg.logfd < 0)
        return;
    while (len > 0) {
        ssize_t w = write(sim_cfg.logfd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        buf += w;
        len -= (size_t)w;
    }
}

void sim_logline(const char *fmt, ...)
{
    char buf[600];
    va_list ap;
    int n;
    if (sim_cfg.logfd < 0)
        return;
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof buf - 2)
        n = sizeof buf - 2;
    buf[n++] = '\n';
    log_write(buf, (size_t)n);
}

void sim_error_uaf(const char *what, const void *p, size_t n)
{
    sim_errors_n++;
    sim_logline("USE_AFTER_FREE op=%s ptr=%p n=%zu", what, p, n);
}

void sim_kv(struct call *c, const char *fmt, ...)
{
    va_list ap;
    int n;
    if (c->kvlen >= sizeof c->kv - 1)
        return;
    c->kv[c->kvlen++] = ' ';
    va_start(ap, fmt);
    n = vsnprintf(c->kv + c->kvlen, sizeof c->kv - c->kvlen, fmt, ap);
    va_end(ap);
    if (n > 0) {
        c->kvlen += (size_t)n;
        if (c->kvlen >= sizeof c->kv)
            c->kvlen = sizeof c->kv - 1;
    }
}

int sim_begin(struct call *c, const char *name, int has_stream, CUstream stream)
{
    static _Thread_local int last_was_batch;
    unsigned long nth;
    c->after_batch = last_was_batch;
    last_was_batch = !strncmp(name, "cuMemcpyBatchAsync", 18);
    c->name = name;
    c->has_stream = has_stream;
    c->stream = stream;
    c->rc = CUDA_SUCCESS;
    c->kvlen = 0;
    c->kv[0] = 0;
    pthread_mutex_lock(&sim_mu);
    if (!cfg_loaded)
        load_config();
    nth = count_call(name);
    for (int i = 0; i < sim_cfg.nfail; i++) {
        struct fail_rule *r = &sim_cfg.fail[i];
        if (!strcmp(r->name, name) && (r->nth == 0 || r->nth == nth)) {
            sim_kv(c, "injected=1");
            sim_end(c, (CUresult)r->code);
            return 1;
        }
    }
    return 0;
}

CUresult sim_end(struct call *c, CUresult rc)
{
    c->rc = rc;
    if (sim_cfg.logfd >= 0) {
        char buf[600];
        int n;
        if (c->has_stream)
            n = snprintf(buf, sizeof buf, "%s rc=%d stream=0x%lx%s\n", c->name, (int)rc,
                         (unsigned long)(uintptr_t)c->stream, c->kv);
        else
            n = snprintf(buf, sizeof buf, "%s rc=%d stream=-%s\n", c->name, (int)rc, c->kv);
        if (n > 0) {
            if ((size_t)n >= sizeof buf) {
                n = sizeof buf - 1;
                buf[n - 1] = '\n';
            }
            log_write(buf, (size_t)n);
        }
    }
    pthread_mutex_unlock(&sim_mu);
    return rc;
}

int sim_stub(const char *name)
{
    struct call c;
    if (sim_begin(&c, name, 0, NULL))
        return (int)c.rc;
    sim_kv(&c, "stub=1");
    return (int)sim_end(&c, CUDA_ERROR_NOT_SUPPORTED);
}

/* ------------------------------------------------------------------ handles */

struct handle {
    const void *p;
    int type;
    UT_hash_handle hh;
};
static struct handle *handles;

void sim_handle_add(void *p, int type)
{
    struct handle *h = calloc(1, sizeof *h);
    if (!h)
        abort();
    h->p = p;
    h->type = type;
    HASH_ADD_PTR(handles, p, h);
}

void sim_handle_del(void *p)
{
    struct handle *h;
    HASH_FIND_PTR(handles, &p, h);
    if (h) {
        HASH_DEL(handles, h);
        free(h);
    }
}

int sim_handle_ok(const void *p, int type)
{
    struct handle *h;
    if (!p)
        return 0;
    HASH_FIND_PTR(handles, &p, h);
    return h && h->type == type;
}

/* ------------------------------------------------------------------ memory registry */

/* Live allocations, sorted by base address. */
static struct sim_alloc **allocs;
static size_t nallocs, capallocs;
static unsigned long long buffer_ids;

/* Freed device / pinned / managed memory is kept (not returned to malloc) for a while so
 * that a late access is detected instead of touching reused memory. */
struct qent { char *base; size_t size; };
#define QUAR_MAX_ENTRIES 4096
#define QUAR_MAX_BYTES (256u << 20)
static struct qent quar[QUAR_MAX_ENTRIES];
static size_t qhead, qcount, qbytes;

static size_t alloc_upper(const void *p) /* first index with base > p */
{
    size_t lo = 0, hi = nallocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((uintptr_t)allocs[mid]->base <= (uintptr_t)p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct sim_alloc *sim_mem_find(const void *p)
{
    size_t i = alloc_upper(p);
    if (i == 0)
        return NULL;
    struct sim_alloc *a = allocs[i - 1];
    if ((uintptr_t)p < (uintptr_t)a->base + a->size)
        return a;
    return NULL;
}

int sim_mem_live_id(const void *p, size_t n, unsigned long long id)
{
    struct sim_alloc *a = sim_mem_find(p);
    return a && a->buffer_id == id && (uintptr_t)p + n <= (uintptr_t)a->base + a->size;
}

struct sim_alloc *sim_mem_find_alias(const void *p, char **host)
{
    uintptr_t u = (uintptr_t)p;
    struct sim_alloc *a;
    if (u < SIM_ALIAS_OFFSET)
        return NULL;
    a = sim_mem_find((const void *)(u - SIM_ALIAS_OFFSET));
    if (!a || !a->alias)
        return NULL;
    if (host)
        *host = (char *)(u - SIM_ALIAS_OFFSET);
    return a;
}

uintptr_t sim_mem_devptr(const struct sim_alloc *a, const void *p)
{
    return (uintptr_t)p + (a->alias ? SIM_ALIAS_OFFSET : 0);
}

int sim_mem_in_quarantine(const void *p, size_t n)
{
    uintptr_t s = (uintptr_t)p, e = s + (n ? n : 1);
    for (size_t k = 0; k < qcount; k++) {
        struct qent *q = &quar[(qhead + k) % QUAR_MAX_ENTRIES];
        uintptr_t qs = (uintptr_t)q->base, qe = qs + q->size;
        if (s < qe && qs < e)
            return 1;
    }
    return 0;
}

static void quar_drop_overlapping(const char *base, size_t size)
{
    /* memory handed out again (by us or the registering program) is no longer freed */
    uintptr_t s = (uintptr_t)base, e = s + size;
    for (size_t k = 0; k < qcount; k++) {
        struct qent *q = &quar[(qhead + k) % QUAR_MAX_ENTRIES];
        uintptr_t qs = (uintptr_t)q->base, qe = qs + q->size;
        if (q->size && s < qe && qs < e)
            q->size = 0; /* keep the slot, forget the range (memory stays with its owner) */
    }
}

struct sim_alloc *sim_mem_add(void *base, size_t size, int kind, struct sim_ctx *ctx, unsigned flags)
{
    struct sim_alloc *a = calloc(1, sizeof *a);
    size_t i;
    if (!a)
        return NULL;
    a->base = base;
    a->size = size;
    a->kind = kind;
    a->ctx = ctx;
    a->flags = flags;
    a->buffer_id = ++buffer_ids;
    if (nallocs == capallocs) {
        size_t nc = capallocs ? capallocs * 2 : 64;
        struct sim_alloc **na = realloc(allocs, nc * sizeof *na);
        if (!na) {
            free(a);
            return NULL;
        }
        allocs = na;
        capallocs = nc;
    }
    i = alloc_upper(base);
    memmove(allocs + i + 1, allocs + i, (nallocs - i) * sizeof *allocs);
    allocs[i] = a;
    nallocs++;
    quar_drop_overlapping(base, size);
    return a;
}

void sim_mem_remove(struct sim_alloc *a, int quarantine)
{
    size_t i = alloc_upper(a->base);
    if (i == 0 || allocs[i - 1] != a)
        return;
    memmove(allocs + i - 1, allocs + i, (nallocs - i) * sizeof *allocs);
    nallocs--;
    if (quarantine) {
        if (qcount == QUAR_MAX_ENTRIES) {
            free(quar[qhead].base);
            qbytes -= quar[qhead].size;
            qhead = (qhead + 1) % QUAR_MAX_ENTRIES;
            qcount--;
        }
        quar[(qhead + qcount) % QUAR_MAX_ENTRIES] = (struct qent){ a->base, a->size };
        qcount++;
        qbytes += a->size;
        while (qbytes > QUAR_MAX_BYTES && qcount > 1) {
            free(quar[qhead].base);
            qbytes -= quar[qhead].size;
            qhead = (qhead + 1) % QUAR_MAX_ENTRIES;
            qcount--;
        }
    }
    free(a);
}

void sim_mem_drop_ctx(const struct sim_ctx *ctx)
{
    for (size_t i = nallocs; i-- > 0;) {
        struct sim_alloc *a = allocs[i];
        if (a->ctx == ctx)
            sim_mem_remove(a, a->kind != MEM_REGISTERED); /* registered memory stays the program's */
    }
}

/* ------------------------------------------------------------------ work nodes */

static struct node *nodes; /* pending (not yet finished) nodes, by id; insertion order = id order */
static uint64_t node_ids;

struct node *sim_node_new(int kind)
{
    struct node *n = calloc(1, sizeof *n);
    if (!n)
        abort();
    n->kind = kind;
    return n;
}

void sim_node_add_dep(struct node *n, uint64_t dep)
{
    if (!dep || !sim_node_pending(dep))
        return;
    for (size_t i = 0; i < n->ndeps; i++)
        if (n->deps[i] == dep)
            return;
    uint64_t *nd = realloc(n->deps, (n->ndeps + 1) * sizeof *nd);
    if (!nd)
        abort();
    n->deps = nd;
    n->deps[n->ndeps++] = dep;
}

int sim_node_pending(uint64_t id)
{
    struct node *n;
    if (!id)
        return 0;
    HASH_FIND(hh, nodes, &id, sizeof id, n);
    return n != NULL;
}

unsigned long sim_pending_count(void)
{
    return HASH_COUNT(nodes);
}

uint64_t sim_enqueue(struct sim_stream *s, struct node *n)
{
    struct sim_ctx *ctx = s->ctx;
    n->id = ++node_ids;
    n->ctx = ctx;
    sim_node_add_dep(n, s->last);
    if (s->kind == ST_LEGACY) {
        for (struct sim_stream *o = ctx->streams; o; o = o->next)
            if (o != s && !(o->flags & CU_STREAM_NON_BLOCKING))
                sim_node_add_dep(n, o->last);
    } else if (!(s->flags & CU_STREAM_NON_BLOCKING)) {
        sim_node_add_dep(n, ctx->legacy->last);
    }
    HASH_ADD(hh, nodes, id, sizeof n->id, n);
    s->last = n->id;
    return n->id;
}

uint64_t sim_enqueue_ctx(struct sim_ctx *ctx, struct node *n)
{
    n->id = ++node_ids;
    n->ctx = ctx;
    for (struct sim_stream *o = ctx->streams; o; o = o->next)
        sim_node_add_dep(n, o->last);
    HASH_ADD(hh, nodes, id, sizeof n->id, n);
    return n->id;
}

static void node_free(struct node *n)
{
    free(n->deps);
    free(n->kc);
    free(n->staged);
    if (n->ents) {
        for (size_t i = 0; i < n->nents; i++)
            free(n->ents[i].staged);
        free(n->ents);
    }
    free(n);
}

static void do_copy(const char *what, char *dst, const char *src, size_t n, const char *staged,
                    unsigned long long dst_id, unsigned long long src_id)
{
    if (dst_id && !sim_mem_live_id(dst, n, dst_id)) {
        sim_error_uaf(what, dst, n);
        return;
    }
    if (!staged && src_id && !sim_mem_live_id(src, n, src_id)) {
        sim_error_uaf(what, src, n);
        return;
    }
    memmove(dst, staged ? staged : src, n);
}

/* A 2D copy (N_COPY2D): each side's footprint is re-checked as do_copy checks a range (it
 * was wholly inside one allocation at the call), then the rows are copied in order. */
static void do_copy2d(const struct node *n)
{
    size_t dfoot = (n->rows - 1) * n->dpitch + n->n, sfoot = (n->rows - 1) * n->spitch + n->n;
    if (n->dst_id && !sim_mem_live_id(n->dst, dfoot, n->dst_id)) {
        sim_error_uaf("copy2d", n->dst, dfoot);
        return;
    }
    if (!n->staged && n->src_id && !sim_mem_live_id(n->src, sfoot, n->src_id)) {
        sim_error_uaf("copy2d", n->src, sfoot);
        return;
    }
    for (size_t r = 0; r < n->rows; r++)
        memmove(n->dst + r * n->dpitch, n->staged ? n->staged + r * n->n : n->src + r * n->spitch, n->n);
}

static unsigned long long rng_next(void)
{
    unsigned long long x = sim_cfg.seed;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    sim_cfg.seed = x;
    return x;
}

/* The order in which the cnt entries of a batch or copy-kernel launch execute. */
static size_t *scrambled(size_t cnt, int order)
{
    size_t *perm = malloc((cnt ? cnt : 1) * sizeof *perm);
    if (!perm)
        abort();
    for (size_t i = 0; i < cnt; i++)
        perm[i] = order == ORDER_REVERSE ? cnt - 1 - i : i;
    if (order == ORDER_SHUFFLE)
        for (size_t i = cnt; i > 1; i--) {
            size_t j = (size_t)(rng_next() % i), t = perm[i - 1];
            perm[i - 1] = perm[j];
            perm[j] = t;
        }
    return perm;
}

/* May a copy kernel running in ctx touch [addr, addr+n) (n > 0)?  NULL: yes, *host = where
 * those bytes are in this process; else the reason of the illegal access.  Reachable: a live
 * DEVICE allocation of ctx, any live MANAGED allocation, pinned host memory (its own address,
 * UVA), registered host memory through its device address (the host address itself unless
 * CUSIM_REGISTERED_ALIAS gave it an alias), each range wholly inside one allocation. */
static const char *kernel_access(struct sim_ctx *ctx, uint64_t addr, uint64_t n, char **host)
{
    const void *p = (const void *)(uintptr_t)addr;
    struct sim_alloc *a;
    char *h;
    if (addr + n < addr)
        return "range";
    if ((a = sim_mem_find_alias(p, &h))) {
        if (addr + n > sim_mem_devptr(a, a->base) + a->size)
            return "range";
        *host = h;
        return NULL;
    }
    a = sim_mem_find(p);
    if (!a)
        return sim_mem_in_quarantine(p, (size_t)n) ? "freed" : "unmapped";
    if (addr + n > (uintptr_t)a->base + a->size)
        return "range";
    if (a->kind == MEM_DEVICE && a->ctx != ctx)
        return "other-context";
    if (a->kind == MEM_REGISTERED && a->alias)
        return "registered-host-address";
    *host = (char *)(uintptr_t)addr;
    return NULL;
}

/* The copies of a copy-kernel launch: a 1D descriptor is one row; a 2D pair (copy_kernel.h:
 * a CB_KROWS head, then its CB_KROWS_TAIL slot, which launch_op checked) is rows rows. */
struct kshape {
    uint64_t dst, src, width, dpitch, spitch, rows;
    int two_d;
};

/* The shape of descriptor i, which is no tail. */
static struct kshape kshape_of(const struct cb_kcopy *kc, size_t i)
{
    const struct cb_kcopy *k = &kc[i];
    if (!(k->bytes & CB_KROWS))
        return (struct kshape){ k->dst, k->src, k->bytes, 0, 0, 1, 0 };
    return (struct kshape){ k->dst, k->src, k->bytes & CB_KLEN_MASK, kc[i + 1].dst, kc[i + 1].src,
                            kc[i + 1].bytes & CB_KLEN_MASK, 1 };
}

/* base + r * pitch, or 0 (*out untouched) if that wraps around the address space. */
static int row_addr(uint64_t base, uint64_t pitch, uint64_t r, uint64_t *out)
{
    if (pitch && r > (UINT64_MAX - base) / pitch)
        return 0;
    *out = base + r * pitch;
    return 1;
}

/* May row r of k run?  NULL: yes, *hd and *hs where its destination and source bytes are in
 * this process; else the reason of the illegal access, *side and *bad the side and the
 * address at fault (a row whose address wraps: "range", at the side's start). */
static const char *krow_access(struct sim_ctx *ctx, const struct kshape *k, uint64_t r, char **hd, char **hs,
                               const char **side, uint64_t *bad)
{
    uint64_t d, s;
    const char *why;
    *side = "dst";
    *bad = k->dst;
    if (!row_addr(k->dst, k->dpitch, r, &d))
        return "range";
    *bad = d;
    if ((why = kernel_access(ctx, d, k->width, hd)))
        return why;
    *side = "src";
    *bad = k->src;
    if (!row_addr(k->src, k->spitch, r, &s))
        return "range";
    *bad = s;
    return kernel_access(ctx, s, k->width, hs);
}

/* A copy-kernel launch: every copy (every row of a 2D pair) is checked first; one illegal
 * access and no copy of the launch happens, the fault is logged and counted, and the
 * context gets the sticky CUDA_ERROR_ILLEGAL_ADDRESS.  Then the descriptors run in the
 * scrambled order, a 2D pair's rows in order (a tail slot, reached on its own, does
 * nothing: the kernel's block given it does nothing either). */
static void run_kernel(struct node *n)
{
    size_t cnt = n->nkc;
    char *hd, *hs;
    const char *side;
    uint64_t bad;
    for (size_t i = 0; i < cnt; i++) {
        if (n->kc[i].bytes & CB_KROWS_TAIL)
            continue; /* its head checks the rows */
        struct kshape k = kshape_of(n->kc, i);
        const char *why = NULL;
        uint64_t r = 0;
        if (k.width == 0)
            continue;
        for (; r < k.rows && !why; r++)
            why = krow_access(n->ctx, &k, r, &hd, &hs, &side, &bad);
        if (why) {
            sim_errors_n++;
            if (k.two_d)
                sim_logline("KERNEL_FAULT ptr=%p n=%llu kernel=%s index=%zu side=%s reason=%s row=%llu",
                            (void *)(uintptr_t)bad, (unsigned long long)k.width, n->kname, i, side, why,
                            (unsigned long long)(r - 1));
            else
                sim_logline("KERNEL_FAULT ptr=%p n=%llu kernel=%s index=%zu side=%s reason=%s",
                            (void *)(uintptr_t)bad, (unsigned long long)k.width, n->kname, i, side, why);
            if (n->ctx)
                n->ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
            return;
        }
    }
    size_t *perm = scrambled(cnt, n->order);
    for (size_t j = 0; j < cnt; j++) {
        size_t i = perm[j];
        if (n->kc[i].bytes & CB_KROWS_TAIL)
            continue;
        struct kshape k = kshape_of(n->kc, i);
        if (k.width == 0)
            continue;
        for (uint64_t r = 0; r < k.rows; r++) {
            krow_access(n->ctx, &k, r, &hd, &hs, &side, &bad); /* checked above: cannot fail */
            memmove(hd, hs, (size_t)k.width);
        }
    }
    sim_kernel_copies_n += cnt;
    free(perm);
}

/* Execute one node whose dependencies are all done.  Called with the lock held; host
 * functions and callbacks run with the lock released (the node is marked running). */
/* The simulated GPU clock (ns): each piece of work advances it by its cost
 * (CUSIM_COST) as it executes; an event record reads it. */
static unsigned long long sim_gpu_ns;

/* What a batch costs: per call, per entry (more when its call came cold), and
 * per change of allocation between consecutive entries (the real batch API
 * slows down with many allocations). */
static unsigned long long batch_cost(const struct node *n)
{
    const struct sim_cost *c = &sim_cfg.cost;
    unsigned long long t = c->batch + (c->entry + (n->cold ? c->cold : 0)) * n->nents;
    for (size_t i = 1; i < n->nents; i++)
        if (n->ents[i].src_id != n->ents[i - 1].src_id || n->ents[i].dst_id != n->ents[i - 1].dst_id)
            t += c->alloc;
    return t;
}

static void execute(struct node *n)
{
    /* after a fault the context's device work no longer runs (host work does) */
    CUresult sticky = n->ctx ? n->ctx->sticky : CUDA_SUCCESS;
    int kind = sticky && (n->kind == N_COPY || n->kind == N_COPY2D || n->kind == N_MEMSET || n->kind == N_BATCH ||
                          n->kind == N_KERNEL)
                   ? N_NOP
                   : n->kind;
    switch (kind) {
    case N_COPY:
        do_copy("copy", n->dst, n->src, n->n, n->staged, n->dst_id, n->src_id);
        sim_gpu_ns += sim_cfg.cost.copy;
        break;
    case N_COPY2D:
        do_copy2d(n);
        sim_gpu_ns += sim_cfg.cost.copy;
        break;
    case N_MEMSET:
        if (n->dst_id && !sim_mem_live_id(n->dst, n->n * (size_t)n->elsize, n->dst_id)) {
            sim_error_uaf("memset", n->dst, n->n);
            break;
        }
        for (size_t i = 0; i < n->n; i++) {
            if (n->elsize == 1)
                ((unsigned char *)n->dst)[i] = (unsigned char)n->val;
            else if (n->elsize == 2)
                ((uint16_t *)n->dst)[i] = (uint16_t)n->val;
            else
                ((uint32_t *)n->dst)[i] = n->val;
        }
        break;
    case N_BATCH: {
        size_t cnt = n->nents;
        size_t *perm = scrambled(cnt, n->order);
        for (size_t k = 0; k < cnt; k++) {
            struct bentry *e = &n->ents[perm[k]];
            do_copy("batch", e->dst, e->src, e->n, e->staged, e->dst_id, e->src_id);
        }
        free(perm);
        sim_gpu_ns += batch_cost(n);
        break;
    }
    case N_KERNEL:
        run_kernel(n);
        sim_gpu_ns += sim_cfg.cost.kernel + sim_cfg.cost.kcopy * n->nkc;
        break;
    case N_HOST:
    case N_CALLBACK:
        n->running = 1;
        pthread_mutex_unlock(&sim_mu);
        if (n->kind == N_HOST)
            n->fn(n->ud);
        else
            n->cb(n->handle, sticky, n->ud);
        pthread_mutex_lock(&sim_mu);
        break;
    case N_FREE: {
        struct sim_alloc *a = sim_mem_find(n->fptr);
        if (a && a->base == n->fptr)
            sim_mem_remove(a, 1);
        else
            sim_error_uaf("free-async", n->fptr, 0);
        break;
    }
    default:
        /* an event record: the event, if still recorded here, reads the clock */
        if (n->stamp && sim_handle_ok(n->stamp, H_EVENT) && n->stamp->node == n->id)
            n->stamp->stamp_ns = sim_gpu_ns;
        break;
    }
    HASH_DEL(nodes, n);
    node_free(n);
    pthread_cond_broadcast(&sim_cv);
}

void sim_run(uint64_t root)
{
    uint64_t *stack;
    size_t sp = 0, cap = 64;
    if (!sim_node_pending(root))
        return;
    stack = malloc(cap * sizeof *stack);
    if (!stack)
        abort();
    stack[sp++] = root;
    while (sp > 0) {
        uint64_t id = stack[sp - 1];
        struct node *n;
        HASH_FIND(hh, nodes, &id, sizeof id, n);
        if (!n) {
            sp--;
            continue;
        }
        if (n->running) { /* another thread is running its host function */
            pthread_cond_wait(&sim_cv, &sim_mu);
            continue;
        }
        /* which dependency runs first is the driver's choice: either order must
         * give the same bytes when every dependency was stated */
#define DEP(n) ((n)->deps[sim_cfg.deps_reversed ? (n)->ndeps - 1 - (n)->dpos : (n)->dpos])
        while (n->dpos < n->ndeps && !sim_node_pending(DEP(n)))
            n->dpos++;
        if (n->dpos < n->ndeps) {
            if (sp == cap) {
                cap *= 2;
                uint64_t *ns = realloc(stack, cap * sizeof *ns);
                if (!ns)
                    abort();
                stack = ns;
            }
            stack[sp++] = DEP(n);
            continue;
        }
#undef DEP
        execute(n);
        sp--;
    }
    free(stack);
}

static void run_matching(struct sim_ctx *ctx, int dev)
{
    /* collect first: running a node may release the lock */
    size_t cnt = HASH_COUNT(nodes), k = 0;
    uint64_t *ids;
    struct node *n, *t;
    if (!cnt)
        return;
    ids = malloc(cnt * sizeof *ids);
    if (!ids)
        abort();
    HASH_ITER(hh, nodes, n, t) {
        if ((!ctx && dev < 0) || n->ctx == ctx || (dev >= 0 && n->ctx && n->ctx->dev == dev))
            ids[k++] = n->id;
    }
    for (size_t i = 0; i < k; i++)
        sim_run(ids[i]);
    free(ids);
}

void sim_run_ctx(struct sim_ctx *ctx) { run_matching(ctx, -1); }
void sim_run_dev(int dev) { run_matching(NULL, dev); }
