/* check_rules.c - every rule of docs/design.md section 3 (and the interposition paths of
 * section 1), checked by running tests/probe scenarios against the simulated
 * driver with and without LD_PRELOAD=libcubatch.so.
 *
 * Each run is a fresh process with a cleaned environment.  A scenario passes when
 *  - both runs say "result: ok" (bytes equal to host-computed data),
 *  - both runs observed the same bytes and return codes (digest, rc lines),
 *  - cubatch's final counters (CUBATCH_STATS=json at exit) and the simulated
 *    driver's call log (CUSIM_LOG) show the batching the rule asks for, in the
 *    right order relative to the observing call. */
#include "config.h" /* _GNU_SOURCE */
#define TH_WITH_CHECK 1
#include "../harness/harness.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef BUILDDIR
#error "BUILDDIR must name the build tree"
#endif

#define PROBE BUILDDIR "/tests/probe"
#define NOCUDA BUILDDIR "/tests/nocuda"
#define LIBCUBATCH BUILDDIR "/src/.libs/libcubatch.so"
#define SIMDIR BUILDDIR "/tests/sim/.libs"
#define FAKECLOCK BUILDDIR "/tests/.libs/libfakeclock.so"

struct run {
    int status;   /* exit status, or 128 + the signal that ended it */
    char *out;    /* stdout */
    char *err;    /* stderr */
    char *stats;  /* the JSON report written at exit ("" without preload) */
    char *log;    /* the simulated driver's call log */
};

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
    free(r->stats);
    free(r->log);
}

/* Run `prog scenario` with a clean environment: PATH, the simulated driver, an
 * optional preload, and extra NAME=VALUE settings (NULL-terminated). */
/* preload: 0 none, 1 cubatch under the rule tests' own engine and pipelining
 * (below), CB_SHIPPED cubatch as it ships (only `extra` set). */
enum { CB_SHIPPED = 2 };
static struct run run_prog(const char *prog, const char *scenario, int preload, const char *const *extra)
{
    char dir[] = "/tmp/cubatch-check-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char out[128], err[128], stats[128], log[128];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(stats, sizeof stats, "%s/stats.json", dir);
    snprintf(log, sizeof log, "%s/sim.log", dir);
    const char *env[32];
    static char e_stats_file[160], e_log[160];
    int ne = (int)th_env_clean(env, 32);
    env[ne++] = "LD_LIBRARY_PATH=" SIMDIR;
    env[ne++] = "CUBATCH_STATS=json";
    /* Every rule that reads a clock (pace, idle gap, age) sees the virtual clock
     * of tests/fakeclock: time passes only where a scenario says so
     * (pass_time_us), so batch counts are exact on an idle or a busy machine.
     * Runs go out whole (no pipelining) unless a test asks, so that each
     * scenario's batches follow its own structure. */
    int own_pipeline = 0, own_engine = 0, own_merge = 0;
    for (const char *const *e = extra; e && *e; e++) {
        own_pipeline |= !strncmp(*e, "CUBATCH_PIPELINE=", 17);
        own_engine |= !strncmp(*e, "CUBATCH_ENGINE=", 15);
        own_merge |= !strncmp(*e, "CUBATCH_MERGE_ADJACENT=", 23);
    }
    if (!own_pipeline && preload != CB_SHIPPED)
        env[ne++] = "CUBATCH_PIPELINE=0";
    /* Each copy its own batch entry, unless a test (merging's) says otherwise:
     * the scenarios copy slices of one buffer, which merging would make one
     * copy, and the counters the tests assert are of batching itself. */
    if (!own_merge && preload != CB_SHIPPED)
        env[ne++] = "CUBATCH_MERGE_ADJACENT=0";
    /* The batch API engine, unless a test (the kernel engine's) says otherwise. */
    if (!own_engine && preload != CB_SHIPPED)
        env[ne++] = "CUBATCH_ENGINE=batch";
    snprintf(e_stats_file, sizeof e_stats_file, "CUBATCH_STATS_FILE=%s", stats);
    env[ne++] = e_stats_file;
    snprintf(e_log, sizeof e_log, "CUSIM_LOG=%s", log);
    env[ne++] = e_log;
    int own_preload = 0;
    for (const char *const *e = extra; e && *e; e++)
        own_preload |= !strncmp(*e, "LD_PRELOAD=", 11);
    if (!own_preload)
        env[ne++] = preload ? "LD_PRELOAD=" LIBCUBATCH " " FAKECLOCK : "LD_PRELOAD=" FAKECLOCK;
    for (; extra && *extra && ne < 31; extra++)
        env[ne++] = *extra;
    env[ne] = NULL;
    char *argv[] = {(char *)prog, (char *)scenario, NULL};
    struct run r;
    r.status = th_run(argv, (char *const *)env, out, err, 60);
    r.out = th_slurp(out);
    r.err = th_slurp(err);
    r.stats = th_slurp(stats);
    r.log = th_slurp(log);
    unlink(out);
    unlink(err);
    unlink(stats);
    unlink(log);
    rmdir(dir);
    return r;
}

static struct run probe(const char *scenario, int preload, const char *const *extra)
{
    return run_prog(PROBE, scenario, preload, extra);
}

/* The value of "key": in the final JSON counters, -1 when absent. */
static long stat_of(const struct run *r, const char *key)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(r->stats, pat);
    return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* The value of "key" in the counters the program printed itself (the probe's
 * "stats:" line, from cubatch_stats_json), -1 when absent: for a run whose report
 * at exit cannot be written (cubatch unable to allocate). */
static long printed_stat_of(const struct run *r, const char *key)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *line = strstr(r->out, "stats: {");
    const char *end = line ? strchr(line, '\n') : NULL;
    const char *p = line ? strstr(line, pat) : NULL;
    return p && (!end || p < end) ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* The rest of the first stdout line starting with `prefix`, or "" */
static const char *line_of(const struct run *r, const char *prefix, char *buf, size_t len)
{
    buf[0] = 0;
    size_t pl = strlen(prefix);
    for (const char *p = r->out; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t ll = nl ? (size_t)(nl - p) : strlen(p);
        if (ll >= pl && !strncmp(p, prefix, pl)) {
            size_t n = ll - pl < len - 1 ? ll - pl : len - 1;
            memcpy(buf, p + pl, n);
            buf[n] = 0;
            break;
        }
        p = nl ? nl + 1 : NULL;
    }
    return buf;
}

static long num_of(const struct run *r, const char *prefix)
{
    char buf[64];
    line_of(r, prefix, buf, sizeof buf);
    return buf[0] ? strtol(buf, NULL, 10) : -1;
}

/* Index of the first log line naming exported function `fn` (-1 none); count. */
static long log_first(const struct run *r, const char *fn)
{
    size_t fl = strlen(fn);
    long i = 0;
    for (const char *p = r->log; *p; i++) {
        if (!strncmp(p, fn, fl) && (p[fl] == ' ' || p[fl] == '\n'))
            return i;
        const char *nl = strchr(p, '\n');
        if (!nl)
            break;
        p = nl + 1;
    }
    return -1;
}

static long log_count(const struct run *r, const char *fn)
{
    size_t fl = strlen(fn);
    long n = 0;
    for (const char *p = r->log; *p;) {
        if (!strncmp(p, fn, fl) && (p[fl] == ' ' || p[fl] == '\n'))
            n++;
        const char *nl = strchr(p, '\n');
        if (!nl)
            break;
        p = nl + 1;
    }
    return n;
}

/* All stdout lines with `prefix`, concatenated: what must agree between runs. */
static char *lines_with(const struct run *r, const char *prefix)
{
    size_t cap = strlen(r->out) + 1, used = 0, pl = strlen(prefix);
    char *b = malloc(cap);
    b[0] = 0;
    for (const char *p = r->out; *p;) {
        const char *nl = strchr(p, '\n');
        size_t ll = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (!strncmp(p, prefix, pl)) {
            memcpy(b + used, p, ll);
            used += ll;
            b[used] = 0;
        }
        p += ll;
    }
    return b;
}

#define ASSERT_OK(r, what)                                                                                \
    ck_assert_msg((r).status == 0 && strstr((r).out, "result: ok") && !strstr((r).out, "WRONG"),          \
                  "%s: status %d\n--- stdout\n%s--- stderr\n%s", what, (r).status, (r).out, (r).err)

/* A run with cubatch preloaded must be right and observe what the plain run did. */
static void same_as_plain(const struct run *plain, const struct run *shim, const char *how)
{
    ASSERT_OK(*shim, how);
    const char *keys[] = {"digest:", "rc:"};
    for (int k = 0; k < 2; k++) {
        char *a = lines_with(plain, keys[k]), *b = lines_with(shim, keys[k]);
        ck_assert_msg(!strcmp(a, b), "%s: %s differs:\nwithout:\n%swith:\n%s", how, keys[k], a, b);
        free(a);
        free(b);
    }
    ck_assert_msg(!strstr(shim->log, "USE_AFTER_FREE"), "%s: the simulated driver saw a use after free:\n%s", how,
                  shim->log);
    ck_assert_msg(!strstr(shim->log, "KERNEL_FAULT"), "%s: the copy kernel faulted:\n%s", how, shim->log);
}

/* Run a scenario both ways; both must be right and observe the same things.
 * The counters a test asserts come from the run under the tests' own engine and
 * pipelining (run_prog); unless the test set both itself, the scenario also
 * runs as cubatch ships (auto engine, pipelining, the pace rule off), which
 * must be just as right.  Not with CUSIM_FAIL: an injected fault names a
 * driver function (the batch API, a copy entry), which another engine may not
 * call, so the plain run and the shipped one would meet different drivers. */
struct pair { struct run plain, shim; };
/* A scenario without cubatch and with it preloaded as probe() says (1: the
 * rule tests' own engine and pipelining, CB_SHIPPED: as it ships), `extra` set
 * for both: both right, the same observed; the counters are the second's. */
static struct pair pair_of(const char *scenario, int preload, const char *const *extra)
{
    struct pair p = {probe(scenario, 0, extra), probe(scenario, preload, extra)};
    char without[96], with[96];
    snprintf(without, sizeof without, "%s without cubatch", scenario);
    snprintf(with, sizeof with, "%s with cubatch%s", scenario, preload == CB_SHIPPED ? " as shipped" : "");
    ASSERT_OK(p.plain, without);
    same_as_plain(&p.plain, &p.shim, with);
    return p;
}
static struct pair both(const char *scenario, const char *const *extra)
{
    struct pair p = pair_of(scenario, 1, extra);
    char shipped_how[96];
    snprintf(shipped_how, sizeof shipped_how, "%s with cubatch as shipped", scenario);
    int own_engine = 0, own_pipeline = 0, faults = 0;
    for (const char *const *e = extra; e && *e; e++) {
        own_pipeline |= !strncmp(*e, "CUBATCH_PIPELINE=", 17);
        own_engine |= !strncmp(*e, "CUBATCH_ENGINE=", 15);
        faults |= !strncmp(*e, "CUSIM_FAIL=", 11);
    }
    if ((!own_engine || !own_pipeline) && !faults) {
        struct run shipped = probe(scenario, CB_SHIPPED, extra);
        same_as_plain(&p.plain, &shipped, shipped_how);
        run_free(&shipped);
    }
    return p;
}
static void pair_free(struct pair *p)
{
    run_free(&p->plain);
    run_free(&p->shim);
}

#define STAT_EQ(r, key, want) \
    ck_assert_msg(stat_of(&(r), key) == (want), "%s = %ld, want %ld\n%s", key, stat_of(&(r), key), (long)(want), (r).stats)
#define STAT_GE(r, key, want) \
    ck_assert_msg(stat_of(&(r), key) >= (want), "%s = %ld, want >= %ld\n%s", key, stat_of(&(r), key), (long)(want), (r).stats)
/* `first` is logged before `then`: the batch went out before the observing call. */
#define LOG_BEFORE(r, first, then)                                                                         \
    ck_assert_msg(log_first(&(r), first) >= 0 && log_first(&(r), first) < log_first(&(r), then),           \
                  "%s (line %ld) must come before %s (line %ld)\n%s", first, log_first(&(r), first), then,   \
                  log_first(&(r), then), (r).log)

#define BATCH "cuMemcpyBatchAsync_v2"

/* ---- rule 1 and 8: what is deferred, runs of one ------------------------------------------ */

START_TEST(runs_become_batches)
{
    struct pair p = both("basic", NULL);
    STAT_EQ(p.shim, "pass_first", 1); /* the burst's first copy goes out at once */
    STAT_EQ(p.shim, "deferred", 127);
    STAT_EQ(p.shim, "batches", 2); /* the D2H run reads what the H2D run wrote: split there */
    STAT_EQ(p.shim, "batched_copies", 127);
    STAT_EQ(p.shim, "batch_max", 64);
    ck_assert_int_eq(log_count(&p.shim, BATCH), 2);
    ck_assert_int_eq(log_count(&p.plain, BATCH), 0);
    LOG_BEFORE(p.shim, BATCH, "cuStreamSynchronize");
    pair_free(&p);
}
END_TEST

START_TEST(pageable_passes_through)
{
    struct pair p = both("pageable", NULL);
    STAT_EQ(p.shim, "pass_pageable", 128);
    STAT_EQ(p.shim, "deferred", 0);
    ck_assert_int_eq(log_count(&p.shim, BATCH), 0);
    pair_free(&p);
}
END_TEST

/* Each copy is counted by the direction of its memory, whatever becomes of it;
 * 0-byte copies and pageable memory are not classified ("unknown"). */
START_TEST(every_direction_is_counted)
{
    struct pair p = both("directions", NULL);
    STAT_EQ(p.shim, "copies", 48);
    STAT_EQ(p.shim, "copies_h2d", 8);
    STAT_EQ(p.shim, "copies_d2d", 8);
    STAT_EQ(p.shim, "copies_d2h", 8);
    STAT_EQ(p.shim, "copies_h2h", 8);
    STAT_EQ(p.shim, "copies_unknown", 16);
    STAT_EQ(p.shim, "pass_zero", 8);
    STAT_EQ(p.shim, "pass_pageable", 8);
    STAT_EQ(p.shim, "pass_policy", 8); /* host to host: not deferred by default */
    /* the 0-byte copies between the device-to-host ones wait for nothing and left
     * that run whole: three runs of 7, 8 and 8, split where a copy reads what the
     * run before wrote, the last submitted before the first pageable copy */
    STAT_EQ(p.shim, "batches", 3);
    STAT_EQ(p.shim, "batch_max", 8);
    STAT_EQ(p.shim, "flush_hazard", 2);
    STAT_EQ(p.shim, "flush_passthrough", 1);
    pair_free(&p);
}
END_TEST

START_TEST(copies_over_the_size_limit_pass_through)
{
    /* four copies of 512 KiB: over a 256 KiB limit each passes through (still
     * counted by direction); at a limit of exactly 512 KiB they are deferred */
    const char *small[] = {"CUBATCH_MAX_COPY=256K", NULL};
    struct pair p = both("big", small);
    STAT_EQ(p.shim, "pass_size", 4);
    STAT_EQ(p.shim, "copies_d2h", 4);
    STAT_EQ(p.shim, "deferred", 0);
    STAT_EQ(p.shim, "batches", 0);
    ck_assert_int_eq(log_count(&p.shim, "cuMemcpyDtoHAsync_v2"), 4);
    pair_free(&p);
    const char *exact[] = {"CUBATCH_MAX_COPY=512K", NULL};
    p = both("big", exact);
    STAT_EQ(p.shim, "pass_size", 0);
    STAT_EQ(p.shim, "deferred", 3);
    STAT_EQ(p.shim, "batches", 1);
    pair_free(&p);
}
END_TEST

/* Classification asks the driver once per allocation, however many a copy
 * loop goes between (256 pinned buffers, one each: PyTorch's pinned tensors);
 * a loop over more than a thread keeps still gets every byte right. */
START_TEST(many_allocations_are_classified_once)
{
    struct pair p = both("many_pinned", NULL);
    ck_assert_int_eq(num_of(&p.plain, "pointer_queries_in_rounds_2_3: "), 0);
    ck_assert_int_eq(num_of(&p.shim, "pointer_queries_in_rounds_2_3: "), 0);
    STAT_GE(p.shim, "deferred", 3 * 255);
    STAT_EQ(p.shim, "pass_query", 0);
    pair_free(&p);
}
END_TEST

/* Rule 14: memory known from its allocation, never asked about per copy. */
START_TEST(memory_is_known_from_its_allocation)
{
    struct pair p = both("pinned_per_block", NULL);
    ck_assert_int_eq(num_of(&p.shim, "pointer_queries_in_loop: "), 0);
    STAT_GE(p.shim, "allocs_announced", 2048 + 2);
    STAT_EQ(p.shim, "class_queries", 0);
    STAT_GE(p.shim, "deferred", 2000);
    pair_free(&p);
}
END_TEST

