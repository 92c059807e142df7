/* check_units.c - the pure parts of cubatch, tested in-process, linked with the
 * library's internals (src/libcubatch-core.la, nothing exported for the tests):
 * option parsing, the size policy, the hazard rule (docs/design.md rule 5)
 * against a brute-force reference, and the classification cache against a
 * driver that answers from a known set of ranges. */
#include "run.h"
#include "allocs.h"
#include "capture.h"
#include "store.h"
#define TH_WITH_CHECK 1
#include "../harness/harness.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#define H2D CB_D_H2D
#define D2H CB_D_D2H
#define D2D CB_D_D2D
#define H2H CB_D_H2H

static uint64_t parsed(const char *name, const char *text)
{
    uint64_t v = 12345;
    ck_assert_int_eq(cb_parse_option(name, text, &v), 0);
    return v;
}

static void rejected(const char *name, const char *text)
{
    uint64_t v = 777;
    ck_assert_msg(cb_parse_option(name, text, &v) == -1, "%s=%s should be rejected", name, text);
}

START_TEST(bool_words)
{
    const char *yes[] = {"1", "on", "ON", "yes", "True"};
    const char *no[] = {"0", "off", "No", "false", "FALSE"};
    for (int i = 0; i < 5; i++) {
        ck_assert_uint_eq(parsed("enable", yes[i]), 1);
        ck_assert_uint_eq(parsed("enable", no[i]), 0);
    }
    rejected("enable", "");
    rejected("enable", "2");
    rejected("enable", "onn");
    rejected("enable", " 1");
}
END_TEST

/* The option table: every row at the index of its own id, an ENUM's maximum
 * its last word, every CHECK a named function. */
START_TEST(option_table_checks_itself)
{
    for (size_t i = 0; i < CB_OPTION_COUNT; i++) {
        const struct cb_option *o = &cb_options[i];
        ck_assert_msg(o->name && (size_t)o->id == i, "row %zu holds id %d (%s)", i, (int)o->id,
                      o->name ? o->name : "a hole");
        ck_assert_ptr_nonnull(o->check);
        if (o->type == CB_T_ENUM) {
            char w[64];
            ck_assert_msg(*cb_option_word(o, o->hi, w, sizeof w), "%s: max %llu is past its words", o->name,
                          (unsigned long long)o->hi);
            ck_assert_msg(!*cb_option_word(o, o->hi + 1, w, sizeof w), "%s: words past max", o->name);
            ck_assert_uint_eq(o->lo, 0);
        }
    }
}
END_TEST

START_TEST(sizes_and_ranges)
{
    ck_assert_uint_eq(parsed("max_copy", "4096"), 4096);
    ck_assert_uint_eq(parsed("max_copy", "4K"), 4096);
    ck_assert_uint_eq(parsed("max_copy", "4KiB"), 4096);
    ck_assert_uint_eq(parsed("max_copy", "2m"), 2u << 20);
    ck_assert_uint_eq(parsed("max_copy", "1GB"), 1u << 30);
    rejected("max_copy", "0");        /* below the minimum: rejected, never clipped */
    rejected("max_copy", "4T");
    rejected("max_copy", "4 K");
    rejected("max_copy", "-1");
    rejected("max_copy", "99999999999999999999999");
    rejected("max_copy", "18446744073709551615G"); /* overflows when scaled */
    ck_assert_uint_eq(parsed("max_batch", "64"), 64);
    rejected("max_batch", "1");       /* a batch of one is never a batch */
    rejected("max_batch", "64K");     /* plain integers take no suffix */
    rejected("max_batch", "40000");
    rejected("flush_us", "0");
    ck_assert_uint_eq(parsed("log", "3"), 3);
    rejected("log", "4");
    rejected("no_such_option", "1");
}
END_TEST

START_TEST(enums)
{
    ck_assert_uint_eq(parsed("src_order", "stream"), 0);
    ck_assert_uint_eq(parsed("src_order", "ANY"), 1);
    rejected("src_order", "during_api_call"); /* a word of the option, refused by its CHECK */
    rejected("src_order", "anyway");
    ck_assert_uint_eq(parsed("stats", "json"), 2);
    ck_assert_uint_eq(parsed("stats", "on"), 1);
    ck_assert_uint_eq(parsed("stats", "1"), 1);
    ck_assert_uint_eq(parsed("stats", "off"), 0);
    rejected("stats", "xml");
    ck_assert_uint_eq(parsed("stats", "yes"), 1);
    ck_assert_uint_eq(parsed("stats", "False"), 0);
}
END_TEST

