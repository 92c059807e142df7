/* fakeclock.c - a preloadable virtual CLOCK_MONOTONIC, so that every rule of
 * cubatch that reads a clock (the pace of copies, the idle gap and age of a run)
 * is tested the same on an idle or a busy machine.
 *
 * Preloaded after libcubatch, it answers clock_gettime(CLOCK_MONOTONIC) (and its
 * _RAW and _COARSE twins) from a counter that moves only when the test program
 * calls fakeclock_advance_ns(), found with dlsym(RTLD_DEFAULT, ...).  nanosleep
 * and clock_nanosleep on that clock wait until the counter has moved far enough:
 * a thread that sleeps (cubatch's timer) wakes exactly when virtual time says so,
 * however slowly the machine runs.  A timerfd on that clock is simulated too: a
 * read of it blocks until virtual time reaches its deadline, and
 * fakeclock_advance_ns() returns only once the thread that read an expiration
 * has done with it and waits in read() again (or after 5 s of real time): so the
 * look cubatch's timer thread takes at a deadline happens exactly at that
 * virtual time, before the test program goes on.  Other clocks are the real
 * ones. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t fc_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fc_cv = PTHREAD_COND_INITIALIZER;
static uint64_t fc_now = 1000000000u; /* virtual time starts at 1 s */

static int virtual_clock(clockid_t id)
{
    return id == CLOCK_MONOTONIC || id == CLOCK_MONOTONIC_RAW || id == CLOCK_MONOTONIC_COARSE;
}

static uint64_t now_ns(void)
{
    pthread_mutex_lock(&fc_mu);
    uint64_t t = fc_now;
    pthread_mutex_unlock(&fc_mu);
    return t;
}

/* Virtual timerfds (the descriptor is an eventfd, for a real number): a
 * deadline (0: disarmed), expirations not yet read, and the reader's state.
 * fc_mu held. */
#define FC_TIMERS 16
struct fc_timer {
    int fd;
    uint64_t deadline, interval;
    uint64_t fired;     /* expirations not yet read */
    int reader_waiting; /* a thread is blocked in read() on it */
    uint64_t reads;     /* expirations handed out */
};
static struct fc_timer fc_timers[FC_TIMERS];
static int fc_ntimers;

/* fork: the child has none of the parent's other threads, so it must not wait
 * for their state (a waiter on fc_cv, such as the parent's timer thread blocked
 * in read(), would make a broadcast in the child wait forever): the lock is
 * held across fork, and the child makes it and the condition anew. */
static void fc_prepare(void) { pthread_mutex_lock(&fc_mu); }
static void fc_parent(void) { pthread_mutex_unlock(&fc_mu); }
static void fc_child(void)
{
    pthread_mutex_init(&fc_mu, NULL);
    pthread_cond_init(&fc_cv, NULL);
    for (int i = 0; i < fc_ntimers; i++)
        fc_timers[i].reader_waiting = 0;
}
__attribute__((constructor)) static void fc_init(void) { pthread_atfork(fc_prepare, fc_parent, fc_child); }

static struct fc_timer *timer_of(int fd)
{
    for (int i = 0; i < fc_ntimers; i++)
        if (fc_timers[i].fd == fd)
            return &fc_timers[i];
    return NULL;
}

/* Fire every timer that is due; remember their reads in before[] (by index). */
static int fire_due(uint64_t before[FC_TIMERS])
{
    int fired = 0;
    for (int i = 0; i < fc_ntimers; i++) {
        struct fc_timer *t = &fc_timers[i];
        before[i] = UINT64_MAX;
        if (!t->deadline || t->deadline > fc_now)
            continue;
        t->fired++;
        t->deadline = t->interval ? fc_now + t->interval : 0;
        before[i] = t->reads;
        fired = 1;
    }
    return fired;
}

/* Until each fired timer's reader took its expiration and came back to read(). */
static void settle(const uint64_t before[FC_TIMERS])
{
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 5;
    for (int i = 0; i < fc_ntimers; i++) {
        struct fc_timer *t = &fc_timers[i];
        if (before[i] == UINT64_MAX)
            continue;
        while (t->fd >= 0 && !(t->reads > before[i] && t->reader_waiting && !t->fired))
            if (pthread_cond_timedwait(&fc_cv, &fc_mu, &limit) == ETIMEDOUT)
                return;
    }
}

/* The test program's handle on time. */
void fakeclock_advance_ns(uint64_t ns)
{
    uint64_t before[FC_TIMERS];
    pthread_mutex_lock(&fc_mu);
    fc_now += ns;
    int fired = fire_due(before);
    pthread_cond_broadcast(&fc_cv);
    if (fired)
        settle(before);
    pthread_mutex_unlock(&fc_mu);
}

uint64_t fakeclock_now_ns(void) { return now_ns(); }

/* How many times CLOCK_MONOTONIC was read (by anyone): a test can show that a
 * code path reads no clock. */
static unsigned long fc_reads;
unsigned long fakeclock_reads(void)
{
    pthread_mutex_lock(&fc_mu);
    unsigned long n = fc_reads;
    pthread_mutex_unlock(&fc_mu);
    return n;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (!virtual_clock(id)) {
        static int (*real)(clockid_t, struct timespec *);
        if (!real)
            real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
        return real ? real(id, ts) : -1;
    }
    pthread_mutex_lock(&fc_mu);
    uint64_t t = fc_now;
    fc_reads++;
    pthread_mutex_unlock(&fc_mu);
    ts->tv_sec = (time_t)(t / 1000000000u);
    ts->tv_nsec = (long)(t % 1000000000u);
    return 0;
}