/* Rule 14: a range is forgotten when its memory is given back. */
enum { N_COPIES_PER_PASS = 64 }; /* probe.c: N */
START_TEST(unregistered_memory_is_pageable_again)
{
    struct pair p = both("unregister_forgets", NULL);
    /* the pageable pass's first copy goes out unexamined (rule 8) */
    STAT_EQ(p.shim, "pass_pageable", N_COPIES_PER_PASS - 1);
    STAT_GE(p.shim, "deferred", 2 * (N_COPIES_PER_PASS - 2));
    STAT_GE(p.shim, "allocs_announced", 2);
    pair_free(&p);
    /* the same while another thread's run is queued: no pageable copy passes
     * as a burst's first, and none is deferred on what was learned of the
     * memory before it was unregistered */
    p = both("unregister_known", NULL);
    STAT_EQ(p.shim, "pass_pageable", N_COPIES_PER_PASS);
    STAT_GE(p.shim, "deferred", 2 * (N_COPIES_PER_PASS - 2) + 1);
    pair_free(&p);
}
END_TEST

/* What a stream's earlier copies between two allocations learned does not
 * carry over: a copy that runs past the end of that device memory passes
 * through (rule 5 of the memory), and a new stream at a destroyed one's handle
 * gets its own run. */
START_TEST(what_earlier_copies_learned_does_not_carry_over)
{
    const char *const env[] = {"CUSIM_HANDLE_REUSE=1", NULL};
    struct pair p = both("known_edges", env);
    ck_assert_int_eq(num_of(&p.shim, "stream_handle_reused: "), 1);
    ck_assert_int_eq(num_of(&p.shim, "past_end_rc: "), num_of(&p.plain, "past_end_rc: "));
    STAT_EQ(p.shim, "pass_foreign", 1);
    STAT_GE(p.shim, "deferred", 2 * (N_COPIES_PER_PASS - 2));
    pair_free(&p);
}
END_TEST

START_TEST(single_copy_goes_out_as_itself)
{
    /* an isolated copy is the first of its burst: issued at once, as it came */
    struct pair p = both("single", NULL);
    STAT_EQ(p.shim, "pass_first", 1);
    STAT_EQ(p.shim, "deferred", 0);
    STAT_EQ(p.shim, "batches", 0);
    ck_assert_int_eq(log_count(&p.shim, "cuMemcpyDtoHAsync_v2"), 1);
    pair_free(&p);
    /* rule 8: a run of one (the pair's second copy) goes out through its own entry */
    p = both("pair", NULL);
    STAT_EQ(p.shim, "deferred", 1);
    STAT_EQ(p.shim, "singles", 1);
    STAT_EQ(p.shim, "batches", 0);
    ck_assert_int_eq(log_count(&p.shim, "cuMemcpyDtoHAsync_v2"), 2);
    pair_free(&p);
}
END_TEST

/* the bands that kept host-to-device 8-28 KiB out when they lost as one batch */
static const char *const old_bands[] = {"CUBATCH_POLICY=h2d:0-8K,h2d:28K-max,d2h:0-max", NULL};

START_TEST(policy_keeps_slow_band_out)
{
    struct pair p = both("h2d_16k", old_bands);
    STAT_EQ(p.shim, "pass_policy", 16);
    STAT_EQ(p.shim, "batches", 0);
    pair_free(&p);
    p = both("h2d_16k", NULL); /* the default defers them (pipelined) */
    STAT_EQ(p.shim, "pass_policy", 0);
    STAT_EQ(p.shim, "batches", 1);
    pair_free(&p);
    p = both("h2d_4k", old_bands);
    STAT_EQ(p.shim, "deferred", 15);
    STAT_EQ(p.shim, "batches", 1);
    pair_free(&p);
    const char *all[] = {"CUBATCH_POLICY=all", NULL};
    p = both("h2d_16k", all);
    STAT_EQ(p.shim, "batches", 1);
    pair_free(&p);
}
END_TEST

START_TEST(policy_pass_through_keeps_the_run)
{
    struct pair p = both("interleave", old_bands);
    STAT_EQ(p.shim, "pass_policy", 17);
    STAT_EQ(p.shim, "deferred", 15 + 2); /* the first D2H copy went out at once */
    STAT_EQ(p.shim, "batches", 2);       /* the other 15 D2H copies stayed one run ... */
    STAT_EQ(p.shim, "batch_max", 15);
    STAT_EQ(p.shim, "flush_hazard", 1);  /* ... until the overwrite of what they read */
    STAT_EQ(p.shim, "flush_passthrough", 0);
    pair_free(&p);
}
END_TEST

START_TEST(slow_copies_pass_fast_ones_batch)
{
    /* virtual time: 40 us between the slow loop's copies, none in the fast one */
    const char *env[] = {"CUBATCH_SLOW_NS=10000", NULL};
    struct pair p = both("pace", env);
    /* the slow loop: its first copy goes out at once, the second waits for the
     * timer's look, which finds the pace (40 us a copy) and flushes it; the
     * other 62 pass through */
    STAT_EQ(p.shim, "flush_slow", 1);
    STAT_EQ(p.shim, "pass_slow", 62);
    /* the fast loop after the pause: its first copy at once, the rest one run */
    STAT_EQ(p.shim, "pass_first", 2);
    STAT_EQ(p.shim, "batch_max", 63);
    pair_free(&p);
}
END_TEST

START_TEST(managed_memory)
{
    struct pair p = both("managed", NULL);
    STAT_EQ(p.shim, "deferred", 127);
    pair_free(&p);
}
END_TEST

/* ---- rule 2: capture ---------------------------------------------------------------------- */

START_TEST(capture_flushes_then_passes_through)
{
    struct pair p = both("capture", NULL);
    ck_assert_int_eq(num_of(&p.shim, "batches_before_capture: "), 0); /* still queued */
    ck_assert_int_eq(num_of(&p.shim, "batches_in_capture: "), 1);     /* flushed at capture begin */
    STAT_EQ(p.shim, "pass_capture", 63); /* and the first of that burst, at once */
    STAT_EQ(p.shim, "pass_first", 3);     /* before, in and after the capture */
    LOG_BEFORE(p.shim, BATCH, "cuStreamBeginCapture_v2");
    ck_assert_msg(!strstr(p.shim.log, BATCH " rc=900"), "a batch was refused on a capturing stream");
    pair_free(&p);
}
END_TEST

/* ---- rule 3: legacy stream ---------------------------------------------------------------- */

START_TEST(legacy_work_follows_blocking_runs)
{
    struct pair p = both("legacy", NULL);
    STAT_GE(p.shim, "flush_legacy", 1);
    LOG_BEFORE(p.shim, BATCH, "cuMemcpyDtoHAsync_v2");
    pair_free(&p);
}
END_TEST

START_TEST(legacy_copies_never_batch)
{
    struct pair p = both("legacy_copies", NULL);
    STAT_EQ(p.shim, "pass_legacy", 64);
    ck_assert_int_eq(log_count(&p.shim, BATCH), 0);
    pair_free(&p);
}
END_TEST

/* ---- rule 4: per-thread default stream ---------------------------------------------------- */

START_TEST(ptds_own_thread)
{
    struct pair p = both("ptds_own", NULL);
    STAT_EQ(p.shim, "batches", 1);
    STAT_EQ(p.shim, "side_submits", 0);
    pair_free(&p);
}
END_TEST

START_TEST(ptds_other_thread_ctx_sync)
{
    struct pair p = both("ptds_ctxsync", NULL);
    STAT_EQ(p.shim, "deferred", 63);
    STAT_GE(p.shim, "side_submits", 1);
    pair_free(&p);
}
END_TEST

START_TEST(ptds_side_stream_waits_for_a_copy_passed_ahead)
{
    /* device-to-device copies pass by policy, ahead of the queued run; the
     * copies queued after it read what it wrote (wrong bytes if the side
     * stream waited only for the run's opening), with both engines */
    const char *const cfgs[][3] = {{"CUBATCH_POLICY=h2d:0-max,d2h:0-max", "CUBATCH_ENGINE=batch", NULL},
                                   {"CUBATCH_POLICY=h2d:0-max,d2h:0-max", "CUBATCH_ENGINE=kernel", NULL}};
    for (size_t i = 0; i < 2; i++) {
        struct pair p = both("ptds_pass_ahead", cfgs[i]);
        STAT_EQ(p.shim, "pass_policy", 1);
        STAT_GE(p.shim, "side_submits", 1);
        pair_free(&p);
    }
}
END_TEST

START_TEST(ptds_owner_copy_after_a_timer_side_submission)
{
    /* the timer submits the owner's run on the side stream; the owner's next
     * copy passes as a burst's first and overwrites what the run read: it must
     * wait for the side submission (the copy kernel's engine choice, so that
     * rule 12 tracks the per-thread stream's compute and queries it) */
    const char *const env[] = {"CUBATCH_ENGINE=auto", NULL};
    struct pair p = both("ptds_timer_pass", env);
    ck_assert_int_eq(num_of(&p.shim, "side_waits: "), 1);
    STAT_EQ(p.shim, "flush_timer", 1);
    STAT_GE(p.shim, "side_submits", 1);
    STAT_GE(p.shim, "load_queries", 1);
    pair_free(&p);
}
END_TEST

START_TEST(ptds_owner_copy_after_a_switch_off_by_another_thread)
{
    /* another thread's cubatch_set_enabled(0) submits the owner's run on the
     * side stream; the owner's next copy passes as cubatch is off and
     * overwrites what the run read: it must wait for the side submission
     * (the simulated driver runs the stream's own earlier work before what it
     * waits for, so a copy not ordered after the submission runs first) */
    const char *const env[] = {"CUSIM_DEP_ORDER=reverse", NULL};
    struct pair p = both("ptds_pause_pass", env);
    ck_assert_int_eq(num_of(&p.shim, "switched_off: "), 0);
    STAT_EQ(p.shim, "flush_api", 1);
    STAT_GE(p.shim, "side_submits", 1);
    STAT_EQ(p.shim, "pass_disabled", 1);
    pair_free(&p);
}
END_TEST

START_TEST(ptds_other_thread_legacy)
{
    struct pair p = both("ptds_legacy", NULL);
    STAT_GE(p.shim, "side_submits", 1);
    pair_free(&p);
}
END_TEST

/* ---- rule 5: hazards ------------------------------------------------------------------------- */

/* every direction and size (policy.c): the default already defers
 * device-to-device copies; this takes host-to-host ones too */
static const char *const d2d_too[] = {"CUBATCH_POLICY=all", NULL};

START_TEST(dependent_chain)
{
    struct pair p = both("chain", d2d_too);
    STAT_GE(p.shim, "flush_hazard", 2);
    STAT_EQ(p.shim, "batches", 3);
    pair_free(&p);
}
END_TEST

START_TEST(source_overwritten_later)
{
    struct pair p = both("overwrite", NULL);
    STAT_GE(p.shim, "flush_hazard", 2);
    pair_free(&p);
}
END_TEST

/* ---- rule 6: flush before observers ------------------------------------------------------------ */

START_TEST(query_observes)
{
    struct pair p = both("query", NULL);
    LOG_BEFORE(p.shim, BATCH, "cuStreamQuery");
    pair_free(&p);
}
END_TEST

START_TEST(event_observes)
{
    /* the record joins the run (rule 11); the wait on another stream submits it */
    struct pair p = both("event", NULL);
    STAT_EQ(p.shim, "markers", 1);
    LOG_BEFORE(p.shim, BATCH, "cuEventRecord");
    LOG_BEFORE(p.shim, BATCH, "cuStreamWaitEvent");
    pair_free(&p);
}
END_TEST

START_TEST(host_function_observes)
{
    struct pair p = both("hostfunc", NULL);
    ck_assert_int_eq(num_of(&p.shim, "hostfn_saw_copies: "), 1);
    LOG_BEFORE(p.shim, BATCH, "cuLaunchHostFunc");
    pair_free(&p);
}
END_TEST

/* Rule 17: what drivers newer than 13.0 added keeps its place among the
 * deferred copies (the simulated driver acting as 13.5). */
static const char *const driver_13_5[] = {"CUSIM_DRIVER_VERSION=13050", NULL};
/* The calls the report counts of a function no table names, -1 when absent. */
static long unknown_calls(const struct run *r, const char *name)
{
    const char *u = strstr(r->stats, "\"unknown_functions\":{");
    if (!u)
        return -1;
    struct run only = *r;
    only.stats = (char *)u;
    return stat_of(&only, name);
}
static const char *const driver_13_6[] = {"CUSIM_DRIVER_VERSION=13060", "CUBATCH_LOG=2", NULL};

START_TEST(newer_host_function_observes)
{
    struct pair p = both("newer_hostfunc", driver_13_5);
    ck_assert_int_eq(num_of(&p.shim, "hostfn_v2_saw_copies: "), 1);
    ck_assert_int_eq(num_of(&p.shim, "hostfn_v2_ptsz_saw_copies: "), 1);
    STAT_GE(p.shim, "deferred", 1);
    LOG_BEFORE(p.shim, BATCH, "cuLaunchHostFunc_v2");
    pair_free(&p);
}
END_TEST

START_TEST(newer_copy_with_attributes_keeps_its_place)
{
    struct pair p = both("newer_attr_copy", driver_13_5);
    STAT_GE(p.shim, "deferred", 1);
    STAT_EQ(p.shim, "cuMemcpyWithAttributesAsync", 2);
    LOG_BEFORE(p.shim, BATCH, "cuMemcpyWithAttributesAsync");
    pair_free(&p);
}
END_TEST

START_TEST(newer_captures_are_never_deferred_into)
{
    struct pair p = both("newer_recapture", driver_13_5);
    ck_assert_int_eq(num_of(&p.shim, "batches_in_recapture: "), 0);
    ck_assert_int_eq(num_of(&p.shim, "batches_in_cig_capture: "), 0);
    STAT_EQ(p.shim, "pass_capture", 2 * (N_COPIES_PER_PASS - 1)); /* all but each capture's first (rule 8) */
    pair_free(&p);
}
END_TEST

START_TEST(a_function_no_table_names_submits_the_runs)
{
    struct pair p = both("newer_future", driver_13_6);
    char saw[32];
    ck_assert_str_eq(line_of(&p.shim, "future_saw_copies: ", saw, sizeof saw), "1 1 1");
    STAT_GE(p.shim, "deferred", 1);
    ck_assert_int_eq(unknown_calls(&p.shim, "cuFutureLaunchHostFunc"), 2); /* by cuGetProcAddress and dlsym: one */
    ck_assert_int_eq(unknown_calls(&p.shim, "cuStreamSynchronize"), 1);    /* its 13.6 ABI, asked for at 13060 */
    STAT_GE(p.shim, "flush_unknown", 3);
    ck_assert_msg(strstr(p.shim.err, "is newer than the headers cubatch's tables were checked against (13050)") &&
                      strstr(p.shim.err, "cuFutureLaunchHostFunc: a driver function no table names"),
                  "the log says nothing of the newer driver or the unknown function:\n%s", p.shim.err);
    pair_free(&p);
}
END_TEST

START_TEST(an_older_driver_gets_nothing_new_wrapped)
{
    static const char *const driver_13_0[] = {"CUSIM_DRIVER_VERSION=13000", NULL};
    struct run old = probe("newer_wrapped", 1, driver_13_0), now = probe("newer_wrapped", 1, driver_13_5);
    char from[64];
    ck_assert_str_eq(line_of(&old, "host_func_v2_from: ", from, sizeof from), "libcuda.so.1");
    ck_assert_str_eq(line_of(&now, "host_func_v2_from: ", from, sizeof from), "libcubatch.so");
    ck_assert_msg(!strstr(old.stats, "\"unknown_functions\":{\"") && !strstr(now.stats, "\"unknown_functions\":{\""),
                  "no function may be taken as unknown:\n%s\n%s", old.stats, now.stats);
    run_free(&old);
    run_free(&now);
}
END_TEST

START_TEST(stream_destroy_and_reuse)
{
    struct pair p = both("destroy", NULL);
    STAT_GE(p.shim, "batches", 2);
    LOG_BEFORE(p.shim, BATCH, "cuStreamDestroy_v2");
    pair_free(&p);
}
END_TEST

START_TEST(free_flushes_and_forgets)
{
    struct pair p = both("free_realloc", NULL);
    LOG_BEFORE(p.shim, BATCH, "cuMemFree_v2"); /* the run of two went out before the free */
    pair_free(&p);
}
END_TEST

