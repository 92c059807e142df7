/* stats.c - counters from stats.def, kept per thread so the copy path touches no
 * shared cache line, merged only when someone asks (exit report, JSON API), and
 * printed as text or JSON (report.c writes the report at exit).
 * A thread's block is recycled, counts intact, when the thread exits.  A child
 * of fork() starts from zero: each process reports its own work. */
#include "internal.h"
#include "stats.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

CB_TLS struct cb_tstats *cb_tls_stats;
CB_TLS int cb_tls_hook;

void cb_stat_run_ended(void)
{
    int h = cb_tls_hook;
    if (h > 0 && h <= CB_HOOK_COUNT)
        cb_bump(&cb_stats_thread()->ended[h - 1], 1);
}

static struct cb_tstats *cb_stats_all;      /* every block ever made */
static pthread_mutex_t cb_stats_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t cb_stats_key;
static pthread_once_t cb_stats_once = PTHREAD_ONCE_INIT;
static struct cb_tstats cb_stats_fallback;   /* if calloc fails: shared, racy, never lost */

static const char *const cb_stat_names[CB_STAT_COUNT] = {
#define CB_STAT(name, kind, doc) #name,
#include "stats.def"
#undef CB_STAT
};
static const char *const cb_stat_docs[CB_STAT_COUNT] = {
#define CB_STAT(name, kind, doc) doc,
#include "stats.def"
#undef CB_STAT
};
#define CB_KIND_IS_MAX_SUM 0
#define CB_KIND_IS_MAX_MAX 1
#define CB_KIND_IS_MAX_FLUSH 0
static const unsigned char cb_stat_is_max[CB_STAT_COUNT] = {
#define CB_STAT(name, kind, doc) CB_KIND_IS_MAX_##kind,
#include "stats.def"
#undef CB_STAT
};
/* The counter of each flush reason (enum cb_flush_why is made from the same rows). */
static const enum cb_stat_id cb_why_stat[CB_WHY_COUNT] = {
#define CB_STAT(name, kind, doc)
#define CB_FLUSH(name, does, doc) [CB_WHY_##name] = CB_ST_##name,
#include "stats.def"
#undef CB_FLUSH
#undef CB_STAT
};
enum cb_stat_id cb_flush_stat(enum cb_flush_why why) { return cb_why_stat[why]; }

/* Run in the exiting thread: a copy counted by a later destructor takes a
 * block again instead of writing into one another thread may now hold. */
static void thread_exit(void *p)
{
    struct cb_tstats *t = p;
    cb_tls_stats = NULL;
    pthread_mutex_lock(&cb_stats_lock);
    t->in_use = 0;
    pthread_mutex_unlock(&cb_stats_lock);
}

static void make_key(void) { pthread_key_create(&cb_stats_key, thread_exit); }

struct cb_tstats *cb_stats_thread_slow(void)
{
    pthread_once(&cb_stats_once, make_key);
    pthread_mutex_lock(&cb_stats_lock);
    struct cb_tstats *t;
    for (t = cb_stats_all; t; t = t->next)
        if (!t->in_use)
            break;
    if (!t) {
        t = calloc(1, sizeof *t);
        if (t) {
            t->next = cb_stats_all;
            cb_stats_all = t;
        }
    }
    if (t)
        t->in_use = 1;
    pthread_mutex_unlock(&cb_stats_lock);
    if (!t)
        return &cb_stats_fallback;
    pthread_setspecific(cb_stats_key, t);
    cb_tls_stats = t;
    return t;
}

/* fork(): the lock is taken across it, so the child's copy is consistent; the
 * child keeps only the forking thread's block, zeroed, and frees the others
 * (their threads do not exist there). */
void cb_stats_atfork_prepare(void) { pthread_mutex_lock(&cb_stats_lock); }
void cb_stats_atfork_parent(void) { pthread_mutex_unlock(&cb_stats_lock); }
void cb_stats_atfork_child(void)
{
    pthread_mutex_init(&cb_stats_lock, NULL);
    for (struct cb_tstats *t = cb_stats_all; t; t = t->next) {
        memset(t->v, 0, sizeof t->v);
        memset(t->calls, 0, sizeof t->calls);
        memset(t->ended, 0, sizeof t->ended);
        t->in_use = t == cb_tls_stats;
    }
    memset(cb_stats_fallback.v, 0, sizeof cb_stats_fallback.v);
    memset(cb_stats_fallback.calls, 0, sizeof cb_stats_fallback.calls);
    memset(cb_stats_fallback.ended, 0, sizeof cb_stats_fallback.ended);
}