START_TEST(policy_default_follows_measurement)
{
    /* bench/RESULTS.md: with the copy kernel and pipelined batches every
     * direction gains at every size (host-to-device 8-28 KiB included, which
     * lost as one large batch); host to host was not measured. */
    ck_assert_int_eq(cb_policy_try(NULL, H2D, 512), 1);
    ck_assert_int_eq(cb_policy_try(NULL, H2D, 8192), 1);
    ck_assert_int_eq(cb_policy_try(NULL, H2D, 16384), 1);
    ck_assert_int_eq(cb_policy_try(NULL, H2D, 24576), 1);
    ck_assert_int_eq(cb_policy_try(NULL, H2D, 1 << 20), 1);
    ck_assert_int_eq(cb_policy_try(NULL, D2H, 16384), 1);
    ck_assert_int_eq(cb_policy_try(NULL, D2D, 4096), 1);
    ck_assert_int_eq(cb_policy_try(NULL, H2H, 4096), 0); /* not measured: not deferred */
    ck_assert_int_eq(cb_policy_try("default", H2H, 16384), 0);
    /* the old bands are still a valid policy */
    ck_assert_int_eq(cb_policy_try("h2d:0-8K,h2d:28K-max,d2h:0-max", H2D, 16384), 0);
    ck_assert_int_eq(cb_policy_try("h2d:0-8K,h2d:28K-max,d2h:0-max", H2D, 4096), 1);
}
END_TEST

/* The installed policy answers the copy path without walking its bands for
 * the sizes its first band holds (cb_policy_sure, read by copy.c) and for
 * those above its highest (cb_policy_top): the first word never claims a size
 * the bands would not defer, the second never refuses one they would, at any
 * band edge; the default policy's first covers every size up to
 * CUBATCH_MAX_COPY, and the installed bands answer as the policy's text does.
 * The size up to which a burst's first copy passes unexamined is one every
 * direction but host to host defers. */
START_TEST(policy_installed_answers_as_its_bands)
{
    const char *texts[] = {NULL, "h2d:0-8K,h2d:28K-max,d2h:0-max", "d2h:1K-2K", "h2d:1-4K,d2d:0-16K", "d2h:2-3K", "all", "none"};
    const size_t sizes[] = {1, 2, 1023, 1024, 2047, 2048, 3071, 3072, 4095, 4096, 4097, 8191, 8192, 16383, 16384,
                            28671, 28672, (1 << 20) - 1, 1 << 20, (1 << 20) + 1};
    char why[256];
    for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
        ck_assert_int_eq(cb_policy_load(texts[t], why, sizeof why), 0);
        for (int d = 0; d < CB_D_COUNT; d++) {
            for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
                int bands = sizes[i] <= (1 << 20) && cb_policy_try(texts[t], d, sizes[i]) == 1;
                ck_assert_msg(sizes[i] > cb_policy_sure[d] || bands, "policy \"%s\", direction %d: the word defers %zu bytes",
                              texts[t] ? texts[t] : "default", d, sizes[i]);
                ck_assert_msg(sizes[i] <= cb_policy_top[d] || !bands, "policy \"%s\", direction %d: the word refuses %zu bytes",
                              texts[t] ? texts[t] : "default", d, sizes[i]);
                ck_assert_int_eq(cb_policy_defer(d, sizes[i]), bands);
                /* a burst's first copy passes unexamined only at sizes every
                 * direction but host to host defers (copy.c, copy_first) */
                ck_assert_msg(d == CB_D_H2H || sizes[i] > cb_policy_first_max || bands,
                              "policy \"%s\", direction %d: a first copy of %zu bytes would pass unexamined",
                              texts[t] ? texts[t] : "default", d, sizes[i]);
            }
        }
        if (!texts[t]) {
            ck_assert_uint_eq(cb_policy_sure[CB_D_H2D], 1 << 20); /* the default never walks its bands */
            ck_assert_uint_eq(cb_policy_first_max, 1 << 20);     /* nor does a lone copy ask its direction */
        }
        if (texts[t] && !strcmp(texts[t], "d2h:1K-2K")) {
            ck_assert_uint_eq(cb_policy_top[CB_D_H2D], 0); /* a direction without bands never walks them */
            ck_assert_uint_eq(cb_policy_first_max, 0);     /* nor is its first copy passed unexamined */
        }
    }
    ck_assert_int_eq(cb_policy_load(NULL, why, sizeof why), 0);
}
END_TEST

START_TEST(policy_parsing)
{
    ck_assert_int_eq(cb_policy_try("all", H2D, 16384), 1);
    ck_assert_int_eq(cb_policy_try("all", H2H, 1), 1);
    ck_assert_int_eq(cb_policy_try("none", D2H, 4096), 0);
    ck_assert_int_eq(cb_policy_try("d2h:1K-2K", D2H, 1024), 1);
    ck_assert_int_eq(cb_policy_try("d2h:1K-2K", D2H, 2048), 0); /* half-open */
    ck_assert_int_eq(cb_policy_try("d2h:1K-2K", H2D, 1500), 0); /* no band: never */
    ck_assert_int_eq(cb_policy_try("h2d:0-8K,d2d:64K-max", D2D, 1 << 30), 1);
    const char *bad[] = {"h2x:0-1K", "h2d", "h2d:1K", "h2d:2K-1K", "h2d:0-8K,", "h2d:a-b", "h2d:0-8K;d2h:0-1K",
                         "h2d:0-1,h2d:1-2,h2d:2-3,h2d:3-4,h2d:4-5,h2d:5-6,h2d:6-7,h2d:7-8,h2d:8-9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(cb_policy_try(bad[i], H2D, 1) == -1, "policy \"%s\" should be rejected", bad[i]);
}
END_TEST