START_TEST(many_threads)
{
    struct pair p = both("threads", NULL);
    /* every copy deferred but the first of each burst (how many bursts the
     * threads' interleaving makes varies) */
    ck_assert_int_eq(stat_of(&p.shim, "deferred") + stat_of(&p.shim, "pass_first"), 8 * 64);
    STAT_GE(p.shim, "deferred", 8 * 64 - 16);
    pair_free(&p);
}
END_TEST

/* Threads on their own, shared and per-thread streams at once, with context-wide
 * flushes, legacy-stream work, API flushes, the timer and a fork going on: the
 * bytes are the plain run's (and under ThreadSanitizer in CI, no race).  Run a
 * few times: each run interleaves the threads differently. */
START_TEST(threads_on_streams_at_once)
{
    for (int i = 0; i < 6; i++) {
        struct pair p = both("stress", NULL);
        STAT_GE(p.shim, "deferred", 1);
        pair_free(&p);
    }
}
END_TEST

/* ---- rule 7: bounded runs ---------------------------------------------------------------- */

START_TEST(full_runs_are_chunked)
{
    const char *env[] = {"CUBATCH_MAX_BATCH=8", NULL};
    struct pair p = both("d2h_20", env);
    STAT_EQ(p.shim, "batches", 3); /* 8 + 8 at full, 4 at the sync */
    STAT_EQ(p.shim, "flush_full", 2);
    STAT_EQ(p.shim, "batch_max", 8);
    pair_free(&p);
}
END_TEST

START_TEST(long_runs_go_out_in_chunks)
{
    /* pipelining (on by default): device-to-host chunks of 64 copies */
    const char *env[] = {"CUBATCH_PIPELINE=1", NULL};
    struct pair p = both("long_loop", env);
    STAT_EQ(p.shim, "deferred", 999);
    STAT_EQ(p.shim, "flush_full", 15); /* 15 x 64, then 39 at the sync */
    STAT_EQ(p.shim, "batch_max", 64);
    STAT_EQ(p.shim, "batches", 16);
    /* no clock read per copy: one when the run opened, one at each reopening
     * after a chunk, none for the copies that joined */
    ck_assert_int_le(num_of(&p.shim, "clock_reads_in_loop: "), 16);
    pair_free(&p);
    /* switched off: one run, submitted at the sync */
    const char *off[] = {"CUBATCH_PIPELINE=0", "CUBATCH_MAX_BATCH=4096", NULL};
    p = both("long_loop", off);
    STAT_EQ(p.shim, "batches", 1);
    STAT_EQ(p.shim, "batch_max", 999);
    ck_assert_int_le(num_of(&p.shim, "clock_reads_in_loop: "), 1);
    pair_free(&p);
}
END_TEST

START_TEST(a_run_never_waits_past_the_age_bound)
{
    /* 3000 copies 1 us apart (virtual): never quiet, never slow; the run is
     * submitted when it is CUBATCH_MAX_WAIT_US (1000 us) old, twice */
    const char *env[] = {"CUBATCH_MAX_BATCH=32768", NULL};
    struct pair p = both("age", env);
    ck_assert_int_ge(num_of(&p.shim, "age_batches_before_sync: "), 2);
    STAT_GE(p.shim, "flush_timer", 2);
    STAT_EQ(p.shim, "flush_slow", 0);
    ck_assert_int_le(stat_of(&p.shim, "batch_max"), 1001);
    /* the look at the bound itself submits: were it to find copies joined and
     * leave the run, the next look would be due at once (the bound), again and
     * again, until one found none joined (31 looks instead of 12) */
    ck_assert_int_le(stat_of(&p.shim, "timer_looks"), 16);
    pair_free(&p);
}
END_TEST

START_TEST(cpu_work_does_not_hold_copies)
{
    struct pair p = both("timer", NULL);
    ck_assert_int_eq(num_of(&p.shim, "timer_batches: "), 1);
    STAT_EQ(p.shim, "flush_timer", 1);
    /* (virtual time) the first look, CUBATCH_FLUSH_US = 20 us after the run
     * opened, finds copies joined; the second, 20 us later, finds none */
    ck_assert_int_eq(num_of(&p.shim, "timer_virtual_us: "), 40);
    STAT_EQ(p.shim, "timer_looks", 2);
    pair_free(&p);
    /* a longer bound: the looks at 100 and 200 us */
    const char *env[] = {"CUBATCH_FLUSH_US=100", NULL};
    p = both("timer", env);
    ck_assert_int_eq(num_of(&p.shim, "timer_virtual_us: "), 200);
    pair_free(&p);
}
END_TEST

/* ---- rule 9: errors ------------------------------------------------------------------------ */

START_TEST(refused_batch_is_replayed)
{
    const char *env[] = {"CUSIM_FAIL=cuMemcpyBatchAsync_v2:1:1", NULL};
    struct pair p = both("errors", env);
    STAT_EQ(p.shim, "batch_errors", 1);
    STAT_EQ(p.shim, "replayed", 63);
    STAT_EQ(p.shim, "replay_errors", 0);
    pair_free(&p);
}
END_TEST

START_TEST(replayed_error_reaches_the_program)
{
    /* every batch refused, and the driver fails the third single copy with 700:
     * without cubatch the third call returns it; with it, the sync does */
    const char *env[] = {"CUSIM_FAIL=cuMemcpyBatchAsync_v2:0:1,cuMemcpyDtoHAsync_v2:3:700", NULL};
    struct pair p = both("errors", env);
    char buf[64];
    ck_assert_str_eq(line_of(&p.shim, "rc: first_error ", buf, sizeof buf), "700");
    STAT_EQ(p.shim, "replay_errors", 1);
    STAT_EQ(p.shim, "replayed", 63);
    pair_free(&p);
}
END_TEST

START_TEST(the_first_of_two_errors_is_reported)
{
    /* the third and the fourth copy fail, each with its own code: the program
     * sees the third's, with cubatch (the replay of the refused batch) as
     * without it */
    const char *env[] = {"CUSIM_FAIL=cuMemcpyBatchAsync_v2:0:1,cuMemcpyDtoHAsync_v2:3:700,cuMemcpyDtoHAsync_v2:4:1",
                         NULL};
    struct pair p = both("errors", env);
    char buf[64];
    ck_assert_str_eq(line_of(&p.shim, "rc: first_error ", buf, sizeof buf), "700");
    STAT_EQ(p.shim, "replay_errors", 2);
    pair_free(&p);
}
END_TEST

START_TEST(every_batch_error_is_replayed)
{
    /* each error the batch call can return, injected on every batch */
    const char *codes[] = {"1", "2", "3", "4", "201", "400", "700", "900", "999"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        char fail[96];
        snprintf(fail, sizeof fail, "CUSIM_FAIL=cuMemcpyBatchAsync_v2:0:%s", codes[i]);
        const char *env[] = {fail, NULL};
        struct pair p = both("basic", env);
        STAT_EQ(p.shim, "batch_errors", 2);
        STAT_EQ(p.shim, "replayed", 127);
        STAT_EQ(p.shim, "replay_errors", 0);
        pair_free(&p);
    }
}
END_TEST

/* Rule 9 for every reason to flush a run (the CB_FLUSH rows of src/stats.def):
 * the driver fails the program's second copy (with cubatch: the first deferred
 * one, replayed after every batch and launch is refused), and the run goes out
 * for that reason (tests/probe err_*).  The program sees the driver's error with
 * cubatch as without it, at the call that made cubatch flush, or, where nobody
 * was waiting, at the stream's next call. */
#define ERR_FAIL "CUSIM_FAIL=cuMemcpyBatchAsync_v2:0:1,cuLaunchKernel:0:1,cuMemcpyDtoHAsync_v2:2:700"
static const struct err_case {
    const char *why, *scenario, *at; /* the reason, its scenario, the call that must return the error */
    const char *env;                 /* what the scenario needs (NULL: nothing) */
} err_cases[] = {
    {"flush_stream", "err_stream", "trigger", NULL},
    {"flush_wait", "err_wait", "trigger", "CUBATCH_RIDE_WAITS=0"}, /* a wait for a complete event is not made (rule 16) */
    {"flush_event", "err_event", "trigger", NULL},
    {"flush_legacy", "err_legacy", "trigger", NULL},
    {"flush_context", "err_context", "trigger", NULL},
    {"flush_hazard", "err_hazard", "trigger", NULL},
    {"flush_full", "err_full", "copy8", "CUBATCH_MAX_BATCH=8"}, /* the copy that filled the run (it holds no records) */
    {"flush_passthrough", "err_passthrough", "trigger", NULL},
    {"flush_timer", "err_timer", "after", NULL},                 /* nobody waited: the next copy */
    {"flush_slow", "err_slow", "copy2", "CUBATCH_SLOW_NS=10000"}, /* nobody waited: the next copy */
    {"flush_exit", "err_fork", "after", NULL},                   /* fork: the parent's next copy */
    {"flush_api", "err_api", "trigger", NULL},
    {"flush_unknown", "err_unknown", "after", "CUSIM_DRIVER_VERSION=13060"}, /* nobody waited: the next copy */
};
enum { ERR_CASES = sizeof err_cases / sizeof err_cases[0] };

/* Every flush_* counter of the report is a case above: a new reason needs one. */
static void err_cases_cover(const struct run *r)
{
    for (const char *p = r->stats; (p = strstr(p, "\"flush_"));) {
        const char *end = strchr(p + 1, '"');
        ck_assert_ptr_nonnull(end);
        int found = 0;
        for (size_t i = 0; i < ERR_CASES; i++)
            found |= strlen(err_cases[i].why) == (size_t)(end - p - 1) && !strncmp(p + 1, err_cases[i].why, end - p - 1);
        ck_assert_msg(found, "no error case for the flush reason %.*s", (int)(end - p - 1), p + 1);
        p = end;
    }
}

/* Each case, with the rule tests' settings (NULL) or engine and pipeline given. */
static void every_reason_keeps_the_error(const char *engine, const char *pipeline)
{
    for (size_t i = 0; i < ERR_CASES; i++) {
        const struct err_case *c = &err_cases[i];
        const char *env[5] = {ERR_FAIL, engine, pipeline, NULL, NULL};
        const char **e = env + 1;
        while (*e)
            e++;
        *e = c->env;
        struct pair p = both(c->scenario, env);
        char plain[64], shim[64], at[64];
        line_of(&p.plain, "rc: first_error ", plain, sizeof plain);
        line_of(&p.shim, "rc: first_error ", shim, sizeof shim);
        ck_assert_msg(!strcmp(plain, "700") && !strcmp(shim, "700"), "%s: first error %s without cubatch, %s with it",
                      c->why, plain, shim);
        ck_assert_msg(!strcmp(line_of(&p.shim, "error_at: ", at, sizeof at), c->at),
                      "%s: the error came at %s, not at %s\n%s", c->why, at, c->at, p.shim.out);
        ck_assert_msg(stat_of(&p.shim, c->why) >= 1, "%s: no such flush\n%s", c->why, p.shim.stats);
        if (i == 0)
            err_cases_cover(&p.shim);
        pair_free(&p);
    }
}

START_TEST(every_flush_reason_reports_a_failed_copy) { every_reason_keeps_the_error(NULL, NULL); }
END_TEST

START_TEST(every_flush_reason_reports_a_failed_copy_by_default)
{
    every_reason_keeps_the_error("CUBATCH_ENGINE=auto", "CUBATCH_PIPELINE=1");
}
END_TEST

START_TEST(pointer_queries_failing_pass_through)
{
    const char *env[] = {"CUSIM_FAIL=cuPointerGetAttributes:0:1", NULL};
    struct pair p = both("basic", env);
    STAT_EQ(p.shim, "pass_query", 128);
    STAT_EQ(p.shim, "deferred", 0);
    pair_free(&p);
}
END_TEST

START_TEST(allocation_failure_passes_through)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* the shim's malloc bypasses the sanitizer's: meaningless there */
    return;
#endif
    /* Not through both(): the preload is this test's own.  Only under the tests'
     * engine: cubatch can allocate nothing, so it defers nothing and no engine
     * runs, whichever is configured. */
    const char *env[] = {"LD_PRELOAD=" LIBCUBATCH " " BUILDDIR "/tests/.libs/libfailalloc.so", NULL};
    const char *scenarios[] = {"basic", "ptds_ctxsync", "threads", "interleave"};
    for (size_t i = 0; i < 4; i++) {
        struct run plain = probe(scenarios[i], 0, NULL), shim = probe(scenarios[i], 0, env);
        ASSERT_OK(plain, "without cubatch");
        ASSERT_OK(shim, "cubatch unable to allocate");
        char *a = lines_with(&plain, "digest:"), *b = lines_with(&shim, "digest:");
        ck_assert_str_eq(a, b);
        /* cubatch could queue nothing: every copy went out as itself, each counted
         * (the report at exit cannot be written: the program's own stats line) */
        ck_assert_int_eq(log_count(&shim, BATCH), 0);
        ck_assert_int_gt(printed_stat_of(&shim, "copies"), 0);
        ck_assert_msg(printed_stat_of(&shim, "pass_nomem") == printed_stat_of(&shim, "copies"),
                      "%s: pass_nomem %ld of %ld copies\n%s", scenarios[i], printed_stat_of(&shim, "pass_nomem"),
                      printed_stat_of(&shim, "copies"), shim.out);
        ck_assert_int_eq(printed_stat_of(&shim, "deferred"), 0);
        free(a);
        free(b);
        run_free(&plain);
        run_free(&shim);
    }
}
END_TEST

START_TEST(context_reset_flushes_first)
{
    struct pair p = both("ctx_reset", NULL);
    STAT_EQ(p.shim, "batches", 2);
    ck_assert_int_eq(log_count(&p.shim, BATCH), 2);
    /* the second batch is logged before the reset */
    const char *last = strstr(p.shim.log, BATCH), *next;
    while ((next = strstr(last + 1, BATCH)))
        last = next;
    ck_assert_msg(last < strstr(p.shim.log, "cuDevicePrimaryCtxReset_v2"), "%s", p.shim.log);
    pair_free(&p);
}
END_TEST

START_TEST(context_event_observes)
{
    struct pair p = both("ctx_event", NULL);
    STAT_EQ(p.shim, "batches", 1);
    LOG_BEFORE(p.shim, BATCH, "cuCtxRecordEvent");
    pair_free(&p);
}
END_TEST

START_TEST(primary_release_forgets_only_what_goes)
{
    struct pair p = both("primary_release", NULL);
    /* a release that destroys nothing forgets nothing; destroying the primary
     * context keeps the other context's side stream */
    ck_assert_int_eq(num_of(&p.shim, "streams_after_release_of_a_live_primary: "), 0);
    ck_assert_int_eq(num_of(&p.shim, "streams_after_primary_destroyed: "), 0);
    STAT_EQ(p.shim, "side_submits", 5);
    pair_free(&p);
}
END_TEST

START_TEST(context_destroy_flushes_first)
{
    struct pair p = both("ctx_destroy", NULL);
    STAT_EQ(p.shim, "batches", 1);
    LOG_BEFORE(p.shim, BATCH, "cuCtxDestroy_v2");
    pair_free(&p);
}
END_TEST

/* ---- rule 10: process life ------------------------------------------------------------------ */

START_TEST(exit_flushes)
{
    struct pair p = both("exit", NULL);
    STAT_EQ(p.shim, "flush_exit", 1);
    ck_assert_int_eq(log_count(&p.shim, BATCH), 1);
    pair_free(&p);
}
END_TEST

/* A thread's last copies, made by a destructor that runs after cubatch's own
 * thread-exit cleanup: the same bytes, and batched like any others. */
START_TEST(copies_after_thread_cleanup)
{
    struct pair p = both("exit_destructor", NULL);
    STAT_GE(p.shim, "deferred", 3 * (2 * 64 - 2));
    pair_free(&p);
}
END_TEST

START_TEST(fork_flushes_and_child_starts_empty)
{
    struct pair p = both("fork", NULL);
    ck_assert_int_eq(num_of(&p.shim, "batches_at_fork: "), 1);
    char buf[64];
    ck_assert_str_eq(line_of(&p.shim, "child_flush: ", buf, sizeof buf), "0 0");
    pair_free(&p);
}
END_TEST

START_TEST(process_without_cuda_is_untouched)
{
    /* A program without CUDA: no engine is ever chosen, so no configuration but
     * the tests' own is run. */
    const char *env[] = {"CUBATCH_STATS=on", "CUBATCH_MAX_BATCH=nonsense", NULL};
    struct run plain = run_prog(NOCUDA, "x", 0, env), shim = run_prog(NOCUDA, "x", 1, env);
    ck_assert_int_eq(plain.status, 0);
    ck_assert_int_eq(shim.status, 0);
    ck_assert_str_eq(plain.out, shim.out);
    ck_assert_msg(shim.err[0] == 0, "stderr should be empty, got: %s", shim.err);
    ck_assert_msg(strstr(shim.out, "libcuda_loaded: 0"), "%s", shim.out);
    run_free(&plain);
    run_free(&shim);
    /* its report asked for (the Python module's stats()): still no driver */
    shim = run_prog(NOCUDA, "stats", 1, env);
    ck_assert_int_eq(shim.status, 0);
    ck_assert_msg(strstr(shim.out, "stats: batching false\nlibcuda_loaded: 0"), "%s", shim.out);
    run_free(&shim);
}
END_TEST


