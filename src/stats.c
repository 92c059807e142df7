/* stats.c - counters from stats.def, kept per thread so the copy path touches no
 * shared cache line, merged only when someone asks (exit report, JSON API).
 * A thread's block is recycled, counts intact, when the thread exits. */
#include "internal.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

CB_TLS struct cb_tstats *cb_tls_stats;

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
static const unsigned char cb_stat_is_max[CB_STAT_COUNT] = {
#define CB_STAT(name, kind, doc) (sizeof(#kind) == 4 && #kind[0] == 'M'),
#include "stats.def"
#undef CB_STAT
};

static void thread_exit(void *p)
{
    struct cb_tstats *t = p;
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

void cb_stat_max(enum cb_stat_id id, uint64_t value)
{
    struct cb_tstats *t = cb_stats_thread();
    if (value > t->v[id])
        t->v[id] = value;
}

static void merge(uint64_t v[CB_STAT_COUNT], uint64_t calls[CB_HOOK_COUNT])
{
    memset(v, 0, sizeof(uint64_t) * CB_STAT_COUNT);
    memset(calls, 0, sizeof(uint64_t) * CB_HOOK_COUNT);
    pthread_mutex_lock(&cb_stats_lock);
    for (const struct cb_tstats *t = cb_stats_all;; t = t->next) {
        if (!t)
            t = &cb_stats_fallback;
        for (size_t i = 0; i < CB_STAT_COUNT; i++)
            v[i] = cb_stat_is_max[i] ? (t->v[i] > v[i] ? t->v[i] : v[i]) : v[i] + t->v[i];
        for (size_t i = 0; i < CB_HOOK_COUNT; i++)
            calls[i] += t->calls[i];
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

size_t cb_stats_json(char *buf, size_t len)
{
    uint64_t v[CB_STAT_COUNT], calls[CB_HOOK_COUNT];
    merge(v, calls);
    struct cb_out o = {buf, len, 0};
    out(&o, "{\"cubatch\":\"%s\",\"batching\":%s,\"reason\":\"%s\",\"entry_points\":{", PACKAGE_VERSION,
        cb_batching ? "true" : "false", cb_batching_reason);
    const char *sep = "";
    for (size_t i = 0; i < CB_HOOK_COUNT; i++)
        if (cb_hooks[i].is_copy) {
            out(&o, "%s\"%s\":%llu", sep, cb_hooks[i].name, (unsigned long long)calls[i]);
            sep = ",";
        }
    out(&o, "},\"calls\":{");
    sep = "";
    for (size_t i = 0; i < CB_HOOK_COUNT; i++)
        if (calls[i]) {
            out(&o, "%s\"%s\":%llu", sep, cb_hooks[i].name, (unsigned long long)calls[i]);
            sep = ",";
        }
    out(&o, "},\"counters\":{");
    for (size_t i = 0; i < CB_STAT_COUNT; i++)
        out(&o, "%s\"%s\":%llu", i ? "," : "", cb_stat_names[i], (unsigned long long)v[i]);
    out(&o, "}}");
    if (len)
        buf[o.used < len ? o.used : len - 1] = 0;
    return o.used;
}

static void report_text(struct cb_out *o)
{
    uint64_t v[CB_STAT_COUNT], calls[CB_HOOK_COUNT];
    merge(v, calls);
    out(o, "cubatch %s report (pid %d): batching %s (%s)\n", PACKAGE_VERSION, (int)getpid(),
        cb_batching ? "on" : "off", cb_batching_reason);
    out(o, "  %-28s %14s\n", "copy entry point", "calls");
    for (size_t i = 0; i < CB_HOOK_COUNT; i++)
        if (cb_hooks[i].is_copy && calls[i])
            out(o, "  %-28s %14llu\n", cb_hooks[i].name, (unsigned long long)calls[i]);
    out(o, "  %-28s %14s  %s\n", "counter", "value", "meaning");
    for (size_t i = 0; i < CB_STAT_COUNT; i++)
        if (v[i] || i == CB_ST_copies || i == CB_ST_deferred || i == CB_ST_batches)
            out(o, "  %-28s %14llu  %s\n", cb_stat_names[i], (unsigned long long)v[i], cb_stat_docs[i]);
    if (v[CB_ST_batches])
        out(o, "  %-28s %14.1f  %s\n", "mean_batch", (double)v[CB_ST_batched_copies] / (double)v[CB_ST_batches],
            "copies per batch");
}

void cb_stats_report(void)
{
    uint64_t mode = cb_opt(CB_OPT_stats);
    if (mode == CB_STATS_OFF)
        return;
    size_t cap = 16384;
    char *buf = malloc(cap);
    if (!buf)
        return;
    struct cb_out o = {buf, cap, 0};
    if (mode == CB_STATS_JSON) {
        o.used = cb_stats_json(buf, cap - 1);
        if (o.used > cap - 2)
            o.used = cap - 2;
        buf[o.used++] = '\n';
    } else {
        report_text(&o);
        if (o.used > cap)
            o.used = cap;
    }
    int fd = STDERR_FILENO;
    const char *path = cb_opt_str(CB_OPT_stats_file);
    if (path && *path) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            cb_warn("cannot open CUBATCH_STATS_FILE=\"%s\"; writing the report to stderr", path);
            fd = STDERR_FILENO;
        }
    }
    for (size_t off = 0; off < o.used;) {
        ssize_t w = write(fd, buf + off, o.used - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    if (fd != STDERR_FILENO)
        close(fd);
    free(buf);
}