/* --help says BYTES 1..1T: every size it shows is accepted. */
START_TEST(sizes_as_documented)
{
    ck_assert_uint_eq(parsed("max_copy", "1T"), (uint64_t)1 << 40);
    ck_assert_uint_eq(parsed("max_copy", "1TiB"), (uint64_t)1 << 40);
    ck_assert_uint_eq(parsed("max_copy", "1"), 1);
    rejected("max_copy", "2T");
    ck_assert_int_eq(cb_policy_try("h2d:1T-max", H2D, 4096), -1); /* above the 1M maximum copy */
}
END_TEST

/* A refused policy says why, naming the limit it broke. */
static void policy_refused(const char *policy, uint64_t max_copy, const char *reason)
{
    char why[512];
    ck_assert_msg(cb_policy_check(policy, max_copy, why, sizeof why) == -1, "\"%s\" should be refused", policy);
    ck_assert_msg(strstr(why, reason), "\"%s\": want \"%s\" in \"%s\"", policy, reason, why);
}

START_TEST(policy_bands_checked)
{
    const uint64_t M = 1 << 20;
    char why[512];
    policy_refused("h2d:1G-2G", M, "h2d:1G-2G starts above CUBATCH_MAX_COPY (1M): no copy could ever use it");
    ck_assert_int_eq(cb_policy_check("h2d:1G-2G", (uint64_t)2 << 30, why, sizeof why), 0);
    ck_assert_int_eq(cb_policy_check("h2d:1M-2M", M, why, sizeof why), 0); /* a 1M copy may use it */
    policy_refused("h2d:0-8K,h2d:4K-16K", M, "h2d:4K-16K overlaps h2d:0-8K");
    policy_refused("d2h:0-max,d2h:1K-2K", M, "d2h:1K-2K overlaps d2h:0-max");
    policy_refused("h2d:28K-max,h2d:0-8K", M, "h2d:0-8K comes after h2d:28K-max: list a direction's bands in "
                                              "increasing order");
    policy_refused("h2d:1-2,h2d:2-3,h2d:3-4,h2d:4-5,h2d:5-6,h2d:6-7,h2d:7-8,h2d:8-9,h2d:9-10", M,
                   "h2d:9-10 is band 9 of h2d: a direction takes at most 8 bands");
    policy_refused("h2d:0-1", M, "holds only 0-byte copies");
    policy_refused("h2d:2K-1K", M, "LO must be below HI");
    policy_refused("h2x:0-1K", M, "does not start with a direction");
    policy_refused("h2d:0-8K,", M, "an empty band");
    policy_refused("h2d:a-b", M, "is not DIR:LO-HI");
    /* other directions' bands interleave freely; the default and all fit any maximum */
    ck_assert_int_eq(cb_policy_check("h2d:0-8K,d2h:0-max,h2d:28K-max", M, why, sizeof why), 0);
    ck_assert_int_eq(cb_policy_check("default", 4096, why, sizeof why), 0);
    ck_assert_int_eq(cb_policy_check(NULL, 1, why, sizeof why), 0);
    ck_assert_int_eq(cb_policy_check("all", 1, why, sizeof why), 0);
}
END_TEST

static int hazard_at(const uintptr_t (*c)[3], size_t n) { return cb_hazard_probe(c, n); }

START_TEST(hazard_rules)
{
    /* read after write: A->B then B->C */
    const uintptr_t chain[][3] = {{0x2000, 0x1000, 0x100}, {0x3000, 0x2000, 0x100}};
    ck_assert_int_eq(hazard_at(chain, 2), 1);
    /* write after read: X->D, then Y->X */
    const uintptr_t war[][3] = {{0x5000, 0x1000, 0x100}, {0x1080, 0x9000, 0x10}};
    ck_assert_int_eq(hazard_at(war, 2), 1);
    /* write after write */
    const uintptr_t waw[][3] = {{0x5000, 0x1000, 0x100}, {0x50ff, 0x9000, 0x10}};
    ck_assert_int_eq(hazard_at(waw, 2), 1);
    /* adjacent ranges and shared sources are no hazard */
    const uintptr_t ok[][3] = {{0x5000, 0x1000, 0x100}, {0x5100, 0x1000, 0x100}, {0x4f00, 0x1100, 0x100},
                               {0x6000, 0x1000, 0x200}};
    ck_assert_int_eq(hazard_at(ok, 4), -1);
}
END_TEST

/* The interval index against the O(n^2) definition, on random copy lists. */
START_TEST(hazard_matches_brute_force)
{
    srand(12345);
    uintptr_t c[64][3];
    for (int trial = 0; trial < 3000; trial++) {
        size_t n = 2 + (size_t)(rand() % 40);
        int span = 1 + rand() % 4; /* small spans collide often, large ones rarely */
        for (size_t i = 0; i < n; i++) {
            c[i][0] = 0x100000 + (uintptr_t)(rand() % (256 * span)) * 16;
            c[i][1] = 0x100000 + (uintptr_t)(rand() % (256 * span)) * 16;
            c[i][2] = 1 + (uintptr_t)(rand() % 64);
        }
        int expect = -1;
        for (size_t i = 1; i < n && expect < 0; i++)
            for (size_t j = 0; j < i && expect < 0; j++) {
                uintptr_t dj = c[j][0], sj = c[j][1], lj = c[j][2];
                uintptr_t di = c[i][0], si = c[i][1], li = c[i][2];
                int raw = si < dj + lj && dj < si + li;
                int waw = di < dj + lj && dj < di + li;
                int war = di < sj + lj && sj < di + li;
                if (raw || waw || war)
                    expect = (int)i;
            }
        ck_assert_int_eq(hazard_at((const uintptr_t(*)[3])c, n), expect);
    }
}
END_TEST