/* ---- rule 12: no copy waits behind compute it would not have waited for --------------- */

/* The default engine choice (the tests' own default is CUBATCH_ENGINE=batch). */
static const char *const automatic[] = {"CUBATCH_ENGINE=auto", NULL};
static const char *const automatic_all[] = {"CUBATCH_ENGINE=auto", "CUBATCH_POLICY=all", NULL};

START_TEST(host_copies_avoid_a_busy_gpu)
{
    /* a kernel filling every SM still runs on another stream: never the copy
     * kernel; as shipped, the measured choice takes them (its arms: batch API,
     * overlap flag, passing through) */
    const char *piped[] = {"CUBATCH_ENGINE=auto", "CUBATCH_PIPELINE=1", NULL};
    struct pair p = both("sm_busy", piped);
    STAT_EQ(p.shim, "kernel_launches", 0);
    STAT_EQ(p.shim, "launches_filling", 1);
    STAT_GE(p.shim, "choice_samples", 1);
    STAT_EQ(p.shim, "pass_busy", 0);
    pair_free(&p);
    /* the fixed rules (CUBATCH_MEASURE=0): the copy engines take them */
    const char *fixed[] = {"CUBATCH_ENGINE=auto", "CUBATCH_PIPELINE=1", "CUBATCH_MEASURE=0", NULL};
    p = both("sm_busy", fixed);
    STAT_EQ(p.shim, "kernel_launches", 0);
    STAT_GE(p.shim, "batches", 1);
    STAT_GE(p.shim, "load_copy_engines", 1);
    STAT_EQ(p.shim, "launches_filling", 1);
    /* once a submission found it busy, host-to-device copies pass through */
    STAT_EQ(p.shim, "pass_busy", 31);
    STAT_EQ(p.shim, "deferred", 96);
    /* asked once: found running, it is trusted to run on for 200 us, and no
     * (virtual) time passes in the scenario; the grid's size was known */
    STAT_EQ(p.shim, "load_queries", 1);
    STAT_EQ(p.shim, "launches_unsized", 0);
    pair_free(&p);
    /* on the legacy stream: the batch API on a fenced side stream */
    p = both("sm_busy_legacy", automatic);
    STAT_EQ(p.shim, "kernel_launches", 0);
    STAT_GE(p.shim, "legacy_side_runs", 1);
    STAT_EQ(p.shim, "pass_legacy", 0);
    pair_free(&p);
    /* CUBATCH_ENGINE=kernel is told to take them anyway */
    const char *forced[] = {"CUBATCH_ENGINE=kernel", NULL};
    p = both("sm_busy", forced);
    STAT_GE(p.shim, "kernel_launches", 1);
    STAT_EQ(p.shim, "load_checks", 0);
    pair_free(&p);
}
END_TEST

/* The arm the measured choice settled on for a class of copies, from the JSON
 * report ("" when the class is not in it). */
static const char *chosen_for(const struct run *r, const char *cls, char *buf, size_t len)
{
    char key[160];
    snprintf(key, sizeof key, "{\"class\": \"%s\", ", cls);
    const char *c = strstr(r->out, key), *ch = c ? strstr(c, "\"chosen\": \"") : NULL;
    buf[0] = 0;
    if (ch) {
        ch += strlen("\"chosen\": \"");
        size_t n = strcspn(ch, "\"");
        snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), ch);
    }
    return buf;
}

/* Section 5, the measured choice: beside a kernel filling the GPU, each class of
 * host copies goes to the arm that completed its segments fastest, as the
 * simulated driver's clock (CUSIM_COST) says they took. */
START_TEST(measured_choice_takes_the_cheapest_arm)
{
    char a[32], b[32];
    /* batches cheaper than copies one by one: batched */
    const char *batch_wins[] = {"CUBATCH_ENGINE=auto", "CUSIM_COST=copy=2000,batch=4000,entry=500", NULL};
    struct pair p = both("measured", batch_wins);
    ck_assert_msg(stat_of(&p.shim, "pass_chosen") * 6 < stat_of(&p.shim, "copies_h2d"), "pass_chosen = %ld of %ld",
                  stat_of(&p.shim, "pass_chosen"), stat_of(&p.shim, "copies_h2d"));
    ck_assert_str_ne(chosen_for(&p.shim, "h2d <=4K busy few-allocations long", a, sizeof a), "pass");
    ck_assert_str_ne(chosen_for(&p.shim, "h2d <=4K busy few-allocations long", a, sizeof a), "");
    STAT_EQ(p.shim, "kernel_launches", 0);
    STAT_GE(p.shim, "choice_probes", 1); /* the losing arm is tried again now and then */
    pair_free(&p);
    /* a batch dearer than the copies it carries: passed through */
    const char *pass_wins[] = {"CUBATCH_ENGINE=auto", "CUSIM_COST=copy=1000,batch=20000,entry=2000", NULL};
    p = both("measured", pass_wins);
    ck_assert_msg(stat_of(&p.shim, "pass_chosen") * 10 > stat_of(&p.shim, "copies") * 7, "pass_chosen = %ld of %ld",
                  stat_of(&p.shim, "pass_chosen"), stat_of(&p.shim, "copies"));
    ck_assert_str_eq(chosen_for(&p.shim, "h2d <=4K busy few-allocations long", a, sizeof a), "pass");
    ck_assert_str_eq(chosen_for(&p.shim, "d2h <=4K busy few-allocations long", a, sizeof a), "pass");
    pair_free(&p);
    /* batches that slow down with every allocation they touch: per class */
    const char *per_class[] = {"CUBATCH_ENGINE=auto", "CUSIM_COST=copy=1500,batch=2000,entry=500,alloc=3000", NULL};
    p = both("measured", per_class);
    ck_assert_str_eq(chosen_for(&p.shim, "h2d <=4K busy many-allocations long", a, sizeof a), "pass");
    /* the stream of a pinned allocation per block (half the uploads) keeps
     * passing: its copies' allocations are counted when they pass by a
     * spell too (notes.h), so its segments stay in their class */
    ck_assert_msg(stat_of(&p.shim, "pass_chosen") * 10 > stat_of(&p.shim, "copies_h2d") * 4, "pass_chosen = %ld of %ld",
                  stat_of(&p.shim, "pass_chosen"), stat_of(&p.shim, "copies_h2d"));
    chosen_for(&p.shim, "h2d <=4K busy few-allocations long", b, sizeof b);
    ck_assert_msg(!strcmp(b, "batch") || !strcmp(b, "overlap"), "one buffer: %s", b);
    pair_free(&p);
    /* batch calls dear after the program's own work and cheap right after
     * another: the burst is held to its end and goes out in calls back to back
     * (pipelining on, as shipped: the batch arm's chunks each come cold) */
    const char *cold[] = {"CUBATCH_ENGINE=auto", "CUBATCH_PIPELINE=1", "CUSIM_COST=copy=4000,batch=2000,entry=300,cold=3000",
                          NULL};
    p = both("measured_cold", cold);
    ck_assert_str_eq(chosen_for(&p.shim, "h2d <=4K busy few-allocations long", a, sizeof a), "held");
    /* a whole burst each: never more held segments than bursts (48), and most of them */
    ck_assert_msg(stat_of(&p.shim, "choice_held") <= 48 && stat_of(&p.shim, "choice_held") >= 30, "choice_held = %ld",
                  stat_of(&p.shim, "choice_held"));
    ck_assert_msg(stat_of(&p.shim, "batched_copies") * 10 > stat_of(&p.shim, "copies_h2d") * 7, "batched %ld of %ld",
                  stat_of(&p.shim, "batched_copies"), stat_of(&p.shim, "copies_h2d"));
    pair_free(&p);
    /* held runs carry the program's records (rule 11): merged, answered, the
     * bytes right when the last record completes (the scenario checks them) */
    p = both("held_records", cold);
    STAT_GE(p.shim, "choice_held", 20);
    STAT_GE(p.shim, "merged_records", 20);
    pair_free(&p);
    /* before any sample came back, the segments go to the batch API (the pass
     * arm's own first sample aside): docs/design.md, section 5, says why */
    p = both("measured_unsampled", automatic);
    STAT_GE(p.shim, "batched_copies", 12 * 31);
    ck_assert_msg(stat_of(&p.shim, "pass_chosen") <= 31, "pass_chosen = %ld\n%s", stat_of(&p.shim, "pass_chosen"),
                  p.shim.stats);
    pair_free(&p);
    /* switched off: the fixed rules, nothing timed */
    const char *off[] = {"CUBATCH_ENGINE=auto", "CUBATCH_MEASURE=0", "CUSIM_COST=copy=1000,batch=20000,entry=2000", NULL};
    p = both("measured", off);
    STAT_EQ(p.shim, "choice_samples", 0);
    STAT_EQ(p.shim, "pass_chosen", 0);
    STAT_GE(p.shim, "pass_busy", 1);
    ck_assert_msg(!strstr(p.shim.out, "\"choices\":[{"), "no choice made");
    pair_free(&p);
}
END_TEST

START_TEST(finished_compute_lets_the_kernel_take_them)
{
    /* finished: a synchronize, an event that completed, a query that answered done */
    const char *const scen[] = {"sm_idle_sync", "sm_idle_event", "sm_idle_query", NULL};
    for (int i = 0; scen[i]; i++) {
        struct pair p = both(scen[i], automatic);
        STAT_GE(p.shim, "kernel_launches", 1);
        STAT_GE(p.shim, "load_checks", 1);
        STAT_EQ(p.shim, "load_copy_engines", 0);
        STAT_EQ(p.shim, "batches", 0);
        /* cubatch does not learn from the program's own calls: it asks the stream
         * once, finds it idle and forgets it (the second run's check asks nobody) */
        STAT_EQ(p.shim, "load_queries", 1);
        pair_free(&p);
    }
}
END_TEST

/* A verdict on the GPU's load answers the copies' later questions without a
 * lock or a clock, but is asked again once a launch may have changed it
 * (sm_busy_later: the second run, beside a filling kernel, keeps off the copy
 * kernel) and after a bounded number of copies (sm_busy_ends: the compute ends
 * after two queries, and the copies that passed through batch again;
 * sm_busy_turns: the same when no copy takes the answers for a spell). */
START_TEST(a_load_verdict_is_asked_again)
{
    struct pair p = both("sm_busy_later", automatic);
    STAT_EQ(p.shim, "kernel_launches", 1); /* the first run's */
    STAT_GE(p.shim, "batches", 1);
    pair_free(&p);
    const char *fixed[] = {"CUBATCH_ENGINE=auto", "CUBATCH_MEASURE=0", NULL};
    p = both("sm_busy_ends", fixed);
    STAT_GE(p.shim, "pass_busy", 32);
    ck_assert_msg(stat_of(&p.shim, "pass_busy") <= 96, "pass_busy = %ld: the verdict was not asked again\n%s",
                  stat_of(&p.shim, "pass_busy"), p.shim.stats);
    STAT_EQ(p.shim, "load_queries", 3); /* found running twice, then finished */
    STAT_GE(p.shim, "kernel_launches", 1);
    pair_free(&p);
    /* uploads asking with a download queued take no spell: the answers they
     * use up are counted all the same (as shipped, then the fixed rules) */
    p = both("sm_busy_turns", automatic);
    pair_free(&p);
    const char *piped[] = {"CUBATCH_ENGINE=auto", "CUBATCH_MEASURE=0", "CUBATCH_PIPELINE=1", NULL};
    p = both("sm_busy_turns", piped);
    STAT_EQ(p.shim, "load_queries", 3); /* found running twice, then finished */
    STAT_GE(p.shim, "kernel_launches", 1);
    ck_assert_msg(stat_of(&p.shim, "pass_busy") < 100, "pass_busy = %ld: the verdict was not asked again\n%s",
                  stat_of(&p.shim, "pass_busy"), p.shim.stats);
    pair_free(&p);
}
END_TEST

/* Pass spells (notes.h): uploads beside busy compute pass without the run's
 * lock once one passed, but never ahead of a copy queued on their stream, nor
 * past a call naming it. */
START_TEST(a_pass_spell_follows_what_its_stream_queued)
{
    const char *fixed[] = {"CUBATCH_ENGINE=auto", "CUBATCH_PIPELINE=1", "CUBATCH_MEASURE=0", NULL};
    const char *shipped[] = {"CUBATCH_ENGINE=auto", "CUBATCH_PIPELINE=1", NULL};
    /* the download queued by this thread, then by another one, while this one
     * holds a spell */
    const char *const scenarios[] = {"spell_queued", "spell_thread"};
    struct pair p;
    for (int i = 0; i < 2; i++) {
        p = both(scenarios[i], fixed);
        STAT_GE(p.shim, "pass_spelled", 16);
        /* the download is no upload: queued while the spell held, it goes out
         * before the upload that reads what it writes */
        STAT_GE(p.shim, "flush_hazard", 1);
        /* spell_queued's query named the stream: the spell ended with the
         * burst, and the next upload begins a new one */
        if (i == 0)
            STAT_EQ(p.shim, "pass_first", 2);
        pair_free(&p);
        p = both(scenarios[i], shipped);
        pair_free(&p);
    }
    /* a call naming the stream ends the spell as it ends the burst (rule 8):
     * the round after the query begins a new burst, and its second upload
     * asks the verdict again (load_queries), finds the compute done, and the
     * round's rest is deferred (to the copy kernel) instead of passing on
     * the spell the second round began */
    p = both("spell_named", fixed);
    STAT_EQ(p.shim, "pass_first", 3);
    STAT_EQ(p.shim, "pass_busy", 7);
    STAT_EQ(p.shim, "pass_spelled", 6);
    STAT_EQ(p.shim, "deferred", 14);
    STAT_EQ(p.shim, "load_queries", 2);
    STAT_GE(p.shim, "kernel_launches", 1);
    pair_free(&p);
    p = both("spell_named", shipped);
    pair_free(&p);
    /* the measured choice passing its segments: nearly all by spells, and what
     * it measures is the same (measured_choice_takes_the_cheapest_arm) */
    const char *pass_wins[] = {"CUBATCH_ENGINE=auto", "CUSIM_COST=copy=1000,batch=20000,entry=2000", NULL};
    p = both("measured", pass_wins);
    ck_assert_msg(stat_of(&p.shim, "pass_spelled") * 10 > stat_of(&p.shim, "pass_chosen") * 8,
                  "pass_spelled = %ld of %ld", stat_of(&p.shim, "pass_spelled"), stat_of(&p.shim, "pass_chosen"));
    pair_free(&p);
}
END_TEST

START_TEST(compute_that_leaves_room_or_would_be_waited_for)
{
    /* a grid that leaves SMs free is not counted, and nothing is asked */
    struct pair p = both("sm_room", automatic);
    STAT_EQ(p.shim, "launches_filling", 0);
    STAT_EQ(p.shim, "load_queries", 0);
    STAT_GE(p.shim, "kernel_launches", 1);
    pair_free(&p);
    /* the same grid when the occupancy calculator fails: its size is unknown, so it
     * counts as filling, and the copies keep off the copy kernel while it runs */
    const char *no_occupancy[] = {"CUBATCH_ENGINE=auto", "CUSIM_FAIL=cuOccupancyMaxActiveBlocksPerMultiprocessor:0:1",
                                  "CUBATCH_MEASURE=0", NULL};
    p = both("sm_room", no_occupancy);
    STAT_EQ(p.shim, "launches_unsized", 1);
    STAT_EQ(p.shim, "launches_filling", 1);
    STAT_EQ(p.shim, "load_queries", 1);
    STAT_GE(p.shim, "load_copy_engines", 1);
    STAT_EQ(p.shim, "kernel_launches", 0);
    pair_free(&p);
    /* fewer blocks than SMs cannot fill the GPU, whatever the occupancy: not
     * counted even when the calculator fails (the launch is let go before it
     * is asked) */
    p = both("sm_few", no_occupancy);
    STAT_EQ(p.shim, "launches_unsized", 0);
    STAT_EQ(p.shim, "launches_filling", 0);
    STAT_EQ(p.shim, "load_queries", 0);
    STAT_GE(p.shim, "kernel_launches", 1);
    pair_free(&p);
    /* a graph launch: its size is never known */
    p = both("marker_graph_launch", automatic);
    STAT_EQ(p.shim, "launches_unsized", 1);
    STAT_EQ(p.shim, "launches_filling", 1);
    pair_free(&p);
    /* device-to-device copies are SM work for the driver too: the kernel keeps them */
    p = both("sm_busy_d2d", automatic_all);
    STAT_GE(p.shim, "kernel_launches", 1);
    pair_free(&p);
    /* a destroyed stream is never asked about (the real driver may crash) */
    p = both("sm_destroyed", automatic);
    ck_assert_int_eq(log_count(&p.shim, "cuStreamQuery"), 0);
    STAT_EQ(p.shim, "load_queries", 0);
    STAT_GE(p.shim, "kernel_launches", 1);
    pair_free(&p);
    /* compute on the legacy stream: a blocking stream's copies wait for it anyway */
    p = both("sm_legacy_compute", automatic);
    STAT_GE(p.shim, "kernel_launches", 1);
    STAT_EQ(p.shim, "load_copy_engines", 0);
    STAT_EQ(p.shim, "load_queries", 0); /* not even asked */
    pair_free(&p);
}
END_TEST

