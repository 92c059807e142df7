/* log.c - every message cubatch prints goes through cb_log: one prefix, a stack
 * buffer (no allocation inside a hook), one write(2) per line, a recursion guard
 * and a cap, so a misbehaving program cannot make cubatch flood its stderr.
 *
 * One rule for what each CUBATCH_LOG level shows, applied to every message:
 *   0  nothing
 *   1  warnings: a value was rejected, something asked for cannot be honoured, a
 *      report could not be written where asked; the user should act on them
 *   2  notices: decisions cubatch made on its own (batching on or off and why,
 *      the option values in use, a batch the driver refused and was replayed)
 *   3  debug
 * Only warnings count towards the cap: notices and debug lines are asked for. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CB_LOG_CAP 100 /* warnings printed at most; then one line saying so */

static atomic_int cb_log_warnings;
static CB_TLS int cb_log_busy;
/* Warnings until CUBATCH_LOG is read (config.c reads it before anything else). */
static atomic_uint cb_log_level = CB_LOG_WARN;

void cb_log_set_level(unsigned level) { atomic_store_explicit(&cb_log_level, level, memory_order_relaxed); }

static int cb_log_shown(int level)
{
    return level >= CB_LOG_WARN && (unsigned)level <= atomic_load_explicit(&cb_log_level, memory_order_relaxed);
}

void cb_log(int level, const char *fmt, ...)
{
    if (!cb_log_shown(level) || cb_log_busy)
        return;
    int n = 0;
    if (level == CB_LOG_WARN && (n = atomic_fetch_add(&cb_log_warnings, 1)) > CB_LOG_CAP)
        return;
    cb_log_busy = 1;
    char buf[512];
    static const char *const prefix[] = {"", "warning: ", "", "debug: "};
    int off = snprintf(buf, sizeof buf, "cubatch: %s", prefix[level & 3]);
    if (level == CB_LOG_WARN && n == CB_LOG_CAP) {
        off += snprintf(buf + off, sizeof buf - (size_t)off, "further warnings suppressed");
    } else {
        va_list ap;
        va_start(ap, fmt);
        off += vsnprintf(buf + off, sizeof buf - (size_t)off, fmt, ap);
        va_end(ap);
    }
    if (off >= (int)sizeof buf - 1) {
        /* Cut, and say so: a line that just stops reads as a whole message. */
        off = (int)sizeof buf - 5;
        memcpy(buf + off, "...", 3);
        off += 3;
    }
    buf[off++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, (size_t)off);
    (void)w;
    cb_log_busy = 0;
}

#ifdef CB_DEBUG
/* CB_ASSERT's failure (internal.h): whatever CUBATCH_LOG says, one line on
 * stderr, written from the stack with one write(2), then abort. */
void cb_assert_failed(const char *cond, const char *file, int line)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "cubatch: assertion failed: %s (%s:%d)\n", cond, file, line);
    if (n < 0 || n >= (int)sizeof buf) {
        n = (int)sizeof buf - 1;
        buf[n - 1] = '\n';
    }
    ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
    (void)w;
    abort();
}
#endif

/* A value from the environment, as a message may show it: in double quotes,
 * control characters, quotes and backslashes escaped (a newline or an escape
 * sequence in a value must not forge lines or colours on the terminal), at most
 * CB_QUOTE_SHOWN characters of it, then "..." and its length. */
#define CB_QUOTE_SHOWN 64
const char *cb_quote(const char *s, char *buf, size_t len) { return cb_quote_n(s, s ? strlen(s) : 0, buf, len); }

const char *cb_quote_n(const char *s, size_t n, char *buf, size_t len)
{
    size_t o = 0, i = 0;
    if (len < 8) {
        if (len)
            buf[0] = 0;
        return buf;
    }
    buf[o++] = '"';
    for (; i < n && i < CB_QUOTE_SHOWN && o + 8 < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c == '\n' || c == '\t' || c == '\r') {
            buf[o++] = '\\';
            buf[o++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        } else if (c < 0x20 || c == 0x7f) {
            o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o++] = '"';
    buf[o] = 0;
    if (i < n)
        snprintf(buf + o, len - o, "... (%zu bytes)", n);
    return buf;
}

const char *cb_errstr(int err, char *buf, size_t len)
{
    /* the GNU strerror_r: thread-safe, returns the text (maybe not in buf) */
    return strerror_r(err, buf, len);
}
