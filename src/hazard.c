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

/* ---- 2D copies ------------------------------------------------------------------------ */

/* floor(x / p) for p > 0; without a division where |x| < p (the shapes start
 * within a pitch of each other: tiles of one row of tiles). */
static int64_t floor_div(int64_t x, int64_t p)
{
    if (x >= 0)
        return x < p ? 0 : x / p;
    return x >= -p ? -1 : -((-x + p - 1) / p);
}

/* The range [x, x + len) against rows of w bytes, p apart, from base (h rows,
 * w <= p when h > 1): the row that could meet it first is the one x falls in
 * or the next. */
static int range_meets_rows(uintptr_t x, size_t len, uintptr_t base, size_t w, size_t h, size_t p)
{
    if (x + len <= base)
        return 0;
    size_t r = x > base && h > 1 ? (x - base) / p : 0;
    if (r >= h)
        r = h - 1;
    uintptr_t lo = base + r * p;
    if (lo < x + len && x < lo + w)
        return 1;
    return x >= lo + w && r + 1 < h && base + (r + 1) * p < x + len;
}

int cb_rows_overlap(uintptr_t a, size_t wa, size_t ha, size_t pa, uintptr_t b, size_t wb, size_t hb, size_t pb)
{
    if (wa == 0 || wb == 0 || ha == 0 || hb == 0)
        return 0;
    uintptr_t a_end = a + cb_rows_span(wa, ha, pa), b_end = b + cb_rows_span(wb, hb, pb);
    if (a_end <= b || b_end <= a)
        return 0;
    if (ha == 1)
        return range_meets_rows(a, wa, b, wb, hb, pb);
    if (hb == 1)
        return range_meets_rows(b, wb, a, wa, ha, pa);
    if (pa == pb) {
        /* b's row j meets a's row i iff, with k = j - i, -wb < d + k p < wa:
         * the smallest k of [-(ha - 1), hb - 1] above the left bound decides */
        int64_t d = (int64_t)(b - a), p = (int64_t)pa;
        int64_t k = floor_div(-(int64_t)wb - d, p) + 1;
        if (k < -(int64_t)(ha - 1))
            k = -(int64_t)(ha - 1);
        return k <= (int64_t)(hb - 1) && d + k * p < (int64_t)wa;
    }
    /* pitches differ: each row of the shorter one against the other */
    if (ha > hb)
        return cb_rows_overlap(b, wb, hb, pb, a, wa, ha, pa);
    for (size_t r = 0; r < ha; r++)
        if (range_meets_rows(a + r * pa, wa, b, wb, hb, pb))
            return 1;
    return 0;
}

/* Index of the first key whose start is at or above lo. */
static size_t key_find(const struct cb_shape_key *idx, size_t n, uintptr_t lo)
{
    size_t a = 0, b = n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (idx[m].lo < lo)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* Insert a key into an index of n keys, kept sorted (a copy loop walking
 * memory upwards appends). */
static void key_insert(struct cb_shape_key *idx, size_t n, struct cb_shape_key k)
{
    size_t a = n && k.lo < idx[n - 1].lo ? key_find(idx, n, k.lo) : n;
    memmove(&idx[a + 1], &idx[a], (n - a) * sizeof idx[0]);
    idx[a] = k;
    CB_ASSERT((a == 0 || idx[a - 1].lo <= k.lo) && (a == n || idx[a + 1].lo >= k.lo));
}

/* Where in its pitch a side's rows start. */
static size_t column(uintptr_t start, size_t pitch) { return pitch ? start % pitch : 0; }

/* Rows p apart, wa and wb bytes long (at most p), whose starts lie at
 * columns ca and cb of p: every byte of a row of the first lies at a column
 * of [ca, ca + wa) taken around p, every byte of the second at one of
 * [cb, cb + wb).  Where those two arcs do not meet, no row of one shares a
 * byte with a row of the other, however many rows apart they start: the
 * tiles of one pitched buffer, side by side. */
static int apart_in_columns(size_t ca, size_t wa, size_t cb, size_t wb, size_t p)
{
    size_t a_to_b = cb >= ca ? cb - ca : cb + p - ca, b_to_a = ca >= cb ? ca - cb : ca + p - cb;
    return a_to_b >= wa && b_to_a >= wb;
}

int cb_shapes_add(struct cb_shapes *s, const struct cb_shape *c)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        struct cb_kept_shape *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        struct cb_shape_key *d = realloc(s->by_dst, cap * sizeof *d);
        if (!d)
            return -1;
        s->by_dst = d;
        struct cb_shape_key *r = realloc(s->by_src, cap * sizeof *r);
        if (!r)
            return -1;
        s->by_src = r;
        s->cap = cap;
    }
    size_t dspan = cb_rows_span(c->width, c->height, c->dpitch), sspan = cb_rows_span(c->width, c->height, c->spitch);
    struct cb_kept_shape k = {*c, c->dst + dspan, c->src + sspan, column(c->dst, c->dpitch), column(c->src, c->spitch)};
    if (s->n == 0) {
        s->dst_lo = c->dst, s->dst_hi = k.dst_end, s->src_lo = c->src, s->src_hi = k.src_end;
        s->dst_span = dspan, s->src_span = sspan;
    } else {
        s->dst_lo = c->dst < s->dst_lo ? c->dst : s->dst_lo;
        s->dst_hi = k.dst_end > s->dst_hi ? k.dst_end : s->dst_hi;
        s->src_lo = c->src < s->src_lo ? c->src : s->src_lo;
        s->src_hi = k.src_end > s->src_hi ? k.src_end : s->src_hi;
        s->dst_span = dspan > s->dst_span ? dspan : s->dst_span;
        s->src_span = sspan > s->src_span ? sspan : s->src_span;
    }
    key_insert(s->by_dst, s->n, (struct cb_shape_key){c->dst, s->n});
    key_insert(s->by_src, s->n, (struct cb_shape_key){c->src, s->n});
    s->v[s->n++] = k;
    return 0;
}