/* ---- the copy-kernel engine ------------------------------------------------------------ */

#define LAUNCH "cuLaunchKernel"
static const char *const kernel_engine[] = {"CUBATCH_ENGINE=kernel", NULL};

START_TEST(kernel_runs_the_runs)
{
    struct pair p = both("basic", kernel_engine);
    STAT_EQ(p.shim, "deferred", 127);
    STAT_EQ(p.shim, "kernel_copies", 127);
    STAT_EQ(p.shim, "kernel_launches", 2); /* split where the D2H copies read the H2D ones */
    STAT_EQ(p.shim, "batches", 0);
    LOG_BEFORE(p.shim, LAUNCH, "cuStreamSynchronize");
    pair_free(&p);
    /* the default (auto) takes them too */
    const char *autom[] = {"CUBATCH_ENGINE=auto", NULL};
    p = both("basic", autom);
    STAT_EQ(p.shim, "kernel_copies", 127);
    pair_free(&p);
}
END_TEST

START_TEST(kernel_keeps_every_rule)
{
    /* hazards (the simulated kernel runs its copies in reverse order) and the
     * observers, as with the batch API */
    const char *const scen[] = {"chain", "overwrite", "interleave", "query", "event", "hostfunc", "ctx_event",
                                "free_realloc", "destroy", "managed", "ptds_own", "ptds_ctxsync", "ptds_legacy",
                                "threads", "fork", "exit", "ctx_destroy", "ctx_reset", "primary_release", NULL};
    const char *env[] = {"CUBATCH_ENGINE=kernel", "CUBATCH_POLICY=all", NULL};
    long launches = 0;
    for (int i = 0; scen[i]; i++) {
        struct pair p = both(scen[i], env);
        launches += stat_of(&p.shim, "kernel_launches");
        pair_free(&p);
    }
    ck_assert_int_ge(launches, 20);
    struct pair p = both("query", kernel_engine);
    LOG_BEFORE(p.shim, LAUNCH, "cuStreamQuery");
    pair_free(&p);
    p = both("hostfunc", kernel_engine);
    LOG_BEFORE(p.shim, LAUNCH, "cuLaunchHostFunc");
    pair_free(&p);
}
END_TEST

START_TEST(kernel_batches_the_legacy_stream)
{
    struct pair p = both("legacy_copies", kernel_engine);
    STAT_EQ(p.shim, "pass_legacy", 0);
    STAT_EQ(p.shim, "deferred", 63); /* the first of the burst went out at once */
    STAT_GE(p.shim, "legacy_runs", 1);
    ck_assert_msg(strstr(p.shim.log, LAUNCH " rc=0 stream=0x1 "), "no launch on the legacy stream:\n%s", p.shim.log);
    pair_free(&p);
    /* the batch API engine leaves it alone */
    const char *batch[] = {"CUBATCH_ENGINE=batch", NULL};
    p = both("legacy_copies", batch);
    STAT_EQ(p.shim, "pass_legacy", 64);
    STAT_EQ(p.shim, "legacy_runs", 0);
    pair_free(&p);
}
END_TEST

START_TEST(legacy_runs_keep_their_context)
{
    /* one thread, two contexts: a legacy run is keyed by the context current
     * at the copy (asked after the lone-copy note, which any context's may
     * answer); keyed by another, its copies would run in the wrong context */
    struct pair p = both("legacy_two_contexts", kernel_engine);
    STAT_EQ(p.shim, "pass_legacy", 0);
    STAT_GE(p.shim, "legacy_runs", 8); /* each context's bursts, in its own runs */
    /* passed first: the first lone copy; each of the 8 bursts' first copy; and
     * the second copy of the first burst in the created context, whose first
     * passed on the primary context's note (the only one the thread had) */
    STAT_EQ(p.shim, "pass_first", 1 + 8 + 1);
    STAT_EQ(p.shim, "deferred", 8 * 2 * 64 + 8 - 10);
    pair_free(&p);
}
END_TEST

START_TEST(legacy_runs_go_before_blocking_work)
{
    /* rule 3 both ways: blocking runs before legacy work (legacy), and legacy
     * runs before blocking work (legacy_then_blocking: wrong bytes otherwise) */
    struct pair p = both("legacy_then_blocking", kernel_engine);
    STAT_GE(p.shim, "legacy_runs", 1);
    STAT_GE(p.shim, "flush_legacy", 1);
    pair_free(&p);
    p = both("legacy", kernel_engine);
    LOG_BEFORE(p.shim, LAUNCH, "cuMemcpyDtoHAsync_v2");
    pair_free(&p);
}
END_TEST

START_TEST(capture_begins_after_legacy_runs)
{
    struct pair p = both("capture_legacy", kernel_engine);
    char buf[32];
    ck_assert_str_eq(line_of(&p.shim, "rc: end_capture ", buf, sizeof buf), "0");
    STAT_GE(p.shim, "legacy_runs", 1);
    LOG_BEFORE(p.shim, LAUNCH, "cuStreamBeginCapture_v2");
    pair_free(&p);
}
END_TEST

START_TEST(nothing_deferred_on_legacy_while_capturing)
{
    /* the first legacy copy after the capture begins fails and invalidates the
     * capture (an implicit dependency on it), even with a legacy run open
     * before: deferred, it would succeed and the capture stay valid */
    struct pair p = both("legacy_during_capture", kernel_engine);
    char buf[64];
    ck_assert_str_eq(line_of(&p.shim, "rc: legacy copies during capture ", buf, sizeof buf), "ok=63 implicit=1 other=0");
    ck_assert_str_eq(line_of(&p.shim, "rc: end_capture ", buf, sizeof buf), "901");
    STAT_GE(p.shim, "legacy_runs", 1); /* the burst before the capture */
    STAT_EQ(p.shim, "pass_legacy", 64);
    pair_free(&p);
}
END_TEST

START_TEST(kernel_only_where_it_may_touch_the_memory)
{
    /* registered memory whose device address is not its host address: the
     * batch API takes it; where they are the same, the kernel does */
    const char *alias[] = {"CUBATCH_ENGINE=kernel", "CUSIM_REGISTERED_ALIAS=1", NULL};
    struct pair p = both("registered", alias);
    STAT_EQ(p.shim, "kernel_launches", 0);
    STAT_EQ(p.shim, "batches", 1);
    pair_free(&p);
    p = both("registered", kernel_engine);
    STAT_EQ(p.shim, "kernel_launches", 1);
    pair_free(&p);
    /* auto: copies over 256 KiB go to the batch API; kernel: to the kernel */
    const char *autom[] = {"CUBATCH_ENGINE=auto", NULL};
    p = both("big", autom);
    STAT_EQ(p.shim, "kernel_launches", 0);
    STAT_EQ(p.shim, "batches", 1);
    pair_free(&p);
    p = both("big", kernel_engine);
    STAT_EQ(p.shim, "kernel_launches", 1);
    pair_free(&p);
}
END_TEST

START_TEST(refused_launch_is_replayed)
{
    const char *env[] = {"CUBATCH_ENGINE=kernel", "CUSIM_FAIL=cuLaunchKernel:1:1", NULL};
    struct pair p = both("basic", env);
    STAT_EQ(p.shim, "batch_errors", 1);
    STAT_GE(p.shim, "replayed", 63);
    STAT_EQ(p.shim, "replay_errors", 0);
    pair_free(&p);
}
END_TEST

START_TEST(kernel_chunks_grow)
{
    /* pipelining with the kernel: launches at 32, then 128, 512 copies */
    const char *env[] = {"CUBATCH_ENGINE=kernel", "CUBATCH_PIPELINE=1", NULL};
    struct pair p = both("long_loop", env);
    STAT_EQ(p.shim, "deferred", 999);
    STAT_EQ(p.shim, "flush_full", 3); /* 32 + 128 + 512, then 327 at the sync */
    STAT_EQ(p.shim, "batch_max", 512);
    STAT_EQ(p.shim, "kernel_launches", 4);
    pair_free(&p);
}
END_TEST

/* ---- rule 11: event records as markers ------------------------------------------------------ */

/* 64 copies, each followed by a record of its own event: one run, the records
 * in it as markers, none reaching the driver before the observer but the one
 * after the burst's first copy (probe.c, marker_setup) */
static void assert_markers(const struct pair *p, long records)
{
    STAT_EQ(p->shim, "markers", records);
    STAT_EQ(p->shim, "deferred", 63);
    STAT_EQ(p->shim, "batches", 1);
    ck_assert_int_le(num_of(&p->shim, "records_reaching_the_driver_before_the_observer: "), records == 126 ? 2 : 1);
}

START_TEST(records_join_the_run)
{
    struct pair p = both("marker_sync", NULL);
    assert_markers(&p, 63);
    LOG_BEFORE(p.shim, BATCH, "cuEventSynchronize");
    STAT_EQ(p.shim, "flush_event", 1);
    ck_assert_msg(strstr(p.shim.stats, "\"runs_ended_by\":{\"cuEventSynchronize\":1}"), "%s", p.shim.stats);
    pair_free(&p);
    p = both("marker_two", NULL); /* two records a copy */
    assert_markers(&p, 126);
    pair_free(&p);
    p = both("marker_sync", kernel_engine);
    STAT_EQ(p.shim, "markers", 63);
    STAT_EQ(p.shim, "kernel_launches", 1);
    pair_free(&p);
    /* a full chunk waits for the stream's next copy (rule 7): the record made
     * after the copy that filled it rides too */
    const char *chunks[] = {"CUBATCH_MAX_BATCH=16", NULL};
    p = both("marker_sync", chunks);
    STAT_EQ(p.shim, "markers", 63);
    STAT_GE(p.shim, "flush_full", 3);
    pair_free(&p);
}
END_TEST

/* Each observer submits the run holding the event's record: without it the
 * simulated driver runs nothing the host then reads (wrong bytes), or a later
 * record fails (return codes differ). */
START_TEST(every_observer_submits_the_marker)
{
    const char *const scen[] = {"marker_query", "marker_elapsed_end", "marker_elapsed_start", "marker_wait",
                                "marker_destroy", "marker_rerecord", NULL};
    for (int i = 0; scen[i]; i++) {
        struct pair p = both(scen[i], NULL);
        STAT_GE(p.shim, "markers", 63);
        STAT_EQ(p.shim, "batches", 1);
        pair_free(&p);
    }
    /* calls the simulated driver does not execute: the log shows the order */
    const char *const logged[][2] = {{"marker_ipc", "cuIpcGetEventHandle"},
                                     {"marker_graph_node", "cuGraphAddEventRecordNode"},
                                     {"marker_launch_config", "cuLaunchKernelEx"},
                                     {"marker_graph_launch", "cuGraphLaunch"}};
    for (size_t i = 0; i < sizeof logged / sizeof logged[0]; i++) {
        struct pair p = both(logged[i][0], NULL);
        STAT_EQ(p.shim, "markers", 63);
        LOG_BEFORE(p.shim, BATCH, logged[i][1]);
        STAT_EQ(p.shim, "flush_event", 1);
        pair_free(&p);
    }
}
END_TEST

START_TEST(markers_of_other_threads_and_the_legacy_stream)
{
    /* another thread's per-thread stream: through the side stream */
    struct pair p = both("marker_ptds", NULL);
    STAT_EQ(p.shim, "markers", 63);
    STAT_EQ(p.shim, "side_submits", 1);
    pair_free(&p);
    /* the legacy stream's run (copy kernel only) */
    p = both("marker_legacy", kernel_engine);
    STAT_EQ(p.shim, "markers", 63);
    STAT_GE(p.shim, "legacy_runs", 1);
    pair_free(&p);
    /* the timer submits the markers with the copies: one record for the 63
     * markers of timing-free events (rule 15), or each its own */
    p = both("marker_timer", NULL);
    ck_assert_int_eq(num_of(&p.shim, "records_after_cpu_work: "), 2);
    STAT_EQ(p.shim, "merged_records", 1);
    STAT_EQ(p.shim, "flush_timer", 1);
    pair_free(&p);
    const char *unmerged[] = {"CUBATCH_MERGE_RECORDS=0", NULL};
    p = both("marker_timer", unmerged);
    ck_assert_int_eq(num_of(&p.shim, "records_after_cpu_work: "), 64);
    STAT_EQ(p.shim, "merged_records", 0);
    pair_free(&p);
}
END_TEST

/* Rule 15: one record answers for a run's markers of timing-free events.  The
 * second call names an event the driver never saw recorded: answered from the
 * stand-in, or the event recorded after it, the bytes and return codes are the
 * plain program's (probe.c, merged_setup). */
START_TEST(one_record_answers_for_a_runs_timing_free_events)
{
    const char *const answered[] = {"merged_sync", "merged_query", "merged_wait", "merged_rerecord",
                                    "merged_destroy", "merged_graph_launch", NULL};
    for (int i = 0; answered[i]; i++) {
        struct pair p = both(answered[i], NULL);
        STAT_EQ(p.shim, "markers", 63);
        STAT_EQ(p.shim, "markers_merged", 63);
        STAT_EQ(p.shim, "merged_records", 1);
        STAT_EQ(p.shim, "merged_late", 0);
        /* the record after the first copy, the stand-in's, and any the scenario made itself */
        ck_assert_int_le(num_of(&p.shim, "records_in_all: "), num_of(&p.plain, "records_in_all: ") - 61);
        pair_free(&p);
    }
    /* a graph launch settles every merged event first: the stand-in found complete */
    struct pair p = both("merged_graph_launch", NULL);
    LOG_BEFORE(p.shim, "cuEventQuery", "cuGraphLaunch");
    pair_free(&p);
    const struct { const char *scenario; long late; } recorded[] = {
        {"merged_graph_node", 1}, {"merged_elapsed", 2}, {"merged_capture_wait", 1}};
    for (size_t i = 0; i < sizeof recorded / sizeof recorded[0]; i++) {
        p = both(recorded[i].scenario, NULL);
        STAT_EQ(p.shim, "merged_records", 1);
        STAT_EQ(p.shim, "merged_late", recorded[i].late);
        pair_free(&p);
    }
    /* a launch whose completion event is a merged one, with nothing queued or
     * pending: the event stands for the launch from then on (found running, as
     * without cubatch), not for the run's complete stand-in */
    p = both("merged_launch_ex", NULL);
    STAT_EQ(p.shim, "merged_records", 1);
    ck_assert_int_eq(num_of(&p.plain, "launch_ex_query: "), 600); /* CUDA_ERROR_NOT_READY */
    ck_assert_int_eq(num_of(&p.shim, "launch_ex_query: "), 600);
    pair_free(&p);
    const char *unmerged[] = {"CUBATCH_MERGE_RECORDS=0", NULL};
    p = both("merged_sync", unmerged);
    STAT_EQ(p.shim, "markers", 63);
    STAT_EQ(p.shim, "merged_records", 0);
    ck_assert_int_eq(num_of(&p.shim, "records_in_all: "), 64);
    pair_free(&p);
    /* events that keep timing keep their own records */
    p = both("marker_elapsed_end", NULL);
    STAT_EQ(p.shim, "merged_records", 0);
    pair_free(&p);
}
END_TEST

START_TEST(records_others_may_see_pass_through)
{
    /* interprocess events: each record flushes, so each copy is its own */
    struct pair p = both("marker_interprocess", NULL);
    STAT_EQ(p.shim, "markers", 0);
    STAT_EQ(p.shim, "batches", 0);
    ck_assert_int_eq(num_of(&p.shim, "records_reaching_the_driver_before_the_observer: "), 64);
    pair_free(&p);
    /* ... also in the middle of a run that holds copies */
    p = both("marker_interprocess_mid", NULL);
    STAT_EQ(p.shim, "markers", 0);
    ck_assert_int_eq(num_of(&p.shim, "records_reaching_the_driver_at_once: "), 1);
    pair_free(&p);
    /* an external record */
    p = both("marker_external", NULL);
    STAT_EQ(p.shim, "markers", 0);
    ck_assert_int_eq(num_of(&p.shim, "records_reaching_the_driver_at_once: "), 1);
    LOG_BEFORE(p.shim, BATCH, "cuEventRecordWithFlags");
    pair_free(&p);
}
END_TEST