/* Do two footprints share a byte?  Byte by byte over the smaller address span. */
static int rows_share_a_byte(uintptr_t a, size_t wa, size_t ha, size_t pa, uintptr_t b, size_t wb, size_t hb,
                             size_t pb)
{
    for (size_t i = 0; i < ha; i++)
        for (size_t j = 0; j < hb; j++) {
            uintptr_t x = a + i * pa, y = b + j * pb;
            if (x < y + wb && y < x + wa)
                return 1;
        }
    return 0;
}

/* 2D footprints (rule 19): the O(1) and row-wise checks against every pair of
 * rows, with equal and unequal pitches, one-row shapes and the rows of one
 * region's tiles, which interleave. */
START_TEST(rows_overlap_matches_brute_force)
{
    srand(4242);
    for (int trial = 0; trial < 200000; trial++) {
        size_t pa = 1 + (size_t)(rand() % 48), pb = rand() % 3 ? pa : 1 + (size_t)(rand() % 48);
        size_t wa = 1 + (size_t)rand() % pa, wb = 1 + (size_t)rand() % pb;
        size_t ha = 1 + (size_t)(rand() % 6), hb = 1 + (size_t)(rand() % 6);
        uintptr_t a = 0x10000 + (uintptr_t)(rand() % 200), b = 0x10000 + (uintptr_t)(rand() % 200);
        int want = rows_share_a_byte(a, wa, ha, pa, b, wb, hb, pb);
        ck_assert_msg(cb_rows_overlap(a, wa, ha, pa, b, wb, hb, pb) == want,
                      "a=%#lx w%zu h%zu p%zu, b=%#lx w%zu h%zu p%zu: want %d", (unsigned long)a, wa, ha, pa,
                      (unsigned long)b, wb, hb, pb, want);
    }
    /* tiles of one region side by side: rows interleave, nothing shared */
    ck_assert_int_eq(cb_rows_overlap(0x1000, 192, 8, 1600, 0x1000 + 192, 192, 8, 1600), 0);
    ck_assert_int_eq(cb_rows_overlap(0x1000, 192, 8, 1600, 0x1000 + 191, 192, 8, 1600), 1);
}
END_TEST

/* A run of 2D and 1D copies: the first that may not join, by brute force. */
START_TEST(shaped_hazards_match_brute_force)
{
    srand(777);
    for (int trial = 0; trial < 3000; trial++) {
        struct cb_iset w = {0}, r = {0};
        struct cb_shapes sh = {0};
        struct cb_shape c[72];
        size_t n = 2 + (size_t)(rand() % 70); /* past the index's first growth (16) */
        int expect = -1, got = -1;
        for (size_t i = 0; i < n; i++) {
            size_t p = 64 + (size_t)(rand() % 3) * 16;
            c[i] = (struct cb_shape){0x40000 + (uintptr_t)(rand() % 2048), 0x40000 + (uintptr_t)(rand() % 2048),
                                     1 + (size_t)(rand() % 40), rand() % 2 ? 1 + (size_t)(rand() % 5) : 1, p, p};
            for (size_t j = 0; j < i && expect < 0; j++) {
                const struct cb_shape *q = &c[j], *x = &c[i];
                if (rows_share_a_byte(x->src, x->width, x->height, x->spitch, q->dst, q->width, q->height, q->dpitch) ||
                    rows_share_a_byte(x->dst, x->width, x->height, x->dpitch, q->dst, q->width, q->height, q->dpitch) ||
                    rows_share_a_byte(x->dst, x->width, x->height, x->dpitch, q->src, q->width, q->height, q->spitch))
                    expect = (int)i;
            }
            if (got < 0 && cb_hazard_shaped(&w, &r, &sh, &c[i]))
                got = (int)i;
            if (got >= 0 || expect >= 0)
                break;
            if (c[i].height > 1)
                ck_assert_int_eq(cb_shapes_add(&sh, &c[i]), 0);
            else
                ck_assert(!cb_iset_add(&w, c[i].dst, c[i].dst + c[i].width) &&
                          !cb_iset_add(&r, c[i].src, c[i].src + c[i].width));
        }
        ck_assert_int_eq(got, expect);
        cb_iset_free(&w);
        cb_iset_free(&r);
        cb_shapes_free(&sh);
    }
    /* A copy that meets only the last row of a 2D copy starting well before
     * it (the index's window reaches back by the longest range), on each of
     * the three conflicts, among 2D copies after it and far from it. */
    struct cb_iset w = {0}, r = {0};
    struct cb_shapes sh = {0};
    const struct cb_shape tile = {0x100000, 0x800000, 64, 8, 256, 256};
    ck_assert_int_eq(cb_shapes_add(&sh, &tile), 0);
    for (uintptr_t k = 1; k <= 20; k++) {
        const struct cb_shape later = {0x100000 + k * 0x1000, 0x800000 + k * 0x1000, 64, 8, 256, 256};
        ck_assert_int_eq(cb_shapes_add(&sh, &later), 0);
    }
    const uintptr_t last_dst = 0x100000 + 7 * 256 + 8, last_src = 0x800000 + 7 * 256 + 8;
    const struct cb_shape reads_dst = {0x900000, last_dst, 16, 1, 16, 16};
    const struct cb_shape writes_dst = {last_dst, 0x900000, 16, 1, 16, 16};
    const struct cb_shape writes_src = {last_src, 0x900000, 16, 1, 16, 16};
    const struct cb_shape beside = {0x100000 + 7 * 256 + 64, 0x900000, 16, 1, 16, 16};
    ck_assert_int_eq(cb_hazard_shaped(&w, &r, &sh, &reads_dst), 1);
    ck_assert_int_eq(cb_hazard_shaped(&w, &r, &sh, &writes_dst), 1);
    ck_assert_int_eq(cb_hazard_shaped(&w, &r, &sh, &writes_src), 1);
    ck_assert_int_eq(cb_hazard_shaped(&w, &r, &sh, &beside), 0);
    cb_shapes_free(&sh);
}
END_TEST