void cb_shapes_free(struct cb_shapes *s)
{
    free(s->v);
    free(s->by_dst);
    free(s->by_src);
    *s = (struct cb_shapes){0};
}

/* Does c's footprint (its sides' bounding ranges ending at dst_end and
 * src_end) meet the 1D copies' interval sets?  Its bounding ranges first; only
 * where those meet, row by row. */
static int shape_meets_sets(const struct cb_iset *writes, const struct cb_iset *reads, const struct cb_shape *c,
                            uintptr_t dst_end, uintptr_t src_end)
{
    if (c->height <= 1)
        return cb_hazard(writes, reads, c->dst, c->src, c->width);
    if (cb_iset_outside(writes, c->src, src_end) && cb_iset_outside(writes, c->dst, dst_end) &&
        cb_iset_outside(reads, c->dst, dst_end))
        return 0;
    for (size_t r = 0; r < c->height; r++)
        if (cb_hazard(writes, reads, c->dst + r * c->dpitch, c->src + r * c->spitch, c->width))
            return 1;
    return 0;
}

/* Do [lo, hi) and [lo2, hi2) meet? */
static int meet(uintptr_t lo, uintptr_t hi, uintptr_t lo2, uintptr_t hi2) { return lo < hi2 && lo2 < hi; }

/* Do rows of `width` bytes, `pitch` apart, from base (`height` of them,
 * ending at end) share a byte with a side (destinations when dst, else
 * sources) of a kept 2D copy?  A side whose bounding range meets [base, end)
 * starts after base - span (span: the side's longest) and before end: only
 * that window of the side's index is compared, row by row. */
static int side_meets_rows(const struct cb_shapes *s, int dst, uintptr_t base, uintptr_t end, size_t width,
                           size_t height, size_t pitch)
{
    const struct cb_shape_key *idx = dst ? s->by_dst : s->by_src;
    const size_t span = dst ? s->dst_span : s->src_span, col = column(base, pitch);
    for (size_t i = key_find(idx, s->n, base > span ? base - span : 0); i < s->n && idx[i].lo < end; i++) {
        const struct cb_kept_shape *k = &s->v[idx[i].at];
        const struct cb_shape *q = &k->s;
        uintptr_t q_end = dst ? k->dst_end : k->src_end;
        size_t q_pitch = dst ? q->dpitch : q->spitch;
        if (!meet(base, end, idx[i].lo, q_end) ||
            (height > 1 && q->height > 1 && q_pitch == pitch &&
             apart_in_columns(col, width, dst ? k->dst_col : k->src_col, q->width, pitch)))
            continue;
        if (cb_rows_overlap(base, width, height, pitch, idx[i].lo, q->width, q->height, q_pitch))
            return 1;
    }
    return 0;
}

int cb_hazard_shaped(const struct cb_iset *writes, const struct cb_iset *reads, const struct cb_shapes *shapes,
                     const struct cb_shape *c)
{
    uintptr_t dst_end = c->dst + cb_rows_span(c->width, c->height, c->dpitch);
    uintptr_t src_end = c->src + cb_rows_span(c->width, c->height, c->spitch);
    if (shape_meets_sets(writes, reads, c, dst_end, src_end))
        return 1;
    if (shapes->n == 0)
        return 0;
    /* reads a 2D copy's destination, writes it, writes its source: each
     * looked for only where the union of those sides allows it */
    return (meet(c->src, src_end, shapes->dst_lo, shapes->dst_hi) &&
            side_meets_rows(shapes, 1, c->src, src_end, c->width, c->height, c->spitch)) ||
           (meet(c->dst, dst_end, shapes->dst_lo, shapes->dst_hi) &&
            side_meets_rows(shapes, 1, c->dst, dst_end, c->width, c->height, c->dpitch)) ||
           (meet(c->dst, dst_end, shapes->src_lo, shapes->src_hi) &&
            side_meets_rows(shapes, 0, c->dst, dst_end, c->width, c->height, c->dpitch));
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