/* Rule 8's notes (probe.c, lone_after_thread and _legacy: a created and the
 * legacy stream): a burst begins without the
 * run's lock only while no run holds anything; a copy another thread queued
 * first (and the timer keeps queued) goes to the driver before this thread's
 * next copy to the same bytes. */
START_TEST(a_lone_copy_follows_another_threads_queued_copy)
{
    /* the legacy stream's runs are the copy kernel's (rule 3) */
    const char *const held[] = {"CUBATCH_FLUSH_US=1000000", "CUBATCH_MAX_WAIT_US=10000000", NULL};
    const char *const held_kernel[] = {"CUBATCH_FLUSH_US=1000000", "CUBATCH_MAX_WAIT_US=10000000",
                                       "CUBATCH_ENGINE=auto", NULL};
    const char *const scenarios[] = {"lone_after_thread", "lone_after_thread_legacy"};
    for (int i = 0; i < 2; i++) {
        struct pair p = both(scenarios[i], i ? held_kernel : held);
        STAT_EQ(p.shim, "pass_first", 1);
        STAT_EQ(p.shim, "deferred", 2); /* the other thread's copy, and this thread's after it */
        pair_free(&p);
    }
}
END_TEST

/* Rule 8's lone copies (probe.c, lone_counted): passed at once on and off, on a
 * created and the legacy stream, each counted under its reason (switched off,
 * or a legacy stream without the copy kernel, which never begins a burst). */
START_TEST(lone_copies_pass_counted_by_their_reason)
{
    const char *const shipped[] = {"CUBATCH_ENGINE=auto", NULL}, *const batch[] = {"CUBATCH_ENGINE=batch", NULL};
    for (int cfg = 0; cfg < 2; cfg++) {
        struct pair p = both("lone_counted", cfg ? batch : shipped);
        STAT_EQ(p.shim, "copies", 12);
        STAT_EQ(p.shim, "pass_disabled", 4);
        STAT_EQ(p.shim, "pass_first", cfg ? 4 : 8);
        STAT_EQ(p.shim, "pass_legacy", cfg ? 4 : 0);
        STAT_EQ(p.shim, "deferred", 0);
        pair_free(&p);
    }
}
END_TEST

START_TEST(jax_host_to_device_stream_batches)
{
    /* docs/design.md section 7: C, CEC, CEEC, CEEWC, CEEEEWC on the host-to-device
     * stream, CHEEC on the device-to-host ones (which never batch: every gap
     * holds a host function).  Records join the runs; the waits are for events
     * of the device-to-host streams that have completed, so they order nothing
     * and are not made (rule 16); with CUBATCH_RIDE_WAITS=0 each ends a run but
     * not the burst, and 80% of the host-to-device copies batch either way. */
    const char *fixed[] = {"CUBATCH_RIDE_WAITS=0", NULL};
    for (int ride = 1; ride >= 0; ride--) {
        struct pair p = both("jax", ride ? NULL : fixed);
        long h2d = 512, batched = stat_of(&p.shim, "batched_copies") + stat_of(&p.shim, "kernel_copies");
        ck_assert_msg(batched * 10 >= h2d * 8, "%ld of %ld host-to-device copies batched\n%s", batched, h2d,
                      p.shim.stats);
        if (ride) {
            STAT_GE(p.shim, "waits_met", 100);
            STAT_EQ(p.shim, "flush_wait", 0);
        } else {
            STAT_EQ(p.shim, "waits_met", 0);
            STAT_GE(p.shim, "flush_wait", 100);
            ck_assert_msg(strstr(p.shim.stats, "\"cuStreamWaitEvent\":"), "runs_ended_by lacks the waits: %s",
                          p.shim.stats);
        }
        pair_free(&p);
    }
    /* the same bytes and the same share with either engine alone, and with
     * one record per marker (rule 15 off) */
    const char *const batch[] = {"CUBATCH_ENGINE=batch", NULL}, *const kernel[] = {"CUBATCH_ENGINE=kernel", NULL},
                      *const unmerged[] = {"CUBATCH_MERGE_RECORDS=0", NULL};
    const char *const *const cfgs[] = {batch, kernel, unmerged};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        struct pair p = both("jax", cfgs[c]);
        long h2d = 512, batched = stat_of(&p.shim, "batched_copies") + stat_of(&p.shim, "kernel_copies");
        ck_assert_msg(batched * 10 >= h2d * 8, "%s: %ld of %ld host-to-device copies batched\n%s", cfgs[c][0],
                      batched, h2d, p.shim.stats);
        pair_free(&p);
    }
}
END_TEST

/* TensorRT-LLM's per-block copy and record (probe.c, trtllm), in every
 * configuration: each stream reads what the plain program's reads (both()),
 * and with the shipped defaults the block records ride in the copy stream's
 * runs, answered by one record per run (rule 15), while the compute stream's
 * waits ride until its launch (rule 16). */
START_TEST(trtllm_block_copies_and_records_batch)
{
    const char *const batch[] = {"CUBATCH_ENGINE=batch", NULL}, *const kernel[] = {"CUBATCH_ENGINE=kernel", NULL},
                      *const unmerged[] = {"CUBATCH_MERGE_RECORDS=0", NULL},
                      *const fixed[] = {"CUBATCH_RIDE_WAITS=0", NULL};
    const char *const *const cfgs[] = {NULL, batch, kernel, unmerged, fixed};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        struct pair p = both("trtllm", cfgs[c]);
        long copies = stat_of(&p.shim, "copies"), deferred = stat_of(&p.shim, "deferred");
        ck_assert_msg(deferred * 10 >= copies * 8, "config %zu: %ld of %ld copies deferred\n%s", c, deferred, copies,
                      p.shim.stats);
        /* every block's record but the 8 after a layer's first copy, which
         * passes through: the layer's launch made the compute stream's riding
         * waits, which submitted the copy stream's run and ended its burst */
        STAT_EQ(p.shim, "markers", 120);
        if (c == 0) {
            STAT_GE(p.shim, "waits_ridden", 100);
            ck_assert_int_lt(stat_of(&p.shim, "merged_records"), 16);
        }
        if (cfgs[c] == unmerged)
            STAT_EQ(p.shim, "markers_merged", 0);
        if (cfgs[c] == fixed)
            STAT_EQ(p.shim, "waits_ridden", 0);
        pair_free(&p);
    }
}
END_TEST

/* Rule 16: waits for records still queued ride until the waiting stream's next
 * call; each call that names it (or its context, or an event a pending wait
 * names) makes them first, after the run holding their records: the bytes the
 * waiting stream then sees are the plain program's (probe.c, waits_ride). */
START_TEST(waits_ride_until_the_waiting_stream_is_named)
{
    const char *const scen[] = {"waits_copy", "waits_record", "waits_sync", "waits_query", "waits_capture",
                                "waits_destroy", "waits_rerecord", "waits_ctx_sync", "waits_graph", NULL};
    /* the copy stream's run stays open (no timer) until the call under test:
     * every wait but the first rides, and nothing ran before that call */
    const char *open_run[] = {"CUBATCH_FLUSH_US=1000000", "CUBATCH_MAX_WAIT_US=10000000", NULL};
    const char *fixed[] = {"CUBATCH_FLUSH_US=1000000", "CUBATCH_MAX_WAIT_US=10000000", "CUBATCH_RIDE_WAITS=0", NULL};
    for (int i = 0; scen[i]; i++) {
        struct pair p = both(scen[i], open_run);
        STAT_GE(p.shim, "waits_ridden", 62); /* each but the first copy's of 64 (its record went out at once) */
        STAT_GE(p.shim, "batched_copies", 63);
        STAT_EQ(p.shim, "flush_wait", 0);
        if (i == 0) /* the simulated driver may run the run before the copy anyway: the log shows the order */
            LOG_BEFORE(p.shim, "cuStreamWaitEvent", "cuMemcpyDtoDAsync_v2");
        pair_free(&p);
        p = both(scen[i], fixed);
        STAT_EQ(p.shim, "waits_ridden", 0);
        STAT_GE(p.shim, "flush_event", 32); /* each wait submitted the run holding its record */
        pair_free(&p);
    }
    /* still pending when the run holding their records went out by another
     * call, with nothing queued anywhere: the waiting stream's launch makes them */
    struct pair pl = both("waits_launch", open_run);
    STAT_GE(pl.shim, "waits_ridden", 62);
    ck_assert_int_eq(num_of(&pl.shim, "launch_made_waits: "), 1);
    pair_free(&pl);
    /* still pending when the waiting stream's next copy is a burst's first,
     * with nothing queued anywhere: made before that copy */
    struct pair p = both("waits_first_copy", open_run);
    STAT_GE(p.shim, "waits_ridden", 62);
    STAT_GE(p.shim, "pass_first", 2);
    LOG_BEFORE(p.shim, "cuStreamWaitEvent", "cuMemcpyDtoDAsync_v2");
    pair_free(&p);
    /* a wait for a complete event is not made; one behind running compute is */
    p = both("waits_met", NULL);
    STAT_EQ(p.shim, "waits_met", 64);
    STAT_EQ(p.shim, "batches", 1);
    pair_free(&p);
}
END_TEST

START_TEST(set_enabled_flushes_then_passes_through)
{
    /* off after 64 copies: those go out at once (one batch), the next 64 pass
     * through one by one; on again: the last 64 batch (their first at once) */
    struct pair p = both("set_enabled", NULL);
    ck_assert_int_eq(num_of(&p.shim, "batches_after_set_enabled_0: "), 1);
    ck_assert_int_eq(num_of(&p.shim, "batches_after_set_enabled_1: "), 1);
    STAT_EQ(p.shim, "pass_disabled", 64);
    STAT_EQ(p.shim, "deferred", 63 + 63);
    STAT_EQ(p.shim, "batches", 2);
    STAT_EQ(p.shim, "flush_api", 1); /* the run queued at cubatch_set_enabled(0) */
    pair_free(&p);
}
END_TEST

START_TEST(program_flush_submits_at_the_call)
{
    /* cubatch_flush() with a run of 63 queued: one batch at the call (not at the
     * later synchronize), counted as the API's; a second call has nothing to submit */
    struct pair p = both("api_flush", NULL);
    ck_assert_int_eq(num_of(&p.shim, "batches_after_api_flush_0: "), 1);
    ck_assert_int_eq(num_of(&p.shim, "batches_after_api_flush_1: "), 1);
    STAT_EQ(p.shim, "flush_api", 1);
    STAT_EQ(p.shim, "flush_stream", 0);
    STAT_EQ(p.shim, "batches", 1);
    STAT_EQ(p.shim, "deferred", 63);
    pair_free(&p);
}
END_TEST

/* ---- two devices in one process ------------------------------------------------------------ */

/* The simulated driver with two devices, in each engine configuration. */
enum { TWO_AUTO, TWO_KERNEL, TWO_BATCH, TWO_CONFIGS };
static const char *const two_devices[TWO_CONFIGS][3] = {
    {"CUSIM_DEVICES=2", "CUBATCH_ENGINE=auto", NULL},
    {"CUSIM_DEVICES=2", "CUBATCH_ENGINE=kernel", NULL},
    {"CUSIM_DEVICES=2", "CUBATCH_ENGINE=batch", NULL},
};

/* Lines of the call log that start with `prefix`. */
static long log_lines(const struct run *r, const char *prefix)
{
    long n = 0;
    size_t pl = strlen(prefix);
    for (const char *p = r->log; *p;) {
        n += !strncmp(p, prefix, pl);
        const char *nl = strchr(p, '\n');
        if (!nl)
            break;
        p = nl + 1;
    }
    return n;
}

/* Both runs of a two-device scenario in configuration cfg: both really used two
 * devices, no engine call was refused (a copy kernel of the wrong context, a dead
 * module or stream would be, and then replayed), the engine was the configured
 * one, and the copy kernel was loaded `loads` times (once per context that used
 * it; the batch API configuration loads none). */
static struct pair both_two(const char *scenario, int cfg, long loads)
{
    struct pair p = both(scenario, two_devices[cfg]);
    ck_assert_msg(!strstr(p.plain.out, "two_devices: skipped") && !strstr(p.shim.out, "two_devices: skipped"),
                  "%s: not run on two devices\n%s", scenario, p.shim.out);
    STAT_EQ(p.shim, "batch_errors", 0);
    STAT_EQ(p.shim, "replayed", 0);
    ck_assert_int_eq(log_lines(&p.shim, LAUNCH " rc="), log_lines(&p.shim, LAUNCH " rc=0 "));
    ck_assert_int_eq(log_count(&p.shim, "cuModuleLoadData"), cfg == TWO_BATCH ? 0 : loads);
    ck_assert_int_eq(log_count(&p.plain, "cuModuleLoadData"), 0);
    if (cfg == TWO_BATCH) {
        STAT_EQ(p.shim, "kernel_launches", 0);
        STAT_GE(p.shim, "batches", 1);
    } else {
        STAT_GE(p.shim, "kernel_launches", 1);
    }
    return p;
}

START_TEST(two_devices_skip_on_one)
{
    /* one device: every two-device scenario says so, with or without cubatch */
    static const char *const sc[] = {"two_streams", "two_peer", "two_ctxsync", "two_module", "two_release",
                                     "two_reset", "two_ptds_switch"};
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
        struct pair p = both(sc[i], NULL);
        ck_assert_msg(strstr(p.plain.out, "two_devices: skipped (1 device)") &&
                          strstr(p.shim.out, "two_devices: skipped (1 device)"),
                      "%s", p.shim.out);
        /* no wrapped call was made, so cubatch never started (its report, asked
         * of cubatch_stats_json, says so) and wrote none at exit */
        ck_assert_int_eq(printed_stat_of(&p.shim, "copies"), 0);
        ck_assert_msg(strstr(p.shim.out, "no intercepted CUDA call yet"), "%s", p.shim.out);
        pair_free(&p);
    }
}
END_TEST

START_TEST(two_devices_streams_and_switches)
{
    /* named, non-blocking, legacy and per-thread streams of both devices, a
     * cuCtxSetCurrent switch every 8 copies */
    for (int cfg = 0; cfg < TWO_CONFIGS; cfg++) {
        struct pair p = both_two("two_streams", cfg, 2);
        STAT_EQ(p.shim, "copies", 2 * 2 * 4 * 64);
        STAT_GE(p.shim, "deferred", cfg == TWO_BATCH ? 2 * 2 * 3 * 64 - 64 : 2 * 2 * 4 * 64 - 64);
        if (cfg == TWO_BATCH)
            STAT_EQ(p.shim, "pass_legacy", 2 * 2 * 64); /* the batch API never runs there */
        else
            STAT_GE(p.shim, "legacy_runs", 2);
        pair_free(&p);
    }
}
END_TEST

START_TEST(two_devices_peer_copies_pass_through)
{
    for (int cfg = 0; cfg < TWO_CONFIGS; cfg++) {
        struct pair p = both_two("two_peer", cfg, 2);
        /* cuMemcpyDtoDAsync_v2 and cuMemcpyAsync between the devices: each passes,
         * after the run it reads from went out; each cuMemcpyAsync follows a
         * cuMemcpyPeerAsync that named the stream, so it is a burst's first
         * copy and passes unexamined (rule 8) */
        STAT_EQ(p.shim, "pass_foreign", 64);
        STAT_GE(p.shim, "pass_first", 64);
        ck_assert_int_eq(log_count(&p.shim, "cuMemcpyPeerAsync"), 2 * 64);
        ck_assert_int_eq(log_count(&p.shim, "cuMemcpyDtoDAsync_v2"), 64);
        ck_assert_int_eq(log_count(&p.shim, "cuMemcpyAsync"), 64);
        LOG_BEFORE(p.shim, cfg == TWO_BATCH ? BATCH : LAUNCH, "cuMemcpyDtoDAsync_v2");
        STAT_GE(p.shim, "flush_passthrough", 1);
        pair_free(&p);
    }
}
END_TEST

