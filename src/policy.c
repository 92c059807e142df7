/* policy.c - the one table that decides, by direction and size, whether a copy is
 * worth deferring.  The batch API is not always faster than a loop of copies: on
 * an H200 with driver 580 (DESIGN.md section 4) host-to-device copies from 8 KiB to
 * just under 28 KiB run up to 2x slower as a batch, while device-to-host copies
 * gain 1.4-2.9x at every size.  The default bands keep every measured cell at least
 * as fast as the program's own loop.
 *
 * Device-to-device copies gain at most 1.08x as a batch (and nothing beyond the
 * noise between processes in our own H200 runs, bench/RESULTS.md), so they are
 * not deferred by default.
 *
 * CUBATCH_POLICY replaces the table: "default", "all", "none", or a comma list of
 * DIR:LO-HI bands (half-open [LO, HI); HI may be "max"), e.g.
 * "h2d:0-8K,h2d:28K-max,d2h:0-max" (the default).  A direction with no
 * band is never deferred.  CUBATCH_MAX_COPY caps every band. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CB_POLICY_BANDS 8
struct cb_band { uint64_t lo, hi; };
struct cb_policy {
    struct cb_band band[CB_D_COUNT][CB_POLICY_BANDS];
    unsigned nband[CB_D_COUNT];
};

static const char cb_policy_default_text[] = "h2d:0-8K,h2d:28K-max,d2h:0-max";
static struct cb_policy cb_policy_table;

static const char *const cb_dir_names[CB_D_COUNT] = {"h2d", "d2h", "d2d", "h2h"};

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

static int policy_parse(const char *text, struct cb_policy *p)
{
    memset(p, 0, sizeof *p);
    if (!text || !*text || !strcasecmp(text, "default"))
        text = cb_policy_default_text;
    if (!strcasecmp(text, "none"))
        return 0;
    if (!strcasecmp(text, "all"))
        text = "h2d:0-max,d2h:0-max,d2d:0-max,h2h:0-max";
    const char *s = text;
    while (*s) {
        const char *item_end = strchr(s, ',');
        size_t ilen = item_end ? (size_t)(item_end - s) : strlen(s);
        const char *colon = memchr(s, ':', ilen);
        if (!colon)
            return -1;
        int dir = -1;
        for (int d = 0; d < CB_D_COUNT; d++)
            if ((size_t)(colon - s) == strlen(cb_dir_names[d]) && !strncasecmp(s, cb_dir_names[d], (size_t)(colon - s)))
                dir = d;
        if (dir < 0)
            return -1;
        const char *range = colon + 1;
        size_t rlen = ilen - (size_t)(range - s);
        const char *dash = memchr(range, '-', rlen);
        if (!dash)
            return -1;
        struct cb_band b;
        if (parse_size(range, (size_t)(dash - range), &b.lo) ||
            parse_size(dash + 1, rlen - (size_t)(dash + 1 - range), &b.hi) || b.lo >= b.hi)
            return -1;
        if (p->nband[dir] == CB_POLICY_BANDS)
            return -1;
        p->band[dir][p->nband[dir]++] = b;
        if (!item_end)
            break;
        s = item_end + 1;
        if (!*s)
            return -1; /* trailing comma */
    }
    return 0;
}

int cb_policy_load(const char *text)
{
    struct cb_policy p;
    if (policy_parse(text, &p)) {
        policy_parse(NULL, &cb_policy_table);
        return -1;
    }
    cb_policy_table = p;
    return 0;
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

/* For the unit tests: evaluate a policy text without installing it (-1 malformed). */
int cubatch__policy_defer(const char *policy, int direction, size_t bytes)
{
    struct cb_policy p;
    if (direction < 0 || direction >= CB_D_COUNT || policy_parse(policy, &p))
        return -1;
    return policy_check(&p, (enum cb_direction)direction, bytes);
}