void cb_stat_max(enum cb_stat_id id, uint64_t value)
{
    struct cb_tstats *t = cb_stats_thread();
    if (value > __atomic_load_n(&t->v[id], __ATOMIC_RELAXED))
        __atomic_store_n(&t->v[id], value, __ATOMIC_RELAXED);
}

static void merge(uint64_t v[CB_STAT_COUNT], uint64_t calls[CB_HOOK_COUNT], uint64_t ended[CB_HOOK_COUNT])
{
    memset(v, 0, sizeof(uint64_t) * CB_STAT_COUNT);
    memset(calls, 0, sizeof(uint64_t) * CB_HOOK_COUNT);
    memset(ended, 0, sizeof(uint64_t) * CB_HOOK_COUNT);
    pthread_mutex_lock(&cb_stats_lock);
    for (const struct cb_tstats *t = cb_stats_all;; t = t->next) {
        if (!t)
            t = &cb_stats_fallback;
        /* other threads may be counting: their own counters, read relaxed (stats.h) */
        for (size_t i = 0; i < CB_STAT_COUNT; i++) {
            uint64_t x = __atomic_load_n(&t->v[i], __ATOMIC_RELAXED);
            v[i] = cb_stat_is_max[i] ? (x > v[i] ? x : v[i]) : v[i] + x;
        }
        for (size_t i = 0; i < CB_HOOK_COUNT; i++) {
            calls[i] += __atomic_load_n(&t->calls[i], __ATOMIC_RELAXED);
            ended[i] += __atomic_load_n(&t->ended[i], __ATOMIC_RELAXED);
        }
        if (t == &cb_stats_fallback)
            break;
    }
    pthread_mutex_unlock(&cb_stats_lock);
}