/* ---- classification (classify.c): the per-thread range cache ---------------------- */

/* A driver that knows a set of disjoint ranges (its truth may change under the
 * cache, as it would after a free cubatch did not see) and counts its queries. */
struct fake_range {
    uintptr_t lo, hi;
    unsigned memtype; /* CU_MEMORYTYPE_DEVICE or _HOST */
};
static struct fake_range *fake_world;
static size_t fake_n;
static unsigned long fake_queries;

static CUresult CUDAAPI fake_pointer_attributes(unsigned int num, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr)
{
    fake_queries++;
    const struct fake_range *r = NULL;
    for (size_t i = 0; i < fake_n; i++)
        if (ptr >= fake_world[i].lo && ptr < fake_world[i].hi)
            r = &fake_world[i];
    for (unsigned i = 0; i < num; i++) {
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data[i] = r ? r->memtype : 0; break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data[i] = 0; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[i] = r && r->memtype == CU_MEMORYTYPE_DEVICE ? 0 : -1; break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data[i] = r ? r->lo : 0; break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[i] = r ? r->hi - r->lo : 0; break;
        case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data[i] = NULL; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data[i] = ptr; break;
        default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

static void fake_install(struct fake_range *world, size_t n)
{
    fake_world = world;
    fake_n = n;
    fake_queries = 0;
    cb_drv.cuPointerGetAttributes = fake_pointer_attributes;
    cb_forget_classes(); /* what earlier tests left in this thread's cache is gone */
}

/* Every answer is the driver's, for loops over few and over many allocations,
 * and the driver is asked once per allocation while they fit in the cache. */
START_TEST(classify_matches_the_driver)
{
    enum { M = 1500 };
    static struct fake_range world[M];
    uint32_t x = 12345;
    for (size_t i = 0; i < M; i++) { /* a range every 64 KiB, 4 KiB to 60 KiB long, shuffled kinds */
        x = x * 1103515245u + 12345u;
        world[i].lo = 0x10000000u + i * 0x10000u;
        world[i].hi = world[i].lo + 0x1000u * (1 + (x >> 16) % 15);
        world[i].memtype = (x >> 8) & 1 ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    }
    fake_install(world, M);
    const size_t loops[] = {256, 300, 1200};
    for (size_t l = 0; l < 3; l++) {
        size_t n = loops[l];
        cb_forget_classes(); /* each loop from an empty cache */
        unsigned long before = fake_queries;
        for (int round = 0; round < 3; round++) {
            for (size_t i = 0; i < n; i++) {
                x = x * 1103515245u + 12345u;
                const struct fake_range *r = &world[(i * 7 + l * 311) % M];
                uintptr_t p = r->lo + x % (r->hi - r->lo), gap = r->hi + 16; /* inside, and just past the end */
                struct cb_class c;
                ck_assert_int_eq(cb_classify(p, &c), 0);
                ck_assert_int_eq(c.kind, r->memtype == CU_MEMORYTYPE_DEVICE ? CB_MEM_DEVICE : CB_MEM_HOST);
                ck_assert_uint_eq(c.end, r->hi);
                if (i % 64 == 0) {
                    ck_assert_int_eq(cb_classify(gap, &c), 0);
                    ck_assert_int_eq(c.kind, CB_MEM_UNKNOWN);
                }
            }
        }
        unsigned long asked = fake_queries - before, gaps = 3 * ((n + 63) / 64);
        if (n <= 512)
            ck_assert_msg(asked == n + gaps, "%zu allocations, 3 rounds: %lu queries (want %lu)", n, asked, n + gaps);
        else /* more than the cache holds: every answer still right, no more than a query each */
            ck_assert_msg(asked <= 3 * n + gaps, "%zu allocations, 3 rounds: %lu queries", n, asked);
    }
    /* After such a loop the cache learns a smaller one again, without a free:
     * within a few rounds the driver is not asked at all. */
    unsigned long last = (unsigned long)-1;
    for (int round = 0; round < 16 && last; round++) {
        unsigned long before = fake_queries;
        for (size_t i = 0; i < 256; i++) {
            struct cb_class c;
            ck_assert_int_eq(cb_classify(world[i].lo, &c), 0);
            ck_assert_uint_eq(c.end, world[i].hi);
        }
        last = fake_queries - before;
    }
    ck_assert_msg(last == 0, "a loop of 256 allocations still asks the driver %lu times a round after 16 rounds", last);
}
END_TEST

/* A range the driver now draws across a cached one (freed and allocated again
 * where cubatch did not see it): the cached one is dropped, not trusted. */
START_TEST(classify_drops_a_range_the_driver_redrew)
{
    static struct fake_range world[1];
    world[0] = (struct fake_range){0x100000, 0x200000, CU_MEMORYTYPE_DEVICE};
    fake_install(world, 1);
    struct cb_class c;
    ck_assert_int_eq(cb_classify(0x110000, &c), 0);
    ck_assert_int_eq(c.kind, CB_MEM_DEVICE);
    world[0] = (struct fake_range){0x180000, 0x280000, CU_MEMORYTYPE_HOST};
    ck_assert_int_eq(cb_classify(0x240000, &c), 0); /* not cached: asked, and overlaps the old range */
    ck_assert_int_eq(c.kind, CB_MEM_HOST);
    unsigned long before = fake_queries;
    ck_assert_int_eq(cb_classify(0x110000, &c), 0); /* the old range's part the driver no longer has */
    ck_assert_uint_eq(fake_queries - before, 1);
    ck_assert_int_eq(c.kind, CB_MEM_UNKNOWN);
}
END_TEST

/* ---- rule 14: the table of announced memory (allocs.c) -------------------------------- */

static struct cb_alloc arange(uintptr_t lo, uintptr_t hi, int device)
{
    return (struct cb_alloc){lo, hi, device < 0 ? CB_MEM_HOST : CB_MEM_DEVICE, device, NULL, (CUcontext)0x10};
}

START_TEST(alloc_table_finds_removes_and_grows)
{
    struct cb_alloc a;
    cb_allocs_remove_context(NULL);
    ck_assert_int_eq(cb_allocs_find(0x1000, &a), 0);
    /* more than the first table holds, inserted out of order */
    for (unsigned i = 0; i < 1000; i++) {
        uintptr_t lo = 0x100000 + (uintptr_t)((i * 617u) % 1000u) * 0x2000;
        ck_assert_int_eq(cb_allocs_insert(&(struct cb_alloc[]){arange(lo, lo + 0x1000, -1)}[0]), 0);
    }
    ck_assert_uint_eq(cb_allocs_count(), 1000);
    for (unsigned i = 0; i < 1000; i++) {
        uintptr_t lo = 0x100000 + (uintptr_t)i * 0x2000;
        ck_assert_int_eq(cb_allocs_find(lo, &a), 1);
        ck_assert_uint_eq(a.lo, lo);
        ck_assert_uint_eq(a.hi, lo + 0x1000);
        ck_assert_int_eq(cb_allocs_find(lo + 0xfff, &a), 1);
        ck_assert_int_eq(cb_allocs_find(lo + 0x1000, &a), 0); /* the gap between two */
    }
    ck_assert_int_eq(cb_allocs_find(0x100000 - 1, &a), 0);
    /* a free: by any pointer inside it */
    cb_allocs_remove(0x100000 + 0x2000 * 5 + 7, 0x100000 + 0x2000 * 5 + 8);
    ck_assert_int_eq(cb_allocs_find(0x100000 + 0x2000 * 5, &a), 0);
    ck_assert_int_eq(cb_allocs_find(0x100000 + 0x2000 * 6, &a), 1);
    ck_assert_uint_eq(cb_allocs_count(), 999);
    /* a new range across kept ones replaces them (a free nobody saw) */
    ck_assert_int_eq(cb_allocs_insert(&(struct cb_alloc[]){arange(0x100000 + 0x2000 * 10, 0x100000 + 0x2000 * 13, 0)}[0]), 0);
    ck_assert_uint_eq(cb_allocs_count(), 999 - 3 + 1);
    ck_assert_int_eq(cb_allocs_find(0x100000 + 0x2000 * 11 + 0x1800, &a), 1);
    ck_assert_int_eq(a.kind, CB_MEM_DEVICE);
    ck_assert_int_eq(a.device, 0);
    /* a context going away takes its ranges, and those of no known context */
    ck_assert_int_eq(cb_allocs_insert(&(struct cb_alloc){0x9000000, 0x9001000, CB_MEM_HOST, -1, NULL, (CUcontext)0x20}), 0);
    cb_allocs_remove_context((CUcontext)0x10);
    ck_assert_uint_eq(cb_allocs_count(), 1);
    ck_assert_int_eq(cb_allocs_find(0x9000800, &a), 1);
    cb_allocs_remove_context(NULL);
    ck_assert_uint_eq(cb_allocs_count(), 0);
}
END_TEST

/* Readers never get a wrong answer while a writer inserts and removes ranges
 * around the ones they look up (the slots they search shift under them). */
enum { AT_STABLE = 64, AT_READERS = 2 };
static atomic_int at_stop, at_wrong;
static uintptr_t at_stable_lo(int i) { return 0x40000000 + (uintptr_t)i * 0x100000; }
static void *at_reader(void *arg)
{
    (void)arg;
    unsigned long k = 0;
    while (!atomic_load(&at_stop)) {
        int i = (int)(k++ % AT_STABLE);
        struct cb_alloc a;
        int r = cb_allocs_find(at_stable_lo(i) + 0x800, &a);
        if (r == 0 || (r == 1 && (a.lo != at_stable_lo(i) || a.hi != at_stable_lo(i) + 0x1000 || a.device != i)))
            atomic_fetch_add(&at_wrong, 1);
    }
    return NULL;
}
START_TEST(alloc_table_readers_race_a_writer)
{
    cb_allocs_remove_context(NULL);
    for (int i = 0; i < AT_STABLE; i++)
        cb_allocs_insert(&(struct cb_alloc){at_stable_lo(i), at_stable_lo(i) + 0x1000, CB_MEM_DEVICE, i, NULL, NULL});
    pthread_t readers[AT_READERS];
    for (int i = 0; i < AT_READERS; i++)
        pthread_create(&readers[i], NULL, at_reader, NULL);
    /* churn: ranges between the stable ones come and go, shifting the slots
     * (1,500 rounds, or half a second under a slow sanitizer) */
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int round = 0; round < 1500; round++) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) > 500000000L)
            break;
        for (int i = 0; i < AT_STABLE; i++) {
            uintptr_t lo = at_stable_lo(i) + 0x10000 + (uintptr_t)(round % 8) * 0x1000;
            cb_allocs_insert(&(struct cb_alloc){lo, lo + 0x800, CB_MEM_HOST, -1, NULL, NULL});
            if (round % 2)
                cb_allocs_remove(lo - 0x1000, lo);
        }
    }
    atomic_store(&at_stop, 1);
    for (int i = 0; i < AT_READERS; i++)
        pthread_join(readers[i], NULL);
    int wrong = atomic_load(&at_wrong);
    ck_assert_msg(wrong == 0, "%d lookups of a range that never changed answered wrong", wrong);
    cb_allocs_remove_context(NULL);
}
END_TEST

