/* stats.c - counters from stats.def, kept per thread so the copy path touches no
 * shared cache line, merged only when someone asks (exit report, JSON API).
 * A thread's block is recycled, counts intact, when the thread exits.  A child
 * of fork() starts from zero: each process reports its own work.
 *
 * The report file (CUBATCH_STATS_FILE) may hold %p (process id) and %h (host
 * name), so that many processes each leave their own report.  A report is never
 * torn: it is written to a temporary file next to the target and renamed into
 * place, so a reader finds the previous report or the new one, whole; processes
 * sharing one name leave the last one's report.  A target that exists and is not
 * a regular file (a terminal, a pipe, /dev/stderr) is written directly, in one
 * write.  When the report cannot be written there, a warning says why and the
 * report goes to stderr instead: it is never lost without a word. */
#include "internal.h"
#include "stats.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
/* The copies_* counters are indexed by direction. */
_Static_assert(CB_ST_copies_d2h == CB_ST_copies_h2d + CB_D_D2H && CB_ST_copies_d2d == CB_ST_copies_h2d + CB_D_D2D &&
                   CB_ST_copies_h2h == CB_ST_copies_h2d + CB_D_H2H,
               "stats.def's copies_* rows follow enum cb_direction");

enum cb_stat_id cb_flush_stat(enum cb_flush_why why) { return cb_why_stat[why]; }

/* Said in the report's first line (set at initialisation). */
static int cb_batching_on;
static const char *cb_batching_reason = "not started: no intercepted CUDA call yet";

void cb_stats_set_batching(int on, const char *reason)
{
    cb_batching_on = on;
    cb_batching_reason = reason;
}

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

static void cb_stats_report(void);
static void report_at_exit(void) { cb_stats_report(); }

/* At initialisation, whether or not a copy is ever deferred.  The report is
 * registered now, before the final flush (atexit runs in reverse order), so it
 * is written after everything else of cubatch's at exit. */
void cb_stats_init(void)
{
    if (cb_opt(CB_OPT_stats) != CB_STATS_OFF)
        atexit(report_at_exit);
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
        PACKAGE_VERSION, (int)getpid(), host, cb_batching_on ? "true" : "false", cb_batching_reason);
    json_per_hook(&o, calls, 1);
    out(&o, "},\"calls\":{");
    json_per_hook(&o, calls, 0);
    out(&o, "},\"runs_ended_by\":{");
    json_per_hook(&o, ended, 0);
    out(&o, "},\"counters\":{");
    for (size_t i = 0; i < CB_STAT_COUNT; i++)
        out(&o, "%s\"%s\":%llu", i ? "," : "", cb_stat_names[i], (unsigned long long)v[i]);
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
        cb_batching_on ? "on" : "off", cb_batching_reason);
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
    out_choices(o, 0);
}

/* The file name for this process; -1 when it does not fit. */
static int stats_path(const char *pattern, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = pattern; *p; p++) {
        char piece[HOST_NAME_MAX + 2];
        if (*p != '%') {
            piece[0] = *p;
            piece[1] = 0;
        } else if (*++p == 'p') {
            snprintf(piece, sizeof piece, "%d", (int)getpid());
        } else if (*p == 'h') {
            if (gethostname(piece, sizeof piece - 1))
                snprintf(piece, sizeof piece, "unknown-host");
            piece[sizeof piece - 1] = 0;
        } else {
            piece[0] = '%'; /* "%%"; anything else was refused at start */
            piece[1] = 0;
        }
        size_t pl = strlen(piece);
        if (o + pl >= len)
            return -1;
        memcpy(out + o, piece, pl);
        o += pl;
    }
    out[o] = 0;
    return 0;
}

static int write_all(int fd, const char *buf, size_t n)
{
    for (size_t off = 0; off < n;) {
        ssize_t w = write(fd, buf + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        off += (size_t)w;
    }
    return 0;
}

/* Open, write, close; an errno, or 0.  Opened without blocking: a FIFO that
 * nobody reads (one the start check could not see: created later, or named
 * through %p or %h) then fails with ENXIO instead of holding the program at
 * exit forever; once open, writes block as usual (a reader is there). */
static int write_direct(const char *path, const char *buf, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0)
        return errno;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int err = errno;
        close(fd);
        return err;
    }
    int err = write_all(fd, buf, n);
    if (close(fd) && !err)
        err = errno;
    return err;
}

