/* hazard.h - the hazard index of a run (hazard.c). */
#ifndef CUBATCH_HAZARD_H
#define CUBATCH_HAZARD_H

#include "internal.h"

/* Disjoint half-open address intervals, sorted: the hazard index of a run. */
struct cb_ival { uintptr_t lo, hi; };
struct cb_iset { struct cb_ival *v; size_t n, cap; };

/* ---- hazard.c: interval sets --------------------------------------------------------- */
/* Add [lo, hi), merging what it overlaps or touches; -1 out of memory. */
int cb_iset_add_slow(struct cb_iset *s, uintptr_t lo, uintptr_t hi);
static inline int cb_iset_add(struct cb_iset *s, uintptr_t lo, uintptr_t hi)
{
    if (s->n && s->v[s->n - 1].hi == lo) { /* the common case: right after the last */
        s->v[s->n - 1].hi = hi;
        return 0;
    }
    return cb_iset_add_slow(s, lo, hi);
}
void cb_iset_free(struct cb_iset *s);
/* Rule 5: may a copy (dst d, src s, n bytes) NOT join a run that writes `writes`
 * and reads `reads`? */
int cb_hazard_slow(const struct cb_iset *writes, const struct cb_iset *reads, uintptr_t d, uintptr_t s, uintptr_t n);
/* [lo, hi) lies outside the set's bounds: no overlap (a copy loop's case). */
static inline int cb_iset_outside(const struct cb_iset *s, uintptr_t lo, uintptr_t hi)
{
    return s->n == 0 || lo >= s->v[s->n - 1].hi || hi <= s->v[0].lo;
}
static inline int cb_hazard(const struct cb_iset *writes, const struct cb_iset *reads, uintptr_t d, uintptr_t s,
                            uintptr_t n)
{
    if (cb_iset_outside(writes, s, s + n) && cb_iset_outside(writes, d, d + n) && cb_iset_outside(reads, d, d + n))
        return 0;
    return cb_hazard_slow(writes, reads, d, s, n);
}
/* For the unit tests: index of the first copy {dst, src, n} of a list that may not
 * join the run formed by those before it, -1 if none (-2 out of memory). */
int cb_hazard_probe(const uintptr_t (*copies)[3], size_t n);

#endif /* CUBATCH_HAZARD_H */