START_TEST(two_devices_context_synchronize_of_one)
{
    /* device 1's runs (a created stream, the legacy stream) open across device
     * 0's cuCtxSynchronize; later copies on device 1 overwrite what they wrote */
    for (int cfg = 0; cfg < TWO_CONFIGS; cfg++) {
        struct pair p = both_two("two_ctxsync", cfg, 2);
        /* device 0's run and device 1's (and its legacy run, with the kernel) */
        STAT_GE(p.shim, "flush_context", cfg == TWO_BATCH ? 2 : 3);
        STAT_GE(p.shim, "deferred", cfg == TWO_BATCH ? 4 * 64 - 8 : 5 * 64 - 8);
        pair_free(&p);
    }
}
END_TEST

START_TEST(two_devices_kernel_loaded_once_per_context)
{
    for (int cfg = 0; cfg < TWO_CONFIGS; cfg++) {
        struct pair p = both_two("two_module", cfg, 2);
        ck_assert_int_eq(num_of(&p.shim, "modules_loaded: "), cfg == TWO_BATCH ? 0 : 2);
        if (cfg != TWO_BATCH)
            STAT_GE(p.shim, "kernel_launches", 3 * 2 * 2);
        pair_free(&p);
    }
}
END_TEST

START_TEST(two_devices_primary_context_of_one_goes)
{
    /* device 1's primary context goes (last release, reset) with runs open on
     * both devices: its copies go out first, device 0's runs go on, and device
     * 1's new primary context loads the copy kernel again (3 loads in all) */
    static const char *const sc[] = {"two_release", "two_reset"};
    static const char *const call[] = {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxReset_v2"};
    for (int k = 0; k < 2; k++)
        for (int cfg = 0; cfg < TWO_CONFIGS; cfg++) {
            struct pair p = both_two(sc[k], cfg, 3);
            ck_assert_int_eq(num_of(&p.shim, "device1_active_after: "), 0);
            LOG_BEFORE(p.shim, cfg == TWO_BATCH ? BATCH : LAUNCH, call[k]);
            STAT_GE(p.shim, "flush_context", 1);
            pair_free(&p);
        }
}
END_TEST

START_TEST(two_devices_per_thread_stream_switching_devices)
{
    /* the owner's device 0 per-thread stream must wait for its copies that
     * another thread side-submitted, after the owner opened a run on device 1 */
    for (int cfg = 0; cfg < TWO_CONFIGS; cfg++) {
        struct pair p = both_two("two_ptds_switch", cfg, 2);
        STAT_GE(p.shim, "side_submits", 1);
        STAT_GE(p.shim, "deferred", 2 * 64 - 8);
        pair_free(&p);
    }
}
END_TEST

/* ---- section 2: the version rule ----------------------------------------------------------- */

/* counter: the pass-through reason every copy is counted under */
static void assert_pass_through(const char *const *env, const char *reason, const char *counter)
{
    struct pair p = both("basic", env);
    ck_assert_msg(strstr(p.shim.stats, "\"batching\":false"), "%s", p.shim.stats);
    ck_assert_msg(strstr(p.shim.stats, reason), "reason should mention '%s': %s", reason, p.shim.stats);
    STAT_EQ(p.shim, "deferred", 0);
    STAT_EQ(p.shim, "copies", 128);
    STAT_EQ(p.shim, counter, 128);
    STAT_EQ(p.shim, "copies_unknown", 128); /* nothing is classified then */
    ck_assert_int_eq(log_count(&p.shim, BATCH), 0);
    ck_assert_int_eq(log_count(&p.shim, "cuMemcpyBatchAsync"), 0);
    pair_free(&p);
}

START_TEST(driver_12_8_passes_through)
{
    const char *env[] = {"CUSIM_DRIVER_VERSION=12080", NULL};
    assert_pass_through(env, "older than CUDA 13.0", "pass_version");
}
END_TEST

START_TEST(missing_entry_point_passes_through)
{
    const char *env[] = {"CUSIM_MISSING=cuMemcpyBatchAsync", NULL};
    assert_pass_through(env, "no CUDA 13.0 cuMemcpyBatchAsync", "pass_version");
}
END_TEST

START_TEST(switched_off_passes_through)
{
    const char *env[] = {"CUBATCH_ENABLE=0", NULL};
    assert_pass_through(env, "switched off", "pass_disabled");
    struct run r = probe("basic", 1, env);
    STAT_EQ(r, "pass_disabled", 128);
    run_free(&r);
}
END_TEST

START_TEST(bad_environment_is_reported)
{
    const char *env[] = {"CUBATCH_MAX_BATCH=lots", "CUBATCH_SRC_ORDER=during_api_call", NULL};
    struct pair p = both("basic", env);
    ck_assert_msg(strstr(p.shim.err, "cubatch: warning: CUBATCH_MAX_BATCH=\"lots\" is not valid"), "%s", p.shim.err);
    ck_assert_msg(strstr(p.shim.err, "during_api_call is refused"), "%s", p.shim.err);
    STAT_EQ(p.shim, "batches", 2); /* defaults kept */
    pair_free(&p);
}
END_TEST

/* ---- section 1: interposition ---------------------------------------------------------------- */

/* Exported variants cubatch wraps among those the probe asks for. */
static int wrapped(const char *sym)
{
    static const char *const w[] = {
        "cuMemcpyAsync", "cuMemcpyAsync_ptsz", "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz",
        "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz", "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz",
        "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemcpyDtoDAsync", "cuEventRecord", "cuEventRecord_ptsz",
        "cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuLaunchKernel", "cuLaunchKernel_ptsz",
        "cuMemcpyBatchAsync", "cuMemcpyBatchAsync_ptsz", "cuMemcpyBatchAsync_v2", "cuMemcpyBatchAsync_v2_ptsz",
        "cuGetProcAddress", "cuGetProcAddress_v2", "cuGetProcAddress_v2_ptsz", "cuCtxSynchronize",
        "cuCtxSynchronize_v2", "cuMemAlloc_v2", "cuMemAllocManaged", "cuMemAllocHost_v2", "cuMemHostAlloc", NULL};
    for (int i = 0; w[i]; i++)
        if (!strcmp(w[i], sym))
            return 1;
    return 0;
}

START_TEST(every_path_reaches_the_right_wrapper)
{
    struct pair p = both("resolve", NULL);
    char *a = lines_with(&p.plain, "resolve: "), *b = lines_with(&p.shim, "resolve: ");
    int lines = 0, swapped = 0;
    for (char *la = a, *lb = b; *la && *lb; lines++) {
        char *ea = strchr(la, '\n'), *eb = strchr(lb, '\n');
        *ea = *eb = 0;
        /* everything up to lib= is the driver's answer: it must be the same */
        char *ka = strstr(la, " lib="), *kb = strstr(lb, " lib=");
        ck_assert_msg(ka - la == kb - lb && !strncmp(la, lb, (size_t)(ka - la)), "answers differ:\n%s\n%s", la, lb);
        char *sa = strstr(la, " sym="), *sb = strstr(lb, " sym=");
        /* the same variant: pointer identity, never a different variant */
        ck_assert_msg(!strcmp(sa, sb), "variant differs:\n%s\n%s", la, lb);
        const char *sym = sa + 5;
        if (wrapped(sym)) {
            ck_assert_msg(strstr(kb, "lib=libcubatch.so"), "not wrapped: %s", lb);
            swapped++;
        } else if (strcmp(sym, "-")) {
            ck_assert_msg(!strstr(kb, "libcubatch"), "wrapped by mistake: %s", lb);
        }
        la = ea + 1;
        lb = eb + 1;
    }
    ck_assert_int_ge(lines, 500);
    ck_assert_int_ge(swapped, 100);
    free(a);
    free(b);
    /* the two calls made through resolved pointers reached their own wrappers */
    char pat[80];
    snprintf(pat, sizeof pat, "\"cuMemcpyHtoDAsync_v2\":1,");
    ck_assert_msg(strstr(p.shim.stats, pat), "%s", p.shim.stats);
    snprintf(pat, sizeof pat, "\"cuMemcpyHtoDAsync_v2_ptsz\":1,");
    ck_assert_msg(strstr(p.shim.stats, pat), "%s", p.shim.stats);
    pair_free(&p);
}
END_TEST

/* ---- rule 13: cubatch's own calls while the program captures ----------------------------- */

/* Each scenario captures in all three modes (tests/rules/probe.c); the simulated
 * driver refuses and invalidates as the real one does (tests/data/capture-legal-
 * h200.txt), so any call of cubatch's that the capture forbids changes what the
 * program sees.  The shipped defaults first (auto engine, pipelining: the
 * launch tracking and the copy kernel are on), then each engine forced. */
static const char *const shipped[] = {"CUBATCH_ENGINE=auto", "CUBATCH_PIPELINE=1", NULL};
static const char *const shipped_batch[] = {"CUBATCH_ENGINE=batch", "CUBATCH_PIPELINE=1", NULL};
static const char *const shipped_kernel[] = {"CUBATCH_ENGINE=kernel", "CUBATCH_PIPELINE=1", NULL};

START_TEST(captures_meet_only_calls_the_driver_allows)
{
    const char *const *const cfgs[] = {shipped, shipped_batch, shipped_kernel};
    const char *const scenarios[] = {"capture_launch", "capture_beside_thread", "capture_beside_own",
                                     "capture_first_kernel", "capture_first_kernel_own"};
    for (size_t c = 0; c < 3; c++)
        for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
            struct pair p = both(scenarios[i], cfgs[c]);
            for (size_t m = 0; m < 3; m++) { /* every capture ended well, without cubatch too */
                static const char *const mode[] = {"global", "thread_local", "relaxed"};
                char want[64];
                snprintf(want, sizeof want, "rc: %s end_capture 0\n", mode[m]);
                ck_assert_msg(strstr(p.shim.out, want), "%s [%zu]: no '%s'\n%s", scenarios[i], c, want, p.shim.out);
            }
            if (c == 0 && i == 0) /* the filling launches into capturing streams: not tracked */
                STAT_EQ(p.shim, "launches_captured", 3);
            if (c == 0 && i == 1) /* global mode: no stream may be queried from any thread */
                STAT_GE(p.shim, "load_unasked", 1);
            if (c == 0 && i == 2) /* nor from the capturing thread (a stream found busy is
                                   * then trusted for a while: one is enough) */
                STAT_GE(p.shim, "load_unasked", 1);
            if (c != 1 && i == 3) { /* global mode held the module load; the next mode loaded it */
                STAT_GE(p.shim, "kernel_load_held", 1);
                STAT_GE(p.shim, "kernel_launches", 1);
            }
            if (c != 1 && i == 4) /* the capturing thread's own copies: global and thread-local */
                STAT_GE(p.shim, "kernel_load_held", 2);
            pair_free(&p);
        }
}
END_TEST

/* Rule 6's context destroy, with handles that come back (CUSIM_HANDLE_REUSE=1, as
 * the real driver's do): a context made at a destroyed one's handle loads the
 * copy kernel anew and gets its own side stream and events, and a stream made at
 * the handle of one that died with its context is asked what it is (here: a
 * blocking stream, which the legacy stream's work follows, rule 3).  The H200
 * failure this reproduces: the last of 16 scenarios' synchronize returned
 * CUDA_ERROR_CONTEXT_IS_DESTROYED, none of its copies done. */
START_TEST(a_dead_contexts_handles_serve_no_new_one)
{
    const char *const batch[] = {"CUSIM_HANDLE_REUSE=1", NULL};
    const char *const kernel[] = {"CUSIM_HANDLE_REUSE=1", "CUBATCH_ENGINE=kernel", NULL};
    const char *const *cfgs[] = {batch, kernel};
    for (int c = 0; c < 2; c++) {
        struct pair p = both("ctx_reuse", cfgs[c]);
        ck_assert_int_eq(num_of(&p.shim, "stream_handle_reused: "), 1);
        ck_assert_int_eq(num_of(&p.shim, "context_handle_reused: "), 1);
        STAT_EQ(p.shim, "batch_errors", 0);
        STAT_EQ(p.shim, "replayed", 0);
        STAT_GE(p.shim, "side_submits", 3);
        ck_assert_int_eq(log_lines(&p.shim, LAUNCH " rc="), log_lines(&p.shim, LAUNCH " rc=0 "));
        ck_assert_int_eq(log_lines(&p.shim, "cuEventRecord rc="), log_lines(&p.shim, "cuEventRecord rc=0 "));
        ck_assert_int_eq(log_lines(&p.shim, "cuStreamWaitEvent rc="), log_lines(&p.shim, "cuStreamWaitEvent rc=0 "));
        if (c == 1) { /* one module in each of the three contexts */
            ck_assert_int_eq(log_count(&p.shim, "cuModuleLoadData"), 3);
            STAT_GE(p.shim, "kernel_launches", 3);
        }
        pair_free(&p);
    }
}
END_TEST

/* ---- rule 18: adjacent copies merged ------------------------------------------------------ */

/* The sizes of the run's calls of fn (a name and a space) in the call log,
 * in order, into sizes (at most max); how many there were. */