/* Rule 13 against rule 3's mirror image (tests/fuzz/regressions/6b.ops):
 * a legacy run is counted non-empty for an instant while a capture runs (a
 * legacy copy that found no capture joins its run, counts it, then sees the
 * capture and takes itself back: copy.c, legacy_run_raced_a_capture).  A call
 * naming the capturing stream that reads the count then must not ask the
 * stream's flags (cuStreamGetFlags of a capturing stream invalidates the
 * capture); another created stream is still asked. */
#define CAP_STREAM ((CUstream)(uintptr_t)0x5000)
#define OTHER_STREAM ((CUstream)(uintptr_t)0x6000)
static int flags_asked_cap, flags_asked_other;
static CUresult CUDAAPI fake_is_capturing(CUstream s, CUstreamCaptureStatus *st)
{
    *st = s == CAP_STREAM ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}
static CUresult CUDAAPI fake_get_flags(CUstream s, unsigned int *flags)
{
    if (s == CAP_STREAM) {
        flags_asked_cap++;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* and the capture is invalidated */
    }
    flags_asked_other++;
    *flags = CU_STREAM_NON_BLOCKING;
    return CUDA_SUCCESS;
}

START_TEST(legacy_order_asks_no_capturing_stream)
{
    struct cb_driver saved = cb_drv;
    cb_drv.cuStreamIsCapturing = fake_is_capturing;
    cb_drv.cuStreamGetFlags = fake_get_flags;
    atomic_fetch_add(&cb_captures_n, 1);       /* a capture counted and begun */
    atomic_fetch_add(&cb_legacy_nonempty, 1);  /* the instant a taken-back copy counts its run */
    ck_assert_int_eq(cb_flush_cross(CAP_STREAM, CB_SK_CREATED), CUDA_SUCCESS);
    ck_assert_msg(flags_asked_cap == 0, "the capturing stream's flags were asked %d time(s)", flags_asked_cap);
    ck_assert_int_eq(cb_flush_cross(OTHER_STREAM, CB_SK_CREATED), CUDA_SUCCESS);
    ck_assert_int_eq(flags_asked_other, 1);
    atomic_fetch_sub(&cb_legacy_nonempty, 1);
    atomic_fetch_sub(&cb_captures_n, 1);
    cb_drv = saved;
}
END_TEST

