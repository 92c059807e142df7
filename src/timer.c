/* timer.c - the bound on how long a run may wait (rule 7), at no cost to a
 * program that is issuing copies.
 *
 * A program that queues copies and then computes on the CPU makes no call that
 * would flush them, and without cubatch they would already be running.  So a
 * thread looks at the runs when one is due (look.c, cb_look_runs, says
 * what a look does and when the next is due), and sleeps otherwise: it blocks on
 * a timerfd, which the copy path arms only when a run opens on a quiet stream
 * and no earlier look is due (one system call per burst, none per copy; it does
 * not wake the thread).  Between looks the thread does not run, and it runs
 * under SCHED_IDLE: a look never takes a core from a thread of the program
 * (docs/design.md rule 7 says what was measured).
 *
 * Created at the first arming; a process that never defers a copy has none.  A
 * per-thread-stream run it flushes goes through the side stream (ptds.c), since
 * only the owner can name that stream.  Tests replace the clock of the timerfd
 * with a virtual one (tests/shims/fakeclock.c). */
#include "run.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/timerfd.h>
#include <unistd.h>

static int cb_timer_fd = -1;
/* The armed look (0: disarmed).  Written under cb_timer_mu, a leaf lock (store.c):
 * copy paths of several runs arm it at once; read without it only to skip the
 * lock when an earlier look is due already. */
static _Atomic uint64_t cb_timer_due;
static pthread_mutex_t cb_timer_mu = PTHREAD_MUTEX_INITIALIZER;
static int cb_timer_started; /* under cb_timer_mu */

static void set_due(uint64_t when)
{
    struct itimerspec it = {{0, 0}, {(time_t)(when / 1000000000u), (long)(when % 1000000000u)}};
    atomic_store(&cb_timer_due, when);
    timerfd_settime(cb_timer_fd, TFD_TIMER_ABSTIME, &it, NULL); /* when 0: disarmed */
}

static void *timer_main(void *arg)
{
    (void)arg;
    /* Never ahead of the program's threads for a core: a look runs on a core
     * that is otherwise idle (on a machine with one to spare, at once).  A
     * process pinned to one core that keeps it busy gets its looks late, when
     * the scheduler gives the thread its small share; its next driver call
     * flushes in any case. */
    struct sched_param idle = {0};
    int err = pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
    if (err) {
        char e[128];
        cb_log(CB_LOG_NOTICE, "the flush timer keeps the ordinary priority (%s)", cb_errstr(err, e, sizeof e));
    }
    for (;;) {
        uint64_t expirations;
        ssize_t n = read(cb_timer_fd, &expirations, sizeof expirations);
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof expirations)
            return NULL; /* the descriptor is gone (fork child closed it): nothing to look at */
        /* Runs armed during the look set the due time themselves; the look's
         * own next time replaces it only when earlier.  Nothing is held while
         * the look takes the runs' locks. */
        atomic_store(&cb_timer_due, 0);
        uint64_t next = cb_look_runs(cb_now_ns());
        pthread_mutex_lock(&cb_timer_mu);
        uint64_t due = atomic_load(&cb_timer_due);
        if (next && (!due || next < due))
            set_due(next);
        pthread_mutex_unlock(&cb_timer_mu);
    }
}

/* The thread, once.  It takes no signal of the program's. */
static int start(void)
{
    cb_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (cb_timer_fd < 0) {
        char e[128];
        cb_warn("cannot create the flush timer (%s): runs wait for the program's next call",
                cb_errstr(errno, e, sizeof e));
        return -1;
    }
    pthread_t th;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&th, NULL, timer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        char e[128];
        cb_warn("cannot start the flush timer thread (%s): runs wait for the program's next call",
                cb_errstr(err, e, sizeof e));
        close(cb_timer_fd);
        cb_timer_fd = -1;
        return -1;
    }
    pthread_detach(th);
    return 0;
}

void cb_timer_arm(uint64_t when)
{
    uint64_t due = atomic_load(&cb_timer_due);
    if (due && due <= when)
        return; /* an earlier look is due: it will schedule this one */
    pthread_mutex_lock(&cb_timer_mu);
    due = atomic_load(&cb_timer_due);
    if (!cb_timer_started) {
        cb_timer_started = 1; /* once, even when it failed: the warning is said once */
        if (start()) {
            pthread_mutex_unlock(&cb_timer_mu);
            return;
        }
    }
    if (cb_timer_fd >= 0 && !(due && due <= when))
        set_due(when);
    pthread_mutex_unlock(&cb_timer_mu);
}

void cb_timer_atfork_prepare(void) { pthread_mutex_lock(&cb_timer_mu); }
void cb_timer_atfork_parent(void) { pthread_mutex_unlock(&cb_timer_mu); }

void cb_timer_atfork_child(void)
{
    /* no thread survives fork: the timer starts again at the child's first run */
    if (cb_timer_fd >= 0)
        close(cb_timer_fd);
    cb_timer_fd = -1;
    atomic_store(&cb_timer_due, 0);
    cb_timer_started = 0;
    pthread_mutex_init(&cb_timer_mu, NULL);
}