static size_t call_sizes(const struct run *r, const char *fn, size_t *sizes, size_t max)
{
    size_t n = 0, fnlen = strlen(fn);
    for (const char *p = r->log; *p;) {
        const char *at = strstr(p, " n="), *nl = strchr(p, '\n');
        if (!strncmp(p, fn, fnlen) && at && (!nl || at < nl)) {
            if (n < max)
                sizes[n] = strtoul(at + 3, NULL, 10);
            n++;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    return n;
}

START_TEST(adjacent_copies_go_out_as_one)
{
    /* 63 deferred 4K copies, each continuing the one before: 252K, less than
     * a merged run's first chunk, so they go out as one copy, on the copy
     * engines, when the program synchronizes */
    struct pair p = pair_of("merge_contiguous", CB_SHIPPED, NULL);
    STAT_EQ(p.shim, "deferred", 63);
    STAT_EQ(p.shim, "copies_merged", 62);
    ck_assert_int_eq(num_of(&p.shim, "h2d_calls: "), 2);
    ck_assert_int_eq(num_of(&p.plain, "h2d_calls: "), 64);
    STAT_EQ(p.shim, "kernel_launches", 0);
    STAT_EQ(p.shim, "batches", 0);
    pair_free(&p);
    /* 4095 deferred 4K copies in order: chunks cut by bytes, the first at
     * 512K; issued four times as fast as the copy engines drain them or
     * faster (no time passes on the virtual clock), each next four times as
     * long, up to 8M; faster than the engines but not four times (1 us
     * every 32 copies, 128 GB/s: the clock read at each cut against the
     * run's opening), each next half as long again; issued at 4 GB/s (1 us a
     * copy), 1M each; the rest at the synchronize.  The copy kernel's
     * schedule (copies, not bytes) would cut them at 32, 128, 512 and 2048
     * copies.  The same copies between device buffers at 32 GB/s (1 us
     * every 8 copies, slower than the engines drain host memory) leap as
     * the fastest do: the engines drain device memory faster than any
     * program issues.  The first of each list passes through (a burst's
     * first); the last is repeated. */
    const size_t leap[] = {4096, 512 << 10, 2u << 20, 8u << 20},
                 fast[] = {4096, 512 << 10, 768 << 10, 1152 << 10, 1728 << 10, 2592 << 10, 3888 << 10, 5832 << 10},
                 slow[] = {4096, 512 << 10, 1u << 20};
    static const char h2d[] = "cuMemcpyHtoDAsync_v2 ", d2d[] = "cuMemcpyDtoDAsync_v2 ";
    const struct { const char *scenario, *fn; const size_t *first; size_t nfirst; } longs[] = {
        {"merge_long", h2d, leap, sizeof leap / sizeof leap[0]},
        {"merge_long_mid", h2d, fast, sizeof fast / sizeof fast[0]},
        {"merge_long_slow", h2d, slow, sizeof slow / sizeof slow[0]},
        {"merge_long_slow_d2d", d2d, leap, sizeof leap / sizeof leap[0]}};
    for (size_t l = 0; l < sizeof longs / sizeof longs[0]; l++) {
        size_t want[32], nwant = 0, sent = 0, steady = longs[l].first[longs[l].nfirst - 1];
        for (; nwant < longs[l].nfirst - 1; nwant++)
            sent += want[nwant] = longs[l].first[nwant];
        for (; sent + steady < 4096 * 4096u; nwant++)
            sent += want[nwant] = steady;
        want[nwant++] = 4096 * 4096u - sent;
        p = pair_of(longs[l].scenario, CB_SHIPPED, NULL);
        STAT_EQ(p.shim, "deferred", 4095);
        size_t got[32];
        ck_assert_uint_eq(call_sizes(&p.shim, longs[l].fn, got, 32), nwant);
        for (size_t i = 0; i < nwant; i++)
            ck_assert_msg(got[i] == want[i], "%s: call %zu copied %zu bytes, want %zu", longs[l].scenario, i, got[i],
                          want[i]);
        STAT_EQ(p.shim, "copies_merged", 4095 - (long)(nwant - 1));
        pair_free(&p);
    }
    /* beyond the copy kernel's reach: 8 copies of 512K, one copy of 4M */
    p = pair_of("merge_big", CB_SHIPPED, NULL);
    STAT_EQ(p.shim, "copies_merged", 7);
    ck_assert_int_eq(num_of(&p.shim, "h2d_calls: "), 2);
    STAT_EQ(p.shim, "batches", 0);
    pair_free(&p);
}
END_TEST

START_TEST(only_copies_that_continue_on_both_sides_merge)
{
    /* half the copies continue on the source side only, half on the
     * destination side only: nothing merges, whichever engine takes them */
    const char *batch[] = {"CUBATCH_ENGINE=batch", NULL};
    for (int i = 0; i < 2; i++) {
        struct pair p = pair_of("merge_scattered", CB_SHIPPED, i ? batch : NULL);
        STAT_EQ(p.shim, "deferred", 63);
        STAT_EQ(p.shim, "copies_merged", 0);
        if (i)
            STAT_EQ(p.shim, "batched_copies", 63);
        else
            STAT_GE(p.shim, "kernel_launches", 1);
        pair_free(&p);
    }
}
END_TEST

START_TEST(runs_of_adjacent_blocks_merge_for_the_copy_engines)
{
    /* runs of 4 adjacent blocks, scattered: the copy kernel takes them as
     * they came (each entry is one block's work); the batch API gets each
     * run as one entry: chunks of 32 and 31 copies, 9 and 8 entries */
    struct pair p = pair_of("merge_kv4", CB_SHIPPED, NULL);
    STAT_EQ(p.shim, "copies_merged", 0);
    STAT_EQ(p.shim, "kernel_copies", 63);
    pair_free(&p);
    const char *batch[] = {"CUBATCH_ENGINE=batch", NULL};
    p = pair_of("merge_kv4", CB_SHIPPED, batch);
    STAT_EQ(p.shim, "copies_merged", 46);
    STAT_EQ(p.shim, "batches", 2);
    STAT_EQ(p.shim, "batched_copies", 17);
    pair_free(&p);
    /* CUBATCH_ENGINE=kernel: the kernel even where a run merges into one copy */
    const char *kernel[] = {"CUBATCH_ENGINE=kernel", NULL};
    p = pair_of("merge_contiguous", CB_SHIPPED, kernel);
    STAT_EQ(p.shim, "copies_merged", 0);
    STAT_EQ(p.shim, "kernel_copies", 63);
    pair_free(&p);
}
END_TEST

START_TEST(what_lies_between_keeps_copies_apart)
{
    /* an event record, the end of a host registration, another entry point:
     * the copies before and after go out as their own entries */
    const struct { const char *scenario; long merged, batched; } cases[] = {
        {"merge_marker", 6, 2},
        {"merge_two_regs", 6, 2},
        {"merge_two_hooks", 0, 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct pair p = pair_of(cases[i].scenario, CB_SHIPPED, NULL);
        STAT_EQ(p.shim, "deferred", 8);
        STAT_EQ(p.shim, "copies_merged", cases[i].merged);
        STAT_EQ(p.shim, "batched_copies", cases[i].batched);
        pair_free(&p);
    }
    /* switched off, nothing merges */
    const char *off[] = {"CUBATCH_MERGE_ADJACENT=0", NULL};
    struct pair p = pair_of("merge_big", CB_SHIPPED, off);
    STAT_EQ(p.shim, "copies_merged", 0);
    STAT_EQ(p.shim, "batched_copies", 8);
    pair_free(&p);
}
END_TEST

START_TEST(a_refused_merged_copy_is_replayed_as_the_programs_copies)
{
    /* the driver refuses copies over 512K: the merged 4M copy (the loop's) and
     * the two merged entries (the batch API's) are replayed as the program's
     * copies, which it takes; the program sees what it sees without cubatch */
    const char *limit[] = {"CUSIM_MAX_COPY=524288", NULL};
    const char *scenarios[] = {"merge_big", "merge_marker"};
    for (int i = 0; i < 2; i++) {
        struct pair p = pair_of(scenarios[i], CB_SHIPPED, limit);
        STAT_EQ(p.shim, "batch_errors", 1);
        STAT_EQ(p.shim, "replayed", 8);
        STAT_EQ(p.shim, "replay_errors", 0);
        pair_free(&p);
    }
    /* one of the program's copies is itself too long: it fails alone, with
     * the driver's error, at the synchronize instead of its own call */
    struct pair p = pair_of("merge_own_error", CB_SHIPPED, limit);
    char buf[32];
    ck_assert_str_eq(line_of(&p.shim, "rc: first_error ", buf, sizeof buf), "1");
    STAT_EQ(p.shim, "replay_errors", 1);
    pair_free(&p);
}
END_TEST

/* ---- rule 19: 2D copies ------------------------------------------------------------------- */

/* 2D copies are deferred as shipped: every test but the first runs as cubatch
 * ships, and the first switches them off. */

START_TEST(switched_off_2d_copies_pass_through)
{
    const char *off[] = {"CUBATCH_DEFER_2D=0", NULL};
    struct pair p = pair_of("tiles_h2d", CB_SHIPPED, off);
    STAT_EQ(p.shim, "copies_2d", 32);
    STAT_EQ(p.shim, "deferred", 0);
    STAT_EQ(p.shim, "pass_rows", 32);
    ck_assert_int_eq(num_of(&p.shim, "rows_calls: "), 32);
    pair_free(&p);
}
END_TEST

START_TEST(tiles_go_out_in_one_launch)
{
    /* 32 tiles of a pitched region, in a scattered order (their rows
     * interleave): the first passes (rule 8), the other 31 are one launch of
     * the copy kernel, on every kind of stream and memory type */
    const char *sc[] = {"tiles_h2d", "tiles_d2h", "tiles_d2d", "tiles_unified", "tiles_ptds", "tiles_legacy"};
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
        struct pair p = pair_of(sc[i], CB_SHIPPED, NULL);
        STAT_EQ(p.shim, "copies_2d", 32);
        STAT_EQ(p.shim, "deferred", 31);
        STAT_EQ(p.shim, "kernel_launches", 1);
        STAT_EQ(p.shim, "kernel_copies", 31);
        STAT_EQ(p.shim, "flush_hazard", 0); /* tiles side by side never overlap */
        STAT_EQ(p.shim, "batches", 0);
        ck_assert_int_eq(num_of(&p.shim, "rows_calls: "), 1);
        ck_assert_int_eq(num_of(&p.plain, "rows_calls: "), 32);
        pair_free(&p);
    }
}
END_TEST

START_TEST(overlapping_rows_keep_their_order)
{
    /* read after write and write after write between 2D copies, and between
     * 2D and 1D copies: each such pair is a flush, and only those (a 1D copy
     * into the gap beside a tile's rows is no hazard) */
    struct pair p = pair_of("tiles_hazard", CB_SHIPPED, NULL);
    STAT_EQ(p.shim, "flush_hazard", 24);
    STAT_GE(p.shim, "kernel_launches", 8);
    pair_free(&p);
    p = pair_of("tiles_mixed", CB_SHIPPED, NULL);
    STAT_EQ(p.shim, "flush_hazard", 10);
    STAT_EQ(p.shim, "deferred", 51);
    pair_free(&p);
}
END_TEST

START_TEST(what_the_copy_kernel_cannot_take_passes_through)
{
    /* pageable host memory */
    struct pair p = pair_of("tiles_pageable", CB_SHIPPED, NULL);
    STAT_EQ(p.shim, "pass_pageable", 32);
    STAT_EQ(p.shim, "deferred", 0);
    ck_assert_int_eq(num_of(&p.shim, "rows_calls: "), 32);
    pair_free(&p);
    /* a width over the pitch, an array (the driver's errors at the call, as
     * without cubatch), rows past the allocation's end; the rest batch */
    p = pair_of("tiles_errors", CB_SHIPPED, NULL);
    STAT_EQ(p.shim, "pass_rows", 2);
    STAT_EQ(p.shim, "pass_foreign", 2);
    STAT_GE(p.shim, "deferred", 20);
    pair_free(&p);
    /* a capturing stream: captured as they came (rule 2) */
    p = pair_of("tiles_capture", CB_SHIPPED, NULL);
    STAT_EQ(p.shim, "deferred", 0);
    STAT_EQ(p.shim, "pass_capture", 31);
    pair_free(&p);
    /* without the copy kernel (CUBATCH_ENGINE=batch) */
    const char *batch[] = {"CUBATCH_ENGINE=batch", NULL};
    p = pair_of("tiles_h2d", CB_SHIPPED, batch);
    STAT_EQ(p.shim, "deferred", 0);
    STAT_EQ(p.shim, "pass_rows", 31);
    pair_free(&p);
}
END_TEST

START_TEST(tiles_among_copies_the_kernel_does_not_take)
{
    /* 8 uploads of 512 KiB (deferred, too long for the copy kernel), 32
     * tiles, 8 more uploads: the run (cut at 32 copies) does not go to the
     * kernel, and only the loop takes 2D copies; the uploads between them go
     * out as batches of their own all the same (7, then 8), the tiles one by one */
    struct pair p = pair_of("tiles_big", CB_SHIPPED, NULL);
    STAT_EQ(p.shim, "deferred", 47);
    STAT_EQ(p.shim, "kernel_launches", 0);
    STAT_EQ(p.shim, "batches", 2);
    STAT_EQ(p.shim, "batched_copies", 15);
    STAT_EQ(p.shim, "singles", 32);
    ck_assert_int_eq(num_of(&p.shim, "rows_calls: "), 32);
    pair_free(&p);
}
END_TEST

START_TEST(two_d_copies_that_continue_each_other_never_merge)
{
    /* packed 2D copies, each continuing the one before on both sides,
     * downloaded beside compute filling the GPU: the run goes to the loop,
     * each as it came (rule 18 merges nothing in a run holding 2D copies) */
    struct pair p = pair_of("tiles_packed", CB_SHIPPED, NULL);
    STAT_EQ(p.shim, "deferred", 15);
    STAT_EQ(p.shim, "kernel_launches", 0);
    STAT_EQ(p.shim, "copies_merged", 0);
    STAT_EQ(p.shim, "singles", 15);
    STAT_EQ(p.shim, "replayed", 0);
    pair_free(&p);
}
END_TEST

START_TEST(one_row_and_empty_2d_copies)
{
    /* rows of one: deferred as 2D copies; no rows: passed (they touch nothing) */
    struct pair p = pair_of("tiles_one_row", CB_SHIPPED, NULL);
    STAT_EQ(p.shim, "pass_zero", 8);
    STAT_EQ(p.shim, "deferred", 23);
    STAT_EQ(p.shim, "kernel_copies", 23);
    pair_free(&p);
}
END_TEST

START_TEST(a_refused_launch_replays_the_2d_copies)
{
    /* the launch refused: the 31 tiles go out again as the program's 2D
     * copies, through its entry point */
    const char *fail[] = {"CUSIM_FAIL=cuLaunchKernel:1:1", NULL};
    struct pair p = pair_of("tiles_h2d", CB_SHIPPED, fail);
    STAT_EQ(p.shim, "batch_errors", 1);
    STAT_EQ(p.shim, "replayed", 31);
    STAT_EQ(p.shim, "replay_errors", 0);
    ck_assert_int_eq(num_of(&p.shim, "rows_calls: "), 32);
    pair_free(&p);
}
END_TEST

int main(void)
{
    const struct th_case cases[] = {
        {"deferral", TH_TESTS(runs_become_batches, pageable_passes_through, every_direction_is_counted,
                              copies_over_the_size_limit_pass_through, many_allocations_are_classified_once,
                              memory_is_known_from_its_allocation, unregistered_memory_is_pageable_again,
                              what_earlier_copies_learned_does_not_carry_over,
                              single_copy_goes_out_as_itself,
                              policy_keeps_slow_band_out, policy_pass_through_keeps_the_run, slow_copies_pass_fast_ones_batch,
                              managed_memory)},
        {"capture", TH_TESTS(capture_flushes_then_passes_through, captures_meet_only_calls_the_driver_allows)},
        {"legacy", TH_TESTS(legacy_work_follows_blocking_runs, legacy_copies_never_batch)},
        {"per_thread_stream", TH_TESTS(ptds_own_thread, ptds_other_thread_ctx_sync, ptds_other_thread_legacy,
                                       ptds_side_stream_waits_for_a_copy_passed_ahead,
                                       ptds_owner_copy_after_a_timer_side_submission,
                                       ptds_owner_copy_after_a_switch_off_by_another_thread)},
        {"hazards", TH_TESTS(dependent_chain, source_overwritten_later)},
        {"observers", TH_TESTS(query_observes, event_observes, host_function_observes, stream_destroy_and_reuse,
                               free_flushes_and_forgets, many_threads, context_event_observes, threads_on_streams_at_once)},
        {"bounded", TH_TESTS(full_runs_are_chunked, cpu_work_does_not_hold_copies, long_runs_go_out_in_chunks,
                             a_run_never_waits_past_the_age_bound)},
        {"errors", TH_TESTS(refused_batch_is_replayed, replayed_error_reaches_the_program, every_batch_error_is_replayed,
                            every_flush_reason_reports_a_failed_copy, every_flush_reason_reports_a_failed_copy_by_default,
                            the_first_of_two_errors_is_reported,
                            pointer_queries_failing_pass_through, allocation_failure_passes_through,
                            context_reset_flushes_first, context_destroy_flushes_first,
                            primary_release_forgets_only_what_goes, a_dead_contexts_handles_serve_no_new_one)},
        {"process", TH_TESTS(exit_flushes, fork_flushes_and_child_starts_empty, copies_after_thread_cleanup,
                             process_without_cuda_is_untouched)},
        {"version", TH_TESTS(driver_12_8_passes_through, missing_entry_point_passes_through, switched_off_passes_through,
                             bad_environment_is_reported)},
        {"newer_drivers", TH_TESTS(newer_host_function_observes, newer_copy_with_attributes_keeps_its_place,
                                   newer_captures_are_never_deferred_into, a_function_no_table_names_submits_the_runs,
                                   an_older_driver_gets_nothing_new_wrapped)},
        {"merging", TH_TESTS(adjacent_copies_go_out_as_one, only_copies_that_continue_on_both_sides_merge,
                             runs_of_adjacent_blocks_merge_for_the_copy_engines, what_lies_between_keeps_copies_apart,
                             a_refused_merged_copy_is_replayed_as_the_programs_copies)},
        {"rows", TH_TESTS(switched_off_2d_copies_pass_through, tiles_go_out_in_one_launch, overlapping_rows_keep_their_order,
                          what_the_copy_kernel_cannot_take_passes_through, tiles_among_copies_the_kernel_does_not_take,
                          two_d_copies_that_continue_each_other_never_merge, one_row_and_empty_2d_copies,
                          a_refused_launch_replays_the_2d_copies)},
        {"interposition", TH_TESTS(every_path_reaches_the_right_wrapper)},
        {"markers", TH_TESTS(records_join_the_run, every_observer_submits_the_marker,
                             markers_of_other_threads_and_the_legacy_stream, records_others_may_see_pass_through,
                             one_record_answers_for_a_runs_timing_free_events,
                             a_lone_copy_follows_another_threads_queued_copy, lone_copies_pass_counted_by_their_reason,
                             jax_host_to_device_stream_batches, trtllm_block_copies_and_records_batch,
                             waits_ride_until_the_waiting_stream_is_named,
                             set_enabled_flushes_then_passes_through,
                             program_flush_submits_at_the_call)},
        {"kernel_engine", TH_TESTS(kernel_runs_the_runs, kernel_keeps_every_rule, kernel_batches_the_legacy_stream, legacy_runs_keep_their_context,
                                   legacy_runs_go_before_blocking_work, capture_begins_after_legacy_runs,
                                   nothing_deferred_on_legacy_while_capturing,
                                   kernel_only_where_it_may_touch_the_memory, refused_launch_is_replayed, kernel_chunks_grow)},
        {"beside_compute", TH_TESTS(measured_choice_takes_the_cheapest_arm, host_copies_avoid_a_busy_gpu,
                                    finished_compute_lets_the_kernel_take_them, a_load_verdict_is_asked_again,
                                    a_pass_spell_follows_what_its_stream_queued,
                                    compute_that_leaves_room_or_would_be_waited_for)},
        {"two_devices", TH_TESTS(two_devices_skip_on_one, two_devices_streams_and_switches,
                                 two_devices_peer_copies_pass_through, two_devices_context_synchronize_of_one,
                                 two_devices_kernel_loaded_once_per_context, two_devices_primary_context_of_one_goes,
                                 two_devices_per_thread_stream_switching_devices)},
    };
    return th_check_main("rules", cases, sizeof cases / sizeof cases[0], 120);
}