/* Rule 7: the timer's look waits for no lock (look.c).  A run whose lock
 * another thread holds (a copy joining it, a flush) is looked at again
 * CUBATCH_FLUSH_US later, and so is every run while the store's lock is
 * held: the copy path never waits for a look, nor sleeps for it on a lock
 * marked as waited for. */
struct look_arg {
    uint64_t now, next;
};
static void *look_once(void *p)
{
    struct look_arg *a = p;
    a->next = cb_look_runs(a->now);
    return NULL;
}
/* A look on another thread, given 2 s (check gives a test 4): its answer. */
static uint64_t look_elsewhere(uint64_t now)
{
    struct look_arg a = {now, 0};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, look_once, &a), 0);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    ck_assert_msg(pthread_timedjoin_np(th, NULL, &until) == 0, "the look waited for a lock");
    return a.next;
}
START_TEST(a_look_waits_for_no_lock)
{
    const uint64_t now = 5000000, again = now + cb_opt(CB_OPT_flush_us) * 1000u;
    struct cb_run_key key = {(uintptr_t)0x7000, 0};
    struct cb_run *run = cb_run_lock_key(&key, 1, NULL);
    ck_assert_ptr_nonnull(run);
    cb_run_look_at(run, now - 1); /* due */
    ck_assert_uint_eq(look_elsewhere(now), again);
    ck_assert_uint_eq(run->looks.look_ns, now - 1); /* not looked at */
    cb_run_unlock(run);
    cb_store_lock();
    ck_assert_uint_eq(look_elsewhere(now), again);
    cb_store_unlock();
    ck_assert_uint_eq(run->looks.look_ns, now - 1);
    /* both free: looked at, quiet (nothing joined), its looks end */
    ck_assert_uint_eq(look_elsewhere(now), 0);
    ck_assert_uint_eq(run->looks.look_ns, 0);
}
END_TEST