/* Appends to a fixed buffer, remembering the length the full text needs. */
struct cb_out { char *buf; size_t len, used; };
static void out(struct cb_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(struct cb_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->used < o->len ? o->len - o->used : 0;
    int n = vsnprintf(room ? o->buf + o->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->used += (size_t)n;
}

/* "name":count for each hooks.def row: every copy entry point (copies_only),
 * else every row whose count is not 0. */
static void json_per_hook(struct cb_out *o, const uint64_t *count, int copies_only)
{
    const char *sep = "";
    for (size_t i = 0; i < CB_HOOK_COUNT; i++)
        if (copies_only ? cb_hook_rows[i].is_copy : count[i] != 0) {
            out(o, "%s\"%s\":%llu", sep, cb_hook_rows[i].name, (unsigned long long)count[i]);
            sep = ",";
        }
}

/* The measured choice's table (choose.c, an upper layer: given at init). */
static size_t (*cb_choices_describe)(char *buf, size_t len, int json);
void cb_stats_set_choices(size_t (*describe)(char *buf, size_t len, int json)) { cb_choices_describe = describe; }

/* The net's functions (net.c): a slot's name is written once, before its
 * trampoline is handed out (which publishes it); its calls from any thread. */
static char cb_unknown_names[CB_NET_SLOTS][64];
static atomic_ullong cb_unknown_calls[CB_NET_SLOTS];

void cb_stat_unknown_name_set(int slot, const char *name)
{
    snprintf(cb_unknown_names[slot], sizeof cb_unknown_names[slot], "%s", name);
}
const char *cb_stat_unknown_name(int slot) { return cb_unknown_names[slot]; }
void cb_stat_unknown_call(int slot) { atomic_fetch_add_explicit(&cb_unknown_calls[slot], 1, memory_order_relaxed); }

/* Each named slot's name and calls (text rows, or JSON members). */
static void out_unknown(struct cb_out *o, int json)
{
    if (!json && cb_unknown_names[0][0])
        out(o, "  %-28s %14s  %s\n", "unknown driver function", "calls", "each submitted every run first (the net)");
    for (int i = 0; i < CB_NET_SLOTS && cb_unknown_names[i][0]; i++) {
        unsigned long long n = atomic_load_explicit(&cb_unknown_calls[i], memory_order_relaxed);
        if (json)
            out(o, "%s\"%s\":%llu", i ? "," : "", cb_unknown_names[i], n);
        else
            out(o, "  %-28s %14llu\n", cb_unknown_names[i], n);
    }
}

/* Appends its text (text or JSON) to o. */
static void out_choices(struct cb_out *o, int json)
{
    enum { CB_CHOICES_TEXT = 16384 };
    char *buf = cb_choices_describe ? malloc(CB_CHOICES_TEXT) : NULL;
    if (!buf)
        return;
    buf[0] = 0;
    cb_choices_describe(buf, CB_CHOICES_TEXT, json);
    if (*buf && !json)
        out(o, "  %-40s %8s  %-8s %s\n", "measured choice: class", "segments", "chosen", "ns a copy, by arm");
    out(o, "%s", buf);
    free(buf);
}

size_t cb_stats_json(char *buf, size_t len)
{
    uint64_t v[CB_STAT_COUNT], calls[CB_HOOK_COUNT], ended[CB_HOOK_COUNT];
    merge(v, calls, ended);
    struct cb_out o = {buf, len, 0};
    /* the host, for tools/cubatch-report's per-host sums: JSON-safe characters only */
    char host[HOST_NAME_MAX + 1] = "unknown-host";
    if (gethostname(host, sizeof host - 1) == 0)
        for (char *c = host; *c; c++)
            *c = isalnum((unsigned char)*c) || *c == '.' || *c == '-' || *c == '_' ? *c : '?';
    out(&o, "{\"cubatch\":\"%s\",\"pid\":%d,\"host\":\"%s\",\"batching\":%s,\"reason\":\"%s\",\"entry_points\":{",
        PACKAGE_VERSION, (int)getpid(), host, cb_batching ? "true" : "false", cb_batching_reason);
    json_per_hook(&o, calls, 1);
    out(&o, "},\"calls\":{");
    json_per_hook(&o, calls, 0);
    out(&o, "},\"runs_ended_by\":{");
    json_per_hook(&o, ended, 0);
    out(&o, "},\"counters\":{");
    for (size_t i = 0; i < CB_STAT_COUNT; i++)
        out(&o, "%s\"%s\":%llu", i ? "," : "", cb_stat_names[i], (unsigned long long)v[i]);
    out(&o, "},\"unknown_functions\":{");
    out_unknown(&o, 1);
    out(&o, "},\"choices\":[");
    out_choices(&o, 1);
    out(&o, "]}");
    if (len)
        buf[o.used < len ? o.used : len - 1] = 0;
    return o.used;
}

static void report_text(struct cb_out *o)
{
    uint64_t v[CB_STAT_COUNT], calls[CB_HOOK_COUNT], ended[CB_HOOK_COUNT];
    merge(v, calls, ended);
    out(o, "cubatch %s report (pid %d): batching %s (%s)\n", PACKAGE_VERSION, (int)getpid(),
        cb_batching ? "on" : "off", cb_batching_reason);
    out(o, "  %-28s %14s\n", "copy entry point", "calls");
    for (size_t i = 0; i < CB_HOOK_COUNT; i++)
        if (cb_hook_rows[i].is_copy && calls[i])
            out(o, "  %-28s %14llu\n", cb_hook_rows[i].name, (unsigned long long)calls[i]);
    int any = 0;
    for (size_t i = 0; i < CB_HOOK_COUNT; i++)
        any |= ended[i] != 0;
    if (any) {
        /* which calls of the program ended runs (a chunk of a growing run is not
         * an end; the timer's and exit's flushes are counted below only) */
        out(o, "  %-28s %14s\n", "runs ended by a call of", "runs");
        for (size_t i = 0; i < CB_HOOK_COUNT; i++)
            if (ended[i])
                out(o, "  %-28s %14llu\n", cb_hook_rows[i].name, (unsigned long long)ended[i]);
    }
    out(o, "  %-28s %14s  %s\n", "counter", "value", "meaning");
    for (size_t i = 0; i < CB_STAT_COUNT; i++)
        if (v[i] || i == CB_ST_copies || i == CB_ST_deferred || i == CB_ST_batches)
            out(o, "  %-28s %14llu  %s\n", cb_stat_names[i], (unsigned long long)v[i], cb_stat_docs[i]);
    if (v[CB_ST_batches])
        out(o, "  %-28s %14.1f  %s\n", "mean_batch", (double)v[CB_ST_batched_copies] / (double)v[CB_ST_batches],
            "copies per batch");
    out_unknown(o, 0);
    out_choices(o, 0);
}

size_t cb_stats_text(char *buf, size_t len)
{
    struct cb_out o = {buf, len, 0};
    report_text(&o);
    return o.used;
}
