/* timer.c - the bound on how long a run may wait (rule 7).
 *
 * A program that queues copies and then computes on the CPU makes no call that
 * would flush them, and without cubatch they would already be running.  A
 * background thread looks at the runs every CUBATCH_FLUSH_US / 10 (10 us by
 * default; its timer slack is set to 1 us so that such a sleep is what it says)
 * and submits those that stopped growing (flush.c, cb_flush_timer_look).  It
 * keeps looking for CB_TIMER_LINGER_NS after the last run it saw, then waits on
 * a condition variable; only then does the copy path wake it, with one futex
 * call at the start of a run.  So a process that copies steadily pays no
 * wake-up on its own threads, and an idle one pays no timer.  A per-thread-stream
 * run it flushes goes through the side stream (ptds.c), since only the owner can
 * name that stream. */
#include "internal.h"

#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

static pthread_mutex_t cb_timer_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cb_timer_cond = PTHREAD_COND_INITIALIZER;
static atomic_int cb_timer_awake; /* the thread is looking */
static int cb_timer_started;

#define CB_TIMER_LINGER_NS 5000000u /* 5 ms of looks after the last run */

static void *timer_main(void *arg)
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
        if (cb_flush_timer_look(now)) {
            last_busy = now;
        } else if (now - last_busy > CB_TIMER_LINGER_NS) {
            /* Nothing for a while: wait for the copy path's kick.  awake is
             * cleared before the runs are counted again, and the copy path counts
             * its run before it reads awake, so one of the two sees the other. */
            pthread_mutex_lock(&cb_timer_mutex);
            atomic_store(&cb_timer_awake, 0);
            if (!cb_flush_pending())
                while (!atomic_load(&cb_timer_awake))
                    pthread_cond_wait(&cb_timer_cond, &cb_timer_mutex);
            atomic_store(&cb_timer_awake, 1);
            pthread_mutex_unlock(&cb_timer_mutex);
            last_busy = cb_now_ns();
            continue;
        }
        nanosleep(&ts, NULL);
    }
    return NULL;
}

void cb_timer_kick(void)
{
    if (CB_LIKELY(atomic_load(&cb_timer_awake))) /* seq_cst: pairs with the thread's store */
        return;
    pthread_mutex_lock(&cb_timer_mutex);
    if (!cb_timer_started) {
        pthread_t th;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread takes no signal of the program's */
        int err = pthread_create(&th, NULL, timer_main, NULL);
        if (err == 0) {
            pthread_detach(th);
            cb_timer_started = 1;
        } else {
            char e[128];
            cb_warn("cannot start the flush timer thread (%s): runs wait for the program's next call",
                    cb_errstr(err, e, sizeof e));
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    atomic_store(&cb_timer_awake, 1);
    pthread_cond_signal(&cb_timer_cond);
    pthread_mutex_unlock(&cb_timer_mutex);
}

void cb_timer_atfork_prepare(void) { pthread_mutex_lock(&cb_timer_mutex); }
void cb_timer_atfork_parent(void) { pthread_mutex_unlock(&cb_timer_mutex); }

void cb_timer_atfork_child(void)
{
    /* no thread survives fork: the timer starts again on the child's first run */
    cb_timer_started = 0;
    atomic_store(&cb_timer_awake, 0);
    pthread_mutex_init(&cb_timer_mutex, NULL);
    pthread_cond_init(&cb_timer_cond, NULL);
}
