/* allocs.c - the table of memory the process was seen making (docs/design.md
 * rule 14): one range per allocation, registration or mapping that a wrapper
 * announced (classify.c says what each range is), found by binary search on
 * the copy path without a lock and without a driver call.
 *
 * Readers and writers meet through a sequence count: a writer (one at a time,
 * under cb_allocs_mu) makes the count odd, changes the slots, and makes it even
 * again; a reader searches, and keeps its answer only when the count was even
 * and the same before and after.  Every slot field is an atomic, written with
 * release and read with acquire (plain moves on x86), so a reader racing a
 * writer reads stale values, never torn memory, and any value of a write in
 * progress brings the odd count with it: the answer is thrown away.  (No
 * fences: ThreadSanitizer does not follow them.)  A table that grows is copied into one twice
 * its size; the old one stays allocated (a reader may still be searching it)
 * and is kept on a list, so the memory given to retired tables is at most that
 * of the live one.
 *
 * A range is removed before the memory is given back (classify.c calls in the
 * wrapper's step before the real free), so no reader can find it afterwards. */
#include "allocs.h"

#include <stdlib.h>

/* A slot's start address is kept apart from the rest of it, so that a search
 * reads one dense array (8 bytes a range: 2,048 ranges fit a core's L1). */
struct cb_slot {
    _Atomic uintptr_t hi, kctx, actx;
    atomic_int kind, device;
};
struct cb_slots {
    unsigned cap;
    struct cb_slots *retired; /* the table this one replaced */
    _Atomic uintptr_t *lo;    /* [cap], sorted */
    struct cb_slot *e;        /* [cap] */
};

static pthread_mutex_t cb_allocs_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct cb_slots *) cb_allocs_table;
static atomic_uint cb_allocs_n;   /* slots in use, sorted by lo, disjoint */
static atomic_uint cb_allocs_seq; /* odd while a writer changes the table */

#define LOAD(x) atomic_load_explicit(&(x), memory_order_acquire)
#define STORE(x, v) atomic_store_explicit(&(x), (v), memory_order_release)

