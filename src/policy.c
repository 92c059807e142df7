/* policy.c - the one table that decides, by direction and size, whether a copy is
 * worth deferring.  The default defers every host-to-device, device-to-host and
 * device-to-device size: with runs going out through the copy kernel, or through
 * the batch API in chunks, every one of them was measured to gain
 * (docs/design.md section 6).  Host-to-host copies were not measured and are
 * left alone.  The one band known to lose, host-to-device copies of 8 KiB to
 * just under 28 KiB sent to the batch API as one large batch (pipelining off,
 * and memory the kernel does not take), is for the user to keep out with a
 * policy (the README says how).
 *
 * CUBATCH_POLICY replaces the table (what it takes: CB_POLICY_GRAMMAR, in
 * options.def); bands are half-open, [LO, HI).  A direction with no band is
 * never deferred.  CUBATCH_MAX_COPY caps every band.
 *
 * A policy is refused as a whole (the default stays, one warning says why) when a
 * band is malformed, when a direction has more than CB_POLICY_BANDS bands, when a
 * direction's bands overlap or are not in increasing order (each band is a row of
 * a table: a shuffled or overlapping table is a typo more often than a wish), or
 * when a band could never apply: it starts above CUBATCH_MAX_COPY, or holds only
 * 0-byte copies, which are never deferred. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CB_POLICY_BANDS 8
struct cb_band { uint64_t lo, hi; };
struct cb_policy {
    struct cb_band band[CB_D_COUNT][CB_POLICY_BANDS];
    unsigned nband[CB_D_COUNT];
};

static const char cb_policy_default_text[] = "h2d:0-max,d2h:0-max,d2d:0-max";
static struct cb_policy cb_policy_table;
/* Per direction, the largest copy the installed policy surely defers without a
 * look at its bands: the top of a first band that starts at 0 or 1 byte,
 * capped by CUBATCH_MAX_COPY (0: ask the bands).  The copy path reads it. */
size_t cb_policy_sure[CB_D_COUNT];
/* ... and the largest it may defer at all: the top of its highest band, capped
 * by CUBATCH_MAX_COPY (0: none), so that a direction it never defers, or a
 * size above every band, is refused without a look at the bands either. */
size_t cb_policy_top[CB_D_COUNT];
/* The largest copy every direction but host to host surely defers: a burst's
 * first copy up to it is passed before its direction is known (copy.c). */
size_t cb_policy_first_max;

/* The words of directions.def, by enum cb_direction. */
const char *const cb_direction_names[CB_D_COUNT] = {
#define CB_DIRECTION(NAME, word, doc) [CB_D_##NAME] = #word,
#include "directions.def"
#undef CB_DIRECTION
};
/* "all": every direction of the list, at any size. */
static const char cb_policy_all_text[] =
#define CB_DIRECTION(NAME, word, doc) "," #word ":0-max"
#include "directions.def"
#undef CB_DIRECTION
    ;

static int parse_size(const char *s, size_t len, uint64_t *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    if (!strcasecmp(buf, "max")) {
        *out = UINT64_MAX;
        return 0;
    }
    return cb_parse_size(buf, out);
}

/* "h2d:0-8K" as a message shows it */
static const char *band_text(int dir, struct cb_band b, char *buf, size_t len)
{
    char lo[24], hi[24];
    snprintf(buf, len, "%s:%s-%s", cb_direction_names[dir], cb_format_size(b.lo, lo, sizeof lo),
             cb_format_size(b.hi, hi, sizeof hi));
    return buf;
}

/* A new band of direction `dir` after those already in p: NULL when it fits,
 * else why not (in why). */
static const char *band_check(const struct cb_policy *p, int dir, struct cb_band b, uint64_t max_copy, char *why,
                              size_t wlen)
{
    char t[64], u[64], m[24];
    if (p->nband[dir] == CB_POLICY_BANDS) {
        snprintf(why, wlen, "%s is band %u of %s: a direction takes at most %d bands", band_text(dir, b, t, sizeof t),
                 CB_POLICY_BANDS + 1, cb_direction_names[dir], CB_POLICY_BANDS);
        return why;
    }
    for (unsigned i = 0; i < p->nband[dir]; i++) {
        struct cb_band o = p->band[dir][i];
        if (b.lo < o.hi && o.lo < b.hi) {
            snprintf(why, wlen, "%s overlaps %s", band_text(dir, b, t, sizeof t), band_text(dir, o, u, sizeof u));
            return why;
        }
        if (b.hi <= o.lo) {
            snprintf(why, wlen, "%s comes after %s: list a direction's bands in increasing order",
                     band_text(dir, b, t, sizeof t), band_text(dir, o, u, sizeof u));
            return why;
        }
    }
    if (b.lo > max_copy) {
        snprintf(why, wlen, "%s starts above CUBATCH_MAX_COPY (%s): no copy could ever use it",
                 band_text(dir, b, t, sizeof t), cb_format_size(max_copy, m, sizeof m));
        return why;
    }
    if (b.hi <= 1) {
        snprintf(why, wlen, "%s holds only 0-byte copies, which are never deferred", band_text(dir, b, t, sizeof t));
        return why;
    }
    return NULL;
}