/* Rule 18: the next merged chunk after one of `bytes` the program issued in
 * `ns`, at the copy engines' rate of 64 bytes a ns: the edges of the rate, of
 * CB_MERGED_LEAP times the rate, and the largest chunk, which whole runs
 * (check_rules: merging) do not reach exactly; a run of device memory only
 * leaps at any pace. */
START_TEST(merged_chunks_follow_the_programs_pace)
{
    const size_t M = (size_t)1 << 20;
    const uint64_t engines_1m = M / CB_MERGED_ENGINE_BYTES_PER_NS; /* 16384 ns */
    ck_assert_uint_eq(cb_engine_merged_next(M, 0, 1), CB_MERGED_LEAP * M); /* many times as fast as the engines */
    ck_assert_uint_eq(cb_engine_merged_next(M, engines_1m / CB_MERGED_LEAP, 1), CB_MERGED_LEAP * M);
    ck_assert_uint_eq(cb_engine_merged_next(M, engines_1m / CB_MERGED_LEAP + 1, 1), M + M / 2); /* faster */
    ck_assert_uint_eq(cb_engine_merged_next(M, engines_1m, 1), M + M / 2);                      /* as fast */
    ck_assert_uint_eq(cb_engine_merged_next(M, engines_1m + 1, 1), CB_MERGED_CHUNK_STEADY);     /* slower */
    /* never beyond the largest, whichever step */
    ck_assert_uint_eq(cb_engine_merged_next(CB_MERGED_CHUNK_MAX / 2, 0, 1), CB_MERGED_CHUNK_MAX);
    ck_assert_uint_eq(cb_engine_merged_next(CB_MERGED_CHUNK_MAX, 0, 1), CB_MERGED_CHUNK_MAX);
    ck_assert_uint_eq(cb_engine_merged_next(CB_MERGED_CHUNK_MAX, CB_MERGED_CHUNK_MAX / CB_MERGED_ENGINE_BYTES_PER_NS, 1),
                      CB_MERGED_CHUNK_MAX);
    ck_assert_uint_eq(cb_engine_merged_next(CB_MERGED_CHUNK_MAX, 2 * CB_MERGED_CHUNK_MAX / CB_MERGED_ENGINE_BYTES_PER_NS, 1),
                      CB_MERGED_CHUNK_STEADY);
    ck_assert_uint_eq(cb_engine_merged_next(CB_MERGED_CHUNK_FIRST, 0, 1), CB_MERGED_LEAP * CB_MERGED_CHUNK_FIRST);
    /* device memory only: the engines outrun any pace, so every step leaps */
    ck_assert_uint_eq(cb_engine_merged_next(M, engines_1m + 1, 0), CB_MERGED_LEAP * M);
    ck_assert_uint_eq(cb_engine_merged_next(M, engines_1m, 0), CB_MERGED_LEAP * M);
    ck_assert_uint_eq(cb_engine_merged_next(CB_MERGED_CHUNK_FIRST, UINT64_MAX, 0), CB_MERGED_LEAP * CB_MERGED_CHUNK_FIRST);
    ck_assert_uint_eq(cb_engine_merged_next(CB_MERGED_CHUNK_MAX, UINT64_MAX, 0), CB_MERGED_CHUNK_MAX);
}
END_TEST

int main(void)
{
    const struct th_case cases[] = {
        {"options", TH_TESTS(bool_words, option_table_checks_itself, sizes_and_ranges, enums, sizes_as_documented)},
        {"policy", TH_TESTS(policy_default_follows_measurement, policy_installed_answers_as_its_bands, policy_parsing,
                                    policy_bands_checked)},
        {"classification", TH_TESTS(classify_matches_the_driver, classify_drops_a_range_the_driver_redrew,
                                    alloc_table_finds_removes_and_grows, alloc_table_readers_race_a_writer)},
        {"hazards", TH_TESTS(hazard_rules, hazard_matches_brute_force, rows_overlap_matches_brute_force,
                             shaped_hazards_match_brute_force)},
        {"captures", TH_TESTS(legacy_order_asks_no_capturing_stream)},
        {"chunks", TH_TESTS(merged_chunks_follow_the_programs_pace)},
        {"looks", TH_TESTS(a_look_waits_for_no_lock)},
    };
    /* check's default limit per test */
    return th_check_main("units", cases, sizeof cases / sizeof cases[0], 4);
}
