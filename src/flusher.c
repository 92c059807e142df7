/* flusher.c - process life: the bound on how long a run may wait (rule 7), and
 * flushing at exit and before fork (rule 10).
 *
 * Bounded waiting: a program that queues copies and then computes on the CPU
 * makes no call that would flush them, and without cubatch they would already be
 * running.  A background thread wakes every CUBATCH_FLUSH_US/2 while runs exist
 * and submits any run older than CUBATCH_FLUSH_US (default 200 us).  It sleeps
 * indefinitely once runs have stayed empty for a while, so an idle process pays
 * nothing, and the copy path signals it only when it is asleep (rare), not per
 * copy.  A per-thread-stream run it flushes goes through the side stream
 * (submit.c), since only the owner can name that stream. */
#include "internal.h"

#include <signal.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t cb_fl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cb_fl_cond = PTHREAD_COND_INITIALIZER;
static atomic_int cb_fl_awake;   /* the thread is polling */
static int cb_fl_started;
static atomic_int cb_armed;      /* atexit/atfork registered */

#define CB_FL_IDLE_ROUNDS 500    /* empty polls before sleeping for good */

uint64_t cb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *flusher_main(void *arg)
{
    (void)arg;
    unsigned idle = 0;
    for (;;) {
        pthread_mutex_lock(&cb_fl_lock);
        while (!atomic_load(&cb_fl_awake))
            pthread_cond_wait(&cb_fl_cond, &cb_fl_lock);
        pthread_mutex_unlock(&cb_fl_lock);
        uint64_t bound = cb_opt(CB_OPT_flush_us) * 1000u;
        uint64_t nap = bound / 2 ? bound / 2 : 1000;
        struct timespec ts = {(time_t)(nap / 1000000000u), (long)(nap % 1000000000u)};
        nanosleep(&ts, NULL);
        uint64_t next;
        if (cb_runs_timer_pass(cb_now_ns(), bound, &next)) {
            idle = 0;
        } else if (++idle >= CB_FL_IDLE_ROUNDS) {
            idle = 0;
            atomic_store(&cb_fl_awake, 0);
        }
    }
    return NULL;
}

void cb_flusher_kick(void)
{
    if (CB_LIKELY(atomic_load_explicit(&cb_fl_awake, memory_order_relaxed)))
        return;
    pthread_mutex_lock(&cb_fl_lock);
    if (!cb_fl_started) {
        pthread_t th;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread takes no signal of the program's */
        if (pthread_create(&th, NULL, flusher_main, NULL) == 0) {
            pthread_detach(th);
            cb_fl_started = 1;
        } else {
            cb_warn("cannot start the flush timer thread: runs wait for the program's next call");
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