/* Parse one DIR:LO-HI item of length ilen; -1 with why filled when malformed. */
static int parse_band(const char *s, size_t ilen, int *dir, struct cb_band *b, char *why, size_t wlen)
{
    char q[CB_QUOTE_LEN];
    const char *colon = memchr(s, ':', ilen);
    *dir = -1;
    for (int d = 0; colon && d < CB_D_COUNT; d++)
        if ((size_t)(colon - s) == strlen(cb_direction_names[d]) && !strncasecmp(s, cb_direction_names[d], (size_t)(colon - s)))
            *dir = d;
    if (*dir < 0) {
        char words[CB_D_COUNT * 16] = ""; /* the list's words: "h2d:, ... or h2h:" */
        for (int d = 0; d < CB_D_COUNT; d++)
            snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s:",
                     d == 0 ? "" : d == CB_D_COUNT - 1 ? " or " : ", ", cb_direction_names[d]);
        snprintf(why, wlen, "%s does not start with a direction (%s)", cb_quote_n(s, ilen, q, sizeof q), words);
        return -1;
    }
    const char *range = colon + 1;
    size_t rlen = ilen - (size_t)(range - s);
    const char *dash = memchr(range, '-', rlen);
    if (!dash || parse_size(range, (size_t)(dash - range), &b->lo) ||
        parse_size(dash + 1, rlen - (size_t)(dash + 1 - range), &b->hi)) {
        snprintf(why, wlen, "%s is not DIR:LO-HI with sizes (digits, optionally K, M, G or T; HI may be max)",
                 cb_quote_n(s, ilen, q, sizeof q));
        return -1;
    }
    if (b->lo >= b->hi) {
        snprintf(why, wlen, "%s: LO must be below HI (bands are half-open, [LO, HI))", cb_quote_n(s, ilen, q, sizeof q));
        return -1;
    }
    return 0;
}

static int policy_parse(const char *text, uint64_t max_copy, struct cb_policy *p, char *why, size_t wlen)
{
    memset(p, 0, sizeof *p);
    if (!text || !*text || !strcasecmp(text, "default")) {
        /* the default fits any maximum: CUBATCH_MAX_COPY only narrows its bands */
        text = cb_policy_default_text;
        max_copy = UINT64_MAX;
    }
    if (!strcasecmp(text, "none"))
        return 0;
    if (!strcasecmp(text, "all"))
        text = cb_policy_all_text + 1; /* past the first comma */
    for (const char *s = text;;) {
        const char *item_end = strchr(s, ',');
        size_t ilen = item_end ? (size_t)(item_end - s) : strlen(s);
        if (ilen == 0) {
            snprintf(why, wlen, "an empty band (a leading, doubled or trailing comma)");
            return -1;
        }
        int dir;
        struct cb_band b;
        if (parse_band(s, ilen, &dir, &b, why, wlen) || band_check(p, dir, b, max_copy, why, wlen))
            return -1;
        p->band[dir][p->nband[dir]++] = b;
        if (!item_end)
            return 0;
        s = item_end + 1;
    }
}

/* The bands in use, as the option dump shows them. */
static const char *describe(char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int d = 0; d < CB_D_COUNT; d++)
        for (unsigned i = 0; i < cb_policy_table.nband[d]; i++) {
            char t[64];
            int n = snprintf(buf + o, len - o, "%s%s", o ? "," : "", band_text(d, cb_policy_table.band[d][i], t, sizeof t));
            if (n < 0 || (size_t)n >= len - o)
                return buf;
            o += (size_t)n;
        }
    if (!o)
        snprintf(buf, len, "none");
    return buf;
}

int cb_policy_load(const char *text, char *why, size_t wlen)
{
    static char shown[512];
    struct cb_policy p;
    int rc = 0;
    if (policy_parse(text, cb_opt(CB_OPT_max_copy), &p, why, wlen)) {
        char unused[8];
        policy_parse(NULL, 0, &p, unused, sizeof unused);
        rc = -1;
    }
    cb_policy_table = p;
    for (int d = 0; d < CB_D_COUNT; d++) {
        const struct cb_band *b = &p.band[d][0];
        uint64_t top = p.nband[d] && b->lo <= 1 ? b->hi - 1 : 0;
        cb_policy_sure[d] = (size_t)(top < cb_opt(CB_OPT_max_copy) ? top : cb_opt(CB_OPT_max_copy));
        uint64_t highest = 0;
        for (unsigned i = 0; i < p.nband[d]; i++)
            if (p.band[d][i].hi - 1 > highest)
                highest = p.band[d][i].hi - 1;
        cb_policy_top[d] = (size_t)(highest < cb_opt(CB_OPT_max_copy) ? highest : cb_opt(CB_OPT_max_copy));
    }
    cb_policy_first_max = cb_policy_sure[CB_D_H2D];
    for (int d = 0; d < CB_D_COUNT; d++)
        if (d != CB_D_H2H && cb_policy_sure[d] < cb_policy_first_max)
            cb_policy_first_max = cb_policy_sure[d];
    cb_opt_set_shown(CB_OPT_policy, describe(shown, sizeof shown));
    return rc;
}

static int policy_check(const struct cb_policy *p, enum cb_direction d, size_t bytes)
{
    for (unsigned i = 0; i < p->nband[d]; i++)
        if (bytes >= p->band[d][i].lo && bytes < p->band[d][i].hi)
            return 1;
    return 0;
}

int cb_policy_defer(enum cb_direction d, size_t bytes)
{
    return bytes <= cb_opt(CB_OPT_max_copy) && policy_check(&cb_policy_table, d, bytes);
}

int cb_policy_try(const char *policy, enum cb_direction d, size_t bytes)
{
    struct cb_policy p;
    char why[CB_QUOTE_LEN + 128];
    if ((unsigned)d >= CB_D_COUNT || policy_parse(policy, cb_opt(CB_OPT_max_copy), &p, why, sizeof why))
        return -1;
    return policy_check(&p, d, bytes);
}

int cb_policy_check(const char *policy, uint64_t max_copy, char *why, size_t len)
{
    struct cb_policy p;
    if (len)
        why[0] = 0;
    return policy_parse(policy, max_copy, &p, why, len);
}
