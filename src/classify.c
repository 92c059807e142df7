/* classify.c - what memory a pointer points to: device, pinned/registered host,
 * managed, or pageable/unknown (which is never deferred, docs/design.md rule 1).
 *
 * A pointer query costs as much as a good part of what deferring a copy may
 * spend (docs/design.md section 6, "Per-call costs"); two per copy would spend
 * it all.  Copy loops touch few allocations, so each thread
 * keeps the last few allocation ranges it resolved.  Any free, unregister, unmap
 * or context teardown bumps a global generation and so empties every cache: a
 * stale range can never be used, at the price of one query after each free.
 * Pageable results are never cached (they must be re-checked: the memory may be
 * registered later, and registration also bumps the generation). */
#include "internal.h"

#include <stdlib.h>

#define CB_CLASS_CACHE 8

struct cb_range {
    uintptr_t lo, hi;
    uint64_t gen;
    enum cb_kind kind;
    int device;
    CUcontext kctx;
};
struct cb_cache {
    struct cb_range e[CB_CLASS_CACHE];
    unsigned next;
};

static atomic_uint_fast64_t cb_class_gen = 1;
static CB_TLS struct cb_cache *cb_tls_cache;

void cb_forget_classes(void) { atomic_fetch_add_explicit(&cb_class_gen, 1, memory_order_release); }

/* The pair of allocations the thread's last copy went between: a copy loop's
 * next copy usually goes between the same two (cb_classify_pair). */
struct cb_pair {
    uint64_t gen;
    uintptr_t dlo, dhi, slo, shi;
    struct cb_class d, s;
};
static CB_TLS struct cb_pair cb_tls_pair;

int cb_classify_pair(uintptr_t dst, uintptr_t src, struct cb_class *d, struct cb_class *s)
{
    struct cb_pair *pr = &cb_tls_pair;
    uint64_t gen = atomic_load_explicit(&cb_class_gen, memory_order_acquire);
    if (CB_LIKELY(pr->gen == gen && dst - pr->dlo < pr->dhi - pr->dlo && src - pr->slo < pr->shi - pr->slo)) {
        *d = pr->d;
        *s = pr->s;
        return 0;
    }
    if (cb_classify(dst, d) || cb_classify(src, s))
        return -1;
    /* only ranges the cache would keep: known, with a known extent */
    if (d->kind != CB_MEM_UNKNOWN && d->end && s->kind != CB_MEM_UNKNOWN && s->end) {
        uintptr_t dlo = dst, slo = src;
        /* the start of each range, as the per-thread cache has it */
        struct cb_cache *c = cb_tls_cache;
        for (unsigned i = 0; c && i < CB_CLASS_CACHE; i++) {
            if (c->e[i].gen == gen && dst >= c->e[i].lo && dst < c->e[i].hi)
                dlo = c->e[i].lo;
            if (c->e[i].gen == gen && src >= c->e[i].lo && src < c->e[i].hi)
                slo = c->e[i].lo;
        }
        *pr = (struct cb_pair){gen, dlo, d->end, slo, s->end, *d, *s};
    }
    return 0;
}

int cb_classify(uintptr_t p, struct cb_class *out)
{
    uint64_t gen = atomic_load_explicit(&cb_class_gen, memory_order_acquire);
    struct cb_cache *c = cb_tls_cache;
    if (CB_LIKELY(c != NULL)) {
        for (unsigned i = 0; i < CB_CLASS_CACHE; i++) {
            const struct cb_range *r = &c->e[i];
            if (r->gen == gen && p >= r->lo && p < r->hi) {
                out->kind = r->kind;
                out->device = r->device;
                out->end = r->hi;
                out->kctx = r->kctx;
                return 0;
            }
        }
    }
    if (!cb_drv.cuPointerGetAttributes)
        return -1;
    unsigned int memtype = 0, managed = 0;
    int ordinal = -1;
    CUdeviceptr start = 0, devptr = 0;
    size_t size = 0;
    CUcontext ctx = NULL;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,     CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE,      CU_POINTER_ATTRIBUTE_CONTEXT,
                                   CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    void *data[] = {&memtype, &managed, &ordinal, &start, &size, &ctx, &devptr};
    if (cb_drv.cuPointerGetAttributes(7, attrs, data, (CUdeviceptr)p) != CUDA_SUCCESS)
        return -1;
    if (managed)
        out->kind = CB_MEM_MANAGED;
    else if (memtype == CU_MEMORYTYPE_DEVICE)
        out->kind = CB_MEM_DEVICE;
    else if (memtype == CU_MEMORYTYPE_HOST)
        out->kind = CB_MEM_HOST;
    else
        out->kind = CB_MEM_UNKNOWN;
    out->device = out->kind == CB_MEM_DEVICE ? ordinal : -1;
    /* The copy kernel may touch device memory in the context that allocated it,
     * and pinned host memory there when its device address is its host address
     * (UVA; registered memory only where the device can use the host pointer). */
    out->kctx = (out->kind == CB_MEM_DEVICE || (out->kind == CB_MEM_HOST && devptr == (CUdeviceptr)p)) ? ctx : NULL;
    int range_ok = size > 0 && (uintptr_t)start <= p && p - (uintptr_t)start < size;
    out->end = range_ok ? (uintptr_t)start + size : 0;
    if (out->kind == CB_MEM_UNKNOWN || !range_ok)
        return 0;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c)
            return 0; /* classified, just not cached */
        cb_tls_cache = c;
    }
    c->e[c->next] = (struct cb_range){(uintptr_t)start, (uintptr_t)start + size, gen, out->kind, out->device, out->kctx};
    c->next = (c->next + 1) % CB_CLASS_CACHE;
    return 0;
}
