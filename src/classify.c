/* classify.c - what memory a pointer points to: device, pinned/registered host,
 * managed, or pageable/unknown (which is never deferred, docs/design.md rule 1).
 *
 * Memory is known from the call that made it (rule 14): each allocation,
 * registration and mapping the wrappers see is described once, by one pointer
 * query when it is made, and kept in allocs.c's table, which a copy reads
 * without a lock or a driver call however many allocations exist.  A pointer
 * nobody announced (memory made before cubatch loaded, or by a call it does not
 * wrap) is asked about per copy, and each thread keeps the ranges it resolved
 * that way, sorted, found by binary search.  A free, unregister, unmap or
 * context teardown removes its range from the table before the memory is given
 * back, and bumps a global generation (before and after the call) that empties
 * every thread's cache.  Pageable results are never cached (they must be
 * re-checked: the memory may be registered later). */
#include "tblock.h"
#include "allocs.h"
#include "stats.h"

#include <string.h>

/* Ranges a thread keeps.  A framework's copy loop may go between many
 * allocations: PyTorch's pinned-memory allocator gives each host tensor its
 * own, so `_foreach_copy_` touches one host range per tensor, and a cache
 * smaller than the loop queries the driver for nearly every copy
 * (docs/design.md, rule 1). */
#define CB_CLASS_CACHE 512

/* Entries are allocs.c's ranges (struct cb_alloc), sorted by lo and disjoint (allocations do not overlap while no memory is
 * freed, and any free starts a new generation); valid for one generation. */
struct cb_cache {
    uint64_t gen;
    unsigned n;
    struct cb_alloc e[CB_CLASS_CACHE];
};

static atomic_uint_fast64_t cb_class_gen = 1;
void cb_forget_classes(void) { atomic_fetch_add_explicit(&cb_class_gen, 1, memory_order_release); }

