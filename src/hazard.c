/* hazard.c - rule 5: copies of one batch run in no defined order, so a copy may
 * not join a run if it reads what a queued copy writes, or writes what a queued
 * copy reads or writes.  Each run keeps the union of its written ranges and of
 * its read ranges as sorted disjoint intervals; the check is two binary
 * searches, the insert usually an append (copy loops walk memory upwards).
 * Exact: no false negatives; adjacent ranges do not conflict. */
#include "hazard.h"

#include <stdlib.h>
#include <string.h>

/* Index of the first interval whose end is above lo. */
static size_t iset_find(const struct cb_iset *s, uintptr_t lo)
{
    size_t a = 0, b = s->n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (s->v[m].hi <= lo)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

static int iset_overlaps(const struct cb_iset *s, uintptr_t lo, uintptr_t hi)
{
    if (s->n == 0 || lo >= s->v[s->n - 1].hi || hi <= s->v[0].lo)
        return 0;
    size_t i = iset_find(s, lo);
    return i < s->n && s->v[i].lo < hi;
}

/* Not right after the last interval (hazard.h has that case inline). */
int cb_iset_add_slow(struct cb_iset *s, uintptr_t lo, uintptr_t hi)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        struct cb_ival *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    size_t a = s->n && lo > s->v[s->n - 1].hi ? s->n : iset_find(s, lo);
    if (a > 0 && s->v[a - 1].hi == lo)
        a--; /* touches the one before */
    size_t b = a;
    while (b < s->n && s->v[b].lo <= hi)
        b++;
    if (b > a) { /* merge [a, b) with the new range */
        if (s->v[a].lo < lo)
            lo = s->v[a].lo;
        if (s->v[b - 1].hi > hi)
            hi = s->v[b - 1].hi;
        s->v[a] = (struct cb_ival){lo, hi};
        memmove(&s->v[a + 1], &s->v[b], (s->n - b) * sizeof s->v[0]);
        s->n -= b - a - 1;
    } else {
        memmove(&s->v[a + 1], &s->v[a], (s->n - a) * sizeof s->v[0]);
        s->v[a] = (struct cb_ival){lo, hi};
        s->n++;
    }
    return 0;
}

void cb_iset_free(struct cb_iset *s)
{
    free(s->v);
    *s = (struct cb_iset){0};
}

/* Some range inside a set's bounds (hazard.h decides the others inline). */
int cb_hazard_slow(const struct cb_iset *writes, const struct cb_iset *reads, uintptr_t d, uintptr_t s, uintptr_t n)
{
    return iset_overlaps(writes, s, s + n)     /* reads what a queued copy writes */
           || iset_overlaps(writes, d, d + n)  /* writes what a queued copy writes */
           || iset_overlaps(reads, d, d + n);  /* writes what a queued copy reads */
}

int cb_hazard_probe(const uintptr_t (*copies)[3], size_t n)
{
    struct cb_iset w = {0}, r = {0};
    int hazard_at = -1;
    for (size_t i = 0; i < n && hazard_at < 0; i++) {
        uintptr_t d = copies[i][0], s = copies[i][1], len = copies[i][2];
        if (cb_hazard(&w, &r, d, s, len))
            hazard_at = (int)i;
        else if (cb_iset_add(&w, d, d + len) || cb_iset_add(&r, s, s + len))
            hazard_at = -2;
    }
    cb_iset_free(&w);
    cb_iset_free(&r);
    return hazard_at;
}
