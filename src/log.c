/* log.c - every message cubatch prints goes through cb_log: one prefix, a stack
 * buffer (no allocation inside a hook), one write(2) per line, a recursion guard
 * and a cap, so a misbehaving program cannot make cubatch flood its stderr. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#define CB_LOG_CAP 100 /* warnings printed at most; then one line saying so */

static atomic_int cb_log_printed;
static CB_TLS int cb_log_busy;

void cb_log(int level, const char *fmt, ...)
{
    if ((uint64_t)level > cb_opt(CB_OPT_log) || cb_log_busy)
        return;
    int n = atomic_fetch_add(&cb_log_printed, 1);
    if (n > CB_LOG_CAP)
        return;
    cb_log_busy = 1;
    char buf[512];
    static const char *const prefix[] = {"", "warning: ", "", "debug: "};
    int off = snprintf(buf, sizeof buf, "cubatch: %s", prefix[level & 3]);
    if (n == CB_LOG_CAP) {
        off += snprintf(buf + off, sizeof buf - (size_t)off, "further messages suppressed");
    } else {
        va_list ap;
        va_start(ap, fmt);
        off += vsnprintf(buf + off, sizeof buf - (size_t)off, fmt, ap);
        va_end(ap);
    }
    if (off >= (int)sizeof buf - 1)
        off = (int)sizeof buf - 2;
    buf[off++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, (size_t)off);
    (void)w;
    cb_log_busy = 0;
}
