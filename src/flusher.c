/* flusher.c - process life: the bound on how long a run may wait (rule 7), and
 * flushing at exit and before fork (rule 10).
 *
 * Bounded waiting: a program that queues copies and then computes on the CPU
 * makes no call that would flush them, and without cubatch they would already be
 * running.  A background thread looks at the runs every CUBATCH_FLUSH_US / 10
 * (10 us by default; its timer slack is set to 1 us so that such a sleep is what
 * it says) and submits those that stopped growing (queue.c, cb_runs_timer_pass).
 * It keeps looking for CB_FL_LINGER_NS after the last run it saw, then waits on a
 * condition variable; only then does the copy path wake it, with one futex call
 * at the start of a run.  So a process that copies steadily pays no wake-up on
 * its own threads, and an idle one pays no timer.
 * A per-thread-stream run it flushes goes through the side stream (submit.c),
 * since only the owner can name that stream. */
#include "internal.h"

#include <signal.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t cb_fl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cb_fl_cond = PTHREAD_COND_INITIALIZER;
static atomic_int cb_fl_awake;   /* the thread is polling */
static int cb_fl_started;
static atomic_int cb_armed;      /* atexit/atfork registered */


uint64_t cb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define CB_FL_LINGER_NS 5000000u /* 5 ms of looks after the last run */

static void *flusher_main(void *arg)
{
    (void)arg;
#ifdef PR_SET_TIMERSLACK
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
#endif
    uint64_t nap = cb_opt(CB_OPT_flush_us) * 100u; /* flush_us / 10, in ns */
    struct timespec ts = {(time_t)(nap / 1000000000u), (long)(nap % 1000000000u)};
    uint64_t last_busy = cb_now_ns();
    for (;;) {
        uint64_t now = cb_now_ns();
        if (cb_runs_timer_pass(now)) {
            last_busy = now;
        } else if (now - last_busy > CB_FL_LINGER_NS) {
            /* Nothing for a while: wait for the copy path's kick.  awake is
             * cleared before the runs are counted again, and the copy path counts
             * its run before it reads awake, so one of the two sees the other. */
            pthread_mutex_lock(&cb_fl_lock);
            atomic_store(&cb_fl_awake, 0);
            if (!cb_runs_pending())
                while (!atomic_load(&cb_fl_awake))
                    pthread_cond_wait(&cb_fl_cond, &cb_fl_lock);
            atomic_store(&cb_fl_awake, 1);
            pthread_mutex_unlock(&cb_fl_lock);
            last_busy = cb_now_ns();
            continue;
        }
        nanosleep(&ts, NULL);
    }
    return NULL;
}

void cb_flusher_kick(void)
{
    if (CB_LIKELY(atomic_load(&cb_fl_awake))) /* seq_cst: pairs with the flusher's store */
        return;
    pthread_mutex_lock(&cb_fl_lock);
    if (!cb_fl_started) {
        pthread_t th;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread takes no signal of the program's */
        int err = pthread_create(&th, NULL, flusher_main, NULL);
        if (err == 0) {
            pthread_detach(th);
            cb_fl_started = 1;
        } else {
            char e[128];
            cb_warn("cannot start the flush timer thread (%s): runs wait for the program's next call",
                    cb_errstr(err, e, sizeof e));
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    atomic_store(&cb_fl_awake, 1);
    pthread_cond_signal(&cb_fl_cond);
    pthread_mutex_unlock(&cb_fl_lock);
}

static void at_exit(void) { cb_queue_exit(); }

static void fork_prepare(void)
{
    pthread_mutex_lock(&cb_fl_lock);
    cb_queue_atfork_prepare();
}
static void fork_parent(void)
{
    cb_queue_atfork_parent();
    pthread_mutex_unlock(&cb_fl_lock);
}
static void fork_child(void)
{
    cb_queue_atfork_child();
    /* no thread survives fork: the timer starts again on the child's first run */
    cb_fl_started = 0;
    atomic_store(&cb_fl_awake, 0);
    pthread_mutex_init(&cb_fl_lock, NULL);
    pthread_cond_init(&cb_fl_cond, NULL);
}

/* Registered at the first deferred copy, so after the CUDA runtime's own exit
 * handlers (atexit runs last-registered first): our flush runs while the
 * driver and contexts are still alive. */
void cb_lifecycle_arm(void)
{
    if (CB_LIKELY(atomic_load_explicit(&cb_armed, memory_order_relaxed)))
        return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&cb_armed, &expected, 1))
        return;
    atexit(at_exit);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}
