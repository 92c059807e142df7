/* report.c - the report at exit (CUBATCH_STATS, CUBATCH_STATS_FILE): the
 * counters as stats.c prints them, written where the user asked.
 *
 * The report file may hold %p (process id) and %h (host name), so that many
 * processes each leave their own report.  A report is never torn: it is written
 * to a temporary file next to the target and renamed into place, so a reader
 * finds the previous report or the new one, whole; processes sharing one name
 * leave the last one's report.  A target that exists and is not a regular file
 * (a terminal, a pipe, /dev/stderr) is written directly, in one write.  When
 * the report cannot be written there, a warning says why and the report goes
 * to stderr instead: it is never lost without a word. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
        size_t used;
        if (mode == CB_STATS_JSON) {
            used = cb_stats_json(buf, cap);
            if (used + 2 <= cap) {
                buf[used++] = '\n';
                *n = used;
                return buf;
            }
        } else {
            used = cb_stats_text(buf, cap);
            if (used < cap) {
                *n = used;
                return buf;
            }
        }
        free(buf);
        cap = used + 64; /* counters do not move at exit; one more pass suffices */
    }
    return NULL;
}

static void report_at_exit(void)
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

/* At initialisation, whether or not a copy is ever deferred.  Registered
 * before the final flush (atexit runs in reverse order), so the report is
 * written after everything else of cubatch's at exit. */
void cb_report_init(void)
{
    if (cb_opt(CB_OPT_stats) != CB_STATS_OFF)
        atexit(report_at_exit);
}