static uint64_t ts_ns(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* Block until virtual time reaches `until`. */
static void wait_until(uint64_t until)
{
    pthread_mutex_lock(&fc_mu);
    while (fc_now < until)
        pthread_cond_wait(&fc_cv, &fc_mu);
    pthread_mutex_unlock(&fc_mu);
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
    if (!req || req->tv_nsec < 0 || req->tv_nsec >= 1000000000) {
        errno = EINVAL;
        return -1;
    }
    wait_until(now_ns() + ts_ns(req));
    if (rem)
        rem->tv_sec = 0, rem->tv_nsec = 0;
    return 0;
}

int clock_nanosleep(clockid_t id, int flags, const struct timespec *req, struct timespec *rem)
{
    if (!virtual_clock(id)) {
        static int (*real)(clockid_t, int, const struct timespec *, struct timespec *);
        if (!real)
            real = (int (*)(clockid_t, int, const struct timespec *, struct timespec *))dlsym(RTLD_NEXT,
                                                                                             "clock_nanosleep");
        return real ? real(id, flags, req, rem) : ENOSYS;
    }
    if (!req || req->tv_nsec < 0 || req->tv_nsec >= 1000000000)
        return EINVAL;
    wait_until(flags & TIMER_ABSTIME ? ts_ns(req) : now_ns() + ts_ns(req));
    if (rem && !(flags & TIMER_ABSTIME))
        rem->tv_sec = 0, rem->tv_nsec = 0;
    return 0;
}

int timerfd_create(clockid_t id, int flags)
{
    if (!virtual_clock(id)) {
        static int (*real)(clockid_t, int);
        if (!real)
            real = (int (*)(clockid_t, int))dlsym(RTLD_NEXT, "timerfd_create");
        return real ? real(id, flags) : -1;
    }
    int fd = eventfd(0, flags & TFD_CLOEXEC ? EFD_CLOEXEC : 0);
    if (fd < 0)
        return fd;
    pthread_mutex_lock(&fc_mu);
    struct fc_timer *t = timer_of(fd);
    if (!t && fc_ntimers < FC_TIMERS)
        t = &fc_timers[fc_ntimers++];
    if (t)
        *t = (struct fc_timer){.fd = fd};
    pthread_mutex_unlock(&fc_mu);
    if (!t) {
        close(fd);
        errno = EMFILE;
        return -1;
    }
    return fd;
}

int timerfd_settime(int fd, int flags, const struct itimerspec *nv, struct itimerspec *old)
{
    pthread_mutex_lock(&fc_mu);
    struct fc_timer *t = timer_of(fd);
    if (!t) {
        pthread_mutex_unlock(&fc_mu);
        static int (*real)(int, int, const struct itimerspec *, struct itimerspec *);
        if (!real)
            real = (int (*)(int, int, const struct itimerspec *, struct itimerspec *))dlsym(RTLD_NEXT,
                                                                                            "timerfd_settime");
        return real ? real(fd, flags, nv, old) : -1;
    }
    if (old) {
        uint64_t left = t->deadline > fc_now ? t->deadline - fc_now : 0;
        old->it_value.tv_sec = (time_t)(left / 1000000000u);
        old->it_value.tv_nsec = (long)(left % 1000000000u);
        old->it_interval.tv_sec = (time_t)(t->interval / 1000000000u);
        old->it_interval.tv_nsec = (long)(t->interval % 1000000000u);
    }
    uint64_t v = ts_ns(&nv->it_value);
    t->interval = ts_ns(&nv->it_interval);
    t->deadline = v == 0 ? 0 : (flags & TFD_TIMER_ABSTIME) ? v : fc_now + v;
    if (t->deadline && t->deadline <= fc_now) { /* already due: fires now */
        t->fired++;
        t->deadline = t->interval ? fc_now + t->interval : 0;
        pthread_cond_broadcast(&fc_cv);
    }
    pthread_mutex_unlock(&fc_mu);
    return 0;
}

ssize_t read(int fd, void *buf, size_t n)
{
    static ssize_t (*real)(int, void *, size_t);
    if (!real)
        real = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    pthread_mutex_lock(&fc_mu);
    struct fc_timer *t = timer_of(fd);
    if (!t) {
        pthread_mutex_unlock(&fc_mu);
        return real ? real(fd, buf, n) : -1;
    }
    if (n < sizeof(uint64_t)) {
        pthread_mutex_unlock(&fc_mu);
        errno = EINVAL;
        return -1;
    }
    t->reader_waiting = 1;
    pthread_cond_broadcast(&fc_cv);
    while (t->fd == fd && !t->fired)
        pthread_cond_wait(&fc_cv, &fc_mu);
    if (t->fd != fd) { /* closed meanwhile */
        pthread_mutex_unlock(&fc_mu);
        errno = EBADF;
        return -1;
    }
    uint64_t expirations = t->fired;
    t->fired = 0;
    t->reader_waiting = 0;
    t->reads++;
    pthread_mutex_unlock(&fc_mu);
    memcpy(buf, &expirations, sizeof expirations);
    return (ssize_t)sizeof expirations;
}

int close(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "close");
    pthread_mutex_lock(&fc_mu);
    struct fc_timer *t = timer_of(fd);
    if (t) {
        t->fd = -1; /* a reader blocked on it returns EBADF */
        pthread_cond_broadcast(&fc_cv);
        *t = fc_timers[--fc_ntimers];
    }
    pthread_mutex_unlock(&fc_mu);
    return real ? real(fd) : -1;
}