/* A temporary file in the target's directory (hidden, so that a glob for the
 * reports does not match it), renamed over the target; an errno, or 0.
 * *no_temp is set when the directory would not take the temporary file. */
static int write_replace(const char *path, const char *buf, size_t n, int *no_temp)
{
    char tmp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int dl = slash ? (int)(slash - path) + 1 : 0;
    int fd = -1;
    *no_temp = 0;
    for (unsigned k = 0; fd < 0 && k < 100; k++) {
        if (snprintf(tmp, sizeof tmp, "%.*s.%s.%d.%u.tmp", dl, path, path + dl, (int)getpid(), k) >= (int)sizeof tmp)
            return ENAMETOOLONG;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) {
            *no_temp = 1;
            return errno;
        }
    }
    if (fd < 0)
        return EEXIST;
    int err = write_all(fd, buf, n);
    if (close(fd) && !err)
        err = errno; /* a network file system may report a failed write only here */
    if (!err && rename(tmp, path))
        err = errno;
    if (err)
        unlink(tmp);
    return err;
}

/* Write the report where CUBATCH_STATS_FILE says; 0, or -1 after a warning. */
static int write_report_file(const char *pattern, const char *buf, size_t n)
{
    char path[PATH_MAX], q[CB_QUOTE_LEN], e[128];
    int err, fifo = 0;
    if (stats_path(pattern, path, sizeof path)) {
        err = ENAMETOOLONG;
        snprintf(path, sizeof path, "%s", pattern);
    } else {
        struct stat st;
        int exists = stat(path, &st) == 0;
        if (exists && !S_ISREG(st.st_mode)) {
            fifo = S_ISFIFO(st.st_mode);
            err = write_direct(path, buf, n); /* a terminal, a pipe, a device */
        } else {
            /* a link to a report is updated where it points */
            char *real = exists ? realpath(path, NULL) : NULL;
            int no_temp;
            err = write_replace(real ? real : path, buf, n, &no_temp);
            if (err && no_temp && exists && !access(path, W_OK))
                err = write_direct(path, buf, n); /* a directory we may not create in */
            free(real);
        }
    }
    if (!err)
        return 0;
    if (fifo && err == ENXIO)
        cb_warn("cannot write the report to %s: a FIFO that nobody is reading; it follows on stderr",
                cb_quote(path, q, sizeof q));
    else
        cb_warn("cannot write the report to %s: %s; it follows on stderr", cb_quote(path, q, sizeof q),
                cb_errstr(err, e, sizeof e));
    return -1;
}

/* The report as text or JSON, in a buffer of the right size (NULL: no memory). */
static char *report_text_alloc(uint64_t mode, size_t *n)
{
    size_t cap = 16384;
    for (int pass = 0; pass < 2; pass++) {
        char *buf = malloc(cap);
        if (!buf)
            return NULL;
        struct cb_out o = {buf, cap, 0};
        if (mode == CB_STATS_JSON) {
            o.used = cb_stats_json(buf, cap);
            if (o.used + 2 <= cap) {
                buf[o.used++] = '\n';
                *n = o.used;
                return buf;
            }
        } else {
            report_text(&o);
            if (o.used < cap) {
                *n = o.used;
                return buf;
            }
        }
        free(buf);
        cap = o.used + 64; /* counters do not move at exit; one more pass suffices */
    }
    return NULL;
}

static void cb_stats_report(void)
{
    uint64_t mode = cb_opt(CB_OPT_stats);
    if (mode == CB_STATS_OFF)
        return;
    size_t n = 0;
    char *buf = report_text_alloc(mode, &n);
    if (!buf) {
        cb_warn("cannot allocate memory for the report");
        return;
    }
    const char *pattern = cb_opt_str(CB_OPT_stats_file);
    if (!pattern || !*pattern || write_report_file(pattern, buf, n))
        write_all(STDERR_FILENO, buf, n);
    free(buf);
}