/* The first slot of t[0, n) whose range starts above p. */
static unsigned upper(const struct cb_slots *t, unsigned n, uintptr_t p)
{
    unsigned lo = 0, hi = n;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (LOAD(t->lo[mid]) <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void slot_read(const struct cb_slots *t, unsigned i, struct cb_alloc *a)
{
    const struct cb_slot *s = &t->e[i];
    a->lo = LOAD(t->lo[i]);
    a->hi = LOAD(s->hi);
    a->kctx = (CUcontext)LOAD(s->kctx);
    a->actx = (CUcontext)LOAD(s->actx);
    a->kind = (enum cb_kind)LOAD(s->kind);
    a->device = LOAD(s->device);
}

static void slot_write(struct cb_slots *t, unsigned i, const struct cb_alloc *a)
{
    struct cb_slot *s = &t->e[i];
    STORE(t->lo[i], a->lo);
    STORE(s->hi, a->hi);
    STORE(s->kctx, (uintptr_t)a->kctx);
    STORE(s->actx, (uintptr_t)a->actx);
    STORE(s->kind, (int)a->kind);
    STORE(s->device, a->device);
}

/* The slot this thread found last: a loop over blocks allocated one after the
 * other usually wants it or the next, which saves the search. */
static CB_TLS unsigned cb_allocs_hint;

/* The first slot of t[0, n) whose range starts above p, trying the hint first. */
static unsigned upper_hinted(const struct cb_slots *t, unsigned n, uintptr_t p)
{
    unsigned h = cb_allocs_hint;
    for (unsigned i = h; i < h + 2 && i < n; i++)
        if (LOAD(t->lo[i]) <= p && (i + 1 == n || p < LOAD(t->lo[i + 1])))
            return i + 1;
    return upper(t, n, p);
}

int cb_allocs_find(uintptr_t p, struct cb_alloc *out)
{
    if (CB_LIKELY(LOAD(cb_allocs_n) == 0))
        return 0;
    for (int tries = 0; tries < 16; tries++) {
        unsigned seq = atomic_load_explicit(&cb_allocs_seq, memory_order_acquire);
        if (seq & 1)
            continue;
        const struct cb_slots *t = atomic_load_explicit(&cb_allocs_table, memory_order_acquire);
        unsigned n = LOAD(cb_allocs_n);
        if (!t)
            return 0;
        if (n > t->cap)
            n = t->cap;
        unsigned i = upper_hinted(t, n, p);
        int hit = 0;
        if (i > 0) {
            cb_allocs_hint = i - 1;
            slot_read(t, i - 1, out);
            hit = out->lo <= p && p < out->hi;
        }
        if (LOAD(cb_allocs_seq) == seq)
            return hit;
    }
    return -1; /* writers kept changing it: the caller asks the driver */
}

/* Odd: before any slot store that follows (each a release store, ordered
 * after this read-modify-write); even again after them. */
static void write_begin(void) { atomic_fetch_add_explicit(&cb_allocs_seq, 1, memory_order_acq_rel); }
static void write_end(void) { atomic_fetch_add_explicit(&cb_allocs_seq, 1, memory_order_release); }

/* What a removal drops: the ranges overlapping [lo, hi), or (ctx_only) those
 * of context ctx and of no known context (ctx NULL: every range). */
struct cb_drop {
    uintptr_t lo, hi;
    int ctx_only;
    CUcontext ctx;
};
static int dropped(const struct cb_alloc *a, const struct cb_drop *d)
{
    if (d->ctx_only)
        return !d->ctx || !a->actx || a->actx == d->ctx;
    return a->lo < d->hi && d->lo < a->hi;
}

/* Remove the slots d drops, keeping the others in order (writer, mutex held). */
static void remove_dropped(struct cb_slots *t, const struct cb_drop *d)
{
    unsigned n = LOAD(cb_allocs_n), w = 0;
    for (unsigned r = 0; r < n; r++) {
        struct cb_alloc a;
        slot_read(t, r, &a);
        if (dropped(&a, d))
            continue;
        if (w != r)
            slot_write(t, w, &a);
        w++;
    }
    STORE(cb_allocs_n, w);
}

/* The public removals: under the writers' mutex, between the count's odd and
 * even values. */
static void remove_locked(const struct cb_drop *d)
{
    if (LOAD(cb_allocs_n) == 0)
        return;
    pthread_mutex_lock(&cb_allocs_mu);
    struct cb_slots *t = LOAD(cb_allocs_table);
    if (t) {
        write_begin();
        remove_dropped(t, d);
        write_end();
    }
    pthread_mutex_unlock(&cb_allocs_mu);
}

/* A table with room for one more slot (writer, mutex held); NULL: none. */
static struct cb_slots *room(void)
{
    struct cb_slots *t = LOAD(cb_allocs_table);
    unsigned n = LOAD(cb_allocs_n);
    if (t && n < t->cap)
        return t;
    unsigned cap = t ? 2 * t->cap : 256;
    if (cap > CB_ALLOCS_MAX)
        return NULL;
    struct cb_slots *g = calloc(1, sizeof *g + cap * (sizeof g->lo[0] + sizeof g->e[0]));
    if (!g)
        return NULL;
    g->cap = cap;
    g->lo = (_Atomic uintptr_t *)(g + 1);
    g->e = (struct cb_slot *)(g->lo + cap);
    g->retired = t;
    for (unsigned i = 0; i < n; i++) {
        struct cb_alloc a;
        slot_read(t, i, &a);
        slot_write(g, i, &a);
    }
    atomic_store_explicit(&cb_allocs_table, g, memory_order_release);
    return g;
}

int cb_allocs_insert(const struct cb_alloc *a)
{
    if (a->lo >= a->hi)
        return -1;
    int rc = 0;
    pthread_mutex_lock(&cb_allocs_mu);
    write_begin();
    struct cb_slots *t = LOAD(cb_allocs_table);
    if (t)
        remove_dropped(t, &(struct cb_drop){a->lo, a->hi, 0, NULL}); /* stale: a free cubatch did not see */
    t = room();
    if (t) {
        unsigned n = LOAD(cb_allocs_n), i = upper(t, n, a->lo);
        for (unsigned j = n; j > i; j--) {
            struct cb_alloc b;
            slot_read(t, j - 1, &b);
            slot_write(t, j, &b);
        }
        slot_write(t, i, a);
        STORE(cb_allocs_n, n + 1);
    } else {
        rc = -1; /* full: the pointer is asked about as if never announced */
    }
    write_end();
    pthread_mutex_unlock(&cb_allocs_mu);
    return rc;
}

void cb_allocs_remove(uintptr_t lo, uintptr_t hi) { remove_locked(&(struct cb_drop){lo, hi, 0, NULL}); }

void cb_allocs_remove_context(CUcontext ctx) { remove_locked(&(struct cb_drop){0, 0, 1, ctx}); }

unsigned cb_allocs_count(void) { return LOAD(cb_allocs_n); }

void cb_allocs_atfork_prepare(void) { pthread_mutex_lock(&cb_allocs_mu); }
void cb_allocs_atfork_parent(void) { pthread_mutex_unlock(&cb_allocs_mu); }
void cb_allocs_atfork_child(void)
{
    /* the child's memory is not the GPU's any more: nothing is known */
    STORE(cb_allocs_n, 0);
    pthread_mutex_init(&cb_allocs_mu, NULL);
}
