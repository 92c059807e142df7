/* fakeclock.c - a preloadable virtual CLOCK_MONOTONIC, so that every rule of
 * cubatch that reads a clock (the pace of copies, the idle gap and age of a run)
 * is tested the same on an idle or a busy machine.
 *
 * Preloaded after libcubatch, it answers clock_gettime(CLOCK_MONOTONIC) (and its
 * _RAW and _COARSE twins) from a counter that moves only when the test program
 * calls fakeclock_advance_ns(), found with dlsym(RTLD_DEFAULT, ...).  nanosleep
 * and clock_nanosleep on that clock wait until the counter has moved far enough:
 * a thread that sleeps (cubatch's timer) wakes exactly when virtual time says so,
 * however slowly the machine runs.  A timerfd on that clock is an eventfd that
 * becomes readable (one expiration) when virtual time reaches its deadline, so a
 * thread blocked reading it wakes exactly then.  Other clocks are the real ones. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
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

/* Virtual timerfds: eventfds with a deadline (0: disarmed).  fc_mu held. */
#define FC_TIMERS 16
static struct { int fd; uint64_t deadline, interval; } fc_timers[FC_TIMERS];
static int fc_ntimers;

static void fire_due(void)
{
    for (int i = 0; i < fc_ntimers; i++) {
        if (!fc_timers[i].deadline || fc_timers[i].deadline > fc_now)
            continue;
        uint64_t one = 1;
        ssize_t w = write(fc_timers[i].fd, &one, sizeof one);
        (void)w;
        fc_timers[i].deadline = fc_timers[i].interval ? fc_now + fc_timers[i].interval : 0;
    }
}

static int timer_index(int fd)
{
    for (int i = 0; i < fc_ntimers; i++)
        if (fc_timers[i].fd == fd)
            return i;
    return -1;
}

/* The test program's handle on time. */
void fakeclock_advance_ns(uint64_t ns)
{
    pthread_mutex_lock(&fc_mu);
    fc_now += ns;
    fire_due();
    pthread_cond_broadcast(&fc_cv);
    pthread_mutex_unlock(&fc_mu);
}

uint64_t fakeclock_now_ns(void) { return now_ns(); }

int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (!virtual_clock(id)) {
        static int (*real)(clockid_t, struct timespec *);
        if (!real)
            real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
        return real ? real(id, ts) : -1;
    }
    uint64_t t = now_ns();
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
    int fd = eventfd(0, (flags & TFD_CLOEXEC ? EFD_CLOEXEC : 0) | (flags & TFD_NONBLOCK ? EFD_NONBLOCK : 0));
    if (fd < 0)
        return fd;
    pthread_mutex_lock(&fc_mu);
    int i = timer_index(fd);
    if (i < 0 && fc_ntimers < FC_TIMERS)
        i = fc_ntimers++;
    if (i >= 0)
        fc_timers[i].fd = fd, fc_timers[i].deadline = 0, fc_timers[i].interval = 0;
    pthread_mutex_unlock(&fc_mu);
    if (i < 0) {
        close(fd);
        errno = EMFILE;
        return -1;
    }
    return fd;
}

int timerfd_settime(int fd, int flags, const struct itimerspec *nv, struct itimerspec *old)
{
    pthread_mutex_lock(&fc_mu);
    int i = timer_index(fd);
    if (i < 0) {
        pthread_mutex_unlock(&fc_mu);
        static int (*real)(int, int, const struct itimerspec *, struct itimerspec *);
        if (!real)
            real = (int (*)(int, int, const struct itimerspec *, struct itimerspec *))dlsym(RTLD_NEXT,
                                                                                            "timerfd_settime");
        return real ? real(fd, flags, nv, old) : -1;
    }
    if (old) {
        uint64_t left = fc_timers[i].deadline > fc_now ? fc_timers[i].deadline - fc_now : 0;
        old->it_value.tv_sec = (time_t)(left / 1000000000u);
        old->it_value.tv_nsec = (long)(left % 1000000000u);
        old->it_interval.tv_sec = (time_t)(fc_timers[i].interval / 1000000000u);
        old->it_interval.tv_nsec = (long)(fc_timers[i].interval % 1000000000u);
    }
    uint64_t v = ts_ns(&nv->it_value);
    fc_timers[i].interval = ts_ns(&nv->it_interval);
    fc_timers[i].deadline = v == 0 ? 0 : (flags & TFD_TIMER_ABSTIME) ? (v ? v : 1) : fc_now + v;
    fire_due();
    pthread_mutex_unlock(&fc_mu);
    return 0;
}

int close(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "close");
    pthread_mutex_lock(&fc_mu);
    int i = timer_index(fd);
    if (i >= 0)
        fc_timers[i] = fc_timers[--fc_ntimers];
    pthread_mutex_unlock(&fc_mu);
    return real ? real(fd) : -1;
}
