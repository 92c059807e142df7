/* fifo.c - a report file (CUBATCH_STATS_FILE) that is a FIFO nobody reads
 * would block the program in open() at exit.  Found at start (the name has no
 * escapes and names a FIFO), it is opened without blocking: with no reader the
 * report goes to stderr, with one the descriptor stays open to the end (closing
 * it would hand that reader an end of file, and a reader that then leaves would
 * block the report's own open).  Not a rejected value (nothing the launcher
 * should refuse): a warning, once; config.c asks while it reads the options,
 * not in the launcher's check.  It calls only libc and log.c. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

static int cb_fifo_fd = -1; /* written here only */

int cb_fifo_refused(const char *path)
{
    struct stat st;
    if (!path || strchr(path, '%') || stat(path, &st) || !S_ISFIFO(st.st_mode) || cb_fifo_fd >= 0)
        return 0;
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
        cb_fifo_fd = fd;
        return 0;
    }
    char q[CB_QUOTE_LEN], e[128];
    if (errno == ENXIO)
        cb_warn("CUBATCH_STATS_FILE=%s is a FIFO that nobody is reading (the report would block the program at "
                "exit); the report goes to stderr",
                cb_quote(path, q, sizeof q));
    else
        cb_warn("CUBATCH_STATS_FILE=%s is a FIFO that cannot be opened (%s); the report goes to stderr",
                cb_quote(path, q, sizeof q), cb_errstr(errno, e, sizeof e));
    return 1;
}
