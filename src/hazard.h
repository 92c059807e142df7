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
/* A copy's footprint on both sides: `height` rows of `width` bytes, row r at
 * dst + r * dpitch and src + r * spitch (a 1D copy: height 1).  copy.c defers
 * a 2D copy only when width <= each pitch, so a side's rows never overlap. */
struct cb_shape {
    uintptr_t dst, src;
    size_t width, height, dpitch, spitch;
};
/* The bytes from a side's start to the end of its last row. */
static inline size_t cb_rows_span(size_t width, size_t height, size_t pitch) { return (height - 1) * pitch + width; }
/* The 2D copies of a run, kept whole rather than as intervals: the rows of
 * tiles of one pitched buffer interleave, so their bounding ranges overlap
 * where their rows do not.  Each with the ends of its sides' bounding ranges;
 * the set with the union of them (lo, hi: all destinations', then all
 * sources'), so that a copy far from every 2D copy's side is not compared with
 * any, and each side's starts in an index sorted by address with the longest
 * bounding range of that side, so that a copy is compared only with the 2D
 * copies whose bounding range meets its own (a window of the index), not with
 * all of them (tiles of one buffer: those of its row of tiles). */
struct cb_kept_shape {
    struct cb_shape s;
    uintptr_t dst_end, src_end;
    size_t dst_col, src_col; /* each side's start modulo its pitch (0: a pitch of 0) */
};
struct cb_shape_key {
    uintptr_t lo; /* a side's start */
    size_t at;    /* its 2D copy in v */
};
struct cb_shapes {
    struct cb_kept_shape *v;               /* in the order they joined */
    struct cb_shape_key *by_dst, *by_src;  /* v's sides, sorted by start */
    size_t n, cap;
    size_t dst_span, src_span;             /* the longest bounding range of each side */
    uintptr_t dst_lo, dst_hi, src_lo, src_hi;
};
/* An emptied set that keeps its storage (a run taken from the free list). */
static inline struct cb_shapes cb_shapes_emptied(struct cb_shapes s)
{
    return (struct cb_shapes){.v = s.v, .by_dst = s.by_dst, .by_src = s.by_src, .cap = s.cap};
}
int cb_shapes_add(struct cb_shapes *s, const struct cb_shape *c); /* -1 out of memory */
void cb_shapes_free(struct cb_shapes *s);
/* Rule 5 for a copy c that is 2D or joins a run holding 2D copies (`shapes`;
 * `writes` and `reads` hold the run's 1D copies only).  Exact, as cb_hazard. */
int cb_hazard_shaped(const struct cb_iset *writes, const struct cb_iset *reads, const struct cb_shapes *shapes,
                     const struct cb_shape *c);
/* For the unit tests: do two footprints overlap?  One side of a shape each:
 * rows of w bytes, p apart, from base. */
int cb_rows_overlap(uintptr_t a, size_t wa, size_t ha, size_t pa, uintptr_t b, size_t wb, size_t hb, size_t pb);

/* For the unit tests: index of the first copy {dst, src, n} of a list that may not
 * join the run formed by those before it, -1 if none (-2 out of memory). */
int cb_hazard_probe(const uintptr_t (*copies)[3], size_t n);

#endif /* CUBATCH_HAZARD_H */