/* The first entry of c whose range starts above p. */
static unsigned cache_upper(const struct cb_cache *c, uintptr_t p)
{
    unsigned lo = 0, hi = c->n;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (c->e[mid].lo <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A cache of an older generation holds nothing of this one. */
static void cache_renew(struct cb_cache *c, uint64_t gen)
{
    if (c->gen != gen) {
        c->gen = gen;
        c->n = 0;
    }
}

/* The cached range holding p, or NULL. */
static const struct cb_alloc *cache_find(struct cb_cache *c, uint64_t gen, uintptr_t p)
{
    if (!c)
        return NULL;
    cache_renew(c, gen);
    unsigned i = cache_upper(c, p);
    return i > 0 && p < c->e[i - 1].hi ? &c->e[i - 1] : NULL;
}

/* Keep r (a range the driver just described, of generation gen).  A cache
 * holding a range that overlaps r (stale, though no free was seen) starts
 * again empty.  A full one drops an entry chosen by a hash of r's address: a
 * loop over more allocations than the cache holds still finds some of them
 * (dropping the oldest, or everything, would miss on every copy of it). */
static void cache_put(uint64_t gen, const struct cb_alloc *r)
{
    struct cb_cache *c = cb_thread_block(CB_TB_CLASSES, sizeof *c);
    if (!c)
        return; /* classified, just not cached */
    cache_renew(c, gen);
    if (c->n == CB_CLASS_CACHE) {
        unsigned drop = (unsigned)(((uint64_t)r->lo * 0x9E3779B97F4A7C15u) >> 32) % CB_CLASS_CACHE;
        memmove(&c->e[drop], &c->e[drop + 1], (c->n - drop - 1) * sizeof c->e[0]);
        c->n--;
    }
    unsigned i = cache_upper(c, r->lo);
    if ((i > 0 && c->e[i - 1].hi > r->lo) || (i < c->n && c->e[i].lo < r->hi)) {
        c->n = 0;
        i = 0;
    }
    memmove(&c->e[i + 1], &c->e[i], (c->n - i) * sizeof c->e[0]);
    c->e[i] = *r;
    c->n++;
}

/* Ask the driver what p is: 0 and *r filled (r->lo and r->hi its allocation,
 * both p when the range is unknown), or -1 when the query failed. */
static int query(uintptr_t p, struct cb_alloc *r)
{
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
        r->kind = CB_MEM_MANAGED;
    else if (memtype == CU_MEMORYTYPE_DEVICE)
        r->kind = CB_MEM_DEVICE;
    else if (memtype == CU_MEMORYTYPE_HOST)
        r->kind = CB_MEM_HOST;
    else
        r->kind = CB_MEM_UNKNOWN;
    r->device = r->kind == CB_MEM_DEVICE ? ordinal : -1;
    /* The copy kernel may touch device memory in the context that allocated it,
     * and pinned host memory there when its device address is its host address
     * (UVA; registered memory only where the device can use the host pointer). */
    r->kctx = (r->kind == CB_MEM_DEVICE || (r->kind == CB_MEM_HOST && devptr == (CUdeviceptr)p)) ? ctx : NULL;
    r->actx = ctx;
    int range_ok = size > 0 && (uintptr_t)start <= p && p - (uintptr_t)start < size;
    r->lo = range_ok ? (uintptr_t)start : p;
    r->hi = range_ok ? (uintptr_t)start + size : p;
    return 0;
}

/* A range the table, the cache or the driver gave: keepable when its memory
 * and its extent are known. */
static int known(const struct cb_alloc *r) { return r->kind != CB_MEM_UNKNOWN && r->hi > r->lo; }

/* What classify() answers from range r. */
static void take(const struct cb_alloc *r, struct cb_class *out, uintptr_t *lo)
{
    out->kind = r->kind;
    out->device = r->device;
    out->end = r->hi > r->lo ? r->hi : 0;
    out->kctx = r->kctx;
    *lo = r->lo;
}

/* cb_classify, and the start of the allocation holding p (p itself when the
 * range is unknown). */
static int classify(uintptr_t p, struct cb_class *out, uintptr_t *lo)
{
    struct cb_alloc a;
    if (cb_allocs_find(p, &a) == 1) {
        take(&a, out, lo);
        return 0;
    }
    uint64_t gen = atomic_load_explicit(&cb_class_gen, memory_order_acquire);
    const struct cb_alloc *r = cache_find(cb_thread_block_if_any(CB_TB_CLASSES), gen, p);
    if (r) {
        take(r, out, lo);
        return 0;
    }
    CB_COUNT(class_queries);
    if (query(p, &a))
        return -1;
    take(&a, out, lo);
    if (known(&a))
        cache_put(gen, &a);
    return 0;
}

void cb_classes_announce(uintptr_t p)
{
    struct cb_alloc a;
    if (!p || query(p, &a) || !known(&a))
        return;
    if (cb_allocs_insert(&a) == 0)
        CB_COUNT(allocs_announced);
}

void cb_classes_forget_range(uintptr_t p, size_t size)
{
    if (p)
        cb_allocs_remove(p, size && p + size > p ? p + size : p + 1);
    cb_forget_classes();
}

void cb_classes_forget_context(CUcontext ctx)
{
    cb_allocs_remove_context(ctx);
    cb_forget_classes();
}

/* The allocations the thread's last copy went between, one per side: a copy
 * loop's next copy usually goes between the same two, or keeps one side (a
 * loop over host blocks into one device buffer), and then only the side that
 * changed is looked up (cb_classify_pair). */
struct cb_side {
    uintptr_t lo, hi; /* empty (lo == hi) when nothing is kept */
    struct cb_class c;
};
struct cb_pair {
    uint64_t gen;
    struct cb_side d, s;
};
static CB_TLS struct cb_pair cb_tls_pair;

/* One side: from the kept range, else classified and kept (known ranges only). */
static int classify_side(struct cb_side *k, uintptr_t p, struct cb_class *out)
{
    if (CB_LIKELY(p - k->lo < k->hi - k->lo)) {
        *out = k->c;
        return 0;
    }
    uintptr_t lo;
    if (classify(p, out, &lo))
        return -1;
    if (out->kind != CB_MEM_UNKNOWN && out->end)
        *k = (struct cb_side){lo, out->end, *out};
    return 0;
}

int cb_classify_pair(uintptr_t dst, uintptr_t src, struct cb_class *d, struct cb_class *s)
{
    struct cb_pair *pr = &cb_tls_pair;
    uint64_t gen = atomic_load_explicit(&cb_class_gen, memory_order_acquire);
    if (CB_UNLIKELY(pr->gen != gen)) {
        pr->gen = gen;
        pr->d.lo = pr->d.hi = pr->s.lo = pr->s.hi = 0;
    }
    return classify_side(&pr->d, dst, d) || classify_side(&pr->s, src, s) ? -1 : 0;
}

int cb_classify(uintptr_t p, struct cb_class *out)
{
    uintptr_t lo;
    return classify(p, out, &lo);
}
