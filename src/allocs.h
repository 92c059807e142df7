/* allocs.h - the table of memory the process was seen making (allocs.c). */
#ifndef CUBATCH_ALLOCS_H
#define CUBATCH_ALLOCS_H

#include "internal.h"

/* One allocation, registration or mapping, as classify.c described it when it
 * was announced. */
struct cb_alloc {
    uintptr_t lo, hi;  /* [lo, hi) */
    enum cb_kind kind;
    int device;        /* ordinal for device memory, -1 otherwise */
    CUcontext kctx;    /* the context whose kernels may touch it at this address */
    CUcontext actx;    /* the context it belongs to (NULL: unknown) */
};
/* Most ranges the table holds; past it, new ranges are not kept. */
#define CB_ALLOCS_MAX (1u << 20)

/* The announced range holding p: 1 found (*out filled), 0 none, -1 the table
 * was changing too often to read (ask the driver).  No lock, no driver call. */
int cb_allocs_find(uintptr_t p, struct cb_alloc *out);
/* Keep a; a kept range overlapping it is dropped first.  -1: not kept (full). */
int cb_allocs_insert(const struct cb_alloc *a);
/* Forget every range overlapping [lo, hi). */
void cb_allocs_remove(uintptr_t lo, uintptr_t hi);
/* Forget the ranges of ctx, and those of no known context (ctx NULL: all). */
void cb_allocs_remove_context(CUcontext ctx);
unsigned cb_allocs_count(void);
void cb_allocs_atfork_prepare(void);
void cb_allocs_atfork_parent(void);
void cb_allocs_atfork_child(void);

#endif /* CUBATCH_ALLOCS_H */
